"""``upstream/charts/README.md`` as ``scripts/package_charts.py`` writes it.

The archives (source repository, ref, commit, path, size, sha256 of the archive and of its tar), each recipe's
sub-charts, stamping and notes, and the licence texts.
"""

from __future__ import annotations

import hashlib

from chart_recipes import RECIPES
from chart_tar import Built


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def readme(built: dict[str, Built], licences: list[str]) -> str:
    total = sum(len(b.archive) for b in built.values())
    lines = [
        "# upstream/charts/: the pinned Helm charts, packaged",
        "",
        "Every chart `components/data/versions.py` pins, as a packaged chart archive (`<chart>-<version>.tgz`, the",
        "name `helm package` writes), so that a clone deploys with no chart repository reachable (stack setting",
        "`gpu-platform:chartSource: bundled`). Upstream data: do not edit these files. Each archive is made from the",
        "upstream git repository at the release commit below, as the upstream release job packages it (the",
        "release-time stamping is applied and listed), by `scripts/package_charts.py`, which produces the same bytes",
        "from the same commits:",
        "",
        "```sh",
        "python3 scripts/package_charts.py --git-root DIR           # DIR/<owner>+<name>[/repo] or DIR/<owner>/<name>",
        "python3 scripts/package_charts.py --git-root DIR --check   # rebuild and compare, write nothing",
        "```",
        "",
        "See the script's docstring for the Helm semantics it follows (`.helmignore`, symlinks, sub-charts) and for",
        "the differences from the archives the upstream release jobs publish (none changes what Helm renders:",
        "`helm package` re-serialises `Chart.yaml`, which is kept here as committed, with only the stamped lines",
        "changed). `scripts/refresh_upstream.py` leaves this folder alone (`PROJECT_ADDED`).",
        "",
        "Checked against Helm: `helm package` (v3.22.0) of the same trees writes the same file list with the same",
        "contents, except `Chart.yaml` (and the sub-charts' `Chart.yaml`), which Helm re-serialises with the same",
        "data (cluster-autoscaler's obsolete `engine: gotpl` key, which Helm's chart metadata no longer has, is",
        'dropped by Helm; kube-prometheus-stack\'s `crds` dependency gets `repository: ""`). The tar holds regular',
        "files only, no directory entries, as Helm writes it.",
        "",
        f"Total: {len(built)} archives, {total:,} bytes ({total / 1048576:.2f} MiB); plus `LICENSE`, `LICENSES/` and",
        "this README.",
        "",
        "## Archives",
        "",
        "`sha256` is the archive's; `tar sha256` the uncompressed tar stream's (the same with any zlib).",
        "",
        "| archive | chart, version | repository | ref | commit (date) | path in the repository | bytes | files |"
        " sha256 | tar sha256 | licence |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in sorted(built):
        b, r = built[name], RECIPES.get(name)
        if r is None:
            continue
        s = r.source
        ref = f"`{s.ref}`" if s.ref else "none (no chart tags)"
        lines.append(
            f"| `{r.archive}` | {r.name} {r.version} | [{s.repo}](https://github.com/{s.repo}) | {ref} |"
            f" `{s.commit}` ({s.date}) | `{s.path}` | {len(b.archive):,} | {b.files} | `{sha256(b.archive)}` |"
            f" `{b.tar_sha256}` | {r.licence} |"
        )
    lines += ["", "## Sub-charts, stamping, notes", ""]
    for name in sorted(built):
        r = RECIPES.get(name)
        if r is None:
            continue
        lines.append(f"### `{r.archive}`")
        lines.append("")
        lines.append(f"- Release stamping: {r.stamping}.")
        subs = list(r.in_tree)
        for d in r.deps:
            s = d.source
            subs.append(
                f"{d.name} {d.version}: [{s.repo}](https://github.com/{s.repo}) `{s.ref}` `{s.commit}` ({s.date}),"
                f" `{s.path}`, packaged on its own (its `.helmignore`; {d.licence}) and placed in `charts/` as"
                f" `helm dependency build` does" + (f". {d.notes}" if d.notes else "")
            )
        if subs:
            lines.append("- Sub-charts (each a folder `charts/<name>/` in the archive, as `helm package` writes them):")
            lines += [f"  - {s}" for s in subs]
        if r.notes:
            lines.append(f"- {r.notes}")
        lines.append(f"- Compared with the reference copy: {r.reference.format(name=r.name)}.")
        lines.append("")
    lines += [
        "## Licences",
        "",
        "Every source is Apache-2.0 (each repository's `LICENSE` begins \"Apache License / Version 2.0, January",
        "2004\"). No chart folder ships a LICENSE of its own, so the archives hold none; the repositories' texts are",
        "here, each as the repository has it at the commit above: `LICENSE` is the Apache License 2.0 text",
        "(NVIDIA/gpu-operator's), and",
        "",
    ]
    lines += [f"- `LICENSES/{n}`" for n in licences]
    lines += [
        "",
        "(`*.NOTICE.txt`: the repository's NOTICE file; the other repositories ship none.)",
        "",
    ]
    return "\n".join(lines)
