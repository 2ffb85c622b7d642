#!/usr/bin/env python3
"""Refresh the project's copy of the upstream contracts (``upstream/``) from ``../shared/upstream``.

``upstream/`` holds upstream *data* (CRD schemas, chart ``Chart.yaml``/``values.yaml``, example manifests,
licence and notice texts, price facts) that the tests validate the rendered platform against. It is a
byte-for-byte copy of the reference snapshot every developer and CI of this project have at
``../shared/upstream``, so that a clone without it runs every conformance test.

    python3 scripts/refresh_upstream.py            # copy: add, overwrite, delete what upstream no longer has
    python3 scripts/refresh_upstream.py --check    # list the differences, write nothing; exit 1 if any
    python3 scripts/refresh_upstream.py --source DIR

The copy's README is this project's preface (below) followed by the snapshot's own README, unchanged, so
the attribution of every file (repository, release, commit, path, licence) travels with the files.
Standard library only: it runs with any Python 3.11+, no virtualenv needed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEST = ROOT / "upstream"
DEFAULT_SOURCE = ROOT.parent / "shared" / "upstream"
README = "README.md"
# Folders this project records itself, straight from an upstream repository, beside the snapshot's: a refresh
# leaves them alone (neither compared nor deleted); each names its source in its own README.md.
PROJECT_ADDED = ("aws-efa-k8s-device-plugin", "charts", "crds", "jobset", "kuberay-operator", "kubeflow-trainer", "lws")

PREFACE = """\
# upstream/: this project's copy of the upstream contracts

The files in this folder are upstream **data**, not code of this project: CRD schemas as JSON Schema
(`*.strict.json` also reject unknown fields), the pinned Helm charts' `Chart.yaml` / `values.yaml`, upstream
example manifests and templates, the upstream `LICENSE` / `NOTICE` texts, and public price facts. The tests
validate what the package renders against them (see `tests/conftest.py`, `UPSTREAM`).

They are a byte-for-byte copy of the reference snapshot that this project's developers and CI keep at
`../shared/upstream`, kept in the repository so that any clone runs every conformance test without it.
Do not edit them by hand. Refresh the copy with

```sh
make refresh-upstream                                # = python3 scripts/refresh_upstream.py
python3 scripts/refresh_upstream.py --check          # list differences from ../shared/upstream, write nothing
python3 scripts/refresh_upstream.py --source DIR     # refresh from another snapshot
```

which copies every file, deletes files the snapshot no longer has and rewrites this README (this preface
plus the snapshot's README). Commit a refresh on its own, together with the code changes a new upstream
release needs.

Everything below the line is the snapshot's own README, unchanged: where each file came from (repository,
release, commit, path; section *Files*), how it was made, and the licences (section *Licences*; every
source is Apache-2.0, `prices/` records facts with attribution). Paths in it are relative to this folder.

---

"""


def expected_files(source: Path) -> dict[str, bytes]:
    """Relative path -> content of every file the copy should hold."""
    files = {
        p.relative_to(source).as_posix(): p.read_bytes()
        for p in sorted(source.rglob("*"))
        if p.is_file() and p.relative_to(source).as_posix() != README
    }
    readme = source / README
    files[README] = PREFACE.encode() + (readme.read_bytes() if readme.is_file() else b"")
    return files


def current_files(dest: Path) -> dict[str, bytes]:
    if not dest.is_dir():
        return {}
    return {
        rel: p.read_bytes()
        for p in sorted(dest.rglob("*"))
        if p.is_file() and (rel := p.relative_to(dest).as_posix()).split("/", 1)[0] not in PROJECT_ADDED
    }


def differences(want: dict[str, bytes], have: dict[str, bytes]) -> list[tuple[str, str]]:
    """(action, path) for every file to add, update or delete, sorted by path."""
    diff = [("add" if path not in have else "update", path) for path in want if have.get(path) != want[path]]
    diff += [("delete", path) for path in have if path not in want]
    return sorted(diff, key=lambda d: d[1])


def refresh(source: Path, dest: Path, *, check: bool = False) -> list[tuple[str, str]]:
    want = expected_files(source)
    diff = differences(want, current_files(dest))
    if check:
        return diff
    for action, path in diff:
        target = dest / path
        if action == "delete":
            target.unlink()
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            target.chmod(0o644)  # the snapshot's files are read-only; the copy must stay refreshable
        target.write_bytes(want[path])
        target.chmod(0o644)
    for directory in sorted((d for d in dest.rglob("*") if d.is_dir()), key=lambda d: -len(d.parts)):
        if not any(directory.iterdir()):
            directory.rmdir()
    return diff


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="snapshot to copy (../shared/upstream)")
    parser.add_argument("--dest", type=Path, default=DEST, help=argparse.SUPPRESS)
    parser.add_argument("--check", action="store_true", help="list differences, write nothing, exit 1 if any")
    args = parser.parse_args(argv)
    if not (args.source / README).is_file():
        print(f"refresh-upstream: {args.source} is not an upstream snapshot (no {README})", file=sys.stderr)
        return 2
    diff = refresh(args.source, args.dest, check=args.check)
    for action, path in diff:
        print(f"{action:7} upstream/{path}")
    verb = "differ" if args.check else "changed"
    print(f"refresh-upstream: {len(diff)} file(s) {verb} ({args.source} -> {args.dest})", file=sys.stderr)
    return 1 if args.check and diff else 0


if __name__ == "__main__":
    sys.exit(main())
