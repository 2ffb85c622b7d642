"""Shared file systems (``Plan.storage``, decided in ``components/plan/storage.py``): per file system its
StorageClass (ReadWriteMany, ``reclaimPolicy: Retain``), and for a tenant-scoped one the claim in the tenant's
namespace its jobs mount by name (for gcs-fuse, the PersistentVolume naming the bucket, bound to that claim).
The cloud's part, which only the cloud's lookups and objects can finish, is in ``aws/storage.py`` (the FSx CSI
add-on, its IAM role, the Lustre ports, the subnet and security groups of the class) and ``gcp/storage.py`` (the
cluster's CSI add-ons checked, the bucket and its Workload Identity grant); each is imported only on its cloud.

The claims and volumes are protected with ``storage.protect``: removing a file system or its tenant from the
stack fails instead of deleting the claim (the volume and its data are retained by the class either way).
"""

from __future__ import annotations

from typing import Any

import pulumi

from ..plan import derive
from ..plan.plan import Plan, plain
from . import addon, k8s


class SharedStorage(addon.Component):
    """The plan's file systems: classes, tenant claims, and the cloud objects they need."""

    TYPE = "gpu-platform:index:SharedStorage"

    def __init__(
        self,
        name: str,
        plan: Plan,
        provider: pulumi.ProviderResource,
        namespaces: dict[str, Any],
        access: Any,
        tenancy: pulumi.Resource | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """``namespaces``: the tenants' namespace names (``Tenancy.namespaces``); ``access``: the cluster access
        component (its ``cluster`` lookup); ``tenancy``: the tenants' component, whose ResourceQuotas (with their
        storage entries) the claims wait for, so a grown claim is never sent before the quota that admits it."""
        self.namespaces = namespaces
        self.access = access
        self.tenancy = tenancy
        super().__init__(name, plan, provider, opts)

    def build(self) -> None:
        storage = self.plan.storage
        assert storage is not None, "the plan has no shared storage"
        extra: dict[str, Any] = {}  # file system -> StorageClass parameters only the cloud knows
        deps: list[pulumi.Resource] = []  # what the classes wait for (the CSI driver)
        buckets: dict[str, Any] = {}
        if self.plan.aws is not None:
            from .aws import storage as aws_storage

            extra, deps = aws_storage.fsx(self, self.plan, self.access.cluster)
        if self.plan.gke is not None:
            from .gcp import storage as gcp_storage

            extra, buckets = gcp_storage.buckets(self, self.plan, self.access.cluster)
        protect = storage.protect
        for fs in storage.file_systems:
            labels = {**derive.MANAGED_BY, "gpu-platform/file-system": fs.name}
            claim_deps: list[pulumi.Resource] = [self.tenancy] if self.tenancy is not None else []
            if fs.storage_class is not None:
                sc = plain(fs.storage_class)
                params = sc.pop("parameters", {})
                if fs.name in extra:
                    # an empty map is left out, not sent as {}: the API server drops it, and the next apply's {}
                    # would then be an update of parameters, which StorageClasses forbid (seen on kube-apiserver)
                    params = pulumi.Output.from_input(extra[fs.name]).apply(lambda e, p=params: {**p, **e} or None)
                storage_class = k8s.kube_object(
                    f"storage-class-{fs.name}",
                    "storage.k8s.io/v1",
                    "StorageClass",
                    metadata={"name": fs.name, "labels": labels},
                    **({"parameters": params} if fs.name in extra or params else {}),
                    **sc,
                    opts=self.child(deps),
                )
                claim_deps.append(storage_class)  # the provisioner acts on a claim once its class exists
            if fs.claim is None:
                continue
            c = fs.claim
            namespace = self.namespaces[c.namespace]
            if c.volume is not None:  # gcs-fuse: the bucket's volume, bound to the claim below
                claim_deps.append(
                    k8s.kube_object(
                        f"volume-{c.volume}",
                        "v1",
                        "PersistentVolume",
                        metadata={"name": c.volume, "labels": labels},
                        spec=_bucket_volume(fs.name, fs.provisioner, buckets[fs.name], c.namespace, c.name, c.storage),
                        opts=self.child([buckets[fs.name]], protect=protect),
                    )
                )
            spec: dict[str, Any] = {
                "accessModes": ["ReadWriteMany"],
                "storageClassName": fs.name,
                "resources": {"requests": {"storage": c.storage}},
            }
            if c.volume is not None:
                spec["volumeName"] = c.volume
            k8s.kube_object(
                f"claim-{c.namespace}-{c.name}",
                "v1",
                "PersistentVolumeClaim",
                metadata={
                    "name": c.name,
                    "namespace": namespace,
                    "labels": {**labels, derive.TENANT_LABEL: c.namespace},
                },
                spec=spec,
                opts=self.child(
                    claim_deps,
                    protect=protect,
                    custom_timeouts=pulumi.CustomTimeouts(create=c.create_timeout) if c.create_timeout else None,
                ),
            )
        self.register_outputs({})


def _bucket_volume(
    storage_class: str, driver: str, bucket: Any, namespace: str, claim: str, size: str
) -> dict[str, Any]:
    """A PersistentVolume for a Cloud Storage bucket, as cluster-toolkit@v1.95.0
    modules/file-system/gke-persistent-volume/templates/gcs-pv.yaml.tftpl makes one, bound to the tenant's claim."""
    return {
        "accessModes": ["ReadWriteMany"],
        "capacity": {"storage": size},  # nominal: a bucket has no size (the quota counts the claim's request)
        "storageClassName": storage_class,
        "persistentVolumeReclaimPolicy": "Retain",
        "mountOptions": ["implicit-dirs"],  # directories made by other writers (gsutil, training code) are seen
        "claimRef": {"namespace": namespace, "name": claim},
        "csi": {"driver": driver, "volumeHandle": bucket.name},
    }
