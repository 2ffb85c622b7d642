"""The synth's report files (summary.md, cost.json, plan.html): made from one cost document and one lending graph
per synth, and written by faster means than the makers use alone (the synth's own JSON writer for cost.json, an
escape without the ``html`` module for plan.html). Each must still be the text its maker writes on its own."""

from __future__ import annotations

import html

import pytest
from conftest import STACKS, rendered

from components.cli import plan_html, synth
from components.explain.summary import summary
from components.plan import cost, plan


@pytest.mark.parametrize("stack", STACKS)
def test_a_shipped_stacks_reports_are_the_text_each_maker_writes_alone(stack):
    """summary.md, cost.json and plan.html of a synth, byte for byte what ``summary``, ``cost.to_json`` (the
    standard library's indenting encoder) and ``plan_html.page`` write when each makes its own cost document and
    lending graph."""
    rendering = rendered(stack)
    out = synth.files(rendering)
    decided = plan.build(rendering.spec, rendering.stack)
    assert out["cost.json"] == cost.to_json(cost.report_of(decided))
    assert out["summary.md"] == summary(rendering, {})
    assert out["plan.html"] == plan_html.page(decided)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "plain-name",
        "<script>alert('x')</script>",
        'a "quoted" & <tagged> \'text\'',
        "&amp; already escaped &lt;",
        "h100 ⚠ 8 GPUs in no quota\n$12.50/h",
        "&&<<>>\"\"''",
    ],
)
def test_html_escaping_is_the_standard_librarys(text):
    """plan.html's escape (no ``html`` import) replaces what ``html.escape(quote=True)`` replaces, ampersands first
    (so an escaped entity is escaped again, never left as markup)."""
    assert plan_html.escape(text) == html.escape(text, quote=True)
