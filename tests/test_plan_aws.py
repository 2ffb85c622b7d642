"""The aws part of the plan (components/plan/aws/plan.py, ``Plan.aws``, issue 28): the EKS cluster and its kubeconfig
token command, the managed node groups, EFA, the Cluster Autoscaler and node health, checked against what the stack
files say (stacks/Pulumi.prod-aws.yaml, dev-aws.yaml) and the AWS facts the renderers' docstrings cite; and the
rendered resources carrying exactly the plan's values."""

from __future__ import annotations

import json

import pytest
from conftest import render_config, rendered, stack_config, unmirrored

from components.cli import main as cli
from components.cli.loader import load_spec
from components.plan import plan
from components.plan.plan import plain

POOLS = "gpu-platform:nodePools"
PROD_TAGS = {"environment": "prod", "team": "ml-platform", "cost-center": "ml-4711", "managed-by": "gpu-platform"}
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"


def _aws(cfg_or_stack: dict | str):
    cfg = stack_config(cfg_or_stack) if isinstance(cfg_or_stack, str) else cfg_or_stack
    return plan.build(load_spec(cfg), "test").aws


@pytest.mark.parametrize("stack", ["dev-gcp", "prod-gcp", "local", "dra-existing"])
def test_other_clouds_have_no_aws_plan(stack):
    assert _aws(stack) is None


def test_the_cluster_is_the_stacks_and_its_token_uses_the_ambient_credentials():
    c = _aws("prod-aws").cluster
    assert (c.name, c.region, c.identity) == ("ml-prod", "us-east-1", "pod-identity")
    assert dict(c.tags) == PROD_TAGS
    assert plain(c.token_exec) == {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "command": "aws",
        "args": ["eks", "get-token", "--cluster-name", "ml-prod", "--region", "us-east-1", "--output", "json"],
    }


def test_profile_role_and_irsa_reach_the_cluster_plan():
    cfg = stack_config("dev-aws")
    role = "arn:aws:iam::111122223333:role/deployer"
    cfg["gpu-platform:cluster"] = {**cfg["gpu-platform:cluster"], "profile": "ml-admin", "roleArn": role}
    cfg["gpu-platform:karpenter"] = {"identity": "irsa"}
    c = _aws(cfg).cluster
    assert c.identity == "irsa"
    assert list(c.token_exec["args"][-2:]) == ["--role-arn", role]
    assert plain(c.token_exec["env"]) == [{"name": "AWS_PROFILE", "value": "ml-admin"}]


def test_one_node_group_per_managed_pool_and_none_for_karpenter():
    aws = _aws("prod-aws")
    # prod-aws: l4-notebooks names no provisioner (managed by default), h100-spot is Karpenter's
    assert sorted(aws.node_groups) == ["a100-gang", "a100-train", "h100-inference", "l4-notebooks"]
    assert aws.node_role == "ml-prod-gpu-node"
    assert "AmazonEKSWorkerNodePolicy" in aws.node_role_policies


def test_a_bottlerocket_efa_training_group():
    """a100-train: p4de.24xlarge on Bottlerocket, on-demand, 0..4 nodes in one subnet, 500 GiB on Bottlerocket's data
    volume, 4 EFA interfaces (one per network card of a p4d/p4de), one node replaced at a time."""
    ng = _aws("prod-aws").node_groups["a100-train"]
    assert (ng.ami_type, ng.capacity_type, ng.instance_types) == (
        "BOTTLEROCKET_x86_64_NVIDIA",
        "ON_DEMAND",
        ("p4de.24xlarge",),
    )
    assert dict(ng.scaling) == {"minSize": 0, "desiredSize": 0, "maxSize": 4}
    assert ng.subnet_ids == ("subnet-0a1b2c3d4e5f60718",)
    assert ng.update_config["maxUnavailable"] == 1 and ng.auto_repair is True
    assert ng.name_prefix == "a100-train-"
    assert plain(ng.taints) == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]
    assert ng.labels["gpu-platform/pool"] == "a100-train"
    assert ng.tags["k8s.io/cluster-autoscaler/ml-prod"] == "owned"
    assert ng.tags["k8s.io/cluster-autoscaler/node-template/resources/vpc.amazonaws.com/efa"] == "4"
    assert plain(ng.pool_tag) == {"key": "gpu-platform/pool", "value": "a100-train", "propagateAtLaunch": False}
    lt = ng.launch_template
    assert lt.name == "ml-prod-gpu-a100-train"
    data = [d for d in plain(lt.block_device_mappings) if d["deviceName"] == "/dev/xvdb"]
    assert data[0]["ebs"]["volumeSize"] == 500 and data[0]["ebs"]["encrypted"] == "true"
    assert lt.metadata_options["httpTokens"] == "required"  # IMDSv2 only
    assert len(lt.efa_interfaces) == 4
    assert {nic["interfaceType"] for nic in lt.efa_interfaces} == {"efa"}
    assert [nic["networkCardIndex"] for nic in lt.efa_interfaces] == [0, 1, 2, 3]
    assert lt.user_data is not None and lt.user_data.startswith("[settings.")  # Bottlerocket TOML
    assert lt.capacity_reservation is None and lt.instance_market_options is None
    assert dict(lt.tags) == {**PROD_TAGS, "gpu-platform/pool": "a100-train"}


def test_the_reserved_inference_group_and_a_plain_one():
    aws = _aws("prod-aws")
    h100 = aws.node_groups["h100-inference"]
    assert h100.ami_type == "AL2023_x86_64_NVIDIA" and "NodeConfig" in h100.launch_template.user_data
    assert dict(h100.scaling) == {"minSize": 1, "desiredSize": 1, "maxSize": 2}
    assert plain(h100.launch_template.capacity_reservation) == {
        "capacityReservationTarget": {"capacityReservationId": "cr-0c1d2e3f4a5b6c7d8"}
    }
    assert h100.launch_template.efa_interfaces is None
    l4 = aws.node_groups["l4-notebooks"]
    assert l4.subnet_ids is None  # the cluster's own subnets, as looked up
    assert l4.launch_template.capacity_reservation is None and l4.launch_template.efa_interfaces is None


def test_a_capacity_block_group():
    """EKS user guide, Capacity Blocks for ML: node group capacityType CAPACITY_BLOCK and the launch template's
    instanceMarketOptions.marketType capacity-block."""
    cfg = stack_config("prod-aws")
    cfg[POOLS][1]["reservation"] = {**cfg[POOLS][1]["reservation"], "kind": "capacity-block"}
    ng = _aws(cfg).node_groups["h100-inference"]
    assert ng.capacity_type == "CAPACITY_BLOCK"
    assert plain(ng.launch_template.instance_market_options) == {"marketType": "capacity-block"}


def test_efa_pools_networks_and_device_plugin():
    aws = _aws("prod-aws")
    assert aws.efa_pools == ("a100-train", "a100-gang")  # the stack's order
    assert aws.karpenter_efa_pools == ()
    net = aws.efa_networks["a100-gang"]
    assert (net.security_group, net.placement_group) == ("ml-prod-a100-gang-efa", "ml-prod-a100-gang-efa")
    assert dict(net.tags) == {**PROD_TAGS, "gpu-platform/pool": "a100-gang"}
    values = plain(aws.efa_device_plugin)
    assert values["supportedInstanceLabels"] == {"keys": ["gpu-platform/pool"], "values": ["a100-gang", "a100-train"]}
    assert values["image"]["repository"].endswith(".dkr.ecr.us-east-1.amazonaws.com/eks/aws-efa-k8s-device-plugin")
    dev = _aws("dev-aws")
    assert (dev.efa_pools, dev.efa_device_plugin, dict(dev.efa_networks)) == ((), None, {})


def test_a_karpenter_efa_pool_gets_a_standalone_network():
    cfg = stack_config("prod-aws")
    spot = next(p for p in cfg[POOLS] if p["name"] == "h100-spot")
    spot["efa"] = True
    spot["karpenter"] = {**spot["karpenter"], "zone": "us-east-1a"}
    aws = _aws(cfg)
    assert aws.karpenter_efa_pools == ("h100-spot",)
    assert "h100-spot" not in aws.node_groups
    assert aws.efa_networks["h100-spot"].placement_group == "ml-prod-h100-spot-efa"


def test_the_cluster_autoscaler():
    """Its role and policy: read actions on *, scaling only groups tagged for this cluster and carrying the pool tag
    (the autoscaler's AWS README, tag-based conditions); discovery by the same tags; the image follows the cluster's
    Kubernetes minor (the lookup's unless the stack names one)."""
    a = _aws("prod-aws").cluster_autoscaler
    assert a.role_name == "ml-prod-cluster-autoscaler"
    assert (a.namespace, a.service_account) == ("kube-system", "cluster-autoscaler")
    assert (a.chart.chart, a.chart.version) == ("cluster-autoscaler", "9.59.0")
    read, scale = plain(a.policy)["Statement"]
    assert read["Resource"] == "*" and "eks:DescribeNodegroup" in read["Action"]
    assert sorted(scale["Action"]) == [
        "autoscaling:SetDesiredCapacity",
        "autoscaling:TerminateInstanceInAutoScalingGroup",
    ]
    assert scale["Condition"] == {
        "StringEquals": {
            "aws:ResourceTag/k8s.io/cluster-autoscaler/ml-prod": "owned",
            "aws:ResourceTag/k8s.io/cluster-autoscaler/enabled": "true",
        },
        "Null": {"aws:ResourceTag/gpu-platform/pool": "false"},
    }
    assert list(a.values["autoDiscovery"]["tags"]) == [
        "k8s.io/cluster-autoscaler/enabled",
        "k8s.io/cluster-autoscaler/ml-prod",
        "gpu-platform/pool",
    ]
    # the image's tag is the cluster's (the renderer adds it); its repository only follows the stack's ECR cache
    assert unmirrored(plain(a.values), stack_config("prod-aws")).get("image") is None and a.image_tag is None
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:cluster"] = {**cfg["gpu-platform:cluster"], "kubernetesVersion": "1.34"}
    assert _aws(cfg).cluster_autoscaler.image_tag == "v1.34.5"


def test_off_switches():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:addons"] = {**cfg.get("gpu-platform:addons", {}), "clusterAutoscaler": False}
    cfg["gpu-platform:addons"]["nodeMonitoringAgent"] = False
    cfg[POOLS][0]["minNodes"] = 1  # a managed group without the autoscaler keeps its nodes (a rule)
    aws = _aws(cfg)
    assert aws.cluster_autoscaler is None and aws.node_health_addon is None
    assert _aws("dev-aws").node_health_addon == "eks-node-monitoring-agent"


def test_the_rendered_node_groups_and_launch_templates_are_the_plans():
    aws = _aws("prod-aws")
    r = rendered("prod-aws")
    groups = {ng.name: ng.inputs for ng in r.of_type(NODE_GROUP)}
    templates = {lt.name: lt.inputs for lt in r.of_type(LAUNCH_TEMPLATE)}
    assert set(groups) == set(templates) == set(aws.node_groups)
    for pool, ng in aws.node_groups.items():
        got = groups[pool]
        assert got["scalingConfig"] == plain(ng.scaling)
        assert got["updateConfig"] == plain(ng.update_config)
        assert (got["amiType"], got["capacityType"], got["instanceTypes"]) == (
            ng.ami_type,
            ng.capacity_type,
            list(ng.instance_types),
        )
        assert (got["labels"], got["taints"], got["tags"]) == (plain(ng.labels), plain(ng.taints), plain(ng.tags))
        lt = templates[pool]
        assert lt["name"] == ng.launch_template.name
        assert lt["blockDeviceMappings"] == plain(ng.launch_template.block_device_mappings)
        assert lt["tagSpecifications"] == plain(ng.launch_template.tag_specifications)


def test_the_rendered_kubeconfig_runs_the_plans_token_command():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:cluster"] = {**cfg["gpu-platform:cluster"], "profile": "ml-admin"}
    [provider] = render_config(cfg).of_type("pulumi:providers:kubernetes")
    [user] = json.loads(provider.inputs["kubeconfig"])["users"]
    assert user["user"]["exec"] == plain(_aws(cfg).cluster.token_exec)


def test_plan_text_has_an_aws_section(capsys):
    assert cli.main(["plan", "prod-aws"]) == 0
    out = capsys.readouterr().out
    section = out[out.index("\nAWS\n") :]
    assert "EKS cluster ml-prod in us-east-1" in section
    for pool in ("a100-train", "h100-inference", "l4-notebooks", "a100-gang"):
        assert f"node group {pool}-*" in section
    assert "Cluster Autoscaler: role ml-prod-cluster-autoscaler" in section
    assert cli.main(["plan", "dev-gcp"]) == 0
    assert "\nAWS\n" not in capsys.readouterr().out
