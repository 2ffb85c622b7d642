"""The *Pools* and *Tenants* sections of ``gpu-platform plan`` as aligned tables (``tables.table``), from the plan."""

from __future__ import annotations

from typing import Any

from .tables import table


def _units(units: Any) -> str:
    return ", ".join(f"{n} {name}" for name, n in units.items()) or "none"


def pools(p: Any) -> list[str]:
    rows = []
    for pool in p.pools.values():
        price = pool.price["perGpuHour"]
        rows.append(
            [
                pool.name,
                pool.provisioner,
                f"{pool.gpus_per_node} x {pool.gpu_model}",
                pool.capacity,
                f"{pool.min_nodes}..{pool.max_nodes}",
                str(pool.max_gpus),
                _units(pool.units_per_gpu),
                ", ".join(pool.schedulers) or "nobody",
                pool.kueue_flavor or "-",
                "-" if pool.uncovered_gpus is None else str(pool.uncovered_gpus),
                f"${price:.2f}" if price is not None else "unknown",
            ]
        )
    head = [
        "pool",
        "provisioner",
        "GPUs per node",
        "capacity",
        "nodes",
        "max GPUs",
        "each GPU advertises",
        "handed out by",
        "Kueue flavor",
        "in no quota",
        "$/GPU-hour",
    ]
    lines = ["", "Pools", *table(head, rows)]
    for pool in p.pools.values():
        if pool.one_unit_opt_in:
            lines.append(f"  {pool.name}: opt-in (pods reach it only by tolerating gpu-platform/shared-gpu)")
        if pool.uncovered_gpus:
            lines.append(
                f"  {pool.name}: {pool.uncovered_gpus} GPUs ({_units(pool.uncovered_units)}) in no tenant's nominal "
                "quota: Kueue never admits onto them"
            )
    return lines


def _queue(t: Any) -> str:
    if t.cluster_queue:
        return f"Kueue {t.local_queue} -> {t.cluster_queue}"
    return f"Volcano {t.volcano_queue}" if t.volcano_queue else "none"


def tenants(p: Any) -> list[str]:
    rows = [
        [
            t.name,
            t.namespace,
            t.pod_security,
            _queue(t),
            t.cohort or "-",
            t.priority_ceiling,
            ", ".join(t.forbidden_priority_classes) or "none",
        ]
        for t in p.tenants.values()
    ]
    head = ["tenant", "namespace", "pod security", "queue", "cohort", "priority ceiling", "refused classes"]
    lines = ["", "Tenants", *table(head, rows)]
    quota_rows, notes = [], []
    for t in p.tenants.values():
        for pool, units in t.pool_units.items():
            ceiling = t.pool_ceiling_units.get(pool, {})
            quota_rows.append([t.name, pool, _units(units), _units(ceiling) if ceiling != units else "-"])
            if t.cohort and ceiling == units and t.borrowing_limits.get(pool, 0) > 0:  # nothing to borrow
                notes.append(
                    f"  {t.name} on {pool}: borrowingLimit {t.borrowing_limits[pool]} GPUs adds nothing: no other "
                    f"ClusterQueue of cohort {t.cohort} lends {pool}"
                )
    lines += ["", "Tenant quotas", *table(["tenant", "pool", "nominal", "up to, borrowing"], quota_rows), *notes]
    rq = [[t.name, k, str(v)] for t in p.tenants.values() for k, v in t.quota_hard.items() if str(v) != "0"]
    zero = (
        "; a resource of spec.hard not listed is capped at 0"
        if any(str(v) == "0" for t in p.tenants.values() for v in t.quota_hard.values())
        else ""
    )
    return [*lines, "", "ResourceQuotas (spec.hard" + zero + ")", *table(["tenant", "resource", "hard"], rq)]
