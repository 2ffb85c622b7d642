"""Check Helm values we set against an upstream chart's default values.yaml.

A path is known when every key on it exists upstream. Where upstream has a free-form value (an empty map
``{}``, a list, or null) anything below it is accepted; where it has a non-empty map we recurse. Types must
agree (a map stays a map, a list a list, a bool a bool, a string a string).
"""

from __future__ import annotations

import copy
from typing import Any


def unknown_paths(ours: Any, upstream: Any, prefix: str = "") -> list[str]:
    problems: list[str] = []
    if not isinstance(ours, dict):
        return problems
    for k, v in ours.items():
        path = f"{prefix}.{k}" if prefix else str(k)
        if not isinstance(upstream, dict) or k not in upstream:
            problems.append(f"{path}: not in upstream values.yaml")
            continue
        up = upstream[k]
        if up is None:
            continue  # upstream leaves it unset: any value
        if isinstance(up, dict):
            if not isinstance(v, dict):
                problems.append(f"{path}: upstream is a map, we set {type(v).__name__}")
            elif up:
                problems.extend(unknown_paths(v, up, path))
            continue
        if isinstance(up, list):
            if not isinstance(v, list):
                problems.append(f"{path}: upstream is a list, we set {type(v).__name__}")
            continue
        if isinstance(up, bool) != isinstance(v, bool) or (isinstance(up, str) and not isinstance(v, str)):
            problems.append(f"{path}: upstream is {type(up).__name__} ({up!r}), we set {v!r}")
    return problems


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Helm's coalescing of values: maps merge key by key, everything else is replaced."""
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out
