"""The ``gpu-platform-cost`` ConfigMap, rendered from the cost document (``cost.configmap``)."""

from __future__ import annotations

from typing import Any

import pulumi

from ..plan.cost import CONFIGMAP_NAME, configmap


class CostRecord(pulumi.ComponentResource):
    """The ``gpu-platform-cost`` ConfigMap (``configmap``)."""

    TYPE = "gpu-platform:cost:CostRecord"

    def __init__(
        self,
        name: str,
        provider: pulumi.ProviderResource,
        doc: dict[str, Any],
        opts: pulumi.ResourceOptions | None = None,
    ):
        from .k8s import kube_object

        super().__init__(self.TYPE, name, None, opts)
        cm = configmap(doc)
        kube_object(
            CONFIGMAP_NAME,
            "v1",
            "ConfigMap",
            metadata=cm["metadata"],
            data=cm["data"],
            opts=pulumi.ResourceOptions(parent=self, provider=provider),
        )
        self.register_outputs({"maxHourlyUsd": doc["total"]["maxHourlyUsd"]})
