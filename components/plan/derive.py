"""Derivations shared by every component: pool labels and taints, who runs the device plugin,
and the scheduler units each pool advertises and each tenant may request.

Node pools (EKS, GKE, Karpenter), the GPU Operator configs, ResourceQuotas, Kueue flavors and
ClusterQueues, and Volcano queues all read these functions, so they cannot disagree.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from ..spec.cache import forget as forget, per_pool as per_pool, per_spec as per_spec, per_tenant as per_tenant
from ..spec.model import NodePool, StackSpec, Taint, Tenant

GPU_RESOURCE = "nvidia.com/gpu"
SHARED_GPU_RESOURCE = "nvidia.com/gpu.shared"  # what time-slicing / MPS advertise with renameByDefault
GPU_TAINT = Taint(key="nvidia.com/gpu", value="present", effect="NoSchedule")
# GKE puts this taint on nodes of queued-provisioning (Dynamic Workload Scheduler) pools itself.
GKE_QUEUED_TAINT = Taint(key="cloud.google.com/gke-queued", value="true", effect="NoSchedule")

POOL_LABEL = "gpu-platform/pool"
GPU_MODEL_LABEL = "gpu-platform/gpu-model"
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
GKE_NO_DEVICE_PLUGIN_LABEL = "gke-no-default-nvidia-gpu-device-plugin"
TENANT_LABEL = "gpu-platform/tenant"
SCHEDULER_LABEL = "gpu-platform/scheduler"
# Bottlerocket's NVIDIA variants ship the driver, the container toolkit, the k8s device plugin and a MIG
# manager on the host (EKS user guide, "EKS Bottlerocket NVIDIA AMIs"). These GPU Operator node labels keep
# the operator's own copies off such nodes (a second device plugin would fight over nvidia.com/gpu).
# The operator keeps a deploy label a node already carries with a non-empty value (gpu-operator v26.7.0
# controllers/state_manager.go addGPUStateLabels), so "false" holds.
# The remaining operands are off too: NVIDIA's platform support lists no Bottlerocket, and none of them has
# been run here. The validator, GPU Feature Discovery and the DCGM exporter (with its host engine and the node
# status exporter) go together: the exporter's init container waits for /run/nvidia/validations/toolkit-ready,
# which only the validator writes (v26.7.0 assets/state-dcgm-exporter/0800_daemonset.yaml), so the validator
# cannot be dropped alone; and with the toolkit off on EKS they run under the "nvidia" RuntimeClass that
# Bottlerocket reports not working for them (bottlerocket-os/bottlerocket#3992: only NFD ran). GPU faults there
# still mark the node (the host device plugin withdraws the GPU; the EKS node monitoring agent sets
# AcceleratedHardwareReady), but DCGM metrics, the GPU alerts on them and idle cost do not cover such pools.
# (``client`` is in v26.7.0's container set, though no operand selects it yet)
_OPERANDS = "container-toolkit device-plugin driver mig-manager operator-validator gpu-feature-discovery dcgm-exporter"
BOTTLEROCKET_OPERAND_LABELS = {
    f"nvidia.com/gpu.deploy.{o}": "false" for o in (*_OPERANDS.split(), "dcgm", "node-status-exporter", "client")
}
MANAGED_BY = {"app.kubernetes.io/managed-by": "gpu-platform"}

# Dynamic Resource Allocation (gpuOperator.allocation: dra). The DeviceClasses the NVIDIA DRA driver's GPU
# plugin is served through (created by the GPU Operator's GPUCluster stack, manifests/state-dra-driver/
# 0400_deviceclass-gpu.yaml and 0410_deviceclass-mig.yaml at NVIDIA/gpu-operator v26.7.0), and the quota
# resource Kueue counts each under (its deviceClassMappings name, see components/render/dra.py).
DRA_GPU_CLASS = "gpu.nvidia.com"
DRA_MIG_CLASS = "mig.nvidia.com"
DRA_GPU_RESOURCE = f"{DRA_GPU_CLASS}/devices"
DRA_MIG_RESOURCE = f"{DRA_MIG_CLASS}/devices"
DRA_CLASS_OF = {DRA_GPU_RESOURCE: DRA_GPU_CLASS, DRA_MIG_RESOURCE: DRA_MIG_CLASS}


def dra(spec: StackSpec) -> bool:
    """True when the stack hands out GPUs as ResourceClaims (the DRA driver) instead of extended resources."""
    return spec.gpu_operator.allocation == "dra"


# The GPUCluster's DCGM exporter and validator see the GPUs through adminAccess claims, which the scheduler allows
# only in namespaces labelled so (gpu-operator v26.7.0 controllers/gpucluster_controller.go, which adds the label
# itself; declared here so that an update of the namespace never takes it away). Tenant namespaces never get it.
DRA_ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"


def dra_operator_namespace_labels(spec: StackSpec) -> dict[str, str]:
    return {DRA_ADMIN_ACCESS_LABEL: "true"} if dra(spec) else {}


def primary_gpu_resource(spec: StackSpec) -> str:
    """The whole-GPU scheduler resource: nvidia.com/gpu, or on a DRA stack gpu.nvidia.com devices."""
    return DRA_GPU_RESOURCE if dra(spec) else GPU_RESOURCE


def driver(spec: StackSpec) -> str:
    """Who installs the NVIDIA driver: preinstalled | operator | gke-default | gke-latest."""
    return driver_of(spec.gpu_operator.driver, spec.cloud)


def driver_of(choice: str, cloud: str) -> str:
    """``driver`` from ``gpuOperator.driver`` as the stack file says it (auto: the cloud's) and the cloud: what the
    summary reads from the plan (the GPU Operator add-on's options)."""
    if choice != "auto":
        return choice
    return {"aws": "preinstalled", "gcp": "gke-latest", "existing": "operator"}[cloud]


def device_plugin_owner(spec: StackSpec) -> str:
    """'gke' when GKE's own device plugin serves GPUs (GKE-installed drivers): sharing and MIG are then
    node-pool settings (gpuSharingConfig, gpuPartitionSize). Otherwise 'operator': the GPU Operator's
    device plugin with per-pool configs selected by node labels."""
    if spec.cloud == "gcp" and driver(spec) != "operator":
        return "gke"
    return "operator"


@per_pool
def pool_device_plugin(spec: StackSpec, pool: NodePool) -> str:
    """Which device plugin serves this pool's GPUs: 'gke' (GKE's, sharing and MIG are node-pool settings),
    'bottlerocket' (the one Bottlerocket NVIDIA AMIs run on the host, configured through
    ``settings.kubelet-device-plugins.nvidia``), 'operator' (the GPU Operator's, configured through the
    device-plugin and mig-parted ConfigMaps selected by node labels), or 'dra' (no device plugin: the NVIDIA
    DRA driver publishes the GPUs and the MIG devices the node already has as ResourceSlices)."""
    if dra(spec):
        return "dra"
    if device_plugin_owner(spec) == "gke":
        return "gke"
    if node_os(spec, pool) == "bottlerocket":
        return "bottlerocket"
    return "operator"


def node_os(spec: StackSpec, pool: NodePool) -> str:
    if pool.os:
        return pool.os
    return {"aws": "al2023", "gcp": "cos", "existing": "ubuntu"}[spec.cloud]


@per_spec
def mig_strategy(spec: StackSpec) -> str:
    """'mixed' when some MIG layout mixes profiles (then each profile is its own resource name),
    'single' otherwise (every MIG slice is advertised as nvidia.com/gpu)."""
    for pool in operator_mig_pools(spec):
        if len(pool.sharing.layout or {}) > 1:  # type: ignore[union-attr]
            return "mixed"
    return "single"


def operator_mig_pools(spec: StackSpec) -> list[NodePool]:
    """MIG pools whose layout the GPU Operator's MIG manager applies (not GKE's, not Bottlerocket's)."""
    return [
        p
        for p in spec.node_pools
        if p.sharing and p.sharing.strategy == "mig" and pool_device_plugin(spec, p) == "operator"
    ]


def uses_mig_manager(spec: StackSpec) -> bool:
    return bool(operator_mig_pools(spec))


def config_name(pool: NodePool) -> str:
    """Name of the pool's entry in the device-plugin and mig-parted ConfigMaps (= the label value)."""
    return pool.name


@per_pool
def pool_labels(spec: StackSpec, pool: NodePool) -> dict[str, str]:
    """Labels every node of the pool carries, whoever provisions it (EKS, GKE or Karpenter)."""
    labels = {
        POOL_LABEL: pool.name,
        GPU_MODEL_LABEL: pool.gpu.model.lower(),
        GPU_PRESENT_LABEL: "true",
    }
    strategy = pool.sharing.strategy if pool.sharing else None
    plugin = pool_device_plugin(spec, pool)
    if plugin == "operator":
        if strategy in ("time-slicing", "mps"):
            labels[DEVICE_PLUGIN_CONFIG_LABEL] = config_name(pool)
        if strategy == "mig":
            labels[MIG_CONFIG_LABEL] = config_name(pool)
        if spec.cloud == "gcp":
            labels[GKE_NO_DEVICE_PLUGIN_LABEL] = "true"
    if plugin == "dra" and spec.cloud == "gcp":
        labels[GKE_NO_DEVICE_PLUGIN_LABEL] = "true"  # GKE's device plugin would advertise the GPUs too
    if plugin == "bottlerocket":
        labels.update(BOTTLEROCKET_OPERAND_LABELS)
    labels.update(pool.labels)
    return dict(sorted(labels.items()))


# Label domains the platform or the node itself owns: kubelets may not self-assign most kubernetes.io /
# k8s.io labels (NodeRestriction), Karpenter refuses its own domains, and nvidia.com/gpu.* and the
# gpu-platform/* keys are derived here.
RESERVED_LABEL_DOMAINS = ("kubernetes.io", "k8s.io", "karpenter.sh", "karpenter.k8s.aws", "gpu-platform")
RESERVED_LABEL_PREFIXES = ("nvidia.com/gpu.", "nvidia.com/mig.", "nvidia.com/device-plugin.")


def reserved_label(key: str) -> bool:
    if key.startswith(RESERVED_LABEL_PREFIXES) or key == GKE_NO_DEVICE_PLUGIN_LABEL:
        return True
    domain = key.split("/", 1)[0] if "/" in key else ""
    return any(domain == d or domain.endswith("." + d) for d in RESERVED_LABEL_DOMAINS)


def pool_taints(pool: NodePool) -> list[Taint]:
    """The GPU taint first, then the pool's own (which may not use the GPU taint's key: a rule says so)."""
    return [GPU_TAINT, *pool.taints]


def node_taints(pool: NodePool) -> list[Taint]:
    """Every taint the pool's nodes carry: the declared ones (``pool_taints``) plus those the cloud adds
    by itself (GKE taints queued-provisioning nodes ``cloud.google.com/gke-queued=true:NoSchedule``)."""
    extra = [GKE_QUEUED_TAINT] if pool.gke.queued_provisioning else []
    return [*pool_taints(pool), *extra]


def tolerations(pool: NodePool) -> list[dict[str, str]]:
    """Kubernetes tolerations matching exactly the taints of the pool's nodes."""
    out = []
    for t in node_taints(pool):
        tol = {"key": t.key, "operator": "Equal" if t.value is not None else "Exists", "effect": t.effect}
        if t.value is not None:
            tol["value"] = t.value
        out.append(tol)
    return out


@per_pool
def units_per_gpu(spec: StackSpec, pool: NodePool) -> dict[str, int]:
    """Scheduler resources one physical GPU of the pool advertises."""
    sharing = pool.sharing
    if pool_device_plugin(spec, pool) == "dra":
        # DRA: one device per whole GPU (gpu.nvidia.com), one per MIG device of the layout (mig.nvidia.com).
        if sharing is not None and sharing.strategy == "mig":
            return {DRA_MIG_RESOURCE: sum((sharing.layout or {}).values())}
        return {DRA_GPU_RESOURCE: 1}
    if sharing is None:
        return {GPU_RESOURCE: 1}
    if sharing.strategy in ("time-slicing", "mps"):
        # k8s-device-plugin (the operator's and Bottlerocket's alike) advertises `replicas` units per GPU,
        # renamed <resource>.shared with renameByDefault; GKE's plugin never renames.
        name = (
            SHARED_GPU_RESOURCE
            if sharing.rename_by_default and pool_device_plugin(spec, pool) != "gke"
            else GPU_RESOURCE
        )
        return {name: sharing.replicas or 1}
    layout = sharing.layout or {}
    # MIG: GKE advertises each partition as nvidia.com/gpu; the operator's plugin does so with the single
    # strategy, and as nvidia.com/mig-<profile> with the mixed strategy.
    if pool_device_plugin(spec, pool) != "operator" or mig_strategy(spec) == "single":
        return {GPU_RESOURCE: sum(layout.values())}
    return {f"nvidia.com/mig-{profile}": count for profile, count in sorted(layout.items())}


def pool_units(spec: StackSpec, pool: NodePool, gpus: int) -> dict[str, int]:
    return {name: n * gpus for name, n in units_per_gpu(spec, pool).items()}


def pool_capacity(spec: StackSpec, pool: NodePool) -> dict[str, int]:
    """What the pool can bring at its maximum size, in scheduler units."""
    return pool_units(spec, pool, pool.gpu_cap)


def tenant_pool_units(spec: StackSpec, tenant: Tenant) -> dict[str, dict[str, int]]:
    """pool name -> {resource: units} of the tenant's nominal quota (physical GPUs x units per GPU)."""
    return {
        pool_name: pool_units(spec, spec.pool(pool_name), gpus) for pool_name, gpus in sorted(tenant.gpu_quota.items())
    }


def tenant_units(spec: StackSpec, tenant: Tenant) -> dict[str, int]:
    """Total scheduler units per resource name the tenant may request (its ResourceQuota)."""
    total: dict[str, int] = defaultdict(int)
    for units in tenant_pool_units(spec, tenant).values():
        for name, n in units.items():
            total[name] += n
    return dict(sorted(total.items()))


def tenant_cohort(spec: StackSpec, tenant: Tenant) -> str | None:
    """The Kueue cohort of the tenant's ClusterQueue: its own, else the stack default. None: the tenant
    neither lends nor borrows."""
    return tenant.cohort or spec.scheduling.default_cohort


def capability_pool_units(spec: StackSpec, tenant: Tenant) -> dict[str, dict[str, int]]:
    """pool name -> {resource: units} a Volcano tenant's queue may hold at most on each pool it reaches (the parts
    of its ``capability``): its nominal quota plus what it may borrow there. Borrowing needs a cohort;
    ``borrowingLimit`` bounds it, and without one the tenant may take whatever the pool brings beyond it (Volcano's
    proportion lends a queue idle capacity up to its capability, not other queues' quota). Never above what the
    pool can bring (or the nominal quota, when that is already more).

    Not a Kueue tenant's ceiling: Kueue lends only the nominal quota of the cohort's other queues
    (``kueue.tenant_max_units``); ``ceilings`` picks by scheduler."""
    cohort = tenant_cohort(spec, tenant)
    out: dict[str, dict[str, int]] = {}
    for pool_name, gpus in sorted(tenant.gpu_quota.items()):
        pool = spec.pool(pool_name)
        bound = max(gpus, pool.gpu_cap)
        if cohort is None:
            reach = gpus
        elif pool_name in tenant.borrowing_limit:
            reach = min(gpus + tenant.borrowing_limit[pool_name], bound)
        else:
            reach = bound
        out[pool_name] = pool_units(spec, pool, reach)
    return out


def capability_units(spec: StackSpec, tenant: Tenant) -> dict[str, int]:
    """Per resource name, the most units a Volcano tenant's queue can hold when it borrows all it may (its
    ``capability``): ``capability_pool_units`` summed."""
    total: dict[str, int] = defaultdict(int)
    for units in capability_pool_units(spec, tenant).values():
        for name, n in units.items():
            total[name] += n
    return dict(sorted(total.items()))


def tenant_scheduler(spec: StackSpec, tenant: Tenant) -> str | None:
    """Who queues the tenant's workloads: its choice, else Kueue when on, else Volcano when on, else nobody.
    Kueue manages every workload in a 'kueue' namespace (pods included); a 'volcano' namespace is left to
    Volcano, whose job pods Kueue would otherwise gate and admit one by one, breaking the gang."""
    if tenant.scheduler:
        return tenant.scheduler
    if spec.addons.kueue:
        return "kueue"
    return "volcano" if spec.addons.volcano else None


def system_node_selector(spec: StackSpec) -> dict[str, str]:
    """Where platform controllers run: Linux nodes matching ``systemNodeSelector`` (never the tainted GPU nodes)."""
    return dict(sorted({"kubernetes.io/os": "linux", **spec.system_node_selector}.items()))


@dataclass(frozen=True)
class PoolCapacity:
    """A pool's units against the sum of the tenants' nominal quotas on it."""

    pool: str
    resource_units: dict[str, int]
    quota_units: dict[str, int]
    ratio: float  # quota / capacity (max over resource names)


def capacity_report(spec: StackSpec) -> list[PoolCapacity]:
    """Per pool: units it can bring vs. the sum of tenants' nominal quotas on it."""
    return list(_capacity_report(spec))


def pool_capacity_report(spec: StackSpec, pool_name: str) -> PoolCapacity:
    """``capacity_report``'s entry of one pool."""
    return next(c for c in _capacity_report(spec) if c.pool == pool_name)


@per_spec
def _capacity_report(spec: StackSpec) -> tuple[PoolCapacity, ...]:
    """Once per spec, in one pass over the tenants' quotas (per pool it was pools x tenants)."""
    gpus: dict[str, list[int]] = defaultdict(list)  # pool -> each quota entry on it, in tenant order
    for tenant in spec.tenants:
        for pool_name, n in tenant.gpu_quota.items():
            gpus[pool_name].append(n)
    out = []
    for pool in spec.node_pools:
        cap = pool_capacity(spec, pool)
        quota: dict[str, int] = defaultdict(int)
        for n in gpus.get(pool.name, ()):
            for name, units in pool_units(spec, pool, n).items():
                quota[name] += units
        ratio = max((quota.get(k, 0) / v if v else float("inf") for k, v in cap.items()), default=0.0)
        out.append(PoolCapacity(pool.name, cap, dict(quota), ratio))
    return tuple(out)


def priority_ceiling_excluded(spec: StackSpec, tenant: Tenant) -> list[str]:
    """PriorityClasses above the tenant's ceiling (forbidden in its namespace)."""
    ceiling = spec.priority_class(tenant.priority).value
    return sorted(c.name for c in spec.priority_classes if c.value > ceiling)


# ------------------------------------------------------------------------------------ flavor order

# What a job would want, best first: a dedicated pool (whole GPUs, on-demand or reserved), then spot
# (whole GPUs that may be reclaimed), then queued provisioning (GKE DWS: whole GPUs, but only after
# a ProvisioningRequest is served), then shared pools (time-slices, MPS clients or MIG slices: a
# fraction of a GPU). Kueue tries a ClusterQueue's flavors in list order (kueue v0.19.2
# pkg/scheduler/flavorassigner: first fitting flavor, honouring flavorFungibility), so this order is
# the order a workload overflows in.
FLAVOR_CLASSES = ("dedicated", "spot", "queued", "shared")


def flavor_class(spec: StackSpec, pool: NodePool) -> str:
    """The pool's place in FLAVOR_CLASSES. Sharing wins over everything (a slice is never what a
    whole-GPU job wants), then queued provisioning, then spot."""
    if pool.sharing is not None:
        return "shared"
    if spec.cloud == "gcp" and pool.gke.queued_provisioning:
        return "queued"
    if pool.capacity == "spot":
        return "spot"
    return "dedicated"


def flavor_order(spec: StackSpec, pools: list[NodePool] | None = None) -> list[NodePool]:
    """``pools`` (default: every pool) in the order Kueue should try them: by FLAVOR_CLASSES, then by
    name. Deterministic and independent of the order of ``nodePools`` in the stack file."""
    chosen = spec.node_pools if pools is None else pools
    return sorted(chosen, key=lambda p: (FLAVOR_CLASSES.index(flavor_class(spec, p)), p.name))


# ---------------------------------------------------------------------------------- Volcano queues


@per_spec
def volcano_tenants(spec: StackSpec) -> tuple[Tenant, ...]:
    """Tenants whose jobs Volcano schedules: only they get a Volcano Queue. A queue's guarantee is
    reserved whether or not anyone uses it (below), so queues of Kueue tenants would lock GPUs away.
    Once per spec: the stack outputs and the summary ask per tenant (1,000 tenants: a million scans)."""
    if not spec.addons.volcano:
        return ()
    return tuple(t for t in spec.tenants if tenant_scheduler(spec, t) == "volcano")


@per_spec
def pool_schedulers(spec: StackSpec) -> dict[str, tuple[str, ...]]:
    """pool name -> the admission systems of the tenants that reach it (a gpuQuota entry, even 0), sorted.

    Each pool's GPUs are handed out by exactly one of them (``scheduling_rules.one_scheduler_per_pool`` refuses
    a pool reached from both): Kueue counts only the workloads it admits and Volcano only its own jobs
    (kueue v0.19.2 pkg/cache; volcano v1.15.1 pkg/scheduler/plugins/proportion), so on a shared pool each would
    count as free the GPUs the other's pods hold."""
    out: dict[str, set[str]] = {p.name: set() for p in spec.node_pools}
    for tenant in spec.tenants:
        scheduler = tenant_scheduler(spec, tenant)
        if scheduler is None:
            continue
        for pool_name in tenant.gpu_quota:
            out.setdefault(pool_name, set()).add(scheduler)
    return {name: tuple(sorted(v)) for name, v in sorted(out.items())}


def volcano_pools(spec: StackSpec) -> frozenset[str]:
    """Pools only Volcano hands out: no Kueue flavor (none could admit into it), no Kueue readiness timeout."""
    return frozenset(name for name, who in pool_schedulers(spec).items() if who == ("volcano",))


# The opt-in a shared pool's Kueue flavor asks of workloads (kueue.flavor_spec): a ResourceFlavor nodeTaint, not a
# node taint. Kueue assigns a flavor only to pod sets that tolerate its nodeTaints (kueue v0.19.2
# pkg/scheduler/flavorassigner/flavorassigner.go:1239-1245, FindMatchingUntoleratedTaint over the pod's tolerations
# and the flavor's own), and the flavor does not list it among the tolerations it injects.
SHARED_GPU_TAINT = {"key": "gpu-platform/shared-gpu", "value": "one-unit", "effect": "NoSchedule"}


@per_spec
def opt_in_shared_pools(spec: StackSpec) -> frozenset[str]:
    """One-unit shared pools (``shares_whole_gpu_requests``) that some Kueue tenant reaches beside another of its
    pools advertising a resource name the shared pool advertises too. Kueue counts units per flavor, not per
    container, so without an opt-in it could admit a pod asking two units per container onto the shared flavor,
    and the device plugin would refuse it at bind; with the opt-in (SHARED_GPU_TAINT on the flavor) only pod sets
    that tolerate it are assigned there. Where no tenant could confuse them, nothing changes."""
    out: set[str] = set()
    for tenant in kueue_tenants(spec):
        pools = [spec.pool(name) for name in tenant.gpu_quota]
        for shared in (p for p in pools if shares_whole_gpu_requests(spec, p)):
            names = set(units_per_gpu(spec, shared))
            if any(other is not shared and names & set(units_per_gpu(spec, other)) for other in pools):
                out.add(shared.name)
    return frozenset(out)


def kueue_tenants(spec: StackSpec) -> list[Tenant]:
    """Tenants whose workloads Kueue admits: only they get a ClusterQueue and a LocalQueue. A Volcano tenant's
    ClusterQueue would admit nothing (Kueue skips its namespace) and lend its quota to the cohort, while its
    Volcano queue placed pods on the same GPUs."""
    return list(_kueue_tenants(spec))


@per_spec
def _kueue_tenants(spec: StackSpec) -> tuple[Tenant, ...]:
    if not spec.addons.kueue:
        return ()
    return tuple(t for t in spec.tenants if tenant_scheduler(spec, t) == "kueue")


def shares_whole_gpu_requests(spec: StackSpec, pool: NodePool) -> bool:
    """A container on this pool may ask for at most one unit of its GPU resource: time-slicing with
    ``failRequestsGreaterThanOne`` and MPS (k8s-device-plugin v0.20.0 README.md:405-408: the plugin refuses a
    larger request with UnexpectedAdmissionError), and GKE time-sharing (one shared GPU per container)."""
    s = pool.sharing
    if s is None or s.strategy == "mig":
        return False
    if s.strategy == "mps" or pool_device_plugin(spec, pool) == "gke":
        return True
    return bool(s.fail_requests_greater_than_one)


def nodes_at_rest(spec: StackSpec, pool: NodePool) -> int:
    """Nodes the pool has with nothing running: minNodes, or on an existing cluster every node it names."""
    return pool.node_cap if spec.cloud == "existing" else pool.min_nodes


def fleet_units(spec: StackSpec, at_rest: bool = False) -> dict[str, int]:
    """Per resource name, what every pool brings at its maximum size (Volcano's cluster total, GPU part);
    ``at_rest``: what the nodes an idle cluster keeps bring (``nodes_at_rest``)."""
    total: dict[str, int] = defaultdict(int)
    for pool in spec.node_pools:
        gpus = pool.gpu.per_node * nodes_at_rest(spec, pool) if at_rest else pool.gpu_cap
        for name, n in pool_units(spec, pool, gpus).items():
            total[name] += n
    return dict(sorted(total.items()))


def volcano_queue_cap(spec: StackSpec, tenant: Tenant, at_rest: bool = False) -> dict[str, int]:
    """GPU units the tenant's Volcano queue can hold at most with every pool at its maximum size; ``at_rest``:
    what it can enqueue from an idle cluster (every pool at ``nodes_at_rest``; from zero GPU nodes, its
    guarantee).

    Volcano v1.15.1 ``pkg/scheduler/plugins/proportion/proportion.go`` (OnSessionOpen, 90-139): every queue's
    ``realCapability = min(capability, (cluster total - sum of all queues' guarantees) + own guarantee)``, the
    cluster total being the allocatable of the nodes that exist now (``ssn.TotalResource``, framework/session.go
    272-275); a job whose minimum resources exceed it is not enqueued (JobEnqueueableFn, 402-436). The
    guarantees are those of ``volcano_tenants`` (the queues created)."""
    total = fleet_units(spec, at_rest)
    guarantees: dict[str, int] = defaultdict(int)
    for t in volcano_tenants(spec):
        for name, n in tenant_units(spec, t).items():
            guarantees[name] += n
    own = tenant_units(spec, tenant)
    capability = capability_units(spec, tenant)
    out = {}
    for name in sorted(set(capability) | set(own)):
        free = max(total.get(name, 0) - guarantees.get(name, 0), 0)
        out[name] = min(capability.get(name, 0), free + own.get(name, 0))
    return out


def tenant_lending_limits(spec: StackSpec, tenant: Tenant) -> dict[str, int]:
    """pool -> GPUs the tenant's ClusterQueue may lend (a pool left out: no limit). A tenant that never preempts
    cannot reclaim what it lends (its reclaimWithinCohort is Never), so it lends nothing on any pool."""
    if tenant_never_preempts(spec, tenant):
        return dict.fromkeys(tenant.gpu_quota, 0)
    return dict(tenant.lending_limit)


def tenant_never_preempts(spec: StackSpec, tenant: Tenant) -> bool:
    """Every PriorityClass the tenant may use (at or below its ceiling) has ``preemptionPolicy: Never``.

    Kueue ignores a PriorityClass's preemptionPolicy (a WorkloadPriorityClass has none; kueue v0.19.2
    preempts by ClusterQueue ``spec.preemption`` alone), so "never preempts" holds in Kueue only when the
    tenant's ClusterQueue itself never preempts: ``kueue.cluster_queue_spec`` sets every policy to Never then."""
    return _never_preempting_ceilings(spec)[tenant.priority]  # an unknown ceiling (the rules refuse it): KeyError


@per_spec
def _never_preempting_ceilings(spec: StackSpec) -> Mapping[str, bool]:
    """PriorityClass -> ``tenant_never_preempts`` of a tenant with that ceiling, once (asked ~6 times per tenant)."""
    out = {}
    for pc in reversed(spec.priority_classes):  # the first of a name wins, as in ``spec.priority_class``
        allowed = [c for c in spec.priority_classes if c.value <= pc.value]
        out[pc.name] = bool(allowed) and all(c.preemption_policy == "Never" for c in allowed)
    return MappingProxyType(out)


# The shortest waitForPodsReady timeout that survives a GPU cold start from zero nodes: node launch (minutes
# for p5/a3 capacity), driver/toolkit validation by the GPU Operator (a reboot on MIG pools), a 10-20 GB
# image pull and model load. Shorter, a job is evicted just before its pods would have become ready.
COLD_START_SECONDS = 15 * 60


def _seconds(d: str) -> int:
    import re

    return sum(int(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in re.findall(r"([0-9]+)([hms])", d))


def cold_start_pools(spec: StackSpec) -> list[NodePool]:
    """Pools a Kueue-admitted workload may have to wait for from zero nodes (minNodes 0; Karpenter pools always);
    not the pools Volcano hands out, where Kueue's waitForPodsReady never applies."""
    volcano = volcano_pools(spec)
    return [p for p in spec.node_pools if (p.provisioner == "karpenter" or p.min_nodes == 0) and p.name not in volcano]


def wait_for_pods_ready_too_short(spec: StackSpec) -> list[str]:
    """waitForPodsReady settings (timeout, recoveryTimeout) shorter than a cold start, when some pool starts
    from zero; empty when Kueue is off or every pool keeps nodes."""
    if not spec.addons.kueue or not cold_start_pools(spec):
        return []
    s = spec.scheduling
    return waits_below_cold_start(
        {
            "waitForPodsReadyTimeout": s.wait_for_pods_ready_timeout,
            "waitForPodsReadyRecoveryTimeout": s.wait_for_pods_ready_recovery_timeout,
        }
    )


WAIT_FOR_PODS_READY_OPTIONS = ("waitForPodsReadyTimeout", "waitForPodsReadyRecoveryTimeout")


def waits_below_cold_start(waits: Mapping[str, str | None]) -> list[str]:
    """The waitForPodsReady settings (option name -> duration, None: unset) shorter than a cold start, in
    ``WAIT_FOR_PODS_READY_OPTIONS`` order: ``wait_for_pods_ready_too_short`` once Kueue is on and a pool starts
    from zero (the summary reads the Kueue add-on's options and ``PoolPlan.cold_start`` from the plan)."""
    short = [(n, waits.get(n)) for n in WAIT_FOR_PODS_READY_OPTIONS]
    return [n for n, d in short if d is not None and _seconds(d) < COLD_START_SECONDS]
