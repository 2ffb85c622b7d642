"""``components.spec``'s problem plumbing and the stack-file schema's outer shape.

SpecError is what every refusal goes through: its cuts (a path beyond 400 characters, a token beyond 80)
keep a hostile 5 MB value from becoming a 5 MB line. The schema's top level must accept what Pulumi itself
writes into a stack file (secrets-provider fields), which a stack file of a passphrase stack carries.
"""

from __future__ import annotations

import jsonschema
import pytest

from components.spec import NAMESPACE, Problem, SpecError, key, stack_file_schema

# ------------------------------------------------------------------------------------------ SpecError


def test_a_path_up_to_400_characters_is_kept_whole():
    """A legitimate label key path runs to ~317 characters; up to 400 it is shown exactly as written."""
    path = "p" * 400
    (problem,) = SpecError([Problem(path, "m")]).problems
    assert problem.path == path


def test_a_path_beyond_400_characters_is_cut():
    """At 401 characters the path is shortened like a message: the first 60 characters and the length."""
    (problem,) = SpecError([Problem("p" * 401, "m")]).problems
    assert problem.path == "p" * 60 + "…(401 characters)"


def test_message_tokens_up_to_80_characters_are_kept_and_longer_ones_cut():
    """A message is one line: whitespace runs collapse, tokens of 80 non-blank characters stay, 81 and more
    become their first 60 characters and their length."""
    message = "value\n\n  " + "a" * 80 + "\tand " + "b" * 81 + " end"
    (problem,) = SpecError([Problem("k", message)]).problems
    assert problem.message == "value " + "a" * 80 + " and " + "b" * 60 + "…(81 characters) end"


def test_problems_are_deduplicated_and_sorted_by_path_then_message():
    """The same problem found twice is reported once; the report reads top to bottom by key path."""
    err = SpecError(
        [Problem("b", "2"), Problem("a", "z"), Problem("b", "1"), Problem("a", "z")],
    )
    assert err.problems == [Problem("a", "z"), Problem("b", "1"), Problem("b", "2")]
    assert str(err) == "a: z\nb: 1\nb: 2"
    assert err.lines("stacks/Pulumi.x.yaml") == [
        "stacks/Pulumi.x.yaml: a: z",
        "stacks/Pulumi.x.yaml: b: 1",
        "stacks/Pulumi.x.yaml: b: 2",
    ]


def test_key_paths_in_stack_file_syntax():
    """key() builds the path a user finds in the stack file: namespace on the first part, [i] for items."""
    assert key("nodePools", 1, "sharing", "replicas") == "gpu-platform:nodePools[1].sharing.replicas"
    assert key("cloud") == "gpu-platform:cloud"
    assert key("tenants", 0, 2) == "gpu-platform:tenants[0][2]"
    assert key() == ""


# --------------------------------------------------------------------------------------------- schema


@pytest.fixture(scope="module")
def schema():
    return stack_file_schema()


def test_schema_outer_shape(schema):
    """A 2020-12 schema of an object; config requires the cloud, and the provider keys the program reads are
    described."""
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["title"] == "gpu-platform stack file"
    assert schema["type"] == "object"
    config = schema["properties"]["config"]
    assert config["type"] == "object"
    assert config["required"] == [f"{NAMESPACE}:cloud"]
    assert config["properties"]["aws:region"] == {"type": "string", "description": "AWS region of the EKS cluster"}
    assert config["properties"]["gcp:project"] == {"type": "string", "description": "GCP project of the GKE cluster"}


def test_schema_knows_pulumis_own_stack_file_fields(schema):
    """Pulumi writes secretsprovider, encryptedkey and encryptionsalt (strings) next to config in a stack file
    (pulumi/pulumi sdk/go/common/workspace/project.go, ProjectStack): the schema types exactly those."""
    assert set(schema["properties"]) == {"config", "secretsprovider", "encryptedkey", "encryptionsalt"}
    validator = jsonschema.Draft202012Validator(schema)
    base = {"config": {"gpu-platform:cloud": "existing"}}
    ok = {**base, "secretsprovider": "passphrase", "encryptedkey": "k", "encryptionsalt": "v1:abc"}
    assert list(validator.iter_errors(ok)) == []
    for field in ("secretsprovider", "encryptedkey", "encryptionsalt"):
        errors = list(validator.iter_errors({**base, field: 5}))
        assert [list(e.path) for e in errors] == [[field]], field


def test_schema_property_names(schema):
    """Our namespace's keys must be known ones; any other namespace passes (pattern anchored on 'gpu-platform:')."""
    validator = jsonschema.Draft202012Validator(schema)

    def names_ok(name: str) -> bool:
        return not list(validator.iter_errors({"config": {"gpu-platform:cloud": "existing", name: "x"}}))

    assert not names_ok("gpu-platform:tenant")
    assert names_ok("pulumi:tags")
    assert names_ok("my-gpu-platform:x")  # the namespace is matched at the start only
    assert names_ok("gpuXplatform:x")  # '-' is literal, not a pattern wildcard
