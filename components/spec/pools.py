"""The stack spec's node pools (``gpu-platform:nodePools``): the GPUs, sharing, taints and the per-provisioner
options of each pool (Karpenter, EKS managed node group, GKE node pool) and its reserved capacity.
Part of the spec layer (``components/spec/model.py``): imports only ``catalog``, ``validation`` and ``spec_base``.
"""

from typing import Annotated, Literal

from pydantic import Field, field_validator

from ..data import catalog
from .base import DURATION, MAX_GPUS, MAX_NODES, MAX_SHARING_REPLICAS, Duration, Model, Name
from .images import ImageCache
from .validation import DnsLabel, GcpZone, LabelKey, LabelValue, NoBool, bounded_text, count, go_duration


class GpuSpec(Model):
    """The GPUs of each node of a pool."""

    model: str = Field(
        json_schema_extra={"enum": sorted(catalog.GPU_MODELS)},
        description="the GPU model (the catalog's name); checked against the pool's instance or machine types",
    )
    per_node: count(1, 16) = Field(description="GPUs on each node of the pool")

    @field_validator("model")
    @classmethod
    def _known_model(cls, v: str) -> str:
        if v not in catalog.GPU_MODELS:
            raise ValueError(f"unknown GPU model {v!r} (known: {', '.join(sorted(catalog.GPU_MODELS))})")
        return v


class Sharing(Model):
    """How a pool's GPUs are shared. Each strategy uses only its own keys (checked before deploy).

    Who applies it: the GPU Operator's device plugin and MIG manager (ConfigMaps selected by node labels);
    on GKE with GKE-installed drivers, GKE's device plugin (gpuSharingConfig; MIG becomes the node pool's
    gpuPartitionSize: one profile at its maximum count); on Bottlerocket, the host's device plugin
    (time-slicing / MPS only)."""

    strategy: Literal["time-slicing", "mps", "mig"] = Field(
        description="time-slicing: GPUs shared in turns, no memory isolation; mps: CUDA MPS, each unit a share of "
        "memory and compute; mig: hardware partitions (layout)"
    )
    replicas: count(2, MAX_SHARING_REPLICAS) | None = Field(
        default=None, description="time-slicing / mps: units each physical GPU advertises"
    )
    rename_by_default: bool = Field(
        default=False,
        description="time-slicing / mps: advertise the shared units as nvidia.com/gpu.shared instead of "
        "nvidia.com/gpu (not on GKE's device plugin)",
    )
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
    """A taint on the pool's nodes, beside nvidia.com/gpu=present:NoSchedule, which every GPU pool carries."""

    key: LabelKey = Field(description="the taint's key (not nvidia.com/gpu)")
    value: LabelValue | None = Field(default=None, description="the taint's value; default none")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = Field(
        default="NoSchedule", description="what the taint does to pods that do not tolerate it"
    )


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
    consolidate_after: Duration = Field(
        default="10m", description="how long a node stays idle (or underutilized) before Karpenter removes it"
    )
    expire_after: go_duration(DURATION, allow=("Never",)) = Field(
        default="720h", description="nodes older than this are replaced (fresh AMIs); Never keeps them"
    )
    termination_grace_period: Duration = Field(
        default="4h",
        description="the longest a draining node waits for its pods before it is terminated anyway",
    )
    disruption_budget: Annotated[str, Field(pattern=r"^((100|[0-9]{1,2})%|[0-9]+)$")] = Field(
        default="10%",
        description="how many of the pool's nodes Karpenter may disrupt at once (a count or a percentage)",
    )
    ami_version: Annotated[str, Field(pattern=r"^(latest|v[0-9]+(\.[0-9]+)*)$")] = Field(
        default="latest",
        description="EKS-optimized AMI release: latest, or pinned (al2023: vYYYYMMDD, bottlerocket: vX.Y.Z)",
    )


class GkeNetwork(Model):
    """A VPC network and subnetwork by name or resource path, as ``--additional-node-network`` takes them."""

    network: Annotated[bounded_text(1024), Field(min_length=1)] = Field(description="the VPC network")
    subnetwork: Annotated[bounded_text(1024), Field(min_length=1)] = Field(
        description="the subnetwork of that network, in the cluster's region"
    )


class GkePoolOptions(Model):
    zones: list[GcpZone] = Field(default_factory=lambda: [], description="node locations; default: the cluster's")
    additional_networks: list[GkeNetwork] = Field(
        default_factory=lambda: [],
        description="A3/A4 GPUDirect: the GPU NICs' VPC networks and subnetworks, in NIC order (node pool "
        "networkConfig.additionalNodeNetworkConfigs); they and the cluster's multi-networking must exist",
    )
    compact_placement: bool = Field(
        default=False,
        description="a compact placement policy: nodes placed close together for multi-node training",
    )
    reservation: Literal["none", "any", "specific"] = Field(
        default="none",
        description="older form of the pool's reservation block: consume no reservation, any matching one, or "
        "the one named in reservationName",
    )
    reservation_name: DnsLabel | None = Field(
        default=None, description="with reservation: specific, the Compute Engine reservation's name"
    )
    queued_provisioning: bool = Field(
        default=False, description="Dynamic Workload Scheduler: nodes come only for admitted workloads"
    )
    flex_start: bool = Field(
        default=False,
        description="Dynamic Workload Scheduler flex-start: nodes obtained when capacity frees up, run at most "
        "seven days (nodeConfig.flexStart); minNodes 0, no reservation, no spot",
    )
    max_run_duration: count(1, 604800) | None = Field(
        default=None,
        description="seconds a node runs before GKE deletes it (nodeConfig.maxRunDuration); default: GKE's "
        "(seven days for flex-start, none otherwise)",
    )
    local_ssd_ephemeral_storage: bool | None = Field(
        default=None,
        description="the machine's bundled local SSDs (A3, A4, A2 Ultra) as the node's ephemeral storage (emptyDir, "
        "container images, logs); default: on where the machine type bundles them",
    )
    nccl_tcp_sysctls: bool | None = Field(
        default=None,
        description="NCCL's TCP buffer sysctls on the nodes (net.ipv4.tcp_rmem / tcp_wmem up to 16 MiB, as "
        "cluster-toolkit's gke-node-pool sets them). Default: on for pools that run multi-node NCCL "
        "(topologyAware, or GPUDirect additionalNetworks), off elsewhere: changing it rolls a deployed pool's nodes",
    )
    image_streaming: bool | None = Field(
        default=None,
        description="GKE image streaming (gcfsConfig): containers start while their image is read on demand "
        "(images in Artifact Registry). Default: on for pools with declared images or an imageCache disk image, "
        "which needs it",
    )


class Reservation(Model):
    """Reserved capacity a pool launches into, the same block on both clouds.

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
        default_factory=lambda: [],
        max_length=30,
        description="aws: cr-... ids; gcp: the reservation name (exactly one)",
    )
    # Karpenter's capacityReservationSelectorTerms.tags: at most 20, no empty key or value (CRD CEL rule);
    # AWS tag keys are at most 128 characters, values 256.
    tags: dict[Annotated[bounded_text(128), Field(min_length=1)], Annotated[bounded_text(256), Field(min_length=1)]] = (
        Field(default_factory=lambda: {}, max_length=20, description="aws karpenter pools: select reservations by tags")
    )
    instance_type: bounded_text(64) | None = Field(default=None, description="what the reservation holds (checked)")
    availability_zone: bounded_text(64) | None = Field(default=None, description="where the reservation is (checked)")


class EksPoolOptions(Model):
    """aws, provisioner managed: settings of the pool's EKS managed node group."""

    subnet_ids: list[Annotated[str, Field(pattern=r"^subnet-[0-9a-f]+$")]] = Field(
        default_factory=lambda: [],
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
    instance_store_policy: Literal["RAID0", "none"] = Field(
        default="RAID0",
        description="the nodes' local NVMe disks (instance types with an instance store: p4d, p5, g5, g6...): RAID0 "
        "stripes them into one volume for containerd's images, the kubelet's pods and pod logs (AL2023: nodeadm "
        "localStorage; Bottlerocket: apiclient ephemeral-storage), as karpenter.instanceStorePolicy does on "
        "Karpenter nodes; none leaves them unused",
    )


class NodePool(Model):
    """A pool of GPU nodes of one kind: what each node holds, how the pool scales and how its GPUs are shared."""

    name: Name = Field(
        description="the pool's name: tenants' quotas, Kueue flavors and cloud resources are named after it "
        "(renaming a pool replaces it)"
    )
    gpu: GpuSpec = Field(description="the GPU model and how many each node has")
    instance_types: list[str] = Field(
        default_factory=lambda: [], description="aws: instance types; gcp: exactly one machine type"
    )
    capacity: Literal["on-demand", "spot"] = Field(
        default="on-demand", description="on-demand, or spot (cheaper; the cloud may take the nodes back)"
    )
    provisioner: Literal["managed", "karpenter"] = Field(
        default="managed",
        description="managed: an EKS managed node group or GKE node pool, scaled by the cluster autoscaler; "
        "karpenter (aws): Karpenter NodePools that launch nodes for pending pods",
    )
    os: Literal["al2023", "bottlerocket", "cos", "ubuntu"] | None = Field(
        default=None, description="node image; default al2023 on aws, cos on gcp"
    )
    min_nodes: count(0, MAX_NODES) = Field(
        default=0,
        description="nodes kept even when idle (billed around the clock); karpenter pools must keep 0",
    )
    max_nodes: count(1, MAX_NODES) | None = Field(
        default=None,
        description="the most nodes the pool may have; required, except on karpenter pools that set maxGpus",
    )
    max_gpus: count(1, MAX_GPUS) | None = Field(
        default=None, description="karpenter pools: the GPU spend cap (a multiple of gpu.perNode)"
    )
    desired_nodes: count(0, MAX_NODES) | None = Field(
        default=None,
        description="managed pools: the nodes to start with (within minNodes..maxNodes); default minNodes",
    )
    disk_gib: count(50, 16384) = Field(
        default=200, description="each node's disk for images and pod storage, GiB (encrypted)"
    )
    sharing: Sharing | None = Field(
        default=None, description="share each GPU (time-slicing, MPS or MIG); default: whole GPUs"
    )
    taints: list[Taint] = Field(
        default_factory=lambda: [], description="more taints on the nodes, beside nvidia.com/gpu=present:NoSchedule"
    )
    labels: dict[LabelKey, LabelValue] = Field(
        default_factory=lambda: {},
        description="more node labels (not reserved ones: kubernetes.io, nvidia.com/gpu.*, ...)",
    )
    topology_aware: bool = Field(default=False, description="Kueue topology-aware scheduling")
    efa: bool | None = Field(
        default=None,
        description="aws: EFA network interfaces, a cluster placement group and an EFA security group for "
        "multi-node NCCL. Default: on for topologyAware managed pools whose instance types all support EFA",
    )
    reservation: Reservation | None = Field(
        default=None, description="reserved capacity (ODCR / Capacity Block on aws, a reservation on gcp)"
    )
    image_cache: ImageCache | None = Field(
        default=None,
        description="nodes boot with the declared images on disk: an EBS snapshot (aws, Bottlerocket) or a "
        "secondary boot disk image (gcp)",
    )
    karpenter: KarpenterPoolOptions = Field(
        default_factory=lambda: KarpenterPoolOptions(), description="provisioner karpenter: the NodePool's settings"
    )
    gke: GkePoolOptions = Field(
        default_factory=lambda: GkePoolOptions(), description="gcp: the GKE node pool's settings"
    )
    eks: EksPoolOptions = Field(
        default_factory=lambda: EksPoolOptions(),
        description="aws, provisioner managed: the managed node group's settings",
    )

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
