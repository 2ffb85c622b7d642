"""Each fact about a pool or a tenant is decided once per spec, and the plan once per synth (issue 42): the plan stage
asks ``derive`` per pool, not per tenant or per quota entry, the synth's program renders the spec the synth already
validated, and the work of a plan grows with the stack, not with pools x tenants."""

from __future__ import annotations

import cProfile
import gc
import pstats

import pytest
from bench_synth import generated_config
from conftest import STACKS, render_config, stack_config

from components.cli import config as program_config
from components.cli.loader import load_spec
from components.plan import ceilings, cost, derive, kueue, plan

GPU = "nvidia.com/gpu"


def _calls(fn, *args) -> dict[tuple[str, int], int]:
    """(file, first line) -> calls of every function while ``fn(*args)`` runs; the collector off meanwhile, so that
    finalizers of garbage other tests left (asyncio futures and the logging they set off) are not counted."""
    prof = cProfile.Profile()
    gc.disable()
    try:
        prof.runcall(fn, *args)
    finally:
        gc.enable()
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    return {(f, line): cc for (f, line, _), (cc, *_) in stats.items()}


def _code(cached) -> tuple[str, int]:
    inner = cached.__wrapped__.__code__
    return inner.co_filename, inner.co_firstlineno


def test_every_pool_fact_is_worked_out_once_per_pool_of_a_big_stack():
    spec = load_spec(generated_config(tenants=40, pools_n=12))
    calls = _calls(plan.build, spec, "bench")
    for fact in (derive.units_per_gpu, derive.pool_device_plugin, derive.pool_labels, cost.pool_cost):
        assert calls.get(_code(fact), 0) <= len(spec.node_pools), fact.__name__
    # and a tenant's ceilings once per tenant (they were worked out four times: quota, plan, cost twice)
    assert calls.get(_code(ceilings.tenant_pool_ceiling_units), 0) == len(spec.tenants)
    # a pool's per-GPU price once per pool, however many tenants' costs read it
    per_gpu_hour = cost.PoolCost.per_gpu_hour.func.__code__
    assert 0 < calls.get((per_gpu_hour.co_filename, per_gpu_hour.co_firstlineno), 0) <= len(spec.node_pools)


def test_whether_a_tenant_never_preempts_follows_its_ceiling_and_every_class_below_it():
    cfg = stack_config("prod-aws")  # only dev, the lowest class, is preemptionPolicy Never
    spec = load_spec(cfg)
    assert [derive.tenant_never_preempts(spec, t) for t in spec.tenants] == [False, False, False, True]
    cfg["gpu-platform:priorityClasses"] = [
        {"name": c.name, "value": c.value, "preemptionPolicy": "Never" if c.name == "batch" else c.preemption_policy}
        for c in spec.priority_classes
    ]
    cfg["gpu-platform:tenants"][0]["priority"] = "batch"  # batch and dev below it: both Never
    spec = load_spec(cfg)
    assert [derive.tenant_never_preempts(spec, t) for t in spec.tenants] == [True, False, False, True]


def _plan_calls(tenants: int, pools: int) -> int:
    """Function calls of one plan of a generated stack whose every tenant has a GPU on pool-00 and pool-01."""
    cfg = generated_config(tenants=tenants, pools_n=pools)
    for t in cfg["gpu-platform:tenants"]:
        t["gpuQuota"] = {"pool-00": 1, "pool-01": 1}
    return sum(_calls(plan.build, load_spec(cfg), "bench").values())


def test_a_tenant_costs_the_plan_the_same_however_many_pools_the_stack_has():
    # Each tenant reaches the same two pools at any stack size, so what one more tenant adds to the plan must not
    # grow with the pool count. It did (~2,500 calls per tenant at 6 pools, ~3,200 at 30) while the plan summed
    # every tenant's quota once per pool (capacity_report, uncovered_gpus, the pool's tenant GPUs), scanned the
    # pools per lookup and asked every pool's provisioning class per ClusterQueue: pools x tenants.
    _plan_calls(5, 6)  # the first plan of a process also pays for lazy imports and compiled patterns
    per_tenant = {pools: (_plan_calls(20, pools) - _plan_calls(10, pools)) / 10 for pools in (6, 30)}
    assert per_tenant[30] <= 1.05 * per_tenant[6], per_tenant


def test_a_pool_fact_is_answered_afresh_for_a_pool_that_is_not_the_specs_own():
    spec = load_spec(stack_config("prod-aws"))
    pool = spec.pool("a100-train")
    assert derive.units_per_gpu(spec, pool) == {GPU: 1}
    shared = pool.model_copy(update={"sharing": spec.pool("l4-notebooks").sharing})
    assert derive.units_per_gpu(spec, shared) == {GPU: 4}  # time-sliced x4, not renamed (prod-aws)
    assert derive.units_per_gpu(spec, pool) == {GPU: 1}


def test_a_kept_answer_handed_out_is_a_copy_a_caller_may_change():
    spec = load_spec(stack_config("prod-aws"))
    pool = spec.pool("a100-train")
    derive.units_per_gpu(spec, pool)["nvidia.com/gpu.shared"] = 99
    derive.pool_labels(spec, pool)["extra"] = "x"
    assert derive.units_per_gpu(spec, pool) == {GPU: 1}
    assert "extra" not in derive.pool_labels(spec, pool)
    ceiling = derive.per_tenant(lambda s, t: {"a100-train": {GPU: 8}})
    team = spec.tenants[0]
    ceiling(spec, team)["a100-train"][GPU] = 0
    assert ceiling(spec, team) == {"a100-train": {GPU: 8}}


@pytest.mark.parametrize("stack", [*STACKS, "generated"])
def test_a_tenants_flavor_order_is_the_order_of_its_own_pools_by_class_then_name(stack):
    # kueue.tenant_pools reads every pool's place, decided once per spec: the same order worked out per tenant
    spec = load_spec(generated_config(tenants=30, pools_n=12) if stack == "generated" else stack_config(stack))
    for tenant in spec.tenants:
        own = [p for p in spec.node_pools if p.name in tenant.gpu_quota]
        expected = sorted(own, key=lambda p: (derive.FLAVOR_CLASSES.index(derive.flavor_class(spec, p)), p.name))
        assert kueue.tenant_pools(spec, tenant) == expected, tenant.name


def test_the_synth_validates_a_stack_once_and_its_program_renders_that_spec(monkeypatch):
    asked = []
    real = program_config.load_spec
    monkeypatch.setattr(program_config, "load_spec", lambda c: asked.append(c) or real(c))
    rendering = render_config(stack_config("local"), "local")
    assert asked == []  # the program read the synth's spec
    assert rendering.resources


def test_the_program_validates_what_it_reads_when_that_is_not_what_the_synth_validated(monkeypatch):
    spec = load_spec(stack_config("local"))
    asked = []
    monkeypatch.setattr(program_config, "pulumi_config", lambda: {"gpu-platform:cloud": "existing"})
    monkeypatch.setattr(program_config, "load_spec", lambda c: asked.append(c) or spec)
    with program_config.handed_spec({"gpu-platform:cloud": "aws"}, spec):
        program_config.spec_from_pulumi_config()
    assert asked == [{"gpu-platform:cloud": "existing"}]


def test_the_quota_tree_is_dropped_once_the_plan_keeps_what_it_decided():
    """Kueue's quota tree (every ClusterQueue spec and its nodes, ~6 MiB at 1,000 tenants) is not kept through the
    render: the plan holds the queues it decided from it, and asked again the tree is the same."""
    spec = load_spec(generated_config(tenants=12, pools_n=4))
    decided = plan.build(spec, "bench")
    assert not [k for k in spec.__dict__ if "kueue.quotas" in k]
    again = kueue.quotas(spec)
    queues = {name: t.cluster_queue_spec for name, t in decided.tenants.items() if t.cluster_queue_spec is not None}
    assert len(queues) == 12
    assert {name: plan.plain(q) for name, q in queues.items()} == {n: plan.plain(q) for n, q in again.specs.items()}
