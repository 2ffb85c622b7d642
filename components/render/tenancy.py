"""Cloud-neutral tenancy: PriorityClasses, and per tenant a Namespace, a ResourceQuota and a LimitRange.

Per tenant this registers three objects: the namespace with Pod Security Admission labels, one
ResourceQuota that caps every GPU resource name the cluster advertises (0 where the tenant reaches no
such pool) and cpu/memory when given, and a LimitRange so pods without requests still get sane ones.

Priority ceilings cost no object per tenant: the namespace carries the PriorityClasses above its
tenant's ceiling in an annotation, and one cluster-wide ValidatingAdmissionPolicy refuses them there,
as pod priority, as a pod template's or a CronJob's job template's priority, as Kueue's
``kueue.x-k8s.io/priority-class`` label (Kueue orders and preempts workloads by that, so a ceiling on pods
alone would not hold) and in Kueue Workloads; it refuses the built-in ``system-*`` classes in every tenant
namespace.
"""

from __future__ import annotations

import pulumi

from ..plan import derive

# re-exported: what the tenants' objects are made of (components/plan/tenancy.py)
from ..plan.tenancy import (
    CRITICAL_LABEL as CRITICAL_LABEL,
    FORBIDDEN_PRIORITY_ANNOTATION as FORBIDDEN_PRIORITY_ANNOTATION,
    KUEUE_PRIORITY_LABEL as KUEUE_PRIORITY_LABEL,
    POOLS_ANNOTATION as POOLS_ANNOTATION,
    PRIORITY_CEILING_POLICY as PRIORITY_CEILING_POLICY,
    SHARED_POOLS_ANNOTATION as SHARED_POOLS_ANNOTATION,
    SYSTEM_PRIORITY_CLASSES as SYSTEM_PRIORITY_CLASSES,
    all_gpu_resources as all_gpu_resources,
    namespace_annotations as namespace_annotations,
    namespace_labels as namespace_labels,
    priority_ceiling_policy as priority_ceiling_policy,
    quota_hard as quota_hard,
    scheduler_label as scheduler_label,
)
from . import addon, k8s


class PriorityClasses(addon.Component):
    """The plan's PriorityClasses (``Plan.priority_classes``)."""

    TYPE = "gpu-platform:index:PriorityClasses"

    def build(self) -> None:
        child = self.child()
        self.names: list[str] = []
        for pc in self.plan.priority_classes:
            k8s.kube_object(
                f"priority-{pc.name}",
                "scheduling.k8s.io/v1",
                "PriorityClass",
                metadata={"name": pc.name, "labels": derive.MANAGED_BY},
                value=pc.value,
                preemptionPolicy=pc.preemption_policy,
                globalDefault=pc.global_default,
                description=pc.description,
                opts=child,
            )
            self.names.append(pc.name)
        self.register_outputs({"names": self.names})


class Tenancy(addon.Component):
    """Per tenant of the plan: its namespace (protected), GPU ResourceQuota and container defaults; the
    priority-ceiling admission policy. Reads the plan only (``Plan.tenants``, ``Plan.protect``)."""

    TYPE = "gpu-platform:index:Tenancy"

    def build(self) -> None:
        # Deleting a namespace deletes every workload and volume claim in it: removing a tenant from the stack
        # file (or destroying the stack) fails instead, until gpu-platform:protect.tenantNamespaces is false.
        # protect, not retainOnDelete: a retained namespace would live on without the quota and LimitRange
        # deleted with the tenant, and nobody would be told. The quota and LimitRange are protected with it: the
        # engine deletes them before the namespace that holds them, so with the namespace alone protected, a
        # removed tenant's `pulumi up` failed on the namespace after deleting its guards, leaving its workloads
        # running with no quota (seen under the real engine: tests/engine).
        ns_opts = self.child(protect=self.plan.protect["tenantNamespaces"])
        self.namespaces: dict[str, pulumi.Output[str]] = {}
        for tenant in self.plan.tenants.values():
            ns = k8s.kube_object(
                f"{tenant.name}-namespace",
                "v1",
                "Namespace",
                metadata={
                    "name": tenant.namespace,
                    "labels": dict(tenant.namespace_labels),
                    "annotations": dict(tenant.namespace_annotations),
                },
                opts=ns_opts,
            )
            ns_name = ns.metadata.apply(lambda m: m["name"])  # type: ignore[attr-defined]
            self.namespaces[tenant.name] = ns_name
            labels = {**derive.MANAGED_BY, derive.TENANT_LABEL: tenant.name}
            k8s.kube_object(
                f"{tenant.name}-gpu-quota",
                "v1",
                "ResourceQuota",
                metadata={"name": "gpu-quota", "namespace": ns_name, "labels": labels},
                spec={"hard": dict(tenant.quota_hard)},
                opts=ns_opts,
            )
            k8s.kube_object(
                f"{tenant.name}-defaults",
                "v1",
                "LimitRange",
                metadata={"name": "container-defaults", "namespace": ns_name, "labels": labels},
                spec={
                    "limits": [
                        {
                            "type": "Container",
                            # requests only: a default limit would be injected into containers that request
                            # more memory and set no limit, and the API server would refuse those pods
                            "defaultRequest": {"cpu": "250m", "memory": "512Mi"},
                        }
                    ]
                },
                opts=ns_opts,
            )
        if self.plan.tenants:
            # One policy for every tenant: hoarding by self-promotion to a higher class (or to a system-* class,
            # which every tenant is refused) is refused.
            k8s.admission_policy(
                "priority-ceiling", self, self.provider, PRIORITY_CEILING_POLICY, priority_ceiling_policy()
            )
        self.register_outputs({"namespaces": self.namespaces})
