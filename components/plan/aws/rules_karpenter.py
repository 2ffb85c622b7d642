"""Karpenter rules: what the NodePools, EC2NodeClasses and the controller's AWS objects need from the
stack file, checked before anything is registered. (Karpenter pools on a non-aws stack and instance
types without NVIDIA GPUs are rejected by ``components/plan/aws/rules.py``; a maxGpus that is not a multiple
of gpu.perNode by ``components/plan/rules_core.py``.)"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ...spec.model import Problem, StackSpec, key, rule
from ...spec.validation import a_or_an
from . import karpenter_nodes as nodes

# Longest suffix added to the prefix: "-karpenter-state-change" / "-karpenter-reservation" (EventBridge
# rule names: at most 64 characters); IAM role names also take at most 64.
MAX_PREFIX = 40
AMI_VERSION = {
    "al2023": (re.compile(r"^v[0-9]{8}$"), "vYYYYMMDD, e.g. v20251120"),
    "bottlerocket": (re.compile(r"^v[0-9]+\.[0-9]+\.[0-9]+$"), "vX.Y.Z, e.g. v1.26.2"),
}
# Tag keys Karpenter reserves on the EC2 objects it launches (EC2NodeClass spec.tags validation).
RESERVED_TAGS = (
    "eks:eks-cluster-name",
    "karpenter.sh/nodepool",
    "karpenter.sh/nodeclaim",
    "karpenter.k8s.aws/ec2nodeclass",
)


@rule
def karpenter(spec: StackSpec) -> Iterator[Problem]:
    if spec.cloud != "aws":
        if "karpenter" in spec.model_fields_set:
            yield Problem(key("karpenter"), f"does not apply when cloud is {spec.cloud}")
        return
    pools = [(i, p) for i, p in enumerate(spec.node_pools) if p.provisioner == "karpenter"]
    if pools and spec.addons.karpenter is False:
        names = ", ".join(p.name for _, p in pools)
        yield Problem(key("addons", "karpenter"), f"is false, but pools {names} are provisioned by Karpenter")
    yield from _pools(spec)
    yield from _shared_node_classes(spec)
    if not spec.karpenter_enabled:
        return
    yield from _stack_options(spec)


def _pools(spec: StackSpec) -> Iterator[Problem]:
    names = {p.name for p in spec.node_pools}
    for i, p in enumerate(spec.node_pools):
        k = p.karpenter
        if p.provisioner != "karpenter":
            if "karpenter" in p.model_fields_set:
                yield Problem(
                    key("nodePools", i, "karpenter"), "applies to karpenter pools only (provisioner: karpenter)"
                )
            continue
        if p.min_nodes:
            yield Problem(
                key("nodePools", i, "minNodes"),
                "karpenter pools scale from zero with demand; use a managed pool for always-on nodes",
            )
        os = p.os or "al2023"
        if k.ami_version != "latest" and os in AMI_VERSION:
            pattern, form = AMI_VERSION[os]
            if not pattern.match(k.ami_version):
                yield Problem(
                    key("nodePools", i, "karpenter", "amiVersion"),
                    f"{k.ami_version!r} is not {a_or_an(os)} AMI release (expected latest or {form})",
                )
        if os == "bottlerocket" and spec.karpenter.instance_store_policy == "RAID0" and _before(k.ami_version, (1, 22)):
            # Karpenter v1.14.1 bootstrap/bottlerocket.go gives every RAID0 class an essential bootstrap command
            # "apiclient ephemeral-storage init"; both arrived in Bottlerocket v1.22.0 (its CHANGELOG: "Add support
            # for bootstrap commands", core-kit v2.4.1 with ephemeral-storage), so an older node fails its boot
            yield Problem(
                key("nodePools", i, "karpenter", "amiVersion"),
                f"{k.ami_version} is a Bottlerocket release before v1.22.0, which has no bootstrap commands or "
                "apiclient ephemeral-storage that karpenter.instanceStorePolicy RAID0 runs at boot: pin v1.22.0 or "
                "later, or set gpu-platform:karpenter.instanceStorePolicy: none",
            )
        if k.on_demand_max_gpus is not None and not k.on_demand_fallback:
            yield Problem(key("nodePools", i, "karpenter", "onDemandMaxGpus"), "needs onDemandFallback: true")
        if not k.on_demand_fallback or p.capacity != "spot":
            continue
        per_node = p.gpu.per_node
        if p.gpu_cap < 2 * per_node:
            yield Problem(
                key("nodePools", i, "karpenter", "onDemandFallback"),
                f"the pool's cap of {p.gpu_cap} GPUs is one node; spot and on-demand NodePools need at least "
                f"one node each ({2 * per_node} GPUs) so that together they stay within the cap",
            )
        od = k.on_demand_max_gpus
        if od is not None:
            at = key("nodePools", i, "karpenter", "onDemandMaxGpus")
            if od % per_node:
                yield Problem(at, f"{od} is not a multiple of gpu.perNode ({per_node})")
            elif od >= p.gpu_cap:
                yield Problem(at, f"{od} leaves none of the pool's {p.gpu_cap} GPUs for spot; use capacity: on-demand")
        fallback = f"{p.name}-on-demand"
        if fallback in names:
            yield Problem(
                key("nodePools", i, "karpenter", "onDemandFallback"),
                f"its on-demand NodePool would be named {fallback!r}, which is another pool's name",
            )


def _before(ami_version: str, release: tuple[int, int]) -> bool:
    """A pinned vX.Y.Z release older than ``release`` (False for latest or a malformed pin, another rule's)."""
    m = re.match(r"^v([0-9]+)\.([0-9]+)\.[0-9]+$", ami_version)
    return m is not None and (int(m[1]), int(m[2])) < release


def _shared_node_classes(spec: StackSpec) -> Iterator[Problem]:
    """Karpenter pools with the same AMI family and disk size share one EC2NodeClass, named without the
    AMI release so that bumping a pin updates the class in place; the class holds one AMI alias, so the
    pools sharing it must pin the same release."""
    first: dict[str, int] = {}  # class name -> index of the first pool using it
    for i, pool in enumerate(spec.node_pools):
        if pool.provisioner != "karpenter":
            continue
        need = nodes.node_class_need(spec, pool)
        j = first.setdefault(need.name, i)
        other = spec.node_pools[j].karpenter.ami_version
        if j != i and other != need.ami_version:
            yield Problem(
                key("nodePools", i, "karpenter", "amiVersion"),
                f"is {need.ami_version!r}, but nodePools[{j}] ({spec.node_pools[j].name}) has {other!r}; both "
                f"pools use EC2NodeClass {need.name} (same os and diskGib), which runs one AMI release: pin the "
                "same amiVersion on both",
            )


def _stack_options(spec: StackSpec) -> Iterator[Problem]:
    k = spec.karpenter
    prefix = k.name_prefix or spec.cluster.name or ""
    if len(prefix) > MAX_PREFIX:
        yield Problem(
            key("karpenter", "namePrefix") if k.name_prefix else key("cluster", "name"),
            f"{prefix!r} is too long to prefix Karpenter's IAM roles and EventBridge rules (at most {MAX_PREFIX} "
            "characters); set gpu-platform:karpenter.namePrefix",
        )
    for field, tags in (("subnetTags", k.subnet_tags), ("securityGroupTags", k.security_group_tags)):
        for name, value in tags.items():
            if not name or not value:
                yield Problem(key("karpenter", field, name), "tag keys and values must not be empty")
            elif len(name) > 128 or len(value) > 256:
                # EC2 tag keys take at most 128 characters and values at most 256 (EC2 user guide, tag
                # restrictions); a selector for a longer tag matches nothing
                yield Problem(
                    key("karpenter", field, name), "AWS tag keys take at most 128 characters and values at most 256"
                )
    for name in spec.tags:
        if name in RESERVED_TAGS or name.startswith("kubernetes.io/cluster"):
            yield Problem(
                key("tags", name), "is reserved by Karpenter on the instances it launches; choose another tag key"
            )
