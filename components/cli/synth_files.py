"""The synth's output files: each one made when the writer asks for it (``file_items``) and written at once
(``write``), so the command never holds every file's text (1,000 tenants: ~36 MB of text and the pieces it was
joined from) at the same time."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..explain.rendering import Rendering
from .synth_yaml import _json, _json_parts, _yaml


def manifest_path(doc: Mapping[str, Any]) -> str:
    meta = doc.get("metadata") or {}
    ns = meta.get("namespace") or "_cluster"
    group = doc["apiVersion"].split("/")[0] if "/" in doc["apiVersion"] else "core"
    return f"manifests/{ns}/{doc['kind'].lower()}.{group}-{meta.get('name', 'unnamed')}.yaml"


Text = str | Iterable[str]  # a file's text, or its parts in order (written as they are made)


def file_items(rendering: Rendering, sections: Mapping[str, str] | None = None) -> Iterator[tuple[str, Text]]:
    """Every output file as (relative path, text or its parts), each made when asked for; raises RuntimeError at a
    second object rendering to the same path."""
    from ..explain.summary import summary

    yield (
        "resources.json",
        _json_parts(
            [
                {
                    "type": r.type,
                    "name": r.name,
                    "parent": r.parent,
                    "provider": r.provider,
                    "inputs": r.inputs,
                    "dependsOn": r.depends_on,
                }
                for r in rendering.resources
            ]
        ),
    )
    seen: set[str] = set()
    for doc in rendering.manifests:
        path = manifest_path(doc)
        if path in seen:
            raise RuntimeError(f"two objects render to {path}")
        seen.add(path)
        yield path, _yaml(doc)
    for r in rendering.releases:
        release = r.inputs.get("name", r.name)
        yield (
            f"helm/{release}/release.json",
            _json(
                {
                    "chart": r.inputs.get("chart"),
                    "repository": (r.inputs.get("repositoryOpts") or {}).get("repo"),
                    "version": r.inputs.get("version"),
                    "namespace": r.inputs.get("namespace"),
                    "skipCrds": r.inputs.get("skipCrds", False),
                }
            ),
        )
        yield f"helm/{release}/values.yaml", _yaml(r.inputs.get("values") or {})
    yield "outputs.json", _json(rendering.outputs)
    if rendering.spec is None:  # a user's own program (synth --program): no one stack file to summarise
        return
    from ..plan import cost, lending, plan

    # the plan's cost document and lending graph, made once for the three reports that read them
    decided = plan.build(rendering.spec, rendering.stack)
    cost_doc, graph = cost.report_of(decided), lending.graph(decided)
    yield "summary.md", summary(rendering, sections or {}, cost_doc=cost_doc, graph=graph)
    yield "cost.json", cost.to_json(cost_doc)
    from .plan_html import page_parts

    # the same plan as a page (gpu-platform plan --html), written in parts
    yield "plan.html", page_parts(decided, cost_doc=cost_doc, graph=graph)


def files(rendering: Rendering, sections: Mapping[str, str] | None = None) -> dict[str, str]:
    """Every output file (relative path -> text)."""
    return {rel: text if isinstance(text, str) else "".join(text) for rel, text in file_items(rendering, sections)}


@dataclass(frozen=True)
class Written:
    """What ``write`` did: how many files the directory now holds from this synth, and how many of them it wrote
    (the rest held the same text already and were left as they were)."""

    files: int
    changed: int


def write(out_dir: Path, contents: Mapping[str, str] | Iterable[tuple[str, Text]]) -> Written:
    """Make ``out_dir`` hold exactly these files; ``contents``: a mapping of relative path to text, or (path, text or
    its parts) pairs, each handled as it comes (``file_items``).

    A file whose text ``out_dir`` already holds is left as it is (its inode and mtime), so a re-synth writes only
    what changed: creating a file is the costly part of writing one (kernel time, ~0.1-0.6 ms each here, 5,000 at
    1,000 tenants), comparing one is a read. Every changed file is written aside first (a staging directory beside
    ``out_dir``); only once all are made are the files no longer made removed and the changed ones moved in (each
    ``os.replace``: atomic per file). An error while making or writing any file leaves ``out_dir`` as it was. A
    new ``out_dir`` is the staging directory renamed."""
    out_dir = out_dir.resolve()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}-", dir=out_dir.parent))
    items = sorted(contents.items()) if isinstance(contents, Mapping) else contents
    previous = out_dir if out_dir.is_dir() else None
    made = {""}  # staging folders made so far (relative), each made once, not once per file
    names: set[str] = set()
    changed: list[str] = []
    # plain strings, not Path objects, for the ~1,100 files' paths (joining Paths was a fifth of writing them)
    previous_dir = str(previous) if previous is not None else None
    staging_dir = str(staging)
    try:
        for rel, text in items:
            names.add(rel)
            if _write_if_changed(rel, (text,) if isinstance(text, str) else text, previous_dir, staging_dir, made):
                changed.append(rel)
        if previous is None:
            staging.rename(out_dir)
        else:
            _remove_all_but(out_dir, names)
            for rel in changed:
                dest = out_dir / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.replace(staging / rel, dest)
            shutil.rmtree(staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return Written(files=len(names), changed=len(changed))


def _write_if_changed(rel: str, parts: Iterable[str], previous: str | None, staging: str, made: set[str]) -> bool:
    """Write the file into the folder ``staging`` unless the folder ``previous`` holds the same bytes at ``rel``
    (UTF-8, as written); compared part by part as the parts are made, so a file is never held whole. True when it
    was written."""
    it = iter(parts)
    prefix, first = b"", b""
    old = None
    if previous is not None:
        try:
            old = open(f"{previous}/{rel}", "rb")
        except OSError:  # no such file, or a folder or something else in its place
            old = None
    if old is not None:
        with old:
            same = 0
            for part in it:
                data = str.encode(part, "utf-8")
                if old.read(len(data)) != data:
                    first = data
                    break
                same += len(data)
            else:
                if old.read(1) == b"":
                    return False
            old.seek(0)
            prefix = old.read(same)  # what the parts compared equal to so far
    folder = os.path.dirname(rel)
    if folder not in made:
        os.makedirs(f"{staging}/{folder}", exist_ok=True)
        made.add(folder)
    with open(f"{staging}/{rel}", "wb") as f:
        if prefix:
            f.write(prefix)
        if first:
            f.write(first)
        for part in it:
            f.write(str.encode(part, "utf-8"))
    return True


def _remove_all_but(out_dir: Path, names: set[str]) -> None:
    """Remove from ``out_dir`` every file (or link) not in ``names`` and then every folder left empty."""
    for folder, dirs, files in os.walk(out_dir, topdown=False):
        rel_folder = os.path.relpath(folder, out_dir)
        for name in files:
            rel = name if rel_folder == "." else f"{rel_folder}/{name}"
            if rel not in names:
                os.unlink(os.path.join(folder, name))
        for name in dirs:
            path = os.path.join(folder, name)
            if os.path.islink(path):  # a link to a folder: os.walk does not enter it
                os.unlink(path)
            elif not os.listdir(path):
                os.rmdir(path)
