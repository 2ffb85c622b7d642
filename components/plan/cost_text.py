"""The cost document (``cost.report``, ``cost.report_of``) for a person: the *Cost* section of ``summary.md`` and
``gpu-platform cost``. Reads only the document, so the text cannot say more than the JSON does."""

from __future__ import annotations

from typing import Any

from ..data import prices


def usd(x: float | None) -> str:
    if x is None:
        return "unknown"
    return f"${x:,.2f}" if x >= 1 or x == 0 else f"${x:.4f}"


def _price(doc: dict[str, Any] | None) -> str:
    if doc is None:
        return "-"
    if doc["usd"] is None:
        return "unknown"
    return usd(doc["usd"]) + (" (est.)" if doc.get("estimate") else "")


def markdown(doc: dict[str, Any]) -> list[str]:
    lines = [
        "## Cost",
        "",
        f"List prices, USD per hour ({doc['cloud']}, region {doc['region'] or 'unset'}); *unknown*: the catalog "
        "has no figure (add `gpu-platform:pricing.overrides`), never counted as zero. *(est.)*: an AWS spot "
        f"estimate: {prices.SPOT_DISCOUNT_BASIS}.",
        "",
        "| pool | capacity | node on-demand | node spot | GPUs min..max | $/h at min | $/h at max "
        "| $/h at max, all on-demand | per GPU-hour | per scheduler unit |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in doc["pools"]:
        units = ", ".join(f"{usd(v)} / {k}" for k, v in p["perUnitHourUsd"].items()) or "-"
        cap = p["capacity"] + (" (+on-demand fallback)" if p["onDemandFallback"] else "")
        lines.append(
            f"| {p['name']} | {cap} | {_price(p['onDemandPerNodeHour'])} | {_price(p['spotPerNodeHour'])} "
            f"| {p['gpus']['min']}..{p['gpus']['max']} | {usd(p['hourlyUsd']['min'])} | {usd(p['hourlyUsd']['max'])} "
            f"| {usd(p['maxHourlyUsdAllOnDemand'])} | {usd(p['perGpuHourUsd'])} | {units} |"
        )
    if not doc["pools"]:
        lines.append("| (none) | | | | | | | | | |")
    lines += _fixed_markdown(doc.get("fixed", []))
    lines += _cold_pull_markdown(doc["pools"])
    total = doc["total"]
    if total["unknownPools"]:
        total_text = (
            f"**unknown**: no price for {', '.join(total['unknownPools'])} (the priced pools alone: "
            f"{usd(total['knownMaxHourlyUsd'])})"
        )
    else:
        total_text = f"**{usd(total['maxHourlyUsd'])}** per hour"
    lines += ["", f"Whole stack at max scale: {total_text}; at min size: {usd(total['minHourlyUsd'])} per hour."]
    uncovered = [(p["name"], u) for p in doc["pools"] if (u := p.get("uncovered")) and u["gpus"]]
    if uncovered:
        listed = ", ".join(f"{name} {u['gpus']} GPUs ({usd(u['hourlyUsd'])})" for name, u in uncovered)
        lines.append(
            f"Of that, GPUs no tenant's nominal quota covers, which Kueue never admits a workload onto: {listed}; "
            f"{usd(total['uncoveredMaxHourlyUsd'])} per hour at max scale."
        )
    budget = doc["budget"]
    if budget["maxHourlyUsd"] is not None:
        lines.append(f"Budget (`gpu-platform:budget.maxHourlyUsd`): {usd(budget['maxHourlyUsd'])} per hour.")
    if doc["tenants"]:
        lines += [
            "",
            "| tenant | nominal quota (GPUs) | $/h nominal | borrowing ceiling (GPUs) | $/h at ceiling | budget |",
            "|---|---|---|---|---|---|",
        ]
        for t in doc["tenants"]:
            nominal = ", ".join(f"{k}: {v}" for k, v in t["nominal"]["gpus"].items()) or "-"
            ceiling = ", ".join(f"{k}: {v}" for k, v in t["ceiling"]["gpus"].items()) or "-"
            tb = budget["tenants"].get(t["name"])
            lines.append(
                f"| {t['name']} | {nominal} | {usd(t['nominal']['hourlyUsd'])} | {ceiling} "
                f"| {usd(t['ceiling']['hourlyUsd'])} | {usd(tb) if tb is not None else '-'} |"
            )
    reasons = [
        f"- {p['name']}: {price['unknown']}"
        for p in doc["pools"]
        for price in (p["onDemandPerNodeHour"], p["spotPerNodeHour"])
        if price and price["usd"] is None
    ]
    if reasons:
        lines += ["", "Unknown prices:", "", *dict.fromkeys(reasons)]
    sources = "; ".join(f"{v['source']} generated {v['generatedAt']}" for v in doc["assumptions"]["catalog"].values())
    lines += ["", f"Price sources: {sources} (components/data/prices.json, scripts/extract_prices.py)."]
    return lines


def _cold_pull_markdown(pools: list[dict[str, Any]]) -> list[str]:
    """What a cold pull of each pool's images costs (a stack with an image section: docs/concepts/images.md)."""
    rows = [(p["name"], p["coldPull"]) for p in pools if p.get("coldPull")]
    if not rows:
        return []
    lines = [
        "",
        "| pool | images (GiB) | warm | cold pull (min) | GPU-hours per node | per node | from zero to max |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, c in rows:
        size = f"{c['gib']}" + ("" if c["size"] == "stack" else " (default)")
        warm = c["warm"] + (": avoided" if c["avoided"] else "")
        lines.append(
            f"| {name} | {size} | {warm} | {c['minutes']} | {c['gpuHoursPerNode']} | {usd(c['usdPerNode'])} "
            f"| {usd(c['usdMaxScale'])} ({c['maxNodes']} nodes) |"
        )
    return [*lines, "", "A cold pull at 3.5 GB a minute, the node's GPUs idle meanwhile (docs/concepts/images.md)."]


def _fixed_markdown(fixed: list[dict[str, Any]]) -> list[str]:
    """The fixed costs of a created cluster, a row each (none for a found cluster)."""
    if not fixed:
        return []
    lines = ["", "| fixed cost | count min..max | $/h each | $/h at min | $/h at max |", "|---|---|---|---|---|"]
    for f in fixed:
        lines.append(
            f"| {f['item']} | {f['count']['min']}..{f['count']['max']} | {_price(f['usdPerHour'])} "
            f"| {usd(f['hourlyUsd']['min'])} | {usd(f['hourlyUsd']['max'])} |"
        )
    sources = dict.fromkeys(
        f"{f['usdPerHour'].get('source')} (as of {f['usdPerHour'].get('asOf')})"
        for f in fixed
        if f["usdPerHour"]["usd"] is not None
    )
    return [*lines, "", "Fixed-cost sources: " + "; ".join(sources) + "."]
