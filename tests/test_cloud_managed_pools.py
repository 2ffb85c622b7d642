"""The pure data behind EKS managed node groups (components/plan/aws/managed_pools.py, nodegroups.py helpers), one
function at a time, with whole expected values.

Facts used (module docstring of managed_pools.py): EKS amiType / capacityType / taint effect spellings, IMDSv2
(httpTokens required; instance metadata tags off), gp3 at 3000 IOPS / 500 MiB/s, AL2023 root /dev/xvda,
Bottlerocket OS /dev/xvda + data /dev/xvdb; the Cluster Autoscaler's GPU label values (aws_cloud_provider.go:
nvidia-tesla-t4 / nvidia-tesla-a100, else nvidia-<model>); Bottlerocket user data is TOML
(bottlerocket.dev settings), one [table] per nested settings path.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import render_config, rendered, stack_config

from components.cli.loader import load_spec
from components.plan.aws import managed_pools as plan, reservations
from components.render.aws import nodegroups, sdk


def spec_of(stack: str, **pool0: Any):
    cfg = stack_config(stack)
    cfg["gpu-platform:nodePools"][0].update(pool0)
    return load_spec(cfg)


# ------------------------------------------------------------------------------------------ plain data


def test_arch_of_a_pool_and_mixed_pools_refused():
    """One architecture per pool (EC2 spelling); a pool mixing them (or naming no known type) raises with the
    architectures found, sorted."""
    spec = load_spec(stack_config("dev-aws"))
    assert plan.arch(spec.pool("l4-shared")) == "x86_64"
    arm = spec_of("dev-aws", gpu={"model": "T4", "perNode": 1}, instanceTypes=["g5g.xlarge"])
    assert plan.arch(arm.pool("l4-shared")) == "arm64"
    mixed = arm.pool("l4-shared").model_copy(update={"instance_types": ["g5g.xlarge", "g4dn.xlarge"]})
    with pytest.raises(ValueError, match=r"^pool l4-shared: instance types must share one architecture, got "):
        plan.arch(mixed)
    with pytest.raises(ValueError) as err:
        plan.arch(mixed)
    assert str(err.value).endswith("got ['arm64', 'x86_64']")
    unknown = arm.pool("l4-shared").model_copy(update={"instance_types": ["m5.large"]})
    with pytest.raises(ValueError, match=r"must share one architecture, got \[\]$"):
        plan.arch(unknown)


def test_update_config_strategies():
    """One node at a time; EKS' MINIMAL strategy unless the pool asks for DEFAULT."""
    spec = load_spec(stack_config("dev-aws"))
    assert plan.update_config(spec.pool("l4-shared")) == {"max_unavailable": 1, "update_strategy": "MINIMAL"}
    spec = spec_of("dev-aws", eks={"updateStrategy": "default"})
    assert plan.update_config(spec.pool("l4-shared")) == {"max_unavailable": 1, "update_strategy": "DEFAULT"}


def test_eks_taints_keep_value_only_when_given():
    """The GPU taint first; a taint without value has no value key (EKS takes it as empty)."""
    spec = spec_of(
        "dev-aws",
        taints=[{"key": "spot", "effect": "NoExecute"}, {"key": "a", "value": "b", "effect": "PreferNoSchedule"}],
    )
    assert plan.eks_taints(spec.pool("l4-shared")) == [
        {"key": "nvidia.com/gpu", "effect": "NO_SCHEDULE", "value": "present"},
        {"key": "spot", "effect": "NO_EXECUTE"},
        {"key": "a", "effect": "PREFER_NO_SCHEDULE", "value": "b"},
    ]


@pytest.mark.parametrize(
    ("model", "per_node", "types", "expected"),
    [
        ("T4", 1, ["g4dn.xlarge"], "nvidia-tesla-t4"),
        ("A100-40GB", 8, ["p4d.24xlarge"], "nvidia-tesla-a100"),
        ("A100-80GB", 8, ["p4de.24xlarge"], "nvidia-tesla-a100"),
        ("L4", 1, ["g6.xlarge"], "nvidia-l4"),
        ("H100", 8, ["p5.48xlarge"], "nvidia-h100"),
        ("A10G", 1, ["g5.xlarge"], "nvidia-a10g"),
    ],
)
def test_accelerator_label_value(model, per_node, types, expected):
    """The autoscaler's GPU type names where it lists the model, else nvidia-<model in lower case>."""
    spec = spec_of("dev-aws", gpu={"model": model, "perNode": per_node}, instanceTypes=types, sharing=None)
    assert plan.accelerator_type(spec.pool("l4-shared")) == expected


def test_accelerator_label_only_where_nodes_advertise_whole_gpus():
    """Time-sliced nvidia.com/gpu still counts; renamed replicas (nvidia.com/gpu.shared only) do not get the
    label (the autoscaler would hold those nodes for unready)."""
    spec = load_spec(stack_config("dev-aws"))
    assert plan.carries_accelerator_label(spec, spec.pool("l4-shared")) is True
    assert plan.labels(spec, spec.pool("l4-shared"))["k8s.amazonaws.com/accelerator"] == "nvidia-l4"
    renamed = spec_of("dev-aws", sharing={"strategy": "time-slicing", "replicas": 4, "renameByDefault": True})
    assert plan.carries_accelerator_label(renamed, renamed.pool("l4-shared")) is False
    assert "k8s.amazonaws.com/accelerator" not in plan.labels(renamed, renamed.pool("l4-shared"))


def test_labels_are_sorted():
    """Node group labels in key order (a stable input, no spurious diffs)."""
    spec = spec_of("dev-aws", labels={"zz": "1", "aa": "2"})
    labels = plan.labels(spec, spec.pool("l4-shared"))
    assert list(labels) == sorted(labels)


def test_tags_of_objects_instances_and_node_groups():
    """base: stack tags + managed-by (sorted); instances/volumes: + pool tag + Name <cluster>-<pool>; the
    managed-by tag cannot be overridden by a stack tag."""
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:tags"] = {"team": "ml", "managed-by": "someone-else", "app": "x"}
    spec = load_spec(cfg)
    assert plan.base_tags(spec) == {"app": "x", "managed-by": "gpu-platform", "team": "ml"}
    assert list(plan.base_tags(spec)) == ["app", "managed-by", "team"]
    assert plan.instance_tags(spec, spec.pool("l4-shared")) == {
        "Name": "ml-dev-l4-shared",
        "app": "x",
        "gpu-platform/pool": "l4-shared",
        "managed-by": "gpu-platform",
        "team": "ml",
    }
    assert plan.tag_specifications(spec, spec.pool("l4-shared")) == [
        {"resource_type": "instance", "tags": plan.instance_tags(spec, spec.pool("l4-shared"))},
        {"resource_type": "volume", "tags": plan.instance_tags(spec, spec.pool("l4-shared"))},
    ]
    ng = plan.node_group_tags(spec, spec.pool("l4-shared"))
    assert list(ng) == sorted(ng)
    assert ng["gpu-platform/pool"] == "l4-shared" and ng["managed-by"] == "gpu-platform"


def test_names():
    """Node role <cluster>-gpu-node, launch template <cluster>-gpu-<pool>, node group prefix <pool>-."""
    spec = load_spec(stack_config("prod-aws"))
    pool = spec.pool("a100-train")
    assert plan.node_role_name(spec) == "ml-prod-gpu-node"
    assert plan.launch_template_name(spec, pool) == "ml-prod-gpu-a100-train"
    assert plan.node_group_name_prefix(pool) == "a100-train-"


# ------------------------------------------------------------------------------------ launch template


def test_block_devices_al2023_and_bottlerocket_whole():
    """AL2023: one fast gp3 root of diskGib. Bottlerocket: an encrypted OS volume of the AMI's size at gp3
    baseline (no IOPS / throughput set), and the fast data volume of diskGib."""
    spec = load_spec(stack_config("dev-aws"))
    fast = {"delete_on_termination": "true", "encrypted": "true", "volume_type": "gp3", "iops": 3000, "throughput": 500}
    assert plan.block_device_mappings(spec, spec.pool("l4-shared")) == [
        {"device_name": "/dev/xvda", "ebs": {**fast, "volume_size": 200}}
    ]
    spec = spec_of("dev-aws", os="bottlerocket", diskGib=300)
    assert plan.block_device_mappings(spec, spec.pool("l4-shared")) == [
        {
            "device_name": "/dev/xvda",
            "ebs": {"delete_on_termination": "true", "encrypted": "true", "volume_type": "gp3"},
        },
        {"device_name": "/dev/xvdb", "ebs": {**fast, "volume_size": 300}},
    ]


def test_metadata_options_whole():
    """IMDSv2 only, endpoint on, instance tags not exposed through IMDS, the pool's hop limit (2 by default)."""
    spec = load_spec(stack_config("dev-aws"))
    assert plan.metadata_options(spec.pool("l4-shared")) == {
        "http_endpoint": "enabled",
        "http_tokens": "required",
        "http_put_response_hop_limit": 2,
        "instance_metadata_tags": "disabled",
    }


def test_bottlerocket_user_data_text():
    """The TOML text: a [table] per nested path, scalars sorted, tables after scalars, a blank line between
    tables, booleans as true/false, strings quoted, one final newline."""
    spec = spec_of("dev-aws", os="bottlerocket")
    assert plan.user_data(spec, spec.pool("l4-shared")) == (
        "[settings.bootstrap-commands.000-mount-instance-storage]\n"
        'commands = [["apiclient", "ephemeral-storage", "init"], ["apiclient", "ephemeral-storage", "bind", "--dirs", '
        '"/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods"]]\n'
        "essential = true\n"
        'mode = "always"\n'
        "\n"
        "[settings.kubelet-device-plugins.nvidia]\n"
        'device-id-strategy = "uuid"\n'
        'device-sharing-strategy = "time-slicing"\n'
        "\n"
        "[settings.kubelet-device-plugins.nvidia.time-slicing]\n"
        "fail-requests-greater-than-one = true\n"
        "rename-by-default = false\n"
        "replicas = 4\n"
    )
    # base64 of the same text (what the launch template carries)
    import base64

    encoded = plan.user_data_base64(spec, spec.pool("l4-shared"))
    assert base64.b64decode(encoded).decode() == plan.user_data(spec, spec.pool("l4-shared"))
    plain = load_spec(stack_config("dev-aws"))
    assert "NodeConfig" in plan.user_data(plain, plain.pool("l4-shared"))  # AL2023: only the NVMe's nodeadm setting
    assert plan.bottlerocket_settings(plain, plain.pool("l4-shared")) == {}


def test_toml_values():
    """Booleans before ints (a bool is an int in Python), strings JSON-quoted; anything else is refused."""
    assert plan._toml_value(True) == "true"
    assert plan._toml_value(False) == "false"
    assert plan._toml_value(0) == "0"
    assert plan._toml_value('a "b"') == '"a \\"b\\""'
    with pytest.raises(TypeError, match=r"^no TOML rendering for 1\.5$"):
        plan._toml_value(1.5)


def test_toml_tables_without_scalars_emit_no_empty_header():
    """A table holding only sub-tables gets no header of its own."""
    out: list[str] = []
    plan._toml_tables("a", {"b": {"c": 1}, "d": {"e": "x"}}, out)
    assert out == ["[a.b]", "c = 1", "", "[a.d]", 'e = "x"', ""]


# ------------------------------------------------------------------------------------------ nodegroups


@pytest.mark.parametrize(
    ("arn", "partition"),
    [
        ("arn:aws:eks:us-east-1:111122223333:cluster/x", "aws"),
        ("arn:aws-cn:eks:cn-north-1:111122223333:cluster/x", "aws-cn"),
        ("arn:aws-us-gov:eks:us-gov-west-1:111122223333:cluster/x", "aws-us-gov"),
        ("arn::eks", "aws"),
        ("not-an-arn", "aws"),
    ],
)
def test_partition_of(arn, partition):
    """The ARN's second field; the commercial partition when there is none."""
    assert nodegroups.partition_of(arn) == partition


def test_rendered_descriptions_and_launch_template_flags():
    """Console-facing descriptions of the node role, launch templates and EFA network objects, and the launch
    template becoming the default version on each update."""
    r = rendered("prod-aws")
    role = r.find("aws:iam/role:Role", "gpu-node-role").inputs
    assert role["description"] == "GPU nodes of the EKS managed node groups of cluster ml-prod (gpu-platform)"
    lt = r.find("aws:ec2/launchTemplate:LaunchTemplate", "a100-train").inputs
    assert lt["description"] == "gpu-platform pool a100-train of EKS cluster ml-prod"
    assert lt["updateDefaultVersion"] is True
    assert lt["tags"]["gpu-platform/pool"] == "a100-train"
    sg = r.find("aws:ec2/securityGroup:SecurityGroup", "a100-train-efa").inputs
    assert (
        sg["description"] == "EFA traffic between the nodes of gpu-platform pool a100-train (all traffic, itself only)"
    )
    assert sg["tags"]["gpu-platform/pool"] == "a100-train"
    rules = {
        "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": (
            "a100-train-efa-in",
            "EFA: all traffic from the pool's own nodes",
        ),
        "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": (
            "a100-train-efa-out",
            "EFA: all traffic to the pool's own nodes",
        ),
    }
    for kind, (name, description) in rules.items():
        rule = r.find(kind, name).inputs
        assert rule["description"] == description
        assert rule["ipProtocol"] == "-1"
        assert rule["referencedSecurityGroupId"] == rule["securityGroupId"]
    pg = r.find("aws:ec2/placementGroup:PlacementGroup", "a100-train-efa").inputs
    assert (pg["strategy"], pg["region"]) == ("cluster", "us-east-1")


@pytest.mark.parametrize("stack", ["prod-aws", "dev-aws"])
def test_registered_node_groups_and_launch_templates_carry_exactly_the_plan(stack):
    """The component only transfers: each managed pool's node group and launch template receive what
    managed_pools / reservations (pinned above and in test_aws_nodegroups) say, camelCased as the SDK sends
    them, plus only the lookup-derived inputs (role ARN, launch template id, subnets, EFA interfaces)."""
    r = rendered(stack)
    spec = r.spec
    for pool in plan.managed_pools(spec):
        ng = dict(r.find("aws:eks/nodeGroup:NodeGroup", pool.name).inputs)
        for looked_up in ("nodeRoleArn", "launchTemplate", "subnetIds"):
            ng.pop(looked_up)
        assert ng == sdk.wire(
            {
                "cluster_name": spec.cluster.name,
                "node_group_name_prefix": f"{pool.name}-",
                "ami_type": plan.ami_type(spec, pool),
                "capacity_type": reservations.node_group_capacity_type(pool, plan.CAPACITY_TYPES[pool.capacity]),
                "instance_types": list(pool.instance_types),
                "scaling_config": plan.scaling(pool),
                "update_config": plan.update_config(pool),
                "node_repair_config": {"enabled": pool.eks.auto_repair},
                "labels": plan.labels(spec, pool),
                "taints": plan.eks_taints(pool),
                "tags": plan.node_group_tags(spec, pool),
                "region": "us-east-1",
            }
        ), pool.name
        lt = dict(r.find("aws:ec2/launchTemplate:LaunchTemplate", pool.name).inputs)
        lt.pop("networkInterfaces", None)  # EFA: security group ids from the lookup (test_multinode)
        lt.pop("placement", None)
        expected = {
            "name": plan.launch_template_name(spec, pool),
            "description": f"gpu-platform pool {pool.name} of EKS cluster {spec.cluster.name}",
            "block_device_mappings": plan.block_device_mappings(spec, pool),
            "metadata_options": plan.metadata_options(pool),
            "tag_specifications": plan.tag_specifications(spec, pool),
            "update_default_version": True,
            **reservations.launch_template_args(pool),
            "region": "us-east-1",
            "tags": {**plan.base_tags(spec), "gpu-platform/pool": pool.name},
        }
        user_data = plan.user_data_base64(spec, pool)
        if user_data is not None:
            expected["user_data"] = user_data
        assert lt == sdk.wire(expected), pool.name


def test_node_repair_follows_the_pool():
    """eks.autoRepair: false turns EKS node auto repair off for that node group (on by default)."""
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:nodePools"][0]["eks"] = {"autoRepair": False}
    ng = render_config(cfg).find("aws:eks/nodeGroup:NodeGroup", "l4-shared").inputs
    assert ng["nodeRepairConfig"] == {"enabled": False}
