"""GPU sharing per pool: the rules a sharing declaration must satisfy, and the configs derived from it.

- time-slicing and MPS: one device-plugin ConfigMap with a named config per sharing pool
  (k8s-device-plugin ``version: v1`` format), selected by the ``nvidia.com/device-plugin.config`` label.
- MIG: one mig-parted ConfigMap with a named config per MIG pool (``version: v1``, ``mig-configs``),
  selected by the ``nvidia.com/mig.config`` label.

On GKE with GKE-installed drivers the same declarations become node-pool settings instead
(``gpuSharingConfig`` / ``gpuPartitionSize``, see components/gcp). On Bottlerocket nodes the host's own
device plugin serves the GPUs: time-slicing and MPS become ``settings.kubelet-device-plugins.nvidia``
(``bottlerocket_device_plugin_settings``, for the node's user data), and MIG is not offered there.

Limits checked here come from k8s-device-plugin v0.20.0 (the version gpu-operator v26.7.0 deploys):
``api/config/v1/replicas.go`` rejects ``replicas < 2``; ``cmd/mps-control-daemon/mps/device.go`` caps MPS
at 48 clients per GPU of compute capability 7.5 or newer (Turing onwards) and 16 below.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..data import catalog
from ..spec.model import Problem, StackSpec, key, rule
from . import derive, mig, yaml_text
from .derive import GPU_RESOURCE, config_name, pool_device_plugin, units_per_gpu

# k8s-device-plugin v0.20.0 (mps/device.go maxClients): 48 MPS clients per GPU from compute capability 7.5
# (Turing) on, 16 before. Every GPU in the catalog is Turing or newer; the table keeps the rule honest if
# an older architecture is ever added.
MPS_MAX_REPLICAS = 48
MPS_MAX_REPLICAS_PRE_TURING = 16
_MPS_48_ARCHITECTURES = frozenset({"turing", "ampere", "ada", "hopper", "blackwell"})
MIG_DEFAULT_CONFIG = "all-disabled"
# The device plugin's config-manager uses `devicePlugin.config.default` for nodes without the
# nvidia.com/device-plugin.config label, and fails ("specified config ... does not exist") when that name is
# not a key of the ConfigMap; so the ConfigMap always carries this no-sharing entry.
DEVICE_PLUGIN_DEFAULT_CONFIG = "default"
BOTTLEROCKET_DEVICE_ID_STRATEGY = "device-id-strategy"


def mps_max_replicas(model: catalog.GpuModel) -> int:
    return MPS_MAX_REPLICAS if model.architecture in _MPS_48_ARCHITECTURES else MPS_MAX_REPLICAS_PRE_TURING


@rule
def mps_and_mixed_mig(spec: StackSpec) -> Iterator[Problem]:
    """The GPU Operator gives every device plugin it runs the cluster-wide MIG strategy, and the device plugin
    refuses to start MPS under the mixed strategy: an operator-served MPS pool would advertise no GPUs."""
    if derive.mig_strategy(spec) != "mixed":
        return
    mixed = next(
        i
        for i, p in enumerate(spec.node_pools)
        if p.sharing and p.sharing.strategy == "mig" and len(p.sharing.layout or {}) > 1
    )
    for i, pool in enumerate(spec.node_pools):
        if pool.sharing and pool.sharing.strategy == "mps" and derive.pool_device_plugin(spec, pool) == "operator":
            yield Problem(
                key("nodePools", i, "sharing", "strategy"),
                f"MPS cannot run under the mixed MIG strategy that nodePools[{mixed}] "
                f"({spec.node_pools[mixed].name}) needs: the GPU Operator sets one strategy for every device "
                "plugin and the plugin refuses MPS with it; use time-slicing here, or one MIG profile per layout",
            )


@rule
def sharing_rules(spec: StackSpec) -> Iterator[Problem]:
    for i, pool in enumerate(spec.node_pools):
        s = pool.sharing
        if s is None:
            continue
        at = ("nodePools", i, "sharing")
        given = s.model_fields_set
        reserved = {"time-slicing": DEVICE_PLUGIN_DEFAULT_CONFIG, "mps": DEVICE_PLUGIN_DEFAULT_CONFIG}.get(
            s.strategy, MIG_DEFAULT_CONFIG
        )
        if config_name(pool) == reserved and pool_device_plugin(spec, pool) == "operator":
            yield Problem(
                key("nodePools", i, "name"),
                f"{reserved!r} names the built-in {s.strategy} config the pool's nodes would share; rename the pool",
            )
        if s.strategy in ("time-slicing", "mps"):
            if s.replicas is None:
                yield Problem(key(*at, "replicas"), f"is required for {s.strategy}")
            if s.layout is not None:
                yield Problem(key(*at, "layout"), f"applies to mig only, not {s.strategy}")
            limit = mps_max_replicas(catalog.gpu_model(pool.gpu.model))
            if s.strategy == "mps" and s.replicas is not None and s.replicas > limit:
                yield Problem(
                    key(*at, "replicas"),
                    f"MPS serves at most {limit} clients per {pool.gpu.model} GPU (k8s-device-plugin limit), "
                    f"got {s.replicas}",
                )
            if pool_device_plugin(spec, pool) == "operator" and not spec.addons.gpu_operator:
                yield Problem(
                    key(*at, "strategy"),
                    f"{s.strategy} is configured through the GPU Operator's device plugin: enable addons.gpuOperator",
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
        for msg in mig.mig_layout_problems(model, s.layout):
            yield Problem(key(*at, "layout"), f"{pool.gpu.model}: {msg}")
        plugin = pool_device_plugin(spec, pool)
        if plugin == "bottlerocket":
            yield Problem(
                key(*at, "strategy"),
                "MIG on Bottlerocket is applied by the host's own MIG manager at boot (one profile per GPU "
                "model), not by the GPU Operator's mig-parted configs; use os: al2023 for MIG pools",
            )
        elif plugin == "operator" and not spec.addons.gpu_operator:
            yield Problem(
                key(*at, "strategy"), "MIG layouts are applied by the GPU Operator: enable addons.gpuOperator"
            )


def _dump(doc: dict[str, Any]) -> str:
    return yaml_text.safe_dump(doc, sort_keys=False)


def device_plugin_configs(spec: StackSpec) -> dict[str, str]:
    """ConfigMap data: config name -> device-plugin config YAML; empty when no pool shares GPUs
    through the operator's device plugin. Includes a 'default' config (no sharing) for other nodes.

    Configs carry no ``flags``: the plugin then keeps what the operator passes it (MIG strategy from
    ``mig.strategy``, MPS root ...), so one MIG strategy holds cluster-wide."""
    configs: dict[str, str] = {}
    for pool in sorted(spec.node_pools, key=lambda p: p.name):
        s = pool.sharing
        if s is None or s.strategy not in ("time-slicing", "mps") or pool_device_plugin(spec, pool) != "operator":
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
    configs: dict[str, Any] = {}
    for pool in sorted(spec.node_pools, key=lambda p: p.name):
        s = pool.sharing
        if s is None or s.strategy != "mig" or pool_device_plugin(spec, pool) != "operator":
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


def bottlerocket_device_plugin_settings(spec: StackSpec, pool_name: str) -> dict[str, Any]:
    """``settings.kubelet-device-plugins.nvidia`` for a Bottlerocket pool (its user data), so the host's
    device plugin advertises exactly what ``derive.units_per_gpu`` counts, with UUID device IDs. Empty for
    pools not served by Bottlerocket's plugin; only ``device-id-strategy`` for Bottlerocket pools without
    time-slicing / MPS (the defaults then advertise whole GPUs)."""
    pool = spec.pool(pool_name)
    s = pool.sharing
    if pool_device_plugin(spec, pool) != "bottlerocket":
        return {}
    # dcgm-exporter maps pods to GPUs by UUID by default (its `--kubernetes-gpu-id-type uid`), matching the
    # device IDs the kubelet's pod-resources API reports; Bottlerocket's plugin defaults to `index` IDs
    # (bottlerocket.dev settings.kubelet-device-plugins.nvidia.device-id-strategy: index | uuid), with which
    # no GPU metric would carry its pod.
    base: dict[str, Any] = {BOTTLEROCKET_DEVICE_ID_STRATEGY: "uuid"}
    if s is None or s.strategy == "mig":
        return base
    if s.strategy == "time-slicing":
        return {
            **base,
            "device-sharing-strategy": "time-slicing",
            "time-slicing": {
                "replicas": s.replicas,
                "rename-by-default": s.rename_by_default,
                "fail-requests-greater-than-one": s.fail_requests_greater_than_one,
            },
        }
    return {
        **base,
        "device-sharing-strategy": "mps",
        "mps": {"replicas": s.replicas, "rename-by-default": s.rename_by_default},
    }


def bottlerocket_shares_gpus(spec: StackSpec, pool_name: str) -> bool:
    """Whether the pool's Bottlerocket settings go beyond the stack-wide baseline (they then differ per pool)."""
    return "device-sharing-strategy" in bottlerocket_device_plugin_settings(spec, pool_name)


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
