"""The policy pack's config for an offline run (``--policy-pack-config``, the Pulumi CLI's JSON format): each
policy's enforcement level and settings, reconciled as the engine does; unknown policy names, unknown settings and
wrongly typed values are errors (see policies/offline.py, which re-exports these)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, StackValidationPolicy

from . import pack

Policy = ResourceValidationPolicy | StackValidationPolicy
LEVELS = {level.value: level for level in EnforcementLevel}


class PolicyConfigError(ValueError):
    """The policy config is not usable; ``problems`` lists every reason."""

    def __init__(self, problems: Iterable[str]):
        self.problems = sorted(set(problems))
        super().__init__("\n".join(self.problems))


# ------------------------------------------------------------------------------------------ config


@dataclass(frozen=True)
class Settings:
    """A policy's enforcement level and configuration for a run."""

    level: EnforcementLevel
    config: dict[str, Any]

    @property
    def reported_level(self) -> EnforcementLevel:
        # The engine reports a violated remediation policy as mandatory.
        return EnforcementLevel.MANDATORY if self.level == EnforcementLevel.REMEDIATE else self.level


def load_config_file(path: str | Path) -> dict[str, Any]:
    """A ``--policy-pack-config`` JSON file (an empty file is no config, as for the CLI)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PolicyConfigError([f"{path}: cannot read ({exc.strerror or exc})"]) from None
    if not text.strip():
        return {}
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise PolicyConfigError([f"{path}: not JSON ({exc})"]) from None
    if not isinstance(doc, dict):
        raise PolicyConfigError([f"{path}: must be a JSON object of policy name -> level or settings"])
    return doc


def _level(value: Any, where: str, problems: list[str]) -> EnforcementLevel | None:
    if value in LEVELS:
        return LEVELS[value]
    problems.append(f"{where}: {value!r} is not an enforcement level ({', '.join(LEVELS)})")
    return None


def _type_ok(value: Any, schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    if kind == "integer":
        ok = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        ok = ok and not isinstance(value, bool)
    elif kind == "number":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif kind == "string":
        ok = isinstance(value, str)
    elif kind == "boolean":
        ok = isinstance(value, bool)
    elif kind == "array":
        ok = isinstance(value, list) and all(_type_ok(v, schema.get("items") or {}) for v in value)
    elif kind == "object":
        ok = isinstance(value, dict)
    else:
        ok = True
    if ok and "minimum" in schema and isinstance(value, (int, float)):
        ok = value >= schema["minimum"]
    return ok


def settings(policies: Sequence[Policy], config: Mapping[str, Any] | None = None) -> dict[str, Settings]:
    """Each policy's enforcement level and config: its own level and schema defaults, then ``all``, then its
    own entry (the order the Pulumi engine reconciles them in). Raises PolicyConfigError."""
    problems: list[str] = []
    levels = {p.name: pack.level_of(p) for p in policies}
    props: dict[str, dict[str, Any]] = {}
    schemas: dict[str, Mapping[str, Any]] = {}
    for p in policies:
        schemas[p.name] = p.config_schema.properties if p.config_schema else {}
        props[p.name] = {k: v["default"] for k, v in schemas[p.name].items() if "default" in v}
    config = dict(config or {})
    if "all" in config:
        value = config.pop("all")
        raw = value.get("enforcementLevel") if isinstance(value, Mapping) else value
        level = _level(raw, "all", problems)
        if level is not None:
            levels = dict.fromkeys(levels, level)
    for name, value in sorted(config.items()):
        if name not in levels:
            problems.append(f"{name}: no such policy (policies: {', '.join(sorted(levels))})")
            continue
        if isinstance(value, str):
            value = {"enforcementLevel": value}
        if not isinstance(value, Mapping):
            problems.append(f"{name}: must be an enforcement level or an object")
            continue
        for key, v in sorted(value.items()):
            if key == "enforcementLevel":
                level = _level(v, f"{name}.enforcementLevel", problems)
                if level is not None:
                    levels[name] = level
            elif key not in schemas[name]:
                known = ", ".join(sorted(schemas[name])) or "none"
                problems.append(f"{name}.{key}: unknown setting (settings: {known})")
            elif not _type_ok(v, schemas[name][key]):
                problems.append(f"{name}.{key}: {v!r} does not match {json.dumps(schemas[name][key], sort_keys=True)}")
            else:
                props[name][key] = v
    if problems:
        raise PolicyConfigError(problems)
    return {p.name: Settings(levels[p.name], props[p.name]) for p in policies}
