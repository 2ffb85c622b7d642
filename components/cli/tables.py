"""Aligned text tables for the terminal (``gpu-platform plan``): small and self-contained, no colour (another
module owns colour); every cell is plain text, so the table reads the same piped to a file."""

from __future__ import annotations

from collections.abc import Sequence


def _numeric(cell: str) -> bool:
    return bool(cell) and cell.lstrip("$").replace(".", "", 1).replace(",", "").replace("..", "").isdigit()


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    """Columns separated by two spaces, each as wide as its widest cell; a numeric column right-aligned; a rule of
    dashes under the headers. Trailing spaces are stripped."""
    cells = [list(map(str, headers)), *[list(map(str, r)) for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    right = [all(_numeric(r[i]) or r[i] in ("-", "") for r in cells[1:]) and bool(rows) for i in range(len(headers))]

    def line(r: list[str]) -> str:
        return (
            indent + "  ".join(c.rjust(w) if a else c.ljust(w) for c, w, a in zip(r, widths, right, strict=True))
        ).rstrip()

    return [line(cells[0]), (indent + "  ".join("-" * w for w in widths)).rstrip(), *[line(r) for r in cells[1:]]]
