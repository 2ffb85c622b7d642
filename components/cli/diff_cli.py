"""The command line of ``gpu-platform diff`` and of ``plan --html FILE [--against OLD]`` (the page and the diff are
``plan_html.py`` and ``diff.py``; this module reads the files and reports their problems)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

EXIT_INVALID = 2
DIFF_HELP = "what a change to the stack file does, offline: resources replaced or deleted (by URN), pools, quotas, cost"
AGAINST_HELP = (
    "the baseline: a stack file, or a plan saved by `gpu-platform plan STACK --json` (then resources are not "
    "compared: a plan has no URNs); default stacks/Pulumi.STACK.yaml"
)


class Unusable(Exception):
    """A side of the diff cannot be read; its lines are printed, exit 2."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("; ".join(lines))
        self.lines = lines


def load(stack: str, path: Path, rendered: bool, display: Any = str) -> tuple[dict[str, Any], Any]:
    """(plan document, rendering or None) of a stack file, or of a saved plan JSON (no rendering)."""
    from ..plan import plan
    from ..spec.model import SpecError
    from .synth import read_stack_file, render

    if path.suffix == ".json":
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise Unusable([f"{display(path)}: cannot read a plan: {err}"]) from None
        if not isinstance(doc, dict) or doc.get("schemaVersion") != plan.SCHEMA_VERSION:
            raise Unusable(
                [
                    f"{display(path)}: not a plan of schemaVersion {plan.SCHEMA_VERSION}: save one with "
                    f"`gpu-platform plan {stack} --json > {path.name}`"
                ]
            )
        return doc, None
    try:
        config = read_stack_file(path)
        if rendered:
            rendering = render(stack, config)
            return plan.build(rendering.spec, stack).to_dict(), rendering
        from .loader import load_spec

        return plan.build(load_spec(config), stack).to_dict(), None
    except SpecError as err:
        raise Unusable(list(err.lines(display(path)))) from None


def diff_of(stack: str, new: Path, old: Path, display: Any = str) -> dict[str, Any]:
    from . import diff

    old_plan, old_r = load(stack, old, True, display)
    new_plan, new_r = load(stack, new, old_r is not None, display)
    return diff.compare(old_plan, new_plan, old_r, new_r)


def cmd_diff(args: argparse.Namespace) -> int:
    from . import diff

    default = args.stack_file(args.stack, None, args.stacks)
    new = Path(args.config) if args.config else default
    old = Path(args.against) if args.against else default
    try:
        doc = diff_of(args.stack, new, old, args.display)
        if args.html:
            from ..cli.loader import load_spec
            from ..plan import plan
            from .synth import read_stack_file

            _write_page(Path(args.html), plan.build(load_spec(read_stack_file(new)), args.stack), doc)
    except Unusable as err:
        for line in err.lines:
            print(line, file=sys.stderr)
        return EXIT_INVALID
    except OSError as err:
        print(f"{args.html}: cannot write: {err.strerror}", file=sys.stderr)
        return EXIT_INVALID
    if args.json:
        print(json.dumps(doc, indent=2, sort_keys=True))
    else:
        print("\n".join(diff.text(doc)))
    return diff.exit_code(doc)


def _write_page(path: Path, decided: Any, diff_doc: Any = None) -> None:
    from .plan_html import page

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page(decided, diff_doc), encoding="utf-8")


def write_plan_page(args: argparse.Namespace, decided: Any, stack_file: Path) -> int | None:
    """``plan --html FILE [--against OLD]``: the page (with the diff against OLD); an exit code on a problem."""
    diff_doc = None
    if args.against:
        try:
            diff_doc = diff_of(args.stack, stack_file, Path(args.against), args.display)
        except Unusable as err:
            for line in err.lines:
                print(line, file=sys.stderr)
            return EXIT_INVALID
    try:
        _write_page(Path(args.html), decided, diff_doc)
    except OSError as err:
        print(f"{args.html}: cannot write: {err.strerror}", file=sys.stderr)
        return EXIT_INVALID
    print(f"wrote {args.html}", file=sys.stderr)
    return None


def register(sub: Any, cmd: Any, stack_file: Any, display: Any) -> argparse.ArgumentParser:
    """The ``diff`` subcommand, and ``--html``/``--against`` on ``plan`` (``cmd``: its parser). ``stack_file`` and
    ``display``: the CLI's (main.py) stack-file lookup and path display, handed in (main imports this module)."""
    cmd.set_defaults(display=display)
    cmd.add_argument("--html", metavar="FILE", help="also write the platform as one self-contained HTML page")
    cmd.add_argument("--against", metavar="OLD", help="with --html: show what changes from OLD; " + AGAINST_HELP)
    d = sub.add_parser("diff", help=DIFF_HELP)
    d.add_argument("stack")
    d.add_argument("--config", help="the changed stack file (default: the stack's in the stacks folder)")
    d.add_argument("--against", metavar="OLD", help=AGAINST_HELP)
    d.add_argument("--json", action="store_true", help="print the diff as JSON")
    d.add_argument("--html", metavar="FILE", help="also write the new plan's page with the diff")
    d.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    d.set_defaults(fn=cmd_diff, stack_file=stack_file, display=display)
    return d
