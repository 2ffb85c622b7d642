"""The pack: every policy, in the order the engine and the offline report list them, and what each reads.

This is the one list: ``__main__.py`` builds the ``PolicyPack`` from it, ``policies.offline`` runs it, and the
README's policy table is checked against it (tests/test_policy_pack.py). A new policy module (one per concern,
``*_policies.py``, helpers in ``common.py``) adds its policies here, and its row to the README table.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, StackValidationPolicy

from . import cost_policies, dra_policies
from .capacity_policies import gpu_pool_taint, karpenter_gpu_limit, spot_gpu_disruption, time_slicing_replicas
from .common import (
    _GPU_POOL_TYPES,
    ADVISORY,
    CONFIG_MAP,
    EC2_NODE_CLASS,
    GKE_NODE_POOL,
    HELM_CHART_V4,
    HELM_RELEASE,
    IAM_GROUP_POLICY,
    IAM_POLICY,
    IAM_ROLE,
    IAM_ROLE_POLICY,
    IAM_USER_POLICY,
    KARPENTER_NODE_POOL,
    LAUNCH_TEMPLATE,
    NAMESPACE,
    PRIORITY_CLASS,
    RESOURCE_QUOTA,
)
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
    **dra_policies.TARGETS,
}


def by_name() -> dict[str, ResourceValidationPolicy | StackValidationPolicy]:
    return {p.name: p for p in POLICIES}


def level_of(policy: ResourceValidationPolicy | StackValidationPolicy) -> EnforcementLevel:
    return policy.enforcement_level or ADVISORY
