"""The stack spec's stack-wide options: the cluster, add-ons, GPU Operator, monitoring and alerts, scheduling
(Kueue), Karpenter, protection, pricing and budget. Part of the spec layer (``components/spec/model.py``):
imports only ``validation`` and ``spec_base``.
"""

from typing import Annotated, Literal

from pydantic import Field

from .base import Duration, Model, Name, Quantity
from .cluster import ClusterCreate
from .validation import (
    INT32_MAX,
    AwsRegion,
    GcpLocation,
    GcpProject,
    IamRoleArn,
    LabelKey,
    LabelValue,
    NoBool,
    bounded_text,
    count,
    number,
)

# A Pulumi stack by its fully qualified name (organization/project/stack), as pulumi.StackReference takes it.
StackName = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$", max_length=300)]


class ClusterRef(Model):
    """The Kubernetes cluster the platform goes on: found by name, created (create), or taken from another stack's
    outputs (fromStack); on cloud existing, reached through a kubeconfig."""

    name: bounded_text(100) | None = Field(
        default=None, description="aws/gcp: the cluster's name: the existing cluster's, or the one created"
    )
    from_stack: StackName | None = Field(
        default=None,
        description="aws/gcp: organization/project/stack of a Pulumi stack that owns the cluster; its outputs give "
        "the endpoint, CA, identity and network (not with create)",
    )
    location: GcpLocation | None = Field(default=None, description="gcp: the cluster's region or zone")
    region: AwsRegion | None = Field(default=None, description="aws: taken from aws:region when unset")
    project: GcpProject | None = Field(default=None, description="gcp: taken from gcp:project when unset")
    profile: str | None = Field(default=None, description="aws: CLI profile for the kubeconfig token")
    role_arn: IamRoleArn | None = Field(default=None, description="aws: role assumed for the kubeconfig token")
    kubeconfig: str | None = Field(default=None, description="existing: kubeconfig path (default ~/.kube/config)")
    context: str | None = Field(default=None, description="existing: kubeconfig context")
    subnet_ids: list[Annotated[str, Field(pattern=r"^subnet-[0-9a-f]+$")]] = Field(
        default_factory=lambda: [],
        description="aws: subnets of the managed node groups (private ones); default the cluster's own subnets",
    )
    kubernetes_version: Annotated[str, Field(pattern=r"^1\.[0-9]{1,2}$")] | None = Field(
        default=None,
        description="the cluster's Kubernetes minor version (e.g. '1.34'); the offline synth cannot look it up. "
        "Required with gpuOperator.allocation dra",
    )
    create: ClusterCreate | None = Field(
        default=None,
        description="aws/gcp: the platform creates the cluster and its network (see ClusterCreate); without it the "
        "cluster exists and is found by name",
    )


class Addons(Model):
    """What the platform installs besides the node pools and tenants."""

    gpu_operator: bool = Field(
        default=True,
        description="the NVIDIA GPU Operator (device plugin, GPU feature discovery, MIG manager, DCGM exporter; "
        "the driver and toolkit as gpuOperator says)",
    )
    dcgm: bool = Field(
        default=True,
        description="GPU metrics: the DCGM exporter (the GPU Operator's, or its own chart without the operator) "
        "with its ServiceMonitor, alerts and dashboard",
    )
    kueue: bool = Field(
        default=True, description="Kueue: tenants' ClusterQueues and LocalQueues, quotas, borrowing and preemption"
    )
    volcano: bool = Field(default=False, description="Volcano's gang scheduler, for tenants with scheduler: volcano")
    karpenter: bool | None = Field(default=None, description="default: on when any pool uses karpenter")
    cluster_autoscaler: bool | None = Field(
        default=None,
        description="aws: install the Cluster Autoscaler for the managed node groups (default: on when any pool "
        "has provisioner: managed); off means managed pools keep their minNodes and never scale",
    )
    # Workload operators (pinned charts, components/data/versions.py); Kueue manages their kinds only when they
    # are installed (scheduling.kueueIntegrations, OPERATOR_INTEGRATIONS below)
    jobset: bool = Field(default=False, description="install JobSet (jobset.x-k8s.io JobSets; Kueue manages them)")
    leader_worker_set: bool = Field(
        default=False, description="install LeaderWorkerSet (leaderworkerset.x-k8s.io; Kueue manages them)"
    )
    kuberay: bool = Field(default=False, description="install the KubeRay operator (RayJobs and RayClusters)")
    trainer: bool = Field(
        default=False, description="install Kubeflow Trainer (trainer.kubeflow.org TrainJobs; needs addons.jobset)"
    )
    node_monitoring_agent: bool | None = Field(
        default=None,
        description="aws: the EKS node monitoring agent add-on, which marks a node with a GPU fault "
        "(AcceleratedHardwareReady=False) for EKS auto repair and Karpenter's node repair (default: on when any "
        "pool can be repaired: a managed pool with eks.autoRepair, or a Karpenter pool)",
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
        "through the operator's GPUCluster CR (needs cluster.kubernetesVersion >= 1.34; see the DRA page)",
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
    memory_for: Duration = Field(default="5m", description="GpuFramebufferMemoryHigh: above the threshold this long")
    temperature_celsius: number() = Field(
        default=85, gt=0, lt=150, description="GpuTemperatureHigh: a GPU hotter than this"
    )
    temperature_for: Duration = Field(default="5m", description="GpuTemperatureHigh: hotter this long")
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
    alerts: AlertThresholds = Field(
        default_factory=lambda: AlertThresholds(), description="the GPU alerts' thresholds and durations"
    )


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
# Batch Job and pod-based kinds (inference Deployments/StatefulSets must be queued too, or Kueue would lend GPUs
# they occupy), plus the kinds of every workload operator the stack installs (OPERATOR_INTEGRATIONS).
BASE_KUEUE_INTEGRATIONS: tuple[str, ...] = ("batch/job", "pod", "deployment", "statefulset")
# addons.<key> -> the Kueue integrations.frameworks names of its kinds, on by default with it (the FrameworkName
# constants of kueue v0.19.2 pkg/controller/jobs/jobset/jobset_controller.go, leaderworkerset/
# leaderworkerset_controller.go, rayjob/rayjob_controller.go, raycluster/raycluster_controller.go,
# trainjob/trainjob_controller.go).
OPERATOR_INTEGRATIONS: dict[str, tuple[str, ...]] = {
    "jobset": ("jobset.x-k8s.io/jobset",),
    "leaderWorkerSet": ("leaderworkerset.x-k8s.io/leaderworkerset",),
    "kuberay": ("ray.io/rayjob", "ray.io/raycluster"),
    "trainer": ("trainer.kubeflow.org/trainjob",),
}
# integration -> the add-on serving its kind: listing one without it is refused (components/plan/operators.py).
# ray.io/rayservice is KubeRay's too, but not on by default (a RayService is a long-running server).
INTEGRATION_OPERATOR: dict[str, str] = {
    **{i: key for key, kinds in OPERATOR_INTEGRATIONS.items() for i in kinds},
    "ray.io/rayservice": "kuberay",
}


def default_kueue_integrations(
    jobset: bool, leader_worker_set: bool, kuberay: bool, trainer: bool = False
) -> list[str]:
    """The integrations a stack gets when it names none: the base kinds and those of its installed operators."""
    on = {"jobset": jobset, "leaderWorkerSet": leader_worker_set, "kuberay": kuberay, "trainer": trainer}
    return [*BASE_KUEUE_INTEGRATIONS, *(i for key, kinds in OPERATOR_INTEGRATIONS.items() if on[key] for i in kinds)]


# The default before issue 31 (every kind, whether or not its operator was installed), for reference in tests.
DEFAULT_KUEUE_INTEGRATIONS: tuple[str, ...] = tuple(default_kueue_integrations(False, False, False))

# Integrations that turn Kueue's pod integration on implicitly (the description of kueue_integrations below).
IMPLICIT_POD_INTEGRATIONS = frozenset({"deployment", "statefulset", "leaderworkerset.x-k8s.io/leaderworkerset"})


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
    queueing_strategy: Literal["BestEffortFIFO", "StrictFIFO"] = Field(
        default="BestEffortFIFO",
        description="every ClusterQueue's order: BestEffortFIFO lets a smaller workload that fits pass one that "
        "does not; StrictFIFO keeps the head waiting",
    )
    oversubscription_ratio: number() = Field(
        default=1.0, ge=1.0, le=10.0, description="warn when tenant quotas exceed pool capacity by more"
    )
    kueue_integrations: list[KueueIntegration] = Field(
        default_factory=lambda: list(DEFAULT_KUEUE_INTEGRATIONS),
        min_length=1,
        description="job kinds Kueue manages (integrations.frameworks); default batch/job, pod, deployment, "
        "statefulset and the kinds of the workload operators the stack installs (addons.jobset, "
        "addons.leaderWorkerSet, addons.kuberay, addons.trainer); a kind of an operator that is not installed is "
        "refused; deployment, statefulset and leaderworkerset turn pod on implicitly",
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
        default_factory=lambda: {},
        description="tags selecting the subnets nodes launch in; default {karpenter.sh/discovery: <cluster>}",
    )
    subnet_ids: list[Annotated[str, Field(pattern=r"^subnet-[0-9a-z]+$")]] = Field(
        default_factory=lambda: [], description="subnets nodes launch in, by id (with or instead of subnetTags)"
    )
    security_group_tags: dict[str, str] = Field(
        default_factory=lambda: {},
        description="tags selecting the nodes' security groups; default {karpenter.sh/discovery: <cluster>}",
    )
    security_group_ids: list[Annotated[str, Field(pattern=r"^sg-[0-9a-z]+$")]] = Field(
        default_factory=lambda: [],
        description="the nodes' security groups, by id (with or instead of securityGroupTags)",
    )
    imds_hop_limit: Annotated[Literal[1, 2], NoBool] = Field(
        default=1,
        description="IMDSv2 PUT response hop limit on Karpenter nodes: 1 keeps pods off the node role's "
        "credentials; 2 only for pods that must reach IMDS from their own network namespace",
    )
    instance_store_policy: Literal["RAID0", "none"] = Field(
        default="RAID0",
        description="the GPU nodes' local NVMe disks (p4d, p5, g5, g6...): RAID0 stripes them into one volume that "
        "holds containerd's images, the kubelet's pods and pod logs, so ephemeral storage is the NVMe, not the "
        "root EBS volume (EC2NodeClass instanceStorePolicy; no effect on types without them); none leaves them unused",
    )
    replicas: count(1, 5) = Field(default=2, description="Karpenter controller replicas (one leads)")
    controller_cpu: Quantity = Field(default="1", description="the controller's CPU request and limit")
    controller_memory: Quantity = Field(default="1Gi", description="the controller's memory request and limit")
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


# Where charts come from: ``bundled`` (the archives in upstream/charts/), an oci:// registry path, a Helm
# repository URL, or a folder of packaged charts (``<name>-<version>.tgz``), relative to the project or absolute.
ChartSourceStr = Annotated[
    str,
    Field(
        min_length=1,
        max_length=512,
        pattern=r"^(bundled|oci://[A-Za-z0-9.-]+(:[0-9]+)?(/[A-Za-z0-9._-]+)*/?|https?://[^\s]+|[^\s:]+)$",
        description="bundled (the repository's upstream/charts/ archives), oci://REGISTRY/PATH, a Helm "
        "repository URL, or a folder of packaged charts (<name>-<version>.tgz)",
    ),
]
# An image registry (host[:port] and an optional path) the images the platform sets are pulled through.
ImageRegistryStr = Annotated[
    str,
    Field(
        min_length=1,
        max_length=255,
        pattern=r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*$",
        description="registry host[:port][/path]; images keep their source registry as the first path segment",
    ),
]


class ChartOverride(Model):
    version: Annotated[str, Field(pattern=r"^v?[0-9]+\.[0-9]+\.[0-9]+$")] | None = Field(
        default=None, description="another exact chart version than the pinned one"
    )
    source: ChartSourceStr | None = Field(default=None, description="this chart's source (overrides chartSource)")


class PriceOverride(Model):
    """USD per node-hour of one instance / machine type (negotiated rate, savings plan, committed use)."""

    on_demand: number() | None = Field(
        default=None, gt=0, le=10_000, description="USD per node-hour on demand; default the list price"
    )
    spot: number() | None = Field(
        default=None,
        gt=0,
        le=10_000,
        description="USD per node-hour on spot; default the list price (aws: on-demand less pricing.spotDiscount)",
    )


class Pricing(Model):
    """Price assumptions for the cost summary and the budget policy."""

    overrides: dict[str, PriceOverride] = Field(
        default_factory=lambda: {},
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
        default_factory=lambda: {}, description="per tenant: USD/h of its borrowing ceiling at most"
    )
