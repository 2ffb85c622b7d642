"""Day 2 under the real engine: changes that must not destroy a cluster's workloads.

The offline synth records the resource options the engine acts on in later updates (protect, aliases,
replaceOnChanges, deleteBeforeReplace), so these tests check what a second `pulumi up` would do: replace the
Kubernetes provider, delete a tenant's namespace, uninstall a scheduler, update an immutable field in place.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from caching import cached
from conftest import (
    HELM_RELEASE,
    K8S_PROVIDER,
    LIMIT_RANGE,
    NAMESPACE,
    RESOURCE_QUOTA,
    ROOT,
    STACKS,
    UPSTREAM,
    render_config,
    rendered,
    stack_config,
)

from components.cli import synth
from components.cli.loader import SpecError, load_spec

RESOURCE_FLAVOR = "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor"
CLUSTER_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
LOCAL_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue"
TOPOLOGY = "kubernetes:kueue.x-k8s.io/v1beta2:Topology"


def _problems(config: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(SpecError) as err:
        load_spec(config)
    return {p.path: p.message for p in err.value.problems}


# ------------------------------------------------------------------------------ cluster identity


def _provider(r):
    (p,) = r.of_type(K8S_PROVIDER)
    return p.inputs


def test_eks_and_gke_providers_are_identified_by_the_cluster_not_its_endpoint():
    # the lookups' identities, spelled out (not read back from the code under test)
    assert _provider(rendered("prod-aws"))["clusterIdentifier"] == (
        "arn:aws:eks:placeholder:000000000000:cluster/offline-placeholder"
    )
    assert _provider(rendered("dev-gcp"))["clusterIdentifier"] == (
        "projects/offline-placeholder/locations/offline-placeholder/clusters/offline-placeholder"
    )
    assert _provider(rendered("local"))["clusterIdentifier"] == "context:kind-gpu"


def test_a_rotated_endpoint_and_ca_keep_the_cluster_identifier(monkeypatch):
    """A GKE credential rotation or control-plane IP change: the kubeconfig's active cluster changes (which,
    without clusterIdentifier, pulumi-kubernetes DiffConfig answers with a replacement of the provider and
    every Kubernetes resource); the identifier, which alone decides replacement when set, does not."""
    before = _provider(rendered("prod-gcp"))
    lookups = json.loads(json.dumps(synth.LOOKUPS))
    lookups["gcp:container/getCluster:getCluster"]["endpoint"] = "203.0.113.7"
    lookups["gcp:container/getCluster:getCluster"]["masterAuths"] = [{"clusterCaCertificate": "Uk9UQVRFRA=="}]
    monkeypatch.setattr(synth, "LOOKUPS", lookups)
    after = _provider(render_config(stack_config("prod-gcp"), "prod-gcp"))
    assert after["kubeconfig"] != before["kubeconfig"]
    assert "203.0.113.7" in after["kubeconfig"]
    assert after["clusterIdentifier"] == before["clusterIdentifier"]


def test_existing_cluster_without_a_context_keeps_the_providers_own_heuristic():
    # switching the ambient current-context to another cluster must still replace, not silently re-target
    cfg = stack_config("local")
    cfg["gpu-platform:cluster"] = {}
    assert "clusterIdentifier" not in _provider(render_config(cfg, "local"))


# ------------------------------------------------------------------------------ default providers


def test_project_disables_the_default_kubernetes_provider_for_every_stack():
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    # project-level config (not a stack file): it applies to every stack, present and future
    assert "kubernetes" in project["config"]["pulumi:disable-default-providers"]
    for stack in STACKS:
        text = (ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text()
        assert "disable-default-providers" not in text  # a stack file may not switch it back on


@pytest.mark.parametrize("stack", STACKS)
def test_every_kubernetes_resource_names_the_explicit_provider(stack):
    r = rendered(stack)
    (provider,) = r.of_type(K8S_PROVIDER)
    k8s = [x for x in r.resources if x.custom and x.type.startswith("kubernetes:")]
    assert k8s
    assert {x.provider for x in k8s} == {provider.name}
    # and written so in resources.json, as the README documents
    written = json.loads(synth.files(r)["resources.json"])
    assert all(x["provider"] == provider.name for x in written if x["type"].startswith("kubernetes:"))


def test_the_synth_refuses_a_kubernetes_resource_without_a_provider_as_the_engine_does():
    import pulumi

    from components.render import program

    original = program.run

    def stray(spec):
        original(spec)
        from pulumi_kubernetes.core.v1 import ConfigMap

        ConfigMap("stray", metadata={"name": "stray"}, opts=pulumi.ResourceOptions())

    try:
        program.run = stray
        with pytest.raises(RuntimeError, match="default providers for 'kubernetes' are disabled"):
            synth.render("local", stack_config("local"))
    finally:
        program.run = original


# ------------------------------------------------------------------------------ tenant namespaces


@pytest.mark.parametrize("stack", STACKS)
def test_tenant_namespaces_are_protected_by_default(stack):
    r = rendered(stack)
    tenants = {t.name for t in r.spec.tenants} | {t.name for t in (r.spec.fleet.tenants if r.spec.fleet else [])}
    namespaces = {x.inputs["metadata"]["name"]: x for x in r.of_type(NAMESPACE)}
    assert tenants <= set(namespaces)
    for name, ns in namespaces.items():
        # protected, not retained: the engine refuses the delete loudly instead of orphaning the namespace
        assert ns.protect is (name in tenants), name
        assert not ns.retain_on_delete


@pytest.mark.parametrize("stack", STACKS)
def test_a_tenants_quota_and_limit_range_are_protected_with_its_namespace(stack):
    """The engine deletes the quota and LimitRange before the namespace that holds them: protected alone, the
    namespace survived a removed tenant's `pulumi up` without its guards (tests/engine shows it on a server)."""
    r = rendered(stack)
    for t in r.spec.tenants:
        for kind, name in ((RESOURCE_QUOTA, f"{t.name}-gpu-quota"), (LIMIT_RANGE, f"{t.name}-defaults")):
            assert r.find(kind, name).protect is True, (stack, name)


@pytest.mark.parametrize("stack", STACKS)
def test_a_kueue_tenants_queues_are_protected_with_its_namespace(stack):
    """A removed tenant's LocalQueue and ClusterQueue went first while its namespace was refused: its new jobs were
    inadmissible, and the ClusterQueue stayed terminating under Kueue's finalizer while its workloads ran, the up
    waiting 10 minutes on it (tests/sched/test_day2_under_load.py shows it with the real Kueue and engine)."""
    r = rendered(stack)
    queues = r.of_type(CLUSTER_QUEUE) + r.of_type(LOCAL_QUEUE)
    assert len(queues) == 2 * len(r.of_type(CLUSTER_QUEUE)), [x.name for x in queues]
    for x in queues:
        assert x.protect is True, (stack, x.name)
        tenant = x.name.rsplit("-", 2)[0]
        assert r.find(NAMESPACE, f"{tenant}-namespace").protect is True, (stack, x.name)
    # nothing else of Kueue's: its flavors, priority classes and checks hold no tenant's workloads (a fleet's
    # MultiKueueClusters do: deleting one re-runs what runs on its worker, test_fleet.py)
    others = [
        x
        for x in r.resources
        if x.type.startswith("kubernetes:kueue.x-k8s.io/")
        and x.type not in (CLUSTER_QUEUE, LOCAL_QUEUE, "kubernetes:kueue.x-k8s.io/v1beta2:MultiKueueCluster")
    ]
    assert not any(x.protect for x in others), stack


def test_a_stack_can_opt_out_of_namespace_protection():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:protect"] = {"tenantNamespaces": False}
    r = render_config(cfg, "dev-aws")
    assert not any(x.protect for x in r.of_type(NAMESPACE))
    assert not any(x.protect for x in r.of_type(RESOURCE_QUOTA) + r.of_type(LIMIT_RANGE))
    assert not any(x.protect for x in r.of_type(CLUSTER_QUEUE) + r.of_type(LOCAL_QUEUE))
    assert all(x.protect for x in r.of_type(HELM_RELEASE) if x.name == "kueue")  # the other key stays on


def test_protect_keys_are_checked():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:protect"] = {"tenantNamespace": False}
    assert "did you mean tenantNamespaces" in _problems(cfg)["gpu-platform:protect.tenantNamespace"]


# ------------------------------------------------------------------------------ add-on removal


@pytest.mark.parametrize("stack", STACKS)
def test_scheduler_releases_are_protected_and_the_others_are_not(stack):
    r = rendered(stack)
    protected = {x.name for x in r.of_type(HELM_RELEASE) if x.protect}
    expected = {n for n in ("kueue", "volcano") if getattr(r.spec.addons, n)}
    assert protected == expected


def test_scheduler_release_protection_can_be_turned_off():
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:protect"] = {"schedulerReleases": False}
    r = render_config(cfg, "prod-aws")
    assert not any(x.protect for x in r.of_type(HELM_RELEASE))
    assert any(x.protect for x in r.of_type(NAMESPACE))


@pytest.mark.parametrize("addon", ["kueue", "volcano"])
def test_an_addon_a_tenant_uses_cannot_be_turned_off(addon):
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:tenants"][0]["scheduler"] = addon
    cfg["gpu-platform:tenants"][2]["scheduler"] = addon
    cfg["gpu-platform:addons"] = {**cfg["gpu-platform:addons"], addon: False}
    if addon == "kueue":
        cfg["gpu-platform:nodePools"][0].pop("topologyAware")  # needs Kueue, reported on its own
    problems = _problems(cfg)
    for i in (0, 2):
        message = problems[f"gpu-platform:tenants[{i}].scheduler"]
        assert f"turn on addons.{addon}" in message
        assert "deletes every" in message


# ------------------------------------------------------------------------------ immutable Kueue fields


def _flat(value: Any, path: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flat(v, f"{path}.{k}" if path else k))
        return out or {path: {}}
    return {path: value}


def plans_replacement(old: dict[str, Any], new, replace_on_changes: list[str] | None = None) -> bool:
    """What the engine decides for a custom resource with ``replaceOnChanges``: replace when a changed
    property path equals or lies under one of them (pulumi/pulumi pkg/resource/deploy/step_generator.go
    applyReplaceOnChanges, with the provider's detailed diff of the inputs)."""
    paths = new.replace_on_changes if replace_on_changes is None else replace_on_changes
    a, b = _flat(old), _flat(new.inputs)
    changed = {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)}
    return any(c == p or c.startswith(p + ".") or p.startswith(c + ".") for c in changed for p in paths)


def _flavor(r, pool: str):
    return r.find(RESOURCE_FLAVOR, f"flavor-{pool}")


def test_immutable_kueue_objects_are_replaced_deleting_first():
    r = rendered("prod-aws")
    tas = _flavor(r, "a100-train")  # topologyAware
    assert tas.inputs["spec"]["topologyName"]
    assert tas.replace_on_changes == ["spec.nodeLabels", "spec.tolerations", "spec.topologyName"]
    assert tas.delete_before_replace  # same object name: the new one cannot exist beside the old
    plain = _flavor(r, "l4-notebooks")
    assert plain.replace_on_changes == ["spec.topologyName"]
    assert plain.delete_before_replace
    topology = r.find(TOPOLOGY, "topology")
    assert topology.replace_on_changes == ["spec.levels"]
    assert topology.delete_before_replace


def _taint_all(cfg):
    for pool in cfg["gpu-platform:nodePools"]:
        pool["taints"] = [{"key": "example.com/dedicated", "value": "ml", "effect": "NoSchedule"}]


def _topology_off(cfg):
    cfg["gpu-platform:nodePools"][0].pop("topologyAware")  # a100-train


EDITS = {"taint-all": _taint_all, "topology-off": _topology_off}


@cached
def _edited(edit: str) -> Any:
    cfg = stack_config("prod-aws")
    EDITS[edit](cfg)
    return render_config(cfg, "prod-aws")


def test_a_changed_taint_replaces_a_topology_flavor_and_updates_a_plain_one():
    before = rendered("prod-aws")
    after = _edited("taint-all")
    assert plans_replacement(_flavor(before, "a100-train").inputs, _flavor(after, "a100-train"))
    # without topologyName the tolerations are mutable: an in-place update, no replacement
    old, new = _flavor(before, "l4-notebooks"), _flavor(after, "l4-notebooks")
    assert old.inputs != new.inputs
    assert not plans_replacement(old.inputs, new)


def test_unchanged_flavors_and_topology_are_not_replaced():
    before = rendered("prod-aws")

    cfg = stack_config("prod-aws")
    cfg["gpu-platform:tenants"][0]["gpuQuota"] = {
        k: v + 1 for k, v in cfg["gpu-platform:tenants"][0]["gpuQuota"].items()
    }
    after = render_config(cfg, "prod-aws")
    for x in after.of_type(RESOURCE_FLAVOR) + after.of_type(TOPOLOGY):
        assert not plans_replacement(before.find(x.type, x.name).inputs, x), x.name


def test_turning_topology_off_replaces_the_flavor():
    # the old flavor has a topologyName, which the API server refuses to remove in place
    before = rendered("prod-aws")
    after = _edited("topology-off")
    assert "topologyName" not in _flavor(after, "a100-train").inputs["spec"]
    assert plans_replacement(_flavor(before, "a100-train").inputs, _flavor(after, "a100-train"))


def test_changed_topology_levels_replace_the_topology():
    before = rendered("prod-aws")
    cfg = stack_config("prod-aws")
    levels = ["topology.k8s.aws/zone-id", "kubernetes.io/hostname"]
    cfg["gpu-platform:scheduling"] = {**cfg.get("gpu-platform:scheduling", {}), "topologyLevels": levels}
    after = render_config(cfg, "prod-aws")
    old, new = before.find(TOPOLOGY, "topology"), after.find(TOPOLOGY, "topology")
    assert old.inputs != new.inputs
    assert plans_replacement(old.inputs, new)


def test_replacement_is_planned_exactly_where_the_crd_refuses_an_update():
    """The CRDs' own CEL transition rules, evaluated on each edit: every edit they refuse is a planned
    replacement, and an edit they allow is left an update (a needless replacement would delete the flavor
    ClusterQueues hold)."""
    import cel  # a declared dev dependency: missing, the test fails rather than skips

    schema = json.loads((UPSTREAM / "kueue" / "resourceflavor.kueue.x-k8s.io.v1beta2.json").read_text())
    rules = [v["rule"] for v in schema["properties"]["spec"]["x-kubernetes-validations"] if "oldSelf" in v["rule"]]
    assert len(rules) == 3

    def refused(old: dict[str, Any], new: dict[str, Any]) -> bool:
        ctx = cel.Context()
        ctx.add_variable("self", new)
        ctx.add_variable("oldSelf", old)
        return not all(cel.evaluate(rule, ctx) for rule in rules)

    before = rendered("prod-aws")
    seen = set()
    for edit in EDITS:
        after = _edited(edit)
        for new in after.of_type(RESOURCE_FLAVOR):
            old = before.find(new.type, new.name)
            verdict = refused(old.inputs["spec"], new.inputs["spec"])
            assert plans_replacement(old.inputs, new) == verdict, new.name
            seen.add(verdict)
    assert seen == {True, False}  # both directions occurred


# ------------------------------------------------------------------------------ GPU Operator upgrades


# the spec alone, not a render: a render at collection time would run the mock engine in the process
# make mutate forks its mutants from, and its event loop's executor threads do not survive the fork
@pytest.mark.parametrize("stack", [s for s in STACKS if load_spec(stack_config(s)).addons.gpu_operator])
def test_gpu_operator_release_can_upgrade_its_crds(stack):
    release = rendered(stack).find(HELM_RELEASE, "gpu-operator")
    assert release.inputs["disableOpenapiValidation"] is True
    # the hook stays on (the chart's default): CRDs are upgraded with the chart
    assert release.inputs["values"].get("operator", {}).get("upgradeCRD", True) is True
    others = [r for r in rendered(stack).of_type(HELM_RELEASE) if r.name != "gpu-operator"]
    assert not any(r.inputs.get("disableOpenapiValidation") for r in others)


def test_the_chart_asks_for_openapi_validation_off_when_it_upgrades_crds():
    text = (UPSTREAM / "gpu-operator" / "values.yaml").read_text()
    values = yaml.safe_load(text)
    assert values["operator"]["upgradeCRD"] is True
    assert "--disable-openapi-validation" in text
