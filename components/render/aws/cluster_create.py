"""The EKS cluster gpu-platform creates (``Plan.eks_create``, decided in ``components/plan/aws/cluster_create.py``):
the VPC, the cluster, its add-ons and system nodes, from pulumi_aws' own resources (registered through
``sdk.resource``, so the offline synth shows every one; see docs/concepts/aws.md "A cluster from nothing").

``EksCluster.view`` is the created cluster as the rest of the AWS renderers read the looked-up one (``endpoint``,
``arn``, ``certificate_authorities[0].data``, ``identities[0].oidcs[0].issuer``, ``vpc_config.subnet_ids`` /
``cluster_security_group_id`` / ``vpc_id``) plus ``name``: an Output that resolves once the cluster and the add-ons
nodes need exist, so every AWS object naming the cluster waits for them (``sdk.cluster_name``).
"""

from __future__ import annotations

from typing import Any

import pulumi

from ...plan.aws import cluster_create as cc, iam, pod_network
from ...plan.aws.cluster_create import EksCreatePlan
from ...plan.aws.karpenter_nodes import DISCOVERY_TAG
from ...plan.plan import plain
from . import sdk


def partition_of(region: str | None) -> str:
    """The AWS partition of a region (``aws``, ``aws-cn``, ``aws-us-gov``): the managed policies' ARNs need it
    before the cluster (whose ARN the found cluster's renderers read it from) exists."""
    r = region or ""
    return "aws-cn" if r.startswith("cn-") else "aws-us-gov" if r.startswith("us-gov-") else "aws"


def _role(name: str, trust: dict[str, Any], policies: tuple[str, ...], partition: str, c: EksCreatePlan, opts: Any):
    role = sdk.resource(
        "iam.Role", name, name=name, assume_role_policy=iam.to_json(trust), tags=plain(c.tags), opts=opts
    )
    attachments = [
        sdk.resource(
            "iam.RolePolicyAttachment",
            f"{name}-{p.rsplit('/', 1)[-1]}",
            role=role.name,
            policy_arn=iam.managed_policy_arn(p, partition),
            opts=opts,
        )
        for p in policies
    ]
    return role, attachments


class EksCluster(pulumi.ComponentResource):
    TYPE = "gpu-platform:aws:EksCluster"

    def __init__(
        self, name: str, c: EksCreatePlan, opts: pulumi.ResourceOptions | None = None, kubeconfig_of: Any = None
    ):
        """In order: the network, the cluster (with its key, log group and role), access entries, the add-ons
        nodes need (and the ENIConfigs), the system nodes, the add-ons that run on them; then ``view``, ``ready`` and
        ``outputs``. ``kubeconfig_of(endpoint, ca_data)``: the stack's kubeconfig (``cluster.py``), for the
        ENIConfigs' provider."""
        exposed = cc.pods_cannot_reach_node_credentials(c.system_nodes.metadata_options)
        if exposed:  # a plan change that would hand every pod the node role: refused before anything registers
            raise ValueError(f"system nodes {c.system_nodes.name}: {'; '.join(exposed)}")
        super().__init__(self.TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.plan = c
        partition = partition_of(c.region)
        private, _public = self._network(c, child)
        self.cluster = cluster = self._cluster(c, private, partition, child)
        security_group = cluster.vpc_config.apply(lambda v: sdk.field(v, "cluster_security_group_id"))
        # Karpenter finds the nodes' security group by its discovery tag (components/plan/aws/karpenter_nodes.py).
        sdk.resource(
            "ec2.Tag",
            "cluster-security-group-discovery",
            resource_id=security_group,
            key=DISCOVERY_TAG,
            value=c.name,
            region=c.region,
            opts=child,
        )
        self._access_entries(c, cluster, partition, child)
        before = self._addons(c, cluster, partition, child, before_nodes=True)
        before += self._eni_configs(c, cluster, security_group, before, kubeconfig_of)
        nodes = self._system_nodes(c, cluster, private, partition, before, child)
        after = self._addons(c, cluster, partition, child, before_nodes=False, depends_on=[nodes])
        self.ready = [nodes, *after]
        self.view = sdk.ClusterView(
            # resolves once the cluster and the add-ons nodes need exist: what names the cluster waits for them
            name=pulumi.Output.all(cluster.name, *[a.id for a in before]).apply(lambda a: a[0]),
            arn=cluster.arn,
            endpoint=cluster.endpoint,
            version=cluster.version,
            certificate_authorities=cluster.certificate_authority.apply(lambda ca: [sdk.result(ca)]),
            identities=self._identities(c, cluster, child).apply(sdk.result),
            vpc_config=pulumi.Output.all([s.id for s in private], self.vpc.id, security_group).apply(
                lambda v: sdk.result({"subnetIds": v[0], "vpcId": v[1], "clusterSecurityGroupId": v[2]})
            ),
        )
        # The outputs a stack reading this one through cluster.fromStack needs (components/plan/cluster_stack.py):
        # the created cluster is a cluster stack for the next one.
        self.outputs = {
            "clusterName": cluster.name,
            "clusterArn": cluster.arn,
            "endpoint": cluster.endpoint,
            "certificateAuthority": cluster.certificate_authority.apply(lambda ca: sdk.field(ca, "data")),
            "oidcIssuer": self.view.identities[0].oidcs[0].issuer,
            "clusterSecurityGroupId": security_group,
            "vpcId": self.vpc.id,
            "privateSubnetIds": [s.id for s in private],
            "kubernetesVersion": cluster.version,
        }
        self.register_outputs({"name": cluster.name, "vpcId": self.vpc.id})

    def _cluster(self, c: EksCreatePlan, private: list[Any], partition: str, child: Any) -> Any:
        """The EKS cluster, after its Secrets key, its log group and its role."""
        key = sdk.resource(
            "kms.Key",
            "secrets",
            description=f"Envelope encryption of EKS cluster {c.name}'s Secrets",
            enable_key_rotation=c.secrets_encryption["enableKeyRotation"],
            deletion_window_in_days=30,
            region=c.region,
            tags=plain(c.tags),
            opts=child,
        )
        sdk.resource(
            "kms.Alias",
            "secrets",
            name=c.secrets_encryption["keyAlias"],
            target_key_id=key.key_id,
            region=c.region,
            opts=child,
        )
        # Created before the cluster, so EKS writes into it and its retention holds (EKS would make it unbounded).
        logs = sdk.resource(
            "cloudwatch.LogGroup",
            "control-plane",
            name=c.log_group,
            retention_in_days=c.log_retention_days,
            region=c.region,
            tags=plain(c.tags),
            opts=child,
        )
        role, role_attachments = _role(
            c.cluster_role,
            iam.service_trust("eks.amazonaws.com", ("sts:AssumeRole", "sts:TagSession")),
            c.cluster_role_policies,
            partition,
            c,
            child,
        )
        vpc_config: dict[str, Any] = {
            "subnet_ids": [s.id for s in private],
            "endpoint_private_access": c.endpoint_private_access,
            "endpoint_public_access": c.endpoint_public_access,
        }
        if c.endpoint_public_access:
            vpc_config["public_access_cidrs"] = list(c.public_access_cidrs)
        return sdk.resource(
            "eks.Cluster",
            "cluster",
            name=c.name,
            role_arn=role.arn,
            version=c.kubernetes_version,
            vpc_config=vpc_config,
            access_config={
                "authentication_mode": c.authentication_mode,
                "bootstrap_cluster_creator_admin_permissions": False,
            },
            # the add-ons below are EKS add-ons at pinned versions, not the unmanaged copies EKS would bootstrap
            bootstrap_self_managed_addons=False,
            encryption_config={"provider": {"key_arn": key.arn}, "resources": list(c.secrets_encryption["resources"])},
            enabled_cluster_log_types=list(c.log_types),
            kubernetes_network_config={"service_ipv4_cidr": c.service_cidr} if c.service_cidr else None,
            region=c.region,
            tags=plain(c.tags),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[logs, *role_attachments]),
        )

    def _identities(self, c: EksCreatePlan, cluster: Any, child: Any) -> Any:
        """The cluster's identities output; under IRSA it waits for the IAM OIDC provider of its issuer (IAM trusts
        the issuer only through one), so the IRSA roles' trust does too."""
        identities = cluster.identities
        if not c.oidc_provider:
            return identities
        provider = sdk.resource(
            "iam.OpenIdConnectProvider",
            "oidc",
            url=identities.apply(lambda ids: sdk.result(ids)[0].oidcs[0].issuer),
            client_id_lists=["sts.amazonaws.com"],
            tags=plain(c.tags),
            opts=child,
        )
        return pulumi.Output.all(identities, provider.arn).apply(lambda a: a[0])

    def _network(self, c: EksCreatePlan, child: Any) -> tuple[list[Any], list[Any]]:
        """The VPC, its subnets, the internet gateway, NAT gateway(s) and route tables."""
        region, tags = c.region, plain(c.tags)
        self.vpc = vpc = sdk.resource(
            "ec2.Vpc",
            "vpc",
            cidr_block=c.vpc_cidr,
            enable_dns_hostnames=True,  # EKS nodes register by their private DNS name
            enable_dns_support=True,
            region=region,
            tags={**tags, "Name": c.name},
            opts=child,
        )
        subnets = {
            s.name: sdk.resource(
                "ec2.Subnet",
                s.name,
                vpc_id=vpc.id,
                cidr_block=s.cidr,
                availability_zone=s.zone,
                map_public_ip_on_launch=s.public,
                region=region,
                tags=plain(s.tags),
                opts=child,
            )
            for s in c.subnets
        }
        igw = sdk.resource(
            "ec2.InternetGateway", "igw", vpc_id=vpc.id, region=region, tags={**tags, "Name": c.name}, opts=child
        )
        public_rt = sdk.resource(
            "ec2.RouteTable",
            "public",
            vpc_id=vpc.id,
            region=region,
            tags={**tags, "Name": f"{c.name}-public"},
            opts=child,
        )
        sdk.resource(
            "ec2.Route",
            "public-default",
            route_table_id=public_rt.id,
            destination_cidr_block="0.0.0.0/0",
            gateway_id=igw.id,
            region=region,
            opts=child,
        )
        nat: dict[str, Any] = {}
        for s in c.subnets:
            if not s.public:
                continue
            sdk.resource(
                "ec2.RouteTableAssociation",
                s.name,
                subnet_id=subnets[s.name].id,
                route_table_id=public_rt.id,
                region=region,
                opts=child,
            )
            if s.zone in c.nat_gateway_zones:
                eip = sdk.resource(
                    "ec2.Eip",
                    f"nat-{s.zone}",
                    domain="vpc",
                    region=region,
                    tags={**tags, "Name": f"{c.name}-nat-{s.zone}"},
                    opts=child,
                )
                nat[s.zone] = sdk.resource(
                    "ec2.NatGateway",
                    f"nat-{s.zone}",
                    allocation_id=eip.id,
                    subnet_id=subnets[s.name].id,
                    region=region,
                    tags={**tags, "Name": f"{c.name}-nat-{s.zone}"},
                    opts=pulumi.ResourceOptions(parent=self, depends_on=[igw]),
                )
        private_tables = []
        for s in c.subnets:
            if s.public:
                continue
            # each zone's private subnet leaves through its zone's NAT gateway, else the one there is
            gw = nat.get(s.zone) or nat[c.nat_gateway_zones[0]]
            rt = sdk.resource(
                "ec2.RouteTable", s.name, vpc_id=vpc.id, region=region, tags={**tags, "Name": s.name}, opts=child
            )
            private_tables.append(rt)
            sdk.resource(
                "ec2.Route",
                f"{s.name}-default",
                route_table_id=rt.id,
                destination_cidr_block="0.0.0.0/0",
                nat_gateway_id=gw.id,
                region=region,
                opts=child,
            )
            sdk.resource(
                "ec2.RouteTableAssociation",
                s.name,
                subnet_id=subnets[s.name].id,
                route_table_id=rt.id,
                region=region,
                opts=child,
            )
        self._pod_subnets(
            c, vpc, dict(zip([s.zone for s in c.subnets if not s.public], private_tables, strict=True)), child
        )
        self._s3_endpoint(c, vpc, private_tables, child)
        return [subnets[s.name] for s in c.subnets if not s.public], [subnets[s.name] for s in c.subnets if s.public]

    def _s3_endpoint(self, c: EksCreatePlan, vpc: Any, private_tables: list[Any], child: Any) -> None:
        if c.s3_gateway_endpoint is None:
            return
        region, tags = c.region, plain(c.tags)
        # a gateway endpoint adds the S3 prefix list's route to these tables (plan: s3_service says why)
        sdk.resource(
            "ec2.VpcEndpoint",
            "s3",
            vpc_id=vpc.id,
            service_name=c.s3_gateway_endpoint,
            vpc_endpoint_type="Gateway",
            route_table_ids=[rt.id for rt in private_tables],
            region=region,
            tags={**tags, "Name": f"{c.name}-s3"},
            opts=child,
        )

    def _pod_subnets(self, c: EksCreatePlan, vpc: Any, tables: dict[str, Any], child: Any) -> None:
        """The pods' secondary CIDR and a pod subnet per zone, routed by the zone's private route table
        (components/plan/aws/pod_network.py); ``pod_subnets`` holds them for the ENIConfigs."""
        self.pod_subnets: dict[str, Any] = {}
        if c.pod_cidr is None:
            return
        tags = plain(c.tags)
        cidr = sdk.resource(
            "ec2.VpcIpv4CidrBlockAssociation", "pods", vpc_id=vpc.id, cidr_block=c.pod_cidr, region=c.region, opts=child
        )
        for s in c.pod_subnets:
            subnet = sdk.resource(
                "ec2.Subnet",
                s.name,
                vpc_id=vpc.id,
                cidr_block=s.cidr,
                availability_zone=s.zone,
                map_public_ip_on_launch=False,
                region=c.region,
                tags={**tags, "Name": s.name},
                opts=pulumi.ResourceOptions(parent=self, depends_on=[cidr]),
            )
            sdk.resource(
                "ec2.RouteTableAssociation",
                s.name,
                subnet_id=subnet.id,
                route_table_id=tables[s.zone].id,
                region=c.region,
                opts=child,
            )
            self.pod_subnets[s.zone] = subnet

    def _eni_configs(self, c: EksCreatePlan, cluster: Any, security_group: Any, before: list[Any], kubeconfig_of: Any):
        """Each zone's ENIConfig, applied once the vpc-cni add-on (its CRD) is there and before any node joins: a
        node's secondary ENIs, and so its pods, take their zone's. A provider of their own, since the stack's waits
        for the system nodes."""
        if not c.pod_subnets or kubeconfig_of is None:
            return []

        from ..k8s import PROVIDER_OPTIONS, KubeProvider, kube_object

        kubeconfig = pulumi.Output.all(
            cluster.endpoint,
            cluster.certificate_authority.apply(lambda ca: sdk.field(ca, "data")),
            *[a.id for a in before],
        ).apply(lambda a: kubeconfig_of(a[0], a[1]))
        provider = KubeProvider(
            "eni-configs",
            kubeconfig=kubeconfig,
            cluster_identifier=cluster.arn,
            opts=pulumi.ResourceOptions(parent=self),
            **PROVIDER_OPTIONS,
        )
        out = []
        for s in c.pod_subnets:
            doc = pod_network.eni_config(s.zone, self.pod_subnets[s.zone].id, security_group)
            fields = {k: v for k, v in doc.items() if k not in ("apiVersion", "kind")}
            out.append(
                kube_object(
                    f"eni-config-{s.zone}",
                    doc["apiVersion"],
                    doc["kind"],
                    pulumi.ResourceOptions(parent=self, provider=provider, depends_on=list(before)),
                    **fields,
                )
            )
        return out

    def _access_entries(self, c: EksCreatePlan, cluster: Any, partition: str, child: Any) -> None:
        for i, arn in enumerate(c.admin_role_arns):
            entry = sdk.resource(
                "eks.AccessEntry",
                f"admin-{i}",
                cluster_name=cluster.name,
                principal_arn=arn,
                type="STANDARD",
                region=c.region,
                tags=plain(c.tags),
                opts=child,
            )
            sdk.resource(
                "eks.AccessPolicyAssociation",
                f"admin-{i}",
                cluster_name=cluster.name,
                principal_arn=arn,
                policy_arn=cc.admin_policy_arn(partition),
                access_scope={"type": "cluster"},
                region=c.region,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[entry]),
            )

    def _addons(
        self, c: EksCreatePlan, cluster: Any, partition: str, child: Any, before_nodes: bool, depends_on: Any = ()
    ) -> list[Any]:
        out = []
        for a in c.addons:
            if a.before_nodes != before_nodes:
                continue
            identities = None
            if a.pod_identity is not None:
                role, _ = _role(
                    a.pod_identity["role"],
                    cc.ebs_csi_trust(c.name),
                    (cc.EBS_CSI_POLICY,),
                    partition,
                    c,
                    child,
                )
                identities = [{"role_arn": role.arn, "service_account": a.pod_identity["serviceAccount"]}]
            out.append(
                sdk.resource(
                    "eks.Addon",
                    a.name,
                    cluster_name=cluster.name,
                    addon_name=a.name,
                    addon_version=a.version,
                    resolve_conflicts_on_create="OVERWRITE",
                    resolve_conflicts_on_update="PRESERVE",
                    pod_identity_associations=identities,
                    configuration_values=a.configuration_values,
                    region=c.region,
                    tags=plain(c.tags),
                    opts=pulumi.ResourceOptions(parent=self, depends_on=list(depends_on)),
                )
            )
        return out

    def _system_nodes(
        self, c: EksCreatePlan, cluster: Any, private: list[Any], partition: str, before: list[Any], child: Any
    ) -> Any:
        ng = c.system_nodes
        role, attachments = _role(
            ng.role, iam.service_trust("ec2.amazonaws.com"), iam.WORKER_NODE_POLICIES, partition, c, child
        )
        template = sdk.resource(
            "ec2.LaunchTemplate",
            "system-nodes",
            name=ng.name,
            description=f"system nodes of EKS cluster {c.name}",
            block_device_mappings=plain(ng.block_device_mappings),
            metadata_options=plain(ng.metadata_options),
            update_default_version=True,
            region=c.region,
            tags=plain(c.tags),
            opts=child,
        )
        return sdk.resource(
            "eks.NodeGroup",
            "system-nodes",
            cluster_name=cluster.name,
            node_group_name=ng.name,
            node_role_arn=role.arn,
            subnet_ids=[s.id for s in private],
            ami_type=ng.ami_type,
            capacity_type=ng.capacity_type,
            instance_types=list(ng.instance_types),
            scaling_config=plain(ng.scaling),
            update_config={"max_unavailable": 1},
            launch_template={"id": template.id, "version": template.latest_version.apply(str)},
            # the control plane's version: an upgrade of cluster.kubernetesVersion rolls the system nodes after it
            version=cluster.version,
            labels=plain(ng.labels),
            region=c.region,
            tags=plain(c.tags),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*attachments, *before]),
        )
