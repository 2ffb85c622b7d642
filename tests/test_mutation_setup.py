"""``make mutate`` (mutmut 3) copies the tree into mutants/ and first runs the whole suite there, stopping at the first
failure ("failed to collect stats"): every tracked top-level entry a test may read must be copied with the sources.
It failed so on .ci/run (tests/test_docs.py reads it) and requirements/dev.txt (tests/test_locks.py)."""

from __future__ import annotations

import subprocess
import tomllib

from conftest import ROOT


def test_mutmut_copies_every_tracked_top_level_entry():
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]
    copied = {p.rstrip("/") for p in settings["source_paths"] + settings["also_copy"]}
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    tracked = {line.split("/", 1)[0] for line in listed.splitlines()}
    assert tracked - copied == set()


def test_a_program_shipped_as_text_is_copied_unmutated():
    """The lost-worker reset's script is data: the plan carries its text (a ConfigMap), so a mutated copy would
    change the plan snapshot of every fleet manager and stop the first pass."""
    from components.plan import fleet_reset

    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]
    script = ROOT / "components" / "data" / "reset_lost_jobs.py"
    assert fleet_reset.SCRIPT == script.read_text()
    assert str(script.relative_to(ROOT)) in settings["do_not_mutate"]
