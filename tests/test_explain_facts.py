"""The rules explain checks a pod by, one at a time: Pod Security per level, taints and tolerations, what the
Cluster Autoscaler and Karpenter believe of a node, when dcgm-exporter loses the pod, and how workload manifests
become pod sets. Expected values come from the Kubernetes and upstream rules cited beside each case.
"""

from __future__ import annotations

import dataclasses

import pytest
import yaml
from conftest import stack_config
from test_explain import container, plan_of, pod, pool_of, spec_of, trace, with_values

from components.cli.loader import load_spec
from components.explain import facts
from components.explain.workloads import PodSet, WorkloadError, load, parse
from components.render import gpu_operator

# ------------------------------------------------------------------------------------------ Pod Security

RESTRICTED_OK = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": True}
RESTRICTED_OK |= {"seccompProfile": {"type": "RuntimeDefault"}}


def _c(name: str = "c", **sc) -> dict:
    return {"name": name, "securityContext": sc}


@pytest.mark.parametrize(
    ("pod_spec", "level", "problems"),
    [
        (
            {"hostNetwork": True, "hostPID": True, "hostIPC": True},
            "baseline",
            ["hostNetwork: true", "hostPID: true", "hostIPC: true"],
        ),
        ({"hostPID": False, "containers": [_c()]}, "baseline", []),
        (
            {"volumes": [{"name": "data", "hostPath": {"path": "/"}}, {"name": "tmp", "emptyDir": {}}]},
            "baseline",
            ["hostPath volume data"],
        ),
        # init containers are containers too
        (
            {"initContainers": [_c("init", privileged=True)], "containers": [_c()]},
            "baseline",
            ["container init privileged"],
        ),
        (
            {"containers": [{"name": "c", "ports": [{"containerPort": 80}, {"hostPort": 8080}]}]},
            "baseline",
            ["container c hostPort 8080"],
        ),
        # baseline allows the default capability set (CHOWN...), not NET_ADMIN; restricted only NET_BIND_SERVICE
        (
            {"containers": [_c(capabilities={"add": ["CHOWN", "NET_ADMIN", "SYS_ADMIN"]})]},
            "baseline",
            ["container c adds capabilities ['NET_ADMIN', 'SYS_ADMIN']"],
        ),
        ({"containers": [_c(capabilities={"add": ["CHOWN"]})]}, "baseline", []),
        (
            {"containers": [_c(**{**RESTRICTED_OK, "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}})]},
            "restricted",
            [],
        ),
        (
            {"containers": [_c(**{**RESTRICTED_OK, "capabilities": {"drop": ["ALL"], "add": ["CHOWN"]}})]},
            "restricted",
            ["container c adds capabilities ['CHOWN']"],
        ),
        ({"containers": [_c(**RESTRICTED_OK)]}, "restricted", []),
        (
            {"containers": [_c()]},
            "restricted",
            [
                "container c lacks allowPrivilegeEscalation: false",
                "container c does not drop ALL capabilities",
                "container c lacks runAsNonRoot: true",
                "container c lacks seccompProfile RuntimeDefault",
            ],
        ),
        # the container's runAsNonRoot wins over the pod's, either way
        (
            {"securityContext": {"runAsNonRoot": True}, "containers": [_c(**{**RESTRICTED_OK, "runAsNonRoot": False})]},
            "restricted",
            ["container c lacks runAsNonRoot: true"],
        ),
        ({"securityContext": {"runAsNonRoot": False}, "containers": [_c(**RESTRICTED_OK)]}, "restricted", []),
        # a Localhost seccomp profile is allowed too, from the pod or the container
        (
            {
                "securityContext": {"seccompProfile": {"type": "Localhost"}},
                "containers": [_c(**{**RESTRICTED_OK, "seccompProfile": None})],
            },
            "restricted",
            [],
        ),
        (
            {"containers": [_c(**{**RESTRICTED_OK, "seccompProfile": {"type": "Unconfined"}})]},
            "restricted",
            ["container c lacks seccompProfile RuntimeDefault"],
        ),
    ],
)
def test_pod_security(pod_spec, level, problems):
    assert facts.pod_security_problems(pod_spec, level) == problems


# ------------------------------------------------------------------------------------ taints, tolerations

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("toleration", "tolerated"),
    [
        ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}, True),
        ({"key": "nvidia.com/gpu", "value": "present"}, True),  # no effect: every effect; no operator: Equal
        ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "absent"}, False),
        ({"key": "nvidia.com/gpu"}, False),  # Equal to an empty value
        ({"key": "nvidia.com/gpu", "operator": "Exists"}, True),
        ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}, False),
        ({"key": "other", "operator": "Exists"}, False),
        ({"operator": "Exists"}, True),  # an empty key with Exists tolerates everything
        ({"operator": "Exists", "effect": "NoExecute"}, False),
        ({"value": "present"}, False),  # an empty key without Exists tolerates nothing
    ],
)
def test_tolerations(toleration, tolerated):
    assert facts.untolerated([toleration], [GPU_TAINT]) == ([] if tolerated else ["nvidia.com/gpu=present:NoSchedule"])


def test_untolerated_taints():
    taints = [
        {"key": "a", "value": None, "effect": "NoSchedule"},
        {"key": "b", "value": "x", "effect": "NoExecute"},
        {"key": "c", "value": "y", "effect": "PreferNoSchedule"},  # a preference: never keeps a pod off
    ]
    assert facts.untolerated([], taints) == ["a=:NoSchedule", "b=x:NoExecute"]
    # a taint without a value is tolerated by Equal with no value, not by one with a value
    assert facts.untolerated([{"key": "a", "operator": "Equal"}], taints[:1]) == []
    assert facts.untolerated([{"key": "a", "operator": "Equal", "value": "v"}], taints[:1]) == ["a=:NoSchedule"]


# ------------------------------------------------------------------------------------- one pool's facts


def test_what_the_cluster_autoscaler_reads_from_the_node_group_tags():
    """dev-aws l4-shared: one L4 time-sliced into 4, labelled and tainted like its nodes. The template's labels
    are joined as cluster-autoscaler 1.35.0 cloudprovider/aws/aws_manager.go:299-317 joins them: its generic
    labels (buildGenericLabels, 389-402: arch and instance type from the type, g6 is x86_64 -> amd64; os linux;
    region and zone from the ASG's first AZ, which the stack does not name; the hostname), the node-template
    label tags, then the managed node group's labels from DescribeNodegroup (aws_wrapper.go:98-108: capacity
    type SPOT, the node group's name, which EKS suffixes)."""
    decided = plan_of(spec_of("dev-aws"))
    pool = decided.pools["l4-shared"]
    resources, labels, taints = facts.autoscaler_sees(decided, pool)
    assert resources == {"nvidia.com/gpu": 4}
    assert labels == {
        "kubernetes.io/arch": ("amd64",),
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": ("g6.xlarge", "g6.2xlarge"),
        "topology.kubernetes.io/region": "us-east-1",
        "topology.kubernetes.io/zone": None,
        "topology.ebs.csi.aws.com/zone": None,
        "kubernetes.io/hostname": None,
        **pool.labels,
        "eks.amazonaws.com/capacityType": "SPOT",
        "eks.amazonaws.com/nodegroup": None,
    }
    assert taints == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}] == list(pool.taints)


def test_karpenter_sees_efa_interfaces_from_ec2_data():
    """p5.48xlarge: 8 H100s and 32 EFA interfaces; an EFA-enabled Karpenter pool asking all of them runs."""
    config = stack_config("prod-aws")
    h100 = pool_of(config["gpu-platform:nodePools"], "h100-spot")
    h100["efa"], h100["karpenter"]["zone"] = True, "us-east-1a"
    spec = load_spec(config)
    decided = plan_of(spec)
    assert facts.karpenter_sees(decided, decided.pools["h100-spot"]) == {
        "nvidia.com/gpu": 8,
        "vpc.amazonaws.com/efa": 32,
    }
    t = trace(spec, pod("research", {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 32}))
    assert t.pending is None and t.pool == "h100-spot", t.lines()


def test_dcgm_attribution():
    """dcgm-exporter matches GPU UUIDs and counts nvidia.com/gpu and MIG resources only, unless told more names
    (NVIDIA_RESOURCE_NAMES, comma-separated) and, on GKE, device names."""
    gcp = plan_of(spec_of("dev-gcp"))
    t4 = gcp.pools["t4-spot"]
    operator = dict(gcp.addons["gpuOperator"].values)
    ids = {"name": gpu_operator.DCGM_GPU_ID_TYPE_ENV, "value": "device-name"}
    names = {"name": gpu_operator.DCGM_RESOURCE_NAMES_ENV, "value": "nvidia.com/a,nvidia.com/gpu.shared"}
    for values, resources, why in [
        ({"env": [ids]}, ["nvidia.com/gpu"], None),
        ({"extraEnv": [ids]}, ["nvidia.com/gpu"], None),  # the standalone chart's key
        (
            {"env": []},
            ["nvidia.com/gpu"],
            "GKE's device plugin names devices nvidiaN, the exporter matches UUIDs: set its Kubernetes GPU id type "
            "to device-name",
        ),
        ({"env": [ids, names]}, ["nvidia.com/gpu.shared", "nvidia.com/mig-1g.10gb"], None),
        (
            {"env": [ids]},
            ["nvidia.com/gpu.shared", "nvidia.com/z"],
            "the exporter skips nvidia.com/gpu.shared, nvidia.com/z (renameByDefault) unless listed in "
            "NVIDIA_RESOURCE_NAMES",
        ),
    ]:
        deployed = with_values(gcp, "gpuOperator", {**operator, "dcgmExporter": values})
        assert facts.dcgm_attribution(deployed, t4, resources) == why, values


def test_dcgm_attribution_on_bottlerocket():
    """a100-train's Bottlerocket device plugin hands out UUIDs (its user data says so); without that setting its
    device IDs are indexes, which the exporter cannot match."""
    decided = plan_of(spec_of("prod-aws"))
    a100 = decided.pools["a100-train"]
    assert decided.aws.bottlerocket_device_plugins["a100-train"] == {"device-id-strategy": "uuid"}
    assert facts.dcgm_attribution(decided, a100, ["nvidia.com/gpu"]) is None
    plugins = {**decided.aws.bottlerocket_device_plugins, "a100-train": {}}  # the pre-fix settings
    indexes = dataclasses.replace(decided, aws=dataclasses.replace(decided.aws, bottlerocket_device_plugins=plugins))
    assert facts.dcgm_attribution(indexes, a100, ["nvidia.com/gpu"]) == (
        "Bottlerocket's device plugin hands out device indexes, the exporter matches UUIDs: set "
        "settings.kubelet-device-plugins.nvidia.device-id-strategy = uuid"
    )


def test_units():
    assert facts._units({}) == "nothing"
    assert facts._units({"b": 2, "a": 1}) == "1 a, 2 b"


def test_a_deployments_pods_are_admitted_one_by_one():
    """Kueue admits each pod of a Deployment as its own workload: 5 replicas of 1 A10G hold 1 at a time."""
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "ml-dev"},
        "spec": {"replicas": 5, "template": {"spec": {"containers": [container({"nvidia.com/gpu": 1})]}}},
    }
    (w,) = load(yaml.safe_dump(deployment))
    assert facts._total(w) == {"nvidia.com/gpu": 1}
    t = trace(spec_of("dev-aws"), yaml.safe_dump(deployment))
    assert next(x for x in t.layers if x.name == "flavors").detail.startswith("a10g-spot (1 nvidia.com/gpu, nominal")


# ---------------------------------------------------------------------------------------- workloads read

KINDS = (
    "(Pod, Deployment, StatefulSet, Job, JobSet, PyTorchJob, MPIJob, TrainJob, RayJob, RayCluster, LeaderWorkerSet, "
    "Volcano Job)"
)


def _tpl(resources: dict | None = None, **meta) -> dict:
    return {"metadata": meta, "spec": {"containers": [{"name": "c", "resources": {"limits": resources or {}}}]}}


@pytest.mark.parametrize(
    ("doc", "integration", "podsets"),
    [
        ({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": []}}, "pod", [("main", 1)]),
        ({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"template": _tpl()}}, "pod", [("main", 1)]),
        (
            {"apiVersion": "apps/v1", "kind": "StatefulSet", "spec": {"replicas": 3, "template": _tpl()}},
            "pod",
            [("main", 3)],
        ),
        ({"apiVersion": "batch/v1", "kind": "Job", "spec": {"template": _tpl()}}, "batch/job", [("main", 1)]),
        # pods at once: parallelism, capped by completions (which defaults to parallelism)
        (
            {"apiVersion": "batch/v1", "kind": "Job", "spec": {"parallelism": 4, "template": _tpl()}},
            "batch/job",
            [("main", 4)],
        ),
        (
            {"apiVersion": "batch/v1", "kind": "Job", "spec": {"completions": 3, "template": _tpl()}},
            "batch/job",
            [("main", 1)],
        ),
        (
            {"apiVersion": "batch/v1", "kind": "Job", "spec": {"parallelism": 4, "completions": 2, "template": _tpl()}},
            "batch/job",
            [("main", 2)],
        ),
        (
            {
                "apiVersion": "jobset.x-k8s.io/v1alpha2",
                "kind": "JobSet",
                "spec": {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": _tpl()}}}]},
            },
            "jobset.x-k8s.io/jobset",
            [("w", 1)],
        ),
        (
            {
                "apiVersion": "kubeflow.org/v1",
                "kind": "PyTorchJob",
                "spec": {
                    "pytorchReplicaSpecs": {
                        "Worker": {"replicas": 3, "template": _tpl()},
                        "Master": {"template": _tpl()},
                    }
                },
            },
            "kubeflow.org/pytorchjob",
            [("master", 1), ("worker", 3)],
        ),
        (
            {
                "apiVersion": "ray.io/v1",
                "kind": "RayJob",
                "spec": {
                    "rayClusterSpec": {
                        "headGroupSpec": {"template": _tpl()},
                        "workerGroupSpecs": [
                            {"groupName": "gpu", "replicas": 2, "template": _tpl()},
                            {"groupName": "cpu", "template": _tpl()},
                        ],
                    }
                },
            },
            "ray.io/rayjob",
            [("head", 1), ("gpu", 2), ("cpu", 1)],
        ),
        (
            {
                "apiVersion": "batch.volcano.sh/v1alpha1",
                "kind": "Job",
                "spec": {
                    "tasks": [{"name": "t", "replicas": 2, "template": _tpl()}, {"name": "u", "template": _tpl()}]
                },
            },
            None,
            [("t", 2), ("u", 1)],
        ),
    ],
)
def test_each_kind_becomes_its_pod_sets(doc, integration, podsets):
    w = parse({**doc, "metadata": {"name": "n", "namespace": "ns"}})
    assert (w.kind, w.name, w.namespace, w.ref) == (doc["kind"], "n", "ns", f"{doc['kind']} ns/n")
    assert w.integration == integration
    assert [(ps.name, ps.count) for ps in w.podsets] == podsets
    assert w.per_pod_workloads == (doc["kind"] in ("Deployment", "StatefulSet"))


def test_pod_set_metadata_is_the_pod_templates():
    ann = {"kueue.x-k8s.io/podset-required-topology": "kubernetes.io/hostname"}
    w = parse(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "j"},
            "spec": {"template": _tpl(annotations=ann)},
        }
    )
    assert w.podsets[0].metadata == {"annotations": ann}
    for doc in [
        {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"template": _tpl(annotations=ann)}},
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "spec": {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": _tpl(annotations=ann)}}}]},
        },
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "spec": {"pytorchReplicaSpecs": {"Worker": {"template": _tpl(annotations=ann)}}},
        },
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayJob",
            "spec": {
                "rayClusterSpec": {
                    "headGroupSpec": {"template": _tpl(annotations=ann)},
                    "workerGroupSpecs": [{"groupName": "g", "template": _tpl(annotations=ann)}],
                }
            },
        },
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "spec": {"tasks": [{"name": "t", "template": _tpl(annotations=ann)}]},
        },
    ]:
        w = parse({**doc, "metadata": {"name": "n"}})
        assert all(ps.metadata == {"annotations": ann} for ps in w.podsets), doc["kind"]
    # a bare Pod's pod set metadata is the Pod's own
    meta = {"name": "p", "annotations": ann}
    assert parse({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {}}).podsets[0].metadata == meta


def test_defaults_of_a_manifest():
    w = parse({"apiVersion": "v1", "kind": "Pod", "spec": {}})
    assert (w.name, w.namespace, w.labels) == ("?", "default", {})
    v = parse(
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": "v"},
            "spec": {"tasks": [{"name": "t", "template": _tpl()}]},
        }
    )
    assert (v.volcano_queue, v.scheduler_name, v.priority_class) == ("default", "volcano", None)
    v = parse(
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": "v"},
            "spec": {
                "queue": "q",
                "schedulerName": "other",
                "priorityClassName": "high",
                "tasks": [{"name": "t", "template": _tpl()}],
            },
        }
    )
    assert (v.volcano_queue, v.scheduler_name, v.priority_class) == ("q", "other", "high")

    # pod-level names: one schedulerName shared by every pod set, the first priorityClassName
    def pods(*specs):
        return {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": "p"},
            "spec": {"pytorchReplicaSpecs": {f"R{i}": {"template": {"spec": s}} for i, s in enumerate(specs)}},
        }

    assert parse(pods({"schedulerName": "a"}, {"schedulerName": "a"})).scheduler_name == "a"
    assert parse(pods({"schedulerName": "a"}, {"schedulerName": "b"})).scheduler_name is None
    assert parse(pods({}, {"priorityClassName": "p1"}, {"priorityClassName": "p2"})).priority_class == "p1"


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"apiVersion": "v1"}, "a document without 'kind'"),
        (
            {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"}, "spec": {}},
            "StatefulSet s: no pod template",
        ),
        (
            {
                "apiVersion": "jobset.x-k8s.io/v1alpha2",
                "kind": "JobSet",
                "metadata": {"name": "js"},
                "spec": {"replicatedJobs": [{"name": "w"}]},
            },
            "JobSet js replicatedJob w: no pod template",
        ),
        (
            {
                "apiVersion": "kubeflow.org/v1",
                "kind": "PyTorchJob",
                "metadata": {"name": "pt"},
                "spec": {"pytorchReplicaSpecs": {"Worker": {}}},
            },
            "PyTorchJob pt Worker: no pod template",
        ),
        (
            {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "r"}, "spec": {}},
            "RayJob r head: no pod template",
        ),
        (
            {
                "apiVersion": "ray.io/v1",
                "kind": "RayJob",
                "metadata": {"name": "r"},
                "spec": {
                    "rayClusterSpec": {"headGroupSpec": {"template": _tpl()}, "workerGroupSpecs": [{"groupName": "g"}]}
                },
            },
            "RayJob r worker group g: no pod template",
        ),
        (
            {
                "apiVersion": "batch.volcano.sh/v1alpha1",
                "kind": "Job",
                "metadata": {"name": "v"},
                "spec": {"tasks": [{"name": "t"}]},
            },
            "Job v task t: no pod template",
        ),
        (
            {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "v"}, "spec": {}},
            "Job v: no pods",
        ),
        # a kind is read only with its own API group
        (
            {"apiVersion": "example.com/v1", "kind": "Pod", "metadata": {"name": "x"}},
            "Pod (example.com/v1) is not a workload explain traces " + KINDS,
        ),
        (
            {"apiVersion": "v1", "kind": "StatefulSet"},
            "StatefulSet (v1) is not a workload explain traces " + KINDS,
        ),
        (
            {"kind": "JobSet"},
            "JobSet () is not a workload explain traces " + KINDS,
        ),
        (
            {"apiVersion": "v1", "kind": "PyTorchJob"},
            "PyTorchJob (v1) is not a workload explain traces " + KINDS,
        ),
        (
            {"apiVersion": "v1", "kind": "RayJob"},
            "RayJob (v1) is not a workload explain traces " + KINDS,
        ),
        (
            {"apiVersion": "kubeflow.org/v1", "kind": "Job"},
            "Job (kubeflow.org/v1) is not a workload explain traces " + KINDS,
        ),
    ],
)
def test_unreadable_manifests(doc, message):
    with pytest.raises(WorkloadError) as err:
        parse(doc)
    assert str(err.value) == message


def test_unreadable_files():
    with pytest.raises(WorkloadError) as err:
        load("a: [\nb: c\n")
    assert str(err.value).startswith("not YAML: while parsing a flow sequence")
    with pytest.raises(WorkloadError) as err:
        load("apiVersion: v1\nkind: ConfigMap\n")
    assert str(err.value) == f"no workload in it {KINDS}"
    # the unit count is read when the pod is traced
    (w,) = load(
        "kind: Pod\napiVersion: v1\nspec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: half}}}]}\n"
    )
    with pytest.raises(WorkloadError) as err:
        w.podsets[0].devices()
    assert str(err.value) == "nvidia.com/gpu: 'half' is not a whole number of units"


def test_claim_objects_are_read_per_namespace():
    text = yaml.safe_dump_all(
        [
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": "c"},
                "spec": {"devices": {"requests": [1]}},
            },
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaimTemplate",
                "metadata": {"name": "t", "namespace": "a"},
                "spec": {"spec": {"devices": {}}},
            },
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}},
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q", "namespace": "a"}, "spec": {}},
        ]
    )
    p, q = load(text)
    assert p.claim_specs == {("claim", "c"): {"devices": {"requests": [1]}}}
    assert q.claim_specs == {("template", "t"): {"devices": {}}}


@pytest.mark.parametrize(
    ("pod_spec", "claims", "devices"),
    [
        # requests win over limits; containers add up
        (
            {
                "containers": [
                    {"resources": {"limits": {"nvidia.com/gpu": 2}, "requests": {"nvidia.com/gpu": 1}}},
                    {"resources": {"limits": {"nvidia.com/gpu": 3}}},
                ]
            },
            {},
            {"nvidia.com/gpu": 4},
        ),
        ({"containers": [{"resources": {"requests": {"vpc.amazonaws.com/efa": 4}}}]}, {}, {"vpc.amazonaws.com/efa": 4}),
        # init containers run one at a time: the largest counts, beside the app containers' sum
        (
            {
                "initContainers": [
                    {"resources": {"limits": {"nvidia.com/gpu": 3}}},
                    {"resources": {"limits": {"nvidia.com/gpu": 5}}},
                ],
                "containers": [{"resources": {"limits": {"nvidia.com/gpu": 2}}}],
            },
            {},
            {"nvidia.com/gpu": 5},
        ),
        (
            {
                "initContainers": [{"resources": {"limits": {"nvidia.com/gpu": 1}}}],
                "containers": [{"resources": {"limits": {"nvidia.com/gpu": 2}}}],
            },
            {},
            {"nvidia.com/gpu": 2},
        ),
        # not device-plugin resources: plain names, hugepages, kubernetes.io/*
        (
            {"containers": [{"resources": {"limits": {"cpu": "2", "hugepages-2Mi": "1Gi", "kubernetes.io/x": "1"}}}]},
            {},
            {},
        ),
        (
            {"containers": [{"resources": {"limits": {"nvidia.com/gpu": 1}}}]},
            {"gpu.nvidia.com/devices": 2},
            {"gpu.nvidia.com/devices": 2, "nvidia.com/gpu": 1},
        ),
    ],
)
def test_what_a_pod_asks(pod_spec, claims, devices):
    ps = PodSet("main", 1, {}, pod_spec, dict(claims))
    assert ps.devices() == devices
    assert ps.requests() == {r: n for r, n in devices.items() if r != "vpc.amazonaws.com/efa"}
