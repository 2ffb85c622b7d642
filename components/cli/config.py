"""Reading the stack's config under ``pulumi up``; the only place ``pulumi.Config`` data is read."""

from __future__ import annotations

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


def spec_from_pulumi_config() -> StackSpec:
    try:
        spec = load_spec(pulumi_config())
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
