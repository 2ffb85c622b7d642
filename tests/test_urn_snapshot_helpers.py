"""``components.cli.urns`` on stand-in renderings: the snapshot format, the comparison's three lists, the message,
and ``main``'s regeneration (what it writes, what it prints, when it refuses). No render runs here."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from components.cli import urns

A, B, C, D = (f"urn:pulumi:s::gpu-platform::t::{n}" for n in "abcd")


def _rendering(*urn_list: str, aliases: dict[str, list[str]] | None = None) -> SimpleNamespace:
    aliases = aliases or {}
    return SimpleNamespace(resources=[SimpleNamespace(urn=u, aliases=aliases.get(u, [])) for u in urn_list])


def test_snapshot_text_is_sorted_unique_one_per_line():
    """A snapshot is each URN once, sorted, each line ending in a newline (clean diffs)."""
    assert urns.snapshot_text([B, A, B]) == f"{A}\n{B}\n"
    assert urns.snapshot_text([]) == ""


def test_read_snapshot_skips_comments_and_blank_lines(tmp_path: Path, monkeypatch):
    """Comment lines and blank lines in a snapshot are not URNs; a missing snapshot is empty."""
    monkeypatch.setattr(urns, "SNAPSHOTS", tmp_path)
    assert urns.snapshot_path("x") == tmp_path / "x.txt"
    assert urns.read_snapshot("x") == []
    (tmp_path / "x.txt").write_text(f"# header\n{A}\n\n{B}\n", encoding="utf-8")
    assert urns.read_snapshot("x") == [A, B]


def test_shipped_stacks_are_the_stack_files():
    """Every stacks/Pulumi.<name>.yaml, by name, sorted."""
    assert urns.shipped_stacks() == [
        "dev-aws",
        "dev-gcp",
        "dra-existing",
        "fleet-eks",
        "fleet-gke",
        "fleet-manager",
        "local",
        "prod-aws",
        "prod-gcp",
        "starter-aws",
        "starter-gcp",
    ]


def test_compare_sorts_added_removed_and_unexplained():
    """Added: new URNs. A URN gone is 'removed' when an alias of a current resource or the changelog covers it,
    else 'unexplained' (the engine would delete it)."""
    cmp = urns.compare([A, B, C], _rendering(A, D, aliases={D: [B]}), changelog=f"- `{C}`: dropped on purpose")
    assert (cmp.added, cmp.removed, cmp.unexplained) == ([D], [B, C], [])
    assert cmp.changed
    bare = urns.compare([A, C, B], _rendering(A), changelog="")
    assert (bare.added, bare.removed, bare.unexplained) == ([], [], [B, C])
    assert bare.changed
    same = urns.compare([A], _rendering(A), changelog="")
    assert same == urns.Comparison([], [], []) and not same.changed
    assert urns.Comparison([A], [], []).changed and urns.Comparison([], [A], []).changed


def test_unexplained_message():
    """The refusal names the stack, the count, each URN indented, and both ways out."""
    assert urns.unexplained_message("dev", [A, B]) == (
        "dev: 2 resource(s) of a deployed stack would be deleted (renamed, reparented or removed without an alias):\n"
        f"  {A}\n  {B}\n"
        "Give the resource that replaces each one pulumi.ResourceOptions(aliases=[pulumi.Alias(name=..., "
        "parent=...)]) so the engine moves it, or name the URN in CHANGELOG.md saying why its replacement or "
        "deletion is intended."
    )


@pytest.fixture
def regen(tmp_path: Path, monkeypatch):
    """main() against a temporary snapshot folder, a stand-in render per stack, and an empty changelog."""
    renderings: dict[str, SimpleNamespace] = {}
    monkeypatch.setattr(urns, "SNAPSHOTS", tmp_path / "snaps")
    monkeypatch.setattr(urns, "changelog_text", lambda: "")
    from components.cli import synth

    def render(stack, config):
        assert config == {"path": urns.ROOT / "stacks" / f"Pulumi.{stack}.yaml"}  # the shipped stack file
        return renderings[stack]

    monkeypatch.setattr(synth, "read_stack_file", lambda path: {"path": path})
    monkeypatch.setattr(synth, "render", render)
    return renderings


def test_main_writes_new_and_changed_snapshots_and_says_so(regen, capsys):
    """A new or changed snapshot is written and reported with its +added -removed counts; an unchanged one is
    neither rewritten nor reported."""
    regen["one"] = _rendering(A, B)
    regen["two"] = _rendering(C)
    assert urns.main(["one", "two"]) == 0
    assert urns.snapshot_path("one").read_text(encoding="utf-8") == f"{A}\n{B}\n"
    out = capsys.readouterr()
    assert out.out.splitlines() == [
        f"updated {urns.snapshot_path('one')} (+2 -0)",
        f"updated {urns.snapshot_path('two')} (+1 -0)",
    ]
    assert out.err == ""
    assert urns.main(["one", "two"]) == 0
    assert capsys.readouterr().out == ""
    regen["one"] = _rendering(A, D, aliases={D: [B]})
    assert urns.main(["one"]) == 0
    assert capsys.readouterr().out == f"updated {urns.snapshot_path('one')} (+1 -1)\n"


def test_main_refuses_an_unexplained_removal_and_keeps_the_snapshot(regen, capsys):
    """A URN that would be deleted stops that stack's regeneration (exit 1, the message on stderr); the other
    stacks are still written."""
    regen["one"] = _rendering(A, B)
    assert urns.main(["one"]) == 0
    capsys.readouterr()
    regen["one"] = _rendering(A)
    regen["two"] = _rendering(C)
    assert urns.main(["one", "two"]) == 1
    out = capsys.readouterr()
    assert out.err == urns.unexplained_message("one", [B]) + "\n"
    assert out.out == f"updated {urns.snapshot_path('two')} (+1 -0)\n"
    assert urns.read_snapshot("one") == [A, B]


def test_main_names_snapshots_relative_to_the_repository(regen, monkeypatch, capsys):
    """Under the repository the report names the snapshot by its relative path, as a reviewer sees it."""
    monkeypatch.setattr(urns, "ROOT", urns.SNAPSHOTS.parent)
    regen["one"] = _rendering(A)
    assert urns.main(["one"]) == 0
    assert capsys.readouterr().out == "updated snaps/one.txt (+1 -0)\n"


def test_main_without_arguments_regenerates_every_shipped_stack(regen, monkeypatch, capsys):
    """No stack named (argv empty, or the process's own arguments empty): every shipped stack."""
    monkeypatch.setattr(urns, "shipped_stacks", lambda: ["one", "two"])
    regen["one"] = _rendering(A)
    regen["two"] = _rendering(B)
    assert urns.main([]) == 0
    assert [p.name for p in sorted((urns.SNAPSHOTS).iterdir())] == ["one.txt", "two.txt"]
    monkeypatch.setattr("sys.argv", ["urns", "two"])  # the console script: its own arguments name the stacks
    regen["one"] = _rendering(A, D)
    regen["two"] = _rendering(B, C)
    capsys.readouterr()
    assert urns.main() == 0
    assert capsys.readouterr().out == f"updated {urns.snapshot_path('two')} (+1 -0)\n"
    assert urns.read_snapshot("one") == [A]


def test_changelog_text(tmp_path: Path, monkeypatch):
    """The changelog's text (URNs named there are explained removals); no changelog explains nothing."""
    monkeypatch.setattr(urns, "CHANGELOG", tmp_path / "CHANGELOG.md")
    assert urns.changelog_text() == ""
    (tmp_path / "CHANGELOG.md").write_text(f"- `{A}`: dropped, ü\n", encoding="utf-8")
    assert urns.changelog_text() == f"- `{A}`: dropped, ü\n"
