"""What the platform decides for Karpenter on EKS (issue 28), as one frozen ``KarpenterPlan`` (``karpenter_plan``;
None when the stack runs no Karpenter): the names of its AWS objects (roles, queue, EventBridge rules, policies)
and their tags, the controller's chart and the values that follow from the stack file, one EC2NodeClass per
distinct node need, one NodePool per karpenter pool (two with on-demand fallback) and a NodeOverlay per pool whose
nodes advertise what Karpenter cannot know. The node role's name is in the plan; the role object (and the ARNs,
the queue's URL, the cluster endpoint) are the cloud's, so ``components/render/aws/karpenter.py`` adds them.

The NodeClass, NodePool and NodeOverlay documents are made by the functions of ``karpenter_nodes``, which take
the spec (the rules and ``explain`` call them too); this module turns them into the plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...data import versions
from ...spec.model import StackSpec
from .. import derive, mirror
from ..frozen import frozen as _frozen, plain as _thawed
from .karpenter_nodes import (
    NODEPOOL_LABEL,
    OS_LABEL,
    aws_tags,
    karpenter_pools,
    limits,
    node_class_need,
    node_class_needs,
    node_overlay_spec,
    node_pool_description,
    node_pool_spec,
    node_resources,
    nodepool_plans,
    overlay_name,
    overlay_pools,
)

CONTROLLER_NAMESPACE = versions.KARPENTER.namespace
SERVICE_ACCOUNT = "karpenter"

# EventBridge rules feeding the interruption queue: (source, detail-type), as in Karpenter's
# getting-started CloudFormation template for v1.14.
INTERRUPTION_EVENTS: dict[str, tuple[str, str]] = {
    "health": ("aws.health", "AWS Health Event"),
    "spot": ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
    "rebalance": ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
    "state-change": ("aws.ec2", "EC2 Instance State-change Notification"),
    "reservation": ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
}

# The controller's IAM policies, grouped like upstream's managed policies (components/render/aws/iam_karpenter.py
# writes their documents); zonal-shift only with ``karpenter.zonalShift``.
POLICY_GROUPS = (
    "node-lifecycle",
    "iam-integration",
    "eks-integration",
    "interruption",
    "resource-discovery",
    "zonal-shift",
)


# -------------------------------------------------------------------------------------------- names


def name_prefix(spec: StackSpec) -> str:
    return spec.karpenter.name_prefix or spec.cluster.name or ""


def controller_role_name(spec: StackSpec) -> str:
    return f"{name_prefix(spec)}-karpenter"


def node_role_name(spec: StackSpec) -> str:
    return f"{name_prefix(spec)}-karpenter-node"


def queue_name(spec: StackSpec) -> str:
    return f"{name_prefix(spec)}-karpenter"


def policy_name(spec: StackSpec, group: str) -> str:
    return f"{name_prefix(spec)}-karpenter-{group}"


def rule_name(spec: StackSpec, kind: str) -> str:
    return f"{name_prefix(spec)}-karpenter-{kind}"


def policy_groups(spec: StackSpec) -> list[str]:
    return [g for g in POLICY_GROUPS if g != "zonal-shift" or spec.karpenter.zonal_shift]


# ------------------------------------------------------------------------------------- Helm values


def helm_values(spec: StackSpec) -> dict[str, Any]:
    """Values of the karpenter chart as far as the stack file decides them: the renderer adds the cluster's
    endpoint, the queue's name as the queue object gives it, and under IRSA the controller role's ARN
    (``with_outputs``). Placement: system nodes only -- never a GPU node
    (no GPU toleration; GPU pool nodes excluded by label) and never a node Karpenter launched itself (a
    controller on its own capacity could consolidate itself away)."""
    k = spec.karpenter
    settings: dict[str, Any] = {"clusterName": spec.cluster.name, "interruptionQueue": queue_name(spec)}
    if k.zonal_shift:
        settings["enableZonalShift"] = True
    gates: dict[str, bool] = {}
    if overlay_pools(spec):
        # NodeOverlay is alpha in 1.14 (chart values.yaml settings.featureGates.nodeOverlay, default false);
        # switched on only when a pool needs one. Helm merges maps, so the other gates keep their defaults.
        gates["nodeOverlay"] = True
    if spec.node_monitoring_agent_enabled:
        # Node repair (alpha in 1.14, settings.featureGates.nodeRepair, default false) replaces a node whose
        # AcceleratedHardwareReady condition, which the EKS node monitoring agent sets on a GPU fault, stays False
        # for 10 minutes (karpenter-provider-aws pkg/cloudprovider/cloudprovider.go RepairPolicies).
        gates["nodeRepair"] = True
    if gates:
        settings["featureGates"] = gates
    resources = {"cpu": k.controller_cpu, "memory": k.controller_memory}
    values = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": NODEPOOL_LABEL, "operator": "DoesNotExist"},
                                {"key": derive.POOL_LABEL, "operator": "DoesNotExist"},
                            ]
                        }
                    ]
                }
            },
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "kubernetes.io/hostname"}]
            },
        },
        "controller": {"resources": {"limits": dict(resources), "requests": dict(resources)}},
        "nodeSelector": dict(sorted({OS_LABEL: "linux", **spec.system_node_selector}.items())),
        "replicas": k.replicas,
        "serviceAccount": {"name": SERVICE_ACCOUNT},
        "settings": settings,
        "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
    }
    return mirror.chart_values(spec, "karpenter", values)  # its controller image through the stack's mirror


def with_outputs(
    values: Mapping[str, Any],
    identity: str,
    *,
    cluster_endpoint: Any = None,
    queue: Any = None,
    irsa_role_arn: Any = None,
) -> dict[str, Any]:
    """The karpenter chart's values: ``helm_values`` (``KarpenterPlan.helm_values``) with what the cloud gives,
    which the renderer passes in (Outputs there, strings in tests): the cluster endpoint, the queue's name from
    its object (else the planned name) and, under IRSA, the controller role's ARN on the ServiceAccount."""
    out = _thawed(values)
    if queue is not None:
        out["settings"]["interruptionQueue"] = queue
    if cluster_endpoint is not None:
        out["settings"]["clusterEndpoint"] = cluster_endpoint
    if identity == "irsa":
        out["serviceAccount"]["annotations"] = {"eks.amazonaws.com/role-arn": irsa_role_arn}
    return out


def controller_values(
    spec: StackSpec, *, cluster_endpoint: Any = None, queue: Any = None, irsa_role_arn: Any = None
) -> dict[str, Any]:
    """``with_outputs`` of a spec's values (for tests and tools that hold a spec, not a plan)."""
    return with_outputs(
        helm_values(spec),
        spec.karpenter.identity,
        cluster_endpoint=cluster_endpoint,
        queue=queue,
        irsa_role_arn=irsa_role_arn,
    )


# ------------------------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class NodeClassPlan:
    """One EC2NodeClass: named by AMI family and disk size (and its owner pool when it has settings of its own)."""

    name: str
    os: str  # al2023 | bottlerocket
    disk_gib: int
    ami_version: str  # latest | vYYYYMMDD | vX.Y.Z
    owner: str | None  # the one pool whose class this is, or None for a shared class
    pools: tuple[str, ...]  # the karpenter pools whose NodePools name it
    spec: Mapping[str, Any]  # the EC2NodeClass spec without ``role`` (the node role object's name)


@dataclass(frozen=True)
class NodePoolPlan:
    """One Karpenter NodePool: a karpenter pool's spot, on-demand or reserved part and its share of the cap."""

    name: str
    pool: str
    capacity_type: str  # spot | on-demand | reserved
    gpus: int  # physical GPUs it may bring
    nodes: int
    weight: int | None  # spot first (50), on-demand fallback (10); None without fallback
    node_class: str
    limits: Mapping[str, str]
    description: str
    spec: Mapping[str, Any]


@dataclass(frozen=True)
class NodeOverlayPlan:
    """A NodeOverlay telling Karpenter what a pool's nodes advertise (shared or MIG GPUs)."""

    name: str
    pool: str
    capacity: Mapping[str, int]  # extended resources one node advertises
    spec: Mapping[str, Any]


@dataclass(frozen=True)
class KarpenterPlan:
    """Karpenter on the stack's EKS cluster: its AWS objects' names and tags, its charts and values, and the
    EC2NodeClasses, NodePools and NodeOverlays it gets."""

    cluster: str
    region: str
    namespace: str  # the controller's (kube-system)
    service_account: str
    identity: str  # pod-identity | irsa
    zonal_shift: bool
    imds_hop_limit: int
    instance_store_policy: str  # RAID0 | none: the GPU nodes' local NVMe as ephemeral storage, or unused
    controller_role: str  # IAM role names, queue and EventBridge rule names
    node_role: str
    queue: str
    policies: Mapping[str, str]  # policy group -> IAM policy name, in creation order
    event_rules: Mapping[str, str]  # interruption event kind -> EventBridge rule name
    tags: Mapping[str, str]  # on every AWS object (and the instances, via the EC2NodeClasses)
    chart: versions.Chart  # the controller's chart and the CRD chart, as the stack takes them
    crd_chart: versions.Chart
    helm_values: Mapping[str, Any]  # ``helm_values``: without the cluster endpoint and the IRSA role ARN
    node_classes: tuple[NodeClassPlan, ...]
    node_pools: tuple[NodePoolPlan, ...]
    node_overlays: tuple[NodeOverlayPlan, ...]

    def node_pools_of(self, pool: str) -> tuple[NodePoolPlan, ...]:
        return tuple(p for p in self.node_pools if p.pool == pool)


def _node_classes(spec: StackSpec) -> tuple[NodeClassPlan, ...]:
    from .karpenter_nodes import ec2_node_class_spec

    pools = karpenter_pools(spec)
    out = []
    for need in node_class_needs(spec):
        body = ec2_node_class_spec(spec, need, None)
        del body["role"]
        users = tuple(p.name for p in pools if node_class_need(spec, p).name == need.name)
        out.append(NodeClassPlan(need.name, need.os, need.disk_gib, need.ami_version, need.owner, users, _frozen(body)))
    return tuple(out)


def _node_pools(spec: StackSpec) -> tuple[NodePoolPlan, ...]:
    return tuple(
        NodePoolPlan(
            name=p.name,
            pool=p.pool.name,
            capacity_type=p.capacity_type,
            gpus=p.gpus,
            nodes=p.nodes,
            weight=p.weight,
            node_class=node_class_need(spec, p.pool).name,
            limits=_frozen(limits(spec, p)),
            description=node_pool_description(p),
            spec=_frozen(node_pool_spec(spec, p)),
        )
        for p in nodepool_plans(spec)
    )


def _node_overlays(spec: StackSpec) -> tuple[NodeOverlayPlan, ...]:
    return tuple(
        NodeOverlayPlan(
            overlay_name(pool), pool.name, _frozen(node_resources(spec, pool)), _frozen(node_overlay_spec(spec, pool))
        )
        for pool in overlay_pools(spec)
    )


@derive.per_spec
def karpenter_plan(spec: StackSpec) -> KarpenterPlan | None:
    """The stack's Karpenter, or None when it runs none (another cloud, or no karpenter pool and no
    ``addons.karpenter``)."""
    if spec.cloud != "aws" or not spec.karpenter_enabled:
        return None
    k = spec.karpenter
    return KarpenterPlan(
        cluster=spec.cluster.name or "",
        region=spec.cluster.region or "",
        namespace=CONTROLLER_NAMESPACE,
        service_account=SERVICE_ACCOUNT,
        identity=k.identity,
        zonal_shift=k.zonal_shift,
        imds_hop_limit=k.imds_hop_limit,
        instance_store_policy=k.instance_store_policy,
        controller_role=controller_role_name(spec),
        node_role=node_role_name(spec),
        queue=queue_name(spec),
        policies=_frozen({g: policy_name(spec, g) for g in policy_groups(spec)}),
        event_rules=_frozen({kind: rule_name(spec, kind) for kind in INTERRUPTION_EVENTS}),
        tags=_frozen(aws_tags(spec)),
        chart=versions.for_spec(versions.KARPENTER, spec),
        crd_chart=versions.for_spec(versions.KARPENTER_CRD, spec),
        helm_values=_frozen(helm_values(spec)),
        node_classes=_node_classes(spec),
        node_pools=_node_pools(spec),
        node_overlays=_node_overlays(spec),
    )


# ------------------------------------------------------------------------------------------ reading it


def local_disks(k: KarpenterPlan) -> str:
    if k.instance_store_policy == "RAID0":
        return "local NVMe disks striped (RAID0) as the nodes' ephemeral storage (containerd, kubelet, pod logs)"
    return "local NVMe disks unused (karpenter.instanceStorePolicy: none)"


def summary(k: KarpenterPlan | None) -> list[str]:
    """The summary.md section: each NodePool's capacity type, weight, limits and node class."""
    if k is None:
        return []
    lines = [
        "## Karpenter",
        "",
        f"Controller {k.chart.version} in `{k.namespace}` ({k.identity}), interruption queue "
        f"`{k.queue}`, node role `{k.node_role}`, IMDSv2 hop limit {k.imds_hop_limit}, {local_disks(k)}.",
        "",
        "| NodePool | pool | capacity | weight | nvidia.com/gpu limit | node limit | EC2NodeClass |",
        "|---|---|---|---|---|---|---|",
    ]
    for p in k.node_pools:
        lines.append(
            f"| {p.name} | {p.pool} | {p.capacity_type} | {p.weight or '-'} | "
            f"{p.limits[derive.GPU_RESOURCE]} | {p.limits['nodes']} | {p.node_class} |"
        )
    for o in k.node_overlays:
        cap = ", ".join(f"{n} {r}" for r, n in o.capacity.items())
        lines.append("")
        lines.append(f"NodeOverlay `{o.name}`: Karpenter sees {cap} per {o.pool} node.")
    return lines


def summary_lines(spec: StackSpec) -> list[str]:
    return summary(karpenter_plan(spec))


def text(k: KarpenterPlan | None) -> list[str]:
    """``gpu-platform plan``'s Karpenter section."""
    if k is None:
        return []
    lines = [
        "",
        "Karpenter",
        f"  controller {k.chart.version} in {k.namespace} ({k.identity}), interruption queue {k.queue}, "
        f"node role {k.node_role}, controller role {k.controller_role}",
    ]
    for c in k.node_classes:
        lines.append(
            f"  EC2NodeClass {c.name}: {c.os}@{c.ami_version}, {c.disk_gib} GiB, for {', '.join(c.pools)}"
            + (" (its own)" if c.owner else "")
        )
    for p in k.node_pools:
        weight = f", weight {p.weight}" if p.weight is not None else ""
        lines.append(
            f"  NodePool {p.name} (pool {p.pool}): {p.capacity_type}{weight}, up to {p.gpus} GPUs on {p.nodes} nodes "
            f"({p.limits[derive.GPU_RESOURCE]} {derive.GPU_RESOURCE}), class {p.node_class}"
        )
    for o in k.node_overlays:
        cap = ", ".join(f"{n} {r}" for r, n in o.capacity.items())
        lines.append(f"  NodeOverlay {o.name}: Karpenter sees {cap} per {o.pool} node")
    return lines
