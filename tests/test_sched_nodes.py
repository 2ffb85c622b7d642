"""The simulated nodes of the scheduler tests (tests/cluster/nodes.py) are what the stack says its pools' nodes are:
every pool at its maximum size, labelled, tainted and advertising as the stack file and upstream say. Checked here,
without a cluster, so `make test` catches a node generator that drifted (the scheduler tests would then prove
explain against nodes no cloud makes)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import ROOT, stack_config

from components.cli.loader import load_spec
from components.plan import derive, plan

sys.path[:0] = [str(ROOT / "tests" / "sched"), str(ROOT / "tests" / "cluster")]
pool_nodes = pytest.importorskip("nodes")  # tests/cluster/nodes.py


def _nodes(stack: str) -> dict[str, dict]:
    spec = load_spec(stack_config(stack))
    decided = plan.build(spec, stack)
    return {n["metadata"]["name"]: n for n in pool_nodes.plan_nodes(decided, derive.system_node_selector(spec))}


def test_prod_aws_pools_at_their_maximum_size_as_the_stack_file_sizes_them():
    nodes = _nodes("prod-aws")
    by_pool: dict[str, int] = {}
    for n in nodes.values():
        pool = n["metadata"]["labels"].get("gpu-platform/pool")
        by_pool[pool] = by_pool.get(pool, 0) + 1
    # stacks/Pulumi.prod-aws.yaml: maxNodes 4, 2, 3, 2; h100-spot maxGpus 32 / 8 per node = 4; two system nodes
    assert by_pool == {"a100-train": 4, "h100-inference": 2, "h100-spot": 4, "l4-notebooks": 3, "a100-gang": 2, None: 2}


def test_a_node_advertises_what_its_device_plugin_does_and_carries_the_gpu_taint():
    nodes = _nodes("prod-aws")
    a100 = nodes["a100-train-0"]
    # p4de.24xlarge: 8 A100, 96 vCPU, 1152 GiB (EC2); 4 EFA interfaces; the EFA software's 5128 x 2 MiB hugepages
    assert a100["status"]["allocatable"] == {
        "cpu": "96",
        "memory": "1152Gi",
        "pods": "110",
        "nvidia.com/gpu": "8",
        "vpc.amazonaws.com/efa": "4",
        "hugepages-2Mi": "10256Mi",
    }
    assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"} in a100["spec"]["taints"]
    # h100-inference's mixed MIG layout, per GPU 3g.40gb + 2g.20gb + 2 x 1g.10gb, 8 GPUs a node
    mig = nodes["h100-inference-0"]["status"]["allocatable"]
    assert (mig["nvidia.com/mig-3g.40gb"], mig["nvidia.com/mig-2g.20gb"], mig["nvidia.com/mig-1g.10gb"]) == (
        "8",
        "8",
        "16",
    )
    assert "nvidia.com/gpu" not in mig
    # l4-notebooks: 4 L4 time-sliced 4 ways
    assert nodes["l4-notebooks-2"]["status"]["allocatable"]["nvidia.com/gpu"] == "16"


def test_topology_labels_group_four_nodes_under_one_network_node():
    nodes = _nodes("prod-aws")
    layer3 = "topology.k8s.aws/network-node-layer-3"
    groups = [nodes[f"a100-train-{i}"]["metadata"]["labels"][layer3] for i in range(4)]
    assert len(set(groups)) == 1  # four nodes, one group: a 2-node gang can be packed
    assert "network-node-layer-3" not in str(nodes["h100-spot-0"]["metadata"]["labels"])  # not topology-aware


def test_dra_pools_publish_resource_slices_instead_of_extended_resources():
    spec = load_spec(stack_config("dra-existing"))
    decided = plan.build(spec, "dra-existing")
    docs = pool_nodes.resource_slices(decided)
    classes = sorted(d["metadata"]["name"] for d in docs if d["kind"] == "DeviceClass")
    assert classes == ["gpu.nvidia.com", "mig.nvidia.com"]
    slices = {d["spec"]["nodeName"]: d for d in docs if d["kind"] == "ResourceSlice"}
    # stacks/Pulumi.dra-existing.yaml: h100 2 nodes x 8 GPUs; a100-mig 1 node x 8 GPUs x {3g.40gb: 2}
    assert sorted(slices) == ["a100-mig-0", "h100-0", "h100-1"]
    assert len(slices["h100-0"]["spec"]["devices"]) == 8
    mig = slices["a100-mig-0"]["spec"]["devices"]
    assert len(mig) == 16 and {d["attributes"]["profile"]["string"] for d in mig} == {"3g.40gb"}
    nodes = _nodes("dra-existing")
    assert "nvidia.com/gpu" not in nodes["h100-0"]["status"]["allocatable"]


def test_the_adaptations_are_listed_with_their_reasons():
    sys.path[:0] = [str(Path(ROOT / "tests" / "sched"))]
    kueue_controller = pytest.importorskip("kueue_controller")
    assert {"out of cluster", "webhook Service port", "ProvisioningRequests", "nodes", "DRA"} <= set(
        kueue_controller.ADAPTATIONS
    )
    assert all(len(reason) > 60 for reason in kueue_controller.ADAPTATIONS.values())
