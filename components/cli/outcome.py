"""What ``check``, ``synth`` and ``plan`` tell the user after their result: every warning about the stack (one
stderr line each, its key path first where it has one; the same list as summary.md's Warnings section,
components/explain/summary.py ``stack_warnings``), then one last line saying what the exit code means.

And where a stack file is: ``--config FILE``, else ``Pulumi.STACK.yaml`` in ``--stacks DIR`` (default ``stacks``
of the working directory, never the repository's or the installed package's); a stack not found lists the
stacks that are there.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..spec.model import Problem, SpecError

STACKS_DIR = "stacks"


def stack_file(stack: str, config: str | None, stacks_dir: str | None = None) -> Path:
    """The stack file a command reads: --config as given, else DIR/Pulumi.STACK.yaml (DIR: --stacks or ./stacks)."""
    if config:
        return Path(config)
    return Path(stacks_dir or STACKS_DIR) / f"Pulumi.{stack}.yaml"


def stacks_in(folder: Path) -> list[str]:
    """The stack names of the stack files in ``folder``, sorted."""
    if not folder.is_dir():
        return []
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in folder.glob("Pulumi.*.yaml"))


def require_stack_file(path: Path, config: str | None) -> None:
    """Raise SpecError naming the stacks that are there when the stack file (not --config's) is missing."""
    if config or path.is_file():
        return
    found = stacks_in(path.parent)
    where = f"{path.parent}/" if str(path.parent) != "." else "the working directory"
    if found:
        listed = f"stacks in {where}: {', '.join(found)}"
    elif path.parent.is_dir():
        listed = f"no stack files (Pulumi.*.yaml) in {where}"
    else:
        listed = f"there is no folder {where}" + ("" if path.is_absolute() else f" in {Path.cwd()}")
    raise SpecError(
        [Problem("(file)", f"no such stack file; {listed} (choose one, or --stacks DIR, or --config FILE)")]
    )


def print_warnings(warnings: Sequence[Problem]) -> None:
    from ..explain.summary import warning_line
    from .terminal import inline, paint_for

    sys.stdout.flush()  # the result first, then its warnings, also when both go to one pipe
    paint = paint_for(sys.stderr)
    for w in warnings:  # summary.md's lines: any Markdown marks in them are dropped on a terminal
        print(f"{paint('warning:', 'yellow')} {inline(warning_line(w))}", file=sys.stderr)


def violation_line(v: Any, paint: Any) -> str:
    """A policy finding as one line, its level coloured on a terminal (mandatory red, advisory yellow)."""
    level = getattr(v, "enforcement_level", "")
    style = {"mandatory": "bold+red", "advisory": "yellow"}.get(level)
    line = v.line()
    prefix = f"policy {level} "
    if style and line.startswith(prefix):
        return f"policy {paint(level, style)} {line[len(prefix) :]}"
    return line


def stack_warnings(spec: Any, stack: str, unanswered_lookups: Sequence[str] = ()) -> list[Problem]:
    from ..explain.summary import stack_warnings as warnings_of
    from ..plan import plan

    return warnings_of(spec, plan.build(spec, stack), unanswered_lookups)


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'s' if n != 1 else ''}"


def verdict(stack: str, mandatory: int, advisory: int, warnings: int, strict: bool) -> tuple[str, int]:
    """The last line and the exit code: 0 valid (warnings alone do not fail unless --strict), 1 a mandatory
    policy violation (or, with --strict, any warning or advisory finding)."""
    if mandatory:
        return f"{stack}: {_count(mandatory, 'mandatory policy violation')}: exit 1 (pulumi up would refuse)", 1
    flagged = warnings + advisory
    if not flagged:
        return f"{stack}: valid, no warnings: exit 0", 0
    parts = [_count(warnings, "warning")] + ([_count(advisory, "advisory policy finding")] if advisory else [])
    if strict:
        return f"{stack}: {' and '.join(parts)} (above): exit 1 under --strict", 1
    return f"{stack}: valid with {' and '.join(parts)} (above): exit 0 (--strict fails on them)", 0


def conclude(stack: str, report: Any, warnings: Sequence[Problem], strict: bool, *, out: Any = None) -> int:
    """Print the warnings, then the verdict line (on ``out``, default stdout); return the exit code."""
    print_warnings(warnings)
    mandatory = len(report.mandatory_violations) if report is not None else 0
    advisory = len(getattr(report, "advisory_violations", [])) if report is not None else 0
    line, code = verdict(stack, mandatory, advisory, len(warnings), strict)
    from .terminal import paint_for

    stream = out or sys.stdout
    style = "bold+red" if code else ("yellow" if warnings or advisory else "green")
    print(paint_for(stream)(line, style), file=stream)
    return code


def program_config(program: Path, stack: str | None) -> tuple[str, Path | None, dict[str, Any]]:
    """(project name, Pulumi.yaml, config) of a user's program for ``synth --program``: the project file beside it
    and its stack's config file (``stackConfigDir`` honoured) when a stack is named and the file is there."""
    import yaml

    from .synth import read_stack_file

    project_file = program.parent / "Pulumi.yaml"
    project = yaml.safe_load(project_file.read_text(encoding="utf-8")) if project_file.is_file() else {}
    project = project if isinstance(project, dict) else {}
    config: dict[str, Any] = {}
    if stack:
        folder = program.parent / str(project.get("stackConfigDir") or ".")
        path = folder / f"Pulumi.{stack}.yaml"
        if path.is_file():
            config = read_stack_file(path)
    name = str(project.get("name") or program.parent.resolve().name)
    return name, project_file if project_file.is_file() else None, config
