"""Rules of the created GKE cluster (``cluster.create``, issue 30), checked before anything is registered: what
the GKE and Compute Engine APIs would refuse halfway through creating the network and the cluster, or accept and
then fail on (a Pod range too small for the pools' nodes, GPU NICs on subnets that overlap the cluster's).

Sizes, from GKE's "IP address ranges for VPC-native clusters" and "Creating a private cluster" pages and Compute
Engine's subnet limits: a subnet's primary range is /8 to /29 (four addresses of it reserved); each node takes a
/24 of the Pod range (110 Pods per node, the default), so a /N Pod range holds 2^(24-N) nodes; the Service range is
/16 to /27; the control plane's private range is exactly a /28. All of them, and the GPU networks' subnets, must
not overlap (GKE routes Pods of every network through the node).

Sources (read 2026-11-26): the /28 control-plane range is terraform-provider-google's own check
(resource_container_cluster.go ``master_ipv4_cidr_block``: ``IsCIDRNetwork(28, 28)``); the four reserved addresses
are the VPC "Subnets" page ("Google Cloud uses the first two and last two IPv4 addresses in each subnet primary
IPv4 address range"); a /24 per node at 110 Pods is GKE's "Configure maximum Pods per node" page. The subnet /8../29,
Pod /9../24 and Service /16../27 bounds are GKE's "IP address range planning" table as remembered: the stored copy
of that page ends before the table, so they stand unverified.

GPUDirect on GKE needs multi-networking and a GKE version per machine (``GPUDIRECT_MINORS``), checked by minor
because ``cluster.kubernetesVersion`` names a minor and GKE picks its patch (a patch of a minor still offered is
above every patch minimum below):
- TCPX on A3 High from 1.27 (GoogleCloudPlatform/cluster-toolkit modules/compute/gke-node-pool/gpu_direct.tf,
  ``"1.27" = "1.27.7-gke.1121000"`` first, ``1.27.16-gke.2874000`` at 10470803), and not from 1.34: GKE's release
  note of 2025-10-17, "Don't use GKE version 1.34.1-gke.1431000 or later when creating or upgrading node pools with
  the a3-highgpu-8g machine type ... COS Milestone 125 ... incompatible with GPUDirect-TCPX" (no later note lifts it);
- TCPXO on A3 Mega from 1.28 (container-engine-accelerators gpudirect-tcpxo/README.md, first release: "For 1.28 >=
  1.28.8-gke.1095000"; gpu_direct.tf likewise);
- RDMA on A3 Ultra from 1.31 and on A4 from 1.32: the minimums GKE gives for the H200 and B200 GPUs themselves
  ("H200 (141GB): 1.31.4-gke.1183000 or later", "B200 (180 GB): 1.32.2-gke.1422000 or later"); no RDMA-specific
  figure was found.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from itertools import combinations

from ...spec.model import Problem, StackSpec, key, rule
from . import gke
from .gke import gke_create

# cluster_create.py (the created cluster's plan) is imported by the rules that read it, after their own check that
# the stack is a gcp one (creating its cluster): an aws or existing stack does not load it (~2.6 ms).

# The first GKE version whose nodes break GPUDirect-TCPX (the release note of 2025-10-17); its minor is the bound
# of a3-highgpu-8g below, and a looked-up cluster's full version is held to it (components/render/gcp/cluster.py).
TCPX_BROKEN_FROM = "1.34.1-gke.1431000"
# machine -> (first GKE minor GPUDirect runs on, first minor it breaks on or None); see the module docstring
GPUDIRECT_MINORS: dict[str, tuple[int, int | None]] = {
    "a3-highgpu-8g": (27, 34),
    "a3-megagpu-8g": (28, None),
    "a3-ultragpu-8g": (31, None),
    "a4-highgpu-8g": (32, None),
}
RESERVED_LABEL_DOMAINS = ("kubernetes.io", "k8s.io", "cloud.google.com", "gke.io")
SUBNET_PREFIX = (8, 29)
PODS_PREFIX = (9, 24)
SERVICES_PREFIX = (16, 27)
MASTER_PREFIX = 28
RESERVED_PER_SUBNET = 4  # network, gateway, second-to-last and broadcast addresses
MAX_ZONES = 4  # a Google Cloud region has three or four zones

_Net = ipaddress.IPv4Network


def _at(*parts: str | int) -> str:
    return key("cluster", "create", "gke", *parts)


@rule
def gke_create_applies(spec: StackSpec) -> Iterator[Problem]:
    """``create.gke`` is the GCP half of creating a cluster; an existing cluster is only reached, never created."""
    create = spec.cluster.create
    if create is not None and spec.cloud == "existing":
        yield Problem(key("cluster", "create"), "does not apply when cloud is existing")
    elif create is not None and create.gke is not None and spec.cloud != "gcp":
        yield Problem(key("cluster", "create", "gke"), f"does not apply when cloud is {spec.cloud}")


def _parse(spec: StackSpec) -> tuple[dict[str, _Net], list[Problem]]:
    """The ranges as networks (by key under network), and a problem for each that is not an IPv4 network."""
    create = gke_create(spec)
    assert create is not None
    nets: dict[str, _Net] = {}
    problems: list[Problem] = []
    for field in ("subnet", "pods", "services", "master", "gpu"):
        text = getattr(create.network, field)
        try:
            nets[field] = ipaddress.IPv4Network(text)
        except ValueError as exc:
            problems.append(Problem(_at("network", field), f"{text!r} is not an IPv4 network ({exc})"))
    for i, a in enumerate(create.authorized_networks):
        try:
            ipaddress.IPv4Network(a.cidr)
        except ValueError as exc:
            problems.append(Problem(_at("authorizedNetworks", i, "cidr"), f"{a.cidr!r} is not an IPv4 network ({exc})"))
    return nets, problems


def max_nodes(spec: StackSpec) -> int:
    """Nodes the cluster may grow to: the system pool's and every GPU pool's maximum."""
    create = spec.cluster.create
    system = create.system_nodes.max if create is not None else 0
    return system + sum(p.node_cap for p in spec.node_pools)


@rule
def gke_create_ranges(spec: StackSpec) -> Iterator[Problem]:
    """CIDR sizes, capacity for the stack's nodes, and no overlap between the cluster's and the GPU ranges."""
    if gke_create(spec) is None:
        return
    from .cluster_create import gpu_slices, gpu_subnet_count, needs_created_networks

    nets, problems = _parse(spec)
    yield from problems
    yield from _sizes(spec, nets)
    gpu = nets.get("gpu")
    subnets = gpu_subnet_count(spec)
    used = dict(nets) if subnets else {k: v for k, v in nets.items() if k != "gpu"}
    for (a, na), (b, nb) in combinations(used.items(), 2):
        if na.overlaps(nb):
            yield Problem(_at("network", b), f"{nb} overlaps network.{a} ({na}); the cluster's ranges must be disjoint")
    if gpu is not None and subnets:
        slices = gpu_slices(str(gpu), subnets)
        if not slices or ipaddress.IPv4Network(slices[0]).prefixlen > SUBNET_PREFIX[1]:
            yield Problem(
                _at("network", "gpu"),
                f"{gpu} cannot hold the {subnets} GPUDirect subnets the stack's pools need (each at least a "
                f"/{SUBNET_PREFIX[1]})",
            )
        else:
            room = ipaddress.IPv4Network(slices[0]).num_addresses - RESERVED_PER_SUBNET
            for i, pool in enumerate(spec.node_pools):
                if needs_created_networks(spec, pool) and pool.node_cap > room:
                    yield Problem(
                        _at("network", "gpu"),
                        f"split into {subnets} subnets of /{ipaddress.IPv4Network(slices[0]).prefixlen} "
                        f"({room} addresses each), too small for nodePools[{i}] ({pool.name}: up to {pool.node_cap} "
                        "nodes)",
                    )


def _sizes(spec: StackSpec, nets: dict[str, _Net]) -> Iterator[Problem]:
    nodes = max_nodes(spec)
    subnet, pods, services, master = (nets.get(k) for k in ("subnet", "pods", "services", "master"))
    if subnet is not None:
        if not SUBNET_PREFIX[0] <= subnet.prefixlen <= SUBNET_PREFIX[1]:
            yield Problem(_at("network", "subnet"), f"a subnet is a /{SUBNET_PREFIX[0]} to a /{SUBNET_PREFIX[1]}")
        elif subnet.num_addresses - RESERVED_PER_SUBNET < nodes:
            yield Problem(
                _at("network", "subnet"),
                f"{subnet} has {subnet.num_addresses - RESERVED_PER_SUBNET} node addresses; the cluster may grow to "
                f"{nodes} nodes (systemNodes.max and every pool's maximum)",
            )
    if pods is not None:
        if not PODS_PREFIX[0] <= pods.prefixlen <= PODS_PREFIX[1]:
            yield Problem(_at("network", "pods"), f"the Pod range is a /{PODS_PREFIX[0]} to a /{PODS_PREFIX[1]}")
        elif 2 ** (24 - pods.prefixlen) < nodes:
            yield Problem(
                _at("network", "pods"),
                f"{pods} holds {2 ** (24 - pods.prefixlen)} nodes (a /24 each); the cluster may grow to {nodes} nodes",
            )
    if services is not None and not SERVICES_PREFIX[0] <= services.prefixlen <= SERVICES_PREFIX[1]:
        yield Problem(
            _at("network", "services"), f"the Service range is a /{SERVICES_PREFIX[0]} to a /{SERVICES_PREFIX[1]}"
        )
    if master is not None:
        if master.prefixlen != MASTER_PREFIX:
            yield Problem(_at("network", "master"), f"the control plane's range is exactly a /{MASTER_PREFIX}")
        elif not master.is_private:
            yield Problem(_at("network", "master"), f"{master} is not a private (RFC 1918) range")


@rule
def gke_create_zones(spec: StackSpec) -> Iterator[Problem]:
    """The cluster's zones lie in its region (a zonal cluster lists only its other zones), and an RDMA pool whose
    networks are created runs in one zone (its RDMA VPC takes that zone's RoCE network profile)."""
    create = gke_create(spec)
    if create is None:
        return
    from .cluster_create import gpudirect_stack, needs_created_networks, pool_zone

    location = spec.cluster.location or ""
    region = gke.region_of(location) if location else ""
    zones = create.zones
    for j, zone in enumerate(zones):
        if region and gke.region_of(zone) != region:
            yield Problem(_at("zones", j), f"{zone} is not in the cluster's region {region}")
        elif zone == location:
            yield Problem(_at("zones", j), "is the zonal cluster's own zone; list only its other zones (GKE adds it)")
    if len(set(zones)) != len(zones):
        yield Problem(_at("zones"), "lists a zone twice")
    if len(set(zones)) + gke.is_zone(location) > MAX_ZONES:
        yield Problem(_at("zones"), f"a region has at most {MAX_ZONES} zones; got {len(set(zones))}")
    system = spec.cluster.create.system_nodes  # type: ignore[union-attr]
    if system.max < system.min:
        yield Problem(key("cluster", "create", "systemNodes", "max"), f"is below min ({system.min})")
    for i, pool in enumerate(spec.node_pools):
        if (
            needs_created_networks(spec, pool)
            and gpudirect_stack(pool) == "GPUDirect-RDMA"
            and not pool_zone(spec, pool)
        ):
            yield Problem(
                key("nodePools", i, "gke", "zones"),
                "GPUDirect-RDMA networks use one zone's RoCE network profile: set one zone for this pool",
            )


@rule
def gke_create_version(spec: StackSpec) -> Iterator[Problem]:
    """The release channel and the Kubernetes version go together, and the version takes the stack's GPUDirect."""
    create = gke_create(spec)
    if create is None:
        return
    version = spec.cluster.kubernetes_version
    if create.release_channel == "UNSPECIFIED" and version is None:
        yield Problem(
            _at("releaseChannel"),
            "UNSPECIFIED (no release channel) needs cluster.kubernetesVersion: outside a channel nothing else "
            "chooses or upgrades the control plane's version",
        )


@rule
def gke_gpudirect_version(spec: StackSpec) -> Iterator[Problem]:
    """A GPUDirect pool (networks named or created) on a GKE version its stack does not run on; a created or a
    found cluster, whenever the stack file names the version."""
    version = spec.cluster.kubernetes_version
    if spec.cloud != "gcp" or (version is None and gke_create(spec) is None):
        return  # a found cluster's version is GKE's answer, checked at deploy (render/gcp/cluster.py)
    from .cluster_create import gpudirect_stack, uses_gpudirect

    for i, pool in enumerate(spec.node_pools):
        if not uses_gpudirect(spec, pool):
            continue
        machine = pool.instance_types[0]
        low, broken = GPUDIRECT_MINORS[machine]
        if version is None:
            if broken is not None:
                yield Problem(
                    key("cluster", "kubernetesVersion"),
                    f"is required with {gpudirect_stack(pool)} on {machine} (nodePools[{i}]) on a "
                    f"created cluster: a release channel's default version may be {TCPX_BROKEN_FROM} or later, "
                    "whose nodes break it; name a minor it runs on",
                )
            continue
        minor = int(version.split(".")[1])
        if minor < low:
            yield Problem(
                key("cluster", "kubernetesVersion"),
                f"{version} is too old for {gpudirect_stack(pool)} on {machine} (nodePools[{i}]): GKE 1.{low} or later",
            )
        elif broken is not None and minor >= broken:
            yield Problem(
                key("cluster", "kubernetesVersion"),
                f"{version} breaks {gpudirect_stack(pool)} on {machine} (nodePools[{i}]): GKE 1.{broken} nodes run "
                f"COS 125, whose kernel it does not support (GKE release note 2025-10-17); keep the "
                f"cluster on 1.{broken - 1} or move the pool to a3-megagpu-8g (TCPXO)",
            )


@rule
def gke_create_access(spec: StackSpec) -> Iterator[Problem]:
    """Who can reach the control plane, and where the controllers run."""
    create = gke_create(spec)
    if create is None:
        return
    from .cluster_create import NODEPOOL_LABEL

    if not create.private_endpoint and not create.authorized_networks:
        yield Problem(
            _at("authorizedNetworks"),
            "a public endpoint admits only the listed networks: list the one `pulumi up` runs from, or set "
            "privateEndpoint and deploy from inside the VPC",
        )
    for i, a in enumerate(create.authorized_networks):
        if a.cidr.endswith("/0"):
            yield Problem(_at("authorizedNetworks", i, "cidr"), "admits the whole internet to the control plane")
    for label in spec.system_node_selector:
        domain = label.split("/", 1)[0] if "/" in label else ""
        if label != NODEPOOL_LABEL and any(domain == d or domain.endswith("." + d) for d in RESERVED_LABEL_DOMAINS):
            yield Problem(
                key("systemNodeSelector", label),
                "the created system pool cannot carry this label (GKE reserves its domain); select on "
                f"{NODEPOOL_LABEL} or a label of your own",
            )
