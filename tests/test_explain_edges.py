"""gpu-platform explain at the edges of each layer: what a pending verdict names, what a running one says it runs
through, and the Kubernetes rules the checks reproduce (Pod Security per container, node affinity operators,
a pod template's schedulerName, a JobSet's parallelism). Expected values are worked out by hand from the shipped
stacks and the upstream semantics cited beside each case, not read back from the code.
"""

from __future__ import annotations

import pytest
import yaml
from test_explain import (
    GPU_TOLERATION,
    NO_BATCH_SCHEDULER,
    SAFE_CONTAINER,
    SAFE_POD,
    SHARED_OPT_IN,
    container,
    job,
    jobset,
    kueue_holds,
    layer,
    operators_installed,  # noqa: F401  (a fixture)
    pod,
    replicated_job,
    spec_of,
    trace,
    volcano_job,
)

from components.cli import main as cli
from components.explain import trace as explain
from components.explain.facts import pod_security_problems, selection_problems
from components.explain.workloads import WorkloadError, load
from components.plan import plan

# ------------------------------------------------------------------------------------------ pod security


def test_restricted_takes_the_seccomp_profile_from_the_container_too():
    """Pod Security restricted: seccompProfile may be set on the pod or on each container (either satisfies)."""
    text = pod(
        "serving",
        {"nvidia.com/mig-1g.10gb": 1},
        securityContext={"runAsNonRoot": True},
        containers=[
            {
                "name": "c",
                "image": "x",
                "resources": {"limits": {"nvidia.com/mig-1g.10gb": 1}},
                "securityContext": {**SAFE_CONTAINER, "seccompProfile": {"type": "RuntimeDefault"}},
            }
        ],
    )
    ns = trace(spec_of("prod-aws"), text).layers[0]
    assert ns.ok and ns.detail == "serving (tenant serving), Pod Security 'restricted' passes", ns.detail
    # on neither: refused, named per container
    assert pod_security_problems({"containers": [{"name": "c", "securityContext": SAFE_CONTAINER}]}, "restricted") == [
        "container c lacks runAsNonRoot: true",
        "container c lacks seccompProfile RuntimeDefault",
    ]


def test_baseline_checks_every_container_not_only_the_first():
    """baseline: a privileged container anywhere in the pod (init containers included) is refused."""
    second = {"name": "sidecar", "image": "x", "securityContext": {"privileged": True}}
    text = pod("research", {"nvidia.com/gpu": 8}, containers=[container({"nvidia.com/gpu": 8}), second])
    t = trace(spec_of("prod-aws"), text)
    assert t.pending.name == "namespace"
    assert t.pending.detail == "research enforces Pod Security 'baseline', refused: container sidecar privileged"
    spec = {
        "initContainers": [{"name": "init"}],
        "containers": [{"name": "a"}, {"name": "b", "ports": [{"hostPort": 80}]}],
    }
    assert pod_security_problems(spec, "baseline") == ["container b hostPort 80"]


# -------------------------------------------------------------------------------------- node selection


def _affinity(*terms: list[dict]) -> dict:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": list(t)} for t in terms]
            }
        }
    }


def test_required_node_affinity_steers_the_kueue_flavor():
    """Kueue skips a flavor whose node labels the pod's required node affinity does not match: the whole-GPU
    a10g-spot comes first in ml-dev's order, so only the affinity sends the pod to l4-shared."""
    pin = {"key": "gpu-platform/pool", "operator": "In", "values": ["l4-shared"]}
    t = trace(
        spec_of("dev-aws"), pod("ml-dev", {"nvidia.com/gpu": 1}, affinity=_affinity([pin]), tolerations=SHARED_OPT_IN)
    )
    assert t.pending is None and t.pool == "l4-shared", t.lines()
    assert "skipped a10g-spot: required node affinity matches no term" in layer(t, "flavors").detail
    # a term nothing matches: every flavor skipped with the same reason
    pin["values"] = ["nope"]
    t = trace(spec_of("dev-aws"), pod("ml-dev", {"nvidia.com/gpu": 1}, affinity=_affinity([pin])))
    assert t.pending.detail == (
        "no flavor fits: a10g-spot: required node affinity matches no term; "
        "l4-shared: required node affinity matches no term"
    )


LABELS = {"gpu-platform/pool": "l4-shared", "gpus": "8"}


@pytest.mark.parametrize(
    ("expr", "matches"),
    [
        ({"key": "gpu-platform/pool", "operator": "In", "values": ["a", "l4-shared"]}, True),
        ({"key": "gpu-platform/pool", "operator": "In", "values": ["a"]}, False),
        ({"key": "gpu-platform/pool", "operator": "NotIn", "values": ["a"]}, True),
        ({"key": "gpu-platform/pool", "operator": "NotIn", "values": ["l4-shared"]}, False),
        ({"key": "absent", "operator": "NotIn", "values": ["a"]}, True),  # NotIn holds where the label is absent
        ({"key": "gpus", "operator": "Exists"}, True),
        ({"key": "absent", "operator": "Exists"}, False),
        ({"key": "absent", "operator": "DoesNotExist"}, True),
        ({"key": "gpus", "operator": "DoesNotExist"}, False),
        # Gt / Lt: the label read as an integer, strictly greater / less than the single value
        ({"key": "gpus", "operator": "Gt", "values": ["4"]}, True),
        ({"key": "gpus", "operator": "Gt", "values": ["8"]}, False),
        ({"key": "gpus", "operator": "Gt", "values": ["9"]}, False),
        ({"key": "gpus", "operator": "Lt", "values": ["9"]}, True),
        ({"key": "gpus", "operator": "Lt", "values": ["8"]}, False),
        ({"key": "gpus", "operator": "Lt", "values": ["4"]}, False),
        ({"key": "absent", "operator": "Gt", "values": ["0"]}, False),  # no label: no integer to compare
        ({"key": "absent", "operator": "Lt", "values": ["99"]}, False),
        ({"key": "gpu-platform/pool", "operator": "Lt", "values": ["99"]}, False),  # not an integer
        ({"key": "gpus", "operator": "Gt", "values": []}, False),
        ({"key": "gpus", "operator": "Near", "values": ["8"]}, False),  # an operator Kubernetes does not have
    ],
)
def test_node_affinity_operators(expr, matches):
    problems = selection_problems({"affinity": _affinity([expr])}, LABELS)
    assert problems == ([] if matches else ["required node affinity matches no term"])


def test_node_affinity_terms_are_ored_and_expressions_anded():
    yes = {"key": "gpus", "operator": "Gt", "values": ["4"]}
    no = {"key": "gpus", "operator": "Lt", "values": ["4"]}
    assert selection_problems({"affinity": _affinity([no], [yes])}, LABELS) == []
    assert selection_problems({"affinity": _affinity([yes, no])}, LABELS) == ["required node affinity matches no term"]
    # beside a nodeSelector mismatch, each reason is listed
    assert selection_problems({"nodeSelector": {"gpus": "4"}, "affinity": _affinity([no])}, LABELS) == [
        "nodeSelector gpus=4 (nodes have 8)",
        "required node affinity matches no term",
    ]


# ------------------------------------------------------------------------------------ workloads read


@pytest.mark.usefixtures("operators_installed")
def test_jobset_pods_are_replicas_times_parallelism():
    """A JobSet replicatedJob runs replicas Jobs of parallelism pods each: 2 x 2 pods of 4 H100s = 16 GPUs, on
    h100-spot (8 per node) 2 nodes; research's nominal 16 there. (With the JobSet controller installed: no add-on
    installs it yet, see test_explain_scheduler_semantics.)"""
    pods = {"containers": [container({"nvidia.com/gpu": 4})], "nodeSelector": {"gpu-platform/pool": "h100-spot"}}
    text = jobset("research", replicated_job("workers", 2, 2, pods))
    (w,) = load(text)
    assert [(ps.name, ps.count) for ps in w.podsets] == [("workers", 4)]
    t = trace(spec_of("prod-aws"), text)
    assert t.pending is None, t.lines()
    assert layer(t, "flavors").detail.startswith("h100-spot (16 nvidia.com/gpu, nominal quota")
    assert layer(t, "provisioner").detail.endswith("needs 2")


def test_the_pod_templates_scheduler_name_is_the_workloads():
    """A Kueue-managed Job whose pods name the Volcano scheduler would be scheduled by both: explain refuses it."""
    t = trace(spec_of("dev-aws"), job("ml-dev", 1, {"nvidia.com/gpu": 1}, schedulerName="volcano"))
    assert t.pending.name == "scheduler"
    assert t.pending.detail == "schedulerName volcano in a Kueue namespace: drop it (run by Kueue or Volcano)"
    (w,) = load(job("ml-dev", 1, {"nvidia.com/gpu": 1}, schedulerName="default-scheduler"))
    assert w.scheduler_name == "default-scheduler"


def test_a_malformed_document_is_named_by_its_place_in_the_file(tmp_path, capsys):
    text = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n"
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\n"
        "spec: {parallelism: two, template: {spec: {containers: [{name: c}]}}}\n"
    )
    with pytest.raises(WorkloadError) as err:
        load(text)
    assert str(err.value) == "document 2: malformed (ValueError: invalid literal for int() with base 10: 'two')"
    f = tmp_path / "w.yaml"
    f.write_text(text)
    assert cli.main(["explain", "dev-aws", str(f)]) == 2
    assert "document 2: malformed (ValueError" in capsys.readouterr().err


# --------------------------------------------------------------------------------- queues and pools


def test_a_volcano_queue_holds_nothing_of_a_resource_it_has_no_capacity_for():
    """prod-aws: applied-ml's Volcano queue holds the 16 whole GPUs of its pool a100-gang, no MIG slice (the pod
    selects its own pool, as the tenant-pods policy requires, so the queue is where it stops)."""
    gang = volcano_job(
        "applied-ml",
        "applied-ml",
        1,
        {"nvidia.com/mig-1g.10gb": 1},
        tolerations=GPU_TOLERATION,
        nodeSelector={"gpu-platform/pool": "a100-gang"},
    )
    t = trace(spec_of("prod-aws"), gang)
    assert t.pending.name == "queue"
    assert t.pending.detail.startswith(
        "Volcano queue applied-ml holds at most 0 nvidia.com/mig-1g.10gb with every pool at its maximum size"
    )


def test_without_a_batch_scheduler_the_pod_selects_its_pool():
    spec = spec_of("dev-aws", addons=NO_BATCH_SCHEDULER)
    ok = trace(
        spec,
        pod(
            "ml-dev",
            {"nvidia.com/gpu": 1},
            nodeSelector={"gpu-platform/pool": "a10g-spot"},
            tolerations=GPU_TOLERATION,
        ),
    )
    assert layer(ok, "pool").detail == "a10g-spot: labels match, taints tolerated (the pod selects and tolerates)"
    stray = pod("ml-dev", {"nvidia.com/gpu": 1}, nodeSelector={"gpu-platform/pool": "nope"}, tolerations=GPU_TOLERATION)
    t = trace(spec, stray)
    assert t.pending.name == "pool"
    assert t.pending.detail == (
        "no pool of ml-dev (a10g-spot, l4-shared) advertises nvidia.com/gpu and matches the pod: "
        "a10g-spot: nodeSelector gpu-platform/pool=nope (nodes have a10g-spot); "
        "l4-shared: nodeSelector gpu-platform/pool=nope (nodes have l4-shared)"
    )
    # under Kueue the same pool layer says who put the selector there
    kueue = trace(spec_of("dev-aws"), pod("ml-dev", {"nvidia.com/gpu": 1}))
    assert layer(kueue, "pool").detail.endswith("(Kueue injects the flavor's nodeSelector and tolerations)")


def test_nodes_needed_packs_whole_pods_and_knows_a_pod_that_fits_no_node():
    """a100-train nodes bring 8 GPUs: 3 pods of 8 need 3 nodes, 3 pods of 4 need 2 (two per node, rounded up); a pod
    of 16 fits no node (None: the provisioner layer's verdict, not a node count)."""
    decided = plan.build(spec_of("prod-aws"), "")
    pool = decided.pools["a100-train"]
    for pods, gpus, expected in ((3, 8, 3), (3, 4, 2), (1, 16, None)):
        (w,) = load(job("research", pods, {"nvidia.com/gpu": gpus}))
        assert explain._Tracer(decided, w).nodes_needed(pool) == expected, (pods, gpus)


def test_a_pod_set_of_zero_pods_needs_no_node():
    """A RayJob worker group scaled to 0 stands for no pod: it adds no node (it used to read as 'fits no node',
    so the workload was reported pending though it would run). 2 workers of 8 GPUs: 2 nodes. The CPU head asks
    no GPU: Kueue assigns it default-flavor (GPU quota 0, no node labels: kueue.resource_groups), so it runs on
    non-GPU nodes and adds no node of the pool (it used to count as one; issue 26 §4.3)."""
    spec = spec_of("prod-aws")
    gpu_tpl = {"spec": {"containers": [container({"nvidia.com/gpu": 8})]}}
    cpu_tpl = {"spec": {"containers": [{"name": "c", "image": "x"}]}}
    doc = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "r", "namespace": "research"},
        "spec": {
            "rayClusterSpec": {
                "headGroupSpec": {"template": cpu_tpl},
                "workerGroupSpecs": [
                    {"groupName": "gpu", "replicas": 2, "template": gpu_tpl},
                    {"groupName": "idle", "replicas": 0, "template": cpu_tpl},
                ],
            }
        },
    }
    (w,) = load(yaml.safe_dump(doc))
    decided = plan.build(spec, "")
    assert explain._Tracer(decided, w).nodes_needed(decided.pools["a100-train"]) == 2


# ------------------------------------------------------------------------------- provisioner and node


def test_gke_cluster_autoscaler_pool():
    text = pod("ml-dev", {"nvidia.com/gpu": 1}, nodeSelector={"gpu-platform/pool": "t4-spot"})
    t = trace(spec_of("dev-gcp"), text)
    assert t.provisioner == "GKE cluster autoscaler"
    assert t.verdict == "runs on pool t4-spot via GKE cluster autoscaler"
    assert layer(t, "provisioner").detail == "GKE cluster autoscaler: 0..2 nodes, needs 1"


def test_time_slicing_refuses_more_than_one_unit_per_pod():
    """failRequestsGreaterThanOne (the default): the device plugin fails a pod asking for 2 time-sliced units,
    although one l4-shared node advertises 4 of them."""
    text = pod(
        "ml-dev", {"nvidia.com/gpu": 2}, nodeSelector={"gpu-platform/pool": "l4-shared"}, tolerations=SHARED_OPT_IN
    )
    t = trace(spec_of("dev-aws"), text)
    assert [x.name for x in t.layers if x.ok][-1] == "provisioner"
    assert t.pending.name == "node"
    # the kubelet refuses the pod (UnexpectedAdmissionError), so it never runs: Kueue still holds its quota
    assert t.pending.detail == (
        "l4-shared time-slices with failRequestsGreaterThanOne: a pod may ask 1 nvidia.com/gpu, not 2"
        + kueue_holds("2 nvidia.com/gpu", "l4-shared")
    )
    one = trace(spec_of("dev-aws"), text.replace("nvidia.com/gpu: 2", "nvidia.com/gpu: 1"))
    assert one.pending is None and one.pool == "l4-shared"


# ------------------------------------------------------------------------------------------------- DRA


def test_a_claim_on_a_stack_that_creates_none_says_so():
    doc = yaml.safe_load(pod("ml-dev", {}))
    doc["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "gpu-h100"}]
    t = trace(spec_of("dev-aws"), yaml.safe_dump(doc))
    assert t.pending.name == "claims"
    assert t.pending.detail == "ResourceClaimTemplate gpu-h100 is neither in the file nor created for ml-dev (none)"


def test_a_pod_set_without_claims_holds_nothing():
    """dra-existing: a JobSet whose driver pod asks no device beside workers that each claim one H100."""

    def pods(claims: list[dict]) -> dict:
        return {"containers": [container({})], "securityContext": SAFE_POD, "resourceClaims": claims}

    gpu = [{"name": "gpu", "resourceClaimTemplateName": "gpu-h100"}]
    text = jobset("research", replicated_job("driver", 1, 1, pods([])), replicated_job("workers", 1, 1, pods(gpu)))
    t = trace(spec_of("dra-existing"), text)
    assert layer(t, "claims").detail == "DRA: driver nothing; workers 1 gpu.nvidia.com/devices"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("tolerations", ["x"], "tolerations must be a list of mappings"),
        ("tolerations", 5, "tolerations must be a list of mappings"),
        ("containers", "c", "containers must be a list of mappings"),
        ("nodeSelector", ["a"], "nodeSelector must be a mapping"),
        ("affinity", "any", "affinity must be a mapping"),
        ("initContainers", [1], "initContainers must be a list of mappings"),
        ("resourceClaims", {"name": "gpu"}, "resourceClaims must be a list of mappings"),
        ("securityContext", [], "securityContext must be a mapping"),
    ],
)
def test_a_malformed_pod_field_is_bad_input_not_a_crash(tmp_path, capsys, field, value, message):
    """explain reads tolerations, containers, node selectors and affinity from every pod template: one of the wrong
    shape is refused as the workload's problem (exit 2, one line naming the object), never a traceback."""
    pod_spec = {"containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}
    pod_spec[field] = value
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "w", "namespace": "research"}, "spec": pod_spec}
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert cli.main(["explain", "prod-aws", str(path)]) == cli.EXIT_INVALID
    err = capsys.readouterr().err
    assert err == f"{path}: Pod w: {message}\n", err


def test_a_pod_whose_spec_is_not_a_mapping_is_bad_input(tmp_path, capsys):
    """`spec: 5` on a Pod: refused as the workload's problem, not a crash."""
    path = tmp_path / "w.yaml"
    path.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: w, namespace: research}\nspec: 5\n")
    assert cli.main(["explain", "prod-aws", str(path)]) == cli.EXIT_INVALID
    assert capsys.readouterr().err == f"{path}: Pod w: the pod spec is not a mapping\n"
