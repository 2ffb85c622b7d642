"""Cost: the dated price catalog, per pool / tenant / stack figures, ``gpu-platform cost``, the budget and
idle-node policies. Expected figures are worked out by hand from the list prices recorded independently in
upstream/prices/ (never from the code under test)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, UPSTREAM, rendered, stack_config

from components.cli import main as cli
from components.cli.loader import SpecError, load_spec
from components.data import catalog, prices
from components.plan import cost
from policies import cost_policies, pack
from policies.offline import evaluate

PRICES = UPSTREAM / "prices" / "prices.json"  # the project's copy of the upstream price record


def report(stack: str, **overrides) -> dict:
    cfg = stack_config(stack)
    cfg.update({f"gpu-platform:{k}": v for k, v in overrides.items()})
    return cost.report(load_spec(cfg), stack)


def pool(doc: dict, name: str) -> dict:
    return next(p for p in doc["pools"] if p["name"] == name)


def tenant(doc: dict, name: str) -> dict:
    return next(t for t in doc["tenants"] if t["name"] == name)


# ------------------------------------------------------------------------------------------ catalog


def test_every_catalog_type_has_a_sourced_dated_price_or_is_unknown_with_a_reason():
    data = prices.catalog()
    for cloud, types in (("aws", catalog.AWS_INSTANCE_TYPES), ("gcp", catalog.GCP_MACHINE_TYPES)):
        for name in types:
            assert (name in data[cloud]) != (name in data["unknown"][cloud]), name
            for region, fig in data[cloud].get(name, {}).items():
                assert fig["source"] in data["sources"] and len(fig["asOf"]) == 10, (name, region)
                assert fig["onDemand"] > 0 and fig.get("spot", 1) > 0  # never a zero
            if name in data["unknown"][cloud]:
                assert data["unknown"][cloud][name]
    for s in data["sources"].values():
        assert len(s["commit"]) == 40 and s["generatedAt"] and s["path"] and s["repository"]


def test_catalog_agrees_with_the_independently_recorded_upstream_figures():
    up = json.loads(PRICES.read_text())
    data = prices.catalog()
    for name, usd in up["aws"]["onDemandHourly"].items():
        assert data["aws"][name]["us-east-1"]["onDemand"] == usd, name
    assert "p5e.48xlarge" in data["unknown"]["aws"]
    for name, fig in up["gcp"]["machineTypes"].items():
        if fig.get("onDemand") is None:
            continue
        ours = data["gcp"][name]["us-central1"]
        assert (ours["onDemand"], ours["spot"]) == (fig["onDemand"], fig["spot"]), name
    assert "us-central1" not in data["gcp"]["a3-megagpu-8g"]  # the source has the type, not that region


def test_lookups_say_unknown_with_a_reason_instead_of_guessing():
    assert prices.list_price("aws", "p5.48xlarge", "us-east-1").usd == 55.04
    for price in (
        prices.list_price("aws", "p5.48xlarge", "eu-west-1"),  # the source has us-east-1 only
        prices.list_price("aws", "p5e.48xlarge", "us-east-1"),
        prices.list_price("gcp", "a3-megagpu-8g", "us-central1"),
        prices.list_price("gcp", "n1-standard-8", "us-central1"),  # VM price without its T4
        prices.list_price("existing", "anything", None),
    ):
        assert price.usd is None and price.reason
    assert prices.region_of("us-central1-a") == "us-central1"


# ------------------------------------------------------------------------------------------ figures


def test_prod_aws_pools_tenants_and_total_at_list_price():
    doc = report("prod-aws")
    a100 = pool(doc, "a100-train")  # 4 x p4de.24xlarge 27.44705
    assert a100["hourlyUsd"] == {"min": 0, "max": pytest.approx(109.7882)}
    assert a100["perGpuHourUsd"] == pytest.approx(3.430881, abs=1e-6)
    inference = pool(doc, "h100-inference")  # p5.48xlarge 55.04, min 1 node, max 2
    assert inference["hourlyUsd"] == {"min": pytest.approx(55.04), "max": pytest.approx(110.08)}
    # MIG 3g.40gb + 2g.20gb + 2x 1g.10gb: 7 compute slices share a 6.88 GPU-hour
    assert inference["perUnitHourUsd"]["nvidia.com/mig-3g.40gb"] == pytest.approx(6.88 * 3 / 7, abs=1e-4)
    assert inference["perUnitHourUsd"]["nvidia.com/mig-1g.10gb"] == pytest.approx(6.88 / 7, abs=1e-4)
    spot = pool(doc, "h100-spot")  # 32 GPU cap, onDemandFallback: 2 spot nodes (est. 60 % of 55.04) + 2 on-demand
    assert spot["spotPerNodeHour"]["estimate"] is True and spot["spotPerNodeHour"]["usd"] == pytest.approx(33.024)
    assert spot["hourlyUsd"]["max"] == pytest.approx(2 * 33.024 + 2 * 55.04)
    assert spot["maxHourlyUsdAllOnDemand"] == pytest.approx(4 * 55.04)
    notebooks = pool(doc, "l4-notebooks")  # g6.12xlarge 4.6016, 4 L4, time-sliced x4
    assert notebooks["perUnitHourUsd"] == {"nvidia.com/gpu": pytest.approx(4.6016 / 16, abs=1e-4)}
    assert pool(doc, "a100-train")["onDemandPerNodeHour"]["asOf"] == "2026-07-20"
    gang = pool(doc, "a100-gang")  # 2 x p4de.24xlarge 27.44705, min 0 nodes
    assert gang["hourlyUsd"] == {"min": 0, "max": pytest.approx(2 * 27.44705)}
    assert gang["perGpuHourUsd"] == pytest.approx(27.44705 / 8, abs=1e-6)
    # 109.7882 + 110.08 + 176.128 + 13.8048 + 54.8941 = 464.6951
    assert doc["total"]["maxHourlyUsd"] == pytest.approx(
        109.7882 + 110.08 + 176.128 + 3 * 4.6016 + 2 * 27.44705, abs=1e-3
    )
    assert doc["total"]["minHourlyUsd"] == pytest.approx(55.04)  # h100-inference's 1 node; every other min is 0
    # 4 L4 nominal; no other ClusterQueue of cohort gpu-platform has quota on l4-notebooks to lend it, so Kueue
    # never admits more than those 4 for it (the pool's other 8 L4 are nobody's quota): its ceiling is 4
    t = tenant(doc, "notebooks")
    assert t["nominal"]["hourlyUsd"] == pytest.approx(4 * 1.1504) and t["ceiling"]["gpus"] == {"l4-notebooks": 4}
    assert t["ceiling"]["hourlyUsd"] == pytest.approx(4 * 1.1504)
    t = tenant(doc, "applied-ml")  # 16 A100 on a100-gang, the whole pool: nominal and ceiling alike
    assert t["nominal"]["gpus"] == {"a100-gang": 16} and t["ceiling"]["gpus"] == {"a100-gang": 16}
    assert t["nominal"]["hourlyUsd"] == pytest.approx(16 * 27.44705 / 8, abs=1e-3)
    assert t["ceiling"]["hourlyUsd"] == pytest.approx(16 * 27.44705 / 8, abs=1e-3)


def test_gcp_spot_comes_from_the_catalog_not_an_estimate():
    l4 = pool(report("prod-gcp"), "l4-serving")  # g2-standard-8 spot 0.479872 in us-central1
    assert l4["spotPerNodeHour"] == {"usd": 0.479872, "source": l4["spotPerNodeHour"]["source"], "asOf": "2026-07-30"}
    assert l4["hourlyUsd"]["max"] == pytest.approx(8 * 0.479872, abs=1e-4)


def test_unknown_price_is_shown_as_unknown_never_zero():
    doc = report("dev-gcp")  # t4-spot: N1 + T4, no T4 price in any source
    t4 = pool(doc, "t4-spot")
    assert t4["hourlyUsd"]["max"] is None and t4["perGpuHourUsd"] is None
    assert doc["total"]["maxHourlyUsd"] is None and doc["total"]["unknownPools"] == ["t4-spot"]
    assert tenant(doc, "ml-dev")["nominal"]["hourlyUsd"] is None
    row = next(line for line in cost.markdown(doc) if line.startswith("| t4-spot "))
    assert "unknown" in row and "$0.00 | unknown" in row  # 0 nodes at min cost nothing; max is unknown
    assert "**unknown**" in "\n".join(cost.markdown(doc))


def test_overrides_and_spot_discount_replace_list_prices():
    doc = report("dev-gcp", pricing={"overrides": {"n1-standard-8": {"spot": 0.5}}})
    assert pool(doc, "t4-spot")["hourlyUsd"]["max"] == pytest.approx(1.0)
    assert pool(doc, "t4-spot")["spotPerNodeHour"]["source"] == prices.STACK_CONFIG
    assert doc["total"]["maxHourlyUsd"] == pytest.approx(1.0 + 4 * 0.479872, abs=1e-4)
    # dev-aws a10g-spot: g5.xlarge/2xlarge/4xlarge, the dearest is g5.4xlarge; 8 GPUs at 30 % off
    g5 = prices.catalog()["aws"]["g5.4xlarge"]["us-east-1"]["onDemand"]
    doc = report("dev-aws", pricing={"spotDiscount": 0.3})
    assert pool(doc, "a10g-spot")["hourlyUsd"]["max"] == pytest.approx(8 * g5 * 0.7, abs=1e-3)


@pytest.mark.parametrize(
    ("stack", "value", "path"),
    [
        ("dev-aws", {"pricing": {"overrides": {"p5.48xlarge": {"onDemand": 40}}}}, "pricing.overrides.p5.48xlarge"),
        ("dev-aws", {"pricing": {"overrides": {"g6.xlarge": {}}}}, "pricing.overrides.g6.xlarge"),
        ("dev-aws", {"pricing": {"spotDiscount": 1.5}}, "pricing.spotDiscount"),
        ("dev-gcp", {"pricing": {"spotDiscount": 0.5}}, "pricing.spotDiscount"),
        ("dev-aws", {"budget": {"tenants": {"nobody": 5}}}, "budget.tenants.nobody"),
        ("dev-aws", {"budget": {"maxHourlyUsd": 0}}, "budget.maxHourlyUsd"),
        ("dev-aws", {"budget": {"maxHourlyUSD": 10}}, "budget.maxHourlyUSD"),
    ],
)
def test_pricing_and_budget_are_validated(stack, value, path):
    cfg = stack_config(stack)
    cfg.update({f"gpu-platform:{k}": v for k, v in value.items()})
    with pytest.raises(SpecError) as err:
        load_spec(cfg)
    assert [p.path for p in err.value.problems] == [f"gpu-platform:{path}"]


# ------------------------------------------------------------------------------------------ outputs


def test_synth_writes_cost_json_and_summary_and_the_configmap_carries_it():
    from components.cli import synth

    r = rendered("prod-aws")
    files = synth.files(r)
    doc = json.loads(files["cost.json"])
    assert doc == json.loads(cost.to_json(cost.report(r.spec, "prod-aws")))
    assert "## Cost" in files["summary.md"] and "| h100-spot | spot (+on-demand fallback) |" in files["summary.md"]
    cm = next(m for m in r.manifests if m["kind"] == "ConfigMap" and m["metadata"]["name"] == cost.CONFIGMAP_NAME)
    assert json.loads(cm["data"][cost.CONFIGMAP_KEY]) == doc and doc["stack"] == "prod-aws"
    assert cost_policies.COST_LABEL == cost.COST_LABEL and cm["metadata"]["labels"][cost.COST_LABEL] == "true"


def test_cost_command_prints_the_table_and_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    stack_file = ROOT / "stacks" / "Pulumi.prod-aws.yaml"
    assert cli.main(["cost", "prod-aws", "--config", str(stack_file)]) == 0
    out = capsys.readouterr().out
    # 409.801 without a100-gang + 2 x 27.44705 = 464.6951
    assert re.search(r"^a100-train +on-demand +\$27\.45 +- +0\.\.32 ", out, re.M)
    assert re.search(r"^a100-gang +on-demand +\$27\.45 +- +0\.\.16 ", out, re.M)
    assert "Whole stack at max scale: $464.70 per hour" in out
    assert os.listdir(tmp_path) == []
    assert cli.main(["cost", "prod-aws", "--config", str(stack_file), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["total"]["maxHourlyUsd"] == pytest.approx(464.6951, abs=1e-3)
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"config": {"gpu-platform:cloud": "aws", "gpu-platform:budget": {"max": 1}}}))
    assert cli.main(["cost", "x", "--config", str(bad)]) == 2
    assert "bad.yaml: gpu-platform:budget.max: unknown key" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------ policies


def _over_budget_file(tmp_path: Path, budget: dict) -> Path:
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.prod-aws.yaml").read_text())
    doc["config"]["gpu-platform:budget"] = budget
    path = tmp_path / "Pulumi.over.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_stack_over_budget_fails_check_naming_the_top_pools(tmp_path, capsys):
    path = _over_budget_file(tmp_path, {"maxHourlyUsd": 300})
    assert cli.main(["check", "prod-aws", "--config", str(path)]) == 1
    err = capsys.readouterr().err
    line = next(x for x in err.splitlines() if "gpu-budget" in x)
    assert "mandatory" in line and "$464.70/h, over the budget of $300.00/h" in line
    # the three largest; a100-gang's 54.89 is fourth
    assert "largest pools: h100-spot $176.13/h, h100-inference $110.08/h, a100-train $109.79/h" in line
    # just within budget: nothing (464.70 <= 465, notebooks' ceiling 4 L4 = 4.60 <= 14)
    assert (
        cost_policies.budget_problems(report("prod-aws", budget={"maxHourlyUsd": 465, "tenants": {"notebooks": 14}}))
        == []
    )


def test_tenant_budget_and_unknown_prices_fail_the_budget_policy():
    doc = report("prod-aws", budget={"maxHourlyUsd": 1000, "tenants": {"notebooks": 4}})
    [msg] = cost_policies.budget_problems(doc)  # its ceiling: its own 4 L4 x 1.1504 (nobody lends it more)
    assert msg.startswith("tenant notebooks: its borrowing ceiling costs $4.60/h, over its budget of $4.00/h")
    doc = report("dev-gcp", budget={"maxHourlyUsd": 1000})
    [msg] = cost_policies.budget_problems(doc)
    assert "cannot be checked: no price for pool(s) t4-spot" in msg
    assert cost_policies.budget_problems(report("dev-gcp")) == []  # no budget, nothing to check


def _with_big_pool(stack: str, quota: bool) -> dict:
    cfg = stack_config(stack)
    pools = [*cfg["gpu-platform:nodePools"]]
    pools.append(
        {
            "name": "h100-always",
            "gpu": {"model": "H100", "perNode": 8},
            "instanceTypes": ["p5.48xlarge"],
            "minNodes": 1,
            "maxNodes": 1,
        }
    )
    cfg["gpu-platform:nodePools"] = pools
    if quota:
        tenants = [dict(t) for t in cfg["gpu-platform:tenants"]]
        tenants[0]["gpuQuota"] = {**tenants[0].get("gpuQuota", {}), "h100-always": 8}
        cfg["gpu-platform:tenants"] = tenants
    return cfg


@pytest.mark.parametrize(
    ("stack", "name", "quota", "warned"),
    [
        ("dev-aws", "dev-aws", True, True),  # a dev stack: warned even with quota
        ("prod-aws", "prod-aws", True, False),
        ("prod-aws", "prod-aws", False, True),  # no tenant quota on it
        ("dev-aws", "devops", True, False),  # "dev" must be a word of the name
    ],
)
def test_idle_node_policy(stack, name, quota, warned):
    doc = cost.report(load_spec(_with_big_pool(stack, quota)), name)
    problems = cost_policies.idle_node_problems(doc)
    assert bool(problems) == warned
    if warned:
        assert problems[0].startswith("pool h100-always: keeps 1 on-demand node(s) of 8 GPUs up around the clock")
        assert "$55.04/h" in problems[0]


def test_idle_node_policy_runs_offline_as_advisory():
    from conftest import render_config

    r = render_config(_with_big_pool("dev-aws", True), stack="dev-aws")
    report_ = evaluate(r, policies=[pack.by_name()["idle-gpu-nodes"], pack.by_name()["gpu-budget"]])
    assert [v.policy for v in report_.violations] == ["idle-gpu-nodes"]
    assert not report_.mandatory_violations


# ------------------------------------------------------------------------------------ rules, exactly


def _problems(cfg: dict) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as err:
        load_spec(cfg)
    return [(p.path, p.message) for p in err.value.problems]


def test_pricing_problems_name_what_the_stack_offers():
    """An override for a type no pool uses lists the types the pools do use (sorted, 'none' when there are
    none); an empty override asks for a figure; spotDiscount off AWS and an unknown budget tenant say why."""
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:pricing"] = {"overrides": {"p5.48xlarge": {"onDemand": 40}, "g5.xlarge": {}}}
    assert _problems(cfg) == [
        ("gpu-platform:pricing.overrides.g5.xlarge", "give onDemand, spot or both"),
        (
            "gpu-platform:pricing.overrides.p5.48xlarge",
            "no pool uses 'p5.48xlarge' (pools use: g5.2xlarge, g5.4xlarge, g5.xlarge, g6.2xlarge, g6.xlarge)",
        ),
    ]
    cfg = stack_config("local")  # cloud existing: its pool names no instance type
    cfg["gpu-platform:pricing"] = {"overrides": {"p5.48xlarge": {"spot": 10}}, "spotDiscount": 0.3}
    cfg["gpu-platform:budget"] = {"tenants": {"nobody": 3}}
    assert _problems(cfg) == [
        ("gpu-platform:budget.tenants.nobody", "unknown tenant (tenants: dev)"),
        ("gpu-platform:pricing.overrides.p5.48xlarge", "no pool uses 'p5.48xlarge' (pools use: none)"),
        (
            "gpu-platform:pricing.spotDiscount",
            "applies to aws only (GCP Spot prices come from the catalog; override them per type instead)",
        ),
    ]


# ------------------------------------------------------------------------------------ prices per type


def _spec(stack: str, **overrides):
    cfg = stack_config(stack)
    cfg.update({f"gpu-platform:{k}": v for k, v in overrides.items()})
    return load_spec(cfg)


def test_an_override_replaces_only_the_capacity_it_gives():
    """An override with only onDemand leaves spot to the AWS estimate, computed from that override (2 less
    40 % = 1.2); one with only spot leaves on-demand to the catalog (upstream g5.xlarge 1.006 stays)."""
    spec = _spec("dev-aws", pricing={"overrides": {"g5.xlarge": {"onDemand": 2}, "g5.2xlarge": {"spot": 0.5}}})
    assert cost.type_price(spec, "g5.xlarge", "on-demand") == prices.Price(2, source=prices.STACK_CONFIG)
    spot = cost.type_price(spec, "g5.xlarge", "spot")
    assert (spot.usd, spot.estimate, spot.as_of) == (pytest.approx(1.2), True, None)
    assert spot.source == f"estimate: on-demand 2 less 40%, {prices.SPOT_DISCOUNT_BASIS}"
    assert cost.type_price(spec, "g5.2xlarge", "spot") == prices.Price(0.5, source=prices.STACK_CONFIG)
    od = cost.type_price(spec, "g5.2xlarge", "on-demand")
    assert od.source != prices.STACK_CONFIG and od.estimate is False and od.usd is not None


def test_aws_spot_estimate_from_the_catalog_keeps_its_date():
    """Without overrides the spot estimate is the catalog's on-demand (upstream g5.xlarge: 1.006 USD) less the
    stack's spotDiscount, dated like the on-demand figure it comes from."""
    spot = cost.type_price(_spec("dev-aws", pricing={"spotDiscount": 0.25}), "g5.xlarge", "spot")
    assert spot.usd == pytest.approx(1.006 * 0.75) and spot.estimate is True
    assert spot.source == f"estimate: on-demand 1.006 less 25%, {prices.SPOT_DISCOUNT_BASIS}"
    assert spot.as_of == prices.catalog()["aws"]["g5.xlarge"]["us-east-1"]["asOf"]
    assert cost.spot_discount(_spec("dev-aws")) == 0.40  # the documented default


def test_an_unknown_on_demand_price_leaves_the_spot_estimate_unknown_too():
    """p5e.48xlarge has no upstream price: its AWS spot estimate is unknown with the same reason, not 0."""
    spec = _spec("dev-aws")
    od = cost.type_price(spec, "p5e.48xlarge", "on-demand")
    spot = cost.type_price(spec, "p5e.48xlarge", "spot")
    assert od.usd is None and od.reason and spot == od


def test_node_price_is_the_dearest_type_or_unknown_with_every_reason():
    """The dearest instance type prices the node (an upper bound); one unpriced type makes the node unknown,
    with every unpriced type's reason joined; a pool without types is unknown with its own reason."""
    spec = _spec("dev-aws", pricing={"overrides": {"g5.xlarge": {"onDemand": 9}}})
    pool_ = spec.pool("a10g-spot")
    assert cost.node_price(spec, pool_, "on-demand").usd == 9  # above g5.2xlarge / g5.4xlarge list prices
    p5e = cost.type_price(spec, "p5e.48xlarge", "on-demand").reason
    other = pool_.model_copy(update={"instance_types": ["p5e.48xlarge", "g5.xlarge", "p5e.48xlarge"]})
    assert cost.node_price(spec, other, "on-demand") == prices.unknown(f"{p5e}; {p5e}")
    local = _spec("local")
    assert cost.node_price(local, local.node_pools[0], "on-demand") == prices.unknown(
        "the pool names no instance/machine type"
    )


# ------------------------------------------------------------------------------------ pool arithmetic


def _pool_cost(spot_usd, od_usd, *, capacity="spot", min_nodes=0, per_node=4, spot_gpus=8, od_gpus=0):
    spec = _spec("dev-aws")
    base = spec.pool("l4-shared")
    p = base.model_copy(
        update={"capacity": capacity, "min_nodes": min_nodes, "gpu": base.gpu.model_copy(update={"per_node": per_node})}
    )
    return cost.PoolCost(
        pool=p,
        on_demand=prices.Price(od_usd) if od_usd is not None else prices.unknown("x"),
        spot=None if spot_usd is False else (prices.Price(spot_usd) if spot_usd is not None else prices.unknown("y")),
        spot_gpus=spot_gpus,
        on_demand_gpus=od_gpus,
        units_per_gpu={"nvidia.com/gpu": 4},
    )


def test_pool_hourly_figures_per_gpu_and_at_min_and_max():
    """Per GPU = node price / GPUs per node; the max mixes spot and on-demand GPUs; the min runs min nodes
    on the pool's own capacity type; a part with no GPUs costs nothing even when its price is unknown."""
    c = _pool_cost(2.0, 6.0, min_nodes=1, spot_gpus=8, od_gpus=4)  # 4 GPUs/node: 0.5 spot, 1.5 on-demand
    assert (c.per_gpu_spot, c.per_gpu_on_demand) == (0.5, 1.5)
    assert c.max_hourly == 8 * 0.5 + 4 * 1.5
    assert c.min_gpus == 4 and c.min_hourly == 4 * 0.5  # spot pool: its min nodes are spot
    assert c.hourly(0, 0) == 0.0
    # the pool's cap is 4 nodes x 4 GPUs = 16: (8 x 0.5 + 4 x 1.5) / 16 per GPU, a quarter of that per unit
    assert c.per_gpu_hour == 10 / 16 and c.per_unit_hour == {"nvidia.com/gpu": pytest.approx(10 / 16 / 4)}
    od = _pool_cost(False, 6.0, capacity="on-demand", min_nodes=2, spot_gpus=0, od_gpus=8)
    assert od.per_gpu_spot is None and od.min_hourly == 8 * 1.5 and od.max_hourly == 12.0
    unknown_spot = _pool_cost(None, 6.0, spot_gpus=0, od_gpus=8)
    assert unknown_spot.per_gpu_spot is None and unknown_spot.max_hourly == 12.0  # no spot GPUs at max
    assert _pool_cost(None, 6.0, spot_gpus=1, od_gpus=8).max_hourly is None
    assert _pool_cost(2.0, None, spot_gpus=8, od_gpus=1).max_hourly is None
    assert c.hourly(1, 1) == round(0.5 + 1.5, 4) and _pool_cost(1.0 / 3, 1.0, per_node=1).hourly(1, 0) == 0.3333


def test_per_gpu_hour_falls_back_to_the_capacity_price_without_a_cap():
    """A pool capped at 0 GPUs has no max-scale blend: its per-GPU price is its own capacity type's."""
    spot = _pool_cost(2.0, 6.0)
    assert spot.per_gpu_hour == 8 * 0.5 / 16  # 8 spot GPUs at max, over the pool's 16
    zero = spot.pool.model_copy(update={"max_nodes": 0, "max_gpus": None})
    assert zero.gpu_cap == 0
    spot0 = cost.PoolCost(zero, prices.Price(6.0), prices.Price(2.0), 0, 0, {})
    assert spot0.per_gpu_hour == 0.5
    od0 = cost.PoolCost(zero.model_copy(update={"capacity": "on-demand"}), prices.Price(6.0), None, 0, 0, {})
    assert od0.per_gpu_hour == 1.5


# ------------------------------------------------------------------------------------ formatting


@pytest.mark.parametrize(
    ("x", "text"),
    [(None, "unknown"), (0, "$0.00"), (0.0, "$0.00"), (1, "$1.00"), (1234.5, "$1,234.50"), (0.5, "$0.5000")],
)
def test_usd_keeps_cents_above_a_dollar_and_four_places_below(x, text):
    """Sub-dollar unit prices (a time-sliced share) would all read $0.xx with two places."""
    assert cost.usd(x) == text


def test_the_document_writes_whole_floats_as_integers():
    """cost.json is ConfigMap text too: 300.0 is written 300 everywhere (nested too), fractions stay."""
    text = cost.to_json({"b": [2.0, 1.5, {"c": 0.0}], "a": 300.0, "d": "x", "e": None, "f": True})
    assert text.endswith("}\n")
    assert json.loads(text) == {"a": 300, "b": [2, 1.5, {"c": 0}], "d": "x", "e": None, "f": True}
    assert '"a": 300,' in text and '"c": 0\n' in text and "1.5" in text and "300.0" not in text
    assert text.index('"a"') < text.index('"b"')  # sorted keys: one text per document


def _doc(**changes) -> dict:
    src = {"source": "SRC-A", "generatedAt": "2026-07-20"}
    doc = {
        "cloud": "aws",
        "region": None,
        "pools": [
            {
                "name": "a",
                "capacity": "spot",
                "onDemandFallback": True,
                "onDemandPerNodeHour": {"usd": 2.5, "source": "s", "asOf": "d"},
                "spotPerNodeHour": {"usd": 1.5, "source": "s", "asOf": "d", "estimate": True},
                "gpus": {"min": 0, "max": 8},
                "hourlyUsd": {"min": 0, "max": 1234.5},
                "maxHourlyUsdAllOnDemand": 20.0,
                "perGpuHourUsd": 0.25,
                "perUnitHourUsd": {"nvidia.com/gpu": 0.0625, "nvidia.com/gpu.shared": 2},
            },
            {
                "name": "b",
                "capacity": "spot",
                "onDemandFallback": False,
                "onDemandPerNodeHour": {"usd": None, "unknown": "no price"},
                "spotPerNodeHour": {"usd": None, "unknown": "no price"},
                "gpus": {"min": 1, "max": 2},
                "hourlyUsd": {"min": None, "max": None},
                "maxHourlyUsdAllOnDemand": None,
                "perGpuHourUsd": None,
                "perUnitHourUsd": {},
            },
        ],
        "total": {"maxHourlyUsd": None, "minHourlyUsd": None, "knownMaxHourlyUsd": 12.0, "unknownPools": ["b"]},
        "budget": {"maxHourlyUsd": 100, "tenants": {"t1": 5}},
        "tenants": [
            {
                "name": "t1",
                "nominal": {"gpus": {"a": 2}, "hourlyUsd": 0.5},
                "ceiling": {"gpus": {"a": 8, "b": 1}, "hourlyUsd": 2.0},
            },
            {"name": "t2", "nominal": {"gpus": {}, "hourlyUsd": 0}, "ceiling": {"gpus": {}, "hourlyUsd": 0}},
        ],
        "assumptions": {"catalog": {"aws": src, "gcp": {"source": "SRC-G", "generatedAt": "2026-07-30"}}},
    }
    doc.update(changes)
    return doc


def test_cost_markdown_rows_worked_by_hand():
    """Every column of the pool and tenant tables, the total with an unknown pool, the budget line, the
    deduplicated unknown reasons and the sources, from a document written by hand."""
    lines = cost.markdown(_doc())
    assert lines[:2] == ["## Cost", ""]
    assert lines[2].startswith("List prices, USD per hour (aws, region unset); *unknown*: the catalog has no figure")
    assert lines[2].endswith(f"an AWS spot estimate: {prices.SPOT_DISCOUNT_BASIS}.")
    assert lines[4] == (
        "| pool | capacity | node on-demand | node spot | GPUs min..max | $/h at min | $/h at max "
        "| $/h at max, all on-demand | per GPU-hour | per scheduler unit |"
    )
    assert lines[5] == "|---|---|---|---|---|---|---|---|---|---|"
    assert lines[6:8] == [
        "| a | spot (+on-demand fallback) | $2.50 | $1.50 (est.) | 0..8 | $0.00 | $1,234.50 | $20.00 | $0.2500 "
        "| $0.0625 / nvidia.com/gpu, $2.00 / nvidia.com/gpu.shared |",
        "| b | spot | unknown | unknown | 1..2 | unknown | unknown | unknown | unknown | - |",
    ]
    assert lines[8:] == [
        "",
        "Whole stack at max scale: **unknown**: no price for b (the priced pools alone: $12.00); "
        "at min size: unknown per hour.",
        "Budget (`gpu-platform:budget.maxHourlyUsd`): $100.00 per hour.",
        "",
        "| tenant | nominal quota (GPUs) | $/h nominal | borrowing ceiling (GPUs) | $/h at ceiling | budget |",
        "|---|---|---|---|---|---|",
        "| t1 | a: 2 | $0.5000 | a: 8, b: 1 | $2.00 | $5.00 |",
        "| t2 | - | $0.00 | - | $0.00 | - |",
        "",
        "Unknown prices:",
        "",
        "- b: no price",
        "",
        "Price sources: SRC-A generated 2026-07-20; SRC-G generated 2026-07-30 "
        "(components/data/prices.json, scripts/extract_prices.py).",
    ]


def test_cost_markdown_without_pools_tenants_budget_or_unknowns():
    """The empty cases: a placeholder pool row, a known total, no budget line, no tenant table, no reasons;
    a pool without spot shows '-' there."""
    lines = cost.markdown(
        _doc(
            region="us-east-1",
            pools=[],
            tenants=[],
            budget={"maxHourlyUsd": None, "tenants": {}},
            total={"maxHourlyUsd": 0, "minHourlyUsd": 0, "knownMaxHourlyUsd": 0, "unknownPools": []},
        )
    )
    assert "(aws, region us-east-1)" in lines[2]
    assert lines[6:] == [
        "| (none) | | | | | | | | | |",
        "",
        "Whole stack at max scale: **$0.00** per hour; at min size: $0.00 per hour.",
        "",
        "Price sources: SRC-A generated 2026-07-20; SRC-G generated 2026-07-30 "
        "(components/data/prices.json, scripts/extract_prices.py).",
    ]
    doc = _doc()
    doc["pools"][0].update(spotPerNodeHour=None, onDemandFallback=False, capacity="on-demand", perUnitHourUsd={})
    row = cost.markdown(doc)[6]
    assert row.startswith("| a | on-demand | $2.50 | - | 0..8 |") and row.endswith("| $0.2500 | - |")


# ------------------------------------------------------------------------------------ the document


def test_report_of_an_existing_cluster_without_prices():
    """cloud existing: no region, no price catalog, no AWS spot assumption; the pool's figures are unknown with
    the reason, except what costs nothing (0 nodes at min size); the total says which pool is unpriced."""
    doc = report("local")
    assert (doc["stack"], doc["cloud"], doc["region"], doc["currency"]) == ("local", "existing", None, "USD")
    assert doc["assumptions"]["awsSpotDiscount"] is None
    assert doc["assumptions"]["nodePrice"] == "the dearest of a pool's instance types (an upper bound)"
    ((p,),) = [doc["pools"]]
    assert p == {
        "name": "workstation",
        "capacity": "on-demand",
        "onDemandFallback": False,
        "instanceTypes": [],
        "gpuModel": "L4",
        "gpusPerNode": 1,
        "nodes": {"min": 0, "max": 1},
        "gpus": {"min": 0, "max": 1, "spot": 0, "onDemand": 1},
        "tenantQuotaGpus": 1,
        "uncovered": {"gpus": 0, "hourlyUsd": 0},  # dev's 1 L4 is the pool's 1: nothing uncovered, unpriced or not
        "onDemandPerNodeHour": {"usd": None, "unknown": "the pool names no instance/machine type"},
        "spotPerNodeHour": None,
        "hourlyUsd": {"min": 0, "max": None},
        "maxHourlyUsdAllOnDemand": None,
        "perGpuHourUsd": None,
        "perUnitHourUsd": {"nvidia.com/gpu": None},
    }
    assert doc["tenants"] == [
        {
            "name": "dev",
            "nominal": {"gpus": {"workstation": 1}, "hourlyUsd": None},
            "ceiling": {"gpus": {"workstation": 1}, "hourlyUsd": None},
        }
    ]
    assert doc["total"] == {
        "maxHourlyUsd": None,
        "minHourlyUsd": 0,
        "knownMaxHourlyUsd": 0,
        "unknownPools": ["workstation"],
        "uncoveredMaxHourlyUsd": 0,
    }
    assert doc["budget"] == {"maxHourlyUsd": None, "tenants": {}}


def test_report_splits_a_fallback_pool_and_states_the_aws_assumption():
    """prod-aws h100-spot (32 GPUs, onDemandFallback): 2 nodes' GPUs on spot, 2 on on-demand; the AWS spot
    discount assumed (default 40 %) is in the document; budgets are copied, tenants sorted."""
    doc = report("prod-aws", budget={"maxHourlyUsd": 500, "tenants": {"serving": 120, "notebooks": 20}})
    spot = pool(doc, "h100-spot")
    assert spot["onDemandFallback"] is True and spot["capacity"] == "spot"
    assert spot["gpus"] == {"min": 0, "max": 32, "spot": 16, "onDemand": 16}
    assert (spot["nodes"], spot["gpusPerNode"]) == ({"min": 0, "max": 4}, 8)  # maxGpus 32 / 8 per node
    assert pool(doc, "a100-train")["onDemandFallback"] is False
    assert doc["assumptions"]["awsSpotDiscount"] == 0.4
    assert doc["budget"] == {"maxHourlyUsd": 500, "tenants": {"notebooks": 20, "serving": 120}}
    assert list(doc["budget"]["tenants"]) == ["notebooks", "serving"]
    assert [t["name"] for t in doc["tenants"]] == sorted(t["name"] for t in doc["tenants"])
    assert [p["name"] for p in doc["pools"]] == [
        "a100-gang",
        "a100-train",
        "h100-inference",
        "h100-spot",
        "l4-notebooks",
    ]
    assert pool(doc, "a100-train")["tenantQuotaGpus"] == 16  # research only; applied-ml is on a100-gang
    assert pool(doc, "a100-gang")["tenantQuotaGpus"] == 16  # applied-ml
    assert pool(doc, "l4-notebooks")["tenantQuotaGpus"] == 4  # notebooks


def test_a_zero_quota_on_an_unpriced_pool_costs_nothing():
    """A tenant entry of 0 GPUs (borrow-only) on the unpriced t4-spot leaves its nominal cost known; its ceiling is
    unknown once another tenant lends it a T4 there (Kueue: 0 + the cohort's 1), and known (0 T4) while nobody
    does."""
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:tenants"][0]["gpuQuota"] = {"l4-shared": 4, "t4-spot": 0}
    alone = tenant(cost.report(load_spec(cfg), "dev-gcp"), "ml-dev")
    assert alone["ceiling"]["gpus"] == {"l4-shared": 4, "t4-spot": 0}
    assert alone["ceiling"]["hourlyUsd"] == pytest.approx(4 * 0.479872, abs=1e-4)
    cfg["gpu-platform:tenants"].append({"name": "lender", "gpuQuota": {"t4-spot": 1}})
    doc = cost.report(load_spec(cfg), "dev-gcp")
    t = tenant(doc, "ml-dev")
    assert t["nominal"]["hourlyUsd"] == pytest.approx(4 * 0.479872, abs=1e-4)  # l4-shared spot, 1 L4 a node
    assert t["ceiling"]["gpus"]["t4-spot"] == 1
    assert t["ceiling"]["hourlyUsd"] is None  # it may borrow a T4, whose price is unknown


def test_unit_price_splits_a_gpu_hour_by_what_it_advertises():
    """MIG profiles (mixed strategy) by compute slices of the layout (h100-inference: 3 + 2 + 1 + 1 = 7);
    anything else (time-slices, MPS clients, single-strategy MIG slices as nvidia.com/gpu) evenly by count;
    an unknown GPU price stays unknown."""
    spec = load_spec(stack_config("prod-aws"))
    mig = spec.pool("h100-inference")
    assert cost.unit_price(7.0, mig, "nvidia.com/mig-3g.40gb", 1) == pytest.approx(3.0)
    assert cost.unit_price(7.0, mig, "nvidia.com/mig-1g.10gb", 2) == pytest.approx(1.0)
    assert cost.unit_price(7.0, mig, "nvidia.com/gpu", 7) == pytest.approx(1.0)  # single strategy: 7 slices
    assert cost.unit_price(8.0, spec.pool("l4-notebooks"), "nvidia.com/gpu", 4) == 2.0
    assert cost.unit_price(None, mig, "nvidia.com/mig-3g.40gb", 1) is None


def test_the_cost_configmap_sits_where_tenants_cannot_read_it():
    """kube-system exists on every cluster and tenants have no access there; the budget policies find the
    ConfigMap by its cost label; its one key holds the document as written to cost.json."""
    doc = report("local")
    cm = cost.configmap(doc)
    assert (cm["apiVersion"], cm["kind"]) == ("v1", "ConfigMap")
    assert cm["metadata"] == {
        "name": "gpu-platform-cost",
        "namespace": "kube-system",
        "labels": {"app.kubernetes.io/managed-by": "gpu-platform", "gpu-platform/cost": "true"},
    }
    assert cm["data"] == {"cost.json": cost.to_json(doc)}
    rec = rendered("local").find("kubernetes:core/v1:ConfigMap", "gpu-platform-cost")
    assert rec.parent == "cost" and rec.inputs["metadata"]["namespace"] == "kube-system"


@pytest.mark.parametrize("stack", ["dev-aws", "dev-gcp", "prod-gcp"])
def test_per_gpu_prices_keep_the_sources_precision(stack):
    """A pool without an on-demand fallback costs its node price / GPUs per node, exactly: the per-GPU figure is
    not derived from the report's total rounded to 4 decimals (dev-gcp's T4 spot was 0.479875 instead of the
    catalog's 0.479872 per node-hour)."""
    spec = load_spec(stack_config(stack))
    checked = 0
    for pool in spec.node_pools:
        if pool.karpenter.on_demand_fallback and pool.capacity == "spot" and pool.provisioner == "karpenter":
            continue
        capacity = "spot" if pool.capacity == "spot" else "on-demand"
        node = cost.node_price(spec, pool, capacity).usd
        if node is None:
            continue
        assert cost.pool_cost(spec, pool).per_gpu_hour == pytest.approx(node / pool.gpu.per_node, rel=0, abs=1e-12)
        checked += 1
    assert checked
