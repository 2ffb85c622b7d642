"""Borrowing at and beyond a pool's capacity, borrow-only tenants and lending limits, end to end.

Every expected number is worked out by hand in the comments (pool capacity = nodes x GPUs per node x
units per GPU), not recomputed from the code's formula: a ResourceQuota, a Volcano capability or a summary
that grows past what the tenants can hold fails here. A pool is handed out by one scheduler: the Kueue tenants
share small and sliced, the Volcano tenant has gang-small and gang-sliced (the same shapes) to itself.

Kueue lends quota, not capacity (kueue v0.19.2 pkg/cache/scheduler/resource_node.go): a ClusterQueue holds at most
potentialAvailable = min(nominal + borrowingLimit, localQuota + cohort SubtreeQuota), the cohort's SubtreeQuota
being what its queues lend (nominal, or the lendingLimit when lower) and localQuota what a lending limit keeps
back (nominal - lendingLimit). In cohort gpu-platform on small: greedy lends its 2, borrower 0, lender
min(2, 1) = 1: SubtreeQuota 3. Volcano's proportion lends idle capacity instead: its capability reaches the pool.
"""

from __future__ import annotations

from caching import cached
from conftest import manifest, render_config, stack_config

from components.cli import synth

# 1 node x 8 A100 = 8 GPUs, whole GPUs: the pool brings 8 nvidia.com/gpu
_SMALL = {
    "gpu": {"model": "A100-80GB", "perNode": 8},
    "instanceTypes": ["p4de.24xlarge"],
    "capacity": "on-demand",
    "provisioner": "managed",
    "minNodes": 0,
    "maxNodes": 1,
}
# 1 node x 4 L4 x 4 time-slices = 4 GPUs = 16 nvidia.com/gpu
_SLICED = {
    "gpu": {"model": "L4", "perNode": 4},
    "instanceTypes": ["g6.12xlarge"],
    "capacity": "on-demand",
    "provisioner": "managed",
    "minNodes": 0,
    "maxNodes": 1,
    "sharing": {"strategy": "time-slicing", "replicas": 4},
}


@cached
def _render():
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:nodePools"] = [
        {"name": "small", **_SMALL},
        {"name": "sliced", **_SLICED},
        {"name": "gang-small", **_SMALL},
        {"name": "gang-sliced", **_SLICED},
    ]
    cfg.pop("gpu-platform:storage")  # its file systems name prod-aws's tenants, replaced here
    cfg.pop("gpu-platform:images")  # its images name prod-aws's pools, replaced here
    cfg["gpu-platform:tenants"] = [
        # borrowingLimit far past the pools: capped at what the cohort lends (Kueue)
        {
            "name": "greedy",
            "gpuQuota": {"small": 2, "sliced": 1},
            "borrowingLimit": {"small": 100, "sliced": 100},
        },
        # the same under Volcano, on pools of its own
        {
            "name": "gang",
            "gpuQuota": {"gang-small": 2, "gang-sliced": 1},
            "borrowingLimit": {"gang-small": 100, "gang-sliced": 100},
            "scheduler": "volcano",
        },
        # borrow-only: no quota of its own, may borrow 3 GPUs
        {"name": "borrower", "gpuQuota": {"small": 0}, "borrowingLimit": {"small": 3}},
        # lends at most 1 GPU, no borrowingLimit: keeps 1 back and may borrow what the others lend
        {"name": "lender", "gpuQuota": {"small": 2}, "lendingLimit": {"small": 1}},
    ]
    return render_config(cfg, "prod-aws")


def _quota(r, tenant: str) -> int:
    return int(manifest(r, "ResourceQuota", "gpu-quota", tenant)["spec"]["hard"]["requests.nvidia.com/gpu"])


def _gpu_flavors(r, tenant: str) -> dict[str, dict[str, str]]:
    cq = manifest(r, "ClusterQueue", tenant)["spec"]
    out = {}
    for group in cq["resourceGroups"]:
        for flavor in group["flavors"]:
            for res in flavor["resources"]:
                if res["name"] == "nvidia.com/gpu" and flavor["name"] != "default-flavor":
                    out[flavor["name"]] = {k: v for k, v in res.items() if k != "name"}
    return out


def test_borrowing_limit_past_the_pool_is_capped_at_what_the_cohort_lends():
    r = _render()
    # small: min(2 + 100, 0 + 3) = 3 units (its own 2 and lender's 1; the pool's other 5 GPUs are nobody's quota);
    # sliced: greedy alone, 1 GPU x 4 slices = 4: min(4 + 400, 0 + 4) = 4
    assert _quota(r, "greedy") == 3 + 4
    # Kueue gets the limit as configured (the cohort cannot lend more than exists anyway)
    assert _gpu_flavors(r, "greedy") == {
        "small": {"nominalQuota": "2", "borrowingLimit": "100"},
        "sliced": {"nominalQuota": "4", "borrowingLimit": "400"},
    }
    # Volcano: gang-small and gang-sliced have the same shapes; proportion lends idle capacity up to the
    # capability, which is capped at what each pool brings: min(2 + 100, 8) = 8 and min(1 + 100, 4) x 4 = 16
    assert _quota(r, "gang") == 8 + 16
    capability = manifest(r, "Queue", "gang")["spec"]["capability"]
    assert capability == {"nvidia.com/gpu": "24"}
    # the guarantee is the nominal quota: 2 + 1 x 4 slices
    assert manifest(r, "Queue", "gang")["spec"]["guarantee"] == {"resource": {"nvidia.com/gpu": "6"}}
    # each tenant is queued by its own scheduler only: no ClusterQueue for gang, no Volcano queue for greedy
    kinds = {(m["kind"], m["metadata"]["name"]) for m in r.manifests}
    assert ("ClusterQueue", "gang") not in kinds and ("Queue", "greedy") not in kinds


def test_a_borrow_only_tenant_holds_only_what_it_may_borrow():
    r = _render()
    assert _quota(r, "borrower") == 3  # min(0 + 3, 0 + 3): its limit and the cohort's 3 agree
    assert _gpu_flavors(r, "borrower") == {"small": {"nominalQuota": "0", "borrowingLimit": "3"}}


def test_a_lender_without_a_borrowing_limit_reaches_what_it_keeps_and_the_cohort_lends():
    r = _render()
    assert _quota(r, "lender") == 1 + 3  # localQuota 2 - 1 = 1 kept back, plus the cohort's 3 (its own 1 among them)
    assert _gpu_flavors(r, "lender") == {"small": {"nominalQuota": "2", "lendingLimit": "1"}}


def test_the_summary_reports_the_capped_numbers():
    text = synth.files(_render())["summary.md"]
    # small: nominal 2 + 0 + 2 = 4 of 8; sliced: 1 GPU x 4 = 4 of 16; gang-small: 2 of 8; gang-sliced: 4 of 16
    whole = "8x A100-80GB | managed | on-demand | 0..1 | 8 | whole GPUs | 8 nvidia.com/gpu"
    sliced = "4x L4 | managed | on-demand | 0..1 | 4 | time-slicing x4 (4x nvidia.com/gpu per GPU) | 16 nvidia.com/gpu"
    assert f"| small | {whole} | 4 nvidia.com/gpu | 0.50x |" in text
    assert f"| sliced | {sliced} | 4 nvidia.com/gpu | 0.25x |" in text
    assert f"| gang-small | {whole} | 2 nvidia.com/gpu | 0.25x |" in text
    assert f"| gang-sliced | {sliced} | 4 nvidia.com/gpu | 0.25x |" in text
    # tenants table: GPUs per pool | nominal units | ResourceQuota cap | scheduler
    assert "| greedy | sliced: 1, small: 2 | 6 nvidia.com/gpu | 7 nvidia.com/gpu | kueue |" in text
    assert "| gang | gang-sliced: 1, gang-small: 2 | 6 nvidia.com/gpu | 24 nvidia.com/gpu | volcano |" in text
    assert "| borrower | small: 0 | 0 nvidia.com/gpu | 3 nvidia.com/gpu |" in text
    assert "| lender | small: 2 | 2 nvidia.com/gpu | 4 nvidia.com/gpu |" in text
    # Volcano's cap: min(capability 24, fleet 8 + 16 + 8 + 16 = 48 - guarantees 6 + own 6 = 48) = 24 at full size;
    # from an idle cluster (every pool 0..1, at 0) the fleet is 0: min(24, max(0 - 6, 0) + 6) = 6, its guarantee,
    # since proportion counts the nodes that exist (volcano v1.15.1 proportion.go:91-139; issue 26 §4.5)
    assert (
        "`gang` (weight 1; enqueues at most 6 nvidia.com/gpu from an idle cluster, holds at most 24 nvidia.com/gpu "
        "at full size)"
    ) in text
