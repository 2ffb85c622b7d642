"""What a user sees in the cluster for each of explain's verdicts: the outcome family, checked against the real Kueue
controller and kube-scheduler by ``make sched-test`` (tests/sched/test_corpus.py).

Each stop of a trace names one (``Layer.seen``); a trace that runs is ``runs``. The layer decides the default
(``LAYER_OUTCOME``); a layer overrides it where the same layer ends differently (a Kueue-managed job with an unknown
PriorityClass is not refused but never gets a Workload; a Volcano queue's proportion holds the job in Volcano, not
in the API server)."""

from __future__ import annotations

# outcome -> what the user sees (kubectl)
OUTCOMES = {
    "refused": "the API server refuses the object, or its controller's pods (kubectl create fails, or FailedCreate "
    "events on the Job, ReplicaSet or StatefulSet)",
    "no-workload": "the job is accepted and stays suspended: Kueue makes no Workload for it (its log says why; no "
    "event reaches the job)",
    "queue": "kubectl get workloads: Pending, the Workload's LocalQueue does not exist",
    "quota": "kubectl get workloads: QuotaReserved False, Kueue's message 'couldn't assign flavors ...'",
    "check": "kubectl get workloads: quota reserved, an admission check pending",
    "unschedulable": "Kueue admits it (where Kueue queues it); its pods stay Pending: FailedScheduling",
    "unscheduled": "its pods stay Pending with no scheduler event: the scheduler they name does not take them",
    "queued": "Volcano keeps its PodGroup Pending (Inqueue is never reached): no pods are created",
    "runs": "its pods run (a dcgm stop: they run, but their GPU metrics lose the pod)",
}

# the outcome of a stop at each layer, unless the layer says otherwise
LAYER_OUTCOME = {
    "namespace": "refused",
    "claims": "refused",
    "priority": "refused",
    "scheduler": "refused",
    "queue": "refused",
    "operator": "refused",
    "flavors": "quota",
    "admission-checks": "check",
    "pool": "unschedulable",
    "provisioner": "unschedulable",
    "node": "unschedulable",
    "dcgm": "runs",
}
