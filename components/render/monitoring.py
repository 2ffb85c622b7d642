"""GPU monitoring: the DCGM exporter's scrape config, recording and alerting rules, and a Grafana dashboard.

The exporter itself comes from the GPU Operator (``dcgmExporter``) or, when the operator is off but
``addons.dcgm`` is on, from the standalone dcgm-exporter chart installed here.

Labels the rules rely on (dcgm-exporter ``default-counters.csv`` fields; exporter labels ``gpu``, ``UUID``,
``device``, ``modelName``, ``Hostname``/``hostname``, ``pci_bus_id``, ``GPU_I_ID``/``GPU_I_PROFILE`` on MIG
instances, and ``pod``/``namespace``/``container`` only while a GPU is allocated to a pod):
- ``node``: the host, as the ServiceMonitor sets it from ``__meta_kubernetes_pod_node_name``. Rules and the
  dashboard never use the exporter's own host label: dcgm-exporter renamed ``Hostname`` to ``hostname``
  after 4.8.2 (NVIDIA/dcgm-exporter#655, internal/pkg/rendermetrics/render_metrics.go), gpu-operator v26.7.0
  runs 4.6.0-4.8.3 while the standalone chart here is 4.8.2, and on the host network it is the exporter
  pod's hostname anyway.

- ``pool``: not a DCGM label. The ServiceMonitor here attaches node metadata (``attachMetadata.node``, the
  operator's own ServiceMonitor cannot) and copies the node label ``gpu-platform/pool`` into ``pool``, plus
  the node name into ``node``.
- ``pod``/``namespace``/``container``: Prometheus would rename the exporter's workload labels to
  ``exported_*`` because its own target labels (the exporter pod) collide. The ServiceMonitor drops those
  target labels, so ``pod``/``namespace`` mean the workload holding the GPU, and their absence means
  "not allocated". The tenant is the namespace.
- Shared GPUs (time-slicing / MPS): the exporter runs with ``KUBERNETES_VIRTUAL_GPUS=true`` and adds per-pod
  series (label ``vgpu``) next to the device series; rules deduplicate per device (``UUID``, ``GPU_I_ID``).
- MIG instances report no ``DCGM_FI_DEV_GPU_UTIL``; their utilization is ``DCGM_FI_PROF_GR_ENGINE_ACTIVE``.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pulumi

from ..data import versions
from ..plan import derive

# re-exported: the renderer's names for what it is made of (components/plan/monitoring.py)
from ..plan.monitoring import (
    AlertThresholds as AlertThresholds,
    Exporter as Exporter,
    IdleCostTerm as IdleCostTerm,
    MonitoringPlan as MonitoringPlan,
    _allocated_unit_price as _allocated_unit_price,
    _seconds as _seconds,
    _shared_replicas as _shared_replicas,
    dcgm_exporter_values as dcgm_exporter_values,
    exporter as exporter,
    idle_cost_terms as idle_cost_terms,
    monitoring_rules as monitoring_rules,
    prom_duration as prom_duration,
)
from ..plan.plan import Plan, plain
from . import addon, gpu_operator, k8s
from .metrics import ALLOCATED_IDLE_COST, IDLE_COST, UTILIZATION, XID_LAST, number as _num

RULE_NAME = "gpu-platform-gpu-alerts"
SERVICE_MONITOR_NAME = "gpu-platform-dcgm-exporter"
DASHBOARD_NAME = "gpu-platform-gpu-dashboard"
DASHBOARD_FILE = "gpu-platform-gpus.json"
RULE_GROUP = "gpu-platform.gpu"

COST_GROUP = "gpu-platform.gpu-cost"

# Per-pod and per-MIG-instance labels dropped to get one series per physical GPU (device-level fields).
WORKLOAD_LABELS = ("pod", "namespace", "container", "vgpu")
PER_GPU_WITHOUT = (*WORKLOAD_LABELS, "GPU_I_ID", "GPU_I_PROFILE")
DEVICE_KEY = ("UUID", "GPU_I_ID")  # one GPU, or one MIG instance of it

# Where an alert fires, in its summary.
WHERE = "{{ $labels.node }} GPU {{ $labels.gpu }} ({{ $labels.modelName }}, pool {{ $labels.pool }})"

NODE_POOL_META = "__meta_kubernetes_node_label_" + re.sub(r"[^a-zA-Z0-9_]", "_", derive.POOL_LABEL)

Source = MonitoringPlan  # what every function here renders from (Plan.monitoring)


def _of(source: Source) -> MonitoringPlan:
    """The monitoring plan the objects are made of."""
    if not isinstance(source, MonitoringPlan):
        raise TypeError(f"monitoring renders from the plan's MonitoringPlan, not {type(source).__name__}")
    return source


def _fill(text: str, **values: str) -> str:
    """Alert texts use Prometheus templates ({{ $labels.x }}); thresholds go in as [[name]]."""
    for k, v in values.items():
        text = text.replace(f"[[{k}]]", v)
    return text


# ---------------------------------------------------------------------------------- PrometheusRule


def utilization_expr() -> str:
    return (
        '100 * DCGM_FI_PROF_GR_ENGINE_ACTIVE{GPU_I_ID!=""} or '
        '(DCGM_FI_DEV_GPU_UTIL unless on (UUID) DCGM_FI_PROF_GR_ENGINE_ACTIVE{GPU_I_ID!=""})'
    )


def rule_groups(source: Source) -> list[dict[str, Any]]:
    """The PrometheusRule ``spec.groups``: recording rules first (same group, so alerts see this cycle's
    values), then the alerts. Thresholds and durations come from ``monitoring.alerts``."""
    m = _of(source)
    rules = [
        *recording_rules(),
        *idle_alerts(m),
        *health_alerts(m),
        *xid_alerts(m),
        *exporter_alerts(m),
        *node_health_alerts(m),
    ]
    groups = [{"name": RULE_GROUP, "rules": rules}]
    cost_rules = idle_cost_rules(m)
    if cost_rules:
        groups.append({"name": COST_GROUP, "rules": cost_rules})
    return groups


def recording_rules() -> list[dict[str, Any]]:
    per_gpu = ", ".join(PER_GPU_WITHOUT)
    return [
        {
            "record": UTILIZATION,
            # MIG instances have no DCGM_FI_DEV_GPU_UTIL: use the graphics-engine activity ratio there.
            "expr": utilization_expr(),
        },
        {
            "record": XID_LAST,
            # one series per GPU with the last XID as a label (the gauge holds the last XID seen)
            "expr": f'count_values without () ("xid", max without ({per_gpu}) (DCGM_FI_DEV_XID_ERRORS) > 0)',
        },
    ]


def idle_alerts(source: Source) -> list[dict[str, Any]]:
    """GpuIdle (nobody holds the GPU) and GpuAllocatedIdle (a pod holds it and does not use it)."""
    a = _of(source).alerts
    idle = _num(a.idle_utilization_percent)
    device = ", ".join(DEVICE_KEY)
    return [
        {
            "alert": "GpuIdle",
            "expr": (f'{UTILIZATION}{{pod=""}} < {idle} unless on ({device}) {UTILIZATION}{{pod!=""}}'),
            "for": prom_duration(a.idle_for),
            "labels": {"severity": "info"},
            "annotations": {
                "summary": _fill(f"Unallocated GPU idle for [[for]] on {WHERE}", **{"for": a.idle_for}),
                "description": _fill(
                    "No pod holds this GPU{{ if $labels.GPU_I_PROFILE }} (MIG {{ $labels.GPU_I_PROFILE }}){{ end }} "
                    "and it has been below [[idle]]% utilization for [[for]]: capacity is paid for and unused. "
                    "Runbook: 1) if the pool's minNodes keeps this node, this is expected; lower minNodes if "
                    "the reserve is not needed. 2) Otherwise check why the autoscaler does not remove the node "
                    "(scale-down blocked by a PodDisruptionBudget, a non-evictable pod, or a karpenter.sh/"
                    "do-not-disrupt annotation). 3) If GPU jobs are pending at the same time, they cannot use "
                    "this node: compare their tolerations, node selectors and ResourceQuota/queue with the "
                    "pool's taints and labels. GPUs held by pods are reported by GpuAllocatedIdle instead.",
                    idle=idle,
                    **{"for": a.idle_for},
                ),
            },
        },
        {
            "alert": "GpuAllocatedIdle",
            "expr": (f'max by (pool, namespace, pod, node) ({UTILIZATION}{{pod!=""}}) < {idle}'),
            "for": prom_duration(a.allocated_idle_for),
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": _fill(
                    "Pod {{ $labels.namespace }}/{{ $labels.pod }} holds GPUs it has not used for [[for]]",
                    **{"for": a.allocated_idle_for},
                ),
                "description": _fill(
                    "Every GPU allocated to {{ $labels.namespace }}/{{ $labels.pod }} on {{ $labels.node }} "
                    "(pool {{ $labels.pool }}) has stayed below [[idle]]% utilization for [[for]] (busiest "
                    "GPU now {{ $value | humanize }}%). The GPUs count against tenant {{ $labels.namespace }}'s "
                    "quota and are unavailable to other tenants. Runbook: 1) ask the owner (namespace "
                    "{{ $labels.namespace }}) whether the pod is waiting on data, a dead dependency or a "
                    "debugger; 2) idle notebooks and interactive sessions belong on a time-sliced or MPS pool; "
                    "3) if it is abandoned, delete the pod (its Job or notebook controller first).",
                    idle=idle,
                    **{"for": a.allocated_idle_for},
                ),
            },
        },
    ]


def health_alerts(source: Source) -> list[dict[str, Any]]:
    """Framebuffer memory and temperature."""
    a = _of(source).alerts
    per_gpu = ", ".join(PER_GPU_WITHOUT)
    return [
        {
            "alert": "GpuFramebufferMemoryHigh",
            "expr": (
                "100 * DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE) > "
                f"{_num(a.memory_used_percent)}"
            ),
            "for": prom_duration(a.memory_for),
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": _fill(
                    "GPU memory {{ $value | humanize }}% used on " + WHERE,
                ),
                "description": _fill(
                    "Framebuffer used / (used + free) has been above [[mem]]% for [[for]]"
                    "{{ if $labels.pod }} (pod {{ $labels.namespace }}/{{ $labels.pod }}){{ end }}"
                    "{{ if $labels.GPU_I_PROFILE }} on MIG instance {{ $labels.GPU_I_PROFILE }}{{ end }}. "
                    "The next allocation will fail with CUDA out-of-memory. Runbook: 1) check the workload's "
                    "batch size / KV-cache settings (servers that pre-allocate, such as vLLM with its default "
                    "gpu-memory-utilization 0.9, sit just below the default threshold by design); 2) on "
                    "time-sliced GPUs, pods share memory without isolation: one pod can starve the others, "
                    "move memory-hungry pods to whole GPUs or MIG; 3) if memory "
                    "grows steadily, suspect a leak and restart the pod.",
                    mem=_num(a.memory_used_percent),
                    **{"for": a.memory_for},
                ),
            },
        },
        {
            "alert": "GpuTemperatureHigh",
            "expr": f"max without ({per_gpu}) (DCGM_FI_DEV_GPU_TEMP) > {_num(a.temperature_celsius)}",
            "for": prom_duration(a.temperature_for),
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": "GPU at {{ $value | humanize }} C on " + WHERE,
                "description": _fill(
                    "The GPU core has been above [[temp]] C for [[for]]; it throttles its clocks (jobs slow "
                    "down) and hardware faults become likelier. Runbook: 1) check DCGM_FI_DEV_POWER_USAGE and "
                    "the other GPUs of the node: all hot means cooling or a host problem, one hot GPU means "
                    "that GPU; 2) on a cloud instance, cordon and drain the node so it is replaced "
                    "(kubectl cordon {{ $labels.node }}; kubectl drain ...); 3) if it recurs on new "
                    "nodes, open a support case with the cloud provider with the instance ID.",
                    temp=_num(a.temperature_celsius),
                    **{"for": a.temperature_for},
                ),
            },
        },
    ]


def xid_alerts(source: Source) -> list[dict[str, Any]]:
    """XIDs NVIDIA lists as hardware / driver faults (critical), and the others."""
    a = _of(source).alerts
    critical = "|".join(str(c) for c in a.xid_critical_codes)
    return [
        {
            "alert": "GpuXidErrorCritical",
            "expr": f'{XID_LAST}{{xid=~"{critical}"}}',
            "for": prom_duration(a.xid_for),
            "labels": {"severity": "critical"},
            "annotations": {
                "summary": "XID {{ $labels.xid }} (hardware / driver) on " + WHERE,
                "description": (
                    "DCGM_FI_DEV_XID_ERRORS reports XID {{ $labels.xid }}, one NVIDIA lists as needing a GPU "
                    "reset or hardware service (ECC, NVLink, fallen off the bus, GSP). Jobs on this GPU have "
                    "failed or will. The gauge keeps the last XID until the driver reloads, so the alert stays "
                    "until the node is replaced. Runbook: 1) kubectl cordon {{ $labels.node }} so no new "
                    "pods land there; 2) drain it (kubectl drain --ignore-daemonsets --delete-emptydir-data) "
                    "once running jobs have checkpointed; 3) terminate the instance so the node group or "
                    "Karpenter replaces it; 4) if the same XID follows new instances, escalate to the cloud "
                    "provider with the XID, instance ID and `nvidia-smi -q` output."
                ),
            },
        },
        {
            "alert": "GpuXidError",
            "expr": f'{XID_LAST}{{xid!~"{critical}"}}',
            "for": prom_duration(a.xid_for),
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": "XID {{ $labels.xid }} on " + WHERE,
                "description": (
                    "DCGM_FI_DEV_XID_ERRORS reports XID {{ $labels.xid }}. XIDs outside the critical list are "
                    "usually raised by an application (13 graphics engine exception, 31 MMU fault, 43 context "
                    "reset, 45 preemptive cleanup) rather than the hardware. The gauge keeps the last XID until "
                    "the driver reloads. Runbook: 1) find the pod that held the GPU at that time (GpuAllocatedIdle "
                    "/ the dashboard's per-namespace panels) and read its logs; 2) if the XID repeats across "
                    "different workloads on this GPU, treat it as hardware: cordon, drain and replace the node; "
                    "3) otherwise silence it after the owner has fixed the job."
                ),
            },
        },
    ]


def exporter_alerts(source: Source) -> list[dict[str, Any]]:
    """The exporter itself is not scraped: every alert above is blind for that node."""
    m = _of(source)
    a = m.alerts
    job = m.exporter.job
    return [
        {
            "alert": "DcgmExporterDown",
            "expr": f'up{{job="{job}"}} == 0',
            "for": prom_duration(a.exporter_down_for),
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": "DCGM exporter on {{ $labels.node }} is not scraped",
                "description": _fill(
                    "Prometheus has failed to scrape the DCGM exporter ({{ $labels.instance }}) on node "
                    "{{ $labels.node }} for [[for]]: every GPU alert above is blind for that node. Runbook: "
                    "1) kubectl -n [[ns]] get pods -o wide | grep dcgm; 2) read the exporter's logs (a driver / "
                    "NVML mismatch after a node image upgrade is the usual cause); 3) check that the node's GPU "
                    "operands are healthy (the operator's validator pod). Nodes without GPUs have no exporter, "
                    "so pools scaled to zero do not fire this (no target, no alert).",
                    ns=m.exporter.namespace,
                    **{"for": a.exporter_down_for},
                ),
            },
        },
    ]


# kube-state-metrics names extended resources with '.' and '/' replaced by '_' (nvidia.com/gpu -> nvidia_com_gpu).
NVIDIA_RESOURCES = 'resource=~"nvidia_com_.+"'


def node_health_alerts(source: Source) -> list[dict[str, Any]]:
    """What marks a node with a failed GPU, from kube-state-metrics (kube-prometheus-stack installs it; an
    ``existing`` Prometheus needs its own): every device plugin (NVIDIA's, GKE's, Bottlerocket's host copy) reports
    a failed GPU unhealthy, and the kubelet then counts it in the node's capacity but not in its allocatable
    (``GpuDevicesUnhealthy``); and per cloud the node condition its health agent sets
    (``MonitoringPlan.node_health``)."""
    m = _of(source)
    a = m.alerts
    out: list[dict[str, Any]] = [
        {
            "alert": "GpuDevicesUnhealthy",
            "expr": (
                f"sum by (node, resource) (kube_node_status_capacity{{{NVIDIA_RESOURCES}}}) - "
                f"sum by (node, resource) (kube_node_status_allocatable{{{NVIDIA_RESOURCES}}}) > 0"
            ),
            "for": prom_duration(a.xid_for),
            "labels": {"severity": "critical"},
            "annotations": {
                "summary": "{{ $value }} {{ $labels.resource }} on {{ $labels.node }} reported unhealthy by the "
                "device plugin",
                "description": (
                    "The node's device plugin has marked {{ $value }} of its {{ $labels.resource }} devices "
                    "unhealthy (a critical XID, or the GPU fell off the bus): the kubelet no longer offers them, "
                    "and pods that held them have failed or will. Runbook: 1) kubectl describe node "
                    "{{ $labels.node }} (conditions, events) and the XID alerts of the node; 2) kubectl cordon "
                    "{{ $labels.node }}; 3) drain it once running jobs have checkpointed (kubectl drain "
                    "--ignore-daemonsets --delete-emptydir-data); 4) replace the instance (terminate it on EKS, "
                    "recreate it through its managed instance group on GKE) so its node group brings a new one."
                ),
            },
        }
    ]
    for h in m.node_health:
        out.append(
            {
                "alert": h.alert,
                "expr": f'kube_node_status_condition{{condition="{h.condition}",status="{h.status}"}} == 1',
                "for": prom_duration(a.xid_for),
                "labels": {"severity": "critical"},
                "annotations": {
                    "summary": f"{{{{ $labels.node }}}}: node condition {h.condition} is {h.status.capitalize()}",
                    "description": (
                        f"{h.source[0].upper()}{h.source[1:]} has set {h.condition}={h.status.capitalize()} on "
                        "{{ $labels.node }}: a GPU of the node has failed (kubectl describe node {{ $labels.node }} "
                        "shows the reason). Gangs on the node are evicted as it drains and requeued whole (Kueue "
                        "waitForPodsReady, Volcano RestartJob) and resume from their last checkpoint. "
                        f"Runbook: {h.repair}."
                    ),
                },
            }
        )
    return out


def _price(x: float) -> str:
    return repr(round(x, 6))


def idle_cost_rules(source: Source) -> list[dict[str, Any]]:
    """Per pool with a known price: the hourly cost of its idle devices, the price a constant in the rule (so
    Prometheus needs no external data). Unallocated: devices under the idle threshold no pod holds (GpuIdle's
    expression), and on a time-sliced or MPS GPU under the threshold the replicas no pod holds; allocated: per
    tenant namespace, units its pods hold under the threshold. Pools scaled to zero record 0."""
    decided = _of(source)
    idle = _num(decided.alerts.idle_utilization_percent)
    device = ", ".join(DEVICE_KEY)
    out: list[dict[str, Any]] = []
    for pool, terms in decided.idle_cost.items():
        free_parts, held = [], []
        for term in terms:
            profile, price, unit, replicas = term.profile, term.device_price, term.unit_price, term.replicas
            m = f'pool="{pool}"' + (f', GPU_I_PROFILE="{profile}"' if profile else "")
            free_parts.append(
                f'count({UTILIZATION}{{{m}, pod=""}} < {idle} unless on ({device}) {UTILIZATION}{{pod!=""}}) '
                f"* {_price(price)} or vector(0)"
            )
            if replicas > 1:
                # A partly used shared GPU: the replicas no pod holds are paid and idle too (the pods' series
                # carry the device's utilization, one series per pod: KUBERNETES_VIRTUAL_GPUS).
                free_parts.append(
                    f'sum(clamp_min({replicas} - count by ({device}) ({UTILIZATION}{{{m}, pod!=""}} < {idle}), 0)) '
                    f"* {_price(unit)} or vector(0)"
                )
            labels = {"pool": pool, **({"profile": profile} if profile else {})}
            held.append(
                {
                    "record": ALLOCATED_IDLE_COST,
                    "expr": f'count by (namespace) ({UTILIZATION}{{{m}, pod!=""}} < {idle}) * {_price(unit)}',
                    "labels": labels,
                }
            )
        expr = " + ".join(f"({part})" for part in free_parts) if len(free_parts) > 1 else free_parts[0]
        out.append({"record": IDLE_COST, "expr": expr, "labels": {"pool": pool}})
        out += held
    return out


def prometheus_rule(source: Source) -> dict[str, Any]:
    m = _of(source)
    return {
        "apiVersion": versions.MONITORING_API,
        "kind": "PrometheusRule",
        "metadata": {
            "name": RULE_NAME,
            "namespace": m.exporter.namespace,
            "labels": dict(m.labels),
        },
        "spec": {"groups": rule_groups(m)},
    }


def service_monitor(source: Source) -> dict[str, Any]:
    m = _of(source)
    ex = m.exporter
    return {
        "apiVersion": versions.MONITORING_API,
        "kind": "ServiceMonitor",
        "metadata": {
            "name": SERVICE_MONITOR_NAME,
            "namespace": ex.namespace,
            "labels": dict(m.labels),
        },
        "spec": {
            "selector": {"matchLabels": dict(ex.selector)},
            "namespaceSelector": {"matchNames": [ex.namespace]},
            # exposes __meta_kubernetes_node_label_* (Prometheus >= 2.37, needs list/watch on nodes)
            "attachMetadata": {"node": True},
            "endpoints": [
                {
                    "port": ex.port,
                    "path": "/metrics",
                    "interval": m.scrape_interval,
                    "scrapeTimeout": m.scrape_timeout,
                    "honorLabels": False,
                    "relabelings": [
                        {
                            "action": "replace",
                            "sourceLabels": ["__meta_kubernetes_pod_node_name"],
                            "targetLabel": "node",
                        },
                        {"action": "replace", "sourceLabels": [NODE_POOL_META], "targetLabel": "pool"},
                        # the exporter pod's own target labels; the metrics' pod/namespace/container (the
                        # workload holding the GPU) then keep their names instead of becoming exported_*
                        {"action": "labeldrop", "regex": "pod|namespace|container"},
                    ],
                }
            ],
        },
    }


def dashboard_configmap(source: Source) -> dict[str, Any]:
    from .dashboards import gpu

    m = _of(source)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": DASHBOARD_NAME,
            "namespace": m.dashboard_namespace,
            "labels": dict(m.dashboard_labels),
            "annotations": {"grafana_folder": "GPU"},
        },
        "data": {DASHBOARD_FILE: json.dumps(gpu.dashboard(m), indent=1, sort_keys=True)},
    }


# ------------------------------------------------------------------------------------- component


class GpuMonitoring(addon.ChartAddon):
    """ServiceMonitor + PrometheusRule + Grafana dashboard for the DCGM exporter (and the exporter itself
    when the GPU Operator is off). Needs the prometheus-operator CRDs: installed with kube-prometheus-stack
    (``monitoring.prometheus: install``, components/render/prometheus_stack.py) or already there (``existing``)."""

    TYPE = "gpu-platform:monitoring:GpuMonitoring"
    CHART = versions.DCGM_EXPORTER  # installed only when the GPU Operator is off (standalone exporter)

    def __init__(
        self,
        name: str,
        plan: Plan,
        provider: pulumi.ProviderResource,
        exporter_release: pulumi.Resource | None = None,
        opts: pulumi.ResourceOptions | None = None,
        prometheus_release: pulumi.Resource | None = None,
    ):
        """``prometheus_release``: the kube-prometheus-stack release (``monitoring.prometheus: install``); the
        ServiceMonitor, PrometheusRule and dashboard wait for it (its CRDs, its Grafana sidecar). With
        ``monitoring.prometheus: none`` only the exporter (standalone, when the operator is off) is made."""
        super().__init__(name, plan, provider, opts)

        m = self.plan.monitoring
        assert m is not None, "GpuMonitoring is made only with addons.dcgm on"
        ex = m.exporter
        upstream: list[pulumi.Resource] = []
        if ex.source == "standalone":
            # (never on gcp: monitoring_rules; so no critical-pods ResourceQuota is needed here)
            ns = self.create_namespace(
                addon.NamespacePolicy("gpu-monitoring", gpu_operator.namespace_labels(), name=ex.namespace)
            )
            self.install("dcgm-exporter", plain(self.addon_plan.values), ns)
        elif exporter_release is not None:
            upstream.append(exporter_release)
        if m.prometheus == "none":
            self.register_outputs({"namespace": ex.namespace, "source": ex.source})
            return
        if prometheus_release is not None:
            upstream.append(prometheus_release)
        after = self.after_release(*upstream)
        for doc in (service_monitor(m), prometheus_rule(m)):
            k8s.kube_object(
                doc["metadata"]["name"],
                api_version=doc["apiVersion"],
                kind=doc["kind"],
                metadata=doc["metadata"],
                spec=doc["spec"],
                opts=after,
            )
        board = dashboard_configmap(m)
        k8s.kube_object(DASHBOARD_NAME, "v1", "ConfigMap", after, metadata=board["metadata"], data=board["data"])
        self.register_outputs({"namespace": ex.namespace, "source": ex.source})
