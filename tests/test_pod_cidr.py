"""The opt-in secondary CIDR for pods on a created EKS cluster (issue 40, ai-on-eks's VPC CNI custom networking).
EKS user guide, "Customize the secondary network interface in Amazon EKS nodes": associate a secondary CIDR with the
VPC, a subnet per zone from it, set AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG=true and ENI_CONFIG_LABEL_DEF=
topology.kubernetes.io/zone on aws-node (here through the vpc-cni add-on's configurationValues ``env``), and create an
ENIConfig per zone named after it, with the pod subnet and the cluster security group. VPC user guide "VPC CIDR
blocks" (IPv4 CIDR block association restrictions): beside an RFC 1918 primary, a secondary CIDR from another RFC 1918
block is refused; 100.64.0.0/10 (RFC 6598) is permitted.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml
from conftest import ROOT, manifests, render_config, spec_problems, stack_config, strict_crd_schema
from jsonschema import Draft7Validator

from components.cli import main as cli
from components.cli.loader import load_spec
from components.plan import plan as plan_mod

CLUSTER = "gpu-platform:cluster"
ENICONFIG_CRD = ROOT / "tests" / "fixtures" / "amazon-vpc-cni-k8s" / "eniconfigs.crd.k8s.amazonaws.com.yaml"
ZONES = ("us-east-1a", "us-east-1b")


def starter(**network: Any) -> dict[str, Any]:
    cfg = copy.deepcopy(stack_config("starter-aws"))
    cfg[CLUSTER]["create"].setdefault("network", {}).update(network)
    return cfg


def problems(cfg: dict[str, Any]) -> list[str]:
    return spec_problems(cfg)


def test_pods_share_the_node_subnets_by_default():
    r = render_config(starter(), "starter-aws")
    assert manifests(r, "ENIConfig") == []
    assert r.of_type("aws:ec2/vpcIpv4CidrBlockAssociation:VpcIpv4CidrBlockAssociation") == []
    assert r.find("aws:eks/addon:Addon", "vpc-cni").inputs.get("configurationValues") is None


def test_a_pod_cidr_gives_each_zone_a_pod_subnet_and_eniconfig():
    r = render_config(starter(podCidr="100.64.0.0/16"), "starter-aws")
    (assoc,) = r.of_type("aws:ec2/vpcIpv4CidrBlockAssociation:VpcIpv4CidrBlockAssociation")
    assert assoc.inputs["cidrBlock"] == "100.64.0.0/16"
    subnets = {s.inputs["availabilityZone"]: s for s in r.of_type("aws:ec2/subnet:Subnet") if "-pods-" in s.name}
    assert {z: s.inputs["cidrBlock"] for z, s in subnets.items()} == {
        "us-east-1a": "100.64.0.0/18",
        "us-east-1b": "100.64.64.0/18",
    }
    for zone, s in subnets.items():
        assert assoc.name in s.depends_on  # the subnet needs the VPC's secondary CIDR first
        assert "karpenter.sh/discovery" not in s.inputs["tags"]  # no node is launched into a pod subnet
        assert s.inputs["mapPublicIpOnLaunch"] is False
        (rta,) = [a for a in r.of_type("aws:ec2/routeTableAssociation:RouteTableAssociation") if a.name == s.name]
        assert f"gpu-starter-private-{zone}" in rta.depends_on  # the zone's private table: NAT and the S3 endpoint
    env = json.loads(r.find("aws:eks/addon:Addon", "vpc-cni").inputs["configurationValues"])
    assert env == {
        "env": {"AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG": "true", "ENI_CONFIG_LABEL_DEF": "topology.kubernetes.io/zone"}
    }
    crd = yaml.safe_load(ENICONFIG_CRD.read_text())
    schema = strict_crd_schema(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    configs = manifests(r, "ENIConfig")
    assert sorted(c["metadata"]["name"] for c in configs) == list(ZONES)
    for c in configs:
        assert c["apiVersion"] == f"{crd['spec']['group']}/{crd['spec']['versions'][0]['name']}"
        Draft7Validator(schema).validate(c)
        assert c["spec"]["subnet"].endswith(f"pods-{c['metadata']['name']}") and len(c["spec"]["securityGroups"]) == 1


def test_eniconfigs_exist_before_any_node_joins():
    """A node's secondary ENIs take its zone's ENIConfig: created after the vpc-cni add-on (their CRD), before the
    system node group (whose pods would otherwise get no address)."""
    r = render_config(starter(podCidr="100.64.0.0/16"), "starter-aws")
    eni = [x for x in r.resources if x.type == "kubernetes:crd.k8s.amazonaws.com/v1alpha1:ENIConfig"]
    assert len(eni) == 2 and all("vpc-cni" in x.depends_on for x in eni)
    nodes = r.find("aws:eks/nodeGroup:NodeGroup", "system-nodes")
    assert {x.name for x in eni} <= set(nodes.depends_on)


def test_the_plan_shows_the_pod_cidr():
    lines = cli.plan_text(plan_mod.build(load_spec(starter(podCidr="100.64.0.0/16")), "starter-aws"))
    assert (
        "  pods from secondary CIDR 100.64.0.0/16 (VPC CNI custom networking, ENIConfig per zone): us-east-1a "
        "100.64.0.0/18, us-east-1b 100.64.64.0/18" in lines
    )


AT = "stacks/Pulumi.t.yaml: gpu-platform:cluster.create.network.podCidr: "


@pytest.mark.parametrize(
    "network,line",
    [
        (
            {"podCidr": "10.0.128.0/17"},
            AT + "10.0.128.0/17 overlaps the VPC 10.0.0.0/16: choose a range outside it, e.g. 100.64.0.0/16",
        ),
        (
            {"podCidr": "172.16.0.0/16"},
            AT
            + "172.16.0.0/16 is not inside 100.64.0.0/10 (RFC 6598) or 10.0.0.0/8 (the VPC's RFC 1918 block), so AWS "
            "refuses it as the VPC's secondary CIDR",
        ),
        (
            {"podCidr": "8.8.0.0/16"},
            AT + "8.8.0.0/16 is not inside 100.64.0.0/10 (RFC 6598) or 10.0.0.0/8 (the VPC's RFC 1918 block), so AWS "
            "refuses it as the VPC's secondary CIDR",
        ),
        ({"podCidr": "100.64.0.1/16"}, AT + "100.64.0.1/16 is not a network CIDR (host bits set?)"),
        ({"podCidr": "100.64.0.0/25"}, AT + "/25 is outside /16../24"),
        (
            {"podCidr": "100.64.0.0/24", "podSubnetPrefix": 24},
            "stacks/Pulumi.t.yaml: gpu-platform:cluster.create.network.podSubnetPrefix: /24 subnets: 100.64.0.0/24 "
            "holds 1, the cluster needs one per zone (2)",
        ),
        (
            {"podCidr": "100.64.0.0/16", "serviceCidr": "100.64.0.0/20"},
            AT + "100.64.0.0/16 overlaps the Service CIDR 100.64.0.0/20",
        ),
    ],
)
def test_a_pod_cidr_aws_refuses_is_one_line_at_its_key(network, line):
    assert problems(starter(**network)) == [line]


@pytest.mark.parametrize("cidr", ["100.64.0.0/16", "10.1.0.0/16", "100.127.0.0/16"])
def test_pod_cidrs_aws_accepts_pass(cidr):
    assert problems(starter(podCidr=cidr)) == []
