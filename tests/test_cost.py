"""Cost: the dated price catalog, per pool / tenant / stack figures, ``gpu-platform cost``, the budget and
idle-node policies. Expected figures are worked out by hand from the list prices recorded independently in
upstream/prices/ (never from the code under test)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, UPSTREAM, rendered, stack_config

from components import catalog, cli, cost, prices
from components.loader import SpecError, load_spec
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
    assert doc["total"]["maxHourlyUsd"] == pytest.approx(109.7882 + 110.08 + 176.128 + 3 * 4.6016, abs=1e-3)
    assert doc["total"]["minHourlyUsd"] == pytest.approx(55.04)
    t = tenant(doc, "notebooks")  # 4 L4 nominal, may borrow up to the pool's 12
    assert t["nominal"]["hourlyUsd"] == pytest.approx(4 * 1.1504) and t["ceiling"]["gpus"] == {"l4-notebooks": 12}
    assert t["ceiling"]["hourlyUsd"] == pytest.approx(12 * 1.1504)


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
    from components import synth

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
    assert "| a100-train | on-demand | $27.45 |" in out and "$409.80" in out
    assert os.listdir(tmp_path) == []
    assert cli.main(["cost", "prod-aws", "--config", str(stack_file), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["total"]["maxHourlyUsd"] == pytest.approx(409.801, abs=1e-3)
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
    assert "mandatory" in line and "$409.80/h, over the budget of $300.00/h" in line
    assert "largest pools: h100-spot $176.13/h, h100-inference $110.08/h, a100-train $109.79/h" in line
    # just within budget: nothing (409.80 <= 410, notebooks' 13.80 <= 14)
    assert (
        cost_policies.budget_problems(report("prod-aws", budget={"maxHourlyUsd": 410, "tenants": {"notebooks": 14}}))
        == []
    )


def test_tenant_budget_and_unknown_prices_fail_the_budget_policy():
    doc = report("prod-aws", budget={"maxHourlyUsd": 1000, "tenants": {"notebooks": 10}})
    [msg] = cost_policies.budget_problems(doc)
    assert msg.startswith("tenant notebooks: its borrowing ceiling costs $13.80/h, over its budget of $10.00/h")
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
