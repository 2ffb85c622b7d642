"""A uniform random sample of mutmut's mutants over all of components/ and policies/, and its score.

    python scripts/mutation_sample.py pick [--size N] [--seed S]   # generate mutants, print a sample's names
    python scripts/mutation_sample.py score [--sample FILE]         # score of the sample, with a 95 % interval

Every mutant of the tree is about 23,000; mutmut checks 7-12 a minute on 2 cores, so the whole tree is days
of compute. A simple random sample estimates the score over the whole tree with a known error: the sample's
score and its Wilson 95 % interval (``make mutate-sample``). The sample is drawn with a fixed seed from the
sorted list of every mutant's name, so the same tree and seed give the same sample. Mutants listed as
equivalent (tests/mutation-equivalents.md) are left out of the score, as in scripts/mutation_report.py.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from mutation_report import _status, equivalents  # noqa: E402

SAMPLE = ROOT / "mutants" / "sample.txt"


def generate() -> None:
    """mutmut 3's own mutant generation (the first step of ``mutmut run``), without running anything."""
    os.chdir(ROOT)
    from mutmut.__main__ import create_mutants
    from mutmut.mutation.trampoline import set_mutant_under_test
    from mutmut.utils.file_utils import copy_also_copy_files, copy_src_dir, setup_source_paths

    set_mutant_under_test("mutant_generation")
    (ROOT / "mutants").mkdir(exist_ok=True)
    copy_src_dir()
    copy_also_copy_files()
    setup_source_paths()
    create_mutants(os.cpu_count() or 2)


def all_results(mutants: Path) -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for meta in sorted(mutants.rglob("*.py.meta")):
        out.update(json.loads(meta.read_text()).get("exit_code_by_key", {}))
    return out


def pick(names: list[str], size: int, seed: int) -> list[str]:
    return sorted(random.Random(seed).sample(sorted(names), min(size, len(names))))


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for k successes in n trials."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (centre - half, centre + half)


def module_of(name: str) -> str:
    """``components.explain`` for ``components.explain.x_f__mutmut_3`` and for a method's mutant,
    ``components.explain.xǁ_Tracerǁnode__mutmut_17`` (mutmut 3 writes ``xǁClassǁmethod``)."""
    return re.split(r"\.x[_ǁ]", name, maxsplit=1)[0]


def score(results: dict[str, int | None], sample: list[str], eq: set[str]) -> tuple[Counter, Counter]:
    total: Counter = Counter()
    by_module: Counter = Counter()
    for name in sample:
        status = "equivalent" if name in eq else _status(results.get(name))
        total[status] += 1
        by_module[(module_of(name), status)] += 1
    return total, by_module


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pick")
    p.add_argument("--size", type=int, default=600)
    p.add_argument("--seed", type=int, default=18)
    p.add_argument("--no-generate", action="store_true", help="mutants/ already holds this tree's mutants")
    s = sub.add_parser("score")
    s.add_argument("--sample", type=Path, default=SAMPLE)
    ap.add_argument("--mutants", type=Path, default=ROOT / "mutants")
    ap.add_argument("--equivalents", type=Path, default=ROOT / "tests" / "mutation-equivalents.md")
    args = ap.parse_args(argv)

    if args.cmd == "pick":
        if not args.no_generate:
            generate()
        names = list(all_results(args.mutants))
        chosen = pick(names, args.size, args.seed)
        SAMPLE.write_text("".join(n + "\n" for n in chosen))
        print(f"{len(chosen)} of {len(names)} mutants, seed {args.seed}: {SAMPLE.relative_to(ROOT)}", file=sys.stderr)
        print(" ".join(chosen))
        return 0

    sample = args.sample.read_text().split()
    total, by_module = score(all_results(args.mutants), sample, equivalents(args.equivalents))
    modules = sorted({m for m, _ in by_module})
    cols = ("killed", "survived", "no tests", "equivalent", "timeout", "not run")
    print(f"{'module':45} " + " ".join(f"{c:>10}" for c in cols))
    for m in modules:
        print(f"{m:45} " + " ".join(f"{by_module[(m, c)]:>10}" for c in cols))
    scored = total["killed"] + total["survived"] + total["no tests"]
    print(f"{'sample':45} " + " ".join(f"{total[c]:>10}" for c in cols))
    if scored:
        lo, hi = wilson(total["killed"], scored)
        print(
            f"score {100 * total['killed'] / scored:.1f} % of {scored} scored mutants "
            f"(95 % Wilson interval {100 * lo:.1f}-{100 * hi:.1f} %)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
