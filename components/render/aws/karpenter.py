"""Karpenter on EKS: the controller (CRDs as their own release), its IAM, interruption handling, and one
EC2NodeClass per distinct node need plus one NodePool per karpenter pool (two with on-demand fallback).

What gets registered when the plan has Karpenter (``Plan.karpenter``):

* Helm releases ``karpenter-crd`` (the upstream CRD chart, so CRDs upgrade with the chart -- Helm never
  upgrades a chart's ``crds/``) and ``karpenter`` with ``skipCrds``, both in kube-system: the API
  Priority and Fairness FlowSchemas that keep the controller's leader election and API calls from
  being throttled only cover kube-system (Karpenter's getting-started guide installs there).
* The AWS side (``karpenter_aws``): the controller role with the policies of ``iam_karpenter`` and its
  identity (EKS Pod Identity or IRSA), the node role with its access entry, the interruption queue and
  the EventBridge rules feeding it.
* EC2NodeClasses and NodePools for the karpenter pools, depending on the controller release: on
  ``pulumi destroy`` they go first, while the controller still runs to drain and terminate their
  nodes (their finalizers need it).

Every document and name is decided in the plan (``components/plan/aws/karpenter.py``, ``KarpenterPlan``, from the
functions of ``components/plan/aws/karpenter_nodes.py``, re-exported here for the tests, the rules and ``explain``);
the component below wires the plan to resources, adding what only the cloud knows (the node role's name as an
output, the cluster endpoint, the queue's name as its object gives it, the controller role's ARN under IRSA).
"""

from __future__ import annotations

from typing import Any

import pulumi

from ...data import versions
from ...plan import derive
from ...plan.aws.capacity import fallback_split as fallback_split
from ...plan.aws.karpenter import (
    CONTROLLER_NAMESPACE as CONTROLLER_NAMESPACE,
    SERVICE_ACCOUNT as SERVICE_ACCOUNT,
    KarpenterPlan,
    NodeClassPlan,
    controller_values as controller_values,
    helm_values as helm_values,
    summary_lines as summary_lines,
    with_outputs,
)
from ...plan.aws.karpenter_nodes import (
    ARCH_LABEL as ARCH_LABEL,
    CAPACITY_TYPE_LABEL as CAPACITY_TYPE_LABEL,
    DISCOVERY_TAG as DISCOVERY_TAG,
    GPU_COUNT_LABEL as GPU_COUNT_LABEL,
    GPU_NAME_LABEL as GPU_NAME_LABEL,
    INSTANCE_TYPE_LABEL as INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL as NODEPOOL_LABEL,
    ON_DEMAND_WEIGHT as ON_DEMAND_WEIGHT,
    OS_LABEL as OS_LABEL,
    SPOT_WEIGHT as SPOT_WEIGHT,
    NodeClassNeed as NodeClassNeed,
    NodePoolPart as NodePoolPart,
    block_device_mappings as block_device_mappings,
    ec2_node_class_spec as ec2_node_class_spec,
    karpenter_pools as karpenter_pools,
    limits as limits,
    metadata_options as metadata_options,
    needs_overlay as needs_overlay,
    node_class_name as node_class_name,
    node_class_need as node_class_need,
    node_class_needs as node_class_needs,
    node_overlay_spec as node_overlay_spec,
    node_pool_description as node_pool_description,
    node_pool_spec as node_pool_spec,
    node_resources as node_resources,
    nodepool_plans as nodepool_plans,
    overlay_name as overlay_name,
    overlay_pools as overlay_pools,
    own_class_additions as own_class_additions,
    requirements as requirements,
    security_group_selector_terms as security_group_selector_terms,
    subnet_selector_terms as subnet_selector_terms,
    taints as taints,
)
from ...plan.plan import Plan, plain
from .. import addon, k8s
from . import karpenter_aws


def node_class_body(c: NodeClassPlan, role: Any) -> dict[str, Any]:
    """The EC2NodeClass spec: the plan's, with the node role's name (an Output in the program)."""
    return {**plain(c.spec), "role": role}


# -------------------------------------------------------------------------------------- component


class Karpenter(addon.Component):
    """Karpenter controller, its AWS plumbing, and the GPU EC2NodeClasses and NodePools."""

    TYPE = "gpu-platform:aws:Karpenter"

    def __init__(
        self,
        name: str,
        plan: Plan,
        provider: pulumi.ProviderResource,
        cluster: Any,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """``cluster`` is the EKS cluster lookup (``EksAccess.cluster``). Steps: the AWS side (node role,
        interruption queue, controller role: ``karpenter_aws``), the two releases, then the GPU capacity
        (EC2NodeClasses, NodePools, NodeOverlays) after the controller."""
        super().__init__(name, plan, provider, opts)
        k = self.plan.karpenter
        if k is None:
            raise ValueError("Karpenter: the stack's plan has no Karpenter (aws, with karpenter pools or addon)")
        assert self.plan.aws is not None  # Karpenter is an aws stack's
        account = karpenter_aws.Account.of(self, self.plan.aws.cluster, k, cluster)
        node = karpenter_aws.node_role(account)
        interruption = karpenter_aws.interruption_queue(account)
        controller_role = karpenter_aws.controller_role(account, node, interruption)
        crds, controller = self._releases(k, cluster, interruption, controller_role)
        classes = self._node_classes(k, [crds, controller, node.access_entry, *node.attachments], node.role)
        self.node_pools = self._node_pools(k, [crds, controller], classes)
        self.node_overlays = self._node_overlays(k, [crds, controller])
        self.queue_name = interruption.queue.name
        self.node_role_arn = node.role.arn
        self.controller_role_arn = controller_role.role.arn
        self.register_outputs(
            {
                "queueName": self.queue_name,
                "nodeRoleArn": self.node_role_arn,
                "controllerRoleArn": self.controller_role_arn,
                "nodePools": self.node_pools,
                "nodeOverlays": self.node_overlays,
                "nodeClasses": sorted(classes),
            }
        )

    def _releases(
        self,
        k: KarpenterPlan,
        cluster: Any,
        interruption: karpenter_aws.InterruptionQueue,
        role: karpenter_aws.ControllerRole,
    ) -> tuple[pulumi.Resource, pulumi.Resource]:
        """Helm: the CRD chart, then the controller (skipCrds) once its queue, rules and role are in place."""
        crds = k8s.helm_release("karpenter-crd", **versions.release_args(k.crd_chart), opts=self.child())
        controller = k8s.helm_release(
            "karpenter",
            **versions.release_args(k.chart),
            skip_crds=True,
            values=with_outputs(
                k.helm_values,
                k.identity,
                cluster_endpoint=cluster.endpoint,
                queue=interruption.queue.name,
                irsa_role_arn=role.role.arn if k.identity == "irsa" else None,
            ),
            opts=self.child([crds, interruption.policy, *interruption.targets, *role.deps]),
        )
        return crds, controller

    def _node_classes(
        self, k: KarpenterPlan, after: list[pulumi.Resource], node_role: Any
    ) -> dict[str, pulumi.Resource]:
        """One EC2NodeClass per distinct node need, after the controller and the node role's access."""

        return {
            c.name: k8s.kube_object(
                f"ec2nodeclass-{c.name}",
                api_version=versions.KARPENTER_NODECLASS_API,
                kind="EC2NodeClass",
                metadata={"name": c.name, "labels": {**derive.MANAGED_BY}},
                spec=node_class_body(c, node_role.name),
                opts=self.child(after),
            )
            for c in k.node_classes
        }

    def _node_pools(
        self, k: KarpenterPlan, after: list[pulumi.Resource], classes: dict[str, pulumi.Resource]
    ) -> list[str]:
        """One NodePool per plan (two per pool with on-demand fallback), after its EC2NodeClass."""

        for p in k.node_pools:
            k8s.kube_object(
                f"nodepool-{p.name}",
                api_version=versions.KARPENTER_NODEPOOL_API,
                kind="NodePool",
                metadata={
                    "name": p.name,
                    "labels": {**derive.MANAGED_BY, derive.POOL_LABEL: p.pool},
                    "annotations": {"kubernetes.io/description": p.description},
                },
                spec=plain(p.spec),
                opts=self.child([*after, classes[p.node_class]]),
            )
        return [p.name for p in k.node_pools]

    def _node_overlays(self, k: KarpenterPlan, after: list[pulumi.Resource]) -> list[str]:
        """A NodeOverlay per pool whose nodes advertise what Karpenter cannot know (shared or MIG GPUs)."""

        for o in k.node_overlays:
            k8s.kube_object(
                f"nodeoverlay-{o.pool}",
                api_version=versions.KARPENTER_NODEOVERLAY_API,
                kind="NodeOverlay",
                metadata={"name": o.name, "labels": {**derive.MANAGED_BY, derive.POOL_LABEL: o.pool}},
                spec=plain(o.spec),
                opts=self.child(after),
            )
        return [o.name for o in k.node_overlays]
