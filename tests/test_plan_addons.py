"""An add-on's plan (components/plan/plan.py ``AddonPlan``) carries what its namespace and release need, so the
chart skeleton (components/render/addon.py, k8s.addon_namespace / addon_release) reads the plan, not the spec:
the chart as the stack takes it (``chart_ref``), whether the cloud needs the critical-pods quota, the GPU
Operator's namespace labels, quota size and ConfigMaps, and the webhook gate's Job."""

from __future__ import annotations

import copy

import pytest
from conftest import STACKS, manifests, rendered, stack_config

from components.cli.loader import load_spec
from components.data import versions
from components.plan import plan
from components.render import k8s


def _plan(stack: str, **extra) -> plan.Plan:
    cfg = copy.deepcopy(stack_config(stack))
    cfg.update({f"gpu-platform:{k}": v for k, v in extra.items()})
    return plan.build(load_spec(cfg), stack)


def test_release_arguments_from_the_plan_name_the_official_chart():
    a = _plan("dev-aws").addons
    assert k8s.release_args(a["gpuOperator"]) == {
        "name": "gpu-operator",
        "chart": "gpu-operator",
        "version": "v26.7.0",
        "namespace": "gpu-operator",
        "repository_opts": {"repo": "https://helm.ngc.nvidia.com/nvidia"},
    }
    assert k8s.release_args(a["kueue"]) == {
        "name": "kueue",
        "chart": "oci://registry.k8s.io/kueue/charts/kueue",
        "version": "0.19.2",
        "namespace": "kueue-system",
    }


def test_release_arguments_from_the_plan_follow_a_mirror_and_a_charts_own_source():
    a = _plan(
        "local", chartSource="oci://mirror.internal/charts", charts={"volcano": {"source": "https://volcano.internal"}}
    ).addons
    assert k8s.release_args(a["kueue"])["chart"] == "oci://mirror.internal/charts/kueue"
    assert "repository_opts" not in k8s.release_args(a["kueue"])
    volcano = k8s.release_args(a["volcano"])
    assert (volcano["chart"], volcano["repository_opts"]) == ("volcano", {"repo": "https://volcano.internal"})


def test_release_arguments_from_the_plan_name_a_bundled_archive_and_its_digest():
    args = k8s.release_args(_plan("local", chartSource="bundled").addons["gpuOperator"])
    assert args["chart"] == "upstream/charts/gpu-operator-v26.7.0.tgz" and "repository_opts" not in args
    assert args["description"].startswith("chart sha256:") and "missing" not in args["description"]


@pytest.mark.parametrize("stack", STACKS)
def test_the_plans_chart_is_the_one_the_stack_resolves(stack):
    """``chart_ref`` rebuilds from the plan's fields exactly the chart ``versions.for_spec`` gives."""
    spec = load_spec(stack_config(stack))
    for key, a in plan.build(spec, stack).addons.items():
        assert a.chart_ref() == versions.for_spec(versions.CHARTS[key], spec), key


def test_only_gke_needs_the_critical_pods_quota_and_only_for_installed_add_ons():
    gcp = _plan("dev-gcp").addons
    assert {k for k, a in gcp.items() if a.critical_pods_quota} == {k for k, a in gcp.items() if a.enabled}
    assert gcp["gpuOperator"].critical_pods == 100 + 12 * 6  # dev-gcp: pools of at most 6 nodes together
    for stack in ("dev-aws", "prod-aws", "local"):
        assert not any(a.critical_pods_quota or a.critical_pods for a in _plan(stack).addons.values()), stack


def test_the_gpu_operator_namespace_is_privileged_and_a_dra_stack_marks_it_for_admin_access():
    labels = dict(_plan("dev-aws").addons["gpuOperator"].namespace_labels)
    assert labels["pod-security.kubernetes.io/enforce"] == "privileged"
    assert "resource.kubernetes.io/admin-access" not in labels
    dra = dict(_plan("dra-existing").addons["gpuOperator"].namespace_labels)
    assert dra["resource.kubernetes.io/admin-access"] == "true"


def test_the_gpu_operator_configmaps_are_the_ones_its_values_name():
    """prod-aws shares and MIG-partitions GPUs with the operator's device plugin and MIG manager: both ConfigMaps,
    under the names the release's values point at."""
    a = _plan("prod-aws").addons["gpuOperator"]
    assert {k: cm["name"] for k, cm in a.config_maps.items()} == {
        "device-plugin-config": a.values["devicePlugin"]["config"]["name"],
        "mig-parted-config": a.values["migManager"]["config"]["name"],
    }
    assert set(a.config_maps["mig-parted-config"]["data"]) == {"config.yaml"}
    assert dict(_plan("dev-gcp").addons["gpuOperator"].config_maps) == {}  # GKE's device plugin shares


def test_the_rendered_gpu_operator_configmaps_are_the_plans():
    r = rendered("prod-aws")
    a = plan.build(r.spec, "prod-aws").addons["gpuOperator"]
    got = {
        m["metadata"]["name"]: m["data"]
        for m in manifests(r, "ConfigMap")
        if m["metadata"]["namespace"] == "gpu-operator" and "gpu-platform-gpus.json" not in m["data"]
    }
    assert got == {cm["name"]: plan.plain(cm["data"]) for cm in a.config_maps.values()}


def test_only_webhook_gated_add_ons_have_a_gate_job():
    a = _plan("local").addons
    assert {k for k, x in a.items() if x.gate_job is not None} == {"kueue", "volcano"}
    pod = a["kueue"].gate_job["template"]["spec"]
    assert pod["containers"][0]["args"] == ("create", "--dry-run=server", "-f", "/probe/probe.yaml")


@pytest.mark.parametrize("stack", ["prod-gcp", "local"])
def test_the_chart_skeleton_registers_namespace_release_and_gate_from_the_add_ons_plan(stack):
    """k8s.addon_namespace / addon_release and webhooks.addon_gate take the add-on's plan: the namespace, the GKE
    critical-pods quota only on GKE, the release of the pinned chart, and the gate Job."""
    import pulumi
    from test_k8s_registration import _requests

    from components.render import webhooks

    spec = load_spec(stack_config(stack))
    decided = plan.build(spec, stack).addons

    def program():
        provider = pulumi.ProviderResource("kubernetes", "k8s", {})
        parent = pulumi.ComponentResource("test:index:Parent", "parent")
        ns = k8s.addon_namespace(parent, provider, decided["kueue"], "kueue", "kueue-system", {"a": "b"}, 10)
        rel = k8s.addon_release("kueue", parent, provider, decided["kueue"], {"x": 1}, ns, timeout=900)
        webhooks.addon_gate(parent, provider, decided["kueue"].probe, plan.plain(decided["kueue"].gate_job), [rel])

    requests = _requests(program)
    assert ("critical-pods-kueue" in requests) == (stack == "prod-gcp")
    release = requests["kueue"]["object"]
    assert (release["chart"], release["version"]) == ("oci://registry.k8s.io/kueue/charts/kueue", "0.19.2")  # the pin
    assert release["namespace"] == "kueue-system" and release["timeout"] == 900
    after = sorted(d.rsplit("::", 1)[-1] for d in requests["kueue"]["dependencies"])  # what the release waits for
    assert after == (["critical-pods-kueue", "namespace-kueue"] if stack == "prod-gcp" else ["namespace-kueue"])
    assert {"kueue-webhook-probe", "kueue-webhook-ready"} <= set(requests)  # the gate's objects
