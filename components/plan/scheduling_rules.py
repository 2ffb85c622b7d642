"""Rules of the batch-scheduling part of the spec (Kueue and Volcano objects derived from it).

The cloud-neutral tenancy rules that also guard Kueue (a borrowing or lending limit needs a cohort; a limit
on a pool the tenant has no gpuQuota entry for; lendingLimit above the quota) live in rules_core.py.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..spec.model import Problem, StackSpec, key, rule
from ..spec.options import IMPLICIT_POD_INTEGRATIONS
from ..spec.validation import a_or_an
from . import derive, kueue, volcano, webhooks


@rule
def topology_aware_pools(spec: StackSpec) -> Iterator[Problem]:
    levels = kueue.topology_levels(spec)
    for i, pool in enumerate(spec.node_pools):
        if not pool.topology_aware:
            continue
        at = key("nodePools", i, "topologyAware")
        if not spec.addons.kueue:
            yield Problem(at, "topology-aware scheduling is done by Kueue: turn on addons.kueue")
        if levels is None:
            yield Problem(
                at,
                f"{a_or_an(spec.cloud)} cluster has no known topology node labels: set scheduling.topologyLevels "
                f"(node labels, coarsest first, {kueue.HOSTNAME_LABEL} last) or drop topologyAware",
            )
        names = sorted(derive.units_per_gpu(spec, pool))
        if names != [derive.GPU_RESOURCE]:
            yield Problem(
                at,
                f"topology-aware scheduling needs a pool advertising {derive.GPU_RESOURCE}, this one advertises "
                f"{', '.join(names)} (Kueue places cpu and memory in the {derive.GPU_RESOURCE} resource group, and a "
                "topology-aware workload must take all its resources from one topology flavor)",
            )


@rule
def topology_needs_provisioning(spec: StackSpec) -> Iterator[Problem]:
    """Kueue's TAS admits a workload only onto ready, schedulable nodes (kueue v0.19.2 site
    concepts/topology_aware_scheduling.md; tas_flavor_snapshot.go "no topology domains at level"): a
    topology-aware pool that must grow for a workload needs a ProvisioningRequest admission check
    (kueue.provisioning_class), or Kueue never admits it, no pod is created and nothing scales up."""
    if not spec.addons.kueue:
        return
    for i, pool in enumerate(spec.node_pools):
        if not pool.topology_aware or kueue.provisioning_class(spec, pool) is not None:
            continue
        at = key("nodePools", i, "topologyAware")
        if spec.cloud == "aws" and pool.provisioner == "karpenter":
            yield Problem(
                at,
                "Karpenter serves no ProvisioningRequests and launches nodes only for pending pods, but Kueue's "
                "topology-aware scheduling admits a workload (and so creates its pods) only onto ready nodes: "
                "the pool would never get a node. Use provisioner: managed (the Cluster Autoscaler scales it "
                "through a ProvisioningRequest check) or drop topologyAware",
            )


@rule
def topology_levels(spec: StackSpec) -> Iterator[Problem]:
    levels = spec.scheduling.topology_levels or []
    seen: set[str] = set()
    for j, label in enumerate(levels):
        at = key("scheduling", "topologyLevels", j)
        if label in seen:
            yield Problem(at, f"{label!r} is listed twice (each level needs its own node label)")
        seen.add(label)
        if label == kueue.HOSTNAME_LABEL and j != len(levels) - 1:
            yield Problem(at, f"{kueue.HOSTNAME_LABEL} can only be the last (finest) level")


# Turning an add-on off uninstalls its chart, and the chart's templated CRDs with it: every Kueue Workload or
# Volcano Job in the cluster is deleted. An add-on a tenant still names is refused here (and the releases are
# protected, components/render/kueue.py, volcano.py); README "Day 2" says how to really remove one.
ADDON_REMOVAL = {
    "kueue": "turning Kueue off uninstalls it and deletes every Kueue Workload in the cluster",
    "volcano": "turning Volcano off uninstalls it and deletes every Volcano Job and PodGroup in the cluster",
}


@rule
def tenant_scheduler_is_installed(spec: StackSpec) -> Iterator[Problem]:
    for i, tenant in enumerate(spec.tenants):
        for addon in ("kueue", "volcano"):
            if tenant.scheduler == addon and not getattr(spec.addons, addon):
                yield Problem(
                    key("tenants", i, "scheduler"),
                    f"{addon} is not installed: turn on addons.{addon}, or move the tenant to another scheduler "
                    f"first ({ADDON_REMOVAL[addon]}; README: Day 2, removing an add-on)",
                )


@rule
def kueue_names(spec: StackSpec) -> Iterator[Problem]:
    if not spec.addons.kueue:
        return
    for i, pool in enumerate(spec.node_pools):
        if pool.name == kueue.DEFAULT_FLAVOR:
            yield Problem(
                key("nodePools", i, "name"),
                f"{kueue.DEFAULT_FLAVOR!r} is the Kueue flavor of CPU-only workloads; name the pool otherwise",
            )
        if pool.name == webhooks.PROBE_OBJECT_NAME:
            yield Problem(
                key("nodePools", i, "name"),
                f"{webhooks.PROBE_OBJECT_NAME!r} is the ResourceFlavor the webhook readiness probe dry-runs (an "
                "existing one would make the probe fail with AlreadyExists); name the pool otherwise",
            )


@rule
def queued_provisioning_needs_kueue(spec: StackSpec) -> Iterator[Problem]:
    if spec.addons.kueue or spec.cloud != "gcp":
        return
    for i, pool in enumerate(spec.node_pools):
        if pool.gke.queued_provisioning:
            yield Problem(
                key("nodePools", i, "gke", "queuedProvisioning"),
                "queued-provisioning nodes are created only for ProvisioningRequests, which Kueue's admission "
                "check makes: turn on addons.kueue",
            )


@rule
def volcano_queue_names(spec: StackSpec) -> Iterator[Problem]:
    if not spec.addons.volcano:
        return
    for i, tenant in enumerate(spec.tenants):
        if tenant.name in volcano.RESERVED_QUEUES:
            yield Problem(
                key("tenants", i, "name"),
                f"{tenant.name!r} is a queue Volcano creates itself; the tenant's Volcano queue would collide",
            )
        if tenant.name == webhooks.PROBE_OBJECT_NAME:
            yield Problem(
                key("tenants", i, "name"),
                f"{webhooks.PROBE_OBJECT_NAME!r} is the Queue the webhook readiness probe dry-runs (an existing "
                "one would make the probe fail with AlreadyExists); name the tenant otherwise",
            )


@rule
def volcano_tenant_needs_reachable_pool(spec: StackSpec) -> Iterator[Problem]:
    """Queued-provisioning (DWS) nodes come only for ProvisioningRequests Kueue's admission check makes; a
    Volcano tenant's pods never get one, so a quota only on such pools could never be used."""
    queued = {p.name for p in spec.node_pools if kueue.provisioning_class(spec, p) == kueue.DWS_PROVISIONING_CLASS}
    if not queued:
        return
    for i, tenant in enumerate(spec.tenants):
        pools = {name for name, gpus in tenant.gpu_quota.items() if gpus > 0}
        if derive.tenant_scheduler(spec, tenant) == "volcano" and pools and pools <= queued:
            yield Problem(
                key("tenants", i, "gpuQuota"),
                f"the tenant is scheduled by Volcano, but its GPU quota is only on queued-provisioning pools "
                f"({', '.join(sorted(pools))}), whose nodes come only for workloads Kueue admits: give it a quota "
                "on another pool or set scheduler: kueue",
            )


@rule
def one_scheduler_per_pool(spec: StackSpec) -> Iterator[Problem]:
    """Each pool's GPUs are handed out by one admission system (``derive.pool_schedulers``): a Volcano tenant on
    a pool a Kueue tenant reaches would hold GPUs Kueue counts as free, and the other way round."""
    schedulers = derive.pool_schedulers(spec)
    for pool, who in schedulers.items():
        if len(who) < 2:
            continue
        kueue_names = sorted(
            t.name for t in spec.tenants if pool in t.gpu_quota and derive.tenant_scheduler(spec, t) == "kueue"
        )
        for i, tenant in enumerate(spec.tenants):
            if pool in tenant.gpu_quota and derive.tenant_scheduler(spec, tenant) == "volcano":
                yield Problem(
                    key("tenants", i, "gpuQuota", pool),
                    f"pool {pool} is handed out by Kueue (tenants {', '.join(kueue_names)}); a Volcano tenant cannot "
                    "share it, because each scheduler counts only its own workloads and both would hand out the "
                    "same GPUs: give the Volcano tenants pools of their own, or set scheduler: kueue",
                )


@rule
def kueue_tenants_need_the_pod_integration(spec: StackSpec) -> Iterator[Problem]:
    """Kueue gates a pod that no job kind it manages owns only through its pod integration; without it such a
    pod in a Kueue tenant's namespace would take GPUs Kueue never counts."""
    if not derive.kueue_tenants(spec):
        return
    integrations = set(spec.scheduling.kueue_integrations)
    if "pod" in integrations or integrations & IMPLICIT_POD_INTEGRATIONS:
        return
    yield Problem(
        key("scheduling", "kueueIntegrations"),
        "without 'pod' (or deployment, statefulset, leaderworkerset, which turn it on) a plain Pod in a Kueue "
        "tenant's namespace bypasses Kueue and holds GPUs its quota never counts: add 'pod'",
    )


@rule
def a_tenant_that_never_preempts_lends_nothing(spec: StackSpec) -> Iterator[Problem]:
    """Its ClusterQueue never preempts, not even to reclaim (kueue.cluster_queue_spec): whatever it lent would
    stay with the borrower. kueue.resource_groups lends nothing for it; an explicit lendingLimit is refused."""
    classes = {c.name for c in spec.priority_classes}
    for i, tenant in enumerate(spec.tenants):
        if tenant.priority not in classes or not derive.tenant_never_preempts(spec, tenant):
            continue  # an unknown class is reported by its own rule
        for pool, n in sorted(tenant.lending_limit.items()):
            if n > 0:
                yield Problem(
                    key("tenants", i, "lendingLimit", pool),
                    f"the tenant's classes never preempt (ceiling {tenant.priority}), so its ClusterQueue cannot "
                    "reclaim what it lends: set 0, or raise its priority to a class that preempts",
                )
