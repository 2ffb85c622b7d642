"""Loading a stack: the spec's structure (``spec.parse_spec``), then every rule, each problem on its own line.

Rules are functions marked ``@rule`` next to the code they guard; this module sits above the spec, the
derivations and those modules, and is the one place that names them (``rule_modules``). A module that
defines rules and is missing here fails tests/test_structure.py, so a new one cannot be forgotten.
The modules are imported on the first load, not when this module is: importing the loader (the CLI's
error path, ``components.cli.config``) stays light.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from ..spec.model import Rule, SpecError, StackSpec, is_rule, parse_spec

__all__ = ["SpecError", "load_spec", "rule_modules", "rules"]


def rule_modules() -> tuple[ModuleType, ...]:
    """Every module that defines ``@rule`` functions; add a new one here. None imports a cloud SDK."""
    from ..plan import (
        cost,
        dra,
        gpu_operator,
        images_rules,
        monitoring,
        operators,
        prometheus_stack,
        reservations,
        rules_core,
        scheduling_rules,
        sharing,
        storage,
    )
    from ..plan.aws import cluster_create, efa, rules as aws_rules, rules_karpenter
    from ..plan.gcp import cluster_create_rules as gke_create_rules, rules as gcp_rules

    return (
        rules_core,
        sharing,
        storage,
        images_rules,
        reservations,
        scheduling_rules,
        gpu_operator,
        dra,
        monitoring,
        prometheus_stack,
        cost,
        aws_rules,
        rules_karpenter,
        efa,
        gcp_rules,
        gke_create_rules,
        operators,
        cluster_create,
    )


@functools.cache
def rules() -> tuple[Rule, ...]:
    """The rules of ``rule_modules``, each defined there (not merely imported), in source order."""
    return tuple(
        fn
        for module in rule_modules()
        for fn in vars(module).values()
        if is_rule(fn) and fn.__module__ == module.__name__
    )


def load_spec(config: Mapping[str, Any]) -> StackSpec:
    """Build the one validated spec from a stack's config map (``{"gpu-platform:cloud": "aws", ...}``).

    Values may be decoded (YAML) or as Pulumi passes them (strings, objects as JSON).
    Raises SpecError listing every problem: the structure's, or else every rule's.
    """
    spec = parse_spec(config)
    problems = [p for r in rules() for p in r(spec)]
    if problems:
        raise SpecError(problems)
    return spec
