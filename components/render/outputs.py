"""Stack outputs (``pulumi stack output``): what people script against, a projection of the plan the components
render from, so an output can never name a queue or label the cluster does not have.

Keys are camelCase and stable; tenants and pools are maps keyed by their stack-file names. Values only the
cloud knows after creation (an EKS node group's generated name, IAM role ARNs) come in as outputs of the
resources that hold them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..plan.monitoring import MonitoringPlan
from ..plan.plan import Plan, PoolPlan, TenantPlan
from . import monitoring


def tenant_output(t: TenantPlan) -> dict[str, Any]:
    """Where a tenant's work goes: the plan's queues (Kueue's only for the tenants Kueue admits for, Volcano's
    for Volcano tenants), its priority ceiling and GPU units."""
    return {
        "namespace": t.namespace,
        "scheduler": t.scheduler,
        "localQueue": t.local_queue,
        "clusterQueue": t.cluster_queue,
        "volcanoQueue": t.volcano_queue,
        "priorityCeiling": t.priority_ceiling,
        "forbiddenPriorityClasses": list(t.forbidden_priority_classes),
        # GPU units per resource name: the nominal quota, and the ResourceQuota's hard cap (with borrowing)
        "gpuQuota": dict(t.gpu_quota),
        "gpuLimit": dict(t.gpu_limit),
    }


def pool_output(p: PoolPlan, names: Mapping[str, Any]) -> dict[str, Any]:
    """A pool's nodes as a scheduler sees them, and the cloud objects that bring them (``names``: the
    ``nodeGroup`` / ``karpenterNodePools`` / ``gkeNodePool`` entries, per provisioner)."""
    return {
        "provisioner": p.provisioner,
        "gpuModel": p.gpu_model,
        "gpusPerNode": p.gpus_per_node,
        "capacity": p.capacity,
        "maxNodes": p.max_nodes,
        "nodeSelector": dict(p.node_selector),
        "labels": dict(p.labels),
        "taints": [dict(t) for t in p.taints],
        "tolerations": [dict(t) for t in p.tolerations],
        "gpuUnitsPerNode": dict(p.units_per_node),
        "maxGpuUnits": dict(p.max_units),
        **names,
    }


# The engine drops a stack output whose value is null (the Python SDK leaves a top-level None out of the
# property map it sends: pulumi/runtime/rpc.py serialize_properties), so `pulumi stack output karpenter` would
# fail on a stack without Karpenter while the synth printed null. Every top-level output is therefore an object
# with fixed keys, null inside where a thing does not exist (nested nulls are kept: serialize_property).
KARPENTER_KEYS = ("namespace", "interruptionQueue", "nodeRoleArn", "controllerRoleArn")
MONITORING_KEYS = ("prometheus", "exporter", "serviceMonitor", "prometheusRule", "dashboard")


def monitoring_output(m: MonitoringPlan | None) -> dict[str, Any]:
    """Where the GPU monitoring lives (``Plan.monitoring``; None: ``addons.dcgm`` off, every key null)."""
    if m is None:
        return dict.fromkeys(MONITORING_KEYS)
    ex = m.exporter
    on = m.prometheus != "none"  # none: no ServiceMonitor, PrometheusRule or dashboard
    return {
        "prometheus": m.prometheus,
        "exporter": {"source": ex.source, "namespace": ex.namespace, "service": ex.job, "port": ex.port},
        "serviceMonitor": {"namespace": ex.namespace, "name": monitoring.SERVICE_MONITOR_NAME} if on else None,
        "prometheusRule": {"namespace": ex.namespace, "name": monitoring.RULE_NAME} if on else None,
        "dashboard": {"namespace": m.dashboard_namespace, "name": monitoring.DASHBOARD_NAME} if on else None,
    }


def stack_outputs(
    plan: Plan,
    pool_names: Mapping[str, Mapping[str, Any]],
    karpenter: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Every stack output, the plan's (components/plan/plan.py). ``pool_names``: pool -> its provisioner's object
    names; ``karpenter``: the interruption queue and role ARNs when Karpenter runs."""
    return {
        "tenantNamespaces": sorted(plan.tenants),
        "gpuPools": sorted(plan.pools),
        "tenants": {name: tenant_output(plan.tenants[name]) for name in sorted(plan.tenants)},
        "pools": {name: pool_output(plan.pools[name], pool_names.get(name, {})) for name in sorted(plan.pools)},
        "karpenter": {k: (karpenter or {}).get(k) for k in KARPENTER_KEYS},
        "monitoring": monitoring_output(plan.monitoring),
    }
