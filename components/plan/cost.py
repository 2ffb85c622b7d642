"""What the platform can cost: per pool, per tenant and for the stack at its maximum size, from the dated list
prices of ``components/data/prices.py`` and the stack's ``pricing`` overrides. Nothing here calls a cloud API.

- A pool's node price is the dearest of its instance types (Karpenter and EKS may launch any of them), so
  max-scale figures are upper bounds. If any of its types has no price, the pool's cost is unknown.
- Spot pools cost their spot price (GCP: catalog Spot; AWS: an estimate, on-demand less ``spotDiscount``); a
  Karpenter spot pool with ``onDemandFallback`` costs its spot part at spot and its on-demand part at
  on-demand (``karpenter.fallback_split``).
- Per GPU-hour: the pool's max-scale cost / its GPU cap. Per scheduler unit: a GPU's cost spread over what it
  advertises (``derive.units_per_gpu``): 1/replicas for time-slicing and MPS, and for MIG in proportion to
  each profile's compute slices.
- Tenants: the GPUs of their nominal quota and of their borrowing ceiling (``derive``) at the pool's per-GPU
  price.

The same document (``report``) is ``cost.json`` in the synth output, the ``cost`` stack output, and the data
of the ConfigMap the budget policies read (``CONFIGMAP_NAME``; the policy pack needs no price table of its own).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..data import catalog, prices, versions
from ..data.prices import Price
from ..spec.model import DEFAULT_IMAGE_GIB, NodePool, Problem, StackSpec, Tenant, key, rule
from . import ceilings, derive, json_text
from .cost_text import markdown as markdown, usd as usd  # re-exported: the report's text for a person
from .frozen import plain

CONFIGMAP_NAME = "gpu-platform-cost"
CONFIGMAP_NAMESPACE = "kube-system"  # exists on every cluster; tenants cannot read it
CONFIGMAP_KEY = "cost.json"
COST_LABEL = "gpu-platform/cost"  # the budget policies find the ConfigMap by this label


# ------------------------------------------------------------------------------------------ rules


@rule
def pricing_rules(spec: StackSpec) -> Iterator[Problem]:
    used = {t for p in spec.node_pools for t in p.instance_types}
    for name in spec.pricing.overrides:
        if name not in used:
            yield Problem(
                key("pricing", "overrides", name),
                f"no pool uses {name!r} (pools use: {', '.join(sorted(used)) or 'none'})",
            )
    for name, o in spec.pricing.overrides.items():
        if o.on_demand is None and o.spot is None:
            yield Problem(key("pricing", "overrides", name), "give onDemand, spot or both")
    if spec.pricing.spot_discount is not None and spec.cloud != "aws":
        yield Problem(
            key("pricing", "spotDiscount"),
            "applies to aws only (GCP Spot prices come from the catalog; override them per type instead)",
        )
    tenants = {t.name for t in spec.tenants}
    for name in spec.budget.tenants:
        if name not in tenants:
            yield Problem(key("budget", "tenants", name), f"unknown tenant (tenants: {', '.join(sorted(tenants))})")


# ------------------------------------------------------------------------------------------ prices


def region(spec: StackSpec) -> str | None:
    if spec.cloud == "aws":
        return spec.cluster.region
    if spec.cloud == "gcp":
        return prices.region_of(spec.cluster.location)
    return None


def spot_discount(spec: StackSpec) -> float:
    d = spec.pricing.spot_discount
    return prices.DEFAULT_AWS_SPOT_DISCOUNT if d is None else d


def type_price(spec: StackSpec, type_name: str, capacity: str) -> Price:
    """One node of ``type_name``: the stack's override, else the catalog (AWS spot: estimated)."""
    override = spec.pricing.overrides.get(type_name)
    if override is not None:
        value = override.spot if capacity == "spot" else override.on_demand
        if value is not None:
            return Price(value, source=prices.STACK_CONFIG)
    if capacity == "spot" and spec.cloud == "aws":
        od = type_price(spec, type_name, "on-demand")
        if od.usd is None:
            return od
        discount = spot_discount(spec)
        return Price(
            round(od.usd * (1 - discount), 6),
            source=f"estimate: on-demand {od.usd:g} less {discount:.0%}, {prices.SPOT_DISCOUNT_BASIS}",
            as_of=od.as_of,
            estimate=True,
        )
    return prices.list_price(spec.cloud, type_name, region(spec), capacity)


def node_price(spec: StackSpec, pool: NodePool, capacity: str) -> Price:
    """The dearest of the pool's instance types (any of them may be launched): an upper bound."""
    if not pool.instance_types:
        return prices.unknown("the pool names no instance/machine type")
    found = [type_price(spec, t, capacity) for t in pool.instance_types]
    missing = [p for p in found if p.usd is None]
    if missing:
        return prices.unknown("; ".join(p.reason or "" for p in missing))
    return max(found, key=lambda p: p.usd or 0.0)


# ------------------------------------------------------------------------------------------ pools


@dataclass(frozen=True)
class PoolCost:
    """What a pool's nodes cost per hour, on demand and on spot, and its GPUs on each at max scale. Its per-GPU
    prices are worked out once (``pool_cost`` keeps one per pool, and every tenant's cost reads them per pool it
    reaches: ~1,000 reads at 200 tenants); its fields, being frozen, cannot change under them."""

    pool: NodePool
    on_demand: Price  # per node-hour
    spot: Price | None  # per node-hour; spot pools only
    spot_gpus: int  # at max scale: GPUs on spot capacity
    on_demand_gpus: int  # at max scale: GPUs on on-demand capacity
    units_per_gpu: dict[str, int]

    @functools.cached_property
    def per_gpu_on_demand(self) -> float | None:
        return None if self.on_demand.usd is None else self.on_demand.usd / self.pool.gpu.per_node

    @functools.cached_property
    def per_gpu_spot(self) -> float | None:
        if self.spot is None or self.spot.usd is None:
            return None
        return self.spot.usd / self.pool.gpu.per_node

    def _hourly(self, spot_gpus: int, on_demand_gpus: int) -> float | None:
        """USD per hour of that many GPUs, at the source's precision (nothing rounded)."""
        total = 0.0
        for gpus, per_gpu in ((spot_gpus, self.per_gpu_spot), (on_demand_gpus, self.per_gpu_on_demand)):
            if gpus:
                if per_gpu is None:
                    return None
                total += gpus * per_gpu
        return total

    def hourly(self, spot_gpus: int, on_demand_gpus: int) -> float | None:
        """The same, rounded to 4 decimals for the report (derived prices use ``_hourly``)."""
        total = self._hourly(spot_gpus, on_demand_gpus)
        return None if total is None else round(total, 4)

    @property
    def max_hourly(self) -> float | None:
        return self.hourly(self.spot_gpus, self.on_demand_gpus)

    @property
    def min_gpus(self) -> int:
        return self.pool.min_nodes * self.pool.gpu.per_node

    @property
    def min_hourly(self) -> float | None:
        # minimum-size nodes run on the pool's own capacity type
        if self.pool.capacity == "spot":
            return self.hourly(self.min_gpus, 0)
        return self.hourly(0, self.min_gpus)

    @property
    def max_hourly_on_demand(self) -> float | None:
        """The pool at max scale if every node were on-demand (what spot capacity saves against)."""
        return self.hourly(0, self.pool.gpu_cap)

    @functools.cached_property
    def per_gpu_hour(self) -> float | None:
        """Per GPU-hour at max scale (the blend of spot and on-demand parts for a fallback pool)."""
        # from the unrounded total: a rounded node-hour total divided by the GPUs lost the source's precision
        total = self._hourly(self.spot_gpus, self.on_demand_gpus)
        if total is None or not self.pool.gpu_cap:
            return self.per_gpu_spot if self.pool.capacity == "spot" else self.per_gpu_on_demand
        return total / self.pool.gpu_cap

    @property
    def per_unit_hour(self) -> dict[str, float | None]:
        return {name: unit_price(self.per_gpu_hour, self.pool, name, n) for name, n in self.units_per_gpu.items()}


def unit_price(per_gpu: float | None, pool: NodePool, resource: str, count: int) -> float | None:
    """A scheduler unit's share of a GPU-hour. MIG (mixed): in proportion to the profile's compute slices among
    all slices of the GPU's layout; otherwise 1/count (time-slicing / MPS replicas, single-strategy MIG)."""
    if per_gpu is None:
        return None
    layout = pool.sharing.layout if pool.sharing and pool.sharing.strategy == "mig" else None
    prefix = "nvidia.com/mig-"
    if layout and resource.startswith(prefix):
        slices = {p: catalog.gpu_model(pool.gpu.model).mig_profiles[p].compute_slices for p in layout}
        total = sum(slices[p] * n for p, n in layout.items())
        return per_gpu * slices[resource[len(prefix) :]] / total
    return per_gpu / count


@derive.per_pool
def pool_cost(spec: StackSpec, pool: NodePool) -> PoolCost:
    spot_gpus, od_gpus = (pool.gpu_cap, 0) if pool.capacity == "spot" else (0, pool.gpu_cap)
    if pool.capacity == "spot" and pool.provisioner == "karpenter" and pool.karpenter.on_demand_fallback:
        from .aws.capacity import fallback_split

        spot_gpus, od_gpus = fallback_split(pool)
    return PoolCost(
        pool=pool,
        on_demand=node_price(spec, pool, "on-demand"),
        spot=node_price(spec, pool, "spot") if pool.capacity == "spot" else None,
        spot_gpus=spot_gpus,
        on_demand_gpus=od_gpus,
        units_per_gpu=derive.units_per_gpu(spec, pool),
    )


# ---------------------------------------------------------------------------------------- tenants


def _gpus(spec: StackSpec, pool: NodePool, units: dict[str, int]) -> int:
    per_gpu = derive.units_per_gpu(spec, pool)
    name = sorted(per_gpu)[0]
    return units.get(name, 0) // per_gpu[name]


def tenant_gpus(spec: StackSpec, tenant: Tenant) -> tuple[dict[str, int], dict[str, int]]:
    """(nominal, ceiling) physical GPUs per pool."""
    nominal = dict(sorted(tenant.gpu_quota.items()))
    ceiling = {
        name: _gpus(spec, spec.pool(name), units)
        for name, units in ceilings.tenant_pool_ceiling_units(spec, tenant).items()
    }
    return nominal, ceiling


def _sum(gpus: dict[str, int], pools: dict[str, PoolCost]) -> float | None:
    total = 0.0
    for name, n in gpus.items():
        if not n:
            continue
        per_gpu = pools[name].per_gpu_hour
        if per_gpu is None:
            return None
        total += n * per_gpu
    return round(total, 4)


# ----------------------------------------------------------------------------------------- report


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


# A cold pull (issue 39.4): "Standard Docker image pulls of 15-20 GB can take 4-6 minutes per instance" (AWS Machine
# Learning blog, "Reducing container cold start times using SOCI index on DLAMI and DLC", 2026): 3.3 to 3.75 GB a
# minute; 3.5 here. The pool's GPUs sit idle that long on every node that starts cold, at the pool's price.
COLD_PULL_GB_PER_MINUTE = 3.5
GB_PER_GIB = 1.073741824
WARM_AT_BOOT = ("snapshot", "secondary-boot-disk")  # images on disk when the node boots: no pull


def cold_pull(spec: StackSpec, pool: NodePool) -> dict[str, Any]:
    """What a cold pull of the pool's declared images costs (their sizes, else one image of the default size):
    minutes, GPU-hours and USD per node that starts cold, and for the pool scaled from zero to its max (a gang of
    16 nodes pulls 16 times); ``avoided`` where the pool's nodes boot with the images (snapshot, disk image)."""
    from . import images

    declared = images.pool_images(spec, pool)
    sizes = [w.size_gib or DEFAULT_IMAGE_GIB for w in declared] or [DEFAULT_IMAGE_GIB]
    gib = sum(sizes)
    minutes = gib * GB_PER_GIB / COLD_PULL_GB_PER_MINUTE
    c = pool_cost(spec, pool)
    node = c.spot.usd if pool.capacity == "spot" and c.spot is not None else c.on_demand.usd
    per_node = None if node is None else node * minutes / 60
    warm = images.warm_method(spec, pool)
    return {
        "gib": gib,
        "size": "stack" if declared and all(w.size_gib for w in declared) else "default",
        "minutes": round(minutes, 1),
        "gpuHoursPerNode": round(pool.gpu.per_node * minutes / 60, 2),
        "usdPerNode": _r(per_node),
        "maxNodes": pool.node_cap,
        "usdMaxScale": _r(None if per_node is None else per_node * pool.node_cap),
        "warm": warm,
        "avoided": warm in WARM_AT_BOOT,
    }


def pool_doc(spec: StackSpec, pool: NodePool) -> dict[str, Any]:
    """What the plan keeps of a pool's cost (``PoolPlan.cost``): its prices, GPUs at min and max scale and
    hourly USD; ``report_of`` adds the pool's name, shape and the tenants' quota from the rest of the plan. A stack
    with an image section (``images.wanted``) adds each pool's ``coldPull``."""
    from . import images

    c = pool_cost(spec, pool)
    uncovered = ceilings.uncovered_gpus(spec, pool)
    extra = {"coldPull": cold_pull(spec, pool)} if images.wanted(spec) else {}
    return {
        **extra,
        "uncovered": _uncovered(c, uncovered),
        "onDemandFallback": bool(
            pool.capacity == "spot" and pool.provisioner == "karpenter" and pool.karpenter.on_demand_fallback
        ),
        "gpus": {"min": c.min_gpus, "max": pool.gpu_cap, "spot": c.spot_gpus, "onDemand": c.on_demand_gpus},
        "onDemandPerNodeHour": c.on_demand.as_json(),
        "spotPerNodeHour": c.spot.as_json() if c.spot else None,
        "hourlyUsd": {"min": c.min_hourly, "max": c.max_hourly},
        "maxHourlyUsdAllOnDemand": c.max_hourly_on_demand,
        "perGpuHourUsd": _r(c.per_gpu_hour),
        "perUnitHourUsd": {k: _r(v) for k, v in sorted(c.per_unit_hour.items())},
    }


def _uncovered(c: PoolCost, gpus: int | None) -> dict[str, Any] | None:
    """The GPUs no tenant's nominal quota covers on a Kueue pool (``ceilings.uncovered_gpus``) and what they cost per
    hour at max size (the pool's per GPU-hour: a fallback pool's blend): paid for whenever the pool is scaled to
    them, never filled by a workload Kueue admits. None where Kueue does not hand the pool out."""
    if gpus is None:
        return None
    per_gpu = c.per_gpu_hour
    if not gpus:  # nothing uncovered costs nothing, priced or not
        return {"gpus": 0, "hourlyUsd": 0}
    return {"gpus": gpus, "hourlyUsd": None if per_gpu is None else round(gpus * per_gpu, 4)}


def tenant_doc(spec: StackSpec, tenant: Tenant) -> dict[str, Any]:
    """A tenant's cost (``TenantPlan.cost``): the GPUs of its nominal quota and of its borrowing ceiling per pool,
    and what they cost per hour at the pools' per-GPU prices (unrounded, then the sum rounded)."""
    nominal, ceiling = tenant_gpus(spec, tenant)
    pools = {name: pool_cost(spec, spec.pool(name)) for name in {*nominal, *ceiling}}
    return {
        "nominal": {"gpus": nominal, "hourlyUsd": _sum(nominal, pools)},
        "ceiling": {"gpus": ceiling, "hourlyUsd": _sum(ceiling, pools)},
    }


def stack_doc(spec: StackSpec) -> dict[str, Any]:
    """The stack's pricing assumptions and budget (``Plan.cost``), and the fixed costs of a created cluster."""
    fixed = fixed_costs(spec)
    return {
        "region": region(spec),
        "awsSpotDiscount": spot_discount(spec) if spec.cloud == "aws" else None,
        "budget": {"maxHourlyUsd": spec.budget.max_hourly_usd, "tenants": dict(sorted(spec.budget.tenants.items()))},
        **({"fixed": fixed} if fixed else {}),
    }


def fixed_costs(spec: StackSpec) -> list[dict[str, Any]]:
    """What a cluster the platform creates costs whatever the pools do (``cluster.create``): on aws the EKS control
    plane, the NAT gateway(s) and the system nodes; on gcp the GKE management fee, Cloud NAT and the system pool
    (``_gke_fixed``); counts at their min and max. None for a found cluster: its costs are not this stack's."""
    c = spec.cluster.create
    if c is None or spec.cloud not in ("aws", "gcp"):
        return []
    where = region(spec)
    s = c.system_nodes
    if spec.cloud == "gcp":
        items = _gke_fixed(spec, where)
    elif c.eks is None:
        return []
    else:
        nat = 1 if c.eks.nat_gateways == "one" else len(set(c.eks.availability_zones))
        items = [
            _eks_control_plane(spec, where),
            ("NAT gateway", nat, nat, prices.fixed_price("nat-gateway", where)),
            (
                f"system nodes ({s.instance_type}, on-demand)",
                s.min,
                max(s.min, s.max),
                prices.system_node_price(s.instance_type, where),
            ),
        ]
    return [
        {
            "item": item,
            "count": {"min": lo, "max": hi},
            "usdPerHour": price.as_json(),
            "hourlyUsd": {"min": _r(price.usd * lo), "max": _r(price.usd * hi)}
            if price.usd is not None
            else {"min": None, "max": None},
        }
        for item, lo, hi, price in items
    ]


def _eks_control_plane(spec: StackSpec, where: str | None) -> tuple[str, int, int, Price]:
    if versions.eks_extended_support(spec.cluster.kubernetes_version):
        return ("EKS control plane (extended support)", 1, 1, prices.fixed_price("eks-control-plane-extended", where))
    return ("EKS control plane", 1, 1, prices.fixed_price("eks-control-plane", where))


def _gke_fixed(spec: StackSpec, where: str | None) -> list[tuple[str, int, int, Price]]:
    """A created GKE cluster's fixed costs: its management fee, Cloud NAT (billed per VM using the gateway: the
    system nodes and every pool's nodes, whose primary NIC is on the NATed subnet; capped at 32 VMs), the NAT's one
    auto-allocated external IP (AUTO_ONLY allocates one per 1008 VMs at the default 64 ports per VM) and the
    system pool's nodes (its machine type, default ``cluster_create.DEFAULT_SYSTEM_MACHINE``)."""
    from .gcp.cluster_create import DEFAULT_SYSTEM_MACHINE

    s = spec.cluster.create.system_nodes  # type: ignore[union-attr]  # fixed_costs: create is set
    machine = s.machine_type or DEFAULT_SYSTEM_MACHINE
    hi = max(s.min, s.max)
    nat = prices.fixed_price("cloud-nat-vm", where)
    vms = (s.min + sum(p.min_nodes for p in spec.node_pools), hi + sum(p.node_cap for p in spec.node_pools))
    return [
        ("GKE cluster management fee", 1, 1, prices.fixed_price("gke-cluster-management", where)),
        ("Cloud NAT gateway (per VM using it, max 32)", min(vms[0], 32), min(vms[1], 32), nat),
        ("Cloud NAT external IP", 1, 1, prices.fixed_price("cloud-nat-ip", where)),
        (f"system nodes ({machine}, on-demand)", s.min, hi, prices.gke_system_node_price(machine, where)),
    ]


def report(spec: StackSpec, stack: str) -> dict[str, Any]:
    """The cost document of a spec, made of the pieces its plan holds (``pool_doc``, ``tenant_doc``,
    ``stack_doc``); the readers after the plan read it from there (``report_of``). This module cannot build the
    plan (the plan's pools price themselves here), so it composes the same pieces itself."""
    pools = [
        _Pool(p.name, p.capacity, p.instance_types, p.gpu.model, p.gpu.per_node, p.min_nodes, p.node_cap, quota, cost)
        for p in spec.node_pools
        for quota, cost in [(sum(t.gpu_quota.get(p.name, 0) for t in spec.tenants), pool_doc(spec, p))]
    ]
    return _document(stack, spec.cloud, pools, [(t.name, tenant_doc(spec, t)) for t in spec.tenants], stack_doc(spec))


def report_of(decided: Any) -> dict[str, Any]:
    """The cost document: cost.json, the ``cost`` stack output and the budget policies' input, read from the plan
    (``plan.Plan``: each pool's and tenant's ``cost``, the stack's ``cost``)."""
    pools = [
        _Pool(
            p.name,
            p.capacity,
            p.instance_types,
            p.gpu_model,
            p.gpus_per_node,
            p.min_nodes,
            p.max_nodes,
            p.tenant_quota_gpus,
            p.cost,
        )
        for p in decided.pools.values()
    ]
    tenants = [(t.name, t.cost) for t in decided.tenants.values()]
    return _document(decided.stack, decided.cloud, pools, tenants, decided.cost)


class _Pool(NamedTuple):
    """A pool's row of the document: its shape, the tenants' quota on it and its ``pool_doc``."""

    name: str
    capacity: str
    instance_types: Any
    gpu_model: str
    gpus_per_node: int
    min_nodes: int
    max_nodes: int
    tenant_quota_gpus: int
    cost: Any  # pool_doc's document, or the plan's read-only copy of it


def _document(
    stack: str, cloud: str, pools: list[_Pool], tenants: list[tuple[str, Any]], stack_cost: Any
) -> dict[str, Any]:
    pool_docs = []
    # by name: the document (and the ConfigMap holding it) must not change when pools are reordered
    for p in sorted(pools, key=lambda p: p.name):
        c = plain(p.cost)
        pool_docs.append(
            {
                "name": p.name,
                "capacity": p.capacity,
                "onDemandFallback": c["onDemandFallback"],
                "instanceTypes": list(p.instance_types),
                "gpuModel": p.gpu_model,
                "gpusPerNode": p.gpus_per_node,
                "nodes": {"min": p.min_nodes, "max": p.max_nodes},
                "gpus": c["gpus"],
                "tenantQuotaGpus": p.tenant_quota_gpus,
                "uncovered": c["uncovered"],
                **{k: c[k] for k in ("onDemandPerNodeHour", "spotPerNodeHour", "hourlyUsd")},
                **{k: c[k] for k in ("maxHourlyUsdAllOnDemand", "perGpuHourUsd", "perUnitHourUsd")},
                **({"coldPull": c["coldPull"]} if "coldPull" in c else {}),
            }
        )
    tenant_docs = [{"name": name, **plain(cost)} for name, cost in sorted(tenants, key=lambda t: t[0])]
    assumed = plain(stack_cost)
    fixed = assumed.get("fixed", [])  # a created cluster's control plane, NAT and system nodes
    hourly = [d["hourlyUsd"] for d in pool_docs] + [f["hourlyUsd"] for f in fixed]
    unknown = sorted(d["name"] for d in pool_docs if d["hourlyUsd"]["max"] is None)
    unknown += [f["item"] for f in fixed if f["hourlyUsd"]["max"] is None]
    known_max = round(sum(h["max"] or 0.0 for h in hourly), 4)
    known_min = round(sum(h["min"] or 0.0 for h in hourly), 4)
    uncovered = [d["uncovered"] for d in pool_docs if d["uncovered"] and d["uncovered"]["gpus"]]
    return {
        "stack": stack,
        "cloud": cloud,
        "region": assumed["region"],
        "currency": "USD",
        "assumptions": {
            "awsSpotDiscount": assumed["awsSpotDiscount"],
            "nodePrice": "the dearest of a pool's instance types (an upper bound)",
            "catalog": {
                k: {"generatedAt": v["generatedAt"], "source": prices.source_label(k)}
                for k, v in sorted(prices.catalog()["sources"].items())
            },
        },
        "pools": pool_docs,
        "tenants": tenant_docs,
        "total": {
            "maxHourlyUsd": None if unknown else known_max,
            "minHourlyUsd": None if any(h["min"] is None for h in hourly) else known_min,
            "knownMaxHourlyUsd": known_max,
            "unknownPools": unknown,
            # what the GPUs no tenant's quota covers cost at max size (the priced pools'; in maxHourlyUsd too)
            "uncoveredMaxHourlyUsd": round(sum(u["hourlyUsd"] or 0.0 for u in uncovered), 4),
        },
        "budget": assumed["budget"],
        **({"fixed": fixed} if fixed else {}),
    }


def to_json(doc: dict[str, Any]) -> str:
    """The document as cost.json and its ConfigMap hold it: ``json.dumps(doc, indent=2, sort_keys=True)`` with whole
    floats as integers (300, not 300.0: the document is also ConfigMap text, kept in one form), written by
    ``json_text.dumps`` (the same text, faster than the standard library's indenting encoder)."""
    return json_text.dumps(doc)


# ------------------------------------------------------------------------------------- component


def configmap(doc: dict[str, Any]) -> dict[str, Any]:
    """The ConfigMap carrying the cost document into the cluster and to the policy pack: the budget policies
    read budget, stack name and per-pool figures from it, so they need neither the spec nor a price table."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": CONFIGMAP_NAME,
            "namespace": CONFIGMAP_NAMESPACE,
            "labels": {**derive.MANAGED_BY, COST_LABEL: "true"},
        },
        "data": {CONFIGMAP_KEY: to_json(doc)},
    }
