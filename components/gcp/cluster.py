"""Access to an existing GKE cluster: look it up, build a kubeconfig that authenticates with
``gke-gcloud-auth-plugin``, and the Kubernetes provider every Kubernetes resource uses."""

from __future__ import annotations

import json

import pulumi

from components.spec import StackSpec


def kubeconfig(spec: StackSpec, endpoint: str, ca_data: str) -> str:
    name = f"gke_{spec.cluster.project}_{spec.cluster.location}_{spec.cluster.name}"
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": name, "cluster": {"server": f"https://{endpoint}", "certificate-authority-data": ca_data}}
        ],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
        "users": [
            {
                "name": name,
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "gke-gcloud-auth-plugin",
                        "provideClusterInfo": True,
                        "installHint": "gcloud components install gke-gcloud-auth-plugin",
                    }
                },
            }
        ],
    }
    return json.dumps(doc, sort_keys=True)


class GkeAccess(pulumi.ComponentResource):
    """The GKE cluster as looked up, and a Kubernetes provider for it."""

    TYPE = "gpu-platform:gcp:GkeAccess"

    def __init__(self, name: str, spec: StackSpec, opts: pulumi.ResourceOptions | None = None):
        super().__init__(self.TYPE, name, None, opts)
        import pulumi_gcp as gcp
        import pulumi_kubernetes as k8s

        c = spec.cluster
        self.cluster = gcp.container.get_cluster_output(name=c.name or "", location=c.location, project=c.project)
        self.kubeconfig = pulumi.Output.all(
            self.cluster.endpoint, self.cluster.master_auths[0].cluster_ca_certificate
        ).apply(lambda a: kubeconfig(spec, a[0], a[1]))
        self.provider = k8s.Provider(
            "kubernetes",
            kubeconfig=self.kubeconfig,
            enable_server_side_apply=True,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({"endpoint": self.cluster.endpoint})
