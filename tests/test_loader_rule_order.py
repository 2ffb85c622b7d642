"""``components.cli.loader``: which rules run, in which order, and that every problem of every rule is reported."""

from __future__ import annotations

import pytest
from conftest import stack_config

from components.cli import loader
from components.spec.model import SpecError, is_rule, rule


def test_every_listed_module_contributes_its_rules_in_source_order():
    """Each rule module defines at least one rule; rules() lists each module's rules in the order they are
    written (modules in rule_modules' order), each once."""
    rules = loader.rules()
    assert len(rules) == len(set(rules))
    modules = [m.__name__ for m in loader.rule_modules()]
    assert len(modules) == 20 and modules[0] == "components.plan.rules_core"
    per_module = {name: [r for r in rules if r.__module__ == name] for name in modules}
    assert all(per_module[name] for name in modules), [n for n in modules if not per_module[n]]
    assert [r.__module__ for r in rules] == sorted((r.__module__ for r in rules), key=modules.index)
    for fns in per_module.values():
        lines = [f.__code__.co_firstlineno for f in fns]
        assert lines == sorted(lines)
    assert loader.rules() is rules  # computed once


def test_rule_marks_a_function():
    """@rule marks the function itself (returned unchanged); only a marked callable is a rule."""

    def check(spec):
        return []

    assert not is_rule(check)
    assert rule(check) is check and is_rule(check)
    assert not is_rule(object())
    marked_data = type("Marked", (), {"__stack_rule__": True})()  # carries the mark but cannot be run
    assert not is_rule(marked_data)


def test_every_rules_problems_are_reported_together():
    """Problems of different rules (modules) come out in one SpecError, none lost to the first."""
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:nodePools"][0]["minNodes"] = 9  # above maxNodes (rules_core)
    cfg["gpu-platform:tenants"][0]["gpuQuota"] = {"l4-shared": 4, "nope": 1}  # an unknown pool
    with pytest.raises(SpecError) as err:
        loader.load_spec(cfg)
    paths = {p.path for p in err.value.problems}
    assert "gpu-platform:nodePools[0].minNodes" in paths
    assert any(path.startswith("gpu-platform:tenants[0].gpuQuota") for path in paths)
    assert loader.load_spec(stack_config("dev-aws")).cloud == "aws"


def test_a_single_rule_problem_is_refused():
    """One problem is enough to refuse the stack."""
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:nodePools"][0]["minNodes"] = 9
    with pytest.raises(SpecError) as err:
        loader.load_spec(cfg)
    assert [p.path for p in err.value.problems] == ["gpu-platform:nodePools[0].minNodes"]
