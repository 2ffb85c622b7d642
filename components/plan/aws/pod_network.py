"""An optional secondary VPC CIDR for pods on a created EKS cluster (``cluster.create.network.podCidr``, issue 40; the
pattern of awslabs/ai-on-eks infra/base/terraform/vpc.tf and addons: a 100.64.0.0/16 secondary CIDR, pod subnets
per zone, the VPC CNI's custom networking).

With it, the VPC CNI gives pods addresses from a pod subnet of the node's zone instead of the node's own subnet
(EKS user guide, "Customize the secondary network interface in Amazon EKS nodes": ``AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG
=true`` on the aws-node DaemonSet; one ENIConfig per zone, named after it, selected by
``ENI_CONFIG_LABEL_DEF=topology.kubernetes.io/zone``; the secondary ENIs of every node take the ENIConfig's subnet and
security groups). A GPU cluster whose /19 private subnets run out of addresses before GPUs (every pod, every
warm IP the CNI holds per ENI) keeps the VPC small and the pods on 16k addresses per zone. Both settings go in the
vpc-cni add-on's ``configurationValues`` (its schema's ``env``), so EKS keeps them across add-on updates.

What is created: the VPC CIDR association, per zone a pod subnet (``<cluster>-pods-<zone>``, routed like the zone's
private subnet: NAT and the S3 endpoint; no Karpenter discovery tag, so no node lands there), and per zone an
ENIConfig (``crd.k8s.amazonaws.com/v1alpha1``, cluster-scoped, its CRD the vpc-cni add-on's) with the pod subnet and
the cluster security group, applied before any node joins (``components/render/aws/cluster_create.py``).

Only for clusters the stack creates; off by default. Rules: a network address inside RFC 6598 100.64.0.0/10, or inside
the RFC 1918 block of the VPC's own CIDR (VPC user guide, "VPC CIDR blocks", IPv4 CIDR block association
restrictions: a VPC in 10.0.0.0/8 cannot add 172.16.0.0/12 or 192.168.0.0/16 blocks and so on, while 100.64.0.0/10
is permitted beside any RFC 1918 primary), /16 to /24, overlapping neither the VPC nor the Service CIDR, with room for
a pod subnet per zone.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterator
from dataclasses import dataclass

from ...spec.model import Problem, StackSpec, key, rule

ENI_CONFIG_API = "crd.k8s.amazonaws.com/v1alpha1"
ENI_CONFIG_LABEL = "topology.kubernetes.io/zone"
# aws-node's environment for custom networking (EKS user guide, "Customize the secondary network interface")
CNI_ENV = {"AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG": "true", "ENI_CONFIG_LABEL_DEF": ENI_CONFIG_LABEL}
RFC_6598 = ipaddress.IPv4Network("100.64.0.0/10")
RFC_1918 = tuple(ipaddress.IPv4Network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))
PREFIXES = (16, 24)


@dataclass(frozen=True)
class PodSubnet:
    """A subnet pods take their addresses from in one zone (vpc-cni custom networking)."""

    name: str  # <cluster>-pods-<zone>; routed by the table of <cluster>-private-<zone>
    zone: str  # also the ENIConfig's name (ENI_CONFIG_LABEL_DEF picks the node's zone label)
    cidr: str


def pod_subnets(spec: StackSpec, zones: list[str]) -> tuple[PodSubnet, ...]:
    c = spec.cluster.create
    if spec.cloud != "aws" or c is None or c.network.pod_cidr is None:
        return ()
    net = ipaddress.ip_network(c.network.pod_cidr, strict=False)
    cidrs = (
        list(net.subnets(new_prefix=c.network.pod_subnet_prefix))
        if c.network.pod_subnet_prefix >= net.prefixlen
        else []
    )
    name = spec.cluster.name or ""
    return tuple(PodSubnet(f"{name}-pods-{z}", z, str(cidr)) for z, cidr in zip(zones, cidrs, strict=False))


def vpc_cni_configuration(spec: StackSpec) -> str | None:
    """The vpc-cni add-on's configurationValues (JSON, keys sorted), or None without a pod CIDR."""
    c = spec.cluster.create
    if spec.cloud != "aws" or c is None or c.network.pod_cidr is None:
        return None
    return json.dumps({"env": CNI_ENV}, sort_keys=True)


def eni_config(zone: str, subnet_id: str, security_group_id: str) -> dict:
    """One zone's ENIConfig (amazon-vpc-cni-k8s v1.21.1 pkg/apis/crd/v1alpha1/eniconfig_types.go)."""
    return {
        "apiVersion": ENI_CONFIG_API,
        "kind": "ENIConfig",
        "metadata": {"name": zone},
        "spec": {"securityGroups": [security_group_id], "subnet": subnet_id},
    }


def ipv4_network(text: str) -> ipaddress.IPv4Network | None:
    """The IPv4 network a CIDR names, None when it names none (the rules say why)."""
    try:
        return ipaddress.IPv4Network(text)
    except ValueError:
        return None


@rule
def pod_cidr_rules(spec: StackSpec) -> Iterator[Problem]:
    c = spec.cluster.create
    if c is None or c.network.pod_cidr is None:
        return
    at = key("cluster", "create", "network", "podCidr")
    if spec.cloud != "aws":
        yield Problem(at, "applies to aws (the VPC CNI's custom networking) only")
        return
    pod, vpc = ipv4_network(c.network.pod_cidr), ipv4_network(c.network.cidr)
    if pod is None:
        yield Problem(at, f"{c.network.pod_cidr} is not a network CIDR (host bits set?)")
        return
    lo, hi = PREFIXES
    if not lo <= pod.prefixlen <= hi:
        yield Problem(at, f"/{pod.prefixlen} is outside /{lo}../{hi}")
        return
    if vpc is not None and pod.overlaps(vpc):
        yield Problem(at, f"{pod} overlaps the VPC {vpc}: choose a range outside it, e.g. 100.64.0.0/16")
        return
    vpc_block = next((b for b in RFC_1918 if vpc is not None and vpc.subnet_of(b)), None)
    if not pod.subnet_of(RFC_6598) and not (vpc_block is not None and pod.subnet_of(vpc_block)):
        allowed = "100.64.0.0/10 (RFC 6598)" + (f" or {vpc_block} (the VPC's RFC 1918 block)" if vpc_block else "")
        yield Problem(at, f"{pod} is not inside {allowed}, so AWS refuses it as the VPC's secondary CIDR")
        return
    svc = ipv4_network(c.network.service_cidr) if c.network.service_cidr else None
    if svc is not None and pod.overlaps(svc):
        yield Problem(at, f"{pod} overlaps the Service CIDR {svc}")
    zones = len(c.eks.availability_zones) if c.eks is not None else 0
    prefix = c.network.pod_subnet_prefix
    room = 2 ** (prefix - pod.prefixlen) if prefix >= pod.prefixlen else 0
    if room < zones:
        yield Problem(
            key("cluster", "create", "network", "podSubnetPrefix"),
            f"/{prefix} subnets: {pod} holds {room}, the cluster needs one per zone ({zones})",
        )
