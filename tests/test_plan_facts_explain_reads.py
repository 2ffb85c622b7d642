"""What the plan holds for ``gpu-platform explain``, the summary and the stack outputs beyond the pools and
tenants (issue 28: they read the plan, not the spec): reserved capacity, Bottlerocket's device-plugin settings,
the DRA cluster version, the stack's own ServiceMonitor labels, and the small pure helpers that read plan values
(the driver, the topology levels, the waitForPodsReady settings, EFA counts by instance type). Expectations come
from the stack files and the cited upstream facts, not from the functions under test."""

from __future__ import annotations

from pathlib import Path

from conftest import stack_config

from components.cli.loader import load_spec
from components.cli.synth import read_stack_file
from components.explain import summary
from components.plan import derive, kueue, plan
from components.plan.aws import efa

COVERAGE_AWS = Path(__file__).parent / "fixtures" / "coverage" / "Pulumi.coverage-aws.yaml"


def _plan(stack: str):
    return plan.build(load_spec(stack_config(stack)), stack)


def _coverage_aws():
    return plan.build(load_spec(read_stack_file(COVERAGE_AWS)), "coverage-aws")


def test_reservations_are_the_stack_files_per_pool():
    """prod-aws reserves one ODCR for h100-inference (stacks/Pulumi.prod-aws.yaml: ids, instance type, AZ); the
    coverage stack a Capacity Block, a tagged Karpenter reservation and an open ODCR; other stacks none."""
    r = _plan("prod-aws").reservations
    assert list(r) == ["h100-inference"]
    odcr = r["h100-inference"]
    assert (odcr.kind, odcr.match, odcr.ids) == ("on-demand", "specific", ("cr-0c1d2e3f4a5b6c7d8",))
    assert (odcr.instance_type, odcr.availability_zone) == ("p5.48xlarge", "us-east-1a")
    assert odcr.description == "reservation cr-0c1d2e3f4a5b6c7d8"
    assert odcr.used_as == "launch template capacity reservation target"
    cov = _coverage_aws().reservations
    assert list(cov) == ["b200-block", "h200-reserved", "l40s-odcr"]
    assert cov["b200-block"].description == "Capacity Block cr-0b200b200b200b2001"
    assert cov["h200-reserved"].description == "reservation tagged purpose=h200-training, team=research"
    assert dict(cov["h200-reserved"].tags) == {"purpose": "h200-training", "team": "research"}
    assert (
        cov["h200-reserved"].used_as == "EC2NodeClass capacityReservationSelectorTerms, NodePool capacity type reserved"
    )
    assert cov["l40s-odcr"].description == "any matching reservation"
    for stack in ("dev-aws", "dev-gcp", "local"):
        assert _plan(stack).reservations is None, stack


def test_bottlerocket_device_plugins_hold_uuid_ids_and_the_pools_sharing():
    """prod-aws's Bottlerocket pools (a100-train, a100-gang) share nothing: only UUID device IDs (which
    dcgm-exporter matches). The coverage stack's l4-notebooks time-slices 4 ways, refusing more than one unit, and
    l4-serving runs MPS x4 (its stack file); an al2023 pool has no entry."""
    assert {k: dict(v) for k, v in _plan("prod-aws").aws.bottlerocket_device_plugins.items()} == {
        "a100-gang": {"device-id-strategy": "uuid"},
        "a100-train": {"device-id-strategy": "uuid"},
    }
    plugins = _coverage_aws().aws.bottlerocket_device_plugins
    notebooks = plugins["l4-notebooks"]
    assert notebooks["device-sharing-strategy"] == "time-slicing"
    assert dict(notebooks["time-slicing"]) == {
        "replicas": 4,
        "rename-by-default": True,
        "fail-requests-greater-than-one": True,
    }
    assert plugins["l4-serving"]["device-sharing-strategy"] == "mps"
    assert "l4-shared" not in _plan("dev-aws").aws.bottlerocket_device_plugins


def test_dra_plan_carries_the_clusters_kubernetes_version():
    assert _plan("dra-existing").dra.kubernetes_version == "1.34"  # stacks/Pulumi.dra-existing.yaml


def test_monitoring_plan_keeps_the_stacks_own_service_monitor_labels():
    """``labels`` adds gpu-platform's managed-by; the summary quotes only the stack file's labels."""
    m = _coverage_aws().monitoring
    assert dict(m.service_monitor_labels) == {"prometheus": "platform"}
    assert dict(m.labels) == {"app.kubernetes.io/managed-by": "gpu-platform", "prometheus": "platform"}


def test_driver_of_resolves_auto_per_cloud():
    """auto: preinstalled on EKS (the AMIs carry it), GKE's latest on GKE, the operator's on existing clusters."""
    assert derive.driver_of("auto", "aws") == "preinstalled"
    assert derive.driver_of("auto", "gcp") == "gke-latest"
    assert derive.driver_of("auto", "existing") == "operator"
    assert derive.driver_of("operator", "aws") == "operator"


def test_topology_levels_explicit_or_the_clouds():
    assert kueue.levels_of(["a", "b"], "aws") == ["a", "b"]
    assert kueue.levels_of(None, "gcp")[-1] == "kubernetes.io/hostname"
    assert kueue.levels_of(None, "existing") is None


def test_waits_below_cold_start_name_the_short_settings():
    """A cold start is 15 minutes (derive.COLD_START_SECONDS); settings left out are not short."""
    assert derive.waits_below_cold_start({"waitForPodsReadyTimeout": "10m"}) == ["waitForPodsReadyTimeout"]
    assert derive.waits_below_cold_start(
        {"waitForPodsReadyTimeout": "1h", "waitForPodsReadyRecoveryTimeout": "5m"}
    ) == ["waitForPodsReadyRecoveryTimeout"]
    assert derive.waits_below_cold_start({"waitForPodsReadyTimeout": "15m"}) == []


def test_efa_counts_by_instance_type():
    """p5.48xlarge has 32 EFA interfaces, p4de.24xlarge 4 (EC2 instance type data); g6 has none."""
    assert efa.efa_capable_types(["p5.48xlarge"]) and efa.interfaces_of_types(["p5.48xlarge"]) == 32
    assert efa.interfaces_of_types(["p4de.24xlarge"]) == 4
    assert not efa.efa_capable_types(["g6.xlarge"])
    assert not efa.efa_capable_types([])


def test_summary_names_the_cluster_from_the_plan():
    """The header's cluster: the EKS or GKE cluster's name, an existing cluster's context."""
    assert summary._cluster(_plan("prod-aws")) == "ml-prod"
    assert summary._cluster(_plan("local")) == "kind-gpu"  # stacks/Pulumi.local.yaml cluster.context
    existing = plan.build(
        load_spec(read_stack_file(COVERAGE_AWS.with_name("Pulumi.coverage-existing.yaml"))), "coverage-existing"
    )
    assert summary._cluster(existing) == "current context"  # a kubeconfig, no context


def test_efa_summary_from_the_plan():
    """prod-aws's EFA pools a100-gang and a100-train: p4de.24xlarge, 4 interfaces each, one card per interface."""
    lines = efa.summary(_plan("prod-aws"))
    rows = [line for line in lines if line.startswith("| a100-")]
    assert [r.split(" | ")[:3] for r in rows] == [
        ["| a100-gang", "p4de.24xlarge", "4"],
        ["| a100-train", "p4de.24xlarge", "4"],
    ]
    assert efa.summary(_plan("dev-gcp")) == []
