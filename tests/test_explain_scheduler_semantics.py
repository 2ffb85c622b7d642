"""gpu-platform explain models what the schedulers do (issue 26 §4): each case's expected verdict is worked out from
the upstream source at the pinned versions, cited beside it, and from the shipped stack files by hand, never read
back from explain.

Pinned: Kueue v0.19.2, Volcano v1.15.1, Cluster Autoscaler 1.35.0 (chart 9.59.0), Karpenter 1.14.1 (and
karpenter-provider-aws v1.14.1), k8s-device-plugin v0.20.0; kube-scheduler v1.35.
"""

from __future__ import annotations

import pytest
import yaml
from conftest import rendered, stack_config
from test_explain import (
    ALL_KINDS,
    GANG_POOL,
    GPU_TOLERATION,
    SAFE_POD,
    SHARED_OPT_IN,
    container,
    job,
    kueue_holds,
    kueue_reserves,
    layer,
    operators_installed,  # noqa: F401  (a fixture)
    plan_of,
    pod,
    pool_of,
    spec_of,
    trace,
    trace_plan,
    volcano_job,
    without_overlays,
)

from components.cli.loader import load_spec
from components.explain import schedulers as explain_schedulers, summary, trace as explain
from components.explain.facts import flavor_selection_problems, selection_problems
from components.explain.workloads import load, parse
from components.plan import plan


def stop(t: explain.Trace) -> tuple[str, str]:
    assert t.pending is not None, "\n".join(t.lines())
    return t.pending.name, t.pending.detail


def runs(t: explain.Trace) -> str:
    assert t.pending is None, "\n".join(t.lines())
    return t.verdict


def _affinity(*terms: list[dict]) -> dict:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": list(t)} for t in terms]
            }
        }
    }


# ------------------------------------------------------------------------ 1. Kueue's key filter at the flavors
# kueue v0.19.2 pkg/scheduler/flavorassigner/flavorassigner.go:1224-1227: a flavor is matched on its own nodeLabels'
# keys only; flavorSelector (1278-1320) drops nodeSelector entries and affinity expressions on other keys, and a
# term left empty makes the affinity match any flavor (1303-1307). The stack's flavors label gpu-platform/pool
# alone (kueue.flavor_spec).

FLAVOR = {"gpu-platform/pool": "a10g-spot"}


def test_kueue_ignores_a_selector_key_no_flavor_labels():
    """nodeSelector kubernetes.io/arch: the flavor a10g-spot has no such key, so Kueue does not look at it."""
    assert flavor_selection_problems({"nodeSelector": {"kubernetes.io/arch": "amd64"}}, FLAVOR) == []
    assert flavor_selection_problems({"nodeSelector": {"kubernetes.io/arch": "arm64"}}, FLAVOR) == []
    # the flavor's own key still decides
    assert flavor_selection_problems({"nodeSelector": {"gpu-platform/pool": "l4-shared"}}, FLAVOR) == [
        "nodeSelector gpu-platform/pool=l4-shared (nodes have a10g-spot)"
    ]


def test_kueue_reduces_affinity_terms_to_the_flavors_keys():
    zone = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1b"]}
    other_pool = {"key": "gpu-platform/pool", "operator": "In", "values": ["l4-shared"]}
    this_pool = {"key": "gpu-platform/pool", "operator": "In", "values": ["a10g-spot"]}
    # a term of foreign keys only empties: the terms are ORed, so the affinity matches every flavor
    assert flavor_selection_problems({"affinity": _affinity([zone])}, FLAVOR) == []
    assert flavor_selection_problems({"affinity": _affinity([other_pool], [zone])}, FLAVOR) == []
    # a term keeps its flavor-key expressions: other_pool alone remains, and fails
    assert flavor_selection_problems({"affinity": _affinity([other_pool, zone])}, FLAVOR) == [
        "required node affinity matches no term"
    ]
    assert flavor_selection_problems({"affinity": _affinity([this_pool, zone])}, FLAVOR) == []


def test_a_pod_selecting_the_architecture_is_not_told_no_flavor_fits():
    """dev-aws ml-dev: default-flavor > a10g-spot > l4-shared. kubernetes.io/arch is no flavor's key, so Kueue takes
    a10g-spot (the first flavor with quota), and its g5 nodes are x86_64, labelled amd64 (EC2, as Karpenter sets
    it: karpenter.requirements on the pool's instance types)."""
    t = trace(spec_of("dev-aws"), pod("ml-dev", {"nvidia.com/gpu": 1}, nodeSelector={"kubernetes.io/arch": "amd64"}))
    assert runs(t) == "runs on pool a10g-spot via Karpenter NodePool a10g-spot"
    assert layer(t, "flavors").detail.startswith("a10g-spot (1 nvidia.com/gpu, nominal quota;")


def test_a_key_kueue_ignores_can_still_stop_the_pod_at_the_node():
    """arm64: Kueue admits on a10g-spot all the same (it ignores the key), and no g5 node is arm64: pending at the
    pool, with the quota Kueue holds for it (§4.7)."""
    t = trace(spec_of("dev-aws"), pod("ml-dev", {"nvidia.com/gpu": 1}, nodeSelector={"kubernetes.io/arch": "arm64"}))
    assert layer(t, "flavors").ok
    assert stop(t) == (
        "pool",
        "a10g-spot's nodes do not match: nodeSelector kubernetes.io/arch=arm64 (nodes have amd64) (Kueue picks a "
        "flavor by gpu-platform/pool alone: pin the pool with it)" + kueue_holds("1 nvidia.com/gpu", "a10g-spot"),
    )


# ----------------------------------------------------------------- 2. well-known node labels at the pool layer


@pytest.mark.parametrize(
    ("stack", "namespace", "resources", "selector", "verdict"),
    [
        # Karpenter labels its nodes with the offering's capacity type (kubernetes-sigs/karpenter v1.14.1
        # pkg/apis/v1/labels.go:45, 73-84); dev-aws a10g-spot is a spot NodePool only
        ("dev-aws", "ml-dev", {"nvidia.com/gpu": 1}, {"karpenter.sh/capacity-type": "spot"}, "a10g-spot"),
        ("dev-aws", "ml-dev", {"nvidia.com/gpu": 1}, {"karpenter.sh/capacity-type": "on-demand"}, None),
        # prod-aws h100-spot: spot with an on-demand fallback NodePool, so both values occur
        ("prod-aws", "research", {"nvidia.com/gpu": 8}, {"karpenter.sh/capacity-type": "on-demand"}, "h100-spot"),
        ("prod-aws", "research", {"nvidia.com/gpu": 8}, {"karpenter.sh/nodepool": "h100-spot-on-demand"}, "h100-spot"),
        # region: aws:region us-east-1 (the kubelet's cloud provider sets it; CA templates it, aws_manager.go:397)
        ("dev-aws", "ml-dev", {"nvidia.com/gpu": 1}, {"topology.kubernetes.io/region": "us-east-1"}, "a10g-spot"),
        ("dev-aws", "ml-dev", {"nvidia.com/gpu": 1}, {"topology.kubernetes.io/region": "eu-west-1"}, None),
        # a zone the stack does not pin (a Karpenter pool without a reservation or karpenter.zone): any
        ("dev-aws", "ml-dev", {"nvidia.com/gpu": 1}, {"topology.kubernetes.io/zone": "us-east-1c"}, "a10g-spot"),
        # the node's name is never known: a hostname selector is no mismatch
        ("dev-aws", "ml-dev", {"nvidia.com/gpu": 1}, {"kubernetes.io/hostname": "ip-10-0-0-1"}, "a10g-spot"),
        # GKE labels each node with its node pool (prod-gcp's pools are named after the stack's)
        ("dev-gcp", "ml-dev", {"nvidia.com/gpu": 1}, {"cloud.google.com/gke-nodepool": "t4-spot"}, "t4-spot"),
        # an existing cluster's nodes carry every well-known label, with values the stack does not tell
        ("local", "dev", {"nvidia.com/gpu": 1}, {"kubernetes.io/arch": "arm64"}, "workstation"),
    ],
)
def test_well_known_labels_are_matched_against_what_the_pool_carries(stack, namespace, resources, selector, verdict):
    t = trace(spec_of(stack), pod(namespace, resources, nodeSelector=selector))
    if verdict is not None:
        assert t.pending is None and t.pool == verdict, "\n".join(t.lines())
    else:
        name, detail = stop(t)
        key = next(iter(selector))
        assert name == "pool" and f"nodeSelector {key}={selector[key]} (nodes have " in detail, detail


def test_eks_managed_capacity_type_is_on_the_node_and_in_the_autoscaler_template():
    """dev-aws l4-shared: an EKS managed node group of spot capacity. EKS labels its nodes
    eks.amazonaws.com/capacityType=SPOT, and the Cluster Autoscaler reads the same from DescribeNodegroup into
    its scale-from-zero template (cluster-autoscaler 1.35.0 cloudprovider/aws/aws_wrapper.go:98-99, joined in
    aws_manager.go:307-317), so the pool scales up for such a pod; ON_DEMAND is a real mismatch."""
    spot = {"eks.amazonaws.com/capacityType": "SPOT", "gpu-platform/pool": "l4-shared"}
    t = trace(spec_of("dev-aws"), pod("ml-dev", {"nvidia.com/gpu": 1}, nodeSelector=spot, tolerations=SHARED_OPT_IN))
    assert runs(t) == "runs on pool l4-shared via EKS managed node group + Cluster Autoscaler"
    on_demand = {**spot, "eks.amazonaws.com/capacityType": "ON_DEMAND"}
    name, detail = stop(
        trace(
            spec_of("dev-aws"), pod("ml-dev", {"nvidia.com/gpu": 1}, nodeSelector=on_demand, tolerations=SHARED_OPT_IN)
        )
    )
    assert (name, detail.split(" (Kueue")[0]) == (
        "pool",
        "l4-shared's nodes do not match: nodeSelector eks.amazonaws.com/capacityType=ON_DEMAND (nodes have SPOT)",
    )


def test_the_instance_type_is_one_of_the_pools():
    """node.kubernetes.io/instance-type: l4-shared launches g6.xlarge or g6.2xlarge (CA templates the ASG's type,
    aws_manager.go:395; the kubelet labels the real one)."""
    pinned = {"gpu-platform/pool": "l4-shared", "node.kubernetes.io/instance-type": "g6.2xlarge"}
    ok = pod("ml-dev", {"nvidia.com/gpu": 1}, nodeSelector=pinned, tolerations=SHARED_OPT_IN)
    assert trace(spec_of("dev-aws"), ok).pending is None
    pinned["node.kubernetes.io/instance-type"] = "p5.48xlarge"
    name, detail = stop(
        trace(spec_of("dev-aws"), pod("ml-dev", {"nvidia.com/gpu": 1}, nodeSelector=pinned, tolerations=SHARED_OPT_IN))
    )
    assert name == "pool"
    assert "nodeSelector node.kubernetes.io/instance-type=p5.48xlarge (nodes have g6.xlarge or g6.2xlarge)" in detail


def test_a_reservations_zone_is_the_pools():
    """prod-aws h100-inference launches into its capacity reservation in us-east-1a (the node group's one subnet);
    serving's MIG pod pinned to us-east-1b cannot land there, us-east-1a can."""
    for zone, pending in (("us-east-1a", False), ("us-east-1b", True)):
        selector = {"topology.kubernetes.io/zone": zone}
        t = trace(spec_of("prod-aws"), pod("serving", {"nvidia.com/mig-1g.10gb": 1}, nodeSelector=selector))
        assert (t.pending is not None) == pending, t.lines()
    assert stop(t)[0] == "pool" and "zone=us-east-1b (nodes have us-east-1a)" in stop(t)[1]


def test_affinity_operators_on_multi_valued_labels():
    """A label whose value differs between a pool's nodes (instance type, capacity type) satisfies In when one
    value is listed, NotIn when one value is not, Gt/Lt when one value passes; unknown values (None) satisfy all
    but DoesNotExist."""
    labels = {"it": ("g6.xlarge", "g6.2xlarge"), "host": None, "count": ("4", "8")}

    def ok(expr: dict) -> bool:
        return selection_problems({"affinity": _affinity([expr])}, labels) == []

    assert ok({"key": "it", "operator": "In", "values": ["g6.2xlarge"]})
    assert not ok({"key": "it", "operator": "In", "values": ["p5.48xlarge"]})
    assert ok({"key": "it", "operator": "NotIn", "values": ["g6.xlarge"]})
    assert not ok({"key": "it", "operator": "NotIn", "values": ["g6.xlarge", "g6.2xlarge"]})
    assert ok({"key": "host", "operator": "In", "values": ["anything"]})
    assert ok({"key": "host", "operator": "Exists"}) and not ok({"key": "host", "operator": "DoesNotExist"})
    assert ok({"key": "count", "operator": "Gt", "values": ["6"]}) and not ok(
        {"key": "count", "operator": "Gt", "values": ["8"]}
    )
    assert ok({"key": "count", "operator": "Lt", "values": ["5"]})


# ------------------------------------------------------------------------------ 3. pod sets without devices


def _ray_job(head: dict, workers: int, per_worker: dict[str, int], namespace: str = "research") -> str:
    gpu = {"spec": {"containers": [container(per_worker)], "nodeSelector": {"gpu-platform/pool": "h100-spot"}}}
    doc = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "r", "namespace": namespace},
        "spec": {
            "rayClusterSpec": {
                "headGroupSpec": {"template": {"spec": head}},
                "workerGroupSpecs": [{"groupName": "gpu", "replicas": workers, "template": gpu}],
            }
        },
    }
    return yaml.safe_dump(doc)


@pytest.mark.usefixtures("operators_installed")
def test_a_cpu_head_is_not_a_node_of_the_gpu_pool():
    """prod-aws research, a RayJob: a CPU head (no device) and 2 workers of 8 H100s on h100-spot (8 per node). The
    head asks no GPU, so Kueue assigns it default-flavor (GPU quota 0, no node labels: kueue.resource_groups) and
    it runs on non-GPU nodes: 2 nodes, not 3. Its own nodeSelector for CPU nodes does not stop Kueue's flavor step
    nor the GPU pool's node check."""
    head = {"containers": [{"name": "head", "image": "x"}], "nodeSelector": {"workload": "cpu"}}
    t = trace(spec_of("prod-aws"), _ray_job(head, 2, {"nvidia.com/gpu": 8}))
    assert runs(t).startswith("runs on pool h100-spot")
    assert layer(t, "provisioner").detail.endswith("needs 2")
    assert layer(t, "pool").detail == (
        "h100-spot: labels match, taints tolerated (Kueue injects the flavor's nodeSelector and tolerations; head "
        "ask no GPU: Kueue gives them default-flavor, they run on non-GPU nodes)"
    )


def test_a_cpu_launcher_does_not_take_a_node_of_the_gang_pool():
    """prod-aws applied-ml, a Volcano Job: a CPU launcher and 2 workers of 8 A100s on a100-gang (0..2 nodes of 8).
    Counting the launcher as a node of the pool made it 3 > 2 ('the workload needs 3 node(s)'); it needs 2."""
    doc = yaml.safe_load(
        volcano_job(
            "applied-ml", "applied-ml", 2, {"nvidia.com/gpu": 8}, tolerations=GPU_TOLERATION, nodeSelector=GANG_POOL
        )
    )
    launcher = {"name": "launcher", "replicas": 1, "template": {"spec": {"containers": [{"name": "l", "image": "x"}]}}}
    doc["spec"]["tasks"].insert(0, launcher)
    doc["spec"]["minAvailable"] = 3
    t = trace(spec_of("prod-aws"), yaml.safe_dump(doc))
    assert runs(t) == "runs on pool a100-gang via EKS managed node group + Cluster Autoscaler"
    assert layer(t, "provisioner").detail.endswith("0..2 nodes, needs 2")


# ------------------------------------------------------------------------------------------- 4. zero requests
# kube-scheduler skips a zero request ("Skip in case request quantity is zero", kubernetes v1.35
# pkg/scheduler/framework/plugins/noderesources/fit.go fitsRequest); Kueue counts no usage for it and skips it
# for flavors when no resource group covers it (kueue v0.19.2 flavorassigner.go:272-277, 802-808).


def test_a_pod_asking_zero_gpus_is_not_a_gpu_workload():
    t = trace(spec_of("dev-aws"), pod("ml-dev", {"nvidia.com/gpu": 0}))
    assert (t.layers[-1].name, t.layers[-1].detail) == ("resources", "no GPU requested: nothing GPU-specific to trace")
    assert t.verdict == "runs on non-GPU nodes (it asks for no GPU)"


def test_a_zero_efa_request_needs_no_efa_node():
    """dev-aws has no EFA pool: efa 0 beside a GPU runs (it used to stop at the node: 'not vpc.amazonaws.com/efa'),
    efa 1 does not."""
    zero = pod("ml-dev", {"nvidia.com/gpu": 1, "vpc.amazonaws.com/efa": 0})
    assert trace(spec_of("dev-aws"), zero).pending is None
    (w,) = load(zero)
    assert w.podsets[0].devices() == {"nvidia.com/gpu": 1}
    one = pod("ml-dev", {"nvidia.com/gpu": 1, "vpc.amazonaws.com/efa": 1})
    assert stop(trace(spec_of("dev-aws"), one))[0] == "provisioner"


# --------------------------------------------------------------- 5. Volcano's enqueue limit from an idle cluster
# volcano v1.15.1 pkg/scheduler/plugins/proportion/proportion.go: OnSessionOpen takes the cluster total from the
# session's nodes (92; framework/session.go:272-275) and sets realCapability = min(capability, total - all
# guarantees + own guarantee) (132-139); JobEnqueueableFn (402-436) rejects a job whose minResources exceed it; the
# job controller creates pods only once the PodGroup has left Pending (pkg/controllers/job/
# job_controller_actions.go:406-408), so from zero nodes nothing asks an autoscaler for the nodes.


def _half_guarantee(min_nodes: int = 0) -> dict:
    """prod-aws with applied-ml's guarantee halved: 8 A100s nominal on a100-gang (2 x 8), in the cohort with no
    borrowingLimit, so its capability is the whole pool, 16."""
    config = stack_config("prod-aws")
    tenant = next(t for t in config["gpu-platform:tenants"] if t["name"] == "applied-ml")
    tenant["gpuQuota"] = {"a100-gang": 8}
    pool_of(config["gpu-platform:nodePools"], "a100-gang")["minNodes"] = min_nodes
    return config


def _gang(replicas: int, min_available: int | None = None) -> str:
    doc = yaml.safe_load(
        volcano_job(
            "applied-ml",
            "applied-ml",
            replicas,
            {"nvidia.com/gpu": 8},
            tolerations=GPU_TOLERATION,
            nodeSelector=GANG_POOL,
        )
    )
    doc["spec"]["minAvailable"] = replicas if min_available is None else min_available
    return yaml.safe_dump(doc)


def test_from_zero_nodes_a_gang_above_the_guarantee_is_never_enqueued():
    """No nvidia.com/gpu node at rest in prod-aws (every such pool at minNodes 0; h100-inference's node has MIG
    slices): total 0, so the cap is min(16, max(0 - 8, 0) + 8) = 8, the guarantee. At full size the fleet is
    a100-train 32 + h100-spot 32 + l4-notebooks 48 + a100-gang 16 = 128: min(16, 128 - 8 + 8) = 16. A gang of
    2 x 8 = 16 fits at full size and is never enqueued from zero."""
    t = trace(load_spec(_half_guarantee()), _gang(2))
    assert stop(t) == (
        "queue",
        "Volcano queue applied-ml enqueues at most 8 nvidia.com/gpu from an idle cluster, the gang's minimum needs "
        "16 nvidia.com/gpu: proportion computes the queue's cap over the nodes that exist (its guarantee while no "
        "node has the resource; volcano v1.15.1 pkg/scheduler/plugins/proportion/proportion.go:91-139), enqueues no "
        "job whose minimum exceeds it (402-436), and the job controller creates no pod before that "
        "(pkg/controllers/job/job_controller_actions.go:406-408), so nothing asks for nodes; at full size it would "
        "hold 16 nvidia.com/gpu. Ask for at most the guarantee, or raise applied-ml's gpuQuota (its guarantee)",
    )


def test_a_gang_whose_minimum_fits_the_guarantee_is_enqueued():
    """minAvailable 1 of 2: the PodGroup's minResources is the first pod's 8 GPUs (job_controller_actions.go:955-957,
    job_controller_util.go:336-351), within the guarantee: enqueued, its pods created, the pool scales."""
    t = trace(load_spec(_half_guarantee()), _gang(2, min_available=1))
    assert layer(t, "queue").detail == (
        "Volcano queue applied-ml (enqueues 8 nvidia.com/gpu from an idle cluster, holds 16 nvidia.com/gpu at full "
        "size)"
    )
    assert t.pending is None, t.lines()


def test_nodes_at_rest_raise_what_a_queue_enqueues():
    """a100-gang kept at 2 nodes: the total at rest is 16, min(16, 16 - 8 + 8) = 16: the gang of 16 is enqueued.
    At 1 node, 8: min(16, max(8 - 8, 0) + 8) = 8, still the guarantee."""
    assert trace(load_spec(_half_guarantee(min_nodes=2)), _gang(2)).pending is None
    assert stop(trace(load_spec(_half_guarantee(min_nodes=1)), _gang(2)))[0] == "queue"


def test_volcano_min_pods_follow_the_job_controller():
    """Task minAvailable defaults to replicas, job minAvailable to their sum (mutate_job.go:169-181); below it, the
    first minAvailable pods by task priority (job_controller_util.go:336-351); else each task's minAvailable
    topped up from the rest, higher priority first (354-400)."""
    spec = spec_of("prod-aws")
    doc = yaml.safe_load(_gang(1))
    worker = doc["spec"]["tasks"][0]
    ps = {"name": "ps", "replicas": 2, "template": {"spec": {**worker["template"]["spec"], "priorityClassName": "dev"}}}
    worker["replicas"] = 4
    worker["template"]["spec"]["priorityClassName"] = "training"
    doc["spec"]["tasks"].append(ps)
    for min_available, task_min, expected in [
        (None, None, {"worker": 4, "ps": 2}),
        (3, None, {"worker": 3, "ps": 0}),  # training outranks dev: its pods first
        (5, None, {"worker": 4, "ps": 1}),
        (3, 1, {"worker": 1, "ps": 2}),  # sum of task minimums (1 + 2) = 3: each task's minimum
        (4, 1, {"worker": 2, "ps": 2}),  # then one more from the rest, higher priority first
    ]:
        doc["spec"]["minAvailable"] = min_available
        worker["minAvailable"] = task_min
        w = parse(doc)
        assert explain_schedulers.volcano_min_pods(plan_of(spec), w) == expected, (min_available, task_min)


def test_the_summary_says_both_caps():
    """prod-aws: applied-ml's guarantee and capability are both 16 (a100-gang, 2 x 8)."""
    text = summary._queue_lines(plan_of(load_spec(stack_config("prod-aws"))))
    row = next(line for line in text if line.startswith("| applied-ml |"))
    assert row.endswith(
        "| `applied-ml` (weight 2; enqueues at most 16 nvidia.com/gpu from an idle cluster, holds at most 16 "
        "nvidia.com/gpu at full size) |"
    )
    half = summary._queue_lines(plan_of(load_spec(_half_guarantee())))
    assert "enqueues at most 8 nvidia.com/gpu from an idle cluster, holds at most 16 nvidia.com/gpu at full size" in (
        next(line for line in half if line.startswith("| applied-ml |"))
    )
    assert "enqueues at most 16 nvidia.com/gpu from an idle cluster" in rendered_summary("prod-aws")


def rendered_summary(stack: str) -> str:
    from components.cli import synth

    return synth.files(rendered(stack))["summary.md"]


# -------------------------------------------------------------------------- 6. the provisioner's real guarantee

TAS_AWS = {"kueue.x-k8s.io/podset-required-topology": "topology.k8s.aws/network-node-layer-3"}
TAS_GCP = {"kueue.x-k8s.io/podset-required-topology": "cloud.google.com/gce-topology-block"}


def test_best_effort_atomic_is_not_atomic_on_aws():
    """cluster-autoscaler 1.35.0: the AWS provider's AtomicIncreaseSize returns ErrNotImplemented
    (cloudprovider/aws/aws_cloud_provider.go:288-291), the executor then calls IncreaseSize
    (core/scaleup/orchestrator/executor.go:144-152), and best-effort-atomic marks the request Provisioned once the
    scale-up succeeded, i.e. the ASG took the new size (provisioningrequest/besteffortatomic/
    provisioning_class.go:117-126). So explain must not say the nodes come first, or all or none."""
    gang = job(
        "research", 2, {"nvidia.com/gpu": 8}, annotations=TAS_AWS, nodeSelector={"gpu-platform/pool": "a100-train"}
    )
    detail = layer(trace(spec_of("prod-aws"), gang), "admission-checks").detail
    assert "not atomic" in detail and "AtomicIncreaseSize" in detail
    assert "brings" not in detail and "together" not in detail and "or none" not in detail


def test_best_effort_atomic_and_queued_provisioning_are_atomic_on_gke():
    gang = job("research", 2, {"nvidia.com/gpu": 8}, annotations=TAS_GCP)
    assert layer(trace(spec_of("prod-gcp"), gang), "admission-checks").detail == (
        "h100-train-atomic: ProvisioningRequest best-effort-atomic-scale-up.autoscaling.x-k8s.io: GKE's autoscaler "
        "brings 2 node(s) up together or none before Kueue admits"
    )
    burst = job("research", 2, {"nvidia.com/gpu": 8}, nodeSelector={"gpu-platform/pool": "h100-burst"})
    assert layer(trace(spec_of("prod-gcp"), burst), "admission-checks").detail == (
        "h100-burst-dws: ProvisioningRequest queued-provisioning.gke.io: GKE's Dynamic Workload Scheduler brings "
        "2 node(s) together before Kueue admits"
    )


# ------------------------------------------------------------------------ 7. quota Kueue admits and holds anyway
# Kueue counts a pod set's requests against the flavor's quota, never against a node (kueue v0.19.2
# pkg/scheduler/flavorassigner), so it admits a workload no node can run; waitForPodsReady evicts it after its
# timeout (pkg/controller/core/workload_controller.go:1229-1274, 1657-1675) and requeues it; requeuingStrategy's
# backoffLimitCount deactivates it. Behind a ProvisioningRequest check the quota is reserved while the check is
# pending (pkg/controller/admissionchecks/provisioning/controller.go:668-673), which waitForPodsReady does not time
# (workload_controller.go:1662-1664); the Cluster Autoscaler fails an unprovisioned request after 7 days
# (processors/provreq/processor.go:42, 100-116).


def test_a_pod_larger_than_any_node_holds_its_quota_until_waitforpodsready():
    """prod-aws research: 16 nominal H100s on h100-spot (p5.48xlarge, 8 per node). One pod of 16: Kueue admits it on
    the 16 of quota; no node it can launch fits the pod."""
    t = trace(
        spec_of("prod-aws"), job("research", 1, {"nvidia.com/gpu": 16}, nodeSelector={"gpu-platform/pool": "h100-spot"})
    )
    assert layer(t, "flavors").ok and layer(t, "flavors").detail.startswith("h100-spot (16 nvidia.com/gpu, nominal")
    assert stop(t) == (
        "provisioner",
        "pod set main asks 16 nvidia.com/gpu, one node of h100-spot brings 8: no node it can launch fits the pod; ask "
        "for at most that per pod (more pods instead)" + kueue_holds("16 nvidia.com/gpu", "h100-spot"),
    )


def test_behind_a_provisioning_check_the_quota_stays_reserved():
    """a100-train grows through a best-effort-atomic ProvisioningRequest: the Cluster Autoscaler finds no node
    group for a pod of 16 (the template has 8) and keeps the request unprovisioned."""
    big = job(
        "research", 1, {"nvidia.com/gpu": 16}, annotations=TAS_AWS, nodeSelector={"gpu-platform/pool": "a100-train"}
    )
    name, detail = stop(trace(spec_of("prod-aws"), big))
    assert name == "provisioner" and detail.endswith(kueue_reserves("16 nvidia.com/gpu", "a100-train"))


def test_the_stack_s_timeout_and_requeue_limit_are_named():
    spec = spec_of("prod-aws", scheduling={"waitForPodsReadyTimeout": "45m", "requeueLimit": None})
    t = trace(spec, job("research", 1, {"nvidia.com/gpu": 16}, nodeSelector={"gpu-platform/pool": "h100-spot"}))
    assert stop(t)[1].endswith(
        "; Kueue still admits it (quota counts per flavor, not per node) and holds 16 nvidia.com/gpu of h100-spot's "
        "quota until waitForPodsReady.timeout (45m) evicts it, then requeues it with backoff, requeued forever"
    )


def test_each_pod_of_a_deployment_holds_its_own():
    """Deployments: Kueue admits each pod as a workload of its own (the pod integration)."""
    doc = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "research"},
        "spec": {
            "replicas": 2,
            "template": {
                "spec": {
                    "containers": [container({"nvidia.com/gpu": 16})],
                    "securityContext": SAFE_POD,
                    "nodeSelector": {"gpu-platform/pool": "h100-spot"},
                }
            },
        },
    }
    assert (
        "Kueue still admits each of its pods' workloads (quota counts per flavor, not per node) and holds 16 "
        in (stop(trace(spec_of("prod-aws"), yaml.safe_dump(doc)))[1])
    )


def test_a_stop_that_is_no_stall_holds_nothing():
    """Karpenter counting fewer units per node than the node advertises launches too many nodes, yet the pod runs:
    no quota is stranded, so the stop says nothing of Kueue's quota."""
    config = stack_config("dev-aws")
    pool_of(config["gpu-platform:nodePools"], "a10g-spot")["sharing"] = {"strategy": "time-slicing", "replicas": 4}
    t = trace_plan(
        without_overlays(plan_of(load_spec(config))),
        pod(
            "ml-dev", {"nvidia.com/gpu": 1}, nodeSelector={"gpu-platform/pool": "a10g-spot"}, tolerations=SHARED_OPT_IN
        ),
    )
    assert stop(t)[0] == "provisioner" and "Kueue" not in stop(t)[1]


# ----------------------------------------------------------------------- 8. kinds whose operator is not installed

KIND_DOCS = {
    "RayCluster": {
        "apiVersion": "ray.io/v1",
        "spec": {
            "headGroupSpec": {"template": {"spec": {"containers": [{"name": "h", "image": "x"}]}}},
            "workerGroupSpecs": [
                {
                    "groupName": "gpu",
                    "replicas": 2,
                    "template": {"spec": {"containers": [container({"nvidia.com/gpu": 8})]}},
                }
            ],
        },
    },
    "JobSet": {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "spec": {
            "replicatedJobs": [
                {
                    "name": "w",
                    "replicas": 1,
                    "template": {"spec": {"template": {"spec": {"containers": [container({"nvidia.com/gpu": 8})]}}}},
                }
            ]
        },
    },
    "LeaderWorkerSet": {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "spec": {
            "replicas": 2,
            "leaderWorkerTemplate": {
                "size": 2,
                "workerTemplate": {"spec": {"containers": [container({"nvidia.com/gpu": 8})]}},
            },
        },
    },
    "PyTorchJob": {
        "apiVersion": "kubeflow.org/v1",
        "spec": {
            "pytorchReplicaSpecs": {
                "Worker": {"replicas": 2, "template": {"spec": {"containers": [container({"nvidia.com/gpu": 8})]}}}
            }
        },
    },
    "MPIJob": {
        "apiVersion": "kubeflow.org/v2beta1",
        "spec": {
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": {"spec": {"containers": [{"name": "l", "image": "x"}]}}},
                "Worker": {"replicas": 2, "template": {"spec": {"containers": [container({"nvidia.com/gpu": 8})]}}},
            }
        },
    },
    "TrainJob": {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"numNodes": 2, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 8}}},
        },
    },
}
OPERATOR_OF = {
    "RayCluster": ("the KubeRay operator", "ray.io", "ray.io/raycluster"),
    "JobSet": ("the JobSet controller", "jobset.x-k8s.io", "jobset.x-k8s.io/jobset"),
    "LeaderWorkerSet": (
        "the LeaderWorkerSet controller",
        "leaderworkerset.x-k8s.io",
        "leaderworkerset.x-k8s.io/leaderworkerset",
    ),
    "PyTorchJob": ("the Kubeflow Training Operator", "kubeflow.org", "kubeflow.org/pytorchjob"),
    "MPIJob": ("the Kubeflow MPI Operator", "kubeflow.org", "kubeflow.org/mpijob"),
    "TrainJob": ("Kubeflow Trainer", "trainer.kubeflow.org", "trainer.kubeflow.org/trainjob"),
}


def _doc(kind: str, namespace: str = "research") -> str:
    return yaml.safe_dump({**KIND_DOCS[kind], "kind": kind, "metadata": {"name": "w", "namespace": namespace}})


KUBEFLOW_KINDS = ("MPIJob", "PyTorchJob")  # no add-on installs their operators (TrainJob's: addons.trainer)


@pytest.mark.parametrize("kind", KUBEFLOW_KINDS)
def test_a_kind_without_its_operator_is_traced_to_the_operator_layer(kind):
    """No add-on installs the Kubeflow Training and MPI Operators, so the API server has no such resource and nothing
    creates the pods; Kueue defers its integration until the CRD exists (kueue v0.19.2
    pkg/controller/jobframework/setup.go: 86-97). explain still checks namespace, priority, scheduler and queue
    first (the integrations named in the stack: a stack may list a kind whose operator it installs itself)."""
    name, group, integration = OPERATOR_OF[kind]
    kinds = {**ALL_KINDS, "addons": {**ALL_KINDS["addons"], "leaderWorkerSet": False, "trainer": False}}
    kinds["scheduling"] = {
        "kueueIntegrations": [
            i for i in ALL_KINDS["scheduling"]["kueueIntegrations"] if not i.startswith(("leaderworkerset", "trainer"))
        ]
    }
    t = trace(spec_of("prod-aws", **kinds), _doc(kind))
    assert [x.name for x in t.layers] == ["namespace", "priority", "scheduler", "queue", "operator"]
    assert all(x.ok for x in t.layers[:-1])
    assert layer(t, "scheduler").detail == f"Kueue ({integration} integration)"
    assert t.verdict == (
        f"pending at operator: {name} is not installed (no {kind} in API group {group}): the API server refuses the "
        f"{kind} and nothing creates its pods; Kueue's {integration} integration waits for the CRD; install {name} "
        "(no add-on of this stack installs it yet)"
    )


@pytest.mark.parametrize("kind", ["JobSet", "LeaderWorkerSet", "RayCluster", "TrainJob"])
def test_a_kind_of_an_operator_the_stack_does_not_install_stops_at_the_scheduler(kind):
    """dev-aws installs no workload operator, so Kueue's integrations for their kinds are off (issue 31), and a
    stack cannot turn one on without its operator (the rule refuses it): such a kind stops at the scheduler."""
    t = trace(spec_of("dev-aws"), _doc(kind, namespace="ml-dev"))
    assert t.pending is not None and t.pending.name == "scheduler", t.lines()


def test_the_operator_function_follows_the_addons():
    spec = spec_of("prod-aws")  # addons.volcano, addons.jobset, addons.kuberay and addons.trainer
    installed = {
        o.name
        for o in set(explain_schedulers.OPERATORS.values())
        if explain_schedulers.operator_installed(plan.build(spec, "test"), o)
    }
    assert installed == {
        "Volcano's job controller",
        "the JobSet controller",
        "the KubeRay operator",
        "Kubeflow Trainer",
    }
    for operator in set(explain_schedulers.OPERATORS.values()):
        dev = plan.build(spec_of("dev-aws"), "test")
        assert explain_schedulers.operator_installed(dev, operator) is False, operator.name


def test_the_layers_before_the_operator_still_stop_a_workload():
    """A RayCluster whose integration is off stops at the scheduler, in a tenant Kueue does not know at the
    namespace: the operator is the last layer explain can reach without it."""
    spec = spec_of("prod-aws", scheduling={"kueueIntegrations": ["batch/job", "pod"]})
    assert stop(trace(spec, _doc("RayCluster")))[0] == "scheduler"
    assert stop(trace(spec_of("prod-aws"), _doc("RayCluster", namespace="nope")))[0] == "namespace"
    # a CPU-only RayCluster cannot be created either without KubeRay (dev-aws lists the Kubeflow kinds itself)
    cpu = yaml.safe_load(_doc("RayCluster", namespace="ml-dev"))
    cpu["spec"]["workerGroupSpecs"] = []
    kinds = {"kueueIntegrations": ["batch/job", "pod", "kubeflow.org/pytorchjob"]}
    cpu["kind"], cpu["apiVersion"] = "PyTorchJob", "kubeflow.org/v1"
    cpu["spec"] = {
        "pytorchReplicaSpecs": {
            "Master": {"replicas": 1, "template": {"spec": {"containers": [{"name": "m", "image": "x"}]}}}
        }
    }
    assert stop(trace(spec_of("dev-aws", scheduling=kinds), yaml.safe_dump(cpu)))[0] == "operator"


def test_a_volcano_job_without_volcano_stops_at_the_operator():
    """Volcano's job controller comes with addons.volcano; without it (and without Kueue, which would refuse the
    kind at the scheduler layer) a Volcano Job is never created."""
    spec = spec_of("dev-aws", addons={"gpuOperator": True, "dcgm": True, "kueue": False, "volcano": False})
    t = trace(spec, volcano_job("ml-dev", "ml-dev", 1, {"nvidia.com/gpu": 1}))
    assert stop(t) == (
        "operator",
        "Volcano's job controller is not installed (no Job in API group batch.volcano.sh): the API server refuses "
        "the Job and nothing creates its pods; set addons.volcano: true",
    )


@pytest.mark.usefixtures("operators_installed")
def test_with_the_operator_installed_the_kinds_run(monkeypatch):
    """The structure for an add-on that installs them: every layer after the operator, from the pod sets read.
    LeaderWorkerSet: 2 groups of a leader and 1 worker, 8 H100s each; Kueue admits each group as one workload of
    16 (leaderworkerset integration), 4 pods on h100-spot need 4 nodes."""
    t = trace(spec_of("prod-aws", **ALL_KINDS), _doc("LeaderWorkerSet"))
    assert (
        layer(t, "operator").detail
        == "the LeaderWorkerSet controller (leaderworkerset.x-k8s.io) is installed (addons.leaderWorkerSet)"
    )
    assert layer(t, "flavors").detail.startswith("h100-spot (16 nvidia.com/gpu, nominal quota;")
    assert runs(t).startswith("runs on pool h100-spot") and layer(t, "provisioner").detail.endswith("needs 4")
    # MPIJob: the CPU launcher needs no GPU node (§4.3)
    t = trace(spec_of("prod-aws", **ALL_KINDS), _doc("MPIJob"))
    assert runs(t).startswith("runs on pool h100-spot") and layer(t, "provisioner").detail.endswith("needs 2")
