"""The stack spec's tenants (``gpu-platform:tenants``) and priority classes (``gpu-platform:priorityClasses``).
Part of the spec layer (``components/spec/model.py``): imports only ``validation`` and ``spec_base``.
"""

from typing import Literal

from pydantic import Field

from .base import MAX_GPUS, Model, Name, Quantity
from .validation import Description, count


class ResourceBudget(Model):
    """CPU and memory a tenant's pods may request in all, beside its GPUs."""

    cpu: Quantity | None = Field(
        default=None,
        description="requests.cpu cap of the namespace's ResourceQuota and the tenant's Kueue/Volcano cpu quota "
        "(e.g. '64'); default: no cap (GPUs are what the queues ration)",
    )
    memory: Quantity | None = Field(
        default=None, description="requests.memory cap, like cpu (e.g. '512Gi'); default: no cap"
    )


class Tenant(Model):
    """A team: its namespace (named after it), quotas, queues and priority ceiling."""

    name: Name = Field(description="the tenant and its namespace (a DNS label, not a system namespace)")
    gpu_quota: dict[str, count(0, MAX_GPUS)] = Field(
        default_factory=lambda: {},
        description="per pool: the tenant's nominal quota in physical GPUs (the platform turns it into the units "
        "the scheduler sees with sharing); the tenant reaches only the pools named here (0 included)",
    )
    borrowing_limit: dict[str, count(0, MAX_GPUS)] = Field(
        default_factory=lambda: {},
        description="per pool: the most GPUs the tenant may borrow beyond its gpuQuota (Kueue: of the quota its "
        "cohort lends; Volcano: of the pool's idle capacity). Borrowing is on by default: every tenant is in the "
        "cohort scheduling.defaultCohort and a pool left out has no limit; 0 turns borrowing off there",
    )
    lending_limit: dict[str, count(0, MAX_GPUS)] = Field(
        default_factory=lambda: {},
        description="per pool: the most of its gpuQuota the tenant lends to its cohort while idle (at most its "
        "quota); a pool left out lends all of it. A tenant whose ceiling never preempts lends nothing",
    )
    cohort: Name | None = Field(
        default=None,
        description="the Kueue cohort whose tenants lend to and borrow from each other; default "
        "scheduling.defaultCohort (gpu-platform)",
    )
    priority: str = Field(default="batch", description="the tenant's highest allowed PriorityClass")
    quota: ResourceBudget = Field(
        default_factory=lambda: ResourceBudget(), description="CPU and memory the tenant may request in all"
    )
    pod_security: Literal["baseline", "restricted"] = Field(
        default="baseline",
        description="the Pod Security Admission level the namespace enforces (warn and audit are always restricted)",
    )
    queue_weight: count(1, 100) = Field(
        default=1, description="volcano tenants: the queue's weight, its share of idle capacity against others'"
    )
    scheduler: Literal["kueue", "volcano"] | None = Field(
        default=None,
        description="who queues the tenant's workloads: kueue (default when on) manages every workload in the "
        "namespace; volcano leaves its pods to Volcano's gang scheduler (Kueue would gate them one by one)",
    )
    critical: bool = Field(
        default=False,
        description="a tenant that must keep GPUs: the policy critical-tenant-capacity fails when all its GPUs "
        "come from spot pools",
    )


class PriorityClassSpec(Model):
    """A PriorityClass (and Kueue WorkloadPriorityClass) tenants pick by name; a tenant's priority is a ceiling."""

    name: Name = Field(description="the class's name (not starting with system-)")
    value: count(-(2**31), 1_000_000_000) = Field(description="higher preempts lower")
    preemption_policy: Literal["PreemptLowerPriority", "Never"] = Field(
        default="PreemptLowerPriority",
        description="Never: its pods never preempt others (a tenant whose ceiling is such a class gets a "
        "ClusterQueue that never preempts)",
    )
    global_default: bool = Field(default=False, description="the class of pods that name none (at most one class)")
    description: Description = Field(default="", description="shown by kubectl get priorityclass")


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
