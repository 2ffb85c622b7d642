"""The price catalog: list prices per AWS instance type and GCP machine type, per region, each with its source
and as-of date (``components/data/prices.json``, written by ``scripts/extract_prices.py``; never edited by hand).

A lookup answers a ``Price``: USD per node-hour with where it came from, or ``usd=None`` with the reason
(unknown is never zero and never guessed). Spot: GCP figures are the catalog's Spot VM prices; AWS Spot
prices move continuously, so an AWS spot figure is an *estimate*: the on-demand price less the stack's
``pricing.spotDiscount`` (default ``DEFAULT_AWS_SPOT_DISCOUNT``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

CATALOG_FILE = Path(__file__).with_name("prices.json")

# Default AWS spot discount: 40 % off on-demand. AWS quotes Spot as "up to 90 %" off, a ceiling, not a typical
# figure, and publishes no dated GPU Spot table. The same catalog's GCP Spot list prices for the same GPU
# generations in us-central1 are 43-48 % off on-demand (a3-highgpu-8g 50.61 / 88.49 = 0.572, a2-highgpu-8g
# 15.42 / 29.39 = 0.525, g2-standard-8 0.480 / 0.854 = 0.562, components/data/prices.json). 40 % stays below all of
# them, so an estimate errs high (a budget check should not pass on optimism). Override per stack with
# gpu-platform:pricing.spotDiscount, or give real spot figures in pricing.overrides.
DEFAULT_AWS_SPOT_DISCOUNT = 0.40
SPOT_DISCOUNT_BASIS = (
    "assumed discount off on-demand (default 40 %: below the 43-48 % GCP Spot list discounts for the same GPU "
    "generations; AWS Spot prices move continuously)"
)
STACK_CONFIG = "stack config (gpu-platform:pricing.overrides)"


@dataclass(frozen=True)
class Price:
    """USD per node-hour, or None with ``reason``."""

    usd: float | None
    source: str = ""
    as_of: str | None = None
    estimate: bool = False
    reason: str | None = None

    @property
    def known(self) -> bool:
        return self.usd is not None

    def as_json(self) -> dict[str, Any]:
        if self.usd is None:
            return {"usd": None, "unknown": self.reason}
        out: dict[str, Any] = {"usd": self.usd, "source": self.source, "asOf": self.as_of}
        if self.estimate:
            out["estimate"] = True
        return out


def unknown(reason: str) -> Price:
    return Price(None, reason=reason)


@cache
def catalog() -> dict[str, Any]:
    return json.loads(CATALOG_FILE.read_text())


def source_label(key: str) -> str:
    s = catalog()["sources"][key]
    return f"{s['repository']}@{s['commit'][:12]} {s['path']}"


def region_of(location: str | None) -> str | None:
    """A GCP zone (us-central1-a) -> its region; regions and AWS regions pass through."""
    if not location:
        return None
    m = re.match(r"^([a-z]+-[a-z]+[0-9])-[a-z]$", location)
    return m.group(1) if m else location


def list_price(cloud: str, type_name: str, region: str | None, capacity: str = "on-demand") -> Price:
    """The catalog's list price of one node of ``type_name`` in ``region`` (on-demand, or GCP Spot)."""
    if cloud not in ("aws", "gcp"):
        return unknown(f"no price catalog for cloud {cloud!r}")
    data = catalog()
    if type_name in data["unknown"][cloud]:
        return unknown(f"{type_name}: {data['unknown'][cloud][type_name]}")
    regions = data[cloud].get(type_name)
    if regions is None:
        return unknown(f"{type_name} is not in the price catalog")
    if region is None:
        return unknown(f"{type_name}: no region set (cluster region/location), prices are per region")
    fig = regions.get(region)
    if fig is None:
        # a region no AWS table holds, or one the GCP source lists the type in without an on-demand price
        gaps = data["unknownRegions"]
        if cloud == "aws" and region not in gaps["awsRegions"]:
            return unknown(f"{type_name} in {region}: {gaps['aws']}")
        gap = gaps["gcp"].get(type_name, {}).get(region) if cloud == "gcp" else None
        if gap is not None:
            return unknown(f"{type_name}: {gap}")
        have = ", ".join(sorted(regions)[:6]) + (" ..." if len(regions) > 6 else "")
        return unknown(f"{type_name}: the source has no price in {region} (it has {have})")
    if fig.get("gpusIncluded") is False:
        return unknown(f"{type_name}: {data['unknown']['gcp'].get('nvidia-tesla-t4', 'attached GPUs not priced')}")
    key = "spot" if capacity == "spot" else "onDemand"
    if key not in fig:
        return unknown(f"{type_name}: the source has no {capacity} price in {region}")
    return Price(fig[key], source=f"{source_label(fig['source'])} ({region})", as_of=fig["asOf"])


# ------------------------------------------------------------------------- fixed costs (issue 30)
# What a cluster the platform creates costs besides its GPU nodes, USD per hour, by hand from the providers'
# pricing pages (they publish no machine-readable table the extractor reads), each with its page and the date read.
FIXED_AS_OF = "2026-11-26"
FIXED: dict[str, tuple[float, str, frozenset[str] | None]] = {
    # (USD per hour, source, the regions the figure holds for; None: every commercial region)
    "eks-control-plane": (
        0.10,
        "https://aws.amazon.com/eks/pricing/ ($0.10 per cluster per hour, standard support)",
        None,
    ),
    "eks-control-plane-extended": (
        0.60,
        "https://aws.amazon.com/eks/pricing/ ($0.60 per cluster per hour, extended support)",
        None,
    ),
    "nat-gateway": (
        0.045,
        "https://aws.amazon.com/vpc/pricing/ (NAT gateway $0.045 per hour in US East (N. Virginia); data processed "
        "$0.045 per GB on top)",
        frozenset({"us-east-1"}),
    ),
    # GKE (cluster.create.gke), read 2026-11-26. The management fee is flat in every region; the free tier's
    # monthly credit ($74.40 per billing account) covers one zonal or Autopilot cluster, never a regional one, and
    # is left out (it is per billing account, not per stack).
    "gke-cluster-management": (
        0.10,
        "https://cloud.google.com/kubernetes-engine/pricing (cluster management fee $0.10 per cluster per hour, "
        "Standard edition, every region; free tier credit not applied)",
        None,
    ),
    # Cloud NAT (Public NAT): per VM instance using the gateway, up to 32 of them; above 32 the gateway costs a
    # flat $0.044 per hour, which a count capped at 32 overstates by $0.0008 (an upper bound). The Cloud Billing
    # Catalog's gateway figure is the same 32 x 0.0014 = 0.0448 in each of its 43 regions (Cyclenerd/google-cloud-
    # pricing-cost-calculator@fd66b26ff84f pricing.yml network.nat.gateway).
    "cloud-nat-vm": (
        0.0014,
        "https://cloud.google.com/nat/pricing (Public NAT $0.0014 per hour per VM instance using the gateway, "
        "capped at 32 VMs; $0.045 per GiB processed on top)",
        None,
    ),
    "cloud-nat-ip": (
        0.005,
        "https://cloud.google.com/nat/pricing ($0.005 per hour per static or ephemeral external IP address used "
        "by a NAT gateway)",
        None,
    ),
}
# On-demand prices of the system node types a created cluster may use, copied with their digits from the same
# Karpenter table as the GPU types (KARPENTER_SOURCE below; us-east-1, generated 2026-07-20T13:44:30Z).
KARPENTER_SOURCE = "karpenter"
SYSTEM_NODE_ON_DEMAND: dict[str, float] = {
    "m5.large": 0.096,
    "m5.xlarge": 0.192,
    "m6i.large": 0.096,
    "m6i.xlarge": 0.192,
    "m6i.2xlarge": 0.384,
}
SYSTEM_NODE_REGION = "us-east-1"


def fixed_price(item: str, region: str | None) -> Price:
    """A created cluster's hourly fixed cost (``FIXED``): its figure, or unknown outside the regions it holds for."""
    usd, source, regions = FIXED[item]
    if regions is not None and region not in regions:
        return unknown(f"{item}: priced for {', '.join(sorted(regions))} only (region {region or 'unset'})")
    return Price(usd, source=source, as_of=FIXED_AS_OF)


def system_node_price(instance_type: str, region: str | None) -> Price:
    """One node of a created EKS cluster's system node group, on-demand (``SYSTEM_NODE_ON_DEMAND``)."""
    return _system_node_price(instance_type, region, SYSTEM_NODE_ON_DEMAND, SYSTEM_NODE_REGION, KARPENTER_SOURCE)


def _system_node_price(name: str, region: str | None, table: dict[str, float], table_region: str, source: str) -> Price:
    """A system node's price from a cloud's table, which holds for ``table_region`` only; unknown elsewhere."""
    if region != table_region:
        return unknown(f"{name}: system node prices are for {table_region} only")
    usd = table.get(name)
    if usd is None:
        return unknown(f"{name} is not in the system node price table (components/data/prices.py)")
    generated = catalog()["sources"][source]["generatedAt"][:10]
    return Price(usd, source=f"{source_label(source)} ({region})", as_of=generated)


# On-demand prices of the machine types a created GKE cluster's system pool may use, copied with their digits from
# the same source and commit as the catalog's GCP figures (CYCLENERD_SOURCE: Cyclenerd/google-cloud-pricing-cost-
# calculator@fd66b26ff84f pricing.yml compute.instance.<type>.cost.us-central1.hour, generated 2026-07-30T06:13:17Z;
# scripts/extract_prices.py keeps GPU types only). us-central1 only, as the AWS table is us-east-1 only.
CYCLENERD_SOURCE = "cyclenerd"
GKE_SYSTEM_NODE_ON_DEMAND: dict[str, float] = {
    "e2-standard-2": 0.06701142,
    "e2-standard-4": 0.13402284,
    "e2-standard-8": 0.26804568,
    "e2-standard-16": 0.53609136,
    "n2-standard-2": 0.097118,
    "n2-standard-4": 0.194236,
    "n2-standard-8": 0.388472,
    "n2-standard-16": 0.776944,
}
GKE_SYSTEM_NODE_REGION = "us-central1"


def gke_system_node_price(machine_type: str, region: str | None) -> Price:
    """One node of a created GKE cluster's system pool, on-demand (``GKE_SYSTEM_NODE_ON_DEMAND``)."""
    return _system_node_price(machine_type, region, GKE_SYSTEM_NODE_ON_DEMAND, GKE_SYSTEM_NODE_REGION, CYCLENERD_SOURCE)
