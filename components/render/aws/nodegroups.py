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

Everything the resources say is the plan's (``AwsPlan.node_groups``, ``efa_networks``: made by
``components/plan/aws/plan.py`` from ``managed_pools``, ``efa`` and ``reservations``), combined here with what only
the cluster lookup knows (partition, subnets, the cluster security group, the VPC).
"""

from __future__ import annotations

import base64
from typing import Any

import pulumi

from ...data import versions
from ...plan.aws.plan import EfaNetworkPlan, LaunchTemplatePlan
from ...plan.plan import Plan, plain
from .. import addon
from . import iam, sdk


def partition_of(arn: str) -> str:
    """``aws`` in ``arn:aws:eks:us-east-1:123456789012:cluster/x`` (``aws-cn``, ``aws-us-gov`` elsewhere)."""
    parts = arn.split(":")
    return parts[1] if len(parts) > 1 and parts[1] else "aws"


def assume_role_policy(partition: str) -> str:
    """Trust policy of the node role: EC2 instances (the nodes) assume it."""
    return iam.to_json(iam.service_trust(f"ec2.{iam.dns_suffix(partition)}", sid="EksNodes"))


def launch_template_extras(
    pool: str, lt: LaunchTemplatePlan, network: EfaNetworkPlan | None, cluster: Any, region: str | None, child: Any
) -> dict[str, Any]:
    """The launch template's capacity reservation arguments and, for an EFA pool, its network interfaces (in the
    cluster security group and the pool's EFA group) and placement (the pool's cluster placement group)."""
    extra = {
        arg: plain(value)
        for arg, value in (
            ("capacity_reservation_specification", lt.capacity_reservation),
            ("instance_market_options", lt.instance_market_options),
        )
        if value is not None
    }
    if lt.efa_interfaces is None or network is None:
        return extra
    sg, pg = efa_network(pool, network, cluster, region, child)
    groups = [cluster.vpc_config.cluster_security_group_id, sg.id]
    interfaces = [{**plain(nic), "securityGroups": groups} for nic in lt.efa_interfaces]
    return {"network_interfaces": interfaces, "placement": {"groupName": pg.name}, **extra}


def efa_network(pool: str, network: EfaNetworkPlan, cluster: Any, region: str | None, child: Any) -> tuple[Any, Any]:
    """The pool's EFA security group (all traffic from and to itself, nothing else) and cluster placement group."""

    pool_tags = plain(network.tags)
    sg = sdk.resource(
        "ec2.SecurityGroup",
        f"{pool}-efa",
        name=network.security_group,
        description=f"EFA traffic between the nodes of gpu-platform pool {pool} (all traffic, itself only)",
        vpc_id=cluster.vpc_config.vpc_id,
        region=region,
        tags=pool_tags,
        opts=child,
    )
    sdk.resource(
        "vpc.SecurityGroupIngressRule",
        f"{pool}-efa-in",
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
        f"{pool}-efa-out",
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
        f"{pool}-efa",
        name=network.placement_group,
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

    def __init__(self, name: str, plan: Plan, cluster: Any, opts: pulumi.ResourceOptions | None = None):
        super().__init__(self.TYPE, name, None, opts)
        aws = plan.aws
        assert aws is not None, "EFA networks are aws stacks' objects"
        child = pulumi.ResourceOptions(parent=self)
        for pool in aws.karpenter_efa_pools:
            efa_network(pool, aws.efa_networks[pool], cluster, aws.cluster.region, child)
        self.register_outputs({"pools": list(aws.karpenter_efa_pools)})


class EksGpuNodeGroups(pulumi.ComponentResource):
    """The node role and, per managed pool, a launch template and an EKS managed node group."""

    TYPE = "gpu-platform:aws:EksGpuNodeGroups"

    def __init__(self, name: str, plan: Plan, cluster: Any, opts: pulumi.ResourceOptions | None = None):
        """``cluster`` is the EKS cluster lookup (``EksAccess.cluster``): its ARN gives the partition and
        its ``vpcConfig.subnetIds`` the node subnets when the stack names none."""
        super().__init__(self.TYPE, name, None, opts)
        aws = plan.aws
        assert aws is not None, "managed node groups are aws stacks' objects"

        child = pulumi.ResourceOptions(parent=self)
        cluster_name = aws.cluster.name
        region = aws.cluster.region
        tags = plain(aws.cluster.tags)
        partition = cluster.arn.apply(partition_of)

        self.node_role = sdk.resource(
            "iam.Role",
            "gpu-node-role",
            name=aws.node_role,
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
            for policy in aws.node_role_policies
        ]

        cluster_subnets = cluster.vpc_config.subnet_ids
        self.launch_templates: dict[str, Any] = {}
        self.node_groups: dict[str, Any] = {}
        for pool, ng in aws.node_groups.items():
            lt = ng.launch_template
            extra = launch_template_extras(pool, lt, aws.efa_networks.get(pool), cluster, region, child)
            template = sdk.resource(
                "ec2.LaunchTemplate",
                pool,
                name=lt.name,
                description=f"gpu-platform pool {pool} of EKS cluster {cluster_name}",
                block_device_mappings=plain(lt.block_device_mappings),
                metadata_options=plain(lt.metadata_options),
                tag_specifications=plain(lt.tag_specifications),
                user_data=base64.b64encode(lt.user_data.encode()).decode() if lt.user_data is not None else None,
                update_default_version=True,
                **extra,
                region=region,
                tags=plain(lt.tags),
                opts=child,
            )
            group = sdk.resource(
                "eks.NodeGroup",
                pool,
                cluster_name=sdk.cluster_name(cluster_name, cluster),
                node_group_name_prefix=ng.name_prefix,
                node_role_arn=self.node_role.arn,
                subnet_ids=list(ng.subnet_ids) if ng.subnet_ids is not None else cluster_subnets,
                ami_type=ng.ami_type,
                capacity_type=ng.capacity_type,
                instance_types=list(ng.instance_types),
                scaling_config=plain(ng.scaling),
                update_config=plain(ng.update_config),
                node_repair_config={"enabled": ng.auto_repair},
                launch_template={"id": template.id, "version": template.latest_version.apply(str)},
                # on a created cluster the group follows its control plane: raising cluster.kubernetesVersion
                # upgrades the control plane, then rolls the nodes (a found cluster's upgrades are its owner's)
                **({"version": cluster.version} if plan.eks_create is not None else {}),
                labels=plain(ng.labels),
                taints=plain(ng.taints),
                tags=plain(ng.tags),
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
                f"{pool}-asg-pool-tag",
                autoscaling_group_name=group.resources.apply(asg_name),
                tag=plain(ng.pool_tag),
                region=region,
                opts=pulumi.ResourceOptions(parent=self),
            )
            self.launch_templates[pool] = template
            self.node_groups[pool] = group

        self.register_outputs(
            {
                "nodeRoleArn": self.node_role.arn,
                "nodeGroups": {n: g.node_group_name for n, g in self.node_groups.items()},
            }
        )


class EfaDevicePlugin(addon.ChartAddon):
    """The aws-efa-k8s-device-plugin chart on the stack's EFA pools (``AwsPlan.efa_device_plugin``: its values)."""

    TYPE = "gpu-platform:aws:EfaDevicePlugin"
    CHART = versions.EFA_DEVICE_PLUGIN  # into kube-system: no namespace of its own

    def build(self) -> None:
        aws = self.plan.aws
        assert aws is not None and aws.efa_device_plugin is not None, "the plan has no EFA pool"
        self.install("aws-efa-k8s-device-plugin", plain(aws.efa_device_plugin), before=[])
        self.register_outputs({"pools": list(aws.efa_pools)})
