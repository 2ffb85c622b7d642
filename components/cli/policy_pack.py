"""Where the policy pack is: ``gpu_platform.policies`` in an installed package (pyproject.toml maps the repository's
``policies/`` there, beside ``components/`` as ``gpu_platform``), the top-level ``policies`` in the repository."""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType


def module(name: str) -> ModuleType:
    """The pack's module ``name`` (``pack``, ``offline``...), from whichever of the two places holds the pack."""
    root = __package__.rsplit(".", 1)[0]  # gpu_platform (installed) or components (the repository)
    package = f"{root}.policies" if importlib.util.find_spec(f"{root}.policies") is not None else "policies"
    return importlib.import_module(f"{package}.{name}")
