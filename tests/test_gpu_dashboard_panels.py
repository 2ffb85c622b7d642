"""The GPU Grafana dashboard (components/render/dashboards/gpu.py), panel by panel: what each panel shows (type,
unit, legend, bounds, thresholds from the stack's alert settings), where it sits on Grafana's 24-column grid,
and the dashboard-level settings and template variables. The queries themselves are parsed by promtool in
tests/test_monitoring.py; here each panel must carry the query of its own title.

Expected values are the dashboard's design written out by hand: counts have no unit, utilization and
allocation are percentages bounded at 100, temperature is in celsius, power in watts, spend in USD; per-pool
panels label series by pool, per-tenant ones by namespace."""

from __future__ import annotations

from typing import Any

import pytest
from caching import shared_fixture
from conftest import monitoring_of, stack_config

from components.cli.loader import load_spec
from components.render import metrics
from components.render.dashboards import gpu

# title: (type, unit, legend, max, red threshold (None: none), stacked, instant table)
PANELS: dict[str, tuple[str, str, str, int | None, float | None, bool, bool]] = {
    "GPU devices": ("stat", "none", "", None, None, False, False),
    "Allocated to pods": ("stat", "none", "", None, None, False, False),
    "Idle and unallocated": ("stat", "none", "", None, 1, False, False),
    "Mean utilization": ("stat", "percent", "", None, None, False, False),
    "Utilization per pool": ("timeseries", "percent", "{{pool}}", 100, None, False, False),
    "Allocation per pool": ("timeseries", "percent", "{{pool}}", 100, None, False, False),
    "GPUs allocated per tenant namespace": ("timeseries", "none", "{{namespace}}", None, None, True, False),
    "Utilization of allocated GPUs per tenant namespace": (
        "timeseries",
        "percent",
        "{{namespace}}",
        100,
        None,
        False,
        False,
    ),
    "Pods holding idle GPUs": ("table", "percent", "", None, None, False, True),
    gpu.IDLE_SPEND: ("timeseries", "currencyUSD", "pool {{pool}}", None, None, False, False),
    "Framebuffer memory used": ("timeseries", "percent", "{{node}} gpu{{gpu}} {{GPU_I_ID}}", 100, 92, False, False),
    "GPU temperature": ("timeseries", "celsius", "{{node}} gpu{{gpu}}", None, 80, False, False),
    "Power draw per pool": ("timeseries", "watt", "{{pool}}", None, None, True, False),
    "Last XID per GPU": ("table", "none", "", None, None, False, True),
}

# (id, title or row, x, y, w, h): three rows; four stats across, then halves, then full-width panels
LAYOUT = [
    (1, "row:Utilization vs. allocation", 0, 0, 24, 1),
    (2, "GPU devices", 0, 1, 6, 4),
    (3, "Allocated to pods", 6, 1, 6, 4),
    (4, "Idle and unallocated", 12, 1, 6, 4),
    (5, "Mean utilization", 18, 1, 6, 4),
    (6, "Utilization per pool", 0, 5, 12, 8),
    (7, "Allocation per pool", 12, 5, 12, 8),
    (8, "row:Tenants (namespaces)", 0, 13, 24, 1),
    (9, "GPUs allocated per tenant namespace", 0, 14, 12, 8),
    (10, "Utilization of allocated GPUs per tenant namespace", 12, 14, 12, 8),
    (11, "Pods holding idle GPUs", 0, 22, 24, 6),
    (12, gpu.IDLE_SPEND, 0, 28, 24, 8),
    (13, "row:Health", 0, 36, 24, 1),
    (14, "Framebuffer memory used", 0, 37, 12, 8),
    (15, "GPU temperature", 12, 37, 12, 8),
    (16, "Power draw per pool", 0, 45, 12, 8),
    (17, "Last XID per GPU", 12, 45, 12, 8),
]

ALERTS = {
    "idleUtilizationPercent": 7.5,
    "idleFor": "45m",
    "allocatedIdleFor": "2h",
    "memoryUsedPercent": 92,
    "temperatureCelsius": 80,
}


# A shared fixture (tests/caching.py), not a module-scoped one: mutmut 3 runs, per mutant, only the tests
# during which the mutated function ran, and a module-scoped board is built during the first test alone, so
# a mutant that test misses survived although a later test here pins the field (x__panel__mutmut_110, _26,
# _44, _56, _69, x__variable__mutmut_26, x__tenants_row__mutmut_30, _146).
@shared_fixture
def board() -> dict[str, Any]:
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:monitoring"] = {**cfg.get("gpu-platform:monitoring", {}), "alerts": ALERTS}
    spec = load_spec(cfg)
    return {"board": gpu.dashboard(monitoring_of(spec)), "queries": gpu.queries(monitoring_of(spec))}


def _panels(board) -> dict[str, dict[str, Any]]:
    return {p["title"]: p for p in board["board"]["panels"] if p["type"] != "row"}


def test_layout_on_the_grid(board):
    """Ids in order from 1, rows full width and one unit high, panels tiled without gaps or overlap."""
    got = [
        (
            p["id"],
            ("row:" if p["type"] == "row" else "") + p["title"],
            p["gridPos"]["x"],
            p["gridPos"]["y"],
            p["gridPos"]["w"],
            p["gridPos"]["h"],
        )
        for p in board["board"]["panels"]
    ]
    assert got == LAYOUT
    for row in (p for p in board["board"]["panels"] if p["type"] == "row"):
        assert row["collapsed"] is False and row["panels"] == []


@pytest.mark.parametrize("title", sorted(PANELS))
def test_each_panel_shows_its_query_with_its_unit_legend_and_bounds(board, title):
    """The panel of each title: its type, its own query, legend, unit, bounds, threshold steps and display options."""
    kind, unit, legend, max_, red, stacked, instant = PANELS[title]
    p = _panels(board)[title]
    assert p["type"] == kind
    assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
    target = p["targets"][0]
    assert target["refId"] == "A" and target["expr"] == board["queries"][title]
    assert target["legendFormat"] == legend
    assert (target.get("instant"), target.get("format")) == ((True, "table") if instant else (None, None))
    d = p["fieldConfig"]["defaults"]
    assert p["fieldConfig"]["overrides"] == []
    assert d["unit"] == unit and d["min"] == 0 and d.get("max") == max_
    steps = [{"color": "green", "value": None}] + ([{"color": "red", "value": red}] if red is not None else [])
    assert d["thresholds"] == {"mode": "absolute", "steps": steps}
    if kind == "timeseries":
        assert d["custom"] == {
            "thresholdsStyle": {"mode": "line" if red is not None else "off"},
            "stacking": {"mode": "normal" if stacked else "none"},
            "fillOpacity": 10,
        }
        assert p["options"] == {
            "legend": {"displayMode": "table", "placement": "bottom", "calcs": ["mean", "max"]},
            "tooltip": {"mode": "multi", "sort": "desc"},
        }
    else:
        assert "custom" not in d and p["options"] == {}


def test_idle_spend_has_a_second_query_per_tenant(board):
    """The spend panel plots per pool (A) and per tenant namespace (B)."""
    p = _panels(board)[gpu.IDLE_SPEND]
    assert p["targets"][1] == {
        "refId": "B",
        "expr": board["queries"][gpu.IDLE_SPEND_TENANT],
        "legendFormat": "tenant {{namespace}}",
    }
    assert len(p["targets"]) == 2


def test_descriptions_quote_the_stacks_alert_settings(board):
    """Thresholds and durations in the panel help come from monitoring.alerts, formatted without trailing
    zeros (7.5, not 7.50; 92, not 92.0)."""
    p = _panels(board)
    assert p["Idle and unallocated"]["description"] == (
        "Devices no pod holds, below 7.5% utilization (GpuIdle after 45m)."
    )
    assert p["Pods holding idle GPUs"]["description"] == (
        "Pods whose busiest GPU is below 7.5% now (GpuAllocatedIdle fires after 2h)."
    )
    assert p[gpu.IDLE_SPEND]["description"].startswith("What GPUs below 7.5% utilization cost per hour")
    assert p["Framebuffer memory used"]["description"] == (
        "Used / (used + free) per GPU or MIG instance; GpuFramebufferMemoryHigh above 92%."
    )
    assert p["GPU temperature"]["description"] == "GPU core temperature; GpuTemperatureHigh above 80 C."
    assert p["GPU devices"]["description"] == "GPUs (MIG instances count one each) reporting to DCGM."
    assert p["Allocated to pods"]["description"] == "Devices a pod holds right now."
    assert p["Mean utilization"]["description"] == "Mean utilization over all devices."
    assert p["Power draw per pool"]["description"] == "Sum of the GPUs' power draw per pool."


def test_dashboard_settings(board):
    """Read-only, provisioned from a ConfigMap (version 1), one-minute refresh over the last day, shared
    crosshair, browser time zone, no annotations."""
    b = board["board"]
    assert {k: v for k, v in b.items() if k not in ("panels", "templating")} == {
        "uid": "gpu-platform-gpus",
        "title": "GPU platform: utilization, allocation and health",
        "tags": ["gpu", "dcgm", "gpu-platform"],
        "editable": False,
        "schemaVersion": 39,
        "version": 1,
        "refresh": "1m",
        "time": {"from": "now-24h", "to": "now"},
        "timezone": "",
        "graphTooltip": 1,
        "annotations": {"list": []},
    }


def test_template_variables_select_all_with_a_regex_the_queries_match(board):
    """The queries filter with =~ "$pool" / "$namespace": 'All' must expand to '.*' (allValue), and several
    values may be picked; values refresh with the time range and sort alphabetically."""
    ds, pool, ns = board["board"]["templating"]["list"]
    assert ds == {
        "name": "datasource",
        "label": "Data source",
        "type": "datasource",
        "query": "prometheus",
        "current": {},
        "hide": 0,
    }
    query = "label_values(DCGM_FI_DEV_GPU_TEMP, pool)"
    assert pool == {
        "name": "pool",
        "label": "Pool",
        "type": "query",
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "definition": query,
        "query": {"query": query, "refId": "pool-values"},
        "refresh": 2,
        "sort": 1,
        "multi": True,
        "includeAll": True,
        "allValue": ".*",
        "current": {"text": "All", "value": "$__all"},
        "hide": 0,
    }
    ns_query = f'label_values({metrics.UTILIZATION}{{pod!=""}}, namespace)'
    assert ns == {
        **pool,
        "name": "namespace",
        "label": "Tenant namespace",
        "definition": ns_query,
        "query": {"query": ns_query, "refId": "namespace-values"},
    }
    assert ns["multi"] is True and ns["includeAll"] is True


def test_help_texts_say_how_to_read_each_panel(board):
    """The panel help a reader sees on hover: what is counted and how to read it against its neighbour."""
    p = _panels(board)
    assert p["Utilization per pool"]["description"] == (
        "Mean utilization of the pool's devices (held or not). Compare with the allocation panel: high allocation "
        "with low utilization means GPUs are held but not used."
    )
    assert p["Allocation per pool"]["description"] == "Share of the pool's devices that pods hold."
    assert p["GPUs allocated per tenant namespace"]["description"] == (
        "Devices held by each tenant's pods (quota use in physical units)."
    )
    assert p["Utilization of allocated GPUs per tenant namespace"]["description"] == (
        "How busy each tenant keeps the devices it holds."
    )
    assert p[gpu.IDLE_SPEND]["description"] == (
        "What GPUs below 7.5% utilization cost per hour at list price (gpu-platform cost): per pool, unallocated "
        "and held devices together; per tenant namespace, the units its pods hold idle. Prices are constants in "
        "the recording rules; pools without a known price are absent."
    )
    assert p["Last XID per GPU"]["description"] == (
        "GPUs whose last reported XID is non-zero (GpuXidError / GpuXidErrorCritical)."
    )


# The dashboard's queries written out by hand (idle threshold 7.5): devices are deduplicated per (UUID,
# GPU_I_ID) because shared GPUs carry one series per pod; "held" means a pod label is set.
U = "gpu_platform:gpu_utilization:percent"
ALL_DEV = f'max by (pool, UUID, GPU_I_ID) ({U}{{pool=~"$pool"}})'
HELD_DEV = f'max by (pool, UUID, GPU_I_ID) ({U}{{pool=~"$pool", pod!=""}})'
NS_DEV = f'max by (namespace, UUID, GPU_I_ID) ({U}{{pool=~"$pool", namespace=~"$namespace", pod!=""}})'
FB = 'DCGM_FI_DEV_FB_USED{pool=~"$pool"} / (DCGM_FI_DEV_FB_USED{pool=~"$pool"} + DCGM_FI_DEV_FB_FREE{pool=~"$pool"})'
QUERIES = {
    "GPU devices": f"count({ALL_DEV})",
    "Allocated to pods": f"count({HELD_DEV}) or vector(0)",
    "Idle and unallocated": (
        f'count(max by (UUID, GPU_I_ID) ({U}{{pool=~"$pool", pod=""}}) < 7.5 unless on (UUID, GPU_I_ID) '
        f'{U}{{pod!=""}}) or vector(0)'
    ),
    "Mean utilization": f"avg({ALL_DEV})",
    "Utilization per pool": f"avg by (pool) ({ALL_DEV})",
    "Allocation per pool": (
        f"100 * (count by (pool) ({HELD_DEV}) or 0 * count by (pool) ({ALL_DEV})) / count by (pool) ({ALL_DEV})"
    ),
    "GPUs allocated per tenant namespace": f"count by (namespace) ({NS_DEV})",
    "Utilization of allocated GPUs per tenant namespace": f"avg by (namespace) ({NS_DEV})",
    "Pods holding idle GPUs": (
        f'max by (pool, namespace, pod) ({U}{{pool=~"$pool", namespace=~"$namespace", pod!=""}}) < 7.5'
    ),
    "Framebuffer memory used": f"max by (pool, node, gpu, GPU_I_ID) (100 * {FB})",
    "GPU temperature": 'max by (pool, node, gpu) (DCGM_FI_DEV_GPU_TEMP{pool=~"$pool"})',
    "Power draw per pool": 'sum by (pool) (max by (pool, node, gpu) (DCGM_FI_DEV_POWER_USAGE{pool=~"$pool"}))',
    "Last XID per GPU": 'gpu_platform:gpu_xid_errors:last{pool=~"$pool"}',
    gpu.IDLE_SPEND: (
        'sum by (pool) (gpu_platform:idle_gpu_cost:usd_per_hour{pool=~"$pool"} or '
        'gpu_platform:allocated_idle_gpu_cost:usd_per_hour{pool=~"$pool"})'
    ),
    gpu.IDLE_SPEND_TENANT: (
        'sum by (namespace) (gpu_platform:allocated_idle_gpu_cost:usd_per_hour{pool=~"$pool", namespace=~"$namespace"})'
    ),
}


def test_queries_written_out_by_hand(board):
    """Every query, with the stack's idle threshold in the idle panels (promtool parses them in
    tests/test_monitoring.py; here their labels, groupings and thresholds are checked)."""
    assert board["queries"] == QUERIES
