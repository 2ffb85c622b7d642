"""Reading a stack file (``stacks/Pulumi.<stack>.yaml``) the way a careless or hostile author may write it.

Every problem becomes a ``Problem`` (key path as written + message); nothing here raises anything else.
What is checked at this level, because ``pulumi up`` hands the program already-decoded strings and never
sees it: bytes that are not UTF-8, files too large, YAML nested too deep or aliases expanding to too many
nodes (alias bombs are refused after composing, before anything is expanded), recursive aliases, duplicate
keys in a mapping (Pulumi's YAML reading refuses them), mapping keys that are not strings (YAML 1.1 reads
``on``/``yes``/``no``/``off`` as booleans, ``1`` as a number, ``~`` as null), and tags whose values JSON
cannot hold. Dates and timestamps stay the text written (``2025-11-20``): Pulumi passes config values to
the program as strings, and Go's yaml.v3 keeps timestamp-looking scalars as strings when decoding into
an untyped value.
"""

from __future__ import annotations

import base64
import binascii
import codecs
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from .model import NAMESPACE, Problem, SpecError
from .validation import quote

MAX_BYTES = 4 * 1024 * 1024  # a stack file is a few KB; the API server refuses requests above 3 MiB anyway
MAX_DEPTH = 64  # nesting of mappings / lists (the spec needs < 10)
MAX_NODES = 200_000  # scalars + collections after expanding every alias (a 200-tenant stack is ~10,000)
MAX_DIGITS = 30  # longer integers stay text (as Go's yaml.v3 keeps an integer it cannot hold) and fail typing
TIMESTAMP = "tag:yaml.org,2002:timestamp"

_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

YAML11_BOOLS = {"y", "yes", "n", "no", "on", "off", "true", "false"}


class _Odd:
    """A value JSON cannot hold, reported with its key path by ``_clean``."""

    def __init__(self, message: str) -> None:
        self.message = message


class _Map(dict):
    """A mapping plus what was wrong with its keys (reported by ``_clean`` with the mapping's path)."""

    problems: list[tuple[str, str]]
    odd_keys: list[tuple[str, str, Any]]  # (key as written, why it is not a string, value)


class _Loader(_Base):
    pass


# Timestamps stay strings (see the module docstring); the other implicit resolvers are YAML 1.1's.
_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != TIMESTAMP]
    for first, resolvers in _Base.yaml_implicit_resolvers.items()
}


def _key_problem(node: yaml.Node, value: Any) -> str:
    if isinstance(node, yaml.ScalarNode):
        text = quote(node.value, 40)
    else:  # a list or a mapping used as a key: named as the user wrote it, not by the loader's class
        text = "a mapping" if isinstance(node, yaml.MappingNode) else "a list"
    if isinstance(value, bool):
        word = node.value
        if word.lower() in YAML11_BOOLS - {"true", "false"}:
            return f"key {word!r} is read as {str(value).lower()} by YAML 1.1: quote it ('{word}')"
        return f"key {word!r} is a boolean, not a name: quote it"
    if value is None:
        return f"key {text} is read as null by YAML: quote it or give it a name"
    if isinstance(value, (int, float)):
        return f"key {text} is read as a number by YAML: quote it ('{node.value}')"
    return f"key {text} is not a string (mapping keys must be names)"


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> _Map:
    out = _Map()
    out.problems = []
    out.odd_keys = []
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
            if key_node.value in seen:
                out.problems.append((key_node.value, f"duplicate key {quote(key_node.value, 60)} (Pulumi refuses it)"))
            seen.add(key_node.value)
    loader.flatten_mapping(node)  # '<<' merge keys
    for key_node, value_node in node.value:
        k = loader.construct_object(key_node, deep=True)
        if not isinstance(k, str):
            shown = key_node.value if isinstance(key_node, yaml.ScalarNode) else "?"
            value = loader.construct_object(value_node, deep=True)
            out.odd_keys.append((str(shown), _key_problem(key_node, k), value))
            continue
        out[k] = loader.construct_object(value_node, deep=True)
    return out


def _construct_int(loader: _Loader, node: yaml.ScalarNode) -> Any:
    digits = sum(c.isdigit() for c in node.value)
    if digits > MAX_DIGITS:
        return node.value
    return yaml.SafeLoader.construct_yaml_int(loader, node)


def _construct_binary(loader: _Loader, node: yaml.ScalarNode) -> Any:
    try:
        raw = base64.decodebytes(node.value.encode("ascii"))
        return raw.decode("utf-8")  # Go's yaml.v3 decodes !!binary into a string
    except (binascii.Error, UnicodeError):
        return _Odd("a !!binary value that is not UTF-8 text; config values must be text")


def _construct_set(loader: _Loader, node: yaml.Node) -> Any:
    return _Odd("a !!set, which JSON cannot hold: write a list")


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)
_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_Loader.add_constructor("tag:yaml.org,2002:binary", _construct_binary)
_Loader.add_constructor("tag:yaml.org,2002:set", _construct_set)
_Loader.add_constructor(TIMESTAMP, lambda loader, node: str(node.value))


class _Scanned(NamedTuple):
    """What ``_scan`` found: a problem that stops reading before composing (depth, event count), and the
    number of values once every alias is expanded (capped at MAX_NODES + 1), or 'recursive'."""

    problem: Problem | None
    values: int | str


_OPENS = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_CLOSES = (yaml.MappingEndEvent, yaml.SequenceEndEvent)


def _scan(text: str) -> _Scanned:
    """One pass over the parser's events (no recursion): depth and size before composing anything, and the
    values after expanding every alias, counted from the same events (no walk over the composed nodes).

    A node's values are 1 + its children's (capped at MAX_NODES + 1), an alias's those of its anchor's node,
    so a 1 KB alias bomb costs as much as its 1 KB of events. An alias can only name an anchor met before
    it: one whose collection is still open contains the alias (recursive), any other is complete. An alias
    to no anchor counts 0: composing refuses it before ``parse`` reads the count."""
    cap = MAX_NODES + 1
    depth = events = 0
    open_: list[list[Any]] = [[None, 0]]  # [anchor, values so far] of each open collection; [0]: the document's
    anchored: dict[str, int] = {}  # anchor -> values of its complete node
    recursive = False
    for event in yaml.parse(text, Loader=_Loader):
        events += 1
        if isinstance(event, yaml.ScalarEvent):
            open_[-1][1] += 1
            if event.anchor is not None:
                anchored[event.anchor] = 1
        elif isinstance(event, _OPENS):
            depth += 1
            if depth > MAX_DEPTH:
                return _Scanned(Problem(_line(event), f"nested more than {MAX_DEPTH} levels deep"), 0)
            open_.append([event.anchor, 1])
        elif isinstance(event, _CLOSES):
            depth -= 1
            anchor, values = open_.pop()
            if anchor is not None:
                anchored[anchor] = values
            open_[-1][1] = min(cap, open_[-1][1] + values)
        elif isinstance(event, yaml.AliasEvent):
            if any(anchor == event.anchor for anchor, _ in open_):
                recursive = True
            open_[-1][1] = min(cap, open_[-1][1] + anchored.get(event.anchor, 0))
        if events > MAX_NODES * 2:
            return _Scanned(Problem("(file)", f"more than {MAX_NODES} values; not a stack file"), 0)
    return _Scanned(None, "recursive" if recursive else min(cap, open_[0][1]))


def _line(event_or_node: Any) -> str:
    mark = getattr(event_or_node, "start_mark", None)
    return f"line {mark.line + 1}" if mark is not None else "(file)"


def _child_path(path: str, k: str | int) -> str:
    if isinstance(k, int):
        return f"{path}[{k}]"
    return f"{path}.{k}" if path else k


def _clean(value: Any, path: str, problems: list[Problem], ours: bool = True) -> Any:
    """Plain dicts/lists/scalars; problems recorded while constructing are reported at their key path.

    Under another namespace's key (``ours`` false) a key YAML 1.1 read as a boolean or number is kept as the
    text written, as Go's yaml.v3 (Pulumi) keeps ``on:``; under ours it is refused with the YAML hint."""
    if isinstance(value, _Odd):
        problems.append(Problem(path, value.message))
        return None
    if isinstance(value, dict):
        for k, message in getattr(value, "problems", ()):
            problems.append(Problem(_child_path(path, k), message))
        out: dict[str, Any] = {}
        for k, v in value.items():
            # top level: each config key decides whether its value is ours
            inner = k.startswith(f"{NAMESPACE}:") if path == "" else ours
            out[k] = _clean(v, _child_path(path, k), problems, inner)
        for k, message, v in getattr(value, "odd_keys", ()):
            if ours or path == "" or k in out:
                problems.append(Problem(_child_path(path, k), message))
            else:
                out[k] = _clean(v, _child_path(path, k), problems, ours)
        return out
    if isinstance(value, list):
        return [_clean(v, _child_path(path, i), problems, ours) for i, v in enumerate(value)]
    return value


def read(path: Path) -> dict[str, Any]:
    """The ``config:`` map of a stack file; raises SpecError (one Problem per problem) for anything else."""

    def fail(where: str, message: str) -> SpecError:
        return SpecError([Problem(where, message)])

    try:
        if path.is_dir():
            raise fail("(file)", "is a directory, not a stack file")
        with path.open("rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise fail("(file)", "no such stack file") from None
    except OSError as exc:
        raise fail("(file)", f"cannot be read: {exc.strerror or exc}") from None
    if len(data) > MAX_BYTES:
        raise fail("(file)", f"is larger than {MAX_BYTES // (1024 * 1024)} MiB; not a stack file")
    # A BOM (editors on Windows write one) is not part of the text; positions count from after it.
    body = data.removeprefix(codecs.BOM_UTF8)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = body[: exc.start].count(b"\n") + 1
        byte = body[exc.start]
        raise fail(f"line {line}", f"is not UTF-8 text (byte 0x{byte:02x}); save the file as UTF-8") from None
    return parse(text)


def parse(text: str) -> dict[str, Any]:
    """The ``config:`` map of a stack file's text (``GpuPlatform`` for other languages gets the text, not a path);
    raises SpecError as ``read`` does."""

    def fail(where: str, message: str) -> SpecError:
        return SpecError([Problem(where, message)])

    if len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise fail("(file)", f"is larger than {MAX_BYTES // (1024 * 1024)} MiB; not a stack file")
    try:
        scanned = _scan(text)
        if scanned.problem:
            raise SpecError([scanned.problem])
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                raise fail("config", "a stack file needs a top-level 'config:' mapping (the file is empty)")
            size = scanned.values  # counted by _scan, refused only once composing has found no YAML error
            if size == "recursive":
                raise fail(_line(node), "an alias refers to a mapping or list that contains it (recursive alias)")
            if isinstance(size, int) and size > MAX_NODES:
                raise fail("(file)", f"expands to more than {MAX_NODES} values through aliases; not a stack file")
            doc = loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "(file)"
        what = " ".join(str(getattr(exc, "problem", None) or exc).split())
        what = what if len(what) <= 160 else what[:160] + "…"
        raise fail(where, f"not valid YAML: {what}") from None
    except RecursionError:  # belt and braces: _scan bounds the depth first
        raise fail("(file)", "nested too deeply") from None
    if not isinstance(doc, dict):
        raise fail("config", f"a stack file is a mapping with a 'config:' key, not {_kind(doc)}")
    problems: list[Problem] = [Problem(k, m) for k, m in getattr(doc, "problems", ())]
    config = doc.get("config")
    if isinstance(config, dict):
        config = _clean(config, "", problems)
    elif not problems:
        problems.append(Problem("config", "a stack file needs a top-level 'config:' mapping"))
    if problems:
        raise SpecError(problems)
    return config


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the text {quote(value, 40)}"
    return f"{quote(value, 40)}"
