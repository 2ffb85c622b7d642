"""Issue 10 §7: Volcano proportion caps, Kueue flavor order, 'never preempts', waitForPodsReady."""

from __future__ import annotations

import pytest
import yaml
from conftest import manifest, manifests, release, rendered, stack_config

from components import derive, kueue
from components.loader import load_spec
from components.rendering import Rendering
from components.summary import summary


def _cq(stack_or_rendering, tenant):
    r = rendered(stack_or_rendering) if isinstance(stack_or_rendering, str) else stack_or_rendering
    return manifest(r, "ClusterQueue", tenant)["spec"]


def _flavor_names(cq_spec):
    return [[f["name"] for f in g["flavors"]] for g in cq_spec["resourceGroups"]]


# ----------------------------------------------------------------------------------------- Volcano


def test_prod_aws_volcano_cap_worked_by_hand():
    """prod-aws nvidia.com/gpu fleet: a100-train 4x8 = 32, h100-spot maxGpus 32, l4-notebooks 3 nodes x 4 GPUs
    x 4 time-slices = 48 -> 112 (h100-inference is MIG: other resource names). applied-ml's guarantee:
    16 + 16 + 8x4 = 64. Before the fix research (32) and notebooks (4x4 = 16) also had guarantees: 112 in all,
    so proportion capped applied-ml at 112 - 112 + 64 = 64, its own guarantee: no borrowing. Now only the
    Volcano tenant has a queue: 112 - 64 + 64 = 112, within its capability (32 + 32 + 48 = 112)."""
    spec = load_spec(stack_config("prod-aws"))
    assert derive.fleet_units(spec)["nvidia.com/gpu"] == 112
    assert [t.name for t in derive.volcano_tenants(spec)] == ["applied-ml"]
    applied = next(t for t in spec.tenants if t.name == "applied-ml")
    assert derive.volcano_queue_cap(spec, applied)["nvidia.com/gpu"] == 112
    assert "holds at most 112 nvidia.com/gpu" in summary(rendered("prod-aws"), {})


def test_only_volcano_tenants_get_a_queue():
    r = rendered("prod-aws")
    queues = {q["metadata"]["name"]: q["spec"] for q in manifests(r, "Queue")}
    assert set(queues) == {"applied-ml"}
    assert queues["applied-ml"]["guarantee"] == {"resource": {"nvidia.com/gpu": "64"}}


def test_volcano_cap_with_two_volcano_tenants_by_hand():
    """Two Volcano tenants on one 16-GPU pool (2 nodes x 8): a guarantees 6, b guarantees 4, a Kueue tenant 6.
    Cap of a = min(capability 16, 16 - (6 + 4) + 6) = 12; of b = min(16, 16 - 10 + 4) = 10. The Kueue
    tenant's 6 reserve nothing in Volcano."""
    cfg = stack_config("local")
    pool = cfg["gpu-platform:nodePools"][0]
    pool.pop("sharing", None)
    pool.update({"name": "p", "gpu": {"model": "L4", "perNode": 8}, "minNodes": 0, "maxNodes": 2})
    cfg["gpu-platform:addons"] = {**cfg.get("gpu-platform:addons", {}), "kueue": True, "volcano": True}
    cfg["gpu-platform:tenants"] = [
        {"name": "a", "gpuQuota": {"p": 6}, "scheduler": "volcano"},
        {"name": "b", "gpuQuota": {"p": 4}, "scheduler": "volcano"},
        {"name": "k", "gpuQuota": {"p": 6}},
    ]
    spec = load_spec(cfg)
    caps = {t.name: derive.volcano_queue_cap(spec, t).get("nvidia.com/gpu") for t in derive.volcano_tenants(spec)}
    assert caps == {"a": 12, "b": 10}


# ------------------------------------------------------------------------------------ flavor order


def test_prod_gcp_research_tries_its_reserved_pool_before_queued_provisioning():
    assert _flavor_names(_cq("prod-gcp", "research"))[0] == ["default-flavor", "h100-train", "h100-burst"]


def test_prod_aws_whole_gpu_jobs_overflow_to_spot_before_time_slices():
    assert _flavor_names(_cq("prod-aws", "applied-ml"))[0] == [
        "default-flavor",
        "a100-train",
        "h100-spot",
        "l4-notebooks",
    ]


def test_flavor_class_ranks():
    spec = load_spec(stack_config("prod-gcp"))
    classes = {p.name: derive.flavor_class(spec, p) for p in spec.node_pools}
    assert classes == {
        "h100-train": "dedicated",
        "h100-burst": "queued",
        "a100-inference": "shared",
        "l4-serving": "shared",
    }
    spec = load_spec(stack_config("prod-aws"))
    assert {p.name: derive.flavor_class(spec, p) for p in spec.node_pools} == {
        "a100-train": "dedicated",
        "h100-inference": "shared",
        "h100-spot": "spot",
        "l4-notebooks": "shared",
    }


def test_flavor_order_ignores_stack_file_order():
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:nodePools"].reverse()
    reversed_spec = load_spec(cfg)
    spec = load_spec(stack_config("prod-aws"))
    assert [p.name for p in derive.flavor_order(reversed_spec)] == [p.name for p in derive.flavor_order(spec)]
    assert [p.name for p in derive.flavor_order(spec)] == ["a100-train", "h100-spot", "h100-inference", "l4-notebooks"]
    for t in spec.tenants:
        assert kueue.resource_groups(spec, t) == kueue.resource_groups(
            reversed_spec, next(x for x in reversed_spec.tenants if x.name == t.name)
        )


def test_summary_shows_the_flavor_order():
    assert "h100-train (dedicated) > h100-burst (queued)" in summary(rendered("prod-gcp"), {})


# ------------------------------------------------------------------------------------- preemption


def test_a_dev_only_tenant_never_preempts_in_kueue():
    """prod-aws notebooks has ceiling `dev` (preemptionPolicy Never): its ClusterQueue never preempts."""
    assert _cq("prod-aws", "notebooks")["preemption"] == {
        "withinClusterQueue": "Never",
        "reclaimWithinCohort": "Never",
    }
    assert _cq("prod-aws", "research")["preemption"]["reclaimWithinCohort"] == "Any"


def test_never_preempts_needs_every_class_below_the_ceiling_to_be_never():
    spec = load_spec(stack_config("prod-aws"))
    by_name = {t.name: derive.tenant_never_preempts(spec, t) for t in spec.tenants}
    assert by_name == {"research": False, "serving": False, "applied-ml": False, "notebooks": True}


# ------------------------------------------------------------------------------- waitForPodsReady


def _manager_config(r):
    values = release(r, "kueue")["values"]
    return yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])


def test_wait_for_pods_ready_survives_a_cold_start():
    w = _manager_config(rendered("prod-aws"))["waitForPodsReady"]
    assert w["timeout"] == "30m"
    assert w["recoveryTimeout"] == "30m"


@pytest.mark.parametrize("recovery", [None, "45m"])
def test_recovery_timeout_follows_the_spec(recovery):
    cfg = stack_config("local")
    sched = {"waitForPodsReadyTimeout": "40m"}
    if recovery:
        sched["waitForPodsReadyRecoveryTimeout"] = recovery
    cfg["gpu-platform:scheduling"] = {**cfg.get("gpu-platform:scheduling", {}), **sched}
    w = kueue.manager_config(load_spec(cfg))["waitForPodsReady"]
    assert w["timeout"] == "40m"
    assert w["recoveryTimeout"] == (recovery or "40m")


def test_a_timeout_shorter_than_a_cold_start_is_a_summary_warning():
    cfg = stack_config("prod-aws")
    assert derive.wait_for_pods_ready_too_short(load_spec(cfg)) == []  # the 30m default
    cfg["gpu-platform:scheduling"] = {**cfg["gpu-platform:scheduling"], "waitForPodsReadyTimeout": "10m"}
    spec = load_spec(cfg)
    assert derive.wait_for_pods_ready_too_short(spec) == ["waitForPodsReadyTimeout"]
    # a100-train and l4-notebooks have minNodes 0, h100-spot is a Karpenter pool; h100-inference keeps a node
    assert [p.name for p in derive.cold_start_pools(spec)] == ["a100-train", "h100-spot", "l4-notebooks"]
    cfg["gpu-platform:scheduling"]["waitForPodsReadyTimeout"] = "15m"
    cfg["gpu-platform:scheduling"]["waitForPodsReadyRecoveryTimeout"] = "5m"
    assert derive.wait_for_pods_ready_too_short(load_spec(cfg)) == ["waitForPodsReadyRecoveryTimeout"]


def test_the_warning_reaches_summary_md():
    assert "below 15m" not in summary(rendered("prod-aws"), {})
    cfg = stack_config("local")
    cfg["gpu-platform:scheduling"] = {"waitForPodsReadyTimeout": "5m"}
    cfg["gpu-platform:nodePools"][0]["minNodes"] = 0
    text = summary(Rendering(spec=load_spec(cfg), stack="local"), {})  # warnings read the spec only
    assert "scheduling.waitForPodsReadyTimeout below 15m while pools start from zero (workstation)" in text
