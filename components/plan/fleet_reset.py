"""The fleet manager's lost-worker reset (pure; issue 43.5): a CronJob in ``kueue-system`` that runs
``components/data/reset_lost_jobs.py`` every minute, with its least-privilege grant. Why it exists and exactly
what it touches: that module's docstring (Kueue v0.19.2 waits for the manager's copy of a lost worker's job to turn
inactive, and only the lost worker could make it so). The objects are ``components/render/fleet.py``'s.

Least privilege: one Role and RoleBinding per fleet tenant namespace (nothing cluster-wide, nothing in any other
namespace): ``list`` Workloads (it reads them all in one call), ``get`` the dispatched kinds' objects (only the one
owning a lost Workload), ``patch`` their ``status`` subresource (never the object itself: no spec, no delete). Roles
and not one ClusterRole bound per namespace: the grant is as narrow either way, but a ClusterRole with ``patch`` on
``jobs/status`` would be one ClusterRoleBinding away from every namespace. The pod runs as non-root, read-only,
without capabilities (Pod Security ``restricted``), on the system nodes, with a token the kubelet rotates.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..data import versions
from ..spec.model import StackSpec
from . import derive, mirror

RBAC_API = "rbac.authorization.k8s.io/v1"
NAME = "fleet-lost-job-reset"  # the CronJob, its ServiceAccount, Roles and RoleBindings
NAMESPACE = "kueue-system"  # the manager's Kueue's
SCHEDULE = "* * * * *"  # Kueue evicts after workerLostTimeout; the job moves at most a minute later
USER = 65534  # nobody
SCRIPT = (Path(__file__).resolve().parents[1] / "data" / "reset_lost_jobs.py").read_text()
# fleet kind -> the rules on its objects (workloads: every kind's)
KIND_RULES: dict[str, tuple[dict[str, Any], ...]] = {
    "batch/job": (
        {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get"]},
        {"apiGroups": ["batch"], "resources": ["jobs/status"], "verbs": ["patch"]},
    ),
    "jobset.x-k8s.io/jobset": (
        {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": ["get"]},
        {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets/status"], "verbs": ["patch"]},
    ),
}
WORKLOAD_RULE: Mapping[str, Any] = MappingProxyType(
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": ["list"]}
)


@dataclass(frozen=True)
class ResetPlan:
    """The fleet manager's lost-worker reset CronJob and the Roles it runs with."""

    name: str
    namespace: str
    namespaces: tuple[str, ...]  # the fleet tenants' namespaces: where it reads and resets, one Role each
    rules: tuple[Mapping[str, Any], ...]  # each Role's
    cron_job_spec: Mapping[str, Any]


def rules(kinds: tuple[str, ...]) -> tuple[dict[str, Any], ...]:
    return (dict(WORKLOAD_RULE), *(r for k in kinds for r in KIND_RULES[k]))


def cron_job_spec(spec: StackSpec, namespaces: tuple[str, ...]) -> dict[str, Any]:
    container = {
        "name": "reset",
        "image": mirror.pull_ref(spec, versions.FLEET_RESET_IMAGE),
        # -I: no PYTHON* variables, no user site; -B: no bytecode written (the root filesystem is read-only)
        "command": ["python3", "-I", "-B", "-c", SCRIPT],
        "env": [{"name": "NAMESPACES", "value": " ".join(namespaces)}],
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}},
    }
    pod = {
        "serviceAccountName": NAME,
        "restartPolicy": "Never",
        "nodeSelector": derive.system_node_selector(spec),
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": USER,
            "runAsGroup": USER,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [container],
    }
    return {
        "schedule": SCHEDULE,
        "concurrencyPolicy": "Forbid",
        "startingDeadlineSeconds": 50,
        "successfulJobsHistoryLimit": 1,
        "failedJobsHistoryLimit": 3,
        "jobTemplate": {
            "spec": {
                "backoffLimit": 0,
                "activeDeadlineSeconds": 50,
                "template": {
                    "metadata": {"labels": {**derive.MANAGED_BY, "app.kubernetes.io/name": NAME}},
                    "spec": pod,
                },
            }
        },
    }


def build(spec: StackSpec, namespaces: tuple[str, ...], kinds: tuple[str, ...]) -> ResetPlan | None:
    """The reset on a fleet manager (None: ``fleet.resetLostJobs: false``)."""
    assert spec.fleet is not None
    if not spec.fleet.reset_lost_jobs:
        return None
    return ResetPlan(
        name=NAME,
        namespace=NAMESPACE,
        namespaces=namespaces,
        rules=tuple(MappingProxyType(r) for r in rules(kinds)),
        cron_job_spec=MappingProxyType(cron_job_spec(spec, namespaces)),
    )
