"""Workload operators (issue 31): JobSet, LeaderWorkerSet, KubeRay and Kubeflow Trainer, each the pinned official
chart in its own namespace (decisions, values and the webhook failure policies: ``components/plan/operators.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import pulumi

from ..data import versions
from ..plan.operators import (  # re-exported: what the objects are made of
    JOBSET as JOBSET,
    KUBERAY as KUBERAY,
    LEADER_WORKER_SET as LEADER_WORKER_SET,
    TRAINER as TRAINER,
    lws_pdb as lws_pdb,
    torch_runtime as torch_runtime,
    trainer_pdb as trainer_pdb,
)
from ..plan.plan import Plan, plain
from . import addon, k8s


class Operator(addon.ChartAddon):
    """Namespace and release of one operator chart (its values from the plan)."""

    PREFIX: ClassVar[str]
    # Pod Security: every operator pod drops all capabilities, runs as non-root with RuntimeDefault seccomp
    # (chart securityContexts; lws's pod context completed in its values): 'restricted'.
    POD_SECURITY: ClassVar[str] = "restricted"

    def build(self) -> None:
        # no system-critical priority class on these pods: no GKE critical-pods quota
        before = self.create_namespace(addon.NamespacePolicy(self.PREFIX, k8s.psa_labels(self.POD_SECURITY)))
        decided = self.plan.addons[self.CHART.key]
        # with a probe (the Trainer), the webhook gate after the release: what the add-on's webhook guards waits
        self.install(self.PREFIX, plain(decided.values), [*before, *self.waits_for()], probe=decided.probe)
        self.extra()
        self.register_outputs({"namespace": self.chart.namespace})

    def extra(self) -> None:
        """Objects beside the release (none by default)."""

    def waits_for(self) -> list[pulumi.Resource]:
        """What the release waits for beside its namespace (nothing by default)."""
        return []


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
        self.add_pdb("lws-controller-pdb", lws_pdb(self.chart.namespace))


class KubeRay(Operator):
    TYPE = "gpu-platform:operators:KubeRay"
    CHART: ClassVar[versions.Chart] = KUBERAY
    PREFIX = "kuberay"


class Trainer(Operator):
    TYPE = "gpu-platform:operators:Trainer"
    CHART: ClassVar[versions.Chart] = TRAINER
    PREFIX = "trainer"

    def __init__(
        self,
        name: str,
        plan: Plan,
        provider: pulumi.ProviderResource,
        jobset: JobSet,
        opts: pulumi.ResourceOptions | None = None,
    ):
        self.jobset = jobset  # read by waits_for, during the base class's build
        super().__init__(name, plan, provider, opts)

    def waits_for(self) -> list[pulumi.Resource]:
        # its manager watches the JobSets it creates: JobSet's CRD and webhook first
        return [r for r in (self.jobset.release,) if r is not None]

    def extra(self) -> None:
        # the chart has no PodDisruptionBudget; its webhooks fail closed (plan/operators.py)
        self.add_pdb("trainer-manager-pdb", trainer_pdb(self.chart.namespace))
        # the PyTorch runtime, once the webhook that guards runtimes answers (plan/operators.py TORCH_RUNTIME)
        probe = self.addon_plan.probe
        assert probe is not None  # the trainer's plan has one (plan/plan.py probe_of)
        runtime = torch_runtime(probe.obj["spec"])
        k8s.kube_object(
            "torch-distributed-runtime",
            runtime["apiVersion"],
            runtime["kind"],
            metadata=self.gated(runtime["metadata"]),  # no preview dry run through a webhook not answering yet
            spec=runtime["spec"],
            opts=self.after_release(),
        )


def install(
    plan: Plan,
    provider: pulumi.ProviderResource,
    opts: Callable[[], pulumi.ResourceOptions | None] = lambda: None,
) -> None:
    """Every operator the plan installs (the trainer needs JobSet: a rule refuses it alone); ``opts`` gives each
    its options (``GpuPlatform``: its parent)."""
    on = {key: addon.enabled for key, addon in plan.addons.items()}
    jobset = JobSet(JobSet.PREFIX, plan, provider, opts()) if on[JOBSET.key] else None
    for cls in (LeaderWorkerSet, KubeRay):
        if on[cls.CHART.key]:
            cls(cls.PREFIX, plan, provider, opts())
    if on[TRAINER.key] and jobset is not None:
        Trainer(Trainer.PREFIX, plan, provider, jobset, opts())
