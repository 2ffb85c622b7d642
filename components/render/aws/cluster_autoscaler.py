"""Cluster Autoscaler for the EKS managed node groups: scale from zero, and ProvisioningRequests for gangs.

What gets registered when the plan has one (``AwsPlan.cluster_autoscaler``: aws stacks with managed pools, unless
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

What it is (flags, values, role and policy, the chart) is the plan's (``components/plan/aws/cluster_autoscaler.py``,
re-exported here); the component at the bottom wires it to resources with the cluster's outputs (the role ARN under
IRSA, the looked-up Kubernetes version for the image tag).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pulumi
import yaml

from ...data import versions
from ...plan import derive
from ...plan.aws import plan as aws_plan
from ...plan.aws.cluster_autoscaler import (
    CHART as CHART,
    CONTROLLER_CPU as CONTROLLER_CPU,
    CONTROLLER_MEMORY as CONTROLLER_MEMORY,
    DEFAULT_KUBERNETES_VERSION,
    EXTRA_ARGS as EXTRA_ARGS,
    MUTATING_ACTIONS as MUTATING_ACTIONS,
    NAMESPACE as NAMESPACE,
    READ_ACTIONS as READ_ACTIONS,
    SERVICE_ACCOUNT as SERVICE_ACCOUNT,
    discovery_tags as discovery_tags,
    policy_document as policy_document,
)
from ...plan.plan import Plan, plain
from .. import addon, k8s
from . import identity

CRD_FILE = Path(__file__).parent / "data" / "provisioningrequests.autoscaling.x-k8s.io.yaml"


def _plans(aws: aws_plan.AwsPlan | None) -> tuple[aws_plan.AwsPlan, aws_plan.ClusterAutoscalerPlan]:
    """The aws plan and its Cluster Autoscaler."""
    assert aws is not None and aws.cluster_autoscaler is not None, "the plan has no Cluster Autoscaler"
    return aws, aws.cluster_autoscaler


def role_name(aws: aws_plan.AwsPlan) -> str:
    return _plans(aws)[1].role_name


# ------------------------------------------------------------------------------------------ Helm


def image_tag(plan: aws_plan.ClusterAutoscalerPlan, kubernetes_version: Any = None) -> Any:
    """The autoscaler image tag for the cluster: the plan's (the stack's ``cluster.kubernetesVersion``) when it has
    one, else the looked-up cluster's version (an Output), else the chart's own (1.35)."""
    if plan.image_tag is not None:
        return plan.image_tag
    if kubernetes_version is not None:
        return pulumi.Output.from_input(kubernetes_version).apply(versions.cluster_autoscaler_image_tag)
    return versions.cluster_autoscaler_image_tag(DEFAULT_KUBERNETES_VERSION)


def helm_values(aws: aws_plan.AwsPlan, role_arn: Any = None, kubernetes_version: Any = None) -> dict[str, Any]:
    """Values of the cluster-autoscaler chart: the plan's (``AwsPlan.cluster_autoscaler.values``) with the image tag
    of the cluster's own minor (the lookup's version at deploy time; the stack's when it names one:
    versions.CLUSTER_AUTOSCALER_IMAGE_TAGS) and, under IRSA, the role ARN on the ServiceAccount."""
    aws, plan = _plans(aws)
    values = plain(plan.values)
    annotations = identity.irsa_annotations(aws.cluster, role_arn)
    if annotations:
        values["rbac"]["serviceAccount"]["annotations"] = annotations
    values.setdefault("image", {})["tag"] = image_tag(plan, kubernetes_version)  # the mirror's repository kept
    return values


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
        plan: Plan,
        provider: pulumi.ProviderResource,
        cluster: Any,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """``cluster`` is the EKS cluster lookup (``EksAccess.cluster``)."""
        super().__init__(name, plan, provider, opts)

        aws, plan = _plans(self.plan.aws)
        aws_child = pulumi.ResourceOptions(parent=self)
        tags = plain(aws.cluster.tags)
        cluster_name = aws.cluster.name
        partition, account = identity.cluster_account(cluster)
        role, attachment = identity.controller_role(
            "cluster-autoscaler",
            name=plan.role_name,
            description=f"Cluster Autoscaler of EKS cluster {cluster_name} (gpu-platform)",
            policy_description=f"Cluster Autoscaler: scale the managed node groups of EKS cluster {cluster_name}",
            policy=plain(plan.policy),
            trust=identity.trust_policy(
                aws.cluster, cluster, partition, account, plan.namespace, plan.service_account, sid="ClusterAutoscaler"
            ),
            tags=tags,
            opts=aws_child,
        )
        deps: list[pulumi.Resource] = [attachment]
        association = identity.pod_identity_association(
            "cluster-autoscaler-pod-identity",
            aws.cluster,
            role.arn,
            plan.namespace,
            plan.service_account,
            tags,
            aws_child,
            cluster,
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
            **versions.release_args(plan.chart),
            values=helm_values(aws, role.arn, cluster.version),
            opts=self.child([self.crd, *deps]),
        )
        self.register_outputs({"roleArn": role.arn, "release": CHART.release})
