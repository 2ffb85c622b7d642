"""Which resources a policy reads during a preview: a policy meeting an unknown value reports "can't run policy ...
during preview" (pulumi_policy 1.21.0, pulumi_policy/policy.py, ``_PolicyAnalyzerServicer.Analyze/AnalyzeStack``:
``except UnknownValueError``), so a policy must decide by a resource's type before reading any of its properties,
or an unknown in a resource it does not judge stops it for the whole stack with an advisory that names nothing
that resource has to do with the policy.

Each case runs the whole pack twice: offline (policies.offline) and through pulumi_policy's own analyzer
servicer in process (the code the engine calls), and both must agree.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest
from pulumi.runtime import proto
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE as UNKNOWN
from test_policies import _servicer, _struct, k8s

from policies import common, offline, pack

TENANT = {common.TENANT_LABEL: "t1", common.CRITICAL_LABEL: "true"}
GPU_QUOTA = {  # the DRA device class key makes it a DRA stack (dra_policies.dra_stack)
    "requests.nvidia.com/gpu": "4",
    "gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "4",
    "mig.nvidia.com.deviceclass.resource.k8s.io/devices": "0",
}
POOL = {common.POOL_LABEL: "l4"}  # a GPU pool by its label (common.karpenter_gpu_reason)
GPU_POD = {"containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}


def _docs(*objects: tuple[str, str, dict]) -> list[dict]:
    return [doc for _, _, doc in objects]


def _engine(subjects: list[offline.Subject]) -> list[tuple[str, str, str | None, str]]:
    """(policy, level, resource name or None, message) as pulumi_policy's analyzer reports them."""
    servicer = _servicer()
    levels = {proto.MANDATORY: "mandatory", proto.ADVISORY: "advisory"}
    by_urn = {s.urn: s.name for s in subjects}
    out = []
    requests = [
        proto.AnalyzeRequest(type=s.type, properties=_struct(s.props), urn=s.urn, name=s.name) for s in subjects
    ]
    diagnostics = [(d, r.name) for r in requests for d in servicer.Analyze(r, None).diagnostics]
    stack = [proto.AnalyzerResource(type=s.type, properties=_struct(s.props), urn=s.urn, name=s.name) for s in subjects]
    diagnostics += [
        (d, None) for d in servicer.AnalyzeStack(proto.AnalyzeStackRequest(resources=stack), None).diagnostics
    ]
    for d, name in diagnostics:
        message = d.message if "during preview" in d.message else d.message.partition("\n")[2]
        # a resource policy's finding is its resource's; a stack policy's names the resource it reported (if any)
        out.append((d.policyName, levels[d.enforcementLevel], name or by_urn.get(d.urn), message))
    return sorted(out)


def _offline(subjects: list[offline.Subject]) -> list[tuple[str, str, str | None, str]]:
    report = offline.run(subjects, pack.POLICIES)
    return sorted((v.policy, v.enforcement_level, v.resource_name, v.message) for v in report.violations)


def _both(docs: list[dict]) -> list[tuple[str, str, str | None, str]]:
    subjects = offline.subjects_from_manifests(docs, "t")
    found = _offline(subjects)
    assert _engine(subjects) == found
    return found


def _stack() -> list[tuple[str, str, dict]]:
    """A tenant (critical, with a GPU quota that makes it a DRA stack too), a GPU Deployment that breaks the
    workload policies and a GPU pool: every policy this file is about has something to judge."""
    return [
        k8s("v1", "Namespace", "t1", metadata={"labels": TENANT}),
        k8s("v1", "ResourceQuota", "gpu", "t1", spec={"hard": GPU_QUOTA}),
        k8s("apps/v1", "Deployment", "train", "t1", spec={"replicas": 2, "template": {"spec": GPU_POD}}),
        k8s("karpenter.sh/v1", "NodePool", "gpu", spec={"template": {"metadata": {"labels": POOL}, "spec": {}}}),
    ]


def test_an_unknown_in_a_resource_no_policy_judges_changes_no_finding():
    """A Service and a custom resource whose labels and spec are unknown during a preview: before, the workload
    policies, tenant-gpu-quota, critical-tenant-capacity and dra-tenant-device-quota read them and reported
    "can't run during preview" for the whole stack; no policy judges them, so the findings are those of the
    stack without them."""
    unrelated = [
        k8s("v1", "Service", "svc", "t1", metadata={"labels": UNKNOWN}, spec=UNKNOWN),
        k8s("monitoring.coreos.com/v1", "ServiceMonitor", "sm", "t1", metadata={"labels": UNKNOWN}, spec=UNKNOWN),
    ]
    found = _both(_docs(*_stack(), *unrelated))
    assert not [f for f in found if "during preview" in f[3]]
    assert found == _both(_docs(*_stack()))
    assert {f[0] for f in found} >= {"gpu-workload-priority-class", "gpu-container-hardening"}  # judged still


def _cant_run(policy: str, path: str) -> str:
    return (
        f"can't run policy '{policy}' from policy pack 'gpu-platform@v0.1.0' during preview: "
        f"string value at .{path} can't be known during preview"
    )


WORKLOAD = ("gpu-container-hardening", "gpu-job-gang-scheduling", "gpu-workload-priority-class")


@pytest.mark.parametrize(
    ("judged", "stopped"),
    [
        (  # a workload: the workload policies for it, dra-gpu-claims for the stack (it reads every workload)
            k8s("batch/v1", "Job", "job", "t1", spec=UNKNOWN),
            [*((p, "t1/job", "spec") for p in WORKLOAD), ("dra-gpu-claims", None, "spec")],
        ),
        (  # a ResourceQuota: both quota policies read every one
            k8s("v1", "ResourceQuota", "other", "t1", spec=UNKNOWN),
            [("dra-tenant-device-quota", None, "spec"), ("tenant-gpu-quota", None, "spec")],
        ),
        (  # a Deployment is no gang: gpu-job-gang-scheduling never judges one
            k8s("apps/v1", "Deployment", "serve", "t1", spec=UNKNOWN),
            [
                *((p, "t1/serve", "spec") for p in WORKLOAD if p != "gpu-job-gang-scheduling"),
                ("dra-gpu-claims", None, "spec"),
            ],
        ),
        (  # a Kueue ClusterQueue: tenant-gpu-quota counts the GPU names it covers, critical-tenant-capacity the
            # pools a critical tenant reaches through it
            k8s("kueue.x-k8s.io/v1beta2", "ClusterQueue", "cq", spec=UNKNOWN),
            [("critical-tenant-capacity", None, "spec"), ("tenant-gpu-quota", None, "spec")],
        ),
        (  # a Namespace: whether it is a (critical) tenant is in its labels
            k8s("v1", "Namespace", "t2", metadata={"labels": UNKNOWN}),
            [
                ("critical-tenant-capacity", None, "metadata.labels"),
                ("dra-tenant-device-quota", None, "metadata.labels"),
                ("namespace-pod-security", "t2", "metadata.labels"),
                ("tenant-gpu-quota", None, "metadata.labels"),
            ],
        ),
    ],
    ids=["job", "resource-quota", "deployment", "cluster-queue", "namespace"],
)
def test_an_unknown_in_a_judged_resource_still_stops_the_policy_with_an_advisory(judged, stopped):
    """The resources the policies do judge keep the engine's behaviour: an unknown field they read is an
    advisory "can't run during preview" (a resource policy's for that resource, a stack policy's for the stack),
    and only the policies that judge the resource report it."""
    found = _both(_docs(*_stack(), judged))
    assert [f for f in found if "during preview" in f[3]] == sorted(
        (p, "advisory", name, _cant_run(p, path)) for p, name, path in stopped
    )
    known = _both(_docs(*_stack()))
    assert [f for f in found if "during preview" not in f[3]] == known  # the rest of the stack is judged as before


def _template_object(group: str, kind: str) -> dict[str, Any]:
    """The smallest object of a workload kind with one multi-replica GPU pod template where that kind keeps it."""
    template = {"template": {"spec": GPU_POD}}
    spec: dict[str, Any] = {"replicas": 4, "parallelism": 4, **template}
    if (group, kind) == ("core", "Pod"):
        spec = dict(GPU_POD)
    elif kind == "CronJob":
        spec = {"jobTemplate": {"spec": {"parallelism": 4, **template}}}
    elif group == "batch.volcano.sh":
        spec = {"tasks": [{"name": "w", "replicas": 4, **template}]}
    elif group == "kubeflow.org":
        spec = {f"{kind.removesuffix('Job').lower()}ReplicaSpecs": {"Worker": {"replicas": 4, **template}}}
    elif group == "jobset.x-k8s.io":
        spec = {"replicatedJobs": [{"name": "w", "replicas": 4, "template": {"spec": {"parallelism": 1, **template}}}]}
    return spec


def test_the_workload_policies_judge_every_kind_with_pod_templates_and_only_those():
    """Each kind the workload policies judge has pod templates (so none is judged for nothing), a kind outside
    them has none, and gpu-job-gang-scheduling judges the jobs only: the other workload kinds never break it."""
    from test_policies import engine_props

    from policies import scheduling_policies, security_policies

    priority, gang, hardening = (
        scheduling_policies.gpu_workload_priority_class,
        scheduling_policies.gpu_job_gang_scheduling,
        security_policies.gpu_container_hardening,
    )
    assert priority.kinds == hardening.kinds == common.WORKLOAD_KINDS
    assert gang.kinds == common.JOB_KINDS < common.WORKLOAD_KINDS
    for group, kind in sorted(common.WORKLOAD_KINDS):
        type_token = f"kubernetes:{group}/v9:{kind}"  # any API version
        assert priority.judges(type_token) and hardening.judges(type_token)
        assert gang.judges(type_token) == ((group, kind) in common.JOB_KINDS)
        props = engine_props({"metadata": {"name": "w"}, "spec": _template_object(group, kind)})
        assert common.pod_templates(type_token, props), (group, kind)
        if (group, kind) not in common.JOB_KINDS:  # many GPU pods, no gang: still nothing to report
            args = SimpleNamespace(resource_type=type_token, props=props, name="w")
            reported: list[str] = []
            scheduling_policies._gpu_job_gang_scheduling(args, lambda m, urn=None, out=reported: out.append(m))  # type: ignore[arg-type]
            assert reported == [], (group, kind)
    for other in ("kubernetes:core/v1:Service", "kubernetes:apps/v1:ControllerRevision", "aws:eks/nodeGroup:NodeGroup"):
        assert not priority.judges(other) and not gang.judges(other) and not hardening.judges(other)
        assert common.pod_templates(other, {"spec": UNKNOWN}) == []  # not read: no UnknownValueError


class _Watched(Mapping[str, Any]):
    """A resource's inputs that record whether anything read them."""

    def __init__(self, data: dict[str, Any], reads: set[str], name: str):
        self._data, self._reads, self._name = data, reads, name

    def __getitem__(self, key: str) -> Any:
        self._reads.add(self._name)
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        self._reads.add(self._name)
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def test_the_offline_runner_builds_the_props_of_no_resource_no_policy_reads():
    """The offline runner builds a resource's props (the engine's proxies, its main cost) when a policy first reads
    them: the pack reads the resources of the types it judges, and never a Service's or a LimitRange's."""
    reads: set[str] = set()
    docs = _docs(
        *_stack(),
        k8s("v1", "Service", "svc", "t1", spec={"ports": [{"port": 80}]}),
        k8s("v1", "LimitRange", "limits", "t1", spec={"limits": []}),
    )
    subjects = [
        replace(s, props=_Watched(dict(s.props), reads, s.name)) for s in offline.subjects_from_manifests(docs, "t")
    ]
    report = offline.run(subjects, pack.POLICIES)
    assert reads == {"t1", "t1/gpu", "t1/train", "gpu"}
    assert [v for v in report.violations if v.resource_name == "t1/train"]  # judged through the same proxies
    plain = offline.run(offline.subjects_from_manifests(docs, "t"), pack.POLICIES)
    assert report.violations == plain.violations
