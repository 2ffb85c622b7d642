"""The coverage stacks (tests/fixtures/coverage/) and the shipped stacks together use every option the stack
file schema offers at least once: every key path, and every value of every enumerated key. The cluster tests
(`make cluster-test`) put each of them on a real API server, so no option reaches users without meeting one.

Coverage stacks, because some options exclude each other (a stack has one cloud, one Prometheus mode, one
driver, a cluster found or created): `coverage-aws`, `coverage-gcp`, `coverage-gcp-create` (the GKE cluster
created, issue 30) and `coverage-existing`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, STACKS_DIR

from components.cli import main as cli
from components.spec import stackfile
from components.spec.model import stack_file_schema

COVERAGE = ROOT / "tests" / "fixtures" / "coverage"
COVERAGE_FILES = sorted(COVERAGE.glob("Pulumi.*.yaml"))
# Keys of the stack file that are Pulumi's, not the package's (secrets configuration), and never set by hand.
PULUMI_KEYS = {"encryptedkey", "encryptionsalt", "secretsprovider"}


def _schema_options() -> tuple[set[str], dict[str, set[str]]]:
    """Every key path (``[]`` for list items, ``*`` for any map key) and every enumerated value, from the schema."""
    schema = stack_file_schema()
    defs = schema.get("$defs", {})
    paths: set[str] = set()
    enums: dict[str, set[str]] = {}

    def walk(node: dict[str, Any], path: str, seen: tuple[str, ...] = ()) -> None:
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[1]
            if name not in seen:
                walk(defs[name], path, (*seen, name))
            return
        for value in node.get("enum", []) + ([node["const"]] if "const" in node else []):
            enums.setdefault(path, set()).add(str(value))
        for key in ("anyOf", "oneOf", "allOf"):
            for sub in node.get(key, []):
                walk(sub, path, seen)
        for key, sub in node.get("properties", {}).items():
            child = f"{path}.{key}" if path else key
            paths.add(child)
            walk(sub, child, seen)
        if isinstance(node.get("items"), dict):
            walk(node["items"], f"{path}[]", seen)
        if isinstance(node.get("additionalProperties"), dict):
            paths.add(f"{path}.*")
            walk(node["additionalProperties"], f"{path}.*", seen)

    walk(schema, "")
    return paths, enums


def _used(doc: Any, path: str, paths: set[str], values: dict[str, set[str]], schema_paths: set[str]) -> None:
    if isinstance(doc, dict):
        for key, value in doc.items():
            child = f"{path}.{key}" if path else key
            if child not in schema_paths and f"{path}.*" in schema_paths:  # a map with free keys
                child = f"{path}.*"
            paths.add(child)
            _used(value, child, paths, values, schema_paths)
    elif isinstance(doc, list):
        for item in doc:
            _used(item, f"{path}[]", paths, values, schema_paths)
    else:
        values.setdefault(path, set()).add(str(doc).lower() if isinstance(doc, bool) else str(doc))


def _stack_files() -> list[Path]:
    return sorted(STACKS_DIR.glob("Pulumi.*.yaml")) + COVERAGE_FILES


def test_there_is_a_coverage_stack_per_cloud():
    names = [p.name for p in COVERAGE_FILES]
    assert names == [
        "Pulumi.coverage-aws-create.yaml",
        "Pulumi.coverage-aws-from-stack.yaml",
        "Pulumi.coverage-aws.yaml",
        "Pulumi.coverage-existing.yaml",
        "Pulumi.coverage-fleet-worker-a.yaml",
        "Pulumi.coverage-fleet-worker-b.yaml",
        "Pulumi.coverage-fleet.yaml",
        "Pulumi.coverage-gcp-create.yaml",
        "Pulumi.coverage-gcp.yaml",
    ]


def test_every_schema_option_is_used_by_some_stack():
    schema_paths, schema_enums = _schema_options()
    paths: set[str] = set()
    values: dict[str, set[str]] = {}
    for path in _stack_files():
        _used({"config": stackfile.read(path)}, "", paths, values, schema_paths)
    missing = sorted(p for p in schema_paths - paths if p.rsplit(".", 1)[-1] not in PULUMI_KEYS)
    assert missing == [], "no stack sets these keys"
    unused = {p: sorted(v - values.get(p, set())) for p, v in schema_enums.items() if v - values.get(p, set())}
    assert unused == {}, "no stack uses these values"


@pytest.mark.parametrize("path", COVERAGE_FILES, ids=lambda p: p.stem)
def test_a_coverage_stack_is_valid_and_passes_its_policies(path: Path, capsys):
    """Valid, and no mandatory policy fails; with the policy config beside it when there is one (coverage-aws
    takes Kueue from a mirror, which an organisation allows in its policy config, not in the stack file)."""
    stack = path.name[len("Pulumi.") : -len(".yaml")]
    policy_config = path.with_name(f"policy-config.{stack}.json")
    extra = ["--policy-config", str(policy_config)] if policy_config.exists() else []
    rc = cli.main(["check", stack, "--config", str(path), *extra])
    err = capsys.readouterr().err
    assert rc == 0, err


def test_the_mirror_of_coverage_aws_is_refused_without_its_policy_config(capsys):
    """The policy allows exactly the sources its config lists: the same stack without the config fails."""
    path = COVERAGE / "Pulumi.coverage-aws.yaml"
    assert cli.main(["check", "coverage-aws", "--config", str(path)]) == 1
    err = capsys.readouterr().err
    assert "comes from oci://registry.example.com/charts, which is not allow-listed" in err
