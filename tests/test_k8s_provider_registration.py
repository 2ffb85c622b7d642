"""``components.render.k8s.KubeProvider`` registers the Kubernetes provider exactly as ``pulumi_kubernetes.Provider``
would, and every Kubernetes resource sends the plugin version its typed classes send, so a synth never imports
pulumi_kubernetes (its root, ``_utilities`` and parver: ~0.01 s a process). Both providers are registered under
the mock engine with the same arguments (and environment: the typed class reads KUBECONFIG and PULUMI_K8S_* for
inputs not given) and the requests the engine receives, and the URNs, are compared field by field."""

from __future__ import annotations

import inspect
import subprocess
import sys
from typing import Any

import pytest
from conftest import ROOT, STACKS
from test_k8s_registration import _requests

from components.render import k8s

ENV_INPUTS = {name: env for name, (_, _, env) in k8s.PROVIDER_INPUTS.items() if env is not None}


def _providers(args: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(typed, ours): the request and URN of each provider, registered with ``args`` and the same options."""
    import pulumi
    import pulumi_kubernetes

    def run(make):
        urns: list[str] = []

        def program():
            parent = pulumi.ComponentResource("test:index:Parent", "parent")
            before = pulumi.CustomResource("test:index:Before", "before", {})
            opts = pulumi.ResourceOptions(parent=parent, depends_on=[before], aliases=[pulumi.Alias(name="old")])
            make(opts).urn.apply(urns.append)

        request = _requests(program)["kubernetes"]
        return {**request, "urn": urns}

    return (
        run(lambda o: pulumi_kubernetes.Provider("kubernetes", opts=o, **args)),
        run(lambda o: k8s.KubeProvider("kubernetes", opts=o, **args)),
    )


@pytest.fixture(autouse=True)
def _no_provider_environment(monkeypatch):
    """The typed class reads these when an input is not given: unset, unless a test sets one."""
    for env in ENV_INPUTS.values():
        monkeypatch.delenv(env, raising=False)


def test_the_platforms_provider_registers_as_the_typed_provider():
    """The arguments the cluster accesses give (components/render/*/cluster*.py, existing.py), an Output too."""
    import pulumi

    args = {
        "kubeconfig": pulumi.Output.from_input('{"apiVersion": "v1"}'),
        "cluster_identifier": "arn:aws:eks:us-east-1:1:cluster/c",
        "context": "ctx",
        **k8s.PROVIDER_OPTIONS,
    }
    typed, ours = _providers(args)
    assert ours == typed
    assert typed["type"] == "pulumi:providers:kubernetes"
    assert typed["object"]["enableServerSideApply"] == typed["object"]["enableConfigMapMutable"] == "true"
    assert typed["object"]["clusterIdentifier"] == "arn:aws:eks:us-east-1:1:cluster/c"
    assert typed["version"] and typed["urn"] == [
        "urn:pulumi:s::p::test:index:Parent$pulumi:providers:kubernetes::kubernetes"
    ]


@pytest.mark.parametrize("name", sorted(k8s.PROVIDER_INPUTS))
def test_each_input_is_sent_as_the_typed_provider_sends_it(name):
    """Its wire name, and a boolean as JSON ("false", not false), as Provider._internal_init sends them."""
    typed, ours = _providers({name: False if k8s.PROVIDER_INPUTS[name][1] else "x"})
    assert ours == typed
    assert len(typed["object"]) == 1  # the input given, and nothing else


@pytest.mark.parametrize("name", sorted(ENV_INPUTS))
def test_an_input_not_given_is_read_from_the_environment_as_the_typed_provider_reads_it(name, monkeypatch):
    """One variable at a time, so that two inputs' variables swapped would show."""
    monkeypatch.setenv(ENV_INPUTS[name], "/kube/config" if name == "kubeconfig" else "T")
    typed, ours = _providers({})
    assert ours == typed
    assert typed["object"] == {k8s.PROVIDER_INPUTS[name][0]: "/kube/config" if name == "kubeconfig" else "true"}


@pytest.mark.parametrize(
    ("word", "sent"),
    [
        *[(w, "true") for w in ("1", "t", "TRUE", "True")],
        *[(w, "false") for w in ("0", "f", "F", "FALSE")],
        *[(w, None) for w in ("yes", "", "on")],
    ],
)
def test_an_environment_boolean_is_read_as_the_typed_provider_reads_it(word, sent, monkeypatch):
    """Go's strconv.ParseBool words; any other value (and an empty one) leaves the input unset."""
    monkeypatch.setenv("PULUMI_K8S_DELETE_UNREACHABLE", word)
    typed, ours = _providers({})
    assert ours == typed
    assert typed["object"].get("deleteUnreachable") == sent


def test_a_given_input_wins_over_the_environment(monkeypatch):
    monkeypatch.setenv("KUBECONFIG", "/kube/config")
    monkeypatch.setenv("PULUMI_K8S_ENABLE_SERVER_SIDE_APPLY", "false")
    typed, ours = _providers({"kubeconfig": "inline", "enable_server_side_apply": True})
    assert ours == typed
    assert typed["object"] == {"kubeconfig": "inline", "enableServerSideApply": "true"}


def test_every_input_of_the_typed_provider_is_known():
    """A pulumi_kubernetes upgrade that adds a provider input (maybe read from the environment) fails here until
    PROVIDER_INPUTS has it; the two input types the platform does not use are refused, not dropped."""
    import pulumi_kubernetes

    params = set(inspect.signature(pulumi_kubernetes.Provider._internal_init).parameters)
    typed = params - {"__self__", "resource_name", "opts", "__props__"}
    assert typed - set(k8s.PROVIDER_INPUTS) == {"helm_release_settings", "kube_client_settings"}
    assert set(k8s.PROVIDER_INPUTS) <= typed
    with pytest.raises(TypeError, match="kube_client_settings"):
        k8s.KubeProvider("kubernetes", kube_client_settings={"burst": 1})


# ------------------------------------------------------------------------------------ the plugin version


def test_the_plugin_version_is_the_typed_classes_without_importing_the_package():
    """What every Kubernetes resource and provider sends as its plugin version and download URL equals
    pulumi_kubernetes' ``_utilities`` defaults (read here by importing it, which the render does not)."""
    from pulumi_kubernetes import _utilities

    ours, theirs = k8s.with_plugin_version(None, k8s._version()), _utilities.get_resource_opts_defaults()
    assert (ours.version, ours.plugin_download_url) == (theirs.version, theirs.plugin_download_url)
    assert ours.version and ours.version[0].isdigit()


NOT_RELEASES = ["35.0a1", "35.0.dev3", "34.2+local", "34.2.post1", "34", "34.02"]


@pytest.mark.parametrize("installed", NOT_RELEASES)
@pytest.mark.parametrize("package", ["pulumi_kubernetes", "pulumi_aws"])
def test_a_version_that_is_not_a_release_is_asked_of_the_sdk(monkeypatch, package, installed):
    """A pre-release, dev, local or post build is not its own semver string: the SDK's conversion answers (the
    Kubernetes and the AWS resources' plugin version are read the same way: k8s.plugin_version)."""
    import importlib.metadata

    from components.render.aws import sdk

    module = k8s if package == "pulumi_kubernetes" else sdk
    installed = f"4.{installed}"

    class Utilities:
        @staticmethod
        def get_version():
            return f"converted-{installed}"

    monkeypatch.setattr(importlib.metadata, "version", lambda name: installed if name == package else "")
    monkeypatch.setattr(module, "_utilities", lambda: Utilities)
    module._version.cache_clear()
    try:
        assert module._version() == f"converted-{installed}"
    finally:
        module._version.cache_clear()


# ------------------------------------------------------------------------------------ what a synth imports

NOT_IMPORTED = ("pulumi_kubernetes", "parver")


def test_no_synth_of_a_shipped_stack_imports_pulumi_kubernetes(tmp_path):
    """Registration goes through KubeResource/KubeProvider and the plugin version through the installed
    distribution: pulumi_kubernetes (its root, ``_utilities`` and parver) is imported by no whole synth, whichever
    way the stack reaches its cluster (found, created, another stack's, existing; AWS, GCP and none). All the
    stacks in one process: a module imported by any of them stays in ``sys.modules``."""
    code = (
        "import sys\n"
        "from components.cli.main import main\n"
        f"for stack in {STACKS!r}:\n"
        f"    assert main(['synth', stack, '--out', {str(tmp_path)!r} + '/' + stack]) == 0, stack\n"
        f"found = [m for m in {NOT_IMPORTED!r} if m in sys.modules]\n"
        "assert not found, f'imported: {found}'\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert {"dev-aws", "prod-gcp", "starter-gcp", "fleet-gke", "dra-existing"} <= set(STACKS)
    assert all((tmp_path / s / "resources.json").is_file() for s in STACKS)
