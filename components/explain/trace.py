"""``gpu-platform explain``: why a workload would run on this platform, or stay Pending.

A workload manifest (``explain_workloads.KINDS``: Pod, Deployment, StatefulSet, Job, JobSet, PyTorchJob,
MPIJob, TrainJob, RayJob, RayCluster, LeaderWorkerSet, Volcano Job) is traced through the platform one layer
at a time, from zero nodes:

    namespace (Pod Security) -> priority (ceiling; Volcano GPU pod policy) -> scheduler (Kueue / Volcano)
    -> queue (LocalQueue -> ClusterQueue, or Volcano queue) -> operator (the kind's CRD and controller)
    -> flavors in order (quota, borrowing, TAS) -> admission checks -> pool (node labels and taints)
    -> provisioner (from zero) -> node (what one node advertises) -> image (warm, mirrored, or a cold pull: a note)
    -> dcgm (can metrics be attributed to the pod)

Every layer reads the plan the components build their objects from (``TenantPlan.cluster_queue_spec`` for
the ClusterQueue, ``PoolPlan`` for labels, taints and units, ``AwsPlan.node_groups`` tags for what the
Cluster Autoscaler sees, ``KarpenterPlan`` NodePools, EC2NodeClasses and NodeOverlays for Karpenter, the GPU
Operator's and the exporter's values for the DCGM exporter): one source of truth, and no engine run (a trace
takes milliseconds, so tests can trace many stacks); only ``explain`` and ``explain_all`` take the spec, to build
its plan. Manifests are read in ``workloads``, a pod checked against a pool in ``facts``, pool node labels in
``nodes``, operators, queues and provisioners in ``schedulers``, Kueue's flavor assignment (quota included) in
``flavors``; this module walks the layers. Where Kueue puts a workload's pod sets on different flavors, the layers
after ``flavors`` run once per pool, each with its own pod sets. Its only rules are
upstream behaviour (what Kueue, Karpenter, Pod Security and dcgm-exporter do with those objects), cited where they
are used.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..plan import kueue, plan, tenancy
from ..plan.plan import Plan, PoolPlan, TenantPlan
from ..spec.model import StackSpec
from ..spec.options import IMPLICIT_POD_INTEGRATIONS
from . import flavors, outcomes, preemption
from .facts import (
    _total,
    _units,
    exporter_values as exporter_values,  # re-exported: tests read it
    gpu_podsets,
    pod_security_problems,
    resolve_claims,
    volcano_pods_admission,
)
from .live import Live, LiveWorkload, cluster_state as cluster_state
from .placement import PlacementLayers
from .schedulers import (
    Operator,
    integration_fix,
    kueue_holds_quota,
    operator_for,
    operator_installed,
    operator_missing,
    provisioning_guarantee,
    volcano_minimum,
    volcano_queue_of,
    volcano_queue_verdict,
)
from .workloads import (
    PSA_ENFORCE,
    PodSet,
    Workload,
    WorkloadError as WorkloadError,  # re-exported: the CLI catches it
    load,
)

EXIT_RUNS, EXIT_PENDING = 0, 3
# Kueue integrations whose pods exist before admission (gated): the namespace ResourceQuota meets them first
POD_BASED_INTEGRATIONS = ("pod", "leaderworkerset.x-k8s.io/leaderworkerset")
STATUS = {True: ("ok  ", "green"), False: ("FAIL", "bold+red")}  # a layer's status word and its colour on a TTY

# -------------------------------------------------------------------------------------------- traces


@dataclass
class Layer:
    """One layer of the platform a workload is traced through: whether it passes, and why."""

    name: str
    ok: bool
    detail: str
    seen: str | None = None  # a stop: what the user sees in the cluster (outcomes.OUTCOMES)


@dataclass
class Trace:
    """A workload's trace through the platform's layers, with the pool and provisioner it lands on."""

    workload: Workload
    layers: list[Layer] = field(default_factory=list)
    pool: str | None = None
    provisioner: str | None = None
    also: list[str] = field(default_factory=list)  # no Kueue, no pool selected: other pools that take the pod
    split: bool = False  # Kueue put the pod sets on several pools: ``provisioner`` says which runs where

    @property
    def pending(self) -> Layer | None:
        return next((layer for layer in self.layers if not layer.ok), None)

    @property
    def outcome(self) -> str:
        """What the user sees in the cluster (``outcomes.OUTCOMES``): the stop's, or ``runs``."""
        stop = self.pending
        return stop.seen or outcomes.LAYER_OUTCOME[stop.name] if stop else "runs"

    @property
    def failing(self) -> list[Layer]:
        """Every layer that failed, in order: the first is where the workload waits (``pending``); the others are
        what still stands in its way once that one is fixed."""
        return [layer for layer in self.layers if not layer.ok]

    @property
    def verdict(self) -> str:
        stop = self.pending
        if stop:
            more = [layer.name for layer in self.failing[1:]]
            also = f" (then also: {', '.join(more)})" if more else ""
            return f"pending at {stop.name}: {stop.detail}{also}"
        if self.split:
            return f"runs on pools {self.pool}: {self.provisioner}"
        also = f", or on {', '.join(self.also)}: the pod selects no pool" if self.also else ""
        if self.pool == "-":  # asks for no GPU
            return f"runs on {self.provisioner} (it asks for no GPU){also}"
        return f"runs on pool {self.pool} via {self.provisioner}{also}"

    def lines(self, paint: Any = lambda text, _style: text) -> list[str]:  # paint: colour on a TTY (cli/terminal.py)
        out = [paint(f"{self.workload.ref}:", "bold")]
        out += [f"  {x.name:<16} {paint(*STATUS[x.ok])} {x.detail}" for x in self.layers]
        out.append(f"  verdict: {paint(self.verdict, 'red' if self.pending else 'green')}")
        if self.pending is not None:
            out.append(f"  in the cluster: {outcomes.OUTCOMES[self.outcome]}")
        return out

    def doc(self) -> dict[str, Any]:
        stop = self.pending
        return {
            "workload": {"kind": self.workload.kind, "namespace": self.workload.namespace, "name": self.workload.name},
            "layers": [{"layer": x.name, "ok": x.ok, "detail": x.detail} for x in self.layers],
            "verdict": "pending" if stop else "runs",
            "pendingAt": stop.name if stop else None,
            "failingLayers": [x.name for x in self.failing],
            "outcome": self.outcome,
            "pool": self.pool,
            "provisioner": self.provisioner,
            "summary": self.verdict,
        }


class _Stop(Exception):
    pass


# Layers whose failure leaves the ones after them meaningful: the trace records it and goes on, so one run names
# every fix (issue 41.2); not the operator's (without it nothing creates the pods). The pod's placement (flavors,
# pool, provisioner, node) is traced only while the scheduler layer holds (which scheduler takes the pods decides
# where they go), and stops at its first failure.
GATE_LAYERS = ("namespace", "priority", "scheduler", "queue")


class _Tracer(PlacementLayers):
    def __init__(self, decided: Plan, w: Workload, live: Live | None = None):
        self.w, self.t = w, Trace(w)
        self.live = live  # a cluster's Kueue workloads (explain --context), or None: an idle cluster
        self.own: list[LiveWorkload] = live.of(w.namespace, w.kind, w.name) if live is not None else []
        self.victims: list[preemption.Victim] = []
        self.plan = decided  # what every layer reads
        self.kueue_options = self.plan.addons["kueue"].options  # the stack's scheduling options
        self.effective: list[dict[str, Any]] = []  # pod specs as admitted (Kueue's flavor injected)
        self.how = "the pod selects and tolerates"  # without Kueue: how the pod came to the pool (pick_pool)
        self.stuck = False  # the stop means no node ever runs the pods (fail)
        self.scope: list[PodSet] | None = None  # while a pool is traced: the pod sets placed on it
        self.held: dict[str, dict[str, int]] = {}  # Kueue: per flavor, what the workload's pod sets hold

    def ok(self, name: str, detail: str) -> None:
        self.t.layers.append(Layer(name, True, detail))

    def fail(self, name: str, detail: str, stuck: bool = False, seen: str | None = None) -> None:
        """Stop the trace at this layer. ``stuck``: no node will ever run the pods (Kueue admits them on quota
        all the same, ``kueue_holds_quota``), as opposed to a stop that names a waste or a loss (then the pods run).
        ``seen``: what the user sees, where the layer's default (``outcomes.LAYER_OUTCOME``) is not it."""
        if seen is None and name in ("pool", "provisioner", "node") and not stuck:
            seen = "runs"  # a waste or a loss: the pods still run
        if self.t.pending is None:  # the trace's pool and provisioner are as they stood at its first stop
            self.at_stop = (self.t.pool, self.t.provisioner)
        self.t.layers.append(Layer(name, False, detail, seen))
        self.stuck = stuck
        raise _Stop

    def run(self) -> Trace:
        self.at_stop: tuple[str | None, str | None] | None = None
        try:
            self._trace()
        except _Stop:
            pass
        if self.at_stop is not None:  # layers traced past the first stop name no pool the workload runs on
            self.t.pool, self.t.provisioner = self.at_stop
            self.t.split = False
        return self.t

    def gate(self, layer: Any, *args: Any) -> Any:
        """Run a gate layer (``GATE_LAYERS``): its failure is recorded and the trace goes on (None returned)."""
        try:
            return layer(*args)
        except _Stop:
            if self.t.layers[-1].name not in GATE_LAYERS:
                raise
            return None

    # -- layers
    def _trace(self) -> None:
        w = self.w
        if self.own:
            self.ok("cluster", "; ".join(cluster_state(x) for x in self.own))
        tenant = self.tenant_of()
        self.gate(self.namespace, tenant)
        self.resolve_claims(tenant)
        self.gate(self.priority, tenant)
        scheduled = self.gate(self.scheduler, tenant) is not None or tenant.scheduler is None
        scheduler = tenant.scheduler
        gpu = _total(w)
        operator = operator_for(w)
        if gpu or operator is not None:
            self.gate(self.queue, tenant, scheduler, gpu)
        if operator is not None:
            self.gate(self.operator, operator)
        if not scheduled:
            raise _Stop  # which scheduler takes the pods is wrong: where they would go is not known
        if not gpu:
            self.ok("resources", "no GPU requested: nothing GPU-specific to trace")
            self.t.pool, self.t.provisioner = "-", "non-GPU nodes"
            return
        if scheduler == "kueue":
            placements = self.kueue_flavors(tenant, gpu)
            self.others(tenant)
        else:
            placements = [(self.pick_pool(tenant, gpu), gpu_podsets(w))]
        done: list[tuple[str, str | None]] = []
        for pool, sets in placements:  # one pool unless Kueue put the pod sets on different flavors
            self.scope, self.effective = sets, []
            if scheduler == "kueue":
                self.admission_checks(tenant, pool)
            try:
                self.pool_layer(pool, injected=scheduler == "kueue")
                self.provisioner(pool)
                self.node(pool)
            except _Stop:
                if scheduler == "kueue" and self.stuck:  # admitted on quota all the same: what it holds, how long
                    check = bool(pool.provisioning_class)
                    self.t.layers[-1].detail += kueue_holds_quota(self.plan, self.held, w.per_pod_workloads, check)
                raise
            self.image(pool)
            self.dcgm(pool)
            done.append((pool.name, self.t.provisioner))
        if len(done) > 1:  # a pool per pod set group: say which runs where
            self.t.split, self.t.pool = True, ", ".join(name for name, _ in done)
            self.t.provisioner = "; ".join(
                f"{', '.join(ps.name for ps in sets)} on {pool.name} via {how}"
                for (pool, sets), (_, how) in zip(placements, done, strict=True)
            )
        else:
            self.t.pool = pool.name

    def others(self, tenant: TenantPlan) -> None:
        """What others do to it once admitted: whom it preempts (a live cluster); who preempts, reclaims, evicts it."""
        cq = tenant.cluster_queue_spec
        nominal = {
            f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]}
            for g in cq["resourceGroups"]
            for f in g["flavors"]
        }
        borrows = {
            pool: {r: n - int(nominal.get(pool, {}).get(r, 0)) for r, n in units.items()}
            for pool, units in self.held.items()
        }
        borrows = {p: {r: n for r, n in u.items() if n > 0} for p, u in borrows.items()}
        first = (
            f"it preempts {', '.join(v.workload.ref for v in self.victims)}"
            if self.victims
            else ("it preempts nothing" if self.live is not None else "from an idle cluster it preempts nothing")
        )
        spot = [p for p in self.held if self.plan.pools[p].capacity == "spot"]
        lost = preemption.spot_loss(spot, self.w.disruptions_fail_after) if spot else ""
        exposed = preemption.exposure(self.plan, tenant, self.priority_value(), borrows)
        self.ok("preemption", f"{first}; {exposed}{lost}")

    def gpu_sets(self) -> list[PodSet]:
        """The pod sets asking for a GPU; while a pool is traced, those Kueue assigned to it."""
        return self.scope if self.scope is not None else gpu_podsets(self.w)

    def tenant_of(self) -> TenantPlan:
        """The tenant whose namespace the workload is in; none: the trace stops (nothing after it applies)."""
        w = self.w
        tenant = next((t for t in self.plan.tenants.values() if t.namespace == w.namespace), None)
        if tenant is None:
            self.fail("namespace", f"{w.namespace} is not a tenant namespace (tenants: {', '.join(self.plan.tenants)})")
        return tenant

    def namespace(self, tenant: TenantPlan) -> TenantPlan:
        w = self.w
        level = tenant.namespace_labels[PSA_ENFORCE]
        problems = [p for ps in w.podsets for p in pod_security_problems(ps.pod, level)]
        if problems:
            self.fail(
                "namespace",
                f"{w.namespace} enforces Pod Security {level!r}, refused: {'; '.join(sorted(set(problems)))}",
            )
        self.ok("namespace", f"{w.namespace} (tenant {tenant.name}), Pod Security {level!r} passes")
        return tenant

    def resolve_claims(self, tenant: TenantPlan) -> None:
        why = resolve_claims(self.plan, tenant, self.w)
        if why:
            self.fail("claims", why)
        if any(ps.claims for ps in self.w.podsets):
            self.ok("claims", "DRA: " + "; ".join(f"{ps.name} {_units(ps.claims)}" for ps in self.w.podsets))

    def priority(self, tenant: TenantPlan) -> None:
        w = self.w
        forbidden = tenant.forbidden_priority_classes
        names = [c for c in (w.priority_class, w.labels.get(tenancy.KUEUE_PRIORITY_LABEL)) if c]
        known = {c.name for c in self.plan.priority_classes}
        for c in names:
            if c in forbidden or c in tenancy.SYSTEM_PRIORITY_CLASSES:
                self.fail(
                    "priority",
                    f"{c} is above {tenant.name}'s ceiling {tenant.priority_ceiling}; the admission policy "
                    f"{tenancy.PRIORITY_CEILING_POLICY} refuses it: use {tenant.priority_ceiling} or lower",
                )
            if c not in known and c not in tenancy.SYSTEM_PRIORITY_CLASSES:
                missing = f"PriorityClass {c} does not exist (classes: {', '.join(sorted(known))})"
                if tenant.scheduler == "kueue" and w.integration not in (None, *POD_BASED_INTEGRATIONS):
                    # Kueue reads the class to make the Workload and fails before it does (kueue v0.19.2
                    # pkg/controller/jobframework/reconciler.go ReconcileGenericJob: "Handling job with no
                    # workload", retried with backoff): the job stays suspended, with no event to the user
                    self.fail(
                        "priority",
                        f"{missing}: Kueue makes no Workload and the {w.kind} stays suspended",
                        seen="no-workload",
                    )
                self.fail("priority", f"{missing}: the API server refuses its pods")
        # the other tenancy admission policy met at creation, a Volcano tenant's GPU pod policy: a refused pod
        # is never created, so its workload waits here
        refused, admitted = volcano_pods_admission(self.plan, tenant, w)
        if refused:
            self.fail("priority", refused)
        if not names:
            detail = f"no priorityClassName (the cluster default); ceiling {tenant.priority_ceiling}"
        else:
            detail = f"{names[0]} (ceiling {tenant.priority_ceiling})"
        self.ok("priority", f"{detail}; {admitted}" if admitted else detail)

    def scheduler(self, tenant: TenantPlan) -> str | None:
        w = self.w
        who = tenant.scheduler
        if who == "kueue":
            if w.integration is None:
                self.fail(
                    "scheduler",
                    f"{tenant.name} is queued by Kueue; a Volcano Job there would be gated pod by pod: "
                    "use a Kueue-managed kind, or set the tenant's scheduler to volcano",
                    seen="unscheduled",
                )
            if w.scheduler_name == "volcano":
                self.fail(
                    "scheduler",
                    "schedulerName volcano in a Kueue namespace: drop it (run by Kueue or Volcano)",
                    seen="unscheduled",
                )
            frameworks = set(self.kueue_options["kueueIntegrations"])
            pod_too = w.integration == "pod" and frameworks & IMPLICIT_POD_INTEGRATIONS
            if w.integration not in frameworks and not pod_too:
                operator = operator_for(w)
                unserved = operator is not None and not operator_installed(self.plan, operator)
                # Kueue's pod webhook gates a pod unless an ancestor is managed by an enabled integration (kueue
                # v0.19.2 pkg/controller/jobs/pod/pod_webhook.go Default, FindAncestorJobManagedByKueue): the pods
                # of a kind whose integration is off are admitted one by one, the gang lost
                pods = "pod" in frameworks or bool(frameworks & IMPLICIT_POD_INTEGRATIONS)
                how = (
                    "; its pods are queued one by one by the pod integration, so the gang is not admitted whole"
                    if pods
                    else "; its pods run outside Kueue's quota, within the namespace ResourceQuota"
                )
                self.fail(
                    "scheduler",
                    f"Kueue does not manage {w.kind} here: {integration_fix(self.plan, w.integration)}"
                    + ("" if unserved else how),
                    seen="refused" if unserved else "runs",
                )
            self.ok("scheduler", f"Kueue ({w.integration} integration)")
        elif who == "volcano":
            path = volcano_queue_of(self.plan, tenant, w)
            if w.scheduler_name != "volcano" and not path.scheduler_set:
                self.fail(
                    "scheduler",
                    f"{tenant.name} is scheduled by Volcano: set schedulerName: volcano in the pod templates "
                    "(a Volcano Job sets it itself)",
                )
            self.ok("scheduler", "Volcano (gang)" if path.gang else "Volcano (a PodGroup per pod: no gang)")
        else:
            self.ok("scheduler", "no batch scheduler: kube-scheduler, within the namespace ResourceQuota")
        return who

    def queue(self, tenant: TenantPlan, scheduler: str | None, gpu: dict[str, int]) -> None:
        if scheduler == "kueue":
            refused = self.gate(self.pods_under_quota, tenant, gpu) is None
            self.gate(self.local_queue, tenant)
            if refused and self.t.layers[-1].ok:  # one queue line: the failure, not a passing label after it
                self.t.layers.pop()
        elif scheduler == "volcano":
            self.volcano_queue(tenant, gpu)
        else:
            self.resource_quota(tenant, gpu)

    def operator(self, operator: Operator) -> None:
        """The kind's operator: without it (no CRD) the object is refused and no pod exists, whatever the
        layers after this one would say."""
        if not operator_installed(self.plan, operator):
            self.fail("operator", operator_missing(self.plan, operator, self.w))
        self.ok("operator", f"{operator.name} ({operator.group}) is installed ({operator.installed_by or 'add-on'})")

    def pods_under_quota(self, tenant: TenantPlan, gpu: dict[str, int]) -> bool:
        """Kueue's pod-based integrations (Pod, Deployment, StatefulSet, LeaderWorkerSet) create the pods before
        Kueue admits them, gated (kueue v0.19.2 pkg/controller/jobs/pod: the webhook adds the kueue.x-k8s.io/admission
        scheduling gate); the namespace ResourceQuota counts a pod at creation, gates or not, so a pod over it is
        refused before Kueue ever sees a workload (seen by make sched-test: 'exceeded quota: gpu-quota')."""
        if self.w.integration not in POD_BASED_INTEGRATIONS:
            return True
        hard = {
            k.removeprefix("requests."): int(v)
            for k, v in tenant.quota_hard.items()
            if k.startswith("requests.") and "/" in k
        }
        short = {r: n for r, n in gpu.items() if r in hard and n > hard[r]}
        if short:
            offered = sorted({r for p in tenant.flavor_order for r in self.plan.pools[p].units_per_gpu})
            r = next(iter(short))
            self.fail(
                "queue",
                f"the {tenant.name} ResourceQuota allows {_units({x: hard[x] for x in short})}, the workload's pods "
                f"ask {_units(short)}: Kueue's pod integration creates them before admission, so the quota refuses "
                f"them at creation"
                + (f"; {tenant.name}'s pools advertise {', '.join(offered)}, not {r}" if hard[r] == 0 else ""),
            )
        return True

    def local_queue(self, tenant: TenantPlan) -> None:
        w = self.w
        name = self.kueue_options["localQueueName"]
        queue = w.labels.get(kueue.QUEUE_NAME_LABEL) or (name if name == "default" else None)
        if queue != name:
            self.fail(
                "queue",
                f"LocalQueue {queue or '(no queue-name label)'} does not exist in {w.namespace}: label the job "
                f"{kueue.QUEUE_NAME_LABEL}: {name}",
                seen="queue",
            )
        self.ok("queue", f"LocalQueue {queue} -> ClusterQueue {tenant.local_queue_spec['clusterQueue']}")

    def kueue_flavors(self, tenant: TenantPlan, gpu: dict[str, int]) -> list[tuple[PoolPlan, list[PodSet]]]:
        """Kueue's flavor assignment (``flavors.assign``): the pools with the pod sets each got."""
        got = flavors.assign(self.plan, tenant, self.w, gpu)
        if got.refused:
            self.fail("flavors", got.detail)
        self.held = got.held
        now = self.live_quota(tenant) if self.live is not None else ""
        self.ok("flavors", got.detail + now)
        return got.placements

    def priority_value(self) -> int:
        w = self.w
        return preemption.priority_value(self.plan, w.labels.get(tenancy.KUEUE_PRIORITY_LABEL) or w.priority_class)

    def live_quota(self, tenant: TenantPlan) -> str:
        """With a live cluster: whether the quota the workload needs is free now (its own workloads left out), else
        whom Kueue would preempt for it (``preemption.targets``), else what holds the quota it waits for. The
        flavor is the one it gets on an idle cluster (Kueue's TryNextFlavor may pick another that is free now)."""
        assert self.live is not None and tenant.cluster_queue is not None
        request = {(pool, r): n for pool, units in self.held.items() for r, n in units.items()}
        q = preemption.quotas(self.plan, self.live, self.own)
        free = {fr: q.available(tenant.cluster_queue, fr) for fr in request}
        if preemption.fits(q, tenant.cluster_queue, request):
            return f"; in {self.live.source} it fits now ({_frs(free)} available)"
        victims = preemption.targets(self.plan, self.live, tenant, request, self.priority_value(), self.own)
        if victims:
            self.victims = victims
            return f"; in {self.live.source} {_frs(free)} available: admitting it preempts " + "; ".join(
                str(v) for v in victims
            )
        pools = {f for f, _ in request}
        holders = [x for x in self.live.holding() if pools & {f for f, _ in x.usage} and x not in self.own]
        held = "; ".join(
            f"{x.ref} holds {', '.join(f'{n} {fr[1]}' for fr, n in sorted(x.usage.items()) if fr in request)}"
            f" (priority {x.priority}, ClusterQueue {x.cluster_queue})"
            for x in holders
        )
        self.fail(
            "flavors",
            f"waits for quota in {self.live.source}: it needs {_frs(request)}, {_frs(free)} available now, and Kueue "
            f"preempts nothing for it (none of lower priority in ClusterQueue {tenant.cluster_queue}, no borrower "
            f"to reclaim from); in use: {held or 'nothing of its flavors'}",
            seen="quota",
        )
        return ""

    def admission_checks(self, tenant: TenantPlan, pool: PoolPlan) -> None:
        cq = tenant.cluster_queue_spec
        checks = [
            c["name"]
            for c in (cq.get("admissionChecksStrategy") or {}).get("admissionChecks", [])
            if pool.name in c.get("onFlavors", [])
        ]
        nodes = self.nodes_needed(pool)
        if checks:
            self.ok("admission-checks", f"{', '.join(checks)}: {provisioning_guarantee(self.plan, pool, nodes)}")
            return
        # a pod no node fits is the provisioner layer's verdict ("no node it can launch fits the pod"), not TAS's
        if pool.topology_aware and nodes is not None and nodes > pool.min_nodes and pool.provisioner != "existing":
            # Kueue TAS counts only ready, schedulable nodes (kueue v0.19.2 topology_aware_scheduling.md).
            self.fail(
                "admission-checks",
                f"{pool.name} is topology-aware and has {pool.min_nodes} node(s) at rest, the gang needs {nodes}: "
                "TAS counts only existing nodes and nothing asks for more; give the pool a provisioner that "
                "serves ProvisioningRequests (managed + Cluster Autoscaler, GKE) or turn topologyAware off",
            )
        self.ok("admission-checks", "none")

    def volcano_queue(self, tenant: TenantPlan, gpu: dict[str, int]) -> None:
        w = self.w
        path = volcano_queue_of(self.plan, tenant, w)
        if path.queue != tenant.name:
            self.fail(
                "queue",
                f"Volcano queue {path.queue} (from {path.source}): the namespace's admission policy requires queue "
                f"{tenant.name}",
            )
        why, detail = volcano_queue_verdict(tenant, gpu, volcano_minimum(self.plan, w))
        if why:
            self.fail("queue", why, seen="queued")
        self.ok("queue", detail if w.group == "batch.volcano.sh" else f"{detail} (from {path.source})")

    def resource_quota(self, tenant: TenantPlan, gpu: dict[str, int]) -> None:
        """No batch scheduler: the namespace ResourceQuota (``TenantPlan.quota_hard``) is the only gate."""
        hard = {k.removeprefix("requests."): int(v) for k, v in tenant.quota_hard.items() if "/" in k}
        short = {r: n for r, n in gpu.items() if n > hard.get(r, 0)}
        if short:
            self.fail(
                "queue",
                f"the {tenant.name} ResourceQuota allows {_units({r: hard.get(r, 0) for r in short})}, "
                f"the workload asks {_units(short)}: its pods are refused at creation",
            )
        allows = f"ResourceQuota allows {_units({r: hard.get(r, 0) for r in gpu})}" if gpu else "no GPU asked"
        self.ok("queue", f"no queue; {allows}")


def explain(spec: StackSpec, workload: Workload, cluster: Live | None = None) -> Trace:
    """A workload traced through the plan of a validated spec (``explain_plan``)."""
    return explain_plan(plan.build(spec, ""), workload, cluster)


def explain_all(spec: StackSpec, text: str, cluster: Live | None = None) -> list[Trace]:
    """``gpu-platform explain``: every workload of a manifest file, traced through the plan of a validated spec;
    ``cluster``: a live cluster's Kueue workloads (``live.read``), else an idle cluster."""
    return [explain(spec, w, cluster) for w in load(text)]  # the plan is built once per spec (plan.build)


def explain_plan(decided: Plan, workload: Workload, cluster: Live | None = None) -> Trace:
    """A workload traced through the layers, reading only the plan (and the cluster's usage, where given)."""
    return _Tracer(decided, workload, cluster).run()


def _frs(units: dict[tuple[str, str], int]) -> str:
    return ", ".join(f"{n} {r} on {f}" for (f, r), n in sorted(units.items())) or "nothing"


def exit_code(traces: list[Trace]) -> int:
    return EXIT_PENDING if any(t.pending for t in traces) else EXIT_RUNS


def render(traces: list[Trace], as_json: bool = False, paint: Any = None) -> str:
    if as_json:
        return json.dumps([t.doc() for t in traces], indent=2) + "\n"
    return "\n".join(line for t in traces for line in (t.lines(paint) if paint else t.lines())) + "\n"
