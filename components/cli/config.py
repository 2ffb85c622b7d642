"""Reading the stack's config under ``pulumi up``; the only place ``pulumi.Config`` data is read."""

from __future__ import annotations

from typing import Any

import pulumi

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


def under_mock_engine() -> bool:
    """The offline synth (``pulumi.runtime.set_mocks``) is running the program."""
    from pulumi.runtime.mocks import MockMonitor
    from pulumi.runtime.settings import get_monitor

    return isinstance(get_monitor(), MockMonitor)


def refuse_placeholders(spec: StackSpec, source: str, *, dry_run: bool) -> None:
    """Documentation values left in the cluster section (``plan/placeholders.py``): a preview warns, an update
    stops before anything is registered."""
    from ..plan import placeholders

    lines = [p.line(source) for p in placeholders.problems(spec)]
    if not lines:
        return
    if dry_run:
        for line in lines:
            pulumi.log.warn(f"{line}; pulumi up refuses it")
        return
    raise pulumi.RunError("stack config still holds placeholders:\n" + "\n".join(lines))
