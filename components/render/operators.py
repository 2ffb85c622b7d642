"""Workload operators (issue 31): JobSet, LeaderWorkerSet and KubeRay, each the pinned official chart in its own
namespace (decisions, values and the webhook failure policies: ``components/plan/operators.py``)."""

from __future__ import annotations

from typing import ClassVar

from components.data import versions
from components.plan.operators import (  # re-exported: what the objects are made of
    JOBSET as JOBSET,
    KUBERAY as KUBERAY,
    LEADER_WORKER_SET as LEADER_WORKER_SET,
    lws_pdb as lws_pdb,
)
from components.plan.plan import plain
from components.render import addon, k8s
from components.spec.model import StackSpec


class Operator(addon.ChartAddon):
    """Namespace and release of one operator chart (its values from the plan)."""

    PREFIX: ClassVar[str]
    # Pod Security: every operator pod drops all capabilities, runs as non-root with RuntimeDefault seccomp
    # (chart securityContexts; lws's pod context completed in its values): 'restricted'.
    POD_SECURITY: ClassVar[str] = "restricted"

    def build(self, spec: StackSpec) -> None:
        # no system-critical priority class on these pods: no GKE critical-pods quota
        before = self.create_namespace(addon.NamespacePolicy(self.PREFIX, k8s.psa_labels(self.POD_SECURITY)))
        decided = self.plan.addons[self.CHART.key]
        self.install(self.PREFIX, plain(decided.values), before)
        self.extra()
        self.register_outputs({"namespace": self.chart.namespace})

    def extra(self) -> None:
        """Objects beside the release (none by default)."""


class JobSet(Operator):
    TYPE = "gpu-platform:operators:JobSet"
    CHART: ClassVar[versions.Chart] = JOBSET
    PREFIX = "jobset"


class LeaderWorkerSet(Operator):
    TYPE = "gpu-platform:operators:LeaderWorkerSet"
    CHART: ClassVar[versions.Chart] = LEADER_WORKER_SET
    PREFIX = "lws"

    def extra(self) -> None:
        # the chart has no PodDisruptionBudget; its webhooks fail closed (plan/operators.py)
        pdb = lws_pdb(self.chart.namespace)
        k8s.kube_object(
            "lws-controller-pdb",
            "policy/v1",
            "PodDisruptionBudget",
            metadata=pdb["metadata"],
            spec=pdb["spec"],
            opts=self.child([self.release]),
        )


class KubeRay(Operator):
    TYPE = "gpu-platform:operators:KubeRay"
    CHART: ClassVar[versions.Chart] = KUBERAY
    PREFIX = "kuberay"


def install(spec: StackSpec, provider) -> None:
    """Every operator the stack enables."""
    for on, cls in (
        (spec.addons.jobset, JobSet),
        (spec.addons.leader_worker_set, LeaderWorkerSet),
        (spec.addons.kuberay, KubeRay),
    ):
        if on:
            cls(cls.PREFIX, spec, provider)
