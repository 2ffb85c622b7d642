"""``gpu-platform plan STACK --html FILE`` and the synth's ``plan.html``: the platform on one self-contained page.

Pools to scale by GPUs and $/hour (provisioner, capacity type, sharing, taints), tenants' nominal quota, what they
lend their Kueue cohort and can borrow from it (a graph drawn by Cytoscape.js, inlined from
``components/data/web``), the GPUs no nominal quota covers, and the cost per pool and tenant. Every number comes
from the plan and its cost document (``cost.report_of``), the ones ``gpu-platform plan`` and ``cost`` print; this
module formats, it decides nothing.

The page loads nothing: its script and styles are inline and its Content-Security-Policy forbids every fetch
(``default-src 'none'``). Byte-identical for the same plan (no timestamps, sorted keys), so the synth stays
deterministic. A diff (``components/cli/diff.py``) adds a section with what a change does.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..data import web_libs
from ..plan import cost, lending
from ..plan.cost_text import usd

if TYPE_CHECKING:
    from ..plan.plan import Plan, PoolPlan

CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:1500px;padding:0 1em;color:#1d2330}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ccd}
table{border-collapse:collapse;width:100%;margin:.5em 0}th,td{border:1px solid #ccd;padding:3px 6px;
text-align:left;vertical-align:top}th{background:#eef1f7}td.num{text-align:right;font-variant-numeric:tabular-nums}
.bar{height:10px;background:#4a78c2;border-radius:2px}.bar.usd{background:#d08a2a}
span.uncovered,b.uncovered{color:#b00020;font-weight:600}tr.uncovered td:first-child{border-left:4px solid #b00020}
#graph{height:520px;border:1px solid #ccd;border-radius:4px}.legend span{margin-right:1.5em}
.replace,.delete{color:#b00020;font-weight:600}.note{color:#555}code{background:#f3f4f8;padding:0 3px}
"""


def escape(text: str) -> str:
    """``html.escape(text, quote=True)``, the same replacements in the same order (CPython Lib/html/__init__.py),
    without importing ``html``, which imports its 2,231 named character references (``html.entities``, ~1 ms at
    each synth's start) that escaping never reads."""
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#x27;")
    )


def _attr(x: Any) -> str:
    return escape(str(x))


def _units(units: Mapping[str, int]) -> str:
    return ", ".join(f"{n} {r}" for r, n in sorted(units.items())) or "-"


def _sharing(p: PoolPlan) -> str:
    s = p.sharing
    if s is None:
        return "whole GPUs"
    if s["strategy"] == "mig":
        return "MIG " + " + ".join(f"{c}x {profile}" for profile, c in sorted(s["layout"].items())) + " per GPU"
    return f"{s['strategy']} x{s['replicas']}"


def _taints(p: PoolPlan) -> str:
    return ", ".join(f"{t['key']}={t.get('value') or ''}:{t['effect']}" for t in p.taints) or "-"


def _bar(value: float | None, top: float, cls: str = "") -> str:
    if not value or not top:
        return ""
    return f'<div class="bar {cls}" style="width:{max(1.0, 100.0 * value / top):.1f}%"></div>'


def _pool_rows(decided: Plan, doc: dict[str, Any]) -> list[str]:
    pools = {p["name"]: p for p in doc["pools"]}
    top_gpus = max((p["gpus"]["max"] for p in doc["pools"]), default=0)
    top_usd = max((p["hourlyUsd"]["max"] or 0 for p in doc["pools"]), default=0)
    rows = []
    for name in sorted(decided.pools):
        p, c = decided.pools[name], pools[name]
        unc = c["uncovered"]
        unc_text = "-" if unc is None else str(unc["gpus"])
        if unc and unc["gpus"]:
            unc_text = f'<span class="uncovered">⚠ {unc["gpus"]} ({escape(usd(unc["hourlyUsd"]))}/h)</span>'
        rows.append(
            f'<tr data-pool="{_attr(name)}"{" class=uncovered" if unc and unc["gpus"] else ""}>'
            f"<td>{escape(name)}</td><td>{escape(p.provisioner)}</td>"
            f"<td>{p.gpus_per_node}x {escape(p.gpu_model)}</td><td>{escape(p.capacity)}</td>"
            f"<td>{escape(_sharing(p))}</td><td>{escape(_taints(p))}</td>"
            f'<td class="num">{p.min_nodes}..{p.max_nodes}</td>'
            f'<td class="num" data-gpus-max="{c["gpus"]["max"]}">{c["gpus"]["min"]}..{c["gpus"]["max"]}'
            f"{_bar(c['gpus']['max'], top_gpus)}</td>"
            f'<td class="num">{escape(usd(c["perGpuHourUsd"]))}</td>'
            f'<td class="num">{escape(usd(c["hourlyUsd"]["min"]))}</td>'
            f'<td class="num" data-usd-max="{_attr(c["hourlyUsd"]["max"])}">{escape(usd(c["hourlyUsd"]["max"]))}'
            f"{_bar(c['hourlyUsd']['max'], top_usd, 'usd')}</td>"
            f'<td class="num">{escape(_units(p.tenant_quota_units))}</td><td class="num">{unc_text}</td></tr>'
        )
    return rows


def _pools_section(decided: Plan, doc: dict[str, Any]) -> list[str]:
    total = doc["total"]
    whole = (
        usd(total["maxHourlyUsd"])
        if not total["unknownPools"]
        else (
            f"unknown (no price for {', '.join(total['unknownPools'])}; "
            f"the priced pools: {usd(total['knownMaxHourlyUsd'])})"
        )
    )
    return [
        "<h2 id=pools>GPU pools</h2>",
        f"<p>Whole stack: <b id=total-max>{escape(whole)}</b> per hour at max scale, "
        f"<span id=total-min>{escape(usd(total['minHourlyUsd']))}</span> at min size (list prices, USD, region "
        f"{escape(str(doc['region'] or 'unset'))}). GPUs no tenant's nominal quota covers: "
        f"<span class=uncovered id=total-uncovered>{escape(usd(total['uncoveredMaxHourlyUsd']))}</span> "
        "per hour at max scale.</p>",
        "<table id=pool-table><thead><tr><th>pool</th><th>provisioner</th><th>GPUs per node</th><th>capacity</th>"
        "<th>sharing</th><th>taints</th><th>nodes</th><th>GPUs min..max</th><th>$/GPU-hour</th><th>$/h at min</th>"
        "<th>$/h at max</th><th>tenants' nominal quota</th><th>GPUs in no nominal quota</th></tr></thead><tbody>",
        *_pool_rows(decided, doc),
        "</tbody></table>",
    ]


def _per_pool(gpus: Mapping[str, int]) -> str:
    return ", ".join(f"{pool}: {n}" for pool, n in sorted(gpus.items())) or "-"


def _tenants_section(decided: Plan, doc: dict[str, Any], g: lending.Graph) -> list[str]:
    costs = {t["name"]: t for t in doc["tenants"]}
    budget = doc["budget"]["tenants"]
    # each tenant's edges, grouped once in the graph's order (scanning every edge per tenant was tenants x edges)
    takes: dict[str, list[str]] = defaultdict(list)
    lends: dict[str, list[str]] = defaultdict(list)
    for e in g.edges:
        if e.kind == "borrow":
            takes[e.target].append(f"{lending.node_name(e.source)} (up to {lending.units_text(e.units)})")
        elif e.kind == "idle":
            takes[e.target].append(f"idle {e.pool} (up to {lending.units_text(e.units)})")
        elif e.kind == "lend":
            lends[e.source].append(f"{lending.node_name(e.target)} ({lending.units_text(e.units)})")
    rows = []
    for name in g.tenants:
        t, c = decided.tenants[name], costs[name]
        node = lending.tenant_id(name)
        queue = (t.cluster_queue and f"Kueue {t.cluster_queue}") or (t.volcano_queue and f"Volcano {t.volcano_queue}")
        tb = budget.get(name)
        rows.append(
            f'<tr data-tenant="{_attr(name)}"><td>{escape(name)}</td><td>{escape(queue or "-")}</td>'
            f"<td>{escape(t.cohort or '-')}</td>"
            f'<td class="num">{escape(_per_pool(c["nominal"]["gpus"]))}</td>'
            f'<td class="num">{escape(usd(c["nominal"]["hourlyUsd"]))}</td>'
            f'<td class="num">{escape(_per_pool(c["ceiling"]["gpus"]))}</td>'
            f'<td class="num">{escape(usd(c["ceiling"]["hourlyUsd"]))}</td>'
            f"<td>{escape('; '.join(takes[node]) or '-')}</td><td>{escape('; '.join(lends[node]) or '-')}</td>"
            f'<td class="num">{escape(usd(tb)) if tb is not None else "-"}</td></tr>'
        )
    return [
        "<h2 id=tenants>Tenants</h2>",
        "<table id=tenant-table><thead><tr><th>tenant</th><th>queue</th><th>cohort</th><th>nominal quota (GPUs)</th>"
        "<th>$/h nominal</th><th>ceiling with borrowing (GPUs)</th><th>$/h at ceiling</th><th>may take from</th>"
        "<th>lends into</th><th>budget $/h</th></tr></thead><tbody>",
        *rows,
        "</tbody></table>",
    ]


def _elements(decided: Plan, g: lending.Graph) -> list[dict[str, Any]]:
    """Cytoscape elements: pools sized by their max GPUs, tenants, cohort nodes, and the graph's edges."""
    top = max((decided.pools[n].max_gpus for n in g.pools), default=1) or 1
    out: list[dict[str, Any]] = []
    for name in g.pools:
        p = decided.pools[name]
        label = f"{name}\n{p.max_gpus} GPUs max, {usd(p.cost['hourlyUsd']['max'])}/h"
        if name in g.uncovered:
            label += f"\n⚠ {g.uncovered[name]} in no quota"
        size = 40 + 60 * p.max_gpus / top
        data = {"id": lending.pool_id(name), "label": label, "kind": "pool", "size": round(size, 1)}
        out.append({"data": data, "classes": "pool" + (" uncovered" if name in g.uncovered else "")})
    for name in g.tenants:
        out.append({"data": {"id": lending.tenant_id(name), "label": name, "kind": "tenant"}, "classes": "tenant"})
    for c in g.cohorts:
        label = f"cohort {c.cohort} on {c.pool}\n{lending.units_text(c.lent)} lent"
        out.append({"data": {"id": c.id, "label": label, "kind": "cohort"}, "classes": "cohort"})
    for i, (e, label) in enumerate(zip(g.edges, g.labels, strict=True)):
        data = {"id": f"e{i}", "source": e.source, "target": e.target, "label": label, "kind": e.kind}
        out.append({"data": data, "classes": e.kind})
    return out


GRAPH_SCRIPT = """
(function(){
  var data = JSON.parse(document.getElementById('graph-data').textContent);
  window.cy = cytoscape({
    container: document.getElementById('graph'), elements: data.elements, userZoomingEnabled: false,
    layout: {name: 'breadthfirst', directed: true, roots: data.roots, spacingFactor: 1.1, animate: false},
    style: [
      {selector: 'node', style: {'label': 'data(label)', 'text-wrap': 'wrap', 'font-size': 11,
        'text-valign': 'bottom', 'text-margin-y': 4}},
      {selector: 'node.pool', style: {'shape': 'round-rectangle', 'background-color': '#4a78c2',
        'width': 'data(size)', 'height': 'data(size)'}},
      {selector: 'node.uncovered', style: {'border-width': 4, 'border-color': '#b00020', 'color': '#b00020'}},
      {selector: 'node.tenant', style: {'shape': 'ellipse', 'background-color': '#2a9d6f', 'width': 36,
        'height': 36}},
      {selector: 'node.cohort', style: {'shape': 'hexagon', 'background-color': '#d08a2a', 'width': 44,
        'height': 38}},
      {selector: 'edge', style: {'label': 'data(label)', 'font-size': 9, 'curve-style': 'bezier',
        'target-arrow-shape': 'triangle', 'width': 2, 'text-rotation': 'autorotate',
        'text-background-color': '#fff', 'text-background-opacity': 0.8}},
      {selector: 'edge.lend', style: {'line-style': 'dashed', 'line-color': '#2a9d6f',
        'target-arrow-color': '#2a9d6f'}},
      {selector: 'edge.borrow', style: {'line-style': 'dashed', 'line-color': '#d08a2a',
        'target-arrow-color': '#d08a2a'}},
      {selector: 'edge.idle', style: {'line-style': 'dotted', 'line-color': '#888', 'target-arrow-color': '#888'}}
    ]
  });
})();
"""


def _json_script(element_id: str, value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":")).replace("</", "<\\/")
    return f'<script type="application/json" id="{element_id}">{text}</script>'


def _graph_section(decided: Plan, g: lending.Graph) -> list[str]:
    lib = web_libs.CYTOSCAPE
    graph = {"elements": _elements(decided, g), "roots": [lending.pool_id(n) for n in g.pools]}
    return [
        "<h2 id=lending>Who can take what from whom</h2>",
        '<p class="legend"><span>■ pool (size: GPUs at max scale)</span><span>● tenant</span>'
        "<span>⬢ a Kueue cohort's quota on a pool</span><span>solid: nominal quota</span>"
        "<span>dashed green: what a tenant lends its cohort</span><span>dashed orange: the most a tenant can "
        "borrow from its cohort</span><span>dotted: a Volcano queue's share of a pool's idle capacity</span>"
        '<b class="uncovered">red: GPUs no nominal quota covers</b></p>',
        '<div id="graph"></div>',
        _json_script("graph-data", graph),
        _json_script("lending-data", lending.to_doc(decided, g)),
        f"<script>/* {lib.name} {lib.version} ({lib.licence}; licence at the end of this page) */\n"
        f"{web_libs.script(lib.name)}</script>",
        f"<script>{GRAPH_SCRIPT}</script>",
    ]


def page(decided: Plan, diff_doc: Mapping[str, Any] | None = None) -> str:
    """The whole page for a plan; with ``diff_doc`` (``diff.compare``) a section on what the change does."""
    return "".join(page_parts(decided, diff_doc))


def page_parts(
    decided: Plan,
    diff_doc: Mapping[str, Any] | None = None,
    *,
    cost_doc: dict[str, Any] | None = None,
    graph: lending.Graph | None = None,
) -> list[str]:
    """``page``'s text in parts, in order, for a writer that writes them one after the other (the synth): the page
    is never joined whole (1,000 tenants: 2.5 MB, and each concatenation of it another copy). ``cost_doc``
    (``cost.report_of``) and ``graph`` (``lending.graph``) of ``decided`` when the caller has them (the synth makes
    them once for summary.md, cost.json and this page)."""
    doc = cost.report_of(decided) if cost_doc is None else cost_doc
    g = lending.graph(decided) if graph is None else graph
    lib = web_libs.CYTOSCAPE
    body = [
        f"<h1>gpu-platform: {escape(decided.stack)}</h1>",
        f"<p>Cloud <code>{escape(decided.cloud)}</code>: {len(decided.pools)} GPU pools, {len(decided.tenants)} "
        "tenants. From the plan (<code>gpu-platform plan</code>, <code>gpu-platform cost</code>): nothing here "
        "was read from a cluster.</p>",
        *(_diff_section(diff_doc) if diff_doc is not None else []),
        *_pools_section(decided, doc),
        *_graph_section(decided, g),
        *_tenants_section(decided, doc, g),
        f"<details><summary>{escape(lib.name)} {escape(lib.version)} licence ({escape(lib.licence)})</summary>"
        f"<pre>{escape(web_libs.licence(lib.name))}</pre><p class=note>{escape(lib.source)}</p></details>",
    ]
    head = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>gpu-platform: {escape(decided.stack)}</title><style>{STYLE}</style></head><body>"
    )
    parts = [head]
    for element in body:
        parts += ("\n", element)
    parts.append("\n</body></html>\n")
    return parts


def _diff_section(diff_doc: Mapping[str, Any]) -> list[str]:
    """The diff's section (``gpu-platform diff --html``); its module is imported for a diff only, not the synth's
    page."""
    from . import diff

    return diff.html_section(diff_doc)
