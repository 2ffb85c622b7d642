"""What reaching an existing cluster decides (pure): the Kubernetes provider's kubeconfig, context and the identity
it keys the cluster by. The provider is ``components/render/existing.py``'s."""

from __future__ import annotations

from dataclasses import dataclass

from ..spec.model import StackSpec


@dataclass(frozen=True)
class ExistingClusterPlan:
    """``cloud: existing``: how the Kubernetes provider reaches the cluster (None: the provider's default)."""

    kubeconfig: str | None  # a kubeconfig path (default ~/.kube/config)
    context: str | None
    # The context names the cluster: editing its server or CA in the kubeconfig updates the provider instead of
    # replacing it with every Kubernetes resource (pulumi-kubernetes DiffConfig). Without a context the provider
    # keeps its own heuristic (the active cluster), so switching the ambient current-context to another cluster
    # is still a replacement, not a silent re-target.
    cluster_identifier: str | None


def existing_cluster_plan(spec: StackSpec) -> ExistingClusterPlan | None:
    if spec.cloud != "existing":
        return None
    c = spec.cluster
    return ExistingClusterPlan(
        kubeconfig=c.kubeconfig or None,
        context=c.context or None,
        cluster_identifier=f"context:{c.context}" if c.context else None,
    )
