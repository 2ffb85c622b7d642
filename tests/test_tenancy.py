"""Tenancy and priorities: namespaces with Pod Security labels, GPU quotas in scheduler units,
priority ceilings, container defaults, PriorityClasses."""

from __future__ import annotations

import pytest
from conftest import PRIORITY_CLASS, manifest, rendered, stack_config

from components.cli.loader import SpecError, load_spec
from components.cli.synth import render
from components.plan import derive
from components.render.tenancy import FORBIDDEN_PRIORITY_ANNOTATION as FORBIDDEN

POOLS = "gpu-platform/pools"
ONE_UNIT = "gpu-platform/one-unit-pools"
QUEUE = "scheduling.volcano.sh/queue-name"  # Volcano's, read by its /podgroups/mutate webhook


def test_namespace_pod_security_labels():
    r = rendered("prod-aws")
    research = manifest(r, "Namespace", "research")["metadata"]["labels"]
    assert research["pod-security.kubernetes.io/enforce"] == "baseline"
    assert research["pod-security.kubernetes.io/warn"] == "restricted"
    assert research["gpu-platform/tenant"] == "research"
    serving = manifest(r, "Namespace", "serving")["metadata"]["labels"]
    assert serving["pod-security.kubernetes.io/enforce"] == "restricted"


def test_quota_counts_whole_gpus_on_plain_pools():
    hard = manifest(rendered("prod-aws"), "ResourceQuota", "gpu-quota", "research")["spec"]["hard"]
    # The quota is the most Kueue can admit for research (what it admits on borrowed quota must start): per
    # flavor its nominal quota plus what the cohort's other queues lend there (kueue v0.19.2 resource_node.go
    # potentialAvailable). No other ClusterQueue of cohort gpu-platform has quota on a100-train or h100-spot, so
    # the borrowingLimit of 8 on a100-train adds nothing: 16 + 16 whole GPUs (not 16 + 8 and the whole 32).
    assert hard["requests.nvidia.com/gpu"] == str(16 + 16)
    assert hard["requests.cpu"] == "512"
    assert hard["requests.memory"] == "4Ti"


def test_quota_counts_time_slicing_replicas():
    hard = manifest(rendered("dev-aws"), "ResourceQuota", "gpu-quota", "ml-dev")["spec"]["hard"]
    # l4-shared: 4 physical GPUs x 4 time-slicing replicas = 16; a10g-spot: 8 whole GPUs
    assert hard["requests.nvidia.com/gpu"] == str(4 * 4 + 8)


def test_quota_counts_shared_units_up_to_the_borrowing_ceiling():
    hard = manifest(rendered("prod-aws"), "ResourceQuota", "gpu-quota", "notebooks")["spec"]["hard"]
    # notebooks: 4 L4 time-sliced 4 ways = 16 units; nobody else on l4-notebooks lends it any (the pool's other 8
    # L4 are in no tenant's quota), so 16, not the pool's 12 x 4
    assert hard["requests.nvidia.com/gpu"] == str(4 * 4)


def test_quota_counts_mps_replicas():
    hard = manifest(rendered("local"), "ResourceQuota", "gpu-quota", "dev")["spec"]["hard"]
    assert hard["requests.nvidia.com/gpu"] == str(1 * 2)  # the one workstation L4, 2 MPS clients


def test_quota_is_the_nominal_quota_without_a_batch_scheduler():
    """With neither Kueue nor Volcano nothing lends, so the ResourceQuota is the nominal quota."""
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:addons"] = {"kueue": False, "volcano": False}
    cfg["gpu-platform:nodePools"][0].pop("topologyAware")  # topology-aware scheduling needs Kueue
    cfg["gpu-platform:tenants"][2].pop("scheduler")  # applied-ml chose Volcano
    hard = manifest(render("prod-aws", cfg), "ResourceQuota", "gpu-quota", "research")["spec"]["hard"]
    assert hard["requests.nvidia.com/gpu"] == str(16 + 16)


def test_quota_caps_each_mig_resource_under_mixed_strategy():
    r = rendered("prod-aws")
    hard = manifest(r, "ResourceQuota", "gpu-quota", "serving")["spec"]["hard"]
    # 16 H100s, each 1x 3g.40gb + 1x 2g.20gb + 2x 1g.10gb
    assert hard["requests.nvidia.com/mig-3g.40gb"] == "16"
    assert hard["requests.nvidia.com/mig-2g.20gb"] == "16"
    assert hard["requests.nvidia.com/mig-1g.10gb"] == "32"
    assert hard["requests.nvidia.com/gpu"] == "0"
    # a tenant without MIG quota is capped at 0 on every MIG resource, not left uncapped
    research = manifest(r, "ResourceQuota", "gpu-quota", "research")["spec"]["hard"]
    assert research["requests.nvidia.com/mig-1g.10gb"] == "0"


def test_single_mig_profile_is_advertised_as_gpus():
    spec = load_spec(stack_config("prod-gcp"))
    assert derive.mig_strategy(spec) == "single"
    # a100-inference: 6 A100-40GB, 7x 1g.5gb each -> 42 GPU units for serving (+ 8 L4 x 2 MPS)
    assert derive.tenant_units(spec, spec.tenants[1]) == {"nvidia.com/gpu": 6 * 7 + 8 * 2}


def _named(r, kind, name):
    return [m for m in r.manifests if m["kind"] == kind and m["metadata"]["name"] == name]


def test_priority_ceiling_is_an_annotation_per_namespace():
    r = rendered("prod-aws")

    def forbidden(ns):
        return manifest(r, "Namespace", ns)["metadata"].get("annotations", {}).get(FORBIDDEN)

    assert forbidden("research") == "inference"  # ceiling training-critical (90000): only inference above
    assert forbidden("notebooks") == "batch,inference,training,training-critical"  # ceiling dev, the lowest
    assert forbidden("serving") is None  # inference is the top class: nothing above


def test_one_priority_ceiling_policy_serves_every_tenant():
    r = rendered("prod-aws")
    (policy,) = _named(r, "ValidatingAdmissionPolicy", "gpu-platform-priority-ceiling")
    spec = policy["spec"]
    assert spec["failurePolicy"] == "Fail"
    assert spec["matchConstraints"]["namespaceSelector"] == {
        "matchExpressions": [{"key": "gpu-platform/tenant", "operator": "Exists"}]
    }
    # namespaced objects only: cluster-scoped requests have no namespace to read the ceiling from
    assert {rule["scope"] for rule in spec["matchConstraints"]["resourceRules"]} == {"Namespaced"}
    # kube-apiserver evaluates matchConditions without namespaceObject (k8s.io/apiserver v0.35.4
    # pkg/admission/plugin/webhook/matchconditions/matcher.go:82-85): a condition on it never matches, so the
    # policy has none and reads the namespace in its variable, where the server provides it
    assert "matchConditions" not in spec
    (var,) = spec["variables"]
    assert var == {
        "name": "forbidden",
        "expression": "['system-cluster-critical', 'system-node-critical'] + (namespaceObject != null && "
        f"has(namespaceObject.metadata.annotations) && '{FORBIDDEN}' in namespaceObject.metadata.annotations ? "
        f"namespaceObject.metadata.annotations['{FORBIDDEN}'].split(',') : [])",
    }
    label, pod, template, cron, workload = (v["expression"] for v in spec["validations"])
    assert "object.metadata.labels['kueue.x-k8s.io/priority-class'] in variables.forbidden" in label
    assert "request.kind.group != '' || request.kind.kind != 'Pod'" in pod
    assert "object.spec.priorityClassName in variables.forbidden" in pod
    assert "object.spec.template.spec.priorityClassName in variables.forbidden" in template
    assert "object.spec.jobTemplate.spec.template.spec.priorityClassName in variables.forbidden" in cron
    # kinds with templates elsewhere (JobSet, PyTorchJob...): the Workload Kueue makes for them (v1beta2 field)
    assert "request.kind.kind != 'Workload'" in workload
    assert "object.spec.priorityClassRef.name in variables.forbidden" in workload
    (binding,) = _named(r, "ValidatingAdmissionPolicyBinding", "gpu-platform-priority-ceiling")
    assert binding["spec"] == {"policyName": "gpu-platform-priority-ceiling", "validationActions": ["Deny"]}


def test_the_ceiling_policy_exists_even_when_every_tenant_may_use_the_top_class():
    """The system-* classes are above every tenant's: with tenants there is always something to refuse."""
    cfg = stack_config("local")
    cfg["gpu-platform:tenants"][0]["priority"] = "inference"
    r = render("local", cfg)
    assert len(_named(r, "ValidatingAdmissionPolicy", "gpu-platform-priority-ceiling")) == 1
    cfg["gpu-platform:tenants"] = []
    assert _named(render("local", cfg), "ValidatingAdmissionPolicy", "gpu-platform-priority-ceiling") == []


def test_limit_range_defaults():
    lr = manifest(rendered("prod-aws"), "LimitRange", "container-defaults", "research")["spec"]["limits"][0]
    assert lr["type"] == "Container"
    assert lr["defaultRequest"] == {"cpu": "250m", "memory": "512Mi"}
    # no default limit: a training container requesting 64Gi and no limit would get limit 2Gi < request
    assert "default" not in lr


def test_resources_per_tenant_are_few():
    r = rendered("prod-aws")
    tenants = {t.name for t in r.spec.tenants}  # no tenant name is a prefix of another here
    by_tenant = {
        t: sorted(x.type.rsplit(":", 1)[-1] for x in r.resources if x.name.startswith(t + "-")) for t in tenants
    }
    # namespace, GPU quota, container defaults; then the tenant's scheduler's queues: Kueue ClusterQueue +
    # LocalQueue for the tenants Kueue queues, a Volcano Queue (and nothing of Kueue's) for the one Volcano
    # schedules (applied-ml)
    common = ["LimitRange", "Namespace", "ResourceQuota"]
    kueue = sorted([*common, "ClusterQueue", "LocalQueue"])
    assert by_tenant == {t: sorted([*common, "Queue"]) if t == "applied-ml" else kueue for t in tenants}


def test_default_priority_classes():
    r = rendered("prod-aws")
    pcs = {m["metadata"]["name"]: m for m in r.manifests if m["kind"] == "PriorityClass"}
    assert {n: pcs[n]["value"] for n in pcs} == {
        "inference": 100000,
        "training-critical": 90000,
        "training": 50000,
        "batch": 10000,
        "dev": 1000,
    }
    assert pcs["dev"]["preemptionPolicy"] == "Never"
    assert pcs["training-critical"]["preemptionPolicy"] == "PreemptLowerPriority"
    assert sum(1 for p in pcs.values() if p.get("globalDefault")) <= 1
    assert len(r.of_type(PRIORITY_CLASS)) == 5


def test_priority_classes_overridable_per_stack():
    cfg = stack_config("local")
    cfg["gpu-platform:priorityClasses"] = [
        {"name": "dev", "value": 100, "preemptionPolicy": "Never", "globalDefault": True},
        {"name": "prod", "value": 5000},
    ]
    r = render("local", cfg)
    pcs = {m["metadata"]["name"]: m for m in r.manifests if m["kind"] == "PriorityClass"}
    assert set(pcs) == {"dev", "prod"}
    assert pcs["dev"]["globalDefault"] is True


def test_unknown_tenant_priority_is_rejected_with_the_classes_listed():
    cfg = stack_config("local")
    cfg["gpu-platform:tenants"][0]["priority"] = "gold"
    with pytest.raises(SpecError) as err:
        load_spec(cfg)
    (problem,) = err.value.problems
    assert problem.path == "gpu-platform:tenants[0].priority"
    assert "batch, dev, inference, training, training-critical" in problem.message


def test_scheduler_label_follows_the_tenant_choice():
    r = rendered("prod-aws")
    labels = {t.name: manifest(r, "Namespace", t.name)["metadata"]["labels"] for t in r.spec.tenants}
    assert labels["applied-ml"]["gpu-platform/scheduler"] == "volcano"
    assert {labels[t]["gpu-platform/scheduler"] for t in ("research", "serving", "notebooks")} == {"kueue"}


def test_choosing_a_scheduler_that_is_not_installed_is_refused():
    cfg = stack_config("dev-aws")  # kueue on, volcano off
    cfg["gpu-platform:tenants"][0]["scheduler"] = "volcano"
    with pytest.raises(SpecError) as err:
        load_spec(cfg)
    assert [p.path for p in err.value.problems] == ["gpu-platform:tenants[0].scheduler"]
    assert err.value.problems[0].message.startswith("volcano is not installed: turn on addons.volcano")


def test_quota_hard_caps_every_gpu_resource_and_only_given_cpu_memory():
    """notebooks (prod-aws) reaches only l4-notebooks: every other GPU resource of the cluster is capped at 0
    (no way around the quota through a pool it has no entry for); no cpu/memory key without tenants[].quota;
    keys sorted."""
    from components.plan import plan

    tenants = plan.build(load_spec(stack_config("prod-aws")), "prod-aws").tenants
    # 4 L4 x 4 slices: nobody else on l4-notebooks lends it any (Kueue's maximum capacity, components/plan/ceilings.py)
    assert dict(tenants["notebooks"].quota_hard) == {
        "requests.nvidia.com/gpu": "16",
        "requests.nvidia.com/mig-1g.10gb": "0",
        "requests.nvidia.com/mig-2g.20gb": "0",
        "requests.nvidia.com/mig-3g.40gb": "0",
        # prod-aws's file systems: notebooks has no share of either (gpu-platform:storage)
        "research-checkpoints.storageclass.storage.k8s.io/persistentvolumeclaims": "0",
        "research-checkpoints.storageclass.storage.k8s.io/requests.storage": "0",
        "shared-lustre.storageclass.storage.k8s.io/persistentvolumeclaims": "0",
        "shared-lustre.storageclass.storage.k8s.io/requests.storage": "0",
    }
    assert list(tenants["research"].quota_hard) == sorted(tenants["research"].quota_hard)


def test_critical_tenants_are_labelled_and_the_scheduler_label_is_absent_without_one():
    """serving is critical (the capacity policy reads gpu-platform/critical); with no batch scheduler on, a
    namespace carries no scheduler label at all."""
    from components.render import tenancy

    spec = load_spec(stack_config("prod-aws"))
    serving = next(t for t in spec.tenants if t.name == "serving")
    research = next(t for t in spec.tenants if t.name == "research")
    assert tenancy.namespace_labels(serving)["gpu-platform/critical"] == "true"
    assert "gpu-platform/critical" not in tenancy.namespace_labels(research)
    assert tenancy.namespace_labels(research)["app.kubernetes.io/managed-by"] == "gpu-platform"
    cfg = stack_config("local")
    cfg["gpu-platform:addons"] = {**cfg["gpu-platform:addons"], "kueue": False, "volcano": False}
    local = load_spec(cfg)
    assert tenancy.scheduler_label(local, local.tenants[0]) == {}
    assert tenancy.namespace_annotations(load_spec(stack_config("prod-aws")), serving) == {}


def test_priority_classes_and_their_kueue_twins_carry_the_same_description():
    """A class's description, or 'gpu-platform priority tier <name>' when it has none, on both the
    PriorityClass and Kueue's WorkloadPriorityClass; preemptionPolicy defaults to PreemptLowerPriority."""
    cfg = stack_config("local")
    cfg["gpu-platform:priorityClasses"] = [
        {"name": "dev", "value": 100, "preemptionPolicy": "Never", "globalDefault": True, "description": "notebooks"},
        {"name": "prod", "value": 5000},
    ]
    r = render("local", cfg)
    for kind in ("PriorityClass", "WorkloadPriorityClass"):
        docs = {m["metadata"]["name"]: m for m in r.manifests if m["kind"] == kind}
        assert docs["dev"]["description"] == "notebooks", kind
        assert docs["prod"]["description"] == "gpu-platform priority tier prod", kind
        assert docs["prod"]["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "gpu-platform"}, kind
    pcs = {m["metadata"]["name"]: m for m in r.manifests if m["kind"] == "PriorityClass"}
    assert (pcs["prod"]["preemptionPolicy"], pcs["prod"]["globalDefault"]) == ("PreemptLowerPriority", False)


def test_quota_and_defaults_are_labelled_with_their_tenant_and_wait_for_the_namespace():
    """The tenant's ResourceQuota and LimitRange carry managed-by and the tenant label (the policies find a
    tenant's quota by it) and are created in the namespace after it exists."""
    r = rendered("prod-aws")
    labels = {"app.kubernetes.io/managed-by": "gpu-platform", "gpu-platform/tenant": "research"}
    for kind, res_name, name in (
        ("ResourceQuota", "research-gpu-quota", "gpu-quota"),
        ("LimitRange", "research-defaults", "container-defaults"),
    ):
        rec = r.find(f"kubernetes:core/v1:{kind}", res_name)
        assert rec.inputs["metadata"] == {"name": name, "namespace": "research", "labels": labels}, kind
        assert rec.depends_on == ["research-namespace"], kind


# ----------------------------------------------------------------- Volcano tenants' pools (issue 26)


def test_a_volcano_tenants_namespace_lists_its_pools():
    """prod-aws applied-ml (Volcano, ceiling training) reaches a100-gang alone, which shares no GPU: the pools
    annotation names it, and there is no one-unit annotation. Kueue tenants carry only their ceiling."""
    r = rendered("prod-aws")
    annotations = {t.name: manifest(r, "Namespace", t.name)["metadata"].get("annotations", {}) for t in r.spec.tenants}
    # and its queue, which Volcano's /podgroups/mutate gives a PodGroup created in "default" there
    assert annotations["applied-ml"] == {
        FORBIDDEN: "inference,training-critical",
        POOLS: "a100-gang",
        QUEUE: "applied-ml",
    }
    assert annotations["research"] == {FORBIDDEN: "inference"}
    assert annotations["notebooks"] == {FORBIDDEN: "batch,inference,training,training-critical"}
    assert annotations["serving"] == {}


def test_pools_whose_containers_may_ask_one_unit_are_listed_apart():
    """prod-aws with notebooks moved to Volcano, and applied-ml given an entry (0) on l4-notebooks beside its
    a100-gang (both Volcano's pools now). l4-notebooks time-slices with failRequestsGreaterThanOne (the
    default): one unit per container; a100-gang shares nothing. Pools are sorted in both annotations."""
    from components.render import tenancy

    cfg = stack_config("prod-aws")
    cfg["gpu-platform:tenants"][3]["scheduler"] = "volcano"  # notebooks
    cfg["gpu-platform:tenants"][2]["gpuQuota"] = {"l4-notebooks": 0, "a100-gang": 16}  # applied-ml
    spec = load_spec(cfg)
    applied, notebooks = spec.tenants[2], spec.tenants[3]
    assert tenancy.namespace_annotations(spec, applied) == {
        FORBIDDEN: "inference,training-critical",
        POOLS: "a100-gang,l4-notebooks",
        ONE_UNIT: "l4-notebooks",
        QUEUE: "applied-ml",
    }
    assert tenancy.namespace_annotations(spec, notebooks) == {
        FORBIDDEN: "batch,inference,training,training-critical",
        POOLS: "l4-notebooks",
        ONE_UNIT: "l4-notebooks",
        QUEUE: "notebooks",
    }
    # time-slicing that lets a container ask for more (failRequestsGreaterThanOne: false) is not one-unit
    cfg["gpu-platform:nodePools"][3]["sharing"]["failRequestsGreaterThanOne"] = False
    spec = load_spec(cfg)
    assert tenancy.namespace_annotations(spec, spec.tenants[3]) == {
        FORBIDDEN: "batch,inference,training,training-critical",
        POOLS: "l4-notebooks",
        QUEUE: "notebooks",
    }


def test_mps_and_mig_pools_in_the_annotations():
    """local's workstation shares its L4 by MPS (one client per container at most); a MIG pool hands out whole
    slices, any number per container (prod-aws h100-inference, serving moved to Volcano); on GKE likewise."""
    from components.render import tenancy

    cfg = stack_config("local")
    cfg["gpu-platform:tenants"][0]["scheduler"] = "volcano"
    spec = load_spec(cfg)
    assert tenancy.namespace_annotations(spec, spec.tenants[0]) == {
        FORBIDDEN: "batch,inference,training,training-critical",
        POOLS: "workstation",
        ONE_UNIT: "workstation",
        QUEUE: "dev",
    }
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:tenants"][1]["scheduler"] = "volcano"  # serving: ceiling inference, the top class
    spec = load_spec(cfg)
    assert tenancy.namespace_annotations(spec, spec.tenants[1]) == {POOLS: "h100-inference", QUEUE: "serving"}
    # GKE (prod-gcp serving on Volcano): MIG a100-inference hands out slices, MPS l4-serving one client each
    cfg = stack_config("prod-gcp")
    cfg["gpu-platform:tenants"][1]["scheduler"] = "volcano"
    spec = load_spec(cfg)
    assert tenancy.namespace_annotations(spec, spec.tenants[1]) == {
        QUEUE: "serving",
        POOLS: "a100-inference,l4-serving",
        ONE_UNIT: "l4-serving",
    }


def test_without_volcano_no_namespace_lists_pools():
    """The annotations are for the Volcano pod policy: a Kueue tenant, or any tenant of a stack without Volcano,
    gets none."""
    from components.render import tenancy

    for stack in ("dev-aws", "prod-gcp", "local"):
        spec = load_spec(stack_config(stack))
        for tenant in spec.tenants:
            assert not {POOLS, ONE_UNIT} & set(tenancy.namespace_annotations(spec, tenant)), (stack, tenant.name)
