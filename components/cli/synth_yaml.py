"""How the synth writes its files: YAML (libyaml's emitter with a faster representer for JSON-like data) and JSON,
with whole floats written as ints (the engine's wire format has only doubles)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from json.encoder import encode_basestring_ascii as _json_str  # the C function json.dumps quotes strings with
from typing import Any

import yaml


class _StockDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """libyaml's emitter when PyYAML has it (~10x faster on a 200-tenant synth); multi-line strings (the
    configs inside ConfigMaps and Helm values) as literal blocks, so they read as the YAML they are."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_StockDumper.add_representer(str, _str)

_TAG = "tag:yaml.org,2002:"
_PLAIN_SCALARS = {
    str: lambda v: (f"{_TAG}str", v, "|" if "\n" in v else None),  # as _str
    bool: lambda v: (f"{_TAG}bool", "true" if v else "false", None),  # SafeRepresenter.represent_bool
    int: lambda v: (f"{_TAG}int", str(v), None),  # represent_int
    type(None): lambda v: (f"{_TAG}null", "null", None),  # represent_none
}


class _Dumper(_StockDumper):
    """The same nodes as ``_StockDumper`` builds, built without PyYAML's generic machinery for the JSON-like
    data the synth writes (the representer and resolver are Python even with libyaml; they were ~60 % of
    writing the manifests). Anything else (a float, a non-string key, a default style) goes the stock way.
    No anchors or aliases: PyYAML emits one only for a container met twice in a document, and ``_ints``
    copies every container, so none is (tests/test_synth.py compares both dumpers)."""

    _scalar_tags: dict[tuple[str, tuple[bool, bool]], str] = {}  # resolve() of plain scalars, class-wide

    def represent_data(self, data: Any) -> yaml.Node:
        kind = type(data)
        plain = _PLAIN_SCALARS.get(kind)
        if plain is not None and self.default_style is None:
            tag, value, style = plain(data)
            return yaml.ScalarNode(tag, value, style=style)
        if self.default_flow_style is not None and self.sort_keys:
            if kind is dict and all(type(k) is str for k in data):
                items = [(self.represent_data(k), self.represent_data(data[k])) for k in sorted(data)]
                return yaml.MappingNode(f"{_TAG}map", items, flow_style=self.default_flow_style)
            if kind is list:
                values = [self.represent_data(v) for v in data]
                return yaml.SequenceNode(f"{_TAG}seq", values, flow_style=self.default_flow_style)
        return super().represent_data(data)

    def resolve(self, kind: type, value: Any, implicit: Any) -> str:
        """Which tag a plain scalar would be read back as (the emitter asks twice per scalar, to decide the
        quoting): a pure function of the value without path resolvers, so remembered."""
        if kind is not yaml.ScalarNode or self.yaml_path_resolvers:
            return super().resolve(kind, value, implicit)
        key = (value, implicit)
        tag = self._scalar_tags.get(key)
        if tag is None:
            tag = self._scalar_tags[key] = super().resolve(kind, value, implicit)
        return tag


def _ints(value: Any) -> Any:
    """The engine's wire format has one number type, so 2 arrives as 2.0; write whole numbers as
    integers, as the objects declare them (``value: 1000``, not ``1000.0``, which kubectl would refuse)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_ints(v) for v in value]
    return value


def _yaml(doc: Any) -> str:
    return yaml.dump(_ints(doc), Dumper=_Dumper, sort_keys=True, default_flow_style=False, width=120)


def _json(doc: Any) -> str:
    """``json.dumps(_ints(doc), indent=2, sort_keys=True)`` and a newline, the same text made without the standard
    library's indenting encoder: with an indent, ``json`` encodes in Python through generators (its C encoder only
    writes compact JSON), ~70 % of writing resources.json; ``_json_pieces`` writes the same pieces from one recursive
    function, quoting strings with the C function ``json`` itself uses (~2.5x faster; tests/test_synth_helpers.py
    compares the two on every shipped stack's files). Anything but plain JSON data goes the standard way."""
    pieces: list[str] = []
    try:
        _json_pieces(doc, pieces, "\n")
    except _NotPlain:
        return json.dumps(_ints(doc), indent=2, sort_keys=True) + "\n"
    pieces.append("\n")
    return "".join(pieces)


def _json_parts(doc: Any) -> Iterator[str]:
    """``_json(doc)``'s text in parts, a list's one element at a time (resources.json: one resource at a time, not
    ~7 MB and the million pieces it is joined from at 1,000 tenants)."""
    if type(doc) is not list or not doc:
        yield _json(doc)
        return
    for i, value in enumerate(doc):
        pieces = ["[\n  " if i == 0 else ",\n  "]
        try:
            _json_pieces(value, pieces, "\n  ")
        except _NotPlain:  # json.dumps's text one level in: JSON text has line breaks only between its tokens
            pieces[1:] = [json.dumps(_ints(value), indent=2, sort_keys=True).replace("\n", "\n  ")]
        yield "".join(pieces)
    yield "\n]\n"


class _NotPlain(Exception):
    """A value ``_json_pieces`` leaves to ``json.dumps``: a tuple, a subclass of a JSON type, a non-string key."""


_INFINITY = float("inf")


def _json_pieces(value: Any, out: list[str], newline: str) -> None:
    """Append ``json.dumps(_ints(value), indent=2, sort_keys=True)``'s text, piece by piece, to ``out``
    (``newline``: a line break and the indent of ``value``'s own line)."""
    kind = type(value)
    if kind is str:
        out.append(_json_str(value))
    elif kind is dict or kind is list:
        if not value:
            out.append("{}" if kind is dict else "[]")
            return
        inner = newline + "  "
        between = "," + inner
        out.append("{" if kind is dict else "[")
        out.append(inner)
        if kind is dict:
            keys = sorted(value)
            for i, k in enumerate(keys):
                if type(k) is not str:
                    raise _NotPlain
                if i:
                    out.append(between)
                out.append(_json_str(k))
                out.append(": ")
                _json_pieces(value[k], out, inner)
        else:
            for i, v in enumerate(value):
                if i:
                    out.append(between)
                _json_pieces(v, out, inner)
        out.append(newline)
        out.append("}" if kind is dict else "]")
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif kind is int:
        out.append(int.__repr__(value))
    elif kind is float:  # whole floats as integers (_ints); the rest as json.dumps writes them
        if value.is_integer():
            out.append(int.__repr__(int(value)))
        elif value != value:
            out.append("NaN")
        elif value in (_INFINITY, -_INFINITY):
            out.append("Infinity" if value > 0 else "-Infinity")
        else:
            out.append(float.__repr__(value))
    else:
        raise _NotPlain
