"""Where a deployment meets the documentation values ``plan/placeholders.py`` finds in a spec: a preview warns, an
update stops before anything is registered, the offline synth (the mock engine) leaves them to its summary. Both
entries that take a spec to the engine call ``check``: the stack program (``cli/config.py``) and the
``GpuPlatform`` component (``render/platform.py``, also the component package's)."""

from __future__ import annotations

import pulumi


def under_mock_engine() -> bool:
    """The offline synth (``pulumi.runtime.set_mocks``) is running the program."""
    from pulumi.runtime.mocks import MockMonitor
    from pulumi.runtime.settings import get_monitor

    return isinstance(get_monitor(), MockMonitor)


def refuse(lines: list[str], *, dry_run: bool, why: str = "stack config still holds placeholders") -> None:
    """``lines``: one per problem, each naming where it is (``Problem.line``): a preview warns of each, an update
    stops with ``why`` and them."""
    if not lines:
        return
    if dry_run:
        for line in lines:
            pulumi.log.warn(f"{line}; pulumi up refuses it")
        return
    raise pulumi.RunError(f"{why}:\n" + "\n".join(lines))


def check(lines: list[str]) -> None:
    """``refuse`` as the engine runs the program: nothing under the mock engine, a warning in a preview."""
    if not under_mock_engine():
        refuse(lines, dry_run=pulumi.runtime.is_dry_run())
