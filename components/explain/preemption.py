"""What others do to a workload in Kueue, for ``gpu-platform explain`` (issue 38.6): whom admitting it would preempt,
given a live cluster's usage, and who may later preempt, reclaim or evict it.

Kueue v0.19.2's classical preemption (``pkg/scheduler/preemption/preemption.go`` ``classicalPreemptions``,
``classical/candidate_generator.go``, ``common/ordering.go``, ``common/preemption_policy.go``), over the
ClusterQueue specs the plan holds and the usage the cluster reports (``live.Live``):

- candidates hold quota on a flavor and resource the workload needs there. In its own ClusterQueue they must satisfy
  ``preemption.withinClusterQueue`` (``LowerPriority``: a lower effective priority); in another ClusterQueue of the
  cohort, that queue must be past its nominal quota on those resources (``candidateIsValid``: a queue within nominal
  is never a victim), and the workload's own queue must allow it: ``reclaimWithinCohort`` (``Any``: any priority,
  reason ``InCohortReclamation``; ``LowerPriority``: lower priority only), else ``borrowWithinCohort.policy``
  ``LowerPriority`` (lower priority, reason ``InCohortReclaimWhileBorrowing``);
- order: already evicted first, then other queues' candidates before the workload's own queue's, lower priority
  first, the most recently admitted first (``CandidatesOrdering``);
- Kueue removes candidates in that order until the workload fits (``Available`` per flavor and resource), then puts
  back, newest removal first, every one it can do without (``fillBackWorkloads``). Those left are preempted.

Fair sharing and hierarchical cohorts are not used by this platform (flat cohorts, no fairSharing in its Kueue
configuration), so their paths are left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..plan.kueue_quota import FlavorResource, Quotas
from ..plan.plan import Plan, TenantPlan
from .live import Live, LiveWorkload

IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"
REASON_WORDS = {
    IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    IN_COHORT_RECLAMATION: "reclaims quota it lent to the cohort",
    IN_COHORT_RECLAIM_WHILE_BORROWING: "borrowing over a lower-priority borrower of the cohort",
}


@dataclass(frozen=True)
class Victim:
    """A live workload a new one would preempt, and why."""

    workload: LiveWorkload
    reason: str

    def __str__(self) -> str:
        held = ", ".join(f"{n} {r} on {f}" for (f, r), n in sorted(self.workload.usage.items()))
        return f"{self.workload.ref} ({held}; priority {self.workload.priority}; {REASON_WORDS[self.reason]})"


def priority_value(decided: Plan, name: str | None) -> int:
    """The effective priority Kueue gives a workload of this class: the class's value (a WorkloadPriorityClass of the
    same name carries the same value here), else the global default class's, else 0 (pkg/util/priority)."""
    values = {c.name: c.value for c in decided.priority_classes}
    if name in values:
        return values[name]
    return next((c.value for c in decided.priority_classes if c.global_default), 0)


def _queues(decided: Plan) -> dict[str, Mapping[str, object]]:
    return {t.cluster_queue: t.cluster_queue_spec for t in decided.tenants.values() if t.cluster_queue}


def quotas(decided: Plan, live: Live, without: list[LiveWorkload]) -> Quotas:
    """The plan's ClusterQueues with the cluster's usage, less the workloads in ``without`` (the one explained)."""
    queues = _queues(decided)
    usage = {cq: held for cq, held in live.usage(without).items() if cq in queues}
    return Quotas(queues, usage)


def fits(q: Quotas, cq: str, request: Mapping[FlavorResource, int]) -> bool:
    return all(q.available(cq, fr) >= n for fr, n in request.items())


def _allows(policy: str | None, preemptor: int, candidate: int) -> bool:
    """``SatisfiesPreemptionPolicy`` for the policies this platform sets (LowerPriority, Any, Never)."""
    if policy == "Any":
        return True
    if policy in ("LowerPriority", "LowerOrNewerEqualPriority"):
        return preemptor > candidate
    return False


def targets(
    decided: Plan,
    live: Live,
    tenant: TenantPlan,
    request: Mapping[FlavorResource, int],
    priority: int,
    without: list[LiveWorkload],
) -> list[Victim] | None:
    """The workloads Kueue preempts to admit ``request`` (flavor, resource -> units) for the tenant's ClusterQueue at
    ``priority``, or None when no set of candidates makes room (the workload waits)."""
    cq = tenant.cluster_queue
    assert cq is not None
    policy = tenant.cluster_queue_spec.get("preemption") or {}
    skip = {(w.namespace, w.name) for w in without}
    q = quotas(decided, live, without)
    cohort = q.cohort_of(cq)
    members = set(q.members(cohort)) if cohort else set()
    needed = set(request)
    others: list[Victim] = []
    same: list[Victim] = []
    for w in live.holding():
        if (w.namespace, w.name) in skip or not needed & set(w.usage):
            continue
        if w.cluster_queue == cq:
            if _allows(policy.get("withinClusterQueue"), priority, w.priority):
                same.append(Victim(w, IN_CLUSTER_QUEUE))
        elif w.cluster_queue in members:
            if _allows(policy.get("reclaimWithinCohort"), priority, w.priority):
                others.append(Victim(w, IN_COHORT_RECLAMATION))
            elif _allows((policy.get("borrowWithinCohort") or {}).get("policy"), priority, w.priority):
                others.append(Victim(w, IN_COHORT_RECLAIM_WHILE_BORROWING))

    def order(v: Victim) -> tuple[bool, int, str]:  # lower priority first, the most recently admitted first
        return (v.workload.evicted is None, v.workload.priority, _desc(v.workload.reserved_at))

    candidates = sorted(others, key=order) + sorted(same, key=order)
    removed: list[Victim] = []
    gone = list(without)
    for v in candidates:
        if v.workload.cluster_queue != cq and _within_nominal(q, v.workload.cluster_queue or "", needed):
            continue  # candidateIsValid: a queue within its nominal quota keeps its workloads
        removed.append(v)
        gone.append(v.workload)
        q = quotas(decided, live, gone)
        if fits(q, cq, request):
            for back in reversed(removed[:-1]):  # fillBackWorkloads
                trial = [w for w in gone if w is not back.workload]
                if fits(quotas(decided, live, trial), cq, request):
                    gone, removed = trial, [x for x in removed if x is not back]
            return removed
    return None


def _within_nominal(q: Quotas, cq: str, needed: set[FlavorResource]) -> bool:
    node = q.node(cq)
    return all(node.usage.get(fr, 0) <= (node.quotas[fr].nominal if fr in node.quotas else 0) for fr in needed)


def _desc(timestamp: str) -> str:
    """Sort key putting the newest RFC 3339 timestamp first."""
    return "".join(chr(0x10FFFF - ord(ch)) for ch in timestamp)


def exposure(decided: Plan, tenant: TenantPlan, priority: int, borrows: Mapping[str, Mapping[str, int]]) -> str:
    """Who may later take the workload's quota or its place, from the plan alone: higher-priority workloads of its
    ClusterQueue, lenders reclaiming what it borrows, and waitForPodsReady."""
    policy = tenant.cluster_queue_spec.get("preemption") or {}
    parts = []
    if policy.get("withinClusterQueue", "Never") != "Never":
        above = sorted(
            c.name
            for c in decided.priority_classes
            if c.value > priority and c.name not in tenant.forbidden_priority_classes
        )
        parts.append(
            f"workloads of {', '.join(above)} priority in ClusterQueue {tenant.cluster_queue} preempt it "
            "(withinClusterQueue LowerPriority)"
            if above
            else f"nothing in ClusterQueue {tenant.cluster_queue} outranks it"
        )
    else:
        parts.append(f"ClusterQueue {tenant.cluster_queue} preempts nothing within itself")
    borrowed = {pool: units for pool, units in borrows.items() if units}
    if borrowed:
        lenders = sorted(
            t.name
            for t in decided.tenants.values()
            if t.cohort == tenant.cohort and t.name != tenant.name and any(t.pool_lent_units.get(p) for p in borrowed)
        )
        held = "; ".join(f"{', '.join(f'{n} {r}' for r, n in sorted(u.items()))} on {p}" for p, u in borrowed.items())
        parts.append(f"what it borrows ({held}) is reclaimed when {', '.join(lenders) or 'a lender'} need it back")
    opts = decided.addons["kueue"].options
    timeout = opts["waitForPodsReadyTimeout"]
    recovery = opts.get("waitForPodsReadyRecoveryTimeout") or timeout
    parts.append(
        f"waitForPodsReady evicts and requeues it if its pods are not all ready within {timeout} of admission, or a "
        f"lost pod is not back within {recovery}"
    )
    return "; ".join(parts)


def spot_loss(pools: list[str], fail_after: int | None) -> str:
    """What a reclaimed spot node does to a batch Job on it (make sched-test, test_scenarios: Karpenter's interruption
    handling cordons the node and evicts its pods through the eviction API, which marks them DisruptionTarget)."""
    where = ", ".join(pools)
    if fail_after is None:
        return ""
    if fail_after == 0:
        return (
            f"; a spot interruption on {where} fails it (backoffLimit 0 counts the evicted pod): add a "
            "podFailurePolicy rule {action: Ignore, onPodConditions: [{type: DisruptionTarget, status: 'True'}]}, "
            "and the pod is recreated, or requeued by waitForPodsReady when no node comes back"
        )
    return (
        f"; each spot interruption on {where} uses one of its backoffLimit {fail_after} retries (a podFailurePolicy "
        "rule {action: Ignore, onPodConditions: [{type: DisruptionTarget, status: 'True'}]} would not count "
        "them)"
    )
