"""The program: one validated spec in, its plan made once, every component out of the plan. ``__main__.py``
calls ``run``; so does the offline synth (through ``__main__.py`` itself), so both take exactly this path.

Below ``run`` nothing reads the spec: each component is handed the plan (``components/plan/plan.py``) and adds
only what the cloud answers (ARNs, endpoints, generated names). Which components exist is the plan's too: an
add-on is installed when its ``AddonPlan`` is enabled, a cloud's objects when its section is there."""

from __future__ import annotations

from collections.abc import Callable

import pulumi

from ..plan.plan import Plan
from ..spec.model import StackSpec


def cluster_access(
    plan: Plan, provider: pulumi.ProviderResource | None = None, opts: pulumi.ResourceOptions | None = None
) -> pulumi.ComponentResource:
    """The cluster's access component; its ``provider`` is passed to every Kubernetes resource. With ``provider``
    (a program that has its own, ``GpuPlatform``) it is that one: the access component then only looks the
    cluster up (EKS, GKE: what the cloud pools and IAM need), it makes no provider of its own."""
    if plan.aws is not None:
        from .aws.cluster import EksAccess

        return EksAccess("cluster", plan, opts, provider=provider)
    if plan.gke_create is not None:
        from .gcp.cluster_create import GkeCluster

        return GkeCluster("cluster", plan, opts)
    if plan.gke is not None and plan.cluster_stack is not None:
        from .cluster_stack import GkeStackAccess

        return GkeStackAccess("cluster", plan, opts)
    if plan.gke is not None:
        from .gcp.cluster import GkeAccess

        return GkeAccess("cluster", plan, opts, provider=provider)
    from .existing import ExistingAccess

    return ExistingAccess("cluster", plan, opts, provider=provider)


def run(spec: StackSpec) -> None:
    """The stack's plan (``plan.build``, once per spec), rendered at the root; its outputs are the stack's."""
    from ..plan import plan

    for key, value in render(plan.build(spec, pulumi.get_stack())).items():
        pulumi.export(key, value)


def render(
    p: Plan, *, provider: pulumi.ProviderResource | None = None, parent: pulumi.Resource | None = None
) -> dict[str, object]:
    """Every component of the plan; returns the outputs (``cost`` and ``outputs.stack_outputs``).

    The stack program renders at the root (``parent`` None: the URNs of tests/snapshots/urns) and makes its
    cluster access's provider; ``GpuPlatform`` (``components/render/platform.py``) passes itself as ``parent``
    and the caller's Kubernetes ``provider``."""
    from .tenancy import PriorityClasses, Tenancy

    def opts() -> pulumi.ResourceOptions | None:
        return pulumi.ResourceOptions(parent=parent) if parent is not None else None

    access = cluster_access(p, provider, opts())
    provider = access.provider  # type: ignore[attr-defined]
    on = {key: addon.enabled for key, addon in p.addons.items()}
    # The GPU Operator first: its release installs the nvidia.com CRDs; later components depend on it.
    gpu_operator_release = None
    if on["gpuOperator"]:
        from .gpu_operator import GpuOperator

        gpu_operator_release = GpuOperator("gpu-operator", p, provider, opts()).release
    # monitoring.prometheus: install brings the prometheus-operator CRDs our ServiceMonitor and PrometheusRule need
    prometheus_release = None
    if on["kubePrometheusStack"]:
        from .prometheus_stack import PrometheusStack

        prometheus_release = PrometheusStack("prometheus-stack", p, provider, opts()).release
    if p.monitoring is not None:
        from .monitoring import GpuMonitoring

        GpuMonitoring(
            "gpu-monitoring",
            p,
            provider,
            exporter_release=gpu_operator_release,
            prometheus_release=prometheus_release,
            opts=opts(),
        )
    PriorityClasses("priority-classes", p, provider, opts())
    tenancy = Tenancy("tenancy", p, provider, opts())
    if p.storage is not None:
        from .storage import SharedStorage

        SharedStorage("shared-storage", p, provider, tenancy.namespaces, access, tenancy, opts())
    if p.dra is not None:
        from .dra import ClaimTemplates

        ClaimTemplates("dra-claim-templates", p, provider, tenancy.namespaces, opts())
    # The Cluster Autoscaler installs the ProvisioningRequest CRD, which Kueue must find when it starts.
    kueue_deps: list[pulumi.Resource] = []
    if on["clusterAutoscaler"]:
        from .aws.cluster_autoscaler import ClusterAutoscaler

        autoscaler = ClusterAutoscaler("cluster-autoscaler", p, provider, access.cluster, opts())  # type: ignore[attr-defined]
        kueue_deps.append(autoscaler.crd)
    if on["kueue"]:
        from .kueue import Kueue

        kueue = Kueue("kueue", p, provider, namespaces=tenancy.namespaces, release_deps=kueue_deps, opts=opts())
        if p.fleet is not None:
            from .fleet import FleetManager

            FleetManager("fleet", p, provider, kueue, opts())
    if on["volcano"]:
        from .volcano import Volcano

        Volcano("volcano", p, provider, opts())
    # Workload operators: independent of Kueue (it waits for their CRDs itself: components/plan/operators.py)
    from . import operators

    operators.install(p, provider, opts)
    pool_names, karpenter_out, node_components = _cloud_pools(p, access, provider, opts)
    if p.images is not None:
        from .images import ImageDelivery

        ImageDelivery("images", p, provider, node_components, opts())
    if on["spegel"]:
        from .images import Spegel

        Spegel("spegel", p, provider, opts())

    from ..plan import cost
    from .cost_record import CostRecord
    from .outputs import stack_outputs

    cost_doc = cost.report_of(p)
    CostRecord("cost", provider, cost_doc, opts())
    # a created cluster's outputs, which another stack's cluster.fromStack reads (components/plan/cluster_stack.py)
    created = getattr(access, "cluster_outputs", {})
    fleet_out: dict[str, object] = {}
    if p.fleet_worker is not None:  # the manager's credential: a secret output, never plain text (render/fleet.py)
        from ..plan import fleet as fleet_plan
        from ..plan.frozen import plain
        from .fleet import FleetWorker

        worker = FleetWorker("fleet-worker", p, provider, getattr(access, "endpoint", None), opts())
        fleet_out = {
            fleet_plan.OUTPUT_KUBECONFIG: worker.kubeconfig,
            fleet_plan.OUTPUT_FACTS: plain(p.fleet_worker.facts),
        }
    return {"cost": cost_doc, **stack_outputs(p, pool_names, karpenter_out), **created, **fleet_out}


def _cloud_pools(
    p: Plan,
    access: pulumi.ComponentResource,
    provider: pulumi.ProviderResource,
    opts: Callable[[], pulumi.ResourceOptions | None],
) -> tuple[dict[str, dict[str, object]], dict[str, object] | None, list[pulumi.Resource]]:
    """The cloud objects that bring the pools' nodes: pool -> their names (stack outputs), Karpenter's, and the
    components holding the node roles (what the image cache's node policy waits for)."""
    pool_names: dict[str, dict[str, object]] = {}
    karpenter_out = None
    nodes: list[pulumi.Resource] = []
    cluster = getattr(access, "cluster", None)  # the EKS cluster lookup (EksAccess)
    if p.karpenter is not None:
        from .aws.karpenter import CONTROLLER_NAMESPACE, Karpenter

        karpenter = Karpenter("karpenter", p, provider, cluster, opts())
        nodes.append(karpenter)
        karpenter_out = {
            "namespace": CONTROLLER_NAMESPACE,
            "interruptionQueue": karpenter.queue_name,
            "nodeRoleArn": karpenter.node_role_arn,
            "controllerRoleArn": karpenter.controller_role_arn,
        }
        for nodepool in p.karpenter.node_pools:
            pool_names.setdefault(nodepool.pool, {"karpenterNodePools": []})["karpenterNodePools"].append(nodepool.name)
    if p.aws is not None:
        if p.aws.efa_pools:
            from .aws.nodegroups import EfaDevicePlugin, KarpenterEfaNetworks

            EfaDevicePlugin("efa-device-plugin", p, provider, opts())
            if p.aws.karpenter_efa_pools:
                KarpenterEfaNetworks("karpenter-efa-networks", p, cluster, opts())
        if p.aws.node_health_addon is not None:
            from .aws.node_health import NodeHealth

            NodeHealth("node-health", p, opts(), cluster=cluster)
        if p.aws.node_groups:
            from .aws.nodegroups import EksGpuNodeGroups

            groups = EksGpuNodeGroups("eks-gpu-node-groups", p, cluster, opts())
            nodes.append(groups)
            for pool_name, ng in groups.node_groups.items():
                pool_names[pool_name] = {"nodeGroup": ng.node_group_name}
    if p.gke is not None:
        from .gcp.nodepools import GkeGpuNodePools

        gke = GkeGpuNodePools("gke-gpu-node-pools", p, access, opts())  # type: ignore[arg-type]
        for pool_name, np in gke.node_pools.items():
            pool_names[pool_name] = {"gkeNodePool": np.name}
    if p.eks_create is not None:
        nodes.append(access)  # the created cluster's system node role
    return pool_names, karpenter_out, nodes
