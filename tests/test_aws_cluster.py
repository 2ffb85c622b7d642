"""Access to an existing EKS cluster (components/aws/cluster.py): the Kubernetes provider's kubeconfig runs
``aws eks get-token`` as an exec credential plugin, optionally with a named CLI profile (``cluster.profile``,
passed as AWS_PROFILE in the plugin's environment) and an assumed role (``cluster.roleArn``, the CLI's
``--role-arn`` option of ``eks get-token``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import K8S_PROVIDER, render_config, rendered, stack_config

from components.aws import cluster
from components.loader import load_spec

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
    exec_ = _exec(json.loads(cluster.kubeconfig(spec, "https://endpoint.invalid", "Q0E=")))
    assert exec_["args"] == BASE_ARGS + role_args
    assert exec_.get("env") == env
