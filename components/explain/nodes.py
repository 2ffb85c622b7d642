"""The labels a pool's nodes carry as far as the stack tells, for ``gpu-platform explain``'s node and pool checks.

Beside the pool's own labels (``derive.pool_labels``, ``managed_pools.labels``) every node carries well-known
labels its provisioner or kubelet sets: ``kubernetes.io/arch`` and ``/os``, ``node.kubernetes.io/instance-type``,
``topology.kubernetes.io/zone`` and ``/region``, ``kubernetes.io/hostname``, and per provisioner
``karpenter.sh/capacity-type`` (Karpenter), ``eks.amazonaws.com/capacityType`` (EKS managed node groups),
``cloud.google.com/gke-nodepool`` (GKE). A pod selecting one of them is matched against what the pool's nodes
would carry (instance types, capacity type, zones known from the stack); where the stack does not tell the
value (a hostname, a zone of a multi-AZ node group, anything on an existing cluster) every value is possible,
so only a real mismatch stops a workload.

Values are ``LabelValues``: one value, the values the pool's nodes may carry, or None (carried, value unknown).
"""

from __future__ import annotations

from typing import Any

from ..data import catalog
from ..plan import kueue as kueue_plan
from ..plan.plan import Plan, PoolPlan

# Node labels as explain knows them: a label's one value, the values a pool's nodes may carry (instance types,
# capacity types...), or None where nodes carry the label with a value the stack does not tell (a hostname).
LabelValues = str | tuple[str, ...] | None

ARCH = "kubernetes.io/arch"
OS = "kubernetes.io/os"
HOSTNAME = "kubernetes.io/hostname"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
EBS_CSI_ZONE = "topology.ebs.csi.aws.com/zone"
EKS_CAPACITY_TYPE = "eks.amazonaws.com/capacityType"
EKS_NODEGROUP = "eks.amazonaws.com/nodegroup"
GKE_NODEPOOL = "cloud.google.com/gke-nodepool"
GKE_SPOT = "cloud.google.com/gke-spot"
GKE_ACCELERATOR = "cloud.google.com/gke-accelerator"
GKE_MACHINE_FAMILY = "cloud.google.com/machine-family"
# Karpenter AWS labels every node gets from its instance type (karpenter-provider-aws v1.14.1
# pkg/apis/v1/labels.go:33-63, WellKnownLabels): explain knows the family, GPU name and count from the catalog;
# the others are carried with values it does not model.
KARPENTER_INSTANCE_FAMILY = "karpenter.k8s.aws/instance-family"
KARPENTER_INSTANCE_PREFIX = "karpenter.k8s.aws/instance-"
KARPENTER_OTHER_INSTANCE_LABELS = tuple(
    KARPENTER_INSTANCE_PREFIX + s
    for s in (
        "category",
        "generation",
        "size",
        "cpu",
        "cpu-manufacturer",
        "cpu-sustained-clock-speed-mhz",
        "memory",
        "ebs-bandwidth",
        "network-bandwidth",
        "gpu-manufacturer",
        "gpu-memory",
        "hypervisor",
        "encryption-in-transit-supported",
    )
)


def node_label_values(decided: Plan, pool: PoolPlan) -> dict[str, LabelValues]:
    """Every label a node of the pool carries, as far as the stack tells: the well-known ones, then the pool's
    own (``PoolPlan.labels``), which win."""
    return {**well_known_labels(decided, pool), **pool.labels}


def well_known_labels(decided: Plan, pool: PoolPlan) -> dict[str, LabelValues]:
    out: dict[str, LabelValues] = {OS: "linux", HOSTNAME: None}
    if pool.topology_aware:  # the Topology's levels: nodes of such instance types carry them, values unknown
        levels = kueue_plan.levels_of(decided.addons["kueue"].options.get("topologyLevels"), decided.cloud)
        out.update({level: None for level in levels or []})
    if decided.cloud == "existing":  # nodes that exist: every well-known label, values the stack does not tell
        out.update({ARCH: None, INSTANCE_TYPE: None, ZONE: None, REGION: None})
    elif decided.cloud == "gcp":
        out.update(_gke_labels(decided, pool))
    else:
        out.update(_ec2_labels(decided, pool))
        karpenter = pool.provisioner == "karpenter"
        out.update(_karpenter_labels(decided, pool) if karpenter else _eks_managed_labels(decided, pool))
    return out


def _aws_zone(decided: Plan, pool: PoolPlan) -> str | None:
    """The one AZ the stack pins the pool to: its reservation's (``Plan.reservations``), or (Karpenter) the
    zone its NodePools require (``karpenter.zone``, ``karpenter_nodes._reservation_zone``); else None (the
    subnets' AZs, which the stack does not name)."""
    if pool.provisioner == "karpenter" and decided.karpenter is not None:
        for np in decided.karpenter.node_pools_of(pool.name):
            for req in np.spec["template"]["spec"]["requirements"]:
                if req["key"] == ZONE:
                    return req["values"][0]
        return None
    r = (decided.reservations or {}).get(pool.name)
    return r.availability_zone if r is not None else None


def _ec2_labels(decided: Plan, pool: PoolPlan) -> dict[str, LabelValues]:
    """What every EC2 node of the pool carries, whoever launches it (the kubelet and the cloud provider set
    these; the Cluster Autoscaler templates the same from the instance type, below)."""
    types = [catalog.AWS_INSTANCE_TYPES[t] for t in pool.instance_types if t in catalog.AWS_INSTANCE_TYPES]
    zone = _aws_zone(decided, pool)
    return {
        ARCH: tuple(sorted({t.kubernetes_arch for t in types})) or None,
        INSTANCE_TYPE: tuple(pool.instance_types) or None,
        REGION: decided.aws.cluster.region if decided.aws is not None else None,
        ZONE: zone,
    }


def _karpenter_labels(decided: Plan, pool: PoolPlan) -> dict[str, LabelValues]:
    """Karpenter labels a node with its NodePool's name, the offering's capacity type and the instance type's
    labels (kubernetes-sigs/karpenter v1.14.1 pkg/apis/v1/labels.go:73-84, WellKnownLabels): the values of
    ``karpenter.requirements`` (``KarpenterPlan.node_pools``: spot, on-demand fallback, reserved)."""
    from ..plan.aws import karpenter_nodes as karpenter

    plans = decided.karpenter.node_pools_of(pool.name) if decided.karpenter is not None else ()
    types = [catalog.AWS_INSTANCE_TYPES[t] for t in pool.instance_types if t in catalog.AWS_INSTANCE_TYPES]
    out: dict[str, LabelValues] = {name: None for name in KARPENTER_OTHER_INSTANCE_LABELS}
    out.update(
        {
            karpenter.NODEPOOL_LABEL: tuple(sorted(p.name for p in plans)),
            karpenter.CAPACITY_TYPE_LABEL: tuple(sorted({p.capacity_type for p in plans})),
            KARPENTER_INSTANCE_FAMILY: tuple(sorted({t.family for t in types})) or None,
            karpenter.GPU_NAME_LABEL: tuple(sorted({t.karpenter_gpu_name for t in types})) or None,
            karpenter.GPU_COUNT_LABEL: str(pool.gpus_per_node),
        }
    )
    return out


def _eks_managed_labels(decided: Plan, pool: PoolPlan) -> dict[str, LabelValues]:
    """EKS labels a managed node group's nodes with the group's capacity type and name (the name: a prefix EKS
    completes, ``NodeGroupPlan.name_prefix``); the Cluster Autoscaler reads the same from DescribeNodegroup
    (cluster-autoscaler 1.35.0 cloudprovider/aws/aws_wrapper.go:98-108)."""
    assert decided.aws is not None
    return {EKS_CAPACITY_TYPE: decided.aws.node_groups[pool.name].capacity_type, EKS_NODEGROUP: None}


def _gke_labels(decided: Plan, pool: PoolPlan) -> dict[str, LabelValues]:
    """GKE labels each node with its node pool, machine type and family, accelerator, location, and
    ``cloud.google.com/gke-spot=true`` on Spot VMs (GKE's node labels; the autoscaler is GKE's own). Every GPU
    machine type of the catalog is x86 (A2, A3, A4, G2, N1)."""
    assert decided.gke is not None
    node_pool = decided.gke.node_pools[pool.name]
    location = decided.gke.cluster.location or ""
    parts = location.split("-")
    zonal = len(parts) == 3 and len(parts[2]) == 1  # us-central1-a, not us-central1
    region = "-".join(parts[:2]) if zonal else location or None
    zones = tuple(node_pool.zones) or ((location,) if zonal else None)
    machine = pool.instance_types[0] if pool.instance_types else None
    out: dict[str, LabelValues] = {
        ARCH: "amd64",
        INSTANCE_TYPE: machine,
        REGION: region,
        ZONE: zones,
        GKE_NODEPOOL: pool.name,
        GKE_ACCELERATOR: node_pool.accelerator["type"],
        GKE_MACHINE_FAMILY: machine.split("-", 1)[0] if machine else None,
    }
    if pool.capacity == "spot":
        out[GKE_SPOT] = "true"
    return out


def autoscaler_template_labels(decided: Plan, pool: PoolPlan, tag_labels: dict[str, str]) -> dict[str, Any]:
    """The labels of the Cluster Autoscaler's scale-from-zero node for a managed pool, joined as
    cluster-autoscaler 1.35.0 cloudprovider/aws/aws_manager.go:299-317 joins them: its generic labels (arch, os,
    instance type, region and zone of the ASG, the EBS CSI zone, hostname: buildGenericLabels, 389-402), then the ASG's
    ``k8s.io/cluster-autoscaler/node-template/label/*`` tags, then the EKS managed node group's labels from
    DescribeNodegroup (aws_wrapper.go:98-108: ``eks.amazonaws.com/capacityType``, ``/nodegroup``)."""
    ec2 = _ec2_labels(decided, pool)
    generic = {**ec2, OS: "linux", HOSTNAME: None, EBS_CSI_ZONE: ec2[ZONE]}
    return {**generic, **tag_labels, **_eks_managed_labels(decided, pool)}
