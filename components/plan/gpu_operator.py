"""What the GPU Operator install decides (pure): the driver and toolkit choice, the operands' tolerations, the DCGM
exporter's environment, the ClusterPolicy values and the namespace's labels. The release and its ConfigMaps are
``components/render/gpu_operator.py``'s."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..data import versions
from ..spec.model import Problem, StackSpec, key, rule
from . import derive, sharing
from .tenancy import psa_labels

CHART = versions.GPU_OPERATOR
DEVICE_PLUGIN_CONFIGMAP = "device-plugin-config"
MIG_CONFIGMAP = "mig-parted-config"
MIG_CONFIG_KEY = "config.yaml"  # the key the MIG manager reads from a custom ConfigMap (values.yaml note)
GKE_NVIDIA_DIR = "/home/kubernetes/bin/nvidia"
CRITICAL_QUOTA_NAME = "gpu-operator-quota"
# Operand pods one GPU node may run in the operator namespace (driver, toolkit, device plugin + MPS daemon,
# GFD, DCGM exporter, validator, MIG manager, NFD worker) with headroom; plus NFD workers on other nodes and
# the controllers.
CRITICAL_PODS_PER_GPU_NODE = 12
CRITICAL_PODS_BASE = 100
CONTROL_PLANE_TOLERATION = {
    "key": "node-role.kubernetes.io/control-plane",
    "operator": "Equal",
    "value": "",
    "effect": "NoSchedule",
}
DCGM_VIRTUAL_GPUS_ENV = "KUBERNETES_VIRTUAL_GPUS"  # dcgm-exporter: attribute shared GPUs to their pods
# dcgm-exporter 4.5.3-4.8.2 pkg/cmd/app.go (flags --kubernetes-gpu-id-type, --nvidia-resource-names):
DCGM_GPU_ID_TYPE_ENV = "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE"  # "uid" (default) | "device-name"
DCGM_ENABLE_DRA_ENV = "KUBERNETES_ENABLE_DRA"  # dcgm-exporter: attribute DRA-allocated GPUs to their pods
DCGM_RESOURCE_NAMES_ENV = "NVIDIA_RESOURCE_NAMES"  # comma-separated (urfave/cli StringSlice)


# ------------------------------------------------------------------------------------------ rules


@rule
def driver_choice(spec: StackSpec) -> Iterator[Problem]:
    choice = spec.gpu_operator.driver
    at = key("gpuOperator", "driver")
    if spec.cloud == "aws" and choice == "operator":
        yield Problem(
            at,
            "EKS NVIDIA AMIs (al2023, bottlerocket) ship the driver and the GPU Operator's driver containers "
            "do not support them: use auto or preinstalled",
        )
    if spec.cloud != "gcp" and choice in ("gke-default", "gke-latest"):
        yield Problem(at, f"{choice} applies to gcp stacks only")
    if spec.cloud == "gcp" and choice == "preinstalled":
        yield Problem(at, "on GKE use gke-default / gke-latest (GKE installs it) or operator (Ubuntu nodes)")
    if spec.cloud == "gcp" and derive.driver(spec) == "operator":
        for i, pool in enumerate(spec.node_pools):
            if derive.node_os(spec, pool) != "ubuntu":
                yield Problem(
                    key("nodePools", i, "os"),
                    "gpuOperator.driver operator on GKE needs Ubuntu nodes (NVIDIA's driver-manager path); "
                    "COS nodes take GKE-installed drivers (gke-default / gke-latest)",
                )


# ----------------------------------------------------------------------------------------- values


def toolkit_enabled(spec: StackSpec) -> bool:
    """Whether the operator installs the NVIDIA container toolkit."""
    if spec.gpu_operator.toolkit is not None:
        return spec.gpu_operator.toolkit
    return spec.cloud != "aws"  # both EKS NVIDIA AMIs ship it; GKE and existing clusters need it


def gpu_tolerations(spec: StackSpec) -> list[dict[str, str]]:
    """Tolerations for pods that must run on every GPU node: the GPU taint (any value), then every other
    taint a pool's nodes carry (derive.tolerations), deduplicated."""
    gpu = {"key": derive.GPU_TAINT.key, "operator": "Exists", "effect": derive.GPU_TAINT.effect}
    out = [gpu]
    for pool in spec.node_pools:
        for tol in derive.tolerations(pool):
            if tol["key"] == gpu["key"] and tol["effect"] == gpu["effect"]:
                continue
            if tol not in out:
                out.append(tol)
    return [gpu, *sorted(out[1:], key=lambda t: (t["key"], t["effect"], t.get("value", "")))]


def critical_pods(spec: StackSpec) -> int:
    """Pods GKE must admit at a system-critical priority in the operator namespace (NVIDIA's GKE guide,
    google-gke-gpu-operator-quota.yaml, has 100): the operator's own plus its daemonsets on every GPU node
    the stack may bring."""
    gpu_nodes = sum(p.node_cap for p in spec.node_pools)
    return CRITICAL_PODS_BASE + CRITICAL_PODS_PER_GPU_NODE * gpu_nodes


def shares_gpus(spec: StackSpec) -> bool:
    """True when a device plugin time-slices or MPS-shares some pool's GPUs: the DCGM exporter then maps every
    replica to its pod (KUBERNETES_VIRTUAL_GPUS), so each pod sharing a GPU gets its metrics and its share of the
    cost; without it one pod per GPU does. NVIDIA's plugin names replicas ``<uuid>::<n>``, GKE's ``nvidiaN/vgpuM``,
    and the exporter's sharing map reads both (NVIDIA/dcgm-exporter internal/pkg/transformation/kubernetes.go
    ``toDeviceToSharingPods``: the ``::`` and ``gkeVirtualGPUDeviceIDSeparator = "/vgpu"`` branches)."""
    return any(p.sharing and p.sharing.strategy in ("time-slicing", "mps") for p in spec.node_pools)


def exporter_env(spec: StackSpec) -> list[dict[str, str]]:
    """Environment of the DCGM exporter (the operator's or the standalone chart's), so that every GPU
    metric can carry the pod holding the GPU. dcgm-exporter reads the kubelet's pod-resources API and
    joins its device IDs to GPUs (internal/pkg/transformation/kubernetes.go):

    * shared GPUs (time-slicing / MPS): replica IDs (``<uuid>::<n>``, GKE's ``nvidiaN/vgpuM``) need
      ``KUBERNETES_VIRTUAL_GPUS``;
    * GKE's device plugin names devices ``nvidiaN`` / ``nvidiaN/vgpuM``, not by UUID: the exporter must
      match by device name (``DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE=device-name``);
    * the exporter skips every resource but ``nvidia.com/gpu`` and ``nvidia.com/mig-*`` unless listed in
      ``NVIDIA_RESOURCE_NAMES``: renamed replicas (``nvidia.com/gpu.shared``) must be listed.

    (Bottlerocket's host plugin gets ``device-id-strategy: uuid`` in its user data instead, see
    ``sharing.bottlerocket_device_plugin_settings``.)"""
    env: list[dict[str, str]] = []
    if shares_gpus(spec):
        env.append({"name": DCGM_VIRTUAL_GPUS_ENV, "value": "true"})
    if derive.device_plugin_owner(spec) == "gke":
        env.append({"name": DCGM_GPU_ID_TYPE_ENV, "value": "device-name"})
    if derive.dra(spec):
        # GPUs a DRA driver allocates are not in the pod-resources API's device list the exporter joins by
        # resource name: it finds their pods through ResourceSlices only with KUBERNETES_ENABLE_DRA
        # (NVIDIA/dcgm-exporter pkg/cmd/app.go --kubernetes-enable-dra; transformation/kubernetes.go).
        env.append({"name": DCGM_ENABLE_DRA_ENV, "value": "true"})
    extra = sorted(
        {
            name
            for pool in spec.node_pools
            for name in derive.units_per_gpu(spec, pool)
            if name != derive.GPU_RESOURCE
            and not name.startswith("nvidia.com/mig-")
            and name not in derive.DRA_CLASS_OF  # Kueue's quota names for DRA devices: nothing the exporter reads
        }
    )
    if extra:
        env.append({"name": DCGM_RESOURCE_NAMES_ENV, "value": ",".join(extra)})
    return env


def operator_values(spec: StackSpec) -> dict[str, Any]:
    """Helm values of the gpu-operator release; every path exists in the pinned chart's values.yaml."""
    owner = derive.device_plugin_owner(spec)
    driver = derive.driver(spec)
    toolkit = toolkit_enabled(spec)
    tolerations = gpu_tolerations(spec)
    system = derive.system_node_selector(spec)

    values: dict[str, Any] = {
        "cdi": {"enabled": True},
        "nfd": {"enabled": True},
        "operator": {"nodeSelector": system},
        "daemonsets": {"tolerations": tolerations},
        "node-feature-discovery": {
            # the workers label every node (the operator deploys operands where NFD finds NVIDIA PCI devices)
            "worker": {"tolerations": [CONTROL_PLANE_TOLERATION, *tolerations]},
            "master": {"nodeSelector": system},
            "gc": {"nodeSelector": system},
        },
        "driver": {"enabled": driver == "operator"},
        "toolkit": {"enabled": toolkit},
        "devicePlugin": {"enabled": owner == "operator"},
        "gfd": {"enabled": True},
        "mig": {"strategy": derive.mig_strategy(spec)},
        "migManager": {"enabled": derive.uses_mig_manager(spec)},
        "dcgmExporter": {
            "enabled": spec.addons.dcgm,
            # components.render.monitoring ships the ServiceMonitor (with node metadata for the pool label)
            "serviceMonitor": {"enabled": False},
        },
    }
    if spec.addons.dcgm and exporter_env(spec):
        values["dcgmExporter"]["env"] = exporter_env(spec)
    if spec.cloud == "gcp":
        # GKE 1.33+: without this the toolkit misconfigures containerd's config.toml (NVIDIA GKE guide).
        values["toolkit"]["env"] = [{"name": "RUNTIME_CONFIG_SOURCE", "value": "file"}]
        if driver != "operator":
            values["hostPaths"] = {"driverInstallDir": GKE_NVIDIA_DIR}
            values["toolkit"]["installDir"] = GKE_NVIDIA_DIR
    if owner == "operator" and sharing.device_plugin_configs(spec):
        values["devicePlugin"]["config"] = {
            "create": False,
            "name": DEVICE_PLUGIN_CONFIGMAP,
            "default": sharing.DEVICE_PLUGIN_DEFAULT_CONFIG,
        }
    if derive.uses_mig_manager(spec):
        values["migManager"]["config"] = {
            "create": False,
            "name": MIG_CONFIGMAP,
            "default": sharing.MIG_DEFAULT_CONFIG,
        }
        if spec.cloud in ("aws", "gcp"):
            # Cloud VMs cannot reset a GPU out of band: the MIG manager reboots the node to change MIG mode.
            values["migManager"]["env"] = [{"name": "WITH_REBOOT", "value": "true"}]
    if derive.dra(spec):
        from . import dra

        return dra.operator_values(spec, values)
    return values


def namespace_labels() -> dict[str, str]:
    """The operands need host paths, host PID and privileged containers: Pod Security level privileged
    here only (tenant namespaces stay baseline/restricted)."""
    return {**derive.MANAGED_BY, **psa_labels("privileged", audit="privileged")}


def operator_namespace_labels(spec: StackSpec) -> dict[str, str]:
    """The operator namespace's labels: privileged, plus what a DRA stack's policies look for."""
    return {**namespace_labels(), **derive.dra_operator_namespace_labels(spec)}


def config_maps(spec: StackSpec) -> dict[str, dict[str, Any]]:
    """The ConfigMaps the operator reads and the platform writes, by resource name (``{"name", "data"}``): the
    device plugin's sharing configurations when the operator runs the device plugin, and mig-parted's layouts
    when its MIG manager runs; made before the release, which names them (``operator_values``)."""
    out: dict[str, dict[str, Any]] = {}
    dp_configs = sharing.device_plugin_configs(spec)
    if dp_configs and derive.device_plugin_owner(spec) == "operator":
        out["device-plugin-config"] = {"name": DEVICE_PLUGIN_CONFIGMAP, "data": dp_configs}
    mig_yaml = sharing.mig_config_yaml(spec)
    if mig_yaml and derive.uses_mig_manager(spec):
        out["mig-parted-config"] = {"name": MIG_CONFIGMAP, "data": {MIG_CONFIG_KEY: mig_yaml}}
    return out


# -------------------------------------------------------------------------------------- component
