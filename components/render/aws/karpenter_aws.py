"""Karpenter's AWS side (``components/render/aws/karpenter.py`` wires it in), one function per step, each creating
its resources under the Karpenter component, named and tagged as the plan says (``KarpenterPlan``:
``components/plan/aws/karpenter.py``):

* the node role (worker, CNI, ECR pull-only, SSM) with an ``EC2_LINUX`` access entry, so nodes join
  without aws-auth edits;
* an SSE-encrypted SQS queue (300 s retention: interruption notices older than that are useless) and
  EventBridge rules for the five event kinds Karpenter handles, all targeting the queue;
* the controller role with the policies of ``iam_karpenter`` and either an EKS Pod Identity association
  (default) or an IRSA trust, per ``gpu-platform:karpenter.identity``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi

from ...plan.aws.karpenter import INTERRUPTION_EVENTS, KarpenterPlan
from ...plan.aws.plan import EksClusterPlan
from . import identity, sdk

QUEUE_RETENTION_SECONDS = 300
QUEUE_TARGET_ID = "KarpenterInterruptionQueueTarget"


def event_pattern(kind: str) -> dict[str, list[str]]:
    source, detail_type = INTERRUPTION_EVENTS[kind]
    return {"source": [source], "detail-type": [detail_type]}


# -------------------------------------------------------------------------------------------- steps


@dataclass(frozen=True)
class Account:
    """What every step needs: the Karpenter component (parent), the plan's Karpenter, the cluster lookup, and the
    values derived from it (partition and account from its ARN). ``eks`` is the plan's EKS cluster, which
    ``identity``'s shared functions (Pod Identity or IRSA, the Cluster Autoscaler's too) read."""

    parent: pulumi.Resource
    eks: EksClusterPlan
    k: KarpenterPlan
    cluster: Any  # the EKS cluster lookup (EksAccess.cluster)
    partition: Any  # Output[str]
    account: Any  # Output[str]

    @staticmethod
    def of(parent: pulumi.Resource, eks: EksClusterPlan, k: KarpenterPlan, cluster: Any) -> Account:
        return Account(
            parent,
            eks,
            k,
            cluster,
            *identity.cluster_account(cluster),
        )

    @property
    def opts(self) -> pulumi.ResourceOptions:
        # Regional objects go to the cluster's region (cluster.region, else aws:region), like the lookup.
        return pulumi.ResourceOptions(parent=self.parent)


@dataclass(frozen=True)
class NodeRole:
    """The IAM role of Karpenter's nodes, its policy attachments and its EKS access entry."""

    role: Any
    attachments: list[Any]
    access_entry: Any


def node_role(a: Account) -> NodeRole:
    """What Karpenter-launched instances run as (worker, CNI, ECR pull-only, SSM), with an EC2_LINUX access
    entry so nodes join without aws-auth edits."""
    from . import iam

    k, partition, aws_child = a.k, a.partition, a.opts
    tags = dict(k.tags)
    cluster_name, region = k.cluster, k.region
    node_role = sdk.resource(
        "iam.Role",
        "karpenter-node-role",
        name=k.node_role,
        description=f"Nodes Karpenter launches for EKS cluster {cluster_name}",
        assume_role_policy=partition.apply(
            lambda p: iam.to_json(iam.service_trust(f"ec2.{iam.dns_suffix(p)}", sid="AllowEc2"))
        ),
        tags=tags,
        opts=aws_child,
    )
    node_attachments = [
        sdk.resource(
            "iam.RolePolicyAttachment",
            f"karpenter-node-{policy}",
            role=node_role.name,
            policy_arn=partition.apply(lambda p, n=policy: iam.managed_policy_arn(n, p)),
            opts=aws_child,
        )
        for policy in iam.WORKER_NODE_POLICIES
    ]
    access_entry = sdk.resource(
        "eks.AccessEntry",
        "karpenter-node-access",
        cluster_name=sdk.cluster_name(cluster_name, a.cluster),
        principal_arn=node_role.arn,
        type="EC2_LINUX",
        region=region,
        tags=tags,
        opts=aws_child,
    )
    return NodeRole(node_role, node_attachments, access_entry)


@dataclass(frozen=True)
class InterruptionQueue:
    """The SQS queue Karpenter reads interruption events from, its policy and event rules."""

    queue: Any
    policy: Any
    targets: list[Any]


def interruption_queue(a: Account) -> InterruptionQueue:
    """The SQS queue (300 s retention) and the EventBridge rules of the five event kinds Karpenter handles."""
    from . import iam, iam_karpenter

    k, aws_child = a.k, a.opts
    tags = dict(k.tags)
    cluster_name, region = k.cluster, k.region
    queue = sdk.resource(
        "sqs.Queue",
        "karpenter-interruption-queue",
        name=k.queue,
        message_retention_seconds=QUEUE_RETENTION_SECONDS,
        sqs_managed_sse_enabled=True,
        region=region,
        tags=tags,
        opts=aws_child,
    )
    queue_policy = sdk.resource(
        "sqs.QueuePolicy",
        "karpenter-interruption-queue-policy",
        queue_url=queue.url,
        region=region,
        policy=queue.arn.apply(lambda arn: iam.to_json(iam_karpenter.queue_policy(arn))),
        opts=aws_child,
    )
    targets = []
    for kind, name in k.event_rules.items():
        rule = sdk.resource(
            "cloudwatch.EventRule",
            f"karpenter-{kind}",
            name=name,
            description=f"Karpenter interruption handling for {cluster_name}: {INTERRUPTION_EVENTS[kind][1]}",
            event_pattern=json.dumps(event_pattern(kind), sort_keys=True),
            region=region,
            tags=tags,
            opts=aws_child,
        )
        targets.append(
            sdk.resource(
                "cloudwatch.EventTarget",
                f"karpenter-{kind}-target",
                rule=rule.name,
                arn=queue.arn,
                target_id=QUEUE_TARGET_ID,
                region=region,
                opts=aws_child,
            )
        )
    return InterruptionQueue(queue, queue_policy, targets)


@dataclass(frozen=True)
class ControllerRole:
    """The Karpenter controller's IAM role and what it must wait for."""

    role: Any
    deps: list[Any]  # policy attachments and the Pod Identity association: the controller waits for them


def controller_role(a: Account, node: NodeRole, interruption: InterruptionQueue) -> ControllerRole:
    """The controller's role, its policies (scoped to the cluster, node role and queue) and its identity."""
    from . import iam, iam_karpenter

    k, cluster, partition, account, aws_child = a.k, a.cluster, a.partition, a.account, a.opts
    tags = dict(k.tags)
    cluster_name, region = k.cluster, k.region
    node_role, queue = node.role, interruption.queue
    trust = identity.trust_policy(a.eks, cluster, partition, account, k.namespace, k.service_account, sid="Karpenter")
    controller_role = sdk.resource(
        "iam.Role",
        "karpenter-controller-role",
        name=k.controller_role,
        description=f"Karpenter controller of EKS cluster {cluster_name}",
        assume_role_policy=trust,
        tags=tags,
        opts=aws_child,
    )
    scope = pulumi.Output.all(partition, account, node_role.arn, queue.arn).apply(
        lambda a: iam_karpenter.Scope(
            partition=a[0], region=region, account=a[1], cluster=cluster_name, node_role_arn=a[2], queue_arn=a[3]
        )
    )
    documents = scope.apply(lambda s: iam_karpenter.controller_policies(s, k.zonal_shift))
    controller_deps: list[pulumi.Resource] = []
    for group, name in k.policies.items():
        policy = sdk.resource(
            "iam.Policy",
            f"karpenter-controller-{group}",
            name=name,
            description=f"Karpenter controller ({group}) for EKS cluster {cluster_name}",
            policy=documents.apply(lambda d, g=group: iam.to_json(d[g])),
            tags=tags,
            opts=aws_child,
        )
        controller_deps.append(
            sdk.resource(
                "iam.RolePolicyAttachment",
                f"karpenter-controller-{group}-attachment",
                role=controller_role.name,
                policy_arn=policy.arn,
                opts=aws_child,
            )
        )
    association = identity.pod_identity_association(
        "karpenter-pod-identity",
        a.eks,
        controller_role.arn,
        k.namespace,
        k.service_account,
        tags,
        aws_child,
        a.cluster,
    )
    if association is not None:
        controller_deps.append(association)
    return ControllerRole(controller_role, controller_deps)
