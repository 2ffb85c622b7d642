"""Access to the EKS cluster: look it up by name (or create it: ``Plan.eks_create``, ``cluster_create.py``; or read
it from its stack: ``Plan.cluster_stack``, ``components/render/cluster_stack.py``), build a kubeconfig whose user
runs ``aws eks get-token``, and the Kubernetes provider every Kubernetes resource uses. What to look up and the
token command are the plan's (``AwsPlan.cluster``); the endpoint and CA data are the cluster's."""

from __future__ import annotations

import json

import pulumi

from ...plan.aws.plan import EksClusterPlan
from ...plan.plan import Plan, plain
from . import sdk


def kubeconfig_document(cluster: EksClusterPlan, endpoint: str, ca_data: str) -> str:
    """The kubeconfig (JSON, keys sorted): one cluster, context and user named after the cluster; the user runs
    the plan's token command."""
    name = cluster.name
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": endpoint, "certificate-authority-data": ca_data}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
        "users": [{"name": name, "user": {"exec": plain(cluster.token_exec)}}],
    }
    return json.dumps(doc, sort_keys=True)


class EksAccess(pulumi.ComponentResource):
    """The EKS cluster (looked up, created or referenced: ``cluster``, with the lookup's attributes either way), and
    a Kubernetes provider for it."""

    TYPE = "gpu-platform:aws:EksAccess"

    def __init__(
        self,
        name: str,
        plan: Plan,
        opts: pulumi.ResourceOptions | None = None,
        *,
        provider: pulumi.ProviderResource | None = None,
    ):
        """``provider``: the caller's (``GpuPlatform``); the cluster is still looked up (the node groups, Karpenter
        and the IAM roles need its ARN, subnets and OIDC issuer), but no kubeconfig or provider is made."""
        super().__init__(self.TYPE, name, None, opts)

        from ..k8s import PROVIDER_OPTIONS, KubeProvider

        aws = plan.aws
        assert aws is not None, "EksAccess is the aws stacks' cluster access"
        c = aws.cluster
        ready: list[pulumi.Resource] = []
        if plan.eks_create is not None:
            # Created here (components/render/aws/cluster_create.py): the Kubernetes provider waits for the
            # system nodes and the add-ons that run on them, so no release starts before its pods can.
            from .cluster_create import EksCluster

            created = EksCluster(
                "eks",
                plan.eks_create,
                pulumi.ResourceOptions(parent=self),
                kubeconfig_of=lambda endpoint, ca: kubeconfig_document(c, endpoint, ca),
            )
            self.cluster = created.view
            self.cluster_outputs = created.outputs
            ready = created.ready
        elif plan.cluster_stack is not None:
            from ..cluster_stack import aws_cluster

            self.cluster = aws_cluster(plan.cluster_stack, self)
        else:
            # Looked up in the stack's region (cluster.region, else aws:region), which is also the region of
            # the kubeconfig token and of every regional resource gpu-platform creates for the cluster.
            # Under GpuPlatform (a provider given) the lookup takes the AWS provider of the component's
            # ``providers``; the stack program's stays the default provider's, as it always was.
            self.cluster = sdk.eks_cluster(c.name, c.region, parent=self if provider is not None else None)
        self.endpoint = self.cluster.endpoint
        if provider is not None:
            self.provider = provider
            self.register_outputs({"endpoint": self.endpoint})
            return
        self.kubeconfig = pulumi.Output.all(
            self.cluster.endpoint, self.cluster.certificate_authorities[0].data, *[r.urn for r in ready]
        ).apply(lambda a: kubeconfig_document(c, a[0], a[1]))
        self.provider = KubeProvider(
            "kubernetes",
            kubeconfig=self.kubeconfig,
            # The provider is replaced (and with it every Kubernetes resource) only when this changes, not
            # when the kubeconfig's server or CA does (pulumi-kubernetes provider.go DiffConfig).
            cluster_identifier=self.cluster.arn,
            opts=pulumi.ResourceOptions(parent=self),
            **PROVIDER_OPTIONS,
        )
        self.register_outputs({"endpoint": self.endpoint})
