"""Simulated nodes for a stack (kwok, tests/cluster/controlplane.py ``start_nodes``): one system node where the
controllers run, and for each GPU pool nodes labelled, tainted and advertising GPUs as the pool's real nodes do.

What a pool's node carries is what the platform tells the provisioner and the device plugin to give it: the pool
labels and taints (``derive.pool_labels``, ``derive.node_taints``) and, per GPU, the scheduler units its device
plugin advertises (``derive.units_per_gpu``: whole GPUs, time-slicing / MPS replicas, MIG slices). The
``kubernetes.io/os`` label is the kubelet's own (system pods select it)."""

from __future__ import annotations

from typing import Any

from controlplane import KWOK_ANNOTATION

from components.plan import derive
from components.spec.model import StackSpec

NODE_CPU = "64"
NODE_MEMORY = "512Gi"


def _node(name: str, labels: dict[str, str], taints: list[dict[str, str]], extra: dict[str, int]) -> dict[str, Any]:
    capacity = {"cpu": NODE_CPU, "memory": NODE_MEMORY, "pods": "110", **{k: str(v) for k, v in extra.items()}}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_ANNOTATION: "fake"},
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "type": "kwok", **labels},
        },
        "spec": {"taints": taints},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def stack_nodes(spec: StackSpec, per_pool: int = 1) -> list[dict[str, Any]]:
    """A system node, then ``per_pool`` nodes of each pool (at most as many as the pool may have)."""
    nodes = [_node("system-0", derive.system_node_selector(spec), [], {})]
    for pool in spec.node_pools:
        units = derive.pool_units(spec, pool, pool.gpu.per_node)
        taints = [
            {"key": t.key, "effect": t.effect, **({"value": t.value} if t.value is not None else {})}
            for t in derive.node_taints(pool)
        ]
        for i in range(min(per_pool, pool.node_cap)):
            nodes.append(_node(f"{pool.name}-{i}", derive.pool_labels(spec, pool), taints, units))
    return nodes
