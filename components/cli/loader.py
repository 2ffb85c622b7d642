"""Loading a stack: the spec's structure (``spec.parse_spec``), then every rule, each problem on its own line.

Rules are functions marked ``@rule`` next to the code they guard; this module sits above the spec, the
derivations and those modules, and is the one place that names them (``rule_modules``). A module that
defines rules and is missing here fails tests/test_structure.py, so a new one cannot be forgotten.
The modules are imported on the first load, not when this module is: importing the loader (the CLI's
error path, ``components.cli.config``) stays light.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from ..spec.model import Problem, Rule, SpecError, StackSpec, is_rule, key, parse_spec

__all__ = ["SpecError", "load_spec", "rule_modules", "rules"]


def rule_modules() -> tuple[ModuleType, ...]:
    """Every module that defines ``@rule`` functions; add a new one here. None imports a cloud SDK."""
    from ..plan import (
        cost,
        dra,
        fleet_rules,
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
    from ..plan.aws import cluster_create, efa, pod_network, rules as aws_rules, rules_karpenter
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
        pod_network,
        fleet_rules,
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


# where a fleet manager's worker stack files are when no stack_dir is given: the folder of the stack file the CLI
# renders (``stack_files_in``), so ``check --config DIR/Pulumi.x.yaml`` reads the workers beside it, as the
# program's own load_spec under the mock engine does too. An environment variable, not a module global: the
# installed CLI runs as ``gpu_platform.*`` while the program it renders imports ``components.*``, two copies of
# this module in one process.
STACK_DIR_ENV = "GPU_PLATFORM_STACK_DIR"


@contextlib.contextmanager
def stack_files_in(stack_dir: Path) -> Iterator[None]:
    """Within this block, ``load_spec`` without a ``stack_dir`` reads worker stack files from ``stack_dir``."""
    before = os.environ.get(STACK_DIR_ENV)
    os.environ[STACK_DIR_ENV] = str(stack_dir.resolve())
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(STACK_DIR_ENV, None)
        else:
            os.environ[STACK_DIR_ENV] = before


def _attach_workers(spec: StackSpec, stack_dir: Path | None) -> list[Problem]:
    """A fleet manager's workers, each read and validated from its stack file beside this one (``stack_dir``,
    default ``stacks/`` of the working directory: the project's ``stackConfigDir``, where ``pulumi up`` runs), and
    attached to ``spec.fleet`` so the fleet's rules see them. A worker that cannot be read is one problem."""
    from ..spec import stackfile

    f = spec.fleet
    if f is None:
        return []
    where = stack_dir if stack_dir is not None else Path(os.environ.get(STACK_DIR_ENV) or Path.cwd() / "stacks")
    specs: dict[str, StackSpec] = {}
    problems: list[Problem] = []
    for i, w in enumerate(f.workers):
        path = where / w.file_name
        at = key("fleet", "workers", i, "stackFile" if w.stack_file else "stack")
        if not path.is_file():
            problems.append(Problem(at, f"worker {w.name}: no stack file {path.name} in {where} (set stackFile)"))
            continue
        try:
            wspec = parse_spec(stackfile.read(path))
            if wspec.fleet is not None:
                problems.append(Problem(at, f"worker {w.name}: {path.name} is itself a fleet manager"))
                continue
            worker_problems = [p for r in rules() for p in r(wspec)]
            if worker_problems:
                raise SpecError(worker_problems)
        except SpecError as err:
            first = err.problems[0]
            more = f" (and {len(err.problems) - 1} more: gpu-platform check it)" if len(err.problems) > 1 else ""
            problems.append(Problem(at, f"worker {w.name}: {path.name}: {first.path}: {first.message}{more}"))
            continue
        specs[w.name] = wspec
    f.attach(specs)
    return problems


def load_spec(config: Mapping[str, Any], stack_dir: Path | None = None) -> StackSpec:
    """Build the one validated spec from a stack's config map (``{"gpu-platform:cloud": "aws", ...}``).

    Values may be decoded (YAML) or as Pulumi passes them (strings, objects as JSON). A fleet manager's worker
    stack files are read from ``stack_dir`` (``_attach_workers``).
    Raises SpecError listing every problem: the structure's, or else every rule's.
    """
    spec = parse_spec(config)
    unread = _attach_workers(spec, stack_dir)
    if unread:
        raise SpecError(unread)
    problems = [p for r in rules() for p in r(spec)]
    if problems:
        raise SpecError(problems)
    return spec
