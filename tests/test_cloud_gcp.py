"""GKE helpers one function at a time (components/render/gcp/cluster.py, nodepools.py, gke.py): the kubeconfig, the
cluster check, and every nodeConfig / NodePool input the node-pool component registers.

Expected values are written out from the GKE API's field names and enums (NodePool, NodeConfig,
ReservationAffinity, ShieldedInstanceConfig, WorkloadMetadataConfig) and the kubeconfig format client-go reads
(clientcmd v1 Config with an exec credential plugin, as ``gcloud container clusters get-credentials`` writes it).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pulumi
import pytest
from conftest import render_config, rendered, stack_config

from components.cli.loader import load_spec
from components.plan.gcp import gke
from components.plan.gcp.plan import cluster_plan as gcp_cluster_plan
from components.render.gcp import cluster, nodepools

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}


def prod():
    return load_spec(stack_config("prod-gcp"))


def one_pool(**pool: Any):
    """dev-gcp with a single pool ``p`` (L4 on g2-standard-8 unless given) and no tenants."""
    cfg = stack_config("dev-gcp")
    fields = {"gpu": {"model": "L4", "perNode": 1}, "instanceTypes": ["g2-standard-8"], "minNodes": 0, "maxNodes": 2}
    cfg["gpu-platform:nodePools"] = [{"name": "p", **fields, **pool}]
    cfg["gpu-platform:tenants"] = []
    spec = load_spec(cfg)
    return spec, spec.pool("p")


# ------------------------------------------------------------------------------------------ kubeconfig


def test_kubeconfig_is_a_gke_gcloud_auth_plugin_config():
    """The whole document: a v1 Config whose one cluster, context and user are named like gcloud names them
    (gke_<project>_<location>_<name>), and whose user runs gke-gcloud-auth-plugin (client.authentication
    v1beta1, cluster info provided, install hint). Keys are sorted, so the text is stable across runs."""
    text = cluster.kubeconfig_of(gcp_cluster_plan(prod()), "203.0.113.7", "Q0EtREFUQQ==")
    name = "gke_ml-prod-project_us-central1_ml-prod"
    assert json.loads(text) == {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": name, "cluster": {"server": "https://203.0.113.7", "certificate-authority-data": "Q0EtREFUQQ=="}}
        ],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
        "users": [
            {
                "name": name,
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "gke-gcloud-auth-plugin",
                        "provideClusterInfo": True,
                        "installHint": "gcloud components install gke-gcloud-auth-plugin",
                    }
                },
            }
        ],
    }
    assert list(json.loads(text)) == ["apiVersion", "clusters", "contexts", "current-context", "kind", "users"]


# --------------------------------------------------------------------------------------- cluster check


def test_cluster_problems_messages():
    """Autopilot is refused (and then nothing else is said); a Standard cluster without a workload pool is told
    the exact gcloud command that enables Workload Identity Federation; an empty pool name counts as none."""
    spec = prod()
    where = "GKE cluster ml-prod (ml-prod-project/us-central1)"
    assert cluster.problems_of(gcp_cluster_plan(spec), True, []) == [
        f"{where} is an Autopilot cluster; gpu-platform creates Standard node pools"
    ]
    no_wi = [
        f"{where} has no Workload Identity Federation; enable it (gcloud container clusters update ml-prod "
        "--location=us-central1 --workload-pool=ml-prod-project.svc.id.goog)"
    ]
    assert cluster.problems_of(gcp_cluster_plan(spec), False, []) == no_wi
    assert cluster.problems_of(gcp_cluster_plan(spec), None, [""]) == no_wi
    assert cluster.problems_of(gcp_cluster_plan(spec), False, ["", "ml-prod-project.svc.id.goog"]) == []


def test_cluster_without_node_pools_needs_no_workload_identity():
    """Without node pools nothing runs with GKE_METADATA, so a cluster without a workload pool is fine."""
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:nodePools"] = []
    cfg["gpu-platform:tenants"] = []
    assert cluster.problems_of(gcp_cluster_plan(load_spec(cfg)), False, []) == []


class _Config:
    def __init__(self, workload_pool):
        self.workload_pool = workload_pool


def test_workload_pool_from_dicts_and_results():
    """The SDK hands workloadIdentityConfigs over as dicts (either key spelling) or as result objects."""
    assert cluster._workload_pool({"workload_pool": "a.svc.id.goog"}) == "a.svc.id.goog"
    assert cluster._workload_pool({"workloadPool": "b.svc.id.goog"}) == "b.svc.id.goog"
    assert cluster._workload_pool({"workload_pool": None, "workloadPool": "c.svc.id.goog"}) == "c.svc.id.goog"
    assert cluster._workload_pool({}) == ""
    assert cluster._workload_pool(_Config("d.svc.id.goog")) == "d.svc.id.goog"
    assert cluster._workload_pool(_Config(None)) == ""
    assert cluster._workload_pool(object()) == ""


def test_check_stops_the_deploy_with_every_problem():
    """A cluster that can take the pools passes (True); otherwise the deploy stops with the problems."""
    spec = prod()
    assert (
        cluster.check_cluster(gcp_cluster_plan(spec), [False, [{"workloadPool": "ml-prod-project.svc.id.goog"}]])
        is True
    )
    with pytest.raises(pulumi.RunError) as err:
        cluster.check_cluster(gcp_cluster_plan(spec), [False, None])
    assert str(err.value) == cluster.problems_of(gcp_cluster_plan(spec), False, [])[0]
    with pytest.raises(pulumi.RunError, match="is an Autopilot cluster"):
        cluster.check_cluster(gcp_cluster_plan(spec), [True, [_Config("ml-prod-project.svc.id.goog")]])


# -------------------------------------------------------------------------------------------- gke facts


@pytest.mark.parametrize(
    ("machine", "disk"),
    [
        ("a3-ultragpu-8g", "hyperdisk-balanced"),
        ("a4-highgpu-8g", "hyperdisk-balanced"),
        ("a4x-highgpu-4g", "hyperdisk-balanced"),
        ("a3-megagpu-8g", "pd-balanced"),
        ("a3-highgpu-8g", "pd-balanced"),
        ("g2-standard-8", "pd-balanced"),
        ("n1-standard-8", "pd-balanced"),
    ],
)
def test_boot_disk_type(machine, disk):
    """A3 Ultra, A4 and A4X boot from Hyperdisk only; everything else from Persistent Disk."""
    assert gke.boot_disk_type(machine) == disk


def test_zones_regions_and_series():
    """A zone has two dashes; its region drops the last part; a region stays itself; the series is the part
    before the first dash."""
    assert gke.is_zone("us-central1-a") is True
    assert gke.is_zone("us-central1") is False
    assert gke.is_zone("us-central1-a-b") is False  # exactly two dashes: more is no zone name either
    assert gke.is_zone("") is False
    assert gke.is_zone(None) is False
    assert gke.region_of("europe-west4-b") == "europe-west4"
    assert gke.region_of("europe-west4") == "europe-west4"
    assert gke.machine_series("a3-highgpu-8g") == "a3"
    assert gke.machine_series("g2") == "g2"


# ------------------------------------------------------------------------------------------ node pools


def test_service_account_id_boundary_and_hash():
    """gpu-nodes-<cluster> is kept up to IAM's 30 characters; longer ids keep their head, drop a dash the cut
    leaves, and end in -<first 6 hex digits of sha256(cluster name)> (sha256sum of the name, worked out once)."""
    assert nodepools.node_service_account_id("a" * 20) == "gpu-nodes-" + "a" * 20
    assert nodepools.node_service_account_id("abcdefghijklmnopqrstu") == "gpu-nodes-abcdefghijklm-25f62a"
    assert nodepools.node_service_account_id("ml-cluster-x-training") == "gpu-nodes-ml-cluster-x-490586"


def test_driver_version_per_driver_choice():
    """gke-default -> DEFAULT, gke-latest -> LATEST on COS, operator -> INSTALLATION_DISABLED."""
    for driver, expected in (("gke-default", "DEFAULT"), ("gke-latest", "LATEST")):
        cfg = stack_config("dev-gcp")
        cfg["gpu-platform:gpuOperator"] = {"driver": driver}
        spec = load_spec(cfg)
        assert nodepools.driver_version(spec, spec.node_pools[0]) == expected
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:gpuOperator"] = {"driver": "operator"}
    for p in cfg["gpu-platform:nodePools"]:
        p["os"] = "ubuntu"
    spec = load_spec(cfg)
    assert nodepools.driver_version(spec, spec.node_pools[0]) == "INSTALLATION_DISABLED"


def test_guest_accelerator_sharing_forms():
    """Time-sharing and MPS become gpuSharingConfig with the replicas as clients; MIG becomes gpuPartitionSize;
    no sharing adds neither."""
    spec, p = one_pool(sharing={"strategy": "time-slicing", "replicas": 4})
    assert nodepools.guest_accelerator(spec, p) == {
        "type": "nvidia-l4",
        "count": 1,
        "gpuDriverInstallationConfig": {"gpuDriverVersion": "LATEST"},
        "gpuSharingConfig": {"gpuSharingStrategy": "TIME_SHARING", "maxSharedClientsPerGpu": 4},
    }
    spec, p = one_pool(sharing={"strategy": "mps", "replicas": 3})
    assert nodepools.guest_accelerator(spec, p)["gpuSharingConfig"] == {
        "gpuSharingStrategy": "MPS",
        "maxSharedClientsPerGpu": 3,
    }
    spec, p = one_pool(
        gpu={"model": "A100-40GB", "perNode": 1},
        instanceTypes=["a2-highgpu-1g"],
        sharing={"strategy": "mig", "layout": {"3g.20gb": 2}},
    )
    assert nodepools.guest_accelerator(spec, p) == {
        "type": "nvidia-tesla-a100",
        "count": 1,
        "gpuDriverInstallationConfig": {"gpuDriverVersion": "LATEST"},
        "gpuPartitionSize": "3g.20gb",
    }
    spec, p = one_pool()
    assert nodepools.guest_accelerator(spec, p) == {
        "type": "nvidia-l4",
        "count": 1,
        "gpuDriverInstallationConfig": {"gpuDriverVersion": "LATEST"},
    }


def test_node_config_of_a_cos_pool():
    """The whole nodeConfig of a COS pool: gVNIC on, secure boot on (GKE's drivers are signed), Workload
    Identity metadata, no legacy metadata endpoints, the GPU taint, pool labels, tags as resource labels."""
    spec, p = one_pool(capacity="spot", diskGib=120)
    assert nodepools.node_config(spec, p) == {
        "machineType": "g2-standard-8",
        "imageType": "COS_CONTAINERD",
        "diskSizeGb": 120,
        "diskType": "pd-balanced",
        "guestAccelerators": [
            {"type": "nvidia-l4", "count": 1, "gpuDriverInstallationConfig": {"gpuDriverVersion": "LATEST"}}
        ],
        "spot": True,
        "taints": [GPU_TAINT],
        "labels": {"gpu-platform/pool": "p", "gpu-platform/gpu-model": "l4", "nvidia.com/gpu.present": "true"},
        "resourceLabels": {"environment": "dev", "gpu-platform-pool": "p"},
        "oauthScopes": ["https://www.googleapis.com/auth/cloud-platform"],
        "reservationAffinity": {"consumeReservationType": "NO_RESERVATION"},
        "shieldedInstanceConfig": {"enableSecureBoot": True, "enableIntegrityMonitoring": True},
        "workloadMetadataConfig": {"mode": "GKE_METADATA"},
        "metadata": {"disable-legacy-endpoints": "true"},
        "gvnic": {"enabled": True},
        # no linuxNodeConfig: a single-node pool (not topologyAware, no GPUDirect networks) keeps the kernel's TCP
        # buffers; g2 bundles no local SSD
    }


def test_node_config_of_an_ubuntu_pool():
    """Ubuntu pools get UBUNTU_CONTAINERD and no gVNIC setting; on-demand is spot False; with the GPU
    Operator's driver, secure boot is off (the driver it builds is unsigned)."""
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:gpuOperator"] = {"driver": "operator"}
    for pool in cfg["gpu-platform:nodePools"]:
        pool["os"] = "ubuntu"
    cfg["gpu-platform:nodePools"][0]["capacity"] = "on-demand"
    spec = load_spec(cfg)
    n = nodepools.node_config(spec, spec.node_pools[0])
    assert n["imageType"] == "UBUNTU_CONTAINERD"
    assert "gvnic" not in n
    assert n["spot"] is False
    assert n["shieldedInstanceConfig"] == {"enableSecureBoot": False, "enableIntegrityMonitoring": True}


def test_resource_labels_sorted_and_the_pool_label_wins():
    """Stack tags plus gpu-platform-pool, in key order; a tag of that name cannot relabel the pool."""
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:tags"] = {"zeta": "z", "gpu-platform-pool": "other", "alpha": "a"}
    spec = load_spec(cfg)
    labels = nodepools.resource_labels(spec, spec.node_pools[1])
    assert labels == {"alpha": "a", "gpu-platform-pool": "t4-spot", "zeta": "z"}
    assert list(labels) == ["alpha", "gpu-platform-pool", "zeta"]


def test_location_policy_and_autoscaling():
    """ANY for spot, queued provisioning or a reservation; BALANCED otherwise; totals from min and the cap."""
    _, p = one_pool(minNodes=1, maxNodes=3)
    assert nodepools.autoscaling(p) == {"totalMinNodeCount": 1, "totalMaxNodeCount": 3, "locationPolicy": "BALANCED"}
    assert nodepools.location_policy(one_pool(capacity="spot")[1]) == "ANY"
    assert nodepools.location_policy(one_pool(gke={"queuedProvisioning": True})[1]) == "ANY"
    assert nodepools.location_policy(one_pool(gke={"reservation": "any"})[1]) == "ANY"


def test_reservation_affinity_none_and_any():
    """No reservation -> NO_RESERVATION; reservation: any -> ANY_RESERVATION, neither naming a reservation."""
    assert nodepools.reservation_affinity(one_pool()[1]) == {"consumeReservationType": "NO_RESERVATION"}
    assert nodepools.reservation_affinity(one_pool(gke={"reservation": "any"})[1]) == {
        "consumeReservationType": "ANY_RESERVATION"
    }


def test_initial_nodes_follow_desired_then_min_and_queued_pools_start_empty():
    """initialNodeCount per zone reaches desiredNodes when given (else minNodes); queued pools and an unknown
    zone count give 0."""
    _, p = one_pool(minNodes=1, desiredNodes=3, maxNodes=4)
    assert nodepools.initial_nodes_per_zone(p, 1) == 3
    assert nodepools.initial_nodes_per_zone(p, 2) == 2  # ceil(3/2); 2 per zone stays within 4
    assert nodepools.initial_nodes_per_zone(p, 0) == 0
    _, p = one_pool(minNodes=0, maxNodes=4)
    assert nodepools.initial_nodes_per_zone(p, 1) == 0
    _, p = one_pool(minNodes=0, maxNodes=4, gke={"queuedProvisioning": True})
    assert nodepools.initial_nodes_per_zone(p, 1) == 0


def test_management_repairs_except_queued_pools():
    """Auto-repair is off only for queued provisioning; auto-upgrade is always on."""
    assert nodepools.management(one_pool()[1]) == {"autoRepair": True, "autoUpgrade": True}
    assert nodepools.management(one_pool(gke={"queuedProvisioning": True})[1]) == {
        "autoRepair": False,
        "autoUpgrade": True,
    }


def test_node_pool_inputs_of_a_compact_gpudirect_pool_and_a_plain_one():
    """Every spec-only NodePool input: h100-train has zones, compact placement and its four GPU networks in
    order; l4-serving has none of the optional inputs."""
    spec = prod()
    common = {
        "cluster": "ml-prod",
        "location": "us-central1",
        "project": "ml-prod-project",
        "upgradeSettings": {"strategy": "SURGE", "maxSurge": 0, "maxUnavailable": 1},
    }
    assert nodepools.node_pool_inputs(spec, spec.pool("h100-train")) == {
        "name": "h100-train",
        **common,
        "autoscaling": {"totalMinNodeCount": 0, "totalMaxNodeCount": 4, "locationPolicy": "ANY"},
        "management": {"autoRepair": True, "autoUpgrade": True},
        "nodeLocations": ["us-central1-a"],
        "placementPolicy": {"type": "COMPACT"},
        "networkConfig": {
            "additionalNodeNetworkConfigs": [
                {"network": f"ml-prod-gpu-net-{i}", "subnetwork": f"ml-prod-gpu-sub-{i}"} for i in (1, 2, 3, 4)
            ]
        },
    }
    assert nodepools.node_pool_inputs(spec, spec.pool("l4-serving")) == {
        "name": "l4-serving",
        **common,
        "autoscaling": {"totalMinNodeCount": 0, "totalMaxNodeCount": 8, "locationPolicy": "ANY"},
        "management": {"autoRepair": True, "autoUpgrade": True},
    }
    burst = nodepools.node_pool_inputs(spec, spec.pool("h100-burst"))
    assert burst["queuedProvisioning"] == {"enabled": True}
    assert burst["management"] == {"autoRepair": False, "autoUpgrade": True}


def test_zone_count():
    """Distinct pool zones, plus a zonal cluster's own zone; at least 1 when nothing is known."""
    assert nodepools._zone_count("us-central1", ["us-central1-a", "us-central1-b", "us-central1-a"]) == 2
    assert nodepools._zone_count("us-central1-a", ["us-central1-b"]) == 2
    assert nodepools._zone_count("us-central1-a", ["us-central1-a"]) == 1
    assert nodepools._zone_count("us-central1", None) == 1
    assert nodepools._zone_count("us-central1", []) == 1


# ------------------------------------------------------------------------------------ rendered component


def test_node_service_account_display_name_and_description():
    """The node service account says which cluster's GPU pools use it and which roles it holds."""
    (sa,) = rendered("prod-gcp").of_type("gcp:serviceaccount/account:Account")
    assert sa.name == "gke-gpu-nodes"
    assert sa.inputs["displayName"] == "GKE GPU nodes (ml-prod)"
    assert sa.inputs["description"] == (
        "Node service account of gpu-platform's GPU node pools in cluster ml-prod; "
        "roles: roles/artifactregistry.reader, roles/container.defaultNodeServiceAccount"
    )


def test_initial_node_count_uses_the_pools_own_zones_else_the_clusters():
    """initialNodeCount is per zone: a pool with gke.zones divides by its own zones (3 nodes over 2 zones: 2
    each, within maxNodes 6), a pool without by the looked-up cluster's node locations (the offline lookup
    answers three zones: 3 nodes -> 1 each)."""
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:nodePools"][0].update(minNodes=3, maxNodes=6, gke={"zones": ["us-central1-a", "us-central1-b"]})
    cfg["gpu-platform:nodePools"][1].update(minNodes=3, maxNodes=6)
    r = render_config(cfg, "dev-gcp")
    counts = {p.name: p.inputs["initialNodeCount"] for p in r.of_type("gcp:container/nodePool:NodePool")}
    assert counts == {"gke-l4-shared": 2, "gke-t4-spot": 1}


def test_accelerator_type_from_machine_else_model():
    """The machine type decides where it names an accelerator (A3 Mega's own H100 type); an unknown machine or
    none falls back to the GPU model's GKE accelerator."""
    from components.plan.gcp.rules import accelerator_type

    _, p = one_pool(gpu={"model": "H100", "perNode": 8}, instanceTypes=["a3-megagpu-8g"])
    assert accelerator_type(p) == "nvidia-h100-mega-80gb"
    assert accelerator_type(p.model_copy(update={"instance_types": ["x9-unknown-1g"]})) == "nvidia-h100-80gb"
    assert accelerator_type(p.model_copy(update={"instance_types": []})) == "nvidia-h100-80gb"


@pytest.mark.parametrize("stack", ["prod-gcp", "dev-gcp"])
def test_registered_node_pool_carries_exactly_the_helpers_inputs(stack):
    """The component only transfers: every input the engine receives for a pool is what node_pool_inputs and
    node_config (each pinned above against hand-written values) say, plus the service account and the
    per-zone initial count, and nothing else."""
    r = rendered(stack)
    spec = r.spec
    email = f"gpu-nodes-{spec.cluster.name}@{spec.cluster.project}.iam.gserviceaccount.com"
    for pool in spec.node_pools:
        got = dict(r.find("gcp:container/nodePool:NodePool", f"gke-{pool.name}").inputs)
        got.pop("initialNodeCount")
        assert got == {
            **nodepools.node_pool_inputs(spec, pool),
            "nodeConfig": {**nodepools.node_config(spec, pool), "serviceAccount": email},
        }, pool.name


def test_cluster_lookup_names_the_stacks_cluster(tap_mocks):
    """GkeAccess looks the cluster up by the stack's name, location and project (gcp:container getCluster), the
    answer every node pool and the kubeconfig derive from."""
    render_config(stack_config("prod-gcp"), "prod-gcp")
    assert (
        "gcp:container/getCluster:getCluster",
        {"name": "ml-prod", "location": "us-central1", "project": "ml-prod-project"},
    ) in tap_mocks.calls


def test_an_autopilot_cluster_stops_the_render(tap_mocks, failed_render):
    """The readiness check reads the lookup's enableAutopilot: when getCluster answers an Autopilot cluster
    (with a workload pool, so Workload Identity is not what stops it), the deploy stops with the Autopilot
    message before any node pool registers (Autopilot clusters have no user node pools)."""
    tap_mocks.answers["gcp:container/getCluster:getCluster"] = {
        "enableAutopilot": True,
        "workloadIdentityConfigs": [{"workloadPool": "ml-prod-project.svc.id.goog"}],
    }
    message = (
        "GKE cluster ml-prod (ml-prod-project/us-central1) is an Autopilot cluster; "
        "gpu-platform creates Standard node pools"
    )
    with pytest.raises(pulumi.RunError, match=re.escape(message)):
        render_config(stack_config("prod-gcp"), "prod-gcp")
    assert "gcp:container/nodePool:NodePool" not in tap_mocks.registered


def test_rendered_kubeconfig_uses_the_looked_up_endpoint_and_ca():
    """The provider's kubeconfig points at the looked-up cluster's endpoint (https) with its first master auth's
    CA certificate (the offline lookup answers offline-placeholder.gke.invalid and base64 of
    OFFLINE-PLACEHOLDER-CA)."""
    [provider] = rendered("dev-gcp").of_type("pulumi:providers:kubernetes")
    doc = json.loads(provider.inputs["kubeconfig"])
    assert doc["clusters"][0]["cluster"] == {
        "server": "https://offline-placeholder.gke.invalid",
        "certificate-authority-data": "T0ZGTElORS1QTEFDRUhPTERFUi1DQQ==",
    }
    assert doc["current-context"] == "gke_ml-dev-project_us-central1_ml-dev"


def test_the_gke_provider_applies_server_side_and_updates_config_maps_in_place():
    (provider,) = rendered("dev-gcp").of_type("pulumi:providers:kubernetes")
    assert provider.inputs["enableServerSideApply"] == "true"
    assert provider.inputs["enableConfigMapMutable"] == "true"
