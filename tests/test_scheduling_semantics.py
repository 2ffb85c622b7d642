"""Issue 10 §7: Volcano proportion caps, Kueue flavor order, 'never preempts', waitForPodsReady."""

from __future__ import annotations

import pytest
import yaml
from conftest import manifest, manifests, release, rendered, stack_config

from components.cli.loader import load_spec
from components.explain.rendering import Rendering
from components.explain.summary import summary
from components.plan import derive
from components.render import kueue


def _cq(stack_or_rendering, tenant):
    r = rendered(stack_or_rendering) if isinstance(stack_or_rendering, str) else stack_or_rendering
    return manifest(r, "ClusterQueue", tenant)["spec"]


def _flavor_names(cq_spec):
    return [[f["name"] for f in g["flavors"]] for g in cq_spec["resourceGroups"]]


# ----------------------------------------------------------------------------------------- Volcano


def test_prod_aws_volcano_cap_worked_by_hand():
    """prod-aws nvidia.com/gpu fleet: a100-train 4x8 = 32, h100-spot maxGpus 32, l4-notebooks 3 nodes x 4 GPUs
    x 4 time-slices = 48, a100-gang 2x8 = 16 -> 128 (h100-inference is MIG: other resource names). applied-ml's
    guarantee: its 16 A100s on a100-gang, the only pool it reaches. Only the Volcano tenant has a queue, so
    proportion allows it 128 - 16 + 16 = 128; its capability is a100-gang at its maximum size, 2x8 = 16 (in its
    cohort with no borrowingLimit it may take the whole pool): realCapability = min(16, 128) = 16. (Had
    research's 16 + 16 and notebooks' 4x4 also been guarantees, proportion would allow 128 - 64 + 16 = 80: the
    capability binds either way.)"""
    spec = load_spec(stack_config("prod-aws"))
    assert derive.fleet_units(spec)["nvidia.com/gpu"] == 128
    assert [t.name for t in derive.volcano_tenants(spec)] == ["applied-ml"]
    applied = next(t for t in spec.tenants if t.name == "applied-ml")
    assert derive.capability_units(spec, applied)["nvidia.com/gpu"] == 16
    assert derive.volcano_queue_cap(spec, applied)["nvidia.com/gpu"] == 16
    assert "holds at most 16 nvidia.com/gpu" in summary(rendered("prod-aws"), {})


def test_only_volcano_tenants_get_a_queue():
    r = rendered("prod-aws")
    queues = {q["metadata"]["name"]: q["spec"] for q in manifests(r, "Queue")}
    assert set(queues) == {"applied-ml"}
    assert queues["applied-ml"]["guarantee"] == {"resource": {"nvidia.com/gpu": "16"}}  # 16 A100s on a100-gang


def test_volcano_cap_with_two_volcano_tenants_by_hand():
    """Two Volcano tenants on one 16-GPU pool p (2 nodes x 8): a guarantees 6, b guarantees 4; a Kueue tenant k
    with 2 GPUs on a pool of its own, q (1 node x 2: a pool is handed out by one scheduler). The cluster total
    is 16 + 2 = 18 whole GPUs. Cap of a = min(capability 16, 18 - (6 + 4) + 6) = 14; of b = min(16, 18 - 10 + 4)
    = 12. The Kueue tenant's 2 reserve nothing in Volcano (counted, they would make it 12 and 10)."""
    cfg = stack_config("local")
    pool = cfg["gpu-platform:nodePools"][0]
    pool.pop("sharing", None)
    pool.update({"name": "p", "gpu": {"model": "L4", "perNode": 8}, "minNodes": 0, "maxNodes": 2})
    cfg["gpu-platform:nodePools"].append({"name": "q", "gpu": {"model": "L4", "perNode": 2}, "maxNodes": 1})
    cfg["gpu-platform:addons"] = {**cfg.get("gpu-platform:addons", {}), "kueue": True, "volcano": True}
    cfg["gpu-platform:tenants"] = [
        {"name": "a", "gpuQuota": {"p": 6}, "scheduler": "volcano"},
        {"name": "b", "gpuQuota": {"p": 4}, "scheduler": "volcano"},
        {"name": "k", "gpuQuota": {"q": 2}},
    ]
    spec = load_spec(cfg)
    assert derive.fleet_units(spec) == {"nvidia.com/gpu": 18}
    caps = {t.name: derive.volcano_queue_cap(spec, t).get("nvidia.com/gpu") for t in derive.volcano_tenants(spec)}
    assert caps == {"a": 14, "b": 12}


# ------------------------------------------------------------------------------------ flavor order


def test_prod_gcp_research_tries_its_reserved_pool_before_queued_provisioning():
    assert _flavor_names(_cq("prod-gcp", "research"))[0] == ["default-flavor", "h100-train", "h100-burst"]


def test_prod_aws_whole_gpu_jobs_overflow_to_spot_before_time_slices():
    """research given a share of l4-notebooks as well (Kueue's pool, like its own two): its ClusterQueue tries
    the dedicated a100-train, then spot h100-spot, and the time-sliced l4-notebooks last."""
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:tenants"][0]["gpuQuota"]["l4-notebooks"] = 1
    spec = load_spec(cfg)
    assert _flavor_names(kueue.cluster_queue_spec(spec, spec.tenants[0]))[0] == [
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
        "a100-gang": "dedicated",  # whole A100s, on-demand
    }


def test_flavor_order_ignores_stack_file_order():
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:nodePools"].reverse()
    reversed_spec = load_spec(cfg)
    spec = load_spec(stack_config("prod-aws"))
    assert [p.name for p in derive.flavor_order(reversed_spec)] == [p.name for p in derive.flavor_order(spec)]
    # dedicated (by name: a100-gang < a100-train), spot, shared (h100-inference < l4-notebooks)
    assert [p.name for p in derive.flavor_order(spec)] == [
        "a100-gang",
        "a100-train",
        "h100-spot",
        "h100-inference",
        "l4-notebooks",
    ]
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
    # a100-train and l4-notebooks have minNodes 0, h100-spot is a Karpenter pool; h100-inference keeps a node;
    # a100-gang starts from zero too, but Volcano hands it out, where Kueue's waitForPodsReady never applies
    # (stack-file order)
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
