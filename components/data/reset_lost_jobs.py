"""The fleet manager's lost-worker reset (issue 43.5): the program its CronJob runs every minute
(``components/plan/fleet_reset.py`` renders it as ``python3 -I -B -c <this file>``; standard library only, so the
pinned official Python image is all it needs). Shipped as data; the tests import it to check its rule.

Why it exists (kueue v0.19.2): when a worker stays unreachable past ``workerLostTimeout``, MultiKueue sets the
workload's admission check to Retry, "Admitting remote lost" (pkg/controller/admissionchecks/multikueue/workload.go
reconcileGroup, 6a), and the workload controller evicts the workload: Evicted, reason AdmissionCheck, message ``...
"<check>" (Admitting remote lost, ...)`` (pkg/controller/core/workload_controller.go reconcileCheckBasedEviction).
The job reconciler then suspends the manager's job but clears the workload's quota reservation only once the job is
inactive (pkg/controller/jobframework/reconciler.go, "6. handle eviction": ``if !job.IsActive()``). A MultiKueue
job's status on the manager is only ever the copy MultiKueue makes of the worker's
(pkg/controller/jobs/job/job_multikueue_adapter.go SyncJob; ``spec.managedBy`` keeps the Job controller off it), and
the worker is gone: the copy keeps the lost worker's last ``status.active`` (batch/v1 Job: IsActive is
``status.active != 0``, job_controller.go; JobSet: any ``replicatedJobsStatus[].active > 0``, jobset_controller.go),
so the workload holds its quota and goes nowhere. Upstream: kubernetes-sigs/kueue#15380 (the same stall for RayJob)
and the open kubernetes-sigs/kueue#15682.

The rule, all of it required (``reset_patch``): the workload is Evicted with reason AdmissionCheck and Kueue's own
"Admitting remote lost" as its check's message, still holds its quota reservation and is not Finished; its controller
owner is a batch/v1 Job or a JobSet with that owner's uid, ``spec.managedBy: kueue.x-k8s.io/multikueue`` and
``spec.suspend: true`` (Kueue has stopped it); the copy still says pods are active or ready. Only then is the status
patched, with a JSON patch whose ``test`` of the resourceVersion makes it apply to exactly the object that was judged
(anything written in between fails it, and the next run judges again). Any other eviction (preemption, a worker that
is still reachable, a deactivation) is left to Kueue: there the worker's own copy is suspended and MultiKueue mirrors
its inactive status back (job_multikueue_adapter.go determineStatusUpdate).

What it does not decide: that the job may run elsewhere while the lost worker's pods might still run is Kueue's
decision (``workerLostTimeout``); the reset only lets Kueue carry it out. Should the worker come back in the minute
between the eviction and a run, the reset releases the quota before the worker's copy has stopped (Kueue would have
waited for it), and MultiKueue then deletes that copy (workload.go reconcileGroup, 2: no quota, remotes removed).
"""

from __future__ import annotations

import json
import os
import ssl
import sys
import urllib.error
import urllib.request
from typing import Any

MULTIKUEUE = "kueue.x-k8s.io/multikueue"
# the start of the check's message as the eviction message quotes it: ``"<check>" (Admitting remote lost, Previously:
# "Ready")`` (multikueue/workload.go updateACS appends ``, Previously: <state>``; workload_controller.go
# buildAdmissionChecksMessage puts each check's message in parentheses after its quoted name)
LOST = '" (Admitting remote lost, '

WORKLOADS = "/apis/kueue.x-k8s.io/v1beta2/namespaces/{ns}/workloads"
# (apiVersion, kind) of an owner -> its collection path; what the fleet dispatches, in the manager's Kueue's API
KINDS = {
    ("batch/v1", "Job"): "/apis/batch/v1/namespaces/{ns}/jobs",
    ("jobset.x-k8s.io/v1alpha2", "JobSet"): "/apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets",
}


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in obj.get("status", {}).get("conditions") or [] if c.get("type") == kind), {})


def lost(workload: dict[str, Any]) -> bool:
    """Kueue evicted it because its worker was lost, and still waits for its job to be inactive."""
    evicted = condition(workload, "Evicted")
    return (
        evicted.get("status") == "True"
        and evicted.get("reason") == "AdmissionCheck"
        and LOST in evicted.get("message", "")
        and condition(workload, "QuotaReserved").get("status") == "True"
        and condition(workload, "Finished").get("status") != "True"
    )


def owner(workload: dict[str, Any]) -> dict[str, Any] | None:
    refs = workload.get("metadata", {}).get("ownerReferences") or []
    return next((r for r in refs if r.get("controller") and (r.get("apiVersion"), r.get("kind")) in KINDS), None)


def _active_paths(job: dict[str, Any]) -> list[str]:
    """The JSON pointers of the status fields that still count pods, for a batch/v1 Job or a JobSet."""
    status = job.get("status") or {}
    if job.get("kind") == "Job":
        return [f"/status/{f}" for f in ("active", "ready") if status.get(f)]
    return [
        f"/status/replicatedJobsStatus/{i}/{f}"
        for i, rj in enumerate(status.get("replicatedJobsStatus") or [])
        for f in ("active", "ready")
        if rj.get(f)
    ]


def reset_patch(workload: dict[str, Any], job: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The JSON patch of ``job``'s status that lets Kueue finish ``workload``'s eviction; None: leave it."""
    ref = owner(workload)
    meta, spec = job.get("metadata", {}), job.get("spec", {})
    if (
        not lost(workload)
        or ref is None
        or (job.get("apiVersion"), job.get("kind")) != (ref["apiVersion"], ref["kind"])
    ):
        return None
    if meta.get("uid") != ref.get("uid") or spec.get("managedBy") != MULTIKUEUE or spec.get("suspend") is not True:
        return None
    paths = _active_paths(job)
    if not paths:
        return None
    return [
        {"op": "test", "path": "/metadata/uid", "value": meta["uid"]},
        {"op": "test", "path": "/metadata/resourceVersion", "value": meta["resourceVersion"]},
        *({"op": "replace", "path": p, "value": 0} for p in paths),
    ]


class Api:
    """The API server as the pod's ServiceAccount sees it (in-cluster: its token, its CA, the service address)."""

    def __init__(self, env: dict[str, str]) -> None:
        sa = env.get("SERVICE_ACCOUNT_DIR", "/var/run/secrets/kubernetes.io/serviceaccount")
        host = env["KUBERNETES_SERVICE_HOST"]
        self.base = f"https://{f'[{host}]' if ':' in host else host}:{env['KUBERNETES_SERVICE_PORT']}"
        self.token_file = os.path.join(sa, "token")  # re-read per call: the kubelet rotates it
        self.tls = ssl.create_default_context(cafile=os.path.join(sa, "ca.crt"))

    def call(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        with open(self.token_file) as f:
            token = f.read().strip()
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json-patch+json"
        req = urllib.request.Request(self.base + path, data=data, headers=headers, method=method)
        with urllib.request.urlopen(req, context=self.tls, timeout=30) as resp:
            return json.loads(resp.read() or b"{}")


def run(api: Api, namespaces: list[str], out=sys.stdout) -> int:
    """One pass over ``namespaces``: the number of failures (0: every lost job reset, or none to reset)."""
    failures = 0
    for ns in namespaces:
        for wl in api.call("GET", WORKLOADS.format(ns=ns)).get("items") or []:
            ref = owner(wl)
            if ref is None or not lost(wl):
                continue
            path = f"{KINDS[(ref['apiVersion'], ref['kind'])].format(ns=ns)}/{ref['name']}"
            try:
                job = api.call("GET", path)
                patch = reset_patch(wl, job)
                if patch is None:
                    continue
                api.call("PATCH", f"{path}/status", patch)
            except urllib.error.HTTPError as e:
                if e.code in (404, 409, 422):  # gone, or changed since it was read: the next run judges again
                    print(f"{ns}/{ref['name']}: left for the next run ({e.code})", file=out)
                    continue
                print(f"{ns}/{ref['name']}: {e.code} {e.reason}", file=out)
                failures += 1
                continue
            fields = ", ".join(op["path"].removeprefix("/status/") for op in patch if op["op"] == "replace")
            print(
                f"{ns}/{ref['kind']}/{ref['name']}: its worker was lost and Kueue evicted workload "
                f"{wl['metadata']['name']}; reset {fields} to 0 so Kueue dispatches it again",
                file=out,
            )
    return failures


def main() -> int:
    env = dict(os.environ)
    return 1 if run(Api(env), env.get("NAMESPACES", "").split()) else 0


if __name__ == "__main__":
    sys.exit(main())
