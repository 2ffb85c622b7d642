"""What the real programs did with a workload, read back from the server (``observe``), as an ``Outcome``.

The families, each a thing a user would see with kubectl:

- ``refused``: the API server refused the object (no such kind, namespace, Pod Security, an admission policy) or its
  controller's pods (a FailedCreate event: quota, Pod Security, an admission policy, an unknown PriorityClass);
- ``queue``: Kueue's Workload waits because its LocalQueue does not exist;
- ``quota``: Kueue's Workload waits for quota (QuotaReserved False: no flavor fits);
- ``check``: Kueue reserved quota, an admission check has not passed;
- ``unschedulable``: a pod kube-scheduler cannot place (PodScheduled False, Unschedulable);
- ``no-workload``: Kueue made no Workload for a job it manages, which stays suspended (an unknown PriorityClass:
  Kueue logs the error, the user sees no event);
- ``unscheduled``: pods no scheduler here takes (schedulerName volcano: Volcano's scheduler is modelled, not run);
- ``runs``: every pod bound to a node; ``pools``: the pools of the nodes its GPU pods run on (``-`` for pods asking
  no GPU, which run on system nodes). For a kind whose controller does not run here (JobSet, RayJob, TrainJob...)
  nothing creates pods: Kueue's admission is the outcome, its flavors the pools, and ``placed`` is False.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from loop import KUEUE_API, SchedCluster
from nodes import POOL_LABEL

NOT_GPU = ("cpu", "memory", "ephemeral-storage", "pods")
BUILT_IN = {("batch/v1", "Job"), ("apps/v1", "Deployment"), ("apps/v1", "StatefulSet"), ("v1", "Pod")}
# Seconds an outcome must hold unchanged to be the outcome. Final ones need only a second look: pods bound stay
# bound, a refusal stays, a Workload without quota in an otherwise empty cluster stays so until something changes.
# kube-scheduler retries an unschedulable pod on the next relevant event (a claim bound, a node added), Kueue takes a
# moment to make a Workload, and a Volcano tenant's workload is accepted once no pod of it was refused for a while.
SETTLE = {"runs": 0.4, "refused": 0.4, "queue": 0.4, "quota": 0.8, "check": 1.5}
SETTLE_SLOW = 3.0


@dataclass
class Outcome:
    family: str
    detail: str
    pools: tuple[str, ...] = ()
    placed: bool = True
    workloads: list[dict[str, Any]] = field(default_factory=list)

    def __str__(self) -> str:
        where = f" on {', '.join(self.pools)}" if self.pools else ""
        placed = "" if self.placed else " (admitted; no controller here creates its pods)"
        return f"{self.family}{where}{placed}: {self.detail}"[:400]


def _cond(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in obj.get("status", {}).get("conditions", []) or [] if c["type"] == kind), None)


def _gpu_pod(pod: dict[str, Any]) -> bool:
    for c in [*pod["spec"].get("containers", []), *pod["spec"].get("initContainers", [])]:
        res = c.get("resources") or {}
        for section in ("limits", "requests"):
            if any(r not in NOT_GPU and str(v) != "0" for r, v in (res.get(section) or {}).items()):
                return True
    return bool(pod["spec"].get("resourceClaims"))


def expected_pods(doc: dict[str, Any]) -> int | None:
    """Pods a built-in kind makes at once (None: a kind whose controller does not run here)."""
    kind, spec = (doc["apiVersion"], doc["kind"]), doc.get("spec", {})
    if kind not in BUILT_IN:
        return None
    if doc["kind"] == "Pod":
        return 1
    if doc["kind"] == "Job":
        parallelism = spec.get("parallelism", 1)
        completions = spec.get("completions", parallelism)
        return min(parallelism, completions)
    return spec.get("replicas", 1)


def observe(
    c: SchedCluster, docs: list[dict[str, Any]], refusals: list[str], volcano: bool = False, timeout: float = 40
) -> Outcome:
    """Poll until the outcome has held for its ``SETTLE`` seconds. ``volcano``: a Volcano tenant's workload, which no
    scheduler here takes: once nothing refuses it, it is ``accepted``."""
    if refusals:
        return Outcome("refused", "; ".join(refusals))
    namespaces = sorted({d["metadata"].get("namespace", "default") for d in docs})
    workload_docs = [
        d
        for d in docs
        if d["kind"]
        not in ("Service", "ResourceClaim", "ResourceClaimTemplate", "ConfigMap", "PersistentVolumeClaim", "Secret")
    ]
    counts = [expected_pods(d) for d in workload_docs]
    suspended = any(
        d["kind"] == "Job" and d["apiVersion"] == "batch/v1" and d["spec"].get("suspend") for d in workload_docs
    )
    expected = None if any(n is None for n in counts) else sum(n for n in counts if n is not None)
    node_pool = {
        n["metadata"]["name"]: n["metadata"]["labels"].get(POOL_LABEL, "-") for n in c.api.get("v1", "Node")["items"]
    }  # type: ignore[union-attr]
    deadline = time.monotonic() + timeout
    last: tuple[str, str] | None = None
    since = time.monotonic()
    outcome = Outcome("timeout", "no outcome")
    while time.monotonic() < deadline:
        outcome = _now(c, namespaces, expected, node_pool, suspended)
        if volcano and outcome.family in ("waiting", "unscheduled"):
            outcome = Outcome(
                "accepted", f"admitted by the API server; Volcano's scheduler is modelled ({outcome.detail})"
            )
        key = (outcome.family, outcome.detail, outcome.pools) if outcome.family != "waiting" else None
        if key is not None and key == last:
            # kube-scheduler retries an unschedulable pod on the next relevant event (a claim bound, a node added), and
            # Kueue takes a moment to make a Workload: those outcomes must hold longer to be the outcome
            hold = SETTLE_SLOW if volcano else SETTLE.get(outcome.family, SETTLE_SLOW)
            if time.monotonic() - since >= hold:
                return outcome
        else:
            last, since = key, time.monotonic()  # type: ignore[assignment]
        time.sleep(0.3)
    return Outcome("timeout", f"still {outcome}")


def _now(
    c: SchedCluster, namespaces: list[str], expected: int | None, node_pool: dict[str, str], suspended: bool
) -> Outcome:
    api = c.api
    assert api is not None
    pods, workloads, failed = [], [], []
    for ns in namespaces:
        pods += api.get("v1", "Pod", ns)["items"]
        try:
            workloads += api.get(KUEUE_API, "Workload", ns)["items"]
        except LookupError:
            pass
        failed += [
            e
            for e in api.get("v1", "Event", ns)["items"]
            if e.get("reason") in ("FailedCreate", "FailedScheduling") and e.get("type") == "Warning"
        ]
    refusals = [e for e in failed if e["reason"] == "FailedCreate"]
    if refusals:
        return Outcome("refused", refusals[0].get("message", ""))
    for w in workloads:
        reserved = _cond(w, "QuotaReserved")
        if reserved is None:
            return Outcome("waiting", "Kueue has not looked at the workload yet")
        if reserved["status"] != "True":
            msg = reserved.get("message", "")
            family = "queue" if "LocalQueue" in msg and ("doesn't exist" in msg or "not exist" in msg) else "quota"
            return Outcome(family, msg, workloads=workloads)
        admitted = _cond(w, "Admitted")
        if admitted is None or admitted["status"] != "True":
            checks = [f"{s['name']}={s['state']}" for s in w.get("status", {}).get("admissionChecks", []) or []]
            return Outcome(
                "check", f"quota reserved; admission checks {', '.join(checks) or 'none yet'}", workloads=workloads
            )
    flavors = sorted(
        {
            f
            for w in workloads
            for ps in w.get("status", {}).get("admission", {}).get("podSetAssignments", []) or []
            for f in (ps.get("flavors") or {}).values()
        }
    )
    for p in pods:
        sched = _cond(p, "PodScheduled")
        if sched is not None and sched["status"] == "False" and sched.get("reason") == "Unschedulable":
            return Outcome("unschedulable", sched.get("message", ""), workloads=workloads)
    if expected is None and not pods:
        if workloads:  # admitted, nothing here creates the pods
            return Outcome(
                "runs",
                "admitted by Kueue",
                tuple(f for f in flavors if f != "default-flavor"),
                placed=False,
                workloads=workloads,
            )
        return Outcome("waiting", "no pods, no workload")
    if expected is not None and len(pods) < expected:
        if not pods and not workloads and suspended:
            return Outcome("no-workload", "Kueue made no Workload: the job stays suspended (Kueue's log says why)")
        return Outcome("waiting", f"{len(pods)} of {expected} pods")
    unbound = [p for p in pods if not p["spec"].get("nodeName")]
    if unbound:
        names = {p["spec"].get("schedulerName", "default-scheduler") for p in unbound}
        if names - {"default-scheduler"}:
            return Outcome("unscheduled", f"schedulerName {', '.join(sorted(names))}: no such scheduler runs here")
        return Outcome("waiting", f"{len(unbound)} pods not bound")
    pools = sorted({node_pool.get(p["spec"]["nodeName"], "?") for p in pods if _gpu_pod(p)}) or ["-"]
    cpu = {node_pool.get(p["spec"]["nodeName"], "?") for p in pods if not _gpu_pod(p)}
    detail = f"{len(pods)} pods bound" + (f"; pods asking no GPU on {', '.join(sorted(cpu))}" if cpu else "")
    return Outcome("runs", detail, tuple(pools), workloads=workloads)


def dump(c: SchedCluster, namespaces: list[str]) -> str:
    """The namespaces' pods and Workloads, for a failure message."""
    api = c.api
    assert api is not None
    out = []
    for ns in namespaces:
        for p in api.get("v1", "Pod", ns)["items"]:
            out.append(
                json.dumps(
                    {
                        "pod": p["metadata"]["name"],
                        "node": p["spec"].get("nodeName"),
                        "conditions": p.get("status", {}).get("conditions"),
                    }
                )[:400]
            )
    return "\n".join(out)
