"""The capacity and monitoring policies (policies/capacity_policies.py, policies/monitoring_policies.py) one
behaviour at a time, with the exact message a user reads; inputs shaped as the engine hands them over
(test_policies.check / check_stack: camelCase, numbers as floats, read-only proxies).

Verdicts follow Karpenter v1 (capacity-type requirement defaults to on-demand; consolidateAfter / expireAfter are
durations or "Never"), the k8s-device-plugin time-slicing config, GKE's gpuSharingConfig and the GPU Operator's
values (dcgmExporter.enabled defaults to true).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from test_policies import check, check_stack

from policies import capacity_policies, common, monitoring_policies

KNP = common.KARPENTER_NODE_POOL
GPU_REQ = {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["h100"]}


def _capacity(*types: str) -> dict[str, Any]:
    return {"key": "karpenter.sh/capacity-type", "operator": "In", "values": list(types)}


def _nodepool(requirements: list[dict], consolidate: Any = "15m", expire: Any = "720h", **spec: Any) -> dict:
    template_spec: dict[str, Any] = {"requirements": requirements}
    if expire is not None:
        template_spec["expireAfter"] = expire
    out: dict[str, Any] = {"template": {"spec": template_spec}, **spec}
    if consolidate is not None:
        out["disruption"] = {"consolidateAfter": consolidate}
    return {"metadata": {"name": "np"}, "spec": out}


# ------------------------------------------------------------------------------------ spot-gpu-disruption


def _spot(props: dict) -> list[str]:
    return check(capacity_policies.spot_gpu_disruption, KNP, props)


def _consolidate_msg(value: Any) -> str:
    return (
        f"spot GPU NodePool: spec.disruption.consolidateAfter is {value!r}; set a duration so idle or underused "
        "spot GPU nodes are consolidated away."
    )


def _expire_msg(value: Any) -> str:
    return (
        f"spot GPU NodePool: spec.template.spec.expireAfter is {value!r}; set a duration so nodes are replaced (AMI "
        "and driver updates reach them)."
    )


def test_spot_gpu_pool_with_durations_passes():
    """Durations for both fields: spot GPU nodes are consolidated and replaced."""
    assert _spot(_nodepool([GPU_REQ, _capacity("spot")])) == []


@pytest.mark.parametrize(("consolidate", "expire"), [(None, None), ("Never", "Never"), (900.0, 720.0)])
def test_spot_gpu_pool_without_durations_is_told_both(consolidate, expire):
    """Unset, "Never" or a non-string (not a Karpenter duration) leaves spot GPU nodes unconsolidated and never
    replaced: one message per field, naming the value."""
    assert _spot(_nodepool([GPU_REQ, _capacity("spot")], consolidate, expire)) == [
        _consolidate_msg(consolidate),
        _expire_msg(expire),
    ]


def test_spot_gpu_pool_each_field_alone():
    """Each field is judged on its own."""
    assert _spot(_nodepool([GPU_REQ, _capacity("spot")], consolidate="Never")) == [_consolidate_msg("Never")]
    assert _spot(_nodepool([GPU_REQ, _capacity("spot")], expire="Never")) == [_expire_msg("Never")]


def test_spot_disruption_applies_to_spot_gpu_karpenter_pools_only():
    """A pool that may launch spot (alone or with on-demand) is judged; on-demand only (the default without a
    capacity-type requirement), CPU pools and other resource types are not."""
    assert len(_spot(_nodepool([GPU_REQ, _capacity("on-demand", "spot")], "Never"))) == 1
    # spot written as an exclusion of on-demand, or allowed by Exists, is still spot
    not_on_demand = {"key": "karpenter.sh/capacity-type", "operator": "NotIn", "values": ["on-demand"]}
    assert _spot(_nodepool([GPU_REQ, not_on_demand], "Never")) == [_consolidate_msg("Never")]
    exists = {"key": "karpenter.sh/capacity-type", "operator": "Exists"}
    assert _spot(_nodepool([GPU_REQ, exists], expire="Never")) == [_expire_msg("Never")]
    assert _spot(_nodepool([GPU_REQ, _capacity("on-demand")], "Never", "Never")) == []
    assert _spot(_nodepool([GPU_REQ], "Never", "Never")) == []
    cpu = {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["m"]}
    assert _spot(_nodepool([cpu, _capacity("spot")], "Never", "Never")) == []
    assert check(capacity_policies.spot_gpu_disruption, common.EKS_NODE_GROUP, {"capacityType": "SPOT"}) == []


# ------------------------------------------------------------------------------------ karpenter-gpu-limit


def _limit(limits: dict | None) -> list[str]:
    props = _nodepool([GPU_REQ])
    if limits is not None:
        props["spec"]["limits"] = limits
    return check(capacity_policies.karpenter_gpu_limit, KNP, props)


NO_LIMIT = (
    "Karpenter GPU NodePool (requirement on karpenter.k8s.aws/instance-gpu-name) sets no "
    "spec.limits[nvidia.com/gpu]: nothing caps how many GPUs it may launch. Set the limit to the pool's GPU budget."
)


@pytest.mark.parametrize(
    ("limits", "expected"),
    [
        (None, [NO_LIMIT]),
        ({"cpu": "100"}, [NO_LIMIT]),
        ({"nvidia.com/gpu": "32"}, []),
        ({"nvidia.com/gpu": 32.0}, []),
        ({"nvidia.com/gpu": "0"}, []),  # 0 is a cap (no GPUs)
        ({"nvidia.com/gpu": "many"}, ["spec.limits[nvidia.com/gpu] is 'many', not a quantity"]),
    ],
)
def test_karpenter_gpu_limit(limits, expected):
    """A GPU NodePool needs a quantity under spec.limits[nvidia.com/gpu]; other limits do not cap GPUs."""
    assert _limit(limits) == expected


def test_karpenter_gpu_limit_ignores_cpu_pools_and_other_types():
    """CPU NodePools and non-Karpenter resources are not judged."""
    cpu = _nodepool([{"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "In", "values": ["0"]}])
    assert check(capacity_policies.karpenter_gpu_limit, KNP, cpu) == []
    assert check(capacity_policies.karpenter_gpu_limit, common.EKS_NODE_GROUP, {"amiType": "AL2_x86_64_GPU"}) == []


# ------------------------------------------------------------------------------------ gpu-pool-taint


def _taint_msg(reason: str, effect: str, where: str) -> str:
    return (
        f"GPU pool ({reason}) has no nvidia.com/gpu taint with effect {effect} in {where}: pods that do not ask for "
        f"GPUs could land on (and hold) its GPU nodes. Add {{key: nvidia.com/gpu, value: present, effect: {effect}}}."
    )


def test_gpu_pool_taint_eks_uses_the_eks_effect_spelling():
    """EKS spells the effect NO_SCHEDULE; the Kubernetes spelling or another key does not count there."""
    p = capacity_policies.gpu_pool_taint
    ng = {"instanceTypes": ["p5.48xlarge"]}
    ok = {**ng, "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]}
    assert check(p, common.EKS_NODE_GROUP, ok) == []
    for taints in ([{"key": "nvidia.com/gpu", "effect": "NoSchedule"}], [{"key": "gpu", "effect": "NO_SCHEDULE"}]):
        assert check(p, common.EKS_NODE_GROUP, {**ng, "taints": taints}) == [
            _taint_msg("instance type p5.48xlarge", "NO_SCHEDULE", "taints")
        ]


def test_gpu_pool_taint_gke_reads_node_config_taints():
    """GKE taints live in nodeConfig.taints (NO_SCHEDULE); a top-level taints field is not GKE's."""
    p = capacity_policies.gpu_pool_taint
    taint = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]
    assert check(p, common.GKE_NODE_POOL, {"nodeConfig": {"machineType": "a2-highgpu-1g", "taints": taint}}) == []
    assert check(p, common.GKE_NODE_POOL, {"nodeConfig": {"machineType": "a2-highgpu-1g"}, "taints": taint}) == [
        _taint_msg("machine type a2-highgpu-1g", "NO_SCHEDULE", "nodeConfig.taints")
    ]


def test_gpu_pool_taint_karpenter_uses_the_kubernetes_spelling():
    """Karpenter NodePools carry Kubernetes taints (NoSchedule) in spec.template.spec.taints."""
    p = capacity_policies.gpu_pool_taint
    props = _nodepool([GPU_REQ])
    assert check(p, KNP, props) == [
        _taint_msg("requirement on karpenter.k8s.aws/instance-gpu-name", "NoSchedule", "spec.template.spec.taints")
    ]
    props["spec"]["template"]["spec"]["taints"] = [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]
    assert check(p, KNP, props) == []
    assert check(p, common.NAMESPACE, {}) == []


# ------------------------------------------------------------------------------------ time-slicing-replicas


def _plugin_config(replicas: Any, name: str = "nvidia.com/gpu") -> str:
    return f"version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: {name}\n      replicas: {replicas}\n"


@pytest.mark.parametrize(("replicas", "flagged"), [(8, False), (9, True), ("true", False), ("'12'", False)])
def test_time_slicing_bound_is_inclusive(replicas, flagged):
    """The default bound of 8 allows 8 replicas and refuses 9; a replicas value that is no number is not judged."""
    cm = {"data": {"cfg": _plugin_config(replicas)}}
    got = check(capacity_policies.time_slicing_replicas, common.CONFIG_MAP, cm)
    assert got == (
        [
            "data[cfg]: time-slicing nvidia.com/gpu into 9 replicas, above the bound of 8: each replica gets a 1/9 "
            "time slice and shares all GPU memory."
        ]
        if flagged
        else []
    )


def test_time_slicing_reads_helm_v4_charts_and_every_resource():
    """GPU Operator values in a v4 Chart are read like a Release's; each over-sliced resource is reported."""
    data = {"a": _plugin_config(12) + "    - name: nvidia.com/mig-1g.10gb\n      replicas: 4\n"}
    data["b"] = _plugin_config(10, "nvidia.com/mig-2g.20gb")
    props = {"values": {"devicePlugin": {"config": {"data": data}}}}
    assert check(capacity_policies.time_slicing_replicas, common.HELM_CHART_V4, props, {"maxReplicas": 4}) == [
        "values.devicePlugin.config.data[a]: time-slicing nvidia.com/gpu into 12 replicas, above the bound of 4: each "
        "replica gets a 1/12 time slice and shares all GPU memory.",
        "values.devicePlugin.config.data[b]: time-slicing nvidia.com/mig-2g.20gb into 10 replicas, above the bound "
        "of 4: each replica gets a 1/10 time slice and shares all GPU memory.",
    ]


# the key "sharing" written as a double-quoted YAML 1.1 scalar: escapes for letters, escaped line breaks between them
ESCAPED_SHARING_KEYS = [
    r'"\x73haring"',
    r'"\u0073h\x61rin\x67"',
    r'"\U00000073\x68\x61\x72\x69\x6E\x67"',
    '"shar\\\n   ing"',
    '"s\\\r\n\t\\\n\\x68aring"',
]


@pytest.mark.parametrize("key", ESCAPED_SHARING_KEYS)
def test_time_slicing_judges_a_config_whatever_escapes_spell_its_sharing_key(key):
    """PyYAML reads each spelling as the key ``sharing``, so the config is parsed and its replicas judged (the
    filter that spares other values a YAML parse must let every spelling through)."""
    text = _plugin_config(12).replace("sharing:", f"? {key}\n:")
    assert set(yaml.safe_load(text)) == {"version", "sharing"}
    got = check(capacity_policies.time_slicing_replicas, common.CONFIG_MAP, {"data": {"cfg": text}})
    assert [m.split(":")[0] for m in got] == ["data[cfg]"]


def test_time_slicing_does_not_parse_a_dashboard_for_its_backslashes(monkeypatch):
    """A Grafana dashboard is JSON with backslashes in its queries (17 kB at 200 tenants, the slowest parse of the
    policy): with no escape sequence that could spell ``sharing``, it is not parsed as YAML."""
    parsed: list[str] = []
    load = yaml.load
    monkeypatch.setattr(yaml, "load", lambda text, Loader: parsed.append(text) or load(text, Loader=Loader))
    query = 'sum by (pod) (DCGM_FI_DEV_GPU_UTIL{pod=~\\"train-.+\\"}) / \\x73 shar\\x69'
    dashboard = json.dumps({"panels": [{"targets": [{"expr": query}], "title": "GPU share"}]})
    data = {"dashboard.json": dashboard, "cfg": _plugin_config(4)}
    assert check(capacity_policies.time_slicing_replicas, common.CONFIG_MAP, {"data": data}) == []
    assert parsed == [data["cfg"]]


def test_gke_time_sharing_only_counts_time_sharing():
    """Only the TIME_SHARING strategy splits a GPU in time; MPS or a missing count is not judged here."""
    p = capacity_policies.time_slicing_replicas

    def pool(strategy: str | None, n: Any) -> dict:
        sharing: dict[str, Any] = {"maxSharedClientsPerGpu": n}
        if strategy:
            sharing["gpuSharingStrategy"] = strategy
        acc = {"type": "nvidia-l4", "count": 1, "gpuSharingConfig": sharing}
        return {"nodeConfig": {"machineType": "g2-standard-8", "guestAccelerators": [acc]}}

    assert check(p, common.GKE_NODE_POOL, pool("MPS", 48)) == []
    assert check(p, common.GKE_NODE_POOL, pool(None, 48)) == []
    assert check(p, common.GKE_NODE_POOL, pool("TIME_SHARING", None)) == []
    assert check(p, common.GKE_NODE_POOL, pool("TIME_SHARING", 8)) == []
    assert check(p, common.GKE_NODE_POOL, pool("TIME_SHARING", 9)) == [
        "GKE time-sharing gives 9 clients per GPU (maxSharedClientsPerGpu), above the bound of 8: each gets a 1/9 "
        "time slice with no memory isolation."
    ]


# ------------------------------------------------------------------------------------ dcgm-monitoring


def _release(name: str, chart: str, values: dict | None = None, type_: str = common.HELM_RELEASE):
    props: dict[str, Any] = {"chart": chart, "version": "1.0.0"}
    if values is not None:
        props["values"] = values
    return (type_, name, props)


def _gpu_nodegroup(name: str, pool: str) -> tuple[str, str, dict]:
    return (common.EKS_NODE_GROUP, name, {"instanceTypes": ["g6.xlarge"], "labels": {"gpu-platform/pool": pool}})


NO_DCGM = (
    "but no DCGM exporter: no GPU utilization, memory, temperature or XID metrics, so idle or failing GPUs go "
    "unnoticed. Install dcgm-exporter or keep the GPU Operator's dcgmExporter enabled."
)
OPERATOR_OFF = {"dcgmExporter": {"enabled": False}}


def _dcgm(*resources) -> list[tuple[str | None, str]]:
    return check_stack(monitoring_policies.dcgm_monitoring, list(resources))


def test_dcgm_message_names_the_gpu_pools_sorted_once():
    """A stack with GPU pools and no DCGM is told which pools (sorted, each once), as a stack-wide finding."""
    assert _dcgm(_gpu_nodegroup("b", "l4"), _gpu_nodegroup("a", "a100"), _gpu_nodegroup("c", "l4")) == [
        (None, f"the stack runs GPU pools a100, l4 {NO_DCGM}")
    ]


def test_dcgm_message_for_an_operator_without_pools():
    """The GPU Operator alone (e.g. on nodes the stack does not create) means GPUs to monitor too."""
    assert _dcgm(_release("op", "gpu-operator", OPERATOR_OFF)) == [(None, f"the stack runs the GPU Operator {NO_DCGM}")]


def test_dcgm_is_satisfied_by_an_exporter_or_an_enabled_operator():
    """A dcgm-exporter release (Release or v4 Chart, repo name or oci:// reference) or a GPU Operator whose
    dcgmExporter is not disabled (it defaults to enabled) is DCGM monitoring."""
    pool = _gpu_nodegroup("ng", "l4")
    assert _dcgm(pool, _release("d", "dcgm-exporter")) == []
    assert _dcgm(pool, _release("d", "oci://ghcr.io/nvidia/dcgm-exporter", type_=common.HELM_CHART_V4)) == []
    assert _dcgm(pool, _release("op", "gpu-operator")) == []
    assert _dcgm(pool, _release("op", "nvidia/gpu-operator", {"dcgmExporter": {"enabled": True}})) == []
    assert _dcgm(pool, _release("op", "gpu-operator", OPERATOR_OFF), _release("op2", "gpu-operator")) == []


def test_dcgm_not_satisfied_by_other_charts_or_a_disabled_operator():
    """Another chart, a DCGM chart under another resource type, or only disabled operators: still no DCGM."""
    pool = _gpu_nodegroup("ng", "l4")
    msg = [(None, f"the stack runs GPU pools l4 {NO_DCGM}")]
    assert _dcgm(pool, _release("x", "dcgm-exporter-extra")) == msg
    assert _dcgm(pool, (common.CONFIG_MAP, "d", {"chart": "dcgm-exporter"})) == msg
    assert _dcgm(pool, _release("op", "gpu-operator", OPERATOR_OFF)) == msg
    assert _dcgm(pool, _release("x", "kube-prometheus-stack", {"dcgmExporter": {"enabled": True}})) == msg


def test_dcgm_not_needed_without_gpus():
    """No GPU pool and no GPU Operator: nothing to monitor."""
    cpu = (common.EKS_NODE_GROUP, "cpu", {"instanceTypes": ["m6i.large"]})
    assert _dcgm(cpu, _release("x", "kueue")) == []
    assert _dcgm() == []
