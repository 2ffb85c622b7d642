"""DCGM metrics keep their pod (issue 10 §4): the exporter can join every GPU a pod holds to that pod.

dcgm-exporter (4.5.3-4.8.2 / 4.6.0-4.8.3, internal/pkg/transformation/kubernetes.go) reads the kubelet's
pod-resources API and matches each device ID to a GPU by UUID unless told otherwise; it skips resources other
than ``nvidia.com/gpu`` and ``nvidia.com/mig-*`` unless listed. Env names below are written out from its
pkg/cmd/app.go, not imported from the code under test.
"""

from __future__ import annotations

import base64
import json
import re
import tomllib

import pytest
import yaml
from conftest import UPSTREAM, monitoring_of, release, render_config, rendered, stack_config
from values_paths import unknown_paths

from components.cli.loader import load_spec
from components.render import gpu_operator, monitoring
from components.render.dashboards import gpu as dashboard

GPU_ID_TYPE = "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE"
RESOURCE_NAMES = "NVIDIA_RESOURCE_NAMES"
VIRTUAL_GPUS = "KUBERNETES_VIRTUAL_GPUS"


def _env(values: dict, path: tuple[str, ...]) -> dict[str, str]:
    for k in path:
        values = values.get(k, {})
    return {e["name"]: e["value"] for e in (values or [])}


@pytest.mark.parametrize("stack", ["dev-gcp", "prod-gcp"])
def test_gke_driver_stacks_match_devices_by_name(stack):
    """GKE's device plugin reports `nvidiaN` / `nvidiaN/vgpuM`, never a UUID."""
    env = _env(release(rendered(stack), "gpu-operator")["values"], ("dcgmExporter", "env"))
    assert env[GPU_ID_TYPE] == "device-name"
    # GKE's plugin never renames shared GPUs, so no extra resource name is needed there
    assert RESOURCE_NAMES not in env
    # both stacks share GPUs on GKE (dev-gcp l4-shared time-sharing x4, prod-gcp MPS x2): the exporter's sharing
    # map, which reads GKE's nvidiaN/vgpuM IDs (kubernetes.go toDeviceToSharingPods, "/vgpu" separator), gives
    # every pod on a shared GPU its metrics; without it one pod per GPU got them, and the idle alert and the
    # per-namespace cost were wrong
    assert env[VIRTUAL_GPUS] == "true"


@pytest.mark.parametrize("stack", ["dev-aws", "prod-aws"])
def test_nvidia_plugin_stacks_keep_uuid_matching(stack):
    env = _env(release(rendered(stack), "gpu-operator")["values"], ("dcgmExporter", "env"))
    assert GPU_ID_TYPE not in env


def test_operator_driver_on_gke_keeps_uuid_matching():
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:gpuOperator"] = {"driver": "operator"}
    for pool in cfg["gpu-platform:nodePools"]:
        pool["os"] = "ubuntu"
    assert GPU_ID_TYPE not in {e["name"] for e in gpu_operator.exporter_env(load_spec(cfg))}


def _renamed(cfg: dict) -> dict:
    cfg["gpu-platform:nodePools"][0]["sharing"] = {"strategy": "time-slicing", "replicas": 4, "renameByDefault": True}
    return cfg


def test_renamed_shared_gpus_are_listed_for_the_operator_exporter():
    r = render_config(_renamed(stack_config("dev-aws")))
    values = release(r, "gpu-operator")["values"]
    env = _env(values, ("dcgmExporter", "env"))
    assert env[RESOURCE_NAMES] == "nvidia.com/gpu.shared"
    assert env[VIRTUAL_GPUS] == "true"
    upstream = yaml.safe_load((UPSTREAM / "gpu-operator" / "values.yaml").read_text())
    assert unknown_paths({"dcgmExporter": values["dcgmExporter"]}, upstream) == []
    # without renameByDefault the default resource name is enough
    assert RESOURCE_NAMES not in _env(release(rendered("dev-aws"), "gpu-operator")["values"], ("dcgmExporter", "env"))


def test_renamed_shared_gpus_are_listed_for_the_standalone_exporter():
    cfg = _renamed(stack_config("dev-aws"))
    for pool in cfg["gpu-platform:nodePools"]:
        pool["os"] = "bottlerocket"  # Bottlerocket's own plugin: no operator needed
    cfg["gpu-platform:addons"] = {**cfg["gpu-platform:addons"], "gpuOperator": False}
    values = monitoring.dcgm_exporter_values(load_spec(cfg))
    assert _env(values, ("extraEnv",)) == {VIRTUAL_GPUS: "true", RESOURCE_NAMES: "nvidia.com/gpu.shared"}
    upstream = yaml.safe_load((UPSTREAM / "dcgm-exporter" / "values.yaml").read_text())
    assert unknown_paths(values, upstream) == []


def test_bottlerocket_managed_nodes_report_uuids():
    """prod-aws a100-train is a Bottlerocket managed node group: its launch template's user data sets the
    host device plugin's device-id-strategy to uuid (the Karpenter side: test_karpenter_overlays)."""
    r = rendered("prod-aws")
    [lt] = [x for x in r.of_type("aws:ec2/launchTemplate:LaunchTemplate") if "a100-train" in x.name]
    doc = tomllib.loads(base64.b64decode(lt.inputs["userData"]).decode())
    assert doc["settings"]["kubelet-device-plugins"]["nvidia"]["device-id-strategy"] == "uuid"


# ------------------------------------------------------------------------------------- host label


def test_service_monitor_sets_node_from_the_pod_node_name():
    sm = monitoring.service_monitor(monitoring_of(load_spec(stack_config("prod-aws"))))
    relabel = sm["spec"]["endpoints"][0]["relabelings"]
    assert {"action": "replace", "sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node"} in relabel


@pytest.mark.parametrize("stack", ["dev-aws", "prod-aws", "prod-gcp"])
def test_rules_and_dashboard_never_use_the_exporters_host_label(stack):
    """`Hostname` (exporter <= 4.8.2) became `hostname` after it; grouping or templating by either breaks on
    one of the two exporters this project runs. `node` comes from the ServiceMonitor."""
    spec = load_spec(stack_config(stack))
    text = json.dumps([monitoring.rule_groups(monitoring_of(spec)), dashboard.dashboard(monitoring_of(spec))])
    assert not re.search(r"\b[Hh]ostname\b", text.replace("kubernetes.io/hostname", ""))
    groups = monitoring.rule_groups(monitoring_of(spec))[0]["rules"]
    by_alert = {r.get("alert"): r for r in groups}
    assert "node" in re.search(r"max by \(([^)]*)\)", by_alert["GpuAllocatedIdle"]["expr"]).group(1).split(", ")
    assert "{{ $labels.node }}" in by_alert["GpuXidErrorCritical"]["annotations"]["description"]
    assert "node, gpu" in dashboard.queries(monitoring_of(spec))["GPU temperature"]
