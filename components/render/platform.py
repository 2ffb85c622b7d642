"""``GpuPlatform``: the whole platform as one Pulumi component, for a program that has its own cluster and provider.

The stack program (``__main__.py``) renders at the root from a stack file; this component renders the same plan
through the same code (``program.render``) with itself as the parent of every resource, so a program in which
the platform is one part (its own VPC, cluster, namespaces) adds it as::

    from components.cli.loader import load_spec
    from components.render.platform import GpuPlatform

    platform = GpuPlatform("gpu", {"spec": load_spec(config), "kubernetes_provider": k8s_provider})
    pulumi.export("queues", platform.queues)

Arguments (``GpuPlatformArgs``): the validated spec (``loader.load_spec``: the model a stack file validates into,
every rule checked) and the Kubernetes provider of the cluster. Every Kubernetes resource names that provider;
the component makes no provider of its own. The cluster's cloud identity is the spec's ``cluster`` section, as in
a stack file: on AWS the EKS cluster is looked up by ``cluster.name`` (and ``cluster.region``), on GCP by
``cluster.name``/``project``/``location``; node groups, Karpenter and the IAM roles read the lookup (ARN, subnets,
OIDC issuer) as the stack program does. AWS and GCP resources and those lookups use the program's default AWS
and GCP providers, or those in ``opts.providers`` (every child and both lookups inherit them).

Outputs are typed (``Tenant``, ``TenantQueues``, ``Pool``, ``Cost``): the same values as the stack outputs of a
stack file's program (``components/render/outputs.py``), keys camelCase as there, so a dashboard or script reads
either the same way. Other Pulumi languages get this component through the package in ``provider/``, which
builds the spec from a stack file's text instead (``GpuPlatformPackage`` there).
"""

# No ``from __future__ import annotations``: the component provider reads these annotations as types at runtime
# (pulumi/provider/experimental/analyzer.py, pulumi 3.272.0), which strings are not.
from typing import Any, NotRequired, TypedDict

import pulumi

from ..spec.model import StackSpec

TYPE = "gpu-platform:index:GpuPlatform"


class Taint(TypedDict):
    """A node taint of a pool (the Kubernetes Taint's fields)."""

    key: str
    value: NotRequired[str]
    effect: str


class Toleration(TypedDict):
    """The toleration a pod needs for a pool's taint."""

    key: str
    operator: str
    value: NotRequired[str]
    effect: str


class Tenant(TypedDict):
    """Where a tenant's work goes: namespace, scheduler, queues, priority ceiling, GPU units."""

    namespace: str
    scheduler: str
    localQueue: NotRequired[str]  # Kueue's LocalQueue in the namespace (Kueue tenants)
    clusterQueue: NotRequired[str]
    volcanoQueue: NotRequired[str]  # Volcano tenants
    priorityCeiling: str
    forbiddenPriorityClasses: list[str]
    gpuQuota: dict[str, int]  # GPU units per resource name: the nominal quota
    gpuLimit: dict[str, int]  # and the ResourceQuota's hard cap (with borrowing)


class TenantQueues(TypedDict):
    """Where a tenant submits: Kueue's LocalQueue (kueue.x-k8s.io/queue-name) or Volcano's Queue (spec.queue)."""

    namespace: str
    scheduler: str
    localQueue: NotRequired[str]
    clusterQueue: NotRequired[str]
    volcanoQueue: NotRequired[str]


class Pool(TypedDict):
    """A GPU pool's nodes as a scheduler sees them, and the cloud objects that bring them."""

    provisioner: str
    gpuModel: str
    gpusPerNode: int
    capacity: str
    maxNodes: int
    nodeSelector: dict[str, str]
    labels: dict[str, str]
    taints: list[Taint]
    tolerations: list[Toleration]
    gpuUnitsPerNode: dict[str, int]
    maxGpuUnits: dict[str, int]
    nodeGroup: NotRequired[str]  # an EKS managed node group's generated name
    karpenterNodePools: NotRequired[list[str]]
    gkeNodePool: NotRequired[str]


class Cost(TypedDict):
    """What the platform may cost per hour (cost.json's totals), and the whole document."""

    currency: str
    maxHourlyUsd: NotRequired[float]  # unset when a pool's price is unknown
    minHourlyUsd: float
    knownMaxHourlyUsd: float
    unknownPools: list[str]
    document: dict[str, Any]  # cost.json: per pool and tenant (components/plan/cost.py)


class GpuPlatformArgs(TypedDict):
    """The arguments of ``GpuPlatform`` in a Python program."""

    spec: StackSpec
    """The validated spec: ``components.cli.loader.load_spec(config)`` (every rule checked), or a ``StackSpec``
    built in code and passed through ``load_spec`` the same way."""
    kubernetes_provider: NotRequired[pulumi.ProviderResource]
    """The cluster's Kubernetes provider; without it, the one in ``opts.providers`` (``{"kubernetes": ...}``)."""


class GpuPlatform(pulumi.ComponentResource):
    """GPU node pools, the GPU Operator, DCGM monitoring, Kueue/Volcano queues and per-tenant quotas on an
    existing Kubernetes cluster, from one gpu-platform spec."""

    tenants: pulumi.Output[dict[str, Tenant]]
    """Per tenant: namespace, scheduler, queues, priority ceiling and GPU units."""
    queues: pulumi.Output[dict[str, TenantQueues]]
    """Per tenant: the queue its jobs are submitted to."""
    pools: pulumi.Output[dict[str, Pool]]
    """Per GPU pool: labels, taints, tolerations, capacity and the cloud objects that bring its nodes."""
    cost: pulumi.Output[Cost]
    """The hourly cost bounds (cost.json)."""

    def __init__(self, name: str, args: GpuPlatformArgs, opts: pulumi.ResourceOptions | None = None):
        self._construct(name, args["spec"], args.get("kubernetes_provider"), opts)

    def _construct(
        self,
        name: str,
        spec: StackSpec,
        provider: pulumi.ProviderResource | None,
        opts: pulumi.ResourceOptions | None,
    ) -> None:
        from ..plan import placeholders as spec_placeholders, plan as plans
        from . import placeholders, program

        # documentation values left in the spec: an update stops here, before anything is registered
        placeholders.check(spec_placeholders.lines(spec, f"GpuPlatform {name}"))
        if spec.cloud == "aws" and spec.cluster.create is not None:
            from ..plan.aws import cluster_access
            from .aws import deployer  # the deployer must administer the cluster it creates

            deployer.check(cluster_access.deployer_check(spec), f"GpuPlatform {name}")
        super().__init__(TYPE, name, None, opts)
        provider = provider or self.get_provider("kubernetes::")
        if provider is None:
            raise ValueError(
                "GpuPlatform needs the cluster's Kubernetes provider: pass it as kubernetes_provider, or in "
                "opts=ResourceOptions(providers={'kubernetes': provider})"
            )
        outputs = program.render(plans.build(spec, pulumi.get_stack()), provider=provider, parent=self)
        typed = typed_outputs(outputs)
        self.tenants = pulumi.Output.from_input(typed["tenants"])  # type: ignore[arg-type]
        self.queues = pulumi.Output.from_input(typed["queues"])  # type: ignore[arg-type]
        self.pools = pulumi.Output.from_input(typed["pools"])  # type: ignore[arg-type]
        self.cost = pulumi.Output.from_input(typed["cost"])  # type: ignore[arg-type]
        self.register_outputs(typed)


QUEUE_KEYS = ("namespace", "scheduler", "localQueue", "clusterQueue", "volcanoQueue")
COST_TOTALS = ("maxHourlyUsd", "minHourlyUsd", "knownMaxHourlyUsd", "unknownPools")


def typed_outputs(outputs: dict[str, Any]) -> dict[str, Any]:
    """The stack outputs (``program.render``) as the component's typed outputs: a key whose value does not exist
    (a Kueue queue of a Volcano tenant) is left out, as the schema's optional properties are, not null."""

    def present(doc: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in doc.items() if v is not None}

    tenants: dict[str, Any] = outputs["tenants"]
    cost: dict[str, Any] = outputs["cost"]
    return {
        "tenants": {name: present(t) for name, t in tenants.items()},
        "queues": {name: present({k: t[k] for k in QUEUE_KEYS}) for name, t in tenants.items()},
        "pools": {name: present(p) for name, p in outputs["pools"].items()},
        "cost": present({"currency": cost["currency"], **{k: cost["total"][k] for k in COST_TOTALS}, "document": cost}),
    }
