#!/usr/bin/env python3
"""Package every pinned Helm chart as a deterministic archive in ``upstream/charts/`` (a clone deploys offline).

Re-create the archives, byte for byte, from the upstream git repositories (each at the commit its recipe names):

    python3 scripts/package_charts.py --git-root DIR      # DIR/<owner>+<name>/repo (the `fetch` layout),
                                                          # DIR/<owner>+<name>, or DIR/<owner>/<name>: a clone or
                                                          # a bare mirror holding the pinned commits
    python3 scripts/package_charts.py --git-root DIR --check    # rebuild in a temporary folder, compare, write nothing
    python3 scripts/package_charts.py --git-root DIR --extract TREES   # only write the chart trees (see --source)
    python3 scripts/package_charts.py --source TREES      # package chart trees extracted before

``--git-repo owner/name=PATH`` names one repository's git directory explicitly. The output folder is
``upstream/charts`` (``--out`` to change it); the script writes ``<chart>-<version>.tgz`` for each recipe, the licence
texts (``LICENSE``, ``LICENSES/``) and ``README.md`` (sources, sha256, sizes), and deletes archives no recipe makes.

What it does, per chart (helm.sh/helm/v3 v3.22.0 semantics, read from its source):

1. *Extract* (``--git-root``): the chart folder at the pinned commit, every symlink replaced by what it points at in
   the same commit (karpenter's ``crds/*.yaml`` -> ``pkg/apis/crds/``, volcano's ``crd/v1`` -> ``bases``), as
   ``helm package`` reads them (pkg/chart/loader/directory.go walks with ``sympath.Walk``, which follows symlinks).
   Dependencies fetched from a chart repository at release time (kube-prometheus-stack's) are packaged first by
   their own recipe and placed as ``charts/<dep>-<version>.tgz``, as ``helm dependency build`` places them.
   A tree folder is named like the chart; a sibling ``LICENSES/`` holds the repositories' licence texts.
2. *Load* like ``loader.LoadDir``: the chart's root ``.helmignore`` (pkg/ignore/rules.go: ``filepath.Match`` globs,
   ``!`` negation, trailing ``/`` = directories only, a pattern without ``/`` matches the base name, one with ``/``
   the path from the chart root) plus the default ``templates/.?*``; a UTF-8 BOM is dropped from every file.
   Like ``loader.LoadFiles``: ``charts/<x>.tgz`` is expanded and ``charts/<x>/`` kept as a sub-chart, both written
   as ``charts/<chart name>/...`` (pkg/chartutil/save.go ``writeTarContents`` writes every dependency as a folder);
   ``charts/`` entries starting with ``_`` or ``.`` and plain files directly in ``charts/`` are dropped
   (``*.prov`` kept); ``requirements.yaml``/``.lock`` are dropped from an apiVersion v2 chart.
3. *Stamp* what the upstream release job changes before or during ``helm package`` (``stamp``, from the recipe's
   fields, its ``stamping`` naming the upstream file it follows): ``--version``/``--app-version`` and yq/sed edits of
   ``values.yaml``. Edits are made on the text (the value on the one line, quoting kept, as yq keeps a scalar's
   style), so every other byte stays as upstream committed it.
4. *Write* a gzip'd tar: entries sorted, all under ``<chart>/``, regular files only (Helm writes no directory
   entries), mode 0644, uid/gid 0, empty user/group names, mtime 0; PAX format; gzip level 9 with mtime 0 and no
   file name. Same input, same bytes (with the same zlib; README.md also lists the sha256 of the uncompressed tar).

Differences from the archive the upstream release job publishes, all without effect on what Helm renders:
``helm package`` re-serialises ``Chart.yaml`` and ``Chart.lock`` (keys sorted, quoting normalised), stamps the
current time and keeps its own file order and gzip settings; kube-prometheus-stack's release job also writes a
``Chart.lock`` (dependency resolution time), which is not in git and so not here.

Beside this script (``scripts/``, imported by name): ``chart_recipes.py`` (``RECIPES``, one recipe per chart: source
repository, tag, commit, chart folder, stamping), ``chart_git.py`` (reading the repositories, step 1), ``chart_tar.py``
(the tar and gzip writing, step 4) and ``chart_readme.py`` (``README.md``). Loading, stamping, packaging and the
command line are here.

Standard library only (Python 3.11+) plus the ``git`` command for ``--git-root``.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import posixpath
import re
import shutil
import sys
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from chart_git import GitRepo, find_git_dir
from chart_readme import readme, sha256
from chart_recipes import RECIPES, Recipe, Source
from chart_tar import Built, gzip_bytes, tar_bytes

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "upstream" / "charts"
UTF8_BOM = b"\xef\xbb\xbf"
HELMIGNORE = ".helmignore"
DEFAULT_IGNORE = ("templates/.?*",)  # pkg/ignore/rules.go AddDefaults


# ----------------------------------------------------------------------------------------------- .helmignore


def _go_glob(pattern: str) -> re.Pattern[str]:
    """Go's filepath.Match as a regex: ``*`` and ``?`` stop at ``/``, ``[^...]`` negates, ``\\`` escapes."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(re.escape(pattern[i]))
        elif c == "[":
            j = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("^", "]") else i + 1)
            if j < 0:
                raise ValueError(f"bad pattern {pattern!r}")
            body = pattern[i + 1 : j]
            negate = body.startswith("^")
            body = body[1:] if negate else body
            out.append("[" + ("^" if negate else "") + body.replace("\\", "\\\\") + "]")
            i = j
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z", re.S)


@dataclass
class IgnoreRule:
    """One .helmignore pattern, compiled: what it matches and how."""

    raw: str
    regex: re.Pattern[str]
    negate: bool
    must_dir: bool
    base_only: bool  # no "/" in the pattern: match the base name only


@dataclass
class IgnoreRules:
    """helm.sh/helm/v3 pkg/ignore/rules.go."""

    rules: list[IgnoreRule] = field(default_factory=list)

    @classmethod
    def parse(cls, text: str) -> IgnoreRules:
        rules = cls()
        for line in [*text.splitlines(), *DEFAULT_IGNORE]:
            rules.add(line)
        return rules

    def add(self, line: str) -> None:
        rule = line.strip()
        if not rule or rule.startswith("#"):
            return
        if "**" in rule:
            raise ValueError(f".helmignore: double-star (**) syntax is not supported: {rule!r}")
        raw, negate = rule, rule.startswith("!")
        rule = rule[1:] if negate else rule
        must_dir = rule.endswith("/")
        rule = rule[:-1] if must_dir else rule
        base_only = "/" not in rule
        rule = rule.lstrip("/") if rule.startswith("/") else rule
        self.rules.append(IgnoreRule(raw, _go_glob(rule), negate, must_dir, base_only))

    def ignore(self, path: str, is_dir: bool) -> bool:
        if path in ("", ".", "./"):
            return False
        for r in self.rules:
            name = posixpath.basename(path) if r.base_only else path
            if r.negate:  # Helm's quirk: a negated rule ignores every path it does not match
                if r.must_dir and not is_dir:
                    return True
                if not r.regex.match(name):
                    return True
                continue
            if r.must_dir and not is_dir:
                continue
            if r.regex.match(name):
                return True
        return False


# ----------------------------------------------------------------------------------------------- loading


def walk_chart_dir(top: Path) -> dict[str, bytes]:
    """``loader.LoadDir``'s file list: relative path -> bytes, .helmignore applied, symlinks followed."""
    ignore_file = top / HELMIGNORE
    rules = IgnoreRules.parse(ignore_file.read_text() if ignore_file.is_file() else "")
    files: dict[str, bytes] = {}

    def walk(directory: Path, rel: str, seen: frozenset[str]) -> None:
        for entry in sorted(os.listdir(directory)):  # sympath.Walk reads names sorted
            path = directory / entry
            name = f"{rel}/{entry}" if rel else entry
            real = os.path.realpath(path)
            if not os.path.exists(real):
                raise ValueError(f"{top}: broken symlink {name}")
            if os.path.isdir(real):
                if real in seen:
                    raise ValueError(f"{top}: symlink loop at {name}")
                if not rules.ignore(name, True):
                    walk(Path(real), name, seen | {real})
                continue
            if rules.ignore(name, False):
                continue
            if not os.path.isfile(real):
                raise ValueError(f"{top}: cannot load irregular file {name}")
            data = Path(real).read_bytes()
            files[name] = data[len(UTF8_BOM) :] if data.startswith(UTF8_BOM) else data

    walk(top, "", frozenset({os.path.realpath(top)}))
    return files


def archive_files(data: bytes) -> dict[str, bytes]:
    """``loader.LoadArchiveFiles``: the files of a chart archive, first path component dropped."""
    files: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            if member.isdir():
                continue
            if not member.isfile():
                raise ValueError(f"archive entry {member.name} is not a regular file")
            name = posixpath.normpath("/".join(member.name.replace("\\", "/").split("/")[1:]))
            if name.startswith("/") or name in (".", "") or name.startswith(".."):
                raise ValueError(f"archive entry {member.name} is outside the chart")
            body = tar.extractfile(member).read()
            files[name] = body[len(UTF8_BOM) :] if body.startswith(UTF8_BOM) else body
    return files


def top_level_scalar(text: str, key: str) -> str | None:
    m = re.search(rf"^{re.escape(key)}:[ \t]*(.*?)[ \t]*(?:#.*)?$", text, re.M)
    return m.group(1).strip("\"'") if m else None


def chart_files(files: dict[str, bytes]) -> dict[str, bytes]:
    """``loader.LoadFiles`` + ``chartutil.Save``: what the archive holds, relative to the chart folder."""
    if "Chart.yaml" not in files:
        raise ValueError("Chart.yaml file is missing")
    chart_yaml = files["Chart.yaml"].decode()
    v1 = (top_level_scalar(chart_yaml, "apiVersion") or "v1") == "v1"
    out: dict[str, bytes] = {}
    subcharts: dict[str, dict[str, bytes]] = {}
    for name, data in files.items():
        if name in ("requirements.yaml", "requirements.lock") and not v1:
            continue  # Helm reads them into the metadata of a v2 chart and does not save them
        if name.startswith("charts/"):
            if name.endswith(".prov"):
                out[name] = data
                continue
            sub, _, rest = name[len("charts/") :].partition("/")
            subcharts.setdefault(sub, {})[rest] = data
            continue
        out[name] = data
    for sub, subfiles in sorted(subcharts.items()):
        if sub[:1] in ("_", "."):
            continue
        if sub.endswith(".tgz"):
            if set(subfiles) != {""}:
                raise ValueError(f"charts/{sub} is not a file")
            loaded = chart_files(archive_files(subfiles[""]))
        else:
            subfiles = {k: v for k, v in subfiles.items() if k}  # plain files in charts/ are not charts
            if not subfiles:
                continue
            loaded = chart_files(subfiles)
        dep = top_level_scalar(loaded["Chart.yaml"].decode(), "name")
        for rel, data in loaded.items():
            target = f"charts/{dep}/{rel}"
            if target in out:
                raise ValueError(f"two sub-charts named {dep} in charts/")
            out[target] = data
    return out


# ----------------------------------------------------------------------------------------------- stamping


_SCALAR = re.compile(
    r"^(?P<head>(?P<indent> *)(?P<key>[^\s#:][^:#]*?):[ \t]+)(?P<value>\"[^\"]*\"|'[^']*'|[^\s#]+)"
    r"(?P<tail>[ \t]*(?:#.*)?)$"
)
_KEY = re.compile(r"^(?P<indent> *)(?P<key>[^\s#:\-][^:#]*?):(?:[ \t]|$)")


def set_scalar(text: str, path: tuple[str, ...], value: str) -> str:
    """``yq '.a.b = "value"'`` for a block-mapping scalar: the line's value replaced, its quoting and comment kept
    (yq keeps a node's style; the file is otherwise as yq wrote it, since upstream's own yq edits committed it)."""
    lines = text.split("\n")
    stack: list[tuple[int, str]] = []
    found = None
    for i, line in enumerate(lines):
        m = _KEY.match(line)
        if not m or line.lstrip().startswith("#"):
            continue
        indent = len(m.group("indent"))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, m.group("key").strip().strip("\"'")))
        if tuple(k for _, k in stack) == path:
            if found is not None:
                raise ValueError(f"{'.'.join(path)} appears twice")
            found = i
    if found is None:
        raise ValueError(f"{'.'.join(path)} not found")
    m = _SCALAR.match(lines[found])
    if not m:
        raise ValueError(f"{'.'.join(path)} is not a plain scalar line: {lines[found]!r}")
    old = m.group("value")
    quote = old[0] if old[0] in "\"'" else ""
    if not quote and (value != value.strip() or re.search(r"[:#]\s|^[!&*{}\[\],|>@`'\"%?-]", value)):
        raise ValueError(f"{value!r} would need quoting")
    lines[found] = f"{m.group('head')}{quote}{value}{quote}{m.group('tail')}"
    return "\n".join(lines)


def _verify_edit(before: str, after: str, path: tuple[str, ...], value: str) -> None:
    """With PyYAML at hand, prove the text edit is exactly the yq assignment (nothing else changed)."""
    try:
        import yaml
    except ImportError:
        return
    want = yaml.safe_load(before)
    node = want
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    if yaml.safe_load(after) != want:
        raise ValueError(f"editing {'.'.join(path)} changed more than that value")


def stamp(recipe: Recipe | None, files: dict[str, bytes]) -> dict[str, bytes]:
    """The release-time changes of ``recipe`` (module docstring, step 3) applied to the chart's own files."""
    if recipe is None:
        return files
    files = dict(files)
    for name, old, new in recipe.seds:
        files[name] = files[name].replace(old.encode(), new.encode())
    for name, path, value in recipe.edits:
        before = files[name].decode()
        files[name] = set_scalar(before, path, value).encode()
        _verify_edit(before, files[name].decode(), path, value)
    chart = files["Chart.yaml"].decode()
    if recipe.chart_version is not None:
        chart = set_scalar(chart, ("version",), recipe.chart_version)
    if recipe.app_version is not None:
        if top_level_scalar(chart, "appVersion") is None:
            # `helm package --app-version` on a Chart.yaml without one (jobset's): the key is added; Helm writes it
            # after `version`, here at the end (the text otherwise stays as committed)
            chart = chart + ("" if chart.endswith("\n") else "\n") + f"appVersion: {recipe.app_version}\n"
        else:
            chart = set_scalar(chart, ("appVersion",), recipe.app_version)
    files["Chart.yaml"] = chart.encode()
    return files


# ----------------------------------------------------------------------------------------------- packaging


def package(tree: Path, recipe: Recipe | None = None) -> Built:
    """Package one chart tree (as ``helm package`` does, see the module docstring)."""
    files = chart_files(walk_chart_dir(tree))
    own = {k: v for k, v in files.items() if not k.startswith("charts/")}
    files.update(stamp(recipe, own))
    chart_yaml = files["Chart.yaml"].decode()
    name, version = top_level_scalar(chart_yaml, "name"), top_level_scalar(chart_yaml, "version")
    if recipe is not None and (name, version) != (recipe.name, recipe.version):
        raise ValueError(f"{tree}: Chart.yaml says {name} {version} after stamping, the recipe {recipe.archive}")
    raw = tar_bytes(name, files)
    return Built(name, version, gzip_bytes(raw), hashlib.sha256(raw).hexdigest(), len(files))


# ----------------------------------------------------------------------------------------------- extracting


def write_tree(files: dict[str, bytes], dest: Path) -> None:
    for rel, data in files.items():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def source_files(recipe: Recipe, repos: Callable[[str], GitRepo]) -> dict[str, bytes]:
    src = recipe.source
    git = repos(src.repo)
    if not git.has_commit(src.commit):
        raise SystemExit(f"package-charts: {src.repo} has no commit {src.commit} ({git.git_dir})")
    tagged = git.tag_commit(src.ref) if src.ref else None
    if tagged is not None and tagged != src.commit:
        raise SystemExit(f"package-charts: {src.repo} tag {src.ref} is {tagged}, the recipe says {src.commit}")
    files = git.tree_files(src.commit, src.path)
    if "Chart.yaml" not in files:
        raise SystemExit(f"package-charts: no Chart.yaml in {src.repo}@{src.commit}:{src.path}")
    return files


def extract(recipes: list[Recipe], trees: Path, repos: Callable[[str], GitRepo]) -> None:
    """Write each recipe's chart tree (module docstring, step 1) and the licence texts to ``trees``."""
    for recipe in recipes:
        dest = trees / recipe.name
        if dest.exists():
            shutil.rmtree(dest)
        write_tree(source_files(recipe, repos), dest)
        for dep in recipe.deps:
            with tempfile.TemporaryDirectory() as tmp:
                write_tree(source_files(dep, repos), Path(tmp) / dep.name)
                built = package(Path(tmp) / dep.name, dep)
            (dest / "charts").mkdir(exist_ok=True)
            (dest / "charts" / dep.archive).write_bytes(built.archive)
    licences = trees / "LICENSES"
    licences.mkdir(parents=True, exist_ok=True)
    for src in sorted({s for r in recipes for s in all_sources(r)}, key=lambda s: s.repo):
        git = repos(src.repo)
        for rel, suffix in (("LICENSE", ".txt"), ("NOTICE", ".NOTICE.txt")):
            entries = git.entries(src.commit, rel)
            if entries:
                (licences / f"{src.repo.replace('/', '-')}{suffix}").write_bytes(git.blob(entries[0][1]))


def all_sources(recipe: Recipe) -> list[Source]:
    return [recipe.source, *(s for d in recipe.deps for s in all_sources(d))]


# ----------------------------------------------------------------------------------------------- main


def build_all(trees: Path, only: list[str] | None) -> dict[str, Built]:
    built = {}
    names = sorted(p.name for p in trees.iterdir() if p.is_dir() and p.name != "LICENSES")
    for name in names:
        if only and name not in only:
            continue
        built[name] = package(trees / name, RECIPES.get(name))
    return built


def write_out(built: dict[str, Built], trees: Path, out: Path, *, prune: bool) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for b in built.values():
        (out / f"{b.name}-{b.version}.tgz").write_bytes(b.archive)
    if prune:
        keep = {f"{b.name}-{b.version}.tgz" for b in built.values()}
        for stale in out.glob("*.tgz"):
            if stale.name not in keep:
                stale.unlink()
    licences_src = trees / "LICENSES"
    if licences_src.is_dir():
        (out / "LICENSES").mkdir(exist_ok=True)
        for p in sorted(licences_src.iterdir()):
            (out / "LICENSES" / p.name).write_bytes(p.read_bytes())
        apache = licences_src / "NVIDIA-gpu-operator.txt"
        if apache.is_file():
            (out / "LICENSE").write_bytes(apache.read_bytes())
    licences = sorted(p.name for p in (out / "LICENSES").iterdir()) if (out / "LICENSES").is_dir() else []
    (out / "README.md").write_text(readme(built, licences))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--git-root", type=Path, help="folder holding the upstream git repositories")
    parser.add_argument(
        "--git-repo", action="append", default=[], metavar="OWNER/NAME=PATH", help="git directory of one repository"
    )
    parser.add_argument("--source", type=Path, help="package the chart trees in this folder (from --extract)")
    parser.add_argument("--extract", type=Path, metavar="TREES", help="only write the chart trees here")
    parser.add_argument("--out", type=Path, default=OUT, help="where the archives go (upstream/charts)")
    parser.add_argument("--only", action="append", help="only this chart (repeatable); implies no pruning")
    parser.add_argument("--check", action="store_true", help="rebuild, compare with --out, write nothing")
    args = parser.parse_args(argv)
    if (args.source is None) == (args.git_root is None and not args.git_repo):
        parser.error("give --git-root/--git-repo (from git) or --source (from extracted trees)")

    explicit = dict(item.split("=", 1) for item in args.git_repo)
    explicit = {k: Path(v) for k, v in explicit.items()}
    cache: dict[str, GitRepo] = {}

    def repos(repo: str) -> GitRepo:
        if repo not in cache:
            cache[repo] = GitRepo(find_git_dir(args.git_root, repo, explicit))
        return cache[repo]

    recipes = [RECIPES[n] for n in sorted(RECIPES) if not args.only or n in args.only]
    with tempfile.TemporaryDirectory() as tmp:
        trees = args.source
        if trees is None:
            trees = args.extract or Path(tmp) / "trees"
            extract(recipes, trees, repos)
            if args.extract:
                print(f"package-charts: chart trees in {trees}", file=sys.stderr)
                return 0
        built = build_all(trees, args.only)
        target = Path(tmp) / "out" if args.check else args.out
        if args.check and args.out.is_dir():
            shutil.copytree(args.out, target)
        write_out(built, trees, target, prune=not args.only)
        for b in built.values():
            print(f"{b.name}-{b.version}.tgz  {len(b.archive):>9,} bytes  sha256 {sha256(b.archive)}")
        if args.check:
            diff = compare(args.out, target)
            for line in diff:
                print(line)
            print(f"package-charts: {len(diff)} difference(s) from {args.out}", file=sys.stderr)
            return 1 if diff else 0
    return 0


def compare(have: Path, want: Path) -> list[str]:
    def listing(d: Path) -> dict[str, bytes]:
        return {p.relative_to(d).as_posix(): p.read_bytes() for p in d.rglob("*") if p.is_file()} if d.is_dir() else {}

    a, b = listing(have), listing(want)
    return [
        f"{'add' if k not in a else 'delete' if k not in b else 'update':7} {k}"
        for k in sorted(set(a) | set(b))
        if a.get(k) != b.get(k)
    ]


if __name__ == "__main__":
    sys.exit(main())
