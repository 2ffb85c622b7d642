"""GKE GPU node pools: one least-privilege node service account per stack and one node pool per spec pool.

Each pool's nodes are tainted ``nvidia.com/gpu=present:NoSchedule`` (plus the pool's own taints) and
labelled with the shared pool labels, so only GPU workloads land there. Who serves the GPUs follows the
stack's driver choice (``derive.driver``):

* ``gke-latest`` / ``gke-default``: GKE installs the driver (``gpuDriverVersion`` LATEST / DEFAULT) and runs
  its own device plugin, so time-sharing, MPS and MIG are node-pool settings here (``gpuSharingConfig``,
  ``gpuPartitionSize``).
* ``operator``: GKE installs nothing (``INSTALLATION_DISABLED``); the nodes carry
  ``gke-no-default-nvidia-gpu-device-plugin=true`` so GKE's device plugin stays off, and the GPU
  Operator's device plugin / MIG manager apply the sharing configs selected by node labels.

Pure helpers (``node_pool_inputs`` and friends) build the inputs; the component only registers them.
"""

from __future__ import annotations

import hashlib
import math
from typing import TYPE_CHECKING, Any

import pulumi

from components.plan import derive
from components.plan.gcp import gke
from components.plan.gcp.rules import accelerator_type
from components.plan.reservations import pool_reservation
from components.spec.model import NodePool, StackSpec

if TYPE_CHECKING:
    from components.render.gcp.cluster import GkeAccess

# The node service account's project roles. roles/container.defaultNodeServiceAccount is the role
# Google's "Configure GKE node service accounts" guide names as the minimum for nodes: logging, metrics,
# resource metadata and autoscaling metrics, without the project-wide monitoring read access of
# roles/monitoring.viewer. Nodes also pull workload images from Artifact Registry.
NODE_ROLES = ("roles/artifactregistry.reader", "roles/container.defaultNodeServiceAccount")
OAUTH_SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]  # access is decided by IAM, not scopes

# The autoscaler owns the node count; initialNodeCount only seeds a new pool (and forces replacement
# when changed), so neither is reconciled after creation.
IGNORE_CHANGES = ["initialNodeCount", "nodeCount"]

TAINT_EFFECTS = {"NoSchedule": "NO_SCHEDULE", "PreferNoSchedule": "PREFER_NO_SCHEDULE", "NoExecute": "NO_EXECUTE"}
RESERVATION_TYPES = {"none": "NO_RESERVATION", "any": "ANY_RESERVATION", "specific": "SPECIFIC_RESERVATION"}
RESERVATION_KEY = "compute.googleapis.com/reservation-name"
SHARING_STRATEGIES = {"time-slicing": "TIME_SHARING", "mps": "MPS"}
DRIVER_VERSIONS = {"gke-latest": "LATEST", "gke-default": "DEFAULT", "operator": "INSTALLATION_DISABLED"}

SERVICE_ACCOUNT_PREFIX = "gpu-nodes-"
_ACCOUNT_ID_MAX = 30


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
    the preemption risk of Spot VMs, and queued provisioning obtains a request in one place. BALANCED
    (spread across zones) otherwise."""
    if pool.capacity == "spot" or pool.gke.queued_provisioning or pool_reservation(pool) is not None:
        return "ANY"
    return "BALANCED"


def autoscaling(pool: NodePool) -> dict[str, Any]:
    return {
        "totalMinNodeCount": pool.min_nodes,
        "totalMaxNodeCount": pool.node_cap,
        "locationPolicy": location_policy(pool),
    }


def initial_nodes_per_zone(pool: NodePool, zones: int) -> int:
    """initialNodeCount is per zone: enough to reach desiredNodes (else minNodes) in total, without going
    over maxNodes. Queued-provisioning pools start empty."""
    target = 0 if pool.gke.queued_provisioning else (pool.desired_nodes or pool.min_nodes)
    if target <= 0 or zones <= 0:
        return 0
    return min(math.ceil(target / zones), pool.node_cap // zones)


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


def node_config(spec: StackSpec, pool: NodePool) -> dict[str, Any]:
    """The pool's nodeConfig without the service account (which is only known once created)."""
    machine = pool.instance_types[0]
    os_ = derive.node_os(spec, pool)
    cfg: dict[str, Any] = {
        "machineType": machine,
        "imageType": gke.IMAGE_TYPES[os_],
        "diskSizeGb": pool.disk_gib,
        "diskType": gke.boot_disk_type(machine),
        "guestAccelerators": [guest_accelerator(spec, pool)],
        "spot": pool.capacity == "spot",
        "taints": taints(pool),
        "labels": derive.pool_labels(spec, pool),
        "resourceLabels": resource_labels(spec, pool),
        "oauthScopes": OAUTH_SCOPES,
        "reservationAffinity": reservation_affinity(pool),
        # Secure boot admits only signed kernel modules: GKE's drivers are signed, drivers the GPU
        # Operator builds on the node are not.
        "shieldedInstanceConfig": {
            "enableSecureBoot": derive.driver(spec) != "operator",
            "enableIntegrityMonitoring": True,
        },
        "workloadMetadataConfig": {"mode": "GKE_METADATA"},  # pods reach Google APIs as themselves, never as the node
        "metadata": {"disable-legacy-endpoints": "true"},
    }
    if os_ == "cos":
        cfg["gvnic"] = {"enabled": True}
    return cfg


def management(pool: NodePool) -> dict[str, bool]:
    """Auto-upgrade always; auto-repair except on queued-provisioning pools, which GKE's Dynamic Workload
    Scheduler guide creates with ``--no-enable-autorepair`` (auto-upgrade left on): their nodes are obtained
    together for one ProvisioningRequest, and a repair would recreate a node outside that request."""
    return {"autoRepair": not pool.gke.queued_provisioning, "autoUpgrade": True}


def node_pool_inputs(spec: StackSpec, pool: NodePool) -> dict[str, Any]:
    """Every NodePool input that depends on the spec alone (camelCase; no nodeConfig, initialNodeCount)."""
    inputs: dict[str, Any] = {
        "name": pool.name,
        "cluster": spec.cluster.name,
        "location": spec.cluster.location,
        "project": spec.cluster.project,
        "autoscaling": autoscaling(pool),
        "management": management(pool),
        # No surge node: a GPU pool rarely has spare quota or reservation for one; replace in place.
        "upgradeSettings": {"strategy": "SURGE", "maxSurge": 0, "maxUnavailable": 1},
    }
    if pool.gke.zones:
        inputs["nodeLocations"] = list(pool.gke.zones)
    if pool.gke.compact_placement:
        inputs["placementPolicy"] = {"type": "COMPACT"}
    if pool.gke.queued_provisioning:
        inputs["queuedProvisioning"] = {"enabled": True}
    if pool.gke.additional_networks:
        # GPUDirect: one node NIC per GPU network, in order (components/plan/gcp/rules.py checks the count)
        inputs["networkConfig"] = {
            "additionalNodeNetworkConfigs": [
                {"network": n.network, "subnetwork": n.subnetwork} for n in pool.gke.additional_networks
            ]
        }
    return inputs


def _zone_count(location: str, node_locations: list[str] | None) -> int:
    zones = set(node_locations or [])
    if gke.is_zone(location):
        zones.add(location)
    return max(len(zones), 1)


def _args(spec: StackSpec, pool: NodePool, service_account_email: pulumi.Input[str], zones: pulumi.Output[int]):
    """NodePoolArgs from the helpers above (typed args, so the engine sees exactly the camelCase inputs)."""
    import pulumi_gcp as gcp

    c = gcp.container
    i = node_pool_inputs(spec, pool)
    n = node_config(spec, pool)
    acc = n["guestAccelerators"][0]
    sharing = acc.get("gpuSharingConfig")
    ra = n["reservationAffinity"]
    return dict(
        name=i["name"],
        cluster=i["cluster"],
        location=i["location"],
        project=i["project"],
        node_locations=i.get("nodeLocations"),
        initial_node_count=zones.apply(lambda z: initial_nodes_per_zone(pool, z)),
        autoscaling=c.NodePoolAutoscalingArgs(
            total_min_node_count=i["autoscaling"]["totalMinNodeCount"],
            total_max_node_count=i["autoscaling"]["totalMaxNodeCount"],
            location_policy=i["autoscaling"]["locationPolicy"],
        ),
        management=c.NodePoolManagementArgs(
            auto_repair=i["management"]["autoRepair"], auto_upgrade=i["management"]["autoUpgrade"]
        ),
        upgrade_settings=c.NodePoolUpgradeSettingsArgs(
            strategy=i["upgradeSettings"]["strategy"],
            max_surge=i["upgradeSettings"]["maxSurge"],
            max_unavailable=i["upgradeSettings"]["maxUnavailable"],
        ),
        placement_policy=c.NodePoolPlacementPolicyArgs(type="COMPACT") if "placementPolicy" in i else None,
        queued_provisioning=c.NodePoolQueuedProvisioningArgs(enabled=True) if "queuedProvisioning" in i else None,
        network_config=c.NodePoolNetworkConfigArgs(
            additional_node_network_configs=[
                c.NodePoolNetworkConfigAdditionalNodeNetworkConfigArgs(**n)
                for n in i["networkConfig"]["additionalNodeNetworkConfigs"]
            ]
        )
        if "networkConfig" in i
        else None,
        node_config=c.NodePoolNodeConfigArgs(
            machine_type=n["machineType"],
            image_type=n["imageType"],
            disk_size_gb=n["diskSizeGb"],
            disk_type=n["diskType"],
            guest_accelerators=[
                c.NodePoolNodeConfigGuestAcceleratorArgs(
                    type=acc["type"],
                    count=acc["count"],
                    gpu_driver_installation_config=c.NodePoolNodeConfigGuestAcceleratorGpuDriverInstallationConfigArgs(
                        gpu_driver_version=acc["gpuDriverInstallationConfig"]["gpuDriverVersion"]
                    ),
                    gpu_sharing_config=c.NodePoolNodeConfigGuestAcceleratorGpuSharingConfigArgs(
                        gpu_sharing_strategy=sharing["gpuSharingStrategy"],
                        max_shared_clients_per_gpu=sharing["maxSharedClientsPerGpu"],
                    )
                    if sharing
                    else None,
                    gpu_partition_size=acc.get("gpuPartitionSize"),
                )
            ],
            spot=n["spot"],
            taints=[c.NodePoolNodeConfigTaintArgs(**t) for t in n["taints"]],
            labels=n["labels"],
            resource_labels=n["resourceLabels"],
            service_account=service_account_email,
            oauth_scopes=n["oauthScopes"],
            reservation_affinity=c.NodePoolNodeConfigReservationAffinityArgs(
                consume_reservation_type=ra["consumeReservationType"], key=ra.get("key"), values=ra.get("values")
            ),
            shielded_instance_config=c.NodePoolNodeConfigShieldedInstanceConfigArgs(
                enable_secure_boot=n["shieldedInstanceConfig"]["enableSecureBoot"],
                enable_integrity_monitoring=n["shieldedInstanceConfig"]["enableIntegrityMonitoring"],
            ),
            workload_metadata_config=c.NodePoolNodeConfigWorkloadMetadataConfigArgs(
                mode=n["workloadMetadataConfig"]["mode"]
            ),
            metadata=n["metadata"],
            gvnic=c.NodePoolNodeConfigGvnicArgs(enabled=True) if "gvnic" in n else None,
        ),
    )


class GkeGpuNodePools(pulumi.ComponentResource):
    """The stack's node service account with its role grants, and one GKE node pool per spec pool.

    Takes the cluster access component (not a Kubernetes provider: nothing here talks to Kubernetes);
    its lookup tells how many zones a pool without ``gke.zones`` spans.
    """

    TYPE = "gpu-platform:gcp:GkeGpuNodePools"

    def __init__(self, name: str, spec: StackSpec, cluster: GkeAccess, opts: pulumi.ResourceOptions | None = None):
        super().__init__(self.TYPE, name, None, opts)
        import pulumi_gcp as gcp

        c = spec.cluster
        child = pulumi.ResourceOptions(parent=self)
        self.service_account = gcp.serviceaccount.Account(
            "gke-gpu-nodes",
            account_id=node_service_account_id(c.name or ""),
            project=c.project,
            display_name=f"GKE GPU nodes ({c.name})",
            description=f"Node service account of gpu-platform's GPU node pools in cluster {c.name}; "
            f"roles: {', '.join(NODE_ROLES)}",
            opts=child,
        )
        member = self.service_account.email.apply(lambda email: f"serviceAccount:{email}")
        grants = [
            gcp.projects.IAMMember(
                f"gke-gpu-nodes-{role.removeprefix('roles/')}",
                project=c.project,
                role=role,
                member=member,
                opts=child,
            )
            for role in NODE_ROLES
        ]
        location = c.location or ""
        # Both wait for the cluster check (GkeAccess.ready): nothing reaches the GKE API for a cluster
        # that cannot take these pools.
        cluster_zones = cluster.node_locations.apply(lambda zs: _zone_count(location, zs))
        self.node_pools: dict[str, Any] = {}
        for pool in sorted(spec.node_pools, key=lambda p: p.name):
            own = _zone_count(location, list(pool.gke.zones))
            zones = cluster.ready.apply(lambda _, n=own: n) if pool.gke.zones else cluster_zones
            self.node_pools[pool.name] = gcp.container.NodePool(
                f"gke-{pool.name}",
                **_args(spec, pool, self.service_account.email, zones),
                opts=pulumi.ResourceOptions(
                    parent=self,
                    # Nodes boot able to write logs and metrics and pull images.
                    depends_on=grants,
                    ignore_changes=IGNORE_CHANGES,
                    # The pool name is fixed (no auto-naming), so a replacement must delete first.
                    delete_before_replace=True,
                ),
            )
        self.register_outputs(
            {
                "serviceAccount": self.service_account.email,
                "nodePools": sorted(self.node_pools),
            }
        )
