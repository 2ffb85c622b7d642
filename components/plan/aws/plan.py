"""What an aws stack decides about the cloud side of its cluster (issue 28): ``Plan.aws``, None on other clouds.

* ``cluster``: the EKS cluster gpu-platform looks up (name, region), the tags of every AWS object it creates, how
  controllers get AWS credentials (``karpenter.identity``, for every controller) and the kubeconfig's token
  command (``aws eks get-token`` with the stack's region, role and profile);
* ``node_groups``: per ``provisioner: managed`` pool, its EKS managed node group and launch template
  (``managed_pools``, ``reservations``, ``efa``), and the one node role they share;
* the EFA pools' networks (security group and cluster placement group) and the EFA device plugin's values;
* the Cluster Autoscaler (``cluster_autoscaler``: role, policy, release values) and the node health add-on.

What only the cloud knows (ARNs, the cluster's subnets, security group ids, the looked-up Kubernetes version) is
not here: the renderers in ``components/render/aws/`` combine these decisions with those outputs. A resource's
arguments are held as the engine receives them: ``managed_pools`` makes them with the SDK's snake_case keys, here
they are camelCase (``_wire``, as ``components/render/aws/sdk.py`` sends them; tags and labels as given).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ...data import versions
from ...spec.model import NodePool, StackSpec
from .. import derive
from ..frozen import camel as _camel, freeze as _freeze
from . import (
    cluster_autoscaler as ca,
    efa,
    iam,
    local_disks,
    managed_pools as mp,
    reservations as aws_reservations,
)
from .node_health import NODE_MONITORING_AGENT, configuration as node_health_configuration

# Arguments whose value is a map of the user's own keys: their keys stay as given (render/aws/sdk.py USER_MAPS).
_USER_MAPS = frozenset({"tags", "labels"})


def _wire(value: Any) -> Any:
    """SDK arguments (snake_case keys, ``managed_pools``) with camelCase keys, the engine's names (and sdk.wire's)."""
    if isinstance(value, Mapping):
        return {_camel(k): v if k in _USER_MAPS else _wire(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_wire(v) for v in value]
    return value


@dataclass(frozen=True)
class EksClusterPlan:
    """The existing EKS cluster and how gpu-platform reaches it."""

    name: str
    region: str | None  # cluster.region, else aws:region: the lookup's, the token's and every regional object's
    identity: str  # how controllers get AWS credentials: pod-identity | irsa
    tags: Mapping[str, str]  # of every AWS object gpu-platform creates
    token_exec: Mapping[str, Any]  # the kubeconfig user's exec plugin (apiVersion, command, args, env)


@dataclass(frozen=True)
class LaunchTemplatePlan:
    """The EC2 launch template of a managed node group: disks, metadata options, tags and user data."""

    name: str
    block_device_mappings: tuple[Mapping[str, Any], ...]
    metadata_options: Mapping[str, Any]
    tag_specifications: tuple[Mapping[str, Any], ...]
    user_data: str | None  # plain text (the template gets it base64-encoded); None: none
    capacity_reservation: Mapping[str, Any] | None  # its capacityReservationSpecification (None: no reservation)
    instance_market_options: Mapping[str, Any] | None  # a Capacity Block's market type (None: other capacity)
    efa_interfaces: tuple[Mapping[str, Any], ...] | None  # EFA pools: the interfaces, less their security groups
    tags: Mapping[str, str]
    local_disks: str | None = None  # the nodes' local NVMe striped as ephemeral storage (local_disks.summary), or None


@dataclass(frozen=True)
class NodeGroupPlan:
    """A managed pool's EKS managed node group and the launch template it uses."""

    pool: str
    name_prefix: str  # EKS appends a unique suffix
    ami_type: str
    capacity_type: str
    instance_types: tuple[str, ...]
    scaling: Mapping[str, int]  # the Cluster Autoscaler owns the desired size after creation
    update_config: Mapping[str, Any]
    auto_repair: bool
    subnet_ids: tuple[str, ...] | None  # None: the cluster's own subnets, as looked up
    labels: Mapping[str, str]
    taints: tuple[Mapping[str, str], ...]
    tags: Mapping[str, str]  # with the Cluster Autoscaler's discovery and scale-from-zero tags
    pool_tag: Mapping[str, Any]  # the tag its Auto Scaling group gets (the autoscaler discovers it by it)
    launch_template: LaunchTemplatePlan


@dataclass(frozen=True)
class EfaNetworkPlan:
    """An EFA pool's security group (all traffic from and to itself) and cluster placement group."""

    security_group: str
    placement_group: str
    tags: Mapping[str, str]


@dataclass(frozen=True)
class ClusterAutoscalerPlan:
    """The Cluster Autoscaler release: its chart, IAM role and policy, service account and values."""

    chart: versions.Chart  # the release's chart, as the stack takes it (its version and source overrides applied)
    role_name: str  # the controller role's, and its one policy's
    namespace: str
    service_account: str
    policy: Mapping[str, Any]  # the policy document
    image_tag: str | None  # None: the looked-up cluster's Kubernetes version picks it
    values: Mapping[str, Any]  # the release's values but image.tag and IRSA's role annotation


@dataclass(frozen=True)
class AwsPlan:
    """An aws stack's EKS objects: the cluster, managed node groups and their role, EFA, Cluster Autoscaler."""

    cluster: EksClusterPlan
    node_role: str  # the one role of every managed node group
    node_role_policies: tuple[str, ...]  # the AWS-managed policies attached to it
    node_groups: Mapping[str, NodeGroupPlan]  # managed pool -> its node group, by pool name
    efa_pools: tuple[str, ...]  # the pools with EFA, in the stack's order
    efa_networks: Mapping[str, EfaNetworkPlan]  # EFA pool -> its network
    karpenter_efa_pools: tuple[str, ...]  # the EFA pools Karpenter provisions (their networks stand alone)
    efa_device_plugin: Mapping[str, Any] | None  # the aws-efa-k8s-device-plugin chart's values; None: no EFA pool
    cluster_autoscaler: ClusterAutoscalerPlan | None  # None: off
    node_health_addon: str | None  # the EKS add-on reporting GPU node health; None: off
    # its configurationValues (node_health.py: the DCGM DaemonSet's tolerations); None: off
    node_health_configuration: Mapping[str, Any] | None
    # Bottlerocket pool -> its host device plugin's settings.kubelet-device-plugins.nvidia (the user data of its
    # node group or EC2NodeClass must carry them: explain checks the device IDs and the sharing settings)
    bottlerocket_device_plugins: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: MappingProxyType({}))


# ---------------------------------------------------------------------------------------------- builders


def token_exec(spec: StackSpec) -> dict[str, Any]:
    """The kubeconfig user's exec credential plugin: ``aws eks get-token`` for the cluster in its region, with
    ``--role-arn`` when the stack names a role and the CLI profile as AWS_PROFILE when it names one."""
    c = spec.cluster
    args = ["eks", "get-token", "--cluster-name", c.name or "", "--region", c.region or "", "--output", "json"]
    if c.role_arn:
        args += ["--role-arn", c.role_arn]
    out: dict[str, Any] = {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "aws", "args": args}
    if c.profile:
        out["env"] = [{"name": "AWS_PROFILE", "value": c.profile}]
    return out


def cluster_plan(spec: StackSpec) -> EksClusterPlan:
    return EksClusterPlan(
        name=spec.cluster.name or "",
        region=spec.cluster.region,
        identity=spec.karpenter.identity,
        tags=_freeze(mp.base_tags(spec)),
        token_exec=_freeze(token_exec(spec)),
    )


def launch_template_plan(spec: StackSpec, pool: NodePool) -> LaunchTemplatePlan:
    interfaces = efa.network_interfaces(pool, []) if efa.efa_enabled(spec, pool) else None
    reservation = aws_reservations.launch_template_args(pool)
    return LaunchTemplatePlan(
        name=mp.launch_template_name(spec, pool),
        block_device_mappings=_freeze(_wire(mp.block_device_mappings(spec, pool))),
        metadata_options=_freeze(_wire(mp.metadata_options(pool))),
        tag_specifications=_freeze(_wire(mp.tag_specifications(spec, pool))),
        user_data=mp.user_data(spec, pool),
        capacity_reservation=_freeze(_wire(reservation.get("capacity_reservation_specification"))),
        instance_market_options=_freeze(_wire(reservation.get("instance_market_options"))),
        efa_interfaces=_freeze(_wire([{k: v for k, v in nic.items() if k != "security_groups"} for nic in interfaces]))
        if interfaces is not None
        else None,
        tags=_freeze({**mp.base_tags(spec), mp.POOL_TAG: pool.name}),
        local_disks=local_disks.summary(spec, pool),
    )


def node_group_plan(spec: StackSpec, pool: NodePool) -> NodeGroupPlan:
    subnets = mp.subnet_ids(spec, pool)
    return NodeGroupPlan(
        pool=pool.name,
        name_prefix=mp.node_group_name_prefix(pool),
        ami_type=mp.ami_type(spec, pool),
        capacity_type=aws_reservations.node_group_capacity_type(pool, mp.CAPACITY_TYPES[pool.capacity]),
        instance_types=tuple(pool.instance_types),
        scaling=_freeze(_wire(mp.scaling(pool))),
        update_config=_freeze(_wire(mp.update_config(pool))),
        auto_repair=pool.eks.auto_repair,
        subnet_ids=tuple(subnets) if subnets is not None else None,
        labels=_freeze(mp.labels(spec, pool)),
        taints=_freeze(mp.eks_taints(pool)),
        tags=_freeze(mp.node_group_tags(spec, pool)),
        pool_tag=_freeze({"key": mp.POOL_TAG, "value": pool.name, "propagateAtLaunch": False}),
        launch_template=launch_template_plan(spec, pool),
    )


def efa_network_plan(spec: StackSpec, pool: NodePool) -> EfaNetworkPlan:
    return EfaNetworkPlan(
        security_group=efa.security_group_name(spec, pool),
        placement_group=efa.placement_group_name(spec, pool),
        tags=_freeze({**mp.base_tags(spec), mp.POOL_TAG: pool.name}),
    )


def cluster_autoscaler_plan(spec: StackSpec) -> ClusterAutoscalerPlan | None:
    if not spec.cluster_autoscaler_enabled:
        return None
    name = spec.cluster.name or ""
    return ClusterAutoscalerPlan(
        chart=versions.for_spec(ca.CHART, spec),
        role_name=ca.role_name(name),
        namespace=ca.NAMESPACE,
        service_account=ca.SERVICE_ACCOUNT,
        policy=_freeze(ca.policy_document(name)),
        image_tag=ca.image_tag(spec),
        values=_freeze(ca.helm_values(spec)),
    )


@derive.per_spec
def build(spec: StackSpec) -> AwsPlan | None:
    """The aws part of the plan (``Plan.aws``); None when the stack's cloud is not aws."""
    if spec.cloud != "aws":
        return None
    efa_pools = efa.efa_pools(spec)
    by_name = sorted(efa_pools, key=lambda p: p.name)
    return AwsPlan(
        cluster=cluster_plan(spec),
        node_role=mp.node_role_name(spec),
        node_role_policies=iam.WORKER_NODE_POLICIES,
        node_groups=_freeze({p.name: node_group_plan(spec, p) for p in mp.managed_pools(spec)}),
        efa_pools=tuple(p.name for p in efa_pools),
        efa_networks=_freeze({p.name: efa_network_plan(spec, p) for p in efa_pools}),
        karpenter_efa_pools=tuple(p.name for p in by_name if p.provisioner == "karpenter"),
        efa_device_plugin=_freeze(efa.device_plugin_values(spec)) if efa_pools else None,
        cluster_autoscaler=cluster_autoscaler_plan(spec),
        node_health_addon=NODE_MONITORING_AGENT if spec.node_monitoring_agent_enabled else None,
        node_health_configuration=_freeze(node_health_configuration(spec))
        if spec.node_monitoring_agent_enabled
        else None,
        bottlerocket_device_plugins=_freeze(bottlerocket_device_plugins(spec)),
    )


def bottlerocket_device_plugins(spec: StackSpec) -> dict[str, dict[str, Any]]:
    """Per pool served by Bottlerocket's host device plugin, its settings (``sharing``)."""
    from .. import sharing

    settings = {p.name: sharing.bottlerocket_device_plugin_settings(spec, p.name) for p in spec.node_pools}
    return {name: s for name, s in settings.items() if s}


# ------------------------------------------------------------------------------------------------ text


def _node_group_line(ng: NodeGroupPlan) -> str:
    s, u, lt = ng.scaling, ng.update_config, ng.launch_template
    subnets = ", ".join(ng.subnet_ids) if ng.subnet_ids else "the cluster's"
    extras = [f"EFA ({len(lt.efa_interfaces)} interfaces)"] if lt.efa_interfaces else []
    extras += ["capacity reservation"] if lt.capacity_reservation else []
    extras += ["Capacity Block"] if lt.instance_market_options else []
    extras += [lt.local_disks] if lt.local_disks else []
    if lt.user_data and lt.user_data.startswith("MIME-Version"):
        extras += ["nodeadm NodeConfig"] if "Content-Type: application/node.eks.aws" in lt.user_data else []
        extras += ["containerd mirror of the ECR cache"] if "Content-Type: text/x-shellscript" in lt.user_data else []
    elif lt.user_data:
        extras += ["Bottlerocket settings"]
    return (
        f"  node group {ng.name_prefix}*: {ng.ami_type} {ng.capacity_type} {', '.join(ng.instance_types)}, "
        f"{s['minSize']}..{s['maxSize']} nodes (desired {s['desiredSize']}), update {u['maxUnavailable']} at a "
        f"time ({u['updateStrategy']}), auto repair {'on' if ng.auto_repair else 'off'}, subnets {subnets}; "
        f"launch template {lt.name}" + "".join(f", {x}" for x in extras)
    )


def text_lines(p: AwsPlan) -> list[str]:
    """``gpu-platform plan``'s AWS section: the cluster, then a line per node group, EFA network and controller."""
    c = p.cluster
    env = "".join(f"{e['name']}={e['value']} " for e in c.token_exec.get("env", ()))
    lines = [
        f"  EKS cluster {c.name} in {c.region or '(aws:region)'}; controllers' AWS credentials by {c.identity}",
        f"  kubeconfig token: {env}{c.token_exec['command']} {' '.join(c.token_exec['args'])}",
    ]
    if p.node_groups:
        lines.append(f"  node role {p.node_role} ({', '.join(p.node_role_policies)})")
    lines += [_node_group_line(ng) for ng in p.node_groups.values()]
    for pool, net in p.efa_networks.items():
        lines.append(
            f"  EFA network of {pool}: security group {net.security_group}, placement group {net.placement_group}"
        )
    if p.efa_device_plugin is not None:
        lines.append(f"  EFA device plugin on {', '.join(p.efa_pools)}")
    a = p.cluster_autoscaler
    if a is not None:
        tag = a.image_tag or "of the cluster's version"
        tags = ", ".join(a.values["autoDiscovery"]["tags"])
        lines.append(f"  Cluster Autoscaler: role {a.role_name}, image tag {tag}, discovers groups tagged {tags}")
    health = p.node_health_addon or "off"
    if p.node_health_configuration is not None:
        tolerated = [t["key"] for t in p.node_health_configuration["dcgmAgent"]["tolerations"]]
        health += f" (its DCGM host engine on the GPU nodes, tolerating {', '.join(dict.fromkeys(tolerated))})"
    lines.append(f"  node health: {health}")
    for pool, plugin in p.bottlerocket_device_plugins.items():
        shared = plugin.get("device-sharing-strategy")
        lines.append(
            f"  Bottlerocket device plugin of {pool}: device IDs by {plugin.get('device-id-strategy', 'index')}"
            + (f", {shared} x{plugin[shared]['replicas']}" if shared else ", whole GPUs")
        )
    return lines
