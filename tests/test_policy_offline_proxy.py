"""The offline runner's props proxies (policies.offline_proxy) read exactly like the engine's
(pulumi_policy.proxy.unknown_checking_proxy): the same values through every Mapping / Sequence read, the same
UnknownValueError (sentinel and path) for an unknown value, the same edges."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest
from conftest import STACKS, rendered, stack_config
from pulumi_policy.proxy import (
    UNKNOWN_ARRAY_VALUE,
    UNKNOWN_BOOLEAN_VALUE,
    UNKNOWN_NUMBER_VALUE,
    UNKNOWN_OBJECT_VALUE,
    UNKNOWN_STRING_VALUE,
    UnknownValueError,
    _DictProxy,
    _ListProxy,
    unknown_checking_proxy,
)

from policies.offline_proxy import lazy_proxy


def _outcome(read: Callable[[], Any]) -> tuple[str, Any]:
    """What a read gives: a value, or the exception it raises (UnknownValueError with its sentinel and path)."""
    try:
        return "value", _shape(read())
    except UnknownValueError as exc:
        return "unknown", (exc.unknown_type_sentinel, exc.props, exc.message)
    except Exception as exc:
        return type(exc).__name__, str(exc)


def _shape(value: Any) -> Any:
    """A proxy as its class and length (its content is walked separately), anything else as itself."""
    if isinstance(value, _DictProxy):
        return ("_DictProxy", len(value))
    if isinstance(value, _ListProxy):
        return ("_ListProxy", len(value))
    if isinstance(value, (list, tuple)):  # a slice (the target's elements, unchecked), items()' pairs
        return (type(value).__name__, [_shape(v) for v in value])
    return (type(value).__name__, value)


def _walk(proxy: Any, path: tuple = ()) -> list[tuple]:
    """Every read a policy can make, depth first: keys, lengths, item reads, get with and without a default,
    ``in``, items(), iteration, negative indexes and slices; each with its outcome."""
    out: list[tuple] = [(path, "shape", _shape(proxy))]
    if isinstance(proxy, Mapping):
        out.append((path, "keys", list(proxy)))
        out.append((path, "get-missing", _outcome(lambda: proxy.get("\0missing", "default"))))
        out.append((path, "missing", _outcome(lambda: proxy["\0missing"])))
        out.append((path, "items", _outcome(lambda: list(proxy.items()))))
        for key in list(proxy):
            out.append(((*path, key), "in", _outcome(lambda key=key: key in proxy)))
            out.append(((*path, key), "get", _outcome(lambda key=key: proxy.get(key))))
            kind, _ = got = _outcome(lambda key=key: proxy[key])
            out.append(((*path, key), "item", got))
            if kind == "value":
                out += _walk(proxy[key], (*path, key))
    elif isinstance(proxy, Sequence) and not isinstance(proxy, (str, bytes)):
        out.append((path, "iter", _outcome(lambda: list(proxy))))
        out.append((path, "slice", _outcome(lambda: proxy[1:])))
        out.append((path, "past-the-end", _outcome(lambda: proxy[len(proxy)])))
        out.append((path, "last", _outcome(lambda: proxy[-1])))
        for i in range(len(proxy)):
            kind, _ = got = _outcome(lambda i=i: proxy[i])
            out.append(((*path, i), "item", got))
            if kind == "value":
                out += _walk(proxy[i], (*path, i))
    return out


def _same_reads(inputs: Mapping[str, Any]) -> None:
    engine, offline = _walk(unknown_checking_proxy(dict(inputs))), _walk(lazy_proxy(dict(inputs)))
    assert offline == engine


@pytest.mark.parametrize("stack", STACKS)
def test_lazy_proxies_read_like_the_engines_on_every_shipped_stack(stack):
    for r in rendered(stack).resources:
        _same_reads(r.inputs)


def test_lazy_proxies_raise_the_engines_unknown_errors_on_a_preview():
    """A first preview hands the pack unknown values (created resources' outputs): each read of one raises the
    engine's UnknownValueError, with its path."""
    from components.cli.synth import render

    resources = render("prod-aws", stack_config("prod-aws"), preview=True).resources
    walks = [_walk(lazy_proxy(dict(r.inputs))) for r in resources]
    assert any(step[1] == "item" and step[2][0] == "unknown" for walk in walks for step in walk)
    assert walks == [_walk(unknown_checking_proxy(dict(r.inputs))) for r in resources]


NESTED = {
    "metadata": {"name": "n", "labels": {"a": UNKNOWN_STRING_VALUE, "b": "x"}},
    "spec": {
        "list": [
            1.0,
            UNKNOWN_NUMBER_VALUE,
            {"deep": [UNKNOWN_BOOLEAN_VALUE, {"k": UNKNOWN_OBJECT_VALUE}]},
            [[]],
            ("t",),
        ],
        "array": UNKNOWN_ARRAY_VALUE,
        "tuple": ({"in-a-tuple": UNKNOWN_STRING_VALUE},),  # not a list: a leaf, its content never proxied
        "empty": {},
    },
    True: "a non-string key",
}


def test_lazy_proxies_read_like_the_engines_with_unknowns_at_every_depth():
    _same_reads(NESTED)


def test_reads_through_target_and_writes_stay_like_the_engines_and_leave_the_inputs_untouched():
    """``__target`` (what pulumi_policy's serializer reads) is the proxied children; a write is read back as
    written (unchecked by kind, unknown-checked), and neither proxy writes into the inputs it was built from."""
    import copy

    inputs = copy.deepcopy(NESTED)

    def steps(make: Callable[[Any], Any]) -> list[Any]:
        p = make(inputs)
        out = [_outcome(lambda: sorted(map(str, p["__target"])))]
        out.append(_outcome(lambda: _shape(p["spec"]["list"]["__target"])))
        p["spec"]["written"] = {"plain": [1]}
        p["new"] = UNKNOWN_STRING_VALUE
        out += [_outcome(lambda: p["spec"]["written"]), _outcome(lambda: p["new"]), _outcome(lambda: len(p))]
        out.append(_outcome(lambda: list(p)))
        out.append(_outcome(lambda: p["spec"]["list"][True]))  # a bool is an index, its path "True"
        out.append(_outcome(lambda: p["spec"]["list"]["x"]))
        return out

    assert steps(lambda d: lazy_proxy(dict(d))) == steps(lambda d: unknown_checking_proxy(dict(d)))
    assert inputs == NESTED


def test_a_nested_value_is_proxied_only_when_read_and_then_once():
    """The point of the lazy proxies: reading metadata.name proxies metadata, not spec; a value read twice is the
    same proxy (as in the engine's, which holds one per value)."""
    p = lazy_proxy({"metadata": {"name": "n"}, "spec": {"big": [{"x": 1}]}, "empty": {}})
    assert p["metadata"]["name"] == "n"
    assert list(p._kids) == ["metadata"]
    assert p.get("spec")["big"][0]["x"] == 1 and list(p._kids) == ["metadata", "spec"]
    spec = p["spec"]
    assert spec is p.get("spec") and p["empty"] is p["empty"]
    assert p["__target"]["spec"] is spec  # built around the proxies already handed out
