"""The EKS cluster gpu-platform creates (``cluster.create`` on aws, issue 30): ``Plan.eks_create``, pure data.

What AWS's EKS guides and awslabs/ai-on-eks (infra/base/terraform/vpc.tf and eks.tf @41a979e) build for a GPU
cluster, decided here and registered by ``components/render/aws/cluster_create.py``:

* a VPC across the stack's zones: per zone a private subnet (nodes and pods; tagged for Karpenter's subnet
  discovery ``karpenter.sh/discovery: <cluster>`` and internal load balancers ``kubernetes.io/role/internal-elb``)
  taken from the start of the VPC, and a public one (NAT gateways, ``kubernetes.io/role/elb``) from its end; one
  NAT gateway, or one per zone;
* the cluster: access entries only (``authenticationMode: API``; the creator gets no implicit admin), an access
  entry with AmazonEKSClusterAdminPolicy per named admin role, its Secrets encrypted with a KMS key of its own
  (rotated yearly), control-plane logs to a log group with a retention, the endpoint settings as given;
* the EKS add-ons at the versions of ``versions.EKS_ADDON_VERSIONS`` for the cluster's minor, the EBS CSI driver's
  IAM role through Pod Identity; the node monitoring agent stays the node health component's
  (``components/render/aws/node_health.py``), which takes its version from here;
* a system managed node group (AL2023, on-demand, IMDSv2, encrypted gp3 root) labelled so the stack's
  ``systemNodeSelector`` selects it: Karpenter, the autoscaler and every controller run there.

Only what AWS answers after creation (ids, ARNs, the endpoint, the OIDC issuer) is the renderer's.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ...data import versions
from ...spec.model import Problem, StackSpec, key, rule
from .. import derive
from ..frozen import freeze as _freeze
from . import cluster_access, iam, managed_pools as mp, pod_network
from .karpenter_nodes import DISCOVERY_TAG

SYSTEM_ROLE_LABEL = "gpu-platform/node-role"
SYSTEM_ROLE_VALUE = "system"
ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"
CLUSTER_ROLE_POLICIES = ("AmazonEKSClusterPolicy",)
EBS_CSI_POLICY = "service-role/AmazonEBSCSIDriverPolicy"
EBS_CSI_SERVICE_ACCOUNT = "ebs-csi-controller-sa"  # aws-ebs-csi-driver's controller (kube-system)
# The add-ons a created cluster installs before any node joins (a node needs the CNI; Pod Identity credentials
# need the agent), and the ones after the system nodes exist (their pods need somewhere to run).
BEFORE_NODES = ("vpc-cni", "eks-pod-identity-agent", "kube-proxy")
AFTER_NODES = ("coredns", "aws-ebs-csi-driver")
NODE_MONITORING_AGENT = "eks-node-monitoring-agent"
# EKS's limits on a cluster's network (EKS user guide "VPC and subnet requirements"; CreateCluster API
# serviceIpv4Cidr: "between /12 and /24"): a VPC CIDR is /16../28 (VPC user guide), subnets /28 or larger.
VPC_PREFIXES = (16, 24)
# The retentions CloudWatch Logs offers (PutRetentionPolicy retentionInDays).
LOG_RETENTION_DAYS = (
    1,
    3,
    5,
    7,
    14,
    30,
    60,
    90,
    120,
    150,
    180,
    365,
    400,
    545,
    731,
    1096,
    1827,
    2192,
    2557,
    2922,
    3288,
    3653,
)
SERVICE_PREFIXES = (12, 24)


@dataclass(frozen=True)
class SubnetPlan:
    """A subnet of the VPC the platform creates: its zone, CIDR, whether it is public, and its tags."""

    name: str
    zone: str
    cidr: str
    public: bool
    tags: Mapping[str, str]


@dataclass(frozen=True)
class EksAddonPlan:
    """An EKS add-on of the created cluster: its version, when it installs and its Pod Identity role."""

    name: str
    version: str | None  # None: EKS's default for the cluster's minor
    before_nodes: bool
    pod_identity: Mapping[str, str] | None  # {serviceAccount, role}: its IAM role through Pod Identity
    configuration_values: str | None = None  # JSON (vpc-cni: custom networking, pod_network.py), None: defaults


@dataclass(frozen=True)
class SystemNodeGroupPlan:
    """The managed node group the created cluster's system pods run on."""

    name: str
    role: str
    instance_types: tuple[str, ...]
    ami_type: str
    capacity_type: str
    scaling: Mapping[str, int]
    labels: Mapping[str, str]
    disk_gib: int
    block_device_mappings: tuple[Mapping[str, Any], ...]  # the launch template's: one encrypted gp3 root
    metadata_options: Mapping[str, Any]  # the launch template's (IMDSv2 only)


@dataclass(frozen=True)
class EksCreatePlan:
    """The EKS cluster and VPC the platform creates: network, control plane, add-ons and system nodes."""

    name: str
    region: str | None
    kubernetes_version: str
    vpc_cidr: str
    subnets: tuple[SubnetPlan, ...]  # private ones first, zone by zone, then the public ones
    nat_gateway_zones: tuple[str, ...]  # the zones with a NAT gateway (in their public subnet)
    s3_gateway_endpoint: str | None  # the S3 gateway endpoint's service name (on the private route tables); None: off
    pod_cidr: str | None  # the VPC's secondary CIDR for pods (pod_network.py); None: pods in the nodes' subnets
    pod_subnets: tuple[pod_network.PodSubnet, ...]  # one per zone, each with its zone's ENIConfig
    service_cidr: str | None
    endpoint_public_access: bool
    endpoint_private_access: bool
    public_access_cidrs: tuple[str, ...]
    authentication_mode: str
    admin_role_arns: tuple[str, ...]
    admin_policy: str
    secrets_encryption: Mapping[str, Any]  # the KMS key's settings
    log_types: tuple[str, ...]
    log_group: str
    log_retention_days: int
    cluster_role: str
    cluster_role_policies: tuple[str, ...]
    addons: tuple[EksAddonPlan, ...]
    system_nodes: SystemNodeGroupPlan
    node_monitoring_agent_version: str | None  # the node health add-on's (components/render/aws/node_health.py)
    oidc_provider: bool  # an IAM OIDC provider for the cluster's issuer: the controllers use IRSA
    tags: Mapping[str, str]


# ------------------------------------------------------------------------------------------ network


def _zones(spec: StackSpec) -> list[str]:
    c = spec.cluster.create
    return list(c.eks.availability_zones) if c is not None and c.eks is not None else []


def subnet_cidrs(vpc: str, zones: int, private_prefix: int, public_prefix: int) -> tuple[list[str], list[str]]:
    """Private subnets from the start of the VPC, public ones from its end, one each per zone."""
    net = ipaddress.ip_network(vpc)
    private = list(net.subnets(new_prefix=private_prefix)) if private_prefix >= net.prefixlen else []
    public = list(net.subnets(new_prefix=public_prefix)) if public_prefix >= net.prefixlen else []
    return [str(s) for s in private[:zones]], [str(s) for s in public[len(public) - zones :]] if zones else []


def subnets(spec: StackSpec) -> list[SubnetPlan]:
    c = spec.cluster.create
    assert c is not None
    name, zones = spec.cluster.name or "", _zones(spec)
    private, public = subnet_cidrs(
        c.network.cidr, len(zones), c.network.private_subnet_prefix, c.network.public_subnet_prefix
    )
    base = mp.base_tags(spec)
    out = [
        SubnetPlan(
            f"{name}-private-{z}",
            z,
            cidr,
            False,
            _freeze(
                {**base, "Name": f"{name}-private-{z}", DISCOVERY_TAG: name, "kubernetes.io/role/internal-elb": "1"}
            ),
        )
        for z, cidr in zip(zones, private, strict=False)
    ]
    return out + [
        SubnetPlan(
            f"{name}-public-{z}",
            z,
            cidr,
            True,
            _freeze({**base, "Name": f"{name}-public-{z}", "kubernetes.io/role/elb": "1"}),
        )
        for z, cidr in zip(zones, public, strict=False)
    ]


# ------------------------------------------------------------------------------------------ the plan


def addons(spec: StackSpec) -> list[EksAddonPlan]:
    table = versions.EKS_ADDON_VERSIONS.get(spec.cluster.kubernetes_version or "", {})
    name = spec.cluster.name or ""
    out = []
    for addon in (*BEFORE_NODES, *AFTER_NODES):
        identity = (
            {"serviceAccount": EBS_CSI_SERVICE_ACCOUNT, "role": f"{name}-ebs-csi"}
            if addon == "aws-ebs-csi-driver"
            else None
        )
        config = pod_network.vpc_cni_configuration(spec) if addon == "vpc-cni" else None
        out.append(EksAddonPlan(addon, table.get(addon), addon in BEFORE_NODES, _freeze(identity), config))
    return out


def node_monitoring_agent_version(spec: StackSpec) -> str | None:
    return versions.EKS_ADDON_VERSIONS.get(spec.cluster.kubernetes_version or "", {}).get(NODE_MONITORING_AGENT)


def system_labels(spec: StackSpec) -> dict[str, str]:
    """The system nodes' labels: the role label, the stack's extra ones and its systemNodeSelector (minus the OS
    label, which every Linux node has), so every controller's nodeSelector matches them."""
    c = spec.cluster.create
    assert c is not None
    selector = {k: v for k, v in derive.system_node_selector(spec).items() if k != "kubernetes.io/os"}
    return dict(sorted({SYSTEM_ROLE_LABEL: SYSTEM_ROLE_VALUE, **c.system_nodes.labels, **selector}.items()))


def system_node_group(spec: StackSpec) -> SystemNodeGroupPlan:
    c = spec.cluster.create
    assert c is not None
    s, name = c.system_nodes, spec.cluster.name or ""
    return SystemNodeGroupPlan(
        name=f"{name}-system",
        role=f"{name}-system-nodes",
        instance_types=(s.instance_type,),
        ami_type="AL2023_x86_64_STANDARD",
        capacity_type="ON_DEMAND",
        scaling=_freeze({"minSize": s.min, "maxSize": max(s.max, s.min), "desiredSize": s.min}),
        labels=_freeze(system_labels(spec)),
        disk_gib=s.disk_gib,
        block_device_mappings=_freeze(
            [
                {
                    "deviceName": mp.ROOT_DEVICE,
                    "ebs": {
                        "deleteOnTermination": "true",
                        "encrypted": "true",
                        "volumeSize": s.disk_gib,
                        "volumeType": mp.VOLUME_TYPE,
                    },
                }
            ]
        ),
        metadata_options=_freeze(SYSTEM_METADATA_OPTIONS),
    )


# The system nodes' instance metadata: IMDSv2 only and one hop. A pod's packets to 169.254.169.254 cross one more
# hop than the node's own, so with a PUT response hop limit of 1 a pod (not on the host network) never gets the
# session token IMDSv2 requires, and never the node role's credentials (EC2 user guide "Configure the instance
# metadata options", "Instance metadata limits" / hop limit; EKS best practices guide, security, "Restrict access
# to the instance profile assigned to the worker node"). The controllers there use Pod Identity or IRSA instead.
SYSTEM_METADATA_OPTIONS = {"httpEndpoint": "enabled", "httpTokens": "required", "httpPutResponseHopLimit": 1}


def pods_cannot_reach_node_credentials(options: Mapping[str, Any]) -> list[str]:
    """What, in a launch template's ``metadataOptions``, would hand pods the system node role's credentials
    (the renderer refuses to register such a template); empty when tokens are required and the hop limit is 1."""
    out = []
    if options.get("httpTokens") != "required":
        out.append(f"httpTokens is {options.get('httpTokens')!r}, not 'required' (IMDSv1 answers any pod)")
    if options.get("httpEndpoint") != "disabled" and options.get("httpPutResponseHopLimit") != 1:
        out.append(f"httpPutResponseHopLimit is {options.get('httpPutResponseHopLimit')!r}, not 1 (pods get a token)")
    return out


def eks_create_plan(spec: StackSpec) -> EksCreatePlan | None:
    """``Plan.eks_create``: None unless an aws stack sets ``cluster.create``."""
    c = spec.cluster.create
    if spec.cloud != "aws" or c is None:
        return None
    eks = c.eks or _default_eks()
    name, zones = spec.cluster.name or "", _zones(spec)
    nat = zones[:1] if eks.nat_gateways == "one" else zones
    return EksCreatePlan(
        name=name,
        region=spec.cluster.region,
        kubernetes_version=spec.cluster.kubernetes_version or "",
        vpc_cidr=c.network.cidr,
        subnets=tuple(subnets(spec)),
        nat_gateway_zones=tuple(nat),
        s3_gateway_endpoint=s3_service(spec.cluster.region or _region_of(zones))
        if c.network.s3_gateway_endpoint
        else None,
        pod_cidr=c.network.pod_cidr,
        pod_subnets=pod_network.pod_subnets(spec, zones),
        service_cidr=c.network.service_cidr,
        endpoint_public_access=eks.endpoint_public_access,
        endpoint_private_access=eks.endpoint_private_access,
        public_access_cidrs=tuple(eks.public_access_cidrs) if eks.endpoint_public_access else (),
        authentication_mode="API",
        admin_role_arns=tuple(eks.admin_role_arns),
        admin_policy=ADMIN_POLICY,
        secrets_encryption=_freeze(
            {"resources": ["secrets"], "keyAlias": f"alias/{name}-eks-secrets", "enableKeyRotation": True}
        ),
        log_types=tuple(eks.log_types),
        log_group=f"/aws/eks/{name}/cluster",  # the group EKS writes to (EKS user guide "control-plane-logs")
        log_retention_days=eks.log_retention_days,
        cluster_role=f"{name}-cluster",
        cluster_role_policies=CLUSTER_ROLE_POLICIES,
        addons=tuple(addons(spec)),
        system_nodes=system_node_group(spec),
        node_monitoring_agent_version=node_monitoring_agent_version(spec),
        oidc_provider=spec.karpenter.identity == "irsa",
        tags=_freeze(mp.base_tags(spec)),
    )


def _region_of(zones: list[str]) -> str:
    return zones[0][:-1] if zones else ""


def s3_service(region: str) -> str:
    """The S3 gateway endpoint's service name in ``region`` (VPC user guide "Gateway endpoints for Amazon S3":
    ``com.amazonaws.<region>.s3``, China regions included). ECR keeps image layers in S3 (ECR user guide "Amazon
    ECR interface VPC endpoints (AWS PrivateLink)": "Amazon ECR uses Amazon S3 to store your image layers"; the
    same page has nodes without S3 access fail to pull), so every node's layer pulls, and any S3 read of the
    region, take the endpoint instead of the NAT gateway, which bills each GB it processes."""
    return f"com.amazonaws.{region}.s3"


def _default_eks() -> Any:
    from ...spec.cluster import EksCreate

    return EksCreate()


def admin_policy_arn(partition: str) -> str:
    return f"arn:{partition}:eks::aws:cluster-access-policy/{ADMIN_POLICY}"


def ebs_csi_trust(cluster: str) -> dict[str, Any]:
    return iam.pod_identity_trust(cluster, "kube-system", EBS_CSI_SERVICE_ACCOUNT, "AllowEksPodIdentityForEbsCsi")


# ------------------------------------------------------------------------------------------ rules


def _open(cidrs: list[str]) -> bool:
    """The public endpoint admits every address (some CIDR is 0.0.0.0/0)."""
    return any((n := pod_network.ipv4_network(c)) is not None and n.prefixlen == 0 for c in cidrs)


@rule
def eks_create_rules(spec: StackSpec) -> Iterator[Problem]:
    """What EKS and the VPC refuse of a created cluster, before deploy."""
    c = spec.cluster.create
    if c is None or spec.cloud != "aws":
        return
    if c.eks is None:
        yield Problem(key("cluster", "create", "eks"), "is required when cloud is aws (availabilityZones at least)")
        return
    eks, n = c.eks, c.network
    version = spec.cluster.kubernetes_version
    if not version:
        yield Problem(key("cluster", "kubernetesVersion"), "is required with cluster.create (the created version)")
    elif version not in versions.EKS_ADDON_VERSIONS:
        have = ", ".join(versions.EKS_ADDON_VERSIONS)
        yield Problem(
            key("cluster", "kubernetesVersion"),
            f"{version} has no EKS add-on versions here (have: {have})",
        )
    zones = eks.availability_zones
    if len(set(zones)) < 2:
        yield Problem(key("cluster", "create", "eks", "availabilityZones"), "name at least two zones (EKS needs two)")
    if len(set(zones)) != len(zones):
        yield Problem(key("cluster", "create", "eks", "availabilityZones"), "lists a zone twice")
    region = spec.cluster.region
    for i, z in enumerate(zones):
        if region and not (z.startswith(region) and len(z) == len(region) + 1):
            yield Problem(key("cluster", "create", "eks", "availabilityZones", i), f"{z} is not a zone of {region}")
    if eks.endpoint_public_access and not eks.public_access_cidrs:
        yield Problem(
            key("cluster", "create", "eks", "publicAccessCidrs"),
            "is required with endpointPublicAccess (the networks that may reach the API; 0.0.0.0/0 is everyone)",
        )
    if not eks.endpoint_public_access and not eks.endpoint_private_access:
        yield Problem(key("cluster", "create", "eks", "endpointPrivateAccess"), "one endpoint must be on")
    elif eks.endpoint_public_access and not eks.endpoint_private_access and not _open(eks.public_access_cidrs):
        # EKS user guide "Cluster API server endpoint" (cluster-endpoint.html): with the private endpoint off,
        # nodes in private subnets reach the public one from the NAT gateway's address; "If you limit access to
        # specific CIDR blocks, then it is recommended that you also enable the private endpoint, or ensure that
        # the CIDR blocks that you specify include the addresses that nodes and Fargate Pods (if you use them)
        # access the public endpoint from." The NAT gateways' Elastic IPs are created with the VPC, unknown here.
        yield Problem(
            key("cluster", "create", "eks", "endpointPrivateAccess"),
            "is off while publicAccessCidrs admit only some networks: the nodes reach the API from the NAT "
            "gateway's address, which is created with the VPC and not among them, so they never join; set "
            "endpointPrivateAccess: true (nodes then use the endpoint inside the VPC)",
        )
    if eks.log_retention_days not in LOG_RETENTION_DAYS:
        yield Problem(
            key("cluster", "create", "eks", "logRetentionDays"),
            f"{eks.log_retention_days} is not a CloudWatch Logs retention (e.g. 30, 90, 365, 731)",
        )
    yield from _admin_rules(spec, eks)
    roles = [f"{spec.cluster.name or ''}{suffix}" for suffix in ("-cluster", "-system-nodes", "-ebs-csi")]
    longest = max(roles, key=len)
    if len(longest) > mp.IAM_ROLE_NAME_MAX:
        yield Problem(
            key("cluster", "name"),
            f"makes the created cluster's IAM role {longest!r} ({len(longest)} characters); IAM role names take at "
            f"most {mp.IAM_ROLE_NAME_MAX} (shorten the cluster name)",
        )
    for i, cidr in enumerate(eks.public_access_cidrs):
        if pod_network.ipv4_network(cidr) is None:
            yield Problem(key("cluster", "create", "eks", "publicAccessCidrs", i), f"{cidr} is not a network CIDR")
    yield from _network_rules(n, len(zones))


def _admin_rules(spec: StackSpec, eks: Any) -> Iterator[Problem]:
    """Someone must administer the cluster (its creator gets no access, ``cluster_access``): the token's role,
    when the stack names one, must be an admin; the deploying identity is checked at deploy
    (``components/render/aws/deployer.py``)."""
    if not eks.admin_role_arns:
        yield Problem(
            key("cluster", "create", "eks", "adminRoleArns"),
            "name at least one role: the created cluster gives its creator no access, so without an admin the "
            "Kubernetes half of pulumi up fails Unauthorized (aws sts get-caller-identity shows your role)",
        )
    elif spec.cluster.role_arn and not cluster_access.is_admin(spec.cluster.role_arn, eks.admin_role_arns):
        yield Problem(
            key("cluster", "roleArn"),
            f"{spec.cluster.role_arn} is the role the kubeconfig's token assumes, but not among "
            "cluster.create.eks.adminRoleArns: add it there, or the Kubernetes half of pulumi up fails Unauthorized",
        )


def _network_rules(n: Any, zones: int) -> Iterator[Problem]:
    vpc = pod_network.ipv4_network(n.cidr)
    if vpc is None:
        yield Problem(key("cluster", "create", "network", "cidr"), f"{n.cidr} is not a network CIDR (host bits set?)")
        return
    lo, hi = VPC_PREFIXES
    if not lo <= vpc.prefixlen <= hi:
        yield Problem(key("cluster", "create", "network", "cidr"), f"/{vpc.prefixlen} is outside /{lo}../{hi}")
        return
    for field, prefix in (
        ("privateSubnetPrefix", n.private_subnet_prefix),
        ("publicSubnetPrefix", n.public_subnet_prefix),
    ):
        if prefix < vpc.prefixlen:
            yield Problem(
                key("cluster", "create", "network", field), f"/{prefix} is larger than the VPC /{vpc.prefixlen}"
            )
            return
    private, public = subnet_cidrs(n.cidr, zones, n.private_subnet_prefix, n.public_subnet_prefix)
    if len(private) < zones or len(public) < zones:
        yield Problem(
            key("cluster", "create", "network", "cidr"), f"{n.cidr} has no room for {zones} subnets of each kind"
        )
        return
    nets = [ipaddress.IPv4Network(s) for s in private + public]
    if any(a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1 :]):
        size = zones * (2 ** (32 - n.private_subnet_prefix) + 2 ** (32 - n.public_subnet_prefix))
        yield Problem(
            key("cluster", "create", "network", "cidr"),
            f"{n.cidr} is too small for {zones} private /{n.private_subnet_prefix} and public "
            f"/{n.public_subnet_prefix} subnets ({size} addresses)",
        )
    if n.service_cidr is not None:
        svc = pod_network.ipv4_network(n.service_cidr)
        lo, hi = SERVICE_PREFIXES
        if svc is None:
            yield Problem(key("cluster", "create", "network", "serviceCidr"), f"{n.service_cidr} is not a network CIDR")
        elif not lo <= svc.prefixlen <= hi:
            yield Problem(
                key("cluster", "create", "network", "serviceCidr"), f"/{svc.prefixlen} is outside /{lo}../{hi}"
            )
        elif svc.overlaps(vpc):
            yield Problem(
                key("cluster", "create", "network", "serviceCidr"), f"{n.service_cidr} overlaps the VPC {n.cidr}"
            )


@rule
def cluster_source(spec: StackSpec) -> Iterator[Problem]:
    """create and fromStack exclude each other; both need the cluster's name (the plan's names come from it)."""
    c = spec.cluster
    if c.create is not None and c.from_stack is not None:
        yield Problem(key("cluster", "fromStack"), "set create or fromStack, not both")
    for field, alias in (("create", "create"), ("from_stack", "fromStack")):
        if getattr(c, field) is not None and spec.cloud == "existing":
            yield Problem(key("cluster", alias), "does not apply when cloud is existing")
    if c.create is not None and spec.cloud == "aws" and c.subnet_ids:
        yield Problem(key("cluster", "subnetIds"), "does not apply with cluster.create (the created private subnets)")
    if c.create is not None and spec.cloud == "gcp" and c.create.eks is not None:
        yield Problem(key("cluster", "create", "eks"), "does not apply when cloud is gcp")


# ------------------------------------------------------------------------------------------ text


def text_lines(p: EksCreatePlan) -> list[str]:
    private = [s for s in p.subnets if not s.public]
    public = [s for s in p.subnets if s.public]
    endpoint = []
    if p.endpoint_public_access:
        endpoint.append(f"public from {', '.join(p.public_access_cidrs)}")
    if p.endpoint_private_access:
        endpoint.append("private")
    ng = p.system_nodes
    addons = ", ".join(f"{a.name} {a.version or '(EKS default)'}" for a in p.addons)
    addons += "; IAM OIDC provider for IRSA" if p.oidc_provider else ""
    return [
        f"  creates EKS cluster {p.name} {p.kubernetes_version} (standard support until "
        f"{versions.EKS_STANDARD_SUPPORT_ENDS.get(p.kubernetes_version, 'unknown')}) in {p.region or '(aws:region)'}: "
        f"authentication {p.authentication_mode}, admins {', '.join(p.admin_role_arns) or 'none'}, Secrets "
        f"encrypted with KMS {p.secrets_encryption['keyAlias']} (rotated), logs {', '.join(p.log_types)} kept "
        f"{p.log_retention_days} days, endpoint {' and '.join(endpoint)}",
        f"  VPC {p.vpc_cidr}: private {', '.join(f'{s.zone} {s.cidr}' for s in private)}; public "
        f"{', '.join(f'{s.zone} {s.cidr}' for s in public)}; NAT gateway in {', '.join(p.nat_gateway_zones)}; "
        + (
            f"S3 gateway endpoint {p.s3_gateway_endpoint} on the private route tables"
            if p.s3_gateway_endpoint
            else "no S3 gateway endpoint (image layers and S3 reads pay NAT processing)"
        ),
        *(
            [
                f"  pods from secondary CIDR {p.pod_cidr} (VPC CNI custom networking, ENIConfig per zone): "
                + ", ".join(f"{s.zone} {s.cidr}" for s in p.pod_subnets)
            ]
            if p.pod_cidr
            else []
        ),
        f"  add-ons: {addons}",
        f"  system nodes {ng.name}: {ng.ami_type} {ng.capacity_type} {', '.join(ng.instance_types)}, "
        f"{ng.scaling['minSize']}..{ng.scaling['maxSize']} nodes, {ng.disk_gib} GiB encrypted, labels "
        + ", ".join(f"{k}={v}" for k, v in ng.labels.items()),
    ]
