"""The program: one validated spec in, every component out. ``__main__.py`` calls ``run``; so does the
offline synth (through ``__main__.py`` itself), so both take exactly this path."""

from __future__ import annotations

import pulumi

from components.spec import StackSpec


def cluster_access(spec: StackSpec) -> pulumi.ComponentResource:
    """The cluster's access component; its ``provider`` is passed to every Kubernetes resource."""
    if spec.cloud == "aws":
        from components.aws.cluster import EksAccess

        return EksAccess("cluster", spec)
    if spec.cloud == "gcp":
        from components.gcp.cluster import GkeAccess

        return GkeAccess("cluster", spec)
    from components.existing import ExistingAccess

    return ExistingAccess("cluster", spec)


def run(spec: StackSpec) -> None:
    from components.tenancy import PriorityClasses, Tenancy

    access = cluster_access(spec)
    provider = access.provider  # type: ignore[attr-defined]
    # The GPU Operator first: its release installs the nvidia.com CRDs; later components depend on it.
    gpu_operator_release = None
    if spec.addons.gpu_operator:
        from components.gpu_operator import GpuOperator

        gpu_operator_release = GpuOperator("gpu-operator", spec, provider).release
    if spec.addons.dcgm:
        from components.monitoring import GpuMonitoring

        GpuMonitoring("gpu-monitoring", spec, provider, exporter_release=gpu_operator_release)
    PriorityClasses("priority-classes", spec, provider)
    tenancy = Tenancy("tenancy", spec, provider)
    if spec.addons.kueue:
        from components.kueue import Kueue

        Kueue("kueue", spec, provider, namespaces=tenancy.namespaces)
    if spec.addons.volcano:
        from components.volcano import Volcano

        Volcano("volcano", spec, provider)
    if spec.cloud == "aws" and spec.karpenter_enabled:
        from components.aws.karpenter import Karpenter

        Karpenter("karpenter", spec, provider, access.cluster)  # type: ignore[attr-defined]
    if spec.cloud == "aws" and any(p.provisioner == "managed" for p in spec.node_pools):
        from components.aws.nodegroups import EksGpuNodeGroups

        EksGpuNodeGroups("eks-gpu-node-groups", spec, access.cluster)  # type: ignore[attr-defined]
    if spec.cloud == "gcp":
        from components.gcp.nodepools import GkeGpuNodePools

        GkeGpuNodePools("gke-gpu-node-pools", spec, access)  # type: ignore[arg-type]

    from components import cost

    cost_doc = cost.report(spec, pulumi.get_stack())
    cost.CostRecord("cost", spec, provider, cost_doc)
    pulumi.export("cost", cost_doc)
    pulumi.export("tenantNamespaces", sorted(t.name for t in spec.tenants))
    pulumi.export("gpuPools", sorted(p.name for p in spec.node_pools))
