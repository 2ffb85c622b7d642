"""Where images are pulled from (issue 39.2): the registry mirror of a stack and how an image reference maps onto it,
for every image the platform installs (each chart's image blocks, ``chart_images.CHART_IMAGES``; the images it sets
itself) and for the declared workload images (``components/plan/images.py``).

A mirror keeps an image's upstream registry in its path, so images of several registries cannot collide:

* ``imageRegistry`` (any registry you run: Harbor, a proxy cache, ``crane copy`` / ``skopeo sync`` targets):
  ``registry.k8s.io/kueue/kueue:v0.19.2`` -> ``<imageRegistry>/registry.k8s.io/kueue/kueue:v0.19.2``;
* ECR pull-through cache (``images.mirror: pull-through`` on aws): one rule per upstream whose repository prefix is
  the upstream's host, so the same layout under ``<account>.dkr.ecr.<region>.amazonaws.com``. A rule's prefix is at
  most 30 characters of ``[a-z0-9._-/]`` (ECR API CreatePullThroughCacheRule ecrRepositoryPrefix), which a registry
  host is. Images already in ECR (a ``*.dkr.ecr.*`` host, such as the EKS add-on registries) are not moved: the
  nodes reach ECR as they reach the cache.
* Artifact Registry remote repositories (``images.mirror: pull-through`` on gcp): one repository per upstream in
  the cluster's region, its id the upstream host with '-' for '.' (``nvcr-io``), so
  ``<region>-docker.pkg.dev/<project>/nvcr-io/nvidia/pytorch:25.08-py3``. Images already in Artifact Registry or
  Container Registry (``*-docker.pkg.dev``, ``gcr.io``) are not moved.

The platform's references are rewritten, whatever the nodes do: a reference to the cache is signed by the node's own
credential provider (ECR user guide, "Pulling an image with a pull through cache rule": ``<account>.dkr.ecr.<region>
.amazonaws.com/<prefix>/<repository>:<tag>``) on every node, while a containerd mirror entry needs a credential of its
own (containerd signs in to a mirror with the credentials the kubelet found for the image's own registry: 401 at ECR,
bottlerocket-os/bottlerocket#2427, awslabs/amazon-ecr-credential-helper#947). The AL2023 nodes get one
(``aws/ecr_mirror.py``: hosts.toml with a refreshed ECR token), so workloads there keep their own references;
Bottlerocket and GKE nodes do not (docs/concepts/images.md says why). Docker Hub's official images keep their
``library/`` path there.

Pure: the spec in, strings and dicts out.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

from ..data import chart_images
from ..spec.model import StackSpec
from .gcp.gke import region_of

DOCKER_HUB = "docker.io"
_DOCKER_HUB_ALIASES = frozenset({"docker.io", "index.docker.io", "registry-1.docker.io"})
ECR_HOST = re.compile(r"^[0-9]{12}\.dkr\.ecr(-fips)?\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$")
GOOGLE_HOSTS = re.compile(r"^([a-z0-9-]+-docker\.pkg\.dev|([a-z]+\.)?gcr\.io)$")


def split(ref: str) -> tuple[str, str]:
    """``(registry host, the rest)`` of an image reference; a reference without a registry is Docker Hub's, and its
    one-segment repositories are ``library/`` ones (distribution/reference's normalization: the first segment is a
    host only with a '.' or a ':', or localhost)."""
    first, _, rest = ref.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        host = DOCKER_HUB if first in _DOCKER_HUB_ALIASES else first
    else:
        host, rest = DOCKER_HUB, ref
    if host == DOCKER_HUB and "/" not in rest.split(":")[0].split("@")[0]:
        rest = f"library/{rest}"
    return host, rest


def normalize(ref: str) -> str:
    """An image reference with its registry spelt out (``nvcr.io/...``, ``docker.io/library/busybox:1``)."""
    host, rest = split(ref)
    return f"{host}/{rest}"


def host_of(ref: str) -> str:
    return split(ref)[0]


def repository_id(host: str) -> str:
    """The Artifact Registry repository that caches ``host``: its name with '-' for '.' and ':' (repository ids are
    lower-case letters, digits and '-', starting with a letter: Artifact Registry, "Create repositories")."""
    rid = re.sub(r"[^a-z0-9]+", "-", host.lower()).strip("-")
    return rid if rid[:1].isalpha() else f"r-{rid}"


def ecr_registry(account_id: str, region: str) -> str:
    """``<account>.dkr.ecr.<region>.amazonaws.com`` (``.amazonaws.com.cn`` in the China regions: ECR endpoints)."""
    suffix = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
    return f"{account_id}.dkr.ecr.{region}.{suffix}"


@dataclass(frozen=True)
class Mirror:
    """The registry images are pulled through, and how an upstream's images map onto it."""

    kind: str  # registry (imageRegistry) | ecr | artifact-registry
    registry: (
        str  # the mirror's own registry (host[:port][/path]); Artifact Registry: <region>-docker.pkg.dev/<project>
    )

    def base(self, host: str) -> str | None:
        """Where ``host``'s images live on the mirror (registry and path prefix), or None: not moved (already in the
        cloud's registry)."""
        if self.kind == "ecr" and ECR_HOST.fullmatch(host):
            return None
        if self.kind == "artifact-registry":
            return None if GOOGLE_HOSTS.fullmatch(host) else f"{self.registry}/{repository_id(host)}"
        return f"{self.registry.rstrip('/')}/{host}"

    def pull_ref(self, ref: str) -> str:
        host, rest = split(ref)
        base = self.base(host)
        return ref if base is None else f"{base}/{rest}"

    def moves(self, ref: str) -> bool:
        return self.base(host_of(ref)) is not None

    @property
    def host(self) -> str:
        return self.registry.split("/", 1)[0]


def mirror_of(spec: StackSpec) -> Mirror | None:
    """The stack's mirror: the cloud's cache with ``images.mirror: pull-through`` (aws: ECR in the stack's region
    and ``pullThrough.accountId``; gcp: Artifact Registry in the cluster's region and project; existing: the
    ``imageRegistry`` you run), else ``imageRegistry`` when set, else None (the rules make these consistent)."""
    pull_through = spec.images.mirror == "pull-through"
    if pull_through and spec.cloud == "aws":
        account, region = spec.images.pull_through.account_id, spec.cluster.region
        return Mirror("ecr", ecr_registry(account, region)) if account and region else None
    if pull_through and spec.cloud == "gcp":
        c = spec.cluster
        if not (c.location and c.project):
            return None
        return Mirror("artifact-registry", f"{region_of(c.location)}-docker.pkg.dev/{c.project}")
    if spec.image_registry:
        return Mirror("registry", spec.image_registry)
    return None


def pull_ref(spec: StackSpec, ref: str) -> str:
    """``ref`` as the nodes pull it: through the stack's mirror, or as it is."""
    m = mirror_of(spec)
    return ref if m is None else m.pull_ref(ref)


# ------------------------------------------------------------------------------------------- chart values


def _get(values: dict[str, Any], path: str) -> Any:
    node: Any = values
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _set(values: dict[str, Any], path: str, key: str, value: str) -> None:
    node = values
    for part in path.split("."):
        node = node.setdefault(part, {})
    node[key] = value


def chart_image_values(mirror: Mirror | None, chart_key: str, values: dict[str, Any] | None = None) -> dict[str, Any]:
    """The chart's values with every image block (``chart_images.CHART_IMAGES``) pulled through ``mirror``: the registry
    part of each block set, the rest (repository path, tag, digest) left to the chart or to what ``values`` already
    says. ``values`` is not changed; without a mirror it comes back as it is."""
    out = copy.deepcopy(values or {})
    if mirror is None:
        return out
    for image in chart_images.CHART_IMAGES[chart_key]:
        block = _get(out, image.path)
        block = block if isinstance(block, dict) else {}
        if image.registry is not None:
            registry = block.get(image.registry_key) or image.registry
            base = mirror.base(DOCKER_HUB if registry in _DOCKER_HUB_ALIASES else registry)
            if base is None:
                continue
            _set(out, image.path, image.registry_key, base)
            repository = block.get("repository") or image.repository
            if repository is not None and registry in _DOCKER_HUB_ALIASES and "/" not in repository:
                _set(out, image.path, "repository", f"library/{repository}")  # Docker Hub's official images
            continue
        repository = block.get("repository") or image.repository
        if repository and mirror.moves(repository):
            _set(out, image.path, "repository", mirror.pull_ref(repository))
    return out


def chart_values(spec: StackSpec, chart_key: str, values: dict[str, Any] | None = None) -> dict[str, Any]:
    """``chart_image_values`` with the stack's mirror."""
    return chart_image_values(mirror_of(spec), chart_key, values)
