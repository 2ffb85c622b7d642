"""ECR pull-through cache (``Plan.images`` with ``mirrorKind: ecr``): one rule per upstream the stack's images come
from, its repository prefix the upstream's host (``components/plan/mirror.py``), its credential a Secrets Manager
secret ARN the stack references (the secret itself never passes through the program); and on the node roles the
platform owns, the two actions a node's first pull through a rule needs (``images.node_policy``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi

from ...plan.plan import Plan, plain
from . import iam, sdk


def pull_through(parent: pulumi.Resource, plan: Plan, node_roles: Sequence[pulumi.Resource]) -> list[str]:
    """The rules and the node roles' inline policy; returns the rules' prefixes."""
    images, aws = plan.images, plan.aws
    assert images is not None and aws is not None
    child = pulumi.ResourceOptions(parent=parent)
    prefixes = []
    for u in images.upstreams:
        if u.how != "pull-through" or u.ecr_upstream is None:
            continue
        args: dict[str, Any] = {"ecr_repository_prefix": u.host, "upstream_registry_url": u.ecr_upstream}
        if u.credential is not None:
            args["credential_arn"] = u.credential
        sdk.resource(
            "ecr.PullThroughCacheRule", f"pull-through-{u.host}", region=aws.cluster.region, opts=child, **args
        )
        prefixes.append(u.host)
    if images.node_policy is not None:
        for role in _roles(plan):
            sdk.resource(
                "iam.RolePolicy",
                f"{role}-pull-through",
                name="gpu-platform-pull-through-cache",
                role=role,
                policy=iam.to_json(plain(images.node_policy)),
                opts=pulumi.ResourceOptions(parent=parent, depends_on=list(node_roles)),
            )
    return prefixes


def _roles(plan: Plan) -> list[str]:
    """The node roles the platform owns: its managed node groups', Karpenter's nodes', a created cluster's system
    nodes'."""
    roles = []
    if plan.aws is not None and plan.aws.node_groups:
        roles.append(plan.aws.node_role)
    if plan.karpenter is not None:
        roles.append(plan.karpenter.node_role)
    if plan.eks_create is not None:
        roles.append(plan.eks_create.system_nodes.role)
    return roles
