"""What each tenant's namespace gets, as data: its labels (Pod Security, tenant, scheduler, critical) and
annotations (the PriorityClasses above its ceiling; a Volcano tenant's pools), its ResourceQuota's ``spec.hard``
(every GPU resource name the cluster advertises, 0 where it reaches no such pool), and the priority-ceiling
policy's spec. The objects made of them, and why they look so, are ``components/render/tenancy.py``'s."""

from __future__ import annotations

from collections.abc import Mapping

from ..spec.model import StackSpec, Tenant
from . import derive

FORBIDDEN_PRIORITY_ANNOTATION = "gpu-platform/forbidden-priority-classes"
# On Volcano tenants' namespaces: the pools its GPU pods may select, and those of them whose containers may ask
# for one unit at most (volcano.tenant_pods_policy reads both).
POOLS_ANNOTATION = "gpu-platform/pools"
SHARED_POOLS_ANNOTATION = "gpu-platform/one-unit-pools"
# Volcano's queue annotation, on pods and namespaces (volcano v1.15.1 staging/src/volcano.sh/apis/pkg/apis/scheduling/
# v1beta1/labels.go QueueNameAnnotationKey; what it does: plan/volcano.py ENABLED_ADMISSIONS)
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
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
        names.update(dra_quota_resources(spec))
    for pool in spec.node_pools:
        names.update(derive.units_per_gpu(spec, pool))
    return tuple(sorted(names))


def quota_hard(spec: StackSpec, tenant: Tenant, units: Mapping[str, int]) -> dict[str, str]:
    """The tenant's ResourceQuota ``spec.hard``: GPU caps ``units`` (the most the tenant can hold,
    ``ceilings.tenant_ceiling_units``: what Kueue or Volcano may admit for it, so it can start), cpu/memory when
    given, and per shared file system's StorageClass the storage and claims it may hold."""
    hard = {quota_key(name): str(units.get(name, 0)) for name in all_gpu_resources(spec)}
    if tenant.quota.cpu:
        hard["requests.cpu"] = tenant.quota.cpu
    if tenant.quota.memory:
        hard["requests.memory"] = tenant.quota.memory
    # its share of each shared file system's StorageClass (components/plan/storage.py), 0 where it has none
    from . import storage

    hard.update(storage.quota_entries(spec, tenant))
    return dict(sorted(hard.items()))


def namespace_labels(tenant: Tenant) -> dict[str, str]:
    labels = {**derive.MANAGED_BY, derive.TENANT_LABEL: tenant.name, **psa_labels(tenant.pod_security)}
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
        # the queue Volcano's /podgroups/mutate gives a PodGroup created in "default" here (volcano.ENABLED_ADMISSIONS)
        out[VOLCANO_QUEUE_ANNOTATION] = tenant.name
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


# -------------------------------------------------------------------- namespace labels and quota keys

PSA_VERSION = "latest"


def psa_labels(enforce: str, audit: str = "restricted") -> dict[str, str]:
    """Pod Security Admission labels: ``enforce`` the level, ``audit``/``warn`` at ``audit``."""
    return {
        "pod-security.kubernetes.io/enforce": enforce,
        "pod-security.kubernetes.io/enforce-version": PSA_VERSION,
        "pod-security.kubernetes.io/audit": audit,
        "pod-security.kubernetes.io/warn": audit,
    }


DRA_QUOTA_SUFFIX = ".deviceclass.resource.k8s.io/devices"  # corev1.ResourceClaimsPerClass


def quota_key(name: str) -> str:
    """ResourceQuota ``spec.hard`` key of a scheduler resource: ``requests.<name>`` for extended resources, the
    per-DeviceClass device count for DRA resources."""
    if name in derive.DRA_CLASS_OF:
        return derive.DRA_CLASS_OF[name] + DRA_QUOTA_SUFFIX
    return f"requests.{name}"


def dra_quota_resources(spec: StackSpec) -> list[str]:
    """Scheduler resources a DRA tenant's quota caps: the DRA classes (both, so a tenant without MIG pools
    cannot claim MIG devices either: 0 is a cap)."""
    return sorted({derive.DRA_GPU_RESOURCE, derive.DRA_MIG_RESOURCE})
