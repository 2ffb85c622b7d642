"""A cluster the platform creates (``cluster.create``, aws) or takes from another stack (``cluster.fromStack``),
issue 30. Expectations are written out by hand: the subnets of a /16 cut into /19s from the start and /24s from
the end, the tags AWS's load balancer controller and Karpenter discover subnets by, the add-on versions of the EKS
user guide's tables, the access policy ARN of the EKS API reference, the prices of the AWS pricing pages.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from typing import Any

import pulumi
import pytest
import yaml
from conftest import ROOT, STACKS, render_config, rendered, stack_config

from components.cli import main as cli, synth
from components.cli.loader import load_spec
from components.plan import plan as plan_mod
from components.plan.cluster_stack import ClusterStackPlan
from components.render.cluster_stack import MissingOutputs, check_outputs
from components.spec.model import SpecError, parse_spec

STARTER = "starter-aws"
CLUSTER = "gpu-platform:cluster"


def starter(**eks: Any) -> dict[str, Any]:
    cfg = copy.deepcopy(stack_config(STARTER))
    cfg[CLUSTER]["create"]["eks"].update(eks)
    return cfg


def _node_selectors(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        found = [value["nodeSelector"]] if isinstance(value.get("nodeSelector"), dict) else []
        return found + [s for v in value.values() for s in _node_selectors(v)]
    if isinstance(value, list):
        return [s for v in value for s in _node_selectors(v)]
    return []


def _res(r, typ: str) -> dict[str, Any]:
    return {x.name: x for x in r.of_type(typ)}


# ------------------------------------------------------------------------------------------ the plan


def test_starter_subnets_are_cut_from_both_ends_of_the_vpc():
    p = plan_mod.build(load_spec(stack_config(STARTER)), STARTER).eks_create
    got = [(s.zone, s.cidr, s.public) for s in p.subnets]
    assert got == [
        ("us-east-1a", "10.0.0.0/19", False),
        ("us-east-1b", "10.0.32.0/19", False),
        ("us-east-1a", "10.0.254.0/24", True),
        ("us-east-1b", "10.0.255.0/24", True),
    ]
    assert p.nat_gateway_zones == ("us-east-1a",)  # natGateways: one


def test_three_zones_with_a_nat_gateway_each():
    cfg = starter(availabilityZones=["us-east-1a", "us-east-1b", "us-east-1c"], natGateways="per-zone")
    p = plan_mod.build(load_spec(cfg), "t").eks_create
    assert [s.cidr for s in p.subnets if not s.public] == ["10.0.0.0/19", "10.0.32.0/19", "10.0.64.0/19"]
    assert [s.cidr for s in p.subnets if s.public] == ["10.0.253.0/24", "10.0.254.0/24", "10.0.255.0/24"]
    assert p.nat_gateway_zones == ("us-east-1a", "us-east-1b", "us-east-1c")


def test_subnet_tags_let_karpenter_and_load_balancers_find_them():
    p = plan_mod.build(load_spec(stack_config(STARTER)), STARTER).eks_create
    private = next(s for s in p.subnets if not s.public)
    public = next(s for s in p.subnets if s.public)
    assert private.tags["karpenter.sh/discovery"] == "gpu-starter"
    assert private.tags["kubernetes.io/role/internal-elb"] == "1"
    assert "kubernetes.io/role/elb" not in private.tags
    assert public.tags["kubernetes.io/role/elb"] == "1"
    assert "karpenter.sh/discovery" not in public.tags


# The EKS add-on builds per minor, as AWS's pages name them (see versions.EKS_ADDON_VERSIONS for each source).
ADDON_BUILDS = {
    "1.33": {
        "vpc-cni": "v1.21.1-eksbuild.7",
        "coredns": "v1.13.2-eksbuild.4",
        "kube-proxy": "v1.33.10-eksbuild.13",
        "eks-pod-identity-agent": "v1.3.10-eksbuild.2",
        "aws-ebs-csi-driver": "v1.56.0-eksbuild.1",
    },
    "1.34": {
        "vpc-cni": "v1.21.1-eksbuild.7",
        "coredns": "v1.13.2-eksbuild.7",
        "kube-proxy": "v1.34.6-eksbuild.13",
        "eks-pod-identity-agent": "v1.3.10-eksbuild.2",
        "aws-ebs-csi-driver": "v1.56.0-eksbuild.1",
    },
    "1.35": {
        "vpc-cni": "v1.21.1-eksbuild.7",
        "coredns": "v1.14.2-eksbuild.4",
        "kube-proxy": "v1.35.3-eksbuild.13",
        "eks-pod-identity-agent": "v1.3.10-eksbuild.2",
        "aws-ebs-csi-driver": "v1.57.1-eksbuild.1",
    },
}


@pytest.mark.parametrize("version", sorted(ADDON_BUILDS))
def test_every_addon_is_pinned_for_the_kubernetes_version(version):
    """All six add-ons the issue names carry a build chosen for the cluster's minor; none is left to EKS's default."""
    cfg = starter()
    cfg[CLUSTER]["kubernetesVersion"] = version
    p = plan_mod.build(load_spec(cfg), "t").eks_create
    assert {a.name: a.version for a in p.addons} == ADDON_BUILDS[version]
    assert p.node_monitoring_agent_version == "v1.6.6-eksbuild.1"


def test_a_cluster_on_a_minor_in_extended_support_still_deploys_and_pays_for_it():
    """1.33 left EKS standard support on 2026-07-29: a cluster created on it keeps deploying (its add-ons pinned),
    the summary says so, and the cost counts the extended-support control plane ($0.60 an hour)."""
    from components.explain import summary as summary_mod
    from components.plan import cost

    cfg = starter()
    cfg[CLUSTER]["kubernetesVersion"] = "1.33"
    assert problems(cfg) == []
    spec = load_spec(cfg)
    warned = [w for w in summary_mod.warnings(plan_mod.build(spec, "t")) if "standard support" in w]
    assert warned == [
        "cluster.kubernetesVersion 1.33: EKS standard support ended 2026-07-29; EKS bills the control plane as "
        "extended support ($0.60 an hour instead of $0.10) until the cluster is upgraded (the cost counts it)"
    ]
    plane = [f for f in cost.fixed_costs(spec) if f["item"].startswith("EKS control plane")]
    assert [(f["item"], f["hourlyUsd"]) for f in plane] == [
        ("EKS control plane (extended support)", {"min": 0.6, "max": 0.6})
    ]
    cfg[CLUSTER]["kubernetesVersion"] = "1.35"
    plane = [f for f in cost.fixed_costs(load_spec(cfg)) if f["item"].startswith("EKS control plane")]
    assert [(f["item"], f["hourlyUsd"]) for f in plane] == [("EKS control plane", {"min": 0.1, "max": 0.1})]


def test_a_minor_near_the_end_of_standard_support_is_a_warning():
    from components.explain import summary as summary_mod

    cfg = starter()
    cfg[CLUSTER]["kubernetesVersion"] = "1.34"
    warned = [w for w in summary_mod.warnings(plan_mod.build(load_spec(cfg), "t")) if "standard support" in w]
    assert warned == [
        "cluster.kubernetesVersion 1.34: EKS standard support ends 2026-12-02 (6 days after 2026-11-26, when the "
        "tables were read); then EKS bills the control plane as extended support ($0.60 an hour instead of $0.10) "
        "until the cluster is upgraded"
    ]
    cfg[CLUSTER]["kubernetesVersion"] = "1.35"  # ends 2027-03-27: 121 days out
    assert [w for w in summary_mod.warnings(plan_mod.build(load_spec(cfg), "t")) if "standard support" in w] == []


def test_found_and_referenced_clusters_have_no_create_plan():
    for stack in STACKS:
        p = plan_mod.build(load_spec(stack_config(stack)), stack)
        assert (p.eks_create is not None) == (stack == STARTER), stack
        assert p.cluster_stack is None


# ------------------------------------------------------------------------------------------ resources


def test_starter_vpc_subnets_and_routes():
    r = rendered(STARTER)
    (vpc,) = r.of_type("aws:ec2/vpc:Vpc")
    assert vpc.inputs["cidrBlock"] == "10.0.0.0/16" and vpc.inputs["enableDnsHostnames"] is True
    subnets = _res(r, "aws:ec2/subnet:Subnet")
    assert subnets["gpu-starter-private-us-east-1a"].inputs["cidrBlock"] == "10.0.0.0/19"
    assert subnets["gpu-starter-public-us-east-1b"].inputs["mapPublicIpOnLaunch"] is True
    assert len(r.of_type("aws:ec2/natGateway:NatGateway")) == 1
    routes = _res(r, "aws:ec2/route:Route")
    assert (
        routes["gpu-starter-private-us-east-1b-default"].inputs["natGatewayId"] == "offline-placeholder-nat-us-east-1a"
    )
    assert routes["public-default"].inputs["gatewayId"] == "offline-placeholder-igw"


def test_starter_cluster_security_settings():
    r = rendered(STARTER)
    (cluster,) = r.of_type("aws:eks/cluster:Cluster")
    i = cluster.inputs
    assert i["accessConfig"] == {"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": False}
    assert i["encryptionConfig"] == {
        "provider": {"keyArn": "arn:aws:kms::000000000000:key/secrets"},
        "resources": ["secrets"],
    }
    assert i["enabledClusterLogTypes"] == ["api", "audit", "authenticator", "controllerManager", "scheduler"]
    assert i["vpcConfig"]["publicAccessCidrs"] == ["203.0.113.0/24"]
    assert i["vpcConfig"]["endpointPrivateAccess"] is True
    assert i["version"] == "1.35"
    (key,) = r.of_type("aws:kms/key:Key")
    assert key.inputs["enableKeyRotation"] is True
    (logs,) = r.of_type("aws:cloudwatch/logGroup:LogGroup")
    assert logs.inputs == {**logs.inputs, "name": "/aws/eks/gpu-starter/cluster", "retentionInDays": 90}
    assert "control-plane" in cluster.depends_on  # created first, so EKS writes into it


def test_admins_get_an_access_entry_with_the_cluster_admin_policy():
    r = rendered(STARTER)
    admin = "arn:aws:iam::111122223333:role/platform-admin"
    entry = r.find("aws:eks/accessEntry:AccessEntry", "admin-0").inputs
    assert entry["principalArn"] == admin and entry["type"] == "STANDARD"
    assoc = r.find("aws:eks/accessPolicyAssociation:AccessPolicyAssociation", "admin-0").inputs
    assert assoc["policyArn"] == "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
    assert assoc["accessScope"] == {"type": "cluster"} and assoc["principalArn"] == admin


def test_addons_pinned_and_ebs_csi_through_pod_identity():
    r = rendered(STARTER)
    addons = {a.name: a.inputs for a in r.of_type("aws:eks/addon:Addon")}
    assert {n: a["addonVersion"] for n, a in addons.items() if n != "eks-node-monitoring-agent"} == ADDON_BUILDS["1.35"]
    assert addons["eks-node-monitoring-agent"]["addonVersion"] == "v1.6.6-eksbuild.1"
    assert addons["aws-ebs-csi-driver"]["podIdentityAssociations"] == [
        {"roleArn": "arn:aws:iam::000000000000:role/gpu-starter-ebs-csi", "serviceAccount": "ebs-csi-controller-sa"}
    ]
    # the node monitoring agent stays the node health component's: one add-on, not two
    monitoring = [a for a in r.of_type("aws:eks/addon:Addon") if a.inputs["addonName"] == "eks-node-monitoring-agent"]
    assert len(monitoring) == 1 and monitoring[0].parent == "node-health"
    role = r.find("aws:iam/role:Role", "gpu-starter-ebs-csi").inputs
    trust = json.loads(role["assumeRolePolicy"])["Statement"][0]
    assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"}


def test_system_nodes_are_where_the_controllers_are_scheduled():
    r = rendered(STARTER)
    ng = r.find("aws:eks/nodeGroup:NodeGroup", "system-nodes").inputs
    assert ng["capacityType"] == "ON_DEMAND" and ng["amiType"] == "AL2023_x86_64_STANDARD"
    lt = r.find("aws:ec2/launchTemplate:LaunchTemplate", "system-nodes").inputs
    assert lt["metadataOptions"]["httpTokens"] == "required"
    assert lt["blockDeviceMappings"][0]["ebs"]["encrypted"] == "true"
    labels = ng["labels"]
    # every nodeSelector the controllers' releases and objects carry, but the GPU nodes' own (DaemonSets there)
    selectors = [s for x in r.resources if not x.type.startswith("aws:") for s in _node_selectors(x.inputs)]
    system = [s for s in selectors if not any(k.startswith(("gpu-platform/pool", "nvidia.com")) for k in s)]
    assert len(system) >= 5
    for selector in system:
        wanted = {k: v for k, v in selector.items() if k != "kubernetes.io/os"}
        assert wanted.items() <= labels.items(), selector
    assert labels == {"gpu-platform/node-role": "system"}


def test_everything_naming_the_cluster_waits_for_it():
    r = rendered(STARTER)
    for typ, name in (
        ("aws:eks/podIdentityAssociation:PodIdentityAssociation", "karpenter-pod-identity"),
        ("aws:eks/accessEntry:AccessEntry", "karpenter-node-access"),
        ("aws:eks/addon:Addon", "eks-node-monitoring-agent"),
    ):
        deps = r.find(typ, name).depends_on
        assert {"cluster", "vpc-cni"} <= set(deps), (name, deps)
    (provider,) = [x for x in r.resources if x.type == "pulumi:providers:kubernetes"]
    assert {"system-nodes", "coredns"} <= set(provider.depends_on)


def test_a_found_cluster_is_still_looked_up():
    r = rendered("dev-aws")
    assert "aws:eks/getCluster:getCluster" in r.lookups
    assert r.of_type("aws:eks/cluster:Cluster") == []
    assert "aws:eks/getCluster:getCluster" not in rendered(STARTER).lookups


def test_starter_cost_counts_the_fixed_costs():
    doc = json.loads((synth.files(rendered(STARTER)))["cost.json"])
    fixed = {f["item"]: f for f in doc["fixed"]}
    assert fixed["EKS control plane"]["hourlyUsd"] == {"min": 0.1, "max": 0.1}
    assert fixed["NAT gateway"]["hourlyUsd"] == {"min": 0.045, "max": 0.045}
    assert fixed["system nodes (m6i.xlarge, on-demand)"]["hourlyUsd"] == {"min": 0.384, "max": 0.576}
    # 4 x g6.4xlarge spot (1.3232 on-demand less 40 %) + 0.10 + 0.045 + 3 x 0.192
    assert doc["total"]["maxHourlyUsd"] == pytest.approx(4 * 1.3232 * 0.6 + 0.1 + 0.045 + 0.576, abs=0.01)
    assert "fixed" not in json.loads(synth.files(rendered("dev-aws"))["cost.json"])


# ------------------------------------------------------------------------------------------ rules


def problems(cfg: dict[str, Any]) -> list[str]:
    try:
        load_spec(cfg)
    except SpecError as err:
        return [f"{p.path}: {p.message}" for p in err.problems]
    return []


@pytest.mark.parametrize(
    "change,expected",
    [
        ({"availabilityZones": ["us-east-1a"]}, "gpu-platform:cluster.create.eks.availabilityZones: name at least two"),
        (
            {"availabilityZones": ["us-east-1a", "us-west-2b"]},
            "gpu-platform:cluster.create.eks.availabilityZones[1]: us-west-2b is not a zone of us-east-1",
        ),
        ({"publicAccessCidrs": []}, "gpu-platform:cluster.create.eks.publicAccessCidrs: is required"),
        ({"logRetentionDays": 100}, "gpu-platform:cluster.create.eks.logRetentionDays: 100 is not a CloudWatch Logs"),
        (
            {"publicAccessCidrs": ["10.0.0.1/8"]},
            "gpu-platform:cluster.create.eks.publicAccessCidrs[0]: 10.0.0.1/8 is not",
        ),
        (
            {"endpointPublicAccess": False, "endpointPrivateAccess": False},
            "gpu-platform:cluster.create.eks.endpointPrivateAccess: one endpoint must be on",
        ),
    ],
)
def test_eks_rules_refuse_bad_settings(change, expected):
    got = problems(starter(**change))
    assert len(got) == 1 and got[0].startswith(expected), got


@pytest.mark.parametrize(
    "network,expected",
    [
        ({"cidr": "10.0.0.0/12"}, "gpu-platform:cluster.create.network.cidr: /12 is outside /16../24"),
        ({"cidr": "10.0.0.1/16"}, "gpu-platform:cluster.create.network.cidr: 10.0.0.1/16 is not a network CIDR"),
        (
            {"cidr": "10.0.0.0/20", "privateSubnetPrefix": 21, "publicSubnetPrefix": 24},
            "gpu-platform:cluster.create.network.cidr: 10.0.0.0/20 is too small for 2 private /21",
        ),
        (
            {"cidr": "10.0.0.0/24", "privateSubnetPrefix": 20},
            "gpu-platform:cluster.create.network.privateSubnetPrefix: /20 is larger than the VPC /24",
        ),
        (
            {"serviceCidr": "10.0.0.0/16"},
            "gpu-platform:cluster.create.network.serviceCidr: 10.0.0.0/16 overlaps the VPC 10.0.0.0/16",
        ),
        ({"serviceCidr": "172.20.0.0/25"}, "gpu-platform:cluster.create.network.serviceCidr: /25 is outside /12../24"),
    ],
)
def test_network_rules_refuse_bad_cidrs(network, expected):
    cfg = starter()
    cfg[CLUSTER]["create"]["network"] = network
    got = problems(cfg)
    assert len(got) == 1 and got[0].startswith(expected), got


def test_a_network_that_fits_exactly_passes():
    cfg = starter()
    # two /21 private from the start, two /24 public from the end of a /20: 10.0.0.0/21, 10.0.8.0/21 would reach
    # the end, so /22 private: 10.0.0.0/22, 10.0.4.0/22; public 10.0.14.0/24, 10.0.15.0/24
    cfg[CLUSTER]["create"]["network"] = {"cidr": "10.0.0.0/20", "privateSubnetPrefix": 22, "publicSubnetPrefix": 24}
    assert problems(cfg) == []


def test_the_created_roles_must_fit_iam_names():
    """IAM role names take at most 64 characters: the longest created role is <name>-system-nodes (13 more)."""
    cfg = starter()
    cfg["gpu-platform:karpenter"] = {"namePrefix": "gpu"}  # Karpenter's own names have their rule
    cfg[CLUSTER]["name"] = "c" * 51
    assert problems(cfg) == []
    cfg[CLUSTER]["name"] = "c" * 52
    (got,) = problems(cfg)
    assert got.startswith("gpu-platform:cluster.name: makes the created cluster's IAM role 'cccc")
    assert got.endswith("-system-nodes' (65 characters); IAM role names take at most 64 (shorten the cluster name)")


def test_version_rules():
    cfg = starter()
    cfg[CLUSTER]["kubernetesVersion"] = "1.29"
    assert problems(cfg) == [
        "gpu-platform:cluster.kubernetesVersion: 1.29 has no EKS add-on versions here (have: 1.33, 1.34, 1.35)"
    ]
    del cfg[CLUSTER]["kubernetesVersion"]
    assert problems(cfg) == [
        "gpu-platform:cluster.kubernetesVersion: is required with cluster.create (the created version)"
    ]


def test_create_and_from_stack_exclude_each_other():
    cfg = starter()
    cfg[CLUSTER]["fromStack"] = "acme/clusters/prod"
    assert problems(cfg) == ["gpu-platform:cluster.fromStack: set create or fromStack, not both"]
    cfg = copy.deepcopy(stack_config("local"))
    cfg[CLUSTER] = {**cfg.get(CLUSTER, {}), "fromStack": "acme/clusters/prod"}
    assert "gpu-platform:cluster.fromStack: does not apply when cloud is existing" in problems(cfg)


def test_a_rule_exits_2_through_the_cli_with_one_line(tmp_path, capsys):
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_text(yaml.safe_dump({"config": starter(availabilityZones=["us-east-1a"])}))
    assert cli.main(["check", "bad", "--config", str(path)]) == cli.EXIT_INVALID == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cluster.create.eks.availabilityZones: name at least two zones" in err[0]


def test_every_shipped_stack_parses_create_as_absent_or_complete():
    for stack in STACKS:
        spec = parse_spec(stack_config(stack))
        assert (spec.cluster.create is not None) == (stack in (STARTER, "starter-gcp")), stack


# ------------------------------------------------------------------------------------------ fromStack


def _from_stack(stack: str) -> dict[str, Any]:
    cfg = copy.deepcopy(stack_config(stack))
    cfg[CLUSTER]["fromStack"] = "acme/clusters/prod"
    return cfg


def test_missing_outputs_are_named_with_the_stack():
    p = ClusterStackPlan(
        "acme/clusters/prod", "aws", "ml-dev", {"clusterName": "ml-dev"}, ("clusterName", "endpoint", "vpcId"), ()
    )
    with pytest.raises(MissingOutputs) as err:
        check_outputs(p, {"clusterName": "ml-dev", "endpoint": "https://e"})
    assert str(err.value) == (
        "gpu-platform:cluster.fromStack: stack acme/clusters/prod has no output vpcId (the cluster's VPC (EFA "
        "security groups))"
    )
    with pytest.raises(MissingOutputs) as err:
        check_outputs(p, {"clusterName": "other", "endpoint": "e", "vpcId": "v"})
    assert str(err.value).endswith("exports clusterName 'other', but gpu-platform:cluster.name is 'ml-dev'")


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ([], "an empty list"),
        ([""], "[''] (an entry that is not a non-empty string)"),
        ("subnet-0a1b", "str 'subnet-0a1b'"),  # read as a list, a string is its characters
    ],
    ids=["empty", "empty-entry", "string"],
)
def test_a_required_list_output_must_hold_something(value, shown):
    """Issue 40.6: privateSubnetIds [] (or a string, or an empty entry) went on to the node groups' cloud call,
    which fails naming no output; it is refused naming the output and what it must hold."""
    spec = load_spec(_from_stack("dev-aws"))
    p = plan_mod.build(spec, "t").cluster_stack
    outputs = {o: "x" for o in p.required} | dict(p.identity) | {"privateSubnetIds": value}
    with pytest.raises(MissingOutputs) as err:
        check_outputs(p, outputs)
    assert str(err.value) == (
        f"gpu-platform:cluster.fromStack: stack acme/clusters/prod exports privateSubnetIds as {shown}: it must be "
        "a list of at least one subnet ID, where the managed node groups launch"
    )


def test_a_regional_gke_clusters_node_locations_must_name_a_zone_a_zonal_ones_may_be_empty():
    from components.plan.cluster_stack import cluster_stack_plan

    regional = cluster_stack_plan(load_spec(_from_stack("dev-gcp")))
    outputs = {o: "x" for o in regional.required} | dict(regional.identity) | {"nodeLocations": []}
    with pytest.raises(MissingOutputs) as err:
        check_outputs(regional, outputs)
    assert "exports nodeLocations as an empty list: it must be a list of at least one zone" in str(err.value)
    assert check_outputs(regional, outputs | {"nodeLocations": ["us-central1-a"]})
    zonal_cfg = _from_stack("dev-gcp")
    zonal_cfg[CLUSTER]["location"] = "us-central1-a"
    zonal = cluster_stack_plan(load_spec(zonal_cfg))
    outputs = {o: "x" for o in zonal.required} | dict(zonal.identity)
    assert check_outputs(zonal, outputs | {"nodeLocations": []})
    with pytest.raises(MissingOutputs, match=r"exports nodeLocations as str 'us-central1-b': it must be a list$"):
        check_outputs(zonal, outputs | {"nodeLocations": "us-central1-b"})


def test_irsa_needs_the_oidc_issuer_pod_identity_does_not():
    spec = load_spec(_from_stack("dev-aws"))
    p = plan_mod.build(spec, "t").cluster_stack
    assert "oidcIssuer" in p.optional and "oidcIssuer" not in p.required
    cfg = _from_stack("dev-aws")
    cfg["gpu-platform:karpenter"]["identity"] = "irsa"
    assert "oidcIssuer" in plan_mod.build(load_spec(cfg), "t").cluster_stack.required


def test_a_referenced_eks_cluster_feeds_the_node_groups_and_provider():
    r = render_config(_from_stack("dev-aws"), "fs")
    assert "aws:eks/getCluster:getCluster" not in r.lookups
    ng = r.find("aws:eks/nodeGroup:NodeGroup", "l4-shared").inputs
    assert ng["subnetIds"] == synth.STACK_OUTPUTS["aws"]["privateSubnetIds"]
    (provider,) = [x for x in r.resources if x.type == "pulumi:providers:kubernetes"]
    kubeconfig = json.loads(provider.inputs["kubeconfig"])
    assert kubeconfig["clusters"][0]["cluster"]["server"] == synth.STACK_OUTPUTS["aws"]["endpoint"]


def test_a_referenced_gke_cluster_feeds_the_provider(tap_mocks):
    """The endpoint and CA come from the stack's outputs; GKE is asked only what the cluster is (Autopilot,
    Workload Identity), by the name, location and project the outputs give."""
    r = render_config(_from_stack("dev-gcp"), "fs")
    assert (
        tap_mocks.calls.count(
            (
                "gcp:container/getCluster:getCluster",
                {"name": "ml-dev", "location": "us-central1", "project": "ml-dev-project"},
            )
        )
        == 1
    )
    (provider,) = [x for x in r.resources if x.type == "pulumi:providers:kubernetes"]
    assert provider.inputs["clusterIdentifier"] == "projects/ml-dev-project/locations/us-central1/clusters/ml-dev"
    kubeconfig = json.loads(provider.inputs["kubeconfig"])
    assert kubeconfig["clusters"][0]["cluster"]["server"] == f"https://{synth.STACK_OUTPUTS['gcp']['endpoint']}"


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (
            {"enableAutopilot": True, "workloadIdentityConfigs": [{"workloadPool": "ml-dev-project.svc.id.goog"}]},
            "GKE cluster ml-dev (ml-dev-project/us-central1) is an Autopilot cluster; gpu-platform creates Standard "
            "node pools",
        ),
        (
            {"enableAutopilot": False, "workloadIdentityConfigs": []},
            "GKE cluster ml-dev (ml-dev-project/us-central1) has no Workload Identity Federation; enable it",
        ),
    ],
    ids=["autopilot", "no-workload-identity"],
)
def test_a_referenced_gke_cluster_that_cannot_take_node_pools_stops_the_deploy(
    tap_mocks, failed_render, answer, message
):
    """A cluster stack says where its cluster is, not what it is: the cluster GKE describes is checked as a found
    one is, and the deploy stops before any node pool registers."""
    tap_mocks.answers["gcp:container/getCluster:getCluster"] = answer
    with pytest.raises(pulumi.RunError, match=re.escape(message)):
        render_config(_from_stack("dev-gcp"), "fs")
    assert "gcp:container/nodePool:NodePool" not in tap_mocks.registered


def test_a_referenced_gke_cluster_must_be_where_the_stack_file_says():
    p = plan_mod.build(load_spec(_from_stack("dev-gcp")), "t").cluster_stack
    assert dict(p.identity) == {"clusterName": "ml-dev", "location": "us-central1", "project": "ml-dev-project"}
    outputs = {o: "x" for o in p.required} | dict(p.identity) | {"project": "other"}
    with pytest.raises(MissingOutputs) as err:
        check_outputs(p, outputs)
    assert str(err.value) == (
        "gpu-platform:cluster.fromStack: stack acme/clusters/prod exports project 'other', but "
        "gpu-platform:cluster.project is 'ml-dev-project'"
    )


def test_a_missing_output_exits_2_through_the_cli(tmp_path):
    """In a process of its own: the failed run leaves asyncio futures behind, which must not be finalized inside
    another test (CPython 3.11 raises SystemError when one is collected during ast.parse). The command runs as the
    console script runs it (its arguments from the process, so that it ends the process with the heap frozen):
    called with arguments, the failed render's event loop stayed collectable, and the interpreter's exit now and
    then finalized its self-pipe socket before it ("Exception ignored in: BaseEventLoop.__del__", ~1 run in 20)."""
    path = tmp_path / "Pulumi.fs.yaml"
    path.write_text(yaml.safe_dump({"config": _from_stack("dev-aws")}))
    script = (
        "import sys\n"
        "from components.cli import main, synth\n"
        "del synth.STACK_OUTPUTS['aws']['endpoint']\n"
        f"sys.argv = ['gpu-platform', 'check', 'fs', '--config', {str(path)!r}]\n"
        "sys.exit(main.main())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"{path}: gpu-platform:cluster.fromStack: stack acme/clusters/prod has no output endpoint "
        "(the API server's URL)"
    ]


def test_a_created_cluster_exports_what_from_stack_reads():
    """starter-aws is a cluster stack for the next one: its outputs carry every output fromStack needs."""
    from components.plan.cluster_stack import AWS_OUTPUTS

    outputs = json.loads(synth.files(rendered(STARTER))["outputs.json"])
    p = ClusterStackPlan(
        "acme/gpu/starter-aws", "aws", "gpu-starter", {"clusterName": "gpu-starter"}, tuple(AWS_OUTPUTS), ()
    )
    assert check_outputs(p, outputs) is outputs
    assert outputs["privateSubnetIds"] == [
        "offline-placeholder-gpu-starter-private-us-east-1a",
        "offline-placeholder-gpu-starter-private-us-east-1b",
    ]
    assert "clusterName" not in json.loads(synth.files(rendered("dev-aws"))["outputs.json"])


def test_irsa_on_a_created_cluster_gets_an_oidc_provider_its_roles_trust():
    cfg = starter()
    cfg["gpu-platform:karpenter"] = {"identity": "irsa"}
    r = render_config(cfg, "irsa")
    (provider,) = r.of_type("aws:iam/openIdConnectProvider:OpenIdConnectProvider")
    issuer = "https://oidc.eks.placeholder.amazonaws.com.invalid/id/offline-placeholder"
    assert provider.inputs["url"] == issuer and provider.inputs["clientIdLists"] == ["sts.amazonaws.com"]
    role = r.find("aws:iam/role:Role", "karpenter-controller-role")
    trust = json.loads(role.inputs["assumeRolePolicy"])["Statement"][0]
    assert trust["Principal"]["Federated"].endswith(
        ":oidc-provider/oidc.eks.placeholder.amazonaws.com.invalid/id/offline-placeholder"
    )
    assert "oidc" in role.depends_on
    assert rendered(STARTER).of_type("aws:iam/openIdConnectProvider:OpenIdConnectProvider") == []


def test_node_groups_of_a_created_cluster_follow_its_version():
    """Raising cluster.kubernetesVersion upgrades the control plane and then rolls the created cluster's node
    groups (their version is the cluster's); a found cluster's node groups name none (its upgrades are its
    owner's)."""
    cfg = yaml.safe_load((ROOT / "tests" / "fixtures" / "coverage" / "Pulumi.coverage-aws-create.yaml").read_text())
    r = render_config(cfg["config"], "coverage-aws-create")
    versions_by_group = {g.name: g.inputs.get("version") for g in r.of_type("aws:eks/nodeGroup:NodeGroup")}
    assert len(versions_by_group) >= 2 and set(versions_by_group.values()) == {"1.34"}, versions_by_group
    assert rendered(STARTER).find("aws:eks/nodeGroup:NodeGroup", "system-nodes").inputs["version"] == "1.35"
    found = rendered("dev-aws").of_type("aws:eks/nodeGroup:NodeGroup")
    assert found and all("version" not in g.inputs for g in found)
