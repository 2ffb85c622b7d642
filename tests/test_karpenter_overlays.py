"""Karpenter pools whose nodes advertise something Karpenter cannot see from EC2 (issue 10 §3).

Karpenter knows an instance type's ``nvidia.com/gpu`` count only. A pool with time-slicing / MPS replicas,
``nvidia.com/gpu.shared`` or MIG slices gets one NodeOverlay (``karpenter.sh/v1alpha1``) whose capacity
must equal what the device plugin on that pool's nodes advertises. Expected values here are read back
from the device-plugin documents the nodes get (the GPU Operator's ConfigMap entries, the mig-parted
config, the Bottlerocket user-data TOML), not from the function that fills the overlay.
"""

from __future__ import annotations

import copy
import json
import tomllib
from typing import Any

import jsonschema
import pytest
import yaml
from conftest import UPSTREAM, release, render_config, stack_config
from values_paths import unknown_paths

from components.cli.loader import load_spec
from components.data import versions
from components.plan import derive, sharing
from components.render.aws import karpenter

NODEOVERLAY = "kubernetes:karpenter.sh/v1alpha1:NodeOverlay"
NODECLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"

# One Karpenter pool per sharing mode, added to dev-aws (A10G has no MIG; the MIG pools use p4de A100-80GB).
MODES: dict[str, dict[str, Any]] = {
    "ts": {"gpu": {"model": "L4", "perNode": 4}, "instanceTypes": ["g6.12xlarge"],
           "sharing": {"strategy": "time-slicing", "replicas": 4}},
    "ts-renamed": {"gpu": {"model": "L4", "perNode": 4}, "instanceTypes": ["g6.12xlarge"],
                   "sharing": {"strategy": "time-slicing", "replicas": 3, "renameByDefault": True}},
    "mps": {"gpu": {"model": "L4", "perNode": 4}, "instanceTypes": ["g6.12xlarge"],
            "sharing": {"strategy": "mps", "replicas": 6}},
    "mig-single": {"gpu": {"model": "A100-80GB", "perNode": 8}, "instanceTypes": ["p4de.24xlarge"],
                   "sharing": {"strategy": "mig", "layout": {"3g.40gb": 2}}},
    "mig-mixed": {"gpu": {"model": "A100-80GB", "perNode": 8}, "instanceTypes": ["p4de.24xlarge"],
                  "sharing": {"strategy": "mig", "layout": {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2}}},
    "br-ts": {"os": "bottlerocket", "gpu": {"model": "L4", "perNode": 4}, "instanceTypes": ["g6.12xlarge"],
              "sharing": {"strategy": "time-slicing", "replicas": 4}},
    "br-mps-renamed": {"os": "bottlerocket", "gpu": {"model": "L4", "perNode": 4}, "instanceTypes": ["g6.12xlarge"],
                       "sharing": {"strategy": "mps", "replicas": 8, "renameByDefault": True}},
}  # fmt: skip


def _config(mode: str) -> dict[str, Any]:
    cfg = stack_config("dev-aws")
    pool = {"name": f"k-{mode}", "capacity": "on-demand", "provisioner": "karpenter", "maxNodes": 2, **MODES[mode]}
    cfg["gpu-platform:nodePools"].append(copy.deepcopy(pool))
    return cfg


def _advertised_per_node(spec, pool) -> dict[str, int]:
    """What the device plugin of one node of ``pool`` advertises, read from the documents the node gets."""
    s, n = pool.sharing, pool.gpu.per_node
    if derive.pool_device_plugin(spec, pool) == "bottlerocket":
        from components.plan.aws import managed_pools

        nvidia = tomllib.loads(managed_pools.user_data(spec, pool))["settings"]["kubelet-device-plugins"]["nvidia"]
        mode = nvidia[nvidia["device-sharing-strategy"]]
        name = "nvidia.com/gpu.shared" if mode["rename-by-default"] else "nvidia.com/gpu"
        return {name: mode["replicas"] * n, **({"nvidia.com/gpu": 0} if mode["rename-by-default"] else {})}
    if s.strategy == "mig":
        doc = sharing.mig_configs(spec)["mig-configs"][derive.config_name(pool)]
        layout = doc[0]["mig-devices"]
        if derive.mig_strategy(spec) == "single":  # every slice is nvidia.com/gpu
            return {"nvidia.com/gpu": sum(layout.values()) * n}
        return {"nvidia.com/gpu": 0, **{f"nvidia.com/mig-{p}": c * n for p, c in layout.items()}}
    conf = yaml.safe_load(sharing.device_plugin_configs(spec)[derive.config_name(pool)])["sharing"]
    body = conf.get("timeSlicing") or conf["mps"]
    [res] = body["resources"]
    name = res["name"] + (".shared" if body["renameByDefault"] else "")
    return {name: res["replicas"] * n, **({"nvidia.com/gpu": 0} if body["renameByDefault"] else {})}


def _as_ints(capacity: dict[str, str]) -> dict[str, int]:
    return {k: int(v) for k, v in capacity.items()}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_overlay_capacity_is_what_the_device_plugin_advertises(mode):
    spec = load_spec(_config(mode))
    pool = spec.pool(f"k-{mode}")
    assert karpenter.overlay_pools(spec) == [pool]
    body = karpenter.node_overlay_spec(spec, pool)
    assert _as_ints(body["capacity"]) == dict(sorted(_advertised_per_node(spec, pool).items()))
    # A pod asking for one unit of each advertised resource fits a node as Karpenter now sees it; with the
    # EC2 view alone (nvidia.com/gpu = physical GPUs) it would not, or would need `replicas`x the nodes.
    seen = _as_ints(body["capacity"])
    for name, n in _advertised_per_node(spec, pool).items():
        if n:
            assert seen[name] >= 1 and seen[name] == n
    assert seen != {"nvidia.com/gpu": pool.gpu.per_node}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_overlay_selects_exactly_the_pools_nodepools_and_instance_types(mode):
    spec = load_spec(_config(mode))
    pool = spec.pool(f"k-{mode}")
    reqs = {r["key"]: r for r in karpenter.node_overlay_spec(spec, pool)["requirements"]}
    assert reqs["karpenter.sh/nodepool"] == {"key": "karpenter.sh/nodepool", "operator": "In", "values": [pool.name]}
    assert reqs["node.kubernetes.io/instance-type"]["values"] == MODES[mode]["instanceTypes"]
    # the unshared dev pool (a10g-spot) gets no overlay: Karpenter's EC2 count is right there
    assert [p.name for p in karpenter.overlay_pools(spec)] == [pool.name]


def test_overlay_covers_both_nodepools_of_an_on_demand_fallback_pool():
    cfg = _config("ts")
    cfg["gpu-platform:nodePools"][-1].update(capacity="spot", karpenter={"onDemandFallback": True})
    spec = load_spec(cfg)
    reqs = karpenter.node_overlay_spec(spec, spec.pool("k-ts"))["requirements"]
    assert reqs[0]["values"] == ["k-ts", "k-ts-on-demand"]


def test_feature_gate_only_with_overlays_and_on_an_upstream_value_path():
    plain = load_spec(stack_config("dev-aws"))
    assert "nodeOverlay" not in karpenter.controller_values(plain)["settings"]["featureGates"]
    values = karpenter.controller_values(load_spec(_config("ts")))
    assert values["settings"]["featureGates"] == {"nodeOverlay": True, "nodeRepair": True}
    upstream = yaml.safe_load((UPSTREAM / "karpenter" / "values.yaml").read_text())
    assert upstream["settings"]["featureGates"]["nodeOverlay"] is False  # alpha, off by default upstream
    assert unknown_paths(values, upstream) == []


def _cel_nodeoverlay(doc) -> list[str]:
    """The NodeOverlay CRD's CEL rules (jsonschema does not evaluate CEL)."""
    schema = json.loads((UPSTREAM / "karpenter" / "nodeoverlay.karpenter.sh.v1alpha1.strict.json").read_text())
    allowed_aws = schema["properties"]["spec"]["properties"]["requirements"]["items"]["properties"]["key"]
    allowed = allowed_aws["x-kubernetes-validations"][2]["rule"]  # the karpenter.k8s.aws allow-list
    spec, out = doc["spec"], []
    for name in spec.get("capacity", {}):
        if name in ("cpu", "memory", "ephemeral-storage", "pods"):
            out.append(f"restricted capacity {name}")
    for req in spec["requirements"]:
        key = req["key"]
        domain = key.split("/")[0] if "/" in key else ""
        if domain.endswith("karpenter.sh") and key not in ("karpenter.sh/capacity-type", "karpenter.sh/nodepool"):
            out.append(f"restricted key {key}")
        if domain.endswith("karpenter.k8s.aws") and f'"{key}"' not in allowed:
            out.append(f"restricted key {key}")
        if key == "kubernetes.io/hostname":
            out.append("hostname")
        if req["operator"] in ("In", "NotIn") and not req.get("values"):
            out.append(f"{req['operator']} without values")
    if "price" in spec and "priceAdjustment" in spec:
        out.append("price and priceAdjustment")
    return out


def test_rendered_overlays_validate_against_the_strict_schema():
    cfg = _config("mig-mixed")
    cfg["gpu-platform:nodePools"].append(
        {"name": "k-br-ts", "capacity": "on-demand", "provisioner": "karpenter", "maxNodes": 2, **MODES["br-ts"]}
    )
    r = render_config(cfg)
    docs = [x.inputs for x in r.of_type(NODEOVERLAY)]
    assert sorted(d["metadata"]["name"] for d in docs) == ["gpu-k-br-ts", "gpu-k-mig-mixed"]
    schema = json.loads((UPSTREAM / "karpenter" / "nodeoverlay.karpenter.sh.v1alpha1.strict.json").read_text())
    validator = jsonschema.Draft7Validator(schema)
    for doc in docs:
        assert doc["apiVersion"] == versions.KARPENTER_NODEOVERLAY_API == "karpenter.sh/v1alpha1"
        body = {k: doc[k] for k in ("apiVersion", "kind", "metadata", "spec")}
        assert [e.message for e in validator.iter_errors(body)] == []
        assert _cel_nodeoverlay(doc) == []
    # not vacuous: a misplaced field and a restricted key fail
    bad = copy.deepcopy({k: docs[0][k] for k in ("apiVersion", "kind", "metadata", "spec")})
    bad["spec"]["capacity"]["cpu"] = "1"
    bad["spec"]["replicas"] = 2
    assert list(validator.iter_errors(bad)) and _cel_nodeoverlay(bad)
    assert release(r, "karpenter")["values"]["settings"]["featureGates"] == {"nodeOverlay": True, "nodeRepair": True}


# ------------------------------------------------------------------------ Bottlerocket EC2NodeClasses


def test_bottlerocket_sharing_reaches_the_node_through_the_node_class_user_data():
    cfg = _config("br-ts")
    cfg["gpu-platform:nodePools"].append(
        {
            "name": "k-br-plain",
            "os": "bottlerocket",
            "gpu": {"model": "L4", "perNode": 4},
            "instanceTypes": ["g6.12xlarge"],
            "capacity": "on-demand",
            "provisioner": "karpenter",
            "maxNodes": 1,
        }
    )
    spec = load_spec(cfg)
    r = render_config(cfg)
    classes = {x.inputs["metadata"]["name"]: x.inputs for x in r.of_type(NODECLASS)}
    # the stack-wide al2023 class keeps its name and has no user data
    assert "userData" not in classes["gpu-al2023-200gib"]["spec"]
    # Bottlerocket without sharing: the shared class by OS and disk, UUID device IDs only
    plain = tomllib.loads(classes["gpu-bottlerocket-200gib"]["spec"]["userData"])
    assert plain == {"settings": {"kubelet-device-plugins": {"nvidia": {"device-id-strategy": "uuid"}}}}
    # the sharing pool: a class of its own whose TOML carries the replicas the quotas count
    own = classes["gpu-bottlerocket-200gib-k-br-ts"]["spec"]
    nvidia = tomllib.loads(own["userData"])["settings"]["kubelet-device-plugins"]["nvidia"]
    assert nvidia["device-sharing-strategy"] == "time-slicing"
    assert nvidia["time-slicing"]["replicas"] == 4 == derive.units_per_gpu(spec, spec.pool("k-br-ts"))["nvidia.com/gpu"]
    assert nvidia["device-id-strategy"] == "uuid"
    pools = {x.inputs["metadata"]["name"]: x.inputs for x in r.of_type("kubernetes:karpenter.sh/v1:NodePool")}
    assert pools["k-br-ts"]["spec"]["template"]["spec"]["nodeClassRef"]["name"] == "gpu-bottlerocket-200gib-k-br-ts"
    assert pools["k-br-plain"]["spec"]["template"]["spec"]["nodeClassRef"]["name"] == "gpu-bottlerocket-200gib"
    schema = json.loads((UPSTREAM / "karpenter" / "ec2nodeclass.karpenter.k8s.aws.v1.strict.json").read_text())
    validator = jsonschema.Draft7Validator(schema)
    for doc in classes.values():
        body = {k: doc[k] for k in ("apiVersion", "kind", "metadata", "spec")}
        assert [e.message for e in validator.iter_errors(body)] == []


def test_rendered_overlay_metadata_and_summary_line():
    """The NodeOverlay is named gpu-<pool>, labelled managed-by gpu-platform and with the pool it serves (how
    day-2 tooling finds a pool's objects), and summary.md tells what Karpenter sees per node. For the ts mode
    (4 L4 x 4 time-slicing replicas) the device plugin advertises 16 nvidia.com/gpu per node, read from MODES."""
    from components.cli import synth

    r = render_config(_config("ts"))
    [overlay] = r.of_type(NODEOVERLAY)
    assert overlay.inputs["metadata"] == {
        "name": "gpu-k-ts",
        "labels": {"app.kubernetes.io/managed-by": "gpu-platform", "gpu-platform/pool": "k-ts"},
    }
    assert overlay.name == "nodeoverlay-k-ts"
    assert overlay.parent == "karpenter"
    summary = synth.files(r)["summary.md"]
    assert "NodeOverlay `gpu-k-ts`: Karpenter sees 16 nvidia.com/gpu per k-ts node." in summary.splitlines()


def test_rendered_overlay_waits_for_both_releases():
    """A NodeOverlay is a Karpenter custom resource (v1alpha1, feature-gated): it is created after the CRD
    release and the controller that enables the gate."""
    [overlay] = render_config(_config("ts")).of_type(NODEOVERLAY)
    assert set(overlay.depends_on) == {"karpenter", "karpenter-crd"}
