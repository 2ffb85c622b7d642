"""The stack spec's tenants (``gpu-platform:tenants``) and priority classes (``gpu-platform:priorityClasses``).
Part of the spec layer (``components/spec/model.py``): imports only ``validation`` and ``spec_base``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import MAX_GPUS, Model, Name, Quantity
from .validation import Description, count


class ResourceBudget(Model):
    cpu: Quantity | None = None
    memory: Quantity | None = None


class Tenant(Model):
    name: Name
    gpu_quota: dict[str, count(0, MAX_GPUS)] = Field(
        default_factory=dict, description="physical GPUs per pool (the scheduler sees sharing units)"
    )
    borrowing_limit: dict[str, count(0, MAX_GPUS)] = Field(default_factory=dict)
    lending_limit: dict[str, count(0, MAX_GPUS)] = Field(default_factory=dict)
    cohort: Name | None = None
    priority: str = Field(default="batch", description="the tenant's highest allowed PriorityClass")
    quota: ResourceBudget = Field(default_factory=ResourceBudget)
    pod_security: Literal["baseline", "restricted"] = "baseline"
    queue_weight: count(1, 100) = 1
    scheduler: Literal["kueue", "volcano"] | None = Field(
        default=None,
        description="who queues the tenant's workloads: kueue (default when on) manages every workload in the "
        "namespace; volcano leaves its pods to Volcano's gang scheduler (Kueue would gate them one by one)",
    )
    critical: bool = False


class PriorityClassSpec(Model):
    name: Name
    value: count(-(2**31), 1_000_000_000)
    preemption_policy: Literal["PreemptLowerPriority", "Never"] = "PreemptLowerPriority"
    global_default: bool = False
    description: Description = ""


DEFAULT_PRIORITY_CLASSES: tuple[PriorityClassSpec, ...] = (
    PriorityClassSpec(name="inference", value=100_000, description="online inference: preempts training and batch"),
    PriorityClassSpec(name="training-critical", value=90_000, description="deadline training: preempts lower tiers"),
    PriorityClassSpec(name="training", value=50_000, description="regular training jobs"),
    PriorityClassSpec(name="batch", value=10_000, description="batch and evaluation jobs"),
    PriorityClassSpec(
        name="dev",
        value=1_000,
        preemption_policy="Never",
        description="notebooks and experiments: first to be preempted; never preempt pods (kube-scheduler), "
        "and in Kueue only tenants whose ceiling is this class get a ClusterQueue that never preempts",
    ),
)
