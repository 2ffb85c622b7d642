"""``components.spec``'s problem plumbing and the stack-file schema's outer shape.

SpecError is what every refusal goes through: its cuts (a path beyond 400 characters, a token beyond 80)
keep a hostile 5 MB value from becoming a 5 MB line. The schema's top level must accept what Pulumi itself
writes into a stack file (secrets-provider fields), which a stack file of a passphrase stack carries.
"""

from __future__ import annotations

import jsonschema
import pytest
from caching import shared_fixture
from conftest import stack_config

from components.spec.model import (
    NAMESPACE,
    Problem,
    SpecError,
    _cut,
    _near_namespace,
    _parse_int,
    _too_deep,
    decode_config,
    key,
    parse_spec,
    stack_file_schema,
)

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


@shared_fixture  # each test that reads it is mapped to the code that built it (make mutate)
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
    (pulumi/pulumi sdk/go/common/workspace/project.go ProjectStack; the Automation API's StackSettings): the
    schema types exactly those."""
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


# ----------------------------------------------------------------------------------- parsing the config map


def _problems(config: dict) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as err:
        parse_spec(config)
    return [(p.path, p.message) for p in err.value.problems]


def _with_tags(tags) -> list[tuple[str, str]]:
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:tags"] = tags
    return _problems(cfg)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (True, "must be a string, not True (YAML 1.1 reads on/off/yes/no/true/false as booleans: quote it)"),
        (None, "must be a string, not None (YAML reads an empty value, ~ or null as nothing: quote it)"),
        (5, "must be a string, not 5 (YAML reads it as a number: quote it)"),
        (2.5, "must be a string, not 2.5 (YAML reads it as a number: quote it)"),
        ([1], "must be a string, not <list>"),
    ],
)
def test_text_that_yaml_read_as_something_else_gets_a_hint(value, message):
    """YAML turns on/yes/~/12 into booleans, null and numbers: the message says what happened and to quote."""
    assert _with_tags({"team": value}) == [("gpu-platform:tags.team", message)]


def test_wrong_container_types():
    """A mapping given where a list goes, or text where a mapping goes, says which was expected."""
    assert _with_tags("team=ml") == [("gpu-platform:tags", "must be a mapping")]
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:tenants"] = {"ml-dev": {}}
    assert _problems(cfg) == [("gpu-platform:tenants", "must be a list")]


def test_config_keys_as_pulumi_reads_them():
    """Keys are namespace:name (or the old namespace:config:name); others are refused as Pulumi refuses them,
    a bare known field name with the namespaced form as hint, a near miss of our namespace named as such."""
    problems = _problems(
        {"gpu-platform:config:cloud": "gcp", "cloud": "gcp", "a:b:c": 1, ":x": 1, "gpu_platform:tenants": []}
    )
    assert problems == [
        (":x", "not a config key of the form namespace:name (Pulumi refuses it)"),
        ("a:b:c", "not a config key of the form namespace:name (Pulumi refuses it)"),
        ("cloud", "not a config key of the form namespace:name (Pulumi refuses it) (did you mean gpu-platform:cloud?)"),
        ("gpu_platform:tenants", "unknown namespace 'gpu_platform' (did you mean gpu-platform:tenants?)"),
    ]
    assert _problems({1: "a", "gpu-platform:cloud": "gcp"}) == [
        ("1", "config keys must be strings of the form namespace:name")
    ]
    assert parse_spec({"gpu-platform:config:cloud": "existing", "myorg:x": 1}).cloud == "existing"


def test_near_namespace():
    """Spelling slips of 'gpu-platform' are caught; other programs' namespaces are not."""
    for near in ("gpu_platform", "GPU-Platform", "gpuplatform", "gpu.platform", "gpu-platfrom", "gpu-platforms"):
        assert _near_namespace(near), near
    for other in ("aws", "gcp", "pulumi", "kubernetes", "myorg", "gpu"):
        assert not _near_namespace(other), other


def test_decode_config_as_the_engine_passes_it():
    """Strings holding JSON are decoded; plain text stays text; non-strings pass. A JSON number of more than 30
    digits under our namespace is a problem (the key is dropped); under another namespace it stays text."""
    problems: list[Problem] = []
    raw = {
        "gpu-platform:a": "1" * 31,
        "gpu-platform:b": "-" + "1" * 30,
        "other:x": "1" * 31,
        "c:d": '{"a": [1, true]}',
        "e:f": "not json",
        "g:h": 5,
    }
    assert decode_config(raw, problems) == {
        "gpu-platform:b": -int("1" * 30),
        "other:x": "1" * 31,
        "c:d": {"a": [1, True]},
        "e:f": "not json",
        "g:h": 5,
    }
    assert problems == [Problem("gpu-platform:a", "holds a number with 31 digits; not a value this program can use")]
    assert decode_config({"gpu-platform:a": "1" * 31}) == {"gpu-platform:a": "1" * 31}  # no list: kept as text


def test_nesting_limit_is_64_levels():
    """64 levels of mappings/lists under a key are read; 65 are refused at the key, before pydantic."""
    assert not _too_deep(_nest(64)) and _too_deep(_nest(65))
    assert not _too_deep("x") and not _too_deep([]) and not _too_deep({})
    assert _problems({"gpu-platform:cloud": "gcp", "gpu-platform:scheduling": _nest(65)}) == [
        ("gpu-platform:scheduling", "is nested more than 64 levels deep")
    ]


def _nest(levels: int):
    value: object = "leaf"
    for _ in range(levels):
        value = [value]
    return value


def test_cut_and_parse_int():
    """Pydantic's fallback messages are cut at 200 characters; integers up to 30 digits are read."""
    assert _cut("x" * 200) == "x" * 200 and _cut("x" * 201) == "x" * 200 + "…"
    assert _cut("abcd", 3) == "abc…"
    assert _parse_int("-" + "9" * 30) == -int("9" * 30)
    with pytest.raises(ValueError, match=r"^a number with 31 digits$"):
        _parse_int("9" * 31)


def test_provider_keys_fill_the_cluster_and_are_blamed_for_their_values():
    """aws:region / gcp:project become cluster.region / cluster.project unless the cluster sets them, and a
    bad value is reported at the provider key the user wrote."""
    assert _problems({"gpu-platform:cloud": "gcp", "gcp:project": "BAD"}) == [
        ("gcp:project", "'BAD' is not a GCP project ID (6 to 30 lower-case letters, digits and '-')")
    ]
    cfg = stack_config("dev-gcp")
    assert parse_spec(cfg).cluster.project == "ml-dev-project"
    cfg["gpu-platform:cluster"]["project"] = "own-project"
    assert parse_spec(cfg).cluster.project == "own-project"


# ------------------------------------------------------------------------------------------ spec lookups


def test_spec_lookups_and_derived_switches():
    """pool()/priority_class() find by name; Karpenter runs when asked or when a pool uses it; the Cluster
    Autoscaler (AWS only) when asked or when a managed pool exists."""
    aws = parse_spec(stack_config("dev-aws"))
    assert aws.pool("a10g-spot").name == "a10g-spot"
    with pytest.raises(StopIteration):
        aws.pool("nope")
    assert aws.priority_class("training").name == "training"
    assert aws.karpenter_enabled and aws.cluster_autoscaler_enabled
    off = stack_config("dev-aws")
    off["gpu-platform:addons"] = {**off["gpu-platform:addons"], "karpenter": False, "clusterAutoscaler": False}
    spec = parse_spec(off)
    assert not spec.karpenter_enabled and not spec.cluster_autoscaler_enabled
    managed_only = stack_config("dev-aws")
    managed_only["gpu-platform:nodePools"] = [
        p for p in managed_only["gpu-platform:nodePools"] if p["name"] == "l4-shared"
    ]
    managed_only["gpu-platform:tenants"][0]["gpuQuota"] = {"l4-shared": 4}
    spec = parse_spec(managed_only)
    assert not spec.karpenter_enabled and spec.cluster_autoscaler_enabled
    gcp = parse_spec(stack_config("dev-gcp"))
    assert not gcp.cluster_autoscaler_enabled and not gcp.karpenter_enabled
    existing = parse_spec(stack_config("local"))  # its pools are 'managed' by default, but nothing of ours scales
    assert existing.node_pools[0].provisioner == "managed" and not existing.cluster_autoscaler_enabled


# ------------------------------------------------------------------------------------------------ pools


@pytest.mark.parametrize(
    ("limits", "node_cap", "gpu_cap"),
    [
        ({"maxNodes": 3}, 3, 24),  # 3 nodes x 8 GPUs
        ({"maxGpus": 20}, 2, 20),  # a Karpenter GPU cap: whole nodes only (20 // 8), the cap itself
        ({"maxNodes": 3, "maxGpus": 20}, 3, 20),  # both: each as given
        ({}, 0, 0),
    ],
)
def test_pool_caps(limits: dict, node_cap: int, gpu_cap: int):
    """Most nodes and most GPUs of an 8-GPU pool, from maxNodes and/or maxGpus."""
    from components.spec.model import NodePool

    pool = NodePool.model_validate({"name": "p", "gpu": {"model": "H100", "perNode": 8}, **limits})
    assert (pool.node_cap, pool.gpu_cap) == (node_cap, gpu_cap)


def test_pool_without_limits_has_no_capacity_even_with_one_gpu_per_node():
    """No maxNodes and no maxGpus: no node at all (not one), whatever the GPUs per node."""
    from components.spec.model import NodePool

    pool = NodePool.model_validate({"name": "p", "gpu": {"model": "L4", "perNode": 1}})
    assert (pool.node_cap, pool.gpu_cap) == (0, 0)


def test_unknown_gpu_model_lists_the_known_ones_sorted():
    """A pool's gpu.model must be a catalogued GPU; the message lists them in alphabetical order."""
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:nodePools"][0]["gpu"]["model"] = "V100"
    assert _problems(cfg) == [
        (
            "gpu-platform:nodePools[0].gpu.model",
            "unknown GPU model 'V100' (known: A100-40GB, A100-80GB, A10G, B200, H100, H200, L4, L40S, T4)",
        )
    ]


# ------------------------------------------------------------------------------------- pydantic's messages


def _pool_problems(**changes) -> list[tuple[str, str]]:
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:nodePools"][0].update(changes)
    return _problems(cfg)


def test_unknown_keys_suggest_the_near_key_of_their_own_model():
    """A misspelt key is matched against the keys valid where it was written, at any depth; nothing close,
    no suggestion."""
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:nodePools"][0]["gpu"]["perNod"] = 1
    cfg["gpu-platform:cluster"]["nam"] = "x"
    cfg["gpu-platform:nodePools"][0]["zzz"] = 1
    assert _problems(cfg) == [
        ("gpu-platform:cluster.nam", "unknown key (did you mean name?)"),
        ("gpu-platform:nodePools[0].gpu.perNod", "unknown key (did you mean perNode?)"),
        ("gpu-platform:nodePools[0].zzz", "unknown key"),
    ]
    assert _pool_problems(sharing={"strategy": "time-slicing", "replicas": 2, "replica": 3}) == [
        ("gpu-platform:nodePools[0].sharing.replica", "unknown key (did you mean replicas?)")
    ]


def test_fields_at_a_path():
    """The keys valid beside the last part of a path: through lists (indices skipped) and nested models; none
    under a free-form mapping or an unknown key."""
    from components.spec.model import _fields_at

    assert _fields_at(("nodePools", 0, "gpu", "x")) == ["model", "perNode"]
    assert "maxNodes" in _fields_at(("nodePools", 0, "x"))
    assert "nodePools" in _fields_at(("x",))
    assert _fields_at(("tags", "x")) == []
    assert _fields_at(("zzz", "x")) == []


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"name": "Bad_Name"},
            "'Bad_Name' is not a valid name (lower-case letters, digits and '-', starting with "
            "a letter, ending with a letter or digit)",
        ),
        ({"maxNodes": "4"}, "must be a whole number, not '4'"),
        ({"maxNodes": 4.5}, "must be a whole number, not 4.5"),
        ({"minNodes": -1}, "must be at least 0"),
    ],
)
def test_pool_field_messages(changes: dict, message: str):
    """Pydantic's error types become the messages a stack author can act on."""
    (problem,) = _pool_problems(**changes)
    assert problem == (f"gpu-platform:nodePools[0].{next(iter(changes))}", message)


def test_choice_and_number_messages():
    """A literal lists its choices; a number field names what it got."""
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:cloud"] = "azure"
    cfg["gpu-platform:scheduling"] = {"oversubscriptionRatio": "x"}
    assert _problems(cfg) == [
        ("gpu-platform:cloud", "must be one of 'aws', 'gcp' or 'existing'"),
        ("gpu-platform:scheduling.oversubscriptionRatio", "must be a number, not 'x'"),
    ]


def test_a_bad_mapping_key_is_reported_at_the_key_as_a_key_problem():
    """When a label key (not its value) is wrong, the path ends at that key and the message says 'key'."""
    assert _pool_problems(labels={"Example.COM/team": "ml"}) == [
        (
            "gpu-platform:nodePools[0].labels.Example.COM/team",
            "key 'Example.COM/team': the prefix before '/' must be a DNS-1123 subdomain of at most 253 characters",
        )
    ]


def _spec_models() -> list[type]:
    from components.spec.base import Model

    out, todo = [], list(Model.__subclasses__())
    while todo:
        cls = todo.pop()
        out.append(cls)
        todo += cls.__subclasses__()
    return out


def test_spec_default_factories_are_functions_not_classes():
    """pydantic reads each default_factory's signature while it builds the model: a class (``list``, a model)
    costs a text-signature parse or the model's whole signature at import, a function nearly nothing
    (components/spec/base.py)."""
    import inspect

    models = _spec_models()
    assert len(models) > 40  # every model of the spec, not a few
    classes = [
        f"{m.__name__}.{name}"
        for m in models
        for name, f in m.model_fields.items()
        if f.default_factory is not None and not inspect.isfunction(f.default_factory)
    ]
    assert classes == []


def test_the_spec_model_modules_hand_pydantic_their_types_not_strings():
    """Without ``from __future__ import annotations`` a field's type reaches pydantic as an object; with it, as a
    string pydantic compiles and evaluates at import (~4 ms over the spec's fields: components/spec/base.py)."""
    import sys

    from components.spec.base import Model

    modules = {cls.__module__ for cls in _spec_models()} | {Model.__module__}
    assert len(modules) >= 9  # base, cluster, fleet, gke_create, images, model, options, pools, storage, tenants
    stringly = sorted(m for m in modules if "annotations" in vars(sys.modules[m]))
    assert stringly == []
