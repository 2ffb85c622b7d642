"""Reading the stack's config under ``pulumi up``; the only place ``pulumi.Config`` data is read."""

from __future__ import annotations

from typing import Any

import pulumi

from ..plan import placeholders
from ..render.placeholders import refuse, under_mock_engine
from ..spec.model import StackSpec
from .loader import SpecError, load_spec


def pulumi_config() -> dict[str, Any]:
    """Every config key the engine gave this program (``namespace:key`` -> raw value)."""
    from pulumi.runtime import config as runtime_config

    return {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}


def stack_file() -> str:
    return f"stacks/Pulumi.{pulumi.get_stack()}.yaml"


def spec_from_pulumi_config() -> StackSpec:
    try:
        spec = load_spec(pulumi_config())
    except SpecError as err:
        # RunError ends the program with this message and no stack trace.
        raise pulumi.RunError("invalid stack config:\n" + "\n".join(err.lines(stack_file()))) from None
    if not under_mock_engine():  # offline nothing is deployed; the synth's summary lists them instead
        refuse_placeholders(spec, stack_file(), dry_run=pulumi.runtime.is_dry_run())
    return spec


def refuse_placeholders(spec: StackSpec, source: str, *, dry_run: bool) -> None:
    """Documentation values left in the stack file (``plan/placeholders.py``), as ``render/placeholders.refuse``
    takes them: a preview warns, an update stops."""
    refuse([p.line(source) for p in placeholders.problems(spec)], dry_run=dry_run)
