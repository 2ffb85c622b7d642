"""Workload operators (issue 31): JobSet, LeaderWorkerSet, KubeRay and Kubeflow Trainer as add-ons, and the rules
that keep Kueue's integrations and the installed operators in step (pure).

Each is the official chart at the version Kueue 0.19.2 is built against (``components/data/versions.py``), on when
the stack sets ``addons.jobset`` / ``addons.leaderWorkerSet`` / ``addons.kuberay`` / ``addons.trainer``. Kueue's
integration for a kind is in its default ``integrations.frameworks`` only with the kind's operator
(``spec.options.OPERATOR_INTEGRATIONS``), and a stack that lists one without its operator is refused
(``integrations_need_their_operator``).

Order: none is needed. Kueue does not need an operator's CRD when it starts: for an enabled framework whose API the
server does not serve yet, it registers the webhook and sets the controller up once the CRD appears (kueue v0.19.2
``pkg/controller/jobframework/setup.go``: ``restMappingExists`` NoMatch -> ``WaitForAPI``).

Admission webhooks and their failure policy (issue 31.4: a webhook that fails closed runs two replicas with a
PodDisruptionBudget):

- JobSet v0.12.0 ``charts/jobset/templates/webhook/manifests.yaml``: mutating and validating webhooks on JobSets
  and on the Pods of a JobSet (objectSelector ``jobset.sigs.k8s.io/jobset-name``) with no ``failurePolicy``, so
  admissionregistration/v1's default ``Fail``: closed. The chart has ``controller.replicas`` and
  ``controller.podDisruptionBudget``: two replicas, a PDB of minAvailable 1.
- LeaderWorkerSet v0.9.0 ``charts/lws/templates/webhook/webhook.yaml``: ``failurePolicy: Fail`` on
  LeaderWorkerSets and their Pods (objectSelector on the lws name label). The chart has ``replicaCount`` but no PDB
  template: two replicas, and the platform adds the PDB (``lws_pdb``).
- KubeRay v1.6.2 ``helm-chart/kuberay-operator/templates/``: no webhook (the chart ships none), so one replica with
  leader election, as upstream sets it.
- Kubeflow Trainer v2.2.1 ``charts/kubeflow-trainer/templates/webhook/``: validating webhooks on TrainJobs and
  (Cluster)TrainingRuntimes and a mutating one on TrainJobs, ``failurePolicy`` from ``webhook.failurePolicy``,
  ``Fail`` in values.yaml: closed. The chart has ``manager.replicas`` (leader election on) but no PDB template: two
  replicas, and the platform adds the PDB (``trainer_pdb``).

Kubeflow Trainer runs each TrainJob as a JobSet, so it needs JobSet (``trainer_needs_jobset``). Its chart can install
JobSet 0.11.0 itself, a dependency on by default (values.yaml ``jobset.install: true``: "This must be set to `false`
if jobset controller/webhook has already been installed into the cluster"); the platform sets it false and uses its
own (``addons.jobset``: the version Kueue is built against, two replicas and a PDB). Its LeaderWorkerSet dependency is
only for the data cache (Chart.yaml condition ``dataCache.enabled,dataCache.lws.install``), off by default and here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..data import versions
from ..spec.model import Problem, StackSpec, key, rule
from ..spec.options import INTEGRATION_OPERATOR
from . import derive, mirror, webhooks
from .frozen import plain
from .webhooks import pdb, spread

JOBSET = versions.JOBSET
LEADER_WORKER_SET = versions.LEADER_WORKER_SET
KUBERAY = versions.KUBERAY

# Replicas of the operators whose webhooks fail closed: two, so a drain or a crash never leaves nobody to answer.
WEBHOOK_REPLICAS = webhooks.FAIL_CLOSED_REPLICAS
# The pods of the lws controller (charts/lws/templates/manager/deployment.yaml selector: control-plane and
# lws.selectorLabels, app.kubernetes.io/name = the chart name, instance = the release name).
LWS_CONTROLLER_LABELS = {
    "control-plane": "controller-manager",
    "app.kubernetes.io/name": "lws",
    "app.kubernetes.io/instance": LEADER_WORKER_SET.release,
}
LWS_PDB = "lws-controller-manager"
# The pods of the JobSet controller (charts/jobset/templates/controller/_helpers.tpl selectorLabels).
JOBSET_CONTROLLER_LABELS = {
    "app.kubernetes.io/name": "jobset",
    "app.kubernetes.io/instance": JOBSET.release,
    "app.kubernetes.io/component": "controller",
}
TRAINER = versions.TRAINER
# The pods of the trainer's manager (charts/kubeflow-trainer/templates/manager/_helpers.tpl selectorLabels:
# trainer.selectorLabels, name = the chart name, instance = the release name, plus part-of and component).
TRAINER_MANAGER_LABELS = {
    "app.kubernetes.io/name": "kubeflow-trainer",
    "app.kubernetes.io/instance": TRAINER.release,
    "app.kubernetes.io/part-of": "kubeflow",
    "app.kubernetes.io/component": "manager",
}
TRAINER_PDB = "kubeflow-trainer-manager"


def enabled(spec: StackSpec) -> dict[str, bool]:
    """addons key -> whether the stack installs that operator."""
    a = spec.addons
    return {
        JOBSET.key: a.jobset,
        LEADER_WORKER_SET.key: a.leader_worker_set,
        KUBERAY.key: a.kuberay,
        TRAINER.key: a.trainer,
    }


def jobset_values(spec: StackSpec) -> dict[str, Any]:
    """Values of the jobset release; every path exists in the pinned chart's values.yaml."""
    return {
        "controller": {
            "replicas": WEBHOOK_REPLICAS,
            "podDisruptionBudget": {"enabled": True, "minAvailable": 1},
            "nodeSelector": derive.system_node_selector(spec),
            "affinity": spread(JOBSET_CONTROLLER_LABELS),
        },
    }


def lws_values(spec: StackSpec) -> dict[str, Any]:
    """Values of the lws release; every path exists in the pinned chart's values.yaml."""
    return {
        "replicaCount": WEBHOOK_REPLICAS,
        "nodeSelector": derive.system_node_selector(spec),
        "affinity": spread(LWS_CONTROLLER_LABELS),
        # the chart's pod context sets only runAsNonRoot; with the seccomp profile the pod meets 'restricted'
        "podSecurityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    }


def lws_pdb(namespace: str) -> dict[str, Any]:
    """The lws controller's PodDisruptionBudget (its chart has none)."""
    return pdb(LWS_PDB, namespace, LWS_CONTROLLER_LABELS)


def trainer_pdb(namespace: str) -> dict[str, Any]:
    """The trainer manager's PodDisruptionBudget (its chart has none)."""
    return pdb(TRAINER_PDB, namespace, TRAINER_MANAGER_LABELS)


def ray_batch_scheduler(spec: StackSpec) -> str | None:
    """KubeRay's batch scheduler: ``volcano`` when every tenant is a Volcano tenant, else none.

    With it, KubeRay makes one PodGroup per RayCluster/RayJob (the gang: head and workers at once) and sets
    ``schedulerName: volcano`` on their pods. It is one setting for the whole operator: KubeRay v1.6.2 calls its
    batch scheduler for every RayCluster and RayJob in every namespace (ray-operator/controllers/ray/
    raycluster_controller.go, rayjob_controller.go: ``BatchSchedulerManager.GetScheduler()`` with no per-object
    choice; batchscheduler/schedulermanager.go). Beside a Kueue tenant (or one without a batch scheduler) it
    would hand that tenant's Ray pods to Volcano, in queue "default", which the tenant queue policy refuses; so
    there it stays unset, and a Volcano tenant's Ray pods set ``schedulerName: volcano`` in their templates
    (the tenant pods policy asks it of GPU pods): each pod gets a PodGroup of its own in the tenant's queue, not a
    gang (explain says so)."""
    if not (spec.addons.kuberay and derive.volcano_tenants(spec)):
        return None
    if all(derive.tenant_scheduler(spec, t) == "volcano" for t in spec.tenants):
        return "volcano"
    return None


def kuberay_values(spec: StackSpec) -> dict[str, Any]:
    """Values of the kuberay-operator release; every path exists in the pinned chart's values.yaml
    (``batchScheduler.name``: ``ray_batch_scheduler``)."""
    out: dict[str, Any] = {"nodeSelector": derive.system_node_selector(spec)}
    scheduler = ray_batch_scheduler(spec)
    if scheduler:
        out["batchScheduler"] = {"name": scheduler}
    return out


# The ClusterTrainingRuntime torch-distributed, so a TrainJob has a PyTorch runtime to reference
# (examples/trainjob-training.yaml): the object charts/kubeflow-trainer/templates/runtimes/torch-distributed.yaml
# renders at v2.2.1 (its image the template's), made by the platform instead of the chart. In the chart it is an
# object of the same Helm install as the ValidatingWebhookConfiguration that guards ClusterTrainingRuntimes
# (templates/webhook/validating_webhook_configuration.yaml, failurePolicy Fail): Helm creates custom resources
# after the webhook configuration without waiting for the manager that serves it, so the first install is refused
# ("failed calling webhook"). Upstream's own manifests install the manager first and the runtimes after it is
# ready (manifests/overlays/manager, then manifests/overlays/runtimes); here the runtime waits for the webhook gate
# (``trainer_probe``: a server-side dry-run of the same runtime).
TRAINER_API = "trainer.kubeflow.org/v1alpha1"
TORCH_RUNTIME = "torch-distributed"
TORCH_RUNTIME_IMAGE = versions.TRAINER_TORCH_RUNTIME_IMAGE


def torch_runtime_spec(spec: StackSpec) -> dict[str, Any]:
    """The runtime's spec; its image through the stack's mirror (``mirror.pull_ref``: Docker Hub's image keeps its
    source registry as the mirror's first path segment)."""
    image = mirror.pull_ref(spec, TORCH_RUNTIME_IMAGE)
    return {
        "mlPolicy": {"numNodes": 1, "torch": {}},
        "template": {
            "spec": {
                "replicatedJobs": [
                    {
                        "name": "node",
                        "template": {
                            "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                            "spec": {"template": {"spec": {"containers": [{"name": "node", "image": image}]}}},
                        },
                    }
                ]
            }
        },
    }


def torch_runtime(runtime_spec: Mapping[str, Any]) -> dict[str, Any]:
    """The ClusterTrainingRuntime object of ``runtime_spec`` (``torch_runtime_spec``, which the trainer's probe
    carries: the gate dry-runs exactly what is then created); labels: the template's framework label and the
    platform's."""
    return {
        "apiVersion": TRAINER_API,
        "kind": "ClusterTrainingRuntime",
        "metadata": {
            "name": TORCH_RUNTIME,
            "labels": {"trainer.kubeflow.org/framework": "torch", **derive.MANAGED_BY},
        },
        "spec": plain(runtime_spec),
    }


def trainer_probe(spec: StackSpec) -> webhooks.Probe:
    """A dry-run of the runtime itself: it passes the validating webhook on ClusterTrainingRuntimes, served by the
    manager that also serves the TrainJob webhooks."""
    chart = versions.for_spec(TRAINER, spec)
    return webhooks.custom_resource_probe(
        "trainer", chart, TRAINER_API, "ClusterTrainingRuntime", "clustertrainingruntimes", torch_runtime_spec(spec)
    )


def trainer_values(spec: StackSpec) -> dict[str, Any]:
    """Values of the kubeflow-trainer release; every path exists in the pinned chart's values.yaml."""
    return {
        "jobset": {"install": False},  # the platform's JobSet (addons.jobset), not a second one (module docstring)
        # no runtime from the chart: the platform makes torch-distributed after the webhook answers (above)
        "runtimes": {"torchDistributed": {"enabled": False}},
        "manager": {
            "replicas": WEBHOOK_REPLICAS,
            "nodeSelector": derive.system_node_selector(spec),
            "affinity": spread(TRAINER_MANAGER_LABELS),
        },
    }


VALUES = {
    JOBSET.key: jobset_values,
    LEADER_WORKER_SET.key: lws_values,
    KUBERAY.key: kuberay_values,
    TRAINER.key: trainer_values,
}
# the addons key as the stack file spells it, for messages
ADDON_KEYS = {
    JOBSET.key: "jobset",
    LEADER_WORKER_SET.key: "leaderWorkerSet",
    KUBERAY.key: "kuberay",
    TRAINER.key: "trainer",
}


@rule
def integrations_need_their_operator(spec: StackSpec) -> Iterator[Problem]:
    """A Kueue integration for a kind whose operator the platform installs is refused without that operator: Kueue
    would manage a kind nobody runs (its webhook would still default and suspend the objects)."""
    if not spec.addons.kueue:
        return
    on = enabled(spec)
    for i, name in enumerate(spec.scheduling.kueue_integrations):
        operator = INTEGRATION_OPERATOR.get(name)
        if operator is not None and not on[operator]:
            yield Problem(
                key("scheduling", "kueueIntegrations", i),
                f"{name} needs its operator: set addons.{ADDON_KEYS[operator]}: true, or drop it from the list",
            )


@rule
def trainer_needs_jobset(spec: StackSpec) -> Iterator[Problem]:
    """Kubeflow Trainer runs each TrainJob as a JobSet, and its chart's own JobSet stays off (module docstring):
    without addons.jobset nobody would run them."""
    if spec.addons.trainer and not spec.addons.jobset:
        yield Problem(
            key("addons", "trainer"),
            "Kubeflow Trainer runs each TrainJob as a JobSet: set addons.jobset: true too",
        )
