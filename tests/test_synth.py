"""The offline synth: same code path as `pulumi up`, deterministic output, complete manifests."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest
import yaml
from conftest import K8S_PROVIDER, ROOT, STACKS, rendered, stack_config

from components.cli import main as cli, synth, synth_yaml


def _tree(path):
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def test_shipped_stacks():
    assert set(STACKS) >= {"dev-aws", "prod-aws", "dev-gcp", "prod-gcp", "local"}


def test_synth_is_byte_identical_on_rerun(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    assert cli.main(["synth", "prod-aws", "--out", str(a)]) == 0  # no mandatory policy violation
    assert cli.main(["synth", "prod-aws", "--out", str(b)]) == 0  # no mandatory policy violation
    ta, tb = _tree(a), _tree(b)
    assert ta == tb
    assert {"resources.json", "summary.md", "plan.html"} <= set(ta)  # the page too (issue 41.6)


def test_rerun_replaces_stale_files(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "stale.yaml").write_text("old")
    cli.main(["synth", "local", "--out", str(out)])
    assert not (out / "stale.yaml").exists()
    assert (out / "resources.json").exists()


def test_runs_the_real_program():
    """The synth executes __main__.py (not a re-implementation) through the mock engine."""
    assert synth.PROGRAM == ROOT / "__main__.py" and synth.default_program() == synth.PROGRAM
    text = synth.PROGRAM.read_text()
    assert "spec_from_pulumi_config" in text and "run(" in text
    # the installed package's copy of the program (it has no __main__.py) makes the same call
    import inspect

    packaged = inspect.getsource(synth._packaged_program)
    assert "run(spec_from_pulumi_config())" in text and "run(spec_from_pulumi_config())" in packaged
    r = rendered("local")
    # the stack exports of __main__'s program ran, and the explicit provider was registered by it
    assert [x.name for x in r.of_type(K8S_PROVIDER)] == ["kubernetes"]


@pytest.mark.parametrize("stack", STACKS)
def test_every_kubernetes_resource_gets_the_explicit_provider(stack):
    r = rendered(stack)
    k8s = [x for x in r.resources if x.type.startswith("kubernetes:")]
    assert k8s
    for rec in k8s:
        assert rec.provider == "kubernetes", (rec.type, rec.name, rec.provider)


@pytest.mark.parametrize("stack", STACKS)
def test_manifests_are_complete_documents(stack):
    r = rendered(stack)
    files = synth.files(r)
    manifests = {k: yaml.safe_load(v) for k, v in files.items() if k.startswith("manifests/")}
    assert len(manifests) == len(r.manifests) > 0
    for path, doc in manifests.items():
        assert {"apiVersion", "kind", "metadata"} <= set(doc), path
        assert doc["metadata"]["name"], path
        ns = doc["metadata"].get("namespace") or "_cluster"
        assert path.startswith(f"manifests/{ns}/"), path


@pytest.mark.parametrize("stack", STACKS)
def test_resources_json_shape(stack):
    r = rendered(stack)
    doc = json.loads(synth.files(r)["resources.json"])
    assert [(d["type"], d["name"]) for d in doc] == sorted((d["type"], d["name"]) for d in doc)
    names = {d["name"] for d in doc}
    for d in doc:
        assert set(d) == {"type", "name", "parent", "provider", "inputs", "dependsOn"}
        assert d["parent"] is None or d["parent"] in names
        assert all(dep in names for dep in d["dependsOn"]), d


def test_resource_quota_depends_on_its_namespace():
    r = rendered("prod-aws")
    quota = r.find("kubernetes:core/v1:ResourceQuota", "research-gpu-quota")
    assert quota.depends_on == ["research-namespace"]
    assert quota.parent == "tenancy"


@pytest.mark.parametrize("stack", ["prod-aws", "prod-gcp"])
def test_reordering_pools_and_tenants_replaces_nothing(stack):
    """Names come from stable keys: reversed lists give the same resources with the same inputs."""
    cfg = stack_config(stack)
    cfg["gpu-platform:nodePools"].reverse()
    cfg["gpu-platform:tenants"].reverse()
    before = {(x.type, x.name): x.inputs for x in rendered(stack).resources}
    after = {(x.type, x.name): x.inputs for x in synth.render(stack, cfg).resources}
    assert before.keys() == after.keys()
    changed = [k for k in before if before[k] != after[k]]
    assert changed == []


def test_summary_says_offline_and_lists_pools_and_tenants():
    text = synth.files(rendered("prod-aws"))["summary.md"]
    assert "Offline synth" in text and "offline-placeholder" in text
    assert "| a100-train | 8x A100-80GB | managed | on-demand | 0..4 | 32 |" in text
    # research: 16 GPUs on a100-train + 16 on h100-spot, whole GPUs -> 32 nvidia.com/gpu units
    # ResourceQuota cap: what Kueue can admit; no other ClusterQueue of the cohort lends on a100-train or h100-spot,
    # so its borrowingLimit 8 adds nothing: 16 + 16 -> 32; Kueue tenant
    assert "| research | a100-train: 16, h100-spot: 16 | 32 nvidia.com/gpu | 32 nvidia.com/gpu | kueue |" in text
    assert "| a100-gang | 8x A100-80GB | managed | on-demand | 0..2 | 16 |" in text
    # applied-ml, a Volcano tenant: 16 whole GPUs on a100-gang -> 16 units; its cap is the pool's 2 x 8 = 16
    assert "| applied-ml | a100-gang: 16 | 16 nvidia.com/gpu | 16 nvidia.com/gpu | volcano | training |" in text


def test_summary_warns_on_oversubscription():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:tenants"].append({"name": "extra", "gpuQuota": {"l4-shared": 4}})
    text = synth.files(synth.render("dev-aws", cfg))["summary.md"]
    # l4-shared brings 4 nodes x 1 GPU x 4 replicas = 16 units; quotas now 2 x 4 GPUs x 4 = 32
    assert "pool l4-shared: tenant quotas are 2.00x what it can bring (allowed 1x" in text


def test_lookups_are_placeholders():
    r = rendered("prod-aws")
    assert "aws:eks/getCluster:getCluster" in r.lookups
    assert r.unanswered_lookups == []
    provider = r.find(K8S_PROVIDER, "kubernetes")
    kubeconfig = json.loads(provider.inputs["kubeconfig"])
    assert "offline-placeholder" in kubeconfig["clusters"][0]["cluster"]["server"]
    user = kubeconfig["users"][0]["user"]["exec"]
    assert user["command"] == "aws"
    assert user["args"][:4] == ["eks", "get-token", "--cluster-name", "ml-prod"]
    assert "--region" in user["args"] and "us-east-1" in user["args"]


def test_gke_kubeconfig_uses_auth_plugin():
    provider = rendered("dev-gcp").find(K8S_PROVIDER, "kubernetes")
    kubeconfig = json.loads(provider.inputs["kubeconfig"])
    assert kubeconfig["users"][0]["user"]["exec"]["command"] == "gke-gcloud-auth-plugin"


def test_existing_cluster_uses_context():
    provider = rendered("local").find(K8S_PROVIDER, "kubernetes")
    assert provider.inputs["context"] == "kind-gpu"


def test_console_script_renders_default_stack(tmp_path):
    """The README's synth command path: a real process, exit 0, files on disk."""
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "components.cli", "synth", "dev-aws", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert (out / "summary.md").read_text().startswith("# gpu-platform synth: dev-aws")
    assert "Traceback" not in proc.stderr


def test_only_the_console_script_freezes_its_heap_on_the_way_out(tmp_path, monkeypatch, capsys):
    """The console script (argv from the process) freezes the heap once the command is done, so the exit skips
    full collections over it; a caller passing its own arguments (a test, a library) keeps a collectable heap."""
    import gc

    # (the synth command freezes the rendered heap while it writes, and unfreezes it: issue 42; what counts is the
    # heap the caller gets back)
    assert gc.get_freeze_count() == 0
    assert cli.main(["synth", "local", "--out", str(tmp_path / "a")]) == 0
    assert gc.get_freeze_count() == 0
    monkeypatch.setattr(sys, "argv", ["gpu-platform", "synth", "local", "--out", str(tmp_path / "b")])
    try:
        assert cli.main() == 0
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
    assert _tree(tmp_path / "a") == _tree(tmp_path / "b")


def test_imports_stay_lazy():
    """Validation and the CLI's error path import no cloud SDK and no pulumi_kubernetes."""
    code = (
        "import sys; from components.cli.loader import load_spec; import components.cli, components.cli.synth; "
        "heavy = [m for m in ('pulumi_aws', 'pulumi_gcp', 'pulumi_kubernetes', 'pulumi') if m in sys.modules]; "
        "print(heavy)"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "[]", proc.stderr


def _scalars(node):
    if isinstance(node, dict):
        for v in node.values():
            yield from _scalars(v)
    elif isinstance(node, list):
        for v in node:
            yield from _scalars(v)
    else:
        yield node


@pytest.mark.parametrize("stack", STACKS)
def test_written_manifests_load_back_to_what_the_engine_received(stack):
    """The files are faithful: each manifest parses to exactly the object registered, and whole numbers
    are written as integers (the wire format's 1000.0 would be refused by kubectl for an int32 field)."""
    r = rendered(stack)
    files = synth.files(r)
    for doc in r.manifests:
        text = files[synth.manifest_path(doc)]
        assert yaml.safe_load(text) == doc
        # a whole number written as 1000.0 loads back as a float (read from the YAML, not its lines: a block scalar
        # such as a MIME user data's "MIME-Version: 1.0" is text)
        assert not [v for v in _scalars(yaml.safe_load(text)) if isinstance(v, float) and v.is_integer()]
    pc = files["manifests/_cluster/priorityclass.scheduling.k8s.io-dev.yaml"]
    assert "value: 1000\n" in pc


def test_multiline_configs_are_written_as_literal_blocks():
    text = synth.files(rendered("prod-aws"))["manifests/gpu-operator/configmap.core-mig-parted-config.yaml"]
    assert "  config.yaml: |\n    version: v1\n    mig-configs:\n" in text


@pytest.mark.parametrize("stack", ["prod-aws", "prod-gcp", "dra-existing"])
def test_fast_yaml_writes_what_pyyaml_writes(stack):
    """The manifests and Helm values written with the synth's fast representer are byte for byte what PyYAML's
    own representer writes, for every document of the stack and for values that need quoting or a tag."""
    r = rendered(stack)
    docs = [*r.manifests, *((x.inputs.get("values") or {}) for x in r.releases)]
    tricky = {
        "strings": ["", "yes", "no", "on", "null", "~", "true", "1", "0x1F", "1e3", "1.5", ".inf", "2026-01-01"],
        "colon": "a: b",
        "more": ["- x", "#c", "x #c", "'q'", '"d"', "tab\tin", "line\nbreak\n", "trailing ", " lead", "ünï"],
        "anchors": ["*a", "&b"],
        "numbers": [0, -1, 10**20, 2.5, 1e17, True, False, None],
        "nested": {"empty": {}, "none": [], "list": [[], [{}], {"b": 1, "a": [None]}]},
        "1": "key that looks like a number",
    }
    for doc in [*docs, tricky]:
        data = synth._ints(doc)
        fast = yaml.dump(data, Dumper=synth_yaml._Dumper, sort_keys=True, default_flow_style=False, width=120)
        stock = yaml.dump(data, Dumper=synth_yaml._StockDumper, sort_keys=True, default_flow_style=False, width=120)
        assert fast == stock
    assert synth._yaml(tricky).startswith(
        "'1': key that looks like a number\nanchors:\n- '*a'\n- '&b'\ncolon: 'a: b'\nmore:\n- '- x'\n"
    )


def test_tenants_named_like_components_do_not_collide():
    """Tenants called kueue or volcano get their own resources next to the charts' namespaces."""
    cfg = stack_config("prod-gcp")
    for name in ("kueue", "volcano"):
        cfg["gpu-platform:tenants"].append({"name": name, "gpuQuota": {"l4-serving": 1}})
    r = synth.render("prod-gcp", cfg)
    names = [(x.type, x.name) for x in r.resources]
    assert len(names) == len(set(names))
    assert ("kubernetes:core/v1:Namespace", "kueue-namespace") in names
    assert ("kubernetes:core/v1:Namespace", "namespace-kueue") in names
    synth.files(r)  # and no two objects render to the same manifest file


def test_a_duplicate_urn_fails_the_synth_as_it_would_fail_the_engine():
    import pulumi

    from components.render import program

    original = program.run

    def twice(spec):
        original(spec)
        pulumi.ComponentResource("gpu-platform:index:Tenancy", "tenancy")

    try:
        program.run = twice
        with pytest.raises(RuntimeError, match="duplicate resource URN"):
            synth.render("local", stack_config("local"))
    finally:
        program.run = original


@pytest.mark.parametrize("stack", ["prod-aws", "prod-gcp"])
def test_lean_render_changes_no_byte(stack):
    """The synth skips SDK work the mocks make pointless (a stack trace and debug messages per resource, outputs
    that echo the inputs, empty answers serialized): every output file is the same as with the SDK's full path, and
    the SDK is left as it was."""
    from pulumi import log as sdk_log
    from pulumi.runtime import resource as sdk_resource

    capture, send = sdk_resource._get_stack_trace, sdk_log.debug
    full = synth.render(stack, stack_config(stack), lean=False)
    assert sdk_resource._get_stack_trace is capture and sdk_log.debug is send
    lean = rendered(stack)
    # restored: `pulumi up` captures traces and sends debug messages as usual
    assert sdk_resource._get_stack_trace is capture and sdk_log.debug is send
    assert synth.files(lean) == synth.files(full)
    assert [dataclasses.asdict(r) for r in lean.resources] == [dataclasses.asdict(r) for r in full.resources]
    assert lean.outputs == full.outputs and lean.lookups == full.lookups


def test_the_collector_is_relaxed_only_while_the_synth_renders(monkeypatch):
    """A lean render runs the program with seldom cyclic collections; a full render (the SDK's own path) and
    everything after the render keep the interpreter's thresholds."""
    import gc

    from components.render import program

    seen = []
    original = program.run

    def run(spec):
        seen.append(gc.get_threshold())
        original(spec)

    monkeypatch.setattr(program, "run", run)
    before = gc.get_threshold()
    synth.render("local", stack_config("local"))
    assert gc.get_threshold() == before
    synth.render("local", stack_config("local"), lean=False)
    assert seen == [(20_000, 50, 50), before]
    assert gc.get_threshold() == before


def test_stack_outputs_resolve_as_the_sdk_would_without_lifting_every_leaf():
    """The synth awaits the real outputs inside the (plain) stack outputs instead of lifting every leaf into an
    Output: same values as ``Output.from_input(...).future()`` (tuples kept, nested outputs unwrapped), and
    nothing (None) as soon as one value is unknown, as in a preview."""
    import asyncio

    import pulumi
    from pulumi.runtime.sync_await import _sync_await

    def out(value, known=True):
        async def make():
            loop = asyncio.get_event_loop()
            f, k, s = loop.create_future(), loop.create_future(), loop.create_future()
            f.set_result(value)
            k.set_result(known)
            s.set_result(False)
            return pulumi.Output(set(), f, k, s)

        return _sync_await(make())

    value = {"a": {"b": [1, ("x", out("arn"))]}, "c": out({"d": out(2)}), "e": {}, "f": []}
    expected = {"a": {"b": [1, ("x", "arn")]}, "c": {"d": 2}, "e": {}, "f": []}
    assert _sync_await(synth._resolved(value)) == expected
    assert _sync_await(pulumi.Output.from_input(value).future()) == expected
    unknown = {"a": 1, "b": [out("x", known=False)]}
    assert _sync_await(synth._resolved(unknown)) is None
    assert _sync_await(pulumi.Output.from_input(unknown).future()) is None
