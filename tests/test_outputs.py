"""Stack outputs (``pulumi stack output``), as the mock engine receives them from ``pulumi.export``: every
name they give must be an object the stack really creates, with the labels, taints and queues it has."""

from __future__ import annotations

import json

import pytest
from conftest import NAMESPACE, RESOURCE_QUOTA, STACKS, manifest, manifests, render_config, rendered, stack_config

from components.cli import synth
from components.cli.loader import load_spec
from components.plan import plan
from components.render.outputs import monitoring_output

TOP_KEYS = {"tenantNamespaces", "gpuPools", "tenants", "pools", "karpenter", "monitoring", "cost"}
# a stack that creates its cluster also exports what another stack's cluster.fromStack reads
CREATED_CLUSTER_KEYS = {
    "clusterName",
    "clusterArn",
    "endpoint",
    "certificateAuthority",
    "oidcIssuer",
    "clusterSecurityGroupId",
    "vpcId",
    "privateSubnetIds",
    "kubernetesVersion",
}
# what a created GKE cluster exports for cluster.fromStack (render/gcp/cluster_create.py cluster_outputs)
CREATED_GKE_KEYS = {"clusterName", "location", "project", "endpoint", "clusterCaCertificate", "nodeLocations"}
TENANT_KEYS = {
    "namespace",
    "scheduler",
    "localQueue",
    "clusterQueue",
    "volcanoQueue",
    "priorityCeiling",
    "forbiddenPriorityClasses",
    "gpuQuota",
    "gpuLimit",
}
POOL_KEYS = {
    "provisioner",
    "gpuModel",
    "gpusPerNode",
    "capacity",
    "maxNodes",
    "nodeSelector",
    "labels",
    "taints",
    "tolerations",
    "gpuUnitsPerNode",
    "maxGpuUnits",
}
PROVISIONER_KEY = {"managed": "nodeGroup", "karpenter": "karpenterNodePools", "gke": "gkeNodePool", "existing": None}


def outputs(stack: str):
    return rendered(stack).outputs


@pytest.mark.parametrize("stack", STACKS)
def test_keys_are_stable_and_camel_case(stack):
    out = outputs(stack)
    created = {"starter-aws": CREATED_CLUSTER_KEYS, "starter-gcp": CREATED_GKE_KEYS}.get(stack, set())
    worker = "gpu-platform:fleetWorker" in stack_config(stack)
    fleet_worker = {"multikueueKubeconfig", "fleetWorker"} if worker else set()
    assert set(out) == TOP_KEYS | created | fleet_worker
    for t in out["tenants"].values():
        assert set(t) == TENANT_KEYS
    for p in out["pools"].values():
        extra = PROVISIONER_KEY[p["provisioner"]]
        assert set(p) == POOL_KEYS | ({extra} if extra else set())


@pytest.mark.parametrize("stack", STACKS)
def test_outputs_json_is_written_deterministically(stack):
    text = synth.files(rendered(stack))["outputs.json"]
    assert json.loads(text) == outputs(stack)
    again = render_config(stack_config(stack), stack) if stack == "local" else rendered(stack)
    assert synth.files(again)["outputs.json"] == text


def test_outputs_do_not_leak_between_renders():
    cfg = stack_config("local")
    cfg["gpu-platform:tenants"].append({"name": "other", "gpuQuota": {"workstation": 0}})
    assert "other" in render_config(cfg, "local").outputs["tenants"]
    assert set(render_config(stack_config("local"), "local").outputs["tenants"]) == {"dev"}


# ------------------------------------------------------------------------------------------ tenants


@pytest.mark.parametrize("stack", STACKS)
def test_each_tenant_names_objects_the_stack_creates(stack):
    r = rendered(stack)
    namespaces = {x.inputs["metadata"]["name"] for x in r.of_type(NAMESPACE)}
    queues = {m["metadata"]["name"]: m for m in manifests(r, "ClusterQueue")}
    volcano = {m["metadata"]["name"] for m in manifests(r, "Queue")}
    for name, t in outputs(stack)["tenants"].items():
        assert t["namespace"] == name and name in namespaces
        if t["localQueue"] is not None:
            assert r.spec.addons.kueue and t["scheduler"] == "kueue"
            lq = manifest(r, "LocalQueue", t["localQueue"], t["namespace"])
            assert lq["spec"]["clusterQueue"] == t["clusterQueue"]
            assert t["clusterQueue"] in queues
        else:  # Kueue off, or a tenant Volcano schedules: no Kueue queue of the tenant's exists
            assert not r.spec.addons.kueue or t["scheduler"] == "volcano"
            assert t["clusterQueue"] is None and name not in queues
            assert [m for m in manifests(r, "LocalQueue") if m["metadata"]["namespace"] == name] == []
        if t["volcanoQueue"]:
            assert t["volcanoQueue"] in volcano and t["scheduler"] == "volcano"
        else:  # only tenants Volcano schedules get a Volcano queue
            assert name not in volcano and (not r.spec.addons.volcano or t["scheduler"] != "volcano")
        ns = next(x for x in r.of_type(NAMESPACE) if x.inputs["metadata"]["name"] == name)
        assert t["scheduler"] == ns.inputs["metadata"]["labels"].get("gpu-platform/scheduler")
        quota = next(x for x in r.of_type(RESOURCE_QUOTA) if x.name == f"{name}-gpu-quota").inputs
        hard = {  # a DRA stack caps devices per DeviceClass: <class>.deviceclass.resource.k8s.io/devices
            k.removeprefix("requests.").replace(".deviceclass.resource.k8s.io/", "/"): int(v)
            for k, v in quota["spec"]["hard"].items()
            if (k.startswith("requests.") or ".deviceclass.resource.k8s.io/" in k)
            and k not in ("requests.cpu", "requests.memory")
        }
        assert t["gpuLimit"] == {k: v for k, v in hard.items() if v}


def test_prod_aws_tenants_by_hand():
    t = outputs("prod-aws")["tenants"]
    assert {n: x["priorityCeiling"] for n, x in t.items()} == {
        "research": "training-critical",
        "serving": "inference",
        "applied-ml": "training",
        "notebooks": "dev",
    }
    assert t["applied-ml"]["scheduler"] == "volcano" and t["applied-ml"]["volcanoQueue"] == "applied-ml"
    # Volcano's tenant has no Kueue queues; its 16 A100s on a100-gang are the whole pool (2 nodes x 8), so its
    # ResourceQuota cap (the borrowing ceiling) is 16 as well
    assert (t["applied-ml"]["localQueue"], t["applied-ml"]["clusterQueue"]) == (None, None)
    assert t["applied-ml"]["gpuQuota"] == t["applied-ml"]["gpuLimit"] == {"nvidia.com/gpu": 16}
    assert t["research"]["scheduler"] == "kueue"
    assert t["research"]["localQueue"] == "default" and t["research"]["clusterQueue"] == "research"
    assert t["research"]["volcanoQueue"] is None
    assert t["notebooks"]["forbiddenPriorityClasses"] == ["batch", "inference", "training", "training-critical"]
    assert t["serving"]["forbiddenPriorityClasses"] == []
    # 16 H100 of h100-inference, each MIG-split into 3g.40gb + 2g.20gb + 2x 1g.10gb (mixed strategy)
    assert t["serving"]["gpuQuota"] == {
        "nvidia.com/mig-1g.10gb": 32,
        "nvidia.com/mig-2g.20gb": 16,
        "nvidia.com/mig-3g.40gb": 16,
    }


def test_without_kueue_a_tenant_has_no_kueue_queues():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:addons"] = {**cfg["gpu-platform:addons"], "kueue": False, "volcano": True}
    t = render_config(cfg, "dev-aws").outputs["tenants"]["ml-dev"]
    assert (t["localQueue"], t["clusterQueue"], t["volcanoQueue"], t["scheduler"]) == (
        None,
        None,
        "ml-dev",
        "volcano",
    )


# ------------------------------------------------------------------------------------------ pools


def _taints(kubernetes_taints):
    return sorted((t["key"], t.get("value"), t["effect"]) for t in kubernetes_taints)


EKS_EFFECT = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}


@pytest.mark.parametrize("stack", ["dev-aws", "prod-aws"])
def test_eks_pools_name_their_node_groups_and_karpenter_node_pools(stack):
    r = rendered(stack)
    pools = outputs(stack)["pools"]
    groups = {x.name: x for x in r.of_type("aws:eks/nodeGroup:NodeGroup")}
    nodepools = manifests(r, "NodePool")
    for name, p in pools.items():
        if p["provisioner"] == "managed":
            ng = groups[name].inputs
            # the generated name (the mock answers prefix + placeholder)
            assert p["nodeGroup"] == ng["nodeGroupNamePrefix"] + synth.PLACEHOLDER
            assert p["labels"] == ng["labels"]
            eks = [{**t, "effect": EKS_EFFECT[t["effect"]]} for t in ng["taints"]]
            assert _taints(p["taints"]) == _taints(eks)
        else:
            mine = [m for m in nodepools if m["metadata"]["labels"]["gpu-platform/pool"] == name]
            assert sorted(m["metadata"]["name"] for m in mine) == p["karpenterNodePools"]
            for m in mine:
                template = m["spec"]["template"]
                assert template["metadata"]["labels"] == p["labels"]
                assert _taints(template["spec"]["taints"]) == _taints(p["taints"])


def test_prod_aws_pools_by_hand():
    pools = outputs("prod-aws")["pools"]
    assert pools["h100-spot"]["karpenterNodePools"] == ["h100-spot", "h100-spot-on-demand"]
    assert pools["a100-train"]["provisioner"] == "managed"
    assert pools["a100-train"]["nodeSelector"] == {"gpu-platform/pool": "a100-train"}
    assert pools["a100-train"]["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    # l4-notebooks: 4 L4 per node, time-sliced 4 ways, at most 3 nodes
    assert pools["l4-notebooks"]["gpuUnitsPerNode"] == {"nvidia.com/gpu": 16}
    assert pools["l4-notebooks"]["maxGpuUnits"] == {"nvidia.com/gpu": 48}
    assert pools["l4-notebooks"]["labels"]["nvidia.com/device-plugin.config"] == "l4-notebooks"
    # h100-inference: 8 H100 per node, each 1x 3g.40gb + 1x 2g.20gb + 2x 1g.10gb, at most 2 nodes
    assert pools["h100-inference"]["gpuUnitsPerNode"] == {
        "nvidia.com/mig-1g.10gb": 16,
        "nvidia.com/mig-2g.20gb": 8,
        "nvidia.com/mig-3g.40gb": 8,
    }
    assert pools["h100-inference"]["maxGpuUnits"]["nvidia.com/mig-1g.10gb"] == 32


@pytest.mark.parametrize("stack", ["dev-gcp", "prod-gcp"])
def test_gke_pools_name_their_node_pools(stack):
    r = rendered(stack)
    gke = {x.name.removeprefix("gke-"): x.inputs for x in r.of_type("gcp:container/nodePool:NodePool")}
    pools = outputs(stack)["pools"]
    assert set(pools) == set(gke)
    for name, p in pools.items():
        assert p["provisioner"] == "gke"
        assert p["gkeNodePool"] == gke[name]["name"]
        assert p["labels"] == gke[name]["nodeConfig"]["labels"]


def test_prod_gcp_queued_pool_advertises_gkes_own_taint():
    taints = outputs("prod-gcp")["pools"]["h100-burst"]["taints"]
    assert {"key": "cloud.google.com/gke-queued", "value": "true", "effect": "NoSchedule"} in taints


def test_existing_cluster_pools_say_which_labels_and_taint_to_put_on_nodes():
    p = outputs("local")["pools"]["workstation"]
    assert p["provisioner"] == "existing"
    assert p["labels"]["gpu-platform/pool"] == "workstation"
    assert p["labels"]["nvidia.com/device-plugin.config"] == "workstation"  # MPS
    assert p["gpuUnitsPerNode"] == {"nvidia.com/gpu": 2}


# ------------------------------------------------------------------------------- karpenter, monitoring


def test_karpenter_outputs_are_its_queue_and_roles():
    r = rendered("prod-aws")
    k = outputs("prod-aws")["karpenter"]
    queue = r.find("aws:sqs/queue:Queue", "karpenter-interruption-queue").inputs
    assert k["interruptionQueue"] == queue["name"]
    node_role = r.find("aws:iam/role:Role", "karpenter-node-role").inputs["name"]
    controller_role = r.find("aws:iam/role:Role", "karpenter-controller-role").inputs["name"]
    # the mock's ARN for a role: arn:aws:iam::<account>:role/<name>
    assert k["nodeRoleArn"] == f"arn:aws:iam::{synth.ACCOUNT}:role/{node_role}"
    assert k["controllerRoleArn"] == f"arn:aws:iam::{synth.ACCOUNT}:role/{controller_role}"
    assert k["namespace"] == "kube-system"
    # without Karpenter: the same keys, null (a null top-level output would vanish under the engine)
    none = {"namespace": None, "interruptionQueue": None, "nodeRoleArn": None, "controllerRoleArn": None}
    assert outputs("prod-gcp")["karpenter"] == none
    assert outputs("local")["karpenter"] == none


@pytest.mark.parametrize("stack", STACKS)
def test_monitoring_outputs_point_at_rendered_objects(stack):
    r = rendered(stack)
    m = outputs(stack)["monitoring"]
    if not r.spec.addons.dcgm:  # no DCGM (a fleet manager runs no GPU): nothing scraped, nothing pointed at
        assert m["serviceMonitor"] is None and m["prometheusRule"] is None
        return
    for key, kind in (("serviceMonitor", "ServiceMonitor"), ("prometheusRule", "PrometheusRule")):
        manifest(r, kind, m[key]["name"], m[key]["namespace"])
    manifest(r, "ConfigMap", m["dashboard"]["name"], m["dashboard"]["namespace"])
    sm = manifest(r, "ServiceMonitor", m["serviceMonitor"]["name"], m["serviceMonitor"]["namespace"])
    assert sm["spec"]["endpoints"][0]["port"] == m["exporter"]["port"]


def test_monitoring_without_prometheus_names_no_objects():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:monitoring"] = {"prometheus": "none"}
    m = monitoring_output(plan.build(load_spec(cfg), "").monitoring)
    assert m["prometheus"] == "none"
    assert m["serviceMonitor"] is None and m["prometheusRule"] is None and m["dashboard"] is None
    assert outputs("dev-aws")["monitoring"]["prometheus"] == "install"


def test_monitoring_keeps_its_keys_null_without_dcgm():
    cfg = stack_config("local")
    cfg["gpu-platform:addons"] = {**cfg["gpu-platform:addons"], "dcgm": False}
    assert render_config(cfg, "local").outputs["monitoring"] == {
        "prometheus": None,
        "exporter": None,
        "serviceMonitor": None,
        "prometheusRule": None,
        "dashboard": None,
    }


def test_no_stack_output_is_null_at_the_top_level():
    """The engine drops a top-level null output (the Python SDK leaves None out of the property map it sends,
    pulumi/runtime/rpc.py serialize_properties): every key must hold something for `pulumi stack output KEY`
    to find it, in every shipped stack."""
    for stack in STACKS:
        nulls = sorted(k for k, v in outputs(stack).items() if v is None)
        assert nulls == [], (stack, nulls)


def test_the_outputs_page_documents_every_output_key():
    from conftest import ROOT

    section = (ROOT / "docs" / "reference" / "outputs.md").read_text()
    keys = (
        TOP_KEYS | TENANT_KEYS | POOL_KEYS | CREATED_CLUSTER_KEYS | {"nodeGroup", "karpenterNodePools", "gkeNodePool"}
    )
    keys |= set(outputs("prod-aws")["karpenter"]) | set(outputs("prod-aws")["monitoring"])
    missing = sorted(k for k in keys if not any(f"{p}{k}{e}" in section for p in "`." for e in "`.,"))
    assert not missing, missing
