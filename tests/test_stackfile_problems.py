"""``components.spec.stackfile.read``: the exact problem (key path + message) for each way a stack file is wrong.

The bad-stack fixtures check a fragment of each message; these pin the whole text, the boundaries of every
cut (quote limits, the 160-character YAML error) and the line numbers, on inputs small enough to read here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from components.spec import stackfile
from components.spec.model import Problem, SpecError

NOT_MAPPING = "a stack file is a mapping with a 'config:' key, not "


def _problems(tmp_path: Path, data: str | bytes) -> list[tuple[str, str]]:
    path = tmp_path / "Pulumi.s.yaml"
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    with pytest.raises(SpecError) as err:
        stackfile.read(path)
    return [(p.path, p.message) for p in err.value.problems]


def _read(tmp_path: Path, data: str | bytes):
    path = tmp_path / "Pulumi.s.yaml"
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return stackfile.read(path)


# ------------------------------------------------------------------------------------- the file itself


def test_byte_order_mark_is_not_part_of_the_first_key(tmp_path: Path):
    """Editors on Windows save UTF-8 with a BOM; the first key must still be 'config', not '\\ufeffconfig'."""
    assert _read(tmp_path, b"\xef\xbb\xbfconfig:\n  gpu-platform:cloud: aws\n") == {"gpu-platform:cloud": "aws"}


def test_missing_file_and_directory(tmp_path: Path):
    """A wrong --config path is one problem at '(file)', not an OSError traceback."""
    with pytest.raises(SpecError) as err:
        stackfile.read(tmp_path / "absent.yaml")
    assert [(p.path, p.message) for p in err.value.problems] == [("(file)", "no such stack file")]
    with pytest.raises(SpecError) as err:
        stackfile.read(tmp_path)
    assert [(p.path, p.message) for p in err.value.problems] == [("(file)", "is a directory, not a stack file")]


def test_size_limit_is_four_mebibytes_inclusive(tmp_path: Path):
    """Exactly MAX_BYTES is still read (and parsed); one byte more is refused before parsing, naming 4 MiB."""
    assert stackfile.MAX_BYTES == 4 * 1024 * 1024
    body = "config:\n  myorg:a: b\n"
    padded = body + "#" * (4 * 1024 * 1024 - len(body))
    assert _read(tmp_path, padded) == {"myorg:a": "b"}
    assert _problems(tmp_path, padded + "#") == [("(file)", "is larger than 4 MiB; not a stack file")]


def test_non_utf8_byte_is_named_with_its_line(tmp_path: Path):
    """The line number counts the newlines before the bad byte (1-based), and the byte is shown in hex."""
    assert _problems(tmp_path, b"config:\n  myorg:a: b\n  myorg:c: \xe9t\xe9\n") == [
        ("line 3", "is not UTF-8 text (byte 0xe9); save the file as UTF-8")
    ]
    assert _problems(tmp_path, b"\x80config: {}\n") == [
        ("line 1", "is not UTF-8 text (byte 0x80); save the file as UTF-8")
    ]
    # after a BOM the line and byte are still those of the bad byte (the BOM's three bytes shift nothing)
    assert _problems(tmp_path, b"\xef\xbb\xbfab\n\xff\n") == [
        ("line 2", "is not UTF-8 text (byte 0xff); save the file as UTF-8")
    ]
    assert _problems(tmp_path, b"\xef\xbb\xbf\xfe") == [
        ("line 1", "is not UTF-8 text (byte 0xfe); save the file as UTF-8")
    ]


# --------------------------------------------------------------------------------------- the document


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ("config", "a stack file needs a top-level 'config:' mapping (the file is empty)")),
        ("# only a comment\n", ("config", "a stack file needs a top-level 'config:' mapping (the file is empty)")),
        ("config:\n", ("config", "a stack file needs a top-level 'config:' mapping")),
        ("myorg:a: 1\n", ("config", "a stack file needs a top-level 'config:' mapping")),
        ("config: [a]\n", ("config", "a stack file needs a top-level 'config:' mapping")),
        ("- config\n", ("config", NOT_MAPPING + "a list")),
        ("~\n", ("config", NOT_MAPPING + "None")),
        ("true\n", ("config", NOT_MAPPING + "True")),
        ("12\n", ("config", NOT_MAPPING + "12")),
        ("hello\n", ("config", NOT_MAPPING + "the text 'hello'")),
    ],
)
def test_document_that_is_not_a_config_mapping(tmp_path: Path, text: str, expected: tuple[str, str]):
    """Whatever the top-level value is, the one problem says what was found instead of a mapping."""
    assert _problems(tmp_path, text) == [expected]


def test_top_level_text_is_quoted_up_to_40_characters(tmp_path: Path):
    """A 38-character word is quoted whole (repr 40); a 39-character one (repr 41) is cut to 20 characters."""
    assert _problems(tmp_path, "x" * 38) == [("config", NOT_MAPPING + "the text '" + "x" * 38 + "'")]
    assert _problems(tmp_path, "x" * 39) == [("config", NOT_MAPPING + "the text '" + "x" * 19 + "…' (39 characters)")]


def test_top_level_number_is_quoted_up_to_40_characters(tmp_path: Path):
    """A number's repr is cut by the same 40-character limit: 0xaaa… (34 a's) is a 41-digit integer (YAML 1.1
    hex; its digits are not counted by the 30-digit cap), 0xaaa… (33 a's) a 40-digit one."""
    forty_one = int("a" * 34, 16)
    forty = int("a" * 33, 16)
    assert (len(str(forty_one)), len(str(forty))) == (41, 40)
    assert _problems(tmp_path, "0x" + "a" * 33) == [("config", NOT_MAPPING + str(forty))]
    assert _problems(tmp_path, "0x" + "a" * 34) == [
        ("config", NOT_MAPPING + str(forty_one)[:20] + "…' (41 characters)")
    ]


def test_duplicate_top_level_key_is_reported_without_a_config_problem(tmp_path: Path):
    """A duplicate at the document level is its own problem; 'config' then being present is not another."""
    assert _problems(tmp_path, "config: {}\nconfig: {}\n") == [("config", "duplicate key 'config' (Pulumi refuses it)")]


# ------------------------------------------------------------------------------------------ YAML errors


def _parser_says(text: str) -> str:
    """What the YAML parser itself (the loader stackfile.read uses) says of ``text``, on one line: the wording
    is the parser's and changes between PyYAML/libyaml releases, so tests compare against it, not a copy."""
    loader = stackfile._Loader(text)
    try:
        with pytest.raises(yaml.YAMLError) as err:
            loader.construct_document(loader.get_single_node())
    finally:
        loader.dispose()
    return " ".join(str(getattr(err.value, "problem", None) or err.value).split())


def _tag_text(length: int) -> str:
    """A stack file whose unknown tag makes the parser's message exactly ``length`` characters long (the message
    quotes the tag, and each %20 in its URI reads as a blank: words of 'w ' keep every word short)."""
    base = _parser_says("config:\n  myorg:a: !x 1\n")
    extra = length - len(base)
    assert extra >= 0, base
    text = f"config:\n  myorg:a: !{'w%20' * (extra // 2)}{'xy' if extra % 2 else 'x'} 1\n"
    assert len(_parser_says(text)) == length
    return text


def test_yaml_error_names_its_line_and_the_parser_problem(tmp_path: Path):
    """A YAML error is one problem at the line the parser stopped on (1-based), with the parser's own text."""
    text = "config:\n  myorg:a: 1\n  myorg:b: *nope\n"
    (problem,) = _problems(tmp_path, text)
    assert problem == ("line 3", "not valid YAML: " + _parser_says(text))


def test_yaml_error_up_to_160_characters_is_kept_whole(tmp_path: Path):
    """The parser's message is cut only beyond 160 characters: exactly 160 is shown in full, no ellipsis."""
    text = _tag_text(160)
    where, message = _problems(tmp_path, text)[0]
    assert where == "line 2"
    assert message == "not valid YAML: " + _parser_says(text)


def test_yaml_error_beyond_160_characters_is_cut_with_an_ellipsis(tmp_path: Path):
    """161 characters: the first 160 are kept and '…' marks the cut; far longer, the same 160, even where the
    160th character is a blank (tag words are %20 in the tag's URI)."""
    blank = "config:\n  myorg:a: !" + "w%20" * 200 + " 1\n"
    for text in (_tag_text(161), _tag_text(400), blank):
        where, message = _problems(tmp_path, text)[0]
        assert where == "line 2"
        assert len(_parser_says(text)) > 160
        assert message == "not valid YAML: " + _parser_says(text)[:160] + "…"


def test_recursive_alias_and_deep_nesting(tmp_path: Path):
    """A self-referencing alias is refused (at the document's first line) before anything is expanded; nesting
    beyond 64 levels is refused at the line where it goes too deep, and 64 levels are still read."""
    assert _problems(tmp_path, "config:\n  myorg:a: &a [*a]\n") == [
        ("line 1", "an alias refers to a mapping or list that contains it (recursive alias)")
    ]
    ok = "config:\n  myorg:a: " + "[" * 62 + "]" * 62 + "\n"  # document + config mappings + 62 lists = 64 levels
    assert _read(tmp_path, ok)["myorg:a"] is not None
    deep = "config:\n  myorg:a: " + "[" * 63 + "]" * 63 + "\n"
    assert _problems(tmp_path, deep) == [("line 2", "nested more than 64 levels deep")]
    wide = "config:\n  myorg:a: [" + ", ".join(["[{}]"] * 100) + "]\n"  # depth is nesting, not a count
    assert len(_read(tmp_path, wide)["myorg:a"]) == 100


def _values_of_composed(text: str) -> int | str:
    """The straightforward count ``_scan`` replaces: compose the nodes, then walk them (an alias is the very node
    it names), every node 1 + its children, 'recursive' when a node contains itself."""
    loader = stackfile._Loader(text)
    try:
        root = loader.get_single_node()
    finally:
        loader.dispose()
    walking: set[int] = set()

    def values(node: yaml.Node) -> int | str:
        if id(node) in walking:
            return "recursive"
        if isinstance(node, yaml.ScalarNode):
            return 1
        walking.add(id(node))
        children = [n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode) else node.value
        counts = [values(child) for child in children]
        walking.discard(id(node))
        return "recursive" if "recursive" in counts else 1 + sum(counts)

    return values(root)


SHARED = {"model": "L4", "perNode": 1}
ALIASED_TEXTS = [
    yaml.safe_dump({"config": {"myorg:p": [{"gpu": SHARED, "n": i} for i in range(5)], "myorg:q": [SHARED] * 3}}),
    "config:\n  base: &b {x: 1, y: [1, 2]}\n  merged: {<<: *b, z: 3}\n  again: [*b, *b]\n",
    "config:\n  s: &s text\n  t: [*s, *s, *s]\n  outer: &o {inner: &i [1, 2, 3], more: *i}\n  u: [*o, *i]\n",
    "config:\n  a: &a [*a]\n",
    "config:\n  a: &a [{b: [*a]}]\n",
    "config:\n  a: &a [1]\n  b: &b {c: *a, d: &d [*b]}\n",
    "config: &top\n  a: *top\n",
]


@pytest.mark.parametrize("text", ALIASED_TEXTS, ids=range(len(ALIASED_TEXTS)))
def test_values_counted_from_events_are_those_of_the_composed_nodes(text: str):
    """``_scan`` counts the values after expanding aliases from the parser's events; a walk over the composed
    nodes gives the same number (or finds the same recursion): shared mappings, merge keys, scalar anchors,
    an alias inside an anchored list reused, recursion direct, indirect and through the document's root."""
    assert stackfile._scan(text) == (None, _values_of_composed(text))


def test_values_counted_from_events_on_every_shipped_stack():
    """Every shipped stack file: the scan's count is the composed nodes' count (none of them uses aliases)."""
    stacks = sorted((Path(__file__).resolve().parents[1] / "stacks").glob("Pulumi.*.yaml"))
    assert len(stacks) >= 10
    for path in stacks:
        text = path.read_text()
        assert stackfile._scan(text) == (None, _values_of_composed(text)), path.name


# ------------------------------------------------------------------------------------------------ keys


def test_duplicate_key_is_quoted_up_to_60_characters(tmp_path: Path):
    """A 58-character duplicate key (repr 60) is quoted whole; a 59-character one is cut to 40 characters."""
    k58, k59 = "k" * 58, "q" * 59
    text = f"config:\n  myorg:x:\n    {k58}: 1\n    {k58}: 2\n    {k59}: 1\n    {k59}: 2\n"
    assert _problems(tmp_path, text) == [
        (f"myorg:x.{k58}", f"duplicate key '{k58}' (Pulumi refuses it)"),
        (f"myorg:x.{k59}", "duplicate key '" + "q" * 39 + "…' (59 characters) (Pulumi refuses it)"),
    ]


def test_merge_key_is_not_a_duplicate(tmp_path: Path):
    """Two '<<' merge keys in one mapping are YAML merges, not duplicate keys."""
    text = "config:\n  myorg:b: &b {a: 1}\n  myorg:c: &c {d: 2}\n  myorg:x:\n    <<: *b\n    <<: *c\n    e: 3\n"
    assert _read(tmp_path, text)["myorg:x"] == {"a": 1, "d": 2, "e": 3}


def test_keys_that_yaml_does_not_read_as_names(tmp_path: Path):
    """Under our namespace, each non-string key gets the hint for what YAML made of it."""
    text = (
        "config:\n  gpu-platform:x:\n    on: 1\n    No: 2\n    true: 3\n    ~: 4\n    1: 5\n    2.5: 6\n    [a]: 7\n"
        "    ? {b: 1}\n    : 8\n"
    )
    assert sorted(_problems(tmp_path, text)) == sorted(
        [
            ("gpu-platform:x.on", "key 'on' is read as true by YAML 1.1: quote it ('on')"),
            ("gpu-platform:x.No", "key 'No' is read as false by YAML 1.1: quote it ('No')"),
            ("gpu-platform:x.true", "key 'true' is a boolean, not a name: quote it"),
            ("gpu-platform:x.~", "key '~' is read as null by YAML: quote it or give it a name"),
            ("gpu-platform:x.1", "key '1' is read as a number by YAML: quote it ('1')"),
            ("gpu-platform:x.2.5", "key '2.5' is read as a number by YAML: quote it ('2.5')"),
            ("gpu-platform:x.?", "key a list is not a string (mapping keys must be names)"),
            ("gpu-platform:x.?", "key a mapping is not a string (mapping keys must be names)"),
        ]
    )


def test_number_key_is_quoted_up_to_40_characters(tmp_path: Path):
    """The key as written is quoted through the 40-character limit: 38 characters whole, 39 cut to 20."""
    k38, k39 = "1." + "0" * 36, "2." + "0" * 37
    text = f"config:\n  gpu-platform:x:\n    {k38}: 1\n    {k39}: 2\n"
    assert _problems(tmp_path, text) == [
        (f"gpu-platform:x.{k38}", f"key '{k38}' is read as a number by YAML: quote it ('{k38}')"),
        (f"gpu-platform:x.{k39}", f"key '{k39[:19]}…' (39 characters) is read as a number by YAML: quote it ('{k39}')"),
    ]


def test_other_namespaces_keep_odd_keys_as_written_even_nested(tmp_path: Path):
    """Go's yaml.v3 keeps 'on:' or '1:' under another namespace as the text written, at any depth, values
    and all (a list value under such a key included)."""
    text = "config:\n  myorg:x:\n    on: [1, {2: b}]\n    inner: {off: [c], 3: d}\n"
    assert _read(tmp_path, text) == {"myorg:x": {"on": [1, {"2": "b"}], "inner": {"off": ["c"], "3": "d"}}}


def test_odd_key_directly_under_config_is_refused_even_unnamespaced(tmp_path: Path):
    """A top-level config key must be a name whatever its namespace: '1:' there is refused."""
    assert _problems(tmp_path, "config:\n  1: a\n") == [("1", "key '1' is read as a number by YAML: quote it ('1')")]


def test_odd_key_clashing_with_a_written_key_is_refused(tmp_path: Path):
    """Under another namespace, 'on:' next to a quoted 'on' would overwrite it: refused, not merged (it is
    also a duplicate of the key as written, which Pulumi refuses)."""
    assert _problems(tmp_path, "config:\n  myorg:x:\n    'on': 1\n    on: 2\n") == [
        ("myorg:x.on", "duplicate key 'on' (Pulumi refuses it)"),
        ("myorg:x.on", "key 'on' is read as true by YAML 1.1: quote it ('on')"),
    ]


# ---------------------------------------------------------------------------------------------- values


def test_values_json_cannot_hold_are_reported_at_their_path(tmp_path: Path):
    """!!set and non-text !!binary become problems at the exact key path, inside lists and mappings too."""
    text = "config:\n  myorg:a: [!!set {a}, {b: !!binary //79}]\n  myorg:c: !!binary aGVsbG8=\n"
    assert _problems(tmp_path, text) == [
        ("myorg:a[0]", "a !!set, which JSON cannot hold: write a list"),
        ("myorg:a[1].b", "a !!binary value that is not UTF-8 text; config values must be text"),
    ]


def test_binary_text_timestamps_and_long_integers(tmp_path: Path):
    """!!binary UTF-8 is its text, dates stay as written, and an integer of more than 30 digits stays text
    (as Go's yaml.v3 keeps an integer it cannot hold); 30 digits is still a number."""
    text = (
        f"config:\n  myorg:b: !!binary aGVsbG8=\n  myorg:d: 2025-11-20\n  myorg:n: {'1' * 31}\n  myorg:m: {'1' * 30}\n"
    )
    assert _read(tmp_path, text) == {
        "myorg:b": "hello",
        "myorg:d": "2025-11-20",
        "myorg:n": "1" * 31,
        "myorg:m": int("1" * 30),
    }


def test_alias_expansion_limit_is_200000_values(tmp_path: Path):
    """Values are counted after expanding aliases: a 1,000-node list (&a) used 198 times plus m more values.
    Nodes: document map + 'config' + config map + 2 keys = 5; list a = 1 + 999; list b = 1 + 198 x 1,000 + m;
    in all 199,006 + m: m = 994 is exactly 200,000 (read), m = 995 is refused."""
    a = "[" + ",".join(["x"] * 999) + "]"

    def text(m: int) -> str:
        b = "[" + ",".join(["*a"] * 198 + ["y"] * m) + "]"
        return f"config:\n  myorg:a: &a {a}\n  myorg:b: {b}\n"

    assert len(_read(tmp_path, text(994))["myorg:b"]) == 198 + 994
    assert _problems(tmp_path, text(995)) == [
        ("(file)", "expands to more than 200000 values through aliases; not a stack file")
    ]


def test_unreadable_file_names_the_os_reason(tmp_path: Path, monkeypatch):
    """A file that cannot be opened (permissions, I/O) is one problem with the OS's reason, or the error's own
    text when it has no reason."""
    path = tmp_path / "Pulumi.s.yaml"
    path.write_text("config: {}\n")

    def denied(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "open", denied)
    with pytest.raises(SpecError) as err:
        stackfile.read(path)
    assert [(p.path, p.message) for p in err.value.problems] == [("(file)", "cannot be read: Permission denied")]

    def bare(self, *args, **kwargs):
        raise OSError("device gone")

    monkeypatch.setattr(Path, "open", bare)
    with pytest.raises(SpecError) as err:
        stackfile.read(path)
    assert [(p.path, p.message) for p in err.value.problems] == [("(file)", "cannot be read: device gone")]


def test_event_count_limit_is_twice_the_value_limit(monkeypatch):
    """Before composing anything, the parser's events are counted: more than 2 x MAX_NODES is refused (shown
    with MAX_NODES lowered to 10, so 20 events; 'config: [n scalars]' is 9 + n events)."""
    monkeypatch.setattr(stackfile, "MAX_NODES", 10)
    assert stackfile._scan("config: [" + ",".join(["x"] * 11) + "]").problem is None  # 20 events
    assert stackfile._scan("config: [" + ",".join(["x"] * 12) + "]").problem == Problem(
        "(file)", "more than 10 values; not a stack file"
    )
