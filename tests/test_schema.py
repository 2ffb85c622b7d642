"""`gpu-platform schema`: the JSON Schema editors use for stack files."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml
from caching import shared_fixture
from conftest import STACKS, STACKS_DIR

from components.cli import main as cli
from components.spec.model import stack_file_schema


@shared_fixture
def validator():
    schema = stack_file_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("stack", STACKS)
def test_shipped_stack_files_match_the_schema(validator, stack):
    doc = yaml.safe_load((STACKS_DIR / f"Pulumi.{stack}.yaml").read_text())
    assert list(validator.iter_errors(doc)) == []


def test_schema_rejects_misspelt_keys(validator):
    doc = yaml.safe_load((STACKS_DIR / "Pulumi.prod-aws.yaml").read_text())
    doc["config"]["gpu-platform:tenant"] = []
    doc["config"]["gpu-platform:nodePools"][0]["maxNode"] = 3
    messages = [e.message for e in validator.iter_errors(doc)]
    assert any("gpu-platform:tenant" in m for m in messages)
    assert any("maxNode" in m for m in messages)


def test_schema_allows_other_namespaces(validator):
    doc = {"config": {"gpu-platform:cloud": "existing", "kubernetes:context": "kind", "pulumi:tags": {"a": "b"}}}
    assert list(validator.iter_errors(doc)) == []


def test_schema_command_prints_it(capsys):
    assert cli.main(["schema"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(json.dumps(stack_file_schema()))
    enum = printed["$defs"]["GpuSpec"]["properties"]["model"]["enum"]
    assert {"T4", "A10G", "L4", "L40S", "A100-40GB", "A100-80GB", "H100", "H200", "B200"} <= set(enum)
