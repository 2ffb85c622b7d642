"""How AWS resources are registered and the EKS cluster looked up, without importing pulumi_aws' typed modules.

pulumi_aws' typed classes (``ec2.LaunchTemplate``, ``iam.Role``...) only turn their snake_case arguments into
camelCase inputs (nested ones too, from their input types' metadata), add the provider plugin's version and
register the resource under its type token, with every output property set to None so it gets an ``Output``
(pulumi_aws 7.51.1 ``iam/role.py`` ``Role._internal_init``: ``opts = merge(get_resource_opts_defaults(), opts)``,
``__props__.__dict__["arn"] = None``, ``super().__init__('aws:iam/role:Role', ...)``); none of the kinds used
here adds aliases or secret outputs. The lookup functions call ``pulumi.runtime.invoke_output`` with the
invoke's token, the arguments camelCase and ``get_invoke_opts_defaults()`` (``eks/get_cluster.py``).
``AwsResource`` and ``eks_cluster`` do the same through ``pulumi.CustomResource`` and ``invoke_output``
directly: importing ``pulumi_aws.ec2`` alone takes ~0.8 s, and the package root (which ``_utilities`` needs
anyway) ~0.06 s. tests/test_aws_registration.py registers every kind both ways, and runs the AWS stacks both
ways, comparing what the engine receives.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import pulumi

from ..k8s import camel, plugin_version, with_plugin_version  # pulumi_aws names its inputs the same way

# pulumi_aws class (module.Class) -> (type token, the properties the components read, by their Python name: an
# output, or an input the engine may normalise). The typed classes give every property an Output; only these
# are kept as attributes (an input not given and an output are sent as None, i.e. left out, as the typed class
# does).
KINDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "autoscaling.Tag": ("aws:autoscaling/tag:Tag", ()),
    "cloudwatch.EventRule": ("aws:cloudwatch/eventRule:EventRule", ("arn", "name")),
    "cloudwatch.EventTarget": ("aws:cloudwatch/eventTarget:EventTarget", ()),
    "cloudwatch.LogGroup": ("aws:cloudwatch/logGroup:LogGroup", ("arn", "name")),
    "ec2.Eip": ("aws:ec2/eip:Eip", ()),
    "ec2.InternetGateway": ("aws:ec2/internetGateway:InternetGateway", ()),
    "ec2.LaunchTemplate": ("aws:ec2/launchTemplate:LaunchTemplate", ("arn", "latest_version")),
    "ec2.NatGateway": ("aws:ec2/natGateway:NatGateway", ()),
    "ec2.PlacementGroup": ("aws:ec2/placementGroup:PlacementGroup", ("arn", "name")),
    "ec2.Route": ("aws:ec2/route:Route", ()),
    "ec2.RouteTable": ("aws:ec2/routeTable:RouteTable", ()),
    "ec2.RouteTableAssociation": ("aws:ec2/routeTableAssociation:RouteTableAssociation", ()),
    "ec2.SecurityGroup": ("aws:ec2/securityGroup:SecurityGroup", ("arn",)),
    "ec2.Subnet": ("aws:ec2/subnet:Subnet", ()),
    "ec2.Tag": ("aws:ec2/tag:Tag", ()),
    "ec2.Vpc": ("aws:ec2/vpc:Vpc", ()),
    "ec2.VpcEndpoint": ("aws:ec2/vpcEndpoint:VpcEndpoint", ()),
    "ec2.VpcIpv4CidrBlockAssociation": ("aws:ec2/vpcIpv4CidrBlockAssociation:VpcIpv4CidrBlockAssociation", ()),
    "eks.AccessEntry": ("aws:eks/accessEntry:AccessEntry", ()),
    "eks.AccessPolicyAssociation": ("aws:eks/accessPolicyAssociation:AccessPolicyAssociation", ()),
    "ecr.PullThroughCacheRule": ("aws:ecr/pullThroughCacheRule:PullThroughCacheRule", ()),
    "eks.Addon": ("aws:eks/addon:Addon", ()),
    "eks.Cluster": (
        "aws:eks/cluster:Cluster",
        ("arn", "name", "endpoint", "certificate_authority", "identities", "vpc_config", "version"),
    ),
    "eks.NodeGroup": ("aws:eks/nodeGroup:NodeGroup", ("arn", "node_group_name", "resources")),
    "eks.PodIdentityAssociation": ("aws:eks/podIdentityAssociation:PodIdentityAssociation", ()),
    "iam.Policy": ("aws:iam/policy:Policy", ("arn", "name")),
    "iam.OpenIdConnectProvider": ("aws:iam/openIdConnectProvider:OpenIdConnectProvider", ("arn",)),
    "iam.Role": ("aws:iam/role:Role", ("arn", "name")),
    "iam.RolePolicy": ("aws:iam/rolePolicy:RolePolicy", ()),
    "iam.RolePolicyAttachment": ("aws:iam/rolePolicyAttachment:RolePolicyAttachment", ()),
    "kms.Alias": ("aws:kms/alias:Alias", ()),
    "kms.Key": ("aws:kms/key:Key", ("arn", "key_id")),
    "sqs.Queue": ("aws:sqs/queue:Queue", ("arn", "name", "url")),
    "sqs.QueuePolicy": ("aws:sqs/queuePolicy:QueuePolicy", ()),
    "vpc.SecurityGroupEgressRule": ("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule", ()),
    "vpc.SecurityGroupIngressRule": ("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", ()),
}
# Inputs whose value is a map of the user's own keys (tags, Kubernetes labels): sent as given, as the typed
# classes send a ``Mapping[str, str]`` input; every other object's keys are the input types' camelCase names.
USER_MAPS = frozenset({"tags", "labels"})
# Output properties of a number type: the typed class turns the engine's float into an int (its output's type,
# pulumi/runtime/rpc.py translate_output_properties).
INT_OUTPUTS = frozenset({"latest_version"})
# Object outputs: the typed class hands them over with snake_case keys (its output types' Python names).
OBJECT_OUTPUTS = frozenset({"certificate_authority", "identities", "vpc_config"})
GET_CLUSTER = "aws:eks/getCluster:getCluster"


def wire(value: Any) -> Any:
    """An argument's value with every object's keys camelCase (user maps' keys as given)."""
    if isinstance(value, Mapping):
        return {camel(k): v if k in USER_MAPS else wire(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [wire(v) for v in value]
    return value


def _utilities() -> Any:
    from pulumi_aws import _utilities

    return _utilities


@functools.cache
def _version() -> str:
    """The plugin version pulumi_aws' typed classes and lookups send (``_utilities.get_version()``), read without
    importing the package root (~5 MiB and ~0.03 s: its ``_inputs``, provider and lookup functions): see
    ``k8s.plugin_version``."""
    return plugin_version("pulumi_aws", _utilities)


def invoke_opts_defaults() -> pulumi.InvokeOptions:
    """``pulumi_aws._utilities.get_invoke_opts_defaults()``: the version, and no plugin download URL (pulumi_aws
    7.51.1 ``get_plugin_download_url`` returns None; tests/test_aws_registration.py compares both)."""
    return pulumi.InvokeOptions(version=_version(), plugin_download_url=None)


class AwsResource(pulumi.CustomResource):
    """A pulumi_aws resource registered as its typed class registers it (see the module docstring); ``args`` as
    the typed class takes them (snake_case). The properties in ``KINDS`` are attributes by their Python names."""

    def __init__(self, kind: str, resource_name: str, opts: pulumi.ResourceOptions | None = None, **args: Any):
        token, reads = KINDS[kind]
        props: dict[str, Any] = {camel(k): v if k in USER_MAPS else wire(v) for k, v in args.items()}
        for name in reads:
            props.setdefault(camel(name), None)
        opts = with_plugin_version(opts, _version())
        super().__init__(token, resource_name, props, opts)
        # The SDK made an Output per property, named as sent (camelCase); the typed class names it in Python.
        for name in reads:
            out = self.__dict__[camel(name)]
            if name in INT_OUTPUTS:
                out = out.apply(_int)
            elif name in OBJECT_OUTPUTS:
                out = out.apply(_snake_keys)
            self.__dict__[name] = out


def _snake_keys(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {_snake(k): _snake_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_snake_keys(v) for v in value]
    return value


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


def _int(value: Any) -> Any:
    return int(value) if isinstance(value, float) else value


def resource(kind: str, resource_name: str, opts: pulumi.ResourceOptions | None = None, **args: Any) -> Any:
    """The pulumi_aws resource ``kind`` (``"ec2.LaunchTemplate"``), registered through ``AwsResource``."""
    return AwsResource(kind, resource_name, opts, **args)


class _Result:
    """An invoke's result read as the typed result class reads it: attributes by Python name, nested objects
    and lists of them alike."""

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any]):
        self._values = values

    def __getattr__(self, name: str) -> Any:
        for k in (camel(name), name):
            if k in self._values:
                return _result(self._values[k])
        raise AttributeError(name)


def cluster_name(name: str, cluster: Any) -> Any:
    """The ``cluster_name`` input of an AWS object attached to the cluster: the plan's name for a cluster that
    exists before the program runs (found by name), else the created or referenced cluster's ``name`` Output,
    which carries the dependency on it (``components/render/aws/cluster_create.py`` ``ClusterView``)."""
    return cluster.name if isinstance(cluster, ClusterView) else name


class ClusterView:
    """A created or referenced cluster with the looked-up cluster's attributes (``endpoint``, ``arn``,
    ``certificate_authorities``, ``identities``, ``vpc_config``, ``version``) and its ``name``, each an Output."""

    def __init__(self, **attrs: Any):
        self.__dict__.update(attrs)


def field(value: Any, name: str) -> Any:
    """One field of an object output by its Python name, whether it arrives as the engine's dict (camelCase keys)
    or as the typed class's output object."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        return value.get(name, value.get(camel(name)))
    return getattr(value, name, None)


def result(value: Any) -> Any:
    """An object output (camelCase keys) read by Python attribute names, as the typed classes read it."""
    return _result(value)


def _result(value: Any) -> Any:
    if isinstance(value, Mapping):
        return _Result(value)
    if isinstance(value, list):
        return [_result(v) for v in value]
    return value


def eks_cluster(name: str, region: str | None, parent: pulumi.Resource | None = None) -> Any:
    """``aws.eks.get_cluster_output(name=..., region=...)``: Output of the cluster as looked up. ``parent``: whose
    ``providers`` choose the AWS provider (``GpuPlatform`` given one); without it, the default provider."""
    # pulumi_aws eks/get_cluster.py get_cluster_output sends name, region and tags; a None one is left out.
    args = {"name": name, "region": region}
    given = pulumi.InvokeOutputOptions(parent=parent) if parent is not None else None
    opts = pulumi.InvokeOutputOptions.merge(invoke_opts_defaults(), given)
    return pulumi.runtime.invoke_output(GET_CLUSTER, args, opts=opts).apply(_result)
