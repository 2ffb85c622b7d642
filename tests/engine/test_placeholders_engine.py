"""The shipped starter stack's placeholders under the real engine: `pulumi up` stops before anything is registered
(components/plan/placeholders.py, components/cli/config.py). The mock engine cannot show this: the offline synth
only warns, and the refusal rests on the engine's dry-run flag, which only a real update clears."""

from __future__ import annotations

import pytest
import yaml
from engine import ROOT, Engine, state_urns

STACK = "starter-aws"
PLACEHOLDER_KEYS = (
    "gpu-platform:cluster.create.eks.adminRoleArns[0]",
    "gpu-platform:cluster.create.eks.publicAccessCidrs[0]",
)


@pytest.fixture(scope="module")
def engine():
    eng = Engine()
    try:
        yield eng
    finally:
        eng.close()


def test_up_of_the_unedited_starter_stack_registers_nothing(engine):
    from pulumi.automation import errors

    config = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{STACK}.yaml").read_text())["config"]
    stack = engine.stack(STACK, config)
    events: list[str] = []

    def seen(event) -> None:
        pre = getattr(event, "resource_pre_event", None)
        if pre is not None:
            events.append(pre.metadata.type)

    with pytest.raises(errors.CommandError) as err:
        stack.up(color="never", on_event=seen)
    text = str(err.value)
    assert "stack config still holds placeholders:" in text
    for k in PLACEHOLDER_KEYS:
        assert f"stacks/Pulumi.{STACK}.yaml: {k}: " in text, k
    # nothing was about to be created, and the state holds no resource but the stack itself
    assert [t for t in events if t != "pulumi:pulumi:Stack"] == []
    assert state_urns(stack) == set()
