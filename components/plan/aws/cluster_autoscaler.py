"""What the Cluster Autoscaler of an aws stack is, as plain data: its flags, its release's values (all but what the
looked-up cluster gives: the image tag when the stack names no Kubernetes version, and the role ARN under IRSA),
the tags it discovers node groups by, and its controller role's name and one policy.

``components/render/aws/cluster_autoscaler.py`` wires these to the role, the CRD and the release, and its module
docstring says what each is for; ``plan.py`` (``AwsPlan.cluster_autoscaler``) holds them for the stack.
"""

from __future__ import annotations

from typing import Any

from ...data import versions
from ...spec.model import StackSpec
from .. import derive, mirror
from . import iam, managed_pools

CHART = versions.CLUSTER_AUTOSCALER
NAMESPACE = CHART.namespace
SERVICE_ACCOUNT = "cluster-autoscaler"
# the image tag when neither the stack nor the looked-up cluster says which Kubernetes minor (the chart's own)
DEFAULT_KUBERNETES_VERSION = "1.35"

# Cluster Autoscaler flags (cluster-autoscaler 1.35.0 config/flags/flags.go; FAQ "What are the parameters
# to CA?"), as the chart's extraArgs (rendered --key=value).
EXTRA_ARGS: dict[str, str] = {
    # Pods reach one pool through their Kueue flavor's nodeSelector (gpu-platform/pool), so there is
    # usually exactly one candidate group; when several fit (a CPU pod, or a pool spread over groups),
    # least-waste picks the one that leaves the least idle CPU/memory (FAQ "What are Expanders?"). The
    # priority expander would need a hand-kept ConfigMap of group-name regexes, which a generated node group
    # name (name prefix + suffix) makes brittle.
    "expander": "least-waste",
    # Spread a pool across its AZ-specific twins when a stack ever splits one (FAQ "I'm running cluster
    # with nodes in multiple zones for HA purposes. Is that supported by Cluster Autoscaler?").
    "balance-similar-node-groups": "true",
    # GPU pods mount emptyDir (/dev/shm, scratch); with the default (true) such a pod would keep an idle
    # GPU node alive forever (FAQ "What types of pods can prevent CA from removing a node?").
    "skip-nodes-with-local-storage": "false",
    # Remove an idle GPU node 10 minutes after it became unneeded, and not earlier than 10 minutes after
    # a scale-up (FAQ defaults, stated here so a chart change cannot move them): GPU nodes are the
    # expensive ones, but a cold p4/p5 takes 5-10 minutes to join and load the driver.
    "scale-down-unneeded-time": "10m",
    "scale-down-delay-after-add": "10m",
    # A p4de/p5 from zero (Bottlerocket or AL2023, NVIDIA driver and fabric manager start) can take more
    # than the default 15 minutes to register; after this the autoscaler gives up on the node and backs
    # off the group.
    "max-node-provision-time": "25m",
    # ProvisioningRequests (best-effort-atomic-scale-up) for Kueue's admission check (FAQ "How can I use
    # ProvisioningRequest to run batch workloads", steps 2 and 3).
    "enable-provisioning-requests": "true",
    "kube-api-content-type": "application/json",
}
CONTROLLER_CPU = "100m"
CONTROLLER_MEMORY = "600Mi"


def role_name(cluster: str) -> str:
    """The controller role's name (and its policy's)."""
    return f"{cluster}-cluster-autoscaler"


# -------------------------------------------------------------------------------------------- IAM

# The "Full Cluster Autoscaler Features Policy (Recommended)" of the autoscaler's AWS README (section "IAM
# Policy"; upstream/cluster-autoscaler/iam-actions.json): auto-discovery and scale from zero need
# every read action below, on "*" (Describe* calls have no resource-level permissions).
READ_ACTIONS = (
    "autoscaling:DescribeAutoScalingGroups",
    "autoscaling:DescribeAutoScalingInstances",
    "autoscaling:DescribeLaunchConfigurations",
    "autoscaling:DescribeScalingActivities",
    "ec2:DescribeImages",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeLaunchTemplateVersions",
    "ec2:GetInstanceTypesFromInstanceRequirements",
    "eks:DescribeNodegroup",
)
# Upstream's second block: the only actions that change anything. Scoped by the tag EKS puts on the Auto
# Scaling group of every managed node group of this cluster (README: "tag based conditionals").
MUTATING_ACTIONS = ("autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup")


def policy_document(cluster: str) -> dict[str, Any]:
    return iam.document(
        [
            {
                "Sid": "DescribeForAutoDiscovery",
                "Effect": "Allow",
                "Action": list(READ_ACTIONS),
                "Resource": "*",
            },
            {
                "Sid": "ScaleThisClustersNodeGroups",
                "Effect": "Allow",
                "Action": list(MUTATING_ACTIONS),
                "Resource": "*",
                "Condition": {
                    "StringEquals": {
                        f"aws:ResourceTag/{managed_pools.CA_PREFIX}/{cluster}": "owned",
                        f"aws:ResourceTag/{managed_pools.CA_PREFIX}/enabled": "true",
                    },
                    # only the platform's own groups, even if discovery were widened by hand
                    "Null": {f"aws:ResourceTag/{managed_pools.POOL_TAG}": "false"},
                },
            },
        ]
    )


# ------------------------------------------------------------------------------------------ Helm


def discovery_tags(cluster: str) -> list[str]:
    """ASG tag keys the autoscaler discovers node groups by (all of them, any value): the two EKS puts on the
    Auto Scaling group of *every* managed node group of the cluster, and the platform's pool tag, which only the
    groups of this stack's pools carry (``nodegroups``: an ``autoscaling.Tag`` on each one's group). Without it
    the autoscaler also sized the cluster's other node groups (the system group Karpenter and the controllers
    run on) and would drain and remove their nodes when it found them underused (cluster-autoscaler
    cloudprovider/aws: ``--node-group-auto-discovery=asg:tag=k1,k2,k3`` matches groups carrying every key)."""
    return [f"{managed_pools.CA_PREFIX}/enabled", f"{managed_pools.CA_PREFIX}/{cluster}", managed_pools.POOL_TAG]


def image_tag(spec: StackSpec) -> str | None:
    """The autoscaler image tag of the stack's ``cluster.kubernetesVersion``; None when it names none (then the
    looked-up cluster's version decides, else ``DEFAULT_KUBERNETES_VERSION``)."""
    v = spec.cluster.kubernetes_version
    return versions.cluster_autoscaler_image_tag(v) if v else None


def helm_values(spec: StackSpec) -> dict[str, Any]:
    """Values of the cluster-autoscaler chart but ``image.tag`` and IRSA's ServiceAccount annotation (both may
    take the cluster's outputs: ``components/render/aws/cluster_autoscaler.py`` adds them); every path exists
    in its values.yaml (tests check).

    Placement: system nodes only (``systemNodeSelector``), never a GPU node (no GPU toleration, GPU pool
    nodes and Karpenter nodes excluded by label): an autoscaler on a node it may remove would evict itself.
    """
    resources = {"cpu": CONTROLLER_CPU, "memory": CONTROLLER_MEMORY}
    cluster = spec.cluster.name or ""
    values = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": derive.POOL_LABEL, "operator": "DoesNotExist"},
                                {"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"},
                            ]
                        }
                    ]
                }
            }
        },
        "autoDiscovery": {"clusterName": spec.cluster.name, "tags": discovery_tags(cluster)},
        "awsRegion": spec.cluster.region or "",
        "cloudProvider": "aws",
        "containerSecurityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
        },
        "extraArgs": dict(EXTRA_ARGS),
        "fullnameOverride": "cluster-autoscaler",
        "nodeSelector": derive.system_node_selector(spec),
        "priorityClassName": "system-cluster-critical",
        "rbac": {"serviceAccount": {"create": True, "name": SERVICE_ACCOUNT}},
        # One active autoscaler (leader election); a second replica takes over within seconds on a drain.
        "replicaCount": 2,
        "resources": {"limits": {"memory": CONTROLLER_MEMORY}, "requests": dict(resources)},
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 65534,
            "runAsGroup": 65534,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
    }
    return mirror.chart_values(spec, "clusterAutoscaler", values)  # its image through the stack's mirror
