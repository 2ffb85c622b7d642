"""EFA (Elastic Fabric Adapter) for multi-node training on EKS, as plain data and rules (no SDK, no pulumi).

A pool with EFA (``nodePools[].efa``, default on for ``topologyAware`` managed pools whose instance types all
support EFA: topology-aware scheduling is how a stack says "gangs of pods across nodes", the one case where
NCCL's inter-node traffic matters) gets, as an EKS managed node group:

* launch-template network interfaces on every network card the type has (``catalog.AWS_EFA_INTERFACES``;
  layout per ``catalog.AWS_EFA_ONLY_FAMILIES``), each in the cluster security group (the EKS-created group
  nodes must be in to reach the control plane and each other; a launch template that lists interfaces
  replaces EKS' own default of putting nodes in it) and the pool's EFA security group;
* an EFA security group allowing all traffic from and to itself (EC2 user guide, "Prepare an EFA-enabled
  security group": EFA's OS-bypass traffic needs an all-traffic self rule both ways);
* a cluster placement group (``strategy: cluster``), in the launch template's ``placement.groupName``;
* exactly one subnet (a cluster placement group is in one AZ; EFA traffic stays within an AZ).

Karpenter pools (v1.14.1, ``efa: true``; the topologyAware default never applies, Karpenter pools cannot be
topology-aware): Karpenter itself attaches an ``efa`` interface per network card -- all of them -- when a pod
requests ``vpc.amazonaws.com/efa`` (``pkg/providers/launchtemplate/launchtemplate.go``
generateNetworkInterfaces, ``pkg/providers/instance/instance.go`` getEFACountForInstance), so the EC2NodeClass
names no interfaces (its ``networkInterfaces`` field offers only ``interface`` / ``efa-only``, which would
replace that layout). The pool gets its own EC2NodeClass selecting the same kind of cluster placement group
(``placementGroupSelector.name``) and EFA security group (an extra ``securityGroupSelectorTerms`` entry by
name), and its NodePool is pinned to ``karpenter.zone`` (the placement group's AZ). Pods that request no EFA
still land on the pool, without EFA interfaces.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ...data import catalog
from ...data.aws_registries import EKS_ADDON_REGISTRIES
from ...spec.model import NodePool, Problem, StackSpec, key, rule
from .. import derive, mirror

EFA_RESOURCE = "vpc.amazonaws.com/efa"
# What an EFA node's kubelet advertises besides the interfaces: the EFA software on the EKS-optimized accelerated
# AL2023 and Bottlerocket AMIs reserves 5128 hugepages of 2 MiB at boot (the aws-efa-installer's setting), which
# libfabric allocates its buffers from; pods ask for them (AWS's EKS EFA example Job requests hugepages-2Mi: 5120Mi,
# as examples/kueue-pytorch-training-job.yaml does). A node without them fits no such pod.
EFA_HUGEPAGES_RESOURCE = "hugepages-2Mi"
EFA_HUGEPAGES = 5128  # pages of 2 MiB per node


def efa_capable(pool: NodePool) -> bool:
    return efa_capable_types(pool.instance_types)


def efa_capable_types(instance_types: Sequence[str]) -> bool:
    """Whether every one of the instance types has EFA (``efa_capable`` of a pool; explain reads the plan's)."""
    types = [catalog.aws_instance_type(t) for t in instance_types]
    return bool(types) and all(t is not None and t.efa_interfaces > 0 for t in types)


def efa_enabled(spec: StackSpec, pool: NodePool) -> bool:
    """Whether the pool gets EFA (explicit ``efa``, else the default described in the module docstring)."""
    if spec.cloud != "aws":
        return False
    if pool.efa is not None:
        return pool.efa
    return pool.provisioner == "managed" and pool.topology_aware and efa_capable(pool)


def efa_pools(spec: StackSpec) -> list[NodePool]:
    return [p for p in spec.node_pools if efa_enabled(spec, p)]


def interfaces_per_node(pool: NodePool) -> int:
    """EFA devices one node of the pool has, as the EFA device plugin advertises them (``vpc.amazonaws.com/efa``).
    The rules keep an EFA pool's instance types at one interface count."""
    return interfaces_of_types(pool.instance_types)


def interfaces_of_types(instance_types: Sequence[str]) -> int:
    """``interfaces_per_node`` of a pool with these instance types."""
    # none without instance types: the aws rules refuse such a pool ("needs at least one instance type"), and the
    # rules that read this (tag lengths) run beside them, so it must not raise
    return min((catalog.aws_efa_interfaces(t) for t in instance_types), default=0)


def network_interfaces(pool: NodePool, security_groups: list[Any]) -> list[dict[str, Any]]:
    """Launch-template network interfaces (SDK snake_case) of an EFA pool, one EFA device per network card."""
    it = catalog.AWS_INSTANCE_TYPES[pool.instance_types[0]]
    count = interfaces_per_node(pool)

    def nic(card: int, device: int, kind: str) -> dict[str, Any]:
        return {
            "network_card_index": card,
            "device_index": device,
            "interface_type": kind,
            "security_groups": security_groups,
            "delete_on_termination": "true",
        }

    if it.efa_only_secondary:
        # ENA primary, EFA-only device on card 0 and on every further card (EC2 efa-acc-inst-types).
        return [nic(0, 0, "interface"), nic(0, 1, "efa-only"), *(nic(c, 0, "efa-only") for c in range(1, count))]
    return [nic(c, 0 if c == 0 else 1, "efa") for c in range(count)]


def placement_group_name(spec: StackSpec, pool: NodePool) -> str:
    return f"{spec.cluster.name}-{pool.name}-efa"


def security_group_name(spec: StackSpec, pool: NodePool) -> str:
    return f"{spec.cluster.name}-{pool.name}-efa"


def karpenter_class_additions(spec: StackSpec, pool: NodePool) -> dict[str, Any]:
    """What an EFA Karpenter pool's own EC2NodeClass adds ({} otherwise)."""
    if pool.provisioner != "karpenter" or not efa_enabled(spec, pool):
        return {}
    return {
        "placementGroupSelector": {"name": placement_group_name(spec, pool)},
        "securityGroupSelectorTerms": [{"name": security_group_name(spec, pool)}],
    }


def pool_zone(pool: NodePool) -> str | None:
    """The one AZ of a Karpenter pool: ``karpenter.zone``, else its reservation's declared AZ."""
    if pool.karpenter.zone:
        return pool.karpenter.zone
    return pool.reservation.availability_zone if pool.reservation is not None else None


# ------------------------------------------------------------------------------------------- device plugin


DEVICE_PLUGIN_REPOSITORY = "eks/aws-efa-k8s-device-plugin"  # the chart's image path under the EKS registry


def device_plugin_values(spec: StackSpec) -> dict[str, Any]:
    """Values of the aws-efa-k8s-device-plugin chart (upstream/aws-efa-k8s-device-plugin/values.yaml).

    The chart's DaemonSet requires a node label in ``supportedInstanceLabels`` (its node affinity, template
    ``daemonset.yaml``): keyed on the pool label and listing the EFA pools, it runs on their nodes only (not on
    every EFA-capable instance of the cluster). It tolerates exactly those pools' taints (the GPU taint among
    them). It then advertises one ``vpc.amazonaws.com/efa`` per EFA device of the node."""
    pools = sorted(efa_pools(spec), key=lambda p: p.name)
    tolerations: list[dict[str, str]] = []
    for pool in pools:
        for tol in derive.tolerations(pool):
            if tol not in tolerations:
                tolerations.append(tol)
    values: dict[str, Any] = {
        "supportedInstanceLabels": {"keys": [derive.POOL_LABEL], "values": [p.name for p in pools]},
        "tolerations": tolerations,
    }
    registry = EKS_ADDON_REGISTRIES.get(spec.cluster.region or "")
    if registry:
        # The chart pulls from us-west-2 whatever the cluster's Region (values.yaml image.repository): from the
        # cluster's own Region instead, where EKS replicates the image (data/aws_registries.py).
        values["image"] = {"repository": f"{registry}/{DEVICE_PLUGIN_REPOSITORY}"}
    return mirror.chart_values(spec, "efaDevicePlugin", values)  # through the stack's mirror (ECR is not moved)


def summary(decided: Any) -> list[str]:
    """summary.md: each EFA pool's interfaces, placement and what its pods request, from a ``plan.Plan`` (which
    this module cannot import: the plan imports it): its EFA pools (``AwsPlan.efa_pools`` and ``efa_networks``), their
    instance types and the EFA interfaces one node advertises (``PoolPlan.advertises``)."""
    aws = decided.aws
    if aws is None or not aws.efa_pools:
        return []
    lines = [
        "",
        "## EFA (multi-node training network)",
        "",
        f"| pool | instance types | {EFA_RESOURCE} per node | interface layout | placement group |",
        "|---|---|---|---|---|",
    ]
    for name in sorted(aws.efa_pools):
        p = decided.pools[name]
        it = catalog.AWS_INSTANCE_TYPES[p.instance_types[0]]
        if p.provisioner == "karpenter":
            layout = "efa on every card (Karpenter, for pods requesting it)"
        else:
            layout = "ENA primary + efa-only per card" if it.efa_only_secondary else "efa on every card"
        lines.append(
            f"| {name} | {', '.join(p.instance_types)} | {p.advertises[EFA_RESOURCE]} | {layout} | "
            f"{aws.efa_networks[name].placement_group} (cluster) |"
        )
    lines.append("")
    lines.append(
        f"Pods that train across nodes request `{EFA_RESOURCE}` (all of a node's devices) and set "
        "`FI_PROVIDER=efa`; see examples/. The EFA device plugin runs on these pools only."
    )
    return lines


# ------------------------------------------------------------------------------------------------ rules


@rule
def efa(spec: StackSpec) -> Iterator[Problem]:
    for i, pool in enumerate(spec.node_pools):
        at = key("nodePools", i, "efa")
        if spec.cloud != "aws":
            if pool.efa:
                yield Problem(at, f"EFA is an AWS network adapter (cloud is {spec.cloud})")
            continue
        if not efa_enabled(spec, pool):
            continue
        zone, region = pool_zone(pool), spec.cluster.region
        r = pool.reservation
        if pool.provisioner == "karpenter" and zone and region and not zone.startswith(region):
            yield Problem(key("nodePools", i, "karpenter", "zone"), f"{zone} is not in the cluster's region {region}")
        if pool.karpenter.zone and r is not None and r.availability_zone and r.availability_zone != pool.karpenter.zone:
            yield Problem(
                key("nodePools", i, "karpenter", "zone"),
                f"is {pool.karpenter.zone}, but the reservation is in {r.availability_zone}",
            )
        if pool.provisioner == "karpenter" and not zone:
            yield Problem(
                key("nodePools", i, "karpenter", "zone"),
                "is required for an EFA pool: its cluster placement group lives in one AZ (name the AZ, e.g. "
                "us-east-1a, or declare the reservation's availabilityZone)",
            )
        bad = [t for t in pool.instance_types if catalog.aws_instance_type(t) and catalog.aws_efa_interfaces(t) == 0]
        if bad:
            capable = [t.name for t in catalog.aws_instance_types_for(pool.gpu.model) if t.efa_interfaces]
            yield Problem(
                at,
                f"{', '.join(bad)} support{'s' if len(bad) == 1 else ''} no EFA"
                + (f" ({pool.gpu.model} types with EFA: {', '.join(capable)})" if capable else ""),
            )
            continue
        counts = {catalog.aws_efa_interfaces(t) for t in pool.instance_types}
        families = {catalog.AWS_INSTANCE_TYPES[t].efa_only_secondary for t in pool.instance_types}
        if len(counts) > 1 or len(families) > 1:
            yield Problem(
                key("nodePools", i, "instanceTypes"),
                "EFA pools need one network-interface layout: their instance types differ in EFA interfaces "
                f"({', '.join(f'{t}: {catalog.aws_efa_interfaces(t)}' for t in pool.instance_types)})",
            )
        if pool.provisioner == "managed" and len(pool.eks.subnet_ids) != 1:
            why = (
                "EFA is on by default for a topologyAware managed pool of an EFA-capable type"
                if pool.efa is None
                else "efa: true"
            )
            yield Problem(
                key("nodePools", i, "eks", "subnetIds"),
                "an EFA pool is in a cluster placement group, which lives in one AZ: give it exactly one subnet "
                f"(eks.subnetIds), or set efa: false on the pool to go without EFA ({why})",
            )
