"""IAM for the Karpenter controller, as plain data: the controller's permission policies and the interruption
queue's resource policy. Its trust policy (EKS Pod Identity or IRSA) is the shared one in ``iam.py``, wired by
``identity.py``.

The permissions follow the controller policies of Karpenter's v1.14 getting-started CloudFormation
template (``website/content/en/v1.14/getting-started/getting-started-with-karpenter/cloudformation.yaml``
in aws/karpenter-provider-aws), written out here statement by statement:

* everything that creates, tags or deletes EC2 or IAM objects is conditioned on the cluster's ownership
  tags (``kubernetes.io/cluster/<cluster>: owned``, ``eks:eks-cluster-name``, ``karpenter.sh/nodepool``,
  ``karpenter.k8s.aws/ec2nodeclass``), which Karpenter puts on every object it launches, so the role
  cannot touch instances, launch templates or instance profiles of anything else in the account;
* ``iam:PassRole`` is limited to the one node role, and only towards EC2;
* the only ``Resource: "*"`` statements are read-only (Describe*/pricing/ListInstanceProfiles), the
  regional ones pinned to the cluster's region, and the zonal-shift read pinned to the cluster's ARN.

Policies are grouped like upstream's six managed policies so that each stays far below IAM's 6,144
character limit for managed policies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...plan.aws import karpenter as karpenter_plan
from .iam import document


@dataclass(frozen=True)
class Scope:
    """What the policies are pinned to."""

    partition: str
    region: str
    account: str
    cluster: str
    node_role_arn: str
    queue_arn: str

    @property
    def cluster_arn(self) -> str:
        return f"arn:{self.partition}:eks:{self.region}:{self.account}:cluster/{self.cluster}"

    def ec2(self, kind: str, account: str = "*") -> str:
        return f"arn:{self.partition}:ec2:{self.region}:{account}:{kind}/*"

    @property
    def instance_profiles(self) -> str:
        return f"arn:{self.partition}:iam::{self.account}:instance-profile/*"

    # -- tag condition keys -------------------------------------------------------------------------
    @property
    def owned_tag(self) -> str:
        return f"kubernetes.io/cluster/{self.cluster}"


# Objects RunInstances/CreateFleet create and tag (instances and everything launched with them).
_LAUNCHED = ("fleet", "instance", "volume", "network-interface", "launch-template", "spot-instances-request")


def node_lifecycle(s: Scope) -> list[dict[str, Any]]:
    """Launch, tag and terminate instances and launch templates -- only this cluster's."""
    owned_resource = {f"aws:ResourceTag/{s.owned_tag}": "owned"}
    owned_request = {f"aws:RequestTag/{s.owned_tag}": "owned", "aws:RequestTag/eks:eks-cluster-name": s.cluster}
    nodepool_resource = {"aws:ResourceTag/karpenter.sh/nodepool": "*"}
    nodepool_request = {"aws:RequestTag/karpenter.sh/nodepool": "*"}
    launched = [s.ec2(kind) for kind in _LAUNCHED]
    return [
        {
            # Read-side inputs of a launch (AMIs, snapshots, subnets, security groups, reservations,
            # placement groups). RunInstances needs them, but it also needs the tagged statement
            # below for the instance itself, so this alone launches nothing.
            "Sid": "AllowScopedEC2InstanceAccessActions",
            "Effect": "Allow",
            "Action": ["ec2:CreateFleet", "ec2:RunInstances"],
            "Resource": [
                s.ec2("image", account=""),
                s.ec2("snapshot", account=""),
                s.ec2("security-group"),
                s.ec2("subnet"),
                s.ec2("capacity-reservation"),
                s.ec2("placement-group"),
            ],
        },
        {
            "Sid": "AllowScopedEC2LaunchTemplateAccessActions",
            "Effect": "Allow",
            "Action": ["ec2:CreateFleet", "ec2:RunInstances"],
            "Resource": s.ec2("launch-template"),
            "Condition": {"StringEquals": owned_resource, "StringLike": nodepool_resource},
        },
        {
            "Sid": "AllowScopedEC2InstanceActionsWithTags",
            "Effect": "Allow",
            "Action": ["ec2:CreateFleet", "ec2:CreateLaunchTemplate", "ec2:RunInstances"],
            "Resource": launched,
            "Condition": {"StringEquals": owned_request, "StringLike": nodepool_request},
        },
        {
            "Sid": "AllowScopedResourceCreationTagging",
            "Effect": "Allow",
            "Action": "ec2:CreateTags",
            "Resource": launched,
            "Condition": {
                "StringEquals": {
                    **owned_request,
                    "ec2:CreateAction": ["CreateFleet", "CreateLaunchTemplate", "RunInstances"],
                },
                "StringLike": nodepool_request,
            },
        },
        {
            # Later tagging of running instances: only the Name / nodeclaim / cluster-name tags.
            "Sid": "AllowScopedResourceTagging",
            "Effect": "Allow",
            "Action": "ec2:CreateTags",
            "Resource": s.ec2("instance"),
            "Condition": {
                "StringEquals": owned_resource,
                "StringLike": nodepool_resource,
                "StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": s.cluster},
                "ForAllValues:StringEquals": {
                    "aws:TagKeys": ["Name", "eks:eks-cluster-name", "karpenter.sh/nodeclaim"]
                },
            },
        },
        {
            "Sid": "AllowScopedDeletion",
            "Effect": "Allow",
            "Action": ["ec2:DeleteLaunchTemplate", "ec2:TerminateInstances"],
            "Resource": [s.ec2("instance"), s.ec2("launch-template")],
            "Condition": {"StringEquals": owned_resource, "StringLike": nodepool_resource},
        },
    ]


def iam_integration(s: Scope) -> list[dict[str, Any]]:
    """Pass the node role to EC2, and manage the instance profiles Karpenter makes for EC2NodeClasses."""
    region_resource = {
        f"aws:ResourceTag/{s.owned_tag}": "owned",
        "aws:ResourceTag/topology.kubernetes.io/region": s.region,
    }
    region_request = {
        f"aws:RequestTag/{s.owned_tag}": "owned",
        "aws:RequestTag/eks:eks-cluster-name": s.cluster,
        "aws:RequestTag/topology.kubernetes.io/region": s.region,
    }
    return [
        {
            "Sid": "AllowPassingInstanceRole",
            "Effect": "Allow",
            "Action": "iam:PassRole",
            "Resource": s.node_role_arn,
            "Condition": {"StringEquals": {"iam:PassedToService": ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"]}},
        },
        {
            "Sid": "AllowScopedInstanceProfileCreationActions",
            "Effect": "Allow",
            "Action": "iam:CreateInstanceProfile",
            "Resource": s.instance_profiles,
            "Condition": {
                "StringEquals": region_request,
                "StringLike": {"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"},
            },
        },
        {
            "Sid": "AllowScopedInstanceProfileTagActions",
            "Effect": "Allow",
            "Action": "iam:TagInstanceProfile",
            "Resource": s.instance_profiles,
            "Condition": {
                "StringEquals": {**region_resource, **region_request},
                "StringLike": {
                    "aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*",
                    "aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*",
                },
            },
        },
        {
            "Sid": "AllowScopedInstanceProfileActions",
            "Effect": "Allow",
            "Action": [
                "iam:AddRoleToInstanceProfile",
                "iam:DeleteInstanceProfile",
                "iam:RemoveRoleFromInstanceProfile",
            ],
            "Resource": s.instance_profiles,
            "Condition": {
                "StringEquals": region_resource,
                "StringLike": {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*"},
            },
        },
    ]


def eks_integration(s: Scope) -> list[dict[str, Any]]:
    return [
        {
            "Sid": "AllowAPIServerEndpointDiscovery",
            "Effect": "Allow",
            "Action": "eks:DescribeCluster",
            "Resource": s.cluster_arn,
        }
    ]


def interruption(s: Scope) -> list[dict[str, Any]]:
    return [
        {
            "Sid": "AllowInterruptionQueueActions",
            "Effect": "Allow",
            "Action": ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"],
            "Resource": s.queue_arn,
        }
    ]


def resource_discovery(s: Scope) -> list[dict[str, Any]]:
    """Read-only discovery: instance types, offerings, prices, AMIs (via SSM aliases), subnets, SGs."""
    return [
        {
            "Sid": "AllowRegionalReadActions",
            "Effect": "Allow",
            "Action": sorted(
                f"ec2:{a}"
                for a in (
                    "DescribeCapacityReservations",
                    "DescribeImages",
                    "DescribeInstances",
                    "DescribeInstanceStatus",
                    "DescribeInstanceTypeOfferings",
                    "DescribeInstanceTypes",
                    "DescribeLaunchTemplates",
                    "DescribePlacementGroups",
                    "DescribeSecurityGroups",
                    "DescribeSpotPriceHistory",
                    "DescribeSubnets",
                )
            ),
            "Resource": "*",
            "Condition": {"StringEquals": {"aws:RequestedRegion": s.region}},
        },
        {
            # EKS-optimized / Bottlerocket AMI IDs behind the amiSelectorTerms aliases.
            "Sid": "AllowSSMReadActions",
            "Effect": "Allow",
            "Action": "ssm:GetParameter",
            "Resource": f"arn:{s.partition}:ssm:{s.region}::parameter/aws/service/*",
        },
        {
            # The Pricing API has no resource-level permissions.
            "Sid": "AllowPricingReadActions",
            "Effect": "Allow",
            "Action": "pricing:GetProducts",
            "Resource": "*",
        },
        {
            "Sid": "AllowUnscopedInstanceProfileListAction",
            "Effect": "Allow",
            "Action": "iam:ListInstanceProfiles",
            "Resource": "*",
        },
        {
            "Sid": "AllowInstanceProfileReadActions",
            "Effect": "Allow",
            "Action": "iam:GetInstanceProfile",
            "Resource": s.instance_profiles,
        },
    ]


def zonal_shift(s: Scope) -> list[dict[str, Any]]:
    return [
        {
            "Sid": "AllowZonalShiftStatusReadOnly",
            "Effect": "Allow",
            "Action": "arc-zonal-shift:GetManagedResource",
            "Resource": "*",
            "Condition": {"StringEquals": {"arc-zonal-shift:ResourceIdentifier": s.cluster_arn}},
        }
    ]


def controller_policies(s: Scope, with_zonal_shift: bool = False) -> dict[str, dict[str, Any]]:
    """Policy documents by group name (the group names the IAM policies)."""
    groups = {
        "node-lifecycle": node_lifecycle(s),
        "iam-integration": iam_integration(s),
        "eks-integration": eks_integration(s),
        "interruption": interruption(s),
        "resource-discovery": resource_discovery(s),
    }
    if with_zonal_shift:
        groups["zonal-shift"] = zonal_shift(s)
    return {name: document(statements) for name, statements in groups.items()}


POLICY_GROUPS = karpenter_plan.POLICY_GROUPS  # which of them a stack uses: KarpenterPlan.policies


# ------------------------------------------------------------------------------------- queue policy


def queue_policy(queue_arn: str) -> dict[str, Any]:
    """EventBridge (and SQS itself) may send to the interruption queue; nothing may use it without TLS."""
    doc = document(
        [
            {
                "Sid": "AllowEventDelivery",
                "Effect": "Allow",
                "Principal": {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]},
                "Action": "sqs:SendMessage",
                "Resource": queue_arn,
            },
            {
                "Sid": "DenyHTTP",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "sqs:*",
                "Resource": queue_arn,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            },
        ]
    )
    return {"Id": "EC2InterruptionPolicy", **doc}
