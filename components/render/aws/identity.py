"""How AWS controllers in the cluster (Karpenter, the Cluster Autoscaler) get credentials: one IAM role per
controller, trusted either by EKS Pod Identity (an association per ServiceAccount) or by IRSA (the cluster's
IAM OIDC provider), as ``gpu-platform:karpenter.identity`` chooses for the whole stack (the plan's
``AwsPlan.cluster.identity``). The trust documents are ``iam.pod_identity_trust`` / ``iam.irsa_trust``; this module
only wires them to resources.

Each function takes the cluster's plan (``EksClusterPlan``)."""

from __future__ import annotations

from typing import Any

import pulumi

from ...plan.aws.plan import EksClusterPlan
from . import iam, sdk


def uses_irsa(of: EksClusterPlan) -> bool:
    return of.identity == "irsa"


def trust_policy(
    of: EksClusterPlan,
    cluster: Any,
    partition: Any,
    account: Any,
    namespace: str,
    service_account: str,
    sid: str,
) -> pulumi.Output[str]:
    """The role's trust policy (JSON) for one ServiceAccount: Pod Identity (default) or IRSA. ``cluster`` is the
    EKS cluster lookup (its OIDC issuer, under IRSA)."""
    if uses_irsa(of):
        issuer = cluster.identities[0].oidcs[0].issuer
        return pulumi.Output.all(partition, account, issuer).apply(
            lambda a: iam.to_json(iam.irsa_trust(a[0], a[1], a[2], namespace, service_account, f"AllowIrsaFor{sid}"))
        )
    return pulumi.Output.from_input(
        iam.to_json(iam.pod_identity_trust(of.name, namespace, service_account, f"AllowEksPodIdentityFor{sid}"))
    )


def irsa_annotations(of: EksClusterPlan, role_arn: Any) -> dict[str, Any]:
    """ServiceAccount annotations: the role ARN under IRSA, nothing under Pod Identity."""
    return {"eks.amazonaws.com/role-arn": role_arn} if uses_irsa(of) else {}


def pod_identity_association(
    resource_name: str,
    of: EksClusterPlan,
    role_arn: Any,
    namespace: str,
    service_account: str,
    tags: dict[str, str],
    opts: pulumi.ResourceOptions,
    cluster: Any = None,
) -> pulumi.Resource | None:
    """The EKS Pod Identity association binding the role to the ServiceAccount (None under IRSA). ``cluster``: the
    cluster as ``EksAccess.cluster`` gives it (a created one's name waits for it: ``sdk.cluster_name``)."""
    c = of
    if uses_irsa(c):
        return None

    return sdk.resource(
        "eks.PodIdentityAssociation",
        resource_name,
        cluster_name=sdk.cluster_name(c.name, cluster),
        namespace=namespace,
        service_account=service_account,
        region=c.region,
        role_arn=role_arn,
        tags=tags,
        opts=opts,
    )


def cluster_account(cluster: Any) -> tuple[pulumi.Output[str], pulumi.Output[str]]:
    """(partition, account) of the EKS cluster's ARN (``arn:<partition>:eks:<region>:<account>:cluster/<name>``)."""
    parts = cluster.arn.apply(lambda a: a.split(":"))
    return parts.apply(lambda p: p[1]), parts.apply(lambda p: p[4])


def controller_role(
    prefix: str,
    *,
    name: str,
    description: str,
    policy_description: str,
    policy: Any,
    trust: Any,
    tags: dict[str, str],
    opts: pulumi.ResourceOptions,
) -> tuple[pulumi.Resource, pulumi.Resource]:
    """A controller's IAM role (``<prefix>-role``) trusted by ``trust``, with its one policy (``<prefix>-policy``,
    the role's name) attached (``<prefix>-policy-attachment``): (role, attachment), what the controller's
    ServiceAccount binding waits for. The Cluster Autoscaler's and the FSx CSI driver's."""
    role = sdk.resource(
        "iam.Role",
        f"{prefix}-role",
        name=name,
        description=description,
        assume_role_policy=trust,
        tags=tags,
        opts=opts,
    )
    attached = sdk.resource(
        "iam.Policy",
        f"{prefix}-policy",
        name=name,
        description=policy_description,
        policy=iam.to_json(policy),
        tags=tags,
        opts=opts,
    )
    attachment = sdk.resource(
        "iam.RolePolicyAttachment",
        f"{prefix}-policy-attachment",
        role=role.name,
        policy_arn=attached.arn,
        opts=opts,
    )
    return role, attachment
