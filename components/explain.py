"""``gpu-platform explain``: why a workload would run on this platform, or stay Pending.

A workload manifest (Pod, Deployment, StatefulSet, Job, JobSet, PyTorchJob, RayJob, Volcano Job) is traced
through the platform one layer at a time, from zero nodes:

    namespace (Pod Security) -> priority (ceiling; Volcano GPU pod policy) -> scheduler (Kueue / Volcano)
    -> queue (LocalQueue -> ClusterQueue, or Volcano queue) -> flavors in order (quota, borrowing, TAS)
    -> admission checks -> pool (node labels and taints) -> provisioner (from zero)
    -> node (what one node advertises) -> dcgm (can metrics be attributed to the pod)

Every layer reads the functions the components build their objects from (``kueue.cluster_queue_spec`` for
the ClusterQueue, ``derive.*`` for labels, taints and units, ``managed_pools.autoscaler_tags`` for what the
Cluster Autoscaler sees, ``karpenter.node_pool_spec`` / ``ec2_node_class_spec`` for Karpenter,
``gpu_operator.operator_values`` for the DCGM exporter): one source of truth, and no engine run (a trace
takes milliseconds, so tests can trace many stacks). Reading manifests lives in ``explain_workloads``,
the checks of a pod against one pool in ``explain_facts``; this module walks the layers. The only rules
stated here are upstream behaviour (what Kueue, Karpenter, Pod Security and dcgm-exporter do with those
objects), cited where they are used.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from components import derive, kueue, tenancy
from components.explain_facts import (
    _asks_topology,
    _tenant,
    _total,
    _units,
    autoscaler_sees,
    dcgm_attribution,
    exporter_values,  # noqa: F401  (re-exported: tests read the exporter values a trace checks)
    karpenter_sees,
    node_advertises,
    node_labels,
    node_taints,
    pod_security_problems,
    pod_selection,
    selection_problems,
    untolerated,
    volcano_pods_admission,
)
from components.explain_workloads import (
    PSA_ENFORCE,
    Workload,
    WorkloadError,  # noqa: F401  (re-exported: the CLI catches it)
    is_gpu,
    load,
)
from components.spec import NodePool, StackSpec, Tenant
from components.spec_options import IMPLICIT_POD_INTEGRATIONS

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

    @property
    def pending(self) -> Layer | None:
        return next((layer for layer in self.layers if not layer.ok), None)

    @property
    def verdict(self) -> str:
        stop = self.pending
        if stop:
            return f"pending at {stop.name}: {stop.detail}"
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
    def __init__(self, spec: StackSpec, w: Workload):
        self.spec, self.w, self.t = spec, w, Trace(w)
        self.effective: list[dict[str, Any]] = []  # pod specs as admitted (Kueue's flavor injected)
        self.how = "the pod selects and tolerates"  # without Kueue: how the pod came to the pool (pick_pool)

    def ok(self, name: str, detail: str) -> None:
        self.t.layers.append(Layer(name, True, detail))

    def fail(self, name: str, detail: str) -> None:
        self.t.layers.append(Layer(name, False, detail))
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
        if not gpu:
            self.ok("resources", "no GPU requested: nothing GPU-specific to trace")
            self.t.pool, self.t.provisioner = "-", "non-GPU nodes"
            return
        flavor_tolerations: list[dict[str, Any]] = []
        if scheduler == "kueue":
            pool = self.kueue_flavors(tenant, gpu)
            flavor_tolerations = kueue.flavor_spec(pool)["tolerations"]
            self.admission_checks(tenant, pool)
        else:
            if scheduler == "volcano":
                self.volcano_queue(tenant, gpu)
            else:
                self.resource_quota(tenant, gpu)
            pool = self.pick_pool(tenant, gpu)
        self.pool_layer(pool, flavor_tolerations, injected=scheduler == "kueue")
        self.provisioner(pool)
        self.node(pool)
        self.dcgm(pool)
        self.t.pool = pool.name

    def namespace(self) -> Tenant:
        spec, w = self.spec, self.w
        tenant = _tenant(spec, w.namespace)
        if tenant is None:
            names = ", ".join(t.name for t in spec.tenants)
            self.fail("namespace", f"{w.namespace} is not a tenant namespace (tenants: {names})")
        level = tenancy.namespace_labels(tenant)[PSA_ENFORCE]
        problems = [p for ps in w.podsets for p in pod_security_problems(ps.pod, level)]
        if problems:
            self.fail(
                "namespace",
                f"{w.namespace} enforces Pod Security {level!r}, refused: {'; '.join(sorted(set(problems)))}",
            )
        self.ok("namespace", f"{w.namespace} (tenant {tenant.name}), Pod Security {level!r} passes")
        return tenant

    def resolve_claims(self, tenant: Tenant) -> None:
        """DRA: each pod's resourceClaims, from a template or claim in the file or one the stack creates for the
        tenant (``dra.claim_templates``), become device counts under the quota resource Kueue maps their
        DeviceClass to (``derive.DRA_CLASS_OF``, the deviceClassMappings)."""
        from components import dra

        by_class = {c: r for r, c in derive.DRA_CLASS_OF.items()}
        stack_templates = {n: t["spec"] for n, t in dra.claim_templates(self.spec, tenant).items()}
        for ps in self.w.podsets:
            for ref in ps.pod.get("resourceClaims") or []:
                if ref.get("resourceClaimTemplateName"):
                    name = ref["resourceClaimTemplateName"]
                    body = self.w.claim_specs.get(("template", name), stack_templates.get(name))
                    what = f"ResourceClaimTemplate {name}"
                else:
                    name = ref.get("resourceClaimName")
                    body = self.w.claim_specs.get(("claim", name))
                    what = f"ResourceClaim {name}"
                if body is None:
                    known = ", ".join(sorted(stack_templates)) or "none"
                    self.fail("claims", f"{what} is neither in the file nor created for {tenant.name} ({known})")
                for req in (body.get("devices") or {}).get("requests") or []:
                    exactly = req.get("exactly") or req
                    cls = exactly.get("deviceClassName")
                    if cls not in by_class:
                        self.fail(
                            "claims", f"{what}: DeviceClass {cls} is not one the stack serves ({', '.join(by_class)})"
                        )
                    if exactly.get("allocationMode", "ExactCount") != "ExactCount":
                        self.fail("claims", f"{what}: allocationMode {exactly['allocationMode']} is not traced")
                    ps.claims[by_class[cls]] = ps.claims.get(by_class[cls], 0) + int(exactly.get("count", 1))
        if any(ps.claims for ps in self.w.podsets):
            self.ok("claims", "DRA: " + "; ".join(f"{ps.name} {_units(ps.claims)}" for ps in self.w.podsets))

    def priority(self, tenant: Tenant) -> None:
        spec, w = self.spec, self.w
        forbidden = derive.priority_ceiling_excluded(spec, tenant)
        names = [c for c in (w.priority_class, w.labels.get(tenancy.KUEUE_PRIORITY_LABEL)) if c]
        known = {c.name for c in spec.priority_classes}
        for c in names:
            if c in forbidden or c in tenancy.SYSTEM_PRIORITY_CLASSES:
                self.fail(
                    "priority",
                    f"{c} is above {tenant.name}'s ceiling {tenant.priority}; the admission policy "
                    f"{tenancy.PRIORITY_CEILING_POLICY} refuses it: use {tenant.priority} or lower",
                )
            if c not in known and c not in tenancy.SYSTEM_PRIORITY_CLASSES:
                self.fail("priority", f"PriorityClass {c} does not exist (classes: {', '.join(sorted(known))})")
        # the other tenancy admission policy met at creation, a Volcano tenant's GPU pod policy: a refused pod
        # is never created, so its workload waits here
        refused, admitted = volcano_pods_admission(spec, tenant, w)
        if refused:
            self.fail("priority", refused)
        if not names:
            detail = f"no priorityClassName (the cluster default); ceiling {tenant.priority}"
        else:
            detail = f"{names[0]} (ceiling {tenant.priority})"
        self.ok("priority", f"{detail}; {admitted}" if admitted else detail)

    def scheduler(self, tenant: Tenant) -> str | None:
        spec, w = self.spec, self.w
        who = derive.tenant_scheduler(spec, tenant)
        if who == "kueue":
            if w.integration is None:
                self.fail(
                    "scheduler",
                    f"{tenant.name} is queued by Kueue; a Volcano Job there would be gated pod by pod: "
                    "use a Kueue-managed kind, or set the tenant's scheduler to volcano",
                )
            if w.scheduler_name == "volcano":
                self.fail("scheduler", "schedulerName volcano in a Kueue namespace: drop it (run by Kueue or Volcano)")
            frameworks = set(spec.scheduling.kueue_integrations)
            pod_too = w.integration == "pod" and frameworks & IMPLICIT_POD_INTEGRATIONS
            if w.integration not in frameworks and not pod_too:
                self.fail(
                    "scheduler",
                    f"Kueue does not manage {w.kind} here: add {w.integration} to scheduling.kueueIntegrations",
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

    def kueue_flavors(self, tenant: Tenant, gpu: dict[str, int]) -> NodePool:
        spec, w = self.spec, self.w
        queue = w.labels.get(kueue.QUEUE_NAME_LABEL) or (
            spec.scheduling.local_queue_name if spec.scheduling.local_queue_name == "default" else None
        )
        if queue != spec.scheduling.local_queue_name:
            self.fail(
                "queue",
                f"LocalQueue {queue or '(no queue-name label)'} does not exist in {w.namespace}: label the job "
                f"{kueue.QUEUE_NAME_LABEL}: {spec.scheduling.local_queue_name}",
            )
        cq = kueue.cluster_queue_spec(spec, tenant)
        self.ok("queue", f"LocalQueue {queue} -> ClusterQueue {kueue.local_queue_spec(tenant)['clusterQueue']}")
        group = next((g for g in cq["resourceGroups"] if set(gpu) <= set(g["coveredResources"])), None)
        if group is None:
            covered = [r for g in cq["resourceGroups"] for r in g["coveredResources"] if r not in kueue.CPU_RESOURCES]
            self.fail(
                "flavors",
                f"ClusterQueue {tenant.name} has no quota for {', '.join(gpu)} (it covers {', '.join(covered)}): "
                "request a resource one of the tenant's pools advertises",
            )
        ceilings = derive.tenant_pool_ceiling_units(spec, tenant)
        topology = _asks_topology(w)
        tried: list[str] = []
        fits: list[tuple[NodePool, dict[str, int]]] = []  # flavors that fit, in order, with what they borrow
        for flavor in group["flavors"]:
            fname = flavor["name"]
            if fname == kueue.DEFAULT_FLAVOR:
                continue
            pool = spec.pool(fname)
            labels = kueue.flavor_spec(pool)["nodeLabels"]
            nominal = {q["name"]: int(q["nominalQuota"]) for q in flavor["resources"] if q["name"] in gpu}
            why = next((p for ps in w.podsets for p in selection_problems(ps.pod, labels)), None)
            if why:
                tried.append(f"{fname}: {why}")
                continue
            if pool.topology_aware and not topology:
                tried.append(f"{fname}: topology-aware, the pod template asks for no topology")
                continue
            if topology and not pool.topology_aware:
                tried.append(f"{fname}: not topology-aware")
                continue
            ceiling = ceilings.get(fname, {})
            short = {r: n for r, n in gpu.items() if n > ceiling.get(r, 0)}
            if short:
                tried.append(
                    f"{fname}: needs {_units(short)}, quota {_units({r: nominal.get(r, 0) for r in short})}"
                    f", at most {_units({r: ceiling.get(r, 0) for r in short})} with borrowing"
                )
                continue
            fits.append((pool, {r: n - nominal.get(r, 0) for r, n in gpu.items() if n > nominal.get(r, 0)}))
        if not fits:
            self.fail("flavors", "no flavor fits: " + "; ".join(tried))
        # flavorFungibility.whenCanBorrow TryNextFlavor: a later flavor within nominal quota beats borrowing on
        # an earlier one (kueue v0.19.2 flavorassigner); Borrow: the first flavor that fits, borrowing or not.
        prefer_nominal = (cq.get("flavorFungibility") or {}).get("whenCanBorrow") == "TryNextFlavor"
        pool, borrow = next((f for f in fits if not f[1]), fits[0]) if prefer_nominal else fits[0]
        cohort = derive.tenant_cohort(spec, tenant)
        how = f"borrows {_units(borrow)} from cohort {cohort}" if borrow else "nominal quota"
        order = " > ".join(f["name"] for f in group["flavors"])
        skipped = f"; skipped {'; '.join(tried)}" if tried else ""
        self.ok("flavors", f"{pool.name} ({_units(gpu)}, {how}; order {order}{skipped})")
        return pool

    def admission_checks(self, tenant: Tenant, pool: NodePool) -> None:
        spec = self.spec
        cq = kueue.cluster_queue_spec(spec, tenant)
        checks = [
            c["name"]
            for c in (cq.get("admissionChecksStrategy") or {}).get("admissionChecks", [])
            if pool.name in c.get("onFlavors", [])
        ]
        nodes = self.nodes_needed(pool)
        if checks:
            cls = kueue.provisioning_class(spec, pool)
            self.ok("admission-checks", f"{', '.join(checks)}: ProvisioningRequest {cls} brings the nodes first")
            return
        # a pod no node fits is the provisioner layer's verdict ("no node it can launch fits the pod"), not TAS's
        if pool.topology_aware and nodes is not None and nodes > pool.min_nodes and spec.cloud != "existing":
            # Kueue TAS counts only ready, schedulable nodes (kueue v0.19.2 topology_aware_scheduling.md).
            self.fail(
                "admission-checks",
                f"{pool.name} is topology-aware and has {pool.min_nodes} node(s) at rest, the gang needs {nodes}: "
                "TAS counts only existing nodes and nothing asks for more; give the pool a provisioner that "
                "serves ProvisioningRequests (managed + Cluster Autoscaler, GKE) or turn topologyAware off",
            )
        self.ok("admission-checks", "none")

    def volcano_queue(self, tenant: Tenant, gpu: dict[str, int]) -> None:
        w = self.w
        if w.volcano_queue != tenant.name:
            self.fail(
                "queue",
                f"Volcano queue {w.volcano_queue}: the namespace's admission policy requires queue {tenant.name}",
            )
        cap = volcano_queue_cap(self.spec, tenant)
        short = {r: n for r, n in gpu.items() if n > cap.get(r, 0)}
        if short:
            self.fail(
                "queue",
                f"Volcano queue {tenant.name} can hold at most {_units({r: cap.get(r, 0) for r in short})} "
                f"(proportion: cluster total - all guarantees + its own), the gang needs {_units(short)}",
            )
        self.ok("queue", f"Volcano queue {tenant.name} (can hold {_units({r: cap.get(r, 0) for r in gpu})})")

    def resource_quota(self, tenant: Tenant, gpu: dict[str, int]) -> None:
        """No batch scheduler: the namespace ResourceQuota (``tenancy.quota_hard``) is the only gate."""
        hard = {
            k.removeprefix("requests."): int(v) for k, v in tenancy.quota_hard(self.spec, tenant).items() if "/" in k
        }
        short = {r: n for r, n in gpu.items() if n > hard.get(r, 0)}
        if short:
            self.fail(
                "queue",
                f"the {tenant.name} ResourceQuota allows {_units({r: hard.get(r, 0) for r in short})}, "
                f"the workload asks {_units(short)}: its pods are refused at creation",
            )
        self.ok("queue", f"no queue; ResourceQuota allows {_units({r: hard.get(r, 0) for r in gpu})}")

    def pick_pool(self, tenant: Tenant, gpu: dict[str, int]) -> NodePool:
        """Without Kueue the pod itself must select a pool: its nodeSelector/affinity and tolerations."""
        spec, w = self.spec, self.w
        tried = []
        for pool in kueue.tenant_pools(spec, tenant):
            if not set(gpu) <= set(derive.units_per_gpu(spec, pool)):
                continue
            why = next((p for ps in w.podsets for p in selection_problems(ps.pod, node_labels(spec, pool))), None)
            if why:
                tried.append(f"{pool.name}: {why}")
                continue
            self.how, self.t.also = pod_selection(spec, pool, w.podsets, gpu)
            return pool
        reach = ", ".join(p.name for p in kueue.tenant_pools(spec, tenant))
        self.fail(
            "pool",
            f"no pool of {tenant.name} ({reach}) advertises {', '.join(gpu)} and matches the pod"
            + (f": {'; '.join(tried)}" if tried else ""),
        )
        raise AssertionError  # unreachable

    def pool_layer(self, pool: NodePool, flavor_tolerations: list[dict[str, Any]], injected: bool) -> None:
        spec, w = self.spec, self.w
        labels = node_labels(spec, pool)
        for ps in w.podsets:
            pod = dict(ps.pod)
            if injected:  # Kueue adds the flavor's node labels and tolerations on admission
                pod["nodeSelector"] = {**(pod.get("nodeSelector") or {}), **kueue.flavor_spec(pool)["nodeLabels"]}
                pod["tolerations"] = [*(pod.get("tolerations") or []), *flavor_tolerations]
            self.effective.append(pod)
            problems = selection_problems(pod, labels)
            if problems:
                self.fail("pool", f"{pool.name}'s nodes do not match: {'; '.join(problems)}")
            missing = untolerated(pod.get("tolerations") or [], node_taints(pool))
            if missing:
                self.fail(
                    "pool",
                    f"{pool.name}'s nodes are tainted {', '.join(missing)} and pod set {ps.name} does not "
                    f"tolerate it: add {derive.tolerations(pool)}",
                )
        how = "Kueue injects the flavor's nodeSelector and tolerations" if injected else self.how
        self.ok("pool", f"{pool.name}: labels match, taints tolerated ({how})")

    def nodes_needed(self, pool: NodePool) -> int | None:
        """Nodes the workload needs on the pool, packing whole pods per node (per pod set); None when a pod fits
        no node of the pool (the provisioner layer says so). A pod set of 0 pods needs no node."""
        per_node, _ = node_advertises(self.spec, pool)
        total = 0
        for ps in self.w.podsets:
            if ps.count <= 0:
                continue
            req = ps.devices()
            fit = min((per_node.get(r, 0) // n for r, n in req.items() if n), default=ps.count)
            if fit == 0:
                return None
            total += -(-ps.count // fit)
        return total

    def provisioner(self, pool: NodePool) -> None:
        spec = self.spec
        per_node, _ = node_advertises(spec, pool)
        for ps in self.w.podsets:
            for r, n in ps.devices().items():
                if per_node.get(r, 0) < n:
                    self.fail(
                        "provisioner",
                        f"pod set {ps.name} asks {n} {r}, one node of {pool.name} brings {per_node.get(r, 0)}: "
                        "no node it can launch fits the pod; ask for at most that per pod (more pods instead)",
                    )
        nodes = self.nodes_needed(pool)
        assert nodes is not None  # every pod fits a node: checked just above
        req = {r: n for ps in self.w.podsets for r, n in ps.devices().items()}
        if spec.cloud == "existing":
            if nodes > pool.node_cap:
                self.fail("provisioner", f"existing nodes: {pool.node_cap}, the workload needs {nodes}")
            self.t.provisioner = "existing nodes"
            self.ok("provisioner", f"existing nodes ({pool.node_cap}), nothing scales; needs {nodes}")
            return
        if nodes > pool.node_cap:
            self.fail("provisioner", f"the workload needs {nodes} node(s), {pool.name} has at most {pool.node_cap}")
        if spec.cloud == "gcp":
            if pool.gke.queued_provisioning:
                self.t.provisioner = "GKE queued provisioning (Dynamic Workload Scheduler)"
                self.ok("provisioner", f"{self.t.provisioner}: {nodes} node(s) through Kueue's ProvisioningRequest")
            else:
                self.t.provisioner = "GKE cluster autoscaler"
                self.ok(
                    "provisioner", f"GKE cluster autoscaler: {pool.min_nodes}..{pool.node_cap} nodes, needs {nodes}"
                )
            return
        if pool.provisioner == "karpenter":
            from components.aws import karpenter

            plans = [p for p in karpenter.nodepool_plans(spec) if p.pool.name == pool.name]
            sees = karpenter_sees(spec, pool)
            advertised, _ = node_advertises(spec, pool)
            for r, n in req.items():
                if sees.get(r, 0) < n:
                    self.fail(
                        "provisioner",
                        f"Karpenter cannot see {r} on any instance type (it knows {_units(sees)} per node from EC2 "
                        "data), so it never launches a node for this pod: add a NodeOverlay for the pool",
                    )
                if sees.get(r) != advertised.get(r):
                    self.fail(
                        "provisioner",
                        f"Karpenter counts {sees.get(r)} {r} per node, the node advertises {advertised.get(r)}: it "
                        "launches nodes for pods that would fit on existing ones; add a NodeOverlay for the pool",
                    )
            names = ", ".join(p.name for p in plans)
            self.t.provisioner = f"Karpenter NodePool {names}"
            self.ok("provisioner", f"Karpenter NodePool(s) {names}: 0..{pool.node_cap} node(s), needs {nodes}")
            return
        if not spec.cluster_autoscaler_enabled:
            if nodes > pool.min_nodes:
                self.fail(
                    "provisioner",
                    f"{pool.name} is fixed at {pool.min_nodes} node(s) (addons.clusterAutoscaler off), needs {nodes}",
                )
            self.t.provisioner = "EKS managed node group (fixed size)"
            self.ok("provisioner", f"{pool.min_nodes} fixed node(s), needs {nodes}")
            return
        resources, labels, taints = autoscaler_sees(spec, pool)
        # The autoscaler simulates the pending pod on its node template: labels, taints and resources.
        for pod in self.effective:
            problems = selection_problems(pod, labels) + untolerated(pod.get("tolerations") or [], taints)
            if problems:
                self.fail(
                    "provisioner",
                    f"the Cluster Autoscaler's node template for {pool.name} does not fit the pod "
                    f"({'; '.join(problems)}): it never scales the pool up for it",
                )
        short = {r: n for r, n in req.items() if resources.get(r, 0) < n}
        if short:
            self.fail(
                "provisioner",
                f"the Cluster Autoscaler's node template offers {_units({r: resources.get(r, 0) for r in short})}, "
                f"the pod asks {_units(short)}: it never scales {pool.name} up from zero; tag the node group "
                f"k8s.io/cluster-autoscaler/node-template/resources/<resource> (managed_pools.autoscaler_tags)",
            )
        self.t.provisioner = "EKS managed node group + Cluster Autoscaler"
        self.ok(
            "provisioner",
            f"Cluster Autoscaler, template {_units({r: resources[r] for r in req})}: "
            f"{pool.min_nodes}..{pool.node_cap} nodes, needs {nodes}",
        )

    def node(self, pool: NodePool) -> None:
        spec = self.spec
        advertised, mismatch = node_advertises(spec, pool)
        if mismatch:
            self.fail("node", mismatch + ": put them in the EC2NodeClass userData")
        s = pool.sharing
        for ps in self.w.podsets:
            for r, n in ps.devices().items():
                have = advertised.get(r, 0)
                if have == 0:
                    self.fail(
                        "node",
                        f"{pool.name}'s nodes advertise {_units(advertised)}, not {r}: request one of those",
                    )
                if n > have:
                    self.fail("node", f"pod set {ps.name} asks {n} {r}, one node of {pool.name} has {have}")
                if s and s.strategy == "time-slicing" and s.fail_requests_greater_than_one and is_gpu(r) and n > 1:
                    self.fail(
                        "node",
                        f"{pool.name} time-slices with failRequestsGreaterThanOne: a pod may ask 1 {r}, not {n}",
                    )
        self.ok(
            "node",
            f"one {pool.name} node ({derive.pool_device_plugin(spec, pool)} plugin) advertises {_units(advertised)}",
        )

    def dcgm(self, pool: NodePool) -> None:
        spec = self.spec
        if not spec.addons.dcgm:
            self.ok("dcgm", "DCGM off: no GPU metrics")
            return
        if derive.pool_device_plugin(spec, pool) == "dra":
            self.ok("dcgm", "DRA devices: whether dcgm-exporter maps claims to pods is not checked here")
            return
        resources = sorted({r for ps in self.w.podsets for r in ps.requests()})
        why = dcgm_attribution(spec, pool, resources)
        if why:
            self.fail("dcgm", f"runs, but its GPU metrics lose the pod: {why}")
        if spec.monitoring.prometheus == "none":
            self.ok(
                "dcgm", "dcgm-exporter attributes the GPUs to the pod; monitoring.prometheus none: nothing scrapes it"
            )
            return
        self.ok("dcgm", f"dcgm-exporter attributes the GPUs to the pod (Prometheus: {spec.monitoring.prometheus})")


def volcano_queue_cap(spec: StackSpec, tenant: Tenant) -> dict[str, int]:
    """GPU units the tenant's Volcano queue can hold: its capability, capped by the proportion plugin
    (cluster total - every queue's guarantee + its own), as ``derive.volcano_queue_cap`` states it."""
    return derive.volcano_queue_cap(spec, tenant)


def explain(spec: StackSpec, workload: Workload) -> Trace:
    return _Tracer(spec, workload).run()


def explain_all(spec: StackSpec, text: str) -> list[Trace]:
    return [explain(spec, w) for w in load(text)]


def exit_code(traces: list[Trace]) -> int:
    return EXIT_PENDING if any(t.pending for t in traces) else EXIT_RUNS


def render(traces: list[Trace], as_json: bool = False) -> str:
    if as_json:
        return json.dumps([t.doc() for t in traces], indent=2) + "\n"
    return "\n".join(line for t in traces for line in t.lines()) + "\n"
