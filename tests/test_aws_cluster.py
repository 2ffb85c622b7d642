"""Access to an existing EKS cluster (components/render/aws/cluster.py): the Kubernetes provider's kubeconfig runs
``aws eks get-token`` as an exec credential plugin, optionally with a named CLI profile (``cluster.profile``,
passed as AWS_PROFILE in the plugin's environment) and an assumed role (``cluster.roleArn``, the CLI's
``--role-arn`` option of ``eks get-token``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import K8S_PROVIDER, render_config, rendered, stack_config

from components.cli.loader import load_spec
from components.plan.aws.plan import cluster_plan
from components.render.aws import cluster

ROLE_ARN = "arn:aws:iam::111122223333:role/ml-platform-deployer"  # placeholder account
PROFILE = "ml-platform-admin"
BASE_ARGS = ["eks", "get-token", "--cluster-name", "ml-dev", "--region", "us-east-1", "--output", "json"]


def _kubeconfig(rendering) -> dict[str, Any]:
    [provider] = rendering.of_type(K8S_PROVIDER)
    return json.loads(provider.inputs["kubeconfig"])


def _exec(kubeconfig: dict[str, Any]) -> dict[str, Any]:
    """The exec section of the current context's user."""
    current = kubeconfig["current-context"]
    [context] = [c["context"] for c in kubeconfig["contexts"] if c["name"] == current]
    [user] = [u["user"] for u in kubeconfig["users"] if u["name"] == context["user"]]
    return user["exec"]


def _dev(**cluster_fields: str) -> dict[str, Any]:
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:cluster"] = {"name": "ml-dev", **cluster_fields}
    return cfg


def test_default_kubeconfig_uses_the_ambient_aws_credentials():
    exec_ = _exec(_kubeconfig(rendered("dev-aws")))
    assert exec_["command"] == "aws"
    assert exec_["apiVersion"] == "client.authentication.k8s.io/v1beta1"
    assert exec_["args"] == BASE_ARGS
    assert "env" not in exec_  # no AWS_PROFILE: whatever credentials run `pulumi up`


def test_profile_and_role_reach_the_token_command():
    exec_ = _exec(_kubeconfig(render_config(_dev(profile=PROFILE, roleArn=ROLE_ARN))))
    assert exec_["command"] == "aws"
    args = exec_["args"]
    assert args[: len(BASE_ARGS)] == BASE_ARGS
    assert args[args.index("--role-arn") + 1] == ROLE_ARN
    assert args.count("--role-arn") == 1
    assert exec_["env"] == [{"name": "AWS_PROFILE", "value": PROFILE}]


@pytest.mark.parametrize(
    ("fields", "role_args", "env"),
    [
        ({"profile": PROFILE}, [], [{"name": "AWS_PROFILE", "value": PROFILE}]),
        ({"roleArn": ROLE_ARN}, ["--role-arn", ROLE_ARN], None),
    ],
    ids=["profile-only", "role-only"],
)
def test_profile_and_role_are_independent(fields, role_args, env):
    spec = load_spec(_dev(**fields))
    exec_ = _exec(json.loads(cluster.kubeconfig_document(cluster_plan(spec), "https://endpoint.invalid", "Q0E=")))
    assert exec_["args"] == BASE_ARGS + role_args
    assert exec_.get("env") == env


def test_whole_kubeconfig_document():
    """The document around the exec plugin: a v1 Config with one cluster, context and user, all named after the
    cluster, the endpoint and CA data passed through unchanged, keys sorted (a stable text, so the provider's
    kubeconfig input does not change between runs)."""
    spec = load_spec(_dev())
    text = cluster.kubeconfig_document(cluster_plan(spec), "https://ABC.gr7.us-east-1.eks.amazonaws.com", "Q0E=")
    assert json.loads(text) == {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "ml-dev",
                "cluster": {
                    "server": "https://ABC.gr7.us-east-1.eks.amazonaws.com",
                    "certificate-authority-data": "Q0E=",
                },
            }
        ],
        "contexts": [{"name": "ml-dev", "context": {"cluster": "ml-dev", "user": "ml-dev"}}],
        "current-context": "ml-dev",
        "users": [
            {
                "name": "ml-dev",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "aws",
                        "args": BASE_ARGS,
                    }
                },
            }
        ],
    }
    assert list(json.loads(text)) == ["apiVersion", "clusters", "contexts", "current-context", "kind", "users"]


@pytest.mark.parametrize("stack", ["dev-aws", "dev-gcp"])
def test_kubernetes_provider_applies_server_side(stack):
    """Both cloud providers (EksAccess, GkeAccess) turn on server-side apply: objects other tools also write
    (Helm-installed CRDs, labels on existing namespaces) are patched by field manager instead of being
    overwritten or refused, and the provider is a child of the cluster-access component."""
    [provider] = rendered(stack).of_type(K8S_PROVIDER)
    assert provider.inputs["enableServerSideApply"] == "true"
    assert provider.inputs["enableConfigMapMutable"] == "true"
    assert provider.parent == "cluster"
    assert provider.name == "kubernetes"


def test_rendered_kubeconfig_uses_the_looked_up_endpoint_and_ca():
    """The provider's kubeconfig points at the looked-up cluster's endpoint (EKS gives it with its scheme) and
    its first certificate authority's data (the offline lookup answers https://offline-placeholder.eks.amazonaws.
    com.invalid and base64 of OFFLINE-PLACEHOLDER-CA)."""
    doc = _kubeconfig(rendered("dev-aws"))
    assert doc["clusters"] == [
        {
            "name": "ml-dev",
            "cluster": {
                "server": "https://offline-placeholder.eks.amazonaws.com.invalid",
                "certificate-authority-data": "T0ZGTElORS1QTEFDRUhPTERFUi1DQQ==",
            },
        }
    ]
