"""The GKE plan (issue 28): everything gpu-platform's GKE resources take from the spec, decided here so the
renderers (``components/render/gcp``) only translate it. ``Plan.gke`` is None when the stack's cloud is not gcp.

* ``GkeClusterPlan``: the cluster looked up (name, project, location), the kubeconfig's entry name, and whether
  the cluster must have Workload Identity Federation (it must when gpu-platform creates node pools).
* ``GkeServiceAccountPlan``: the node service account and the project roles it is granted.
* ``GkeNodePoolPlan``: per pool, every input of the GKE node pool that follows from the spec (machine, boot
  disk, accelerator with driver and sharing, autoscaling, placement, reservation, spot, GPUDirect networks,
  labels, taints). ``node_pool_inputs_of`` and ``node_config_of`` give them in the GKE API's camelCase shapes;
  what only the cloud knows (the service account's email, the cluster's zones when a pool names none) the
  renderer adds.

Who serves the GPUs follows the stack's driver choice (``derive.driver``):

* ``gke-latest`` / ``gke-default``: GKE installs the driver (``gpuDriverVersion`` LATEST / DEFAULT) and runs
  its own device plugin, so time-sharing, MPS and MIG are node-pool settings here (``gpuSharingConfig``,
  ``gpuPartitionSize``).
* ``operator``: GKE installs nothing (``INSTALLATION_DISABLED``); the nodes carry
  ``gke-no-default-nvidia-gpu-device-plugin=true`` so GKE's device plugin stays off, and the GPU
  Operator's device plugin / MIG manager apply the sharing configs selected by node labels.

Pure: the spec in, frozen data out (no pulumi, no pulumi_gcp).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ...spec.model import NodePool, StackSpec
from .. import derive, images
from ..frozen import freeze as _freeze, frozen as _frozen, plain as _plain
from ..reservations import pool_reservation
from . import cluster_create, gke, gpudirect
from .rules import accelerator_type

# The node service account's project roles. roles/container.defaultNodeServiceAccount is the role
# Google's "Configure GKE node service accounts" guide names as the minimum for nodes: logging, metrics,
# resource metadata and autoscaling metrics, without the project-wide monitoring read access of
# roles/monitoring.viewer. Nodes also pull workload images from Artifact Registry.
NODE_ROLES = ("roles/artifactregistry.reader", "roles/container.defaultNodeServiceAccount")
OAUTH_SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]  # access is decided by IAM, not scopes

TAINT_EFFECTS = {"NoSchedule": "NO_SCHEDULE", "PreferNoSchedule": "PREFER_NO_SCHEDULE", "NoExecute": "NO_EXECUTE"}
RESERVATION_TYPES = {"none": "NO_RESERVATION", "any": "ANY_RESERVATION", "specific": "SPECIFIC_RESERVATION"}
RESERVATION_KEY = "compute.googleapis.com/reservation-name"
SHARING_STRATEGIES = {"time-slicing": "TIME_SHARING", "mps": "MPS"}
DRIVER_VERSIONS = {"gke-latest": "LATEST", "gke-default": "DEFAULT", "operator": "INSTALLATION_DISABLED"}

SERVICE_ACCOUNT_PREFIX = "gpu-nodes-"
_ACCOUNT_ID_MAX = 30


@dataclass(frozen=True)
class GkeClusterPlan:
    """The GKE cluster a gcp stack runs on: its name, project, location and kubeconfig entry."""

    name: str | None
    project: str | None
    location: str | None  # a region or a zone
    kubeconfig_name: str  # the kubeconfig's cluster, context and user: gke_<project>_<location>_<name>, as gcloud
    needs_workload_identity: bool  # node pools run with GKE_METADATA, which needs a workload pool
    # pools running GPUDirect-TCPX (over the networks they name or the created ones): the cluster's versions are
    # checked against TCPX_BROKEN_FROM at deploy (components/render/gcp/cluster.py tcpx_warning)
    tcpx_pools: tuple[str, ...] = ()
    # The ports on the installed add-ons' pods the API server dials (webhooks, aggregated APIs) beyond the two a
    # private cluster's control plane reaches (``control_plane_ports``): a created cluster opens them with a firewall
    # rule; for a found or referenced one with private nodes, a warning names them at deploy.
    control_plane_ports: tuple[int, ...] = ()


@dataclass(frozen=True)
class GkeServiceAccountPlan:
    """The service account the GPU node pools run as, and the project roles granted to it."""

    account_id: str
    display_name: str
    description: str
    roles: tuple[str, ...]  # project roles granted to it


@dataclass(frozen=True)
class GkeNodePoolPlan:
    """One GKE node pool: what its resource takes from the spec."""

    name: str  # the node pool's name, the pool's
    machine_type: str
    image_type: str
    disk_size_gb: int
    disk_type: str
    accelerator: Mapping[str, Any]  # the guestAccelerators entry: type, count, driver, sharing or MIG partition
    spot: bool
    min_nodes: int
    max_nodes: int
    location_policy: str  # ANY | BALANCED
    initial_nodes: int  # nodes a new pool starts with in total (split per zone once the zones are known)
    auto_repair: bool
    zones: tuple[str, ...]  # nodeLocations; empty: the cluster's
    compact_placement: bool
    queued_provisioning: bool
    additional_networks: tuple[Mapping[str, str], ...]  # GPUDirect NICs: network, subnetwork, in NIC order
    taints: tuple[Mapping[str, str], ...]  # in GKE's form (NO_SCHEDULE ...)
    labels: Mapping[str, str]
    resource_labels: Mapping[str, str]  # Compute Engine labels on the node VMs and disks
    reservation_affinity: Mapping[str, Any]
    secure_boot: bool
    gvnic: bool
    local_ssds: int = 0  # local SSDs backing the node's ephemeral storage (0: the boot disk)
    flex_start: bool = False  # DWS flex-start capacity
    max_run_duration: str | None = None  # "<seconds>s": GKE deletes a node this long after it started
    sysctls: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))  # linuxNodeConfig.sysctls
    # image delivery (components/plan/images.py): gcfsConfig (image streaming) and secondaryBootDisks ({}: neither)
    images: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class GkePlan:
    """A gcp stack's GKE objects: the cluster, the nodes' service account and the node pools."""

    cluster: GkeClusterPlan
    node_service_account: GkeServiceAccountPlan
    node_pools: Mapping[str, GkeNodePoolPlan]  # by pool name, in the order they are registered (by name)
    created_firewall: str | None = None  # a created cluster's rule opening cluster.control_plane_ports
    # A created cluster's GPUDirect pools' NCCL plugin installers and NRI device injector (plan/gcp/gpudirect.py), as
    # the DaemonSets the render registers once the cluster answers; () without a GPUDirect pool or cluster.create.
    gpudirect_objects: tuple[Mapping[str, Any], ...] = ()


# ------------------------------------------------------------------------------------ the decisions


def node_service_account_id(cluster_name: str) -> str:
    """``gpu-nodes-<cluster>``: 6-30 characters as IAM requires; long names get a stable hash suffix."""
    account_id = f"{SERVICE_ACCOUNT_PREFIX}{cluster_name}"
    if len(account_id) <= _ACCOUNT_ID_MAX:
        return account_id
    digest = hashlib.sha256(cluster_name.encode()).hexdigest()[:6]
    head = account_id[: _ACCOUNT_ID_MAX - len(digest) - 1].rstrip("-")
    return f"{head}-{digest}"


def driver_version(spec: StackSpec, pool: NodePool) -> str:
    """gpuDriverInstallationConfig.gpuDriverVersion. LATEST exists on COS only: an Ubuntu pool of a stack
    that left the driver on auto gets DEFAULT (an explicit gke-latest on Ubuntu is a rule error)."""
    version = DRIVER_VERSIONS[derive.driver(spec)]
    if version == "LATEST" and derive.node_os(spec, pool) != "cos":
        return "DEFAULT"
    return version


def guest_accelerator(spec: StackSpec, pool: NodePool) -> dict[str, Any]:
    """The pool's guestAccelerators entry (camelCase, as the GKE API names the fields)."""
    acc: dict[str, Any] = {
        "type": accelerator_type(pool),
        "count": pool.gpu.per_node,
        "gpuDriverInstallationConfig": {"gpuDriverVersion": driver_version(spec, pool)},
    }
    s = pool.sharing
    if s is not None and derive.device_plugin_owner(spec) == "gke":
        if s.strategy in SHARING_STRATEGIES:
            acc["gpuSharingConfig"] = {
                "gpuSharingStrategy": SHARING_STRATEGIES[s.strategy],
                "maxSharedClientsPerGpu": s.replicas,
            }
        elif s.strategy == "mig" and s.layout:
            (acc["gpuPartitionSize"],) = s.layout  # the rules allow exactly one profile on GKE
    return acc


def taints(pool: NodePool) -> list[dict[str, str]]:
    """The declared taints (the GPU taint first) in GKE's form. GKE adds the queued-provisioning taint
    itself, so it is not declared here (``derive.node_taints`` lists it for tolerations)."""
    return [{"key": t.key, "value": t.value or "", "effect": TAINT_EFFECTS[t.effect]} for t in derive.pool_taints(pool)]


def location_policy(pool: NodePool) -> str:
    """ANY lets the autoscaler take whichever zone has capacity: it prefers unused reservations and lowers
    the preemption risk of Spot VMs, and queued provisioning and flex-start obtain capacity in one place. BALANCED
    (spread across zones) otherwise."""
    g = pool.gke
    if pool.capacity == "spot" or g.queued_provisioning or g.flex_start or pool_reservation(pool) is not None:
        return "ANY"
    return "BALANCED"


def autoscaling(pool: NodePool) -> dict[str, Any]:
    return {
        "totalMinNodeCount": pool.min_nodes,
        "totalMaxNodeCount": pool.node_cap,
        "locationPolicy": location_policy(pool),
    }


def initial_nodes(pool: NodePool) -> int:
    """The nodes a new pool starts with in total: desiredNodes when given, else minNodes. Queued-provisioning
    pools start empty."""
    return 0 if pool.gke.queued_provisioning or pool.gke.flex_start else (pool.desired_nodes or pool.min_nodes)


def nodes_per_zone(target: int, max_nodes: int, zones: int) -> int:
    """initialNodeCount is per zone: enough to reach ``target`` in total, without going over ``max_nodes``."""
    if target <= 0 or zones <= 0:
        return 0
    return min(math.ceil(target / zones), max_nodes // zones)


def initial_nodes_per_zone(pool: NodePool, zones: int) -> int:
    """initialNodeCount of the pool over ``zones`` zones."""
    return nodes_per_zone(initial_nodes(pool), pool.node_cap, zones)


def zone_count(location: str, node_locations: list[str] | None) -> int:
    """The zones a node pool spans: its node locations, plus a zonal cluster's own zone; at least 1."""
    zones = set(node_locations or [])
    if gke.is_zone(location):
        zones.add(location)
    return max(len(zones), 1)


def reservation_affinity(pool: NodePool) -> dict[str, Any]:
    """From the pool's reservation (``reservation:`` or the older ``gke.reservation`` keys, read alike by
    ``components/plan/reservations.py``)."""
    r = pool_reservation(pool)
    kind = "none" if r is None else ("any" if r.match == "any" else "specific")
    out: dict[str, Any] = {"consumeReservationType": RESERVATION_TYPES[kind]}
    if r is not None and kind == "specific":
        out["key"] = RESERVATION_KEY
        out["values"] = list(r.ids)
    return out


def resource_labels(spec: StackSpec, pool: NodePool) -> dict[str, str]:
    """Compute Engine labels on the node VMs and disks (cost reports): the stack's tags plus the pool."""
    return dict(sorted({**spec.tags, "gpu-platform-pool": pool.name}.items()))


def management(pool: NodePool) -> dict[str, bool]:
    """Auto-upgrade always; auto-repair except on queued-provisioning pools, which GKE's Dynamic Workload
    Scheduler guide creates with ``--no-enable-autorepair`` (auto-upgrade left on): their nodes are obtained
    together for one ProvisioningRequest, and a repair would recreate a node outside that request."""
    # flex-start too: cluster-toolkit v1.95.0 gke-node-pool main.tf "enable_flex_start needs node auto_repair set to
    # false" (GKE's flex-start guide creates the pool with --no-enable-autorepair)
    return {"autoRepair": not (pool.gke.queued_provisioning or pool.gke.flex_start), "autoUpgrade": True}


def local_ssds(pool: NodePool) -> int:
    """Local SSDs backing the node's ephemeral storage: the machine's bundled ones unless the pool opts out."""
    bundled = gke.BUNDLED_LOCAL_SSDS.get(pool.instance_types[0] if pool.instance_types else "", 0)
    return bundled if pool.gke.local_ssd_ephemeral_storage is not False else 0


def sysctls(pool: NodePool) -> dict[str, str]:
    """NCCL's TCP buffers where NCCL talks between nodes (a pool that runs multi-node jobs: topology-aware, or
    with GPUDirect networks) unless the pool says otherwise; not by default elsewhere, since setting them on a
    deployed pool rolls its nodes and single-node jobs gain nothing."""
    on = pool.gke.nccl_tcp_sysctls
    if on is None:
        on = pool.topology_aware or bool(pool.gke.additional_networks)
    return dict(gke.NCCL_TCP_SYSCTLS) if on else {}


# ------------------------------------------------------------------------------------------- the plan


def cluster_plan(spec: StackSpec) -> GkeClusterPlan:
    c = spec.cluster
    return GkeClusterPlan(
        name=c.name,
        project=c.project,
        location=c.location,
        kubeconfig_name=f"gke_{c.project}_{c.location}_{c.name}",
        needs_workload_identity=bool(spec.node_pools),
        tcpx_pools=tuple(
            p.name
            for p in spec.node_pools
            if cluster_create.gpudirect_stack(p) == "GPUDirect-TCPX" and cluster_create.uses_gpudirect(spec, p)
        ),
        control_plane_ports=cluster_create.control_plane_ports(spec),
    )


def service_account_plan(spec: StackSpec) -> GkeServiceAccountPlan:
    name = spec.cluster.name
    return GkeServiceAccountPlan(
        account_id=node_service_account_id(name or ""),
        display_name=f"GKE GPU nodes ({name})",
        description=f"Node service account of gpu-platform's GPU node pools in cluster {name}; "
        f"roles: {', '.join(NODE_ROLES)}",
        roles=NODE_ROLES,
    )


def pool_plan(spec: StackSpec, pool: NodePool) -> GkeNodePoolPlan:
    machine = pool.instance_types[0]
    os_ = derive.node_os(spec, pool)
    return GkeNodePoolPlan(
        name=pool.name,
        machine_type=machine,
        image_type=gke.IMAGE_TYPES[os_],
        disk_size_gb=pool.disk_gib,
        disk_type=gke.boot_disk_type(machine),
        accelerator=_frozen(guest_accelerator(spec, pool)),
        spot=pool.capacity == "spot",
        min_nodes=pool.min_nodes,
        max_nodes=pool.node_cap,
        location_policy=location_policy(pool),
        initial_nodes=initial_nodes(pool),
        auto_repair=management(pool)["autoRepair"],
        zones=tuple(pool.gke.zones),
        compact_placement=pool.gke.compact_placement,
        queued_provisioning=pool.gke.queued_provisioning,
        additional_networks=_frozen(
            [{"network": n.network, "subnetwork": n.subnetwork} for n in pool.gke.additional_networks]
            or cluster_create.pool_networks(spec).get(pool.name, [])
        ),
        taints=_frozen(taints(pool)),
        labels=_frozen(derive.pool_labels(spec, pool)),
        resource_labels=_frozen(resource_labels(spec, pool)),
        reservation_affinity=_frozen(reservation_affinity(pool)),
        # Secure boot admits only signed kernel modules: GKE's drivers are signed, drivers the GPU
        # Operator builds on the node are not.
        secure_boot=derive.driver(spec) != "operator",
        gvnic=os_ == "cos",
        local_ssds=local_ssds(pool),
        flex_start=pool.gke.flex_start,
        max_run_duration=f"{pool.gke.max_run_duration}s" if pool.gke.max_run_duration else None,
        sysctls=_frozen(sysctls(pool)),
        images=_frozen(images.gke_node_config(spec, pool)),
    )


def build(spec: StackSpec) -> GkePlan | None:
    """The stack's GKE plan; None unless its cloud is gcp."""
    if spec.cloud != "gcp":
        return None
    return GkePlan(
        cluster=cluster_plan(spec),
        node_service_account=service_account_plan(spec),
        node_pools=MappingProxyType(
            {p.name: pool_plan(spec, p) for p in sorted(spec.node_pools, key=lambda p: p.name)}
        ),
        created_firewall=cluster_create.control_plane_firewall(spec),
        gpudirect_objects=tuple(_freeze(m, keep_order=True) for m in gpudirect.manifests(spec)),
    )


# ---------------------------------------------------------------------- the GKE API's shapes of a pool


def node_config_of(pool: GkeNodePoolPlan) -> dict[str, Any]:
    """The pool's nodeConfig without the service account (which is only known once created)."""
    cfg: dict[str, Any] = {
        "machineType": pool.machine_type,
        "imageType": pool.image_type,
        "diskSizeGb": pool.disk_size_gb,
        "diskType": pool.disk_type,
        "guestAccelerators": [_plain(pool.accelerator)],
        "spot": pool.spot,
        "taints": _plain(pool.taints),
        "labels": _plain(pool.labels),
        "resourceLabels": _plain(pool.resource_labels),
        "oauthScopes": OAUTH_SCOPES,
        "reservationAffinity": _plain(pool.reservation_affinity),
        "shieldedInstanceConfig": {"enableSecureBoot": pool.secure_boot, "enableIntegrityMonitoring": True},
        "workloadMetadataConfig": {"mode": "GKE_METADATA"},  # pods reach Google APIs as themselves, never as the node
        "metadata": {"disable-legacy-endpoints": "true"},
    }
    if pool.gvnic:
        cfg["gvnic"] = {"enabled": True}
    if pool.local_ssds:
        cfg["ephemeralStorageLocalSsdConfig"] = {"localSsdCount": pool.local_ssds}
    if pool.flex_start:
        cfg["flexStart"] = True
    if pool.max_run_duration:
        cfg["maxRunDuration"] = pool.max_run_duration
    if pool.sysctls:
        cfg["linuxNodeConfig"] = {"sysctls": _plain(pool.sysctls)}
    cfg.update(_plain(pool.images))  # image streaming, the secondary boot disk of cached images
    return cfg


def node_pool_inputs_of(cluster: GkeClusterPlan, pool: GkeNodePoolPlan) -> dict[str, Any]:
    """Every NodePool input that depends on the spec alone (camelCase; no nodeConfig, initialNodeCount)."""
    inputs: dict[str, Any] = {
        "name": pool.name,
        "cluster": cluster.name,
        "location": cluster.location,
        "project": cluster.project,
        "autoscaling": {
            "totalMinNodeCount": pool.min_nodes,
            "totalMaxNodeCount": pool.max_nodes,
            "locationPolicy": pool.location_policy,
        },
        "management": {"autoRepair": pool.auto_repair, "autoUpgrade": True},
        # No surge node: a GPU pool rarely has spare quota or reservation for one; replace in place.
        "upgradeSettings": {"strategy": "SURGE", "maxSurge": 0, "maxUnavailable": 1},
    }
    if pool.zones:
        inputs["nodeLocations"] = list(pool.zones)
    if pool.compact_placement:
        inputs["placementPolicy"] = {"type": "COMPACT"}
    if pool.queued_provisioning:
        inputs["queuedProvisioning"] = {"enabled": True}
    if pool.additional_networks:
        # GPUDirect: one node NIC per GPU network, in order (components/plan/gcp/rules.py checks the count)
        inputs["networkConfig"] = {"additionalNodeNetworkConfigs": _plain(pool.additional_networks)}
    return inputs


def node_config(spec: StackSpec, pool: NodePool) -> dict[str, Any]:
    """``node_config_of`` the pool's plan, for callers holding the spec."""
    return node_config_of(pool_plan(spec, pool))


def node_pool_inputs(spec: StackSpec, pool: NodePool) -> dict[str, Any]:
    """``node_pool_inputs_of`` the pool's plan, for callers holding the spec."""
    return node_pool_inputs_of(cluster_plan(spec), pool_plan(spec, pool))


# ------------------------------------------------------------------------------------ for a person


def text(plan: GkePlan) -> list[str]:
    """``gpu-platform plan``'s GKE section: the cluster, the node service account, a line per node pool."""
    c, sa = plan.cluster, plan.node_service_account
    lines = [
        "GKE",
        f"  cluster {c.name} in {c.project}/{c.location}"
        + ("; needs Workload Identity Federation" if c.needs_workload_identity else "")
        + (
            f"; GPUDirect-TCPX pools {', '.join(c.tcpx_pools)} (node version checked at deploy)" if c.tcpx_pools else ""
        ),
        f"  node service account {sa.account_id} ({', '.join(sa.roles)})",
    ]
    if c.control_plane_ports:
        ports = ", ".join(map(str, c.control_plane_ports))
        lines.append(f"  control plane -> add-on pods on tcp {ports} ({ports_how(plan)})")
    for obj in plan.gpudirect_objects:
        node = obj["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
        (term,) = node["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        pools = ", ".join(term["matchExpressions"][0]["values"])
        lines.append(f"  GPUDirect DaemonSet kube-system/{obj['metadata']['name']} on {pools}")
    for p in plan.node_pools.values():
        acc = p.accelerator
        sharing = acc.get("gpuSharingConfig")
        how = (
            f", {sharing['gpuSharingStrategy']} x{sharing['maxSharedClientsPerGpu']}"
            if sharing
            else f", MIG {acc['gpuPartitionSize']}"
            if "gpuPartitionSize" in acc
            else ""
        )
        extras = [
            f"zones {', '.join(p.zones)}" if p.zones else "the cluster's zones",
            *(["compact placement"] if p.compact_placement else []),
            *(["queued provisioning"] if p.queued_provisioning else []),
            *(["flex-start"] if p.flex_start else []),
            *([f"max run {p.max_run_duration}"] if p.max_run_duration else []),
            *([f"{p.local_ssds} local SSDs as ephemeral storage"] if p.local_ssds else []),
            *(["NCCL TCP sysctls"] if p.sysctls else []),
            *([f"{len(p.additional_networks)} GPU networks"] if p.additional_networks else []),
            _reservation_text(p.reservation_affinity),
        ]
        lines.append(
            f"  {p.name}: {p.machine_type}{' spot' if p.spot else ''}, {acc['count']} x {acc['type']} "
            f"(driver {acc['gpuDriverInstallationConfig']['gpuDriverVersion']}{how}), {p.image_type} on "
            f"{p.disk_size_gb} GiB {p.disk_type}; {p.min_nodes}..{p.max_nodes} nodes (location policy "
            f"{p.location_policy}, {p.initial_nodes} at creation); {'; '.join(extras)}"
        )
    return lines


def ports_how(plan: GkePlan) -> str:
    """How the control plane reaches the add-ons' ports: a created cluster's firewall rule, or the user's."""
    if plan.created_firewall:
        return f"firewall rule {plan.created_firewall}"
    return "private nodes need a firewall rule for them from the control plane's range: a warning at deploy"


def _reservation_text(affinity: Mapping[str, Any]) -> str:
    kind = affinity["consumeReservationType"]
    if kind == RESERVATION_TYPES["specific"]:
        return f"reservation {', '.join(affinity['values'])}"
    return "any matching reservation" if kind == RESERVATION_TYPES["any"] else "no reservation"
