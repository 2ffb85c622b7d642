"""The stack outputs of a program run, resolved: every ``Output`` awaited (None when one is unknown, as in a
preview). Split from synth.py, which re-exports ``_resolved``."""

from __future__ import annotations

from inspect import isawaitable
from typing import Any

from ..plan.frozen import LEAVES  # values that are themselves: no Output, awaitable or args class is one

SECRET_SHOWN = "[secret]"  # a secret stack output, as outputs.json (and `pulumi stack output`) show it


class _UnknownOutput(Exception):
    """A stack output holds a value not known yet (a preview): the outputs as a whole are unknown."""


async def _resolved(value: Any) -> Any:
    """The stack outputs with every ``Output`` in them awaited: what ``Output.from_input(value).future()`` gives,
    None when any value is unknown, without lifting every plain leaf into an ``Output`` of its own (the outputs
    are mostly plain data derived from the spec: thousands of leaves at 200 tenants, a few real outputs)."""
    import pulumi
    from pulumi import _types

    async def walk(v: Any) -> Any:
        if type(v) in LEAVES:  # most of the outputs: nothing to await, no coroutine made for them
            return v
        if isinstance(v, pulumi.Output):
            if not await v.is_known():
                raise _UnknownOutput
            if await v.is_secret():  # as `pulumi stack output` shows it: a credential never lands in the files
                return SECRET_SHOWN
            return await walk(await v.future())
        if isawaitable(v):
            return await walk(await v)
        if _types.is_input_type(type(v)):  # an args class: leave it to the SDK
            lifted = pulumi.Output.from_input(v)
            if not await lifted.is_known():
                raise _UnknownOutput
            return await lifted.future()
        if isinstance(v, dict):
            return {k: x if type(x) in LEAVES else await walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [x if type(x) in LEAVES else await walk(x) for x in v]
        if isinstance(v, tuple):
            return tuple([x if type(x) in LEAVES else await walk(x) for x in v])
        return v

    try:
        return await walk(value)
    except _UnknownOutput:
        return None


_SECRET_SIG = ("4dabf18193072939515e22adb298388d", "1b47061264138c4ac30d75fd1eb44270")  # Pulumi's wire secret


def _secrets_shown(value: Any, strings: dict[str, str] | None = None) -> Any:
    """Inputs with every secret value's text shown as ``[secret]`` (as the state and ``pulumi preview --diff`` show
    it): a credential never lands in the synth's files, and a test sees which inputs are secret.

    ``strings``: the recorder's table of the strings seen so far; each key and string value is replaced by the equal
    one already in it (added when new). Every value the mock engine receives is a fresh string (deserialized from
    its wire form), and the recorded inputs keep them all to the end of the command: at 1,000 tenants 179,000
    strings (10.7 MiB) of which 2,250 (0.5 MiB) differ."""
    if isinstance(value, dict):
        if value.get(_SECRET_SIG[0]) == _SECRET_SIG[1]:
            return _masked(value.get("value"))
        if strings is None:
            return {k: _secrets_shown(v) for k, v in value.items()}
        return {strings.setdefault(k, k): _secrets_shown(v, strings) for k, v in value.items()}
    if isinstance(value, list):
        return [_secrets_shown(v, strings) for v in value]
    if strings is not None and type(value) is str:
        return strings.setdefault(value, value)
    return value


def _masked(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _masked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(v) for v in value]
    return SECRET_SHOWN if isinstance(value, str) else value
