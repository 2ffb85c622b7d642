"""The lending graph (components/plan/lending.py): Kueue tenants lend to and borrow from a cohort node per cohort and
pool, never from one another (kueue v0.19.2 site/content/en/docs/concepts/cluster_queue.md "Cohort",
"BorrowingLimit", "LendingLimit"; pkg/cache/scheduler/resource_node.go ``accumulateFromChild``,
``potentialAvailable``).

Expected values are worked by hand from the shipped stack files (the numbers in the docstrings), never taken from
the graph.
"""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

from components.cli.loader import load_spec
from components.cli.plans import shipped_plan
from components.plan import lending, plan
from tests.conftest import stack_config


def _edges(g: lending.Graph, kind: str) -> dict[tuple[str, str], dict[str, int]]:
    return {(e.source, e.target): dict(e.units) for e in g.edges if e.kind == kind}


def test_prod_aws_tenants_lend_into_their_cohort_per_pool_and_nobody_borrows():
    """prod-aws (stack file): research, serving and notebooks are Kueue tenants of the default cohort gpu-platform.
    research (training-critical, no lendingLimit) lends all its nominal quota: 16 GPUs on a100-train and 16 on
    h100-spot. serving lends its lendingLimit, 4 of its 16 H100s on h100-inference, whose MIG layout
    {3g.40gb: 1, 2g.20gb: 1, 1g.10gb: 2} per GPU makes that 4 3g, 4 2g and 8 1g slices. notebooks (priority dev,
    never preempts) lends nothing: no edge and no cohort node on l4-notebooks. Each pool has one Kueue tenant, so
    nobody can borrow (research's borrowingLimit 8 on a100-train finds no other lender there); applied-ml (Volcano)
    holds all of a100-gang (2 nodes x 8 = 16 GPUs = its guarantee), so no idle edge either."""
    g = lending.graph(shipped_plan("prod-aws"))
    assert [(c.cohort, c.pool, dict(c.lent)) for c in g.cohorts] == [
        ("gpu-platform", "a100-train", {"nvidia.com/gpu": 16}),
        (
            "gpu-platform",
            "h100-inference",
            {"nvidia.com/mig-1g.10gb": 8, "nvidia.com/mig-2g.20gb": 4, "nvidia.com/mig-3g.40gb": 4},
        ),
        ("gpu-platform", "h100-spot", {"nvidia.com/gpu": 16}),
    ]
    assert _edges(g, "lend") == {
        ("tenant:research", "cohort:gpu-platform/a100-train"): {"nvidia.com/gpu": 16},
        ("tenant:research", "cohort:gpu-platform/h100-spot"): {"nvidia.com/gpu": 16},
        ("tenant:serving", "cohort:gpu-platform/h100-inference"): {
            "nvidia.com/mig-1g.10gb": 8,
            "nvidia.com/mig-2g.20gb": 4,
            "nvidia.com/mig-3g.40gb": 4,
        },
    }
    assert _edges(g, "borrow") == {} and _edges(g, "idle") == {}
    assert _edges(g, "nominal") == {
        ("pool:a100-gang", "tenant:applied-ml"): {"nvidia.com/gpu": 16},
        ("pool:l4-notebooks", "tenant:notebooks"): {"nvidia.com/gpu": 16},  # 4 L4s time-sliced 4 ways
        ("pool:a100-train", "tenant:research"): {"nvidia.com/gpu": 16},
        ("pool:h100-spot", "tenant:research"): {"nvidia.com/gpu": 16},
        ("pool:h100-inference", "tenant:serving"): {
            "nvidia.com/mig-1g.10gb": 32,
            "nvidia.com/mig-2g.20gb": 16,
            "nvidia.com/mig-3g.40gb": 16,
        },
    }
    assert next(lending.edge_label(e) for e in g.edges if e.kind == "lend") == "lends 16 nvidia.com/gpu"


def test_dra_existing_borrowers_take_what_the_other_members_lend_on_the_pool():
    """dra-existing (stack file), cohort shared. h100: research lends 10, serving 4, notebooks (dev) 0: the cohort
    holds 14 there; with no borrowingLimit each can take what the others lend: research 14 - 10 = 4, serving
    14 - 4 = 10, notebooks 14. a100-mig (MIG 3g.40gb x 2 per GPU): research and serving lend 4 GPUs = 8 devices
    each, 16 in all, and each can take the other's 8. One edge per tenant, pool and direction: 5 nominal, 4 lend,
    5 borrow, and none from one tenant to another."""
    g = lending.graph(shipped_plan("dra-existing"))
    h100, mig = "gpu.nvidia.com/devices", "mig.nvidia.com/devices"
    assert [(c.id, dict(c.lent)) for c in g.cohorts] == [
        ("cohort:shared/a100-mig", {mig: 16}),
        ("cohort:shared/h100", {h100: 14}),
    ]
    assert _edges(g, "borrow") == {
        ("cohort:shared/h100", "tenant:research"): {h100: 4},
        ("cohort:shared/h100", "tenant:serving"): {h100: 10},
        ("cohort:shared/h100", "tenant:notebooks"): {h100: 14},
        ("cohort:shared/a100-mig", "tenant:research"): {mig: 8},
        ("cohort:shared/a100-mig", "tenant:serving"): {mig: 8},
    }
    assert _edges(g, "lend") == {
        ("tenant:research", "cohort:shared/h100"): {h100: 10},
        ("tenant:serving", "cohort:shared/h100"): {h100: 4},
        ("tenant:research", "cohort:shared/a100-mig"): {mig: 8},
        ("tenant:serving", "cohort:shared/a100-mig"): {mig: 8},
    }
    assert len(g.edges) == 5 + 4 + 5
    assert not any(e.source.startswith("tenant:") and e.target.startswith("tenant:") for e in g.edges)
    labels = {(e.source, e.target): lending.edge_label(e) for e in g.edges}
    assert labels[("cohort:shared/h100", "tenant:notebooks")] == f"borrows up to 14 {h100}"


def test_a_borrowing_limit_caps_what_a_tenant_takes_from_the_cohort():
    """notebooks (2 H100 devices of its own) with borrowingLimit 5 on h100: of the 14 the cohort holds there it
    can take 5 (Kueue's maximum capacity 2 + 5 = 7, less its nominal 2)."""
    cfg = stack_config("dra-existing")
    for t in cfg["gpu-platform:tenants"]:
        if t["name"] == "notebooks":
            t["borrowingLimit"] = {"h100": 5}
    g = lending.graph(plan.build(load_spec(cfg), "dra-existing"))
    assert _edges(g, "borrow")[("cohort:shared/h100", "tenant:notebooks")] == {"gpu.nvidia.com/devices": 5}


def test_a_borrow_edge_never_exceeds_what_the_other_members_lend():
    """A ceiling beyond the cohort's quota (a plan whose research could hold 100 on h100) still borrows only what
    serving and notebooks lend there: 4 + 0 = 4, not the cohort's 14 (research's own 10 is not borrowed)."""
    decided = shipped_plan("dra-existing")
    research = decided.tenants["research"]
    ceilings = dict(research.pool_ceiling_units)
    ceilings["h100"] = MappingProxyType({"gpu.nvidia.com/devices": 100})
    tenants = dict(decided.tenants)
    tenants["research"] = dataclasses.replace(research, pool_ceiling_units=MappingProxyType(ceilings))
    g = lending.graph(dataclasses.replace(decided, tenants=MappingProxyType(tenants)))
    assert _edges(g, "borrow")[("cohort:shared/h100", "tenant:research")] == {"gpu.nvidia.com/devices": 4}


def test_without_a_cohort_nothing_is_lent_or_borrowed():
    """dra-existing with no cohort (none per tenant, defaultCohort null): only nominal edges, no cohort nodes."""
    cfg = stack_config("dra-existing")
    for t in cfg["gpu-platform:tenants"]:
        t.pop("cohort")
    cfg.setdefault("gpu-platform:scheduling", {})["defaultCohort"] = None
    g = lending.graph(plan.build(load_spec(cfg), "dra-existing"))
    assert g.cohorts == () and {e.kind for e in g.edges} == {"nominal"} and len(g.edges) == 5


def test_edges_grow_with_the_tenants_pools_not_with_pairs_of_tenants():
    """The bench generator's 200 tenants on 24 pools, all in the default cohort, two pools each: at most one
    nominal, one lend and one borrow edge per tenant and pool (pairs of lender and borrower were ~8 per pool)."""
    from tests.bench_synth import generated_config

    decided = plan.build(load_spec(generated_config(200, 24)), "bench")
    g = lending.graph(decided)
    reach = sum(len(t.pool_units) for t in decided.tenants.values())
    assert reach == 400
    assert len(g.edges) <= 3 * reach and sum(e.kind == "borrow" for e in g.edges) <= reach
    assert len(g.cohorts) <= 24
    assert not any(e.source.startswith("tenant:") and e.target.startswith("tenant:") for e in g.edges)
