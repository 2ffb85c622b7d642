"""The component's own code, from the repository this provider folder is in, as ``gpu_platform``.

Pulumi installs a Python component provider with one ``pip install -r requirements.txt`` into ``venv`` (pulumi/
pulumi@v3.272.0 sdk/python/lib/pulumi/provider/experimental/ComponentProvider.md), and pip refuses a local directory
in hash-checking mode ("Can't verify hashes for these file:// requirements because they point to directories"). So
the venv holds only the program's hashed lock (``requirements.txt``: ``-r ../requirements.txt``), installed as
``make setup`` installs it, and the package itself is imported from its source as ``make setup``'s ``--no-deps -e .``
would give it: ``gpu_platform`` is ``components/``, ``gpu_platform.policies`` is ``policies/`` (pyproject.toml
``[tool.setuptools] package-dir``). Where ``gpu_platform`` is installed (the repository's own venv), that one is used.
"""

import importlib.util
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load() -> None:
    if importlib.util.find_spec("gpu_platform") is not None:
        return
    spec = importlib.util.spec_from_file_location(
        "gpu_platform",
        ROOT / "components" / "__init__.py",
        submodule_search_locations=[str(ROOT / "components")],
    )
    assert spec is not None and spec.loader is not None
    package = importlib.util.module_from_spec(spec)
    sys.modules["gpu_platform"] = package
    spec.loader.exec_module(package)
    policies = importlib.util.spec_from_file_location(
        "gpu_platform.policies", ROOT / "policies" / "__init__.py", submodule_search_locations=[str(ROOT / "policies")]
    )
    assert policies is not None and policies.loader is not None
    module = importlib.util.module_from_spec(policies)
    sys.modules["gpu_platform.policies"] = module
    package.policies = module  # type: ignore[attr-defined]
    policies.loader.exec_module(module)


def package_version() -> str:
    """The installed distribution's version, else pyproject.toml's (the source the code is loaded from)."""
    try:
        return version("gpu-platform")
    except PackageNotFoundError:
        return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
