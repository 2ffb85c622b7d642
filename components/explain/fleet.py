"""``gpu-platform explain`` on a fleet manager (issue 43.4): which workers could run a workload and why the others
cannot.

A job submitted to the manager goes through the manager's own Kueue first (kueue v0.19.2
site/content/en/docs/concepts/multikueue.md): its namespace must be a fleet tenant's, its kind one the fleet dispatches,
and its GPUs within the tenant's fleet quota (the manager's ClusterQueue). Then MultiKueue copies it to the tenant's
workers and the first that admits it runs it: on each worker the trace is the one ``explain`` makes of that worker's
own stack (``trace.explain_plan`` of its plan, built from the stack file the loader read beside the manager's). A
retired worker gets nothing new (``fleet.retiredWorkers``).

The trace is pending when the manager holds it, or when no worker could run it; a worker that cannot is reported
either way, with its own verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..plan import plan as plan_stage
from ..plan.fleet import FleetPlan
from ..plan.plan import Plan
from .facts import _total
from .trace import STATUS, Layer, Trace, explain_plan
from .workloads import Workload, load


@dataclass
class WorkerVerdict:
    """Whether one fleet worker could run the workload, and why."""

    worker: str
    runs: bool
    detail: str  # the worker's own verdict, or why it is not tried
    # Kueue there admits it on quota although no node runs its pods: MultiKueue may dispatch it there (the first
    # worker to admit wins), and it waits there until waitForPodsReady evicts it
    traps: bool = False


@dataclass
class FleetTrace(Trace):
    """The manager's layers (``layers``), then one verdict per worker of the tenant, in its order."""

    workers: list[WorkerVerdict] = field(default_factory=list)

    @property
    def pending(self) -> Layer | None:
        stop = next((layer for layer in self.layers if not layer.ok), None)
        if stop is not None or any(w.runs for w in self.workers):
            return stop
        why = "; ".join(f"{w.worker}: {w.detail}" for w in self.workers)
        seen = "unschedulable" if any(w.traps for w in self.workers) else "quota"
        return Layer("workers", False, f"no worker could run it ({why})", seen)

    @property
    def failing(self) -> list[Layer]:
        stop = self.pending
        return [stop] if stop is not None else []

    @property
    def outcome(self) -> str:
        stop = self.pending
        return (stop.seen or "quota") if stop else "runs"

    @property
    def verdict(self) -> str:
        stop = self.pending
        if stop:
            return f"pending at {stop.name}: {stop.detail}"
        able = [w.worker for w in self.workers if w.runs]
        out = f"runs on worker {able[0]}" + (f" (or {', '.join(able[1:])})" if able[1:] else "") + " via MultiKueue"
        traps = [w.worker for w in self.workers if w.traps]
        if traps:
            out += (
                f"; but {', '.join(traps)} admits it too (its quota fits, none of its nodes does): MultiKueue runs it "
                "on the first worker to admit it, and there it would wait until waitForPodsReady evicts it"
            )
        return out

    def lines(self, paint: Any = lambda text, _style: text) -> list[str]:  # paint: colour on a TTY
        out = super().lines(paint)
        verdict = next(i for i, line in enumerate(out) if line.startswith("  verdict: "))
        rows = [f"  worker {w.worker:<9} {paint(*STATUS[w.runs])} {w.detail}" for w in self.workers]
        return out[:verdict] + rows + out[verdict:]

    def doc(self) -> dict[str, Any]:
        return {
            **super().doc(),
            "workers": [{"worker": w.worker, "runs": w.runs, "detail": w.detail} for w in self.workers],
        }


def _units(units: dict[str, int]) -> str:
    return ", ".join(f"{n} {r}" for r, n in sorted(units.items())) or "no GPU"


def is_fleet_workload(decided: Plan, w: Workload) -> bool:
    """The workload is submitted to the manager's fleet: its namespace is a fleet tenant's."""
    return decided.fleet is not None and any(t.namespace == w.namespace for t in decided.fleet.tenants.values())


def explain_fleet(decided: Plan, w: Workload, worker_plans: dict[str, Plan]) -> FleetTrace:
    """The workload through the manager (``decided``), then through each of its tenant's workers' plans."""
    fleet: FleetPlan | None = decided.fleet
    assert fleet is not None
    t = FleetTrace(w)
    tenant = next(x for x in fleet.tenants.values() if x.namespace == w.namespace)
    t.layers.append(
        Layer("fleet", True, f"{w.namespace} is fleet tenant {tenant.name}: workers {', '.join(tenant.workers)}")
    )
    if w.integration not in fleet.kinds:
        t.layers.append(
            Layer(
                "fleet",
                False,
                f"the fleet dispatches {', '.join(fleet.kinds)}, not {w.integration or w.kind}: the manager's Kueue "
                "does not manage it, and its namespace there allows no GPU (add the kind to fleet.kinds, or submit "
                "it to a worker)",
                "refused",
            )
        )
        return t
    asked = _total(w)
    gpu = {r: n for r, n in asked.items() if r in tenant.quota or r.startswith("nvidia.com/")}
    over = {r: n for r, n in gpu.items() if n > tenant.quota.get(r, 0)}
    if over:
        t.layers.append(
            Layer(
                "fleet-quota",
                False,
                f"asks {_units(gpu)}, above {tenant.name}'s fleet quota of {_units(dict(tenant.quota))}: the manager "
                "never admits it, so it is dispatched nowhere",
                "quota",
            )
        )
        return t
    t.layers.append(
        Layer("fleet-quota", True, f"asks {_units(gpu)} of {tenant.name}'s fleet quota {_units(dict(tenant.quota))}")
    )
    for name in tenant.workers:
        wp = fleet.workers.get(name)
        if wp is None or name not in worker_plans:
            t.workers.append(WorkerVerdict(name, False, "its stack file was not read"))
        elif wp.retired:
            t.workers.append(WorkerVerdict(name, False, "retired (fleet.retiredWorkers): dispatched nothing new"))
        else:
            wt = explain_plan(worker_plans[name], w)
            traps = wt.pending is not None and wt.outcome == "unschedulable"
            t.workers.append(WorkerVerdict(name, wt.pending is None, wt.verdict, traps))
    return t


def worker_plans(decided: Plan, spec: Any) -> dict[str, Plan]:
    """Each worker's plan, from the spec the loader attached (``Fleet.worker_spec``), built once per explain run."""
    assert decided.fleet is not None and spec.fleet is not None
    out = {}
    for name, wp in decided.fleet.workers.items():
        wspec = spec.fleet.worker_spec(name)
        if wspec is not None:
            out[name] = plan_stage.build(wspec, wp.stack.rsplit("/", 1)[-1])
    return out


def explain_on_manager(decided: Plan, spec: Any, workloads: list[Workload], cluster: Any = None) -> list[Trace]:
    """``explain_all``: on a manager, a fleet tenant's workload through its workers, any other through the manager's
    own plan (``cluster``: the manager's live Kueue workloads, read for those only)."""
    if decided.fleet is None:  # not a manager: every workload through the stack's own plan
        return [explain_plan(decided, w, cluster) for w in workloads]
    plans = worker_plans(decided, spec)
    return [
        explain_fleet(decided, w, plans) if is_fleet_workload(decided, w) else explain_plan(decided, w, cluster)
        for w in workloads
    ]


def explain_all(spec: Any, text: str, cluster: Any = None) -> list[Trace]:
    """``gpu-platform explain``: ``trace.explain_all``, and on a fleet manager a fleet tenant's workload through each
    of its workers (here, not in trace.py: this module builds on trace's layers)."""
    return explain_on_manager(plan_stage.build(spec, ""), spec, load(text), cluster)
