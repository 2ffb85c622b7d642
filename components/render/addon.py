"""The shape every add-on shares, written once.

A Kubernetes component (``Component``) is a ComponentResource with the stack's plan and the cluster's
provider; ``child(...)`` gives its resources' options (parent, provider, what they wait for).

A chart add-on (``ChartAddon``) adds the steps every chart repeats, from the add-on's plan (``addon_plan``, the
plan's ``AddonPlan`` of ``CHART``):

1. ``create_namespace(NamespacePolicy(...))``: the namespace the chart installs into, with its Pod Security
   labels and, where the cloud needs it (GKE: ``AddonPlan.critical_pods_quota``), the critical-pods quota
   (``k8s.addon_namespace``);
2. ``install(release_name, values, before, probe=...)``: the Helm release of the pinned chart (the plan's
   version and source: ``AddonPlan.chart_ref``; ``k8s.addon_release``), and when the add-on's admission webhooks
   guard the kinds it creates next, the webhook readiness gate (``components/render/webhooks.py``, its Job the
   plan's ``AddonPlan.gate_job``) after it;
3. ``after_release(...)``: the options of every object that needs the release (its CRDs) and, where there is
   one, the gate (its webhooks answering) -- readiness ordering solved here for every add-on.

So a new add-on is its values, its namespace policy, and its own objects created with ``after_release()``.
Neither class adds a level to the resource tree: URNs stay those of the subclass's own ``TYPE`` and name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import pulumi

from ..data import versions
from ..plan.plan import AddonPlan, Plan, plain
from . import k8s, webhooks


class Component(pulumi.ComponentResource):
    """A ComponentResource of type ``TYPE`` holding the stack's plan (``components.plan.plan``) and the Kubernetes
    provider. Components read only the plan: the spec stays above it (issue 28)."""

    TYPE: ClassVar[str]

    def __init__(
        self,
        name: str,
        plan: Plan,
        provider: pulumi.ProviderResource,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__(self.TYPE, name, None, opts)
        self.plan = plan
        self.provider = provider
        self._setup()
        self.build()

    def _setup(self) -> None:
        """What a base class prepares before ``build`` (ChartAddon: the resolved chart)."""

    def build(self) -> None:
        """The component's own resources (then ``register_outputs``). Components with constructor arguments of
        their own override ``__init__`` instead, after calling this class's."""

    def child(self, depends_on: Sequence[pulumi.Resource] = (), **options: Any) -> pulumi.ResourceOptions:
        """Options of a Kubernetes resource of this component: parent, provider, what it waits for."""
        return pulumi.ResourceOptions(parent=self, provider=self.provider, depends_on=list(depends_on), **options)


@dataclass(frozen=True)
class NamespacePolicy:
    """A chart namespace: resource names from ``prefix`` (``namespace-<prefix>``, ``critical-pods-<prefix>``),
    its labels (Pod Security level), and on GKE a quota for ``critical_pods`` system-critical pods."""

    prefix: str
    labels: dict[str, str]
    critical_pods: int | None = None
    quota_name: str = "critical-pods"
    name: str | None = None  # default: the chart's namespace


class ChartAddon(Component):
    """A component installing the pinned chart ``CHART``: namespace, release, gate, objects after them."""

    CHART: ClassVar[versions.Chart]

    def _setup(self) -> None:
        # the add-on's plan: its chart as the stack takes it, and what its namespace needs on this cloud
        self.addon_plan: AddonPlan = self.plan.addons[self.CHART.key]
        self.chart = self.addon_plan.chart_ref()
        self.release: pulumi.Resource | None = None
        self.webhook_gate: pulumi.Resource | None = None
        self.gate_annotation: dict[str, Any] = {}

    def create_namespace(self, policy: NamespacePolicy) -> list[pulumi.Resource]:
        """The namespace (and GKE quota); returns what the release must wait for."""
        return k8s.addon_namespace(
            self,
            self.provider,
            self.addon_plan,
            policy.prefix,
            policy.name or self.chart.namespace,
            policy.labels,
            policy.critical_pods,
            quota_name=policy.quota_name,
        )

    def install(
        self,
        release_name: str,
        values: dict[str, Any],
        before: Sequence[pulumi.Resource],
        *,
        probe: webhooks.Probe | None = None,
        **release_options: Any,
    ) -> pulumi.Resource:
        """The release of ``CHART`` after ``before``; with ``probe`` (the add-on's webhooks guard what it creates
        next) the webhook readiness gate after the release. ``release_options``: ``k8s.addon_release``'s
        (timeout, protect, extra Release arguments)."""
        if probe is not None:
            # The gate below waits until the add-on's webhooks answer, which needs its controller running: the
            # readiness Helm's own wait would give. And Helm's wait on uninstall can hang a destroy: it polls
            # until every object of the release is gone, while kube-controller-manager's ClusterRole aggregation
            # controller re-creates an aggregated ClusterRole (Kueue's kueue-batch-user-role, Volcano's) it was
            # still applying when Helm deleted it (pkg/controller/clusterroleaggregation applies with server-side
            # apply, which creates a missing object), seen under the real engine. `helm uninstall` does not wait
            # by default either; pulumi-kubernetes waits unless skipAwait (provider/pkg/provider/helm_release.go
            # Delete: `if release.Atomic || !release.SkipAwait { uninstall.Wait = true }`).
            release_options.setdefault("skip_await", True)
        self.release = k8s.addon_release(
            release_name, self, self.provider, self.addon_plan, values, before, **release_options
        )
        if probe is not None:
            gate = webhooks.addon_gate(self, self.provider, probe, self._gate_job(probe), [self.release])
            self.webhook_gate, self.gate_annotation = gate.job, gate.annotation
        return self.release

    def _gate_job(self, probe: webhooks.Probe) -> dict[str, Any]:
        """The gate Job's spec, the plan's (``AddonPlan.gate_job``): only the plan's probe has one."""
        if self.addon_plan.gate_job is None or probe != self.addon_plan.probe:
            raise ValueError(f"{self.CHART.key}: a webhook gate probes the plan's probe (AddonPlan.probe)")
        return plain(self.addon_plan.gate_job)

    def ready(self) -> list[pulumi.Resource]:
        """What an object needing the add-on waits for: the release (its CRDs) and the webhook gate if any."""
        return [r for r in (self.release, self.webhook_gate) if r is not None]

    def gated(self, metadata: dict[str, Any]) -> dict[str, Any]:
        """``metadata`` of an object the add-on's webhooks guard, with the gate's annotation when there is a gate
        (``webhooks.gate_annotation``: no preview dry run through webhooks that may not answer yet)."""
        if not self.gate_annotation:
            return metadata
        annotations = {**metadata.get("annotations", {}), **self.gate_annotation}
        return {**metadata, "annotations": annotations}

    def add_pdb(self, name: str, pdb: dict[str, Any]) -> None:
        """A PodDisruptionBudget the chart lacks (``plan.webhooks.pdb``), after the release: the fail-closed
        webhooks' controllers (Volcano's admission, LeaderWorkerSet, the Trainer)."""
        k8s.kube_object(
            name,
            "policy/v1",
            "PodDisruptionBudget",
            metadata=pdb["metadata"],
            spec=pdb["spec"],
            opts=self.child([self.release]),
        )

    def after_release(self, *more: pulumi.Resource, **options: Any) -> pulumi.ResourceOptions:
        """Options of an object that needs the add-on: after ``ready()`` and ``more``."""
        return self.child([*self.ready(), *more], **options)
