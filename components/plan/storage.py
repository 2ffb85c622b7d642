"""Shared file systems (``gpu-platform:storage``, issue 31.3): training data and checkpoints on a file system every
worker of a job mounts, so an evicted or preempted job restarts from its last checkpoint.

Each file system of the stack is one StorageClass of its cloud's CSI driver (the class and the claims against it
carry the file system's name):

* ``fsx-lustre`` (aws): FSx for Lustre through the FSx CSI driver (``fsx.csi.aws.com``), installed as the EKS
  add-on ``aws-fsx-csi-driver``; its controller creates a file system per claim, with the IAM role this plan
  scopes to the file systems it tags, trusted by Pod Identity or IRSA as ``karpenter.identity`` chooses.
* ``filestore`` and ``parallelstore`` (gcp): a Filestore instance or a Parallelstore instance per claim, through
  GKE's managed CSI drivers (cluster add-ons the cluster must have on; ``render/gcp/storage.py`` checks the lookup).
* ``gcs-fuse`` (gcp): a Cloud Storage bucket gpu-platform creates, mounted by GKE's Cloud Storage FUSE CSI driver
  (static provisioning only: a PersistentVolume naming the bucket, bound to the tenant's claim), read and written
  by the tenant's pods through Workload Identity Federation (a bucket IAM grant to the namespace's principal set).

``scope: cluster``: a ReadWriteMany class any tenant named in ``quotas`` claims within its quota; ``scope:
tenant``: the platform makes one claim (named after the file system) in the tenant's namespace, the tenant's jobs
mount it by name. Quotas are entries of each tenant's one ResourceQuota (``tenancy.quota_hard``): per class
``requests.storage`` and ``persistentvolumeclaims``, 0 for a tenant with no share. Nothing that holds data is
deleted by accident: every class (and PersistentVolume) has ``reclaimPolicy: Retain`` (deleting a claim keeps the
volume and its cloud file system), and the platform's claims, volumes and buckets are protected
(``storage.protect``).

Pure: the spec in, frozen data out; the rules check the spec (``components/cli/loader.py`` runs them).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic.alias_generators import to_camel

from ..spec.model import Problem, StackSpec, Tenant, key, rule
from ..spec.storage import FileSystem
from .frozen import frozen as _freeze
from .gcp.gke import created_network

PROVISIONERS = {
    "fsx-lustre": "fsx.csi.aws.com",
    "filestore": "filestore.csi.storage.gke.io",
    "parallelstore": "parallelstore.csi.storage.gke.io",
    "gcs-fuse": "gcsfuse.csi.storage.gke.io",
}
CLOUD_OF = {"fsx-lustre": "aws", "filestore": "gcp", "parallelstore": "gcp", "gcs-fuse": "gcp"}
# GKE cluster add-ons (the cluster's addonsConfig, as gcloud --update-addons and cluster-toolkit's gke-cluster
# module name them: GoogleCloudPlatform/cluster-toolkit@v1.95.0 modules/scheduler/gke-cluster/main.tf addons_config)
GKE_ADDONS = {
    "filestore": ("gcpFilestoreCsiDriverConfigs", "GcpFilestoreCsiDriver"),
    "parallelstore": ("parallelstoreCsiDriverConfigs", "ParallelstoreCsiDriver"),
    "gcs-fuse": ("gcsFuseCsiDriverConfigs", "GcsFuseCsiDriver"),
}

QUOTA_SUFFIX = ".storageclass.storage.k8s.io"  # corev1 ResourceQuota: per-StorageClass storage and claim counts

# FSx for Lustre: SCRATCH_2 and PERSISTENT_2 (SSD) file systems are 1200 GiB or a multiple of 2400 GiB (FSx for
# Lustre API CreateFileSystem StorageCapacity; the driver rounds a claim up to them: kubernetes-sigs/aws-fsx-csi-
# driver@v1.9.0 pkg/util/util.go RoundUpVolumeSize); PERSISTENT_2 takes 125, 250, 500 or 1000 MB/s per TiB.
FSX_SMALLEST_GIB = 1200
FSX_STEP_GIB = 2400
FSX_THROUGHPUTS = (125, 250, 500, 1000)
FSX_DEFAULT_THROUGHPUT = 250
# Lustre 2.15 file systems: the only ones the clients of AL2023's and Bottlerocket's 6.x kernels mount
# (kubernetes-sigs/aws-fsx-csi-driver@v1.9.0 docs/install.md, "EKS Auto Mode": fileSystemTypeVersion "2.15").
FSX_LUSTRE_VERSION = "2.15"
# The tag the driver puts on every file system it creates for this cluster (StorageClass parameter extraTags,
# pkg/driver/controller.go volumeParamsExtraTags); the controller's IAM policy deletes and changes only those.
FSX_CLUSTER_TAG = "gpu-platform-cluster"
FSX_CONTROLLER_SA = "fsx-csi-controller-sa"  # the add-on's controller ServiceAccount (driver docs/install.md)
FSX_CONTROLLER_NAMESPACE = "kube-system"
# Lustre's LNet ports: 988 and 1018-1023 between clients and file servers (FSx for Lustre User Guide, "File
# system access control with Amazon VPC"; awslabs/ai-on-eks@41a979e infra/base/terraform/fsx-for-lustre.tf opens
# 988 and 1021-1023; the guide names 1018-1023).
LUSTRE_PORTS = ((988, 988), (1018, 1023))
FSX_CLAIM_TIMEOUT = "30m"  # a platform-made claim's file system is created before the claim binds (ClaimPlan)

# Filestore: the smallest instance per tier (Filestore service tiers; GoogleCloudPlatform/cluster-toolkit@v1.95.0
# modules/file-system/filestore/variables.tf: "No Filestore tier supports less than 1024GiB", BASIC_SSD 2.5 TiB);
# the StorageClass's tier parameter as GKE's Filestore CSI driver names it.
FILESTORE_MIN_GIB = {"BASIC_HDD": 1024, "BASIC_SSD": 2560, "ZONAL": 1024, "ENTERPRISE": 1024}
FILESTORE_TIERS = {"BASIC_HDD": "standard", "BASIC_SSD": "premium", "ZONAL": "zonal", "ENTERPRISE": "enterprise"}
# Parallelstore: 12,000 to 100,000 GiB in steps of 4,000 GiB (GKE, "Create and use a volume backed by Parallelstore").
PARALLELSTORE_MIN_GIB, PARALLELSTORE_MAX_GIB, PARALLELSTORE_STEP_GIB = 12_000, 100_000, 4_000
# StorageClasses the clouds make themselves (EKS: gp2; GKE: the Compute Engine PD driver's and, with the Filestore
# add-on on, the Filestore driver's): a file system of that name would fail on create ("already exists").
CLOUD_CLASSES = {
    "aws": ("gp2",),
    "gcp": (
        "standard",
        "standard-rwo",
        "premium-rwo",
        "standard-rwx",
        "premium-rwx",
        "enterprise-rwx",
        "enterprise-multishare-rwx",
        "zonal-rwx",
    ),
}
GCS_OBJECT_ROLE = "roles/storage.objectUser"  # read, write and delete objects; no bucket administration


@dataclass(frozen=True)
class ClaimPlan:
    """The claim the platform makes for a tenant-scoped file system (and for gcs-fuse, the volume it binds to)."""

    namespace: str
    name: str
    storage: str  # its request, e.g. 1200Gi
    volume: str | None  # gcs-fuse: the static PersistentVolume's name (None: the CSI driver provisions one)
    # how long ``pulumi up`` waits for it to bind (None: the provider's default). pulumi-kubernetes waits for an
    # Immediate class's claim to be Bound (a WaitForFirstConsumer one only to be Pending: pulumi/pulumi-kubernetes
    # PR 3130), and an FSx for Lustre file system takes up to 10 minutes to create (awslabs/ai-on-eks@41a979e
    # infra/base/terraform/fsx-for-lustre.tf), past the provider's 5 minutes.
    create_timeout: str | None = None


@dataclass(frozen=True)
class FileSystemPlan:
    """A shared file system: its StorageClass, CSI driver, scope, claim and quotas."""

    name: str  # the StorageClass's name
    kind: str
    scope: str  # cluster | tenant
    provisioner: str  # the CSI driver
    storage_class: Mapping[str, Any] | None  # the StorageClass's fields (None: gcs-fuse, bound statically)
    claim: ClaimPlan | None  # scope tenant
    quotas: Mapping[str, Mapping[str, str]]  # tenant -> its ResourceQuota entries for this class
    fsx_subnet_id: str | None  # fsx-lustre: the stack's subnet (None: the cluster's first)
    fsx_security_group_ids: tuple[str, ...]  # fsx-lustre: the stack's groups (empty: the cluster security group)
    bucket: Mapping[str, Any] | None  # gcs-fuse: name, location, labels; the member granted: the tenant's namespace


@dataclass(frozen=True)
class FsxDriverPlan:
    """The FSx CSI driver as an EKS add-on, and its controller's IAM role."""

    addon: str
    version: str | None  # None: EKS's default build for the cluster's Kubernetes version
    namespace: str
    service_account: str
    role_name: str
    policy: Mapping[str, Any]  # the role's policy document (the account and region come from the cluster)


@dataclass(frozen=True)
class StoragePlan:
    """The stack's shared storage: file systems, the FSx driver and the GKE add-ons they need."""

    file_systems: tuple[FileSystemPlan, ...]
    fsx_driver: FsxDriverPlan | None  # aws stacks with an fsx-lustre file system
    gke_addons: tuple[str, ...]  # GKE add-ons (addonsConfig keys) the cluster must have on
    protect: bool  # claims, volumes and buckets are protected


# ------------------------------------------------------------------------------------------------ rules


@rule
def storage_file_systems(spec: StackSpec) -> Iterator[Problem]:
    tenants = {t.name for t in spec.tenants}
    seen: set[str] = set()
    for i, fs in enumerate(spec.storage.file_systems):
        at = ("storage", "fileSystems", i)
        if fs.name in seen:
            yield Problem(key(*at, "name"), f"file system {fs.name!r} is declared twice")
        if fs.name in CLOUD_CLASSES.get(spec.cloud, ()):
            yield Problem(key(*at, "name"), f"{fs.name!r} is a StorageClass the cloud makes itself; name it otherwise")
        seen.add(fs.name)
        cloud = CLOUD_OF[fs.kind]
        if spec.cloud != cloud:
            yield Problem(key(*at, "kind"), f"{fs.kind} is for {cloud} stacks; this stack's cloud is {spec.cloud}")
            continue
        for opt, kind in (("fsx", "fsx-lustre"), ("filestore", "filestore"), ("gcs_fuse", "gcs-fuse")):
            if getattr(fs, opt) is not None and fs.kind != kind:
                yield Problem(key(*at, to_camel(opt)), f"applies to kind {kind} only, not {fs.kind}")
        yield from _scope_problems(fs, at, tenants)
        yield from _size_problems(fs, at)


def _scope_problems(fs: FileSystem, at: tuple[str | int, ...], tenants: set[str]) -> Iterator[Problem]:
    if fs.scope == "tenant":
        if fs.tenant is None:
            yield Problem(key(*at, "tenant"), "a tenant-scoped file system names its tenant")
        elif fs.tenant not in tenants:
            yield Problem(key(*at, "tenant"), f"unknown tenant {fs.tenant!r} (tenants: {', '.join(sorted(tenants))})")
        if fs.size_gib is None:
            yield Problem(key(*at, "sizeGib"), "a tenant-scoped file system gives the size of its claim")
        if fs.quotas:
            yield Problem(
                key(*at, "quotas"), "a tenant-scoped file system's quota is its claim; quotas are for scope cluster"
            )
        return
    if fs.tenant is not None:
        yield Problem(key(*at, "tenant"), "only a tenant-scoped file system names a tenant (scope: tenant)")
    if fs.kind == "gcs-fuse":
        yield Problem(
            key(*at, "scope"),
            "gcs-fuse is tenant-scoped: the Cloud Storage FUSE CSI driver provisions "
            "no volumes, so each bucket is bound to one tenant's claim",
        )
    for name in fs.quotas:
        if name not in tenants:
            yield Problem(key(*at, "quotas", name), f"unknown tenant {name!r}")


def _size_problems(fs: FileSystem, at: tuple[str | int, ...]) -> Iterator[Problem]:
    """The claim's size (one file system) must be one the service makes; a quota must hold at least the
    smallest one (else no claim of the class could ever be made)."""
    claim = [(key(*at, "sizeGib"), fs.size_gib)] if fs.size_gib is not None and fs.kind != "gcs-fuse" else []
    quotas = [(key(*at, "quotas", t, "storageGib"), q.storage_gib) for t, q in fs.quotas.items() if q.storage_gib]
    if fs.kind == "fsx-lustre":
        fsx = fs.fsx
        throughput = fsx.per_unit_storage_throughput if fsx else None
        at_throughput = key(*at, "fsx", "perUnitStorageThroughput")
        if throughput is not None and fsx is not None and fsx.deployment_type != "PERSISTENT_2":
            yield Problem(at_throughput, "applies to PERSISTENT_2 file systems only")
        elif throughput is not None and throughput not in FSX_THROUGHPUTS:
            yield Problem(
                at_throughput,
                f"PERSISTENT_2 takes {', '.join(map(str, FSX_THROUGHPUTS))} MB/s per TiB, not {throughput}",
            )
        for path, gib in claim:
            if gib != FSX_SMALLEST_GIB and (gib < FSX_STEP_GIB or gib % FSX_STEP_GIB):
                yield Problem(path, f"FSx for Lustre sizes are 1200 GiB or a multiple of 2400 GiB, not {gib}")
        smallest, what = FSX_SMALLEST_GIB, "FSx for Lustre file system"
    elif fs.kind == "filestore":
        tier = fs.filestore.tier if fs.filestore else "BASIC_SSD"
        smallest, what = FILESTORE_MIN_GIB[tier], f"Filestore {tier} instance"
        claim_ok = [(p, g) for p, g in claim if g < smallest]
        for path, _ in claim_ok:
            yield Problem(path, f"the smallest {what} is {smallest} GiB")
    elif fs.kind == "parallelstore":
        for path, gib in claim:
            if not PARALLELSTORE_MIN_GIB <= gib <= PARALLELSTORE_MAX_GIB or gib % PARALLELSTORE_STEP_GIB:
                yield Problem(
                    path,
                    f"Parallelstore instances are {PARALLELSTORE_MIN_GIB} to {PARALLELSTORE_MAX_GIB} GiB in steps of "
                    f"{PARALLELSTORE_STEP_GIB}, not {gib}",
                )
        smallest, what = PARALLELSTORE_MIN_GIB, "Parallelstore instance"
    else:
        return
    for path, gib in quotas:
        if gib < smallest:
            yield Problem(path, f"below the smallest {what} ({smallest} GiB): no claim would fit")


# ---------------------------------------------------------------------------------------------- decisions


def _mine(spec: StackSpec) -> list[FileSystem]:
    """The stack's file systems of its cloud (a mismatch is refused by the rules; the plan never sees one)."""
    return [fs for fs in spec.storage.file_systems if CLOUD_OF[fs.kind] == spec.cloud]


def _share(fs: FileSystem, tenant: str) -> tuple[int, int]:
    """GiB and claims the tenant may hold of the file system's class."""
    if fs.scope == "tenant":
        return (fs.size_gib or 0, 1) if fs.tenant == tenant else (0, 0)
    q = fs.quotas.get(tenant)
    return (q.storage_gib, q.claims) if q else (0, 0)


def quota_key(storage_class: str, what: str) -> str:
    """``<class>.storageclass.storage.k8s.io/requests.storage`` or ``.../persistentvolumeclaims``."""
    return f"{storage_class}{QUOTA_SUFFIX}/{what}"


def quota_entries(spec: StackSpec, tenant: Tenant) -> dict[str, str]:
    """The tenant's ResourceQuota entries for every file system's class (0 where it has no share), which
    ``tenancy.quota_hard`` adds to its one ResourceQuota."""
    out: dict[str, str] = {}
    for fs in _mine(spec):
        out.update(quota_entries_of(fs, tenant.name))
    return out


def storage_class(spec: StackSpec, fs: FileSystem) -> dict[str, Any] | None:
    """The StorageClass's fields (the FSx subnet and security groups the renderer adds from the stack or the
    cluster). Every class retains its volumes: deleting a claim never deletes a file system's data."""
    base: dict[str, Any] = {"provisioner": PROVISIONERS[fs.kind], "reclaimPolicy": "Retain"}
    if fs.kind == "fsx-lustre":
        from ..spec.storage import FsxLustre

        fsx = fs.fsx or FsxLustre()
        parameters = {"deploymentType": fsx.deployment_type, "fileSystemTypeVersion": FSX_LUSTRE_VERSION}
        if fsx.deployment_type == "PERSISTENT_2":
            parameters["perUnitStorageThroughput"] = str(fsx.per_unit_storage_throughput or FSX_DEFAULT_THROUGHPUT)
        parameters["extraTags"] = f"{FSX_CLUSTER_TAG}={spec.cluster.name or ''}"
        # flock: Lustre's cluster-wide locks, which checkpoint writers rely on (awslabs/ai-on-eks@41a979e
        # infra/base/terraform/fsx-for-lustre/fsxlustre-static-pv.yaml mountOptions)
        return {**base, "parameters": parameters, "mountOptions": ["flock"], "volumeBindingMode": "Immediate"}
    if fs.kind == "filestore":
        from ..spec.storage import Filestore

        fst = fs.filestore or Filestore()
        network = fst.network or _created_network(spec)
        parameters = {"tier": FILESTORE_TIERS[fst.tier], **({"network": network} if network else {})}
        return {
            **base,
            "parameters": parameters,
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowVolumeExpansion": True,
        }
    if fs.kind == "parallelstore":
        # as cluster-toolkit@v1.95.0 modules/file-system/gke-storage/storage-class/parallelstore-sc.yaml.tftpl
        return {**base, "volumeBindingMode": "WaitForFirstConsumer"}
    return None  # gcs-fuse: a PersistentVolume per bucket, bound to its claim (no provisioner to name)


def _claim(fs: FileSystem) -> ClaimPlan | None:
    if fs.scope != "tenant" or fs.tenant is None:
        return None
    volume = f"{fs.tenant}-{fs.name}" if fs.kind == "gcs-fuse" else None
    timeout = FSX_CLAIM_TIMEOUT if fs.kind == "fsx-lustre" else None
    return ClaimPlan(
        namespace=fs.tenant, name=fs.name, storage=f"{fs.size_gib}Gi", volume=volume, create_timeout=timeout
    )


def _region(location: str | None) -> str | None:
    """A GCP zone's region (us-central1-a -> us-central1); a region as given."""
    if location and location.count("-") == 2:
        return location.rsplit("-", 1)[0]
    return location


def file_system_plan(spec: StackSpec, fs: FileSystem) -> FileSystemPlan:
    bucket = None
    if fs.kind == "gcs-fuse" and fs.gcs_fuse is not None:
        location = fs.gcs_fuse.location or _region(spec.cluster.location) or ""
        bucket = {"name": fs.gcs_fuse.bucket, "location": location.upper(), "labels": dict(spec.tags)}
    subnet = (fs.fsx.subnet_id if fs.fsx else None) or (spec.cluster.subnet_ids[0] if spec.cluster.subnet_ids else None)
    return FileSystemPlan(
        name=fs.name,
        kind=fs.kind,
        scope=fs.scope,
        provisioner=PROVISIONERS[fs.kind],
        storage_class=_freeze(storage_class(spec, fs)),
        claim=_claim(fs),
        quotas=_freeze({t.name: quota_entries_of(fs, t.name) for t in spec.tenants}),
        fsx_subnet_id=subnet if fs.kind == "fsx-lustre" else None,
        fsx_security_group_ids=tuple(fs.fsx.security_group_ids) if fs.fsx else (),
        bucket=_freeze(bucket),
    )


def quota_entries_of(fs: FileSystem, tenant: str) -> dict[str, str]:
    gib, claims = _share(fs, tenant)
    return {
        quota_key(fs.name, "requests.storage"): f"{gib}Gi" if gib else "0",
        quota_key(fs.name, "persistentvolumeclaims"): str(claims),
    }


def fsx_policy(cluster: str) -> dict[str, Any]:
    """The FSx CSI controller's policy: the actions the driver's docs list for dynamic provisioning
    (kubernetes-sigs/aws-fsx-csi-driver@v1.9.0 docs/install.md), scoped to the file systems it creates for this
    cluster (tagged through the StorageClass's extraTags). Left out: the S3 data-repository actions
    (iam:AttachRolePolicy / PutRolePolicy on the s3.data-source.lustre.fsx service-linked role, s3:ListBucket),
    needed only for s3ImportPath, which no class here sets."""
    from .aws import iam

    tag = f"aws:RequestTag/{FSX_CLUSTER_TAG}"
    return iam.document(
        [
            {
                "Sid": "CreateThisClustersFileSystems",
                "Effect": "Allow",
                "Action": ["fsx:CreateFileSystem", "fsx:TagResource"],
                "Resource": "*",
                "Condition": {"StringEquals": {tag: cluster}},
            },
            {
                "Sid": "ChangeThisClustersFileSystems",
                "Effect": "Allow",
                "Action": ["fsx:DeleteFileSystem", "fsx:UpdateFileSystem"],
                "Resource": "*",
                "Condition": {"StringEquals": {f"aws:ResourceTag/{FSX_CLUSTER_TAG}": cluster}},
            },
            {
                # Describe* calls have no resource-level permissions
                "Sid": "DescribeFileSystems",
                "Effect": "Allow",
                "Action": ["fsx:DescribeFileSystems"],
                "Resource": "*",
            },
            {
                "Sid": "FsxServiceLinkedRole",
                "Effect": "Allow",
                "Action": ["iam:CreateServiceLinkedRole"],
                "Resource": "*",
                "Condition": {"StringLike": {"iam:AWSServiceName": ["fsx.amazonaws.com"]}},
            },
        ]
    )


def fsx_driver_plan(spec: StackSpec) -> FsxDriverPlan | None:
    from ..data import versions

    if spec.cloud != "aws" or not any(fs.kind == "fsx-lustre" for fs in spec.storage.file_systems):
        return None
    cluster = spec.cluster.name or ""
    return FsxDriverPlan(
        addon=versions.FSX_CSI_DRIVER_ADDON,
        version=versions.fsx_csi_driver_addon_version(spec.cluster.kubernetes_version),
        namespace=FSX_CONTROLLER_NAMESPACE,
        service_account=FSX_CONTROLLER_SA,
        role_name=f"{cluster}-fsx-csi-driver",
        policy=_freeze(fsx_policy(cluster)),
    )


def _created_network(spec: StackSpec) -> str | None:
    """The VPC of a GKE cluster the stack creates (the driver's default, ``default``, is not on its nodes' network);
    None for a found cluster."""
    created = spec.cloud == "gcp" and spec.cluster.create is not None
    return created_network(spec.cluster.name or "") if created else None


def storage_plan(spec: StackSpec) -> StoragePlan | None:
    """The stack's shared file systems; None when it declares none."""
    mine = _mine(spec)
    if not mine:
        return None
    return StoragePlan(
        file_systems=tuple(file_system_plan(spec, fs) for fs in mine),
        fsx_driver=fsx_driver_plan(spec),
        gke_addons=tuple(sorted({GKE_ADDONS[fs.kind][0] for fs in mine if fs.kind in GKE_ADDONS})),
        protect=spec.storage.protect,
    )


def text(p: StoragePlan | None) -> list[str]:
    """``gpu-platform plan``'s storage section."""
    if p is None:
        return []
    lines = ["", "Storage"]
    for fs in p.file_systems:
        where = f"claim {fs.claim.name} ({fs.claim.storage}) in {fs.claim.namespace}" if fs.claim else "shared"
        sc = fs.storage_class
        params = ", ".join(f"{k}={v}" for k, v in (sc or {}).get("parameters", {}).items())
        kind = (
            f"StorageClass {fs.name} ({fs.provisioner}{'; ' + params if params else ''}; Retain)"
            if sc
            else (f"bucket {fs.bucket['name'] if fs.bucket else '?'} through {fs.provisioner} (static volume; Retain)")
        )
        lines.append(f"  {fs.name}: {fs.kind}, {fs.scope} scope, {where}; {kind}")
        shares = []
        for t, q in fs.quotas.items():
            n = q[quota_key(fs.name, "persistentvolumeclaims")]
            if n != "0":
                gib = q[quota_key(fs.name, "requests.storage")]
                shares.append(f"{t} {gib} in at most {n} claim{'' if n == '1' else 's'}")
        lines.append(f"    quota: {', '.join(shares) or 'no tenant'} (others 0)")
    if p.fsx_driver is not None:
        d = p.fsx_driver
        lines.append(
            f"  EKS add-on {d.addon} ({d.version or 'EKS default for the cluster version'}); controller "
            f"{d.namespace}/{d.service_account} as role {d.role_name}"
        )
    if p.gke_addons:
        names = dict(GKE_ADDONS.values())
        lines.append(f"  GKE add-ons the cluster must have on: {', '.join(names[a] for a in p.gke_addons)}")
    lines.append(f"  protected (claims, volumes, buckets): {'yes' if p.protect else 'no'}")
    return lines
