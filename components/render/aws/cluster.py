"""Access to an existing EKS cluster: look it up, build a kubeconfig whose user runs
``aws eks get-token``, and the Kubernetes provider every Kubernetes resource uses."""

from __future__ import annotations

import json

import pulumi

from components.render.aws import sdk
from components.spec.model import StackSpec


def kubeconfig(spec: StackSpec, endpoint: str, ca_data: str) -> str:
    c = spec.cluster
    args = ["eks", "get-token", "--cluster-name", c.name or "", "--region", c.region or "", "--output", "json"]
    if c.role_arn:
        args += ["--role-arn", c.role_arn]
    env = [{"name": "AWS_PROFILE", "value": c.profile}] if c.profile else None
    user: dict = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "aws", "args": args}}
    if env:
        user["exec"]["env"] = env
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": c.name, "cluster": {"server": endpoint, "certificate-authority-data": ca_data}}],
        "contexts": [{"name": c.name, "context": {"cluster": c.name, "user": c.name}}],
        "current-context": c.name,
        "users": [{"name": c.name, "user": user}],
    }
    return json.dumps(doc, sort_keys=True)


class EksAccess(pulumi.ComponentResource):
    """The EKS cluster as looked up, and a Kubernetes provider for it."""

    TYPE = "gpu-platform:aws:EksAccess"

    def __init__(self, name: str, spec: StackSpec, opts: pulumi.ResourceOptions | None = None):
        super().__init__(self.TYPE, name, None, opts)
        import pulumi_kubernetes as k8s

        from components.render.k8s import PROVIDER_OPTIONS

        # Looked up in the stack's region (cluster.region, else aws:region), which is also the region of
        # the kubeconfig token and of every regional resource gpu-platform creates for the cluster.
        self.cluster = sdk.eks_cluster(spec.cluster.name or "", spec.cluster.region)
        self.endpoint = self.cluster.endpoint
        self.kubeconfig = pulumi.Output.all(self.cluster.endpoint, self.cluster.certificate_authorities[0].data).apply(
            lambda a: kubeconfig(spec, a[0], a[1])
        )
        self.provider = k8s.Provider(
            "kubernetes",
            kubeconfig=self.kubeconfig,
            # The provider is replaced (and with it every Kubernetes resource) only when this changes, not
            # when the kubeconfig's server or CA does (pulumi-kubernetes provider.go DiffConfig).
            cluster_identifier=self.cluster.arn,
            opts=pulumi.ResourceOptions(parent=self),
            **PROVIDER_OPTIONS,
        )
        self.register_outputs({"endpoint": self.endpoint})
