"""The pack: every policy, in the order the engine and the offline report list them, and what each reads.

This is the one list: ``__main__.py`` builds the ``PolicyPack`` from it, ``policies.offline`` runs it, and the
docs' policy table (docs/reference/policies.md: name, level, what it guards, why, settings) is generated from it
and ``DOCS`` (``python -m components.cli.docs``; tests/test_docs.py and tests/test_policy_pack.py check it). A new
policy module (one per concern, ``*_policies.py``, helpers in ``common.py``) adds its policies here, and their
``DOCS`` entries.
"""

from __future__ import annotations

from typing import NamedTuple

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
    eks_cluster_hardening,
    gke_cluster_hardening,
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
    gke_cluster_hardening,
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
    eks_cluster_hardening,
    *cost_policies.POLICIES,
    *dra_policies.POLICIES,
)

# The policies that judge workloads (Pods, Deployments, Jobs, Volcano / Kubeflow jobs); examples/ must pass them.
WORKLOAD_POLICIES: tuple[ResourceValidationPolicy, ...] = (
    gpu_workload_priority_class,
    gpu_job_gang_scheduling,
    gpu_container_hardening,
)

# Which resource types each policy reads (for tests), in POLICIES order.
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


class Doc(NamedTuple):
    """A policy's row in the docs' policy table (docs/reference/policies.md, generated from it)."""

    checks: str  # what it guards (markdown)
    why: str  # what goes wrong without it


# One entry per policy, in POLICIES order.
DOCS: dict[str, Doc] = {
    "gpu-pool-taint": Doc(
        checks=(
            "every GPU EKS node group, GKE node pool and Karpenter NodePool carries the `nvidia.com/gpu` "
            "NoSchedule taint"
        ),
        why="untainted, any pod (daemons, CPU jobs) can land on and hold a GPU node, and the autoscaler keeps it up",
    ),
    "karpenter-gpu-limit": Doc(
        checks='every Karpenter GPU NodePool caps `limits["nvidia.com/gpu"]`',
        why="an uncapped NodePool launches GPU nodes for every pending pod: spend with no ceiling",
    ),
    "tenant-gpu-quota": Doc(
        checks=(
            "every tenant namespace has a ResourceQuota capping `requests.nvidia.com/gpu` and every other GPU "
            "resource the stack advertises (MIG profiles, shared GPUs)"
        ),
        why=(
            "without a cap a namespace takes every GPU by creating pods directly, around Kueue; a cap on "
            "`nvidia.com/gpu` alone leaves MIG and shared units open"
        ),
    ),
    "helm-chart-pinned": Doc(
        checks="Helm releases pin an exact chart version from an allow-listed source; a local archive also by digest",
        why=(
            "a floating version or unknown source changes what runs in the cluster on the next `pulumi up`, unreviewed"
        ),
    ),
    "node-imdsv2-and-encryption": Doc(
        checks="launch templates and EC2NodeClasses require IMDSv2 and encrypt every EBS volume (one restored from a "
        "snapshot takes the snapshot's encryption: the EC2 API allows no other)",
        why=(
            "IMDSv1 hands the node role's credentials to any request forgery from a pod; unencrypted volumes keep"
            " data and model weights in the clear"
        ),
    ),
    "gke-gpu-node-hardening": Doc(
        checks="GKE GPU pools use shielded nodes (secure boot) and `GKE_METADATA`",
        why=(
            "secure boot keeps unsigned kernel modules off the node; `GKE_METADATA` hides the node's service "
            "account from pods"
        ),
    ),
    "gke-cluster-hardening": Doc(
        checks=(
            "a GKE cluster the stack creates has private nodes, Workload Identity, shielded nodes, legacy ABAC and "
            "client certificates off, and a public endpoint only behind authorized networks (no `/0`)"
        ),
        why=(
            "public nodes and an open endpoint are reachable from the internet; without Workload Identity pods act "
            "as the node's account; ABAC and client certificates grant access RBAC cannot see or revoke"
        ),
    ),
    "time-slicing-replicas": Doc(
        checks="time-slicing splits a GPU at most `maxReplicas` ways (device-plugin configs, GKE sharing)",
        why=(
            "time-slicing shares compute and memory with no isolation: split many ways, jobs run out of memory or crawl"
        ),
    ),
    "spot-gpu-disruption": Doc(
        checks="Karpenter spot GPU NodePools set `consolidateAfter` and a finite `expireAfter`",
        why="idle spot GPU nodes should go soon, and a node that never expires never gets a new AMI or driver",
    ),
    "critical-tenant-capacity": Doc(
        checks="a `critical: true` tenant does not get GPUs from spot pools only",
        why="spot capacity can vanish all at once (reclaims, no stock), leaving a critical tenant with no GPUs",
    ),
    "single-default-priority-class": Doc(
        checks="at most one PriorityClass is `globalDefault`",
        why="the API server admits only one global default; a second fails the deploy halfway",
    ),
    "gpu-workload-priority-class": Doc(
        checks=(
            "GPU Pods, Deployments, StatefulSets, Jobs, CronJobs, Volcano Jobs, Kubeflow jobs and JobSets set "
            "`priorityClassName`"
        ),
        why=(
            "without a class a GPU workload gets the default priority, so the preemption order (inference, "
            "training, batch, dev) cannot hold"
        ),
    ),
    "gpu-job-gang-scheduling": Doc(
        checks=(
            "multi-pod GPU jobs carry `kueue.x-k8s.io/queue-name`, or run on Volcano with `minAvailable` = replicas"
        ),
        why="a multi-pod job started pod by pod holds GPUs while it waits for the rest; two such jobs can deadlock",
    ),
    "gpu-container-hardening": Doc(
        checks="GPU containers run as non-root and mount a memory-backed `/dev/shm`",
        why=(
            "NCCL and data loaders need more shared memory than the 64 MiB default; root next to GPU devices "
            "widens any container escape"
        ),
    ),
    "dcgm-monitoring": Doc(
        checks="a stack with GPU pools runs DCGM",
        why="without DCGM no one sees idle, hot or failing (XID) GPUs, and the GPU alerts never fire",
    ),
    "namespace-pod-security": Doc(
        checks="tenant namespaces enforce `baseline` or `restricted`; only operator namespaces may be `privileged`",
        why="a privileged tenant pod can take over its node, and with it other tenants' GPUs and data",
    ),
    "iam-no-admin-wildcard": Doc(
        checks="IAM policies grant no `*` action on `*` resource (nor `NotAction` on `*`)",
        why="an admin grant turns one compromised controller or node into control of the whole account",
    ),
    "eks-cluster-hardening": Doc(
        checks=(
            "an EKS cluster the stack creates (`cluster.create`) encrypts Secrets with a KMS key, sends the `api`, "
            "`audit` and `authenticator` control-plane logs, and opens its public endpoint only to named networks"
        ),
        why=(
            "EKS's defaults leave Secrets without envelope encryption, no audit trail of who did what, and the API "
            "server reachable from the whole internet"
        ),
    ),
    "gpu-budget": Doc(
        checks=(
            "the fleet at max scale (and each tenant's borrowing ceiling) stays within `gpu-platform:budget` (see"
            " *Cost*)"
        ),
        why="a GPU fleet at max scale costs a lot; the preview fails before an over-sized change is applied",
    ),
    "idle-gpu-nodes": Doc(
        checks="no on-demand 8+-GPU pool keeps `minNodes > 0` in a dev stack or without tenant quota",
        why=(
            "an 8-GPU node costs tens of dollars an hour; kept warm with no one to use it, it burns money around "
            "the clock"
        ),
    ),
    "dra-gpu-claims": Doc(
        checks=(
            "on a DRA stack no workload asks for `nvidia.com/gpu*` / `nvidia.com/mig-*` extended resources, and "
            "every `resourceClaimTemplateName` exists in the workload's namespace"
        ),
        why=(
            "DRA nodes no longer advertise `nvidia.com/gpu`, so such pods stay Pending; a missing claim template "
            "leaves the pod Pending too"
        ),
    ),
    "dra-tenant-device-quota": Doc(
        checks=(
            "on a DRA stack every tenant namespace's ResourceQuota caps `gpu.nvidia.com` and `mig.nvidia.com` "
            "devices (and every class its claim templates use), and no tenant namespace allows `adminAccess` "
            "claims"
        ),
        why=(
            "without device caps one namespace can claim every GPU through ResourceClaims; `adminAccess` claims "
            "reach devices allocated to others"
        ),
    ),
}
