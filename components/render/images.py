"""Image delivery (``Plan.images``, decided in ``components/plan/images.py``): per pool that warms its declared
images by pre-pulling, the pre-puller DaemonSet in a namespace of its own (Pod Security restricted); and the cloud's
registry cache the mirror pulls through, which only the cloud's SDK can make: ECR pull-through cache rules and the
node roles' right to fill them (``aws/images.py``), Artifact Registry remote repositories (``gcp/images.py``); each
is imported only on its cloud. What the nodes themselves get (user data, block devices, GKE node config) is the node
pools' (``aws/nodegroups.py``, ``aws/karpenter.py``, ``gcp/nodepools.py``), from the same plan."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi

from ..data import versions
from ..plan import derive
from ..plan.plan import Plan, plain
from ..plan.prometheus_stack import OPERATOR_NAMESPACE_LABEL
from . import addon, k8s


class Spegel(addon.ChartAddon):
    """The peer mirror (``images.mirror: peer``): Spegel's chart in a namespace of its own. Pod Security privileged:
    its DaemonSet mounts containerd's socket, content store and registry config directory from the host and serves on
    a host port (spegel-org/spegel v0.7.4 charts/spegel/templates/daemonset.yaml), which the plan restricts to the
    nodes whose containerd keeps unpacked layers (``images.spegel_values``)."""

    TYPE = "gpu-platform:index:Spegel"
    CHART = versions.SPEGEL

    def build(self) -> None:
        # an operator namespace (policies: namespace-pod-security), as node-exporter's is
        labels = {**k8s.psa_labels("privileged", audit="privileged"), OPERATOR_NAMESPACE_LABEL: "true"}
        before = self.create_namespace(addon.NamespacePolicy("spegel", labels))
        self.install("spegel", plain(self.addon_plan.values or {}), before)
        self.register_outputs({"namespace": self.chart.namespace})


class ImageDelivery(addon.Component):
    """The pre-pullers and the registry cache of the plan's image section."""

    TYPE = "gpu-platform:index:ImageDelivery"

    def __init__(
        self,
        name: str,
        plan: Plan,
        provider: pulumi.ProviderResource,
        node_roles: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ):
        """``node_roles``: the components whose node roles the plan's node policy names (they must exist first)."""
        self.node_roles = list(node_roles)
        super().__init__(name, plan, provider, opts)

    def build(self) -> None:
        images = self.plan.images
        assert images is not None, "the plan has no image section"
        pullers: list[str] = []
        if images.namespace is not None:
            ns = k8s.kube_object(
                "namespace-images",
                "v1",
                "Namespace",
                metadata={"name": images.namespace, "labels": {**derive.MANAGED_BY, **k8s.psa_labels("restricted")}},
                opts=self.child(),
            )
            for pool in images.pools.values():
                if pool.pre_puller is None:
                    continue
                puller = plain(pool.pre_puller)
                k8s.kube_object(
                    f"prepull-{pool.pool}",
                    "apps/v1",
                    "DaemonSet",
                    metadata=puller["metadata"],
                    spec=puller["spec"],
                    opts=self.child([ns]),
                )
                pullers.append(puller["metadata"]["name"])
        caches: list[str] = []
        if images.mirror_kind == "ecr" and self.plan.aws is not None:
            from .aws import images as aws_images

            caches = aws_images.pull_through(self, self.plan, self.node_roles)
        if images.mirror_kind == "artifact-registry" and self.plan.gke is not None:
            from .gcp import images as gcp_images

            caches = gcp_images.remote_repositories(self, self.plan)
        self.register_outputs({"prePullers": pullers, "caches": caches})
