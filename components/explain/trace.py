"""``gpu-platform explain``: why a workload would run on this platform, or stay Pending.

A workload manifest (``explain_workloads.KINDS``: Pod, Deployment, StatefulSet, Job, JobSet, PyTorchJob,
MPIJob, TrainJob, RayJob, RayCluster, LeaderWorkerSet, Volcano Job) is traced through the platform one layer
at a time, from zero nodes:

    namespace (Pod Security) -> priority (ceiling; Volcano GPU pod policy) -> scheduler (Kueue / Volcano)
    -> queue (LocalQueue -> ClusterQueue, or Volcano queue) -> operator (the kind's CRD and controller)
    -> flavors in order (quota, borrowing, TAS) -> admission checks -> pool (node labels and taints)
    -> provisioner (from zero) -> node (what one node advertises) -> dcgm (can metrics be attributed to the pod)

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

from ..plan import derive, kueue, plan, tenancy
from ..plan.plan import Plan, PoolPlan, TenantPlan
from ..spec.model import StackSpec
from ..spec.options import IMPLICIT_POD_INTEGRATIONS
from . import flavors
from .facts import (
    _total,
    _units,
    autoscaler_sees,
    dcgm_attribution,
    exporter_values as exporter_values,  # re-exported: tests read it
    gpu_podsets,
    node_advertises,
    pod_security_problems,
    pod_selection,
    pool_tolerations,
    resolve_claims,
    selection_problems,
    untolerated,
    volcano_pods_admission,
)
from .nodes import node_label_values
from .schedulers import (
    Operator,
    autoscaler_problem,
    integration_fix,
    karpenter_problem,
    kueue_holds_quota,
    operator_for,
    operator_installed,
    operator_missing,
    provisioning_guarantee,
    volcano_minimum,
    volcano_queue_verdict,
)
from .workloads import (
    PSA_ENFORCE,
    PodSet,
    Workload,
    WorkloadError as WorkloadError,  # re-exported: the CLI catches it
    is_gpu,
    load,
)

EXIT_RUNS, EXIT_PENDING = 0, 3

# -------------------------------------------------------------------------------------------- traces


@dataclass
class Layer:
    name: str
    ok: bool
    detail: str


@dataclass
class Trace:
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
    def verdict(self) -> str:
        stop = self.pending
        if stop:
            return f"pending at {stop.name}: {stop.detail}"
        if self.split:
            return f"runs on pools {self.pool}: {self.provisioner}"
        also = f", or on {', '.join(self.also)}: the pod selects no pool" if self.also else ""
        return f"runs on pool {self.pool} via {self.provisioner}{also}"

    def lines(self) -> list[str]:
        out = [f"{self.workload.ref}:"]
        out += [f"  {layer.name:<16} {'ok  ' if layer.ok else 'FAIL'} {layer.detail}" for layer in self.layers]
        out.append(f"  verdict: {self.verdict}")
        return out

    def doc(self) -> dict[str, Any]:
        stop = self.pending
        return {
            "workload": {"kind": self.workload.kind, "namespace": self.workload.namespace, "name": self.workload.name},
            "layers": [{"layer": x.name, "ok": x.ok, "detail": x.detail} for x in self.layers],
            "verdict": "pending" if stop else "runs",
            "pendingAt": stop.name if stop else None,
            "pool": self.pool,
            "provisioner": self.provisioner,
            "summary": self.verdict,
        }


class _Stop(Exception):
    pass


class _Tracer:
    def __init__(self, decided: Plan, w: Workload):
        self.w, self.t = w, Trace(w)
        self.plan = decided  # what every layer reads
        self.kueue_options = self.plan.addons["kueue"].options  # the stack's scheduling options
        self.effective: list[dict[str, Any]] = []  # pod specs as admitted (Kueue's flavor injected)
        self.how = "the pod selects and tolerates"  # without Kueue: how the pod came to the pool (pick_pool)
        self.stuck = False  # the stop means no node ever runs the pods (fail)
        self.scope: list[PodSet] | None = None  # while a pool is traced: the pod sets placed on it
        self.held: dict[str, dict[str, int]] = {}  # Kueue: per flavor, what the workload's pod sets hold

    def ok(self, name: str, detail: str) -> None:
        self.t.layers.append(Layer(name, True, detail))

    def fail(self, name: str, detail: str, stuck: bool = False) -> None:
        """Stop the trace at this layer. ``stuck``: no node will ever run the pods (Kueue admits them on quota
        all the same, ``kueue_holds_quota``), as opposed to a stop that names a waste or a loss."""
        self.t.layers.append(Layer(name, False, detail))
        self.stuck = stuck
        raise _Stop

    def run(self) -> Trace:
        try:
            self._trace()
        except _Stop:
            pass
        return self.t

    # -- layers
    def _trace(self) -> None:
        w = self.w
        tenant = self.namespace()
        self.resolve_claims(tenant)
        self.priority(tenant)
        scheduler = self.scheduler(tenant)
        gpu = _total(w)
        operator = operator_for(w)
        if gpu or operator is not None:
            self.queue(tenant, scheduler, gpu)
        if operator is not None:
            self.operator(operator)
        if not gpu:
            self.ok("resources", "no GPU requested: nothing GPU-specific to trace")
            self.t.pool, self.t.provisioner = "-", "non-GPU nodes"
            return
        if scheduler == "kueue":
            placements = self.kueue_flavors(tenant, gpu)
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

    def gpu_sets(self) -> list[PodSet]:
        """The pod sets asking for a GPU; while a pool is traced, those Kueue assigned to it."""
        return self.scope if self.scope is not None else gpu_podsets(self.w)

    def namespace(self) -> TenantPlan:
        w = self.w
        tenant = next((t for t in self.plan.tenants.values() if t.namespace == w.namespace), None)
        if tenant is None:
            self.fail("namespace", f"{w.namespace} is not a tenant namespace (tenants: {', '.join(self.plan.tenants)})")
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
                self.fail("priority", f"PriorityClass {c} does not exist (classes: {', '.join(sorted(known))})")
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
                )
            if w.scheduler_name == "volcano":
                self.fail("scheduler", "schedulerName volcano in a Kueue namespace: drop it (run by Kueue or Volcano)")
            frameworks = set(self.kueue_options["kueueIntegrations"])
            pod_too = w.integration == "pod" and frameworks & IMPLICIT_POD_INTEGRATIONS
            if w.integration not in frameworks and not pod_too:
                self.fail(
                    "scheduler", f"Kueue does not manage {w.kind} here: {integration_fix(self.plan, w.integration)}"
                )
            self.ok("scheduler", f"Kueue ({w.integration} integration)")
        elif who == "volcano":
            if w.scheduler_name != "volcano":
                self.fail(
                    "scheduler",
                    f"{tenant.name} is gang-scheduled by Volcano: set schedulerName: volcano (a Volcano Job)",
                )
            self.ok("scheduler", "Volcano (gang)")
        else:
            self.ok("scheduler", "no batch scheduler: kube-scheduler, within the namespace ResourceQuota")
        return who

    def queue(self, tenant: TenantPlan, scheduler: str | None, gpu: dict[str, int]) -> None:
        if scheduler == "kueue":
            self.local_queue(tenant)
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

    def local_queue(self, tenant: TenantPlan) -> None:
        w = self.w
        name = self.kueue_options["localQueueName"]
        queue = w.labels.get(kueue.QUEUE_NAME_LABEL) or (name if name == "default" else None)
        if queue != name:
            self.fail(
                "queue",
                f"LocalQueue {queue or '(no queue-name label)'} does not exist in {w.namespace}: label the job "
                f"{kueue.QUEUE_NAME_LABEL}: {name}",
            )
        self.ok("queue", f"LocalQueue {queue} -> ClusterQueue {tenant.local_queue_spec['clusterQueue']}")

    def kueue_flavors(self, tenant: TenantPlan, gpu: dict[str, int]) -> list[tuple[PoolPlan, list[PodSet]]]:
        """Kueue's flavor assignment (``flavors.assign``): the pools with the pod sets each got."""
        got = flavors.assign(self.plan, tenant, self.w, gpu)
        if got.refused:
            self.fail("flavors", got.detail)
        self.held = got.held
        self.ok("flavors", got.detail)
        return got.placements

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
        if w.volcano_queue != tenant.name:
            self.fail(
                "queue",
                f"Volcano queue {w.volcano_queue}: the namespace's admission policy requires queue {tenant.name}",
            )
        why, detail = volcano_queue_verdict(tenant, gpu, volcano_minimum(self.plan, w))
        if why:
            self.fail("queue", why)
        self.ok("queue", detail)

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

    def pick_pool(self, tenant: TenantPlan, gpu: dict[str, int]) -> PoolPlan:
        """Without Kueue the pod itself must select a pool: its nodeSelector/affinity and tolerations."""
        tried = []
        sets = self.gpu_sets()
        for pool in (self.plan.pools[name] for name in tenant.flavor_order):
            if not set(gpu) <= set(pool.units_per_gpu):
                continue
            labels = node_label_values(self.plan, pool)
            why = next((p for ps in sets for p in selection_problems(ps.pod, labels)), None)
            if why:
                tried.append(f"{pool.name}: {why}")
                continue
            self.how, self.t.also = pod_selection(self.plan, pool, sets, gpu)
            return pool
        reach = ", ".join(tenant.flavor_order)
        self.fail(
            "pool",
            f"no pool of {tenant.name} ({reach}) advertises {', '.join(gpu)} and matches the pod"
            + (f": {'; '.join(tried)}" if tried else ""),
        )
        raise AssertionError  # unreachable

    def pool_layer(self, pool: PoolPlan, injected: bool) -> None:
        """The pod sets that ask for a GPU against the pool's nodes: their labels as far as the stack tells
        (the pool's own and the well-known ones its provisioner sets, ``explain_nodes``) and taints."""
        w = self.w
        labels, flavor = node_label_values(self.plan, pool), pool.kueue_flavor_spec
        sets = self.gpu_sets()
        for ps in sets:
            pod = dict(ps.pod)
            if injected:  # Kueue adds the flavor's node labels and tolerations on admission
                pod["nodeSelector"] = {**(pod.get("nodeSelector") or {}), **flavor["nodeLabels"]}
                pod["tolerations"] = [*(pod.get("tolerations") or []), *flavor["tolerations"]]
            self.effective.append(pod)
            problems = selection_problems(pod, labels)
            if problems:
                # Kueue chose the flavor on its own label keys alone (flavor_selection_problems)
                hint = f" (Kueue picks a flavor by {derive.POOL_LABEL} alone: pin the pool with it)" if injected else ""
                self.fail("pool", f"{pool.name}'s nodes do not match: {'; '.join(problems)}{hint}", stuck=True)
            missing = untolerated(pod.get("tolerations") or [], list(pool.taints))
            if missing:
                self.fail(
                    "pool",
                    f"{pool.name}'s nodes are tainted {', '.join(missing)} and pod set {ps.name} does not "
                    f"tolerate it: add {pool_tolerations(pool)}",
                    stuck=True,
                )
        how = "Kueue injects the flavor's nodeSelector and tolerations" if injected else self.how
        cpu = [ps.name for ps in w.podsets if ps.count > 0 and ps not in gpu_podsets(w)]
        if cpu:
            flavor = f"Kueue gives them {kueue.DEFAULT_FLAVOR}, " if injected else ""
            how += f"; {', '.join(cpu)} ask no GPU: {flavor}they run on non-GPU nodes"
        self.ok("pool", f"{pool.name}: labels match, taints tolerated ({how})")

    def nodes_needed(self, pool: PoolPlan) -> int | None:
        """Nodes the workload needs on the pool, packing whole pods per node (per pod set that asks a GPU: the
        others go elsewhere, ``gpu_sets``); None when a pod fits no node of the pool (the provisioner layer says
        so). A pod set of 0 pods needs no node."""
        per_node, _ = node_advertises(self.plan, pool)
        total = 0
        for ps in self.gpu_sets():
            fit = min(per_node.get(r, 0) // n for r, n in ps.devices().items())
            if fit == 0:
                return None
            total += -(-ps.count // fit)
        return total

    def provisioner(self, pool: PoolPlan) -> None:
        per_node, _ = node_advertises(self.plan, pool)
        for ps in self.gpu_sets():
            for r, n in ps.devices().items():
                if per_node.get(r, 0) < n:
                    self.fail(
                        "provisioner",
                        f"pod set {ps.name} asks {n} {r}, one node of {pool.name} brings {per_node.get(r, 0)}: "
                        "no node it can launch fits the pod; ask for at most that per pod (more pods instead)",
                        stuck=True,
                    )
        nodes = self.nodes_needed(pool)
        assert nodes is not None  # every pod fits a node: checked just above
        req = {r: n for ps in self.gpu_sets() for r, n in ps.devices().items()}
        if pool.provisioner == "existing":
            if nodes > pool.max_nodes:
                self.fail("provisioner", f"existing nodes: {pool.max_nodes}, the workload needs {nodes}", stuck=True)
            self.t.provisioner = "existing nodes"
            self.ok("provisioner", f"existing nodes ({pool.max_nodes}), nothing scales; needs {nodes}")
            return
        if nodes > (cap := pool.max_nodes):
            self.fail("provisioner", f"the workload needs {nodes} node(s), {pool.name} has at most {cap}", stuck=True)
        if pool.provisioner == "gke":
            if pool.queued_provisioning:
                self.t.provisioner = "GKE queued provisioning (Dynamic Workload Scheduler)"
                self.ok("provisioner", f"{self.t.provisioner}: {nodes} node(s) through Kueue's ProvisioningRequest")
            else:
                self.t.provisioner = "GKE cluster autoscaler"
                self.ok(
                    "provisioner", f"GKE cluster autoscaler: {pool.min_nodes}..{pool.max_nodes} nodes, needs {nodes}"
                )
            return
        if pool.provisioner == "karpenter":
            problem = karpenter_problem(self.plan, pool, req)
            if problem:
                self.fail("provisioner", *problem)
            names = ", ".join(np.name for np in self.plan.karpenter.node_pools_of(pool.name))  # a karpenter pool
            self.t.provisioner = f"Karpenter NodePool {names}"
            self.ok("provisioner", f"Karpenter NodePool(s) {names}: 0..{pool.max_nodes} node(s), needs {nodes}")
            return
        if not self.plan.addons["clusterAutoscaler"].enabled:
            if nodes > pool.min_nodes:
                self.fail(
                    "provisioner",
                    f"{pool.name} is fixed at {pool.min_nodes} node(s) (addons.clusterAutoscaler off), needs {nodes}",
                    stuck=True,
                )
            self.t.provisioner = "EKS managed node group (fixed size)"
            self.ok("provisioner", f"{pool.min_nodes} fixed node(s), needs {nodes}")
            return
        why = autoscaler_problem(self.plan, pool, self.effective, req)
        if why:
            self.fail("provisioner", why, stuck=True)
        template, _, _ = autoscaler_sees(self.plan, pool)
        self.t.provisioner = "EKS managed node group + Cluster Autoscaler"
        self.ok(
            "provisioner",
            f"Cluster Autoscaler, template {_units({r: template[r] for r in req})}: "
            f"{pool.min_nodes}..{pool.max_nodes} nodes, needs {nodes}",
        )

    def node(self, pool: PoolPlan) -> None:
        advertised, mismatch = node_advertises(self.plan, pool)
        if mismatch:
            self.fail("node", mismatch + ": put them in the EC2NodeClass userData")
        s = pool.sharing or {}
        one_unit = s.get("strategy") == "time-slicing" and s.get("failRequestsGreaterThanOne")
        for ps in self.gpu_sets():
            for r, n in ps.devices().items():
                have = advertised.get(r, 0)
                if have == 0:
                    self.fail(
                        "node",
                        f"{pool.name}'s nodes advertise {_units(advertised)}, not {r}: request one of those",
                        stuck=True,
                    )
                if n > have:
                    self.fail("node", f"pod set {ps.name} asks {n} {r}, one node of {pool.name} has {have}", stuck=True)
                if one_unit and is_gpu(r) and n > 1:
                    self.fail(
                        "node",
                        f"{pool.name} time-slices with failRequestsGreaterThanOne: a pod may ask 1 {r}, not {n}",
                        stuck=True,  # the kubelet refuses it (UnexpectedAdmissionError), the job recreates it
                    )
        self.ok(
            "node",
            f"one {pool.name} node ({pool.device_plugin} plugin) advertises {_units(advertised)}",
        )

    def dcgm(self, pool: PoolPlan) -> None:
        monitoring = self.plan.monitoring
        if monitoring is None:
            self.ok("dcgm", "DCGM off: no GPU metrics")
            return
        if pool.device_plugin == "dra":
            self.ok("dcgm", "DRA devices: whether dcgm-exporter maps claims to pods is not checked here")
            return
        resources = sorted({r for ps in self.gpu_sets() for r in ps.requests()})
        why = dcgm_attribution(self.plan, pool, resources)
        if why:
            self.fail("dcgm", f"runs, but its GPU metrics lose the pod: {why}")
        if monitoring.prometheus == "none":
            self.ok(
                "dcgm", "dcgm-exporter attributes the GPUs to the pod; monitoring.prometheus none: nothing scrapes it"
            )
            return
        self.ok("dcgm", f"dcgm-exporter attributes the GPUs to the pod (Prometheus: {monitoring.prometheus})")


def explain(spec: StackSpec, workload: Workload) -> Trace:
    """A workload traced through the plan of a validated spec (``explain_plan``)."""
    return explain_plan(plan.build(spec, ""), workload)


def explain_all(spec: StackSpec, text: str) -> list[Trace]:
    """``gpu-platform explain``: every workload of a manifest file, traced through the plan of a validated spec."""
    return [explain(spec, w) for w in load(text)]  # the plan is built once per spec (plan.build)


def explain_plan(decided: Plan, workload: Workload) -> Trace:
    """A workload traced through the layers, reading only the plan."""
    return _Tracer(decided, workload).run()


def exit_code(traces: list[Trace]) -> int:
    return EXIT_PENDING if any(t.pending for t in traces) else EXIT_RUNS


def render(traces: list[Trace], as_json: bool = False) -> str:
    if as_json:
        return json.dumps([t.doc() for t in traces], indent=2) + "\n"
    return "\n".join(line for t in traces for line in t.lines()) + "\n"
