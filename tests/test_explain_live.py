"""explain with a live cluster (``--context``, issue 38.3 and 38.6): the Workloads Kueue keeps, read as kubectl returns
them (kueue.x-k8s.io/v1beta2, apis/kueue/v1beta2/workload_types.go at v0.19.2), become the usage counted against each
ClusterQueue; a new workload that does not fit now either preempts (Kueue's classical preemption: candidates by
policy, other queues' borrowers before its own queue's, lower priority first, newest first; removed until it fits,
then put back where not needed: pkg/scheduler/preemption) or waits behind named workloads. The same paths run against
the real Kueue controller in tests/sched/test_scenarios.py; here the numbers are worked out by hand.

prod-aws: research has 16 GPUs on h100-spot (nobody else has quota there); priorities training-critical 90000,
training 50000, batch 10000 (the stack's classes). coverage-gcp, h100-mega: research 24 (lendingLimit 8), vision 8
(borrowingLimit 8), one cohort: vision may hold 16, 8 of them lent by research.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import ROOT
from test_explain import job, spec_of

from components.cli.loader import load_spec
from components.explain import live, preemption, trace as explain
from components.plan import plan
from components.spec import stackfile

SPOT = {"gpu-platform/pool": "h100-spot"}


def workload(
    ns: str,
    job_name: str,
    cq: str,
    flavor: str,
    gpus: int,
    priority: int,
    reserved_at: str = "2026-11-29T10:00:00Z",
    admitted: bool = True,
    conditions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A Workload object as Kueue writes it for an admitted Job (the fields explain reads)."""
    conds = [
        {
            "type": "QuotaReserved",
            "status": "True" if admitted else "False",
            "reason": "QuotaReserved",
            "message": f"Quota reserved in ClusterQueue {cq}",
            "lastTransitionTime": reserved_at,
        },
        {"type": "Admitted", "status": "True" if admitted else "False", "reason": "Admitted", "message": ""},
        *(conditions or []),
    ]
    status: dict[str, Any] = {"conditions": conds}
    if admitted:
        status["admission"] = {
            "clusterQueue": cq,
            "podSetAssignments": [
                {
                    "name": "main",
                    "count": 1,
                    "flavors": {"cpu": flavor, "memory": flavor, "nvidia.com/gpu": flavor},
                    "resourceUsage": {"cpu": "8", "memory": "1Gi", "nvidia.com/gpu": str(gpus)},
                }
            ],
        }
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": f"job-{job_name}-abcde",
            "namespace": ns,
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job_name, "controller": True}],
        },
        "spec": {"queueName": "default", "priority": priority, "priorityClassName": "x"},
        "status": status,
    }


def _live(*items: dict[str, Any]) -> live.Live:
    return live.parse(items, "the test cluster")


def test_a_workload_list_parses_into_usage_per_queue_flavor_and_resource():
    cluster = _live(
        workload("research", "a", "research", "h100-spot", 8, 50000),
        workload("research", "b", "research", "h100-spot", 4, 10000),
        workload("research", "waiting", "research", "h100-spot", 8, 50000, admitted=False),
    )
    # cpu in millicores, memory in bytes (Kueue's Amount); the pending one holds nothing
    assert cluster.usage() == {
        "research": {
            ("h100-spot", "cpu"): 16000,
            ("h100-spot", "memory"): 2 * 2**30,
            ("h100-spot", "nvidia.com/gpu"): 12,
        }
    }
    assert [w.ref for w in cluster.holding("research")] == ["research/a", "research/b"]
    assert [w.name for w in cluster.of("research", "Job", "waiting")] == ["job-waiting-abcde"]
    assert cluster.usage(without=cluster.of("research", "Job", "a")) == {
        "research": {("h100-spot", "cpu"): 8000, ("h100-spot", "memory"): 2**30, ("h100-spot", "nvidia.com/gpu"): 4}
    }


def test_an_evicted_workload_says_why_and_when_it_is_requeued():
    evicted = workload(
        "research",
        "keeps",
        "research",
        "h100-spot",
        8,
        50000,
        admitted=False,
        conditions=[
            {
                "type": "Evicted",
                "status": "True",
                "reason": "PodsReadyTimeout",
                "message": "Exceeded the PodsReady timeout",
            }
        ],
    )
    evicted["status"]["requeueState"] = {"count": 1, "requeueAt": "2026-11-29T10:01:00Z"}
    (w,) = _live(evicted).workloads
    assert w.evicted == ("PodsReadyTimeout", "Exceeded the PodsReady timeout")
    assert w.requeue_at == "2026-11-29T10:01:00Z"
    assert explain.cluster_state(w) == (
        "research/keeps (job-keeps-abcde) evicted by waitForPodsReady (its pods were not all ready in time) "
        "(PodsReadyTimeout: Exceeded the PodsReady timeout); Kueue requeues it at 2026-11-29T10:01:00Z"
    )


def _admitted_keeps(evicted: str, reason: str, message: str):
    """research/keeps admitted on h100-spot, with an Evicted condition of this status."""
    cond = {"type": "Evicted", "status": evicted, "reason": reason, "message": message}
    (w,) = _live(workload("research", "keeps", "research", "h100-spot", 8, 50000, conditions=[cond])).workloads
    return w


def test_a_workload_being_evicted_is_said_evicted_while_its_admission_is_still_held():
    """Kueue marks the eviction first and lets go of the admission only once the job has stopped; in between the
    workload is being evicted, not running as admitted (sched-test caught explain saying "admitted" there)."""
    w = _admitted_keeps("True", "PodsReadyTimeout", "Exceeded the timeout")
    assert w.admitted and w.evicted == ("PodsReadyTimeout", "Exceeded the timeout")
    assert explain.cluster_state(w) == (
        "research/keeps (job-keeps-abcde) evicted by waitForPodsReady (its pods were not all ready in time) "
        "(PodsReadyTimeout: Exceeded the timeout); its quota in ClusterQueue research on h100-spot is held until "
        "its pods have stopped"
    )


def test_a_workload_admitted_again_after_an_eviction_is_said_admitted():
    """Reserving quota again sets Evicted False ("Previously: ..."): the workload is admitted."""
    w = _admitted_keeps("False", "QuotaReserved", "Previously: timeout")
    assert explain.cluster_state(w) == "research/keeps (job-keeps-abcde) admitted in ClusterQueue research on h100-spot"


def _prod_aws():
    return spec_of("prod-aws")


def test_a_higher_priority_job_that_does_not_fit_now_preempts_the_lowest_newest_in_its_queue():
    """16 of research's 16 are held: training 8 (older), batch 4, batch 4 (newest). 8 at training-critical needs 8
    freed: candidates in research (withinClusterQueue LowerPriority): batch newest, batch older, training. Removing
    batch-new frees 4 (not enough), batch-old 8: fits; fill-back tries batch-new again: with it back only 4 are free:
    it stays a victim. Both batch workloads are preempted, the training one is not."""
    cluster = _live(
        workload("research", "train", "research", "h100-spot", 8, 50000, "2026-11-29T09:00:00Z"),
        workload("research", "batch-old", "research", "h100-spot", 4, 10000, "2026-11-29T09:30:00Z"),
        workload("research", "batch-new", "research", "h100-spot", 4, 10000, "2026-11-29T09:45:00Z"),
    )
    t = explain.explain_all(
        _prod_aws(),
        job("research", 1, {"nvidia.com/gpu": 8}, nodeSelector=SPOT, priorityClassName="training-critical"),
        cluster,
    )[0]
    assert t.pending is None, t.verdict
    flavors = next(x.detail for x in t.layers if x.name == "flavors")
    assert "0 nvidia.com/gpu on h100-spot available: admitting it preempts research/batch-new" in flavors, flavors
    assert "research/batch-old" in flavors and "research/train" not in flavors, flavors
    assert next(x.detail for x in t.layers if x.name == "preemption").startswith(
        "it preempts research/batch-new, research/batch-old;"
    )


def test_fill_back_keeps_a_victim_that_is_not_needed():
    """Held: batch 8 (newest) and batch 4 (older) and training 4. 4 at training-critical: batch-new (8) alone frees
    enough, so batch-old is never removed; a request of 12 removes batch-new then batch-old (12 free), and fill-back
    puts nothing back (with batch-new back only 4 are free)."""
    cluster = _live(
        workload("research", "train", "research", "h100-spot", 4, 50000, "2026-11-29T09:00:00Z"),
        workload("research", "batch-old", "research", "h100-spot", 4, 10000, "2026-11-29T09:30:00Z"),
        workload("research", "batch-new", "research", "h100-spot", 8, 10000, "2026-11-29T09:45:00Z"),
    )
    decided = plan.build(_prod_aws(), "prod-aws")
    research = decided.tenants["research"]
    four = preemption.targets(decided, cluster, research, {("h100-spot", "nvidia.com/gpu"): 4}, 90000, [])
    assert [v.workload.ref for v in four] == ["research/batch-new"]
    twelve = preemption.targets(decided, cluster, research, {("h100-spot", "nvidia.com/gpu"): 12}, 90000, [])
    assert sorted(v.workload.ref for v in twelve) == ["research/batch-new", "research/batch-old"]
    # at the victims' own priority nothing is preempted: LowerPriority is strictly lower
    assert preemption.targets(decided, cluster, research, {("h100-spot", "nvidia.com/gpu"): 4}, 10000, []) is None


def test_a_workload_nothing_can_make_room_for_waits_and_names_what_holds_the_quota():
    cluster = _live(workload("research", "urgent", "research", "h100-spot", 8, 90000))
    t = explain.explain_all(
        _prod_aws(), job("research", 2, {"nvidia.com/gpu": 8}, nodeSelector=SPOT, priorityClassName="training"), cluster
    )[0]
    assert (t.pending.name, t.outcome) == ("flavors", "quota")
    assert t.pending.detail == (
        "waits for quota in the test cluster: it needs 16 nvidia.com/gpu on h100-spot, 8 nvidia.com/gpu on h100-spot "
        "available now, and Kueue preempts nothing for it (none of lower priority in ClusterQueue research, no "
        "borrower to reclaim from); in use: research/urgent holds 8 nvidia.com/gpu (priority 90000, ClusterQueue "
        "research)"
    )


def test_its_own_workload_in_the_cluster_is_not_counted_against_it():
    """A job already admitted (16 of 16) explained again fits: its own usage is left out; the cluster layer says
    where it is admitted."""
    cluster = _live(workload("research", "big", "research", "h100-spot", 16, 50000))
    doc = job("research", 2, {"nvidia.com/gpu": 8}, nodeSelector=SPOT, priorityClassName="training").replace(
        "name: j", "name: big"
    )
    t = explain.explain_all(_prod_aws(), doc, cluster)[0]
    assert t.pending is None, t.verdict
    assert t.layers[0].name == "cluster"
    assert t.layers[0].detail == "research/big (job-big-abcde) admitted in ClusterQueue research on h100-spot"
    assert "it fits now (16 nvidia.com/gpu on h100-spot available)" in next(
        x.detail for x in t.layers if x.name == "flavors"
    )


def test_a_lender_reclaims_from_a_borrower_at_any_priority_but_not_from_a_queue_within_its_nominal():
    """coverage-gcp h100-mega: vision holds 16 (8 borrowed from research's lendable 8). research asks its 24 at a
    LOWER priority than vision's: reclaimWithinCohort Any takes vision's workload all the same (InCohortReclamation).
    With vision holding only its nominal 8, research's 24 fits without preempting (16 kept back + 8 lent)."""
    spec = load_spec(stackfile.read(ROOT / "tests" / "fixtures" / "coverage" / "Pulumi.coverage-gcp.yaml"))
    decided = plan.build(spec, "coverage-gcp")
    research = decided.tenants["research"]
    request = {("h100-mega", "nvidia.com/gpu"): 24}
    borrowing = _live(workload("vision", "vis", "vision", "h100-mega", 16, 90000))
    (v,) = preemption.targets(decided, borrowing, research, request, 10000, [])
    assert (v.workload.ref, v.reason) == ("vision/vis", preemption.IN_COHORT_RECLAMATION)
    assert "reclaims quota it lent to the cohort" in str(v)
    within = _live(workload("vision", "vis", "vision", "h100-mega", 8, 90000))
    q = preemption.quotas(decided, within, [])
    assert preemption.fits(q, "research", request)
    # and a workload of a queue within its nominal quota is never a victim: 25 would need it, Kueue gives up
    assert preemption.targets(decided, within, research, {("h100-mega", "nvidia.com/gpu"): 25}, 99999, []) is None


@pytest.mark.parametrize("context", [["--context", "nowhere"], ["--kubeconfig", "/nonexistent/kubeconfig"]])
def test_the_cli_says_when_it_cannot_read_the_cluster(context, tmp_path, capsys, monkeypatch):
    from components.cli import main as cli

    monkeypatch.setenv("PATH", str(tmp_path))  # no kubectl
    f = tmp_path / "w.yaml"
    f.write_text(job("research", 1, {"nvidia.com/gpu": 1}))
    assert cli.main(["explain", "prod-aws", str(f), *context]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "explain: cannot read the cluster's Kueue workloads: kubectl is not on PATH: explain reads the cluster "
        "through it"
    )


def _spot_job(**spec: Any) -> str:
    import yaml

    doc = yaml.safe_load(job("research", 1, {"nvidia.com/gpu": 8}, nodeSelector=SPOT, priorityClassName="training"))
    doc["spec"].update(spec)
    return yaml.safe_dump(doc)


def test_a_job_that_a_spot_reclaim_would_fail_is_told_how_to_survive_it():
    """tests/sched/test_scenarios.py saw it on the real controllers: a pod evicted from a reclaimed spot node counts
    against backoffLimit (0: the Job fails), unless a podFailurePolicy rule ignores DisruptionTarget (the pod is
    recreated, and Kueue requeues the job when no node comes back)."""
    rule = {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]}

    def said(doc: str) -> str:
        (t,) = explain.explain_all(_prod_aws(), doc)
        return next(x.detail for x in t.layers if x.name == "preemption")

    assert said(_spot_job(backoffLimit=0)).endswith(
        "; a spot interruption on h100-spot fails it (backoffLimit 0 counts the evicted pod): add a podFailurePolicy "
        "rule {action: Ignore, onPodConditions: [{type: DisruptionTarget, status: 'True'}]}, and the pod is "
        "recreated, or requeued by waitForPodsReady when no node comes back"
    )
    assert "each spot interruption on h100-spot uses one of its backoffLimit 6 retries" in said(_spot_job())
    assert "spot interruption" not in said(_spot_job(backoffLimit=0, podFailurePolicy=rule))
    on_demand = job(
        "research",
        1,
        {"nvidia.com/gpu": 8},
        annotations={"kueue.x-k8s.io/podset-preferred-topology": "kubernetes.io/hostname"},
        nodeSelector={"gpu-platform/pool": "a100-train"},
        priorityClassName="training",
    )
    assert "spot interruption" not in said(on_demand)
