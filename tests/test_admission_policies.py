"""The ValidatingAdmissionPolicies the platform renders, evaluated with a real CEL engine against the
requests they must refuse and the ones they must let through (the API server compiles the same CEL;
`split` is the Kubernetes CEL strings library's, supplied here as a function)."""

from __future__ import annotations

from typing import Any

import cel  # a declared dev dependency: missing, the suite fails rather than skips
import pytest
from caching import shared_fixture
from conftest import STACKS, manifest, manifests, rendered

FORBIDDEN = "gpu-platform/forbidden-priority-classes"


def _eval(expr: str, env: dict[str, Any]) -> Any:
    ctx = cel.Context()
    ctx.add_function("split", lambda s, sep: s.split(sep))
    ctx.add_function("join", lambda items, sep: sep.join(items))
    for k, v in env.items():
        ctx.add_variable(k, v)
    return cel.evaluate(expr, ctx)


def admit(
    policy: dict[str, Any],
    obj: dict[str, Any],
    kind: str,
    group: str = "",
    namespace=None,
    old: dict[str, Any] | None = None,
    params: dict[str, Any] | None = None,
) -> list[str]:
    """Denial messages for one CREATE request, or an UPDATE from ``old`` (empty: admitted), as the API server
    evaluates a policy: match conditions, then variables in order, then every validation; ``params``: the binding's
    params object.

    As the server does: match conditions see no ``namespaceObject`` (k8s.io/apiserver v0.35.4
    pkg/admission/plugin/webhook/matchconditions/matcher.go:82-85); variables and validations do. The cluster
    tests (tests/cluster, `make cluster-test`) check these verdicts against a real kube-apiserver."""
    env: dict[str, Any] = {
        "object": obj,
        "request": {
            "kind": {"group": group, "version": "v1", "kind": kind},
            "operation": "UPDATE" if old else "CREATE",
        },
        **({"oldObject": old} if old is not None else {}),
        **({"params": params} if params is not None else {}),
    }
    for cond in policy.get("matchConditions", []):
        if not _eval(cond["expression"], env):
            return []
    env["namespaceObject"] = namespace
    variables: dict[str, Any] = {}
    for var in policy.get("variables", []):
        variables[var["name"]] = _eval(var["expression"], {**env, "variables": variables})
    env["variables"] = variables
    denials = []
    for v in policy["validations"]:
        if not _eval(v["expression"], env):
            denials.append(_eval(v["messageExpression"], env) if "messageExpression" in v else v["message"])
    return denials


def _ns(stack: str, name: str) -> dict[str, Any]:
    return manifest(rendered(stack), "Namespace", name)


def _pod(priority: str | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x"}]}
    if priority:
        spec["priorityClassName"] = priority
    return {"metadata": {"name": "p", "labels": labels or {}}, "spec": spec}


@shared_fixture
def ceiling():
    return manifest(rendered("prod-aws"), "ValidatingAdmissionPolicy", "gpu-platform-priority-ceiling")["spec"]


def test_pods_above_the_ceiling_are_refused(ceiling):
    research = _ns("prod-aws", "research")  # ceiling training-critical
    (msg,) = admit(ceiling, _pod("inference"), "Pod", namespace=research)
    assert msg == "PriorityClass inference is above this tenant's priority ceiling"
    assert admit(ceiling, _pod("training-critical"), "Pod", namespace=research) == []
    assert admit(ceiling, _pod(), "Pod", namespace=research) == []


def test_kueue_priority_label_and_pod_templates_are_checked(ceiling):
    notebooks = _ns("prod-aws", "notebooks")  # ceiling dev: everything else is forbidden
    job = {
        "metadata": {"name": "j", "labels": {"kueue.x-k8s.io/priority-class": "training"}},
        "spec": {"template": {"spec": {"priorityClassName": "batch", "containers": []}}},
    }
    assert admit(ceiling, job, "Job", "batch", notebooks) == [
        "kueue.x-k8s.io/priority-class training is above this tenant's priority ceiling",
        "PriorityClass batch in the pod template is above this tenant's priority ceiling",
    ]
    job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "dev"
    job["spec"]["template"]["spec"]["priorityClassName"] = "dev"
    assert admit(ceiling, job, "Job", "batch", notebooks) == []


def test_workloads_kueue_creates_for_other_kinds_are_checked(ceiling):
    notebooks = _ns("prod-aws", "notebooks")
    workload = {
        "metadata": {"name": "pytorchjob-x"},
        "spec": {"priorityClassRef": {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "inference"}},
    }
    (msg,) = admit(ceiling, workload, "Workload", "kueue.x-k8s.io", notebooks)
    assert msg == "priority class inference is above this tenant's priority ceiling"
    workload["spec"]["priorityClassRef"]["name"] = "dev"
    assert admit(ceiling, workload, "Workload", "kueue.x-k8s.io", notebooks) == []


def test_namespaces_without_a_ceiling_pass_their_classes_but_never_system_ones(ceiling):
    serving = _ns("prod-aws", "serving")  # top class: no annotation
    assert FORBIDDEN not in serving["metadata"].get("annotations", {})
    assert admit(ceiling, _pod("inference"), "Pod", namespace=serving) == []
    assert admit(ceiling, _pod(), "Pod", namespace=serving) == []
    for system in ("system-node-critical", "system-cluster-critical"):
        assert admit(ceiling, _pod(system), "Pod", namespace=serving) == [
            f"PriorityClass {system} is above this tenant's priority ceiling"
        ]
        assert admit(ceiling, _pod(system), "Pod", namespace=_ns("prod-aws", "research"))


def test_cronjobs_are_checked_at_creation(ceiling):
    notebooks = _ns("prod-aws", "notebooks")
    cron = {
        "metadata": {"name": "c"},
        "spec": {
            "schedule": "* * * * *",
            "jobTemplate": {"spec": {"template": {"spec": {"priorityClassName": "batch"}}}},
        },
    }
    assert admit(ceiling, cron, "CronJob", "batch", notebooks) == [
        "PriorityClass batch in the job template is above this tenant's priority ceiling"
    ]
    cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["priorityClassName"] = "dev"
    assert admit(ceiling, cron, "CronJob", "batch", notebooks) == []


def test_a_pod_of_another_group_named_pod_is_not_read_as_a_pod(ceiling):
    notebooks = _ns("prod-aws", "notebooks")
    assert admit(ceiling, _pod("batch"), "Pod", "example.com", notebooks) == []
    assert admit(ceiling, _pod("batch"), "Pod", "", notebooks)


def test_volcano_jobs_must_use_their_tenants_queue():
    policy = manifest(rendered("prod-aws"), "ValidatingAdmissionPolicy", "gpu-platform-volcano-tenant-queue")["spec"]
    ns = _ns("prod-aws", "applied-ml")
    job = {"metadata": {"name": "j"}, "spec": {"queue": "applied-ml", "minAvailable": 2, "tasks": []}}
    assert admit(policy, job, "Job", "batch.volcano.sh", ns) == []
    job["spec"]["queue"] = "research"
    (msg,) = admit(policy, job, "Job", "batch.volcano.sh", ns)
    assert "applied-ml" in msg and "research" in msg
    del job["spec"]["queue"]
    assert admit(policy, job, "Job", "batch.volcano.sh", ns)  # the default queue is not the tenant's


def _rule_matches(rule: dict[str, Any], group: str, version: str, resource: str, operation: str, scope: str) -> bool:
    """A ValidatingAdmissionPolicy resourceRule as the API server reads it (k8s.io/api admissionregistration/v1
    RuleWithOperations: "*" matches everything in apiGroups/apiVersions/resources/operations; scope
    "Namespaced" only namespaced resources)."""

    def has(values: list[str], value: str) -> bool:
        return "*" in values or value in values

    return (
        has(rule["apiGroups"], group)
        and has(rule["apiVersions"], version)
        and has(rule["resources"], resource)
        and has(rule["operations"], operation)
        and rule.get("scope", "*") in ("*", scope)
    )


@pytest.mark.parametrize(
    ("group", "version", "resource", "operation", "scope", "matched"),
    [
        # every namespaced kind a tenant can name a PriorityClass in, created or updated
        ("", "v1", "pods", "CREATE", "Namespaced", True),
        ("batch", "v1", "jobs", "UPDATE", "Namespaced", True),
        ("kueue.x-k8s.io", "v1beta2", "workloads", "CREATE", "Namespaced", True),
        ("kubeflow.org", "v1", "pytorchjobs", "CREATE", "Namespaced", True),
        ("batch.volcano.sh", "v1alpha1", "jobs", "UPDATE", "Namespaced", True),
        # nothing to check on delete, nor on cluster-scoped objects
        ("", "v1", "pods", "DELETE", "Namespaced", False),
        ("scheduling.k8s.io", "v1", "priorityclasses", "CREATE", "Cluster", False),
    ],
)
def test_the_ceiling_policy_sees_every_namespaced_kind(ceiling, group, version, resource, operation, scope, matched):
    rules = ceiling["matchConstraints"]["resourceRules"]
    assert any(_rule_matches(r, group, version, resource, operation, scope) for r in rules) is matched


# The reasons the API server accepts for a validation (k8s.io/api admissionregistration/v1 Validation.Reason;
# it refuses the policy otherwise), and the one a tenant overstepping its ceiling gets: 403 Forbidden.
ALLOWED_REASONS = {"Unauthorized", "Forbidden", "Invalid", "RequestEntityTooLarge"}


def test_validation_reasons_are_ones_the_api_server_accepts(ceiling):
    assert {v["reason"] for v in ceiling["validations"]} == {"Forbidden"}
    for stack in STACKS:
        for vap in manifests(rendered(stack), "ValidatingAdmissionPolicy"):
            assert {v.get("reason", "Invalid") for v in vap["spec"]["validations"]} <= ALLOWED_REASONS, stack
