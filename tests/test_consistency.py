"""One tenant declaration drives three enforcers: the namespace ResourceQuota, the Kueue ClusterQueue and the
Volcano Queue. For every shipped stack, tenant and GPU resource name they must agree, read back from the
rendered objects (not from the functions that made them): the ClusterQueue's nominal quota is the Volcano
guarantee, and the ResourceQuota is the most the tenant can hold when it borrows (nominal + borrowing limit
in its cohort), which is also the Volcano capability, so that workloads admitted on borrowed quota can start.
And the synth summary compares what each pool can bring with the quotas handed out on it."""

from __future__ import annotations

import pytest
from conftest import STACKS, manifest, render_config, rendered, stack_config

from components import derive, synth
from components.tenancy import all_gpu_resources


def _rq_key(name):
    """ResourceQuota key of a scheduler resource: requests.<extended resource>, or on a DRA stack the devices
    claimed through one DeviceClass (KEP-4381: <class>.deviceclass.resource.k8s.io/devices)."""
    if name.startswith("nvidia.com/"):
        return f"requests.{name}"
    return name.removesuffix("/devices") + ".deviceclass.resource.k8s.io/devices"


def _rq_hard(r, tenant):
    return manifest(r, "ResourceQuota", "gpu-quota", tenant)["spec"]["hard"]


def _cq_flavors(r, tenant):
    """flavor -> {resource: quota entry} of the tenant's ClusterQueue."""
    spec = manifest(r, "ClusterQueue", tenant)["spec"]
    return {f["name"]: {x["name"]: x for x in f["resources"]} for rg in spec["resourceGroups"] for f in rg["flavors"]}


def _flavor_pool(r, flavor):
    return manifest(r, "ResourceFlavor", flavor)["spec"].get("nodeLabels", {}).get(derive.POOL_LABEL)


@pytest.mark.parametrize("stack", STACKS)
def test_quota_cluster_queue_and_volcano_queue_agree(stack):
    r = rendered(stack)
    spec = r.spec
    names = all_gpu_resources(spec)
    for tenant in spec.tenants:
        hard = _rq_hard(r, tenant.name)
        # the ResourceQuota caps exactly every GPU resource name the cluster advertises
        gpu_keys = [k for k in hard if k.startswith("requests.nvidia.com/") or ".deviceclass.resource.k8s.io/" in k]
        assert sorted(gpu_keys) == sorted(_rq_key(n) for n in names)
        flavors = _cq_flavors(r, tenant.name) if spec.addons.kueue else {}
        # only tenants Volcano schedules have a Volcano queue (a guarantee is reserved even when unused)
        volcano = derive.tenant_scheduler(spec, tenant) == "volcano" and spec.addons.volcano
        queue = manifest(r, "Queue", tenant.name)["spec"] if volcano else None
        for name in names:
            rq = int(hard[_rq_key(name)])
            nominal = sum(int(res[name]["nominalQuota"]) for res in flavors.values() if name in res)
            if spec.addons.kueue:
                assert nominal <= rq, (tenant.name, name)
            if queue is not None:
                guarantee = int(queue.get("guarantee", {}).get("resource", {}).get(name, 0))
                assert int(queue.get("deserved", {}).get(name, 0)) == guarantee, (tenant.name, name)
                assert int(queue["capability"][name]) == rq, (tenant.name, name)
                if spec.addons.kueue:
                    assert guarantee == nominal, (tenant.name, name)
        if tenant.quota.cpu:
            assert hard["requests.cpu"] == tenant.quota.cpu
            if queue is not None:
                assert queue["capability"]["cpu"] == tenant.quota.cpu
            if spec.addons.kueue:
                assert {res["cpu"]["nominalQuota"] for res in flavors.values() if "cpu" in res} == {tenant.quota.cpu}


def test_volcano_capability_and_quota_are_the_hand_worked_ceilings():
    """prod-aws, worked out by hand from the stack file (not with the code's formula):
    pools bring a100-train 4 x 8 = 32, h100-spot maxGpus 32, l4-notebooks 3 x 4 GPUs x 4 slices = 48 units.
    applied-ml (cohort, no borrowingLimit): 32 + 32 + 48 = 112; research: a100-train 16 + borrowingLimit 8
    = 24, h100-spot up to the pool's 32: 56. MIG resource names neither can reach: 0."""
    r = rendered("prod-aws")
    other = [n for n in all_gpu_resources(r.spec) if n != "nvidia.com/gpu"]
    assert other  # h100-inference's MIG profiles
    capability = manifest(r, "Queue", "applied-ml")["spec"]["capability"]
    assert {n: int(v) for n, v in capability.items()} == {"nvidia.com/gpu": 112, **dict.fromkeys(other, 0)}
    for tenant, ceiling in {"applied-ml": 112, "research": 56}.items():
        hard = _rq_hard(r, tenant)
        assert int(hard["requests.nvidia.com/gpu"]) == ceiling, tenant
        assert all(int(hard[f"requests.{n}"]) == 0 for n in other if f"requests.{n}" in hard), tenant


def test_without_a_cohort_the_quota_is_the_nominal_quota():
    """No cohort, nothing to borrow: ResourceQuota == ClusterQueue nominal == Volcano capability."""
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:scheduling"] = {"defaultCohort": None}
    for t in cfg["gpu-platform:tenants"]:
        t.pop("borrowingLimit", None)
        t.pop("lendingLimit", None)
    r = render_config(cfg, "prod-aws")
    hard = _rq_hard(r, "research")
    cq = _cq_flavors(r, "research").values()
    nominal = sum(int(res["nvidia.com/gpu"]["nominalQuota"]) for res in cq if "nvidia.com/gpu" in res)
    assert int(hard["requests.nvidia.com/gpu"]) == nominal == 16 + 16


def test_a_tenant_reaches_only_the_pools_it_has_quota_on():
    for stack in STACKS:
        r = rendered(stack)
        for tenant in r.spec.tenants:
            pools = {_flavor_pool(r, f) for f in _cq_flavors(r, tenant.name)} - {None}
            assert pools == set(tenant.gpu_quota), (stack, tenant.name)


# ----------------------------------------------------------------------------------------- summary


def test_summary_compares_pool_capacity_with_the_quotas():
    text = synth.files(rendered("prod-aws"))["summary.md"]
    # a100-train: 4 nodes x 8 GPUs = 32; research 16 + applied-ml 16
    assert (
        "| a100-train | 8x A100-80GB | managed | on-demand | 0..4 | 32 | whole GPUs | 32 nvidia.com/gpu "
        "| 32 nvidia.com/gpu | 1.00x |"
    ) in text
    # l4-notebooks: 3 nodes x 4 L4 x 4 time-slices = 48 units; applied-ml 8x4 + notebooks 4x4
    assert "| 48 nvidia.com/gpu | 48 nvidia.com/gpu | 1.00x |" in text
    warnings = text.split("## Warnings\n\n", 1)[1].strip().splitlines()
    assert not any(w.startswith("- pool ") for w in warnings)  # no pool is oversubscribed
    # research sets a cpu quota and runs on two pools: the per-pool Kueue vs. total quota caveat is named
    assert warnings == [w for w in warnings if w.startswith("- tenant research: Kueue holds its cpu/memory quota")]
    assert len(warnings) == 1
    assert (
        "| research | `research/default` -> `research` | a100-train (dedicated) > h100-spot (spot) "
        "| lower priority; reclaims lent quota | gpu-platform | a100-train: 8, h100-spot: any |"
    ) in text


def test_summary_warns_when_quotas_exceed_capacity_beyond_the_ratio():
    cfg = stack_config("prod-aws")  # oversubscriptionRatio 1.5
    cfg["gpu-platform:tenants"][2]["gpuQuota"]["a100-train"] = 40  # applied-ml: 16 + 40 = 56 of 32 GPUs
    cfg["gpu-platform:tenants"][2]["gpuQuota"]["h100-spot"] = 32  # 16 + 32 = 48 of 32: exactly 1.5x, allowed
    text = synth.files(render_config(cfg))["summary.md"]
    assert "| 56 nvidia.com/gpu | **1.75x** (over 1.5x) |" in text
    warnings = text.split("## Warnings", 1)[1]
    assert "- pool a100-train: tenant quotas are 1.75x what it can bring (allowed 1.5x" in warnings
    assert "h100-spot" not in warnings
    assert "| 48 nvidia.com/gpu | 1.50x |" in text
