"""Kubernetes building blocks the components share: Pod Security labels, a chart's namespace (with the
quota GKE needs before it admits system-critical pods), a Helm release of a pinned chart, and an
admission policy with its binding."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi

from components import derive, versions
from components.spec import StackSpec

PSA_VERSION = "latest"
CRITICAL_PRIORITY_CLASSES = ("system-node-critical", "system-cluster-critical")


def psa_labels(enforce: str, audit: str = "restricted") -> dict[str, str]:
    """Pod Security Admission labels: ``enforce`` the level, ``audit``/``warn`` at ``audit``."""
    return {
        "pod-security.kubernetes.io/enforce": enforce,
        "pod-security.kubernetes.io/enforce-version": PSA_VERSION,
        "pod-security.kubernetes.io/audit": audit,
        "pod-security.kubernetes.io/warn": audit,
    }


def critical_pods_quota(pods: int) -> dict[str, Any]:
    """``spec`` of the ResourceQuota GKE requires in a namespace before it admits system-node-critical /
    system-cluster-critical pods outside kube-system."""
    return {
        "hard": {"pods": str(pods)},
        "scopeSelector": {
            "matchExpressions": [
                {"scopeName": "PriorityClass", "operator": "In", "values": list(CRITICAL_PRIORITY_CLASSES)}
            ]
        },
    }


def chart_namespace(
    parent: pulumi.Resource,
    provider: pulumi.ProviderResource,
    spec: StackSpec,
    prefix: str,
    namespace: str,
    labels: dict[str, str],
    critical_pods: int | None = None,
    quota_name: str = "critical-pods",
) -> list[pulumi.Resource]:
    """The namespace a chart installs into, created here so it carries Pod Security labels, and on GKE the
    critical-pods quota when the chart's pods run at a system-critical priority (``critical_pods`` set).
    Returns what the release must wait for. Resource names start with what they are (``namespace-<prefix>``),
    so they can never equal a tenant's (``<tenant>-namespace``), whatever a tenant is called."""
    from pulumi_kubernetes.core.v1 import Namespace, ResourceQuota

    # Until d22b537 these were '<prefix>-namespace' / '<prefix>-critical-pods' (same parent): the aliases keep
    # deployed stacks from creating the new ones and deleting the old, and the chart with its namespace.
    ns = Namespace(
        f"namespace-{prefix}",
        metadata={"name": namespace, "labels": {**derive.MANAGED_BY, **labels}},
        opts=pulumi.ResourceOptions(
            parent=parent, provider=provider, aliases=[pulumi.Alias(name=f"{prefix}-namespace")]
        ),
    )
    out: list[pulumi.Resource] = [ns]
    if spec.cloud == "gcp" and critical_pods is not None:
        out.append(
            ResourceQuota(
                f"critical-pods-{prefix}",
                metadata={"name": quota_name, "namespace": namespace, "labels": derive.MANAGED_BY},
                spec=critical_pods_quota(critical_pods),
                opts=pulumi.ResourceOptions(
                    parent=parent,
                    provider=provider,
                    depends_on=[ns],
                    aliases=[pulumi.Alias(name=f"{prefix}-critical-pods")],
                ),
            )
        )
    return out


def chart_release(
    resource_name: str,
    parent: pulumi.Resource,
    provider: pulumi.ProviderResource,
    spec: StackSpec,
    chart: versions.Chart,
    values: dict[str, Any],
    depends_on: Sequence[pulumi.Resource],
    timeout: int = 600,
    protect: bool = False,
    **extra: Any,
) -> pulumi.Resource:
    """A ``helm.v3.Release`` of a pinned chart (the stack's version override applied) into a namespace that
    already exists; ``protect``: the engine refuses to delete it (uninstall)."""
    from pulumi_kubernetes.helm.v3 import Release

    return Release(
        resource_name,
        **versions.release_args(chart, spec.charts),
        create_namespace=False,
        values=values,
        timeout=timeout,
        opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=list(depends_on), protect=protect),
        **extra,
    )


def admission_policy(
    prefix: str,
    parent: pulumi.Resource,
    provider: pulumi.ProviderResource,
    policy_name: str,
    policy_spec: dict[str, Any],
    depends_on: Sequence[pulumi.Resource] = (),
) -> pulumi.Resource:
    """A ValidatingAdmissionPolicy and the binding that makes it deny."""
    from pulumi_kubernetes.admissionregistration.v1 import (
        ValidatingAdmissionPolicy,
        ValidatingAdmissionPolicyBinding,
    )

    meta = {"name": policy_name, "labels": derive.MANAGED_BY}
    policy = ValidatingAdmissionPolicy(
        f"{prefix}-policy",
        metadata=meta,
        spec=policy_spec,
        opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=list(depends_on)),
    )
    ValidatingAdmissionPolicyBinding(
        f"{prefix}-binding",
        metadata=meta,
        spec={"policyName": policy_name, "validationActions": ["Deny"]},
        opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=[policy]),
    )
    return policy
