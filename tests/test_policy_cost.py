"""The cost policies (policies/cost_policies.py) on small hand-written cost documents: when a pool's idle nodes or
a budget are reported, the exact message, and how the policies find the document in the stack.

The document shape is the one components/plan/cost.py renders (camelCase, numbers as the engine hands them: floats);
every figure below is worked out by hand (e.g. $10.50/h x 730 h = $7,665 a month).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from test_policies import check_stack, k8s

from policies import cost_policies


def _pool(name: str = "big", capacity: str = "on-demand", per_node: float = 8.0, min_nodes: float = 2.0, **extra):
    return {"name": name, "capacity": capacity, "gpusPerNode": per_node, "nodes": {"min": min_nodes}, **extra}


def _idle(stack: str | None, *pools: dict[str, Any], **kw: Any) -> list[str]:
    doc: dict[str, Any] = {"pools": list(pools)}
    if stack is not None:
        doc["stack"] = stack
    return cost_policies.idle_node_problems(doc, **kw)


DEV_MSG = (
    "pool big: keeps 2 on-demand node(s) of 8 GPUs up around the clock ($10.50/h, about $7,665 a month) in stack "
    "'dev', a dev stack; set minNodes: 0 (nodes come with the first job) or use spot"
)


def test_idle_nodes_message_in_a_dev_stack():
    """A dev stack keeping big on-demand nodes up is told how many, what they cost per hour and per month."""
    assert _idle("dev", _pool(tenantQuotaGpus=16.0, hourlyUsd={"min": 10.5})) == [DEV_MSG]


def test_idle_nodes_message_without_tenant_quota_and_without_a_price():
    """Outside dev stacks only a pool no tenant has quota on is idle; without a price the cost is left out."""
    assert _idle("prod", _pool(min_nodes=1.0, tenantQuotaGpus=0.0)) == [
        "pool big: keeps 1 on-demand node(s) of 8 GPUs up around the clock and no tenant has quota on it; set "
        "minNodes: 0 (nodes come with the first job) or use spot"
    ]
    assert len(_idle("prod", _pool())) == 1  # no quota field at all
    assert _idle("prod", _pool(tenantQuotaGpus=8.0)) == []


@pytest.mark.parametrize(
    ("pool", "warned"),
    [
        (_pool(min_nodes=0.0), False),  # scales from zero: nothing idles
        (_pool(min_nodes=1.0), True),
        (_pool(per_node=7.0), False),  # below the 8-GPU node size
        (_pool(per_node=8.0), True),
        (_pool(per_node=16.0), True),
        (_pool(capacity="spot"), False),
        (_pool(capacity="ON_DEMAND"), False),  # the document writes "on-demand"
        ({"name": "big", "capacity": "on-demand", "gpusPerNode": 8.0}, False),  # no min: 0
        ({"name": "big", "capacity": "on-demand", "nodes": {"min": 2.0}}, False),  # no GPU count: 0
    ],
)
def test_idle_nodes_boundaries(pool, warned):
    """Only on-demand pools of 8+ GPUs per node with at least one node always up are judged."""
    assert bool(_idle("dev", pool)) == warned


@pytest.mark.parametrize(
    ("stack", "dev"),
    [
        ("dev", True),
        ("dev-aws", True),
        ("team_dev", True),
        ("eu.dev.1", True),
        ("devops", False),
        ("mydev", False),
        ("prod", False),
        (None, False),
    ],
)
def test_dev_stack_is_dev_as_a_whole_word(stack, dev):
    """A stack is a dev stack when "dev" is a word of its name (separated by - _ .), not part of one."""
    assert bool(_idle(stack, _pool(tenantQuotaGpus=8.0))) == dev


def test_dev_stack_pattern_is_a_parameter():
    """The pattern is configurable (devStackPattern); a custom one replaces the default."""
    assert len(_idle("sandbox", _pool(tenantQuotaGpus=8.0), dev_pattern="^sandbox$")) == 1
    assert _idle("dev", _pool(tenantQuotaGpus=8.0), dev_pattern="^sandbox$") == []


def test_every_idle_pool_is_reported_in_order():
    """Each offending pool gets its own message, in the document's order, past pools that are fine."""
    got = _idle("prod", _pool("spot", "spot"), _pool("b"), _pool("ok", tenantQuotaGpus=8.0), _pool("a"))
    assert [m.split(":")[0] for m in got] == ["pool b", "pool a"]


# ------------------------------------------------------------------------------------------- budgets


def test_budget_over_the_limit_names_the_three_largest_pools():
    """Over budget: the cost, the budget, the excess and the three most expensive pools (ties by name)."""
    doc = {
        "budget": {"maxHourlyUsd": 1000.0},
        "total": {"maxHourlyUsd": 1234.5},
        "pools": [
            {"name": "c", "hourlyUsd": {"max": 200.0}},
            {"name": "a", "hourlyUsd": {"max": 600.0}},
            {"name": "unpriced"},
            {"name": "d", "hourlyUsd": {"max": 34.5}},
            {"name": "b", "hourlyUsd": {"max": 200.0}},
        ],
    }
    assert cost_policies.budget_problems(doc) == [
        "the fleet at max scale costs $1,234.50/h, over the budget of $1,000.00/h (gpu-platform:budget.maxHourlyUsd) "
        "by $234.50/h; largest pools: a $600.00/h, b $200.00/h, c $200.00/h. Lower their maxNodes / maxGpus or "
        "raise the budget"
    ]
    doc["total"]["maxHourlyUsd"] = 1000.0
    assert cost_policies.budget_problems(doc) == []  # at the budget is within it


def test_budget_cannot_be_checked_without_prices():
    """Pools without a price make the total unknown: the budget cannot be checked, and the message says which
    pools and what the priced ones alone cost."""
    doc = {
        "budget": {"maxHourlyUsd": 100.0},
        "total": {"maxHourlyUsd": 50.0, "unknownPools": ["x", "y"], "knownMaxHourlyUsd": 12.5},
    }
    assert cost_policies.budget_problems(doc) == [
        "budget $100.00/h cannot be checked: no price for pool(s) x, y (the priced pools alone: $12.50/h); add "
        "gpu-platform:pricing.overrides for their instance types"
    ]
    assert cost_policies.budget_problems({"budget": {"maxHourlyUsd": 100.0}}) == [
        "budget $100.00/h cannot be checked: no price for pool(s)  (the priced pools alone: $0.00/h); add "
        "gpu-platform:pricing.overrides for their instance types"
    ]
    assert cost_policies.budget_problems({"total": {"maxHourlyUsd": 1e9}}) == []  # no budget, nothing to check


def test_tenant_budgets():
    """Each budgeted tenant's borrowing ceiling is checked (tenants in name order): over budget names its largest
    pools (at most three, ties by name) by GPUs x per-GPU price; a ceiling without a price cannot be checked;
    unknown tenants and budgets that are not numbers are skipped."""
    doc = {
        "budget": {"tenants": {"u": 5.0, "t": 10.0, "ghost": 1.0, "cheap": 100.0, "text": "1", "none": None}},
        "tenants": [
            {
                "name": "t",
                "ceiling": {
                    "hourlyUsd": 17.0,
                    "gpus": {"p3": 1.0, "p2": 1.0, "p1": 2.0, "p0": 0.0, "px": 4.0, "p4": 1.0},
                },
            },
            {"name": "u", "ceiling": {}},
            {"name": "cheap", "ceiling": {"hourlyUsd": 100.0}},
            {"name": "text", "ceiling": {"hourlyUsd": 100.0}},
            {"name": "none", "ceiling": {"hourlyUsd": 100.0}},
        ],
        "pools": [
            {"name": "p0", "perGpuHourUsd": 9.0},
            {"name": "p1", "perGpuHourUsd": 4.0},
            {"name": "p2", "perGpuHourUsd": 4.0},
            {"name": "p3", "perGpuHourUsd": 4.0},
            {"name": "p4", "perGpuHourUsd": 1.0},
            {"name": "px"},
        ],
    }
    assert cost_policies.budget_problems(doc) == [
        "tenant t: its borrowing ceiling costs $17.00/h, over its budget of $10.00/h (gpu-platform:budget.tenants.t); "
        "largest pools: p1 $8.00/h, p2 $4.00/h, p3 $4.00/h",
        "tenant u: budget $5.00/h cannot be checked: a pool it reaches has no price",
    ]


def test_top_pools():
    """The n most expensive priced pools at max scale, ties broken by name."""
    doc = {"pools": [{"name": "a", "hourlyUsd": {"max": 1.0}}, {"name": "b", "hourlyUsd": {"max": 2.0}}, {"name": "c"}]}
    assert cost_policies.top_pools(doc) == [("b", 2.0), ("a", 1.0)]
    assert cost_policies.top_pools(doc, 1) == [("b", 2.0)]
    assert cost_policies.top_pools({}) == []


# -------------------------------------------------------------------------------- the stack policies


def _cost_map(name: str, doc: Any, label: str = "true") -> tuple[str, str, dict]:
    data = {"cost.json": doc if isinstance(doc, str) else json.dumps(doc)}
    return k8s("v1", "ConfigMap", name, "gpu-platform", metadata={"labels": {"gpu-platform/cost": label}}, data=data)


IDLE_DOC = {"stack": "dev", "pools": [_pool(tenantQuotaGpus=16.0, hourlyUsd={"min": 10.5})]}


def test_the_policies_read_the_labelled_cost_configmap():
    """The policies read cost.json of a ConfigMap labelled gpu-platform/cost=true (any case) and report on it;
    unlabelled maps, unparsable or non-object documents are ignored."""
    p = cost_policies.idle_gpu_nodes
    assert check_stack(p, [_cost_map("cost", IDLE_DOC)]) == [("cost", DEV_MSG)]
    assert check_stack(p, [_cost_map("cost", IDLE_DOC, "True")]) == [("cost", DEV_MSG)]
    assert check_stack(p, [_cost_map("cost", IDLE_DOC, "false")]) == []
    assert check_stack(p, [_cost_map("cost", "{not json"), _cost_map("list", "[1]")]) == []
    plain = k8s("v1", "ConfigMap", "plain", data={"cost.json": json.dumps(IDLE_DOC)})
    ns = k8s("v1", "Namespace", "gpu-platform")
    assert check_stack(p, [ns, plain, _cost_map("cost", IDLE_DOC)]) == [("cost", DEV_MSG)]  # read past the others
    other = k8s("v1", "Secret", "cost", metadata={"labels": {"gpu-platform/cost": "true"}})
    assert check_stack(p, [(other[0], other[1], {**other[2], "data": {"cost.json": json.dumps(IDLE_DOC)}})]) == []


def test_idle_policy_honours_the_configured_dev_pattern():
    """devStackPattern from the policy config decides what a dev stack is."""
    p = cost_policies.idle_gpu_nodes
    assert check_stack(p, [_cost_map("cost", IDLE_DOC)], {"devStackPattern": "^staging$"}) == []
    sandbox = {**IDLE_DOC, "stack": "staging"}
    assert len(check_stack(p, [_cost_map("cost", sandbox)], {"devStackPattern": "^staging$"})) == 1


def test_budget_policy_reports_on_the_cost_configmap():
    """gpu-budget reports each budget problem on the ConfigMap holding the document."""
    doc = {"budget": {"maxHourlyUsd": 1.0}, "total": {"maxHourlyUsd": 2.0}, "pools": []}
    assert check_stack(cost_policies.budget_max_hourly, [_cost_map("cost", doc)]) == [
        (
            "cost",
            "the fleet at max scale costs $2.00/h, over the budget of $1.00/h (gpu-platform:budget.maxHourlyUsd) by "
            "$1.00/h; largest pools: . Lower their maxNodes / maxGpus or raise the budget",
        )
    ]
