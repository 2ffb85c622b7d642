"""gpu-platform: one validated stack spec -> Pulumi components -> Kubernetes and cloud resources.

Importing this package is cheap on purpose: cloud SDKs and pulumi_kubernetes are imported lazily by
the modules that need them, so `gpu-platform schema` and config validation stay fast.
"""
