"""The outputs components register (``register_outputs``): the engine stores them as the component's outputs
in the stack's state (``pulumi stack export``, the console's resource view). The mock monitor answers
RegisterResourceOutputs with nothing (pulumi/runtime/mocks.py), so the synth's recording monitor is wrapped
here to keep what each component sent.

Expected values are derived by hand from stacks/Pulumi.dev-aws.yaml: cluster ml-dev, GPU Operator on (so
its DCGM exporter, in the chart's gpu-operator namespace), one Karpenter pool (a10g-spot) with the default
OS (al2023) and root disk (diskGib 200), so one EC2NodeClass gpu-al2023-200gib; AWS names are
``<cluster>-karpenter[-node]`` in the synth's placeholder account 000000000000."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import render_config, stack_config
from google.protobuf import json_format


@pytest.fixture
def component_outputs(monkeypatch):
    """Render a config; return what each component registered as outputs, by (type, name)."""
    from components.cli import synth

    mocks_cls, monitor_cls = synth._mock_classes()
    sent: dict[tuple[str, str], dict[str, Any]] = {}

    class Recording(monitor_cls):  # type: ignore[misc,valid-type]
        def RegisterResourceOutputs(self, request):
            _, _, typ, name = request.urn.split("::")
            sent[(typ.split("$")[-1], name)] = json_format.MessageToDict(request.outputs)
            return super().RegisterResourceOutputs(request)

    monkeypatch.setattr(synth, "_mock_classes", lambda: (mocks_cls, Recording))

    def render(cfg: dict[str, Any], stack: str) -> dict[tuple[str, str], dict[str, Any]]:
        sent.clear()
        render_config(cfg, stack)
        return dict(sent)

    return render


@pytest.mark.parametrize("prometheus", ["none", "install"])
def test_gpu_monitoring_registers_the_exporters_namespace_and_source(component_outputs, prometheus):
    """With or without Prometheus objects (the "none" branch returns early), GpuMonitoring's outputs name
    where the DCGM exporter runs and who installed it: the GPU Operator's, in gpu-operator."""
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:monitoring"] = {"prometheus": prometheus}
    got = component_outputs(cfg, "dev-aws")
    assert got[("gpu-platform:monitoring:GpuMonitoring", "gpu-monitoring")] == {
        "namespace": "gpu-operator",
        "source": "operator",
    }


def test_karpenter_registers_its_queue_roles_pools_and_classes(component_outputs):
    """Karpenter's outputs: the interruption queue, the node and controller roles, and the names of the
    NodePools, NodeOverlays (none: no pool needs one) and EC2NodeClasses it made."""
    got = component_outputs(stack_config("dev-aws"), "dev-aws")
    assert got[("gpu-platform:aws:Karpenter", "karpenter")] == {
        "queueName": "ml-dev-karpenter",
        "nodeRoleArn": "arn:aws:iam::000000000000:role/ml-dev-karpenter-node",
        "controllerRoleArn": "arn:aws:iam::000000000000:role/ml-dev-karpenter",
        "nodePools": ["a10g-spot"],
        "nodeOverlays": [],
        "nodeClasses": ["gpu-al2023-200gib"],
    }


def test_priority_classes_register_every_class_name_in_tier_order(component_outputs):
    """dev-aws declares no priorityClasses, so the five default tiers (spec_tenants.DEFAULT_PRIORITY_CLASSES) are
    made, highest first, and their names are the component's one output."""
    got = component_outputs(stack_config("dev-aws"), "dev-aws")
    (outputs,) = [v for (typ, _), v in got.items() if typ == "gpu-platform:index:PriorityClasses"]
    assert outputs == {"names": ["inference", "training-critical", "training", "batch", "dev"]}
