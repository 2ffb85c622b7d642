"""GPUs through Dynamic Resource Allocation (gpuOperator.allocation: dra; stack dra-existing).

What is checked against upstream, not against our own code: the gpu-operator values against the pinned chart's
values.yaml, the GPUCluster CR it renders against the CRD's strict schema, every resource.k8s.io/v1 object
(rendered and in the DRA examples) against the Kubernetes 1.34 and 1.37 schemas. And that the three enforcers,
the ResourceQuota, Kueue (ClusterQueue + deviceClassMappings) and the claim templates, agree for every tenant,
read back from the rendered objects, with numbers worked out by hand from the stack file.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from conftest import (
    ROOT,
    UPSTREAM,
    kubernetes_schemas_parsed_once,
    manifest,
    manifests,
    release,
    render_config,
    rendered,
    stack_config,
)
from jsonschema import Draft7Validator
from values_paths import deep_merge, unknown_paths

from components.cli.loader import SpecError, load_spec
from components.explain import summary
from components.plan import plan
from components.render import dra
from policies import dra_policies, offline

kubernetes_schemas_parsed_once()

STACK = "dra-existing"
QUOTA = ".deviceclass.resource.k8s.io/devices"
DRA_EXAMPLES = sorted((ROOT / "examples").glob("dra-*.yaml"))


def _values() -> dict[str, Any]:
    return release(rendered(STACK), "gpu-operator")["values"]


def _problems(cfg: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as err:
        load_spec(cfg)
    return [(p.path, p.message) for p in err.value.problems]


def _set(cfg: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    cfg[f"gpu-platform:{key}"] = value
    return cfg


# ---------------------------------------------------------------------------------------------- rules


def test_the_shipped_stack_is_valid_and_on_dra():
    spec = load_spec(stack_config(STACK))
    assert spec.gpu_operator.allocation == "dra" and spec.cluster.kubernetes_version == "1.34"


@pytest.mark.parametrize(
    ("version", "fragment"),
    [(None, "required with gpuOperator.allocation dra"), ("1.33", "needs Kubernetes 1.34+")],
)
def test_dra_needs_kubernetes_1_34(version, fragment):
    cfg = stack_config(STACK)
    cluster = cfg["gpu-platform:cluster"]
    cluster.pop("kubernetesVersion")
    if version:
        cluster["kubernetesVersion"] = version
    ((path, message),) = _problems(cfg)
    assert path == "gpu-platform:cluster.kubernetesVersion" and fragment in message


def test_device_plugin_stacks_need_no_version():
    cfg = stack_config("local")
    assert "kubernetesVersion" not in cfg["gpu-platform:cluster"]
    load_spec(cfg)


def test_time_slicing_and_mps_are_device_plugin_settings():
    cfg = stack_config(STACK)
    cfg["gpu-platform:nodePools"][0]["sharing"] = {"strategy": "time-slicing", "replicas": 4}
    ((path, message),) = _problems(cfg)
    assert path == "gpu-platform:nodePools[0].sharing.strategy"
    assert "k8s-device-plugin" in message and "TimeSlicingSettings" in message


def test_unsupported_combinations_on_a_cloud_dra_stack_each_name_their_key():
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:gpuOperator"] = {**cfg.get("gpu-platform:gpuOperator", {}), "allocation": "dra"}
    cfg["gpu-platform:cluster"] = {**cfg.get("gpu-platform:cluster", {}), "kubernetesVersion": "1.35"}
    paths = {p for p, _ in _problems(cfg)}
    pools = cfg["gpu-platform:nodePools"]
    for i, pool in enumerate(pools):
        if pool.get("provisioner") == "karpenter":
            assert f"gpu-platform:nodePools[{i}].provisioner" in paths
        if (pool.get("sharing") or {}).get("strategy") == "mig":
            assert f"gpu-platform:nodePools[{i}].sharing.strategy" in paths  # mig-parted is not in the DRA stack
        if pool.get("os") == "bottlerocket":
            assert f"gpu-platform:nodePools[{i}].os" in paths
    assert "gpu-platform:addons.volcano" in paths
    assert "gpu-platform:addons.clusterAutoscaler" in paths


def test_gke_installed_drivers_are_refused_on_dra():
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:gpuOperator"] = {"allocation": "dra"}
    cfg["gpu-platform:cluster"] = {**cfg.get("gpu-platform:cluster", {}), "kubernetesVersion": "1.34"}
    cfg["gpu-platform:addons"] = {**cfg.get("gpu-platform:addons", {}), "volcano": False}
    for pool in cfg["gpu-platform:nodePools"]:
        pool.pop("sharing", None)
    assert ("gpu-platform:gpuOperator.driver") in {p for p, _ in _problems(cfg)}


# ------------------------------------------------------------------------------------ operator / GPUCluster


def test_operator_values_switch_to_the_gpucluster_and_exist_upstream():
    ours = _values()
    upstream = yaml.safe_load((UPSTREAM / "gpu-operator" / "values.yaml").read_text())
    nfd = deep_merge(
        yaml.safe_load((UPSTREAM / "gpu-operator" / "node-feature-discovery" / "values.yaml").read_text()),
        upstream["node-feature-discovery"],
    )
    assert unknown_paths({k: v for k, v in ours.items() if k != "node-feature-discovery"}, upstream) == []
    assert unknown_paths(ours["node-feature-discovery"], nfd) == []
    assert ours["clusterPolicy"] == {"deployCR": False} and ours["gpuCluster"] == {"deployCR": True}
    assert ours["devicePlugin"]["enabled"] is False and ours["migManager"]["enabled"] is False
    # no ConfigMaps for a device plugin or mig-parted that do not run
    names = {m["metadata"]["name"] for m in manifests(rendered(STACK), "ConfigMap")}
    assert not names & {"device-plugin-config", "mig-parted-config"}


def test_the_gpucluster_the_chart_renders_validates_strictly():
    upstream = yaml.safe_load((UPSTREAM / "gpu-operator" / "values.yaml").read_text())
    schema = json.loads((UPSTREAM / "gpu-operator" / "gpucluster.nvidia.com.v1alpha1.strict.json").read_text())
    merged = deep_merge(copy.deepcopy(upstream), _values())
    cr = dra.gpu_cluster_from_values(merged)
    assert [e.message for e in Draft7Validator(schema).iter_errors(cr)] == []
    assert cr["spec"]["draDriver"]["computeDomains"] == {"enabled": False}
    # the chart's default DRA driver (GPU Operator 26.7.0 docs: full GPU and existing MIG allocation GA)
    assert cr["spec"]["draDriver"]["version"] == "v0.5.0"
    # the operands tolerate the GPU taint, as in the ClusterPolicy stack
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in cr["spec"]["daemonsets"][
        "tolerations"
    ]
    # the renderer follows templates/gpucluster.yaml: upstream's own sample (the same keys) validates too
    sample = yaml.safe_load((UPSTREAM / "gpu-operator" / "examples" / "gpucluster.config-samples.yaml").read_text())
    assert set(cr["spec"]) == set(sample["spec"])


# ------------------------------------------------------------------------------ Kubernetes 1.34 / 1.37


def _resource_v1_docs() -> list[dict[str, Any]]:
    docs = [m for m in rendered(STACK).manifests if m["apiVersion"] == dra.RESOURCE_API]
    for path in DRA_EXAMPLES:
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


@pytest.mark.parametrize("version", ["1.34.0", "1.37.0"])
def test_every_resource_v1_object_and_dra_example_validates(version):
    docs = _resource_v1_docs()
    kinds = {d["kind"] for d in docs}
    assert {"ResourceClaimTemplate", "Job", "Deployment", "Pod"} <= kinds
    for doc in docs:
        kubernetes_validate.validate(doc, version, strict=True)


def test_resource_v1_does_not_exist_before_1_34():
    tpl = next(d for d in _resource_v1_docs() if d["kind"] == "ResourceClaimTemplate")
    with pytest.raises(kubernetes_validate.SchemaNotFoundError):
        kubernetes_validate.validate(tpl, "1.33.0", strict=True)


# ---------------------------------------------------------------------------- quota, Kueue, claim templates

# Worked out by hand from stacks/Pulumi.dra-existing.yaml: h100 = 2 nodes x 8 GPUs (16 devices of gpu.nvidia.com),
# a100-mig = 1 node x 8 A100 x 2 MIG 3g.40gb (16 devices of mig.nvidia.com); every tenant is in cohort "shared",
# so its quota is the borrowing ceiling: the whole pool where it has a quota entry, 0 elsewhere.
NOMINAL = {
    "research": {"h100": {"gpu.nvidia.com/devices": 10}, "a100-mig": {"mig.nvidia.com/devices": 8}},
    "serving": {"h100": {"gpu.nvidia.com/devices": 4}, "a100-mig": {"mig.nvidia.com/devices": 8}},
    "notebooks": {"h100": {"gpu.nvidia.com/devices": 2}},
}
# The most Kueue admits for each tenant in cohort shared (kueue v0.19.2 resource_node.go potentialAvailable: what a
# queue keeps back from the cohort plus everything the cohort's queues lend there). h100: research 10 and serving 4
# lend all, notebooks (dev: never preempts, lendingLimit 0) keeps its 2 and lends none: cohort 14; research and
# serving 0 + 14, notebooks 2 + 14. a100-mig: research and serving 4 GPUs x 2 devices = 8 each, lent: cohort 16.
QUOTA_HARD = {
    "research": {"gpu.nvidia.com": 14, "mig.nvidia.com": 16},
    "serving": {"gpu.nvidia.com": 14, "mig.nvidia.com": 16},
    "notebooks": {"gpu.nvidia.com": 16, "mig.nvidia.com": 0},
}
TEMPLATES = {
    "research": {"gpu-h100", "mig-a100-80gb-3g-40gb"},
    "serving": {"gpu-h100", "mig-a100-80gb-3g-40gb"},
    "notebooks": {"gpu-h100"},
}


def _kueue_config() -> dict[str, Any]:
    return yaml.safe_load(release(rendered(STACK), "kueue")["values"]["managerConfig"]["controllerManagerConfigYaml"])


@pytest.mark.parametrize("tenant", sorted(NOMINAL))
def test_quota_kueue_and_claim_templates_agree(tenant):
    r = rendered(STACK)
    hard = manifest(r, "ResourceQuota", "gpu-quota", tenant)["spec"]["hard"]
    assert {k.removesuffix(QUOTA): int(v) for k, v in hard.items() if k.endswith(QUOTA)} == QUOTA_HARD[tenant]
    assert hard["requests.nvidia.com/gpu"] == "0"  # no extended-resource path around the claims
    # Kueue: the pool flavors' nominal quota, under the names deviceClassMappings gives the DeviceClasses
    mappings = {m["name"]: m["deviceClassNames"] for m in _kueue_config()["resources"]["deviceClassMappings"]}
    assert mappings == {"gpu.nvidia.com/devices": ["gpu.nvidia.com"], "mig.nvidia.com/devices": ["mig.nvidia.com"]}
    cq = manifest(r, "ClusterQueue", tenant)["spec"]
    nominal = {
        f["name"]: {x["name"]: int(x["nominalQuota"]) for x in f["resources"] if x["name"] in mappings}
        for rg in cq["resourceGroups"]
        for f in rg["flavors"]
        if f["name"] != "default-flavor"
    }
    assert nominal == NOMINAL[tenant]
    for flavor, res in nominal.items():
        for name, n in res.items():
            (cls,) = mappings[name]
            assert n <= int(hard[cls + QUOTA]), (flavor, name)  # Kueue never admits what the quota refuses
    # claim templates: each asks for a class the quota caps and Kueue maps, of a pool the tenant reaches
    templates = {
        m["metadata"]["name"]: m for m in manifests(r, "ResourceClaimTemplate") if m["metadata"]["namespace"] == tenant
    }
    assert set(templates) == TEMPLATES[tenant]
    mapped = {c for classes in mappings.values() for c in classes}
    for name, tpl in templates.items():
        (req,) = tpl["spec"]["spec"]["devices"]["requests"]
        cls = req["exactly"]["deviceClassName"]
        assert cls in mapped and cls + QUOTA in hard
        cel = req["exactly"]["selectors"][0]["cel"]["expression"]
        if name.startswith("mig-"):
            assert cls == "mig.nvidia.com" and "profile == '3g.40gb'" in cel and "'a100'" in cel
        else:
            assert cls == "gpu.nvidia.com" and "'h100'" in cel and "memory" in cel


def test_kueue_gets_no_device_class_mappings_on_device_plugin_stacks():
    cfg = yaml.safe_load(release(rendered("local"), "kueue")["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert "deviceClassMappings" not in cfg["resources"]


def test_a_mig_profile_the_layout_adds_gets_its_template_and_more_devices():
    cfg = stack_config(STACK)
    cfg["gpu-platform:nodePools"][1]["sharing"]["layout"] = {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 1}
    spec = load_spec(cfg)
    research = next(t for t in spec.tenants if t.name == "research")
    assert set(dra.claim_templates(spec, research)) == {
        "gpu-h100",
        "mig-a100-80gb-3g-40gb",
        "mig-a100-80gb-2g-20gb",
        "mig-a100-80gb-1g-10gb",
    }
    # research and serving 4 GPUs x 3 MIG devices each, both lent to cohort shared: 0 + 12 + 12 (the 1 node x 8 GPUs)
    assert plan.build(spec, STACK).tenants[research.name].quota_hard["mig.nvidia.com" + QUOTA] == "24"


# NVML framebuffer sizes (MiB) of real cards: each whole-GPU selector must take its own model and refuse the
# model whose product name shares its token (A100 40 GB vs 80 GB; "L4" is in "L40S").
NVML_MIB = {
    "T4": 15360,
    "A10G": 23028,
    "L4": 23034,
    "L40S": 46068,
    "A100-40GB": 40960,
    "A100-80GB": 81920,
    "H100": 81559,
    "H200": 143771,
    "B200": 183359,
}
PRODUCT = {
    "T4": "Tesla T4",
    "A10G": "NVIDIA A10G",
    "L4": "NVIDIA L4",
    "L40S": "NVIDIA L40S",
    "A100-40GB": "NVIDIA A100-SXM4-40GB",
    "A100-80GB": "NVIDIA A100-SXM4-80GB",
    "H100": "NVIDIA H100 80GB HBM3",
    "H200": "NVIDIA H200",
    "B200": "NVIDIA B200",
}


def _matches(cel: str, product: str, mib: int) -> bool:
    """Evaluate the whole-GPU selector's three terms for one device (the expressions are fixed in shape)."""
    token = re.search(r"contains\('([^']+)'\)", cel).group(1)
    low, high = (int(x) for x in re.findall(r"quantity\('(\d+)Gi'\)", cel))
    return token in product.lower() and low * 1024 <= mib <= high * 1024


@pytest.mark.parametrize("model", sorted(NVML_MIB))
def test_whole_gpu_selectors_pick_their_model_only(model):
    cel = dra.whole_gpu_selector(model)
    for other, mib in NVML_MIB.items():
        assert _matches(cel, PRODUCT[other], mib) == (other == model), (model, other)


# ----------------------------------------------------------------------------------------- policies


def test_the_stack_passes_every_policy():
    report = offline.evaluate(rendered(STACK))
    assert [v.line() for v in report.violations] == []


def _stack_with(*docs: dict[str, Any]):
    from policies.offline import run, subjects_from_manifests, subjects_from_rendering

    return run(
        [*subjects_from_rendering(rendered(STACK)), *subjects_from_manifests(docs)],
        dra_policies.POLICIES,
    ).violations


def _example(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((ROOT / "examples" / name).read_text()) if d]


def test_dra_examples_pass_on_their_stack():
    docs = [d for p in DRA_EXAMPLES for d in yaml.safe_load_all(p.read_text()) if d]
    assert _stack_with(*docs) == []


def test_a_workload_asking_for_nvidia_com_gpu_on_a_dra_stack_is_refused():
    (pod,) = _example("dra-notebook-shared-claim.yaml")
    pod = copy.deepcopy(pod)
    pod["spec"].pop("resourceClaims")
    for c in pod["spec"]["containers"]:
        c["resources"].pop("claims")
        c["resources"]["limits"]["nvidia.com/gpu"] = 1
    found = _stack_with(pod)
    assert [v.policy for v in found] == ["dra-gpu-claims", "dra-gpu-claims"]
    assert "nvidia.com/gpu" in found[0].message


def test_a_claim_template_the_namespace_lacks_is_refused():
    dep = copy.deepcopy(_example("dra-mig-inference-deployment.yaml")[0])
    dep["spec"]["template"]["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] = "mig-h100-1g-10gb"
    (v,) = _stack_with(dep)
    assert v.policy == "dra-gpu-claims" and "mig-h100-1g-10gb" in v.message


def test_an_uncapped_device_class_is_refused():
    cfg = stack_config(STACK)
    r = render_config(cfg, STACK)
    from policies.offline import run, subjects_from_rendering

    subjects = subjects_from_rendering(r)
    for s in subjects:
        if s.type == "kubernetes:core/v1:ResourceQuota" and s.props["metadata"]["namespace"] == "serving":
            del s.props["spec"]["hard"]["mig.nvidia.com" + QUOTA]
    (v,) = run(subjects, dra_policies.POLICIES).violations
    assert v.policy == "dra-tenant-device-quota" and "'serving'" in v.message and "mig.nvidia.com" in v.message


def test_device_plugin_stacks_are_not_judged_by_the_dra_policies():
    from policies.offline import subjects_from_manifests

    (pod,) = _example("timesliced-notebook-pod.yaml")
    from policies.offline import run, subjects_from_rendering

    assert (
        run(
            [*subjects_from_rendering(rendered("local")), *subjects_from_manifests([pod])], dra_policies.POLICIES
        ).violations
        == []
    )


# -------------------------------------------------------------------------------------------- summary


def test_summary_lists_claim_templates_and_device_quotas():
    text = summary.summary(rendered(STACK), {})
    section = text[text.index("## GPUs through DRA") :]
    assert "| notebooks | `gpu.nvidia.com.deviceclass.resource.k8s.io/devices` 16, `mig.nvidia.com" in section
    assert "`gpu-h100`, `mig-a100-80gb-3g-40gb`" in section
    assert "no device plugin" in section


def test_dra_examples_have_a_target_stack_line():
    assert len(DRA_EXAMPLES) == 3
    for p in DRA_EXAMPLES:
        assert Path(p).read_text().startswith(f"# Target stack: {STACK} -- tenant ")


def test_admin_access_is_for_the_operator_namespace_only():
    r = rendered(STACK)
    labels = {m["metadata"]["name"]: m["metadata"].get("labels", {}) for m in manifests(r, "Namespace")}
    assert labels["gpu-operator"]["resource.kubernetes.io/admin-access"] == "true"
    for tenant in NOMINAL:
        assert "resource.kubernetes.io/admin-access" not in labels[tenant]
    assert "resource.kubernetes.io/admin-access" not in labels_of(rendered("local"), "gpu-operator")


def labels_of(r, name):
    return manifest(r, "Namespace", name)["metadata"].get("labels", {})


def test_the_service_monitor_selects_the_gpucluster_exporter():
    sm = next(m for m in rendered(STACK).manifests if m["kind"] == "ServiceMonitor")
    assert sm["spec"]["selector"]["matchLabels"] == {"app": "nvidia-dcgm-exporter-dra"}


def test_a_tenant_namespace_with_admin_access_is_refused():
    from policies.offline import run, subjects_from_rendering

    subjects = subjects_from_rendering(render_config(stack_config(STACK), STACK))
    for s in subjects:
        if s.type == "kubernetes:core/v1:Namespace" and s.props["metadata"]["name"] == "notebooks":
            s.props["metadata"]["labels"]["resource.kubernetes.io/admin-access"] = "true"
    (v,) = run(subjects, dra_policies.POLICIES).violations
    assert v.policy == "dra-tenant-device-quota" and "'notebooks'" in v.message and "adminAccess" in v.message


def test_the_training_example_selects_what_the_stack_template_selects():
    """The 8-GPU template differs from the stack's gpu-h100 only in its count: same class, same CEL."""
    (tpl, job) = _example("dra-training-job.yaml")
    stack_tpl = manifest(rendered(STACK), "ResourceClaimTemplate", "gpu-h100", "research")
    (ours,) = tpl["spec"]["spec"]["devices"]["requests"]
    (theirs,) = stack_tpl["spec"]["spec"]["devices"]["requests"]
    assert ours["exactly"]["count"] == 8 == rendered(STACK).spec.pool("h100").gpu.per_node
    assert {k: v for k, v in ours["exactly"].items() if k != "count"} == {
        k: v for k, v in theirs["exactly"].items() if k != "count"
    }
    assert job["spec"]["template"]["spec"]["resourceClaims"] == [
        {"name": "gpus", "resourceClaimTemplateName": tpl["metadata"]["name"]}
    ]


# ------------------------------------------------------------------ GPUCluster renderer, key by key

# Values with every key templates/gpucluster.yaml copies set to a distinct, truthy value; the CRD schema
# (upstream/gpu-operator/gpucluster.nvidia.com.v1alpha1.strict.json) names each of these keys under the same
# spec section, so the renderer must carry each one across unchanged.
_DRA_KEYS = ("repository", "image", "version", "imagePullPolicy", "imagePullSecrets", "featureGates")
_DCGM_KEYS = ("repository", "image", "version", "imagePullPolicy", "imagePullSecrets", "args", "env", "resources")
_EXPORTER_KEYS = (
    "repository",
    "image",
    "version",
    "imagePullPolicy",
    "imagePullSecrets",
    "annotations",
    "args",
    "env",
    "resources",
    "hostPID",
    "hostNetwork",
    "hpcJobMapping",
    "enablePodLabels",
    "enablePodUID",
    "podLabelAllowlistRegex",
    "service",
    "serviceMonitor",
)


def _full_values() -> dict[str, Any]:
    return {
        "draDriver": {
            **{k: f"dra-{k}" for k in _DRA_KEYS},
            "gpus": {"kubeletPlugin": {"env": [{"name": "A", "value": "1"}]}, "other": "dropped"},
            "computeDomains": {
                "enabled": True,
                "controller": {"resources": {"limits": {"cpu": "1"}}},
                "kubeletPlugin": {"env": [{"name": "B", "value": "2"}]},
                "notInTemplate": "dropped",
            },
            "notInTemplate": "dropped",
        },
        "dcgm": {"enabled": True, **{k: f"dcgm-{k}" for k in _DCGM_KEYS}, "hostNetwork": "yes", "hostPort": 5555},
        "dcgmExporter": {
            "enabled": True,
            **{k: f"exp-{k}" for k in _EXPORTER_KEYS},
            "config": {"name": "my-metrics", "data": "dropped"},
            "notInTemplate": "dropped",
        },
        "hostPaths": {"driverInstallDir": "/run/nvidia/driver", "kubeletRootDir": "/var/lib/k0s/kubelet", "x": 1},
        "daemonsets": {"priorityClassName": "system-node-critical"},
        "driver": {"enabled": True},  # not a GPUCluster key
    }


def test_gpucluster_carries_every_key_the_template_reads():
    """Each key templates/gpucluster.yaml copies into the CR (all set here) arrives under the same name with
    the same value, and keys the template does not read stay out: a dropped or misspelt key would silently
    lose the user's image, plugin overrides or exporter ConfigMap, and an extra one fails the strict CRD."""
    cr = dra.gpu_cluster_from_values(_full_values())
    assert cr["apiVersion"] == "nvidia.com/v1alpha1" and cr["kind"] == "GPUCluster"
    assert cr["metadata"] == {"name": "gpu-cluster"}
    spec = cr["spec"]
    assert set(spec) == {"draDriver", "dcgm", "dcgmExporter", "hostPaths", "daemonsets"}
    assert spec["draDriver"] == {
        **{k: f"dra-{k}" for k in _DRA_KEYS},
        "gpus": {"kubeletPlugin": {"env": [{"name": "A", "value": "1"}]}},
        "computeDomains": {
            "enabled": True,
            "controller": {"resources": {"limits": {"cpu": "1"}}},
            "kubeletPlugin": {"env": [{"name": "B", "value": "2"}]},
        },
    }
    # dcgm.hostNetwork is rendered as the literal true (the template writes `hostNetwork: true`)
    assert spec["dcgm"] == {"enabled": True, **{k: f"dcgm-{k}" for k in _DCGM_KEYS}, "hostNetwork": True}
    assert spec["dcgmExporter"] == {
        "enabled": True,
        **{k: f"exp-{k}" for k in _EXPORTER_KEYS},
        "config": {"name": "my-metrics"},
    }
    assert spec["hostPaths"] == {"driverInstallDir": "/run/nvidia/driver", "kubeletRootDir": "/var/lib/k0s/kubelet"}
    assert spec["daemonsets"] == {"priorityClassName": "system-node-critical"}


def test_gpucluster_leaves_out_empty_optional_keys():
    """Optional keys that are empty or absent in values are left out of the CR (the template's `with`/`if`
    blocks), while `enabled` flags are always written, false included: an empty `gpus: {}`, `config: {}`
    or `kubeletRootDir: ""` must not reach the CR as an empty override."""
    values = {
        "draDriver": {
            **{k: "" for k in _DRA_KEYS},
            "gpus": {"kubeletPlugin": {}},
            "computeDomains": {"enabled": False, "controller": {}, "kubeletPlugin": None},
        },
        "dcgm": {"enabled": False, **{k: [] for k in _DCGM_KEYS}, "hostNetwork": False},
        "dcgmExporter": {"enabled": False, **{k: None for k in _EXPORTER_KEYS}, "config": {"name": ""}},
        "hostPaths": {"driverInstallDir": "/run/nvidia/driver", "kubeletRootDir": ""},
        "daemonsets": {},
    }
    spec = dra.gpu_cluster_from_values(values)["spec"]
    assert spec == {
        "draDriver": {"computeDomains": {"enabled": False}},
        "dcgm": {"enabled": False},
        "dcgmExporter": {"enabled": False},
        "hostPaths": {"driverInstallDir": "/run/nvidia/driver"},
        "daemonsets": {},
    }
    # absent sections behave as empty ones
    values["draDriver"].pop("gpus")
    values["dcgmExporter"]["config"] = None
    values["hostPaths"].pop("kubeletRootDir")
    assert dra.gpu_cluster_from_values(values)["spec"] == spec


def test_the_fully_set_gpucluster_fits_the_strict_crd():
    """The key names the renderer writes are the CRD's: with every optional key set (schema-valid values), the
    CR still validates against the strict schema, which rejects unknown fields."""
    schema = json.loads((UPSTREAM / "gpu-operator" / "gpucluster.nvidia.com.v1alpha1.strict.json").read_text())
    upstream = yaml.safe_load((UPSTREAM / "gpu-operator" / "values.yaml").read_text())
    values = copy.deepcopy(upstream)
    values["draDriver"]["gpus"]["kubeletPlugin"] = {"env": [{"name": "A", "value": "1"}]}
    values["draDriver"]["computeDomains"]["controller"] = {"env": [{"name": "B", "value": "2"}]}
    values["draDriver"]["computeDomains"]["kubeletPlugin"] = {"env": [{"name": "C", "value": "3"}]}
    values["draDriver"]["imagePullSecrets"] = ["pull"]
    values["draDriver"]["featureGates"] = {"MPSSupport": True}
    values["dcgm"]["hostNetwork"] = True
    values["dcgmExporter"]["config"] = {"name": "my-metrics"}
    values["hostPaths"]["kubeletRootDir"] = "/var/lib/k0s/kubelet"
    cr = dra.gpu_cluster_from_values(values)
    assert [e.message for e in Draft7Validator(schema).iter_errors(cr)] == []
    assert cr["spec"]["draDriver"]["gpus"] == {"kubeletPlugin": {"env": [{"name": "A", "value": "1"}]}}
    assert cr["spec"]["dcgmExporter"]["config"] == {"name": "my-metrics"}


# -------------------------------------------------------------------- classes, quota keys, templates (unit)


def test_device_classes_and_quota_keys():
    """The whole-GPU class always exists; the MIG class when a pool has a MIG layout. Quota keys: the
    per-DeviceClass device count for DRA resources, requests.<name> for extended resources."""
    spec = load_spec(stack_config(STACK))
    assert dra.device_classes(spec) == ["gpu.nvidia.com", "mig.nvidia.com"]
    cfg = stack_config(STACK)
    cfg["gpu-platform:nodePools"] = cfg["gpu-platform:nodePools"][:1]
    for t in cfg["gpu-platform:tenants"]:
        t["gpuQuota"] = {"h100": t["gpuQuota"]["h100"]}
    assert dra.device_classes(load_spec(cfg)) == ["gpu.nvidia.com"]
    # a stack of MIG pools only still gets the whole-GPU class (the driver creates it either way)
    cfg = stack_config(STACK)
    cfg["gpu-platform:nodePools"] = cfg["gpu-platform:nodePools"][1:]
    cfg["gpu-platform:tenants"] = [{**cfg["gpu-platform:tenants"][0], "gpuQuota": {"a100-mig": 4}}]
    assert dra.device_classes(load_spec(cfg)) == ["gpu.nvidia.com", "mig.nvidia.com"]
    assert dra.quota_key("gpu.nvidia.com/devices") == "gpu.nvidia.com.deviceclass.resource.k8s.io/devices"
    assert dra.quota_key("mig.nvidia.com/devices") == "mig.nvidia.com.deviceclass.resource.k8s.io/devices"
    assert dra.quota_key("nvidia.com/gpu") == "requests.nvidia.com/gpu"
    assert dra.quota_resources(spec) == ["gpu.nvidia.com/devices", "mig.nvidia.com/devices"]


def test_kueue_mappings_only_on_dra_stacks():
    """deviceClassMappings: none without DRA; on DRA each class under its quota resource name."""
    assert dra.kueue_device_class_mappings(load_spec(stack_config("local"))) == []
    assert dra.kueue_device_class_mappings(load_spec(stack_config(STACK))) == [
        {"name": "gpu.nvidia.com/devices", "deviceClassNames": ["gpu.nvidia.com"]},
        {"name": "mig.nvidia.com/devices", "deviceClassNames": ["mig.nvidia.com"]},
    ]


@pytest.mark.parametrize(
    ("model", "token"),
    [("A100-80GB", "a100"), ("H100", "h100"), ("T4", "t4"), ("L40S", "l40s"), ("A100-40GB", "a100")],
)
def test_product_token_is_the_lower_case_model_family(model, token):
    """The token every NVML product name of the model contains: the lower-case part before the first '-'."""
    assert dra.product_token(model) == token


def test_mig_selector_and_template_names():
    """A MIG template selects the driver's profile attribute and the product; names are DNS-safe slugs of the
    model and profile."""
    assert dra.mig_selector("A100-80GB", "3g.40gb") == (
        "device.attributes['gpu.nvidia.com'].profile == '3g.40gb' && "
        "device.attributes['gpu.nvidia.com'].productName.lowerAscii().contains('a100')"
    )
    spec = load_spec(stack_config(STACK))
    assert dra.template_name(spec.pool("a100-mig")) == "gpu-a100-80gb"
    assert dra.template_name(spec.pool("a100-mig"), "3g.40gb") == "mig-a100-80gb-3g-40gb"
    assert dra.template_name(spec.pool("h100")) == "gpu-h100"


def test_whole_gpu_selector_bounds_memory_by_ten_percent():
    """H100 80 GiB: devices from int(80 x 0.9) = 72 Gi to int(80 x 1.1) + 1 = 89 Gi."""
    assert dra.whole_gpu_selector("H100") == (
        "device.attributes['gpu.nvidia.com'].productName.lowerAscii().contains('h100') && "
        "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('72Gi')) >= 0 && "
        "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('89Gi')) <= 0"
    )


def test_claim_templates_per_tenant_as_manifests():
    """notebooks reaches h100 only: one whole-GPU template; each template asks for exactly one device of its
    class; manifests carry the tenant's namespace. No templates without DRA."""
    spec = load_spec(stack_config(STACK))
    notebooks = next(t for t in spec.tenants if t.name == "notebooks")
    ((name, body),) = dra.claim_templates(spec, notebooks).items()
    assert name == "gpu-h100"
    assert body == {
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "exactly": {
                            "deviceClassName": "gpu.nvidia.com",
                            "allocationMode": "ExactCount",
                            "count": 1,
                            "selectors": [{"cel": {"expression": dra.whole_gpu_selector("H100")}}],
                        },
                    }
                ]
            }
        }
    }
    docs = dra.claim_template_manifests(spec)
    assert [(d["metadata"]["namespace"], d["metadata"]["name"]) for d in docs] == [
        ("research", "gpu-h100"),
        ("research", "mig-a100-80gb-3g-40gb"),
        ("serving", "gpu-h100"),
        ("serving", "mig-a100-80gb-3g-40gb"),
        ("notebooks", "gpu-h100"),
    ]
    assert {(d["apiVersion"], d["kind"]) for d in docs} == {("resource.k8s.io/v1", "ResourceClaimTemplate")}
    mig = docs[1]["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert mig["deviceClassName"] == "mig.nvidia.com"
    local = load_spec(stack_config("local"))
    assert dra.claim_templates(local, local.tenants[0]) == {} and dra.claim_template_manifests(local) == []


def test_dra_needs_the_operator_and_kueue_not_volcano():
    """Each refusal at its own key, with the way out: the GPUCluster comes with the operator; Volcano derives no
    capacity for ResourceClaims."""
    cfg = stack_config(STACK)
    cfg["gpu-platform:addons"] = {**cfg["gpu-platform:addons"], "gpuOperator": False, "dcgm": False}
    assert _problems(cfg) == [
        (
            "gpu-platform:gpuOperator.allocation",
            "dra installs the NVIDIA DRA driver through the GPU Operator's GPUCluster: turn addons.gpuOperator on",
        )
    ]
    cfg = stack_config(STACK)
    cfg["gpu-platform:addons"] = {**cfg["gpu-platform:addons"], "volcano": True}
    assert _problems(cfg) == [
        (
            "gpu-platform:addons.volcano",
            "Volcano queues cap extended resources per name; this platform derives no Volcano capacity for DRA "
            "devices (ResourceClaims), so a Volcano queue would not bound GPUs: use Kueue on a DRA stack",
        )
    ]


def test_topology_aware_pools_are_not_offered_on_dra():
    """topologyAware on a DRA pool is refused at its key."""
    cfg = stack_config(STACK)
    cfg["gpu-platform:nodePools"][0]["topologyAware"] = True
    cfg["gpu-platform:scheduling"] = {"topologyLevels": ["kubernetes.io/hostname"]}
    assert (
        "gpu-platform:nodePools[0].topologyAware",
        "topology-aware scheduling is derived for nvidia.com/gpu pools only; not offered on a DRA stack yet",
    ) in _problems(cfg)


@pytest.mark.parametrize(
    ("stack", "version", "minor"), [(STACK, "1.34", 34), ("local", "1.29", 29), ("local", None, None)]
)
def test_kubernetes_minor_reads_the_second_component(stack, version, minor):
    """'1.34' is minor 34 (not 1, not 134); no version given: unknown (the program cannot look it up offline)."""
    cfg = stack_config(stack)
    cfg["gpu-platform:cluster"].pop("kubernetesVersion", None)
    if version is not None:
        cfg["gpu-platform:cluster"]["kubernetesVersion"] = version
    assert dra.kubernetes_minor(load_spec(cfg)) == minor


def test_operator_values_switch_every_classic_operand_off():
    """The GPUCluster replaces the ClusterPolicy: device plugin, MIG manager and GFD off, ComputeDomains off (no
    NVLink domain declared); an operator-managed driver goes through the NVIDIADriver CRD with its default CR;
    a preinstalled driver stays as the ClusterPolicy values had it."""
    v = dra.operator_values(load_spec(stack_config(STACK)), {"driver": {"enabled": True}, "toolkit": {"x": 1}})
    assert v == {
        "driver": {"enabled": True, "nvidiaDriverCRD": {"enabled": True, "deployDefaultCR": True}},
        "toolkit": {"x": 1},
        "clusterPolicy": {"deployCR": False},
        "gpuCluster": {"deployCR": True},
        "devicePlugin": {"enabled": False},
        "migManager": {"enabled": False},
        "gfd": {"enabled": False},
        "draDriver": {"computeDomains": {"enabled": False}},
    }
    cfg = stack_config(STACK)
    cfg["gpu-platform:gpuOperator"] = {**cfg["gpu-platform:gpuOperator"], "driver": "preinstalled"}
    v = dra.operator_values(load_spec(cfg), {"driver": {"enabled": False}})
    assert v["driver"] == {"enabled": False}


def test_rendered_claim_templates_are_labelled_per_tenant_and_wait_for_their_namespace():
    """Each template lives in its tenant's namespace, labelled managed-by and with the tenant (the policies and
    the summary find them by it), registered under the resource.k8s.io/v1 type."""
    r = rendered(STACK)
    rec = r.find("kubernetes:resource.k8s.io/v1:ResourceClaimTemplate", "serving-mig-a100-80gb-3g-40gb")
    assert rec.inputs["metadata"] == {
        "name": "mig-a100-80gb-3g-40gb",
        "namespace": "serving",
        "labels": {"app.kubernetes.io/managed-by": "gpu-platform", "gpu-platform/tenant": "serving"},
    }
    assert (
        rec.inputs["spec"]
        == dra.claim_templates(r.spec, next(t for t in r.spec.tenants if t.name == "serving"))["mig-a100-80gb-3g-40gb"]
    )
    assert rec.depends_on == ["serving-namespace"]  # through the namespace's name output
    assert (rec.parent, rec.provider) == ("dra-claim-templates", "kubernetes")


def test_each_cloud_combination_dra_refuses_says_why_and_what_to_use():
    """prod-aws switched to DRA: Karpenter pools, MIG layouts off existing clusters, Bottlerocket pools, time-
    slicing and the Cluster Autoscaler are each refused at their key with the supported alternative."""
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:gpuOperator"] = {"allocation": "dra"}
    cfg["gpu-platform:cluster"] = {**cfg["gpu-platform:cluster"], "kubernetesVersion": "1.35"}
    found = _problems(cfg)
    pools = {p["name"]: i for i, p in enumerate(cfg["gpu-platform:nodePools"])}
    at = "gpu-platform:nodePools[{}].{}".format
    expected = [
        (
            at(pools["h100-spot"], "provisioner"),
            "Karpenter 1.14 cannot tell which instance types publish which DRA devices, so it cannot provision "
            "for ResourceClaims (kubernetes-sigs/karpenter#3228, open): use provisioner managed",
        ),
        (
            at(pools["h100-inference"], "sharing.strategy"),
            "MIG layouts are applied by the MIG manager (mig-parted), an operand of the ClusterPolicy stack that "
            "cannot coexist with the GPUCluster; the DRA driver allocates existing MIG devices (DynamicMIG is "
            "alpha). MIG pools on a DRA stack need nodes partitioned beforehand: cloud existing only",
        ),
        (
            at(pools["a100-train"], "os"),
            "Bottlerocket NVIDIA AMIs run their own device plugin on the host, which cannot share a node with "
            "the DRA driver's GPU plugin (dra-driver-nvidia-gpu templates/validation.yaml): use al2023",
        ),
        (
            at(pools["l4-notebooks"], "sharing.strategy"),
            "time-slicing replicas configure k8s-device-plugin, which a DRA stack does not run (a GPUCluster "
            "replaces the ClusterPolicy); the DRA driver's own sharing (feature gates TimeSlicingSettings, "
            "MPSSupport, set per claim) is alpha and off by default: drop sharing or use allocation device-plugin",
        ),
        (
            "gpu-platform:addons.clusterAutoscaler",
            "the Cluster Autoscaler simulates DRA claims only with its --enable-dynamic-resource-allocation flag, "
            "which this platform does not set yet: set addons.clusterAutoscaler false (node groups keep their size)",
        ),
    ]
    for problem in expected:
        assert problem in found, problem[0]


def test_gke_drivers_message_names_the_operator_alternative():
    """GKE-installed drivers on DRA: refused, naming driver operator on Ubuntu as the way out."""
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:gpuOperator"] = {"allocation": "dra"}
    cfg["gpu-platform:cluster"] = {**cfg.get("gpu-platform:cluster", {}), "kubernetesVersion": "1.34"}
    for pool in cfg["gpu-platform:nodePools"]:
        pool.pop("sharing", None)
    assert (
        "gpu-platform:gpuOperator.driver",
        "GKE-installed drivers (gke-default / gke-latest) come with GKE's device plugin, which cannot share a "
        "node with the DRA driver's GPU plugin (dra-driver-nvidia-gpu templates/validation.yaml); use driver: "
        "operator (Ubuntu nodes), whose pools carry gke-no-default-nvidia-gpu-device-plugin=true",
    ) in _problems(cfg)


def test_the_exporter_attributes_dra_gpus_through_resource_slices_not_quota_names():
    """dra-existing (an H100 pool and an A100 MIG pool, both through DRA): the exporter gets
    KUBERNETES_ENABLE_DRA (NVIDIA/dcgm-exporter pkg/cmd/app.go --kubernetes-enable-dra: DRA-allocated GPUs are
    found through ResourceSlices) and no NVIDIA_RESOURCE_NAMES: the Kueue quota names gpu.nvidia.com/devices and
    mig.nvidia.com/devices are no device-plugin resources, so listing them there did nothing."""
    from components.render import gpu_operator

    spec = load_spec(stack_config("dra-existing"))
    assert gpu_operator.exporter_env(spec) == [{"name": "KUBERNETES_ENABLE_DRA", "value": "true"}]
    local = load_spec(stack_config("local"))  # no DRA: no such variable
    assert all(e["name"] != "KUBERNETES_ENABLE_DRA" for e in gpu_operator.exporter_env(local))
