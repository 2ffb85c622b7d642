"""The component package (provider/): the schema its gRPC server serves equals the committed schema.json and follows
the Python types; the YAML example names only what the schema has; the package's component builds the platform
from a stack file's text and reports an invalid one with the stack file's messages. Offline: the provider runs as
a subprocess on a local port (as the engine starts a plugin), with no engine behind it."""

from __future__ import annotations

import json
import os
import re
import sys
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from conftest import ROOT
from plugin_process import served

from components.cli import synth
from components.render import platform

PROVIDER = ROOT / "provider"
SCHEMA = PROVIDER / "schema.json"
YAML_EXAMPLE = ROOT / "examples" / "component-yaml"
TOKEN = "gpu-platform:index:GpuPlatform"


@pytest.fixture(scope="module")
def served_schema() -> Iterator[dict]:
    """GetSchema of the provider started as Pulumi starts a plugin: its folder's __main__.py, engine address
    first (nothing listens there: GetSchema needs no engine)."""
    from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc

    env = {k: v for k, v in os.environ.items() if not k.startswith("PULUMI_")}
    argv = [sys.executable, "-u", str(PROVIDER / "__main__.py"), "127.0.0.1:1"]
    with served(argv, PROVIDER, env, "the provider") as channel:
        stub = provider_pb2_grpc.ResourceProviderStub(channel)
        response = stub.GetSchema(provider_pb2.GetSchemaRequest(version=0), timeout=60)
        yield json.loads(response.schema)


def test_the_served_schema_is_the_committed_one(served_schema):
    committed = json.loads(SCHEMA.read_text())
    assert served_schema == committed, "the component's arguments or outputs changed: run make component-schema"


def test_the_component_takes_a_plain_stack_file(served_schema):
    resource = served_schema["resources"][TOKEN]
    assert resource["isComponent"] is True
    assert resource["inputProperties"] == {
        "stackFile": {
            "type": "string",
            "plain": True,
            "description": resource["inputProperties"]["stackFile"]["description"],
        }
    }
    assert resource["requiredInputs"] == ["stackFile"]
    assert served_schema["name"] == "gpu-platform"


def _schema_keys(schema: dict, name: str) -> tuple[set[str], set[str]]:
    t = schema["types"][f"gpu-platform:index:{name}"]
    return set(t["properties"]), set(t.get("required", []))


@pytest.mark.parametrize("td", [platform.Tenant, platform.TenantQueues, platform.Pool, platform.Cost, platform.Taint])
def test_each_output_type_has_the_python_types_keys(served_schema, td):
    """The schema's types are the TypedDicts of platform.py: every key, the same ones required."""
    keys = set(typing.get_type_hints(td))
    assert _schema_keys(served_schema, td.__name__) == (keys, set(td.__required_keys__))


def test_the_outputs_are_typed_maps_and_the_cost(served_schema):
    props = served_schema["resources"][TOKEN]["properties"]
    assert {k: v.get("additionalProperties", v).get("$ref") for k, v in props.items()} == {
        "tenants": "#/types/gpu-platform:index:Tenant",
        "queues": "#/types/gpu-platform:index:TenantQueues",
        "pools": "#/types/gpu-platform:index:Pool",
        "cost": "#/types/gpu-platform:index:Cost",
    }
    pool = served_schema["types"]["gpu-platform:index:Pool"]["properties"]
    assert (pool["maxNodes"]["type"], pool["taints"]["items"]["$ref"]) == (
        "integer",
        "#/types/gpu-platform:index:Taint",
    )


# ------------------------------------------------------------------------------------------ the YAML example

EXPR = re.compile(r"\$\{([A-Za-z0-9_-]+)\.([A-Za-z0-9_.]+)\}")


def _yaml_program() -> dict:
    return yaml.safe_load((YAML_EXAMPLE / "Pulumi.yaml").read_text())


def _walk_strings(value) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _walk_strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _walk_strings(v)


def _resolve(schema: dict, prop: dict, path: list[str]) -> dict:
    """The schema of ``prop`` followed along ``path`` (object properties; map values by any key)."""
    for part in path:
        if "$ref" in prop:
            prop = schema["types"][prop["$ref"].removeprefix("#/types/")]
        if "properties" in prop:
            assert part in prop["properties"], f"{part!r} is not a property ({sorted(prop['properties'])})"
            prop = prop["properties"][part]
        else:
            assert "additionalProperties" in prop, f"{part!r}: not an object"
            prop = prop["additionalProperties"]
    return prop


def test_the_yaml_example_sets_only_the_components_inputs(served_schema):
    program = _yaml_program()
    resource = served_schema["resources"][TOKEN]
    ours = {n: r for n, r in program["resources"].items() if r["type"] == TOKEN}
    assert ours, "the YAML example uses GpuPlatform"
    for r in ours.values():
        given = set(r["properties"])
        assert set(resource["requiredInputs"]) <= given <= set(resource["inputProperties"])
        # stackFile is a string: a literal or fn::readFile of a file beside the program
        value = r["properties"]["stackFile"]
        assert isinstance(value, str) or set(value) == {"fn::readFile"}
    assert program["plugins"]["providers"] == [{"name": "gpu-platform", "path": "../../provider"}]
    assert (YAML_EXAMPLE / "../../provider/PulumiPlugin.yaml").resolve() == PROVIDER / "PulumiPlugin.yaml"


def test_the_yaml_examples_references_name_the_components_outputs(served_schema):
    program = _yaml_program()
    component = {n for n, r in program["resources"].items() if r["type"] == TOKEN}
    refs = [m.groups() for s in _walk_strings(program) for m in EXPR.finditer(s) if m.group(1) in component]
    assert len(refs) >= 4
    outputs = {"properties": served_schema["resources"][TOKEN]["properties"]}
    for _, path in refs:
        leaf = _resolve(served_schema, outputs, path.split("."))
        assert "type" in leaf or "$ref" in leaf or "additionalProperties" in leaf


def test_the_yaml_examples_stack_file_is_valid():
    from components.cli.loader import load_spec
    from components.spec import stackfile

    program = _yaml_program()
    (path,) = [
        r["properties"]["stackFile"]["fn::readFile"] for r in program["resources"].values() if r["type"] == TOKEN
    ]
    assert load_spec(stackfile.read(YAML_EXAMPLE / path)).tenants


# ------------------------------------------------------------------------------------------ the package's class

PACKAGE_PROGRAM = """
import sys
from pathlib import Path
import pulumi
import pulumi_kubernetes as k8s
sys.path.insert(0, %(provider)r)
from gpu_platform_package import GpuPlatform

provider = k8s.Provider("cluster", kubeconfig="{}")
text = Path(%(stack_file)r).read_text()
gpu = GpuPlatform("gpu", {"stack_file": text}, pulumi.ResourceOptions(providers={"kubernetes": provider}))
pulumi.export("queues", gpu.queues)
"""


def _run_package(tmp_path: Path, stack_file: Path) -> synth.ProgramRun:
    program = tmp_path / "__main__.py"
    program.write_text(PACKAGE_PROGRAM % {"provider": str(PROVIDER), "stack_file": str(stack_file)})
    project = YAML_EXAMPLE / "Pulumi.yaml"
    return synth.run_program(program, "dev", {}, project="gpu-platform-yaml-example", project_file=project)


def test_the_package_component_builds_the_platform_from_the_stack_files_text(tmp_path):
    run = _run_package(tmp_path, YAML_EXAMPLE / "gpu-platform.yaml")
    assert run.outputs["queues"] == {
        "training": {"namespace": "training", "scheduler": "kueue", "localQueue": "default", "clusterQueue": "training"}
    }
    under = [r for r in run.resources if r.urn.split("::")[2].startswith(TOKEN + "$")]
    kube = [r for r in under if r.custom and r.type.startswith("kubernetes:")]
    assert kube and {r.provider for r in kube} == {"cluster"}


def test_an_invalid_stack_file_is_reported_as_the_stack_file_is(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        (YAML_EXAMPLE / "gpu-platform.yaml").read_text().replace("gpuQuota: {a100: 16}", "gpuQuota: {h100: 1}")
    )
    with pytest.raises(Exception, match=r"invalid stackFile:\n.*h100"):
        _run_package(tmp_path, bad)


# ------------------------------------------------------------------------ the provider's install (issue 40.8)


def test_the_provider_installs_only_the_programs_hashed_lock():
    """What Pulumi pip-installs into provider/venv is the program's lock (every pin exact and hashed:
    tests/test_locks.py), nothing else: no range, no unhashed package, not the repository with its own ranges."""
    lines = [ln.split("#", 1)[0].strip() for ln in (PROVIDER / "requirements.txt").read_text().splitlines()]
    assert [ln for ln in lines if ln] == ["-r ../requirements.txt"]
    assert (PROVIDER / "../requirements.txt").resolve() == ROOT / "requirements.txt"


def test_the_provider_serves_its_schema_without_the_package_installed(tmp_path):
    """In a virtualenv holding only the locked dependencies (this one's site-packages, without the editable
    install of gpu_platform, whose .pth a path added this way does not run), the provider loads the component
    from the repository and serves the committed schema."""
    import site
    import subprocess

    from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    (purelib,) = [p for p in (venv / "lib").glob("python3*/site-packages")]
    (purelib / "locked.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    python = str(venv / "bin" / "python")
    probe = subprocess.run(
        [python, "-c", "import importlib.util, pulumi; print(importlib.util.find_spec('gpu_platform'))"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert probe.stdout.strip() == "None", probe.stderr  # the dependencies are there, the package is not
    # make mutate's first pass (MUTANT_UNDER_TEST=stats) records which tests reach which functions, in its own
    # process: a child started in provider/ cannot (mutmut looks for its configuration in the working directory)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("PULUMI_") and k != "PYTHONPATH" and (k, v) != ("MUTANT_UNDER_TEST", "stats")
    }
    argv = [python, "-u", str(PROVIDER / "__main__.py"), "127.0.0.1:1"]
    with served(argv, PROVIDER, env, "the provider") as channel:
        stub = provider_pb2_grpc.ResourceProviderStub(channel)
        response = stub.GetSchema(provider_pb2.GetSchemaRequest(version=0), timeout=60)
    assert json.loads(response.schema) == json.loads(SCHEMA.read_text())
