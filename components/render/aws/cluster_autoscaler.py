"""Cluster Autoscaler for the EKS managed node groups: scale from zero, and ProvisioningRequests for gangs.

What gets registered when ``spec.cluster_autoscaler_enabled`` (aws stacks with managed pools, unless
``addons.clusterAutoscaler: false``):

* The controller role with one policy (``policy_document``), trusted by EKS Pod Identity or IRSA as
  ``gpu-platform:karpenter.identity`` chooses for every controller of the stack (``identity.py``).
* The ProvisioningRequest CRD (``autoscaling.x-k8s.io/v1``): the chart does not ship it, and both the
  autoscaler (``--enable-provisioning-requests``) and Kueue's ProvisioningRequest admission check need it.
  Kueue sets up that check only when the API exists at its start (kueue v0.19.2 ``cmd/kueue/main.go``,
  ``ServerSupportsProvisioningRequest``), so the Kueue release depends on the CRD.
* The ``cluster-autoscaler`` chart 9.59.0 (app 1.35.0) in kube-system, discovering node groups by the tags
  EKS puts on every managed node group's Auto Scaling group (``k8s.io/cluster-autoscaler/enabled`` and
  ``k8s.io/cluster-autoscaler/<cluster>``; EKS user guide, "Managed node groups": nodes "are automatically
  tagged for auto-discovery by the Kubernetes Cluster Autoscaler").

How an empty managed group is sized (autoscaler ``cloudprovider/aws/aws_manager.go``, 1.35.0): the instance
type from the launch template / node group, labels and taints from ``eks:DescribeNodegroup``, extended
resources from the node group's ``node-template/resources/*`` tags (``managed_pools.autoscaler_tags``).

Pure functions build every document; the component at the bottom wires them to resources.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pulumi
import yaml

from components.data import versions
from components.plan import derive
from components.plan.aws import managed_pools as plan
from components.render import addon, k8s
from components.render.aws import iam, identity, sdk
from components.spec.model import StackSpec

CHART = versions.CLUSTER_AUTOSCALER
NAMESPACE = CHART.namespace
SERVICE_ACCOUNT = "cluster-autoscaler"
CRD_FILE = Path(__file__).parent / "data" / "provisioningrequests.autoscaling.x-k8s.io.yaml"

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


def enabled(spec: StackSpec) -> bool:
    return spec.cluster_autoscaler_enabled


def role_name(spec: StackSpec) -> str:
    return f"{spec.cluster.name}-cluster-autoscaler"


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
                        f"aws:ResourceTag/{plan.CA_PREFIX}/{cluster}": "owned",
                        f"aws:ResourceTag/{plan.CA_PREFIX}/enabled": "true",
                    },
                    # only the platform's own groups, even if discovery were widened by hand
                    "Null": {f"aws:ResourceTag/{plan.POOL_TAG}": "false"},
                },
            },
        ]
    )


# ------------------------------------------------------------------------------------------ Helm


def discovery_tags(spec: StackSpec) -> list[str]:
    """ASG tag keys the autoscaler discovers node groups by (all of them, any value): the two EKS puts on the
    Auto Scaling group of *every* managed node group of the cluster, and the platform's pool tag, which only the
    groups of this stack's pools carry (``nodegroups``: an ``autoscaling.Tag`` on each one's group). Without it
    the autoscaler also sized the cluster's other node groups (the system group Karpenter and the controllers
    run on) and would drain and remove their nodes when it found them underused (cluster-autoscaler
    cloudprovider/aws: ``--node-group-auto-discovery=asg:tag=k1,k2,k3`` matches groups carrying every key)."""
    return [f"{plan.CA_PREFIX}/enabled", f"{plan.CA_PREFIX}/{spec.cluster.name}", plan.POOL_TAG]


def image_tag(spec: StackSpec, kubernetes_version: Any = None) -> Any:
    """The autoscaler image tag for the cluster: the stack's ``cluster.kubernetesVersion`` when given, else the
    looked-up cluster's version (an Output), else the chart's own (1.35)."""
    if spec.cluster.kubernetes_version:
        return versions.cluster_autoscaler_image_tag(spec.cluster.kubernetes_version)
    if kubernetes_version is not None:
        return pulumi.Output.from_input(kubernetes_version).apply(versions.cluster_autoscaler_image_tag)
    return versions.cluster_autoscaler_image_tag("1.35")


def helm_values(spec: StackSpec, role_arn: Any = None, kubernetes_version: Any = None) -> dict[str, Any]:
    """Values of the cluster-autoscaler chart; every path exists in its values.yaml (tests check).

    Placement: system nodes only (``systemNodeSelector``), never a GPU node (no GPU toleration, GPU pool
    nodes and Karpenter nodes excluded by label): an autoscaler on a node it may remove would evict itself.
    """
    resources = {"cpu": CONTROLLER_CPU, "memory": CONTROLLER_MEMORY}
    service_account: dict[str, Any] = {"create": True, "name": SERVICE_ACCOUNT}
    annotations = identity.irsa_annotations(spec, role_arn)
    if annotations:
        service_account["annotations"] = annotations
    return {
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
        "autoDiscovery": {"clusterName": spec.cluster.name, "tags": discovery_tags(spec)},
        # the release of the cluster's own minor (the lookup's version at deploy time; the stack's when it names
        # one): versions.CLUSTER_AUTOSCALER_IMAGE_TAGS
        "image": {"tag": image_tag(spec, kubernetes_version)},
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
        "rbac": {"serviceAccount": service_account},
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


# ------------------------------------------------------------------------------------------- CRD


@functools.cache
def _crd() -> dict[str, Any]:
    # libyaml's loader when PyYAML has it: the same documents, ~10x faster on this 22 kB file
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    docs = [d for d in yaml.load_all(CRD_FILE.read_text(), Loader=loader) if d]
    (doc,) = docs
    return doc


def provisioning_request_crd() -> dict[str, Any]:
    """The ProvisioningRequest CRD as upstream ships it (a fresh copy)."""
    import copy

    return copy.deepcopy(_crd())


# ------------------------------------------------------------------------------------- component


class ClusterAutoscaler(addon.Component):
    """IAM role and identity, the ProvisioningRequest CRD, and the cluster-autoscaler release."""

    TYPE = "gpu-platform:aws:ClusterAutoscaler"

    def __init__(
        self,
        name: str,
        spec: StackSpec,
        provider: pulumi.ProviderResource,
        cluster: Any,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """``cluster`` is the EKS cluster lookup (``EksAccess.cluster``)."""
        super().__init__(name, spec, provider, opts)

        aws_child = pulumi.ResourceOptions(parent=self)
        tags = plan.base_tags(spec)
        cluster_name = spec.cluster.name or ""
        parts = cluster.arn.apply(lambda a: a.split(":"))
        partition, account = parts.apply(lambda p: p[1]), parts.apply(lambda p: p[4])

        role = sdk.resource(
            "iam.Role",
            "cluster-autoscaler-role",
            name=role_name(spec),
            description=f"Cluster Autoscaler of EKS cluster {cluster_name} (gpu-platform)",
            assume_role_policy=identity.trust_policy(
                spec, cluster, partition, account, NAMESPACE, SERVICE_ACCOUNT, sid="ClusterAutoscaler"
            ),
            tags=tags,
            opts=aws_child,
        )
        policy = sdk.resource(
            "iam.Policy",
            "cluster-autoscaler-policy",
            name=role_name(spec),
            description=f"Cluster Autoscaler: scale the managed node groups of EKS cluster {cluster_name}",
            policy=iam.to_json(policy_document(cluster_name)),
            tags=tags,
            opts=aws_child,
        )
        deps: list[pulumi.Resource] = [
            sdk.resource(
                "iam.RolePolicyAttachment",
                "cluster-autoscaler-policy-attachment",
                role=role.name,
                policy_arn=policy.arn,
                opts=aws_child,
            )
        ]
        association = identity.pod_identity_association(
            "cluster-autoscaler-pod-identity", spec, role.arn, NAMESPACE, SERVICE_ACCOUNT, tags, aws_child
        )
        if association is not None:
            deps.append(association)

        crd = provisioning_request_crd()
        self.crd = k8s.kube_object(
            "provisioningrequests-crd",
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            metadata={"name": crd["metadata"]["name"], "labels": dict(derive.MANAGED_BY)},
            spec=crd["spec"],
            opts=self.child(),
        )
        self.release = k8s.helm_release(
            "cluster-autoscaler",
            **versions.release_args(versions.for_spec(CHART, spec)),
            values=helm_values(spec, role.arn, cluster.version),
            opts=self.child([self.crd, *deps]),
        )
        self.register_outputs({"roleArn": role.arn, "release": CHART.release})
