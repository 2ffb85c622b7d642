"""The project's own copy of the upstream contracts (``upstream/``) and the script that refreshes it.

The conformance tests read ``UPSTREAM`` (``upstream/`` in the repository), so a clone without
``../shared/upstream`` runs them all. These tests prove the copy is complete and attributed (every file is
named in its README's *Files* table with the byte size upstream had, every project folder carries its
licence) and that ``scripts/refresh_upstream.py`` adds, updates and deletes what a refresh must.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys

import pytest
from conftest import ROOT, UPSTREAM

SCRIPT = ROOT / "scripts" / "refresh_upstream.py"
# Files the snapshot's README describes in its "Addendum" sections instead of the Files table.
ADDENDUM = re.compile(r"^- `(karpenter/[^`]+)`(?: and `\.strict\.json`)?", re.M)


def _load_script():
    spec = importlib.util.spec_from_file_location("refresh_upstream", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


refresh_upstream = _load_script()


def files_table() -> dict[str, int]:
    """``file -> bytes`` from the README's *Files* section."""
    text = (UPSTREAM / "README.md").read_text()
    section = text.split("\n## Files\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \| (\d+) \|", section, re.M)
    return {path: int(size) for path, size in rows}


def addendum_files() -> set[str]:
    text = (UPSTREAM / "README.md").read_text()
    named = set()
    for path in ADDENDUM.findall(text.split("## Addendum", 1)[1]):
        named.add(path)
        if path.endswith(".json") and not path.endswith(".strict.json"):
            named.add(path[: -len(".json")] + ".strict.json")
    return named


def copied_files() -> set[str]:
    return {p.relative_to(UPSTREAM).as_posix() for p in UPSTREAM.rglob("*") if p.is_file()}


def test_the_copy_is_inside_the_repository_not_beside_it():
    assert UPSTREAM == ROOT / "upstream"
    assert (UPSTREAM / "kueue" / "clusterqueue.kueue.x-k8s.io.v1beta2.strict.json").is_file()


def test_every_listed_file_is_copied_with_upstreams_size():
    table = files_table()
    assert len(table) > 150  # the table was parsed, not an empty match
    wrong = {
        path: (size, (UPSTREAM / path).stat().st_size if (UPSTREAM / path).exists() else None)
        for path, size in table.items()
        if not (UPSTREAM / path).is_file() or (UPSTREAM / path).stat().st_size != size
    }
    assert wrong == {}


def project_added_files() -> set[str]:
    """Files of the folders this project records itself (``PROJECT_ADDED``), each named in its folder's README."""
    out = set()
    for folder in refresh_upstream.PROJECT_ADDED:
        readme = (UPSTREAM / folder / "README.md").read_text()
        for p in sorted((UPSTREAM / folder).rglob("*")):
            if not p.is_file():
                continue
            rel = p.relative_to(UPSTREAM / folder).as_posix()
            named = rel == "README.md" or f"`{p.name}`" in readme or f"`{rel}`" in readme
            assert named, f"{folder}/{rel} is not named in its README"
            out.add(f"{folder}/{rel}")
    return out


def test_every_copied_file_is_attributed():
    unlisted = copied_files() - set(files_table()) - addendum_files() - project_added_files() - {"README.md"}
    assert unlisted == set()
    assert addendum_files() <= copied_files()


def test_every_project_folder_carries_its_licence():
    folders = {p.name for p in UPSTREAM.iterdir() if p.is_dir()}
    assert {"gpu-operator", "kueue", "volcano", "karpenter", "prometheus-operator"} <= folders
    # prices/ holds facts with attribution, no copied upstream file (see its README)
    missing = sorted(f for f in folders - {"prices"} if not (UPSTREAM / f / "LICENSE").is_file())
    assert missing == []
    for folder in ("karpenter", "prometheus-operator"):  # the two upstreams that ship a NOTICE
        assert (UPSTREAM / folder / "NOTICE").is_file()
    assert (UPSTREAM / "prices" / "README.md").is_file()


def test_the_readme_says_where_the_copy_comes_from_and_keeps_the_attribution():
    text = (UPSTREAM / "README.md").read_text()
    assert text.startswith(refresh_upstream.PREFACE)
    assert "make refresh-upstream" in text
    assert "## Licences" in text and "## Files" in text  # the snapshot's README follows, unchanged


# ------------------------------------------------------------------------------------- the script


@pytest.fixture
def snapshot(tmp_path):
    source = tmp_path / "shared" / "upstream"
    (source / "kueue").mkdir(parents=True)
    (source / "README.md").write_text("# snapshot\n\n| `kueue/values.yaml` | 3 |\n")
    (source / "kueue" / "values.yaml").write_text("a: 1\n")
    (source / "kueue" / "LICENSE").write_text("Apache License\n")
    (source / "kueue" / "LICENSE").chmod(0o444)  # the shared snapshot is read-only
    return source


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, check=False)


def test_refresh_adds_updates_and_deletes(snapshot, tmp_path):
    dest = tmp_path / "repo" / "upstream"
    assert run("--source", str(snapshot), "--dest", str(dest)).returncode == 0
    assert (dest / "kueue" / "values.yaml").read_text() == "a: 1\n"
    assert (dest / "README.md").read_text() == refresh_upstream.PREFACE + "# snapshot\n\n| `kueue/values.yaml` | 3 |\n"
    assert (dest / "kueue" / "LICENSE").stat().st_mode & 0o200  # writable, so the next refresh can overwrite

    # upstream changes a file, drops one and adds one; a stale file in the copy goes too
    (snapshot / "kueue" / "values.yaml").write_text("a: 2\n")
    (snapshot / "kueue" / "LICENSE").chmod(0o644)
    (snapshot / "kueue" / "LICENSE").unlink()
    (snapshot / "volcano").mkdir()
    (snapshot / "volcano" / "values.yaml").write_text("b: 1\n")
    (dest / "old").mkdir()
    (dest / "old" / "gone.json").write_text("{}")

    check = run("--source", str(snapshot), "--dest", str(dest), "--check")
    assert check.returncode == 1
    assert check.stdout.splitlines() == [
        "delete  upstream/kueue/LICENSE",
        "update  upstream/kueue/values.yaml",
        "delete  upstream/old/gone.json",
        "add     upstream/volcano/values.yaml",
    ]
    assert (dest / "kueue" / "values.yaml").read_text() == "a: 1\n"  # --check writes nothing

    assert run("--source", str(snapshot), "--dest", str(dest)).returncode == 0
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == [
        "README.md",
        "kueue/values.yaml",
        "volcano/values.yaml",
    ]
    assert not (dest / "old").exists()  # emptied folders are removed
    assert (dest / "kueue" / "values.yaml").read_text() == "a: 2\n"
    assert run("--source", str(snapshot), "--dest", str(dest), "--check").returncode == 0


def test_refresh_refuses_a_folder_that_is_not_a_snapshot(tmp_path):
    result = run("--source", str(tmp_path / "nowhere"), "--dest", str(tmp_path / "upstream"))
    assert result.returncode == 2
    assert "is not an upstream snapshot" in result.stderr
    assert not (tmp_path / "upstream").exists()


def test_refresh_keeps_the_folders_the_project_records_itself(snapshot, tmp_path):
    dest = tmp_path / "repo" / "upstream"
    added = dest / refresh_upstream.PROJECT_ADDED[0]
    added.mkdir(parents=True)
    (added / "values.yaml").write_text("c: 1\n")
    assert run("--source", str(snapshot), "--dest", str(dest), "--check").stdout.splitlines() == [
        "add     upstream/README.md",
        "add     upstream/kueue/LICENSE",
        "add     upstream/kueue/values.yaml",
    ]
    assert run("--source", str(snapshot), "--dest", str(dest)).returncode == 0
    assert (added / "values.yaml").read_text() == "c: 1\n"  # not the snapshot's, so neither compared nor deleted
