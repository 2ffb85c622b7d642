"""The fleet manager's worker-removal policy (components/plan/fleet.py removal_policy) on a real kube-apiserver 1.35:
the manager's rendered guard (its params ConfigMap, the policy, the binding) and its tenants' MultiKueueConfigs, on
Kueue's CRDs from upstream/crds. An UPDATE that drops a worker not retired is refused with the message naming the
worker and the key; retired (in the params), the same update passes; adding or reordering workers and the first
CREATE pass. The offline CEL helper's verdicts (tests/test_admission_policies.py admit) are checked against these.

The server compiles a policy and notices its binding and params through informers, a moment after they are written:
after each such write the test waits, with dry runs, until the server gives the verdict the write must bring or a
deadline passes (a policy that never refuses fails at that deadline); every verdict after that is a single request."""

from __future__ import annotations

import copy
import json
import time
from typing import Any

import pytest
from apply import apply_docs, install_crds, levels
from cluster_stacks import stack_file, stack_file_config
from controlplane import ControlPlane

from components.cli.loader import stack_files_in
from components.cli.synth import render
from components.plan import fleet as fleet_plan

STACK = "fleet-manager"
KEY = "gpu-platform:fleet.workers"
DEADLINE = 30.0


def _guard_docs() -> list[dict[str, Any]]:
    """The manager's rendered objects the guard is made of, and what it guards, in the engine's order."""
    with stack_files_in(stack_file(STACK).parent):
        rendering = render(STACK, stack_file_config(STACK))
    names = {fleet_plan.REMOVAL_POLICY, fleet_plan.RETIRED_PARAMS}
    keep = []
    for level in levels(rendering):
        for d in level:
            ns_ok = d["kind"] == "Namespace" and d["metadata"]["name"] == fleet_plan.KUEUE_NAMESPACE
            if ns_ok or d["metadata"]["name"] in names or d["kind"] == "MultiKueueConfig":
                keep.append(d)
    return keep


@pytest.fixture(scope="module")
def server():
    docs = _guard_docs()
    kinds = sorted(d["kind"] for d in docs)
    assert kinds == [
        "ConfigMap",
        "MultiKueueConfig",
        "MultiKueueConfig",
        "Namespace",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    ]
    with ControlPlane("fleet-removal") as cp:
        install_crds(cp, {"kueue.x-k8s.io"})
        for d in docs:  # one at a time, in dependency order: the MultiKueueConfigs are CREATEd under the policy
            apply_docs(cp, [d])
        _until_dry_run(cp, "fleet-research", ["gke-l4"], admitted=False)
        yield cp, docs


def _config(cp: ControlPlane, name: str) -> dict[str, Any]:
    return json.loads(cp.kubectl("get", "multikueueconfig", name, "-o", "json").stdout)


def _put(cp: ControlPlane, obj: dict[str, Any], dry: bool = False) -> tuple[bool, str]:
    """An UPDATE (kubectl replace: a PUT of the whole object, as `kubectl edit` sends): (admitted, message)."""
    proc = cp.kubectl("replace", *(["--dry-run=server"] if dry else []), "-f", "-", stdin=json.dumps(obj), check=False)
    return proc.returncode == 0, " ".join((proc.stderr + proc.stdout).split())


def _with(cp: ControlPlane, name: str, clusters: list[str], **labels: str | None) -> dict[str, Any]:
    obj = _config(cp, name)
    obj["spec"]["clusters"] = clusters
    for k, v in labels.items():
        if v is None:
            obj["metadata"]["labels"].pop(k, None)
        else:
            obj["metadata"]["labels"][k] = v
    return obj


def _until_dry_run(cp: ControlPlane, name: str, clusters: list[str], admitted: bool) -> None:
    """Waits until a dry-run UPDATE of ``name`` to ``clusters`` gets the verdict ``admitted``: the server's informers
    have caught up with the last write to the policy, its binding or its params."""
    deadline = time.monotonic() + DEADLINE
    while True:
        ok, msg = _put(cp, _with(cp, name, clusters), dry=True)
        if ok == admitted:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{name} -> {clusters}: admitted {ok}, expected {admitted} within {DEADLINE}s: {msg}")
        time.sleep(0.25)


def _refused(cp: ControlPlane, name: str, clusters: list[str], **labels: str | None) -> str:
    """The server's refusal of this update, by the policy; fails if it admits it."""
    ok, msg = _put(cp, _with(cp, name, clusters, **labels))
    assert not ok, f"{name} -> {clusters}: admitted, the policy must refuse it"
    assert "ValidatingAdmissionPolicy 'gpu-platform-fleet-worker-removal'" in msg, msg
    return msg


def _set_retired(cp: ControlPlane, workers: list[str]) -> None:
    params = json.loads(
        cp.kubectl("get", "configmap", "-n", fleet_plan.KUEUE_NAMESPACE, fleet_plan.RETIRED_PARAMS, "-o", "json").stdout
    )
    params["data"] = {w: "retired" for w in workers}
    cp.kubectl("replace", "-f", "-", stdin=json.dumps(params))


def test_the_first_deploy_creates_the_configs_and_the_params_list_nothing(server):
    cp, _ = server
    assert _config(cp, "fleet-research")["spec"]["clusters"] == ["eks-h100", "gke-l4"]
    assert _config(cp, "fleet-evals")["spec"]["clusters"] == ["gke-l4"]
    params = json.loads(
        cp.kubectl("get", "configmap", "-n", fleet_plan.KUEUE_NAMESPACE, fleet_plan.RETIRED_PARAMS, "-o", "json").stdout
    )
    assert params.get("data", {}) == {}


def test_dropping_a_worker_not_retired_is_refused_naming_it_the_key_and_the_steps(server):
    cp, _ = server
    msg = _refused(cp, "fleet-research", ["gke-l4"])
    assert f"{KEY}: worker eks-h100 would leave MultiKueueConfig fleet-research while not retired" in msg, msg
    assert "list it in fleet.retiredWorkers here and pulumi up" in msg
    # a hand edit that also takes the platform's label off is still the platform's config (the old object matches)
    msg = _refused(cp, "fleet-research", ["gke-l4"], **{"app.kubernetes.io/managed-by": None})
    assert "worker eks-h100 would leave" in msg
    msg = _refused(cp, "fleet-evals", ["eks-h100"])  # evals moved off gke-l4, which stays in the fleet
    assert "worker gke-l4 would leave MultiKueueConfig fleet-evals" in msg
    assert _config(cp, "fleet-research")["spec"]["clusters"] == ["eks-h100", "gke-l4"]


def test_adding_or_reordering_workers_is_admitted(server):
    cp, _ = server
    ok, msg = _put(cp, _with(cp, "fleet-research", ["gke-l4", "eks-h100"]))
    assert ok, msg
    ok, msg = _put(cp, _with(cp, "fleet-evals", ["gke-l4", "eks-h100"]))
    assert ok, msg
    ok, msg = _put(cp, _with(cp, "fleet-research", ["eks-h100", "gke-l4"]))
    assert ok, msg


def test_a_retired_worker_may_leave_and_only_it(server):
    cp, _ = server
    _set_retired(cp, ["eks-h100"])
    try:
        _until_dry_run(cp, "fleet-research", ["gke-l4"], admitted=True)
        _refused(cp, "fleet-research", ["eks-h100"])  # gke-l4 is not retired
        ok, msg = _put(cp, _with(cp, "fleet-research", ["gke-l4"]))
        assert ok, msg
        assert _config(cp, "fleet-research")["spec"]["clusters"] == ["gke-l4"]
    finally:
        ok, msg = _put(cp, _with(cp, "fleet-research", ["eks-h100", "gke-l4"]))  # adding back: always admitted
        assert ok, msg
        _set_retired(cp, [])
    _until_dry_run(cp, "fleet-research", ["gke-l4"], admitted=False)  # the params emptied: refused again


def test_the_offline_cel_helper_agrees_with_the_server(server):
    """The helper's verdict on each update the server judged above (tests/test_fleet.py relies on it)."""
    from test_admission_policies import admit

    cp, docs = server
    policy = next(d for d in docs if d["kind"] == "ValidatingAdmissionPolicy")["spec"]
    old = _config(cp, "fleet-research")
    for clusters, params, refused in (
        (["gke-l4"], {}, True),
        (["gke-l4"], {"data": {"eks-h100": "retired"}}, False),
        (["eks-h100"], {"data": {"eks-h100": "retired"}}, True),
        (["gke-l4", "eks-h100"], {}, False),
    ):
        new = copy.deepcopy(old)
        new["spec"]["clusters"] = clusters
        offline = admit(policy, new, "MultiKueueConfig", "kueue.x-k8s.io", old=old, params=params)
        assert bool(offline) == refused, (clusters, params, offline)
