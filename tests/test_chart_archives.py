"""The packaged charts in ``upstream/charts/`` (one archive per chart ``components/data/versions.py`` pins).

A clone deploys from these archives with no chart repository reachable, so they must be the pinned releases:
named ``<chart>-<version>.tgz``, carrying that name and version, with the ``values.yaml`` (and ``Chart.yaml``) the
reference copies in ``upstream/<chart>/`` hold, changed only where the upstream release job changes them (the
stamping ``scripts/package_charts.py`` applies; each expected change is written out below, not derived from the
script), their dependencies bundled at the versions their ``Chart.yaml`` asks for, nothing that could unpack
outside the chart folder, and the digests ``upstream/charts/README.md`` lists. The last group checks the packager's
Helm semantics (``.helmignore``, symlinks, sub-charts, YAML edits) on small trees.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import io
import re
import sys
import tarfile
from functools import cache

import pytest
import yaml
from conftest import ROOT, UPSTREAM

from components.data import versions

CHARTS_DIR = UPSTREAM / "charts"
SCRIPT = ROOT / "scripts" / "package_charts.py"
# the pinned charts upstream/charts/ holds: all but those listed, with why, in versions.NOT_BUNDLED
PINNED = sorted((c for c in versions.CHARTS.values() if c.key not in versions.NOT_BUNDLED), key=lambda c: c.key)


def test_the_charts_not_bundled_are_pinned_and_say_why():
    """An exception names a pinned chart and a reason; ``chartSource: bundled`` is refused for a stack that needs it
    (the loader names the missing archive), not silently broken."""
    assert set(versions.NOT_BUNDLED) <= set(versions.CHARTS)
    assert all(len(why) > 40 for why in versions.NOT_BUNDLED.values())
    for key in versions.NOT_BUNDLED:
        chart = versions.CHARTS[key]
        assert not (CHARTS_DIR / f"{chart.chart.rsplit('/', 1)[-1]}-{chart.version}.tgz").exists()


def _load_script():
    if str(SCRIPT.parent) not in sys.path:  # it imports its sibling modules (chart_recipes, chart_tar, ...) by name
        sys.path.insert(0, str(SCRIPT.parent))
    spec = importlib.util.spec_from_file_location("package_charts", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


package_charts = _load_script()


def chart_name(chart: versions.Chart) -> str:
    return chart.chart.rsplit("/", 1)[-1]  # the last segment of an oci:// reference is the chart's name


@cache
def members(path) -> tuple[tarfile.TarInfo, ...]:
    with tarfile.open(path, "r:gz") as tar:
        return tuple(tar.getmembers())


@cache
def contents(path) -> dict[str, bytes]:
    """Every regular file of an archive, by its path inside the archive."""
    with tarfile.open(path, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def chart_yaml(path, prefix: str = "") -> dict:
    top = members(path)[0].name.split("/", 1)[0]
    return yaml.safe_load(contents(path)[f"{top}/{prefix}Chart.yaml"])


def archives() -> list:
    return sorted(CHARTS_DIR.glob("*.tgz"))


def archive_of(chart: versions.Chart):
    return CHARTS_DIR / f"{chart_name(chart)}-{chart.version}.tgz"


def test_there_are_archives_to_check():
    assert len(archives()) >= 9
    assert {chart_name(c) for c in PINNED} >= {"gpu-operator", "kueue", "karpenter", "kube-prometheus-stack"}


@pytest.mark.parametrize("chart", PINNED, ids=lambda c: c.key)
def test_each_pinned_chart_has_exactly_one_archive_of_its_pinned_version(chart):
    same_name = [p.name for p in archives() if chart_yaml(p)["name"] == chart_name(chart)]
    assert same_name == [f"{chart_name(chart)}-{chart.version}.tgz"]


def test_every_archive_is_a_pinned_chart():
    pinned = {f"{chart_name(c)}-{c.version}.tgz" for c in PINNED}
    assert {p.name for p in archives()} == pinned


@pytest.mark.parametrize("chart", PINNED, ids=lambda c: c.key)
def test_the_archives_chart_yaml_names_the_pinned_release(chart):
    meta = chart_yaml(archive_of(chart))
    assert (meta["name"], str(meta["version"])) == (chart_name(chart), chart.version)
    assert members(archive_of(chart))[0].name.split("/", 1)[0] == chart_name(chart)
    # no development placeholder left over from git (gpu-operator's v1.0.0-devel / main-latest)
    assert not re.search(r"devel|latest", str(meta["version"]) + str(meta.get("appVersion", "")))


# values.yaml: upstream/<chart>/values.yaml is the chart as committed at its release tag (karpenter: main, where
# upstream committed the stamped file). The archive must equal it except for these changes, each line as expected.
KUEUE_VALUES_STAMPING = [  # hack/helm-chart-package.sh: registry.k8s.io images at the release tag, IfNotPresent
    ("      repository: us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueue\n",
     "      repository: registry.k8s.io/kueue/kueue\n"),
    ('      repository: "us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueueviz-backend"\n',
     '      repository: "registry.k8s.io/kueue/kueueviz-backend"\n'),
    ('      repository: "us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueueviz-frontend"\n',
     '      repository: "registry.k8s.io/kueue/kueueviz-frontend"\n'),
    ("      tag: release-0.19\n", "      tag: v0.19.2\n"),  # three times: manager, kueueViz backend and frontend
    ("      pullPolicy: Always\n", "      pullPolicy: IfNotPresent\n"),  # three times
]  # fmt: skip
# hack/helm-chart-package.sh (jobset v0.12.0), hack/push-chart.sh (lws v0.9.0): yq sets the promoted image, the tag
# and IfNotPresent when the release chart is packaged
VALUES_STAMPING = {
    "jobset": [
        ("  repository: us-central1-docker.pkg.dev/k8s-staging-images/jobset/jobset\n",
         "  repository: registry.k8s.io/jobset/jobset\n"),
        ("  pullPolicy: Always\n", "  pullPolicy: IfNotPresent\n"),
        ("  tag: main\n", "  tag: v0.12.0\n"),
    ],
    "lws": [
        ("    tag: main\n", "    tag: v0.9.0\n"),
        ("    pullPolicy: Always\n", "    pullPolicy: IfNotPresent\n"),
    ],
}  # fmt: skip
KARPENTER_UNRELEASED = (  # on main after the v1.14.1 tag (0156bcf5e); the 1.14.1 templates do not read it
    "  # -- AWS-specific Feature Gate configuration values.\n"
    "  awsFeatureGates:\n"
    "    # -- nodeClassCEL is ALPHA and is disabled by default.\n"
    "    # Setting this to true will enable CEL validation on EC2NodeClass resources.\n"
    "    nodeClassCEL: false\n"
)


def expected_values(name: str) -> str:
    text = (UPSTREAM / name / "values.yaml").read_bytes().decode()  # bytes: volcano's file has CRLF line ends
    if name == "kueue":
        for old, new in KUEUE_VALUES_STAMPING:
            assert old in text
            text = text.replace(old, new)
    for old, new in VALUES_STAMPING.get(name, []):
        assert text.count(old) == 1
        text = text.replace(old, new)
    if name == "karpenter":
        assert text.count(KARPENTER_UNRELEASED) == 1
        text = text.replace(KARPENTER_UNRELEASED, "")
    return text


@pytest.mark.parametrize("chart", PINNED, ids=lambda c: c.key)
def test_values_yaml_is_the_reference_copy_with_only_the_release_stamping(chart):
    name = chart_name(chart)
    reference = UPSTREAM / name / "values.yaml"
    if not reference.is_file():
        pytest.skip(f"no reference values.yaml in upstream/{name}/")
    assert contents(archive_of(chart))[f"{name}/values.yaml"].decode() == expected_values(name)


def test_the_stamped_images_are_the_released_ones():
    kueue = yaml.safe_load(contents(archive_of(versions.KUEUE))["kueue/values.yaml"])
    manager = kueue["controllerManager"]["manager"]["image"]
    assert (manager["repository"], manager["tag"], manager["pullPolicy"]) == (
        "registry.k8s.io/kueue/kueue",
        "v0.19.2",
        "IfNotPresent",
    )
    karpenter = yaml.safe_load(contents(archive_of(versions.KARPENTER))["karpenter/values.yaml"])
    assert karpenter["controller"]["image"]["tag"] == versions.KARPENTER.version
    assert karpenter["controller"]["image"]["digest"].startswith("sha256:7231309")


# Chart.yaml: the reference copy byte for byte, but for gpu-operator's version/appVersion, which git leaves as
# placeholders and `helm package --version v26.7.0 --app-version v26.7.0` stamps (lws's version, jobset's
# appVersion likewise).
CHART_YAML_STAMPING = {
    "gpu-operator": [
        ("version: v1.0.0-devel\n", "version: v26.7.0\n"),
        ('appVersion: "main-latest"\n', 'appVersion: "v26.7.0"\n'),
    ],
    "lws": [("version: 0.1.0\n", "version: v0.9.0\n")],
    # `helm package --app-version v0.12.0` on a Chart.yaml without one: the key added (at the end here)
    "jobset": [("  url: https://github.com/kannon92\n", "  url: https://github.com/kannon92\nappVersion: v0.12.0\n")],
}


@pytest.mark.parametrize("chart", PINNED, ids=lambda c: c.key)
def test_chart_yaml_is_the_reference_copy_with_only_the_release_stamping(chart):
    name = chart_name(chart)
    reference = UPSTREAM / name / "Chart.yaml"
    if not reference.is_file():
        pytest.skip(f"no reference Chart.yaml in upstream/{name}/")
    text = reference.read_bytes().decode()
    for old, new in CHART_YAML_STAMPING.get(name, []):
        assert text.count(old) == 1
        text = text.replace(old, new)
    assert contents(archive_of(chart))[f"{name}/Chart.yaml"].decode() == text


# Sub-charts with a reference copy: upstream/<chart>/<sub-chart>/.
SUBCHART_REFERENCES = [
    ("gpu-operator", "node-feature-discovery", ("Chart.yaml", "values.yaml", "values.schema.json")),
    ("kube-prometheus-stack", "grafana", ("Chart.yaml", "values.yaml")),
    ("kube-prometheus-stack", "kube-state-metrics", ("Chart.yaml", "values.yaml")),
    ("kube-prometheus-stack", "prometheus-node-exporter", ("Chart.yaml", "values.yaml")),
]


@pytest.mark.parametrize(
    ("parent", "sub", "files"), SUBCHART_REFERENCES, ids=[f"{p}-{s}" for p, s, _ in SUBCHART_REFERENCES]
)
def test_bundled_subcharts_are_the_reference_copies(parent, sub, files):
    chart = next(c for c in PINNED if chart_name(c) == parent)
    inside = contents(archive_of(chart))
    for f in files:
        assert inside[f"{parent}/charts/{sub}/{f}"] == (UPSTREAM / parent / sub / f).read_bytes(), f


def _satisfies(version: str, constraint: str) -> bool:
    if re.fullmatch(r"v?\d+\.\d+\.\d+", constraint):
        # an exact version; Helm parses a "v" prefix as the same semver (kubeflow-trainer asks for lws 0.8.0, whose
        # release chart is v0.8.0)
        return version.removeprefix("v") == constraint.removeprefix("v")
    m = re.fullmatch(r"(\d+)\.(\d+)\.\*", constraint)
    if m:
        return re.fullmatch(rf"{m[1]}\.{m[2]}\.\d+", version) is not None
    raise AssertionError(f"constraint {constraint!r}: teach this test its form")


@pytest.mark.parametrize("path", archives(), ids=lambda p: p.name)
def test_every_dependency_is_bundled_at_the_version_chart_yaml_asks_for(path):
    meta = chart_yaml(path)
    names = {m.name.split("/")[2] for m in members(path) if m.name.split("/")[1:2] == ["charts"]}
    wanted = {d["name"] for d in meta.get("dependencies") or []}
    assert names == wanted  # nothing missing, nothing extra
    for dep in meta.get("dependencies") or []:
        sub = chart_yaml(path, f"charts/{dep['name']}/")
        assert sub["name"] == dep["name"]
        assert _satisfies(str(sub["version"]), str(dep["version"])), (dep, sub["version"])


def test_kube_prometheus_stack_bundles_all_five_dependencies_as_folders():
    inside = contents(archive_of(versions.KUBE_PROMETHEUS_STACK))
    subs = {n.split("/")[2] for n in inside if n.startswith("kube-prometheus-stack/charts/")}
    assert subs == {"crds", "kube-state-metrics", "prometheus-node-exporter", "grafana", "prometheus-windows-exporter"}
    assert not any(n.endswith(".tgz") for n in inside)  # helm package writes every dependency as a folder
    assert "kube-prometheus-stack/charts/crds/crds/crd-servicemonitors.yaml" in inside
    # the chart's .helmignore kept its development files out; each sub-chart's own .helmignore applied to it
    assert not any(re.search(r"^kube-prometheus-stack/(hack|ci|unittests)/", n) for n in inside)
    assert not any(n.startswith("kube-prometheus-stack/charts/crds/unittests/") for n in inside)
    assert not any(n.startswith("kube-prometheus-stack/charts/grafana/ci/") for n in inside)


@pytest.mark.parametrize("path", archives(), ids=lambda p: p.name)
def test_archive_entries_stay_inside_the_chart_folder_and_are_plain_files(path):
    top = chart_yaml(path)["name"]
    for m in members(path):
        assert m.isfile(), f"{m.name}: not a regular file (symlink, link, device or directory)"
        assert not m.name.startswith("/") and "\\" not in m.name
        assert ".." not in m.name.split("/")
        assert m.name.startswith(f"{top}/")
        assert (m.mode, m.uid, m.gid, m.uname, m.gname, m.mtime) == (0o644, 0, 0, "", "", 0), m.name


@pytest.mark.parametrize("path", archives(), ids=lambda p: p.name)
def test_archive_is_in_the_packagers_canonical_form(path):
    """Sorted entries, fixed metadata, gzip without name or time: re-packing its own files gives the same tar."""
    raw = path.read_bytes()
    assert raw[:2] == b"\x1f\x8b" and raw[3] == 0 and raw[4:8] == b"\0\0\0\0"  # no FNAME flag, mtime 0
    names = [m.name for m in members(path)]
    assert names == sorted(names)
    top = names[0].split("/", 1)[0]
    files = {n[len(top) + 1 :]: data for n, data in contents(path).items()}
    assert package_charts.tar_bytes(top, files) == gzip.decompress(raw)


def readme_rows() -> dict[str, dict[str, str]]:
    text = (CHARTS_DIR / "README.md").read_text()
    table = text.split("\n## Archives\n", 1)[1].split("\n## ", 1)[0]
    header = next(line for line in table.splitlines() if line.startswith("| archive |"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    rows = {}
    for line in table.splitlines():
        if line.startswith("| `"):
            cells = dict(zip(columns, (c.strip().strip("`") for c in line.strip("|").split("|")), strict=True))
            rows[cells["archive"]] = cells
    return rows


def test_the_readme_lists_every_archive_with_its_sha256_and_size():
    rows = readme_rows()
    assert set(rows) == {p.name for p in archives()}
    for p in archives():
        raw = p.read_bytes()
        assert rows[p.name]["sha256"] == hashlib.sha256(raw).hexdigest(), p.name
        assert rows[p.name]["tar sha256"] == hashlib.sha256(gzip.decompress(raw)).hexdigest(), p.name
        assert int(rows[p.name]["bytes"].replace(",", "")) == len(raw), p.name
        assert re.fullmatch(r"[0-9a-f]{40}", rows[p.name]["commit (date)"].split("`")[0].split()[0]), p.name


def test_the_archives_stay_small():
    assert sum(p.stat().st_size for p in archives()) < 6 * 1024 * 1024


def test_every_licence_text_is_apache_2_and_named_in_the_readme():
    readme = (CHARTS_DIR / "README.md").read_text()
    texts = sorted((CHARTS_DIR / "LICENSES").glob("*.txt"))
    repos = {p.name.split(".")[0] for p in texts}
    assert {
        "NVIDIA-gpu-operator",
        "kubernetes-sigs-kueue",
        "prometheus-community-helm-charts",
        "aws-eks-charts",
    } <= repos
    for p in [CHARTS_DIR / "LICENSE", *texts]:
        assert f"`{p.relative_to(CHARTS_DIR).as_posix()}`" in readme
        if not p.name.endswith(".NOTICE.txt"):
            assert p.read_text().lstrip().startswith("Apache License"), p.name


def test_the_refresh_script_leaves_the_archives_alone():
    spec = importlib.util.spec_from_file_location("refresh_upstream", ROOT / "scripts" / "refresh_upstream.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert "charts" in module.PROJECT_ADDED
    assert not any(path.startswith("charts/") for path in module.current_files(UPSTREAM))


# ------------------------------------------------------------------------------ the packager's Helm semantics


def _tree(tmp_path, files: dict[str, str]):
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def _names(built) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(built.archive), mode="r:gz") as tar:
        return tar.getnames()


def test_helmignore_follows_helms_rules(tmp_path):
    rules = package_charts.IgnoreRules.parse("ci/\n*.tgz\n/ROOT.md\nfiles/dashboards/\ntests/*\n# comment\n")
    assert rules.ignore("ci", True) and not rules.ignore("ci", False)  # trailing /: directories only
    assert rules.ignore("charts/sub/ci", True)  # no other /: the base name, at any depth
    assert rules.ignore("charts/x-1.0.0.tgz", False)
    assert rules.ignore("ROOT.md", False) and not rules.ignore("docs/ROOT.md", False)  # leading /: from the root
    assert rules.ignore("files/dashboards", True) and not rules.ignore("x/files/dashboards", True)
    assert rules.ignore("tests/a.yaml", False) and not rules.ignore("tests/a/b.yaml", False)  # * stops at /
    assert rules.ignore("templates/.hidden", False)  # Helm's default rule
    assert not rules.ignore("templates/ok.yaml", False)
    with pytest.raises(ValueError, match="double-star"):
        package_charts.IgnoreRules.parse("**/x\n")


def test_packaging_follows_symlinks_expands_tgz_dependencies_and_is_deterministic(tmp_path):
    dep = _tree(
        tmp_path / "dep", {"Chart.yaml": "apiVersion: v2\nname: dep\nversion: 1.0.0\n", "values.yaml": "a: 1\n"}
    )
    dep_built = package_charts.package(dep)
    chart = _tree(
        tmp_path / "top",
        {
            "Chart.yaml": "apiVersion: v2\nname: top\nversion: 0.1.0\n",
            "values.yaml": "\ufeffb: 2\n",
            ".helmignore": "ci/\n",
            "ci/values.yaml": "x\n",
            "crd/bases/a.yaml": "kind: CustomResourceDefinition\n",
            "charts/inline/Chart.yaml": "apiVersion: v2\nname: inline\nversion: 2.0.0\n",
            "charts/README.md": "not a chart\n",
            "charts/_skipped/Chart.yaml": "apiVersion: v2\nname: skipped\nversion: 1.0.0\n",
        },
    )
    (chart / "crd" / "v1").symlink_to("bases")
    (chart / "charts" / "dep-1.0.0.tgz").write_bytes(dep_built.archive)
    built = package_charts.package(chart)
    assert _names(built) == [
        f"top/{n}"
        for n in (
            ".helmignore",
            "Chart.yaml",
            "charts/dep/Chart.yaml",
            "charts/dep/values.yaml",
            "charts/inline/Chart.yaml",
            "crd/bases/a.yaml",
            "crd/v1/a.yaml",
            "values.yaml",
        )
    ]
    with tarfile.open(fileobj=io.BytesIO(built.archive), mode="r:gz") as tar:
        assert tar.extractfile("top/values.yaml").read() == b"b: 2\n"  # the BOM is dropped, as Helm does
    assert package_charts.package(chart).archive == built.archive


def test_yaml_edits_change_the_one_value_and_keep_its_quoting():
    text = 'a:\n  image:\n    # the tag\n    tag: old  # why\n    repo: "x/y"\nb:\n  image:\n    tag: other\n'
    edited = package_charts.set_scalar(text, ("a", "image", "tag"), "v1")
    edited = package_charts.set_scalar(edited, ("a", "image", "repo"), "r/z")
    assert edited == 'a:\n  image:\n    # the tag\n    tag: v1  # why\n    repo: "r/z"\nb:\n  image:\n    tag: other\n'
    with pytest.raises(ValueError, match="not found"):
        package_charts.set_scalar(text, ("a", "image", "digest"), "sha256:0")
