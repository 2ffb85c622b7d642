"""The gpu-platform component provider: serves ``GpuPlatform`` (gpu_platform_package.py) and the schema inferred
from its typed arguments and outputs (committed as schema.json; tests/test_component_package.py compares them)."""

from gpu_platform_package import NAMESPACE, PACKAGE, GpuPlatform
from pulumi.provider.experimental import component_provider_host
from source import package_version

if __name__ == "__main__":
    component_provider_host([GpuPlatform], name=PACKAGE, namespace=NAMESPACE, version=package_version())
