"""gpu-platform explain: every example runs on its target stack from zero nodes, and each cross-layer defect of
issue 10 is named as a pending layer by a stack that reproduces it.

Traces read the validated spec and the components' pure functions (no engine run), so each case costs
milliseconds; only the CLI cases spawn nothing either (``cli.main`` in-process).
"""

from __future__ import annotations

import dataclasses
import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT, stack_config

from components.cli import main as cli
from components.cli.loader import load_spec
from components.explain import trace as explain
from components.explain.workloads import load
from components.plan import plan
from components.plan.plan import Plan, plain
from components.render import gpu_operator

EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
TARGET = re.compile(r"^# Target stack: ([a-z0-9-]+)", re.M)


def spec_of(stack: str, **changes: Any):
    config = stack_config(stack)
    for k, v in changes.items():
        config[f"gpu-platform:{k}"] = v
    return load_spec(config)


RAY_ADDONS = {"gpuOperator": True, "dcgm": True, "kueue": True, "volcano": False, "kuberay": True}
# Every operator kind explain models, with its integration on (the Kubeflow Training and MPI ones named explicitly:
# no add-on installs their operators, issue 31)
ALL_KINDS = {
    "addons": {"gpuOperator": True, "dcgm": True, "kueue": True, "volcano": True, "jobset": True, "kuberay": True,
               "leaderWorkerSet": True, "trainer": True},
    "scheduling": {"oversubscriptionRatio": 1.5, "kueueIntegrations": [
        "batch/job", "jobset.x-k8s.io/jobset", "kubeflow.org/pytorchjob", "kubeflow.org/mpijob",
        "trainer.kubeflow.org/trainjob", "ray.io/rayjob", "ray.io/raycluster", "pod", "deployment", "statefulset",
        "leaderworkerset.x-k8s.io/leaderworkerset",
    ]},
}  # fmt: skip


def trace(spec, text: str) -> explain.Trace:
    (t,) = explain.explain_all(spec, textwrap.dedent(text))
    return t


def plan_of(spec) -> Plan:
    return plan.build(spec, "")


def trace_plan(decided: Plan, text: str) -> explain.Trace:
    """The trace of one workload through a plan as given (a decision of it changed, to see what explain says of
    a platform that decided otherwise)."""
    (t,) = [explain.explain_plan(decided, w) for w in load(textwrap.dedent(text))]
    return t


def without_overlays(decided: Plan) -> Plan:
    """The plan without Karpenter NodeOverlays (the pre-fix platform: Karpenter counts EC2's GPUs)."""
    return dataclasses.replace(decided, karpenter=dataclasses.replace(decided.karpenter, node_overlays=()))


def with_values(decided: Plan, addon: str, values: dict[str, Any]) -> Plan:
    """The plan with an add-on's release values replaced."""
    addons = {**decided.addons, addon: dataclasses.replace(decided.addons[addon], values=values)}
    return dataclasses.replace(decided, addons=addons)


def pool_of(config_pools: list[dict], name: str) -> dict:
    return next(p for p in config_pools if p["name"] == name)


def layer(t: explain.Trace, name: str) -> explain.Layer:
    return next(x for x in t.layers if x.name == name)


NO_BATCH_SCHEDULER = {"gpuOperator": True, "dcgm": True, "kueue": False, "volcano": False}


GPU_TOLERATION = [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}]
# The opt-in a shared pool's Kueue flavor asks of pods when the tenant also reaches whole GPUs of the same name
# (derive.SHARED_GPU_TAINT; dev-aws: ml-dev's l4-shared beside a10g-spot)
SHARED_OPT_IN = [{"key": "gpu-platform/shared-gpu", "operator": "Equal", "value": "one-unit", "effect": "NoSchedule"}]
# prod-aws applied-ml's own pool: the Volcano tenant pod policy refuses its GPU pods on any other
GANG_POOL = {"gpu-platform/pool": "a100-gang"}
# What Pod Security "restricted" asks of a container and a pod (the serving tenants enforce it).
SAFE_CONTAINER = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
SAFE_POD = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}


def kueue_holds(units: str, pool: str) -> str:
    """What a stop after Kueue's flavor step adds when no node will ever run the pods (issue 26 §4.7): Kueue
    counts quota per flavor, never per node (kueue v0.19.2 pkg/scheduler/flavorassigner), so it admits the
    workload all the same; waitForPodsReady evicts it after its timeout (30m in every shipped stack:
    pkg/controller/core/workload_controller.go:1229-1274, 1657-1675) and requeues it with backoff, and
    requeuingStrategy.backoffLimitCount (requeueLimit, 10 by default) evictions deactivate it."""
    return (
        f"; Kueue still admits it (quota counts per flavor, not per node) and holds {units} of {pool}'s quota until "
        "waitForPodsReady.timeout (30m) evicts it, then requeues it with backoff, deactivated after 10 evictions"
    )


def kueue_reserves(units: str, pool: str) -> str:
    """The same behind a ProvisioningRequest admission check on AWS (issue 26 §4.7): the quota is reserved while
    the check is pending, which waitForPodsReady does not time (it counts from admission: kueue v0.19.2
    workload_controller.go:1662-1664); the Cluster Autoscaler fails a request it has not provisioned after 7 days
    (cluster-autoscaler 1.35.0 processors/provreq/processor.go:42, 100-116)."""
    return (
        f"; Kueue still reserves {units} of {pool}'s quota for it (quota counts per flavor, not per node), while its "
        "ProvisioningRequest check stays pending (waitForPodsReady counts only from admission); the Cluster "
        "Autoscaler fails the request after 7 days"
    )


def container(resources: dict[str, int]) -> dict[str, Any]:
    return {"name": "c", "image": "x", "resources": {"limits": resources}, "securityContext": SAFE_CONTAINER}


def pod(namespace: str, resources: dict[str, int], **spec_extra: Any) -> str:
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": namespace, "labels": spec_extra.pop("labels", {})},
        "spec": {"containers": [container(resources)], "securityContext": SAFE_POD, **spec_extra},
    }
    return yaml.safe_dump(doc)


def job(namespace: str, pods: int, resources: dict[str, int], annotations=None, labels=None, **spec_extra) -> str:
    doc = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": namespace, "labels": labels or {}},
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "template": {
                "metadata": {"annotations": annotations or {}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [container(resources)],
                    "securityContext": SAFE_POD,
                    **spec_extra,
                },
            },
        },
    }
    return yaml.safe_dump(doc)


def volcano_job(namespace: str, queue: str, replicas: int, resources: dict[str, int], **pod_extra) -> str:
    doc = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "v", "namespace": namespace},
        "spec": {
            "schedulerName": "volcano",
            "queue": queue,
            "minAvailable": replicas,
            "tasks": [
                {
                    "name": "worker",
                    "replicas": replicas,
                    "template": {
                        "spec": {
                            "containers": [{"name": "c", "image": "x", "resources": {"limits": resources}}],
                            **pod_extra,
                        }
                    },
                }
            ],
        },
    }
    return yaml.safe_dump(doc)


# ------------------------------------------------------------------------------------ the examples


def test_every_example_names_its_target_stack():
    assert EXAMPLES
    for path in EXAMPLES:
        assert TARGET.search(path.read_text()), f"{path.name} has no '# Target stack: <stack>' line"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs_on_its_target_stack_from_zero_nodes(path: Path):
    stack = TARGET.search(path.read_text()).group(1)
    spec = load_spec(stack_config(stack))
    traces = explain.explain_all(spec, path.read_text())
    for t in traces:
        assert t.pending is None, "\n".join(t.lines())
        assert t.verdict.startswith("runs on pool ")
        # "from zero": the trace went through a provisioner that can add nodes (or the nodes exist)
        layers = [x.name for x in t.layers if x.name != "image"]  # a note where the stack declares images
        assert layers[-4:] == ["pool", "provisioner", "node", "dcgm"], layers


def test_cli_example_exit_codes_and_output(capsys):
    path = ROOT / "examples" / "timesliced-notebook-pod.yaml"
    assert cli.main(["explain", "dev-aws", str(path)]) == 0
    out = capsys.readouterr().out
    assert (
        out.rstrip().splitlines()[-1]
        == "  verdict: runs on pool l4-shared via EKS managed node group + Cluster Autoscaler"
    )
    # the report ends in exactly one newline: scripts that diff or append explain's output see no blank tail
    assert out.endswith(" + Cluster Autoscaler\n"), repr(out[-40:])
    assert cli.main(["explain", "dev-aws", str(path), "--json"]) == 0
    (doc,) = json.loads(capsys.readouterr().out)
    assert doc["verdict"] == "runs" and doc["pool"] == "l4-shared"
    assert [x["layer"] for x in doc["layers"]] == [
        "namespace",
        "priority",
        "scheduler",
        "queue",
        "flavors",
        "preemption",
        "admission-checks",
        "pool",
        "provisioner",
        "node",
        "dcgm",
    ]


def test_cli_pending_exits_3(tmp_path, capsys):
    f = tmp_path / "w.yaml"
    f.write_text(pod("ml-dev", {"nvidia.com/gpu": 1}, labels={"kueue.x-k8s.io/queue-name": "nope"}))
    assert cli.main(["explain", "dev-aws", str(f)]) == 3
    assert "verdict: pending at queue: LocalQueue nope does not exist in ml-dev" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "no workload in it"),
        (
            "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: x}\nspec: {}\n",
            "DaemonSet (apps/v1) is not a workload",
        ),
        ("kind: [\n", "not YAML"),
        ("apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\nspec: {}\n", "Job x: no pod template"),
    ],
)
def test_cli_unsupported_workload_exits_2(tmp_path, capsys, content, message):
    f = tmp_path / "w.yaml"
    f.write_text(content)
    assert cli.main(["explain", "dev-aws", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


def test_cli_missing_workload_and_bad_stack_exit_2(tmp_path, capsys):
    assert cli.main(["explain", "dev-aws", str(tmp_path / "absent.yaml")]) == 2
    assert "cannot read" in capsys.readouterr().err
    # a managed pool from zero without the autoscaler is a config error, not a pending verdict
    config = {"config": stack_config("dev-aws")}
    config["config"]["gpu-platform:addons"] = {**config["config"]["gpu-platform:addons"], "clusterAutoscaler": False}
    stack = tmp_path / "s.yaml"
    stack.write_text(yaml.safe_dump(config))
    w = tmp_path / "w.yaml"
    w.write_text(pod("ml-dev", {"nvidia.com/gpu": 1}))
    assert cli.main(["explain", "dev-aws", str(w), "--config", str(stack)]) == 2
    assert "minNodes" in capsys.readouterr().err


# ------------------------------------------------------------------------------ pending, by layer


def test_pod_security_restricted_refuses_a_privileged_pod():
    t = trace(spec_of("prod-aws"), pod("serving", {"nvidia.com/mig-1g.10gb": 1}, hostNetwork=True))
    assert t.pending.name == "namespace"
    assert "restricted" in t.pending.detail and "hostNetwork: true" in t.pending.detail
    t = trace(spec_of("prod-aws"), pod("serving", {"nvidia.com/mig-1g.10gb": 1}, securityContext={}))
    assert t.pending.name == "namespace" and "lacks runAsNonRoot" in t.pending.detail
    # baseline (research) lets the same pod through: only restricted asks for non-root
    assert trace(spec_of("prod-aws"), pod("research", {"nvidia.com/gpu": 8}, securityContext={})).layers[0].ok


def test_not_a_tenant_namespace():
    t = trace(spec_of("dev-aws"), pod("default", {"nvidia.com/gpu": 1}))
    assert t.pending.name == "namespace" and "not a tenant namespace" in t.pending.detail


def test_priority_above_the_tenant_ceiling_is_refused():
    t = trace(spec_of("prod-aws"), pod("notebooks", {"nvidia.com/gpu": 1}, priorityClassName="training"))
    assert t.pending.name == "priority"
    assert "above notebooks's ceiling dev" in t.pending.detail and "gpu-platform-priority-ceiling" in t.pending.detail


def test_unknown_priority_class():
    t = trace(spec_of("dev-aws"), pod("ml-dev", {"nvidia.com/gpu": 1}, priorityClassName="urgent"))
    assert t.pending.name == "priority" and "does not exist" in t.pending.detail


def test_kueue_integration_not_enabled(monkeypatch):
    spec = spec_of("dev-aws", scheduling={"kueueIntegrations": ["batch/job", "pod"]})
    rayjob = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "r", "namespace": "ml-dev"},
        "spec": {
            "rayClusterSpec": {
                "headGroupSpec": {"template": {"spec": {"containers": [{"name": "h", "image": "x"}]}}},
                "workerGroupSpecs": [
                    {
                        "groupName": "gpu",
                        "replicas": 1,
                        "template": {
                            "spec": {
                                "containers": [
                                    {"name": "w", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}}
                                ]
                            }
                        },
                    }
                ],
            }
        },
    }
    t = trace(spec, yaml.safe_dump(rayjob))
    # KubeRay is not installed: the fix is its add-on, not the integration alone (the rule would refuse that)
    assert t.pending.name == "scheduler"
    assert t.pending.detail == (
        "Kueue does not manage RayJob here: set addons.kuberay: true "
        "(and list ray.io/rayjob if scheduling.kueueIntegrations is set)"
    )
    # with KubeRay installed but the integration left out of a list the stack names, the fix is the list
    spec = spec_of("dev-aws", addons=RAY_ADDONS, scheduling={"kueueIntegrations": ["batch/job", "pod"]})
    # (and what happens meanwhile: Kueue's pod webhook gates pods whose owner no enabled integration manages, so
    # the RayJob's pods are admitted one by one; sched-test sees them run)
    t = trace(spec, yaml.safe_dump(rayjob))
    assert t.pending.detail == (
        "Kueue does not manage RayJob here: add ray.io/rayjob to scheduling.kueueIntegrations; its pods are queued "
        "one by one by the pod integration, so the gang is not admitted whole"
    )
    assert t.outcome == "runs"
    # with the integration on but KubeRay not installed, the same RayJob passes Kueue's layers and stops where
    # the cluster does: the API server has no RayJob (issue 26 §4.8)
    monkeypatch.setattr(explain, "operator_installed", lambda decided, operator: False)
    assert trace(spec_of("dev-aws", addons=RAY_ADDONS), yaml.safe_dump(rayjob)).pending.name == "operator"
    # with the operator installed (addons.kuberay, which also turns the integration on), it runs
    monkeypatch.undo()
    assert trace(spec_of("dev-aws", addons=RAY_ADDONS), yaml.safe_dump(rayjob)).pending is None


def test_wrong_volcano_queue():
    gang = volcano_job("applied-ml", "research", 1, {"nvidia.com/gpu": 8}, nodeSelector=GANG_POOL)
    t = trace(spec_of("prod-aws"), gang)
    assert t.pending.name == "queue" and "requires queue applied-ml" in t.pending.detail


def test_volcano_job_without_gpu_toleration_stays_pending_at_pool():
    text = volcano_job("applied-ml", "applied-ml", 1, {"nvidia.com/gpu": 8}, nodeSelector=GANG_POOL)
    t = trace(spec_of("prod-aws"), text)
    assert t.pending.name == "pool"
    assert "nvidia.com/gpu=present:NoSchedule" in t.pending.detail and "does not tolerate" in t.pending.detail


def test_kueue_injects_the_flavor_toleration():
    # the same pod needs no toleration of its own under Kueue: the flavor adds it on admission
    t = trace(
        spec_of("dev-aws"),
        pod(
            "ml-dev", {"nvidia.com/gpu": 1}, nodeSelector={"gpu-platform/pool": "l4-shared"}, tolerations=SHARED_OPT_IN
        ),
    )
    assert t.pending is None and t.pool == "l4-shared"


def test_mig_profile_the_pools_do_not_have():
    t = trace(spec_of("prod-aws"), pod("serving", {"nvidia.com/mig-7g.80gb": 1}))
    assert t.pending.name == "flavors" and "no quota for nvidia.com/mig-7g.80gb" in t.pending.detail


def test_request_larger_than_a_node():
    text = job("research", 1, {"nvidia.com/gpu": 16}, nodeSelector={"gpu-platform/pool": "h100-spot"})
    t = trace(spec_of("prod-aws"), text)
    assert t.pending.name == "provisioner"
    assert "asks 16 nvidia.com/gpu, one node of h100-spot brings 8" in t.pending.detail


def _a100_job(pods: int) -> str:
    return job(
        "research",
        pods,
        {"nvidia.com/gpu": 8},
        annotations={"kueue.x-k8s.io/podset-preferred-topology": "kubernetes.io/hostname"},
        nodeSelector={"gpu-platform/pool": "a100-train"},
    )


def _serving_lends_a100(gpus: int):
    """prod-aws with serving given ``gpus`` A100s on a100-train, which it lends to cohort gpu-platform in full (no
    lendingLimit there; its ClusterQueue preempts, so it may lend)."""
    config = stack_config("prod-aws")
    serving = next(t for t in config["gpu-platform:tenants"] if t["name"] == "serving")
    serving["gpuQuota"]["a100-train"] = gpus
    return load_spec(config)


def test_quota_exhausted_even_with_borrowing():
    """Kueue lends only quota another ClusterQueue of the cohort has (kueue v0.19.2 resource_node.go
    potentialAvailable). prod-aws as shipped: research alone on a100-train, nominal 16: its borrowingLimit 8 adds
    nothing, at most 0 + 16 = 16, so 3 pods x 8 = 24 stay pending (the old model called it runs, borrowing 8).
    With serving lending 8 there: min(16 + 8, 0 + 16 + 8) = 24: 24 runs borrowing 8, 4 x 8 = 32 does not."""
    t = trace(spec_of("prod-aws"), _a100_job(3))
    assert t.pending.name == "flavors"
    assert "a100-train: needs 24 nvidia.com/gpu, research's quota 16; " in t.pending.detail
    assert "so at most 16 (Kueue: maximum capacity 16)" in t.pending.detail
    lent = _serving_lends_a100(8)
    t = trace(lent, _a100_job(4))
    assert t.pending.name == "flavors"
    # 32 - 16 = 16 to borrow: serving lends 8 and research's borrowingLimit is 8, both bind
    assert (
        "a100-train: needs 32 nvidia.com/gpu, research's quota 16; the other ClusterQueues of cohort gpu-platform lend "
        "8 there (notebooks: no quota there; serving: lends 8) and its borrowingLimit there is 8"
    ) in t.pending.detail
    assert "so at most 24 (Kueue: maximum capacity 24)" in t.pending.detail
    ok = trace(lent, _a100_job(3))
    assert ok.pending is None
    assert "borrows 8 nvidia.com/gpu from cohort gpu-platform (lent by serving)" in layer(ok, "flavors").detail


def test_topology_aware_flavor_needs_a_topology_request():
    text = job("research", 2, {"nvidia.com/gpu": 8}, nodeSelector={"gpu-platform/pool": "a100-train"})
    t = trace(spec_of("prod-aws"), text)
    assert t.pending.name == "flavors"
    assert "a100-train: topology-aware, the pod template asks for no topology" in t.pending.detail


def test_tas_pool_without_provisioning_check_from_too_few_nodes():
    """§2: a topology-aware pool with nothing to bring nodes up for a gang (here: fixed managed pools)."""
    config = stack_config("prod-aws")
    pools = config["gpu-platform:nodePools"]
    for p in pools:
        if p.get("provisioner", "managed") == "managed":
            p["minNodes"] = max(p.get("minNodes", 0), 1)
    config["gpu-platform:addons"] = {**config["gpu-platform:addons"], "clusterAutoscaler": False}
    spec = load_spec(config)
    text = job(
        "research",
        2,
        {"nvidia.com/gpu": 8},
        annotations={"kueue.x-k8s.io/podset-required-topology": "topology.k8s.aws/network-node-layer-3"},
        nodeSelector={"gpu-platform/pool": "a100-train"},
    )
    t = trace(spec, text)
    assert t.pending.name == "admission-checks"
    assert "TAS counts only existing nodes" in t.pending.detail
    # the shipped stack attaches the ProvisioningRequest check (the §2 fix), so the same gang passes the layer
    shipped = trace(spec_of("prod-aws"), text)
    checks = next(x for x in shipped.layers if x.name == "admission-checks")
    assert checks.ok and "a100-train-atomic" in checks.detail


def test_fixed_managed_pool_cannot_grow():
    config = stack_config("dev-aws")
    pool_of(config["gpu-platform:nodePools"], "l4-shared")["minNodes"] = 1
    config["gpu-platform:addons"] = {**config["gpu-platform:addons"], "clusterAutoscaler": False}
    spec = load_spec(config)
    text = job(
        "ml-dev", 2, {"nvidia.com/gpu": 1}, nodeSelector={"gpu-platform/pool": "l4-shared"}, tolerations=SHARED_OPT_IN
    )
    # 2 pods x 1 unit fit one node of 4 time-sliced units: runs on the fixed node
    assert trace(spec, text).pool == "l4-shared"
    pods = [
        pod("ml-dev", {"nvidia.com/gpu": 1}, nodeSelector={"gpu-platform/pool": "l4-shared"}, tolerations=SHARED_OPT_IN)
    ]
    assert trace(spec, pods[0]).provisioner == "EKS managed node group (fixed size)"


def test_karpenter_time_sliced_pool_without_overlay():
    """§3: Karpenter counts GPUs from EC2 data; a time-sliced pool's node advertises replicas x that. Before the
    fix (no NodeOverlay) explain stops at the provisioner; with the pool's overlay it runs."""
    config = stack_config("dev-aws")
    pool_of(config["gpu-platform:nodePools"], "a10g-spot")["sharing"] = {"strategy": "time-slicing", "replicas": 4}
    spec = load_spec(config)
    text = pod(
        "ml-dev", {"nvidia.com/gpu": 1}, nodeSelector={"gpu-platform/pool": "a10g-spot"}, tolerations=SHARED_OPT_IN
    )
    fixed = trace(spec, text)
    assert fixed.pending is None and fixed.provisioner.startswith("Karpenter NodePool a10g-spot"), fixed.lines()
    t = trace_plan(without_overlays(plan_of(spec)), text)  # the pre-fix platform: no overlay
    assert (t.pending.name, t.pending.detail) == (
        "provisioner",
        "Karpenter counts 1 nvidia.com/gpu per node, the node advertises 4: it launches nodes for pods that would "
        "fit on existing ones; add a NodeOverlay for the pool",
    )
    # renameByDefault: the resource is invisible to Karpenter, it never launches a node
    pool_of(config["gpu-platform:nodePools"], "a10g-spot")["sharing"]["renameByDefault"] = True
    renamed = load_spec(config)
    shared = pod(
        "ml-dev",
        {"nvidia.com/gpu.shared": 1},
        nodeSelector={"gpu-platform/pool": "a10g-spot"},
    )
    t = trace_plan(without_overlays(plan_of(renamed)), shared)
    assert (t.pending.name, t.pending.detail) == (
        "provisioner",
        "Karpenter cannot see nvidia.com/gpu.shared on any instance type (it knows 1 nvidia.com/gpu per node from "
        "EC2 data), so it never launches a node for this pod: add a NodeOverlay for the pool"
        # no node ever comes, and Kueue has admitted the pod on quota (issue 26 §4.7)
        + kueue_holds("1 nvidia.com/gpu.shared", "a10g-spot"),
    )
    assert trace(renamed, shared).pending is None


def test_bottlerocket_karpenter_sharing_never_reaches_the_node():
    """§3: Bottlerocket Karpenter nodes need the sharing settings in the EC2NodeClass userData."""
    config = stack_config("dev-aws")
    p = pool_of(config["gpu-platform:nodePools"], "a10g-spot")
    p["os"] = "bottlerocket"
    p["sharing"] = {"strategy": "time-slicing", "replicas": 4}
    spec = load_spec(config)
    text = pod(
        "ml-dev", {"nvidia.com/gpu": 1}, nodeSelector={"gpu-platform/pool": "a10g-spot"}, tolerations=SHARED_OPT_IN
    )
    assert trace(spec, text).pending is None  # the fix: userData carries the settings, the overlay says 4
    # the pre-fix platform: a class without userData and no overlay
    decided = without_overlays(plan_of(spec))
    classes = tuple(
        dataclasses.replace(c, spec={k: v for k, v in c.spec.items() if k != "userData"})
        for c in decided.karpenter.node_classes
    )
    t = trace_plan(
        dataclasses.replace(decided, karpenter=dataclasses.replace(decided.karpenter, node_classes=classes)), text
    )
    # Karpenter and the node agree (1 unit per GPU); quotas count 4: the node layer names the gap
    assert (t.pending.name, t.pending.detail) == (
        "node",
        "the Bottlerocket node advertises 1 nvidia.com/gpu (its EC2NodeClass has no userData with the sharing "
        "settings) while quotas count 4 nvidia.com/gpu: put them in the EC2NodeClass userData",
    )


def test_dcgm_gke_device_names():
    """§4: GKE's device plugin names devices nvidiaN; the exporter must match by device name."""
    text = pod("ml-dev", {"nvidia.com/gpu": 1}, nodeSelector={"gpu-platform/pool": "t4-spot"})
    spec = spec_of("dev-gcp")
    assert trace(spec, text).pending is None
    values = {**gpu_operator.operator_values(spec), "dcgmExporter": {"enabled": True}}  # the pre-fix exporter
    t = trace_plan(with_values(plan_of(spec), "gpuOperator", values), text)
    assert (t.pending.name, t.pending.detail) == (
        "dcgm",
        "runs, but its GPU metrics lose the pod: GKE's device plugin names devices nvidiaN, the exporter matches "
        "UUIDs: set its Kubernetes GPU id type to device-name",
    )


def test_dcgm_bottlerocket_device_ids(monkeypatch):
    """§4: Bottlerocket's plugin must hand out UUIDs (the kueue example's a100-train is Bottlerocket)."""
    from components.plan import sharing

    path = ROOT / "examples" / "kueue-pytorch-training-job.yaml"
    settings = sharing.bottlerocket_device_plugin_settings

    def pre_fix(spec, name):
        out = dict(settings(spec, name))
        out.pop(sharing.BOTTLEROCKET_DEVICE_ID_STRATEGY, None)
        return out

    monkeypatch.setattr(sharing, "bottlerocket_device_plugin_settings", pre_fix)
    (t,) = explain.explain_all(spec_of("prod-aws"), path.read_text())
    assert t.pending.name == "dcgm" and "device-id-strategy = uuid" in t.pending.detail


def test_dcgm_rename_by_default_needs_the_resource_name():
    config = stack_config("dev-aws")
    pool_of(config["gpu-platform:nodePools"], "l4-shared")["sharing"]["renameByDefault"] = True
    spec = load_spec(config)
    text = pod("ml-dev", {"nvidia.com/gpu.shared": 1})
    assert trace(spec, text).pending is None
    values = {**gpu_operator.operator_values(spec), "dcgmExporter": {"enabled": True, "env": []}}
    t = trace_plan(with_values(plan_of(spec), "gpuOperator", values), text)
    assert t.pending.name == "dcgm" and "nvidia.com/gpu.shared" in t.pending.detail


def test_flavor_layer_shows_the_cluster_queue_order():
    from components.render import kueue

    spec = spec_of("prod-aws")
    t = trace(spec, pod("research", {"nvidia.com/gpu": 8}, nodeSelector={"gpu-platform/pool": "h100-spot"}))
    flavors = next(x for x in t.layers if x.name == "flavors")
    (group,) = [g for g in kueue.cluster_queue_spec(spec, spec.tenants[0])["resourceGroups"]]
    assert "order " + " > ".join(f["name"] for f in group["flavors"]) in flavors.detail
    assert t.pool == "h100-spot" and t.provisioner.startswith("Karpenter NodePool h100-spot")


def test_gke_queued_provisioning_pool():
    text = job("research", 2, {"nvidia.com/gpu": 8}, nodeSelector={"gpu-platform/pool": "h100-burst"})
    t = trace(spec_of("prod-gcp"), text)
    layers = {x.name: x for x in t.layers}
    assert layers["admission-checks"].ok and "h100-burst-dws" in layers["admission-checks"].detail
    assert t.pending is None and t.provisioner == "GKE queued provisioning (Dynamic Workload Scheduler)"


def test_existing_cluster_has_only_its_nodes():
    text = job("dev", 3, {"nvidia.com/gpu": 1})
    t = trace(spec_of("local"), text)
    # workstation: one node, MPS x2 -> 2 units; 3 pods need more than the quota and the node
    assert t.pending is not None and t.pending.name in ("flavors", "provisioner")
    ok = trace(spec_of("local"), job("dev", 1, {"nvidia.com/gpu": 1}))
    assert ok.pending is None and ok.provisioner == "existing nodes"


def test_volcano_queue_capped_by_the_guarantees_of_other_queues():
    """§7: proportion caps a queue at (cluster total - all guarantees) + its own guarantee. Shipped, applied-ml
    reaches only a100-gang, whose 16 GPUs cap it before any guarantee does; so here research and notebooks move
    to Volcano and applied-ml gets its quota on their pools back (one scheduler per pool: all Volcano's now).
    nvidia.com/gpu cluster total: a100-train 32 + h100-spot 32 + l4-notebooks 3 x 4 x 4 = 48 + a100-gang 16 =
    128. Guarantees: research 16 + 16 = 32, notebooks 4 x 4 = 16, applied-ml 16 + 16 + 8 x 4 = 64: 112.
    applied-ml's capability (no borrowingLimit: each pool at its maximum size) 32 + 32 + 48 = 112, so its cap is
    min(112, 128 - 112 + 64) = 80: a gang of 11 x 8 = 88 waits.

    Issue 26 §4.5: that cap is proportion's realCapability with every pool at its maximum size, but proportion
    computes it over the nodes that exist (volcano v1.15.1 pkg/scheduler/plugins/proportion/proportion.go:92,
    132-139, ssn.TotalResource from the session's nodes, framework/session.go:272-275). prod-aws at rest keeps
    only h100-inference's node, whose GPUs are MIG slices: 0 nvidia.com/gpu, so applied-ml's cap from an idle
    cluster is min(112, max(0 - 64, 0) + 64) = 64, its guarantee, and the enqueue gate (402-436) refuses a
    minimum above it: the 88 that fit at full size never start, and 8 x 8 = 64 do."""
    gang = volcano_job(
        "applied-ml",
        "applied-ml",
        11,
        {"nvidia.com/gpu": 8},
        tolerations=GPU_TOLERATION,
        nodeSelector={"gpu-platform/pool": "h100-spot"},
    )
    config = stack_config("prod-aws")
    tenants = config["gpu-platform:tenants"]
    for t in tenants:
        if t["name"] in ("research", "notebooks"):
            t["scheduler"] = "volcano"
        if t["name"] == "applied-ml":
            t["gpuQuota"] = {"a100-train": 16, "h100-spot": 16, "l4-notebooks": 8}
    t = trace(load_spec(config), gang)
    assert t.pending.name == "queue"
    assert "holds at most 80 nvidia.com/gpu with every pool at its maximum size" in t.pending.detail
    assert "the job needs 88" in t.pending.detail
    # without the other two queues nothing else is reserved: min(112, 128 - 64 + 64) = 112 at full size; from an
    # idle cluster the queue enqueues its guarantee, 64, so the 88 wait there
    config["gpu-platform:tenants"] = [t for t in tenants if t["name"] not in ("research", "notebooks")]
    config.pop("gpu-platform:storage")  # research's file system goes with research
    t = trace(load_spec(config), gang)
    assert t.pending.name == "queue"
    assert t.pending.detail.startswith(
        "Volcano queue applied-ml enqueues at most 64 nvidia.com/gpu from an idle cluster, the gang's minimum "
        "needs 88 nvidia.com/gpu"
    )
    assert "at full size it would hold 112 nvidia.com/gpu" in t.pending.detail
    eight = gang.replace("minAvailable: 11", "minAvailable: 8").replace("replicas: 11", "replicas: 8")
    queue = layer(trace(load_spec(config), eight), "queue")
    assert queue.ok and queue.detail == (
        "Volcano queue applied-ml (enqueues 64 nvidia.com/gpu from an idle cluster, holds 112 nvidia.com/gpu at "
        "full size)"
    )


def test_whole_gpu_job_prefers_a_dedicated_or_spot_pool_over_a_time_slice():
    """§7: flavor order is what a job wants (dedicated, spot, queued, shared), not the pool names."""
    config = stack_config("dev-aws")
    pool_of(config["gpu-platform:nodePools"], "a10g-spot")["name"] = "z-a10g"
    tenant = config["gpu-platform:tenants"][0]
    tenant["gpuQuota"] = {"l4-shared": 4, "z-a10g": 8}
    t = trace(load_spec(config), pod("ml-dev", {"nvidia.com/gpu": 1}))
    assert t.pool == "z-a10g", "\n".join(t.lines())
    assert "order default-flavor > z-a10g > l4-shared" in next(x.detail for x in t.layers if x.name == "flavors")


def test_monitoring_none_is_said(monkeypatch):
    spec = spec_of("dev-aws", monitoring={"prometheus": "none"})
    t = trace(
        spec,
        pod(
            "ml-dev", {"nvidia.com/gpu": 1}, nodeSelector={"gpu-platform/pool": "l4-shared"}, tolerations=SHARED_OPT_IN
        ),
    )
    assert t.pending is None
    assert (t.layers[-1].name, t.layers[-1].detail) == (
        "dcgm",
        "dcgm-exporter attributes the GPUs to the pod; monitoring.prometheus none: nothing scrapes it",
    )


def test_without_a_batch_scheduler_the_resource_quota_gates():
    spec = spec_of("dev-aws", addons=NO_BATCH_SCHEDULER)
    ok = pod(
        "ml-dev", {"nvidia.com/gpu": 1}, nodeSelector={"gpu-platform/pool": "a10g-spot"}, tolerations=GPU_TOLERATION
    )
    assert trace(spec, ok).pending is None
    # ml-dev: 4 L4 x 4 slices + 8 A10G = 24 units, no borrowing without a scheduler
    big = job("ml-dev", 25, {"nvidia.com/gpu": 1}, nodeSelector={"gpu-platform/pool": "a10g-spot"})
    t = trace(spec, big)
    assert t.pending.name == "queue"
    assert "ResourceQuota allows 24 nvidia.com/gpu, the workload asks 25 nvidia.com/gpu" in t.pending.detail


def test_dcgm_reads_the_exporter_that_is_deployed():
    from components.render import monitoring

    config = stack_config("dev-aws")
    config["gpu-platform:addons"] = {"gpuOperator": False, "dcgm": True, "kueue": True, "volcano": False}
    for p in config["gpu-platform:nodePools"]:
        p["os"] = "bottlerocket"  # its host runs the device plugin: no operator needed
    standalone = load_spec(config)
    assert plain(explain.exporter_values(plan_of(standalone))) == monitoring.dcgm_exporter_values(standalone)
    operator = spec_of("dev-aws")
    assert plain(explain.exporter_values(plan_of(operator))) == gpu_operator.operator_values(operator)["dcgmExporter"]


def test_own_quota_on_a_later_flavor_beats_borrowing_on_an_earlier_one():
    """whenCanBorrow: TryNextFlavor (the ClusterQueue's flavorFungibility). ml-dev may only borrow on a10g-spot
    (quota 0), where a second tenant lends its 2 A10G (Kueue lends quota, never a pool's idle capacity): at most
    0 + 2 there."""
    config = stack_config("dev-aws")
    config["gpu-platform:tenants"][0]["gpuQuota"] = {"l4-shared": 4, "a10g-spot": 0}  # a10g-spot: borrow only
    config["gpu-platform:tenants"].append({"name": "lender", "gpuQuota": {"a10g-spot": 2}})
    spec = load_spec(config)
    t = trace(spec, pod("ml-dev", {"nvidia.com/gpu": 1}, tolerations=SHARED_OPT_IN))
    flavors = next(x for x in t.layers if x.name == "flavors")
    assert "order default-flavor > a10g-spot > l4-shared" in flavors.detail
    assert t.pool == "l4-shared" and "nominal quota" in flavors.detail
    # pinned to the borrow-only pool, it borrows there
    t = trace(
        spec,
        pod("ml-dev", {"nvidia.com/gpu": 1}, nodeSelector={"gpu-platform/pool": "a10g-spot"}),
    )
    assert t.pool == "a10g-spot" and "borrows 1 nvidia.com/gpu from cohort gpu-platform" in t.layers[4].detail


def _template(resources: dict[str, int], pool: str) -> dict[str, Any]:
    return {"spec": {"containers": [container(resources)], "nodeSelector": {"gpu-platform/pool": pool}}}


def replicated_job(name: str, replicas: int, parallelism: int, pod_spec: dict[str, Any]) -> dict[str, Any]:
    """A JobSet replicatedJob: ``replicas`` Jobs of ``parallelism`` pods each."""
    job_spec = {"parallelism": parallelism, "template": {"spec": pod_spec}}
    return {"name": name, "replicas": replicas, "template": {"spec": job_spec}}


def jobset(namespace: str, *replicated_jobs: dict[str, Any]) -> str:
    doc = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js", "namespace": namespace},
        "spec": {"replicatedJobs": list(replicated_jobs)},
    }
    return yaml.safe_dump(doc)


@pytest.fixture
def operators_installed(monkeypatch):
    """As if an add-on installed KubeRay, JobSet, LeaderWorkerSet and Kubeflow (none does yet, so explain stops
    those kinds at the operator layer, issue 26 §4.8): the layers after it, as they will read once one does."""
    monkeypatch.setattr(explain, "operator_installed", lambda decided, operator: True)


def test_pytorchjob_and_jobset_count_every_replica(operators_installed):
    spec = spec_of("prod-aws", **ALL_KINDS)
    ptj = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "ptj", "namespace": "research"},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": _template({"nvidia.com/gpu": 8}, "h100-spot")},
                "Worker": {"replicas": 1, "template": _template({"nvidia.com/gpu": 4}, "h100-spot")},
            }
        },
    }
    t = trace(spec, yaml.safe_dump(ptj))
    # research: 16 nominal H100s on h100-spot: the master's 8 and the worker's 4 are 12, within it, on 2 nodes
    assert t.pool == "h100-spot" and "12 nvidia.com/gpu, nominal quota" in layer(t, "flavors").detail
    assert "needs 2" in next(x.detail for x in t.layers if x.name == "provisioner")
    workers = replicated_job("workers", 5, 1, _template({"nvidia.com/gpu": 8}, "h100-spot")["spec"])
    t = trace(spec, jobset("research", workers))
    # 5 x 8 = 40 > the 32 the pool can ever bring
    assert t.pending.name == "flavors" and "h100-spot: needs 40 nvidia.com/gpu" in t.pending.detail


def test_dra_claims_count_under_the_mapped_class_and_unknown_templates_wait():
    spec = spec_of("dra-existing")
    claim = {"name": "gpu", "resourceClaimTemplateName": "gpu-h100"}
    doc = yaml.safe_load(pod("research", {}))
    doc["spec"]["resourceClaims"] = [claim]
    t = trace(spec, yaml.safe_dump(doc))
    assert t.pending is None and t.pool == "h100"
    assert next(x for x in t.layers if x.name == "claims").detail == "DRA: main 1 gpu.nvidia.com/devices"
    claim["resourceClaimTemplateName"] = "gpu-b200"
    t = trace(spec, yaml.safe_dump(doc))
    assert t.pending.name == "claims" and "ResourceClaimTemplate gpu-b200 is neither in the file" in t.pending.detail


# ------------------------------------------------------------------------------------------ TrainJob


def _trainjob(**spec: Any) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "t", "namespace": "research"},
            "spec": {"runtimeRef": {"name": "torch-distributed"}, **spec},
        }
    )


def test_trainjob_pod_set_is_num_nodes_pods_of_resources_per_node_with_the_runtime_patches():
    """Kubeflow Trainer v2.2.1: the trainer step (replicated Job and container ``node``) runs ``numNodes`` pods whose
    ``node`` container gets ``resourcesPerNode``; ``runtimePatches`` add pod fields to the Job they name."""
    (w,) = load((ROOT / "examples" / "trainjob-training.yaml").read_text())
    (ps,) = w.podsets
    assert (w.kind, w.integration, ps.name, ps.count) == ("TrainJob", "trainer.kubeflow.org/trainjob", "node", 2)
    assert ps.requests() == {"nvidia.com/gpu": 8}
    assert ps.pod["nodeSelector"] == {"gpu-platform/pool": "h100-spot"}
    assert {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"} in ps.pod[
        "tolerations"
    ]
    assert w.labels["kueue.x-k8s.io/priority-class"] == "training" and w.priority_class is None


def test_trainjob_patches_of_other_jobs_are_not_the_trainer_steps_and_later_patches_win():
    other = {"name": "dataset-initializer", "template": {"spec": {"template": {"spec": {"nodeSelector": {"a": "1"}}}}}}

    def node(selector: dict[str, str]) -> dict[str, Any]:
        return {"name": "node", "template": {"spec": {"template": {"spec": {"nodeSelector": selector}}}}}

    def patch(manager: str, *jobs: dict[str, Any]) -> dict[str, Any]:
        return {"manager": manager, "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": list(jobs)}}}}

    (w,) = load(_trainjob(trainer={"resourcesPerNode": {"limits": {"nvidia.com/gpu": 1}}}))
    assert w.podsets[0].count == 1  # no numNodes: the runtime's mlPolicy.numNodes, 1 in torch-distributed
    assert "nodeSelector" not in w.podsets[0].pod
    (w,) = load(_trainjob(runtimePatches=[patch("a/x", other, node({"b": "1"})), patch("c/y", node({"b": "2"}))]))
    assert w.podsets[0].pod["nodeSelector"] == {"b": "2"}
