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


def _schema_keys():
    """(model, key, property) for every key a stack file may set: the top level and every model's."""
    from components.spec.model import stack_file_schema

    schema = stack_file_schema()
    for key, prop in schema["properties"]["config"]["properties"].items():
        yield "config", key, prop
    for name, model in schema["$defs"].items():
        for key, prop in model.get("properties", {}).items():
            yield name, key, prop


def test_every_key_a_user_sets_has_a_description():
    """A field without ``Field(description=...)`` is a blank cell in the reference: name it here."""
    blank = [f"{model}.{key}" for model, key, prop in _schema_keys() if not str(prop.get("description", "")).strip()]
    assert blank == [], "add Field(description=...) in components/spec for: " + ", ".join(blank)


def _cells(row: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]]


def test_every_key_of_the_reference_shows_its_default_or_that_it_is_required():
    page = (DOCS / "reference" / "stack-file.md").read_text(encoding="utf-8")
    rows = [_cells(line) for line in page.splitlines() if line.startswith("| `")]
    assert len(rows) > 200
    no_default = [r[0] for r in rows if not r[2]]
    assert no_default == []


def test_the_core_keys_carry_their_real_defaults_in_the_reference():
    """Defaults made by a default_factory (lists, maps; pydantic's schema leaves them out) are on the page with
    the values the docs' prose gives; a nested block links to its own keys' defaults."""
    page = (DOCS / "reference" / "stack-file.md").read_text(encoding="utf-8")
    rows = {m.group(1): _cells(m.group(0)) for m in re.finditer(r"^\| `([^`]+)` \|.*$", page, re.M)}
    assert rows["gpu-platform:priorityClasses"][2] == (
        "5 entries: `inference`, `training-critical`, `training`, `batch`, `dev`"
    )
    assert rows["gpu-platform:cluster"][2] == "[its keys' defaults](#clusterref)"
    assert rows["gpu-platform:tenants"][2] == "`[]`"
    assert rows["serviceMonitorLabels"][2] == '`{"release": "kube-prometheus-stack"}`'
    assert rows["kueueIntegrations"][2] == '`["batch/job", "pod", "deployment", "statefulset"]`'
    assert rows["minNodes"][2] == "`0`" and rows["maxNodes"][2] == "`null`"
    assert rows["defaultCohort"][2] == "`gpu-platform`"
    # borrowing is on by default: the tour and the reference say so (a pool left out of borrowingLimit: no limit)
    assert rows["borrowingLimit"][2] == "`{}`" and "on by default" in rows["borrowingLimit"][3]
    for key in (
        "gpu-platform:cloud",
        "gpu-platform:cluster",
        "gpu-platform:nodePools",
        "gpu-platform:tenants",
        "lendingLimit",
        "gpuQuota",
        "maxNodes",
        "minNodes",
        "cohort",
    ):
        assert len(rows[key][3]) > 15, key


def test_the_policy_reference_lists_every_policy_with_its_settings():
    from policies import pack

    page = (DOCS / "reference" / "policies.md").read_text(encoding="utf-8")
    assert re.findall(r"^\| `([a-z0-9-]+)` \|", page, re.M)[: len(pack.POLICIES)] == [p.name for p in pack.POLICIES]
    # the settings the docs' config example uses, each with its own section and default
    assert "### time-slicing-replicas" in page and "| `maxReplicas` | integer (≥ 2) | `8` |" in page
    assert "### namespace-pod-security" in page and '`["gpu-monitoring", "gpu-operator"]`' in page


def test_a_pipe_in_a_cell_is_escaped_so_the_row_keeps_its_columns():
    row = docs._property_table({"x": {"type": "string", "pattern": "^(a|b)$"}}, [])[2]
    assert row == "| `x` | string (matches <code>^(a&#124;b)$</code>) | unset |  |"


# ---------------------------------------------------------------------------------------------- the site


def test_every_page_is_in_the_nav_and_every_nav_entry_exists():
    nav = _nav()
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    assert sorted(nav) == pages
    assert len(nav) == len(set(nav)), "a page listed twice in the nav"


def test_the_site_builds_strict_and_loads_nothing_from_the_network(tmp_path):
    """mkdocs build --strict: a broken link or anchor inside the site, or a page outside the nav, fails."""
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    site = tmp_path / "site"
    assert (site / "reference" / "stack-file" / "index.html").is_file()
    # offline: no page or stylesheet loads a script, a stylesheet, an image or a font from the network (the
    # theme's highlight.js came from cdnjs); links to other sites (<a href>) are content, not loads
    loads = []
    for page in site.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        loads += [
            (page.name, u) for u in re.findall(r"<(?:script|img|iframe)\b[^>]*\bsrc=\"((?:https?:)?//[^\"]+)", html)
        ]
        loads += [(page.name, u) for u in re.findall(r"<link\b[^>]*\bhref=\"((?:https?:)?//[^\"]+)", html)]
    for css in site.rglob("*.css"):
        loads += [
            (css.name, u) for u in re.findall(r"(?:url\(|@import)\s*['\"]?((?:https?:)?//[^'\")\s]+)", css.read_text())
        ]
    assert loads == []
    # code blocks are highlighted at build time (Pygments' token classes), with the site's own stylesheet
    tour = (site / "stack-file" / "index.html").read_text(encoding="utf-8")
    assert '<div class="codehilite"><pre>' in tour and '<span class="nt">maxNodes</span>' in tour
    assert 'href="../css/pygments.css"' in tour


def test_the_site_highlights_offline_with_pygments_own_stylesheet():
    """mkdocs.yml turns the theme's CDN highlight.js off and names no network script or stylesheet; the committed
    stylesheet is what Pygments writes for the classes codehilite emits (rewrite it with the command below)."""
    from pygments.formatters import HtmlFormatter

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["theme"]["highlightjs"] is False
    assert {"codehilite": {"guess_lang": False}} in config["markdown_extensions"]
    for key in ("extra_css", "extra_javascript"):
        assert not [u for u in config.get(key, []) if re.match(r"(https?:)?//", u)], key
    css = (DOCS / "css" / "pygments.css").read_text(encoding="utf-8")
    # python -c "from pygments.formatters import HtmlFormatter as F; print(F().get_style_defs('.codehilite'))"
    assert css.strip() == HtmlFormatter(style="default").get_style_defs(".codehilite").strip()


# Pages for maintainers: source lines, commit hashes and issue numbers belong there, not in the user pages
MAINTAINER_PAGES = {"architecture.md", "development.md"}
MAINTAINER_DETAIL = re.compile(
    r"\b(?:at|commit|in)\s+`?[0-9a-f]{7,40}`?(?![\w-])"  # a commit hash: at `1d927085dd81`, in d22b537
    r"|@[0-9a-f]{7,40}\b"  # owner/repo@992db81
    r"|\.(?:py|go|ts|sh|yaml|tpl):\d+"  # a source line: file.py:123, flavorassigner.go:1239-1245
    r"|\b[Ii]ssues? #?\d+"  # issue 31
)


def test_the_maintainer_detail_pattern_finds_what_it_means_to_and_not_ids():
    found = [
        "the AWS Price List (`aws/karpenter-provider-aws` at `1d927085dd81`)",
        "namespaces renamed in d22b537 do",
        "a commit 0123abcd",
        "container-engine-accelerators@992db81 `health_checker.go`",
        "(kueue v0.19.2 `flavorassigner.go:1239-1245`)",
        "`components/plan/derive.py:120`",
        "**Workload operators** (issue 31)",
    ]
    kept = ["subnetId: subnet-0a1b2c3d4e5f60718", "snap-0c1d2e3f4a5b6c7d8", "accountId: 123456789012", "v0.19.2"]
    assert [t for t in found if not MAINTAINER_DETAIL.search(t)] == []
    assert [t for t in kept if MAINTAINER_DETAIL.search(t)] == []


@pytest.mark.parametrize(
    "page", sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md") if p.name not in MAINTAINER_PAGES)
)
def test_user_pages_carry_no_source_lines_commit_hashes_or_issue_numbers(page):
    """The concepts, the tour, deploy, day 2, explain, policies and the generated references (model docstrings
    reach the stack-file reference) read as user documentation; what upstream line a behaviour rests on is in
    architecture.md ("Upstream code behind the user pages")."""
    text = (DOCS / page).read_text(encoding="utf-8")
    hits = [m.group(0) for m in MAINTAINER_DETAIL.finditer(text)]
    assert hits == [], f"move these to docs/architecture.md: {hits}"


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
