"""What Kueue decides (pure): the ResourceFlavors, ClusterQueues, LocalQueues and provisioning admission checks
of a stack, and the constants they use. The objects are ``components/render/kueue.py``'s; the plan carries each
tenant's ClusterQueue and LocalQueue spec (``TenantPlan.cluster_queue_spec``, ``local_queue_spec``)."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from types import MappingProxyType
from typing import Any

from ..data import versions
from ..spec.model import NodePool, StackSpec, Tenant
from . import derive, dra, kueue_quota, webhooks, yaml_text
from .frozen import interned

CHART = versions.KUEUE
API = versions.KUEUE_API
CONFIG_API = "config.kueue.x-k8s.io/v1beta2"
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
PREFERRED_TOPOLOGY_ANNOTATION = "kueue.x-k8s.io/podset-preferred-topology"
REQUIRED_TOPOLOGY_ANNOTATION = "kueue.x-k8s.io/podset-required-topology"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
HOSTNAME_LABEL = "kubernetes.io/hostname"

DEFAULT_FLAVOR = "default-flavor"
TOPOLOGY_NAME = "gpu-topology"
# cpu/memory quota per flavor when a tenant sets no quota.cpu/memory: above any cluster this platform sizes,
# so GPUs (not cpu) are what Kueue rations; the namespace ResourceQuota caps cpu/memory when they are set.
DEFAULT_CPU_QUOTA = "10k"  # 10,000 cpus, in the canonical form Kueue stores (canonical_quantity)
DEFAULT_MEMORY_QUOTA = "64Ti"
CPU_RESOURCES = ("cpu", "memory")

# Topology levels (coarsest first, the node last) each cloud labels GPU nodes with. GKE: dense-deployment
# VMs (compact placement, reservations) carry gce-topology-block/-subblock/-host; EKS: instance types with
# network topology (p4d/p4de, p5, trn...) carry network-node-layer-1..3 (layer 3 is nearest the node).
CLOUD_TOPOLOGY_LEVELS: dict[str, tuple[str, ...]] = {
    "gcp": (
        "cloud.google.com/gce-topology-block",
        "cloud.google.com/gce-topology-subblock",
        "cloud.google.com/gce-topology-host",
        HOSTNAME_LABEL,
    ),
    "aws": (
        "topology.k8s.aws/network-node-layer-1",
        "topology.k8s.aws/network-node-layer-2",
        "topology.k8s.aws/network-node-layer-3",
        HOSTNAME_LABEL,
    ),
}

# Requests Kueue does not ration (BlockUndeclared would otherwise leave any pod asking for them
# inadmissible): ephemeral storage, hugepages, EFA interfaces (vpc.amazonaws.com/efa), GKE multi-network
# interfaces (networking.gke.io.networks/...), RDMA devices.
EXCLUDED_RESOURCE_PREFIXES = ("ephemeral-storage", "hugepages-", "vpc.amazonaws.com/", "networking.gke.io", "rdma/")

# GKE Dynamic Workload Scheduler (queued provisioning): the ProvisioningRequest class Kueue asks for.
DWS_PROVISIONING_CLASS = "queued-provisioning.gke.io"
# The Cluster Autoscaler's best-effort atomic scale-up class (autoscaler FAQ "Supported ProvisioningClasses"):
# atomic only where the cloud provider implements AtomicIncreaseSize, which the AWS one does not
# (cluster-autoscaler 1.35.0 cloudprovider/aws/aws_cloud_provider.go:288-291; FAQ.md:650-654).
ATOMIC_PROVISIONING_CLASS = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"

REQUEUE_BACKOFF_BASE_SECONDS = 60
REQUEUE_BACKOFF_MAX_SECONDS = 3600
CONTROLLER_REPLICAS = 2  # webhooks sit on the pod/job admission path: keep one up through node drains
CONTROLLER_PRIORITY_CLASS = "system-cluster-critical"


def topology_levels(spec: StackSpec) -> list[str] | None:
    """Node labels of the Kueue Topology: ``scheduling.topologyLevels``, else the cloud's; None on existing
    clusters without explicit levels (a rule rejects topologyAware pools there)."""
    return levels_of(spec.scheduling.topology_levels, spec.cloud)


def levels_of(explicit: Sequence[str] | None, cloud: str) -> list[str] | None:
    """``topology_levels`` from ``scheduling.topologyLevels`` (None or empty: the cloud's) and the cloud: what
    explain reads from the plan (the Kueue add-on's options)."""
    if explicit:
        return list(explicit)
    levels = CLOUD_TOPOLOGY_LEVELS.get(cloud)
    return list(levels) if levels else None


def uses_topology(spec: StackSpec) -> bool:
    return any(p.topology_aware for p in spec.node_pools)


def flavor_spec(spec: StackSpec, pool: NodePool) -> dict[str, Any]:
    """ResourceFlavor spec: pods admitted on this flavor get the pool's node label as nodeSelector and
    tolerations for exactly the pool's taints (TAS also needs them here: it places pods itself). A shared pool a
    tenant could confuse with a whole-GPU one (``derive.opt_in_shared_pools``) also carries the opt-in nodeTaint
    ``derive.SHARED_GPU_TAINT``, which it does not tolerate for the pod: only workloads that tolerate it land there.
    nodeTaints may change in place on a flavor without a topology (``flavor_immutable``)."""
    out: dict[str, Any] = {
        "nodeLabels": {derive.POOL_LABEL: pool.name},
        "tolerations": derive.tolerations(pool),
    }
    if pool.name in derive.opt_in_shared_pools(spec):
        out["nodeTaints"] = [dict(derive.SHARED_GPU_TAINT)]
    if pool.topology_aware:
        out["topologyName"] = TOPOLOGY_NAME
    return out


def provisioning_class(spec: StackSpec, pool: NodePool) -> str | None:
    """The ProvisioningRequest class Kueue's admission check asks for on this pool's flavor, or None (no check).

    * GKE queued-provisioning pools: ``queued-provisioning.gke.io`` (Dynamic Workload Scheduler); their nodes
      come only through ProvisioningRequests.
    * Topology-aware pools that can grow (maxNodes above minNodes) on a provisioner serving ProvisioningRequests:
      ``best-effort-atomic-scale-up.autoscaling.x-k8s.io``. Kueue's TAS counts only ready, schedulable nodes
      (kueue v0.19.2 site ``concepts/topology_aware_scheduling.md``), so without the check a TAS workload needing
      nodes that do not exist yet is never admitted, no pod is created and nothing scales. With it, Kueue
      reserves quota, the autoscaler scales up for the whole gang (together or not at all on GKE; on AWS not
      atomically: the ASG accepting the new size marks it Provisioned), and only then does Kueue assign the
      topology (``tas_flavorassigner.go``: topology assignment is delayed while a ProvisioningRequest check is
      pending). The criterion is topologyAware because it is the stack's statement that a pool runs
      multi-node gangs whose placement matters; other pools admit on quota and scale on pending pods.
      Who serves the class: the Cluster Autoscaler on EKS managed node groups (installed here, with
      ``--enable-provisioning-requests``), GKE's managed cluster autoscaler on GKE node pools (GKE ships the
      ProvisioningRequest CRD; its autoscaler processing this class is seen in kubernetes/autoscaler#9805,
      reported against v1.35.3-gke.2190000 -- an issue report, not a GKE document). Karpenter serves no
      ProvisioningRequests, so a rule (scheduling_rules.topology_needs_provisioning) refuses TAS there.
    """
    if spec.cloud == "gcp" and pool.gke.queued_provisioning:
        return DWS_PROVISIONING_CLASS
    if not pool.topology_aware or pool.node_cap <= pool.min_nodes:
        return None
    if spec.cloud == "aws" and pool.provisioner == "managed" and spec.cluster_autoscaler_enabled:
        return ATOMIC_PROVISIONING_CLASS
    if spec.cloud == "gcp":
        return ATOMIC_PROVISIONING_CLASS
    return None


# Fields the API server refuses to change in place (the CRDs' CEL x-kubernetes-validations, e.g.
# upstream/kueue/resourceflavor.kueue.x-k8s.io.v1beta2.json and topology...v1beta2.json). The
# provider does not know them and would plan an update the API server rejects; they are replaced instead,
# deleting first (the object keeps its name, so the new one cannot exist beside the old).
TOPOLOGY_IMMUTABLE = ("spec.levels",)
FLAVOR_TOPOLOGY_IMMUTABLE = ("spec.nodeLabels", "spec.tolerations", "spec.topologyName")


def flavor_immutable(pool: NodePool) -> tuple[str, ...]:
    """What replaces the pool's flavor. With ``topologyName`` set, its node labels, tolerations and topology
    are immutable; without it, ``spec.topologyName`` still is, so that turning ``topologyAware`` off (the
    old object has a topologyName, which may not be removed) is a replacement too. Adding a topologyName
    to a flavor that had none is allowed in place, and an unchanged field never replaces anything."""
    return FLAVOR_TOPOLOGY_IMMUTABLE if pool.topology_aware else ("spec.topologyName",)


def provisioning_pools(spec: StackSpec) -> list[NodePool]:
    """Pools whose flavor carries a ProvisioningRequest admission check, by name (stack-file order changes
    nothing)."""
    return list(_provisioning_pools(spec))


@derive.per_spec
def _provisioning_pools(spec: StackSpec) -> tuple[NodePool, ...]:
    """Once per spec: every tenant's ClusterQueue names the checks of its pools among them."""
    return tuple(sorted((p for p in spec.node_pools if provisioning_class(spec, p) is not None), key=lambda p: p.name))


def admission_check_name(spec: StackSpec, pool: NodePool) -> str:
    """``<pool>-dws`` for GKE queued provisioning, ``<pool>-atomic`` for best-effort atomic scale-up."""
    return f"{pool.name}-dws" if provisioning_class(spec, pool) == DWS_PROVISIONING_CLASS else f"{pool.name}-atomic"


def provisioning_request_config_spec(spec: StackSpec, pool: NodePool) -> dict[str, Any]:
    return {
        "provisioningClassName": provisioning_class(spec, pool),
        "managedResources": sorted(derive.units_per_gpu(spec, pool)),
        # One PodTemplate per distinct scheduling shape (e.g. a PyTorchJob's master and workers).
        "podSetMergePolicy": "IdenticalWorkloadSchedulingRequirements",
    }


@dataclass(frozen=True)
class ProvisioningCheck:
    """A pool's ProvisioningRequest admission check and its ProvisioningRequestConfig (same name)."""

    pool: str
    name: str
    config_spec: Mapping[str, Any]


@dataclass(frozen=True)
class KueueObjects:
    """Kueue's cluster-wide objects beyond flavors and queues: the Topology (``topology_levels``, None when no
    pool is topology-aware) and the pools' ProvisioningRequest admission checks, by pool name."""

    topology_levels: tuple[str, ...] | None
    provisioning_checks: tuple[ProvisioningCheck, ...]


def kueue_objects(spec: StackSpec) -> KueueObjects | None:
    """``Plan.kueue``: None without Kueue."""
    if not spec.addons.kueue:
        return None
    return KueueObjects(
        topology_levels=tuple(topology_levels(spec) or ()) if uses_topology(spec) else None,
        provisioning_checks=tuple(
            ProvisioningCheck(
                pool=p.name,
                name=admission_check_name(spec, p),
                config_spec=MappingProxyType(provisioning_request_config_spec(spec, p)),
            )
            for p in provisioning_pools(spec)
        ),
    )


# --------------------------------------------------------------------------------- cluster queues


def _cpu_budget(tenant: Tenant) -> dict[str, str]:
    return {
        "cpu": tenant.quota.cpu or DEFAULT_CPU_QUOTA,
        "memory": tenant.quota.memory or DEFAULT_MEMORY_QUOTA,
    }


def _limit_units(spec: StackSpec, pool: NodePool, limits: dict[str, int]) -> dict[str, int] | None:
    if pool.name not in limits:
        return None
    return derive.pool_units(spec, pool, limits[pool.name])


def tenant_pools(spec: StackSpec, tenant: Tenant) -> list[NodePool]:
    """Pools the tenant reaches (a gpuQuota entry, even 0), in the order Kueue tries their flavors
    (``derive.flavor_order``: by what a job would want, then by name; never the nodePools order, so reordering a
    stack file changes nothing. Pin a pool with a nodeSelector on gpu-platform/pool). Read from every pool's place
    in that order, decided once per spec, not by sorting each tenant's pools again (tenants x pools)."""
    ranks = _flavor_ranks(spec)
    return [p for _, p in sorted(ranks[name] for name in tenant.gpu_quota if name in ranks)]


@derive.per_spec
def _flavor_ranks(spec: StackSpec) -> Mapping[str, tuple[int, NodePool]]:
    """Pool name -> (its place in ``derive.flavor_order`` of every pool, the pool)."""
    return MappingProxyType({p.name: (rank, p) for rank, p in enumerate(derive.flavor_order(spec))})


def _partition(spec: StackSpec, pools: Iterable[NodePool]) -> list[tuple[set[str], list[NodePool]]]:
    """Pools grouped by overlapping resource-name sets; the nvidia.com/gpu group always exists, first.
    Within a group, pools keep the order of ``pools`` (the flavor order)."""
    pools = list(pools)
    rank = {p.name: i for i, p in enumerate(pools)}
    groups: list[tuple[set[str], list[NodePool]]] = [({derive.primary_gpu_resource(spec)}, [])]
    for pool in pools:
        names = set(derive.units_per_gpu(spec, pool))
        hits = [g for g in groups if g[0] & names]
        merged_names, merged_pools = set(names), []
        for g in hits:
            merged_names |= g[0]
            merged_pools += g[1]
        first = groups.index(hits[0]) if hits else len(groups)
        rest = [g for g in groups if g not in hits]
        rest.insert(min(first, len(rest)), (merged_names, [*merged_pools, pool]))
        groups = rest
    return [(names, sorted(members, key=lambda p: rank[p.name])) for names, members in groups]


_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


@functools.lru_cache(maxsize=4096, typed=True)  # a pure function, asked of the same few numbers per quota
def canonical_quantity(quantity: int | str) -> str:
    """A quantity (a stack file's ``Quantity``, or a count) as Kubernetes writes it back: ``10000`` is ``10k``,
    ``1500`` stays, ``0.5`` is ``500m``, ``1024Mi`` is ``1Gi``, ``1.5Gi`` is ``1536Mi`` (k8s.io/apimachinery
    v0.35.4 pkg/api/resource/quantity.go ``CanonicalizeBytes``: a binary-suffixed value of at least 1024 that is
    a whole number keeps a binary suffix, anything else is decimal, its mantissa a whole number and its exponent
    the largest multiple of 3 that keeps it so; its tests ``TestQuantityString`` and ``TestQuantityParseEmit``).

    Why it matters: Kueue's webhooks decode every quota of a ClusterQueue into a ``resource.Quantity`` and store it
    in this form, so a ``nominalQuota: "10000"`` comes back as ``10k`` and the kubernetes provider, which diffs
    against the live object, planned an update of every ClusterQueue on every preview (seen with the real Kueue
    controller in tests/sched/test_day2_under_load.py)."""
    match = re.fullmatch(r"([0-9]*\.?[0-9]*)([a-zA-Z]*)", str(quantity))
    if (
        not match
        or match.group(1) in ("", ".")
        or not (match.group(2) in _DECIMAL_SUFFIXES or match.group(2) in _BINARY_SUFFIXES)
    ):
        raise ValueError(f"not a quantity: {quantity!r}")
    number, suffix = Fraction(Decimal(match.group(1))), match.group(2)
    if suffix in _DECIMAL_SUFFIXES:
        value = number * Fraction(10) ** _DECIMAL_SUFFIXES[suffix]
    else:
        value = number * 1024 ** _BINARY_SUFFIXES.index(suffix)
        if value >= 1024 and value.denominator == 1:
            mantissa, power = int(value), 0
            while mantissa % 1024 == 0 and power < len(_BINARY_SUFFIXES) - 1:
                mantissa, power = mantissa // 1024, power + 1
            return f"{mantissa}{_BINARY_SUFFIXES[power]}"
    if value == 0:
        return "0"
    mantissa, exponent = math.ceil(value * 10**9), -9  # Kubernetes keeps nano precision, rounding up
    while mantissa % 1000 == 0 and exponent < 18:
        mantissa, exponent = mantissa // 1000, exponent + 3
    return f"{mantissa}{next(k for k, v in _DECIMAL_SUFFIXES.items() if v == exponent)}"


def _quota(name: str, nominal: int | str, borrow: int | None = None, lend: int | None = None) -> dict[str, Any]:
    """Quantities as strings in Kubernetes' canonical form (``canonical_quantity``: what Kueue stores; numbers
    would reach the API as JSON floats)."""
    out: dict[str, Any] = {"name": name, "nominalQuota": canonical_quantity(nominal)}
    if borrow is not None:
        out["borrowingLimit"] = canonical_quantity(borrow)
    if lend is not None:
        out["lendingLimit"] = canonical_quantity(lend)
    return out


def _entry(name: str, nominal: int | str, borrow: int | None = None, lend: int | None = None) -> Mapping[str, Any]:
    """``_quota`` frozen, one object per distinct entry while a plan is built (``frozen.interned``): the tenants'
    ClusterQueues repeat the same few (a 200-tenant plan: ~2,600 entries, ~40 distinct)."""
    return interned(lambda: _quota(name, nominal, borrow, lend), "kueue.quota", name, nominal, borrow, lend)


def resource_groups(spec: StackSpec, tenant: Tenant) -> list[dict[str, Any]]:
    """The ClusterQueue's resourceGroups (see the module docstring); its quota entries are read-only."""
    nominal = derive.tenant_pool_units(spec, tenant)
    has_cohort = derive.tenant_cohort(spec, tenant) is not None
    budget = _cpu_budget(tenant)
    out = []
    for names, pools in _partition(spec, tenant_pools(spec, tenant)):
        gpu_names = sorted(names)
        primary = derive.primary_gpu_resource(spec) in names
        covered = [*CPU_RESOURCES, *gpu_names] if primary else gpu_names
        flavors = []
        if primary:
            flavors.append(
                {
                    "name": DEFAULT_FLAVOR,
                    "resources": [_entry(r, budget[r]) for r in CPU_RESOURCES] + [_entry(n, 0) for n in gpu_names],
                }
            )
        lending = derive.tenant_lending_limits(spec, tenant)  # 0 everywhere for a tenant that never preempts
        for pool in pools:
            units = nominal[pool.name]
            borrow = _limit_units(spec, pool, tenant.borrowing_limit) if has_cohort else None
            lend = _limit_units(spec, pool, lending) if has_cohort else None
            resources = [_entry(r, budget[r]) for r in CPU_RESOURCES] if primary else []
            for n in gpu_names:
                advertised = n in units
                resources.append(
                    _entry(
                        n,
                        units.get(n, 0),
                        borrow.get(n, 0) if borrow is not None and advertised else None,
                        lend.get(n, 0) if lend is not None and advertised else None,
                    )
                )
            flavors.append({"name": pool.name, "resources": resources})
        out.append({"coveredResources": covered, "flavors": flavors})
    return out


def cluster_queue_spec(spec: StackSpec, tenant: Tenant) -> dict[str, Any]:
    cohort = derive.tenant_cohort(spec, tenant)
    preemption: dict[str, Any] = {"withinClusterQueue": "LowerPriority"}
    if cohort is not None:
        preemption["reclaimWithinCohort"] = "Any"
        preemption["borrowWithinCohort"] = {"policy": "LowerPriority"}
    if derive.tenant_never_preempts(spec, tenant):
        # Kueue does not read a PriorityClass's preemptionPolicy: a tenant limited to 'Never' classes
        # (default: `dev`) gets a ClusterQueue that never preempts, not even to reclaim its lent quota.
        # (borrowWithinCohort left out: its policy defaults to Never, the only one allowed with this reclaim)
        preemption = {"withinClusterQueue": "Never", "reclaimWithinCohort": "Never"}
    out: dict[str, Any] = {
        "namespaceSelector": {"matchLabels": {derive.TENANT_LABEL: tenant.name, NAMESPACE_NAME_LABEL: tenant.name}},
        "queueingStrategy": spec.scheduling.queueing_strategy,
        "resourceGroups": resource_groups(spec, tenant),
        "flavorFungibility": {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor"},
        "preemption": preemption,
    }
    if cohort is not None:
        out["cohortName"] = cohort
    checks = [
        {"name": admission_check_name(spec, p), "onFlavors": [p.name]}
        for p in provisioning_pools(spec)
        if p.name in tenant.gpu_quota
    ]
    if checks:
        out["admissionChecksStrategy"] = {"admissionChecks": checks}
    return out


@derive.per_spec
def quotas(spec: StackSpec) -> kueue_quota.Quotas:
    """The stack's ClusterQueues (``cluster_queue_spec`` of every Kueue tenant) with their cohorts, from an empty
    cluster: Kueue's quota arithmetic over them (``kueue_quota``). Once per spec; never mutated."""
    return kueue_quota.Quotas({t.name: cluster_queue_spec(spec, t) for t in derive.kueue_tenants(spec)})


def tenant_max_units(spec: StackSpec, tenant: Tenant) -> dict[str, dict[str, int]]:
    """pool -> {resource: units} a Kueue tenant's ClusterQueue can ever hold on the pool's flavor, per resource the
    pool advertises: Kueue's "maximum capacity" (``PotentialAvailable``, kueue v0.19.2
    pkg/cache/scheduler/resource_node.go ``potentialAvailable``): what it keeps back from its cohort (nominal less
    its lendingLimit) plus everything the cohort's queues lend there, itself included, capped by nominal +
    borrowingLimit. Only nominal quota in the cohort exists to borrow: without another lender on the flavor a
    tenant holds its own nominal quota at most, whatever its borrowingLimit or the pool's size."""
    q = quotas(spec)
    return {
        name: {r: q.max_capacity(tenant.name, (name, r)) for r in derive.units_per_gpu(spec, spec.pool(name))}
        for name in sorted(tenant.gpu_quota)
    }


def tenant_lent_units(spec: StackSpec, tenant: Tenant) -> dict[str, dict[str, int]]:
    """pool -> {resource: units} a Kueue tenant's ClusterQueue puts into its cohort for the others to borrow
    (``accumulateFromChild``: its nominal quota, or its lendingLimit when lower; 0 for a tenant that never
    preempts, whose lendingLimit is 0, and for one without a cohort)."""
    q = quotas(spec)
    return {
        name: {r: q.lends(tenant.name, (name, r)) for r in derive.units_per_gpu(spec, spec.pool(name))}
        for name in sorted(tenant.gpu_quota)
    }


def queue_flavors(cluster_queue: Mapping[str, Any]) -> list[str]:
    """The ResourceFlavors a ClusterQueue spec names (each once, in order): the ones it waits for. Waiting for
    every flavor instead cost tenants x pools dependency edges (53,000 at 1,000 tenants / 50 pools)."""
    names = [f["name"] for group in cluster_queue["resourceGroups"] for f in group["flavors"]]
    return list(dict.fromkeys(names))


def queue_checks(cluster_queue: Mapping[str, Any]) -> list[str]:
    """The AdmissionChecks a ClusterQueue spec names: the ones it waits for."""
    strategy = cluster_queue.get("admissionChecksStrategy") or {}
    return [c["name"] for c in strategy.get("admissionChecks", [])]


def local_queue_spec(tenant: Tenant, draining: bool = False) -> dict[str, Any]:
    """``draining``: a fleet worker being retired holds new admissions; admitted workloads run on (kueue v0.19.2
    apis/kueue/v1beta2/localqueue_types.go StopPolicy Hold)."""
    return {"clusterQueue": tenant.name, **({"stopPolicy": "Hold"} if draining else {})}


# ------------------------------------------------------------------------------------ component


# -------------------------------------------------------------------------------- manager config


def manager_config(spec: StackSpec) -> dict[str, Any]:
    """The Kueue ``Configuration`` (config.kueue.x-k8s.io/v1beta2) the chart mounts as
    controller_manager_config.yaml. Replaces the chart's default document, so it restates the serving
    settings (health, metrics, webhook, leader election) the chart's manifests expect."""
    s = spec.scheduling
    requeue: dict[str, Any] = {
        "timestamp": "Eviction",
        "backoffBaseSeconds": REQUEUE_BACKOFF_BASE_SECONDS,
        "backoffMaxSeconds": REQUEUE_BACKOFF_MAX_SECONDS,
    }
    if s.requeue_limit is not None:
        requeue["backoffLimitCount"] = s.requeue_limit
    return {
        "apiVersion": CONFIG_API,
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": ":8443", "enableClusterQueueResources": True},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "controller": {
            "groupKindConcurrency": {
                "ClusterQueue.kueue.x-k8s.io": 5,
                "Job.batch": 5,
                "LocalQueue.kueue.x-k8s.io": 5,
                "Pod": 5,
                "ResourceFlavor.kueue.x-k8s.io": 1,
                "Workload.kueue.x-k8s.io": 10,
            }
        },
        "clientConnection": {"qps": 300, "burst": 500},
        # All-or-nothing start: an admitted workload whose pods are not all running and ready within the
        # timeout (stuck scale-up, a partly placed gang) is evicted, its quota released, and requeued with
        # exponential backoff. recoveryTimeout: a running workload that loses a ready pod (a failed pod, a
        # reclaimed spot node) gets as long to recover, by default the same cold-start budget (fields of
        # kueue v0.19.2 apis/config/v1beta2/configuration_types.go WaitForPodsReady).
        "waitForPodsReady": {
            "timeout": s.wait_for_pods_ready_timeout,
            "recoveryTimeout": s.wait_for_pods_ready_recovery_timeout or s.wait_for_pods_ready_timeout,
            "blockAdmission": s.block_admission,
            "requeuingStrategy": requeue,
        },
        # In tenant namespaces every workload goes through Kueue: one without a queue-name label is put in the
        # namespace's LocalQueue "default" (Kueue's LocalQueue defaulting), or, if the stack renamed it, stays
        # suspended instead of bypassing the queue. The namespace ResourceQuota allows the borrowing ceiling,
        # so a bypass would let a team hold borrowed GPUs that Kueue cannot reclaim. Other namespaces are
        # left alone.
        "manageJobsWithoutQueueName": True,
        # Tenant namespaces that chose Volcano are left out: Kueue would gate their Volcano job pods and admit
        # them one by one, and the gang would never start whole.
        "managedJobsNamespaceSelector": {
            "matchExpressions": [
                {"key": derive.TENANT_LABEL, "operator": "Exists"},
                {"key": derive.SCHEDULER_LABEL, "operator": "In", "values": ["kueue"]},
            ],
        },
        "integrations": {"frameworks": list(s.kueue_integrations)},
        # a fleet's manager (plan/fleet.py): MultiKueue is beta and on by default in v0.19.2 (its feature gate)
        **({"multiKueue": multikueue_config(spec)} if spec.fleet is not None else {}),
        "resources": {
            "excludeResourcePrefixes": list(EXCLUDED_RESOURCE_PREFIXES),
            # DRA stacks: claimed devices counted per DeviceClass (components/render/dra.py)
            **({"deviceClassMappings": m} if (m := dra.kueue_device_class_mappings(spec)) else {}),
        },
    }


# kueue v0.19.2 apis/config/v1beta2/configuration_types.go MultiKueueDispatcherMode*
DISPATCHERS = {
    "all-at-once": "kueue.x-k8s.io/multikueue-dispatcher-all-at-once",
    "incremental": "kueue.x-k8s.io/multikueue-dispatcher-incremental",
}


def multikueue_config(spec: StackSpec) -> dict[str, Any]:
    """A fleet manager's ``Configuration.multiKueue`` (kueue v0.19.2 apis/config/v1beta2/configuration_types.go
    MultiKueue; plan/fleet.py): garbage collection, origin label, worker-lost timeout, dispatcher."""
    f = spec.fleet
    assert f is not None
    return {
        "gcInterval": f.gc_interval,
        "origin": f.origin,
        "workerLostTimeout": f.worker_lost_timeout,
        "dispatcherName": DISPATCHERS[f.dispatcher],
    }


def manager_config_yaml(spec: StackSpec) -> str:
    return yaml_text.safe_dump(manager_config(spec), sort_keys=False, width=1000)


def helm_values(spec: StackSpec) -> dict[str, Any]:
    """Values of the kueue release; every path exists in the pinned chart's values.yaml."""
    return {
        "controllerManager": {
            "replicas": CONTROLLER_REPLICAS,
            "podDisruptionBudget": {"enabled": True, "minAvailable": 1},
            "nodeSelector": derive.system_node_selector(spec),
            "manager": {"priorityClassName": CONTROLLER_PRIORITY_CLASS},
        },
        "managerConfig": {"controllerManagerConfigYaml": manager_config_yaml(spec)},
    }


def webhook_probe(spec: StackSpec) -> webhooks.Probe:
    """A ResourceFlavor dry-run: it passes Kueue's mutating and validating webhooks, served by the same server as
    those of ClusterQueues, LocalQueues, Topologies and AdmissionChecks."""
    chart = versions.for_spec(CHART, spec)
    return webhooks.custom_resource_probe("kueue", chart, API, "ResourceFlavor", "resourceflavors", {})
