"""Shared derivations (components/plan/derive.py) pinned directly: the borrowing ceiling per pool, the capacity
report, reserved label keys, tolerations, pool labels per device plugin, defaults per cloud and the per-spec
cache. Numbers are worked out by hand from the shipped stack files (quoted in each test)."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import stack_config

from components.cli.loader import load_spec
from components.plan import ceilings, derive

GPU = "nvidia.com/gpu"


def spec_of(stack: str, edit=None):
    cfg = stack_config(stack)
    if edit:
        edit(cfg)
    return load_spec(cfg)


def tenant(spec, name: str):
    return next(t for t in spec.tenants if t.name == name)


def tenant_cfg(cfg: dict[str, Any], name: str) -> dict[str, Any]:
    return next(t for t in cfg["gpu-platform:tenants"] if t["name"] == name)


# ------------------------------------------------------------------------------------ borrowing ceiling

# prod-aws: a100-train 4 nodes x 8 = 32 GPUs; h100-spot maxGpus 32; l4-notebooks 3 x 4 L4 time-sliced x4 = 48
# units; h100-inference 2 x 8 H100 with MIG 3g.40gb + 2g.20gb + 2x 1g.10gb per GPU; a100-gang (applied-ml's own,
# Volcano) 2 nodes x 8 = 16 GPUs. Default cohort: gpu-platform.
#
# Each tenant's ceiling depends on who admits it (components/plan/ceilings.py): a Kueue tenant's is Kueue's
# maximum capacity (kueue v0.19.2 resource_node.go potentialAvailable: its own nominal quota plus what the
# cohort's other queues lend on the flavor, within its borrowingLimit), a Volcano tenant's its queue's capability
# (nominal + borrowingLimit, or the whole pool), a tenant without a scheduler its nominal quota.


def _pool_ceilings(spec, name):
    return ceilings.tenant_pool_ceiling_units(spec, tenant(spec, name))


def test_a_kueue_tenants_ceiling_is_what_its_cohort_lends_not_the_pool():
    """research (Kueue): a100-train nominal 16 + borrowingLimit 8, but no other ClusterQueue of cohort gpu-platform
    has quota there, so potentialAvailable = min(16 + 8, 0 + 16) = 16; h100-spot: 16, nobody else: 16. Total 32
    (the pools bring 32 each: that capacity is nobody's quota)."""
    spec = spec_of("prod-aws")
    assert _pool_ceilings(spec, "research") == {"a100-train": {GPU: 16}, "h100-spot": {GPU: 16}}
    assert ceilings.tenant_ceiling_units(spec, tenant(spec, "research")) == {GPU: 32}


def test_a_kueue_tenant_borrows_what_another_lends_within_its_borrowing_limit():
    """notebooks (dev: never preempts, lendingLimit 0) and research both on l4-notebooks: research 8 L4 x 4 = 32
    units lent in full, notebooks 4 x 4 = 16 units kept back (localQuota 16, lends 0): cohort SubtreeQuota 32.
    research: 0 + 32 = 32 (what it lends counts for itself too; no borrowingLimit there); notebooks: 16 + 32 = 48.
    research lending at most 2 L4 (8 units) keeps 32 - 8 = 24 back and puts 8 in: research 24 + 8, notebooks
    16 + 8."""

    def edit(cfg):
        tenant_cfg(cfg, "research")["gpuQuota"]["l4-notebooks"] = 8

    spec = spec_of("prod-aws", edit)
    assert _pool_ceilings(spec, "research")["l4-notebooks"] == {GPU: 32}
    assert _pool_ceilings(spec, "notebooks")["l4-notebooks"] == {GPU: 48}
    assert ceilings.tenant_ceiling_units(spec, tenant(spec, "research")) == {GPU: 16 + 16 + 32}

    def lend(cfg):  # research lends at most 2 L4 (8 units): localQuota 32 - 8 = 24, cohort 8
        edit(cfg)
        tenant_cfg(cfg, "research")["lendingLimit"] = {"l4-notebooks": 2}

    spec = spec_of("prod-aws", lend)
    assert _pool_ceilings(spec, "research")["l4-notebooks"] == {GPU: 24 + 8}
    assert _pool_ceilings(spec, "notebooks")["l4-notebooks"] == {GPU: 16 + 8}


def test_a_volcano_tenants_ceiling_is_its_capability():
    """applied-ml (Volcano) on a100-gang: 16, the whole 2 x 8 pool; with a borrowingLimit the capability grows only
    to what the pool brings (Volcano lends idle capacity): its quota lowered to 8 with borrowingLimit 4: 12."""
    spec = spec_of("prod-aws")
    assert derive.capability_units(spec, tenant(spec, "applied-ml")) == {GPU: 16}
    assert _pool_ceilings(spec, "applied-ml") == {"a100-gang": {GPU: 16}}

    def edit(cfg):
        tenant_cfg(cfg, "applied-ml")["gpuQuota"] = {"a100-gang": 8}
        tenant_cfg(cfg, "applied-ml")["borrowingLimit"] = {"a100-gang": 4}

    spec = spec_of("prod-aws", edit)
    assert _pool_ceilings(spec, "applied-ml") == {"a100-gang": {GPU: 12}}


def test_ceiling_counts_units_per_gpu():
    """serving's 16 H100 are the whole pool: 16 x (1 + 1 + 2) MIG devices; it lends 4 GPUs (lendingLimit) to a
    cohort where nobody else has the flavor, so it holds 12 kept back + 4 lent = 16 of each GPU's share."""
    spec = spec_of("prod-aws")
    assert ceilings.tenant_ceiling_units(spec, tenant(spec, "serving")) == {
        "nvidia.com/mig-1g.10gb": 32,
        "nvidia.com/mig-2g.20gb": 16,
        "nvidia.com/mig-3g.40gb": 16,
    }


def test_without_a_cohort_the_ceiling_is_the_nominal_quota():
    """No cohort (none set, no default): nothing to borrow, the ceiling is the nominal quota per pool."""

    def edit(cfg):
        cfg["gpu-platform:scheduling"] = {"defaultCohort": None}
        tenant_cfg(cfg, "research").pop("borrowingLimit")
        tenant_cfg(cfg, "serving").pop("lendingLimit")

    spec = spec_of("prod-aws", edit)
    assert _pool_ceilings(spec, "research") == {"a100-train": {GPU: 16}, "h100-spot": {GPU: 16}}


def test_a_quota_above_the_pool_size_is_its_own_ceiling():
    """Oversubscribed (prod-aws allows 1.5x): research's 40 and notebooks' 8 on the 32-GPU a100-train. Kueue
    counts quota, not nodes: cohort SubtreeQuota 40 + 0 (notebooks never preempts: lendingLimit 0, localQuota 8);
    research: min(40 + 8, 0 + 40) = 40; notebooks: 8 + 40 = 48, more than the pool brings (its pods then wait for
    nodes, not for quota)."""

    def edit(cfg):
        tenant_cfg(cfg, "research")["gpuQuota"]["a100-train"] = 40  # 40 + notebooks' 8 = 48 of 32: 1.5x
        tenant_cfg(cfg, "notebooks")["gpuQuota"]["a100-train"] = 8

    spec = spec_of("prod-aws", edit)
    assert _pool_ceilings(spec, "research")["a100-train"] == {GPU: 40}
    assert _pool_ceilings(spec, "notebooks")["a100-train"] == {GPU: 48}


def test_quota_units_are_the_ceiling_with_a_batch_scheduler_and_nominal_without():
    """research: 16 + 16 with Kueue (Kueue's maximum capacity: nothing else lends on its pools), and 16 + 16
    without a scheduler (nothing lends); with Kueue off and Volcano on, research is Volcano's: capability
    a100-train 16 + borrowingLimit 8 = 24, h100-spot the whole pool 32."""
    spec = spec_of("prod-aws")
    assert ceilings.tenant_ceiling_units(spec, tenant(spec, "research")) == {GPU: 32}

    def off(cfg, volcano=False):
        cfg["gpu-platform:addons"] = {**cfg["gpu-platform:addons"], "kueue": False, "volcano": volcano}
        tenant_cfg(cfg, "applied-ml").pop("scheduler")
        cfg["gpu-platform:nodePools"][0].pop("topologyAware")

    spec = spec_of("prod-aws", off)
    assert ceilings.tenant_ceiling_units(spec, tenant(spec, "research")) == {GPU: 32}
    spec = spec_of("prod-aws", lambda cfg: off(cfg, volcano=True))
    assert ceilings.tenant_ceiling_units(spec, tenant(spec, "research")) == {GPU: 24 + 32}


# ------------------------------------------------------------------------------------ capacity report


def test_capacity_report_compares_quota_units_with_what_each_pool_brings():
    """prod-aws, in stack-file order: a100-train research 16 of 32 (0.5); h100-inference serving's 16 H100 are
    the pool (1.0); h100-spot research 16 of 32 (0.5); l4-notebooks 48 units, notebooks 4 x 4 = 16 (1/3);
    a100-gang applied-ml 16 of 2 x 8 = 16 (1.0)."""
    report = {c.pool: c for c in derive.capacity_report(spec_of("prod-aws"))}
    assert [c.pool for c in derive.capacity_report(spec_of("prod-aws"))] == [
        "a100-train",
        "h100-inference",
        "h100-spot",
        "l4-notebooks",
        "a100-gang",
    ]
    assert report["l4-notebooks"].resource_units == {GPU: 48} and report["l4-notebooks"].quota_units == {GPU: 16}
    assert report["a100-gang"].resource_units == {GPU: 16} and report["a100-gang"].quota_units == {GPU: 16}
    assert report["a100-train"].resource_units == {GPU: 32} and report["a100-train"].quota_units == {GPU: 16}
    assert report["h100-inference"].quota_units == {
        "nvidia.com/mig-1g.10gb": 32,
        "nvidia.com/mig-2g.20gb": 16,
        "nvidia.com/mig-3g.40gb": 16,
    }
    assert {c.pool: c.ratio for c in report.values()} == {
        "a100-train": 0.5,
        "h100-inference": 1.0,
        "h100-spot": 0.5,
        "l4-notebooks": pytest.approx(1 / 3),
        "a100-gang": 1.0,
    }


def test_capacity_ratio_is_the_worst_resource_and_inf_for_an_empty_pool():
    """research and notebooks at 8 L4 each: (32 + 32) / 48 = 4/3; a pool nobody has quota on: 0.0; a pool that
    can bring nothing (0 GPUs): infinitely oversubscribed."""

    def edit(cfg):
        tenant_cfg(cfg, "notebooks")["gpuQuota"]["l4-notebooks"] = 8
        tenant_cfg(cfg, "research")["gpuQuota"]["l4-notebooks"] = 8  # Kueue tenants only: Kueue hands this pool out
        tenant_cfg(cfg, "serving")["gpuQuota"] = {"h100-inference": 8}
        tenant_cfg(cfg, "serving").pop("lendingLimit")

    spec = spec_of("prod-aws", edit)
    report = {c.pool: c for c in derive.capacity_report(spec)}
    assert report["l4-notebooks"].ratio == pytest.approx(4 / 3)
    assert report["h100-inference"].ratio == 0.5  # each MIG profile at half
    unused = spec.model_copy(update={"tenants": [tenant(spec, "notebooks")]})
    assert {c.pool: c.ratio for c in derive.capacity_report(unused)}["a100-train"] == 0.0
    empty_pool = spec.pool("l4-notebooks").model_copy(update={"max_nodes": 0})
    empty = spec.model_copy(update={"node_pools": [empty_pool], "tenants": [tenant(spec, "notebooks")]})
    (only,) = derive.capacity_report(empty)
    assert only.resource_units == {GPU: 0} and only.ratio == float("inf")


# ------------------------------------------------------------------------------------------- labels


@pytest.mark.parametrize(
    ("label", "reserved"),
    [
        ("nvidia.com/gpu.product", True),
        ("nvidia.com/mig.config", True),
        ("nvidia.com/device-plugin.config", True),
        ("gke-no-default-nvidia-gpu-device-plugin", True),
        ("kubernetes.io/arch", True),
        ("node.kubernetes.io/instance-type", True),
        ("k8s.io/x", True),
        ("topology.k8s.io/zone", True),
        ("karpenter.sh/capacity-type", True),
        ("karpenter.k8s.aws/instance-family", True),
        ("gpu-platform/pool", True),
        ("team", False),
        ("kubernetes.io", False),  # no '/': the whole key is a name without a domain
        ("example.com/team", False),
        ("nvidia.com/gpu", False),
        ("notkubernetes.io/x", False),
        ("mykarpenter.sh/x", False),
    ],
)
def test_reserved_label_domains_and_prefixes(label, reserved):
    """A domain is reserved itself and with any subdomain ('.'-separated), never as a mere suffix of another
    name; NVIDIA's derived keys by prefix; a key without a domain is the user's."""
    assert derive.reserved_label(label) is reserved


def test_pool_labels_per_device_plugin():
    """Every pool: pool name, lower-cased model, gpu.present. Operator pools: the config label of their
    sharing; Bottlerocket pools: the operand opt-outs; user labels merged last; keys sorted."""
    spec = spec_of("prod-aws")
    base = {"nvidia.com/gpu.present": "true"}
    assert derive.pool_labels(spec, spec.pool("l4-notebooks")) == {
        "gpu-platform/gpu-model": "l4",
        "gpu-platform/pool": "l4-notebooks",
        "nvidia.com/device-plugin.config": "l4-notebooks",
        **base,
    }
    assert derive.pool_labels(spec, spec.pool("h100-inference"))["nvidia.com/mig.config"] == "h100-inference"
    assert derive.pool_labels(spec, spec.pool("a100-train")) == {
        "gpu-platform/gpu-model": "a100-80gb",
        "gpu-platform/pool": "a100-train",
        **base,
        **derive.BOTTLEROCKET_OPERAND_LABELS,
    }
    assert list(derive.pool_labels(spec, spec.pool("a100-train"))) == sorted(
        derive.pool_labels(spec, spec.pool("a100-train"))
    )


def test_gke_pools_opt_out_of_gkes_plugin_only_when_the_operator_or_dra_serves_them():
    """GKE's own device plugin is turned off per pool only where another plugin (operator, DRA) serves it."""
    spec = spec_of("dev-gcp")  # gke-latest drivers: GKE's own plugin serves the GPUs
    assert derive.GKE_NO_DEVICE_PLUGIN_LABEL not in derive.pool_labels(spec, spec.pool("l4-shared"))
    assert derive.DEVICE_PLUGIN_CONFIG_LABEL not in derive.pool_labels(spec, spec.pool("l4-shared"))

    def operator(cfg):
        cfg["gpu-platform:gpuOperator"] = {"driver": "operator"}
        for p in cfg["gpu-platform:nodePools"]:
            p["os"] = "ubuntu"

    spec = spec_of("dev-gcp", operator)
    labels = derive.pool_labels(spec, spec.pool("l4-shared"))
    assert labels[derive.GKE_NO_DEVICE_PLUGIN_LABEL] == "true"
    assert labels[derive.DEVICE_PLUGIN_CONFIG_LABEL] == "l4-shared"
    dra = spec.model_copy(update={"gpu_operator": spec.gpu_operator.model_copy(update={"allocation": "dra"})})
    labels = derive.pool_labels(dra, dra.pool("l4-shared"))
    assert labels[derive.GKE_NO_DEVICE_PLUGIN_LABEL] == "true" and derive.DEVICE_PLUGIN_CONFIG_LABEL not in labels


def test_user_labels_are_merged_into_the_derived_ones():
    """A pool's own (non-reserved) labels reach its nodes next to the derived ones."""

    def edit(cfg):
        cfg["gpu-platform:nodePools"][0]["labels"] = {"team": "ml"}

    spec = spec_of("dev-aws", edit)
    assert derive.pool_labels(spec, spec.node_pools[0])["team"] == "ml"


# ------------------------------------------------------------------------------------------- taints


def test_tolerations_match_values_exactly_and_valueless_taints_by_existence():
    """The GPU taint has a value (Equal); a pool's own taint without a value is tolerated with Exists and no
    value key; GKE queued-provisioning nodes add their own taint."""

    def edit(cfg):
        cfg["gpu-platform:nodePools"][0]["taints"] = [{"key": "dedicated", "effect": "NoExecute"}]

    spec = spec_of("dev-aws", edit)
    assert derive.tolerations(spec.node_pools[0]) == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"},
    ]
    gcp = spec_of("prod-gcp")
    assert derive.tolerations(gcp.pool("h100-burst"))[1:] == [
        {"key": "cloud.google.com/gke-queued", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    ]
    assert len(derive.tolerations(gcp.pool("h100-train"))) == 1


# ----------------------------------------------------------------------------------------- defaults


@pytest.mark.parametrize(
    ("stack", "driver", "os"), [("dev-aws", "preinstalled", "al2023"), ("dev-gcp", "gke-latest", "cos")]
)
def test_driver_and_node_os_defaults_per_cloud(stack, driver, os):
    """driver: auto and no pool os pick the cloud's default (EKS AMIs ship the driver; GKE installs its own)."""

    def edit(cfg):
        cfg.pop("gpu-platform:gpuOperator", None)
        for p in cfg["gpu-platform:nodePools"]:
            p.pop("os", None)

    spec = spec_of(stack, edit)
    assert derive.driver(spec) == driver
    assert {derive.node_os(spec, p) for p in spec.node_pools} == {os}


def test_existing_clusters_default_to_operator_drivers_on_ubuntu():
    """driver: auto on an existing cluster is the operator's, and pools default to Ubuntu."""

    def edit(cfg):
        cfg.pop("gpu-platform:gpuOperator")

    spec = spec_of("local", edit)
    assert derive.driver(spec) == "operator" and derive.node_os(spec, spec.node_pools[0]) == "ubuntu"


def test_system_node_selector_is_linux_plus_the_stacks_keys_sorted():
    """Controllers stay on Linux nodes; the stack's own keys are added, in key order (one rendering per
    stack, whatever order the stack file lists them in)."""

    def edit(cfg):
        cfg["gpu-platform:systemNodeSelector"] = {"zone": "a", "disktype": "ssd"}

    assert derive.system_node_selector(spec_of("dev-aws")) == {"kubernetes.io/os": "linux"}
    assert list(derive.system_node_selector(spec_of("dev-aws", edit)).items()) == [
        ("disktype", "ssd"),
        ("kubernetes.io/os", "linux"),
        ("zone", "a"),
    ]


# ------------------------------------------------------------------------------------------ per_spec


def test_per_spec_computes_once_per_spec_and_again_for_a_copy():
    """A fact is computed once per spec object (read per tenant, it would cost O(tenants^2)); a copy of the
    spec, which may differ, computes it afresh; each spec keeps its own value."""
    calls = []

    @derive.per_spec
    def fact(spec):
        calls.append(spec)
        return len(calls)

    spec = spec_of("local")
    assert fact(spec) == 1 and fact(spec) == 1 and len(calls) == 1
    copy = spec.model_copy()
    assert fact(copy) == 2 and fact(copy) == 2 and fact(spec) == 1
    assert fact.__name__ == "fact"  # functools.wraps: errors and profiles name the fact


@pytest.mark.parametrize(
    ("duration", "seconds"),
    [("1h", 3600), ("15m", 900), ("90s", 90), ("1h30m", 5400), ("14m59s", 899), ("2h0m5s", 7205), ("", 0)],
)
def test_seconds_of_a_go_duration(duration, seconds):
    """waitForPodsReady timeouts are Go durations; each unit counts at its own weight (h 3600, m 60, s 1)."""
    assert derive._seconds(duration) == seconds
