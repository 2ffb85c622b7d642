"""The scripts that turn mutmut's results into the reported scores (scripts/mutation_report.py and
scripts/mutation_sample.py): a wrong status mapping or interval would misreport every run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import mutation_report  # noqa: E402
import mutation_sample  # noqa: E402


def test_exit_codes_fold_as_mutmut_names_them():
    from mutmut.stats import status_by_exit_code

    fold = {"killed": "killed", "survived": "survived", "no tests": "no tests", "timeout": "timeout"}
    for code, status in status_by_exit_code.items():
        if code is None:
            assert mutation_report._status(code) == "not run"
        elif status in fold:
            assert mutation_report._status(code) == fold[status], code
        elif status == "caught by type check":
            assert mutation_report._status(code) == "killed"
        else:  # interrupted, skipped, suspicious, segfault: no evidence either way
            assert mutation_report._status(code) == "other", code


def test_equivalents_are_read_from_the_first_column(tmp_path):
    md = tmp_path / "eq.md"
    md.write_text(
        "| mutant | reason |\n|---|---|\n"
        "| `policies.a.x_f__mutmut_3` | because |\n"
        "| components.b.x_g__mutmut_12 | mentions `components.c.x_h__mutmut_1` in the reason |\n"
    )
    assert mutation_report.equivalents(md) == {"policies.a.x_f__mutmut_3", "components.b.x_g__mutmut_12"}


def _meta(root: Path, rel: str, codes: dict) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"exit_code_by_key": codes}))


def test_sample_score_counts_each_status(tmp_path):
    _meta(tmp_path, "components/a.py.meta", {f"components.a.x_f__mutmut_{i}": 1 for i in range(1, 8)})
    _meta(
        tmp_path,
        "policies/b.py.meta",
        {
            "policies.b.x_g__mutmut_1": 0,
            "policies.b.x_g__mutmut_2": 33,
            "policies.b.x_g__mutmut_3": 36,
            "policies.b.x_g__mutmut_4": None,
            "policies.b.x_g__mutmut_5": 0,
            "policies.b.xǁReportǁmarkdown__mutmut_1": 0,
        },
    )
    results = mutation_sample.all_results(tmp_path)
    assert len(results) == 13
    sample = [
        *(f"components.a.x_f__mutmut_{i}" for i in (1, 2, 3)),
        *(f"policies.b.x_g__mutmut_{i}" for i in range(1, 6)),
        "policies.b.xǁReportǁmarkdown__mutmut_1",
    ]
    total, by_module = mutation_sample.score(results, sample, {"policies.b.x_g__mutmut_5"})
    assert dict(total) == {"killed": 3, "survived": 2, "no tests": 1, "timeout": 1, "not run": 1, "equivalent": 1}
    assert by_module[("components.a", "killed")] == 3
    assert by_module[("policies.b", "survived")] == 2  # a method's mutant counts under its module


def test_pick_is_a_seeded_uniform_sample_independent_of_listing_order():
    names = [f"m.x_f__mutmut_{i}" for i in range(1000)]
    a = mutation_sample.pick(names, 50, seed=7)
    assert a == mutation_sample.pick(list(reversed(names)), 50, seed=7)
    assert len(set(a)) == 50 and set(a) <= set(names) and a == sorted(a)
    assert a != mutation_sample.pick(names, 50, seed=8)
    assert mutation_sample.pick(names[:10], 50, seed=7) == sorted(names[:10])


@pytest.mark.parametrize(
    ("k", "n", "lo", "hi"),
    [
        # worked by hand from Wilson's formula, z = 1.96:
        # 90/100: centre (0.9 + 0.019208) / 1.038416 = 0.88520, half 1.96 * sqrt(0.0009 + 0.00009604) / 1.038416
        (90, 100, 0.8256, 0.9448),
        # 10/10: the lower bound is n / (n + z^2) = 10 / 13.8416, the upper bound 1
        (10, 10, 0.7225, 1.0),
        # 0/20: lower 0, upper z^2 / (n + z^2) = 3.8416 / 23.8416
        (0, 20, 0.0, 0.1611),
    ],
)
def test_wilson_interval(k, n, lo, hi):
    got_lo, got_hi = mutation_sample.wilson(k, n)
    assert got_lo == pytest.approx(lo, abs=1e-4)
    assert got_hi == pytest.approx(hi, abs=1e-4)
