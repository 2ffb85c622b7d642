"""Explain's flavor layer against Kueue's quota arithmetic (issue 38): a workload's request per flavor and resource,
summed over its pod sets as Kueue assigns them, against the ClusterQueue's maximum capacity, with the cause in words
and the fix. Each number is worked out by hand from kueue v0.19.2 pkg/cache/scheduler/resource_node.go:

    localQuota        = nominal - lendingLimit (0 without one)      what a queue keeps back from its cohort
    lends             = nominal - localQuota                        what it puts into the cohort (accumulateFromChild)
    cohort quota      = the sum of what its queues lend
    maximum capacity  = min(nominal + borrowingLimit, localQuota + cohort quota)             (potentialAvailable)

and from pkg/scheduler/flavorassigner/flavorassigner.go (pod sets in order; each pod set's request plus what earlier
pod sets were assigned on the flavor, against the maximum capacity: fitsResourceQuota; whenCanBorrow TryNextFlavor
tries the next flavor rather than borrow). A tenant whose priority ceiling is `dev` never preempts, so its
ClusterQueue's lendingLimit is 0: it lends nothing.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import yaml
from conftest import stack_config
from test_explain import SAFE_POD, container, job, layer, plan_of, trace, trace_plan

from components.cli.loader import load_spec

TOPOLOGY = {"kueue.x-k8s.io/podset-preferred-topology": "kubernetes.io/hostname"}
A100 = {"gpu-platform/pool": "a100-train"}


def _prod_aws(**quota: dict[str, Any]):
    """prod-aws with tenants' entries changed (``serving={"gpuQuota": {...}}``), merged into the stack file's."""
    cfg = stack_config("prod-aws")
    for t in cfg["gpu-platform:tenants"]:
        for key, value in quota.get(t["name"].replace("-", "_"), {}).items():
            t[key] = {**t.get(key, {}), **value}
    return load_spec(cfg)


def _a100(namespace: str, pods: int, gpus: int) -> str:
    return job(namespace, pods, {"nvidia.com/gpu": gpus}, annotations=TOPOLOGY, nodeSelector=A100)


SKIPPED_H100_SPOT = "; h100-spot: nodeSelector gpu-platform/pool=a100-train (nodes have h100-spot)"


def test_prod_aws_research_24_gpus_on_a100_train_stay_pending():
    """The issue's case: 3 pods x 8 = 24 A100 for research, which has 16 on a100-train and borrowingLimit 8 there.
    No other ClusterQueue of cohort gpu-platform has a100-train: cohort quota 16 (research's own), maximum capacity
    min(16 + 8, 0 + 16) = 16; Kueue: "request (24) > maximum capacity (16)". Fix: a nominal quota N with
    min(N + 8, N) >= 24, i.e. 24 GPUs."""
    t = trace(_prod_aws(), _a100("research", 3, 8))
    assert t.pending.name == "flavors"
    assert t.pending.detail == (
        "no flavor fits: a100-train: needs 24 nvidia.com/gpu, research's quota 16; no other ClusterQueue of cohort "
        "gpu-platform lends a100-train (notebooks, serving: no quota there): its borrowingLimit 8 there has nothing "
        "to borrow, so at most 16 (Kueue: maximum capacity 16): raise research's gpuQuota on a100-train to 24 GPUs, "
        "or give another tenant of cohort gpu-platform quota on a100-train that it lends" + SKIPPED_H100_SPOT
    )
    # its own 16 run, within its nominal quota
    assert trace(_prod_aws(), _a100("research", 2, 8)).pending is None


def test_a_lender_with_a_lending_limit_lends_only_that():
    """serving given 8 A100 on a100-train with lendingLimit 2: localQuota 8 - 2 = 6, it lends 2; cohort quota
    16 + 2 = 18. research: min(16 + 8, 0 + 18) = 18; serving: 6 + 18 = 24 (no borrowingLimit). research's 24 stay
    pending (the lenders bind: it may borrow 8, serving lends 2); a nominal quota N with N + min(8, 2) >= 24 is 22
    GPUs. 18 pods of 1 A100 run, borrowing 2 from serving."""
    spec = _prod_aws(serving={"gpuQuota": {"a100-train": 8}, "lendingLimit": {"a100-train": 2}})
    tenants = plan_of(spec).tenants
    assert dict(tenants["research"].pool_ceiling_units["a100-train"]) == {"nvidia.com/gpu": 18}
    assert dict(tenants["serving"].pool_ceiling_units["a100-train"]) == {"nvidia.com/gpu": 24}
    assert dict(tenants["serving"].pool_lent_units["a100-train"]) == {"nvidia.com/gpu": 2}
    t = trace(spec, _a100("research", 3, 8))
    assert t.pending.detail == (
        "no flavor fits: a100-train: needs 24 nvidia.com/gpu, research's quota 16; the other ClusterQueues of cohort "
        "gpu-platform lend 2 there (notebooks: no quota there; serving: lends 2), so at most 18 (Kueue: maximum "
        "capacity 18): raise research's gpuQuota on a100-train to 22 GPUs, or give the others more quota there to "
        "lend (their gpuQuota or lendingLimit on a100-train)" + SKIPPED_H100_SPOT
    )
    t = trace(spec, _a100("research", 18, 1))
    assert t.pending is None and t.pool == "a100-train"
    assert layer(t, "flavors").detail.startswith(
        "a100-train (18 nvidia.com/gpu, borrows 2 nvidia.com/gpu from cohort gpu-platform (lent by serving); order "
    )
    assert layer(t, "provisioner").detail.endswith("needs 3")  # 18 pods of 1 GPU, 8 per node


def test_a_tenant_that_never_preempts_lends_nothing_but_borrows():
    """notebooks (ceiling dev: its ClusterQueue never preempts, lendingLimit 0) given 8 A100 on a100-train:
    localQuota 8 - 0 = 8, it lends 0; cohort quota 16 + 0 = 16. research: min(16 + 8, 0 + 16) = 16, nothing to
    borrow; notebooks: 8 + 16 = 24, research's 16 included. So research's 24 stay pending, notebooks' 24 run."""
    spec = _prod_aws(notebooks={"gpuQuota": {"a100-train": 8}})
    tenants = plan_of(spec).tenants
    assert dict(tenants["notebooks"].pool_lent_units["a100-train"]) == {"nvidia.com/gpu": 0}
    assert dict(tenants["notebooks"].pool_ceiling_units["a100-train"]) == {"nvidia.com/gpu": 24}
    t = trace(spec, _a100("research", 3, 8))
    assert t.pending.detail == (
        "no flavor fits: a100-train: needs 24 nvidia.com/gpu, research's quota 16; no other ClusterQueue of cohort "
        "gpu-platform lends a100-train (notebooks: never preempts, so lends nothing; serving: no quota there): its "
        "borrowingLimit 8 there has nothing to borrow, so at most 16 (Kueue: maximum capacity 16): raise research's "
        "gpuQuota on a100-train to 24 GPUs, or give another tenant of cohort gpu-platform quota on a100-train that it "
        "lends" + SKIPPED_H100_SPOT
    )
    t = trace(spec, _a100("notebooks", 24, 1))
    assert t.pending is None, t.lines()
    assert layer(t, "flavors").detail.startswith(
        "a100-train (24 nvidia.com/gpu, borrows 16 nvidia.com/gpu from cohort gpu-platform (lent by research); "
    )


def _dra_job(pods: int, devices: int) -> str:
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "some", "namespace": "research"},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [{"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": devices}}]
                }
            }
        },
    }
    pod = {
        "restartPolicy": "Never",
        "resourceClaims": [{"name": "g", "resourceClaimTemplateName": "some"}],
        "containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "g"}]}}],
    }
    j = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "research"},
        "spec": {"parallelism": pods, "completions": pods, "template": {"spec": pod}},
    }
    return yaml.safe_dump_all([template, j])


def test_dra_existing_16_devices_stay_pending_at_14():
    """dra-existing h100, gpu.nvidia.com devices: research 10, serving 4, notebooks 2 (dev: lends 0), cohort shared.
    Cohort quota 10 + 4 + 0 = 14; research: 0 + 14 = 14 (no borrowingLimit). 2 pods x 8 = 16 > 14: Kueue
    "maximum capacity (14)". Fix: N + 4 >= 16, 12 GPUs. 7 pods x 2 = 14 run, borrowing 4 from serving."""
    spec = load_spec(stack_config("dra-existing"))
    t = trace(spec, _dra_job(2, 8))
    assert t.pending.name == "flavors"
    assert t.pending.detail == (
        "no flavor fits: h100: needs 16 gpu.nvidia.com/devices, research's quota 10; the other ClusterQueues of cohort "
        "shared lend 4 there (notebooks: never preempts, so lends nothing; serving: lends 4), so at most 14 (Kueue: "
        "maximum capacity 14): raise research's gpuQuota on h100 to 12 GPUs, or give the others more quota there to "
        "lend (their gpuQuota or lendingLimit on h100)"
    )
    t = trace(spec, _dra_job(7, 2))
    assert t.pending is None, t.lines()
    assert layer(t, "flavors").detail.startswith(
        "h100 (14 gpu.nvidia.com/devices, borrows 4 gpu.nvidia.com/devices from cohort shared (lent by serving); "
    )


def _jobset(*replicated: tuple[str, int, dict[str, Any], dict[str, str]]) -> str:
    """A JobSet of replicatedJobs (name, pods, pod template annotations, nodeSelector), 8 GPUs a pod, in research."""
    jobs = [
        {
            "name": name,
            "replicas": pods,
            "template": {
                "spec": {
                    "parallelism": 1,
                    "template": {
                        "metadata": {"annotations": annotations},
                        "spec": {
                            "containers": [container({"nvidia.com/gpu": 8})],
                            "securityContext": SAFE_POD,
                            **({"nodeSelector": selector} if selector else {}),
                        },
                    },
                }
            },
        }
        for name, pods, annotations, selector in replicated
    ]
    doc = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js", "namespace": "research"},
    }
    return yaml.safe_dump({**doc, "spec": {"replicatedJobs": jobs}})


def test_pod_sets_add_up_on_a_flavor():
    """Kueue assigns pod set by pod set and counts what earlier pod sets got on the same flavor (fitsResourceQuota's
    assumedUsage): the leader's 8 fit research's 16 on h100-spot, then the workers' 2 x 8 = 16 need 8 + 16 = 24 >
    16 (nobody else has quota there): Kueue "previously considered podsets requests (8) + current podset request
    (16) > maximum capacity (16)"."""
    spot = {"gpu-platform/pool": "h100-spot"}
    t = trace(_prod_aws(), _jobset(("leader", 1, {}, spot), ("workers", 2, {}, spot)))
    assert t.pending.detail == (
        "no flavor fits pod set workers: a100-train: nodeSelector gpu-platform/pool=h100-spot (nodes have "
        "a100-train); h100-spot: needs 8 (earlier pod sets) + 16 nvidia.com/gpu = 24, research's quota 16; no other "
        "ClusterQueue of cohort gpu-platform lends h100-spot (notebooks, serving: no quota there), so at most 16 "
        "(Kueue: maximum capacity 16): raise research's gpuQuota on h100-spot to 24 GPUs, or give another tenant of "
        "cohort gpu-platform quota on h100-spot that it lends"
    )
    # one worker: 8 + 8 = 16, within the nominal quota, on 2 nodes
    t = trace(_prod_aws(), _jobset(("leader", 1, {}, spot), ("workers", 1, {}, spot)))
    assert layer(t, "flavors").detail.startswith("h100-spot (16 nvidia.com/gpu, nominal quota; ")
    assert layer(t, "provisioner").detail.endswith("needs 2")


def test_pod_sets_may_land_on_different_flavors():
    """Each pod set gets its own flavor (checkPodSetAndFlavorMatchForTAS per pod set): the leader asks a topology,
    so a100-train (topology-aware, research 16) takes its 8; the workers ask none, so a100-train is not theirs
    ("supports only TopologyAwareScheduling") and h100-spot takes their 16. Each pool is traced with its own pod
    sets; a100-train's ProvisioningRequest check asks for the leader's 1 node."""
    t = trace(_prod_aws(), _jobset(("leader", 1, TOPOLOGY, {}), ("workers", 2, {}, {})))
    assert t.pending is None, t.lines()
    assert layer(t, "flavors").detail == (
        "leader -> a100-train (8 nvidia.com/gpu, nominal quota); workers -> h100-spot (16 nvidia.com/gpu, nominal "
        "quota) (order default-flavor > a100-train > h100-spot; skipped a100-train: topology-aware, the pod template "
        "asks for no topology (pod set workers))"
    )
    assert [x.name for x in t.layers][-12:] == [
        "admission-checks",
        "pool",
        "provisioner",
        "node",
        "image",  # prod-aws declares images: each pool says whether the pods' images are warm there
        "dcgm",
        "admission-checks",
        "pool",
        "provisioner",
        "node",
        "image",
        "dcgm",
    ]
    assert [x.detail for x in t.layers if x.name == "provisioner"] == [
        "Cluster Autoscaler, template 8 nvidia.com/gpu: 0..4 nodes, needs 1",
        "Karpenter NodePool(s) h100-spot, h100-spot-on-demand: 0..4 node(s), needs 2",
    ]
    assert t.verdict == (
        "runs on pools a100-train, h100-spot: leader on a100-train via EKS managed node group + Cluster Autoscaler; "
        "workers on h100-spot via Karpenter NodePool h100-spot, h100-spot-on-demand"
    )
    assert t.doc()["pool"] == "a100-train, h100-spot"


def test_may_stop_search_takes_the_first_flavor_that_fits_even_borrowing():
    """whenCanBorrow: TryNextFlavor (the platform's) goes on past a flavor that fits only by borrowing and takes a
    later one within nominal quota; MayStopSearch (Kueue's default) stops at the first fit (shouldTryNextFlavor).
    dev-aws ml-dev with a10g-spot 0 (borrow only; a second tenant lends 2 there) and l4-shared 4: a 1-GPU pod
    opting in to slices."""
    config = stack_config("dev-aws")
    config["gpu-platform:tenants"][0]["gpuQuota"] = {"l4-shared": 4, "a10g-spot": 0}
    config["gpu-platform:tenants"].append({"name": "lender", "gpuQuota": {"a10g-spot": 2}})
    decided = plan_of(load_spec(config))
    shared = [{"key": "gpu-platform/shared-gpu", "operator": "Equal", "value": "one-unit", "effect": "NoSchedule"}]
    pod = yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ml-dev"},
            "spec": {"containers": [container({"nvidia.com/gpu": 1})], "tolerations": shared},
        }
    )
    assert trace_plan(decided, pod).pool == "l4-shared"
    ml_dev = decided.tenants["ml-dev"]
    cq = {**ml_dev.cluster_queue_spec, "flavorFungibility": {"whenCanBorrow": "MayStopSearch"}}
    stop_early = dataclasses.replace(
        decided, tenants={**decided.tenants, "ml-dev": dataclasses.replace(ml_dev, cluster_queue_spec=cq)}
    )
    t = trace_plan(stop_early, pod)
    assert t.pool == "a10g-spot"
    assert "borrows 1 nvidia.com/gpu from cohort gpu-platform (lent by lender)" in layer(t, "flavors").detail


def test_a_split_workload_no_node_runs_holds_every_flavors_quota():
    """The leader's 8 on a100-train, one worker asking 16 H100 on h100-spot (research's 16 there): Kueue admits both
    pod sets on quota, but no h100-spot node (8 GPUs) fits the worker's pod. What Kueue holds meanwhile is the whole
    workload's: 8 of a100-train's quota and 16 of h100-spot's (quota counts per flavor, never per node)."""
    doc = yaml.safe_load(_jobset(("leader", 1, TOPOLOGY, {}), ("workers", 1, {}, {})))
    pod = doc["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]
    pod["containers"] = [container({"nvidia.com/gpu": 16})]
    t = trace(_prod_aws(), yaml.safe_dump(doc))
    assert t.pending.name == "provisioner"
    assert t.pending.detail == (
        "pod set workers asks 16 nvidia.com/gpu, one node of h100-spot brings 8: no node it can launch fits the pod; "
        "ask for at most that per pod (more pods instead); Kueue still admits it (quota counts per flavor, not per "
        "node) and holds 8 nvidia.com/gpu of a100-train's quota and 16 nvidia.com/gpu of h100-spot's quota until "
        "waitForPodsReady.timeout (30m) evicts it, then requeues it with backoff, deactivated after 10 evictions"
    )
    # the leader's pool was traced first, and passed
    assert [x.detail.split(":")[0] for x in t.layers if x.name == "pool"] == ["a100-train", "h100-spot"]
