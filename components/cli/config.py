"""Reading the stack's config under ``pulumi up``; the only place ``pulumi.Config`` data is read."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pulumi

from ..plan import placeholders
from ..render import placeholders as deploy_check
from ..spec.model import StackSpec
from .loader import SpecError, load_spec


def pulumi_config() -> dict[str, Any]:
    """Every config key the engine gave this program (``namespace:key`` -> raw value)."""
    from pulumi.runtime import config as runtime_config

    return {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}


def stack_file() -> str:
    return f"stacks/Pulumi.{pulumi.get_stack()}.yaml"


# (config the program will read, the spec validated from it): set by the offline synth around the program it runs
_handed: tuple[dict[str, str], StackSpec] | None = None


@contextmanager
def handed_spec(config: Mapping[str, str], spec: StackSpec) -> Iterator[None]:
    """While the offline synth runs the program on ``config`` (as the engine hands it: strings), the spec it already
    validated from the same values: ``spec_from_pulumi_config`` returns it when the program reads exactly that
    config, so the spec is validated and its plan decided once per synth, not once by the synth and again by the
    program (a 1,000-tenant plan is ~1 s). The caller hands only a spec of equal decoded values."""
    global _handed
    before, _handed = _handed, (dict(config), spec)
    try:
        yield
    finally:
        _handed = before


def spec_from_pulumi_config() -> StackSpec:
    try:
        config = pulumi_config()
        spec = _handed[1] if _handed is not None and _handed[0] == config else load_spec(config)
    except SpecError as err:
        # RunError ends the program with this message and no stack trace.
        raise pulumi.RunError("invalid stack config:\n" + "\n".join(err.lines(stack_file()))) from None
    # a preview warns, an update stops; offline nothing is deployed (the synth's summary lists them instead)
    deploy_check.check(placeholders.lines(spec, stack_file()))
    if spec.cloud == "aws" and spec.cluster.create is not None:
        from ..plan.aws import cluster_access
        from ..render.aws import deployer  # the deployer must administer the cluster it creates

        deployer.check(cluster_access.deployer_check(spec), stack_file())
    return spec
