"""Scenarios where state matters (issue 38.3), in order, on one platform each, with the real Kueue controller and
kube-scheduler: a higher-priority workload preempts in its ClusterQueue; a lender's own job reclaims what a borrower
took; spot capacity goes away under running work. After each step the real state is read back (which workloads
are admitted, evicted and why, where pods run), and explain, given the live cluster, must say what happened and
what the next admission waits for.

Expected states come from Kueue's documented behaviour at v0.19.2 (the preemption reasons of
apis/kueue/v1beta2/workload_types.go: InClusterQueue, InCohortReclamation; waitForPodsReady's PodsReadyTimeout),
not from explain.
"""

from __future__ import annotations

import copy
import time
from typing import Any

import paths  # noqa: F401  (tests/cluster on the path)
from cluster_stacks import stack_file_config
from loop import KUEUE_API, SchedCluster

from components.explain import trace

GPU = "nvidia.com/gpu"
GPU_TOL = [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}]
SEC_POD = {"runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}}
SEC_C = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def gpu_job(
    name: str,
    ns: str,
    pods: int,
    gpus: int,
    pool: str,
    priority: str,
    queue: str = "default",
    topology: str | None = None,
    survive_disruption: bool = False,
) -> dict[str, Any]:
    """An indexed gang Job: ``pods`` x ``gpus`` on ``pool``. ``survive_disruption``: a podFailurePolicy that ignores
    pods lost to a disruption (the DisruptionTarget condition the eviction API sets), so a node taken away restarts
    the pod instead of failing the job (Kubernetes Job podFailurePolicy, action Ignore)."""
    tpl: dict[str, Any] = {
        "spec": {
            "restartPolicy": "Never",
            "priorityClassName": priority,
            "nodeSelector": {"gpu-platform/pool": pool},
            "tolerations": copy.deepcopy(GPU_TOL),
            "securityContext": dict(SEC_POD),
            "containers": [
                {
                    "name": "main",
                    "image": "registry.example/train:1",
                    "securityContext": dict(SEC_C),
                    "resources": {"requests": {"cpu": "8", GPU: gpus}, "limits": {GPU: gpus}},
                }
            ],
        }
    }
    if topology:
        tpl["metadata"] = {"annotations": {"kueue.x-k8s.io/podset-preferred-topology": topology}}
    spec: dict[str, Any] = {
        "suspend": True,
        "parallelism": pods,
        "completions": pods,
        "completionMode": "Indexed",
        "backoffLimit": 0,
        "template": tpl,
    }
    if survive_disruption:
        spec["podFailurePolicy"] = {
            "rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]
        }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": ns, "labels": {"kueue.x-k8s.io/queue-name": queue}},
        "spec": spec,
    }


def _cond(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in obj.get("status", {}).get("conditions", []) or [] if c["type"] == kind), None)


def workload(c: SchedCluster, ns: str, job: str) -> dict[str, Any]:
    """The Kueue Workload of a Job (Kueue names it job-<name>-<hash>); {} until Kueue has made it."""
    items = [
        w for w in c.api.get(KUEUE_API, "Workload", ns)["items"] if w["metadata"]["name"].startswith(f"job-{job}-")
    ]  # type: ignore[union-attr]
    assert len(items) <= 1, f"{ns}/{job}: {len(items)} workloads"
    return items[0] if items else {}


def admitted(w: dict[str, Any]) -> bool:
    cond = _cond(w, "Admitted")
    return cond is not None and cond["status"] == "True"


def wait(what: str, check, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.3)
    raise AssertionError(f"{what}: not within {timeout}s")


def running_on(c: SchedCluster, ns: str, job: str) -> set[str]:
    pods = c.api.get("v1", "Pod", ns)["items"]  # type: ignore[union-attr]
    return {
        p["spec"]["nodeName"]
        for p in pods
        if p["metadata"].get("labels", {}).get("batch.kubernetes.io/job-name") == job
        and p["spec"].get("nodeName")
        and p.get("status", {}).get("phase") == "Running"
        and not p["metadata"].get("deletionTimestamp")
    }


def explain_live(c: SchedCluster, doc: dict[str, Any]) -> trace.Trace:
    """explain of one workload with the live cluster's usage (the CLI's --kubeconfig/--context path)."""
    import yaml

    [t] = trace.explain_all(c.spec, yaml.safe_dump(doc), cluster=c.live())
    return t


# ------------------------------------------------------------------------------------------- scenarios


def test_a_higher_priority_job_preempts_within_its_cluster_queue_and_explain_says_so():
    """prod-aws, research on h100-spot (nominal 16, nobody else has quota there): a 16-GPU training job fills it; a
    training-critical job of 8 preempts it (ClusterQueue research: withinClusterQueue LowerPriority)."""
    with SchedCluster("prod-aws", stack_file_config("prod-aws")) as c:
        low = gpu_job("fill", "research", 2, 8, "h100-spot", "training")
        high = gpu_job("urgent", "research", 1, 8, "h100-spot", "training-critical")
        assert c.create([low]) == []
        wait(
            "the filler admitted and running",
            lambda: admitted(workload(c, "research", "fill")) and len(running_on(c, "research", "fill")) == 2,
        )
        before = explain_live(c, high)
        assert before.pending is None, before.verdict
        said = " ".join(x.detail for x in before.layers)
        assert "preempts" in said and "research/fill" in said, said  # names its victim before it is submitted

        assert c.create([high]) == []
        wait("the urgent job admitted", lambda: admitted(workload(c, "research", "urgent")))
        fill = workload(c, "research", "fill")
        evicted = _cond(fill, "Evicted")
        assert evicted is not None and evicted["reason"] == "Preempted", fill["status"]
        preempted = _cond(fill, "Preempted")
        assert preempted is not None and preempted["reason"] == "InClusterQueue", fill["status"]
        wait("the filler's quota released", lambda: not admitted(workload(c, "research", "fill")))

        after = explain_live(c, low)
        cluster = next(x.detail for x in after.layers if x.name == "cluster")  # what happened to it
        assert "evicted by Preempted, InClusterQueue" in cluster, cluster
        assert after.pending is not None and after.pending.name == "flavors", after.verdict
        assert after.outcome == "quota"
        assert "research/urgent holds 8 nvidia.com/gpu" in after.pending.detail, (
            after.pending.detail
        )  # what it waits behind


def test_a_lender_reclaims_what_a_borrower_took_and_explain_says_so():
    """coverage-gcp, h100-mega: research has 24 (lends 8), vision 8 and may borrow 8. vision runs 16 (8 borrowed);
    research's own 24 then reclaims the 8 (research: reclaimWithinCohort Any) and vision's job is preempted."""
    with SchedCluster("coverage-gcp", stack_file_config("coverage-gcp")) as c:
        topo = "cloud.google.com/gce-topology-block"
        borrower = gpu_job("vis", "vision", 2, 8, "h100-mega", "training", "gpu-jobs", topo)
        lender = gpu_job("own", "research", 3, 8, "h100-mega", "training", "gpu-jobs", topo)
        assert c.create([borrower]) == []
        wait("the borrower admitted", lambda: admitted(workload(c, "vision", "vis")))
        before = explain_live(c, lender)
        said = " ".join(x.detail for x in before.layers)
        assert before.pending is None, before.verdict
        assert "reclaim" in said and "vision/vis" in said, said

        assert c.create([lender]) == []
        wait("the lender's job admitted", lambda: admitted(workload(c, "research", "own")), timeout=90)
        vis = workload(c, "vision", "vis")
        preempted = _cond(vis, "Preempted")
        assert preempted is not None and preempted["reason"] == "InCohortReclamation", vis["status"]


def test_spot_capacity_removed_requeues_what_survives_it_and_fails_what_does_not():
    """prod-aws with waitForPodsReady.recoveryTimeout 20s: two jobs run on h100-spot; the spot nodes go as Karpenter's
    interruption handling takes them (cordon, evict through the eviction API, delete). The job whose podFailurePolicy
    ignores disruptions gets replacement pods that no node takes, and Kueue evicts and requeues it after the recovery
    timeout; the job without one fails (backoffLimit 0 counts the evicted pod)."""
    config = stack_file_config("prod-aws")
    config["gpu-platform:scheduling"] = {
        **config.get("gpu-platform:scheduling", {}),
        "waitForPodsReadyRecoveryTimeout": "20s",
    }
    with SchedCluster("prod-aws", config) as c:
        keeps = gpu_job("keeps", "research", 1, 8, "h100-spot", "training", survive_disruption=True)
        fails = gpu_job("fails", "research", 1, 8, "h100-spot", "training")
        assert c.create([keeps, fails]) == []
        # running, and Kueue has seen its pods ready: from then on a lost pod counts against the recoveryTimeout
        # (before, against the 30m start timeout)
        wait(
            "both running, their pods ready",
            lambda: all(
                (_cond(workload(c, "research", job), "PodsReady") or {}).get("status") == "True"
                for job in ("keeps", "fails")
            ),
        )
        c.interrupt_pool("h100-spot")
        wait(
            "the job without a failure policy failed",
            lambda: _cond(c.api.get("batch/v1", "Job", "research", "fails"), "Failed") is not None,
        )  # type: ignore[union-attr]
        wait(
            "the surviving job evicted by waitForPodsReady",
            lambda: (_cond(workload(c, "research", "keeps"), "Evicted") or {}).get("reason") == "PodsReadyTimeout",
            timeout=90,
        )
        said = explain_live(c, keeps)
        cluster = next(x.detail for x in said.layers if x.name == "cluster")  # what happened to it
        assert "evicted by waitForPodsReady" in cluster and "PodsReadyTimeout" in cluster, cluster
        assert "Kueue requeues it at " in cluster, cluster  # what its next admission waits for: the backoff
