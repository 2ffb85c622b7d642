"""The package's shape (issue 11): functions short enough to show their steps, modules small enough to read,
and every chart add-on through one skeleton (components/render/addon.py). Read from the source with ``ast``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

# These read the source as text; under mutation testing they would read the mutated copy (make mutate skips them).
pytestmark = pytest.mark.reads_source

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("components", "policies", "scripts")
MAX_FUNCTION_LINES = 120
MAX_MODULE_LINES = 600

# No allow-list (issue 28): a module over the limit is split by concern, a function along its steps.


def _modules() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _long_functions(source: str, limit: int) -> list[tuple[str, int, int]]:
    """(name, first line, length) of every function (methods and nested ones too) longer than ``limit``."""
    return [
        (node.name, node.lineno, node.end_lineno - node.lineno + 1)  # type: ignore[operator]
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno - node.lineno + 1 > limit  # type: ignore[operator]
    ]


def test_no_function_over_the_limit():
    found = [
        f"{_rel(p)}:{line} {name}: {n} lines"
        for p in _modules()
        for name, line, n in _long_functions(p.read_text(), MAX_FUNCTION_LINES)
    ]
    assert not found, f"functions over {MAX_FUNCTION_LINES} lines (split them along their steps): {found}"


def test_no_module_over_the_limit():
    found = {_rel(p): n for p in _modules() if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert not found, f"modules over {MAX_MODULE_LINES} lines (split them by concern): {found}"


def test_the_check_sees_long_methods_and_nested_functions():
    body = "\n".join(f"            x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    source = f"class C:\n    def m(self):\n        def inner():\n{body}\n"
    found = {name: n for name, _, n in _long_functions(source, MAX_FUNCTION_LINES)}
    assert found == {"m": MAX_FUNCTION_LINES + 2, "inner": MAX_FUNCTION_LINES + 1}


# Building blocks only the skeleton calls: an add-on that calls them itself bypasses the namespace policy and
# the readiness gate ordering written once in components/render/addon.py.
SKELETON_ONLY = {"addon_namespace", "addon_release", "addon_gate"}
SKELETON_MODULES = {"components/render/addon.py", "components/render/k8s.py", "components/render/webhooks.py"}


@pytest.mark.parametrize("path", [p for p in _modules() if p.parent.name != "policies"], ids=_rel)
def test_add_ons_use_the_skeleton(path: Path):
    if _rel(path) in SKELETON_MODULES:
        return
    calls = [
        f"{_rel(path)}:{node.lineno} {name}"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call)
        for name in [getattr(node.func, "attr", getattr(node.func, "id", None))]
        if name in SKELETON_ONLY
    ]
    assert not calls, f"use addon.ChartAddon (create_namespace / install / after_release) instead: {calls}"


# Fixtures built once per module hide mutants from `make mutate`: mutmut maps a function to the tests running
# while it runs, so only the first test that requested the fixture is mapped to the code that built it
# (tests/caching.py shared_fixture is the once-per-session fixture that maps every reader). The analyzer starts
# the pack in a subprocess, which mutmut's per-test map cannot see anyway; so does served_schema, the component
# provider's. So does the browser of test_plan_html_browser.py: a Chromium process, no package code inside.
BROAD_FIXTURES_ALLOWED = {
    ("test_policy_pack.py", "analyzer"),
    ("test_component_package.py", "served_schema"),
    ("test_plan_html_browser.py", "browser"),
}


def test_no_module_or_session_scoped_fixture_hides_code_from_mutation_testing():
    found = set()
    for path in sorted((ROOT / "tests").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef):
                continue
            for dec in node.decorator_list:
                scopes = [k.value.value for k in getattr(dec, "keywords", []) if k.arg == "scope"]
                if scopes and scopes[0] in ("module", "session", "package", "class"):
                    found.add((path.name, node.name))
    assert found == BROAD_FIXTURES_ALLOWED


def _dataclasses_without_docstring(source: str) -> list[str]:
    """Names of the ``@dataclass`` classes (any spelling of the decorator) that have no docstring."""
    return [
        node.name
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ClassDef)
        and any("dataclass" in ast.unparse(d) for d in node.decorator_list)
        and ast.get_docstring(node) is None
    ]


def test_every_dataclass_says_what_it_is():
    """Without a docstring ``dataclasses`` makes one from ``inspect.signature`` of the class, at every import
    (CPython 3.11 Lib/dataclasses.py ``_process_class``): ~0.07 ms per class on the synth's path, and less to read."""
    found = [f"{_rel(p)}:{name}" for p in _modules() for name in _dataclasses_without_docstring(p.read_text())]
    assert not found, f"dataclasses without a docstring (give each a line saying what it is): {found}"


def test_the_check_sees_a_dataclass_without_docstring():
    source = (
        "import dataclasses\nfrom dataclasses import dataclass\n\n"
        '@dataclass(frozen=True)\nclass A:\n    """An A."""\n\n    x: int\n\n'
        "@dataclass\nclass B:\n    x: int\n\n"
        "@dataclasses.dataclass(frozen=True, order=True)\nclass C:\n    x: int\n\n"
        "class D:\n    x: int\n"
    )
    assert _dataclasses_without_docstring(source) == ["B", "C"]
