"""Workload manifests as ``gpu-platform explain`` reads them: pods, their requests and their queue."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from components import derive

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
    res = container.get("resources") or {}
    merged = {**(res.get("limits") or {}), **(res.get("requests") or {})}
    out = {}
    for name, value in merged.items():
        if "/" in name and not name.startswith(("hugepages-", "kubernetes.io/")):
            try:
                out[name] = int(value)
            except (TypeError, ValueError):
                raise WorkloadError(f"{name}: {value!r} is not a whole number of units") from None
    return out


@dataclass
class Workload:
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
    w = Workload(kind, name, ns, labels, [], None)
    if kind == "Pod" and group == "":
        w.podsets = [PodSet("main", 1, meta, spec)]
        w.integration = "pod"
    elif kind in ("Deployment", "StatefulSet") and group == "apps":
        m, p = _template(spec, where)
        w.podsets = [PodSet("main", _int(spec.get("replicas"), 1), m, p)]
        w.integration, w.per_pod_workloads = "pod", True
    elif kind == "Job" and group == "batch":
        m, p = _template(spec, where)
        n = min(_int(spec.get("parallelism"), 1), _int(spec.get("completions"), _int(spec.get("parallelism"), 1)))
        w.podsets = [PodSet("main", n, m, p)]
        w.integration = "batch/job"
    elif kind == "JobSet" and group == "jobset.x-k8s.io":
        for rj in spec.get("replicatedJobs") or []:
            job = (rj.get("template") or {}).get("spec") or {}
            m, p = _template(job, f"{where} replicatedJob {rj.get('name')}")
            n = _int(rj.get("replicas"), 1) * _int(job.get("parallelism"), 1)
            w.podsets.append(PodSet(str(rj.get("name")), n, m, p))
        w.integration = "jobset.x-k8s.io/jobset"
    elif kind == "PyTorchJob" and group == "kubeflow.org":
        for role, rs in sorted((spec.get("pytorchReplicaSpecs") or {}).items()):
            m, p = _template(rs, f"{where} {role}")
            w.podsets.append(PodSet(role.lower(), _int(rs.get("replicas"), 1), m, p))
        w.integration = "kubeflow.org/pytorchjob"
    elif kind == "RayJob" and group == "ray.io":
        cluster = spec.get("rayClusterSpec") or {}
        m, p = _template(cluster.get("headGroupSpec") or {}, f"{where} head")
        w.podsets.append(PodSet("head", 1, m, p))
        for g in cluster.get("workerGroupSpecs") or []:
            m, p = _template(g, f"{where} worker group {g.get('groupName')}")
            w.podsets.append(PodSet(str(g.get("groupName")), _int(g.get("replicas"), 1), m, p))
        w.integration = "ray.io/rayjob"
    elif kind == "Job" and group == "batch.volcano.sh":
        for task in spec.get("tasks") or []:
            m, p = _template(task, f"{where} task {task.get('name')}")
            w.podsets.append(PodSet(str(task.get("name")), _int(task.get("replicas"), 1), m, p))
        w.volcano_queue = spec.get("queue") or "default"
        w.scheduler_name = spec.get("schedulerName") or "volcano"
        w.priority_class = spec.get("priorityClassName")
    else:
        raise WorkloadError(
            f"{kind} ({api}) is not a workload explain traces "
            "(Pod, Deployment, StatefulSet, Job, JobSet, PyTorchJob, RayJob, Volcano Job)"
        )
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
        raise WorkloadError(
            "no workload in it (Pod, Deployment, StatefulSet, Job, JobSet, PyTorchJob, RayJob, Volcano Job)"
        )
    return workloads
