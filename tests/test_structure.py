"""The package's shape: imports go one way, and every stack-file rule is registered in one place.

- No import circle among ``components/`` and ``policies/`` modules. The graph is read from the source with
  ``ast``: every ``import`` counts, also those inside functions and under ``TYPE_CHECKING`` (a lazy import
  is still a dependency; it only hides it from the reader).
- The stages (``components/<stage>/``: data, spec, plan, render, explain, cli) import only their own and earlier
  ones, and the data, spec and plan stages no pulumi and no cloud SDK.
- ``components/cli/loader.py`` lists every module that defines ``@rule`` functions; a module with rules missing
  from the list would silently skip them, so that fails here.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable
from pathlib import Path

import pytest
from conftest import ROOT

# These read the source as text; under mutation testing they would read the mutated copy (make mutate skips them).
pytestmark = pytest.mark.reads_source

PACKAGES = ("components", "policies")


# ------------------------------------------------------------------------------------------ the graph


def modules(root: Path, packages: Iterable[str] = PACKAGES) -> dict[str, Path]:
    """Dotted module name -> source file, for every module of ``packages`` under ``root``."""
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root)
            if any(part.startswith(".") for part in rel.parts):  # policies/.venv
                continue
            parts = list(rel.with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    """Absolute names an import statement may load (a ``from x import y`` may load the module ``x.y``)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        here = module.split(".") if is_package else module.split(".")[:-1]
        here = here[: len(here) - (node.level - 1)]
        base = ".".join([*here, base] if base else here)
    return [base, *(f"{base}.{a.name}" for a in node.names)]


@functools.cache
def _imports(source: str, filename: str) -> tuple[ast.Import | ast.ImportFrom, ...]:
    """The import statements of a module's source (lazy ones included), parsed once per session for the same text:
    eight tests read the whole tree's graph."""
    return tuple(n for n in ast.walk(ast.parse(source, filename)) if isinstance(n, (ast.Import, ast.ImportFrom)))


def import_graph(root: Path, packages: Iterable[str] = PACKAGES) -> dict[str, set[str]]:
    """module -> the package modules it imports (each imported name's own module and its packages)."""
    mods = modules(root, packages)
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        deps: set[str] = set()
        for node in _imports(path.read_text(encoding="utf-8"), str(path)):
            for target in _targets(name, path.name == "__init__.py", node):
                parts = target.split(".")
                # importing a.b.c runs a, a.b and a.b.c
                deps.update(".".join(parts[:i]) for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in mods)
        deps.discard(name)
        graph[name] = deps
    return graph


def knots(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module: each module of one reaches every other."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(v: str) -> None:  # Tarjan; the graph is a few dozen modules deep at most
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                scc.add(w)
                if w == v:
                    break
            if len(scc) > 1:
                components.append(scc)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return components


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One concrete circle (``a -> b -> ... -> a``) per knot."""
    return [_circle(graph, scc) for scc in knots(graph)]


def _circle(graph: dict[str, set[str]], scc: set[str]) -> list[str]:
    """The shortest circle through the component's first module (breadth-first inside the component)."""
    start = min(scc)
    paths = {start: [start]}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v] & scc):
            if w == start:
                return [*paths[v], start]
            if w not in paths:
                paths[w] = [*paths[v], w]
                queue.append(w)
    raise AssertionError(f"{sorted(scc)} is not strongly connected")


# ------------------------------------------------------------------------------------------ the tests


def test_no_import_circles():
    graph = import_graph(ROOT)
    found = [(_circle(graph, k), sorted(k)) for k in knots(graph)]
    assert not found, "import circles:\n" + "\n".join(
        f"{' -> '.join(c)} ({len(k)} modules reach each other: {', '.join(k)})" for c, k in found
    )


def test_the_check_finds_a_circle_hidden_in_a_function(tmp_path):
    pkg = tmp_path / "components"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "model.py").write_text("def load():\n    from components.sub import rules\n    return rules\n")
    (pkg / "sub" / "rules.py").write_text("from ..model import load\n")
    (pkg / "other.py").write_text("import components.model\n")
    (pkg / "typed.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from components.other import x\n"
    )
    graph = import_graph(tmp_path, ["components"])
    assert graph["components.sub.rules"] == {"components", "components.model"}
    assert graph["components.other"] == {"components", "components.model"}
    assert "components.other" in graph["components.typed"]
    assert cycles(graph) == [["components.model", "components.sub.rules", "components.model"]]


# The stages, in the order data flows (issue 28): a module may import its own stage and earlier ones, never a
# later one. Each stage's package docstring says the same ("May import: ...").
STAGES = ("data", "spec", "plan", "render", "explain", "cli")


def stage_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "components" and parts[1] in STAGES else None


def test_every_components_module_sits_in_a_stage():
    graph = import_graph(ROOT)
    loose = sorted(m for m in graph if m.startswith("components.") and stage_of(m) is None)
    assert loose == [], "put these in a stage package (components/<stage>/)"


def test_no_stage_imports_a_later_one():
    """spec -> plan -> render -> explain -> cli: the import graph (every import, lazy ones too) only points back."""
    graph = import_graph(ROOT)
    later = {
        m: sorted(d for d in deps if stage_of(d) and STAGES.index(stage_of(d)) > STAGES.index(stage_of(m)))
        for m, deps in graph.items()
        if stage_of(m)
    }
    assert {m: d for m, d in later.items() if d} == {}


def test_the_layering_check_sees_a_lazy_import_of_a_later_stage(tmp_path):
    pkg = tmp_path / "components"
    for stage in ("plan", "render"):
        (pkg / stage).mkdir(parents=True)
        (pkg / stage / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "render" / "kueue.py").write_text("X = 1\n")
    (pkg / "plan" / "derive.py").write_text("def f():\n    from components.render import kueue\n    return kueue.X\n")
    graph = import_graph(tmp_path, ["components"])
    assert "components.render.kueue" in graph["components.plan.derive"]
    assert STAGES.index(stage_of("components.render.kueue")) > STAGES.index(stage_of("components.plan.derive"))


def test_the_data_spec_and_plan_stages_import_no_pulumi_or_cloud_sdk():
    """The plan is pure data: nothing below the renderers registers (or could register) a resource."""
    found = {}
    for name, path in modules(ROOT, ["components"]).items():
        if stage_of(name) not in ("data", "spec", "plan"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                targets = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                bad = [
                    t for t in targets if t.split(".")[0] in ("pulumi", "pulumi_aws", "pulumi_gcp", "pulumi_kubernetes")
                ]
                if bad:
                    found.setdefault(name, []).extend(bad)
    assert found == {}


def test_each_stage_package_says_what_it_may_import():
    for stage in STAGES:
        doc = ast.get_docstring(ast.parse((ROOT / "components" / stage / "__init__.py").read_text())) or ""
        assert "May import:" in doc, stage


def test_no_render_module_reads_the_spec():
    """Issue 28: below the plan nothing reads the spec. Render modules import no ``components.spec`` module (lazy
    imports included). The entries take the validated spec to build the plan: ``render.program`` (the stack program)
    and ``render.platform`` (the GpuPlatform component for other programs)."""
    graph = import_graph(ROOT, ["components"])
    readers = sorted(
        m
        for m, deps in graph.items()
        if stage_of(m) == "render"
        and m not in {"components.render.program", "components.render.platform"}
        and any(d == "components.spec" or d.startswith("components.spec.") for d in deps)
    )
    assert readers == []


def test_explain_reads_only_the_plan():
    """Explain, the summary and the reports read what was decided (the plan), never how it is rendered: no
    ``components.explain`` module imports ``components.render`` (lazy imports included). The constants both need
    (labels, annotations, policy names, env names) live in the plan modules, which the renderers import."""
    graph = import_graph(ROOT, ["components"])
    readers = sorted(
        m
        for m, deps in graph.items()
        if stage_of(m) == "explain"
        and any(d == "components.render" or d.startswith("components.render.") for d in deps)
    )
    assert readers == []


def test_the_spec_model_imports_nothing_above_it():
    """The spec stage is the model and its messages: its modules import only each other and the data stage;
    derive (the plan's base) reads only the spec."""
    graph = import_graph(ROOT)
    layer = {m for m in graph if stage_of(m) == "spec"}
    allowed = {"components"} | layer | {m for m in graph if stage_of(m) == "data"} | {"components.data"}
    assert {m: graph[m] - allowed for m in layer} == {m: set() for m in layer}
    spec_only = {"components", "components.spec", "components.spec.model"} | layer
    assert graph["components.plan.derive"] - {"components.plan"} <= spec_only


def test_the_policy_pack_imports_no_component():
    graph = import_graph(ROOT)
    pack = {m for m in graph if m.startswith("policies") and m != "policies.offline"}  # offline: the synth's side
    assert not {d for m in pack for d in graph[m] if d.startswith("components")}


# ------------------------------------------------------------------------------------------ rules


def _rules_in_source(root: Path = ROOT) -> dict[str, list[str]]:
    """module -> names of its functions decorated ``@rule`` (or ``@spec.rule``), read from the source."""
    out: dict[str, list[str]] = {}
    for name, path in modules(root, ["components"]).items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                (isinstance(d, ast.Name) and d.id == "rule") or (isinstance(d, ast.Attribute) and d.attr == "rule")
                for d in node.decorator_list
            ):
                out.setdefault(name, []).append(node.name)
    return out


def test_every_module_with_rules_is_listed_in_the_loader():
    from components.cli import loader

    listed = [m.__name__ for m in loader.rule_modules()]
    assert len(listed) == len(set(listed)), "a module is listed twice"
    in_source = _rules_in_source()
    assert sorted(in_source) == sorted(listed), (
        f"define rules but are not in components/cli/loader.py rule_modules(): {sorted(set(in_source) - set(listed))}; "
        f"listed without rules: {sorted(set(listed) - set(in_source))}"
    )


def test_the_loader_runs_exactly_the_rules_in_the_source():
    from components.cli import loader

    in_source = sorted(f"{m}.{f}" for m, fns in _rules_in_source().items() for f in fns)
    assert len(in_source) > 30  # the package has dozens of rules; an empty scan proves nothing
    assert sorted(f"{r.__module__}.{r.__name__}" for r in loader.rules()) == in_source
