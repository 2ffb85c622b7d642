"""Issue 40.2: every kind a Volcano tenant runs reaches the tenant's Volcano queue, and explain follows the path
Volcano v1.15.1 takes (pod template annotation, then the owner's own queue, then the namespace annotation that
Volcano's /podgroups/mutate webhook reads). What kube-apiserver does with the objects: tests/cluster/
test_volcano_queues.py."""

from __future__ import annotations

import tarfile

import cel
import yaml
from conftest import UPSTREAM, manifest, release, rendered, stack_config
from test_explain import GANG_POOL, GPU_TOLERATION, container, layer, spec_of, trace

from components.cli.loader import load_spec
from components.plan import operators

QUEUE = "scheduling.volcano.sh/queue-name"


def _chart_default_admissions() -> set[str]:
    with tarfile.open(UPSTREAM / "charts" / "volcano-1.15.1.tgz") as tgz:
        values = yaml.safe_load(tgz.extractfile("volcano/values.yaml").read())
    return set(values["custom"]["enabled_admissions"].split(","))


def test_volcano_runs_its_podgroup_mutate_webhook_beside_the_charts_own():
    """The chart leaves /podgroups/mutate off (values.yaml custom.enabled_admissions); without it a PodGroup made
    for a Deployment's pod stays in queue "default", which the tenant queue policy refuses. Every path the chart
    enables stays enabled."""
    custom = release(rendered("prod-aws"), "volcano")["values"]["custom"]
    enabled = custom["enabled_admissions"].split(",")
    assert set(enabled) == _chart_default_admissions() | {"/podgroups/mutate"}
    assert len(enabled) == len(set(enabled))


def test_a_volcano_tenants_namespace_names_its_queue_and_kueue_tenants_do_not():
    r = rendered("prod-aws")
    assert manifest(r, "Namespace", "applied-ml")["metadata"]["annotations"][QUEUE] == "applied-ml"
    for kueue_tenant in ("research", "serving", "notebooks"):
        assert QUEUE not in (manifest(r, "Namespace", kueue_tenant)["metadata"].get("annotations") or {})


def _pod_queue_denials(pod_annotations: dict[str, str] | None) -> list[str]:
    r = rendered("prod-aws")
    policy = manifest(r, "ValidatingAdmissionPolicy", "gpu-platform-volcano-tenant-pods")["spec"]
    ns = manifest(r, "Namespace", "applied-ml")
    ctx = cel.Context()
    meta = {"name": "p", **({"annotations": pod_annotations} if pod_annotations is not None else {})}
    ctx.add_variable("object", {"metadata": meta, "spec": {"containers": [{"name": "c", "image": "x"}]}})
    ctx.add_variable("namespaceObject", ns)
    (var,) = [v for v in policy["variables"] if v["name"] == "queue"]
    ctx.add_variable("variables", {"queue": cel.evaluate(var["expression"], ctx)})
    (rule,) = [v for v in policy["validations"] if "variables.queue" in v["expression"]]
    return [] if cel.evaluate(rule["expression"], ctx) else [cel.evaluate(rule["messageExpression"], ctx)]


def test_a_pod_that_names_another_volcano_queue_is_refused_at_creation():
    """vc-controller would give its PodGroup that queue, the queue policy would refuse the PodGroup, and the pod
    would wait with no event: refused at the pod instead, naming the tenant's queue."""
    assert _pod_queue_denials(None) == []
    assert _pod_queue_denials({}) == []
    assert _pod_queue_denials({QUEUE: "applied-ml"}) == []
    assert _pod_queue_denials({QUEUE: "research"}) == [
        f"{QUEUE} names research: this tenant's Volcano queue is applied-ml (leave it out: the namespace names it)"
    ]


# ------------------------------------------------------------------------------------- KubeRay's scheduler


def _all_volcano():
    cfg = stack_config("prod-aws")
    for t in cfg["gpu-platform:tenants"]:
        t["scheduler"] = "volcano"
    return load_spec(cfg)


def test_kuberay_hands_ray_to_volcano_when_every_tenant_is_a_volcano_tenant():
    spec = _all_volcano()
    assert operators.kuberay_values(spec)["batchScheduler"] == {"name": "volcano"}


def test_kuberay_keeps_no_batch_scheduler_beside_kueue_tenants_or_without_volcano_tenants():
    """KubeRay v1.6.2 hands every RayCluster in the cluster to its one batch scheduler: beside a Kueue tenant
    (prod-aws) that tenant's Ray would go to Volcano's "default" queue."""
    assert "batchScheduler" not in operators.kuberay_values(load_spec(stack_config("prod-aws")))
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:tenants"] = [t for t in cfg["gpu-platform:tenants"] if t["name"] == "applied-ml"]
    cfg["gpu-platform:tenants"][0].pop("scheduler")  # kueue on: a Kueue tenant now
    cfg["gpu-platform:storage"]["fileSystems"] = []
    assert "batchScheduler" not in operators.kuberay_values(load_spec(cfg))
    cfg = stack_config("prod-aws")
    for t in cfg["gpu-platform:tenants"]:
        t["scheduler"] = "volcano"
    cfg["gpu-platform:addons"]["kuberay"] = False
    assert "batchScheduler" not in operators.kuberay_values(load_spec(cfg))


# ------------------------------------------------------------------------------------------------ explain


def _gang_pod(scheduler: str | None) -> dict:
    """A pod asking 8 GPUs of the gang pool, with ``scheduler`` as its schedulerName when given."""
    pod = {"containers": [container({"nvidia.com/gpu": 8})], "tolerations": GPU_TOLERATION, "nodeSelector": GANG_POOL}
    if scheduler:
        pod["schedulerName"] = scheduler
    return pod


def _deployment(template_annotations: dict[str, str] | None = None, scheduler: str | None = "volcano") -> str:
    pod = _gang_pod(scheduler)
    doc = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "applied-ml"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}, "annotations": template_annotations or {}}, "spec": pod},
        },
    }
    return yaml.safe_dump(doc)


def test_explain_puts_a_deployment_in_the_namespaces_queue():
    t = trace(spec_of("prod-aws"), _deployment())
    queue = layer(t, "queue")
    assert queue.ok, "\n".join(t.lines())
    assert "from the namespace's scheduling.volcano.sh/queue-name annotation" in queue.detail
    assert layer(t, "scheduler").detail == "Volcano (a PodGroup per pod: no gang)"


def test_explain_reads_the_pod_template_annotation_before_the_namespace():
    t = trace(spec_of("prod-aws"), _deployment({QUEUE: "research"}))
    queue = layer(t, "queue")
    assert not queue.ok
    assert queue.detail.startswith("Volcano queue research (from the pod template's scheduling.volcano.sh/queue-name")


def _raycluster(labels: dict[str, str] | None = None, scheduler: str | None = None) -> str:
    pod = _gang_pod(scheduler)
    doc = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "rc", "namespace": "applied-ml", "labels": labels or {}},
        "spec": {
            "headGroupSpec": {"template": {"spec": pod}},
            "workerGroupSpecs": [{"groupName": "w", "replicas": 1, "template": {"spec": pod}}],
        },
    }
    return yaml.safe_dump(doc)


def test_explain_gangs_a_raycluster_through_kuberay_and_reads_its_queue_label():
    """All tenants on Volcano: KubeRay sets schedulerName and makes one PodGroup, in the queue of the
    RayCluster's volcano.sh/queue-name label, else the namespace's."""
    spec = _all_volcano()
    t = trace(spec, _raycluster())
    assert layer(t, "scheduler").detail == "Volcano (gang)"
    assert "namespace's" in layer(t, "queue").detail
    t = trace(spec, _raycluster({"volcano.sh/queue-name": "research"}))
    assert layer(t, "queue").detail.startswith("Volcano queue research (from its volcano.sh/queue-name label")


def test_explain_asks_for_schedulername_on_ray_pods_where_kuberay_has_no_batch_scheduler():
    t = trace(spec_of("prod-aws"), _raycluster())
    assert t.pending.name == "priority"  # the tenant pods policy refuses the Ray pods, before any scheduler
    assert "set schedulerName: volcano" in t.pending.detail
    t = trace(spec_of("prod-aws"), _raycluster(scheduler="volcano"))
    assert layer(t, "scheduler").detail == "Volcano (a PodGroup per pod: no gang)"
    assert layer(t, "queue").ok
