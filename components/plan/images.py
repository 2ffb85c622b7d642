"""Image delivery (issue 39, ``gpu-platform:images``): which images each pool holds warm and how, through which
mirror the nodes pull them, and the cloud objects the mirror needs. ``Plan.images``; None for a stack that declares
no images, no mirror and no ``imageRegistry``.

Per pool, how the declared images (``images.workloads``, by pool or by tenant) are warm before work lands:

* ``secondary-boot-disk`` (gcp, ``imageCache.diskImage``): the node pool boots every node with a secondary boot disk
  made from a disk image that holds the images (``secondaryBootDisks`` mode ``CONTAINER_IMAGE_CACHE``), with image
  streaming on, which that mode needs (GKE, "Use secondary boot disks to preload data or container images":
  requirements). The plan prints the command that builds the disk image from the declared images
  (ai-on-gke/tools ``gke-disk-image-builder``, its README's flags).
* ``snapshot`` (aws, Bottlerocket, ``imageCache.snapshotId``): the data volume ``/dev/xvdb``, where Bottlerocket keeps
  containerd's images, is restored from an EBS snapshot of a node that pulled them (AWS Containers blog, "Reduce
  container startup time on Amazon EKS with Bottlerocket data volume"), initialized at the provisioned rate
  (``volumeInitializationRate``: EC2NodeClass CRD, 100-300 MiB/s) so the first reads do not fetch blocks lazily.
* ``pre-pull`` (any pool else, ``images.prePull``): a DaemonSet per pool whose init containers are the declared
  images (pulled, run ``sh -c true``), then a pause container: the pattern of JupyterHub's image pre-puller
  (zero-to-jupyterhub ``continuous-image-puller``). It tolerates the pool's taints, requests 1m CPU and 8 MiB, sets
  ``NVIDIA_VISIBLE_DEVICES=void`` (the NVIDIA container runtime then exposes no GPU, even to an image that asks for
  all: nvidia-container-toolkit docs, "Environment variables") and asks for no GPU resource. Its pull starts when the
  node is Ready, alongside the GPU stack's start; a pod that lands before it finishes waits for the rest of it
  (containerd pulls an image once), so pre-pull warms the nodes that exist before work lands, not a node scaled up
  for the pod itself: that is what the snapshot and the disk image are for.
* ``none``: no declared image for the pool, or ``prePull: false``.

Also per pool: GKE image streaming (``gcfsConfig``; images in Artifact Registry start before they are read in full)
and, on AL2023, nodeadm's ``FastImagePull`` (SOCI parallel pull and unpack; nodeadm docs "Enabling fast image pull")
for pools that hold declared images, with the EBS throughput its docs recommend (at least 600 MiB/s: 1000).

The mirror (``images.mirror``): ``pull-through`` moves every image through the cloud's cache (``mirror.py``: ECR
pull-through cache rules on aws, Artifact Registry remote repositories on gcp, the ``imageRegistry`` you run on an
existing cluster), and on aws the AL2023 nodes' containerd mirrors the upstreams to it (``aws/ecr_mirror.py``);
``peer`` runs Spegel and sets the AL2023 nodes' containerd as Spegel's docs give it for EKS
(``SPEGEL_CONTAINERD_CONFIG`` through nodeadm's ``containerd.config``: the registry config path and the unpacked
layers kept); Spegel's init container writes the mirror configuration (hosts.toml) there on each node.

Pure: the spec in, frozen data out. The rules are ``images_rules.py``'s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..data import chart_images, versions
from ..spec.model import DEFAULT_IMAGE_GIB, NodePool, StackSpec, WorkloadImage
from . import derive, mirror as mirrors
from .frozen import freeze
from .gcp.gke import region_of

NAMESPACE = "gpu-platform-images"  # the pre-pullers' namespace (Pod Security restricted)
PRE_PULL_PREFIX = "image-prepull-"
PRE_PULL_APP = "image-prepull"
# The pause container of the pre-puller: kubeadm's pause for Kubernetes 1.35 (kubernetes v1.35.4
# cmd/kubeadm/app/constants/constants.go PauseVersion = "3.10.1"); no citable digest (versions.IMAGES_WITHOUT_DIGEST).
PAUSE_IMAGE = versions.PAUSE_IMAGE
PRE_PULL_USER = 65534  # nobody: the init containers only run `sh -c true`
SECONDARY_BOOT_DISK_MODE = "CONTAINER_IMAGE_CACHE"  # GKE API SecondaryBootDisk.Mode
# EC2NodeClass blockDeviceMappings[].ebs.volumeInitializationRate: 100..300 MiB/s (the CRD's bounds), the fastest
SNAPSHOT_INIT_MIB_S = 300
FAST_PULL_THROUGHPUT = 1000  # MiB/s: nodeadm "Enabling fast image pull": at least 600, up to 1000 and 16k IOPS
FAST_PULL_IOPS = 4000  # gp3 throughput is at most 0.25 MiB/s per provisioned IOPS
DISK_BUILDER = "https://github.com/ai-on-gke/tools/tree/main/gke-disk-image-builder"
WARM_METHODS = ("secondary-boot-disk", "snapshot", "pre-pull", "none")
SPEGEL_CHART = f"{versions.SPEGEL.chart} {versions.SPEGEL.version}"
# What Spegel needs of containerd on an AL2023 node, as its docs give it for EKS AL2023 (spegel-org/website
# content/docs/getting-started.md at 957ba46, the docs of Spegel v0.7.4: "Compatibility", "EKS", "AL2023"): the
# registry config path where its init container writes each registry's hosts.toml (the chart's
# spegel.containerdRegistryConfigPath, /etc/containerd/certs.d: spegel-org/spegel v0.7.4 charts/spegel/values.yaml)
# and the unpacked layers kept (it serves them from the content store). Containerd config version 3 (containerd 2):
# nodeadm merges it into its V3 template and, seeing io.containerd.cri.v1.images, runs no `containerd config migrate`
# (awslabs/amazon-eks-ami v20260724 nodeadm/internal/containerd/config.go getConfigTemplateVersion); the AL2023 AMIs
# of Kubernetes 1.30 and later ship containerd 2.* (templates/al2023/variables-default.json; 1.28 and 1.29 ship 1.7,
# where nodeadm refuses a V3 config: images_rules.PEER_MIN_KUBERNETES).
SPEGEL_CONTAINERD_CONFIG = (
    '[plugins."io.containerd.cri.v1.images".registry]\n'
    'config_path = "/etc/containerd/certs.d"\n'
    '[plugins."io.containerd.cri.v1.images"]\n'
    "discard_unpacked_layers = false\n"
)


@dataclass(frozen=True)
class WarmImage:
    """A declared image a pool holds warm: its reference, where the nodes pull it from, digest and size."""

    name: str
    image: str  # as the stack declares it (its upstream reference)
    pull: str  # as the nodes pull it: through the mirror
    digest: str | None  # sha256:..., where the stack pins one
    size_gib: int
    declared_size: bool  # the size is the stack's (else the default)


@dataclass(frozen=True)
class PoolImagesPlan:
    """How one pool's images are warm and pulled: the method, streaming, fast pull, mirror hosts."""

    pool: str
    images: tuple[WarmImage, ...]
    warm: str  # secondary-boot-disk | snapshot | pre-pull | none
    streaming: bool  # GKE image streaming (gcfsConfig)
    fast_pull: bool  # AL2023: nodeadm FastImagePull (SOCI parallel pull)
    peer: bool  # the nodes keep unpacked layers for the peer mirror (Spegel)
    mirror_hosts: tuple[str, ...]  # upstreams the nodes' containerd pulls through the cache (aws/ecr_mirror.py)
    snapshot_id: str | None
    disk_image: str | None
    disk_build: str | None  # the command that builds the disk image from the declared images
    pre_puller: Mapping[str, Any] | None  # the DaemonSet (metadata and spec)
    cold_pull: Mapping[str, Any]  # what a cold pull costs on the pool (cost.cold_pull)


@dataclass(frozen=True)
class UpstreamPlan:
    """An upstream registry the stack's images come from, and how the mirror gets them."""

    host: str
    how: str  # pull-through (the cache fetches it) | copied (you copy its images) | in-cloud (not moved) | direct
    base: str | None  # where its images live on the mirror (None: not moved)
    images: tuple[str, ...]  # the references (upstream) that come from it
    ecr_upstream: str | None = None  # aws: the rule's upstreamRegistryUrl
    credential: str | None = None  # a secret reference (never the secret)
    username: str | None = None  # gcp: the user name the remote repository signs in with
    repository_id: str | None = None  # gcp: the remote repository
    docker_hub: bool = False  # gcp: the DOCKER_HUB preset instead of a custom uri


@dataclass(frozen=True)
class ImagesPlan:
    """The stack's image delivery: the mirror and its upstreams, and each pool's warm images."""

    mirror: str  # none | pull-through | peer
    mirror_kind: str | None  # registry | ecr | artifact-registry (None: no mirror moves references)
    registry: str | None  # the mirror's registry
    upstreams: tuple[UpstreamPlan, ...]
    pools: Mapping[str, PoolImagesPlan]
    namespace: str | None  # the pre-pullers' namespace (None: no pre-puller)
    node_policy: Mapping[str, Any] | None  # aws pull-through: what the platform's node roles may do on the cache
    copy_commands: tuple[str, ...]  # the images of copied upstreams: crane copy upstream -> mirror


# ------------------------------------------------------------------------------------------ declared images


def digest_of(ref: str) -> str | None:
    return ref.split("@", 1)[1] if "@" in ref else None


@derive.per_pool
def pool_images(spec: StackSpec, pool: NodePool) -> tuple[WorkloadImage, ...]:
    """The declared images the pool holds warm: named for the pool, or for a tenant with quota on it. Decided once
    per pool: the plan, its rules and the cost ask it ~8 times per pool, each a walk over every tenant (1,000
    tenants, 48 pools: ~400,000 steps)."""
    if not spec.images.workloads:
        return ()
    tenants = {t.name for t in spec.tenants if pool.name in t.gpu_quota}
    return tuple(w for w in spec.images.workloads if pool.name in w.pools or tenants & set(w.tenants))


def warm_image(spec: StackSpec, w: WorkloadImage) -> WarmImage:
    """Declared images name the cache on every pool: a pool that holds one runs FastImagePull on AL2023, whose SOCI
    snapshotter reads no containerd mirror (``aws/ecr_mirror.applies``)."""
    return WarmImage(
        name=w.name,
        image=w.image,
        pull=mirrors.pull_ref(spec, w.image),  # through the stack's mirror, whichever it is
        digest=digest_of(w.image),
        size_gib=w.size_gib or DEFAULT_IMAGE_GIB,
        declared_size=w.size_gib is not None,
    )


def warm_method(spec: StackSpec, pool: NodePool) -> str:
    cache = pool.image_cache
    if spec.cloud == "gcp" and cache is not None and cache.disk_image:
        return "secondary-boot-disk"
    if spec.cloud == "aws" and cache is not None and cache.snapshot_id:
        return "snapshot"
    if pool_images(spec, pool) and spec.images.pre_pull:
        return "pre-pull"
    return "none"


def streaming(spec: StackSpec, pool: NodePool) -> bool:
    """GKE image streaming: the stack's choice, else on where the pool holds declared images or boots a disk image
    (secondary boot disks need it)."""
    if spec.cloud != "gcp":
        return False
    if pool.gke.image_streaming is not None:
        return pool.gke.image_streaming
    return bool(pool_images(spec, pool)) or warm_method(spec, pool) == "secondary-boot-disk"


def fast_pull(spec: StackSpec, pool: NodePool) -> bool:
    """nodeadm's FastImagePull on AL2023 nodes of pools that hold declared images (Bottlerocket and GKE have no
    such setting)."""
    return spec.cloud == "aws" and derive.node_os(spec, pool) == "al2023" and bool(pool_images(spec, pool))


def containerd_mirror_hosts(spec: StackSpec, pool: NodePool) -> tuple[str, ...]:
    """The upstreams the pool's containerd pulls through the ECR cache (``aws/ecr_mirror.py``): those with a rule, on
    AL2023 without FastImagePull, whose SOCI snapshotter fetches layers itself and reads no hosts.toml
    (awslabs/soci-snapshotter#1561, open; its parallel pull ignores even its own resolver's mirrors: #1013)."""
    m = mirrors.mirror_of(spec)
    if m is None or m.kind != "ecr" or derive.node_os(spec, pool) != "al2023" or fast_pull(spec, pool):
        return ()
    return tuple(u.host for u in upstream_plans(spec) if u.how == "pull-through" and u.ecr_upstream is not None)


def peer(spec: StackSpec, pool: NodePool) -> bool:
    """The pool's nodes keep unpacked layers for Spegel (peer mode; the rules allow it on AL2023 only)."""
    return spec.images.mirror == "peer" and spec.cloud == "aws" and derive.node_os(spec, pool) == "al2023"


# ---------------------------------------------------------------------------------------------- the nodes


def al2023_node_config(spec: StackSpec, pool: NodePool) -> dict[str, Any] | None:
    """The NodeConfig (node.eks.aws/v1alpha1) the pool's AL2023 nodes get from their user data, or None. nodeadm
    merges it with the one EKS (managed node groups) or Karpenter generates (amazon-eks-ami nodeadm doc/examples.md,
    "Merging multiple configuration objects")."""
    spec_: dict[str, Any] = {}
    if fast_pull(spec, pool):
        spec_["featureGates"] = {"FastImagePull": True}
    if peer(spec, pool):
        spec_["containerd"] = {"config": SPEGEL_CONTAINERD_CONFIG}
    if not spec_:
        return None
    return {"apiVersion": "node.eks.aws/v1alpha1", "kind": "NodeConfig", "spec": spec_}


def snapshot_id(spec: StackSpec, pool: NodePool) -> str | None:
    return pool.image_cache.snapshot_id if warm_method(spec, pool) == "snapshot" and pool.image_cache else None


def gke_node_config(spec: StackSpec, pool: NodePool) -> dict[str, Any]:
    """What a GKE node pool's nodeConfig adds for images: gcfsConfig and secondaryBootDisks ({} for neither)."""
    out: dict[str, Any] = {}
    if streaming(spec, pool):
        out["gcfsConfig"] = {"enabled": True}
    if warm_method(spec, pool) == "secondary-boot-disk" and pool.image_cache is not None:
        out["secondaryBootDisks"] = [{"diskImage": pool.image_cache.disk_image, "mode": SECONDARY_BOOT_DISK_MODE}]
    return out


def disk_build_command(spec: StackSpec, pool: NodePool) -> str | None:
    """gke-disk-image-builder's command for the pool's disk image (its README, "Available Flags"): the images as the
    nodes pull them, a disk a fifth larger than their sum; your bucket for its logs."""
    if warm_method(spec, pool) != "secondary-boot-disk" or pool.image_cache is None:
        return None
    disk = pool.image_cache.disk_image or ""
    name = disk.rsplit("/", 1)[-1]
    project = disk.split("/")[1] if disk.startswith("projects/") else spec.cluster.project
    zone = pool.gke.zones[0] if pool.gke.zones else f"{region_of(spec.cluster.location or '')}-a"
    images = [warm_image(spec, w) for w in pool_images(spec, pool)]
    size = max(10, math.ceil(sum(i.size_gib for i in images) * 1.2))
    auth = " --image-pull-auth=ServiceAccountToken" if any(".pkg.dev/" in i.pull for i in images) else ""
    pulls = " ".join(f"--container-image={i.pull}" for i in images)
    return (
        f"go run ./cli --project-name={project} --image-name={name} --zone={zone} --gcs-path=gs://<bucket>/ "
        f"--disk-size-gb={size}{auth} {pulls}"
    )


def pre_puller(spec: StackSpec, pool: NodePool) -> dict[str, Any] | None:
    """The pool's pre-puller DaemonSet (metadata and spec), or None."""
    if warm_method(spec, pool) != "pre-pull":
        return None
    labels = {"app.kubernetes.io/name": PRE_PULL_APP, derive.POOL_LABEL: pool.name}
    no_gpu = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]
    tiny = {"requests": {"cpu": "1m", "memory": "8Mi"}, "limits": {"memory": "32Mi"}}
    locked = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "readOnlyRootFilesystem": True}

    def container(name: str, image: str, command: list[str] | None) -> dict[str, Any]:
        c: dict[str, Any] = {"name": name, "image": image, "imagePullPolicy": "IfNotPresent"}
        if command:
            c["command"] = command
        return {**c, "env": no_gpu, "resources": tiny, "securityContext": locked}

    images = [warm_image(spec, w) for w in pool_images(spec, pool)]
    return {
        "metadata": {
            "name": f"{PRE_PULL_PREFIX}{pool.name}",
            "namespace": NAMESPACE,
            "labels": {**derive.MANAGED_BY, **labels},
        },
        "spec": {
            "selector": {"matchLabels": labels},
            # each node pulls on its own; a quarter at a time spares the registry on an image change
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%"}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "nodeSelector": {derive.POOL_LABEL: pool.name},
                    "tolerations": derive.tolerations(pool),
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "terminationGracePeriodSeconds": 5,
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": PRE_PULL_USER,
                        "runAsGroup": PRE_PULL_USER,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "initContainers": [container(i.name, i.pull, ["sh", "-c", "true"]) for i in images],
                    "containers": [container("pause", mirrors.pull_ref(spec, PAUSE_IMAGE), None)],
                },
            },
        },
    }


def peer_pools(spec: StackSpec) -> list[str]:
    return [p.name for p in spec.node_pools if peer(spec, p)]


def spegel_values(spec: StackSpec) -> dict[str, Any]:
    """Values of the Spegel chart (spegel-org/spegel v0.7.4 charts/spegel/values.yaml; its chart is not among
    upstream/charts: versions.NOT_BUNDLED). Its DaemonSet runs only where containerd keeps unpacked layers, or Spegel
    exits (its compatibility notes): on aws the AL2023 pools' nodes the platform sets so (``affinity``; the chart's
    default tolerations take any taint), elsewhere every Linux node of an existing cluster, whose containerd you set.
    The rest keeps the chart's defaults: every registry mirrored, the registry config path
    /etc/containerd/certs.d (AL2023's config_path lists it), hostPort 30020, priority system-node-critical."""
    if spec.cloud != "aws":
        return {}
    match = [{"key": derive.POOL_LABEL, "operator": "In", "values": peer_pools(spec)}]
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": match}]}
            }
        }
    }


# ------------------------------------------------------------------------------------------------ upstreams


def platform_images(spec: StackSpec) -> list[str]:
    """Every image reference (upstream, without the mirror) the stack installs: each installed chart's image blocks
    (their registry and repository), the images the platform sets itself, the declared images."""
    from ..data.aws_registries import EKS_ADDON_REGISTRIES
    from . import rules_core
    from .aws import efa

    refs: list[str] = []
    for chart in rules_core.installed_charts(spec):
        if chart.key == "efaDevicePlugin":  # from the cluster's Region where EKS has it (plan/aws/efa.py)
            registry = EKS_ADDON_REGISTRIES.get(spec.cluster.region or "")
            if registry:
                refs.append(f"{registry}/{efa.DEVICE_PLUGIN_REPOSITORY}")
                continue
        for image in chart_images.CHART_IMAGES[chart.key]:
            if image.registry is not None:
                refs += [f"{image.registry}/{r}" for r in (image.names or (image.repository,))]
            elif image.repository:
                refs.append(image.repository)
    if any(c.key in ("kueue", "volcano", "trainer") for c in rules_core.installed_charts(spec)):
        refs.append(versions.KUBECTL_IMAGE)  # the webhook gates' probe
    if spec.addons.trainer:
        refs.append(versions.TRAINER_TORCH_RUNTIME_IMAGE)
    if spec.fleet is not None and spec.fleet.reset_lost_jobs:
        refs.append(versions.FLEET_RESET_IMAGE)  # the fleet manager's lost-worker reset (plan/fleet_reset.py)
    if any(warm_method(spec, p) == "pre-pull" for p in spec.node_pools):
        refs.append(PAUSE_IMAGE)
    refs += [w.image for w in spec.images.workloads]
    return [mirrors.normalize(r) for r in refs]


# ECR pull-through cache: upstream host -> (upstreamRegistryUrl, whether ECR needs a Secrets Manager credential for
# it). ECR user guide, "Sync an upstream registry with an Amazon ECR private registry": Amazon ECR Public, the
# Kubernetes registry and Quay without authentication; Docker Hub, Azure Container Registry, GitHub Container
# Registry, GitLab Container Registry (gitlab.com only) and Chainguard with a Secrets Manager secret; the URLs as the
# CreatePullThroughCacheRule API reference spells them (Docker Hub's is registry-1.docker.io). NGC (nvcr.io) and
# every other registry are not upstreams it supports.
ECR_UPSTREAMS: dict[str, tuple[str, bool]] = {
    "public.ecr.aws": ("public.ecr.aws", False),
    "registry.k8s.io": ("registry.k8s.io", False),
    "quay.io": ("quay.io", False),
    "docker.io": ("registry-1.docker.io", True),
    "ghcr.io": ("ghcr.io", True),
    "registry.gitlab.com": ("registry.gitlab.com", True),
    "cgr.dev": ("cgr.dev", True),
}
AZURE_REGISTRY = ".azurecr.io"  # <name>.azurecr.io, with a credential
ECR_PREFIX_MAX = 30  # ecrRepositoryPrefix: 2 to 30 characters (CreatePullThroughCacheRule)
# What the nodes need to pull through a rule the first time: import the image and create its repository (ECR user
# guide, "IAM permissions required to sync an upstream registry with an Amazon ECR private registry").
PULL_THROUGH_ACTIONS = ("ecr:BatchImportUpstreamImage", "ecr:CreateRepository")


def ecr_upstream(host: str) -> tuple[str, bool] | None:
    """(upstreamRegistryUrl, needs a credential) of an upstream ECR pull-through caches, or None."""
    if host.endswith(AZURE_REGISTRY):
        return host, True
    return ECR_UPSTREAMS.get(host)


def upstream_plans(spec: StackSpec) -> list[UpstreamPlan]:
    """Each upstream registry of the stack's images (``platform_images``), by host, with how the mirror gets it."""
    m = mirrors.mirror_of(spec)
    by_host: dict[str, list[str]] = {}
    for ref in platform_images(spec):
        by_host.setdefault(mirrors.host_of(ref), [])
        if ref not in by_host[mirrors.host_of(ref)]:
            by_host[mirrors.host_of(ref)].append(ref)
    pt = spec.images.pull_through
    out = []
    for host, refs in sorted(by_host.items()):
        base = m.base(host) if m is not None else None
        cred = pt.credentials.get(host)
        common = {"host": host, "base": base, "images": tuple(sorted(refs))}
        if base is None:
            out.append(UpstreamPlan(how="in-cloud" if m is not None else "direct", **common))
        elif m is None or m.kind == "registry" or host in pt.copied:
            out.append(UpstreamPlan(how="copied" if host in pt.copied else "pull-through", **common))
        elif m.kind == "ecr":
            url = (ecr_upstream(host) or (None, False))[0]
            out.append(
                UpstreamPlan(how="pull-through", ecr_upstream=url, credential=cred.secret if cred else None, **common)
            )
        else:  # artifact-registry
            out.append(
                UpstreamPlan(
                    how="pull-through",
                    credential=cred.secret if cred else None,
                    username=cred.username if cred else None,
                    repository_id=mirrors.repository_id(host),
                    docker_hub=host == mirrors.DOCKER_HUB,
                    **common,
                )
            )
    return out


def node_policy(spec: StackSpec) -> dict[str, Any] | None:
    """aws pull-through: the IAM policy the platform's node roles get, so a node's first pull through a rule imports
    the image and creates its repository (scoped to the rules' prefixes); None otherwise."""
    m = mirrors.mirror_of(spec)
    if m is None or m.kind != "ecr":
        return None
    account = spec.images.pull_through.account_id
    region = spec.cluster.region
    partition = "aws-cn" if (region or "").startswith("cn-") else "aws"
    prefixes = [u.host for u in upstream_plans(spec) if u.how == "pull-through"]
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "PullThroughCache",
                "Effect": "Allow",
                "Action": list(PULL_THROUGH_ACTIONS),
                "Resource": [f"arn:{partition}:ecr:{region}:{account}:repository/{p}/*" for p in prefixes],
            }
        ],
    }


def copy_commands(spec: StackSpec) -> list[str]:
    """``crane copy`` of each image of a copied upstream to where the nodes pull it (the ECR repository must exist
    first: ``aws ecr create-repository``)."""
    m = mirrors.mirror_of(spec)
    if m is None:
        return []
    out = []
    for u in upstream_plans(spec):
        if u.how == "copied":
            pinned = [r for r in u.images if ":" in r.rsplit("/", 1)[-1] or "@" in r]  # a tag or digest to copy
            out += [f"crane copy {ref} {m.pull_ref(ref)}" for ref in pinned]
    return out


# ---------------------------------------------------------------------------------------------------- the plan


def wanted(spec: StackSpec) -> bool:
    """Whether the stack has an image section: it declares images or a mirror, or names an imageRegistry."""
    i = spec.images
    return bool(i.workloads or i.mirror != "none" or spec.image_registry or any(p.image_cache for p in spec.node_pools))


def pool_plan(spec: StackSpec, pool: NodePool, cold_pull: Mapping[str, Any]) -> PoolImagesPlan:
    cache = pool.image_cache
    return PoolImagesPlan(
        pool=pool.name,
        images=tuple(warm_image(spec, w) for w in pool_images(spec, pool)),
        mirror_hosts=containerd_mirror_hosts(spec, pool),
        warm=warm_method(spec, pool),
        streaming=streaming(spec, pool),
        fast_pull=fast_pull(spec, pool),
        peer=peer(spec, pool),
        snapshot_id=snapshot_id(spec, pool),
        disk_image=cache.disk_image if cache is not None and spec.cloud == "gcp" else None,
        disk_build=disk_build_command(spec, pool),
        pre_puller=freeze(pre_puller(spec, pool), keep_order=True) if warm_method(spec, pool) == "pre-pull" else None,
        cold_pull=freeze(dict(cold_pull)),
    )


def build(spec: StackSpec, cold_pulls: Mapping[str, Mapping[str, Any]]) -> ImagesPlan | None:
    """The stack's image plan, each pool with its cold pull (``cost.cold_pull``, by pool name); None without an image
    section (``wanted``)."""
    if not wanted(spec):
        return None
    m = mirrors.mirror_of(spec)
    pools = {p.name: pool_plan(spec, p, cold_pulls[p.name]) for p in spec.node_pools}
    return ImagesPlan(
        mirror=spec.images.mirror,
        mirror_kind=m.kind if m is not None else None,
        registry=m.registry if m is not None else None,
        upstreams=tuple(upstream_plans(spec)),
        pools=freeze(pools, keep_order=True),
        namespace=NAMESPACE if any(p.pre_puller for p in pools.values()) else None,
        node_policy=freeze(node_policy(spec)),
        copy_commands=tuple(copy_commands(spec)),
    )
