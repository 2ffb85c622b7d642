"""The pack's shared helpers (policies/common.py), one behaviour at a time, with inputs shaped as the engine hands
them over (camelCase, every number a float, read-only proxies) and every expected value written out by hand.

Every policy leans on these: a quantity misread, a GPU pool not recognised or a pod template missed turns into a
policy that passes what it should stop, so each is pinned here apart from the policies that use it.
"""

from __future__ import annotations

from types import MappingProxyType

import pytest
from pulumi_policy import PolicyResource
from test_policies import _opts

from policies import common

# ------------------------------------------------------------------------------------ value helpers


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("16", 16.0),
        (" 16 ", 16.0),
        ("500m", 0.5),
        ("1.5", 1.5),
        (".5", 0.5),
        ("+2", 2.0),
        ("-2", -2.0),
        ("2k", 2000.0),
        ("3M", 3_000_000.0),
        ("2G", 2e9),
        ("1T", 1e12),
        ("1P", 1e15),
        ("1Ki", 1024.0),
        ("1Mi", 1048576.0),
        ("256Gi", 274877906944.0),
        ("4Ti", 4398046511104.0),
        ("1Pi", 1125899906842624.0),
        (16.0, 16.0),
        (3, 3.0),
        (True, None),
        (False, None),
        (None, None),
        ("", None),
        ("Gi", None),
        ("1Xi", None),
        ("1 Gi", None),
        ("1e3", None),  # exponent form is not read (a unit "e3" is not one of Kubernetes' suffixes)
        (["1"], None),
    ],
)
def test_quantity(value, expected):
    assert common.quantity(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [(4.0, "4"), (0.0, "0"), (2.5, "2.5"), (7, "7"), ("8", "8"), (-3.0, "-3")],
)
def test_num_writes_whole_floats_as_integers(value, expected):
    assert common._num(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, True),
        (False, False),
        ("true", True),
        (" TRUE ", True),
        ("True", True),
        ("false", False),
        ("yes", False),
        ("1", False),
        (1, False),
        (None, False),
    ],
)
def test_truthy(value, expected):
    assert common._truthy(value) is expected


def test_strs_seq_map_get():
    assert common._strs("a") == ["a"]
    assert common._strs(("a", 1, "b", None)) == ["a", "b"]
    assert common._strs(None) == []
    assert common._strs(3) == []
    assert common._seq("abc") == []
    assert common._seq(b"abc") == []
    assert common._seq((1, 2)) == [1, 2]
    assert common._seq({"a": 1}) == []
    proxy = MappingProxyType({"a": 1})
    assert common._map(proxy) is proxy
    assert common._map([("a", 1)]) == {}
    tree = {"spec": {"items": [{"name": "x"}, {"name": "y"}]}}
    assert common._get(tree, "spec", "items", 1, "name") == "y"
    assert common._get(tree, "spec", "items", -1, "name") == "y"
    assert common._get(tree, "spec", "items", -2, "name") == "x"
    assert common._get(tree, "spec", "items", 2, "name") is None
    assert common._get(tree, "spec", "items", -3, "name") is None
    assert common._get(tree, "spec", "missing", "name") is None
    assert common._get(tree, "spec", "items", "name") is None  # a list is not a mapping
    assert common._get({"a": 0}, "a") == 0  # a falsy value is still a value


class _Config:
    def __init__(self, config):
        self._config = config

    def get_config(self):
        return self._config


def test_config_helpers_read_the_policy_config_or_fall_back():
    args = _Config({"maxReplicas": 4.0, "flag": True, "name": "x", "names": ["a", "b"], "one": "a", "empty": []})
    assert common._config_int(args, "maxReplicas", 8) == 4
    assert common._config_int(args, "flag", 8) == 8  # a bool is not a number here
    assert common._config_int(args, "name", 8) == 8
    assert common._config_int(args, "missing", 8) == 8
    assert common._config_strs(args, "names", ("z",)) == ["a", "b"]
    assert common._config_strs(args, "one", ("z",)) == ["a"]
    assert common._config_strs(args, "empty", ("z",)) == []  # an explicit empty list is kept, not defaulted
    assert common._config_strs(args, "missing", ("z", "y")) == ["z", "y"]
    assert common._config_strs(_Config(None), "names", ("z",)) == ["z"]
    assert common._config_int(_Config(None), "maxReplicas", 8) == 8


# ------------------------------------------------------------------------------- Kubernetes helpers


@pytest.mark.parametrize(
    ("api_version", "kind", "token"),
    [
        ("v1", "Namespace", "kubernetes:core/v1:Namespace"),
        ("batch/v1", "Job", "kubernetes:batch/v1:Job"),
        ("karpenter.sh/v1", "NodePool", "kubernetes:karpenter.sh/v1:NodePool"),
    ],
)
def test_k8s_type(api_version, kind, token):
    assert common.k8s_type(api_version, kind) == token


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("kubernetes:batch.volcano.sh/v1alpha1:Job", ("batch.volcano.sh", "Job")),
        ("kubernetes:core/v1:Pod", ("core", "Pod")),
        ("aws:eks/nodeGroup:NodeGroup", ("", "")),
        ("kubernetes:core/v1", ("", "")),
        ("kubernetes:a:b:c", ("", "")),
    ],
)
def test_k8s_group_kind(token, expected):
    assert common.k8s_group_kind(token) == expected


def test_obj_name():
    assert common._obj_name({"metadata": {"name": "q", "namespace": "team-a"}}, "fb") == "team-a/q"
    assert common._obj_name({"metadata": {"name": "q"}}, "fb") == "q"
    assert common._obj_name({"metadata": {"name": "q", "namespace": ""}}, "fb") == "q"
    assert common._obj_name({"metadata": {"name": 3, "namespace": "ns"}}, "fb") == "ns/fb"
    assert common._obj_name({}, "fb") == "fb"
    assert common._labels({"metadata": {"labels": {"a": "b"}}}) == {"a": "b"}
    assert common._labels({"metadata": None}) == {}


# ------------------------------------------------------------------------------------ GPU detection


@pytest.mark.parametrize(
    ("instance_type", "gpu"),
    [
        ("p5.48xlarge", True),
        ("p4d.24xlarge", True),
        ("g6e.xlarge", True),
        ("g5g.xlarge", True),
        ("gr6.4xlarge", True),
        ("g3s.xlarge", True),
        ("p2.xlarge", True),
        ("g4ad.xlarge", False),  # AMD Radeon Pro V520
        ("g2.2xlarge", False),  # no pattern match: g2 predates the families with NVIDIA drivers the platform runs
        ("m5.xlarge", False),
        ("c7g.large", False),
        ("inf2.xlarge", False),
        ("trn1.32xlarge", False),
        ("p1.xlarge", False),
        ("xp5.48xlarge", False),
    ],
)
def test_aws_gpu_instance(instance_type, gpu):
    assert common.aws_gpu_instance(instance_type) is gpu


def test_aws_gpu_family():
    assert common.aws_gpu_family("p5") is True
    assert common.aws_gpu_family("g6e") is True
    assert common.aws_gpu_family("g4ad") is False
    assert common.aws_gpu_family("m5") is False


@pytest.mark.parametrize(
    ("machine", "gpu"),
    [
        ("a2-highgpu-1g", True),
        ("a3-megagpu-8g", True),
        ("a4-highgpu-8g", True),
        ("a4x-highgpu-4g", True),
        ("g2-standard-4", True),
        ("g4-standard-48", True),
        ("n1-standard-8", False),
        ("e2-standard-4", False),
        ("a2", False),
        ("xa2-highgpu-1g", False),
    ],
)
def test_gcp_gpu_machine(machine, gpu):
    assert common.gcp_gpu_machine(machine) is gpu


def test_eks_gpu_reason():
    assert common.eks_gpu_reason({"amiType": "AL2023_x86_64_NVIDIA"}) == "amiType AL2023_x86_64_NVIDIA"
    assert common.eks_gpu_reason({"amiType": "bottlerocket_x86_64_nvidia"}) == "amiType bottlerocket_x86_64_nvidia"
    assert (
        common.eks_gpu_reason({"amiType": "AL2023_x86_64_STANDARD", "instanceTypes": ["m5.large", "g6.xlarge"]})
        == "instance type g6.xlarge"
    )
    assert common.eks_gpu_reason({"instanceTypes": "p5.48xlarge"}) == "instance type p5.48xlarge"
    assert common.eks_gpu_reason({"labels": {"nvidia.com/gpu.present": "True"}}) == "label nvidia.com/gpu.present=true"
    assert common.eks_gpu_reason({"labels": {"gpu-platform/pool": "a100"}}) == "label gpu-platform/pool=a100"
    assert common.eks_gpu_reason({"labels": {"nvidia.com/gpu.present": "false", "gpu-platform/pool": ""}}) is None
    assert common.eks_gpu_reason({"amiType": "AL2023_x86_64_STANDARD", "instanceTypes": ["m5.large"]}) is None


def test_gke_gpu_reason():
    acc = {"nodeConfig": {"guestAccelerators": [{"type": "nvidia-l4", "count": 1.0}], "machineType": "n1-standard-8"}}
    assert common.gke_gpu_reason(acc) == "guest accelerator nvidia-l4"
    unknown = {"nodeConfig": {"guestAccelerators": [{"type": "nvidia-t4"}]}}
    assert common.gke_gpu_reason(unknown) == "guest accelerator nvidia-t4"  # a count not yet known counts
    zero = {"nodeConfig": {"guestAccelerators": [{"type": "nvidia-t4", "count": 0.0}], "machineType": "n1-standard-8"}}
    assert common.gke_gpu_reason(zero) is None
    assert common.gke_gpu_reason({"nodeConfig": {"machineType": "a3-highgpu-8g"}}) == "machine type a3-highgpu-8g"
    labelled = {"nodeConfig": {"machineType": "n2-standard-8", "labels": {"gpu-platform/pool": "l4"}}}
    assert common.gke_gpu_reason(labelled) == "label gpu-platform/pool=l4"
    assert common.gke_gpu_reason({"nodeConfig": {"machineType": "e2-standard-4"}}) is None
    assert common.gke_gpu_reason({}) is None


def _np(requirements, labels=None):
    return {"spec": {"template": {"metadata": {"labels": labels or {}}, "spec": {"requirements": requirements}}}}


def _req(key, op, *values):
    return {"key": key, "operator": op, "values": list(values)}


@pytest.mark.parametrize(
    ("requirements", "labels", "expected"),
    [
        (
            [_req("karpenter.k8s.aws/instance-gpu-count", "Gt", "0")],
            None,
            "requirement on karpenter.k8s.aws/instance-gpu-count",
        ),
        (
            [_req("karpenter.k8s.aws/instance-gpu-manufacturer", "In", "nvidia")],
            None,
            "requirement on karpenter.k8s.aws/instance-gpu-manufacturer",
        ),
        (
            [_req("karpenter.k8s.aws/instance-gpu-name", "Exists")],
            None,
            "requirement on karpenter.k8s.aws/instance-gpu-name",
        ),
        # "no GPUs" is not a GPU pool; a list that allows 1 is
        ([_req("karpenter.k8s.aws/instance-gpu-count", "In", "0")], None, None),
        (
            [_req("karpenter.k8s.aws/instance-gpu-count", "In", "0", "1")],
            None,
            "requirement on karpenter.k8s.aws/instance-gpu-count",
        ),
        (
            [_req("karpenter.k8s.aws/instance-gpu-count", "Gt", "0")] * 1,
            None,
            "requirement on karpenter.k8s.aws/instance-gpu-count",
        ),
        # exclusions never make a pool a GPU one
        ([_req("karpenter.k8s.aws/instance-gpu-count", "NotIn", "0")], None, None),
        ([_req("karpenter.k8s.aws/instance-gpu-count", "DoesNotExist")], None, None),
        ([_req("karpenter.k8s.aws/instance-gpu-count", "Lt", "1")], None, None),
        ([_req("karpenter.k8s.aws/instance-family", "In", "m5", "g6e")], None, "instance family g6e"),
        ([_req("karpenter.k8s.aws/instance-family", "In", "m5", "c7g")], None, None),
        ([_req("karpenter.k8s.aws/instance-family", "NotIn", "g6e")], None, None),
        (
            [_req("node.kubernetes.io/instance-type", "In", "m5.large", "p5.48xlarge")],
            None,
            "instance type p5.48xlarge",
        ),
        ([_req("beta.kubernetes.io/instance-type", "In", "g6.xlarge")], None, "instance type g6.xlarge"),
        ([_req("node.kubernetes.io/instance-type", "In", "m5.large")], None, None),
        ([_req("node.kubernetes.io/instance-type", "NotIn", "p5.48xlarge")], None, None),
        # the first requirement that decides wins
        (
            [
                _req("karpenter.k8s.aws/instance-family", "In", "p5"),
                _req("karpenter.k8s.aws/instance-gpu-count", "Gt", "0"),
            ],
            None,
            "instance family p5",
        ),
        ([{"operator": "In", "values": ["p5"]}], None, None),
        ([], {"gpu-platform/pool": "spot"}, "label gpu-platform/pool=spot"),
        ([_req("karpenter.sh/capacity-type", "In", "spot")], None, None),
    ],
)
def test_karpenter_gpu_reason(requirements, labels, expected):
    assert common.karpenter_gpu_reason(_np(requirements, labels)) == expected


def test_karpenter_capacity_types():
    assert common.karpenter_capacity_types(_np([])) == {"on-demand"}  # Karpenter's default
    spot = _np([_req("karpenter.sh/capacity-type", "In", "spot", "on-demand")])
    assert common.karpenter_capacity_types(spot) == {"spot", "on-demand"}
    not_in = _np([_req("karpenter.sh/capacity-type", "NotIn", "spot")])
    assert common.karpenter_capacity_types(not_in) == {"on-demand", "reserved"}


@pytest.mark.parametrize(
    ("requirements", "expected"),
    [
        # spot-only written as an exclusion: the values the key can take are spot, on-demand and reserved
        # (upstream/karpenter/examples/docs/nodepool.full-reference.yaml)
        ([_req("karpenter.sh/capacity-type", "NotIn", "on-demand")], {"spot", "reserved"}),
        ([_req("karpenter.sh/capacity-type", "NotIn", "on-demand", "reserved")], {"spot"}),
        ([_req("karpenter.sh/capacity-type", "Exists")], {"spot", "on-demand", "reserved"}),
        ([_req("karpenter.sh/capacity-type", "DoesNotExist")], set()),
        # requirements are ANDed: each one narrows what the others allow
        (
            [
                _req("karpenter.sh/capacity-type", "In", "spot", "on-demand"),
                _req("karpenter.sh/capacity-type", "NotIn", "on-demand"),
            ],
            {"spot"},
        ),
        (
            [_req("karpenter.sh/capacity-type", "Exists"), _req("karpenter.sh/capacity-type", "In", "reserved")],
            {"reserved"},
        ),
        # an operator Karpenter does not take on this key (Gt/Lt are numeric) narrows nothing
        ([_req("karpenter.sh/capacity-type", "Gt", "1")], {"on-demand"}),
        ([_req("karpenter.sh/instance-type", "NotIn", "on-demand")], {"on-demand"}),
    ],
)
def test_karpenter_capacity_types_every_operator(requirements, expected):
    """Karpenter intersects every requirement on karpenter.sh/capacity-type, whatever its operator, so a spot pool
    written as NotIn [on-demand] is a spot pool (the policies that judge spot pools must see it)."""
    assert common.karpenter_capacity_types(_np(requirements)) == expected


@pytest.mark.parametrize(
    ("name", "gpu"),
    [
        ("nvidia.com/gpu", True),
        ("nvidia.com/gpu.shared", True),
        ("nvidia.com/mig-1g.10gb", True),
        ("gpu.nvidia.com/devices", True),
        ("mig.nvidia.com/devices", True),
        ("cpu", False),
        ("memory", False),
        ("amd.com/gpu", False),
        ("nvidia.com/hostdev", False),
        (None, False),
        (3, False),
    ],
)
def test_is_gpu_quota_resource(name, gpu):
    assert common.is_gpu_quota_resource(name) is gpu


# ------------------------------------------------------------------------------------ pod templates

POD = {"containers": [{"name": "main"}]}


def _where(templates):
    return [(t.where, t.replicas) for t in templates]


@pytest.mark.parametrize(
    ("token", "spec", "expected"),
    [
        ("kubernetes:core/v1:Pod", POD, [("spec", 1)]),
        ("kubernetes:apps/v1:Deployment", {"replicas": 3.0, "template": {"spec": POD}}, [("spec.template.spec", 3)]),
        ("kubernetes:apps/v1:StatefulSet", {"template": {"spec": POD}}, [("spec.template.spec", 1)]),
        ("kubernetes:apps/v1:ReplicaSet", {"replicas": 2.0, "template": {"spec": POD}}, [("spec.template.spec", 2)]),
        ("kubernetes:apps/v1:DaemonSet", {"template": {"spec": POD}}, [("spec.template.spec", 1)]),
        ("kubernetes:batch/v1:Job", {"parallelism": 4.0, "template": {"spec": POD}}, [("spec.template.spec", 4)]),
        ("kubernetes:batch/v1:Job", {"parallelism": True, "template": {"spec": POD}}, [("spec.template.spec", 1)]),
        (
            "kubernetes:batch/v1:CronJob",
            {"jobTemplate": {"spec": {"parallelism": 2.0, "template": {"spec": POD}}}},
            [("spec.jobTemplate.spec.template.spec", 2)],
        ),
        (
            "kubernetes:batch.volcano.sh/v1alpha1:Job",
            {"tasks": [{"name": "master", "replicas": 1.0, "template": {"spec": POD}}, {"template": {"spec": POD}}]},
            [("spec.tasks[master].template.spec", 1), ("spec.tasks[1].template.spec", 0)],
        ),
        (
            "kubernetes:kubeflow.org/v1:PyTorchJob",
            {
                "pytorchReplicaSpecs": {
                    "Worker": {"replicas": 3.0, "template": {"spec": POD}},
                    "Master": {"template": {"spec": POD}},
                },
                "runPolicy": {"suspend": True},
            },
            [
                ("spec.pytorchReplicaSpecs.Master.template.spec", 1),
                ("spec.pytorchReplicaSpecs.Worker.template.spec", 3),
            ],
        ),
        (
            "kubernetes:kubeflow.org/v2beta1:MPIJob",
            {"mpiReplicaSpecs": {"Launcher": {"replicas": 1.0, "template": {"spec": POD}}}},
            [("spec.mpiReplicaSpecs.Launcher.template.spec", 1)],
        ),
        (
            "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet",
            {
                "replicatedJobs": [
                    {
                        "name": "workers",
                        "replicas": 2.0,
                        "template": {"spec": {"parallelism": 4.0, "template": {"spec": POD}}},
                    },
                    {"template": {"spec": {"template": {"spec": POD}}}},
                ]
            },
            [
                ("spec.replicatedJobs[workers].template.spec.template.spec", 8),
                ("spec.replicatedJobs[1].template.spec.template.spec", 1),
            ],
        ),
        ("kubernetes:kubeflow.org/v1:Notebook", {"template": {"spec": POD}}, []),
        ("kubernetes:apps/v1:ControllerRevision", {"template": {"spec": POD}}, []),
        ("kubernetes:batch/v1:Pod", POD, []),
        ("kubernetes:core/v1:ConfigMap", {}, []),
    ],
)
def test_pod_templates(token, spec, expected):
    templates = common.pod_templates(token, {"spec": spec})
    assert _where(templates) == expected
    for t in templates:
        assert t.spec == POD


def test_gpu_resources_and_containers():
    gpu = {"name": "train", "resources": {"limits": {"nvidia.com/gpu": 1.0, "cpu": "4"}}}
    shared = {
        "name": "s",
        "resources": {"requests": {"nvidia.com/gpu.shared": 1.0}, "limits": {"nvidia.com/mig-1g.10gb": 1.0}},
    }
    claim = {"name": "dra", "resources": {"claims": [{"name": "gpu"}]}}
    cpu = {"name": "side", "resources": {"limits": {"cpu": "1"}}}
    assert common.gpu_resources(gpu) == ["nvidia.com/gpu"]
    assert common.gpu_resources(shared) == ["nvidia.com/gpu.shared", "nvidia.com/mig-1g.10gb"]
    assert common.gpu_resources(cpu) == []
    assert common.gpu_resources({}) == []
    pod = {"initContainers": [claim, cpu], "containers": [cpu, gpu]}
    assert [c["name"] for c in common.gpu_containers(pod)] == ["dra", "train"]
    assert common.gpu_containers({"containers": [cpu]}) == []


# ------------------------------------------------------------------------------------ GPU pools


def _res(token, name, props):
    return PolicyResource(token, props, f"urn:{name}", name, _opts(), None, None, [], {})


def test_gpu_pools_names_and_capacity():
    resources = [
        _res(
            common.EKS_NODE_GROUP,
            "ng-a",
            {"amiType": "AL2023_x86_64_NVIDIA", "labels": {"gpu-platform/pool": "a100"}, "capacityType": "SPOT"},
        ),
        _res(common.EKS_NODE_GROUP, "ng-b", {"instanceTypes": ["g6.xlarge"], "nodeGroupName": "l4-ng"}),
        _res(common.EKS_NODE_GROUP, "ng-c", {"instanceTypes": ["g6.xlarge"], "capacityType": "on_demand"}),
        _res(common.EKS_NODE_GROUP, "system", {"instanceTypes": ["m5.large"], "capacityType": "SPOT"}),
        _res(
            common.GKE_NODE_POOL, "np-a", {"name": "h100", "nodeConfig": {"machineType": "a3-highgpu-8g", "spot": True}}
        ),
        _res(
            common.GKE_NODE_POOL,
            "np-b",
            {
                "nodeConfig": {
                    "machineType": "g2-standard-4",
                    "preemptible": True,
                    "labels": {"gpu-platform/pool": "l4"},
                }
            },
        ),
        _res(common.GKE_NODE_POOL, "np-c", {"nodeConfig": {"machineType": "g2-standard-4", "spot": "true"}}),
        _res(common.GKE_NODE_POOL, "np-cpu", {"nodeConfig": {"machineType": "e2-standard-4", "spot": True}}),
        _res(
            common.KARPENTER_NODE_POOL,
            "kp-a",
            {
                "metadata": {"name": "spot-gpu"},
                **_np(
                    [
                        _req("karpenter.sh/capacity-type", "In", "spot"),
                        _req("karpenter.k8s.aws/instance-family", "In", "g6"),
                    ]
                ),
            },
        ),
        _res(
            common.KARPENTER_NODE_POOL,
            "kp-b",
            _np([_req("karpenter.k8s.aws/instance-gpu-count", "Gt", "0")], {"gpu-platform/pool": "burst"}),
        ),
        _res(common.KARPENTER_NODE_POOL, "kp-c", _np([_req("karpenter.k8s.aws/instance-gpu-count", "Gt", "0")])),
        _res(common.KARPENTER_NODE_POOL, "kp-cpu", _np([_req("karpenter.sh/capacity-type", "In", "spot")])),
        _res(common.CONFIG_MAP, "cm", {"labels": {"gpu-platform/pool": "x"}}),
    ]
    pools = [(p.pool, p.resource.name, sorted(p.capacity)) for p in common.gpu_pools(resources)]
    assert pools == [
        ("a100", "ng-a", ["spot"]),
        ("l4-ng", "ng-b", ["on-demand"]),
        ("ng-c", "ng-c", ["on-demand"]),
        ("h100", "np-a", ["spot"]),
        ("l4", "np-b", ["spot"]),
        ("np-c", "np-c", ["on-demand"]),  # spot is a bool in the provider's inputs; the string "true" is not one
        ("spot-gpu", "kp-a", ["spot"]),
        ("burst", "kp-b", ["on-demand"]),
        ("kp-c", "kp-c", ["on-demand"]),
    ]


def test_default_policy_config_comes_from_the_pinned_charts():
    # the GPU Operator and dcgm-exporter namespaces (components/data/versions.py), sorted, no duplicates
    assert common.DEFAULT_PRIVILEGED_NAMESPACES == tuple(
        sorted({common.GPU_OPERATOR_CHART["namespace"], common.DCGM_EXPORTER_CHART["namespace"]})
    )
    assert "gpu-operator" in common.DEFAULT_PRIVILEGED_NAMESPACES
    assert common.DEFAULT_MAX_TIME_SLICING_REPLICAS == 8


@pytest.mark.parametrize(
    ("requirement", "expected"),
    [
        (_req("karpenter.k8s.aws/instance-family", "In", "m5", "g5", "p4d"), "instance family g5"),
        (_req("node.kubernetes.io/instance-type", "In", "g6.xlarge", "p5.48xlarge"), "instance type g6.xlarge"),
    ],
)
def test_karpenter_gpu_reason_names_the_first_gpu_value(requirement, expected):
    """Of several GPU values in one requirement the reason names the first one listed, as the user wrote it."""
    assert common.karpenter_gpu_reason(_np([requirement], None)) == expected


def test_obj_name_ignores_a_namespace_that_is_not_a_string():
    """Only a non-empty string namespace qualifies the name (a malformed number is no namespace)."""
    assert common._obj_name({"metadata": {"name": "q", "namespace": 5.0}}, "fb") == "q"


@pytest.mark.parametrize(
    "token",
    ["kubernetes:example.com/v1:PyTorchJob", "kubernetes:kubeflow.org/v1:Notebook"],
)
def test_pod_templates_reads_replica_specs_of_kubeflow_training_jobs_only(token):
    """Only kubeflow.org's training-job kinds carry *ReplicaSpecs: the same kind name in another API group, or
    another kubeflow.org kind, is not read as one."""
    spec = {"pytorchReplicaSpecs": {"Worker": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c"}]}}}}}
    assert common.pod_templates(token, {"spec": spec}) == []


@pytest.mark.parametrize("family", ["p3", "g3", "gr6"])
def test_aws_gpu_family_outside_the_catalog(family):
    """An NVIDIA family the platform's catalog does not list (older p3/g3, the gr6 variant) is still a GPU family:
    Karpenter pools may ask for any family, not only the ones the platform offers."""
    assert family not in common.AWS_GPU_INSTANCE_FAMILIES
    assert common.aws_gpu_family(family) is True


@pytest.mark.parametrize(
    ("requirements", "expected"),
    [
        (
            [
                _req("karpenter.k8s.aws/instance-gpu-count", "NotIn", "0"),
                _req("karpenter.k8s.aws/instance-family", "In", "p5"),
            ],
            "instance family p5",
        ),
        (
            [
                _req("karpenter.k8s.aws/instance-gpu-count", "In", "0"),
                _req("karpenter.k8s.aws/instance-family", "In", "g6"),
            ],
            "instance family g6",
        ),
        (
            [{"operator": "In", "values": ["x"]}, _req("node.kubernetes.io/instance-type", "In", "g6.xlarge")],
            "instance type g6.xlarge",
        ),
    ],
)
def test_karpenter_gpu_reason_reads_past_requirements_that_decide_nothing(requirements, expected):
    """An exclusion, a "no GPUs" count or a keyless requirement says nothing; the requirements after it still
    make the pool a GPU one."""
    assert common.karpenter_gpu_reason(_np(requirements, None)) == expected


@pytest.mark.parametrize(
    "token",
    ["kubernetes:example.com/v1:Job", "kubernetes:example.com/v1:JobSet"],
)
def test_pod_templates_of_look_alike_kinds_in_other_groups_are_none(token):
    """A Job or JobSet kind of another API group is not Volcano's or JobSet's: its tasks / replicatedJobs are not
    read as pod templates."""
    pod = {"spec": {"containers": [{"name": "c"}]}}
    spec = {
        "tasks": [{"name": "t", "replicas": 2, "template": pod}],
        "replicatedJobs": [{"template": {"spec": {"template": pod}}}],
    }
    assert common.pod_templates(token, {"spec": spec}) == []


def test_kubeflow_pod_templates_read_past_other_spec_fields():
    """Fields like elasticPolicy or runPolicy sit beside the *ReplicaSpecs (sorted before and after them); every
    replica spec is still read."""
    pod = {"spec": {"containers": [{"name": "c"}]}}
    spec = {
        "elasticPolicy": {"minReplicas": 1},
        "pytorchReplicaSpecs": {"Worker": {"replicas": 2.0, "template": pod}},
        "runPolicy": {},
    }
    assert common.pod_templates("kubernetes:kubeflow.org/v1:PyTorchJob", {"spec": spec}) == [
        common.PodTemplate("spec.pytorchReplicaSpecs.Worker.template.spec", pod["spec"], 2)
    ]
