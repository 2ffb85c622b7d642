"""Every image the platform installs follows the registry setting (issue 39.2): with ``imageRegistry`` (or the
cloud's pull-through cache) an air-gapped cluster pulls nothing from the internet.

The references are walked as the charts render them: each Helm release's values as the platform renders them,
merged over the chart's own defaults (``values.yaml`` of the archive in ``upstream/charts/`` and of every sub-chart
its ``Chart.yaml`` dependencies enable), every image block composed the way the chart's templates compose it
(``<repository>/<image>:<version>`` for the GPU Operator's operands, ``<registry>/<repository>:<tag>`` where the
registry has a key of its own, Volcano's ``basic.image_registry``); and every ``image:`` of the objects the platform
writes itself. The expected registry comes from the stack file, never from the code under test."""

from __future__ import annotations

import copy
import functools
import io
import re
import tarfile
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from conftest import ROOT, render_config, stack_config

from components.data import chart_images, versions

MIRROR = "registry.lab.internal:5000/mirror"
IMAGE_KEYS = ("repository", "registry", "image", "tag", "version", "digest", "sha")


# -------------------------------------------------------------------------------------- the charts' own data


@functools.cache
def _archive(chart: str, version: str) -> dict[str, bytes]:
    name = chart.rsplit("/", 1)[-1]
    path = ROOT / chart if chart.endswith(".tgz") else ROOT / "upstream" / "charts" / f"{name}-{version}.tgz"
    if not path.exists() and any(c.name == name for k, c in versions.CHARTS.items() if k in versions.NOT_BUNDLED):
        # a chart upstream/ holds no copy of (versions.NOT_BUNDLED): the platform's values alone
        return {f"{name}/values.yaml": b"{}", f"{name}/Chart.yaml": yaml.safe_dump({"name": name}).encode()}
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def _merge(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = _merge(base.get(k), v) if k in base else copy.deepcopy(v)
        return out
    return copy.deepcopy(over)


def _enabled(values: dict[str, Any], condition: str | None) -> bool:
    """Helm's dependency condition: comma-separated paths, the first that resolves to a boolean decides; none: on
    (helm.sh/helm/v3 pkg/chartutil/dependencies.go processDependencyConditions)."""
    for path in (condition or "").split(","):
        node: Any = values
        for part in path.strip().split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, bool):
            return node
    return True


def chart_values(chart: str, version: str, ours: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the values the chart renders with: its defaults under ours; per enabled sub-chart, its merged values),
    with every sub-chart's own defaults merged under the parent's section for it, as Helm coalesces them."""
    files = _archive(chart, version)
    top = next(iter(files)).split("/")[0]
    values = _merge(yaml.safe_load(files[f"{top}/values.yaml"]) or {}, ours)
    meta = yaml.safe_load(files[f"{top}/Chart.yaml"])
    subcharts: dict[str, Any] = {}
    for dep in meta.get("dependencies") or []:
        if not _enabled(values, dep.get("condition")):
            continue
        own = files.get(f"{top}/charts/{dep['name']}/values.yaml")
        if own is None and any(n.startswith(f"{top}/charts/{dep['name']}/") for n in files):
            own = b"{}"  # a sub-chart without values (Volcano's jobflow: its CRDs only)
        if own is None:  # a packaged sub-chart (.tgz) inside the archive
            packed = next((n for n in files if re.fullmatch(rf"{top}/charts/{dep['name']}-[^/]*\.tgz", n)), None)
            assert packed is not None, f"{chart}: sub-chart {dep['name']} not in the archive"
            with tarfile.open(fileobj=io.BytesIO(files[packed])) as sub:
                own = sub.extractfile(f"{dep['name']}/values.yaml").read()  # type: ignore[union-attr]
        sub_values = _merge(yaml.safe_load(own) or {}, values.get(dep["name"]) or {})
        sub_values["global"] = _merge(sub_values.get("global") or {}, values.get("global") or {})
        subcharts[dep["name"]] = sub_values
    return values, subcharts


def _compose(block: dict[str, Any], global_registry: str | None) -> str | None:
    """One image block as the charts' templates write it; None for a block with no repository (unused)."""
    repo = block.get("repository")
    if not isinstance(repo, str) or not repo:
        return None
    registry = global_registry or block.get("registry")
    ref = f"{registry}/{repo}" if isinstance(registry, str) and registry else repo
    if isinstance(block.get("image"), str) and block["image"]:
        ref = f"{ref}/{block['image']}"  # the GPU Operator: <repository>/<image>:<version>
    return ref


def image_refs(values: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(values path, the image's registry and repository) of every image block of one chart's values;
    ``global.imageRegistry`` overrides every block's registry (the kube-prometheus-stack charts' templates)."""
    global_registry = (values.get("global") or {}).get("imageRegistry") or None
    stack: list[tuple[str, Any]] = [("", values)]
    while stack:
        at, node = stack.pop()
        if isinstance(node, dict):
            if "repository" in node and ({"tag", "version", "image", "registry", "digest"} & set(node)):
                ref = _compose(node, global_registry)
                if ref is not None:
                    yield at, ref
            if "image_registry" in node:  # Volcano: basic.image_registry/<basic.*_image_name>
                for k, v in node.items():
                    if k.endswith("_image_name") and v:
                        yield f"{at}.{k}", f"{node['image_registry']}/{v}"
            for k, v in node.items():
                if isinstance(v, dict | list):
                    stack.append((f"{at}.{k}" if at else str(k), v))
        elif isinstance(node, list):
            stack.extend((f"{at}[{i}]", v) for i, v in enumerate(node))


def release_images(release) -> list[tuple[str, str]]:
    values, subcharts = chart_values(
        release.inputs["chart"], release.inputs["version"], release.inputs.get("values") or {}
    )
    found = list(image_refs(values))
    for name, sub in subcharts.items():
        found += [(f"{name}.{p}", ref) for p, ref in image_refs(sub) if not p.startswith("global")]
    return found


def manifest_images(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "image" and isinstance(v, str):
                yield v
            else:
                yield from manifest_images(v)
    elif isinstance(node, list):
        for v in node:
            yield from manifest_images(v)


def every_image(rendering) -> dict[str, str]:
    """Where (release/path or object) -> image reference, for everything the stack installs."""
    out = {}
    for rel in rendering.releases:
        for path, ref in release_images(rel):
            out[f"{rel.inputs['name']}:{path}"] = ref
    for m in rendering.manifests:
        for i, ref in enumerate(manifest_images(m)):
            out[f"{m['kind']}/{m['metadata'].get('name')}[{i}]"] = ref
    return out


# ----------------------------------------------------------------------------------------------- the stacks


# The stacks with a mirror: together they install every chart the platform has (the aws one all but the standalone
# DCGM exporter, which "dcgm-alone" installs: addons.dcgm without the GPU Operator)
VARIANTS = {
    "prod-aws": ("prod-aws", {"leaderWorkerSet": True}),
    "prod-gcp": ("prod-gcp", {}),
    "local": ("local", {}),
    "dcgm-alone": ("local", {"gpuOperator": False}),
    "peer": ("prod-aws", {}),  # images.mirror: peer, Spegel's chart
}


def _without_cache(cfg: dict[str, Any]) -> dict[str, Any]:
    """The stack without its cloud's pull-through cache (one mirror at a time); its declared images kept."""
    images = cfg.get("gpu-platform:images")
    if images:
        images["mirror"] = "none"
        images.pop("pullThrough", None)
    return cfg


def _with_mirror(variant: str) -> dict[str, Any]:
    stack, addons = VARIANTS[variant]
    cfg = _without_cache(stack_config(stack))
    cfg["gpu-platform:imageRegistry"] = MIRROR
    cfg["gpu-platform:addons"] = {**cfg["gpu-platform:addons"], **addons}
    if variant == "peer":
        cfg["gpu-platform:images"]["mirror"] = "peer"
    if addons.get("gpuOperator") is False:  # MPS needs the operator's device plugin
        for pool in cfg["gpu-platform:nodePools"]:
            pool.pop("sharing", None)
    return cfg


@functools.cache
def _mirrored(variant: str):
    return render_config(_with_mirror(variant), VARIANTS[variant][0])


@pytest.mark.parametrize("stack", sorted(VARIANTS))
def test_every_image_the_platform_installs_comes_from_the_image_registry(stack):
    images = every_image(_mirrored(stack))
    assert len(images) > 20  # the walk is not vacuous
    elsewhere = {where: ref for where, ref in images.items() if not ref.startswith(f"{MIRROR}/")}
    assert elsewhere == {}


def test_the_stacks_install_every_chart_that_has_images():
    """The stacks above install every chart with an image block between them (so the test covers them all)."""
    charts = {rel.inputs["chart"].rsplit("/", 1)[-1] for v in VARIANTS for rel in _mirrored(v).releases}
    names = {c.name for key, c in versions.CHARTS.items() if chart_images.CHART_IMAGES[key]}
    assert names <= charts


def _upstream(ref: str) -> str:
    """A reference with its registry spelt out: Docker Hub's implied host and library/ added (distribution's rule:
    the first segment is a host only with a '.' or a ':', or localhost)."""
    first, _, rest = ref.partition("/")
    if not (rest and ("." in first or ":" in first or first == "localhost")):
        first, rest = "docker.io", ref
    if first == "docker.io" and "/" not in rest.split(":")[0]:
        rest = f"library/{rest}"
    return f"{first}/{rest}"


@pytest.mark.parametrize("stack", ["prod-aws", "prod-gcp"])
def test_each_image_keeps_its_upstream_registry_in_the_mirror_path(stack):
    """The mirror layout: every image the stack installs without a mirror reappears, and nothing else does, as
    ``<imageRegistry>/<upstream host>/<path>`` (Docker Hub's official images under library/)."""
    variant = VARIANTS[stack]
    plain_cfg = _without_cache(stack_config(stack))
    plain_cfg["gpu-platform:addons"] = {**plain_cfg["gpu-platform:addons"], **variant[1]}
    plain = set(every_image(render_config(plain_cfg, stack)).values())
    moved = set(every_image(_mirrored(stack)).values())
    assert moved == {f"{MIRROR}/{_upstream(ref)}" for ref in plain}


def test_without_a_mirror_the_charts_keep_their_own_registries():
    images = set(every_image(render_config(_without_cache(stack_config("prod-aws")), "prod-aws")).values())
    assert not any(MIRROR in ref for ref in images)
    assert any(ref.startswith("nvcr.io/nvidia") for ref in images)


# the charts upstream/charts/ holds (versions.NOT_BUNDLED: their values.yaml is cited where the table names them)
@pytest.mark.parametrize(
    "key", sorted(k for k, v in chart_images.CHART_IMAGES.items() if v and k not in versions.NOT_BUNDLED)
)
def test_the_table_of_chart_images_is_every_image_block_of_the_chart(key):
    """``chart_images.CHART_IMAGES`` names every image block of the chart's (and its enabled sub-charts') default
    values, with the chart's own default registry: a chart upgrade that adds an image fails here."""
    chart = versions.CHARTS[key]
    values, subcharts = chart_values(chart.chart, chart.version, {})
    upstream = dict(image_refs(values))
    for name, sub in subcharts.items():
        if key == "trainer":  # its jobset sub-chart stays off (plan/operators.py turns it off)
            continue
        upstream.update({f"{name}.{p}": ref for p, ref in image_refs(sub) if not p.startswith("global")})
    upstream = {p.replace(".basic.", "basic.").split("._image")[0]: ref for p, ref in upstream.items()}
    table = {}
    for image in chart_images.CHART_IMAGES[key]:
        if image.registry_key != "registry":  # Volcano: one registry key for the repositories it names
            table.update({p: ref for p, ref in upstream.items() if p.startswith(f"{image.path}.")})
            assert {r for p, r in upstream.items() if p.startswith(f"{image.path}.")} == {
                f"{image.registry}/{n}" for n in image.names
            }
            continue
        ref = f"{image.registry}/{image.repository}" if image.registry else image.repository
        table[image.path] = ref
    # the GPU Operator's <repository>/<image>: the table names the repository, upstream the composed reference
    compare = {
        p: (r if key != "gpuOperator" or p.startswith("node-feature") else r.rsplit("/", 1)[0])
        for p, r in upstream.items()
    }
    assert table == compare
