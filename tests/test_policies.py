"""The CrossGuard policy pack: each policy on passing and violating fixtures, the engine's call path, the
offline evaluation behind `gpu-platform synth|check`, the shipped stacks and the examples.

Fixtures for cloud resources are registered through the real SDKs (pulumi_aws / pulumi_gcp /
pulumi_kubernetes, snake_case args) under a mock engine, so the policies see exactly the camelCase
shapes the engine hands them. Policies are called the way the engine calls them: props wrapped in
pulumi_policy's read-only Mapping/Sequence proxies, every number a float.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from caching import cached
from conftest import (
    NAMESPACE,
    RESOURCE_QUOTA,
    ROOT,
    STACKS,
    UPSTREAM,
    manifest,
    render_config,
    rendered,
    stack_config,
)
from google.protobuf import struct_pb2
from pulumi.runtime import proto
from pulumi_policy import (
    EnforcementLevel,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.policy import _PolicyAnalyzerServicer
from pulumi_policy.proxy import unknown_checking_proxy

from components.cli import main as cli
from components.data import versions
from components.explain.rendering import Record
from components.plan import derive
from components.render import tenancy
from policies import (
    capacity_policies,
    common,
    monitoring_policies,
    offline,
    pack,
    scheduling_policies,
    security_policies,
)

FIXTURES = ROOT / "tests" / "fixtures" / "policies"
EXAMPLES = ROOT / "examples"

POLICY_LEVELS = {
    "gpu-pool-taint": "mandatory",
    "karpenter-gpu-limit": "mandatory",
    "tenant-gpu-quota": "mandatory",
    "helm-chart-pinned": "mandatory",
    "node-imdsv2-and-encryption": "mandatory",
    "gke-gpu-node-hardening": "advisory",
    "gke-cluster-hardening": "mandatory",
    "time-slicing-replicas": "advisory",
    "spot-gpu-disruption": "advisory",
    "critical-tenant-capacity": "advisory",
    "single-default-priority-class": "mandatory",
    "gpu-workload-priority-class": "mandatory",
    "gpu-job-gang-scheduling": "mandatory",
    "gpu-container-hardening": "advisory",
    "dcgm-monitoring": "advisory",
    "namespace-pod-security": "mandatory",
    "iam-no-admin-wildcard": "mandatory",
    "eks-cluster-hardening": "mandatory",
    "gpu-budget": "mandatory",
    "idle-gpu-nodes": "advisory",
    "dra-gpu-claims": "mandatory",
    "dra-tenant-device-quota": "mandatory",
}


# ------------------------------------------------------------------------------------------ helpers


def engine_props(props: Any) -> Any:
    """Props as the engine delivers them: JSON data, every number a float, wrapped in read-only proxies."""

    def floats(v: Any) -> Any:
        if isinstance(v, bool):
            return v
        if isinstance(v, int):
            return float(v)
        if isinstance(v, dict):
            return {k: floats(x) for k, x in v.items()}
        if isinstance(v, list):
            return [floats(x) for x in v]
        return v

    return unknown_checking_proxy(floats(json.loads(json.dumps(props))))


def _opts(parent: str | None = None) -> PolicyResourceOptions:
    return PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [], parent)


def _config(policy, config: dict | None) -> dict:
    """The policy's config as the engine passes it: schema defaults overlaid with ``config``."""
    return offline.settings([policy], {policy.name: config} if config else None)[policy.name].config


def check(policy: ResourceValidationPolicy, type_: str, props: dict, config: dict | None = None) -> list[str]:
    """Messages a resource policy reports for one resource."""
    messages: list[str] = []
    args = ResourceValidationArgs(
        type_, engine_props(props), f"urn:pulumi:t::p::{type_}::r", "r", _opts(), None, _config(policy, config)
    )
    assert policy.validate(args, lambda message, urn=None: messages.append(message)) is None
    return messages


def check_stack(
    policy: StackValidationPolicy, resources: list[tuple[str, str, dict]], config: dict | None = None
) -> list[tuple[str | None, str]]:
    """(resource name or None, message) a stack policy reports for ``(type, name, props)`` resources."""
    urn = {name: f"urn:pulumi:t::p::{type_}::{name}" for type_, name, _ in resources}
    prs = [PolicyResource(t, engine_props(p), urn[n], n, _opts(), None, None, [], {}) for t, n, p in resources]
    names = {v: k for k, v in urn.items()}
    found: list[tuple[str | None, str]] = []
    args = StackValidationArgs(prs, _config(policy, config))
    assert policy.validate(args, lambda message, urn=None: found.append((names.get(urn), message))) is None
    return found


def k8s(api_version: str, kind: str, name: str, namespace: str | None = None, **body: Any) -> tuple[str, str, dict]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    meta.update(body.pop("metadata", {}))
    doc = {"apiVersion": api_version, "kind": kind, "metadata": meta, **body}
    return common.k8s_type(api_version, kind), name, doc


# ------------------------------------------------------------- fixtures registered through the real SDKs

ADMIN = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
ADMIN_IN_LIST = {
    "Version": "2012-10-17",
    "Statement": [
        {"Sid": "Read", "Effect": "Allow", "Action": ["s3:GetObject"], "Resource": ["arn:aws:s3:::b/*"]},
        {"Sid": "Everything", "Effect": "Allow", "Action": ["ec2:DescribeImages", "*"], "Resource": ["*"]},
    ],
}
NOT_ACTION = {"Version": "2012-10-17", "Statement": {"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"}}
SCOPED = {
    "Version": "2012-10-17",
    "Statement": [
        # broad reads on * are fine; * actions only under a Deny
        {"Effect": "Allow", "Action": ["ec2:DescribeInstances", "pricing:GetProducts"], "Resource": "*"},
        {"Effect": "Allow", "Action": "*", "Resource": "arn:aws:sqs:us-east-1:000000000000:q"},
        {"Effect": "Deny", "Action": "*", "Resource": "*", "Condition": {"Bool": {"aws:SecureTransport": "false"}}},
    ],
}
DEVICE_PLUGIN_4 = (
    "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n"
)
DEVICE_PLUGIN_16 = DEVICE_PLUGIN_4.replace("replicas: 4", "replicas: 16")


def _sdk_program() -> None:
    import pulumi_aws as aws
    import pulumi_gcp as gcp
    import pulumi_kubernetes as k8s_sdk

    eks = {"cluster_name": "ml", "node_role_arn": "arn:aws:iam::0:role/n", "subnet_ids": ["subnet-a"]}
    scaling = {"desired_size": 0, "max_size": 4, "min_size": 0}
    taint = aws.eks.NodeGroupTaintArgs(key="nvidia.com/gpu", value="present", effect="NO_SCHEDULE")
    aws.eks.NodeGroup(
        "eks-gpu-tainted",
        **eks,
        scaling_config=scaling,
        ami_type="AL2023_x86_64_NVIDIA",
        instance_types=["p4de.24xlarge"],
        capacity_type="ON_DEMAND",
        labels={"gpu-platform/pool": "a100"},
        taints=[taint],
        launch_template={"id": "lt-1", "version": "1"},
    )
    aws.eks.NodeGroup(
        "eks-gpu-untainted",
        **eks,
        scaling_config=scaling,
        ami_type="AL2023_x86_64_STANDARD",
        instance_types=["g6.xlarge"],
    )
    aws.eks.NodeGroup(
        "eks-gpu-prefer",
        **eks,
        scaling_config=scaling,
        ami_type="BOTTLEROCKET_x86_64_NVIDIA",
        taints=[{"key": "nvidia.com/gpu", "effect": "PREFER_NO_SCHEDULE"}],
    )
    aws.eks.NodeGroup("eks-cpu", **eks, scaling_config=scaling, instance_types=["m6i.large"])

    good_disk = {"device_name": "/dev/xvda", "ebs": {"encrypted": "true", "volume_size": 200, "volume_type": "gp3"}}
    aws.ec2.LaunchTemplate(
        "lt-good",
        metadata_options={"http_tokens": "required", "http_put_response_hop_limit": 2},
        block_device_mappings=[good_disk],
    )
    aws.ec2.LaunchTemplate("lt-imdsv1", metadata_options={"http_tokens": "optional"}, block_device_mappings=[good_disk])
    aws.ec2.LaunchTemplate("lt-no-metadata", block_device_mappings=[good_disk])
    aws.ec2.LaunchTemplate(
        "lt-imds-off", metadata_options={"http_endpoint": "disabled"}, block_device_mappings=[good_disk]
    )
    aws.ec2.LaunchTemplate(
        "lt-unencrypted",
        metadata_options={"http_tokens": "required"},
        block_device_mappings=[
            good_disk,
            {"device_name": "/dev/xvdb", "ebs": {"encrypted": "false", "volume_size": 500}},
            {"device_name": "/dev/sdc", "virtual_name": "ephemeral0"},
        ],
    )
    aws.ec2.LaunchTemplate("lt-no-disks", metadata_options={"http_tokens": "required"})

    aws.iam.Policy("iam-admin", policy=json.dumps(ADMIN))
    aws.iam.Policy("iam-admin-in-list", policy=json.dumps(ADMIN_IN_LIST))
    aws.iam.Policy("iam-scoped", policy=json.dumps(SCOPED))
    aws.iam.RolePolicy("rp-not-action", role="r", policy=json.dumps(NOT_ACTION))
    aws.iam.RolePolicy("rp-scoped", role="r", policy=json.dumps(SCOPED))

    gke_good = {
        "machine_type": "n1-standard-8",
        "guest_accelerators": [
            {
                "type": "nvidia-tesla-t4",
                "count": 1,
                "gpu_driver_installation_config": {"gpu_driver_version": "LATEST"},
                "gpu_sharing_config": {"gpu_sharing_strategy": "TIME_SHARING", "max_shared_clients_per_gpu": 4},
            }
        ],
        "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}],
        "labels": {"gpu-platform/pool": "t4"},
        "shielded_instance_config": {"enable_secure_boot": True, "enable_integrity_monitoring": True},
        "workload_metadata_config": {"mode": "GKE_METADATA"},
    }
    gcp.container.NodePool("gke-gpu-good", cluster="ml", node_config=gke_good)
    oversliced = json.loads(json.dumps(gke_good))
    oversliced["guest_accelerators"][0]["gpu_sharing_config"]["max_shared_clients_per_gpu"] = 16
    gcp.container.NodePool("gke-gpu-oversliced", cluster="ml", node_config=oversliced)
    gcp.container.NodePool(
        "gke-gpu-bad",
        cluster="ml",
        node_config={
            "machine_type": "g2-standard-8",
            "spot": True,
            "shielded_instance_config": {"enable_secure_boot": False},
            "workload_metadata_config": {"mode": "GCE_METADATA"},
        },
    )
    gcp.container.NodePool("gke-cpu", cluster="ml", node_config={"machine_type": "e2-standard-4"})

    k8s_sdk.helm.v3.Release(
        "rel-operator",
        chart="gpu-operator",
        version="v26.7.0",
        repository_opts={"repo": "https://helm.ngc.nvidia.com/nvidia"},
        values={"devicePlugin": {"config": {"create": True, "name": "dp", "data": {"l4": DEVICE_PLUGIN_4}}}},
    )
    k8s_sdk.helm.v3.Release(
        "rel-operator-oversliced",
        chart="gpu-operator",
        version="v26.7.0",
        repository_opts={"repo": "https://helm.ngc.nvidia.com/nvidia/"},
        values={"devicePlugin": {"config": {"data": {"default": "version: v1\n", "l4": DEVICE_PLUGIN_16}}}},
    )
    k8s_sdk.helm.v3.Release("rel-kueue", chart="oci://registry.k8s.io/kueue/charts/kueue", version="0.19.2")
    k8s_sdk.helm.v3.Release("rel-range", chart="oci://registry.k8s.io/kueue/charts/kueue", version="~0.19")
    k8s_sdk.helm.v3.Release(
        "rel-no-version", chart="volcano", repository_opts={"repo": "https://volcano-sh.github.io/helm-charts"}
    )
    k8s_sdk.helm.v3.Release(
        "rel-unlisted", chart="volcano", version="1.15.1", repository_opts={"repo": "https://charts.example.com"}
    )
    k8s_sdk.helm.v3.Release("rel-local", chart="./charts/volcano", version="1.15.1")
    k8s_sdk.helm.v3.Release("rel-oci-unlisted", chart="oci://ghcr.io/someone/charts/karpenter", version="1.14.1")

    k8s_sdk.core.v1.ConfigMap(
        "cm-device-plugin",
        metadata={"name": "device-plugin-config", "namespace": "gpu-operator"},
        data={"default": "version: v1\n", "l4": DEVICE_PLUGIN_4},
    )
    k8s_sdk.core.v1.ConfigMap(
        "cm-device-plugin-oversliced",
        metadata={"name": "device-plugin-config", "namespace": "gpu-operator"},
        data={"l4": DEVICE_PLUGIN_16, "notes": "replicas: 100\nnot: a device plugin config\n"},
    )
    k8s_sdk.core.v1.Namespace("ns-typed", metadata={"name": "typed", "labels": {"gpu-platform/tenant": "typed"}})
    k8s_sdk.core.v1.Pod(
        "pod-typed",
        metadata={"name": "typed", "namespace": "typed"},
        spec={"containers": [{"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
    )
    for name, spec in KARPENTER_FIXTURES.items():
        k8s_sdk.apiextensions.CustomResource(
            name, api_version="karpenter.sh/v1", kind="NodePool", metadata={"name": name}, spec=spec
        )
    for name, spec in NODE_CLASS_FIXTURES.items():
        k8s_sdk.apiextensions.CustomResource(
            name, api_version="karpenter.k8s.aws/v1", kind="EC2NodeClass", metadata={"name": name}, spec=spec
        )


def _karpenter(requirements, taints=None, limits=None, disruption=None, expire="720h", labels=None) -> dict:
    template: dict[str, Any] = {
        "spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
            "requirements": requirements,
            "expireAfter": expire,
        }
    }
    if taints is not None:
        template["spec"]["taints"] = taints
    if labels:
        template["metadata"] = {"labels": labels}
    spec: dict[str, Any] = {"template": template}
    if limits is not None:
        spec["limits"] = limits
    if disruption is not None:
        spec["disruption"] = disruption
    return spec


GPU_TAINT = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
SPOT = {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}
KARPENTER_FIXTURES = {
    "karpenter-gpu-good": _karpenter(
        [{"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["h100"]}, SPOT],
        taints=GPU_TAINT,
        limits={"nvidia.com/gpu": "32"},
        disruption={"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "15m"},
        labels={"gpu-platform/pool": "h100-spot"},
    ),
    "karpenter-gpu-bad": _karpenter(
        [{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g5"]}, SPOT],
        disruption={"consolidateAfter": "Never"},
        expire="Never",
    ),
    "karpenter-gpu-by-label": _karpenter(
        [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}],
        taints=[{"key": "nvidia.com/gpu", "effect": "NoExecute"}],
        limits={"cpu": "1000"},
        labels={"gpu-platform/pool": "l4"},
    ),
    "karpenter-cpu": _karpenter(
        [
            {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m"]},
            {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "DoesNotExist"},
        ],
        limits={"cpu": "1000"},
    ),
}
_GOOD_BDM = [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "200Gi", "volumeType": "gp3", "encrypted": True}}]
NODE_CLASS_FIXTURES = {
    "nodeclass-good": {"role": "n", "amiSelectorTerms": [{"alias": "al2023@latest"}], "blockDeviceMappings": _GOOD_BDM},
    "nodeclass-explicit": {
        "role": "n",
        "amiSelectorTerms": [{"alias": "bottlerocket@latest"}],
        "metadataOptions": {"httpTokens": "required", "httpPutResponseHopLimit": 1},
        "blockDeviceMappings": [
            *_GOOD_BDM,
            {"deviceName": "/dev/xvdb", "ebs": {"volumeSize": "500Gi", "encrypted": True}},
        ],
    },
    "nodeclass-bad": {
        "role": "n",
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "metadataOptions": {"httpTokens": "optional"},
        "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "200Gi", "encrypted": False}}],
    },
    "nodeclass-no-disks": {"role": "n", "amiSelectorTerms": [{"alias": "al2023@latest"}]},
}


@cached
def _sdk_fixtures() -> dict[tuple[str, str], dict]:
    import pulumi
    from pulumi.runtime import settings
    from pulumi.runtime.stack import run_pulumi_func
    from pulumi.runtime.sync_await import _sync_await

    captured: dict[tuple[str, str], dict] = {}

    class Capture(pulumi.runtime.Mocks):
        def new_resource(self, args):
            captured[(args.typ, args.name)] = args.inputs
            return f"{args.name}-id", dict(args.inputs)

        def call(self, args):
            return {}

    settings.reset_options(project="policy-fixtures", stack="fixtures", preview=False)
    pulumi.runtime.set_mocks(Capture(), project="policy-fixtures", stack="fixtures", preview=False)
    try:
        _sync_await(run_pulumi_func(_sdk_program))
    finally:
        settings.reset_options()
    return captured


def sdk(name: str) -> tuple[str, dict]:
    """(type token, inputs) of an SDK fixture, as the engine received them."""
    (found,) = [(t, i) for (t, n), i in _sdk_fixtures().items() if n == name]
    return found


def check_sdk(policy: ResourceValidationPolicy, name: str, config: dict | None = None) -> list[str]:
    type_, inputs = sdk(name)
    return check(policy, type_, inputs, config)


# ================================================================================= the pack itself


def test_names_levels_and_order_are_stable():
    assert {p.name: pack.level_of(p).value for p in pack.POLICIES} == POLICY_LEVELS
    assert [p.name for p in pack.POLICIES] == list(POLICY_LEVELS)
    for p in pack.POLICIES:
        assert p.name == p.name.lower() and " " not in p.name and "_" not in p.name
        assert p.description
    assert set(pack.TARGETS) == set(POLICY_LEVELS)
    assert {p.name for p in pack.WORKLOAD_POLICIES} == {
        "gpu-workload-priority-class",
        "gpu-job-gang-scheduling",
        "gpu-container-hardening",
    }


def test_policies_read_the_labels_the_platform_writes():
    assert common.POOL_LABEL == derive.POOL_LABEL
    assert common.TENANT_LABEL == derive.TENANT_LABEL
    assert common.GPU_TAINT_KEY == derive.GPU_TAINT.key and derive.GPU_TAINT.effect == "NoSchedule"
    assert common.GPU_RESOURCE == derive.GPU_RESOURCE
    assert common.GPU_PRESENT_LABEL == derive.GPU_PRESENT_LABEL
    assert {common.MANAGED_BY_LABEL: common.MANAGED_BY_VALUE} == derive.MANAGED_BY
    assert common.CRITICAL_LABEL == tenancy.CRITICAL_LABEL
    assert common.DEFAULT_ALLOWED_SOURCES == versions.ALLOWED_SOURCES
    assert common.DEFAULT_PRIVILEGED_NAMESPACES == ("gpu-monitoring", "gpu-operator")


def test_sdk_type_tokens_match_the_policies():
    fixtures = _sdk_fixtures()
    types = {t for t, _ in fixtures}
    for token in (
        common.EKS_NODE_GROUP,
        common.LAUNCH_TEMPLATE,
        common.GKE_NODE_POOL,
        common.KARPENTER_NODE_POOL,
        common.EC2_NODE_CLASS,
        common.HELM_RELEASE,
        common.CONFIG_MAP,
        common.NAMESPACE,
        common.IAM_POLICY,
        common.IAM_ROLE_POLICY,
    ):
        assert token in types
    assert common.k8s_type("v1", "Pod") in types
    assert common.k8s_type("karpenter.sh/v1", "NodePool") == common.KARPENTER_NODE_POOL
    assert common.k8s_group_kind("kubernetes:batch.volcano.sh/v1alpha1:Job") == ("batch.volcano.sh", "Job")


def test_main_builds_the_pack_and_nothing_else(tmp_path):
    """pulumi runs `python -m pulumi.policy <engine> policies`, i.e. runpy.run_path("policies") with only policies/
    on sys.path and gpu-platform not installed. Simulate that (no site: no editable install) with PolicyPack stubbed."""
    script = f"""
import json, runpy, sys
sys.path.append({sysconfig.get_paths()["purelib"]!r})
import pulumi_policy
calls = []
pulumi_policy.PolicyPack = lambda **kw: calls.append(kw)
runpy.run_path({str(ROOT / "policies")!r}, run_name="__main__")
(kw,) = calls
loaded = sorted(m for m in sys.modules if m.startswith("policies"))
print(json.dumps({{"name": kw["name"], "policies": [p.name for p in kw["policies"]],
                  "level": kw["enforcement_level"].value, "main": loaded}}))
"""
    out = subprocess.run([sys.executable, "-S", "-c", script], cwd=tmp_path, capture_output=True, text=True, check=True)
    got = json.loads(out.stdout)
    assert got["name"] == "gpu-platform"
    assert got["policies"] == list(POLICY_LEVELS)
    assert got["level"] == "advisory"
    assert "policies.offline" not in got["main"]  # the pack loads only the policies


def test_pulumi_policy_yaml_and_requirements():
    doc = yaml.safe_load((ROOT / "policies" / "PulumiPolicy.yaml").read_text())
    assert doc["runtime"]["name"] == "python"
    assert doc["runtime"]["options"]["virtualenv"] == ".venv"
    reqs = (ROOT / "policies" / "requirements.in").read_text()
    assert "pulumi-policy>=1.21" in reqs and "PyYAML" in reqs  # the ranges; requirements.txt is their lock
    assert (ROOT / "policies" / "__init__.py").exists()


def _servicer() -> _PolicyAnalyzerServicer:
    return _PolicyAnalyzerServicer(pack.PACK_NAME, "0.1.0", list(pack.POLICIES), EnforcementLevel.ADVISORY)


def _struct(props: dict) -> struct_pb2.Struct:
    s = struct_pb2.Struct()
    s.update(json.loads(json.dumps(props)))
    return s


def test_engine_analyzer_info_serializes_every_policy():
    info = _servicer().GetAnalyzerInfo(None, None)
    got = {p.name: p for p in info.policies}
    assert set(got) == set(POLICY_LEVELS)
    assert got["gpu-pool-taint"].enforcementLevel == proto.MANDATORY
    assert got["dcgm-monitoring"].enforcementLevel == proto.ADVISORY
    schema = got["time-slicing-replicas"].configSchema.properties["maxReplicas"]
    assert schema["default"] == 8
    sources = list(got["helm-chart-pinned"].configSchema.properties["allowedSources"]["default"])
    assert sources == list(versions.ALLOWED_SOURCES)


def test_engine_analyze_reports_and_honours_config():
    """The engine's own Analyze / AnalyzeStack path (protobuf in, diagnostics out)."""
    servicer = _servicer()
    type_, inputs = sdk("eks-gpu-untainted")
    req = proto.AnalyzeRequest(type=type_, properties=_struct(inputs), urn="urn:pulumi:s::p::x::ng", name="ng")
    diags = servicer.Analyze(req, None).diagnostics
    assert [(d.policyName, d.enforcementLevel) for d in diags] == [("gpu-pool-taint", proto.MANDATORY)]
    assert "nvidia.com/gpu" in diags[0].message

    cfg = proto.ConfigureAnalyzerRequest()
    cfg.policyConfig["gpu-pool-taint"].CopyFrom(proto.PolicyConfig(enforcementLevel=proto.DISABLED))
    servicer.Configure(cfg, None)
    assert list(servicer.Analyze(req, None).diagnostics) == []

    pcs = [
        proto.AnalyzerResource(
            type=common.PRIORITY_CLASS,
            properties=_struct({"metadata": {"name": n}, "value": 1000, "globalDefault": True}),
            urn=f"urn:pulumi:s::p::{common.PRIORITY_CLASS}::{n}",
            name=n,
        )
        for n in ("a", "b")
    ]
    diags = servicer.AnalyzeStack(proto.AnalyzeStackRequest(resources=pcs), None).diagnostics
    assert sorted(d.urn.rsplit("::", 1)[1] for d in diags if d.policyName == "single-default-priority-class") == [
        "a",
        "b",
    ]


# ====================================================================================== the policies


def test_gpu_pool_taint_eks():
    p = capacity_policies.gpu_pool_taint
    assert check_sdk(p, "eks-gpu-tainted") == []
    assert check_sdk(p, "eks-cpu") == []
    (msg,) = check_sdk(p, "eks-gpu-untainted")
    assert "instance type g6.xlarge" in msg and "NO_SCHEDULE" in msg
    (msg,) = check_sdk(p, "eks-gpu-prefer")  # PreferNoSchedule is not enough
    assert "amiType BOTTLEROCKET_x86_64_NVIDIA" in msg


def test_gpu_pool_taint_gke():
    p = capacity_policies.gpu_pool_taint
    assert check_sdk(p, "gke-gpu-good") == []
    assert check_sdk(p, "gke-cpu") == []
    (msg,) = check_sdk(p, "gke-gpu-bad")
    assert "machine type g2-standard-8" in msg and "nodeConfig.taints" in msg


def test_gpu_pool_taint_karpenter():
    p = capacity_policies.gpu_pool_taint
    assert check_sdk(p, "karpenter-gpu-good") == []
    assert check_sdk(p, "karpenter-cpu") == []
    (msg,) = check_sdk(p, "karpenter-gpu-bad")
    assert msg == (  # the whole text: it names the field to fix
        "GPU pool (instance family g5) has no nvidia.com/gpu taint with effect NoSchedule in "
        "spec.template.spec.taints: pods that do not ask for GPUs could land on (and hold) its GPU nodes. Add "
        "{key: nvidia.com/gpu, value: present, effect: NoSchedule}."
    )
    (msg,) = check_sdk(p, "karpenter-gpu-by-label")  # NoExecute is a different taint
    assert "label gpu-platform/pool=l4" in msg


def test_gpu_detection():
    assert (
        common.aws_gpu_instance("p5.48xlarge")
        and common.aws_gpu_instance("g4dn.xlarge")
        and common.aws_gpu_instance("p3.2xlarge")
    )
    assert not common.aws_gpu_instance("g4ad.xlarge")  # AMD
    assert not common.aws_gpu_instance("m6i.large") and not common.aws_gpu_instance("inf2.xlarge")
    assert common.gcp_gpu_machine("a3-highgpu-8g") and common.gcp_gpu_machine("g2-standard-4")
    assert not common.gcp_gpu_machine("n1-standard-8") and not common.gcp_gpu_machine("e2-standard-4")


def test_karpenter_gpu_limit():
    p = capacity_policies.karpenter_gpu_limit
    assert check_sdk(p, "karpenter-gpu-good") == []
    assert check_sdk(p, "karpenter-cpu") == []
    (msg,) = check_sdk(p, "karpenter-gpu-bad")
    assert "spec.limits[nvidia.com/gpu]" in msg
    (msg,) = check_sdk(p, "karpenter-gpu-by-label")  # a cpu limit does not cap GPUs
    assert msg == (
        "Karpenter GPU NodePool (label gpu-platform/pool=l4) sets no spec.limits[nvidia.com/gpu]: nothing caps how "
        "many GPUs it may launch. Set the limit to the pool's GPU budget."
    )
    _, props = sdk("karpenter-gpu-good")
    for limit, expected in (("lots", ["spec.limits[nvidia.com/gpu] is 'lots', not a quantity"]), ("16", [])):
        bad = json.loads(json.dumps(props))
        bad["spec"]["limits"]["nvidia.com/gpu"] = limit
        assert check(p, common.KARPENTER_NODE_POOL, bad) == expected, limit


def _quota(ns: str, hard: dict, name: str = "gpu-quota", **spec: Any) -> tuple[str, str, dict]:
    return k8s("v1", "ResourceQuota", f"{ns}-{name}", ns, metadata={"name": name}, spec={"hard": hard, **spec})


def _tenant_ns(name: str, **labels: str) -> tuple[str, str, dict]:
    return k8s("v1", "Namespace", name, metadata={"labels": {"gpu-platform/tenant": name, **labels}})


def test_tenant_gpu_quota():
    p = scheduling_policies.tenant_gpu_quota
    mig = {
        "requests.nvidia.com/gpu": "8",
        "requests.nvidia.com/mig-1g.10gb": "0",
        "requests.nvidia.com/mig-3g.40gb": "4",
    }
    good = [_tenant_ns("a"), _tenant_ns("b"), _quota("a", mig), _quota("b", {**mig, "requests.cpu": "64"})]
    assert check_stack(p, good) == []

    # b reaches no MIG cap (another tenant's quota shows the stack advertises MIG profiles)
    bad = [_tenant_ns("a"), _tenant_ns("b"), _quota("a", mig), _quota("b", {"requests.nvidia.com/gpu": "8"})]
    (found,) = check_stack(p, bad)
    assert found[0] == "b"
    assert "requests.nvidia.com/mig-1g.10gb, requests.nvidia.com/mig-3g.40gb" in found[1]

    # a Kueue ClusterQueue covering a MIG profile makes it required too; scoped quotas do not count
    cq = k8s(
        "kueue.x-k8s.io/v1beta2",
        "ClusterQueue",
        "cq",
        spec={"resourceGroups": [{"coveredResources": ["nvidia.com/gpu", "nvidia.com/mig-2g.20gb"], "flavors": []}]},
    )
    scoped = _quota("a", {"requests.nvidia.com/mig-2g.20gb": "1"}, name="ceiling", scopes=["BestEffort"])
    found = check_stack(p, [_tenant_ns("a"), _quota("a", {"requests.nvidia.com/gpu": "1"}), scoped, cq])
    assert [(n, "requests.nvidia.com/mig-2g.20gb" in m) for n, m in found] == [("a", True)]

    # no quota at all; non-tenant namespaces are not judged
    found = check_stack(p, [_tenant_ns("a"), k8s("v1", "Namespace", "kueue-system")])
    assert [n for n, _ in found] == ["a"]
    assert "requests.nvidia.com/gpu" in found[0][1]


def test_helm_chart_pinned():
    p = security_policies.helm_chart_pinned
    for ok in ("rel-operator", "rel-operator-oversliced", "rel-kueue"):
        assert check_sdk(p, ok) == [], ok
    (msg,) = check_sdk(p, "rel-range")
    assert "'~0.19' is not an exact version" in msg
    (msg,) = check_sdk(p, "rel-no-version")
    assert "has no version" in msg
    (msg,) = check_sdk(p, "rel-unlisted")
    assert "comes from https://charts.example.com, which is not allow-listed" in msg
    (msg,) = check_sdk(p, "rel-local")
    assert "names no repository" in msg
    (msg,) = check_sdk(p, "rel-oci-unlisted")
    assert "oci://ghcr.io/someone/charts" in msg
    # the allow-list is configurable
    assert check_sdk(p, "rel-unlisted", {"allowedSources": ["https://charts.example.com/"]}) == []
    assert check_sdk(p, "rel-kueue", {"allowedSources": ["https://charts.example.com"]}) != []


def test_helm_exact_versions():
    ok = ["v26.7.0", "0.19.2", "1.0.0-rc.1", "1.2.3+build.5"]
    bad = ["", "1.2", "1.x", "^1.2.3", "~1.2.3", ">=1.0.0", "1.2.*", "*", "latest", "1.2.3 || 1.3.0"]
    for v in ok:
        assert security_policies._EXACT_VERSION.match(v), v
    for v in bad:
        assert not security_policies._EXACT_VERSION.match(v), v


def test_node_imdsv2_and_encryption_launch_templates():
    p = security_policies.node_imdsv2_and_encryption
    assert check_sdk(p, "lt-good") == []
    assert check_sdk(p, "lt-imds-off") == []  # no metadata service at all
    (msg,) = check_sdk(p, "lt-imdsv1")
    assert "httpTokens is 'optional'" in msg
    (msg,) = check_sdk(p, "lt-no-metadata")
    assert "does not require IMDSv2" in msg
    (msg,) = check_sdk(p, "lt-unencrypted")  # the instance-store mapping is skipped
    assert msg.startswith("blockDeviceMappings[/dev/xvdb]: EBS volume is not encrypted")
    (msg,) = check_sdk(p, "lt-no-disks")
    assert "blockDeviceMappings is empty" in msg


def test_node_imdsv2_and_encryption_node_classes():
    p = security_policies.node_imdsv2_and_encryption
    assert check_sdk(p, "nodeclass-good") == []  # httpTokens defaults to required in the CRD
    assert check_sdk(p, "nodeclass-explicit") == []
    msgs = check_sdk(p, "nodeclass-bad")
    assert len(msgs) == 2
    assert "httpTokens: 'optional'" in msgs[0]
    assert "spec.blockDeviceMappings[/dev/xvda]: EBS volume is not encrypted" in msgs[1]
    (msg,) = check_sdk(p, "nodeclass-no-disks")
    assert "spec.blockDeviceMappings is empty" in msg


def test_ec2_node_class_defaults_http_tokens_to_required():
    """Why an EC2NodeClass without metadataOptions passes: the CRD defaults httpTokens to required."""
    schema = json.loads((UPSTREAM / "karpenter" / "ec2nodeclass.karpenter.k8s.aws.v1.json").read_text())
    md = schema["properties"]["spec"]["properties"]["metadataOptions"]
    assert md["default"]["httpTokens"] == "required"
    assert md["properties"]["httpTokens"]["default"] == "required"


def test_gke_gpu_node_hardening():
    p = security_policies.gke_gpu_node_hardening
    assert check_sdk(p, "gke-gpu-good") == []
    assert check_sdk(p, "gke-cpu") == []
    msgs = check_sdk(p, "gke-gpu-bad")
    assert len(msgs) == 2
    assert "secure boot" in msgs[0] and "'GCE_METADATA'" in msgs[1]


def test_time_slicing_replicas():
    p = capacity_policies.time_slicing_replicas
    for ok in ("cm-device-plugin", "rel-operator", "gke-gpu-good", "lt-good"):
        assert check_sdk(p, ok) == [], ok
    (msg,) = check_sdk(p, "cm-device-plugin-oversliced")  # the non-config value is ignored
    assert msg.startswith("data[l4]: time-slicing nvidia.com/gpu into 16 replicas, above the bound of 8")
    (msg,) = check_sdk(p, "rel-operator-oversliced")
    assert msg.startswith("values.devicePlugin.config.data[l4]: time-slicing nvidia.com/gpu into 16 replicas")
    (msg,) = check_sdk(p, "gke-gpu-oversliced")
    assert "16 clients per GPU" in msg and "bound of 8" in msg
    # GKE at its edge: 16 clients are within a bound of 16, one past a bound of 15
    assert check_sdk(p, "gke-gpu-oversliced", {"maxReplicas": 16}) == []
    assert check_sdk(p, "gke-gpu-oversliced", {"maxReplicas": 15}) == [
        "GKE time-sharing gives 16 clients per GPU (maxSharedClientsPerGpu), above the bound of 15: each gets a 1/16 "
        "time slice with no memory isolation."
    ]
    # the bound is configurable
    assert check_sdk(p, "cm-device-plugin-oversliced", {"maxReplicas": 16}) == []
    assert len(check_sdk(p, "cm-device-plugin", {"maxReplicas": 2})) == 1


def test_time_slicing_parses_only_values_that_can_be_device_plugin_configs(monkeypatch):
    """The cost document (400 kB of JSON at 1000 tenants) and other values without a ``sharing`` key are not
    parsed as YAML; a config spelling the key with an escape still is, and is still judged."""
    parsed: list[str] = []
    load = yaml.load
    monkeypatch.setattr(yaml, "load", lambda text, Loader: parsed.append(text) or load(text, Loader=Loader))
    cost = json.dumps({"tenants": [{"name": f"t{i}", "hourlyUsd": {"max": 1.5}} for i in range(50)]})
    sliced = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - {name: nvidia.com/gpu, replicas: 16}\n"
    escaped = sliced.replace("sharing:", '"\\x73haring":')
    # values that mention sharing but are no config: not YAML, a list, a scalar sharing; judged past them all
    broken, listed, scalar = "sharing: [unclosed", "- sharing: {}\n", "sharing: 3\n"
    data = {"cost.json": cost, "plain": "a: 1", "sliced": sliced, "escaped": escaped}
    data |= {"a-broken": broken, "b-listed": listed, "c-scalar": scalar}
    msgs = check(capacity_policies.time_slicing_replicas, common.CONFIG_MAP, {"metadata": {"name": "m"}, "data": data})
    assert sorted(m.split(":")[0] for m in msgs) == ["data[escaped]", "data[sliced]"]
    assert sorted(parsed) == sorted([sliced, escaped, broken, listed, scalar])


def test_spot_gpu_disruption():
    p = capacity_policies.spot_gpu_disruption
    assert check_sdk(p, "karpenter-gpu-good") == []
    assert check_sdk(p, "karpenter-gpu-by-label") == []  # on-demand (no capacity-type requirement)
    assert check_sdk(p, "karpenter-gpu-bad") == [  # the whole text: it is what the user reads
        "spot GPU NodePool: spec.disruption.consolidateAfter is 'Never'; set a duration so idle or underused spot "
        "GPU nodes are consolidated away.",
        "spot GPU NodePool: spec.template.spec.expireAfter is 'Never'; set a duration so nodes are replaced (AMI "
        "and driver updates reach them).",
    ]
    _, props = sdk("karpenter-gpu-good")
    unset = json.loads(json.dumps(props))
    del unset["spec"]["disruption"]
    (msg,) = check(p, common.KARPENTER_NODE_POOL, unset)
    assert "consolidateAfter is None" in msg


def _pool_stack(serving_pools: dict[str, str], critical: bool = True) -> list[tuple[str, str, dict]]:
    """A critical tenant 'serving' with Kueue quota on pools {pool: capacity-type}."""
    out = [_tenant_ns("serving", **({"gpu-platform/critical": "true"} if critical else {}))]
    flavors = []
    for pool, capacity in serving_pools.items():
        out.append(
            k8s(
                "karpenter.sh/v1",
                "NodePool",
                pool,
                spec=_karpenter(
                    [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": [capacity]}],
                    taints=GPU_TAINT,
                    labels={"gpu-platform/pool": pool},
                ),
            )
        )
        out.append(
            k8s("kueue.x-k8s.io/v1beta2", "ResourceFlavor", pool, spec={"nodeLabels": {"gpu-platform/pool": pool}})
        )
        flavors.append({"name": pool, "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}]})
    out.append(
        k8s("kueue.x-k8s.io/v1beta2", "ClusterQueue", "serving", spec={"resourceGroups": [{"flavors": flavors}]})
    )
    out.append(k8s("kueue.x-k8s.io/v1beta2", "LocalQueue", "serving-gpu", "serving", spec={"clusterQueue": "serving"}))
    return out


def test_critical_tenant_capacity():
    p = scheduling_policies.critical_tenant_capacity
    assert check_stack(p, _pool_stack({"h100": "on-demand", "l4": "spot"})) == []
    assert check_stack(p, _pool_stack({"l4": "spot"}, critical=False)) == []
    (found,) = check_stack(p, _pool_stack({"l4": "spot", "a10": "spot"}))
    assert found[0] == "serving"
    assert "only has spot GPU capacity (its Kueue quotas: a10, l4)" in found[1]
    # an on-demand pool it has no quota on does not help it
    stack = _pool_stack({"l4": "spot"})
    stack.append(
        k8s("karpenter.sh/v1", "NodePool", "other", spec=_karpenter([], labels={"gpu-platform/pool": "other"}))
    )
    assert len(check_stack(p, stack)) == 1
    # without Kueue, the stack's pools decide: an EKS spot node group only
    type_, ng = sdk("eks-gpu-tainted")
    spot_ng = {**ng, "capacityType": "SPOT"}
    assert (
        len(check_stack(p, [_tenant_ns("serving", **{"gpu-platform/critical": "true"}), (type_, "ng", spot_ng)])) == 1
    )
    assert check_stack(p, [_tenant_ns("serving", **{"gpu-platform/critical": "true"}), (type_, "ng", ng)]) == []


def test_single_default_priority_class():
    p = scheduling_policies.single_default_priority_class

    def pc(name: str, default: bool) -> tuple[str, str, dict]:
        return k8s("scheduling.k8s.io/v1", "PriorityClass", name, value=1000, globalDefault=default)

    assert check_stack(p, [pc("a", True), pc("b", False)]) == []
    found = check_stack(p, [pc("a", True), pc("b", True), pc("c", False)])
    assert sorted(n for n, _ in found) == ["a", "b"]
    assert "2 PriorityClasses are globalDefault (a, b)" in found[0][1]


GPU_LIMITS = {"limits": {"nvidia.com/gpu": 1}}
SHM = {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}}


def _pod_spec(priority: str | None = "training", resources=None, secure: bool = True, shm: bool = True) -> dict:
    c: dict[str, Any] = {
        "name": "main",
        "image": "nvcr.io/nvidia/pytorch:25.01-py3",
        "resources": resources or GPU_LIMITS,
    }
    spec: dict[str, Any] = {"containers": [c]}
    if priority:
        spec["priorityClassName"] = priority
    if secure:
        spec["securityContext"] = {"runAsNonRoot": True, "runAsUser": 1000}
    if shm:
        c["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
        spec["volumes"] = [SHM]
    return spec


def _check_doc(policy, doc: tuple[str, str, dict]) -> list[str]:
    return check(policy, doc[0], doc[2])


def test_gpu_workload_priority_class():
    p = scheduling_policies.gpu_workload_priority_class
    pod = k8s("v1", "Pod", "nb", "ml", spec=_pod_spec())
    assert _check_doc(p, pod) == []
    cpu = k8s("v1", "Pod", "cpu", "ml", spec=_pod_spec(priority=None, resources={"requests": {"cpu": "1"}}))
    assert _check_doc(p, cpu) == []
    (msg,) = _check_doc(p, k8s("v1", "Pod", "nb", "ml", spec=_pod_spec(priority=None)))
    assert msg.startswith("Pod ml/nb: spec requests GPUs but sets no priorityClassName")
    deploy = k8s("apps/v1", "Deployment", "srv", "ml", spec={"replicas": 2, "template": {"spec": _pod_spec(None)}})
    (msg,) = _check_doc(p, deploy)
    assert "spec.template.spec" in msg
    mig = _pod_spec(
        None, resources={"requests": {"nvidia.com/mig-1g.10gb": 1}, "limits": {"nvidia.com/mig-1g.10gb": 1}}
    )
    assert len(_check_doc(p, k8s("v1", "Pod", "mig", "ml", spec=mig))) == 1
    # a Volcano Job's spec.priorityClassName covers its tasks
    tasks = [{"name": "worker", "replicas": 2, "template": {"spec": _pod_spec(None)}}]
    vj = k8s("batch.volcano.sh/v1alpha1", "Job", "vj", "ml", spec={"minAvailable": 2, "tasks": tasks})
    assert len(_check_doc(p, vj)) == 1
    vj[2]["spec"]["priorityClassName"] = "training"
    assert _check_doc(p, vj) == []
    # typed pulumi_kubernetes Pod (SDK shapes)
    assert len(check_sdk(p, "pod-typed")) == 1


def _job(parallelism: int, labels: dict | None = None, pod: dict | None = None, **meta: Any) -> tuple[str, str, dict]:
    return k8s(
        "batch/v1",
        "Job",
        "train",
        "ml",
        metadata={"labels": labels or {}, **meta},
        spec={"parallelism": parallelism, "completions": parallelism, "template": {"spec": pod or _pod_spec()}},
    )


def test_gpu_job_gang_scheduling_batch_jobs():
    p = scheduling_policies.gpu_job_gang_scheduling
    assert _check_doc(p, _job(4, {"kueue.x-k8s.io/queue-name": "gpu"})) == []
    assert _check_doc(p, _job(1)) == []  # one pod is no gang
    assert (
        _check_doc(p, k8s("apps/v1", "Deployment", "d", "ml", spec={"replicas": 4, "template": {"spec": _pod_spec()}}))
        == []
    )
    (msg,) = _check_doc(p, _job(4))
    assert msg.startswith("Job ml/train runs 4 GPU pods but is not gang-scheduled")
    volcano_pod = {**_pod_spec(), "schedulerName": "volcano"}
    assert len(_check_doc(p, _job(4, pod=volcano_pod))) == 1  # volcano without a PodGroup: each pod alone
    grouped = _job(4, pod=volcano_pod, annotations={"scheduling.k8s.io/group-name": "train"})
    assert _check_doc(p, grouped) == []


def test_gpu_job_gang_scheduling_volcano_and_kubeflow():
    p = scheduling_policies.gpu_job_gang_scheduling
    tasks = [
        {"name": "master", "replicas": 1, "template": {"spec": _pod_spec()}},
        {"name": "worker", "replicas": 3, "template": {"spec": _pod_spec()}},
    ]
    vj = k8s(
        "batch.volcano.sh/v1alpha1",
        "Job",
        "vj",
        "ml",
        spec={"schedulerName": "volcano", "minAvailable": 4, "tasks": tasks},
    )
    assert _check_doc(p, vj) == []
    vj[2]["spec"]["minAvailable"] = 1
    (msg,) = _check_doc(p, vj)
    assert "spec.minAvailable is 1 but its tasks have 4 replicas" in msg
    del vj[2]["spec"]["minAvailable"]
    assert "spec.minAvailable is None" in _check_doc(p, vj)[0]

    specs = {
        "Master": {"replicas": 1, "template": {"spec": _pod_spec()}},
        "Worker": {"replicas": 3, "template": {"spec": _pod_spec()}},
    }
    pj = k8s("kubeflow.org/v1", "PyTorchJob", "pj", "ml", spec={"pytorchReplicaSpecs": specs})
    (msg,) = _check_doc(p, pj)
    assert "PyTorchJob ml/pj runs 4 GPU pods" in msg
    pj[2]["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "gpu"}
    assert _check_doc(p, pj) == []


def test_gpu_container_hardening():
    p = security_policies.gpu_container_hardening
    assert _check_doc(p, k8s("v1", "Pod", "nb", "ml", spec=_pod_spec())) == []
    msgs = _check_doc(p, k8s("v1", "Pod", "nb", "ml", spec=_pod_spec(secure=False, shm=False)))
    assert len(msgs) == 2
    assert "container 'main' may run as root" in msgs[0] and "no memory-backed /dev/shm" in msgs[1]
    root = _pod_spec()
    root["containers"][0]["securityContext"] = {"runAsUser": 0}
    assert "may run as root" in _check_doc(p, k8s("v1", "Pod", "nb", "ml", spec=root))[0]
    disk_shm = _pod_spec()
    disk_shm["volumes"] = [{"name": "dshm", "emptyDir": {}}]
    assert "/dev/shm" in _check_doc(p, k8s("v1", "Pod", "nb", "ml", spec=disk_shm))[0]


def test_dcgm_monitoring():
    p = monitoring_policies.dcgm_monitoring
    pool = (common.EKS_NODE_GROUP, "ng", sdk("eks-gpu-tainted")[1])
    operator = (common.HELM_RELEASE, "op", sdk("rel-operator")[1])
    off = (common.HELM_RELEASE, "op", {**sdk("rel-operator")[1], "values": {"dcgmExporter": {"enabled": False}}})
    exporter = (common.HELM_RELEASE, "dcgm", {"chart": "dcgm-exporter", "version": "4.8.2"})
    assert check_stack(p, [pool, operator]) == []  # the operator's dcgmExporter defaults to enabled
    assert check_stack(p, [pool, off, exporter]) == []
    assert check_stack(p, [(common.EKS_NODE_GROUP, "cpu", sdk("eks-cpu")[1])]) == []  # no GPU capacity, no DCGM needed
    (found,) = check_stack(p, [pool, off])
    assert found[0] is None and "GPU pools a100" in found[1]
    (found,) = check_stack(p, [pool])
    assert "no DCGM exporter" in found[1]


def test_namespace_pod_security():
    p = security_policies.namespace_pod_security

    def ns(name: str, **labels: str) -> dict:
        return k8s("v1", "Namespace", name, metadata={"labels": labels})[2]

    enforce = "pod-security.kubernetes.io/enforce"
    for ok in (
        ns("a", **{"gpu-platform/tenant": "a", enforce: "baseline"}),
        ns("b", **{"gpu-platform/tenant": "b", enforce: "restricted"}),
        ns("gpu-operator", **{enforce: "privileged"}),
        ns(
            "ops",
            **{
                enforce: "privileged",
                "app.kubernetes.io/managed-by": "gpu-platform",
                "gpu-platform/operator-namespace": "true",
            },
        ),
        ns("plain"),
    ):
        assert check(p, common.NAMESPACE, ok) == [], ok
    (msg,) = check(p, common.NAMESPACE, ns("a", **{"gpu-platform/tenant": "a", enforce: "privileged"}))
    assert "tenant namespace 'a' enforces Pod Security level 'privileged'" in msg
    (msg,) = check(p, common.NAMESPACE, ns("a", **{"gpu-platform/tenant": "a"}))
    assert "level None" in msg
    (msg,) = check(p, common.NAMESPACE, ns("rogue", **{enforce: "privileged"}))
    assert "'rogue' is privileged but is not an operator namespace" in msg
    # the marker needs the managed-by label too; the allow-list is configurable
    assert (
        len(check(p, common.NAMESPACE, ns("x", **{enforce: "privileged", "gpu-platform/operator-namespace": "true"})))
        == 1
    )
    assert check(p, common.NAMESPACE, ns("rogue", **{enforce: "privileged"}), {"privilegedNamespaces": ["rogue"]}) == []


def test_iam_no_admin_wildcard():
    p = security_policies.iam_no_admin_wildcard
    assert check_sdk(p, "iam-scoped") == []
    assert check_sdk(p, "rp-scoped") == []
    (msg,) = check_sdk(p, "iam-admin")
    assert msg.startswith("policy: Statement[0] allows Action * on every resource")
    (msg,) = check_sdk(p, "iam-admin-in-list")
    assert "Everything allows Action *" in msg
    (msg,) = check_sdk(p, "rp-not-action")
    assert "allows every action except iam:*" in msg
    role = {"assumeRolePolicy": "{}", "inlinePolicies": [{"name": "admin", "policy": json.dumps(ADMIN)}]}
    (msg,) = check(p, common.IAM_ROLE, role)
    assert msg.startswith("inlinePolicies[admin]:")
    (msg,) = check(p, common.IAM_POLICY, {"policy": "{not json"})
    assert "not a JSON policy document" in msg
    assert check(p, common.IAM_POLICY, {"policy": SCOPED}) == []  # a document object instead of a string


# ===================================================================================== offline runs


def _record(type_: str, name: str, inputs: dict, parent: tuple[str, str] | None = None, provider: str | None = None):
    qualified = f"{parent[0]}${type_}" if parent else type_
    return Record(
        type=type_,
        name=name,
        urn=f"urn:pulumi:fake::gpu-platform::{qualified}::{name}",
        parent=parent[1] if parent else None,
        provider=provider,
        depends_on=[],
        inputs=inputs,
        custom=not type_.startswith("gpu-platform:"),
    )


def _fake_rendering(*records: Record, stack: str = "fake") -> Any:
    return SimpleNamespace(stack=stack, resources=list(records))


def test_offline_builds_the_args_the_engine_would():
    component = _record("gpu-platform:index:Tenancy", "tenancy", {})
    prov = _record("pulumi:providers:kubernetes", "kubernetes", {"enableServerSideApply": True})
    ns = _record(
        common.NAMESPACE,
        "a-namespace",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}, "spec": {"n": 3.0}},
        ("gpu-platform:index:Tenancy", "tenancy"),
        "kubernetes",
    )
    seen: dict[str, Any] = {}

    def spy_resource(args, report):
        if args.resource_type == common.NAMESPACE:
            seen["resource"] = args
            report("resource finding")

    def spy_stack(args, report):
        seen["stack"] = args
        report("stack finding", ns.urn)
        report("stack-wide finding")

    policies = [
        ResourceValidationPolicy("spy-resource", "spy", spy_resource, EnforcementLevel.MANDATORY),
        StackValidationPolicy("spy-stack", "spy", spy_stack, EnforcementLevel.ADVISORY),
    ]
    report = offline.evaluate(_fake_rendering(component, prov, ns), policies=policies)
    args = seen["resource"]
    assert args.urn == ns.urn and args.name == "a-namespace"
    assert not isinstance(args.props, dict) and args.props["metadata"]["name"] == "a"  # the engine's proxies
    assert args.opts.parent == component.urn
    assert args.provider.resource_type == "pulumi:providers:kubernetes" and args.provider.urn == prov.urn
    stack_resources = {r.name: r for r in seen["stack"].resources}
    assert stack_resources["a-namespace"].parent is stack_resources["tenancy"]
    assert stack_resources["a-namespace"].provider.name == "kubernetes"
    assert [v.as_dict() for v in report.violations] == [
        {
            "policy": "spy-resource",
            "enforcementLevel": "mandatory",
            "resourceType": common.NAMESPACE,
            "resourceName": "a-namespace",
            "message": "resource finding",
        },
        {
            "policy": "spy-stack",
            "enforcementLevel": "advisory",
            "resourceType": None,
            "resourceName": None,
            "message": "stack-wide finding",
        },
        {
            "policy": "spy-stack",
            "enforcementLevel": "advisory",
            "resourceType": common.NAMESPACE,
            "resourceName": "a-namespace",
            "message": "stack finding",
        },
    ]
    assert [v.policy for v in report.mandatory_violations] == ["spy-resource"]
    assert report.violations[0].line() == (
        f"policy mandatory spy-resource: {common.NAMESPACE} a-namespace: resource finding"
    )


def _levels(config: dict | None) -> dict[str, str]:
    return {n: s.reported_level.value for n, s in offline.settings(pack.POLICIES, config).items()}


def test_offline_enforcement_levels_follow_policy_pack_config():
    assert _levels(None) == POLICY_LEVELS
    levels = _levels({"all": "advisory", "iam-no-admin-wildcard": "mandatory"})
    assert {n for n, lvl in levels.items() if lvl == "mandatory"} == {"iam-no-admin-wildcard"}
    levels = _levels({"time-slicing-replicas": {"enforcementLevel": "remediate", "maxReplicas": 4}})
    assert levels["time-slicing-replicas"] == "mandatory"  # remediate is reported as mandatory
    st = offline.settings(pack.POLICIES, {"time-slicing-replicas": {"maxReplicas": 4}})
    assert st["time-slicing-replicas"].config == {"maxReplicas": 4}
    assert st["helm-chart-pinned"].config == {
        "allowedSources": list(versions.ALLOWED_SOURCES),
        "allowedDigests": versions.bundled_digests(),
    }
    assert _levels({"dcgm-monitoring": "disabled"})["dcgm-monitoring"] == "disabled"
    with pytest.raises(offline.PolicyConfigError) as err:
        offline.settings(
            pack.POLICIES,
            {
                "gpu-pool-tain": "mandatory",
                "dcgm-monitoring": "strict",
                "time-slicing-replicas": {"maxReplicas": 1, "max": 3},
                "helm-chart-pinned": {"allowedSources": "https://x"},
            },
        )
    text = "\n".join(err.value.problems)
    assert "gpu-pool-tain: no such policy" in text
    assert "dcgm-monitoring.enforcementLevel: 'strict' is not an enforcement level" in text
    assert "time-slicing-replicas.maxReplicas: 1 does not match" in text
    assert "time-slicing-replicas.max: unknown setting (settings: maxReplicas)" in text
    assert "helm-chart-pinned.allowedSources: 'https://x' does not match" in text


def test_offline_disabled_policy_does_not_run_and_crashes_are_reported():
    def boom(args, report):
        raise KeyError("x")

    policies = [ResourceValidationPolicy("boom", "boom", boom, EnforcementLevel.ADVISORY)]
    rendering = _fake_rendering(_record(common.NAMESPACE, "n", {"metadata": {"name": "n"}}))
    (v,) = offline.evaluate(rendering, policies=policies).violations
    assert (v.policy, v.enforcement_level, v.message) == ("boom", "mandatory", "policy raised KeyError: 'x'")
    assert offline.evaluate(rendering, {"boom": "disabled"}, policies=policies).violations == []


def test_offline_report_json_and_markdown():
    ns = _record(common.NAMESPACE, "a-namespace", {"metadata": {"name": "a", "labels": {"gpu-platform/tenant": "a"}}})
    report = offline.evaluate(_fake_rendering(ns))
    doc = json.loads(report.json())
    assert {(d["policy"], d["enforcementLevel"], d["resourceName"]) for d in doc} == {
        ("tenant-gpu-quota", "mandatory", "a-namespace"),
        ("namespace-pod-security", "mandatory", "a-namespace"),
    }
    assert doc == sorted(
        doc, key=lambda d: (d["policy"], d["resourceType"] or "", d["resourceName"] or "", d["message"])
    )
    assert report.json() == offline.evaluate(_fake_rendering(ns)).json()
    md = report.sections["Policy report"]
    assert "**2 mandatory violations (synth exits 1)**" in md
    assert "| tenant-gpu-quota | mandatory | 1 |" in md
    assert "| mandatory | namespace-pod-security | `kubernetes:core/v1:Namespace` a-namespace |" in md


# ============================================================================ shipped stacks, examples


@pytest.mark.parametrize("stack", STACKS)
def test_shipped_stacks_have_no_mandatory_violations(stack):
    report = offline.evaluate(rendered(stack))
    assert [v.line() for v in report.mandatory_violations] == []


@pytest.mark.parametrize("stack", STACKS)
def test_policies_see_the_rendered_tenancy(stack):
    """The stack policies read the real rendered shapes: drop one GPU cap from one tenant's quota."""
    r = rendered(stack)
    quotas = [x for x in r.resources if x.type == RESOURCE_QUOTA and x.name.endswith("-gpu-quota")]
    if not quotas:
        pytest.skip("no tenants")
    victim = quotas[0]
    hard = dict(victim.inputs["spec"]["hard"])
    dropped = sorted(k for k in hard if k.startswith("requests.nvidia.com/"))[-1]
    del hard[dropped]
    changed = {**victim.inputs, "spec": {**victim.inputs["spec"], "hard": hard}}
    resources = [x if x is not victim else Record(**{**victim.__dict__, "inputs": changed}) for x in r.resources]
    report = offline.evaluate(_fake_rendering(*resources, stack=stack), policies=[scheduling_policies.tenant_gpu_quota])
    (v,) = report.violations
    tenant = victim.inputs["metadata"]["namespace"]
    assert (v.resource_type, v.resource_name) == (NAMESPACE, f"{tenant}-namespace")
    assert dropped in v.message


def test_critical_tenants_are_labelled():
    r = rendered("prod-aws")
    serving = manifest(r, "Namespace", "serving")
    assert serving["metadata"]["labels"]["gpu-platform/critical"] == "true"
    assert "gpu-platform/critical" not in manifest(r, "Namespace", "research")["metadata"]["labels"]
    critical = {t["name"] for t in stack_config("prod-aws")["gpu-platform:tenants"] if t.get("critical")}
    labelled = {
        m["metadata"]["name"]
        for m in r.manifests
        if m["kind"] == "Namespace" and "gpu-platform/critical" in m["metadata"]["labels"]
    }
    assert labelled == critical == {"serving"}


def _tenant(cfg: dict, name: str) -> dict:
    return next(t for t in cfg["gpu-platform:tenants"] if t["name"] == name)


def _serving_on_spot_only(cfg: dict) -> None:
    _tenant(cfg, "serving")["gpuQuota"] = {"l4-serving": 8}


def _no_dcgm(cfg: dict) -> None:
    cfg["gpu-platform:addons"] = {**cfg["gpu-platform:addons"], "dcgm": False}


def _twelve_way_time_sharing(cfg: dict) -> None:
    next(p for p in cfg["gpu-platform:nodePools"] if p.get("sharing"))["sharing"]["replicas"] = 12


@pytest.mark.parametrize(
    ("stack", "change", "expected"),
    [
        (
            "prod-gcp",
            _serving_on_spot_only,
            "critical-tenant-capacity: kubernetes:core/v1:Namespace serving-namespace: critical tenant 'serving' only "
            "has spot GPU capacity (its Kueue quotas: l4-serving)",
        ),
        ("local", _no_dcgm, "dcgm-monitoring: stack: the stack runs the GPU Operator but no DCGM exporter"),
        (
            "dev-gcp",
            _twelve_way_time_sharing,
            "time-slicing-replicas: gcp:container/nodePool:NodePool gke-l4-shared: GKE time-sharing gives 12 clients",
        ),
    ],
)
def test_advisory_policies_fire_on_rendered_stacks(stack, change, expected):
    """Valid stack files the advisory policies object to, rendered by the real components (shape check)."""
    cfg = stack_config(stack)
    assert offline.evaluate(rendered(stack)).violations == []
    change(cfg)
    (v,) = offline.evaluate(render_config(cfg)).violations
    assert v.enforcement_level == "advisory"
    assert v.line().startswith(f"policy advisory {expected}")


def _example_docs() -> list[tuple[str, dict]]:
    docs = []
    for path in sorted(EXAMPLES.rglob("*.y*ml")):
        if (path.parent / "Pulumi.yaml").exists():
            continue  # a Pulumi program's folder (examples/component-*): its project and spec, not workloads
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict):
                docs.append((str(path.relative_to(ROOT)), doc))
    return docs


def test_examples_pass_the_workload_policies():
    docs = _example_docs()
    if not docs:
        pytest.skip("examples/ has no YAML yet")
    report = offline.evaluate_manifests([d for _, d in docs])
    assert [v.line() for v in report.violations] == []
    # they are GPU workloads the policies judge: without a priority class each one is refused
    judged = [
        (path, d)
        for path, d in docs
        if any(
            common.gpu_containers(t.spec) for t in common.pod_templates(common.k8s_type(d["apiVersion"], d["kind"]), d)
        )
    ]
    assert judged
    for path, doc in judged:
        stripped = json.loads(json.dumps(doc).replace('"priorityClassName"', '"x-dropped"'))
        found = offline.evaluate_manifests(
            [stripped], policies=[scheduling_policies.gpu_workload_priority_class]
        ).violations
        assert len(found) == 1, path


# ======================================================================= synth exits 1 on a violation


def test_synth_fails_on_a_mandatory_violation(tmp_path, capsys):
    """No valid stack file violates a mandatory policy under the default config: the spec's rules guard each of
    them at the source. A stack can still do what the spec allows and a team's policy config forbids: here
    time-slicing x16 (the spec only requires >= 2) with time-slicing-replicas made mandatory."""
    out = tmp_path / "out"
    stack = FIXTURES / "Pulumi.oversliced.yaml"
    strict = FIXTURES / "strict-time-slicing.json"
    code = cli.main(["synth", "oversliced", "--config", str(stack), "--policy-config", str(strict), "--out", str(out)])
    assert code == cli.EXIT_POLICY
    err = capsys.readouterr().err
    assert "policy mandatory time-slicing-replicas:" in err
    doc = json.loads((out / "policy-report.json").read_text())
    mandatory = [d for d in doc if d["enforcementLevel"] == "mandatory"]
    assert mandatory and {d["policy"] for d in mandatory} == {"time-slicing-replicas"}
    assert all("16 replicas" in d["message"] or "16 clients" in d["message"] for d in mandatory)
    summary = (out / "summary.md").read_text()
    assert "## Policy report" in summary and "| time-slicing-replicas | mandatory |" in summary
    # the default config only advises; check agrees with synth
    assert cli.main(["check", "oversliced", "--config", str(stack)]) == cli.EXIT_OK
    assert cli.main(["check", "oversliced", "--config", str(stack), "--policy-config", str(strict)]) == cli.EXIT_POLICY


def test_cli_rejects_an_unusable_policy_config(tmp_path, capsys):
    bad = tmp_path / "policy.json"
    bad.write_text(json.dumps({"gpu-pool-tain": "mandatory"}))
    out = tmp_path / "out"
    assert cli.main(["synth", "local", "--policy-config", str(bad), "--out", str(out)]) == cli.EXIT_INVALID
    assert not out.exists()
    assert f"{bad}: gpu-pool-tain: no such policy" in capsys.readouterr().err
    assert cli.main(["check", "local", "--policy-config", str(tmp_path / "missing.json")]) == cli.EXIT_INVALID


def test_synth_writes_the_policy_report(tmp_path):
    out = tmp_path / "out"
    assert cli.main(["synth", "prod-aws", "--out", str(out)]) == cli.EXIT_OK
    assert json.loads((out / "policy-report.json").read_text()) == json.loads(
        offline.evaluate(rendered("prod-aws")).json()
    )
    assert "## Policy report" in (out / "summary.md").read_text()


def test_offline_shares_one_engine_proxy_per_resource():
    """Every policy of a run reads the same proxy per resource (built once, not per policy), and it keeps the
    engine's semantics: reading an unknown value raises UnknownValueError naming the path."""
    from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, UnknownValueError

    ns = _record(common.NAMESPACE, "a-namespace", {"metadata": {"name": "a", "labels": {"x": UNKNOWN_STRING_VALUE}}})
    rq = _record(common.RESOURCE_QUOTA, "a-quota", {"metadata": {"name": "q", "namespace": "a"}})
    seen: dict[str, list[Any]] = {}
    unknown: list[str] = []

    def spy(tag):
        def validate(args, report):
            seen.setdefault(tag, []).append(args.props)
            if args.resource_type == common.NAMESPACE:
                try:
                    args.props["metadata"]["labels"]["x"]
                except UnknownValueError as err:
                    unknown.append(err.message)

        return validate

    def spy_stack(args, report):
        seen.setdefault("stack", []).extend(r.props for r in args.resources)
        seen.setdefault("stack-resources", []).append(args.resources)

    policies = [
        ResourceValidationPolicy("spy-a", "spy", spy("a"), EnforcementLevel.ADVISORY),
        ResourceValidationPolicy("spy-b", "spy", spy("b"), EnforcementLevel.ADVISORY),
        StackValidationPolicy("spy-s1", "spy", spy_stack, EnforcementLevel.ADVISORY),
        StackValidationPolicy("spy-s2", "spy", spy_stack, EnforcementLevel.ADVISORY),
    ]
    offline.evaluate(_fake_rendering(ns, rq), policies=policies)
    assert [id(p) for p in seen["a"]] == [id(p) for p in seen["b"]] == [id(p) for p in seen["stack"][:2]]
    assert seen["stack-resources"][0] is seen["stack-resources"][1]
    assert unknown == ["string value at .metadata.labels.x can't be known during preview"] * 2
    assert ns.inputs["metadata"]["labels"]["x"] == UNKNOWN_STRING_VALUE  # the rendering itself is untouched


def test_offline_run_sets_off_no_garbage_collection():
    """A run builds proxies for every resource and keeps them to its end; letting those allocations set off the
    cyclic collector made it traverse the render's whole heap again and again (full passes at 1000 tenants cost
    more than every policy together, and grew faster than the stack). No collection starts during a run, and
    the collector is back on afterwards (left off if it was off)."""
    import gc

    nested = {"metadata": {"labels": {"a": "b"}, "annotations": {"c": "d"}}, "spec": {"x": [{"y": [1, {"z": 2}]}]}}
    records = [_record(common.NAMESPACE, f"ns-{i}", json.loads(json.dumps(nested))) for i in range(600)]
    subjects = offline.subjects_from_rendering(_fake_rendering(*records))
    starts: list[int] = []

    def count(phase, info):
        if phase == "start":
            starts.append(info["generation"])

    gc.collect()
    gc.callbacks.append(count)
    try:
        report = offline.run(subjects)
        assert gc.isenabled()
        gc.disable()
        offline.run(subjects)
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.callbacks.remove(count)
    assert starts == []
    assert report.resource_count == 600


class _CountingList(list):
    """A resource list that counts full passes over it."""

    passes = 0

    def __iter__(self):
        self.passes += 1
        return super().__iter__()


def test_tenant_quota_and_critical_capacity_scale_linearly():
    """Quotas and Kueue queues are indexed once per run, not scanned per tenant namespace: the number of passes
    over the stack does not grow with tenants, and each namespace is still judged by its own objects only."""
    passes = {}
    for n in (20, 200):
        resources = []
        for i in range(n):
            name = f"t{i}"
            resources.append(_tenant_ns(name, **{common.CRITICAL_LABEL: "true"}))
            if i != 7:  # t7 has no quota: only t7 is reported
                resources.append(_quota(name, {"requests.nvidia.com/gpu": "1"}))
            resources.append(
                k8s("kueue.x-k8s.io/v1beta2", "LocalQueue", f"{name}-lq", name, spec={"clusterQueue": f"cq-{name}"})
            )
            flavor = "spot" if i % 2 else "ondemand"  # odd tenants reach only the spot pool
            gpus = [{"name": "nvidia.com/gpu", "nominalQuota": 1}]
            cq_spec = {"resourceGroups": [{"flavors": [{"name": flavor, "resources": gpus}]}]}
            cq = k8s(
                "kueue.x-k8s.io/v1beta2", "ClusterQueue", f"cq-{name}", metadata={"name": f"cq-{name}"}, spec=cq_spec
            )
            resources.append(cq)
        for flavor in ("spot", "ondemand"):
            spec = {"nodeLabels": {common.POOL_LABEL: flavor}}
            resources.append(
                k8s("kueue.x-k8s.io/v1beta2", "ResourceFlavor", flavor, metadata={"name": flavor}, spec=spec)
            )
        for pool, capacity in (("spot", "SPOT"), ("ondemand", "ON_DEMAND")):
            props = {
                "instanceTypes": ["g5.xlarge"],
                "capacityType": capacity,
                "labels": {common.POOL_LABEL: pool},
                "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}],
            }
            resources.append((common.EKS_NODE_GROUP, pool, props))
        urn = {name: f"urn:pulumi:t::p::{type_}::{name}" for type_, name, _ in resources}
        names = {v: k for k, v in urn.items()}
        prs = _CountingList(
            PolicyResource(t, engine_props(p), urn[n], n, _opts(), None, None, [], {}) for t, n, p in resources
        )
        found: dict[str, list[str | None]] = {}
        for policy in (scheduling_policies.tenant_gpu_quota, scheduling_policies.critical_tenant_capacity):
            args = StackValidationArgs(prs, _config(policy, None))
            policy.validate(
                args, lambda message, urn=None, k=policy.name, f=found, nm=names: f.setdefault(k, []).append(nm[urn])
            )
        assert found["tenant-gpu-quota"] == ["t7"]
        assert sorted(found["critical-tenant-capacity"]) == sorted(f"t{i}" for i in range(1, n, 2))
        passes[n] = prs.passes
    assert passes[200] == passes[20] <= 8, passes
