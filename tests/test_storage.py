"""Shared storage (gpu-platform:storage, issue 31.3): the objects each file system kind renders, checked against
hand-written expectations (the CSI drivers' and clouds' documented shapes, not values the code produced); the
rules, through the CLI (exit 2, one line naming the key); the per-tenant quota entries; the FSx controller's IAM;
reclaim and protection of what holds data."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from caching import cached
from conftest import manifest, render_config, rendered, stack_config

from components.cli import main as cli
from components.cli.loader import load_spec
from components.plan import plan as plan_mod

AWS_BASE = {
    "aws:region": "us-east-1",
    "gpu-platform:cloud": "aws",
    "gpu-platform:cluster": {"name": "c1"},
    "gpu-platform:nodePools": [
        {
            "name": "h100",
            "gpu": {"model": "H100", "perNode": 8},
            "instanceTypes": ["p5.48xlarge"],
            "capacity": "on-demand",
            "provisioner": "managed",
            "maxNodes": 2,
        }
    ],
    "gpu-platform:tenants": [{"name": "team-a", "gpuQuota": {"h100": 8}}, {"name": "team-b", "gpuQuota": {"h100": 8}}],
}
GCP_BASE = {
    "gcp:project": "proj-1",
    "gpu-platform:cloud": "gcp",
    "gpu-platform:cluster": {"name": "g1", "location": "us-central1-a"},
    "gpu-platform:nodePools": [
        {"name": "l4", "gpu": {"model": "L4", "perNode": 1}, "instanceTypes": ["g2-standard-8"], "maxNodes": 2}
    ],
    "gpu-platform:tenants": [{"name": "team-a", "gpuQuota": {"l4": 1}}, {"name": "team-b", "gpuQuota": {"l4": 1}}],
}

FSX_TENANT = {
    "name": "a-ckpt",
    "kind": "fsx-lustre",
    "scope": "tenant",
    "tenant": "team-a",
    "sizeGib": 2400,
    "fsx": {"deploymentType": "PERSISTENT_2", "perUnitStorageThroughput": 500, "subnetId": "subnet-0abc"},
}
FSX_SHARED = {"name": "lustre", "kind": "fsx-lustre", "quotas": {"team-b": {"storageGib": 4800, "claims": 2}}}


def _with_storage(base: dict, *file_systems: dict, **extra) -> dict:
    config = copy.deepcopy(base)
    config["gpu-platform:storage"] = {"fileSystems": list(file_systems), **extra}
    return config


def _resources(rendering, type_: str) -> list:
    return [r for r in rendering.resources if r.type == type_]


# ---------------------------------------------------------------------------------------------- EKS


@pytest.fixture
def fsx_rendering():
    return _fsx_rendering()


@cached
def _fsx_rendering():
    return render_config(_with_storage(AWS_BASE, FSX_TENANT, FSX_SHARED))


def test_fsx_storage_class_carries_the_drivers_parameters(fsx_rendering):
    """kubernetes-sigs/aws-fsx-csi-driver docs: subnetId, securityGroupIds, deploymentType,
    perUnitStorageThroughput; the cluster's subnet and security group where the stack names none."""
    sc = manifest(fsx_rendering, "StorageClass", "a-ckpt")
    assert sc["provisioner"] == "fsx.csi.aws.com"
    assert sc["reclaimPolicy"] == "Retain"
    assert sc["mountOptions"] == ["flock"]
    assert sc["parameters"] == {
        "subnetId": "subnet-0abc",
        "securityGroupIds": "sg-offline-placeholder",  # the cluster security group of the lookup
        "deploymentType": "PERSISTENT_2",
        "perUnitStorageThroughput": "500",
        "fileSystemTypeVersion": "2.15",
        "extraTags": "gpu-platform-cluster=c1",
    }
    shared = manifest(fsx_rendering, "StorageClass", "lustre")["parameters"]
    assert shared["subnetId"] == "subnet-offline-placeholder-a"  # the cluster's first subnet
    assert shared["perUnitStorageThroughput"] == "250"  # PERSISTENT_2's default here


def test_scratch_file_systems_take_no_throughput():
    config = _with_storage(AWS_BASE, {**FSX_TENANT, "sizeGib": 1200, "fsx": {"deploymentType": "SCRATCH_2"}})
    params = manifest(render_config(config), "StorageClass", "a-ckpt")["parameters"]
    assert params["deploymentType"] == "SCRATCH_2"
    assert "perUnitStorageThroughput" not in params


def test_a_tenant_file_system_is_a_protected_claim_in_its_namespace(fsx_rendering):
    pvc = manifest(fsx_rendering, "PersistentVolumeClaim", "a-ckpt", "team-a")
    assert pvc["spec"] == {
        "accessModes": ["ReadWriteMany"],
        "storageClassName": "a-ckpt",
        "resources": {"requests": {"storage": "2400Gi"}},
    }
    claim = next(r for r in fsx_rendering.resources if r.name == "claim-team-a-a-ckpt")
    assert claim.protect
    # sent after its class and after the tenant's quota that admits it
    assert {"storage-class-a-ckpt", "team-a-gpu-quota", "team-a-namespace"} <= set(claim.depends_on)
    unprotected = render_config(_with_storage(AWS_BASE, FSX_TENANT, protect=False))
    assert not next(r for r in unprotected.resources if r.name == "claim-team-a-a-ckpt").protect


def test_each_tenant_quota_carries_every_class(fsx_rendering):
    """One ResourceQuota per tenant: its share of each class, 0 where it has none."""
    a = manifest(fsx_rendering, "ResourceQuota", "gpu-quota", "team-a")["spec"]["hard"]
    b = manifest(fsx_rendering, "ResourceQuota", "gpu-quota", "team-b")["spec"]["hard"]
    sc = ".storageclass.storage.k8s.io/"
    assert {k: v for k, v in a.items() if sc in k} == {
        f"a-ckpt{sc}requests.storage": "2400Gi",
        f"a-ckpt{sc}persistentvolumeclaims": "1",
        f"lustre{sc}requests.storage": "0",
        f"lustre{sc}persistentvolumeclaims": "0",
    }
    assert {k: v for k, v in b.items() if sc in k} == {
        f"a-ckpt{sc}requests.storage": "0",
        f"a-ckpt{sc}persistentvolumeclaims": "0",
        f"lustre{sc}requests.storage": "4800Gi",
        f"lustre{sc}persistentvolumeclaims": "2",
    }
    assert len([m for m in fsx_rendering.manifests if m["kind"] == "ResourceQuota"]) == 2


def test_fsx_addon_and_its_pod_identity(fsx_rendering):
    addon = _resources(fsx_rendering, "aws:eks/addon:Addon")
    fsx = next(a for a in addon if a.inputs["addonName"] == "aws-fsx-csi-driver")
    assert fsx.inputs["podIdentityAssociations"] == [
        {"roleArn": "arn:aws:iam::000000000000:role/c1-fsx-csi-driver", "serviceAccount": "fsx-csi-controller-sa"}
    ]
    assert "addonVersion" not in fsx.inputs  # EKS's default build for the cluster's version
    role = next(r for r in _resources(fsx_rendering, "aws:iam/role:Role") if r.name == "fsx-csi-driver-role")
    trust = json.loads(role.inputs["assumeRolePolicy"])["Statement"][0]
    assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert trust["Condition"]["StringEquals"]["aws:RequestTag/kubernetes-service-account"] == "fsx-csi-controller-sa"
    assert trust["Condition"]["StringEquals"]["aws:RequestTag/kubernetes-namespace"] == "kube-system"


def test_fsx_addon_under_irsa_takes_the_role_arn():
    config = _with_storage(AWS_BASE, FSX_TENANT)
    config["gpu-platform:karpenter"] = {"identity": "irsa"}
    r = render_config(config)
    fsx = next(a for a in _resources(r, "aws:eks/addon:Addon") if a.inputs["addonName"] == "aws-fsx-csi-driver")
    assert fsx.inputs["serviceAccountRoleArn"] == "arn:aws:iam::000000000000:role/c1-fsx-csi-driver"
    assert "podIdentityAssociations" not in fsx.inputs
    role = next(x for x in _resources(r, "aws:iam/role:Role") if x.name == "fsx-csi-driver-role")
    stmt = json.loads(role.inputs["assumeRolePolicy"])["Statement"][0]
    assert stmt["Action"] == "sts:AssumeRoleWithWebIdentity"
    assert (
        list(stmt["Condition"]["StringEquals"].values())[1] == "system:serviceaccount:kube-system:fsx-csi-controller-sa"
    )


def test_fsx_controller_policy_is_the_documented_actions_scoped_to_this_cluster(fsx_rendering):
    """The driver's docs/install.md actions for dynamic provisioning; create only with this cluster's tag, delete and
    update only what carries it; no S3 data-repository actions (no class imports from S3)."""
    policy = next(r for r in _resources(fsx_rendering, "aws:iam/policy:Policy") if r.name == "fsx-csi-driver-policy")
    doc = json.loads(policy.inputs["policy"])
    by_sid = {s["Sid"]: s for s in doc["Statement"]}
    assert by_sid["CreateThisClustersFileSystems"] == {
        "Sid": "CreateThisClustersFileSystems",
        "Effect": "Allow",
        "Action": ["fsx:CreateFileSystem", "fsx:TagResource"],
        "Resource": "*",
        "Condition": {"StringEquals": {"aws:RequestTag/gpu-platform-cluster": "c1"}},
    }
    assert by_sid["ChangeThisClustersFileSystems"]["Action"] == ["fsx:DeleteFileSystem", "fsx:UpdateFileSystem"]
    assert by_sid["ChangeThisClustersFileSystems"]["Condition"] == {
        "StringEquals": {"aws:ResourceTag/gpu-platform-cluster": "c1"}
    }
    assert by_sid["FsxServiceLinkedRole"]["Condition"] == {"StringLike": {"iam:AWSServiceName": ["fsx.amazonaws.com"]}}
    actions = {a for s in doc["Statement"] for a in s["Action"]}
    assert actions == {
        "fsx:CreateFileSystem",
        "fsx:TagResource",
        "fsx:DeleteFileSystem",
        "fsx:UpdateFileSystem",
        "fsx:DescribeFileSystems",
        "iam:CreateServiceLinkedRole",
    }
    unconditioned = [s["Action"] for s in doc["Statement"] if "Condition" not in s]
    assert unconditioned == [["fsx:DescribeFileSystems"]]


def test_lustre_ports_open_within_the_group(fsx_rendering):
    rules = _resources(fsx_rendering, "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
    lustre = sorted((r.inputs["fromPort"], r.inputs["toPort"]) for r in rules if r.name.startswith("lustre-"))
    assert lustre == [(988, 988), (1018, 1023)]
    for r in rules:
        if r.name.startswith("lustre-"):
            assert r.inputs["ipProtocol"] == "tcp"
            assert r.inputs["securityGroupId"] == r.inputs["referencedSecurityGroupId"] == "sg-offline-placeholder"


def test_named_security_groups_each_get_the_ports():
    fs = {**FSX_TENANT, "fsx": {"securityGroupIds": ["sg-0a", "sg-0b"]}}
    r = render_config(_with_storage(AWS_BASE, fs))
    groups = sorted(
        (x.inputs["securityGroupId"], x.inputs["fromPort"])
        for x in _resources(r, "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
        if x.name.startswith("lustre-")
    )
    assert groups == [("sg-0a", 988), ("sg-0a", 1018), ("sg-0b", 988), ("sg-0b", 1018)]
    assert manifest(r, "StorageClass", "a-ckpt")["parameters"]["securityGroupIds"] == "sg-0a,sg-0b"


def test_no_storage_no_storage_objects():
    r = rendered("dev-aws")
    assert not [m for m in r.manifests if m["kind"] in ("StorageClass", "PersistentVolumeClaim")]
    assert plan_mod.build(load_spec(stack_config("dev-aws")), "dev-aws").storage is None


# ---------------------------------------------------------------------------------------------- GKE


@pytest.fixture
def gke_rendering():
    return _gke_rendering()


@cached
def _gke_rendering():
    return render_config(
        _with_storage(
            GCP_BASE,
            {
                "name": "fs",
                "kind": "filestore",
                "filestore": {"tier": "ZONAL"},
                "quotas": {"team-a": {"storageGib": 1024}},
            },
            {"name": "ps", "kind": "parallelstore", "scope": "tenant", "tenant": "team-b", "sizeGib": 16000},
            {
                "name": "data",
                "kind": "gcs-fuse",
                "scope": "tenant",
                "tenant": "team-a",
                "sizeGib": 100,
                "gcsFuse": {"bucket": "proj-1-team-a-data"},
            },
        )
    )


def test_filestore_and_parallelstore_classes(gke_rendering):
    fs = manifest(gke_rendering, "StorageClass", "fs")
    assert fs["provisioner"] == "filestore.csi.storage.gke.io"
    assert fs["parameters"] == {"tier": "zonal"}
    assert fs["reclaimPolicy"] == "Retain"
    assert fs["volumeBindingMode"] == "WaitForFirstConsumer"
    ps = manifest(gke_rendering, "StorageClass", "ps")
    assert ps["provisioner"] == "parallelstore.csi.storage.gke.io"
    assert ps["reclaimPolicy"] == "Retain"
    assert manifest(gke_rendering, "PersistentVolumeClaim", "ps", "team-b")["spec"]["resources"] == {
        "requests": {"storage": "16000Gi"}
    }


def test_gcs_fuse_is_a_bucket_bound_to_the_tenants_claim(gke_rendering):
    pv = manifest(gke_rendering, "PersistentVolume", "team-a-data")
    assert pv["spec"]["csi"] == {"driver": "gcsfuse.csi.storage.gke.io", "volumeHandle": "proj-1-team-a-data"}
    assert pv["spec"]["claimRef"] == {"namespace": "team-a", "name": "data"}
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    pvc = manifest(gke_rendering, "PersistentVolumeClaim", "data", "team-a")
    assert pvc["spec"]["volumeName"] == "team-a-data"
    assert pvc["spec"]["storageClassName"] == pv["spec"]["storageClassName"] == "data"
    bucket = next(r for r in gke_rendering.resources if r.type == "gcp:storage/bucket:Bucket")
    assert bucket.inputs["name"] == "proj-1-team-a-data"
    assert bucket.inputs["location"] == "US-CENTRAL1"  # the zone's region
    assert bucket.inputs["uniformBucketLevelAccess"] is True
    assert bucket.inputs["forceDestroy"] is False
    assert bucket.protect
    grant = next(r for r in gke_rendering.resources if r.type == "gcp:storage/bucketIAMMember:BucketIAMMember")
    assert grant.inputs["role"] == "roles/storage.objectUser"
    assert grant.inputs["member"] == (
        "principalSet://iam.googleapis.com/projects/000000000000/locations/global/workloadIdentityPools/"
        "proj-1.svc.id.goog/namespace/team-a"
    )
    for name in ("volume-team-a-data", "claim-team-a-data"):
        assert next(r for r in gke_rendering.resources if r.name == name).protect


def test_gke_cluster_without_the_csi_addon_is_refused():
    from components.render.gcp import storage as gcp_storage

    p = plan_mod.build(
        load_spec(
            _with_storage(GCP_BASE, {"name": "fs", "kind": "filestore", "quotas": {"team-a": {"storageGib": 2560}}})
        ),
        "t",
    )
    off = [{"gcpFilestoreCsiDriverConfigs": [{"enabled": False}]}]
    assert gcp_storage.missing_addons(p, off) == ["gcpFilestoreCsiDriverConfigs"]
    assert gcp_storage.missing_addons(p, [{"gcp_filestore_csi_driver_configs": [{"enabled": True}]}]) == []
    with pytest.raises(Exception, match=r"GcpFilestoreCsiDriver off.*--update-addons=GcpFilestoreCsiDriver=ENABLED"):
        gcp_storage._check(p, off)


# --------------------------------------------------------------------------------------------- rules


RULES = [
    (
        _with_storage(GCP_BASE, {**FSX_SHARED}),
        "gpu-platform:storage.fileSystems[0].kind: fsx-lustre is for aws stacks; this stack's cloud is gcp",
    ),
    (
        _with_storage(AWS_BASE, {**FSX_TENANT, "sizeGib": 3600}),
        "gpu-platform:storage.fileSystems[0].sizeGib: FSx for Lustre sizes are 1200 GiB or a multiple of 2400 GiB, "
        "not 3600",
    ),
    (
        _with_storage(AWS_BASE, {**FSX_TENANT, "fsx": {"perUnitStorageThroughput": 200}}),
        "gpu-platform:storage.fileSystems[0].fsx.perUnitStorageThroughput: PERSISTENT_2 takes 125, 250, 500, 1000 "
        "MB/s per TiB, not 200",
    ),
    (
        _with_storage(
            AWS_BASE, {**FSX_TENANT, "fsx": {"deploymentType": "SCRATCH_2", "perUnitStorageThroughput": 250}}
        ),
        "gpu-platform:storage.fileSystems[0].fsx.perUnitStorageThroughput: applies to PERSISTENT_2 file systems only",
    ),
    (
        _with_storage(AWS_BASE, {**FSX_TENANT, "tenant": "nobody"}),
        "gpu-platform:storage.fileSystems[0].tenant: unknown tenant 'nobody' (tenants: team-a, team-b)",
    ),
    (
        _with_storage(AWS_BASE, {**FSX_SHARED, "quotas": {"ghost": {"storageGib": 2400}}}),
        "gpu-platform:storage.fileSystems[0].quotas.ghost: unknown tenant 'ghost'",
    ),
    (
        _with_storage(AWS_BASE, {**FSX_SHARED, "quotas": {"team-a": {"storageGib": 100}}}),
        "gpu-platform:storage.fileSystems[0].quotas.team-a.storageGib: below the smallest FSx for Lustre file system "
        "(1200 GiB): no claim would fit",
    ),
    (
        _with_storage(
            GCP_BASE, {"name": "fs", "kind": "filestore", "scope": "tenant", "tenant": "team-a", "sizeGib": 1024}
        ),
        "gpu-platform:storage.fileSystems[0].sizeGib: the smallest Filestore BASIC_SSD instance is 2560 GiB",
    ),
    (
        _with_storage(
            GCP_BASE, {"name": "ps", "kind": "parallelstore", "scope": "tenant", "tenant": "team-a", "sizeGib": 13000}
        ),
        "gpu-platform:storage.fileSystems[0].sizeGib: Parallelstore instances are 12000 to 100000 GiB in steps of "
        "4000, not 13000",
    ),
    (
        _with_storage(GCP_BASE, {"name": "b", "kind": "gcs-fuse", "gcsFuse": {"bucket": "proj-1-b"}}),
        "gpu-platform:storage.fileSystems[0].scope: gcs-fuse is tenant-scoped: the Cloud Storage FUSE CSI driver "
        "provisions no volumes, so each bucket is bound to one tenant's claim",
    ),
    (
        _with_storage(AWS_BASE, {**FSX_TENANT, "filestore": {"tier": "ZONAL"}}),
        "gpu-platform:storage.fileSystems[0].filestore: applies to kind filestore only, not fsx-lustre",
    ),
    (
        _with_storage(AWS_BASE, FSX_SHARED, {**FSX_SHARED}),
        "gpu-platform:storage.fileSystems[1].name: file system 'lustre' is declared twice",
    ),
    (
        _with_storage(
            GCP_BASE, {"name": "standard-rwx", "kind": "filestore", "quotas": {"team-a": {"storageGib": 2560}}}
        ),
        "gpu-platform:storage.fileSystems[0].name: 'standard-rwx' is a StorageClass the cloud makes itself; name it "
        "otherwise",
    ),
    (
        _with_storage(AWS_BASE, {"name": "x", "kind": "fsx-lustre", "scope": "tenant", "tenant": "team-a"}),
        "gpu-platform:storage.fileSystems[0].sizeGib: a tenant-scoped file system gives the size of its claim",
    ),
]


@pytest.mark.parametrize(("config", "line"), RULES, ids=lambda v: v.split(": ")[0] if isinstance(v, str) else "")
def test_rules_refuse_through_the_cli(config, line, tmp_path: Path, capsys):
    path = tmp_path / "Pulumi.s.yaml"
    path.write_text(yaml.safe_dump({"config": config}))
    assert cli.main(["plan", "s", "--config", str(path)]) == cli.EXIT_INVALID
    err = capsys.readouterr().err.splitlines()
    assert f"{cli._display(path)}: {line}" in err, err


def test_the_shipped_stacks_with_storage_pass_the_rules():
    for stack in ("prod-aws", "prod-gcp"):
        assert plan_mod.build(load_spec(stack_config(stack)), stack).storage is not None


def test_fsx_claims_wait_long_enough_for_the_file_system():
    """pulumi-kubernetes waits for an Immediate class's claim to bind, longer than its 5-minute default for FSx."""
    p = plan_mod.build(load_spec(_with_storage(AWS_BASE, FSX_TENANT)), "t")
    assert p.storage.file_systems[0].claim.create_timeout == "30m"
    g = plan_mod.build(
        load_spec(
            _with_storage(
                GCP_BASE,
                {
                    "name": "d",
                    "kind": "gcs-fuse",
                    "scope": "tenant",
                    "tenant": "team-a",
                    "sizeGib": 1,
                    "gcsFuse": {"bucket": "proj-1-d"},
                },
            )
        ),
        "t",
    )
    assert g.storage.file_systems[0].claim.create_timeout is None  # a static volume binds at once
