"""Every image the platform sets itself is pinned by digest (issue 31.4), read from the synth of every shipped and
coverage stack: images in the manifests it writes (``image:`` of any container) and the images its Helm values
choose (an ``image`` block whose ``repository`` or ``tag`` the platform sets, completed from the chart's own
defaults in the bundled archive). Images a chart picks by itself (the GPU Operator's operands, ...) are the
chart's, not the platform's. The only exceptions are listed, with their reason, in
``versions.IMAGES_WITHOUT_DIGEST``, and that list must stay exact."""

from __future__ import annotations

import re
import tarfile
from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest
import yaml
from conftest import ROOT, STACKS, render_config, rendered, stack_mirror, upstream_of

from components.data import versions

DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
COVERAGE = sorted((ROOT / "tests" / "fixtures" / "coverage").glob("Pulumi.*.yaml"))


@cache
def _rendering(name: str):
    if name in STACKS:
        return rendered(name)
    path = ROOT / "tests" / "fixtures" / "coverage" / f"Pulumi.{name}.yaml"
    return render_config(yaml.safe_load(path.read_text())["config"], name, path.parent)


ALL = [*STACKS, *(p.name[len("Pulumi.") : -len(".yaml")] for p in COVERAGE)]


def _manifest_images(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "image" and isinstance(v, str):
                yield v
            else:
                yield from _manifest_images(v)
    elif isinstance(node, list):
        for v in node:
            yield from _manifest_images(v)


@cache
def _chart_defaults(chart: str, version: str) -> dict[str, Any]:
    """values.yaml (and appVersion) of the chart's bundled archive."""
    name = chart.rsplit("/", 1)[-1]  # a repository chart's name, or an OCI reference's last segment
    path = ROOT / chart if chart.endswith(".tgz") else ROOT / "upstream" / "charts" / f"{name}-{version}.tgz"
    if not path.exists() and any(c.name == name for k, c in versions.CHARTS.items() if k in versions.NOT_BUNDLED):
        return {"values": {}, "appVersion": ""}  # no copy in upstream/ (versions.NOT_BUNDLED)
    with tarfile.open(path) as tar:
        names = tar.getnames()
        top = names[0].split("/")[0]
        values = yaml.safe_load(tar.extractfile(f"{top}/values.yaml").read()) or {}  # type: ignore[union-attr]
        meta = yaml.safe_load(tar.extractfile(f"{top}/Chart.yaml").read())  # type: ignore[union-attr]
    return {"values": values, "appVersion": str(meta.get("appVersion", ""))}


def _moved(block: dict[str, Any], mirror: str | None) -> bool:
    """The platform only moved the chart's own image to the stack's mirror (imageRegistry, issue 39): it set the
    registry part and nothing that chooses the image (tag, digest), so the image is still the chart's."""
    if not mirror or set(block) - {"repository", "registry"}:
        return False
    where = block.get("registry") or block.get("repository") or ""
    return where.startswith(f"{mirror}/")


def _values_images(values: Any, defaults: Any, app_version: str, mirror: str | None = None) -> Iterator[str]:
    """Images whose repository or tag the platform's values set, completed from the chart's defaults; an image only
    moved to the stack's mirror stays the chart's."""
    if isinstance(values, dict):
        for k, v in values.items():
            d = defaults.get(k, {}) if isinstance(defaults, dict) else {}
            if isinstance(v, dict) and _moved(v, mirror):
                continue
            if k.lower().endswith("image") and isinstance(v, dict) and ({"repository", "tag", "digest"} & set(v)):
                d = d if isinstance(d, dict) else {}
                repo = v.get("repository", d.get("repository"))
                if "digest" in v:
                    yield f"{repo}@{v['digest']}"
                    continue
                tag = v.get("tag", d.get("tag")) or app_version
                yield f"{repo}:{tag}"
            elif k.lower().endswith("image") and isinstance(v, str):
                yield v
            else:
                yield from _values_images(v, d, app_version, mirror)
    elif isinstance(values, list):
        for v in values:
            yield from _values_images(v, {}, app_version, mirror)


@cache
def _config(name: str) -> dict[str, Any]:
    if name in STACKS:
        return yaml.safe_load((ROOT / "stacks" / f"Pulumi.{name}.yaml").read_text())["config"]
    path = ROOT / "tests" / "fixtures" / "coverage" / f"Pulumi.{name}.yaml"
    return yaml.safe_load(path.read_text())["config"]


def _mirror(name: str) -> str | None:
    """The registry of the stack file's mirror (imageRegistry, or the cloud's pull-through cache)."""
    mirror = stack_mirror(_config(name))
    return mirror[1] if mirror else None


def images_set_by_the_platform(name: str) -> set[str]:
    """As their upstreams name them (the stack's mirror taken off): the images of the objects the platform writes,
    but the stack's own declared images its pre-pullers pull, and the images its chart values choose."""
    r = _rendering(name)
    config = _config(name)
    declared = {w["image"] for w in (config.get("gpu-platform:images") or {}).get("workloads", [])}
    found = {upstream_of(i, config) for m in r.manifests for i in _manifest_images(m)} - declared
    for rel in r.releases:
        chart = _chart_defaults(rel.inputs["chart"], rel.inputs["version"])
        values = rel.inputs.get("values") or {}
        images = _values_images(values, chart["values"], chart["appVersion"], _mirror(name))
        found |= {upstream_of(i, config) for i in images}
    return found


def _path_and_tag(image: str) -> str:
    """registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.6 -> autoscaling/cluster-autoscaler:v1.33.6; a Docker Hub
    reference has no registry host to drop (pytorch/pytorch:2.10.0 stays): the first segment is a host only with a
    dot or a port, or localhost (distribution/reference's rule)."""
    first, _, rest = image.partition("/")
    return rest if rest and ("." in first or ":" in first or first == "localhost") else image


@pytest.mark.parametrize("name", ALL)
def test_every_image_the_platform_sets_is_pinned_by_digest(name):
    unpinned = {i for i in images_set_by_the_platform(name) if not DIGEST.search(i)}
    unexplained = {i for i in unpinned if _path_and_tag(i) not in versions.IMAGES_WITHOUT_DIGEST}
    assert unexplained == set()


def test_the_scan_finds_the_images_it_should():
    """The reader is not vacuous: the kubectl probe image, the autoscaler and the EFA plugin are found."""
    found = set().union(*(images_set_by_the_platform(n) for n in ("prod-aws", "coverage-aws")))
    assert versions.KUBECTL_IMAGE in found
    assert any(i.startswith("registry.k8s.io/autoscaling/cluster-autoscaler:v1.") for i in found)
    assert any("/eks/aws-efa-k8s-device-plugin:v0.5.20" in i for i in found)


def test_the_list_of_images_without_digest_is_exact():
    """Each exception is still set without a digest (by a stack's synth or by the autoscaler's table): a digest
    found later removes it from the list."""
    seen = {_path_and_tag(i) for n in ALL for i in images_set_by_the_platform(n) if not DIGEST.search(i)}
    seen |= {
        f"autoscaling/cluster-autoscaler:{t}" for t in versions.CLUSTER_AUTOSCALER_IMAGE_TAGS.values() if "@" not in t
    }
    # GPUDirect installers no shipped or coverage stack runs (TCPX: tests/test_gke_gpudirect_installers.py)
    seen |= {_path_and_tag(i["image"]) for i in versions.GPUDIRECT_INSTALLERS.values() if not DIGEST.search(i["image"])}
    assert set(versions.IMAGES_WITHOUT_DIGEST) == seen


def test_a_tag_without_digest_is_caught(monkeypatch):
    """A platform image written without digest and not in the list fails the check."""
    monkeypatch.setattr(versions, "IMAGES_WITHOUT_DIGEST", {})
    with pytest.raises(AssertionError):
        test_every_image_the_platform_sets_is_pinned_by_digest("prod-aws")
