"""GPU sharing per pool: the rules a sharing declaration must satisfy, and the configs derived from it.

- time-slicing and MPS: one device-plugin ConfigMap with a named config per sharing pool
  (k8s-device-plugin ``version: v1`` format), selected by the ``nvidia.com/device-plugin.config`` label.
- MIG: one mig-parted ConfigMap with a named config per MIG pool (``version: v1``, ``mig-configs``),
  selected by the ``nvidia.com/mig.config`` label.

On GKE with GKE-installed drivers the same declarations become node-pool settings instead
(``gpuSharingConfig`` / ``gpuPartitionSize``, see components/gcp).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from components import catalog
from components.derive import GPU_RESOURCE, config_name, device_plugin_owner, units_per_gpu
from components.spec import Problem, StackSpec, key, rule

# k8s-device-plugin rejects MPS configs with more replicas than MPS clients a GPU supports.
MPS_MAX_REPLICAS = 48
MIG_DEFAULT_CONFIG = "all-disabled"
DEVICE_PLUGIN_DEFAULT_CONFIG = "default"


@rule
def sharing_rules(spec: StackSpec) -> Iterator[Problem]:
    for i, pool in enumerate(spec.node_pools):
        s = pool.sharing
        if s is None:
            continue
        at = ("nodePools", i, "sharing")
        given = s.model_fields_set
        if s.strategy in ("time-slicing", "mps"):
            if s.replicas is None:
                yield Problem(key(*at, "replicas"), f"is required for {s.strategy}")
            if s.layout is not None:
                yield Problem(key(*at, "layout"), f"applies to mig only, not {s.strategy}")
            if s.strategy == "mps" and s.replicas is not None and s.replicas > MPS_MAX_REPLICAS:
                yield Problem(
                    key(*at, "replicas"),
                    f"MPS supports at most {MPS_MAX_REPLICAS} clients per GPU, got {s.replicas}",
                )
            if s.strategy == "mps" and "fail_requests_greater_than_one" in given:
                yield Problem(key(*at, "failRequestsGreaterThanOne"), "applies to time-slicing only")
            continue
        # mig
        for field, alias in (
            ("replicas", "replicas"),
            ("rename_by_default", "renameByDefault"),
            ("fail_requests_greater_than_one", "failRequestsGreaterThanOne"),
        ):
            if field in given:
                yield Problem(key(*at, alias), "does not apply to mig")
        model = catalog.gpu_model(pool.gpu.model)
        if not model.supports_mig:
            with_mig = sorted(n for n, m in catalog.GPU_MODELS.items() if m.supports_mig)
            yield Problem(
                key(*at, "strategy"),
                f"{pool.gpu.model} has no MIG support (MIG-capable: {', '.join(with_mig)})",
            )
            continue
        if not s.layout:
            yield Problem(key(*at, "layout"), "is required for mig, e.g. {'3g.40gb': 2}")
            continue
        for msg in catalog.mig_layout_problems(model, s.layout):
            yield Problem(key(*at, "layout"), f"{pool.gpu.model}: {msg}")


def _dump(doc: dict[str, Any]) -> str:
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False)


def device_plugin_configs(spec: StackSpec) -> dict[str, str]:
    """ConfigMap data: config name -> device-plugin config YAML; empty when no pool shares GPUs
    through the operator's device plugin. Includes a 'default' config (no sharing) for other nodes."""
    if device_plugin_owner(spec) != "operator":
        return {}
    configs: dict[str, str] = {}
    for pool in sorted(spec.node_pools, key=lambda p: p.name):
        s = pool.sharing
        if s is None or s.strategy not in ("time-slicing", "mps"):
            continue
        body: dict[str, Any] = {"renameByDefault": s.rename_by_default}
        if s.strategy == "time-slicing":
            body["failRequestsGreaterThanOne"] = s.fail_requests_greater_than_one
        body["resources"] = [{"name": GPU_RESOURCE, "replicas": s.replicas}]
        key_ = "timeSlicing" if s.strategy == "time-slicing" else "mps"
        configs[config_name(pool)] = _dump({"version": "v1", "sharing": {key_: body}})
    if configs:
        configs = {DEVICE_PLUGIN_DEFAULT_CONFIG: _dump({"version": "v1"}), **configs}
    return configs


def mig_configs(spec: StackSpec) -> dict[str, Any]:
    """The mig-parted document: 'all-disabled' plus one named config per MIG pool. Empty when no
    pool uses MIG through the operator's MIG manager."""
    if device_plugin_owner(spec) != "operator":
        return {}
    configs: dict[str, Any] = {}
    for pool in sorted(spec.node_pools, key=lambda p: p.name):
        s = pool.sharing
        if s is None or s.strategy != "mig":
            continue
        configs[config_name(pool)] = [
            {"devices": "all", "mig-enabled": True, "mig-devices": dict(sorted((s.layout or {}).items()))}
        ]
    if not configs:
        return {}
    return {
        "version": "v1",
        "mig-configs": {MIG_DEFAULT_CONFIG: [{"devices": "all", "mig-enabled": False}], **configs},
    }


def mig_config_yaml(spec: StackSpec) -> str:
    doc = mig_configs(spec)
    return _dump(doc) if doc else ""


def describe(spec: StackSpec, pool_name: str) -> str:
    """One-line description of a pool's sharing, for summaries."""
    pool = spec.pool(pool_name)
    s = pool.sharing
    units = ", ".join(f"{n}x {r}" for r, n in units_per_gpu(spec, pool).items())
    if s is None:
        return "whole GPUs"
    if s.strategy == "mig":
        layout = " + ".join(f"{c}x {p}" for p, c in sorted((s.layout or {}).items()))
        return f"MIG {layout} per GPU ({units})"
    return f"{s.strategy} x{s.replicas} ({units} per GPU)"
