"""Who administers a cluster gpu-platform creates (issue 40.5a): pure functions over ARNs, no cloud call.

The created cluster has access entries only (``authenticationMode: API``) and gives its creator nothing
(``bootstrapClusterCreatorAdminPermissions: false``; EKS user guide "Grant IAM users access to Kubernetes with EKS
access entries": with it off, the creating principal gets no access entry). The Kubernetes half of the same
``pulumi up`` calls the API with the kubeconfig's token (``aws eks get-token``), whose identity is
``cluster.roleArn`` when the stack names one, else whoever runs pulumi. If that identity is not among
``adminRoleArns`` every Kubernetes call fails Unauthorized, after the VPC, the cluster and its nodes (about twenty
minutes) exist. A rule checks ``cluster.roleArn`` before deploy; ``components/render/aws/deployer.py`` checks the
deploying identity (STS GetCallerIdentity) when the program starts, before any resource is registered.

An assumed role's ARN (``arn:aws:sts::<account>:assumed-role/<name>/<session>``, IAM user guide "IAM identifiers",
"Unique identifiers" / role session ARNs) carries the role's name but not its path, so a role matches an admin
role of the same partition, account and name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ...spec.model import Problem, key

_ROLE = re.compile(r"^arn:(aws[a-z-]*):iam::(\d{12}):role/(?:[^/]+/)*([^/]+)$")
_ASSUMED = re.compile(r"^arn:(aws[a-z-]*):sts::(\d{12}):assumed-role/([^/]+)/[^/]+$")
_USER = re.compile(r"^arn:(aws[a-z-]*):iam::(\d{12}):(user/.+|root)$")


def role_of(arn: str) -> tuple[str, str, str] | None:
    """(partition, account, role name) of a role's or an assumed role's ARN; None for anything else."""
    m = _ROLE.match(arn) or _ASSUMED.match(arn)
    return (m.group(1), m.group(2), m.group(3)) if m else None


def is_admin(arn: str, admins: Iterable[str]) -> bool:
    role = role_of(arn)
    return role is not None and role in {role_of(a) for a in admins}


def deployer_message(caller: str, admins: Iterable[str]) -> str | None:
    """Why the identity ``caller`` (STS GetCallerIdentity's ARN) could not administer the created cluster, with
    the fix; None when it is one of ``admins``."""
    admins = list(admins)
    if is_admin(caller, admins):
        return None
    lead = (
        f"the identity running pulumi ({caller}) is not among them and the created cluster gives its creator no "
        "access, so every Kubernetes call would fail Unauthorized after the cluster is created; "
    )
    role = role_of(caller)
    if role is not None:
        partition, account, name = role
        return lead + (
            f"add arn:{partition}:iam::{account}:role/{name} (with its path, if it has one), or set "
            "gpu-platform:cluster.roleArn to one of them"
        )
    kind = "the account's root user" if caller.endswith(":root") else "an IAM user"
    return (
        lead + f"{kind} cannot be named there: set gpu-platform:cluster.roleArn to one of them (the token assumes it)"
    )


@dataclass(frozen=True)
class DeployerCheck:
    """What the deploying identity is checked against when the program starts (``render/aws/deployer.py``): the
    admins of the EKS cluster the stack creates, and the stack's own AWS profile (whose identity may differ from
    the provider's, so a finding is only a warning)."""

    admins: tuple[str, ...]
    profile: str | None = None

    def problems(self, caller: str) -> list[Problem]:
        """The deployer ``caller`` is not an admin of the cluster the stack creates (one problem), else none."""
        message = deployer_message(caller, self.admins)
        return [Problem(key("cluster", "create", "eks", "adminRoleArns"), message)] if message else []


def deployer_check(spec: Any) -> DeployerCheck | None:
    """The check for a stack that creates an EKS cluster and deploys with the token's own identity; None where
    there is nothing to check (another cloud, a found cluster, or ``cluster.roleArn``, checked by a rule)."""
    c = spec.cluster
    if spec.cloud != "aws" or c.create is None or c.create.eks is None or c.role_arn:
        return None
    return DeployerCheck(tuple(c.create.eks.admin_role_arns), c.profile)
