"""Kueue: the official chart with a manager configuration for GPU batch work, and every queueing object
derived from the stack spec (API ``kueue.x-k8s.io/v1beta2``, the storage version of the pinned release).

What a tenant entry becomes:

- a **ClusterQueue** named after the tenant, reachable only from the tenant's namespace, with one resource
  group per set of GPU resource names its pools advertise (Kueue requires every flavor of a group to list
  the same resources; overlapping sets merge). ``nominalQuota`` is the tenant's quota in scheduler units
  (``derive.tenant_pool_units``: the same numbers as its ResourceQuota), ``borrowingLimit`` /
  ``lendingLimit`` come from ``tenants[].borrowingLimit`` / ``lendingLimit`` in physical GPUs, converted
  to units. Only pools in ``tenants[].gpuQuota`` get a flavor (a ``0`` entry means "may only borrow
  there"): a tenant cannot reach a pool it has no quota entry for, not even by borrowing. A borrowing
  limit bounds a loan and creates no capacity: a queue borrows only the nominal quota other queues of its
  cohort lend on that flavor (``kueue.tenant_max_units``, what its ResourceQuota allows).
- **cpu and memory** live in the group of ``nvidia.com/gpu`` (a resource can only be in one group, and a
  topology-aware workload must get all its resources from one topology flavor). That group starts with
  ``default-flavor`` (no node labels, GPU quota 0): a CPU-only workload fits there first and lands on
  ordinary nodes, while a GPU workload finds no GPU quota there and moves on to a pool flavor. Each
  flavor of the group gets ``tenants[].quota.cpu``/``memory`` as its cpu/memory quota, or a generous
  default (DEFAULT_CPU_QUOTA, DEFAULT_MEMORY_QUOTA: no cap in practice) when the tenant sets none. The
  namespace ResourceQuota stays the hard cap on the tenant's total cpu/memory.
- a **LocalQueue** ``scheduling.localQueueName`` (default ``default``) in the tenant namespace: users label
  their jobs ``kueue.x-k8s.io/queue-name: default`` (unlabelled ones land there too).
- **cohort** membership by name (``tenants[].cohort``, else ``scheduling.defaultCohort``): cohorts need no
  object of their own (only hierarchical cohorts or cohort-level quotas do). Members lend their idle quota
  and take it back by preemption (``reclaimWithinCohort: Any`` -- borrowed GPUs are a loan, whatever the
  borrower's priority); a borrowing workload may also preempt lower-priority *borrowing* workloads of other
  queues (``borrowWithinCohort: LowerPriority``); inside a queue, higher priority preempts lower
  (``withinClusterQueue: LowerPriority``). Flavors are tried in ``derive.flavor_order``: dedicated pools,
  then spot, then queued provisioning, then shared (time-slicing, MPS, MIG) pools, by name within a class
  (a nodeSelector on ``gpu-platform/pool`` pins one), and the tenant's own quota on a later pool is
  preferred over borrowing on an earlier one (``whenCanBorrow: TryNextFlavor``).

Cluster-wide: a **ResourceFlavor** per GPU pool (``nodeLabels`` = the pool label, ``tolerations`` = the
pool's taints, so admitted pods land on the pool and tolerate it), ``default-flavor``, a
**WorkloadPriorityClass** per PriorityClass (same names and values), a **Topology** when some pool is
``topologyAware``, and a ProvisioningRequest **AdmissionCheck** with its ProvisioningRequestConfig for GKE
queued-provisioning pools (Kueue asks GKE's Dynamic Workload Scheduler for the nodes of an admitted workload;
without it such pools never scale) and for topology-aware pools that can grow (best-effort atomic scale-up by
the cluster autoscaler; see ``provisioning_class``).

Topology-aware pools: their flavor references the Topology; Kueue then places pods by the topology labels,
and only workloads that ask for it (``kueue.x-k8s.io/podset-preferred-topology`` or ``-required-topology``
on the pod template) can use the flavor (the ClusterQueue also holds non-topology flavors).

Priority ceiling: Kueue orders and preempts by the *workload* priority, which a job takes from the
``kueue.x-k8s.io/priority-class`` label or its pod template; the tenancy's admission policy refuses both
above the tenant's ceiling (components/render/tenancy.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pulumi

from ..plan import derive
from ..plan.kueue import (  # re-exported: what the objects are made of
    API as API,
    ATOMIC_PROVISIONING_CLASS as ATOMIC_PROVISIONING_CLASS,
    CHART as CHART,
    CLOUD_TOPOLOGY_LEVELS as CLOUD_TOPOLOGY_LEVELS,
    CONFIG_API as CONFIG_API,
    CONTROLLER_PRIORITY_CLASS as CONTROLLER_PRIORITY_CLASS,
    CONTROLLER_REPLICAS as CONTROLLER_REPLICAS,
    CPU_RESOURCES as CPU_RESOURCES,
    DEFAULT_CPU_QUOTA as DEFAULT_CPU_QUOTA,
    DEFAULT_FLAVOR as DEFAULT_FLAVOR,
    DEFAULT_MEMORY_QUOTA as DEFAULT_MEMORY_QUOTA,
    DWS_PROVISIONING_CLASS as DWS_PROVISIONING_CLASS,
    EXCLUDED_RESOURCE_PREFIXES as EXCLUDED_RESOURCE_PREFIXES,
    FLAVOR_TOPOLOGY_IMMUTABLE as FLAVOR_TOPOLOGY_IMMUTABLE,
    HOSTNAME_LABEL as HOSTNAME_LABEL,
    NAMESPACE_NAME_LABEL as NAMESPACE_NAME_LABEL,
    PREFERRED_TOPOLOGY_ANNOTATION as PREFERRED_TOPOLOGY_ANNOTATION,
    PRIORITY_CLASS_LABEL as PRIORITY_CLASS_LABEL,
    PROVISIONING_CONTROLLER as PROVISIONING_CONTROLLER,
    QUEUE_NAME_LABEL as QUEUE_NAME_LABEL,
    REQUEUE_BACKOFF_BASE_SECONDS as REQUEUE_BACKOFF_BASE_SECONDS,
    REQUEUE_BACKOFF_MAX_SECONDS as REQUEUE_BACKOFF_MAX_SECONDS,
    REQUIRED_TOPOLOGY_ANNOTATION as REQUIRED_TOPOLOGY_ANNOTATION,
    TOPOLOGY_IMMUTABLE as TOPOLOGY_IMMUTABLE,
    TOPOLOGY_NAME as TOPOLOGY_NAME,
    _cpu_budget as _cpu_budget,
    _limit_units as _limit_units,
    _partition as _partition,
    _quota as _quota,
    admission_check_name as admission_check_name,
    canonical_quantity as canonical_quantity,
    cluster_queue_spec as cluster_queue_spec,
    flavor_immutable as flavor_immutable,
    flavor_spec as flavor_spec,
    helm_values as helm_values,
    local_queue_spec as local_queue_spec,
    manager_config as manager_config,
    manager_config_yaml as manager_config_yaml,
    provisioning_class as provisioning_class,
    provisioning_pools as provisioning_pools,
    provisioning_request_config_spec as provisioning_request_config_spec,
    queue_checks as queue_checks,
    queue_flavors as queue_flavors,
    resource_groups as resource_groups,
    tenant_pools as tenant_pools,
    topology_levels as topology_levels,
    uses_topology as uses_topology,
    webhook_probe as webhook_probe,
)
from ..plan.plan import Plan, plain
from . import addon, k8s

# ------------------------------------------------------------------------------------- flavors


def replacement_options(fields: Iterable[str]) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions(replace_on_changes=list(fields), delete_before_replace=True)


# GKE admits system-cluster-critical pods outside kube-system only in namespaces with a ResourceQuota scoped
# to those classes; the controller replicas (plus room for a rolling update) fit in this many.
GKE_CRITICAL_PODS = 10


class Kueue(addon.ChartAddon):
    """Namespace, the kueue release, and the queueing objects of every pool and tenant."""

    TYPE = "gpu-platform:scheduling:Kueue"
    CHART = CHART

    def __init__(
        self,
        name: str,
        plan: Plan,
        provider: pulumi.ProviderResource,
        opts: pulumi.ResourceOptions | None = None,
        namespaces: Mapping[str, pulumi.Input[str]] | None = None,
        release_deps: Iterable[pulumi.Resource] = (),
    ):
        """``namespaces``: tenant name -> namespace name output (Tenancy.namespaces), so that each LocalQueue
        waits for its namespace. ``release_deps``: what the controller must find when it starts (the
        ProvisioningRequest CRD: Kueue sets up its ProvisioningRequest admission check only if the API exists
        at start-up, kueue v0.19.2 ``cmd/kueue/main.go``)."""
        super().__init__(name, plan, provider, opts)

        # The controller runs non-root, read-only, without capabilities: Pod Security 'restricted' fits.
        before = self.create_namespace(addon.NamespacePolicy("kueue", k8s.psa_labels("restricted"), GKE_CRITICAL_PODS))
        # Uninstalling Kueue deletes its CRDs and with them every Workload in the cluster: protected.
        # Everything below needs the CRDs of the release and its webhooks answering (components/render/webhooks.py).
        decided = self.plan.addons["kueue"]
        self.install(
            "kueue",
            plain(decided.values),
            [*before, *release_deps],
            probe=decided.probe,
            protect=self.plan.protect["schedulerReleases"],
        )
        ready = self.ready()
        crs = self.after_release()
        labels = derive.MANAGED_BY

        def cr(res_name: str, kind: str, obj_name: str, body: dict[str, Any], namespace: Any = None, o=crs):
            meta: dict[str, Any] = {"name": obj_name, "labels": labels}
            if namespace:
                meta["namespace"] = namespace
            return k8s.kube_object(res_name, api_version=API, kind=kind, metadata=self.gated(meta), spec=body, opts=o)

        for pc in self.plan.priority_classes:
            # value and description sit at the top level, not under spec
            k8s.kube_object(
                f"workload-priority-{pc.name}",
                API,
                "WorkloadPriorityClass",
                crs,
                metadata=self.gated({"name": pc.name, "labels": labels}),
                value=pc.value,
                description=pc.description,
            )

        flavor_deps: list[pulumi.Resource] = list(ready)
        objects = self.plan.kueue
        assert objects is not None  # Kueue is installed: the plan has its objects
        if objects.topology_levels is not None:
            topology_opts = pulumi.ResourceOptions.merge(crs, replacement_options(TOPOLOGY_IMMUTABLE))
            flavor_deps.append(
                cr(
                    "topology",
                    "Topology",
                    TOPOLOGY_NAME,
                    {"levels": [{"nodeLabel": lbl} for lbl in objects.topology_levels]},
                    o=topology_opts,
                )
            )
        flavor_opts = self.child(flavor_deps)
        # Kueue objects by the name a ClusterQueue references them with (a flavor's, an admission check's).
        flavors: dict[str, pulumi.Resource] = {
            DEFAULT_FLAVOR: cr("flavor-default", "ResourceFlavor", DEFAULT_FLAVOR, {}, o=flavor_opts)
        }
        for pool in self.plan.pools.values():
            if pool.kueue_flavor is None:
                continue  # Volcano hands its GPUs out: no ClusterQueue may name it, a flavor would admit nothing
            opts = pulumi.ResourceOptions.merge(flavor_opts, replacement_options(pool.kueue_flavor_immutable))
            body = plain(pool.kueue_flavor_spec)
            flavors[pool.name] = cr(f"flavor-{pool.name}", "ResourceFlavor", pool.kueue_flavor, body, o=opts)
        checks: dict[str, pulumi.Resource] = {}
        for ac in objects.provisioning_checks:
            prc = cr(f"{ac.pool}-provisioning-config", "ProvisioningRequestConfig", ac.name, plain(ac.config_spec))
            checks[ac.name] = cr(
                f"{ac.pool}-admission-check",
                "AdmissionCheck",
                ac.name,
                {
                    "controllerName": PROVISIONING_CONTROLLER,
                    "parameters": {"apiGroup": API.split("/")[0], "kind": "ProvisioningRequestConfig", "name": ac.name},
                },
                o=self.after_release(prc),
            )
        self.cluster_queues = self._tenant_queues(cr, ready, flavors, checks, namespaces or {})
        self.register_outputs({"namespace": self.chart.namespace, "clusterQueues": self.cluster_queues})

    def _tenant_queues(
        self,
        cr,
        ready: list[pulumi.Resource],
        flavors: Mapping[str, pulumi.Resource],
        checks: Mapping[str, pulumi.Resource],
        namespaces: Mapping[str, pulumi.Input[str]],
    ) -> dict[str, str]:
        """Each Kueue tenant's ClusterQueue (after the flavors and checks it names) and LocalQueue (in its namespace):
        tenant name -> ClusterQueue name."""
        cluster_queues: dict[str, str] = {}
        # A tenant's queues are protected with its namespace (protect.tenantNamespaces): removing a tenant that
        # still runs work deleted its LocalQueue (its new jobs inadmissible: QuotaReserved False, Inadmissible)
        # and left its ClusterQueue terminating under Kueue's resource-in-use finalizer while workloads were
        # admitted (kueue v0.19.2 pkg/controller/core/clusterqueue_controller.go Reconcile), the `pulumi up`
        # waiting on it for the provider's 10-minute delete timeout, then failing on the protected namespace
        # (seen with the real Kueue under the real engine: tests/sched/test_day2_under_load.py). docs/day2.md.
        protect_tenant = self.plan.protect["tenantNamespaces"]
        # Only the tenants Kueue admits for: a Volcano tenant's ClusterQueue would admit nothing (its namespace
        # is outside managedJobsNamespaceSelector) and lend its quota to the cohort while Volcano placed pods
        # on the same GPUs (derive.pool_schedulers).
        for tenant in self.plan.tenants.values():  # the plan's Kueue tenants, in stack-file order
            if tenant.cluster_queue_spec is None:
                continue
            body = plain(tenant.cluster_queue_spec)
            cq = cr(
                f"{tenant.name}-cluster-queue",
                "ClusterQueue",
                tenant.cluster_queue,
                body,
                o=self.child(
                    [*ready, *(flavors[n] for n in queue_flavors(body)), *(checks[n] for n in queue_checks(body))],
                    protect=protect_tenant,
                ),
            )
            cluster_queues[tenant.name] = tenant.cluster_queue
            cr(
                f"{tenant.name}-local-queue",
                "LocalQueue",
                tenant.local_queue,
                plain(tenant.local_queue_spec),
                namespace=namespaces.get(tenant.name, tenant.namespace),
                o=self.after_release(cq, protect=protect_tenant),
            )
        return cluster_queues
