"""Volcano: the pinned chart, its scheduler configuration, a Queue per tenant (validated against the upstream
strict schema) and the admission policy that keeps tenants on their own queue."""

from __future__ import annotations

import functools
import json

import pytest
import yaml
from conftest import STACKS, UPSTREAM, manifest, manifests, release, rendered, stack_config
from jsonschema import Draft7Validator
from values_paths import unknown_paths

from components import derive
from components.loader import SpecError, load_spec

QUEUE_API = "scheduling.volcano.sh/v1beta1"
VOLCANO_STACKS = [s for s in STACKS if load_spec(stack_config(s)).addons.volcano]

# Plugins and actions of Volcano v1.15.1 (volcano-sh/volcano pkg/scheduler/plugins/*, pkg/scheduler/actions/*).
UPSTREAM_PLUGINS = {
    "binpack",
    "capacity",
    "cdp",
    "conformance",
    "deviceshare",
    "drf",
    "extender",
    "gang",
    "network-topology-aware",
    "nodegroup",
    "nodeorder",
    "numaaware",
    "overcommit",
    "pdb",
    "predicates",
    "priority",
    "proportion",
    "rescheduling",
    "resource-strategy-fit",
    "resourcequota",
    "sla",
    "task-topology",
    "tdm",
    "usage",
}
UPSTREAM_ACTIONS = {"allocate", "backfill", "enqueue", "gangpreempt", "gangreclaim", "preempt", "reclaim", "shuffle"}
# Keys of a plugin entry (volcano pkg/scheduler/conf/scheduler_conf.go, PluginOption yaml tags, v1.15.1).
PLUGIN_OPTION_KEYS = {
    "name",
    "arguments",
    "enableJobOrder",
    "enableHierarchy",
    "enableJobReady",
    "enableJobPipelined",
    "enableTaskOrder",
    "enablePreemptable",
    "enableReclaimable",
    "enablePreemptive",
    "enableQueueOrder",
    "enablePredicate",
    "enableBestNode",
    "enableNodeOrder",
    "enableTargetJob",
    "enableReservedNodes",
    "enableJobEnqueued",
    "enabledVictim",
    "enableJobStarving",
    "enabledOverused",
    "enabledAllocatable",
}


def _scheduler_conf(stack):
    return yaml.safe_load(release(rendered(stack), "volcano")["values"]["custom"]["scheduler_config_override"])


def _plugins(conf):
    return {p["name"]: p for tier in conf["tiers"] for p in tier["plugins"]}


def _queue(stack, tenant):
    return manifest(rendered(stack), "Queue", tenant)["spec"]


@functools.cache
def _upstream_values_text():
    return (UPSTREAM / "volcano" / "values.yaml").read_text()


# ------------------------------------------------------------------------------------------ release


def test_release_is_the_pinned_official_chart():
    rel = release(rendered("prod-aws"), "volcano")
    assert rel["chart"] == "volcano"
    assert rel["repositoryOpts"] == {"repo": "https://volcano-sh.github.io/helm-charts"}
    assert rel["version"] == "1.15.1"
    assert rel["namespace"] == "volcano-system"


def test_volcano_off_renders_nothing():
    r = rendered("dev-aws")  # addons.volcano: false
    with pytest.raises(KeyError):
        release(r, "volcano")
    assert manifests(r, "Queue") == []


@pytest.mark.parametrize("stack", VOLCANO_STACKS)
def test_every_value_path_exists_upstream(stack):
    upstream = yaml.safe_load(_upstream_values_text())
    assert unknown_paths(release(rendered(stack), "volcano")["values"], upstream) == []


def test_scheduler_config_uses_the_format_the_chart_documents():
    """values.yaml documents scheduler_config_override as a volcano-scheduler.conf document (actions + tiers
    of plugins); every plugin of ours but resourcequota appears in that documented example."""
    text = _upstream_values_text()
    assert "scheduler_config_override: |" in text
    conf = _scheduler_conf("prod-aws")
    assert set(conf) == {"actions", "tiers"}
    for name in _plugins(conf):
        if name != "resourcequota":
            assert f"- name: {name}" in text, name


# --------------------------------------------------------------------------------- scheduler config


def test_scheduler_enables_gang_priority_proportion_predicates_binpack():
    conf = _scheduler_conf("prod-aws")
    plugins = _plugins(conf)
    assert {"gang", "priority", "proportion", "predicates", "binpack", "resourcequota"} <= set(plugins)
    assert set(plugins) <= UPSTREAM_PLUGINS
    assert "capacity" not in plugins  # capacity and proportion are alternatives; proportion honours guarantee
    assert "overcommit" not in plugins  # it would hold jobs back on scale-from-zero pools
    assert plugins["gang"]["enablePreemptable"] is False
    actions = [a.strip() for a in conf["actions"].split(",")]
    assert actions == ["enqueue", "allocate", "preempt", "reclaim", "backfill"]
    assert set(actions) <= UPSTREAM_ACTIONS
    for p in plugins.values():
        assert set(p) <= PLUGIN_OPTION_KEYS, p["name"]
    # priority and gang in the first tier: job order and the gang gate decide before anything else
    assert [p["name"] for p in conf["tiers"][0]["plugins"]] == ["priority", "gang", "conformance"]


def test_binpack_weights_every_gpu_resource_of_the_stack():
    args = _plugins(_scheduler_conf("prod-aws"))["binpack"]["arguments"]
    names = [n.strip() for n in args["binpack.resources"].split(",")]
    assert names == ["nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/mig-2g.20gb", "nvidia.com/mig-3g.40gb"]
    for n in names:
        assert args[f"binpack.resources.{n}"] == 10
    assert args["binpack.cpu"] == 1 and args["binpack.memory"] == 1
    nodeorder = _plugins(_scheduler_conf("prod-aws"))["nodeorder"]["arguments"]
    assert nodeorder == {"leastrequested.weight": 0, "balancedresource.weight": 0}  # no spreading against binpack


# ------------------------------------------------------------------------------------------- queues


@functools.cache
def _queue_validator():
    return Draft7Validator(
        json.loads((UPSTREAM / "volcano" / "queue.scheduling.volcano.sh.v1beta1.strict.json").read_text())
    )


@pytest.mark.parametrize("stack", VOLCANO_STACKS)
def test_queues_validate_against_the_strict_schema(stack):
    queues = [m for m in manifests(rendered(stack), "Queue") if m["apiVersion"] == QUEUE_API]
    r = rendered(stack)
    assert len(queues) == len([t for t in r.spec.tenants if derive.tenant_scheduler(r.spec, t) == "volcano"])
    for q in queues:
        errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in _queue_validator().iter_errors(q)]
        assert errors == [], q["metadata"]["name"]


@pytest.mark.parametrize("stack", VOLCANO_STACKS)
def test_queues_pass_the_volcano_queue_webhook(stack):
    """volcano v1.15.1 pkg/webhooks/admission/queues/validate: every guaranteed resource needs deserved >= it,
    and deserved <= capability where capability names the resource."""
    for q in manifests(rendered(stack), "Queue"):
        s = q["spec"]
        for name, g in s.get("guarantee", {}).get("resource", {}).items():
            assert name in s.get("deserved", {}), (q["metadata"]["name"], name)
            assert int(s["deserved"][name]) >= int(g)
        for name, d in s.get("deserved", {}).items():
            if name in s.get("capability", {}):
                assert int(d) <= int(s["capability"][name]), (q["metadata"]["name"], name)


def test_strict_schema_catches_a_misplaced_guarantee():
    """guarantee takes its resources under guarantee.resource, not directly."""
    q = manifest(rendered("prod-aws"), "Queue", "applied-ml")
    bad = {**q, "spec": {**q["spec"], "guarantee": {"nvidia.com/gpu": "64"}}}
    assert list(_queue_validator().iter_errors(bad))


def test_applied_ml_queue_guarantee_capability_and_weight():
    q = _queue("prod-aws", "applied-ml")
    # 16 A100 + 16 H100 (spot) + 8 L4 x 4 time-slices
    assert q["guarantee"] == {"resource": {"nvidia.com/gpu": "64"}}
    assert q["deserved"] == {"nvidia.com/gpu": "64"}
    # the most it can hold: no borrowingLimit, so every pool it reaches at its maximum size: 32 + 32 + 12 x 4
    assert q["capability"] == {
        "nvidia.com/gpu": "112",
        "nvidia.com/mig-1g.10gb": "0",
        "nvidia.com/mig-2g.20gb": "0",
        "nvidia.com/mig-3g.40gb": "0",
    }
    assert q["weight"] == 2  # tenants[].queueWeight
    assert q["reclaimable"] is True


def test_kueue_tenants_get_no_volcano_queue():
    names = {m["metadata"]["name"] for m in manifests(rendered("prod-aws"), "Queue")}
    assert names == {"applied-ml"}  # research, serving, notebooks queue in Kueue


def test_queues_wait_for_the_release():
    r = rendered("prod-aws")
    q = r.find("kubernetes:scheduling.volcano.sh/v1beta1:Queue", "applied-ml-volcano-queue")
    assert q.depends_on == ["volcano", "volcano-webhook-ready"]  # the release and its webhook answering
    assert q.provider and q.parent == "volcano"


def test_tenants_are_held_to_their_own_queue():
    r = rendered("prod-aws")
    policy = manifest(r, "ValidatingAdmissionPolicy", "gpu-platform-volcano-tenant-queue")["spec"]
    assert policy["matchConstraints"]["namespaceSelector"] == {
        "matchExpressions": [{"key": "gpu-platform/tenant", "operator": "Exists"}]
    }
    rules = {(rr["apiGroups"][0], rr["resources"][0]) for rr in policy["matchConstraints"]["resourceRules"]}
    assert rules == {("batch.volcano.sh", "jobs"), ("scheduling.volcano.sh", "podgroups")}
    assert policy["validations"][0]["expression"] == (
        "has(object.spec.queue) && object.spec.queue == namespaceObject.metadata.name"
    )
    binding = manifest(r, "ValidatingAdmissionPolicyBinding", "gpu-platform-volcano-tenant-queue")["spec"]
    assert binding["validationActions"] == ["Deny"]


def test_namespace_is_baseline_and_gke_gets_a_critical_pods_quota():
    labels = manifest(rendered("prod-aws"), "Namespace", "volcano-system")["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "baseline"  # the chart adds DAC_OVERRIDE
    quota = manifest(rendered("prod-gcp"), "ResourceQuota", "critical-pods", "volcano-system")["spec"]
    assert quota["hard"] == {"pods": "10"}


def test_a_tenant_named_like_a_volcano_queue_is_an_error():
    cfg = stack_config("local")
    cfg["gpu-platform:tenants"][0]["name"] = "root"
    with pytest.raises(SpecError) as err:
        load_spec(cfg)
    assert "Volcano" in {p.path: p.message for p in err.value.problems}["gpu-platform:tenants[0].name"]


# ------------------------------------------------------------------------- queue spec and policy, exactly


def _applied_ml(**changes):
    """prod-aws with its Volcano tenant applied-ml changed; returns (spec, tenant)."""
    cfg = stack_config("prod-aws")
    t = next(t for t in cfg["gpu-platform:tenants"] if t["name"] == "applied-ml")
    t.update(changes)
    spec = load_spec(cfg)
    return spec, next(x for x in spec.tenants if x.name == "applied-ml")


def test_queue_capability_carries_the_tenants_cpu_and_memory_quota():
    """A tenant's cpu/memory quota caps its Volcano queue too (proportion's capability), next to the GPU
    ceilings (worked out in test_applied_ml_queue_guarantee_capability_and_weight), keys sorted."""
    from components import volcano

    spec, tenant = _applied_ml(quota={"cpu": "32", "memory": "128Gi"})
    q = volcano.queue_spec(spec, tenant)
    assert list(q["capability"]) == [
        "cpu",
        "memory",
        "nvidia.com/gpu",
        "nvidia.com/mig-1g.10gb",
        "nvidia.com/mig-2g.20gb",
        "nvidia.com/mig-3g.40gb",
    ]
    assert (q["capability"]["cpu"], q["capability"]["memory"], q["capability"]["nvidia.com/gpu"]) == (
        "32",
        "128Gi",
        "112",
    )
    assert q["guarantee"] == {"resource": {"nvidia.com/gpu": "64"}} and q["deserved"] == {"nvidia.com/gpu": "64"}


def test_a_queue_without_nominal_gpus_reserves_nothing():
    """With every nominal quota 0 the queue has no guarantee and no deserved share (a guarantee of 0 would be
    written as a reservation), but keeps its capability, weight and reclaimability."""
    from components import volcano

    spec, tenant = _applied_ml(gpuQuota={"a100-train": 0, "h100-spot": 0, "l4-notebooks": 0}, queueWeight=3)
    q = volcano.queue_spec(spec, tenant)
    assert set(q) == {"weight", "reclaimable", "capability"}
    assert q["weight"] == 3 and q["reclaimable"] is True and q["capability"]["nvidia.com/gpu"] == "112"


def test_binpack_packs_gpus_ten_times_harder_than_cpu_and_memory():
    """binpack.weight (the plugin's weight among scorers) is 10, as is each GPU resource's weight."""
    args = _plugins(_scheduler_conf("prod-aws"))["binpack"]["arguments"]
    assert args["binpack.weight"] == 10
    assert set(args) == {
        "binpack.weight",
        "binpack.cpu",
        "binpack.memory",
        "binpack.resources",
        "binpack.resources.nvidia.com/gpu",
        "binpack.resources.nvidia.com/mig-1g.10gb",
        "binpack.resources.nvidia.com/mig-2g.20gb",
        "binpack.resources.nvidia.com/mig-3g.40gb",
    }
    assert [p["name"] for p in _scheduler_conf("prod-aws")["tiers"][1]["plugins"]] == [
        "resourcequota",
        "predicates",
        "proportion",
        "nodeorder",
        "binpack",
    ]


def test_release_values_pin_pull_policy_and_system_nodes():
    """Images are pinned by tag (IfNotPresent) and Volcano's own pods go to the system node selector."""
    vals = release(rendered("prod-aws"), "volcano")["values"]
    assert vals["basic"] == {"image_pull_policy": "IfNotPresent"}
    assert vals["custom"]["default_ns"] == {"kubernetes.io/os": "linux"}  # prod-aws sets no systemNodeSelector


def test_queue_policy_refuses_on_create_and_update_and_says_which_queue():
    """The tenant-queue policy fails closed, runs on CREATE and UPDATE of Volcano Jobs and PodGroups, and its
    message names the tenant's queue and the one asked for ('default' when none)."""
    import cel

    from components import volcano

    policy = volcano.queue_policy()
    assert policy["failurePolicy"] == "Fail"
    for rr in policy["matchConstraints"]["resourceRules"]:
        assert rr["operations"] == ["CREATE", "UPDATE"] and rr["apiVersions"] == ["*"]
    (v,) = policy["validations"]
    assert v["reason"] == "Forbidden"

    def message(obj):
        ctx = cel.Context()
        ctx.add_variable("object", obj)
        ctx.add_variable("namespaceObject", {"metadata": {"name": "applied-ml"}})
        return cel.evaluate(v["messageExpression"], ctx)

    assert message({"spec": {"queue": "research"}}) == (
        "use the Volcano queue applied-ml (this tenant's queue), not research"
    )
    assert message({"spec": {}}) == "use the Volcano queue applied-ml (this tenant's queue), not default"


def test_the_webhook_probe_dry_runs_a_minimal_queue_in_volcanos_namespace():
    """The readiness probe creates (dry-run) a Queue through Volcano's webhooks: group scheduling.volcano.sh,
    resource queues, a spec the webhook accepts, in the release's namespace at the release's version."""
    from components import volcano

    probe = volcano.webhook_probe(rendered("prod-aws").spec)
    assert (probe.name, probe.namespace, probe.api_group, probe.resource, probe.chart_version) == (
        "volcano",
        "volcano-system",
        "scheduling.volcano.sh",
        "queues",
        "1.15.1",
    )
    assert probe.obj["apiVersion"] == QUEUE_API and probe.obj["kind"] == "Queue"
    assert probe.obj["spec"] == {"weight": 1, "reclaimable": True}
    assert not list(_queue_validator().iter_errors(probe.obj))


def test_a_queue_is_named_and_labelled_after_its_tenant():
    """The queue takes the tenant's name (the admission policy compares it with the namespace name) and the
    managed-by and tenant labels; it is cluster-scoped (no namespace)."""
    meta = manifest(rendered("prod-aws"), "Queue", "applied-ml")["metadata"]
    assert meta == {
        "name": "applied-ml",
        "labels": {"app.kubernetes.io/managed-by": "gpu-platform", "gpu-platform/tenant": "applied-ml"},
    }
