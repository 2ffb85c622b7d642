"""Node health (issue 31.2): what marks a node whose GPU failed, per cloud, and the alerts on it.

* ``MonitoringPlan.node_health``: the node condition the cloud's agent sets (EKS node monitoring agent:
  AcceleratedHardwareReady False; GKE's NVIDIA device plugin with GKE-installed drivers: XidCriticalError True),
  decided from the stack; none where no such agent runs.
* The alerts on it and on devices a device plugin withdrew (``GpuDevicesUnhealthy``), proven with promtool on the
  rules prod-gcp and prod-aws render (tests/promtool/gpu_node_health_test.yaml), and shown to fail on a broken rule.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import stack_config
from test_monitoring import PROMTOOL_TESTS, alerts, needs_promtool, promtool, rule_doc, write_rules

from components.cli.loader import load_spec
from components.plan import monitoring as plan_monitoring, plan


def _spec(stack: str, **changes: Any):
    cfg = stack_config(stack)
    for k, v in changes.items():
        cfg[f"gpu-platform:{k}"] = v
    return load_spec(cfg)


# ------------------------------------------------------------------------------------------ the plan


def _plan(stack: str):
    return plan.build(load_spec(stack_config(stack)), stack).monitoring


def test_eks_stacks_with_the_node_monitoring_agent_watch_accelerated_hardware_ready():
    (h,) = _plan("prod-aws").node_health
    assert (h.condition, h.status, h.alert) == (
        "AcceleratedHardwareReady",
        "false",
        "GpuNodeAcceleratedHardwareNotReady",
    )


def test_eks_stacks_without_the_agent_watch_no_condition():
    addons = {**stack_config("prod-aws")["gpu-platform:addons"], "nodeMonitoringAgent": False}
    assert plan_monitoring.node_health(_spec("prod-aws", addons=addons)) == ()


def test_gke_stacks_with_gke_installed_drivers_watch_xid_critical_error():
    for stack in ("dev-gcp", "prod-gcp"):
        (h,) = _plan(stack).node_health
        assert (h.condition, h.status, h.alert) == ("XidCriticalError", "true", "GpuNodeXidCriticalError")


def test_gke_stacks_with_operator_drivers_have_no_condition():
    """GKE's device plugin is off there (gke-no-default-nvidia-gpu-device-plugin): nothing sets XidCriticalError."""
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:gpuOperator"] = {"driver": "operator"}
    for pool in cfg["gpu-platform:nodePools"]:
        pool["os"] = "ubuntu"
    assert plan_monitoring.node_health(load_spec(cfg)) == ()


def test_existing_and_local_clusters_have_no_condition():
    for stack in ("local", "dra-existing"):
        assert _plan(stack).node_health == ()


# ----------------------------------------------------------------------------------------- the alerts


def test_every_monitored_stack_alerts_on_unhealthy_devices_and_its_conditions():
    for stack, extra in (
        ("prod-aws", {"GpuNodeAcceleratedHardwareNotReady"}),
        ("prod-gcp", {"GpuNodeXidCriticalError"}),
        ("local", set()),
    ):
        names = set(alerts(rule_doc(stack)))
        assert {"GpuDevicesUnhealthy", *extra} <= names
        assert not {"GpuNodeAcceleratedHardwareNotReady", "GpuNodeXidCriticalError"} - extra & names


def test_node_condition_alerts_carry_the_repair_runbook():
    gke = alerts(rule_doc("prod-gcp"))["GpuNodeXidCriticalError"]["annotations"]["description"]
    assert "recreate-instances" in gke and "auto-repair does not act" in gke
    eks = alerts(rule_doc("prod-aws"))["GpuNodeAcceleratedHardwareNotReady"]["annotations"]["description"]
    assert "Karpenter's node repair" in eks and "10 minutes" in eks


def _rules(tmp_path: Path, mutate=None) -> None:
    """prod-gcp's rule file plus prod-aws's condition alert, as the promtool test file expects."""
    doc = json.loads(json.dumps(rule_doc("prod-gcp")["spec"]))
    aws = alerts(rule_doc("prod-aws"))["GpuNodeAcceleratedHardwareNotReady"]
    doc["groups"][0]["rules"].append(json.loads(json.dumps(aws)))
    if mutate:
        for r in doc["groups"][0]["rules"]:
            mutate(r)
    write_rules(doc, tmp_path / "node-health.rules.yaml", keep_descriptions=False)
    shutil.copy(PROMTOOL_TESTS / "gpu_node_health_test.yaml", tmp_path)


@needs_promtool
def test_promtool_node_health_alerts_fire_on_faults_only(tmp_path):
    _rules(tmp_path)
    out = promtool("test", "rules", "gpu_node_health_test.yaml", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize(
    ("alert", "old", "new"),
    [
        ("GpuNodeXidCriticalError", 'status="true"', 'status="false"'),
        ("GpuNodeAcceleratedHardwareNotReady", 'status="false"', 'status=~"false|unknown"'),
        ("GpuDevicesUnhealthy", 'resource=~"nvidia_com_.+"', 'resource=~".+"'),
        ("GpuDevicesUnhealthy", "> 0", ">= 0"),
    ],
)
@needs_promtool
def test_promtool_node_health_tests_fail_on_a_broken_rule(tmp_path, alert, old, new):
    def mutate(r):
        if r.get("alert") == alert:
            assert old in r["expr"]
            r["expr"] = r["expr"].replace(old, new)

    _rules(tmp_path, mutate)
    out = promtool("test", "rules", "gpu_node_health_test.yaml", cwd=tmp_path)
    assert out.returncode != 0 and alert in out.stdout + out.stderr
