"""The plan: everything the platform decides for a stack, in one frozen, pure-data value (issue 28).

A compiler's picture: the stack file is the source, ``loader.load_spec`` the front end (parse and check), this
module the IR, and the components the back ends. One pass (``build``) turns the validated spec into per-pool,
per-tenant and per-add-on decisions, made by the same functions the components call (``derive``, ``cost``,
``tenancy``, ``kueue``...), so the plan and what is deployed cannot disagree. ``gpu-platform plan STACK`` prints
it before any ``pulumi up`` (``--json`` for the document), the stack outputs are a projection of it, and
``tests/snapshots/plans/<stack>.json`` holds each shipped stack's plan, so a change to what the platform decides
shows up as a plan diff in review.

Pure data: tuples and read-only mappings (``to_json`` gives plain JSON), no resources, no Pulumi.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..data import versions
from ..spec.model import NodePool, StackSpec, Tenant
from . import ceilings, cost, derive, mirror
from .frozen import freeze as _freeze, plain as plain

if TYPE_CHECKING:
    from .aws.cluster_create import EksCreatePlan
    from .aws.karpenter import KarpenterPlan
    from .aws.plan import AwsPlan
    from .cluster_stack import ClusterStackPlan
    from .dra import DraPlan
    from .existing import ExistingClusterPlan
    from .fleet import FleetPlan, FleetWorkerPlan
    from .gcp.cluster_create import GkeCreatePlan
    from .gcp.plan import GkePlan
    from .images import ImagesPlan
    from .kueue import KueueObjects
    from .monitoring import MonitoringPlan
    from .reservations import ReservationPlan
    from .storage import StoragePlan

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class PoolPlan:
    """A pool's nodes as the provisioner makes them and a scheduler sees them."""

    name: str
    provisioner: str  # managed (EKS node group) | karpenter | gke | existing
    gpu_model: str
    gpus_per_node: int
    capacity: str  # on-demand | spot | reserved ...
    min_nodes: int
    max_nodes: int
    node_selector: Mapping[str, str]
    labels: Mapping[str, str]  # every label a node carries
    taints: tuple[Mapping[str, Any], ...]
    tolerations: tuple[Mapping[str, str], ...]
    device_plugin: str  # who advertises the GPUs: operator | gke | bottlerocket | dra
    sharing: Mapping[str, Any] | None  # strategy, replicas / layout, and the device-plugin or MIG config name
    units_per_gpu: Mapping[str, int]  # what one GPU advertises, per resource name
    units_per_node: Mapping[str, int]
    max_units: Mapping[str, int]
    schedulers: tuple[str, ...]  # who hands out its GPUs: kueue | volcano | default
    kueue_flavor: str | None  # the ResourceFlavor naming it (None: no Kueue, or Volcano's pool)
    kueue_flavor_spec: Mapping[str, Any] | None  # that ResourceFlavor's spec (node labels, taints, topology)
    kueue_flavor_immutable: tuple[str, ...]  # its fields Kueue refuses to change: a change replaces it
    one_unit_opt_in: bool  # shared pool a pod reaches only by tolerating gpu-platform/shared-gpu
    efa: bool
    price: Mapping[str, Any]  # USD per node-hour (on-demand, spot), per GPU-hour and per unit-hour
    # what explain, the summary and the cost report read of the pool (issue 28: they read the plan)
    instance_types: tuple[str, ...]
    max_gpus: int  # the most physical GPUs it may bring
    os: str  # the nodes' OS: al2023 | bottlerocket | cos | ubuntu ...
    topology_aware: bool
    queued_provisioning: bool  # GKE's Dynamic Workload Scheduler brings its nodes
    flavor_class: str  # dedicated | spot | queued | shared: where tenants' flavor orders put it
    provisioning_class: str | None  # the ProvisioningRequest class of its Kueue admission check (None: none)
    admission_check: str | None  # that check's name
    advertises: Mapping[str, int]  # what one node advertises: its GPU units and EFA interfaces
    cold_start: bool  # a Kueue-admitted workload may wait for its nodes from zero
    tenant_quota_units: Mapping[str, int]  # the sum of the tenants' nominal quotas on it
    tenant_quota_gpus: int  # the same in physical GPUs
    # GPUs (and units) it may bring beyond the Kueue tenants' nominal quotas on it: Kueue never admits onto them
    # (it lends quota, not capacity; ``ceilings.uncovered_gpus``). None where Kueue does not hand the pool out
    uncovered_gpus: int | None
    uncovered_units: Mapping[str, int] | None
    cost: Mapping[str, Any]  # its entry of the cost report (``cost.pool_doc``): prices, GPUs, hourly USD


@dataclass(frozen=True)
class TenantPlan:
    """What a tenant gets: its namespace and guards, quotas per pool, borrowing and lending, queues."""

    name: str
    namespace: str
    namespace_labels: Mapping[str, str]
    namespace_annotations: Mapping[str, str]
    pod_security: str
    scheduler: str | None  # kueue | volcano | None
    priority_ceiling: str
    forbidden_priority_classes: tuple[str, ...]
    quota_hard: Mapping[str, str]  # the namespace's ResourceQuota spec.hard
    gpu_quota: Mapping[str, int]  # nominal units per resource name
    gpu_limit: Mapping[str, int]  # the ResourceQuota's cap, with borrowing
    pool_units: Mapping[str, Mapping[str, int]]  # pool -> nominal units
    # pool -> units it can hold at most (``ceilings``): Kueue's maximum capacity on the pool's flavor for a Kueue
    # tenant (its nominal quota plus what the cohort's other queues lend there), a Volcano queue's capability
    # part, or the nominal quota without a scheduler
    pool_ceiling_units: Mapping[str, Mapping[str, int]]
    pool_lent_units: Mapping[str, Mapping[str, int]]  # pool -> units its ClusterQueue lends its cohort (Kueue only)
    lending_limits: Mapping[str, int]
    cohort: str | None
    local_queue: str | None
    cluster_queue: str | None
    volcano_queue: str | None
    volcano_queue_spec: Mapping[str, Any] | None  # the Volcano Queue's spec (weight, capability, guarantee)
    cluster_queue_spec: Mapping[str, Any] | None  # the Kueue ClusterQueue's spec (flavors, quotas, cohort)
    local_queue_spec: Mapping[str, Any] | None
    # what explain, the summary and the cost report read of the tenant (issue 28: they read the plan)
    pool_gpus: Mapping[str, int]  # pool -> GPUs of its nominal quota (the stack's gpuQuota)
    pool_ceiling_gpus: Mapping[str, int]  # pool -> GPUs it can hold at most (pool_ceiling_units in GPUs)
    borrowing_limits: Mapping[str, int]  # pool -> GPUs it may borrow (a pool left out: no limit)
    flavor_order: tuple[str, ...]  # its pools in the order Kueue tries their flavors
    never_preempts: bool  # every class at or below its ceiling is preemptionPolicy Never
    volcano_queue_cap: Mapping[str, int] | None  # units its Volcano queue holds at most, every pool at its max
    volcano_queue_cap_at_rest: Mapping[str, int] | None  # units it enqueues at most from an idle cluster
    cost: Mapping[str, Any]  # its entry of the cost report (``cost.tenant_doc``): GPUs and hourly USD


@dataclass(frozen=True)
class AddonPlan:
    """An add-on: on or off, its pinned chart and where it comes from, and the stack options its values read."""

    key: str
    enabled: bool
    chart: str
    version: str
    source: str
    namespace: str
    release: str
    options: Mapping[str, Any]
    values: Mapping[str, Any] | None = None  # the release's values, where they follow from the spec alone
    probe: Any = None  # its webhook gate's probe (plan/webhooks.py Probe): Kueue, Volcano, the Trainer
    gate_job: Mapping[str, Any] | None = None  # the gate's Job spec (system nodes, image registry), with a probe
    # The cloud admits system-critical pods outside kube-system only under a ResourceQuota (GKE): the add-on's
    # namespace gets one where its pods run at such a priority.
    critical_pods_quota: bool = False
    # What the add-on's namespace carries and holds before its release, where it follows from the spec (the GPU
    # Operator): its labels, the system-critical pods the GKE quota admits (None: no quota), and ConfigMaps by
    # resource name ({"name": ..., "data": ...}: the device-plugin and MIG configurations).
    namespace_labels: Mapping[str, str] | None = None
    critical_pods: int | None = None
    config_maps: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: MappingProxyType({}))

    def chart_ref(self) -> versions.Chart:
        """The chart as the stack takes it (``versions.for_spec``: version override and source applied), what
        ``versions.release_args`` names a release by; ``source`` says where it comes from (a Helm repository,
        an oci:// registry, or the folder of a local archive, which ``chart`` then is)."""
        kind = versions.source_kind(self.source)
        return versions.Chart(
            key=self.key,
            chart=self.chart,
            version=self.version,
            repository=self.source if kind == "repository" else None,
            namespace=self.namespace,
            release=self.release,
            archive=self.chart if kind == "path" else None,
        )


@dataclass(frozen=True)
class PriorityClassPlan:
    """A PriorityClass the platform creates."""

    name: str
    value: int
    preemption_policy: str
    global_default: bool
    description: str  # what the PriorityClass object says (a default text when the stack gives none)


@dataclass(frozen=True)
class Plan:
    """Every fact the platform decides for one stack: what the renderers build and the CLI reports."""

    stack: str
    cloud: str
    pools: Mapping[str, PoolPlan]
    tenants: Mapping[str, TenantPlan]
    addons: Mapping[str, AddonPlan]
    priority_classes: tuple[PriorityClassPlan, ...] = ()
    protect: Mapping[str, bool] = field(default_factory=lambda: MappingProxyType({}))
    gke: GkePlan | None = None  # gcp stacks: the GKE cluster, node service account and node pools
    karpenter: KarpenterPlan | None = None  # components/plan/aws/karpenter.py; None without Karpenter
    aws: AwsPlan | None = None  # the EKS cluster, managed node groups, EFA, Cluster Autoscaler (aws only)
    monitoring: MonitoringPlan | None = None  # the DCGM exporter's scrape, alerts, dashboard (None: addons.dcgm off)
    dra: DraPlan | None = None  # DeviceClasses and claim templates (None: GPUs as extended resources)
    existing: ExistingClusterPlan | None = None  # how the provider reaches an existing cluster (None: other clouds)
    cost: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))  # region, spot discount, budget
    kueue: KueueObjects | None = None  # Kueue's Topology and admission checks (None: no Kueue)
    # pool -> its reserved capacity (plan/reservations.py; explain and the summary read it); None: no reservation
    reservations: Mapping[str, ReservationPlan] | None = None
    storage: StoragePlan | None = None  # shared file systems: classes, claims, quotas, CSI drivers (None: none)
    gke_create: GkeCreatePlan | None = None  # components/plan/gcp/cluster_create.py; None: the cluster is found
    eks_create: EksCreatePlan | None = None  # the EKS cluster and VPC the platform creates (None: found or referenced)
    cluster_stack: ClusterStackPlan | None = None  # the stack whose outputs give the cluster (None: not referenced)
    fleet: FleetPlan | None = None  # a MultiKueue manager's workers and tenants (plan/fleet.py; None: not one)
    fleet_worker: FleetWorkerPlan | None = None  # a MultiKueue worker's grant to its manager (None: not one)
    images: ImagesPlan | None = None  # image delivery: mirror, warm images per pool (None: no image section)

    def to_dict(self) -> dict[str, Any]:
        return {"schemaVersion": SCHEMA_VERSION, **plain(self)}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"


# ------------------------------------------------------------------------------------------------ pools


def provisioner(spec: StackSpec, pool: NodePool) -> str:
    if spec.cloud == "gcp":
        return "gke"
    if spec.cloud == "existing":
        return "existing"
    return pool.provisioner  # managed | karpenter


def node_labels(spec: StackSpec, pool: NodePool) -> dict[str, str]:
    """The labels a node of the pool carries: EKS managed node groups add the Cluster Autoscaler's GPU label."""
    if spec.cloud == "aws" and pool.provisioner == "managed":
        from .aws import managed_pools

        return managed_pools.labels(spec, pool)
    return derive.pool_labels(spec, pool)


def _sharing(pool: NodePool) -> dict[str, Any] | None:
    s = pool.sharing
    if s is None:
        return None
    out: dict[str, Any] = {"strategy": s.strategy, "config": derive.config_name(pool)}
    if s.strategy == "mig":
        out["layout"] = dict(s.layout or {})
    else:
        out["replicas"] = s.replicas
    if s.strategy == "time-slicing":  # the device plugin refuses a container more than one unit
        out["failRequestsGreaterThanOne"] = s.fail_requests_greater_than_one
    return out


def _price(spec: StackSpec, pool: NodePool) -> dict[str, Any]:
    c = cost.pool_cost(spec, pool)
    return {
        "onDemandPerNodeHour": c.on_demand.usd,
        "spotPerNodeHour": c.spot.usd if c.spot is not None else None,
        "perGpuHour": c.per_gpu_hour,
        "perUnitHour": c.per_unit_hour,
        "maxHourly": c.max_hourly,
    }


def pool_plan(spec: StackSpec, pool: NodePool) -> PoolPlan:
    from . import kueue as kueue_plan
    from .aws import efa

    schedulers = derive.pool_schedulers(spec).get(pool.name, ())
    flavor = pool.name if spec.addons.kueue and pool.name not in derive.volcano_pools(spec) else None
    check = kueue_plan.provisioning_class(spec, pool) if spec.addons.kueue else None
    units_per_node = derive.pool_units(spec, pool, pool.gpu.per_node)
    efa_interfaces = {efa.EFA_RESOURCE: efa.interfaces_per_node(pool)} if efa.efa_enabled(spec, pool) else {}
    quota = derive.pool_capacity_report(spec, pool.name)
    uncovered = ceilings.uncovered_gpus(spec, pool)
    return PoolPlan(
        name=pool.name,
        provisioner=provisioner(spec, pool),
        gpu_model=pool.gpu.model,
        gpus_per_node=pool.gpu.per_node,
        capacity=pool.capacity,
        min_nodes=pool.min_nodes,
        max_nodes=pool.node_cap,
        node_selector=_freeze({derive.POOL_LABEL: pool.name}),
        labels=_freeze(node_labels(spec, pool)),
        taints=_freeze([{"key": t.key, "value": t.value, "effect": t.effect} for t in derive.node_taints(pool)]),
        tolerations=_freeze(derive.tolerations(pool)),
        device_plugin=derive.pool_device_plugin(spec, pool),
        sharing=_freeze(_sharing(pool)),
        units_per_gpu=_freeze(derive.units_per_gpu(spec, pool)),
        units_per_node=_freeze(units_per_node),
        max_units=_freeze(derive.pool_capacity(spec, pool)),
        schedulers=tuple(schedulers),
        kueue_flavor=flavor,
        kueue_flavor_spec=_freeze(kueue_plan.flavor_spec(spec, pool)) if flavor else None,
        kueue_flavor_immutable=tuple(kueue_plan.flavor_immutable(pool)) if flavor else (),
        one_unit_opt_in=pool.name in derive.opt_in_shared_pools(spec),
        efa=efa.efa_enabled(spec, pool),
        price=_freeze(_price(spec, pool)),
        instance_types=tuple(pool.instance_types),
        max_gpus=pool.gpu_cap,
        os=derive.node_os(spec, pool),
        topology_aware=pool.topology_aware,
        queued_provisioning=spec.cloud == "gcp" and pool.gke.queued_provisioning,
        flavor_class=derive.flavor_class(spec, pool),
        provisioning_class=check,
        admission_check=kueue_plan.admission_check_name(spec, pool) if check else None,
        advertises=_freeze({**units_per_node, **efa_interfaces}),
        cold_start=pool.name in {p.name for p in derive.cold_start_pools(spec)},
        tenant_quota_units=_freeze(quota.quota_units),
        tenant_quota_gpus=ceilings.pool_quota_gpus(spec, pool.name),
        uncovered_gpus=uncovered,
        uncovered_units=_freeze(derive.pool_units(spec, pool, uncovered)) if uncovered is not None else None,
        cost=_freeze(cost.pool_doc(spec, pool)),
    )


# ---------------------------------------------------------------------------------------------- tenants


def _draining(spec: StackSpec) -> bool:
    """A fleet worker being retired (``fleetWorker.draining``): its LocalQueues hold (plan/fleet.py)."""
    return spec.fleet_worker is not None and spec.fleet_worker.draining


def tenant_plan(spec: StackSpec, tenant: Tenant) -> TenantPlan:
    from . import kueue as kueue_plan, tenancy, volcano as volcano_plan

    scheduler = derive.tenant_scheduler(spec, tenant)
    limit = ceilings.tenant_ceiling_units(spec, tenant)  # its ResourceQuota's GPU caps
    kueue = scheduler == "kueue" and spec.addons.kueue
    volcano = tenant.name in {t.name for t in derive.volcano_tenants(spec)}
    return TenantPlan(
        name=tenant.name,
        namespace=tenant.name,
        namespace_labels=_freeze({**tenancy.namespace_labels(tenant), **tenancy.scheduler_label(spec, tenant)}),
        namespace_annotations=_freeze(tenancy.namespace_annotations(spec, tenant)),
        pod_security=tenant.pod_security,
        scheduler=scheduler,
        priority_ceiling=tenant.priority,
        forbidden_priority_classes=tuple(derive.priority_ceiling_excluded(spec, tenant)),
        quota_hard=_freeze(tenancy.quota_hard(spec, tenant, limit)),
        gpu_quota=_freeze(derive.tenant_units(spec, tenant)),
        gpu_limit=_freeze({k: v for k, v in limit.items() if v}),
        pool_units=_freeze(derive.tenant_pool_units(spec, tenant)),
        pool_ceiling_units=_freeze(ceilings.tenant_pool_ceiling_units(spec, tenant)),
        pool_lent_units=_freeze(kueue_plan.tenant_lent_units(spec, tenant) if kueue else {}),
        lending_limits=_freeze(derive.tenant_lending_limits(spec, tenant) if kueue else {}),
        cohort=derive.tenant_cohort(spec, tenant) if kueue else None,
        local_queue=spec.scheduling.local_queue_name if kueue else None,
        cluster_queue=tenant.name if kueue else None,
        volcano_queue=tenant.name if volcano else None,
        volcano_queue_spec=_freeze(volcano_plan.queue_spec(spec, tenant)) if volcano else None,
        cluster_queue_spec=_freeze(kueue_plan.quotas(spec).specs[tenant.name]) if kueue else None,
        local_queue_spec=_freeze(kueue_plan.local_queue_spec(tenant, draining=_draining(spec))) if kueue else None,
        pool_gpus=_freeze(dict(tenant.gpu_quota)),
        pool_ceiling_gpus=_freeze(cost.tenant_gpus(spec, tenant)[1]),
        borrowing_limits=_freeze(dict(tenant.borrowing_limit)),
        flavor_order=tuple(p.name for p in kueue_plan.tenant_pools(spec, tenant)),
        never_preempts=derive.tenant_never_preempts(spec, tenant),
        volcano_queue_cap=_freeze(derive.volcano_queue_cap(spec, tenant)) if volcano else None,
        volcano_queue_cap_at_rest=_freeze(derive.volcano_queue_cap(spec, tenant, at_rest=True)) if volcano else None,
        cost=_freeze(cost.tenant_doc(spec, tenant)),
    )


# ----------------------------------------------------------------------------------------------- add-ons


# add-on key -> (the chart, whether the stack installs it, the stack options its values read)
def _addons(spec: StackSpec) -> list[tuple[versions.Chart, bool, dict[str, Any]]]:
    from . import rules_core

    installed = {c.key for c in rules_core.installed_charts(spec)}

    def dump(model: Any) -> dict[str, Any]:
        return model.model_dump(mode="json", by_alias=True, exclude_none=True)

    options = {
        "gpuOperator": dump(spec.gpu_operator),
        "kubePrometheusStack": dump(spec.monitoring),
        "dcgmExporter": dump(spec.monitoring),
        "kueue": dump(spec.scheduling),
        "volcano": dump(spec.scheduling),
        "karpenter": dump(spec.karpenter),
        "karpenterCrd": {},
        "clusterAutoscaler": {},
        "efaDevicePlugin": {},
        "jobset": {},
        "leaderWorkerSet": {},
        "kuberay": {},
        "trainer": {},
        "spegel": {},
    }
    return [(c, c.key in installed, options.get(c.key, {})) for c in versions.CHARTS.values()]


def addon_plan(spec: StackSpec, chart: versions.Chart, enabled: bool, options: dict[str, Any]) -> AddonPlan:
    from . import (
        gpu_operator,
        images,
        kueue as kueue_plan,
        monitoring,
        operators,
        prometheus_stack,
        volcano as volcano_plan,
        webhooks,
    )

    c = versions.for_spec(chart, spec)
    # the add-ons whose values (and webhook gate) follow from the spec alone; the others take cloud outputs
    values_of = {
        "gpuOperator": gpu_operator.operator_values,
        "dcgmExporter": monitoring.dcgm_exporter_values,
        "kubePrometheusStack": prometheus_stack.helm_values,
        "kueue": kueue_plan.helm_values,
        "volcano": volcano_plan.helm_values,
        **operators.VALUES,
        "spegel": images.spegel_values,
    }
    probe_of = {
        "kueue": kueue_plan.webhook_probe,
        "volcano": volcano_plan.webhook_probe,
        "trainer": operators.trainer_probe,
    }
    values = values_of.get(chart.key) if enabled else None
    probe = probe_of.get(chart.key)(spec) if enabled and chart.key in probe_of else None
    quota = enabled and spec.cloud == "gcp"
    operator = enabled and chart.key == "gpuOperator"
    return AddonPlan(
        key=chart.key,
        enabled=enabled,
        chart=c.chart,
        version=c.version,
        source=c.source,
        namespace=c.namespace,
        release=c.release,
        options=_freeze(options),
        # every image block of the chart through the stack's mirror (imageRegistry, images.mirror: pull-through)
        values=_freeze(mirror.chart_values(spec, chart.key, values(spec)), keep_order=True) if values else None,
        probe=probe,
        gate_job=_freeze(webhooks.job_spec(spec, probe), keep_order=True) if probe else None,
        critical_pods_quota=quota,
        namespace_labels=_freeze(gpu_operator.operator_namespace_labels(spec), keep_order=True) if operator else None,
        critical_pods=gpu_operator.critical_pods(spec) if operator and quota else None,
        config_maps=_freeze(gpu_operator.config_maps(spec) if operator else {}, keep_order=True),
    )


# --------------------------------------------------------------------------------------------------- DRA


def dra_plan(spec: StackSpec) -> DraPlan | None:
    """The stack's DRA decisions (``plan/dra.py``); None unless ``gpuOperator.allocation`` is dra."""
    from . import dra

    if not derive.dra(spec):
        return None
    return dra.DraPlan(
        device_classes=tuple(dra.device_classes(spec)),
        kueue_device_class_mappings=_freeze(dra.kueue_device_class_mappings(spec), keep_order=True),
        claim_templates=_freeze({t.name: dra.claim_templates(spec, t) for t in spec.tenants}, keep_order=True),
        kubernetes_version=spec.cluster.kubernetes_version,
    )


# ------------------------------------------------------------------------------------------------- build


def build(spec: StackSpec, stack: str) -> Plan:
    """The plan of a validated spec (``loader.load_spec``): one pass, no resources; made once per spec (the
    program, the summary and the outputs read the same one)."""
    decided = _decide(spec)
    return decided if decided.stack == stack else replace(decided, stack=stack)


@derive.per_spec
def _decide(spec: StackSpec) -> Plan:
    from .frozen import sharing

    with sharing():  # equal frozen values one object (the plan lives to the end of the synth)
        decided = _decided(spec)
    # Kueue's quota tree (every ClusterQueue's spec unfrozen, its nodes and quotas: ~6 MiB at 1,000 tenants, alive
    # through the render) was needed to decide the tenants' queues, ceilings and lent units, which the plan keeps
    from . import kueue as kueue_plan

    derive.forget(spec, kueue_plan.quotas)
    return decided


# A cloud's plan modules are imported for its stacks only, as its SDK is by its renderers: an aws stack needs no
# gcp/plan.py or cluster_create.py, a gcp stack no aws/plan.py or aws/karpenter.py (~3 to 5 ms of dataclasses and
# tables each). Each builder gives None on other clouds; the check before the import says the same.


def _gke(spec: StackSpec) -> GkePlan | None:
    if spec.cloud != "gcp":
        return None
    from .gcp import plan as gcp_plan

    return gcp_plan.build(spec)


def _aws(spec: StackSpec) -> AwsPlan | None:
    if spec.cloud != "aws":
        return None
    from .aws import plan as aws_plan

    return aws_plan.build(spec)


def _gke_create(spec: StackSpec) -> GkeCreatePlan | None:
    if spec.cloud != "gcp":
        return None
    from .gcp import cluster_create as gcp_create

    return gcp_create.build(spec)


def _karpenter(spec: StackSpec) -> KarpenterPlan | None:
    if spec.cloud != "aws":
        return None
    from .aws.karpenter import karpenter_plan

    return karpenter_plan(spec)


# plan/fleet.py likewise for a fleet manager or worker only (its rules import it after the same check), and
# plan/existing.py for an existing cluster only


def _fleet(spec: StackSpec) -> FleetPlan | None:
    if spec.fleet is None:
        return None
    from . import fleet

    return fleet.build(spec, build)


def _fleet_worker(spec: StackSpec) -> FleetWorkerPlan | None:
    if spec.fleet_worker is None:
        return None
    from . import fleet

    return fleet.worker_build(spec)


def _existing(spec: StackSpec) -> ExistingClusterPlan | None:
    if spec.cloud != "existing":
        return None
    from .existing import existing_cluster_plan

    return existing_cluster_plan(spec)


def _decided(spec: StackSpec) -> Plan:
    from . import cluster_stack, images, kueue as kueue_plan, monitoring, reservations, storage
    from .aws import cluster_create

    return Plan(
        stack="",
        cloud=spec.cloud,
        pools=_freeze({p.name: pool_plan(spec, p) for p in spec.node_pools}, keep_order=True),
        tenants=_freeze({t.name: tenant_plan(spec, t) for t in spec.tenants}, keep_order=True),
        addons=_freeze({c.key: addon_plan(spec, c, on, o) for c, on, o in _addons(spec)}),
        priority_classes=tuple(
            PriorityClassPlan(
                name=c.name,
                value=c.value,
                preemption_policy=c.preemption_policy,
                global_default=c.global_default,
                description=c.description or f"gpu-platform priority tier {c.name}",
            )
            for c in spec.priority_classes
        ),
        protect=_freeze(
            {
                "tenantNamespaces": spec.protect.tenant_namespaces,
                "schedulerReleases": spec.protect.scheduler_releases,
            }
        ),
        gke=_gke(spec),
        karpenter=_karpenter(spec),
        aws=_aws(spec),
        monitoring=monitoring.monitoring_plan(spec),
        dra=dra_plan(spec),
        existing=_existing(spec),
        cost=_freeze(cost.stack_doc(spec)),
        kueue=kueue_plan.kueue_objects(spec),
        reservations=_freeze(reservations.reservations_plan(spec), keep_order=True),
        storage=storage.storage_plan(spec),
        gke_create=_gke_create(spec),
        eks_create=cluster_create.eks_create_plan(spec),
        cluster_stack=cluster_stack.cluster_stack_plan(spec),
        fleet=_fleet(spec),
        fleet_worker=_fleet_worker(spec),
        images=images.build(spec, {p.name: cost.cold_pull(spec, p) for p in spec.node_pools}),
    )
