"""What a fleet decides (pure): Kueue's MultiKueue across stacks (issue 43). ``Plan.fleet`` on the manager stack,
``Plan.fleet_worker`` on a worker stack; the objects are ``components/render/fleet.py``'s, the rules across the
stacks ``components/plan/fleet_rules.py``'s.

On the manager: the ``multiKueue`` section of its Kueue configuration, one MultiKueueCluster per worker (its
kubeconfig Secret filled from the worker stack's secret output), one MultiKueueConfig and one AdmissionCheck
(controller ``kueue.x-k8s.io/multikueue``) per tenant, listing the tenant's workers in its order of preference,
and per tenant a namespace, a ClusterQueue with that check and a LocalQueue. The ClusterQueue's GPU quota is the
fleet-wide one: by default the sum of the tenant's nominal quota on its workers, which is what Kueue's concept
page recommends ("the quota in the manager cluster should equal the total quota available in all worker
clusters", kueue v0.19.2 site/content/en/docs/concepts/multikueue.md).

On a worker: the ServiceAccount the manager acts as, a ClusterRole with exactly the verbs Kueue's setup script
grants for the dispatched kinds (kueue v0.19.2 site/static/examples/multikueue/create-multikueue-kubeconfig.sh),
its binding, and the token Secret (``FleetCredential``). The worker's namespaces and LocalQueues are its own
tenants' (the same entries: the rules require every dispatched tenant on every worker it is dispatched to).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ..data import versions
from ..spec.model import StackSpec
from . import derive, fleet_reset
from .kueue import DISPATCHERS as DISPATCHERS, canonical_quantity, multikueue_config

MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
KUEUE_API = versions.KUEUE_API
FLAVOR = "fleet"  # the manager's one ResourceFlavor: it rations, the workers' flavors place
KUEUE_NAMESPACE = "kueue-system"
MANAGER_SA = "multikueue-manager"  # on every worker
DEFAULT_CPU_QUOTA = "10k"  # as plan/kueue.py: cpu and memory are rationed by each worker, GPUs by the fleet too
DEFAULT_MEMORY_QUOTA = "64Ti"
KUBECONFIG_KEY = "kubeconfig"  # the key Kueue reads of a MultiKueueCluster's Secret (setup_multikueue.md)
OUTPUT_KUBECONFIG = "multikueueKubeconfig"  # the worker stack's secret output
OUTPUT_FACTS = "fleetWorker"  # the worker stack's plain output: what the manager checks at deploy
REMOVAL_POLICY = "gpu-platform-fleet-worker-removal"  # the manager's ValidatingAdmissionPolicy (removal_policy)
RETIRED_PARAMS = (
    "gpu-platform-fleet-retired-workers"  # its params: a ConfigMap in kueue-system, a key per retired worker
)
ROTATION_WARN_DAYS = 14
MAX_CREDENTIAL_DAYS = 90

_VERBS = ["create", "delete", "get", "list", "watch"]
# kind -> the ClusterRole rules the manager needs for it on a worker (create-multikueue-kubeconfig.sh, v0.19.2)
KIND_RULES: dict[str, tuple[dict[str, Any], ...]] = {
    "batch/job": (
        {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": _VERBS},
        {"apiGroups": ["batch"], "resources": ["jobs/status"], "verbs": ["get"]},
    ),
    "jobset.x-k8s.io/jobset": (
        {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": _VERBS},
        {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets/status"], "verbs": ["get"]},
    ),
}
# what every fleet needs: the Workloads it copies and mirrors, the queues it watches (same script)
BASE_RULES: tuple[dict[str, Any], ...] = (
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": [*_VERBS, "update", "patch"]},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues", "localqueues"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads/status"], "verbs": ["get", "patch", "update"]},
)
# The Kueue integrations with a MultiKueue adapter (kueue v0.19.2 pkg/controller/jobs/*/*_multikueue_adapter.go; not
# deployment, whose pods the pod integration manages). The manager's Kueue watches each one it manages on every worker
# (cmd/kueue/main.go: GetMultiKueueAdapters of integrations.frameworks; multikueuecluster.go establishes a watch per
# adapter and marks the cluster inactive when one is forbidden): a manager manages only the fleet's kinds
# (fleet_rules.fleet_manager_runs_kueue; tests/sched/test_fleet_multikueue.py found the first grant short of it).
MULTIKUEUE_ADAPTERS = frozenset(
    {
        "batch/job",
        "pod",
        "statefulset",
        "jobset.x-k8s.io/jobset",
        "leaderworkerset.x-k8s.io/leaderworkerset",
        "kubeflow.org/pytorchjob",
        "kubeflow.org/mpijob",
        "kubeflow.org/tfjob",
        "kubeflow.org/jaxjob",
        "trainer.kubeflow.org/trainjob",
        "ray.io/rayjob",
        "ray.io/raycluster",
        "ray.io/rayservice",
    }
)
# kind -> the worker add-on that installs its CRD and controller (None: built in)
KIND_OPERATOR = {"batch/job": None, "jobset.x-k8s.io/jobset": "jobset"}


def _freeze(d: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(d))


@dataclass(frozen=True)
class WorkerPlan:
    """A worker as the manager sees it."""

    name: str  # its MultiKueueCluster
    stack: str  # organization/project/stack
    cloud: str
    secret: str  # the kubeconfig Secret in the manager's kueue-system
    retired: bool  # kept connected until its workloads finish; not protected
    kueue_version: str
    kinds: tuple[str, ...]  # kinds it runs (its operators and Kueue integrations)
    tenants: tuple[str, ...]  # its Kueue tenants
    tenant_units: Mapping[str, Mapping[str, int]]  # tenant -> resource -> nominal units there
    capacity_units: Mapping[str, int]  # resource -> units of every pool at its maximum size
    gpus: int  # physical GPUs of every pool at its maximum size
    rotate_by: str  # its credential's rotation date
    cost: Mapping[str, Any]  # its cost report's total (plan/cost.py report_of): hourly USD at min and max size


@dataclass(frozen=True)
class FleetTenantPlan:
    """A fleet tenant on the manager: its namespace, the workers it dispatches to and its admission check."""

    name: str
    namespace: str
    namespace_labels: Mapping[str, str]
    workers: tuple[str, ...]  # in order of preference (the MultiKueueConfig's clusters)
    check: str  # its AdmissionCheck and MultiKueueConfig
    local_queue: str
    quota: Mapping[str, int]  # resource -> fleet-wide units (the manager ClusterQueue's nominal quota)
    worker_units: Mapping[str, Mapping[str, int]]  # worker -> resource -> units there
    cluster_queue_spec: Mapping[str, Any]
    multikueue_config_spec: Mapping[str, Any]
    admission_check_spec: Mapping[str, Any]


@dataclass(frozen=True)
class FleetPlan:
    """The manager's side."""

    kinds: tuple[str, ...]
    multikueue: Mapping[str, Any]  # the Kueue configuration's multiKueue section
    workers: Mapping[str, WorkerPlan]
    tenants: Mapping[str, FleetTenantPlan]
    reset: fleet_reset.ResetPlan | None = None  # the lost-worker reset (plan/fleet_reset.py; None: turned off)


@dataclass(frozen=True)
class FleetWorkerPlan:
    """The worker's side: the manager's identity here and its credential."""

    manager: str
    namespace: str
    service_account: str
    cluster_role: str
    rules: tuple[Mapping[str, Any], ...]
    token_secret: str
    generation: int
    rotate_by: str
    endpoint: str | None  # None: the cluster's own endpoint
    kinds: tuple[str, ...]
    draining: bool
    facts: Mapping[str, Any]  # the worker stack's plain fleetWorker output: what the manager checks at deploy


def worker_kinds(wspec: StackSpec) -> tuple[str, ...]:
    """The kinds a worker can run for a fleet: built in, or with its operator, and in its Kueue integrations."""
    out = []
    for kind, addon in KIND_OPERATOR.items():
        installed = addon is None or bool(getattr(wspec.addons, addon))
        if installed and kind in wspec.scheduling.kueue_integrations:
            out.append(kind)
    return tuple(out)


def worker_plan_of(spec: StackSpec, name: str, build_plan: Callable[[StackSpec, str], Any]) -> WorkerPlan | None:
    """The worker ``name`` from its attached spec (None when its stack file could not be read); ``build_plan``:
    ``plan.build`` (passed in: the plan stage imports this module)."""
    from . import cost

    f = spec.fleet
    assert f is not None
    wspec = f.worker_spec(name)
    if wspec is None:
        return None
    w = f.worker(name)
    wp = build_plan(wspec, w.stack.rsplit("/", 1)[-1])
    capacity: dict[str, int] = {}
    for p in wp.pools.values():
        for res, units in p.max_units.items():
            capacity[res] = capacity.get(res, 0) + units
    return WorkerPlan(
        name=name,
        stack=w.stack,
        cloud=wspec.cloud,
        secret=f"multikueue-{name}",
        retired=name in f.retired_workers,
        kueue_version=versions.for_spec(versions.KUEUE, wspec).version,
        kinds=worker_kinds(wspec),
        tenants=tuple(t.name for t in wp.tenants.values() if t.cluster_queue),
        tenant_units=_freeze({t.name: _freeze(dict(t.gpu_quota)) for t in wp.tenants.values() if t.cluster_queue}),
        capacity_units=_freeze(dict(sorted(capacity.items()))),
        gpus=sum(p.max_gpus for p in wp.pools.values()),
        rotate_by=wspec.fleet_worker.credential.rotate_by if wspec.fleet_worker else "",
        cost=_freeze(cost.report_of(wp)["total"]),
    )


def fleet_quota(spec: StackSpec, tenant_name: str, workers: Mapping[str, WorkerPlan]) -> dict[str, int]:
    """resource -> the tenant's fleet-wide units: its ``gpuQuota`` where given, else the sum over its workers."""
    f = spec.fleet
    assert f is not None
    t = next(t for t in f.tenants if t.name == tenant_name)
    summed: dict[str, int] = {}
    for w in t.workers:
        for res, units in (workers[w].tenant_units.get(tenant_name, {}) if w in workers else {}).items():
            summed[res] = summed.get(res, 0) + units
    if t.gpu_quota is not None:
        return dict(sorted(t.gpu_quota.items()))
    return dict(sorted(summed.items()))


def _quantity(n: int) -> str:
    return canonical_quantity(n)


def tenant_plan(spec: StackSpec, name: str, workers: Mapping[str, WorkerPlan]) -> FleetTenantPlan:
    f = spec.fleet
    assert f is not None
    t = next(t for t in f.tenants if t.name == name)
    quota = fleet_quota(spec, name, workers)
    check = f"fleet-{name}"
    covered = ["cpu", "memory", *quota]
    resources = [
        {"name": "cpu", "nominalQuota": DEFAULT_CPU_QUOTA},
        {"name": "memory", "nominalQuota": DEFAULT_MEMORY_QUOTA},
        *({"name": r, "nominalQuota": _quantity(u)} for r, u in quota.items()),
    ]
    labels = {
        **derive.MANAGED_BY,
        derive.TENANT_LABEL: name,
        derive.SCHEDULER_LABEL: "kueue",  # the manager's Kueue manages the namespace (managedJobsNamespaceSelector)
        "pod-security.kubernetes.io/enforce": "restricted",  # nothing runs on the manager: its Jobs stay suspended
    }
    cq = {
        "namespaceSelector": {"matchLabels": {derive.TENANT_LABEL: name, "kubernetes.io/metadata.name": name}},
        "queueingStrategy": spec.scheduling.queueing_strategy,
        "resourceGroups": [{"coveredResources": covered, "flavors": [{"name": FLAVOR, "resources": resources}]}],
        "admissionChecksStrategy": {"admissionChecks": [{"name": check, "onFlavors": [FLAVOR]}]},
        # the workers preempt, each in its own queues; the manager would evict a workload running on a worker to
        # free fleet quota, and re-run it from scratch elsewhere
        "preemption": {"withinClusterQueue": "Never", "reclaimWithinCohort": "Never"},
    }
    return FleetTenantPlan(
        name=name,
        namespace=name,
        namespace_labels=_freeze(labels),
        workers=tuple(t.workers),
        check=check,
        local_queue=spec.scheduling.local_queue_name,
        quota=_freeze(quota),
        worker_units=_freeze(
            {w: _freeze(dict(workers[w].tenant_units.get(name, {}))) for w in t.workers if w in workers}
        ),
        cluster_queue_spec=_freeze(cq),
        multikueue_config_spec=_freeze({"clusters": list(t.workers)}),
        admission_check_spec=_freeze(
            {
                "controllerName": MULTIKUEUE_CONTROLLER,
                "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": check},
            }
        ),
    )


def build(spec: StackSpec, build_plan: Callable[[StackSpec, str], Any]) -> FleetPlan | None:
    """The manager's fleet (None: not a manager). Workers whose stack file was not read are left out: their
    problems stop the load before any plan is built."""
    f = spec.fleet
    if f is None:
        return None
    workers = {w.name: wp for w in f.workers if (wp := worker_plan_of(spec, w.name, build_plan)) is not None}
    tenants = {t.name: tenant_plan(spec, t.name, workers) for t in f.tenants}
    return FleetPlan(
        kinds=tuple(f.kinds),
        multikueue=_freeze(multikueue_config(spec)),
        workers=_freeze(workers),
        tenants=_freeze(tenants),
        reset=fleet_reset.build(spec, tuple(t.namespace for t in tenants.values()), tuple(f.kinds)),
    )


def cluster_role_rules(kinds: tuple[str, ...]) -> tuple[dict[str, Any], ...]:
    """Exactly what the manager needs on a worker for ``kinds``: no pods, no secrets, nothing cluster-wide else."""
    return tuple(r for k in kinds for r in KIND_RULES[k]) + BASE_RULES


def worker_build(spec: StackSpec) -> FleetWorkerPlan | None:
    """The worker's side (None: not a worker). It grants the kinds it runs (``worker_kinds``); the manager's rules
    refuse a fleet that dispatches a kind a worker does not run, so the grant is never short."""
    w = spec.fleet_worker
    if w is None:
        return None
    kinds = worker_kinds(spec)
    manager = w.manager.rsplit("/", 1)[-1]
    return FleetWorkerPlan(
        manager=w.manager,
        namespace=KUEUE_NAMESPACE,
        service_account=MANAGER_SA,
        cluster_role=f"{MANAGER_SA}-{manager}",
        rules=tuple(_freeze(r) for r in cluster_role_rules(kinds)),
        token_secret=f"{MANAGER_SA}-token-{w.credential.generation}",
        generation=w.credential.generation,
        rotate_by=w.credential.rotate_by,
        endpoint=w.endpoint,
        kinds=kinds,
        draining=w.draining,
        facts=_freeze(
            {
                "manager": w.manager,
                "kinds": list(kinds),
                "kueueVersion": versions.for_spec(versions.KUEUE, spec).version,
                "tenants": [t.name for t in spec.tenants],
                "rotateBy": w.credential.rotate_by,
                "generation": w.credential.generation,
                "draining": w.draining,
            }
        ),
    )


def retired_params(p: FleetPlan) -> dict[str, str]:
    """The removal policy's params (the ConfigMap ``RETIRED_PARAMS``'s data): one key per retired worker, exactly."""
    return {w.name: "retired" for w in sorted(p.workers.values(), key=lambda w: w.name) if w.retired}


REMOVAL_MESSAGE = (
    "Kueue would re-run what runs there from scratch elsewhere. Put it back, set fleetWorker.draining true in its "
    "stack and pulumi up that, list it in fleet.retiredWorkers here and pulumi up, wait for its workloads to "
    "finish, then remove it (docs/concepts/fleet.md)"
)


def removal_policy() -> dict[str, Any]:
    """ValidatingAdmissionPolicy spec: an UPDATE of one of the platform's MultiKueueConfigs may drop a cluster only
    when that worker is retired (a key of the params ConfigMap, ``retired_params``).

    Why the API server and not the deploy: a MultiKueueConfig without the cluster a workload was admitted on is what
    makes Kueue re-run it from scratch elsewhere ("Admitting remote no longer exists", kueue v0.19.2
    pkg/controller/admissionchecks/multikueue/workload.go), and `up --skip-preview` (the Automation API's up)
    updates the tenants' configs before it reaches the protected delete of the worker's MultiKueueCluster
    (tests/engine/test_fleet_engine.py). The server refuses the update itself, whoever sends it (a hand
    ``kubectl edit`` too). The same rule holds for a tenant moved off a worker that stays in the fleet: its jobs
    running there would be re-run just the same.

    Only UPDATE: a CREATE (the first deploy) has no old object and drops nothing; a DELETE (a tenant leaving the
    fleet) is not a removal of a worker. The object selector matches the old object or the new one (k8s.io/apiserver
    v0.35.4 pkg/admission/plugin/webhook/predicates/object/matcher.go), so taking the label off in the same edit does
    not escape it. Cluster-scoped: no namespaceObject is needed. Params missing: every matched update is refused
    (parameterNotFoundAction Deny on the binding): fail closed."""
    return {
        "failurePolicy": "Fail",
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "matchConstraints": {
            "objectSelector": {"matchLabels": dict(derive.MANAGED_BY)},
            "resourceRules": [
                {
                    "apiGroups": ["kueue.x-k8s.io"],
                    "apiVersions": ["*"],
                    "resources": ["multikueueconfigs"],
                    "operations": ["UPDATE"],
                    "scope": "Cluster",
                }
            ],
        },
        "variables": [
            {
                "name": "dropped",
                "expression": "oldObject.spec.clusters.filter(c, !(c in object.spec.clusters) && "
                "!(has(params.data) && c in params.data))",
            }
        ],
        "validations": [
            {
                "expression": "size(variables.dropped) == 0",
                "messageExpression": "'gpu-platform:fleet.workers: worker ' + variables.dropped.join(', ') + "
                "' would leave MultiKueueConfig ' + object.metadata.name + ' while not retired: "
                + REMOVAL_MESSAGE
                + "'",
                "reason": "Forbidden",
            }
        ],
    }


def text_lines(p: FleetPlan) -> list[str]:
    """``gpu-platform plan``'s fleet section: per worker, then per tenant where it may run and its fleet quota."""
    lines = ["fleet (MultiKueue manager):"]
    mk = p.multikueue
    lines.append(
        f"  dispatcher {mk['dispatcherName']}, workerLostTimeout {mk['workerLostTimeout']}, "
        f"gcInterval {mk['gcInterval']}, origin {mk['origin']}; kinds {', '.join(p.kinds)}"
    )
    r = p.reset
    lines.append(
        f"  lost-worker reset: CronJob {r.namespace}/{r.name} every minute, in {', '.join(r.namespaces)}"
        if r
        else "  lost-worker reset: off (fleet.resetLostJobs: false): a lost worker's jobs wait for a hand reset"
    )
    totals: dict[str, int] = {}
    for w in p.workers.values():
        cap = ", ".join(f"{r} {u}" for r, u in w.capacity_units.items()) or "no GPU pools"
        state = " (retired: draining)" if w.retired else ""
        lines.append(f"  worker {w.name}{state}: {w.cloud} stack {w.stack}, Kueue {w.kueue_version}, {cap}")
        for r, u in w.capacity_units.items():
            totals[r] = totals.get(r, 0) + u
    lines.append("  fleet capacity: " + (", ".join(f"{r} {u}" for r, u in sorted(totals.items())) or "none"))
    for t in p.tenants.values():
        quota = ", ".join(f"{r} {u}" for r, u in t.quota.items()) or "no GPUs"
        per = "; ".join(
            f"{w}: " + (", ".join(f"{r} {u}" for r, u in t.worker_units.get(w, {}).items()) or "none")
            for w in t.workers
        )
        lines.append(f"  tenant {t.name}: fleet quota {quota} -> {per}")
    return lines


def cost_doc(p: FleetPlan, manager_total: Mapping[str, Any]) -> dict[str, Any]:
    """``gpu-platform cost``'s fleet section: each worker's hourly USD (its own cost report's total), the manager's,
    and their sum; a worker with an unpriced pool makes the fleet's maximum unknown (None), as in one stack."""
    rows = [{"worker": "(manager)", **_usd(manager_total)}] + [
        {"worker": w.name, "stack": w.stack, "cloud": w.cloud, "gpus": w.gpus, **_usd(w.cost)}
        for w in p.workers.values()
    ]
    maxes = [r["maxHourlyUsd"] for r in rows]
    return {
        "workers": rows,
        "total": {
            "maxHourlyUsd": None if any(m is None for m in maxes) else round(sum(maxes), 4),
            "minHourlyUsd": round(sum(r["minHourlyUsd"] or 0.0 for r in rows), 4),
            "gpus": sum(w.gpus for w in p.workers.values()),
        },
    }


def _usd(total: Mapping[str, Any]) -> dict[str, Any]:
    return {"maxHourlyUsd": total.get("maxHourlyUsd"), "minHourlyUsd": total.get("minHourlyUsd")}


def cost_lines(doc: Mapping[str, Any]) -> list[str]:
    def usd(v: Any) -> str:
        return "unknown" if v is None else f"${v:,.2f}/h"

    lines = ["", "## Fleet", "", "| worker | GPUs | min | max |", "|---|---|---|---|"]
    for r in doc["workers"]:
        lines.append(f"| {r['worker']} | {r.get('gpus', 0)} | {usd(r['minHourlyUsd'])} | {usd(r['maxHourlyUsd'])} |")
    t = doc["total"]
    lines.append(f"| **fleet** | {t['gpus']} | {usd(t['minHourlyUsd'])} | {usd(t['maxHourlyUsd'])} |")
    return lines
