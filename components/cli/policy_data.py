"""The facts the policy pack needs from ``components``, generated into ``policies/pack_data.json``.

The pack must be self-contained: ``pulumi preview --policy-pack policies`` runs ``policies/__main__.py`` with
only ``policies/`` on ``sys.path``, and ``pulumi policy publish`` uploads only that folder (pulumi#4644), so
the pack cannot import ``components``. What it needs from here (which EC2 / GCE types carry NVIDIA GPUs, the
pinned charts, their namespaces and the allowed chart sources) is written into a JSON file inside the pack.

    python -m components.cli.policy_data           # regenerate policies/pack_data.json (make policy-data)
    python -m components.cli.policy_data --check   # exit 1 if the file differs from the source

``tests/test_policy_pack.py`` fails when the committed file drifts from ``catalog`` / ``versions``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..data import catalog, versions

ROOT = Path(__file__).resolve().parents[2]  # the project directory
PATH = ROOT / "policies" / "pack_data.json"
COMMAND = "make policy-data"


def data() -> dict[str, Any]:
    return {
        "$comment": f"Generated from components/data/catalog.py and components/data/versions.py by `{COMMAND}` "
        "(python -m components.cli.policy_data). Do not edit: the policy pack reads it because a published pack "
        "contains only policies/.",
        "awsGpuInstanceTypes": sorted(catalog.AWS_INSTANCE_TYPES),
        "awsGpuInstanceFamilies": sorted({t.family for t in catalog.AWS_INSTANCE_TYPES.values()}),
        "gcpGpuMachineTypes": sorted(n for n, t in catalog.GCP_MACHINE_TYPES.items() if t.gpu_model is not None),
        "charts": {
            key: {
                "chart": c.chart,
                "version": c.version,
                "repository": c.repository,
                "source": c.source,
                "namespace": c.namespace,
                "release": c.release,
            }
            for key, c in sorted(versions.CHARTS.items())
        },
        "allowedSources": list(versions.ALLOWED_SOURCES),
        "allowedDigests": versions.bundled_digests(),
    }


def render() -> str:
    return json.dumps(data(), indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Regenerate policies/pack_data.json from components.")
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is not up to date; write nothing")
    args = parser.parse_args(argv)
    text = render()
    current = PATH.read_text(encoding="utf-8") if PATH.exists() else None
    if args.check:
        if current != text:
            print(f"{PATH.relative_to(ROOT)} is out of date: run `{COMMAND}`", file=sys.stderr)
            return 1
        return 0
    if current != text:
        PATH.write_text(text, encoding="utf-8")
        print(f"wrote {PATH.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
