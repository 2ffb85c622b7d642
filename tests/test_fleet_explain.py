"""``gpu-platform explain`` on a fleet manager (issue 43.4): which workers could run a workload and why the others
cannot.

Expected values are worked by hand from the example stack files (stacks/Pulumi.fleet-*.yaml): research dispatches to
eks-h100 (pool h100: 2 nodes x 8 H100, research's quota 16) and gke-l4 (pool l4: 8 nodes x 1 L4, research's quota 4,
and evals lends it 4 in cohort gpu-platform: at most 8); evals only to gke-l4 (quota 4). Fleet quotas: research
4 + 16 = 20, evals 4."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import copy_stack_files, edit_stack_file

from components.cli import main as cli
from components.cli.loader import load_spec
from components.explain import fleet
from components.spec import stackfile

ROOT = Path(__file__).resolve().parents[1]
SEC_POD = {"runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}}
SEC_C = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


@pytest.fixture
def stacks(tmp_path: Path) -> Path:
    return copy_stack_files(tmp_path, ("fleet-manager", "fleet-eks", "fleet-gke"))


def edit(stacks: Path, name: str, change) -> None:
    edit_stack_file(stacks, name, change)


def job(ns: str, pods: int, gpus: int, kind: str = "Job") -> dict:
    pod = {
        "restartPolicy": "Never",
        "securityContext": SEC_POD,
        "containers": [
            {
                "name": "main",
                "image": "registry.example/train:1",
                "securityContext": SEC_C,
                "resources": {"limits": {"nvidia.com/gpu": gpus}},
            }
        ],
    }
    if kind == "JobSet":
        inner = {"spec": {"parallelism": pods, "completions": pods, "template": {"spec": pod}}}
        return {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {"name": "js", "namespace": ns},
            "spec": {"replicatedJobs": [{"name": "main", "replicas": 1, "template": inner}]},
        }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": ns},
        "spec": {"parallelism": pods, "completions": pods, "template": {"spec": pod}},
    }


def explain(stacks: Path, doc: dict):
    spec = load_spec(stackfile.read(stacks / "Pulumi.fleet-manager.yaml"), stack_dir=stacks)
    [t] = fleet.explain_all(spec, yaml.safe_dump(doc))
    return t


def workers(t) -> dict[str, bool]:
    return {w.worker: w.runs for w in t.workers}


def detail(t, worker: str) -> str:
    return next(w.detail for w in t.workers if w.worker == worker)


def test_a_job_both_workers_take_runs_on_either_in_the_tenants_order(stacks):
    t = explain(stacks, job("research", 4, 1))  # 4 of 20; 4 x 1 fits h100 nodes and research's 4 L4s
    assert t.pending is None
    assert workers(t) == {"eks-h100": True, "gke-l4": True}
    assert t.verdict == "runs on worker eks-h100 (or gke-l4) via MultiKueue"


def test_a_worker_whose_quota_is_short_is_named_with_its_own_reason(stacks):
    t = explain(stacks, job("research", 2, 8))  # 16 of 20: eks-h100 has 16; gke-l4 at most 8 (4 + 4 borrowed)
    assert workers(t) == {"eks-h100": True, "gke-l4": False}
    assert detail(t, "gke-l4").startswith("pending at flavors:")
    assert "so at most 8" in detail(t, "gke-l4")
    assert t.verdict == "runs on worker eks-h100 via MultiKueue"


def test_a_worker_that_admits_what_none_of_its_nodes_fits_is_a_trap_the_verdict_names(stacks):
    t = explain(stacks, job("research", 1, 4))  # one pod of 4 GPUs: a 1-GPU L4 node never fits it
    assert workers(t) == {"eks-h100": True, "gke-l4": False}
    assert detail(t, "gke-l4").startswith("pending at provisioner: pod set main asks 4 nvidia.com/gpu, one node of l4")
    assert [w.worker for w in t.workers if w.traps] == ["gke-l4"]  # quota 4 fits: Kueue there admits it anyway
    assert "but gke-l4 admits it too" in t.verdict


def test_no_worker_able_is_pending_with_each_workers_reason(stacks):
    t = explain(stacks, job("research", 1, 12))  # 12 of 20, but an H100 node has 8 and gke-l4 at most 8 quota
    assert workers(t) == {"eks-h100": False, "gke-l4": False}
    assert t.pending is not None and t.pending.name == "workers"
    assert "eks-h100: pending at provisioner" in t.pending.detail
    assert "gke-l4: pending at flavors" in t.pending.detail
    assert t.outcome == "unschedulable"  # eks-h100's quota of 16 admits it: it would wait there


def test_above_the_fleet_quota_the_manager_holds_it_and_no_worker_is_tried(stacks):
    t = explain(stacks, job("research", 3, 8))  # 24 > 20
    assert t.pending is not None and t.pending.name == "fleet-quota"
    assert "asks 24 nvidia.com/gpu, above research's fleet quota of 20" in t.pending.detail
    assert t.workers == []
    t = explain(stacks, job("evals", 5, 1))  # 5 > 4
    assert t.pending is not None and "above evals's fleet quota of 4" in t.pending.detail
    assert explain(stacks, job("evals", 4, 1)).pending is None  # equal passes


def test_a_tenant_dispatched_to_one_worker_names_only_it(stacks):
    t = explain(stacks, job("evals", 1, 1, kind="JobSet"))
    assert workers(t) == {"gke-l4": True}
    assert t.verdict == "runs on worker gke-l4 via MultiKueue"


def test_a_kind_the_fleet_does_not_dispatch_is_refused_on_the_manager(stacks):
    edit(stacks, "fleet-manager", lambda c: c["gpu-platform:fleet"].update(kinds=["batch/job"]))
    t = explain(stacks, job("research", 1, 1, kind="JobSet"))
    assert t.pending is not None and t.pending.name == "fleet"
    assert "the fleet dispatches batch/job, not jobset.x-k8s.io/jobset" in t.pending.detail
    assert t.outcome == "refused"


def test_a_retired_worker_is_not_tried(stacks):
    edit(stacks, "fleet-manager", lambda c: c["gpu-platform:fleet"].update(retiredWorkers=["eks-h100"]))
    edit(stacks, "fleet-eks", lambda c: c["gpu-platform:fleetWorker"].update(draining=True))
    t = explain(stacks, job("research", 4, 1))
    assert workers(t) == {"eks-h100": False, "gke-l4": True}
    assert detail(t, "eks-h100").startswith("retired")
    assert t.verdict == "runs on worker gke-l4 via MultiKueue"


def test_the_cli_prints_a_line_per_worker_and_exits_by_the_fleets_verdict(stacks, tmp_path, capsys):
    manifest = tmp_path / "w.yaml"
    config = ["--config", str(stacks / "Pulumi.fleet-manager.yaml"), "--stacks", str(stacks)]
    manifest.write_text(yaml.safe_dump(job("research", 2, 8)))
    assert cli.main(["explain", "fleet-manager", str(manifest), *config]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[:3] for line in out if line.startswith("  worker ")] == [
        ["worker", "eks-h100", "ok"],
        ["worker", "gke-l4", "FAIL"],
    ]
    manifest.write_text(yaml.safe_dump(job("research", 1, 12)))
    assert cli.main(["explain", "fleet-manager", str(manifest), "--json", *config]) == 3
    (doc,) = json.loads(capsys.readouterr().out)
    assert doc["pendingAt"] == "workers"
    assert [(w["worker"], w["runs"]) for w in doc["workers"]] == [("eks-h100", False), ("gke-l4", False)]
