"""``components.render.aws.sdk`` registers AWS resources and looks up the EKS cluster exactly as pulumi_aws' typed
classes and ``eks.get_cluster_output`` would: every kind the stacks create is registered both ways under the
mock engine with the same arguments, and the requests the engine receives are compared field by field (type
token, camelCase inputs nested too, user maps' keys untouched, plugin version, parent, dependencies, aliases,
ignored changes, secret outputs...), with the outputs the components read. The AWS stacks are also rendered
whole both ways (the typed classes swapped in for ``sdk.resource`` / ``sdk.eks_cluster``), normal and preview.
"""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest
from conftest import STACKS, rendered, stack_config
from google.protobuf.json_format import MessageToDict

from components.render import k8s
from components.render.aws import sdk

TAGS = {"managed-by": "gpu-platform", "team_name": "ml", "kubernetes.io/cluster/c": "owned"}
# the self-referencing EFA rule, the same arguments both ways
SG_RULE = {
    "security_group_id": "sg-1",
    "referenced_security_group_id": "sg-1",
    "ip_protocol": "-1",
    "description": "d",
    "region": "r",
    "tags": TAGS,
}
# (class, arguments as the components pass them): every kind in sdk.KINDS, with the arguments its callers set
# (nested ones as components/plan/aws/managed_pools.py, efa.py and reservations.py build them).
CASES: list[tuple[str, dict[str, Any]]] = [
    ("iam.Role", {"name": "r", "description": "d", "assume_role_policy": '{"Version": "2012-10-17"}', "tags": TAGS}),
    ("iam.Policy", {"name": "p", "description": "d", "policy": '{"Statement": []}', "tags": TAGS}),
    ("iam.RolePolicyAttachment", {"role": "r", "policy_arn": "arn:aws:iam::aws:policy/X"}),
    ("iam.RolePolicy", {"name": "p", "role": "r", "policy": '{"Statement": []}'}),
    (
        "ecr.PullThroughCacheRule",
        {
            "ecr_repository_prefix": "docker.io",
            "upstream_registry_url": "registry-1.docker.io",
            "credential_arn": "arn:aws:secretsmanager:us-east-1:123456789012:secret:ecr-pullthroughcache/d",
            "region": "us-east-1",
        },
    ),
    ("iam.OpenIdConnectProvider", {"url": "https://oidc/id/X", "client_id_lists": ["sts.amazonaws.com"], "tags": TAGS}),
    (
        "eks.AccessEntry",
        {"cluster_name": "c", "principal_arn": "arn:r", "type": "EC2_LINUX", "region": "us-east-1", "tags": TAGS},
    ),
    (
        "eks.PodIdentityAssociation",
        {
            "cluster_name": "c",
            "namespace": "kube-system",
            "service_account": "karpenter",
            "region": "us-east-1",
            "role_arn": "arn:r",
            "tags": TAGS,
        },
    ),
    (
        "eks.NodeGroup",
        {
            "cluster_name": "c",
            "node_group_name_prefix": "pool-",
            "node_role_arn": "arn:r",
            "subnet_ids": ["subnet-a", "subnet-b"],
            "ami_type": "AL2023_x86_64_NVIDIA",
            "capacity_type": "CAPACITY_BLOCK",
            "instance_types": ["p5.48xlarge"],
            "scaling_config": {"min_size": 0, "desired_size": 1, "max_size": 4},
            "update_config": {"max_unavailable": 1, "update_strategy": "MINIMAL"},
            "node_repair_config": {"enabled": True},
            "launch_template": {"id": "lt-1", "version": "1"},
            "labels": {"nvidia.com/gpu.present": "true", "pool_name": "p", "k8s.amazonaws.com/accelerator": "x"},
            "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}],
            "tags": {**TAGS, "k8s.io/cluster-autoscaler/node-template/label/pool_name": "p"},
            "region": "us-east-1",
        },
    ),
    (
        "ec2.LaunchTemplate",
        {
            "name": "lt",
            "description": "d",
            "block_device_mappings": [
                {
                    "device_name": "/dev/xvda",
                    "ebs": {
                        "delete_on_termination": "true",
                        "encrypted": "true",
                        "volume_type": "gp3",
                        "volume_size": 200,
                        "iops": 16000,
                        "throughput": 1000,
                    },
                }
            ],
            "metadata_options": {
                "http_endpoint": "enabled",
                "http_tokens": "required",
                "http_put_response_hop_limit": 2,
                "instance_metadata_tags": "disabled",
            },
            "tag_specifications": [{"resource_type": "instance", "tags": TAGS}],
            "user_data": "IyEvYmluL2Jhc2g=",
            "update_default_version": True,
            "network_interfaces": [
                {
                    "network_card_index": 1,
                    "device_index": 1,
                    "interface_type": "efa-only",
                    "security_groups": ["sg-1", "sg-2"],
                    "delete_on_termination": "true",
                }
            ],
            "placement": {"group_name": "pg"},
            "capacity_reservation_specification": {
                "capacity_reservation_preference": "open",
                "capacity_reservation_target": {"capacity_reservation_id": "cr-1"},
            },
            "instance_market_options": {"market_type": "capacity-block"},
            "region": "us-east-1",
            "tags": TAGS,
        },
    ),
    ("ec2.SecurityGroup", {"name": "sg", "description": "d", "vpc_id": "vpc-1", "region": "r", "tags": TAGS}),
    ("ec2.PlacementGroup", {"name": "pg", "strategy": "cluster", "region": "r", "tags": TAGS}),
    ("vpc.SecurityGroupIngressRule", SG_RULE),
    ("vpc.SecurityGroupEgressRule", SG_RULE),
    (
        "sqs.Queue",
        {"name": "q", "message_retention_seconds": 300, "sqs_managed_sse_enabled": True, "region": "r", "tags": TAGS},
    ),
    ("sqs.QueuePolicy", {"queue_url": "https://q", "region": "r", "policy": '{"Statement": []}'}),
    (
        "cloudwatch.EventRule",
        {"name": "e", "description": "d", "event_pattern": '{"source": ["aws.ec2"]}', "region": "r", "tags": TAGS},
    ),
    ("cloudwatch.EventTarget", {"rule": "e", "arn": "arn:q", "target_id": "T", "region": "r"}),
    (
        "eks.Addon",
        {
            "cluster_name": "c",
            "addon_name": "eks-node-monitoring-agent",
            "resolve_conflicts_on_create": "OVERWRITE",
            "resolve_conflicts_on_update": "PRESERVE",
            "region": "r",
            "tags": {"managed-by": "gpu-platform"},
        },
    ),
    (
        "autoscaling.Tag",
        {
            "autoscaling_group_name": "eks-pool-abc",
            "tag": {"key": "gpu-platform/pool", "value": "p", "propagate_at_launch": False},
            "region": "r",
        },
    ),
    # a created cluster (components/render/aws/cluster_create.py)
    ("ec2.Vpc", {"cidr_block": "10.0.0.0/16", "enable_dns_hostnames": True, "enable_dns_support": True, "tags": TAGS}),
    (
        "ec2.Subnet",
        {"vpc_id": "vpc-1", "cidr_block": "10.0.0.0/19", "availability_zone": "r-1a", "map_public_ip_on_launch": False},
    ),
    ("ec2.InternetGateway", {"vpc_id": "vpc-1", "region": "r", "tags": TAGS}),
    ("ec2.Eip", {"domain": "vpc", "region": "r", "tags": TAGS}),
    ("ec2.NatGateway", {"allocation_id": "eip-1", "subnet_id": "s-1", "region": "r", "tags": TAGS}),
    (
        "ec2.VpcEndpoint",
        {
            "vpc_id": "vpc-1",
            "service_name": "com.amazonaws.r.s3",
            "vpc_endpoint_type": "Gateway",
            "route_table_ids": ["rt-1", "rt-2"],
            "region": "r",
            "tags": TAGS,
        },
    ),
    ("ec2.RouteTable", {"vpc_id": "vpc-1", "region": "r", "tags": TAGS}),
    ("ec2.VpcIpv4CidrBlockAssociation", {"vpc_id": "vpc-1", "cidr_block": "100.64.0.0/16", "region": "r"}),
    ("ec2.Route", {"route_table_id": "rt-1", "destination_cidr_block": "0.0.0.0/0", "nat_gateway_id": "nat-1"}),
    ("ec2.RouteTableAssociation", {"subnet_id": "s-1", "route_table_id": "rt-1", "region": "r"}),
    ("ec2.Tag", {"resource_id": "sg-1", "key": "karpenter.sh/discovery", "value": "c", "region": "r"}),
    ("kms.Key", {"description": "d", "enable_key_rotation": True, "deletion_window_in_days": 30, "tags": TAGS}),
    ("kms.Alias", {"name": "alias/c-eks-secrets", "target_key_id": "k-1", "region": "r"}),
    ("cloudwatch.LogGroup", {"name": "/aws/eks/c/cluster", "retention_in_days": 90, "region": "r", "tags": TAGS}),
    (
        "eks.Cluster",
        {
            "name": "c",
            "role_arn": "arn:r",
            "version": "1.34",
            "vpc_config": {
                "subnet_ids": ["s-1", "s-2"],
                "endpoint_private_access": True,
                "endpoint_public_access": True,
                "public_access_cidrs": ["203.0.113.0/24"],
            },
            "access_config": {"authentication_mode": "API", "bootstrap_cluster_creator_admin_permissions": False},
            "bootstrap_self_managed_addons": False,
            "encryption_config": {"provider": {"key_arn": "arn:k"}, "resources": ["secrets"]},
            "enabled_cluster_log_types": ["api", "audit"],
            "kubernetes_network_config": {"service_ipv4_cidr": "172.20.0.0/16"},
            "region": "r",
            "tags": TAGS,
        },
    ),
    (
        "eks.AccessPolicyAssociation",
        {"cluster_name": "c", "principal_arn": "arn:r", "policy_arn": "arn:p", "access_scope": {"type": "cluster"}},
    ),
]
# What the mock engine answers for a created resource, beyond the inputs (numbers as the engine sends them).
OUTPUTS = {"arn": "arn:aws:x", "url": "https://sqs/q", "latestVersion": 3, "nodeGroupName": "pool-abc"}
CLUSTER = {
    "arn": "arn:aws:eks:us-east-1:1:cluster/c",
    "endpoint": "https://e",
    "certificateAuthorities": [{"data": "Q0E="}],
    "identities": [{"oidcs": [{"issuer": "https://oidc/id/X"}]}],
    "vpcConfig": {"subnetIds": ["s-1"], "clusterSecurityGroupId": "sg-c", "vpcId": "vpc-1", "securityGroupIds": []},
}
NOISE = ("sourcePosition", "stackTrace")


def _request(request) -> dict[str, Any]:
    """A RegisterResource request as a dict, minus the source position; dependencies in a fixed order (the SDK
    collects them in a set, so their order differs from run to run; the engine reads them as a set)."""
    got = {k: v for k, v in MessageToDict(request).items() if k not in NOISE}
    if "dependencies" in got:
        got["dependencies"] = sorted(got["dependencies"])
    for deps in got.get("propertyDependencies", {}).values():
        deps["urns"] = sorted(deps.get("urns", []))
    return got


def _typed(kind: str):
    module, cls = kind.rsplit(".", 1)
    return getattr(importlib.import_module(f"pulumi_aws.{module}"), cls)


def _typed_resource(kind, resource_name, opts=None, **args):
    return _typed(kind)(resource_name, opts=opts, **args)


def _typed_cluster(name, region, parent=None):
    import pulumi
    import pulumi_aws as aws

    opts = pulumi.InvokeOutputOptions(parent=parent) if parent is not None else None
    return aws.eks.get_cluster_output(name=name, region=region, opts=opts)


def _run(program, preview: bool = False) -> tuple[list[dict[str, Any]], Any]:
    """The RegisterResource and Invoke requests ``program`` sends (minus the source position), in order, and
    what it returns with every Output in it awaited."""
    import pulumi
    from pulumi.runtime import settings
    from pulumi.runtime.mocks import MockMonitor
    from pulumi.runtime.stack import run_pulumi_func
    from pulumi.runtime.sync_await import _sync_await

    class Mocks(pulumi.runtime.Mocks):
        def new_resource(self, args):
            return (f"id-{args.name}" if args.custom else ""), ({} if preview else OUTPUTS)

        def call(self, args):
            return CLUSTER

    seen: list[dict[str, Any]] = []

    class Monitor(MockMonitor):
        def RegisterResource(self, request):
            seen.append(_request(request))
            return super().RegisterResource(request)

        def Invoke(self, request):
            seen.append({"invoke": MessageToDict(request)})
            return super().Invoke(request)

    result: list[Any] = []

    async def resolved(value):
        if isinstance(value, pulumi.Output):
            known = await value.is_known()
            return ("unknown",) if not known else await resolved(await value.future())
        if isinstance(value, dict):
            return {k: await resolved(v) for k, v in value.items()}
        if isinstance(value, list):
            return [await resolved(v) for v in value]
        return value

    async def main():
        result.append(await resolved(program()))

    mocks = Mocks()
    settings.reset_options(project="p", stack="s", preview=preview)
    pulumi.runtime.set_mocks(mocks, project="p", stack="s", preview=preview, monitor=Monitor(mocks))
    try:
        _sync_await(run_pulumi_func(lambda: _sync_await(main())))
    finally:
        settings.reset_options()
    return seen, result[0]


def _keyed(seen: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    """The requests by what they are, not by when they arrived: registrations by (type, name), invokes by token
    and arguments. Resources of one program register concurrently (the parent and the dependency of the
    resource under test race), so the arrival order is not part of what the engine is told."""
    out: dict[Any, dict[str, Any]] = {}
    for request in seen:
        if "invoke" in request:
            key: Any = ("invoke", request["invoke"]["tok"], json.dumps(request["invoke"].get("args"), sort_keys=True))
        else:
            key = (request["type"], request["name"])
        assert key not in out, f"registered twice: {key}"
        out[key] = request
    return out


def _read(res, kind: str, args: dict[str, Any]) -> dict[str, Any]:
    """What a component can read of a resource: its id and the properties sdk.KINDS lists."""
    names = ["id", *sdk.KINDS[kind][1]]
    return {n: getattr(res, n) for n in names}


def _register(make, kind: str, args: dict[str, Any], preview: bool = False):
    import pulumi

    def program():
        parent = pulumi.ComponentResource("test:index:Parent", "parent")
        before = pulumi.CustomResource("test:index:Before", "before", {})
        opts = pulumi.ResourceOptions(
            parent=parent,
            depends_on=[before],
            protect=True,
            aliases=[pulumi.Alias(name="old")],
            ignore_changes=["scalingConfig.desiredSize"],
            custom_timeouts=pulumi.CustomTimeouts(create="20m"),
        )
        return _read(make(kind, "res", opts, **args), kind, args)

    return _run(program, preview)


@pytest.mark.parametrize("preview", [False, True], ids=["up", "preview"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_resource_registers_as_its_typed_class(case, preview):
    kind, args = case
    typed, typed_read = _register(_typed_resource, kind, args, preview)
    generic, generic_read = _register(sdk.resource, kind, args, preview)
    assert _keyed(generic) == _keyed(typed)
    assert {name for _, name in _keyed(typed)} == {"p-s", "parent", "before", "res"}  # the stack and three
    assert generic_read == typed_read
    assert [type(v) for v in generic_read.values()] == [type(v) for v in typed_read.values()]
    request = _keyed(typed)[(sdk.KINDS[kind][0], "res")]
    assert request["type"] == sdk.KINDS[kind][0]
    assert request["version"]  # the plugin version the typed class sends, sent here too
    if not preview:
        assert typed_read["id"] == "id-res"
        assert all(typed_read[o] != ("unknown",) for o in sdk.KINDS[kind][1])


def test_user_maps_keep_their_keys_and_objects_go_camel_case():
    """Worked out by hand: the typed class sends the input types' camelCase names, and a tag or label as given."""
    requests, _ = _register(sdk.resource, "ec2.LaunchTemplate", dict(CASES)["ec2.LaunchTemplate"])
    got = _keyed(requests)[(sdk.KINDS["ec2.LaunchTemplate"][0], "res")]["object"]
    assert got["metadataOptions"]["httpPutResponseHopLimit"] == 2
    assert got["blockDeviceMappings"][0]["ebs"]["deleteOnTermination"] == "true"
    assert got["capacityReservationSpecification"]["capacityReservationTarget"] == {"capacityReservationId": "cr-1"}
    assert got["tagSpecifications"][0] == {"resourceType": "instance", "tags": TAGS}
    assert got["tags"]["team_name"] == "ml"
    assert "latestVersion" not in got  # an output, not sent


def test_latest_version_is_an_int_as_the_typed_class_reads_it():
    _, read = _register(sdk.resource, "ec2.LaunchTemplate", {"name": "lt"})
    assert read["latest_version"] == 3 and isinstance(read["latest_version"], int)


@pytest.mark.parametrize("preview", [False, True], ids=["up", "preview"])
def test_the_cluster_lookup_invokes_as_get_cluster_output(preview):
    def program(lookup):
        def run():
            c = lookup("c", "us-east-1")
            return {
                "arn": c.arn,
                "endpoint": c.endpoint,
                "ca": c.certificate_authorities[0].data,
                "issuer": c.identities[0].oidcs[0].issuer,
                "subnets": c.vpc_config.subnet_ids,
                "sg": c.vpc_config.cluster_security_group_id,
                "vpc": c.vpc_config.vpc_id,
            }

        return run

    typed, typed_read = _run(program(_typed_cluster), preview)
    generic, generic_read = _run(program(sdk.eks_cluster), preview)
    assert _keyed(generic) == _keyed(typed)
    invokes = [q["invoke"] for q in typed if "invoke" in q]
    assert [q["tok"] for q in invokes] == [sdk.GET_CLUSTER]  # one lookup
    assert invokes[0]["version"]
    assert (
        generic_read
        == typed_read
        == {
            "arn": "arn:aws:eks:us-east-1:1:cluster/c",
            "endpoint": "https://e",
            "ca": "Q0E=",
            "issuer": "https://oidc/id/X",
            "subnets": ["s-1"],
            "sg": "sg-c",
            "vpc": "vpc-1",
        }
    )


def test_every_kind_is_compared():
    """Each AWS type the shipped stacks register is one sdk.KINDS knows and one of the compared cases, and the
    only AWS lookup is the cluster's: a new kind or invoke cannot skip the comparison."""
    registered = {r.type for s in STACKS for r in rendered(s).resources if r.type.startswith("aws:")}
    known = {token for token, _ in sdk.KINDS.values()}
    assert registered <= known, sorted(registered - known)
    assert {kind for kind, _ in CASES} == set(sdk.KINDS)
    lookups = {t for s in STACKS for t in rendered(s).lookups if t.startswith("aws:")}
    assert lookups == {sdk.GET_CLUSTER}


def _render_requests(monkeypatch, stack: str, config: dict[str, Any], preview: bool, typed: bool):
    """The requests the real program sends for ``stack``, AWS registered through sdk or the typed classes."""
    from pulumi.runtime.mocks import MockMonitor

    from components.cli import synth

    seen: list[dict[str, Any]] = []
    invoke, answering = MockMonitor.Invoke, synth._answering_monitor

    def recording_monitor():
        """The synth's monitor (a lean render's answers empty states itself), recording what it receives."""

        class Recording(answering()):
            def RegisterResource(self, request):
                seen.append(_request(request))
                return super().RegisterResource(request)

        return Recording

    def recording_invoke(self, request):
        seen.append({"invoke": MessageToDict(request)})
        return invoke(self, request)

    with monkeypatch.context() as m:
        m.setattr(synth, "_answering_monitor", recording_monitor)
        m.setattr(MockMonitor, "Invoke", recording_invoke)
        if typed:
            m.setattr(sdk, "resource", _typed_resource)
            m.setattr(sdk, "eks_cluster", _typed_cluster)
        r = synth.render(stack, config, preview)
    return sorted(seen, key=repr), synth.files(r)


def _irsa_autoscaled(stack: str) -> dict[str, Any]:
    cfg = stack_config(stack)
    cfg.setdefault("gpu-platform:karpenter", {})["identity"] = "irsa"
    return cfg


@pytest.mark.parametrize(
    "stack,config,preview",
    [
        ("prod-aws", None, False),
        ("prod-aws", None, True),
        ("dev-aws", None, False),
        ("prod-aws", "irsa", False),
        ("starter-aws", None, False),
        ("starter-aws", None, True),
    ],
    ids=["prod-aws", "prod-aws-preview", "dev-aws", "prod-aws-irsa", "starter-aws", "starter-aws-preview"],
)
def test_an_aws_stack_renders_as_with_the_typed_classes(monkeypatch, stack, config, preview):
    cfg = _irsa_autoscaled(stack) if config == "irsa" else stack_config(stack)
    typed = _render_requests(monkeypatch, stack, cfg, preview, typed=True)
    generic = _render_requests(monkeypatch, stack, cfg, preview, typed=False)
    requests, files = generic
    assert requests == typed[0]
    assert files == typed[1]
    aws = [q for q in requests if q.get("type", "").startswith("aws:")]
    assert {q["type"] for q in aws} >= {"aws:ec2/launchTemplate:LaunchTemplate", "aws:iam/role:Role"}
    # the IRSA variant trusts the cluster's OIDC issuer (read from the lookup) instead of Pod Identity
    associations = [q for q in aws if q["type"] == "aws:eks/podIdentityAssociation:PodIdentityAssociation"]
    assert (associations == []) == (config == "irsa")


def test_wire_camel_cases_objects_but_not_user_maps():
    """Object keys become the SDK's camelCase wire names at every depth (lists and tuples too); the keys of
    tags and labels are the user's own and pass unchanged, as does everything under them."""
    value = {
        "block_device_mappings": ({"device_name": "/dev/xvda", "ebs": {"volume_size": 1}},),
        "tags": {"cost_center": "x", "gpu_platform/pool": "p"},
        "labels": {"my_label": {"inner_key": 1}},
        "plain": "snake_value",
    }
    assert sdk.wire(value) == {
        "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": 1}}],
        "tags": {"cost_center": "x", "gpu_platform/pool": "p"},
        "labels": {"my_label": {"inner_key": 1}},
        "plain": "snake_value",
    }
    assert sdk.wire(["a_b", 1]) == ["a_b", 1]


def test_invoke_results_read_by_python_name():
    """A lookup answer reads like the typed result: camelCase keys by Python name, nested objects and lists of
    them alike; a missing one is an AttributeError (so getattr defaults work); whole floats stay floats except
    through _int, which the int outputs use."""
    result = sdk._result(
        {
            "vpcConfig": {"subnetIds": ["a"], "clusterSecurityGroupId": "sg"},
            "certificateAuthorities": [{"data": "Q0E="}],
        }
    )
    assert result.vpc_config.subnet_ids == ["a"]
    assert result.vpc_config.cluster_security_group_id == "sg"
    assert result.certificate_authorities[0].data == "Q0E="
    with pytest.raises(AttributeError, match=r"^endpoint$"):
        result.endpoint  # noqa: B018
    assert getattr(result, "endpoint", "default") == "default"
    assert sdk._int(3.0) == 3 and isinstance(sdk._int(3.0), int)
    assert sdk._int("3") == "3"


def test_the_plugin_version_is_the_typed_classes_without_their_package_root():
    """What every AWS resource and lookup sends as its plugin version and download URL equals pulumi_aws'
    ``_utilities`` defaults (read here by importing it, which the render does not)."""
    from pulumi_aws import _utilities

    for ours, theirs in (
        (k8s.with_plugin_version(None, sdk._version()), _utilities.get_resource_opts_defaults()),
        (sdk.invoke_opts_defaults(), _utilities.get_invoke_opts_defaults()),
    ):
        assert (ours.version, ours.plugin_download_url) == (theirs.version, theirs.plugin_download_url)
        assert ours.version and ours.version[0].isdigit()
