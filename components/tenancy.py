"""Cloud-neutral tenancy: PriorityClasses, and per tenant a Namespace, a ResourceQuota and a LimitRange.

Per tenant this registers three objects (four when the tenant's priority ceiling is below the top
class): the namespace with Pod Security Admission labels, one ResourceQuota that caps every GPU
resource name the cluster advertises (0 where the tenant has no quota), cpu/memory when given, and
the pods of PriorityClasses above the tenant's ceiling, and a LimitRange so pods without requests
still get sane ones.
"""

from __future__ import annotations

import pulumi

from components import derive
from components.spec import StackSpec, Tenant

PSA_VERSION = "latest"
# On the namespaces of tenants marked critical; the policy pack's critical-tenant-capacity reads it.
CRITICAL_LABEL = "gpu-platform/critical"


def all_gpu_resources(spec: StackSpec) -> list[str]:
    """Every GPU resource name any pool advertises (always including nvidia.com/gpu)."""
    names = {derive.GPU_RESOURCE}
    for pool in spec.node_pools:
        names.update(derive.units_per_gpu(spec, pool))
    return sorted(names)


def quota_hard(spec: StackSpec, tenant: Tenant) -> dict[str, str]:
    """The tenant's ResourceQuota ``spec.hard``: GPU caps from ``derive.tenant_quota_units`` (the same
    derivation Kueue's borrowing limits and Volcano's capability use), cpu/memory when given."""
    units = derive.tenant_quota_units(spec, tenant)
    hard = {f"requests.{name}": str(units.get(name, 0)) for name in all_gpu_resources(spec)}
    if tenant.quota.cpu:
        hard["requests.cpu"] = tenant.quota.cpu
    if tenant.quota.memory:
        hard["requests.memory"] = tenant.quota.memory
    return dict(sorted(hard.items()))


def namespace_labels(tenant: Tenant) -> dict[str, str]:
    level = tenant.pod_security
    labels = {
        **derive.MANAGED_BY,
        derive.TENANT_LABEL: tenant.name,
        "pod-security.kubernetes.io/enforce": level,
        "pod-security.kubernetes.io/enforce-version": PSA_VERSION,
        "pod-security.kubernetes.io/audit": "restricted",
        "pod-security.kubernetes.io/warn": "restricted",
    }
    if tenant.critical:
        labels[CRITICAL_LABEL] = "true"
    return labels


class PriorityClasses(pulumi.ComponentResource):
    TYPE = "gpu-platform:index:PriorityClasses"

    def __init__(self, name: str, spec: StackSpec, provider: pulumi.ProviderResource, opts=None):
        super().__init__(self.TYPE, name, None, opts)
        from pulumi_kubernetes.scheduling.v1 import PriorityClass

        child = pulumi.ResourceOptions(parent=self, provider=provider)
        self.names: list[str] = []
        for pc in spec.priority_classes:
            PriorityClass(
                f"priority-{pc.name}",
                metadata={"name": pc.name, "labels": derive.MANAGED_BY},
                value=pc.value,
                preemption_policy=pc.preemption_policy,
                global_default=pc.global_default,
                description=pc.description or f"gpu-platform priority tier {pc.name}",
                opts=child,
            )
            self.names.append(pc.name)
        self.register_outputs({"names": self.names})


class Tenancy(pulumi.ComponentResource):
    TYPE = "gpu-platform:index:Tenancy"

    def __init__(
        self,
        name: str,
        spec: StackSpec,
        provider: pulumi.ProviderResource,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__(self.TYPE, name, None, opts)
        from pulumi_kubernetes.core.v1 import LimitRange, Namespace, ResourceQuota

        child = pulumi.ResourceOptions(parent=self, provider=provider)
        self.namespaces: dict[str, pulumi.Output[str]] = {}
        for tenant in spec.tenants:
            ns = Namespace(
                f"{tenant.name}-namespace",
                metadata={"name": tenant.name, "labels": namespace_labels(tenant)},
                opts=child,
            )
            ns_name = ns.metadata.apply(lambda m: m.name)
            self.namespaces[tenant.name] = ns_name
            labels = {**derive.MANAGED_BY, derive.TENANT_LABEL: tenant.name}
            ResourceQuota(
                f"{tenant.name}-gpu-quota",
                metadata={"name": "gpu-quota", "namespace": ns_name, "labels": labels},
                spec={"hard": quota_hard(spec, tenant)},
                opts=child,
            )
            excluded = derive.priority_ceiling_excluded(spec, tenant)
            if excluded:
                # No pods of classes above the tenant's ceiling: hoarding by self-promotion is refused.
                ResourceQuota(
                    f"{tenant.name}-priority-ceiling",
                    metadata={"name": "priority-ceiling", "namespace": ns_name, "labels": labels},
                    spec={
                        "hard": {"pods": "0"},
                        "scopeSelector": {
                            "matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": excluded}]
                        },
                    },
                    opts=child,
                )
            LimitRange(
                f"{tenant.name}-defaults",
                metadata={"name": "container-defaults", "namespace": ns_name, "labels": labels},
                spec={
                    "limits": [
                        {
                            "type": "Container",
                            "defaultRequest": {"cpu": "250m", "memory": "512Mi"},
                            "default": {"memory": "2Gi"},
                        }
                    ]
                },
                opts=child,
            )
        self.register_outputs({"namespaces": self.namespaces})
