"""GKE rules, checked before anything is registered: what the GKE API would otherwise reject halfway
through a deploy (or accept and then never provision). The facts they rely on are in ``gke.py``."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ...data import catalog
from ...spec.model import NodePool, Problem, StackSpec, key, rule
from ..derive import device_plugin_owner, node_os
from . import gke

GCP_OS = ("cos", "ubuntu")
# Kept for callers that read the bound from here.
GKE_MAX_SHARED_CLIENTS = gke.MAX_SHARED_CLIENTS
GKE_MAX_NODES_PER_ZONE = 1000  # GKE quotas and limits: nodes per node pool zone

_ZONE = re.compile(r"^[a-z]+-[a-z]+[0-9]+-[a-z]$")
# Compute Engine label keys and values (resource labels on the node VMs come from gpu-platform:tags).
_LABEL_KEY = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
_LABEL_VALUE = re.compile(r"^[a-z0-9_-]{0,63}$")


def accelerator_type(pool: NodePool) -> str | None:
    """The guest accelerator type of the pool's nodes (also their cloud.google.com/gke-accelerator label).

    Taken from the machine type where it decides it (a3-megagpu-8g carries ``nvidia-h100-mega-80gb``,
    not the H100 default), else from the GPU model.
    """
    if pool.instance_types:
        by_machine = catalog.gke_accelerator_for_machine_type(pool.instance_types[0])
        if by_machine is not None:
            return by_machine
    return catalog.gpu_model(pool.gpu.model).gke_accelerator


@rule
def gke_stack(spec: StackSpec) -> Iterator[Problem]:
    if spec.cloud != "gcp":
        return
    for name, value in spec.tags.items():
        if not _LABEL_KEY.match(name):
            yield Problem(
                key("tags", name),
                "GCP label keys start with a lowercase letter and hold only lowercase letters, digits, '_' and "
                "'-' (at most 63 characters)",
            )
        elif not _LABEL_VALUE.match(value):
            yield Problem(
                key("tags", name),
                f"{value!r}: GCP label values hold only lowercase letters, digits, '_' and '-' (at most 63)",
            )


@rule
def gke_pools(spec: StackSpec) -> Iterator[Problem]:
    if spec.cloud != "gcp":
        for i, pool in enumerate(spec.node_pools):
            if "gke" in pool.model_fields_set:
                yield Problem(key("nodePools", i, "gke"), f"does not apply when cloud is {spec.cloud}")
        return
    for i, pool in enumerate(spec.node_pools):
        yield from _machine(spec, i, pool)
        yield from _placement(spec, i, pool)
        yield from _capacity(i, pool)
        yield from _flex_start(i, pool)
        yield from _local_ssds(i, pool)
        yield from _driver(spec, i, pool)
        yield from _sharing(spec, i, pool)


def _machine(spec: StackSpec, i: int, pool: NodePool) -> Iterator[Problem]:
    at = ("nodePools", i)
    model = catalog.gpu_model(pool.gpu.model)
    if model.gke_accelerator is None:
        yield Problem(key(*at, "gpu", "model"), f"{pool.gpu.model} is not offered on GKE")
    if pool.os is not None and pool.os not in GCP_OS:
        yield Problem(key(*at, "os"), f"must be one of {', '.join(GCP_OS)} on gcp")
    if len(pool.instance_types) != 1:
        yield Problem(key(*at, "instanceTypes"), "a GKE node pool has exactly one machine type")
        return
    name = pool.instance_types[0]
    where = key(*at, "instanceTypes", 0)
    mt = catalog.gcp_machine_type(name)
    n1_counts = catalog.n1_attachable_gpu_counts(name)
    if mt is None and not n1_counts:
        yield Problem(where, f"{name!r} is not a known GPU machine type")
    elif mt is None or mt.gpu_model is None:  # N1: T4s are attached, in the counts GCP allows
        if pool.gpu.model != catalog.N1_ATTACHABLE_GPU_MODEL:
            yield Problem(where, f"{name} takes attached T4 GPUs, not {pool.gpu.model}")
        elif pool.gpu.per_node not in n1_counts:
            yield Problem(
                key(*at, "gpu", "perNode"),
                f"{name} takes {' or '.join(map(str, n1_counts))} T4 GPUs, not {pool.gpu.per_node}",
            )
    elif mt.gpu_model != pool.gpu.model:
        yield Problem(where, f"{name} carries {mt.gpu_model}, not {pool.gpu.model}")
    elif mt.gpu_count != pool.gpu.per_node:
        yield Problem(key(*at, "gpu", "perNode"), f"{name} has {mt.gpu_count} GPUs, not {pool.gpu.per_node}")
    flex = pool.gke.queued_provisioning or pool.gke.flex_start
    if name in gke.SPOT_OR_FLEX_ONLY and pool.capacity != "spot" and not flex:
        yield Problem(
            key(*at, "capacity"),
            f"{name} is sold only as Spot or flex-start capacity: set capacity: spot, gke.flexStart or "
            "gke.queuedProvisioning",
        )


def _placement(spec: StackSpec, i: int, pool: NodePool) -> Iterator[Problem]:
    at = ("nodePools", i, "gke")
    g = pool.gke
    location = spec.cluster.location or ""
    region = gke.region_of(location)
    zone_count = len(set(g.zones)) or (1 if gke.is_zone(location) else 0)
    if zone_count and pool.node_cap > GKE_MAX_NODES_PER_ZONE * zone_count:
        yield Problem(
            key("nodePools", i, "maxNodes" if pool.max_nodes is not None else "maxGpus"),
            f"a GKE node pool takes at most {GKE_MAX_NODES_PER_ZONE} nodes per zone ({zone_count} zone(s)); "
            f"this one may grow to {pool.node_cap}",
        )
    for j, zone in enumerate(g.zones):
        if not _ZONE.match(zone):
            yield Problem(key(*at, "zones", j), f"{zone!r} is not a zone name (like us-central1-a)")
        elif location and gke.region_of(zone) != region:
            yield Problem(key(*at, "zones", j), f"{zone} is not in the cluster's region {region}")
    if len(set(g.zones)) != len(g.zones):
        yield Problem(key(*at, "zones"), "lists a zone twice")
    if not g.compact_placement:
        return
    zones = g.zones or ([location] if gke.is_zone(location) else [])
    if len(zones) != 1:
        yield Problem(
            key(*at, "compactPlacement"),
            "compact placement needs the pool in exactly one zone: set gke.zones to one zone",
        )
    series = gke.machine_series(pool.instance_types[0]) if pool.instance_types else ""
    if series and series not in gke.COMPACT_PLACEMENT_SERIES:
        yield Problem(
            key(*at, "compactPlacement"),
            f"compact placement is not available for {series.upper()} machines "
            f"(GPU series that support it: {', '.join(s.upper() for s in gke.COMPACT_PLACEMENT_SERIES)})",
        )
    if g.queued_provisioning:
        yield Problem(key(*at, "compactPlacement"), "GKE does not combine compact placement with queued provisioning")


def _capacity(i: int, pool: NodePool) -> Iterator[Problem]:
    at = ("nodePools", i)
    g = pool.gke
    if g.queued_provisioning:
        if pool.min_nodes != 0:
            yield Problem(
                key(*at, "minNodes"), "queued provisioning needs minNodes 0 (nodes come only for admitted work)"
            )
        if pool.desired_nodes:
            yield Problem(key(*at, "desiredNodes"), "queued provisioning pools start with 0 nodes")
        if g.reservation != "none":
            yield Problem(key(*at, "gke", "reservation"), "queued provisioning cannot consume a reservation: use none")
        if pool.capacity == "spot":
            yield Problem(key(*at, "capacity"), "queued provisioning does not use spot capacity")
    elif pool.capacity == "spot" and g.reservation != "none":
        yield Problem(key(*at, "gke", "reservation"), "spot pools cannot consume reservations: use none")
    if g.reservation == "specific" and not g.reservation_name:
        yield Problem(key(*at, "gke", "reservationName"), "is required for a specific reservation")
    if g.reservation != "specific" and g.reservation_name:
        yield Problem(key(*at, "gke", "reservationName"), "applies only to reservation: specific")


def _flex_start(i: int, pool: NodePool) -> Iterator[Problem]:
    """DWS flex-start's rules, as cluster-toolkit v1.95.0 gke-node-pool main.tf checks them (and GKE's flex-start
    guide creates the pool): no nodes kept (the autoscaler obtains them when capacity frees up), no reservation, no
    spot, compact placement on A3 Ultra / A4 only; and a flex-start node runs at most seven days."""
    at, g = ("nodePools", i), pool.gke
    if not g.flex_start:
        return
    if pool.min_nodes != 0:
        yield Problem(key(*at, "minNodes"), "flex-start needs minNodes 0 (its nodes come only when pods wait for them)")
    if pool.desired_nodes:
        yield Problem(key(*at, "desiredNodes"), "flex-start pools start with 0 nodes")
    if g.reservation != "none" or pool.reservation is not None:
        where = key(*at, "reservation") if pool.reservation is not None else key(*at, "gke", "reservation")
        yield Problem(where, "flex-start does not consume reservations: leave the reservation out")
    if pool.capacity == "spot":
        yield Problem(key(*at, "capacity"), "flex-start is its own capacity: not spot (use on-demand)")
    machine = pool.instance_types[0] if pool.instance_types else ""
    if g.compact_placement and not machine.startswith(gke.FLEX_START_COMPACT_PREFIXES):
        yield Problem(
            key(*at, "gke", "compactPlacement"),
            "GKE combines compact placement with flex-start only on A3 Ultra and A4 machines",
        )


def _local_ssds(i: int, pool: NodePool) -> Iterator[Problem]:
    machine = pool.instance_types[0] if pool.instance_types else ""
    if pool.gke.local_ssd_ephemeral_storage and machine not in gke.BUNDLED_LOCAL_SSDS:
        yield Problem(
            key("nodePools", i, "gke", "localSsdEphemeralStorage"),
            f"{machine} comes with no local SSDs (those that do: {', '.join(gke.BUNDLED_LOCAL_SSDS)})",
        )


def _driver(spec: StackSpec, i: int, pool: NodePool) -> Iterator[Problem]:
    # Which driver choices GKE takes at all, and operator-needs-Ubuntu, are the GPU Operator's rules
    # (components/render/gpu_operator.py). A stack on auto gets DEFAULT on Ubuntu pools (nodepools.driver_version).
    if spec.gpu_operator.driver == "gke-latest" and node_os(spec, pool) == "ubuntu":
        yield Problem(
            key("nodePools", i, "os"),
            "GKE installs LATEST drivers on Container-Optimized OS only: "
            "use os: cos or gpuOperator.driver: gke-default",
        )


def _sharing(spec: StackSpec, i: int, pool: NodePool) -> Iterator[Problem]:
    s = pool.sharing
    if s is None or device_plugin_owner(spec) != "gke":
        return
    at = ("nodePools", i, "sharing")
    if s.strategy in ("time-slicing", "mps"):
        # (MPS has the same bound in the device plugin; components/plan/sharing.py reports it for every cloud.)
        if s.strategy == "time-slicing" and (s.replicas or 0) > gke.MAX_SHARED_CLIENTS:
            yield Problem(
                key(*at, "replicas"),
                f"GKE shares a GPU with at most {gke.MAX_SHARED_CLIENTS} clients, got {s.replicas}",
            )
        if s.rename_by_default:
            yield Problem(key(*at, "renameByDefault"), "GKE's device plugin does not rename shared GPUs")
        if "fail_requests_greater_than_one" in s.model_fields_set and not s.fail_requests_greater_than_one:
            yield Problem(
                key(*at, "failRequestsGreaterThanOne"),
                "GKE's device plugin always rejects pods asking for more than one shared GPU",
            )
        return
    model = catalog.gpu_model(pool.gpu.model)
    if not s.layout or not model.supports_mig:
        return  # reported by the sharing rules
    if len(s.layout) != 1:
        yield Problem(
            key(*at, "layout"),
            "GKE partitions a node pool's GPUs with one gpuPartitionSize: use a single MIG profile",
        )
        return
    ((profile, count),) = s.layout.items()
    accel = accelerator_type(pool)
    sizes = gke.MIG_PARTITIONS.get(accel or "", {})
    if profile not in sizes:
        offered = ", ".join(sizes) or "none"
        yield Problem(
            key(*at, "layout", profile),
            f"GKE does not partition {accel} GPUs into {profile} (partition sizes: {offered})",
        )
    elif count != sizes[profile]:
        yield Problem(
            key(*at, "layout", profile),
            f"GKE makes {sizes[profile]} {profile} partitions on each GPU (all that fit); set {sizes[profile]}",
        )


# ------------------------------------------------------------------------------------- GPUDirect networks

GPUDIRECT_INSTALLERS = "https://github.com/GoogleCloudPlatform/container-engine-accelerators"


def multi_node(pool: NodePool) -> bool:
    """A pool the stack runs multi-node gangs on: topology-aware scheduling (the same criterion as EFA on aws)."""
    return pool.topology_aware


@rule
def gpudirect(spec: StackSpec) -> Iterator[Problem]:
    """A3 High/Mega/Ultra and A4 GPUs reach other nodes at full speed only through their own NICs (GPUDirect
    TCPX/TCPXO/RDMA), each NIC on its own VPC: without the node pool's additional networks NCCL falls back to
    the primary gVNIC, a fraction of the bandwidth. A multi-node pool on these machines must name them; the
    networks, the cluster's multi-networking (GKE Network / GKENetworkParamSet objects) and the NCCL plugin
    installer DaemonSet must already exist (README, GCP)."""
    if spec.cloud != "gcp":
        for i, pool in enumerate(spec.node_pools):
            if pool.gke.additional_networks:
                at = key("nodePools", i, "gke", "additionalNetworks")
                yield Problem(at, f"does not apply when cloud is {spec.cloud}")
        return
    for i, pool in enumerate(spec.node_pools):
        at = key("nodePools", i, "gke", "additionalNetworks")
        machine = pool.instance_types[0] if pool.instance_types else ""
        direct = catalog.GCP_GPUDIRECT.get(machine)
        nets = pool.gke.additional_networks
        if direct is None:
            if nets:
                yield Problem(
                    at,
                    f"GPU networks apply to GPUDirect machine types ({', '.join(catalog.GCP_GPUDIRECT)}), "
                    f"not {machine}",
                )
            continue
        if not nets and (not multi_node(pool) or spec.cluster.create is not None):
            continue  # a created cluster brings a multi-node pool's networks (cluster_create.pool_networks)
        if len(nets) != direct.additional_networks:
            yield Problem(
                at,
                f"{machine} uses {direct.stack}: a topologyAware pool needs its {direct.additional_networks} GPU "
                f"networks, else NCCL runs over the default NIC; got {len(nets)} (and needs multi-networking and "
                f"{direct.installer.rsplit('/', 1)[1]}: README, GCP)",
            )
        pairs = [(n.network, n.subnetwork) for n in nets]
        if len(set(pairs)) != len(pairs):
            yield Problem(at, "lists a network/subnetwork pair twice (each GPU NIC needs its own)")
