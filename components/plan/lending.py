"""Who can take what from whom: the plan's pools, tenants and quota as a graph (issue 41.6).

Read by the HTML page (``components/cli/plan_html.py``), the Mermaid diagram in summary.md and ``gpu-platform diff``.
It decides nothing: every number is a field of the plan (``plan.PoolPlan``, ``plan.TenantPlan``), so the picture
cannot disagree with ``gpu-platform plan`` and ``cost``.

Edges:

- **nominal** pool -> tenant: the tenant's nominal quota on the pool (``TenantPlan.pool_units``, ``pool_gpus``).
- **borrow** lender -> borrower, on one pool: both Kueue tenants of one cohort; the most the borrower can take of
  what the lender puts into the cohort there, per resource ``min(lender's pool_lent_units, borrower's
  pool_ceiling_units - pool_units)`` (the ceiling is Kueue's maximum capacity, ``ceilings``). Only quota is lent.
- **idle** pool -> Volcano tenant: what its queue's capability lets it hold beyond its guarantee, from the pool's
  idle capacity (Volcano's proportion plugin lends capacity, not another tenant's quota).

A pool's ``uncovered`` GPUs (``PoolPlan.uncovered_gpus``): GPUs it may bring that no Kueue tenant's nominal quota
covers, which Kueue never admits onto.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .plan import Plan


@dataclass(frozen=True)
class Edge:
    kind: str  # nominal | borrow | idle
    source: str  # node id: pool:NAME or tenant:NAME
    target: str
    pool: str  # the pool whose GPUs the edge is about
    units: Mapping[str, int]  # per resource name the pool advertises
    gpus: int | None  # the same in whole GPUs where the plan says it (nominal edges), else None


@dataclass(frozen=True)
class Graph:
    pools: tuple[str, ...]
    tenants: tuple[str, ...]
    edges: tuple[Edge, ...]
    uncovered: Mapping[str, int]  # pool -> GPUs no nominal quota covers (only pools where it is > 0)


def pool_id(name: str) -> str:
    return f"pool:{name}"


def tenant_id(name: str) -> str:
    return f"tenant:{name}"


def _minus(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    return {r: a.get(r, 0) - b.get(r, 0) for r in sorted(a)}


def graph(decided: Plan) -> Graph:
    """The plan's lending graph: pools and tenants sorted by name, edges in a fixed order."""
    tenants = sorted(decided.tenants.values(), key=lambda t: t.name)
    edges: list[Edge] = []
    for t in tenants:
        for pool, units in sorted(t.pool_units.items()):
            edges.append(Edge("nominal", pool_id(pool), tenant_id(t.name), pool, dict(units), t.pool_gpus.get(pool)))
    # (cohort, pool) -> the Kueue tenants that put quota into the cohort there, by name: a borrower's lenders, found
    # without walking every tenant per borrower and pool (1,000 tenants: 2,000,000 steps for ~80,000 loans)
    lenders: dict[tuple[str | None, str], list[Any]] = {}
    for t in tenants:
        if t.cluster_queue is not None:
            for pool in t.pool_lent_units:
                lenders.setdefault((t.cohort, pool), []).append(t)
    for b in tenants:
        for pool in sorted(b.pool_units):
            room = _minus(b.pool_ceiling_units.get(pool, {}), b.pool_units[pool])
            if b.volcano_queue is not None:
                if any(n > 0 for n in room.values()):
                    edges.append(Edge("idle", pool_id(pool), tenant_id(b.name), pool, room, None))
                continue
            if b.cluster_queue is None or b.cohort is None:
                continue
            for lender in lenders.get((b.cohort, pool), ()):
                if lender.name == b.name:
                    continue
                lent = lender.pool_lent_units[pool]
                take = {r: max(0, min(lent.get(r, 0), n)) for r, n in room.items()}
                if any(take.values()):
                    edges.append(Edge("borrow", tenant_id(lender.name), tenant_id(b.name), pool, take, None))
    uncovered = {p.name: p.uncovered_gpus for p in decided.pools.values() if p.uncovered_gpus}
    return Graph(
        pools=tuple(sorted(decided.pools)),
        tenants=tuple(t.name for t in tenants),
        edges=tuple(edges),
        uncovered=dict(sorted(uncovered.items())),
    )


def units_text(units: Mapping[str, int]) -> str:
    return ", ".join(f"{n} {r}" for r, n in sorted(units.items()) if n) or "0"


def edge_label(e: Edge) -> str:
    if e.kind == "nominal":
        return f"nominal {units_text(e.units)}" if e.gpus is None else f"nominal {e.gpus} GPUs"
    if e.kind == "borrow":
        return f"lends up to {units_text(e.units)} on {e.pool}"
    return f"idle up to {units_text(e.units)}"


def _mid(node: str) -> str:
    """A Mermaid node id: pool and tenant names are DNS labels (lowercase, digits, '-')."""
    kind, name = node.split(":", 1)
    return f"{kind}_{name.replace('-', '_').replace('.', '_')}"


def mermaid(decided: Plan) -> list[str]:
    """The graph as a Mermaid flowchart (a fenced block for Markdown): pools as boxes (uncovered GPUs marked),
    tenants as rounded nodes, nominal quota as solid arrows, loans and idle capacity as dotted ones."""
    g = graph(decided)
    lines = ["```mermaid", "flowchart LR"]
    for name in g.pools:
        p = decided.pools[name]
        mark = f"<br/>⚠ {g.uncovered[name]} GPUs in no nominal quota" if name in g.uncovered else ""
        lines.append(f'  {_mid(pool_id(name))}["{name}<br/>{p.max_gpus} GPUs max{mark}"]')
    for name in g.tenants:
        lines.append(f'  {_mid(tenant_id(name))}(["{name}"])')
    for e in g.edges:
        start, arrow = ("--", "-->") if e.kind == "nominal" else ("-.", ".->")
        lines.append(f'  {_mid(e.source)} {start} "{edge_label(e)}" {arrow} {_mid(e.target)}')
    uncovered = [_mid(pool_id(n)) for n in g.uncovered]
    if uncovered:
        lines += ["  classDef uncovered stroke:#c00,stroke-width:2px", f"  class {','.join(uncovered)} uncovered"]
    return [*lines, "```"]


def summary_section(decided: Plan) -> list[str]:
    """summary.md's section: the diagram and how to read it (none without pools or tenants)."""
    if not decided.pools or not decided.tenants:
        return []
    return [
        "",
        "## Who can take what from whom",
        "",
        *mermaid(decided),
        "",
        "Solid arrows: a tenant's nominal quota on a pool. Dotted arrows: the most a Kueue tenant can borrow of what "
        "another tenant of its cohort lends on a pool, or (Volcano) what a queue may hold of a pool's idle capacity "
        "beyond its guarantee. ⚠: GPUs a pool may bring that no nominal quota covers (Kueue never admits onto them). "
        "`gpu-platform plan STACK --html FILE` draws the same graph with costs.",
    ]


def to_doc(decided: Plan) -> dict[str, Any]:
    """The graph as plain JSON data (what the HTML page embeds)."""
    g = graph(decided)
    return {
        "pools": list(g.pools),
        "tenants": list(g.tenants),
        "uncovered": dict(g.uncovered),
        "edges": [
            {
                "kind": e.kind,
                "source": e.source,
                "target": e.target,
                "pool": e.pool,
                "units": dict(e.units),
                "gpus": e.gpus,
                "label": edge_label(e),
            }
            for e in g.edges
        ],
    }
