"""Explain against the programs that decide (issue 38.2): every workload of the corpus (every file in examples/ and
tests/sched/corpus/<stack>/) is explained offline against its target stack, then created on that stack's platform
with the real Kueue controller and kube-scheduler (loop.py), and explain's verdict must be what happened: admitted and
placed on the pool explain names, or pending for the reason family explain names. A disagreement fails the stack's
test with a table: workload | real outcome | explain.

Each corpus file also states, on its ``# Expect:`` line, the outcome its author read from upstream's source: the
real outcome must be that too, so a harness that stopped running the programs (everything "refused", nothing
admitted) fails here rather than agreeing with a broken explain.

Volcano's scheduler does not run here (its module is not served by the Go proxy): for a Volcano tenant the real part is
the API server's admission (the platform's policies); an admitted Volcano workload is ``accepted``, and explain's
verdict beyond admission (its queue's proportion, the gang) stays modelled (docs/explain.md says so).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import paths  # noqa: F401  (tests/cluster on the path)
import pytest
from cluster_stacks import stack_file_config
from loop import SchedCluster, load_docs
from observe import Outcome, observe

from components.explain import trace
from components.explain.trace import Trace

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).resolve().parent / "corpus"
EXAMPLES = ROOT / "examples"
TARGET = re.compile(r"^# Target stack: (\S+)", re.M)
EXPECT = re.compile(r"^# Expect: (.+)$", re.M)


def _files() -> dict[str, list[Path]]:
    out: dict[str, list[Path]] = {}
    for path in sorted([*EXAMPLES.glob("*.yaml"), *CORPUS.glob("*/*.yaml")]):
        m = TARGET.search(path.read_text())
        assert m, f"{path} names no target stack"
        out.setdefault(m.group(1), []).append(path)
    return out


FILES = _files()


def explained_family(t: Trace, volcano: bool) -> tuple[str, tuple[str, ...]]:
    """What explain says a user will see in the cluster (``Trace.outcome``, components/explain/outcomes.py), and
    where it runs. A Volcano tenant's job that Volcano would run or hold (``runs``, ``queued``) is ``accepted``
    here: the API server admits it, and Volcano's scheduler, which would decide the rest, is not in the loop."""
    outcome = t.outcome
    if volcano and outcome in ("runs", "queued"):
        return "accepted", ()
    if outcome != "runs":
        return outcome, ()
    if t.pending is not None:  # a stop after which the pods still run (dcgm, a waste): on the pool the pod layer named
        placed = next((x.detail.split(":", 1)[0] for x in t.layers if x.name == "pool" and x.ok), "-")
        return "runs", (placed,)
    return "runs", tuple((t.pool or "-").split(", "))


def real_family(o: Outcome, volcano: bool) -> tuple[str, tuple[str, ...]]:
    if volcano and o.family in ("unscheduled", "timeout-volcano"):
        return "accepted", ()
    return o.family, o.pools if o.family == "runs" else ()


def expected(path: Path) -> tuple[str, tuple[str, ...]] | None:
    m = EXPECT.search(path.read_text())
    if not m:
        return None  # examples/ state their pool in prose: they must run there (test_examples.py)
    text = m.group(1).strip()
    if text.startswith("runs on "):
        return "runs", tuple(p.strip() for p in text[len("runs on ") :].split(","))
    return text, ()


@dataclass
class Row:
    workload: str
    real: str
    explain: str
    agree: bool
    as_expected: bool


def _run(c: SchedCluster, path: Path) -> list[Row]:
    text = path.read_text()
    docs = load_docs(text)
    traces = trace.explain_all(c.spec, text)
    namespaces = sorted({d["metadata"].get("namespace", "default") for d in docs})
    volcano = any(t.scheduler == "volcano" for t in c.plan.tenants.values() if t.namespace in namespaces)
    try:
        refusals = c.create(docs)
        outcome = observe(c, docs, refusals, volcano=volcano)
    finally:
        c.delete_all(namespaces)
    real = real_family(outcome, volcano)
    exp = expected(path)
    rows = []
    for t in traces:
        said = explained_family(t, volcano)
        rows.append(
            Row(
                f"{path.parent.name}/{path.name}: {t.workload.ref}",
                f"{real[0]}{' on ' + ','.join(real[1]) if real[1] else ''} -- {outcome}",
                f"{said[0]}{' on ' + ','.join(said[1]) if said[1] else ''} -- {t.verdict}",
                said == real,
                exp is None or exp == real,
            )
        )
    return rows


def _table(rows: list[Row]) -> str:
    lines = ["workload | real outcome | explain"]
    for r in rows:
        mark = "" if r.agree else "DISAGREE "
        mark += "" if r.as_expected else "UNEXPECTED "
        lines.append(f"{mark}{r.workload} | {r.real[:300]} | {r.explain[:300]}")
    return "\n".join(lines)


SHARD = 12  # workload files per platform: a stack with more is split over several, which pytest-xdist runs at once


def _shards() -> list[tuple[str, int]]:
    return [(stack, i) for stack in sorted(FILES) for i in range(-(-len(FILES[stack]) // SHARD))]


@pytest.mark.parametrize(("stack", "shard"), _shards(), ids=lambda x: str(x))
def test_explain_says_what_kueue_and_kube_scheduler_do(stack: str, shard: int):
    rows: list[Row] = []
    with SchedCluster(stack, stack_file_config(stack)) as c:
        for path in FILES[stack][shard * SHARD : (shard + 1) * SHARD]:
            rows += _run(c, path)
    bad = [r for r in rows if not (r.agree and r.as_expected)]
    assert not bad, f"{len(bad)} of {len(rows)} workloads:\n" + _table(bad) + "\n\nall:\n" + _table(rows)
