"""Stack outputs (``pulumi stack output``): what people script against, derived from the same facts the
components use (``derive``), so an output can never name a queue or label the cluster does not have.

Keys are camelCase and stable; tenants and pools are maps keyed by their stack-file names. Values only the
cloud knows after creation (an EKS node group's generated name, IAM role ARNs) come in as outputs of the
resources that hold them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from components import derive, monitoring
from components.spec import NodePool, StackSpec, Tenant


def tenant_output(spec: StackSpec, tenant: Tenant) -> dict[str, Any]:
    """Where a tenant's work goes. ``localQueue``/``clusterQueue`` exist when Kueue admits for the tenant (only
    those tenants get Kueue queues, ``derive.kueue_tenants``) and ``volcanoQueue`` when Volcano schedules it
    (``derive.volcano_tenants``); ``scheduler`` says which one its namespace uses."""
    volcano = {t.name for t in derive.volcano_tenants(spec)}
    kueue = derive.tenant_scheduler(spec, tenant) == "kueue" and spec.addons.kueue
    return {
        "namespace": tenant.name,
        "scheduler": derive.tenant_scheduler(spec, tenant),
        "localQueue": spec.scheduling.local_queue_name if kueue else None,
        "clusterQueue": tenant.name if kueue else None,
        "volcanoQueue": tenant.name if tenant.name in volcano else None,
        "priorityCeiling": tenant.priority,
        "forbiddenPriorityClasses": derive.priority_ceiling_excluded(spec, tenant),
        # GPU units per resource name: the nominal quota, and the ResourceQuota's hard cap (with borrowing)
        "gpuQuota": derive.tenant_units(spec, tenant),
        "gpuLimit": {k: v for k, v in derive.tenant_quota_units(spec, tenant).items() if v},
    }


def provisioner(spec: StackSpec, pool: NodePool) -> str:
    if spec.cloud == "gcp":
        return "gke"
    if spec.cloud == "existing":
        return "existing"
    return pool.provisioner  # managed | karpenter


def node_labels(spec: StackSpec, pool: NodePool) -> dict[str, str]:
    """The labels a node of the pool carries: EKS managed node groups add the Cluster Autoscaler's GPU label."""
    if spec.cloud == "aws" and pool.provisioner == "managed":
        from components.aws import managed_pools

        return managed_pools.labels(spec, pool)
    return derive.pool_labels(spec, pool)


def pool_output(spec: StackSpec, pool: NodePool, names: Mapping[str, Any]) -> dict[str, Any]:
    """A pool's nodes as a scheduler sees them, and the cloud objects that bring them (``names``: the
    ``nodeGroup`` / ``karpenterNodePools`` / ``gkeNodePool`` entries, per provisioner)."""
    return {
        "provisioner": provisioner(spec, pool),
        "gpuModel": pool.gpu.model,
        "gpusPerNode": pool.gpu.per_node,
        "capacity": pool.capacity,
        "maxNodes": pool.node_cap,
        "nodeSelector": {derive.POOL_LABEL: pool.name},
        "labels": node_labels(spec, pool),
        "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in derive.node_taints(pool)],
        "tolerations": derive.tolerations(pool),
        "gpuUnitsPerNode": derive.pool_units(spec, pool, pool.gpu.per_node),
        "maxGpuUnits": derive.pool_capacity(spec, pool),
        **names,
    }


# The engine drops a stack output whose value is null (the Python SDK leaves a top-level None out of the
# property map it sends: pulumi/runtime/rpc.py serialize_properties), so `pulumi stack output karpenter` would
# fail on a stack without Karpenter while the synth printed null. Every top-level output is therefore an object
# with fixed keys, null inside where a thing does not exist (nested nulls are kept: serialize_property).
KARPENTER_KEYS = ("namespace", "interruptionQueue", "nodeRoleArn", "controllerRoleArn")
MONITORING_KEYS = ("prometheus", "exporter", "serviceMonitor", "prometheusRule", "dashboard")


def monitoring_output(spec: StackSpec) -> dict[str, Any]:
    if not spec.addons.dcgm:
        return dict.fromkeys(MONITORING_KEYS)

    def ref(doc: dict[str, Any]) -> dict[str, str]:
        return {"namespace": doc["metadata"]["namespace"], "name": doc["metadata"]["name"]}

    ex = monitoring.exporter(spec)
    on = spec.monitoring.prometheus != "none"  # none: no ServiceMonitor, PrometheusRule or dashboard
    return {
        "prometheus": spec.monitoring.prometheus,
        "exporter": {"source": ex.source, "namespace": ex.namespace, "service": ex.job, "port": ex.port},
        "serviceMonitor": ref(monitoring.service_monitor(spec)) if on else None,
        "prometheusRule": ref(monitoring.prometheus_rule(spec)) if on else None,
        "dashboard": ref(monitoring.dashboard_configmap(spec)) if on else None,
    }


def stack_outputs(
    spec: StackSpec,
    pool_names: Mapping[str, Mapping[str, Any]],
    karpenter: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Every stack output. ``pool_names``: pool -> its provisioner's object names; ``karpenter``: the
    interruption queue and role ARNs when Karpenter runs."""
    return {
        "tenantNamespaces": sorted(t.name for t in spec.tenants),
        "gpuPools": sorted(p.name for p in spec.node_pools),
        "tenants": {t.name: tenant_output(spec, t) for t in sorted(spec.tenants, key=lambda t: t.name)},
        "pools": {
            p.name: pool_output(spec, p, pool_names.get(p.name, {}))
            for p in sorted(spec.node_pools, key=lambda p: p.name)
        },
        "karpenter": {k: (karpenter or {}).get(k) for k in KARPENTER_KEYS},
        "monitoring": monitoring_output(spec),
    }
