"""The GPU dashboard: utilization vs. allocation per pool and per tenant namespace, memory, temperature,
power and XID errors.

"Devices" are GPUs, or MIG instances on MIG pools (each is one schedulable unit). A device is allocated
while a pod holds it (the exporter then labels its series with the pod). Queries deduplicate per device
(``UUID``, ``GPU_I_ID``) because shared GPUs also carry one series per pod.
"""

from __future__ import annotations

from typing import Any

from ...plan.monitoring import AlertThresholds, MonitoringPlan
from .. import metrics

UID = "gpu-platform-gpus"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
U = metrics.UTILIZATION
DEV = "UUID, GPU_I_ID"


IDLE_SPEND = "Idle spend, $/h, per pool and per tenant"
IDLE_SPEND_TENANT = IDLE_SPEND + " (tenants)"  # the panel's second query


def _sel(*matchers: str) -> str:
    return "{" + ", ".join(matchers) + "}"


POOL = 'pool=~"$pool"'
NS = 'namespace=~"$namespace"'
HELD = 'pod!=""'
FREE = 'pod=""'


def _alerts(source: MonitoringPlan) -> AlertThresholds:
    """The thresholds the panels quote."""
    return source.alerts


def queries(source: MonitoringPlan) -> dict[str, str]:
    """Every query of the dashboard by panel title (also checked by promtool in the tests)."""
    idle = metrics.number(_alerts(source).idle_utilization_percent)
    all_dev = f"max by (pool, {DEV}) ({U}{_sel(POOL)})"
    held_dev = f"max by (pool, {DEV}) ({U}{_sel(POOL, HELD)})"
    ns_dev = f"max by (namespace, {DEV}) ({U}{_sel(POOL, NS, HELD)})"
    fb = "100 * DCGM_FI_DEV_FB_USED{P} / (DCGM_FI_DEV_FB_USED{P} + DCGM_FI_DEV_FB_FREE{P})".replace("{P}", _sel(POOL))
    return {
        "GPU devices": f"count({all_dev})",
        "Allocated to pods": f"count({held_dev}) or vector(0)",
        "Idle and unallocated": (
            f"count(max by ({DEV}) ({U}{_sel(POOL, FREE)}) < {idle} unless on ({DEV}) {U}{_sel(HELD)}) or vector(0)"
        ),
        "Mean utilization": f"avg({all_dev})",
        "Utilization per pool": f"avg by (pool) ({all_dev})",
        "Allocation per pool": (
            f"100 * (count by (pool) ({held_dev}) or 0 * count by (pool) ({all_dev})) / count by (pool) ({all_dev})"
        ),
        "GPUs allocated per tenant namespace": f"count by (namespace) ({ns_dev})",
        "Utilization of allocated GPUs per tenant namespace": f"avg by (namespace) ({ns_dev})",
        "Pods holding idle GPUs": f"max by (pool, namespace, pod) ({U}{_sel(POOL, NS, HELD)}) < {idle}",
        "Framebuffer memory used": f"max by (pool, node, gpu, GPU_I_ID) ({fb})",
        "GPU temperature": f"max by (pool, node, gpu) (DCGM_FI_DEV_GPU_TEMP{_sel(POOL)})",
        "Power draw per pool": f"sum by (pool) (max by (pool, node, gpu) (DCGM_FI_DEV_POWER_USAGE{_sel(POOL)}))",
        "Last XID per GPU": f"{metrics.XID_LAST}{_sel(POOL)}",
        # the two records have different label sets (namespace), so "or" keeps both
        IDLE_SPEND: f"sum by (pool) ({metrics.IDLE_COST}{_sel(POOL)} or {metrics.ALLOCATED_IDLE_COST}{_sel(POOL)})",
        IDLE_SPEND_TENANT: f"sum by (namespace) ({metrics.ALLOCATED_IDLE_COST}{_sel(POOL, NS)})",
    }


def _thresholds(red: float | None) -> dict[str, Any]:
    steps: list[dict[str, Any]] = [{"color": "green", "value": None}]
    if red is not None:
        steps.append({"color": "red", "value": red})
    return {"mode": "absolute", "steps": steps}


class _Layout:
    def __init__(self) -> None:
        self.panels: list[dict[str, Any]] = []
        self.y = 0

    def row(self, title: str) -> None:
        self.panels.append(
            {
                "id": len(self.panels) + 1,
                "type": "row",
                "title": title,
                "collapsed": False,
                "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y},
                "panels": [],
            }
        )
        self.y += 1

    def add(self, panel: dict[str, Any], w: int, h: int, x: int) -> None:
        panel["id"] = len(self.panels) + 1
        panel["gridPos"] = {"h": h, "w": w, "x": x, "y": self.y}
        self.panels.append(panel)
        if x + w >= 24:
            self.y += h


def _panel(
    kind: str,
    title: str,
    description: str,
    expr: str,
    *,
    legend: str = "",
    unit: str = "none",
    red: float | None = None,
    instant: bool = False,
    max_: float | None = None,
    stack: bool = False,
) -> dict[str, Any]:
    defaults: dict[str, Any] = {"unit": unit, "min": 0, "thresholds": _thresholds(red)}
    if max_ is not None:
        defaults["max"] = max_
    if kind == "timeseries":
        defaults["custom"] = {
            "thresholdsStyle": {"mode": "line" if red is not None else "off"},
            "stacking": {"mode": "normal" if stack else "none"},
            "fillOpacity": 10,
        }
    target: dict[str, Any] = {"refId": "A", "expr": expr, "legendFormat": legend}
    if instant:
        target["instant"] = True
        target["format"] = "table"
    options: dict[str, Any] = {}
    if kind == "timeseries":
        options = {
            "legend": {"displayMode": "table", "placement": "bottom", "calcs": ["mean", "max"]},
            "tooltip": {"mode": "multi", "sort": "desc"},
        }
    return {
        "type": kind,
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "targets": [target],
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "options": options,
    }


def _variable(name: str, label: str, query: str) -> dict[str, Any]:
    return {
        "name": name,
        "label": label,
        "type": "query",
        "datasource": DATASOURCE,
        "definition": query,
        "query": {"query": query, "refId": f"{name}-values"},
        "refresh": 2,
        "sort": 1,
        "multi": True,
        "includeAll": True,
        "allValue": ".*",
        "current": {"text": "All", "value": "$__all"},
        "hide": 0,
    }


def _utilization_row(lay: _Layout, a: AlertThresholds, q: dict[str, str]) -> None:
    lay.row("Utilization vs. allocation")
    stats = [
        ("GPU devices", "GPUs (MIG instances count one each) reporting to DCGM.", "none", None),
        ("Allocated to pods", "Devices a pod holds right now.", "none", None),
        (
            "Idle and unallocated",
            f"Devices no pod holds, below {a.idle_utilization_percent:g}% utilization (GpuIdle after {a.idle_for}).",
            "none",
            1,
        ),
        ("Mean utilization", "Mean utilization over all devices.", "percent", None),
    ]
    for i, (title, desc, unit, red) in enumerate(stats):
        lay.add(_panel("stat", title, desc, q[title], unit=unit, red=red), w=6, h=4, x=6 * i)
    lay.add(
        _panel(
            "timeseries",
            "Utilization per pool",
            "Mean utilization of the pool's devices (held or not). Compare with the allocation panel: high "
            "allocation with low utilization means GPUs are held but not used.",
            q["Utilization per pool"],
            legend="{{pool}}",
            unit="percent",
            max_=100,
        ),
        w=12,
        h=8,
        x=0,
    )
    lay.add(
        _panel(
            "timeseries",
            "Allocation per pool",
            "Share of the pool's devices that pods hold.",
            q["Allocation per pool"],
            legend="{{pool}}",
            unit="percent",
            max_=100,
        ),
        w=12,
        h=8,
        x=12,
    )


def _tenants_row(lay: _Layout, a: AlertThresholds, q: dict[str, str]) -> None:
    lay.row("Tenants (namespaces)")
    lay.add(
        _panel(
            "timeseries",
            "GPUs allocated per tenant namespace",
            "Devices held by each tenant's pods (quota use in physical units).",
            q["GPUs allocated per tenant namespace"],
            legend="{{namespace}}",
            stack=True,
        ),
        w=12,
        h=8,
        x=0,
    )
    lay.add(
        _panel(
            "timeseries",
            "Utilization of allocated GPUs per tenant namespace",
            "How busy each tenant keeps the devices it holds.",
            q["Utilization of allocated GPUs per tenant namespace"],
            legend="{{namespace}}",
            unit="percent",
            max_=100,
        ),
        w=12,
        h=8,
        x=12,
    )
    lay.add(
        _panel(
            "table",
            "Pods holding idle GPUs",
            f"Pods whose busiest GPU is below {a.idle_utilization_percent:g}% now "
            f"(GpuAllocatedIdle fires after {a.allocated_idle_for}).",
            q["Pods holding idle GPUs"],
            unit="percent",
            instant=True,
        ),
        w=24,
        h=6,
        x=0,
    )
    spend = _panel(
        "timeseries",
        IDLE_SPEND,
        f"What GPUs below {a.idle_utilization_percent:g}% utilization cost per hour at list price (gpu-platform "
        "cost): per pool, unallocated and held devices together; per tenant namespace, the units its pods hold "
        "idle. Prices are constants in the recording rules; pools without a known price are absent.",
        q[IDLE_SPEND],
        legend="pool {{pool}}",
        unit="currencyUSD",
    )
    spend["targets"].append({"refId": "B", "expr": q[IDLE_SPEND_TENANT], "legendFormat": "tenant {{namespace}}"})
    lay.add(spend, w=24, h=8, x=0)


def _health_row(lay: _Layout, a: AlertThresholds, q: dict[str, str]) -> None:
    lay.row("Health")
    lay.add(
        _panel(
            "timeseries",
            "Framebuffer memory used",
            f"Used / (used + free) per GPU or MIG instance; GpuFramebufferMemoryHigh above {a.memory_used_percent:g}%.",
            q["Framebuffer memory used"],
            legend="{{node}} gpu{{gpu}} {{GPU_I_ID}}",
            unit="percent",
            red=a.memory_used_percent,
            max_=100,
        ),
        w=12,
        h=8,
        x=0,
    )
    lay.add(
        _panel(
            "timeseries",
            "GPU temperature",
            f"GPU core temperature; GpuTemperatureHigh above {a.temperature_celsius:g} C.",
            q["GPU temperature"],
            legend="{{node}} gpu{{gpu}}",
            unit="celsius",
            red=a.temperature_celsius,
        ),
        w=12,
        h=8,
        x=12,
    )
    lay.add(
        _panel(
            "timeseries",
            "Power draw per pool",
            "Sum of the GPUs' power draw per pool.",
            q["Power draw per pool"],
            legend="{{pool}}",
            unit="watt",
            stack=True,
        ),
        w=12,
        h=8,
        x=0,
    )
    lay.add(
        _panel(
            "table",
            "Last XID per GPU",
            "GPUs whose last reported XID is non-zero (GpuXidError / GpuXidErrorCritical).",
            q["Last XID per GPU"],
            instant=True,
        ),
        w=12,
        h=8,
        x=12,
    )


def dashboard(source: MonitoringPlan) -> dict[str, Any]:
    """The Grafana dashboard: one row each for utilization vs. allocation, tenants, and health."""
    a = _alerts(source)
    q = queries(source)
    lay = _Layout()
    for row in (_utilization_row, _tenants_row, _health_row):
        row(lay, a, q)
    return {
        "uid": UID,
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
        "templating": {
            "list": [
                {
                    "name": "datasource",
                    "label": "Data source",
                    "type": "datasource",
                    "query": "prometheus",
                    "current": {},
                    "hide": 0,
                },
                _variable("pool", "Pool", "label_values(DCGM_FI_DEV_GPU_TEMP, pool)"),
                _variable("namespace", "Tenant namespace", f'label_values({U}{{pod!=""}}, namespace)'),
            ]
        },
        "panels": lay.panels,
    }
