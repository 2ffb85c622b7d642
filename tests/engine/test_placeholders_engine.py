"""The shipped starter stacks' placeholders under the real engine: `pulumi up` stops before anything is registered
(components/plan/placeholders.py, components/cli/config.py). The mock engine cannot show this: the offline synth
only warns, and the refusal rests on the engine's dry-run flag, which only a real update clears."""

from __future__ import annotations

import pytest
import yaml
from engine import ROOT, Engine, state_urns

PLACEHOLDER_KEYS = {
    "starter-aws": (
        "gpu-platform:cluster.create.eks.adminRoleArns[0]",
        "gpu-platform:cluster.create.eks.publicAccessCidrs[0]",
    ),
    "starter-gcp": ("gcp:project", "gpu-platform:cluster.create.gke.authorizedNetworks[0].cidr"),
}


@pytest.fixture(scope="module")
def engine():
    eng = Engine()
    try:
        yield eng
    finally:
        eng.close()


@pytest.mark.parametrize("starter", sorted(PLACEHOLDER_KEYS))
def test_up_of_the_unedited_starter_stack_registers_nothing(engine, starter):
    from pulumi.automation import errors

    config = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{starter}.yaml").read_text())["config"]
    stack = engine.stack(starter, config)
    events: list[str] = []

    def seen(event) -> None:
        pre = getattr(event, "resource_pre_event", None)
        if pre is not None:
            events.append(pre.metadata.type)

    with pytest.raises(errors.CommandError) as err:
        stack.up(color="never", on_event=seen)
    text = str(err.value)
    assert "stack config still holds placeholders:" in text
    for k in PLACEHOLDER_KEYS[starter]:
        assert f"stacks/Pulumi.{starter}.yaml: {k}: " in text, k
    # nothing was about to be created, and the state holds no resource but the stack itself
    assert [t for t in events if t != "pulumi:pulumi:Stack"] == []
    assert state_urns(stack) == set()
