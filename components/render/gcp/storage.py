"""GKE's part of the shared file systems (``Plan.storage``): a found cluster's CSI add-ons checked (gpu-platform finds
it by name and cannot turn a cluster add-on on; a cluster it creates has them on, ``GkeCreatePlan.csi_addons``),
and for gcs-fuse the bucket with the tenant namespace's Workload Identity grant."""

from __future__ import annotations

import re
import warnings
from typing import Any

import pulumi

from ...plan import storage as storage_plan
from ...plan.plan import Plan


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def _enabled(addons: Any, config: str) -> bool:
    """addonsConfigs[0].<config>[0].enabled, whether the SDK hands it over as dicts or results."""

    def get(obj: Any, name: str) -> Any:
        if isinstance(obj, dict):
            return obj.get(name, obj.get(_snake(name)))
        return getattr(obj, _snake(name), None)

    entries = get((addons or [{}])[0], config) or []
    return bool(entries) and bool(get(entries[0], "enabled"))


def missing_addons(plan: Plan, addons: Any) -> list[str]:
    """The CSI add-ons the stack's file systems need that the looked-up cluster has off."""
    storage = plan.storage
    assert storage is not None
    return [a for a in storage.gke_addons if not _enabled(addons, a)]


def _check(plan: Plan, addons: Any) -> bool:
    missing = missing_addons(plan, addons)
    if missing:
        c = plan.gke.cluster if plan.gke else None
        names = {cfg: flag for cfg, flag in storage_plan.GKE_ADDONS.values()}
        flags = ",".join(f"{names[m]}=ENABLED" for m in missing)
        where = f"GKE cluster {c.name} ({c.project}/{c.location})" if c else "the GKE cluster"
        raise pulumi.RunError(
            f"{where} has {', '.join(names[m] for m in missing)} off, which gpu-platform:storage needs; enable it "
            f"(gcloud container clusters update {c.name if c else 'CLUSTER'} --update-addons={flags})"
        )
    return True


def buckets(parent: pulumi.Resource, plan: Plan, cluster: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The cluster's add-ons checked: per file system with a class, StorageClass parameters (none) that wait for
    the check, so a cluster without the driver stops the deploy before any class or bucket is sent; per gcs-fuse
    file system its bucket, which the tenant's namespace may read and write through Workload Identity Federation."""
    with warnings.catch_warnings():  # pulumi_gcp.storage's own deprecated getTransferProjectServieAccount alias
        warnings.simplefilter("ignore", DeprecationWarning)
        from pulumi_gcp import organizations, storage as gcs  # lazy modules: loaded on first attribute

        bucket_class, member_class = gcs.Bucket, gcs.BucketIAMMember

    storage, gke = plan.storage, plan.gke
    assert storage is not None and gke is not None
    if plan.gke_create is not None:  # created with the add-ons on (GkeCreatePlan.csi_addons): nothing to check
        ready = cluster.id.apply(lambda _: True)
    else:
        ready = cluster.addons_configs.apply(lambda a: _check(plan, a))
    project = gke.cluster.project
    out: dict[str, Any] = {}
    waits = {fs.name: ready.apply(lambda _: {}) for fs in storage.file_systems if fs.storage_class is not None}
    number = None
    for fs in storage.file_systems:
        if fs.bucket is None or fs.claim is None:
            continue
        if number is None:
            number = organizations.get_project_output(project_id=project).number
        b = fs.bucket
        bucket = bucket_class(
            f"bucket-{fs.name}",
            name=pulumi.Output.all(ready, b["name"]).apply(lambda a: a[1]),
            location=b["location"],
            project=project,
            uniform_bucket_level_access=True,
            public_access_prevention="enforced",
            force_destroy=False,  # a bucket holding objects is never deleted with the stack
            labels=dict(b["labels"]) or None,
            opts=pulumi.ResourceOptions(parent=parent, protect=storage.protect),
        )
        # Every Kubernetes ServiceAccount of the tenant's namespace (GKE, "Authenticate to Google Cloud APIs from
        # GKE workloads": principalSet .../namespace/NAMESPACE), so its jobs need no service account of their own.
        member = pulumi.Output.all(number, project).apply(
            lambda a, ns=fs.claim.namespace: (
                f"principalSet://iam.googleapis.com/projects/{a[0]}/locations/global/"
                f"workloadIdentityPools/{a[1]}.svc.id.goog/namespace/{ns}"
            )
        )
        member_class(
            f"bucket-{fs.name}-{fs.claim.namespace}",
            bucket=bucket.name,
            role=storage_plan.GCS_OBJECT_ROLE,
            member=member,
            opts=pulumi.ResourceOptions(parent=parent),
        )
        out[fs.name] = bucket
    return waits, out
