"""The pack: every policy, in the order the engine and the offline report list them, and what each reads.

This is the one list: ``__main__.py`` builds the ``PolicyPack`` from it, ``policies.offline`` runs it, and the
README's policy table is checked against it (tests/test_policy_pack.py). A new policy module (one per concern,
``*_policies.py``, helpers in ``common.py``) adds its policies here, and its row to the README table.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, StackValidationPolicy

from . import (
    capacity_policies,
    cost_policies,
    dra_policies,
    monitoring_policies,
    scheduling_policies,
    security_policies,
)
from .capacity_policies import gpu_pool_taint, karpenter_gpu_limit, spot_gpu_disruption, time_slicing_replicas
from .common import ADVISORY
from .monitoring_policies import dcgm_monitoring
from .scheduling_policies import (
    critical_tenant_capacity,
    gpu_job_gang_scheduling,
    gpu_workload_priority_class,
    single_default_priority_class,
    tenant_gpu_quota,
)
from .security_policies import (
    gke_gpu_node_hardening,
    gpu_container_hardening,
    helm_chart_pinned,
    iam_no_admin_wildcard,
    namespace_pod_security,
    node_imdsv2_and_encryption,
)

PACK_NAME = "gpu-platform"
PACK_DESCRIPTION = (
    "gpu-platform guard rails: tainted and capped GPU pools, tenant GPU quotas, pinned charts, IMDSv2 and "
    "encrypted node disks, gang-scheduled GPU jobs with priorities, Pod Security, no admin IAM."
)

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
    *dra_policies.POLICIES,
)

# The policies that judge workloads (Pods, Deployments, Jobs, Volcano / Kubeflow jobs); examples/ must pass them.
WORKLOAD_POLICIES: tuple[ResourceValidationPolicy, ...] = (
    gpu_workload_priority_class,
    gpu_job_gang_scheduling,
    gpu_container_hardening,
)

# Which resource types each policy reads (for the README table and for tests), in POLICIES order.
_TARGETS = {
    **capacity_policies.TARGETS,
    **scheduling_policies.TARGETS,
    **security_policies.TARGETS,
    **monitoring_policies.TARGETS,
    **cost_policies.TARGETS,
    **dra_policies.TARGETS,
}
TARGETS: dict[str, tuple[str, ...]] = {p.name: _TARGETS[p.name] for p in POLICIES}


def by_name() -> dict[str, ResourceValidationPolicy | StackValidationPolicy]:
    return {p.name: p for p in POLICIES}


def level_of(policy: ResourceValidationPolicy | StackValidationPolicy) -> EnforcementLevel:
    return policy.enforcement_level or ADVISORY
