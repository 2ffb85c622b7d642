"""The stack spec: one pydantic model for a whole stack file, and its validation.

Data flows one way: stack file -> ``loader.load_spec`` -> ``StackSpec`` -> components -> resources.
Validation has two phases, and both report every problem at once:

1. structure (pydantic): types, bounds, unknown keys (``parse_spec`` here);
2. rules: cross references (a quota naming an unknown pool) and what cannot work on real hardware
   or a real cloud. Each rule is a function marked ``@rule`` next to the code it guards
   (``components/aws/rules.py``, ``components/gcp/rules.py``, ``components/sharing.py`` ...);
   ``components/loader.py`` lists those modules and runs their rules after this module's phase.

This module is the bottom of the package: it imports only ``catalog`` and ``validation``, never a rule,
a derivation or a component (tests/test_structure.py).

A problem is a key path in the stack file (``gpu-platform:nodePools[1].sharing.replicas``) and a message.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from components import catalog
from components.validation import (
    INT32_MAX,
    QUOTE_MAX,
    AwsRegion,
    Description,
    DnsLabel,
    GcpLocation,
    GcpProject,
    GcpZone,
    IamRoleArn,
    LabelKey,
    LabelValue,
    NoBool,
    bounded_text,
    count,
    go_duration,
    number,
    quote,
)

NAMESPACE = "gpu-platform"

DNS_LABEL = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
DURATION = r"^([0-9]+(s|m|h))+$"
QUANTITY = r"^[0-9]{1,15}(\.[0-9]{1,6})?(m|k|M|G|T|P|Ki|Mi|Gi|Ti|Pi)?$"  # digits bounded: int64 milli-units
LABEL_KEY = r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"

Name = Annotated[str, Field(pattern=DNS_LABEL, max_length=32)]

# Upper bounds of counts, so no derived number (units = GPUs x replicas, nodes x GPUs) leaves what the
# engine's wire format (float64) and the Kubernetes int32 / cloud APIs hold. GKE: at most 15,000 nodes
# per cluster (GKE quotas and limits); EKS managed node groups take at most 450 nodes each (checked in
# components/aws/rules.py) and Karpenter's limits are quantities.
MAX_NODES = 15_000
MAX_GPUS = MAX_NODES * 16
MAX_SHARING_REPLICAS = 1024
Duration = go_duration(DURATION)
Quantity = Annotated[str, Field(pattern=QUANTITY)]


class Model(BaseModel):
    """Base of every spec model: camelCase keys as in the stack file, unknown keys rejected."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True)


# --------------------------------------------------------------------------------------------- pools


class GpuSpec(Model):
    model: str = Field(json_schema_extra={"enum": sorted(catalog.GPU_MODELS)})
    per_node: count(1, 16) = Field(description="GPUs on each node of the pool")

    @field_validator("model")
    @classmethod
    def _known_model(cls, v: str) -> str:
        if v not in catalog.GPU_MODELS:
            raise ValueError(f"unknown GPU model {v!r} (known: {', '.join(sorted(catalog.GPU_MODELS))})")
        return v


class Sharing(Model):
    """How a pool's GPUs are shared. Each strategy uses only its own keys (checked in sharing.py).

    Who applies it: the GPU Operator's device plugin and MIG manager (ConfigMaps selected by node labels);
    on GKE with GKE-installed drivers, GKE's device plugin (gpuSharingConfig; MIG becomes the node pool's
    gpuPartitionSize: one profile at its maximum count); on Bottlerocket, the host's device plugin
    (time-slicing / MPS only)."""

    strategy: Literal["time-slicing", "mps", "mig"]
    replicas: count(2, MAX_SHARING_REPLICAS) | None = Field(
        default=None, description="time-slicing / mps: units each physical GPU advertises"
    )
    rename_by_default: bool = False
    fail_requests_greater_than_one: bool = Field(
        default=True,
        description="time-slicing: reject pods asking for more than one shared unit (they would get no "
        "more compute, only false isolation)",
    )
    layout: dict[str, count(1, 7)] | None = Field(
        default=None,
        description="mig: MIG profiles on each GPU, e.g. {'3g.40gb': 2}; on GKE with GKE-installed drivers "
        "the node pool's gpuPartitionSize (a single profile at its maximum count)",
    )


class Taint(Model):
    key: LabelKey
    value: LabelValue | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = "NoSchedule"


class KarpenterPoolOptions(Model):
    zone: bounded_text(64) | None = Field(
        default=None,
        description="the one AZ the pool launches in (an EFA pool's cluster placement group lives in one AZ); "
        "default: the reservation's availabilityZone, else any",
    )
    on_demand_fallback: bool = Field(
        default=False,
        description="spot pools: add a lower-weight on-demand NodePool used only when spot is unavailable",
    )
    on_demand_max_gpus: count(1, MAX_GPUS) | None = Field(
        default=None,
        description="with onDemandFallback: the part of the pool's GPU cap the on-demand NodePool may use (a "
        "multiple of gpu.perNode); the spot NodePool gets the rest. Default: half the nodes, rounded down",
    )
    consolidation_policy: Literal["WhenEmpty", "WhenEmptyOrUnderutilized"] = Field(
        default="WhenEmpty",
        description="WhenEmpty: only idle GPU nodes are removed (running jobs are never moved to save cost)",
    )
    consolidate_after: Duration = "10m"
    expire_after: go_duration(DURATION, allow=("Never",)) = "720h"
    termination_grace_period: Duration = "4h"
    disruption_budget: Annotated[str, Field(pattern=r"^((100|[0-9]{1,2})%|[0-9]+)$")] = "10%"
    ami_version: Annotated[str, Field(pattern=r"^(latest|v[0-9]+(\.[0-9]+)*)$")] = Field(
        default="latest",
        description="EKS-optimized AMI release: latest, or pinned (al2023: vYYYYMMDD, bottlerocket: vX.Y.Z)",
    )


class GkeNetwork(Model):
    """A VPC network and subnetwork by name or resource path, as ``--additional-node-network`` takes them."""

    network: Annotated[bounded_text(1024), Field(min_length=1)]
    subnetwork: Annotated[bounded_text(1024), Field(min_length=1)]


class GkePoolOptions(Model):
    zones: list[GcpZone] = Field(default_factory=list, description="node locations; default: the cluster's")
    additional_networks: list[GkeNetwork] = Field(
        default_factory=list,
        description="A3/A4 GPUDirect: the GPU NICs' VPC networks and subnetworks, in NIC order (node pool "
        "networkConfig.additionalNodeNetworkConfigs); they and the cluster's multi-networking must exist",
    )
    compact_placement: bool = False
    reservation: Literal["none", "any", "specific"] = "none"
    reservation_name: DnsLabel | None = None
    queued_provisioning: bool = Field(
        default=False, description="Dynamic Workload Scheduler: nodes come only for admitted workloads"
    )


class Reservation(Model):
    """Reserved capacity a pool launches into, the same block on both clouds (``components/reservations.py``).

    aws: On-Demand Capacity Reservations (``kind: on-demand``) or Capacity Blocks for ML
    (``kind: capacity-block``), by id (``cr-...``) or, Karpenter pools only, by tags. gcp: a Compute Engine
    reservation by name (``id``), or ``match: any`` to consume any matching reservation.
    ``instanceType`` / ``availabilityZone`` declare what the reservation holds so the pool can be checked
    against it before deploy (a reservation pins both)."""

    kind: Literal["on-demand", "capacity-block"] = Field(
        default="on-demand", description="aws: on-demand (ODCR) or capacity-block (Capacity Blocks for ML)"
    )
    match: Literal["specific", "any"] = Field(
        default="specific",
        description="specific: only the named reservation(s); any: gcp ANY_RESERVATION / aws open ODCRs",
    )
    ids: list[DnsLabel] = Field(
        default_factory=list, max_length=30, description="aws: cr-... ids; gcp: the reservation name (exactly one)"
    )
    # Karpenter's capacityReservationSelectorTerms.tags: at most 20, no empty key or value (CRD CEL rule);
    # AWS tag keys are at most 128 characters, values 256.
    tags: dict[Annotated[bounded_text(128), Field(min_length=1)], Annotated[bounded_text(256), Field(min_length=1)]] = (
        Field(default_factory=dict, max_length=20, description="aws karpenter pools: select reservations by tags")
    )
    instance_type: bounded_text(64) | None = Field(default=None, description="what the reservation holds (checked)")
    availability_zone: bounded_text(64) | None = Field(default=None, description="where the reservation is (checked)")


class EksPoolOptions(Model):
    """aws, provisioner managed: settings of the pool's EKS managed node group."""

    subnet_ids: list[Annotated[str, Field(pattern=r"^subnet-[0-9a-f]+$")]] = Field(
        default_factory=list,
        description="subnets of the node group (e.g. the one AZ holding a capacity reservation); default "
        "cluster.subnetIds, else the cluster's own subnets",
    )
    update_strategy: Literal["minimal", "default"] = Field(
        default="minimal",
        description="node replacement on AMI/launch-template updates, one node at a time. minimal: terminate "
        "the old node first (needs no spare GPU capacity); default: launch the new node first",
    )
    imds_hop_limit: Annotated[Literal[1, 2], NoBool] = Field(
        default=2,
        description="IMDSv2 PUT response hop limit: 2 (EKS' own default) lets pods on the pod network reach "
        "IMDS; 1 keeps them off the node role's credentials",
    )
    auto_repair: bool = Field(default=True, description="EKS node auto repair replaces nodes that turn unhealthy")


class NodePool(Model):
    name: Name
    gpu: GpuSpec
    instance_types: list[str] = Field(
        default_factory=list, description="aws: instance types; gcp: exactly one machine type"
    )
    capacity: Literal["on-demand", "spot"] = "on-demand"
    provisioner: Literal["managed", "karpenter"] = "managed"
    os: Literal["al2023", "bottlerocket", "cos", "ubuntu"] | None = Field(
        default=None, description="node image; default al2023 on aws, cos on gcp"
    )
    min_nodes: count(0, MAX_NODES) = 0
    max_nodes: count(1, MAX_NODES) | None = None
    max_gpus: count(1, MAX_GPUS) | None = Field(
        default=None, description="karpenter pools: the GPU spend cap (a multiple of gpu.perNode)"
    )
    desired_nodes: count(0, MAX_NODES) | None = None
    disk_gib: count(50, 16384) = 200
    sharing: Sharing | None = None
    taints: list[Taint] = Field(default_factory=list)
    labels: dict[LabelKey, LabelValue] = Field(default_factory=dict)
    topology_aware: bool = Field(default=False, description="Kueue topology-aware scheduling")
    efa: bool | None = Field(
        default=None,
        description="aws: EFA network interfaces, a cluster placement group and an EFA security group for "
        "multi-node NCCL. Default: on for topologyAware managed pools whose instance types all support EFA",
    )
    reservation: Reservation | None = Field(
        default=None, description="reserved capacity (ODCR / Capacity Block on aws, a reservation on gcp)"
    )
    karpenter: KarpenterPoolOptions = Field(default_factory=KarpenterPoolOptions)
    gke: GkePoolOptions = Field(default_factory=GkePoolOptions)
    eks: EksPoolOptions = Field(default_factory=EksPoolOptions)

    @property
    def node_cap(self) -> int:
        """Most nodes the pool may have (max_gpus / perNode for karpenter pools given a GPU cap)."""
        if self.max_nodes is not None:
            return self.max_nodes
        return (self.max_gpus or 0) // self.gpu.per_node

    @property
    def gpu_cap(self) -> int:
        """Most physical GPUs the pool may bring."""
        return self.max_gpus if self.max_gpus is not None else self.node_cap * self.gpu.per_node


# ------------------------------------------------------------------------------------------- tenants


class ResourceBudget(Model):
    cpu: Quantity | None = None
    memory: Quantity | None = None


class Tenant(Model):
    name: Name
    gpu_quota: dict[str, count(0, MAX_GPUS)] = Field(
        default_factory=dict, description="physical GPUs per pool (the scheduler sees sharing units)"
    )
    borrowing_limit: dict[str, count(0, MAX_GPUS)] = Field(default_factory=dict)
    lending_limit: dict[str, count(0, MAX_GPUS)] = Field(default_factory=dict)
    cohort: Name | None = None
    priority: str = Field(default="batch", description="the tenant's highest allowed PriorityClass")
    quota: ResourceBudget = Field(default_factory=ResourceBudget)
    pod_security: Literal["baseline", "restricted"] = "baseline"
    queue_weight: count(1, 100) = 1
    scheduler: Literal["kueue", "volcano"] | None = Field(
        default=None,
        description="who queues the tenant's workloads: kueue (default when on) manages every workload in the "
        "namespace; volcano leaves its pods to Volcano's gang scheduler (Kueue would gate them one by one)",
    )
    critical: bool = False


class PriorityClassSpec(Model):
    name: Name
    value: count(-(2**31), 1_000_000_000)
    preemption_policy: Literal["PreemptLowerPriority", "Never"] = "PreemptLowerPriority"
    global_default: bool = False
    description: Description = ""


DEFAULT_PRIORITY_CLASSES: tuple[PriorityClassSpec, ...] = (
    PriorityClassSpec(name="inference", value=100_000, description="online inference: preempts training and batch"),
    PriorityClassSpec(name="training-critical", value=90_000, description="deadline training: preempts lower tiers"),
    PriorityClassSpec(name="training", value=50_000, description="regular training jobs"),
    PriorityClassSpec(name="batch", value=10_000, description="batch and evaluation jobs"),
    PriorityClassSpec(
        name="dev",
        value=1_000,
        preemption_policy="Never",
        description="notebooks and experiments: first to be preempted; never preempt pods (kube-scheduler), "
        "and in Kueue only tenants whose ceiling is this class get a ClusterQueue that never preempts",
    ),
)

# ------------------------------------------------------------------------------------ stack options


class ClusterRef(Model):
    name: bounded_text(100) | None = Field(default=None, description="aws/gcp: the existing cluster's name")
    location: GcpLocation | None = Field(default=None, description="gcp: the cluster's region or zone")
    region: AwsRegion | None = Field(default=None, description="aws: taken from aws:region when unset")
    project: GcpProject | None = Field(default=None, description="gcp: taken from gcp:project when unset")
    profile: str | None = Field(default=None, description="aws: CLI profile for the kubeconfig token")
    role_arn: IamRoleArn | None = Field(default=None, description="aws: role assumed for the kubeconfig token")
    kubeconfig: str | None = Field(default=None, description="existing: kubeconfig path (default ~/.kube/config)")
    context: str | None = Field(default=None, description="existing: kubeconfig context")
    subnet_ids: list[Annotated[str, Field(pattern=r"^subnet-[0-9a-f]+$")]] = Field(
        default_factory=list,
        description="aws: subnets of the managed node groups (private ones); default the cluster's own subnets",
    )
    kubernetes_version: Annotated[str, Field(pattern=r"^1\.[0-9]{1,2}$")] | None = Field(
        default=None,
        description="the cluster's Kubernetes minor version (e.g. '1.34'); the offline synth cannot look it up. "
        "Required with gpuOperator.allocation dra",
    )


class Addons(Model):
    gpu_operator: bool = True
    dcgm: bool = True
    kueue: bool = True
    volcano: bool = False
    karpenter: bool | None = Field(default=None, description="default: on when any pool uses karpenter")
    cluster_autoscaler: bool | None = Field(
        default=None,
        description="aws: install the Cluster Autoscaler for the managed node groups (default: on when any pool "
        "has provisioner: managed); off means managed pools keep their minNodes and never scale",
    )


class GpuOperatorOptions(Model):
    driver: Literal["auto", "preinstalled", "operator", "gke-default", "gke-latest"] = Field(
        default="auto",
        description="who installs the NVIDIA driver. auto: preinstalled on aws (NVIDIA AMIs), "
        "gke-latest on gcp, operator on existing clusters",
    )
    toolkit: bool | None = Field(
        default=None,
        description="the operator installs the NVIDIA container toolkit. default: off on aws (EKS NVIDIA AMIs "
        "ship it), on elsewhere; Bottlerocket nodes never get the operator's copy",
    )
    allocation: Literal["device-plugin", "dra"] = Field(
        default="device-plugin",
        description="how pods get GPUs. device-plugin: extended resources (nvidia.com/gpu ...) through the "
        "operator's ClusterPolicy; dra: ResourceClaims (resource.k8s.io/v1) served by the NVIDIA DRA driver "
        "through the operator's GPUCluster CR (needs cluster.kubernetesVersion >= 1.34; see README, DRA)",
    )


# XIDs that mean the GPU or its node needs attention (drain, reset or replace) rather than a crashed
# application (NVIDIA "XID Errors" catalog): 48 double-bit ECC, 61/62 internal micro-controller halt,
# 63/64 ECC page retirement / row remapping (failure), 74 NVLink, 79 fallen off the bus, 92 high single-bit
# ECC rate, 95 uncontained ECC, 119/120 GSP RPC timeout / GSP error, 140 unrecovered ECC.
DEFAULT_CRITICAL_XIDS = (48, 61, 62, 63, 64, 74, 79, 92, 95, 119, 120, 140)


class AlertThresholds(Model):
    idle_utilization_percent: number() = Field(
        default=10, gt=0, lt=100, description="a GPU (or MIG instance) below this utilization counts as idle"
    )
    idle_for: Duration = Field(default="30m", description="GpuIdle: unallocated GPU idle this long")
    memory_used_percent: number() = Field(default=95, gt=0, lt=100, description="framebuffer used / total")
    memory_for: Duration = "5m"
    temperature_celsius: number() = Field(default=85, gt=0, lt=150)
    temperature_for: Duration = "5m"
    allocated_idle_for: Duration = Field(default="30m", description="GpuAllocatedIdle: a pod's GPUs idle this long")
    xid_for: Duration = Field(default="0s", description="how long an XID must persist before alerting")
    xid_critical_codes: list[count(1, 1000)] = Field(
        default_factory=lambda: list(DEFAULT_CRITICAL_XIDS),
        description="XIDs alerted as critical (hardware / driver); any other XID is a warning",
    )
    exporter_down_for: Duration = Field(default="10m", description="DcgmExporterDown: a target down this long")


class Monitoring(Model):
    prometheus: Literal["install", "existing", "none"] = Field(
        default="install",
        description="install: kube-prometheus-stack (prometheus-operator CRDs, Prometheus, Alertmanager, Grafana, "
        "node-exporter) wired to the labels below; existing: the cluster already runs a prometheus-operator whose "
        "Prometheus selects serviceMonitorLabels and a Grafana sidecar that watches dashboardLabels; none: no "
        "ServiceMonitor, PrometheusRule or dashboard (GPU alerts are off)",
    )
    prometheus_storage_gib: int | None = Field(
        default=None,
        ge=5,
        le=10000,
        description="install: a PersistentVolumeClaim of this size (default StorageClass) for Prometheus; "
        "default an emptyDir (metrics survive container restarts, not a pod's rescheduling)",
    )
    service_monitor_labels: dict[LabelKey, LabelValue] = Field(
        default_factory=lambda: {"release": "kube-prometheus-stack"},
        description="labels your Prometheus' serviceMonitorSelector / ruleSelector match",
    )
    dashboard_labels: dict[LabelKey, LabelValue] = Field(
        default_factory=lambda: {"grafana_dashboard": "1"},
        description="labels the Grafana dashboard sidecar watches",
    )
    dashboard_namespace: Name | None = Field(
        default=None,
        description="namespace of the dashboard ConfigMap (must exist); default the DCGM exporter's namespace "
        "(then the Grafana sidecar must search all namespaces)",
    )
    scrape_interval: Duration = Field(
        default="30s", description="DCGM exporter scrape interval (dcgm-exporter collects every 30s by default)"
    )
    alerts: AlertThresholds = Field(default_factory=AlertThresholds)


KueueIntegration = Literal[
    "batch/job",
    "jobset.x-k8s.io/jobset",
    "kubeflow.org/pytorchjob",
    "kubeflow.org/mpijob",
    "kubeflow.org/tfjob",
    "kubeflow.org/jaxjob",
    "trainer.kubeflow.org/trainjob",
    "ray.io/rayjob",
    "ray.io/raycluster",
    "ray.io/rayservice",
    "pod",
    "deployment",
    "statefulset",
    "leaderworkerset.x-k8s.io/leaderworkerset",
]
# Batch Job, JobSet, Kubeflow training (v1 operator and Trainer v2), Ray, and pod-based kinds (inference
# Deployments/StatefulSets and LeaderWorkerSets must be queued too, or Kueue would lend GPUs they occupy).
DEFAULT_KUEUE_INTEGRATIONS: tuple[str, ...] = (
    "batch/job",
    "jobset.x-k8s.io/jobset",
    "kubeflow.org/pytorchjob",
    "kubeflow.org/mpijob",
    "trainer.kubeflow.org/trainjob",
    "ray.io/rayjob",
    "ray.io/raycluster",
    "pod",
    "deployment",
    "statefulset",
    "leaderworkerset.x-k8s.io/leaderworkerset",
)


class Scheduling(Model):
    local_queue_name: Name = Field(
        default="default",
        description="LocalQueue name in every tenant namespace; 'default' also catches jobs without a "
        "kueue.x-k8s.io/queue-name label (Kueue's LocalQueue defaulting)",
    )
    default_cohort: Name | None = Field(
        default="gpu-platform", description="cohort of tenants that set none; null: no lending by default"
    )
    wait_for_pods_ready_timeout: Duration = Field(
        # A cold start from zero: node launch (p5 capacity can take minutes, spot retries longer), the GPU
        # Operator's driver/toolkit validation and a MIG reconfiguration reboot, then pulling a 20 GB image
        # (containerd unpacks single-threaded), then model load. 10m is routinely too short for that; 30m is
        # also Kueue's own default (kueue v0.19.2 apis/config/v1beta2/defaults.go DefaultWaitForPodsReadyTimeout).
        default="30m",
        description="Kueue waitForPodsReady: an admitted workload whose pods are not all ready by then is evicted "
        "and requeued (all-or-nothing start); must cover a cold start: node scale-up from zero, GPU driver "
        "validation, image pull and model load",
    )
    wait_for_pods_ready_recovery_timeout: Duration | None = Field(
        default=None,
        description="Kueue waitForPodsReady.recoveryTimeout: how long a running workload may lack a ready pod "
        "(a pod failed or its spot node went) before it is evicted and requeued; default the timeout above, "
        "since the replacement node may also come from zero",
    )
    block_admission: bool = Field(
        default=False,
        description="Kueue waitForPodsReady.blockAdmission: admit one workload at a time until its pods are ready "
        "(no partial-gang deadlocks, but every job waits for the previous one's scale-up)",
    )
    requeue_limit: count(1, INT32_MAX) | None = Field(
        default=10,
        description="Kueue: requeues after a waitForPodsReady timeout before the workload is deactivated "
        "(backoff 60s doubling to 1h in between); null: requeue forever",
    )
    queueing_strategy: Literal["BestEffortFIFO", "StrictFIFO"] = "BestEffortFIFO"
    oversubscription_ratio: number() = Field(
        default=1.0, ge=1.0, le=10.0, description="warn when tenant quotas exceed pool capacity by more"
    )
    kueue_integrations: list[KueueIntegration] = Field(
        default_factory=lambda: list(DEFAULT_KUEUE_INTEGRATIONS),
        min_length=1,
        description="job kinds Kueue manages (integrations.frameworks); deployment, statefulset and "
        "leaderworkerset turn pod on implicitly",
    )
    topology_levels: list[LabelKey] | None = Field(
        default=None,
        min_length=1,
        max_length=16,
        description="Kueue Topology levels (node labels, coarsest first, kubernetes.io/hostname last) for "
        "topologyAware pools; default per cloud (GKE gce-topology-*, EKS network-node-layer-*); required on "
        "existing clusters",
    )


class KarpenterOptions(Model):
    """Stack-wide Karpenter settings (aws). Per-pool settings are ``nodePools[].karpenter``."""

    identity: Literal["pod-identity", "irsa"] = Field(
        default="pod-identity",
        description="how the AWS controllers (Karpenter, the Cluster Autoscaler) get AWS credentials: an EKS Pod "
        "Identity association (needs the eks-pod-identity-agent add-on) or IRSA (needs the cluster's IAM OIDC "
        "provider)",
    )
    name_prefix: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9-]*$", max_length=40)] | None = Field(
        default=None,
        description="prefix of the IAM roles, policies, SQS queue and EventBridge rules; default the cluster name",
    )
    subnet_tags: dict[str, str] = Field(
        default_factory=dict,
        description="tags selecting the subnets nodes launch in; default {karpenter.sh/discovery: <cluster>}",
    )
    subnet_ids: list[Annotated[str, Field(pattern=r"^subnet-[0-9a-z]+$")]] = Field(default_factory=list)
    security_group_tags: dict[str, str] = Field(
        default_factory=dict,
        description="tags selecting the nodes' security groups; default {karpenter.sh/discovery: <cluster>}",
    )
    security_group_ids: list[Annotated[str, Field(pattern=r"^sg-[0-9a-z]+$")]] = Field(default_factory=list)
    imds_hop_limit: Annotated[Literal[1, 2], NoBool] = Field(
        default=1,
        description="IMDSv2 PUT response hop limit on Karpenter nodes: 1 keeps pods off the node role's "
        "credentials; 2 only for pods that must reach IMDS from their own network namespace",
    )
    replicas: count(1, 5) = 2
    controller_cpu: Quantity = "1"
    controller_memory: Quantity = "1Gi"
    zonal_shift: bool = Field(
        default=False, description="respect EKS zonal shifts (settings.enableZonalShift; the cluster must enable it)"
    )


class Protection(Model):
    """What the engine refuses to delete (Pulumi ``protect``): ``pulumi up`` fails instead of deleting it,
    and so does ``pulumi destroy``. Set a key to false (and ``pulumi up``) before really removing one."""

    tenant_namespaces: bool = Field(
        default=True,
        description="protect tenant namespaces: removing a tenant would delete every workload and volume in it",
    )
    scheduler_releases: bool = Field(
        default=True,
        description="protect the Kueue and Volcano releases: turning an add-on off would uninstall it and "
        "with its CRDs every Kueue Workload / Volcano Job in the cluster",
    )


class ChartOverride(Model):
    version: Annotated[str, Field(pattern=r"^v?[0-9]+\.[0-9]+\.[0-9]+$")]


class PriceOverride(Model):
    """USD per node-hour of one instance / machine type (negotiated rate, savings plan, committed use)."""

    on_demand: number() | None = Field(default=None, gt=0, le=10_000)
    spot: number() | None = Field(default=None, gt=0, le=10_000)


class Pricing(Model):
    """Price assumptions for the cost summary and the budget policy (components/cost.py)."""

    overrides: dict[str, PriceOverride] = Field(
        default_factory=dict,
        description="per instance type (aws) / machine type (gcp): USD per node-hour replacing the list price",
    )
    spot_discount: number() | None = Field(
        default=None,
        ge=0,
        lt=1,
        description="aws: assumed spot discount off on-demand (spot prices move; every figure is an estimate); "
        "default 0.40",
    )


class Budget(Model):
    """What the fleet may cost at its maximum size, USD per hour; the budget policy fails a preview above it."""

    max_hourly_usd: number() | None = Field(default=None, gt=0, le=1e9, description="the whole stack at max scale")
    tenants: dict[str, Annotated[number(), Field(gt=0, le=1e9)]] = Field(
        default_factory=dict, description="per tenant: USD/h of its borrowing ceiling at most"
    )


class StackSpec(Model):
    cloud: Literal["aws", "gcp", "existing"]
    cluster: ClusterRef = Field(default_factory=ClusterRef)
    node_pools: list[NodePool] = Field(default_factory=list)
    tenants: list[Tenant] = Field(default_factory=list)
    priority_classes: list[PriorityClassSpec] = Field(default_factory=lambda: list(DEFAULT_PRIORITY_CLASSES))
    addons: Addons = Field(default_factory=Addons)
    gpu_operator: GpuOperatorOptions = Field(default_factory=GpuOperatorOptions)
    monitoring: Monitoring = Field(default_factory=Monitoring)
    scheduling: Scheduling = Field(default_factory=Scheduling)
    charts: dict[str, ChartOverride] = Field(default_factory=dict)
    system_node_selector: dict[LabelKey, LabelValue] = Field(
        default_factory=dict, description="where controllers run (they never tolerate the GPU taint)"
    )
    tags: dict[str, str] = Field(default_factory=dict)
    karpenter: KarpenterOptions = Field(default_factory=KarpenterOptions)
    protect: Protection = Field(default_factory=Protection)
    pricing: Pricing = Field(default_factory=Pricing)
    budget: Budget = Field(default_factory=Budget)

    # -- lookups used across components ---------------------------------------------------------
    def pool(self, name: str) -> NodePool:
        return next(p for p in self.node_pools if p.name == name)

    def priority_class(self, name: str) -> PriorityClassSpec:
        return next(c for c in self.priority_classes if c.name == name)

    @property
    def karpenter_enabled(self) -> bool:
        if self.addons.karpenter is not None:
            return self.addons.karpenter
        return any(p.provisioner == "karpenter" for p in self.node_pools)

    @property
    def cluster_autoscaler_enabled(self) -> bool:
        """aws only: the Cluster Autoscaler scales the managed node groups (on by default when there are any)."""
        if self.cloud != "aws":
            return False
        if self.addons.cluster_autoscaler is not None:
            return self.addons.cluster_autoscaler
        return any(p.provisioner == "managed" for p in self.node_pools)


# ---------------------------------------------------------------------------------------- problems


@dataclass(frozen=True, order=True)
class Problem:
    path: str  # key path in the stack file, e.g. gpu-platform:nodePools[1].sharing.replicas
    message: str

    def line(self, source: str) -> str:
        return f"{source}: {self.path}: {self.message}"


_LONG_TOKEN = re.compile(rf"\S{{{QUOTE_MAX + 1},}}")


def _shorten(text: str) -> str:
    """Cut every run of more than ~80 non-blank characters (a quoted 5 MB value, a name built from it)."""
    text = " ".join(text.split())  # one line per problem, whatever the input held
    return _LONG_TOKEN.sub(lambda m: f"{m.group()[: QUOTE_MAX - 20]}…({len(m.group())} characters)", text)


class SpecError(Exception):
    def __init__(self, problems: Iterable[Problem]):
        # a path is cut only when absurd (a legitimate label key runs to 317 characters)
        self.problems = sorted(
            {Problem(p.path if len(p.path) <= 400 else _shorten(p.path), _shorten(p.message)) for p in problems}
        )
        super().__init__("\n".join(f"{p.path}: {p.message}" for p in self.problems))

    def lines(self, source: str) -> list[str]:
        return [p.line(source) for p in self.problems]


def key(*parts: str | int) -> str:
    """Key path in stack-file syntax: key('nodePools', 1, 'sharing') -> gpu-platform:nodePools[1].sharing"""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else f"{NAMESPACE}:{part}"
    return out


Rule = Callable[[StackSpec], Iterable[Problem]]
RULE_MARK = "__stack_rule__"


def rule(fn: Rule) -> Rule:
    """Mark a cross-field rule; rules live next to the code they guard, and ``components/loader.py`` runs
    the marked functions of the modules it lists (nothing is registered at import time)."""
    setattr(fn, RULE_MARK, True)
    return fn


def is_rule(obj: object) -> bool:
    return callable(obj) and getattr(obj, RULE_MARK, False) is True


# ------------------------------------------------------------------------------------------ loading

PROVIDER_KEYS = {"aws:region": ("region",), "gcp:project": ("project",)}

# What a pattern means, for messages a person can act on (the others print the pattern).
PATTERN_HELP = {
    DNS_LABEL: "a valid name (lower-case letters, digits and '-', starting with a letter, ending with a letter or "
    "digit)",
    QUANTITY: "a Kubernetes quantity such as 500m, 64, 256Gi or 4Ti",
}

_MESSAGES: dict[str, Callable[[dict[str, Any]], str]] = {
    "missing": lambda e: "is required",
    "extra_forbidden": lambda e: "unknown key",
    "greater_than_equal": lambda e: f"must be at least {e['ctx']['ge']}",
    "greater_than": lambda e: f"must be greater than {e['ctx']['gt']}",
    "less_than_equal": lambda e: f"must be at most {e['ctx']['le']}",
    "less_than": lambda e: f"must be less than {e['ctx']['lt']}",
    "literal_error": lambda e: f"must be one of {e['ctx']['expected']}",
    "string_pattern_mismatch": lambda e: (
        f"{quote(e['input'])} is not {PATTERN_HELP[e['ctx']['pattern']]}"
        if e["ctx"]["pattern"] in PATTERN_HELP
        else f"{quote(e['input'])} does not match {e['ctx']['pattern']}"
    ),
    "string_too_long": lambda e: f"must be at most {e['ctx']['max_length']} characters",
    "too_short": lambda e: f"must have at least {e['ctx']['min_length']} item(s)",
    "int_type": lambda e: f"must be a whole number, not {quote(e['input'])}",
    "int_parsing": lambda e: f"must be a whole number, not {quote(e['input'])}",
    "int_from_float": lambda e: f"must be a whole number, not {quote(e['input'])}",
    "bool_type": lambda e: f"must be true or false, not {quote(e['input'])}",
    "bool_parsing": lambda e: f"must be true or false, not {quote(e['input'])}",
    "string_type": lambda e: f"must be a string, not {quote(e['input'])}{_yaml_hint(e['input'])}",
    "int_too_big": lambda e: "is far too large a number",
    "float_type": lambda e: f"must be a number, not {quote(e['input'])}",
    "float_parsing": lambda e: f"must be a number, not {quote(e['input'])}",
    "finite_number": lambda e: "must be a finite number",
    "too_long": lambda e: f"must have at most {e['ctx']['max_length']} item(s)",
    "dict_type": lambda e: "must be a mapping",
    "list_type": lambda e: "must be a list",
    "model_type": lambda e: "must be a mapping",
    "model_attributes_type": lambda e: "must be a mapping",
}


def _yaml_hint(value: Any) -> str:
    """Why YAML made a non-string of what the author meant as text."""
    if isinstance(value, bool):
        return " (YAML 1.1 reads on/off/yes/no/true/false as booleans: quote it)"
    if value is None:
        return " (YAML reads an empty value, ~ or null as nothing: quote it)"
    if isinstance(value, (int, float)):
        return " (YAML reads it as a number: quote it)"
    return ""


def _message(err: dict[str, Any], model_fields: Iterable[str]) -> str:
    kind = err["type"]
    if kind == "value_error":
        return str(err["ctx"]["error"])
    msg = _MESSAGES.get(kind, lambda e: _cut(e["msg"]))(err)
    if kind == "extra_forbidden":
        close = difflib.get_close_matches(str(err["loc"][-1]), list(model_fields), n=1)
        if close:
            msg += f" (did you mean {close[0]}?)"
    return msg


def _fields_at(loc: tuple[Any, ...]) -> list[str]:
    """Aliases of the model fields valid at the parent of ``loc`` (for 'did you mean')."""
    model: Any = StackSpec
    for part in loc[:-1]:
        if isinstance(part, int) or model is None:
            continue
        field = next((f for f in model.model_fields.values() if f.alias == part), None)
        if field is None:
            return []
        ann = field.annotation
        args = getattr(ann, "__args__", ())
        model = next((a for a in (ann, *args) if isinstance(a, type) and issubclass(a, BaseModel)), None)
    if model is None:
        return []
    return [f.alias or n for n, f in model.model_fields.items()]


def _cut(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


MAX_DEPTH = 64  # nesting of mappings and lists a stack spec ever needs is below 10
MAX_DIGITS = 30  # no count or bound in a stack spec needs more digits


class _HugeNumber(ValueError):
    pass


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise _HugeNumber(f"a number with {len(text.lstrip('-'))} digits")
    return int(text)


def decode_config(raw: Mapping[str, Any], problems: list[Problem] | None = None) -> dict[str, Any]:
    """Pulumi hands config to programs as strings (objects JSON-encoded); decode them.

    A string that is JSON but cannot be held (numbers of hundreds of digits, nesting thousands deep) is
    reported in ``problems`` (when given) under its key, for our namespace only; other values stay strings.
    """
    out: dict[str, Any] = {}
    for k, v in raw.items():
        if isinstance(v, str):
            try:
                v = json.loads(v, parse_int=_parse_int)
            except (_HugeNumber, RecursionError) as exc:
                if problems is not None and k.startswith(f"{NAMESPACE}:"):
                    what = "nested too deeply" if isinstance(exc, RecursionError) else f"holds {exc}"
                    problems.append(Problem(k, f"{what}; not a value this program can use"))
                    continue
            except ValueError:
                pass
        out[k] = v
    return out


def _too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """True when mappings/lists nest deeper than ``limit`` (iterative: no recursion limit to hit)."""
    stack = [(value, 0)]
    seen = 0
    while stack:
        node, depth = stack.pop()
        seen += 1
        if depth > limit:
            return True
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
    return False


# Namespaces other programs and providers own; keys in them are passed over (Pulumi passes them as strings).
def _near_namespace(ns: str) -> bool:
    squash = re.sub(r"[-_.\s]", "", ns.lower())
    return squash == NAMESPACE.replace("-", "") or bool(difflib.get_close_matches(ns.lower(), [NAMESPACE], cutoff=0.75))


def _config_keys(config: Mapping[str, Any], problems: list[Problem]) -> dict[str, Any]:
    """Keys as Pulumi's config.ParseKey reads them (pulumi/pulumi sdk/go/common/resource/config/key.go):
    ``namespace:name``, or the old ``namespace:config:name``; anything else is refused, as Pulumi refuses
    it. A near miss of ``gpu-platform:`` is refused with a hint rather than ignored."""
    out: dict[str, Any] = {}
    for k, v in config.items():
        if not isinstance(k, str):
            problems.append(Problem(quote(k), "config keys must be strings of the form namespace:name"))
            continue
        parts = k.split(":")
        if len(parts) == 3 and parts[1] == "config":
            parts = [parts[0], parts[2]]
        if len(parts) != 2 or not parts[0] or not parts[1]:
            known = len(parts) == 1 and k in {f.alias for f in StackSpec.model_fields.values()}
            hint = f" (did you mean {NAMESPACE}:{k}?)" if known else ""
            problems.append(
                Problem(
                    quote(k, 60).strip("'"), f"not a config key of the form namespace:name (Pulumi refuses it){hint}"
                )
            )
            continue
        ns, name = parts
        if ns != NAMESPACE and _near_namespace(ns):
            problems.append(
                Problem(quote(k, 60).strip("'"), f"unknown namespace {ns!r} (did you mean {NAMESPACE}:{name}?)")
            )
            continue
        out[f"{ns}:{name}"] = v
    return out


def parse_spec(config: Mapping[str, Any]) -> StackSpec:
    """The spec of a stack's config map (``{"gpu-platform:cloud": "aws", ...}``), structure checked: types,
    bounds, unknown keys; not yet the rules (``components.loader.load_spec`` runs both).

    Values may be decoded (YAML) or as Pulumi passes them (strings, objects as JSON).
    Raises SpecError listing every problem.
    """
    early: list[Problem] = []
    config = decode_config(_config_keys(config, early), early)
    body: dict[str, Any] = {}
    for k, v in config.items():
        ns, _, name = k.partition(":")
        if ns == NAMESPACE:
            if _too_deep(v):
                early.append(Problem(k, f"is nested more than {MAX_DEPTH} levels deep"))
                continue
            body[name] = v
    if early:
        raise SpecError(early)
    provided: dict[str, str] = {}  # cluster field -> the provider key it came from, for messages
    if isinstance(body.get("cluster", {}), dict):  # anything else is reported by pydantic
        cluster = dict(body.get("cluster") or {})
        for pkey, (field,) in PROVIDER_KEYS.items():
            if pkey in config and field not in cluster:
                cluster[field] = config[pkey]
                provided[key("cluster", field)] = pkey
        body["cluster"] = cluster
    try:
        spec = StackSpec.model_validate(body)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = tuple(err["loc"])
            msg = _message(err, _fields_at(loc))
            if loc and loc[-1] == "[key]":  # a mapping key is wrong, not its value
                loc, msg = loc[:-1], f"key {msg}"
            path = key(*loc) if loc else NAMESPACE
            problems.append(Problem(provided.get(path, path), msg))
        raise SpecError(problems) from None
    return spec


def stack_file_schema() -> dict[str, Any]:
    """JSON Schema of a stack file (``stacks/Pulumi.<stack>.yaml``), for editors."""
    inner = StackSpec.model_json_schema(by_alias=True, ref_template="#/$defs/{model}")
    defs = inner.pop("$defs", {})
    props = {f"{NAMESPACE}:{k}": v for k, v in inner["properties"].items()}
    props["aws:region"] = {"type": "string", "description": "AWS region of the EKS cluster"}
    props["gcp:project"] = {"type": "string", "description": "GCP project of the GKE cluster"}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "gpu-platform stack file",
        "type": "object",
        "properties": {
            "config": {
                "type": "object",
                "properties": props,
                "required": [f"{NAMESPACE}:{r}" for r in inner.get("required", [])],
                # other namespaces (aws:, gcp:, pulumi:) pass; unknown gpu-platform: keys do not
                "propertyNames": {
                    "anyOf": [{"enum": sorted(props)}, {"not": {"pattern": f"^{re.escape(NAMESPACE)}:"}}]
                },
            },
            "secretsprovider": {"type": "string"},
            "encryptedkey": {"type": "string"},
            "encryptionsalt": {"type": "string"},
        },
        "$defs": defs,
    }
