"""What GPU monitoring decides (pure): where the DCGM exporter runs and how Prometheus finds it, whether anything
scrapes it, the scrape interval, the labels Prometheus and Grafana select on, the alert thresholds, and what an
idle device costs per pool (the idle-spend recording rules' constants). The ServiceMonitor, PrometheusRule and
dashboard made from it, and why they look so, are ``components/render/monitoring.py``'s."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..data import versions
from ..spec.model import NodePool, Problem, StackSpec, key, rule
from . import derive, gpu_operator


@dataclass(frozen=True)
class Exporter:
    """Where the DCGM exporter's Service lives and how to select it."""

    source: str  # "operator" | "standalone"
    namespace: str
    selector: Mapping[str, str]
    port: str
    job: str  # Prometheus job label (prometheus-operator: the Service name)


@dataclass(frozen=True)
class AlertThresholds:
    """``monitoring.alerts``: thresholds, and durations as the stack file writes them (the alert texts quote
    them; ``prom_duration`` gives the rules' canonical form)."""

    idle_utilization_percent: float
    idle_for: str
    allocated_idle_for: str
    memory_used_percent: float
    memory_for: str
    temperature_celsius: float
    temperature_for: str
    xid_critical_codes: tuple[int, ...]  # sorted, each once
    xid_for: str
    exporter_down_for: str


@dataclass(frozen=True)
class IdleCostTerm:
    """What one kind of device DCGM reports on a pool costs while idle (components/plan/cost.py list prices)."""

    profile: str | None  # the MIG profile, None: whole GPUs (time-sliced and MPS GPUs report once per GPU)
    device_price: float  # USD per device-hour
    replicas: int  # units one GPU of a time-sliced or MPS pool advertises (0: not shared)
    unit_price: float  # USD per hour of what one pod's series stands for (a replica's share of a shared GPU)


@dataclass(frozen=True)
class NodeHealthCondition:
    """A node condition something on the GPU nodes sets when a GPU fails; an alert watches it through
    kube-state-metrics (``kube_node_status_condition``, whose ``status`` label is lowercase)."""

    condition: str  # the node condition's type
    status: str  # the kube-state-metrics status value that means "faulty": true | false
    alert: str  # the alert's name
    source: str  # who sets it, for the runbook
    repair: str  # the runbook's numbered steps: what replaces the node


# EKS node monitoring agent: AcceleratedHardwareReady False on GPU / XID faults (EKS user guide "Detect node
# health issues"); EKS auto repair and Karpenter's node repair act on it.
EKS_ACCELERATED_HARDWARE = NodeHealthCondition(
    condition="AcceleratedHardwareReady",
    status="false",
    alert="GpuNodeAcceleratedHardwareNotReady",
    source="the EKS node monitoring agent",
    repair=(
        "1) a node that EKS auto repair (a managed node group with eks.autoRepair) or Karpenter's node repair covers "
        "is replaced once the condition has held for 10 minutes: watch it go; 2) on a node of a group without auto "
        "repair: kubectl cordon {{ $labels.node }}, drain it once running jobs have checkpointed (kubectl drain "
        "--ignore-daemonsets --delete-emptydir-data) and terminate its instance (aws ec2 terminate-instances) so "
        "its group replaces it; 3) if the fault follows new instances, escalate to AWS with the instance ID"
    ),
)
# GKE's NVIDIA device plugin with --enable-health-monitoring sets XidCriticalError (status True, reason a JSON map
# of the XIDs seen) for XIDs 48, 63, 64, 79, 119, 120, 123, 140 and clears it when the node boots anew
# (GoogleCloudPlatform/container-engine-accelerators@992db81 pkg/gpu/nvidia/health_check/health_checker.go
# monitorCriticalXid, resetXIDCondition). GKE node auto-repair acts on NotReady / no status / full boot disk only
# (GKE docs, node auto-repair), so nothing replaces the node by itself: the runbook does.
GKE_XID_CRITICAL = NodeHealthCondition(
    condition="XidCriticalError",
    status="true",
    alert="GpuNodeXidCriticalError",
    source="GKE's NVIDIA device plugin",
    repair=(
        "1) GKE node auto-repair does not act on this condition (it repairs nodes that are NotReady), so: kubectl "
        "cordon {{ $labels.node }}; 2) drain it once running jobs have checkpointed (kubectl drain "
        "--ignore-daemonsets --delete-emptydir-data); 3) recreate its VM through the node pool's managed instance "
        "group: gcloud compute instance-groups managed recreate-instances GROUP --instances={{ $labels.node }} "
        "--zone=ZONE (GROUP: gcloud container node-pools describe POOL --cluster=CLUSTER --location=LOCATION "
        "--format='value(instanceGroupUrls)'); the new VM boots with a new boot ID, which clears the condition; "
        "4) if the XID follows new VMs, escalate to Google Cloud with the XIDs (the condition's reason)"
    ),
)


@dataclass(frozen=True)
class MonitoringPlan:
    """``addons.dcgm``: the exporter, and unless ``prometheus`` is none, its ServiceMonitor, rules and dashboard."""

    exporter: Exporter
    prometheus: str  # install | existing | none (no ServiceMonitor, PrometheusRule or dashboard)
    scrape_interval: str  # canonical (prom_duration)
    scrape_timeout: str
    labels: Mapping[str, str]  # the ServiceMonitor's and PrometheusRule's (Prometheus selects them)
    dashboard_namespace: str
    dashboard_labels: Mapping[str, str]  # the dashboard ConfigMap's (the Grafana sidecar watches them)
    alerts: AlertThresholds
    idle_cost: Mapping[str, tuple[IdleCostTerm, ...]]  # pool -> its devices' prices; pools of unknown price absent
    # monitoring.serviceMonitorLabels as the stack file gives them (``labels`` adds gpu-platform's managed-by)
    service_monitor_labels: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    node_health: tuple[NodeHealthCondition, ...] = ()  # node conditions that mark a GPU fault, each with its alert
    unmonitored_pools: tuple[str, ...] = ()  # pools no DCGM exporter runs on (Bottlerocket: operands off), by name


# ------------------------------------------------------------------------------------------ rules


@rule
def monitoring_rules(spec: StackSpec) -> Iterator[Problem]:
    if spec.cloud == "gcp" and spec.addons.dcgm and not spec.addons.gpu_operator:
        yield Problem(
            key("addons", "dcgm"),
            "a standalone DCGM exporter cannot reach NVML on GKE nodes (GKE installs it under "
            "/home/kubernetes/bin/nvidia for its device plugin's containers only): enable addons.gpuOperator, "
            "or turn dcgm off and use GKE's managed DCGM metrics",
        )


# -------------------------------------------------------------------------------------- durations


def _seconds(d: str) -> int:
    return sum(int(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in re.findall(r"([0-9]+)([hms])", d))


def prom_duration(d: str) -> str:
    """A stack-file duration (``90m``, ``1h30m``, ``30m1h``) in the canonical form Prometheus and the
    PrometheusRule schema accept (``1h30m``)."""
    seconds = _seconds(d)
    if seconds == 0:
        return "0s"
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return "".join(f"{v}{u}" for v, u in ((h, "h"), (m, "m"), (s, "s")) if v)


# --------------------------------------------------------------------------------------- exporter


def exporter(spec: StackSpec) -> Exporter:
    if spec.addons.gpu_operator:
        # gpu-operator assets/state-dcgm-exporter/0600_service.yaml
        ns = versions.for_spec(versions.GPU_OPERATOR, spec).namespace
        if spec.gpu_operator.allocation == "dra":
            # the GPUCluster's exporter: manifests/state-dcgm-exporter/0500_service.yaml (gpu-operator v26.7.0)
            return Exporter(
                "operator", ns, {"app": "nvidia-dcgm-exporter-dra"}, "gpu-metrics", "nvidia-dcgm-exporter-dra"
            )
        return Exporter("operator", ns, {"app": "nvidia-dcgm-exporter"}, "gpu-metrics", "nvidia-dcgm-exporter")
    # dcgm-exporter chart templates/service.yaml + _helpers.tpl (fullname = release name here)
    chart = versions.for_spec(versions.DCGM_EXPORTER, spec)
    selector = {"app.kubernetes.io/name": "dcgm-exporter", "app.kubernetes.io/instance": chart.release}
    return Exporter("standalone", chart.namespace, selector, "metrics", chart.release)


def dcgm_exporter_values(spec: StackSpec) -> dict[str, Any]:
    """Values of the standalone dcgm-exporter chart (paths checked against its values.yaml)."""
    values: dict[str, Any] = {
        "nodeSelector": {derive.GPU_PRESENT_LABEL: "true"},
        "tolerations": gpu_operator.gpu_tolerations(spec),
        "serviceMonitor": {"enabled": False},  # ours (components/render/monitoring.py) carries the pool label
    }
    if gpu_operator.exporter_env(spec):
        values["extraEnv"] = gpu_operator.exporter_env(spec)
    return values


# ---------------------------------------------------------------------------------------- idle cost


def idle_cost_terms(spec: StackSpec, pool: NodePool) -> list[tuple[str | None, float]] | None:
    """(MIG profile or None, USD per device-hour) for the devices DCGM reports on the pool: whole GPUs (time-
    sliced and MPS GPUs report once per GPU), or MIG instances priced by profile (cost.unit_price). None when
    the pool's price is unknown."""
    from . import cost

    c = cost.pool_cost(spec, pool)
    per_gpu = c.per_gpu_hour
    if per_gpu is None:
        return None
    layout = pool.sharing.layout if pool.sharing and pool.sharing.strategy == "mig" else None
    if not layout:
        return [(None, per_gpu)]
    out = []
    for profile, n in sorted(layout.items()):
        price = cost.unit_price(per_gpu, pool, f"nvidia.com/mig-{profile}", n)
        out.append((profile, price or 0.0))
    return out


def _allocated_unit_price(spec: StackSpec, pool: NodePool, profile: str | None, device_price: float) -> float:
    """A pod's series stands for one scheduler unit: on time-sliced / MPS GPUs each pod's (vgpu) series is one
    of ``replicas`` shares of the GPU."""
    replicas = _shared_replicas(pool) if profile is None else 0
    return device_price / replicas if replicas else device_price


def _shared_replicas(pool: NodePool) -> int:
    """Units one GPU of a time-sliced or MPS pool advertises (0 otherwise)."""
    if pool.sharing and pool.sharing.strategy in ("time-slicing", "mps"):
        return pool.sharing.replicas or 1
    return 0


def unmonitored_pools(spec: StackSpec) -> tuple[str, ...]:
    """Pools whose nodes run no DCGM exporter: Bottlerocket pools, where the GPU Operator's operands are off
    (``derive.BOTTLEROCKET_OPERAND_LABELS`` says why) and the standalone exporter is not installed either (it runs
    only without the operator, which Bottlerocket pools need)."""
    return tuple(sorted(p.name for p in spec.node_pools if derive.pool_device_plugin(spec, p) == "bottlerocket"))


def idle_cost(spec: StackSpec) -> dict[str, tuple[IdleCostTerm, ...]]:
    """Per pool with a known price and a DCGM exporter, by name: its devices' idle prices (a pool without an
    exporter would always record 0, which reads as "nothing idle")."""
    out: dict[str, tuple[IdleCostTerm, ...]] = {}
    skip = set(unmonitored_pools(spec))
    for pool in sorted(spec.node_pools, key=lambda p: p.name):
        if pool.name in skip:
            continue
        terms = idle_cost_terms(spec, pool)
        if terms is None:
            continue
        out[pool.name] = tuple(
            IdleCostTerm(
                profile=profile,
                device_price=price,
                replicas=_shared_replicas(pool) if profile is None else 0,
                unit_price=_allocated_unit_price(spec, pool, profile, price),
            )
            for profile, price in terms
        )
    return out


# -------------------------------------------------------------------------------------- node health


def node_health(spec: StackSpec) -> tuple[NodeHealthCondition, ...]:
    """The node conditions the stack's GPU nodes get when a GPU fails: the EKS node monitoring agent's where it is
    installed; on GKE, the XidCriticalError condition of GKE's own device plugin (only with GKE-installed drivers:
    with ``driver: operator`` GKE's plugin is off and NVIDIA's marks the failed GPU unhealthy without a
    condition). Elsewhere none: the DCGM XID alerts and ``GpuDevicesUnhealthy`` are the signal."""
    if spec.cloud == "aws" and spec.node_monitoring_agent_enabled:
        return (EKS_ACCELERATED_HARDWARE,)
    if spec.cloud == "gcp" and derive.device_plugin_owner(spec) == "gke":
        return (GKE_XID_CRITICAL,)
    return ()


# --------------------------------------------------------------------------------------------- plan


def alert_thresholds(spec: StackSpec) -> AlertThresholds:
    a = spec.monitoring.alerts
    return AlertThresholds(
        idle_utilization_percent=a.idle_utilization_percent,
        idle_for=a.idle_for,
        allocated_idle_for=a.allocated_idle_for,
        memory_used_percent=a.memory_used_percent,
        memory_for=a.memory_for,
        temperature_celsius=a.temperature_celsius,
        temperature_for=a.temperature_for,
        xid_critical_codes=tuple(sorted(set(a.xid_critical_codes))),
        xid_for=a.xid_for,
        exporter_down_for=a.exporter_down_for,
    )


def monitoring_plan(spec: StackSpec) -> MonitoringPlan | None:
    """The stack's GPU monitoring; None without ``addons.dcgm``."""
    return decide(spec) if spec.addons.dcgm else None


@derive.per_spec
def decide(spec: StackSpec) -> MonitoringPlan:
    """What the stack's GPU monitoring would be (``monitoring_plan`` when ``addons.dcgm`` is on)."""
    m = spec.monitoring
    ex = exporter(spec)
    interval = prom_duration(m.scrape_interval)
    return MonitoringPlan(
        exporter=Exporter(ex.source, ex.namespace, MappingProxyType(dict(ex.selector)), ex.port, ex.job),
        prometheus=m.prometheus,
        scrape_interval=interval,
        scrape_timeout="10s" if _seconds(interval) >= 10 else interval,
        labels=MappingProxyType({**derive.MANAGED_BY, **m.service_monitor_labels}),
        dashboard_namespace=m.dashboard_namespace or ex.namespace,
        dashboard_labels=MappingProxyType({**derive.MANAGED_BY, **m.dashboard_labels}),
        alerts=alert_thresholds(spec),
        idle_cost=MappingProxyType(idle_cost(spec)),
        service_monitor_labels=MappingProxyType(dict(m.service_monitor_labels)),
        node_health=node_health(spec),
        unmonitored_pools=unmonitored_pools(spec),
    )
