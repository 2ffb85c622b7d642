"""Per-module mutation score from mutmut 3's results (``mutants/**/*.meta``), after ``make mutate``.

    python scripts/mutation_report.py [--equivalents tests/mutation-equivalents.md] [MODULE_PREFIX ...]

Score = killed / (killed + survived + no tests), equivalent mutants (listed by name in the first column of
tests/mutation-equivalents.md) left out. "no tests" counts as surviving: no test reaches the code. Timeouts are
shown apart and left out of the score: on a loaded machine a child can hit mutmut's wall limit while still
rendering, so a timeout is no evidence of a kill. Mutants not run yet are counted apart.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# mutmut 3's exit codes (mutmut/stats.py status_by_exit_code), folded into what the score needs
_STATUS = {1: "killed", 3: "killed", 37: "killed", 0: "survived", 5: "no tests", 33: "no tests"}
_STATUS |= dict.fromkeys((36, -24, 24, 152, 255), "timeout")


def _status(code: int | None) -> str:
    if code is None:
        return "not run"
    return _STATUS.get(code, "other")


def equivalents(path: Path) -> set[str]:
    if not path.exists():
        return set()
    return set(re.findall(r"^\|\s*`?([\w.]+__mutmut_\d+)`?\s*\|", path.read_text(), re.M))


def report(mutants: Path, eq: set[str], prefixes: list[str]) -> list[tuple[str, Counter]]:
    rows = []
    for meta in sorted(mutants.rglob("*.py.meta")):
        module = ".".join(meta.relative_to(mutants).with_suffix("").with_suffix("").parts)
        if prefixes and not any(module.startswith(p) for p in prefixes):
            continue
        codes = json.loads(meta.read_text()).get("exit_code_by_key", {})
        c = Counter("equivalent" if key in eq else _status(code) for key, code in codes.items())
        if codes:
            rows.append((module, c))
    return rows


COLUMNS = ("killed", "survived", "no tests", "equivalent", "timeout", "not run")


def _row(name: str, c: Counter) -> str | None:
    scored = c["killed"] + c["survived"] + c["no tests"]
    if not scored:
        return None
    return f"{name:45} " + " ".join(f"{c[k]:>10}" for k in COLUMNS) + f"  {100 * c['killed'] / scored:5.1f} %"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("prefixes", nargs="*")
    ap.add_argument("--mutants", type=Path, default=ROOT / "mutants")
    ap.add_argument("--equivalents", type=Path, default=ROOT / "tests" / "mutation-equivalents.md")
    args = ap.parse_args(argv)
    rows = report(args.mutants, equivalents(args.equivalents), args.prefixes)
    print(f"{'module':45} " + " ".join(f"{k:>10}" for k in COLUMNS) + "  score")
    total: Counter = Counter()
    for module, c in rows:
        total += c
        line = _row(module, c)
        if line:
            print(line)
    print(_row("total (modules run)", total) or "no mutant run yet")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
