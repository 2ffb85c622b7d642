"""Cost guard rails: a budget for the fleet at max scale, and no 8-GPU on-demand nodes kept up for nothing.

Their input is the cost document the program renders into one ConfigMap (labelled ``gpu-platform/cost=true``,
key ``cost.json``; ``components/plan/cost.py``): the stack name, the budget, per pool the capacity type, GPUs per
node, min/max size, tenant quota and hourly cost at max scale from dated list prices. The policies therefore
need no price table and no import of ``components``: they see exactly what ``gpu-platform cost`` prints, under
the engine (``pulumi preview --policy-pack policies``) and offline (``policies.offline``) alike.

The stack name comes from that document (the program writes ``pulumi.get_stack()``): pulumi_policy hands
validations no stack name (StackValidationArgs has resources and config only; the analyzer process knows
PULUMI_STACK, but ``policies.offline`` runs without an engine), so carrying it in a resource is the one way
both runs agree.

Only stdlib and pulumi_policy here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    PolicyResource,
    ReportViolation,
    StackValidationArgs,
    StackValidationPolicy,
)

CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
COST_LABEL = "gpu-platform/cost"  # components.plan.cost.COST_LABEL (a test keeps them equal)
COST_KEY = "cost.json"
TOP_POOLS = 3
BIG_NODE_GPUS = 8
# a stack "named dev": dev as a whole word of its name (dev, dev-aws, team-dev), not "devops"
DEFAULT_DEV_STACK_PATTERN = r"(^|[-_.])dev([-_.]|$)"
HOURS_PER_MONTH = 730


def cost_documents(resources: list[PolicyResource] | Any) -> list[tuple[PolicyResource, Mapping[str, Any]]]:
    out = []
    for r in resources:
        if r.resource_type != CONFIG_MAP:
            continue
        meta = r.props.get("metadata") or {}
        labels = meta.get("labels") or {}
        if str(labels.get(COST_LABEL, "")).lower() != "true":
            continue
        text = (r.props.get("data") or {}).get(COST_KEY)
        try:
            doc = json.loads(text) if isinstance(text, str) else None
        except ValueError:
            doc = None
        if isinstance(doc, Mapping):
            out.append((r, doc))
    return out


def _usd(x: float) -> str:
    return f"${x:,.2f}/h"


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def top_pools(doc: Mapping[str, Any], n: int = TOP_POOLS) -> list[tuple[str, float]]:
    pools = [(str(p.get("name")), _num((p.get("hourlyUsd") or {}).get("max"))) for p in doc.get("pools") or []]
    priced = [(name, x) for name, x in pools if x is not None]
    return sorted(priced, key=lambda p: (-p[1], p[0]))[:n]


def budget_problems(doc: Mapping[str, Any]) -> list[str]:
    """Messages for every budget the document's max-scale figures exceed (or cannot be checked against)."""
    budget = doc.get("budget") or {}
    total = doc.get("total") or {}
    out = []
    limit = _num(budget.get("maxHourlyUsd"))
    if limit is not None:
        unknown = list(total.get("unknownPools") or [])
        cost = _num(total.get("maxHourlyUsd"))
        if unknown or cost is None:
            out.append(
                f"budget {_usd(limit)} cannot be checked: no price for pool(s) {', '.join(unknown)} (the priced pools "
                f"alone: {_usd(_num(total.get('knownMaxHourlyUsd')) or 0.0)}); add gpu-platform:pricing.overrides "
                "for their instance types"
            )
        elif cost > limit:
            top = ", ".join(f"{name} {_usd(x)}" for name, x in top_pools(doc))
            out.append(
                f"the fleet at max scale costs {_usd(cost)}, over the budget of {_usd(limit)} "
                f"(gpu-platform:budget.maxHourlyUsd) by {_usd(cost - limit)}; largest pools: {top}. Lower their "
                "maxNodes / maxGpus or raise the budget"
            )
    tenants = {str(t.get("name")): t for t in doc.get("tenants") or []}
    for name, raw in sorted((budget.get("tenants") or {}).items()):
        tlimit = _num(raw)
        t = tenants.get(name)
        if tlimit is None or t is None:
            continue
        ceiling = t.get("ceiling") or {}
        cost = _num(ceiling.get("hourlyUsd"))
        if cost is None:
            out.append(f"tenant {name}: budget {_usd(tlimit)} cannot be checked: a pool it reaches has no price")
        elif cost > tlimit:
            pools = {str(p.get("name")): p for p in doc.get("pools") or []}
            shares = []
            for pool, gpus in (ceiling.get("gpus") or {}).items():
                per_gpu = _num((pools.get(pool) or {}).get("perGpuHourUsd"))
                if per_gpu is not None and gpus:
                    shares.append((pool, gpus * per_gpu))
            top = ", ".join(f"{p} {_usd(x)}" for p, x in sorted(shares, key=lambda s: (-s[1], s[0]))[:TOP_POOLS])
            out.append(
                f"tenant {name}: its borrowing ceiling costs {_usd(cost)}, over its budget of {_usd(tlimit)} "
                f"(gpu-platform:budget.tenants.{name}); largest pools: {top}"
            )
    return out


def _budget(args: StackValidationArgs, report: ReportViolation) -> None:
    for r, doc in cost_documents(args.resources):
        for message in budget_problems(doc):
            report(message, r.urn)


budget_max_hourly = StackValidationPolicy(
    name="gpu-budget",
    description="The stack's GPU pools at max scale (and each tenant's borrowing ceiling) cost no more per hour than "
    "gpu-platform:budget allows, at the dated list prices of the cost document.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_budget,
)


def idle_node_problems(doc: Mapping[str, Any], dev_pattern: str = DEFAULT_DEV_STACK_PATTERN) -> list[str]:
    stack = str(doc.get("stack") or "")
    dev = re.search(dev_pattern, stack) is not None
    out = []
    for p in doc.get("pools") or []:
        per_node = int(_num(p.get("gpusPerNode")) or 0)
        min_nodes = int(_num((p.get("nodes") or {}).get("min")) or 0)
        if p.get("capacity") != "on-demand" or per_node < BIG_NODE_GPUS or min_nodes <= 0:
            continue
        no_quota = not _num(p.get("tenantQuotaGpus"))
        if not (dev or no_quota):
            continue
        why = f"in stack {stack!r}, a dev stack" if dev else "and no tenant has quota on it"
        hourly = _num((p.get("hourlyUsd") or {}).get("min"))
        money = f" ({_usd(hourly)}, about ${hourly * HOURS_PER_MONTH:,.0f} a month)" if hourly is not None else ""
        out.append(
            f"pool {p.get('name')}: keeps {min_nodes} on-demand node(s) of {per_node} GPUs up around the clock{money} "
            f"{why}; set minNodes: 0 (nodes come with the first job) or use spot"
        )
    return out


def _idle_nodes(args: StackValidationArgs, report: ReportViolation) -> None:
    pattern = (args.get_config() or {}).get("devStackPattern") or DEFAULT_DEV_STACK_PATTERN
    for r, doc in cost_documents(args.resources):
        for message in idle_node_problems(doc, str(pattern)):
            report(message, r.urn)


idle_gpu_nodes = StackValidationPolicy(
    name="idle-gpu-nodes",
    description=f"No on-demand pool of {BIG_NODE_GPUS}+ GPUs per node keeps minNodes > 0 in a dev stack or without "
    "any tenant quota on it (paying for idle GPUs around the clock).",
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=_idle_nodes,
    config_schema=PolicyConfigSchema(
        properties={
            "devStackPattern": {
                "type": "string",
                "default": DEFAULT_DEV_STACK_PATTERN,
                "description": "Regular expression a dev stack's name matches (searched in the stack name).",
            }
        }
    ),
)

POLICIES = (budget_max_hourly, idle_gpu_nodes)
TARGETS = {"gpu-budget": (CONFIG_MAP + " gpu-platform-cost",), "idle-gpu-nodes": (CONFIG_MAP + " gpu-platform-cost",)}
