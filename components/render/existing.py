"""Access to an existing cluster through a kubeconfig context (e.g. a local kind cluster)."""

from __future__ import annotations

import pulumi

from ..plan.plan import Plan


class ExistingAccess(pulumi.ComponentResource):
    TYPE = "gpu-platform:index:ExistingClusterAccess"

    def __init__(
        self,
        name: str,
        plan: Plan,
        opts: pulumi.ResourceOptions | None = None,
        *,
        provider: pulumi.ProviderResource | None = None,
    ):
        """``provider``: the caller's (``GpuPlatform``); then none is made from the plan's kubeconfig."""
        super().__init__(self.TYPE, name, None, opts)
        if provider is not None:
            self.provider = provider
            self.register_outputs({})
            return

        from .k8s import PROVIDER_OPTIONS, KubeProvider

        decided = plan.existing  # the plan's (plan/existing.py): why these arguments
        assert decided is not None, "ExistingAccess is made only for cloud existing"
        args = {}
        if decided.kubeconfig:
            args["kubeconfig"] = decided.kubeconfig
        if decided.context:
            args["context"] = decided.context
        if decided.cluster_identifier:
            args["cluster_identifier"] = decided.cluster_identifier
        self.provider = KubeProvider("kubernetes", opts=pulumi.ResourceOptions(parent=self), **PROVIDER_OPTIONS, **args)
        self.register_outputs({})
