"""Issue 40.2 on a real kube-apiserver 1.35 (with kube-controller-manager): every kind a Volcano tenant runs ends
in a PodGroup of the tenant's queue, with prod-aws's rendered objects (its namespaces and admission policies)
applied.

What runs for real: the API server (CRD defaulting of the PodGroup's queue, the tenant pods and queue policies),
kube-controller-manager (the pods of Deployments, StatefulSets and Jobs). What is modelled, because Volcano's
and the operators' Go modules are not served here (docs/development.md): the PodGroup each controller creates,
and Volcano's /podgroups/mutate webhook, each from its source at the pinned version (cited at each model). The
order is the server's: a mutating webhook runs before the validating policies, so the model is applied to the
object the server defaulted (a dry-run create), and the mutated object is then created for real.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from apply import apply_rendering, install_crds
from cluster_stacks import stack_file_config
from controlplane import ControlPlane
from probes import Api, container

from components.cli.synth import render

STACK = "prod-aws"
TENANT = "applied-ml"  # prod-aws's Volcano tenant; its pool is a100-gang
QUEUE = "scheduling.volcano.sh/queue-name"
PG_API = "scheduling.volcano.sh/v1beta1"


@pytest.fixture(scope="module")
def api():
    with ControlPlane(STACK) as cp:
        install_crds(cp)
        apply_rendering(cp, render(STACK, stack_file_config(STACK)))
        a = Api(cp)
        a.wait_for(f"{TENANT}/default ServiceAccount", lambda: _has_default_sa(a))
        for rq in a.get("v1", "ResourceQuota", TENANT)["items"]:
            name = rq["metadata"]["name"]
            a.wait_for(
                f"{name} counted",
                lambda n=name: bool(a.get("v1", "ResourceQuota", TENANT, n).get("status", {}).get("hard")),
            )
        yield a


def _has_default_sa(a: Api) -> bool:
    try:
        a.get("v1", "ServiceAccount", TENANT, "default")
    except LookupError:
        return False
    return True


def _create(a: Api, obj: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    import json

    status, body = a.cp.request("POST", a.path(obj["apiVersion"], obj["kind"], TENANT), obj)
    return status, (json.loads(body) if body.startswith("{") else {"message": body})


def _gpu_pod_spec(**extra: Any) -> dict[str, Any]:
    return {
        "schedulerName": "volcano",
        "nodeSelector": {"gpu-platform/pool": "a100-gang"},
        "containers": [container(limits={"nvidia.com/gpu": 1})],
        **extra,
    }


def _template(name: str, annotations: dict[str, str] | None = None, restart: str = "Always") -> dict[str, Any]:
    meta: dict[str, Any] = {"labels": {"app": name}}
    if annotations:
        meta["annotations"] = annotations
    return {"metadata": meta, "spec": _gpu_pod_spec(restartPolicy=restart)}


# ------------------------------------------------------------------------------------- the models


def vc_controller_podgroup(pod: dict[str, Any]) -> dict[str, Any]:
    """The PodGroup vc-controller creates for a volcano pod without one (volcano v1.15.1
    pkg/controllers/podgroup/pg_controller_handler.go buildPodGroupFromPod): spec.queue only from the pod's own
    scheduling.volcano.sh/queue-name annotation; owners' annotations go to metadata.annotations under the
    "volcano.sh/" prefix only (inheritUpperAnnotations), never to the queue."""
    spec: dict[str, Any] = {"minMember": 1}
    queue = (pod["metadata"].get("annotations") or {}).get(QUEUE)
    if queue is not None:
        spec["queue"] = queue
    uid = pod["metadata"].get("uid") or pod["metadata"]["name"]
    return {"apiVersion": PG_API, "kind": "PodGroup", "metadata": {"name": f"podgroup-{uid}"}, "spec": spec}


def kuberay_podgroup(owner: dict[str, Any]) -> dict[str, Any]:
    """KubeRay's PodGroup for a RayCluster/RayJob with batchScheduler volcano (kuberay v1.6.2 ray-operator/
    controllers/ray/batchscheduler/volcano/volcano_scheduler.go createPodGroup): queue from the owner's
    volcano.sh/queue-name label."""
    spec: dict[str, Any] = {"minMember": 2}
    label = (owner["metadata"].get("labels") or {}).get("volcano.sh/queue-name")
    if label:
        spec["queue"] = label
    name = f"ray-{owner['metadata']['name']}-pg"
    return {"apiVersion": PG_API, "kind": "PodGroup", "metadata": {"name": name}, "spec": spec}


def volcano_job_podgroup(job: dict[str, Any]) -> dict[str, Any]:
    """A Volcano Job's PodGroup: the Job's spec.queue (pkg/controllers/job/job_controller_actions.go)."""
    name = f"{job['metadata']['name']}-pg"
    spec = {"minMember": 1, "queue": job["spec"]["queue"]}
    return {"apiVersion": PG_API, "kind": "PodGroup", "metadata": {"name": name}, "spec": spec}


def podgroups_mutate(pg: dict[str, Any], namespace: dict[str, Any]) -> dict[str, Any]:
    """Volcano's /podgroups/mutate on CREATE (pkg/webhooks/admission/podgroups/mutate/mutate_podgroup.go
    createPodGroupPatch): a PodGroup in queue "default" gets the namespace's queue annotation, if any."""
    out = copy.deepcopy(pg)
    ns_queue = (namespace["metadata"].get("annotations") or {}).get(QUEUE)
    if out["spec"].get("queue") == "default" and ns_queue is not None:
        out["spec"]["queue"] = ns_queue
    return out


def crd_queue_default(a: Api) -> str:
    """The PodGroup CRD's default for spec.queue, as the server holds it (upstream/crds/volcano, v1.15.1)."""
    crd = a.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, "podgroups.scheduling.volcano.sh")
    (v,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1beta1"]
    return v["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["queue"]["default"]


def admit_podgroup(a: Api, pg: dict[str, Any], namespace: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """What the server does with a PodGroup CREATE, in its order: structural defaulting at decoding (the CRD's
    queue default, read from the server's CRD), the mutating webhook (the model above), then the validating
    policies, which the real create runs."""
    defaulted = copy.deepcopy(pg)
    defaulted["spec"].setdefault("queue", crd_queue_default(a))
    return _create(a, podgroups_mutate(defaulted, namespace))


# ---------------------------------------------------------------------------------- the workloads


def _pods_of(a: Api, selector_app: str, want: int) -> list[dict[str, Any]]:
    def pods() -> list[dict[str, Any]]:
        items = a.get("v1", "Pod", TENANT)["items"]
        return [p for p in items if p["metadata"].get("labels", {}).get("app") == selector_app]

    a.wait_for(f"{want} pod(s) of {selector_app}", lambda: len(pods()) >= want)
    return pods()


def _controller_kinds() -> list[tuple[str, dict[str, Any]]]:
    """Kinds whose pods kube-controller-manager makes here: Deployment, StatefulSet, batch Job (what a JobSet's
    controller creates for each replicated Job, and an LWS's controller a StatefulSet for its groups)."""
    return [
        (
            "deployment",
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "deployment"},
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": {"app": "deployment"}},
                    "template": _template("deployment"),
                },
            },
        ),
        (
            "statefulset",
            {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "metadata": {"name": "statefulset"},
                "spec": {
                    "replicas": 1,
                    "serviceName": "statefulset",
                    "selector": {"matchLabels": {"app": "statefulset"}},
                    "template": _template("statefulset"),
                },
            },
        ),
        (
            "job",
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": "job"},
                "spec": {"template": _template("job", restart="Never")},
            },
        ),
    ]


def test_the_tenant_namespace_names_its_queue_for_volcanos_webhook(api: Api):
    ns = api.get("v1", "Namespace", None, TENANT)
    assert ns["metadata"]["annotations"][QUEUE] == TENANT


@pytest.mark.parametrize("kind", ["deployment", "statefulset", "job"])
def test_pods_kube_controller_manager_makes_end_in_the_tenants_queue(api: Api, kind: str):
    (obj,) = [o for k, o in _controller_kinds() if k == kind]
    status, body = _create(api, obj)
    assert status == 201, body
    ns = api.get("v1", "Namespace", None, TENANT)
    for p in _pods_of(api, kind, 1):
        status, pg = admit_podgroup(api, vc_controller_podgroup(p), ns)
        assert status == 201, pg.get("message")
        assert pg["spec"]["queue"] == TENANT


def test_a_bare_pod_ends_in_the_tenants_queue_and_another_queue_is_refused_at_the_pod(api: Api):
    ns = api.get("v1", "Namespace", None, TENANT)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "bare", "labels": {"app": "bare"}},
        "spec": _gpu_pod_spec(),
    }
    status, created = _create(api, pod)
    assert status == 201, created
    status, pg = admit_podgroup(api, vc_controller_podgroup(created), ns)
    assert status == 201 and pg["spec"]["queue"] == TENANT, pg
    named = copy.deepcopy(pod)
    named["metadata"].update(name="named", annotations={QUEUE: "research"})
    v = api.dry_run(named, TENANT)
    assert not v.allowed and "this tenant's Volcano queue is applied-ml" in v.message, v


def test_without_the_namespace_annotation_the_podgroup_stays_in_default_and_is_refused(api: Api):
    """The defect: the namespace's queue is what moves a PodGroup out of "default"; without it the tenant queue
    policy refuses vc-controller's PodGroup and the pod waits."""
    ns = copy.deepcopy(api.get("v1", "Namespace", None, TENANT))
    ns["metadata"]["annotations"].pop(QUEUE)
    pod = {"metadata": {"name": "p", "uid": "no-annotation"}, "spec": _gpu_pod_spec()}
    status, body = admit_podgroup(api, vc_controller_podgroup(pod), ns)
    assert status == 422 or status == 403 or status >= 400, body
    assert "use the Volcano queue applied-ml" in body.get("message", ""), body


def _ray_cluster(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    tpl = {"spec": _gpu_pod_spec()}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "headGroupSpec": {"rayStartParams": {}, "template": tpl},
            "workerGroupSpecs": [{"groupName": "w", "replicas": 1, "rayStartParams": {}, "template": tpl}],
        },
    }


def test_ray_lands_in_the_tenants_queue_by_kuberay_or_pod_by_pod(api: Api):
    """prod-aws has Kueue tenants, so KubeRay's batch scheduler stays unset: KubeRay creates the template's pods
    (schedulerName volcano) and vc-controller gives each a PodGroup. Where KubeRay's batch scheduler is volcano,
    its own PodGroup (queue from the label, else "default") is moved by the webhook the same way. A RayCluster or
    RayJob labelled with another queue is refused at creation."""
    ns = api.get("v1", "Namespace", None, TENANT)
    rc = _ray_cluster("rc")
    status, body = _create(api, rc)
    assert status == 201, body
    head = {"metadata": {"name": "rc-head", "uid": "rc-head"}, "spec": rc["spec"]["headGroupSpec"]["template"]["spec"]}
    status, pg = admit_podgroup(api, vc_controller_podgroup(head), ns)
    assert status == 201 and pg["spec"]["queue"] == TENANT, pg
    status, pg = admit_podgroup(api, kuberay_podgroup(rc), ns)
    assert status == 201 and pg["spec"]["queue"] == TENANT, pg
    v = api.dry_run(_ray_cluster("other", {"volcano.sh/queue-name": "research"}), TENANT)
    assert not v.allowed and "use the Volcano queue applied-ml" in v.message, v
    rayjob = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "rj", "labels": {"volcano.sh/queue-name": "research"}},
        "spec": {"entrypoint": "python x.py", "rayClusterSpec": _ray_cluster("x")["spec"]},
    }
    v = api.dry_run(rayjob, TENANT)
    assert not v.allowed and "use the Volcano queue applied-ml" in v.message, v
    rayjob["metadata"]["labels"] = {}
    assert api.dry_run(rayjob, TENANT).allowed


def test_lws_and_jobset_objects_are_admitted_and_their_pods_are_volcano_pods(api: Api):
    """Their controllers do not run here: the objects are admitted, and the pods their controllers make (a
    StatefulSet's, a Job's: the kinds above) get their queue as above. Here the pods of their templates are
    admitted by the tenant pods policy and land in the tenant's queue."""
    ns = api.get("v1", "Namespace", None, TENANT)
    lws = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "lws"},
        "spec": {"replicas": 1, "leaderWorkerTemplate": {"size": 2, "workerTemplate": {"spec": _gpu_pod_spec()}}},
    }
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js"},
        "spec": {
            "replicatedJobs": [
                {"name": "w", "replicas": 1, "template": {"spec": {"template": _template("js", restart="Never")}}}
            ]
        },
    }
    for obj in (lws, jobset):
        v = api.dry_run(obj, TENANT)
        assert v.allowed, (obj["kind"], v)
    for name, spec in (("lws-0", _gpu_pod_spec()), ("js-w-0-0", _gpu_pod_spec(restartPolicy="Never"))):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}
        v = api.dry_run(pod, TENANT)
        assert v.allowed, (name, v)
        status, pg = admit_podgroup(api, vc_controller_podgroup({"metadata": {"name": name}}), ns)
        assert status == 201 and pg["spec"]["queue"] == TENANT, pg


def test_a_volcano_job_names_its_queue(api: Api):
    ns = api.get("v1", "Namespace", None, TENANT)
    job = {"metadata": {"name": "vj"}, "spec": {"queue": TENANT}}
    status, pg = admit_podgroup(api, volcano_job_podgroup(job), ns)
    assert status == 201 and pg["spec"]["queue"] == TENANT, pg
