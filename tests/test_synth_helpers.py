"""``components.cli.synth``'s helpers, each on a small input: where a manifest is written, how numbers and text are
written (YAML and JSON), how the output directory is replaced, the placeholders answered for created
resources, and the settings the synth changes only while it renders. No render runs here."""

from __future__ import annotations

import gc
import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from components.cli import synth, synth_yaml

# ------------------------------------------------------------------------------------------- file names


@pytest.mark.parametrize(
    ("doc", "path"),
    [
        (
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "ns"}},
            "manifests/ns/configmap.core-x.yaml",
        ),
        (
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d", "namespace": "gpu"}},
            "manifests/gpu/daemonset.apps-d.yaml",
        ),
        (
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"}},
            "manifests/_cluster/clusterrole.rbac.authorization.k8s.io-r.yaml",
        ),
        ({"apiVersion": "v1", "kind": "Namespace", "metadata": None}, "manifests/_cluster/namespace.core-unnamed.yaml"),
        ({"apiVersion": "v1", "kind": "Namespace"}, "manifests/_cluster/namespace.core-unnamed.yaml"),
        (
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n", "namespace": ""}},
            "manifests/_cluster/namespace.core-n.yaml",
        ),
    ],
)
def test_manifest_path(doc, path):
    """One file per object: namespace folder (_cluster for cluster-scoped), kind in lower case, API group
    ('core' for the v1 group), name ('unnamed' when it has none)."""
    assert synth.manifest_path(doc) == path


# ------------------------------------------------------------------------------------------ serialising


def test_whole_floats_become_integers_everywhere():
    """The engine's wire format turns 2 into 2.0; written objects say 2 (kubectl refuses 1000.0 for an int32)."""
    out = synth._ints({"a": 2.0, "b": [1.0, 2.5, {"c": 0.0}], "d": True, "e": "3.0"})
    assert out == {"a": 2, "b": [1, 2.5, {"c": 0}], "d": True, "e": "3.0"}
    assert type(out["a"]) is int and type(out["b"][0]) is int and type(out["b"][2]["c"]) is int
    assert type(out["b"][1]) is float


def test_json_files_are_indented_sorted_and_end_with_a_newline():
    """resources.json, outputs.json and release.json: two-space indent, sorted keys, whole numbers as ints."""
    assert synth._json({"b": 1.0, "a": [2.0, "x"]}) == '{\n  "a": [\n    2,\n    "x"\n  ],\n  "b": 1\n}\n'


def _stock_json(doc) -> str:
    return json.dumps(synth._ints(doc), indent=2, sort_keys=True) + "\n"


@pytest.mark.parametrize(
    "doc",
    [
        {"b": [], "a": {}, "c": [{}, [[]], {"x": [1, 2.0, -0.0, 0.25, 1e300, -3]}]},
        [True, False, None, 'é ☃ \n\t"\\ \u0001', 2**70, float("inf"), -float("inf"), float("nan"), 1.5e-7],
        {"tuple": (1.0, {"b": 2.0}), "nested": {"z": 1, "a": {"m": [0.5, "x"]}}},  # a tuple: ints() leaves it as is
        {"bool": True, "key": {"1": 1}},
        "plain",
        3.0,
    ],
)
def test_json_files_are_the_text_json_dumps_writes(doc):
    """The synth's own JSON writer (``_json``, faster than the standard library's indenting encoder) writes
    exactly what ``json.dumps(..., indent=2, sort_keys=True)`` writes, whole floats as ints."""
    assert synth._json(doc) == _stock_json(doc)


@pytest.mark.parametrize(
    "doc",
    [[], {"a": [1.0]}, [{"b": 2.0, "a": [{}, []]}, "x", ("t", 1.0), {1: {"k": 1.0}}, [[0.5]], None], "s"],
)
def test_json_in_parts_joins_to_the_same_text(doc):
    """resources.json is written a resource at a time (``_json_parts``); the parts join to ``_json``'s text, an
    element json.dumps must write (a tuple, a non-string key) included."""
    assert "".join(synth_yaml._json_parts(doc)) == synth._json(doc) == _stock_json(doc)


def test_json_of_unusual_data_goes_the_standard_way():
    """Non-string keys and subclasses of JSON types (which json.dumps converts its own way) are written by it."""
    import enum

    class Level(enum.IntEnum):
        HIGH = 2

    class Name(str):
        pass

    for doc in ({1: "a", 2: {"b": 1.0}}, {"level": Level.HIGH}, [Name("n")], {"k": {"x": 1.0, "y": None}}):
        assert synth._json(doc) == _stock_json(doc)


@pytest.mark.parametrize("stack", ["prod-aws", "prod-gcp", "local"])
def test_a_shipped_stacks_files_are_the_same_with_json_dumps(stack, monkeypatch):
    """resources.json, outputs.json and every release.json of a shipped stack, byte for byte as json.dumps writes
    them from the rendered data."""
    from conftest import rendered

    from components.cli import synth_files

    fast = synth.files(rendered(stack))
    monkeypatch.setattr(synth_files, "_json", _stock_json)
    assert synth.files(rendered(stack)) == fast


def test_yaml_files_are_block_style_sorted_with_literal_multiline_text():
    """Manifests and values: block style, sorted keys, multi-line strings as literal blocks, YAML 1.1 words
    quoted so they read back as text, whole floats as ints."""
    doc = {"b": "x\ny", "a": 1.0, "c": [True, None, "yes", 1.5], "d": {}}
    assert synth._yaml(doc) == "a: 1\nb: |-\n  x\n  y\nc:\n- true\n- null\n- 'yes'\n- 1.5\nd: {}\n"


def test_yaml_lines_run_to_120_characters():
    """A 99-character value stays on its line (the default width, 80, would fold it)."""
    text = " ".join(["word"] * 20)
    assert synth._yaml({"a": text}) == f"a: {text}\n"


def test_yaml_folds_a_line_only_beyond_120_characters():
    """The emitter breaks plain text at the first blank once the line is longer than 120 characters: a 120-
    character line stays whole, a 121-character one is folded (and reads back the same)."""
    assert synth._yaml({"a": "x" * 117 + " y"}) == "a: " + "x" * 117 + " y\n"
    assert synth._yaml({"a": "x" * 118 + " y"}) == "a: " + "x" * 118 + "\n  y\n"


def test_plain_turns_tuples_into_lists_and_keys_into_strings():
    """Stack outputs as the engine's JSON would carry them."""
    assert synth._plain({1: ("a", {"b": (1, 2)}), "c": None}) == {"1": ["a", {"b": [1, 2]}], "c": None}


def test_config_for_engine_is_strings_with_objects_as_json():
    """What the Pulumi CLI hands a program: text as is, everything else JSON-encoded."""
    assert synth._config_for_engine({"a": "aws", "b": {"x": [1, True]}, "c": 3, "d": False}) == {
        "a": "aws",
        "b": '{"x": [1, true]}',
        "c": "3",
        "d": "false",
    }


# ---------------------------------------------------------------------------------------------- writing


def test_write_replaces_the_directory_with_exactly_these_files(tmp_path: Path):
    """A rerun leaves no stale file behind, creates nested folders, and leaves no staging directory."""
    out = tmp_path / "out" / "dev"
    synth.write(out, {"a.txt": "1", "old/b.txt": "2"})
    synth.write(out, {"a.txt": "3", "m/n/c.txt": "é\n"})
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert files == ["a.txt", "m/n/c.txt"]
    assert (out / "a.txt").read_text() == "3"
    assert (out / "m/n/c.txt").read_bytes() == "é\n".encode()
    assert sorted(p.name for p in out.parent.iterdir()) == ["dev"]


def test_a_failed_write_keeps_the_previous_output(tmp_path: Path):
    """If writing fails half-way, the previous directory is untouched and the staging copy is removed."""
    out = tmp_path / "dev"
    synth.write(out, {"a.txt": "kept"})
    with pytest.raises(TypeError):
        synth.write(out, {"a.txt": "new", "b.txt": 5})  # type: ignore[dict-item]
    assert (out / "a.txt").read_text() == "kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dev"]


def test_a_file_that_fails_to_be_made_keeps_the_previous_output(tmp_path: Path):
    """Files are written as they are made (``synth.file_items``): an error while making one (two objects at one
    path) leaves the previous directory untouched and no staging copy, though earlier files were written."""
    out = tmp_path / "dev"
    assert synth.write(out, {"a.txt": "kept"}).files == 1

    def made():
        yield "a.txt", "new"
        yield "m/b.txt", "new"
        raise RuntimeError("two objects render to m/b.txt")

    with pytest.raises(RuntimeError, match="two objects"):
        synth.write(out, made())
    assert sorted(p.name for p in out.rglob("*")) == ["a.txt"] and (out / "a.txt").read_text() == "kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dev"]


def test_files_as_they_are_made_are_written_like_a_mapping_of_them(tmp_path: Path):
    pairs = [("z.txt", "1"), ("m/n/c.txt", "é\n"), ("a.txt", "3")]
    assert synth.write(tmp_path / "p", iter(pairs)) == synth.Written(files=3, changed=3)
    assert synth.write(tmp_path / "m", dict(pairs)) == synth.Written(files=3, changed=3)
    for rel, text in pairs:
        assert (tmp_path / "p" / rel).read_bytes() == (tmp_path / "m" / rel).read_bytes() == text.encode()


def test_a_rewrite_leaves_the_files_whose_text_is_the_same_untouched(tmp_path: Path):
    """A re-synth writes only what changed: an unchanged file keeps its inode and mtime, a changed one is replaced
    with the new text, a file no longer made goes, and the counts say so."""
    out = tmp_path / "dev"
    first = {"same.txt": "s\n", "keep/deep/z.txt": "z", "changed.txt": "old", "gone/x.txt": "x"}
    assert synth.write(out, first).changed == 4
    same = ("same.txt", "keep/deep/z.txt")
    before = {name: os.stat(out / name) for name in same}
    for name in same:  # so that a rewrite could not keep the mtime
        os.utime(out / name, ns=(1_000_000_000, 1_000_000_000))
    written = synth.write(out, {"same.txt": "s\n", "keep/deep/z.txt": "z", "changed.txt": "new", "added/y.txt": "y"})
    assert written == synth.Written(files=4, changed=2)
    for name in same:
        after = os.stat(out / name)
        assert (after.st_ino, after.st_mtime_ns) == (before[name].st_ino, 1_000_000_000), name
    assert (out / "changed.txt").read_text() == "new" and (out / "added/y.txt").read_text() == "y"
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*"))
    assert files == [
        "added",
        "added/y.txt",
        "changed.txt",
        "keep",
        "keep/deep",
        "keep/deep/z.txt",
        "same.txt",
    ]  # the emptied folder went too
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dev"]


@pytest.mark.parametrize(
    "old, parts",
    [
        ("abcdef", ["ab", "cX", "ef"]),  # differs inside the second part
        ("abcdef", ["ab", "cd"]),  # the new text is the old one cut short
        ("abcd", ["ab", "cd", "ef"]),  # the new text goes on past the old one
        ("", ["é", "\n"]),  # an empty file, then text in two bytes a character
        ("ab", ["", "a", "", "b", "c"]),  # empty parts
    ],
)
def test_a_file_made_in_parts_is_compared_as_made_and_written_whole_when_it_differs(tmp_path: Path, old, parts):
    out = tmp_path / "dev"
    synth.write(out, {"f.txt": old})
    assert synth.write(out, [("f.txt", iter(parts))]) == synth.Written(files=1, changed=1)
    assert (out / "f.txt").read_bytes() == "".join(parts).encode()
    assert synth.write(out, [("f.txt", iter(parts))]) == synth.Written(files=1, changed=0)


def test_a_folder_and_a_file_may_swap_places_between_writes(tmp_path: Path):
    out = tmp_path / "dev"
    synth.write(out, {"a/b.txt": "1", "c": "2"})
    assert synth.write(out, {"a": "file now", "c/d.txt": "in a folder now"}).changed == 2
    assert (out / "a").read_text() == "file now" and (out / "c/d.txt").read_text() == "in a folder now"


def test_a_failed_rewrite_changes_no_file_of_the_previous_output(tmp_path: Path):
    out = tmp_path / "dev"
    synth.write(out, {"a.txt": "kept", "b.txt": "kept too"})

    def made():
        yield "a.txt", "new"
        yield "c.txt", "new"
        raise RuntimeError("two objects render to d.txt")

    with pytest.raises(RuntimeError):
        synth.write(out, made())
    assert {p.name: p.read_text() for p in out.iterdir()} == {"a.txt": "kept", "b.txt": "kept too"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dev"]


# ------------------------------------------------------------------------------------------ placeholders


def test_placeholder_outputs_of_aws_resources():
    """ARNs in the service's namespace with the placeholder account; the name given or the resource's own."""
    assert synth._placeholder_outputs("aws:iam/role:Role", "r", {"name": "gpu-node"}) == {
        "arn": "arn:aws:iam::000000000000:role/gpu-node",
        "name": "gpu-node",
    }
    assert synth._placeholder_outputs("aws:iam/policy:Policy", "p", {}) == {
        "arn": "arn:aws:iam::000000000000:policy/p",
        "name": "p",
    }
    assert synth._placeholder_outputs("aws:sqs/queue:Queue", "q", {"name": "int"})["url"] == (
        "https://sqs.placeholder.amazonaws.com.invalid/000000000000/int"
    )
    assert synth._placeholder_outputs("aws:ec2/launchTemplate:LaunchTemplate", "lt", {})["latestVersion"] == 1
    ng = synth._placeholder_outputs("aws:eks/nodeGroup:NodeGroup", "n", {"nodeGroupNamePrefix": "gpu-"})
    assert ng["nodeGroupName"] == "gpu-offline-placeholder"
    assert synth._placeholder_outputs("aws:eks/nodeGroup:NodeGroup", "n", {})["nodeGroupName"] == "offline-placeholder"


def test_placeholder_outputs_of_gcp_and_other_resources():
    """GCP resources get their name (and a service account its email); Kubernetes objects get nothing."""
    assert synth._placeholder_outputs("gcp:container/nodePool:NodePool", "np", {}) == {"name": "np"}
    assert synth._placeholder_outputs(
        "gcp:serviceaccount/account:Account", "sa", {"accountId": "a", "project": "p"}
    ) == {
        "name": "sa",
        "email": "a@p.iam.gserviceaccount.com",
    }
    assert synth._placeholder_outputs("gcp:serviceaccount/account:Account", "sa", {})["email"] == (
        "sa@offline-placeholder.iam.gserviceaccount.com"
    )
    assert synth._placeholder_outputs("kubernetes:core/v1:Namespace", "n", {"name": "x"}) == {}


def test_unknowns_become_the_engines_wire_sentinel():
    """Every unknown, at any depth, is recorded as pulumi's UNKNOWN string; known values stay."""
    from pulumi.output import Unknown

    assert synth.UNKNOWN == "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # pulumi.runtime.rpc.UNKNOWN
    value = {"a": Unknown(), "b": [1, Unknown(), {"c": Unknown()}], "d": "x"}
    assert synth._wire_unknowns(value) == {"a": synth.UNKNOWN, "b": [1, synth.UNKNOWN, {"c": synth.UNKNOWN}], "d": "x"}


def test_the_project_disables_the_default_kubernetes_provider():
    """Pulumi.yaml's pulumi:disable-default-providers, as the synth enforces it."""
    assert synth.disabled_default_providers() == frozenset({"kubernetes"})
    # the installed package carries no Pulumi.yaml: its copy of the setting is the same
    assert synth.PROJECT_DISABLED_DEFAULT_PROVIDERS == synth.disabled_default_providers(synth.ROOT / "Pulumi.yaml")


def test_without_a_project_file_the_projects_own_setting_holds(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(synth, "ROOT", tmp_path)  # as in site-packages: no Pulumi.yaml
    assert synth.disabled_default_providers() == synth.PROJECT_DISABLED_DEFAULT_PROVIDERS


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("config:\n  pulumi:disable-default-providers:\n    value: [aws, gcp]\n", {"aws", "gcp"}),
        ("config:\n  pulumi:disable-default-providers: ['*']\n", {"*"}),
        ("config:\n  other: 1\n", set()),
        ("name: x\n", set()),
        ("", set()),
    ],
)
def test_disabled_default_providers_in_either_config_form(tmp_path: Path, monkeypatch, text: str, expected):
    """Project config takes the plain value or the {value: ...} form; no setting disables nothing."""
    (tmp_path / "Pulumi.yaml").write_text(text)
    monkeypatch.setattr(synth, "ROOT", tmp_path)
    assert synth.disabled_default_providers() == frozenset(expected)


# ------------------------------------------------------------------------------- settings while rendering


def test_collector_thresholds_are_relaxed_only_inside_and_restored_after_an_error():
    """The synth's GC thresholds apply inside the block only, and the previous ones come back even on error;
    lean=False changes nothing."""
    before = gc.get_threshold()
    with synth._collector_relaxed(True):
        assert gc.get_threshold() == (20_000, 50, 50)
    assert gc.get_threshold() == before
    with pytest.raises(RuntimeError), synth._collector_relaxed(True):
        raise RuntimeError
    assert gc.get_threshold() == before
    with synth._collector_relaxed(False):
        assert gc.get_threshold() == before


def test_stack_traces_are_skipped_only_inside_and_restored_after():
    """The SDK's per-resource stack capture is replaced by an empty trace inside the block only."""
    from pulumi.runtime import resource as sdk_resource
    from pulumi.runtime.proto import source_pb2

    capture = sdk_resource._get_stack_trace
    with synth._without_stack_traces(True):
        assert sdk_resource._get_stack_trace is source_pb2.StackTrace
    assert sdk_resource._get_stack_trace is capture
    with pytest.raises(RuntimeError), synth._without_stack_traces(True):
        raise RuntimeError
    assert sdk_resource._get_stack_trace is capture
    with synth._without_stack_traces(False):
        assert sdk_resource._get_stack_trace is capture


def test_debug_logs_go_out_only_while_the_root_logger_shows_debug_and_warnings_always(monkeypatch):
    """Inside the block the SDK's per-resource debug messages are sent only while the mock engine's root logger shows
    DEBUG, asked per message (a program may turn it on while it runs); lean=False sends them all; warnings are not
    touched; the SDK's own function is back after the block, also after an error."""
    import logging

    from pulumi import log as sdk_log

    sent: list[str] = []
    monkeypatch.setattr(sdk_log, "debug", lambda msg, *a, **kw: sent.append(msg))
    send, warn = sdk_log.debug, sdk_log.warn
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.WARNING)
    try:
        with synth._without_debug_logs(True):
            assert sdk_log.warn is warn
            sdk_log.debug("registering")
            root.setLevel(logging.DEBUG)
            sdk_log.debug("prepared")
            root.setLevel(logging.WARNING)
            sdk_log.debug("successful")
        assert sent == ["prepared"]
        assert sdk_log.debug is send
        with pytest.raises(RuntimeError), synth._without_debug_logs(True):
            raise RuntimeError
        assert sdk_log.debug is send
        with synth._without_debug_logs(False):
            sdk_log.debug("lean=False")
        assert sent == ["prepared", "lean=False"]
    finally:
        root.setLevel(level)


def test_the_lean_monitor_responds_and_records_as_the_sdks_mock_monitor():
    """A lean synth's monitor (synth_lean._answering_monitor) sends an empty answer without serializing it: for an
    empty answer, a non-empty one, a child and the stack, its responses and registrations are the SDK's own."""
    from google.protobuf import struct_pb2
    from pulumi.runtime import settings
    from pulumi.runtime.mocks import MockMonitor
    from pulumi.runtime.proto import resource_pb2

    from components.cli.synth_lean import _answering_monitor

    class Answers:
        lean = True

        def new_resource(self, args):
            return f"id-{args.name}", ({"arn": f"arn:{args.name}", "n": 1} if args.typ.startswith("aws:") else {})

    inputs = struct_pb2.Struct()
    inputs.update({"metadata": {"name": "cm", "labels": {"a": "b"}}, "data": {"k": "v"}, "replicas": 2})
    parent = "urn:pulumi:s::p::gpu-platform:x:Component::c"
    requests = [
        resource_pb2.RegisterResourceRequest(type="kubernetes:core/v1:Secret", name="cm", custom=True, object=inputs),
        resource_pb2.RegisterResourceRequest(type="aws:iam/role:Role", name="r", custom=True, parent=parent),
        resource_pb2.RegisterResourceRequest(type="gpu-platform:x:Component", name="c", object=inputs),
        resource_pb2.RegisterResourceRequest(type="pulumi:pulumi:Stack", name="p-s"),
    ]
    settings.reset_options(project="p", stack="s")  # the URNs' project and stack
    try:
        lean, sdk = _answering_monitor()(Answers()), MockMonitor(Answers())
        for request in requests:
            assert lean.RegisterResource(request) == sdk.RegisterResource(request), request.name
        assert lean.resources == sdk.resources and len(sdk.resources) == 3
    finally:
        settings.reset_options()


# ------------------------------------------------------------------------------------------------ files


def _files_rendering(manifests=(), releases=()):
    """A stand-in rendering: files() reads only these attributes (the summary and cost read the spec)."""
    import yaml
    from conftest import STACKS_DIR

    from components.cli.loader import load_spec

    config = yaml.safe_load((STACKS_DIR / "Pulumi.dev-gcp.yaml").read_text())["config"]
    resource = SimpleNamespace(
        type="kubernetes:core/v1:Namespace",
        name="ns",
        parent="urn:parent",
        provider="urn:provider",
        inputs={"metadata": {"name": "ns"}, "n": 2.0},
        depends_on=["urn:dep"],
    )
    return SimpleNamespace(
        spec=load_spec(config),
        stack="dev-gcp",
        resources=[resource],
        manifests=list(manifests),
        releases=list(releases),
        outputs={"gpuPools": ["a"], "n": 1.0},
        unanswered_lookups=(),
    )


def test_files_writes_each_release_as_its_record_and_values():
    """helm/<release>/release.json records chart, repository, version, namespace and skipCrds (false unless
    set); values.yaml is the values, or an empty mapping."""
    kueue = SimpleNamespace(
        name="kueue-release",
        inputs={
            "name": "kueue",
            "chart": "kueue",
            "repositoryOpts": {"repo": "oci://registry.k8s.io/kueue/charts"},
            "version": "0.19.2",
            "namespace": "kueue-system",
            "values": {"replicas": 2.0},
        },
    )
    bare = SimpleNamespace(name="bare", inputs={"chart": "./local", "skipCrds": True})
    out = synth.files(_files_rendering(releases=[kueue, bare]))
    assert out["helm/kueue/release.json"] == (
        "{\n"
        '  "chart": "kueue",\n'
        '  "namespace": "kueue-system",\n'
        '  "repository": "oci://registry.k8s.io/kueue/charts",\n'
        '  "skipCrds": false,\n'
        '  "version": "0.19.2"\n'
        "}\n"
    )
    assert out["helm/kueue/values.yaml"] == "replicas: 2\n"
    assert out["helm/bare/release.json"] == (
        '{\n  "chart": "./local",\n  "namespace": null,\n  "repository": null,\n  "skipCrds": true,\n'
        '  "version": null\n}\n'
    )
    assert out["helm/bare/values.yaml"] == "{}\n"


def test_files_lists_resources_manifests_outputs_summary_and_cost():
    """One file per manifest at its path; resources.json and outputs.json as the engine received them (whole
    numbers as ints); summary.md and cost.json beside them."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}, "data": {"a": "b"}}
    out = synth.files(_files_rendering(manifests=[cm]))
    assert sorted(out) == [
        "cost.json",
        "manifests/n/configmap.core-c.yaml",
        "outputs.json",
        "plan.html",
        "resources.json",
        "summary.md",
    ]
    assert out["manifests/n/configmap.core-c.yaml"] == (
        "apiVersion: v1\ndata:\n  a: b\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: n\n"
    )
    assert json.loads(out["resources.json"]) == [
        {
            "type": "kubernetes:core/v1:Namespace",
            "name": "ns",
            "parent": "urn:parent",
            "provider": "urn:provider",
            "inputs": {"metadata": {"name": "ns"}, "n": 2},
            "dependsOn": ["urn:dep"],
        }
    ]
    assert out["outputs.json"] == '{\n  "gpuPools": [\n    "a"\n  ],\n  "n": 1\n}\n'
    assert out["summary.md"].startswith("# gpu-platform synth: dev-gcp\n")
    assert json.loads(out["cost.json"])["stack"] == "dev-gcp"


def test_files_refuses_two_objects_at_one_path():
    """Two objects that would overwrite each other's file are a bug, not a silent loss."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}}
    with pytest.raises(RuntimeError, match=r"^two objects render to manifests/n/configmap\.core-c\.yaml$"):
        synth.files(_files_rendering(manifests=[cm, dict(cm)]))


# ---------------------------------------------------------------------------------------- mock engine


def _mocks(**kwargs):
    mocks_cls, _ = synth._mock_classes()
    return mocks_cls(**kwargs)


def _role_args(custom: bool = True, inputs: dict | None = None):
    from pulumi.runtime import MockResourceArgs

    return MockResourceArgs("aws:iam/role:Role", "r", inputs if inputs is not None else {"name": "x"}, custom=custom)


ROLE_ARN = "arn:aws:iam::000000000000:role/x"


def test_mock_answers_placeholders_the_inputs_do_not_set():
    """Outside a preview a created resource gets an id and the placeholder outputs; an input wins over a
    placeholder of the same name (lean sends only the missing ones; the full echo merges them the same way)."""
    lean = _mocks()
    assert lean.new_resource(_role_args()) == ("offline-placeholder-r", {"arn": ROLE_ARN})
    assert lean.inputs[("aws:iam/role:Role", "r")] == {"name": "x"}
    full = _mocks(lean=False)
    assert full.new_resource(_role_args()) == ("offline-placeholder-r", {"arn": ROLE_ARN, "name": "x"})
    assert _mocks().new_resource(_role_args(custom=False))[0] == ""  # a component has no id
    own_arn = {"name": "x", "arn": "arn:aws:iam::1:role/own"}
    assert full.new_resource(_role_args(inputs=own_arn)) == ("offline-placeholder-r", own_arn)
    assert lean.new_resource(_role_args(inputs=own_arn)) == ("offline-placeholder-r", {})


def test_mock_preview_answers_no_id_and_records_unknowns():
    """A first preview: no id, the inputs sent back as they are, unknowns as the wire sentinel (never lean)."""
    from pulumi.output import Unknown

    mocks = _mocks(preview=True, lean=True)
    assert mocks.lean is False
    assert mocks.new_resource(_role_args(inputs={"name": "x", "arn": Unknown()})) == (
        "",
        {"name": "x", "arn": synth.UNKNOWN},
    )
    assert mocks.inputs[("aws:iam/role:Role", "r")] == {"name": "x", "arn": synth.UNKNOWN}


def test_mock_lookups_are_recorded_and_unknown_ones_answer_empty():
    """Every lookup is recorded; one without a placeholder answers {} and is listed as unanswered."""
    from pulumi.runtime import MockCallArgs

    mocks = _mocks()
    partition = mocks.call(MockCallArgs("aws:index/getPartition:getPartition", {}, ""))
    assert partition == {"partition": "aws", "dnsSuffix": "amazonaws.com", "id": "aws"}
    assert mocks.call(MockCallArgs("aws:x/y:z", {}, "")) == {}
    assert (mocks.lookups, mocks.unanswered) == (["aws:index/getPartition:getPartition", "aws:x/y:z"], ["aws:x/y:z"])


def _monitor():
    _, monitor_cls = synth._mock_classes()
    monitor = monitor_cls(_mocks())
    monitor.stack_name = "dev"
    monitor.stack_urn = "urn:pulumi:dev::gpu-platform::pulumi:pulumi:Stack::gpu-platform-dev"
    monitor.engine_urns["mock-parent"] = "urn:pulumi:dev::gpu-platform::a:b:Outer$c:d:Inner::p"
    return monitor


def test_engine_urns_carry_the_parents_full_type_chain():
    """pulumi/pulumi deployment.go: a child's URN type is its parent's qualified type chain, '$', its own type;
    children of the root stack (or of nothing) have their own type only."""
    m = _monitor()
    assert m.engine_urn(None, "t:m:T", "n") == "urn:pulumi:dev::gpu-platform::t:m:T::n"
    assert m.engine_urn(m.stack_urn, "t:m:T", "n") == "urn:pulumi:dev::gpu-platform::t:m:T::n"
    assert m.engine_urn("mock-parent", "t:m:T", "n") == "urn:pulumi:dev::gpu-platform::a:b:Outer$c:d:Inner$t:m:T::n"
    assert m.engine_urn(None, "t:m:T", "n", "prod", "other") == "urn:pulumi:prod::other::t:m:T::n"


def test_alias_urns_default_to_the_resources_own_fields():
    """pulumi/pulumi alias.go: an alias given as a URN is that URN; a spec alias takes the resource's own
    name, type and parent for what it leaves unset, and noParent means the root."""
    from types import SimpleNamespace as NS

    from pulumi.runtime.proto import alias_pb2

    m = _monitor()
    request = NS(type="t:m:T", name="new", parent="mock-parent")
    assert m._alias_urn(request, alias_pb2.Alias(urn="urn:x")) == "urn:x"
    spec = alias_pb2.Alias.Spec
    assert m._alias_urn(request, alias_pb2.Alias(spec=spec(name="old"))) == (
        "urn:pulumi:dev::gpu-platform::a:b:Outer$c:d:Inner$t:m:T::old"
    )
    assert m._alias_urn(request, alias_pb2.Alias(spec=spec(name="old", noParent=True))) == (
        "urn:pulumi:dev::gpu-platform::t:m:T::old"
    )
    assert m._alias_urn(request, alias_pb2.Alias(spec=spec(type="t:m:Old"))) == (
        "urn:pulumi:dev::gpu-platform::a:b:Outer$c:d:Inner$t:m:Old::new"
    )
    m.engine_urns["mock-other"] = "urn:pulumi:dev::gpu-platform::x:y:Z::o"
    assert m._alias_urn(request, alias_pb2.Alias(spec=spec(parentUrn="mock-other"))) == (
        "urn:pulumi:dev::gpu-platform::x:y:Z$t:m:T::new"  # the alias's own parent wins
    )
    no_parent = NS(type="t:m:T", name="new", parent="")
    assert m._alias_urn(no_parent, alias_pb2.Alias(spec=spec(parentUrn="mock-parent"))) == (
        "urn:pulumi:dev::gpu-platform::a:b:Outer$c:d:Inner$t:m:T::new"
    )
    assert m._alias_urn(no_parent, alias_pb2.Alias(spec=spec(name="old", stack="s", project="p"))) == (
        "urn:pulumi:s::p::t:m:T::old"
    )


# ----------------------------------------------------------------------------------------- stack outputs


def _resolve(make):
    """Run ``synth._resolved`` on what ``make`` builds inside the SDK's event loop."""
    import asyncio

    from pulumi.runtime.sync_await import _sync_await

    async def run():
        loop = asyncio.get_event_loop()

        def output(value, known=True):
            import pulumi

            f, k = loop.create_future(), loop.create_future()
            f.set_result(value)
            k.set_result(known)
            return pulumi.Output(set(), f, k)

        return await synth._resolved(make(output))

    return _sync_await(run())


def test_resolved_awaits_outputs_at_any_depth_and_keeps_plain_data():
    """Outputs (an Output of an Output too) and awaitables become their values, in dicts, lists and tuples
    (kept as tuples); plain leaves are returned as they are."""

    async def seven():
        return 7

    def make(out):
        async def an_output():
            return out({"k": out(3)})

        return {
            "a": out(5),
            "l": [out(5), (1, out("x"))],
            "nested": out(out([1, 2])),
            "w": seven(),
            "p": "t",
            "wo": an_output(),
        }

    got = _resolve(make)
    assert got == {"a": 5, "l": [5, (1, "x")], "nested": [1, 2], "w": 7, "p": "t", "wo": {"k": 3}}
    assert isinstance(got["l"][1], tuple)


def test_resolved_is_none_when_any_output_is_unknown():
    """A preview's outputs: one unknown value anywhere (also inside an args class) makes them all unknown."""
    from pulumi_kubernetes.meta.v1 import ObjectMetaArgs

    assert _resolve(lambda out: {"a": 1, "deep": [{"b": out("x", known=False)}]}) is None
    assert _resolve(lambda out: {"m": ObjectMetaArgs(name=out("n", known=False))}) is None
    known = _resolve(lambda out: {"m": ObjectMetaArgs(name="n")})["m"]  # a known args class: left to the SDK
    assert isinstance(known, ObjectMetaArgs) and known.name == "n"


def test_recorded_inputs_hold_each_equal_string_once():
    """The recorder keeps every resource's inputs to the end of the command; equal strings (names, labels, keys,
    deserialized afresh for every resource) are one object, which is what keeps the big stack's peak memory down."""
    from conftest import rendered

    seen: dict[str, int] = {}
    duplicates = []

    def walk(value):
        if isinstance(value, dict):
            for k, v in value.items():
                walk(k)
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif type(value) is str:
            if seen.setdefault(value, id(value)) != id(value):
                duplicates.append(value)

    for record in rendered("prod-aws").resources:
        walk(record.inputs)
    assert len(seen) > 100 and duplicates == []


def test_a_secret_is_masked_when_strings_are_shared():
    from components.cli.synth_resolve import _SECRET_SIG, SECRET_SHOWN, _secrets_shown

    table: dict[str, str] = {}
    secret = {_SECRET_SIG[0]: _SECRET_SIG[1], "value": {"token": "s3cr3t"}}
    shown = _secrets_shown({"name": "n" * 3, "auth": secret, "tags": ["n" * 3]}, table)
    assert shown == {"name": "nnn", "auth": {"token": SECRET_SHOWN}, "tags": ["nnn"]}
    assert shown["name"] is shown["tags"][0] and "s3cr3t" not in table
