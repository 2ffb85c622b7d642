"""GPU monitoring: ServiceMonitor and PrometheusRule against the strict prometheus-operator schemas, the
alert rules proven with `promtool test rules` on synthetic DCGM series, the Grafana dashboard, and the
standalone dcgm-exporter release when the GPU Operator is off."""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from caching import shared_fixture
from conftest import (
    CONFIG_MAP,
    STACKS,
    UPSTREAM,
    manifest,
    monitoring_of,
    release,
    render_config,
    rendered,
    stack_config,
)
from jsonschema import Draft7Validator
from values_paths import unknown_paths

from components.cli.loader import SpecError, load_spec
from components.data import versions
from components.render import monitoring

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (Debian package 'prometheus')")
PROMTOOL_TESTS = Path(__file__).parent / "promtool"
PROM_OP = UPSTREAM / "prometheus-operator"
ALERTS = {
    "GpuIdle",
    "GpuAllocatedIdle",
    "GpuFramebufferMemoryHigh",
    "GpuTemperatureHigh",
    "GpuXidErrorCritical",
    "GpuXidError",
    "DcgmExporterDown",
    "GpuDevicesUnhealthy",
}
# the node condition each cloud's health agent sets (tests/test_node_health.py)
NODE_CONDITION_ALERTS = {
    "dev-aws": {"GpuNodeAcceleratedHardwareNotReady"},
    "prod-aws": {"GpuNodeAcceleratedHardwareNotReady"},
    "dev-gcp": {"GpuNodeXidCriticalError"},
    "prod-gcp": {"GpuNodeXidCriticalError"},
}
MONITORED = [s for s in STACKS if s in ("dev-aws", "prod-aws", "dev-gcp", "prod-gcp", "local")]


def rule_doc(stack: str) -> dict[str, Any]:
    r = rendered(stack)
    return manifest(r, "PrometheusRule", monitoring.RULE_NAME, monitoring.exporter(r.spec).namespace)


def rendered_rule(cfg: dict[str, Any]) -> dict[str, Any]:
    """The PrometheusRule a stack file renders (the whole synth, not monitoring.prometheus_rule alone)."""
    r = render_config(cfg)
    return manifest(r, "PrometheusRule", monitoring.RULE_NAME, monitoring.exporter(r.spec).namespace)


@functools.cache
def idle_cost_rule_doc() -> dict[str, Any]:
    """prod-aws's PrometheusRule with its Bottlerocket pools (a100-train, a100-gang) on AL2023, where the DCGM
    exporter runs, so tests/promtool/gpu_idle_cost_test.yaml prices every kind of pool prod-aws has (without
    a100-gang's image snapshot, a Bottlerocket data volume AL2023 has not: the pre-puller warms it there)."""
    cfg = stack_config("prod-aws")
    for pool in cfg["gpu-platform:nodePools"]:
        if pool.get("os") == "bottlerocket":
            pool["os"] = "al2023"
            pool.pop("imageCache", None)
    return rendered_rule(cfg)


def sm_doc(stack: str) -> dict[str, Any]:
    r = rendered(stack)
    return manifest(r, "ServiceMonitor", monitoring.SERVICE_MONITOR_NAME, monitoring.exporter(r.spec).namespace)


def alerts(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["alert"]: r for g in doc["spec"]["groups"] for r in g["rules"] if "alert" in r}


def strict(kind: str) -> Draft7Validator:
    return Draft7Validator(json.loads((PROM_OP / f"{kind}.monitoring.coreos.com.v1.strict.json").read_text()))


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, timeout=120)  # type: ignore[list-item]


def write_rules(spec_doc: dict[str, Any], path: Path, keep_descriptions: bool = True) -> None:
    """The PrometheusRule's spec is a Prometheus rule file as is."""
    doc = json.loads(json.dumps(spec_doc))
    if not keep_descriptions:
        for group in doc["groups"]:
            for r in group["rules"]:
                r.get("annotations", {}).pop("description", None)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


# ------------------------------------------------------------------------------------- rendering


@pytest.mark.parametrize("stack", MONITORED)
def test_monitoring_objects_are_rendered_for_the_exporter(stack):
    r = rendered(stack)
    ex = monitoring.exporter(r.spec)
    assert ex.source == "operator" and ex.namespace == "gpu-operator"
    labels = r.spec.monitoring.service_monitor_labels
    for doc in (rule_doc(stack), sm_doc(stack)):
        assert doc["apiVersion"] == "monitoring.coreos.com/v1"
        assert doc["metadata"]["labels"]["release"] == labels["release"] == "kube-prometheus-stack"
    assert alerts(rule_doc(stack)).keys() == ALERTS | NODE_CONDITION_ALERTS.get(stack, set())
    for rec in r.of_type("kubernetes:monitoring.coreos.com/v1:ServiceMonitor") + r.of_type(
        "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
    ):
        assert "gpu-operator" in rec.depends_on  # the release that installs the exporter
        assert rec.provider == "kubernetes"


@pytest.mark.parametrize("stack", MONITORED)
def test_servicemonitor_and_prometheusrule_validate_strictly(stack):
    # partial_response_strategy's RE2-only pattern is never set (upstream README caveat)
    groups = rule_doc(stack)["spec"]["groups"]
    assert groups[0]["name"] == monitoring.RULE_GROUP  # not vacuous: there are groups to check
    assert all("partial_response_strategy" not in g for g in groups)
    for kind, doc in (("servicemonitor", sm_doc(stack)), ("prometheusrule", rule_doc(stack))):
        errors = [e.message for e in strict(kind).iter_errors(doc)]
        assert errors == [], (kind, errors)


def test_strict_schema_rejects_a_misspelt_servicemonitor_field():
    doc = sm_doc("prod-aws")
    bad = json.loads(json.dumps(doc))
    bad["spec"]["attachMetaData"] = bad["spec"].pop("attachMetadata")
    assert list(strict("servicemonitor").iter_errors(bad))


def test_servicemonitor_selects_the_operator_exporter_and_adds_the_pool():
    sm = sm_doc("prod-aws")["spec"]
    # gpu-operator assets/state-dcgm-exporter/0600_service.yaml: label app=nvidia-dcgm-exporter, port gpu-metrics
    assert sm["selector"] == {"matchLabels": {"app": "nvidia-dcgm-exporter"}}
    assert sm["namespaceSelector"] == {"matchNames": ["gpu-operator"]}
    assert sm["attachMetadata"] == {"node": True}
    (ep,) = sm["endpoints"]
    assert (ep["port"], ep["interval"], ep["scrapeTimeout"]) == ("gpu-metrics", "30s", "10s")
    # gpu-platform/pool -> Prometheus meta label of the node (non [a-zA-Z0-9_] become _)
    assert {
        "action": "replace",
        "sourceLabels": ["__meta_kubernetes_node_label_gpu_platform_pool"],
        "targetLabel": "pool",
    } in ep["relabelings"]
    assert ep["relabelings"][-1] == {"action": "labeldrop", "regex": "pod|namespace|container"}


def test_alerts_use_the_stack_thresholds_and_carry_severity_summary_and_runbook():
    rules = alerts(rule_doc("prod-aws"))
    assert 'gpu_platform:gpu_utilization:percent{pod=""} < 10' in rules["GpuIdle"]["expr"]
    assert rules["GpuIdle"]["for"] == "30m"
    assert rules["GpuAllocatedIdle"]["expr"].endswith("< 10") and rules["GpuAllocatedIdle"]["for"] == "30m"
    assert rules["GpuFramebufferMemoryHigh"]["expr"] == (
        "100 * DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE) > 95"
    )
    assert rules["GpuTemperatureHigh"]["expr"].endswith("(DCGM_FI_DEV_GPU_TEMP) > 85")
    assert rules["DcgmExporterDown"]["expr"] == 'up{job="nvidia-dcgm-exporter"} == 0'
    for name, r in rules.items():
        assert r["labels"]["severity"] in ("info", "warning", "critical"), name
        assert r["annotations"]["summary"], name
        assert "Runbook:" in r["annotations"]["description"], name
    assert rules["GpuXidErrorCritical"]["labels"]["severity"] == "critical"
    assert '{xid=~"48|61|62|63|64|74|79|92|95|119|120|140"}' in rules["GpuXidErrorCritical"]["expr"]


def test_thresholds_are_overridable_per_stack():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:monitoring"] = {
        "alerts": {
            "idleUtilizationPercent": 5,
            "idleFor": "90m",
            "memoryUsedPercent": 90.5,
            "temperatureCelsius": 80,
            "temperatureFor": "30s",
            "xidCriticalCodes": [79],
        }
    }
    rules = alerts(rendered_rule(cfg))
    assert "< 5 unless" in rules["GpuIdle"]["expr"] and rules["GpuIdle"]["for"] == "1h30m"
    assert rules["GpuFramebufferMemoryHigh"]["expr"].endswith("> 90.5")
    assert rules["GpuTemperatureHigh"]["expr"].endswith("> 80") and rules["GpuTemperatureHigh"]["for"] == "30s"
    assert rules["GpuXidErrorCritical"]["expr"].endswith('{xid=~"79"}')


def test_durations_are_written_the_way_prometheus_reads_them():
    assert monitoring.prom_duration("30m1h") == "1h30m"
    assert monitoring.prom_duration("90m") == "1h30m"
    assert monitoring.prom_duration("0s") == "0s"
    assert monitoring.prom_duration("3600s") == "1h"


# prod-aws's PrometheusRule, written out by hand: the operator's exporter (namespace gpu-operator, job
# nvidia-dcgm-exporter), the default thresholds (README alert table), per-GPU labels dropped for device fields.
PER_GPU = "pod, namespace, container, vgpu, GPU_I_ID, GPU_I_PROFILE"
UTIL = "gpu_platform:gpu_utilization:percent"
XID = "gpu_platform:gpu_xid_errors:last"
CRITICAL_XIDS = "48|61|62|63|64|74|79|92|95|119|120|140"
PROD_AWS_RECORDS = [
    (
        UTIL,
        '100 * DCGM_FI_PROF_GR_ENGINE_ACTIVE{GPU_I_ID!=""} or '
        '(DCGM_FI_DEV_GPU_UTIL unless on (UUID) DCGM_FI_PROF_GR_ENGINE_ACTIVE{GPU_I_ID!=""})',
    ),
    (XID, f'count_values without () ("xid", max without ({PER_GPU}) (DCGM_FI_DEV_XID_ERRORS) > 0)'),
]
PROD_AWS_ALERTS = [
    # (alert, for, severity, expr)
    ("GpuIdle", "30m", "info", f'{UTIL}{{pod=""}} < 10 unless on (UUID, GPU_I_ID) {UTIL}{{pod!=""}}'),
    ("GpuAllocatedIdle", "30m", "warning", f'max by (pool, namespace, pod, node) ({UTIL}{{pod!=""}}) < 10'),
    (
        "GpuFramebufferMemoryHigh",
        "5m",
        "warning",
        "100 * DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE) > 95",
    ),
    ("GpuTemperatureHigh", "5m", "warning", f"max without ({PER_GPU}) (DCGM_FI_DEV_GPU_TEMP) > 85"),
    ("GpuXidErrorCritical", "0s", "critical", f'{XID}{{xid=~"{CRITICAL_XIDS}"}}'),
    ("GpuXidError", "0s", "warning", f'{XID}{{xid!~"{CRITICAL_XIDS}"}}'),
    ("DcgmExporterDown", "10m", "warning", 'up{job="nvidia-dcgm-exporter"} == 0'),
    (
        "GpuDevicesUnhealthy",
        "0s",
        "critical",
        'sum by (node, resource) (kube_node_status_capacity{resource=~"nvidia_com_.+"}) - '
        'sum by (node, resource) (kube_node_status_allocatable{resource=~"nvidia_com_.+"}) > 0',
    ),
    (
        "GpuNodeAcceleratedHardwareNotReady",
        "0s",
        "critical",
        'kube_node_status_condition{condition="AcceleratedHardwareReady",status="false"} == 1',
    ),
]
IDLE = "gpu_platform:idle_gpu_cost:usd_per_hour"
HELD = "gpu_platform:allocated_idle_gpu_cost:usd_per_hour"
# per priced pool, by name: its idle cost, then one held-idle cost per MIG profile (h100-inference's layout
# 3g.40gb + 2g.20gb + 2 x 1g.10gb, profiles sorted) or per whole / time-sliced GPU
PROD_AWS_COST_RECORDS = [
    # a100-gang and a100-train run Bottlerocket: no DCGM exporter there, so no idle cost (it would always read 0)
    (IDLE, {"pool": "h100-inference"}),
    (HELD, {"pool": "h100-inference", "profile": "1g.10gb"}),
    (HELD, {"pool": "h100-inference", "profile": "2g.20gb"}),
    (HELD, {"pool": "h100-inference", "profile": "3g.40gb"}),
    (IDLE, {"pool": "h100-spot"}),
    (HELD, {"pool": "h100-spot"}),
    (IDLE, {"pool": "l4-notebooks"}),
    (HELD, {"pool": "l4-notebooks"}),
]


def test_prod_aws_rule_is_the_one_written_out_by_hand():
    doc = rule_doc("prod-aws")
    assert doc["metadata"] == {
        "name": "gpu-platform-gpu-alerts",
        "namespace": "gpu-operator",
        "labels": {"app.kubernetes.io/managed-by": "gpu-platform", "release": "kube-prometheus-stack"},
    }
    main, cost = doc["spec"]["groups"]
    assert (main["name"], cost["name"]) == ("gpu-platform.gpu", "gpu-platform.gpu-cost")
    # recording rules first: the alerts read this cycle's values
    assert [(r["record"], r["expr"]) for r in main["rules"][:2]] == PROD_AWS_RECORDS
    assert [(r["alert"], r["for"], r["labels"], r["expr"]) for r in main["rules"][2:]] == [
        (name, for_, {"severity": severity}, expr) for name, for_, severity, expr in PROD_AWS_ALERTS
    ]
    assert [(r["record"], r["labels"]) for r in cost["rules"]] == PROD_AWS_COST_RECORDS
    for r in cost["rules"]:
        assert f'pool="{r["labels"]["pool"]}"' in r["expr"] and "< 10" in r["expr"], r


def test_no_monitoring_without_dcgm():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:addons"] = {"gpuOperator": True, "dcgm": False}
    r = render_config(cfg)
    kinds = {m["kind"] for m in r.manifests}
    assert not kinds & {"ServiceMonitor", "PrometheusRule"}
    assert release(r, "gpu-operator")["values"]["dcgmExporter"] == {
        "enabled": False,
        "serviceMonitor": {"enabled": False},
    }
    assert all(cm.inputs["metadata"]["name"] != monitoring.DASHBOARD_NAME for cm in r.of_type(CONFIG_MAP))


def test_standalone_exporter_is_not_offered_on_gke():
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:addons"] = {"gpuOperator": False, "dcgm": True}
    with pytest.raises(SpecError) as err:
        load_spec(cfg)
    assert [(p.path, p.message) for p in err.value.problems] == [
        (
            "gpu-platform:addons.dcgm",
            "a standalone DCGM exporter cannot reach NVML on GKE nodes (GKE installs it under "
            "/home/kubernetes/bin/nvidia for its device plugin's containers only): enable addons.gpuOperator, "
            "or turn dcgm off and use GKE's managed DCGM metrics",
        )
    ]


# --------------------------------------------------------------------------------------- promtool


@needs_promtool
@pytest.mark.parametrize("stack", MONITORED)
def test_promtool_checks_every_rule_and_template(stack, tmp_path):
    write_rules(rule_doc(stack)["spec"], tmp_path / "rules.yaml")
    out = promtool("check", "rules", "rules.yaml", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    cost_rules = monitoring.idle_cost_rules(monitoring_of(rendered(stack).spec))
    node_rules = 1 + len(NODE_CONDITION_ALERTS.get(stack, ()))  # GpuDevicesUnhealthy, the node condition's alert
    assert f"SUCCESS: {9 + node_rules + len(cost_rules)} rules found" in out.stdout


@needs_promtool
def test_promtool_unit_tests_prove_each_alert(tmp_path):
    """tests/promtool/gpu_alerts_test.yaml: each alert firing when it should and silent when it should not,
    on the rules exactly as prod-aws renders them (default thresholds)."""
    spec = rendered("prod-aws").spec
    assert spec.monitoring.alerts == type(spec.monitoring.alerts)()  # the test file's numbers are the defaults
    write_rules(rule_doc("prod-aws")["spec"], tmp_path / "gpu-alerts.rules.yaml", keep_descriptions=False)
    shutil.copy(PROMTOOL_TESTS / "gpu_alerts_test.yaml", tmp_path)
    out = promtool("test", "rules", "gpu_alerts_test.yaml", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr


@needs_promtool
def test_promtool_idle_cost_rules_price_idle_devices_per_pool_and_tenant(tmp_path):
    """tests/promtool/gpu_idle_cost_test.yaml: idle spend per pool (GpuIdle's devices) and per tenant, the prices
    worked out by hand from the catalog, on the rules prod-aws renders with its A100 pools on AL2023."""
    write_rules(idle_cost_rule_doc()["spec"], tmp_path / "gpu-alerts.rules.yaml", keep_descriptions=False)
    shutil.copy(PROMTOOL_TESTS / "gpu_idle_cost_test.yaml", tmp_path)
    out = promtool("test", "rules", "gpu_idle_cost_test.yaml", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr


@needs_promtool
def test_promtool_idle_cost_fails_on_a_wrong_price_or_threshold(tmp_path):
    # a wrong price, a wrong threshold, and a non-strict comparison (the 10 % series would count)
    for old, new in (("* 3.430881", "* 3.5"), ("< 10) * 0.2876", "< 1) * 0.2876"), ("< 10 ", "<= 10 ")):
        doc = json.loads(json.dumps(idle_cost_rule_doc()["spec"]))
        assert doc["groups"][-1]["name"] == monitoring.COST_GROUP
        for r in doc["groups"][-1]["rules"]:
            r["expr"] = r["expr"].replace(old, new)
        assert json.dumps(doc) != json.dumps(idle_cost_rule_doc()["spec"])
        write_rules(doc, tmp_path / "gpu-alerts.rules.yaml", keep_descriptions=False)
        shutil.copy(PROMTOOL_TESTS / "gpu_idle_cost_test.yaml", tmp_path)
        out = promtool("test", "rules", "gpu_idle_cost_test.yaml", cwd=tmp_path)
        assert out.returncode != 0, (old, new)


def test_pools_without_a_price_get_no_idle_cost_rule():
    spec = rendered("dev-gcp").spec  # t4-spot: N1 + T4, the T4 has no price in the catalog
    pools = {r["labels"]["pool"] for r in monitoring.idle_cost_rules(monitoring_of(spec))}
    assert pools == {"l4-shared"}


@needs_promtool
def test_promtool_unit_tests_fail_on_a_broken_rule(tmp_path):
    """The unit tests are not vacuous: a rule with a wrong threshold fails them."""
    doc = json.loads(json.dumps(rule_doc("prod-aws")["spec"]))
    for r in doc["groups"][0]["rules"]:
        if r.get("alert") == "GpuTemperatureHigh":
            r["expr"] = r["expr"].replace("> 85", "> 95")
    write_rules(doc, tmp_path / "gpu-alerts.rules.yaml", keep_descriptions=False)
    shutil.copy(PROMTOOL_TESTS / "gpu_alerts_test.yaml", tmp_path)
    out = promtool("test", "rules", "gpu_alerts_test.yaml", cwd=tmp_path)
    assert out.returncode != 0 and "GpuTemperatureHigh" in out.stdout + out.stderr


@needs_promtool
def test_promtool_overridden_thresholds_fire_where_defaults_would_not(tmp_path):
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:monitoring"] = {"alerts": {"temperatureCelsius": 80, "temperatureFor": "2m"}}
    write_rules(rendered_rule(cfg)["spec"], tmp_path / "r.yaml", keep_descriptions=False)
    labels = 'node="n",hostname="h",gpu="0",UUID="GPU-0",modelName="NVIDIA L4",pool="l4-shared"'
    test = {
        "rule_files": ["r.yaml"],
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": f"DCGM_FI_DEV_GPU_TEMP{{{labels}}}", "values": "82x5"}],
                "alert_rule_test": [
                    {"eval_time": "1m", "alertname": "GpuTemperatureHigh", "exp_alerts": []},
                    {
                        "eval_time": "2m",
                        "alertname": "GpuTemperatureHigh",
                        "exp_alerts": [
                            {
                                "exp_labels": {
                                    "severity": "warning",
                                    "node": "n",
                                    "hostname": "h",
                                    "gpu": "0",
                                    "UUID": "GPU-0",
                                    "modelName": "NVIDIA L4",
                                    "pool": "l4-shared",
                                },
                                "exp_annotations": {"summary": "GPU at 82 C on n GPU 0 (NVIDIA L4, pool l4-shared)"},
                            }
                        ],
                    },
                ],
            }
        ],
    }
    (tmp_path / "t.yaml").write_text(yaml.safe_dump(test))
    out = promtool("test", "rules", "t.yaml", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr


# --------------------------------------------------------------------------------------- dashboard


def dashboard(stack: str) -> tuple[dict[str, Any], dict[str, Any]]:
    r = rendered(stack)
    cm = manifest(r, "ConfigMap", monitoring.DASHBOARD_NAME, "gpu-operator")
    return cm, json.loads(cm["data"][monitoring.DASHBOARD_FILE])


def test_dashboard_configmap_is_labelled_for_the_grafana_sidecar():
    cm, board = dashboard("prod-aws")
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert board["uid"] == "gpu-platform-gpus"
    titles = {p["title"] for p in board["panels"]}
    for needed in (
        "Utilization per pool",
        "Allocation per pool",
        "GPUs allocated per tenant namespace",
        "Utilization of allocated GPUs per tenant namespace",
        "Framebuffer memory used",
        "GPU temperature",
        "Power draw per pool",
        "Last XID per GPU",
    ):
        assert needed in titles
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["pool"]["definition"] == "label_values(DCGM_FI_DEV_GPU_TEMP, pool)"
    exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    assert all('pool=~"$pool"' in e for e in exprs)
    temp = next(p for p in board["panels"] if p["title"] == "GPU temperature")
    assert temp["fieldConfig"]["defaults"]["thresholds"]["steps"][-1]["value"] == 85


def test_dashboard_namespace_and_labels_come_from_the_spec():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:monitoring"] = {"dashboardNamespace": "monitoring", "dashboardLabels": {"grafana": "gpu"}}
    cm = monitoring.dashboard_configmap(monitoring_of(load_spec(cfg)))
    assert cm["metadata"]["namespace"] == "monitoring"
    assert cm["metadata"]["labels"]["grafana"] == "gpu" and "grafana_dashboard" not in cm["metadata"]["labels"]


@needs_promtool
def test_every_dashboard_query_parses(tmp_path):
    _, board = dashboard("prod-aws")
    exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    exprs += [v["definition"].removeprefix("label_values(").rsplit(",", 1)[0] for v in board["templating"]["list"][1:]]
    rules = [
        {"record": f"dashboard:query{i}:check", "expr": e.replace("$pool", ".*").replace("$namespace", ".*")}
        for i, e in enumerate(exprs)
    ]
    (tmp_path / "q.yaml").write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    out = promtool("check", "rules", "q.yaml", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr


# ------------------------------------------------------------------------------ standalone exporter


@shared_fixture
def standalone():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:addons"] = {"gpuOperator": False, "dcgm": True}
    cfg["gpu-platform:nodePools"][0].pop("sharing")  # sharing needs the operator's device plugin
    for pool in cfg["gpu-platform:nodePools"]:  # AL2023 has no device plugin without the operator
        pool["os"] = "bottlerocket"
    cfg["gpu-platform:tenants"][0]["gpuQuota"] = {"l4-shared": 4, "a10g-spot": 8}
    return render_config(cfg)


def test_standalone_exporter_release(standalone):
    rel = release(standalone, "dcgm-exporter")
    assert (rel["chart"], rel["version"], rel["namespace"]) == ("dcgm-exporter", "4.8.2", "gpu-monitoring")
    assert rel["version"] == versions.DCGM_EXPORTER.version
    assert rel["repositoryOpts"] == {"repo": "https://nvidia.github.io/dcgm-exporter/helm-charts"}
    ns = manifest(standalone, "Namespace", "gpu-monitoring")["metadata"]["labels"]
    assert ns["pod-security.kubernetes.io/enforce"] == "privileged"  # hostPath pod-resources, SYS_ADMIN
    v = rel["values"]
    assert v["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in v["tolerations"]
    assert v["serviceMonitor"] == {"enabled": False}
    with pytest.raises(KeyError):
        release(standalone, "gpu-operator")


def test_standalone_servicemonitor_selects_the_chart_service(standalone):
    sm = manifest(standalone, "ServiceMonitor", monitoring.SERVICE_MONITOR_NAME, "gpu-monitoring")["spec"]
    # dcgm-exporter chart: service.yaml port "metrics", selectorLabels name + instance
    assert sm["selector"]["matchLabels"] == {
        "app.kubernetes.io/name": "dcgm-exporter",
        "app.kubernetes.io/instance": "dcgm-exporter",
    }
    assert sm["endpoints"][0]["port"] == "metrics"
    rule = manifest(standalone, "PrometheusRule", monitoring.RULE_NAME, "gpu-monitoring")
    assert alerts(rule)["DcgmExporterDown"]["expr"] == 'up{job="dcgm-exporter"} == 0'


def test_standalone_exporter_value_paths_exist_upstream(standalone):
    upstream = yaml.safe_load((UPSTREAM / "dcgm-exporter" / "values.yaml").read_text())
    assert unknown_paths(release(standalone, "dcgm-exporter")["values"], upstream) == []
    cfg = stack_config("prod-aws")  # with shared pools: per-pod attribution through extraEnv
    cfg["gpu-platform:addons"] = {"gpuOperator": True, "dcgm": True, "volcano": True}
    v = monitoring.dcgm_exporter_values(load_spec(cfg))
    assert v["extraEnv"] == [{"name": "KUBERNETES_VIRTUAL_GPUS", "value": "true"}]
    assert unknown_paths(v, upstream) == []


# ------------------------------------------------------------------------------- alert texts, by meaning


def _custom_alerts() -> dict[str, dict[str, Any]]:
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:monitoring"] = {
        "alerts": {
            "idleUtilizationPercent": 7.5,
            "idleFor": "45m",
            "allocatedIdleFor": "2h",
            "memoryUsedPercent": 92,
            "memoryFor": "10m",
            "temperatureCelsius": 80,
            "temperatureFor": "15m",
            "exporterDownFor": "20m",
        }
    }
    groups = monitoring.rule_groups(monitoring_of(load_spec(cfg)))
    return {r["alert"]: r for g in groups for r in g["rules"] if "alert" in r}


def _steps(text: str) -> list[int]:
    import re

    return [int(n) for n in re.findall(r"(?:Runbook: |; |\. )(\d)\) ", text)]


def test_alert_summaries_say_what_and_where():
    """Each summary names the condition and the GPU's node, index, model and pool (the WHERE template), with
    the stack's duration where it has one."""
    a = _custom_alerts()
    where = "{{ $labels.node }} GPU {{ $labels.gpu }} ({{ $labels.modelName }}, pool {{ $labels.pool }})"
    assert a["GpuIdle"]["annotations"]["summary"] == f"Unallocated GPU idle for 45m on {where}"
    assert a["GpuAllocatedIdle"]["annotations"]["summary"] == (
        "Pod {{ $labels.namespace }}/{{ $labels.pod }} holds GPUs it has not used for 2h"
    )
    assert a["GpuFramebufferMemoryHigh"]["annotations"]["summary"] == (
        "GPU memory {{ $value | humanize }}% used on " + where
    )
    assert a["GpuTemperatureHigh"]["annotations"]["summary"] == "GPU at {{ $value | humanize }} C on " + where
    assert a["GpuXidErrorCritical"]["annotations"]["summary"] == "XID {{ $labels.xid }} (hardware / driver) on " + where
    assert a["GpuXidError"]["annotations"]["summary"] == "XID {{ $labels.xid }} on " + where
    assert a["DcgmExporterDown"]["annotations"]["summary"] == "DCGM exporter on {{ $labels.node }} is not scraped"


def test_alert_descriptions_quote_the_stacks_thresholds_and_number_their_steps():
    """Thresholds and durations are filled in (no [[placeholder]] left), and every runbook's steps are
    numbered 1), 2), ... in order."""
    a = _custom_alerts()
    d = {name: r["annotations"]["description"] for name, r in a.items()}
    assert (
        "{{ end }} and it has been below 7.5% utilization for 45m: capacity is paid for and unused. Runbook: 1) "
        in d["GpuIdle"]
    )
    assert (
        "on {{ $labels.node }} (pool {{ $labels.pool }}) has stayed below 7.5% utilization for 2h (busiest GPU now "
        "{{ $value | humanize }}%). The GPUs count against" in d["GpuAllocatedIdle"]
    )
    assert d["GpuFramebufferMemoryHigh"].startswith("Framebuffer used / (used + free) has been above 92% for 10m")
    assert d["GpuTemperatureHigh"].startswith("The GPU core has been above 80 C for 15m;")
    assert "on node {{ $labels.node }} for 20m: every GPU alert above is blind for that node." in d["DcgmExporterDown"]
    assert "kubectl -n gpu-operator get pods -o wide | grep dcgm" in d["DcgmExporterDown"]
    for name, text in d.items():
        assert "[[" not in text and "]]" not in text, name
        assert "Runbook: 1) " in text, name
        steps = _steps(text)
        assert steps == list(range(1, len(steps) + 1)) and len(steps) >= 3, (name, steps)
    assert _steps(d["GpuXidErrorCritical"]) == [1, 2, 3, 4]


def test_alert_runbooks_give_the_commands_for_the_alerting_node():
    """Where a runbook says to take a node out, the command names the alerting node's label."""
    d = {name: r["annotations"]["description"] for name, r in _custom_alerts().items()}
    assert "kubectl cordon {{ $labels.node }}" in d["GpuXidErrorCritical"]
    assert "kubectl drain --ignore-daemonsets --delete-emptydir-data" in d["GpuXidErrorCritical"]
    assert "(kubectl cordon {{ $labels.node }}; kubectl drain ...)" in d["GpuTemperatureHigh"]
    assert "{{ if $labels.GPU_I_PROFILE }} (MIG {{ $labels.GPU_I_PROFILE }}){{ end }}" in d["GpuIdle"]
    assert (
        "{{ if $labels.pod }} (pod {{ $labels.namespace }}/{{ $labels.pod }}){{ end }}" in d["GpuFramebufferMemoryHigh"]
    )
    assert d["GpuXidError"].startswith("DCGM_FI_DEV_XID_ERRORS reports XID {{ $labels.xid }}. XIDs outside the")
    assert d["GpuXidErrorCritical"].startswith(
        "DCGM_FI_DEV_XID_ERRORS reports XID {{ $labels.xid }}, one NVIDIA lists as needing a GPU reset"
    )


@pytest.mark.parametrize(
    ("interval", "written", "timeout"),
    [("5s", "5s", "5s"), ("10s", "10s", "10s"), ("1m", "1m", "10s"), ("90s", "1m30s", "10s")],
)
def test_scrape_timeout_never_exceeds_the_interval(interval, written, timeout):
    """Prometheus refuses a scrapeTimeout longer than the interval: 10s, or the interval when it is shorter;
    the interval itself is written canonically (90s -> 1m30s)."""
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:monitoring"] = {"scrapeInterval": interval}
    (ep,) = monitoring.service_monitor(monitoring_of(load_spec(cfg)))["spec"]["endpoints"]
    assert ep["scrapeTimeout"] == timeout
    assert ep["interval"] == written
    assert (ep["path"], ep["honorLabels"]) == ("/metrics", False)
    assert ep["relabelings"][0] == {
        "action": "replace",
        "sourceLabels": ["__meta_kubernetes_pod_node_name"],
        "targetLabel": "node",
    }


def test_the_dra_exporter_is_the_gpuclusters():
    """On a DRA stack the GPUCluster's exporter Service (gpu-operator v26.7.0 manifests/state-dcgm-exporter/
    0500_service.yaml) is scraped, and DcgmExporterDown watches its job."""
    spec = load_spec(stack_config("dra-existing"))
    ex = monitoring.exporter(spec)
    assert ex == monitoring.Exporter(
        "operator", "gpu-operator", {"app": "nvidia-dcgm-exporter-dra"}, "gpu-metrics", "nvidia-dcgm-exporter-dra"
    )
    (down,) = monitoring.exporter_alerts(monitoring_of(spec))
    assert down["expr"] == 'up{job="nvidia-dcgm-exporter-dra"} == 0' and down["for"] == "10m"


def test_rule_and_monitor_carry_the_labels_prometheus_selects():
    """Both objects carry managed-by plus serviceMonitorLabels, in the exporter's namespace."""
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:monitoring"] = {"prometheus": "existing", "serviceMonitorLabels": {"team": "ml"}}
    spec = load_spec(cfg)
    for doc in (monitoring.prometheus_rule(monitoring_of(spec)), monitoring.service_monitor(monitoring_of(spec))):
        assert doc["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "gpu-platform", "team": "ml"}
        assert doc["metadata"]["namespace"] == "gpu-operator"
        assert doc["apiVersion"] == "monitoring.coreos.com/v1"


def test_idle_cost_terms_price_each_device_dcgm_reports():
    """prod-aws list prices (upstream/prices: p5.48xlarge 55.04, g6.12xlarge 4.6016 USD/h): an H100 costs 6.88
    per hour, split over h100-inference's MIG layout by compute slices (3 + 2 + 2 x 1 = 7); an L4 1.1504,
    whose time-sliced pods each hold a quarter of it; a pool without a price has no terms."""
    spec = load_spec(stack_config("prod-aws"))
    inference = monitoring.idle_cost_terms(spec, spec.pool("h100-inference"))
    assert [p for p, _ in inference] == ["1g.10gb", "2g.20gb", "3g.40gb"]
    assert [price for _, price in inference] == [
        pytest.approx(6.88 / 7),
        pytest.approx(6.88 * 2 / 7),
        pytest.approx(6.88 * 3 / 7),
    ]
    ((profile, l4),) = monitoring.idle_cost_terms(spec, spec.pool("l4-notebooks"))
    assert profile is None and l4 == pytest.approx(4.6016 / 4)
    assert monitoring._allocated_unit_price(spec, spec.pool("l4-notebooks"), None, l4) == pytest.approx(l4 / 4)
    assert monitoring._allocated_unit_price(spec, spec.pool("h100-inference"), "1g.10gb", 1.0) == 1.0
    assert monitoring._allocated_unit_price(spec, spec.pool("a100-train"), None, 2.0) == 2.0
    cfg = stack_config("dev-gcp")  # t4-spot has no price; renamed so that it sorts before l4-shared
    cfg["gpu-platform:nodePools"][1]["name"] = "a-t4"
    cfg["gpu-platform:tenants"][0]["gpuQuota"] = {"l4-shared": 4, "a-t4": 2}
    gcp = load_spec(cfg)
    assert monitoring.idle_cost_terms(gcp, gcp.pool("a-t4")) is None
    assert [r["labels"]["pool"] for r in monitoring.idle_cost_rules(monitoring_of(gcp))] == ["l4-shared", "l4-shared"]


def test_dashboard_configmap_files_the_board_in_the_gpu_folder():
    """The Grafana sidecar files the board under the folder the grafana_folder annotation names; the board is
    one JSON file with sorted keys (a stable ConfigMap between runs)."""
    spec = load_spec(stack_config("dev-aws"))
    cm = monitoring.dashboard_configmap(monitoring_of(spec))
    assert cm["metadata"]["annotations"] == {"grafana_folder": "GPU"}
    assert (cm["metadata"]["name"], cm["metadata"]["namespace"]) == ("gpu-platform-gpu-dashboard", "gpu-operator")
    (text,) = cm["data"].values()
    assert list(cm["data"]) == ["gpu-platform-gpus.json"]
    board = json.loads(text)
    assert text == json.dumps(board, indent=1, sort_keys=True)


# The runbooks as an operator reads them, written out in full with _custom_alerts()' settings substituted by
# hand (idle 7.5 % for 45m / 2h, memory 92 % for 10m, 80 C for 15m, exporter down 20m, operator namespace).
RUNBOOKS = {
    "GpuIdle": (
        "No pod holds this GPU{{ if $labels.GPU_I_PROFILE }} (MIG {{ $labels.GPU_I_PROFILE }}){{ end }} and it has "
        "been below 7.5% utilization for 45m: capacity is paid for and unused. Runbook: 1) if the pool's minNodes "
        "keeps this node, this is expected; lower minNodes if the reserve is not needed. 2) Otherwise check why the "
        "autoscaler does not remove the node (scale-down blocked by a PodDisruptionBudget, a non-evictable pod, or "
        "a karpenter.sh/do-not-disrupt annotation). 3) If GPU jobs are pending at the same time, they cannot use "
        "this node: compare their tolerations, node selectors and ResourceQuota/queue with the pool's taints and "
        "labels. GPUs held by pods are reported by GpuAllocatedIdle instead."
    ),
    "GpuAllocatedIdle": (
        "Every GPU allocated to {{ $labels.namespace }}/{{ $labels.pod }} on {{ $labels.node }} (pool "
        "{{ $labels.pool }}) has stayed below 7.5% utilization for 2h (busiest GPU now {{ $value | humanize }}%). "
        "The GPUs count against tenant {{ $labels.namespace }}'s quota and are unavailable to other tenants. "
        "Runbook: 1) ask the owner (namespace {{ $labels.namespace }}) whether the pod is waiting on data, a dead "
        "dependency or a debugger; 2) idle notebooks and interactive sessions belong on a time-sliced or MPS pool; "
        "3) if it is abandoned, delete the pod (its Job or notebook controller first)."
    ),
    "GpuFramebufferMemoryHigh": (
        "Framebuffer used / (used + free) has been above 92% for 10m{{ if $labels.pod }} (pod "
        "{{ $labels.namespace }}/{{ $labels.pod }}){{ end }}{{ if $labels.GPU_I_PROFILE }} on MIG instance "
        "{{ $labels.GPU_I_PROFILE }}{{ end }}. The next allocation will fail with CUDA out-of-memory. Runbook: "
        "1) check the workload's batch size / KV-cache settings (servers that pre-allocate, such as vLLM with its "
        "default gpu-memory-utilization 0.9, sit just below the default threshold by design); 2) on time-sliced "
        "GPUs, pods share memory without isolation: one pod can starve the others, move memory-hungry pods to "
        "whole GPUs or MIG; 3) if memory grows steadily, suspect a leak and restart the pod."
    ),
    "GpuTemperatureHigh": (
        "The GPU core has been above 80 C for 15m; it throttles its clocks (jobs slow down) and hardware faults "
        "become likelier. Runbook: 1) check DCGM_FI_DEV_POWER_USAGE and the other GPUs of the node: all hot means "
        "cooling or a host problem, one hot GPU means that GPU; 2) on a cloud instance, cordon and drain the node "
        "so it is replaced (kubectl cordon {{ $labels.node }}; kubectl drain ...); 3) if it recurs on new nodes, "
        "open a support case with the cloud provider with the instance ID."
    ),
    "GpuXidErrorCritical": (
        "DCGM_FI_DEV_XID_ERRORS reports XID {{ $labels.xid }}, one NVIDIA lists as needing a GPU reset or hardware "
        "service (ECC, NVLink, fallen off the bus, GSP). Jobs on this GPU have failed or will. The gauge keeps the "
        "last XID until the driver reloads, so the alert stays until the node is replaced. Runbook: 1) kubectl "
        "cordon {{ $labels.node }} so no new pods land there; 2) drain it (kubectl drain --ignore-daemonsets "
        "--delete-emptydir-data) once running jobs have checkpointed; 3) terminate the instance so the node group "
        "or Karpenter replaces it; 4) if the same XID follows new instances, escalate to the cloud provider with "
        "the XID, instance ID and `nvidia-smi -q` output."
    ),
    "GpuXidError": (
        "DCGM_FI_DEV_XID_ERRORS reports XID {{ $labels.xid }}. XIDs outside the critical list are usually raised "
        "by an application (13 graphics engine exception, 31 MMU fault, 43 context reset, 45 preemptive cleanup) "
        "rather than the hardware. The gauge keeps the last XID until the driver reloads. Runbook: 1) find the pod "
        "that held the GPU at that time (GpuAllocatedIdle / the dashboard's per-namespace panels) and read its "
        "logs; 2) if the XID repeats across different workloads on this GPU, treat it as hardware: cordon, drain "
        "and replace the node; 3) otherwise silence it after the owner has fixed the job."
    ),
    "DcgmExporterDown": (
        "Prometheus has failed to scrape the DCGM exporter ({{ $labels.instance }}) on node {{ $labels.node }} for "
        "20m: every GPU alert above is blind for that node. Runbook: 1) kubectl -n gpu-operator get pods -o wide | "
        "grep dcgm; 2) read the exporter's logs (a driver / NVML mismatch after a node image upgrade is the usual "
        "cause); 3) check that the node's GPU operands are healthy (the operator's validator pod). Nodes without "
        "GPUs have no exporter, so pools scaled to zero do not fire this (no target, no alert)."
    ),
    "GpuDevicesUnhealthy": (
        "The node's device plugin has marked {{ $value }} of its {{ $labels.resource }} devices unhealthy (a "
        "critical XID, or the GPU fell off the bus): the kubelet no longer offers them, and pods that held them have "
        "failed or will. Runbook: 1) kubectl describe node {{ $labels.node }} (conditions, events) and the XID "
        "alerts of the node; 2) kubectl cordon {{ $labels.node }}; 3) drain it once running jobs have checkpointed "
        "(kubectl drain --ignore-daemonsets --delete-emptydir-data); 4) replace the instance (terminate it on EKS, "
        "recreate it through its managed instance group on GKE) so its node group brings a new one."
    ),
    "GpuNodeAcceleratedHardwareNotReady": (
        "The EKS node monitoring agent has set AcceleratedHardwareReady=False on {{ $labels.node }}: a GPU of the "
        "node has failed (kubectl describe node {{ $labels.node }} shows the reason). Gangs on the node are evicted "
        "as it drains and requeued whole (Kueue waitForPodsReady, Volcano RestartJob) and resume from their last "
        "checkpoint. Runbook: 1) a node that EKS auto repair (a managed node group with eks.autoRepair) or "
        "Karpenter's node repair covers is replaced once the condition has held for 10 minutes: watch it go; 2) on "
        "a node of a group without auto repair: kubectl cordon {{ $labels.node }}, drain it once running jobs have "
        "checkpointed (kubectl drain --ignore-daemonsets --delete-emptydir-data) and terminate its instance (aws ec2 "
        "terminate-instances) so its group replaces it; 3) if the fault follows new instances, escalate to AWS with "
        "the instance ID."
    ),
}


def test_runbooks_read_as_written():
    """Each alert's description, word for word: the runbook an on-call engineer follows."""
    got = {name: r["annotations"]["description"] for name, r in _custom_alerts().items()}
    assert got == RUNBOOKS
