"""EFA plain data (components/plan/aws/efa.py) called directly: which pools get EFA, how many devices a node
advertises, what a Karpenter EFA pool's class adds, the device plugin's values and the summary section.

Facts (module docstring of efa.py; EC2 "EFA supported instance types" as catalogued): EFA is on by default for
topology-aware managed pools whose types all support it; Karpenter pools get it only when asked; p4de.24xlarge
has 4 EFA interfaces (efa on every card), p5.48xlarge 32 (ENA primary + efa-only per card), g6.8xlarge 1,
g6.xlarge none.
"""

from __future__ import annotations

from typing import Any

from conftest import stack_config

from components.cli.loader import load_spec
from components.plan import plan
from components.plan.aws import efa
from components.spec.model import parse_spec

POOLS = "gpu-platform:nodePools"


def prod(**changes: Any):
    """prod-aws (0 a100-train: managed, topologyAware, p4de, EFA by default; 2 h100-spot: karpenter p5.48xlarge;
    3 l4-notebooks: managed g6.12xlarge) with changes {index: fields}."""
    cfg = stack_config("prod-aws")
    for i, fields in changes.items():
        cfg[POOLS][int(i.removeprefix("p"))].update(fields)
    return parse_spec(cfg)


def test_efa_default_and_explicit_choice():
    """Default: topology-aware managed pools with EFA-capable types only; an explicit efa wins either way; never
    on gcp; a Karpenter pool never by default (it cannot be topology-aware)."""
    spec = prod()
    # a100-train by default (topology-aware managed p4de), a100-gang by its explicit `efa: true`
    assert [p.name for p in efa.efa_pools(spec)] == ["a100-train", "a100-gang"]
    s = prod(p0={"efa": False})
    assert efa.efa_enabled(s, s.pool("a100-train")) is False
    s = prod(p3={"efa": True})
    assert efa.efa_enabled(s, s.pool("l4-notebooks")) is True
    s = prod(p3={"topologyAware": True})  # g6.12xlarge has EFA: on by default
    assert efa.efa_enabled(s, s.pool("l4-notebooks")) is True
    s = prod(p3={"topologyAware": True, "instanceTypes": ["g6.12xlarge", "g6.xlarge"]})  # g6.xlarge has none
    assert efa.efa_enabled(s, s.pool("l4-notebooks")) is False
    gcp = load_spec(stack_config("prod-gcp"))
    assert efa.efa_enabled(gcp, gcp.pool("h100-train")) is False  # topologyAware, but not aws
    assert efa.efa_pools(gcp) == []


def test_efa_capable_needs_known_types_all_with_efa():
    """No types, an unknown type, or one type without EFA: not capable."""
    spec = prod()
    pool = spec.pool("a100-train")
    assert efa.efa_capable(pool) is True
    assert efa.efa_capable(pool.model_copy(update={"instance_types": []})) is False
    assert efa.efa_capable(pool.model_copy(update={"instance_types": ["p4de.24xlarge", "x9.huge"]})) is False
    assert efa.efa_capable(pool.model_copy(update={"instance_types": ["g6.8xlarge", "g6.xlarge"]})) is False


def test_interfaces_per_node_is_the_smallest_count():
    """A node advertises as many vpc.amazonaws.com/efa as its type has interfaces; with several types the
    smallest (the rules keep them equal)."""
    pool = prod().pool("a100-train")
    assert efa.interfaces_per_node(pool) == 4
    assert efa.interfaces_per_node(pool.model_copy(update={"instance_types": ["p5.48xlarge", "p4de.24xlarge"]})) == 4
    assert efa.interfaces_per_node(pool.model_copy(update={"instance_types": ["p5.48xlarge"]})) == 32


def test_names_and_karpenter_class_additions():
    """<cluster>-<pool>-efa names the placement group and the security group; a Karpenter EFA pool's class
    selects both, a managed or non-EFA pool's adds nothing."""
    spec = prod(p2={"efa": True, "karpenter": {"zone": "us-east-1a", "onDemandFallback": True}})
    spot = spec.pool("h100-spot")
    assert efa.placement_group_name(spec, spot) == "ml-prod-h100-spot-efa"
    assert efa.security_group_name(spec, spot) == "ml-prod-h100-spot-efa"
    assert efa.karpenter_class_additions(spec, spot) == {
        "placementGroupSelector": {"name": "ml-prod-h100-spot-efa"},
        "securityGroupSelectorTerms": [{"name": "ml-prod-h100-spot-efa"}],
    }
    assert efa.karpenter_class_additions(spec, spec.pool("a100-train")) == {}  # managed
    plain = prod()
    assert efa.karpenter_class_additions(plain, plain.pool("h100-spot")) == {}  # no EFA


def test_pool_zone_from_karpenter_zone_else_reservation():
    """karpenter.zone first, else the reservation's declared AZ, else none."""
    spec = prod()
    assert efa.pool_zone(spec.pool("h100-inference")) == "us-east-1a"  # its reservation's AZ
    assert efa.pool_zone(spec.pool("h100-spot")) is None
    spec = prod(p1={"karpenter": {"zone": "us-east-1b"}}, p2={"karpenter": {"zone": "us-east-1c"}})
    assert efa.pool_zone(spec.pool("h100-inference")) == "us-east-1b"
    assert efa.pool_zone(spec.pool("h100-spot")) == "us-east-1c"


def test_device_plugin_values_list_efa_pools_sorted_with_their_tolerations_once():
    """The plugin runs on the EFA pools (by pool label, names sorted) and tolerates their taints, each once."""
    spec = prod(p3={"efa": True, "taints": [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]})
    values = efa.device_plugin_values(spec)
    assert values["supportedInstanceLabels"] == {
        "keys": ["gpu-platform/pool"],
        "values": ["a100-gang", "a100-train", "l4-notebooks"],
    }
    gpu = {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
    dedicated = {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}
    assert values["tolerations"] == [gpu, dedicated]


def test_summary_section_per_layout():
    """One row per EFA pool (sorted) with its interface layout, then how pods use EFA; nothing without EFA."""
    spec = prod(
        p2={"efa": True, "karpenter": {"zone": "us-east-1a"}},
        p3={"efa": True, "instanceTypes": ["g6.12xlarge"]},
    )
    lines = efa.summary(plan.build(spec, ""))
    assert lines[:5] == [
        "",
        "## EFA (multi-node training network)",
        "",
        "| pool | instance types | vpc.amazonaws.com/efa per node | interface layout | placement group |",
        "|---|---|---|---|---|",
    ]
    assert lines[5:9] == [
        "| a100-gang | p4de.24xlarge | 4 | efa on every card | ml-prod-a100-gang-efa (cluster) |",
        "| a100-train | p4de.24xlarge | 4 | efa on every card | ml-prod-a100-train-efa (cluster) |",
        "| h100-spot | p5.48xlarge | 32 | efa on every card (Karpenter, for pods requesting it) | "
        "ml-prod-h100-spot-efa (cluster) |",
        "| l4-notebooks | g6.12xlarge | 1 | efa on every card | ml-prod-l4-notebooks-efa (cluster) |",
    ]
    assert lines[9:] == [
        "",
        "Pods that train across nodes request `vpc.amazonaws.com/efa` (all of a node's devices) and set "
        "`FI_PROVIDER=efa`; see examples/. The EFA device plugin runs on these pools only.",
    ]
    p5 = prod(p1={"efa": True})
    assert "| h100-inference | p5.48xlarge | 32 | ENA primary + efa-only per card |" in "\n".join(
        efa.summary(plan.build(p5, ""))
    )
    assert efa.summary(plan.build(load_spec(stack_config("dev-aws")), "")) == []


def test_the_efa_device_plugin_image_comes_from_the_clusters_region():
    """The chart's default repository is the us-west-2 copy (upstream values.yaml); EKS replicates it to every
    Region it supports, under the registries the EKS user guide lists (af-south-1 and the others with an account
    of their own): the plugin pulls from the cluster's Region, keeping the chart's path and tag."""
    import yaml
    from conftest import UPSTREAM, release, rendered, stack_config

    from components.cli.loader import load_spec
    from components.plan.aws import efa as efa_module

    upstream = yaml.safe_load((UPSTREAM / "aws-efa-k8s-device-plugin" / "values.yaml").read_text())
    default = upstream["image"]["repository"]
    assert default == "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin"
    values = release(rendered("prod-aws"), "aws-efa-k8s-device-plugin")["values"]
    assert values["image"] == {
        "repository": "602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/aws-efa-k8s-device-plugin"
    }
    spec = load_spec(stack_config("prod-aws"))

    def in_region(region):
        return spec.model_copy(update={"cluster": spec.cluster.model_copy(update={"region": region})})

    got = efa_module.device_plugin_values(in_region("af-south-1"))["image"]["repository"]
    assert got == "877085696533.dkr.ecr.af-south-1.amazonaws.com/eks/aws-efa-k8s-device-plugin"
    # a Region the guide does not list: the chart's own repository
    assert "image" not in efa_module.device_plugin_values(in_region("xx-nowhere-1"))
