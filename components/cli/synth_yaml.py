"""How the synth writes its files: YAML (for JSON-like data its own emitter, writing what libyaml's does; else
libyaml's emitter with a faster representer) and JSON, with whole floats written as ints (the engine's wire format
has only doubles)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import yaml

from ..plan.json_text import NotPlain as _NotPlain, dumps as _json, ints as _ints, pieces as _json_pieces


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


def _yaml_stock(doc: Any) -> str:
    """The manifests' and values' YAML as PyYAML writes it: libyaml's emitter fed by ``_Dumper``."""
    return yaml.dump(_ints(doc), Dumper=_Dumper, sort_keys=True, default_flow_style=False, width=_WIDTH)


def _yaml(doc: Any) -> str:
    """``_yaml_stock(doc)``'s text, written directly for JSON-like data: building PyYAML's nodes and the emitter's
    two ``resolve()`` calls per scalar (Python, even with libyaml) were most of the time left in writing the
    manifests; written directly, ~8x faster (the 200-tenant stack's ~1,100 documents: ~0.08 s -> ~0.01 s).
    ``_block_mapping`` and its helpers write what libyaml's emitter (src/emitter.c, 0.2.x) writes for that data;
    anything they are not sure of (a float with a fraction, a tab, text outside printable ASCII, a literal block
    needing an indentation hint, a key over 128 characters, a subclass) sends the whole document the stock way.
    tests/test_synth_yaml_emitter.py compares the two on every shipped stack's documents and on random ones.
    Without libyaml the stock way is PyYAML's Python emitter, which decides some edges otherwise (an empty key, a
    128-character key: emitter.py check_simple_key), so everything goes that way."""
    if not _LIBYAML:
        return _yaml_stock(doc)
    out: list[str] = []
    try:
        _document(doc, out)
    except (_NotPlain, RecursionError):
        return _yaml_stock(doc)
    return "".join(out)


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


# ------------------------------------------------------------------------------- the direct YAML emitter

_LIBYAML = issubclass(_StockDumper, getattr(yaml, "CSafeDumper", ()))  # the emitter the direct one mirrors
_WIDTH = 120  # yaml.dump(width=120): libyaml's best_width; plain and quoted text may fold at a blank past it
_STR_TAG = f"{_TAG}str"
_SIMPLE_KEY_MAX = 128  # yaml_emitter_check_simple_key: a longer key is written as an explicit "? key"
_FIRST_INDICATORS = frozenset("#,[]{}&*!|>'\"%@`")  # yaml_emitter_analyze_scalar: no plain text starts so
_ONE_LINE = re.compile(r"[\x20-\x7e]+")  # printable ASCII only: nothing escaped, nothing double-quoted
_LITERAL = re.compile(r"[\x21-\x7e][\x20-\x7e\n]*")  # the same over lines, not starting blank (indent hint)
_CACHE_MAX = 100_000  # entries per cache below, then it starts afresh (the 200-tenant stack fills ~1,000)
_VALUES: dict[str, tuple[str, int]] = {}  # one-line text -> (as written, with its line break; length if it
# holds a blank, where it could fold, else 0)
_KEYS: dict[str, str] = {}  # key -> as written, with its colon


def _document(doc: Any, out: list[str]) -> None:
    """A mapping or a sequence at the top (the manifests and values are mappings); an empty one in flow style,
    as yaml_emitter_emit_mapping_start / _sequence_start write it. A scalar document: the stock way."""
    kind = type(doc)
    if kind is not dict and kind is not list:
        raise _NotPlain
    if not doc:
        out.append("{}\n" if kind is dict else "[]\n")
    elif kind is dict:
        _block_mapping(doc, out, 0, "")
    else:
        _block_sequence(doc, out, 0, "")


def _block_mapping(doc: dict, out: list[str], indent: int, first: str) -> None:
    """A block mapping at ``indent``, keys sorted (sort_keys=True); ``first``: what precedes the first key
    (the indent, or one blank after a sequence's dash: yaml_emitter_write_indent pads to the indent without a
    line break when the dash left the column short of it)."""
    try:
        keys = sorted(doc)
    except TypeError:  # keys of types that do not compare: not the synth's data
        raise _NotPlain from None
    pad = " " * indent
    lead = first
    for key in keys:
        if type(key) is not str:
            raise _NotPlain
        text = _KEYS.get(key) or _key(key)
        out.append(lead)
        out.append(text)
        lead = pad
        _node(doc[key], out, indent, indent + len(text), True)


def _block_sequence(items: list, out: list[str], indent: int, first: str) -> None:
    """A block sequence whose dashes are at ``indent`` (``first``: what precedes the first dash)."""
    lead = first + "-"
    pad = " " * indent + "-"
    for item in items:
        out.append(lead)
        lead = pad
        _node(item, out, indent, indent + 1, False)


def _node(value: Any, out: list[str], indent: int, column: int, in_mapping: bool) -> None:
    """The node after a key's colon or a dash (at ``column``), in a collection at ``indent``. In a mapping a
    nested mapping goes 2 further on the next line and a sequence stays at the key's indent ("indentless",
    yaml_emitter_emit_block_sequence_item: mapping_context and not indention); after a dash both start on the
    dash's line 2 further. Empty ones in flow style (``{}``, ``[]``); scalars after one blank."""
    kind = type(value)
    if kind is dict or kind is list:
        if not value:
            out.append(" {}\n" if kind is dict else " []\n")
        elif kind is dict:
            if in_mapping:
                out.append("\n")
                _block_mapping(value, out, indent + 2, " " * (indent + 2))
            else:
                _block_mapping(value, out, indent + 2, " ")
        elif in_mapping:
            out.append("\n")
            _block_sequence(value, out, indent, " " * indent)
        else:
            _block_sequence(value, out, indent + 2, " ")
    else:
        out.append(" ")
        out.append(_scalar(value, indent + 2, column + 1))


def _scalar(value: Any, indent: int, column: int) -> str:
    """A scalar as written from ``column`` to its line break (a literal block: its lines at ``indent``, which
    yaml_emitter_emit_scalar's increase_indent makes 2 more than its collection's). The representer's texts:
    SafeRepresenter.represent_bool / _int / _none, whole floats as ints (``_ints``)."""
    kind = type(value)
    if kind is str:
        known = _VALUES.get(value)
        if known is None:
            if "\n" in value:
                return _literal(value, indent)
            text = _one_line(value)
            known = (text + "\n", len(text) if " " in value else 0)
            _remember(_VALUES, value, known)
        text, reach = known
        if reach and column + reach > _WIDTH:  # it may reach past the width: folded where the emitter folds it
            return _folded(text[:-1], column, indent)
        return text
    if kind is bool:
        return "true\n" if value else "false\n"
    if kind is int:
        return f"{value}\n"
    if value is None:
        return "null\n"
    if kind is float and value.is_integer():
        return f"{int(value)}\n"
    raise _NotPlain


def _key(key: str) -> str:
    """A key as written, colon included: a simple key (yaml_emitter_check_simple_key: one line, at most 128
    characters), never folded (write_plain's allow_breaks is off in a simple key's context)."""
    if len(key) > _SIMPLE_KEY_MAX:
        raise _NotPlain
    text = _one_line(key) + ":"
    _remember(_KEYS, key, text)
    return text


def _one_line(text: str) -> str:
    """Text without line breaks as yaml_emitter_select_scalar_style writes it in block context: plain if
    block_plain_allowed and it reads back as a string (the serializer's plain_implicit), else single-quoted
    (its quotes doubled). Only printable ASCII: anything else (a tab, a control, non-ASCII, which
    allow_unicode=False escapes) is the stock way's."""
    if not text:  # resolves to null, and a key: single-quoted either way
        return "''"
    if not _ONE_LINE.fullmatch(text):
        raise _NotPlain
    if _block_plain_allowed(text) and _reads_back_as_text(text):
        return text
    return "'" + text.replace("'", "''") + "'"


def _folded(written: str, column: int, indent: int) -> str:
    """One-line text as written (plain or single-quoted) from ``column``, folded as yaml_emitter_write_plain_scalar
    and _write_single_quoted_scalar fold it: a blank met past the width, with no blank on either side (quoted: not
    the text's first or last character), becomes a line break and ``indent`` blanks (write_indent)."""
    quoted = written[0] == "'"
    first, last = (1, len(written) - 2) if quoted else (-1, -1)  # a quoted text's own first and last characters
    pieces = []
    start, at = 0, column  # where the current line's part of ``written`` starts, and its column
    blank = written.find(" ")
    while blank >= 0:
        if (
            at + blank - start > _WIDTH
            and written[blank - 1] != " "
            and written[blank + 1] != " "
            and blank != first
            and blank != last
        ):
            pieces.append(written[start:blank])
            pieces.append("\n" + " " * indent)
            start, at = blank + 1, indent
        blank = written.find(" ", blank + 1)
    pieces.append(written[start:])
    pieces.append("\n")
    return "".join(pieces)


def _block_plain_allowed(text: str) -> bool:
    """yaml_emitter_analyze_scalar's block_plain_allowed for one line of printable ASCII: no leading or trailing
    blank, no "---" or "..." start, no indicator first, no ``-``/``?``/``:`` first before a blank or the end,
    no ``:`` before a blank or the end, no ``#`` after a blank."""
    first = text[0]
    if first == " " or text[-1] == " " or first in _FIRST_INDICATORS or text.startswith(("---", "...")):
        return False
    if first in "-?:" and (len(text) == 1 or text[1] == " "):
        return False
    return not (": " in text or text[-1] == ":" or " #" in text)


def _reads_back_as_text(text: str) -> bool:
    """BaseResolver.resolve(ScalarNode, text, (True, False)) is the str tag: the implicit resolvers of ``text``'s
    first character, then the wildcard ones; the first whose pattern matches decides. With path resolvers
    (never set here) the answer depends on the node's place: the stock way's."""
    if _Dumper.yaml_path_resolvers:
        raise _NotPlain
    table = _Dumper.yaml_implicit_resolvers
    for tag, pattern in table.get(text[0], []) + table.get(None, []):
        if pattern.match(text):
            return tag == _STR_TAG
    return _Dumper.DEFAULT_SCALAR_TAG == _STR_TAG


def _literal(text: str, indent: int) -> str:
    """Multi-line text as ``_str`` asks (a literal block) and yaml_emitter_write_literal_scalar writes it: ``|``,
    ``-`` unless it ends with a line break (write_block_scalar_hints), then each line at ``indent``, empty
    lines empty. Not handled (block_allowed false, or a hint beyond the chomping one): a blank before a line
    break or at the end, a blank or a line break first, two line breaks at the end, anything not printable
    ASCII."""
    if not _LITERAL.fullmatch(text) or " \n" in text or text.endswith((" ", "\n\n")):
        raise _NotPlain
    lines = text.split("\n")
    head = "|\n" if text.endswith("\n") else "|-\n"
    if not lines[-1]:
        lines.pop()
    pad = " " * indent
    return head + "".join(pad + line + "\n" if line else "\n" for line in lines)


def _remember(cache: dict, key: str, value: Any) -> None:
    if len(cache) >= _CACHE_MAX:
        cache.clear()
    cache[key] = value
