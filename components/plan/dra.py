"""What DRA decides (pure): whether the stack can use it, the GPU Operator's DRA values, the DeviceClasses and
quota keys, Kueue's device-class mappings and each tenant's ResourceClaimTemplates. The objects are
``components/render/dra.py``'s; why they look so is said there."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..data import catalog
from ..spec.model import NodePool, Problem, StackSpec, Tenant, key, rule
from . import derive, tenancy as tenancy_facts

MIN_KUBERNETES_MINOR = 34  # resource.k8s.io/v1 (GA); the DRA driver and GPUCluster ask for v1.34.2+
RESOURCE_API = "resource.k8s.io/v1"
QUOTA_SUFFIX = tenancy_facts.DRA_QUOTA_SUFFIX
quota_key = tenancy_facts.quota_key
quota_resources = tenancy_facts.dra_quota_resources
DRIVER_DOMAIN = "gpu.nvidia.com"  # the driver name and its attribute / capacity domain
# Whole-GPU templates accept devices whose framebuffer is within this fraction of the model's nominal size
# (NVML reports e.g. 81559 MiB for an "80GB" H100 and 15360 MiB for a 16 GB T4): enough to tell the 40 GB and
# 80 GB A100 (and L4 vs L40S, whose product names share "L4") apart.
MEMORY_TOLERANCE = 0.1


@dataclass(frozen=True)
class DraPlan:
    """``gpuOperator.allocation: dra``: the DeviceClasses the pools are served through, how Kueue counts them, and
    each tenant's ResourceClaimTemplates (tenant -> template name -> its spec; a tenant reaching no pool has
    none)."""

    device_classes: tuple[str, ...]
    kueue_device_class_mappings: tuple[Mapping[str, Any], ...]
    claim_templates: Mapping[str, Mapping[str, Mapping[str, Any]]]
    kubernetes_version: str | None = None  # cluster.kubernetesVersion, which DRA requires (1.34+)


def kubernetes_minor(spec: StackSpec) -> int | None:
    v = spec.cluster.kubernetes_version
    return int(v.split(".")[1]) if v else None


# ------------------------------------------------------------------------------------------ rules


@rule
def dra_supported(spec: StackSpec) -> Iterator[Problem]:
    """Every combination upstream does not support with DRA is a config error (sources in each message)."""
    if not derive.dra(spec):
        return
    at = key("gpuOperator", "allocation")
    minor = kubernetes_minor(spec)
    if minor is None:
        yield Problem(
            key("cluster", "kubernetesVersion"),
            "required with gpuOperator.allocation dra (e.g. '1.34'): the program cannot look the cluster's version "
            "up offline, and DRA needs resource.k8s.io/v1",
        )
    elif minor < MIN_KUBERNETES_MINOR:
        yield Problem(
            key("cluster", "kubernetesVersion"),
            f"DRA needs Kubernetes 1.{MIN_KUBERNETES_MINOR}+ (resource.k8s.io/v1 is GA in 1.34; the NVIDIA DRA "
            "driver and the GPU Operator's GPUCluster stack ask for v1.34.2+), this cluster is "
            f"{spec.cluster.kubernetes_version}: keep allocation device-plugin until it is upgraded",
        )
    if not spec.addons.gpu_operator:
        yield Problem(
            at, "dra installs the NVIDIA DRA driver through the GPU Operator's GPUCluster: turn addons.gpuOperator on"
        )
    if spec.addons.volcano:
        yield Problem(
            key("addons", "volcano"),
            "Volcano queues cap extended resources per name; this platform derives no Volcano capacity for DRA "
            "devices (ResourceClaims), so a Volcano queue would not bound GPUs: use Kueue on a DRA stack",
        )
    if spec.cloud == "gcp" and derive.driver(spec) != "operator":
        yield Problem(
            key("gpuOperator", "driver"),
            "GKE-installed drivers (gke-default / gke-latest) come with GKE's device plugin, which cannot share a "
            "node with the DRA driver's GPU plugin (dra-driver-nvidia-gpu templates/validation.yaml); use driver: "
            "operator (Ubuntu nodes), whose pools carry gke-no-default-nvidia-gpu-device-plugin=true",
        )
    if spec.cluster_autoscaler_enabled:
        yield Problem(
            key("addons", "clusterAutoscaler"),
            "the Cluster Autoscaler simulates DRA claims only with its --enable-dynamic-resource-allocation flag, "
            "which this platform does not set yet: set addons.clusterAutoscaler false (node groups keep their size)",
        )
    for i, pool in enumerate(spec.node_pools):
        s = pool.sharing
        if s is not None and s.strategy in ("time-slicing", "mps"):
            yield Problem(
                key("nodePools", i, "sharing", "strategy"),
                f"{s.strategy} replicas configure k8s-device-plugin, which a DRA stack does not run (a GPUCluster "
                "replaces the ClusterPolicy); the DRA driver's own sharing (feature gates TimeSlicingSettings, "
                "MPSSupport, set per claim) is alpha and off by default: drop sharing or use allocation device-plugin",
            )
        if s is not None and s.strategy == "mig" and spec.cloud != "existing":
            yield Problem(
                key("nodePools", i, "sharing", "strategy"),
                "MIG layouts are applied by the MIG manager (mig-parted), an operand of the ClusterPolicy stack that "
                "cannot coexist with the GPUCluster; the DRA driver allocates existing MIG devices (DynamicMIG is "
                "alpha). MIG pools on a DRA stack need nodes partitioned beforehand: cloud existing only",
            )
        if derive.node_os(spec, pool) == "bottlerocket":
            yield Problem(
                key("nodePools", i, "os"),
                "Bottlerocket NVIDIA AMIs run their own device plugin on the host, which cannot share a node with "
                "the DRA driver's GPU plugin (dra-driver-nvidia-gpu templates/validation.yaml): use al2023",
            )
        if pool.provisioner == "karpenter":
            yield Problem(
                key("nodePools", i, "provisioner"),
                "Karpenter 1.14 cannot tell which instance types publish which DRA devices, so it cannot provision "
                "for ResourceClaims (kubernetes-sigs/karpenter#3228, open): use provisioner managed",
            )
        if pool.topology_aware:
            yield Problem(
                key("nodePools", i, "topologyAware"),
                "topology-aware scheduling is derived for nvidia.com/gpu pools only; not offered on a DRA stack yet",
            )


# --------------------------------------------------------------------------------- operator values


def operator_values(spec: StackSpec, values: dict[str, Any]) -> dict[str, Any]:
    """The gpu-operator values of a DRA stack: the ClusterPolicy's values, switched to the GPUCluster stack.

    Every path exists in the pinned chart's values.yaml. ComputeDomains (multi-node NVLink, IMEX) are off:
    no pool here declares an NVLink domain."""
    out = {**values}
    out["clusterPolicy"] = {"deployCR": False}
    out["gpuCluster"] = {"deployCR": True}
    out["devicePlugin"] = {"enabled": False}  # the classic device plugin stays off: DRA serves the GPUs
    out["migManager"] = {"enabled": False}
    out["gfd"] = {"enabled": False}
    out["draDriver"] = {"computeDomains": {"enabled": False}}
    if derive.driver(spec) == "operator":
        # GPU Operator docs, dra-intro-install.rst: the GPUCluster stack takes an operator-managed driver
        # through the NVIDIADriver CRD (the chart deploys a default NVIDIADriver CR).
        out["driver"] = {**values["driver"], "nvidiaDriverCRD": {"enabled": True, "deployDefaultCR": True}}
    return out


def gpu_cluster_from_values(values: dict[str, Any]) -> dict[str, Any]:
    """The GPUCluster CR the chart renders from (merged) values: templates/gpucluster.yaml at
    NVIDIA/gpu-operator v26.7.0, for the keys that template reads. Used to validate what the release will
    create against the CRD schema."""
    d = values["draDriver"]
    dra_spec: dict[str, Any] = {}
    for k in ("repository", "image", "version", "imagePullPolicy", "imagePullSecrets", "featureGates"):
        if d.get(k):
            dra_spec[k] = d[k]
    if (d.get("gpus") or {}).get("kubeletPlugin"):
        dra_spec["gpus"] = {"kubeletPlugin": d["gpus"]["kubeletPlugin"]}
    cd = d["computeDomains"]
    dra_spec["computeDomains"] = {"enabled": cd["enabled"]}
    for k in ("controller", "kubeletPlugin"):
        if cd.get(k):
            dra_spec["computeDomains"][k] = cd[k]

    def pick(section: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
        out = {"enabled": section["enabled"]}
        out.update({k: section[k] for k in keys if section.get(k)})
        return out

    dcgm = pick(
        values["dcgm"],
        ("repository", "image", "version", "imagePullPolicy", "imagePullSecrets", "args", "env", "resources"),
    )
    dcgm.update({"hostNetwork": True} if values["dcgm"].get("hostNetwork") else {})
    exporter = pick(
        values["dcgmExporter"],
        (
            "repository",
            "image",
            "version",
            "imagePullPolicy",
            "imagePullSecrets",
            "annotations",
            "args",
            "env",
            "resources",
            "hostPID",
            "hostNetwork",
            "hpcJobMapping",
            "enablePodLabels",
            "enablePodUID",
            "podLabelAllowlistRegex",
            "service",
            "serviceMonitor",
        ),
    )
    if (values["dcgmExporter"].get("config") or {}).get("name"):
        exporter["config"] = {"name": values["dcgmExporter"]["config"]["name"]}
    host_paths = {"driverInstallDir": values["hostPaths"]["driverInstallDir"]}
    if values["hostPaths"].get("kubeletRootDir"):
        host_paths["kubeletRootDir"] = values["hostPaths"]["kubeletRootDir"]
    return {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "GPUCluster",
        "metadata": {"name": "gpu-cluster"},
        "spec": {
            "draDriver": dra_spec,
            "dcgm": dcgm,
            "dcgmExporter": exporter,
            "hostPaths": host_paths,
            "daemonsets": values["daemonsets"],
        },
    }


# ---------------------------------------------------------------------------------- quota and Kueue


def device_classes(spec: StackSpec) -> list[str]:
    """DeviceClasses the stack's pools are served through (whole GPUs always: the class exists either way)."""
    names = {derive.DRA_GPU_RESOURCE}
    for pool in spec.node_pools:
        names.update(derive.units_per_gpu(spec, pool))
    return sorted(derive.DRA_CLASS_OF[n] for n in names if n in derive.DRA_CLASS_OF)


def kueue_device_class_mappings(spec: StackSpec) -> list[dict[str, Any]]:
    """Kueue Configuration ``resources.deviceClassMappings``: each DeviceClass counted under the quota resource
    its pools advertise in the ClusterQueues (``derive.units_per_gpu``)."""
    if not derive.dra(spec):
        return []
    by_class = {c: n for n, c in derive.DRA_CLASS_OF.items()}
    return [{"name": by_class[c], "deviceClassNames": [c]} for c in device_classes(spec)]


# ------------------------------------------------------------------------------------- claim templates


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def product_token(model: str) -> str:
    """The part of the NVML product name every card of the model carries ('NVIDIA A100-SXM4-80GB' -> 'a100',
    'Tesla T4' -> 't4', 'NVIDIA H100 80GB HBM3' -> 'h100')."""
    return model.lower().split("-")[0]


def _attr(name: str) -> str:
    return f"device.attributes['{DRIVER_DOMAIN}'].{name}"


def whole_gpu_selector(model: str) -> str:
    gpu = catalog.GPU_MODELS[model]
    low = int(gpu.memory_gib * (1 - MEMORY_TOLERANCE))
    high = int(gpu.memory_gib * (1 + MEMORY_TOLERANCE)) + 1
    mem = f"device.capacity['{DRIVER_DOMAIN}'].memory"
    return (
        f"{_attr('productName')}.lowerAscii().contains('{product_token(model)}') && "
        f"{mem}.compareTo(quantity('{low}Gi')) >= 0 && {mem}.compareTo(quantity('{high}Gi')) <= 0"
    )


def mig_selector(model: str, profile: str) -> str:
    return (
        f"{_attr('profile')} == '{profile}' && {_attr('productName')}.lowerAscii().contains('{product_token(model)}')"
    )


def template_name(pool: NodePool, profile: str | None = None) -> str:
    if profile is None:
        return f"gpu-{_slug(pool.gpu.model)}"
    return f"mig-{_slug(pool.gpu.model)}-{_slug(profile)}"


def claim_templates(spec: StackSpec, tenant: Tenant) -> dict[str, dict[str, Any]]:
    """name -> ResourceClaimTemplate spec for the tenant: one device of each pool it reaches (one whole GPU of
    the pool's model; one per MIG profile of the pool's layout). Deduplicated by name (two pools of one model
    share a template); Kueue's flavor, not the template, decides the pool."""
    out: dict[str, dict[str, Any]] = {}
    if not derive.dra(spec):
        return out
    for pool in sorted((p for p in spec.node_pools if p.name in tenant.gpu_quota), key=lambda p: p.name):
        units = derive.units_per_gpu(spec, pool)
        if derive.DRA_MIG_RESOURCE in units:
            for profile in sorted((pool.sharing.layout or {}) if pool.sharing else {}):
                out[template_name(pool, profile)] = _template(
                    derive.DRA_MIG_CLASS, mig_selector(pool.gpu.model, profile)
                )
        else:
            out[template_name(pool)] = _template(derive.DRA_GPU_CLASS, whole_gpu_selector(pool.gpu.model))
    return dict(sorted(out.items()))


def _template(device_class: str, cel: str) -> dict[str, Any]:
    """A ResourceClaimTemplate's ``spec`` (its ``spec.spec`` is the ResourceClaimSpec of each claim)."""
    return {
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "exactly": {
                            "deviceClassName": device_class,
                            "allocationMode": "ExactCount",
                            "count": 1,
                            "selectors": [{"cel": {"expression": cel}}],
                        },
                    }
                ]
            }
        }
    }


def claim_template_manifests(spec: StackSpec) -> list[dict[str, Any]]:
    """Every tenant's ResourceClaimTemplates as manifests (for validation and the summary)."""
    out = []
    for tenant in spec.tenants:
        for name, body in claim_templates(spec, tenant).items():
            out.append(
                {
                    "apiVersion": RESOURCE_API,
                    "kind": "ResourceClaimTemplate",
                    "metadata": {"name": name, "namespace": tenant.name},
                    "spec": body,
                }
            )
    return out
