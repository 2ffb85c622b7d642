"""What a webhook gate is (pure): the probe object, the Job that dry-runs it and its least-privilege RBAC. The
gate's resources, and why it exists, are ``components/render/webhooks.py``'s."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from ..data import versions
from ..spec.model import StackSpec
from . import derive, mirror

RBAC_API = "rbac.authorization.k8s.io/v1"
PROBE_FILE = "probe.yaml"
# Name of the object each probe dry-runs; a rule keeps pools and tenants off it (a dry-run create of an existing
# name fails with AlreadyExists, and the gate would never open).
PROBE_OBJECT_NAME = "gpu-platform-webhook-probe"
PROBE_USER = 65532  # "nonroot" in distroless images
# Pod retries while the webhook is not answering: back-off 10 s doubling (capped at 6 min), so 6 retries
# cover about 10 minutes; the webhook normally answers within 30 s of its Deployment being Ready.
BACKOFF_LIMIT = 6
ACTIVE_DEADLINE_SECONDS = 900
AWAIT_TIMEOUT = "20m"  # pulumi's Job await (default 10 m) must outlast the Job's own deadline


@dataclass(frozen=True)
class Probe:
    """What to dry-run create to know an add-on's webhook answers."""

    name: str  # add-on key: resource names and the ServiceAccount derive from it
    namespace: str  # where the probe Job runs (the add-on's namespace)
    api_group: str  # RBAC group of the probed resource
    resource: str  # RBAC resource (plural) of the probed object
    obj: dict[str, Any]  # the object sent with dryRun=All (never stored)
    chart_version: str  # the release's chart version (a change re-runs the gate)


def custom_resource_probe(
    name: str, chart: versions.Chart, api: str, kind: str, resource: str, body: dict[str, Any]
) -> Probe:
    """The probe of an add-on whose webhooks guard its custom resources: a dry-run of a ``kind`` (``api``,
    RBAC ``resource``) named ``PROBE_OBJECT_NAME`` with ``spec`` ``body``, run in the release's namespace
    (``chart``, resolved: its version re-runs the gate on upgrade)."""
    return Probe(
        name=name,
        namespace=chart.namespace,
        api_group=api.split("/")[0],
        resource=resource,
        obj={
            "apiVersion": api,
            "kind": kind,
            "metadata": {"name": PROBE_OBJECT_NAME, "labels": derive.MANAGED_BY},
            "spec": body,
        },
        chart_version=chart.version,
    )


def job_name(probe: Probe) -> str:
    return f"{probe.name}-webhook-ready"


def job_object_name(body: dict[str, Any], probe: Probe) -> str:
    """The Job's ``metadata.name``: ``<addon>-webhook-ready-<8 hex of sha256 over its spec>``."""
    digest = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return f"{job_name(probe)}-{digest[:8]}"


def service_account_name(probe: Probe) -> str:
    return f"{probe.name}-webhook-probe"


def cluster_role_name(probe: Probe) -> str:
    return f"gpu-platform-{probe.name}-webhook-probe"


def cluster_role_rules(probe: Probe) -> list[dict[str, Any]]:
    return [{"apiGroups": [probe.api_group], "resources": [probe.resource], "verbs": ["create"]}]


def job_spec(spec: StackSpec, probe: Probe) -> dict[str, Any]:
    """The probe Job's spec: Pod Security 'restricted', system nodes, a pinned kubectl from registry.k8s.io."""
    return {
        "backoffLimit": BACKOFF_LIMIT,
        "activeDeadlineSeconds": ACTIVE_DEADLINE_SECONDS,
        "template": {
            "metadata": {
                "labels": {**derive.MANAGED_BY, "app.kubernetes.io/name": job_name(probe)},
                "annotations": {"gpu-platform/probed-chart-version": probe.chart_version},
            },
            "spec": {
                "serviceAccountName": service_account_name(probe),
                "restartPolicy": "Never",
                "nodeSelector": derive.system_node_selector(spec),
                "securityContext": {
                    "runAsNonRoot": True,
                    "runAsUser": PROBE_USER,
                    "runAsGroup": PROBE_USER,
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
                "containers": [
                    {
                        "name": "probe",
                        "image": mirror.pull_ref(spec, versions.KUBECTL_IMAGE),
                        "args": ["create", "--dry-run=server", "-f", f"/probe/{PROBE_FILE}"],
                        # kubectl caches discovery under $HOME/.kube: a writable emptyDir, the rest read-only
                        "env": [{"name": "HOME", "value": "/tmp"}],
                        "securityContext": {
                            "allowPrivilegeEscalation": False,
                            "readOnlyRootFilesystem": True,
                            "capabilities": {"drop": ["ALL"]},
                        },
                        "resources": {
                            "requests": {"cpu": "10m", "memory": "32Mi"},
                            "limits": {"memory": "128Mi"},
                        },
                        "volumeMounts": [
                            {"name": "probe", "mountPath": "/probe", "readOnly": True},
                            {"name": "tmp", "mountPath": "/tmp"},
                        ],
                    }
                ],
                "volumes": [
                    {"name": "probe", "configMap": {"name": job_name(probe)}},
                    {"name": "tmp", "emptyDir": {"sizeLimit": "16Mi"}},
                ],
            },
        },
    }


# ------------------------------------------------------------------ webhooks that fail closed, kept up
# An admission webhook that fails closed refuses what it guards while its controller is down: such controllers
# (Volcano's admission, JobSet, LeaderWorkerSet, the Kubeflow Trainer) run two replicas on different nodes and a
# disruption budget that keeps one through voluntary evictions (issue 31).
FAIL_CLOSED_REPLICAS = 2


def spread(labels: dict[str, str]) -> dict[str, Any]:
    """Spread a controller's replicas over nodes (preferred: a single system node still runs both)."""
    return {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": dict(labels)},
                        "topologyKey": "kubernetes.io/hostname",
                    },
                }
            ]
        }
    }


def pdb(name: str, namespace: str, labels: dict[str, str]) -> dict[str, Any]:
    """A PodDisruptionBudget keeping one of a controller's replicas (for the charts that have none)."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace, "labels": derive.MANAGED_BY},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": dict(labels)}},
    }
