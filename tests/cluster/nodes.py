"""Simulated nodes (kwok, tests/cluster/controlplane.py ``start_nodes``) for the engine and scheduler tests:
system nodes where the controllers run, and each pool's nodes as the cloud and the device plugin would make them,
generated from the plan (the facts explain reads, one source). The scheduler tests take every pool at its maximum
size, the engine tests one node per pool:

- labels: ``explain.nodes.node_label_values`` (the pool's own labels, ``PoolPlan.labels``, and the well-known ones its
  provisioner and kubelet set: instance type, zone, capacity type, Karpenter's NodePool, GKE's node pool...). Where
  the plan gives several values (instance types, capacity types) node i takes the i-th in turn; where it gives none
  the cloud would set one the stack does not tell (a hostname, a topology block), so one is made up per node: the
  node's name, and topology levels that put every 4 nodes of a pool in one rack-like group;
- taints: ``PoolPlan.taints``;
- allocatable: ``PoolPlan.advertises`` (what the device plugin advertises per node: whole GPUs, time-sliced or MPS
  replicas, MIG slices, and EFA interfaces), with cpu and memory of the pool's first instance type from the catalog
  (64 cpu and 512Gi where the stack names none: an existing cluster), and on EFA pools the hugepages the EFA
  software reserves (``efa.EFA_HUGEPAGES``);
- DRA pools (``PoolPlan.device_plugin == 'dra'``) advertise no extended resource: their devices are ResourceSlices
  (``resource_slices``), as the NVIDIA DRA driver publishes them.
"""

from __future__ import annotations

from typing import Any

from controlplane import KWOK_ANNOTATION

from components.data import catalog
from components.explain.nodes import HOSTNAME, node_label_values
from components.plan import dra
from components.plan.aws import efa
from components.plan.plan import Plan, PoolPlan
from components.spec.model import StackSpec

POOL_LABEL = "gpu-platform/pool"
DEFAULT_CPU, DEFAULT_MEMORY_GIB = 64, 512
SYSTEM_NODES = 2
NODES_PER_TOPOLOGY_GROUP = 4


def _node(name: str, labels: dict[str, str], taints: list[dict[str, Any]], capacity: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_ANNOTATION: "fake"},
            "labels": {"type": "kwok", **labels, HOSTNAME: name},
        },
        "spec": {"taints": taints},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def _shape(pool: PoolPlan) -> tuple[int, int]:
    for t in pool.instance_types:
        if t in catalog.AWS_INSTANCE_TYPES:
            it = catalog.AWS_INSTANCE_TYPES[t]
            return it.vcpus, it.memory_gib
        if t in getattr(catalog, "GCP_MACHINE_TYPES", {}):
            mt = catalog.GCP_MACHINE_TYPES[t]
            return mt.vcpus, mt.memory_gib
    return DEFAULT_CPU, DEFAULT_MEMORY_GIB


def pool_node(decided: Plan, pool: PoolPlan, i: int) -> dict[str, Any]:
    name = f"{pool.name}-{i}"
    labels: dict[str, str] = {}
    topology = list(decided.kueue.topology_levels or ()) if decided.kueue is not None else []
    for key, value in node_label_values(decided, pool).items():
        if key == HOSTNAME:
            continue
        if isinstance(value, tuple):
            if value:
                labels[key] = value[i % len(value)]
            continue
        if value is None:
            if key in topology:  # a block of NODES_PER_TOPOLOGY_GROUP nodes per level (coarser levels: one block)
                level = topology.index(key)
                group = i // NODES_PER_TOPOLOGY_GROUP if level == len(topology) - 2 else 0
                labels[key] = f"{pool.name}-l{level}-{group}"
            continue  # a value the stack does not tell and nothing selects on: left off
        labels[key] = value
    cpu, memory = _shape(pool)
    capacity = {"cpu": str(cpu), "memory": f"{memory}Gi", "pods": "110"}
    if pool.device_plugin != "dra":
        capacity.update({r: str(n) for r, n in pool.advertises.items()})
    if pool.efa:  # the EFA software's hugepages (plan/aws/efa.py)
        capacity[efa.EFA_HUGEPAGES_RESOURCE] = f"{efa.EFA_HUGEPAGES * 2}Mi"
    taints = [{k: v for k, v in t.items() if v is not None} for t in pool.taints]
    return _node(name, labels, taints, capacity)


def plan_nodes(decided: Plan, system_selector: dict[str, str], per_pool: int | None = None) -> list[dict[str, Any]]:
    """``SYSTEM_NODES`` untainted system nodes (the platform's controllers, CPU pod sets), then every pool at its
    maximum size (or ``per_pool`` nodes of it, at most its maximum)."""
    nodes = [
        _node(f"system-{i}", dict(system_selector), [], {"cpu": "32", "memory": "128Gi", "pods": "110"})
        for i in range(SYSTEM_NODES)
    ]
    for pool in decided.pools.values():
        count = pool.max_nodes if per_pool is None else min(per_pool, pool.max_nodes)
        nodes += [pool_node(decided, pool, i) for i in range(count)]
    return nodes


# -------------------------------------------------------------------------------------------------- DRA


def _upstream_device_classes() -> list[dict[str, Any]]:
    """The DeviceClasses the GPU Operator's GPUCluster makes (upstream/dra-driver-nvidia-gpu/deviceclasses.json, the
    operator's v26.7.0 manifests): the platform leaves them to the operator, which does not run here."""
    import json
    from pathlib import Path

    data = json.loads(
        (Path(__file__).resolve().parents[2] / "upstream/dra-driver-nvidia-gpu/deviceclasses.json").read_text()
    )
    out = []
    for c in data["gpuOperatorGPUCluster_v26.7.0"]:
        if c["name"] not in (dra.DRIVER_DOMAIN, f"mig.{dra.DRIVER_DOMAIN.split('.', 1)[1]}"):
            continue
        out.append(
            {
                "apiVersion": dra.RESOURCE_API,
                "kind": "DeviceClass",
                "metadata": {"name": c["name"]},
                "spec": {"selectors": c["selectors"]},
            }
        )
    return out


def resource_slices(decided: Plan) -> list[dict[str, Any]]:
    """What the NVIDIA DRA driver's kubelet plugin publishes for each node of a DRA pool (ADAPTATIONS "DRA"): one
    ResourceSlice per node, driver gpu.nvidia.com, pool = the node, a device per GPU (type gpu) or per MIG slice of
    the pool's layout (type mig, its profile), with the product name and framebuffer the claim templates' CEL
    selectors read (``dra.whole_gpu_selector``, ``dra.mig_selector``), then the classes the operator makes."""
    slices = []
    for pool in decided.pools.values():
        if pool.device_plugin != "dra":
            continue
        model = catalog.GPU_MODELS[pool.gpu_model]
        layout = dict((pool.sharing or {}).get("layout") or {})
        for i in range(pool.max_nodes):
            node = f"{pool.name}-{i}"
            devices = []
            for g in range(pool.gpus_per_node):
                common = {"productName": {"string": f"NVIDIA {model.name}"}, "index": {"int": g}}
                if not layout:
                    devices.append(
                        {
                            "name": f"gpu-{g}",
                            "attributes": {"type": {"string": "gpu"}, **common},
                            "capacity": {"memory": {"value": f"{model.memory_gib}Gi"}},
                        }
                    )
                    continue
                for profile, count in sorted(layout.items()):
                    for k in range(count):
                        devices.append(
                            {
                                "name": f"gpu-{g}-mig-{profile.replace('.', '-')}-{k}",
                                "attributes": {"type": {"string": "mig"}, "profile": {"string": profile}, **common},
                                "capacity": {"memory": {"value": f"{model.mig_profile(profile).memory_gb}Gi"}},
                            }
                        )
            slices.append(
                {
                    "apiVersion": dra.RESOURCE_API,
                    "kind": "ResourceSlice",
                    "metadata": {"name": f"{node}-{dra.DRIVER_DOMAIN}"},
                    "spec": {
                        "driver": dra.DRIVER_DOMAIN,
                        "nodeName": node,
                        "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                        "devices": devices,
                    },
                }
            )
    return [*_upstream_device_classes(), *slices] if slices else []


def stack_nodes(spec: StackSpec, per_pool: int = 1) -> list[dict[str, Any]]:
    """The nodes of a validated spec's plan, ``per_pool`` of each pool (the engine tests)."""
    from components.plan import derive, plan

    return plan_nodes(plan.build(spec, ""), derive.system_node_selector(spec), per_pool)
