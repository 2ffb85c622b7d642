"""Policy edges (issue 18): a borrow-only Kueue flavor is no GPU capacity for `critical-tenant-capacity`, and
GKE node pools are recognised as GPU pools without the platform's labels, by their accelerators or their
machine type, so every policy that needs "is this a GPU pool" fires on a pool the platform did not label.

Stacks are built as the engine hands them to the policies (test_policies.check / check_stack); every
expected message and verdict is written out here by hand.
"""

from __future__ import annotations

from typing import Any

import pytest
from caching import cached
from conftest import manifest, render_config, rendered, stack_config
from pulumi_policy import PolicyResource
from test_policies import GPU_TAINT, _karpenter, _opts, _tenant_ns, check, check_stack, engine_props, k8s

from components.plan import derive
from policies import capacity_policies, common, monitoring_policies, offline, scheduling_policies, security_policies

KUEUE = "kueue.x-k8s.io/v1beta2"
CRITICAL = {"gpu-platform/critical": "true"}

# ------------------------------------------------------------------------ critical-tenant-capacity


def _flavor(name: str, gpu_resource: str, gpu_nominal: str, **gpu: str) -> dict[str, Any]:
    """A ClusterQueue flavor as the platform renders one (components/render/kueue.py): the tenant's cpu and memory quota
    on every flavor, the GPU resource's nominal quota (and borrowingLimit) per pool."""
    return {
        "name": name,
        "resources": [
            {"name": "cpu", "nominalQuota": "64"},
            {"name": "memory", "nominalQuota": "256Gi"},
            {"name": gpu_resource, "nominalQuota": gpu_nominal, **gpu},
        ],
    }


def _serving(flavors: list[dict[str, Any]], pools: dict[str, str]) -> list[tuple[str, str, dict]]:
    """Critical tenant 'serving': its LocalQueue -> ClusterQueue 'serving' with ``flavors``; one Karpenter GPU
    NodePool and ResourceFlavor per pool {pool: capacity type}."""
    out = [_tenant_ns("serving", **CRITICAL)]
    for pool, capacity in pools.items():
        req = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": [capacity]}]
        spec = _karpenter(req, taints=GPU_TAINT, labels={"gpu-platform/pool": pool})
        out.append(k8s("karpenter.sh/v1", "NodePool", pool, spec=spec))
        out.append(k8s(KUEUE, "ResourceFlavor", pool, spec={"nodeLabels": {"gpu-platform/pool": pool}}))
    covered = sorted({r["name"] for f in flavors for r in f["resources"]})
    groups = [{"coveredResources": covered, "flavors": flavors}]
    out.append(k8s(KUEUE, "ClusterQueue", "serving", spec={"resourceGroups": groups}))
    out.append(k8s(KUEUE, "LocalQueue", "default", "serving", spec={"clusterQueue": "serving"}))
    return out


# Every GPU resource name a flavor can carry: whole GPUs, shared replicas, MIG profiles, and the DRA device
# classes Kueue counts (components/plan/derive.py DRA_GPU_RESOURCE / DRA_MIG_RESOURCE, deviceClassMappings).
GPU_RESOURCE_NAMES = [
    "nvidia.com/gpu",
    "nvidia.com/gpu.shared",
    "nvidia.com/mig-1g.10gb",
    "gpu.nvidia.com/devices",
    "mig.nvidia.com/devices",
]
SPOT_ONLY = (
    "critical tenant 'serving' only has spot GPU capacity (its Kueue quotas: l4-spot); a spot reclaim can take all "
    "of it at once. Give it quota on an on-demand pool (or an on-demand fallback)."
)


def test_the_pack_knows_the_dra_names_the_platform_configures():
    """The pack imports nothing from components: its copy of Kueue's DRA resource names must match."""
    assert common.KUEUE_DRA_GPU_RESOURCES == (derive.DRA_GPU_RESOURCE, derive.DRA_MIG_RESOURCE)
    assert [n for n in GPU_RESOURCE_NAMES if common.is_gpu_quota_resource(n)] == GPU_RESOURCE_NAMES
    assert not any(common.is_gpu_quota_resource(n) for n in ("cpu", "memory", "pods", "example.com/devices"))


@pytest.mark.parametrize("gpu", GPU_RESOURCE_NAMES)
def test_a_zero_quota_on_demand_flavor_is_no_capacity(gpu):
    """8 GPUs of its own on spot, 0 (borrow-only, up to 8) on on-demand: a spot reclaim takes everything it is
    guaranteed, so it is reported, whatever the GPU resource is called."""
    p = scheduling_policies.critical_tenant_capacity
    pools = {"l4-spot": "spot", "h100": "on-demand"}
    borrow_only = [_flavor("l4-spot", gpu, "8"), _flavor("h100", gpu, "0", borrowingLimit="8")]
    assert check_stack(p, _serving(borrow_only, pools)) == [("serving", SPOT_ONLY)]
    # the other direction: any GPU quota of its own on the on-demand pool is capacity
    owned = [_flavor("l4-spot", gpu, "8"), _flavor("h100", gpu, "1")]
    assert check_stack(p, _serving(owned, pools)) == []


def test_gpu_quota_under_another_gpu_name_of_the_same_flavor_counts():
    """A MIG flavor: nvidia.com/gpu 0 beside 7 nvidia.com/mig-1g.10gb is on-demand capacity."""
    p = scheduling_policies.critical_tenant_capacity
    mig = _flavor("h100", "nvidia.com/gpu", "0")
    mig["resources"].append({"name": "nvidia.com/mig-1g.10gb", "nominalQuota": "7"})
    stack = _serving([_flavor("l4-spot", "nvidia.com/gpu", "8"), mig], {"l4-spot": "spot", "h100": "on-demand"})
    assert check_stack(p, stack) == []


def test_cpu_and_memory_quota_alone_are_no_gpu_capacity():
    """A flavor on the on-demand pool with no GPU resource at all, only cpu and memory."""
    p = scheduling_policies.critical_tenant_capacity
    cpu_only = {"name": "h100", "resources": [{"name": "cpu", "nominalQuota": "64"}]}
    stack = _serving([_flavor("l4-spot", "nvidia.com/gpu", "8"), cpu_only], {"l4-spot": "spot", "h100": "on-demand"})
    assert check_stack(p, stack) == [("serving", SPOT_ONLY)]


@cached
def _prod_gcp_serving(a100_inference_quota: int):
    """prod-gcp with 'serving' (critical) holding 8 on l4-serving (spot) and ``a100_inference_quota`` on
    a100-inference (on-demand), free to borrow 7 there."""
    cfg = stack_config("prod-gcp")
    serving = next(t for t in cfg["gpu-platform:tenants"] if t["name"] == "serving")
    serving["gpuQuota"] = {"a100-inference": a100_inference_quota, "l4-serving": 8}
    serving["borrowingLimit"] = {"a100-inference": 7}
    return render_config(cfg, "prod-gcp")


def test_rendered_borrow_only_on_demand_quota_leaves_a_critical_tenant_on_spot():
    """End to end, through the ClusterQueue the platform renders (cpu and memory quota on every flavor)."""
    borrow_only = _prod_gcp_serving(0)
    cq = manifest(borrow_only, "ClusterQueue", "serving")["spec"]["resourceGroups"][0]["flavors"]
    a100 = next(f for f in cq if f["name"] == "a100-inference")
    assert {r["name"]: r["nominalQuota"] for r in a100["resources"]}["nvidia.com/gpu"] == "0"
    assert any(r["name"] == "cpu" and r["nominalQuota"] != "0" for r in a100["resources"])
    found = [
        (v.policy, v.resource_name, v.message.split(";")[0])
        for v in offline.evaluate(borrow_only).violations
        if v.policy == "critical-tenant-capacity"
    ]
    assert found == [
        (
            "critical-tenant-capacity",
            "serving-namespace",
            "critical tenant 'serving' only has spot GPU capacity (its Kueue quotas: l4-serving)",
        )
    ]
    assert offline.evaluate(_prod_gcp_serving(1)).violations == []


# ---------------------------------------------------------------------------- GKE GPU detection

# GKE node pools as the engine hands them (camelCase, numbers as floats), none with a gpu-platform/* or
# nvidia.com/gpu.present label: {name: (nodeConfig, why it is a GPU pool, or None)}.
T4 = {"type": "nvidia-tesla-t4", "count": 1}
GKE_POOLS: dict[str, tuple[dict[str, Any], str | None]] = {
    # an N1 with an attached T4: only the accelerator says GPU
    "n1-t4": ({"machineType": "n1-standard-8", "guestAccelerators": [T4]}, "guest accelerator nvidia-tesla-t4"),
    # accelerator-optimised machine types, GPUs implied, no guestAccelerators block
    "a2": ({"machineType": "a2-highgpu-1g"}, "machine type a2-highgpu-1g"),
    "a3": ({"machineType": "a3-highgpu-8g"}, "machine type a3-highgpu-8g"),
    "g2": ({"machineType": "g2-standard-8"}, "machine type g2-standard-8"),
    # by family, not in the catalog (pack_data.json gcpGpuMachineTypes)
    "a3-edge": ({"machineType": "a3-edgegpu-8g"}, "machine type a3-edgegpu-8g"),
    # not GPU pools
    "e2": ({"machineType": "e2-standard-8"}, None),
    "n1-no-gpu": ({"machineType": "n1-standard-8", "guestAccelerators": [{**T4, "count": 0}]}, None),
}
GPU_GKE = [n for n, (_, why) in GKE_POOLS.items() if why]
CPU_GKE = [n for n, (_, why) in GKE_POOLS.items() if not why]


def _gke(name: str, spot: bool = False, tainted: bool = False) -> dict[str, Any]:
    node_config = dict(GKE_POOLS[name][0], labels={"team": "ml"}, spot=spot)
    if tainted:
        node_config["taints"] = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]
    return {"cluster": "ml", "name": name, "nodeConfig": node_config}


def test_gke_pools_are_told_apart_without_the_platform_labels():
    assert len(GPU_GKE) == 5 and len(CPU_GKE) == 2
    for name, (_, why) in GKE_POOLS.items():
        assert common.gke_gpu_reason(_gke(name)) == why, name
    assert [p.pool for p in common.gpu_pools(_stack(*GKE_POOLS))] == GPU_GKE


def test_the_platform_gke_pools_are_gpu_pools_without_its_labels():
    """Every GKE pool the shipped stacks render, with gpu-platform/* and nvidia.com/gpu.present removed, and
    again with its guestAccelerators removed too (the machine type alone)."""
    seen = 0
    for stack in ("dev-gcp", "prod-gcp"):
        for rec in rendered(stack).of_type(common.GKE_NODE_POOL):
            nc = dict(rec.inputs["nodeConfig"])
            nc["labels"] = {k: v for k, v in nc["labels"].items() if not k.startswith(("gpu-platform/", "nvidia.com/"))}
            assert nc["labels"] == {}, rec.name
            assert common.gke_gpu_reason({"nodeConfig": nc}).startswith("guest accelerator nvidia-"), rec.name
            nc.pop("guestAccelerators")
            machine = nc["machineType"]
            expected = None if machine.startswith("n1-") else f"machine type {machine}"  # N1: GPUs only attached
            assert common.gke_gpu_reason({"nodeConfig": nc}) == expected, rec.name
            seen += 1
    assert seen == 6  # dev-gcp: t4-spot, l4-shared; prod-gcp: h100-train, h100-burst, a100-inference, l4-serving


@pytest.mark.parametrize("name", list(GKE_POOLS))
def test_gpu_pool_taint_and_hardening_fire_on_unlabelled_gke_gpu_pools(name):
    why = GKE_POOLS[name][1]
    taint = check(capacity_policies.gpu_pool_taint, common.GKE_NODE_POOL, _gke(name))
    hardening = check(security_policies.gke_gpu_node_hardening, common.GKE_NODE_POOL, _gke(name))
    if why is None:
        assert taint == hardening == []
        return
    (msg,) = taint
    assert msg.startswith(f"GPU pool ({why}) has no nvidia.com/gpu taint with effect NO_SCHEDULE in nodeConfig.taints")
    assert check(capacity_policies.gpu_pool_taint, common.GKE_NODE_POOL, _gke(name, tainted=True)) == []
    secure_boot, metadata = hardening
    assert secure_boot.startswith(f"GKE GPU pool ({why}) does not enable secure boot")
    assert metadata.startswith(f"GKE GPU pool ({why}) exposes the node's metadata server to pods")


def _stack(*pools: str, spot: bool = False) -> list[PolicyResource]:
    return [
        PolicyResource(common.GKE_NODE_POOL, engine_props(_gke(n, spot)), f"urn:{n}", n, _opts(), None, None, [], {})
        for n in pools
    ]


def test_stack_policies_count_unlabelled_gke_gpu_pools():
    """critical-tenant-capacity without Kueue and dcgm-monitoring read the stack's GPU pools: an unlabelled
    spot A2 pool is the only GPU capacity; an E2 pool is none."""
    ns = _tenant_ns("serving", **CRITICAL)
    spot_a2 = (common.GKE_NODE_POOL, "a2", _gke("a2", spot=True))
    on_demand_n1 = (common.GKE_NODE_POOL, "n1-t4", _gke("n1-t4"))
    spot_e2 = (common.GKE_NODE_POOL, "e2", _gke("e2", spot=True))
    p = scheduling_policies.critical_tenant_capacity
    assert check_stack(p, [ns, spot_a2]) == [
        (
            "serving",
            "critical tenant 'serving' only has spot GPU capacity (the stack's GPU pools (no Kueue quota found): "
            "a2); a spot reclaim can take all of it at once. Give it quota on an on-demand pool (or an on-demand "
            "fallback).",
        )
    ]
    assert check_stack(p, [ns, spot_a2, on_demand_n1]) == []
    assert check_stack(p, [ns, spot_e2]) == []

    d = monitoring_policies.dcgm_monitoring
    ((_, msg),) = check_stack(d, [spot_a2, on_demand_n1, spot_e2])
    assert msg.startswith("the stack runs GPU pools a2, n1-t4 but no DCGM exporter")
    assert check_stack(d, [spot_e2]) == []
