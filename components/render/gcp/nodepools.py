"""GKE GPU node pools: one least-privilege node service account per stack and one node pool per spec pool.

Each pool's nodes are tainted ``nvidia.com/gpu=present:NoSchedule`` (plus the pool's own taints) and
labelled with the shared pool labels, so only GPU workloads land there. What each node pool gets (machine,
accelerator and driver, sharing, autoscaling, placement, reservation, networks, labels, taints) is decided in
``components/plan/gcp/plan.py`` (``Plan.gke``); this module only registers it, adding what the cloud answers:
the service account's email and, for a pool without ``gke.zones``, the cluster's zones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pulumi

from ...plan.gcp.plan import (
    DRIVER_VERSIONS as DRIVER_VERSIONS,
    NODE_ROLES as NODE_ROLES,
    OAUTH_SCOPES as OAUTH_SCOPES,
    RESERVATION_KEY as RESERVATION_KEY,
    RESERVATION_TYPES as RESERVATION_TYPES,
    SERVICE_ACCOUNT_PREFIX as SERVICE_ACCOUNT_PREFIX,
    SHARING_STRATEGIES as SHARING_STRATEGIES,
    TAINT_EFFECTS as TAINT_EFFECTS,
    GkeClusterPlan,
    GkeNodePoolPlan,
    autoscaling as autoscaling,
    driver_version as driver_version,
    guest_accelerator as guest_accelerator,
    initial_nodes_per_zone as initial_nodes_per_zone,
    location_policy as location_policy,
    management as management,
    node_config as node_config,
    node_config_of,
    node_pool_inputs as node_pool_inputs,
    node_pool_inputs_of,
    node_service_account_id as node_service_account_id,
    nodes_per_zone,
    reservation_affinity as reservation_affinity,
    resource_labels as resource_labels,
    taints as taints,
    zone_count,
)
from ...plan.plan import Plan

if TYPE_CHECKING:
    from .cluster import GkeAccess

# The autoscaler owns the node count; initialNodeCount only seeds a new pool (and forces replacement
# when changed), so neither is reconciled after creation. The local SSDs of the ephemeral storage are set when a pool
# is created and GKE cannot change them in place: a change would replace a deployed pool (and its running nodes), so
# it is ignored as cluster-toolkit v1.95.0 ignores it (gke-node-pool main.tf lifecycle ignore_changes
# node_config[0].ephemeral_storage_local_ssd_config): a pool deployed before keeps its disks until it is recreated.
IGNORE_CHANGES = ["initialNodeCount", "nodeCount", "nodeConfig.ephemeralStorageLocalSsdConfig"]

_zone_count = zone_count  # the name the tests know


def _args(
    cluster: GkeClusterPlan, pool: GkeNodePoolPlan, service_account_email: pulumi.Input[str], zones: pulumi.Output[int]
):
    """NodePoolArgs from the pool's plan (typed args, so the engine sees exactly the camelCase inputs)."""
    import pulumi_gcp as gcp

    c = gcp.container
    i = node_pool_inputs_of(cluster, pool)
    n = node_config_of(pool)
    acc = n["guestAccelerators"][0]
    sharing = acc.get("gpuSharingConfig")
    ra = n["reservationAffinity"]
    return dict(
        name=i["name"],
        cluster=i["cluster"],
        location=i["location"],
        project=i["project"],
        node_locations=i.get("nodeLocations"),
        initial_node_count=zones.apply(lambda z: nodes_per_zone(pool.initial_nodes, pool.max_nodes, z)),
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
            ephemeral_storage_local_ssd_config=c.NodePoolNodeConfigEphemeralStorageLocalSsdConfigArgs(
                local_ssd_count=n["ephemeralStorageLocalSsdConfig"]["localSsdCount"]
            )
            if "ephemeralStorageLocalSsdConfig" in n
            else None,
            flex_start=n.get("flexStart"),
            max_run_duration=n.get("maxRunDuration"),
            linux_node_config=c.NodePoolNodeConfigLinuxNodeConfigArgs(sysctls=n["linuxNodeConfig"]["sysctls"])
            if "linuxNodeConfig" in n
            else None,
            gcfs_config=c.NodePoolNodeConfigGcfsConfigArgs(enabled=n["gcfsConfig"]["enabled"])
            if "gcfsConfig" in n
            else None,
            secondary_boot_disks=[
                c.NodePoolNodeConfigSecondaryBootDiskArgs(disk_image=d["diskImage"], mode=d["mode"])
                for d in n["secondaryBootDisks"]
            ]
            if "secondaryBootDisks" in n
            else None,
        ),
    )


def node_service_account(
    name: str,
    account_id: str,
    project: str | None,
    display_name: str,
    description: str,
    roles: Sequence[str],
    child: pulumi.ResourceOptions,
) -> tuple[Any, list[Any]]:
    """A node pool's own service account and its project role grants (``<name>-<role>``): the GPU pools' and a
    created cluster's system pool's."""
    import pulumi_gcp as gcp

    account = gcp.serviceaccount.Account(
        name, account_id=account_id, project=project, display_name=display_name, description=description, opts=child
    )
    member = account.email.apply(lambda email: f"serviceAccount:{email}")
    grants = [
        gcp.projects.IAMMember(
            f"{name}-{role.removeprefix('roles/')}", project=project, role=role, member=member, opts=child
        )
        for role in roles
    ]
    return account, grants


class GkeGpuNodePools(pulumi.ComponentResource):
    """The stack's node service account with its role grants, and one GKE node pool per spec pool.

    Takes the cluster access component (not a Kubernetes provider: nothing here talks to Kubernetes);
    its lookup tells how many zones a pool without ``gke.zones`` spans.
    """

    TYPE = "gpu-platform:gcp:GkeGpuNodePools"

    def __init__(self, name: str, plan: Plan, cluster: GkeAccess, opts: pulumi.ResourceOptions | None = None):
        super().__init__(self.TYPE, name, None, opts)
        import pulumi_gcp as gcp

        gke = plan.gke
        assert gke is not None  # a gcp stack's
        c, sa = gke.cluster, gke.node_service_account
        child = pulumi.ResourceOptions(parent=self)
        self.service_account, grants = node_service_account(
            "gke-gpu-nodes", sa.account_id, c.project, sa.display_name, sa.description, sa.roles, child
        )
        location = c.location or ""
        # Both wait for the cluster check (GkeAccess.ready): nothing reaches the GKE API for a cluster
        # that cannot take these pools.
        cluster_zones = cluster.node_locations.apply(lambda zs: zone_count(location, zs))
        self.node_pools: dict[str, Any] = {}
        for pool in gke.node_pools.values():
            own = zone_count(location, list(pool.zones))
            zones = cluster.ready.apply(lambda _, n=own: n) if pool.zones else cluster_zones
            self.node_pools[pool.name] = gcp.container.NodePool(
                f"gke-{pool.name}",
                **_args(c, pool, self.service_account.email, zones),
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
