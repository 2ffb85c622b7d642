"""Scheduling and tenancy: tenant GPU quotas, critical tenants' capacity, priorities and gang scheduling."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pulumi_policy import (
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    StackValidationArgs,
    StackValidationPolicy,
)

from .common import (
    _GPU_POOL_TYPES,
    _KUBEFLOW_KINDS,
    ADVISORY,
    CRITICAL_LABEL,
    GPU_RESOURCE,
    JOB_KINDS,
    KUEUE_QUEUE_LABEL,
    MANDATORY,
    NAMESPACE,
    POOL_LABEL,
    PRIORITY_CLASS,
    RESOURCE_QUOTA,
    TENANT_LABEL,
    VOLCANO_GROUP_ANNOTATION,
    WORKLOAD_KINDS,
    TypedResourcePolicy,
    _get,
    _is_gpu_resource,
    _labels,
    _map,
    _meta,
    _num,
    _obj_name,
    _seq,
    _strs,
    gpu_containers,
    gpu_pools,
    is_gpu_quota_resource,
    k8s_group_kind,
    pod_templates,
    quantity,
)

# ---------------------------------------------------------------------------------- tenant quotas


def _stack_gpu_resources(resources: Sequence[PolicyResource]) -> set[str]:
    """GPU resource names the stack shows a pool advertises or a tenant can reach: every nvidia.com/gpu*
    and nvidia.com/mig-* name in any ResourceQuota, Kueue ClusterQueue or Volcano Queue, plus nvidia.com/gpu."""
    names = {GPU_RESOURCE}
    for r in resources:
        # by type first: the spec of a resource of any other type is never read (an unknown there during a
        # preview must not stop the policy)
        group, kind = k8s_group_kind(r.resource_type)
        if r.resource_type == RESOURCE_QUOTA:
            spec = _map(r.props.get("spec"))
            names.update(k.removeprefix("requests.").removeprefix("limits.") for k in _map(spec.get("hard")))
        elif group == "kueue.x-k8s.io" and kind == "ClusterQueue":
            spec = _map(r.props.get("spec"))
            for rg in _seq(spec.get("resourceGroups")):
                names.update(_strs(_map(rg).get("coveredResources")))
                for fl in _seq(_map(rg).get("flavors")):
                    names.update(_map(x).get("name") for x in _seq(_map(fl).get("resources")))
        elif group == "scheduling.volcano.sh" and kind == "Queue":
            spec = _map(r.props.get("spec"))
            for field in ("capability", "deserved", "guarantee"):
                names.update(_map(spec.get(field)))
                names.update(_map(_get(spec, field, "resource")))
    return {n for n in names if _is_gpu_resource(n)}


def _namespace_quotas(resources: Sequence[PolicyResource]) -> dict[Any, list[PolicyResource]]:
    """Namespace -> its ResourceQuotas that apply to every pod (no scopes); one pass over the stack."""
    out: dict[Any, list[PolicyResource]] = {}
    for r in resources:
        if r.resource_type != RESOURCE_QUOTA:
            continue
        spec = _map(r.props.get("spec"))
        if _seq(spec.get("scopes")) or spec.get("scopeSelector"):
            continue
        namespace = _meta(r.props).get("namespace")
        if isinstance(namespace, str):
            out.setdefault(namespace, []).append(r)
    return out


def _tenant_gpu_quota(args: StackValidationArgs, report: ReportViolation) -> None:
    required = sorted(_stack_gpu_resources(args.resources))
    quotas = _namespace_quotas(args.resources)
    for ns in args.resources:
        if ns.resource_type != NAMESPACE or not _labels(ns.props).get(TENANT_LABEL):
            continue
        name = _meta(ns.props).get("name") or ns.name
        capped: set[str] = set()
        for q in quotas.get(name, []) if isinstance(name, str) else []:
            capped.update(
                k.removeprefix("requests.") for k in _map(_get(q.props, "spec", "hard")) if k.startswith("requests.")
            )
        missing = [n for n in required if n not in capped]
        if missing:
            report(
                f"tenant namespace {name!r}: no ResourceQuota (without scopes) caps "
                f"{', '.join('requests.' + n for n in missing)}; GPU resources the stack advertises: "
                f"{', '.join(required)}. Uncapped, one tenant can take every such GPU.",
                ns.urn,
            )


tenant_gpu_quota = StackValidationPolicy(
    name="tenant-gpu-quota",
    description="Every tenant namespace has a ResourceQuota capping requests.nvidia.com/gpu and every other GPU "
    "resource name (MIG profiles, shared GPUs) the stack advertises.",
    enforcement_level=MANDATORY,
    validate=_tenant_gpu_quota,
    remediation_steps="Give the namespace a ResourceQuota with requests.<name> for each GPU resource (0 is a cap).",
)


@dataclass(frozen=True)
class _KueueIndex:
    """The stack's Kueue objects, indexed once: namespace -> ClusterQueues its LocalQueues point at,
    ClusterQueue -> flavors it gives a non-zero nominal GPU quota, ResourceFlavor -> pools it selects."""

    queues: dict[Any, set[Any]]
    flavors: dict[Any, set[Any]]
    pools: dict[Any, set[str]]

    @classmethod
    def of(cls, resources: Sequence[PolicyResource]) -> _KueueIndex:
        queues: dict[Any, set[Any]] = {}
        flavors: dict[Any, set[Any]] = {}
        pools: dict[Any, set[str]] = {}
        for r in resources:
            group, kind = k8s_group_kind(r.resource_type)
            if group != "kueue.x-k8s.io":
                continue
            name = _meta(r.props).get("name")
            if kind == "LocalQueue":
                namespace, queue = _meta(r.props).get("namespace"), _get(r.props, "spec", "clusterQueue")
                if isinstance(namespace, str) and isinstance(queue, str):
                    queues.setdefault(namespace, set()).add(queue)
            elif kind == "ClusterQueue" and isinstance(name, str):
                given = flavors.setdefault(name, set())
                for rg in _seq(_get(r.props, "spec", "resourceGroups")):
                    for fl in _seq(_map(rg).get("flavors")):
                        # GPU quota only: a borrow-only flavor (GPU nominalQuota 0) still carries the tenant's
                        # cpu and memory quota, which is no GPU capacity of its own
                        quotas = [
                            quantity(_map(x).get("nominalQuota"))
                            for x in _seq(_map(fl).get("resources"))
                            if is_gpu_quota_resource(_map(x).get("name"))
                        ]
                        flavor = _map(fl).get("name")
                        if any(q for q in quotas) and isinstance(flavor, str):
                            given.add(flavor)
            elif kind == "ResourceFlavor" and isinstance(name, str):
                pool = _map(_get(r.props, "spec", "nodeLabels")).get(POOL_LABEL)
                if pool:
                    pools.setdefault(name, set()).add(str(pool))
        return cls(queues, flavors, pools)

    def tenant_pools(self, namespace: str) -> set[str] | None:
        queues = self.queues.get(namespace, ()) if isinstance(namespace, str) else ()
        flavors = {f for q in queues for f in self.flavors.get(q, ())}
        return {p for f in flavors for p in self.pools.get(f, ())} or None


def tenant_pools(resources: Sequence[PolicyResource], namespace: str) -> set[str] | None:
    """Pools a tenant namespace gets GPU quota on through Kueue: LocalQueue -> ClusterQueue -> flavors with a
    non-zero nominal GPU quota -> ResourceFlavor nodeLabels[gpu-platform/pool]. None when Kueue shows nothing."""
    return _KueueIndex.of(resources).tenant_pools(namespace)


def _critical_tenant_capacity(args: StackValidationArgs, report: ReportViolation) -> None:
    pools = gpu_pools(args.resources)
    if not pools:
        return
    capacity: dict[str, set[str]] = {}
    for p in pools:
        capacity.setdefault(p.pool, set()).update(p.capacity)
    kueue: _KueueIndex | None = None  # built at the first critical tenant
    for ns in args.resources:
        if ns.resource_type != NAMESPACE or str(_labels(ns.props).get(CRITICAL_LABEL, "")).lower() != "true":
            continue
        name = _meta(ns.props).get("name") or ns.name
        if kueue is None:
            kueue = _KueueIndex.of(args.resources)
        reach = kueue.tenant_pools(name)
        basis = "its Kueue quotas" if reach is not None else "the stack's GPU pools (no Kueue quota found)"
        reach = {p for p in (reach if reach is not None else capacity) if p in capacity}
        if reach and all(capacity[p] <= {"spot"} for p in reach):
            report(
                f"critical tenant {name!r} only has spot GPU capacity ({basis}: {', '.join(sorted(reach))}); a spot "
                "reclaim can take all of it at once. Give it quota on an on-demand pool (or an on-demand fallback).",
                ns.urn,
            )


critical_tenant_capacity = StackValidationPolicy(
    name="critical-tenant-capacity",
    description="A tenant marked critical (namespace label gpu-platform/critical=true) does not depend on spot GPU "
    "capacity alone.",
    enforcement_level=ADVISORY,
    validate=_critical_tenant_capacity,
)


# -------------------------------------------------------------------------------------- priorities


def _single_default_priority_class(args: StackValidationArgs, report: ReportViolation) -> None:
    defaults = [r for r in args.resources if r.resource_type == PRIORITY_CLASS and r.props.get("globalDefault") is True]
    if len(defaults) > 1:
        names = sorted(_meta(r.props).get("name") or r.name for r in defaults)
        for r in defaults:
            report(
                f"{len(defaults)} PriorityClasses are globalDefault ({', '.join(names)}); at most one may be.", r.urn
            )


single_default_priority_class = StackValidationPolicy(
    name="single-default-priority-class",
    description="At most one PriorityClass of the stack is globalDefault.",
    enforcement_level=MANDATORY,
    validate=_single_default_priority_class,
)


def _gpu_workload_priority_class(args: ResourceValidationArgs, report: ReportViolation) -> None:
    templates = pod_templates(args.resource_type, args.props)
    spec = _map(args.props.get("spec"))
    group, kind = k8s_group_kind(args.resource_type)
    if group == "batch.volcano.sh" and spec.get("priorityClassName"):
        return  # a Volcano Job's priority applies to all its tasks
    if group == "kubeflow.org" and _get(spec, "runPolicy", "schedulingPolicy", "priorityClass"):
        return
    for t in templates:
        if gpu_containers(t.spec) and not t.spec.get("priorityClassName"):
            report(
                f"{kind} {_obj_name(args.props, args.name)}: {t.where} requests GPUs but sets no priorityClassName; "
                "it would run at the cluster default and could neither preempt nor be preempted in order. Use one "
                "of the platform's PriorityClasses (your tenant's ceiling or lower).",
                None,
            )


gpu_workload_priority_class = TypedResourcePolicy(
    kinds=WORKLOAD_KINDS,  # pod_templates gives [] for any other kind: nothing to judge
    name="gpu-workload-priority-class",
    description="GPU-requesting Pods, Deployments, Jobs and Volcano/Kubeflow jobs set a priorityClassName.",
    enforcement_level=MANDATORY,
    validate=_gpu_workload_priority_class,
)


# ------------------------------------------------------------------------------------ gang scheduling


def _gpu_job_gang_scheduling(args: ResourceValidationArgs, report: ReportViolation) -> None:
    group, kind = k8s_group_kind(args.resource_type)
    templates = pod_templates(args.resource_type, args.props)
    if not any(gpu_containers(t.spec) for t in templates):
        return
    props = args.props
    spec = _map(props.get("spec"))
    name = _obj_name(props, args.name)
    kueue = bool(_labels(props).get(KUEUE_QUEUE_LABEL))
    if group == "batch.volcano.sh" and kind == "Job":
        total = sum(t.replicas for t in templates)
        if total <= 1:
            return
        scheduler = spec.get("schedulerName", "volcano")
        min_available = spec.get("minAvailable")
        if scheduler != "volcano":
            report(f"Volcano Job {name}: schedulerName is {scheduler!r}; gang scheduling needs volcano.", None)
        if not isinstance(min_available, (int, float)) or int(min_available) != total:
            report(
                f"Volcano Job {name}: spec.minAvailable is {_num(min_available)} but its tasks have {total} replicas; "
                "set minAvailable to the replica total so the job starts whole or not at all.",
                None,
            )
        return
    if group == "batch" and kind == "Job":
        total = templates[0].replicas
    elif group == "kubeflow.org" and kind in _KUBEFLOW_KINDS:
        total = sum(t.replicas for t in templates)
    elif group == "jobset.x-k8s.io" and kind == "JobSet":
        total = sum(t.replicas for t in templates)
    else:
        return  # not a job (Pods, Deployments: not gangs)
    if total <= 1 or kueue:
        return
    volcano = all(t.spec.get("schedulerName") == "volcano" for t in templates)
    if volcano and group == "batch" and kind == "Job":
        group_name = _map(_meta(props).get("annotations")).get(VOLCANO_GROUP_ANNOTATION) or _map(
            _get(spec, "template", "metadata", "annotations")
        ).get(VOLCANO_GROUP_ANNOTATION)
        if group_name:
            return  # gang through the named PodGroup (its minMember must equal the parallelism)
    if volcano and group == "kubeflow.org":
        min_available = _get(spec, "runPolicy", "schedulingPolicy", "minAvailable")
        if isinstance(min_available, (int, float)) and int(min_available) == total:
            return
    report(
        f"{kind} {name} runs {total} GPU pods but is not gang-scheduled: partial starts hold GPUs while waiting for "
        f"peers (and can deadlock). Add the label {KUEUE_QUEUE_LABEL}: <local queue>, or schedule it with "
        "volcano and a minAvailable / PodGroup minMember equal to its pod count.",
        None,
    )


gpu_job_gang_scheduling = TypedResourcePolicy(
    kinds=JOB_KINDS,  # a Pod, Deployment or CronJob is no gang (the validation returns for them)
    name="gpu-job-gang-scheduling",
    description="Multi-pod GPU jobs are gang-scheduled: a Kueue queue-name label, or Volcano with minAvailable equal "
    "to the replica total.",
    enforcement_level=MANDATORY,
    validate=_gpu_job_gang_scheduling,
)


# Which resource types each policy reads (pack.TARGETS: for the README table and for tests).
TARGETS: dict[str, tuple[str, ...]] = {
    "tenant-gpu-quota": (NAMESPACE, RESOURCE_QUOTA, "Kueue ClusterQueue", "Volcano Queue"),
    "critical-tenant-capacity": (NAMESPACE, *_GPU_POOL_TYPES, "Kueue LocalQueue/ClusterQueue/ResourceFlavor"),
    "single-default-priority-class": (PRIORITY_CLASS,),
    "gpu-workload-priority-class": ("Pod, Deployment, StatefulSet, Job, CronJob, Volcano Job, Kubeflow jobs, JobSet",),
    "gpu-job-gang-scheduling": ("Job, Volcano Job, Kubeflow jobs, JobSet",),
}
