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

from components import addon, derive, dra, k8s
from components.spec import StackSpec, Tenant

FORBIDDEN_PRIORITY_ANNOTATION = "gpu-platform/forbidden-priority-classes"
# On Volcano tenants' namespaces: the pools its GPU pods may select, and those of them whose containers may ask
# for one unit at most (volcano.tenant_pods_policy reads both).
POOLS_ANNOTATION = "gpu-platform/pools"
SHARED_POOLS_ANNOTATION = "gpu-platform/one-unit-pools"
PRIORITY_CEILING_POLICY = "gpu-platform-priority-ceiling"
KUEUE_PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
# On the namespaces of tenants marked critical; the policy pack's critical-tenant-capacity reads it.
CRITICAL_LABEL = "gpu-platform/critical"


def all_gpu_resources(spec: StackSpec) -> list[str]:
    """Every GPU resource name any pool advertises (always including nvidia.com/gpu)."""
    return list(_all_gpu_resources(spec))


@derive.per_spec
def _all_gpu_resources(spec: StackSpec) -> tuple[str, ...]:  # read per tenant: computed once per spec
    names = {derive.GPU_RESOURCE}
    if derive.dra(spec):  # nvidia.com/gpu stays capped at 0: no extended-resource path around the claims
        names.update(dra.quota_resources(spec))
    for pool in spec.node_pools:
        names.update(derive.units_per_gpu(spec, pool))
    return tuple(sorted(names))


def quota_hard(spec: StackSpec, tenant: Tenant) -> dict[str, str]:
    """The tenant's ResourceQuota ``spec.hard``: GPU caps from ``derive.tenant_quota_units`` (the same
    derivation Kueue's borrowing limits and Volcano's capability use), cpu/memory when given."""
    units = derive.tenant_quota_units(spec, tenant)
    hard = {dra.quota_key(name): str(units.get(name, 0)) for name in all_gpu_resources(spec)}
    if tenant.quota.cpu:
        hard["requests.cpu"] = tenant.quota.cpu
    if tenant.quota.memory:
        hard["requests.memory"] = tenant.quota.memory
    return dict(sorted(hard.items()))


def namespace_labels(tenant: Tenant) -> dict[str, str]:
    labels = {**derive.MANAGED_BY, derive.TENANT_LABEL: tenant.name, **k8s.psa_labels(tenant.pod_security)}
    if tenant.critical:
        labels[CRITICAL_LABEL] = "true"
    return labels


def scheduler_label(spec: StackSpec, tenant: Tenant) -> dict[str, str]:
    scheduler = derive.tenant_scheduler(spec, tenant)
    return {derive.SCHEDULER_LABEL: scheduler} if scheduler else {}


def namespace_annotations(spec: StackSpec, tenant: Tenant) -> dict[str, str]:
    excluded = derive.priority_ceiling_excluded(spec, tenant)
    out = {FORBIDDEN_PRIORITY_ANNOTATION: ",".join(excluded)} if excluded else {}
    if spec.addons.volcano and derive.tenant_scheduler(spec, tenant) == "volcano":
        pools = sorted(tenant.gpu_quota)
        if pools:  # without one, every GPU pod of the tenant is refused (the policy's pool list is empty)
            out[POOLS_ANNOTATION] = ",".join(pools)
        one_unit = [p for p in pools if derive.shares_whole_gpu_requests(spec, spec.pool(p))]
        if one_unit:
            out[SHARED_POOLS_ANNOTATION] = ",".join(one_unit)
    return dict(sorted(out.items()))


# Built into every API server (k8s.io/kubernetes pkg/apis/scheduling SystemPriorityClasses: 2000001000 and
# 2000000000), above every class a stack may declare (spec: at most 1e9). Nothing stops a namespace from using
# them unless the cluster limits them (GKE does, with its critical-pods quota rule; EKS does not), so in tenant
# namespaces the ceiling policy refuses them for every tenant, with or without a ceiling of its own.
SYSTEM_PRIORITY_CLASSES = ("system-cluster-critical", "system-node-critical")


def priority_ceiling_policy() -> dict:
    """ValidatingAdmissionPolicy spec: in a tenant namespace, nothing may name a ``system-*`` PriorityClass or
    one the namespace's ``gpu-platform/forbidden-priority-classes`` annotation lists.

    The namespace is read in a variable, not in a matchCondition: kube-apiserver evaluates matchConditions
    without ``namespaceObject`` (k8s.io/apiserver v0.35.4 pkg/admission/plugin/webhook/matchconditions/
    matcher.go:82-85), so a condition on it is always false and the policy would never deny. Variables and
    validations do get it (pkg/admission/plugin/policy/validating/validator.go). A namespace without the
    annotation forbids only the system classes: the policy never fails closed for a tenant without a ceiling.
    """
    annotations = "namespaceObject.metadata.annotations"
    forbidden = "variables.forbidden"
    template = "object.spec.template.spec"
    cron = "object.spec.jobTemplate.spec.template.spec"
    system = ", ".join(f"'{c}'" for c in SYSTEM_PRIORITY_CLASSES)
    return {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "namespaceSelector": {"matchExpressions": [{"key": derive.TENANT_LABEL, "operator": "Exists"}]},
            "resourceRules": [
                {
                    "apiGroups": ["*"],
                    "apiVersions": ["*"],
                    "resources": ["*"],
                    "operations": ["CREATE", "UPDATE"],
                    "scope": "Namespaced",
                }
            ],
        },
        "variables": [
            {
                "name": "forbidden",
                "expression": f"[{system}] + (namespaceObject != null && has({annotations}) && "
                f"'{FORBIDDEN_PRIORITY_ANNOTATION}' in {annotations} ? "
                f"{annotations}['{FORBIDDEN_PRIORITY_ANNOTATION}'].split(',') : [])",
            }
        ],
        "validations": [
            {
                "expression": f"!has(object.metadata.labels) || !('{KUEUE_PRIORITY_LABEL}' in object.metadata.labels)"
                f" || !(object.metadata.labels['{KUEUE_PRIORITY_LABEL}'] in {forbidden})",
                "messageExpression": f"'{KUEUE_PRIORITY_LABEL} ' + object.metadata.labels['{KUEUE_PRIORITY_LABEL}']"
                " + ' is above this tenant\\'s priority ceiling'",
                "reason": "Forbidden",
            },
            {
                "expression": "request.kind.group != '' || request.kind.kind != 'Pod' || "
                f"!has(object.spec.priorityClassName) || !(object.spec.priorityClassName in {forbidden})",
                "messageExpression": "'PriorityClass ' + object.spec.priorityClassName + "
                "' is above this tenant\\'s priority ceiling'",
                "reason": "Forbidden",
            },
            {
                # Jobs, Deployments, StatefulSets: refused before Kueue could admit them at that priority
                "expression": f"!has(object.spec) || !has(object.spec.template) || !has({template}) || "
                f"!has({template}.priorityClassName) || !({template}.priorityClassName in {forbidden})",
                "messageExpression": f"'PriorityClass ' + {template}.priorityClassName + "
                "' in the pod template is above this tenant\\'s priority ceiling'",
                "reason": "Forbidden",
            },
            {
                # CronJobs keep theirs one level deeper; refused at creation, not each time a Job is made
                "expression": f"!has(object.spec) || !has(object.spec.jobTemplate) || "
                "!has(object.spec.jobTemplate.spec) || !has(object.spec.jobTemplate.spec.template) || "
                f"!has({cron}) || !has({cron}.priorityClassName) || !({cron}.priorityClassName in {forbidden})",
                "messageExpression": f"'PriorityClass ' + {cron}.priorityClassName + "
                "' in the job template is above this tenant\\'s priority ceiling'",
                "reason": "Forbidden",
            },
            {
                # Every other kind (JobSet, PyTorchJob, RayJob, LeaderWorkerSet...) keeps its pod templates
                # elsewhere; Kueue resolves their priority into the Workload it creates, which is refused here, so
                # the job stays suspended instead of being admitted (and preempting) at a forbidden priority.
                "expression": "request.kind.group != 'kueue.x-k8s.io' || request.kind.kind != 'Workload' || "
                f"!has(object.spec.priorityClassRef) || !(object.spec.priorityClassRef.name in {forbidden})",
                "messageExpression": "'priority class ' + object.spec.priorityClassRef.name + "
                "' is above this tenant\\'s priority ceiling'",
                "reason": "Forbidden",
            },
        ],
    }


class PriorityClasses(addon.Component):
    TYPE = "gpu-platform:index:PriorityClasses"

    def build(self, spec: StackSpec) -> None:
        child = self.child()
        self.names: list[str] = []
        for pc in spec.priority_classes:
            k8s.kube_object(
                f"priority-{pc.name}",
                "scheduling.k8s.io/v1",
                "PriorityClass",
                metadata={"name": pc.name, "labels": derive.MANAGED_BY},
                value=pc.value,
                preemptionPolicy=pc.preemption_policy,
                globalDefault=pc.global_default,
                description=pc.description or f"gpu-platform priority tier {pc.name}",
                opts=child,
            )
            self.names.append(pc.name)
        self.register_outputs({"names": self.names})


class Tenancy(addon.Component):
    """Per tenant: its namespace (protected), GPU ResourceQuota and container defaults; the priority-ceiling
    admission policy."""

    TYPE = "gpu-platform:index:Tenancy"

    def build(self, spec: StackSpec) -> None:
        # Deleting a namespace deletes every workload and volume claim in it: removing a tenant from the stack
        # file (or destroying the stack) fails instead, until gpu-platform:protect.tenantNamespaces is false.
        # protect, not retainOnDelete: a retained namespace would live on without the quota and LimitRange
        # deleted with the tenant, and nobody would be told. The quota and LimitRange are protected with it: the
        # engine deletes them before the namespace that holds them, so with the namespace alone protected, a
        # removed tenant's `pulumi up` failed on the namespace after deleting its guards, leaving its workloads
        # running with no quota (seen under the real engine: tests/engine).
        ns_opts = self.child(protect=spec.protect.tenant_namespaces)
        self.namespaces: dict[str, pulumi.Output[str]] = {}
        for tenant in spec.tenants:
            ns = k8s.kube_object(
                f"{tenant.name}-namespace",
                "v1",
                "Namespace",
                metadata={
                    "name": tenant.name,
                    "labels": {**namespace_labels(tenant), **scheduler_label(spec, tenant)},
                    "annotations": namespace_annotations(spec, tenant),
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
                spec={"hard": quota_hard(spec, tenant)},
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
        if spec.tenants:
            # One policy for every tenant: hoarding by self-promotion to a higher class (or to a system-* class,
            # which every tenant is refused) is refused.
            k8s.admission_policy(
                "priority-ceiling", self, self.provider, PRIORITY_CEILING_POLICY, priority_ceiling_policy()
            )
        self.register_outputs({"namespaces": self.namespaces})
