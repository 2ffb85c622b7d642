"""Who can take what from whom: the plan's pools, tenants, cohorts and quota as a graph (issue 41.6).

Read by the HTML page (``components/cli/plan_html.py``), the Mermaid diagram in summary.md and the page of
``gpu-platform diff --html``. It decides nothing: every number is a field of the plan (``plan.PoolPlan``,
``plan.TenantPlan``) or a sum of them, so the picture cannot disagree with ``gpu-platform plan`` and ``cost``.

Kueue tenants lend to and borrow from their **cohort**, not from one another: a ClusterQueue puts its nominal quota
(less what its ``lendingLimit`` keeps back) into the cohort's quota, and a queue of the cohort borrows from that
unused quota up to its ``borrowingLimit`` (kueue v0.19.2 site/content/en/docs/concepts/cluster_queue.md "Cohort",
"BorrowingLimit", "LendingLimit"; pkg/cache/scheduler/resource_node.go ``accumulateFromChild``,
``potentialAvailable``). Quota is per flavor, i.e. per pool, so the graph has one cohort node per cohort and pool
where a member lends something, and its edges grow with the tenants' pools, not with pairs of tenants (a
lender -> borrower edge per pair and pool was ~54,000 edges at 1,000 tenants).

Edges:

- **nominal** pool -> tenant: the tenant's nominal quota on the pool (``TenantPlan.pool_units``, ``pool_gpus``).
- **lend** tenant -> cohort node: what the Kueue tenant puts into its cohort on the pool
  (``TenantPlan.pool_lent_units``: its nominal quota, or its lendingLimit when lower; nothing for a tenant that
  never preempts). Only quota is lent.
- **borrow** cohort node -> tenant: the most the Kueue tenant can take there, per resource
  ``pool_ceiling_units - pool_units`` (Kueue's maximum capacity beyond its own quota, within its borrowingLimit),
  at most what the cohort's other members lend on the pool (the node's lent units less the tenant's own).
- **idle** pool -> Volcano tenant: what its queue's capability lets it hold beyond its guarantee, from the pool's
  idle capacity (Volcano's proportion plugin lends capacity, not another tenant's quota).

A pool's ``uncovered`` GPUs (``PoolPlan.uncovered_gpus``): GPUs it may bring that no Kueue tenant's nominal quota
covers, which Kueue never admits onto.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from .plan import Plan


# Named tuples, read-only like frozen dataclasses: cheaper to define (this module is imported by every synth, for
# summary.md and plan.html) and to build (an edge per tenant and pool: ~900 at 200 tenants).


class Edge(NamedTuple):
    """One edge of the lending graph: a pool's GPUs a tenant holds nominally, lends, borrows, or that sit idle."""

    kind: str  # nominal | lend | borrow | idle
    source: str  # node id: pool:NAME, tenant:NAME or cohort:COHORT/POOL
    target: str
    pool: str  # the pool whose GPUs the edge is about
    units: Mapping[str, int]  # per resource name the pool advertises
    gpus: int | None  # the same in whole GPUs where the plan says it (nominal edges), else None


class Cohort(NamedTuple):
    """A Kueue cohort's quota on one pool: what its members lend there, summed (``pool_lent_units``)."""

    cohort: str
    pool: str
    lent: Mapping[str, int]

    @property
    def id(self) -> str:
        return cohort_id(self.cohort, self.pool)


class Graph(NamedTuple):
    """The lending graph: pools, tenants, cohorts and the edges between them."""

    pools: tuple[str, ...]
    tenants: tuple[str, ...]
    cohorts: tuple[Cohort, ...]  # by cohort, then pool
    edges: tuple[Edge, ...]
    uncovered: Mapping[str, int]  # pool -> GPUs no nominal quota covers (only pools where it is > 0)
    labels: tuple[str, ...]  # each edge's ``edge_label``, in the edges' order (summary.md and plan.html read them)


def pool_id(name: str) -> str:
    return f"pool:{name}"


def tenant_id(name: str) -> str:
    return f"tenant:{name}"


def cohort_id(cohort: str, pool: str) -> str:
    """Cohort and pool names are DNS labels: '/' separates them unambiguously."""
    return f"cohort:{cohort}/{pool}"


def _minus(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    return {r: a.get(r, 0) - b.get(r, 0) for r in sorted(a)}


def _lends(t: Any) -> bool:
    """A Kueue tenant in a cohort: the only kind that lends quota and borrows it."""
    return t.cluster_queue is not None and t.cohort is not None


def _cohort_lent(tenants: list[Any]) -> dict[tuple[str, str], dict[str, int]]:
    """(cohort, pool) -> units its members lend there, summed; only where something is lent."""
    lent: dict[tuple[str, str], dict[str, int]] = {}
    for t in tenants:
        if _lends(t):
            for pool, units in t.pool_lent_units.items():
                total = lent.setdefault((t.cohort, pool), {})
                for r, n in units.items():
                    total[r] = total.get(r, 0) + n
    return {k: dict(sorted(v.items())) for k, v in sorted(lent.items()) if any(v.values())}


def graph(decided: Plan) -> Graph:
    """The plan's lending graph: pools, tenants and cohort nodes sorted by name, edges in a fixed order (nominal
    ones first, then each tenant's lend, borrow and idle edges by pool)."""
    tenants = sorted(decided.tenants.values(), key=lambda t: t.name)
    lent = _cohort_lent(tenants)
    edges: list[Edge] = []
    for t in tenants:
        for pool, units in sorted(t.pool_units.items()):
            edges.append(Edge("nominal", pool_id(pool), tenant_id(t.name), pool, dict(units), t.pool_gpus.get(pool)))
    for t in tenants:
        for pool in sorted(t.pool_units):
            room = _minus(t.pool_ceiling_units.get(pool, {}), t.pool_units[pool])
            if t.volcano_queue is not None:
                if any(n > 0 for n in room.values()):
                    edges.append(Edge("idle", pool_id(pool), tenant_id(t.name), pool, room, None))
                continue
            if not _lends(t) or (t.cohort, pool) not in lent:
                continue
            node = cohort_id(t.cohort, pool)
            own = t.pool_lent_units.get(pool, {})
            if any(own.values()):
                edges.append(Edge("lend", tenant_id(t.name), node, pool, dict(sorted(own.items())), None))
            others = _minus(lent[(t.cohort, pool)], own)
            take = {r: max(0, min(n, others.get(r, 0))) for r, n in room.items()}
            if any(take.values()):
                edges.append(Edge("borrow", node, tenant_id(t.name), pool, take, None))
    uncovered = {p.name: p.uncovered_gpus for p in decided.pools.values() if p.uncovered_gpus}
    return Graph(
        pools=tuple(sorted(decided.pools)),
        tenants=tuple(t.name for t in tenants),
        cohorts=tuple(Cohort(c, p, units) for (c, p), units in lent.items()),
        edges=tuple(edges),
        uncovered=dict(sorted(uncovered.items())),
        labels=tuple(edge_label(e) for e in edges),
    )


def units_text(units: Mapping[str, int]) -> str:
    return ", ".join(f"{n} {r}" for r, n in sorted(units.items()) if n) or "0"


def node_name(node: str) -> str:
    """A node's name for people: a pool's or tenant's name, 'cohort C on POOL' for a cohort node."""
    kind, name = node.split(":", 1)
    if kind == "cohort":
        cohort, pool = name.split("/", 1)
        return f"cohort {cohort} on {pool}"
    return name


def edge_label(e: Edge) -> str:
    if e.kind == "nominal":
        return f"nominal {units_text(e.units)}" if e.gpus is None else f"nominal {e.gpus} GPUs"
    if e.kind == "lend":
        return f"lends {units_text(e.units)}"
    if e.kind == "borrow":
        return f"borrows up to {units_text(e.units)}"
    return f"idle up to {units_text(e.units)}"


def cohort_label(c: Cohort) -> str:
    return f"cohort {c.cohort} on {c.pool}: {units_text(c.lent)} lent"


def _mid(node: str) -> str:
    """A Mermaid node id. Pool, tenant and cohort names are DNS labels (lowercase, digits, '-'), so '-' -> '_' is
    one to one, and the uppercase 'ON' between a cohort and its pool cannot come from a name."""
    kind, name = node.split(":", 1)
    name = "_ON_".join(part.replace("-", "_").replace(".", "_") for part in name.split("/"))
    return f"{kind}_{name}"


def mermaid(decided: Plan, g: Graph | None = None) -> list[str]:
    """The graph as a Mermaid flowchart (a fenced block for Markdown): pools as boxes (uncovered GPUs marked),
    tenants as rounded nodes, a cohort's quota on a pool as a hexagon, nominal quota as solid arrows, lending,
    borrowing and idle capacity as dotted ones. ``g``: the plan's graph when the caller has it (the synth makes it
    once for summary.md and plan.html)."""
    g = graph(decided) if g is None else g
    ids: dict[str, str] = {}  # node -> its Mermaid id, made once per node (edges name each node many times)

    def mid(node: str) -> str:
        found = ids.get(node)
        if found is None:
            found = ids[node] = _mid(node)
        return found

    lines = ["```mermaid", "flowchart LR"]
    for name in g.pools:
        p = decided.pools[name]
        mark = f"<br/>⚠ {g.uncovered[name]} GPUs in no nominal quota" if name in g.uncovered else ""
        lines.append(f'  {_mid(pool_id(name))}["{name}<br/>{p.max_gpus} GPUs max{mark}"]')
    for name in g.tenants:
        lines.append(f'  {_mid(tenant_id(name))}(["{name}"])')
    for c in g.cohorts:
        lines.append(f'  {_mid(c.id)}{{{{"cohort {c.cohort}<br/>on {c.pool}: {units_text(c.lent)} lent"}}}}')
    for e, label in zip(g.edges, g.labels, strict=True):
        start, arrow = ("--", "-->") if e.kind == "nominal" else ("-.", ".->")
        lines.append(f'  {mid(e.source)} {start} "{label}" {arrow} {mid(e.target)}')
    uncovered = [_mid(pool_id(n)) for n in g.uncovered]
    if uncovered:
        lines += ["  classDef uncovered stroke:#c00,stroke-width:2px", f"  class {','.join(uncovered)} uncovered"]
    return [*lines, "```"]


def summary_section(decided: Plan, g: Graph | None = None) -> list[str]:
    """summary.md's section: the diagram and how to read it (none without pools or tenants); ``g`` as ``mermaid``'s."""
    if not decided.pools or not decided.tenants:
        return []
    return [
        "",
        "## Who can take what from whom",
        "",
        *mermaid(decided, g),
        "",
        "Solid arrows: a tenant's nominal quota on a pool. Hexagons: a Kueue cohort's quota on a pool, what its "
        "members lend there; dotted arrows into one: what a tenant lends its cohort; out of one: the most a tenant "
        "can borrow there (within its borrowingLimit, at most what the others lend). Dotted arrows from a pool: "
        "what a Volcano queue may hold of the pool's idle capacity beyond its guarantee. ⚠: GPUs a pool may bring "
        "that no nominal quota covers (Kueue never admits onto them). `gpu-platform plan STACK --html FILE` draws "
        "the same graph with costs.",
    ]


def to_doc(decided: Plan, g: Graph | None = None) -> dict[str, Any]:
    """The graph as plain JSON data (what the HTML page embeds)."""
    g = graph(decided) if g is None else g
    return {
        "pools": list(g.pools),
        "tenants": list(g.tenants),
        "cohorts": [{"id": c.id, "cohort": c.cohort, "pool": c.pool, "lent": dict(c.lent)} for c in g.cohorts],
        "uncovered": dict(g.uncovered),
        "edges": [
            {
                "kind": e.kind,
                "source": e.source,
                "target": e.target,
                "pool": e.pool,
                "units": dict(e.units),
                "gpus": e.gpus,
                "label": label,
            }
            for e, label in zip(g.edges, g.labels, strict=True)
        ],
    }
