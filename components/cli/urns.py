"""URN snapshots: the URN of every resource each shipped stack registers, committed under
``tests/snapshots/urns/<stack>.txt``.

A deployed stack knows its resources by URN (type chain of parents + name). A change that renames or
reparents a resource gives it a new URN, and the engine then creates the new one and deletes the old -- for
a namespace, everything in it. ``tests/test_urn_stability.py`` compares every rendering with its snapshot:

- any difference fails until the snapshot is regenerated (``make urn-snapshots``, which runs
  ``python -m components.cli.urns``), so every added, renamed or removed resource shows up in review;
- a URN that leaves the snapshot must be covered by an alias of a resource in the current rendering
  (``pulumi.ResourceOptions(aliases=...)``), or be named in ``CHANGELOG.md`` with why its replacement or
  removal is intended. Regeneration refuses to drop a URN that is neither, so the alias (or the note)
  lands in the same commit as the new snapshot.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the project directory
SNAPSHOTS = ROOT / "tests" / "snapshots" / "urns"
CHANGELOG = ROOT / "CHANGELOG.md"
REGENERATE = "make urn-snapshots  (or: .venv/bin/python -m components.cli.urns)"


def shipped_stacks() -> list[str]:
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))


def snapshot_path(stack: str) -> Path:
    return SNAPSHOTS / f"{stack}.txt"


def read_snapshot(stack: str) -> list[str]:
    path = snapshot_path(stack)
    if not path.exists():
        return []
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]


def snapshot_text(urns: Iterable[str]) -> str:
    return "".join(f"{u}\n" for u in sorted(set(urns)))


@dataclass(frozen=True)
class Comparison:
    """A rendering's URNs against its snapshot: the ones added, the ones removed and how each removal is explained."""

    added: list[str]
    removed: list[str]  # covered by an alias or named in the changelog
    unexplained: list[str]  # removed, neither aliased nor in the changelog: the engine would delete them

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed or self.unexplained)


def compare(previous: Iterable[str], rendering, changelog: str) -> Comparison:
    """``rendering`` (components.explain.rendering.Rendering) against the URNs of the snapshot."""
    before = set(previous)
    now = {r.urn for r in rendering.resources}
    aliased = {a for r in rendering.resources for a in r.aliases}
    gone = sorted(before - now)
    unexplained = [u for u in gone if u not in aliased and u not in changelog]
    return Comparison(
        added=sorted(now - before),
        removed=[u for u in gone if u not in unexplained],
        unexplained=unexplained,
    )


def changelog_text() -> str:
    return CHANGELOG.read_text(encoding="utf-8") if CHANGELOG.exists() else ""


def unexplained_message(stack: str, urns: list[str]) -> str:
    lines = [
        f"{stack}: {len(urns)} resource(s) of a deployed stack would be deleted (renamed, reparented or removed "
        "without an alias):"
    ]
    lines += [f"  {u}" for u in urns]
    lines.append(
        "Give the resource that replaces each one pulumi.ResourceOptions(aliases=[pulumi.Alias(name=..., "
        "parent=...)]) so the engine moves it, or name the URN in CHANGELOG.md saying why its replacement "
        "or deletion is intended."
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Regenerate every shipped stack's snapshot (refusing to drop an unexplained URN)."""
    from .synth import read_stack_file, render

    stacks = (argv if argv is not None else sys.argv[1:]) or shipped_stacks()
    changelog = changelog_text()
    problems = []
    written = []
    for stack in stacks:
        rendering = render(stack, read_stack_file(ROOT / "stacks" / f"Pulumi.{stack}.yaml"))
        cmp = compare(read_snapshot(stack), rendering, changelog)
        if cmp.unexplained:
            problems.append(unexplained_message(stack, cmp.unexplained))
            continue
        path = snapshot_path(stack)
        text = snapshot_text(r.urn for r in rendering.resources)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
            written.append(f"{where} (+{len(cmp.added)} -{len(cmp.removed)})")
    for line in written:
        print(f"updated {line}")
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
