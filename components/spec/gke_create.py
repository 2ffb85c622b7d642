"""``cluster.create.gke``: a GKE Standard cluster gpu-platform creates (issue 30), with its own network.

The shape follows what Google's GKE guides for GPU clusters and Cluster Toolkit's blueprints build
(GoogleCloudPlatform/cluster-toolkit v1.95.0 ``modules/scheduler/gke-cluster``, ``modules/network/vpc``,
``modules/network/multivpc``, ``modules/network/gpu-rdma-vpc``): a VPC-native cluster in its own VPC and subnet with
secondary ranges for Pods and Services, private nodes behind Cloud NAT, Workload Identity, shielded nodes, a release
channel, the default node pool removed in favour of a system node pool, and, for GPUDirect pools, the GPU NICs'
own VPCs. The defaults are the Toolkit's and ``gcloud``'s (``10.4.0.0/14`` Pods, ``172.16.0.32/28`` control plane,
``192.168.0.0/16`` for the GPU networks). What the cloud would refuse (sizes, overlaps, zones, versions) is checked
before deploy by ``components/plan/gcp/cluster_create.py``'s rules. Part of the spec layer: imports only ``base``
and ``validation``.
"""

from typing import Annotated

from pydantic import Field

from .base import Model
from .validation import GcpZone, bounded_text

# An IPv4 CIDR block as written (checked as a network, its size and overlaps by the rules, one line each).
Cidr = Annotated[str, Field(pattern=r"^[0-9]{1,3}(\.[0-9]{1,3}){3}/[0-9]{1,2}$")]


class GkeNetworkRanges(Model):
    """The cluster's VPC: the nodes' subnet and its secondary ranges, the control plane's range."""

    subnet: Cidr = Field(default="10.0.0.0/20", description="the nodes' subnet (primary range); one address per node")
    pods: Cidr = Field(
        default="10.4.0.0/14",
        description="the Pods' secondary range; GKE gives each node a /24 of it (110 Pods per node), so a /14 "
        "holds 1024 nodes",
    )
    services: Cidr = Field(default="10.8.0.0/20", description="the Services' secondary range (/16 to /27)")
    master: Cidr = Field(
        default="172.16.0.32/28", description="the control plane's private range (private nodes): exactly a /28"
    )
    gpu: Cidr = Field(
        default="192.168.0.0/16",
        description="the address space of the GPUDirect networks' subnets, split evenly between them (unused "
        "without a GPUDirect pool)",
    )


class AuthorizedNetwork(Model):
    cidr: Cidr = Field(description="an IPv4 block allowed to reach the control plane (where `pulumi up` runs)")
    display_name: bounded_text(100) | None = Field(default=None, description="its name in GKE; default the block")


class GkeCreate(Model):
    """What gpu-platform creates on GCP: the cluster, its network, Cloud NAT and the system node pool."""

    # A pattern, not an enum: every value goes to the same field of the GKE API unchanged.
    release_channel: Annotated[str, Field(pattern=r"^(RAPID|REGULAR|STABLE|EXTENDED|UNSPECIFIED)$")] = Field(
        default="REGULAR",
        description="GKE release channel; UNSPECIFIED (no channel) needs cluster.kubernetesVersion, which then pins "
        "the control plane's minor version",
    )
    zones: list[GcpZone] = Field(
        default_factory=lambda: [],
        description="the cluster's node locations (zones of its region), where the system pool and pools without "
        "gke.zones run; default: GKE's choice (three zones of a regional cluster, the zone of a zonal one)",
    )
    network: GkeNetworkRanges = Field(
        default_factory=lambda: GkeNetworkRanges(), description="the VPC's subnet and its ranges for pods and Services"
    )
    private_endpoint: bool = Field(
        default=False,
        description="the control plane is reached only on its private address (from the VPC or a peered network)",
    )
    authorized_networks: list[AuthorizedNetwork] = Field(
        default_factory=lambda: [],
        max_length=50,
        description="CIDR blocks allowed to reach the control plane (master authorized networks); required when "
        "the endpoint is public",
    )
    deletion_protection: bool = Field(
        default=True, description="GKE refuses to delete the cluster (pulumi destroy fails) until this is false"
    )
