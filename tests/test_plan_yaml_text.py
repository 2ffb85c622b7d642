"""The plan's YAML texts (device-plugin and MIG configs, node user data, the schedulers' configs) are made by
libyaml's emitter (components/plan/yaml_text.py) and must be the bytes ``yaml.safe_dump`` (PyYAML's Python
emitter) writes for the same documents: checked on every document each shipped stack's plan dumps, and on a
generated stack with every sharing strategy."""

from __future__ import annotations

import pytest
import yaml
from conftest import STACKS, STACKS_DIR, stack_config

from components.cli.loader import load_spec
from components.plan import plan, yaml_text


def _dumped(monkeypatch, config) -> list[tuple[object, dict, str]]:
    """(document, options, text) of every YAML text a freshly validated spec's plan makes."""
    calls: list[tuple[object, dict, str]] = []
    made = yaml_text.safe_dump

    def recording(doc, **options):
        text = made(doc, **options)
        calls.append((doc, options, text))
        return text

    monkeypatch.setattr(yaml_text, "safe_dump", recording)
    plan.build(load_spec(config, STACKS_DIR), "t")  # a new spec: nothing decided before for it
    return calls


def _python_emitter(doc, options) -> str:
    return yaml.safe_dump(
        doc, sort_keys=options.get("sort_keys", True), default_flow_style=False, width=options.get("width")
    )


def test_libyaml_writes_the_plans_yaml_when_pyyaml_has_it():
    # the saving is the C emitter's; PyYAML without libyaml falls back to the Python emitter (the same text)
    assert yaml_text.DUMPER is getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    assert hasattr(yaml, "CSafeDumper"), "PyYAML without libyaml here: the lock installs a wheel with it"


@pytest.mark.parametrize("stack", STACKS)
def test_every_plan_yaml_text_of_a_shipped_stack_is_what_the_python_emitter_writes(monkeypatch, stack):
    calls = _dumped(monkeypatch, stack_config(stack))
    assert calls, "every shipped stack's plan dumps at least one YAML text"
    for doc, options, text in calls:
        assert text == _python_emitter(doc, options), (stack, options)


def test_a_generated_stack_with_every_sharing_strategy_dumps_the_python_emitters_text(monkeypatch):
    from bench_synth import generated_config

    calls = _dumped(monkeypatch, generated_config(tenants=12, pools_n=6))
    # device-plugin configs (time-slicing, MPS), the MIG layout, both schedulers' configs
    assert len(calls) >= 4
    assert any("mig-configs" in text for _, _, text in calls)
    assert any("timeSlicing" in text for _, _, text in calls)
    for doc, options, text in calls:
        assert text == _python_emitter(doc, options), options


def test_the_options_reach_the_emitter():
    doc = {"b": 1, "a": {"long": "x " * 60}}
    assert yaml_text.safe_dump(doc, sort_keys=False).startswith("b: 1\n")
    assert yaml_text.safe_dump(doc).startswith("a:\n")
    # width: a long plain scalar folds at 80 columns by default, not at 1000
    assert "\n" in yaml_text.safe_dump(doc)[len("a:\n  long: ") : -1]
    assert yaml_text.safe_dump(doc, width=1000).count("\n") == 3
