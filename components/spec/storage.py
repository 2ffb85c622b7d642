"""The stack spec's shared file systems (``gpu-platform:storage``): named file systems for training data and
checkpoints, each a StorageClass of its cloud's CSI driver, shared by the whole cluster (any tenant claims it
within its quota) or owned by one tenant (a claim in its namespace, made by the platform). Part of the spec layer
(``components/spec/model.py``): imports only ``validation`` and ``spec_base``. The rules (the kind matches the
cloud, sizes the file system service accepts, tenants that exist) are ``components/plan/storage.py``'s.
"""

from typing import Literal

from pydantic import Field

from .base import Model, Name
from .validation import count

# The largest size a claim or quota may name: Parallelstore's and Filestore's maxima are 100 TiB; FSx for Lustre
# reaches a few PiB. Bounded so GiB x 1024^3 stays an int64 quantity.
MAX_GIB = 8 * 1024 * 1024


class ClaimQuota(Model):
    """What one tenant may claim of a cluster-scoped file system's StorageClass (its namespace's ResourceQuota)."""

    storage_gib: count(0, MAX_GIB) = Field(description="GiB of claims, summed over the tenant's claims of the class")
    claims: count(0, 1000) = Field(default=1, description="how many claims of the class the tenant may hold")


class FsxLustre(Model):
    """FSx for Lustre, provisioned by the FSx CSI driver (``fsx.csi.aws.com``) per claim."""

    deployment_type: Literal["SCRATCH_2", "PERSISTENT_2"] = Field(
        default="PERSISTENT_2", description="SCRATCH_2: no replication, cheapest; PERSISTENT_2: replicated in its AZ"
    )
    per_unit_storage_throughput: count(1, 10_000) | None = Field(
        default=None, description="PERSISTENT_2 only: MB/s per TiB (125, 250, 500 or 1000; default 250)"
    )
    subnet_id: str | None = Field(
        default=None, description="the subnet (and AZ) of the file systems (default: the cluster's first subnet)"
    )
    security_group_ids: list[str] = Field(
        default_factory=lambda: [],
        description="the file systems' security groups (default: the cluster security group); each gets the "
        "Lustre ports (TCP 988, 1018-1023) open within itself",
    )


class Filestore(Model):
    """Filestore, provisioned by GKE's Filestore CSI driver (``filestore.csi.storage.gke.io``) per claim."""

    tier: Literal["BASIC_HDD", "BASIC_SSD", "ZONAL", "ENTERPRISE"] = Field(
        default="BASIC_SSD", description="the Filestore service tier of each instance"
    )
    network: str | None = Field(default=None, description="the VPC network of the instances (default: default)")


class GcsFuse(Model):
    """A Cloud Storage bucket mounted through GKE's Cloud Storage FUSE CSI driver (``gcsfuse.csi.storage.gke.io``)."""

    bucket: str = Field(
        pattern=r"^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$", description="the bucket gpu-platform creates (a global name)"
    )
    location: str | None = Field(default=None, description="the bucket's location (default: the cluster's region)")


class FileSystem(Model):
    """A shared file system: a ReadWriteMany StorageClass tenants claim from, or one tenant's own claim."""

    name: Name = Field(description="the StorageClass's name, and of a tenant file system's claim")
    kind: Literal["fsx-lustre", "filestore", "parallelstore", "gcs-fuse"] = Field(
        description="fsx-lustre on aws; filestore, parallelstore or gcs-fuse on gcp"
    )
    scope: Literal["cluster", "tenant"] = Field(
        default="cluster",
        description="cluster: a ReadWriteMany class every tenant named in quotas claims within its quota; tenant: "
        "one claim the platform makes in the tenant's namespace",
    )
    tenant: Name | None = Field(default=None, description="scope tenant: the tenant that owns it")
    size_gib: count(1, MAX_GIB) | None = Field(
        default=None, description="scope tenant: the claim's size in GiB (gcs-fuse: nominal, a bucket has none)"
    )
    quotas: dict[Name, ClaimQuota] = Field(
        default_factory=lambda: {},
        description="scope cluster: per tenant, what it may claim of the class (a tenant left out may claim none)",
    )
    fsx: FsxLustre | None = Field(default=None, description="kind fsx-lustre: the file systems' settings")
    filestore: Filestore | None = Field(default=None, description="kind filestore: the instances' settings")
    gcs_fuse: GcsFuse | None = Field(default=None, description="kind gcs-fuse: the bucket the platform creates")


class Storage(Model):
    """Shared file systems for training data and checkpoints."""

    file_systems: list[FileSystem] = Field(default_factory=lambda: [], description="the shared file systems")
    protect: bool = Field(
        default=True,
        description="protect what holds data (tenant claims, their volumes, buckets): removing a file system or "
        "its tenant fails until this is false; the StorageClasses keep reclaimPolicy Retain either way",
    )
