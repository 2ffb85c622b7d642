"""Small IAM helpers shared by the AWS components (node groups, Karpenter, the Cluster Autoscaler): AWS-managed
policy ARNs, service trust policies and policy-document JSON. Pure data (the plan's Cluster Autoscaler policy is
made with them); ``components/render/aws/iam.py`` re-exports every name for the renderers."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

POLICY_VERSION = "2012-10-17"

# AWS-managed policies every EKS worker node role carries (EKS user guide, "Amazon EKS node IAM role"):
# kubelet/node registration, the VPC CNI, pulling images from ECR (pull-only: no repository listing or
# layer-upload permissions), and SSM Session Manager instead of SSH.
WORKER_NODE_POLICIES: tuple[str, ...] = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryPullOnly",
    "AmazonSSMManagedInstanceCore",
)


def dns_suffix(partition: str) -> str:
    """Service-principal DNS suffix of a partition (``ec2.<suffix>``)."""
    return "amazonaws.com.cn" if partition == "aws-cn" else "amazonaws.com"


def managed_policy_arn(name: str, partition: str) -> str:
    """ARN of an AWS-managed policy: ``arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy``."""
    return f"arn:{partition}:iam::aws:policy/{name}"


def document(statements: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    return {"Version": POLICY_VERSION, "Statement": [dict(s) for s in statements]}


def to_json(doc: Mapping[str, Any]) -> str:
    """Canonical JSON of a policy document (stable key order, so re-runs show no diff)."""
    return json.dumps(doc, sort_keys=True, separators=(",", ":"))


def service_trust(service: str, actions: Iterable[str] = ("sts:AssumeRole",), sid: str | None = None) -> dict[str, Any]:
    """Trust policy letting an AWS service principal (``ec2.amazonaws.com``) assume the role."""
    stmt: dict[str, Any] = {"Effect": "Allow", "Principal": {"Service": service}, "Action": sorted(actions)}
    if sid:
        stmt = {"Sid": sid, **stmt}
    return document([stmt])


# ------------------------------------------------------------------------------ controller identities


def pod_identity_trust(cluster: str, namespace: str, service_account: str, sid: str) -> dict[str, Any]:
    """EKS Pod Identity may assume the role, only for one ServiceAccount of this cluster.

    The conditions match the session tags Pod Identity sets (eks-cluster-name, kubernetes-namespace,
    kubernetes-service-account), so a Pod Identity association in another cluster or namespace of the
    account cannot use this role.
    """
    return document(
        [
            {
                "Sid": sid,
                "Effect": "Allow",
                "Principal": {"Service": "pods.eks.amazonaws.com"},
                "Action": ["sts:AssumeRole", "sts:TagSession"],
                "Condition": {
                    "StringEquals": {
                        "aws:RequestTag/eks-cluster-name": cluster,
                        "aws:RequestTag/kubernetes-namespace": namespace,
                        "aws:RequestTag/kubernetes-service-account": service_account,
                    }
                },
            }
        ]
    )


def oidc_provider_arn(partition: str, account: str, issuer: str) -> str:
    return f"arn:{partition}:iam::{account}:oidc-provider/{issuer.removeprefix('https://')}"


def irsa_trust(
    partition: str, account: str, issuer: str, namespace: str, service_account: str, sid: str
) -> dict[str, Any]:
    """The cluster's IAM OIDC provider may assume the role for exactly this ServiceAccount."""
    host = issuer.removeprefix("https://")
    return document(
        [
            {
                "Sid": sid,
                "Effect": "Allow",
                "Principal": {"Federated": oidc_provider_arn(partition, account, issuer)},
                "Action": "sts:AssumeRoleWithWebIdentity",
                "Condition": {
                    "StringEquals": {
                        f"{host}:aud": "sts.amazonaws.com",
                        f"{host}:sub": f"system:serviceaccount:{namespace}:{service_account}",
                    }
                },
            }
        ]
    )
