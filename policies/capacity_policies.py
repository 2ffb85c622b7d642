"""Capacity and nodes: GPU pools are tainted and capped, GPUs are not split too thin, spot GPU nodes roll."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import yaml
from pulumi_policy import PolicyConfigSchema, ReportViolation, ResourceValidationArgs

from .common import (
    _GPU_POOL_TYPES,
    ADVISORY,
    CONFIG_MAP,
    DEFAULT_MAX_TIME_SLICING_REPLICAS,
    EKS_NODE_GROUP,
    GKE_NODE_POOL,
    GPU_RESOURCE,
    GPU_TAINT_KEY,
    HELM_CHART_V4,
    HELM_RELEASE,
    KARPENTER_NODE_POOL,
    MANDATORY,
    TypedResourcePolicy,
    _config_int,
    _get,
    _map,
    _num,
    _seq,
    eks_gpu_reason,
    gke_gpu_reason,
    karpenter_capacity_types,
    karpenter_gpu_reason,
    quantity,
)


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


gpu_pool_taint = TypedResourcePolicy(
    resource_types=_GPU_POOL_TYPES,
    name="gpu-pool-taint",
    description="Every GPU node group, GKE node pool and Karpenter NodePool has the nvidia.com/gpu NoSchedule taint.",
    enforcement_level=MANDATORY,
    validate=_gpu_pool_taint,
    remediation_steps="Add the taint nvidia.com/gpu=present with effect NoSchedule (NO_SCHEDULE on EKS/GKE).",
)


def _karpenter_gpu_limit(args: ResourceValidationArgs, report: ReportViolation) -> None:
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


karpenter_gpu_limit = TypedResourcePolicy(
    resource_types=(KARPENTER_NODE_POOL,),
    name="karpenter-gpu-limit",
    description="Every Karpenter GPU NodePool caps nvidia.com/gpu in spec.limits.",
    enforcement_level=MANDATORY,
    validate=_karpenter_gpu_limit,
    remediation_steps="Set spec.limits['nvidia.com/gpu'] (gpu-platform: nodePools[].maxGpus).",
)


# ------------------------------------------------------------------------------ time-slicing bound


# libyaml's parser when PyYAML has it: the same safe constructors, several times faster on every ConfigMap.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


# How a double-quoted YAML scalar can spell "sharing": each letter itself or a hex escape (\\xXX, \\uXXXX,
# \\UXXXXXXXX; the other escapes make no letter), with escaped line breaks (each followed by the next line's spaces
# and tabs, both dropped) between letters; an unescaped line break becomes a space or a newline in the value, so
# it cannot (PyYAML 6.0.4, yaml/scanner.py: ESCAPE_REPLACEMENTS, ESCAPE_CODES, scan_flow_scalar_non_spaces,
# scan_flow_scalar_breaks). The pattern matches a few more texts than those (any hex run, a backslash before any
# whitespace), never fewer, and compiles in a quarter of the time of the exact one.
_ESCAPED_SHARING = re.compile(r"(?:\\\s+)*".join(f"(?:{letter}|\\\\[xuU][0-9A-Fa-f]+)" for letter in "sharing"))


def _may_hold_sharing(text: str) -> bool:
    """Whether a YAML text can have a ``sharing`` key: spelled out, or written with escapes (a double-quoted key,
    ``"\\x73haring"``). Anything else (the cost document, dashboards) is not parsed: at 1000 tenants the cost
    ConfigMap alone is 400 kB of JSON, and parsing it was most of this policy's time; a Grafana dashboard (17 kB of
    JSON with backslashes in its queries) was still parsed for any backslash: 3/4 of it at 200 tenants."""
    return "sharing" in text or ("\\" in text and _ESCAPED_SHARING.search(text) is not None)


def _device_plugin_configs(data: Any) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(key, parsed config) for every value that is a k8s-device-plugin config document."""
    for key, text in sorted(_map(data).items()):
        if not isinstance(text, str) or not _may_hold_sharing(text):
            continue
        try:
            doc = yaml.load(text, Loader=_SAFE_LOADER)
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


time_slicing_replicas = TypedResourcePolicy(
    resource_types=(GKE_NODE_POOL, CONFIG_MAP, HELM_RELEASE, HELM_CHART_V4),
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


spot_gpu_disruption = TypedResourcePolicy(
    resource_types=(KARPENTER_NODE_POOL,),
    name="spot-gpu-disruption",
    description="Karpenter spot GPU NodePools set disruption.consolidateAfter and template.spec."
    "expireAfter, not Never.",
    enforcement_level=ADVISORY,
    validate=_spot_gpu_disruption,
)


# Which resource types each policy reads (pack.TARGETS: for the README table and for tests).
TARGETS: dict[str, tuple[str, ...]] = {
    "gpu-pool-taint": _GPU_POOL_TYPES,
    "karpenter-gpu-limit": (KARPENTER_NODE_POOL,),
    "time-slicing-replicas": (CONFIG_MAP, HELM_RELEASE, GKE_NODE_POOL),
    "spot-gpu-disruption": (KARPENTER_NODE_POOL,),
}
