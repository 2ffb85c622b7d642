"""Facts of a validated spec kept once per spec (a spec is frozen after validation): ``per_spec`` for a fact of the
whole stack, ``per_pool`` and ``per_tenant`` for a fact of one of its pools or tenants. The plan stage
(``components.plan.derive`` re-exports them) decides each fact once with them, where the plan, the rules and the cost
would otherwise ask it again per tenant, per quota entry and per resource name."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from .model import NodePool, StackSpec, Tenant

_Fact = TypeVar("_Fact")


def _key(kind: str, fn: Callable[..., Any]) -> str:
    """Where the spec's ``__dict__`` keeps a fact's answers (the wrapper has the function's name: functools.wraps)."""
    return f"_per_{kind}_{fn.__module__}.{fn.__qualname__}"


def per_spec(fn: Callable[[StackSpec], _Fact]) -> Callable[[StackSpec], _Fact]:
    """Compute a fact of the whole spec once per spec (a spec is frozen after validation), where a component
    would otherwise recompute it per tenant or per pool. Cached in the instance's ``__dict__`` the way
    ``functools.cached_property`` does (pydantic's equality, dumps and schema ignore it); tagged with the
    spec's id so a copy of the spec recomputes. Return immutable values."""
    key = _key("spec", fn)

    @functools.wraps(fn)
    def cached(spec: StackSpec) -> _Fact:
        got = spec.__dict__.get(key)
        if got is not None and got[0] == id(spec):
            return got[1]
        value = fn(spec)
        spec.__dict__[key] = (id(spec), value)
        return value

    return cached


def _copied(value: Any) -> Any:
    """A kept answer as handed out: dicts (and dicts of dicts) copied, anything else as it is (immutable)."""
    if type(value) is not dict:
        return value
    return {k: dict(v) if type(v) is dict else v for k, v in value.items()}


def _per_member(kind: str, fn: Callable[[StackSpec, Any], _Fact]) -> Callable[[StackSpec, Any], _Fact]:
    key = _key(kind, fn)

    @functools.wraps(fn)
    def cached(spec: StackSpec, member: Any) -> _Fact:
        table = spec.__dict__.get(key)
        if table is None or table[0] != id(spec):
            table = (id(spec), {})
            spec.__dict__[key] = table
        got = table[1].get(member.name)
        if got is None or got[0] is not member:
            got = table[1][member.name] = (member, fn(spec, member))
        return _copied(got[1])  # type: ignore[no-any-return]

    return cached


def per_pool(fn: Callable[[StackSpec, NodePool], _Fact]) -> Callable[[StackSpec, NodePool], _Fact]:
    """Decide a fact of one pool of a spec once (``per_spec``'s cache, a table by pool name), where the plan, the
    rules and the cost would otherwise ask it again per tenant, per quota entry and per resource name (1,000
    tenants and 48 pools: ~150,000 questions). An answer is kept for the pool object it was asked of: a pool that
    is not the spec's own (a test's modified copy) is answered afresh. A dict answer is handed out as a copy (and
    its dict values), so a caller that adds to it changes nothing kept."""
    return _per_member("pool", fn)


def per_tenant(fn: Callable[[StackSpec, Tenant], _Fact]) -> Callable[[StackSpec, Tenant], _Fact]:
    """``per_pool`` for a fact of one tenant (its ceilings, which its quota, its ResourceQuota and its cost read)."""
    return _per_member("tenant", fn)


def forget(spec: StackSpec, fact: Callable[[StackSpec], Any]) -> None:
    """Drop what ``per_spec`` kept of ``fact`` for this spec (asked again, it is decided again): for a fact needed
    only while the plan is decided, whose answers the plan keeps."""
    spec.__dict__.pop(_key("spec", fact), None)
