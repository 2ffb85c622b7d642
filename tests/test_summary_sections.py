"""``components.explain.summary``: who scales each pool, the warnings, and the summary's fixed parts, from a validated
spec and a stand-in rendering (no engine run: the summary reads only the plan and the rendering's lists)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from caching import shared_fixture
from conftest import stack_config

from components.cli.loader import load_spec
from components.explain import summary
from components.plan import plan

KUEUE_TWICE = (
    "Kueue holds its cpu/memory quota once per pool (2 pools), the namespace ResourceQuota once in total; running "
    "in several pools at once, it can be admitted beyond the total, and then its pods are refused until the total "
    "has room (or waitForPodsReady requeues the job)"
)


def _spec(stack: str, **changes: Any):
    cfg = stack_config(stack)
    for k, v in changes.items():
        cfg[f"gpu-platform:{k}"] = v
    return load_spec(cfg)


def _rendering(spec, stack: str = "s", lookups: tuple[str, ...] = (), releases: tuple = ()) -> SimpleNamespace:
    return SimpleNamespace(
        spec=spec,
        stack=stack,
        resources=[1, 2, 3],
        manifests=[1, 2],
        releases=list(releases),
        unanswered_lookups=lookups,
    )


def _plan(stack: str, **changes: Any):
    return plan.build(_spec(stack, **changes), "")


# ------------------------------------------------------------------------------------------- scaled by


def test_who_scales_each_pool_per_cloud():
    """EKS: Karpenter pools by Karpenter, managed node groups by the Cluster Autoscaler (its chart named);
    GKE: its autoscaler, or DWS for queued provisioning; an existing cluster's nodes by nobody."""
    aws = _plan("dev-aws")
    assert summary.scaled_by(aws, aws.pools["a10g-spot"]) == "Karpenter, for pending pods"
    assert summary.scaled_by(aws, aws.pools["l4-shared"]).startswith("Cluster Autoscaler (chart ")
    assert summary.scaled_by(aws, aws.pools["l4-shared"]).endswith("), EKS managed node group")
    gcp = _plan("prod-gcp")
    assert summary.scaled_by(gcp, gcp.pools["h100-train"]) == "GKE cluster autoscaler"
    assert summary.scaled_by(gcp, gcp.pools["h100-burst"]) == (
        "GKE Dynamic Workload Scheduler (queued provisioning), through Kueue's ProvisioningRequests"
    )
    local = _plan("local")
    assert summary.scaled_by(local, local.pools["workstation"]) == "nobody: existing nodes"


def test_managed_pool_without_the_autoscaler_is_fixed_at_its_minimum():
    """With addons.clusterAutoscaler off, a managed node group stays at minNodes, and the summary says so."""
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:addons"] = {**cfg.get("gpu-platform:addons", {}), "clusterAutoscaler": False}
    cfg["gpu-platform:nodePools"][0]["minNodes"] = 2  # else refused: nothing would ever add a node
    decided = plan.build(load_spec(cfg), "")
    assert summary.scaled_by(decided, decided.pools["l4-shared"]) == (
        "nobody: fixed at 2 node(s) (addons.clusterAutoscaler is off)"
    )


# --------------------------------------------------------------------------------------------- cells


def test_ratio_cell():
    """Quota/capacity: two decimals; over the allowed ratio in bold with the limit; no capacity said so."""
    assert summary._ratio(1.5, 1.0) == "**1.50x** (over 1x)"
    assert summary._ratio(1.0, 1.0) == "1.00x"  # at the limit is not over it
    assert summary._ratio(1.25, 1.5) == "1.25x"
    assert summary._ratio(2.0, 1.5) == "**2.00x** (over 1.5x)"
    assert summary._ratio(float("inf"), 2.0) == "**no capacity** (over 2x)"


def test_units_cell():
    """Units sorted by resource name, '-' when none."""
    assert summary._units({"nvidia.com/gpu": 4, "nvidia.com/mig-1g.10gb": 2}) == (
        "4 nvidia.com/gpu, 2 nvidia.com/mig-1g.10gb"
    )
    assert summary._units({"b": 1, "a": 2}) == "2 a, 1 b"
    assert summary._units({}) == "-"


def test_limits_cell():
    """Per pool of the tenant's quota (sorted): its limit or 'any'; no cohort says so; no pools is '-'."""
    pools = {"b-pool": 2, "a-pool": 1}  # the tenant's gpuQuota (TenantPlan.pool_gpus)
    assert summary._limits(pools, "c", {"b-pool": 0}) == "a-pool: any, b-pool: 0"
    assert summary._limits(pools, None, {"b-pool": 0}) == "none (no cohort)"
    assert summary._limits({}, "c", {}) == "-"


# ------------------------------------------------------------------------------------------- warnings


def test_no_warnings_for_a_consistent_stack():
    """dev-gcp hands out no more than its pools bring and has no multi-pool Kueue tenant with cpu/memory."""
    assert summary.warnings(_plan("dev-gcp")) == []


def test_unanswered_lookups_are_warned_about():
    """A lookup the synth had no placeholder for answered empty: the reader must know."""
    assert summary.warnings(_plan("dev-gcp"), ("aws:x/y:z", "gcp:a/b:c")) == [
        "lookup aws:x/y:z has no offline placeholder; it answered empty",
        "lookup gcp:a/b:c has no offline placeholder; it answered empty",
    ]


def test_kueue_tenant_with_cpu_quota_in_several_pools_is_warned_about():
    """A Kueue tenant with a cpu/memory quota in two pools can be admitted beyond its namespace total."""
    assert summary.warnings(_plan("dev-aws")) == [f"tenant ml-dev: {KUEUE_TWICE}"]
    for quota in ({"cpu": "64"}, {"memory": "256Gi"}):  # either one is held per pool
        cfg = stack_config("dev-aws")
        cfg["gpu-platform:tenants"][0]["quota"] = quota
        assert summary.warnings(plan.build(load_spec(cfg), "")) == [f"tenant ml-dev: {KUEUE_TWICE}"], quota
    cfg["gpu-platform:tenants"][0].pop("quota")
    assert summary.warnings(plan.build(load_spec(cfg), "")) == []


def test_oversubscription_beyond_the_ratio_is_warned_about():
    """Quotas above what a pool can bring, beyond scheduling.oversubscriptionRatio, name the pool and both
    ratios: 6 L4s of quota on a pool of at most 4 nodes x 1 L4 is 1.50x; at 1.5 allowed it is not over."""
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:tenants"][0]["gpuQuota"] = {"l4-shared": 6, "t4-spot": 2}
    assert summary.warnings(plan.build(load_spec(cfg), "")) == [
        "pool l4-shared: tenant quotas are 1.50x what it can bring (allowed 1x by scheduling.oversubscriptionRatio)"
    ]
    cfg["gpu-platform:scheduling"] = {"oversubscriptionRatio": 1.5}
    assert summary.warnings(plan.build(load_spec(cfg), "")) == []


def test_short_wait_for_pods_ready_with_cold_start_pools_is_warned_about():
    """A waitForPodsReady timeout below 15 minutes while a pool starts from zero evicts jobs that would run."""
    spec = _spec("dev-aws", scheduling={"waitForPodsReadyTimeout": "10m"})
    warns = [w for w in summary.warnings(plan.build(spec, "")) if w.startswith("scheduling.")]
    pools = ", ".join(p.name for p in spec.node_pools if p.provisioner == "karpenter" or p.min_nodes == 0)
    assert warns == [
        f"scheduling.waitForPodsReadyTimeout below 15m while pools start from zero ({pools}): node launch, GPU "
        "driver validation and a large image pull can outlast it, and Kueue then evicts the job just before it "
        "would run"
    ]


def test_dcgm_without_prometheus_is_warned_about():
    """DCGM on but monitoring.prometheus none: the GPU alerts are off."""
    spec = _spec("dev-gcp", monitoring={"prometheus": "none"})
    assert "GPU alerts are off: monitoring.prometheus is none (no ServiceMonitor, PrometheusRule or dashboard)" in (
        summary.warnings(plan.build(spec, ""))
    )


# -------------------------------------------------------------------------------------------- summary


@shared_fixture  # each test that reads it is mapped to the code that built it (make mutate)
def dev_gcp_text() -> str:
    return summary.summary(_rendering(_spec("dev-gcp"), stack="dev-gcp"), {"Policy report": "all passed\n\n"})


def test_summary_header_says_offline_and_counts(dev_gcp_text: str):
    """The header names the stack, cloud and cluster, says nothing was deployed, and counts what was rendered."""
    lines = dev_gcp_text.splitlines()
    assert lines[:6] == [
        "# gpu-platform synth: dev-gcp",
        "",
        "Cloud `gcp`, cluster `ml-dev`. **Offline synth**: rendered under the Pulumi mock engine; lookups of "
        "existing cloud objects answered with `offline-placeholder` values, nothing was deployed.",
        "",
        "3 resources, 2 Kubernetes objects, 0 Helm releases.",
        "",
    ]
    local = summary.summary(_rendering(_spec("local")), {}).splitlines()[2]
    assert local.startswith("Cloud `existing`, cluster `kind-gpu`. ")
    cfg = stack_config("local")
    del cfg["gpu-platform:cluster"]  # no context: the kubeconfig's current one
    current = summary.summary(_rendering(load_spec(cfg)), {}).splitlines()[2]
    assert current.startswith("Cloud `existing`, cluster `current context`. ")


def test_summary_tail_sections_and_no_warnings(dev_gcp_text: str):
    """Extra sections are appended under their title (trailing blank lines dropped); no warnings is '- none';
    no Helm release is a '(none)' row; the text ends with one newline."""
    assert "\n## Policy report\n\nall passed\n\n## Warnings\n\n- none\n" in dev_gcp_text
    assert dev_gcp_text.endswith("- none\n") and not dev_gcp_text.endswith("\n\n")
    assert "| release | chart | version | source |\n|---|---|---|---|\n| (none) | | | |\n" in dev_gcp_text


def test_summary_lists_releases_with_their_source():
    """A release's source is its repository, or the chart's OCI/path prefix when it has none."""
    releases = (
        SimpleNamespace(
            name="r1",
            inputs={"name": "kueue", "chart": "kueue", "version": "1", "repositoryOpts": {"repo": "https://x"}},
        ),
        SimpleNamespace(name="r2", inputs={"chart": "oci://reg/charts/volcano", "version": "2"}),
    )
    text = summary.summary(_rendering(_spec("dev-gcp"), releases=releases), {})
    assert "| kueue | kueue | 1 | https://x |" in text
    assert "| r2 | oci://reg/charts/volcano | 2 | oci://reg/charts |" in text


def test_summary_warnings_are_a_list():
    """Each warning is one '- ' item under ## Warnings."""
    text = summary.summary(_rendering(_spec("dev-gcp"), lookups=("a:b/c:d",)), {})
    assert text.endswith("## Warnings\n\n- lookup a:b/c:d has no offline placeholder; it answered empty\n")


def test_summary_without_pools_says_none():
    """A stack with no GPU pool still renders a pools table, with a '(none)' row."""
    cfg = stack_config("local")
    cfg["gpu-platform:nodePools"] = []
    cfg["gpu-platform:tenants"] = []
    text = summary.summary(_rendering(load_spec(cfg)), {})
    pools = text.split("## GPU pools\n\n", 1)[1].splitlines()
    assert pools[1:3] == ["|---|---|---|---|---|---|---|---|---|---|", "| (none) | | | | | | | | | |"]


# --------------------------------------------------------------------------------- sections of the summary

DCGM_ON = (
    "DCGM exporter from the operator in `gpu-operator`; ServiceMonitor and PrometheusRule labelled "
    "`release=kube-prometheus-stack`. Alerts: GpuIdle (< 10% for 30m, unallocated), GpuAllocatedIdle (30m), "
    "GpuFramebufferMemoryHigh (> 95% for 5m), GpuTemperatureHigh (> 85 C for 5m), GpuXidErrorCritical / "
    "GpuXidError, DcgmExporterDown."
)


@pytest.mark.parametrize(
    ("prometheus", "tail"),
    [
        (
            "install",
            [
                DCGM_ON,
                "Prometheus: kube-prometheus-stack installed in `monitoring` (its selectors and Grafana sidecar match "
                "these labels).",
            ],
        ),
        (
            "existing",
            [
                DCGM_ON,
                "Prometheus: the cluster's existing prometheus-operator (its Prometheus must select these labels).",
            ],
        ),
        (
            "none",
            [
                "DCGM exporter from the operator in `gpu-operator`. **GPU alerts are off** (`monitoring.prometheus: "
                "none`): no ServiceMonitor, PrometheusRule or Grafana dashboard is deployed."
            ],
        ),
    ],
)
def test_monitoring_paragraph_per_prometheus_mode(prometheus: str, tail: list[str]):
    """What the monitoring delivers, per monitoring.prometheus: the alerts with their thresholds (the
    defaults), and where Prometheus comes from; with none, that the alerts are off."""
    lines = summary._gpu_operator_lines(_plan("dev-gcp", monitoring={"prometheus": prometheus}))
    assert lines[:2] == ["## GPU Operator and monitoring", ""]
    assert lines[-len(tail) :] == tail
    assert lines[-len(tail) - 1] == ""  # after the pools table


def test_gpu_operator_paragraph_and_pool_rows():
    """Who serves each pool's GPUs: the operator's components on/off and one row per pool."""
    lines = summary._gpu_operator_lines(_plan("dev-gcp"))
    assert lines[2].endswith(
        ": driver gke-latest (operator's off), toolkit on, device plugin off, MIG strategy single, MIG manager off."
    )
    assert lines[2].startswith("GPU Operator v") and " in `gpu-operator`" in lines[2]
    assert lines[4:8] == [
        "| pool | OS | GPUs served by | sharing | config label |",
        "|---|---|---|---|---|",
        "| l4-shared | cos | gke | time-slicing x4 (4x nvidia.com/gpu per GPU) | - |",
        "| t4-spot | cos | gke | whole GPUs | - |",
    ]


def test_operator_section_without_dcgm_has_no_monitoring_paragraph():
    """The operator without DCGM: the operator's table, and nothing about alerts."""
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:addons"]["dcgm"] = False
    lines = summary._gpu_operator_lines(plan.build(load_spec(cfg), ""))
    assert lines[0] == "## GPU Operator and monitoring"
    assert lines[-2:] == ["| t4-spot | cos | gke | whole GPUs | - |", ""]


def test_no_gpu_operator_section_without_operator_and_dcgm():
    """With neither the operator nor DCGM there is nothing to say."""
    cfg = stack_config("local")
    cfg["gpu-platform:addons"] = {"gpuOperator": False, "dcgm": False, "kueue": False, "volcano": False}
    cfg.pop("gpu-platform:gpuOperator", None)
    del cfg["gpu-platform:nodePools"][0]["sharing"]  # MPS needs the operator's device plugin
    assert summary._gpu_operator_lines(plan.build(load_spec(cfg), "")) == []


def test_dra_section():
    """A DRA stack says how pods get GPUs (ResourceClaims, no device plugin) and what Kueue counts."""
    lines = summary._dra_lines(_plan("dra-existing"))
    assert lines[:3] == ["## GPUs through DRA (ResourceClaims)", "", lines[2]]
    assert lines[2] == (
        "Kubernetes 1.34; the GPU Operator's GPUCluster deploys the NVIDIA DRA driver (no device plugin). Pods ask "
        "for GPUs through `resourceClaims` referencing a ResourceClaimTemplate in their namespace; Kueue counts the "
        "claimed devices (`deviceClassMappings`: `gpu.nvidia.com` as `gpu.nvidia.com/devices`, `mig.nvidia.com` as "
        "`mig.nvidia.com/devices`)."
    )
    assert lines[3:6] == ["", "| tenant | quota (devices per DeviceClass) | claim templates |", "|---|---|---|"]
    assert lines[-1] == ""
    assert summary._dra_lines(_plan("dev-gcp")) == []


def test_queues_footnote_follows_a_blank_line():
    """The queues table ends before its footnote (a blank line, so Markdown does not run them together)."""
    lines = summary._queue_lines(_plan("dev-gcp"))
    note = next(i for i, line in enumerate(lines) if line.startswith("*any*: no limit;"))
    assert lines[note - 1] == "" and lines[note - 2].startswith("| ml-dev |")
    assert lines[:4] == ["", "## Queues", "", lines[3]] and lines[3].startswith("| tenant | Kueue LocalQueue")


def test_summary_lists_the_pinned_charts():
    """The last line before the extra sections names every pinned chart as 'key version', comma-separated."""
    from components.data import versions

    text = summary.summary(_rendering(_spec("dev-gcp")), {})
    (line,) = [x for x in text.splitlines() if x.startswith("Pinned charts available: ")]
    assert line.endswith(".")
    items = line[len("Pinned charts available: ") : -1].split(", ")
    assert len(items) == len(versions.CHARTS) == 14
    assert {item.split(" ")[0] for item in items} == {c.key for c in versions.CHARTS.values()}
    assert "gpuOperator v26.7.0" in items


def test_queue_rows_name_kueue_and_volcano_queues():
    """prod-aws: every tenant's Kueue queues are `<tenant>/default` -> `<tenant>`; only applied-ml
    (scheduler: volcano, queueWeight: 2) has a Volcano queue, with its weight and its caps: what it enqueues from
    an idle cluster (proportion's cap over the nodes that exist, volcano v1.15.1 proportion.go:91-139: no
    nvidia.com/gpu node at rest, so its guarantee, 16 A100s on a100-gang) and what it holds at full size (a100-gang
    at 2 x 8 = 16, its capability); the others show '-' (issue 26 §4.5)."""
    rows = {
        line.split(" | ")[0][2:]: line.split(" | ")
        for line in summary._queue_lines(_plan("prod-aws"))
        if line.startswith("| ")
    }
    assert rows["research"][1] == "`research/default` -> `research`"
    assert rows["research"][-1] == "- |"
    volcano = rows["applied-ml"][-1]
    assert volcano == (
        "`applied-ml` (weight 2; enqueues at most 16 nvidia.com/gpu from an idle cluster, holds at most 16 "
        "nvidia.com/gpu at full size) |"
    )
    kueue_off = stack_config("prod-aws")
    kueue_off["gpu-platform:addons"]["kueue"] = False
    for t in kueue_off["gpu-platform:tenants"]:
        t.pop("scheduler", None)
    for p in kueue_off["gpu-platform:nodePools"]:
        p.pop("topologyAware", None)  # done by Kueue
    rows = [
        line.split(" | ")
        for line in summary._queue_lines(plan.build(load_spec(kueue_off), ""))
        if line.startswith("| ") and "tenant" not in line
    ]
    assert rows and all(r[1] == "-" and r[3] == "-" for r in rows)  # no Kueue queue, no Kueue preemption


def _sections(stack: str) -> list[str]:
    text = summary.summary(_rendering(_spec(stack), stack=stack), {})
    return [line for line in text.splitlines() if line.startswith("## ")]


def test_sections_per_stack_kind():
    """AWS with a Karpenter pool gets a Karpenter section after the scaling table; a DRA stack its DRA section
    after the GPU Operator's; every summary ends with Helm releases and Warnings."""
    common_tail = [
        "## Tenants",
        "## Queues",
        "## Who can take what from whom",
        "## Cost",
        "## Priority classes",
        "## Helm releases",
        "## Warnings",
    ]
    head = ["## GPU pools", "## Pool labels and taints", "## Who scales each pool"]
    assert _sections("dev-aws") == [*head, "## Karpenter", "## GPU Operator and monitoring", *common_tail]
    assert _sections("dra-existing") == [
        *head,
        "## GPU Operator and monitoring",
        "## GPUs through DRA (ResourceClaims)",
        *common_tail,
    ]
    assert _sections("dev-gcp") == [*head, "## GPU Operator and monitoring", *common_tail]
    cfg = stack_config("dev-aws")  # AWS without a Karpenter pool: no Karpenter section
    cfg["gpu-platform:nodePools"] = [p for p in cfg["gpu-platform:nodePools"] if p["name"] == "l4-shared"]
    cfg["gpu-platform:tenants"][0]["gpuQuota"] = {"l4-shared": 4}
    text = summary.summary(_rendering(load_spec(cfg)), {})
    assert "## Karpenter" not in text
    assert "EKS managed node group | - |\n\n## GPU Operator and monitoring\n" in text  # one blank line between


def test_managed_node_group_labels_include_the_autoscalers_gpu_label():
    """An EKS managed node group's nodes also carry k8s.amazonaws.com/accelerator (the Cluster Autoscaler's
    GPU label on AWS); a Karpenter pool's do not."""
    text = summary.summary(_rendering(_spec("dev-aws")), {})
    rows = {line.split(" | ")[0]: line for line in text.splitlines() if line.startswith("| l4-shared | `")}
    rows |= {line.split(" | ")[0]: line for line in text.splitlines() if line.startswith("| a10g-spot | `")}
    assert "`k8s.amazonaws.com/accelerator=nvidia-l4`" in rows["| l4-shared"]
    assert "k8s.amazonaws.com/accelerator" not in rows["| a10g-spot"]
    assert rows["| l4-shared"].endswith("| `nvidia.com/gpu=present:NoSchedule` |")
