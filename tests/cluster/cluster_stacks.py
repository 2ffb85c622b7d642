"""The stacks the cluster tests put on a server: every shipped stack, and the coverage stack, which uses every
option the schema offers at least once (tests/fixtures/coverage-stack.yaml), so kinds and fields no shipped
stack renders (a NodeOverlay, a Bottlerocket Karpenter pool, a budget, a Capacity Block...) meet the server too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from components import stackfile

ROOT = Path(__file__).resolve().parents[2]
COVERAGE_STACK = "coverage"
COVERAGE_FILE = ROOT / "tests" / "fixtures" / "coverage-stack.yaml"
SHIPPED = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))


def stack_file(stack: str) -> Path:
    return COVERAGE_FILE if stack == COVERAGE_STACK else ROOT / "stacks" / f"Pulumi.{stack}.yaml"


def stack_file_config(stack: str) -> dict[str, Any]:
    """The stack file's ``config:`` as the CLI reads it."""
    return stackfile.read(stack_file(stack))
