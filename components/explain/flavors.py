"""Kueue's flavor assignment for ``gpu-platform explain``, from an idle cluster: which ResourceFlavor (pool) each pod
set of a workload gets, or why none can ever take it.

It follows kueue v0.19.2 ``pkg/scheduler/flavorassigner/flavorassigner.go`` (``assignFlavors``,
``findFlavorForPodSets``, ``checkFlavorForPodSets``, ``fitsResourceQuota``, ``shouldTryNextFlavor``,
``isPreferred``) over what the plan decided: the ClusterQueue's flavors in order (``TenantPlan.cluster_queue_spec``),
each flavor's labels, nodeTaints and topology (``PoolPlan.kueue_flavor_spec``), and the queue's maximum capacity per
flavor (``TenantPlan.pool_ceiling_units``: Kueue's ``PotentialAvailable``, ``components/plan/kueue_quota.py``).
From an idle cluster nothing is admitted, so what is available now is that maximum too. A short quota is explained
in the terms of Kueue's arithmetic: the queue's nominal quota, what the other queues of its cohort lend on the flavor
(``TenantPlan.pool_lent_units``), its borrowingLimit, and the fix.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..plan import kueue, kueue_quota
from ..plan.plan import Plan, PoolPlan, TenantPlan
from .facts import _units, asks_topology, flavor_opt_in_problem, flavor_selection_problems, gpu_podsets, kueue_request
from .workloads import PodSet, Workload


@dataclass
class Assignment:
    """What Kueue assigns: ``placements`` (each pool with the pod sets it got, in the order of their first pod set)
    and ``held`` (per flavor, the units the workload holds there), or ``refused`` with why in ``detail``."""

    detail: str
    refused: bool = False
    placements: list[tuple[PoolPlan, list[PodSet]]] = field(default_factory=list)
    held: dict[str, dict[str, int]] = field(default_factory=dict)


def assign(decided: Plan, tenant: TenantPlan, w: Workload, gpu: dict[str, int]) -> Assignment:
    """Pod set by pod set in the workload's order (only those asking a GPU: the others get ``default-flavor``),
    each gets the first flavor of its resource group, in the ClusterQueue's order, that matches it and whose quota
    holds it. The quota check counts the units earlier pod sets were assigned on the same flavor
    (``assignmentUsage``), so a gang's pod sets add up on one flavor, and a later pod set may land on another."""
    cq = tenant.cluster_queue_spec
    group = next((g for g in cq["resourceGroups"] if set(gpu) <= set(g["coveredResources"])), None)
    if group is None:
        covered = [r for g in cq["resourceGroups"] for r in g["coveredResources"] if r not in kueue.CPU_RESOURCES]
        return Assignment(
            f"ClusterQueue {tenant.name} has no quota for {', '.join(gpu)} (it covers {', '.join(covered)}): "
            "request a resource one of the tenant's pools advertises",
            refused=True,
        )
    # flavorFungibility.whenCanBorrow TryNextFlavor: a flavor that fits only by borrowing does not end the search
    # (shouldTryNextFlavor); of the fits the least borrowing one wins, the earliest among equals (isPreferred:
    # borrowingLevel, 0 within nominal quota, 1 from a flat cohort). MayStopSearch (Kueue's default): the first
    # flavor that fits, borrowing or not.
    prefer_nominal = (cq.get("flavorFungibility") or {}).get("whenCanBorrow") == "TryNextFlavor"
    assigned: dict[str, dict[str, int]] = defaultdict(dict)  # flavor -> units earlier pod sets got there
    placed: list[tuple[PodSet, PoolPlan]] = []
    skipped: list[str] = []
    sets = gpu_podsets(w)
    for ps in sets:
        req = kueue_request(w, ps)
        fits: list[tuple[PoolPlan, dict[str, int]]] = []  # in order, with what each borrows
        tried: list[str] = []
        for flavor in group["flavors"]:
            if flavor["name"] == kueue.DEFAULT_FLAVOR:  # GPU quota 0 there: never a GPU pod set's
                continue
            fit = flavor_fits(decided, tenant, flavor, ps, req, assigned[flavor["name"]], tried)
            if fit is None:
                continue
            fits.append(fit)
            if not fit[1] or not prefer_nominal:
                break
        if not fits:
            which = f" pod set {ps.name}" if len(sets) > 1 else ""
            return Assignment(
                f"no flavor fits{which}: " + ("; ".join(tried) or unadvertised(decided, tenant, req)), refused=True
            )
        pool, _ = next((f for f in fits if not f[1]), fits[0])
        for r, n in req.items():
            assigned[pool.name][r] = assigned[pool.name].get(r, 0) + n
        placed.append((ps, pool))
        whose = f" (pod set {ps.name})" if len(sets) > 1 else ""
        skipped += [x + whose for x in tried if x + whose not in skipped]
    order = " > ".join(f["name"] for f in group["flavors"])
    after = f"order {order}" + (f"; skipped {'; '.join(skipped)}" if skipped else "")
    pools = list(dict.fromkeys(pool.name for _, pool in placed))
    on = {name: [ps for ps, p in placed if p.name == name] for name in pools}
    if len(pools) == 1:
        (name,) = pools
        detail = f"{name} ({held_how(decided, tenant, name, assigned[name])}; {after})"
    else:  # the pod sets went to different flavors: each pool is traced with its own
        each = "; ".join(
            f"{', '.join(ps.name for ps in on[name])} -> {name} ({held_how(decided, tenant, name, assigned[name])})"
            for name in pools
        )
        detail = f"{each} ({after})"
    return Assignment(
        detail,
        placements=[(decided.pools[name], on[name]) for name in pools],
        held={name: dict(units) for name, units in assigned.items() if units},
    )


def unadvertised(decided: Plan, tenant: TenantPlan, req: Mapping[str, int]) -> str:
    """Why no flavor was even tried: the request's GPU resource is in the ClusterQueue's resource group only on
    ``default-flavor`` (quota 0), as no pool of the tenant advertises it. Names what the pools do advertise."""
    offered = {pool: sorted(decided.pools[pool].units_per_gpu) for pool in tenant.flavor_order if pool in decided.pools}
    asked = ", ".join(r for r in req if r not in kueue.CPU_RESOURCES) or ", ".join(req)
    if not offered:
        return f"{tenant.name} has no GPU pool in its quota; {asked} has quota only on {kueue.DEFAULT_FLAVOR} (0)"
    what = "; ".join(f"{pool} advertises {', '.join(units)}" for pool, units in offered.items())
    return (
        f"no pool of {tenant.name} advertises {asked} ({what}): request one of those resources instead "
        f"(resources.limits), or give {tenant.name} gpuQuota on a pool that advertises {asked}"
    )


def flavor_fits(
    decided: Plan,
    tenant: TenantPlan,
    flavor: Mapping[str, Any],
    ps: PodSet,
    req: dict[str, int],
    earlier: dict[str, int],
    tried: list[str],
) -> tuple[PoolPlan, dict[str, int]] | None:
    """The pool of a flavor that takes the pod set, with what it borrows there; None (the reason appended to
    ``tried``) where it does not: the flavor's own label keys and nodeTaints (``checkFlavorForPodSets``), TAS
    (``checkPodSetAndFlavorMatchForTAS``), then the quota (``fitsResourceQuota``: the pod set's request plus
    ``earlier`` pod sets' on this flavor against the maximum capacity). Kueue checks TAS before taints and labels;
    where several refuse a flavor the outcome is the same, and explain names the label or taint first (a pod pinned
    to another pool is the likelier mistake)."""
    fname = flavor["name"]
    pool = decided.pools[fname]
    flavor_doc = pool.kueue_flavor_spec
    why = next(iter(flavor_selection_problems(ps.pod, flavor_doc["nodeLabels"])), None)
    why = why or flavor_opt_in_problem([ps], flavor_doc)  # its nodeTaints, tolerated or not
    if why:
        tried.append(f"{fname}: {why}")
        return None
    topology = asks_topology(ps)
    if pool.topology_aware and not topology:
        tried.append(f"{fname}: topology-aware, the pod template asks for no topology")
        return None
    if topology and not pool.topology_aware:
        tried.append(f"{fname}: not topology-aware")
        return None
    ceiling = tenant.pool_ceiling_units.get(fname, {})
    need = {r: earlier.get(r, 0) + n for r, n in req.items()}
    short = {r: n for r, n in need.items() if n > ceiling.get(r, 0)}
    if short:
        tried.append(no_room(decided, tenant, flavor, short, earlier))
        return None
    nominal = _flavor_quota(flavor, "nominalQuota")
    # borrowing: past the nominal quota (ClusterQueueSnapshot.BorrowingWith, usage 0 from an idle cluster)
    return pool, {r: n - nominal.get(r, 0) for r, n in need.items() if n > nominal.get(r, 0)}


def held_how(decided: Plan, tenant: TenantPlan, fname: str, held: dict[str, int]) -> str:
    """What the workload holds on a flavor and whether it borrows it: from which queues of its cohort."""
    flavor = next(f for g in tenant.cluster_queue_spec["resourceGroups"] for f in g["flavors"] if f["name"] == fname)
    nominal = _flavor_quota(flavor, "nominalQuota")
    borrow = {r: n - nominal.get(r, 0) for r, n in held.items() if n > nominal.get(r, 0)}
    if not borrow:
        return f"{_units(held)}, nominal quota"
    lenders = [m.name for m, lent in cohort_lenders(decided, tenant, fname, next(iter(borrow))) if lent]
    by = f" (lent by {', '.join(lenders)})" if lenders else ""
    return f"{_units(held)}, borrows {_units(borrow)} from cohort {tenant.cohort}{by}"


def cohort_lenders(decided: Plan, tenant: TenantPlan, fname: str, resource: str) -> list[tuple[TenantPlan, int | None]]:
    """The other ClusterQueues of the tenant's cohort, by name, with what each lends on the flavor's resource
    (``TenantPlan.pool_lent_units``: its nominal quota, or its lendingLimit when lower); None: no quota there."""
    if tenant.cohort is None:
        return []
    others = sorted(
        (t for t in decided.tenants.values() if t.cohort == tenant.cohort and t.name != tenant.name),
        key=lambda t: t.name,
    )
    return [(t, t.pool_lent_units[fname].get(resource, 0) if fname in t.pool_lent_units else None) for t in others]


def no_room(
    decided: Plan, tenant: TenantPlan, flavor: Mapping[str, Any], short: dict[str, int], earlier: dict[str, int]
) -> str:
    """Why the flavor's quota can never hold the request, in the terms of Kueue's arithmetic (kueue v0.19.2
    pkg/cache/scheduler/resource_node.go ``potentialAvailable``: what the queue keeps back plus what its cohort's
    queues lend, itself included, capped by nominal + borrowingLimit; lending its own quota to itself, a queue can
    hold its nominal quota plus what the *other* queues lend, within its borrowingLimit), and the fix. Kueue says
    "insufficient quota for <resource> in flavor <flavor>, previously considered podsets requests (n) + current
    podset request (m) > maximum capacity (max)" (flavorassigner.go ``fitsResourceQuota``)."""
    fname, t, cohort = flavor["name"], tenant.name, tenant.cohort
    r = next(iter(short))  # units are per GPU: what holds for one resource holds for the others
    nominal = _flavor_quota(flavor, "nominalQuota")
    limit = _flavor_quota(flavor, "borrowingLimit").get(r)
    ceiling = tenant.pool_ceiling_units.get(fname, {})

    def n(units: Mapping[str, int]) -> str:  # one resource: its number (named once, in "needs")
        return str(units.get(r, 0)) if len(short) == 1 else _units({x: units.get(x, 0) for x in short})

    asked = {x: v - earlier.get(x, 0) for x, v in short.items()}
    if any(earlier.get(x) for x in short):  # earlier pod sets of the workload on the same flavor count
        needs = f"{n(earlier)} (earlier pod sets) + {_units(asked)} = {n(short)}"
    else:
        needs = _units(asked)
    lenders = cohort_lenders(decided, tenant, fname, r)
    lent = sum(v or 0 for _, v in lenders)
    per_gpu = decided.pools[fname].units_per_gpu.get(r, 1)
    borrow = short[r] - nominal.get(r, 0)
    words = _lender_words(lenders, fname)
    if cohort is None:
        cause = f"{t}'s ClusterQueue is in no cohort, so nothing is lent to it"
        other = f"or give it a cohort in which another tenant lends {fname}"
    elif lent == 0:
        cause = f"no other ClusterQueue of cohort {cohort} lends {fname} ({words})"
        if limit:
            cause += f": its borrowingLimit {limit} there has nothing to borrow"
        other = f"or give another tenant of cohort {cohort} quota on {fname} that it lends"
    else:  # what binds: what the others lend, its borrowingLimit, or both
        lend_short, limit_short = borrow > lent, limit is not None and borrow > limit
        others = f"the other ClusterQueues of cohort {cohort} lend {lent} there ({words})"
        causes = [others] if lend_short else []
        if limit_short:
            causes.append(f"its borrowingLimit there is {limit}" + ("" if lend_short else f" ({others})"))
        cause = " and ".join(causes)
        if lend_short and limit_short:
            other = f"or raise its borrowingLimit on {fname} and give the others more quota there to lend"
        elif limit_short:
            other = f"or raise its borrowingLimit on {fname} to {-(-borrow // per_gpu)} GPUs"
        else:
            other = f"or give the others more quota there to lend (their gpuQuota or lendingLimit on {fname})"
    room = min(lent, limit) if limit is not None else lent
    gpus = -(-(short[r] - room) // per_gpu)  # the nominal quota, in GPUs, that holds it with what is lent now
    return (
        f"{fname}: needs {needs}, {t}'s quota {n(nominal)}; {cause}, so at most {n(ceiling)} (Kueue: maximum "
        f"capacity {n(ceiling)}): raise {t}'s gpuQuota on {fname} to {gpus} GPUs, {other}"
    )


def _flavor_quota(flavor: Mapping[str, Any], key: str) -> dict[str, int]:
    """A ClusterQueue flavor's ``nominalQuota`` / ``borrowingLimit`` / ``lendingLimit`` per resource that sets it, as
    Kueue counts it (``kueue_quota.quantity``)."""
    return {q["name"]: kueue_quota.quantity(q["name"], q[key]) for q in flavor["resources"] if key in q}


def _lender_words(lenders: list[tuple[TenantPlan, int | None]], fname: str) -> str:
    """What each other queue of the cohort lends on the flavor, in words, grouped: "serving: no quota there"."""
    if not lenders:
        return "it is the cohort's only ClusterQueue"
    words: dict[str, list[str]] = defaultdict(list)
    for t, lent in lenders:
        if lent is None:
            words["no quota there"].append(t.name)
        elif lent:
            words[f"lends {lent}"].append(t.name)
        elif not t.pool_gpus.get(fname):
            words["quota 0 there"].append(t.name)
        elif t.never_preempts:  # its ClusterQueue could not reclaim a loan: its lendingLimit is 0
            words["never preempts, so lends nothing"].append(t.name)
        else:
            words["lendingLimit 0"].append(t.name)
    return "; ".join(f"{', '.join(names)}: {what}" for what, names in words.items())
