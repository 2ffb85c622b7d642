"""What `check`, `cost` and `explain` print for a person (issue 41, point 6): no Markdown marks and no Python
literals on a terminal, tables as aligned columns, colour for FAIL, violations and warnings only on a terminal
(plain when piped, none under NO_COLOR), the Markdown form of the cost report on request."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT

from components.cli import main as cli, terminal
from components.cli.outcome import violation_line

STACKS = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))
CORPUS = ROOT / "tests" / "sched" / "corpus"
ESC = "\x1b["
# what str() of a dict, a list or None leaves in a message (a condition's status "False" or a YAML flow snippet
# to copy, {type: DisruptionTarget, status: 'True'}, are the user's own notation, not Python's)
PYTHON_LITERAL = re.compile(r"\{'|\['|'\w[^']*': |\bNone\b")
MARKDOWN = re.compile(r"^#+ |^\|.*\|$|\*\*|`|(?<![\w*])\*\S[^*]*\*(?![\w*])", re.M)


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


# ---------------------------------------------------------------------------------------------------- colour


def test_colour_only_on_a_terminal_and_never_under_no_color_or_a_dumb_terminal(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    assert terminal.colour_on(Tty()) is True
    assert terminal.colour_on(io.StringIO()) is False  # piped or redirected
    monkeypatch.setenv("NO_COLOR", "1")
    assert terminal.colour_on(Tty()) is False
    monkeypatch.setenv("NO_COLOR", "")  # no-color.org: set *and not empty*
    assert terminal.colour_on(Tty()) is True
    monkeypatch.setenv("TERM", "dumb")
    assert terminal.colour_on(Tty()) is False


def test_paint_wraps_in_sgr_codes_only_when_on():
    assert terminal.Paint(True)("FAIL", "bold+red") == "\x1b[1;31mFAIL\x1b[0m"
    assert terminal.Paint(True)("ok", "green") == "\x1b[32mok\x1b[0m"
    assert terminal.Paint(False)("FAIL", "bold+red") == "FAIL"
    assert terminal.width("\x1b[1;31mFAIL\x1b[0m") == 4


# ---------------------------------------------------------------------------------------- Markdown as text


def test_inline_markdown_marks_are_dropped_and_links_keep_their_target():
    text = "**$464.70** per hour; *unknown*: add `gpu-platform:pricing.overrides` ([Cost](concepts/cost.md)), a\\|b"
    assert terminal.inline(text) == (
        "$464.70 per hour; unknown: add gpu-platform:pricing.overrides (Cost (concepts/cost.md)), a|b"
    )
    assert terminal.inline("**bold**", terminal.Paint(True)) == "\x1b[1mbold\x1b[0m"
    assert terminal.inline("2 * 3 * 4") == "2 * 3 * 4"  # not emphasis


def test_a_table_becomes_columns_two_spaces_apart_with_figures_right_aligned():
    rows = [
        "| pool | capacity | node spot | GPUs |",
        "|---|---|---|---|",
        "| a100-train | on-demand | - | 0..32 |",
        "| h100-spot | spot (+fallback) | $33.02 (est.) | 0..8 |",
    ]
    assert terminal.table(rows) == [
        "pool        capacity              node spot   GPUs",
        "----------  ----------------  -------------  -----",
        "a100-train  on-demand                     -  0..32",
        "h100-spot   spot (+fallback)  $33.02 (est.)   0..8",
    ]


def test_columns_stay_aligned_when_cells_are_coloured():
    rows = ["| a | b |", "|---|---|", "| **x** | 1 |", "| yy | 22 |"]
    lines = terminal.table(rows, terminal.Paint(True))
    plain = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in lines]
    assert plain == ["a    b", "--  --", "x    1", "yy  22"]


# ------------------------------------------------------------------------------------------------ commands


@pytest.mark.parametrize("stack", STACKS)
def test_cost_text_carries_no_markdown_or_python_literals_and_markdown_on_request(stack, capsys):
    assert cli.main(["cost", stack]) == cli.EXIT_OK
    text = capsys.readouterr().out
    assert MARKDOWN.findall(text) == [] and PYTHON_LITERAL.findall(text) == []
    assert ESC not in text  # captured output is not a terminal
    header = next(line for line in text.splitlines() if line.startswith("pool "))
    rule = text.splitlines()[text.splitlines().index(header) + 1]
    assert set(rule) == {"-", " "}  # the header's dashed rule
    assert cli.main(["cost", stack, "--markdown"]) == cli.EXIT_OK
    markdown = capsys.readouterr().out
    assert markdown.startswith("## Cost\n") and "|---|" in markdown


def test_cost_takes_json_or_markdown_not_both(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["cost", "dev-aws", "--json", "--markdown"])
    assert exit_.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_cost_on_a_terminal_is_bold_where_the_markdown_is_strong(monkeypatch, capsys):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    tty = Tty()
    monkeypatch.setattr(sys, "stdout", tty)
    assert cli.main(["cost", "prod-aws"]) == cli.EXIT_OK
    assert "Whole stack at max scale: \x1b[1m$464.70\x1b[0m per hour" in tty.getvalue()


def _corpus(stack: str) -> list[Path]:
    return sorted((CORPUS / stack).glob("*.yaml"))


@pytest.mark.parametrize("stack", ["prod-aws", "prod-gcp", "dra-existing"])
def test_explain_text_carries_no_python_literals_or_markdown(stack, capsys):
    """Every scenario of the scheduler corpus (running and pending, every layer's failure) as a person reads it."""
    texts = []
    for path in _corpus(stack):
        cli.main(["explain", stack, str(path)])
        texts.append(capsys.readouterr().out)
    text = "".join(texts)
    assert "FAIL" in text and "verdict: runs" in text  # both kinds are covered
    assert PYTHON_LITERAL.findall(text) == []
    assert [m for m in MARKDOWN.findall(text) if m != "`"] == [] and ESC not in text


def _pending_workload(tmp_path: Path) -> Path:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "lost", "namespace": "ml-nowhere"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}], "restartPolicy": "Never"}}},
    }
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump(job))
    return path


def test_explain_colours_fail_and_the_pending_verdict_on_a_terminal_only(tmp_path, monkeypatch, capsys):
    workload = str(_pending_workload(tmp_path))
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    tty = Tty()
    monkeypatch.setattr(sys, "stdout", tty)
    assert cli.main(["explain", "dev-aws", workload]) == 3
    assert "namespace        \x1b[1;31mFAIL\x1b[0m ml-nowhere is not a tenant namespace" in tty.getvalue()
    assert "  verdict: \x1b[31mpending at namespace:" in tty.getvalue()
    monkeypatch.setenv("NO_COLOR", "1")
    tty = Tty()
    monkeypatch.setattr(sys, "stdout", tty)
    cli.main(["explain", "dev-aws", workload])
    assert ESC not in tty.getvalue() and "namespace        FAIL ml-nowhere" in tty.getvalue()
    monkeypatch.undo()
    assert cli.main(["explain", "dev-aws", workload]) == 3
    assert ESC not in capsys.readouterr().out  # piped


class _Finding:
    def __init__(self, level: str) -> None:
        self.enforcement_level = level

    def line(self) -> str:
        return f"policy {self.enforcement_level} gpu-budget: stack: over the budget"


def test_a_mandatory_violation_is_red_an_advisory_one_yellow_and_both_plain_when_off():
    on, off = terminal.Paint(True), terminal.Paint(False)
    assert (
        violation_line(_Finding("mandatory"), on)
        == "policy \x1b[1;31mmandatory\x1b[0m gpu-budget: stack: over the budget"
    )
    assert (
        violation_line(_Finding("advisory"), on) == "policy \x1b[33madvisory\x1b[0m gpu-budget: stack: over the budget"
    )
    assert violation_line(_Finding("mandatory"), off) == "policy mandatory gpu-budget: stack: over the budget"


def test_check_colours_its_verdict_and_warnings_on_a_terminal_only(monkeypatch, capsys):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    out, err = Tty(), Tty()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    assert cli.main(["check", "dev-aws"]) == cli.EXIT_OK
    assert out.getvalue().splitlines()[-1].startswith("\x1b[33mdev-aws: valid with 1 warning")
    assert err.getvalue().startswith("\x1b[33mwarning:\x1b[0m gpu-platform:")
    monkeypatch.undo()
    assert cli.main(["check", "dev-aws"]) == cli.EXIT_OK
    captured = capsys.readouterr()
    assert ESC not in captured.out + captured.err
    assert PYTHON_LITERAL.findall(captured.out + captured.err) == []
