"""The GPU nodes' local NVMe disks as their ephemeral storage on EKS (issue 40, anchors: Karpenter's
``instanceStorePolicy: RAID0``). p4d.24xlarge carries 8 x 1000 GB NVMe, p5.48xlarge 8 x 3840 GB, every g5/g6 one
or more (EC2 user guide "Instance store volumes"); without the policy they sit unused and images, pods and logs
fill the root EBS volume. With it Karpenter v1.14.1 stripes them (pkg/providers/amifamily/bootstrap/nodeadm.go:
NodeConfig ``instance.localStorage.strategy: RAID0``; bottlerocket.go: ``apiclient ephemeral-storage init`` and
``bind --dirs /var/lib/containerd /var/lib/kubelet /var/log/pods``) and advertises their size as the node's
ephemeral-storage. The rendered EC2NodeClass is checked against the CRD's strict schema
(tests/test_custom_resources_conform.py does it for every shipped stack; here for the opt-out too).
"""

from __future__ import annotations

import copy
import json

from conftest import UPSTREAM, manifests, render_config, rendered, stack_config
from jsonschema import Draft7Validator

from components.cli import main as cli
from components.cli.loader import load_spec
from components.plan import plan as plan_mod

STRICT = UPSTREAM / "karpenter" / "ec2nodeclass.karpenter.k8s.aws.v1.strict.json"


def _classes(r) -> list[dict]:
    return manifests(r, "EC2NodeClass")


def _valid(doc: dict) -> None:
    Draft7Validator(json.loads(STRICT.read_text())).validate(doc)


def test_every_gpu_node_class_stripes_the_local_disks_by_default():
    for stack in ("dev-aws", "prod-aws", "starter-aws"):
        classes = _classes(rendered(stack))
        assert classes, stack
        for doc in classes:
            assert doc["spec"]["instanceStorePolicy"] == "RAID0", (stack, doc["metadata"]["name"])
            _valid(doc)


def test_the_local_disks_can_be_left_unused():
    cfg = copy.deepcopy(stack_config("prod-aws"))
    cfg.setdefault("gpu-platform:karpenter", {})["instanceStorePolicy"] = "none"
    classes = _classes(render_config(cfg, "prod-aws"))
    assert classes and all("instanceStorePolicy" not in d["spec"] for d in classes)
    for doc in classes:
        _valid(doc)


def test_the_plan_says_what_the_local_disks_hold(capsys):
    lines = cli.plan_text(plan_mod.build(load_spec(stack_config("starter-aws")), "starter-aws"))
    assert (
        "  Karpenter nodes: local NVMe disks striped (RAID0) as the nodes' ephemeral storage (containerd, kubelet, "
        "pod logs)" in lines
    )
