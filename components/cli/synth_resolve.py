"""The stack outputs of a program run, resolved: every ``Output`` awaited (None when one is unknown, as in a
preview). Split from synth.py, which re-exports ``_resolved``."""

from __future__ import annotations

from inspect import isawaitable
from typing import Any


class _UnknownOutput(Exception):
    """A stack output holds a value not known yet (a preview): the outputs as a whole are unknown."""


async def _resolved(value: Any) -> Any:
    """The stack outputs with every ``Output`` in them awaited: what ``Output.from_input(value).future()`` gives,
    None when any value is unknown, without lifting every plain leaf into an ``Output`` of its own (the outputs
    are mostly plain data derived from the spec: thousands of leaves at 200 tenants, a few real outputs)."""
    import pulumi
    from pulumi import _types

    async def walk(v: Any) -> Any:
        if isinstance(v, pulumi.Output):
            if not await v.is_known():
                raise _UnknownOutput
            return await walk(await v.future())
        if isawaitable(v):
            return await walk(await v)
        if _types.is_input_type(type(v)):  # an args class: leave it to the SDK
            lifted = pulumi.Output.from_input(v)
            if not await lifted.is_known():
                raise _UnknownOutput
            return await lifted.future()
        if isinstance(v, dict):
            return {k: await walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [await walk(x) for x in v]
        if isinstance(v, tuple):
            return tuple([await walk(x) for x in v])
        return v

    try:
        return await walk(value)
    except _UnknownOutput:
        return None
