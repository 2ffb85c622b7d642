"""The plan's value shapes, written once: deep read-only copies (mappings become ``MappingProxyType``, lists
tuples) and back to plain dicts and lists. Every plan module freezes its section with these; ``plan.py`` and the
sections cannot import each other both ways, so the helpers live apart from both."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from types import MappingProxyType
from typing import Any

# Leaves met most often, told apart by their exact type before the abstract Mapping check (an ABC's isinstance is
# the slow part of freezing a 1,000-tenant plan's ~120,000 values)
_LEAVES = frozenset({str, int, float, bool, type(None)})


def freeze(value: Any, keep_order: bool = False) -> Any:
    """Deep read-only copy: dicts become MappingProxyType (keys sorted, or in their own order with ``keep_order``:
    pools and tenants keep the stack file's, what the renderers register in), lists tuples."""
    kind = type(value)
    if kind in _LEAVES:
        return value
    if kind is dict or kind is MappingProxyType or isinstance(value, Mapping):
        keys = list(value) if keep_order else sorted(value)
        return MappingProxyType({k: freeze(value[k], keep_order) for k in keys})
    if kind is list or kind is tuple or isinstance(value, list | tuple):
        return tuple([freeze(v, keep_order) for v in value])
    return value


def frozen(value: Any) -> Any:
    """``freeze`` keeping the keys' own order."""
    return freeze(value, keep_order=True)


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def plain(value: Any) -> Any:
    """A plan value as plain dicts and lists (what a resource's inputs and the JSON are made of); a plan's
    dataclasses become dicts with camelCase keys."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if hasattr(value, "__dataclass_fields__"):
        return {camel(f.name): plain(getattr(value, f.name)) for f in fields(value)}
    return value
