"""Prices per region (issue 41.5): a figure outside us-east-1 / us-central1 is the source's own for that region,
and a region without a source is unknown with its reason, never another region's figure.

Expected figures are read from the sources by hand, never computed with the code under test; each comment says
where:

- AWS: aws/karpenter-provider-aws at 1d927085dd81a9df9301e613f371dac5b4d16bfe, ``pkg/providers/pricing/``
  ``zz_generated.pricing_aws.go`` ("generated at 2026-07-20T13:44:30Z", one region: us-east-1) and
  ``zz_generated.pricing_aws_us_gov.go`` ("generated at 2026-07-20T13:44:38Z"; us-gov-east-1 from line 25,
  us-gov-west-1 from line 282). No source of the other commercial AWS regions could be read
  (scripts/extract_prices.py, docs/concepts/cost.md): they are unknown, with that reason.
- GCP: Cyclenerd/google-cloud-pricing-cost-calculator at fd66b26ff84fee5cdd94f341ea89206e76c06b99, ``pricing.yml``
  (timestamp 1785391997 = 2026-07-30T06:13:17Z), ``compute.instance.<type>.cost.<region>.hour`` / ``hour_spot``.
"""

from __future__ import annotations

import json

import pytest
from conftest import stack_config

from components.cli.loader import load_spec
from components.data import catalog, prices
from components.plan import cost
from policies import cost_policies

KARPENTER = "aws/karpenter-provider-aws@1d927085dd81 pkg/providers/pricing/zz_generated.pricing_aws.go"
KARPENTER_US_GOV = "aws/karpenter-provider-aws@1d927085dd81 pkg/providers/pricing/zz_generated.pricing_aws_us_gov.go"
CYCLENERD = "Cyclenerd/google-cloud-pricing-cost-calculator@fd66b26ff84f pricing.yml"


@pytest.mark.parametrize(
    ("name", "region", "usd", "source"),
    [
        ("g6e.xlarge", "us-east-1", 1.861, KARPENTER),  # zz_generated.pricing_aws.go line 200: 1.861000
        ("p5en.48xlarge", "us-east-1", 63.296, KARPENTER),  # line 425: 63.296000
        ("g4dn.xlarge", "us-gov-east-1", 0.663, KARPENTER_US_GOV),  # ..._us_gov.go line 78: 0.663000
        ("g6.12xlarge", "us-gov-east-1", 5.80003, KARPENTER_US_GOV),  # line 80: 5.800030
        ("p6-b200.48xlarge", "us-gov-east-1", 136.71936, KARPENTER_US_GOV),  # line 178: 136.719360
        ("p4d.24xlarge", "us-gov-west-1", 26.3511, KARPENTER_US_GOV),  # line 513: 26.351100
        ("p5.48xlarge", "us-gov-west-1", 66.048, KARPENTER_US_GOV),  # line 515: 66.048000 (us-east-1: 55.04)
        ("p5en.48xlarge", "us-gov-west-1", 75.9552, KARPENTER_US_GOV),  # line 517: 75.955200 (us-east-1: 63.296)
    ],
)
def test_aws_figures_are_the_sources_own_for_each_region(name, region, usd, source):
    expected = prices.Price(usd, source=f"{source} ({region})", as_of="2026-07-20")
    assert prices.list_price("aws", name, region) == expected


@pytest.mark.parametrize(
    ("name", "region", "on_demand", "spot"),
    [
        # pricing.yml compute.instance.a3-highgpu-8g.cost.europe-west4:
        # hour 112.540479175233, hour_spot 44.1187793972603
        ("a3-highgpu-8g", "europe-west4", 112.540479175233, 44.1187793972603),
        # ... a3-highgpu-8g.cost.us-east4: hour 88.5557561512329 (us-central1: 88.4899999025753),
        # hour_spot 36.3208366027397
        ("a3-highgpu-8g", "us-east4", 88.5557561512329, 36.3208366027397),
        # ... g2-standard-8.cost.asia-northeast1: hour 1.096224308, hour_spot 0.657692
        ("g2-standard-8", "asia-northeast1", 1.096224308, 0.657692),
        # ... a3-megagpu-8g.cost.us-east4: hour 92.9375881512329, hour_spot 23.2752366027397
        ("a3-megagpu-8g", "us-east4", 92.9375881512329, 23.2752366027397),
    ],
)
def test_gcp_figures_are_the_sources_own_for_each_region(name, region, on_demand, spot):
    od = prices.list_price("gcp", name, prices.region_of(f"{region}-a"))  # a zone prices as its region
    assert od == prices.Price(on_demand, source=f"{CYCLENERD} ({region})", as_of="2026-07-30")
    assert prices.list_price("gcp", name, region, capacity="spot").usd == spot


def test_gcp_types_cover_every_region_the_source_prices_them_in():
    """Every region Cyclenerd lists a type in with an on-demand price is in the catalog; pricing.yml at fd66b26ff84f
    lists a3-megagpu-8g in exactly these nine, and a3-highgpu-8g / g2-standard-8 in 40 regions each."""
    data = prices.catalog()
    assert sorted(data["gcp"]["a3-megagpu-8g"]) == [
        "asia-northeast1",
        "asia-southeast1",
        "australia-southeast1",
        "europe-west1",
        "europe-west3",
        "europe-west4",
        "us-east4",
        "us-east5",
        "us-west4",
    ]
    assert len(data["gcp"]["a3-highgpu-8g"]) == len(data["gcp"]["g2-standard-8"]) == 40
    # N1 in europe-north2 and northamerica-south1: the source has hour_spot but no hour; unknown there, and said so
    assert set(data["unknownRegions"]["gcp"]["n1-standard-8"]) == {"europe-north2", "northamerica-south1"}


def test_every_aws_region_a_source_holds_prices_each_catalog_type_or_says_why():
    """The AWS tables hold us-east-1 (the one commercial region) and the two GovCloud regions. In each, every catalog
    type has its figure from that region's table, or is unknown with a reason naming the type (never a zero)."""
    regions = prices.catalog()["unknownRegions"]["awsRegions"]
    assert regions == ["us-east-1", "us-gov-east-1", "us-gov-west-1"]
    for region in regions:
        for name in catalog.AWS_INSTANCE_TYPES:
            p = prices.list_price("aws", name, region)
            if p.known:
                assert p.usd > 0 and p.source.endswith(f" ({region})") and p.as_of == "2026-07-20", (name, region)
            else:
                assert p.reason and name in p.reason, (name, region)
    # us-east-1: every catalog type is in the table but p5e.48xlarge, which no Karpenter table has
    unpriced = [n for n in catalog.AWS_INSTANCE_TYPES if not prices.list_price("aws", n, "us-east-1").known]
    assert unpriced == ["p5e.48xlarge"]


@pytest.mark.parametrize("region", ["us-west-2", "eu-west-1", "ap-northeast-1", "sa-east-1", "eu-central-2"])
def test_an_aws_region_without_a_source_is_unknown_with_the_reason_not_us_east_1s_figure(region):
    for name in ("p5.48xlarge", "g6.xlarge"):
        p = prices.list_price("aws", name, region)
        assert p.usd is None and p.reason.startswith(f"{name} in {region}: no AWS region but us-east-1")
        assert p.reason.endswith("give the prices in gpu-platform:pricing.overrides")


def _aws_report(stack: str, region: str, **overrides) -> dict:
    """A shipped AWS stack moved from us-east-1 to ``region`` (its zones and ARNs along with it)."""
    cfg = json.loads(json.dumps(stack_config(stack)).replace("us-east-1", region))
    cfg.update({f"gpu-platform:{k}": v for k, v in overrides.items()})
    return cost.report(load_spec(cfg), stack)


def test_a_stack_in_us_west_2_is_unknown_with_why_until_its_prices_are_given():
    """No list price source holds us-west-2: every pool is unknown (with the reason), the budget cannot pass on it;
    with the stack's own prices (pricing.overrides) the cost is known."""
    doc = _aws_report("prod-aws", "us-west-2", budget={"maxHourlyUsd": 1000})
    assert doc["region"] == "us-west-2"
    assert doc["total"]["maxHourlyUsd"] is None and len(doc["total"]["unknownPools"]) == len(doc["pools"]) == 5
    h100 = next(p for p in doc["pools"] if p["name"] == "h100-inference")
    assert h100["onDemandPerNodeHour"]["unknown"].startswith("p5.48xlarge in us-west-2: no AWS region but us-east-1")
    [msg] = cost_policies.budget_problems(doc)
    assert "cannot be checked: no price for pool(s)" in msg
    overrides = {"p4de.24xlarge": {"onDemand": 30}, "p5.48xlarge": {"onDemand": 60}, "g6.12xlarge": {"onDemand": 5}}
    doc = _aws_report("prod-aws", "us-west-2", pricing={"overrides": overrides})
    # a100-train 4 x 30 + h100-inference 2 x 60 + h100-spot (2 spot at 60 less 40 % + 2 on-demand at 60)
    # + l4-notebooks 3 x 5 + a100-gang 2 x 30
    assert doc["total"]["maxHourlyUsd"] == pytest.approx(4 * 30 + 2 * 60 + (2 * 36 + 2 * 60) + 3 * 5 + 2 * 30)


def test_a_govcloud_stack_is_priced_from_the_govcloud_table():
    """dev-aws in us-gov-west-1: l4-shared (g6.xlarge 1.0144, g6.2xlarge 1.2322 in the us-gov-west-1 block of
    zz_generated.pricing_aws_us_gov.go, line 369 and 368) at the dearest, 4 spot nodes at 40 % off; a10g-spot's g5
    types are not in that table, so that pool is unknown with the reason."""
    doc = _aws_report("dev-aws", "us-gov-west-1")
    l4 = next(p for p in doc["pools"] if p["name"] == "l4-shared")
    assert l4["onDemandPerNodeHour"] == {
        "usd": 1.2322,
        "source": f"{KARPENTER_US_GOV} (us-gov-west-1)",
        "asOf": "2026-07-20",
    }
    assert l4["hourlyUsd"]["max"] == pytest.approx(4 * 1.2322 * 0.6, abs=1e-4)
    a10g = next(p for p in doc["pools"] if p["name"] == "a10g-spot")
    assert a10g["hourlyUsd"]["max"] is None
    assert "g5.4xlarge: the source has no price in us-gov-west-1" in a10g["onDemandPerNodeHour"]["unknown"]
