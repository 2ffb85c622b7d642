"""The synth's output files: each one made when the writer asks for it (``file_items``) and written at once
(``write``), so the command never holds every file's text (1,000 tenants: ~36 MB of text and the pieces it was
joined from) at the same time."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping
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
    yield "summary.md", summary(rendering, sections or {})
    from ..plan import cost, plan

    decided = plan.build(rendering.spec, rendering.stack)
    yield "cost.json", cost.to_json(cost.report_of(decided))
    from .plan_html import page_parts

    yield "plan.html", page_parts(decided)  # the same plan as a page (gpu-platform plan --html), written in parts


def files(rendering: Rendering, sections: Mapping[str, str] | None = None) -> dict[str, str]:
    """Every output file (relative path -> text)."""
    return {rel: text if isinstance(text, str) else "".join(text) for rel, text in file_items(rendering, sections)}


def write(out_dir: Path, contents: Mapping[str, str] | Iterable[tuple[str, Text]]) -> int:
    """Replace ``out_dir`` with exactly these files (written aside first, then swapped in); ``contents``: a mapping
    of relative path to text, or (path, text or its parts) pairs, each written as it comes (``file_items``).
    Returns how many files it wrote."""
    out_dir = out_dir.resolve()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}-", dir=out_dir.parent))
    items = sorted(contents.items()) if isinstance(contents, Mapping) else contents
    made = {""}  # folders made so far (relative), each made once, not once per file
    written = 0
    try:
        for rel, text in items:
            folder = os.path.dirname(rel)
            if folder not in made:
                os.makedirs(staging / folder, exist_ok=True)
                made.add(folder)
            with open(staging / rel, "w", encoding="utf-8") as f:
                if isinstance(text, str):
                    f.write(text)
                else:
                    f.writelines(text)
            written += 1
        if out_dir.exists():
            shutil.rmtree(out_dir)
        staging.rename(out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return written
