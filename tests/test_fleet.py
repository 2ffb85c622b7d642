"""A fleet behind one queue (issue 43): the fleet stack's plan, its rules across the stacks, its credential.

Expected values are worked from the example stack files by hand (stacks/Pulumi.fleet-*.yaml): research has 16
H100s on fleet-eks (2 nodes x 8, all its quota) and 4 L4s on fleet-gke; evals 4 L4s on fleet-gke."""

from __future__ import annotations

import datetime
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import copy_stack_files, edit_stack_file, render_config

from components.cli import main as cli
from components.cli.loader import load_spec
from components.plan import fleet as fleet_plan, kueue as kueue_plan, plan as plan_stage
from components.render import fleet as fleet_render
from components.spec import stackfile
from components.spec.model import SpecError

ROOT = Path(__file__).resolve().parents[1]
FILES = ("fleet-manager", "fleet-eks", "fleet-gke")


@pytest.fixture
def stacks(tmp_path: Path) -> Path:
    return copy_stack_files(tmp_path, FILES)


def edit(stacks: Path, name: str, change) -> None:
    edit_stack_file(stacks, name, change)


def load(stacks: Path, name: str = "fleet-manager"):
    return load_spec(stackfile.read(stacks / f"Pulumi.{name}.yaml"), stack_dir=stacks)


def problems(stacks: Path) -> list[str]:
    with pytest.raises(SpecError) as err:
        load(stacks)
    return [f"{p.path}: {p.message}" for p in err.value.problems]


def test_fleet_quota_is_the_sum_of_what_the_workers_give_each_tenant(stacks):
    p = plan_stage.build(load(stacks), "fleet-manager").fleet
    assert dict(p.tenants["research"].quota) == {"nvidia.com/gpu": 20}
    assert dict(p.tenants["evals"].quota) == {"nvidia.com/gpu": 4}
    assert p.workers["eks-h100"].capacity_units == {"nvidia.com/gpu": 16}
    assert p.workers["gke-l4"].capacity_units == {"nvidia.com/gpu": 8}
    cq = p.tenants["research"].cluster_queue_spec
    assert cq["admissionChecksStrategy"] == {"admissionChecks": [{"name": "fleet-research", "onFlavors": ["fleet"]}]}
    gpu = next(r for r in cq["resourceGroups"][0]["flavors"][0]["resources"] if r["name"] == "nvidia.com/gpu")
    assert gpu["nominalQuota"] == "20"
    # the tenant's order of preference is the MultiKueueConfig's (the incremental dispatcher follows it)
    assert p.tenants["research"].multikueue_config_spec == {"clusters": ["eks-h100", "gke-l4"]}
    assert p.tenants["research"].admission_check_spec["controllerName"] == "kueue.x-k8s.io/multikueue"


def test_the_managers_kueue_configuration_carries_multikueue_as_written(stacks):
    edit(stacks, "fleet-manager", lambda c: c["gpu-platform:fleet"].update(workerLostTimeout="2m", origin="fleet-a"))
    config = kueue_plan.manager_config(load(stacks))
    assert config["multiKueue"] == {
        "gcInterval": "1m",
        "origin": "fleet-a",
        "workerLostTimeout": "2m",
        "dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-incremental",
    }
    assert "multiKueue" not in kueue_plan.manager_config(load(stacks, "fleet-eks"))


def test_a_tenant_dispatched_to_a_worker_without_it_is_refused(stacks):
    edit(stacks, "fleet-manager", lambda c: c["gpu-platform:fleet"]["tenants"][1].update(workers=["eks-h100"]))
    (line,) = problems(stacks)
    assert line.startswith("gpu-platform:fleet.tenants[1].workers[0]: worker eks-h100 has no tenant evals")


def test_a_kind_whose_operator_is_missing_on_a_worker_is_refused(stacks):
    edit(stacks, "fleet-gke", lambda c: c["gpu-platform:addons"].update(jobset=False))
    (line,) = problems(stacks)
    assert line.startswith("gpu-platform:fleet.workers[1].stack: worker gke-l4 cannot run jobset.x-k8s.io/jobset")
    assert "addons.jobset true" in line


def test_workers_on_another_kueue_minor_are_refused(stacks):
    edit(stacks, "fleet-eks", lambda c: c.update({"gpu-platform:charts": {"kueue": {"version": "0.18.3"}}}))
    (line,) = problems(stacks)
    assert line.startswith("gpu-platform:fleet.workers[0].stack: worker eks-h100 runs Kueue 0.18.3, the manager 0.19.2")


def test_a_fleet_quota_above_the_workers_is_refused_and_equal_passes(stacks):
    def quota(n):
        return lambda c: c["gpu-platform:fleet"]["tenants"][0].update(gpuQuota={"nvidia.com/gpu": n})

    edit(stacks, "fleet-manager", quota(21))
    (line,) = problems(stacks)
    assert line.startswith("gpu-platform:fleet.tenants[0].gpuQuota.nvidia.com/gpu: 21 is above the 20")
    edit(stacks, "fleet-manager", quota(20))
    assert plan_stage.build(load(stacks), "m").fleet.tenants["research"].quota == {"nvidia.com/gpu": 20}


def test_a_credential_in_plain_text_in_a_fleet_stack_is_refused(stacks):
    edit(stacks, "fleet-manager", lambda c: c["gpu-platform:tags"].update(kubeconfig="token: eyJhbGciOiJSUzI1NiJ9abc"))
    (line,) = problems(stacks)
    assert line.startswith("gpu-platform:tags.kubeconfig: holds what looks like a credential in plain text")


def test_a_missing_worker_stack_file_and_an_unknown_worker_are_one_line_each(stacks):
    (stacks / "Pulumi.fleet-gke.yaml").unlink()
    (line,) = problems(stacks)
    assert line.startswith("gpu-platform:fleet.workers[1].stack: worker gke-l4: no stack file Pulumi.fleet-gke.yaml")


def test_the_cli_exits_2_naming_the_stack_file_and_key(stacks, capsys):
    edit(stacks, "fleet-manager", lambda c: c["gpu-platform:fleet"]["tenants"][1].update(workers=["nowhere"]))
    code = cli.main(["plan", "fleet-manager", "--config", str(stacks / "Pulumi.fleet-manager.yaml")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == cli.EXIT_INVALID
    assert len(err) == 1 and "Pulumi.fleet-manager.yaml" in err[0] and "fleet.tenants[1].workers[0]" in err[0]


def test_a_tenant_whose_workers_are_all_retired_is_refused(stacks):
    edit(stacks, "fleet-manager", lambda c: c["gpu-platform:fleet"].update(retiredWorkers=["gke-l4"]))
    edit(stacks, "fleet-gke", lambda c: c["gpu-platform:fleetWorker"].update(draining=True))
    (line,) = problems(stacks)
    assert line.startswith("gpu-platform:fleet.tenants[1].workers: every worker of evals is retired")


def test_a_retired_worker_must_drain_first(stacks):
    edit(stacks, "fleet-manager", lambda c: c["gpu-platform:fleet"].update(retiredWorkers=["eks-h100"]))
    (line,) = problems(stacks)
    assert "worker eks-h100 is retired here but not draining there" in line
    edit(stacks, "fleet-eks", lambda c: c["gpu-platform:fleetWorker"].update(draining=True))
    p = plan_stage.build(load(stacks), "m")
    assert p.fleet.workers["eks-h100"].retired and not p.fleet.workers["gke-l4"].retired
    worker = plan_stage.build(load(stacks, "fleet-eks"), "w")
    assert {t.local_queue_spec.get("stopPolicy") for t in worker.tenants.values()} == {"Hold"}


def test_the_worker_grants_the_manager_only_the_dispatched_kinds(stacks):
    w = plan_stage.build(load(stacks, "fleet-eks"), "fleet-eks").fleet_worker
    granted = {(g, r) for rule in w.rules for g in rule["apiGroups"] for r in rule["resources"]}
    assert granted == {
        ("batch", "jobs"),
        ("batch", "jobs/status"),
        ("jobset.x-k8s.io", "jobsets"),
        ("jobset.x-k8s.io", "jobsets/status"),
        ("kueue.x-k8s.io", "workloads"),
        ("kueue.x-k8s.io", "workloads/status"),
        ("kueue.x-k8s.io", "clusterqueues"),
        ("kueue.x-k8s.io", "localqueues"),
    }
    status_verbs = {tuple(r["verbs"]) for r in w.rules if r["resources"] == ["jobs/status"]}
    assert status_verbs == {("get",)}
    edit(stacks, "fleet-eks", lambda c: c["gpu-platform:addons"].update(jobset=False))
    w = plan_stage.build(load(stacks, "fleet-eks"), "fleet-eks").fleet_worker
    assert not any("jobset.x-k8s.io" in r["apiGroups"] for r in w.rules)


def test_credential_rotation_warns_before_and_refuses_after_its_date():
    w = fleet_plan.WorkerPlan("a", "o/p/a", "aws", "s", False, "0.19.2", (), (), {}, {}, 0, "2026-09-30", {})
    p = fleet_plan.FleetPlan((), {}, {"a": w}, {})
    assert fleet_render.credential_lines(p, datetime.date(2026, 9, 1)) == []
    (soon,) = fleet_render.credential_lines(p, datetime.date(2026, 9, 20))
    assert "is due for rotation on 2026-09-30" in soon
    (late,) = fleet_render.credential_lines(p, datetime.date(2026, 10, 1))
    assert "was due for rotation on 2026-09-30" in late


def test_the_manager_refuses_a_deployed_worker_that_disagrees_with_its_stack_file():
    w = fleet_plan.WorkerPlan(
        "a", "o/p/a", "aws", "s", False, "0.19.2", ("batch/job",), ("research",), {}, {}, 0, "2026-09-30", {}
    )
    good = {"manager": "o/p/m", "kinds": ["batch/job"], "kueueVersion": "0.19.2", "tenants": ["research"]}
    assert fleet_render.check_worker("o/p/m", w, ("batch/job",), good) == good
    with pytest.raises(fleet_render.FleetProblem, match="no tenant research"):
        fleet_render.check_worker("o/p/m", w, ("batch/job",), {**good, "tenants": []})
    with pytest.raises(fleet_render.FleetProblem, match="does not run batch/job"):
        fleet_render.check_worker("o/p/m", w, ("batch/job",), {**good, "kinds": []})
    with pytest.raises(fleet_render.FleetProblem, match="exports no fleetWorker"):
        fleet_render.check_worker("o/p/m", w, ("batch/job",), None)


def _guard(stacks: Path, name: str = "fleet-manager") -> dict[str, Any]:
    """The removal guard's rendered records by type (the ConfigMapPatches: name -> inputs), and the
    MultiKueueConfigs' dependencies by name."""
    r = render_config(stackfile.read(stacks / f"Pulumi.{name}.yaml"), name, stacks)
    out: dict[str, Any] = {"depends": {}}
    for rec in r.resources:
        meta = rec.inputs.get("metadata", {}) if isinstance(rec.inputs, dict) else {}
        kind = rec.type.rsplit(":", 1)[-1]
        if kind == "ConfigMapPatch":
            out.setdefault(kind, {})[rec.name] = (rec.inputs, set(rec.depends_on))
        elif meta.get("name") in (fleet_plan.REMOVAL_POLICY, fleet_plan.RETIRED_PARAMS):
            out[kind] = (rec.name, rec.inputs)
        if kind == "MultiKueueConfig":
            out["depends"][meta["name"]] = set(rec.depends_on)
    return out


def test_the_removal_policy_is_rendered_on_a_manager_only_with_exactly_the_retired_workers_as_params(stacks):
    """The API server's guard against draining a worker (plan/fleet.py removal_policy): a policy, its binding reading
    a ConfigMap in kueue-system whose keys are exactly the retired workers, each its own ConfigMapPatch (render/fleet.py
    _removal_guard: deleted last in the deploy that removes the worker), and every tenant's MultiKueueConfig waiting
    for all of them (a worker retired in the same deploy is in the params before a config drops it)."""
    g = _guard(stacks)
    params_name, params = g["ConfigMap"]
    assert params["metadata"]["namespace"] == "kueue-system"
    assert "data" not in params and "ConfigMapPatch" not in g  # nothing retired; the patches own the keys
    binding_name, binding = g["ValidatingAdmissionPolicyBinding"]
    assert binding["spec"] == {
        "policyName": "gpu-platform-fleet-worker-removal",
        "validationActions": ["Deny"],
        "paramRef": {
            "name": "gpu-platform-fleet-retired-workers",
            "namespace": "kueue-system",
            "parameterNotFoundAction": "Deny",
        },
    }
    policy = g["ValidatingAdmissionPolicy"][1]["spec"]
    assert policy["failurePolicy"] == "Fail"
    assert policy["paramKind"] == {"apiVersion": "v1", "kind": "ConfigMap"}
    (rule,) = policy["matchConstraints"]["resourceRules"]
    assert rule["operations"] == ["UPDATE"] and rule["resources"] == ["multikueueconfigs"]
    assert policy["matchConstraints"]["objectSelector"] == {
        "matchLabels": {"app.kubernetes.io/managed-by": "gpu-platform"}
    }
    assert set(g["depends"]) == {"fleet-research", "fleet-evals"}
    for deps in g["depends"].values():
        assert {params_name, binding_name} <= deps
    edit(stacks, "fleet-manager", lambda c: c["gpu-platform:fleet"].update(retiredWorkers=["eks-h100"]))
    edit(stacks, "fleet-eks", lambda c: c["gpu-platform:fleetWorker"].update(draining=True))
    g = _guard(stacks)
    (patch, deps) = g["ConfigMapPatch"]["fleet-eks-h100-retired"]
    assert set(g["ConfigMapPatch"]) == {"fleet-eks-h100-retired"}
    assert patch["metadata"] == {"name": "gpu-platform-fleet-retired-workers", "namespace": "kueue-system"}
    assert patch["data"] == {"eks-h100": "retired"} and params_name in deps
    for config_deps in g["depends"].values():
        assert "fleet-eks-h100-retired" in config_deps
    for worker in ("fleet-eks", "fleet-gke"):
        assert set(_guard(stacks, worker)) == {"depends"}  # no policy, binding or params on a worker


def _config(clusters: list[str]) -> dict[str, Any]:
    labels = {"app.kubernetes.io/managed-by": "gpu-platform"}
    return {"metadata": {"name": "fleet-research", "labels": labels}, "spec": {"clusters": clusters}}


def test_the_removal_policy_refuses_a_config_that_drops_a_worker_not_retired():
    """Evaluated offline with a real CEL engine (tests/cluster/test_fleet_removal_apiserver.py: the real server)."""
    from test_admission_policies import admit

    policy = fleet_plan.removal_policy()
    old = _config(["eks-h100", "gke-l4"])
    none: dict[str, Any] = {"metadata": {"name": "p"}}  # the params with nothing retired: no data at all

    def update(clusters: list[str], params: dict[str, Any]) -> list[str]:
        return admit(policy, _config(clusters), "MultiKueueConfig", "kueue.x-k8s.io", old=old, params=params)

    (msg,) = update(["gke-l4"], none)
    assert msg.startswith("gpu-platform:fleet.workers: worker eks-h100 would leave MultiKueueConfig fleet-research ")
    assert "list it in fleet.retiredWorkers here and pulumi up" in msg
    (msg,) = update(["eks-h100"], {"data": {"eks-h100": "retired"}})  # gke-l4 is not the retired one
    assert "worker gke-l4 would leave" in msg
    (msg,) = update(["other"], none)
    assert "worker eks-h100, gke-l4 would leave" in msg
    assert update(["gke-l4"], {"data": {"eks-h100": "retired"}}) == []
    assert update(["gke-l4", "eks-h100"], none) == []  # the order of preference changes: nothing leaves
    assert update(["eks-h100", "gke-l4", "new-a100"], none) == []  # a worker added


def test_the_kubeconfig_is_what_kueue_accepts():
    text = fleet_render.kubeconfig_text("w", "1.2.3.4", "Q0E=", "tok")
    doc = yaml.safe_load(text)
    assert doc["clusters"][0]["cluster"] == {"server": "https://1.2.3.4", "certificate-authority-data": "Q0E="}
    assert doc["users"][0]["user"] == {"token": "tok"}  # inline: Kueue refuses tokenFile, insecure TLS, exec


def test_the_synth_shows_the_credential_only_as_a_secret(monkeypatch):
    from components.cli.synth import read_stack_file, render

    monkeypatch.chdir(ROOT)
    worker = render("fleet-eks", read_stack_file(ROOT / "stacks" / "Pulumi.fleet-eks.yaml"))
    assert worker.outputs["multikueueKubeconfig"] == "[secret]"
    assert worker.outputs["fleetWorker"]["kinds"] == ["batch/job", "jobset.x-k8s.io/jobset"]
    manager = render("fleet-manager", read_stack_file(ROOT / "stacks" / "Pulumi.fleet-manager.yaml"))
    clusters = {r.name: r for r in manager.of_type("kubernetes:kueue.x-k8s.io/v1beta2:MultiKueueCluster")}
    assert set(clusters) == {"fleet-eks-h100-cluster", "fleet-gke-l4-cluster"}
    assert all(r.protect for r in clusters.values())  # removing a worker is never silent
    secret = manager.find("kubernetes:core/v1:Secret", "fleet-eks-h100-kubeconfig")
    assert secret.inputs["stringData"] == {"kubeconfig": "[secret]"}  # a secret input: never in the synth's files
    assert "token:" not in repr(manager.outputs) and "token:" not in repr(worker.outputs)


def test_the_managers_kueue_manages_exactly_the_dispatched_kinds(stacks):
    """Kueue v0.19.2 watches every integration its manager manages on every worker (cmd/kueue/main.go
    GetMultiKueueAdapters): one the workers do not grant leaves them all inactive (the real fleet test found the
    default's pod integration forbidden)."""
    assert load(stacks).scheduling.kueue_integrations == ["batch/job", "jobset.x-k8s.io/jobset"]
    edit(stacks, "fleet-manager", lambda c: c["gpu-platform:fleet"].update(kinds=["batch/job"]))
    assert load(stacks).scheduling.kueue_integrations == ["batch/job"]
    edit(
        stacks,
        "fleet-manager",
        lambda c: c.update({"gpu-platform:scheduling": {"kueueIntegrations": ["batch/job", "deployment", "pod"]}}),
    )
    (line,) = problems(stacks)
    assert line.startswith("gpu-platform:scheduling.kueueIntegrations[2]: a manager's Kueue watches every integration")
    assert "pod would leave every worker inactive" in line


def test_removing_a_worker_is_refused_until_it_is_retired_and_a_retired_one_is_unprotected(tmp_path, monkeypatch):
    """A worker's MultiKueueCluster and Secret are protected: taking the worker out of fleet.workers makes the engine
    delete a protected resource, which Pulumi refuses. Retired (fleet.retiredWorkers, its stack draining), it is still
    rendered and connected, and no longer protected: then it can be removed."""
    from components.cli.synth import read_stack_file, render

    (tmp_path / "stacks").mkdir()
    for name in FILES:
        shutil.copy(ROOT / "stacks" / f"Pulumi.{name}.yaml", tmp_path / "stacks" / f"Pulumi.{name}.yaml")
    monkeypatch.chdir(tmp_path)  # the program reads the workers' stack files from stacks/
    edit(tmp_path / "stacks", "fleet-manager", lambda c: c["gpu-platform:fleet"].update(retiredWorkers=["eks-h100"]))
    edit(tmp_path / "stacks", "fleet-eks", lambda c: c["gpu-platform:fleetWorker"].update(draining=True))
    manager = render("fleet-manager", read_stack_file(tmp_path / "stacks" / "Pulumi.fleet-manager.yaml"))
    protect = {
        r.name: r.protect
        for r in manager.resources
        if r.name.startswith(("fleet-eks-h100-", "fleet-gke-l4-")) and r.name.endswith(("-cluster", "-kubeconfig"))
    }
    assert protect == {
        "fleet-eks-h100-cluster": False,
        "fleet-eks-h100-kubeconfig": False,
        "fleet-gke-l4-cluster": True,
        "fleet-gke-l4-kubeconfig": True,
    }
