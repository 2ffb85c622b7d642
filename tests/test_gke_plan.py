"""The GKE plan (components/plan/gcp/plan.py, ``Plan.gke``): the cluster, the node service account and every node
pool's inputs decided from the spec; the GKE renderers (components/render/gcp) registering exactly it.

Expected values are written out from stacks/Pulumi.prod-gcp.yaml and the GKE API's enums: a3-highgpu-8g carries 8
H100 80GB (``nvidia-h100-80gb``) and boots from Persistent Disk; gcp pools run COS unless told otherwise, and
gke-latest on COS is the LATEST driver; a named reservation is SPECIFIC_RESERVATION by
``compute.googleapis.com/reservation-name``.
"""

from __future__ import annotations

import ast
import dataclasses

import pytest
from conftest import ROOT, rendered, stack_config

from components.cli import main as cli
from components.cli.loader import load_spec
from components.plan import plan
from components.plan.gcp import plan as gke_plan

NODE_POOL = "gcp:container/nodePool:NodePool"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}


def _gke(stack: str) -> gke_plan.GkePlan:
    p = plan.build(load_spec(stack_config(stack)), stack).gke
    assert p is not None
    return p


@pytest.mark.parametrize("stack", ["dev-aws", "prod-aws", "local", "dra-existing"])
def test_stacks_off_gcp_have_no_gke_plan(stack):
    assert plan.build(load_spec(stack_config(stack)), stack).gke is None


def test_prod_gcp_cluster_and_node_service_account_by_hand():
    """The cluster as the stack names it, the kubeconfig entry as gcloud names it, Workload Identity needed
    (there are node pools), and the node service account gpu-nodes-<cluster> with its two roles."""
    g = _gke("prod-gcp")
    assert g.cluster == gke_plan.GkeClusterPlan(
        name="ml-prod",
        project="ml-prod-project",
        location="us-central1",
        kubeconfig_name="gke_ml-prod-project_us-central1_ml-prod",
        needs_workload_identity=True,
        tcpx_pools=("h100-train",),  # its 4 named networks on a3-highgpu-8g; h100-burst names none
        # Kueue (webhooks 9443, visibility API 8082) and Volcano (8443): for a found cluster, a warning at deploy
        control_plane_ports=(8082, 8443, 9443),
    )
    sa = g.node_service_account
    assert (sa.account_id, sa.display_name) == ("gpu-nodes-ml-prod", "GKE GPU nodes (ml-prod)")
    assert sa.roles == ("roles/artifactregistry.reader", "roles/container.defaultNodeServiceAccount")


def test_a_stack_without_pools_needs_no_workload_identity():
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:nodePools"] = []
    cfg["gpu-platform:tenants"] = []
    g = plan.build(load_spec(cfg), "t").gke
    assert g is not None and g.cluster.needs_workload_identity is False and dict(g.node_pools) == {}


def test_prod_gcp_h100_train_node_pool_by_hand():
    """The compact-placed, reserved, GPUDirect training pool: every field of its record."""
    p = _gke("prod-gcp").node_pools["h100-train"]
    assert plan.plain(p) == {
        "name": "h100-train",
        "machineType": "a3-highgpu-8g",
        "imageType": "COS_CONTAINERD",
        "diskSizeGb": 500,
        "diskType": "pd-balanced",
        "accelerator": {
            "type": "nvidia-h100-80gb",
            "count": 8,
            "gpuDriverInstallationConfig": {"gpuDriverVersion": "LATEST"},
        },
        "spot": False,
        "minNodes": 0,
        "maxNodes": 4,
        "locationPolicy": "ANY",  # it has a reservation
        "initialNodes": 0,
        "autoRepair": True,
        "zones": ["us-central1-a"],
        "compactPlacement": True,
        "queuedProvisioning": False,
        "additionalNetworks": [
            {"network": f"ml-prod-gpu-net-{i}", "subnetwork": f"ml-prod-gpu-sub-{i}"} for i in (1, 2, 3, 4)
        ],
        "taints": [GPU_TAINT],
        "labels": {
            "gpu-platform/pool": "h100-train",
            "gpu-platform/gpu-model": "h100",
            "nvidia.com/gpu.present": "true",
        },
        "resourceLabels": {"environment": "prod", "gpu-platform-pool": "h100-train"},
        "reservationAffinity": {
            "consumeReservationType": "SPECIFIC_RESERVATION",
            "key": "compute.googleapis.com/reservation-name",
            "values": ["ml-prod-h100-train"],
        },
        "secureBoot": True,  # GKE installs the (signed) driver
        "gvnic": True,
        "localSsds": 16,  # a3-highgpu-8g's bundled local SSDs back the ephemeral storage
        "flexStart": False,
        "maxRunDuration": None,
        "sysctls": {"net.ipv4.tcp_rmem": "4096 87380 16777216", "net.ipv4.tcp_wmem": "4096 16384 16777216"},
        # the stack's imageCache: a secondary boot disk of its declared images, which needs image streaming (GKE)
        "images": {
            "gcfsConfig": {"enabled": True},
            "secondaryBootDisks": [{"diskImage": "global/images/pytorch-25-08-cache", "mode": "CONTAINER_IMAGE_CACHE"}],
        },
    }


def test_prod_gcp_other_pools_by_hand():
    """In name order (the order they are registered): MIG A100 starting with its one minimum node, the queued
    burst pool starting empty without auto-repair, the spot L4 pool sharing by MPS."""
    pools = _gke("prod-gcp").node_pools
    assert list(pools) == ["a100-inference", "h100-burst", "h100-train", "l4-serving"]
    a100 = pools["a100-inference"]
    assert dict(a100.accelerator)["gpuPartitionSize"] == "1g.5gb"
    assert (a100.location_policy, a100.initial_nodes, a100.min_nodes, a100.max_nodes) == ("BALANCED", 1, 1, 6)
    burst = pools["h100-burst"]
    assert (burst.queued_provisioning, burst.auto_repair, burst.initial_nodes, burst.location_policy) == (
        True,
        False,
        0,
        "ANY",
    )
    l4 = pools["l4-serving"]
    assert (l4.spot, l4.machine_type, l4.location_policy) == (True, "g2-standard-8", "ANY")
    assert dict(l4.accelerator["gpuSharingConfig"]) == {"gpuSharingStrategy": "MPS", "maxSharedClientsPerGpu": 2}
    assert dict(l4.reservation_affinity) == {"consumeReservationType": "NO_RESERVATION"}


def test_an_operator_driver_ubuntu_pool_turns_secure_boot_and_gvnic_off():
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:gpuOperator"] = {"driver": "operator"}
    for p in cfg["gpu-platform:nodePools"]:
        p["os"] = "ubuntu"
    g = plan.build(load_spec(cfg), "t").gke
    assert g is not None
    pool = g.node_pools["l4-shared"]
    assert (pool.image_type, pool.secure_boot, pool.gvnic) == ("UBUNTU_CONTAINERD", False, False)
    assert pool.accelerator["gpuDriverInstallationConfig"]["gpuDriverVersion"] == "INSTALLATION_DISABLED"
    assert "gpuSharingConfig" not in pool.accelerator  # the GPU Operator's device plugin shares, not GKE


@pytest.mark.parametrize(
    ("target", "max_nodes", "zones", "per_zone"),
    [(3, 4, 1, 3), (3, 4, 2, 2), (3, 6, 3, 1), (2, 2, 3, 0), (5, 4, 1, 4), (0, 4, 2, 0), (3, 4, 0, 0)],
)
def test_nodes_per_zone(target, max_nodes, zones, per_zone):
    """ceil(target / zones), but never over maxNodes in total; nothing for no target or no zones."""
    assert gke_plan.nodes_per_zone(target, max_nodes, zones) == per_zone


def test_the_gke_plan_is_frozen():
    g = _gke("prod-gcp")
    with pytest.raises(dataclasses.FrozenInstanceError):
        g.node_pools["h100-train"].spot = True  # type: ignore[misc]
    with pytest.raises(TypeError):
        g.node_pools["h100-train"].labels["x"] = "y"  # type: ignore[index]
    with pytest.raises(TypeError):
        g.node_pools["new"] = g.node_pools["h100-train"]  # type: ignore[index]
    assert isinstance(g.node_pools["h100-train"].additional_networks, tuple)


@pytest.mark.parametrize("stack", ["prod-gcp", "dev-gcp"])
def test_the_registered_gke_resources_are_the_plans(stack):
    """Service account, role grants and each node pool's spec inputs are the plan's fields."""
    g, r = _gke(stack), rendered(stack)
    (sa,) = r.of_type("gcp:serviceaccount/account:Account")
    assert sa.inputs["accountId"] == g.node_service_account.account_id
    assert sa.inputs["description"] == g.node_service_account.description
    roles = sorted(m.inputs["role"] for m in r.of_type("gcp:projects/iAMMember:IAMMember"))
    assert roles == sorted(g.node_service_account.roles)
    assert sorted(n.name for n in r.of_type(NODE_POOL)) == [f"gke-{name}" for name in g.node_pools]
    for p in g.node_pools.values():
        got = r.find(NODE_POOL, f"gke-{p.name}").inputs
        n = got["nodeConfig"]
        assert (got["name"], got["cluster"], got["project"]) == (p.name, g.cluster.name, g.cluster.project)
        assert got["autoscaling"]["locationPolicy"] == p.location_policy
        assert (n["machineType"], n["diskSizeGb"], n["spot"]) == (p.machine_type, p.disk_size_gb, p.spot)
        assert n["guestAccelerators"] == [plan.plain(p.accelerator)]
        assert n["labels"] == dict(p.labels) and n["taints"] == plan.plain(p.taints)
        assert got.get("nodeLocations", []) == list(p.zones)


def _spec_reads(path) -> list[str]:
    """``spec.<attribute>`` reads in a module: the spec read directly instead of through the plan."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"line {node.lineno}: spec.{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "spec"
    ]


@pytest.mark.parametrize("module", ["nodepools.py", "cluster.py"])
def test_the_gke_renderers_read_no_spec_attribute(module):
    """Below the plan nothing reads the spec: the GKE renderers take every decision from ``Plan.gke``."""
    assert _spec_reads(ROOT / "components" / "render" / "gcp" / module) == []


def test_plan_text_has_a_line_per_gke_node_pool(capsys):
    assert cli.main(["plan", "prod-gcp"]) == 0
    text = capsys.readouterr().out
    assert (
        "\nGKE\n  cluster ml-prod in ml-prod-project/us-central1; needs Workload Identity Federation; GPUDirect-TCPX "
        "pools h100-train (node version checked at deploy)\n"
    ) in text
    assert (
        "  h100-train: a3-highgpu-8g, 8 x nvidia-h100-80gb (driver LATEST), COS_CONTAINERD on 500 GiB pd-balanced; "
        "0..4 nodes (location policy ANY, 0 at creation); zones us-central1-a; compact placement; 16 local SSDs as "
        "ephemeral storage; NCCL TCP sysctls; 4 GPU networks; reservation ml-prod-h100-train\n"
    ) in text
    assert "  l4-serving: g2-standard-8 spot, 1 x nvidia-l4 (driver LATEST, MPS x2)" in text
    assert "GKE" not in cli.plan_text(plan.build(load_spec(stack_config("dev-aws")), "dev-aws"))
