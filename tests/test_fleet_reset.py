"""The fleet manager's lost-worker reset (issue 43.5; components/plan/fleet_reset.py and the program it runs,
components/data/reset_lost_jobs.py): rendered only on a manager, granted exactly what it needs in the fleet's tenant
namespaces, pulled through the stack's mirror, and touching only a job Kueue evicted because its worker was lost.
tests/sched/test_fleet_multikueue.py runs the rendered program against the real Kueue, as its ServiceAccount."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from conftest import copy_stack_files, edit_stack_file, render_config

from components.cli.loader import load_spec
from components.data import reset_lost_jobs as prog, versions
from components.plan import fleet as fleet_plan, images, plan as plan_stage
from components.spec import stackfile

FILES = ("fleet-manager", "fleet-eks", "fleet-gke")
CRONJOB = "kubernetes:batch/v1:CronJob"


@pytest.fixture
def stacks(tmp_path: Path) -> Path:
    return copy_stack_files(tmp_path, FILES)


def render(stacks: Path, name: str = "fleet-manager"):
    return render_config(stackfile.read(stacks / f"Pulumi.{name}.yaml"), name, stacks)


def load(stacks: Path, name: str = "fleet-manager"):
    return load_spec(stackfile.read(stacks / f"Pulumi.{name}.yaml"), stack_dir=stacks)


def of_name(rendering, name: str) -> list[tuple[str, dict[str, Any]]]:
    """(kind, inputs) of every rendered object called ``name``."""
    found = [
        (r.inputs["kind"], r.inputs)
        for r in rendering.resources
        if isinstance(r.inputs, dict) and (r.inputs.get("metadata") or {}).get("name") == name
    ]
    return sorted(found, key=lambda f: (f[0], f[1]["metadata"].get("namespace", "")))


def test_the_reset_is_rendered_on_a_fleet_manager_only(stacks):
    manager = of_name(render(stacks), "fleet-lost-job-reset")
    where = sorted((kind, inputs["metadata"]["namespace"]) for kind, inputs in manager)
    assert where == [
        ("CronJob", "kueue-system"),
        ("Role", "evals"),
        ("Role", "research"),
        ("RoleBinding", "evals"),
        ("RoleBinding", "research"),
        ("ServiceAccount", "kueue-system"),
    ]
    for worker in ("fleet-eks", "fleet-gke"):
        assert of_name(render(stacks, worker), "fleet-lost-job-reset") == []
        assert not render(stacks, worker).of_type(CRONJOB)


def test_the_reset_is_granted_exactly_its_reads_and_the_status_patch_in_each_tenant_namespace(stacks):
    rendering = render(stacks)
    objs = of_name(rendering, "fleet-lost-job-reset")
    rules = {
        (inputs["metadata"]["namespace"], g, r, tuple(rule["verbs"]))
        for kind, inputs in objs
        if kind == "Role"
        for rule in inputs["rules"]
        for g in rule["apiGroups"]
        for r in rule["resources"]
    }
    assert rules == {
        (ns, g, r, v)
        for ns in ("research", "evals")
        for g, r, v in (
            ("kueue.x-k8s.io", "workloads", ("list",)),
            ("batch", "jobs", ("get",)),
            ("batch", "jobs/status", ("patch",)),
            ("jobset.x-k8s.io", "jobsets", ("get",)),
            ("jobset.x-k8s.io", "jobsets/status", ("patch",)),
        )
    }
    for kind, inputs in objs:
        if kind == "RoleBinding":
            assert inputs["roleRef"] == {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": inputs["metadata"]["name"],
            }
            assert inputs["subjects"] == [
                {"kind": "ServiceAccount", "name": "fleet-lost-job-reset", "namespace": "kueue-system"}
            ]
    assert not [k for k, _ in objs if k.startswith("Cluster")]  # nothing cluster-wide
    # a fleet that dispatches Jobs only is granted nothing on JobSets
    edit_stack_file(stacks, "fleet-manager", lambda c: c["gpu-platform:fleet"].update(kinds=["batch/job"]))
    reset = plan_stage.build(load(stacks), "fleet-manager").fleet.reset
    assert {g for r in reset.rules for g in r["apiGroups"]} == {"kueue.x-k8s.io", "batch"}


def test_the_reset_pod_is_restricted_on_system_nodes_one_at_a_time(stacks):
    (cron,) = [i for k, i in of_name(render(stacks), "fleet-lost-job-reset") if k == "CronJob"]
    spec = cron["spec"]
    assert (spec["schedule"], spec["concurrencyPolicy"]) == ("* * * * *", "Forbid")
    pod = spec["jobTemplate"]["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    assert pod["serviceAccountName"] == "fleet-lost-job-reset"
    assert pod["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert c["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert c["resources"]["limits"] == {"memory": "64Mi"}
    assert c["command"][:4] == ["python3", "-I", "-B", "-c"]
    assert c["command"][4] == Path(prog.__file__).read_text()  # the shipped program, as it is
    assert c["env"] == [{"name": "NAMESPACES", "value": "research evals"}]
    assert c["image"] == "docker.io/library/python:3.13.9-alpine3.22"


SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:ecr-pullthroughcache/"
MIRROR = {
    "mirror": "pull-through",
    "pullThrough": {
        "accountId": "123456789012",
        "credentials": {"docker.io": {"secret": f"{SECRET}hub-Ab12Cd"}, "ghcr.io": {"secret": f"{SECRET}ghcr-Ef34Gh"}},
    },
}


def test_the_reset_image_goes_through_the_stacks_mirror(stacks):
    edit_stack_file(stacks, "fleet-manager", lambda c: c.update({"gpu-platform:images": MIRROR}))
    (cron,) = [i for k, i in of_name(render(stacks), "fleet-lost-job-reset") if k == "CronJob"]
    (c,) = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    assert c["image"].startswith("123456789012.dkr.ecr.us-east-1.amazonaws.com/")
    assert c["image"].endswith("/library/python:3.13.9-alpine3.22")
    # and the mirror's rules see it (pull-through cache rules, image lists)
    assert "docker.io/library/python:3.13.9-alpine3.22" in images.platform_images(load(stacks))


def test_the_reset_can_be_turned_off(stacks):
    edit_stack_file(stacks, "fleet-manager", lambda c: c["gpu-platform:fleet"].update(resetLostJobs=False))
    assert of_name(render(stacks), "fleet-lost-job-reset") == []
    spec = load(stacks)
    assert versions.FLEET_RESET_IMAGE not in images.platform_images(spec)
    fleet = plan_stage.build(spec, "fleet-manager").fleet
    assert fleet.reset is None
    assert any("lost-worker reset: off" in line for line in fleet_plan.text_lines(fleet))


# ---------------------------------------------------------------------------------------------- the rule


def lost_workload(**conditions: dict[str, Any]) -> dict[str, Any]:
    """A Workload as Kueue v0.19.2 leaves it once a lost worker's timeout passed (the real one: the sched test)."""
    conds = {
        "QuotaReserved": {"status": "True", "reason": "QuotaReserved"},
        "Admitted": {"status": "True", "reason": "Admitted"},
        "Evicted": {
            "status": "True",
            "reason": "AdmissionCheck",
            "message": 'Evicted due to AdmissionCheck in Retry state: "fleet-research" (Admitting remote lost, '
            'Previously: "Ready")',
        },
    }
    for kind, c in conditions.items():
        conds[kind] = {**conds.get(kind, {}), **c}
    return {
        "metadata": {
            "name": "job-move-1",
            "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": "move", "uid": "u1", "controller": True}
            ],
        },
        "status": {"conditions": [{"type": k, **c} for k, c in conds.items()]},
    }


def stuck_job(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "move", "uid": "u1", "resourceVersion": "7"},
        "spec": {"managedBy": "kueue.x-k8s.io/multikueue", "suspend": True, **spec},
        "status": {"active": 4, "ready": 4, "terminating": 0},
    }


def test_a_job_evicted_because_its_worker_was_lost_is_reset_only_as_read():
    assert prog.reset_patch(lost_workload(), stuck_job()) == [
        {"op": "test", "path": "/metadata/uid", "value": "u1"},
        {"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
        {"op": "replace", "path": "/status/active", "value": 0},
        {"op": "replace", "path": "/status/ready", "value": 0},
    ]


@pytest.mark.parametrize(
    "workload, job",
    [
        (lost_workload(Evicted={"reason": "Preempted", "message": "Preempted to accommodate a workload"}), stuck_job()),
        (lost_workload(Evicted={"reason": "InactiveWorkload"}), stuck_job()),
        (
            lost_workload(
                Evicted={
                    "message": 'Evicted due to AdmissionCheck in Retry state: "fleet-research" '
                    '(Workload evicted on worker cluster: "eks-h100", resetting for re-admission)'
                }
            ),
            stuck_job(),
        ),
        (lost_workload(Evicted={"status": "False"}), stuck_job()),
        (lost_workload(QuotaReserved={"status": "False"}), stuck_job()),
        (lost_workload(Finished={"status": "True"}), stuck_job()),
        (lost_workload(), stuck_job(suspend=False)),
        (lost_workload(), stuck_job(managedBy=None)),
        (lost_workload(), {**stuck_job(), "metadata": {"name": "move", "uid": "u2", "resourceVersion": "7"}}),
        (lost_workload(), {**stuck_job(), "status": {"active": 0, "ready": 0}}),
    ],
    ids=[
        "preempted",
        "deactivated",
        "another-check-message",
        "no-longer-evicted",
        "quota-released",
        "finished",
        "not-suspended",
        "not-multikueue",
        "another-job-of-that-name",
        "already-inactive",
    ],
)
def test_anything_else_is_left_to_kueue(workload, job):
    assert prog.reset_patch(workload, job) is None


def test_a_jobsets_replicated_jobs_still_counting_pods_are_reset():
    wl = lost_workload()
    wl["metadata"]["ownerReferences"][0].update(apiVersion="jobset.x-k8s.io/v1alpha2", kind="JobSet")
    js = copy.deepcopy(stuck_job())
    js.update(apiVersion="jobset.x-k8s.io/v1alpha2", kind="JobSet")
    js["status"] = {
        "replicatedJobsStatus": [
            {"name": "driver", "active": 0, "ready": 0, "succeeded": 1},
            {"name": "workers", "active": 2, "ready": 1},
        ]
    }
    ops = prog.reset_patch(wl, js)
    assert [o["path"] for o in ops if o["op"] == "replace"] == [
        "/status/replicatedJobsStatus/1/active",
        "/status/replicatedJobsStatus/1/ready",
    ]
    # a Job's workload does not reset a JobSet of the same name (the owner's kind must match)
    assert prog.reset_patch(lost_workload(), js) is None
