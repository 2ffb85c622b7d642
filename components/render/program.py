"""The program: one validated spec in, every component out. ``__main__.py`` calls ``run``; so does the
offline synth (through ``__main__.py`` itself), so both take exactly this path."""

from __future__ import annotations

import pulumi

from components.spec.model import StackSpec


def cluster_access(spec: StackSpec) -> pulumi.ComponentResource:
    """The cluster's access component; its ``provider`` is passed to every Kubernetes resource."""
    if spec.cloud == "aws":
        from components.render.aws.cluster import EksAccess

        return EksAccess("cluster", spec)
    if spec.cloud == "gcp":
        from components.render.gcp.cluster import GkeAccess

        return GkeAccess("cluster", spec)
    from components.render.existing import ExistingAccess

    return ExistingAccess("cluster", spec)


def run(spec: StackSpec) -> None:
    from components.plan import plan
    from components.render.tenancy import PriorityClasses, Tenancy

    access = cluster_access(spec)
    provider = access.provider  # type: ignore[attr-defined]
    # The GPU Operator first: its release installs the nvidia.com CRDs; later components depend on it.
    gpu_operator_release = None
    if spec.addons.gpu_operator:
        from components.render.gpu_operator import GpuOperator

        gpu_operator_release = GpuOperator("gpu-operator", spec, provider).release
    # monitoring.prometheus: install brings the prometheus-operator CRDs our ServiceMonitor and PrometheusRule need
    prometheus_release = None
    if spec.monitoring.prometheus == "install":
        from components.render.prometheus_stack import PrometheusStack

        prometheus_release = PrometheusStack("prometheus-stack", spec, provider).release
    if spec.addons.dcgm:
        from components.render.monitoring import GpuMonitoring

        GpuMonitoring(
            "gpu-monitoring",
            spec,
            provider,
            exporter_release=gpu_operator_release,
            prometheus_release=prometheus_release,
        )
    PriorityClasses("priority-classes", spec, provider)
    tenancy = Tenancy("tenancy", spec, provider)
    if spec.gpu_operator.allocation == "dra":
        from components.render.dra import ClaimTemplates

        ClaimTemplates("dra-claim-templates", spec, provider, tenancy.namespaces)
    # The Cluster Autoscaler installs the ProvisioningRequest CRD, which Kueue must find when it starts.
    kueue_deps: list[pulumi.Resource] = []
    if spec.cluster_autoscaler_enabled:
        from components.render.aws.cluster_autoscaler import ClusterAutoscaler

        autoscaler = ClusterAutoscaler("cluster-autoscaler", spec, provider, access.cluster)  # type: ignore[attr-defined]
        kueue_deps.append(autoscaler.crd)
    if spec.addons.kueue:
        from components.render.kueue import Kueue

        Kueue("kueue", spec, provider, namespaces=tenancy.namespaces, release_deps=kueue_deps)
    if spec.addons.volcano:
        from components.render.volcano import Volcano

        Volcano("volcano", spec, provider)
    # Workload operators: independent of Kueue (it waits for their CRDs itself: components/plan/operators.py)
    from components.render import operators

    operators.install(spec, provider)
    # pool -> the names of the cloud objects that bring its nodes (stack outputs)
    pool_names: dict[str, dict[str, object]] = {}
    karpenter_out = None
    if spec.cloud == "aws" and spec.karpenter_enabled:
        from components.render.aws.karpenter import CONTROLLER_NAMESPACE, Karpenter, nodepool_plans

        karpenter = Karpenter("karpenter", spec, provider, access.cluster)  # type: ignore[attr-defined]
        karpenter_out = {
            "namespace": CONTROLLER_NAMESPACE,
            "interruptionQueue": karpenter.queue_name,
            "nodeRoleArn": karpenter.node_role_arn,
            "controllerRoleArn": karpenter.controller_role_arn,
        }
        for nodepool in nodepool_plans(spec):
            pool_names.setdefault(nodepool.pool.name, {"karpenterNodePools": []})["karpenterNodePools"].append(
                nodepool.name
            )
    if spec.cloud == "aws":
        from components.plan.aws import efa

        if efa.efa_pools(spec):
            from components.render.aws.nodegroups import EfaDevicePlugin, KarpenterEfaNetworks

            EfaDevicePlugin("efa-device-plugin", spec, provider)
            if any(p.provisioner == "karpenter" for p in efa.efa_pools(spec)):
                KarpenterEfaNetworks("karpenter-efa-networks", spec, access.cluster)  # type: ignore[attr-defined]
    if spec.node_monitoring_agent_enabled:
        from components.render.aws.node_health import NodeHealth

        NodeHealth("node-health", spec)
    if spec.cloud == "aws" and any(p.provisioner == "managed" for p in spec.node_pools):
        from components.render.aws.nodegroups import EksGpuNodeGroups

        groups = EksGpuNodeGroups("eks-gpu-node-groups", spec, access.cluster)  # type: ignore[attr-defined]
        for pool_name, ng in groups.node_groups.items():
            pool_names[pool_name] = {"nodeGroup": ng.node_group_name}
    if spec.cloud == "gcp":
        from components.render.gcp.nodepools import GkeGpuNodePools

        gke = GkeGpuNodePools("gke-gpu-node-pools", spec, access)  # type: ignore[arg-type]
        for pool_name, np in gke.node_pools.items():
            pool_names[pool_name] = {"gkeNodePool": np.name}

    from components.plan import cost
    from components.render.cost_record import CostRecord
    from components.render.outputs import stack_outputs

    cost_doc = cost.report(spec, pulumi.get_stack())
    CostRecord("cost", spec, provider, cost_doc)
    pulumi.export("cost", cost_doc)
    for key, value in stack_outputs(spec, plan.build(spec, pulumi.get_stack()), pool_names, karpenter_out).items():
        pulumi.export(key, value)
