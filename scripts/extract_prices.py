"""Extract the list prices gpu-platform uses (``components/data/prices.json``) from their machine-readable sources.

Every figure in the output names its source and the date the source was generated ("as of"); nothing is
estimated, interpolated or derived here. Instance / machine types come from ``components/data/catalog.py``; a
type or region the source lacks is recorded under ``unknown`` / ``unknownRegions`` with the reason (never a zero).

Sources (all Apache-2.0; ../shared/upstream/prices/README.md records how the AWS and GCP tables were chosen):

- AWS: ``aws/karpenter-provider-aws`` Karpenter's fallback On-Demand tables, generated from the AWS Price List API
  (Linux, shared tenancy, no pre-installed software), one file per partition, both read at the same commit:
  ``pkg/providers/pricing/zz_generated.pricing_aws.go`` (partition aws: us-east-1 only) and
  ``pkg/providers/pricing/zz_generated.pricing_aws_us_gov.go`` (partition aws-us-gov: us-gov-east-1,
  us-gov-west-1). The aws-cn table is not read: Karpenter stopped generating it (its last refresh is 2024-11-06).
- GCP: ``Cyclenerd/google-cloud-pricing-cost-calculator`` ``pricing.yml`` (generated weekly from the Cloud
  Billing Catalog API): ``compute.instance.<type>.cost.<region>.hour`` (on-demand) and ``hour_spot`` (Spot).
  Every region the file lists a type in with an on-demand price is kept; a region it lists with a Spot price
  only is recorded under ``unknownRegions``.

No other AWS commercial region has a source here: none of the maintained, dated, machine-readable sources of
per-region EC2 list prices could be read with the tools the project has (AWS's own Price List files need the
network; vantage-sh/ec2instances.info commits no price data; skypilot-org/skypilot-catalog carries no date
and its repository is too large to bring here). Every such region is recorded as unknown with that reason
(``unknownRegions.aws``); docs/concepts/cost.md says what a stack there can do (``pricing.overrides``).

Usage (the git directories are what ``fetch github:<owner>/<name>`` leaves, or any clone)::

    python scripts/extract_prices.py --karpenter-git DIR --cyclenerd-git DIR > components/data/prices.json
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from components.data import catalog

KARPENTER = {
    "repository": "aws/karpenter-provider-aws",
    "commit": "1d927085dd81a9df9301e613f371dac5b4d16bfe",
    "path": "pkg/providers/pricing/zz_generated.pricing_aws.go",
    "licence": "Apache-2.0",
    "priceType": "On-Demand, Linux, shared tenancy, no pre-installed software (AWS Price List API filters in "
    "karpenter pkg/providers/pricing/pricing.go)",
}
KARPENTER_US_GOV = {
    **KARPENTER,
    "path": "pkg/providers/pricing/zz_generated.pricing_aws_us_gov.go",
    "priceType": KARPENTER["priceType"] + "; the AWS GovCloud (US) partition",
}
# The AWS tables read, by source key (a figure's "source"); each holds the regions of its own partition.
AWS_SOURCES = {"karpenter": KARPENTER, "karpenter-us-gov": KARPENTER_US_GOV}
AWS_OTHER_REGIONS = (
    "no AWS region but us-east-1 and the GovCloud regions has a list-price source here (Karpenter's generated "
    "tables hold those only; AWS's Price List files need the network, vantage-sh/ec2instances.info commits no price "
    "data, skypilot-org/skypilot-catalog carries no date: docs/concepts/cost.md); give the prices in "
    "gpu-platform:pricing.overrides"
)
CYCLENERD = {
    "repository": "Cyclenerd/google-cloud-pricing-cost-calculator",
    "commit": "fd66b26ff84fee5cdd94f341ea89206e76c06b99",
    "path": "pricing.yml",
    "licence": "Apache-2.0",
    "priceType": "compute.instance.<type>.cost.<region>.hour (on-demand) and .hour_spot (Spot VM), from the Cloud "
    "Billing Catalog API; the whole VM: GPUs, vCPUs, memory and bundled local SSD (build/gcp.yml)",
}


def _show(git_dir: str, commit: str, path: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", git_dir, "show", f"{commit}:{path}"], check=True, capture_output=True, text=True
    ).stdout


def aws_prices(text: str) -> tuple[str, dict[str, dict[str, float]]]:
    """(generated-at timestamp, region -> instance type -> USD/h) from Karpenter's generated Go table."""
    generated = re.search(r"// generated at (\S+) for", text)
    if not generated:
        raise SystemExit("karpenter pricing file: no 'generated at' header")
    out: dict[str, dict[str, float]] = {}
    region = None
    for line in text.splitlines():
        m = re.match(r'^\t"([a-z]{2}(?:-[a-z]+)+-[0-9])": \{', line)
        if m:
            region = m.group(1)
            out[region] = {}
            continue
        if region:
            for name, price in re.findall(r'"([a-z0-9.-]+)": ([0-9.]+)', line):
                out[region][name] = float(price)
    return generated.group(1), out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--karpenter-git", required=True)
    p.add_argument("--cyclenerd-git", required=True)
    args = p.parse_args()

    import yaml

    sources: dict[str, dict] = {}
    aws: dict[str, tuple[str, str, dict[str, float]]] = {}  # region -> (source key, as-of date, type -> USD/h)
    for key, src in AWS_SOURCES.items():
        generated, tables = aws_prices(_show(args.karpenter_git, src["commit"], src["path"]))
        sources[key] = {**src, "generatedAt": generated}
        for region, table in tables.items():
            if region in aws:
                raise SystemExit(f"{region} is in two AWS tables ({aws[region][0]}, {key})")
            aws[region] = (key, generated[:10], table)
    gcp_doc = yaml.safe_load(_show(args.cyclenerd_git, CYCLENERD["commit"], CYCLENERD["path"]))
    gcp_generated = datetime.fromtimestamp(int(gcp_doc["about"]["timestamp"]), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    sources["cyclenerd"] = {**CYCLENERD, "generatedAt": gcp_generated}
    gcp_as_of = gcp_generated[:10]

    out_aws: dict[str, dict[str, dict]] = {}
    unknown: dict[str, dict[str, str]] = {"aws": {}, "gcp": {}}
    for name in sorted(catalog.AWS_INSTANCE_TYPES):
        regions = {
            region: {"onDemand": table[name], "source": key, "asOf": as_of}
            for region, (key, as_of, table) in sorted(aws.items())
            if name in table
        }
        if regions:
            out_aws[name] = regions
        else:
            files = " and ".join(src["path"] for src in AWS_SOURCES.values())
            unknown["aws"][name] = f"absent from every region of {KARPENTER['repository']} {files}"

    instances = gcp_doc["compute"]["instance"]
    out_gcp: dict[str, dict[str, dict]] = {}
    unknown_gcp_regions: dict[str, dict[str, str]] = {}
    for name in sorted(catalog.GCP_MACHINE_TYPES):
        mt = catalog.GCP_MACHINE_TYPES[name]
        cost = (instances.get(name) or {}).get("cost") or {}
        regions = {}
        for region, c in sorted(cost.items()):
            if not isinstance(c, dict) or not c.get("hour"):
                # listed in the region without an on-demand price (Spot only): unknown there, and said so
                unknown_gcp_regions.setdefault(name, {})[region] = (
                    f"{CYCLENERD['repository']} {CYCLENERD['path']} lists it in {region} without an on-demand price"
                )
                continue
            figure = {"onDemand": c["hour"], "source": "cyclenerd", "asOf": gcp_as_of}
            if c.get("hour_spot"):
                figure["spot"] = c["hour_spot"]
            if mt.gpu_model is None:
                # N1: the price is the VM's alone; GPUs are attached (and billed) separately
                figure["gpusIncluded"] = False
            regions[region] = figure
        if regions:
            out_gcp[name] = regions
        else:
            unknown["gcp"][name] = f"absent from {CYCLENERD['repository']} {CYCLENERD['path']}"
    unknown["gcp"]["nvidia-tesla-t4"] = (
        "the source has no stand-alone accelerator prices; N1 machine-type prices exclude attached T4s"
    )
    doc = {
        "$comment": "Generated by scripts/extract_prices.py from the sources below; do not edit by hand. "
        "Figures are list prices copied with all their digits; each names its source and as-of date.",
        "currency": "USD",
        "unit": "per instance-hour (GCP: the whole VM incl. its GPUs, except N1 where gpusIncluded is false)",
        "sources": sources,
        "aws": out_aws,
        "gcp": out_gcp,
        "unknown": unknown,
        # Regions without a figure although the type has some elsewhere: AWS, every region no table above holds
        # (awsRegions lists those it does hold); GCP, per type, the regions the source lists without one.
        "unknownRegions": {
            "aws": AWS_OTHER_REGIONS,
            "awsRegions": sorted(aws),
            "gcp": unknown_gcp_regions,
        },
    }
    json.dump(doc, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
