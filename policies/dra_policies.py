"""Policies of stacks that hand out GPUs through Dynamic Resource Allocation (``gpuOperator.allocation: dra``).

Self-contained (no import of ``components``): they read what the stack renders. A stack is a DRA stack when a
tenant ResourceQuota caps devices of the NVIDIA DeviceClass ``gpu.nvidia.com``
(``gpu.nvidia.com.deviceclass.resource.k8s.io/devices``, KEP-4381) or the gpu-operator release deploys the
``GPUCluster`` CR (values ``gpuCluster.deployCR: true``, NVIDIA/gpu-operator v26.7.0 values.yaml).

* ``dra-gpu-claims``: on a DRA stack no workload asks for ``nvidia.com/gpu`` / ``nvidia.com/mig-*`` extended
  resources (no device plugin advertises them: such a pod never schedules, or, on Kubernetes 1.35+ with
  DRAExtendedResource, bypasses the per-class device quota's claim templates); GPU containers use
  ``resources.claims``, and a claim template a workload names exists in its namespace when the stack has it.
* ``dra-tenant-device-quota``: every tenant namespace's ResourceQuota caps the devices of both NVIDIA GPU
  DeviceClasses (``gpu.nvidia.com``, ``mig.nvidia.com``), and of every class its claim templates use.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    StackValidationArgs,
    StackValidationPolicy,
)

from .common import _map, _meta, _seq

RESOURCE_QUOTA = "kubernetes:core/v1:ResourceQuota"
NAMESPACE = "kubernetes:core/v1:Namespace"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
CLAIM_TEMPLATE = "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"
TENANT_LABEL = "gpu-platform/tenant"
ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"  # KEP-5018 DRAAdminAccess
QUOTA_SUFFIX = ".deviceclass.resource.k8s.io/devices"
GPU_CLASSES = ("gpu.nvidia.com", "mig.nvidia.com")
_WORKLOAD_GROUPS = ("core/v1:Pod", "apps/v1:", "batch/v1:", "batch.volcano.sh/", "kubeflow.org/", "jobset.x-k8s.io/")


def _extended_gpu(name: Any) -> bool:
    return isinstance(name, str) and (name.startswith("nvidia.com/gpu") or name.startswith("nvidia.com/mig-"))


def dra_stack(resources: Sequence[PolicyResource]) -> bool:
    for r in resources:
        if r.resource_type == RESOURCE_QUOTA:
            if any(str(k) == GPU_CLASSES[0] + QUOTA_SUFFIX for k in _map(_map(r.props.get("spec")).get("hard"))):
                return True
        if (
            r.resource_type == HELM_RELEASE
            and _map(_map(r.props.get("values")).get("gpuCluster")).get("deployCR") is True
        ):
            return True
    return False


def pod_specs(value: Any, where: str = "spec") -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every pod spec inside a workload object (any mapping with a ``containers`` list), with its path."""
    m = _map(value)
    if _seq(m.get("containers")):
        yield where, m
        return
    for k, v in sorted(m.items()):
        if isinstance(v, Mapping):
            yield from pod_specs(v, f"{where}.{k}")
        elif _seq(v):
            for i, item in enumerate(_seq(v)):
                yield from pod_specs(item, f"{where}.{k}[{i}]")


def _workload(r: PolicyResource) -> bool:
    t = r.resource_type.removeprefix("kubernetes:")
    return any(t.startswith(g) for g in _WORKLOAD_GROUPS)


def _templates(resources: Sequence[PolicyResource]) -> dict[str, set[str]]:
    """namespace -> names of the ResourceClaimTemplates the stack creates there."""
    out: dict[str, set[str]] = {}
    for r in resources:
        if r.resource_type == CLAIM_TEMPLATE:
            meta = _meta(r.props)
            out.setdefault(str(meta.get("namespace")), set()).add(str(meta.get("name")))
    return out


def _gpu_claims(args: StackValidationArgs, report: ReportViolation) -> None:
    if not dra_stack(args.resources):
        return
    templates = _templates(args.resources)
    for r in args.resources:
        if not _workload(r):
            continue
        name = _meta(r.props).get("name") or r.name
        ns = str(_meta(r.props).get("namespace") or "default")
        for where, pod in pod_specs(r.props.get("spec")):
            for c in (*_seq(pod.get("initContainers")), *_seq(pod.get("containers"))):
                res = _map(_map(c).get("resources"))
                asked = sorted({n for part in ("limits", "requests") for n in _map(res.get(part)) if _extended_gpu(n)})
                if asked:
                    report(
                        f"{name}: container {_map(c).get('name')!r} in {where} asks for {', '.join(asked)}; on "
                        "this DRA stack no device plugin advertises GPUs as extended resources: reference a "
                        "ResourceClaimTemplate (gpu-<model> / mig-<model>-<profile> in the tenant namespace) in "
                        "spec.resourceClaims and list the claim in the container's resources.claims",
                        r.urn,
                    )
            if ns in templates:
                for claim in _seq(pod.get("resourceClaims")):
                    tpl = _map(claim).get("resourceClaimTemplateName")
                    if tpl and tpl not in templates[ns]:
                        report(
                            f"{name}: {where}.resourceClaims names ResourceClaimTemplate {tpl!r}, which the stack does "
                            f"not create in namespace {ns!r} (it has: {', '.join(sorted(templates[ns]))})",
                            r.urn,
                        )


dra_gpu_claims = StackValidationPolicy(
    name="dra-gpu-claims",
    description="On a DRA stack GPU workloads ask through ResourceClaims, not nvidia.com/gpu extended resources the "
    "nodes no longer advertise, and name claim templates that exist in their namespace.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_gpu_claims,
    remediation_steps="Replace resources.limits[nvidia.com/gpu] with spec.resourceClaims (resourceClaimTemplateName: "
    "gpu-<model>) and resources.claims in the container.",
)


def _device_quota(args: StackValidationArgs, report: ReportViolation) -> None:
    if not dra_stack(args.resources):
        return
    used: dict[str, set[str]] = {}
    for r in args.resources:
        if r.resource_type == CLAIM_TEMPLATE:
            ns = str(_meta(r.props).get("namespace"))
            for req in _seq(_map(_map(_map(r.props.get("spec")).get("spec")).get("devices")).get("requests")):
                cls = _map(_map(req).get("exactly")).get("deviceClassName")
                if cls:
                    used.setdefault(ns, set()).add(str(cls))
    for ns in args.resources:
        if ns.resource_type != NAMESPACE or not _map(_meta(ns.props).get("labels")).get(TENANT_LABEL):
            continue
        name = str(_meta(ns.props).get("name") or ns.name)
        if str(_map(_meta(ns.props).get("labels")).get(ADMIN_ACCESS_LABEL)) == "true":
            report(
                f"tenant namespace {name!r} carries {ADMIN_ACCESS_LABEL}=true: its claims may ask for adminAccess to "
                "every device of a class, in use or not, which no device quota counts",
                ns.urn,
            )
        capped: set[str] = set()
        for q in args.resources:
            if q.resource_type != RESOURCE_QUOTA:
                continue  # read nothing of other types (an unknown there must not stop the policy)
            spec = _map(q.props.get("spec"))
            if _meta(q.props).get("namespace") != name:
                continue
            if _seq(spec.get("scopes")) or spec.get("scopeSelector"):
                continue
            capped.update(
                str(k).removesuffix(QUOTA_SUFFIX) for k in _map(spec.get("hard")) if str(k).endswith(QUOTA_SUFFIX)
            )
        missing = sorted((set(GPU_CLASSES) | used.get(name, set())) - capped)
        if missing:
            report(
                f"tenant namespace {name!r}: no ResourceQuota (without scopes) caps "
                f"{', '.join(c + QUOTA_SUFFIX for c in missing)}; uncapped, one tenant can claim every such device",
                ns.urn,
            )


dra_tenant_device_quota = StackValidationPolicy(
    name="dra-tenant-device-quota",
    description="On a DRA stack every tenant namespace's ResourceQuota caps the devices of gpu.nvidia.com, "
    "mig.nvidia.com and every DeviceClass its claim templates use, and no tenant namespace allows adminAccess claims.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_device_quota,
    remediation_steps="Give the namespace a ResourceQuota with <deviceclass>.deviceclass.resource.k8s.io/devices "
    "for each class (0 is a cap).",
)

POLICIES = (dra_gpu_claims, dra_tenant_device_quota)
TARGETS = {
    "dra-gpu-claims": ("workloads (Pod, Deployment, Job, ... any pod template)", RESOURCE_QUOTA, CLAIM_TEMPLATE),
    "dra-tenant-device-quota": (NAMESPACE, RESOURCE_QUOTA, CLAIM_TEMPLATE),
}
