"""Text for a person at a terminal: colour only where it is seen, and reports written in Markdown (the sections
summary.md shares with ``gpu-platform cost``) as aligned plain text.

Colour follows the common conventions: only when the stream is a terminal (plain when piped or redirected), never
when ``NO_COLOR`` is set to anything (https://no-color.org) or ``TERM`` is ``dumb``. No library: the runtime lock
has none for it (rich is a development tool's dependency only), and a few SGR codes are all this needs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

# SGR parameters (ECMA-48): styles combine with "+", e.g. "bold+red"
_SGR = {"bold": "1", "red": "31", "green": "32", "yellow": "33"}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def colour_on(stream: Any) -> bool:
    """Whether text written to ``stream`` may carry colour."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())


class Paint:
    """``paint(text, "bold+red")``: the text in that style when on, else the text unchanged."""

    def __init__(self, on: bool) -> None:
        self.on = on

    def __call__(self, text: str, style: str) -> str:
        if not self.on or not text:
            return text
        return f"\x1b[{';'.join(_SGR[s] for s in style.split('+'))}m{text}\x1b[0m"


def paint_for(stream: Any) -> Paint:
    return Paint(colour_on(stream))


PLAIN = Paint(False)


def width(text: str) -> int:
    """The columns ``text`` takes on a terminal (colour codes take none)."""
    return len(_ANSI.sub("", text))


# ------------------------------------------------------------------------------------------- Markdown as text


def inline(text: str, paint: Paint = PLAIN) -> str:
    """One line of Markdown as text: links as "text (target)", **strong** in bold, no *emphasis* or `code` marks,
    escaped pipes unescaped."""
    text = re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", r"\1 (\2)", text)
    text = re.sub(r"\*\*(.+?)\*\*", lambda m: paint(m.group(1), "bold"), text)
    text = re.sub(r"(?<![\w*])\*(?=\S)(.+?)(?<=\S)\*(?![\w*])", r"\1", text)
    text = re.sub(r"`([^`]*)`", r"\1", text)
    return text.replace("\\|", "|")


def _cells(row: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", row.strip())[1:-1]]


# a figure alone in its cell (a count, a range, a price, maybe marked estimated): right-aligned
_FIGURE = re.compile(r"^(\$?[0-9][0-9,]*(\.[0-9]+)?(\.\.[0-9]+)?(/h)?( \(est\.\))?|unknown|-)$")


def table(rows: list[str], paint: Paint = PLAIN) -> list[str]:
    """A Markdown table as columns two spaces apart under a dashed rule, figures right-aligned."""
    cells = [[inline(c, paint) for c in _cells(r)] for r in rows if not re.fullmatch(r"\|?[\s|:-]+\|?", r.strip())]
    n = max(len(r) for r in cells)
    cells = [r + [""] * (n - len(r)) for r in cells]
    header, body = cells[0], cells[1:]
    widths = [max(width(r[i]) for r in cells) for i in range(n)]
    right = [bool(body) and all(_FIGURE.match(_ANSI.sub("", r[i])) for r in body if r[i]) for i in range(n)]

    def line(row: list[str]) -> str:
        padded = [
            " " * (w - width(c)) + c if r else c + " " * (w - width(c))
            for c, w, r in zip(row, widths, right, strict=True)
        ]
        return "  ".join(padded).rstrip()

    return [line([paint(h, "bold") for h in header]), "  ".join("-" * w for w in widths), *map(line, body)]


def markdown_text(lines: Iterable[str], paint: Paint = PLAIN) -> list[str]:
    """Report lines written in Markdown (headings, tables, paragraphs, lists) as plain, aligned text."""
    out: list[str] = []
    block: list[str] = []
    for raw in [*lines, ""]:
        if raw.lstrip().startswith("|"):
            block.append(raw)
            continue
        if block:
            out += table(block, paint)
            block = []
        heading = re.match(r"^#{1,6}\s+(.*)$", raw)
        out.append(paint(inline(heading.group(1)), "bold") if heading else inline(raw, paint))
    return out[:-1]
