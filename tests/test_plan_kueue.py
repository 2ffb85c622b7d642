"""``Plan.kueue`` (components/plan/kueue.py ``KueueObjects``): Kueue's Topology and the pools' ProvisioningRequest
admission checks, the facts the Kueue component renders them from. Expected values are read off the stack files
by hand: prod-aws's a100-train is a managed (Cluster Autoscaler) pool with ``queuedProvisioning``-style atomic
scale-up, and its topology-aware pools use the EC2 network topology labels; prod-gcp's h100-burst is a GKE
queued-provisioning (DWS) pool."""

from __future__ import annotations

from conftest import manifests, rendered, stack_config

from components.cli.loader import load_spec
from components.plan import plan

ATOMIC = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"  # cluster-autoscaler provisioningrequest classes
DWS = "queued-provisioning.gke.io"


def _kueue(stack: str):
    return plan.build(load_spec(stack_config(stack)), stack).kueue


def test_no_kueue_objects_without_kueue():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:addons"] = {**cfg.get("gpu-platform:addons", {}), "kueue": False}
    assert plan.build(load_spec(cfg), "dev-aws").kueue is None


def test_prod_aws_has_one_atomic_check_and_the_ec2_network_topology():
    k = _kueue("prod-aws")
    assert [(c.pool, c.name, c.config_spec["provisioningClassName"]) for c in k.provisioning_checks] == [
        ("a100-train", "a100-train-atomic", ATOMIC)
    ]
    assert k.topology_levels == (
        "topology.k8s.aws/network-node-layer-1",
        "topology.k8s.aws/network-node-layer-2",
        "topology.k8s.aws/network-node-layer-3",
        "kubernetes.io/hostname",
    )


def test_prod_gcp_checks_are_by_pool_name_dws_for_queued_provisioning():
    k = _kueue("prod-gcp")
    names = [(c.name, c.config_spec["provisioningClassName"]) for c in k.provisioning_checks]
    assert ("h100-burst-dws", DWS) in names
    assert [c.pool for c in k.provisioning_checks] == sorted(c.pool for c in k.provisioning_checks)


def test_dev_aws_has_neither_topology_nor_checks():
    k = _kueue("dev-aws")
    assert k.topology_levels is None and k.provisioning_checks == ()


def test_rendered_admission_checks_and_configs_are_the_plans():
    k = _kueue("prod-gcp")
    r = rendered("prod-gcp")
    configs = {o["metadata"]["name"]: o["spec"] for o in manifests(r, "ProvisioningRequestConfig")}
    assert configs == {c.name: plan.plain(c.config_spec) for c in k.provisioning_checks}
    checks = {o["metadata"]["name"] for o in manifests(r, "AdmissionCheck")}
    assert checks == {c.name for c in k.provisioning_checks}
