"""Multi-node training at full speed: EFA on EKS (catalog, launch templates, placement group, security group,
device plugin, examples), reserved capacity on both clouds, and GKE GPUDirect networks."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from conftest import ROOT, UPSTREAM, release, rendered, stack_config
from test_examples import FILES, _docs, _pod_specs, _target
from test_karpenter import _cel_nodeclass, _cel_nodepool, _errors, _schema
from values_paths import unknown_paths

from components.cli.loader import SpecError, load_spec
from components.data import catalog, versions
from components.plan import derive, reservations
from components.plan.aws import efa, reservations as aws_reservations
from components.render.aws import karpenter
from components.render.gcp import nodepools as gke_pools

EFA_UPSTREAM = ROOT / "upstream" / "aws-efa-k8s-device-plugin"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
PLACEMENT_GROUP = "aws:ec2/placementGroup:PlacementGroup"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
EGRESS = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"


def problems(cfg: dict[str, Any]) -> dict[str, list[str]]:
    with pytest.raises(SpecError) as err:
        load_spec(cfg)
    out: dict[str, list[str]] = {}
    for p in err.value.problems:
        out.setdefault(p.path, []).append(p.message)
    return out


def _pool(cfg: dict[str, Any], name: str) -> tuple[int, dict[str, Any]]:
    return next((i, p) for i, p in enumerate(cfg["gpu-platform:nodePools"]) if p["name"] == name)


# ------------------------------------------------------------------------------------------------ catalog


def test_efa_interface_counts_from_aws():
    # EC2 user guide "Network cards" / EFA supported instance types: p4d/p4de 4 cards, p5/p5e 32, p5en 16,
    # p6-b200 8, g6e.48xlarge 4; the small G sizes have no EFA.
    expected = {
        "p4d.24xlarge": 4,
        "p4de.24xlarge": 4,
        "p5.48xlarge": 32,
        "p5e.48xlarge": 32,
        "p5en.48xlarge": 16,
        "p6-b200.48xlarge": 8,
        "g6e.48xlarge": 4,
        "g6.xlarge": 0,
        "g5g.16xlarge": 0,
    }
    assert {t: catalog.aws_efa_interfaces(t) for t in expected} == expected
    assert set(catalog.AWS_EFA_INTERFACES) <= set(catalog.AWS_INSTANCE_TYPES)


def test_catalog_efa_types_are_the_device_plugins():
    """The device plugin chart lists the EFA instance types it runs on: every catalogued EFA type is there, and no
    catalogued type the chart lists is missing from the catalog's EFA table."""
    values = yaml.safe_load((EFA_UPSTREAM / "values.yaml").read_text())
    chart_types = set(values["supportedInstanceLabels"]["values"])
    assert set(catalog.AWS_EFA_INTERFACES) <= chart_types
    assert {t for t in catalog.AWS_INSTANCE_TYPES if t in chart_types} == set(catalog.AWS_EFA_INTERFACES)


def test_chart_pin_matches_the_recorded_chart():
    chart = yaml.safe_load((EFA_UPSTREAM / "Chart.yaml").read_text())
    assert (chart["name"], chart["version"]) == (versions.EFA_DEVICE_PLUGIN.chart, versions.EFA_DEVICE_PLUGIN.version)
    assert versions.EFA_DEVICE_PLUGIN.repository == "https://aws.github.io/eks-charts"
    assert (EFA_UPSTREAM / "LICENSE").read_text().startswith(("Apache License", "\n"))


# ------------------------------------------------------------------------------------ launch template layout


def test_interfaces_efa_on_every_card_for_p4de():
    spec = load_spec(stack_config("prod-aws"))
    nics = efa.network_interfaces(spec.pool("a100-train"), ["sg-cluster", "sg-efa"])
    assert [(n["network_card_index"], n["device_index"], n["interface_type"]) for n in nics] == [
        (0, 0, "efa"),
        (1, 1, "efa"),
        (2, 1, "efa"),
        (3, 1, "efa"),
    ]
    assert all(n["security_groups"] == ["sg-cluster", "sg-efa"] for n in nics)


def test_interfaces_ena_primary_and_efa_only_for_p5():
    cfg = stack_config("prod-aws")
    _, pool = _pool(cfg, "a100-train")
    pool.update(gpu={"model": "H100", "perNode": 8}, instanceTypes=["p5.48xlarge"])
    spec = load_spec(cfg)
    nics = efa.network_interfaces(spec.pool("a100-train"), ["sg"])
    assert nics[0]["interface_type"] == "interface" and (nics[0]["network_card_index"], nics[0]["device_index"]) == (
        0,
        0,
    )
    efa_devices = [n for n in nics if n["interface_type"] == "efa-only"]
    assert len(efa_devices) == 32 == efa.interfaces_per_node(spec.pool("a100-train"))
    assert sorted({n["network_card_index"] for n in efa_devices}) == list(range(32))  # one per card


# ------------------------------------------------------------------------------------------ rendered (aws)


def test_prod_aws_efa_pool_resources():
    r = rendered("prod-aws")
    lt = r.find(LAUNCH_TEMPLATE, "a100-train").inputs
    pg = r.find(PLACEMENT_GROUP, "a100-train-efa").inputs
    sg = r.find(SECURITY_GROUP, "a100-train-efa").inputs
    efa_sg_id = r.find(INGRESS, "a100-train-efa-in").inputs["securityGroupId"]  # the EFA group's id
    assert sg["name"] == "ml-prod-a100-train-efa" and sg["vpcId"] == "vpc-offline-placeholder"
    assert pg["strategy"] == "cluster" and pg["name"] == "ml-prod-a100-train-efa"
    assert lt["placement"] == {"groupName": "ml-prod-a100-train-efa"}
    assert len(lt["networkInterfaces"]) == 4
    for nic in lt["networkInterfaces"]:
        # the EKS cluster security group (nodes must stay in it) and the pool's EFA group
        assert nic["securityGroups"] == [
            "sg-offline-placeholder",
            efa_sg_id,
        ]
        assert nic["interfaceType"] == "efa"
    for kind, name in ((INGRESS, "a100-train-efa-in"), (EGRESS, "a100-train-efa-out")):
        rule = r.find(kind, name).inputs
        assert rule["ipProtocol"] == "-1"
        assert rule["referencedSecurityGroupId"] == rule["securityGroupId"]  # itself, nothing else
    assert r.find(NODE_GROUP, "a100-train").inputs["subnetIds"] == ["subnet-0a1b2c3d4e5f60718"]
    # pools without EFA keep EKS' default networking
    assert "networkInterfaces" not in r.find(LAUNCH_TEMPLATE, "l4-notebooks").inputs


def test_prod_aws_odcr_pool_resources():
    r = rendered("prod-aws")
    lt = r.find(LAUNCH_TEMPLATE, "h100-inference").inputs
    assert lt["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": "cr-0c1d2e3f4a5b6c7d8"}
    }
    assert "instanceMarketOptions" not in lt
    assert r.find(NODE_GROUP, "h100-inference").inputs["capacityType"] == "ON_DEMAND"


def test_capacity_block_market_type_and_node_group_capacity():
    cfg = stack_config("prod-aws")
    _, pool = _pool(cfg, "h100-inference")
    pool["reservation"]["kind"] = "capacity-block"
    spec = load_spec(cfg)
    p = spec.pool("h100-inference")
    assert aws_reservations.launch_template_args(p) == {
        "capacity_reservation_specification": {
            "capacity_reservation_target": {"capacity_reservation_id": "cr-0c1d2e3f4a5b6c7d8"}
        },
        "instance_market_options": {"market_type": "capacity-block"},
    }
    assert aws_reservations.node_group_capacity_type(p, "ON_DEMAND") == "CAPACITY_BLOCK"
    assert aws_reservations.node_group_capacity_type(spec.pool("l4-notebooks"), "ON_DEMAND") == "ON_DEMAND"


def test_device_plugin_release_runs_on_efa_pools_only():
    r = rendered("prod-aws")
    rel = release(r, "aws-efa-k8s-device-plugin")
    assert (rel["chart"], rel["version"], rel["repositoryOpts"]["repo"]) == (
        "aws-efa-k8s-device-plugin",
        "v0.5.30",
        "https://aws.github.io/eks-charts",
    )
    values = rel["values"]
    assert values["supportedInstanceLabels"] == {"keys": [derive.POOL_LABEL], "values": ["a100-gang", "a100-train"]}
    gpu_taint = {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
    assert gpu_taint in values["tolerations"]
    upstream = yaml.safe_load((EFA_UPSTREAM / "values.yaml").read_text())
    assert unknown_paths(values, upstream) == []
    # no EFA pool, no plugin
    with pytest.raises(KeyError):
        release(rendered("dev-aws"), "aws-efa-k8s-device-plugin")


def test_summary_counts_efa_and_says_reservations_are_paid_unused():
    from components.explain.summary import summary

    text = summary(rendered("prod-aws"), {})
    assert "| a100-train | p4de.24xlarge | 4 | efa on every card | ml-prod-a100-train-efa (cluster) |" in text
    assert "| h100-inference | reservation cr-0c1d2e3f4a5b6c7d8 | p5.48xlarge | us-east-1a |" in text
    assert "paid for whether or not nodes run in it" in text


# ------------------------------------------------------------------------------------------------ examples


@pytest.mark.parametrize("path", [p for p in FILES if "pytorch" in p.name], ids=lambda p: p.name)
def test_training_examples_request_every_efa_device_of_their_pool(path):
    t = _target(path)
    spec = load_spec(stack_config(t["stack"]))
    pool = spec.pool(t["pool"])
    assert efa.efa_enabled(spec, pool), f"{path.name}: targets {pool.name}, which has no EFA"
    want = efa.interfaces_per_node(pool)
    family = catalog.AWS_INSTANCE_TYPES[pool.instance_types[0]].family
    containers = [c for doc in _docs(path) for pod in _pod_specs(doc) for c in pod["spec"]["containers"]]
    assert containers
    for c in containers:
        assert c["resources"]["requests"][efa.EFA_RESOURCE] == want
        assert c["resources"]["limits"][efa.EFA_RESOURCE] == want
        env = {e["name"]: e["value"] for e in c.get("env", [])}
        assert env["FI_PROVIDER"] == "efa"
        assert ("FI_EFA_USE_DEVICE_RDMA" in env) == (family in catalog.AWS_EFA_RDMA_FAMILIES)


# ------------------------------------------------------------------------------------------ rules (aws)


def test_efa_rules_fail():
    cfg = stack_config("prod-aws")
    i, pool = _pool(cfg, "a100-train")
    pool["eks"] = {"subnetIds": ["subnet-0aaa", "subnet-0bbb"]}  # two AZs: no placement group
    j, l4 = _pool(cfg, "l4-notebooks")
    l4["efa"] = True  # g6.12xlarge: EFA, one interface; but no subnet of its own
    k, spot = _pool(cfg, "h100-spot")
    spot["efa"] = True  # karpenter, no zone for its placement group
    found = problems(cfg)
    assert "exactly one subnet" in found[f"gpu-platform:nodePools[{i}].eks.subnetIds"][0]
    assert "exactly one subnet" in found[f"gpu-platform:nodePools[{j}].eks.subnetIds"][0]
    assert "is required for an EFA pool" in found[f"gpu-platform:nodePools[{k}].karpenter.zone"][0]
    spot["karpenter"]["zone"] = "eu-west-1a"
    assert "not in the cluster's region us-east-1" in problems(cfg)[f"gpu-platform:nodePools[{k}].karpenter.zone"][0]

    cfg = stack_config("prod-aws")
    j, l4 = _pool(cfg, "l4-notebooks")
    l4.update(efa=True, instanceTypes=["g6.xlarge"], gpu={"model": "L4", "perNode": 1}, sharing=None)
    l4["eks"] = {"subnetIds": ["subnet-0aaa"]}
    l4.pop("sharing")
    msg = problems(cfg)[f"gpu-platform:nodePools[{j}].efa"][0]
    assert msg.startswith("g6.xlarge supports no EFA") and "g6.8xlarge" in msg

    cfg = stack_config("prod-aws")
    j, l4 = _pool(cfg, "l4-notebooks")
    l4.update(efa=True, instanceTypes=["g6e.12xlarge", "g6e.24xlarge"], gpu={"model": "L40S", "perNode": 4})
    l4["eks"] = {"subnetIds": ["subnet-0aaa"]}
    assert "differ in EFA interfaces" in problems(cfg)[f"gpu-platform:nodePools[{j}].instanceTypes"][0]


def test_efa_default_and_explicit_off():
    spec = load_spec(stack_config("prod-aws"))
    # a100-train: topologyAware managed pool on p4de; a100-gang: `efa: true` written out
    assert [p.name for p in efa.efa_pools(spec)] == ["a100-train", "a100-gang"]
    cfg = stack_config("prod-aws")
    for name in ("a100-train", "a100-gang"):
        _, pool = _pool(cfg, name)
        pool["efa"] = False
        pool.pop("eks")  # no placement group: any subnets
    assert efa.efa_pools(load_spec(cfg)) == []


def test_reservation_rules_fail_aws():
    cfg = stack_config("prod-aws")
    i, inf = _pool(cfg, "h100-inference")
    inf["reservation"] = {
        "ids": ["cr-0abc", "cr-0def"],
        "tags": {"team": "ml"},
        "instanceType": "p5e.48xlarge",
        "availabilityZone": "us-west-2a",
    }
    j, l4 = _pool(cfg, "l4-notebooks")
    l4["reservation"] = {"kind": "capacity-block", "ids": ["cr-0123"]}
    l4["instanceTypes"] = ["g6.12xlarge", "g6.24xlarge"]
    k, spot = _pool(cfg, "h100-spot")
    spot["reservation"] = {"ids": ["not-a-cr"]}
    found = problems(cfg)
    at = f"gpu-platform:nodePools[{i}].reservation"
    assert "p5e.48xlarge, which the pool does not launch" in found[f"{at}.instanceType"][0]
    assert "not in the cluster's region us-east-1" in found[f"{at}.availabilityZone"][0]
    assert "needs Karpenter" in found[f"{at}.tags"][0]
    assert "one reservation id" in found[f"{at}.ids"][0]
    assert "exactly one instance type" in found[f"gpu-platform:nodePools[{j}].instanceTypes"][0]
    assert "exactly one subnet" in found[f"gpu-platform:nodePools[{j}].eks.subnetIds"][0]
    assert any("spot pools cannot" in m for m in found[f"gpu-platform:nodePools[{k}].reservation"])
    assert "not an EC2 capacity reservation id" in found[f"gpu-platform:nodePools[{k}].reservation.ids[0]"][0]


# ----------------------------------------------------------------------------------------- karpenter


def _karpenter_reserved_spec(term: dict[str, Any]):
    cfg = stack_config("prod-aws")
    _, spot = _pool(cfg, "h100-spot")
    spot.update(capacity="on-demand", reservation={**term, "availabilityZone": "us-east-1b"})
    spot["karpenter"].pop("onDemandFallback")
    return load_spec(cfg)


@pytest.mark.parametrize(
    "case",
    [
        ({"ids": ["cr-0a1b2c"]}, [{"id": "cr-0a1b2c"}]),
        ({"tags": {"purpose": "training"}, "kind": "capacity-block"}, [{"tags": {"purpose": "training"}}]),
        ({"match": "any"}, [{"instanceMatchCriteria": "open"}]),
    ],
    ids=["id", "tags", "open"],
)
def test_karpenter_reserved_pool_validates_and_is_pinned(case):
    term, expected_terms = case
    spec = _karpenter_reserved_spec(term)
    pool = spec.pool("h100-spot")
    need = karpenter.node_class_need(spec, pool)
    assert need.name == "gpu-al2023-200gib-h100-spot"  # its own class: the terms reach no other pool
    nc = {
        "apiVersion": versions.KARPENTER_NODECLASS_API,
        "kind": "EC2NodeClass",
        "metadata": {"name": need.name},
        "spec": karpenter.ec2_node_class_spec(spec, need, "role"),
    }
    (plan,) = [p for p in karpenter.nodepool_plans(spec) if p.pool.name == "h100-spot"]
    np = {
        "apiVersion": versions.KARPENTER_NODEPOOL_API,
        "kind": "NodePool",
        "metadata": {"name": plan.name},
        "spec": karpenter.node_pool_spec(spec, plan),
    }
    assert _errors(_schema("ec2nodeclass.karpenter.k8s.aws.v1.strict.json"), nc) == [] and _cel_nodeclass(nc) == []
    assert _errors(_schema("nodepool.karpenter.sh.v1.strict.json"), np) == [] and _cel_nodepool(np) == []
    terms = nc["spec"]["capacityReservationSelectorTerms"]
    assert terms == expected_terms
    reqs = {r["key"]: r["values"] for r in np["spec"]["template"]["spec"]["requirements"]}
    assert reqs["karpenter.sh/capacity-type"] == ["reserved"]
    assert reqs["topology.kubernetes.io/zone"] == ["us-east-1b"]
    # the other pools keep the shared class
    assert karpenter.node_class_need(spec, spec.pool("a100-train")).owner is None


def test_reserved_capacity_feature_gate_is_on_in_the_pinned_chart():
    values = yaml.safe_load((UPSTREAM / "karpenter" / "values.yaml").read_text())
    assert values["settings"]["featureGates"]["reservedCapacity"] is True


# ------------------------------------------------------------------------------------------------ gcp


def test_gke_old_and_new_reservation_keys_read_alike():
    old = stack_config("prod-gcp")
    _, pool = _pool(old, "h100-train")
    pool.pop("reservation")
    pool["gke"].update(reservation="specific", reservationName="ml-prod-h100-train")
    new_spec, old_spec = load_spec(stack_config("prod-gcp")), load_spec(old)
    a, b = new_spec.pool("h100-train"), old_spec.pool("h100-train")
    assert (
        gke_pools.reservation_affinity(a)
        == gke_pools.reservation_affinity(b)
        == {
            "consumeReservationType": "SPECIFIC_RESERVATION",
            "key": "compute.googleapis.com/reservation-name",
            "values": ["ml-prod-h100-train"],
        }
    )
    assert reservations.pool_reservation(b).describe() == reservations.pool_reservation(a).describe()
    # both spellings at once: refused, naming the new one
    both = stack_config("prod-gcp")
    i, pool = _pool(both, "h100-train")
    pool["gke"].update(reservation="specific", reservationName="x")
    assert "older spelling" in problems(both)[f"gpu-platform:nodePools[{i}].gke.reservation"][0]


def test_gke_reservation_rules_fail():
    cfg = stack_config("prod-gcp")
    i, pool = _pool(cfg, "h100-train")
    pool["reservation"] = {"kind": "capacity-block", "ids": ["a", "b"], "availabilityZone": "us-central1-b"}
    found = problems(cfg)
    at = f"gpu-platform:nodePools[{i}]"
    assert "AWS product" in found[f"{at}.reservation.kind"][0]
    assert "exactly one" in found[f"{at}.reservation.ids"][0]
    assert "us-central1-b" in found[f"{at}.gke.zones"][0]


def test_gke_gpudirect_networks():
    r = rendered("prod-gcp")
    nets = r.find("gcp:container/nodePool:NodePool", "gke-h100-train").inputs["networkConfig"]
    assert [n["network"] for n in nets["additionalNodeNetworkConfigs"]] == [
        f"ml-prod-gpu-net-{k}" for k in (1, 2, 3, 4)
    ]
    assert "networkConfig" not in r.find("gcp:container/nodePool:NodePool", "gke-h100-burst").inputs

    cfg = stack_config("prod-gcp")
    i, pool = _pool(cfg, "h100-train")
    pool["gke"]["additionalNetworks"].pop()  # 3 of a3-highgpu-8g's 4
    msg = problems(cfg)[f"gpu-platform:nodePools[{i}].gke.additionalNetworks"][0]
    assert "GPUDirect-TCPX" in msg and "needs its 4 GPU networks" in msg and "nccl-tcpx-installer" in msg

    cfg = stack_config("prod-gcp")
    i, pool = _pool(cfg, "h100-train")
    pool.update(instanceTypes=["a3-megagpu-8g"])
    assert "needs its 8 GPU networks" in problems(cfg)[f"gpu-platform:nodePools[{i}].gke.additionalNetworks"][0]

    cfg = stack_config("prod-gcp")
    j, l4 = _pool(cfg, "l4-serving")
    l4["gke"] = {"additionalNetworks": [{"network": "n", "subnetwork": "s"}]}
    assert "GPUDirect machine types" in problems(cfg)[f"gpu-platform:nodePools[{j}].gke.additionalNetworks"][0]


def test_resources_json_shape_is_json():
    """The new arguments serialise (resources.json is written from these inputs)."""
    r = rendered("prod-aws")
    json.dumps(r.find(LAUNCH_TEMPLATE, "a100-train").inputs)


def test_karpenter_efa_pool_gets_its_own_class_placement_group_and_security_group():
    cfg = stack_config("prod-aws")
    _, spot = _pool(cfg, "h100-spot")
    spot["efa"] = True
    spot["karpenter"]["zone"] = "us-east-1c"
    spec = load_spec(cfg)
    pool = spec.pool("h100-spot")
    need = karpenter.node_class_need(spec, pool)
    nc = {
        "apiVersion": versions.KARPENTER_NODECLASS_API,
        "kind": "EC2NodeClass",
        "metadata": {"name": need.name},
        "spec": karpenter.ec2_node_class_spec(spec, need, "role"),
    }
    assert need.name == "gpu-al2023-200gib-h100-spot"
    assert nc["spec"]["placementGroupSelector"] == {"name": "ml-prod-h100-spot-efa"}
    assert nc["spec"]["securityGroupSelectorTerms"] == [
        {"tags": {"karpenter.sh/discovery": "ml-prod"}},  # the stack's groups (ORed)
        {"name": "ml-prod-h100-spot-efa"},  # and the pool's EFA group
    ]
    assert "networkInterfaces" not in nc["spec"]  # Karpenter attaches EFA per card for pods requesting it
    assert _errors(_schema("ec2nodeclass.karpenter.k8s.aws.v1.strict.json"), nc) == [] and _cel_nodeclass(nc) == []
    for plan in [p for p in karpenter.nodepool_plans(spec) if p.pool.name == "h100-spot"]:
        np = {
            "apiVersion": versions.KARPENTER_NODEPOOL_API,
            "kind": "NodePool",
            "metadata": {"name": plan.name},
            "spec": karpenter.node_pool_spec(spec, plan),
        }
        assert _errors(_schema("nodepool.karpenter.sh.v1.strict.json"), np) == [] and _cel_nodepool(np) == []
        reqs = {r["key"]: r["values"] for r in np["spec"]["template"]["spec"]["requirements"]}
        assert reqs["topology.kubernetes.io/zone"] == ["us-east-1c"]
        assert np["spec"]["template"]["spec"]["nodeClassRef"]["name"] == need.name
    # the device plugin covers it too
    assert efa.device_plugin_values(spec)["supportedInstanceLabels"]["values"] == [
        "a100-gang",
        "a100-train",
        "h100-spot",
    ]
    assert efa.interfaces_per_node(pool) == 32


def test_karpenter_efa_pool_resources():
    from conftest import render_config

    cfg = stack_config("prod-aws")
    _, spot = _pool(cfg, "h100-spot")
    spot["efa"] = True
    spot["karpenter"]["zone"] = "us-east-1c"
    r = render_config(cfg)
    pg = r.find(PLACEMENT_GROUP, "h100-spot-efa")
    assert pg.inputs == {**pg.inputs, "strategy": "cluster", "name": "ml-prod-h100-spot-efa"}
    assert pg.parent == "karpenter-efa-networks"
    sg = r.find(SECURITY_GROUP, "h100-spot-efa").inputs
    assert sg["name"] == "ml-prod-h100-spot-efa"  # what the EC2NodeClass selects by name
    rule = r.find(INGRESS, "h100-spot-efa-in").inputs
    assert rule["referencedSecurityGroupId"] == rule["securityGroupId"]
