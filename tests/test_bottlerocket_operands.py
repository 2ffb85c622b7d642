"""Bottlerocket GPU nodes and the GPU Operator (issue 31.4): every operand the operator would deploy there is off.

NVIDIA's platform support lists no Bottlerocket, and the host already runs the driver, toolkit, device plugin and
MIG manager. The validator cannot go alone (the DCGM exporter's init container waits for the file it writes), so the
validator, GPU Feature Discovery and the DCGM exporter go together, and the plan says which pools have no DCGM
metrics. Expectations come from gpu-operator v26.7.0 controllers/state_manager.go (gpuStateLabels, the container
workload set) and assets/state-dcgm-exporter/0800_daemonset.yaml, not from the code under test.
"""

from __future__ import annotations

from conftest import rendered, stack_config

from components.cli.loader import load_spec
from components.explain import summary
from components.plan import derive, plan

# gpu-operator v26.7.0 controllers/state_manager.go gpuStateLabels[container]: the node labels whose "true" deploys
# each operand of the container workload config (plus mig-manager, set apart for MIG-capable GPUs).
CONTAINER_OPERAND_LABELS = {
    "nvidia.com/gpu.deploy.driver",
    "nvidia.com/gpu.deploy.gpu-feature-discovery",
    "nvidia.com/gpu.deploy.container-toolkit",
    "nvidia.com/gpu.deploy.device-plugin",
    "nvidia.com/gpu.deploy.dcgm",
    "nvidia.com/gpu.deploy.dcgm-exporter",
    "nvidia.com/gpu.deploy.node-status-exporter",
    "nvidia.com/gpu.deploy.operator-validator",
    "nvidia.com/gpu.deploy.client",
    "nvidia.com/gpu.deploy.mig-manager",
}


def _plan(stack: str, cfg=None):
    return plan.build(load_spec(cfg or stack_config(stack)), stack)


def test_bottlerocket_nodes_turn_every_operator_operand_off():
    p = _plan("prod-aws")
    labels = p.pools["a100-train"].labels
    assert {k: v for k, v in labels.items() if k.startswith("nvidia.com/gpu.deploy.")} == dict.fromkeys(
        CONTAINER_OPERAND_LABELS, "false"
    )


def test_validator_and_dcgm_exporter_are_off_together():
    """The exporter's init container (toolkit-validation) waits for the validator's toolkit-ready file: a node
    without the validator but with the exporter would hold the exporter in Init for ever."""
    labels = derive.BOTTLEROCKET_OPERAND_LABELS
    assert (
        labels["nvidia.com/gpu.deploy.operator-validator"] == labels["nvidia.com/gpu.deploy.dcgm-exporter"] == "false"
    )


def test_al2023_nodes_keep_the_operands():
    p = _plan("prod-aws")
    labels = p.pools["h100-inference"].labels
    assert not {k for k in labels if k.startswith("nvidia.com/gpu.deploy.")}


def test_the_nodes_of_a_bottlerocket_pool_carry_the_labels_whoever_provisions_them():
    r = rendered("prod-aws")
    groups = [g for g in r.of_type("aws:eks/nodeGroup:NodeGroup") if "a100-train" in g.name]
    assert groups, "a100-train is a managed node group"
    assert groups[0].inputs["labels"]["nvidia.com/gpu.deploy.dcgm-exporter"] == "false"


def test_monitoring_plan_names_the_pools_without_dcgm_and_prices_no_idle_cost_there():
    m = _plan("prod-aws").monitoring
    assert m.unmonitored_pools == ("a100-gang", "a100-train")
    assert not set(m.idle_cost) & {"a100-gang", "a100-train"}
    assert {"h100-inference", "h100-spot", "l4-notebooks"} <= set(m.idle_cost)


def test_a_stack_without_bottlerocket_pools_monitors_every_pool():
    cfg = stack_config("prod-aws")
    for pool in cfg["gpu-platform:nodePools"]:
        pool.pop("os", None)
        pool.pop("imageCache", None)  # a snapshot of the images is a Bottlerocket data volume
    m = _plan("prod-aws", cfg).monitoring
    assert m.unmonitored_pools == ()
    assert {"a100-gang", "a100-train"} <= set(m.idle_cost)


def test_summary_warns_that_bottlerocket_pools_have_no_dcgm_metrics():
    warns = summary.warnings(_plan("prod-aws"))
    assert any(w.startswith("no DCGM metrics on Bottlerocket pools a100-gang, a100-train:") for w in warns)
    assert not any("Bottlerocket" in w for w in summary.warnings(_plan("dev-aws")))
