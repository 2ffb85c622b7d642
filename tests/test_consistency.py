"""One tenant declaration drives the namespace ResourceQuota and the queue of the one scheduler that admits the
tenant's work: a Kueue ClusterQueue, or a Volcano Queue (never both: a pool is handed out by one of them). For
every shipped stack, tenant and GPU resource name they must agree, read back from the rendered objects (not
from the functions that made them): the ClusterQueue's nominal quota or the Volcano guarantee is the stack
file's GPUs per pool times the units one GPU of the pool advertises, and the ResourceQuota is the most the
tenant can hold when it borrows (nominal + borrowing limit in its cohort), which is also the Volcano
capability, so that workloads admitted on borrowed quota can start. And the synth summary compares what each
pool can bring with the quotas handed out on it."""

from __future__ import annotations

import pytest
from conftest import STACKS, manifest, render_config, rendered, stack_config

from components.cli import synth
from components.plan import derive
from components.render.tenancy import all_gpu_resources


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


def _kinds(r, tenant):
    """Kinds of the rendered objects named after the tenant or living in its namespace."""
    return {m["kind"] for m in r.manifests if tenant in (m["metadata"]["name"], m["metadata"].get("namespace"))}


def _stack_nominal(r, tenant, name):
    """Units of ``name`` in the tenant's nominal quota, from the stack file's gpuQuota and each pool's stack
    output (units per node / GPUs per node = units per GPU)."""
    pools = r.outputs["pools"]
    units = 0
    for pool, gpus in tenant.gpu_quota.items():
        per_node = pools[pool]["gpuUnitsPerNode"].get(name, 0)
        assert per_node % pools[pool]["gpusPerNode"] == 0, (pool, name)
        units += gpus * per_node // pools[pool]["gpusPerNode"]
    return units


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
        # only tenants Kueue admits for have a ClusterQueue and a LocalQueue, only tenants Volcano schedules a
        # Volcano queue (a guarantee is reserved even when unused); a tenant has one of them
        kueue = derive.tenant_scheduler(spec, tenant) == "kueue" and spec.addons.kueue
        volcano = derive.tenant_scheduler(spec, tenant) == "volcano" and spec.addons.volcano
        assert kueue != volcano, tenant.name
        kinds = _kinds(r, tenant.name)
        assert ({"ClusterQueue", "LocalQueue"} <= kinds) is kueue, (tenant.name, kinds)
        assert not volcano or not {"ClusterQueue", "LocalQueue"} & kinds, (tenant.name, kinds)
        assert ("Queue" in kinds) is volcano, (tenant.name, kinds)
        flavors = _cq_flavors(r, tenant.name) if kueue else {}
        queue = manifest(r, "Queue", tenant.name)["spec"] if volcano else None
        for name in names:
            rq = int(hard[_rq_key(name)])
            stack_nominal = _stack_nominal(r, tenant, name)
            assert stack_nominal <= rq, (tenant.name, name)
            if kueue:
                nominal = sum(int(res[name]["nominalQuota"]) for res in flavors.values() if name in res)
                assert nominal == stack_nominal, (tenant.name, name)
            if queue is not None:
                guarantee = int(queue.get("guarantee", {}).get("resource", {}).get(name, 0))
                assert int(queue.get("deserved", {}).get(name, 0)) == guarantee, (tenant.name, name)
                assert int(queue["capability"][name]) == rq, (tenant.name, name)
                assert guarantee == stack_nominal, (tenant.name, name)
        if tenant.quota.cpu:
            assert hard["requests.cpu"] == tenant.quota.cpu
            if queue is not None:
                assert queue["capability"]["cpu"] == tenant.quota.cpu
            if kueue:
                assert {res["cpu"]["nominalQuota"] for res in flavors.values() if "cpu" in res} == {tenant.quota.cpu}


def test_volcano_capability_and_quota_are_the_hand_worked_ceilings():
    """prod-aws, worked out by hand from the stack file (not with the code's formula):
    pools bring a100-train 4 x 8 = 32, h100-spot maxGpus 32, a100-gang 2 x 8 = 16.
    applied-ml (cohort, no borrowingLimit): a100-gang 16, already the whole pool: 16, its guarantee 16 too;
    research (Kueue): what Kueue can admit, its nominal quota plus what the cohort's other ClusterQueues lend on each
    flavor (kueue v0.19.2 resource_node.go potentialAvailable): nobody else has quota on a100-train or h100-spot,
    so 16 + 16 = 32 (its borrowingLimit 8 adds nothing; the old 24 + 32 = 56 counted the pools' idle GPUs as
    borrowable). MIG resource names neither can reach: 0."""
    r = rendered("prod-aws")
    other = [n for n in all_gpu_resources(r.spec) if n != "nvidia.com/gpu"]
    assert other  # h100-inference's MIG profiles
    queue = manifest(r, "Queue", "applied-ml")["spec"]
    assert {n: int(v) for n, v in queue["capability"].items()} == {"nvidia.com/gpu": 16, **dict.fromkeys(other, 0)}
    assert queue["guarantee"] == {"resource": {"nvidia.com/gpu": "16"}}
    for tenant, ceiling in {"applied-ml": 16, "research": 32}.items():
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
    """Kueue tenants through their ClusterQueue's flavors; Volcano tenants (whose queues count resource names,
    not pools) through the pool list on their namespace, which the pods policy holds their GPU pods to."""
    volcano_tenants = 0
    for stack in STACKS:
        r = rendered(stack)
        for tenant in r.spec.tenants:
            if derive.tenant_scheduler(r.spec, tenant) == "volcano":
                volcano_tenants += 1
                annotations = manifest(r, "Namespace", tenant.name)["metadata"]["annotations"]
                assert annotations["gpu-platform/pools"].split(",") == sorted(tenant.gpu_quota), (stack, tenant.name)
                continue
            pools = {_flavor_pool(r, f) for f in _cq_flavors(r, tenant.name)} - {None}
            assert pools == set(tenant.gpu_quota), (stack, tenant.name)
    assert volcano_tenants  # prod-aws's applied-ml


# ----------------------------------------------------------------------------------------- summary


def test_summary_compares_pool_capacity_with_the_quotas():
    text = synth.files(rendered("prod-aws"))["summary.md"]
    # a100-train: 4 nodes x 8 GPUs = 32; research 16: 16 / 32 = 0.50
    assert (
        "| a100-train | 8x A100-80GB | managed | on-demand | 0..4 | 32 | whole GPUs | 32 nvidia.com/gpu "
        "| 16 nvidia.com/gpu | 0.50x |"
    ) in text
    # a100-gang: 2 nodes x 8 GPUs = 16; applied-ml 16: 1.00
    assert (
        "| a100-gang | 8x A100-80GB | managed | on-demand | 0..2 | 16 | whole GPUs | 16 nvidia.com/gpu "
        "| 16 nvidia.com/gpu | 1.00x |"
    ) in text
    # l4-notebooks: 3 nodes x 4 L4 x 4 time-slices = 48 units; notebooks 4x4 = 16: 16 / 48 = 0.33
    assert "| 48 nvidia.com/gpu | 16 nvidia.com/gpu | 0.33x |" in text
    warnings = text.split("## Warnings\n\n", 1)[1].strip().splitlines()
    assert not any("tenant quotas are" in w for w in warnings)  # no pool is oversubscribed
    # the other way round: a100-train and h100-spot bring 32 GPUs for research's 16, l4-notebooks 12 L4 for
    # notebooks' 4, and Kueue admits nothing beyond the quotas (tests/test_uncovered_capacity.py); research sets a
    # cpu quota and runs on two pools: the per-pool Kueue vs. total quota caveat is named; and the Bottlerocket
    # pools have no DCGM metrics (the GPU Operator's operands are off there); prod-aws pulls through ECR on a found
    # cluster, whose system nodes' role the platform cannot give the cache's two actions (docs/concepts/images.md)
    # each warning starts with the stack file's key path it is about (the pools' and tenants' list positions in
    # stacks/Pulumi.prod-aws.yaml: a100-train 0, h100-spot 2, l4-notebooks 3, a100-gang 4; research is tenant 0)
    assert [w.split(": ", 2)[:2] for w in warnings] == [
        ["- gpu-platform:nodePools[0]", "pool a100-train"],
        ["- gpu-platform:nodePools[2]", "pool h100-spot"],
        ["- gpu-platform:nodePools[3]", "pool l4-notebooks"],
        ["- gpu-platform:images", "images pull through ECR"],
        ["- gpu-platform:tenants[0]", "tenant research"],
        ["- gpu-platform:nodePools[4]", "no DCGM metrics on Bottlerocket pools a100-gang, a100-train"],
    ]
    assert warnings[0].startswith(
        "- gpu-platform:nodePools[0]: pool a100-train: 16 of its 32 GPUs are in no tenant's nominal quota"
    )
    assert warnings[4].startswith("- gpu-platform:tenants[0]: tenant research: Kueue holds its cpu/memory quota")
    assert (
        "| research | `research/default` -> `research` | a100-train (dedicated) > h100-spot (spot) "
        "| lower priority; reclaims lent quota | gpu-platform | a100-train: 8, h100-spot: any |"
    ) in text


def test_summary_warns_when_quotas_exceed_capacity_beyond_the_ratio():
    cfg = stack_config("prod-aws")  # oversubscriptionRatio 1.5
    # notebooks, a Kueue tenant like research (the Volcano applied-ml may not share research's pools)
    assert cfg["gpu-platform:tenants"][3]["name"] == "notebooks"
    cfg["gpu-platform:tenants"][3]["gpuQuota"]["a100-train"] = 40  # research 16 + 40 = 56 of 32 GPUs
    cfg["gpu-platform:tenants"][3]["gpuQuota"]["h100-spot"] = 32  # 16 + 32 = 48 of 32: exactly 1.5x, allowed
    text = synth.files(render_config(cfg))["summary.md"]
    assert "| 56 nvidia.com/gpu | **1.75x** (over 1.5x) |" in text
    warnings = text.split("## Warnings", 1)[1]
    assert "- gpu-platform:nodePools[0]: pool a100-train: tenant quotas are 1.75x what it can bring (allowed 1.5x" in (
        warnings
    )
    assert "h100-spot" not in warnings
    assert "| 48 nvidia.com/gpu | 1.50x |" in text
