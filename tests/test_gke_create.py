"""The GKE cluster gpu-platform creates (``cluster.create`` on gcp, issue 30): the plan's decisions, the resources
registered for them, every rule refusing a bad stack through the CLI, and stacks that find their cluster untouched.

Expected values are written out by hand from the GKE and Compute Engine APIs' field names and what the stack file
says: CIDR splits computed on paper (a /16 split for 17 subnets gives 32 /21s, 8 apart in the third octet),
resource names from the naming scheme in components/plan/gcp/cluster_create.py's docstring.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from caching import shared_fixture
from conftest import ROOT, render_config, rendered, stack_config

from components.cli import main as cli, synth
from components.cli.loader import load_spec
from components.plan import plan as plan_mod
from components.plan.gcp import cluster_create, cluster_create_rules
from components.spec.model import SpecError

COVERAGE = ROOT / "tests" / "fixtures" / "coverage" / "Pulumi.coverage-gcp-create.yaml"


def coverage_config() -> dict[str, Any]:
    return yaml.safe_load(COVERAGE.read_text())["config"]


def small_config(**gke: Any) -> dict[str, Any]:
    """dev-gcp, its cluster created with the defaults and one authorized network (plus ``gke`` keys)."""
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:cluster"]["create"] = {"gke": {"authorizedNetworks": [{"cidr": "198.51.100.0/24"}], **gke}}
    return cfg


def created_plan(cfg: dict[str, Any]):
    return plan_mod.build(load_spec(cfg), "test").gke_create


# ------------------------------------------------------------------------------------------------ plan


def test_a_found_cluster_has_no_creation_plan():
    for stack in ("dev-gcp", "prod-gcp", "dev-aws", "local"):
        assert plan_mod.build(load_spec(stack_config(stack)), stack).gke_create is None


def test_defaults_of_a_created_cluster_without_gpudirect():
    p = created_plan(small_config())
    assert (p.name, p.project, p.location, p.region) == ("ml-dev", "ml-dev-project", "us-central1", "us-central1")
    assert (p.network, p.subnet, p.router, p.nat) == ("ml-dev-net", "ml-dev-subnet", "ml-dev-router", "ml-dev-nat")
    assert (p.subnet_cidr, p.pods_cidr, p.services_cidr, p.master_cidr) == (
        "10.0.0.0/20",
        "10.4.0.0/14",
        "10.8.0.0/20",
        "172.16.0.32/28",
    )
    assert (p.pods_range, p.services_range) == ("pods", "services")
    assert p.workload_pool == "ml-dev-project.svc.id.goog"
    assert p.release_channel == "REGULAR" and p.min_master_version is None
    assert p.private_endpoint is False and p.deletion_protection is True
    assert [dict(a) for a in p.authorized_networks] == [
        {"cidrBlock": "198.51.100.0/24", "displayName": "198.51.100.0/24"}
    ]
    # no GPUDirect pool: no extra networks, GKE's default datapath, no multi-networking
    assert p.gpu_networks == () and dict(p.pool_networks) == {}
    assert p.multi_networking is False and p.datapath_provider == "LEGACY_DATAPATH"
    s = p.system_pool
    assert (s.name, s.machine_type, s.min_nodes, s.max_nodes, dict(s.labels)) == ("system", "e2-standard-4", 2, 4, {})
    assert (s.image_type, s.disk_type, s.disk_size_gb) == ("COS_CONTAINERD", "pd-balanced", 100)
    assert s.account_id == "gke-system-ml-dev"
    assert s.roles == ("roles/artifactregistry.reader", "roles/container.defaultNodeServiceAccount")
    assert dict(p.resource_labels) == {"environment": "dev", "gpu-platform-cluster": "ml-dev"}


def test_the_system_pool_gets_the_roles_of_the_gpu_nodes():
    from components.plan.gcp.plan import NODE_ROLES

    assert cluster_create.SYSTEM_NODE_ROLES == NODE_ROLES


def test_gpudirect_networks_of_the_coverage_stack():
    """A3 Mega (TCPXO): eight VPCs of one subnet; A3 Ultra in us-central1-b (RDMA): a gVNIC VPC and an RDMA VPC of
    eight subnets on the zone's RoCE profile. 17 subnets split 192.168.0.0/16 into /21s."""
    p = created_plan(coverage_config())
    nets = {n.name: n for n in p.gpu_networks}
    assert list(nets) == [*(f"ml-train-tcpxo-{i}" for i in range(8)), "ml-train-rdma-b-gvnic", "ml-train-rdma-b"]
    cidrs = [s.cidr for n in p.gpu_networks for s in n.subnets]
    assert cidrs == [f"192.168.{8 * i}.0/21" for i in range(17)]
    assert [s.name for s in nets["ml-train-tcpxo-3"].subnets] == ["ml-train-tcpxo-3-sub"]
    assert {n.mtu for n in p.gpu_networks if "tcpxo" in n.name} == {8244}
    rdma = nets["ml-train-rdma-b"]
    assert (rdma.device_mode, rdma.mtu) == ("RDMA", 8896)
    assert rdma.network_profile == "projects/ml-train-project/global/networkProfiles/us-central1-b-vpc-roce"
    assert [s.name for s in rdma.subnets] == [f"ml-train-rdma-b-sub-{i}" for i in range(8)]
    assert nets["ml-train-rdma-b-gvnic"].device_mode == "NetDevice"
    assert p.multi_networking is True and p.datapath_provider == "ADVANCED_DATAPATH"
    assert [dict(n) for n in p.pool_networks["h100-mega"]] == [
        {"network": f"ml-train-tcpxo-{i}", "subnetwork": f"ml-train-tcpxo-{i}-sub"} for i in range(8)
    ]
    assert [dict(n) for n in p.pool_networks["h200-ultra"]] == [
        {"network": "ml-train-rdma-b-gvnic", "subnetwork": "ml-train-rdma-b-gvnic-sub"},
        *({"network": "ml-train-rdma-b", "subnetwork": f"ml-train-rdma-b-sub-{i}"} for i in range(8)),
    ]
    s = p.system_pool
    assert (s.name, s.machine_type, s.min_nodes, s.max_nodes) == ("system", "e2-standard-8", 2, 4)
    assert dict(s.labels) == {"node-role.example.com/system": "true"}  # the selector less GKE's own pool label


def test_the_node_pools_attach_the_created_networks():
    full = plan_mod.build(load_spec(coverage_config()), "test")
    assert [n["network"] for n in full.gke.node_pools["h100-mega"].additional_networks] == [
        f"ml-train-tcpxo-{i}" for i in range(8)
    ]
    assert len(full.gke.node_pools["h200-ultra"].additional_networks) == 9


def test_a_pool_naming_its_own_networks_keeps_them():
    cfg = coverage_config()
    pool = cfg["gpu-platform:nodePools"][0]
    pool["gke"]["additionalNetworks"] = [{"network": f"own-{i}", "subnetwork": f"own-{i}-sub"} for i in range(8)]
    full = plan_mod.build(load_spec(cfg), "test")
    assert "h100-mega" not in full.gke_create.pool_networks
    assert [n.name for n in full.gke_create.gpu_networks][:1] == ["ml-train-rdma-b-gvnic"]  # no TCPXO VPCs
    assert full.gke.node_pools["h100-mega"].additional_networks[0]["network"] == "own-0"


def test_a_single_node_gpudirect_pool_gets_no_networks():
    cfg = coverage_config()
    for pool in cfg["gpu-platform:nodePools"]:
        pool["topologyAware"] = False
    p = created_plan(cfg)
    assert p.gpu_networks == () and p.multi_networking is False


def test_the_plan_text_names_the_cluster_network_and_pools():
    text = "\n".join(cluster_create.text(created_plan(coverage_config())))
    assert "ml-train in ml-train-project/us-central1, release channel STABLE, Kubernetes >= 1.33" in text
    assert "control plane 172.16.0.32/28, private nodes, public endpoint (authorized: 203.0.113.0/24)" in text
    assert "GPU network ml-train-rdma-b (RDMA, MTU 8896)" in text
    assert "h200-ultra attaches 9 GPU networks" in text


# ------------------------------------------------------------------------------------------- resources


@shared_fixture
def small():
    return render_config(small_config(releaseChannel="RAPID", zones=["us-central1-a", "us-central1-b"]), "small")


def test_the_cluster_resource(small):
    c = small.find("gcp:container/cluster:Cluster", "gke-cluster").inputs
    assert c == {
        "name": "ml-dev",
        "project": "ml-dev-project",
        "location": "us-central1",
        "nodeLocations": ["us-central1-a", "us-central1-b"],
        "network": "offline-placeholder-gke-network",
        "subnetwork": "offline-placeholder-gke-subnet",
        "networkingMode": "VPC_NATIVE",
        "ipAllocationPolicy": {"clusterSecondaryRangeName": "pods", "servicesSecondaryRangeName": "services"},
        "removeDefaultNodePool": True,
        "initialNodeCount": 1,
        "nodeConfig": {
            "serviceAccount": "gke-system-ml-dev@ml-dev-project.iam.gserviceaccount.com",
            "oauthScopes": ["https://www.googleapis.com/auth/cloud-platform"],
            "shieldedInstanceConfig": {"enableSecureBoot": True, "enableIntegrityMonitoring": True},
            "workloadMetadataConfig": {"mode": "GKE_METADATA"},
            "machineType": "e2-standard-4",
        },
        "privateClusterConfig": {
            "enablePrivateNodes": True,
            "enablePrivateEndpoint": False,
            "masterIpv4CidrBlock": "172.16.0.32/28",
        },
        "masterAuthorizedNetworksConfig": {
            "cidrBlocks": [{"cidrBlock": "198.51.100.0/24", "displayName": "198.51.100.0/24"}]
        },
        "workloadIdentityConfig": {"workloadPool": "ml-dev-project.svc.id.goog"},
        "releaseChannel": {"channel": "RAPID"},
        "enableShieldedNodes": True,
        "enableLegacyAbac": False,
        "datapathProvider": "LEGACY_DATAPATH",
        "resourceLabels": {"environment": "dev", "gpu-platform-cluster": "ml-dev"},
        "deletionProtection": True,
    }


def test_the_network_subnet_and_nat(small):
    net = small.find("gcp:compute/network:Network", "gke-network").inputs
    assert net == {
        "name": "ml-dev-net",
        "project": "ml-dev-project",
        "autoCreateSubnetworks": False,
        "routingMode": "REGIONAL",
        "mtu": 8896,
    }
    sub = small.find("gcp:compute/subnetwork:Subnetwork", "gke-subnet").inputs
    assert sub == {
        "name": "ml-dev-subnet",
        "project": "ml-dev-project",
        "region": "us-central1",
        "network": "offline-placeholder-gke-network",
        "ipCidrRange": "10.0.0.0/20",
        "privateIpGoogleAccess": True,
        "secondaryIpRanges": [
            {"rangeName": "pods", "ipCidrRange": "10.4.0.0/14"},
            {"rangeName": "services", "ipCidrRange": "10.8.0.0/20"},
        ],
    }
    nat = small.find("gcp:compute/routerNat:RouterNat", "gke-nat").inputs
    assert nat == {
        "name": "ml-dev-nat",
        "project": "ml-dev-project",
        "region": "us-central1",
        "router": "ml-dev-router",
        "natIpAllocateOption": "AUTO_ONLY",
        "sourceSubnetworkIpRangesToNat": "LIST_OF_SUBNETWORKS",
        "subnetworks": [{"name": "offline-placeholder-gke-subnet", "sourceIpRangesToNats": ["ALL_IP_RANGES"]}],
        "logConfig": {"enable": True, "filter": "ERRORS_ONLY"},
    }
    # no GPU networks: the only rule is the control plane's to the add-ons (tests/test_gke_control_plane_ports.py)
    assert [f.name for f in small.of_type("gcp:compute/firewall:Firewall")] == ["gke-master-webhooks"]


def test_the_system_pool_and_its_account(small):
    pool = small.find("gcp:container/nodePool:NodePool", "gke-system").inputs
    assert pool["name"] == "system" and pool["cluster"] == "ml-dev" and pool["location"] == "us-central1"
    assert pool["nodeLocations"] == ["us-central1-a", "us-central1-b"]
    assert pool["initialNodeCount"] == 1  # ceil(min 1 / 2 zones), within max 3 // 2
    assert pool["autoscaling"] == {"totalMinNodeCount": 2, "totalMaxNodeCount": 4, "locationPolicy": "BALANCED"}
    assert pool["management"] == {"autoRepair": True, "autoUpgrade": True}
    cfg = pool["nodeConfig"]
    assert cfg["serviceAccount"] == "gke-system-ml-dev@ml-dev-project.iam.gserviceaccount.com"
    assert cfg["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
    assert cfg["shieldedInstanceConfig"] == {"enableSecureBoot": True, "enableIntegrityMonitoring": True}
    assert cfg["metadata"] == {"disable-legacy-endpoints": "true"}
    assert "taints" not in cfg  # the controllers run here without tolerations
    grants = {r.inputs["role"] for r in small.of_type("gcp:projects/iAMMember:IAMMember") if "system" in r.name}
    assert grants == {"roles/artifactregistry.reader", "roles/container.defaultNodeServiceAccount"}


def test_the_gpu_pools_wait_for_the_created_cluster(small):
    pool = small.find("gcp:container/nodePool:NodePool", "gke-l4-shared")
    assert {"gke-cluster", "gke-system"} <= set(pool.depends_on)


def test_a_found_cluster_registers_no_network():
    from conftest import rendered

    r = rendered("dev-gcp")
    assert r.of_type("gcp:container/cluster:Cluster") == [] and r.of_type("gcp:compute/network:Network") == []


def test_gpudirect_resources_of_the_coverage_stack():
    r = render_config(coverage_config(), "coverage-gcp-create")
    rdma = r.find("gcp:compute/network:Network", "gpu-network-ml-train-rdma-b").inputs
    assert rdma["networkProfile"] == "projects/ml-train-project/global/networkProfiles/us-central1-b-vpc-roce"
    assert rdma["mtu"] == 8896
    fw = r.find("gcp:compute/firewall:Firewall", "gpu-internal-ml-train-tcpxo-0").inputs
    assert fw["sourceRanges"] == ["192.168.0.0/21"]
    assert [a["protocol"] for a in fw["allows"]] == ["tcp", "udp", "icmp"]
    # RDMA VPCs take no firewall rules (the RoCE profile); the gVNIC one does
    names = {f.name for f in r.of_type("gcp:compute/firewall:Firewall")}
    assert "gpu-internal-ml-train-rdma-b" not in names and "gpu-internal-ml-train-rdma-b-gvnic" in names
    cluster = r.find("gcp:container/cluster:Cluster", "gke-cluster").inputs
    assert cluster["enableMultiNetworking"] is True and cluster["datapathProvider"] == "ADVANCED_DATAPATH"
    assert len(r.of_type("gcp:compute/subnetwork:Subnetwork")) == 18  # the nodes' + 17 GPU subnets


# ------------------------------------------------------------------------------------------------ rules


def _set(cfg: dict[str, Any], path: str, value: Any) -> None:
    node = cfg
    *head, last = path.split(".")
    for part in head:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value


BAD = [
    # (change under gpu-platform:cluster.create.gke, or a full key, value, the key path reported, words of the message)
    ("network.subnet", "10.0.0.1/20", "cluster.create.gke.network.subnet", "is not an IPv4 network"),
    ("network.subnet", "10.0.0.0/30", "cluster.create.gke.network.subnet", "a /8 to a /29"),
    ("network.subnet", "10.0.0.0/29", "cluster.create.gke.network.subnet", "has 4 node addresses"),
    ("network.pods", "10.4.0.0/25", "cluster.create.gke.network.pods", "a /9 to a /24"),
    ("network.pods", "10.4.0.0/24", "cluster.create.gke.network.pods", "holds 1 nodes"),
    ("network.services", "10.8.0.0/28", "cluster.create.gke.network.services", "a /16 to a /27"),
    ("network.master", "172.16.0.32/27", "cluster.create.gke.network.master", "exactly a /28"),
    ("network.master", "8.8.8.0/28", "cluster.create.gke.network.master", "not a private"),
    ("network.services", "10.12.0.0/20", "cluster.create.gke.network.services", "overlaps network.pods"),
    ("network.gpu", "10.10.0.0/16", "cluster.create.gke.network.gpu", "overlaps network.subnet"),
    ("network.gpu", "192.168.0.0/26", "cluster.create.gke.network.gpu", "cannot hold the 17 GPUDirect subnets"),
    ("zones", ["us-east1-b"], "cluster.create.gke.zones[0]", "not in the cluster's region us-central1"),
    ("zones", ["us-central1-a", "us-central1-a"], "cluster.create.gke.zones", "lists a zone twice"),
    ("zones", [f"us-central1-{z}" for z in "abcfe"], "cluster.create.gke.zones", "at most 4 zones"),
    ("releaseChannel", "NIGHTLY", "cluster.create.gke.releaseChannel", "does not match"),
    ("authorizedNetworks", [], "cluster.create.gke.authorizedNetworks", "a public endpoint admits only"),
    ("authorizedNetworks", [{"cidr": "0.0.0.0/0"}], "cluster.create.gke.authorizedNetworks[0].cidr", "whole internet"),
]


def _check(cfg: dict[str, Any], tmp_path: Path, capsys) -> tuple[int, str]:
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_text(yaml.safe_dump({"config": cfg}))
    rc = cli.main(["check", "bad", "--config", str(path)])
    return rc, capsys.readouterr().err


@pytest.mark.parametrize(("change", "value", "at", "words"), BAD, ids=[f"{b[0]}={b[1]}" for b in BAD])
def test_each_rule_refuses_a_bad_created_cluster(change, value, at, words, tmp_path, capsys):
    cfg = coverage_config()
    _set(cfg["gpu-platform:cluster"]["create"]["gke"], change, copy.deepcopy(value))
    rc, err = _check(cfg, tmp_path, capsys)
    assert rc == 2, err
    line = next((line for line in err.splitlines() if f"gpu-platform:{at}:" in line), "")
    assert words in line, err


def test_gpu_subnets_too_small_for_a_pool(tmp_path, capsys):
    """A /23 split into 32 slices gives /28s: 12 usable addresses, fewer than the pool's 16 nodes."""
    cfg = coverage_config()
    cfg["gpu-platform:cluster"]["create"]["gke"]["network"]["gpu"] = "192.168.0.0/23"
    cfg["gpu-platform:nodePools"][0]["maxNodes"] = 16
    rc, err = _check(cfg, tmp_path, capsys)
    assert rc == 2
    assert (
        "gpu-platform:cluster.create.gke.network.gpu: split into 17 subnets of /28 (12 addresses each), too small "
        "for nodePools[0] (h100-mega: up to 16 nodes)"
    ) in err


def test_a_zonal_cluster_lists_only_its_other_zones(tmp_path, capsys):
    cfg = small_config(zones=["us-central1-a", "us-central1-b"])
    cfg["gpu-platform:cluster"]["location"] = "us-central1-a"
    rc, err = _check(cfg, tmp_path, capsys)
    assert rc == 2 and "gpu-platform:cluster.create.gke.zones[0]: is the zonal cluster's own zone" in err


def test_no_release_channel_needs_a_version(tmp_path, capsys):
    rc, err = _check(small_config(releaseChannel="UNSPECIFIED"), tmp_path, capsys)
    assert rc == 2 and "gpu-platform:cluster.create.gke.releaseChannel: UNSPECIFIED (no release channel) needs" in err
    cfg = small_config(releaseChannel="UNSPECIFIED")
    cfg["gpu-platform:cluster"]["kubernetesVersion"] = "1.33"
    assert _check(cfg, tmp_path, capsys)[0] == 0


def test_gpudirect_needs_a_recent_enough_version(tmp_path, capsys):
    cfg = coverage_config()
    cfg["gpu-platform:cluster"]["kubernetesVersion"] = "1.30"
    rc, err = _check(cfg, tmp_path, capsys)
    assert rc == 2
    assert "gpu-platform:cluster.kubernetesVersion: 1.30 is too old for GPUDirect-RDMA on a3-ultragpu-8g" in err
    assert "TCPXO" not in err  # A3 Mega takes 1.28


def test_an_rdma_pool_in_several_zones_is_refused(tmp_path, capsys):
    cfg = coverage_config()
    cfg["gpu-platform:nodePools"][1]["gke"]["zones"] = ["us-central1-a", "us-central1-b"]
    rc, err = _check(cfg, tmp_path, capsys)
    assert rc == 2 and "gpu-platform:nodePools[1].gke.zones: GPUDirect-RDMA networks use one zone's" in err


def test_the_system_pool_bounds_and_labels(tmp_path, capsys):
    cfg = coverage_config()
    cfg["gpu-platform:cluster"]["create"]["systemNodes"] = {"min": 3, "max": 2}
    cfg["gpu-platform:systemNodeSelector"] = {"node.kubernetes.io/role": "system"}
    rc, err = _check(cfg, tmp_path, capsys)
    assert rc == 2
    assert "gpu-platform:cluster.create.systemNodes.max: is below min (3)" in err
    assert "gpu-platform:systemNodeSelector.node.kubernetes.io/role: the created system pool cannot carry" in err


def test_create_gke_does_not_apply_on_aws(tmp_path, capsys):
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:cluster"]["create"] = {"gke": {}}
    rc, err = _check(cfg, tmp_path, capsys)
    assert rc == 2 and "gpu-platform:cluster.create.gke: does not apply when cloud is aws" in err


def test_a_found_cluster_still_needs_its_gpudirect_networks_named(tmp_path, capsys):
    cfg = coverage_config()
    del cfg["gpu-platform:cluster"]["create"]
    rc, err = _check(cfg, tmp_path, capsys)
    assert rc == 2 and "a topologyAware pool needs its 8 GPU networks" in err


def test_the_created_cluster_passes_the_hardening_policy(small):
    from test_policies import check

    from policies import common, security_policies

    inputs = small.find("gcp:container/cluster:Cluster", "gke-cluster").inputs
    assert check(security_policies.gke_cluster_hardening, common.GKE_CLUSTER, inputs) == []


def test_the_kubernetes_networks_follow_the_toolkit_names():
    """gVNIC networks gvnic-1, gvnic-2... and RDMA ones rdma-0... (cluster-toolkit gke-cluster k8s_network_names),
    one per GPU subnet, in the order of the GPU networks."""
    p = created_plan(coverage_config())
    names = [n["name"] for n in p.k8s_networks]
    assert names == [*(f"gvnic-{i}" for i in range(1, 10)), *(f"rdma-{i}" for i in range(8))]
    assert dict(p.k8s_networks[0]) == {
        "name": "gvnic-1",
        "vpc": "ml-train-tcpxo-0",
        "vpcSubnet": "ml-train-tcpxo-0-sub",
        "deviceMode": "NetDevice",
    }
    assert dict(p.k8s_networks[9]) == {
        "name": "rdma-0",
        "vpc": "ml-train-rdma-b",
        "vpcSubnet": "ml-train-rdma-b-sub-0",
        "deviceMode": "RDMA",
    }


def test_the_kubernetes_network_objects_are_registered():
    r = render_config(coverage_config(), "coverage-gcp-create")
    params = {m["metadata"]["name"]: m for m in r.manifests if m["kind"] == "GKENetworkParamSet"}
    networks = {m["metadata"]["name"]: m for m in r.manifests if m["kind"] == "Network"}
    assert set(params) == set(networks) and len(params) == 17
    assert params["rdma-7"]["spec"] == {
        "vpc": "ml-train-rdma-b",
        "vpcSubnet": "ml-train-rdma-b-sub-7",
        "deviceMode": "RDMA",
    }
    assert networks["gvnic-3"]["spec"] == {
        "type": "Device",
        "parametersRef": {"group": "networking.gke.io", "kind": "GKENetworkParamSet", "name": "gvnic-3"},
    }
    assert render_config(small_config(), "small").of_type("kubernetes:networking.gke.io/v1:Network") == []


def test_create_does_not_apply_to_an_existing_cluster(tmp_path, capsys):
    cfg = stack_config("local")
    cfg["gpu-platform:cluster"]["create"] = {}
    rc, err = _check(cfg, tmp_path, capsys)
    assert rc == 2 and "gpu-platform:cluster.create: does not apply when cloud is existing" in err


def test_a_created_gke_cluster_exports_what_from_stack_reads():
    """A stack that creates its GKE cluster is a cluster stack for the next one, as starter-aws is on EKS: its
    outputs carry every output a gcp cluster.fromStack needs, naming the cluster the stack file names."""
    from components.plan.cluster_stack import GCP_OUTPUTS, ClusterStackPlan
    from components.render.cluster_stack import check_outputs

    outputs = synth.files(render_config(coverage_config(), "coverage-gcp-create"))["outputs.json"]
    outputs = json.loads(outputs)
    identity = {"clusterName": "ml-train", "location": "us-central1", "project": "ml-train-project"}
    p = ClusterStackPlan("acme/gpu/train", "gcp", "ml-train", identity, tuple(GCP_OUTPUTS), ())
    assert check_outputs(p, outputs) is outputs
    assert outputs["clusterCaCertificate"] == "T0ZGTElORS1QTEFDRUhPTERFUi1DQQ=="  # base64 of the offline CA
    assert "clusterCaCertificate" not in json.loads(synth.files(rendered("dev-gcp"))["outputs.json"])


def _version_problems(cfg: dict[str, Any]) -> list[str]:
    try:
        load_spec(cfg)
    except SpecError as err:
        return [line for line in err.lines("f") if "kubernetesVersion" in line and "nodePools[0]" in line]
    return []


@pytest.mark.parametrize(
    ("machine", "version", "expected"),
    [
        (
            "a3-megagpu-8g",
            "1.27",
            "f: gpu-platform:cluster.kubernetesVersion: 1.27 is too old for GPUDirect-TCPXO on a3-megagpu-8g "
            "(nodePools[0]): GKE 1.28 or later",
        ),
        ("a3-megagpu-8g", "1.28", None),
        ("a3-megagpu-8g", "1.35", None),
        (
            "a3-highgpu-8g",
            "1.26",
            "f: gpu-platform:cluster.kubernetesVersion: 1.26 is too old for GPUDirect-TCPX on a3-highgpu-8g "
            "(nodePools[0]): GKE 1.27 or later",
        ),
        ("a3-highgpu-8g", "1.33", None),
        (
            "a3-highgpu-8g",
            "1.34",
            "f: gpu-platform:cluster.kubernetesVersion: 1.34 breaks GPUDirect-TCPX on a3-highgpu-8g "
            "(nodePools[0]): GKE 1.34 nodes run COS 125, whose kernel it does not support (GKE release note "
            "2025-10-17); keep the cluster on 1.33 or move the pool to a3-megagpu-8g (TCPXO)",
        ),
        ("a3-highgpu-8g", "1.36", "breaks"),
    ],
)
def test_gpudirect_runs_on_the_gke_versions_google_names(machine, version, expected):
    """A created cluster's multi-node GPUDirect pool (the networks created for it), against the version table
    (coverage-gcp-create's first pool; its second, A3 Ultra, is held to 1.31+ on its own line)."""
    cfg = coverage_config()
    cfg["gpu-platform:cluster"]["kubernetesVersion"] = version
    pool = cfg["gpu-platform:nodePools"][0]
    pool["instanceTypes"] = [machine]
    got = _version_problems(cfg)
    if expected is None:
        assert got == []
    elif expected == "breaks":
        assert len(got) == 1 and f"{version} breaks GPUDirect-TCPX on a3-highgpu-8g" in got[0]
    else:
        assert got == [expected]


def test_a_found_cluster_with_a_named_version_is_held_to_the_same_table():
    """prod-gcp's TCPX pool runs on the existing VPCs it names; once the stack file names the cluster's version, a
    minor that breaks TCPX is refused too. Without additional networks an A3 High pool is not GPUDirect."""
    cfg = stack_config("prod-gcp")
    cfg["gpu-platform:cluster"]["kubernetesVersion"] = "1.34"
    got = _version_problems(cfg)
    assert len(got) == 1 and got[0].startswith(
        "f: gpu-platform:cluster.kubernetesVersion: 1.34 breaks GPUDirect-TCPX on a3-highgpu-8g (nodePools[0])"
    )
    cfg["gpu-platform:cluster"]["kubernetesVersion"] = "1.33"
    assert _version_problems(cfg) == []


def test_rdma_on_a3_ultra_needs_the_h200s_minor():
    cfg = coverage_config()
    cfg["gpu-platform:cluster"]["kubernetesVersion"] = "1.30"
    with pytest.raises(SpecError) as err:
        load_spec(cfg)
    assert [line for line in err.value.lines("f") if "kubernetesVersion" in line] == [
        "f: gpu-platform:cluster.kubernetesVersion: 1.30 is too old for GPUDirect-RDMA on a3-ultragpu-8g "
        "(nodePools[1]): GKE 1.31 or later"
    ]
    cfg["gpu-platform:cluster"]["kubernetesVersion"] = "1.31"
    load_spec(cfg)


def test_tcpx_on_a_created_cluster_needs_a_named_version():
    """Without kubernetesVersion the release channel picks the version, which may be one whose nodes break TCPX."""
    cfg = coverage_config()
    del cfg["gpu-platform:cluster"]["kubernetesVersion"]
    cfg["gpu-platform:nodePools"][0]["instanceTypes"] = ["a3-highgpu-8g"]
    assert _version_problems(cfg) == [
        "f: gpu-platform:cluster.kubernetesVersion: is required with GPUDirect-TCPX on a3-highgpu-8g (nodePools[0]) "
        "on a created cluster: a release channel's default version may be 1.34.1-gke.1431000 or later, whose nodes "
        "break it; name a minor it runs on"
    ]
    cfg["gpu-platform:nodePools"][0]["instanceTypes"] = ["a3-megagpu-8g"]  # TCPXO has no upper bound
    assert _version_problems(cfg) == []
    # a pool naming its own networks on a created cluster is held to it as well
    cfg["gpu-platform:nodePools"][0]["instanceTypes"] = ["a3-highgpu-8g"]
    cfg["gpu-platform:nodePools"][0]["gke"]["additionalNetworks"] = [
        {"network": f"tcpx-net-{n}", "subnetwork": f"tcpx-sub-{n}"} for n in range(1, 5)
    ]
    assert len(_version_problems(cfg)) == 1
    # a found cluster's version is GKE's answer, checked at deploy
    assert _version_problems(stack_config("prod-gcp")) == []


def test_the_tcpx_bound_is_one_figure():
    """The minor bound of A3 High and the full version a looked-up cluster is held to are the same release."""
    assert cluster_create_rules.GPUDIRECT_MINORS["a3-highgpu-8g"][1] == 34
    # every GPUDirect machine of the catalog has its bounds (the rule reads them for each such pool)
    from components.data import catalog

    assert set(cluster_create_rules.GPUDIRECT_MINORS) == set(catalog.GCP_GPUDIRECT)
    assert cluster_create_rules.TCPX_BROKEN_FROM.startswith("1.34.")


TCPX_WARNING = (
    "GKE cluster ml-prod runs {version}: pools h100-train use GPUDirect-TCPX, which nodes from 1.34.1-gke.1431000 on "
    "break (COS 125; GKE release note 2025-10-17), so their multi-node jobs lose GPUDirect; move them to "
    "a3-megagpu-8g (TCPXO), or hold the cluster's minor upgrades (a maintenance exclusion) before the nodes reach it"
)


@pytest.mark.parametrize(
    ("answer", "warned_of"),
    [
        ({"masterVersion": "1.33.5-gke.1080000", "nodeVersion": "1.33.5-gke.1080000"}, None),
        ({"masterVersion": "1.34.1-gke.1430999", "nodeVersion": "1.33.5-gke.1080000"}, None),
        ({"masterVersion": "1.34.1-gke.1431000", "nodeVersion": "1.33.5-gke.1080000"}, "1.34.1-gke.1431000"),
        ({"masterVersion": "1.33.5-gke.1080000", "nodeVersion": "1.34.2-gke.1000"}, "1.34.2-gke.1000"),
        ({"masterVersion": "1.35.0-gke.100", "nodeVersion": "1.35.0-gke.100"}, "1.35.0-gke.100"),
        ({}, None),
    ],
    ids=["both-before", "just-before", "control-plane-at-bound", "nodes-past", "both-past", "no-versions"],
)
@pytest.mark.parametrize("access", ["found", "from-stack"])
def test_a_cluster_whose_versions_break_tcpx_is_a_warning(monkeypatch, tap_mocks, answer, warned_of, access):
    """prod-gcp runs TCPX on the networks it names. When GKE answers a control-plane version (where a new or
    recreated node pool starts) or a node version from 1.34.1-gke.1431000 on, the deploy warns and names the
    pool, for a cluster found by name and one read from its stack alike (GKE's channel upgrades the cluster
    whatever the program does, so it is not a stop)."""
    cfg = stack_config("prod-gcp")
    if access == "from-stack":
        cfg["gpu-platform:cluster"]["fromStack"] = "acme/clusters/prod"
    tap_mocks.answers["gcp:container/getCluster:getCluster"] = answer
    said: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda text, *a, **k: said.append(text))
    render_config(cfg, "prod-gcp")
    tcpx = [s for s in said if "GPUDirect-TCPX" in s]
    assert tcpx == ([TCPX_WARNING.format(version=warned_of)] if warned_of else [])


def test_a_created_cluster_with_a_tcpx_pool_is_read_from_gke_and_warned(monkeypatch, tap_mocks):
    """A created cluster's release channel moves it on, which the resource's outputs (the state's) do not show: with
    a TCPX pool the created cluster is also read from GKE at every deploy (by the name, location and project it was
    created with), and the versions GKE reports are held to the bound. The resource's own stale masterVersion is not
    what is compared; without a TCPX pool nothing is read."""
    cfg = coverage_config()
    cfg["gpu-platform:cluster"]["kubernetesVersion"] = "1.33"
    cfg["gpu-platform:nodePools"][0]["instanceTypes"] = ["a3-highgpu-8g"]
    del cfg["gpu-platform:pricing"]["overrides"]["a3-megagpu-8g"]
    tap_mocks.answers["gcp:container/getCluster:getCluster"] = {
        "masterVersion": "1.34.3-gke.1200000",
        "nodeVersion": "1.33.5-gke.1080000",
    }
    said: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda text, *a, **k: said.append(text))
    render_config(cfg, "coverage-gcp-create")
    assert (
        "gcp:container/getCluster:getCluster",
        {"name": "ml-train", "location": "us-central1", "project": "ml-train-project"},
    ) in tap_mocks.calls
    assert [s for s in said if "GPUDirect-TCPX" in s] == [
        "GKE cluster ml-train runs 1.34.3-gke.1200000: pools h100-mega use GPUDirect-TCPX, which nodes from "
        "1.34.1-gke.1431000 on break (COS 125; GKE release note 2025-10-17), so their multi-node jobs lose "
        "GPUDirect; move them to a3-megagpu-8g (TCPXO), or hold the cluster's minor upgrades (a maintenance "
        "exclusion) before the nodes reach it"
    ]
    tap_mocks.calls.clear()
    render_config(coverage_config(), "coverage-gcp-create")  # no TCPX pool: no read
    assert [c for c, _ in tap_mocks.calls if c == "gcp:container/getCluster:getCluster"] == []


def test_parallelstore_on_a_created_cluster_gets_private_services_access():
    """Parallelstore runs only in a VPC with private services access: the created VPC gets a reserved /24
    (VPC_PEERING) and the peering to servicenetworking.googleapis.com, and every Kubernetes object (the claim that
    provisions the instance among them) waits for the peering."""
    r = render_config(coverage_config(), "coverage-gcp-create")  # research-scratch
    (reserved,) = r.of_type("gcp:compute/globalAddress:GlobalAddress")
    assert reserved.inputs == {
        "name": "ml-train-psa",
        "project": "ml-train-project",
        "purpose": "VPC_PEERING",
        "addressType": "INTERNAL",
        "prefixLength": 24,
        "network": "offline-placeholder-gke-network",
    }
    (peering,) = r.of_type("gcp:servicenetworking/connection:Connection")
    assert peering.inputs == {
        "network": "offline-placeholder-gke-network",
        "service": "servicenetworking.googleapis.com",
        "reservedPeeringRanges": ["ml-train-psa"],
    }
    assert "gke-private-service-access" in peering.depends_on
    # protected as the claims are: the retained instances still use the peering once the file system is gone
    assert reserved.protect is True and peering.protect is True
    (provider,) = r.of_type("pulumi:providers:kubernetes")
    assert "gke-private-service-access" in provider.depends_on


def test_unprotected_storage_leaves_private_services_access_unprotected():
    cfg = coverage_config()
    cfg["gpu-platform:storage"]["protect"] = False
    r = render_config(cfg, "coverage-gcp-create")
    assert [x.protect for x in r.of_type("gcp:servicenetworking/connection:Connection")] == [False]


def test_no_parallelstore_no_private_services_access():
    cfg = coverage_config()
    cfg["gpu-platform:storage"]["fileSystems"] = [
        fs for fs in cfg["gpu-platform:storage"]["fileSystems"] if fs["kind"] != "parallelstore"
    ]
    assert created_plan(cfg).private_service_access is None
    r = render_config(cfg, "coverage-gcp-create")
    assert r.of_type("gcp:compute/globalAddress:GlobalAddress") == []
    assert r.of_type("gcp:servicenetworking/connection:Connection") == []


def test_a_created_zonal_cluster_is_a_cluster_stack_too():
    """GKE leaves a zonal cluster's own zone out of its node locations: the created cluster exports it anyway, and
    a stack reading a zonal cluster does not require the output (an empty list means the one zone)."""
    from components.plan.cluster_stack import cluster_stack_plan
    from components.render.cluster_stack import check_outputs

    cfg = small_config()
    cfg["gpu-platform:cluster"]["location"] = "us-central1-a"
    outputs = json.loads(synth.files(render_config(cfg, "zonal"))["outputs.json"])
    assert outputs["location"] == "us-central1-a"
    assert "us-central1-a" in outputs["nodeLocations"]
    reader = stack_config("dev-gcp")
    reader["gpu-platform:cluster"] |= {"location": "us-central1-a", "fromStack": "acme/gpu/zonal"}
    p = cluster_stack_plan(load_spec(reader))
    assert "nodeLocations" in p.optional and "nodeLocations" not in p.required
    got = {**outputs, "nodeLocations": []}
    assert check_outputs(p, got) is got
    regional = stack_config("dev-gcp")
    regional["gpu-platform:cluster"]["fromStack"] = "acme/gpu/regional"
    assert "nodeLocations" in cluster_stack_plan(load_spec(regional)).required
