"""Kueue: the pinned chart and its manager configuration, and the queueing objects derived from the spec
(flavors, cluster queues, local queues, workload priorities, topology, ProvisioningRequest checks),
validated against the upstream v1beta2 CRD schemas and the CEL rules those schemas carry."""

from __future__ import annotations

import functools
import json

import pytest
import yaml
from caching import shared_fixture
from conftest import (
    HELM_RELEASE,
    PRIORITY_CLASS,
    STACKS,
    UPSTREAM,
    manifest,
    manifests,
    release,
    render_config,
    rendered,
    stack_config,
)
from jsonschema import Draft7Validator
from values_paths import unknown_paths

from components.cli.loader import SpecError, load_spec
from components.plan import derive
from components.render import kueue

API = "kueue.x-k8s.io/v1beta2"
KINDS = ("ResourceFlavor", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass", "Topology")


def _kueue(r, kind):
    return [m for m in manifests(r, kind) if m["apiVersion"] == API]


def _cq(stack, tenant):
    return manifest(rendered(stack), "ClusterQueue", tenant)["spec"]


def _flavor(cq_spec, name):
    for rg in cq_spec["resourceGroups"]:
        for f in rg["flavors"]:
            if f["name"] == name:
                return {r["name"]: r for r in f["resources"]}
    raise KeyError(name)


def _problems(config):
    with pytest.raises(SpecError) as err:
        load_spec(config)
    return {p.path: p.message for p in err.value.problems}


@functools.cache
def _upstream_values():
    return yaml.safe_load((UPSTREAM / "kueue" / "values.yaml").read_text())


@functools.cache
def _upstream_values_text():
    return (UPSTREAM / "kueue" / "values.yaml").read_text()


def _manager_config(r):
    return yaml.safe_load(release(r, "kueue")["values"]["managerConfig"]["controllerManagerConfigYaml"])


# ------------------------------------------------------------------------------------------ release


def test_release_is_the_pinned_official_oci_chart():
    rel = release(rendered("prod-aws"), "kueue")
    assert rel["chart"] == "oci://registry.k8s.io/kueue/charts/kueue"
    assert rel["version"] == "0.19.2"
    assert rel["namespace"] == "kueue-system"
    assert "repositoryOpts" not in rel  # OCI: the registry is in the chart reference


@pytest.mark.parametrize("stack", STACKS)
def test_every_value_path_exists_upstream(stack):
    assert unknown_paths(release(rendered(stack), "kueue")["values"], _upstream_values()) == []


def test_manager_config_keeps_the_serving_settings_the_chart_wires():
    """The chart's Deployment, Services and probes expect the ports and lease of its default document."""
    ours = _manager_config(rendered("prod-aws"))
    default = yaml.safe_load(_upstream_values()["managerConfig"]["controllerManagerConfigYaml"])
    assert ours["apiVersion"] == default["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
    assert ours["kind"] == "Configuration"
    for k in ("health", "webhook", "leaderElection", "clientConnection", "controller"):
        assert ours[k] == default[k], k
    assert ours["metrics"]["bindAddress"] == default["metrics"]["bindAddress"] == ":8443"


def test_manager_config_uses_only_keys_the_chart_documents():
    """Every key we set is one the chart's values.yaml shows (set or commented out) in its Configuration."""
    text = _upstream_values_text()
    cfg = _manager_config(rendered("prod-aws"))
    for k in cfg:
        assert f"{k}:" in text, k
    for k in cfg["waitForPodsReady"]:
        assert f"{k}:" in text, k
    for k in cfg["waitForPodsReady"]["requeuingStrategy"]:
        assert f"{k}:" in text, k
    assert "excludeResourcePrefixes:" in text
    for framework in cfg["integrations"]["frameworks"]:
        assert f'"{framework}"' in text, framework


def test_wait_for_pods_ready_gives_all_or_nothing_start_with_backoff():
    cfg = _manager_config(rendered("prod-aws"))
    w = cfg["waitForPodsReady"]
    assert w["timeout"] == "30m"  # scheduling.waitForPodsReadyTimeout default (cold start from zero)
    assert w["blockAdmission"] is False
    assert w["requeuingStrategy"] == {
        "timestamp": "Eviction",
        "backoffBaseSeconds": 60,
        "backoffMaxSeconds": 3600,
        "backoffLimitCount": 10,
    }
    assert "enable" not in w  # v1beta2 has no enable flag: presence turns it on


def test_integrations_cover_the_job_kinds_users_need():
    """prod-aws installs JobSet, KubeRay and Kubeflow Trainer (addons.jobset, addons.kuberay, addons.trainer): their
    kinds' integrations are on, as are the built-in kinds'; LeaderWorkerSet and the Kubeflow Training and MPI
    Operators' kinds, whose operators it does not install, are off (issue 31: an integration only with its
    operator)."""
    frameworks = _manager_config(rendered("prod-aws"))["integrations"]["frameworks"]
    assert frameworks == [
        "batch/job",
        "pod",
        "deployment",
        "statefulset",
        "jobset.x-k8s.io/jobset",
        "ray.io/rayjob",
        "ray.io/raycluster",
        "trainer.kubeflow.org/trainjob",
    ]
    assert _manager_config(rendered("dev-aws"))["integrations"]["frameworks"] == [
        "batch/job",
        "pod",
        "deployment",
        "statefulset",
    ]


def test_pod_integrations_are_confined_to_tenant_namespaces():
    cfg = _manager_config(rendered("prod-aws"))
    # every workload in a tenant namespace is queued (no bypass of the borrowing ceiling), and only there
    assert cfg["manageJobsWithoutQueueName"] is True
    assert cfg["managedJobsNamespaceSelector"] == {
        "matchExpressions": [
            {"key": "gpu-platform/tenant", "operator": "Exists"},
            # Volcano tenants' namespaces are left alone, or Kueue would gate their gang's pods one by one
            {"key": "gpu-platform/scheduler", "operator": "In", "values": ["kueue"]},
        ]
    }
    # EFA / GKE multi-network / ephemeral-storage requests do not make workloads inadmissible
    assert "vpc.amazonaws.com/" in cfg["resources"]["excludeResourcePrefixes"]


def test_controller_is_highly_available_and_critical():
    values = release(rendered("prod-aws"), "kueue")["values"]["controllerManager"]
    assert values["replicas"] == 2
    assert values["podDisruptionBudget"] == {"enabled": True, "minAvailable": 1}
    assert values["manager"]["priorityClassName"] == "system-cluster-critical"


# ---------------------------------------------------------------- one ad-hoc stack for several knobs


@shared_fixture
def custom():
    """prod-aws with a system node selector, another LocalQueue name, no default cohort (so research's
    borrowing limit must go), stricter waitForPodsReady settings and a smaller integration list (keeping `pod`,
    which a stack with Kueue tenants must have)."""
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:systemNodeSelector"] = {"node-role.example.com/system": "true"}
    cfg["gpu-platform:scheduling"] = {
        "localQueueName": "batch",
        "defaultCohort": None,
        "waitForPodsReadyTimeout": "25m",
        "blockAdmission": True,
        "requeueLimit": None,
        "queueingStrategy": "StrictFIFO",
        "kueueIntegrations": ["batch/job", "jobset.x-k8s.io/jobset", "pod"],
    }
    for t in cfg["gpu-platform:tenants"]:
        t.pop("borrowingLimit", None)
        t.pop("lendingLimit", None)
    cfg["gpu-platform:tenants"][0]["cohort"] = "training"  # research alone in its own cohort
    return render_config(cfg, "custom")


def test_controllers_run_on_system_nodes(custom):
    expected = {"kubernetes.io/os": "linux", "node-role.example.com/system": "true"}
    assert release(custom, "kueue")["values"]["controllerManager"]["nodeSelector"] == expected
    assert release(custom, "volcano")["values"]["custom"]["default_ns"] == expected


def test_scheduling_knobs_reach_the_manager_config(custom):
    cfg = _manager_config(custom)
    assert cfg["waitForPodsReady"]["timeout"] == "25m"
    assert cfg["waitForPodsReady"]["blockAdmission"] is True
    assert "backoffLimitCount" not in cfg["waitForPodsReady"]["requeuingStrategy"]  # null: requeue forever
    assert cfg["integrations"]["frameworks"] == ["batch/job", "jobset.x-k8s.io/jobset", "pod"]


def test_local_queue_name_and_cohorts_follow_the_spec(custom):
    lq = manifest(custom, "LocalQueue", "batch", "serving")
    assert lq["spec"] == {"clusterQueue": "serving"}
    with pytest.raises(KeyError):  # applied-ml is Volcano's: no Kueue queue under any name
        manifest(custom, "LocalQueue", "batch", "applied-ml")
    research = manifest(custom, "ClusterQueue", "research")["spec"]
    assert research["cohortName"] == "training"
    assert research["queueingStrategy"] == "StrictFIFO"
    serving = manifest(custom, "ClusterQueue", "serving")["spec"]
    assert "cohortName" not in serving  # no default cohort: neither lends nor borrows
    assert serving["preemption"] == {"withinClusterQueue": "LowerPriority"}
    # notebooks never preempts, but without a cohort there is nothing to lend: no lendingLimit 0 either
    notebooks = manifest(custom, "ClusterQueue", "notebooks")["spec"]
    assert "cohortName" not in notebooks
    for cq in (serving, notebooks):
        for rg in cq["resourceGroups"]:
            for f in rg["flavors"]:
                for r in f["resources"]:
                    assert "borrowingLimit" not in r and "lendingLimit" not in r


# ------------------------------------------------------------------------------ schema validation


@functools.cache
def _validator(kind):
    path = UPSTREAM / "kueue" / f"{kind.lower()}.kueue.x-k8s.io.v1beta2.strict.json"
    return Draft7Validator(json.loads(path.read_text()))


@pytest.mark.parametrize("stack", STACKS)
def test_custom_resources_validate_against_the_strict_v1beta2_schemas(stack):
    docs = [m for m in rendered(stack).manifests if m["apiVersion"] == API and m["kind"] in KINDS]
    assert {d["kind"] for d in docs} >= {"ResourceFlavor", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass"}
    for doc in docs:
        errors = [
            f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in _validator(doc["kind"]).iter_errors(doc)
        ]
        assert errors == [], f"{doc['kind']} {doc['metadata']['name']}"


def test_strict_schema_catches_a_v1beta1_field_name():
    """v1beta1's spec.cohort became spec.cohortName in v1beta2; the strict schema refuses the old name."""
    doc = manifest(rendered("prod-aws"), "ClusterQueue", "research")
    old = {**doc, "spec": {**doc["spec"], "cohort": doc["spec"]["cohortName"]}}
    del old["spec"]["cohortName"]
    assert list(_validator("ClusterQueue").iter_errors(old))


@pytest.mark.parametrize("stack", STACKS)
def test_cluster_queues_satisfy_kueue_cel_and_webhook_rules(stack):
    """What jsonschema cannot check: the schema's CEL rules and Kueue's webhook validation."""
    for cq in _kueue(rendered(stack), "ClusterQueue"):
        s = cq["spec"]
        seen: set[str] = set()
        assert len(s["resourceGroups"]) <= 16
        for rg in s["resourceGroups"]:
            covered = rg["coveredResources"]
            assert not seen & set(covered), "a resource may be in one group only"
            seen |= set(covered)
            for f in rg["flavors"]:
                # flavors must have the same resources as coveredResources, in the same order
                assert [r["name"] for r in f["resources"]] == covered
                for r in f["resources"]:
                    if "cohortName" not in s:
                        assert "borrowingLimit" not in r and "lendingLimit" not in r
                    if "lendingLimit" in r:
                        assert int(r["lendingLimit"]) <= int(r["nominalQuota"])
        p = s["preemption"]
        assert not (p.get("reclaimWithinCohort", "Never") == "Never" and "borrowWithinCohort" in p)
        flavor_names = [f["name"] for rg in s["resourceGroups"] for f in rg["flavors"]]
        assert len(flavor_names) == len(set(flavor_names)), "a flavor may appear once per ClusterQueue"
        for check in s.get("admissionChecksStrategy", {}).get("admissionChecks", []):
            assert set(check["onFlavors"]) <= set(flavor_names), "onFlavors must name flavors of the queue"


# ------------------------------------------------------------------------------------------ flavors


def test_one_flavor_per_pool_with_its_label_and_taint_tolerations():
    r = rendered("prod-aws")
    names = {f["metadata"]["name"] for f in _kueue(r, "ResourceFlavor")}
    # every pool Kueue may hand out gets its flavor; a100-gang is Volcano's (only applied-ml, a Volcano tenant,
    # reaches it): no ClusterQueue may name it, so a flavor would admit nothing
    assert names == {"default-flavor", "a100-train", "h100-inference", "h100-spot", "l4-notebooks"}
    spot = manifest(r, "ResourceFlavor", "h100-spot")["spec"]
    assert spot == {
        "nodeLabels": {"gpu-platform/pool": "h100-spot"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}],
    }
    assert manifest(r, "ResourceFlavor", "default-flavor")["spec"] == {}


def test_flavor_node_labels_are_labels_the_pool_nodes_carry():
    for stack in ("prod-aws", "prod-gcp"):
        spec = rendered(stack).spec
        for pool in spec.node_pools:
            if pool.name in derive.volcano_pools(spec):
                continue  # Volcano's pool: no flavor (test_one_flavor_per_pool_with_its_label_and_taint_tolerations)
            labels = manifest(rendered(stack), "ResourceFlavor", pool.name)["spec"]["nodeLabels"]
            assert labels.items() <= derive.pool_labels(spec, pool).items()


def test_queued_provisioning_flavor_tolerates_the_gke_queued_taint():
    tolerations = manifest(rendered("prod-gcp"), "ResourceFlavor", "h100-burst")["spec"]["tolerations"]
    assert {"key": "cloud.google.com/gke-queued", "operator": "Equal", "value": "true", "effect": "NoSchedule"} in (
        tolerations
    )


def test_topology_aware_pools_reference_the_cloud_topology():
    aws = rendered("prod-aws")
    assert manifest(aws, "ResourceFlavor", "a100-train")["spec"]["topologyName"] == "gpu-topology"
    assert "topologyName" not in manifest(aws, "ResourceFlavor", "h100-spot")["spec"]
    assert [lvl["nodeLabel"] for lvl in manifest(aws, "Topology", "gpu-topology")["spec"]["levels"]] == [
        "topology.k8s.aws/network-node-layer-1",
        "topology.k8s.aws/network-node-layer-2",
        "topology.k8s.aws/network-node-layer-3",
        "kubernetes.io/hostname",
    ]
    gcp = rendered("prod-gcp")
    assert manifest(gcp, "ResourceFlavor", "h100-train")["spec"]["topologyName"] == "gpu-topology"
    assert [lvl["nodeLabel"] for lvl in manifest(gcp, "Topology", "gpu-topology")["spec"]["levels"]] == [
        "cloud.google.com/gce-topology-block",
        "cloud.google.com/gce-topology-subblock",
        "cloud.google.com/gce-topology-host",
        "kubernetes.io/hostname",
    ]
    assert _kueue(rendered("dev-aws"), "Topology") == []


def test_flavors_wait_for_the_topology_and_queues_for_the_flavors():
    r = rendered("prod-aws")
    flavor = r.find("kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor", "flavor-a100-train")
    assert {"kueue", "topology"} <= set(flavor.depends_on)
    # Each ClusterQueue waits for the release, its webhooks, and exactly the flavors and admission checks it
    # names (stacks/Pulumi.prod-aws.yaml gpuQuota; a100-train is the topology-aware pool that can grow, so it
    # carries the a100-train-atomic check), not for every flavor of the cluster. applied-ml, Volcano's tenant,
    # has no ClusterQueue to wait for anything.
    ready = ["kueue", "kueue-webhook-ready"]
    expected = {
        "research": ["a100-train-admission-check", "flavor-a100-train", "flavor-default", "flavor-h100-spot"],
        "serving": ["flavor-default", "flavor-h100-inference"],
        "notebooks": ["flavor-default", "flavor-l4-notebooks"],
    }
    cqs = r.of_type("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue")
    assert sorted(x.name for x in cqs) == sorted(f"{t}-cluster-queue" for t in expected)
    for tenant, waits_for in expected.items():
        cq = r.find("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue", f"{tenant}-cluster-queue")
        assert cq.depends_on == sorted([*ready, *waits_for]), tenant
    lq = r.find("kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue", "research-local-queue")
    assert "research-cluster-queue" in lq.depends_on
    assert "research-namespace" in lq.depends_on  # waits for the tenant namespace


def test_every_kueue_object_uses_the_cluster_provider_and_waits_for_the_release():
    r = rendered("prod-gcp")
    children = [x for x in r.resources if x.parent == "kueue"]
    assert children
    for x in children:
        assert x.provider, x.name
        if x.type.startswith("kubernetes:kueue.x-k8s.io/"):
            assert x.depends_on, x.name  # on the release, directly or through another object
    assert r.find(HELM_RELEASE, "kueue").depends_on == ["critical-pods-kueue", "namespace-kueue"]


# ------------------------------------------------------------------------------------ cluster queues


def test_research_queue_numbers():
    s = _cq("prod-aws", "research")
    assert s["namespaceSelector"] == {
        "matchLabels": {"gpu-platform/tenant": "research", "kubernetes.io/metadata.name": "research"}
    }
    assert s["cohortName"] == "gpu-platform"
    assert s["queueingStrategy"] == "BestEffortFIFO"
    assert s["preemption"] == {
        "withinClusterQueue": "LowerPriority",
        "reclaimWithinCohort": "Any",
        "borrowWithinCohort": {"policy": "LowerPriority"},
    }
    assert s["flavorFungibility"] == {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor"}
    assert len(s["resourceGroups"]) == 1
    assert s["resourceGroups"][0]["coveredResources"] == ["cpu", "memory", "nvidia.com/gpu"]
    assert [f["name"] for f in s["resourceGroups"][0]["flavors"]] == ["default-flavor", "a100-train", "h100-spot"]
    a100 = _flavor(s, "a100-train")
    # 16 A100s, borrowingLimit 8 GPUs; cpu/memory from tenants[].quota
    assert a100["nvidia.com/gpu"] == {"name": "nvidia.com/gpu", "nominalQuota": "16", "borrowingLimit": "8"}
    assert a100["cpu"] == {"name": "cpu", "nominalQuota": "512"}
    assert a100["memory"] == {"name": "memory", "nominalQuota": "4Ti"}
    assert _flavor(s, "h100-spot")["nvidia.com/gpu"] == {"name": "nvidia.com/gpu", "nominalQuota": "16"}
    # the CPU-only flavor has no GPUs to hand out
    assert _flavor(s, "default-flavor")["nvidia.com/gpu"]["nominalQuota"] == "0"


def test_a_tenant_gets_no_flavor_for_pools_without_quota():
    s = _cq("prod-aws", "research")
    flavors = {f["name"] for rg in s["resourceGroups"] for f in rg["flavors"]}
    assert "l4-notebooks" not in flavors and "h100-inference" not in flavors


def test_mig_profiles_form_their_own_group_with_lending_limits_in_units():
    s = _cq("prod-aws", "serving")
    groups = {tuple(rg["coveredResources"]): rg for rg in s["resourceGroups"]}
    assert set(groups) == {
        ("cpu", "memory", "nvidia.com/gpu"),
        ("nvidia.com/mig-1g.10gb", "nvidia.com/mig-2g.20gb", "nvidia.com/mig-3g.40gb"),
    }
    h100 = _flavor(s, "h100-inference")
    # 16 H100s x (2x 1g.10gb + 1x 2g.20gb + 1x 3g.40gb); lendingLimit 4 GPUs -> 8 / 4 / 4 slices
    assert h100["nvidia.com/mig-1g.10gb"] == {
        "name": "nvidia.com/mig-1g.10gb",
        "nominalQuota": "32",
        "lendingLimit": "8",
    }
    assert h100["nvidia.com/mig-2g.20gb"] == {
        "name": "nvidia.com/mig-2g.20gb",
        "nominalQuota": "16",
        "lendingLimit": "4",
    }
    assert h100["nvidia.com/mig-3g.40gb"] == {
        "name": "nvidia.com/mig-3g.40gb",
        "nominalQuota": "16",
        "lendingLimit": "4",
    }


def test_shared_gpus_are_quoted_in_units_and_cpu_defaults_are_generous():
    s = _cq("prod-aws", "notebooks")
    l4 = _flavor(s, "l4-notebooks")
    assert l4["nvidia.com/gpu"]["nominalQuota"] == "16"  # 4 L4s x 4 MPS clients
    assert l4["cpu"]["nominalQuota"] == kueue.DEFAULT_CPU_QUOTA == "10k"  # no tenants[].quota: 10,000 cpus
    assert l4["memory"]["nominalQuota"] == kueue.DEFAULT_MEMORY_QUOTA == "64Ti"


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        # k8s.io/apimachinery v0.35.4 pkg/api/resource/quantity_test.go TestQuantityParseEmit, as given
        ("1Ki", "1Ki"),
        ("1Mi", "1Mi"),
        ("1Gi", "1Gi"),
        ("1024Mi", "1Gi"),
        ("1000M", "1G"),
        (".001Ki", "1024m"),
        (".000001Ki", "1024u"),
        (".000000001Ki", "1024n"),
        (".000000000001Ki", "2n"),
        # TestQuantityString's values, written as a stack file would
        ("300Mi", "300Mi"),
        ("1001Gi", "1001Gi"),
        ("5", "5"),
        ("0.5", "500m"),
        ("1080m", "1080m"),
        ("1.08", "1080m"),
        ("3k", "3k"),
        ("1025", "1025"),
        ("0", "0"),
        # what the platform writes: the default cpu quota, GPU unit counts
        ("10000", "10k"),
        (10000, "10k"),
        (16, "16"),
        (2000, "2k"),
        (1500, "1500"),
        ("1.5Gi", "1536Mi"),
        ("64Ti", "64Ti"),
    ],
)
def test_quotas_are_written_as_kueue_stores_them(given, stored):
    """Kueue's webhooks store every ClusterQueue quota as a resource.Quantity's canonical string; written otherwise,
    the provider (which diffs against the live object) plans an update of every ClusterQueue on every preview."""
    assert kueue.canonical_quantity(given) == stored


@pytest.mark.parametrize("stack", STACKS)
def test_every_cluster_queue_quantity_is_canonical(stack):
    for cq in _kueue(rendered(stack), "ClusterQueue"):
        for group in cq["spec"]["resourceGroups"]:
            for flavor in group["flavors"]:
                for r in flavor["resources"]:
                    for key in ("nominalQuota", "borrowingLimit", "lendingLimit"):
                        if key in r:
                            assert r[key] == kueue.canonical_quantity(r[key]), (stack, cq["metadata"]["name"], r)


def test_a_stack_files_cpu_quota_reaches_kueue_in_canonical_form():
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:tenants"][0]["quota"] = {"cpu": "2000", "memory": "1024Gi"}
    name = cfg["gpu-platform:tenants"][0]["name"]
    cq = manifest(render_config(cfg), "ClusterQueue", name)["spec"]
    cpu = {r["name"]: r["nominalQuota"] for f in cq["resourceGroups"][0]["flavors"] for r in f["resources"]}
    assert cpu["cpu"] == "2k" and cpu["memory"] == "1Ti"


@pytest.mark.parametrize("bad", ["", ".", "1x", "-1", "1e3"])
def test_canonical_quantity_refuses_what_is_not_a_stack_file_quantity(bad):
    with pytest.raises(ValueError):
        kueue.canonical_quantity(bad)


def _prod_with_a100_mig() -> dict:
    """prod-aws plus a100-mig: one p4de node whose 8 A100s are each cut into 7 1g.10gb (a layout that overlaps
    h100-inference's, so the two share a resource group)."""
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:nodePools"].append(
        {
            "name": "a100-mig",
            "gpu": {"model": "A100-80GB", "perNode": 8},
            "instanceTypes": ["p4de.24xlarge"],
            "maxNodes": 1,
            "sharing": {"strategy": "mig", "layout": {"1g.10gb": 7}},
        }
    )
    return cfg


def test_overlapping_resource_sets_share_a_group():
    """Two mixed-MIG pools with different but overlapping layouts: one group covering the union, each flavor
    listing every covered resource (0 for profiles it does not advertise)."""
    cfg = _prod_with_a100_mig()
    cfg["gpu-platform:tenants"][1]["gpuQuota"]["a100-mig"] = 8
    spec = load_spec(cfg)
    groups = kueue.resource_groups(spec, spec.tenants[1])
    mig = [rg for rg in groups if "nvidia.com/mig-1g.10gb" in rg["coveredResources"]]
    assert len(mig) == 1
    assert [f["name"] for f in mig[0]["flavors"]] == ["a100-mig", "h100-inference"]
    a100 = {r["name"]: r["nominalQuota"] for r in mig[0]["flavors"][0]["resources"]}
    assert a100 == {"nvidia.com/mig-1g.10gb": "56", "nvidia.com/mig-2g.20gb": "0", "nvidia.com/mig-3g.40gb": "0"}


def test_queued_provisioning_pool_goes_through_a_provisioning_request_check():
    r = rendered("prod-gcp")
    check = manifest(r, "AdmissionCheck", "h100-burst-dws")["spec"]
    assert check == {
        "controllerName": "kueue.x-k8s.io/provisioning-request",
        "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": "h100-burst-dws"},
    }
    config = manifest(r, "ProvisioningRequestConfig", "h100-burst-dws")["spec"]
    assert config["provisioningClassName"] == "queued-provisioning.gke.io"
    assert config["managedResources"] == ["nvidia.com/gpu"]
    for tenant in ("research", "applied-ml"):
        assert _cq("prod-gcp", tenant)["admissionChecksStrategy"] == {
            "admissionChecks": [
                {"name": "h100-burst-dws", "onFlavors": ["h100-burst"]},
                {"name": "h100-train-atomic", "onFlavors": ["h100-train"]},
            ]
        }
    assert "admissionChecksStrategy" not in _cq("prod-gcp", "serving")
    assert [m["metadata"]["name"] for m in manifests(rendered("dev-gcp"), "AdmissionCheck")] == []


# ------------------------------------------------------------- topology-aware pools from zero (issue 10 §1, §2)

ATOMIC = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"


@pytest.mark.parametrize(("stack", "pool"), [("prod-aws", "a100-train"), ("prod-gcp", "h100-train")])
def test_topology_aware_pool_from_zero_gets_an_atomic_provisioning_check(stack, pool):
    """Kueue TAS sees only ready nodes (kueue v0.19.2 concepts/topology_aware_scheduling.md): a TAS pool at 0
    nodes admits only through a ProvisioningRequest check, which delays the topology assignment until the
    autoscaler has brought the gang's nodes up (tas_flavorassigner.go, DelayedTopologyRequest)."""
    r = rendered(stack)
    name = f"{pool}-atomic"
    assert manifest(r, "AdmissionCheck", name)["spec"] == {
        "controllerName": "kueue.x-k8s.io/provisioning-request",
        "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": name},
    }
    assert manifest(r, "ProvisioningRequestConfig", name)["spec"] == {
        "provisioningClassName": ATOMIC,
        "managedResources": ["nvidia.com/gpu"],
        "podSetMergePolicy": "IdenticalWorkloadSchedulingRequirements",
    }
    flavor = manifest(r, "ResourceFlavor", pool)["spec"]
    assert flavor["topologyName"] == kueue.TOPOLOGY_NAME
    for tenant in derive.kueue_tenants(r.spec):  # the tenants with a ClusterQueue (Volcano's have none)
        checks = _cq(stack, tenant.name).get("admissionChecksStrategy", {}).get("admissionChecks", [])
        mine = [c for c in checks if c["name"] == name]
        assert mine == ([{"name": name, "onFlavors": [pool]}] if pool in tenant.gpu_quota else [])
    # prod-aws: applied-ml is Volcano's (no ClusterQueue, no check); every prod-gcp tenant is Kueue's
    skipped = {t.name for t in r.spec.tenants} - {t.name for t in derive.kueue_tenants(r.spec)}
    assert skipped == ({"applied-ml"} if stack == "prod-aws" else set())
    # the check and its config exist before any ClusterQueue naming them
    cq = r.find("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue", "research-cluster-queue")
    assert f"{pool}-admission-check" in cq.depends_on


def test_pools_that_are_not_topology_aware_or_cannot_grow_get_no_check():
    assert [p.name for p in kueue.provisioning_pools(rendered("prod-aws").spec)] == ["a100-train"]
    assert [p.name for p in kueue.provisioning_pools(rendered("dev-aws").spec)] == []
    config = stack_config("prod-aws")
    pools = config["gpu-platform:nodePools"]
    pools[0].update(minNodes=4, maxNodes=4)  # a fixed-size TAS pool: TAS sees every node, nothing to provision
    assert kueue.provisioning_pools(load_spec(config)) == []


def test_a_topology_aware_managed_pool_without_the_autoscaler_gets_no_check():
    config = stack_config("prod-aws")
    config["gpu-platform:addons"]["clusterAutoscaler"] = False
    for p in config["gpu-platform:nodePools"]:
        if p.get("provisioner", "managed") == "managed":
            p["minNodes"] = max(p.get("minNodes", 0), 1)  # minNodes 0 without the autoscaler is refused
    spec = load_spec(config)
    assert kueue.provisioning_class(spec, spec.pool("a100-train")) is None


@functools.cache
def _closed_validator(kind):
    """Kueue v0.19.2's schema for kinds upstream/ lacks (tests/fixtures/kueue), closed the way its
    .strict.json files are: additionalProperties false on every object schema with properties."""
    from conftest import ROOT

    path = ROOT / "tests" / "fixtures" / "kueue" / f"{kind.lower()}.kueue.x-k8s.io.v1beta2.json"
    schema = json.loads(path.read_text())

    def close(node):
        if isinstance(node, dict):
            # Go RE2 takes "^(?i)..." (AdmissionCheck parameters.kind); Python wants the flag first.
            if isinstance(node.get("pattern"), str) and node["pattern"].startswith("^(?i)"):
                node["pattern"] = "(?i)^" + node["pattern"][len("^(?i)") :]
            if node.get("type") == "object" and "properties" in node and "additionalProperties" not in node:
                if not node.get("x-kubernetes-preserve-unknown-fields"):
                    node["additionalProperties"] = False
            for k in ("properties",):
                for v in node.get(k, {}).values():
                    close(v)
            for k in ("items", "additionalProperties"):
                if isinstance(node.get(k), dict):
                    close(node[k])

    close(schema)
    return Draft7Validator(schema)


@pytest.mark.parametrize("stack", ["prod-aws", "prod-gcp"])
def test_admission_checks_and_provisioning_configs_validate_against_kueue_schemas(stack):
    docs = [m for m in rendered(stack).manifests if m["kind"] in ("AdmissionCheck", "ProvisioningRequestConfig")]
    assert len(docs) >= 2
    for doc in docs:
        errors = [e.message for e in _closed_validator(doc["kind"]).iter_errors(doc)]
        assert errors == [], f"{doc['kind']} {doc['metadata']['name']}"
    bad = {**docs[0], "spec": {**docs[0]["spec"], "provisioningClass": "x"}}  # a misspelt field is caught
    assert list(_closed_validator(docs[0]["kind"]).iter_errors(bad))


# ------------------------------------------------------------------------- local queues, priorities


@pytest.mark.parametrize("stack", STACKS)
def test_a_local_queue_named_default_in_every_kueue_tenant_namespace(stack):
    r = rendered(stack)
    kueue_tenants = {t.name for t in derive.kueue_tenants(r.spec)}
    for tenant in r.spec.tenants:
        if tenant.name in kueue_tenants:
            # "default" is the name Kueue's LocalQueue defaulting gives jobs without a queue-name label
            lq = manifest(r, "LocalQueue", "default", tenant.name)
            assert lq["spec"] == {"clusterQueue": tenant.name}
            manifest(r, "ClusterQueue", tenant.name)
        else:  # a Volcano tenant: Kueue leaves its namespace alone and holds no quota for it
            assert derive.tenant_scheduler(r.spec, tenant) == "volcano"
            assert [m for m in _kueue(r, "LocalQueue") if m["metadata"]["namespace"] == tenant.name] == []
            with pytest.raises(KeyError):
                manifest(r, "ClusterQueue", tenant.name)
    # every stack but prod-aws queues all its tenants in Kueue; prod-aws all but applied-ml; a fleet manager also
    # its fleet tenants (test_fleet.py)
    fleet = len(r.spec.fleet.tenants) if r.spec.fleet else 0
    assert len(_kueue(r, "LocalQueue")) - fleet == len(kueue_tenants) == len(r.spec.tenants) - (stack == "prod-aws")


@pytest.mark.parametrize("stack", STACKS)
def test_workload_priority_classes_mirror_the_priority_classes(stack):
    r = rendered(stack)
    pcs = {m["metadata"]["name"]: m["value"] for m in manifests(r, "PriorityClass")}
    wpcs = {m["metadata"]["name"]: m["value"] for m in _kueue(r, "WorkloadPriorityClass")}
    assert pcs == wpcs
    assert wpcs["inference"] == 100_000 and wpcs["dev"] == 1_000
    assert r.of_type(PRIORITY_CLASS)


def test_namespace_is_restricted_and_gke_gets_a_critical_pods_quota():
    ns = manifest(rendered("prod-aws"), "Namespace", "kueue-system")["metadata"]["labels"]
    assert ns["pod-security.kubernetes.io/enforce"] == "restricted"
    quota = manifest(rendered("prod-gcp"), "ResourceQuota", "critical-pods", "kueue-system")["spec"]
    assert sorted(quota["scopeSelector"]["matchExpressions"][0]["values"]) == [
        "system-cluster-critical",
        "system-node-critical",
    ]
    with pytest.raises(KeyError):
        manifest(rendered("prod-aws"), "ResourceQuota", "critical-pods", "kueue-system")


# ------------------------------------------------------------------------------------------- rules


def test_borrowing_limit_without_a_cohort_is_an_error():
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:scheduling"] = {"defaultCohort": None}
    problems = _problems(cfg)
    assert "cohort" in problems["gpu-platform:tenants[0].borrowingLimit"]  # research
    assert problems["gpu-platform:tenants[1].lendingLimit"] == "lending needs a cohort"  # serving


def test_a_limit_on_a_pool_without_quota_is_an_error():
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:tenants"][0]["borrowingLimit"]["l4-notebooks"] = 2
    cfg["gpu-platform:tenants"][1]["lendingLimit"]["h100-spot"] = 1
    problems = _problems(cfg)
    assert "no gpuQuota entry" in problems["gpu-platform:tenants[0].borrowingLimit.l4-notebooks"]
    assert "no gpuQuota entry" in problems["gpu-platform:tenants[1].lendingLimit.h100-spot"]


def test_topology_on_an_existing_cluster_needs_explicit_levels():
    cfg = stack_config("local")
    cfg["gpu-platform:nodePools"][0]["topologyAware"] = True
    problems = _problems(cfg)
    assert "scheduling.topologyLevels" in problems["gpu-platform:nodePools[0].topologyAware"]
    cfg["gpu-platform:scheduling"] = {"topologyLevels": ["example.com/rack", "kubernetes.io/hostname"]}
    spec = load_spec(cfg)
    assert kueue.topology_levels(spec) == ["example.com/rack", "kubernetes.io/hostname"]


def test_topology_levels_put_the_hostname_last_once():
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:scheduling"] = {
        "topologyLevels": ["kubernetes.io/hostname", "example.com/rack", "example.com/rack"]
    }
    problems = _problems(cfg)
    assert "last" in problems["gpu-platform:scheduling.topologyLevels[0]"]
    assert "twice" in problems["gpu-platform:scheduling.topologyLevels[2]"]


def test_topology_on_a_mig_mixed_pool_is_an_error():
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:nodePools"][1]["topologyAware"] = True  # h100-inference: nvidia.com/mig-* resources
    problems = _problems(cfg)
    assert "nvidia.com/mig-1g.10gb" in problems["gpu-platform:nodePools[1].topologyAware"]


def test_topology_and_queued_provisioning_need_kueue():
    cfg = stack_config("prod-gcp")
    cfg["gpu-platform:addons"] = {**cfg["gpu-platform:addons"], "kueue": False}
    problems = _problems(cfg)
    assert "addons.kueue" in problems["gpu-platform:nodePools[0].topologyAware"]
    assert "addons.kueue" in problems["gpu-platform:nodePools[1].gke.queuedProvisioning"]


def test_a_pool_may_not_take_the_cpu_flavor_name():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:nodePools"][1]["name"] = "default-flavor"
    cfg["gpu-platform:tenants"][0]["gpuQuota"] = {"l4-shared": 4, "default-flavor": 8}
    assert "default-flavor" in _problems(cfg)["gpu-platform:nodePools[1].name"]


POD_INTEGRATION_MESSAGE = (
    "without 'pod' (or deployment, statefulset, leaderworkerset, which turn it on) a plain Pod in a Kueue "
    "tenant's namespace bypasses Kueue and holds GPUs its quota never counts: add 'pod'"
)


def test_kueue_tenants_need_the_pod_integration():
    """Kueue gates a plain Pod only through its pod integration: with Kueue tenants the integration list must
    name it, or one of the integrations that turn it on."""
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:scheduling"] = {"kueueIntegrations": ["batch/job", "kubeflow.org/mpijob"]}
    assert _problems(cfg) == {"gpu-platform:scheduling.kueueIntegrations": POD_INTEGRATION_MESSAGE}
    cfg["gpu-platform:addons"] = {**cfg["gpu-platform:addons"], "leaderWorkerSet": True}
    for implied in ("pod", "deployment", "statefulset", "leaderworkerset.x-k8s.io/leaderworkerset"):
        cfg["gpu-platform:scheduling"] = {"kueueIntegrations": ["batch/job", implied]}
        assert load_spec(cfg).scheduling.kueue_integrations == ["batch/job", implied]


def test_without_kueue_tenants_the_integration_list_is_not_held_to_pod():
    """local with its one tenant on Volcano: Kueue queues nobody, so no plain Pod can bypass it."""
    cfg = stack_config("local")
    cfg["gpu-platform:scheduling"] = {"kueueIntegrations": ["batch/job"]}
    assert _problems(cfg) == {"gpu-platform:scheduling.kueueIntegrations": POD_INTEGRATION_MESSAGE}
    cfg["gpu-platform:tenants"][0]["scheduler"] = "volcano"
    spec = load_spec(cfg)
    assert derive.kueue_tenants(spec) == []


NEVER_PREEMPTS_LENDS = (
    "the tenant's classes never preempt (ceiling dev), so its ClusterQueue cannot reclaim what it lends: set 0, "
    "or raise its priority to a class that preempts"
)


def test_a_tenant_that_never_preempts_may_not_lend():
    """prod-aws notebooks (ceiling dev, preemptionPolicy Never): its ClusterQueue never reclaims, so a
    lendingLimit above 0 would lend for good; 0 is accepted."""
    cfg = stack_config("prod-aws")
    notebooks = cfg["gpu-platform:tenants"][3]
    assert notebooks["name"] == "notebooks"
    notebooks["lendingLimit"] = {"l4-notebooks": 2}
    assert _problems(cfg) == {"gpu-platform:tenants[3].lendingLimit.l4-notebooks": NEVER_PREEMPTS_LENDS}
    notebooks["lendingLimit"] = {"l4-notebooks": 0}
    spec = load_spec(cfg)
    assert spec.tenants[3].lending_limit == {"l4-notebooks": 0}
    # a tenant whose class preempts may lend (serving lends 4 H100s in the shipped stack)
    assert load_spec(stack_config("prod-aws")).tenants[1].lending_limit == {"h100-inference": 4}


def test_an_unknown_ceiling_is_reported_once_not_as_a_lending_problem():
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:tenants"][3].update(priority="gold", lendingLimit={"l4-notebooks": 2})
    problems = _problems(cfg)
    assert list(problems) == ["gpu-platform:tenants[3].priority"]
    assert "gold" in problems["gpu-platform:tenants[3].priority"]


def test_unknown_integration_is_an_error():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:scheduling"] = {"kueueIntegrations": ["batch/job", "kubeflow.org/pytorchjobs"]}
    assert "gpu-platform:scheduling.kueueIntegrations[1]" in _problems(cfg)


# ------------------------------------------------------------- Kueue queues only its own tenants (issue 26)


def test_a_volcano_tenant_gets_no_cluster_queue_or_local_queue():
    """prod-aws: applied-ml is scheduled by Volcano; Kueue skips its namespace, so a ClusterQueue would admit
    nothing and only lend its quota to the cohort. Kueue queues the other three tenants."""
    r = rendered("prod-aws")
    assert [t.name for t in derive.kueue_tenants(r.spec)] == ["research", "serving", "notebooks"]
    assert sorted(m["metadata"]["name"] for m in _kueue(r, "ClusterQueue")) == ["notebooks", "research", "serving"]
    assert sorted(m["metadata"]["namespace"] for m in _kueue(r, "LocalQueue")) == ["notebooks", "research", "serving"]
    with pytest.raises(KeyError):
        manifest(r, "ClusterQueue", "applied-ml")
    with pytest.raises(KeyError):
        manifest(r, "LocalQueue", "default", "applied-ml")
    # nor does any other ClusterQueue admit from its namespace: each selects its own tenant's namespace only
    for cq in _kueue(r, "ClusterQueue"):
        assert cq["spec"]["namespaceSelector"]["matchLabels"]["gpu-platform/tenant"] == cq["metadata"]["name"]
    # without Kueue nobody is Kueue's
    cfg = stack_config("local")
    cfg["gpu-platform:addons"] = {**cfg["gpu-platform:addons"], "kueue": False}
    assert derive.kueue_tenants(load_spec(cfg)) == []


def test_a_never_preempting_tenant_in_a_cohort_lends_nothing():
    """prod-aws notebooks: ceiling dev (preemptionPolicy Never), default cohort gpu-platform. Its l4-notebooks
    flavor: 4 L4 x 4 time-slices = 16 units nominal, lendingLimit 0 (it could never reclaim a loan); no
    borrowingLimit (none set). The CPU-only default flavor is no pool: no limit there."""
    s = _cq("prod-aws", "notebooks")
    assert s["cohortName"] == "gpu-platform"
    assert s["preemption"] == {"withinClusterQueue": "Never", "reclaimWithinCohort": "Never"}
    assert _flavor(s, "l4-notebooks")["nvidia.com/gpu"] == {
        "name": "nvidia.com/gpu",
        "nominalQuota": "16",
        "lendingLimit": "0",
    }
    assert _flavor(s, "default-flavor")["nvidia.com/gpu"] == {"name": "nvidia.com/gpu", "nominalQuota": "0"}
    # research preempts: no lendingLimit of its own, none added
    assert "lendingLimit" not in _flavor(_cq("prod-aws", "research"), "a100-train")["nvidia.com/gpu"]


def test_a_never_preempting_tenant_lends_no_unit_of_any_resource_its_pools_advertise():
    """serving moved down to ceiling dev (and its lendingLimit dropped, which a rule would now refuse): on
    h100-inference every MIG profile the layout advertises gets lendingLimit 0 -- 16 H100 x (2 x 1g.10gb,
    1 x 2g.20gb, 1 x 3g.40gb) = 32 / 16 / 16 units nominal."""
    cfg = stack_config("prod-aws")
    serving = cfg["gpu-platform:tenants"][1]
    serving["priority"] = "dev"
    serving.pop("lendingLimit")
    spec = load_spec(cfg)
    assert derive.tenant_never_preempts(spec, spec.tenants[1])
    (mig,) = [
        g for g in kueue.resource_groups(spec, spec.tenants[1]) if "nvidia.com/mig-1g.10gb" in g["coveredResources"]
    ]
    (h100,) = mig["flavors"]
    assert h100 == {
        "name": "h100-inference",
        "resources": [
            {"name": "nvidia.com/mig-1g.10gb", "nominalQuota": "32", "lendingLimit": "0"},
            {"name": "nvidia.com/mig-2g.20gb", "nominalQuota": "16", "lendingLimit": "0"},
            {"name": "nvidia.com/mig-3g.40gb", "nominalQuota": "16", "lendingLimit": "0"},
        ],
    }


# ------------------------------------------------------------------------------------ resource-group partition


def _mig_pool(spec, name: str, layout: dict[str, int]):
    """prod-aws's h100-inference (operator MIG, mixed strategy) renamed, with another layout."""
    base = spec.pool("h100-inference")
    return base.model_copy(update={"name": name, "sharing": base.sharing.model_copy(update={"layout": layout})})


def _groups(spec, pools):
    return [(sorted(names), [p.name for p in members]) for names, members in kueue._partition(spec, pools)]


def test_partition_merges_groups_a_later_pool_bridges():
    """Kueue needs every flavor of a group to cover the same resources: pools whose resource sets overlap,
    even only through a later pool, end up in one group at the place of the first group they joined; the
    whole-GPU group is first; disjoint sets stay apart in the order they appeared."""
    spec = load_spec(stack_config("prod-aws"))
    one = _mig_pool(spec, "p1", {"1g.10gb": 7})
    two = _mig_pool(spec, "p2", {"2g.20gb": 3})
    three = _mig_pool(spec, "p3", {"3g.40gb": 2})
    both = _mig_pool(spec, "p4", {"1g.10gb": 1, "2g.20gb": 3})
    whole = spec.pool("a100-train")
    assert _groups(spec, [one, whole, two, three, both]) == [
        (["nvidia.com/gpu"], ["a100-train"]),
        (["nvidia.com/mig-1g.10gb", "nvidia.com/mig-2g.20gb"], ["p1", "p2", "p4"]),
        (["nvidia.com/mig-3g.40gb"], ["p3"]),
    ]


def test_partition_keeps_the_flavor_order_inside_a_merged_group():
    """Members of a merged group are listed in the order the pools were given (Kueue's flavor order), not in
    the order their old groups were merged; the whole-GPU group exists even when no pool advertises it."""
    spec = load_spec(stack_config("prod-aws"))
    two = _mig_pool(spec, "p2", {"2g.20gb": 3})
    one = _mig_pool(spec, "p1", {"1g.10gb": 7})
    more_two = _mig_pool(spec, "q", {"2g.20gb": 2})
    both = _mig_pool(spec, "p4", {"1g.10gb": 1, "2g.20gb": 3})
    assert _groups(spec, [two, one, more_two, both]) == [
        (["nvidia.com/gpu"], []),
        (["nvidia.com/mig-1g.10gb", "nvidia.com/mig-2g.20gb"], ["p2", "p1", "q", "p4"]),
    ]


def test_partition_on_a_dra_stack_starts_with_the_gpu_device_class():
    """On DRA the whole-GPU group is gpu.nvidia.com's devices; MIG devices form their own group."""
    spec = load_spec(stack_config("dra-existing"))
    assert _groups(spec, spec.node_pools) == [
        (["gpu.nvidia.com/devices"], ["h100"]),
        (["mig.nvidia.com/devices"], ["a100-mig"]),
    ]


def test_manager_config_exports_queue_metrics_and_excludes_unrationed_resources():
    """ClusterQueue resource metrics are on (the dashboards and capacity checks read them); every request
    Kueue must not ration is excluded by prefix: ephemeral storage, hugepages, EFA, GKE networks, RDMA."""
    cfg = kueue.manager_config(load_spec(stack_config("prod-aws")))
    assert cfg["metrics"] == {"bindAddress": ":8443", "enableClusterQueueResources": True}
    assert cfg["resources"]["excludeResourcePrefixes"] == [
        "ephemeral-storage",
        "hugepages-",
        "vpc.amazonaws.com/",
        "networking.gke.io",
        "rdma/",
    ]
    assert "deviceClassMappings" not in cfg["resources"]


def test_recovery_timeout_defaults_to_the_start_timeout():
    """A running workload that loses a ready pod gets the cold-start budget to recover unless told otherwise."""
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:scheduling"] = {"waitForPodsReadyTimeout": "40m"}
    w = kueue.manager_config(load_spec(cfg))["waitForPodsReady"]
    assert (w["timeout"], w["recoveryTimeout"]) == ("40m", "40m")
    cfg["gpu-platform:scheduling"] = {"waitForPodsReadyTimeout": "40m", "waitForPodsReadyRecoveryTimeout": "20m"}
    w = kueue.manager_config(load_spec(cfg))["waitForPodsReady"]
    assert (w["timeout"], w["recoveryTimeout"]) == ("40m", "20m")


def test_a_cluster_queue_waits_for_each_flavor_and_check_it_names_once():
    """Flavors in order and once each across groups; admission checks by name; none without a strategy."""
    cq = {
        "resourceGroups": [
            {"flavors": [{"name": "default-flavor"}, {"name": "a"}, {"name": "b"}]},
            {"flavors": [{"name": "b"}, {"name": "c"}]},
        ],
        "admissionChecksStrategy": {"admissionChecks": [{"name": "a-atomic", "onFlavors": ["a"]}]},
    }
    assert kueue.queue_flavors(cq) == ["default-flavor", "a", "b", "c"]
    assert kueue.queue_checks(cq) == ["a-atomic"]
    assert kueue.queue_checks({"resourceGroups": []}) == []
    assert kueue.local_queue_spec(load_spec(stack_config("local")).tenants[0]) == {"clusterQueue": "dev"}


def test_limits_apply_only_to_resources_a_flavor_advertises():
    """In a merged MIG group a flavor lists every covered resource; its lending (and borrowing) limit, in
    units, goes on the resources its own layout advertises (a100-mig: 2 GPUs x 7 1g.10gb = 14), not on the
    ones it lists at 0."""
    cfg = _prod_with_a100_mig()
    serving = cfg["gpu-platform:tenants"][1]
    serving["gpuQuota"]["a100-mig"] = 8
    serving["lendingLimit"] = {"h100-inference": 4, "a100-mig": 2}
    serving["borrowingLimit"] = {"a100-mig": 1}
    spec = load_spec(cfg)
    (mig,) = [
        g for g in kueue.resource_groups(spec, spec.tenants[1]) if "nvidia.com/mig-1g.10gb" in g["coveredResources"]
    ]
    a100 = {r["name"]: r for r in mig["flavors"][0]["resources"]}
    assert a100 == {
        "nvidia.com/mig-1g.10gb": {
            "name": "nvidia.com/mig-1g.10gb",
            "nominalQuota": "56",
            "borrowingLimit": "7",
            "lendingLimit": "14",
        },
        "nvidia.com/mig-2g.20gb": {"name": "nvidia.com/mig-2g.20gb", "nominalQuota": "0"},
        "nvidia.com/mig-3g.40gb": {"name": "nvidia.com/mig-3g.40gb", "nominalQuota": "0"},
    }


def test_manager_config_text_starts_like_a_kubernetes_document():
    """The Configuration the chart mounts reads apiVersion, then kind, as Kubernetes documents do (written in
    the order built, not sorted), on one line per key (no flow style)."""
    text = kueue.manager_config_yaml(load_spec(stack_config("prod-aws")))
    assert text.startswith("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nhealth:\n")
    assert "{" not in text
