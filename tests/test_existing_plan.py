"""How an existing cluster is reached (components/plan/existing.py, ``Plan.existing``): the Kubernetes provider's
kubeconfig, context and cluster identity, against the stack files read by hand; the provider the synth registers
taking exactly these."""

from __future__ import annotations

import copy

from conftest import STACKS, rendered, stack_config

from components.cli import main as cli
from components.cli.loader import load_spec
from components.plan import plan


def _existing(cfg, stack="test"):
    return plan.build(load_spec(cfg), stack).existing


def test_a_context_names_the_cluster():
    """stacks/Pulumi.local.yaml: cluster.context kind-gpu, no kubeconfig."""
    e = _existing(stack_config("local"), "local")
    assert (e.kubeconfig, e.context, e.cluster_identifier) == (None, "kind-gpu", "context:kind-gpu")


def test_a_kubeconfig_without_a_context_leaves_the_identity_to_the_provider():
    cfg = copy.deepcopy(stack_config("local"))
    cfg["gpu-platform:cluster"] = {"kubeconfig": "~/.kube/gpu-lab.yaml"}
    e = _existing(cfg)
    assert (e.kubeconfig, e.context, e.cluster_identifier) == ("~/.kube/gpu-lab.yaml", None, None)
    assert "  reached through the kubeconfig's current context of ~/.kube/gpu-lab.yaml" in cli.plan_text(
        plan.build(load_spec(cfg), "test")
    )


def test_only_existing_clusters_have_one():
    for stack in STACKS:
        assert (_existing(stack_config(stack), stack) is None) == (
            stack_config(stack)["gpu-platform:cloud"] != "existing"
        )


def test_the_provider_takes_the_plans_arguments():
    r = rendered("local")
    (provider,) = [x for x in r.resources if x.type == "pulumi:providers:kubernetes"]
    assert (provider.inputs["context"], provider.inputs["clusterIdentifier"]) == ("kind-gpu", "context:kind-gpu")
    assert "kubeconfig" not in provider.inputs
