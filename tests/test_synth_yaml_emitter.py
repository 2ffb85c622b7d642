"""The synth's direct YAML emitter (``synth_yaml._yaml``) writes, byte for byte, what PyYAML with libyaml writes
(``_yaml_stock``): on every document of every shipped stack and of the benchmark's 200-tenant stack, on texts
at the edges of the emitter's decisions (quoting, literal blocks, folding at 120 characters, long keys), and on
random JSON-like documents; and it does write the shipped documents itself rather than leaving them to PyYAML."""

from __future__ import annotations

import random

import pytest
from conftest import STACKS, rendered

from components.cli import synth_yaml


def _documents(rendering) -> list:
    """What the synth writes as YAML: every manifest and every Helm release's values."""
    return [*rendering.manifests, *((r.inputs.get("values") or {}) for r in rendering.releases)]


def _direct(doc) -> bool:
    """Whether the direct emitter writes ``doc`` itself (rather than handing it to PyYAML)."""
    try:
        synth_yaml._document(doc, [])
    except synth_yaml._NotPlain:
        return False
    return True


def _same(docs) -> None:
    for doc in docs:
        assert synth_yaml._yaml(doc) == synth_yaml._yaml_stock(doc), doc


@pytest.mark.parametrize("stack", STACKS)
def test_every_shipped_document_is_what_pyyaml_writes_and_written_directly(stack):
    docs = _documents(rendered(stack))
    _same(docs)
    stock_way = [doc for doc in docs if not _direct(doc)]
    assert len(stock_way) <= 0.05 * len(docs), f"{len(stock_way)} of {len(docs)} went the stock way: {stock_way[:3]}"


def test_the_benchmark_stack_is_what_pyyaml_writes():
    """The benchmark's generated stack (every pool shape and sharing strategy; 40 of its tenants, whose documents
    differ from the 200-tenant stack's only in names and quotas: the 200- and 1,000-tenant stacks were compared
    whole when the emitter came in, none differing or falling back)."""
    from bench_synth import generated_config
    from conftest import render_config

    docs = _documents(render_config(generated_config(tenants=40, pools_n=12), "bench"))
    assert len(docs) > 200
    _same(docs)
    assert all(_direct(doc) for doc in docs)


EDGES = [
    "",
    "0",
    "1",
    "-1",
    "true",
    "No",
    "~",
    "null",
    "1.5",
    ".5",
    "1e3",
    "1_000",
    "0x1F",
    "2001-12-14",
    "1:20",
    "<<",
    "=",
    "--flag=x",
    "-",
    "- x",
    "---",
    "...x",
    "?",
    "?x",
    ":x",
    "a:",
    "a:b",
    "a: b",
    "a #b",
    "a#b",
    "#a",
    "it's",
    "'q'",
    '"d"',
    " lead",
    "trail ",
    "a  b",
    "tab\tin",
    "ünï",
    "cr\r",
    "a\nb",
    "a\nb\n",
    "a\n\nb",
    "a\n\n",
    "\na",
    " a\nb",
    "a \nb",
    "a\n b",
    "a\nb ",
    "a\n  \nb",
    "\n",
    "x" * 117 + " y",
    "x" * 118 + " y",
    "x" * 118 + "  y",
    " ".join(["word"] * 60),
    "'" + " ".join(["it's"] * 40) + "'",
    " " + "x" * 130 + " y ",
    "a " + "b" * 130 + " c",
]


@pytest.mark.parametrize("text", EDGES)
def test_texts_at_the_edges_of_the_emitters_decisions(text):
    docs = [
        {"k": text},
        {"key" * 30: text},
        {text: 1},
        [text],
        [[text]],
        {"a": [{"b": {"c": text, "d": [text]}}]},
        {"k" * 128: text, "k" * 129: 1, "k" * 127: [text]},
    ]
    _same(docs)


def test_collections_and_numbers():
    _same(
        [
            {},
            [],
            [{}],
            [[]],
            [[[]]],
            {"a": {}, "b": [], "c": [{}, [], [[1, {}]], {"d": [[]]}]},
            [{"a": 1, "b": [2, {"c": 3}]}, [4, [5]]],
            {"n": [0, -7, 10**30, True, False, None, 2.0, -0.0, 1e17, 0.5, float("nan"), float("inf")]},
            {1: "non-string key"},
            {"a": (1, 2)},
            "top-level text",
            7,
            None,
        ]
    )


TOKENS = [
    *("true", "false", "null", "yes", "no", "on", "off", "~", "Y", "n", "NULL", "True"),
    *("0", "1", "-1", "+1", "1e3", "0x1F", "0o17", "1_000", ".5", "1.5", "-.inf", ".NaN", "1:20", "2001-12-14"),
    *(" ", " ", " ", "  ", ":", "#", "-", "?", "'", '"', "\n", "\n", ",", "[", "}", "&", "*", "!", "|", ">"),
    *("%", "@", "`", ".", "/", "=", "<<", "a", "Z", "9", "abc", "name"),
]
RARE = ["\t", "é", "☃", "\r", "\x85", "\u2028", "\x00"]  # any of them sends a whole document the stock way


def _token(rng: random.Random) -> str:
    return rng.choice(RARE) if rng.random() < 0.01 else rng.choice(TOKENS)


def _text(rng: random.Random) -> str:
    if rng.random() < 0.15:  # long: words and blanks around the 120-column fold, sometimes over lines
        words = [rng.choice(["x" * rng.randint(1, 40), "it's", "a", "#", "-", ":"]) for _ in range(rng.randint(2, 12))]
        return "".join(w + rng.choice([" ", " ", " ", "  ", "\n", ""]) for w in words).strip(rng.choice(["", " "]))
    return "".join(_token(rng) for _ in range(rng.randint(0, 4)))


def _value(rng: random.Random, depth: int):
    roll = rng.random()
    if depth < 4 and roll < 0.25:
        return {_key(rng): _value(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    if depth < 4 and roll < 0.4:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if roll < 0.8:
        return _text(rng)
    return rng.choice([0, 1, -5, 10**20, True, False, None, 3.0, -0.0, 2.5])


def _key(rng: random.Random) -> str:
    if rng.random() < 0.05:
        return "k" * rng.randint(110, 135) + rng.choice(["", " x"])
    text = _text(rng)
    return text if rng.random() < 0.05 else text.replace("\n", "")  # a multi-line key goes the stock way


def test_random_documents_are_what_pyyaml_writes():
    """Seeded: 3,000 documents of nested mappings and sequences whose texts mix YAML's special words, numbers as
    text, indicators, blanks, line breaks, tabs and non-ASCII; most of them go the direct way."""
    rng = random.Random(20260501)
    docs = [{_key(rng): _value(rng, 1) for _ in range(rng.randint(1, 5))} for _ in range(3000)]
    direct = 0
    for doc in docs:
        assert synth_yaml._yaml(doc) == synth_yaml._yaml_stock(doc), doc
        direct += _direct(doc)
    assert direct > 0.5 * len(docs)  # or the test would mostly compare PyYAML with itself


def test_random_long_lines_fold_where_pyyaml_folds_them():
    """Seeded: one-line texts of words and blanks (single and double, quotes inside, sometimes quoted as a whole
    for a leading blank or a YAML word first) running past column 120 from keys and dashes at many columns."""
    rng = random.Random(42)
    words = ["x", "it's", "ab", "-", "#", "true", "0", "y" * 30, "z" * 70]
    folded = 0
    for _ in range(1500):
        text = rng.choice(["", " ", "0 ", "'"]) + "".join(
            rng.choice(words) + rng.choice([" ", " ", " ", "  "]) for _ in range(rng.randint(1, 40))
        )
        text = text.rstrip(rng.choice(["", " "]))
        key = "k" * rng.randint(1, 100)
        value, lines = rng.choice([(text, 1), ([text], 2), ({"a": [{key: text}]}, 3), ([[text]], 2)])
        doc = {key: value}
        written = synth_yaml._yaml(doc)
        assert written == synth_yaml._yaml_stock(doc), doc
        assert _direct(doc)
        folded += written.count("\n") > lines
    assert folded > 500


def test_without_libyaml_every_document_goes_the_stock_way(monkeypatch):
    """The direct emitter mirrors libyaml's; PyYAML's Python emitter writes an empty key as ``? ''``."""
    calls = []
    monkeypatch.setattr(synth_yaml, "_LIBYAML", False)
    monkeypatch.setattr(synth_yaml, "_yaml_stock", lambda doc: calls.append(doc) or "stock")
    assert synth_yaml._yaml({"a": 1}) == "stock" and calls == [{"a": 1}]
    assert synth_yaml._LIBYAML is False


def test_libyaml_is_what_the_stock_way_uses_here():
    """Or the comparisons above would compare the Python emitter with itself through the fallback."""
    import yaml

    assert yaml.__with_libyaml__ and synth_yaml._LIBYAML
