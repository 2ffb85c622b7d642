"""``GpuPlatform`` (components/render/platform.py) in another Pulumi Python program: examples/component-python run
under the mock engine (``synth.run_program``). Every platform resource sits under the one component, the
Kubernetes ones use the program's provider, the resources are those the stack program makes from the same spec,
and the outputs are the typed ones with the values the spec implies."""

from __future__ import annotations

import json
import typing
from pathlib import Path

import pytest
import yaml
from caching import cached
from conftest import K8S_PROVIDER, ROOT, stack_config

from components.cli import synth
from components.render import platform

EXAMPLE = ROOT / "examples" / "component-python"
PROJECT = "gpu-platform-component-example"
STACK = "dev"
COMPONENT = "gpu-platform:index:GpuPlatform"
# The example program's own resources, beside the platform.
OWN = {(K8S_PROVIDER, "cluster"), ("kubernetes:core/v1:Namespace", "apps")}


def run_example(program: Path = EXAMPLE / "__main__.py") -> synth.ProgramRun:
    return synth.run_program(program, STACK, {}, project=PROJECT, project_file=EXAMPLE / "Pulumi.yaml")


@cached
def _example() -> synth.ProgramRun:
    return run_example()


@pytest.fixture
def example() -> synth.ProgramRun:
    return _example()


def _type_chain(urn: str) -> str:
    return urn.split("::")[2]


def test_every_platform_resource_is_under_the_one_component(example):
    components = [r for r in example.resources if r.type == COMPONENT]
    assert [(c.name, c.parent) for c in components] == [("gpu", None)]
    platform_resources = [r for r in example.resources if (r.type, r.name) not in OWN and r.type != COMPONENT]
    assert len(platform_resources) > 30  # namespaces, quotas, releases, node groups, roles...
    outside = [r.urn for r in platform_resources if not _type_chain(r.urn).startswith(COMPONENT + "$")]
    assert outside == []
    # the component's direct children are the platform's components (tenancy, kueue, cost...), not loose objects
    children = sorted(r.name for r in platform_resources if r.parent == "gpu")
    assert {"cluster", "tenancy", "kueue", "gpu-operator", "cost"} <= set(children)
    # and the program's own resources stay at its root
    assert {(r.type, r.name, r.parent) for r in example.resources if (r.type, r.name) in OWN} == {
        (t, n, None) for t, n in OWN
    }


def test_the_component_uses_the_programs_provider_and_makes_none(example):
    providers = [r for r in example.resources if r.type == K8S_PROVIDER]
    assert [p.name for p in providers] == ["cluster"]
    kube = [r for r in example.resources if r.custom and r.type.startswith("kubernetes:") and r.type != K8S_PROVIDER]
    assert len(kube) > 10
    assert {r.provider for r in kube} == {"cluster"}


def _spec_config() -> dict:
    return yaml.safe_load((EXAMPLE / "gpu-platform.yaml").read_text())["config"]


def test_the_component_renders_what_the_stack_program_renders_from_the_same_spec(example):
    """Same resources (type, name, inputs) as ``__main__.py`` with this spec as its stack file, apart from the
    Kubernetes provider, which the stack program makes and the component is given."""

    def key(r) -> tuple[str, str, str]:
        return (r.type, r.name, json.dumps(r.inputs, sort_keys=True, default=str))

    stack = synth.render(STACK, _spec_config())
    from_stack = {key(r) for r in stack.resources if r.type != K8S_PROVIDER}
    from_component = {key(r) for r in example.resources if (r.type, r.name) not in OWN and r.type != COMPONENT}
    assert from_component == from_stack


def test_outputs_are_the_typed_ones_with_the_specs_values(example):
    out = example.outputs
    # tenant research: Kueue (the stack's default scheduler), its LocalQueue 'default' (scheduling.localQueueName's
    # default), ClusterQueue named after it, 2 L4 GPUs (gpuQuota l4: 2, one GPU per node, no sharing)
    assert out["tenants"]["research"] == {
        "namespace": "research",
        "scheduler": "kueue",
        "localQueue": "default",
        "clusterQueue": "research",
        "priorityCeiling": "training",
        "forbiddenPriorityClasses": ["inference", "training-critical"],
        "gpuQuota": {"nvidia.com/gpu": 2},
        "gpuLimit": {"nvidia.com/gpu": 2},
    }
    assert out["queues"] == {
        "research": {"namespace": "research", "scheduler": "kueue", "localQueue": "default", "clusterQueue": "research"}
    }
    pool = out["pools"]["l4"]
    assert (pool["gpuModel"], pool["gpusPerNode"], pool["maxNodes"], pool["provisioner"]) == ("L4", 1, 2, "managed")
    assert pool["nodeSelector"] == {"gpu-platform/pool": "l4"}
    assert pool["nodeGroup"] == f"l4-{synth.PLACEHOLDER}"  # the EKS node group's generated name, an output
    # at most 2 nodes of the dearer instance type, g6.2xlarge on demand in us-east-1 at $0.9776/h
    assert out["maxHourlyUsd"] == pytest.approx(2 * 0.9776)


def _keys(td: type) -> tuple[set[str], set[str]]:
    hints = typing.get_type_hints(td)
    return set(hints), set(td.__required_keys__)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("output", "td"),
    [("tenants", platform.Tenant), ("queues", platform.TenantQueues), ("pools", platform.Pool)],
)
def test_every_output_entry_has_exactly_its_types_keys(example, output, td):
    allowed, required = _keys(td)
    for entry in example.outputs[output].values():
        assert required <= set(entry) <= allowed


def test_the_cost_output_is_the_cost_document_and_its_totals():
    run = synth.render(STACK, _spec_config())
    doc = json.loads(synth.files(run)["cost.json"])
    typed = platform.typed_outputs({"tenants": {}, "pools": {}, "cost": doc})["cost"]
    allowed, required = _keys(platform.Cost)
    assert required <= set(typed) <= allowed
    assert typed["document"] == doc and typed["maxHourlyUsd"] == doc["total"]["maxHourlyUsd"]


PROVIDERS_OPTION = """
import pulumi
import pulumi_kubernetes as k8s
from pathlib import Path
from gpu_platform.cli.loader import load_spec
from gpu_platform.render.platform import GpuPlatform
from gpu_platform.spec import stackfile

provider = k8s.Provider("cluster", kubeconfig="{}")
spec = load_spec(stackfile.read(Path(%r)))
GpuPlatform("gpu", {"spec": spec}, pulumi.ResourceOptions(providers={"kubernetes": provider}))
"""


def test_the_provider_may_come_in_the_providers_option(tmp_path):
    program = tmp_path / "__main__.py"
    program.write_text(PROVIDERS_OPTION % str(EXAMPLE / "gpu-platform.yaml"))
    run = run_example(program)
    kube = [r for r in run.resources if r.custom and r.type.startswith("kubernetes:") and r.type != K8S_PROVIDER]
    assert kube and {r.provider for r in kube} == {"cluster"}


def test_without_a_kubernetes_provider_the_component_refuses(tmp_path):
    program = tmp_path / "__main__.py"
    program.write_text(
        PROVIDERS_OPTION.replace(', pulumi.ResourceOptions(providers={"kubernetes": provider})', "")
        % str(EXAMPLE / "gpu-platform.yaml")
    )
    with pytest.raises(Exception, match="needs the cluster's Kubernetes provider"):
        run_example(program)


EXPLICIT_CLOUD = """
import pulumi
import pulumi_kubernetes as k8s
from pathlib import Path
from gpu_platform.cli.loader import load_spec
from gpu_platform.render.platform import GpuPlatform
from gpu_platform.spec import stackfile

kube = k8s.Provider("cluster", kubeconfig="{}")
account = pulumi.ProviderResource(%(package)r, "platform-account", {})
spec = load_spec(stackfile.read(Path(%(spec)r)))
GpuPlatform("gpu", {"spec": spec}, pulumi.ResourceOptions(providers={"kubernetes": kube, %(package)r: account}))
"""


@pytest.mark.parametrize(
    ("package", "stack", "lookup"),
    [("aws", None, "aws:eks/getCluster:getCluster"), ("gcp", "dev-gcp", "gcp:container/getCluster:getCluster")],
)
def test_a_cloud_provider_in_providers_reaches_every_cloud_resource_and_the_cluster_lookup(
    tmp_path, monkeypatch, package, stack, lookup
):
    calls: list[tuple[str, str]] = []
    real = synth._mock_classes

    def recording():
        mocks_cls, monitor_cls = real()

        class Recording(mocks_cls):
            def call(self, args):
                calls.append((args.token, args.provider))
                return super().call(args)

        return Recording, monitor_cls

    monkeypatch.setattr(synth, "_mock_classes", recording)
    spec = EXAMPLE / "gpu-platform.yaml"
    if stack is not None:
        spec = tmp_path / "spec.yaml"
        spec.write_text(yaml.safe_dump({"config": stack_config(stack)}))
    program = tmp_path / "__main__.py"
    program.write_text(EXPLICIT_CLOUD % {"package": package, "spec": str(spec)})
    run = run_example(program)
    cloud = [r for r in run.resources if r.custom and r.type.startswith(f"{package}:")]
    assert len(cloud) > 3  # node groups or node pools, roles or service accounts...
    assert {r.provider for r in cloud} == {"platform-account"}
    lookups = [provider for token, provider in calls if token == lookup]
    assert lookups and all("::platform-account::" in p for p in lookups)
