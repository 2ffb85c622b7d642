"""The EKS node monitoring agent add-on as EKS receives it (issue 40.3 and 40.8).

The add-on runs two DaemonSets (aws/eks-node-monitoring-agent, charts/eks-node-monitoring-agent at v1.6.6 and
v1.7.0): the agent, whose values tolerate every taint, and ``dcgm-server`` (templates/dcgm-daemonset.yaml), the
DCGM host engine its DCGM diagnostics need, whose ``dcgmAgent.tolerations`` default is ``[]``. Every GPU node the
package brings carries ``nvidia.com/gpu=present:NoSchedule`` and its pool's own taints, so the DaemonSet must be
given tolerations through the add-on's ``configurationValues``, which EKS validates against the add-on's
configuration schema (charts/configuration.schema.json, copied per tag in tests/fixtures/eks-node-monitoring-agent/).
Tolerations are matched here as the kube-scheduler's TaintToleration plugin matches them
(k8s.io/api core/v1 toleration.go ``ToleratesTaint``), not with the package's own helper.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from conftest import ROOT, render_config, rendered, stack_config

from components.cli.loader import load_spec
from components.data import versions
from components.plan import plan as plan_mod
from components.plan.frozen import plain

SCHEMAS = Path(__file__).parent / "fixtures" / "eks-node-monitoring-agent"
ADDON = "aws:eks/addon:Addon"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}  # every GPU node's


def tolerates(toleration: dict[str, Any], taint: dict[str, Any]) -> bool:
    """k8s.io/api core/v1 Toleration.ToleratesTaint."""
    if toleration.get("effect") and toleration["effect"] != taint["effect"]:
        return False
    if toleration.get("key") and toleration["key"] != taint["key"]:
        return False
    op = toleration.get("operator") or "Equal"
    if op == "Exists":
        return True
    return op == "Equal" and toleration.get("value", "") == taint.get("value", "")


def configuration(rendering) -> dict[str, Any]:
    (addon,) = [a for a in rendering.of_type(ADDON) if a.inputs["addonName"] == "eks-node-monitoring-agent"]
    return json.loads(addon.inputs["configurationValues"])


def stack_taints(stack: str) -> list[dict[str, Any]]:
    """Each GPU pool's taints as the stack file writes them, and the GPU taint."""
    doc = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())["config"]
    own = [t for p in doc["gpu-platform:nodePools"] for t in p.get("taints", [])]
    return [GPU_TAINT, *own]


@pytest.mark.parametrize("stack", ["dev-aws", "prod-aws", "starter-aws"])
def test_the_dcgm_host_engine_tolerates_every_gpu_node_taint(stack):
    """Defect 3: with the chart's default (no tolerations) DCGM never runs on a GPU node."""
    tolerations = configuration(rendered(stack))["dcgmAgent"]["tolerations"]
    for taint in stack_taints(stack):
        assert any(tolerates(t, taint) for t in tolerations), (stack, taint)
    # only what a GPU node carries: not a blanket ``operator: Exists`` that would also let it onto tainted
    # nodes of other kinds (the DaemonSet's affinity keeps it on NVIDIA instance types, its tolerations on GPU pools)
    assert all(t.get("key") for t in tolerations)


def test_a_pool_taint_of_the_stack_is_tolerated_too():
    cfg = copy.deepcopy(stack_config("dev-aws"))
    cfg["gpu-platform:nodePools"][0]["taints"] = [{"key": "example.com/reserved", "value": "ml", "effect": "NoExecute"}]
    tolerations = configuration(render_config(cfg))["dcgmAgent"]["tolerations"]
    taint = {"key": "example.com/reserved", "value": "ml", "effect": "NoExecute"}
    assert any(tolerates(t, taint) for t in tolerations)
    assert not any(tolerates(t, {**taint, "effect": "NoSchedule"}) for t in tolerations)


def _schema(version: str) -> dict[str, Any]:
    tag = re.fullmatch(r"(v\d+\.\d+\.\d+)-eksbuild\.\d+", version)
    assert tag, version
    path = SCHEMAS / f"configuration.schema.{tag.group(1)}.json"
    assert path.is_file(), f"no configuration schema of {tag.group(1)} here: copy it from the agent's tag"
    return json.loads(path.read_text())


@pytest.mark.parametrize("minor", sorted(versions.EKS_ADDON_VERSIONS))
def test_the_configuration_is_what_the_pinned_build_of_each_minor_accepts(minor):
    """Defect 8: each minor's pin is a build whose configuration schema is here, and what the package sends
    validates against it (EKS refuses the add-on otherwise)."""
    cfg = copy.deepcopy(stack_config("starter-aws"))
    cfg["gpu-platform:cluster"]["kubernetesVersion"] = minor
    plan = plan_mod.build(load_spec(cfg), "t")
    version = plan.eks_create.node_monitoring_agent_version
    assert version is not None
    config = plain(plan.aws.node_health_configuration)
    jsonschema.Draft7Validator(_schema(version)).validate(config)


def test_the_schema_check_refuses_what_eks_would():
    """The check above can fail: a key the add-on does not know is refused (additionalProperties: false)."""
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(_schema("v1.6.6-eksbuild.1")).validate({"dcgmAgent": {"nodeSelector": {"a": "b"}}})


def test_the_configuration_is_byte_identical_across_renderings():
    assert configuration(rendered("prod-aws")) == configuration(rendered("prod-aws"))
    (a,) = [x for x in rendered("prod-aws").of_type(ADDON) if x.inputs["addonName"] == "eks-node-monitoring-agent"]
    (b,) = [x for x in rendered("prod-aws").of_type(ADDON) if x.inputs["addonName"] == "eks-node-monitoring-agent"]
    assert a.inputs["configurationValues"] == b.inputs["configurationValues"]
