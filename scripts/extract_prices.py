"""Extract the list prices gpu-platform uses (``components/data/prices.json``) from their machine-readable sources.

Every figure in the output names its source and the date the source was generated ("as of"); nothing is
estimated, interpolated or derived here. Instance / machine types come from ``components/data/catalog.py``; a
type or region the source lacks is recorded under ``unknown`` with the reason (never a zero).

Sources (both Apache-2.0; see ../shared/upstream/prices/README.md for why these two):

- AWS: ``aws/karpenter-provider-aws`` ``pkg/providers/pricing/zz_generated.pricing_aws.go`` (Karpenter's
  fallback On-Demand table, generated from the AWS Price List API: Linux, shared tenancy, no pre-installed
  software). It holds us-east-1 only.
- GCP: ``Cyclenerd/google-cloud-pricing-cost-calculator`` ``pricing.yml`` (generated weekly from the Cloud
  Billing Catalog API): ``compute.instance.<type>.cost.<region>.hour`` (on-demand) and ``hour_spot`` (Spot).

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

    generated, aws = aws_prices(_show(args.karpenter_git, KARPENTER["commit"], KARPENTER["path"]))
    gcp_doc = yaml.safe_load(_show(args.cyclenerd_git, CYCLENERD["commit"], CYCLENERD["path"]))
    gcp_generated = datetime.fromtimestamp(int(gcp_doc["about"]["timestamp"]), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    sources = {
        "karpenter": {**KARPENTER, "generatedAt": generated},
        "cyclenerd": {**CYCLENERD, "generatedAt": gcp_generated},
    }
    aws_as_of, gcp_as_of = generated[:10], gcp_generated[:10]

    out_aws: dict[str, dict[str, dict]] = {}
    unknown: dict[str, dict[str, str]] = {"aws": {}, "gcp": {}}
    for name in sorted(catalog.AWS_INSTANCE_TYPES):
        regions = {
            region: {"onDemand": table[name], "source": "karpenter", "asOf": aws_as_of}
            for region, table in sorted(aws.items())
            if name in table
        }
        if regions:
            out_aws[name] = regions
        else:
            unknown["aws"][name] = f"absent from every region of {KARPENTER['repository']} {KARPENTER['path']}"

    instances = gcp_doc["compute"]["instance"]
    out_gcp: dict[str, dict[str, dict]] = {}
    for name in sorted(catalog.GCP_MACHINE_TYPES):
        mt = catalog.GCP_MACHINE_TYPES[name]
        cost = (instances.get(name) or {}).get("cost") or {}
        regions = {}
        for region, c in sorted(cost.items()):
            if not isinstance(c, dict) or not c.get("hour"):
                continue  # a region the type is listed in without an on-demand price: unknown there
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
    }
    json.dump(doc, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
