"""GPUs through Dynamic Resource Allocation (``gpuOperator.allocation: dra``).

A DRA stack hands out GPUs and MIG devices as ResourceClaims (``resource.k8s.io/v1``, GA in Kubernetes 1.34)
instead of extended resources. Who does what (sources in ``../shared/upstream/README.md``, section DRA):

* the GPU Operator v26.7.0 runs its ``GPUCluster`` CR instead of the ClusterPolicy (``gpuCluster.deployCR=true``,
  ``clusterPolicy.deployCR=false``; "an invalid configuration for both CRs to exist", values.yaml). The CR
  deploys the NVIDIA DRA driver (``draDriver:``) and creates the DeviceClasses ``gpu.nvidia.com`` (whole GPUs)
  and ``mig.nvidia.com`` (MIG devices). No k8s-device-plugin, no GFD, no MIG manager run in that stack.
  The standalone chart ``dra-driver-nvidia-gpu`` v0.4.1 was not chosen: there GPU allocation is "not yet
  officially supported" and its templates/validation.yaml refuses ``resources.gpus.enabled`` without
  ``gpuResourcesEnabledOverride=true``; the operator's driver (v0.5.0) lists full-GPU and existing-MIG
  allocation as generally available.
* each tenant's ResourceQuota counts devices per DeviceClass
  (``<class>.deviceclass.resource.k8s.io/devices``, KEP-4381 *ResourceQuota*); Kueue counts the same devices
  through ``resources.deviceClassMappings`` (Kueue 0.19 Configuration, KueueDRAIntegration on by default),
  under the quota resource names ``derive.DRA_GPU_RESOURCE`` / ``derive.DRA_MIG_RESOURCE``. Both come from
  ``derive.units_per_gpu`` (one device per whole GPU, one per MIG device of the pool's layout), the same
  derivation the device-plugin path uses.
* per tenant, ResourceClaimTemplates users reference: one whole GPU of each pool's model and one per MIG
  profile a pool offers, selecting devices by the driver's published attributes (``productName``,
  ``profile``; capacity ``memory``: dra-driver-nvidia-gpu v0.4.1 cmd/gpu-kubelet-plugin/deviceinfo.go,
  mig.go, partitions.go) rather than node labels. Kueue still picks the pool (flavor) and pins the pod there.

A quota cannot tell MIG profiles apart (all count against ``mig.nvidia.com``); which profiles exist is set by
the nodes' layout, and the claim templates select the profile.
"""

from __future__ import annotations

import pulumi

from ..plan import derive

# re-exported: the renderer's names for what it is made of (components/plan/dra.py)
from ..plan.dra import (
    DRIVER_DOMAIN as DRIVER_DOMAIN,
    MEMORY_TOLERANCE as MEMORY_TOLERANCE,
    MIN_KUBERNETES_MINOR as MIN_KUBERNETES_MINOR,
    QUOTA_SUFFIX as QUOTA_SUFFIX,
    RESOURCE_API as RESOURCE_API,
    DraPlan as DraPlan,
    _attr as _attr,
    _slug as _slug,
    _template as _template,
    claim_template_manifests as claim_template_manifests,
    claim_templates as claim_templates,
    device_classes as device_classes,
    dra_supported as dra_supported,
    gpu_cluster_from_values as gpu_cluster_from_values,
    kubernetes_minor as kubernetes_minor,
    kueue_device_class_mappings as kueue_device_class_mappings,
    mig_selector as mig_selector,
    operator_values as operator_values,
    product_token as product_token,
    quota_key as quota_key,
    quota_resources as quota_resources,
    template_name as template_name,
    whole_gpu_selector as whole_gpu_selector,
)
from ..plan.plan import Plan, plain
from . import addon, k8s


class ClaimTemplates(addon.Component):
    """Per tenant, the ResourceClaimTemplates its workloads reference (in the tenant's namespace)."""

    TYPE = "gpu-platform:index:DraClaimTemplates"

    def __init__(
        self,
        name: str,
        plan: Plan,
        provider: pulumi.ProviderResource,
        namespaces: dict[str, pulumi.Output[str]],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__(name, plan, provider, opts)
        decided = self.plan.dra
        assert decided is not None, "ClaimTemplates are made only with gpuOperator.allocation dra"
        child = self.child()
        self.names: dict[str, list[str]] = {}
        for tenant, templates in decided.claim_templates.items():
            for tpl_name, body in templates.items():
                k8s.kube_object(
                    f"{tenant}-{tpl_name}",
                    "resource.k8s.io/v1",
                    "ResourceClaimTemplate",
                    metadata={
                        "name": tpl_name,
                        "namespace": namespaces[tenant],
                        "labels": {**derive.MANAGED_BY, derive.TENANT_LABEL: tenant},
                    },
                    spec=plain(body),
                    opts=child,
                )
            self.names[tenant] = list(templates)
        self.register_outputs({"templates": self.names})
