"""What the operators, queues and provisioners do with a workload, as ``gpu-platform explain`` models them.

Each function states one upstream behaviour at the pinned versions (Kueue v0.19.2, Volcano v1.15.1, Cluster
Autoscaler 1.35.0 / chart 9.59.0), cited beside it:

- operators: a kind is served by an operator (KubeRay, JobSet, LeaderWorkerSet, Kubeflow); without it the API
  server has no such resource and nothing creates the pods (``operator_for``, ``operator_installed``);
- the Volcano queue a workload's PodGroups land in (``volcano_queue_of``) and Volcano's enqueue gate from an idle
  cluster (``volcano_queue_verdict``, ``volcano_min_pods``);
- what a ProvisioningRequest admission check guarantees on each cloud (``provisioning_guarantee``);
- the quota Kueue admits and holds for a workload no node can run (``kueue_holds_quota``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from ..plan import kueue, volcano as volcano_plan
from ..plan.plan import Plan, PoolPlan, TenantPlan
from ..spec.options import INTEGRATION_OPERATOR
from .facts import _units, kuberay_sets_volcano
from .workloads import Workload

# ------------------------------------------------------------------------------------- Volcano queues


@dataclass(frozen=True)
class VolcanoQueue:
    """The Volcano queue a workload's PodGroups go to, and how the workload uses it."""

    queue: str  # the queue the workload's PodGroups are created in
    source: str  # where it comes from, for the trace
    gang: bool  # one PodGroup for the whole workload (else one per pod)
    scheduler_set: bool  # the operator sets schedulerName: volcano on the pods itself


def volcano_queue_of(decided: Plan, tenant: TenantPlan, w: Workload) -> VolcanoQueue:
    """The queue Volcano v1.15.1 puts the workload's PodGroups in, by the path its controllers take
    (``plan/volcano.py`` ENABLED_ADMISSIONS cites each step):

    1. a pod template's ``scheduling.volcano.sh/queue-name`` annotation (vc-controller's PodGroup for a pod
       without one: pkg/controllers/podgroup/pg_controller_handler.go buildPodGroupFromPod);
    2. the owner's own queue: a Volcano Job's ``spec.queue`` ("default" when empty: /jobs/mutate), a RayCluster's
       or RayJob's ``volcano.sh/queue-name`` label when KubeRay's batch scheduler is Volcano (kuberay v1.6.2
       batchscheduler/volcano/volcano_scheduler.go createPodGroup); no other owner's annotation reaches the queue;
    3. the namespace's ``scheduling.volcano.sh/queue-name`` annotation, which /podgroups/mutate gives a PodGroup
       created in "default" (pkg/webhooks/admission/podgroups/mutate/mutate_podgroup.go), else "default"."""
    annotation = volcano_plan.QUEUE_ANNOTATION
    kuberay = kuberay_sets_volcano(decided, w)
    if w.group == "batch.volcano.sh":
        return VolcanoQueue(w.volcano_queue or "default", "the Volcano Job's spec.queue", True, True)
    named = sorted(
        {str(ps.metadata.get("annotations", {})[annotation]) for ps in w.podsets if _annotated(ps, annotation)}
    )
    gang = kuberay
    if named and not kuberay:
        other = [q for q in named if q != tenant.name]
        return VolcanoQueue((other or named)[0], f"the pod template's {annotation} annotation", gang, False)
    if kuberay and volcano_plan.RAY_QUEUE_LABEL in w.labels:
        return VolcanoQueue(
            str(w.labels[volcano_plan.RAY_QUEUE_LABEL]),
            f"its {volcano_plan.RAY_QUEUE_LABEL} label (KubeRay's PodGroup)",
            gang,
            True,
        )
    ns = tenant.namespace_annotations.get(annotation)
    if ns:
        return VolcanoQueue(ns, f"the namespace's {annotation} annotation (Volcano's /podgroups/mutate)", gang, kuberay)
    return VolcanoQueue("default", "no queue named: Volcano's default", gang, kuberay)


def _annotated(ps, annotation: str) -> bool:
    annotations = ps.metadata.get("annotations")
    return isinstance(annotations, dict) and annotation in annotations


# ------------------------------------------------------------------------------------------- operators


@dataclass(frozen=True)
class Operator:
    """A workload operator explain knows: the API group of its CRDs and the stack setting that installs it."""

    name: str  # "the KubeRay operator"
    group: str  # the API group of its CRDs
    installed_by: str | None = None  # the stack setting that installs it; None: nothing in the stack does yet


KUBERAY = Operator("the KubeRay operator", "ray.io", "addons.kuberay")
JOBSET = Operator("the JobSet controller", "jobset.x-k8s.io", "addons.jobset")
LWS = Operator("the LeaderWorkerSet controller", "leaderworkerset.x-k8s.io", "addons.leaderWorkerSet")
TRAINING_OPERATOR = Operator("the Kubeflow Training Operator", "kubeflow.org")
MPI_OPERATOR = Operator("the Kubeflow MPI Operator", "kubeflow.org")
TRAINER = Operator("Kubeflow Trainer", "trainer.kubeflow.org", "addons.trainer")
VOLCANO = Operator("Volcano's job controller", "batch.volcano.sh", "addons.volcano")

# (API group, kind) -> the operator that serves it; built-in kinds (Pod, Deployment, Job...) need none.
OPERATORS = {
    ("ray.io", "RayCluster"): KUBERAY,
    ("ray.io", "RayJob"): KUBERAY,
    ("jobset.x-k8s.io", "JobSet"): JOBSET,
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): LWS,
    ("kubeflow.org", "PyTorchJob"): TRAINING_OPERATOR,
    ("kubeflow.org", "MPIJob"): MPI_OPERATOR,
    ("trainer.kubeflow.org", "TrainJob"): TRAINER,
    ("batch.volcano.sh", "Job"): VOLCANO,
}


def operator_for(w: Workload) -> Operator | None:
    return OPERATORS.get((w.group, w.kind))


def operator_installed(decided: Plan, operator: Operator) -> bool:
    """Whether the plan installs the operator: Volcano ``addons.volcano``, KubeRay ``addons.kuberay``, JobSet
    ``addons.jobset``, LeaderWorkerSet ``addons.leaderWorkerSet``, Kubeflow Trainer ``addons.trainer``; no add-on
    installs the Kubeflow Training and MPI Operators (False).
    An installed one lets explain trace the kind through every layer."""
    chart = {VOLCANO: "volcano", KUBERAY: "kuberay", JOBSET: "jobset", LWS: "leaderWorkerSet", TRAINER: "trainer"}
    key = chart.get(operator)
    return key is not None and decided.addons[key].enabled


def operator_missing(decided: Plan, operator: Operator, w: Workload) -> str:
    """The operator layer's stop: no CRD, so the API server refuses the object and no pod is ever created; Kueue
    defers its integration for the kind until the CRD appears (kueue v0.19.2 pkg/controller/jobframework/
    setup.go:86-97)."""
    fix = (
        f"set {operator.installed_by}: true"
        if operator.installed_by
        else f"install {operator.name} (no add-on of this stack installs it yet)"
    )
    kueue_note = ""
    kueue_addon = decided.addons["kueue"]
    if w.integration and w.integration in kueue_addon.options["kueueIntegrations"] and kueue_addon.enabled:
        kueue_note = f"; Kueue's {w.integration} integration waits for the CRD"
    return (
        f"{operator.name} is not installed (no {w.kind} in API group {operator.group}): the API server refuses "
        f"the {w.kind} and nothing creates its pods{kueue_note}; {fix}"
    )


# ------------------------------------------------------------------------------------- Volcano's gate


def volcano_min_pods(decided: Plan, w: Workload) -> dict[str, int]:
    """Pods per pod set (task) in the PodGroup's minResources, as Volcano's job controller counts them
    (volcano v1.15.1 pkg/controllers/job/job_controller_actions.go:928-964, job_controller_util.go:336-400):
    tasks by PriorityClass value, highest first; minAvailable defaults to the sum of the tasks' minAvailable
    (each defaulting to its replicas; pkg/webhooks/admission/jobs/mutate/mutate_job.go:169-181). Below that
    sum, the first minAvailable pods; else each task's minAvailable, topped up from the remaining replicas."""
    values = {c.name: c.value for c in decided.priority_classes}
    tasks = sorted(w.podsets, key=lambda ps: -values.get(ps.pod.get("priorityClassName") or "", 0))
    task_min = {}
    for ps in tasks:
        own = w.task_min_available.get(ps.name)
        task_min[ps.name] = ps.count if own is None else min(int(own), ps.count)
    job_min = w.min_available or sum(task_min.values())
    out: dict[str, int] = defaultdict(int)
    if job_min < sum(task_min.values()):  # CalcFirstCountResources
        left = job_min
        for ps in tasks:
            out[ps.name] = min(left, ps.count)
            left -= out[ps.name]
        return dict(out)
    left = job_min  # CalcPGMinResources
    for ps in tasks:
        out[ps.name] = min(task_min[ps.name], left)
        left -= out[ps.name]
    for ps in tasks:
        more = min(ps.count - out[ps.name], max(left, 0))
        out[ps.name] += more
        left -= more
    return dict(out)


def volcano_minimum(decided: Plan, w: Workload) -> dict[str, int]:
    """GPU units in the PodGroup's minResources: a Volcano Job's ``volcano_min_pods``; any other kind's pods."""
    pods = volcano_min_pods(decided, w) if w.integration is None else {ps.name: ps.count for ps in w.podsets}
    total: dict[str, int] = defaultdict(int)
    for ps in w.podsets:
        for r, n in ps.requests().items():
            total[r] += n * pods.get(ps.name, 0)
    return dict(total)


def volcano_queue_verdict(tenant: TenantPlan, gpu: dict[str, int], minimum: dict[str, int]) -> tuple[str | None, str]:
    """(why the tenant's Volcano queue keeps the job Pending, or None; the queue's line).

    Volcano's proportion plugin caps a queue at min(capability, cluster total - all guarantees + its own), with
    the cluster total taken from the nodes that exist (``derive.volcano_queue_cap``, in the plan as
    ``TenantPlan.volcano_queue_cap``). So two limits:

    - at full size (every pool at its maximum) the job's pods (``gpu``) must fit, or some never run;
    - from an idle cluster (pools at minNodes; from zero GPU nodes that is the queue's guarantee) the job's
      minimum (``minimum``, its PodGroup's minResources) must fit, or the enqueue action never moves the
      PodGroup out of Pending (proportion.go:402-436), the job controller creates no pod until it does
      (job_controller_actions.go:406-408), and without pending pods no autoscaler adds the nodes that would
      raise the cap."""
    full = dict(tenant.volcano_queue_cap or {})
    rest = dict(tenant.volcano_queue_cap_at_rest or {})
    name = f"Volcano queue {tenant.name}"
    short = {r: n for r, n in gpu.items() if n > full.get(r, 0)}
    if short:
        return (
            f"{name} holds at most {_units({r: full.get(r, 0) for r in short})} with every pool at its maximum "
            f"size (proportion: cluster total - all guarantees + its own, within its capability), the job needs "
            f"{_units(short)}",
            "",
        )
    short = {r: n for r, n in minimum.items() if n > rest.get(r, 0)}
    if short:
        return (
            f"{name} enqueues at most {_units({r: rest.get(r, 0) for r in short})} from an idle cluster, the "
            f"gang's minimum needs {_units(short)}: proportion computes the queue's cap over the nodes that exist "
            "(its guarantee while no node has the resource; volcano v1.15.1 pkg/scheduler/plugins/proportion/"
            "proportion.go:91-139), enqueues no job whose minimum exceeds it (402-436), and the job controller "
            "creates no pod before that (pkg/controllers/job/job_controller_actions.go:406-408), so nothing asks "
            f"for nodes; at full size it would hold {_units({r: full.get(r, 0) for r in short})}. Ask for at most "
            f"the guarantee, or raise {tenant.name}'s gpuQuota (its guarantee)",
            "",
        )
    return None, (
        f"{name} (enqueues {_units({r: rest.get(r, 0) for r in gpu})} from an idle cluster, holds "
        f"{_units({r: full.get(r, 0) for r in gpu})} at full size)"
    )


# --------------------------------------------------------------------------- provisioning guarantees


def provisioning_guarantee(decided: Plan, pool: PoolPlan, nodes: int | None) -> str:
    """What the pool's ProvisioningRequest check guarantees before Kueue admits (the flavor has a check).

    - GKE queued provisioning: the Dynamic Workload Scheduler allocates all requested nodes at the same time.
    - GKE best-effort atomic scale-up: GKE's autoscaler scales the node pool up all at once or not at all.
    - AWS (Cluster Autoscaler 1.35.0): not atomic. Its AWS provider does not implement AtomicIncreaseSize
      (cloudprovider/aws/aws_cloud_provider.go:288-291), so the scale-up falls back to IncreaseSize
      (core/scaleup/orchestrator/executor.go:144-152; FAQ.md:650-654 "doesn't guarantee atomicity") and
      Provisioned=True means the Auto Scaling group accepted the new size
      (provisioningrequest/besteffortatomic/provisioning_class.go:117-126), not that the nodes came up."""
    cls = pool.provisioning_class
    count = f"{nodes} node(s)" if nodes is not None else "the nodes"
    if cls == kueue.DWS_PROVISIONING_CLASS:
        return (
            f"ProvisioningRequest {cls}: GKE's Dynamic Workload Scheduler brings {count} together before Kueue admits"
        )
    if decided.cloud == "gcp":
        return f"ProvisioningRequest {cls}: GKE's autoscaler brings {count} up together or none before Kueue admits"
    return (
        f"ProvisioningRequest {cls}: Kueue admits once the Cluster Autoscaler has asked the Auto Scaling group for "
        f"{count}, not once they run: on AWS the scale-up is not atomic (the AWS provider has no "
        "AtomicIncreaseSize in the Cluster Autoscaler 1.35.0; docs/architecture.md names the source), so "
        f"nodes that never come leave the gang waiting until waitForPodsReady "
        f"({decided.addons['kueue'].options['waitForPodsReadyTimeout']}) evicts it"
    )


# ------------------------------------------------------------------------- quota Kueue holds anyway


def kueue_holds_quota(decided: Plan, held: dict[str, dict[str, int]], per_pod: bool, check: bool) -> str:
    """Appended to a stop after Kueue's flavor step (pool, provisioner, node): Kueue counts quota per flavor, never
    per node (kueue v0.19.2 pkg/scheduler/flavorassigner/flavorassigner.go:1330-1380, fitsResourceQuota: the pod
    sets' summed requests against the flavor's available quota; no node's size enters), so it reserves the
    workload's units (``held``: per flavor, every pod set's) although no node can run its pods.

    - Without a ProvisioningRequest check it admits the workload; waitForPodsReady evicts it once its pods are not
      ready by the timeout (pkg/controller/core/workload_controller.go:1229-1274, 1657-1675), requeues it with
      backoff, and deactivates it after requeuingStrategy.backoffLimitCount evictions.
    - With one, the quota stays reserved while the check is pending: waitForPodsReady counts only from
      admission (workload_controller.go:1662-1664); the Cluster Autoscaler fails a ProvisioningRequest it
      cannot serve after 7 days (cluster-autoscaler 1.35.0 processors/provreq/processor.go:42, 100-116)."""
    s = decided.addons["kueue"].options  # the stack's scheduling options
    whose = "each of its pods' workloads" if per_pod else "it"
    units = " and ".join(f"{_units(units)} of {pool}'s quota" for pool, units in held.items())
    if check:
        until = "while its ProvisioningRequest check stays pending (waitForPodsReady counts only from admission)"
        if decided.cloud == "aws":
            until += "; the Cluster Autoscaler fails the request after 7 days"
        return f"; Kueue still reserves {units} for {whose} (quota counts per flavor, not per node), {until}"
    limit = s.get("requeueLimit")
    after = f", deactivated after {limit} evictions" if limit is not None else ", requeued forever"
    return (
        f"; Kueue still admits {whose} (quota counts per flavor, not per node) and holds {units} until "
        f"waitForPodsReady.timeout ({s['waitForPodsReadyTimeout']}) evicts it, then requeues it with backoff{after}"
    )


# -------------------------------------------------------------------------------------------- provisioners


def karpenter_problem(decided: Plan, pool: PoolPlan, req: dict[str, int]) -> tuple[str, bool] | None:
    """(what is wrong, whether no node ever comes for the pod), or None: Karpenter must see every device-plugin
    resource the pod asks for on the instance type (``explain_facts.karpenter_sees``), as the node advertises it;
    seeing fewer, it never launches a node; seeing a different count, it launches too many."""
    from .facts import karpenter_sees, node_advertises

    sees = karpenter_sees(decided, pool)
    advertised, _ = node_advertises(decided, pool)
    for r, n in req.items():
        if sees.get(r, 0) < n:
            return (
                f"Karpenter cannot see {r} on any instance type (it knows {_units(sees)} per node from EC2 "
                "data), so it never launches a node for this pod: add a NodeOverlay for the pool",
                True,
            )
        if sees.get(r) != advertised.get(r):
            return (
                f"Karpenter counts {sees.get(r)} {r} per node, the node advertises {advertised.get(r)}: it "
                "launches nodes for pods that would fit on existing ones; add a NodeOverlay for the pool",
                False,
            )
    return None


def autoscaler_problem(decided: Plan, pool: PoolPlan, pods: list[dict], req: dict[str, int]) -> str | None:
    """Why the Cluster Autoscaler never scales the managed pool up from zero for the pods, or None: it simulates
    each pending pod on its node template (labels, taints, resources; ``explain_facts.autoscaler_sees``)."""
    from .facts import autoscaler_sees, selection_problems, untolerated

    resources, labels, taints = autoscaler_sees(decided, pool)
    for pod in pods:
        problems = selection_problems(pod, labels) + untolerated(pod.get("tolerations") or [], taints)
        if problems:
            return (
                f"the Cluster Autoscaler's node template for {pool.name} does not fit the pod "
                f"({'; '.join(problems)}): it never scales the pool up for it"
            )
    short = {r: n for r, n in req.items() if resources.get(r, 0) < n}
    if short:
        return (
            f"the Cluster Autoscaler's node template offers {_units({r: resources.get(r, 0) for r in short})}, "
            f"the pod asks {_units(short)}: it never scales {pool.name} up from zero; tag the node group "
            f"k8s.io/cluster-autoscaler/node-template/resources/<resource> (managed_pools.autoscaler_tags)"
        )
    return None


def integration_fix(decided: Plan, integration: str) -> str:
    """How to turn on Kueue's integration for a kind: its operator's add-on when that is off (the rule refuses the
    integration without it), else the integration itself."""
    addon = INTEGRATION_OPERATOR.get(integration)
    if addon is not None and not decided.addons[addon].enabled:
        return f"set addons.{addon}: true (and list {integration} if scheduling.kueueIntegrations is set)"
    return f"add {integration} to scheduling.kueueIntegrations"
