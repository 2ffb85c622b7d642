"""Plan snapshots: each shipped stack's plan (``components/plan/plan.py``) committed as
``tests/snapshots/plans/<stack>.json``, so a change to what the platform decides shows up as a diff in review.

    make plan-snapshots                      # = python -m components.cli.plans: write them
    python -m components.cli.plans --check   # exit 1 if one is out of date
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..plan.plan import Plan, build
from .urns import ROOT, shipped_stacks

REGENERATE = "make plan-snapshots  (or: .venv/bin/python -m components.cli.plans)"


def snapshot_dir() -> Path:
    return ROOT / "tests" / "snapshots" / "plans"


def shipped_plan(stack: str) -> Plan:
    """The plan of ``stacks/Pulumi.<stack>.yaml`` as committed."""
    from ..spec import stackfile
    from .loader import load_spec

    return build(load_spec(stackfile.read(ROOT / "stacks" / f"Pulumi.{stack}.yaml")), stack)


def main(argv: list[str] | None = None) -> int:
    """Write (or with --check compare) tests/snapshots/plans/<stack>.json for every shipped stack."""
    check = "--check" in (sys.argv[1:] if argv is None else argv)
    out = snapshot_dir()
    stale = []
    for stack in shipped_stacks():
        path = out / f"{stack}.json"
        text = shipped_plan(stack).to_json()
        if (path.read_text(encoding="utf-8") if path.exists() else None) != text:
            stale.append(stack)
            if not check:
                out.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
    if check and stale:
        print(f"plan snapshots out of date: {', '.join(stale)}; run {REGENERATE}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
