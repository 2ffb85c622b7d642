"""The DRA policies (policies/dra_policies.py) on small hand-built stacks: what makes a stack a DRA stack, which
workloads and tenants each policy refuses, and the exact messages. Inputs as the engine hands them over
(test_policies.check_stack).

A DRA stack hands out GPUs as devices of the DeviceClasses gpu.nvidia.com / mig.nvidia.com (KEP-4381), quota'd
as ``<class>.deviceclass.resource.k8s.io/devices``; the NVIDIA device plugin no longer advertises nvidia.com/gpu.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_policies import check_stack, k8s

from policies import dra_policies

GPU_DEVICES = "gpu.nvidia.com.deviceclass.resource.k8s.io/devices"
MIG_DEVICES = "mig.nvidia.com.deviceclass.resource.k8s.io/devices"
GPU = {"limits": {"nvidia.com/gpu": 1}}


def _quota(ns: str, hard: dict[str, Any], name: str = "q", **spec: Any) -> tuple[str, str, dict]:
    return k8s("v1", "ResourceQuota", f"{ns}-{name}", ns, metadata={"name": name}, spec={"hard": hard, **spec})


def _tenant(name: str, **labels: str) -> tuple[str, str, dict]:
    return k8s("v1", "Namespace", name, metadata={"labels": {"gpu-platform/tenant": name, **labels}})


def _template(ns: str, name: str, device_class: str | None = "gpu.nvidia.com") -> tuple[str, str, dict]:
    requests = [{"name": "gpu", "exactly": {"deviceClassName": device_class} if device_class else {"count": 1}}]
    return k8s(
        "resource.k8s.io/v1",
        "ResourceClaimTemplate",
        f"{ns}-{name}",
        ns,
        metadata={"name": name},
        spec={"spec": {"devices": {"requests": requests}}},
    )


DRA = _quota("a", {GPU_DEVICES: "4", MIG_DEVICES: "0"})
OPERATOR_DRA = (
    "kubernetes:helm.sh/v3:Release",
    "gpu-operator",
    {"chart": "gpu-operator", "values": {"gpuCluster": {"deployCR": True}}},
)


def _pod(name: str = "p", ns: str | None = "a", resources: dict | None = None, claims: list | None = None):
    c: dict[str, Any] = {"name": "main", "image": "i"}
    if resources is not None:
        c["resources"] = resources
    spec: dict[str, Any] = {"containers": [c]}
    if claims is not None:
        spec["resourceClaims"] = claims
    return k8s("v1", "Pod", name, ns, spec=spec)


def _claims(*resources) -> list[tuple[str | None, str]]:
    return check_stack(dra_policies.dra_gpu_claims, list(resources))


def _asks(name: str, where: str, asked: str) -> str:
    return (
        f"{name}: container 'main' in {where} asks for {asked}; on this DRA stack no device plugin advertises GPUs "
        "as extended resources: reference a ResourceClaimTemplate (gpu-<model> / mig-<model>-<profile> in the tenant "
        "namespace) in spec.resourceClaims and list the claim in the container's resources.claims"
    )


# ------------------------------------------------------------------------------------------ dra_stack


def _is_dra(*resources) -> bool:
    return bool(_claims(*resources, _pod(resources=GPU)))


@pytest.mark.parametrize(
    ("resources", "dra"),
    [
        ([DRA], True),
        ([OPERATOR_DRA], True),
        ([_quota("a", {MIG_DEVICES: "1"})], False),  # MIG devices alone do not make the stack DRA here
        ([_quota("a", {"requests.nvidia.com/gpu": "4"})], False),
        ([("kubernetes:helm.sh/v3:Release", "op", {"values": {"gpuCluster": {"deployCR": "true"}}})], False),
        ([("kubernetes:helm.sh/v3:Release", "op", {"values": {"gpuCluster": {"deployCR": False}}})], False),
        ([("kubernetes:core/v1:ConfigMap", "q", {"spec": {"hard": {GPU_DEVICES: "1"}}})], False),
        ([], False),
    ],
)
def test_what_makes_a_dra_stack(resources, dra):
    """A stack is DRA when a ResourceQuota caps gpu.nvidia.com devices or the GPU Operator deploys its GPUCluster
    CR (deployCR: true, a boolean); device-plugin stacks are never judged by these policies."""
    assert _is_dra(*resources) == dra


# ----------------------------------------------------------------------------------------- dra-gpu-claims


def test_extended_gpu_resources_are_refused_on_a_dra_stack():
    """Every container asking for nvidia.com/gpu* or nvidia.com/mig-* (limits or requests, listed once, sorted) is
    refused on the workload, naming the pod spec path."""
    res = {"limits": {"nvidia.com/gpu": 1, "cpu": 1}, "requests": {"nvidia.com/mig-1g.10gb": 1, "nvidia.com/gpu": 1}}
    assert _claims(DRA, _pod(resources=res)) == [("p", _asks("p", "spec", "nvidia.com/gpu, nvidia.com/mig-1g.10gb"))]
    assert _claims(DRA, _pod(resources={"limits": {"cpu": 1}})) == []
    assert _claims(DRA, _pod(resources={"claims": [{"name": "gpu"}]})) == []


def test_every_workload_kind_and_init_container_is_read():
    """Pod specs (mappings with a non-empty containers list) are found anywhere in a workload (Deployments, Volcano
    tasks, ...), and their init containers are read too."""
    deploy = k8s(
        "apps/v1",
        "Deployment",
        "d",
        "a",
        spec={"template": {"spec": {"initContainers": [{"name": "main", "resources": GPU}], "containers": []}}},
    )
    assert _claims(DRA, deploy) == []  # an empty containers list is no pod spec
    deploy[2]["spec"]["template"]["spec"]["containers"] = [{"name": "side"}]
    assert _claims(DRA, deploy) == [("d", _asks("d", "spec.template.spec", "nvidia.com/gpu"))]
    tasks = [{"name": "w", "template": {"spec": {"containers": [{"name": "main", "resources": GPU}]}}}]
    vj = k8s("batch.volcano.sh/v1alpha1", "Job", "vj", "a", spec={"tasks": tasks})
    assert _claims(DRA, vj) == [("vj", _asks("vj", "spec.tasks[0].template.spec", "nvidia.com/gpu"))]


def test_non_workloads_are_not_read():
    """Only workload kinds are judged: a pod-like spec in, say, a ConfigMap or a CRD of another group is not."""
    other = k8s("example.com/v1", "Thing", "t", "a", spec={"containers": [{"name": "main", "resources": GPU}]})
    assert _claims(DRA, other) == []


def test_a_claim_template_missing_from_the_namespace_is_refused():
    """A pod naming a ResourceClaimTemplate the stack does not create in its namespace is refused, listing the
    ones it has; namespaces without templates in the stack are not judged (the user may create them)."""
    claims = [{"name": "gpu", "resourceClaimTemplateName": "gpu-h100"}]
    have = [_template("a", "gpu-l4"), _template("a", "gpu-a100")]
    assert _claims(DRA, *have, _pod(claims=claims)) == [
        (
            "p",
            "p: spec.resourceClaims names ResourceClaimTemplate 'gpu-h100', which the stack does not create in "
            "namespace 'a' (it has: gpu-a100, gpu-l4)",
        )
    ]
    assert _claims(DRA, *have, _template("a", "gpu-h100"), _pod(claims=claims)) == []
    assert _claims(DRA, _template("b", "gpu-l4"), _pod(claims=claims)) == []
    assert _claims(DRA, *have, _pod(claims=[{"name": "x", "resourceClaimName": "shared"}])) == []


def test_findings_name_the_object_by_its_metadata_name():
    """The message names the Kubernetes object (metadata.name), falling back to the resource's name."""
    pod = _pod(resources=GPU)
    renamed = (pod[0], "pod-resource", pod[2])
    assert _claims(DRA, renamed) == [("pod-resource", _asks("p", "spec", "nvidia.com/gpu"))]
    del renamed[2]["metadata"]["name"]
    assert _claims(DRA, renamed) == [("pod-resource", _asks("pod-resource", "spec", "nvidia.com/gpu"))]


def test_a_pod_without_namespace_is_in_default():
    """A workload without metadata.namespace lives in "default", and is checked against its templates."""
    claims = [{"name": "gpu", "resourceClaimTemplateName": "gpu-h100"}]
    (found,) = _claims(DRA, _template("default", "gpu-l4"), _pod(ns=None, claims=claims))
    assert found[1].endswith("which the stack does not create in namespace 'default' (it has: gpu-l4)")


def test_nothing_is_judged_on_a_device_plugin_stack():
    """Without DRA, nvidia.com/gpu is how pods ask for GPUs."""
    assert _claims(_quota("a", {"requests.nvidia.com/gpu": "4"}), _pod(resources=GPU)) == []


# -------------------------------------------------------------------------------- dra-tenant-device-quota


def _device_quota(*resources) -> list[tuple[str | None, str]]:
    return check_stack(dra_policies.dra_tenant_device_quota, list(resources))


def _uncapped(ns: str, *classes: str) -> str:
    caps = ", ".join(f"{c}.deviceclass.resource.k8s.io/devices" for c in classes)
    return (
        f"tenant namespace {ns!r}: no ResourceQuota (without scopes) caps {caps}; uncapped, one tenant can claim "
        "every such device"
    )


def test_tenants_must_cap_both_nvidia_device_classes():
    """Each tenant namespace needs a quota on gpu.nvidia.com and mig.nvidia.com devices (0 is a cap)."""
    assert _device_quota(DRA, _tenant("a")) == []
    assert _device_quota(OPERATOR_DRA, _tenant("a"), _tenant("b")) == [
        ("a", _uncapped("a", "gpu.nvidia.com", "mig.nvidia.com")),
        ("b", _uncapped("b", "gpu.nvidia.com", "mig.nvidia.com")),
    ]
    assert _device_quota(DRA, _quota("b", {GPU_DEVICES: "1"}), _tenant("b")) == [
        ("b", _uncapped("b", "mig.nvidia.com"))
    ]
    assert _device_quota(DRA, k8s("v1", "Namespace", "kube-system")) == []  # not a tenant


def test_the_tenant_namespace_is_its_metadata_name():
    """Quotas are matched (and findings worded) by the Namespace's metadata.name, not the Pulumi resource name;
    without one, the resource name stands in."""
    t = _tenant("a")
    renamed = (t[0], "a-namespace", t[2])
    assert _device_quota(DRA, renamed) == []
    assert _device_quota(OPERATOR_DRA, renamed) == [("a-namespace", _uncapped("a", "gpu.nvidia.com", "mig.nvidia.com"))]
    del renamed[2]["metadata"]["name"]
    assert _device_quota(OPERATOR_DRA, renamed) == [
        ("a-namespace", _uncapped("a-namespace", "gpu.nvidia.com", "mig.nvidia.com"))
    ]


def test_scoped_quotas_do_not_cap():
    """A quota with scopes or a scopeSelector applies to some pods only, so it is no cap for the namespace."""
    hard = {GPU_DEVICES: "1", MIG_DEVICES: "1"}
    for spec in ({"scopes": ["BestEffort"]}, {"scopeSelector": {"matchExpressions": []}}):
        assert _device_quota(DRA, _quota("b", hard, **spec), _tenant("b")) == [
            ("b", _uncapped("b", "gpu.nvidia.com", "mig.nvidia.com"))
        ], spec
    assert _device_quota(DRA, _quota("b", hard, scopes=[]), _tenant("b")) == []
    scoped_first = [_quota("b", hard, "scoped", scopes=["BestEffort"]), _quota("b", hard)]
    assert _device_quota(DRA, *scoped_first, _tenant("b")) == []  # the unscoped one after it still caps


def test_classes_the_tenants_templates_use_must_be_capped_too():
    """A claim template of the tenant using another DeviceClass adds that class to what must be capped."""
    tpl = _template("a", "fast", "fast.example.com")
    assert _device_quota(DRA, tpl, _tenant("a")) == [("a", _uncapped("a", "fast.example.com"))]
    assert (
        _device_quota(
            DRA, tpl, _quota("a", {"fast.example.com.deviceclass.resource.k8s.io/devices": 2}, "q2"), _tenant("a")
        )
        == []
    )
    assert _device_quota(DRA, _template("b", "fast", "fast.example.com"), _tenant("a")) == []  # another namespace
    assert _device_quota(DRA, _template("a", "none", None), _tenant("a")) == []  # a request naming no class


def test_admin_access_tenant_is_refused():
    """A tenant namespace allowing adminAccess claims (KEP-5018) escapes every device quota."""
    assert _device_quota(DRA, _tenant("a", **{"resource.kubernetes.io/admin-access": "true"})) == [
        (
            "a",
            "tenant namespace 'a' carries resource.kubernetes.io/admin-access=true: its claims may ask for adminAccess "
            "to every device of a class, in use or not, which no device quota counts",
        )
    ]
    assert _device_quota(DRA, _tenant("a", **{"resource.kubernetes.io/admin-access": "false"})) == []


def test_device_quota_is_not_judged_on_a_device_plugin_stack():
    """No DRA, no device quota needed."""
    assert _device_quota(_tenant("a")) == []
