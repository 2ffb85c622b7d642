"""EKS managed node groups for the stack's ``provisioner: managed`` pools.

What gets registered (children of one ``EksGpuNodeGroups`` component):

* ``gpu-node-role``: one IAM role for every managed pool of the stack, trusted by EC2, with the four
  AWS-managed worker policies (``gpu-node-<Policy>`` attachments): kubelet registration, the VPC CNI,
  ECR pulls (pull-only) and SSM Session Manager instead of SSH. EKS maps a managed node group's role
  into the cluster itself (an ``EC2_LINUX`` access entry or the aws-auth ConfigMap), so no access entry
  is created here.
* Per pool, named by the pool: an ``aws.ec2.LaunchTemplate`` (encrypted gp3 disks, IMDSv2 only,
  instance and volume tags, Bottlerocket device-plugin settings as user data) and an
  ``aws.eks.NodeGroup`` using it, with the pool's GPU taint, labels, AMI type, capacity type, scaling
  and the Cluster Autoscaler tags. The autoscaler owns the desired size after creation, so Pulumi
  ignores it.

Everything the resources say is computed in ``managed_pools`` (pure data, tested directly).
"""

from __future__ import annotations

from typing import Any

import pulumi

from components.data import versions
from components.plan.aws import efa, managed_pools as plan, reservations as aws_reservations
from components.render import addon
from components.render.aws import iam, sdk
from components.spec.model import StackSpec


def partition_of(arn: str) -> str:
    """``aws`` in ``arn:aws:eks:us-east-1:123456789012:cluster/x`` (``aws-cn``, ``aws-us-gov`` elsewhere)."""
    parts = arn.split(":")
    return parts[1] if len(parts) > 1 and parts[1] else "aws"


def assume_role_policy(partition: str) -> str:
    """Trust policy of the node role: EC2 instances (the nodes) assume it."""
    return iam.to_json(iam.service_trust(f"ec2.{iam.dns_suffix(partition)}", sid="EksNodes"))


def efa_launch_template_args(
    spec: StackSpec, pool: Any, cluster: Any, region: str | None, tags: dict[str, str], child: pulumi.ResourceOptions
) -> dict[str, Any]:
    """An EFA pool's security group (all traffic to and from itself), cluster placement group, and the launch
    template's network interfaces and placement ({} for other pools). See ``components/plan/aws/efa.py``."""
    if not efa.efa_enabled(spec, pool):
        return {}
    sg, pg = efa_network(spec, pool, cluster, region, tags, child)
    groups = [cluster.vpc_config.cluster_security_group_id, sg.id]
    return {"network_interfaces": efa.network_interfaces(pool, groups), "placement": {"group_name": pg.name}}


def efa_network(
    spec: StackSpec, pool: Any, cluster: Any, region: str | None, tags: dict[str, str], child: pulumi.ResourceOptions
) -> tuple[Any, Any]:
    """The pool's EFA security group (all traffic from and to itself, nothing else) and cluster placement group."""

    pool_tags = {**tags, plan.POOL_TAG: pool.name}
    sg = sdk.resource(
        "ec2.SecurityGroup",
        f"{pool.name}-efa",
        name=efa.security_group_name(spec, pool),
        description=f"EFA traffic between the nodes of gpu-platform pool {pool.name} (all traffic, itself only)",
        vpc_id=cluster.vpc_config.vpc_id,
        region=region,
        tags=pool_tags,
        opts=child,
    )
    sdk.resource(
        "vpc.SecurityGroupIngressRule",
        f"{pool.name}-efa-in",
        security_group_id=sg.id,
        referenced_security_group_id=sg.id,
        ip_protocol="-1",
        description="EFA: all traffic from the pool's own nodes",
        region=region,
        tags=pool_tags,
        opts=child,
    )
    sdk.resource(
        "vpc.SecurityGroupEgressRule",
        f"{pool.name}-efa-out",
        security_group_id=sg.id,
        referenced_security_group_id=sg.id,
        ip_protocol="-1",
        description="EFA: all traffic to the pool's own nodes",
        region=region,
        tags=pool_tags,
        opts=child,
    )
    pg = sdk.resource(
        "ec2.PlacementGroup",
        f"{pool.name}-efa",
        name=efa.placement_group_name(spec, pool),
        strategy="cluster",
        region=region,
        tags=pool_tags,
        opts=child,
    )
    return sg, pg


def asg_name(resources: Any) -> str:
    """The Auto Scaling group of an EKS managed node group (its ``resources[0].autoscalingGroups[0].name``): raw
    maps from our registration, typed objects from pulumi_aws' class (tests compare both)."""
    first = resources[0]
    if isinstance(first, dict):  # the engine's camelCase map; the typed class translates keys to snake_case
        groups = first.get("autoscalingGroups") or first["autoscaling_groups"]
    else:
        groups = first.autoscaling_groups
    group = groups[0]
    return group["name"] if isinstance(group, dict) else group.name


class KarpenterEfaNetworks(pulumi.ComponentResource):
    """EFA security group and cluster placement group of each EFA Karpenter pool; the pool's own EC2NodeClass
    selects both by name (``efa.karpenter_class_additions``)."""

    TYPE = "gpu-platform:aws:KarpenterEfaNetworks"

    def __init__(self, name: str, spec: StackSpec, cluster: Any, opts: pulumi.ResourceOptions | None = None):
        super().__init__(self.TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        pools = sorted((p for p in efa.efa_pools(spec) if p.provisioner == "karpenter"), key=lambda p: p.name)
        for pool in pools:
            efa_network(spec, pool, cluster, spec.cluster.region, plan.base_tags(spec), child)
        self.register_outputs({"pools": [p.name for p in pools]})


class EksGpuNodeGroups(pulumi.ComponentResource):
    """The node role and, per managed pool, a launch template and an EKS managed node group."""

    TYPE = "gpu-platform:aws:EksGpuNodeGroups"

    def __init__(self, name: str, spec: StackSpec, cluster: Any, opts: pulumi.ResourceOptions | None = None):
        """``cluster`` is the EKS cluster lookup (``EksAccess.cluster``): its ARN gives the partition and
        its ``vpcConfig.subnetIds`` the node subnets when the stack names none."""
        super().__init__(self.TYPE, name, None, opts)

        child = pulumi.ResourceOptions(parent=self)
        cluster_name = spec.cluster.name or ""
        region = spec.cluster.region
        tags = plan.base_tags(spec)
        partition = cluster.arn.apply(partition_of)

        self.node_role = sdk.resource(
            "iam.Role",
            "gpu-node-role",
            name=plan.node_role_name(spec),
            description=f"GPU nodes of the EKS managed node groups of cluster {cluster_name} (gpu-platform)",
            assume_role_policy=partition.apply(assume_role_policy),
            tags=tags,
            opts=child,
        )
        attachments = [
            sdk.resource(
                "iam.RolePolicyAttachment",
                f"gpu-node-{policy}",
                role=self.node_role.name,
                policy_arn=partition.apply(lambda p, n=policy: iam.managed_policy_arn(n, p)),
                opts=child,
            )
            for policy in iam.WORKER_NODE_POLICIES
        ]

        cluster_subnets = cluster.vpc_config.subnet_ids
        self.launch_templates: dict[str, Any] = {}
        self.node_groups: dict[str, Any] = {}
        for pool in sorted(plan.managed_pools(spec), key=lambda p: p.name):
            extra = {
                **efa_launch_template_args(spec, pool, cluster, region, tags, child),
                **aws_reservations.launch_template_args(pool),
            }
            lt = sdk.resource(
                "ec2.LaunchTemplate",
                pool.name,
                name=plan.launch_template_name(spec, pool),
                description=f"gpu-platform pool {pool.name} of EKS cluster {cluster_name}",
                block_device_mappings=plan.block_device_mappings(spec, pool),
                metadata_options=plan.metadata_options(pool),
                tag_specifications=plan.tag_specifications(spec, pool),
                user_data=plan.user_data_base64(spec, pool),
                update_default_version=True,
                **extra,
                region=region,
                tags={**tags, plan.POOL_TAG: pool.name},
                opts=child,
            )
            subnets = plan.subnet_ids(spec, pool)
            ng = sdk.resource(
                "eks.NodeGroup",
                pool.name,
                cluster_name=cluster_name,
                node_group_name_prefix=plan.node_group_name_prefix(pool),
                node_role_arn=self.node_role.arn,
                subnet_ids=subnets if subnets is not None else cluster_subnets,
                ami_type=plan.ami_type(spec, pool),
                capacity_type=aws_reservations.node_group_capacity_type(pool, plan.CAPACITY_TYPES[pool.capacity]),
                instance_types=list(pool.instance_types),
                scaling_config=plan.scaling(pool),
                update_config=plan.update_config(pool),
                node_repair_config={"enabled": pool.eks.auto_repair},
                launch_template={"id": lt.id, "version": lt.latest_version.apply(str)},
                labels=plan.labels(spec, pool),
                taints=plan.eks_taints(pool),
                tags=plan.node_group_tags(spec, pool),
                region=region,
                opts=pulumi.ResourceOptions(
                    parent=self,
                    # The role needs its policies while nodes join and until the last node is gone.
                    depends_on=attachments,
                    # The Cluster Autoscaler sizes the group between min and max.
                    ignore_changes=["scalingConfig.desiredSize"],
                ),
            )
            # The pool tag on the group's Auto Scaling group (node group tags do not reach it): the Cluster
            # Autoscaler discovers, and may scale, only groups that carry it (cluster_autoscaler.discovery_tags).
            sdk.resource(
                "autoscaling.Tag",
                f"{pool.name}-asg-pool-tag",
                autoscaling_group_name=ng.resources.apply(asg_name),
                tag={"key": plan.POOL_TAG, "value": pool.name, "propagate_at_launch": False},
                region=region,
                opts=pulumi.ResourceOptions(parent=self),
            )
            self.launch_templates[pool.name] = lt
            self.node_groups[pool.name] = ng

        self.register_outputs(
            {
                "nodeRoleArn": self.node_role.arn,
                "nodeGroups": {n: ng.node_group_name for n, ng in self.node_groups.items()},
            }
        )


class EfaDevicePlugin(addon.ChartAddon):
    """The aws-efa-k8s-device-plugin chart on the stack's EFA pools (``efa.device_plugin_values``)."""

    TYPE = "gpu-platform:aws:EfaDevicePlugin"
    CHART = versions.EFA_DEVICE_PLUGIN  # into kube-system: no namespace of its own

    def build(self, spec: StackSpec) -> None:
        self.install("aws-efa-k8s-device-plugin", efa.device_plugin_values(spec), before=[])
        self.register_outputs({"pools": [p.name for p in efa.efa_pools(spec)]})
