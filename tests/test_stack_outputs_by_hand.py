"""``components.render.outputs``, a projection of the plan (components/plan/plan.py), from a validated spec alone
(no render): the outputs of the ``local`` stack (an existing cluster, one MPS-shared L4 workstation, one
tenant), worked out by hand from its stack file, and the switches (no Karpenter,
monitoring off or without Prometheus)."""

from __future__ import annotations

from conftest import stack_config

from components.cli.loader import load_spec
from components.plan import plan
from components.render import outputs

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def _plan(spec):
    return plan.build(spec, "test")


def _local():
    return load_spec(stack_config("local"))


def test_local_pool_output_by_hand():
    """workstation: 1 L4 per node, at most 1 node, MPS x2 -> 2 nvidia.com/gpu per node and in all; the nodes
    exist already (provisioner 'existing'); the device plugin config label names the pool's MPS config."""
    spec = _local()
    pool = spec.node_pools[0]
    assert outputs.pool_output(plan.pool_plan(spec, pool), {"extra": "kept"}) == {
        "provisioner": "existing",
        "gpuModel": "L4",
        "gpusPerNode": 1,
        "capacity": "on-demand",
        "maxNodes": 1,
        "nodeSelector": {"gpu-platform/pool": "workstation"},
        "labels": {
            "gpu-platform/gpu-model": "l4",
            "gpu-platform/pool": "workstation",
            "nvidia.com/device-plugin.config": "workstation",
            "nvidia.com/gpu.present": "true",
        },
        "taints": [GPU_TAINT],
        "tolerations": [{**GPU_TAINT, "operator": "Equal"}],
        "gpuUnitsPerNode": {"nvidia.com/gpu": 2},
        "maxGpuUnits": {"nvidia.com/gpu": 2},
        "extra": "kept",
    }


def test_local_tenant_output_by_hand():
    """dev: 1 workstation GPU shared x2 = 2 units; Kueue on (queues 'default' -> 'dev'); Volcano is on in the
    stack but dev is a Kueue tenant, so it has no Volcano queue; its ceiling 'dev' forbids the four classes
    above it."""
    spec = _local()
    assert outputs.tenant_output(plan.tenant_plan(spec, spec.tenants[0])) == {
        "namespace": "dev",
        "scheduler": "kueue",
        "localQueue": "default",
        "clusterQueue": "dev",
        "volcanoQueue": None,
        "priorityCeiling": "dev",
        "forbiddenPriorityClasses": ["batch", "inference", "training", "training-critical"],
        "gpuQuota": {"nvidia.com/gpu": 2},
        "gpuLimit": {"nvidia.com/gpu": 2},
    }


def test_without_kueue_there_are_no_kueue_queues():
    """Kueue off: no LocalQueue or ClusterQueue to name."""
    cfg = stack_config("local")
    cfg["gpu-platform:addons"]["kueue"] = False
    spec = load_spec(cfg)
    out = outputs.tenant_output(plan.tenant_plan(spec, spec.tenants[0]))
    assert (out["localQueue"], out["clusterQueue"]) == (None, None)


def test_a_zero_quota_has_no_limit_entry():
    """Without a batch scheduler a tenant with 0 GPUs of quota has nominal 0 and no hard-cap entry (the
    ResourceQuota names only what the tenant may hold); no scheduler is named."""
    cfg = stack_config("local")
    cfg["gpu-platform:addons"].update(kueue=False, volcano=False)
    cfg["gpu-platform:tenants"][0]["gpuQuota"] = {"workstation": 0}
    spec = load_spec(cfg)
    out = outputs.tenant_output(plan.tenant_plan(spec, spec.tenants[0]))
    assert (out["gpuQuota"], out["gpuLimit"], out["scheduler"]) == ({"nvidia.com/gpu": 0}, {}, None)


def test_provisioner_per_cloud():
    """gke on GCP, existing on an existing cluster, the pool's own (managed | karpenter) on AWS."""
    gcp = load_spec(stack_config("dev-gcp"))
    assert {plan.provisioner(gcp, p) for p in gcp.node_pools} == {"gke"}
    aws = load_spec(stack_config("dev-aws"))
    assert [plan.provisioner(aws, p) for p in aws.node_pools] == ["managed", "karpenter"]
    assert plan.provisioner(_local(), _local().node_pools[0]) == "existing"


def test_stack_outputs_are_sorted_maps_with_the_given_names():
    """Tenants and pools sorted by name; a pool's provisioner names merged in, none for a pool without;
    Karpenter's entry only when there is one (an empty mapping is none)."""
    spec = load_spec(stack_config("dev-gcp"))
    p = plan.build(spec, "dev-gcp")
    out = outputs.stack_outputs(p, {"t4-spot": {"gkeNodePool": "np-t4"}}, karpenter={})
    assert (out["gpuPools"], out["tenantNamespaces"]) == (["l4-shared", "t4-spot"], ["ml-dev"])
    assert list(out["pools"]) == ["l4-shared", "t4-spot"] and list(out["tenants"]) == ["ml-dev"]
    assert out["pools"]["t4-spot"]["gkeNodePool"] == "np-t4" and "gkeNodePool" not in out["pools"]["l4-shared"]
    none = {"namespace": None, "interruptionQueue": None, "nodeRoleArn": None, "controllerRoleArn": None}
    assert out["karpenter"] == none  # fixed keys, null inside: a null top-level output vanishes under the engine
    k = {"interruptionQueue": "q"}
    assert outputs.stack_outputs(p, {}, karpenter=k)["karpenter"] == {**none, "interruptionQueue": "q"}
    assert outputs.stack_outputs(p, {})["karpenter"] == none


def test_monitoring_output_per_mode():
    """DCGM with Prometheus: the exporter and the three objects by namespace/name; without Prometheus: the
    exporter only; without DCGM: no monitoring at all."""
    expected_exporter = {
        "source": "operator",
        "namespace": "gpu-operator",
        "service": "nvidia-dcgm-exporter",
        "port": "gpu-metrics",
    }
    assert outputs.monitoring_output(plan.build(_local(), "").monitoring) == {
        "prometheus": "install",
        "exporter": expected_exporter,
        "serviceMonitor": {"namespace": "gpu-operator", "name": "gpu-platform-dcgm-exporter"},
        "prometheusRule": {"namespace": "gpu-operator", "name": "gpu-platform-gpu-alerts"},
        "dashboard": {"namespace": "gpu-operator", "name": "gpu-platform-gpu-dashboard"},
    }
    cfg = stack_config("local")
    cfg["gpu-platform:monitoring"] = {"prometheus": "existing"}  # the cluster's own operator: objects still made
    existing = outputs.monitoring_output(plan.build(load_spec(cfg), "").monitoring)
    assert existing["prometheus"] == "existing"
    assert existing["serviceMonitor"] == {"namespace": "gpu-operator", "name": "gpu-platform-dcgm-exporter"}
    cfg["gpu-platform:monitoring"] = {"prometheus": "none"}
    assert outputs.monitoring_output(plan.build(load_spec(cfg), "").monitoring) == {
        "prometheus": "none",
        "exporter": expected_exporter,
        "serviceMonitor": None,
        "prometheusRule": None,
        "dashboard": None,
    }
    cfg["gpu-platform:addons"]["dcgm"] = False
    assert outputs.monitoring_output(plan.build(load_spec(cfg), "").monitoring) == dict.fromkeys(
        ["prometheus", "exporter", "serviceMonitor", "prometheusRule", "dashboard"]
    )
