"""``GpuPlatform`` as the provider serves it to other languages: the same component (``components/render/platform.py``)
whose spec is the text of a stack file, since a program in TypeScript, Go, C# or YAML has no ``StackSpec``.

Why a stack file's text and not the spec as a typed structure: the spec is a deep model with per-cloud sections
and discriminated variants (sharing strategies, provisioners), which a component provider's schema cannot
express (the analyzer refuses unions), and one document keeps exactly the stack file's validation, error
messages and reference (docs/reference/stack-file.md). It is plain (known when the program runs, as a literal or a
file read), because the plan is made from it before any resource registers. The Kubernetes provider comes in
the standard ``providers`` resource option, as for any component; AWS and GCP providers too, when not the
defaults. The outputs are the Python component's, typed in the schema (``Tenant``, ``TenantQueues``, ``Pool``,
``Cost``).
"""

# No ``from __future__ import annotations``: the analyzer reads these annotations as types (see platform.py).
import inspect
from typing import TypedDict

import pulumi
import source

source.load()  # the component's code as gpu_platform (source.py: why it is not pip-installed here)

from gpu_platform.cli.loader import SpecError, load_spec  # noqa: E402
from gpu_platform.render import platform  # noqa: E402
from gpu_platform.spec import stackfile  # noqa: E402

PACKAGE = "gpu-platform"  # platform.TYPE's package: the provider's name must be it
NAMESPACE = "gpu-platform"  # the generated SDKs' scope (@gpu-platform/gpu-platform), not Pulumi's own


class GpuPlatformPackageArgs(TypedDict):
    stack_file: str
    """A gpu-platform stack file's text (a top-level config: mapping of gpu-platform:* keys), validated as one."""


class GpuPlatform(platform.GpuPlatform):
    """GPU node pools, the GPU Operator, DCGM monitoring, Kueue/Volcano queues and per-tenant quotas on an
    existing Kubernetes cluster, from one gpu-platform stack file. Pass the cluster's Kubernetes provider in the
    `providers` resource option."""

    def __init__(self, name: str, args: GpuPlatformPackageArgs, opts: pulumi.ResourceOptions | None = None):
        try:
            spec = load_spec(stackfile.parse(args["stack_file"]))
        except SpecError as err:
            raise ValueError("invalid stackFile:\n" + "\n".join(err.lines("stackFile"))) from None
        self._construct(name, spec, None, opts)


# The schema's description is the class docstring as it is (pulumi 3.272.0 analyzer.py: ``__doc__.strip()``),
# which Python 3.11 does not dedent.
GpuPlatform.__doc__ = inspect.cleandoc(GpuPlatform.__doc__ or "")
