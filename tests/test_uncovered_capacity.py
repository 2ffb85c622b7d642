"""Capacity no nominal quota covers (issue 38): GPUs a Kueue pool may bring beyond the sum of the tenants' nominal
quotas on it. Kueue lends a cohort's quota, never idle capacity (kueue v0.19.2 resource_node.go: a cohort's
SubtreeQuota is what its queues lend, each at most its nominal quota), so nothing Kueue admits ever runs there,
while the cost at max size counts them. The plan (``PoolPlan.uncovered_gpus``), ``gpu-platform plan``, the cost
report and a summary warning say so. Every number is worked out by hand from the stack files."""

from __future__ import annotations

import pytest
from conftest import stack_config

from components.cli import main as cli
from components.cli.loader import load_spec
from components.explain import summary
from components.plan import cost, kueue_quota, plan

# prod-aws pools, at max size: a100-train 4 nodes x 8 A100 = 32 (research 16); h100-spot maxGpus 32 (research 16);
# l4-notebooks 3 nodes x 4 L4 = 12, time-sliced x4 = 48 units (notebooks 4 L4 = 16 units); h100-inference 2 x 8
# H100 = 16 (serving 16); a100-gang 2 x 8 = 16, Volcano's (applied-ml): Volcano lends idle capacity up to a queue's
# capability, so no figure there.
PROD_AWS = {
    "a100-train": (32 - 16, {"nvidia.com/gpu": 16}),
    "h100-spot": (32 - 16, {"nvidia.com/gpu": 16}),
    "l4-notebooks": (12 - 4, {"nvidia.com/gpu": (12 - 4) * 4}),
    "h100-inference": (
        16 - 16,
        {"nvidia.com/mig-1g.10gb": 0, "nvidia.com/mig-2g.20gb": 0, "nvidia.com/mig-3g.40gb": 0},
    ),
    "a100-gang": (None, None),
}
# p4de.24xlarge 27.44705 per node-hour / 8 GPUs; h100-spot's blend: 2 spot nodes at 60 % of 55.04 (33.024) and 2
# on-demand at 55.04, over 32 GPUs; g6.12xlarge 4.6016 / 4 L4
PER_GPU_HOUR = {"a100-train": 27.44705 / 8, "h100-spot": (2 * 33.024 + 2 * 55.04) / 32, "l4-notebooks": 4.6016 / 4}


def _plan(stack: str, cfg=None):
    return plan.build(load_spec(cfg or stack_config(stack)), stack)


def test_prod_aws_pools_bring_gpus_no_quota_covers():
    p = _plan("prod-aws")
    got = {name: (pool.uncovered_gpus, dict(pool.uncovered_units or {}) or None) for name, pool in p.pools.items()}
    assert got == PROD_AWS


def test_the_figure_is_the_pool_less_the_nominal_quota_every_cluster_queue_holds_on_its_flavor():
    """Kueue's own objects agree: a pool's units at max size less the nominal quotas of every ClusterQueue on its
    flavor (kueue_quota.resource_quotas, what Kueue's cache reads) is the plan's figure, resource by resource."""
    p = _plan("prod-aws")
    specs = [t.cluster_queue_spec for t in p.tenants.values() if t.cluster_queue_spec]
    for name, pool in p.pools.items():
        if pool.uncovered_units is None:
            continue
        for resource, units in pool.max_units.items():
            nominal = sum(
                q.nominal for cq in specs for fr, q in kueue_quota.resource_quotas(cq).items() if fr == (name, resource)
            )
            assert pool.uncovered_units[resource] == max(units - nominal, 0), (name, resource)


@pytest.mark.parametrize("stack", ["dev-aws", "dev-gcp", "prod-gcp", "local", "dra-existing", "starter-aws"])
def test_the_other_shipped_stacks_cover_every_gpu(stack):
    """dev-aws: l4-shared 4 x 1 L4, a10g-spot maxGpus 8, ml-dev 4 + 8. dev-gcp: l4-shared 4, t4-spot 2 x 1, ml-dev
    4 + 2. prod-gcp: h100-train 4 x 8 = 32 = research 16 + applied-ml 16; h100-burst 8 x 8 = 64 = 32 + 32;
    a100-inference 6 x 1 = serving 6; l4-serving 8 x 1 = serving 8. local: workstation 1 = dev 1. dra-existing: h100
    2 x 8 = 16 = 10 + 4 + 2; a100-mig 1 x 8 = 4 + 4. starter-aws: l4-spot maxGpus 4 = ml-team 4."""
    p = _plan(stack)
    assert {name: pool.uncovered_gpus for name, pool in p.pools.items()} == dict.fromkeys(p.pools, 0)
    assert not [w for w in summary.warnings(p) if "no tenant's nominal quota" in w]


def test_the_cost_report_prices_them_at_max_size():
    """Per pool: those GPUs x its per GPU-hour (a fallback pool's blend); the total of the priced pools."""
    doc = cost.report_of(_plan("prod-aws"))
    pools = {d["name"]: d for d in doc["pools"]}
    for name, per_gpu in PER_GPU_HOUR.items():
        gpus = PROD_AWS[name][0]
        assert pools[name]["uncovered"] == {"gpus": gpus, "hourlyUsd": pytest.approx(gpus * per_gpu, abs=1e-4)}
    assert pools["h100-inference"]["uncovered"] == {"gpus": 0, "hourlyUsd": 0}
    assert pools["a100-gang"]["uncovered"] is None  # Volcano's pool
    total = 16 * 27.44705 / 8 + 16 * (2 * 33.024 + 2 * 55.04) / 32 + 8 * 4.6016 / 4  # 54.89 + 88.06 + 9.20
    assert doc["total"]["uncoveredMaxHourlyUsd"] == pytest.approx(total, abs=1e-3)
    text = "\n".join(cost.markdown(doc))
    assert (
        "Of that, GPUs no tenant's nominal quota covers, which Kueue never admits a workload onto: a100-train 16 GPUs "
        "($54.89), h100-spot 16 GPUs ($88.06), l4-notebooks 8 GPUs ($9.20); $152.16 per hour at max scale."
    ) in text


def test_the_summary_warns_with_the_pool_the_gpus_the_money_and_both_fixes():
    """a100-train (managed, 8 per node): the quotas' 16 GPUs fit 2 nodes; h100-spot (Karpenter): maxGpus 16;
    l4-notebooks (4 per node): 4 L4 fit 1 node, and its units are named (time-sliced)."""
    ws = [w for w in summary.warnings(_plan("prod-aws")) if "no tenant's nominal quota" in w]
    why = (
        "are in no tenant's nominal quota: Kueue lends a cohort's quota, never idle capacity, so no workload it "
        "admits ever runs on them, while the max-scale cost counts them"
    )
    assert ws == [
        f"pool a100-train: 16 of its 32 GPUs {why} ($54.89 per hour): raise a tenant's gpuQuota on a100-train, or "
        "lower its maxNodes to 2",
        f"pool h100-spot: 16 of its 32 GPUs {why} ($88.06 per hour): raise a tenant's gpuQuota on h100-spot, or lower "
        "its maxGpus to 16",
        f"pool l4-notebooks: 8 of its 12 GPUs (32 nvidia.com/gpu) {why} ($9.20 per hour): raise a tenant's gpuQuota "
        "on l4-notebooks, or lower its maxNodes to 1",
    ]


def test_a_pool_no_tenant_reaches_an_existing_pool_and_a_volcano_pool():
    """prod-aws with notebooks moved off l4-notebooks (to h100-spot, 4 H100): nobody has quota on l4-notebooks, all
    12 L4 uncovered; h100-spot now 32 - 16 - 4 = 12. dra-existing with notebooks' 2 H100 dropped: 2 of the existing
    h100 nodes' 16 GPUs idle. prod-aws applied-ml's a100-gang at quota 8 of 16: Volcano's, no warning."""
    cfg = stack_config("prod-aws")
    tenants = {t["name"]: t for t in cfg["gpu-platform:tenants"]}
    tenants["notebooks"]["gpuQuota"] = {"h100-spot": 4}
    tenants["applied-ml"]["gpuQuota"] = {"a100-gang": 8}
    p = _plan("prod-aws", cfg)
    assert (p.pools["l4-notebooks"].uncovered_gpus, p.pools["h100-spot"].uncovered_gpus) == (12, 12)
    assert p.pools["a100-gang"].uncovered_gpus is None
    ws = summary.warnings(p)
    assert any(w.startswith("pool l4-notebooks: 12 of its 12 GPUs (48 nvidia.com/gpu)") for w in ws)
    assert any(w.endswith(": give a tenant gpuQuota on it, or remove the pool") for w in ws)
    assert not any(w.startswith("pool a100-gang") for w in ws)
    cfg = stack_config("dra-existing")
    cfg["gpu-platform:tenants"] = [t for t in cfg["gpu-platform:tenants"] if t["name"] != "notebooks"]
    p = _plan("dra-existing", cfg)
    (w,) = [w for w in summary.warnings(p) if w.startswith("pool h100:")]
    assert w.startswith("pool h100: 2 of its 16 GPUs (2 gpu.nvidia.com/devices) are in no tenant's nominal quota")
    assert w.endswith("; those nodes exist and stay idle: raise a tenant's gpuQuota on h100")  # unpriced: no $


def test_gpu_platform_plan_names_them_per_pool(capsys):
    assert cli.main(["plan", "prod-aws"]) == 0
    text = capsys.readouterr().out
    assert "\n  a100-train: 16 GPUs (16 nvidia.com/gpu) in no tenant's nominal quota: Kueue never admits" in text
    assert "\n  l4-notebooks: 8 GPUs (32 nvidia.com/gpu) in no tenant's nominal quota" in text
    assert "\n  h100-inference: " not in text.split("\nTenants\n")[0]  # covered: nothing said
    row = next(line.split() for line in text.splitlines() if line.startswith("  a100-train  "))
    assert row[-2:] == ["16", "$3.43"]  # the Pools table's 'in no quota' and $/GPU-hour columns
