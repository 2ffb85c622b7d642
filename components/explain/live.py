"""A live cluster's Kueue state, for ``gpu-platform explain --context`` (or ``--kubeconfig``): the Workloads Kueue
keeps, read with kubectl, as the usage explain counts against each ClusterQueue's quota and the workloads a new one
would preempt or waits behind. Without a cluster explain assumes an idle one.

What is read (kueue.x-k8s.io/v1beta2 Workload, apis/kueue/v1beta2/workload_types.go at v0.19.2): the ClusterQueue the
workload's admission names, its effective priority (``spec.priority``; Kueue's ordering and preemption compare it,
pkg/util/priority), what it holds per flavor and resource (``status.admission.podSetAssignments[].flavors`` and
``resourceUsage``: the quota Kueue counts, pkg/workload), its conditions (QuotaReserved, Admitted, Evicted with the
reason, Preempted with InClusterQueue / InCohortReclamation, Requeued) and when Kueue requeues it
(``status.requeueState.requeueAt``), and the object it belongs to (its controller ownerReference)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..plan.kueue_quota import FlavorResource, Usage, quantity

WORKLOADS = "workloads.kueue.x-k8s.io"


class LiveError(RuntimeError):
    """The cluster could not be read (no kubectl, no such context, no Kueue)."""


@dataclass(frozen=True)
class LiveWorkload:
    """A Kueue Workload read from the live cluster: its owner, queues, priority and the quota it holds."""

    namespace: str
    name: str
    owner: tuple[str, str] | None  # (kind, name) of the object it belongs to
    cluster_queue: str | None  # from its admission (None: not admitted)
    queue: str | None  # its LocalQueue
    priority: int
    priority_class: str | None
    quota_reserved: bool
    admitted: bool
    reserved_at: str  # when quota was reserved ('' when not): Kueue preempts the most recent first
    usage: Mapping[FlavorResource, int]  # what its admission holds
    conditions: Mapping[str, tuple[str, str, str]] = field(default_factory=dict)  # type -> (status, reason, message)
    requeue_at: str | None = None

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.owner[1] if self.owner else self.name}"

    def condition(self, kind: str) -> tuple[str, str, str] | None:
        return self.conditions.get(kind)

    @property
    def evicted(self) -> tuple[str, str] | None:
        """(reason, message) of a true Evicted condition."""
        c = self.conditions.get("Evicted")
        return (c[1], c[2]) if c and c[0] == "True" else None


@dataclass(frozen=True)
class Live:
    """The Workloads read from a live cluster, and where they were read from."""

    source: str  # what was read: "context ml-prod", a kubeconfig path
    workloads: tuple[LiveWorkload, ...]

    def usage(self, without: Iterable[LiveWorkload] = ()) -> Usage:
        """ClusterQueue -> (flavor, resource) -> units held by workloads with reserved quota (Kueue counts a
        reservation, admitted or not: pkg/cache/scheduler addUsage on QuotaReserved), ``without`` those."""
        skip = {(w.namespace, w.name) for w in without}
        out: dict[str, dict[FlavorResource, int]] = defaultdict(lambda: defaultdict(int))
        for w in self.workloads:
            if w.quota_reserved and w.cluster_queue and (w.namespace, w.name) not in skip:
                for fr, n in w.usage.items():
                    out[w.cluster_queue][fr] += n
        return {cq: dict(v) for cq, v in out.items()}

    def holding(self, cluster_queue: str | None = None) -> list[LiveWorkload]:
        """Workloads holding quota (in one ClusterQueue, or in all)."""
        return [
            w
            for w in self.workloads
            if w.quota_reserved and (cluster_queue is None or w.cluster_queue == cluster_queue)
        ]

    def of(self, namespace: str, kind: str, name: str) -> list[LiveWorkload]:
        """The workloads of an object (one, or one per pod for Kueue's pod-based integrations)."""
        return [w for w in self.workloads if w.namespace == namespace and w.owner == (kind, name)]


def _owner(meta: Mapping[str, Any]) -> tuple[str, str] | None:
    refs = meta.get("ownerReferences") or []
    ref = next((r for r in refs if r.get("controller")), refs[0] if refs else None)
    return (ref["kind"], ref["name"]) if ref else None


def parse(items: Iterable[Mapping[str, Any]], source: str) -> Live:
    """Workload objects (the ``items`` of a list) as explain reads them."""
    out = []
    for obj in items:
        meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
        conds = {
            c["type"]: (c.get("status", ""), c.get("reason", ""), c.get("message", ""))
            for c in status.get("conditions") or []
        }
        reserved = conds.get("QuotaReserved", ("False", "", ""))[0] == "True"
        admission = status.get("admission") or {}
        usage: dict[FlavorResource, int] = defaultdict(int)
        if reserved:
            for ps in admission.get("podSetAssignments") or []:
                flavors = ps.get("flavors") or {}
                for resource, amount in (ps.get("resourceUsage") or {}).items():
                    if resource in flavors:
                        usage[(flavors[resource], resource)] += quantity(resource, amount)
        reserved_at = next(
            (c.get("lastTransitionTime", "") for c in status.get("conditions") or [] if c["type"] == "QuotaReserved"),
            "",
        )
        out.append(
            LiveWorkload(
                namespace=meta.get("namespace", ""),
                name=meta.get("name", ""),
                owner=_owner(meta),
                cluster_queue=admission.get("clusterQueue"),
                queue=spec.get("queueName"),
                priority=int(spec.get("priority") or 0),
                priority_class=(spec.get("priorityClassRef") or {}).get("name") or spec.get("priorityClassName"),
                quota_reserved=reserved,
                admitted=conds.get("Admitted", ("False", "", ""))[0] == "True",
                reserved_at=reserved_at if reserved else "",
                usage=dict(usage),
                conditions=conds,
                requeue_at=(status.get("requeueState") or {}).get("requeueAt"),
            )
        )
    return Live(source, tuple(sorted(out, key=lambda w: (w.namespace, w.name))))


def read(kubeconfig: str | None = None, context: str | None = None) -> Live:
    """Every Workload of the cluster, through kubectl (the user's own credentials and context)."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise LiveError("kubectl is not on PATH: explain reads the cluster through it")
    argv = [kubectl, "get", WORKLOADS, "--all-namespaces", "-o", "json"]
    if kubeconfig:
        argv.insert(1, f"--kubeconfig={kubeconfig}")
    if context:
        argv.insert(1, f"--context={context}")
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    if proc.returncode != 0:
        raise LiveError(f"kubectl get {WORKLOADS}: {proc.stderr.strip() or proc.stdout.strip()}")
    source = f"context {context}" if context else (kubeconfig or "the current kubectl context")
    return parse(json.loads(proc.stdout).get("items") or [], source)


def cluster_state(x: LiveWorkload) -> str:
    """What a workload already in the cluster is doing, in Kueue's words: admitted where, evicted why, waiting for
    what (its QuotaReserved message) and when Kueue requeues it (``status.requeueState``).

    A true Evicted condition wins over the admission: Kueue sets it False when it reserves quota again
    (kueue v0.19.2 pkg/workload/workload.go ``SetQuotaReservation``: "reset Evicted condition if present"), so
    while both are true the eviction is under way, its admission held until the job has stopped
    (pkg/controller/jobframework/reconciler.go "6. handle eviction")."""
    evicted = x.evicted
    where = ", ".join(sorted({f for f, _ in x.usage})) or "its flavors"
    if evicted is not None:
        reason, message = evicted
        why = "waitForPodsReady (its pods were not all ready in time)" if reason == "PodsReadyTimeout" else reason
        preempted = x.condition("Preempted")
        if preempted and preempted[0] == "True":
            why += f", {preempted[1]}"
        state = f"evicted by {why} ({reason}: {message})"
        if x.admitted:
            state += f"; its quota in ClusterQueue {x.cluster_queue} on {where} is held until its pods have stopped"
    elif x.admitted:
        state = f"admitted in ClusterQueue {x.cluster_queue} on {where}"
    else:
        reserved = x.condition("QuotaReserved")
        state = f"pending: {reserved[2]}" if reserved and reserved[2] else "pending: not yet looked at by Kueue"
    requeue = f"; Kueue requeues it at {x.requeue_at}" if x.requeue_at else ""
    return f"{x.ref} ({x.name}) {state}{requeue}"
