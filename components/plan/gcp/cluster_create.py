"""The created GKE cluster's plan (issue 30): what gpu-platform builds when the stack says ``cluster.create`` on gcp.
``Plan.gke_create`` is None when the cluster is found by name (or the cloud is not gcp).

What it builds follows Google's GKE guides for GPU clusters and Cluster Toolkit (GoogleCloudPlatform/cluster-toolkit
v1.95.0; files cited where a choice rests on them):

* the cluster's own VPC and subnet with secondary ranges for Pods and Services (VPC-native; ``modules/network/vpc``,
  ``examples/gke-a3-ultragpu/gke-a3-ultragpu.yaml`` net-0), and a Cloud Router with Cloud NAT so private nodes reach
  registries and Google APIs;
* a GKE Standard cluster (``modules/scheduler/gke-cluster/main.tf``): private nodes, Workload Identity
  (``<project>.svc.id.goog``), shielded nodes, a release channel, master authorized networks, no client certificate,
  legacy ABAC off, the default node pool removed (``remove_default_node_pool``, ``initial_node_count = 1``) for a
  system node pool with its own least-privilege service account; with GPU networks, multi-networking on Dataplane V2
  (the module's ``derived_enable_multi_networking`` / ``derived_enable_dataplane_v2``);
* the GPUDirect pools' networks: per stack kind, what the Toolkit's blueprints declare: TCPX / TCPXO (A3 High / Mega)
  one VPC with one subnet per GPU NIC (``modules/network/multivpc``, ``examples/gke-a3-megagpu``: MTU 8244); RDMA
  (A3 Ultra, A4) one gVNIC VPC plus one RDMA VPC on the zone's RoCE network profile with eight subnets
  (``modules/network/gpu-rdma-vpc``, ``examples/gke-a3-ultragpu``: MTU 8896). Their subnets share ``network.gpu``,
  split evenly. A pool gets them when it is multi-node (topologyAware) on a GPUDirect machine and names no
  ``gke.additionalNetworks`` of its own (``pool_networks``); ``components/plan/gcp/plan.py`` puts them on its node pool.

Pure: the spec in, frozen data out (no pulumi, no pulumi_gcp). The rules are in ``cluster_create_rules.py``.
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from ...data import catalog, versions
from ...spec.gke_create import GkeCreate
from ...spec.model import NodePool, StackSpec
from .. import storage
from . import gke
from .gke import gke_create as gke_create
from .rules import multi_node

DEFAULT_SYSTEM_MACHINE = "e2-standard-4"  # modules/scheduler/gke-cluster/variables.tf system_node_pool_machine_type
SYSTEM_DISK_GB = 100
SYSTEM_POOL = "system"  # the system pool's name unless systemNodeSelector names one (cloud.google.com/gke-nodepool)
NODEPOOL_LABEL = "cloud.google.com/gke-nodepool"  # GKE labels every node with its pool's name
# The GPU nodes' roles (components/plan/gcp/plan.py NODE_ROLES): logs, metrics, image pulls, nothing more.
SYSTEM_NODE_ROLES = ("roles/artifactregistry.reader", "roles/container.defaultNodeServiceAccount")
PRIMARY_MTU = 8896  # modules/network/vpc/variables.tf mtu default
# MTU of each GPUDirect stack's networks: examples/gke-a3-megagpu/gke-a3-megagpu.yaml (TCPXO: 8244) and
# modules/network/gpu-rdma-vpc/variables.tf (RDMA: 8896, the A3 Ultra and A4 blueprints keep it).
GPU_MTU = {"GPUDirect-TCPX": 8244, "GPUDirect-TCPXO": 8244, "GPUDirect-RDMA": 8896}
RDMA_SUBNETS = 8  # one per CX-7 NIC (examples/gke-a3-ultragpu: subnetworks_template.count 8)
_ACCOUNT_ID_MAX = 30


@dataclass(frozen=True)
class SubnetPlan:
    """A subnet of the network the platform creates for the GKE cluster."""

    name: str
    cidr: str


@dataclass(frozen=True)
class GpuNetworkPlan:
    """One VPC of GPU NICs: its subnets, MTU, and for RDMA the zone's RoCE network profile."""

    name: str
    mtu: int
    subnets: tuple[SubnetPlan, ...]
    device_mode: str  # NetDevice (gVNIC) | RDMA: the GKENetworkParamSet's deviceMode
    network_profile: str | None = None  # projects/P/global/networkProfiles/<zone>-vpc-roce for RDMA VPCs


@dataclass(frozen=True)
class SystemPoolPlan:
    """The node pool the created GKE cluster's system pods run on."""

    name: str
    machine_type: str
    image_type: str
    disk_size_gb: int
    disk_type: str
    min_nodes: int
    max_nodes: int
    labels: Mapping[str, str]
    account_id: str  # its service account (6-30 characters)
    roles: tuple[str, ...]


@dataclass(frozen=True)
class GkeCreatePlan:
    """The GKE cluster and network the platform creates: location, network, control plane and system pool."""

    name: str
    project: str
    location: str  # region (regional cluster) or zone
    region: str
    zones: tuple[str, ...]  # node locations; empty: GKE's choice
    release_channel: str
    min_master_version: str | None  # cluster.kubernetesVersion
    workload_pool: str
    network: str
    subnet: str
    subnet_cidr: str
    pods_range: str  # secondary range names and CIDRs
    pods_cidr: str
    services_range: str
    services_cidr: str
    master_cidr: str
    private_endpoint: bool
    authorized_networks: tuple[Mapping[str, str], ...]  # cidrBlock, displayName
    router: str
    nat: str
    multi_networking: bool  # additional node networks (GPUDirect); needs Dataplane V2
    datapath_provider: str
    deletion_protection: bool
    resource_labels: Mapping[str, str]
    system_pool: SystemPoolPlan
    gpu_networks: tuple[GpuNetworkPlan, ...]
    pool_networks: Mapping[str, tuple[Mapping[str, str], ...]]  # pool -> its NICs' network/subnetwork, NIC order
    # The cluster's GKE Network / GKENetworkParamSet objects, one per GPU subnet (name, vpc, vpcSubnet, deviceMode):
    # what pods name in their networking.gke.io/interfaces annotation.
    k8s_networks: tuple[Mapping[str, str], ...] = ()
    # The CSI drivers the stack's file systems need (gpu-platform:storage), as addonsConfig keys
    # (storage.GKE_ADDONS): turned on at creation, so the storage renderer checks no lookup for them.
    csi_addons: tuple[str, ...] = ()
    # Private services access on the cluster's VPC, which Parallelstore needs ("PSA is required for all
    # Parallelstore functionality": GoogleCloudPlatform/cluster-toolkit modules/file-system/gke-storage/README.md
    # and main.tf's check): the reserved range's name, or None without a Parallelstore file system.
    private_service_access: str | None = None
    # The firewall rule from the control plane's range (master_cidr) to the system nodes, on the ports the add-ons'
    # webhooks and aggregated APIs listen on beyond GKE's 443 and 10250 (``plan.control_plane_ports``); None: none.
    control_plane_firewall: str | None = None
    control_plane_ports: tuple[int, ...] = ()


# ------------------------------------------------------------------------------------------- decisions

# What the control plane of a cluster with private nodes reaches on its nodes: "By default, the control plane can
# reach the nodes only on TCP ports 443 and 10250" (GKE docs, private clusters, "Adding firewall rules for specific
# use cases": the rule GKE creates, gke-<cluster>-<hash>-master, allows tcp:443,10250 from the control plane's range).
# An admission webhook or aggregated API whose pod listens elsewhere times out, and a fail-closed webhook then
# refuses what it guards.
GKE_CONTROL_PLANE_OPEN_PORTS = (443, 10250)


def add_on_ports(spec: StackSpec) -> dict[str, tuple[int, ...]]:
    """Installed add-on -> the ports on its pods the API server dials (``versions.CONTROL_PLANE_PORTS``)."""
    from ..rules_core import installed_charts

    return {
        c.key: tuple(sorted(versions.CONTROL_PLANE_PORTS[c.key]))
        for c in installed_charts(spec)
        if c.key in versions.CONTROL_PLANE_PORTS
    }


def control_plane_ports(spec: StackSpec) -> tuple[int, ...]:
    """The ports the stack's add-ons need the control plane to reach that GKE does not open: exactly those."""
    wanted = {port for ports in add_on_ports(spec).values() for port in ports}
    return tuple(sorted(wanted - set(GKE_CONTROL_PLANE_OPEN_PORTS)))


def csi_addons(spec: StackSpec) -> tuple[str, ...]:
    """The addonsConfig keys of the CSI drivers the stack's file systems need, exactly those (none without any)."""
    shared = storage.storage_plan(spec)
    return shared.gke_addons if shared is not None else ()


def account_id(prefix: str, cluster_name: str) -> str:
    """``<prefix><cluster>`` within IAM's 30 characters; long names get a stable hash suffix."""
    out = f"{prefix}{cluster_name}"
    if len(out) <= _ACCOUNT_ID_MAX:
        return out
    digest = hashlib.sha256(cluster_name.encode()).hexdigest()[:6]
    return f"{out[: _ACCOUNT_ID_MAX - len(digest) - 1].rstrip('-')}-{digest}"


def system_pool_name(spec: StackSpec) -> str:
    return spec.system_node_selector.get(NODEPOOL_LABEL, SYSTEM_POOL)


def system_pool_labels(spec: StackSpec) -> dict[str, str]:
    """The system pool's node labels: the stack's systemNodeSelector, less the label GKE sets itself."""
    return {k: v for k, v in sorted(spec.system_node_selector.items()) if k != NODEPOOL_LABEL}


def gpudirect_stack(pool: NodePool) -> str | None:
    direct = catalog.GCP_GPUDIRECT.get(pool.instance_types[0] if pool.instance_types else "")
    return direct.stack if direct else None


def needs_created_networks(spec: StackSpec, pool: NodePool) -> bool:
    """A multi-node pool on a GPUDirect machine that names no networks gets the ones the stack creates."""
    return (
        gke_create(spec) is not None
        and gpudirect_stack(pool) is not None
        and multi_node(pool)
        and not pool.gke.additional_networks
    )


def uses_gpudirect(spec: StackSpec, pool: NodePool) -> bool:
    """A pool on a GPUDirect machine whose GPU NICs are attached: networks it names, or the ones the stack creates."""
    return gpudirect_stack(pool) is not None and (
        bool(pool.gke.additional_networks) or needs_created_networks(spec, pool)
    )


def pool_zone(spec: StackSpec, pool: NodePool) -> str | None:
    """The one zone a pool runs in, if it runs in one (its own gke.zones, else the cluster's)."""
    zones = list(dict.fromkeys(pool.gke.zones))
    if not zones:
        location = spec.cluster.location or ""
        create = gke_create(spec)
        zones = [location] if gke.is_zone(location) else list(dict.fromkeys(create.zones if create else []))
    return zones[0] if len(zones) == 1 else None


def network_sets(spec: StackSpec) -> dict[str, tuple[str, str | None]]:
    """Set key -> (GPUDirect stack, zone for RDMA), in pool order: one set per TCPX / TCPXO kind, one RDMA set per
    zone (a RoCE network profile belongs to one zone)."""
    out: dict[str, tuple[str, str | None]] = {}
    for pool in spec.node_pools:
        if not needs_created_networks(spec, pool):
            continue
        stack = gpudirect_stack(pool) or ""
        if stack == "GPUDirect-RDMA":
            zone = pool_zone(spec, pool) or ""
            out.setdefault(f"rdma-{zone.rsplit('-', 1)[-1]}", (stack, zone))
        else:
            out.setdefault(stack.removeprefix("GPUDirect-").lower(), (stack, None))
    return out


def gpu_subnet_count(spec: StackSpec) -> int:
    return sum(_subnets_of(stack) for stack, _ in network_sets(spec).values())


def _subnets_of(stack: str) -> int:
    if stack == "GPUDirect-RDMA":
        return 1 + RDMA_SUBNETS
    return next(d.additional_networks for d in catalog.GCP_GPUDIRECT.values() if d.stack == stack)


def gpu_slices(gpu_cidr: str, count: int) -> list[str]:
    """``count`` equal subnets of the GPU range, in order (the Toolkit's multivpc ``cidrsubnet`` split)."""
    if count <= 0:
        return []
    net = ipaddress.ip_network(gpu_cidr, strict=False)
    bits = math.ceil(math.log2(count)) if count > 1 else 0
    return [str(s) for s in list(net.subnets(prefixlen_diff=bits))[:count]] if net.prefixlen + bits <= 32 else []


def gpu_networks(spec: StackSpec, create: GkeCreate, project: str) -> tuple[list[GpuNetworkPlan], dict[str, list]]:
    """The GPU VPCs, and per set key the pool's NIC list (network, subnetwork)."""
    name = spec.cluster.name or ""
    sets = network_sets(spec)
    slices = iter(gpu_slices(create.network.gpu, gpu_subnet_count(spec)))
    nets: list[GpuNetworkPlan] = []
    nics: dict[str, list] = {}
    for key, (stack, zone) in sets.items():
        mtu = GPU_MTU[stack]
        if stack == "GPUDirect-RDMA":
            gvnic = GpuNetworkPlan(
                f"{name}-{key}-gvnic", mtu, (SubnetPlan(f"{name}-{key}-gvnic-sub", next(slices)),), "NetDevice"
            )
            rdma = GpuNetworkPlan(
                f"{name}-{key}",
                mtu,
                tuple(SubnetPlan(f"{name}-{key}-sub-{i}", next(slices)) for i in range(RDMA_SUBNETS)),
                "RDMA",
                f"projects/{project}/global/networkProfiles/{zone}-vpc-roce",
            )
            group = [gvnic, rdma]
        else:
            group = [
                GpuNetworkPlan(
                    f"{name}-{key}-{i}", mtu, (SubnetPlan(f"{name}-{key}-{i}-sub", next(slices)),), "NetDevice"
                )
                for i in range(_subnets_of(stack))
            ]
        nets.extend(group)
        nics[key] = [{"network": n.name, "subnetwork": s.name} for n in group for s in n.subnets]
    return nets, nics


def pool_networks(spec: StackSpec) -> dict[str, list[dict[str, str]]]:
    """Pool -> the created networks its nodes attach, in NIC order (only pools that get them)."""
    create = gke_create(spec)
    if create is None:
        return {}
    _, nics = gpu_networks(spec, create, spec.cluster.project or "")
    keys = list(network_sets(spec))
    out = {}
    for pool in spec.node_pools:
        if needs_created_networks(spec, pool):
            stack = gpudirect_stack(pool) or ""
            if stack == "GPUDirect-RDMA":
                key = f"rdma-{(pool_zone(spec, pool) or '').rsplit('-', 1)[-1]}"
            else:
                key = stack.removeprefix("GPUDirect-").lower()
            if key in keys:
                out[pool.name] = nics[key]
    return out


def k8s_networks(nets: list[GpuNetworkPlan]) -> list[dict[str, str]]:
    """One Kubernetes network per GPU subnet, named as Cluster Toolkit's gke-cluster names them (variables.tf
    ``k8s_network_names``: gVNIC networks ``gvnic-1``, ``gvnic-2``...; RDMA ones ``rdma-0``...), which is what
    Google's GPUDirect guides and the NCCL installers' examples use."""
    out: list[dict[str, str]] = []
    counters = {"NetDevice": 1, "RDMA": 0}
    for net in nets:
        for s in net.subnets:
            prefix = "gvnic" if net.device_mode == "NetDevice" else "rdma"
            out.append(
                {
                    "name": f"{prefix}-{counters[net.device_mode]}",
                    "vpc": net.name,
                    "vpcSubnet": s.name,
                    "deviceMode": net.device_mode,
                }
            )
            counters[net.device_mode] += 1
    return out


def _frozen_nics(nics: list[dict[str, str]]) -> tuple[Mapping[str, str], ...]:
    return tuple(MappingProxyType(dict(n)) for n in nics)


def build(spec: StackSpec) -> GkeCreatePlan | None:
    """The created cluster's plan; None unless the stack creates its GKE cluster."""
    create = gke_create(spec)
    if create is None:
        return None
    c, r = spec.cluster, create.network
    name, project, location = c.name or "", c.project or "", c.location or ""
    nets, _ = gpu_networks(spec, create, project)
    system = spec.cluster.create.system_nodes  # type: ignore[union-attr]  # create is set (gke_create)
    machine = system.machine_type or DEFAULT_SYSTEM_MACHINE
    return GkeCreatePlan(
        name=name,
        project=project,
        location=location,
        region=gke.region_of(location) if location else "",
        zones=tuple(create.zones),
        release_channel=create.release_channel,
        min_master_version=c.kubernetes_version,
        workload_pool=f"{project}.svc.id.goog",
        network=gke.created_network(name),
        subnet=f"{name}-subnet",
        subnet_cidr=r.subnet,
        pods_range="pods",
        pods_cidr=r.pods,
        services_range="services",
        services_cidr=r.services,
        master_cidr=r.master,
        private_endpoint=create.private_endpoint,
        authorized_networks=tuple(
            MappingProxyType({"cidrBlock": a.cidr, "displayName": a.display_name or a.cidr})
            for a in create.authorized_networks
        ),
        router=f"{name}-router",
        nat=f"{name}-nat",
        multi_networking=bool(nets),
        # Multi-networking runs on Dataplane V2 only (gke-cluster main.tf derived_enable_dataplane_v2); without it
        # the cluster keeps GKE's default datapath.
        datapath_provider="ADVANCED_DATAPATH" if nets else "LEGACY_DATAPATH",
        deletion_protection=create.deletion_protection,
        resource_labels=MappingProxyType(dict(sorted({**spec.tags, "gpu-platform-cluster": name}.items()))),
        system_pool=SystemPoolPlan(
            name=system_pool_name(spec),
            machine_type=machine,
            image_type=gke.IMAGE_TYPES["cos"],
            disk_size_gb=SYSTEM_DISK_GB,
            disk_type=gke.boot_disk_type(machine),
            min_nodes=system.min,
            max_nodes=system.max,
            labels=MappingProxyType(system_pool_labels(spec)),
            account_id=account_id("gke-system-", name),
            roles=SYSTEM_NODE_ROLES,
        ),
        gpu_networks=tuple(nets),
        pool_networks=MappingProxyType({p: _frozen_nics(n) for p, n in pool_networks(spec).items()}),
        k8s_networks=_frozen_nics(k8s_networks(nets)),
        csi_addons=csi_addons(spec),
        private_service_access=f"{name}-psa" if _has_parallelstore(spec) else None,
        control_plane_firewall=control_plane_firewall(spec),
        control_plane_ports=control_plane_ports(spec) if control_plane_firewall(spec) else (),
    )


def control_plane_firewall(spec: StackSpec) -> str | None:
    """The name of the created cluster's rule opening the add-ons' ports to its control plane; None without any
    port to open (or a found cluster)."""
    if gke_create(spec) is None or not control_plane_ports(spec):
        return None
    return f"{spec.cluster.name}-master-webhooks"


def _has_parallelstore(spec: StackSpec) -> bool:
    return any(fs.kind == "parallelstore" for fs in spec.storage.file_systems)


# ------------------------------------------------------------------------------------------ for a person


def text(plan: GkeCreatePlan) -> list[str]:
    """``gpu-platform plan``'s section on the created cluster."""
    p, s = plan, plan.system_pool
    endpoint = "private endpoint" if p.private_endpoint else "public endpoint"
    allowed = ", ".join(a["cidrBlock"] for a in p.authorized_networks) or "none"
    lines = [
        "GKE cluster created",
        f"  {p.name} in {p.project}/{p.location}, release channel {p.release_channel}"
        + (f", Kubernetes >= {p.min_master_version}" if p.min_master_version else "")
        + f"; zones {', '.join(p.zones) or 'GKE default'}",
        f"  network {p.network}: subnet {p.subnet} {p.subnet_cidr}, pods {p.pods_cidr}, services {p.services_cidr}; "
        f"control plane {p.master_cidr}, private nodes, {endpoint} (authorized: {allowed}); NAT {p.nat}",
        f"  Workload Identity {p.workload_pool}; shielded nodes; {p.datapath_provider}"
        + ("; multi-networking" if p.multi_networking else ""),
        f"  system pool {s.name}: {s.machine_type}, {s.min_nodes}..{s.max_nodes} nodes, service account "
        f"{s.account_id}" + (f", labels {', '.join(f'{k}={v}' for k, v in s.labels.items())}" if s.labels else ""),
    ]
    if p.control_plane_firewall:
        lines.append(
            f"  firewall {p.control_plane_firewall}: control plane {p.master_cidr} -> system nodes on tcp "
            f"{', '.join(map(str, p.control_plane_ports))} (the add-ons' webhooks; GKE opens only 443 and 10250)"
        )
    if p.csi_addons:
        names = dict(storage.GKE_ADDONS.values())
        psa = p.private_service_access
        psa = f"; private services access {psa} (Parallelstore)" if psa else ""
        lines.append(f"  CSI add-ons on (gpu-platform:storage): {', '.join(names[a] for a in p.csi_addons)}{psa}")
    for n in p.gpu_networks:
        cidrs = ", ".join(f"{x.name} {x.cidr}" for x in n.subnets)
        lines.append(f"  GPU network {n.name} ({n.device_mode}, MTU {n.mtu}): {cidrs}")
    by_subnet = {n["vpcSubnet"]: n["name"] for n in p.k8s_networks}
    for pool, nics in p.pool_networks.items():
        names = [by_subnet.get(n["subnetwork"], "?") for n in nics]
        lines.append(f"  {pool} attaches {len(nics)} GPU networks (Kubernetes networks {', '.join(names)})")
    return lines
