#!/usr/bin/env python3
"""Package every pinned Helm chart as a deterministic archive in ``upstream/charts/`` (a clone deploys offline).

Re-create the archives, byte for byte, from the upstream git repositories (each at the commit in ``RECIPES``):

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
3. *Stamp* what the upstream release job changes before or during ``helm package`` (``Recipe.stamp``, each with the
   upstream file it follows): ``--version``/``--app-version`` and yq/sed edits of ``values.yaml``. Edits are made on
   the text (the value on the one line, quoting kept, as yq keeps a scalar's style), so every other byte stays as
   upstream committed it.
4. *Write* a gzip'd tar: entries sorted, all under ``<chart>/``, regular files only (Helm writes no directory
   entries), mode 0644, uid/gid 0, empty user/group names, mtime 0; PAX format; gzip level 9 with mtime 0 and no
   file name. Same input, same bytes (with the same zlib; README.md also lists the sha256 of the uncompressed tar).

Differences from the archive the upstream release job publishes, all without effect on what Helm renders:
``helm package`` re-serialises ``Chart.yaml`` and ``Chart.lock`` (keys sorted, quoting normalised), stamps the
current time and keeps its own file order and gzip settings; kube-prometheus-stack's release job also writes a
``Chart.lock`` (dependency resolution time), which is not in git and so not here.

Standard library only (Python 3.11+) plus the ``git`` command for ``--git-root``.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import os
import posixpath
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "upstream" / "charts"
UTF8_BOM = b"\xef\xbb\xbf"
HELMIGNORE = ".helmignore"
DEFAULT_IGNORE = ("templates/.?*",)  # pkg/ignore/rules.go AddDefaults
GZIP_LEVEL = 9


# ----------------------------------------------------------------------------------------------- recipes


@dataclass(frozen=True)
class Source:
    repo: str  # owner/name on GitHub
    ref: str  # the release tag (or, without one, the commit's description)
    commit: str  # the commit the tag points at: what is packaged
    path: str  # the chart folder in the repository
    date: str  # commit date, for the README


Edit = tuple[str, tuple[str, ...], str]  # (file, YAML key path, new scalar value)


@dataclass(frozen=True)
class Recipe:
    name: str  # Chart.yaml name
    version: str  # released chart version (the archive's)
    source: Source
    licence: str = "Apache-2.0"
    # release stamping (see the module docstring, step 3)
    chart_version: str | None = None  # helm package --version
    app_version: str | None = None  # helm package --app-version
    edits: tuple[Edit, ...] = ()  # yq-style "<path> = <value>" edits, in order
    seds: tuple[tuple[str, str, str], ...] = ()  # (file, old text, new text): sed s|old|new|g
    stamping: str = "none: the chart in git is the released chart"  # for the README, naming the upstream file
    deps: tuple[Recipe, ...] = ()  # dependencies fetched from a chart repository at release time
    in_tree: tuple[str, ...] = ()  # sub-charts committed under charts/, for the README
    notes: str = ""
    # how the archive's Chart.yaml / values.yaml compare with upstream/<name>/ (tests/test_chart_archives.py checks)
    reference: str = "`Chart.yaml` and `values.yaml` byte-identical to `upstream/{name}/`"

    @property
    def archive(self) -> str:
        return f"{self.name}-{self.version}.tgz"


KUEUE_TAG = "v0.19.2"
KARPENTER_DIGEST = "sha256:723130949e4cab989461ff07d1be4cd781d63515432494641b33c235f300ae23"

GPU_OPERATOR = Recipe(
    name="gpu-operator",
    version="v26.7.0",
    source=Source(
        "NVIDIA/gpu-operator",
        "v26.7.0",
        "10ee5b3638b89e11e949412aafa5ba99279c3721",
        "deployments/gpu-operator",
        "2026-08-20",
    ),
    # git carries placeholders (version v1.0.0-devel, appVersion "main-latest"); the release packages the chart with
    # `helm package --version <tag> --app-version <tag>` (.github/workflows/publish-helm-oci-chart.yaml does the same
    # for its dev builds; upstream/README.md, Versions). operator.version is unset, so the image tag is appVersion.
    chart_version="v26.7.0",
    app_version="v26.7.0",
    stamping='Chart.yaml `version: v1.0.0-devel` -> `v26.7.0`, `appVersion: "main-latest"` -> `"v26.7.0"` '
    "(`helm package --version v26.7.0 --app-version v26.7.0`, as `.github/workflows/publish-helm-oci-chart.yaml`)",
    reference="`values.yaml` byte-identical to `upstream/gpu-operator/`; `Chart.yaml` differs by the two stamped "
    "lines only; `charts/node-feature-discovery/` `Chart.yaml`, `values.yaml`, `values.schema.json` byte-identical "
    "to `upstream/gpu-operator/node-feature-discovery/`",
    in_tree=(
        "node-feature-discovery 0.19.0 (appVersion v0.19.0): committed as `deployments/gpu-operator/charts/"
        "node-feature-discovery/` (Chart.lock: `oci://registry.k8s.io/nfd/charts` 0.19.0, kubernetes-sigs/"
        "node-feature-discovery v0.19.0), packaged as committed. It is that release chart unpacked: every file is "
        "byte-identical to node-feature-discovery `v0.19.0` (`45d276ed9d3f`, 2026-07-10) "
        "`deployment/helm/node-feature-discovery/` but `Chart.yaml` (Helm-serialised, version 0.19.0 stamped), and "
        "the four `*.gotmpl` files its `.helmignore` keeps out are absent",
    ),
)
DCGM_EXPORTER = Recipe(
    name="dcgm-exporter",
    version="4.8.2",
    source=Source(
        "NVIDIA/dcgm-exporter", "4.5.3-4.8.2", "691c92762eb551313c825f6efe4ceeee20982801", "deployment", "2026-05-06"
    ),
)
KUEUE = Recipe(
    name="kueue",
    version="0.19.2",
    source=Source(
        "kubernetes-sigs/kueue", KUEUE_TAG, "8eab68778fc1b52affe165fdf5af29d1e9b4f3cb", "charts/kueue", "2026-08-20"
    ),
    # hack/helm-chart-package.sh (at the tag): a tag matching ^v[0-9]+(\.[0-9]+){1,2}$ sets IMAGE_REGISTRY to
    # registry.k8s.io/kueue, then yq sets the controller and KueueViz images to ${IMAGE_REGISTRY}/<image>:${GIT_TAG}
    # with pullPolicy IfNotPresent, and runs `helm package --version 0.19.2 --app-version v0.19.2` (Chart.yaml
    # already says so). The kueue-populator and kueue-priority-booster charts it also packages are not used here.
    chart_version="0.19.2",
    app_version=KUEUE_TAG,
    edits=(
        ("values.yaml", ("controllerManager", "manager", "image", "repository"), "registry.k8s.io/kueue/kueue"),
        ("values.yaml", ("controllerManager", "manager", "image", "tag"), KUEUE_TAG),
        ("values.yaml", ("controllerManager", "manager", "image", "pullPolicy"), "IfNotPresent"),
        ("values.yaml", ("kueueViz", "backend", "image", "repository"), "registry.k8s.io/kueue/kueueviz-backend"),
        ("values.yaml", ("kueueViz", "backend", "image", "tag"), KUEUE_TAG),
        ("values.yaml", ("kueueViz", "backend", "image", "pullPolicy"), "IfNotPresent"),
        ("values.yaml", ("kueueViz", "frontend", "image", "repository"), "registry.k8s.io/kueue/kueueviz-frontend"),
        ("values.yaml", ("kueueViz", "frontend", "image", "tag"), KUEUE_TAG),
        ("values.yaml", ("kueueViz", "frontend", "image", "pullPolicy"), "IfNotPresent"),
    ),
    reference="`Chart.yaml` byte-identical to `upstream/kueue/`; `values.yaml` differs by the 9 stamped lines only "
    "(upstream/ has the chart as in git, with the staging images)",
    stamping="values.yaml: `controllerManager.manager.image`, `kueueViz.backend.image`, `kueueViz.frontend.image` "
    "-> `registry.k8s.io/kueue/<image>`, tag `v0.19.2`, pullPolicy `IfNotPresent` (9 values; yq in "
    "`hack/helm-chart-package.sh`); `helm package --version 0.19.2 --app-version v0.19.2` (Chart.yaml unchanged)",
)
VOLCANO = Recipe(
    name="volcano",
    version="1.15.1",
    source=Source(
        "volcano-sh/volcano",
        "v1.15.1",
        "0a56ed331897f5455916a44d3075671376d731d6",
        "installer/helm/chart/volcano",
        "2026-07-30",
    ),
    # hack/generate-charts.sh (run by .github/workflows/release_chart.yaml with TAG=1.15.1): sed
    # `image_tag_version: "latest"` -> "v1.15.1" in every values.yaml, then `helm package --version 1.15.1
    # --app-version 1.15.1`. At this tag both are already in git, so the stamping changes nothing.
    chart_version="1.15.1",
    app_version="1.15.1",
    seds=(("values.yaml", 'image_tag_version: "latest"', 'image_tag_version: "v1.15.1"'),),
    stamping='`hack/generate-charts.sh`: sed `image_tag_version: "latest"` -> `"v1.15.1"` and `helm package '
    "--version 1.15.1 --app-version 1.15.1`; both already so in git at the tag (no byte changes)",
    in_tree=(
        "jobflow 1.0.0 (appVersion 0.1): committed as `installer/helm/chart/volcano/charts/jobflow/` "
        "(Chart.yaml dependency `file://./charts/jobflow`)",
    ),
    notes="`crd/v1` and `charts/jobflow/crd/v1` are symlinks to `bases` in git; Helm follows them, so the "
    "archive holds the CRDs under both names, as the released chart does.",
)
KARPENTER_SOURCE = Source(
    "aws/karpenter-provider-aws",
    "v1.14.1",
    "bde00654cd316fddb3dccfba3f5ac07039865429",
    "charts/karpenter",
    "2026-08-20",
)
KARPENTER_STAMPING = (
    "`hack/release/common.sh` (`build`, `publishHelmChart`): yq sets Chart.yaml `version`/`appVersion` "
    "`1.13.0` -> `1.14.1`"
)
KARPENTER = Recipe(
    name="karpenter",
    version="1.14.1",
    source=KARPENTER_SOURCE,
    # hack/release/common.sh at the tag: `build` publishes the controller image with ko, then yq sets
    # .controller.image.repository/.tag/.digest in values.yaml; `publishHelmChart` sets .appVersion and .version in
    # Chart.yaml with yq and runs `helm package`. The tag still says 1.13.0 (the release job does not commit); the
    # published digest is the one upstream committed on main afterwards (1d927085dd81, "docs: update for patch
    # release v1.14.1", charts/karpenter/values.yaml; upstream/karpenter/values.yaml is that file).
    chart_version="1.14.1",
    app_version="1.14.1",
    edits=(
        ("Chart.yaml", ("appVersion",), "1.14.1"),
        ("Chart.yaml", ("version",), "1.14.1"),
        ("values.yaml", ("controller", "image", "repository"), "public.ecr.aws/karpenter/controller"),
        ("values.yaml", ("controller", "image", "tag"), "1.14.1"),
        ("values.yaml", ("controller", "image", "digest"), KARPENTER_DIGEST),
    ),
    stamping=KARPENTER_STAMPING + "; values.yaml `controller.image.tag` `1.13.0` -> `1.14.1`, "
    "`controller.image.digest` -> `" + KARPENTER_DIGEST + "` (the published image; as committed on main at "
    "`1d927085dd81`)",
    notes="`crds/*.yaml` are symlinks to `pkg/apis/crds/` in git, packaged as the files they point at.",
    reference="`Chart.yaml` byte-identical to `upstream/karpenter/` (taken there from main `1d927085dd81`, which "
    "committed the stamped file); `values.yaml` lacks the 5 lines `settings.awsFeatureGates.nodeClassCEL: false` "
    "(with its comments) that `upstream/karpenter/values.yaml` has from main: that key came after the v1.14.1 tag "
    '(commit `0156bcf5e`, "add aws specific feature gates"), the 1.14.1 templates do not read it, and the released '
    "chart is the tag's. Otherwise the same bytes",
)
KARPENTER_CRD = Recipe(
    name="karpenter-crd",
    version="1.14.1",
    source=Source(
        KARPENTER_SOURCE.repo,
        KARPENTER_SOURCE.ref,
        KARPENTER_SOURCE.commit,
        "charts/karpenter-crd",
        KARPENTER_SOURCE.date,
    ),
    chart_version="1.14.1",
    app_version="1.14.1",
    edits=(
        ("Chart.yaml", ("appVersion",), "1.14.1"),
        ("Chart.yaml", ("version",), "1.14.1"),
    ),
    stamping=KARPENTER_STAMPING,
    reference="no reference folder in `upstream/` (its CRDs are `upstream/crds/karpenter/`)",
)
CLUSTER_AUTOSCALER = Recipe(
    name="cluster-autoscaler",
    version="9.59.0",
    source=Source(
        "kubernetes/autoscaler",
        "cluster-autoscaler-chart-9.59.0",
        "5a0b98e45f896e98132737240ac131a519d3b33d",
        "cluster-autoscaler/charts/cluster-autoscaler",
        "2026-07-21",
    ),
)
EFA_DEVICE_PLUGIN = Recipe(
    name="aws-efa-k8s-device-plugin",
    version="v0.5.30",
    # eks-charts has no chart tags: scripts/package-charts.sh packages stable/* as committed on every release. This
    # is the commit that set version v0.5.30; the folder is unchanged (same tree) at 5239609242f3, the commit
    # upstream/aws-efa-k8s-device-plugin/ was copied from.
    source=Source(
        "aws/eks-charts",
        "",
        "bfe91c4b9257c80f754ad4b3d6a9a3c239b2b8ec",
        "stable/aws-efa-k8s-device-plugin",
        "2026-07-21",
    ),
    notes="aws/eks-charts tags no chart releases (its release job packages `stable/*` on every push): "
    "`bfe91c4b9257` is the commit that set `version: v0.5.30`; the chart folder is the same git tree "
    "(`163ff055569d`) at `5239609242f3`, the commit `upstream/aws-efa-k8s-device-plugin/` names.",
)
PROMETHEUS_COMMUNITY = "prometheus-community/helm-charts"
KUBE_STATE_METRICS = Recipe(
    name="kube-state-metrics",
    version="8.4.0",
    source=Source(
        PROMETHEUS_COMMUNITY,
        "kube-state-metrics-8.4.0",
        "1982f1c5828920f5d4ea5d04956169e81f8c5129",
        "charts/kube-state-metrics",
        "2026-08-18",
    ),
)
NODE_EXPORTER = Recipe(
    name="prometheus-node-exporter",
    version="4.56.1",
    source=Source(
        PROMETHEUS_COMMUNITY,
        "prometheus-node-exporter-4.56.1",
        "8b8e639cac80a3001412f187060068978f649a55",
        "charts/prometheus-node-exporter",
        "2026-07-14",
    ),
)
GRAFANA = Recipe(
    name="grafana",
    version="12.11.1",
    source=Source(
        "grafana-community/helm-charts",
        "grafana-12.11.1",
        "864f7794683680e5100a38670e103c4fa6e37e29",
        "charts/grafana",
        "2026-08-19",
    ),
)
WINDOWS_EXPORTER = Recipe(
    name="prometheus-windows-exporter",
    version="0.12.8",
    source=Source(
        PROMETHEUS_COMMUNITY,
        "prometheus-windows-exporter-0.12.8",
        "43a82e944bf3ca3aab1703613ca5cf09851b23ec",
        "charts/prometheus-windows-exporter",
        "2026-07-22",
    ),
    notes="kube-prometheus-stack asks for `0.12.*` and commits no Chart.lock; 0.12.8 (2026-07-22) is the newest "
    "0.12.x tagged before kube-prometheus-stack-88.5.3 was released (2026-08-21), so the one its release resolved.",
)
KUBE_PROMETHEUS_STACK = Recipe(
    name="kube-prometheus-stack",
    version="88.5.3",
    source=Source(
        PROMETHEUS_COMMUNITY,
        "kube-prometheus-stack-88.5.3",
        "ea930baeebeba39f56d6b44e351f23b2a072a600",
        "charts/kube-prometheus-stack",
        "2026-08-21",
    ),
    reference="`Chart.yaml` and `values.yaml` byte-identical to `upstream/kube-prometheus-stack/`, and those of "
    "`charts/grafana/`, `charts/kube-state-metrics/`, `charts/prometheus-node-exporter/` to "
    "`upstream/kube-prometheus-stack/<sub-chart>/`",
    # .github/workflows/release.yaml: chart-releaser (`cr package`, dependency update from the chart repositories)
    # packages the chart as committed; the dependencies are the released charts of their own tags.
    deps=(KUBE_STATE_METRICS, NODE_EXPORTER, GRAFANA, WINDOWS_EXPORTER),
    in_tree=("crds 0.0.0: committed as `charts/kube-prometheus-stack/charts/crds/` (a folder in the archive too)",),
    notes="The release job resolves the dependencies (`helm dependency update`) and so also packages a generated "
    "`Chart.lock`; git has none, and this archive neither (the dependency versions are those of Chart.yaml).",
)

# Every chart components/versions.py pins, by chart name. (dra-driver-nvidia-gpu is not installed as a chart:
# components/dra.py runs the GPU Operator's DRA driver instead.)
RECIPES: dict[str, Recipe] = {
    r.name: r
    for r in (
        GPU_OPERATOR,
        DCGM_EXPORTER,
        KUEUE,
        VOLCANO,
        KARPENTER,
        KARPENTER_CRD,
        CLUSTER_AUTOSCALER,
        EFA_DEVICE_PLUGIN,
        KUBE_PROMETHEUS_STACK,
    )
}


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
        chart = set_scalar(chart, ("appVersion",), recipe.app_version)
    files["Chart.yaml"] = chart.encode()
    return files


# ----------------------------------------------------------------------------------------------- writing


def tar_bytes(name: str, files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel in sorted(files):
            info = tarfile.TarInfo(f"{name}/{rel}")
            info.size = len(files[rel])
            info.mode = 0o644
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.type = tarfile.REGTYPE
            tar.addfile(info, io.BytesIO(files[rel]))
    return buf.getvalue()


def gzip_bytes(data: bytes) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=GZIP_LEVEL) as gz:
        gz.write(data)
    return buf.getvalue()


@dataclass(frozen=True)
class Built:
    name: str
    version: str
    archive: bytes
    tar_sha256: str
    files: int


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


# ----------------------------------------------------------------------------------------------- git


class GitRepo:
    def __init__(self, git_dir: Path):
        self.git_dir = git_dir

    def _git(self, *args: str, data: bytes | None = None) -> bytes:
        result = subprocess.run(
            ["git", f"--git-dir={self.git_dir}", *args], input=data, capture_output=True, check=False
        )
        if result.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)} in {self.git_dir}: {result.stderr.decode().strip()}")
        return result.stdout

    def has_commit(self, commit: str) -> bool:
        result = subprocess.run(
            ["git", f"--git-dir={self.git_dir}", "cat-file", "-e", f"{commit}^{{commit}}"],
            capture_output=True,
            check=False,
        )
        return result.returncode == 0

    def tag_commit(self, tag: str) -> str | None:
        result = subprocess.run(
            ["git", f"--git-dir={self.git_dir}", "rev-parse", "--verify", "-q", f"refs/tags/{tag}^{{commit}}"],
            capture_output=True,
            check=False,
        )
        return result.stdout.decode().strip() or None

    def entries(self, commit: str, path: str) -> list[tuple[str, str, str]]:
        """(mode, sha, path) of every blob under ``path`` (or the one at it)."""
        out = self._git("ls-tree", "-r", "-z", "--full-tree", commit, "--", path)
        rows = []
        for item in out.split(b"\0"):
            if not item:
                continue
            meta, name = item.decode().split("\t", 1)
            mode, kind, sha = meta.split()
            if kind != "blob":
                raise ValueError(f"{name}: {kind} entries (submodules) are not supported")
            if name == path or name.startswith(path.rstrip("/") + "/"):
                rows.append((mode, sha, name))
        return rows

    def blob(self, sha: str) -> bytes:
        return self._git("cat-file", "blob", sha)

    def tree_files(self, commit: str, path: str, depth: int = 0) -> dict[str, bytes]:
        """Files under ``path`` at ``commit``, relative to it, with symlinks resolved inside the commit."""
        if depth > 20:
            raise ValueError(f"symlink chain too deep at {path}")
        files: dict[str, bytes] = {}
        for mode, sha, name in self.entries(commit, path):
            rel = name[len(path) :].lstrip("/")
            if mode == "120000":
                target = posixpath.normpath(posixpath.join(posixpath.dirname(name), self.blob(sha).decode()))
                if target.startswith("../") or target == "..":
                    raise ValueError(f"{name} points outside the repository")
                resolved = self.tree_files(commit, target, depth + 1)
                if not resolved:
                    raise ValueError(f"{name} -> {target}: nothing there at {commit}")
                for sub, data in resolved.items():
                    files[posixpath.join(rel, sub) if sub else rel] = data
            else:
                files[rel] = self.blob(sha)
        return files


def find_git_dir(root: Path | None, repo: str, explicit: dict[str, Path]) -> Path:
    if repo in explicit:
        return explicit[repo]
    owner, name = repo.split("/")
    if root is not None:
        for candidate in (root / f"{owner}+{name}" / "repo", root / f"{owner}+{name}", root / owner / name):
            if candidate.is_dir():
                return candidate / ".git" if (candidate / ".git").is_dir() else candidate
    raise SystemExit(f"package-charts: no git directory for {repo} (use --git-root or --git-repo {repo}=PATH)")


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


# ----------------------------------------------------------------------------------------------- README


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def readme(built: dict[str, Built], licences: list[str]) -> str:
    total = sum(len(b.archive) for b in built.values())
    lines = [
        "# upstream/charts/: the pinned Helm charts, packaged",
        "",
        "Every chart `components/versions.py` pins, as a packaged chart archive (`<chart>-<version>.tgz`, the name",
        "`helm package` writes), so that a clone deploys with no chart repository reachable (stack setting",
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
