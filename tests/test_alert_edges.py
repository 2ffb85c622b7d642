"""The GPU alerts at their thresholds (issue 18): synthetic DCGM series one below, at and one above each
configured threshold, evaluated by `promtool test rules` on the PrometheusRule a stack renders.

The series values come from the stack's configured thresholds (``monitoring.alerts``); which of them fire is
written here by hand from the documented behaviour (docs/concepts/monitoring.md: idle is *below* the threshold,
memory and temperature *above* it, both strict). The documented defaults are pinned separately, so a default
changed without changing these expectations fails a test.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import yaml
from conftest import ROOT, manifest, render_config, rendered, stack_config
from test_monitoring import MONITORED, PROMTOOL, needs_promtool

from components.render import monitoring

# docs/concepts/monitoring.md alert table and components/spec/options.py AlertThresholds, written out by hand.
DOCUMENTED_DEFAULTS = {
    "idle_utilization_percent": 10,
    "idle_for": "30m",
    "allocated_idle_for": "30m",
    "memory_used_percent": 95,
    "memory_for": "5m",
    "temperature_celsius": 85,
    "temperature_for": "5m",
    "xid_for": "0s",
    "exporter_down_for": "10m",
}

# Which of (threshold - 1, threshold, threshold + 1) fire: "below" and "above" are strict (< and >), so the
# threshold itself never fires.
BELOW = (True, False, False)
ABOVE = (False, False, True)
EDGES = {
    # alert: (threshold setting, duration setting, which edges fire)
    "GpuIdle": ("idle_utilization_percent", "idle_for", BELOW),
    "GpuAllocatedIdle": ("idle_utilization_percent", "allocated_idle_for", BELOW),
    "GpuFramebufferMemoryHigh": ("memory_used_percent", "memory_for", ABOVE),
    "GpuTemperatureHigh": ("temperature_celsius", "temperature_for", ABOVE),
}
SEVERITY = {"GpuIdle": "info", "GpuAllocatedIdle": "warning", "GpuFramebufferMemoryHigh": "warning"}
SEVERITY["GpuTemperatureHigh"] = "warning"

# A stack that moves every threshold and duration away from the defaults, fractional memory threshold included.
OVERRIDES = {
    "idleUtilizationPercent": 5,
    "idleFor": "45m",
    "allocatedIdleFor": "20m",
    "memoryUsedPercent": 90.5,
    "memoryFor": "2m",
    "temperatureCelsius": 80,
    "temperatureFor": "1m",
}


def test_the_configured_thresholds_are_the_documented_defaults():
    """Every shipped stack with GPU alerts runs the defaults; the defaults are the documented numbers."""
    for stack in MONITORED:
        a = rendered(stack).spec.monitoring.alerts
        assert {k: getattr(a, k) for k in DOCUMENTED_DEFAULTS} == DOCUMENTED_DEFAULTS, stack
    page = (ROOT / "docs" / "concepts" / "monitoring.md").read_text()
    for row in (
        "| `GpuIdle` | a GPU / MIG instance no pod holds is below 10 % utilization for 30 m | info |",
        "| `GpuAllocatedIdle` | every GPU a pod holds is below 10 % for 30 m (one alert per pod) | warning |",
        "| `GpuFramebufferMemoryHigh` | framebuffer used / total above 95 % for 5 m (OOM risk) | warning |",
        "| `GpuTemperatureHigh` | GPU above 85 °C for 5 m | warning |",
        "| `DcgmExporterDown` | an exporter target fails to scrape for 10 m | warning |",
    ):
        assert row in page


def _minutes(duration: str) -> int:
    """A stack-file duration in whole minutes (the edge tests step one minute at a time)."""
    parts = re.findall(r"([0-9]+)([hms])", duration)
    seconds = sum(int(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in parts)
    assert seconds % 60 == 0 and seconds >= 60, duration
    return seconds // 60


def _edges(threshold: float) -> list[float]:
    return [threshold - 1, threshold, threshold + 1]


def _label_set(labels: dict[str, str]) -> str:
    return ",".join(f'{k}="{v}"' for k, v in labels.items())


def _cases(alerts: Any) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, str]]]]:
    """One GPU per (alert, edge): the input series and, per alert, the labels of the GPUs expected to fire."""
    series: list[dict[str, Any]] = []
    firing: dict[str, list[dict[str, str]]] = {}
    for alert, (setting, duration, fires) in EDGES.items():
        samples = _minutes(getattr(alerts, duration)) + 5
        firing[alert] = []
        for i, (value, fire) in enumerate(zip(_edges(getattr(alerts, setting)), fires, strict=True)):
            gpu = {
                "node": "node-e",
                "Hostname": "node-e",
                "gpu": str(i),
                "UUID": f"GPU-{alert}-{i}",
                "modelName": "NVIDIA L4",
                "pool": "edge",
            }
            expected = {"severity": SEVERITY[alert], **gpu}
            if alert == "GpuIdle":
                series.append(
                    {"series": f"DCGM_FI_DEV_GPU_UTIL{{{_label_set(gpu)}}}", "values": f"{value:g}x{samples}"}
                )
            elif alert == "GpuAllocatedIdle":
                held = {**gpu, "pod": f"pod-{i}", "namespace": "tenant", "container": "main"}
                series.append(
                    {"series": f"DCGM_FI_DEV_GPU_UTIL{{{_label_set(held)}}}", "values": f"{value:g}x{samples}"}
                )
                # max by (pool, namespace, pod, node): one alert per pod
                expected = {
                    "severity": "warning",
                    "node": "node-e",
                    "pool": "edge",
                    "namespace": "tenant",
                    "pod": f"pod-{i}",
                }
            elif alert == "GpuFramebufferMemoryHigh":
                # a 100000 MiB card: used = value x 1000 MiB makes used / (used + free) exactly value %
                used = value * 1000
                assert used == int(used), value
                for metric, mib in (("DCGM_FI_DEV_FB_USED", used), ("DCGM_FI_DEV_FB_FREE", 100000 - used)):
                    series.append({"series": f"{metric}{{{_label_set(gpu)}}}", "values": f"{int(mib)}x{samples}"})
            else:
                series.append(
                    {"series": f"DCGM_FI_DEV_GPU_TEMP{{{_label_set(gpu)}}}", "values": f"{value:g}x{samples}"}
                )
            if fire:
                firing[alert].append(expected)
    return series, firing


def _unit_test(alerts: Any, rule_file: str) -> dict[str, Any]:
    """The promtool test file: nothing fires a minute before each alert's `for`, exactly the expected GPUs at it."""
    series, firing = _cases(alerts)
    checks = []
    for alert, (_, duration, _) in EDGES.items():
        m = _minutes(getattr(alerts, duration))
        checks.append({"eval_time": f"{m - 1}m", "alertname": alert, "exp_alerts": []})
        checks.append(
            {"eval_time": f"{m}m", "alertname": alert, "exp_alerts": [{"exp_labels": x} for x in firing[alert]]}
        )
    return {
        "rule_files": [rule_file],
        "evaluation_interval": "1m",
        "tests": [
            {"name": "thresholds at their edges", "interval": "1m", "input_series": series, "alert_rule_test": checks}
        ],
    }


def _rules_without_annotations(rule: dict[str, Any]) -> dict[str, Any]:
    """The rule file the stack renders (PrometheusRule spec), alert annotations dropped: promtool compares them,
    and test_monitoring's unit tests check the summaries."""
    groups = [
        {**g, "rules": [{k: v for k, v in r.items() if k != "annotations"} for r in g["rules"]]}
        for g in rule["spec"]["groups"]
        if g["name"] == monitoring.RULE_GROUP
    ]
    assert len(groups) == 1
    return {"groups": groups}


def _overridden():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:monitoring"] = {**cfg["gpu-platform:monitoring"], "alerts": OVERRIDES}
    return render_config(cfg, "dev-aws")


def _write(tmp_path: Path, name: str, rendering, rules: dict[str, Any] | None = None) -> str:
    rule = manifest(rendering, "PrometheusRule", monitoring.RULE_NAME, monitoring.exporter(rendering.spec).namespace)
    (tmp_path / f"{name}.rules.yaml").write_text(yaml.safe_dump(rules or _rules_without_annotations(rule)))
    test = _unit_test(rendering.spec.monitoring.alerts, f"{name}.rules.yaml")
    (tmp_path / f"{name}_test.yaml").write_text(yaml.safe_dump(test, sort_keys=False))
    return f"{name}_test.yaml"


def _promtool(tmp_path: Path, *tests: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PROMTOOL, "test", "rules", *tests], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )  # type: ignore[list-item]


def test_the_override_stack_moves_every_edge():
    a = _overridden().spec.monitoring.alerts
    assert (a.idle_utilization_percent, a.memory_used_percent, a.temperature_celsius) == (5, 90.5, 80)
    assert (a.idle_for, a.allocated_idle_for, a.memory_for, a.temperature_for) == ("45m", "20m", "2m", "1m")
    # the series built from them (hand-checked: 4/5/6 %, 89.5/90.5/91.5 % of 100000 MiB, 79/80/81 C)
    series, firing = _cases(a)
    values = {s["series"].split("{")[0] + s["series"].split('UUID="')[1].split('"')[0]: s["values"] for s in series}
    assert values["DCGM_FI_DEV_GPU_UTILGPU-GpuIdle-0"] == "4x50"
    assert values["DCGM_FI_DEV_GPU_UTILGPU-GpuAllocatedIdle-2"] == "6x25"
    assert values["DCGM_FI_DEV_FB_USEDGPU-GpuFramebufferMemoryHigh-0"] == "89500x7"
    assert values["DCGM_FI_DEV_FB_FREEGPU-GpuFramebufferMemoryHigh-2"] == "8500x7"
    assert values["DCGM_FI_DEV_GPU_TEMPGPU-GpuTemperatureHigh-1"] == "80x6"
    assert {alert: [x.get("gpu", x.get("pod")) for x in f] for alert, f in firing.items()} == {
        "GpuIdle": ["0"],
        "GpuAllocatedIdle": ["pod-0"],
        "GpuFramebufferMemoryHigh": ["2"],
        "GpuTemperatureHigh": ["2"],
    }


@needs_promtool
def test_promtool_each_alert_fires_only_past_its_threshold(tmp_path):
    """Default thresholds (prod-aws) and moved ones, in one promtool run."""
    out = _promtool(
        tmp_path, _write(tmp_path, "defaults", rendered("prod-aws")), _write(tmp_path, "overridden", _overridden())
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("SUCCESS") == 2, out.stdout


@needs_promtool
def test_promtool_edges_catch_a_non_strict_comparison(tmp_path):
    """`<=` / `>=` instead of `<` / `>` fires at the threshold itself: every alert's edge test fails."""
    r = rendered("prod-aws")
    rules = _rules_without_annotations(manifest(r, "PrometheusRule", monitoring.RULE_NAME, "gpu-operator"))
    a = r.spec.monitoring.alerts
    for rule in rules["groups"][0]["rules"]:
        for op, t in (("<", a.idle_utilization_percent), (">", a.memory_used_percent), (">", a.temperature_celsius)):
            rule["expr"] = rule["expr"].replace(f"{op} {t:g}", f"{op}= {t:g}")
    out = _promtool(tmp_path, _write(tmp_path, "mutated", r, rules))
    assert out.returncode != 0
    for alert in EDGES:
        assert f"alertname: {alert}," in out.stdout + out.stderr, alert
