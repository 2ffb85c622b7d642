"""Removing a worker from a fleet drains nothing silently (issue 43.5), under the real Pulumi engine and kubernetes
provider on a real kube-apiserver 1.35.

The manager is stacks/Pulumi.fleet-manager.yaml pointed at the test server (cloud existing; Kueue's chart from
upstream/charts, ``chartSource: bundled``, its CRDs with it; Prometheus off and the fleet dispatching batch Jobs only,
so no other chart is installed: Kueue itself the fleet's rules require of a manager). Its workers' stack files are
read beside it (GPU_PLATFORM_STACK_DIR), as ``pulumi up`` reads them from stacks/; the worker stacks themselves live
in the same file backend, each an inline program exporting exactly what the manager's StackReference reads: its
``fleetWorker`` facts (its own plan's: components/plan/fleet.py worker_build) and its kubeconfig as a secret output.
The file backend has one organization, ``organization``, so the stack names in the copies say so.

What it found: the protect flag on each MultiKueueCluster and Secret alone does not keep `up --skip-preview` (the
Automation API's `up`) from draining a worker removed without retiring it: the engine updates the tenants'
MultiKueueConfigs first and reaches the protected delete last (``test_without_that_guard...``). The manager now
reads its own last ``fleetActiveWorkers`` output and refuses before any fleet object changes.

Kueue's chart registers webhooks and an aggregated API its kwok pod cannot answer: as in
test_real_engine_charts.py, a first ``up`` stops before the webhook gate, those registrations are removed, and the
second ``up`` completes. No Kueue controller runs: what is proven is what the engine does to the manager's objects
(what Kueue then does with a changed MultiKueueConfig is read from its source, cited in render/fleet.py).
"""

from __future__ import annotations

import base64
import copy
import datetime
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pulumi
import pytest
from conftest import copy_stack_files, edit_stack_file
from engine import Engine, record_changes, registered_webhooks, state_urns
from probes import RESTRICTED_CONTAINER as RESTRICTED

from components.cli import main as cli
from components.cli.loader import load_spec, stack_files_in
from components.cli.synth import render
from components.plan import fleet as fleet_plan
from components.plan.frozen import plain
from components.render.fleet import kubeconfig_text
from components.spec import stackfile

MANAGER = "fleet-manager"
WORKERS = {"eks-h100": "fleet-eks", "gke-l4": "fleet-gke"}  # worker name -> its stack
ORG = "organization"  # the file backend's only organization (pulumi pkg/backend/diy/store.go)
PROJECT = "gpu-platform"
GATE_SUFFIX = "-webhook-ready"
STACK_REF = "pulumi:pulumi:StackReference"
SECRET_SIG = "4dabf18193072939515e22adb298388d"  # the state's mark of a secret value (pulumi sdk/go resource)
BUILTIN = f"urn:pulumi:{MANAGER}::{PROJECT}::pulumi:providers:pulumi::default"  # the StackReferences' provider


def _token(worker: str) -> str:
    """The worker's bearer token in its exported kubeconfig: searched for in the manager's state."""
    return f"tok3n-of-{worker}-for-the-manager"


def _edit_for_the_test_server(stacks: Path, kubeconfig: str) -> None:
    today = datetime.date.today()
    rotate_by = (today + datetime.timedelta(days=60)).isoformat()  # within the 90 days; no warning

    def manager(c: dict[str, Any]) -> None:
        c.pop("aws:region", None)
        c["gpu-platform:cloud"] = "existing"
        c["gpu-platform:cluster"] = {"kubeconfig": kubeconfig}
        c["gpu-platform:chartSource"] = "bundled"
        c["gpu-platform:monitoring"] = {"prometheus": "none"}
        c["gpu-platform:addons"]["jobset"] = False
        f = c["gpu-platform:fleet"]
        f["kinds"] = ["batch/job"]
        for w in f["workers"]:
            w["stack"] = f"{ORG}/{PROJECT}/{w['stack'].rsplit('/', 1)[-1]}"

    def worker(c: dict[str, Any]) -> None:
        c["gpu-platform:fleetWorker"]["manager"] = f"{ORG}/{PROJECT}/{MANAGER}"
        c["gpu-platform:fleetWorker"]["credential"]["rotateBy"] = rotate_by

    edit_stack_file(stacks, MANAGER, manager)
    for stack in WORKERS.values():
        edit_stack_file(stacks, stack, worker)


def _read(stacks: Path, name: str) -> dict[str, Any]:
    return stackfile.read(stacks / f"Pulumi.{name}.yaml")


def _worker_program(stacks: Path, worker: str, stack: str):
    """What the worker stack exports for its manager (components/render/program.py): its plan's facts, plain, and
    its kubeconfig, secret."""
    facts = plain(fleet_plan.worker_build(load_spec(_read(stacks, stack))).facts)
    kubeconfig = kubeconfig_text("worker", f"https://{worker}.fleet.invalid", "", _token(worker))

    def program() -> None:
        pulumi.export(fleet_plan.OUTPUT_FACTS, facts)
        pulumi.export(fleet_plan.OUTPUT_KUBECONFIG, pulumi.Output.secret(kubeconfig))

    return program


def _cli(eng: Engine, *args: str) -> str:
    env = {**os.environ, **eng.env}
    proc = subprocess.run(
        [str(eng.bin / "pulumi"), *args], cwd=eng.project, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _names(cp, kind: str, namespace: str | None = None) -> list[str]:
    ns = ["-n", namespace] if namespace else []
    out = cp.kubectl("get", kind, *ns, "-o", "jsonpath={.items[*].metadata.name}").stdout.split()
    return sorted(out)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    from controlplane import ControlPlane
    from nodes import stack_nodes

    stacks = copy_stack_files(tmp_path_factory.mktemp("stacks"), (MANAGER, *WORKERS.values()))
    with ControlPlane("fleet") as cp, stack_files_in(stacks):
        eng = Engine()
        try:
            _edit_for_the_test_server(stacks, str(cp.kubeconfig))
            cfg = _read(stacks, MANAGER)
            cp.start_nodes(stack_nodes(load_spec(cfg)))
            workers = {}
            for worker, stack in WORKERS.items():
                workers[stack] = eng.stack(stack, {}, program=_worker_program(stacks, worker, stack))
                workers[stack].up(color="never")
            manager = eng.stack(MANAGER, cfg)
            synth = render(MANAGER, copy.deepcopy(cfg))
            gates = sorted(r.urn for r in synth.resources if r.name.endswith(GATE_SUFFIX))
            manager.up(color="never", exclude=gates, exclude_dependents=True)
            for kind, names in registered_webhooks(cp).items():
                for name in names:
                    cp.kubectl("delete", kind, name)
            up = manager.up(color="never")
            yield {
                "cp": cp,
                "engine": eng,
                "stacks": stacks,
                "config": cfg,
                "manager": manager,
                "workers": workers,
                "synth": synth,
                "up": up,
            }
            dials = cp.dials_outside_loopback()
            assert dials == [], dials[:3]
        finally:
            eng.close()


def test_up_creates_exactly_the_synths_urns_and_each_workers_kubeconfig_secret(fleet):
    cp, manager, synth = fleet["cp"], fleet["manager"], fleet["synth"]
    assert fleet["up"].summary.result == "succeeded"
    state = state_urns(manager)
    # the StackReferences (and the engine's builtin provider that reads them) are read, not rendered: the synth
    # lists none
    refs = {u for u in state if f"${STACK_REF}::" in u}
    # each worker's, and the manager's own (its last deploy's active workers: render/fleet.py)
    names = sorted(u.rsplit("::", 1)[1] for u in refs)
    assert names == ["fleet-manager-last-deploy", "fleet-worker-eks-h100", "fleet-worker-gke-l4"]
    assert state - refs - {BUILTIN} == {r.urn for r in synth.resources}
    assert _names(cp, "multikueueclusters") == ["eks-h100", "gke-l4"]
    for worker in WORKERS:
        secret = json.loads(
            cp.kubectl("get", "secret", "-n", "kueue-system", f"multikueue-{worker}", "-o", "json").stdout
        )
        kubeconfig = base64.b64decode(secret["data"]["kubeconfig"]).decode()
        assert f"token: {_token(worker)}" in kubeconfig  # the worker's secret output, through the StackReference
    # the state as `pulumi stack export` prints it (the Automation API's export_stack shows secrets), and as the
    # backend keeps it: the kubeconfig Secret's data and the StackReference's secret output encrypted
    exported = _cli(fleet["engine"], "stack", "export", "--stack", MANAGER)
    at_rest = (fleet["engine"].state / ".pulumi" / "stacks" / PROJECT / f"{MANAGER}.json").read_text()
    for text in (exported, at_rest):
        for worker in WORKERS:
            assert _token(worker) not in text
    resources = {r["urn"].rsplit("::", 1)[1]: r for r in json.loads(exported)["deployment"]["resources"]}
    for worker in WORKERS:
        secret = resources[f"fleet-{worker}-kubeconfig"]
        # the provider moves stringData into data and keeps all of it secret, in its inputs and outputs
        assert "stringData" not in secret["inputs"] and "stringData" not in secret["outputs"]
        assert set(secret["inputs"]["data"]) == set(secret["outputs"]["data"]) == {SECRET_SIG, "ciphertext"}
        ref = resources[f"fleet-worker-{worker}"]["outputs"]["outputs"]
        assert set(ref[fleet_plan.OUTPUT_KUBECONFIG]) == {SECRET_SIG, "ciphertext"}


def _without(worker: str):
    """A stack file change taking ``worker`` out of fleet.workers and out of every tenant's workers (what a user
    would do; leaving it in a tenant's list is refused offline: the test below)."""

    def change(c: dict[str, Any]) -> None:
        f = c["gpu-platform:fleet"]
        f["workers"] = [w for w in f["workers"] if w["name"] != worker]
        for t in f["tenants"]:
            t["workers"] = [w for w in t["workers"] if w != worker]
        f["retiredWorkers"] = [w for w in f.get("retiredWorkers", []) if w != worker]
        if not f["retiredWorkers"]:
            del f["retiredWorkers"]

    return change


def _server(cp) -> dict[str, Any]:
    """What the manager's server holds of the fleet: every object a removal could drain."""
    out: dict[str, Any] = {
        "multikueueclusters": _names(cp, "multikueueclusters"),
        "secrets": [s for s in _names(cp, "secrets", "kueue-system") if s.startswith("multikueue-")],
        "namespaces": [n for n in _names(cp, "namespaces") if n in ("research", "evals")],
        "localqueues": {ns: _names(cp, "localqueues", ns) for ns in ("research", "evals")},
    }
    for kind in ("multikueueconfigs", "clusterqueues"):
        items = json.loads(cp.kubectl("get", kind, "-o", "json").stdout)["items"]
        out[kind] = {i["metadata"]["name"]: i["spec"] for i in items}
    return out


def _fleet_ops(ops: dict[str, list[str]]) -> dict[str, list[str]]:
    """The recorded operations on the fleet's objects (FleetManager's children), the StackReferences' reads aside."""
    out = {
        op: sorted(u.rsplit("::", 1)[1] for u in urns if "FleetManager$" in u)
        for op, urns in ops.items()
        if op != "read"
    }
    return {op: names for op, names in out.items() if names}


def test_the_offline_check_cannot_see_that_a_removed_worker_is_deployed(fleet, tmp_path, capsys):
    """`gpu-platform check` reads stack files, not state: a worker taken out of fleet.workers and of its tenants is a
    valid fleet (exit 0), so the guard against draining it is the deploy's. Left in a tenant's workers, it is
    refused offline: exit 2, one line naming the file and the key."""
    for f in fleet["stacks"].glob("Pulumi.*.yaml"):
        (tmp_path / f.name).write_text(f.read_text())
    path = tmp_path / f"Pulumi.{MANAGER}.yaml"
    edit_stack_file(tmp_path, MANAGER, _without("eks-h100"))
    assert cli.main(["check", MANAGER, "--config", str(path)]) == 0
    capsys.readouterr()
    edit_stack_file(tmp_path, MANAGER, lambda c: c["gpu-platform:fleet"]["tenants"][0]["workers"].insert(0, "eks-h100"))
    assert cli.main(["check", MANAGER, "--config", str(path)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"{path}: gpu-platform:fleet.tenants[0].workers[0]: unknown worker 'eks-h100' (fleet.workers names gke-l4)"
    ]


def test_removing_an_active_worker_is_refused_before_any_fleet_object_changes(fleet):
    """Not retired first, eks-h100 taken out of the manager's stack file: the preview and `up` (the Automation API's,
    which skips the preview), twice, fail with the program's one line naming the stack file, the key and the steps,
    and no fleet object is touched: its MultiKueueCluster and Secret, and research's MultiKueueConfig and
    ClusterQueue, stay as deployed, and so does the output the next deploy checks against."""
    cp, eng, manager, cfg = fleet["cp"], fleet["engine"], fleet["manager"], fleet["config"]
    before = _server(cp)
    assert before["multikueueconfigs"]["fleet-research"] == {"clusters": ["eks-h100", "gke-l4"]}
    removed = copy.deepcopy(cfg)
    _without("eks-h100")(removed)
    eng.stack(MANAGER, removed)
    ops: dict[str, list[str]] = {}
    try:
        # the second up reads what the first, refused, recorded: it must still hold eks-h100
        for run in (manager.preview, manager.up, manager.up):
            with pytest.raises(Exception) as err:
                run(color="never", on_event=record_changes(ops))
            assert manager.outputs()[fleet_plan.OUTPUT_ACTIVE].value == ["eks-h100", "gke-l4"]
            message = " ".join(str(err.value).split())
            assert re.search(
                rf"stacks/Pulumi\.{MANAGER}\.yaml: gpu-platform:fleet\.workers: worker eks-h100 is active in the "
                r"deployed fleet and no longer listed: .* list it in fleet\.retiredWorkers here",
                message,
            ), message[-2000:]
    finally:
        eng.stack(MANAGER, cfg)
    assert _fleet_ops(ops) == {}
    assert _server(cp) == before


def test_without_that_guard_the_protect_flag_alone_lets_up_drain_the_tenants(fleet, monkeypatch):
    """Why the guard is there. Without it, the engine's preview refuses to delete the protected MultiKueueCluster;
    but `up --skip-preview` updates research's MultiKueueConfig (and quota) without eks-h100 before it reaches that
    delete, and a MultiKueueConfig without the admitting cluster is what makes Kueue re-dispatch (kueue v0.19.2
    multikueue/workload.go, "Admitting remote no longer exists"). The MultiKueueCluster and Secret stay."""
    from components.render import fleet as fleet_render

    cp, eng, manager, cfg = fleet["cp"], fleet["engine"], fleet["manager"], fleet["config"]
    monkeypatch.setattr(fleet_render, "removal_problem", lambda *a: None)
    before = _server(cp)
    removed = copy.deepcopy(cfg)
    _without("eks-h100")(removed)
    eng.stack(MANAGER, removed)
    protected = 'MultiKueueCluster::fleet-eks-h100-cluster" cannot be deleted because it is protected'
    ops: dict[str, list[str]] = {}
    try:
        for run in (manager.preview, manager.up):
            with pytest.raises(Exception) as err:
                run(color="never", on_event=record_changes(ops) if run == manager.up else None)
            assert protected in " ".join(str(err.value).split())
            if run == manager.preview:
                assert _server(cp) == before
        after = _server(cp)
    finally:
        eng.stack(MANAGER, cfg)
        monkeypatch.undo()
        manager.up(color="never")  # back to the deployed fleet for the next test
    done = _fleet_ops(ops)
    # eks-h100's StackReference is discarded in the same phase as the deletes, so whether it is before the failing
    # delete stops the update is a matter of timing
    assert done.pop("discard", ["fleet-worker-eks-h100"]) == ["fleet-worker-eks-h100"]
    assert done == {"delete": ["fleet-eks-h100-cluster"], "update": ["fleet-research-config", "research-cluster-queue"]}
    assert after["multikueueconfigs"]["fleet-research"] == {"clusters": ["gke-l4"]}
    assert {k: v for k, v in after.items() if k not in ("multikueueconfigs", "clusterqueues")} == {
        k: v for k, v in before.items() if k not in ("multikueueconfigs", "clusterqueues")
    }
    assert _server(cp) == before


def test_a_retired_worker_is_removed_alone(fleet):
    """The documented way: eks-h100 draining in its stack, retired in the manager's (nothing deleted, its objects
    no longer protected), then taken out: the engine deletes exactly its MultiKueueCluster and Secret and updates
    research's MultiKueueConfig and quota; gke-l4's objects, every tenant's namespace and LocalQueue, and a Job
    submitted to research before all this stay."""
    cp, eng, manager, stacks = fleet["cp"], fleet["engine"], fleet["manager"], fleet["stacks"]
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "research", "labels": {"kueue.x-k8s.io/queue-name": "default"}},
        "spec": {
            "suspend": True,  # as Kueue keeps a dispatched Job on the manager
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "train", "image": "registry.example/train:1", "securityContext": RESTRICTED}
                    ],
                }
            },
        },
    }
    cp.kubectl("create", "-f", "-", stdin=json.dumps(job))
    uid = json.loads(cp.kubectl("get", "job", "-n", "research", "train", "-o", "json").stdout)["metadata"]["uid"]
    before = _server(cp)
    edit_stack_file(stacks, "fleet-eks", lambda c: c["gpu-platform:fleetWorker"].update(draining=True))
    fleet["workers"]["fleet-eks"] = eng.stack("fleet-eks", {}, program=_worker_program(stacks, "eks-h100", "fleet-eks"))
    fleet["workers"]["fleet-eks"].up(color="never")
    edit_stack_file(stacks, MANAGER, lambda c: c["gpu-platform:fleet"].update(retiredWorkers=["eks-h100"]))
    retire: dict[str, list[str]] = {}
    eng.stack(MANAGER, _read(stacks, MANAGER))
    assert manager.up(color="never", on_event=record_changes(retire)).summary.result == "succeeded"
    assert _fleet_ops(retire) == {} and _server(cp) == before  # retiring changes no object, only its protection
    protect = {
        r["urn"].rsplit("::", 1)[1]: bool(r.get("protect"))
        for r in manager.export_stack().deployment["resources"]
        if r["type"] in ("kubernetes:core/v1:Secret", "kubernetes:kueue.x-k8s.io/v1beta2:MultiKueueCluster")
    }
    assert protect == {
        "fleet-eks-h100-cluster": False,
        "fleet-eks-h100-kubeconfig": False,
        "fleet-gke-l4-cluster": True,
        "fleet-gke-l4-kubeconfig": True,
    }
    assert manager.outputs()[fleet_plan.OUTPUT_ACTIVE].value == ["gke-l4"]
    edit_stack_file(stacks, MANAGER, _without("eks-h100"))
    remove: dict[str, list[str]] = {}
    eng.stack(MANAGER, _read(stacks, MANAGER))
    assert manager.up(color="never", on_event=record_changes(remove)).summary.result == "succeeded"
    assert _fleet_ops(remove) == {
        "delete": ["fleet-eks-h100-cluster", "fleet-eks-h100-kubeconfig"],
        "discard": ["fleet-worker-eks-h100"],  # the StackReference, read no more
        "update": ["fleet-research-config", "research-cluster-queue"],
    }
    after = _server(cp)
    assert after["multikueueclusters"] == ["gke-l4"] and after["secrets"] == ["multikueue-gke-l4"]
    assert after["multikueueconfigs"] == {**before["multikueueconfigs"], "fleet-research": {"clusters": ["gke-l4"]}}
    keep = ("namespaces", "localqueues")
    assert {k: after[k] for k in keep} == {k: before[k] for k in keep}
    assert after["clusterqueues"]["evals"] == before["clusterqueues"]["evals"]
    still = json.loads(cp.kubectl("get", "job", "-n", "research", "train", "-o", "json").stdout)
    assert still["metadata"]["uid"] == uid
