"""The documentation site (issue 29, point 3): docs/ built by MkDocs from mkdocs.yml, README.md a landing page.

- The generated pages (docs/reference/stack-file.md from the stack file's JSON Schema, docs/reference/policies.md
  from the pack) are exactly what ``python -m components.cli.docs`` writes, so they cannot drift.
- The generator's output is checked against facts known apart from it: keys and values written in the stack
  files and in the docs' prose, and the pack's policy names.
- Every page under docs/ is in the nav and every nav entry exists; the strict build (broken links and anchors
  inside the site) passes.
- README.md keeps the two commands CI runs, and its links reach files that exist.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import yaml
from conftest import ROOT

from components.cli import docs

DOCS = ROOT / "docs"
README = ROOT / "README.md"


def _nav_pages(entries: list) -> list[str]:
    """Every page path the nav of mkdocs.yml names, nested sections included, in order."""
    out: list[str] = []
    for entry in entries:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        out.extend(_nav_pages(value) if isinstance(value, list) else [value])
    return out


def _nav() -> list[str]:
    return _nav_pages(yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"])


# ------------------------------------------------------------------------------------------ generated pages


def test_the_committed_generated_pages_are_what_the_generator_writes():
    assert docs.stale() == [], "run `python -m components.cli.docs` and commit docs/reference/"


def test_check_mode_names_a_stale_page_and_writes_nothing(tmp_path):
    (tmp_path / "docs" / "reference").mkdir(parents=True)
    (tmp_path / "docs" / "reference" / "stack-file.md").write_text("old\n", encoding="utf-8")
    assert docs.stale(tmp_path) == ["docs/reference/stack-file.md", "docs/reference/policies.md"]
    assert (tmp_path / "docs" / "reference" / "stack-file.md").read_text(encoding="utf-8") == "old\n"
    run = subprocess.run(
        [sys.executable, "-m", "components.cli.docs", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr  # the committed tree is current


# keys whose value is a map of the user's own names (pools, tenants, labels, MIG profiles, instance types)
USER_MAPS = {
    "gpuQuota",
    "credentials",  # images.pullThrough.credentials: registry hosts
    "borrowingLimit",
    "lendingLimit",
    "charts",
    "labels",
    "layout",
    "tags",
    "overrides",
    "tenants",
    "serviceMonitorLabels",
    "dashboardLabels",
    "systemNodeSelector",
    "subnetTags",
    "securityGroupTags",
    "quotas",  # storage.fileSystems[].quotas: tenant -> claim quota
}


def _stack_keys(value, out: set[str]) -> set[str]:
    """Every key under ``value``, not descending into maps of the user's own names."""
    if isinstance(value, dict):
        for k, v in value.items():
            out.add(str(k))
            if str(k).split(":")[-1] not in USER_MAPS:
                _stack_keys(v, out)
    elif isinstance(value, list):
        for v in value:
            _stack_keys(v, out)
    return out


def test_the_stack_file_reference_has_every_key_a_shipped_stack_sets():
    """Every key under config: of every shipped stack and coverage stack (which together use every key of the
    schema, tests/test_coverage_stacks.py), top level and nested, has its row on the page."""
    page = (DOCS / "reference" / "stack-file.md").read_text(encoding="utf-8")
    named = set(re.findall(r"^\| `([^`]+)` \|", page, re.M))
    seen: set[str] = set()
    files = [*(ROOT / "stacks").glob("Pulumi.*.yaml"), *(ROOT / "tests" / "fixtures" / "coverage").glob("*.yaml")]
    for path in sorted(files):
        config = yaml.safe_load(path.read_text(encoding="utf-8"))["config"]
        used = _stack_keys({k: v for k, v in config.items() if k.startswith(("gpu-platform:", "aws:", "gcp:"))}, set())
        assert not sorted(used - named), (path.name, sorted(used - named))
        seen |= used
    assert {"gpu-platform:nodePools", "perNode", "strategy", "imdsHopLimit", "maxHourlyUsd"} <= seen  # it reads deep


def test_the_stack_file_reference_states_what_the_docs_say_in_prose():
    """Values written by hand in docs/stack-file.md's tour and elsewhere, found in the generated rows."""
    page = (DOCS / "reference" / "stack-file.md").read_text(encoding="utf-8")
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `([^`]+)` \|.*$", page, re.M)}
    assert "one of `aws`, `gcp`, `existing` | required" in rows["gpu-platform:cloud"]  # aws | gcp | existing
    assert "one of `on-demand`, `spot` | `on-demand`" in rows["capacity"]  # capacity: on-demand, or spot
    assert "one of `managed`, `karpenter` | `managed`" in rows["provisioner"]
    assert "list of [NodePool](#nodepool)" in rows["gpu-platform:nodePools"]
    # the models are reached by the key paths a stack file writes
    assert "At `gpu-platform:nodePools[].reservation`." in page
    assert "At `gpu-platform:nodePools[].eks`." in page
    assert "At `gpu-platform:charts.<name>`." in page


def test_the_policy_reference_lists_every_policy_with_its_settings():
    from policies import pack

    page = (DOCS / "reference" / "policies.md").read_text(encoding="utf-8")
    assert re.findall(r"^\| `([a-z0-9-]+)` \|", page, re.M)[: len(pack.POLICIES)] == [p.name for p in pack.POLICIES]
    # the settings the docs' config example uses, each with its own section and default
    assert "### time-slicing-replicas" in page and "| `maxReplicas` | integer (≥ 2) | `8` |" in page
    assert "### namespace-pod-security" in page and '`["gpu-monitoring", "gpu-operator"]`' in page


def test_a_pipe_in_a_cell_is_escaped_so_the_row_keeps_its_columns():
    row = docs._property_table({"x": {"type": "string", "pattern": "^(a|b)$"}}, [])[2]
    assert row == "| `x` | string (matches <code>^(a&#124;b)$</code>) |  |  |"


# ---------------------------------------------------------------------------------------------- the site


def test_every_page_is_in_the_nav_and_every_nav_entry_exists():
    nav = _nav()
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    assert sorted(nav) == pages
    assert len(nav) == len(set(nav)), "a page listed twice in the nav"


def test_the_site_builds_strict(tmp_path):
    """mkdocs build --strict: a broken link or anchor inside the site, or a page outside the nav, fails."""
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "site" / "reference" / "stack-file" / "index.html").is_file()


# -------------------------------------------------------------------------------------------- the README


def test_the_readme_keeps_the_two_commands_ci_runs():
    text = README.read_text(encoding="utf-8")
    assert "make synth            # render the default stack (prod-aws) offline into out/prod-aws/" in text
    assert "make test             # run the test suite" in text
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^make synth\b", ci, re.M) and re.search(r"^make test\b", ci, re.M)
    assert re.search(r"^make lint\nmake docs-check\b", ci, re.M)


@pytest.mark.parametrize("source", ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in DOCS.rglob("*.md"))])
def test_relative_links_reach_files_that_exist(source):
    """Links to other files (not https://, not in-page anchors) resolve from the page's folder; the strict build
    checks the docs' ones too, this also covers README.md, which the site does not hold."""
    path = ROOT / source
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        assert (path.parent / target.split("#")[0]).exists(), (source, target)


def test_the_readme_is_a_landing_page():
    """What it is, the two commands, and where to read on: a link to every page of the site."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 80, "README.md is the landing page; the content lives in docs/"
    linked = set(re.findall(r"\]\(docs/([^)#]+)\)", text))
    assert set(_nav()) - linked == set()
