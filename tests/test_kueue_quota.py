"""Kueue's quota arithmetic (components/plan/kueue_quota.py), a port of kueue v0.19.2
pkg/cache/scheduler/resource_node.go. Every expected number is worked out by hand from that file's functions, the
arithmetic written beside it:

    localQuota(n, fr)          = max(0, SubtreeQuota - LendingLimit) with a lending limit, else 0
    cohort SubtreeQuota        = sum over its ClusterQueues of (SubtreeQuota - localQuota)     (accumulateFromChild)
    potentialAvailable(cq, fr) = min(SubtreeQuota + BorrowingLimit, localQuota + cohort SubtreeQuota)
                                 (no BorrowingLimit: the second term; no cohort: SubtreeQuota)
    available(cq, fr)          = LocalAvailable + min(cohort SubtreeQuota - cohort Usage,
                                                      SubtreeQuota - lq - max(0, Usage - lq) + BorrowingLimit)

A ClusterQueue's SubtreeQuota is its nominal quota (updateClusterQueueResourceNode).
"""

from __future__ import annotations

import pytest
from conftest import stack_config

from components.cli.loader import load_spec
from components.plan import kueue_quota, plan
from components.plan.kueue_quota import Quotas, quantity

GPU = "nvidia.com/gpu"


def cq(cohort: str | None, flavor: str, nominal: int, borrow: int | None = None, lend: int | None = None):
    """A ClusterQueue spec with one flavor of one resource, as kueue.cluster_queue_spec writes it (strings)."""
    q = {"name": GPU, "nominalQuota": str(nominal)}
    if borrow is not None:
        q["borrowingLimit"] = str(borrow)
    if lend is not None:
        q["lendingLimit"] = str(lend)
    spec = {"resourceGroups": [{"coveredResources": [GPU], "flavors": [{"name": flavor, "resources": [q]}]}]}
    return {**spec, "cohortName": cohort} if cohort else spec


FR = ("pool", GPU)


def test_a_borrowing_limit_with_no_lender_in_the_cohort_adds_nothing():
    """research alone on the flavor in its cohort, nominal 16, borrowingLimit 8 (prod-aws a100-train):
    cohort SubtreeQuota = 16 - localQuota 0 = 16; potentialAvailable = min(16 + 8, 0 + 16) = 16. Kueue:
    "maximum capacity (16)". With a second queue lending 20 there: cohort 36, min(24, 36) = 24."""
    alone = Quotas({"research": cq("c", "pool", 16, borrow=8)})
    assert alone.max_capacity("research", FR) == 16
    assert alone.cohort_quota("c", FR) == 16
    shared = Quotas({"research": cq("c", "pool", 16, borrow=8), "other": cq("c", "pool", 20)})
    assert shared.max_capacity("research", FR) == 24
    assert shared.max_capacity("other", FR) == 36  # no borrowingLimit: 0 + 36


def test_a_lender_with_a_lending_limit_keeps_the_rest_to_itself():
    """A nominal 10 lendingLimit 4: localQuota = max(0, 10 - 4) = 6, it lends 10 - 6 = 4. B nominal 6 lends all
    6. C nominal 0 borrowingLimit 3. Cohort SubtreeQuota = 4 + 6 + 0 = 10.
    A: 6 + 10 = 16; B: 0 + 10 = 10; C: min(0 + 3, 0 + 10) = 3."""
    q = Quotas({"a": cq("c", "pool", 10, lend=4), "b": cq("c", "pool", 6), "c": cq("c", "pool", 0, borrow=3)})
    assert q.cohort_quota("c", FR) == 10
    assert (q.lends("a", FR), q.lends("b", FR), q.lends("c", FR)) == (4, 6, 0)
    assert (q.max_capacity("a", FR), q.max_capacity("b", FR), q.max_capacity("c", FR)) == (16, 10, 3)
    assert q.members("c") == ["a", "b", "c"]


def test_a_tenant_that_never_preempts_lends_nothing_but_borrows():
    """dra-existing h100 (gpu.nvidia.com/devices): research 10, serving 4, notebooks 2 with lendingLimit 0 (its
    ClusterQueue never preempts, so it lends nothing). notebooks' localQuota = max(0, 2 - 0) = 2, it lends 0;
    cohort SubtreeQuota = 10 + 4 + 0 = 14. research: 0 + 14 = 14 (Kueue: "maximum capacity (14)");
    serving: 0 + 14 = 14; notebooks: 2 + 14 = 16."""
    q = Quotas(
        {
            "research": cq("shared", "h100", 10),
            "serving": cq("shared", "h100", 4),
            "notebooks": cq("shared", "h100", 2, lend=0),
        }
    )
    fr = ("h100", GPU)
    assert q.cohort_quota("shared", fr) == 14
    assert (q.max_capacity("research", fr), q.max_capacity("serving", fr), q.max_capacity("notebooks", fr)) == (
        14,
        14,
        16,
    )
    assert q.lends("notebooks", fr) == 0


def test_without_a_cohort_a_queue_holds_its_nominal_quota():
    """No parent: potentialAvailable = SubtreeQuota = nominal 5, borrowingLimit or not; it lends nothing."""
    q = Quotas({"solo": cq(None, "pool", 5, borrow=100)})
    assert q.max_capacity("solo", FR) == 5 and q.available("solo", FR) == 5
    assert q.lends("solo", FR) == 0 and q.cohort_of("solo") is None


def test_available_now_follows_usage_through_the_cohort():
    """The cohort of the lending-limit test (A 10 lend 4, B 6, C 0 borrow 3; cohort SubtreeQuota 10).

    B holds 8: its localQuota is 0, so all 8 go to the cohort (addUsage: val 8 > LocalAvailable 0): cohort Usage 8.
      A: LocalAvailable 6 - 0 = 6, parent 10 - 8 = 2, no borrowingLimit: 6 + 2 = 8.
      C: parent 2; borrowingLimit: stored 0 - 0, used 0, 0 - 0 + 3 = 3; min(3, 2) = 2: 0 + 2 = 2.
      B: 0 + (10 - 8) = 2.
    A then holds 7 too: LocalAvailable 6, so 7 - 6 = 1 more to the cohort: cohort Usage 9.
      B: 0 + (10 - 9) = 1; A: LocalAvailable max(0, 6 - 7) = 0, parent 1: 1.
    B's workload leaves (removeUsage 8: stored in parent 8 - 0 = 8, min(8, 8) off the cohort): cohort Usage 1.
      B: 0 + (10 - 1) = 9; the maximum capacity never moves: B 10."""
    specs = {"a": cq("c", "pool", 10, lend=4), "b": cq("c", "pool", 6), "c": cq("c", "pool", 0, borrow=3)}
    q = Quotas(specs).with_usage({"b": {FR: 8}})
    assert (q.available("a", FR), q.available("b", FR), q.available("c", FR)) == (8, 2, 2)
    assert q.cohorts["c"].usage[FR] == 8
    kueue_quota.add_usage(q.node("a"), FR, 7)
    assert q.cohorts["c"].usage[FR] == 9
    assert (q.available("b", FR), q.available("a", FR)) == (1, 1)
    kueue_quota.remove_usage(q.node("b"), FR, 8)
    assert q.cohorts["c"].usage[FR] == 1
    assert q.available("b", FR) == 9 and q.max_capacity("b", FR) == 10
    # the same snapshot built at once: the cohort's usage is the children's past their local quota
    both = Quotas(specs, {"a": {FR: 7}, "b": {FR: 8}})
    assert both.cohorts["c"].usage[FR] == 1 + 8
    assert Quotas(specs).available("b", FR) == 10  # an empty cluster: available is the maximum capacity


def test_borrowing_is_going_past_the_nominal_quota():
    """BorrowingWith: nominal < usage + val. A nominal 10: 10 more is not borrowing, 11 is."""
    q = Quotas({"a": cq("c", "pool", 10, lend=4), "b": cq("c", "pool", 6)})
    assert not q.borrowing_with("a", FR, 10) and q.borrowing_with("a", FR, 11)


@pytest.mark.parametrize(
    ("resource", "text", "value"),
    [
        ("cpu", "10000", 10_000_000),  # millicores (MilliValue)
        ("cpu", "500m", 500),
        ("cpu", "512", 512_000),
        ("memory", "64Ti", 64 * 2**40),
        ("memory", "4Ti", 4 * 2**40),
        ("memory", "2k", 2000),
        ("memory", "1E", 10**18),  # the exa suffix
        ("memory", "1e3", 1000),  # a decimal exponent
        (GPU, "16", 16),
        (GPU, "1.5", 2),  # Value() rounds up
    ],
)
def test_quantities_count_as_kueue_counts_them(resource, text, value):
    assert quantity(resource, text) == value


def test_the_plans_cluster_queues_give_kueues_numbers():
    """prod-aws's ClusterQueues as the plan holds them (cohort gpu-platform: research, serving, notebooks; applied-ml
    is Volcano's and has none). research a100-train: nominal 16, borrowingLimit 8, nobody else there: 16.
    h100-spot: 16, nobody else: 16. notebooks l4-notebooks: 4 L4 x 4 slices = 16 units, lendingLimit 0 (dev never
    preempts): localQuota 16, lends 0, cohort 0: 16. serving h100-inference mig-1g.10gb: 16 H100 x 2 = 32,
    lendingLimit 4 x 2 = 8: localQuota 24, lends 8, cohort 8: 24 + 8 = 32."""
    p = plan.build(load_spec(stack_config("prod-aws")), "prod-aws")
    q = Quotas({t.cluster_queue: t.cluster_queue_spec for t in p.tenants.values() if t.cluster_queue})
    assert q.members("gpu-platform") == ["notebooks", "research", "serving"]
    assert q.max_capacity("research", ("a100-train", GPU)) == 16
    assert q.max_capacity("research", ("h100-spot", GPU)) == 16
    assert q.max_capacity("notebooks", ("l4-notebooks", GPU)) == 16 and q.lends("notebooks", ("l4-notebooks", GPU)) == 0
    mig = ("h100-inference", "nvidia.com/mig-1g.10gb")
    assert (q.max_capacity("serving", mig), q.lends("serving", mig)) == (32, 8)
    # cpu: research's quota.cpu 512 on each of its flavors, in millicores; only research lists a100-train, so the
    # cohort holds its 512 cores there and nothing more: 0 + 512,000
    assert q.max_capacity("research", ("a100-train", "cpu")) == 512_000


@pytest.mark.parametrize(
    "stack", ["dev-aws", "prod-aws", "dev-gcp", "prod-gcp", "local", "dra-existing", "starter-aws"]
)
def test_the_plans_ceilings_are_kueues_over_its_own_cluster_queues(stack):
    """One decision: every Kueue tenant's ceiling per pool (what the ResourceQuota, the cost and explain read) is the
    maximum capacity this port gives over the ClusterQueue specs the same plan renders, and what it lends is what
    the port says it puts into its cohort."""
    p = plan.build(load_spec(stack_config(stack)), stack)
    q = Quotas({t.cluster_queue: t.cluster_queue_spec for t in p.tenants.values() if t.cluster_queue})
    kueue_tenants = [t for t in p.tenants.values() if t.cluster_queue]
    assert kueue_tenants
    for t in kueue_tenants:
        for pool, units in t.pool_ceiling_units.items():
            assert dict(units) == {r: q.max_capacity(t.name, (pool, r)) for r in units}, (t.name, pool)
            assert dict(t.pool_lent_units[pool]) == {r: q.lends(t.name, (pool, r)) for r in units}, (t.name, pool)
