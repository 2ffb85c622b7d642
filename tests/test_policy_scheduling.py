"""The workload scheduling policies (policies/scheduling_policies.py): gpu-workload-priority-class and
gpu-job-gang-scheduling, one behaviour at a time, with the exact message a user reads.

Inputs are shaped as the engine hands them over (test_policies.check). The verdicts follow the schedulers'
documented semantics: a Volcano Job's schedulerName defaults to volcano and its minAvailable gangs its tasks
(volcano.sh Job spec); Kubeflow's runPolicy.schedulingPolicy carries priorityClass and minAvailable
(kubeflow training-operator RunPolicy); a Kueue queue-name label admits a job whole (Kueue workloads).
"""

from __future__ import annotations

from typing import Any

import pytest
from test_policies import check, k8s

from policies import scheduling_policies

GPU = {"limits": {"nvidia.com/gpu": 1}}
VOLCANO = "batch.volcano.sh/v1alpha1"
QUEUE = {"kueue.x-k8s.io/queue-name": "gpu"}


def _pod(priority: str | None = None, gpu: bool = True, **spec: Any) -> dict[str, Any]:
    c = {"name": "main", "resources": GPU if gpu else {"limits": {"cpu": "1"}}}
    out: dict[str, Any] = {"containers": [c], **spec}
    if priority:
        out["priorityClassName"] = priority
    return out


def _priority(doc: tuple[str, str, dict]) -> list[str]:
    return check(scheduling_policies.gpu_workload_priority_class, doc[0], doc[2])


def _gang(doc: tuple[str, str, dict]) -> list[str]:
    return check(scheduling_policies.gpu_job_gang_scheduling, doc[0], doc[2])


def _no_priority(what: str, where: str) -> str:
    return (
        f"{what}: {where} requests GPUs but sets no priorityClassName; it would run at the cluster default and could "
        "neither preempt nor be preempted in order. Use one of the platform's PriorityClasses (your tenant's ceiling "
        "or lower)."
    )


# ----------------------------------------------------------------------------- gpu-workload-priority-class


def test_priority_class_message_names_the_object_and_template():
    """A GPU pod template without priorityClassName is refused with the object's kind, namespace/name and the
    path of the pod template."""
    assert _priority(k8s("v1", "Pod", "nb", "ml", spec=_pod())) == [_no_priority("Pod ml/nb", "spec")]
    cron = k8s("batch/v1", "CronJob", "c", spec={"jobTemplate": {"spec": {"template": {"spec": _pod()}}}})
    assert _priority(cron) == [_no_priority("CronJob c", "spec.jobTemplate.spec.template.spec")]
    assert _priority(k8s("v1", "Pod", "nb", "ml", spec=_pod("training"))) == []
    assert _priority(k8s("v1", "Pod", "nb", "ml", spec=_pod(gpu=False))) == []


def _pytorch(run_policy: dict | None = None, master_priority: str | None = None) -> tuple[str, str, dict]:
    spec: dict[str, Any] = {
        "pytorchReplicaSpecs": {
            "Master": {"replicas": 1, "template": {"spec": _pod(master_priority)}},
            "Worker": {"replicas": 2, "template": {"spec": _pod()}},
        }
    }
    if run_policy is not None:
        spec["runPolicy"] = run_policy
    return k8s("kubeflow.org/v1", "PyTorchJob", "pj", "ml", spec=spec)


def test_kubeflow_scheduling_policy_priority_class_covers_every_replica():
    """runPolicy.schedulingPolicy.priorityClass sets the priority of all a Kubeflow job's pods (the PodGroup's);
    without it each GPU replica template needs its own priorityClassName."""
    assert _priority(_pytorch({"schedulingPolicy": {"priorityClass": "training"}})) == []
    assert _priority(_pytorch()) == [
        _no_priority("PyTorchJob ml/pj", "spec.pytorchReplicaSpecs.Master.template.spec"),
        _no_priority("PyTorchJob ml/pj", "spec.pytorchReplicaSpecs.Worker.template.spec"),
    ]
    assert _priority(_pytorch(master_priority="training")) == [
        _no_priority("PyTorchJob ml/pj", "spec.pytorchReplicaSpecs.Worker.template.spec")
    ]


@pytest.mark.parametrize(
    "run_policy",
    [
        {"schedulingPolicy": {"priorityClass": ""}},
        {"schedulingPolicy": {"minAvailable": 3}},
        {"priorityClass": "training"},  # not under schedulingPolicy
        {},
    ],
)
def test_kubeflow_without_a_scheduling_policy_priority_class_is_judged_per_template(run_policy):
    """Only a non-empty runPolicy.schedulingPolicy.priorityClass counts for the whole job."""
    assert len(_priority(_pytorch(run_policy))) == 2


def test_a_job_level_priority_only_counts_where_the_api_has_one():
    """spec.priorityClassName covers a Volcano Job's tasks; on a Kubeflow job that field does not exist, so it
    does not count."""
    tasks = [{"name": "w", "replicas": 2, "template": {"spec": _pod()}}]
    assert _priority(k8s(VOLCANO, "Job", "vj", "ml", spec={"priorityClassName": "training", "tasks": tasks})) == []
    assert _priority(k8s(VOLCANO, "Job", "vj", "ml", spec={"tasks": tasks})) == [
        _no_priority("Job ml/vj", "spec.tasks[w].template.spec")
    ]
    pj = _pytorch()
    pj[2]["spec"]["priorityClassName"] = "training"
    assert len(_priority(pj)) == 2


# ---------------------------------------------------------------------------------- gpu-job-gang-scheduling


def _vj(tasks: list[tuple[str, int]], labels: dict | None = None, **spec: Any) -> tuple[str, str, dict]:
    t = [{"name": n, "replicas": r, "template": {"spec": _pod()}} for n, r in tasks]
    return k8s(VOLCANO, "Job", "vj", "ml", metadata={"labels": labels or {}}, spec={"tasks": t, **spec})


def _min_available(got: str, total: int) -> str:
    return (
        f"Volcano Job ml/vj: spec.minAvailable is {got} but its tasks have {total} replicas; set minAvailable to the "
        "replica total so the job starts whole or not at all."
    )


def test_volcano_job_scheduler_name_defaults_to_volcano():
    """Volcano Jobs are scheduled by volcano unless schedulerName says otherwise: unset passes, another scheduler
    is refused by name."""
    assert _gang(_vj([("m", 1), ("w", 3)], minAvailable=4)) == []
    assert _gang(_vj([("m", 1), ("w", 3)], minAvailable=4, schedulerName="volcano")) == []
    assert _gang(_vj([("m", 1), ("w", 3)], minAvailable=4, schedulerName="default-scheduler")) == [
        "Volcano Job ml/vj: schedulerName is 'default-scheduler'; gang scheduling needs volcano."
    ]


@pytest.mark.parametrize(
    ("min_available", "shown"),
    [(None, "None"), (3, "3"), (5, "5"), ("4", "4"), (True, "True")],
)
def test_volcano_job_min_available_must_equal_the_replica_total(min_available, shown):
    """minAvailable below the total lets part of the job start (and hold GPUs); above it the job never starts; a
    string or a boolean is no number. The message shows the value as written."""
    spec = {} if min_available is None else {"minAvailable": min_available}
    assert _gang(_vj([("m", 1), ("w", 3)], **spec)) == [_min_available(shown, 4)]


def test_volcano_job_findings_come_together_and_ignore_kueue():
    """A wrong scheduler and a wrong minAvailable are both reported; a Kueue label does not gang a Volcano Job's
    tasks (its own minAvailable does)."""
    assert _gang(_vj([("w", 2)], QUEUE, schedulerName="x", minAvailable=1)) == [
        "Volcano Job ml/vj: schedulerName is 'x'; gang scheduling needs volcano.",
        _min_available("1", 2),
    ]


def test_volcano_job_of_one_pod_is_no_gang():
    """One replica in total (tasks without replicas count 0) needs no gang."""
    assert _gang(_vj([("w", 1)])) == []
    vj = _vj([("w", 1)])
    vj[2]["spec"]["tasks"].append({"name": "x", "template": {"spec": _pod()}})
    assert _gang(vj) == []
    assert _gang(_vj([("w", 0), ("v", 0)], schedulerName="x")) == []


def _not_gang(kind: str, name: str, total: int) -> str:
    return (
        f"{kind} {name} runs {total} GPU pods but is not gang-scheduled: partial starts hold GPUs while waiting for "
        "peers (and can deadlock). Add the label kueue.x-k8s.io/queue-name: <local queue>, or schedule it with "
        "volcano and a minAvailable / PodGroup minMember equal to its pod count."
    )


def _job(parallelism: int | None, labels=None, annotations=None, pod=None, template_meta=None):
    spec: dict[str, Any] = {"template": {"spec": pod or _pod()}}
    if template_meta:
        spec["template"]["metadata"] = template_meta
    if parallelism is not None:
        spec["parallelism"] = parallelism
    meta = {"labels": labels or {}, "annotations": annotations or {}}
    return k8s("batch/v1", "Job", "train", "ml", metadata=meta, spec=spec)


GROUP = {"scheduling.k8s.io/group-name": "train"}


def test_batch_job_gang_rules():
    """A batch Job's pod count is its parallelism (1 when unset); two or more GPU pods need a Kueue queue or
    volcano with a PodGroup named on the Job or on its pod template."""
    assert _gang(_job(None)) == [] and _gang(_job(1)) == []
    assert _gang(_job(2)) == [_not_gang("Job", "ml/train", 2)]
    assert _gang(_job(2, QUEUE)) == []
    volcano = _pod(schedulerName="volcano")
    assert _gang(_job(2, pod=volcano, annotations=GROUP)) == []
    assert _gang(_job(2, pod=volcano, template_meta={"annotations": GROUP})) == []
    assert _gang(_job(2, pod=volcano)) == [_not_gang("Job", "ml/train", 2)]
    assert _gang(_job(2, annotations=GROUP)) == [_not_gang("Job", "ml/train", 2)]  # group without volcano
    assert _gang(_job(2, {"kueue.x-k8s.io/queue-name": ""})) == [_not_gang("Job", "ml/train", 2)]
    assert _gang(_job(4, pod=_pod(gpu=False))) == []  # CPU jobs are not judged


def _kubeflow(replicas: dict[str, int], scheduler: str | None = None, min_available: Any = None, labels=None):
    pod = _pod(schedulerName=scheduler) if scheduler else _pod()
    specs = {role: {"replicas": n, "template": {"spec": pod}} for role, n in replicas.items()}
    spec: dict[str, Any] = {"mpiReplicaSpecs": specs}
    if min_available is not None:
        spec["runPolicy"] = {"schedulingPolicy": {"minAvailable": min_available}}
    return k8s("kubeflow.org/v1", "MPIJob", "mpi", "ml", metadata={"labels": labels or {}}, spec=spec)


def test_kubeflow_gang_rules():
    """A Kubeflow job's pods are the sum of its replica specs; it is a gang with a Kueue queue, or with volcano on
    every replica and schedulingPolicy.minAvailable equal to that sum."""
    assert _gang(_kubeflow({"Launcher": 1, "Worker": 3})) == [_not_gang("MPIJob", "ml/mpi", 4)]
    assert _gang(_kubeflow({"Launcher": 1, "Worker": 3}, labels=QUEUE)) == []
    assert _gang(_kubeflow({"Launcher": 1, "Worker": 3}, "volcano", 4)) == []
    assert _gang(_kubeflow({"Launcher": 1, "Worker": 3}, "volcano", 4.0)) == []
    for wrong in (3, 5, "4", None):
        assert _gang(_kubeflow({"Launcher": 1, "Worker": 3}, "volcano", wrong)) == [_not_gang("MPIJob", "ml/mpi", 4)]
    assert _gang(_kubeflow({"Launcher": 1, "Worker": 3}, None, 4)) == [_not_gang("MPIJob", "ml/mpi", 4)]
    assert _gang(_kubeflow({"Worker": 1})) == []


def test_kubeflow_volcano_must_schedule_every_replica():
    """If one replica type is left to the default scheduler, volcano cannot gang the job."""
    doc = _kubeflow({"Launcher": 1, "Worker": 3}, "volcano", 4)
    doc[2]["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"] = _pod()
    assert _gang(doc) == [_not_gang("MPIJob", "ml/mpi", 4)]


def test_jobset_pod_count_is_replicas_times_parallelism():
    """A JobSet runs replicas x parallelism pods per replicated job; only a Kueue queue gangs it here."""
    rj = [
        {"name": "a", "replicas": 2, "template": {"spec": {"parallelism": 3, "template": {"spec": _pod()}}}},
        {"name": "b", "template": {"spec": {"template": {"spec": _pod()}}}},
    ]
    doc = k8s("jobset.x-k8s.io/v1alpha2", "JobSet", "js", "ml", spec={"replicatedJobs": rj})
    assert _gang(doc) == [_not_gang("JobSet", "ml/js", 7)]
    doc[2]["metadata"]["labels"] = QUEUE
    assert _gang(doc) == []


def test_cron_jobs_are_not_judged_as_gangs():
    """Only Jobs, Volcano Jobs, Kubeflow jobs and JobSets are gang-checked: a CronJob's parallel GPU job template
    is not (the Job it creates is what runs)."""
    job = {"parallelism": 4, "template": {"spec": _pod()}}
    cron = k8s("batch/v1", "CronJob", "c", "ml", spec={"schedule": "@daily", "jobTemplate": {"spec": job}})
    assert _gang(cron) == []


def test_pods_and_deployments_are_not_gangs():
    """Only jobs are gangs: a Deployment of many GPU replicas or a Pod is never refused by this policy."""
    deploy = k8s("apps/v1", "Deployment", "d", "ml", spec={"replicas": 8, "template": {"spec": _pod()}})
    assert _gang(deploy) == []
    assert _gang(k8s("v1", "Pod", "p", "ml", spec=_pod())) == []


# ------------------------------------------------------------------------------ single-default-priority-class


def test_single_default_priority_class():
    """Two or more globalDefault PriorityClasses are each reported with the sorted list; one (or a
    non-boolean "true") is fine."""
    from test_policies import check_stack

    def pc(name: str, default: Any) -> tuple[str, str, dict]:
        return k8s("scheduling.k8s.io/v1", "PriorityClass", name, value=1, globalDefault=default)

    p = scheduling_policies.single_default_priority_class
    assert check_stack(p, [pc("a", True), pc("b", False), pc("c", "true")]) == []
    msg = "2 PriorityClasses are globalDefault (a, b); at most one may be."
    assert check_stack(p, [pc("b", True), pc("a", True), pc("c", False)]) == [("b", msg), ("a", msg)]
    # the classes are named by metadata.name (the resource name only without one)
    b, a = pc("high", True), pc("low", True)
    renamed = [(b[0], "b-resource", b[2]), (a[0], "a-resource", {**a[2], "metadata": {}})]
    msg = "2 PriorityClasses are globalDefault (a-resource, high); at most one may be."
    assert check_stack(p, renamed) == [("b-resource", msg), ("a-resource", msg)]


# ----------------------------------------------------------------------------------------- tenant-gpu-quota

KUEUE = "kueue.x-k8s.io/v1beta2"


def _tenant(name: str, **labels: str) -> tuple[str, str, dict]:
    return k8s(
        "v1",
        "Namespace",
        f"{name}-namespace",
        metadata={"name": name, "labels": {"gpu-platform/tenant": name, **labels}},
    )


def _quota(ns: str, hard: dict[str, Any], name: str = "q", **spec: Any) -> tuple[str, str, dict]:
    return k8s("v1", "ResourceQuota", f"{ns}-{name}", ns, metadata={"name": name}, spec={"hard": hard, **spec})


def _tenant_quota(*resources) -> list[tuple[str | None, str]]:
    from test_policies import check_stack

    return check_stack(scheduling_policies.tenant_gpu_quota, list(resources))


def _uncapped(ns: str, missing: str, advertised: str) -> str:
    return (
        f"tenant namespace {ns!r}: no ResourceQuota (without scopes) caps {missing}; GPU resources the stack "
        f"advertises: {advertised}. Uncapped, one tenant can take every such GPU."
    )


def test_tenant_gpu_quota_nvidia_com_gpu_is_always_required():
    """Every tenant must cap requests.nvidia.com/gpu, even when nothing else in the stack names it; the finding is
    on the tenant's Namespace resource."""
    assert _tenant_quota(_tenant("a")) == [("a-namespace", _uncapped("a", "requests.nvidia.com/gpu", "nvidia.com/gpu"))]
    # judged past namespaces that are not tenants
    plain = k8s("v1", "Namespace", "plain")
    assert _tenant_quota(plain, _tenant("a")) == [
        ("a-namespace", _uncapped("a", "requests.nvidia.com/gpu", "nvidia.com/gpu"))
    ]
    assert _tenant_quota(_tenant("a"), _quota("a", {"requests.nvidia.com/gpu": "0"})) == []  # 0 is a cap
    assert (
        _tenant_quota(
            k8s("v1", "Namespace", "plain"),
            k8s("v1", "Namespace", "x", metadata={"labels": {"gpu-platform/tenant": ""}}),
        )
        == []
    )


def test_tenant_gpu_quota_caps_only_requests_in_unscoped_quotas_of_its_namespace():
    """limits.* is no cap on what pods request; a scoped quota covers some pods only; another namespace's quota
    is not this tenant's."""
    for quota in (
        _quota("a", {"limits.nvidia.com/gpu": "4"}),
        _quota("a", {"requests.nvidia.com/gpu": "4"}, scopes=["BestEffort"]),
        _quota("a", {"requests.nvidia.com/gpu": "4"}, scopeSelector={"matchExpressions": [{"operator": "Exists"}]}),
        _quota("b", {"requests.nvidia.com/gpu": "4"}),
    ):
        assert _tenant_quota(_tenant("a"), quota) == [
            ("a-namespace", _uncapped("a", "requests.nvidia.com/gpu", "nvidia.com/gpu"))
        ], quota


def test_tenant_gpu_quota_requires_every_gpu_name_the_stack_advertises():
    """GPU names in any quota (requests./limits. stripped), a Kueue ClusterQueue (covered resources and flavor
    resources) or a Volcano Queue (capability, deserved, guarantee.resource) must each be capped; cpu does not."""
    cq = k8s(
        KUEUE,
        "ClusterQueue",
        "cq",
        spec={
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "nvidia.com/mig-1g.10gb"],
                    "flavors": [{"name": "f", "resources": [{"name": "nvidia.com/gpu.shared", "nominalQuota": 4}]}],
                }
            ]
        },
    )
    vq = k8s(
        "scheduling.volcano.sh/v1beta1",
        "Queue",
        "vq",
        spec={
            "capability": {"nvidia.com/mig-2g.20gb": 2, "cpu": 8},
            "guarantee": {"resource": {"nvidia.com/mig-3g.40gb": 1}},
        },
    )
    other = _quota("b", {"limits.nvidia.com/mig-7g.80gb": "1", "requests.nvidia.com/mig-1g.5gb": "1"})
    advertised = ", ".join(
        [
            "nvidia.com/gpu",
            "nvidia.com/gpu.shared",  # ClusterQueue flavor resource
            "nvidia.com/mig-1g.10gb",  # ClusterQueue covered resource
            "nvidia.com/mig-1g.5gb",  # another namespace's quota, requests.
            "nvidia.com/mig-2g.20gb",  # Volcano capability
            "nvidia.com/mig-3g.40gb",  # Volcano guarantee.resource
            "nvidia.com/mig-7g.80gb",  # another namespace's quota, limits.
        ]
    )
    mine = _quota("a", {"requests.nvidia.com/gpu": "4", "requests.nvidia.com/mig-1g.5gb": "1"})
    missing = (
        "requests.nvidia.com/gpu.shared, requests.nvidia.com/mig-1g.10gb, requests.nvidia.com/mig-2g.20gb, "
        "requests.nvidia.com/mig-3g.40gb, requests.nvidia.com/mig-7g.80gb"
    )
    assert _tenant_quota(_tenant("a"), cq, vq, other, mine) == [("a-namespace", _uncapped("a", missing, advertised))]
    deserved = k8s("scheduling.volcano.sh/v1beta1", "Queue", "vq", spec={"deserved": {"nvidia.com/mig-4g.40gb": 1}})
    assert _tenant_quota(_tenant("a"), deserved, _quota("a", {"requests.nvidia.com/gpu": "1"})) == [
        ("a-namespace", _uncapped("a", "requests.nvidia.com/mig-4g.40gb", "nvidia.com/gpu, nvidia.com/mig-4g.40gb"))
    ]


@pytest.mark.parametrize(
    "foreign",
    [
        k8s(
            "example.com/v1",
            "ClusterQueue",
            "cq",
            spec={"resourceGroups": [{"coveredResources": ["nvidia.com/mig-9"]}]},
        ),
        k8s("example.com/v1", "Queue", "q", spec={"capability": {"nvidia.com/mig-9": 1}}),
        k8s(KUEUE, "LocalQueue", "lq", "a", spec={"resourceGroups": [{"coveredResources": ["nvidia.com/mig-9"]}]}),
    ],
)
def test_tenant_gpu_quota_reads_only_kueue_cluster_queues_and_volcano_queues(foreign):
    """Only Kueue's ClusterQueue and Volcano's Queue advertise GPU names; look-alike kinds of other groups (or
    other Kueue kinds) do not."""
    assert _tenant_quota(_tenant("a"), foreign, _quota("a", {"requests.nvidia.com/gpu": "1"})) == []


def test_tenant_gpu_quota_caps_may_be_split_across_quotas():
    """Two unscoped quotas of the namespace together cap what one alone does not."""
    assert (
        _tenant_quota(
            _tenant("a"),
            _quota("a", {"requests.nvidia.com/gpu": "4"}),
            _quota("a", {"requests.nvidia.com/mig-1g.10gb": "2"}, "mig"),
            _quota("b", {"requests.nvidia.com/mig-1g.10gb": "2"}),
        )
        == []
    )


# ---------------------------------------------------------------------------------- critical-tenant-capacity


def _critical(*resources) -> list[tuple[str | None, str]]:
    from test_policies import check_stack

    return check_stack(scheduling_policies.critical_tenant_capacity, list(resources))


def _ng(name: str, capacity: str, pool: str) -> tuple[str, str, dict]:
    props = {"instanceTypes": ["g6.xlarge"], "capacityType": capacity, "labels": {"gpu-platform/pool": pool}}
    return ("aws:eks/nodeGroup:NodeGroup", name, props)


def test_critical_tenant_on_spot_only_without_kueue_message():
    """Without Kueue quota the stack's GPU pools decide; the message says so and lists them."""
    assert _critical(
        _tenant("serving", **{"gpu-platform/critical": "TRUE"}), _ng("ng1", "SPOT", "l4"), _ng("ng2", "spot", "a10")
    ) == [
        (
            "serving-namespace",
            "critical tenant 'serving' only has spot GPU capacity (the stack's GPU pools (no Kueue quota found): a10, "
            "l4); a spot reclaim can take all of it at once. Give it quota on an on-demand pool (or an on-demand "
            "fallback).",
        )
    ]


def test_critical_tenant_capacity_passes_with_any_on_demand_pool_or_no_pools():
    """An on-demand pool among the reachable ones, a non-critical tenant, or a stack without GPU pools: nothing."""
    critical = _tenant("serving", **{"gpu-platform/critical": "true"})
    assert _critical(critical, _ng("ng1", "SPOT", "l4"), _ng("ng2", "ON_DEMAND", "h100")) == []
    assert _critical(critical, _ng("ng1", "SPOT", "l4"), _ng("ng2", "SPOT", "l4"), _ng("ng3", "ON_DEMAND", "l4")) == []
    assert _critical(_tenant("serving", **{"gpu-platform/critical": "yes"}), _ng("ng1", "SPOT", "l4")) == []
    assert _critical(critical) == []


def test_tenant_pools_follows_local_queue_cluster_queue_flavor_pool():
    """tenant_pools: a namespace's LocalQueues -> their ClusterQueues -> flavors with a non-zero GPU nominal
    quota -> the pools those ResourceFlavors select; None when Kueue shows the namespace nothing."""
    from pulumi_policy import PolicyResource
    from test_policies import _opts, engine_props

    def flavor(name: str, gpus: str) -> dict:
        return {
            "name": name,
            "resources": [{"name": "cpu", "nominalQuota": "8"}, {"name": "nvidia.com/gpu", "nominalQuota": gpus}],
        }

    docs = [
        k8s(KUEUE, "LocalQueue", "lq", "serving", spec={"clusterQueue": "cq"}),
        k8s(
            KUEUE,
            "ClusterQueue",
            "cq",
            spec={"resourceGroups": [{"flavors": [flavor("l4", "8"), flavor("h100", "0")]}]},
        ),
        k8s(KUEUE, "ResourceFlavor", "l4", spec={"nodeLabels": {"gpu-platform/pool": "l4-spot"}}),
        k8s(KUEUE, "ResourceFlavor", "h100", spec={"nodeLabels": {"gpu-platform/pool": "h100"}}),
    ]
    resources = [PolicyResource(t, engine_props(p), f"urn:{n}", n, _opts(), None, None, [], {}) for t, n, p in docs]
    assert scheduling_policies.tenant_pools(resources, "serving") == {"l4-spot"}
    assert scheduling_policies.tenant_pools(resources, "research") is None
