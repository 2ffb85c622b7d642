"""Node health on EKS: the EKS node monitoring agent add-on (issue 31).

The agent (a DaemonSet on every node, aws/eks-node-monitoring-agent) parses the nodes' logs and sets one
NodeCondition per category; NVIDIA GPU errors (XID codes, DCGM diagnostics) set ``AcceleratedHardwareReady`` to
False. Two repair paths act on it: EKS node auto repair of managed node groups (``nodeRepairConfig``, on per pool
with ``eks.autoRepair``) and Karpenter's node repair (``settings.featureGates.nodeRepair``; after 10 minutes of
``AcceleratedHardwareReady=False``: karpenter-provider-aws pkg/cloudprovider/cloudprovider.go ``RepairPolicies``).
Without the agent both react only to a node that stops reporting Ready.
"""

from __future__ import annotations

from typing import Any

import pulumi

from ...plan.aws.node_health import configuration_json
from ...plan.plan import Plan, plain
from . import sdk


class NodeHealth(pulumi.ComponentResource):
    """The node monitoring agent as an EKS add-on of the cluster (its version: EKS's default for the cluster's
    Kubernetes version; an add-on update is EKS's to roll out)."""

    TYPE = "gpu-platform:aws:NodeHealth"

    def __init__(self, name: str, plan: Plan, opts: pulumi.ResourceOptions | None = None, cluster: Any = None):
        """``cluster``: as ``EksAccess.cluster`` gives it; a created cluster's add-on waits for it and takes the
        version of the cluster's add-on table (``Plan.eks_create``)."""
        super().__init__(self.TYPE, name, None, opts)
        aws = plan.aws
        assert aws is not None and aws.node_health_addon is not None, "the plan has no node health add-on"
        addon = aws.node_health_addon
        self.addon = sdk.resource(
            "eks.Addon",
            addon,
            cluster_name=sdk.cluster_name(aws.cluster.name, cluster),
            addon_name=addon,
            addon_version=plan.eks_create.node_monitoring_agent_version if plan.eks_create is not None else None,
            # the agent's DaemonSet tolerates every taint (the chart's nodeAgent.tolerations); its DCGM host
            # engine's tolerates none by default, so the plan gives it the GPU pools' (plan/aws/node_health.py)
            configuration_values=configuration_json(plain(aws.node_health_configuration)),
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="PRESERVE",
            region=aws.cluster.region,
            tags=plain(aws.cluster.tags),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({"addon": addon})
