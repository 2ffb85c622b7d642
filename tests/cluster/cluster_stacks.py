"""The stacks the cluster tests put on a server: every shipped stack, and the coverage stacks, which with the
shipped ones use every option the schema offers at least once (tests/fixtures/coverage/,
tests/test_coverage_stacks.py), so kinds and fields no shipped stack renders (a NodeOverlay, a Bottlerocket
Karpenter pool, a budget, a Capacity Block...) meet the server too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import STACKS as SHIPPED, STACKS_DIR

from components.spec import stackfile

ROOT = Path(__file__).resolve().parents[2]
COVERAGE_DIR = ROOT / "tests" / "fixtures" / "coverage"
COVERAGE = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in COVERAGE_DIR.glob("Pulumi.*.yaml"))
ALL = [*SHIPPED, *COVERAGE]


def stack_file(stack: str) -> Path:
    if stack in COVERAGE:
        return COVERAGE_DIR / f"Pulumi.{stack}.yaml"
    return STACKS_DIR / f"Pulumi.{stack}.yaml"


def stack_file_config(stack: str) -> dict[str, Any]:
    """The stack file's ``config:`` as the CLI reads it."""
    return stackfile.read(stack_file(stack))
