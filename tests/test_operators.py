"""Workload operators as add-ons (issue 31.1): JobSet, LeaderWorkerSet, KubeRay and Kubeflow Trainer. Their values
against the pinned charts' own values.yaml, the webhook replicas and PodDisruptionBudgets, Kueue's default
integrations following the installed operators, and the rules that refuse an integration without its operator and
the trainer without JobSet."""

from __future__ import annotations

import functools
import io
import tarfile

import pytest
import yaml
from conftest import HELM_RELEASE, UPSTREAM, manifest, release, render_config, rendered, stack_config
from values_paths import unknown_paths

from components.cli import main as cli
from components.cli.loader import SpecError, load_spec

# The frameworks of Kueue v0.19.2 (the FrameworkName constants of pkg/controller/jobs/*), written out by hand.
BASE = ["batch/job", "pod", "deployment", "statefulset"]
JOBSET_KINDS = ["jobset.x-k8s.io/jobset"]
LWS_KINDS = ["leaderworkerset.x-k8s.io/leaderworkerset"]
RAY_KINDS = ["ray.io/rayjob", "ray.io/raycluster"]
TRAINER_KINDS = ["trainer.kubeflow.org/trainjob"]
# addons key (as the stack file spells it) -> the upstream/ folder of its chart and its Helm release name
CHARTS = {
    "jobset": ("jobset", "jobset"),
    "leaderWorkerSet": ("lws", "lws"),
    "kuberay": ("kuberay-operator", "kuberay-operator"),
    "trainer": ("kubeflow-trainer", "kubeflow-trainer"),
}


def _with_addons(stack: str = "dev-aws", **addons: bool) -> dict:
    cfg = stack_config(stack)
    cfg["gpu-platform:addons"] = {**cfg["gpu-platform:addons"], **addons}
    return cfg


@functools.cache
def _all_operators():
    """dev-aws with every operator installed (no shipped stack installs LeaderWorkerSet)."""
    return render_config(_with_addons(jobset=True, leaderWorkerSet=True, kuberay=True, trainer=True), "dev-aws")


@functools.cache
def _chart_file(archive: str, member: str) -> str:
    with tarfile.open(UPSTREAM / "charts" / archive) as tar:
        f = tar.extractfile(member)
        assert f is not None, member
        return io.TextIOWrapper(f, encoding="utf-8").read()


# ------------------------------------------------------------------------------------ values vs upstream


# Values a template hands on whole (toYaml) as a Kubernetes object: any field of that object is a valid key below
# them, though upstream's values.yaml shows only some. addons key -> value -> (template, the line that hands it on).
PASSED_WHOLE = {
    "leaderWorkerSet": {
        # lws v0.9.0 values.yaml shows only runAsNonRoot; the platform adds seccompProfile (a PodSecurityContext
        # field) so the pod meets Pod Security 'restricted'
        "podSecurityContext": (
            "lws/templates/manager/deployment.yaml",
            "securityContext:\n        {{- toYaml .Values.podSecurityContext | nindent 8 }}",
        ),
    },
}
ARCHIVES = {
    "jobset": "jobset-0.12.0.tgz",
    "leaderWorkerSet": "lws-v0.9.0.tgz",
    "kuberay": "kuberay-operator-1.6.2.tgz",
    "trainer": "kubeflow-trainer-2.2.1.tgz",
}


@pytest.mark.parametrize("addon", sorted(CHARTS))
def test_every_value_path_exists_in_the_upstream_chart(addon):
    folder, name = CHARTS[addon]
    upstream = yaml.safe_load((UPSTREAM / folder / "values.yaml").read_text())
    values = dict(release(_all_operators(), name)["values"])
    assert values, "the platform sets values for every operator chart"
    for key, (template, line) in PASSED_WHOLE.get(addon, {}).items():
        assert line in _chart_file(ARCHIVES[addon], template), key
        assert isinstance(upstream[key], dict)
        values.pop(key)
    assert unknown_paths(values, upstream) == []


def test_the_values_check_would_catch_a_misspelled_path():
    upstream = yaml.safe_load((UPSTREAM / "lws" / "values.yaml").read_text())
    assert unknown_paths({"replicas": 2}, upstream) == ["replicas: not in upstream values.yaml"]


# ------------------------------------------------------------------------------- webhooks fail closed


def test_jobset_controller_runs_two_replicas_with_the_charts_pdb():
    """JobSet's webhooks fail closed: its chart's controller.replicas and controller.podDisruptionBudget drive the
    Deployment and the PDB (charts/jobset/templates/controller/ at v0.12.0)."""
    controller = release(rendered("prod-aws"), "jobset")["values"]["controller"]
    assert controller["replicas"] == 2
    assert controller["podDisruptionBudget"] == {"enabled": True, "minAvailable": 1}
    deployment = _chart_file("jobset-0.12.0.tgz", "jobset/templates/controller/deployment.yaml")
    pdb = _chart_file("jobset-0.12.0.tgz", "jobset/templates/controller/pod_disruption_budget.yaml")
    assert "replicas: {{ .Values.controller.replicas }}" in deployment
    assert "{{- if .Values.controller.podDisruptionBudget.enabled }}" in pdb
    assert "minAvailable: {{ .Values.controller.podDisruptionBudget.minAvailable }}" in pdb


def test_lws_controller_runs_two_replicas_with_the_platforms_pdb():
    """LeaderWorkerSet's webhooks fail closed and its chart has no PDB: two replicas (replicaCount) and a PDB of
    the platform's whose selector is the Deployment's (charts/lws/templates/manager/deployment.yaml at v0.9.0:
    control-plane plus lws.selectorLabels, name = the chart name, instance = the release name)."""
    r = _all_operators()
    assert release(r, "lws")["values"]["replicaCount"] == 2
    assert "replicas: {{ .Values.replicaCount }}" in _chart_file(
        "lws-v0.9.0.tgz", "lws/templates/manager/deployment.yaml"
    )
    pdb = manifest(r, "PodDisruptionBudget", "lws-controller-manager", "lws-system")
    assert pdb["spec"] == {
        "minAvailable": 1,
        "selector": {
            "matchLabels": {
                "control-plane": "controller-manager",
                "app.kubernetes.io/name": "lws",
                "app.kubernetes.io/instance": "lws",
            }
        },
    }


def test_trainer_manager_runs_two_replicas_with_the_platforms_pdb():
    """The trainer's webhooks fail closed (values.yaml webhook.failurePolicy: Fail) and its chart has no PDB: two
    replicas (manager.replicas) and a PDB of the platform's whose selector is the Deployment's
    (charts/kubeflow-trainer/templates/manager/ at v2.2.1: trainer.manager.selectorLabels)."""
    r = _all_operators()
    assert release(r, "kubeflow-trainer")["values"]["manager"]["replicas"] == 2
    upstream = yaml.safe_load((UPSTREAM / "kubeflow-trainer" / "values.yaml").read_text())
    assert upstream["webhook"]["failurePolicy"] == "Fail"
    archive = "kubeflow-trainer-2.2.1.tgz"
    assert "replicas: {{ .Values.manager.replicas }}" in _chart_file(
        archive, "kubeflow-trainer/templates/manager/deployment.yaml"
    )
    helpers = _chart_file(archive, "kubeflow-trainer/templates/manager/_helpers.tpl")
    assert "app.kubernetes.io/part-of: kubeflow\napp.kubernetes.io/component: manager" in helpers
    pdb = manifest(r, "PodDisruptionBudget", "kubeflow-trainer-manager", "kubeflow-system")
    assert pdb["spec"] == {
        "minAvailable": 1,
        "selector": {
            "matchLabels": {
                "app.kubernetes.io/name": "kubeflow-trainer",
                "app.kubernetes.io/instance": "kubeflow-trainer",
                "app.kubernetes.io/part-of": "kubeflow",
                "app.kubernetes.io/component": "manager",
            }
        },
    }


def test_the_trainer_installs_no_second_jobset_and_waits_for_the_platforms():
    """The chart's JobSet dependency is on by default and must be off when JobSet is installed already
    (values.yaml jobset.install); the trainer's release waits for the platform's JobSet release."""
    upstream = yaml.safe_load((UPSTREAM / "kubeflow-trainer" / "values.yaml").read_text())
    assert upstream["jobset"]["install"] is True
    r = _all_operators()
    assert release(r, "kubeflow-trainer")["values"]["jobset"] == {"install": False}
    releases = {x.inputs.get("name"): x for x in r.resources if x.type == HELM_RELEASE}
    assert releases["jobset"].name in releases["kubeflow-trainer"].depends_on


def test_lws_pdb_only_with_the_addon():
    with pytest.raises(KeyError):
        manifest(rendered("prod-aws"), "PodDisruptionBudget", "lws-controller-manager", "lws-system")


# ------------------------------------------------------------------------- Kueue follows the operators


@pytest.mark.parametrize(
    ("addons", "expected"),
    [
        ({}, BASE),
        ({"jobset": True}, BASE + JOBSET_KINDS),
        ({"leaderWorkerSet": True}, BASE + LWS_KINDS),
        ({"kuberay": True}, BASE + RAY_KINDS),
        ({"jobset": True, "trainer": True}, BASE + JOBSET_KINDS + TRAINER_KINDS),
        (
            {"jobset": True, "leaderWorkerSet": True, "kuberay": True, "trainer": True},
            BASE + JOBSET_KINDS + LWS_KINDS + RAY_KINDS + TRAINER_KINDS,
        ),
    ],
    ids=["none", "jobset", "lws", "kuberay", "trainer", "all"],
)
def test_default_integrations_follow_the_installed_operators(addons, expected):
    assert load_spec(_with_addons(**addons)).scheduling.kueue_integrations == expected


def test_a_named_integration_list_is_kept_as_written():
    cfg = _with_addons(kuberay=True)
    cfg["gpu-platform:scheduling"] = {"kueueIntegrations": ["batch/job", "pod"]}
    assert load_spec(cfg).scheduling.kueue_integrations == ["batch/job", "pod"]


# ---------------------------------------------------------------------- the integration needs its operator


@pytest.mark.parametrize(
    ("integration", "addon"),
    [
        ("jobset.x-k8s.io/jobset", "jobset"),
        ("leaderworkerset.x-k8s.io/leaderworkerset", "leaderWorkerSet"),
        ("ray.io/rayjob", "kuberay"),
        ("ray.io/raycluster", "kuberay"),
        ("ray.io/rayservice", "kuberay"),
        ("trainer.kubeflow.org/trainjob", "trainer"),
    ],
)
def test_an_integration_without_its_operator_is_refused(integration, addon):
    cfg = _with_addons()
    cfg["gpu-platform:scheduling"] = {"kueueIntegrations": ["batch/job", "pod", integration]}
    with pytest.raises(SpecError) as err:
        load_spec(cfg)
    assert [(p.path, p.message) for p in err.value.problems] == [
        (
            "gpu-platform:scheduling.kueueIntegrations[2]",
            f"{integration} needs its operator: set addons.{addon}: true, or drop it from the list",
        )
    ]
    cfg["gpu-platform:addons"][addon] = True
    if addon == "trainer":
        cfg["gpu-platform:addons"]["jobset"] = True
    assert load_spec(cfg).scheduling.kueue_integrations == ["batch/job", "pod", integration]


def test_the_trainer_needs_jobset():
    """TrainJobs run as JobSets and the chart's own JobSet stays off: the trainer alone is refused."""
    with pytest.raises(SpecError) as err:
        load_spec(_with_addons(trainer=True))
    assert [(p.path, p.message) for p in err.value.problems] == [
        ("gpu-platform:addons.trainer", "Kubeflow Trainer runs each TrainJob as a JobSet: set addons.jobset: true too")
    ]
    assert load_spec(_with_addons(trainer=True, jobset=True)).addons.trainer


def test_kubeflow_kinds_are_not_refused():
    """The Kubeflow Training and MPI Operators are not add-ons: their kinds may be listed (installed by the user)."""
    cfg = _with_addons()
    cfg["gpu-platform:scheduling"] = {"kueueIntegrations": ["batch/job", "pod", "kubeflow.org/pytorchjob"]}
    assert load_spec(cfg).scheduling.kueue_integrations[-1] == "kubeflow.org/pytorchjob"


def test_the_cli_refuses_it_in_one_line_with_exit_2(tmp_path, capsys):
    cfg = _with_addons()
    cfg["gpu-platform:scheduling"] = {"kueueIntegrations": ["batch/job", "pod", "jobset.x-k8s.io/jobset"]}
    path = tmp_path / "Pulumi.dev-aws.yaml"
    path.write_text(yaml.safe_dump({"config": cfg}))
    assert cli.main(["plan", "dev-aws", "--config", str(path)]) == cli.EXIT_INVALID == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.splitlines() == [
        f"{cli._display(path)}: gpu-platform:scheduling.kueueIntegrations[2]: jobset.x-k8s.io/jobset needs its "
        "operator: set addons.jobset: true, or drop it from the list"
    ]
