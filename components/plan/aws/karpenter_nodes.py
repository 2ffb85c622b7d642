"""Karpenter's node documents, decided from the stack file: one EC2NodeClass per distinct node need
(``NodeClassNeed``), one NodePool per karpenter pool (two with on-demand fallback: ``nodepool_plans``) with its
limits, requirements and taints, and a NodeOverlay per pool whose nodes advertise what Karpenter cannot know.
``components/plan/aws/karpenter.py`` puts them in the plan; the rules (``plan/aws/rules_karpenter.py``) and
``explain`` call these functions with the spec.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ...data import catalog
from ...spec.model import NodePool, StackSpec
from .. import derive, images, sharing
from ..reservations import pool_reservation
from . import efa, managed_pools, reservations as aws_reservations
from .capacity import fallback_split

DISCOVERY_TAG = "karpenter.sh/discovery"
NODEPOOL_LABEL = "karpenter.sh/nodepool"  # set by Karpenter on every node it launches
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
GPU_NAME_LABEL = "karpenter.k8s.aws/instance-gpu-name"
GPU_COUNT_LABEL = "karpenter.k8s.aws/instance-gpu-count"
ARCH_LABEL = "kubernetes.io/arch"
OS_LABEL = "kubernetes.io/os"

# With onDemandFallback the scheduler tries the spot NodePool first (higher weight); the on-demand
# NodePool is used when the spot one cannot launch (spot capacity errors are cached per offering for a
# few minutes, so the next attempt moves on) or has reached its share of the GPU cap.
SPOT_WEIGHT = 50
ON_DEMAND_WEIGHT = 10

# gp3 volumes for GPU nodes: CUDA/framework images are 10-20 GB, and gp3's baseline 125 MiB/s makes a
# cold pull take minutes. 500 MiB/s (within gp3's 0.25 MiB/s-per-IOPS ratio at the free 3000 IOPS) adds
# about $15 per volume-month at us-east-1 prices, billed only while the node exists.
VOLUME_THROUGHPUT = 500
VOLUME_IOPS = 3000
BOTTLEROCKET_OS_VOLUME_GIB = 4  # Karpenter's default Bottlerocket root volume; images go on /dev/xvdb


# ----------------------------------------------------------------------------------- EC2NodeClasses


def aws_tags(spec: StackSpec) -> dict[str, str]:
    """Tags of every AWS object of Karpenter's, and of the instances it launches (EC2NodeClass ``tags``)."""
    return dict(sorted({**spec.tags, "managed-by": "gpu-platform"}.items()))


def karpenter_pools(spec: StackSpec) -> list[NodePool]:
    if spec.cloud != "aws":
        return []
    return [p for p in spec.node_pools if p.provisioner == "karpenter"]


@dataclass(frozen=True, order=True)
class NodeClassNeed:
    """One EC2NodeClass. Its identity (name) is the AMI family and the disk size: every pool with both in
    common shares the class (the node role and network selectors are stack-wide).

    The AMI release is deliberately not part of the name: bumping a pinned ``amiVersion`` must update the
    class in place (Karpenter then replaces its nodes as drifted, within each NodePool's disruption
    budget). A name with the release in it would make the bump create a new class and delete the old
    one, whose finalizer waits for every node it launched to drain (terminationGracePeriod, 4h by
    default) and holds ``pulumi up`` that long. ``rules_karpenter`` rejects pools that would share a class
    but pin different releases."""

    os: str  # al2023 | bottlerocket
    disk_gib: int
    ami_version: str  # latest | vYYYYMMDD | vX.Y.Z: the class's spec, not its name
    # Bottlerocket settings TOML (``managed_pools.user_data``, the launch-template path's renderer), or None
    user_data: str | None = None
    # The pool whose class this is alone: its own settings (Bottlerocket time-slicing / MPS in the user data) or
    # its own additions (``own_class_additions``: reservation terms, EFA placement group and security group),
    # which must not reach other pools' nodes
    owner: str | None = None
    additions: str = ""  # JSON of ``own_class_additions`` (keeps the need hashable); "" for shared classes
    snapshot_id: str | None = None  # Bottlerocket: the data volume's snapshot (``images.snapshot_id``)
    fast_pull: bool = False  # AL2023: nodeadm FastImagePull, with the root volume's throughput for it

    @property
    def name(self) -> str:
        base = node_class_name(self.os, self.disk_gib)
        return f"{base}-{self.owner}" if self.owner else base

    @property
    def alias(self) -> str:
        return f"{self.os}@{self.ami_version}"


def node_class_name(os: str, disk_gib: int) -> str:
    return f"gpu-{os}-{disk_gib}gib"


def node_class_need(spec: StackSpec, pool: NodePool) -> NodeClassNeed:
    """Bottlerocket nodes get their device-plugin settings from the class's ``userData`` TOML, rendered by
    the same function as a managed node group's launch template. The stack-wide part (UUID device IDs)
    keeps classes shared by OS and disk under their old names; a pool with time-slicing / MPS settings gets
    a class of its own, ``gpu-bottlerocket-<disk>gib-<pool>``, so two sharing pools never overwrite each
    other's settings and changing one pool's replicas updates (drifts) only that pool's nodes. So does a pool
    whose class adds something of its own (``own_class_additions``)."""
    os = derive.node_os(spec, pool)
    additions = own_class_additions(spec, pool)
    shares = os == "bottlerocket" and sharing.bottlerocket_shares_gpus(spec, pool.name)
    # the pool's image delivery (a snapshot, FastImagePull, the peer mirror's containerd setting) is its own too
    snapshot, fast = images.snapshot_id(spec, pool), images.fast_pull(spec, pool)
    own_images = snapshot is not None or images.al2023_node_config(spec, pool) is not None
    owner = pool.name if shares or additions or own_images else None
    user_data = managed_pools.user_data(spec, pool)
    extra = json.dumps(additions, sort_keys=True) if additions else ""
    return NodeClassNeed(os, pool.disk_gib, pool.karpenter.ami_version, user_data, owner, extra, snapshot, fast)


def own_class_additions(spec: StackSpec, pool: NodePool) -> dict[str, Any]:
    """What a pool's own EC2NodeClass adds: its reservation's ``capacityReservationSelectorTerms``
    (components/plan/aws/reservations.py) and, with EFA, its placement group and EFA security group
    (components/plan/aws/efa.py). {} for pools that share a class."""
    out: dict[str, Any] = {}
    r = pool_reservation(pool)
    if r is not None:
        out["capacityReservationSelectorTerms"] = aws_reservations.selector_terms(r)
    out.update(efa.karpenter_class_additions(spec, pool))
    return out


def node_class_needs(spec: StackSpec) -> list[NodeClassNeed]:
    """One need per class name, in name order. Pools sharing a class agree on the AMI release (a rule);
    should they not, the first pool in the stack file decides rather than two resources colliding."""
    needs: dict[str, NodeClassNeed] = {}
    for pool in karpenter_pools(spec):
        need = node_class_need(spec, pool)
        needs.setdefault(need.name, need)
    return [needs[n] for n in sorted(needs)]


def _gp3(size_gib: int) -> dict[str, Any]:
    return {
        "deleteOnTermination": True,
        "encrypted": True,
        "iops": VOLUME_IOPS,
        "throughput": VOLUME_THROUGHPUT,
        "volumeSize": f"{size_gib}Gi",
        "volumeType": "gp3",
    }


def block_device_mappings(need: NodeClassNeed) -> list[dict[str, Any]]:
    """AL2023 keeps everything (images included) on its root volume /dev/xvda; Bottlerocket has a
    small OS volume /dev/xvda and a data volume /dev/xvdb for images and logs."""
    if need.os == "bottlerocket":
        os_volume = {**_gp3(BOTTLEROCKET_OS_VOLUME_GIB)}
        del os_volume["iops"], os_volume["throughput"]  # the OS volume is read at boot only
        data = _gp3(need.disk_gib)
        if need.snapshot_id:
            # the images on disk at boot (components/plan/images.py); the volume takes the snapshot's encryption (EC2
            # API LaunchTemplateEbsBlockDeviceRequest: no encryption value with a snapshot)
            del data["encrypted"]
            data.update(snapshotID=need.snapshot_id, volumeInitializationRate=images.SNAPSHOT_INIT_MIB_S)
        return [
            {"deviceName": "/dev/xvda", "ebs": os_volume},
            {"deviceName": "/dev/xvdb", "ebs": dict(sorted(data.items()))},
        ]
    root = _gp3(need.disk_gib)
    if need.fast_pull:
        root.update(iops=images.FAST_PULL_IOPS, throughput=images.FAST_PULL_THROUGHPUT)
    return [{"deviceName": "/dev/xvda", "ebs": root}]


def _selector_terms(tags: dict[str, str], ids: list[str], cluster: str) -> list[dict[str, Any]]:
    terms: list[dict[str, Any]] = []
    if tags or not ids:
        terms.append({"tags": dict(sorted((tags or {DISCOVERY_TAG: cluster}).items()))})
    terms += [{"id": i} for i in sorted(ids)]
    return terms


def subnet_selector_terms(spec: StackSpec) -> list[dict[str, Any]]:
    k = spec.karpenter
    return _selector_terms(k.subnet_tags, k.subnet_ids, spec.cluster.name or "")


def security_group_selector_terms(spec: StackSpec) -> list[dict[str, Any]]:
    k = spec.karpenter
    return _selector_terms(k.security_group_tags, k.security_group_ids, spec.cluster.name or "")


def metadata_options(spec: StackSpec) -> dict[str, Any]:
    """IMDSv2 only. Hop limit 1 (default): a pod in its own network namespace is one hop further away,
    so it cannot fetch the node role's credentials; Karpenter's controller, the GPU Operator and DCGM
    need no IMDS, and the VPC CNI / kube-proxy run on the host network."""
    return {
        "httpEndpoint": "enabled",
        "httpProtocolIPv6": "disabled",
        "httpPutResponseHopLimit": spec.karpenter.imds_hop_limit,
        "httpTokens": "required",
    }


def ec2_node_class_spec(spec: StackSpec, need: NodeClassNeed, role: Any) -> dict[str, Any]:
    """``role`` is the node role's name (an Output in the program, a string in tests). Bottlerocket classes
    carry ``userData`` (TOML): Karpenter merges it with the bootstrap settings it generates."""
    body = {
        "amiSelectorTerms": [{"alias": need.alias}],
        "blockDeviceMappings": block_device_mappings(need),
        "metadataOptions": metadata_options(spec),
        "role": role,
        "securityGroupSelectorTerms": security_group_selector_terms(spec),
        "subnetSelectorTerms": subnet_selector_terms(spec),
        "tags": aws_tags(spec),
    }
    # Karpenter v1.14.1 pkg/providers/amifamily/bootstrap: AL2023's NodeConfig gets instance.localStorage.strategy
    # RAID0 (nodeadm.go; awslabs/amazon-eks-ami nodeadm mounts containerd's, the kubelet's and pod logs' directories
    # on the array), Bottlerocket the bootstrap command "apiclient ephemeral-storage init" then "bind --dirs
    # /var/lib/containerd /var/lib/kubelet /var/log/pods" (bottlerocket.go); its instance types then advertise the
    # disks' size as ephemeral-storage (karpenter.sh/v1 docs, NodeClasses "spec.instanceStorePolicy").
    # On a type without an instance store both are no-ops that succeed (local_disks.py cites the sources), so the
    # policy is safe on every class. Not on a Bottlerocket class whose data volume boots from an image snapshot:
    # Karpenter's bind would hide the snapshot's images under the NVMe (that class's userData binds the rest:
    # local_disks.bottlerocket_settings). A Bottlerocket release before v1.22.0 has neither: rules_karpenter.
    if spec.karpenter.instance_store_policy == "RAID0" and need.snapshot_id is None:
        body["instanceStorePolicy"] = "RAID0"
    if need.user_data is not None:
        body["userData"] = need.user_data
    additions = json.loads(need.additions) if need.additions else {}
    # selector terms are ORed: the stack's security groups plus any the pool's class adds (an EFA pool's group)
    body["securityGroupSelectorTerms"] += additions.pop("securityGroupSelectorTerms", [])
    return body | additions


# ---------------------------------------------------------------------------------------- NodePools


@dataclass(frozen=True)
class NodePoolPart:
    """One Karpenter NodePool as the spec gives it: a karpenter pool (the spec's) and the part of its cap this
    NodePool brings. The plan's ``NodePoolPlan`` (``components/plan/aws/karpenter.py``) is made from it."""

    name: str
    pool: NodePool
    capacity_type: str  # "spot" | "on-demand" | "reserved" (pools with a reservation)
    gpus: int  # physical GPUs this NodePool may bring
    weight: int | None

    @property
    def nodes(self) -> int:
        return self.gpus // self.pool.gpu.per_node


def nodepool_plans(spec: StackSpec) -> list[NodePoolPart]:
    plans = []
    for pool in karpenter_pools(spec):
        if pool.capacity == "spot" and pool.karpenter.on_demand_fallback:
            spot, on_demand = fallback_split(pool)
            plans.append(NodePoolPart(pool.name, pool, "spot", spot, SPOT_WEIGHT))
            plans.append(NodePoolPart(f"{pool.name}-on-demand", pool, "on-demand", on_demand, ON_DEMAND_WEIGHT))
        else:
            capacity = aws_reservations.RESERVED if pool_reservation(pool) is not None else pool.capacity
            plans.append(NodePoolPart(pool.name, pool, capacity, pool.gpu_cap, None))
    return sorted(plans, key=lambda p: p.name)


def limits(spec: StackSpec, plan: NodePoolPart) -> dict[str, str]:
    """``nvidia.com/gpu`` at the plan's GPU count, and ``nodes`` at the matching node count.

    Karpenter counts a node's resources from its instance type until the node is initialized, then
    from the node's capacity -- and with time-slicing or MIG (single strategy) the device plugin
    advertises several ``nvidia.com/gpu`` per physical GPU. So the GPU limit is stated in advertised
    units (equal to the physical count for unshared pools), and ``limits.nodes`` holds the physical cap
    whatever the device plugin reports. Strings, as the API server stores quantities.
    """
    per_gpu = derive.units_per_gpu(spec, plan.pool).get(derive.GPU_RESOURCE, 1)
    return {derive.GPU_RESOURCE: str(plan.gpus * max(per_gpu, 1)), "nodes": str(plan.nodes)}


def requirements(plan: NodePoolPart) -> list[dict[str, Any]]:
    pool = plan.pool
    types = [catalog.AWS_INSTANCE_TYPES[t] for t in pool.instance_types]
    return [
        {"key": CAPACITY_TYPE_LABEL, "operator": "In", "values": [plan.capacity_type]},
        {"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": sorted(t.name for t in types)},
        {"key": GPU_NAME_LABEL, "operator": "In", "values": sorted({t.karpenter_gpu_name for t in types})},
        {"key": GPU_COUNT_LABEL, "operator": "In", "values": [str(pool.gpu.per_node)]},
        {"key": ARCH_LABEL, "operator": "In", "values": sorted({t.kubernetes_arch for t in types})},
        {"key": OS_LABEL, "operator": "In", "values": ["linux"]},
        *_reservation_zone(pool),
    ]


def _reservation_zone(pool: NodePool) -> list[dict[str, Any]]:
    """A reservation declared in one AZ, or an EFA pool's placement group (``karpenter.zone``), keeps the
    NodePool in that AZ."""
    r = pool_reservation(pool)
    zone = (r.availability_zone if r is not None else None) or pool.karpenter.zone
    if not zone:
        return []
    return [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]


def taints(pool: NodePool) -> list[dict[str, str]]:
    out = []
    for t in derive.pool_taints(pool):
        taint = {"key": t.key, "effect": t.effect}
        if t.value is not None:
            taint["value"] = t.value
        out.append(taint)
    return out


def node_pool_spec(spec: StackSpec, plan: NodePoolPart) -> dict[str, Any]:
    pool = plan.pool
    k = pool.karpenter
    body: dict[str, Any] = {
        "disruption": {
            "budgets": [{"nodes": k.disruption_budget}],
            "consolidateAfter": k.consolidate_after,
            "consolidationPolicy": k.consolidation_policy,
        },
        "limits": limits(spec, plan),
        "template": {
            "metadata": {"labels": derive.pool_labels(spec, pool)},
            "spec": {
                "expireAfter": k.expire_after,
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": node_class_need(spec, pool).name,
                },
                "requirements": requirements(plan),
                "taints": taints(pool),
                "terminationGracePeriod": k.termination_grace_period,
            },
        },
    }
    if plan.weight is not None:
        body["weight"] = plan.weight
    return body


# ------------------------------------------------------------------------------------- NodeOverlays


def node_resources(spec: StackSpec, pool: NodePool) -> dict[str, int]:
    """Extended resources one node of the pool advertises once its device plugin runs (the same function
    that fills a managed node group's Cluster Autoscaler template, from ``derive.pool_units``)."""
    return managed_pools.node_resources(spec, pool)


def needs_overlay(spec: StackSpec, pool: NodePool) -> bool:
    """Karpenter knows only the instance type's ``nvidia.com/gpu`` count (EC2 GPU info). A pool whose
    nodes advertise anything else (time-slicing / MPS replicas, ``nvidia.com/gpu.shared``, MIG slices)
    needs a NodeOverlay, or pods never get a node / Karpenter launches ``replicas`` times too many."""
    return node_resources(spec, pool) != {derive.GPU_RESOURCE: pool.gpu.per_node}


def overlay_pools(spec: StackSpec) -> list[NodePool]:
    return sorted((p for p in karpenter_pools(spec) if needs_overlay(spec, p)), key=lambda p: p.name)


def overlay_name(pool: NodePool) -> str:
    return f"gpu-{pool.name}"


def node_overlay_spec(spec: StackSpec, pool: NodePool) -> dict[str, Any]:
    """One NodeOverlay per affected pool, matching exactly that pool's NodePools (spot and on-demand) and
    instance types.

    ``capacity`` lists every extended resource the pool's device plugin advertises per node, including
    ``nvidia.com/gpu`` (0 when the node advertises none: renamed replicas or mixed MIG). The CRD's text
    says capacity "adds extended resources only", but kubernetes-sigs/karpenter applies it with
    ``InstanceType.ApplyCapacityOverlay`` = ``lo.Assign(capacity, overlay)`` (pkg/cloudprovider/types.go):
    an overlay key replaces the instance type's value, so the GPU count Karpenter derived from EC2 is
    overridden, not added to. The CRD's CEL only forbids cpu, memory, ephemeral-storage and pods."""
    plans = [p.name for p in nodepool_plans(spec) if p.pool.name == pool.name]
    return {
        "capacity": {name: str(n) for name, n in node_resources(spec, pool).items()},
        "requirements": [
            {"key": NODEPOOL_LABEL, "operator": "In", "values": sorted(plans)},
            {"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": sorted(pool.instance_types)},
        ],
    }


def node_pool_description(plan: NodePoolPart) -> str:
    pool = plan.pool
    gpus = f"{pool.gpu.per_node}x {pool.gpu.model}"
    text = f"gpu-platform pool {pool.name}: {plan.capacity_type} {gpus}, up to {plan.gpus} GPUs"
    if plan.weight is not None:
        role = "preferred" if plan.capacity_type == "spot" else "fallback when spot is unavailable"
        text += f" ({role}; the pool's {pool.gpu_cap} GPUs are split between spot and on-demand)"
    return text
