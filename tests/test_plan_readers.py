"""What the readers after the plan (explain, the summary, the cost report) read from it (issue 28): the pool and
tenant facts they used to ask derive/cost/kueue for, checked against the stack files and known prices."""

from __future__ import annotations

import pytest
from conftest import STACKS, stack_config

from components.cli.loader import load_spec
from components.plan import cost, plan


def _plan(stack: str) -> plan.Plan:
    return plan.build(load_spec(stack_config(stack)), stack)


def test_a_pool_carries_its_instance_types_class_and_what_a_node_advertises():
    """dev-aws: a10g-spot is a spot pool of three g5 types, one A10G per node; l4-shared time-slices each L4
    four ways, so one node advertises 4 nvidia.com/gpu and Kueue tries it last (shared)."""
    pools = _plan("dev-aws").pools
    spot, shared = pools["a10g-spot"], pools["l4-shared"]
    assert spot.instance_types == ("g5.xlarge", "g5.2xlarge", "g5.4xlarge")
    assert (spot.flavor_class, spot.max_gpus, dict(spot.advertises)) == ("spot", 8, {"nvidia.com/gpu": 1})
    assert (shared.flavor_class, dict(shared.advertises)) == ("shared", {"nvidia.com/gpu": 4})
    assert shared.sharing["failRequestsGreaterThanOne"] is True  # the default: one unit per container
    assert spot.os == shared.os == "al2023"  # the EKS default
    assert spot.cold_start and spot.provisioning_class is None and spot.admission_check is None


def test_a_queued_provisioning_pool_names_its_dws_check():
    """prod-gcp: h100-burst sets gke.queuedProvisioning, so its flavor carries the DWS check <pool>-dws."""
    burst = _plan("prod-gcp").pools["h100-burst"]
    assert burst.queued_provisioning and burst.flavor_class == "queued"
    assert (burst.provisioning_class, burst.admission_check) == ("queued-provisioning.gke.io", "h100-burst-dws")
    assert burst.taints[-1] == {"key": "cloud.google.com/gke-queued", "value": "true", "effect": "NoSchedule"}


def test_a_tenant_carries_its_gpus_per_pool_flavor_order_and_limits():
    """dev-aws: ml-dev's gpuQuota is l4-shared 4, a10g-spot 8; Kueue tries the spot pool before the shared one."""
    t = _plan("dev-aws").tenants["ml-dev"]
    assert dict(t.pool_gpus) == {"a10g-spot": 8, "l4-shared": 4}
    assert t.flavor_order == ("a10g-spot", "l4-shared")
    assert dict(t.borrowing_limits) == {} and t.never_preempts is False
    assert t.volcano_queue_cap is None  # a Kueue tenant has no Volcano queue


def test_a_volcano_tenant_carries_both_queue_caps():
    """prod-aws: applied-ml's guarantee and capability are both 16 (a100-gang, 2 x 8)."""
    t = _plan("prod-aws").tenants["applied-ml"]
    assert dict(t.volcano_queue_cap) == dict(t.volcano_queue_cap_at_rest) == {"nvidia.com/gpu": 16}


def test_a_spot_pools_cost_is_the_on_demand_price_less_the_spot_discount():
    """dev-aws: g5.4xlarge lists at 1.624 USD/h in us-east-1 (the dearest of the pool's types); spot is
    estimated 40 % below it, and one GPU per node makes that the per-GPU-hour price."""
    c = _plan("dev-aws").pools["a10g-spot"].cost
    assert c["onDemandPerNodeHour"]["usd"] == 1.624
    assert c["spotPerNodeHour"]["usd"] == pytest.approx(1.624 * 0.6)
    assert c["perGpuHourUsd"] == pytest.approx(1.624 * 0.6)
    assert dict(c["gpus"]) == {"min": 0, "max": 8, "spot": 8, "onDemand": 0}


@pytest.mark.parametrize("stack", STACKS)
def test_the_cost_report_read_from_the_plan_is_the_specs(stack):
    """cost.report_of(plan) (what the readers after the plan call) equals cost.report(spec, stack)."""
    spec = load_spec(stack_config(stack))
    assert cost.report_of(plan.build(spec, stack)) == cost.report(spec, stack)
