"""``components.data.prices``: each answer of a price lookup, known or unknown, with its exact source or reason.

Figures are those of the recorded sources (aws/karpenter-provider-aws zz_generated.pricing_aws.go at
1d927085dd81, p5.48xlarge us-east-1 on-demand 55.04; Cyclenerd/google-cloud-pricing-cost-calculator
pricing.yml at fd66b26ff84f, g2-standard-8 us-central1 0.853624271 on-demand / 0.479872 Spot).
"""

from __future__ import annotations

import pytest

from components.data import prices

KARPENTER = "aws/karpenter-provider-aws@1d927085dd81 pkg/providers/pricing/zz_generated.pricing_aws.go"
KARPENTER_US_GOV = "aws/karpenter-provider-aws@1d927085dd81 pkg/providers/pricing/zz_generated.pricing_aws_us_gov.go"
CYCLENERD = "Cyclenerd/google-cloud-pricing-cost-calculator@fd66b26ff84f pricing.yml"


def test_source_label_names_repository_short_commit_and_path():
    """A price's source reads 'repository@12-character commit path'."""
    assert prices.source_label("karpenter") == KARPENTER
    assert prices.source_label("karpenter-us-gov") == KARPENTER_US_GOV
    assert prices.source_label("cyclenerd") == CYCLENERD


@pytest.mark.parametrize(
    ("location", "region"),
    [
        ("us-central1-a", "us-central1"),
        ("europe-west4-b", "europe-west4"),
        ("us-central1", "us-central1"),  # a region passes through
        ("us-east-1", "us-east-1"),  # an AWS region passes through
        ("us-east-1a", "us-east-1a"),  # not a GCP zone: unchanged
        ("us-central1-ab", "us-central1-ab"),  # a zone is one letter
        ("northamerica-northeast1-c", "northamerica-northeast1"),
        ("", None),
        (None, None),
    ],
)
def test_region_of(location, region):
    """A GCP zone becomes its region; anything else passes unchanged; nothing stays nothing."""
    assert prices.region_of(location) == region


def test_known_prices_carry_source_region_and_date():
    """A found figure: USD per node-hour, the source with the region, the as-of date, not an estimate."""
    p = prices.list_price("aws", "p5.48xlarge", "us-east-1")
    assert p == prices.Price(55.04, source=f"{KARPENTER} (us-east-1)", as_of="2026-07-20")
    assert p.known and not p.estimate
    assert p.as_json() == {"usd": 55.04, "source": f"{KARPENTER} (us-east-1)", "asOf": "2026-07-20"}
    g = prices.list_price("gcp", "g2-standard-8", "us-central1")
    assert (g.usd, g.source, g.as_of) == (0.853624271, f"{CYCLENERD} (us-central1)", "2026-07-30")
    s = prices.list_price("gcp", "g2-standard-8", "us-central1", capacity="spot")
    assert (s.usd, s.source) == (0.479872, f"{CYCLENERD} (us-central1)")
    assert prices.list_price("gcp", "g2-standard-8", "us-central1", capacity="on-demand").usd == 0.853624271


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (("existing", "x", None), "no price catalog for cloud 'existing'"),
        (
            ("aws", "p5e.48xlarge", "us-east-1"),
            "p5e.48xlarge: absent from every region of aws/karpenter-provider-aws "
            "pkg/providers/pricing/zz_generated.pricing_aws.go and "
            "pkg/providers/pricing/zz_generated.pricing_aws_us_gov.go",
        ),
        (("aws", "m5.large", "us-east-1"), "m5.large is not in the price catalog"),
        (
            ("aws", "p5.48xlarge", None),
            "p5.48xlarge: no region set (cluster region/location), prices are per region",
        ),
        (
            ("aws", "p5.48xlarge", "eu-west-1"),  # a region no AWS table holds: says why, and what to do
            "p5.48xlarge in eu-west-1: no AWS region but us-east-1 and the GovCloud regions has a list-price source "
            "here (Karpenter's generated tables hold those only; AWS's Price List files need the network, "
            "vantage-sh/ec2instances.info commits no price data, skypilot-org/skypilot-catalog carries no date: "
            "docs/concepts/cost.md); give the prices in gpu-platform:pricing.overrides",
        ),
        (
            ("aws", "g5.xlarge", "us-gov-west-1"),  # a region a table holds, without the type
            "g5.xlarge: the source has no price in us-gov-west-1 (it has us-east-1)",
        ),
        (
            ("gcp", "n1-standard-8", "europe-north2"),  # the source lists a Spot price there, no on-demand one
            "n1-standard-8: Cyclenerd/google-cloud-pricing-cost-calculator pricing.yml lists it in europe-north2 "
            "without an on-demand price",
        ),
        (
            ("gcp", "a3-megagpu-8g", "us-central1"),
            "a3-megagpu-8g: the source has no price in us-central1 (it has asia-northeast1, asia-southeast1, "
            "australia-southeast1, europe-west1, europe-west3, europe-west4 ...)",
        ),
        (
            ("gcp", "n1-standard-8", "us-central1"),
            "n1-standard-8: the source has no stand-alone accelerator prices; N1 machine-type prices exclude "
            "attached T4s",
        ),
        (("aws", "p5.48xlarge", "us-east-1", "spot"), "p5.48xlarge: the source has no spot price in us-east-1"),
    ],
)
def test_unknown_prices_say_why(args, reason):
    """Unknown is never zero and never a guess: usd None, and a reason a person can act on."""
    p = prices.list_price(*args)
    assert (p.usd, p.reason, p.known) == (None, reason, False)
    assert p.as_json() == {"usd": None, "unknown": reason}


def test_regions_listed_in_full_up_to_six(monkeypatch):
    """The regions the source does have are listed, the first six by name, '...' only when there are more."""
    fig = {"asOf": "2026-01-01", "onDemand": 1.0, "source": "cyclenerd"}
    six = {f"r{i}": fig for i in range(6, 0, -1)}
    data = {
        "unknown": {"aws": {}, "gcp": {}},
        "unknownRegions": {"aws": "", "awsRegions": [], "gcp": {}},
        "gcp": {"six": six, "seven": {**six, "r0": fig}},
    }
    monkeypatch.setattr(prices, "catalog", lambda: data)
    assert (
        prices.list_price("gcp", "six", "x").reason
        == "six: the source has no price in x (it has r1, r2, r3, r4, r5, r6)"
    )
    assert prices.list_price("gcp", "seven", "x").reason == (
        "seven: the source has no price in x (it has r0, r1, r2, r3, r4, r5 ...)"
    )


def test_estimate_flag_is_shown_only_when_set():
    """An estimated price says so in its JSON; a list price has no 'estimate' key at all."""
    assert prices.Price(1.5, source="s", as_of="d", estimate=True).as_json() == {
        "usd": 1.5,
        "source": "s",
        "asOf": "d",
        "estimate": True,
    }
    assert "estimate" not in prices.Price(1.5, source="s").as_json()
    assert prices.unknown("why") == prices.Price(None, reason="why")
    assert prices.Price(0.0).known  # a zero figure is known (a free tier), unlike None


def test_default_spot_discount():
    """The AWS spot estimate's default: 40 % off on-demand, below GCP's 43-48 % Spot list discounts."""
    assert prices.DEFAULT_AWS_SPOT_DISCOUNT == 0.40
    assert prices.STACK_CONFIG == "stack config (gpu-platform:pricing.overrides)"
