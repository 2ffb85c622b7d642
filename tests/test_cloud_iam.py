"""IAM helpers (components/render/aws/iam.py, identity.py) called directly, with documents written out from the AWS
contracts they follow: IAM policy grammar (Version 2012-10-17), EKS Pod Identity's trust (principal
pods.eks.amazonaws.com, actions sts:AssumeRole + sts:TagSession, the session tags eks-cluster-name /
kubernetes-namespace / kubernetes-service-account), IRSA's trust (the OIDC provider as federated principal,
sts:AssumeRoleWithWebIdentity, <issuer host>:aud = sts.amazonaws.com and :sub =
system:serviceaccount:<ns>:<sa>), and AWS-managed policy ARNs (arn:<partition>:iam::aws:policy/<name>)."""

from __future__ import annotations

import json

import pytest
from conftest import render_config, rendered, stack_config

from components.cli.loader import load_spec
from components.plan.aws.plan import cluster_plan
from components.render.aws import iam, identity

ISSUER = "https://oidc.eks.us-east-1.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE"
HOST = ISSUER.removeprefix("https://")


@pytest.mark.parametrize(
    ("partition", "suffix"), [("aws", "amazonaws.com"), ("aws-us-gov", "amazonaws.com"), ("aws-cn", "amazonaws.com.cn")]
)
def test_dns_suffix_and_managed_policy_arn(partition, suffix):
    """Service principals live under amazonaws.com.cn in China only; managed policies under the partition."""
    assert iam.dns_suffix(partition) == suffix
    assert (
        iam.managed_policy_arn("AmazonEKS_CNI_Policy", partition)
        == f"arn:{partition}:iam::aws:policy/AmazonEKS_CNI_Policy"
    )


def test_to_json_is_compact_and_key_sorted():
    """Canonical text: keys sorted, no spaces (a stable input: re-runs show no diff)."""
    assert iam.to_json({"b": [1, {"d": 2, "c": 3}], "a": "x"}) == '{"a":"x","b":[1,{"c":3,"d":2}]}'


def test_document_copies_statements():
    """A policy document of the given statements, each a fresh dict, under the 2012-10-17 grammar."""
    stmt = {"Effect": "Allow"}
    doc = iam.document([stmt])
    assert doc == {"Version": "2012-10-17", "Statement": [{"Effect": "Allow"}]}
    assert doc["Statement"][0] is not stmt


def test_service_trust_with_and_without_sid():
    """Sid first when given; actions sorted."""
    assert iam.service_trust("ec2.amazonaws.com") == {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": ["sts:AssumeRole"]}],
    }
    doc = iam.service_trust("x.amazonaws.com", actions=("sts:TagSession", "sts:AssumeRole"), sid="S")
    assert doc["Statement"] == [
        {
            "Sid": "S",
            "Effect": "Allow",
            "Principal": {"Service": "x.amazonaws.com"},
            "Action": ["sts:AssumeRole", "sts:TagSession"],
        }
    ]
    assert list(doc["Statement"][0]) == ["Sid", "Effect", "Principal", "Action"]
    assert "Sid" not in iam.service_trust("x.amazonaws.com", sid="")["Statement"][0]


def test_pod_identity_trust_document():
    """Pod Identity may assume the role and tag the session, for one ServiceAccount of one cluster only."""
    assert iam.pod_identity_trust("ml-dev", "karpenter", "karpenter", "Sid1") == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "Sid1",
                "Effect": "Allow",
                "Principal": {"Service": "pods.eks.amazonaws.com"},
                "Action": ["sts:AssumeRole", "sts:TagSession"],
                "Condition": {
                    "StringEquals": {
                        "aws:RequestTag/eks-cluster-name": "ml-dev",
                        "aws:RequestTag/kubernetes-namespace": "karpenter",
                        "aws:RequestTag/kubernetes-service-account": "karpenter",
                    }
                },
            }
        ],
    }


def test_irsa_trust_document():
    """The OIDC provider (issuer without scheme) may assume the role for exactly system:serviceaccount:ns:sa,
    with the STS audience."""
    assert iam.oidc_provider_arn("aws", "111122223333", ISSUER) == f"arn:aws:iam::111122223333:oidc-provider/{HOST}"
    assert iam.irsa_trust("aws-cn", "111122223333", ISSUER, "kube-system", "cluster-autoscaler", "Sid2") == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "Sid2",
                "Effect": "Allow",
                "Principal": {"Federated": f"arn:aws-cn:iam::111122223333:oidc-provider/{HOST}"},
                "Action": "sts:AssumeRoleWithWebIdentity",
                "Condition": {
                    "StringEquals": {
                        f"{HOST}:aud": "sts.amazonaws.com",
                        f"{HOST}:sub": "system:serviceaccount:kube-system:cluster-autoscaler",
                    }
                },
            }
        ],
    }


def test_identity_choice_and_annotations():
    """Pod identity by default (no ServiceAccount annotation); IRSA annotates the role ARN."""
    spec = load_spec(stack_config("dev-aws"))
    assert identity.uses_irsa(cluster_plan(spec)) is False
    assert identity.irsa_annotations(cluster_plan(spec), "arn:r") == {}
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:karpenter"] = {"identity": "irsa"}
    spec = load_spec(cfg)
    assert identity.uses_irsa(cluster_plan(spec)) is True
    assert identity.irsa_annotations(cluster_plan(spec), "arn:r") == {"eks.amazonaws.com/role-arn": "arn:r"}


def test_rendered_trust_policies_name_their_controller():
    """The rendered trust policies carry the Sid of their controller: AllowEksPodIdentityFor<Name> by default,
    AllowIrsaFor<Name> under IRSA."""

    def sids(r) -> dict[str, str]:
        return {
            x.name: json.loads(x.inputs["assumeRolePolicy"])["Statement"][0]["Sid"]
            for x in r.of_type("aws:iam/role:Role")
            if x.name in ("karpenter-controller-role", "cluster-autoscaler-role")
        }

    assert sids(rendered("prod-aws")) == {
        "karpenter-controller-role": "AllowEksPodIdentityForKarpenter",
        "cluster-autoscaler-role": "AllowEksPodIdentityForClusterAutoscaler",
    }
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:karpenter"] = {"identity": "irsa"}
    assert sids(render_config(cfg)) == {
        "karpenter-controller-role": "AllowIrsaForKarpenter",
        "cluster-autoscaler-role": "AllowIrsaForClusterAutoscaler",
    }
