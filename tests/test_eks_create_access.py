"""A created EKS cluster's first `pulumi up` (issue 40.5 and 40.6): who administers it, how its nodes reach the
API, how image layers leave the VPC, and what keeps pods from the system nodes' role. No cloud here: each check is
against AWS's documented behaviour, cited where it is asserted.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pulumi
import pytest
from conftest import render_config, rendered, spec_problems, stack_config

from components.cli.loader import load_spec
from components.plan import plan as plan_mod
from components.plan.aws import cluster_access
from components.render import placeholders as deploy_check
from components.render.aws import deployer

CLUSTER = "gpu-platform:cluster"
ADMIN = "arn:aws:iam::210987654321:role/platform-admin"


def starter(cidrs=("198.18.0.0/15",), admins=(ADMIN,), **eks: Any) -> dict[str, Any]:
    """starter-aws edited as its comments ask (a network and an admin role of one's own)."""
    cfg = copy.deepcopy(stack_config("starter-aws"))
    e = cfg[CLUSTER]["create"]["eks"]
    e["publicAccessCidrs"], e["adminRoleArns"] = list(cidrs), list(admins)
    e.update(eks)
    return cfg


def problems(cfg: dict[str, Any]) -> list[str]:
    return spec_problems(cfg)


# ------------------------------------------------------------------------ 5a: the deployer must be an admin


@pytest.mark.parametrize(
    "caller,admin",
    [
        ("arn:aws:sts::210987654321:assumed-role/platform-admin/alice", True),  # the role, assumed (SSO, CLI)
        ("arn:aws:iam::210987654321:role/platform-admin", True),
        ("arn:aws:sts::210987654321:assumed-role/other/alice", False),
        ("arn:aws:sts::999999999999:assumed-role/platform-admin/alice", False),  # same name, other account
        ("arn:aws-cn:sts::210987654321:assumed-role/platform-admin/alice", False),  # other partition
        ("arn:aws:iam::210987654321:user/alice", False),
        ("arn:aws:iam::210987654321:root", False),
    ],
)
def test_the_deployer_is_an_admin_only_as_one_of_the_admin_roles(caller, admin):
    assert cluster_access.is_admin(caller, [ADMIN]) is admin


def test_a_role_with_a_path_matches_its_assumed_session():
    """Role session ARNs drop the role's path (IAM user guide "IAM identifiers")."""
    assert cluster_access.is_admin(
        "arn:aws:sts::210987654321:assumed-role/gpu/s", ["arn:aws:iam::210987654321:role/ml/gpu"]
    )


def test_a_deployer_outside_the_admins_is_told_the_fix_in_one_line():
    spec = load_spec(starter())
    (p,) = cluster_access.deployer_check(spec).problems("arn:aws:sts::210987654321:assumed-role/ci-deployer/run-7")
    line = p.line("stacks/Pulumi.starter-aws.yaml")
    assert "\n" not in line
    assert line.startswith("stacks/Pulumi.starter-aws.yaml: gpu-platform:cluster.create.eks.adminRoleArns: ")
    assert "fail Unauthorized" in line and "add arn:aws:iam::210987654321:role/ci-deployer" in line
    (user,) = cluster_access.deployer_check(spec).problems("arn:aws:iam::210987654321:user/alice")
    assert "set gpu-platform:cluster.roleArn to one of them" in user.message
    assert cluster_access.deployer_check(spec).problems("arn:aws:sts::210987654321:assumed-role/platform-admin/x") == []


def test_an_update_by_a_non_admin_stops_before_anything_is_registered(monkeypatch, tap_mocks):
    """The check runs where the program starts (components/cli/config.py, render/platform.py), before the VPC,
    the cluster and its nodes: not twenty minutes later at the first Kubernetes call."""
    monkeypatch.setattr(deploy_check, "under_mock_engine", lambda: False)
    monkeypatch.setattr(deployer, "caller_arn", lambda: "arn:aws:sts::210987654321:assumed-role/ci-deployer/run")
    monkeypatch.setattr(pulumi.runtime, "is_dry_run", lambda: False)
    with pytest.raises(pulumi.RunError, match="nobody could administer the cluster this update creates"):
        deployer.check(cluster_access.deployer_check(load_spec(starter())), "stacks/Pulumi.starter-aws.yaml")
    with pytest.raises(pulumi.RunError, match="adminRoleArns: the identity running pulumi"):
        render_config(starter(), "starter-aws")
    assert tap_mocks.registered == []


def test_a_preview_by_a_non_admin_warns(monkeypatch):
    said: list[str] = []
    monkeypatch.setattr(deploy_check, "under_mock_engine", lambda: False)
    monkeypatch.setattr(deployer, "caller_arn", lambda: "arn:aws:sts::210987654321:assumed-role/ci-deployer/run")
    monkeypatch.setattr(pulumi.runtime, "is_dry_run", lambda: True)
    monkeypatch.setattr(pulumi.log, "warn", lambda text, *a, **k: said.append(text))
    deployer.check(cluster_access.deployer_check(load_spec(starter())), "stacks/Pulumi.starter-aws.yaml")
    assert len(said) == 1 and said[0].endswith("; pulumi up refuses it")


def test_a_stack_naming_the_tokens_role_has_it_checked_before_deploy():
    """cluster.roleArn is the identity of every Kubernetes call (aws eks get-token --role-arn): a rule."""
    cfg = starter()
    cfg[CLUSTER]["roleArn"] = "arn:aws:iam::210987654321:role/deployer"
    assert problems(cfg) == [
        "stacks/Pulumi.t.yaml: gpu-platform:cluster.roleArn: arn:aws:iam::210987654321:role/deployer is the role the "
        "kubeconfig's token assumes, but not among cluster.create.eks.adminRoleArns: add it there, or the Kubernetes "
        "half of pulumi up fails Unauthorized"
    ]
    cfg[CLUSTER]["roleArn"] = ADMIN
    assert problems(cfg) == []


def test_a_created_cluster_without_any_admin_is_refused():
    (line,) = problems(starter(admins=()))
    assert line.startswith("stacks/Pulumi.t.yaml: gpu-platform:cluster.create.eks.adminRoleArns: name at least one")


# ------------------------------------------------------------------ 5b: nodes must reach the API endpoint

ENDPOINT = "stacks/Pulumi.t.yaml: gpu-platform:cluster.create.eks.endpointPrivateAccess: is off while publicAccessCidrs"


def test_private_endpoint_off_with_restricted_public_cidrs_is_refused():
    """EKS user guide "Cluster API server endpoint" (cluster-endpoint.html), public endpoint only: "If you limit
    access to specific CIDR blocks, then it is recommended that you also enable the private endpoint, or ensure
    that the CIDR blocks that you specify include the addresses that nodes ... access the public endpoint from."
    Nodes in the created private subnets reach it from the NAT gateway's Elastic IP, created with the VPC."""
    (line,) = problems(starter(endpointPrivateAccess=False))
    assert line.startswith(ENDPOINT) and "set endpointPrivateAccess: true" in line


@pytest.mark.parametrize(
    "eks",
    [
        {"endpointPrivateAccess": True},  # nodes use the private endpoint
        {"endpointPrivateAccess": False, "publicAccessCidrs": ["0.0.0.0/0"]},  # the NAT address is admitted
        {"endpointPrivateAccess": True, "endpointPublicAccess": False, "publicAccessCidrs": []},
    ],
)
def test_endpoint_settings_nodes_can_join_through_pass(eks):
    assert problems(starter(**eks)) == []


# ------------------------------------------------------------------------------- 5c: S3 gateway endpoint


def test_the_private_route_tables_reach_s3_through_a_gateway_endpoint():
    """ECR user guide "Amazon ECR interface VPC endpoints (AWS PrivateLink)": ECR stores image layers in S3, so
    layer downloads go to S3; a gateway endpoint (VPC user guide "Gateway endpoints for Amazon S3", service
    com.amazonaws.<region>.s3) routes them inside the VPC instead of through the NAT gateway, which bills per GB."""
    r = render_config(starter(), "starter-aws")
    (ep,) = r.of_type("aws:ec2/vpcEndpoint:VpcEndpoint")
    i = ep.inputs
    assert i["serviceName"] == "com.amazonaws.us-east-1.s3" and i["vpcEndpointType"] == "Gateway"
    private = {t.name for t in r.of_type("aws:ec2/routeTable:RouteTable") if "-private-" in t.name}
    assert private == {"gpu-starter-private-us-east-1a", "gpu-starter-private-us-east-1b"}
    assert set(ep.depends_on) >= private and len(i["routeTableIds"]) == 2
    assert all("public" not in t for t in i["routeTableIds"])


def test_the_s3_gateway_endpoint_can_be_left_out():
    cfg = starter()
    cfg[CLUSTER]["create"]["network"]["s3GatewayEndpoint"] = False
    assert render_config(cfg, "starter-aws").of_type("aws:ec2/vpcEndpoint:VpcEndpoint") == []
    assert plan_mod.build(load_spec(cfg), "t").eks_create.s3_gateway_endpoint is None


# ---------------------------------------------------------------- 6: the system nodes' instance metadata


def test_the_system_nodes_require_imds_tokens_with_one_hop():
    """The values themselves, not a snapshot: IMDSv2 only, and a PUT response hop limit of 1 so a pod (one hop
    further than the node) gets no session token, hence not the node role's credentials (EC2 user guide
    "Configure the instance metadata options"; EKS best practices guide, "Restrict access to the instance profile
    assigned to the worker node")."""
    lt = rendered("starter-aws").find("aws:ec2/launchTemplate:LaunchTemplate", "system-nodes").inputs
    assert lt["metadataOptions"]["httpTokens"] == "required"
    assert lt["metadataOptions"]["httpPutResponseHopLimit"] == 1
    assert lt["metadataOptions"]["httpEndpoint"] == "enabled"


@pytest.mark.parametrize(
    "change,why",
    [
        ({"httpPutResponseHopLimit": 2}, "httpPutResponseHopLimit is 2, not 1"),
        ({"httpTokens": "optional"}, "httpTokens is 'optional', not 'required'"),
    ],
)
def test_a_plan_that_would_expose_the_node_role_is_refused_before_registering(change, why):
    from components.render.aws.cluster_create import EksCluster

    p = plan_mod.build(load_spec(starter()), "t").eks_create
    nodes = dataclasses.replace(p.system_nodes, metadata_options={**p.system_nodes.metadata_options, **change})
    with pytest.raises(ValueError, match=why):
        EksCluster("eks", dataclasses.replace(p, system_nodes=nodes))  # raises before its own registration
