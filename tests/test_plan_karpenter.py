"""Karpenter in the plan (``Plan.karpenter``: components/plan/aws/karpenter.py, issue 28): the names, charts, values
and node documents the platform decides for a stack, checked against what the stack files say, and the renderer
registering exactly them (it reads only the plan)."""

from __future__ import annotations

import dataclasses

import pytest
import yaml
from conftest import ROOT, manifests, release, render_config, rendered, stack_config

from components.cli import main as cli
from components.cli.loader import load_spec
from components.plan import plan
from components.plan.aws.karpenter import KarpenterPlan

COVERAGE_AWS = ROOT / "tests" / "fixtures" / "coverage" / "Pulumi.coverage-aws.yaml"
EVENT_KINDS = ("health", "spot", "rebalance", "state-change", "reservation")


def _coverage_config() -> dict:
    return yaml.safe_load(COVERAGE_AWS.read_text())["config"]


def _karpenter(config: dict, stack: str) -> KarpenterPlan:
    k = plan.build(load_spec(config), stack).karpenter
    assert k is not None
    return k


@pytest.mark.parametrize("stack", ["dev-gcp", "prod-gcp", "local", "dra-existing"])
def test_a_stack_without_karpenter_plans_none(stack):
    assert plan.build(load_spec(stack_config(stack)), stack).karpenter is None


def test_an_aws_stack_with_karpenter_switched_off_and_no_karpenter_pool_plans_none():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:nodePools"] = [p for p in cfg["gpu-platform:nodePools"] if p.get("provisioner") != "karpenter"]
    for t in cfg["gpu-platform:tenants"]:
        t["gpuQuota"].pop("a10g-spot")
    cfg["gpu-platform:addons"] = {**cfg.get("gpu-platform:addons", {}), "karpenter": False}
    assert plan.build(load_spec(cfg), "dev-aws").karpenter is None


def test_dev_aws_names_come_from_the_cluster_name():
    """stacks/Pulumi.dev-aws.yaml: cluster ml-dev, no namePrefix, Pod Identity, no zonal shift."""
    k = _karpenter(stack_config("dev-aws"), "dev-aws")
    assert (k.cluster, k.region, k.namespace, k.service_account) == ("ml-dev", "us-east-1", "kube-system", "karpenter")
    assert (k.controller_role, k.node_role, k.queue) == (
        "ml-dev-karpenter",
        "ml-dev-karpenter-node",
        "ml-dev-karpenter",
    )
    assert dict(k.event_rules) == {kind: f"ml-dev-karpenter-{kind}" for kind in EVENT_KINDS}
    assert list(k.policies) == [
        "node-lifecycle",
        "iam-integration",
        "eks-integration",
        "interruption",
        "resource-discovery",
    ]
    assert (k.identity, k.zonal_shift, k.imds_hop_limit) == ("pod-identity", False, 1)
    assert dict(k.tags) == {"environment": "dev", "managed-by": "gpu-platform", "team": "ml-platform"}
    assert (k.chart.version, k.crd_chart.release) == ("1.14.1", "karpenter-crd")


def test_dev_aws_one_spot_nodepool_on_one_shared_class():
    """a10g-spot: 1 x A10G per node, maxGpus 8, spot without fallback, default disk 200 GiB and AL2023."""
    k = _karpenter(stack_config("dev-aws"), "dev-aws")
    [c] = k.node_classes
    assert (c.name, c.os, c.disk_gib, c.ami_version, c.owner, c.pools) == (
        "gpu-al2023-200gib",
        "al2023",
        200,
        "latest",
        None,
        ("a10g-spot",),
    )
    assert "role" not in c.spec  # the node role object's name is the renderer's
    assert c.spec["amiSelectorTerms"] == ({"alias": "al2023@latest"},)
    [p] = k.node_pools
    assert (p.name, p.pool, p.capacity_type, p.gpus, p.nodes, p.weight, p.node_class) == (
        "a10g-spot",
        "a10g-spot",
        "spot",
        8,
        8,
        None,
        "gpu-al2023-200gib",
    )
    assert dict(p.limits) == {"nvidia.com/gpu": "8", "nodes": "8"}
    assert k.node_overlays == ()


def test_prod_aws_spot_with_fallback_is_two_weighted_nodepools_sharing_the_cap():
    """h100-spot: 8 x H100 per node, maxGpus 32, onDemandFallback without onDemandMaxGpus: 4 nodes split evenly,
    spot preferred (weight 50), on-demand the fallback (weight 10)."""
    k = _karpenter(stack_config("prod-aws"), "prod-aws")
    got = [(p.name, p.capacity_type, p.weight, p.gpus, p.nodes, p.node_class) for p in k.node_pools_of("h100-spot")]
    assert got == [
        ("h100-spot", "spot", 50, 16, 2, "gpu-al2023-200gib"),
        ("h100-spot-on-demand", "on-demand", 10, 16, 2, "gpu-al2023-200gib"),
    ]
    [c] = [c for c in k.node_classes if c.name == "gpu-al2023-200gib"]
    assert c.ami_version == "v20251120" and c.spec["amiSelectorTerms"] == ({"alias": "al2023@v20251120"},)


def test_coverage_aws_prefix_irsa_zonal_shift_selectors_and_hop_limit():
    """tests/fixtures/coverage/Pulumi.coverage-aws.yaml: namePrefix mlp, IRSA, zonalShift, subnet and security
    group tags plus one id each, IMDS hop limit 2, the stack's tags."""
    k = _karpenter(_coverage_config(), "coverage-aws")
    assert (k.controller_role, k.node_role, k.queue) == ("mlp-karpenter", "mlp-karpenter-node", "mlp-karpenter")
    assert dict(k.event_rules) == {kind: f"mlp-karpenter-{kind}" for kind in EVENT_KINDS}
    assert dict(k.policies)["zonal-shift"] == "mlp-karpenter-zonal-shift"
    assert (k.identity, k.zonal_shift, k.imds_hop_limit) == ("irsa", True, 2)
    assert dict(k.tags) == {
        "cost-center": "ml-4711",
        "environment": "prod",
        "managed-by": "gpu-platform",
        "team": "ml-platform",
    }
    for c in k.node_classes:
        assert c.spec["subnetSelectorTerms"] == (
            {"tags": {"karpenter.sh/discovery": "ml-platform", "tier": "private"}},
            {"id": "subnet-0b2b2b2b2b2b2b201"},
        )
        assert c.spec["securityGroupSelectorTerms"][:2] == (
            {"tags": {"karpenter.sh/discovery": "ml-platform"}},
            {"id": "sg-0c3c3c3c3c3c3c301"},
        )
        assert c.spec["metadataOptions"]["httpPutResponseHopLimit"] == 2
    settings = k.helm_values["settings"]
    assert settings["enableZonalShift"] is True and settings["interruptionQueue"] == "mlp-karpenter"
    assert dict(settings["featureGates"]) == {"nodeOverlay": True, "nodeRepair": True}
    assert "annotations" not in k.helm_values["serviceAccount"]  # the role ARN is the cloud's


def test_coverage_aws_pools_with_settings_of_their_own_get_their_own_class():
    """h200-reserved (a reservation, EFA) and l4-notebooks (Bottlerocket time-slicing) own their classes; a10g-spot
    (200 GiB) and h100-mig (500 GiB) share AL2023 classes named by disk size (the stack's image delivery aside:
    test_image_delivery_gives_the_al2023_pools_classes_of_their_own)."""
    cfg = _coverage_config()
    cfg.pop("gpu-platform:images")
    for pool in cfg["gpu-platform:nodePools"]:
        pool.pop("imageCache", None)
    k = _karpenter(cfg, "coverage-aws")
    classes = {c.name: c for c in k.node_classes}
    assert {n: (c.owner, c.pools) for n, c in classes.items()} == {
        "gpu-al2023-2000gib-h200-reserved": ("h200-reserved", ("h200-reserved",)),
        "gpu-al2023-200gib": (None, ("a10g-spot",)),
        "gpu-al2023-500gib": (None, ("h100-mig",)),
        "gpu-bottlerocket-200gib-l4-notebooks": ("l4-notebooks", ("l4-notebooks",)),
    }
    reserved = classes["gpu-al2023-2000gib-h200-reserved"].spec
    assert reserved["capacityReservationSelectorTerms"] == ({"tags": {"purpose": "h200-training", "team": "research"}},)
    assert "userData" in classes["gpu-bottlerocket-200gib-l4-notebooks"].spec
    assert "userData" not in classes["gpu-al2023-200gib"].spec
    capacity = {p.name: p.capacity_type for p in k.node_pools}
    assert capacity["h200-reserved"] == "reserved"


def test_image_delivery_gives_the_al2023_pools_classes_of_their_own():
    """coverage-aws's peer mirror: every AL2023 Karpenter pool's nodes keep unpacked layers (a NodeConfig in their
    userData, nodeadm's containerd.config), which no other pool's class may carry, so each gets a class of its own;
    h100-mig also holds a declared image: FastImagePull and the 1000 MiB/s root volume nodeadm recommends for it.
    l4-notebooks (Bottlerocket) boots its data volume from the stack's snapshot."""
    k = _karpenter(_coverage_config(), "coverage-aws")
    classes = {c.name: c for c in k.node_classes}
    mig, a10g = classes["gpu-al2023-500gib-h100-mig"].spec, classes["gpu-al2023-200gib-a10g-spot"].spec
    assert (
        "discard_unpacked_layers = false" in mig["userData"] and "discard_unpacked_layers = false" in a10g["userData"]
    )
    assert "FastImagePull: true" in mig["userData"] and "FastImagePull" not in a10g["userData"]
    (root,) = mig["blockDeviceMappings"]
    assert (root["ebs"]["throughput"], root["ebs"]["iops"]) == (1000, 4000)
    data = classes["gpu-bottlerocket-200gib-l4-notebooks"].spec["blockDeviceMappings"][1]
    assert data["ebs"]["snapshotID"] == "snap-0123456789abcdef0" and data["ebs"]["volumeInitializationRate"] == 300
    assert "encrypted" not in data["ebs"]  # the snapshot's (EC2: no encryption value with a snapshot)


def test_coverage_aws_overlays_say_what_shared_and_mig_nodes_advertise():
    """h100-mig: 8 GPUs x 7 1g.10gb slices (single strategy) = 56 nvidia.com/gpu; a10g-spot: 4 GPUs x MPS 2 = 8
    on both its NodePools; l4-notebooks: 1 GPU time-sliced x 4, renamed nvidia.com/gpu.shared (0 nvidia.com/gpu);
    h200-reserved shares nothing and needs none."""
    k = _karpenter(_coverage_config(), "coverage-aws")
    assert {o.pool: dict(o.capacity) for o in k.node_overlays} == {
        "a10g-spot": {"nvidia.com/gpu": 8},
        "h100-mig": {"nvidia.com/gpu": 56},
        "l4-notebooks": {"nvidia.com/gpu": 0, "nvidia.com/gpu.shared": 4},
    }
    [a10g] = [o for o in k.node_overlays if o.pool == "a10g-spot"]
    assert a10g.name == "gpu-a10g-spot"
    assert a10g.spec["requirements"][0]["values"] == ("a10g-spot", "a10g-spot-on-demand")
    assert {p.name: dict(p.limits) for p in k.node_pools_of("a10g-spot")} == {
        "a10g-spot": {"nvidia.com/gpu": "48", "nodes": "6"},  # 32 GPUs less the 8 on-demand, x MPS 2
        "a10g-spot-on-demand": {"nvidia.com/gpu": "16", "nodes": "2"},  # onDemandMaxGpus 8, x MPS 2
    }


def test_the_karpenter_plan_is_frozen():
    k = _karpenter(_coverage_config(), "coverage-aws")
    with pytest.raises(dataclasses.FrozenInstanceError):
        k.queue = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        k.node_pools[0].spec["limits"] = {}  # type: ignore[index]
    assert isinstance(k.node_classes[0].spec["blockDeviceMappings"], tuple)


@pytest.mark.parametrize("stack", ["prod-aws", "coverage-aws"])
def test_the_renderer_registers_exactly_the_plans_karpenter(stack):
    """EC2NodeClasses (with the node role's name), NodePools, NodeOverlays, AWS names and the controller's values:
    what the synth registers is the plan's, plus only what the cloud gives."""
    cfg = _coverage_config() if stack == "coverage-aws" else stack_config(stack)
    k = _karpenter(cfg, stack)
    r = render_config(cfg, stack) if stack == "coverage-aws" else rendered(stack)
    classes = {m["metadata"]["name"]: m["spec"] for m in manifests(r, "EC2NodeClass")}
    assert classes == {c.name: {**plan.plain(c.spec), "role": k.node_role} for c in k.node_classes}
    pools = {m["metadata"]["name"]: m for m in manifests(r, "NodePool")}
    assert {n: m["spec"] for n, m in pools.items()} == {p.name: plan.plain(p.spec) for p in k.node_pools}
    for p in k.node_pools:
        meta = pools[p.name]["metadata"]
        assert meta["labels"]["gpu-platform/pool"] == p.pool
        assert meta["annotations"]["kubernetes.io/description"] == p.description
    overlays = {m["metadata"]["name"]: m["spec"] for m in manifests(r, "NodeOverlay")}
    assert overlays == {o.name: plan.plain(o.spec) for o in k.node_overlays}
    names = {x.type.rsplit(":", 1)[-1]: [] for x in r.resources}
    for x in r.resources:
        if x.parent == "karpenter" and "name" in x.inputs:
            names[x.type.rsplit(":", 1)[-1]].append(x.inputs["name"])
    assert sorted(names["Queue"]) == [k.queue]
    assert sorted(names["Role"]) == sorted([k.controller_role, k.node_role])
    assert sorted(names["Policy"]) == sorted(k.policies.values())
    assert sorted(names["EventRule"]) == sorted(k.event_rules.values())
    values = release(r, "karpenter")["values"]
    expected = plan.plain(k.helm_values)
    expected["settings"]["clusterEndpoint"] = values["settings"]["clusterEndpoint"]
    if k.identity == "irsa":
        expected["serviceAccount"]["annotations"] = {
            "eks.amazonaws.com/role-arn": f"arn:aws:iam::000000000000:role/{k.controller_role}"
        }
    assert values == expected


def test_plan_text_has_a_karpenter_section(capsys):
    assert cli.main(["plan", "prod-aws"]) == 0
    text = capsys.readouterr().out
    assert "\nKarpenter\n" in text
    assert "  NodePool h100-spot-on-demand (pool h100-spot): on-demand, weight 10, up to 16 GPUs on 2 nodes" in text
    assert "  EC2NodeClass gpu-al2023-200gib: al2023@v20251120, 200 GiB, for h100-spot" in text
    assert cli.main(["plan", "prod-gcp"]) == 0
    assert "Karpenter" not in capsys.readouterr().out
