"""Rules of image delivery (``gpu-platform:images``, ``nodePools[].imageCache``, ``nodePools[].gke.imageStreaming``):
what the clouds would refuse or silently not do, checked before anything is registered. The decisions they guard are
``images.py``'s and ``mirror.py``'s."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..spec.model import Problem, StackSpec, key, rule
from . import derive, images, mirror as mirrors

_AWS_SECRET = re.compile(r"arn:(aws[a-z-]*):secretsmanager:([a-z0-9-]+):([0-9]{12}):secret:(.+)")
ECR_SECRET_PREFIX = "ecr-pullthroughcache/"  # ECR user guide, "Creating a pull through cache rule": prerequisites
_GCP_SECRET = re.compile(r"projects/[^/]+/secrets/[^/]+/versions/[^/]+")
# GKE: secondary boot disks on Ubuntu nodes from 1.35.0-gke.1403000, on COS from 1.28.3-gke.1067000 (GKE, "Use
# secondary boot disks to preload data or container images": requirements)
UBUNTU_DISK_MINOR = (1, 35)
# Spegel's compatibility table (spegel-org/website content/docs/getting-started.md at 957ba46, the docs of Spegel
# v0.7.4, "Compatibility"): GKE is not supported (the registry config path is not set there); on EKS, AL2023 takes
# the containerd settings through nodeadm (images.SPEGEL_CONTAINERD_CONFIG), Bottlerocket (1.56 or later) only through
# a bootstrap container of your own that writes the node's IP into settings.container-registry.mirrors: the platform
# leaves Bottlerocket pools out of the peer mirror. No static mirror address would do: the chart serves on the node's
# IP (hostPort 30020, NodePort 30021: spegel-org/spegel v0.7.4 charts/spegel/values.yaml), and a NodePort on
# 127.0.0.1 answers only in kube-proxy's iptables mode, which Spegel does not document.
PEER_REFUSED_ON = {
    "gcp": "Spegel does not run on GKE (its compatibility notes: containerd's registry config path is "
    "not set there); use pull-through (Artifact Registry) with a secondary boot disk instead"
}


# The AL2023 AMIs of Kubernetes 1.28 and 1.29 ship containerd 1.7, where nodeadm refuses the version-3 containerd
# config Spegel's docs give (awslabs/amazon-eks-ami v20260724 templates/al2023/variables-1.29.json, nodeadm
# internal/containerd/config.go getConfigTemplateVersion); 1.30 and later ship containerd 2.*.
PEER_MIN_KUBERNETES = (1, 30)


def _at(*parts: str | int) -> str:
    return key("images", *parts)


@rule
def mirror_mode(spec: StackSpec) -> Iterator[Problem]:
    """One mirror, and what it needs: the account (aws), the registry you run (existing)."""
    i = spec.images
    pt = i.pull_through
    if i.mirror != "pull-through":
        if pt.model_fields_set and (pt.account_id or pt.credentials or pt.copied):
            yield Problem(_at("pullThrough"), "only with images.mirror: pull-through")
        if i.mirror == "peer":
            yield from _peer(spec)
        return
    if spec.cloud == "aws":
        if not pt.account_id:
            yield Problem(
                _at("pullThrough", "accountId"),
                "is required with pull-through on aws: the account of the ECR registry that caches (the offline "
                "synth cannot look it up)",
            )
    elif spec.cloud == "existing" and not spec.image_registry:
        yield Problem(
            _at("mirror"),
            "pull-through on an existing cluster is the registry you run: name it in gpu-platform:imageRegistry",
        )
    if spec.cloud != "existing" and spec.image_registry:
        yield Problem(
            key("imageRegistry"),
            f"pull-through on {spec.cloud} is the cloud's own cache; imageRegistry would name a second mirror: "
            "drop one",
        )
    if spec.cloud == "existing" and (pt.credentials or pt.account_id):
        yield Problem(
            _at("pullThrough"), "an existing cluster's registry signs in on its own: no accountId or credentials"
        )


def _peer(spec: StackSpec) -> Iterator[Problem]:
    """Spegel runs where the node OS lets the platform set containerd as it needs (PEER_REFUSED_ON,
    PEER_MIN_KUBERNETES)."""
    if spec.cloud in PEER_REFUSED_ON:
        yield Problem(_at("mirror"), PEER_REFUSED_ON[spec.cloud])
        return
    if spec.cloud != "aws":
        return  # an existing cluster: your nodes' containerd (docs/concepts/images.md)
    version = spec.cluster.kubernetes_version
    if version and tuple(int(x) for x in version.split(".")[:2]) < PEER_MIN_KUBERNETES:
        yield Problem(
            _at("mirror"),
            f"peer needs containerd 2 on the AL2023 nodes, which EKS's AMIs ship from Kubernetes 1.30 (on {version} "
            "nodeadm refuses the containerd settings Spegel needs): set cluster.kubernetesVersion 1.30 or later, or "
            "use mirror: pull-through",
        )
    if not images.peer_pools(spec):
        yield Problem(
            _at("mirror"),
            "peer serves images between AL2023 nodes (nodeadm sets their containerd as Spegel needs); every pool here "
            "runs Bottlerocket, whose containerd takes a mirror only from a bootstrap container of your own: give a "
            "pool os: al2023, or use mirror: pull-through",
        )


def _image_index(spec: StackSpec, host: str) -> int | None:
    return next((n for n, w in enumerate(spec.images.workloads) if mirrors.host_of(w.image) == host), None)


@rule
def upstreams(spec: StackSpec) -> Iterator[Problem]:
    """Every upstream goes through a cache that supports it, signed in where the cache needs it."""
    i = spec.images
    if i.mirror != "pull-through" or spec.cloud == "existing":
        return
    m = mirrors.mirror_of(spec)
    if m is None:
        return  # the account (aws) is missing: reported above
    used = {u.host: u for u in images.upstream_plans(spec)}
    pt = i.pull_through
    for host in pt.copied:
        if host not in used:
            yield Problem(_at("pullThrough", "copied"), f"{host}: none of the stack's images comes from it")
    for u in used.values():
        if u.how != "pull-through":
            continue
        where = _image_index(spec, u.host)
        at = _at("workloads", where, "image") if where is not None else _at("mirror")
        what = "" if where is not None else f" (the platform's images from it: {', '.join(u.images[:3])})"
        if m.kind == "ecr":
            supported = images.ecr_upstream(u.host)
            if supported is None:
                ngc = " (NGC)" if u.host == "nvcr.io" else ""
                yield Problem(
                    at,
                    f"{u.host}{ngc} is not an upstream ECR pull-through cache supports (ECR Public, registry.k8s.io, "
                    f"Quay, Docker Hub, GHCR, GitLab, Azure, Chainguard){what}: copy its images into ECR under "
                    f"{u.base}/ (crane copy; gpu-platform plan lists them) and add {u.host} to "
                    "images.pullThrough.copied, or use images.mirror: peer",
                )
                continue
            if len(u.host) > images.ECR_PREFIX_MAX:
                yield Problem(at, f"{u.host}: longer than an ECR repository prefix may be (30 characters)")
            if supported[1] and u.host not in pt.credentials:
                yield Problem(
                    _at("pullThrough", "credentials"),
                    f"{u.host}: ECR pulls through it only with a Secrets Manager secret (its name starting with "
                    f"{ECR_SECRET_PREFIX}){what}: name the secret's ARN at credentials.{u.host}.secret",
                )
    for host, cred in pt.credentials.items():
        at = _at("pullThrough", "credentials", host)
        if host not in used or used[host].how != "pull-through":
            yield Problem(at, f"no image comes from {host} through the cache")
            continue
        yield from _credential(spec, at, cred.secret, cred.username)


def _credential(spec: StackSpec, at: str, secret: str, username: str | None) -> Iterator[Problem]:
    if spec.cloud == "aws":
        arn = _AWS_SECRET.fullmatch(secret)
        if arn is None:
            yield Problem(f"{at}.secret", "on aws: a Secrets Manager secret ARN (ECR reads the credential itself)")
            return
        _, region, account, name = arn.groups()
        if not name.startswith(ECR_SECRET_PREFIX):
            yield Problem(f"{at}.secret", f"the secret's name must start with {ECR_SECRET_PREFIX} (ECR's prerequisite)")
        if region != spec.cluster.region or account != spec.images.pull_through.account_id:
            yield Problem(
                f"{at}.secret",
                "the secret must be in the cache's account and region "
                f"({spec.images.pull_through.account_id}, {spec.cluster.region}): ECR's prerequisite",
            )
        if username is not None:
            yield Problem(
                f"{at}.username", "on aws the secret holds the user name (ECR reads username and accessToken)"
            )
    elif spec.cloud == "gcp":
        if not _GCP_SECRET.fullmatch(secret):
            yield Problem(f"{at}.secret", "on gcp: a Secret Manager secret version (projects/P/secrets/S/versions/N)")
        if username is None:
            yield Problem(f"{at}.username", "is required on gcp: the remote repository signs in with it and the secret")


@rule
def workloads(spec: StackSpec) -> Iterator[Problem]:
    pools = {p.name for p in spec.node_pools}
    tenants = {t.name for t in spec.tenants}
    seen: set[str] = set()
    for n, w in enumerate(spec.images.workloads):
        at = ("workloads", n)
        if w.name in seen:
            yield Problem(_at(*at, "name"), f"{w.name!r} is declared twice")
        seen.add(w.name)
        last = w.image.rsplit("/", 1)[-1]
        if ":" not in last and "@" not in last:
            yield Problem(
                _at(*at, "image"),
                "name a tag or a sha256 digest: a pre-pulled implicit :latest is whatever latest was on each "
                "node's day",
            )
        if not (w.pools or w.tenants):
            yield Problem(_at(*at), "name the pools (or tenants) whose nodes hold it warm")
        for j, p in enumerate(w.pools):
            if p not in pools:
                yield Problem(_at(*at, "pools", j), f"unknown pool {p!r} (pools: {', '.join(sorted(pools))})")
        for j, t in enumerate(w.tenants):
            if t not in tenants:
                yield Problem(_at(*at, "tenants", j), f"unknown tenant {t!r} (tenants: {', '.join(sorted(tenants))})")


@rule
def image_cache(spec: StackSpec) -> Iterator[Problem]:
    for n, pool in enumerate(spec.node_pools):
        if "gke" in pool.model_fields_set and pool.gke.image_streaming is not None and spec.cloud != "gcp":
            yield Problem(key("nodePools", n, "gke", "imageStreaming"), "GKE image streaming is a GKE setting")
        cache = pool.image_cache
        if cache is None:
            continue
        at = ("nodePools", n, "imageCache")
        if not images.pool_images(spec, pool):
            yield Problem(
                key(*at),
                f"declare the images it holds in images.workloads (pools: [{pool.name}]): the plan and explain read "
                "which images are warm there",
            )
        if cache.snapshot_id and cache.disk_image:
            yield Problem(key(*at), "either snapshotId (aws) or diskImage (gcp)")
        if cache.snapshot_id:
            if spec.cloud != "aws":
                yield Problem(key(*at, "snapshotId"), "an EBS snapshot is an aws data volume; gcp: diskImage")
            elif derive.node_os(spec, pool) != "bottlerocket":
                yield Problem(
                    key(*at, "snapshotId"),
                    "only Bottlerocket keeps containerd's images on a data volume of their own (/dev/xvdb) a snapshot "
                    f"can restore; AL2023 keeps them on its root volume: use os: bottlerocket, or drop it (the "
                    f"pre-puller warms {pool.name})",
                )
        if cache.disk_image:
            yield from _disk_image(spec, n, pool)


def _disk_image(spec: StackSpec, n: int, pool) -> Iterator[Problem]:
    at = key("nodePools", n, "imageCache", "diskImage")
    if spec.cloud != "gcp":
        yield Problem(at, "a secondary boot disk is a GKE node pool's; aws: snapshotId (Bottlerocket)")
        return
    if pool.gke.image_streaming is False:
        yield Problem(
            key("nodePools", n, "gke", "imageStreaming"),
            "a secondary boot disk of container images needs image streaming (GKE's requirement)",
        )
    if derive.node_os(spec, pool) == "ubuntu":
        version = spec.cluster.kubernetes_version
        minor = tuple(int(x) for x in version.split(".")[:2]) if version else None
        if minor is None or minor < UBUNTU_DISK_MINOR:
            yield Problem(
                at,
                "Ubuntu nodes boot secondary boot disks from GKE 1.35.0-gke.1403000: set cluster.kubernetesVersion "
                "1.35 or later, or use os: cos",
            )
