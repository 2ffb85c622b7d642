"""gpu-platform explain's words: each layer's verdict, pass or stop, spelled out in full for a stack that reaches it.

What explain prints is its product: an operator reads the layer that stops a workload and acts on its detail.
So these cases pin whole details, not fragments. The numbers in them are worked out by hand from the stack
files (quotas, GPUs per node, node caps) in the comment beside each case.
"""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import ROOT, stack_config
from test_explain import (
    GANG_POOL,
    GPU_TOLERATION,
    NO_BATCH_SCHEDULER,
    SHARED_OPT_IN,
    container,
    job,
    kueue_holds,
    kueue_reserves,
    layer,
    pod,
    pool_of,
    spec_of,
    trace,
    volcano_job,
)

from components.cli.loader import SpecError, load_spec
from components.explain import trace as explain
from components.render import dra

TAS_HOSTNAME = {"kueue.x-k8s.io/podset-required-topology": "kubernetes.io/hostname"}
TAS_LAYER3 = {"kueue.x-k8s.io/podset-required-topology": "topology.k8s.aws/network-node-layer-3"}


def stop(t: explain.Trace) -> tuple[str, str]:
    assert t.pending is not None, "\n".join(t.lines())
    return t.pending.name, t.pending.detail


# --------------------------------------------------------------------------------- the whole output

NOTEBOOK = ROOT / "examples" / "timesliced-notebook-pod.yaml"


def test_a_running_trace_prints_every_layer():
    """The notebook example on dev-aws: one time-sliced L4 unit (nodes bring 1 GPU x 4 slices), ml-dev's 4 L4s
    are 16 units; a10g-spot comes first in the flavor order but the pod pins l4-shared."""
    (t,) = explain.explain_all(spec_of("dev-aws"), NOTEBOOK.read_text())
    assert t.lines() == [
        "Pod ml-dev/notebook-alice:",
        "  namespace        ok   ml-dev (tenant ml-dev), Pod Security 'baseline' passes",
        "  priority         ok   dev (ceiling training)",
        "  scheduler        ok   Kueue (pod integration)",
        "  queue            ok   LocalQueue default -> ClusterQueue ml-dev",
        "  flavors          ok   l4-shared (1 nvidia.com/gpu, nominal quota; order default-flavor > a10g-spot > "
        "l4-shared; skipped a10g-spot: nodeSelector gpu-platform/pool=l4-shared (nodes have a10g-spot))",
        # dev is ml-dev's lowest class: batch and training (its ceiling) outrank it (the stack's classes)
        "  preemption       ok   from an idle cluster it preempts nothing; workloads of batch, training priority in "
        "ClusterQueue ml-dev preempt it (withinClusterQueue LowerPriority); waitForPodsReady evicts and requeues it if "
        "its pods are not all ready within 30m of admission, or a lost pod is not back within 30m",
        "  admission-checks ok   none",
        "  pool             ok   l4-shared: labels match, taints tolerated (Kueue injects the flavor's nodeSelector "
        "and tolerations)",
        "  provisioner      ok   Cluster Autoscaler, template 4 nvidia.com/gpu: 0..4 nodes, needs 1",
        "  node             ok   one l4-shared node (operator plugin) advertises 4 nvidia.com/gpu",
        "  dcgm             ok   dcgm-exporter attributes the GPUs to the pod (Prometheus: install)",
        "  verdict: runs on pool l4-shared via EKS managed node group + Cluster Autoscaler",
    ]
    assert explain.render([t]) == "\n".join(t.lines()) + "\n"
    assert explain.exit_code([t]) == explain.EXIT_RUNS == 0


def test_the_volcano_example_prints_every_layer():
    """The Volcano example on prod-aws: 2 workers x 8 A100s on applied-ml's own pool a100-gang (Bottlerocket,
    8 GPUs per node, 0..2 nodes: 2 nodes needed), its queue capped at the pool's 16 GPUs. From an idle cluster
    (no GPU node at rest) proportion's cap is the queue's guarantee, applied-ml's 16 (issue 26 §4.5: volcano
    v1.15.1 proportion.go:91-139 computes it over the nodes that exist), enough for the gang's 16. Volcano's job
    controller serves the kind, installed with addons.volcano (the operator layer, issue 26 §4.8)."""
    (t,) = explain.explain_all(spec_of("prod-aws"), (ROOT / "examples" / "volcano-pytorch-job.yaml").read_text())
    assert t.lines() == [
        "Job applied-ml/finetune:",
        "  namespace        ok   applied-ml (tenant applied-ml), Pod Security 'baseline' passes",
        "  priority         ok   training (ceiling training); gpu-platform-volcano-tenant-pods admits its GPU pods "
        "(schedulerName volcano, pool a100-gang)",
        "  scheduler        ok   Volcano (gang)",
        "  queue            ok   Volcano queue applied-ml (enqueues 16 nvidia.com/gpu from an idle cluster, holds "
        "16 nvidia.com/gpu at full size)",
        "  operator         ok   Volcano's job controller (batch.volcano.sh) is installed (addons.volcano)",
        "  pool             ok   a100-gang: labels match, taints tolerated (the pod selects and tolerates)",
        # a100-gang is an EFA pool (efa: true): p4de.24xlarge brings 4 EFA interfaces, and the job asks all 4
        "  provisioner      ok   Cluster Autoscaler, template 8 nvidia.com/gpu, 4 vpc.amazonaws.com/efa: 0..2 nodes, "
        "needs 2",
        "  node             ok   one a100-gang node (bottlerocket plugin) advertises 8 nvidia.com/gpu, "
        "4 vpc.amazonaws.com/efa",
        # prod-aws declares the training image for a100-gang, whose nodes boot it from the data volume's snapshot
        "  image            ok   123456789012.dkr.ecr.us-east-1.amazonaws.com/nvcr.io/nvidia/pytorch:25.08-py3 is warm "
        "on a100-gang: on the node's data volume at boot (snapshot)",
        "  dcgm             ok   dcgm-exporter attributes the GPUs to the pod (Prometheus: install)",
        "  verdict: runs on pool a100-gang via EKS managed node group + Cluster Autoscaler",
    ]


def test_a_pending_trace_as_text_and_as_json():
    t = trace(spec_of("dev-aws"), pod("ml-dev", {"nvidia.com/gpu": 1}, labels={"kueue.x-k8s.io/queue-name": "nope"}))
    assert (
        "  queue            FAIL LocalQueue nope does not exist in ml-dev: label the job kueue.x-k8s.io/queue-name: "
        "default"
    ) in t.lines()
    # the layers after the stop are traced too (issue 41.2): here they all pass
    assert [x.name for x in t.failing] == ["queue"] and t.layers[-1].name == "dcgm"
    assert t.lines()[-2:] == [
        "  verdict: pending at queue: LocalQueue nope does not exist in ml-dev: label the job "
        "kueue.x-k8s.io/queue-name: default",
        "  in the cluster: kubectl get workloads: Pending, the Workload's LocalQueue does not exist",
    ]
    assert explain.exit_code([t]) == explain.EXIT_PENDING == 3
    text = explain.render([t], as_json=True)
    assert text.startswith('[\n  {\n    "workload": {\n      "kind": "Pod",\n') and text.endswith("}\n]\n")
    (doc,) = json.loads(text)
    detail = "LocalQueue nope does not exist in ml-dev: label the job kueue.x-k8s.io/queue-name: default"
    assert all(x["ok"] for x in doc["layers"][4:])
    doc["layers"] = doc["layers"][:4]
    assert doc == {
        "workload": {"kind": "Pod", "namespace": "ml-dev", "name": "p"},
        "layers": [
            {"layer": "namespace", "ok": True, "detail": "ml-dev (tenant ml-dev), Pod Security 'baseline' passes"},
            {"layer": "priority", "ok": True, "detail": "no priorityClassName (the cluster default); ceiling training"},
            {"layer": "scheduler", "ok": True, "detail": "Kueue (pod integration)"},
            {"layer": "queue", "ok": False, "detail": detail},
        ],
        "verdict": "pending",
        "pendingAt": "queue",
        "failingLayers": ["queue"],
        "outcome": "queue",
        "pool": None,
        "provisioner": None,
        "summary": f"pending at queue: {detail}",
    }
    assert t.pending is t.layers[3] and t.pending.ok is False
    # a running one: no stop, the pool and the provisioner named
    (ok,) = explain.explain_all(spec_of("dev-aws"), NOTEBOOK.read_text())
    summary = {k: v for k, v in ok.doc().items() if k != "layers"}
    assert summary == {
        "workload": {"kind": "Pod", "namespace": "ml-dev", "name": "notebook-alice"},
        "verdict": "runs",
        "pendingAt": None,
        "failingLayers": [],
        "outcome": "runs",
        "pool": "l4-shared",
        "provisioner": "EKS managed node group + Cluster Autoscaler",
        "summary": "runs on pool l4-shared via EKS managed node group + Cluster Autoscaler",
    }


def test_a_workload_without_gpus_runs_on_any_node():
    t = trace(spec_of("dev-aws"), pod("ml-dev", {}))
    assert (t.layers[-1].name, t.layers[-1].ok, t.layers[-1].detail) == (
        "resources",
        True,
        "no GPU requested: nothing GPU-specific to trace",
    )
    assert (t.pool, t.provisioner) == ("-", "non-GPU nodes")
    assert t.verdict == "runs on non-GPU nodes (it asks for no GPU)"


# ------------------------------------------------------------------------------------ namespace, priority


def test_namespace_stops():
    t = trace(spec_of("prod-aws"), pod("default", {"nvidia.com/gpu": 1}))
    assert stop(t) == (
        "namespace",
        "default is not a tenant namespace (tenants: research, serving, applied-ml, notebooks)",
    )
    # every problem of the pod, sorted, once each
    t = trace(spec_of("prod-aws"), pod("serving", {"nvidia.com/mig-1g.10gb": 1}, hostPID=True, hostIPC=True))
    assert stop(t) == (
        "namespace",
        "serving enforces Pod Security 'restricted', refused: hostIPC: true; hostPID: true",
    )


def test_priority_layer():
    spec = spec_of("prod-aws")
    t = trace(spec, pod("research", {"nvidia.com/gpu": 8}, priorityClassName="training"))
    assert layer(t, "priority").detail == "training (ceiling training-critical)"
    t = trace(spec, pod("research", {"nvidia.com/gpu": 8}))
    assert layer(t, "priority").detail == "no priorityClassName (the cluster default); ceiling training-critical"
    # Kueue's workload priority label is checked like a priorityClassName (the ceiling policy reads both)
    labelled = pod("notebooks", {"nvidia.com/gpu": 1}, labels={"kueue.x-k8s.io/priority-class": "training"})
    assert stop(trace(spec, labelled))[0] == "priority"
    assert "training is above notebooks's ceiling dev" in stop(trace(spec, labelled))[1]
    # Kubernetes' own system- classes exist in every cluster, and the ceiling policy refuses them in every tenant
    # namespace, the top tenant's too (a real kube-apiserver refuses them: tests/cluster)
    for system in ("system-cluster-critical", "system-node-critical"):
        for tenant in ("research", "serving"):
            assert stop(trace(spec, pod(tenant, {"nvidia.com/gpu": 1}, priorityClassName=system)))[0] == "priority"
    (_, why) = stop(trace(spec, pod("serving", {"nvidia.com/gpu": 1}, priorityClassName="system-node-critical")))
    assert why == (
        "system-node-critical is above serving's ceiling inference; the admission policy "
        "gpu-platform-priority-ceiling refuses it: use inference or lower"
    )
    known = ", ".join(sorted(c.name for c in spec.priority_classes))
    # a Pod names it itself: the API server's Priority admission plugin refuses it
    t = trace(spec, pod("research", {"nvidia.com/gpu": 8}, priorityClassName="urgent"))
    assert stop(t) == (
        "priority",
        f"PriorityClass urgent does not exist (classes: {known}): the API server refuses its pods",
    )
    assert t.outcome == "refused"
    # a Job Kueue manages is accepted and never unsuspended: Kueue fails to make its Workload (make sched-test saw the
    # Job stay suspended, with "PriorityClass.scheduling.k8s.io "urgent" not found" in Kueue's log only)
    t = trace(spec, job("research", 1, {"nvidia.com/gpu": 8}, priorityClassName="urgent"))
    assert stop(t) == (
        "priority",
        f"PriorityClass urgent does not exist (classes: {known}): Kueue makes no Workload and the Job stays suspended",
    )
    assert t.outcome == "no-workload"
    assert known.count(", ") >= 2


# ------------------------------------------------------------------------------------------------ scheduler


def test_scheduler_layer_names_who_schedules():
    gang = volcano_job("ml-dev", "ml-dev", 1, {"nvidia.com/gpu": 1})
    assert stop(trace(spec_of("dev-aws"), gang)) == (
        "scheduler",
        "ml-dev is queued by Kueue; a Volcano Job there would be gated pod by pod: use a Kueue-managed kind, or set "
        "the tenant's scheduler to volcano",
    )
    prod = spec_of("prod-aws")
    # a Job without GPUs: the Volcano tenant pod policy lets its pods be created (a GPU one stops before, at the
    # policy: test_the_volcano_tenant_pod_policy_refuses_at_creation)
    plain = job("applied-ml", 1, {})
    assert stop(trace(prod, plain)) == (
        "scheduler",
        "applied-ml is scheduled by Volcano: set schedulerName: volcano in the pod templates (a Volcano Job sets it "
        "itself)",
    )
    gang = volcano_job(
        "applied-ml", "applied-ml", 1, {"nvidia.com/gpu": 8}, tolerations=GPU_TOLERATION, nodeSelector=GANG_POOL
    )
    volcano = trace(prod, gang)
    assert layer(volcano, "scheduler").detail == "Volcano (gang)"
    none = trace(spec_of("dev-aws", addons=NO_BATCH_SCHEDULER), pod("ml-dev", {"nvidia.com/gpu": 1}))
    assert layer(none, "scheduler").detail == "no batch scheduler: kube-scheduler, within the namespace ResourceQuota"


PODS_POLICY = "the admission policy gpu-platform-volcano-tenant-pods refuses it"


def test_the_volcano_tenant_pod_policy_refuses_at_creation():
    """prod-aws applied-ml (Volcano, ceiling training): its namespace lists one pool, a100-gang. A GPU pod there
    must be Volcano's and select that pool, or the policy refuses it when its controller creates it: the trace
    stops where the tenancy admission policies are checked, the priority layer."""
    prod = spec_of("prod-aws")
    # a batch Job's pods name no scheduler: the default one
    plain = job("applied-ml", 1, {"nvidia.com/gpu": 8}, tolerations=GPU_TOLERATION, nodeSelector=GANG_POOL)
    assert stop(trace(prod, plain)) == (
        "priority",
        "pod set main asks for nvidia.com/gpu with schedulerName unset (default-scheduler) in applied-ml, whose GPU "
        f"pods Volcano schedules; {PODS_POLICY}: set schedulerName: volcano",
    )
    # a Volcano Job's template naming another scheduler keeps it (the job's own applies only to templates
    # naming none)
    other = volcano_job(
        "applied-ml", "applied-ml", 1, {"nvidia.com/gpu": 8}, nodeSelector=GANG_POOL, schedulerName="default-scheduler"
    )
    assert stop(trace(prod, other)) == (
        "priority",
        "pod set worker asks for nvidia.com/gpu with schedulerName default-scheduler in applied-ml, whose GPU pods "
        f"Volcano schedules; {PODS_POLICY}: set schedulerName: volcano",
    )
    # no pool selected, or a pool Kueue hands out
    anywhere = volcano_job("applied-ml", "applied-ml", 1, {"nvidia.com/gpu": 8}, tolerations=GPU_TOLERATION)
    assert stop(trace(prod, anywhere)) == (
        "priority",
        f"pod set worker selects no pool, not one of applied-ml's (a100-gang); {PODS_POLICY}: select one with "
        "nodeSelector gpu-platform/pool",
    )
    train = volcano_job(
        "applied-ml", "applied-ml", 1, {"nvidia.com/gpu": 8}, nodeSelector={"gpu-platform/pool": "a100-train"}
    )
    assert stop(trace(prod, train)) == (
        "priority",
        f"pod set worker selects pool a100-train, not one of applied-ml's (a100-gang); {PODS_POLICY}: select one "
        "with nodeSelector gpu-platform/pool",
    )
    # a forbidden class is still the ceiling's refusal, named first
    above = volcano_job("applied-ml", "applied-ml", 1, {"nvidia.com/gpu": 8}, priorityClassName="inference")
    assert stop(trace(prod, above))[1].startswith("inference is above applied-ml's ceiling training;")


def test_the_volcano_tenant_pod_policy_says_what_it_admitted():
    prod = spec_of("prod-aws")
    gang = volcano_job(
        "applied-ml", "applied-ml", 2, {"nvidia.com/gpu": 8}, tolerations=GPU_TOLERATION, nodeSelector=GANG_POOL
    )
    t = trace(prod, gang)
    assert t.pending is None, t.lines()
    assert layer(t, "priority").detail == (
        "no priorityClassName (the cluster default); ceiling training; gpu-platform-volcano-tenant-pods admits its "
        "GPU pods (schedulerName volcano, pool a100-gang)"
    )
    assert layer(t, "pool").detail == "a100-gang: labels match, taints tolerated (the pod selects and tolerates)"
    assert t.verdict == "runs on pool a100-gang via EKS managed node group + Cluster Autoscaler"
    # pods without GPUs are not the policy's business: nothing said of it
    cpu = trace(prod, volcano_job("applied-ml", "applied-ml", 1, {}))
    assert layer(cpu, "priority").detail == "no priorityClassName (the cluster default); ceiling training"
    assert cpu.pending is None and cpu.pool == "-"
    # nor of a Kueue tenant's pods
    assert layer(trace(prod, pod("research", {"nvidia.com/gpu": 8})), "priority").detail == (
        "no priorityClassName (the cluster default); ceiling training-critical"
    )


def test_the_volcano_tenant_pod_policy_holds_shared_pools_to_one_unit_per_container():
    """prod-aws with notebooks moved to Volcano: l4-notebooks time-slices with failRequestsGreaterThanOne, so
    the namespace lists it as a one-unit pool; a container asking 2 units is refused at creation, two
    containers of 1 unit each are not."""
    config = stack_config("prod-aws")
    config["gpu-platform:tenants"][3]["scheduler"] = "volcano"
    spec = load_spec(config)
    pinned = {"tolerations": GPU_TOLERATION, "nodeSelector": {"gpu-platform/pool": "l4-notebooks"}}
    two = volcano_job("notebooks", "notebooks", 1, {"nvidia.com/gpu": 2}, **pinned)
    assert stop(trace(spec, two)) == (
        "priority",
        "container c of pod set worker asks 2 nvidia.com/gpu on l4-notebooks, which shares its GPUs (the device "
        f"plugin refuses more than one unit); {PODS_POLICY}: ask for 1 per container (more pods instead)",
    )
    doc = yaml.safe_load(volcano_job("notebooks", "notebooks", 1, {"nvidia.com/gpu": 1}, **pinned))
    containers = doc["spec"]["tasks"][0]["template"]["spec"]["containers"]
    containers.append({**containers[0], "name": "d"})
    t = trace(spec, yaml.safe_dump(doc))
    assert layer(t, "priority").detail == (
        "no priorityClassName (the cluster default); ceiling dev; gpu-platform-volcano-tenant-pods admits its GPU "
        "pods (schedulerName volcano, pool l4-notebooks)"
    )


def test_a_pod_that_selects_no_pool_is_not_said_to_select_one():
    """dev-aws without a batch scheduler: kube-scheduler places a pod that selects no pool on any node it fits.
    Both pools advertise nvidia.com/gpu behind the GPU taint the pod tolerates; the trace follows a10g-spot
    (first in flavor order: spot before shared) and names l4-shared as taking the pod as well."""
    spec = spec_of("dev-aws", addons=NO_BATCH_SCHEDULER)
    t = trace(spec, pod("ml-dev", {"nvidia.com/gpu": 1}, tolerations=GPU_TOLERATION))
    assert t.pending is None, t.lines()
    assert layer(t, "pool").detail == (
        "a10g-spot: labels match, taints tolerated (the pod selects no pool: nodes of l4-shared take it as well)"
    )
    assert (
        t.verdict == "runs on pool a10g-spot via Karpenter NodePool a10g-spot, or on l4-shared: the pod selects no pool"
    )
    assert t.doc()["pool"] == "a10g-spot"
    # pinned, it selects its pool
    pinned = pod(
        "ml-dev", {"nvidia.com/gpu": 1}, tolerations=GPU_TOLERATION, nodeSelector={"gpu-platform/pool": "l4-shared"}
    )
    t = trace(spec, pinned)
    assert layer(t, "pool").detail == "l4-shared: labels match, taints tolerated (the pod selects and tolerates)"
    assert t.verdict == "runs on pool l4-shared via EKS managed node group + Cluster Autoscaler"
    # selecting nothing, but asking for what one pool alone advertises (renameByDefault: nvidia.com/gpu.shared)
    config = stack_config("dev-aws")
    pool_of(config["gpu-platform:nodePools"], "l4-shared")["sharing"]["renameByDefault"] = True
    config["gpu-platform:addons"] = NO_BATCH_SCHEDULER
    t = trace(load_spec(config), pod("ml-dev", {"nvidia.com/gpu.shared": 1}, tolerations=GPU_TOLERATION))
    assert layer(t, "pool").detail == (
        "l4-shared: labels match, taints tolerated (the pod selects no pool; l4-shared's are the only nodes it "
        "tolerates that advertise nvidia.com/gpu.shared)"
    )
    assert t.verdict == "runs on pool l4-shared via EKS managed node group + Cluster Autoscaler"


def _deployment(namespace: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d", "namespace": namespace},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [container({"nvidia.com/gpu": 1})]}}},
        }
    )


@pytest.mark.parametrize("framework", ["pod", "deployment", "statefulset", "leaderworkerset.x-k8s.io/leaderworkerset"])
def test_pods_are_managed_by_the_pod_integration_or_one_built_on_it(framework):
    """Kueue's Deployment, StatefulSet and LeaderWorkerSet integrations manage their pods through the pod
    integration (each turns it on): any of them lets Kueue take a Deployment's pods."""
    addons = {"gpuOperator": True, "dcgm": True, "kueue": True, "leaderWorkerSet": True}
    spec = spec_of("dev-aws", addons=addons, scheduling={"kueueIntegrations": ["batch/job", framework]})
    t = trace(spec, _deployment("ml-dev"))
    assert layer(t, "scheduler").detail == "Kueue (pod integration)", t.lines()


def test_a_kind_whose_integration_is_off_is_refused():
    # without the pod integration (or one built on it) the stack itself is refused: a plain Pod or a Deployment's
    # pods in a Kueue tenant's namespace would bypass Kueue, so explain never meets such a stack
    config = stack_config("dev-aws")
    config["gpu-platform:scheduling"] = {"kueueIntegrations": ["batch/job"]}
    with pytest.raises(SpecError) as err:
        load_spec(config)
    assert [(p.path, p.message) for p in err.value.problems] == [
        (
            "gpu-platform:scheduling.kueueIntegrations",
            "without 'pod' (or deployment, statefulset, leaderworkerset, which turn it on) a plain Pod in a Kueue "
            "tenant's namespace bypasses Kueue and holds GPUs its quota never counts: add 'pod'",
        )
    ]
    # the pod-based integrations do not stand in for another framework's
    spec = spec_of("dev-aws", scheduling={"kueueIntegrations": ["deployment"]})
    assert stop(trace(spec, job("ml-dev", 1, {"nvidia.com/gpu": 1}))) == (
        "scheduler",
        "Kueue does not manage Job here: add batch/job to scheduling.kueueIntegrations; its pods are queued one by "
        "one by the pod integration, so the gang is not admitted whole",
    )


# --------------------------------------------------------------------------------------- queue and flavors


def test_queue_layer():
    t = trace(spec_of("dev-aws"), pod("ml-dev", {"nvidia.com/gpu": 1}))
    assert layer(t, "queue").detail == "LocalQueue default -> ClusterQueue ml-dev"
    # a LocalQueue named otherwise is never implied: the pod must name it
    spec = spec_of("dev-aws", scheduling={"localQueueName": "team"})
    assert stop(trace(spec, pod("ml-dev", {"nvidia.com/gpu": 1}))) == (
        "queue",
        "LocalQueue (no queue-name label) does not exist in ml-dev: label the job kueue.x-k8s.io/queue-name: team",
    )
    named = pod("ml-dev", {"nvidia.com/gpu": 1}, labels={"kueue.x-k8s.io/queue-name": "team"})
    assert layer(trace(spec, named), "queue").detail == "LocalQueue team -> ClusterQueue ml-dev"


def test_a_resource_no_flavor_covers():
    assert stop(trace(spec_of("prod-aws"), pod("research", {"nvidia.com/mig-7g.80gb": 1}))) == (
        "flavors",
        "ClusterQueue research has no quota for nvidia.com/mig-7g.80gb (it covers nvidia.com/gpu): request a "
        "resource one of the tenant's pools advertises",
    )
    # serving's h100-inference is MIG-partitioned 3g.40gb + 2g.20gb + 2 x 1g.10gb: neither profile asked exists
    both = pod("serving", {"nvidia.com/mig-7g.80gb": 1, "nvidia.com/mig-4g.40gb": 1})
    assert stop(trace(spec_of("prod-aws"), both)) == (
        "flavors",
        "ClusterQueue serving has no quota for nvidia.com/mig-4g.40gb, nvidia.com/mig-7g.80gb (it covers "
        "nvidia.com/gpu, nvidia.com/mig-1g.10gb, nvidia.com/mig-2g.20gb, nvidia.com/mig-3g.40gb): request a "
        "resource one of the tenant's pools advertises",
    )


def test_flavor_layer_details():
    dev = spec_of("dev-aws")
    # no pin, nothing skipped: the first flavor in order, within ml-dev's 8 A10Gs
    t = trace(dev, pod("ml-dev", {"nvidia.com/gpu": 1}, tolerations=SHARED_OPT_IN))
    assert (
        layer(t, "flavors").detail
        == "a10g-spot (1 nvidia.com/gpu, nominal quota; order default-flavor > a10g-spot > l4-shared)"
    )
    # exactly the nominal quota is not borrowing: 8 pods x 1 A10G
    t = trace(
        dev,
        job(
            "ml-dev",
            8,
            {"nvidia.com/gpu": 1},
            nodeSelector={"gpu-platform/pool": "a10g-spot"},
        ),
    )
    assert layer(t, "flavors").detail.startswith("a10g-spot (8 nvidia.com/gpu, nominal quota;")
    # 10 units: more than a10g-spot ever holds (ml-dev is alone in cohort gpu-platform: potentialAvailable 0 + its
    # own 8 lent = 8), so Kueue goes on to l4-shared (16 units); the reason names the cause and the fix
    a10g_short = (
        "a10g-spot: needs {n} nvidia.com/gpu, ml-dev's quota 8; no other ClusterQueue of cohort gpu-platform lends "
        "a10g-spot (it is the cohort's only ClusterQueue), so at most 8 (Kueue: maximum capacity 8): raise ml-dev's "
        "gpuQuota on a10g-spot to {n} GPUs, or give another tenant of cohort gpu-platform quota on a10g-spot that it "
        "lends"
    )
    t = trace(dev, job("ml-dev", 10, {"nvidia.com/gpu": 1}, tolerations=SHARED_OPT_IN))
    assert layer(t, "flavors").detail == (
        "l4-shared (10 nvidia.com/gpu, nominal quota; order default-flavor > a10g-spot > l4-shared; skipped "
        + a10g_short.format(n=10)
        + ")"
    )
    # every flavor skipped before the one that fits is named: research given a share of l4-notebooks too (a
    # time-slice beside its whole GPUs of the same name: the shared flavor is opt-in, and the pod opts in)
    config = stack_config("prod-aws")
    config["gpu-platform:tenants"][0]["gpuQuota"]["l4-notebooks"] = 1
    slice_pod = pod(
        "research",
        {"nvidia.com/gpu": 1},
        nodeSelector={"gpu-platform/pool": "l4-notebooks"},
        tolerations=SHARED_OPT_IN,
    )
    t = trace(load_spec(config), slice_pod)
    assert layer(t, "flavors").detail == (
        "l4-notebooks (1 nvidia.com/gpu, nominal quota; order default-flavor > a100-train > h100-spot > l4-notebooks; "
        "skipped a100-train: nodeSelector gpu-platform/pool=l4-notebooks (nodes have a100-train); h100-spot: "
        "nodeSelector gpu-platform/pool=l4-notebooks (nodes have h100-spot))"
    )
    # 17 units (opting in to slices): neither fits; both reasons, in flavor order. l4-shared: 4 L4 x 4 slices = 16;
    # 17 units need 5 L4 of quota (4 slices each)
    assert stop(trace(dev, job("ml-dev", 17, {"nvidia.com/gpu": 1}, tolerations=SHARED_OPT_IN))) == (
        "flavors",
        "no flavor fits: "
        + a10g_short.format(n=17)
        + "; l4-shared: needs 17 nvidia.com/gpu, ml-dev's quota 16; no other ClusterQueue of cohort gpu-platform lends "
        "l4-shared (it is the cohort's only ClusterQueue), so at most 16 (Kueue: maximum capacity 16): raise "
        "ml-dev's gpuQuota on l4-shared to 5 GPUs, or give another tenant of cohort gpu-platform quota on l4-shared "
        "that it lends",
    )


def test_topology_requests_and_topology_aware_flavors_pair_up():
    prod = spec_of("prod-aws")
    # research's order puts the topology-aware a100-train first: a pod asking no topology goes on to h100-spot
    t = trace(prod, pod("research", {"nvidia.com/gpu": 8}))
    assert t.pool == "h100-spot"
    assert layer(t, "flavors").detail.endswith(
        "skipped a100-train: topology-aware, the pod template asks for no topology)"
    )
    # a gang asking a topology is placed only on a topology-aware flavor: dev-aws with l4-shared topology-aware
    config = stack_config("dev-aws")
    pool_of(config["gpu-platform:nodePools"], "l4-shared")["topologyAware"] = True
    t = trace(
        load_spec(config), job("ml-dev", 2, {"nvidia.com/gpu": 1}, annotations=TAS_HOSTNAME, tolerations=SHARED_OPT_IN)
    )
    assert t.pool == "l4-shared", t.lines()
    assert layer(t, "flavors").detail.endswith("; skipped a10g-spot: not topology-aware)")
    # ... and h100-spot, research's last flavor, is skipped for it too
    text = job(
        "research", 1, {"nvidia.com/gpu": 8}, annotations=TAS_LAYER3, nodeSelector={"gpu-platform/pool": "h100-spot"}
    )
    assert stop(trace(prod, text)) == (
        "flavors",
        "no flavor fits: a100-train: nodeSelector gpu-platform/pool=h100-spot (nodes have a100-train); "
        "h100-spot: not topology-aware",
    )


# --------------------------------------------------------------------------------------- admission checks


def _fixed_managed(stack: str = "prod-aws", min_nodes: int = 1) -> dict:
    """The stack with every managed pool fixed at min_nodes (no Cluster Autoscaler): no ProvisioningRequest check."""
    config = stack_config(stack)
    for p in config["gpu-platform:nodePools"]:
        if p.get("provisioner", "managed") == "managed":
            p["minNodes"] = max(p.get("minNodes", 0), min_nodes)
            p["maxNodes"] = max(p.get("maxNodes", 1), min_nodes)
    config["gpu-platform:addons"] = {**config["gpu-platform:addons"], "clusterAutoscaler": False}
    return config


def test_topology_aware_pool_without_a_provisioning_check():
    """a100-train (8 A100s per node) fixed at 1 node: a gang of 2 x 8 needs 2 nodes, TAS sees only the one."""
    gang = job(
        "research", 2, {"nvidia.com/gpu": 8}, annotations=TAS_LAYER3, nodeSelector={"gpu-platform/pool": "a100-train"}
    )
    assert stop(trace(load_spec(_fixed_managed()), gang)) == (
        "admission-checks",
        "a100-train is topology-aware and has 1 node(s) at rest, the gang needs 2: TAS counts only existing nodes "
        "and nothing asks for more; give the pool a provisioner that serves ProvisioningRequests (managed + "
        "Cluster Autoscaler, GKE) or turn topologyAware off",
    )
    # a pod bigger than any node: the provisioner says no node fits it (TAS has nothing to count)
    too_big = job(
        "research", 1, {"nvidia.com/gpu": 16}, annotations=TAS_LAYER3, nodeSelector={"gpu-platform/pool": "a100-train"}
    )
    t = trace(load_spec(_fixed_managed()), too_big)
    assert layer(t, "admission-checks").detail == "none"
    assert stop(t) == (
        "provisioner",
        "pod set main asks 16 nvidia.com/gpu, one node of a100-train brings 8: no node it can launch fits the pod; "
        # research's 16 nominal A100s there admit it all the same (issue 26 §4.7; no ProvisioningRequest check on
        # a pool that cannot grow)
        "ask for at most that per pod (more pods instead)" + kueue_holds("16 nvidia.com/gpu", "a100-train"),
    )
    # with 2 nodes at rest the gang fits on what exists
    t = trace(load_spec(_fixed_managed(min_nodes=2)), gang)
    assert layer(t, "admission-checks").detail == "none" and t.pending is None, t.lines()
    assert layer(t, "provisioner").detail == "2 fixed node(s), needs 2"


def test_the_provisioning_check_is_named_with_its_class():
    gang = job(
        "research", 2, {"nvidia.com/gpu": 8}, annotations=TAS_LAYER3, nodeSelector={"gpu-platform/pool": "a100-train"}
    )
    # issue 26 §4.6: on AWS the class is not atomic (cluster-autoscaler 1.35.0 cloudprovider/aws/
    # aws_cloud_provider.go:288-291 has no AtomicIncreaseSize; the scale-up falls back to IncreaseSize,
    # core/scaleup/orchestrator/executor.go:144-152), so it does not "bring the nodes first"
    assert layer(trace(spec_of("prod-aws"), gang), "admission-checks").detail == (
        "a100-train-atomic: ProvisioningRequest best-effort-atomic-scale-up.autoscaling.x-k8s.io: Kueue admits once "
        "the Cluster Autoscaler has asked the Auto Scaling group for 2 node(s), not once they run: on AWS the "
        "scale-up is not atomic (the AWS provider has no AtomicIncreaseSize in the Cluster Autoscaler 1.35.0; "
        "docs/architecture.md names the source), so nodes that never come leave the gang waiting until "
        "waitForPodsReady (30m) evicts it"
    )


def test_an_existing_cluster_is_not_held_to_nodes_at_rest():
    """cloud existing: the pools are the nodes there are (minNodes says nothing), so TAS sees them all."""
    config = stack_config("local")
    config["gpu-platform:scheduling"] = {"topologyLevels": ["kubernetes.io/hostname"]}
    config["gpu-platform:nodePools"][0].update({"topologyAware": True, "maxNodes": 2})
    config["gpu-platform:tenants"][0]["gpuQuota"] = {"workstation": 2}
    spec = load_spec(config)
    t = trace(spec, job("dev", 2, {"nvidia.com/gpu": 2}, annotations=TAS_HOSTNAME))
    assert layer(t, "admission-checks").detail == "none" and t.pending is None, t.lines()
    assert layer(t, "provisioner").detail == "existing nodes (2), nothing scales; needs 2"


# -------------------------------------------------------------------------------------- queue without Kueue


def test_resource_quota_gate():
    """dev-aws without a batch scheduler: ml-dev's ResourceQuota allows 8 A10Gs + 4 L4s x 4 slices = 24 units."""
    spec = spec_of("dev-aws", addons=NO_BATCH_SCHEDULER)
    full = job(
        "ml-dev", 24, {"nvidia.com/gpu": 1}, nodeSelector={"gpu-platform/pool": "l4-shared"}, tolerations=GPU_TOLERATION
    )
    assert layer(trace(spec, full), "queue").detail == "no queue; ResourceQuota allows 24 nvidia.com/gpu"
    assert stop(trace(spec, pod("ml-dev", {"nvidia.com/mig-1g.10gb": 1}))) == (
        "queue",
        "the ml-dev ResourceQuota allows 0 nvidia.com/mig-1g.10gb, the workload asks 1 nvidia.com/mig-1g.10gb: its "
        "pods are refused at creation",
    )


def test_volcano_queue_holds_exactly_its_capacity():
    """prod-aws: applied-ml's queue can hold a100-gang's 16 A100s (2 nodes x 8, its capability; proportion would
    allow 128 - 16 + 16 = 128); 2 pods x 8 is all of them, a third pod is one too many. From an idle cluster the
    cap is its guarantee, also 16 (no nvidia.com/gpu node at rest: 0 - 16 + 16; issue 26 §4.5)."""
    prod = spec_of("prod-aws")
    two = volcano_job(
        "applied-ml", "applied-ml", 2, {"nvidia.com/gpu": 8}, tolerations=GPU_TOLERATION, nodeSelector=GANG_POOL
    )
    assert layer(trace(prod, two), "queue").detail == (
        "Volcano queue applied-ml (enqueues 16 nvidia.com/gpu from an idle cluster, holds 16 nvidia.com/gpu at full "
        "size)"
    )
    three = volcano_job(
        "applied-ml", "applied-ml", 3, {"nvidia.com/gpu": 8}, tolerations=GPU_TOLERATION, nodeSelector=GANG_POOL
    )
    assert stop(trace(prod, three)) == (
        "queue",
        "Volcano queue applied-ml holds at most 16 nvidia.com/gpu with every pool at its maximum size (proportion: "
        "cluster total - all guarantees + its own, within its capability), the job needs 24 nvidia.com/gpu",
    )


def test_without_kueue_the_pod_must_find_its_pool():
    """renameByDefault: l4-shared advertises nvidia.com/gpu.shared, a10g-spot nvidia.com/gpu."""
    config = stack_config("dev-aws")
    pool_of(config["gpu-platform:nodePools"], "l4-shared")["sharing"]["renameByDefault"] = True
    config["gpu-platform:addons"] = NO_BATCH_SCHEDULER
    spec = load_spec(config)
    shared = pod("ml-dev", {"nvidia.com/gpu.shared": 1}, tolerations=GPU_TOLERATION)
    assert trace(spec, shared).pool == "l4-shared"
    both = pod("ml-dev", {"nvidia.com/gpu": 1, "nvidia.com/gpu.shared": 1}, tolerations=GPU_TOLERATION)
    assert stop(trace(spec, both)) == (
        "pool",
        "no pool of ml-dev (a10g-spot, l4-shared) advertises nvidia.com/gpu, nvidia.com/gpu.shared and matches the pod",
    )


# ---------------------------------------------------------------------------------------------- pool


def test_pool_layer_stops():
    # a required affinity on a label the node has but the flavor does not: Kueue admits, the node refuses
    absent = {"key": "nvidia.com/gpu.present", "operator": "DoesNotExist"}
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [absent]}]}
        }
    }
    t = trace(spec_of("dev-aws"), pod("ml-dev", {"nvidia.com/gpu": 1}, affinity=affinity))
    # Kueue's flavor step ignores keys its flavors do not label (kueue v0.19.2 flavorassigner.go:1224-1227,
    # 1278-1320), so it admits on a10g-spot, the first flavor; no node runs it, and Kueue holds the quota (§4.7)
    assert stop(t) == (
        "pool",
        "a10g-spot's nodes do not match: required node affinity matches no term (Kueue picks a flavor by "
        "gpu-platform/pool alone: pin the pool with it)" + kueue_holds("1 nvidia.com/gpu", "a10g-spot"),
    )
    # without Kueue nothing adds tolerations: every NoSchedule taint of the pool is named
    config = stack_config("dev-aws")
    pool_of(config["gpu-platform:nodePools"], "a10g-spot")["taints"] = [{"key": "team", "value": "ml"}]
    config["gpu-platform:addons"] = NO_BATCH_SCHEDULER
    t = trace(load_spec(config), pod("ml-dev", {"nvidia.com/gpu": 1}, nodeSelector={"gpu-platform/pool": "a10g-spot"}))
    name, detail = stop(t)
    assert name == "pool"
    assert detail.startswith(
        "a10g-spot's nodes are tainted nvidia.com/gpu=present:NoSchedule, team=ml:NoSchedule and pod set main "
        "does not tolerate it: add "
    ), detail


# --------------------------------------------------------------------------------------------- provisioner


def test_a_resource_the_pool_never_brings():
    text = pod("ml-dev", {"nvidia.com/gpu": 1, "vpc.amazonaws.com/efa": 1})
    assert stop(trace(spec_of("dev-aws"), text)) == (
        "provisioner",
        "pod set main asks 1 vpc.amazonaws.com/efa, one node of a10g-spot brings 0: no node it can launch fits the "
        "pod; ask for at most that per pod (more pods instead)" + kueue_holds("1 nvidia.com/gpu", "a10g-spot"),
    )


def test_existing_nodes_only():
    """An existing cluster of 2 nodes x 8 GPUs: 3 pods of 5 GPUs need a node each."""
    config = stack_config("local")
    config["gpu-platform:nodePools"][0] = {"name": "workstation", "gpu": {"model": "L4", "perNode": 8}, "maxNodes": 2}
    config["gpu-platform:tenants"][0]["gpuQuota"] = {"workstation": 16}
    spec = load_spec(config)
    assert stop(trace(spec, job("dev", 3, {"nvidia.com/gpu": 5}))) == (
        "provisioner",
        # the third pod never gets a node; Kueue has admitted the 15 GPUs on quota (issue 26 §4.7)
        "existing nodes: 2, the workload needs 3" + kueue_holds("15 nvidia.com/gpu", "workstation"),
    )
    assert layer(trace(spec, job("dev", 2, {"nvidia.com/gpu": 5})), "provisioner").detail == (
        "existing nodes (2), nothing scales; needs 2"
    )


def test_more_nodes_than_the_pool_may_have():
    """dev-gcp with t4-spot at 4 T4s per node (at most 2 nodes) and a quota of 12: 3 pods of 3 need 3 nodes."""
    config = stack_config("dev-gcp")
    pool_of(config["gpu-platform:nodePools"], "t4-spot").update(
        {"gpu": {"model": "T4", "perNode": 4}, "instanceTypes": ["n1-standard-32"]}
    )
    config["gpu-platform:tenants"][0]["gpuQuota"] = {"l4-shared": 4, "t4-spot": 12}
    text = job("ml-dev", 3, {"nvidia.com/gpu": 3}, nodeSelector={"gpu-platform/pool": "t4-spot"})
    assert stop(trace(load_spec(config), text)) == (
        "provisioner",
        "the workload needs 3 node(s), t4-spot has at most 2" + kueue_holds("9 nvidia.com/gpu", "t4-spot"),
    )


def test_gke_queued_provisioning():
    text = job("research", 2, {"nvidia.com/gpu": 8}, nodeSelector={"gpu-platform/pool": "h100-burst"})
    assert layer(trace(spec_of("prod-gcp"), text), "provisioner").detail == (
        "GKE queued provisioning (Dynamic Workload Scheduler): 2 node(s) through Kueue's ProvisioningRequest"
    )


def test_karpenter_pool_with_an_on_demand_fallback():
    """h100-spot: 32 GPUs at 8 per node is 4 nodes, in a spot NodePool and its on-demand fallback."""
    t = trace(spec_of("prod-aws"), pod("research", {"nvidia.com/gpu": 8}))
    assert (
        layer(t, "provisioner").detail == "Karpenter NodePool(s) h100-spot, h100-spot-on-demand: 0..4 node(s), needs 1"
    )
    assert t.provisioner == "Karpenter NodePool h100-spot, h100-spot-on-demand"


def test_a_fixed_managed_pool():
    """dev-aws with l4-shared fixed at 1 node (4 slices) and no Cluster Autoscaler."""
    config = stack_config("dev-aws")
    pool_of(config["gpu-platform:nodePools"], "l4-shared")["minNodes"] = 1
    config["gpu-platform:addons"] = {**config["gpu-platform:addons"], "clusterAutoscaler": False}
    spec = load_spec(config)
    pinned = {"nodeSelector": {"gpu-platform/pool": "l4-shared"}}
    t = trace(spec, job("ml-dev", 4, {"nvidia.com/gpu": 1}, **pinned, tolerations=SHARED_OPT_IN))
    assert layer(t, "provisioner").detail == "1 fixed node(s), needs 1"
    assert t.provisioner == "EKS managed node group (fixed size)"
    assert stop(trace(spec, job("ml-dev", 5, {"nvidia.com/gpu": 1}, **pinned, tolerations=SHARED_OPT_IN))) == (
        "provisioner",
        "l4-shared is fixed at 1 node(s) (addons.clusterAutoscaler off), needs 2"
        + kueue_holds("5 nvidia.com/gpu", "l4-shared"),
    )


def test_the_cluster_autoscaler_template_must_fit_the_pod(monkeypatch):
    """Scale from zero: the Cluster Autoscaler simulates the pod on the node group's template tags. A template
    without the pool label Kueue injects, or without the time-sliced GPU count, never scales the pool up."""
    from components.plan.aws import managed_pools

    tags = managed_pools.autoscaler_tags
    prefix = managed_pools.CA_TEMPLATE + "/"

    def without(*names):
        def patched(spec, pool):
            return {k: v for k, v in tags(spec, pool).items() if k.removeprefix(prefix) not in names}

        return patched

    text = pod(
        "ml-dev", {"nvidia.com/gpu": 1}, nodeSelector={"gpu-platform/pool": "l4-shared"}, tolerations=SHARED_OPT_IN
    )
    monkeypatch.setattr(managed_pools, "autoscaler_tags", without("label/gpu-platform/pool"))
    assert stop(trace(spec_of("dev-aws"), text)) == (
        "provisioner",
        "the Cluster Autoscaler's node template for l4-shared does not fit the pod (nodeSelector "
        "gpu-platform/pool=l4-shared (nodes have no such label)): it never scales the pool up for it"
        + kueue_holds("1 nvidia.com/gpu", "l4-shared"),
    )

    # every reason at once: a template taint the pod does not tolerate as well
    def tainted(spec, pool):
        return {**without("label/gpu-platform/pool")(spec, pool), prefix + "taint/team": "ml:NoSchedule"}

    monkeypatch.setattr(managed_pools, "autoscaler_tags", tainted)
    assert stop(trace(spec_of("dev-aws"), text)) == (
        "provisioner",
        "the Cluster Autoscaler's node template for l4-shared does not fit the pod (nodeSelector "
        "gpu-platform/pool=l4-shared (nodes have no such label); team=ml:NoSchedule): it never scales the pool up "
        "for it" + kueue_holds("1 nvidia.com/gpu", "l4-shared"),
    )
    # the template counts the instance type's one L4, not its 4 slices: a pod of 2 slices never scales it up
    monkeypatch.setattr(managed_pools, "autoscaler_tags", without("resources/nvidia.com/gpu"))
    two = pod(
        "ml-dev", {"nvidia.com/gpu": 2}, nodeSelector={"gpu-platform/pool": "l4-shared"}, tolerations=SHARED_OPT_IN
    )
    assert stop(trace(spec_of("dev-aws"), two)) == (
        "provisioner",
        "the Cluster Autoscaler's node template offers 1 nvidia.com/gpu, the pod asks 2 nvidia.com/gpu: it never "
        "scales l4-shared up from zero; tag the node group "
        "k8s.io/cluster-autoscaler/node-template/resources/<resource> (managed_pools.autoscaler_tags)"
        + kueue_holds("2 nvidia.com/gpu", "l4-shared"),
    )
    # the pool label is the one Kueue injects: a pod that names no pool of its own is held to it as well
    config = stack_config("dev-aws")
    config["gpu-platform:tenants"][0]["gpuQuota"] = {"l4-shared": 4}
    monkeypatch.setattr(managed_pools, "autoscaler_tags", without("label/gpu-platform/pool"))
    assert stop(trace(load_spec(config), pod("ml-dev", {"nvidia.com/gpu": 1}))) == stop(trace(spec_of("dev-aws"), text))
    # EFA interfaces: the autoscaler knows an instance type's GPUs, not its EFA devices, unless tagged
    monkeypatch.setattr(managed_pools, "autoscaler_tags", without("resources/vpc.amazonaws.com/efa"))
    (t,) = explain.explain_all(spec_of("prod-aws"), (ROOT / "examples" / "kueue-pytorch-training-job.yaml").read_text())
    assert stop(t) == (
        "provisioner",
        "the Cluster Autoscaler's node template offers 0 vpc.amazonaws.com/efa, the pod asks 4 "
        "vpc.amazonaws.com/efa: it never scales a100-train up from zero; tag the node group "
        "k8s.io/cluster-autoscaler/node-template/resources/<resource> (managed_pools.autoscaler_tags)"
        # a100-train grows through a ProvisioningRequest check: the quota stays reserved while it is pending
        + kueue_reserves("16 nvidia.com/gpu", "a100-train"),
    )
    # one interface is as much beyond an untold template as four
    one = job(
        "research",
        1,
        {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 1},
        annotations=TAS_LAYER3,
        nodeSelector={"gpu-platform/pool": "a100-train"},
    )
    assert stop(trace(spec_of("prod-aws"), one))[1].startswith(
        "the Cluster Autoscaler's node template offers 0 vpc.amazonaws.com/efa, the pod asks 1 vpc.amazonaws.com/efa"
    )
    monkeypatch.undo()
    assert trace(spec_of("prod-aws"), one).pending is None
    assert trace(spec_of("dev-aws"), text).pending is None
    assert trace(load_spec(config), pod("ml-dev", {"nvidia.com/gpu": 1})).pending is None


# ------------------------------------------------------------------------------------------- node, dcgm


def test_node_layer_names_the_plugin_and_what_one_node_advertises():
    """a100-train: Bottlerocket's own device plugin; 8 A100s and 4 EFA interfaces per p4de node."""
    (t,) = explain.explain_all(spec_of("prod-aws"), (ROOT / "examples" / "kueue-pytorch-training-job.yaml").read_text())
    assert (
        layer(t, "node").detail
        == "one a100-train node (bottlerocket plugin) advertises 8 nvidia.com/gpu, 4 vpc.amazonaws.com/efa"
    )


def test_dcgm_layer():
    off = spec_of("dev-aws", addons={"gpuOperator": True, "dcgm": False, "kueue": True, "volcano": False})
    t = trace(off, pod("ml-dev", {"nvidia.com/gpu": 1}))
    assert (t.layers[-1].name, t.layers[-1].detail) == ("dcgm", "DCGM off: no GPU metrics") and t.pending is None
    (t,) = explain.explain_all(spec_of("dra-existing"), (ROOT / "examples" / "dra-training-job.yaml").read_text())
    assert (t.layers[-1].name, t.layers[-1].detail) == (
        "dcgm",
        "DRA devices: whether dcgm-exporter maps claims to pods is not checked here",
    )
    t = trace(spec_of("dev-aws"), pod("ml-dev", {"nvidia.com/gpu": 1}))
    assert (t.layers[-1].name, t.layers[-1].detail) == (
        "dcgm",
        "dcgm-exporter attributes the GPUs to the pod (Prometheus: install)",
    )


# -------------------------------------------------------------------------------------------------- DRA


def _dra_pod(claims: list[dict], *docs: dict) -> str:
    doc = yaml.safe_load(pod("research", {}))
    doc["spec"]["resourceClaims"] = claims
    return yaml.safe_dump_all([*docs, doc])


def _claim(kind: str, name: str, requests: list[dict]) -> dict:
    body = {"devices": {"requests": requests}}
    spec = {"spec": body} if kind == "ResourceClaimTemplate" else body
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "research"},
        "spec": spec,
    }


def test_dra_claims_in_the_file():
    """dra-existing: gpu.nvidia.com is the class Kueue counts as gpu.nvidia.com/devices."""
    spec = spec_of("dra-existing")
    two = {"name": "r", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}}
    one = {"name": "s", "exactly": {"deviceClassName": "gpu.nvidia.com"}}  # count defaults to 1
    text = _dra_pod([{"name": "g", "resourceClaimName": "mine"}], _claim("ResourceClaim", "mine", [two, one]))
    t = trace(spec, text)
    assert layer(t, "claims").detail == "DRA: main 3 gpu.nvidia.com/devices", t.lines()
    # the same from a template in the file
    text = _dra_pod([{"name": "g", "resourceClaimTemplateName": "tpl"}], _claim("ResourceClaimTemplate", "tpl", [two]))
    assert layer(trace(spec, text), "claims").detail == "DRA: main 2 gpu.nvidia.com/devices"
    # a claim named but not in the file
    known = ", ".join(sorted(dra.claim_templates(spec, spec.tenants[0])))
    assert known.count(", ") >= 1, known
    assert stop(trace(spec, _dra_pod([{"name": "g", "resourceClaimName": "absent"}]))) == (
        "claims",
        f"ResourceClaim absent is neither in the file nor created for research ({known})",
    )


def test_dra_claims_explain_does_not_trace():
    spec = spec_of("dra-existing")
    other = {"name": "r", "exactly": {"deviceClassName": "example.com/fpga"}}
    text = _dra_pod([{"name": "g", "resourceClaimName": "mine"}], _claim("ResourceClaim", "mine", [other]))
    assert stop(trace(spec, text)) == (
        "claims",
        "ResourceClaim mine: DeviceClass example.com/fpga is not one the stack serves (gpu.nvidia.com, mig.nvidia.com)",
    )
    every = {"name": "r", "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "All"}}
    text = _dra_pod([{"name": "g", "resourceClaimName": "mine"}], _claim("ResourceClaim", "mine", [every]))
    assert stop(trace(spec, text)) == ("claims", "ResourceClaim mine: allocationMode All is not traced")


def test_every_failing_layer_is_reported_in_one_run_and_the_first_decides_the_outcome():
    """Issue 41.2: a Job with three mistakes (Pod Security, an unknown PriorityClass, a resource the tenant's pools
    do not advertise) names all three; where it waits (pendingAt, outcome) is the first, as before."""
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "serving"},
        "spec": {
            "template": {
                "spec": {
                    "priorityClassName": "nope",
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}}],
                }
            }
        },
    }
    (t,) = explain.explain_all(spec_of("prod-aws"), json.dumps(job))
    assert [x.name for x in t.failing] == ["namespace", "priority", "flavors"]
    doc = t.doc()
    assert (doc["pendingAt"], doc["outcome"], doc["pool"], doc["failingLayers"]) == (
        "namespace",
        "refused",
        None,
        ["namespace", "priority", "flavors"],
    )
    assert t.verdict.endswith(" (then also: priority, flavors)")


def test_a_resource_no_pool_of_the_tenant_advertises_names_what_they_advertise():
    """nvidia.com/gpu in prod-aws's MIG-only serving tenant: Kueue finds no flavor; explain says which resources
    the tenant's pools advertise instead of a blank reason."""
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "serving"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}},
    }
    (t,) = explain.explain_all(spec_of("prod-aws"), json.dumps(job))
    flavors = next(x for x in t.layers if x.name == "flavors")
    assert not flavors.ok
    assert flavors.detail == (
        "no flavor fits: no pool of serving advertises nvidia.com/gpu (h100-inference advertises "
        "nvidia.com/mig-1g.10gb, nvidia.com/mig-2g.20gb, nvidia.com/mig-3g.40gb): request one of those resources "
        "instead (resources.limits), or give serving gpuQuota on a pool that advertises nvidia.com/gpu"
    )
