"""FSx for Lustre on EKS (``Plan.storage.fsx_driver``): the FSx CSI driver as the EKS add-on, its controller's IAM
role (Pod Identity or IRSA, as ``karpenter.identity`` chooses: ``identity.py``), the Lustre ports open within the
file systems' security groups, and the StorageClass parameters only the cluster knows (its first subnet, its
cluster security group) where the stack names none."""

from __future__ import annotations

from typing import Any

import pulumi

from ...plan import storage as storage_plan
from ...plan.plan import Plan, plain
from . import identity, sdk


def fsx(parent: pulumi.Resource, plan: Plan, cluster: Any) -> tuple[dict[str, Any], list[pulumi.Resource]]:
    """The add-on and its role; returns per fsx-lustre file system its StorageClass's subnetId and
    securityGroupIds, and the add-on (what the classes wait for)."""
    aws, storage = plan.aws, plan.storage
    assert aws is not None and storage is not None
    driver = storage.fsx_driver
    if driver is None:
        return {}, []
    child = pulumi.ResourceOptions(parent=parent)
    tags = plain(aws.cluster.tags)
    partition, account = identity.cluster_account(cluster)
    role, attachment = identity.controller_role(
        "fsx-csi-driver",
        name=driver.role_name,
        description=f"FSx for Lustre CSI controller of EKS cluster {aws.cluster.name} (gpu-platform)",
        policy_description=f"FSx CSI driver: create and delete the FSx for Lustre file systems of {aws.cluster.name}",
        policy=plain(driver.policy),
        trust=identity.trust_policy(
            aws.cluster, cluster, partition, account, driver.namespace, driver.service_account, sid="FsxCsiDriver"
        ),
        tags=tags,
        opts=child,
    )
    # The add-on binds its controller's ServiceAccount itself: a Pod Identity association of the add-on, or
    # (IRSA) the role ARN it annotates the ServiceAccount with.
    binding: dict[str, Any] = (
        {"service_account_role_arn": role.arn}
        if identity.uses_irsa(aws.cluster)
        else {"pod_identity_associations": [{"role_arn": role.arn, "service_account": driver.service_account}]}
    )
    addon = sdk.resource(
        "eks.Addon",
        driver.addon,
        cluster_name=aws.cluster.name,
        addon_name=driver.addon,
        **({"addon_version": driver.version} if driver.version else {}),
        resolve_conflicts_on_create="OVERWRITE",
        resolve_conflicts_on_update="PRESERVE",
        region=aws.cluster.region,
        tags=tags,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[attachment]),
        **binding,
    )
    vpc = cluster.vpc_config
    default_groups = vpc.apply(lambda v: [v.cluster_security_group_id])
    opened: set[str] = set()
    out: dict[str, Any] = {}
    for fs in storage.file_systems:
        if fs.kind != "fsx-lustre":
            continue
        groups = list(fs.fsx_security_group_ids) or None
        subnet = fs.fsx_subnet_id or vpc.apply(lambda v: sorted(v.subnet_ids)[0])
        for group in groups or ["cluster"]:
            if group in opened:
                continue
            opened.add(group)
            sg = group if groups else vpc.apply(lambda v: v.cluster_security_group_id)
            _lustre_ports(parent, group, sg, aws.cluster.region, tags)
        out[fs.name] = pulumi.Output.all(subnet, groups or default_groups).apply(
            lambda a: {"subnetId": a[0], "securityGroupIds": ",".join(a[1])}
        )
    return out, [addon]


def _lustre_ports(parent: pulumi.Resource, name: str, group: Any, region: str | None, tags: dict[str, str]) -> None:
    """Lustre's ports open within the group: the file servers and the nodes (clients) share it."""
    for low, high in storage_plan.LUSTRE_PORTS:
        ports = str(low) if low == high else f"{low}-{high}"
        sdk.resource(
            "vpc.SecurityGroupIngressRule",
            f"lustre-{name}-{ports}",
            security_group_id=group,
            referenced_security_group_id=group,
            ip_protocol="tcp",
            from_port=low,
            to_port=high,
            description=f"FSx for Lustre (gpu-platform): TCP {ports} within the group",
            region=region,
            tags=tags,
            opts=pulumi.ResourceOptions(parent=parent),
        )
