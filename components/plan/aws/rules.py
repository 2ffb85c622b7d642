"""AWS rules, checked before anything is registered: instance types must carry the declared GPUs, the
AMI family must match their architecture, Karpenter pools exist only on aws, and managed node groups stay
within what the EKS, EC2 and IAM APIs accept (limits listed in ``managed_pools``).

Both EKS NVIDIA AMI families exist for x86_64 and arm64 (``AL2023_ARM_64_NVIDIA``,
``BOTTLEROCKET_ARM_64_NVIDIA``), so an arm64 pool (g5g) may use either; what cannot work is one pool
mixing architectures, since a node group (and a Karpenter NodePool's AMI selection) runs one AMI.
"""

from __future__ import annotations

from collections.abc import Iterator

from ...data import catalog, versions
from ...spec.model import NodePool, Problem, StackSpec, key, rule
from .. import derive
from . import managed_pools as plan

AWS_OS = ("al2023", "bottlerocket")


@rule
def aws_pools(spec: StackSpec) -> Iterator[Problem]:
    for i, pool in enumerate(spec.node_pools):
        if pool.provisioner == "karpenter" and spec.cloud != "aws":
            yield Problem(key("nodePools", i, "provisioner"), f"karpenter pools need cloud aws, not {spec.cloud}")
        if spec.cloud != "aws":
            if "karpenter" in pool.model_fields_set:
                yield Problem(key("nodePools", i, "karpenter"), f"does not apply when cloud is {spec.cloud}")
            continue
        if "gke" in pool.model_fields_set:
            yield Problem(key("nodePools", i, "gke"), "does not apply when cloud is aws")
        if pool.os is not None and pool.os not in AWS_OS:
            yield Problem(key("nodePools", i, "os"), f"must be one of {', '.join(AWS_OS)} on aws")
        if not pool.instance_types:
            yield Problem(
                key("nodePools", i, "instanceTypes"), f"needs at least one instance type on aws{_fitting_hint(pool)}"
            )
        arches = set()
        for j, name in enumerate(pool.instance_types):
            it = catalog.aws_instance_type(name)
            at = key("nodePools", i, "instanceTypes", j)
            if it is None:
                yield Problem(at, f"{name!r} is not a known NVIDIA GPU instance type{_family_hint(name)}")
                continue
            arches.add(it.arch)
            if it.gpu_model != pool.gpu.model:
                yield Problem(at, f"{name} carries {it.gpu_model}, not {pool.gpu.model}{_fitting_hint(pool)}")
            elif it.gpu_count != pool.gpu.per_node:
                gpus = f"{it.gpu_count} GPU{'s' if it.gpu_count > 1 else ''}"
                yield Problem(at, f"{name} has {gpus}, but gpu.perNode is {pool.gpu.per_node}{_fitting_hint(pool)}")
        if len(arches) > 1:
            yield Problem(
                key("nodePools", i, "instanceTypes"),
                "mixes x86_64 and arm64 instance types; one pool runs one AMI architecture",
            )
        if len(set(pool.instance_types)) != len(pool.instance_types):
            yield Problem(key("nodePools", i, "instanceTypes"), "lists an instance type twice")


@rule
def cluster_autoscaler(spec: StackSpec) -> Iterator[Problem]:
    """Managed node groups change size only through the Cluster Autoscaler
    (components/render/aws/cluster_autoscaler.py): with it off, a pool at minNodes 0 never gets a node."""
    if spec.cloud != "aws":
        if spec.addons.cluster_autoscaler:
            yield Problem(
                key("addons", "clusterAutoscaler"),
                f"applies to EKS managed node groups only (cloud aws, not {spec.cloud})",
            )
        return
    version = spec.cluster.kubernetes_version
    if spec.cluster_autoscaler_enabled and version and version not in versions.CLUSTER_AUTOSCALER_IMAGE_TAGS:
        yield Problem(
            key("cluster", "kubernetesVersion"),
            f"no Cluster Autoscaler release is pinned for Kubernetes {version} (upstream supports only the "
            f"matching minor; pinned: {', '.join(versions.CLUSTER_AUTOSCALER_IMAGE_TAGS)})",
        )
    if spec.cluster_autoscaler_enabled:
        for i, pool in enumerate(spec.node_pools):
            if pool.provisioner == "managed" and plan.ACCELERATOR_LABEL in pool.labels:
                # set by gpu-platform where safe, and unsafe elsewhere (managed_pools.carries_accelerator_label)
                yield Problem(
                    key("nodePools", i, "labels", plan.ACCELERATOR_LABEL),
                    "is the Cluster Autoscaler's GPU label, which gpu-platform sets on pools whose nodes advertise "
                    f"nvidia.com/gpu ({plan.accelerator_type(pool)}) and keeps off the others (the autoscaler would "
                    "hold their nodes for unready); drop it",
                )
        return
    for i, pool in enumerate(spec.node_pools):
        if pool.provisioner == "managed" and pool.min_nodes == 0:
            yield Problem(
                key("nodePools", i, "minNodes"),
                f"is 0, but {key('addons', 'clusterAutoscaler')} is false: nothing would ever add a node to this "
                "managed node group. Turn the autoscaler on, or set minNodes to the nodes the pool should keep",
            )


@rule
def device_plugin(spec: StackSpec) -> Iterator[Problem]:
    """Something must advertise nvidia.com/gpu on every pool. The EKS AL2023 NVIDIA AMIs carry the driver
    and the container toolkit but no Kubernetes device plugin (EKS user guide, "Install Kubernetes device
    plugin for GPUs"): without the GPU Operator their GPUs stay invisible to the scheduler. Bottlerocket's
    NVIDIA variants run the device plugin on the host."""
    if spec.cloud != "aws" or spec.addons.gpu_operator:
        return
    pools = [p.name for p in spec.node_pools if derive.pool_device_plugin(spec, p) == "operator"]
    if pools:
        named = f"pool{'s' if len(pools) > 1 else ''} {', '.join(pools)}"
        yield Problem(
            key("addons", "gpuOperator"),
            f"is false, but the AL2023 NVIDIA AMI ships no Kubernetes device plugin: {named} would advertise no "
            "nvidia.com/gpu. Enable the GPU Operator, or run those pools with os: bottlerocket (its host runs the "
            "device plugin)",
        )


def _family_hint(name: str) -> str:
    """`` (g6 sizes: g6.xlarge, ...)`` when the name is a wrong size of a catalogued GPU family."""
    family = name.split(".", 1)[0]
    sizes = [t.name for t in catalog.AWS_INSTANCE_TYPES.values() if t.family == family]
    return f" ({family} sizes: {', '.join(sizes)})" if sizes else ""


def _fitting_hint(pool: NodePool) -> str:
    """`` (H100 with 8 per node: p5.48xlarge)``: the instance types that do match the pool's gpu."""
    fits = [t.name for t in catalog.aws_instance_types_for(pool.gpu.model) if t.gpu_count == pool.gpu.per_node]
    if not fits:
        counts = sorted({t.gpu_count for t in catalog.aws_instance_types_for(pool.gpu.model)})
        if not counts:
            return f" (no AWS instance type carries {pool.gpu.model})"
        return f" (AWS offers {pool.gpu.model} with {', '.join(map(str, counts))} per node)"
    return f" ({pool.gpu.model} with {pool.gpu.per_node} per node: {', '.join(fits)})"


@rule
def eks_managed_node_groups(spec: StackSpec) -> Iterator[Problem]:
    """Settings of EKS managed node groups, and what the EKS / IAM / EC2 APIs would reject."""
    if spec.cloud != "aws":
        if spec.cluster.subnet_ids:
            yield Problem(key("cluster", "subnetIds"), f"does not apply when cloud is {spec.cloud}")
        for i, pool in enumerate(spec.node_pools):
            if "eks" in pool.model_fields_set:
                yield Problem(key("nodePools", i, "eks"), f"does not apply when cloud is {spec.cloud}")
        return
    managed = plan.managed_pools(spec)
    if spec.cluster.subnet_ids and not managed:
        yield Problem(
            key("cluster", "subnetIds"),
            "only managed pools use it (no pool has provisioner: managed; Karpenter pools take karpenter.subnetIds)",
        )
    yield from _duplicates(spec.cluster.subnet_ids, ("cluster", "subnetIds"), "subnet")
    for i, pool in enumerate(spec.node_pools):
        if pool.provisioner != "managed":
            if "eks" in pool.model_fields_set:
                yield Problem(key("nodePools", i, "eks"), "applies to managed pools only (provisioner: managed)")
            continue
        yield from _duplicates(pool.eks.subnet_ids, ("nodePools", i, "eks", "subnetIds"), "subnet")
        yield from _node_group_limits(spec, i, pool)
    if managed and spec.cluster.name:
        role = plan.node_role_name(spec)
        if len(role) > plan.IAM_ROLE_NAME_MAX:
            yield Problem(
                key("cluster", "name"),
                f"the managed node groups' IAM role would be {role!r} ({len(role)} characters); "
                f"IAM role names take at most {plan.IAM_ROLE_NAME_MAX}",
            )
    if spec.cluster_autoscaler_enabled and spec.cluster.name:
        role = autoscaler_role_name(spec)
        if len(role) > plan.IAM_ROLE_NAME_MAX:
            yield Problem(
                key("cluster", "name"),
                f"the Cluster Autoscaler's IAM role would be {role!r} ({len(role)} characters); IAM role names take "
                f"at most {plan.IAM_ROLE_NAME_MAX} (shorten the cluster name or set addons.clusterAutoscaler: false)",
            )
    yield from _tags(spec)


def autoscaler_role_name(spec: StackSpec) -> str:
    """components/aws/cluster_autoscaler.role_name, without importing the Pulumi SDK into validation
    (tests/test_hostile_stacks.py asserts both agree)."""
    return f"{spec.cluster.name}-cluster-autoscaler"


def _duplicates(items: list[str], at: tuple[str | int, ...], what: str) -> Iterator[Problem]:
    seen: set[str] = set()
    for j, item in enumerate(items):
        if item in seen:
            yield Problem(key(*at, j), f"lists {what} {item} twice")
        seen.add(item)


def _node_group_limits(spec: StackSpec, i: int, pool: NodePool) -> Iterator[Problem]:
    at = ("nodePools", i)
    for field, value in (
        ("maxNodes", pool.max_nodes),
        ("minNodes", pool.min_nodes),
        ("desiredNodes", pool.desired_nodes),
    ):
        if value is not None and value > plan.EKS_MAX_NODES:
            yield Problem(
                key(*at, field), f"an EKS managed node group takes at most {plan.EKS_MAX_NODES} nodes, got {value}"
            )
    if len(pool.instance_types) > plan.EKS_MAX_INSTANCE_TYPES:
        yield Problem(
            key(*at, "instanceTypes"),
            f"an EKS managed node group takes at most {plan.EKS_MAX_INSTANCE_TYPES} instance types",
        )
    for name, value in pool.labels.items():
        if len(name) > plan.EKS_LABEL_MAX:
            yield Problem(
                key(*at, "labels", name),
                f"EKS node group label keys take at most {plan.EKS_LABEL_MAX} characters, prefix included "
                f"(this one has {len(name)})",
            )
        elif len(f"{plan.CA_TEMPLATE}/label/{name}") > plan.AWS_TAG_KEY_MAX:
            yield Problem(
                key(*at, "labels", name),
                f"too long for its Cluster Autoscaler tag {plan.CA_TEMPLATE}/label/<key> "
                f"(AWS tag keys: at most {plan.AWS_TAG_KEY_MAX} characters)",
            )
        if not 1 <= len(value) <= plan.EKS_LABEL_MAX:
            yield Problem(
                key(*at, "labels", name), f"EKS node group label values take 1 to {plan.EKS_LABEL_MAX} characters"
            )
    for j, taint in enumerate(pool.taints):
        if len(taint.key) > plan.EKS_TAINT_MAX:
            yield Problem(
                key(*at, "taints", j, "key"),
                f"EKS node group taint keys take at most {plan.EKS_TAINT_MAX} characters (this one has "
                f"{len(taint.key)})",
            )
        if taint.value is not None and len(taint.value) > plan.EKS_TAINT_MAX:
            yield Problem(
                key(*at, "taints", j, "value"),
                f"EKS node group taint values take at most {plan.EKS_TAINT_MAX} characters",
            )
    taints = len(plan.eks_taints(pool))
    if taints > plan.EKS_MAX_TAINTS:
        yield Problem(
            key(*at, "taints"),
            f"the node group would carry {taints} taints (with the GPU taint); EKS allows {plan.EKS_MAX_TAINTS}",
        )
    tags = plan.node_group_tags(spec, pool)
    if len(tags) > plan.EKS_MAX_TAGS:
        yield Problem(
            key(*at),
            f"its node group would carry {len(tags)} tags (gpu-platform:tags, plus one Cluster Autoscaler tag per "
            f"label, taint and GPU resource); EKS allows {plan.EKS_MAX_TAGS}: drop labels or stack tags",
        )
    if len(plan.launch_template_name(spec, pool)) > 128:
        yield Problem(
            key(*at, "name"),
            f"the launch template name {plan.launch_template_name(spec, pool)!r} would exceed 128 characters",
        )


def _tags(spec: StackSpec) -> Iterator[Problem]:
    for name, value in spec.tags.items():
        if name.lower().startswith("aws:"):
            yield Problem(key("tags", name), "the aws: prefix is reserved for AWS' own tags")
        if len(name) > plan.AWS_TAG_KEY_MAX:
            yield Problem(key("tags", name), f"AWS tag keys take at most {plan.AWS_TAG_KEY_MAX} characters")
        if len(value) > plan.AWS_TAG_VALUE_MAX:
            yield Problem(key("tags", name), f"AWS tag values take at most {plan.AWS_TAG_VALUE_MAX} characters")
