"""``components.cli.config``: the config map ``pulumi up`` gives the program, and how a bad one ends the program
(pulumi.RunError: the engine prints its message without a stack trace)."""

from __future__ import annotations

import json

import pulumi
import pytest
from conftest import stack_config
from pulumi.runtime import config as runtime_config

from components.cli import config


def test_pulumi_config_merges_the_environment_and_the_set_config(monkeypatch):
    """Keys from PULUMI_CONFIG (the engine's environment) and from the runtime's set config, the latter
    winning where both name a key (set_all_config is what the engine's settings hand the program)."""
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps({"gpu-platform:cloud": "aws", "aws:region": "us-east-1"}))
    token = runtime_config.CONFIG.set({"gpu-platform:cloud": "gcp", "gcp:project": "p"})
    try:
        assert config.pulumi_config() == {"gpu-platform:cloud": "gcp", "aws:region": "us-east-1", "gcp:project": "p"}
    finally:
        runtime_config.CONFIG.reset(token)


def test_stack_file_is_named_after_the_stack(monkeypatch):
    """Problems under the engine point at the stack's file, as the CLI's do."""
    monkeypatch.setattr(pulumi, "get_stack", lambda: "prod-gcp")
    assert config.stack_file() == "stacks/Pulumi.prod-gcp.yaml"


def test_a_valid_config_gives_the_spec(monkeypatch):
    """A valid config map (as the engine passes it: strings, objects JSON-encoded) is the validated spec."""
    cfg = {k: v if isinstance(v, str) else json.dumps(v) for k, v in stack_config("dev-gcp").items()}
    monkeypatch.setattr(config, "pulumi_config", lambda: cfg)
    spec = config.spec_from_pulumi_config()
    assert spec.cloud == "gcp" and [p.name for p in spec.node_pools] == ["l4-shared", "t4-spot"]


def test_an_invalid_config_ends_the_program_with_one_line_per_problem(monkeypatch):
    """RunError's message: a header line, then each problem prefixed by the stack file; no chained
    traceback (the SpecError is not attached as its cause or context)."""
    cfg = stack_config("dev-gcp")
    del cfg["gpu-platform:cloud"]
    cfg["gpu-platform:nodePool"] = []
    monkeypatch.setattr(config, "pulumi_config", lambda: cfg)
    monkeypatch.setattr(pulumi, "get_stack", lambda: "dev-gcp")
    with pytest.raises(pulumi.RunError) as err:
        config.spec_from_pulumi_config()
    assert str(err.value) == (
        "invalid stack config:\n"
        "stacks/Pulumi.dev-gcp.yaml: gpu-platform:cloud: is required\n"
        "stacks/Pulumi.dev-gcp.yaml: gpu-platform:nodePool: unknown key (did you mean nodePools?)"
    )
    assert err.value.__cause__ is None and err.value.__suppress_context__
