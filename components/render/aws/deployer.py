"""The deploying identity against the admins of a cluster gpu-platform creates (issue 40.5a), when the program
starts: before anything is registered, so a deployer who would be locked out learns it in a second, not after
twenty minutes of VPC, cluster and nodes (why: ``components/plan/aws/cluster_access.py``).

Only where the token's identity is the deployer's: a stack naming ``cluster.roleArn`` has it checked by a rule
before deploy. The identity is STS GetCallerIdentity through the AWS provider (``aws.get_caller_identity``, the
invoke ``aws:index/getCallerIdentity:getCallerIdentity``, called synchronously as pulumi_aws'
``get_caller_identity`` does), i.e. the credentials ``pulumi up`` runs with, which the kubeconfig's
``aws eks get-token`` shares unless the stack names a profile of its own (``cluster.profile``: checked too, with
a warning, since the profile's identity is not the provider's). Offline (the mock engine) nothing is checked.
"""

from __future__ import annotations

from typing import Any

import pulumi

from ...plan.aws.cluster_access import DeployerCheck
from .. import placeholders

CALLER_IDENTITY = "aws:index/getCallerIdentity:getCallerIdentity"


def caller_arn() -> str:
    from . import sdk

    opts = sdk.invoke_opts_defaults()
    result: Any = pulumi.runtime.invoke(CALLER_IDENTITY, {}, opts=opts)
    return str(result.value["arn"])


def check(needed: DeployerCheck | None, source: str) -> None:
    """A preview warns, an update stops before anything is registered; nothing under the mock engine.
    ``needed``: ``plan.aws.cluster_access.deployer_check(spec)``."""
    if needed is None or placeholders.under_mock_engine():
        return
    lines = [p.line(source) for p in needed.problems(caller_arn())]
    if lines and needed.profile:
        lines = [f"{line} (checked with pulumi's credentials; cluster.profile's may differ)" for line in lines]
        for line in lines:
            pulumi.log.warn(line)
        return
    refuse(lines, dry_run=pulumi.runtime.is_dry_run())


def refuse(lines: list[str], *, dry_run: bool) -> None:
    placeholders.refuse(lines, dry_run=dry_run, why="nobody could administer the cluster this update creates")
