"""A Pulumi program that owns its cluster access and an application namespace, and adds the GPU platform as one
component (``GpuPlatform``) beside them; its stack outputs are the component's typed outputs.

The spec is the document in gpu-platform.yaml (a gpu-platform stack file's ``config:``), validated by the same
loader as a stack file; a program may as well build the dict in code and pass it to ``load_spec``."""

from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s
from gpu_platform.cli.loader import load_spec
from gpu_platform.render.platform import GpuPlatform
from gpu_platform.spec import stackfile

HERE = Path(__file__).resolve().parent
config = pulumi.Config()

# This program's own resources: the provider of the existing cluster (its kubeconfig from this stack's config)
# and a namespace for its applications.
provider = k8s.Provider("cluster", kubeconfig=config.get("kubeconfig"), context=config.get("context"))
apps = k8s.core.v1.Namespace("apps", metadata={"name": "apps"}, opts=pulumi.ResourceOptions(provider=provider))

platform = GpuPlatform(
    "gpu",
    {"spec": load_spec(stackfile.read(HERE / "gpu-platform.yaml")), "kubernetes_provider": provider},
)

pulumi.export("appsNamespace", apps.metadata["name"])
pulumi.export("tenants", platform.tenants)
pulumi.export("queues", platform.queues)
pulumi.export("pools", platform.pools)
pulumi.export("maxHourlyUsd", platform.cost["maxHourlyUsd"])
