"""Workload manifests as ``gpu-platform explain`` reads them: pods, their requests and their queue."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from ..plan import derive

GPU_PREFIX = "nvidia.com/"


def is_gpu(resource: str) -> bool:
    """A GPU scheduler resource: nvidia.com/* units, or a DRA class's device count (gpu.nvidia.com/devices)."""
    return resource.startswith(GPU_PREFIX) or resource in derive.DRA_CLASS_OF


VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
PSA_ENFORCE = "pod-security.kubernetes.io/enforce"

# Kinds that carry no pods: listed in a workload file beside the workload (claims, services...), skipped.
PASSIVE_KINDS = frozenset(
    {
        "PersistentVolumeClaim",
        "Service",
        "ConfigMap",
        "Secret",
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "NetworkPolicy",
        "PodDisruptionBudget",
        "HorizontalPodAutoscaler",
        "Ingress",
        "ResourceClaimTemplate",  # DRA: read for the claims pods make from them (Workload.claim_specs)
        "ResourceClaim",
        "DeviceClass",
    }
)


class WorkloadError(Exception):
    """The workload file cannot be read or holds something explain does not trace (exit 2)."""


# ---------------------------------------------------------------------------------------- workloads


@dataclass
class PodSet:
    """A group of identical pods of a workload: their count, template and requests."""

    name: str
    count: int
    metadata: dict[str, Any]  # the pod template's metadata
    pod: dict[str, Any]  # the pod spec
    claims: dict[str, int] = field(default_factory=dict)  # DRA devices per quota resource (resolved later)

    def requests(self) -> dict[str, int]:
        """GPU units one pod asks for (requests, else limits, as Kubernetes defaults them), summed over
        its containers (init containers run one at a time: their maximum); on DRA stacks its claims' devices."""
        return {r: n for r, n in self.devices().items() if is_gpu(r)}

    def devices(self) -> dict[str, int]:
        """Every device-plugin resource one pod asks for: GPU units and others such as EFA interfaces
        (``vpc.amazonaws.com/efa``), which Kueue does not ration but a node must still bring."""
        total: dict[str, int] = defaultdict(int)
        for c in self.pod.get("containers") or []:
            for name, n in _device_resources(c).items():
                total[name] += n
        for c in self.pod.get("initContainers") or []:
            for name, n in _device_resources(c).items():
                total[name] = max(total[name], n)
        for name, n in self.claims.items():
            total[name] += n
        return dict(sorted(total.items()))


def _device_resources(container: Mapping[str, Any]) -> dict[str, int]:
    """Extended resources the container asks for, without those it asks 0 of: a zero request is no need.
    kube-scheduler's NodeResourcesFit skips it ("Skip in case request quantity is zero", kubernetes v1.35
    pkg/scheduler/framework/plugins/noderesources/fit.go, fitsRequest) and Kueue counts no usage for it
    (kueue v0.19.2 pkg/scheduler/flavorassigner/flavorassigner.go:272-277, 802-808), so a pod asking only
    ``nvidia.com/gpu: 0`` is not a GPU workload and ``vpc.amazonaws.com/efa: 0`` needs no EFA node."""
    res = container.get("resources") or {}
    merged = {**(res.get("limits") or {}), **(res.get("requests") or {})}
    out = {}
    for name, value in merged.items():
        if "/" in name and not name.startswith(("hugepages-", "kubernetes.io/")):
            try:
                n = int(value)
            except (TypeError, ValueError):
                raise WorkloadError(f"{name}: {value!r} is not a whole number of units") from None
            if n:
                out[name] = n
    return out


@dataclass
class Workload:
    """A workload manifest as explain reads it: its kind, name, namespace, labels and pod sets."""

    kind: str
    name: str
    namespace: str
    labels: dict[str, str]
    podsets: list[PodSet]
    integration: str | None  # the Kueue framework managing this kind; None for Volcano Jobs
    volcano_queue: str | None = None
    scheduler_name: str | None = None
    priority_class: str | None = None
    per_pod_workloads: bool = False  # Deployment/StatefulSet: Kueue admits each pod as its own workload
    # DRA objects in the same file: ("template" | "claim", name) -> ResourceClaimSpec
    claim_specs: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    group: str = ""  # the API group of the kind ("" for the core group)
    # LeaderWorkerSet: Kueue admits each group (leader and its workers) as a workload of its own, so the pod sets
    # (every group's pods) hold quota 1/workload_copies at a time
    workload_copies: int = 1
    # Volcano Job: spec.minAvailable and each task's minAvailable (None: unset), read for the PodGroup's
    # minResources (``explain_schedulers.volcano_min_pods``)
    min_available: int | None = None
    task_min_available: dict[str, int | None] = field(default_factory=dict)
    # batch Job: how many lost pods it survives, a pod evicted from a reclaimed node included (its backoffLimit);
    # None where a podFailurePolicy rule ignores disruptions (DisruptionTarget) or the kind is not a Job
    disruptions_fail_after: int | None = None

    @property
    def ref(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


def _template(doc: Mapping[str, Any], where: str) -> tuple[dict[str, Any], dict[str, Any]]:
    tpl = doc.get("template")
    if not isinstance(tpl, dict) or not isinstance(tpl.get("spec"), dict):
        raise WorkloadError(f"{where}: no pod template")
    return tpl.get("metadata") or {}, tpl["spec"]


def _int(value: Any, default: int) -> int:
    return int(value) if value is not None else default


# Pod fields the trace reads, by the shape the Pod API gives them: a malformed one is bad input, said as such,
# not a crash halfway through a layer.
_POD_LISTS = ("containers", "initContainers", "tolerations", "resourceClaims")
_POD_MAPS = ("nodeSelector", "affinity", "securityContext")


def _pod_shape_problem(pod: Any) -> str | None:
    if not isinstance(pod, dict):
        return "the pod spec is not a mapping"
    for name in _POD_LISTS:
        value = pod.get(name)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, dict) for v in value)):
            return f"{name} must be a list of mappings"
    for name in _POD_MAPS:
        value = pod.get(name)
        if value is not None and not isinstance(value, dict):
            return f"{name} must be a mapping"
    return None


# ------------------------------------------------------------------------------------ kinds and readers
# One reader per kind: it fills the workload's pod sets and names the Kueue integration that manages it.


def _read_pod(w: Workload, spec: Mapping[str, Any], meta: Mapping[str, Any], where: str) -> None:
    w.podsets = [PodSet("main", 1, meta, spec)]  # a spec of the wrong shape is refused below
    w.integration = "pod"


def _read_replicated(w: Workload, spec: Mapping[str, Any], meta: Mapping[str, Any], where: str) -> None:
    m, p = _template(spec, where)
    w.podsets = [PodSet("main", _int(spec.get("replicas"), 1), m, p)]
    w.integration, w.per_pod_workloads = "pod", True


def _read_job(w: Workload, spec: Mapping[str, Any], meta: Mapping[str, Any], where: str) -> None:
    m, p = _template(spec, where)
    n = min(_int(spec.get("parallelism"), 1), _int(spec.get("completions"), _int(spec.get("parallelism"), 1)))
    w.podsets = [PodSet("main", n, m, p)]
    w.integration = "batch/job"
    rules = ((spec.get("podFailurePolicy") or {}).get("rules")) or []
    ignores = any(
        r.get("action") == "Ignore" and any(c.get("type") == "DisruptionTarget" for c in r.get("onPodConditions") or [])
        for r in rules
        if isinstance(r, Mapping)
    )
    # the Job controller counts a pod evicted from a removed node as a failure unless a rule ignores it
    # (kubernetes.io/docs/concepts/workloads/controllers/job/#pod-failure-policy); backoffLimit defaults to 6
    w.disruptions_fail_after = None if ignores else _int(spec.get("backoffLimit"), 6)


def _read_jobset(w: Workload, spec: Mapping[str, Any], meta: Mapping[str, Any], where: str) -> None:
    for rj in spec.get("replicatedJobs") or []:
        job = (rj.get("template") or {}).get("spec") or {}
        m, p = _template(job, f"{where} replicatedJob {rj.get('name')}")
        n = _int(rj.get("replicas"), 1) * _int(job.get("parallelism"), 1)
        w.podsets.append(PodSet(str(rj.get("name")), n, m, p))
    w.integration = "jobset.x-k8s.io/jobset"


def _read_replica_specs(key: str, integration: str):
    """Kubeflow jobs: PyTorchJob (pytorchReplicaSpecs), MPIJob (mpiReplicaSpecs), one pod set per role."""

    def read(w: Workload, spec: Mapping[str, Any], meta: Mapping[str, Any], where: str) -> None:
        for role, rs in sorted((spec.get(key) or {}).items()):
            m, p = _template(rs, f"{where} {role}")
            w.podsets.append(PodSet(role.lower(), _int(rs.get("replicas"), 1), m, p))
        w.integration = integration

    return read


def _ray_groups(w: Workload, cluster: Mapping[str, Any], where: str) -> None:
    m, p = _template(cluster.get("headGroupSpec") or {}, f"{where} head")
    w.podsets.append(PodSet("head", 1, m, p))
    for g in cluster.get("workerGroupSpecs") or []:
        m, p = _template(g, f"{where} worker group {g.get('groupName')}")
        w.podsets.append(PodSet(str(g.get("groupName")), _int(g.get("replicas"), 1), m, p))


def _read_rayjob(w: Workload, spec: Mapping[str, Any], meta: Mapping[str, Any], where: str) -> None:
    _ray_groups(w, spec.get("rayClusterSpec") or {}, where)
    w.integration = "ray.io/rayjob"


def _read_raycluster(w: Workload, spec: Mapping[str, Any], meta: Mapping[str, Any], where: str) -> None:
    _ray_groups(w, spec, where)
    w.integration = "ray.io/raycluster"


def _read_lws(w: Workload, spec: Mapping[str, Any], meta: Mapping[str, Any], where: str) -> None:
    """LeaderWorkerSet (leaderworkerset.x-k8s.io/v1): ``replicas`` groups of ``size`` pods, one leader (its own
    template, else the worker template) and size - 1 workers; Kueue admits each group as one workload."""
    lwt = spec.get("leaderWorkerTemplate") or {}
    groups, size = _int(spec.get("replicas"), 1), _int(lwt.get("size"), 1)
    wm, wp = _template({"template": lwt.get("workerTemplate")}, f"{where} workers")
    leader = lwt.get("leaderTemplate")
    lm, lp = _template({"template": leader}, f"{where} leader") if leader is not None else (wm, wp)
    w.podsets = [PodSet("leader", groups, lm, lp), PodSet("workers", groups * (size - 1), wm, wp)]
    w.integration, w.workload_copies = "leaderworkerset.x-k8s.io/leaderworkerset", max(groups, 1)


# The trainer step's replicated Job in the runtimes the Trainer ships (kubeflow/trainer v2.2.1
# pkg/constants/constants.go ``Node``; charts/kubeflow-trainer/templates/runtimes/torch-distributed.yaml
# ``replicatedJobs: - name: node`` with the container ``node``).
TRAINJOB_NODE = "node"


def _trainjob_pod_patch(spec: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The pod template metadata and pod spec fields the TrainJob's ``runtimePatches`` set on the trainer step,
    in list order (a later patch's field wins). The Trainer strategic-merges each patch into the runtime's Job
    template (kubeflow/trainer v2.2.1 pkg/runtime/core/trainingruntime.go ``mergeRuntimePatches``); the runtime's
    own template is not in the file, so these fields are all explain knows of the pods beyond ``trainer``."""
    meta: dict[str, Any] = {}
    pod: dict[str, Any] = {}
    for patch in spec.get("runtimePatches") or []:
        template = ((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec") or {}
        for rj in template.get("replicatedJobs") or []:
            if rj.get("name") != TRAINJOB_NODE:
                continue
            tpl = (((rj.get("template") or {}).get("spec") or {}).get("template")) or {}
            for key in ("labels", "annotations"):
                meta.setdefault(key, {}).update((tpl.get("metadata") or {}).get(key) or {})
            pod.update(tpl.get("spec") or {})
    return {k: v for k, v in meta.items() if v}, pod


def _read_trainjob(w: Workload, spec: Mapping[str, Any], meta: Mapping[str, Any], where: str) -> None:
    """TrainJob (trainer.kubeflow.org/v1alpha1): its pod templates live in the referenced training runtime; the
    file gives the node count (``trainer.numNodes``), each node's resources (``trainer.resourcesPerNode``, set on
    the ``node`` container) and the pod fields its ``runtimePatches`` set (node selector, tolerations, volumes).
    Kueue admits the JobSet the Trainer would build from them: one pod set per replicated Job, the trainer
    step's of ``numNodes`` pods (kueue v0.19.2 pkg/controller/jobs/trainjob/trainjob_controller.go
    ``getChildJobSet``; kubeflow/trainer v2.2.1 pkg/runtime/core/trainingruntime.go ``newRuntimeInfo``,
    pkg/runtime/framework/plugins/torch/torch.go: the count is ``trainer.numNodes``, else the runtime's
    ``mlPolicy.numNodes``, 1 in torch-distributed)."""
    trainer = spec.get("trainer") or {}
    resources = trainer.get("resourcesPerNode") or {}
    m, patch = _trainjob_pod_patch(spec)
    patched = {c.get("name"): c for c in patch.get("containers") or [] if isinstance(c, dict)}
    node = {**patched.get(TRAINJOB_NODE, {}), "name": TRAINJOB_NODE, "resources": resources}
    others = [c for n, c in patched.items() if n != TRAINJOB_NODE]
    pod = {**patch, "containers": [node, *others]}
    w.podsets = [PodSet(TRAINJOB_NODE, _int(trainer.get("numNodes"), 1), m, pod)]
    w.integration = "trainer.kubeflow.org/trainjob"


def _read_volcano_job(w: Workload, spec: Mapping[str, Any], meta: Mapping[str, Any], where: str) -> None:
    for task in spec.get("tasks") or []:
        m, p = _template(task, f"{where} task {task.get('name')}")
        w.podsets.append(PodSet(str(task.get("name")), _int(task.get("replicas"), 1), m, p))
        w.task_min_available[str(task.get("name"))] = task.get("minAvailable")
    w.volcano_queue = spec.get("queue") or "default"
    w.scheduler_name = spec.get("schedulerName") or "volcano"
    w.priority_class = spec.get("priorityClassName")
    w.min_available = spec.get("minAvailable")


# (API group, kind) -> reader. A kind is read only with its own API group.
READERS = {
    ("", "Pod"): _read_pod,
    ("apps", "Deployment"): _read_replicated,
    ("apps", "StatefulSet"): _read_replicated,
    ("batch", "Job"): _read_job,
    ("jobset.x-k8s.io", "JobSet"): _read_jobset,
    ("kubeflow.org", "PyTorchJob"): _read_replica_specs("pytorchReplicaSpecs", "kubeflow.org/pytorchjob"),
    ("kubeflow.org", "MPIJob"): _read_replica_specs("mpiReplicaSpecs", "kubeflow.org/mpijob"),
    ("trainer.kubeflow.org", "TrainJob"): _read_trainjob,
    ("ray.io", "RayJob"): _read_rayjob,
    ("ray.io", "RayCluster"): _read_raycluster,
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): _read_lws,
    ("batch.volcano.sh", "Job"): _read_volcano_job,
}
KINDS = (
    "Pod, Deployment, StatefulSet, Job, JobSet, PyTorchJob, MPIJob, TrainJob, RayJob, RayCluster, LeaderWorkerSet, "
    "Volcano Job"
)


def parse(doc: Mapping[str, Any]) -> Workload | None:
    """One manifest -> a Workload; None for kinds without pods; WorkloadError for unsupported ones."""
    if not isinstance(doc, dict) or "kind" not in doc:
        raise WorkloadError("a document without 'kind'")
    kind, api = doc["kind"], str(doc.get("apiVersion", ""))
    group = api.split("/")[0] if "/" in api else ""
    if kind in PASSIVE_KINDS:
        return None
    meta = doc.get("metadata") or {}
    name = meta.get("name") or "?"
    ns = meta.get("namespace") or "default"
    labels = meta.get("labels") or {}
    spec = doc.get("spec") or {}
    where = f"{kind} {name}"
    reader = READERS.get((group, kind))
    if reader is None:
        raise WorkloadError(f"{kind} ({api}) is not a workload explain traces ({KINDS})")
    w = Workload(kind, name, ns, labels, [], None, group=group)
    reader(w, spec, meta, where)
    if not w.podsets:
        raise WorkloadError(f"{where}: no pods")
    for ps in w.podsets:
        problem = _pod_shape_problem(ps.pod)
        if problem:
            raise WorkloadError(f"{where}: {problem}")
    if w.scheduler_name is None:
        names = {ps.pod.get("schedulerName") for ps in w.podsets} - {None}
        w.scheduler_name = names.pop() if len(names) == 1 else None
    if w.priority_class is None:
        classes = [ps.pod.get("priorityClassName") for ps in w.podsets if ps.pod.get("priorityClassName")]
        w.priority_class = classes[0] if classes else None
    return w


def load(text: str) -> list[Workload]:
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as err:
        raise WorkloadError(f"not YAML: {str(err).splitlines()[0]}") from None
    workloads = []
    for i, doc in enumerate(docs):
        try:
            w = parse(doc)
        except (AttributeError, TypeError, ValueError, KeyError) as err:  # a field of the wrong shape
            raise WorkloadError(f"document {i + 1}: malformed ({type(err).__name__}: {err})") from None
        if w is not None:
            workloads.append(w)
    claim_specs: dict[tuple[str, str, str], dict[str, Any]] = {}
    for doc in docs:
        kind = doc.get("kind") if isinstance(doc, dict) else None
        if kind in ("ResourceClaimTemplate", "ResourceClaim"):
            meta = doc.get("metadata") or {}
            body = (doc.get("spec") or {}).get("spec") if kind == "ResourceClaimTemplate" else doc.get("spec")
            what = "template" if kind == "ResourceClaimTemplate" else "claim"
            claim_specs[(meta.get("namespace") or "default", what, meta.get("name"))] = body or {}
    for w in workloads:
        w.claim_specs = {(what, n): b for (ns, what, n), b in claim_specs.items() if ns == w.namespace}
    if not workloads:
        raise WorkloadError(f"no workload in it ({KINDS})")
    return workloads
