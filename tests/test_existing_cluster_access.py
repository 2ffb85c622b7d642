"""Access to an existing cluster (components/render/existing.py): the Kubernetes provider gets the stack's kubeconfig
and context, server-side apply, and an identity that follows the context."""

from __future__ import annotations

from conftest import render_config, rendered, stack_config

K8S_PROVIDER = "pulumi:providers:kubernetes"


def _provider(r) -> dict:
    (p,) = r.of_type(K8S_PROVIDER)
    return p.inputs


def test_the_local_stacks_provider_uses_its_context_with_server_side_apply():
    """stacks/Pulumi.local.yaml names context kind-gpu and no kubeconfig: the provider reads the ambient
    kubeconfig at that context; every object is applied server-side, and ConfigMaps are updated in place (not
    replaced with a window in which they do not exist: tests/engine saw adding a tenant replace the cost record)."""
    inputs = _provider(rendered("local"))
    assert inputs == {
        "enableServerSideApply": "true",
        "enableConfigMapMutable": "true",
        "context": "kind-gpu",
        "clusterIdentifier": "context:kind-gpu",
    }


def test_a_kubeconfig_path_is_passed_through():
    """A kubeconfig path reaches the provider, with or without a context (identity only with one)."""
    cfg = stack_config("local")
    cfg["gpu-platform:cluster"] = {"kubeconfig": "/home/me/.kube/lab", "context": "lab"}
    inputs = _provider(render_config(cfg, "local"))
    assert (inputs["kubeconfig"], inputs["context"], inputs["clusterIdentifier"]) == (
        "/home/me/.kube/lab",
        "lab",
        "context:lab",
    )
    cfg["gpu-platform:cluster"] = {"kubeconfig": "/home/me/.kube/lab"}
    inputs = _provider(render_config(cfg, "local"))
    assert inputs["kubeconfig"] == "/home/me/.kube/lab" and "context" not in inputs
