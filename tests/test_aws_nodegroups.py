"""EKS managed node groups (components/render/aws/nodegroups.py, managed_pools.py) and the AWS rules.

Expected values come from the stack files and the upstream contracts, not from the code:
- EKS API: amiType values (AL2023_x86_64_NVIDIA, BOTTLEROCKET_x86_64_NVIDIA, *_ARM_64_NVIDIA), capacityType
  ON_DEMAND / SPOT, taint effects NO_SCHEDULE / NO_EXECUTE / PREFER_NO_SCHEDULE, label keys/values <= 63.
- Cluster Autoscaler (aws_manager.go): tag prefixes k8s.io/cluster-autoscaler/node-template/{label,taint,
  resources}/, taint tag values "<value>:<Effect>" (Kubernetes effect spelling), resources parsed as quantities.
- EC2: Bottlerocket's data volume is /dev/xvdb, AL2023's root /dev/xvda; IMDSv2 = httpTokens required.
"""

from __future__ import annotations

import base64
import copy
import json
import subprocess
import sys
import tomllib
from typing import Any

import pytest
from conftest import ROOT, render_config, rendered, stack_config

from components.cli.loader import SpecError, load_spec
from components.data import catalog
from components.plan.aws import managed_pools as plan

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
ROLE = "aws:iam/role:Role"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
COMPONENT = "eks-gpu-node-groups"
CA = "k8s.io/cluster-autoscaler"
TEMPLATE = f"{CA}/node-template"


def node_group(stack: str, pool: str) -> dict[str, Any]:
    return rendered(stack).find(NODE_GROUP, pool).inputs


def launch_template(stack: str, pool: str) -> dict[str, Any]:
    return rendered(stack).find(LAUNCH_TEMPLATE, pool).inputs


def ca_tags(inputs: dict[str, Any], kind: str) -> dict[str, str]:
    prefix = f"{TEMPLATE}/{kind}/"
    return {k[len(prefix) :]: v for k, v in inputs["tags"].items() if k.startswith(prefix)}


def problems(cfg: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as err:
        load_spec(cfg)
    return [(p.path, p.message) for p in err.value.problems]


# ------------------------------------------------------------------------------------ node groups


def test_one_node_group_and_launch_template_per_managed_pool():
    # prod-aws: h100-spot is a karpenter pool, the other four managed; dev-aws: a10g-spot is.
    assert sorted(r.name for r in rendered("prod-aws").of_type(NODE_GROUP)) == [
        "a100-gang",
        "a100-train",
        "h100-inference",
        "l4-notebooks",
    ]
    assert sorted(r.name for r in rendered("prod-aws").of_type(LAUNCH_TEMPLATE)) == [
        "a100-gang",
        "a100-train",
        "h100-inference",
        "l4-notebooks",
    ]
    assert [r.name for r in rendered("dev-aws").of_type(NODE_GROUP)] == ["l4-shared"]
    for r in rendered("prod-aws").of_type(NODE_GROUP):
        assert r.parent == COMPONENT


def test_gpu_taint_in_eks_spelling():
    for stack, pool in (("prod-aws", "h100-inference"), ("prod-aws", "a100-train"), ("dev-aws", "l4-shared")):
        assert node_group(stack, pool)["taints"] == [
            {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}
        ]


def test_pool_taints_keep_their_effects():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:nodePools"][0]["taints"] = [
        {"key": "team", "value": "vision", "effect": "NoExecute"},
        {"key": "preemptible", "effect": "PreferNoSchedule"},
    ]
    spec = load_spec(cfg)
    pool = spec.pool("l4-shared")
    assert plan.eks_taints(pool) == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"},
        {"key": "team", "value": "vision", "effect": "NO_EXECUTE"},
        {"key": "preemptible", "effect": "PREFER_NO_SCHEDULE"},
    ]
    taints = {k: v for k, v in plan.autoscaler_tags(spec, pool).items() if k.startswith(f"{TEMPLATE}/taint/")}
    assert taints == {
        f"{TEMPLATE}/taint/nvidia.com/gpu": "present:NoSchedule",
        f"{TEMPLATE}/taint/team": "vision:NoExecute",
        f"{TEMPLATE}/taint/preemptible": ":PreferNoSchedule",
    }


def test_ami_type_per_os_and_arch():
    assert node_group("prod-aws", "a100-train")["amiType"] == "BOTTLEROCKET_x86_64_NVIDIA"  # os: bottlerocket
    assert node_group("prod-aws", "h100-inference")["amiType"] == "AL2023_x86_64_NVIDIA"  # os unset: al2023
    assert node_group("dev-aws", "l4-shared")["amiType"] == "AL2023_x86_64_NVIDIA"
    cfg = stack_config("dev-aws")
    arm = {"name": "t4g", "gpu": {"model": "T4", "perNode": 1}, "instanceTypes": ["g5g.xlarge", "g5g.2xlarge"]}
    cfg["gpu-platform:nodePools"] += [
        {**arm, "maxNodes": 2},
        {**arm, "name": "t4g-br", "os": "bottlerocket", "maxNodes": 2},
    ]
    spec = load_spec(cfg)
    assert plan.ami_type(spec, spec.pool("t4g")) == "AL2023_ARM_64_NVIDIA"
    assert plan.ami_type(spec, spec.pool("t4g-br")) == "BOTTLEROCKET_ARM_64_NVIDIA"


def test_capacity_instance_types_and_scaling():
    h100 = node_group("prod-aws", "h100-inference")
    assert h100["capacityType"] == "ON_DEMAND"
    assert h100["instanceTypes"] == ["p5.48xlarge"]
    assert h100["scalingConfig"] == {"minSize": 1, "desiredSize": 1, "maxSize": 2}
    l4 = node_group("dev-aws", "l4-shared")
    assert l4["capacityType"] == "SPOT"
    assert l4["instanceTypes"] == ["g6.xlarge", "g6.2xlarge"]  # order kept: it is the on-demand priority
    assert l4["scalingConfig"] == {"minSize": 0, "desiredSize": 0, "maxSize": 4}
    a100 = node_group("prod-aws", "a100-train")
    assert a100["scalingConfig"] == {"minSize": 0, "desiredSize": 0, "maxSize": 4}


def test_desired_size_given_then_left_to_the_autoscaler():
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:nodePools"][0]["desiredNodes"] = 2
    spec = load_spec(cfg)
    assert plan.scaling(spec.pool("a100-train")) == {"min_size": 0, "desired_size": 2, "max_size": 4}
    for pool in ("a100-train", "h100-inference", "l4-notebooks"):
        assert rendered("prod-aws").find(NODE_GROUP, pool).ignore_changes == ["scalingConfig.desiredSize"]


def test_update_config_and_repair():
    ng = node_group("prod-aws", "h100-inference")
    assert ng["updateConfig"] == {"maxUnavailable": 1, "updateStrategy": "MINIMAL"}
    assert ng["nodeRepairConfig"] == {"enabled": True}
    assert ng["nodeGroupNamePrefix"] == "h100-inference-"


def test_labels_select_the_gpu_operator_configs():
    mig = node_group("prod-aws", "h100-inference")["labels"]
    assert mig["gpu-platform/pool"] == "h100-inference"
    assert mig["gpu-platform/gpu-model"] == "h100"
    assert mig["nvidia.com/gpu.present"] == "true"
    assert mig["nvidia.com/mig.config"] == "h100-inference"
    assert "nvidia.com/device-plugin.config" not in mig
    mps = node_group("prod-aws", "l4-notebooks")["labels"]
    assert mps["nvidia.com/device-plugin.config"] == "l4-notebooks"
    ts = node_group("dev-aws", "l4-shared")["labels"]
    assert ts["nvidia.com/device-plugin.config"] == "l4-shared"
    # Bottlerocket serves GPUs with its own host device plugin: the operator's stays off those nodes.
    br = node_group("prod-aws", "a100-train")["labels"]
    assert br["nvidia.com/gpu.deploy.device-plugin"] == "false"
    assert "nvidia.com/mig.config" not in br and "nvidia.com/device-plugin.config" not in br


def test_autoscaler_discovery_and_template_tags():
    ng = node_group("prod-aws", "h100-inference")
    assert ng["tags"][f"{CA}/enabled"] == "true"
    assert ng["tags"][f"{CA}/ml-prod"] == "owned"
    # every node label has its template tag, with the same value
    assert ca_tags(ng, "label") == ng["labels"]
    assert ca_tags(ng, "taint") == {"nvidia.com/gpu": "present:NoSchedule"}
    # stack tags and the pool tag ride along
    assert ng["tags"]["cost-center"] == "ml-4711"
    assert ng["tags"]["gpu-platform/pool"] == "h100-inference"


def test_autoscaler_resources_are_what_pods_request():
    # MIG {3g.40gb: 1, 2g.20gb: 1, 1g.10gb: 2} per GPU on 8 H100s, mixed strategy (several profiles):
    # each profile is its own resource; no whole GPU is left for nvidia.com/gpu requests.
    assert ca_tags(node_group("prod-aws", "h100-inference"), "resources") == {
        "nvidia.com/mig-3g.40gb": "8",
        "nvidia.com/mig-2g.20gb": "8",
        "nvidia.com/mig-1g.10gb": "16",
        "nvidia.com/gpu": "0",
    }
    # MPS, 4 replicas x 4 L4 per g6.12xlarge, not renamed.
    assert ca_tags(node_group("prod-aws", "l4-notebooks"), "resources") == {"nvidia.com/gpu": "16"}
    # time-slicing, 4 replicas x 1 L4.
    assert ca_tags(node_group("dev-aws", "l4-shared"), "resources") == {"nvidia.com/gpu": "4"}
    # no sharing: 8 A100s per p4de.24xlarge; an EFA pool (topology-aware) also its 4 EFA interfaces, which the
    # autoscaler cannot know from the instance type (pods asking for them would never scale the pool from zero).
    assert ca_tags(node_group("prod-aws", "a100-train"), "resources") == {
        "nvidia.com/gpu": "8",
        "vpc.amazonaws.com/efa": "4",
    }


def test_renamed_shared_units_template():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:nodePools"][0]["sharing"]["renameByDefault"] = True
    spec = load_spec(cfg)
    assert plan.node_resources(spec, spec.pool("l4-shared")) == {"nvidia.com/gpu": 0, "nvidia.com/gpu.shared": 4}


def test_node_groups_use_the_launch_template_role_and_cluster_subnets():
    ng = node_group("prod-aws", "l4-notebooks")
    assert ng["clusterName"] == "ml-prod"
    assert ng["region"] == "us-east-1"
    assert ng["launchTemplate"] == {"id": "offline-placeholder-l4-notebooks", "version": "1"}
    assert ng["nodeRoleArn"].endswith(":role/ml-prod-gpu-node")
    # no subnets in the stack: the cluster's (the placeholder lookup answer)
    assert ng["subnetIds"] == ["subnet-offline-placeholder-a", "subnet-offline-placeholder-b"]
    deps = rendered("prod-aws").find(NODE_GROUP, "l4-notebooks").depends_on
    for policy in ("AmazonEKSWorkerNodePolicy", "AmazonEKS_CNI_Policy", "AmazonEC2ContainerRegistryPullOnly"):
        assert f"gpu-node-{policy}" in deps


def test_subnets_from_the_stack():
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:cluster"]["subnetIds"] = ["subnet-0bbb", "subnet-0aaa"]
    cfg["gpu-platform:nodePools"][1]["eks"] = {"subnetIds": ["subnet-0ccc"]}
    spec = load_spec(cfg)
    assert plan.subnet_ids(spec, spec.pool("l4-notebooks")) == ["subnet-0aaa", "subnet-0bbb"]
    assert plan.subnet_ids(spec, spec.pool("h100-inference")) == ["subnet-0ccc"]
    assert plan.subnet_ids(spec, spec.pool("a100-train")) == ["subnet-0a1b2c3d4e5f60718"]  # its own (EFA)
    assert plan.subnet_ids(load_spec(stack_config("prod-aws")), spec.pool("l4-notebooks")) is None


# -------------------------------------------------------------------------------- launch templates


def test_launch_template_imdsv2_only():
    for stack, pool in (("prod-aws", "a100-train"), ("dev-aws", "l4-shared")):
        md = launch_template(stack, pool)["metadataOptions"]
        assert md["httpTokens"] == "required"
        assert md["httpPutResponseHopLimit"] == 2
        assert md["httpEndpoint"] == "enabled"
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:nodePools"][0]["eks"] = {"imdsHopLimit": 1}
    spec = load_spec(cfg)
    assert plan.metadata_options(spec.pool("l4-shared"))["http_put_response_hop_limit"] == 1


def test_launch_template_volumes_al2023():
    # dev-aws l4-shared: AL2023, diskGib unset (200).
    (root,) = launch_template("dev-aws", "l4-shared")["blockDeviceMappings"]
    assert root["deviceName"] == "/dev/xvda"
    assert root["ebs"]["volumeType"] == "gp3"
    assert root["ebs"]["encrypted"] == "true"
    assert root["ebs"]["volumeSize"] == 200
    assert root["ebs"]["deleteOnTermination"] == "true"


def test_launch_template_volumes_bottlerocket():
    # prod-aws a100-train: Bottlerocket, diskGib 500 on the data volume; the OS volume encrypted as well.
    os_vol, data = launch_template("prod-aws", "a100-train")["blockDeviceMappings"]
    assert os_vol["deviceName"] == "/dev/xvda"
    assert os_vol["ebs"]["encrypted"] == "true"
    assert "volumeSize" not in os_vol["ebs"]  # the AMI snapshot's size
    assert data["deviceName"] == "/dev/xvdb"
    assert data["ebs"] == {
        "deleteOnTermination": "true",
        "encrypted": "true",
        "iops": 3000,
        "throughput": 500,
        "volumeSize": 500,
        "volumeType": "gp3",
    }


def test_launch_template_tags_instances_and_volumes():
    lt = launch_template("prod-aws", "h100-inference")
    assert lt["name"] == "ml-prod-gpu-h100-inference"
    kinds = {spec["resourceType"]: spec["tags"] for spec in lt["tagSpecifications"]}
    assert sorted(kinds) == ["instance", "volume"]
    for tags in kinds.values():
        assert tags["environment"] == "prod"
        assert tags["gpu-platform/pool"] == "h100-inference"
        assert tags["Name"] == "ml-prod-h100-inference"
    # AL2023: nodeadm needs nothing from us but p5's local NVMe striped (a NodeConfig, tests/test_local_nvme.py)
    assert "localStorage:\n      strategy: RAID0" in base64.b64decode(lt["userData"]).decode()


def test_bottlerocket_time_slicing_user_data():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:nodePools"][0]["os"] = "bottlerocket"
    spec = load_spec(cfg)
    encoded = plan.user_data_base64(spec, spec.pool("l4-shared"))
    doc = tomllib.loads(base64.b64decode(encoded).decode())
    nvidia = doc["settings"]["kubelet-device-plugins"]["nvidia"]
    assert nvidia["device-sharing-strategy"] == "time-slicing"
    assert nvidia["time-slicing"] == {"replicas": 4, "rename-by-default": False, "fail-requests-greater-than-one": True}
    # UUID device IDs on every Bottlerocket pool: dcgm-exporter maps GPUs to pods by UUID
    assert nvidia["device-id-strategy"] == "uuid"
    # a Bottlerocket pool without sharing gets only the device-id strategy (and its NVMe striped)
    prod = load_spec(stack_config("prod-aws"))
    doc = tomllib.loads(plan.user_data(prod, prod.pool("a100-train")))
    assert doc["settings"]["kubelet-device-plugins"] == {"nvidia": {"device-id-strategy": "uuid"}}
    assert set(doc["settings"]) == {"kubelet-device-plugins", "bootstrap-commands"}
    # AL2023 pools need no device plugin settings (the GPU Operator's plugin is configured by ConfigMap)
    assert "kubelet-device-plugins" not in plan.user_data(prod, prod.pool("l4-notebooks"))


# ------------------------------------------------------------------------------------------ IAM


def test_one_node_role_with_exactly_the_worker_policies():
    r = rendered("prod-aws")
    roles = [x for x in r.of_type(ROLE) if x.parent == COMPONENT]
    assert [x.name for x in roles] == ["gpu-node-role"]
    role = roles[0].inputs
    assert role["name"] == "ml-prod-gpu-node"
    trust = json.loads(role["assumeRolePolicy"])
    (stmt,) = trust["Statement"]
    assert stmt["Effect"] == "Allow"
    assert stmt["Principal"] == {"Service": "ec2.amazonaws.com"}
    assert stmt["Action"] in ("sts:AssumeRole", ["sts:AssumeRole"])
    assert role["tags"] == {
        "cost-center": "ml-4711",
        "environment": "prod",
        "managed-by": "gpu-platform",
        "team": "ml-platform",
    }
    attachments = [x for x in r.of_type(ATTACHMENT) if x.parent == COMPONENT]
    assert sorted(a.inputs["policyArn"] for a in attachments) == [
        "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly",
        "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
        "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
        "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",
    ]
    assert {a.inputs["role"] for a in attachments} == {"ml-prod-gpu-node"}
    assert sorted(a.name for a in attachments) == [
        "gpu-node-AmazonEC2ContainerRegistryPullOnly",
        "gpu-node-AmazonEKSWorkerNodePolicy",
        "gpu-node-AmazonEKS_CNI_Policy",
        "gpu-node-AmazonSSMManagedInstanceCore",
    ]


# --------------------------------------------------------------------------------------- naming


def _managed_resources(rendering) -> set[tuple[str, str]]:
    return {(r.type, r.name) for r in rendering.resources if r.parent == COMPONENT or r.name == COMPONENT}


def test_names_come_from_pool_names_not_positions():
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:nodePools"] = list(reversed(cfg["gpu-platform:nodePools"]))
    reordered = render_config(cfg, stack="prod-aws")
    before = _managed_resources(rendered("prod-aws"))
    assert _managed_resources(reordered) == before
    assert (NODE_GROUP, "h100-inference") in before and (LAUNCH_TEMPLATE, "a100-train") in before
    # and the inputs do not change either
    assert reordered.find(NODE_GROUP, "a100-train").inputs == node_group("prod-aws", "a100-train")


def test_no_node_groups_without_managed_pools():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:nodePools"] = [p for p in cfg["gpu-platform:nodePools"] if p["provisioner"] == "karpenter"]
    cfg["gpu-platform:tenants"][0]["gpuQuota"] = {"a10g-spot": 8}
    assert plan.managed_pools(load_spec(cfg)) == []
    r = render_config(cfg, stack="dev-aws")
    assert r.of_type(NODE_GROUP) == [] and r.of_type(LAUNCH_TEMPLATE) == []
    assert not [x for x in r.resources if x.name == COMPONENT or x.parent == COMPONENT]


def test_rendering_an_aws_stack_never_imports_the_gcp_sdk_nor_the_aws_package_root():
    """pulumi_gcp has no place in an AWS stack, nor the gcp plan's own modules (plan/gcp/plan.py, cluster_create.py:
    components/plan/plan.py imports a cloud's plan modules for its stacks only), nor the plan modules of a fleet or
    an existing cluster (dev-aws is neither); pulumi_aws's package root (~5 MiB: its input types, provider and
    lookups) is not needed either (components/render/aws/sdk.py reads the plugin version without it)."""
    code = (
        "import sys, yaml\n"
        "from components.cli.synth import render\n"
        "config = yaml.safe_load(open('stacks/Pulumi.dev-aws.yaml'))['config']\n"
        "r = render('dev-aws', config)\n"
        "assert any(x.type == 'aws:eks/nodeGroup:NodeGroup' for x in r.resources)\n"
        "assert 'pulumi_gcp' not in sys.modules, 'pulumi_gcp was imported'\n"
        "unused = ('components.plan.gcp.plan', 'components.plan.gcp.cluster_create', 'components.plan.fleet',\n"
        "          'components.plan.existing')\n"
        "assert not [m for m in unused if m in sys.modules], [m for m in unused if m in sys.modules]\n"
        "assert 'pulumi_aws' not in sys.modules, 'pulumi_aws was imported'\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]


# ------------------------------------------------------------------------------------ bad input


def _dev(**pool0: Any) -> dict[str, Any]:
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:nodePools"][0].update(copy.deepcopy(pool0))
    return cfg


def test_instance_type_with_another_gpu_model():
    found = problems(_dev(gpu={"model": "A10G", "perNode": 1}))
    assert (
        "gpu-platform:nodePools[0].instanceTypes[0]",
        "g6.xlarge carries L4, not A10G (A10G with 1 per node: g5.xlarge, g5.2xlarge, g5.4xlarge, g5.8xlarge, "
        "g5.16xlarge)",
    ) in found
    assert any(p == "gpu-platform:nodePools[0].instanceTypes[1]" and "g6.2xlarge carries L4" in m for p, m in found)


def test_instance_type_with_another_gpu_count():
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:nodePools"][0]["gpu"]["perNode"] = 4  # a100-train on p4de.24xlarge (8 x A100-80GB)
    assert problems(cfg) == [
        (
            "gpu-platform:nodePools[0].instanceTypes[0]",
            "p4de.24xlarge has 8 GPUs, but gpu.perNode is 4 (AWS offers A100-80GB with 8 per node)",
        )
    ]
    found = problems(_dev(gpu={"model": "L4", "perNode": 4}))
    assert (
        "gpu-platform:nodePools[0].instanceTypes[0]",
        "g6.xlarge has 1 GPU, but gpu.perNode is 4 (L4 with 4 per node: g6.12xlarge, g6.24xlarge)",
    ) in found


def test_mixed_architectures():
    found = problems(_dev(gpu={"model": "T4", "perNode": 1}, instanceTypes=["g4dn.xlarge", "g5g.xlarge"]))
    assert found == [
        (
            "gpu-platform:nodePools[0].instanceTypes",
            "mixes x86_64 and arm64 instance types; one pool runs one AMI architecture",
        )
    ]


def test_unknown_instance_type():
    found = problems(_dev(instanceTypes=["g6.xlarge", "g6.huge"]))
    assert found == [
        (
            "gpu-platform:nodePools[0].instanceTypes[1]",
            "'g6.huge' is not a known NVIDIA GPU instance type (g6 sizes: g6.xlarge, g6.2xlarge, g6.4xlarge, "
            "g6.8xlarge, g6.16xlarge, g6.12xlarge, g6.24xlarge, g6.48xlarge)",
        )
    ]


def test_os_not_on_aws():
    assert problems(_dev(os="cos")) == [("gpu-platform:nodePools[0].os", "must be one of al2023, bottlerocket on aws")]


def test_eks_label_and_taint_limits():
    long_key = "example.com/" + "k" * 55  # 67 characters: a valid Kubernetes label key, too long for EKS
    found = problems(
        _dev(
            labels={long_key: "x", "tier": ""},
            # a 64-character taint value is refused by Kubernetes' own rule first (test_hostile_stacks)
            taints=[{"key": "example.com/" + "t" * 52, "value": "v" * 63, "effect": "NoSchedule"}],
        )
    )
    assert (
        f"gpu-platform:nodePools[0].labels.{long_key}",
        "EKS node group label keys take at most 63 characters, prefix included (this one has 67)",
    ) in found
    assert ("gpu-platform:nodePools[0].labels.tier", "EKS node group label values take 1 to 63 characters") in found
    assert (
        "gpu-platform:nodePools[0].taints[0].key",
        "EKS node group taint keys take at most 63 characters (this one has 64)",
    ) in found


def test_too_many_node_group_tags():
    # 40 own labels on l4-shared. Tags: environment, team, managed-by, gpu-platform/pool (4); autoscaler
    # enabled + cluster (2); a label tag per node label: pool, gpu-model, gpu.present, device-plugin.config,
    # the autoscaler's k8s.amazonaws.com/accelerator and the 40 (45); the GPU taint (1); nvidia.com/gpu (1) -> 53.
    labels = {f"label-{n:02d}": "x" for n in range(40)}
    (found,) = problems(_dev(labels=labels))
    path, message = found
    assert path == "gpu-platform:nodePools[0]"
    assert message.startswith("its node group would carry 53 tags")
    assert message.endswith("EKS allows 50: drop labels or stack tags")


def test_eks_options_only_on_managed_aws_pools():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:nodePools"][1]["eks"] = {"updateStrategy": "default"}  # a10g-spot is a karpenter pool
    assert problems(cfg) == [
        ("gpu-platform:nodePools[1].eks", "applies to managed pools only (provisioner: managed)"),
    ]
    gcp = stack_config("dev-gcp")
    gcp["gpu-platform:nodePools"][0]["eks"] = {"autoRepair": False}
    gcp["gpu-platform:cluster"]["subnetIds"] = ["subnet-0abc"]
    found = problems(gcp)
    assert ("gpu-platform:nodePools[0].eks", "does not apply when cloud is gcp") in found
    assert ("gpu-platform:cluster.subnetIds", "does not apply when cloud is gcp") in found


def test_subnet_ids_checked():
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:cluster"]["subnetIds"] = ["subnet-0aaa", "subnet-0aaa"]
    # l4-notebooks: neither EFA nor a reservation, so only the subnet rules speak
    cfg["gpu-platform:nodePools"][3]["eks"] = {"subnetIds": ["subnet-0bbb", "subnet-0bbb"]}
    assert problems(cfg) == [
        ("gpu-platform:cluster.subnetIds[1]", "lists subnet subnet-0aaa twice"),
        ("gpu-platform:nodePools[3].eks.subnetIds[1]", "lists subnet subnet-0bbb twice"),
    ]
    cfg["gpu-platform:nodePools"][3]["eks"] = {"subnetIds": ["sn-1"]}
    assert problems(cfg) == [
        ("gpu-platform:nodePools[3].eks.subnetIds[0]", "'sn-1' does not match ^subnet-[0-9a-f]+$"),
    ]
    karpenter_only = stack_config("dev-aws")
    karpenter_only["gpu-platform:nodePools"][0]["provisioner"] = "karpenter"
    karpenter_only["gpu-platform:nodePools"][0]["maxGpus"] = 4
    del karpenter_only["gpu-platform:nodePools"][0]["maxNodes"]
    karpenter_only["gpu-platform:cluster"]["subnetIds"] = ["subnet-0aaa"]
    assert (
        "gpu-platform:cluster.subnetIds",
        "only managed pools use it (no pool has provisioner: managed; Karpenter pools take karpenter.subnetIds)",
    ) in problems(karpenter_only)


def test_reserved_and_oversized_tags():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:tags"] = {"aws:owner": "me", "note": "n" * 257}
    found = problems(cfg)
    assert ("gpu-platform:tags.aws:owner", "the aws: prefix is reserved for AWS' own tags") in found
    assert ("gpu-platform:tags.note", "AWS tag values take at most 256 characters") in found


def test_node_role_name_length():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:cluster"]["name"] = "c" * 56  # + "-gpu-node" = 65
    found = problems(cfg)
    assert (
        "gpu-platform:cluster.name",
        f"the managed node groups' IAM role would be {'c' * 56 + '-gpu-node'!r} (65 characters); "
        "IAM role names take at most 64",
    ) in found


def test_too_many_instance_types_for_a_node_group():
    # The catalog has five single-A10G sizes; 25 entries exceed EKS' 20 (the repeats are reported too).
    types = [t.name for t in catalog.AWS_INSTANCE_TYPES.values() if t.gpu_model == "A10G" and t.gpu_count == 1]
    assert len(types) == 5
    found = problems(_dev(gpu={"model": "A10G", "perNode": 1}, instanceTypes=types * 5))
    assert (
        "gpu-platform:nodePools[0].instanceTypes",
        "an EKS managed node group takes at most 20 instance types",
    ) in found
    assert ("gpu-platform:nodePools[0].instanceTypes", "lists an instance type twice") in found


def test_al2023_pools_need_the_gpu_operator_for_a_device_plugin():
    """The EKS AL2023 NVIDIA AMI has the driver but no Kubernetes device plugin (EKS user guide, "Install
    Kubernetes device plugin for GPUs"); Bottlerocket's NVIDIA variants run one on the host."""
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:addons"] = {"gpuOperator": False, "dcgm": False}
    cfg["gpu-platform:nodePools"][0].pop("sharing")  # (time-slicing needs the operator too: its own rule)
    [(path, message)] = problems(cfg)
    assert path == "gpu-platform:addons.gpuOperator"
    assert message.startswith("is false, but the AL2023 NVIDIA AMI ships no Kubernetes device plugin")
    assert "pools l4-shared, a10g-spot would advertise no nvidia.com/gpu" in message
    # only the pools still on AL2023 are named (the default os on aws is al2023)
    cfg["gpu-platform:nodePools"][0]["os"] = "bottlerocket"
    [(path, message)] = problems(cfg)
    assert "device plugin: pool a10g-spot would" in message
    # all Bottlerocket: the hosts serve nvidia.com/gpu, no operator needed
    cfg["gpu-platform:nodePools"][1]["os"] = "bottlerocket"
    spec = load_spec(cfg)
    assert not spec.addons.gpu_operator
    # with the operator, AL2023 is fine
    load_spec(stack_config("dev-aws"))


@pytest.mark.parametrize(
    ("partition", "principal"),
    # AWS::URLSuffix, which upstream's node role trusts EC2 under (ec2.${AWS::URLSuffix}): amazonaws.com.cn in
    # the China partition, amazonaws.com everywhere else (GovCloud included)
    [("aws", "ec2.amazonaws.com"), ("aws-us-gov", "ec2.amazonaws.com"), ("aws-cn", "ec2.amazonaws.com.cn")],
)
def test_node_role_trusts_ec2_under_the_partitions_url_suffix(partition, principal):
    from components.render.aws import nodegroups

    (stmt,) = json.loads(nodegroups.assume_role_policy(partition))["Statement"]
    assert stmt["Principal"] == {"Service": principal} and stmt["Action"] == ["sts:AssumeRole"]


def test_node_role_trust_document_in_full():
    """The node role's whole trust policy: one statement, named EksNodes, letting EC2 (the nodes) assume the role,
    nothing else (no wildcard principal, no extra action)."""
    from components.render.aws import nodegroups

    assert json.loads(nodegroups.assume_role_policy("aws")) == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "EksNodes",
                "Effect": "Allow",
                "Principal": {"Service": "ec2.amazonaws.com"},
                "Action": ["sts:AssumeRole"],
            }
        ],
    }


@pytest.mark.parametrize(
    ("arn", "partition"),
    [
        ("arn:aws:eks:us-east-1:123456789012:cluster/x", "aws"),
        ("arn:aws-cn:eks:cn-north-1:123456789012:cluster/x", "aws-cn"),
        ("arn:aws-us-gov:eks:us-gov-west-1:123456789012:cluster/x", "aws-us-gov"),
        ("arn:aws-cn", "aws-cn"),  # the partition is the second field, however short the rest
        ("arn::eks", "aws"),  # an empty partition field falls back to the commercial partition
        ("not-an-arn", "aws"),
        ("", "aws"),
    ],
)
def test_partition_of_reads_the_arns_second_field(arn, partition):
    """The partition decides the URL suffix and ARNs of every IAM document, so it is read from the cluster ARN."""
    from components.render.aws import nodegroups

    assert nodegroups.partition_of(arn) == partition
