"""The gpu-platform policies: CrossGuard ``ResourceValidationPolicy`` / ``StackValidationPolicy`` objects.

The same objects run in two places:

- under the Pulumi engine (``pulumi preview --policy-pack policies``, ``pulumi policy analyze``), where
  ``args.props`` are the resource's camelCase inputs (outputs for ``policy analyze`` and stack policies)
  wrapped in read-only ``Mapping`` / ``Sequence`` proxies, with every number a float;
- offline (``policies.offline``), which builds the same argument objects from a synth rendering.

So the checks below only use ``Mapping`` / ``Sequence`` (never ``dict`` / ``list``) and treat numbers as
floats. Property names are the wire (camelCase) names of pulumi_aws 7.x / pulumi_gcp 10.x /
pulumi_kubernetes 4.x and of the Kubernetes objects themselves.

This module imports only pulumi_policy, PyYAML and the stdlib-only ``components.catalog`` /
``components.versions`` (no pydantic, no cloud SDK), so the policy pack's own virtualenv stays small.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml
from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from components import catalog, versions
from policies import cost_policies

PACK_NAME = "gpu-platform"
PACK_DESCRIPTION = (
    "gpu-platform guard rails: tainted and capped GPU pools, tenant GPU quotas, pinned charts, IMDSv2 and "
    "encrypted node disks, gang-scheduled GPU jobs with priorities, Pod Security, no admin IAM."
)

MANDATORY = EnforcementLevel.MANDATORY
ADVISORY = EnforcementLevel.ADVISORY

# Labels and names the platform writes (components.derive holds the same values; a test keeps them equal).
GPU_RESOURCE = "nvidia.com/gpu"
GPU_TAINT_KEY = "nvidia.com/gpu"
POOL_LABEL = "gpu-platform/pool"
TENANT_LABEL = "gpu-platform/tenant"
CRITICAL_LABEL = "gpu-platform/critical"
OPERATOR_NAMESPACE_LABEL = "gpu-platform/operator-namespace"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "gpu-platform"
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
PSA_ENFORCE = "pod-security.kubernetes.io/enforce"
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
CAPACITY_TYPE_KEY = "karpenter.sh/capacity-type"

# Type tokens (what the engine calls each resource type).
EKS_NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
GKE_NODE_POOL = "gcp:container/nodePool:NodePool"
KARPENTER_NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
EC2_NODE_CLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
HELM_CHART_V4 = "kubernetes:helm.sh/v4:Chart"
NAMESPACE = "kubernetes:core/v1:Namespace"
RESOURCE_QUOTA = "kubernetes:core/v1:ResourceQuota"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
PRIORITY_CLASS = "kubernetes:scheduling.k8s.io/v1:PriorityClass"
IAM_POLICY = "aws:iam/policy:Policy"
IAM_ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
IAM_USER_POLICY = "aws:iam/userPolicy:UserPolicy"
IAM_GROUP_POLICY = "aws:iam/groupPolicy:GroupPolicy"
IAM_ROLE = "aws:iam/role:Role"

DEFAULT_MAX_TIME_SLICING_REPLICAS = 8
# Namespaces whose operators need privileged pods: the GPU Operator (driver, toolkit, device plugin,
# MIG manager run privileged) and dcgm-exporter (needs SYS_ADMIN to read profiling metrics).
DEFAULT_PRIVILEGED_NAMESPACES: tuple[str, ...] = tuple(
    sorted({versions.GPU_OPERATOR.namespace, versions.DCGM_EXPORTER.namespace})
)
DEFAULT_ALLOWED_SOURCES: tuple[str, ...] = tuple(versions.ALLOWED_SOURCES)


# ------------------------------------------------------------------------------------ value helpers


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _seq(value: Any) -> list[Any]:
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return list(value)
    return []


def _get(value: Any, *path: str | int) -> Any:
    """``value[path[0]][path[1]]...``; None as soon as a step is missing or of the wrong kind."""
    for step in path:
        if isinstance(step, int):
            items = _seq(value)
            value = items[step] if -len(items) <= step < len(items) else None
        else:
            value = _map(value).get(step)
        if value is None:
            return None
    return value


def _strs(value: Any) -> list[str]:
    """A string or a list of strings, as a list."""
    if isinstance(value, str):
        return [value]
    return [v for v in _seq(value) if isinstance(v, str)]


def _num(value: Any) -> str:
    """A number as people write it (the engine hands every number over as a float)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _truthy(value: Any) -> bool:
    """True for True and for the string "true" (pulumi_aws launch-template EBS flags are strings)."""
    if isinstance(value, bool):
        return value
    return isinstance(value, str) and value.strip().lower() == "true"


_QUANTITY = re.compile(r"^([+-]?[0-9]+(?:\.[0-9]*)?|[+-]?\.[0-9]+)([a-zA-Z]*)$")
_SUFFIX = {
    "": 1,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
}


def quantity(value: Any) -> float | None:
    """A Kubernetes quantity ("16", "500m", "4Ti", 16.0) as a number; None if it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if not isinstance(value, str):
        return None
    m = _QUANTITY.match(value.strip())
    if m is None or m.group(2) not in _SUFFIX:
        return None
    return float(m.group(1)) * _SUFFIX[m.group(2)]


def _config_int(args: ResourceValidationArgs | StackValidationArgs, key: str, default: int) -> int:
    value = _map(args.get_config()).get(key)
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _config_strs(args: ResourceValidationArgs | StackValidationArgs, key: str, default: Iterable[str]) -> list[str]:
    value = _map(args.get_config()).get(key)
    return _strs(value) if value is not None else list(default)


# ------------------------------------------------------------------------------- Kubernetes helpers


def k8s_type(api_version: str, kind: str) -> str:
    """The type token pulumi_kubernetes gives an object: ``kubernetes:<group>/<version>:<Kind>``
    (``core`` for the legacy group)."""
    group, _, version = api_version.rpartition("/")
    return f"kubernetes:{group or 'core'}/{version}:{kind}"


def k8s_group_kind(type_token: str) -> tuple[str, str]:
    """``("batch.volcano.sh", "Job")`` for ``kubernetes:batch.volcano.sh/v1alpha1:Job``; ("", "") otherwise."""
    if not type_token.startswith("kubernetes:"):
        return "", ""
    parts = type_token.split(":")
    if len(parts) != 3:
        return "", ""
    return parts[1].rpartition("/")[0], parts[2]


def _meta(props: Mapping[str, Any]) -> Mapping[str, Any]:
    return _map(props.get("metadata"))


def _labels(props: Mapping[str, Any]) -> Mapping[str, Any]:
    return _map(_meta(props).get("labels"))


def _obj_name(props: Mapping[str, Any], fallback: str) -> str:
    meta = _meta(props)
    name = meta.get("name") if isinstance(meta.get("name"), str) else fallback
    ns = meta.get("namespace")
    return f"{ns}/{name}" if isinstance(ns, str) and ns else str(name)


# ------------------------------------------------------------------------------------ GPU detection

_AWS_GPU_FAMILY = re.compile(r"^(p[2-9][a-z0-9-]*|g[3-9][a-z0-9-]*|gr[0-9][a-z0-9-]*)$")
_AWS_NON_NVIDIA_FAMILIES = {"g4ad"}  # AMD Radeon Pro V520
_GCP_GPU_MACHINE = re.compile(r"^(a2|a3|a4|a4x|g2|g4)-")


def aws_gpu_instance(instance_type: str) -> bool:
    """True for EC2 instance types with NVIDIA GPUs (the catalog's, plus other p*/g* families)."""
    if catalog.aws_instance_type(instance_type) is not None:
        return True
    family = instance_type.split(".", 1)[0]
    return bool(_AWS_GPU_FAMILY.match(family)) and family not in _AWS_NON_NVIDIA_FAMILIES


def aws_gpu_family(family: str) -> bool:
    return aws_gpu_instance(f"{family}.xlarge") or any(t.family == family for t in catalog.AWS_INSTANCE_TYPES.values())


def gcp_gpu_machine(machine_type: str) -> bool:
    mt = catalog.gcp_machine_type(machine_type)
    if mt is not None and mt.gpu_model is not None:
        return True
    return bool(_GCP_GPU_MACHINE.match(machine_type))


def _gpu_labels_reason(labels: Mapping[str, Any]) -> str | None:
    if str(labels.get(GPU_PRESENT_LABEL, "")).lower() == "true":
        return f"label {GPU_PRESENT_LABEL}=true"
    if labels.get(POOL_LABEL):
        return f"label {POOL_LABEL}={labels.get(POOL_LABEL)}"
    return None


def eks_gpu_reason(props: Mapping[str, Any]) -> str | None:
    """Why an EKS managed node group is a GPU one (None if it is not)."""
    ami = props.get("amiType")
    if isinstance(ami, str) and "NVIDIA" in ami.upper():
        return f"amiType {ami}"
    for it in _strs(props.get("instanceTypes")):
        if aws_gpu_instance(it):
            return f"instance type {it}"
    return _gpu_labels_reason(_map(props.get("labels")))


def gke_gpu_reason(props: Mapping[str, Any]) -> str | None:
    """Why a GKE node pool is a GPU one (None if it is not)."""
    node_config = _map(props.get("nodeConfig"))
    for acc in _seq(node_config.get("guestAccelerators")):
        count = _map(acc).get("count")
        if not isinstance(count, (int, float)) or count > 0:
            return f"guest accelerator {_map(acc).get('type')}"
    machine = node_config.get("machineType")
    if isinstance(machine, str) and gcp_gpu_machine(machine):
        return f"machine type {machine}"
    return _gpu_labels_reason(_map(node_config.get("labels")))


def _requirements(props: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [_map(r) for r in _seq(_get(props, "spec", "template", "spec", "requirements"))]


def karpenter_gpu_reason(props: Mapping[str, Any]) -> str | None:
    """Why a Karpenter NodePool is a GPU one (None if it is not)."""
    for req in _requirements(props):
        key, op, values = req.get("key"), req.get("operator"), _strs(req.get("values"))
        if not isinstance(key, str) or op in ("DoesNotExist", "NotIn", "Lt"):
            continue
        if key.startswith("karpenter.k8s.aws/instance-gpu-"):
            if key == "karpenter.k8s.aws/instance-gpu-count" and op == "In" and set(values) <= {"0"}:
                continue
            return f"requirement on {key}"
        if op == "In" and key == "karpenter.k8s.aws/instance-family":
            gpu = [v for v in values if aws_gpu_family(v)]
            if gpu:
                return f"instance family {gpu[0]}"
        if op == "In" and key in ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type"):
            gpu = [v for v in values if aws_gpu_instance(v)]
            if gpu:
                return f"instance type {gpu[0]}"
    return _gpu_labels_reason(_map(_get(props, "spec", "template", "metadata", "labels")))


def karpenter_capacity_types(props: Mapping[str, Any]) -> set[str]:
    """Capacity types a Karpenter NodePool may launch (Karpenter's default is on-demand only)."""
    for req in _requirements(props):
        if req.get("key") == CAPACITY_TYPE_KEY and req.get("operator") == "In":
            return set(_strs(req.get("values")))
    return {"on-demand"}


def _is_gpu_resource(name: Any) -> bool:
    return isinstance(name, str) and (name.startswith("nvidia.com/gpu") or name.startswith("nvidia.com/mig-"))


# ------------------------------------------------------------------------------------ pod templates


@dataclass(frozen=True)
class PodTemplate:
    where: str  # e.g. "spec.template.spec" or "spec.tasks[worker].template.spec"
    spec: Mapping[str, Any]
    replicas: int  # pods this template stands for (1 when unknown)


_KUBEFLOW_KINDS = {"PyTorchJob", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob"}


def _count(value: Any, default: int = 1) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def pod_templates(type_token: str, props: Mapping[str, Any]) -> list[PodTemplate]:
    """The pod specs a workload object stands for; [] for objects that are not workloads."""
    group, kind = k8s_group_kind(type_token)
    spec = _map(props.get("spec"))
    if group == "core" and kind == "Pod":
        return [PodTemplate("spec", spec, 1)]
    if group == "apps" and kind in ("Deployment", "StatefulSet", "ReplicaSet", "DaemonSet"):
        return [PodTemplate("spec.template.spec", _map(_get(spec, "template", "spec")), _count(spec.get("replicas")))]
    if group == "batch" and kind == "Job":
        return [
            PodTemplate("spec.template.spec", _map(_get(spec, "template", "spec")), _count(spec.get("parallelism")))
        ]
    if group == "batch" and kind == "CronJob":
        job = _map(_get(spec, "jobTemplate", "spec"))
        return [
            PodTemplate(
                "spec.jobTemplate.spec.template.spec",
                _map(_get(job, "template", "spec")),
                _count(job.get("parallelism")),
            )
        ]
    if group == "batch.volcano.sh" and kind == "Job":
        out = []
        for i, task in enumerate(_seq(spec.get("tasks"))):
            label = _map(task).get("name") or i
            out.append(
                PodTemplate(
                    f"spec.tasks[{label}].template.spec",
                    _map(_get(task, "template", "spec")),
                    _count(_map(task).get("replicas"), 0),
                )
            )
        return out
    if group == "kubeflow.org" and kind in _KUBEFLOW_KINDS:
        out = []
        for field, roles in sorted(spec.items()):
            if not field.endswith("ReplicaSpecs"):
                continue
            for role, rs in sorted(_map(roles).items()):
                out.append(
                    PodTemplate(
                        f"spec.{field}.{role}.template.spec",
                        _map(_get(rs, "template", "spec")),
                        _count(_map(rs).get("replicas")),
                    )
                )
        return out
    if group == "jobset.x-k8s.io" and kind == "JobSet":
        out = []
        for i, rj in enumerate(_seq(spec.get("replicatedJobs"))):
            job = _map(_get(rj, "template", "spec"))
            label = _map(rj).get("name") or i
            out.append(
                PodTemplate(
                    f"spec.replicatedJobs[{label}].template.spec.template.spec",
                    _map(_get(job, "template", "spec")),
                    _count(_map(rj).get("replicas")) * _count(job.get("parallelism")),
                )
            )
        return out
    return []


def _containers(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [_map(c) for c in (*_seq(pod.get("initContainers")), *_seq(pod.get("containers")))]


def gpu_resources(container: Mapping[str, Any]) -> list[str]:
    """The GPU resource names a container asks for (requests or limits)."""
    res = _map(container.get("resources"))
    names = {n for part in ("limits", "requests") for n in _map(res.get(part)) if _is_gpu_resource(n)}
    return sorted(names)


def gpu_containers(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for c in _containers(pod) if gpu_resources(c)]


# ===================================================================================== the policies

_GPU_POOL_TYPES = (EKS_NODE_GROUP, GKE_NODE_POOL, KARPENTER_NODE_POOL)


def _has_taint(taints: Any, effect: str) -> bool:
    return any(_map(t).get("key") == GPU_TAINT_KEY and _map(t).get("effect") == effect for t in _seq(taints))


def _gpu_pool_taint(args: ResourceValidationArgs, report: ReportViolation) -> None:
    props = args.props
    if args.resource_type == EKS_NODE_GROUP:
        reason, taints, effect, where = eks_gpu_reason(props), props.get("taints"), "NO_SCHEDULE", "taints"
    elif args.resource_type == GKE_NODE_POOL:
        node_config = _map(props.get("nodeConfig"))
        reason, taints, effect, where = (
            gke_gpu_reason(props),
            node_config.get("taints"),
            "NO_SCHEDULE",
            "nodeConfig.taints",
        )
    elif args.resource_type == KARPENTER_NODE_POOL:
        reason = karpenter_gpu_reason(props)
        taints, effect, where = (
            _get(props, "spec", "template", "spec", "taints"),
            "NoSchedule",
            "spec.template.spec.taints",
        )
    else:
        return
    if reason is None or _has_taint(taints, effect):
        return
    report(
        f"GPU pool ({reason}) has no {GPU_TAINT_KEY} taint with effect {effect} in {where}: pods that do not "
        f"ask for GPUs could land on (and hold) its GPU nodes. Add {{key: {GPU_TAINT_KEY}, value: present, "
        f"effect: {effect}}}.",
        None,
    )


gpu_pool_taint = ResourceValidationPolicy(
    name="gpu-pool-taint",
    description="Every GPU node group, GKE node pool and Karpenter NodePool has the nvidia.com/gpu NoSchedule taint.",
    enforcement_level=MANDATORY,
    validate=_gpu_pool_taint,
    remediation_steps="Add the taint nvidia.com/gpu=present with effect NoSchedule (NO_SCHEDULE on EKS/GKE).",
)


def _karpenter_gpu_limit(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != KARPENTER_NODE_POOL:
        return
    reason = karpenter_gpu_reason(args.props)
    if reason is None:
        return
    limit = _map(_get(args.props, "spec", "limits")).get(GPU_RESOURCE)
    if limit is None:
        report(
            f"Karpenter GPU NodePool ({reason}) sets no spec.limits[{GPU_RESOURCE}]: nothing caps how many GPUs "
            "it may launch. Set the limit to the pool's GPU budget.",
            None,
        )
    elif quantity(limit) is None:
        report(f"spec.limits[{GPU_RESOURCE}] is {limit!r}, not a quantity", None)


karpenter_gpu_limit = ResourceValidationPolicy(
    name="karpenter-gpu-limit",
    description="Every Karpenter GPU NodePool caps nvidia.com/gpu in spec.limits.",
    enforcement_level=MANDATORY,
    validate=_karpenter_gpu_limit,
    remediation_steps="Set spec.limits['nvidia.com/gpu'] (gpu-platform: nodePools[].maxGpus).",
)


# ---------------------------------------------------------------------------------- tenant quotas


def _stack_gpu_resources(resources: Sequence[PolicyResource]) -> set[str]:
    """GPU resource names the stack shows a pool advertises or a tenant can reach: every nvidia.com/gpu*
    and nvidia.com/mig-* name in any ResourceQuota, Kueue ClusterQueue or Volcano Queue, plus nvidia.com/gpu."""
    names = {GPU_RESOURCE}
    for r in resources:
        group, kind = k8s_group_kind(r.resource_type)
        spec = _map(r.props.get("spec"))
        if r.resource_type == RESOURCE_QUOTA:
            names.update(k.removeprefix("requests.").removeprefix("limits.") for k in _map(spec.get("hard")))
        elif group == "kueue.x-k8s.io" and kind == "ClusterQueue":
            for rg in _seq(spec.get("resourceGroups")):
                names.update(_strs(_map(rg).get("coveredResources")))
                for fl in _seq(_map(rg).get("flavors")):
                    names.update(_map(x).get("name") for x in _seq(_map(fl).get("resources")))
        elif group == "scheduling.volcano.sh" and kind == "Queue":
            for field in ("capability", "deserved", "guarantee"):
                names.update(_map(spec.get(field)))
                names.update(_map(_get(spec, field, "resource")))
    return {n for n in names if _is_gpu_resource(n)}


def _namespace_quotas(resources: Sequence[PolicyResource], namespace: str) -> list[PolicyResource]:
    """ResourceQuotas in the namespace that apply to every pod (no scopes)."""
    out = []
    for r in resources:
        if r.resource_type != RESOURCE_QUOTA or _meta(r.props).get("namespace") != namespace:
            continue
        spec = _map(r.props.get("spec"))
        if _seq(spec.get("scopes")) or spec.get("scopeSelector"):
            continue
        out.append(r)
    return out


def _tenant_gpu_quota(args: StackValidationArgs, report: ReportViolation) -> None:
    required = sorted(_stack_gpu_resources(args.resources))
    for ns in args.resources:
        if ns.resource_type != NAMESPACE or not _labels(ns.props).get(TENANT_LABEL):
            continue
        name = _meta(ns.props).get("name") or ns.name
        capped: set[str] = set()
        for q in _namespace_quotas(args.resources, name):
            capped.update(
                k.removeprefix("requests.") for k in _map(_get(q.props, "spec", "hard")) if k.startswith("requests.")
            )
        missing = [n for n in required if n not in capped]
        if missing:
            report(
                f"tenant namespace {name!r}: no ResourceQuota (without scopes) caps "
                f"{', '.join('requests.' + n for n in missing)}; GPU resources the stack advertises: "
                f"{', '.join(required)}. Uncapped, one tenant can take every such GPU.",
                ns.urn,
            )


tenant_gpu_quota = StackValidationPolicy(
    name="tenant-gpu-quota",
    description="Every tenant namespace has a ResourceQuota capping requests.nvidia.com/gpu and every other GPU "
    "resource name (MIG profiles, shared GPUs) the stack advertises.",
    enforcement_level=MANDATORY,
    validate=_tenant_gpu_quota,
    remediation_steps="Give the namespace a ResourceQuota with requests.<name> for each GPU resource (0 is a cap).",
)


# ----------------------------------------------------------------------------------- Helm releases

_EXACT_VERSION = re.compile(
    r"^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$"
)


def chart_source(props: Mapping[str, Any]) -> str | None:
    """Where a release's chart comes from: the registry path of an oci:// chart, else repositoryOpts.repo."""
    chart = props.get("chart")
    if isinstance(chart, str) and chart.startswith("oci://"):
        return chart.rsplit("/", 1)[0]
    repo = _get(props, "repositoryOpts", "repo")
    return repo if isinstance(repo, str) and repo else None


def _norm(source: str) -> str:
    return source.strip().rstrip("/")


def _helm_chart_pinned(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in (HELM_RELEASE, HELM_CHART_V4):
        return
    props = args.props
    chart = props.get("chart")
    version = props.get("version")
    if not isinstance(version, str) or not version.strip():
        report(f"chart {chart!r} has no version: Helm would install whatever is newest. Pin an exact version.", None)
    elif not _EXACT_VERSION.match(version.strip()):
        report(f"chart {chart!r} version {version!r} is not an exact version (ranges and wildcards float).", None)
    allowed = sorted({_norm(s) for s in _config_strs(args, "allowedSources", DEFAULT_ALLOWED_SOURCES)})
    source = chart_source(props)
    if source is None:
        report(
            f"chart {chart!r} names no repository (no oci:// reference, no repositoryOpts.repo): it would come from "
            f"a local path or a Helm repo alias. Allowed sources: {', '.join(allowed)}.",
            None,
        )
    elif _norm(source) not in allowed:
        report(f"chart {chart!r} comes from {source}, which is not allow-listed ({', '.join(allowed)}).", None)


helm_chart_pinned = ResourceValidationPolicy(
    name="helm-chart-pinned",
    description="Helm releases pin an exact chart version from an allow-listed repository.",
    enforcement_level=MANDATORY,
    validate=_helm_chart_pinned,
    config_schema=PolicyConfigSchema(
        properties={
            "allowedSources": {
                "type": "array",
                "items": {"type": "string"},
                "default": list(DEFAULT_ALLOWED_SOURCES),
                "description": "Helm repository URLs, and oci:// registry paths (the chart reference without its "
                "last segment), releases may come from.",
            }
        }
    ),
    remediation_steps="Use the versions in components/versions.py (the only place charts are written down).",
)


# ------------------------------------------------------------------------------- node IMDS and disks


def _imds_ok(options: Mapping[str, Any], default_tokens: str | None) -> bool:
    if options.get("httpEndpoint") == "disabled":
        return True
    tokens = options.get("httpTokens", default_tokens)
    return tokens == "required"


def _node_imdsv2_and_encryption(args: ResourceValidationArgs, report: ReportViolation) -> None:
    props = args.props
    if args.resource_type == LAUNCH_TEMPLATE:
        options = _map(props.get("metadataOptions"))
        if not _imds_ok(options, None):
            got = options.get("httpTokens")
            report(
                "launch template does not require IMDSv2: metadataOptions.httpTokens is "
                f"{got!r} (unset leaves it to the AMI or account default). Set httpTokens: required.",
                None,
            )
        mappings, flag = _seq(props.get("blockDeviceMappings")), "blockDeviceMappings"
    elif args.resource_type == EC2_NODE_CLASS:
        spec = _map(props.get("spec"))
        options = _map(spec.get("metadataOptions"))
        # The CRD defaults httpTokens to "required" when metadataOptions or the field is omitted.
        if not _imds_ok(options, "required"):
            report(
                f"EC2NodeClass sets spec.metadataOptions.httpTokens: {options.get('httpTokens')!r}; use required.", None
            )
        mappings, flag = _seq(spec.get("blockDeviceMappings")), "spec.blockDeviceMappings"
    else:
        return
    if not mappings:
        report(
            f"{flag} is empty: the root volume's encryption is left to the AMI / account default. Declare every "
            "volume (root included) with ebs.encrypted: true.",
            None,
        )
    for i, m in enumerate(mappings):
        m = _map(m)
        if m.get("noDevice") is not None or m.get("virtualName"):
            continue  # suppressed device or instance store: no EBS volume
        device = m.get("deviceName") or i
        if not _truthy(_get(m, "ebs", "encrypted")):
            report(f"{flag}[{device}]: EBS volume is not encrypted (ebs.encrypted must be true).", None)


node_imdsv2_and_encryption = ResourceValidationPolicy(
    name="node-imdsv2-and-encryption",
    description="EC2NodeClasses and launch templates require IMDSv2 (httpTokens: required) and encrypt "
    "all EBS volumes.",
    enforcement_level=MANDATORY,
    validate=_node_imdsv2_and_encryption,
    remediation_steps="Set metadataOptions.httpTokens: required and ebs.encrypted: true on every block device mapping.",
)


# --------------------------------------------------------------------------------- GKE GPU hardening


def _gke_gpu_node_hardening(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != GKE_NODE_POOL:
        return
    reason = gke_gpu_reason(args.props)
    if reason is None:
        return
    node_config = _map(args.props.get("nodeConfig"))
    if _get(node_config, "shieldedInstanceConfig", "enableSecureBoot") is not True:
        report(
            f"GKE GPU pool ({reason}) does not enable secure boot (nodeConfig.shieldedInstanceConfig."
            "enableSecureBoot). GKE-installed drivers are signed; only operator-compiled drivers need it off.",
            None,
        )
    mode = _get(node_config, "workloadMetadataConfig", "mode")
    if mode != "GKE_METADATA":
        report(
            f"GKE GPU pool ({reason}) exposes the node's metadata server to pods (workloadMetadataConfig.mode is "
            f"{mode!r}); use GKE_METADATA (Workload Identity) so pods cannot use the node's service account.",
            None,
        )


gke_gpu_node_hardening = ResourceValidationPolicy(
    name="gke-gpu-node-hardening",
    description="GKE GPU node pools use shielded nodes with secure boot and the GKE_METADATA workload metadata mode.",
    enforcement_level=ADVISORY,
    validate=_gke_gpu_node_hardening,
)


# ------------------------------------------------------------------------------ time-slicing bound


def _device_plugin_configs(data: Any) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(key, parsed config) for every value that is a k8s-device-plugin config document."""
    for key, text in sorted(_map(data).items()):
        if not isinstance(text, str):
            continue
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError:
            continue
        if isinstance(doc, Mapping) and isinstance(doc.get("sharing"), Mapping):
            yield key, doc


def _time_slicing_replicas(args: ResourceValidationArgs, report: ReportViolation) -> None:
    bound = _config_int(args, "maxReplicas", DEFAULT_MAX_TIME_SLICING_REPLICAS)
    props = args.props
    if args.resource_type in (GKE_NODE_POOL,):
        for acc in _seq(_get(props, "nodeConfig", "guestAccelerators")):
            sharing = _map(_map(acc).get("gpuSharingConfig"))
            n = sharing.get("maxSharedClientsPerGpu")
            if sharing.get("gpuSharingStrategy") == "TIME_SHARING" and isinstance(n, (int, float)) and n > bound:
                report(
                    f"GKE time-sharing gives {_num(n)} clients per GPU (maxSharedClientsPerGpu), above the bound of "
                    f"{bound}: each gets a 1/{_num(n)} time slice with no memory isolation.",
                    None,
                )
        return
    if args.resource_type == CONFIG_MAP:
        sources = [("data", props.get("data"))]
    elif args.resource_type in (HELM_RELEASE, HELM_CHART_V4):
        sources = [("values.devicePlugin.config.data", _get(props, "values", "devicePlugin", "config", "data"))]
    else:
        return
    for where, data in sources:
        for key, doc in _device_plugin_configs(data):
            for res in _seq(_get(doc, "sharing", "timeSlicing", "resources")):
                n = _map(res).get("replicas")
                if isinstance(n, (int, float)) and not isinstance(n, bool) and n > bound:
                    report(
                        f"{where}[{key}]: time-slicing {_map(res).get('name')} into {_num(n)} replicas, above the "
                        f"bound of {bound}: each replica gets a 1/{_num(n)} time slice and shares all GPU memory.",
                        None,
                    )


time_slicing_replicas = ResourceValidationPolicy(
    name="time-slicing-replicas",
    description="Time-slicing splits a GPU into at most maxReplicas (default 8) shares: device-plugin configs "
    "(ConfigMaps, GPU Operator values) and GKE time-sharing.",
    enforcement_level=ADVISORY,
    validate=_time_slicing_replicas,
    config_schema=PolicyConfigSchema(
        properties={
            "maxReplicas": {
                "type": "integer",
                "minimum": 2,
                "default": DEFAULT_MAX_TIME_SLICING_REPLICAS,
                "description": "Most time-slicing replicas (GKE: maxSharedClientsPerGpu) per physical GPU.",
            }
        }
    ),
)


# ------------------------------------------------------------------------------------ spot capacity


def _spot_gpu_disruption(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != KARPENTER_NODE_POOL:
        return
    props = args.props
    if karpenter_gpu_reason(props) is None or "spot" not in karpenter_capacity_types(props):
        return
    consolidate = _get(props, "spec", "disruption", "consolidateAfter")
    if not isinstance(consolidate, str) or consolidate == "Never":
        report(
            f"spot GPU NodePool: spec.disruption.consolidateAfter is {consolidate!r}; set a duration so idle or "
            "underused spot GPU nodes are consolidated away.",
            None,
        )
    expire = _get(props, "spec", "template", "spec", "expireAfter")
    if not isinstance(expire, str) or expire == "Never":
        report(
            f"spot GPU NodePool: spec.template.spec.expireAfter is {expire!r}; set a duration so nodes are "
            "replaced (AMI and driver updates reach them).",
            None,
        )


spot_gpu_disruption = ResourceValidationPolicy(
    name="spot-gpu-disruption",
    description="Karpenter spot GPU NodePools set disruption.consolidateAfter and template.spec."
    "expireAfter, not Never.",
    enforcement_level=ADVISORY,
    validate=_spot_gpu_disruption,
)


@dataclass(frozen=True)
class GpuPool:
    pool: str  # the gpu-platform/pool label, else the resource's own name
    resource: PolicyResource
    capacity: frozenset[str]  # "spot" / "on-demand"


def gpu_pools(resources: Sequence[PolicyResource]) -> list[GpuPool]:
    """Every GPU node group / node pool / Karpenter NodePool of the stack, with its capacity types."""
    out = []
    for r in resources:
        props = r.props
        if r.resource_type == EKS_NODE_GROUP and eks_gpu_reason(props):
            pool = _map(props.get("labels")).get(POOL_LABEL) or props.get("nodeGroupName") or r.name
            spot = str(props.get("capacityType") or "ON_DEMAND").upper() == "SPOT"
            out.append(GpuPool(str(pool), r, frozenset({"spot" if spot else "on-demand"})))
        elif r.resource_type == GKE_NODE_POOL and gke_gpu_reason(props):
            node_config = _map(props.get("nodeConfig"))
            pool = _map(node_config.get("labels")).get(POOL_LABEL) or props.get("name") or r.name
            spot = node_config.get("spot") is True or node_config.get("preemptible") is True
            out.append(GpuPool(str(pool), r, frozenset({"spot" if spot else "on-demand"})))
        elif r.resource_type == KARPENTER_NODE_POOL and karpenter_gpu_reason(props):
            labels = _map(_get(props, "spec", "template", "metadata", "labels"))
            pool = labels.get(POOL_LABEL) or _meta(props).get("name") or r.name
            out.append(GpuPool(str(pool), r, frozenset(karpenter_capacity_types(props))))
    return out


def _by_group_kind(resources: Sequence[PolicyResource], group: str, kind: str) -> list[PolicyResource]:
    return [r for r in resources if k8s_group_kind(r.resource_type) == (group, kind)]


def tenant_pools(resources: Sequence[PolicyResource], namespace: str) -> set[str] | None:
    """Pools a tenant namespace gets GPU quota on through Kueue: LocalQueue -> ClusterQueue -> flavors with a
    non-zero nominal quota -> ResourceFlavor nodeLabels[gpu-platform/pool]. None when Kueue shows nothing."""
    queues = {
        _get(lq.props, "spec", "clusterQueue")
        for lq in _by_group_kind(resources, "kueue.x-k8s.io", "LocalQueue")
        if _meta(lq.props).get("namespace") == namespace
    }
    flavors: set[str] = set()
    for cq in _by_group_kind(resources, "kueue.x-k8s.io", "ClusterQueue"):
        if _meta(cq.props).get("name") not in queues:
            continue
        for rg in _seq(_get(cq.props, "spec", "resourceGroups")):
            for fl in _seq(_map(rg).get("flavors")):
                quotas = [quantity(_map(x).get("nominalQuota")) for x in _seq(_map(fl).get("resources"))]
                if any(q for q in quotas):
                    flavors.add(_map(fl).get("name"))
    pools = set()
    for rf in _by_group_kind(resources, "kueue.x-k8s.io", "ResourceFlavor"):
        if _meta(rf.props).get("name") in flavors:
            pool = _map(_get(rf.props, "spec", "nodeLabels")).get(POOL_LABEL)
            if pool:
                pools.add(str(pool))
    return pools or None


def _critical_tenant_capacity(args: StackValidationArgs, report: ReportViolation) -> None:
    pools = gpu_pools(args.resources)
    if not pools:
        return
    capacity: dict[str, set[str]] = {}
    for p in pools:
        capacity.setdefault(p.pool, set()).update(p.capacity)
    for ns in args.resources:
        labels = _labels(ns.props)
        if ns.resource_type != NAMESPACE or str(labels.get(CRITICAL_LABEL, "")).lower() != "true":
            continue
        name = _meta(ns.props).get("name") or ns.name
        reach = tenant_pools(args.resources, name)
        basis = "its Kueue quotas" if reach is not None else "the stack's GPU pools (no Kueue quota found)"
        reach = {p for p in (reach if reach is not None else capacity) if p in capacity}
        if reach and all(capacity[p] <= {"spot"} for p in reach):
            report(
                f"critical tenant {name!r} only has spot GPU capacity ({basis}: {', '.join(sorted(reach))}); a spot "
                "reclaim can take all of it at once. Give it quota on an on-demand pool (or an on-demand fallback).",
                ns.urn,
            )


critical_tenant_capacity = StackValidationPolicy(
    name="critical-tenant-capacity",
    description="A tenant marked critical (namespace label gpu-platform/critical=true) does not depend on spot GPU "
    "capacity alone.",
    enforcement_level=ADVISORY,
    validate=_critical_tenant_capacity,
)


# -------------------------------------------------------------------------------------- priorities


def _single_default_priority_class(args: StackValidationArgs, report: ReportViolation) -> None:
    defaults = [r for r in args.resources if r.resource_type == PRIORITY_CLASS and r.props.get("globalDefault") is True]
    if len(defaults) > 1:
        names = sorted(_meta(r.props).get("name") or r.name for r in defaults)
        for r in defaults:
            report(
                f"{len(defaults)} PriorityClasses are globalDefault ({', '.join(names)}); at most one may be.", r.urn
            )


single_default_priority_class = StackValidationPolicy(
    name="single-default-priority-class",
    description="At most one PriorityClass of the stack is globalDefault.",
    enforcement_level=MANDATORY,
    validate=_single_default_priority_class,
)


def _gpu_workload_priority_class(args: ResourceValidationArgs, report: ReportViolation) -> None:
    templates = pod_templates(args.resource_type, args.props)
    spec = _map(args.props.get("spec"))
    group, kind = k8s_group_kind(args.resource_type)
    if group == "batch.volcano.sh" and spec.get("priorityClassName"):
        return  # a Volcano Job's priority applies to all its tasks
    if group == "kubeflow.org" and _get(spec, "runPolicy", "schedulingPolicy", "priorityClass"):
        return
    for t in templates:
        if gpu_containers(t.spec) and not t.spec.get("priorityClassName"):
            report(
                f"{kind} {_obj_name(args.props, args.name)}: {t.where} requests GPUs but sets no priorityClassName; "
                "it would run at the cluster default and could neither preempt nor be preempted in order. Use one "
                "of the platform's PriorityClasses (your tenant's ceiling or lower).",
                None,
            )


gpu_workload_priority_class = ResourceValidationPolicy(
    name="gpu-workload-priority-class",
    description="GPU-requesting Pods, Deployments, Jobs and Volcano/Kubeflow jobs set a priorityClassName.",
    enforcement_level=MANDATORY,
    validate=_gpu_workload_priority_class,
)


# ------------------------------------------------------------------------------------ gang scheduling


def _gpu_job_gang_scheduling(args: ResourceValidationArgs, report: ReportViolation) -> None:
    group, kind = k8s_group_kind(args.resource_type)
    templates = pod_templates(args.resource_type, args.props)
    if not any(gpu_containers(t.spec) for t in templates):
        return
    props = args.props
    spec = _map(props.get("spec"))
    name = _obj_name(props, args.name)
    kueue = bool(_labels(props).get(KUEUE_QUEUE_LABEL))
    if group == "batch.volcano.sh" and kind == "Job":
        total = sum(t.replicas for t in templates)
        if total <= 1:
            return
        scheduler = spec.get("schedulerName", "volcano")
        min_available = spec.get("minAvailable")
        if scheduler != "volcano":
            report(f"Volcano Job {name}: schedulerName is {scheduler!r}; gang scheduling needs volcano.", None)
        if not isinstance(min_available, (int, float)) or int(min_available) != total:
            report(
                f"Volcano Job {name}: spec.minAvailable is {_num(min_available)} but its tasks have {total} replicas; "
                "set minAvailable to the replica total so the job starts whole or not at all.",
                None,
            )
        return
    if group == "batch" and kind == "Job":
        total = templates[0].replicas
    elif group == "kubeflow.org" and kind in _KUBEFLOW_KINDS:
        total = sum(t.replicas for t in templates)
    elif group == "jobset.x-k8s.io" and kind == "JobSet":
        total = sum(t.replicas for t in templates)
    else:
        return  # not a job (Pods, Deployments: not gangs)
    if total <= 1 or kueue:
        return
    volcano = all(t.spec.get("schedulerName") == "volcano" for t in templates)
    if volcano and group == "batch" and kind == "Job":
        group_name = _map(_meta(props).get("annotations")).get(VOLCANO_GROUP_ANNOTATION) or _map(
            _get(spec, "template", "metadata", "annotations")
        ).get(VOLCANO_GROUP_ANNOTATION)
        if group_name:
            return  # gang through the named PodGroup (its minMember must equal the parallelism)
    if volcano and group == "kubeflow.org":
        min_available = _get(spec, "runPolicy", "schedulingPolicy", "minAvailable")
        if isinstance(min_available, (int, float)) and int(min_available) == total:
            return
    report(
        f"{kind} {name} runs {total} GPU pods but is not gang-scheduled: partial starts hold GPUs while waiting for "
        f"peers (and can deadlock). Add the label {KUEUE_QUEUE_LABEL}: <local queue>, or schedule it with "
        "volcano and a minAvailable / PodGroup minMember equal to its pod count.",
        None,
    )


gpu_job_gang_scheduling = ResourceValidationPolicy(
    name="gpu-job-gang-scheduling",
    description="Multi-pod GPU jobs are gang-scheduled: a Kueue queue-name label, or Volcano with minAvailable equal "
    "to the replica total.",
    enforcement_level=MANDATORY,
    validate=_gpu_job_gang_scheduling,
)


# --------------------------------------------------------------------------------- container hardening


def _non_root(pod: Mapping[str, Any], container: Mapping[str, Any]) -> bool:
    csc, psc = _map(container.get("securityContext")), _map(pod.get("securityContext"))
    non_root = csc.get("runAsNonRoot", psc.get("runAsNonRoot"))
    user = csc.get("runAsUser", psc.get("runAsUser"))
    if isinstance(user, (int, float)) and not isinstance(user, bool):
        return user != 0 and non_root is not False
    return non_root is True


def _memory_shm(pod: Mapping[str, Any], container: Mapping[str, Any]) -> bool:
    volumes = {_map(v).get("name"): _map(v) for v in _seq(pod.get("volumes"))}
    for m in _seq(container.get("volumeMounts")):
        m = _map(m)
        if str(m.get("mountPath", "")).rstrip("/") == "/dev/shm":
            return _get(volumes.get(m.get("name"), {}), "emptyDir", "medium") == "Memory"
    return False


def _gpu_container_hardening(args: ResourceValidationArgs, report: ReportViolation) -> None:
    _, kind = k8s_group_kind(args.resource_type)
    for t in pod_templates(args.resource_type, args.props):
        for c in gpu_containers(t.spec):
            where = f"{kind} {_obj_name(args.props, args.name)} {t.where} container {c.get('name')!r}"
            if not _non_root(t.spec, c):
                report(
                    f"{where} may run as root: set securityContext.runAsNonRoot: true (and a non-zero runAsUser).", None
                )
            if not _memory_shm(t.spec, c):
                report(
                    f"{where} has no memory-backed /dev/shm: the default 64Mi breaks NCCL and DataLoader workers. "
                    "Mount an emptyDir {medium: Memory, sizeLimit: ...} at /dev/shm.",
                    None,
                )


gpu_container_hardening = ResourceValidationPolicy(
    name="gpu-container-hardening",
    description="GPU containers run as non-root and mount a memory-backed /dev/shm.",
    enforcement_level=ADVISORY,
    validate=_gpu_container_hardening,
)


# ------------------------------------------------------------------------------------------ DCGM


def _chart_name(props: Mapping[str, Any]) -> str:
    chart = props.get("chart")
    return chart.rsplit("/", 1)[-1] if isinstance(chart, str) else ""


def _dcgm_monitoring(args: StackValidationArgs, report: ReportViolation) -> None:
    releases = [r for r in args.resources if r.resource_type in (HELM_RELEASE, HELM_CHART_V4)]
    operator = [r for r in releases if _chart_name(r.props) == versions.GPU_OPERATOR.chart]
    pools = gpu_pools(args.resources)
    if not pools and not operator:
        return  # no GPU capacity in this stack
    if any(_chart_name(r.props) == versions.DCGM_EXPORTER.chart for r in releases):
        return
    if any(_get(r.props, "values", "dcgmExporter", "enabled") is not False for r in operator):
        return
    what = f"GPU pools {', '.join(sorted({p.pool for p in pools}))}" if pools else "the GPU Operator"
    report(
        f"the stack runs {what} but no DCGM exporter: no GPU utilization, memory, temperature or XID metrics, so "
        "idle or failing GPUs go unnoticed. Install dcgm-exporter or keep the GPU Operator's dcgmExporter enabled.",
        None,
    )


dcgm_monitoring = StackValidationPolicy(
    name="dcgm-monitoring",
    description="A stack with GPU pools runs DCGM monitoring (a dcgm-exporter release, or the GPU Operator with "
    "dcgmExporter.enabled not false).",
    enforcement_level=ADVISORY,
    validate=_dcgm_monitoring,
)


# ----------------------------------------------------------------------------------- Pod Security


def _namespace_pod_security(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != NAMESPACE:
        return
    labels = _labels(args.props)
    name = _meta(args.props).get("name") or args.name
    level = labels.get(PSA_ENFORCE)
    tenant = labels.get(TENANT_LABEL)
    if tenant and level not in ("baseline", "restricted"):
        report(
            f"tenant namespace {name!r} enforces Pod Security level {level!r}; tenants need {PSA_ENFORCE} "
            "baseline or restricted.",
            None,
        )
        return
    if level != "privileged":
        return
    allowed = set(_config_strs(args, "privilegedNamespaces", DEFAULT_PRIVILEGED_NAMESPACES))
    marked = labels.get(MANAGED_BY_LABEL) == MANAGED_BY_VALUE and labels.get(OPERATOR_NAMESPACE_LABEL) == "true"
    if name not in allowed and not marked:
        report(
            f"namespace {name!r} is privileged but is not an operator namespace (allowed: "
            f"{', '.join(sorted(allowed))}, or labels {MANAGED_BY_LABEL}={MANAGED_BY_VALUE} + "
            f"{OPERATOR_NAMESPACE_LABEL}=true).",
            None,
        )


namespace_pod_security = ResourceValidationPolicy(
    name="namespace-pod-security",
    description="Tenant namespaces enforce Pod Security baseline or restricted; only operator "
    "namespaces are privileged.",
    enforcement_level=MANDATORY,
    validate=_namespace_pod_security,
    config_schema=PolicyConfigSchema(
        properties={
            "privilegedNamespaces": {
                "type": "array",
                "items": {"type": "string"},
                "default": list(DEFAULT_PRIVILEGED_NAMESPACES),
                "description": "Namespaces that may enforce the privileged Pod Security level.",
            }
        }
    ),
)


# ------------------------------------------------------------------------------------------- IAM


def _policy_documents(type_token: str, props: Mapping[str, Any]) -> list[tuple[str, Any]]:
    if type_token in (IAM_POLICY, IAM_ROLE_POLICY, IAM_USER_POLICY, IAM_GROUP_POLICY):
        return [("policy", props.get("policy"))]
    if type_token == IAM_ROLE:
        return [
            (f"inlinePolicies[{_map(p).get('name') or i}]", _map(p).get("policy"))
            for i, p in enumerate(_seq(props.get("inlinePolicies")))
        ]
    return []


def admin_statements(document: Mapping[str, Any]) -> list[str]:
    """Descriptions of the Allow statements of an IAM policy document that grant every action on every resource
    (``Action: *`` with ``Resource: *`` or a NotResource; ``NotAction`` with ``Resource: *``)."""
    statements = document.get("Statement")
    out = []
    for i, s in enumerate([statements] if isinstance(statements, Mapping) else _seq(statements)):
        s = _map(s)
        if s.get("Effect", "Allow") != "Allow":
            continue
        every_resource = "*" in _strs(s.get("Resource")) or "NotResource" in s
        label = s.get("Sid") or f"Statement[{i}]"
        if every_resource and any(a in ("*", "*:*") for a in _strs(s.get("Action"))):
            out.append(f"{label} allows Action * on every resource")
        elif every_resource and "NotAction" in s and "*" in _strs(s.get("Resource")):
            out.append(f"{label} allows every action except {', '.join(_strs(s.get('NotAction')))} on Resource *")
    return out


def _iam_no_admin_wildcard(args: ResourceValidationArgs, report: ReportViolation) -> None:
    for where, doc in _policy_documents(args.resource_type, args.props):
        if isinstance(doc, str):
            try:
                doc = json.loads(doc)
            except ValueError:
                report(f"{where} is not a JSON policy document", None)
                continue
        if not isinstance(doc, Mapping):
            continue
        for finding in admin_statements(doc):
            report(f"{where}: {finding}; that is administrator access. Scope actions and resources.", None)


iam_no_admin_wildcard = ResourceValidationPolicy(
    name="iam-no-admin-wildcard",
    description="IAM policies created by the stack grant no * action on * resource.",
    enforcement_level=MANDATORY,
    validate=_iam_no_admin_wildcard,
)


# ===================================================================================== the pack

POLICIES: tuple[ResourceValidationPolicy | StackValidationPolicy, ...] = (
    gpu_pool_taint,
    karpenter_gpu_limit,
    tenant_gpu_quota,
    helm_chart_pinned,
    node_imdsv2_and_encryption,
    gke_gpu_node_hardening,
    time_slicing_replicas,
    spot_gpu_disruption,
    critical_tenant_capacity,
    single_default_priority_class,
    gpu_workload_priority_class,
    gpu_job_gang_scheduling,
    gpu_container_hardening,
    dcgm_monitoring,
    namespace_pod_security,
    iam_no_admin_wildcard,
    *cost_policies.POLICIES,
)

# The policies that judge workloads (Pods, Deployments, Jobs, Volcano / Kubeflow jobs); examples/ must pass them.
WORKLOAD_POLICIES: tuple[ResourceValidationPolicy, ...] = (
    gpu_workload_priority_class,
    gpu_job_gang_scheduling,
    gpu_container_hardening,
)

# Which resource types each policy reads (for the README table and for tests).
TARGETS: dict[str, tuple[str, ...]] = {
    "gpu-pool-taint": _GPU_POOL_TYPES,
    "karpenter-gpu-limit": (KARPENTER_NODE_POOL,),
    "tenant-gpu-quota": (NAMESPACE, RESOURCE_QUOTA, "Kueue ClusterQueue", "Volcano Queue"),
    "helm-chart-pinned": (HELM_RELEASE, HELM_CHART_V4),
    "node-imdsv2-and-encryption": (LAUNCH_TEMPLATE, EC2_NODE_CLASS),
    "gke-gpu-node-hardening": (GKE_NODE_POOL,),
    "time-slicing-replicas": (CONFIG_MAP, HELM_RELEASE, GKE_NODE_POOL),
    "spot-gpu-disruption": (KARPENTER_NODE_POOL,),
    "critical-tenant-capacity": (NAMESPACE, *_GPU_POOL_TYPES, "Kueue LocalQueue/ClusterQueue/ResourceFlavor"),
    "single-default-priority-class": (PRIORITY_CLASS,),
    "gpu-workload-priority-class": ("Pod, Deployment, StatefulSet, Job, CronJob, Volcano Job, Kubeflow jobs, JobSet",),
    "gpu-job-gang-scheduling": ("Job, Volcano Job, Kubeflow jobs, JobSet",),
    "gpu-container-hardening": ("Pod, Deployment, StatefulSet, Job, CronJob, Volcano Job, Kubeflow jobs, JobSet",),
    "dcgm-monitoring": (HELM_RELEASE, *_GPU_POOL_TYPES),
    "namespace-pod-security": (NAMESPACE,),
    "iam-no-admin-wildcard": (IAM_POLICY, IAM_ROLE_POLICY, IAM_USER_POLICY, IAM_GROUP_POLICY, IAM_ROLE),
    **cost_policies.TARGETS,
}


def by_name() -> dict[str, ResourceValidationPolicy | StackValidationPolicy]:
    return {p.name: p for p in POLICIES}


def level_of(policy: ResourceValidationPolicy | StackValidationPolicy) -> EnforcementLevel:
    return policy.enforcement_level or ADVISORY
