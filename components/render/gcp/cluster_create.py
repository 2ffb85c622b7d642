"""The GKE cluster gpu-platform creates (``cluster.create`` on gcp, issue 30): its VPC and subnet, Cloud NAT, the
GPUDirect networks, the cluster, the system node pool with its service account, and the Kubernetes provider.

Everything it registers is decided in ``components/plan/gcp/cluster_create.py`` (``Plan.gke_create``); this
module translates it, adding what only the cloud knows (ids, the endpoint, the CA, the service account's email).
It offers what ``GkeAccess`` (the found cluster) offers the rest of the program: ``cluster``, ``endpoint``,
``ready``, ``node_locations``, ``kubeconfig`` and ``provider``, so the GPU node pools attach to it the same way.
"""

from __future__ import annotations

import re
from typing import Any

import pulumi

from ...plan.gcp.cluster_create import GkeCreatePlan
from ...plan.gcp.gke import is_zone
from ...plan.gcp.plan import OAUTH_SCOPES, nodes_per_zone, zone_count
from ...plan.plan import Plan
from .cluster import kubeconfig_of, warn_tcpx
from .nodepools import node_service_account

# The autoscaler owns the node count; initialNodeCount only seeds the new pool (as for the GPU pools).
SYSTEM_POOL_IGNORE = ["initialNodeCount", "nodeCount"]


# The range Google reserves in the VPC for private services access: a /24, as cluster-toolkit's gke-storage
# README reserves for Parallelstore (private-service-access prefix_length: 24); Google picks a free range of the
# VPC (no address given), so it never overlaps the subnet or its secondary ranges.
PSA_PREFIX_LENGTH = 24


def _private_service_access(p: GkeCreatePlan, network: Any, plan: Plan, parent: pulumi.Resource) -> Any | None:
    """Parallelstore's private services access: a reserved VPC_PEERING range and the peering connection to
    servicenetworking.googleapis.com (cluster-toolkit community/modules/network/private-service-access/main.tf).
    The connection, or None when the stack has no Parallelstore file system.

    Protected as the storage's claims are (``storage.protect``): the instances they made are retained
    (``reclaimPolicy: Retain``) and still reach the VPC through this peering, so removing the file system from the
    stack must not delete it by the way."""
    if p.private_service_access is None:
        return None
    import pulumi_gcp as gcp

    child = pulumi.ResourceOptions(parent=parent, protect=plan.storage is not None and plan.storage.protect)

    reserved = gcp.compute.GlobalAddress(
        "gke-private-service-access",
        name=p.private_service_access,
        project=p.project,
        purpose="VPC_PEERING",
        address_type="INTERNAL",
        prefix_length=PSA_PREFIX_LENGTH,
        network=network.id,
        opts=child,
    )
    return gcp.servicenetworking.Connection(
        "gke-private-service-access",
        network=network.id,
        service="servicenetworking.googleapis.com",
        reserved_peering_ranges=[reserved.name],
        opts=child,
    )


def _network(p: GkeCreatePlan, child: pulumi.ResourceOptions) -> tuple[Any, Any]:
    """The cluster's VPC and the nodes' subnet with the Pods' and Services' secondary ranges, a Cloud Router and
    Cloud NAT (private nodes have no external address)."""
    import pulumi_gcp as gcp

    c = gcp.compute
    network = c.Network(
        "gke-network",
        name=p.network,
        project=p.project,
        auto_create_subnetworks=False,
        routing_mode="REGIONAL",
        mtu=8896,
        opts=child,
    )
    subnet = c.Subnetwork(
        "gke-subnet",
        name=p.subnet,
        project=p.project,
        region=p.region,
        network=network.id,
        ip_cidr_range=p.subnet_cidr,
        private_ip_google_access=True,  # private nodes reach Google APIs (Artifact Registry, logging)
        secondary_ip_ranges=[
            c.SubnetworkSecondaryIpRangeArgs(range_name=p.pods_range, ip_cidr_range=p.pods_cidr),
            c.SubnetworkSecondaryIpRangeArgs(range_name=p.services_range, ip_cidr_range=p.services_cidr),
        ],
        opts=child,
    )
    router = c.Router("gke-router", name=p.router, project=p.project, region=p.region, network=network.id, opts=child)
    c.RouterNat(
        "gke-nat",
        name=p.nat,
        project=p.project,
        region=p.region,
        router=router.name,
        nat_ip_allocate_option="AUTO_ONLY",
        source_subnetwork_ip_ranges_to_nat="LIST_OF_SUBNETWORKS",
        subnetworks=[
            c.RouterNatSubnetworkArgs(name=subnet.id, source_ip_ranges_to_nats=["ALL_IP_RANGES"]),
        ],
        log_config=c.RouterNatLogConfigArgs(enable=True, filter="ERRORS_ONLY"),
        opts=child,
    )
    return network, subnet


def _gpu_networks(p: GkeCreatePlan, child: pulumi.ResourceOptions) -> list[Any]:
    """The GPUDirect VPCs and subnets; the gVNIC ones let the nodes reach each other (NCCL over TCP and UDP)."""
    import pulumi_gcp as gcp

    c = gcp.compute
    subnets: list[Any] = []
    for net in p.gpu_networks:
        vpc = c.Network(
            f"gpu-network-{net.name}",
            name=net.name,
            project=p.project,
            auto_create_subnetworks=False,
            routing_mode="REGIONAL",
            mtu=net.mtu,
            network_profile=net.network_profile,
            opts=child,
        )
        for s in net.subnets:
            subnets.append(
                c.Subnetwork(
                    f"gpu-subnet-{s.name}",
                    name=s.name,
                    project=p.project,
                    region=p.region,
                    network=vpc.id,
                    ip_cidr_range=s.cidr,
                    opts=child,
                )
            )
        if net.device_mode == "NetDevice":
            c.Firewall(
                f"gpu-internal-{net.name}",
                name=f"{net.name}-internal",
                project=p.project,
                network=vpc.id,
                source_ranges=[s.cidr for s in net.subnets],
                allows=[c.FirewallAllowArgs(protocol=proto) for proto in ("tcp", "udp", "icmp")],
                opts=child,
            )
    return subnets


def _control_plane_firewall(p: GkeCreatePlan, network: Any, email: Any, child: pulumi.ResourceOptions) -> Any | None:
    """The control plane's range to the system nodes on the add-ons' webhook and aggregated-API ports.

    GKE's own rule for a private cluster (gke-<cluster>-<hash>-master) admits only tcp 443 and 10250 from the control
    plane; its guide "Adding firewall rules for specific use cases" (private clusters) says to add one for a webhook's
    port: source the control plane's range (privateClusterConfig.masterIpv4CidrBlock), target the nodes. The targets
    here are the system pool's service account (a firewall target like network tags; the rule also covers the nodes'
    alias ranges, where the Pods' addresses are), where every add-on controller runs (systemNodeSelector)."""
    if p.control_plane_firewall is None:
        return None
    import pulumi_gcp as gcp

    c = gcp.compute
    return c.Firewall(
        "gke-master-webhooks",
        name=p.control_plane_firewall,
        project=p.project,
        network=network.id,
        direction="INGRESS",
        source_ranges=[p.master_cidr],
        target_service_accounts=[email],
        allows=[c.FirewallAllowArgs(protocol="tcp", ports=[str(port) for port in p.control_plane_ports])],
        description=f"GKE control plane of {p.name} to its add-ons' admission webhooks and aggregated APIs",
        opts=child,
    )


def _cluster(p: GkeCreatePlan, network: Any, subnet: Any, email: Any, opts: pulumi.ResourceOptions) -> Any:
    import pulumi_gcp as gcp

    c = gcp.container
    s = p.system_pool
    return c.Cluster(
        "gke-cluster",
        name=p.name,
        project=p.project,
        location=p.location,
        node_locations=list(p.zones) or None,
        network=network.id,
        subnetwork=subnet.id,
        networking_mode="VPC_NATIVE",
        ip_allocation_policy=c.ClusterIpAllocationPolicyArgs(
            cluster_secondary_range_name=p.pods_range, services_secondary_range_name=p.services_range
        ),
        # The default node pool is created and at once removed (modules/scheduler/gke-cluster/main.tf); while it
        # lives it runs as the system pool's account, never as the Compute Engine default (project Editor).
        remove_default_node_pool=True,
        initial_node_count=1,
        node_config=c.ClusterNodeConfigArgs(
            service_account=email,
            oauth_scopes=OAUTH_SCOPES,
            shielded_instance_config=c.ClusterNodeConfigShieldedInstanceConfigArgs(
                enable_secure_boot=True, enable_integrity_monitoring=True
            ),
            workload_metadata_config=c.ClusterNodeConfigWorkloadMetadataConfigArgs(mode="GKE_METADATA"),
            machine_type=s.machine_type,
        ),
        private_cluster_config=c.ClusterPrivateClusterConfigArgs(
            enable_private_nodes=True,
            enable_private_endpoint=p.private_endpoint,
            master_ipv4_cidr_block=p.master_cidr,
        ),
        # Present even when empty: an empty list admits no external address (gke-cluster main.tf).
        master_authorized_networks_config=c.ClusterMasterAuthorizedNetworksConfigArgs(
            cidr_blocks=[
                c.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs(
                    cidr_block=a["cidrBlock"], display_name=a["displayName"]
                )
                for a in p.authorized_networks
            ]
        ),
        # No client certificate: GKE issues none since 1.12 unless asked (master_auth left unset).
        workload_identity_config=c.ClusterWorkloadIdentityConfigArgs(workload_pool=p.workload_pool),
        release_channel=c.ClusterReleaseChannelArgs(channel=p.release_channel),
        min_master_version=p.min_master_version,
        enable_shielded_nodes=True,
        enable_legacy_abac=False,
        datapath_provider=p.datapath_provider,
        enable_multi_networking=p.multi_networking or None,
        resource_labels=dict(p.resource_labels),
        deletion_protection=p.deletion_protection,
        addons_config=_addons(p),
        opts=pulumi.ResourceOptions.merge(
            opts,
            # GKE upgrades the control plane within the channel; the node config is the removed default pool's.
            pulumi.ResourceOptions(ignore_changes=["minMasterVersion", "nodeConfig"]),
        ),
    )


def _addons(p: GkeCreatePlan) -> Any:
    """The CSI add-ons the stack's file systems need, on (the plan's addonsConfig keys: gcsFuseCsiDriverConfigs ->
    gcs_fuse_csi_driver_config, ClusterAddonsConfigGcsFuseCsiDriverConfigArgs); None (GKE's defaults) without any."""
    import pulumi_gcp as gcp

    c = gcp.container
    if not p.csi_addons:
        return None
    args = {}
    for key in p.csi_addons:
        singular = key.removesuffix("s")
        arg_class = getattr(c, f"ClusterAddonsConfig{singular[0].upper()}{singular[1:]}Args")
        args[re.sub(r"(?<!^)([A-Z])", r"_\1", singular).lower()] = arg_class(enabled=True)
    return c.ClusterAddonsConfigArgs(**args)


class GkeCluster(pulumi.ComponentResource):
    """The created GKE cluster with its network and system node pool, and a Kubernetes provider for it."""

    TYPE = "gpu-platform:gcp:GkeCluster"

    def __init__(self, name: str, plan: Plan, opts: pulumi.ResourceOptions | None = None):
        super().__init__(self.TYPE, name, None, opts)
        import pulumi_gcp as gcp

        from ..k8s import PROVIDER_OPTIONS, KubeProvider

        p, gke = plan.gke_create, plan.gke
        assert p is not None and gke is not None  # a gcp stack that creates its cluster
        s = p.system_pool
        child = pulumi.ResourceOptions(parent=self)
        network, subnet = _network(p, child)
        psa = _private_service_access(p, network, plan, self)
        gpu_subnets = _gpu_networks(p, child)
        account, grants = node_service_account(
            "gke-system-nodes",
            s.account_id,
            p.project,
            f"GKE system nodes ({p.name})",
            f"Node service account of the system node pool of cluster {p.name}; roles: " + ", ".join(s.roles),
            s.roles,
            child,
        )
        firewall = _control_plane_firewall(p, network, account.email, child)
        self.cluster = _cluster(
            p, network, subnet, account.email, pulumi.ResourceOptions(parent=self, depends_on=grants)
        )
        self.system_pool = _system_pool(
            p, self.cluster, account.email, pulumi.ResourceOptions(parent=self, depends_on=grants)
        )
        self.endpoint = self.cluster.endpoint
        # The GPU node pools wait for the cluster, its system pool and the GPU subnets (through node_locations).
        waits = [self.cluster.id, self.system_pool.id, *(n.id for n in gpu_subnets)]
        versions: list[Any] = []
        if gke.cluster.tcpx_pools:
            # the versions GKE reports now, held to GPUDirect-TCPX's bound (a warning): read from GKE at every
            # deploy, since the resource's own outputs are the state's, which a channel upgrade does not refresh
            import pulumi_gcp as gcp

            found = gcp.container.get_cluster_output(
                name=self.cluster.name,
                location=self.cluster.location,
                project=self.cluster.project,
                opts=pulumi.InvokeOutputOptions(parent=self),
            )
            versions = [found.master_version, found.node_version]
        self.ready = pulumi.Output.all(*versions, *waits).apply(
            lambda r: warn_tcpx(gke.cluster, list(r[: len(versions)]))
        )
        self.node_locations = pulumi.Output.all(self.ready, self.cluster.node_locations).apply(
            lambda r: list(r[1] or [])
        )
        access = gke.cluster  # the kubeconfig's names, as for a found cluster
        # every Kubernetes object waits for the system pool and, with Parallelstore, for private services access
        # (a claim provisions an instance in the VPC at once)
        # (and for the control plane's way to the add-ons' webhooks: a release waits for the webhook it installs)
        waits = [
            self.system_pool.id,
            *([psa.id] if psa is not None else []),
            *([firewall.id] if firewall is not None else []),
        ]
        self.kubeconfig = pulumi.Output.all(
            self.cluster.endpoint, self.cluster.master_auth.cluster_ca_certificate, *waits
        ).apply(lambda a: kubeconfig_of(access, a[0], a[1]))
        self.provider = KubeProvider(
            "kubernetes",
            kubeconfig=self.kubeconfig,
            cluster_identifier=self.cluster.id,  # as GkeAccess: a CA or IP rotation does not replace the provider
            opts=pulumi.ResourceOptions(parent=self),
            **PROVIDER_OPTIONS,
        )
        _k8s_networks(p, self, self.provider)
        _gpudirect(gke.gpudirect_objects, self, self.provider)
        # What a stack reading this one through cluster.fromStack needs (components/plan/cluster_stack.py
        # GCP_OUTPUTS), as the created EKS cluster exports its own: the created cluster is a cluster stack too.
        self.cluster_outputs = {
            "clusterName": self.cluster.name,
            "location": self.cluster.location,
            "project": self.cluster.project,
            "endpoint": self.cluster.endpoint,
            "clusterCaCertificate": self.cluster.master_auth.cluster_ca_certificate,
            # every zone the nodes are in: GKE leaves a zonal cluster's own zone out of node_locations
            "nodeLocations": pulumi.Output.all(self.cluster.location, self.cluster.node_locations).apply(
                lambda a: sorted(set(a[1] or []) | ({a[0]} if is_zone(a[0]) else set()))
            ),
        }
        self.register_outputs({"endpoint": self.cluster.endpoint, "systemPool": self.system_pool.name})


def _system_pool(p: GkeCreatePlan, cluster: Any, email: Any, opts: pulumi.ResourceOptions) -> Any:
    """Where Kueue, the GPU Operator's controllers, the autoscaled add-ons run (the stack's systemNodeSelector)."""
    import pulumi_gcp as gcp

    c = gcp.container
    s = p.system_pool
    return c.NodePool(
        "gke-system",
        name=s.name,
        project=p.project,
        location=p.location,
        cluster=cluster.name,
        node_locations=list(p.zones) or None,
        initial_node_count=cluster.node_locations.apply(
            lambda zs: nodes_per_zone(s.min_nodes, s.max_nodes, zone_count(p.location, zs))
        ),
        autoscaling=c.NodePoolAutoscalingArgs(
            total_min_node_count=s.min_nodes, total_max_node_count=s.max_nodes, location_policy="BALANCED"
        ),
        management=c.NodePoolManagementArgs(auto_repair=True, auto_upgrade=True),
        node_config=c.NodePoolNodeConfigArgs(
            machine_type=s.machine_type,
            image_type=s.image_type,
            disk_size_gb=s.disk_size_gb,
            disk_type=s.disk_type,
            labels=dict(s.labels),
            resource_labels=dict(p.resource_labels),
            service_account=email,
            oauth_scopes=OAUTH_SCOPES,
            shielded_instance_config=c.NodePoolNodeConfigShieldedInstanceConfigArgs(
                enable_secure_boot=True, enable_integrity_monitoring=True
            ),
            workload_metadata_config=c.NodePoolNodeConfigWorkloadMetadataConfigArgs(mode="GKE_METADATA"),
            metadata={"disable-legacy-endpoints": "true"},
            gvnic=c.NodePoolNodeConfigGvnicArgs(enabled=True),
        ),
        opts=pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(ignore_changes=SYSTEM_POOL_IGNORE, delete_before_replace=True)
        ),
    )


def _k8s_networks(p: GkeCreatePlan, parent: pulumi.Resource, provider: Any) -> None:
    """The cluster's multi-networking objects, one GKENetworkParamSet and Network per GPU subnet
    (modules/scheduler/gke-cluster/templates/gke-network-paramset.yaml.tftpl, network-object.yaml.tftpl)."""
    from ..k8s import kube_object

    opts = pulumi.ResourceOptions(parent=parent, provider=provider)
    for n in p.k8s_networks:
        params = kube_object(
            f"gke-network-params-{n['name']}",
            "networking.gke.io/v1",
            "GKENetworkParamSet",
            opts,
            metadata={"name": n["name"]},
            spec={"vpc": n["vpc"], "vpcSubnet": n["vpcSubnet"], "deviceMode": n["deviceMode"]},
        )
        kube_object(
            f"gke-network-{n['name']}",
            "networking.gke.io/v1",
            "Network",
            pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[params])),
            metadata={"name": n["name"]},
            spec={
                "type": "Device",
                "parametersRef": {"group": "networking.gke.io", "kind": "GKENetworkParamSet", "name": n["name"]},
            },
        )


def _gpudirect(objects: Any, parent: pulumi.Resource, provider: Any) -> None:
    """The GPUDirect pools' NCCL plugin installers and NRI device injector (components/plan/gcp/gpudirect.py)."""
    from ...plan.frozen import plain
    from ..k8s import kube_object

    opts = pulumi.ResourceOptions(parent=parent, provider=provider)
    for obj in objects:
        body = plain(obj)
        kube_object(f"gpudirect-{body['metadata']['name']}", body.pop("apiVersion"), body.pop("kind"), opts, **body)
