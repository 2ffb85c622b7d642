"""The NVIDIA GPU Operator: its namespace, the sharing ConfigMaps and the Helm release, with values chosen
per cloud and node OS.

What the operator runs, per platform (sources: EKS user guide "Use EKS-optimized accelerated AMIs";
NVIDIA GPU Operator v26.7 docs ``google-gke.rst``, ``gpu-operator-mig.rst``; the pinned chart's values.yaml):

=====================  ==========  =========  =============  ===========  =========================================
platform               driver      toolkit    device plugin  MIG manager  notes
=====================  ==========  =========  =============  ===========  =========================================
EKS AL2023 NVIDIA AMI  off         off        operator       operator     AMI ships driver + container toolkit
EKS Bottlerocket       off         off        host (AMI)     host (AMI)   node labels keep operator copies away
GKE, GKE drivers       off (GKE)   on [1]     GKE's          GKE's        ResourceQuota for critical pods
GKE, operator drivers  operator    on         operator       operator     Ubuntu nodes only; ResourceQuota
existing               configurable (``gpuOperator.driver`` / ``gpuOperator.toolkit``)
=====================  ==========  =========  =============  ===========  =========================================

[1] installed into ``/home/kubernetes/bin/nvidia`` (writable and persistent on GKE images) with
``RUNTIME_CONFIG_SOURCE=file`` (NVIDIA's GKE 1.33+ known issue); the operands' ``nvidia`` RuntimeClass
needs it even though GKE's device plugin serves the GPUs.

Mixed EKS stacks (AL2023 and Bottlerocket pools): both AMIs ship the driver and the toolkit, so those are
off cluster-wide; the device plugin and MIG manager stay on for AL2023 nodes and are kept off Bottlerocket
nodes by the ``nvidia.com/gpu.deploy.*=false`` labels ``derive.pool_labels`` gives Bottlerocket pools. Those
labels turn every other operand off there too (validator, GFD, DCGM exporter: not in NVIDIA's supported
platforms; ``derive.BOTTLEROCKET_OPERAND_LABELS`` says why they go together).

The operator's DCGM exporter is on when ``addons.dcgm`` is; its ServiceMonitor comes from
``components.render.monitoring`` (it adds node metadata the operator's own ServiceMonitor cannot).
"""

from __future__ import annotations

from ..plan import derive

# re-exported: the renderer's names for what it is made of (components/plan/gpu_operator.py)
from ..plan.gpu_operator import (
    CHART as CHART,
    CONTROL_PLANE_TOLERATION as CONTROL_PLANE_TOLERATION,
    CRITICAL_PODS_BASE as CRITICAL_PODS_BASE,
    CRITICAL_PODS_PER_GPU_NODE as CRITICAL_PODS_PER_GPU_NODE,
    CRITICAL_QUOTA_NAME as CRITICAL_QUOTA_NAME,
    DCGM_ENABLE_DRA_ENV as DCGM_ENABLE_DRA_ENV,
    DCGM_GPU_ID_TYPE_ENV as DCGM_GPU_ID_TYPE_ENV,
    DCGM_RESOURCE_NAMES_ENV as DCGM_RESOURCE_NAMES_ENV,
    DCGM_VIRTUAL_GPUS_ENV as DCGM_VIRTUAL_GPUS_ENV,
    DEVICE_PLUGIN_CONFIGMAP as DEVICE_PLUGIN_CONFIGMAP,
    GKE_NVIDIA_DIR as GKE_NVIDIA_DIR,
    MIG_CONFIG_KEY as MIG_CONFIG_KEY,
    MIG_CONFIGMAP as MIG_CONFIGMAP,
    config_maps as config_maps,
    critical_pods as critical_pods,
    driver_choice as driver_choice,
    exporter_env as exporter_env,
    gpu_tolerations as gpu_tolerations,
    namespace_labels as namespace_labels,
    operator_namespace_labels as operator_namespace_labels,
    operator_values as operator_values,
    shares_gpus as shares_gpus,
    toolkit_enabled as toolkit_enabled,
)
from ..plan.plan import plain
from . import addon, k8s


class GpuOperator(addon.ChartAddon):
    """Namespace (privileged), GKE's critical-pods quota, the device-plugin and mig-parted ConfigMaps, and
    the gpu-operator Helm release (which installs the ClusterPolicy CRD other components may need)."""

    TYPE = "gpu-platform:gpu:GpuOperator"
    CHART = CHART

    def build(self) -> None:
        decided = self.addon_plan
        self.namespace = decided.namespace
        before_release = self.create_namespace(
            addon.NamespacePolicy(
                "gpu-operator",
                dict(decided.namespace_labels or {}),
                decided.critical_pods,
                quota_name=CRITICAL_QUOTA_NAME,
            )
        )
        in_ns = self.child(before_release[:1])
        # the device plugin's sharing configurations and mig-parted's layouts, which the release names
        for resource_name, cm in decided.config_maps.items():
            before_release.append(
                k8s.kube_object(
                    resource_name,
                    "v1",
                    "ConfigMap",
                    metadata={"name": cm["name"], "namespace": decided.namespace, "labels": derive.MANAGED_BY},
                    data=plain(cm["data"]),
                    opts=in_ns,
                )
            )
        # The chart's upgrade-crd hook (operator.upgradeCRD, on by default) "requires --disable-openapi-validation
        # flag to be passed during helm upgrade" (upstream/gpu-operator/values.yaml); the release's
        # disableOpenapiValidation is that flag.
        self.install(
            "gpu-operator",
            plain(decided.values),
            before_release,
            timeout=900,
            disable_openapi_validation=True,
        )
        self.register_outputs({"namespace": self.namespace, "release": self.release.name})
