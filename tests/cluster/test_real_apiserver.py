"""Every shipped stack (and the coverage stack) on a real kube-apiserver 1.35 with kube-controller-manager:
every rendered object accepted, a second apply changes nothing, and the guards the platform promises each
tenant are enforced by the server itself (issue 25).

Expected verdicts come from the stack file and from Kubernetes, not from the code that renders the guards:
the PriorityClasses the server holds and their values, the tenant's ``priority`` from its stack file; a class
valued above the tenant's is refused, one at or below admitted; ``system-node-critical`` and
``system-cluster-critical`` (built into the server, 2000001000 and 2000000000) are refused in every tenant
namespace. Each probe is a server-side dry-run create: the answer is the server's.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from apply import apply_rendering, diff, install_crds
from cluster_stacks import ALL, COVERAGE, stack_file, stack_file_config
from controlplane import ControlPlane
from probes import Api, container, cronjob, deployment, job, pod

from components.cli.loader import load_spec, stack_files_in
from components.cli.synth import render
from components.explain.rendering import Rendering

ROOT = Path(__file__).resolve().parents[2]
SYSTEM_CLASSES = ("system-node-critical", "system-cluster-critical")
KUEUE_PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
CEILING = "priority ceiling"  # what the platform's refusal says, as the README documents it


@dataclass
class Cluster:
    stack: str
    config: dict[str, Any]
    rendering: Rendering
    cp: ControlPlane
    api: Api
    levels: list[list[dict[str, Any]]]

    @property
    def docs(self) -> list[dict[str, Any]]:
        return [d for level in self.levels for d in level]

    def tenants(self) -> list[dict[str, Any]]:
        return self.config.get("gpu-platform:tenants", [])

    def class_values(self) -> dict[str, int]:
        items = self.api.get("scheduling.k8s.io/v1", "PriorityClass")["items"]
        return {i["metadata"]["name"]: i["value"] for i in items}


def _wait_until_usable(c: Cluster) -> None:
    """The controller manager has made each tenant namespace's default ServiceAccount and counted each quota
    (the quota admission plugin refuses pods in a namespace whose quota it has not counted yet)."""
    for t in c.tenants():
        ns = t["name"]
        c.api.wait_for(f"{ns}/default ServiceAccount", lambda ns=ns: _exists(c, "v1", "ServiceAccount", ns, "default"))
        for rq in c.api.get("v1", "ResourceQuota", ns)["items"]:
            name = rq["metadata"]["name"]
            c.api.wait_for(
                f"{ns}/{name} quota status",
                lambda ns=ns, name=name: bool(c.api.get("v1", "ResourceQuota", ns, name).get("status", {}).get("hard")),
            )


def _exists(c: Cluster, api_version: str, kind: str, ns: str, name: str) -> bool:
    try:
        c.api.get(api_version, kind, ns, name)
    except LookupError:
        return False
    return True


@pytest.fixture(scope="module", params=ALL)
def cluster(request):
    stack = request.param
    config = stack_file_config(stack)
    with stack_files_in(stack_file(stack).parent):  # a fleet manager's workers beside it
        rendering = render(stack, config)
    with ControlPlane(stack) as cp:
        install_crds(cp)
        levels = apply_rendering(cp, rendering)
        c = Cluster(stack, config, rendering, cp, Api(cp), levels)
        _wait_until_usable(c)
        yield c
        dials = cp.dials_outside_loopback()
        assert dials == [], f"the server dialled outside 127.0.0.0/8: {dials[:3]}"


# ------------------------------------------------------------------------------------------- the objects


def test_every_rendered_object_is_accepted_and_a_second_apply_changes_nothing(cluster: Cluster):
    assert cluster.docs, "the stack renders objects"
    assert diff(cluster.cp, cluster.docs) == ""
    apply_rendering(cluster.cp, cluster.rendering)  # again: no refusal (an immutable field would be one)
    assert diff(cluster.cp, cluster.docs) == ""


# ------------------------------------------------------------------------------------------ the ceiling


def _ceilings(c: Cluster) -> list[tuple[str, list[str], list[str]]]:
    """(tenant, forbidden, allowed) per tenant, from the stack file's ``priority`` and the server's classes."""
    values = c.class_values()
    spec = load_spec(c.config, stack_file(c.stack).parent)
    platform = {pc.name for pc in spec.priority_classes}
    out = []
    for t in spec.tenants:
        mine = values[t.priority]
        forbidden = sorted(n for n in platform if values[n] > mine)
        allowed = sorted(n for n in platform if values[n] <= mine)
        out.append((t.name, forbidden, allowed))
    return out


def _probes(name: str, cls: str) -> list[dict[str, Any]]:
    """The ways a workload names a PriorityClass: a Pod, a Deployment's, a Job's, a CronJob's pod template, and
    Kueue's priority label."""
    return [
        pod(f"{name}-pod", cls),
        deployment(f"{name}-deploy", cls),
        job(f"{name}-job", cls),
        cronjob(f"{name}-cron", cls),
        pod(f"{name}-label", None, labels={KUEUE_PRIORITY_LABEL: cls}),
        job(f"{name}-job-label", None, labels={KUEUE_PRIORITY_LABEL: cls}),
    ]


def test_classes_above_a_tenants_ceiling_are_refused_by_the_server(cluster: Cluster):
    wrong = []
    checked = 0
    for tenant, forbidden, _ in _ceilings(cluster):
        for cls in forbidden:
            for obj in _probes("above", cls):
                v = cluster.api.dry_run(obj, tenant)
                checked += 1
                if v.allowed or CEILING not in v.message:
                    wrong.append(f"{tenant}: {obj['kind']} {obj['metadata']['name']} with {cls}: {v}")
    assert wrong == []
    if any(f for _, f, _ in _ceilings(cluster)):
        assert checked


def test_classes_at_or_below_the_ceiling_are_admitted_and_no_tenant_fails_closed(cluster: Cluster):
    """Including tenants without a ceiling (their class is the top one): the guard must not refuse them."""
    wrong = []
    for tenant, _, allowed in _ceilings(cluster):
        assert allowed, tenant  # at least its own class
        for cls in allowed:
            for obj in _probes("within", cls):
                v = cluster.api.dry_run(obj, tenant)
                if not v.allowed:
                    wrong.append(f"{tenant}: {obj['kind']} {obj['metadata']['name']} with {cls}: {v}")
        v = cluster.api.dry_run(pod("no-class", None), tenant)
        if not v.allowed:
            wrong.append(f"{tenant}: a Pod with no class: {v}")
    assert wrong == []


def test_kueue_workloads_above_the_ceiling_are_refused(cluster: Cluster):
    """Kueue resolves any job kind's priority into the Workload it creates: refused there, the job stays
    suspended. (kueue v0.19.2 Workload v1beta2: spec.priorityClassRef.)"""
    if not any(d["apiVersion"].startswith("kueue.x-k8s.io/") for d in cluster.docs):
        pytest.skip(f"{cluster.stack} runs no Kueue")
    wrong = []
    values = cluster.class_values()
    for tenant, forbidden, allowed in _ceilings(cluster):
        for cls, want in [*((c, False) for c in forbidden), *((c, True) for c in allowed)]:
            v = cluster.api.dry_run(_workload(cls, values[cls]), tenant)
            if v.allowed != want or (not want and CEILING not in v.message):
                wrong.append(f"{tenant}: Workload at {cls}: {v}")
    assert wrong == []


def _workload(cls: str, value: int) -> dict[str, Any]:
    """A Workload as Kueue makes one for a job (its CRD requires ``priority`` beside ``priorityClassRef``)."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": f"wl-{cls}"},
        "spec": {
            "queueName": "default",
            "priorityClassRef": {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": cls},
            "priority": value,
            "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [container()]}}}],
        },
    }


def test_system_classes_are_refused_in_every_tenant_namespace(cluster: Cluster):
    wrong = []
    for t in cluster.tenants():
        for cls in SYSTEM_CLASSES:
            for obj in (pod(f"sys-{cls}", cls), deployment(f"sys-{cls}", cls), cronjob(f"sys-{cls}", cls)):
                v = cluster.api.dry_run(obj, t["name"])
                if v.allowed:
                    wrong.append(f"{t['name']}: {obj['kind']} with {cls}: {v}")
    assert wrong == []


# --------------------------------------------------------------------------------- quota, defaults, PSA


def _annotation_list(c: Cluster, ns: str, key: str) -> list[str]:
    annotations = c.api.get("v1", "Namespace", None, ns)["metadata"].get("annotations", {})
    return [v for v in annotations.get(key, "").split(",") if v]


def _gpu_pod(c: Cluster, ns: str, name: str, resource: str, units: int) -> dict[str, Any]:
    """A pod asking for ``units`` of ``resource``, written as the tenant's scheduler requires: in a Volcano
    tenant's namespace scheduled by Volcano on one of its pools, one unit per container on a one-unit pool."""
    volcano = [t for t in c.tenants() if t["name"] == ns and t.get("scheduler") == "volcano"]
    if not volcano:
        return pod(name, None, containers=[container(requests={resource: units}, limits={resource: units})])
    pools = _annotation_list(c, ns, "gpu-platform/pools")
    one_unit = set(_annotation_list(c, ns, "gpu-platform/one-unit-pools"))
    pool = next((p for p in pools if p not in one_unit), pools[0])
    sizes = [1] * units if pool in one_unit else [units]
    containers = [{**container(limits={resource: n}), "name": f"c{i}"} for i, n in enumerate(sizes)]
    return pod(name, None, containers=containers, schedulerName="volcano", nodeSelector={"gpu-platform/pool": pool})


def test_a_pod_over_the_tenants_gpu_quota_is_refused(cluster: Cluster):
    if not cluster.config.get("gpu-platform:nodePools"):
        pytest.skip(f"{cluster.stack} has no GPU pool (a fleet manager runs its tenants' jobs on its workers)")
    checked = 0
    for t in cluster.tenants():
        ns = t["name"]
        for rq in cluster.api.get("v1", "ResourceQuota", ns)["items"]:
            for key, hard in rq["spec"].get("hard", {}).items():
                if not key.startswith("requests.nvidia.com/"):
                    continue
                resource = key[len("requests.") :]
                n = int(hard)
                v = cluster.api.dry_run(_gpu_pod(cluster, ns, "over", resource, n + 1), ns)
                assert not v.allowed and "exceeded quota" in v.message, f"{ns} {resource} {n + 1}: {v}"
                checked += 1
                if n:
                    v = cluster.api.dry_run(_gpu_pod(cluster, ns, "within", resource, n), ns)
                    assert v.allowed, f"{ns} {resource} {n}: {v}"
    assert checked, "every stack caps some GPU resource"


def test_gpu_pods_of_a_volcano_tenant_are_volcanos_and_stay_on_its_pools(cluster: Cluster):
    """gpu-platform-volcano-tenant-pods on the server: a GPU pod of the default scheduler, one on no pool or on a
    pool the tenant does not have, and one asking two units of a one-unit pool are refused; the same pod written
    as the tenant must is admitted."""
    tenants = [t for t in cluster.tenants() if t.get("scheduler") == "volcano"]
    if not tenants:
        pytest.skip(f"{cluster.stack} has no Volcano tenant")
    all_pools = sorted({p["name"] for p in cluster.config.get("gpu-platform:nodePools", [])})
    for t in tenants:
        ns, mine = t["name"], sorted(t["gpuQuota"])
        assert _annotation_list(cluster, ns, "gpu-platform/pools") == mine
        one_unit = _annotation_list(cluster, ns, "gpu-platform/one-unit-pools")

        def volcano_pod(pool: str | None, units: int = 1, scheduler: str | None = "volcano") -> dict[str, Any]:
            extra: dict[str, Any] = {"containers": [container(limits={"nvidia.com/gpu": units})]}
            if scheduler:
                extra["schedulerName"] = scheduler
            if pool:
                extra["nodeSelector"] = {"gpu-platform/pool": pool}
            return pod("vp", None, **extra)

        v = cluster.api.dry_run(volcano_pod(mine[0], scheduler=None), ns)
        assert not v.allowed and "schedulerName: volcano" in v.message, v
        v = cluster.api.dry_run(volcano_pod(None), ns)
        assert not v.allowed and "select one of this tenant's pools" in v.message, v
        for other in (p for p in all_pools if p not in mine):
            v = cluster.api.dry_run(volcano_pod(other), ns)
            assert not v.allowed and "select one of this tenant's pools" in v.message, (other, v)
        for pool in mine:
            assert cluster.api.dry_run(volcano_pod(pool), ns).allowed, pool
        for pool in one_unit:
            v = cluster.api.dry_run(volcano_pod(pool, units=2), ns)
            assert not v.allowed and "one unit at most" in v.message, (pool, v)
        # a CPU pod is left to any scheduler
        assert cluster.api.dry_run(pod("cpu", None), ns).allowed


def test_limitrange_defaults_reach_a_pod_without_requests(cluster: Cluster):
    for t in cluster.tenants():
        ns = t["name"]
        (lr,) = cluster.api.get("v1", "LimitRange", ns)["items"]
        want = lr["spec"]["limits"][0]["defaultRequest"]
        v = cluster.api.dry_run(pod("defaults", None), ns)
        assert v.allowed, f"{ns}: {v}"
        assert v.object["spec"]["containers"][0]["resources"]["requests"] == want, ns


def test_a_privileged_pod_is_refused_by_pod_security(cluster: Cluster):
    for t in cluster.tenants():
        ns = t["name"]
        priv = pod("priv", None, containers=[{**container(), "securityContext": {"privileged": True}}])
        assert cluster.api.dry_run(pod("unprivileged", None), ns).allowed, ns  # the same pod, not privileged
        v = cluster.api.dry_run(priv, ns)
        assert not v.allowed and "violates PodSecurity" in v.message, f"{ns}: {v}"


# -------------------------------------------------------------------------------------- examples


def test_the_coverage_stacks_are_on_the_server_too():
    assert COVERAGE, "tests/fixtures/coverage/ holds the coverage stacks"


def _examples_for(stack: str) -> list[Path]:
    from test_examples import FILES, _target  # the examples' own "# Target stack:" reader

    return [path for path in FILES if _target(path)["stack"] == stack]


def test_every_example_is_admitted_in_its_target_stack(cluster: Cluster):
    examples = _examples_for(cluster.stack)
    if not examples:
        pytest.skip(f"no example targets {cluster.stack}")
    for path in examples:
        proc = cluster.cp.kubectl("create", "--dry-run=server", "-f", str(path), check=False)
        assert proc.returncode == 0, f"{path.name}: {proc.stderr}"


# --------------------------------------------------------------------------------------------- DRA


def test_dra_claims_over_the_device_class_quota_are_refused(cluster: Cluster):
    keys = [
        (t["name"], k, int(v))
        for t in cluster.tenants()
        for rq in cluster.api.get("v1", "ResourceQuota", t["name"])["items"]
        for k, v in rq["spec"].get("hard", {}).items()
        if k.endswith(".deviceclass.resource.k8s.io/devices")
    ]
    if not keys:
        pytest.skip(f"{cluster.stack} has no DRA quota")
    for ns, key, n in keys:
        device_class = key[: -len(".deviceclass.resource.k8s.io/devices")]
        v = cluster.api.dry_run(_claim(device_class, n + 1), ns)
        assert not v.allowed and "exceeded quota" in v.message, f"{ns} {device_class} {n + 1}: {v}"
        if n:
            v = cluster.api.dry_run(_claim(device_class, n), ns)
            assert v.allowed, f"{ns} {device_class} {n}: {v}"


def _claim(device_class: str, count: int) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "claim"},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpus",
                        "exactly": {"deviceClassName": device_class, "allocationMode": "ExactCount", "count": count},
                    }
                ]
            }
        },
    }


# ------------------------------------------------------------------------------------------ Volcano


def test_volcano_jobs_must_name_their_tenants_queue(cluster: Cluster):
    tenants = [t["name"] for t in cluster.tenants() if t.get("scheduler") == "volcano"]
    if not tenants:
        pytest.skip(f"{cluster.stack} has no Volcano tenant")
    for ns in tenants:
        other = next((t["name"] for t in cluster.tenants() if t["name"] != ns), "default")
        ok = cluster.api.dry_run(_volcano_job(ns), ns)
        assert ok.allowed, f"{ns}: {ok}"
        bad = cluster.api.dry_run(_volcano_job(other), ns)
        assert not bad.allowed and ns in bad.message, f"{ns} naming {other}: {bad}"


def _volcano_job(queue: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "vj"},
        "spec": {
            "queue": queue,
            "minAvailable": 1,
            "schedulerName": "volcano",
            "tasks": [
                {
                    "name": "t",
                    "replicas": 1,
                    "template": {"spec": {"containers": [container()], "restartPolicy": "Never"}},
                }
            ],
        },
    }


# --------------------------------------------------------------------------------------- day 2 on the server


def _bumped_workers(cluster: Cluster, folder: Path, charts: dict[str, Any]) -> Path:
    """Where a fleet manager's workers are read from for a chart bump: copies of their stack files with the same
    bump (the fleet's rule: manager and workers on one Kueue minor, the workers upgraded first)."""
    fleet = cluster.config.get("gpu-platform:fleet")
    if not fleet:
        return stack_file(cluster.stack).parent
    for path in stack_file(cluster.stack).parent.glob("Pulumi.*.yaml"):
        doc = yaml.safe_load(path.read_text())
        if "gpu-platform:fleetWorker" in (doc.get("config") or {}):
            doc["config"]["gpu-platform:charts"] = {**(doc["config"].get("gpu-platform:charts") or {}), **charts}
            doc["config"].pop("gpu-platform:chartSource", None)
        (folder / path.name).write_text(yaml.safe_dump(doc))
    return folder


def test_a_chart_bump_replaces_the_webhook_gate_job_instead_of_updating_it(cluster: Cluster, tmp_path: Path):
    """A chart bump changes the gate Job's pod template, which the server refuses to update in place
    (``spec.template: field is immutable``): the new render must be a new Job, and applying it is accepted."""
    gates = [d for d in cluster.docs if d["kind"] == "Job" and "-webhook-ready" in d["metadata"]["name"]]
    if not gates:
        pytest.skip(f"{cluster.stack} has no webhook gate")
    config = copy.deepcopy(cluster.config)
    charts = dict(config.get("gpu-platform:charts") or {})
    bumped = {key: {"version": "99.0.0"} for key in ("kueue", "volcano", "trainer", "gpuOperator")}
    config["gpu-platform:charts"] = {**charts, **bumped}
    config.pop("gpu-platform:chartSource", None)  # the repository bundles only the pinned versions
    with stack_files_in(_bumped_workers(cluster, tmp_path, bumped)):
        new = [
            d
            for d in render(cluster.stack, config).manifests
            if d["kind"] == "Job" and "-webhook-ready" in d["metadata"]["name"]
        ]
    assert len(new) == len(gates)
    old_names = {(g["metadata"]["namespace"], g["metadata"]["name"]) for g in gates}
    for doc in new:
        key = (doc["metadata"]["namespace"], doc["metadata"]["name"])
        assert key not in old_names, f"{key} keeps its name: the server would refuse the update"
        cluster.cp.kubectl(
            "apply", "--server-side", "--field-manager=gpu-platform", "-f", "-", stdin=yaml.safe_dump(doc)
        )
    # and the premise: updating an old gate in place with a changed template is what the server refuses
    old = copy.deepcopy(gates[0])
    old["spec"]["template"].setdefault("metadata", {}).setdefault("annotations", {})["probe"] = "changed"
    proc = cluster.cp.kubectl(
        "apply", "--server-side", "--field-manager=gpu-platform", "-f", "-", stdin=yaml.safe_dump(old), check=False
    )
    assert proc.returncode != 0 and "immutable" in proc.stderr


# --------------------------------------------------------------------------------------- the harness itself


def test_a_dial_outside_loopback_in_a_server_log_is_found(tmp_path):
    """The loopback guard reads what kube-apiserver logs when it dials a webhook or an aggregated API."""
    cp = ControlPlane("guard-selftest")
    try:
        log = tmp_path / "kube-apiserver.log"
        log.write_text(
            'W1126 dispatcher.go:210] Failed calling webhook: Post "https://kueue-webhook-service.kueue-system.svc:443/'
            'mutate": dial tcp 10.0.0.12:443: connect: connection refused\n'
            "I1126 something: dial tcp 127.0.128.1:443: connect: connection refused\n"
            "I1126 proxy: dial tcp [::1]:9443: i/o timeout\n"
            "I1126 proxy: dial tcp 192.168.1.4:9443: i/o timeout\n"
        )
        cp.logs = {"kube-apiserver": log}
        found = cp.dials_outside_loopback()
        assert len(found) == 2 and "10.0.0.12" in found[0] and "192.168.1.4" in found[1]
    finally:
        cp.stop()


def test_the_offline_cel_helper_agrees_with_the_server_on_every_ceiling_probe(cluster: Cluster):
    """tests/test_admission_policies.py evaluates the rendered policies offline (a CEL engine of its own); here
    its verdicts are compared with the server's on the same requests, so the fast path cannot drift from the
    real one again (it once passed a ceiling the server never enforced)."""
    from test_admission_policies import admit

    policy = next(
        (
            d["spec"]
            for d in cluster.docs
            if d["kind"] == "ValidatingAdmissionPolicy" and "priority-ceiling" in d["metadata"]["name"]
        ),
        None,
    )
    if policy is None:
        pytest.skip(f"{cluster.stack} has no tenants")
    kinds = {"Pod": "", "Deployment": "apps", "Job": "batch", "CronJob": "batch"}
    compared = 0
    for tenant, forbidden, allowed in _ceilings(cluster):
        namespace = cluster.api.get("v1", "Namespace", None, tenant)
        for cls in [*forbidden, *allowed, *SYSTEM_CLASSES]:
            for obj in _probes("agree", cls):
                offline = admit(policy, obj, obj["kind"], kinds[obj["kind"]], namespace)
                server = cluster.api.dry_run(obj, tenant)
                assert server.allowed == (offline == []), (
                    f"{tenant} {obj['kind']} {cls}: offline {offline}, server {server}"
                )
                if offline:
                    assert any(msg in server.message for msg in offline), (offline, server.message)
                compared += 1
    assert compared


def test_objects_are_applied_after_what_they_depend_on():
    """The apply order follows the records' dependsOn (by resource name, as the synth records them), each
    namespaced object's Namespace and each custom resource's CRD: on prod-aws a LocalQueue comes after its
    ClusterQueue, which comes after the ResourceFlavors it names, which come after the webhook gate Job."""
    from apply import levels

    lv = levels(render("prod-aws", stack_file_config("prod-aws")))
    at = {
        (d["kind"], d["metadata"]["name"], d["metadata"].get("namespace")): i for i, docs in enumerate(lv) for d in docs
    }
    gate = next(i for (kind, name, _), i in at.items() if kind == "Job" and name.startswith("kueue-webhook-ready"))
    assert at[("ResourceFlavor", "a100-train", None)] > gate
    assert at[("ClusterQueue", "research", None)] > at[("ResourceFlavor", "a100-train", None)]
    assert at[("LocalQueue", "default", "research")] > at[("ClusterQueue", "research", None)]
    assert at[("ResourceQuota", "gpu-quota", "research")] > at[("Namespace", "research", None)]
