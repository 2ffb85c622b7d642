"""Volcano: the pinned chart, its scheduler configuration, a Queue per tenant (validated against the upstream
strict schema) and the admission policy that keeps tenants on their own queue."""

from __future__ import annotations

import functools
import json

import pytest
import yaml
from conftest import STACKS, UPSTREAM, manifest, manifests, release, rendered, stack_config, unmirrored
from jsonschema import Draft7Validator
from values_paths import unknown_paths

from components.cli.loader import SpecError, load_spec
from components.plan import derive

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
    bad = {**q, "spec": {**q["spec"], "guarantee": {"nvidia.com/gpu": "16"}}}
    assert list(_queue_validator().iter_errors(bad))


def test_applied_ml_queue_guarantee_capability_and_weight():
    q = _queue("prod-aws", "applied-ml")
    # its 16 A100s on a100-gang, its only pool
    assert q["guarantee"] == {"resource": {"nvidia.com/gpu": "16"}}
    assert q["deserved"] == {"nvidia.com/gpu": "16"}
    # the most it can hold: no borrowingLimit, so every pool it reaches at its maximum size: a100-gang 2 x 8
    assert q["capability"] == {
        "nvidia.com/gpu": "16",
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
    assert rules == {
        ("batch.volcano.sh", "jobs"),
        ("scheduling.volcano.sh", "podgroups"),
        ("ray.io", "rayclusters"),  # their volcano.sh/queue-name label is the queue of KubeRay's PodGroup
        ("ray.io", "rayjobs"),
    }
    assert policy["validations"][0]["expression"] == "variables.queue == namespaceObject.metadata.name"
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
    from components.render import volcano

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
        "16",
    )
    assert q["guarantee"] == {"resource": {"nvidia.com/gpu": "16"}} and q["deserved"] == {"nvidia.com/gpu": "16"}


def test_a_queue_without_nominal_gpus_reserves_nothing():
    """With every nominal quota 0 the queue has no guarantee and no deserved share (a guarantee of 0 would be
    written as a reservation), but keeps its capability (a100-gang at its maximum size, 2 x 8: a quota of 0 in
    a cohort may still borrow the whole pool), weight and reclaimability."""
    from components.render import volcano

    spec, tenant = _applied_ml(gpuQuota={"a100-gang": 0}, queueWeight=3)
    q = volcano.queue_spec(spec, tenant)
    assert set(q) == {"weight", "reclaimable", "capability"}
    assert q["weight"] == 3 and q["reclaimable"] is True and q["capability"]["nvidia.com/gpu"] == "16"


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
    vals = unmirrored(release(rendered("prod-aws"), "volcano")["values"], stack_config("prod-aws"))
    assert vals["basic"] == {"image_pull_policy": "IfNotPresent"}
    assert vals["custom"]["default_ns"] == {"kubernetes.io/os": "linux"}  # prod-aws sets no systemNodeSelector


def test_queue_policy_refuses_on_create_and_update_and_says_which_queue():
    """The tenant-queue policy fails closed, runs on CREATE and UPDATE of Volcano Jobs and PodGroups, and its
    message names the tenant's queue and the one asked for ('default' when none)."""
    import cel

    from components.render import volcano

    policy = volcano.queue_policy()
    assert policy["failurePolicy"] == "Fail"
    for rr in policy["matchConstraints"]["resourceRules"]:
        assert rr["operations"] == ["CREATE", "UPDATE"] and rr["apiVersions"] == ["*"]
    (v,) = policy["validations"]
    assert v["reason"] == "Forbidden"

    def message(obj, group="batch.volcano.sh"):
        ctx = cel.Context()
        ctx.add_variable("object", obj)
        ctx.add_variable("request", {"kind": {"group": group}})
        ctx.add_variable("namespaceObject", {"metadata": {"name": "applied-ml"}})
        (var,) = policy["variables"]
        ctx.add_variable("variables", {"queue": cel.evaluate(var["expression"], ctx)})
        return cel.evaluate(v["messageExpression"], ctx)

    assert message({"spec": {"queue": "research"}}) == (
        "use the Volcano queue applied-ml (this tenant's queue), not research"
    )
    assert message({"spec": {}}) == "use the Volcano queue applied-ml (this tenant's queue), not default"
    ray = {"metadata": {"labels": {"volcano.sh/queue-name": "research"}}, "spec": {}}
    assert message(ray, "ray.io") == "use the Volcano queue applied-ml (this tenant's queue), not research"


def test_the_webhook_probe_dry_runs_a_minimal_queue_in_volcanos_namespace():
    """The readiness probe creates (dry-run) a Queue through Volcano's webhooks: group scheduling.volcano.sh,
    resource queues, a spec the webhook accepts, in the release's namespace at the release's version."""
    from components.render import volcano

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
    gates = [j["metadata"]["name"] for j in manifests(rendered("prod-aws"), "Job")]
    gate = [n for n in gates if n.startswith("volcano-webhook-ready-")]
    assert len(gate) == 1, gates
    assert meta == {
        "name": "applied-ml",
        "labels": {"app.kubernetes.io/managed-by": "gpu-platform", "gpu-platform/tenant": "applied-ml"},
        # the gate Job's name: unknown in a preview until the gate exists (tests/test_webhooks.py)
        "annotations": {"gpu-platform/webhook-gate": gate[0]},
    }


# ------------------------------------------------------------------------ one scheduler per pool (issue 26)


def _problems(config):
    with pytest.raises(SpecError) as err:
        load_spec(config)
    return {p.path: p.message for p in err.value.problems}


def test_a_volcano_tenant_may_not_share_a_pool_with_kueue_tenants():
    """applied-ml (Volcano) given quota on a100-train, which research (Kueue) reaches: refused at the Volcano
    tenant's gpuQuota entry, naming the Kueue tenants. An entry of 0 reaches the pool too."""
    cfg = stack_config("prod-aws")
    applied = cfg["gpu-platform:tenants"][2]
    assert applied["name"] == "applied-ml"
    applied["gpuQuota"] = {"a100-gang": 16, "a100-train": 8}
    problems = _problems(cfg)
    assert problems == {
        "gpu-platform:tenants[2].gpuQuota.a100-train": "pool a100-train is handed out by Kueue (tenants research); "
        "a Volcano tenant cannot share it, because each scheduler counts only its own workloads and both would "
        "hand out the same GPUs: give the Volcano tenants pools of their own, or set scheduler: kueue"
    }
    # two Kueue tenants on the pool are both named (sorted); a 0 entry counts as reaching the pool
    cfg["gpu-platform:tenants"][0]["gpuQuota"]["l4-notebooks"] = 0  # research, beside notebooks
    applied["gpuQuota"] = {"a100-gang": 16, "l4-notebooks": 0}
    assert _problems(cfg) == {
        "gpu-platform:tenants[2].gpuQuota.l4-notebooks": "pool l4-notebooks is handed out by Kueue (tenants "
        "notebooks, research); a Volcano tenant cannot share it, because each scheduler counts only its own "
        "workloads and both would hand out the same GPUs: give the Volcano tenants pools of their own, or set "
        "scheduler: kueue"
    }


def test_volcano_tenants_may_share_a_pool_among_themselves():
    """notebooks moved to Volcano: it and applied-ml both reach l4-notebooks, one scheduler hands it out."""
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:tenants"][3]["scheduler"] = "volcano"  # notebooks
    cfg["gpu-platform:tenants"][2]["gpuQuota"] = {"a100-gang": 16, "l4-notebooks": 2}
    spec = load_spec(cfg)
    assert derive.pool_schedulers(spec)["l4-notebooks"] == ("volcano",)
    assert derive.pool_schedulers(load_spec(stack_config("prod-aws"))) == {
        "a100-gang": ("volcano",),
        "a100-train": ("kueue",),
        "h100-inference": ("kueue",),
        "h100-spot": ("kueue",),
        "l4-notebooks": ("kueue",),
    }


# ------------------------------------------------------------------ the Volcano tenants' GPU pod policy

PODS_POLICY = "gpu-platform-volcano-tenant-pods"


def _cel(expr: str, env: dict) -> object:
    """A CEL expression as kube-apiserver evaluates it, with the Kubernetes strings library's ``split`` and
    ``join`` supplied as functions (tests/test_admission_policies.py does the same for ``split``)."""
    import cel

    ctx = cel.Context()
    ctx.add_function("split", lambda s, sep: s.split(sep))
    ctx.add_function("join", lambda items, sep: sep.join(items))
    for k, v in env.items():
        ctx.add_variable(k, v)
    return cel.evaluate(expr, ctx)


def _pods_denials(policy: dict, pod_spec: dict, namespace: dict) -> list[str]:
    """Denials of a Pod CREATE by the policy's variables and its first two validations (schedulerName, pool).
    The third (one unit per container on a shared pool) calls Kubernetes' ``quantity()``, which this CEL
    engine lacks: tests/cluster evaluates it on a real API server; its structure is checked below."""
    env = {"object": {"metadata": {"name": "p"}, "spec": pod_spec}, "namespaceObject": namespace}
    variables: dict = {}
    for var in policy["variables"]:
        variables[var["name"]] = _cel(var["expression"], {**env, "variables": variables})
    env["variables"] = variables
    out = []
    for v in policy["validations"][:2]:
        if not _cel(v["expression"], env):
            out.append(_cel(v["messageExpression"], env) if "messageExpression" in v else v["message"])
    return out


def _gpu_pod(resources: dict, section: str = "limits", **spec) -> dict:
    return {"containers": [{"name": "c", "image": "x", "resources": {section: resources}}], **spec}


SCHEDULER_REFUSAL = (
    "GPU pods in this namespace are scheduled by Volcano: set schedulerName: volcano (Kueue leaves this namespace "
    "alone; a pod of the default scheduler would hold GPUs no queue counts)"
)


def test_the_pod_policy_matches_pod_creation_in_volcano_tenant_namespaces_and_denies():
    r = rendered("prod-aws")
    policy = manifest(r, "ValidatingAdmissionPolicy", PODS_POLICY)["spec"]
    assert policy["failurePolicy"] == "Fail"
    assert policy["matchConstraints"] == {
        "namespaceSelector": {
            "matchExpressions": [
                {"key": "gpu-platform/tenant", "operator": "Exists"},
                {"key": "gpu-platform/scheduler", "operator": "In", "values": ["volcano"]},
            ]
        },
        "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "operations": ["CREATE"]}],
    }
    # the namespace is read in variables: kube-apiserver gives match conditions no namespaceObject
    assert "matchConditions" not in policy
    assert [v["name"] for v in policy["variables"]] == ["containers", "gpu", "pool", "pools", "oneUnit", "queue"]
    assert [v["reason"] for v in policy["validations"]] == ["Forbidden"] * 4
    binding = manifest(r, "ValidatingAdmissionPolicyBinding", PODS_POLICY)["spec"]
    assert binding == {"policyName": PODS_POLICY, "validationActions": ["Deny"]}
    # only applied-ml's namespace matches the selector
    matched = [
        m["metadata"]["name"]
        for m in manifests(r, "Namespace")
        if "gpu-platform/tenant" in m["metadata"]["labels"]
        and m["metadata"]["labels"].get("gpu-platform/scheduler") == "volcano"
    ]
    assert matched == ["applied-ml"]


@pytest.mark.parametrize("stack", ["prod-gcp", "local", "dev-aws"])
def test_without_volcano_tenants_there_is_no_pod_policy(stack):
    """prod-gcp and local run Volcano but queue every tenant in Kueue; dev-aws has no Volcano."""
    r = rendered(stack)
    assert not derive.volcano_tenants(r.spec)
    for kind in ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"):
        assert [m for m in manifests(r, kind) if m["metadata"]["name"] == PODS_POLICY] == []


def test_the_pod_policy_refuses_gpu_pods_not_volcanos_or_on_another_pool():
    """applied-ml's namespace lists one pool, a100-gang (annotation gpu-platform/pools)."""
    r = rendered("prod-aws")
    policy = manifest(r, "ValidatingAdmissionPolicy", PODS_POLICY)["spec"]
    ns = manifest(r, "Namespace", "applied-ml")
    pool_refusal = "select one of this tenant's pools with nodeSelector gpu-platform/pool: a100-gang"
    gang = {"gpu-platform/pool": "a100-gang"}
    # a pod of the default scheduler on no pool: both refusals
    assert _pods_denials(policy, _gpu_pod({"nvidia.com/gpu": "8"}), ns) == [SCHEDULER_REFUSAL, pool_refusal]
    # Volcano's, on its own pool: admitted; on a Kueue tenant's pool (or a selector of another key): refused
    assert (
        _pods_denials(policy, _gpu_pod({"nvidia.com/gpu": "8"}, schedulerName="volcano", nodeSelector=gang), ns) == []
    )
    for selector in ({"gpu-platform/pool": "a100-train"}, {"node.kubernetes.io/instance-type": "p4de.24xlarge"}):
        pod = _gpu_pod({"nvidia.com/gpu": "8"}, schedulerName="volcano", nodeSelector=selector)
        assert _pods_denials(policy, pod, ns) == [pool_refusal]
    # on its pool but another scheduler's
    pod = _gpu_pod({"nvidia.com/gpu": "8"}, schedulerName="default-scheduler", nodeSelector=gang)
    assert _pods_denials(policy, pod, ns) == [SCHEDULER_REFUSAL]
    # a GPU asked for in requests only, or by an init container, makes a GPU pod too
    assert _pods_denials(policy, _gpu_pod({"nvidia.com/gpu": "1"}, "requests"), ns) == [SCHEDULER_REFUSAL, pool_refusal]
    init = {
        "containers": [{"name": "c", "image": "x"}],
        "initContainers": [{"name": "i", "image": "x", "resources": {"limits": {"nvidia.com/mig-1g.10gb": "1"}}}],
    }
    assert _pods_denials(policy, init, ns) == [SCHEDULER_REFUSAL, pool_refusal]
    # pods without GPUs, and other device resources (EFA), are left alone
    assert _pods_denials(policy, {"containers": [{"name": "c", "image": "x"}]}, ns) == []
    assert _pods_denials(policy, _gpu_pod({"vpc.amazonaws.com/efa": "1"}), ns) == []
    # a namespace without the annotation (none the selector matches in a shipped stack) lists no pool
    bare = {"metadata": {"name": "x"}}
    pod = _gpu_pod({"nvidia.com/gpu": "1"}, schedulerName="volcano", nodeSelector=gang)
    assert _pods_denials(policy, pod, bare) == [
        "select one of this tenant's pools with nodeSelector gpu-platform/pool: "
    ]


def test_the_pod_policy_holds_containers_on_shared_pools_to_one_unit():
    """The third validation: on a pool the namespace lists under gpu-platform/one-unit-pools, every container's
    nvidia.com/* limit is at most 1 (a Kubernetes quantity, compared with quantity()). Its message names the
    pool."""
    policy = manifest(rendered("prod-aws"), "ValidatingAdmissionPolicy", PODS_POLICY)["spec"]
    v = policy["validations"][2]
    assert v["expression"] == (
        "!variables.gpu || !(variables.pool in variables.oneUnit) || variables.containers.all(c, "
        "!has(c.resources) || !has(c.resources.limits) || c.resources.limits.all(k, "
        "!(k.startsWith('nvidia.com/')) || quantity(c.resources.limits[k]).compareTo(quantity('1')) <= 0))"
    )
    assert _cel(v["messageExpression"], {"variables": {"pool": "l4-notebooks"}}) == (
        "pool l4-notebooks shares its GPUs: a container may ask for one unit at most (the device plugin refuses more)"
    )
    one_unit = next(x for x in policy["variables"] if x["name"] == "oneUnit")["expression"]
    ns = {"metadata": {"name": "n", "annotations": {"gpu-platform/one-unit-pools": "l4-notebooks,mps-pool"}}}
    assert _cel(one_unit, {"namespaceObject": ns}) == ["l4-notebooks", "mps-pool"]
    assert _cel(one_unit, {"namespaceObject": {"metadata": {"name": "n"}}}) == []


# ------------------------------------------------------------------ admission webhooks that fail closed (issue 31)


def _chart_file(name: str) -> str:
    import tarfile

    from conftest import ROOT

    with tarfile.open(ROOT / "upstream" / "charts" / "volcano-1.15.1.tgz") as tar:
        return tar.extractfile(f"volcano/templates/{name}").read().decode()


def test_volcano_admission_runs_two_spread_replicas_with_a_disruption_budget():
    """The pinned chart's admission webhooks fail closed and it runs one replica by default; the release asks two,
    spread over nodes, and a PodDisruptionBudget selecting the chart's admission pods keeps one through drains."""
    template = _chart_file("admission.yaml")
    assert "failurePolicy: Fail" in _chart_file("webhooks.yaml")
    assert "replicas: {{ .Values.custom.admission_replicas }}" in template
    assert "app: volcano-admission" in template  # the Deployment's selector and pod label
    values = release(rendered("prod-aws"), "volcano")["values"]["custom"]
    assert values["admission_replicas"] == 2
    term = values["admission_affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
    assert term["podAffinityTerm"] == {
        "labelSelector": {"matchLabels": {"app": "volcano-admission"}},
        "topologyKey": "kubernetes.io/hostname",
    }
    pdb = manifest(rendered("prod-aws"), "PodDisruptionBudget", "volcano-admission", "volcano-system")
    assert pdb["spec"] == {"minAvailable": 1, "selector": {"matchLabels": {"app": "volcano-admission"}}}
    assert pdb["spec"]["minAvailable"] < values["admission_replicas"]  # a drain can still evict one
