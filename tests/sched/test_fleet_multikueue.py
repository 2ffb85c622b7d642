"""A fleet behind one queue, for real (issue 43.5): three loopback control planes, each with the real Kueue v0.19.2
controller run with its stack's rendered configuration: the manager (stacks/Pulumi.fleet-manager.yaml, MultiKueue
on) and its two workers (fleet-eks: research 16 H100 on 2 nodes; fleet-gke: research 4 and evals 4 L4 on 8 nodes),
the workers with kwok nodes from their plans. Every object comes from the synth of those stacks; the one thing the
engine would fill that the synth cannot is the manager's kubeconfig Secret per worker (a secret StackReference
output): the test fills it with what the worker stack exports, ``kubeconfig_text`` of the worker's own token Secret,
made by its token controller for the worker's rendered ServiceAccount and bound to its rendered least-privilege
ClusterRole. So every dispatch, watch and status copy below is Kueue acting with exactly the grant the worker stack
renders.

In order, on one fleet (expected values from the stack files and Kueue's documented behaviour, kueue v0.19.2
pkg/controller/admissionchecks/multikueue/workload.go and site/content/en/docs/concepts/multikueue.md):

1. both MultiKueueClusters turn Active (the token, the CA and the grant's list/watch suffice); the credential is
   refused Secrets and Pods on its worker;
2. research's ``hold`` (8 pods x 1 GPU, pinned to the L4 pool) can only be admitted by fleet-gke (research's 4 L4
   and the 4 evals lends it in cohort gpu-platform): it runs there, on every L4; research's ``move`` (4 x 1 GPU, any
   pool) then finds no room on fleet-gke and runs on fleet-eks, the worker with room; the manager's Job shows the
   worker's progress (status.active);
3. ``hold``'s pods complete on fleet-gke: its Job's Complete condition and succeeded count reach the manager's Job,
   and the manager's Workload finishes;
4. a JobSet (evals, only on fleet-gke) is dispatched and admitted there; JobSet's controller is not built here, so
   the test plays it (its terminal status set on the worker's JobSet: ADAPTATIONS "JobSet controller"), and that
   status reaches the manager's JobSet;
5. fleet-eks's API server stops: ``move`` and a JobSet of research admitted there (``shard``, its progress played
   there: ADAPTATIONS "JobSet controller") stay admitted for the worker-lost timeout (shortened to 20s: ADAPTATIONS
   "worker-lost timeout"), then Kueue evicts them on the manager. Kueue v0.19.2 does not finish those evictions on
   its own: the manager's copies keep the lost worker's last status (active), and an eviction waits for the job to
   be inactive. The platform's lost-worker reset does it (the manager's rendered CronJob fleet-lost-job-reset, run by
   the harness as the kubelet would: ADAPTATIONS "lost-worker reset"): before the timeout it changes nothing, after
   the evictions one run resets the Job and the JobSet, which are dispatched again to fleet-gke; a second run changes
   nothing.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import http.client
import json
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import paths  # noqa: F401  (tests/cluster on the path)
from cluster_stacks import stack_file_config
from loop import KUEUE_API, SchedCluster

from components.plan import fleet as fleet_plan
from components.render import fleet as fleet_render

ROOT = Path(__file__).resolve().parents[2]
MANAGER = "fleet-manager"
WORKERS = {"eks-h100": "fleet-eks", "gke-l4": "fleet-gke"}  # the manager's worker names -> their stacks
LOST_TIMEOUT = 20  # seconds (the stack says 15m)
SEC_POD = {"runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}}
SEC_C = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
GPU = "nvidia.com/gpu"


def pod_template(gpus: int, pool: str | None, priority: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "securityContext": dict(SEC_POD),
        "containers": [
            {
                "name": "main",
                "image": "registry.example/train:1",
                "securityContext": dict(SEC_C),
                "resources": {"requests": {"cpu": "1", GPU: gpus}, "limits": {GPU: gpus}},
            }
        ],
    }
    if pool:
        spec["nodeSelector"] = {"gpu-platform/pool": pool}
    if priority:
        spec["priorityClassName"] = priority
    return {"spec": spec}


def job(
    name: str, ns: str, pods: int, gpus: int, pool: str | None = None, priority: str | None = "training"
) -> dict[str, Any]:
    """``pods`` x ``gpus`` submitted to the manager's LocalQueue, as a team submits it (suspended: Kueue starts it)."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": ns, "labels": {"kueue.x-k8s.io/queue-name": "default"}},
        "spec": {
            "suspend": True,
            "parallelism": pods,
            "completions": pods,
            "backoffLimit": 0,
            "template": pod_template(gpus, pool, priority),
        },
    }


def jobset(name: str, ns: str, gpus: int) -> dict[str, Any]:
    pod_job = {"spec": {"parallelism": 1, "completions": 1, "backoffLimit": 0}}
    pod_job["spec"]["template"] = pod_template(gpus, None, None)
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": ns, "labels": {"kueue.x-k8s.io/queue-name": "default"}},
        "spec": {"suspend": True, "replicatedJobs": [{"name": "main", "replicas": 1, "template": pod_job}]},
    }


def wait(what: str, check, timeout: float = 90) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(LookupError):
            got = check()
            if got:
                return got
        time.sleep(0.5)
    raise AssertionError(f"{what}: not within {timeout}s")


def cond(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in obj.get("status", {}).get("conditions", []) or [] if c["type"] == kind), None)


def is_true(obj: dict[str, Any], kind: str) -> bool:
    return (cond(obj, kind) or {}).get("status") == "True"


def workload(c: SchedCluster, ns: str, prefix: str) -> dict[str, Any]:
    """The Kueue Workload of a job (``job-<name>-<hash>``, ``jobset-<name>-<hash>``); {} until there is one."""
    items = [w for w in c.api.get(KUEUE_API, "Workload", ns)["items"] if w["metadata"]["name"].startswith(prefix)]
    return items[0] if items else {}


def get(c: SchedCluster, api_version: str, kind: str, ns: str, name: str) -> dict[str, Any]:
    return c.api.get(api_version, kind, ns, name)


def running_pods(c: SchedCluster, ns: str, job_name: str) -> list[dict[str, Any]]:
    return [
        p
        for p in c.api.get("v1", "Pod", ns)["items"]
        if p["metadata"].get("labels", {}).get("batch.kubernetes.io/job-name") == job_name
        and p.get("status", {}).get("phase") == "Running"
        and not p["metadata"].get("deletionTimestamp")
    ]


def complete_pod(c: SchedCluster, pod: dict[str, Any]) -> None:
    """What the kubelet reports when the pod's one container exits 0 (kwok's pod-complete stage, which the scheduler
    tests leave out so that other pods keep running: ADAPTATIONS "nodes")."""
    meta = pod["metadata"]
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    status = {
        "phase": "Succeeded",
        "containerStatuses": [
            {
                "name": ctr["name"],
                "image": ctr["image"],
                "imageID": "",
                "ready": False,
                "restartCount": 0,
                "started": False,
                "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}},
            }
            for ctr in pod["spec"]["containers"]
        ],
    }
    code, body = c.cp.request(
        "PATCH",
        f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/status",
        {"status": status},
        "application/merge-patch+json",
    )
    assert code == 200, body[:300]


def run_jobset(c: SchedCluster, ns: str, name: str) -> None:
    """JobSet's controller's part (ADAPTATIONS "JobSet controller"): its one replicated job running one pod, as jobset
    v0.12.0 pkg/controllers/jobset_controller.go counts its child Jobs' pods into replicatedJobsStatus."""
    js = get(c, "jobset.x-k8s.io/v1alpha2", "JobSet", ns, name)
    js["status"] = {
        "replicatedJobsStatus": [{"name": "main", "ready": 1, "succeeded": 0, "failed": 0, "active": 1, "suspended": 0}]
    }
    code, body = c.cp.request("PUT", f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets/{name}/status", js)
    assert code == 200, body[:300]


def replicated_active(c: SchedCluster, ns: str, name: str) -> list[int]:
    js = get(c, "jobset.x-k8s.io/v1alpha2", "JobSet", ns, name)
    return [rj.get("active", 0) for rj in (js.get("status") or {}).get("replicatedJobsStatus") or []]


def finish_jobset(c: SchedCluster, ns: str, name: str) -> None:
    """JobSet's controller's part (ADAPTATIONS "JobSet controller"): the JobSet Completed, as jobset v0.12.0
    pkg/controllers/jobset_controller.go sets it when every replicated job succeeded."""
    js = get(c, "jobset.x-k8s.io/v1alpha2", "JobSet", ns, name)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    js["status"] = {
        "terminalState": "Completed",
        "replicatedJobsStatus": [
            {"name": "main", "ready": 0, "succeeded": 1, "failed": 0, "active": 0, "suspended": 0}
        ],
        "conditions": [
            {
                "type": "Completed",
                "status": "True",
                "reason": "AllJobsCompleted",
                "message": "jobset completed successfully",
                "lastTransitionTime": now,
            }
        ],
    }
    code, body = c.cp.request("PUT", f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets/{name}/status", js)
    assert code == 200, body[:300]


# ----------------------------------------------------------------------------------------------- the fleet


def worker_kubeconfig(w: SchedCluster) -> str:
    """What the worker stack exports as ``multikueueKubeconfig`` (components/render/fleet.py FleetWorker): its token
    Secret's CA and token, once the token controller has filled them, with its API server's address (on a cloud, the
    cluster's endpoint; here the loopback server: ADAPTATIONS "fleet credential")."""
    p = w.plan.fleet_worker
    assert p is not None

    def filled() -> dict[str, str] | None:
        data = get(w, "v1", "Secret", p.namespace, p.token_secret).get("data") or {}
        return data if data.get("token") and data.get("ca.crt") else None

    data = wait(f"{w.stack}: the token controller fills {p.token_secret}", filled, 60)
    return fleet_render.kubeconfig_text("worker", w.cp.server, data["ca.crt"], base64.b64decode(data["token"]).decode())


def fill_credentials(manager: SchedCluster, kubeconfigs: dict[str, str]) -> None:
    """The StackReference's part: the manager's Secret of each worker holds the worker's secret output (the synth
    records it as ``[secret]``)."""
    filled = set()
    for r in manager.rendering.resources:
        inputs = r.inputs if isinstance(r.inputs, dict) else {}
        if inputs.get("kind") != "Secret":
            continue
        for name, text in kubeconfigs.items():
            if inputs["metadata"]["name"] == f"multikueue-{name}":
                assert inputs["stringData"] == {fleet_plan.KUBECONFIG_KEY: "[secret]"}
                inputs["stringData"] = {fleet_plan.KUBECONFIG_KEY: text}
                filled.add(name)
    assert filled == set(kubeconfigs), filled


def as_manager(w: SchedCluster, kubeconfig: str, path: str) -> int:
    """GET ``path`` on the worker with the manager's credential, verifying the server with its CA: the status."""
    import yaml

    doc = yaml.safe_load(kubeconfig)
    ca = base64.b64decode(doc["clusters"][0]["cluster"]["certificate-authority-data"]).decode()
    ctx = ssl.create_default_context(cadata=ca)
    conn = http.client.HTTPSConnection("127.0.0.1", w.cp.port, context=ctx, timeout=30)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {doc['users'][0]['user']['token']}"})
        return conn.getresponse().status
    finally:
        conn.close()


def start_all(stack: contextlib.ExitStack, clusters: list[SchedCluster]) -> None:
    """Start the clusters side by side (each waits on its own servers); each started one is stopped at the end."""

    def start(c: SchedCluster) -> SchedCluster:
        return stack.enter_context(c)

    with ThreadPoolExecutor(len(clusters)) as pool:
        for f in [pool.submit(start, c) for c in clusters]:
            f.result()


def stop_api_server(c: SchedCluster) -> None:
    """The worker's API server goes away (its etcd, Kueue and nodes stay): what the manager sees of a lost cluster."""
    proc = c.cp.procs["kube-apiserver"]
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


class LostJobReset:
    """The manager's rendered CronJob fleet-lost-job-reset, run as its pod would run (ADAPTATIONS "lost-worker
    reset"): its container's command and env from the synth, in-cluster credentials of its rendered ServiceAccount (a
    TokenRequest token, the server's CA), so every read and patch is refused unless the rendered Roles grant it."""

    def __init__(self, manager: SchedCluster) -> None:
        (cron,) = [
            r.inputs
            for r in manager.rendering.resources
            if isinstance(r.inputs, dict) and r.inputs.get("kind") == "CronJob"
        ]
        pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        (self.container,) = pod["containers"]
        sa, ns = pod["serviceAccountName"], cron["metadata"]["namespace"]
        code, body = manager.cp.request(
            "POST",
            f"/api/v1/namespaces/{ns}/serviceaccounts/{sa}/token",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}},
        )
        assert code == 201, body[:300]
        self.dir = Path(tempfile.mkdtemp(prefix="gp-lost-job-reset-"))
        (self.dir / "token").write_text(json.loads(body)["status"]["token"])
        (self.dir / "ca.crt").write_bytes((manager.cp.dir / "certs" / "apiserver.crt").read_bytes())
        self.port = manager.cp.port

    def run(self) -> str:
        """One run: its output (it exits 0, or the test fails with what it said)."""
        command = self.container["command"]
        assert command[0] == "python3"  # the image's interpreter; here the test's, as minimal (standard library)
        env = {e["name"]: e["value"] for e in self.container["env"]}
        env |= {
            "KUBERNETES_SERVICE_HOST": "127.0.0.1",
            "KUBERNETES_SERVICE_PORT": str(self.port),
            "SERVICE_ACCOUNT_DIR": str(self.dir),
        }
        proc = subprocess.run([sys.executable, *command[1:]], env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout


def test_a_fleet_dispatches_to_the_worker_with_room_mirrors_status_and_moves_a_lost_workers_jobs(monkeypatch):
    monkeypatch.chdir(ROOT)  # the manager's stack file reads its workers' beside it (stacks/)
    config = stack_file_config(MANAGER)
    config["gpu-platform:fleet"] = {
        **copy.deepcopy(config["gpu-platform:fleet"]),
        "workerLostTimeout": f"{LOST_TIMEOUT}s",
    }
    with contextlib.ExitStack() as stack:
        workers = {name: SchedCluster(s, stack_file_config(s), root_ca=True) for name, s in WORKERS.items()}
        start_all(stack, list(workers.values()))
        kubeconfigs = {name: worker_kubeconfig(w) for name, w in workers.items()}
        manager = SchedCluster(MANAGER, config, nodes=False)
        fill_credentials(manager, kubeconfigs)
        start_all(stack, [manager])
        eks, gke = workers["eks-h100"], workers["gke-l4"]

        # 1. connected with exactly the worker's grant
        for name in WORKERS:
            wait(
                f"MultiKueueCluster {name} Active",
                lambda name=name: is_true(get(manager, KUEUE_API, "MultiKueueCluster", "", name), "Active"),
            )
        for tenant in ("research", "evals"):
            wait(f"ClusterQueue {tenant} active", lambda t=tenant: manager._cq_active(t))
        assert as_manager(gke, kubeconfigs["gke-l4"], "/apis/batch/v1/jobs") == 200
        assert as_manager(gke, kubeconfigs["gke-l4"], "/api/v1/secrets") == 403
        assert as_manager(gke, kubeconfigs["gke-l4"], "/api/v1/pods") == 403

        # 2. each job to the worker with room
        assert manager.create([job("hold", "research", 8, 1, pool="l4")]) == []
        wait("hold running on fleet-gke", lambda: len(running_pods(gke, "research", "hold")) == 8)
        assert manager.create([job("move", "research", 4, 1)]) == []
        wait("move running on fleet-eks", lambda: len(running_pods(eks, "research", "move")) == 4)
        for name, worker in (("move", "eks-h100"), ("hold", "gke-l4")):
            wait(
                f"the manager's Workload of {name} admitted through {worker}",
                lambda n=name, w=worker: workload(manager, "research", f"job-{n}-")["status"].get("clusterName") == w,
            )
        wait(  # the other worker's copy, if it got one, is deleted once one admitted it
            "no copy of move left on fleet-gke",
            lambda: (
                not [j for j in gke.api.get("batch/v1", "Job", "research")["items"] if j["metadata"]["name"] == "move"]
            ),
        )
        wait(
            "move's progress on the manager",
            lambda: get(manager, "batch/v1", "Job", "research", "move")["status"].get("active") == 4,
        )
        assert get(manager, "batch/v1", "Job", "research", "move")["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
        # a JobSet of research goes the same way (fleet-gke is full): admitted on fleet-eks, its (played) progress
        # mirrored to the manager's JobSet
        assert manager.create([jobset("shard", "research", 1)]) == []
        wait(
            "the manager's JobSet Workload admitted through eks-h100",
            lambda: workload(manager, "research", "jobset-shard-")["status"].get("clusterName") == "eks-h100",
        )
        wait(
            "the JobSet admitted on fleet-eks", lambda: is_true(workload(eks, "research", "jobset-shard-"), "Admitted")
        )
        run_jobset(eks, "research", "shard")
        wait("shard's progress on the manager", lambda: replicated_active(manager, "research", "shard") == [1])
        assert manager.api.get("v1", "Pod", "research")["items"] == []  # nothing runs on the manager

        # 3. completion on the worker reaches the manager
        for pod in running_pods(gke, "research", "hold"):
            complete_pod(gke, pod)
        done = wait(
            "hold's completion mirrored to the manager",
            lambda: next(
                (j for j in [get(manager, "batch/v1", "Job", "research", "hold")] if is_true(j, "Complete")), None
            ),
        )
        assert done["status"]["succeeded"] == 8
        wait(
            "the manager's Workload of hold finished",
            lambda: is_true(workload(manager, "research", "job-hold-"), "Finished"),
        )

        # 4. a JobSet: dispatched, admitted on its one worker, its (played) terminal status mirrored
        assert manager.create([jobset("sweep", "evals", 1)]) == []
        wait("the JobSet admitted on fleet-gke", lambda: is_true(workload(gke, "evals", "jobset-sweep-"), "Admitted"))
        wait(
            "the manager's JobSet Workload admitted through gke-l4",
            lambda: workload(manager, "evals", "jobset-sweep-")["status"].get("clusterName") == "gke-l4",
        )
        finish_jobset(gke, "evals", "sweep")
        wait(
            "the JobSet's completion mirrored to the manager",
            lambda: (
                get(manager, "jobset.x-k8s.io/v1alpha2", "JobSet", "evals", "sweep")
                .get("status", {})
                .get("terminalState")
                == "Completed"
            ),
        )

        # 5. a lost worker: its workload stays admitted for the worker-lost timeout, then Kueue evicts it on the manager
        reset = LostJobReset(manager)
        stop_api_server(eks)
        stopped = time.monotonic()
        # before the timeout the reset changes nothing: the workloads are still admitted through the lost worker
        assert reset.run() == ""
        for prefix in ("job-move-", "jobset-shard-"):
            assert workload(manager, "research", prefix)["status"].get("clusterName") == "eks-h100"
            assert not is_true(workload(manager, "research", prefix), "Evicted")
        assert get(manager, "batch/v1", "Job", "research", "move")["status"].get("active") == 4
        assert replicated_active(manager, "research", "shard") == [1]
        evicted = wait(
            "move evicted on the manager",
            lambda: cond(w, "Evicted") if is_true(w := workload(manager, "research", "job-move-"), "Evicted") else None,
            timeout=LOST_TIMEOUT + 90,
        )
        waited = time.monotonic() - stopped
        assert waited >= LOST_TIMEOUT, f"evicted {waited:.0f}s after the worker was lost, before the timeout"
        assert evicted["reason"] == "AdmissionCheck" and "Admitting remote lost" in evicted["message"], evicted
        # ... but Kueue v0.19.2 finishes a batch/Job's eviction only once the Job is inactive, and the manager's Job
        # keeps the lost worker's last status (active 4: nothing else writes a MultiKueue-managed Job's status), so on
        # its own the workload keeps its quota and goes nowhere
        wait(
            "shard evicted on the manager",
            lambda: is_true(workload(manager, "research", "jobset-shard-"), "Evicted"),
            timeout=60,
        )
        time.sleep(5)
        for prefix in ("job-move-", "jobset-shard-"):
            assert is_true(workload(manager, "research", prefix), "QuotaReserved")
        assert get(manager, "batch/v1", "Job", "research", "move")["status"].get("active") == 4
        assert replicated_active(manager, "research", "shard") == [1]
        assert running_pods(gke, "research", "move") == []
        # the platform's reset (one run of the manager's CronJob): the Job says no pod is active any more; Kueue then
        # ends the eviction, requeues the workload and dispatches it to the worker with room
        said = sorted(reset.run().splitlines())
        assert [line.split(":")[0] for line in said] == ["research/Job/move", "research/JobSet/shard"], said
        assert all("its worker was lost" in line for line in said), said
        status = get(manager, "batch/v1", "Job", "research", "move")["status"]
        assert not status.get("active") and not status.get("ready"), status
        assert replicated_active(manager, "research", "shard") == [0]
        wait("move running on fleet-gke", lambda: len(running_pods(gke, "research", "move")) == 4, timeout=120)
        wait(
            "the manager's Workload of move admitted through gke-l4",
            lambda: workload(manager, "research", "job-move-")["status"].get("clusterName") == "gke-l4",
        )
        wait(
            "move's progress on fleet-gke mirrored to the manager",
            lambda: get(manager, "batch/v1", "Job", "research", "move")["status"].get("active") == 4,
        )
        wait(
            "the manager's JobSet Workload of shard admitted through gke-l4",
            lambda: workload(manager, "research", "jobset-shard-")["status"].get("clusterName") == "gke-l4",
        )
        wait("shard admitted on fleet-gke", lambda: is_true(workload(gke, "research", "jobset-shard-"), "Admitted"))
        # a second run changes nothing: the jobs run on a live worker (admitted, not evicted)
        assert reset.run() == ""
        assert get(manager, "batch/v1", "Job", "research", "move")["status"].get("active") == 4
        assert workload(manager, "research", "job-move-")["status"].get("clusterName") == "gke-l4"
