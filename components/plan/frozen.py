"""The plan's value shapes, written once: deep read-only copies (mappings become ``MappingProxyType``, lists
tuples) and back to plain dicts and lists. Every plan module freezes its section with these; ``plan.py`` and the
sections cannot import each other both ways, so the helpers live apart from both."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import fields
from types import MappingProxyType
from typing import Any

# Leaves met most often, told apart by their exact type before the abstract Mapping check (an ABC's isinstance is
# the slow part of freezing a 1,000-tenant plan's ~120,000 values)
LEAVES = frozenset({str, int, float, bool, type(None)})


# While a plan is built (``sharing``): every frozen value made so far, by its content, so that equal ones are one
# object. A 1,000-tenant plan froze ~53,000 mappings and tuples (10 MiB, alive to the end of the synth) of which
# ~6,500 differ (tenants' queues, quotas and labels repeat per pool); being read-only, they can be shared. The
# ones made with sorted keys are also kept by their id (an int key, never equal to a content key): freezing one of
# them again gives itself (``interned`` values built into a bigger value are not walked again).
_shared: dict[tuple | int, Any] | None = None


@contextmanager
def sharing() -> Iterator[None]:
    """Equal values frozen inside this block are one object (the table is dropped at its end)."""
    global _shared
    outer = _shared
    if outer is None:
        _shared = {}
    try:
        yield
    finally:
        _shared = outer


# Leaves that tell themselves apart in ``_shared``'s keys (``_ident``: the others, bool and float, would equal
# another type's value)
_SELF_IDENT = frozenset({str, int, type(None)})


def _ident(value: Any) -> Any:
    """What tells a frozen value apart in ``_shared``'s keys: equal only for values that freeze alike (1, 1.0, True
    and 0.0, -0.0 differ; a container is itself, by identity, its children being shared already)."""
    kind = type(value)
    if kind is str or kind is int or value is None:
        return value
    if kind is bool:
        return (bool, value)
    if kind is float:
        return (float, repr(value))
    return (id(value),)


def freeze(value: Any, keep_order: bool = False) -> Any:
    """Deep read-only copy: dicts become MappingProxyType (keys sorted, or in their own order with ``keep_order``:
    pools and tenants keep the stack file's, what the renderers register in), lists tuples. Inside ``sharing``,
    equal results are one object.

    Most of what a plan freezes is met before (a 200-tenant plan: ~11,000 mappings and tuples, ~1,600 of them
    distinct): a mapping's sharing key is made from its frozen values, and only a new one is built as a mapping.
    Leaves are copied as they are, without a call each, and take ``_ident``'s call only where they could equal
    another type's (bool, float)."""
    kind = type(value)
    if kind in LEAVES:
        return value
    leaves, self_ident, table = LEAVES, _SELF_IDENT, _shared
    if table is not None and (kind is MappingProxyType or kind is tuple) and table.get(id(value)) is value:
        return value  # made here with sorted keys: itself in either order
    if kind is dict or kind is MappingProxyType or isinstance(value, Mapping):
        keys = list(value) if keep_order else sorted(value)
        values = [v if type(v) in leaves else freeze(v, keep_order) for v in map(value.__getitem__, keys)]
        if table is None:
            return MappingProxyType(dict(zip(keys, values, strict=True)))
        key = ("m", *keys, *[v if type(v) in self_ident else _ident(v) for v in values])
        got = table.get(key)
        if got is None:
            got = table[key] = MappingProxyType(dict(zip(keys, values, strict=True)))
            if not keep_order:
                table[id(got)] = got
        return got
    if kind is list or kind is tuple or isinstance(value, list | tuple):
        made = tuple([v if type(v) in leaves else freeze(v, keep_order) for v in value])
        if table is None:
            return made
        key = ("t", *[v if type(v) in self_ident else _ident(v) for v in made])
        got = table.get(key)
        if got is None:
            got = table[key] = made
            if not keep_order:
                table[id(got)] = got
        return got
    return value


def interned(make: Callable[[], Any], *key: Any) -> Any:
    """``freeze(make())``, made once per ``key`` (exact values: 1, 1.0 and True differ) while a plan is built
    (``sharing``; outside it, every time): for a part of many values asked again and again with the same arguments
    (a ClusterQueue's quota entries: ~2,600 in a 200-tenant plan, ~40 distinct). Freezing the value it is built into
    gives it back as it is. The key's parts are plain values (str, int, float, bool, None): a container would be
    told apart by its id, which the table does not keep alive, so a later object could take it; TypeError."""
    for k in key:
        if type(k) not in LEAVES:
            raise TypeError(f"interned: a key part must be a str, int, float, bool or None, not {type(k).__name__}")
    table = _shared
    if table is None:
        return freeze(make())
    lookup = ("i", *[_ident(k) for k in key])
    got = table.get(lookup)
    if got is None:
        got = table[lookup] = freeze(make())
    return got


def frozen(value: Any) -> Any:
    """``freeze`` keeping the keys' own order."""
    return freeze(value, keep_order=True)


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def plain(value: Any) -> Any:
    """A plan value as plain dicts and lists (what a resource's inputs and the JSON are made of); a plan's
    dataclasses become dicts with camelCase keys."""
    kind = type(value)
    if kind in LEAVES:  # most values: told apart before the abstract Mapping check, as in ``freeze``
        return value
    if kind is MappingProxyType or isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if hasattr(value, "__dataclass_fields__"):
        return {camel(f.name): plain(getattr(value, f.name)) for f in fields(value)}
    return value
