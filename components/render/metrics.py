"""The series gpu-platform's recording rules produce, by name, and how a number is written into PromQL.

The PrometheusRule (``components/render/monitoring.py``) defines them; the Grafana dashboard
(``components/render/dashboards/gpu.py``) queries them. Both import this module, neither the other.
"""

from __future__ import annotations

# Recording rules (also what the dashboard queries).
UTILIZATION = "gpu_platform:gpu_utilization:percent"
XID_LAST = "gpu_platform:gpu_xid_errors:last"
# Idle spend (components/plan/cost.py prices): unallocated idle devices per pool (the GpuIdle definition), and
# idle devices pods hold, per pool and tenant namespace (the GpuAllocatedIdle condition, without its "for").
IDLE_COST = "gpu_platform:idle_gpu_cost:usd_per_hour"
ALLOCATED_IDLE_COST = "gpu_platform:allocated_idle_gpu_cost:usd_per_hour"


def number(x: float) -> str:
    """A threshold as PromQL reads it: ``80.0`` -> ``80``, ``0.5`` -> ``0.5``."""
    return f"{x:g}"
