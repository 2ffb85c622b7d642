"""The cluster the platform creates (``gpu-platform:cluster.create``, issue 30): the settings common to the
clouds (network, system nodes) and each cloud's own (``eks`` here, ``gke`` in ``gke_create``). Part of the spec layer:
imports only ``base`` and ``validation``. What follows from these (subnets, tags, add-on versions) is decided in
``components/plan/aws/cluster_create.py``; the rules a cloud enforces on them are checked there too.
"""

from typing import Annotated, Literal

from pydantic import Field

from .base import Model
from .gke_create import GkeCreate
from .validation import IamRoleArn, LabelKey, LabelValue, count

# An IPv4 CIDR block as written (a.b.c.d/n); its meaning (a network address, sizes, overlaps) is a rule's.
Cidr = Annotated[
    str,
    Field(pattern=r"^([0-9]{1,3}\.){3}[0-9]{1,3}/[0-9]{1,2}$", max_length=18, description="an IPv4 CIDR block"),
]
AvailabilityZone = Annotated[str, Field(pattern=r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9][a-z]$", max_length=32)]
EKS_LOG_TYPES = ("api", "audit", "authenticator", "controllerManager", "scheduler")
EksLogType = Literal["api", "audit", "authenticator", "controllerManager", "scheduler"]


class ClusterNetwork(Model):
    """The VPC (network) the platform creates for the cluster."""

    cidr: Cidr = Field(default="10.0.0.0/16", description="the VPC's IPv4 CIDR block (/16 to /24)")
    private_subnet_prefix: count(16, 28) = Field(
        default=19,
        description="prefix length of each private subnet (one per zone, from the start of the VPC): nodes and, "
        "with the VPC CNI, every pod take an address from it",
    )
    public_subnet_prefix: count(16, 28) = Field(
        default=24,
        description="prefix length of each public subnet (one per zone, from the end of the VPC): NAT gateways "
        "and internet-facing load balancers",
    )
    service_cidr: Cidr | None = Field(
        default=None,
        description="the cluster's Service IPv4 range (/12 to /24, outside the VPC); default the cloud's",
    )
    s3_gateway_endpoint: bool = Field(
        default=True,
        description="aws: an S3 gateway endpoint on the private route tables, so image layers (ECR serves them from "
        "S3), model and data downloads from S3 bypass the NAT gateway and its per-GB processing charge; free",
    )
    pod_cidr: Cidr | None = Field(
        default=None,
        description="aws: a secondary VPC CIDR for pods (VPC CNI custom networking, as awslabs/ai-on-eks), e.g. "
        "100.64.0.0/16: one pod subnet per zone and an ENIConfig per zone, so pods stop using the nodes' subnet "
        "addresses; RFC 6598 (100.64.0.0/10) or the VPC's RFC 1918 block, not overlapping the VPC. Default: none",
    )
    pod_subnet_prefix: count(16, 28) = Field(
        default=18, description="aws, with podCidr: prefix length of each zone's pod subnet, cut from podCidr"
    )


class SystemNodes(Model):
    """The on-demand nodes where the platform's controllers run (Karpenter, the autoscaler, Kueue, operators)."""

    instance_type: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]*\.[a-z0-9]+$", max_length=40)] = Field(
        default="m6i.xlarge", description="aws: the system node group's instance type"
    )
    machine_type: Annotated[str, Field(pattern=r"^[a-z][a-z0-9]*(-[a-z0-9]+)+$", max_length=63)] | None = Field(
        default=None, description="gcp: the system pool's machine type (default e2-standard-4)"
    )
    min: count(1, 100) = Field(default=2, description="at least this many (two: the controllers' replicas spread)")
    max: count(1, 100) = Field(default=4, description="at most this many (the autoscaler adds them under load)")
    disk_gib: count(20, 16384) = Field(default=50, description="aws: root volume size (encrypted gp3)")
    labels: dict[LabelKey, LabelValue] = Field(
        default_factory=lambda: {},
        description="extra node labels; the nodes always carry gpu-platform/node-role: system and the stack's "
        "systemNodeSelector, so the controllers find them",
    )


class EksCreate(Model):
    """aws: the EKS cluster's own settings (the VPC and system nodes are ``create.network`` and
    ``create.systemNodes``; its Kubernetes version is ``cluster.kubernetesVersion``)."""

    availability_zones: list[AvailabilityZone] = Field(
        default_factory=lambda: [],
        description="the zones of the VPC's subnets (at least two, in the cluster's region), e.g. [us-east-1a, "
        "us-east-1b]",
    )
    admin_role_arns: list[IamRoleArn] = Field(
        default_factory=lambda: [],
        description="IAM roles granted cluster admin through an access entry (AmazonEKSClusterAdminPolicy); the "
        "creator of the cluster gets none (bootstrapClusterCreatorAdminPermissions is off)",
    )
    endpoint_public_access: bool = Field(default=True, description="the API server answers on a public endpoint")
    endpoint_private_access: bool = Field(default=True, description="the API server answers inside the VPC")
    public_access_cidrs: list[Cidr] = Field(
        default_factory=lambda: [],
        description="the networks the public endpoint accepts (required with endpointPublicAccess; "
        "0.0.0.0/0 is everyone, which the security policy flags)",
    )
    log_types: list[EksLogType] = Field(
        default_factory=lambda: list(EKS_LOG_TYPES), description="control-plane logs sent to CloudWatch Logs"
    )
    log_retention_days: count(1, 3653) = Field(
        default=90, description="days CloudWatch keeps the control-plane logs (one of the retentions it offers)"
    )
    nat_gateways: Literal["one", "per-zone"] = Field(
        default="one",
        description="one NAT gateway (cheaper; the zones' egress hangs on one zone) or one per zone (highly available)",
    )


class ClusterCreate(Model):
    """Present: the platform creates the cluster (named ``cluster.name``) and its network."""

    network: ClusterNetwork = Field(
        default_factory=lambda: ClusterNetwork(),
        description="aws: the VPC the platform creates (gcp: create.gke.network)",
    )
    system_nodes: SystemNodes = Field(
        default_factory=lambda: SystemNodes(), description="the on-demand nodes the platform's controllers run on"
    )
    eks: EksCreate | None = Field(default=None, description="aws: the EKS cluster's settings")
    gke: GkeCreate | None = Field(
        default=None, description="gcp: the GKE Standard cluster, its VPC, Cloud NAT and GPUDirect networks"
    )
