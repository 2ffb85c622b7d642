"""A created GKE cluster's fixed costs and shared storage (issues 30.3 and 31.3 on ``cluster.create.gke``).

Expected figures are computed by hand from the sources cited in components/data/prices.py:
- GKE management fee $0.10 per cluster-hour (https://cloud.google.com/kubernetes-engine/pricing);
- Cloud NAT $0.0014 per VM-hour using the gateway, up to 32 VMs, and $0.005 per hour per NAT IP
  (https://cloud.google.com/nat/pricing);
- e2-standard-8 on-demand in us-central1: $0.26804568 (Cyclenerd/google-cloud-pricing-cost-calculator@fd66b26ff84f
  pricing.yml compute.instance.e2-standard-8.cost.us-central1.hour).
The coverage stack (tests/fixtures/coverage/Pulumi.coverage-gcp-create.yaml): system pool e2-standard-8 2..4 nodes,
h100-mega 0..4 nodes at a $30.00 spot override, h200-ultra 0..2 nodes at $35.00.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import render_config, rendered, stack_config
from test_gke_create import coverage_config, created_plan, small_config

from components.cli import synth
from components.cli.loader import load_spec
from components.plan import cost

FILESTORE, GCS_FUSE, PARALLELSTORE = (
    "gcpFilestoreCsiDriverConfigs",
    "gcsFuseCsiDriverConfigs",
    "parallelstoreCsiDriverConfigs",
)


def fixed_of(cfg: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["item"]: f for f in cost.report(load_spec(cfg), "test").get("fixed", [])}


# -------------------------------------------------------------------------------------------------- cost


def test_the_coverage_stack_counts_the_gke_fixed_costs():
    doc = cost.report(load_spec(coverage_config()), "coverage-gcp-create")
    fixed = {f["item"]: f for f in doc["fixed"]}
    assert list(fixed) == [
        "GKE cluster management fee",
        "Cloud NAT gateway (per VM using it, max 32)",
        "Cloud NAT external IP",
        "system nodes (e2-standard-8, on-demand)",
    ]
    assert fixed["GKE cluster management fee"]["hourlyUsd"] == {"min": 0.1, "max": 0.1}
    # VMs on the NATed subnet: 2 system + 0 GPU nodes at min; 4 + 4 + 2 at max
    nat = fixed["Cloud NAT gateway (per VM using it, max 32)"]
    assert nat["count"] == {"min": 2, "max": 10}
    assert nat["hourlyUsd"] == {"min": pytest.approx(0.0028), "max": pytest.approx(0.014)}
    assert fixed["Cloud NAT external IP"]["hourlyUsd"] == {"min": 0.005, "max": 0.005}
    system = fixed["system nodes (e2-standard-8, on-demand)"]
    assert system["count"] == {"min": 2, "max": 4}
    assert system["hourlyUsd"] == {"min": pytest.approx(0.53609136), "max": pytest.approx(1.07218272)}
    assert "us-central1" in system["usdPerHour"]["source"]
    # pools 4 x 30.00 + 2 x 35.00 = 190.00, plus 0.10 + 0.014 + 0.005 + 1.07218272
    assert doc["total"]["maxHourlyUsd"] == pytest.approx(191.1912, abs=1e-4)
    # no GPU node at min: 0.10 + 0.0028 + 0.005 + 0.53609136
    assert doc["total"]["minHourlyUsd"] == pytest.approx(0.6439, abs=1e-4)


def test_the_fixed_costs_reach_the_synth_summary():
    files = synth.files(render_config(coverage_config(), "coverage-gcp-create"))
    assert json.loads(files["cost.json"])["fixed"][0]["item"] == "GKE cluster management fee"
    summary = files["summary.md"]
    assert "| GKE cluster management fee | 1..1 | $0.1000 | $0.1000 | $0.1000 |" in summary
    assert "https://cloud.google.com/nat/pricing" in summary


def test_cloud_nat_is_counted_for_at_most_32_vms():
    cfg = coverage_config()
    cfg["gpu-platform:nodePools"][0]["maxNodes"] = 40
    nat = fixed_of(cfg)["Cloud NAT gateway (per VM using it, max 32)"]
    assert nat["count"] == {"min": 2, "max": 32}
    assert nat["hourlyUsd"]["max"] == pytest.approx(32 * 0.0014)


def test_the_default_system_machine_is_priced():
    cfg = coverage_config()
    del cfg["gpu-platform:cluster"]["create"]["systemNodes"]["machineType"]
    system = fixed_of(cfg)["system nodes (e2-standard-4, on-demand)"]
    assert system["hourlyUsd"] == {
        "min": pytest.approx(2 * 0.13402284, abs=1e-6),
        "max": pytest.approx(4 * 0.13402284, abs=1e-6),
    }


def test_system_nodes_outside_the_priced_region_are_unknown():
    cfg = small_config()  # dev-gcp, created; moved to europe-west4
    cfg["gpu-platform:cluster"]["location"] = "europe-west4"
    doc = cost.report(load_spec(cfg), "test")
    fixed = {f["item"]: f for f in doc["fixed"]}
    assert fixed["GKE cluster management fee"]["hourlyUsd"]["max"] == 0.1  # flat in every region
    item = "system nodes (e2-standard-4, on-demand)"
    assert fixed[item]["usdPerHour"]["usd"] is None
    assert "us-central1 only" in fixed[item]["usdPerHour"]["unknown"]
    assert item in doc["total"]["unknownPools"] and doc["total"]["maxHourlyUsd"] is None


def test_a_found_gke_cluster_has_no_fixed_costs():
    assert "fixed" not in cost.report(load_spec(stack_config("dev-gcp")), "dev-gcp")
    assert "fixed" not in json.loads(synth.files(rendered("prod-gcp"))["cost.json"])


# ----------------------------------------------------------------------------------------------- storage


def test_the_created_cluster_enables_exactly_the_csi_addons_its_file_systems_need():
    assert created_plan(coverage_config()).csi_addons == (FILESTORE, GCS_FUSE, PARALLELSTORE)
    assert created_plan(small_config()).csi_addons == ()  # dev-gcp declares no storage
    cfg = small_config()
    cfg["gpu-platform:storage"] = {
        "fileSystems": [{"name": "scratch", "kind": "parallelstore", "scope": "cluster", "quotas": {}}]
    }
    assert created_plan(cfg).csi_addons == (PARALLELSTORE,)


def test_the_plan_text_names_the_csi_addons():
    from components.plan.gcp import cluster_create

    lines = cluster_create.text(created_plan(coverage_config()))
    assert (
        "  CSI add-ons on (gpu-platform:storage): GcpFilestoreCsiDriver, GcsFuseCsiDriver, ParallelstoreCsiDriver; "
        "private services access ml-train-psa (Parallelstore)"
    ) in lines


def test_storage_on_a_created_cluster_renders_with_its_addons_on():
    r = render_config(coverage_config(), "coverage-gcp-create")
    cluster = r.find("gcp:container/cluster:Cluster", "gke-cluster").inputs
    assert cluster["addonsConfig"] == {
        "gcpFilestoreCsiDriverConfig": {"enabled": True},
        "gcsFuseCsiDriverConfig": {"enabled": True},
        "parallelstoreCsiDriverConfig": {"enabled": True},
    }
    # nothing looked up: the add-on check reads a found cluster only
    assert "gcp:container/getCluster:getCluster" not in r.lookups
    sc = next(m for m in r.manifests if m["kind"] == "StorageClass" and m["metadata"]["name"] == "checkpoints")
    assert sc["provisioner"] == "filestore.csi.storage.gke.io"
    assert sc["parameters"] == {"tier": "premium", "network": "ml-train-net"}  # BASIC_SSD; the created VPC
    bucket = r.find("gcp:storage/bucket:Bucket", "bucket-research-data").inputs
    assert bucket["name"] == "ml-train-research-data" and bucket["location"] == "US-CENTRAL1"


def test_a_created_cluster_without_storage_sets_no_addons():
    r = render_config(small_config(), "small")
    assert "addonsConfig" not in r.find("gcp:container/cluster:Cluster", "gke-cluster").inputs


def test_a_found_cluster_keeps_the_default_filestore_network():
    from components.plan import storage

    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:storage"] = {"fileSystems": [{"name": "fs", "kind": "filestore", "quotas": {}}]}
    plan = storage.storage_plan(load_spec(cfg))
    assert plan is not None
    assert "network" not in plan.file_systems[0].storage_class["parameters"]
