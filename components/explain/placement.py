"""The layers of ``gpu-platform explain`` after Kueue's flavor assignment, where a workload meets nodes: the pool (node
labels and taints; without Kueue, the pool the pod itself selects), the provisioner (who brings nodes from zero, and
what it can see), the node (what one node advertises) and DCGM (whether the GPU metrics find the pod). A mixin of
``trace._Tracer``: it reads the tracer's workload, plan and scope, and stops the trace with its ``fail``."""

from __future__ import annotations

from typing import Any

from ..plan import derive, kueue
from ..plan.plan import Plan, PoolPlan, TenantPlan
from . import images
from .facts import (
    _units,
    autoscaler_sees,
    dcgm_attribution,
    gpu_podsets,
    node_advertises,
    pod_selection,
    pool_tolerations,
    selection_problems,
    untolerated,
)
from .nodes import node_label_values
from .schedulers import autoscaler_problem, karpenter_problem
from .workloads import Workload, is_gpu


class PlacementLayers:
    """pool, provisioner, node and dcgm (and ``pick_pool`` without Kueue)."""

    # what trace._Tracer provides, with its ok, fail and gpu_sets
    w: Workload
    plan: Plan
    t: Any
    how: str
    effective: list[dict[str, Any]]

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

    def image(self, pool: PoolPlan) -> None:
        """Whether the pods' images are warm or mirrored on the pool (``explain/images.py``): a note, not a stop."""
        detail = images.image_layer(self.plan, pool, self.gpu_sets())
        if detail is not None:
            self.ok("image", detail)

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
