"""Monitoring: a stack with GPUs runs DCGM, so idle or failing GPUs are seen."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import ReportViolation, StackValidationArgs, StackValidationPolicy

from .common import (
    _GPU_POOL_TYPES,
    ADVISORY,
    DCGM_EXPORTER_CHART,
    GPU_OPERATOR_CHART,
    HELM_CHART_V4,
    HELM_RELEASE,
    _get,
    gpu_pools,
)

# ------------------------------------------------------------------------------------------ DCGM


def _chart_name(props: Mapping[str, Any]) -> str:
    """The chart's name however the release names it: ``gpu-operator``, ``<repo>/gpu-operator``,
    ``oci://<mirror>/gpu-operator``, or a packaged archive ``<folder>/gpu-operator-<version>.tgz`` (chartSource
    bundled, or a folder: Helm's ``helm package`` file name, <name>-<version>.tgz)."""
    chart = props.get("chart")
    if not isinstance(chart, str):
        return ""
    name = chart.rsplit("/", 1)[-1]
    version = props.get("version")
    if name.endswith(".tgz") and isinstance(version, str) and name.endswith(f"-{version.strip()}.tgz"):
        return name[: -len(f"-{version.strip()}.tgz")]
    return name.removesuffix(".tgz")


def _dcgm_monitoring(args: StackValidationArgs, report: ReportViolation) -> None:
    releases = [r for r in args.resources if r.resource_type in (HELM_RELEASE, HELM_CHART_V4)]
    operator = [r for r in releases if _chart_name(r.props) == GPU_OPERATOR_CHART["chart"]]
    pools = gpu_pools(args.resources)
    if not pools and not operator:
        return  # no GPU capacity in this stack
    if any(_chart_name(r.props) == DCGM_EXPORTER_CHART["chart"] for r in releases):
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


# Which resource types each policy reads (pack.TARGETS: for the README table and for tests).
TARGETS: dict[str, tuple[str, ...]] = {
    "dcgm-monitoring": (HELM_RELEASE, *_GPU_POOL_TYPES),
}
