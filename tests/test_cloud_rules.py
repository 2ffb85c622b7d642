"""The AWS, Karpenter and GKE rules one at a time: each rule is called directly on a parsed (unchecked) spec, so
a test sees exactly that rule's problems, each pinned to its key path and full message, with both sides of every
limit (the last accepted value and the first refused one).

Limits come from the APIs the rules guard (documented in components/plan/aws/managed_pools.py and gcp/gke.py): EKS
node groups take at most 450 nodes, 20 instance types, 50 taints, 50 tags, label keys/values and taint
keys/values of 63 characters; AWS tag keys 128 and values 256 characters; IAM role names 64 characters; launch
template names 128 characters; EventBridge rule names 64 characters (hence Karpenter's 40-character prefix);
GKE takes 1000 nodes per pool zone.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from conftest import stack_config

from components.plan.aws import rules as aws_rules, rules_karpenter
from components.plan.gcp import rules as gke_rules
from components.spec.model import parse_spec

POOLS = "gpu-platform:nodePools"


def run(rule, cfg: dict[str, Any]) -> list[tuple[str, str]]:
    """(key path, message) of one rule's problems, in the order the rule yields them."""
    return [(p.path, p.message) for p in rule(parse_spec(cfg))]


def dev_aws(pool: int = 0, **fields: Any) -> dict[str, Any]:
    """dev-aws (0: managed l4-shared g6.xlarge/g6.2xlarge, 1: karpenter a10g-spot) with one pool's fields set."""
    cfg = stack_config("dev-aws")
    cfg[POOLS][pool].update(copy.deepcopy(fields))
    return cfg


# ------------------------------------------------------------------------------------------ aws_pools


def test_shipped_stacks_pass_every_cloud_rule():
    """The baseline the other tests change one field of: no cloud rule speaks on a shipped stack (a rule that
    fires on valid input, e.g. a flipped comparison, fails here)."""
    rules = (
        aws_rules.aws_pools,
        aws_rules.cluster_autoscaler,
        aws_rules.device_plugin,
        aws_rules.eks_managed_node_groups,
        rules_karpenter.karpenter,
        gke_rules.gke_stack,
        gke_rules.gke_pools,
        gke_rules.gpudirect,
    )
    for stack in ("dev-aws", "prod-aws", "dev-gcp", "prod-gcp"):
        for rule in rules:
            assert run(rule, stack_config(stack)) == [], (stack, rule.__name__)


def test_karpenter_settings_on_a_gcp_pool_are_reported_for_every_pool():
    """On gcp a karpenter provisioner and a karpenter block are each refused, on whichever pool they sit (the
    rule moves on to the next pool rather than stopping), and no AWS instance-type check runs on GKE machines."""
    cfg = stack_config("prod-gcp")
    cfg[POOLS][1]["provisioner"] = "karpenter"
    cfg[POOLS][3]["karpenter"] = {"consolidateAfter": "5m"}
    assert run(aws_rules.aws_pools, cfg) == [
        (f"{POOLS}[1].provisioner", "karpenter pools need cloud aws, not gcp"),
        (f"{POOLS}[3].karpenter", "does not apply when cloud is gcp"),
    ]


def test_gke_block_and_missing_instance_types_on_aws():
    """A gke block on an aws pool is refused, and an aws pool must list an instance type."""
    assert run(aws_rules.aws_pools, dev_aws(gke={"compactPlacement": True})) == [
        (f"{POOLS}[0].gke", "does not apply when cloud is aws")
    ]
    assert run(aws_rules.aws_pools, dev_aws(instanceTypes=[])) == [
        (
            f"{POOLS}[0].instanceTypes",
            "needs at least one instance type on aws (L4 with 1 per node: g6.xlarge, g6.2xlarge, g6.4xlarge, "
            "g6.8xlarge, g6.16xlarge)",
        )
    ]


def test_gpu_count_message_and_the_offered_counts_hint():
    """Two GPUs are plural; when no size carries perNode GPUs the hint lists the counts AWS does offer."""
    assert run(aws_rules.aws_pools, dev_aws(gpu={"model": "T4", "perNode": 1}, instanceTypes=["g5g.16xlarge"])) == [
        (
            f"{POOLS}[0].instanceTypes[0]",
            "g5g.16xlarge has 2 GPUs, but gpu.perNode is 1 (T4 with 1 per node: g4dn.xlarge, g4dn.2xlarge, "
            "g4dn.4xlarge, g4dn.8xlarge, g4dn.16xlarge, g5g.xlarge, g5g.2xlarge, g5g.4xlarge, g5g.8xlarge)",
        )
    ]
    assert run(aws_rules.aws_pools, dev_aws(gpu={"model": "A10G", "perNode": 2}, instanceTypes=["g5.xlarge"])) == [
        (
            f"{POOLS}[0].instanceTypes[0]",
            "g5.xlarge has 1 GPU, but gpu.perNode is 2 (AWS offers A10G with 1, 4, 8 per node)",
        )
    ]


def test_unknown_type_outside_any_catalogued_family_gets_no_hint():
    """A name whose family gpu-platform does not know is reported without a list of sizes."""
    assert run(aws_rules.aws_pools, dev_aws(instanceTypes=["m5.large"])) == [
        (f"{POOLS}[0].instanceTypes[0]", "'m5.large' is not a known NVIDIA GPU instance type")
    ]


def test_repeated_instance_type():
    """A type listed twice is reported once, on the list."""
    assert run(aws_rules.aws_pools, dev_aws(instanceTypes=["g6.xlarge", "g6.2xlarge", "g6.xlarge"])) == [
        (f"{POOLS}[0].instanceTypes", "lists an instance type twice")
    ]


# --------------------------------------------------------------------------------- cluster_autoscaler


def test_cluster_autoscaler_switch_on_gcp():
    """addons.clusterAutoscaler is an EKS setting: turning it on for gcp is refused, leaving it off is not."""
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:addons"]["clusterAutoscaler"] = True
    assert run(aws_rules.cluster_autoscaler, cfg) == [
        ("gpu-platform:addons.clusterAutoscaler", "applies to EKS managed node groups only (cloud aws, not gcp)")
    ]
    cfg["gpu-platform:addons"]["clusterAutoscaler"] = False
    assert run(aws_rules.cluster_autoscaler, cfg) == []


def test_own_accelerator_label_on_a_managed_pool():
    """With the autoscaler on, a managed pool may not set k8s.amazonaws.com/accelerator itself; a Karpenter
    pool may (the autoscaler never sees its nodes)."""
    cfg = dev_aws(labels={"k8s.amazonaws.com/accelerator": "nvidia-l4"})
    cfg[POOLS][1]["labels"] = {"k8s.amazonaws.com/accelerator": "nvidia-a10g"}
    assert run(aws_rules.cluster_autoscaler, cfg) == [
        (
            f"{POOLS}[0].labels.k8s.amazonaws.com/accelerator",
            "is the Cluster Autoscaler's GPU label, which gpu-platform sets on pools whose nodes advertise "
            "nvidia.com/gpu (nvidia-l4) and keeps off the others (the autoscaler would hold their nodes for "
            "unready); drop it",
        )
    ]


def test_autoscaler_off_needs_managed_pools_above_zero():
    """Without the autoscaler a managed pool at minNodes 0 never gets a node; minNodes 1 is fine, and Karpenter
    pools (which start at 0) are not concerned."""
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:addons"]["clusterAutoscaler"] = False
    assert run(aws_rules.cluster_autoscaler, cfg) == [
        (
            f"{POOLS}[0].minNodes",
            "is 0, but gpu-platform:addons.clusterAutoscaler is false: nothing would ever add a node to this managed "
            "node group. Turn the autoscaler on, or set minNodes to the nodes the pool should keep",
        )
    ]
    cfg[POOLS][0]["minNodes"] = 1
    assert run(aws_rules.cluster_autoscaler, cfg) == []


# ------------------------------------------------------------------------------------- device_plugin


def test_device_plugin_message_names_the_al2023_pools():
    """With the GPU Operator off, every AL2023 pool is named (plural, comma-separated; singular for one)."""
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:addons"]["gpuOperator"] = False
    tail = (
        " would advertise no nvidia.com/gpu. Enable the GPU Operator, or run those pools with os: bottlerocket "
        "(its host runs the device plugin)"
    )
    head = "is false, but the AL2023 NVIDIA AMI ships no Kubernetes device plugin: "
    assert run(aws_rules.device_plugin, cfg) == [
        ("gpu-platform:addons.gpuOperator", head + "pools l4-shared, a10g-spot" + tail)
    ]
    cfg[POOLS][0]["os"] = "bottlerocket"
    assert run(aws_rules.device_plugin, cfg) == [("gpu-platform:addons.gpuOperator", head + "pool a10g-spot" + tail)]


def test_device_plugin_rule_is_aws_only():
    """GKE runs its own device plugin: a gcp stack without the GPU Operator is not this rule's concern."""
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:addons"]["gpuOperator"] = False
    assert run(aws_rules.device_plugin, cfg) == []


# --------------------------------------------------------------------------- eks_managed_node_groups


def test_node_count_limit():
    """450 nodes per managed node group: 450 passes, 451 is refused, for each of maxNodes, minNodes and
    desiredNodes (reported in that order)."""
    ok = dev_aws(maxNodes=450, minNodes=450, desiredNodes=450)
    assert run(aws_rules.eks_managed_node_groups, ok) == []
    over = dev_aws(maxNodes=451, minNodes=451, desiredNodes=451)
    assert run(aws_rules.eks_managed_node_groups, over) == [
        (f"{POOLS}[0].{field}", "an EKS managed node group takes at most 450 nodes, got 451")
        for field in ("maxNodes", "minNodes", "desiredNodes")
    ]
    assert run(aws_rules.eks_managed_node_groups, dev_aws(maxNodes=451, minNodes=0)) == [
        (f"{POOLS}[0].maxNodes", "an EKS managed node group takes at most 450 nodes, got 451")
    ]


def test_instance_type_count_limit():
    """20 instance types pass, 21 are refused."""
    assert run(aws_rules.eks_managed_node_groups, dev_aws(instanceTypes=["g6.xlarge"] * 20)) == []
    assert run(aws_rules.eks_managed_node_groups, dev_aws(instanceTypes=["g6.xlarge"] * 21)) == [
        (f"{POOLS}[0].instanceTypes", "an EKS managed node group takes at most 20 instance types")
    ]


def test_label_key_and_value_limits():
    """Label keys up to 63 characters pass, 64 are refused; values take 1 to 63 (a longer value is already
    refused when the stack file is parsed, as Kubernetes refuses it)."""
    k63, k64 = "example.com/" + "k" * 51, "example.com/" + "k" * 52
    assert run(aws_rules.eks_managed_node_groups, dev_aws(labels={k63: "v" * 63, "one": "v"})) == []
    assert run(aws_rules.eks_managed_node_groups, dev_aws(labels={k64: "v", "empty": ""})) == [
        (
            f"{POOLS}[0].labels.{k64}",
            "EKS node group label keys take at most 63 characters, prefix included (this one has 64)",
        ),
        (f"{POOLS}[0].labels.empty", "EKS node group label values take 1 to 63 characters"),
    ]


def test_taint_key_and_value_limits():
    """Taint keys up to 63 characters (prefix included) pass, 64 are refused; values up to 63 pass and a taint
    without value is fine (a longer value is refused when parsing, as Kubernetes refuses it)."""
    ok = [
        {"key": "example.com/" + "k" * 51, "value": "v" * 63, "effect": "NoSchedule"},
        {"key": "novalue", "effect": "NoExecute"},
    ]
    assert run(aws_rules.eks_managed_node_groups, dev_aws(taints=ok)) == []
    bad = [{"key": "example.com/" + "k" * 52, "value": "v", "effect": "NoSchedule"}]
    assert run(aws_rules.eks_managed_node_groups, dev_aws(taints=bad)) == [
        (f"{POOLS}[0].taints[0].key", "EKS node group taint keys take at most 63 characters (this one has 64)"),
    ]


def test_taint_count_limit_counts_the_gpu_taint():
    """EKS allows 50 taints: 49 own plus the GPU taint pass, 50 own plus the GPU taint are refused.

    (Each taint also becomes a Cluster Autoscaler tag, so the tag limit speaks too: its count is checked by
    test_tag_count_limit; here only the taint problem is looked at.)"""

    def taints(n: int) -> list[dict[str, str]]:
        return [{"key": f"t{i}", "effect": "NoSchedule"} for i in range(n)]

    at = f"{POOLS}[0].taints"
    assert [p for p in run(aws_rules.eks_managed_node_groups, dev_aws(taints=taints(49))) if p[0] == at] == []
    assert [p for p in run(aws_rules.eks_managed_node_groups, dev_aws(taints=taints(50))) if p[0] == at] == [
        (at, "the node group would carry 51 taints (with the GPU taint); EKS allows 50")
    ]


def test_tag_count_limit():
    """50 node group tags pass, 51 are refused. l4-shared without own labels carries 13 tags (test_aws_nodegroups
    counts 53 with 40 labels): environment, team, managed-by, gpu-platform/pool, the autoscaler's enabled and
    cluster tags, 5 label tags, the GPU taint tag, 2 resource tags (nvidia.com/gpu and gpu.shared); each own label
    adds one."""

    def labels(n: int) -> dict[str, str]:
        return {f"label-{i:02d}": "x" for i in range(n)}

    assert run(aws_rules.eks_managed_node_groups, dev_aws(labels=labels(37))) == []
    assert run(aws_rules.eks_managed_node_groups, dev_aws(labels=labels(38))) == [
        (
            f"{POOLS}[0]",
            "its node group would carry 51 tags (gpu-platform:tags, plus one Cluster Autoscaler tag per label, "
            "taint and GPU resource); EKS allows 50: drop labels or stack tags",
        )
    ]


def test_launch_template_name_limit():
    """<cluster>-gpu-<pool> may be 128 characters, not 129 (a 100-character cluster name, the most the stack file
    takes, + '-gpu-' + a 23- or 24-character pool name)."""
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:cluster"]["name"] = "c" * 100
    at = f"{POOLS}[0].name"
    cfg[POOLS][0]["name"] = "p" * 23
    assert [p for p in run(aws_rules.eks_managed_node_groups, cfg) if p[0] == at] == []
    cfg[POOLS][0]["name"] = "p" * 24
    assert [p for p in run(aws_rules.eks_managed_node_groups, cfg) if p[0] == at] == [
        (at, f"the launch template name {'c' * 100 + '-gpu-' + 'p' * 24!r} would exceed 128 characters")
    ]


def test_iam_role_name_limits():
    """Node role <cluster>-gpu-node (name + 9) and autoscaler role <cluster>-cluster-autoscaler (name + 19) take
    at most 64 characters: 64 passes, 65 is refused, each with its own message."""
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:cluster"]["name"] = "c" * 45  # autoscaler role 64, node role 54
    assert run(aws_rules.eks_managed_node_groups, cfg) == []
    cfg["gpu-platform:cluster"]["name"] = "c" * 46
    assert run(aws_rules.eks_managed_node_groups, cfg) == [
        (
            "gpu-platform:cluster.name",
            f"the Cluster Autoscaler's IAM role would be {'c' * 46 + '-cluster-autoscaler'!r} (65 characters); IAM "
            "role names take at most 64 (shorten the cluster name or set addons.clusterAutoscaler: false)",
        )
    ]
    cfg["gpu-platform:addons"]["clusterAutoscaler"] = False
    cfg["gpu-platform:cluster"]["name"] = "c" * 55  # node role 64
    assert run(aws_rules.eks_managed_node_groups, cfg) == []
    cfg["gpu-platform:cluster"]["name"] = "c" * 56
    assert run(aws_rules.eks_managed_node_groups, cfg) == [
        (
            "gpu-platform:cluster.name",
            f"the managed node groups' IAM role would be {'c' * 56 + '-gpu-node'!r} (65 characters); IAM role names "
            "take at most 64",
        )
    ]


def test_stack_tag_limits():
    """The aws: prefix is reserved in any case; tag keys take 128 characters and values 256."""
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:tags"] = {"k" * 128: "v" * 256}
    assert run(aws_rules.eks_managed_node_groups, cfg) == []
    cfg["gpu-platform:tags"] = {"AWS:owner": "me", "k" * 129: "v", "long": "v" * 257}
    assert run(aws_rules.eks_managed_node_groups, cfg) == [
        ("gpu-platform:tags.AWS:owner", "the aws: prefix is reserved for AWS' own tags"),
        (f"gpu-platform:tags.{'k' * 129}", "AWS tag keys take at most 128 characters"),
        ("gpu-platform:tags.long", "AWS tag values take at most 256 characters"),
    ]


def test_node_group_rules_do_not_apply_to_gcp_settings():
    """On gcp only the misplaced aws settings are reported; tags and pools are not held to AWS limits."""
    cfg = stack_config("prod-gcp")
    cfg["gpu-platform:tags"]["aws:owner"] = "me"
    cfg[POOLS][0]["maxNodes"] = 451
    assert run(aws_rules.eks_managed_node_groups, cfg) == []


# ------------------------------------------------------------------------------------------ karpenter

KARPENTER = f"{POOLS}[1].karpenter"


def karpenter_problems(cfg: dict[str, Any]) -> list[tuple[str, str]]:
    return run(rules_karpenter.karpenter, cfg)


def test_karpenter_switched_off_with_karpenter_pools():
    """addons.karpenter: false while pools need Karpenter names every such pool, comma-separated."""
    cfg = dev_aws(0, provisioner="karpenter", minNodes=0)
    cfg["gpu-platform:addons"]["karpenter"] = False
    assert karpenter_problems(cfg) == [
        ("gpu-platform:addons.karpenter", "is false, but pools l4-shared, a10g-spot are provisioned by Karpenter")
    ]


def test_karpenter_block_on_a_managed_pool():
    """A karpenter block on a managed pool is refused; on a karpenter pool it is the pool's settings."""
    assert karpenter_problems(dev_aws(0, karpenter={"consolidateAfter": "5m"})) == [
        (f"{POOLS}[0].karpenter", "applies to karpenter pools only (provisioner: karpenter)")
    ]
    assert karpenter_problems(dev_aws(1, karpenter={"consolidateAfter": "5m"})) == []


def test_karpenter_pool_with_min_nodes():
    """Karpenter pools start empty: minNodes 1 is refused (minNodes 0 is the shipped dev stack)."""
    assert karpenter_problems(dev_aws(1, minNodes=1)) == [
        (
            f"{POOLS}[1].minNodes",
            "karpenter pools scale from zero with demand; use a managed pool for always-on nodes",
        )
    ]


@pytest.mark.parametrize(
    ("os", "version", "message"),
    [
        (None, "latest", None),
        (None, "v20251120", None),
        ("al2023", "v20251120", None),
        (None, "v2025112", "'v2025112' is not an al2023 AMI release (expected latest or vYYYYMMDD, e.g. v20251120)"),
        (
            "al2023",
            "v202511201",
            "'v202511201' is not an al2023 AMI release (expected latest or vYYYYMMDD, e.g. v20251120)",
        ),
        ("bottlerocket", "latest", None),
        ("bottlerocket", "v1.26.2", None),
        (
            "bottlerocket",
            "v1.26",
            "'v1.26' is not a bottlerocket AMI release (expected latest or vX.Y.Z, e.g. v1.26.2)",
        ),
        (
            "bottlerocket",
            "v1.26.2.1",
            "'v1.26.2.1' is not a bottlerocket AMI release (expected latest or vX.Y.Z, e.g. v1.26.2)",
        ),
        (
            "bottlerocket",
            "v20251120",
            "'v20251120' is not a bottlerocket AMI release (expected latest or vX.Y.Z, e.g. v1.26.2)",
        ),
    ],
)
def test_ami_version_forms(os, version, message):
    """amiVersion is latest or a release in the AMI family's own form (whole string): AL2023 vYYYYMMDD,
    Bottlerocket vX.Y.Z; a pool without os is AL2023."""
    fields: dict[str, Any] = {"karpenter": {"amiVersion": version}}
    if os:
        fields["os"] = os
    expected = [] if message is None else [(f"{KARPENTER}.amiVersion", message)]
    assert karpenter_problems(dev_aws(1, **fields)) == expected


def test_on_demand_max_needs_the_fallback():
    """onDemandMaxGpus without onDemandFallback is refused (and nothing else is checked for it)."""
    assert karpenter_problems(dev_aws(1, karpenter={"onDemandMaxGpus": 2})) == [
        (f"{KARPENTER}.onDemandMaxGpus", "needs onDemandFallback: true")
    ]


def test_fallback_needs_room_for_two_nodes():
    """A spot pool with fallback needs a cap of at least two nodes' GPUs: 2 x 1 GPU passes, 1 is refused."""
    assert karpenter_problems(dev_aws(1, maxGpus=2, karpenter={"onDemandFallback": True})) == []
    assert karpenter_problems(dev_aws(1, maxGpus=1, karpenter={"onDemandFallback": True})) == [
        (
            f"{KARPENTER}.onDemandFallback",
            "the pool's cap of 1 GPUs is one node; spot and on-demand NodePools need at least one node each "
            "(2 GPUs) so that together they stay within the cap",
        )
    ]


def test_fallback_settings_are_ignored_on_an_on_demand_pool():
    """An on-demand pool has no spot NodePool to fall back from: the cap and split checks do not apply."""
    cfg = dev_aws(1, capacity="on-demand", maxGpus=1, karpenter={"onDemandFallback": True, "onDemandMaxGpus": 1})
    assert karpenter_problems(cfg) == []


def test_on_demand_share_must_be_whole_nodes_and_leave_spot_room():
    """On prod-aws' h100-spot (8 per node, 32 GPUs): 24 passes, 12 is not whole nodes, 32 leaves no spot."""
    cfg = stack_config("prod-aws")
    k = cfg[POOLS][2]["karpenter"]
    at = f"{POOLS}[2].karpenter.onDemandMaxGpus"
    k["onDemandMaxGpus"] = 24
    assert karpenter_problems(cfg) == []
    k["onDemandMaxGpus"] = 12
    assert karpenter_problems(cfg) == [(at, "12 is not a multiple of gpu.perNode (8)")]
    k["onDemandMaxGpus"] = 32
    assert karpenter_problems(cfg) == [(at, "32 leaves none of the pool's 32 GPUs for spot; use capacity: on-demand")]


def test_fallback_nodepool_name_taken():
    """The fallback NodePool is <pool>-on-demand; another pool of that name is refused."""
    cfg = dev_aws(1, karpenter={"onDemandFallback": True})
    cfg[POOLS][0]["name"] = "a10g-spot-on-demand"
    assert karpenter_problems(cfg) == [
        (
            f"{KARPENTER}.onDemandFallback",
            "its on-demand NodePool would be named 'a10g-spot-on-demand', which is another pool's name",
        )
    ]


def test_pools_sharing_a_node_class_pin_one_release():
    """Two karpenter pools with the same os and disk (the default 200 GiB) share EC2NodeClass
    gpu-al2023-200gib: the later one is
    told which earlier pool pins what; the same pin on both is fine."""
    cfg = stack_config("dev-aws")
    second = {**cfg[POOLS][1], "name": "a10g-b", "karpenter": {"amiVersion": "v20251209"}}
    cfg[POOLS].append(second)
    assert karpenter_problems(cfg) == [
        (
            f"{POOLS}[2].karpenter.amiVersion",
            "is 'v20251209', but nodePools[1] (a10g-spot) has 'latest'; both pools use EC2NodeClass "
            "gpu-al2023-200gib (same os and diskGib), which runs one AMI release: pin the same amiVersion on both",
        )
    ]
    second["karpenter"] = {"amiVersion": "latest"}
    assert karpenter_problems(cfg) == []


def test_name_prefix_length():
    """Karpenter's names are prefixed with namePrefix, else the cluster name: 40 characters pass, 41 are refused,
    reported on the cluster name (a namePrefix over 40 characters is refused when parsing)."""
    message = (
        "{!r} is too long to prefix Karpenter's IAM roles and EventBridge rules (at most 40 characters); set "
        "gpu-platform:karpenter.namePrefix"
    )
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:cluster"]["name"] = "c" * 40
    assert karpenter_problems(cfg) == []
    cfg["gpu-platform:cluster"]["name"] = "c" * 41
    assert karpenter_problems(cfg) == [("gpu-platform:cluster.name", message.format("c" * 41))]
    cfg["gpu-platform:karpenter"] = {"namePrefix": "p" * 40}  # the prefix replaces the long cluster name
    assert karpenter_problems(cfg) == []


@pytest.mark.parametrize("field", ["subnetTags", "securityGroupTags"])
def test_selector_tags(field):
    """Subnet and security-group selector tags: empty keys or values and EC2's 128 / 256 limits."""
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:karpenter"] = {field: {"k" * 128: "v" * 256}}
    assert karpenter_problems(cfg) == []
    cfg["gpu-platform:karpenter"] = {field: {"empty": "", "k" * 129: "v", "long": "v" * 257}}
    at = f"gpu-platform:karpenter.{field}"
    limits = "AWS tag keys take at most 128 characters and values at most 256"
    assert karpenter_problems(cfg) == [
        (f"{at}.empty", "tag keys and values must not be empty"),
        (f"{at}.{'k' * 129}", limits),
        (f"{at}.long", limits),
    ]


def test_tags_karpenter_reserves():
    """Tag keys Karpenter sets on its instances, and any kubernetes.io/cluster... key, are refused."""
    cfg = stack_config("dev-aws")
    reserved = [
        "eks:eks-cluster-name",
        "karpenter.sh/nodepool",
        "karpenter.sh/nodeclaim",
        "karpenter.k8s.aws/ec2nodeclass",
        "kubernetes.io/cluster/ml-dev",
    ]
    cfg["gpu-platform:tags"] = {**dict.fromkeys(reserved, "x"), "karpenter.sh/other": "x", "kubernetes.io/x": "x"}
    assert karpenter_problems(cfg) == [
        (f"gpu-platform:tags.{name}", "is reserved by Karpenter on the instances it launches; choose another tag key")
        for name in reserved
    ]


def test_stack_options_only_checked_when_karpenter_runs():
    """Without Karpenter (no karpenter pool, no addon) its prefix and tags are not its concern."""
    cfg = dev_aws(1, provisioner="managed", minNodes=0, maxNodes=2)
    del cfg[POOLS][1]["maxGpus"]
    cfg["gpu-platform:cluster"]["name"] = "c" * 41
    cfg["gpu-platform:tags"] = {"karpenter.sh/nodepool": "x"}
    assert karpenter_problems(cfg) == []


# ------------------------------------------------------------------------------------------------ gke


def prod_gcp(pool: int, **fields: Any) -> dict[str, Any]:
    """prod-gcp (0 h100-train a3-highgpu-8g compact in us-central1-a with 4 GPU networks, 1 h100-burst queued,
    2 a100-inference MIG 1g.5gb x7, 3 l4-serving g2-standard-8 spot MPS) with one pool's fields set."""
    cfg = stack_config("prod-gcp")
    cfg[POOLS][pool].update(copy.deepcopy(fields))
    return cfg


def gke_problems(cfg: dict[str, Any]) -> list[tuple[str, str]]:
    return run(gke_rules.gke_pools, cfg)


def test_tags_as_gcp_labels():
    """Label keys: a lowercase letter, then up to 62 of [a-z0-9_-]; values: up to 63 of [a-z0-9_-], empty allowed.
    A bad key is reported once (its value is not looked at)."""
    key_message = (
        "GCP label keys start with a lowercase letter and hold only lowercase letters, digits, '_' and '-' "
        "(at most 63 characters)"
    )
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:tags"] = {"a" + "b_-9" * 15 + "xy": "v" * 63, "empty": "", "a": "x_-9"}
    assert run(gke_rules.gke_stack, cfg) == []
    cfg["gpu-platform:tags"] = {
        "a" * 64: "ok",
        "1team": "ok",
        "Team": "BAD",
        "team": "Platform",
        "cost": "v" * 64,
    }
    assert run(gke_rules.gke_stack, cfg) == [
        (f"gpu-platform:tags.{'a' * 64}", key_message),
        ("gpu-platform:tags.1team", key_message),
        ("gpu-platform:tags.Team", key_message),
        (
            "gpu-platform:tags.team",
            "'Platform': GCP label values hold only lowercase letters, digits, '_' and '-' (at most 63)",
        ),
        (
            "gpu-platform:tags.cost",
            f"{'v' * 64!r}: GCP label values hold only lowercase letters, digits, '_' and '-' (at most 63)",
        ),
    ]


def test_gke_label_rule_is_gcp_only():
    """AWS tags may hold upper case and spaces."""
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:tags"] = {"Team": "ML Platform"}
    assert run(gke_rules.gke_stack, cfg) == []


def test_gke_block_on_every_aws_pool():
    """On aws a gke block is refused on whichever pool carries it."""
    cfg = stack_config("dev-aws")
    cfg[POOLS][1]["gke"] = {"compactPlacement": True}
    assert gke_problems(cfg) == [(f"{POOLS}[1].gke", "does not apply when cloud is aws")]


def test_machine_type_problems():
    """Model, os and machine type checks, each with its exact message; two machine types stop the machine checks
    for that pool."""
    assert gke_problems(prod_gcp(3, gpu={"model": "A10G", "perNode": 1})) == [
        (f"{POOLS}[3].gpu.model", "A10G is not offered on GKE"),
        (f"{POOLS}[3].instanceTypes[0]", "g2-standard-8 carries L4, not A10G"),
    ]
    assert gke_problems(prod_gcp(3, os="al2023")) == [(f"{POOLS}[3].os", "must be one of cos, ubuntu on gcp")]
    assert gke_problems(prod_gcp(3, instanceTypes=["g2-standard-8", "g2-standard-8"])) == [
        (f"{POOLS}[3].instanceTypes", "a GKE node pool has exactly one machine type")
    ]
    assert gke_problems(prod_gcp(3, instanceTypes=["g2-standard-7"])) == [
        (f"{POOLS}[3].instanceTypes[0]", "'g2-standard-7' is not a known GPU machine type")
    ]
    assert gke_problems(prod_gcp(3, instanceTypes=["a2-highgpu-1g"])) == [
        (f"{POOLS}[3].instanceTypes[0]", "a2-highgpu-1g carries A100-40GB, not L4")
    ]
    assert gke_problems(prod_gcp(0, gpu={"model": "H100", "perNode": 4})) == [
        (f"{POOLS}[0].gpu.perNode", "a3-highgpu-8g has 8 GPUs, not 4")
    ]


def test_n1_machines_take_attached_t4s_in_allowed_counts():
    """N1 takes T4s only, in the counts its shape allows (n1-standard-8: 1, 2 or 4)."""
    cfg = stack_config("dev-gcp")
    t4 = cfg[POOLS][1]
    for n in (1, 2, 4):
        t4["gpu"]["perNode"] = n
        assert gke_problems(cfg) == []
    t4["gpu"]["perNode"] = 3
    assert gke_problems(cfg) == [(f"{POOLS}[1].gpu.perNode", "n1-standard-8 takes 1 or 2 or 4 T4 GPUs, not 3")]
    t4["gpu"] = {"model": "L4", "perNode": 1}
    assert gke_problems(cfg) == [(f"{POOLS}[1].instanceTypes[0]", "n1-standard-8 takes attached T4 GPUs, not L4")]


def test_small_a3_is_spot_or_flex_start_only():
    """a3-highgpu-2g on demand is refused; as Spot or with queued provisioning it is fine."""
    base = {"gpu": {"model": "H100", "perNode": 2}, "instanceTypes": ["a3-highgpu-2g"]}
    assert gke_problems(prod_gcp(2, **base, sharing=None)) == [  # a100-inference: on-demand, not queued
        (
            f"{POOLS}[2].capacity",
            "a3-highgpu-2g is sold only as Spot or flex-start capacity: set capacity: spot, gke.flexStart or "
            "gke.queuedProvisioning",
        )
    ]
    assert gke_problems(prod_gcp(1, **base)) == []  # h100-burst is queued
    assert gke_problems(prod_gcp(3, **base, sharing=None)) == []  # l4-serving is spot


def test_nodes_per_zone_limit():
    """1000 nodes per pool zone: one zone takes 1000, not 1001; two zones 2000, not 2001; a zonal cluster counts
    as one zone; a regional pool without zones is not checked (the region's zone count is not known here)."""
    message = "a GKE node pool takes at most 1000 nodes per zone ({} zone(s)); this one may grow to {}"
    one = {"gke": {"zones": ["us-central1-b"]}, "sharing": None}
    assert gke_problems(prod_gcp(3, **one, maxNodes=1000)) == []
    assert gke_problems(prod_gcp(3, **one, maxNodes=1001)) == [(f"{POOLS}[3].maxNodes", message.format(1, 1001))]
    two = {"gke": {"zones": ["us-central1-b", "us-central1-c"]}, "sharing": None}
    assert gke_problems(prod_gcp(3, **two, maxNodes=2000)) == []
    assert gke_problems(prod_gcp(3, **two, maxNodes=2001)) == [(f"{POOLS}[3].maxNodes", message.format(2, 2001))]
    assert gke_problems(prod_gcp(3, maxNodes=5000, sharing=None)) == []
    # a zone listed twice is still one zone
    twice = prod_gcp(3, gke={"zones": ["us-central1-b", "us-central1-b"]}, sharing=None, maxNodes=1001)
    assert gke_problems(twice) == [
        (f"{POOLS}[3].maxNodes", message.format(1, 1001)),
        (f"{POOLS}[3].gke.zones", "lists a zone twice"),
    ]
    zonal = prod_gcp(3, maxNodes=1001, sharing=None)
    zonal["gpu-platform:cluster"]["location"] = "us-central1-a"
    for i in (0, 1, 2):  # keep the other pools' zones inside the cluster's region
        zonal[POOLS][i]["gke"] = {**zonal[POOLS][i].get("gke", {}), "zones": ["us-central1-a"]}
    assert gke_problems(zonal) == [(f"{POOLS}[3].maxNodes", message.format(1, 1001))]


def test_nodes_per_zone_limit_reported_on_max_gpus():
    """A pool capped by maxGpus is told so on maxGpus (8 per node: 8008 GPUs is 1001 nodes)."""
    cfg = prod_gcp(1, maxGpus=8008, gke={"queuedProvisioning": True, "zones": ["us-central1-b"]})
    del cfg[POOLS][1]["maxNodes"]
    assert gke_problems(cfg) == [
        (
            f"{POOLS}[1].maxGpus",
            "a GKE node pool takes at most 1000 nodes per zone (1 zone(s)); this one may grow to 1001",
        )
    ]


def test_zone_names():
    """Zones lie in the cluster's region and are listed once (their form is checked when parsing)."""
    gke = stack_config("prod-gcp")[POOLS][0]["gke"]
    assert gke_problems(prod_gcp(0, gke={**gke, "zones": ["europe-west4-a"]})) == [
        (f"{POOLS}[0].gke.zones[0]", "europe-west4-a is not in the cluster's region us-central1"),
    ]
    assert gke_problems(prod_gcp(3, gke={"zones": ["us-central1-a", "us-central1-a"]})) == [
        (f"{POOLS}[3].gke.zones", "lists a zone twice"),
    ]


def test_zones_unchecked_against_an_unknown_location():
    """Without a cluster location (another rule's concern) the pools' zones are not held to a region."""
    cfg = stack_config("prod-gcp")
    del cfg["gpu-platform:cluster"]["location"]
    assert gke_problems(cfg) == []


def test_compact_placement_conditions():
    """Compact placement needs one zone, an A2/A3/A4/G2 machine and no queued provisioning."""
    gke = stack_config("prod-gcp")[POOLS][0]["gke"]
    assert gke_problems(prod_gcp(0, gke={**gke, "zones": ["us-central1-a", "us-central1-b"]})) == [
        (
            f"{POOLS}[0].gke.compactPlacement",
            "compact placement needs the pool in exactly one zone: set gke.zones to one zone",
        )
    ]
    n1 = prod_gcp(
        3,
        gpu={"model": "T4", "perNode": 1},
        instanceTypes=["n1-standard-8"],
        sharing=None,
        gke={"compactPlacement": True, "zones": ["us-central1-b"]},
    )
    assert gke_problems(n1) == [
        (
            f"{POOLS}[3].gke.compactPlacement",
            "compact placement is not available for N1 machines (GPU series that support it: A2, A3, A4, G2)",
        )
    ]
    queued = prod_gcp(1, gke={"queuedProvisioning": True, "compactPlacement": True, "zones": ["us-central1-a"]})
    assert gke_problems(queued) == [
        (f"{POOLS}[1].gke.compactPlacement", "GKE does not combine compact placement with queued provisioning")
    ]
    g2 = prod_gcp(3, gke={"compactPlacement": True, "zones": ["us-central1-b"]})
    assert gke_problems(g2) == []


def test_queued_provisioning_and_reservation_conflicts():
    """Every capacity conflict with its exact message, in the rule's order."""
    cfg = prod_gcp(
        1, minNodes=1, desiredNodes=2, capacity="spot", gke={"queuedProvisioning": True, "reservation": "any"}
    )
    assert gke_problems(cfg) == [
        (f"{POOLS}[1].minNodes", "queued provisioning needs minNodes 0 (nodes come only for admitted work)"),
        (f"{POOLS}[1].desiredNodes", "queued provisioning pools start with 0 nodes"),
        (f"{POOLS}[1].gke.reservation", "queued provisioning cannot consume a reservation: use none"),
        (f"{POOLS}[1].capacity", "queued provisioning does not use spot capacity"),
    ]
    assert gke_problems(prod_gcp(3, gke={"reservation": "any"})) == [
        (f"{POOLS}[3].gke.reservation", "spot pools cannot consume reservations: use none")
    ]
    assert gke_problems(prod_gcp(2, gke={"reservation": "specific"})) == [
        (f"{POOLS}[2].gke.reservationName", "is required for a specific reservation")
    ]
    assert gke_problems(prod_gcp(2, gke={"reservation": "any", "reservationName": "r"})) == [
        (f"{POOLS}[2].gke.reservationName", "applies only to reservation: specific")
    ]
    assert gke_problems(prod_gcp(2, gke={"reservation": "specific", "reservationName": "r"})) == []


@pytest.mark.parametrize(
    ("sharing", "expected"),
    [
        ({"strategy": "time-slicing", "replicas": 48}, []),
        (
            {"strategy": "time-slicing", "replicas": 49},
            [("replicas", "GKE shares a GPU with at most 48 clients, got 49")],
        ),
        ({"strategy": "mps", "replicas": 49}, []),  # reported by the cloud-neutral sharing rules
        (
            {"strategy": "mps", "replicas": 2, "renameByDefault": True},
            [("renameByDefault", "GKE's device plugin does not rename shared GPUs")],
        ),
        ({"strategy": "time-slicing", "replicas": 2, "failRequestsGreaterThanOne": True}, []),
        (
            {"strategy": "time-slicing", "replicas": 2, "failRequestsGreaterThanOne": False},
            [
                (
                    "failRequestsGreaterThanOne",
                    "GKE's device plugin always rejects pods asking for more than one shared GPU",
                )
            ],
        ),
    ],
)
def test_gke_time_sharing_and_mps(sharing, expected):
    """GKE's own device plugin shares a GPU with at most 48 clients, never renames and always fails >1 requests."""
    got = gke_problems(prod_gcp(3, sharing=sharing))
    assert got == [(f"{POOLS}[3].sharing.{field}", message) for field, message in expected]


def test_gke_mig_partitions():
    """One gpuPartitionSize per pool, one GKE serves for the accelerator, as many partitions as fit."""

    def mig(layout: dict[str, int]) -> list[tuple[str, str]]:
        return gke_problems(prod_gcp(2, sharing={"strategy": "mig", "layout": layout}))

    assert mig({"3g.20gb": 2}) == []
    assert mig({"3g.20gb": 1, "2g.10gb": 2}) == [
        (
            f"{POOLS}[2].sharing.layout",
            "GKE partitions a node pool's GPUs with one gpuPartitionSize: use a single MIG profile",
        )
    ]
    assert mig({"4g.20gb": 1}) == [
        (
            f"{POOLS}[2].sharing.layout.4g.20gb",
            "GKE does not partition nvidia-tesla-a100 GPUs into 4g.20gb (partition sizes: 1g.5gb, 2g.10gb, 3g.20gb, "
            "7g.40gb)",
        )
    ]
    assert mig({"3g.20gb": 1}) == [
        (f"{POOLS}[2].sharing.layout.3g.20gb", "GKE makes 2 3g.20gb partitions on each GPU (all that fit); set 2")
    ]


def test_gke_mig_on_a_machine_without_mig_partitions():
    """The partition table follows the machine's accelerator (g2-standard-8 carries L4, which GKE never
    partitions), so a MIG layout on a mismatched machine is told there are no sizes at all."""
    cfg = prod_gcp(3, gpu={"model": "H100", "perNode": 1}, sharing={"strategy": "mig", "layout": {"1g.10gb": 7}})
    assert gke_problems(cfg) == [
        (f"{POOLS}[3].instanceTypes[0]", "g2-standard-8 carries L4, not H100"),
        (
            f"{POOLS}[3].sharing.layout.1g.10gb",
            "GKE does not partition nvidia-l4 GPUs into 1g.10gb (partition sizes: none)",
        ),
    ]


def test_operator_owned_sharing_is_not_gkes_concern():
    """With the GPU Operator's device plugin (driver: operator), GKE's sharing limits do not apply."""
    cfg = prod_gcp(3, os="ubuntu", sharing={"strategy": "time-slicing", "replicas": 64, "renameByDefault": True})
    cfg["gpu-platform:gpuOperator"] = {"driver": "operator"}
    for pool in cfg[POOLS]:
        pool["os"] = "ubuntu"
    assert gke_problems(cfg) == []


def test_gpudirect_networks():
    """A multi-node pool on a GPUDirect machine needs exactly its GPU networks, each pair once; other machines
    take none; a single-node pool without networks is fine; aws pools take none."""
    nets = [{"network": f"n{i}", "subnetwork": f"s{i}"} for i in range(4)]
    at = f"{POOLS}[0].gke.additionalNetworks"
    gke = stack_config("prod-gcp")[POOLS][0]["gke"]
    assert run(gke_rules.gpudirect, prod_gcp(0, gke={**gke, "additionalNetworks": nets})) == []
    assert run(gke_rules.gpudirect, prod_gcp(0, gke={**gke, "additionalNetworks": nets[:3]})) == [
        (
            at,
            "a3-highgpu-8g uses GPUDirect-TCPX: a topologyAware pool needs its 4 GPU networks, else NCCL runs over the "
            "default NIC; got 3 (and needs multi-networking and nccl-tcpx-installer.yaml: README, GCP)",
        )
    ]
    assert run(gke_rules.gpudirect, prod_gcp(0, gke={**gke, "additionalNetworks": [nets[0]] * 4})) == [
        (at, "lists a network/subnetwork pair twice (each GPU NIC needs its own)")
    ]
    assert run(gke_rules.gpudirect, prod_gcp(1, topologyAware=False)) == []  # h100-burst: no networks, single node
    assert run(gke_rules.gpudirect, prod_gcp(3, gke={"additionalNetworks": nets[:1]})) == [
        (
            f"{POOLS}[3].gke.additionalNetworks",
            "GPU networks apply to GPUDirect machine types (a3-highgpu-8g, a3-megagpu-8g, a3-ultragpu-8g, "
            "a4-highgpu-8g), not g2-standard-8",
        )
    ]
    aws = stack_config("dev-aws")
    aws[POOLS][1]["gke"] = {"additionalNetworks": nets[:1]}
    assert run(gke_rules.gpudirect, aws) == [(f"{POOLS}[1].gke.additionalNetworks", "does not apply when cloud is aws")]


# ------------------------------------------------------------------------------------------------ efa


def efa_problems(cfg: dict[str, Any]) -> list[tuple[str, str]]:
    from components.plan.aws import efa

    return run(efa.efa, cfg)


def test_efa_on_gcp():
    """EFA is an AWS adapter: efa: true on a gcp pool is refused (efa: false is harmless), on every pool."""
    cfg = stack_config("prod-gcp")
    cfg[POOLS][0]["efa"] = False
    cfg[POOLS][2]["efa"] = True
    assert efa_problems(cfg) == [(f"{POOLS}[2].efa", "EFA is an AWS network adapter (cloud is gcp)")]


def test_efa_karpenter_pool_zone():
    """An EFA Karpenter pool (prod-aws h100-spot, p5.48xlarge) needs a zone in the cluster's region (us-east-1),
    matching its reservation's AZ when it has one."""
    cfg = stack_config("prod-aws")
    spot = cfg[POOLS][2]
    spot["efa"] = True
    assert efa_problems(cfg) == [
        (
            f"{POOLS}[2].karpenter.zone",
            "is required for an EFA pool: its cluster placement group lives in one AZ (name the AZ, e.g. us-east-1a, "
            "or declare the reservation's availabilityZone)",
        )
    ]
    spot["karpenter"]["zone"] = "us-east-1b"
    assert efa_problems(cfg) == []
    spot["karpenter"]["zone"] = "eu-west-1a"
    assert efa_problems(cfg) == [(f"{POOLS}[2].karpenter.zone", "eu-west-1a is not in the cluster's region us-east-1")]
    spot["karpenter"]["zone"] = "us-east-1b"
    spot["reservation"] = {
        "ids": ["cr-0123456789abcdef0"],
        "instanceType": "p5.48xlarge",
        "availabilityZone": "us-east-1a",
    }
    assert efa_problems(cfg) == [(f"{POOLS}[2].karpenter.zone", "is us-east-1b, but the reservation is in us-east-1a")]
    del spot["karpenter"]["zone"]  # the reservation's AZ is the pool's zone
    assert efa_problems(cfg) == []


def test_efa_instance_types_without_efa():
    """Types without EFA are named (singular / plural) with the pool model's EFA types; the layout check is then
    skipped for that pool."""
    cfg = stack_config("prod-aws")
    l4 = cfg[POOLS][3]
    l4.update(efa=True, eks={"subnetIds": ["subnet-0aaa"]}, gpu={"model": "L4", "perNode": 1})
    l4["instanceTypes"] = ["g6.xlarge"]
    # the L4 sizes with EFA (EC2 "EFA supported instance types", as catalogued, in catalog order)
    with_efa = "L4 types with EFA: g6.8xlarge, g6.16xlarge, g6.12xlarge, g6.24xlarge, g6.48xlarge"
    assert efa_problems(cfg) == [(f"{POOLS}[3].efa", f"g6.xlarge supports no EFA ({with_efa})")]
    l4["instanceTypes"] = ["g6.xlarge", "g6.2xlarge", "g6.8xlarge"]
    assert efa_problems(cfg) == [(f"{POOLS}[3].efa", f"g6.xlarge, g6.2xlarge support no EFA ({with_efa})")]


def test_efa_pool_needs_one_interface_layout_and_one_subnet():
    """All of an EFA pool's types must share one interface count and layout; a managed EFA pool needs exactly one
    subnet (its placement group's AZ)."""
    cfg = stack_config("prod-aws")
    a100 = cfg[POOLS][0]  # a100-train: p4de.24xlarge, EFA by topologyAware, one subnet
    assert efa_problems(cfg) == []
    a100["instanceTypes"] = ["p4de.24xlarge", "g6e.48xlarge"]  # 4 and 4 interfaces, same layout
    assert efa_problems(cfg) == []
    a100["instanceTypes"] = ["p4de.24xlarge", "g6e.24xlarge"]
    assert efa_problems(cfg) == [
        (
            f"{POOLS}[0].instanceTypes",
            "EFA pools need one network-interface layout: their instance types differ in EFA interfaces "
            "(p4de.24xlarge: 4, g6e.24xlarge: 2)",
        )
    ]
    a100["instanceTypes"] = ["p4de.24xlarge", "p6-b200.48xlarge"]  # 4 vs 8, and p6 is ENA + efa-only
    assert [p for p, _ in efa_problems(cfg)] == [f"{POOLS}[0].instanceTypes"]
    a100["instanceTypes"] = ["p4de.24xlarge"]
    subnet_message = (
        "an EFA pool is in a cluster placement group, which lives in one AZ: give it exactly one subnet "
        "(eks.subnetIds), or set efa: false on the pool to go without EFA "
    )
    for subnets in ([], ["subnet-0aaa", "subnet-0bbb"]):
        a100["eks"] = {"subnetIds": subnets}
        # EFA came by default (a100-train is topologyAware): the message says so, and how to opt out
        default = subnet_message + "(EFA is on by default for a topologyAware managed pool of an EFA-capable type)"
        assert efa_problems(cfg) == [(f"{POOLS}[0].eks.subnetIds", default)]
    a100["efa"] = True
    assert efa_problems(cfg) == [(f"{POOLS}[0].eks.subnetIds", subnet_message + "(efa: true)")]
    a100["efa"] = False  # the way out the message names: no EFA, no placement group, any number of subnets
    assert efa_problems(cfg) == []


# ----------------------------------------------------------------------------------------- reservations


def test_reservation_in_launch_template_and_node_group_terms():
    """ODCR by id: a capacityReservationTarget; match any: preference open; a Capacity Block adds marketType
    capacity-block and makes the node group CAPACITY_BLOCK; no reservation: nothing."""
    from components.plan.aws import reservations as r

    spec = parse_spec(stack_config("prod-aws"))
    h100 = spec.pool("h100-inference")  # cr-0c1d2e3f4a5b6c7d8
    assert r.launch_template_args(h100) == {
        "capacity_reservation_specification": {
            "capacity_reservation_target": {"capacity_reservation_id": "cr-0c1d2e3f4a5b6c7d8"}
        }
    }
    assert r.node_group_capacity_type(h100, "ON_DEMAND") == "ON_DEMAND"
    assert r.launch_template_args(spec.pool("l4-notebooks")) == {}
    assert r.node_group_capacity_type(spec.pool("l4-notebooks"), "SPOT") == "SPOT"

    cfg = stack_config("prod-aws")
    cfg[POOLS][1]["reservation"] = {**cfg[POOLS][1]["reservation"], "kind": "capacity-block"}
    block = parse_spec(cfg).pool("h100-inference")
    assert r.launch_template_args(block) == {
        "capacity_reservation_specification": {
            "capacity_reservation_target": {"capacity_reservation_id": "cr-0c1d2e3f4a5b6c7d8"}
        },
        "instance_market_options": {"market_type": "capacity-block"},
    }
    assert r.node_group_capacity_type(block, "ON_DEMAND") == "CAPACITY_BLOCK"
    cfg[POOLS][1]["reservation"] = {"match": "any", "instanceType": "p5.48xlarge", "availabilityZone": "us-east-1a"}
    any_ = parse_spec(cfg).pool("h100-inference")
    assert r.launch_template_args(any_) == {
        "capacity_reservation_specification": {"capacity_reservation_preference": "open"}
    }
    assert r.selector_terms(r.pool_reservation(any_)) == [{"instanceMatchCriteria": "open"}]


def test_karpenter_reservation_selector_terms():
    """One term per id, plus one tags term when tags are given (an id term takes no other key)."""
    from components.plan.aws import reservations as r

    cfg = stack_config("prod-aws")
    cfg[POOLS][1]["reservation"] = {
        **cfg[POOLS][1]["reservation"],
        "ids": ["cr-0aaaaaaaaaaaaaaaa", "cr-0bbbbbbbbbbbbbbbb"],
        "tags": {"team": "ml"},
    }
    pool = parse_spec(cfg).pool("h100-inference")
    assert r.selector_terms(r.pool_reservation(pool)) == [
        {"id": "cr-0aaaaaaaaaaaaaaaa"},
        {"id": "cr-0bbbbbbbbbbbbbbbb"},
        {"tags": {"team": "ml"}},
    ]
