"""Issue 40 on a real kube-apiserver 1.35: the EC2NodeClasses with ``instanceStorePolicy`` that prod-aws and
coverage-aws render (under Karpenter v1.14.1's CRDs, upstream/crds), and the ENIConfigs of a created cluster with a
pod CIDR (under the vpc-cni v1.21.1 ENIConfig CRD, tests/fixtures/amazon-vpc-cni-k8s). The server's verdict: each
object accepted and stored with the field as rendered (an unknown field would be pruned), and a value the CRD does not
allow refused, so the schema is live.
"""

from __future__ import annotations

import copy

import pytest
import yaml
from apply import apply_docs, install_crds, levels
from cluster_stacks import stack_file_config
from controlplane import ControlPlane
from probes import Api

from components.cli.synth import render

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]
ENICONFIG_CRD = ROOT / "tests" / "fixtures" / "amazon-vpc-cni-k8s" / "eniconfigs.crd.k8s.amazonaws.com.yaml"
KARPENTER_GROUPS = {"karpenter.sh", "karpenter.k8s.aws"}


def _kinds(stack: str, config: dict, kinds: set[str]) -> list[dict]:
    return [d for level in levels(render(stack, config)) for d in level if d["kind"] in kinds]


@pytest.fixture(scope="module")
def server():
    starter = copy.deepcopy(stack_file_config("starter-aws"))
    starter["gpu-platform:cluster"]["create"].setdefault("network", {})["podCidr"] = "100.64.0.0/16"
    objects = {
        "prod-aws": _kinds("prod-aws", stack_file_config("prod-aws"), {"EC2NodeClass"}),
        "coverage-aws": _kinds("coverage-aws", stack_file_config("coverage-aws"), {"EC2NodeClass"}),
        "starter-aws": _kinds("starter-aws", starter, {"ENIConfig"}),
    }
    with ControlPlane("local-disks") as cp:
        install_crds(cp, KARPENTER_GROUPS)
        apply_docs(cp, [yaml.safe_load(ENICONFIG_CRD.read_text())])
        for docs in objects.values():
            apply_docs(cp, docs)
        yield Api(cp), objects


def test_the_node_classes_keep_their_instance_store_policy_on_the_server(server):
    api, objects = server
    seen = {}
    for stack in ("prod-aws", "coverage-aws"):
        assert objects[stack], stack
        for doc in objects[stack]:
            stored = api.get("karpenter.k8s.aws/v1", "EC2NodeClass", None, doc["metadata"]["name"])
            seen[doc["metadata"]["name"]] = stored["spec"].get("instanceStorePolicy")
            assert stored["spec"].get("instanceStorePolicy") == doc["spec"].get("instanceStorePolicy")
            assert stored["spec"].get("userData") == doc["spec"].get("userData")
    # every class stripes its NVMe but coverage-aws's Bottlerocket snapshot class (its userData binds the rest)
    assert list(seen.values()).count(None) == 1 and set(seen.values()) == {"RAID0", None}


def test_the_crd_refuses_an_instance_store_policy_it_does_not_know(server):
    api, objects = server
    probe = copy.deepcopy(objects["prod-aws"][0])
    probe["metadata"] = {"name": "probe-raid1"}
    assert api.dry_run({**probe, "spec": {**probe["spec"], "instanceStorePolicy": "RAID0"}}).allowed
    verdict = api.dry_run({**probe, "spec": {**probe["spec"], "instanceStorePolicy": "RAID1"}})
    assert not verdict.allowed and "instanceStorePolicy" in verdict.message, verdict


def test_the_eniconfigs_are_stored_per_zone(server):
    api, objects = server
    docs = objects["starter-aws"]
    assert sorted(d["metadata"]["name"] for d in docs) == ["us-east-1a", "us-east-1b"]
    for doc in docs:
        stored = api.get("crd.k8s.amazonaws.com/v1alpha1", "ENIConfig", None, doc["metadata"]["name"])
        assert stored["spec"] == doc["spec"]
    broken = copy.deepcopy(docs[0])
    broken["metadata"] = {"name": "probe-no-subnet"}
    del broken["spec"]["subnet"]
    verdict = api.dry_run(broken)
    assert not verdict.allowed and "subnet" in verdict.message, verdict
