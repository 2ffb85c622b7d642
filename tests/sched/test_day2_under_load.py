"""Day 2 under load (issue 38.4): with workloads admitted by the real Kueue controller and running on kwok nodes, stack
changes go through the real engine (preview first, then up), and what is evicted, requeued or kept is what the
preview and docs/day2.md say; nothing that holds running work is deleted unless the stack declares it.

The stack is `local` (an existing cluster) reshaped: three pools (`train`: 2 nodes x 4 L4, `infer`: 1 node x 2 L4,
`shared`: 1 L4 time-sliced x 2), three Kueue tenants in the default cohort (`research` 4 GPUs of train, `serving` 2
of train, `notebooks` 2 of infer and 1 shared GPU), the GPU Operator and Kueue from upstream/charts, deployed by the
engine with the real Kueue controller answering Kueue's webhooks (deployed.py). Then, one at a time:

a. research's quota shrinks below what it has admitted;
b. serving, which runs work, leaves the stack file: refused while protected, then the documented steps;
c. the pool `infer` is renamed `inference`;
d. the shared pool's time-slicing goes from 2 to 4 replicas.

For each, the preview's operations (by URN), what the up started, finished and failed, and what happened to every
workload (its Kueue conditions, its pods by uid) are recorded in ``RECORD`` (``pytest -s`` prints it) and checked
against docs/day2.md (each check names the section). A step that raises ends the run; the checks of what it reached
still run. Every server's log is read for a dial outside 127.0.0.0/8.
"""

from __future__ import annotations

import copy
import json
import re
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

import paths  # noqa: F401  (tests/cluster and tests/engine on the path)
import pytest
from cluster_stacks import stack_file_config
from deployed import Change, DeployedCluster
from loop import KUEUE_API
from probes import RESTRICTED_CONTAINER

STACK = "day2"


def base_config() -> dict[str, Any]:
    cfg = stack_file_config("local")
    cfg.pop("gpu-platform:cluster")
    cfg["gpu-platform:addons"] = {"gpuOperator": True, "dcgm": False, "kueue": True, "volcano": False}
    cfg["gpu-platform:monitoring"] = {"prometheus": "none"}
    cfg["gpu-platform:nodePools"] = [
        {"name": "train", "gpu": {"model": "L4", "perNode": 4}, "maxNodes": 2},
        {"name": "infer", "gpu": {"model": "L4", "perNode": 2}, "maxNodes": 1},
        {
            "name": "shared",
            "gpu": {"model": "L4", "perNode": 1},
            "maxNodes": 1,
            "sharing": {"strategy": "time-slicing", "replicas": 2},
        },
    ]
    cfg["gpu-platform:tenants"] = [
        {"name": "research", "gpuQuota": {"train": 4}},
        {"name": "serving", "gpuQuota": {"train": 2}},
        {"name": "notebooks", "gpuQuota": {"infer": 2, "shared": 1}},
    ]
    return cfg


def shrunk(cfg: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(cfg)
    out["gpu-platform:tenants"][0]["gpuQuota"]["train"] = 2
    return out


def without_serving(cfg: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(cfg)
    out["gpu-platform:tenants"] = [t for t in out["gpu-platform:tenants"] if t["name"] != "serving"]
    return out


def unprotected(cfg: dict[str, Any]) -> dict[str, Any]:
    return {**copy.deepcopy(cfg), "gpu-platform:protect": {"tenantNamespaces": False}}


def renamed(cfg: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(cfg)
    out.pop("gpu-platform:protect", None)  # protection back on after the removal (docs/day2.md)
    for pool in out["gpu-platform:nodePools"]:
        if pool["name"] == "infer":
            pool["name"] = "inference"
    for tenant in out["gpu-platform:tenants"]:
        if "infer" in tenant["gpuQuota"]:
            tenant["gpuQuota"]["inference"] = tenant["gpuQuota"].pop("infer")
    return out


def reshared(cfg: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(cfg)
    for pool in out["gpu-platform:nodePools"]:
        if pool["name"] == "shared":
            pool["sharing"]["replicas"] = 4
    return out


# ------------------------------------------------------------------------------------------- workloads


def job(c: DeployedCluster, namespace: str, name: str, units: int, pool: str) -> dict[str, Any]:
    """A Job of one pod asking ``units`` of ``pool``'s GPU units through the tenant's LocalQueue, tolerating the
    pool's taints and, on an opt-in shared pool, its flavor's (docs/concepts/scheduling.md)."""
    decided = c.plan.pools[pool]
    taints = [*decided.taints, *((decided.kueue_flavor_spec or {}).get("nodeTaints") or ())]
    tolerations = [{"operator": "Equal", **{k: v for k, v in t.items() if v is not None}} for t in taints]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": {"kueue.x-k8s.io/queue-name": "default"}},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "nodeSelector": {"gpu-platform/pool": pool},
                    "tolerations": tolerations,
                    "containers": [
                        {
                            "name": "main",
                            "image": "registry.example/train:1",
                            "resources": {
                                "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": str(units)},
                                "limits": {"memory": "1Gi", "nvidia.com/gpu": str(units)},
                            },
                            "securityContext": {**RESTRICTED_CONTAINER, "runAsUser": 1000},
                        }
                    ],
                }
            },
        },
    }


@dataclass(frozen=True)
class Seen:
    """One job as a user sees it: its Kueue Workload's conditions (type -> status/reason), the flavors it was
    admitted on, and its pods (uid, phase, node)."""

    exists: bool
    conditions: dict[str, str] = field(default_factory=dict)
    flavors: tuple[str, ...] = ()
    pods: tuple[tuple[str, str, str], ...] = ()
    why: str = ""  # why a pod does not run: the Job's last FailedCreate event, or a pod's Unschedulable message

    @property
    def admitted(self) -> bool:
        return self.conditions.get("Admitted", "").startswith("True")

    @property
    def running(self) -> tuple[str, ...]:
        """uids of the pods bound to a node and running."""
        return tuple(uid for uid, phase, node in self.pods if phase == "Running" and node)

    def __str__(self) -> str:
        if not self.exists:
            return "gone"
        conds = ", ".join(f"{k}={v}" for k, v in sorted(self.conditions.items()))
        pods = ", ".join(f"{uid[:8]} {phase} on {node or '-'}" for uid, phase, node in self.pods)
        why = f" ({self.why[:200]})" if self.why else ""
        return f"[{conds}] flavors={','.join(self.flavors) or '-'} pods=[{pods}]{why}"


def seen(c: DeployedCluster, namespace: str, name: str) -> Seen:
    cp = c.cp
    assert cp is not None
    status, body = cp.request("GET", f"/apis/{KUEUE_API}/namespaces/{namespace}/workloads")
    workloads = json.loads(body)["items"] if status == 200 else []
    wl = next(
        (
            w
            for w in workloads
            if any(o["kind"] == "Job" and o["name"] == name for o in w["metadata"].get("ownerReferences", []))
        ),
        None,
    )
    status, body = cp.request("GET", f"/api/v1/namespaces/{namespace}/pods?labelSelector=job-name%3D{name}")
    pods = json.loads(body)["items"] if status == 200 else []
    why = ""
    status, body = cp.request(
        "GET",
        f"/api/v1/namespaces/{namespace}/events?fieldSelector=involvedObject.kind%3DJob,involvedObject.name%3D{name}",
    )
    for e in json.loads(body)["items"] if status == 200 else []:
        if e.get("reason") == "FailedCreate":
            why = f"job FailedCreate: {e.get('message', '')}"
    for p in pods:  # a pod that exists says more than an earlier refusal of one
        cond = next((c for c in p.get("status", {}).get("conditions", []) if c["type"] == "PodScheduled"), {})
        if cond.get("status") == "False":
            why = f"pod {cond.get('reason')}: {cond.get('message', '')}"
    if wl is None:
        return Seen(exists=False, pods=_pods(pods), why=why)
    conditions = {
        c["type"]: f"{c['status']}/{c.get('reason', '')}" for c in wl.get("status", {}).get("conditions", []) or []
    }
    admission = wl.get("status", {}).get("admission") or {}
    flavors = tuple(
        sorted({f for ps in admission.get("podSetAssignments", []) for f in (ps.get("flavors") or {}).values()})
    )
    return Seen(True, conditions, flavors, _pods(pods), why)


def _pods(pods: list[dict[str, Any]]) -> tuple[tuple[str, str, str], ...]:
    return tuple(
        sorted(
            (p["metadata"]["uid"], p.get("status", {}).get("phase", ""), p["spec"].get("nodeName") or "")
            for p in pods
            if not p["metadata"].get("deletionTimestamp")
        )
    )


JOBS = {  # name -> (namespace, units, pool): what runs before the first change (n4 waits for notebooks' quota)
    "r1": ("research", 2, "train"),
    "r2": ("research", 2, "train"),
    "s1": ("serving", 1, "train"),
    "n1": ("notebooks", 1, "infer"),
    "n2": ("notebooks", 1, "shared"),
    "n3": ("notebooks", 1, "shared"),
    "n4": ("notebooks", 1, "shared"),
    # submitted during the changes
    "s2": ("serving", 1, "train"),
    "n5": ("notebooks", 1, "inference"),
    "n6": ("notebooks", 1, "inference"),
}


def snapshot(c: DeployedCluster, names) -> dict[str, Seen]:
    return {n: seen(c, JOBS[n][0], n) for n in names}


def settle(c: DeployedCluster, names, until, timeout: float = 60, hold: float = 2.0) -> dict[str, Seen]:
    """Poll the jobs until ``until(snapshot)`` has held for ``hold`` seconds (the snapshot then), or time out (the
    last snapshot: the assertions say what differs)."""
    deadline = time.monotonic() + timeout
    since = None
    last: dict[str, Seen] = {}
    while time.monotonic() < deadline:
        last = snapshot(c, names)
        if until(last):
            since = since or time.monotonic()
            if time.monotonic() - since >= hold:
                return last
        else:
            since = None
        time.sleep(0.5)
    return last


def runs(s: dict[str, Seen], *names: str) -> bool:
    return all(s[n].admitted and len(s[n].running) == 1 for n in names)


SUBMITTED: list[str] = []


def submit(c: DeployedCluster, *names: str) -> None:
    refusals = c.create([job(c, JOBS[n][0], n, JOBS[n][1], JOBS[n][2]) for n in names])
    assert not refusals, refusals
    SUBMITTED.extend(names)


def still_running(before: dict[str, Seen]):
    """``until`` for ``settle``: every job that ran before still runs (on the same pod)."""
    return lambda s: all(s[n].running == b.running for n, b in before.items() if b.admitted and b.running)


# ------------------------------------------------------------------------------------------- the run

RECORD: dict[str, Any] = {}


def deploy_and_change() -> None:
    """The whole run, once: deploy, load, the four changes; everything seen goes to ``RECORD``."""
    started = time.monotonic()
    with DeployedCluster(STACK, base_config()) as c:
        RECORD["first_up_s"] = c.first_up_s
        try:
            _run(c)
        except Exception:  # the checks of the steps after the one that failed report it
            RECORD["error"] = traceback.format_exc()
        RECORD["dials"] = c.cp.dials_outside_loopback()  # type: ignore[union-attr]
    RECORD["wall_s"] = time.monotonic() - started


def step(c: DeployedCluster, key: str, config: dict[str, Any], until=None, before_up=None, timeout=20) -> None:
    """One change: every submitted job before (``<key>_before``), the preview and up (``<key>``), every job after
    (``<key>_after``: once ``until`` holds, by default once every job that ran before still runs)."""
    before = snapshot(c, SUBMITTED)
    RECORD[f"{key}_before"] = before
    RECORD[key] = c.change(config, before_up=before_up)
    RECORD[f"{key}_after"] = settle(c, SUBMITTED, until or still_running(before), timeout=timeout, hold=3)


def _run(c: DeployedCluster) -> None:
    base = base_config()
    # load: r1, r2 (research, 2 + 2 of train), s1 (serving, 1 of train), n1 (notebooks, 1 of infer), n2, n3 (1 unit
    # each of shared: notebooks' 2 units) admitted and running; n4 waits for notebooks' quota
    running = ("r1", "r2", "s1", "n1", "n2", "n3")
    submit(c, *running)
    settle(c, SUBMITTED, lambda s: runs(s, *running))
    submit(c, "n4")  # after n2 and n3 hold the units: submitted together, which of the three Kueue admits first is
    # a matter of their creation timestamps' second, and the record would name the wrong one waiting
    RECORD["load"] = settle(c, SUBMITTED, lambda s: runs(s, *running) and not s["n4"].admitted)

    # (a) research's quota on train 4 -> 2 while it runs 2 + 2; then a cohort member asks for its own quota
    step(c, "a", shrunk(base))
    submit(c, "s2")
    RECORD["a_reclaim"] = settle(
        c, SUBMITTED, lambda s: runs(s, "s1", "s2") and runs(s, "r1") != runs(s, "r2"), timeout=60
    )

    # (b) serving leaves the stack file while s1 and s2 run: refused (protected), nothing deleted
    step(c, "b_refused", without_serving(shrunk(base)))
    RECORD["b_refused_objects"] = tenant_objects(c, "serving")
    # the documented steps: protect off while serving is still in the file, up; then remove it, up
    step(c, "b_unprotect", unprotected(shrunk(base)))
    step(
        c,
        "b_removed",
        unprotected(without_serving(shrunk(base))),
        until=lambda s: not s["s1"].exists and not s["s2"].exists and (runs(s, "r1") or runs(s, "r2")),
    )
    RECORD["b_removed_objects"] = tenant_objects(c, "serving")

    # (c) infer -> inference; the operator relabels the pool's node between preview and up (an existing cluster)
    c.node_names["inference"] = "infer"
    step(c, "c", renamed(without_serving(shrunk(base))), before_up=c.advertise)
    RECORD["c_flavors"] = sorted(
        f["metadata"]["name"]
        for f in c.api.get(KUEUE_API, "ResourceFlavor")["items"]  # type: ignore[union-attr]
    )
    # n5 first and running, then n6: submitted together, which of the two gets the last pod the namespace quota
    # allows is the order the job controller creates their pods in (seen both ways under load)
    submit(c, "n5")
    settle(c, SUBMITTED, lambda s: runs(s, "n5"))
    submit(c, "n6")
    RECORD["c_more"] = settle(c, SUBMITTED, lambda s: s["n5"].admitted and s["n6"].admitted and s["n6"].why)
    RECORD["c_reserved"] = c.quota_in_use().get("notebooks", {})

    # (d) shared: time-slicing 2 -> 4 replicas; then the device plugin, restarted, advertises 4 units per GPU
    step(c, "d", reshared(renamed(without_serving(shrunk(base)))))
    c.advertise()
    RECORD["d_readvertised"] = settle(c, SUBMITTED, lambda s: runs(s, "n2", "n3", "n4"), timeout=60)
    # notebooks' ResourceQuota grew with the units: the job controller retries n6's pod (its back-off up to a minute),
    # and kube-scheduler finds no room for it on the renamed pool's node, which n1 and n5 fill
    RECORD["d_n6"] = settle(c, ["n6"], lambda s: s["n6"].why.startswith("pod Unschedulable"), timeout=90)


def tenant_objects(c: DeployedCluster, tenant: str) -> dict[str, bool]:
    """Whether the tenant's namespace, quota, LimitRange, ClusterQueue and LocalQueue exist (and are not being
    deleted)."""
    cp = c.cp
    assert cp is not None
    where = {
        "namespace": f"/api/v1/namespaces/{tenant}",
        "gpu-quota": f"/api/v1/namespaces/{tenant}/resourcequotas/gpu-quota",
        "defaults": f"/api/v1/namespaces/{tenant}/limitranges/container-defaults",
        "cluster-queue": f"/apis/{KUEUE_API}/clusterqueues/{tenant}",
        "local-queue": f"/apis/{KUEUE_API}/namespaces/{tenant}/localqueues/default",
    }
    out = {}
    for key, path in where.items():
        status, body = cp.request("GET", path)
        out[key] = status == 200 and not json.loads(body)["metadata"].get("deletionTimestamp")
    return out


def short(ops: dict[str, list[str]]) -> dict[str, list[str]]:
    """Operation -> the resource names (the URNs' last part) it touched, sorted."""
    return {op: sorted(u.rsplit("::", 1)[1] for u in urns) for op, urns in ops.items()}


def record(key: str) -> Any:
    """A step's record; a step the run did not reach fails its check."""
    if key not in RECORD:
        pytest.fail(f"the run did not reach {key}")
    return RECORD[key]


SERVING = {"serving-namespace", "serving-gpu-quota", "serving-defaults", "serving-cluster-queue", "serving-local-queue"}


# ------------------------------------------------------------------------------------------- the checks
# One test item runs them all (test_day2_under_load): the run takes minutes and must happen once, and pytest-xdist
# spreads a module's tests over its workers (its loadgroup grouping does not work with pytest 9's node ids), each of
# which would deploy again. Every check runs and the test reports each one that fails.

CHECKS: list = []


def check(fn):
    CHECKS.append(fn)
    return fn


@check
def the_load_is_admitted_and_running():
    load = record("load")
    assert all(runs(load, n) for n in ("r1", "r2", "s1", "n1", "n2", "n3")), _show(load)
    assert not load["n4"].admitted and load["n4"].conditions["QuotaReserved"] == "False/Pending", _show(load)


@check
def every_up_did_what_its_preview_said():
    """The operations the engine started in each up are the ones its preview planned (the refused removal's
    included), and each finished except the protected deletes."""
    for key in ("a", "b_refused", "b_unprotect", "b_removed", "c", "d"):
        change: Change = record(key)
        assert short(change.up) == short(change.preview), key
        if key != "b_refused":
            assert not change.error and not change.preview_error, (key, change.error[-500:])
            assert short(change.done) == short(change.preview), key


@check
def a_shrunk_quota_updates_the_queue_and_evicts_nothing():
    """docs/day2.md "Shrink a quota": the preview updates the tenant's ClusterQueue, the cost record and the
    ResourceQuotas whose ceiling (Kueue's maximum capacity) moves: on train research 4 + serving's 2 = 6 becomes
    2 + 2 = 4, and serving 2 + research's 4 = 6 becomes 2 + 2 = 4; notebooks has no quota on train. Its admitted
    workloads keep running on the same pods, over the new quota."""
    a = record("a")
    assert short(a.preview) == {
        "update": ["gpu-platform-cost", "research-cluster-queue", "research-gpu-quota", "serving-gpu-quota"]
    }
    after = record("a_after")
    assert still_running(record("a_before"))(after), _show(after)


@check
def what_a_shrunk_tenant_runs_over_its_quota_is_reclaimed_by_the_cohort():
    """docs/day2.md "Shrink a quota": what research runs beyond its new quota is borrowed from the cohort; serving
    asking for its own quota evicts one of research's jobs (Preempted, InCohortReclamation), which is requeued."""
    s = record("a_reclaim")
    evicted = [n for n in ("r1", "r2") if not s[n].admitted]
    kept = [n for n in ("r1", "r2") if s[n].admitted]
    assert len(evicted) == 1 and len(kept) == 1, _show(s)
    gone = s[evicted[0]]
    assert gone.conditions["Evicted"] == "True/Preempted", gone
    assert gone.conditions["Preempted"] == "True/InCohortReclamation", gone
    assert gone.conditions["Requeued"] == "True/Preempted", gone
    assert gone.conditions["QuotaReserved"] == "False/Pending" and not gone.pods, gone
    assert s[kept[0]].running == record("a_before")[kept[0]].running, s[kept[0]]
    assert runs(s, "s1", "s2"), _show(s)


@check
def removing_a_tenant_that_runs_work_is_refused_and_deletes_nothing():
    """docs/day2.md "Add or remove a tenant": preview and up both fail on the protected objects; nothing of the
    tenant is deleted, its queues included, and its workloads keep running (the up still updates the cost record and
    the ResourceQuota of research, whose ceiling on train no longer counts serving's loan: 2 + 2 becomes 2)."""
    b = record("b_refused")
    for text in (b.preview_error, b.error):
        refused = set(re.findall(r'resource "urn:[^"]*::([^"]+)" cannot be deleted because it is protected', text))
        # the engine deletes the LocalQueue, the quota and the LimitRange first: all three refused, the queue too
        assert refused == {"serving-local-queue", "serving-gpu-quota", "serving-defaults"}, text[-800:]
    assert set(short(b.preview).get("delete", [])) <= SERVING
    assert short(b.done) == {"update": ["gpu-platform-cost", "research-gpu-quota"]}
    assert set(short(b.failed)["delete"]) == set(short(b.preview)["delete"])
    assert record("b_refused_objects") == dict.fromkeys(
        ("namespace", "gpu-quota", "defaults", "cluster-queue", "local-queue"), True
    )
    after = record("b_refused_after")
    assert still_running(record("b_refused_before"))(after) and runs(after, "s1", "s2"), _show(after)


@check
def the_documented_removal_deletes_the_tenant_and_only_what_it_ran():
    """docs/day2.md "Add or remove a tenant": protection off (no resource deleted), then the removal deletes exactly
    the tenant's five objects; the work still running in its namespace goes with it (the stack declared it), Kueue
    lets the ClusterQueue go once its workloads are gone, and every other tenant's job keeps its pod."""
    assert "delete" not in record("b_unprotect").preview
    removed = record("b_removed")
    assert set(short(removed.done)["delete"]) == SERVING
    assert record("b_removed_objects") == dict.fromkeys(
        ("namespace", "gpu-quota", "defaults", "cluster-queue", "local-queue"), False
    )
    before, after = record("b_removed_before"), record("b_removed_after")
    assert not after["s1"].exists and not after["s2"].exists and not after["s1"].pods, _show(after)
    others = {n: b for n, b in before.items() if JOBS[n][0] != "serving"}
    assert still_running(others)(after), _show(after)


@check
def renaming_a_pool_replaces_its_flavor_and_keeps_its_running_work():
    """docs/day2.md "Rename a pool": the preview creates the new flavor, deletes the old one and updates the queues
    naming it; Kueue lets the old flavor go although a workload admitted on it still runs, and that workload keeps
    running on its pod, admitted on a flavor that no longer exists."""
    c = record("c")
    assert short(c.preview) == {
        "create": ["flavor-inference"],
        "delete": ["flavor-infer"],
        "update": ["gpu-platform-cost", "notebooks-cluster-queue"],
    }
    assert record("c_flavors") == ["default-flavor", "inference", "shared", "train"]
    after = record("c_after")
    assert after["n1"].flavors == ("infer",) and after["n1"].running == record("c_before")["n1"].running, after["n1"]
    assert still_running(record("c_before"))(after), _show(after)


@check
def after_a_rename_kueue_no_longer_counts_the_old_pools_running_work():
    """docs/day2.md "Rename a pool": the GPU n1 still holds is counted against no flavor of notebooks' queue, so
    Kueue admits notebooks' whole quota on the renamed pool again (n5 and n6); the namespace quota, which counts
    pods, refuses n6's pod: it stays admitted without pods (until waitForPodsReady evicts it)."""
    s = record("c_more")
    assert runs(s, "n1", "n5"), _show(s)
    assert s["n6"].admitted and s["n6"].flavors == ("inference",) and not s["n6"].pods, s["n6"]
    assert "exceeded quota: gpu-quota" in s["n6"].why, s["n6"]
    reserved = record("c_reserved")  # notebooks' ClusterQueue status: n5 and n6 on inference; n1's GPU nowhere
    assert reserved.get("inference", {}).get("nvidia.com/gpu") == 2 and "infer" not in reserved, reserved


@check
def changing_a_pools_sharing_keeps_its_work_and_grows_the_units():
    """docs/day2.md "Change a pool's sharing": the preview updates the device plugin's config, the tenant's
    ClusterQueue and quota (in units); nothing is evicted, and once the restarted device plugin advertises 4 units
    per GPU the job that waited for notebooks' quota is admitted and runs."""
    d = record("d")
    assert short(d.preview) == {"update": ["device-plugin-config", "notebooks-cluster-queue", "notebooks-gpu-quota"]}
    assert still_running(record("d_before"))(record("d_after")), _show(record("d_after"))
    s = record("d_readvertised")
    assert runs(s, "n2", "n3", "n4") and s["n2"].running == record("d_before")["n2"].running, _show(s)


@check
def a_workload_over_admitted_after_the_rename_waits_in_kube_scheduler_once_the_quota_allows_its_pod():
    """docs/day2.md "Rename a pool": where the namespace quota allows the pod, kube-scheduler leaves it Pending on the
    full node (n6 once the sharing change raised notebooks' quota)."""
    n6 = record("d_n6")["n6"]
    assert n6.admitted and n6.pods and not n6.running, n6
    assert n6.why.startswith("pod Unschedulable") and "Insufficient nvidia.com/gpu" in n6.why, n6


@check
def nothing_that_holds_running_work_was_deleted_undeclared():
    """Across the changes the engine deleted only the renamed pool's flavor and, in the declared removal, serving's
    objects; no job that ran before a change lost its pod in that change, except serving's in its removal."""
    deleted = {key: short(record(key).done).get("delete", []) for key in ("a", "b_refused", "b_unprotect", "c", "d")}
    assert deleted == {"a": [], "b_refused": [], "b_unprotect": [], "c": ["flavor-infer"], "d": []}
    for key in ("a", "b_refused", "b_unprotect", "c", "d"):
        assert still_running(record(f"{key}_before"))(record(f"{key}_after")), (key, _show(record(f"{key}_after")))


@check
def no_server_dialled_outside_loopback():
    assert record("dials") == [], record("dials")[:3]


def print_record() -> None:
    """The record, for the report (pytest -s)."""
    for key, value in RECORD.items():
        if isinstance(value, dict) and value and isinstance(next(iter(value.values())), Seen):
            print(f"{key}:\n{_show(value)}")
        elif isinstance(value, Change):
            print(f"{key}: preview {json.dumps(short(value.preview))} ({value.preview_s:.1f}s)")
            print(f"    up started {json.dumps(short(value.up))} ({value.up_s:.1f}s)")
            print(f"    up done {json.dumps(short(value.done))} failed {json.dumps(short(value.failed))}")
            for what, text in (("preview", value.preview_error), ("up", value.error)):
                refused = re.findall(r'resource "(urn:[^"]+)" cannot be deleted', text)
                if text:
                    print(f"    {what} failed: {sorted(set(refused)) or text[-300:]}")
        elif key != "error":
            print(f"{key}: {value}")


def test_day2_under_load():
    deploy_and_change()
    print_record()
    failures = []
    if "error" in RECORD:
        failures.append(f"the run stopped:\n{RECORD['error']}")
    for fn in CHECKS:
        try:
            fn()
        except (AssertionError, pytest.fail.Exception) as err:
            failures.append(f"{fn.__name__}: {fn.__doc__ or ''}\n{err}")
    assert not failures, f"{len(failures)} of {len(CHECKS)} checks failed:\n\n" + "\n\n".join(failures)


def _show(s: dict[str, Seen]) -> str:
    return "\n".join(f"    {n}: {v}" for n, v in s.items())
