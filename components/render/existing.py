"""Access to an existing cluster through a kubeconfig context (e.g. a local kind cluster)."""

from __future__ import annotations

import pulumi

from components.spec.model import StackSpec


class ExistingAccess(pulumi.ComponentResource):
    TYPE = "gpu-platform:index:ExistingClusterAccess"

    def __init__(self, name: str, spec: StackSpec, opts: pulumi.ResourceOptions | None = None):
        super().__init__(self.TYPE, name, None, opts)
        import pulumi_kubernetes as k8s

        from components.render.k8s import PROVIDER_OPTIONS

        args = {}
        if spec.cluster.kubeconfig:
            args["kubeconfig"] = spec.cluster.kubeconfig
        if spec.cluster.context:
            args["context"] = spec.cluster.context
            # The context names the cluster: editing its server or CA in the kubeconfig updates the provider
            # instead of replacing it with every Kubernetes resource (pulumi-kubernetes DiffConfig). Without a
            # context the provider keeps its own heuristic (the active cluster), so switching the ambient
            # current-context to another cluster is still a replacement, not a silent re-target.
            args["cluster_identifier"] = f"context:{spec.cluster.context}"
        self.provider = k8s.Provider("kubernetes", opts=pulumi.ResourceOptions(parent=self), **PROVIDER_OPTIONS, **args)
        self.register_outputs({})
