"""Indented JSON texts: what ``json.dumps(ints(doc), indent=2, sort_keys=True)`` writes, with whole floats as ints,
made without the standard library's indenting encoder. With an indent, ``json`` encodes in Python through
generators (its C encoder only writes compact JSON); ``pieces`` writes the same pieces from one recursive function,
quoting strings with the C function ``json`` itself uses, ~2.5x faster. The synth's JSON files (resources.json,
outputs.json, the releases' records: ``components/cli/synth_yaml.py``) and the cost document (cost.json, its
ConfigMap, ``gpu-platform cost``: ``cost.to_json``) are written so. tests/test_synth_helpers.py and
tests/test_synth_reports.py compare the two on every shipped stack's documents."""

from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii as _json_str  # the C function json.dumps quotes strings with
from typing import Any


class NotPlain(Exception):
    """A value the direct writers leave to the library, which then writes the whole document: to ``json.dumps``
    from ``pieces`` (a tuple, a subclass of a JSON type, a non-string key), to PyYAML from the synth's YAML emitter
    (anything it is not sure of, ``components/cli/synth_yaml.py``)."""


def ints(value: Any) -> Any:
    """The engine's wire format has one number type, so 2 arrives as 2.0; write whole numbers as
    integers, as the objects declare them (``value: 1000``, not ``1000.0``, which kubectl would refuse)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [ints(v) for v in value]
    return value


def dumps(doc: Any) -> str:
    """``json.dumps(ints(doc), indent=2, sort_keys=True)`` and a newline; anything but plain JSON data goes the
    standard way."""
    out: list[str] = []
    try:
        pieces(doc, out, "\n")
    except NotPlain:
        return json.dumps(ints(doc), indent=2, sort_keys=True) + "\n"
    out.append("\n")
    return "".join(out)


_INFINITY = float("inf")


def pieces(value: Any, out: list[str], newline: str) -> None:
    """Append ``json.dumps(ints(value), indent=2, sort_keys=True)``'s text, piece by piece, to ``out``
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
                    raise NotPlain
                if i:
                    out.append(between)
                out.append(_json_str(k))
                out.append(": ")
                pieces(value[k], out, inner)
        else:
            for i, v in enumerate(value):
                if i:
                    out.append(between)
                pieces(v, out, inner)
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
    elif kind is float:  # whole floats as integers (ints); the rest as json.dumps writes them
        if value.is_integer():
            out.append(int.__repr__(int(value)))
        elif value != value:
            out.append("NaN")
        elif value in (_INFINITY, -_INFINITY):
            out.append("Infinity" if value > 0 else "-Infinity")
        else:
            out.append(float.__repr__(value))
    else:
        raise NotPlain
