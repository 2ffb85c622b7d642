"""A cluster taken from another Pulumi stack (``cluster.fromStack``, issue 30): ``Plan.cluster_stack``, pure data.

The usual layering keeps the network and cluster in one stack and what runs on it in another; this one reads the
cluster stack's outputs through a ``pulumi.StackReference`` (``components/render/cluster_stack.py``) instead of
looking the cluster up by name. The outputs it needs are fixed per cloud (below); a missing one fails the
deployment with an error naming it and the stack. ``cluster.name`` stays required: the plan's names (IAM roles,
discovery tags, the kubeconfig's context) are made from it, and the stack's ``clusterName`` must equal it (on
gcp its ``location`` and ``project`` too: the node pools go there).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from ..spec.model import StackSpec
from .gcp import gke

# cloud -> the outputs a cluster stack must export (camelCase, as a Pulumi program exports them), and what each is
AWS_OUTPUTS: dict[str, str] = {
    "clusterName": "the EKS cluster's name (must equal gpu-platform:cluster.name)",
    "clusterArn": "the cluster's ARN (its partition and account)",
    "endpoint": "the API server's URL",
    "certificateAuthority": "the cluster CA, base64 (certificateAuthority.data)",
    "oidcIssuer": "the cluster's OIDC issuer URL (IRSA)",
    "clusterSecurityGroupId": "the cluster security group (EFA pools' launch templates)",
    "vpcId": "the cluster's VPC (EFA security groups)",
    "privateSubnetIds": "the subnets managed node groups launch in (a list)",
    "kubernetesVersion": "the cluster's Kubernetes version (the Cluster Autoscaler's image tag)",
}
GCP_OUTPUTS: dict[str, str] = {
    "clusterName": "the GKE cluster's name (must equal gpu-platform:cluster.name)",
    "location": "the cluster's region or zone",
    "project": "the cluster's project",
    "endpoint": "the API server's address",
    "clusterCaCertificate": "the cluster CA, base64 (masterAuth.clusterCaCertificate)",
    "nodeLocations": "the zones the cluster's nodes span (a list; how many nodes a pool's per-zone count makes)",
}

# Outputs that are lists: a required one must hold at least one non-empty string (an empty list passes nothing to
# the cloud calls that read it, which then fail naming no output); an optional one may be empty.
LIST_OUTPUTS: dict[str, str] = {
    "privateSubnetIds": "subnet ID, where the managed node groups launch",
    "nodeLocations": "zone (a regional cluster's nodes span one or more of its region's zones)",
}


@dataclass(frozen=True)
class ClusterStackPlan:
    """The Pulumi stack the cluster is taken from, and the outputs read from it."""

    stack: str  # organization/project/stack
    cloud: str
    name: str  # the clusterName output must equal it
    identity: Mapping[str, str]  # outputs that must equal the stack file's (clusterName; gcp: location, project)
    required: tuple[str, ...]  # outputs read, in order; a missing one is an error naming it
    optional: tuple[str, ...]


def identity(spec: StackSpec) -> dict[str, str]:
    """The outputs that must say what the stack file says: the plan's names, and on gcp where its node pools go,
    are made from these."""
    out = {"clusterName": spec.cluster.name or ""}
    if spec.cloud == "gcp":
        out |= {"location": spec.cluster.location or "", "project": spec.cluster.project or ""}
    return out


def cluster_stack_plan(spec: StackSpec) -> ClusterStackPlan | None:
    ref = spec.cluster.from_stack
    if ref is None or spec.cloud not in ("aws", "gcp"):
        return None
    outputs = AWS_OUTPUTS if spec.cloud == "aws" else GCP_OUTPUTS
    optional: list[str] = []
    if spec.cloud == "aws" and spec.karpenter.identity != "irsa":
        optional.append("oidcIssuer")  # read only under karpenter.identity: irsa
    if spec.cloud == "aws" and spec.cluster.kubernetes_version:
        optional.append("kubernetesVersion")  # the stack file's wins
    if spec.cloud == "gcp" and gke.is_zone(spec.cluster.location or ""):
        # GKE leaves a zonal cluster's own zone out of its node locations, so a zonal cluster with no other zones
        # exports an empty list (its own zone still counts: plan/gcp/plan.py zone_count)
        optional.append("nodeLocations")
    return ClusterStackPlan(
        stack=ref,
        cloud=spec.cloud,
        name=spec.cluster.name or "",
        identity=MappingProxyType(identity(spec)),
        required=tuple(o for o in outputs if o not in optional),
        optional=tuple(optional),
    )


def text_lines(p: ClusterStackPlan) -> list[str]:
    return [
        f"  cluster from stack {p.stack}: outputs {', '.join(p.required)}"
        + (f" (and {', '.join(p.optional)} when present)" if p.optional else "")
    ]
