"""The synth's report files (summary.md, cost.json, plan.html): made from one cost document and one lending graph
per synth, and written by faster means than the makers use alone (the synth's own JSON writer for cost.json, an
escape without the ``html`` module for plan.html). Each must still be the text its maker writes on its own."""

from __future__ import annotations

import html
import json

import pytest
from conftest import STACKS, rendered

from components.cli import plan_html, synth
from components.explain.summary import summary
from components.plan import cost, json_text, plan


def _stock_json(doc) -> str:
    return json.dumps(json_text.ints(doc), indent=2, sort_keys=True) + "\n"


@pytest.mark.parametrize("stack", STACKS)
def test_a_shipped_stacks_reports_are_the_text_each_maker_writes_alone(stack):
    """summary.md, cost.json and plan.html of a synth, byte for byte what ``summary``, the standard library's
    indenting encoder (whole floats as ints) and ``plan_html.page`` write when each makes its own cost document and
    lending graph."""
    rendering = rendered(stack)
    out = synth.files(rendering)
    decided = plan.build(rendering.spec, rendering.stack)
    assert out["cost.json"] == _stock_json(cost.report_of(decided))
    assert out["summary.md"] == summary(rendering, {})
    assert out["plan.html"] == plan_html.page(decided)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "plain-name",
        "<script>alert('x')</script>",
        "a \"quoted\" & <tagged> 'text'",
        "&amp; already escaped &lt;",
        "h100 ⚠ 8 GPUs in no quota\n$12.50/h",
        "&&<<>>\"\"''",
    ],
)
def test_html_escaping_is_the_standard_librarys(text):
    """plan.html's escape (no ``html`` import) replaces what ``html.escape(quote=True)`` replaces, ampersands first
    (so an escaped entity is escaped again, never left as markup)."""
    assert plan_html.escape(text) == html.escape(text, quote=True)


@pytest.mark.parametrize("stack", STACKS)
def test_the_cost_configmap_holds_the_text_json_dumps_writes(stack):
    """The cost document's ConfigMap (``cost.configmap``, what the budget policies read) holds ``cost.to_json``'s
    text, byte for byte the standard library's indenting encoder's (whole floats as ints)."""
    rendering = rendered(stack)
    doc = cost.report_of(plan.build(rendering.spec, rendering.stack))
    [held] = [
        m["data"][cost.CONFIGMAP_KEY]
        for m in rendering.manifests
        if m["kind"] == "ConfigMap" and m["metadata"]["name"] == cost.CONFIGMAP_NAME
    ]
    assert held == cost.to_json(doc) == _stock_json(doc)
