"""The stack spec's image delivery (``gpu-platform:images``, issue 39): the images that matter (per pool or per
tenant), the registry mirror the nodes pull them and the platform's own images through, and how each pool gets
them warm before work lands. Part of the spec layer (``components/spec/model.py``): imports only ``validation``
and ``spec_base``. What the mirror and the warm paths mean per cloud, and the rules (a mirror upstream the cloud
supports, credentials as secret references, pools and tenants that exist), are ``components/plan/images.py``'s.

A secret credential is never a value here: ``pullThrough.credentials`` holds references (a Secrets Manager ARN,
a Secret Manager secret version); a value that is not one is refused without being repeated in the message.
"""

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from .base import Model, Name
from .validation import count

# An image reference as containerd takes it: [host[:port]/]path[:tag][@sha256:<64 hex>] (distribution/reference's
# grammar, lower-case path components separated by '.', '_', '__' or dashes; a run of separators is let through
# here). The rules require a tag or a digest.
IMAGE_REF = (
    r"^([a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]+)?/)?[a-z0-9]+([._-]+[a-z0-9]+)*(/[a-z0-9]+([._-]+[a-z0-9]+)*)*"
    r"(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[0-9a-f]{64})?$"
)
ImageRef = Annotated[str, Field(pattern=IMAGE_REF, max_length=512)]
# A registry host as an image reference names it (the part before the first '/').
RegistryHost = Annotated[
    str, Field(pattern=r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]+)?$", max_length=253, description="registry host")
]

# Secret references (never the secret): an AWS Secrets Manager secret ARN (the ECR pull-through cache takes one
# whose name starts with ecr-pullthroughcache/: ECR API CreatePullThroughCacheRule credentialArn pattern), or a
# Google Secret Manager secret version (Artifact Registry remote repositories' passwordSecretVersion:
# projects/{project}/secrets/{secret}/versions/{version}).
_AWS_SECRET = re.compile(r"arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:[A-Za-z0-9/_+=.@-]{1,512}")
_GCP_SECRET = re.compile(r"projects/[a-z0-9-]{1,63}/secrets/[A-Za-z0-9_-]{1,255}/versions/([0-9]{1,10}|latest)")


def _secret_reference(v: str) -> str:
    """A reference to a secret, not a secret: the value itself is never echoed (it may be a pasted token)."""
    if not (_AWS_SECRET.fullmatch(v) or _GCP_SECRET.fullmatch(v)):
        raise ValueError(
            "must reference a secret, not hold one: an AWS Secrets Manager secret ARN "
            "(arn:aws:secretsmanager:REGION:ACCOUNT:secret:ecr-pullthroughcache/NAME) or a Secret Manager secret "
            "version (projects/PROJECT/secrets/NAME/versions/N); the value given is not shown"
        )
    return v


SecretReference = Annotated[str, AfterValidator(_secret_reference)]
DEFAULT_IMAGE_GIB = 20
# A Compute Engine image as GKE's secondaryBootDisks.diskImage takes it (global/images/NAME in the cluster's project,
# projects/PROJECT/global/images/NAME in another; GKE "Use secondary boot disks to preload data or container images").
DiskImage = Annotated[
    str,
    Field(pattern=r"^(projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/)?global/images/[a-z]([-a-z0-9]{0,61}[a-z0-9])?$"),
]


class UpstreamCredential(Model):
    """How the cloud's cache signs in to an upstream registry: a reference to a secret it reads itself."""

    secret: SecretReference = Field(
        description="aws: the Secrets Manager secret ARN holding the upstream's username and access token (its name "
        "starts with ecr-pullthroughcache/); gcp: the Secret Manager secret version holding the password or token"
    )
    username: Annotated[str, Field(min_length=1, max_length=256)] | None = Field(
        default=None, description="gcp: the upstream user name (not a secret; NGC's is $oauthtoken)"
    )


class PullThrough(Model):
    """The cloud's registry cache: ECR pull-through cache rules (aws), Artifact Registry remote repositories (gcp),
    or on an existing cluster the registry ``imageRegistry`` names."""

    account_id: Annotated[str, Field(pattern=r"^[0-9]{12}$")] | None = Field(
        default=None,
        description="aws: the account of the ECR registry that caches (the stack's region); the offline synth "
        "cannot look it up",
    )
    credentials: dict[RegistryHost, UpstreamCredential] = Field(
        default_factory=lambda: {},
        description="upstream registry host -> the secret the cache signs in with (references only); aws requires "
        "one for Docker Hub, GHCR, GitLab, Azure and Chainguard",
    )
    copied: list[RegistryHost] = Field(
        default_factory=lambda: [],
        description="upstreams the cache cannot pull through (nvcr.io on ECR): you copy their images into the cache's "
        "registry under <registry>/<upstream host>/ (crane copy, skopeo sync); the plan lists what to copy",
    )


class WorkloadImage(Model):
    """An image that matters: warm on the nodes of the pools it names (and of the tenants' pools)."""

    name: Name = Field(description="a stable name (the pre-puller's container, the plan's entries)")
    image: ImageRef = Field(description="the image as its upstream names it, with a tag or a sha256 digest")
    size_gib: count(1, 2048) | None = Field(
        default=None,
        description=f"its size (what a cold pull moves and unpacks), for the cold-pull cost; default "
        f"{DEFAULT_IMAGE_GIB}",
    )
    pools: list[Name] = Field(default_factory=lambda: [], description="pools whose nodes hold it warm")
    tenants: list[Name] = Field(
        default_factory=lambda: [], description="tenants whose pools (gpuQuota) hold it warm, in addition to pools"
    )


class Images(Model):
    mirror: Literal["none", "pull-through", "peer"] = Field(
        default="none",
        description="pull-through: the cloud's registry cache (ECR pull-through cache rules, Artifact Registry "
        "remote repositories; existing clusters: imageRegistry), which every image the platform installs and every "
        "declared image is pulled through; peer: an in-cluster peer-to-peer mirror (Spegel) on the nodes' "
        "containerd; none: upstream registries (imageRegistry still moves the platform's images)",
    )
    pull_through: PullThrough = Field(
        default_factory=lambda: PullThrough(),
        description="mirror pull-through: the registry cache's account and credentials",
    )
    workloads: list[WorkloadImage] = Field(
        default_factory=lambda: [],
        max_length=100,
        description="the workload images that matter (CUDA, PyTorch, vLLM...)",
    )
    pre_pull: bool = Field(
        default=True,
        description="a pre-puller DaemonSet warms the declared images on pools without a snapshot or a disk image "
        "(it tolerates the pool's taints, requests almost nothing and holds no GPU)",
    )


class ImageCache(Model):
    """A pool's nodes boot with the declared images already on disk."""

    snapshot_id: Annotated[str, Field(pattern=r"^snap-[0-9a-f]{8,17}$")] | None = Field(
        default=None,
        description="aws, Bottlerocket: the EBS snapshot of a data volume that already holds the images (restored as "
        "/dev/xvdb, initialized at the provisioned rate); the volume takes the snapshot's encryption: snapshot an "
        "encrypted volume, or turn on EBS encryption by default",
    )
    disk_image: (
        Annotated[
            str,
            Field(pattern=r"^(projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/)?global/images/[a-z]([-a-z0-9]{0,61}[a-z0-9])?$"),
        ]
        | None
    ) = Field(
        default=None,
        description="gcp: the disk image (global/images/NAME or projects/PROJECT/global/images/NAME) of a secondary "
        "boot disk holding the images (mode CONTAINER_IMAGE_CACHE); the plan prints the command that builds it",
    )
