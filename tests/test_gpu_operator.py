"""The GPU Operator release and GPU sharing: values per cloud and node OS, value paths against the pinned
chart, the device-plugin and mig-parted ConfigMaps against the upstream formats, the label wiring between
pools and configs, the units quotas count, and the bad-input rules."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from conftest import (
    CONFIG_MAP,
    HELM_RELEASE,
    NAMESPACE,
    RESOURCE_QUOTA,
    UPSTREAM,
    manifest,
    release,
    rendered,
    stack_config,
    unmirrored,
)
from jsonschema import Draft202012Validator
from values_paths import deep_merge, unknown_paths

from components.cli.loader import SpecError, load_spec
from components.data import versions
from components.plan import derive, sharing
from components.render import gpu_operator

OPERATOR_STACKS = ["dev-aws", "prod-aws", "dev-gcp", "prod-gcp", "local"]
GPU_OPERATOR_DIR = UPSTREAM / "gpu-operator"
EXAMPLES = GPU_OPERATOR_DIR / "examples"


def values(stack: str) -> dict[str, Any]:
    """The release's values beside the images the stack's mirror moves (conftest.unmirrored)."""
    return unmirrored(release(rendered(stack), "gpu-operator")["values"], stack_config(stack))


def spec_of(stack: str, **changes: Any):
    cfg = stack_config(stack)
    for k, v in changes.items():
        cfg[f"gpu-platform:{k}"] = v
    return load_spec(cfg)


def problems(cfg: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as err:
        load_spec(cfg)
    return [(p.path, p.message) for p in err.value.problems]


# ---------------------------------------------------------------------------------------- release


@pytest.mark.parametrize("stack", OPERATOR_STACKS)
def test_release_is_the_pinned_official_chart_in_its_own_namespace(stack):
    r = rendered(stack)
    rel = release(r, "gpu-operator")
    assert rel["chart"] == "gpu-operator"
    assert rel["version"] == "v26.7.0" == versions.GPU_OPERATOR.version
    assert rel["repositoryOpts"] == {"repo": "https://helm.ngc.nvidia.com/nvidia"}
    assert rel["namespace"] == "gpu-operator"
    assert not rel.get("createNamespace")  # we create it, with Pod Security labels
    record = r.find(HELM_RELEASE, "gpu-operator")
    assert "namespace-gpu-operator" in record.depends_on
    assert record.provider == "kubernetes"


@pytest.mark.parametrize("stack", OPERATOR_STACKS)
def test_operator_namespace_is_privileged_and_tenants_are_not(stack):
    r = rendered(stack)
    labels = manifest(r, "Namespace", "gpu-operator")["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "privileged"
    assert labels["app.kubernetes.io/managed-by"] == "gpu-platform"
    for tenant in r.spec.tenants:
        tenant_labels = manifest(r, "Namespace", tenant.name)["metadata"]["labels"]
        assert tenant_labels["pod-security.kubernetes.io/enforce"] in ("baseline", "restricted")


def test_chart_version_override_is_honoured():
    spec = spec_of("dev-aws", charts={"gpuOperator": {"version": "v26.7.1"}})
    args = versions.release_args(versions.for_spec(versions.GPU_OPERATOR, spec))
    assert args["version"] == "v26.7.1"
    assert args["repository_opts"] == {"repo": "https://helm.ngc.nvidia.com/nvidia"}


# ------------------------------------------------------------------------------ values per cloud


@pytest.mark.parametrize("stack", ["dev-aws", "prod-aws"])
def test_eks_nvidia_amis_keep_their_driver_and_toolkit(stack):
    v = values(stack)
    # EKS user guide: AL2023 and Bottlerocket NVIDIA AMIs ship driver and container toolkit
    assert v["driver"] == {"enabled": False}
    assert v["toolkit"] == {"enabled": False}
    assert v["devicePlugin"]["enabled"] is True  # AL2023 has no device plugin
    assert "hostPaths" not in v


def test_mixed_eks_stack_keeps_operator_plugin_and_mig_manager_off_bottlerocket_nodes():
    spec = load_spec(stack_config("prod-aws"))
    br = spec.pool("a100-train")
    assert derive.node_os(spec, br) == "bottlerocket"
    labels = derive.pool_labels(spec, br)
    for operand in ("device-plugin", "mig-manager", "container-toolkit", "driver"):
        assert labels[f"nvidia.com/gpu.deploy.{operand}"] == "false"
    al2023 = derive.pool_labels(spec, spec.pool("h100-inference"))
    assert not any(k.startswith("nvidia.com/gpu.deploy.") for k in al2023)
    assert al2023[derive.MIG_CONFIG_LABEL] == "h100-inference"


def test_toolkit_override_on_eks_still_spares_bottlerocket_nodes():
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:gpuOperator"] = {"toolkit": True}
    spec = load_spec(cfg)
    assert gpu_operator.operator_values(spec)["toolkit"]["enabled"] is True
    labels = derive.pool_labels(spec, spec.pool("a100-train"))
    assert labels["nvidia.com/gpu.deploy.container-toolkit"] == "false"


@pytest.mark.parametrize("stack", ["dev-gcp", "prod-gcp"])
def test_gke_installed_drivers(stack):
    v = values(stack)
    assert v["driver"] == {"enabled": False}
    assert v["hostPaths"] == {"driverInstallDir": "/home/kubernetes/bin/nvidia"}
    assert v["toolkit"]["enabled"] is True
    assert v["toolkit"]["installDir"] == "/home/kubernetes/bin/nvidia"
    assert {"name": "RUNTIME_CONFIG_SOURCE", "value": "file"} in v["toolkit"]["env"]
    assert v["cdi"]["enabled"] is True
    # GKE's own device plugin serves the GPUs (sharing/MIG are node-pool settings): none of ours
    assert v["devicePlugin"] == {"enabled": False}
    assert v["migManager"]["enabled"] is False


def test_gke_with_operator_managed_drivers_on_ubuntu():
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:gpuOperator"] = {"driver": "operator"}
    for pool in cfg["gpu-platform:nodePools"]:
        pool["os"] = "ubuntu"
    spec = load_spec(cfg)
    assert derive.device_plugin_owner(spec) == "operator"
    v = gpu_operator.operator_values(spec)
    assert v["driver"] == {"enabled": True}
    assert v["devicePlugin"]["enabled"] is True
    assert v["devicePlugin"]["config"]["name"] == gpu_operator.DEVICE_PLUGIN_CONFIGMAP
    assert "hostPaths" not in v and "installDir" not in v["toolkit"]
    labels = derive.pool_labels(spec, spec.pool("l4-shared"))
    assert labels["gke-no-default-nvidia-gpu-device-plugin"] == "true"
    assert labels[derive.DEVICE_PLUGIN_CONFIG_LABEL] == "l4-shared"


@pytest.mark.parametrize("stack", ["dev-gcp", "prod-gcp"])
def test_gke_quota_admits_the_operators_critical_pods(stack):
    r = rendered(stack)
    quota = manifest(r, "ResourceQuota", "gpu-operator-quota", "gpu-operator")["spec"]
    assert quota["scopeSelector"]["matchExpressions"] == [
        {"scopeName": "PriorityClass", "operator": "In", "values": ["system-node-critical", "system-cluster-critical"]}
    ]
    gpu_nodes = sum(p.node_cap for p in r.spec.node_pools)
    assert int(quota["hard"]["pods"]) == 100 + 12 * gpu_nodes
    assert "critical-pods-gpu-operator" in r.find(HELM_RELEASE, "gpu-operator").depends_on


def test_no_critical_pods_quota_outside_gke():
    for stack in ("dev-aws", "prod-aws", "local"):
        in_operator_ns = [
            q
            for q in rendered(stack).of_type(RESOURCE_QUOTA)
            if q.inputs["metadata"].get("namespace") == "gpu-operator"
        ]
        assert in_operator_ns == []


def test_existing_cluster_driver_and_toolkit_are_configurable():
    v = values("local")  # driver: operator
    assert v["driver"] == {"enabled": True} and v["toolkit"]["enabled"] is True
    cfg = stack_config("local")
    cfg["gpu-platform:gpuOperator"] = {"driver": "preinstalled", "toolkit": False}
    v = gpu_operator.operator_values(load_spec(cfg))
    assert v["driver"] == {"enabled": False} and v["toolkit"] == {"enabled": False}


@pytest.mark.parametrize("stack", OPERATOR_STACKS)
def test_operands_tolerate_every_gpu_taint_and_controllers_stay_on_system_nodes(stack):
    v = values(stack)
    gpu = {"key": derive.GPU_TAINT.key, "operator": "Exists", "effect": derive.GPU_TAINT.effect}
    assert (
        v["daemonsets"]["tolerations"][0]
        == gpu
        == {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    )
    assert gpu in v["node-feature-discovery"]["worker"]["tolerations"]
    assert v["gfd"] == {"enabled": True}
    assert v["operator"]["nodeSelector"]["kubernetes.io/os"] == "linux"


def test_queued_provisioning_taint_is_tolerated_on_gke():
    tols = values("prod-gcp")["daemonsets"]["tolerations"]
    assert {"key": "cloud.google.com/gke-queued", "operator": "Equal", "value": "true", "effect": "NoSchedule"} in tols


def test_pool_taints_and_system_node_selector_reach_the_operator():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:nodePools"][0]["taints"] = [{"key": "team", "value": "ml", "effect": "NoExecute"}]
    cfg["gpu-platform:systemNodeSelector"] = {"node-role/system": "true"}
    v = gpu_operator.operator_values(load_spec(cfg))
    team = {"key": "team", "operator": "Equal", "value": "ml", "effect": "NoExecute"}
    assert team in v["daemonsets"]["tolerations"]
    assert team in v["node-feature-discovery"]["worker"]["tolerations"]
    for where in (v["operator"], v["node-feature-discovery"]["master"], v["node-feature-discovery"]["gc"]):
        assert where["nodeSelector"] == {"kubernetes.io/os": "linux", "node-role/system": "true"}


# Worked out from the stack files, not from derive: only prod-aws has a MIG pool the operator's MIG manager
# applies (h100-inference on AL2023, three profiles in one layout -> mixed); prod-gcp's MIG pool is GKE's
# (gpuPartitionSize), and the others have no MIG pool at all.
MIG_BY_STACK = {
    "dev-aws": ("single", False),
    "prod-aws": ("mixed", True),
    "dev-gcp": ("single", False),
    "prod-gcp": ("single", False),
    "local": ("single", False),
}


@pytest.mark.parametrize("stack", OPERATOR_STACKS)
def test_mig_strategy_and_manager_follow_the_derivations(stack):
    v = values(stack)
    spec = rendered(stack).spec
    strategy, manager = MIG_BY_STACK[stack]
    assert v["mig"] == {"strategy": strategy}
    assert v["migManager"]["enabled"] is manager
    assert v["dcgmExporter"]["enabled"] is spec.addons.dcgm
    assert v["dcgmExporter"]["serviceMonitor"] == {"enabled": False}  # ours has the pool label


def test_prod_aws_mig_manager_uses_our_configs_and_reboots():
    v = values("prod-aws")
    assert v["mig"] == {"strategy": "mixed"}  # h100-inference mixes three profiles
    assert v["migManager"]["config"] == {"create": False, "name": "mig-parted-config", "default": "all-disabled"}
    assert v["migManager"]["env"] == [{"name": "WITH_REBOOT", "value": "true"}]


# --------------------------------------------------------------------------- values vs upstream


@pytest.mark.parametrize("stack", OPERATOR_STACKS)
def test_every_value_path_exists_in_the_pinned_chart(stack):
    upstream = yaml.safe_load((GPU_OPERATOR_DIR / "values.yaml").read_text())
    nfd_chart = yaml.safe_load((GPU_OPERATOR_DIR / "node-feature-discovery" / "values.yaml").read_text())
    ours = values(stack)
    top = {k: v for k, v in ours.items() if k != "node-feature-discovery"}
    assert unknown_paths(top, upstream) == []
    # the bundled sub-chart's values: its defaults, as gpu-operator overrides them
    nfd_upstream = deep_merge(nfd_chart, upstream["node-feature-discovery"])
    assert unknown_paths(ours["node-feature-discovery"], nfd_upstream) == []


def test_value_walker_catches_a_misplaced_key():
    upstream = yaml.safe_load((GPU_OPERATOR_DIR / "values.yaml").read_text())
    assert unknown_paths({"cdi": {"default": True}}, upstream) == ["cdi.default: not in upstream values.yaml"]
    assert unknown_paths({"toolkit": {"env": {}}}, upstream) == ["toolkit.env: upstream is a list, we set dict"]
    assert unknown_paths({"devicePlugin": {"config": {"data": {"x": "y"}}}}, upstream) == []  # free-form map


@pytest.mark.parametrize("stack", ["prod-aws", "prod-gcp"])
def test_nfd_values_validate_against_the_subchart_schema(stack):
    nfd_dir = GPU_OPERATOR_DIR / "node-feature-discovery"
    schema = json.loads((nfd_dir / "values.schema.json").read_text())
    merged = deep_merge(
        deep_merge(
            yaml.safe_load((nfd_dir / "values.yaml").read_text()),
            yaml.safe_load((GPU_OPERATOR_DIR / "values.yaml").read_text())["node-feature-discovery"],
        ),
        values(stack)["node-feature-discovery"],
    )
    errors = sorted(Draft202012Validator(schema).iter_errors(merged), key=str)
    assert [e.message for e in errors] == []


# ------------------------------------------------------------------- device-plugin ConfigMap format


def _format_template(name: str) -> dict[str, Any]:
    """The k8s-device-plugin README format block, placeholders turned into their types."""
    text = "\n".join(
        line for line in (EXAMPLES / name).read_text().splitlines() if line.strip() != "..."
    )  # "..." marks "more entries"
    return yaml.safe_load(text)


_PLACEHOLDER_TYPES = {"<bool>": bool, "<resource-name>": str, "<num-replicas>": int}


def _check_against_template(doc: Any, template: Any, path: str = "") -> list[str]:
    if isinstance(template, str) and template in _PLACEHOLDER_TYPES:
        want = _PLACEHOLDER_TYPES[template]
        return [] if isinstance(doc, want) and not (want is int and isinstance(doc, bool)) else [f"{path}: {doc!r}"]
    if isinstance(template, dict):
        if not isinstance(doc, dict):
            return [f"{path}: not a map"]
        out = [f"{path}.{k}: not in the format" for k in doc if k not in template]
        for k, v in doc.items():
            if k in template:
                out += _check_against_template(v, template[k], f"{path}.{k}")
        return out
    if isinstance(template, list):
        if not isinstance(doc, list) or not doc:
            return [f"{path}: not a non-empty list"]
        return [e for i, item in enumerate(doc) for e in _check_against_template(item, template[0], f"{path}[{i}]")]
    return [] if doc == template else [f"{path}: {doc!r} != {template!r}"]


def device_plugin_data(stack: str) -> dict[str, str]:
    return manifest(rendered(stack), "ConfigMap", "device-plugin-config", "gpu-operator")["data"]


@pytest.mark.parametrize("stack", ["dev-aws", "prod-aws", "local"])
def test_device_plugin_configs_follow_the_upstream_format(stack):
    data = device_plugin_data(stack)
    templates = {
        "timeSlicing": _format_template("device-plugin.time-slicing.format.readme.txt"),
        "mps": _format_template("device-plugin.mps.format.readme.txt"),
    }
    assert data["default"] == "version: v1\n"  # no sharing for unlabelled nodes
    for name, text in data.items():
        doc = yaml.safe_load(text)
        assert doc["version"] == "v1"
        assert set(doc) <= {"version", "flags", "resources", "sharing", "imex"}  # config.go v1 keys
        if name == "default":
            continue
        (kind,) = doc["sharing"]  # time-slicing and MPS are exclusive
        assert _check_against_template(doc, templates[kind]) == []
        assert doc["sharing"][kind]["resources"][0]["replicas"] >= 2


def test_upstream_device_plugin_examples_pass_the_same_format_check():
    # the checker is not vacuous: NVIDIA's own samples pass it, a misspelt key does not
    template = _format_template("device-plugin.time-slicing.format.readme.txt")
    sample = yaml.safe_load((EXAMPLES / "device-plugin.time-slicing.plugin-config.yaml").read_text())
    assert _check_against_template(sample, template) == []
    sample["sharing"]["timeSlicing"]["renameByDefualt"] = True
    assert _check_against_template(sample, template) == [".sharing.timeSlicing.renameByDefualt: not in the format"]


def test_device_plugin_config_values_match_the_pools():
    dev = yaml.safe_load(device_plugin_data("dev-aws")["l4-shared"])
    assert dev["sharing"] == {
        "timeSlicing": {
            "renameByDefault": False,
            "failRequestsGreaterThanOne": True,
            "resources": [{"name": "nvidia.com/gpu", "replicas": 4}],
        }
    }
    local = yaml.safe_load(device_plugin_data("local")["workstation"])
    # MPS: failRequestsGreaterThanOne left to the plugin, which defaults it to true for MPS
    assert local["sharing"] == {
        "mps": {"renameByDefault": False, "resources": [{"name": "nvidia.com/gpu", "replicas": 2}]}
    }


@pytest.mark.parametrize("stack", ["dev-aws", "prod-aws", "local"])
def test_device_plugin_configmap_is_wired_through_values(stack):
    v = values(stack)["devicePlugin"]["config"]
    data = device_plugin_data(stack)
    assert v["name"] == "device-plugin-config" and v["create"] is False
    assert v["default"] in data  # config-manager fails when the default names no entry
    assert "device-plugin-config" in rendered(stack).find(HELM_RELEASE, "gpu-operator").depends_on


# ----------------------------------------------------------------------------- mig-parted format


def mig_doc(stack: str) -> dict[str, Any]:
    cm = manifest(rendered(stack), "ConfigMap", "mig-parted-config", "gpu-operator")
    assert set(cm["data"]) == {"config.yaml"}  # the key the MIG manager reads
    return yaml.safe_load(cm["data"]["config.yaml"])


def test_mig_parted_config_follows_the_upstream_format():
    doc = mig_doc("prod-aws")
    default = yaml.safe_load((EXAMPLES / "mig-parted.default-config.yaml").read_text())
    assert doc["version"] == default["version"] == "v1"
    assert set(doc) == set(default) == {"version", "mig-configs"}
    assert doc["mig-configs"]["all-disabled"] == default["mig-configs"]["all-disabled"]
    upstream_keys = {k for entries in default["mig-configs"].values() for e in entries for k in e}
    upstream_profiles = {
        p for entries in default["mig-configs"].values() for e in entries for p in e.get("mig-devices", {})
    }
    for entries in doc["mig-configs"].values():
        for entry in entries:
            assert set(entry) <= upstream_keys
            assert entry["devices"] == "all"
            assert isinstance(entry["mig-enabled"], bool)
            for profile, count in entry.get("mig-devices", {}).items():
                assert profile in upstream_profiles and isinstance(count, int) and count >= 1
    assert doc["mig-configs"]["h100-inference"] == [
        {"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}}
    ]


def test_no_sharing_configmaps_where_gke_or_nobody_needs_them():
    for stack in ("dev-gcp", "prod-gcp"):
        names = {cm.inputs["metadata"]["name"] for cm in rendered(stack).of_type(CONFIG_MAP)}
        assert not names & {"device-plugin-config", "mig-parted-config"}
    names = {cm.inputs["metadata"]["name"] for cm in rendered("dev-aws").of_type(CONFIG_MAP)}
    assert "mig-parted-config" not in names
    assert values("dev-aws")["migManager"] == {"enabled": False}  # no MIG pool: no MIG manager


# ------------------------------------------------------------------- label wiring pools <-> configs


def _labels_anywhere(node: Any) -> list[dict[str, str]]:
    """Every label map, in any rendered resource, that carries the pool label."""
    found = []
    if isinstance(node, dict):
        if isinstance(node.get(derive.POOL_LABEL), str):
            found.append(node)
        for v in node.values():
            found += _labels_anywhere(v)
    elif isinstance(node, list):
        for v in node:
            found += _labels_anywhere(v)
    return found


@pytest.mark.parametrize("stack", OPERATOR_STACKS)
def test_every_pool_label_names_an_existing_config(stack):
    r = rendered(stack)
    spec = r.spec
    dp = set(device_plugin_data(stack)) if sharing.device_plugin_configs(spec) else set()
    mig = set(mig_doc(stack)["mig-configs"]) if derive.uses_mig_manager(spec) else set()
    label_sets = [derive.pool_labels(spec, p) for p in spec.node_pools]
    label_sets += [labels for res in r.resources for labels in _labels_anywhere(res.inputs)]  # node pools as rendered
    for labels in label_sets:
        if derive.DEVICE_PLUGIN_CONFIG_LABEL in labels:
            assert labels[derive.DEVICE_PLUGIN_CONFIG_LABEL] in dp, labels
        if derive.MIG_CONFIG_LABEL in labels:
            assert labels[derive.MIG_CONFIG_LABEL] in mig, labels
    for pool in spec.node_pools:
        labels = derive.pool_labels(spec, pool)
        strategy = pool.sharing.strategy if pool.sharing else None
        served_by_operator = derive.pool_device_plugin(spec, pool) == "operator"
        assert (derive.DEVICE_PLUGIN_CONFIG_LABEL in labels) == (
            served_by_operator and strategy in ("time-slicing", "mps")
        )
        assert (derive.MIG_CONFIG_LABEL in labels) == (served_by_operator and strategy == "mig")


def test_gke_pools_carry_no_operator_config_labels():
    spec = load_spec(stack_config("prod-gcp"))
    for pool in spec.node_pools:
        labels = derive.pool_labels(spec, pool)
        assert derive.DEVICE_PLUGIN_CONFIG_LABEL not in labels and derive.MIG_CONFIG_LABEL not in labels
        assert "gke-no-default-nvidia-gpu-device-plugin" not in labels  # GKE's plugin must run


# ------------------------------------------------------------------------- units vs device plugin


def test_units_follow_what_each_device_plugin_advertises():
    cfg = stack_config("prod-aws")
    pools = cfg["gpu-platform:nodePools"]
    pools[3]["sharing"] = {"strategy": "time-slicing", "replicas": 8, "renameByDefault": True}  # l4-notebooks
    spec = load_spec(cfg)
    # renameByDefault: k8s-device-plugin advertises <resource>.shared
    assert derive.units_per_gpu(spec, spec.pool("l4-notebooks")) == {"nvidia.com/gpu.shared": 8}
    # mixed strategy (h100-inference mixes profiles): one resource per MIG profile
    assert derive.units_per_gpu(spec, spec.pool("h100-inference")) == {
        "nvidia.com/mig-1g.10gb": 2,
        "nvidia.com/mig-2g.20gb": 1,
        "nvidia.com/mig-3g.40gb": 1,
    }
    # Bottlerocket's host plugin renames the same way (its time-slicing.rename-by-default)
    pools[0]["sharing"] = {"strategy": "time-slicing", "replicas": 2, "renameByDefault": True}  # a100-train
    pools[0]["topologyAware"] = False  # Kueue's topology-aware scheduling wants whole nvidia.com/gpu
    spec = load_spec(cfg)
    assert derive.units_per_gpu(spec, spec.pool("a100-train")) == {"nvidia.com/gpu.shared": 2}
    assert sharing.bottlerocket_device_plugin_settings(spec, "a100-train") == {
        "device-id-strategy": "uuid",
        "device-sharing-strategy": "time-slicing",
        "time-slicing": {"replicas": 2, "rename-by-default": True, "fail-requests-greater-than-one": True},
    }
    assert "a100-train" not in sharing.device_plugin_configs(spec)  # the operator's plugin does not run there


def test_single_profile_mig_everywhere_means_single_strategy_and_plain_gpus():
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:nodePools"][1]["sharing"] = {"strategy": "mig", "layout": {"1g.10gb": 7}}
    spec = load_spec(cfg)
    assert derive.mig_strategy(spec) == "single"
    assert derive.units_per_gpu(spec, spec.pool("h100-inference")) == {"nvidia.com/gpu": 7}


def test_gke_renames_nothing_and_counts_partitions_as_gpus():
    spec = load_spec(stack_config("prod-gcp"))
    assert derive.units_per_gpu(spec, spec.pool("a100-inference")) == {"nvidia.com/gpu": 7}
    assert derive.units_per_gpu(spec, spec.pool("l4-serving")) == {"nvidia.com/gpu": 2}


def test_serving_quota_counts_mig_instances_per_profile():
    hard = manifest(rendered("prod-aws"), "ResourceQuota", "gpu-quota", "serving")["spec"]["hard"]
    # 16 H100s x (1x 3g.40gb + 1x 2g.20gb + 2x 1g.10gb)
    assert (hard["requests.nvidia.com/mig-3g.40gb"], hard["requests.nvidia.com/mig-1g.10gb"]) == ("16", "32")


# ------------------------------------------------------------------------------------ bad input


def _with_pool(stack: str, index: int, **changes: Any) -> dict[str, Any]:
    cfg = stack_config(stack)
    cfg["gpu-platform:nodePools"][index].update(changes)
    return cfg


def test_mig_on_a_gpu_without_mig():
    cfg = _with_pool("dev-aws", 1, sharing={"strategy": "mig", "layout": {"1g.5gb": 7}})  # A10G
    ((path, msg),) = problems(cfg)
    assert path == "gpu-platform:nodePools[1].sharing.strategy"
    assert msg.startswith("A10G has no MIG support (MIG-capable: A100-40GB, A100-80GB, B200, H100, H200")


def test_mig_layout_over_the_compute_slices():
    # compute 3x2 + 2x1 = 8 of 7; memory 3x2 + 2x1 = 8 of 8
    cfg = _with_pool("prod-aws", 1, sharing={"strategy": "mig", "layout": {"2g.20gb": 3, "1g.10gb": 2}})
    assert problems(cfg) == [
        (
            "gpu-platform:nodePools[1].sharing.layout",
            "H100: layout needs 8 compute slices; H100 has 7 (3 x 2g.20gb = 6, 2 x 1g.10gb = 2)",
        )
    ]


def test_mig_layout_over_the_memory_slices():
    # compute 3+1+1+1 = 6 of 7, memory 4+2+2+1 = 9 of 8
    cfg = _with_pool("prod-aws", 1, sharing={"strategy": "mig", "layout": {"3g.40gb": 1, "1g.20gb": 2, "1g.10gb": 1}})
    assert problems(cfg) == [
        (
            "gpu-platform:nodePools[1].sharing.layout",
            "H100: layout needs 9 memory slices; H100 has 8 (1 x 3g.40gb = 4, 2 x 1g.20gb = 4, 1 x 1g.10gb = 1)",
        )
    ]


def test_mig_profile_of_another_gpu():
    cfg = _with_pool("prod-aws", 1, sharing={"strategy": "mig", "layout": {"1g.5gb": 7}})
    ((path, msg),) = problems(cfg)
    assert path == "gpu-platform:nodePools[1].sharing.layout"
    assert "H100 has no MIG profile '1g.5gb'" in msg


def test_mps_replicas_above_the_device_plugin_limit():
    cfg = _with_pool("local", 0, sharing={"strategy": "mps", "replicas": 49})
    assert problems(cfg) == [
        (
            "gpu-platform:nodePools[0].sharing.replicas",
            "MPS serves at most 48 clients per L4 GPU (k8s-device-plugin limit), got 49",
        )
    ]
    load_spec(_with_pool("local", 0, sharing={"strategy": "mps", "replicas": 48}))  # the limit itself is fine


def test_mps_is_refused_under_the_mixed_mig_strategy():
    """prod-aws h100-inference mixes MIG profiles (strategy mixed); the device plugin refuses MPS then."""
    cfg = _with_pool("prod-aws", 3, sharing={"strategy": "mps", "replicas": 4})  # l4-notebooks
    ((path, msg),) = problems(cfg)
    assert path == "gpu-platform:nodePools[3].sharing.strategy"
    assert "mixed MIG strategy that nodePools[1] (h100-inference)" in msg
    # one profile per layout -> single strategy -> MPS is fine
    cfg["gpu-platform:nodePools"][1]["sharing"]["layout"] = {"1g.10gb": 7}
    load_spec(cfg)
    # Bottlerocket's host device plugin does not take the operator's strategy
    load_spec(_with_pool("prod-aws", 3, sharing={"strategy": "mps", "replicas": 4}, os="bottlerocket"))


def test_mps_limit_is_lower_before_turing():
    from components.data import catalog

    assert sharing.mps_max_replicas(catalog.gpu_model("T4")) == 48  # compute capability 7.5
    volta = catalog.GpuModel("V100", 16, "volta", {}, "v100", "nvidia-tesla-v100")
    assert sharing.mps_max_replicas(volta) == 16


def test_sharing_replicas_below_two():
    cfg = _with_pool("dev-aws", 0, sharing={"strategy": "time-slicing", "replicas": 1})
    assert problems(cfg) == [("gpu-platform:nodePools[0].sharing.replicas", "must be at least 2")]


def test_mig_on_bottlerocket_is_refused():
    cfg = _with_pool("prod-aws", 1, os="bottlerocket")
    ((path, msg),) = problems(cfg)
    assert path == "gpu-platform:nodePools[1].sharing.strategy"
    assert "use os: al2023 for MIG pools" in msg


def test_pool_named_like_the_default_config():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:nodePools"][0]["name"] = "default"
    cfg["gpu-platform:tenants"][0]["gpuQuota"] = {"default": 4, "a10g-spot": 8}
    ((path, msg),) = problems(cfg)
    assert path == "gpu-platform:nodePools[0].name"
    assert msg.startswith("'default' names the built-in time-slicing config")


def test_sharing_needs_the_operator_where_its_plugin_serves():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:addons"] = {"gpuOperator": False, "dcgm": False}
    found = problems(cfg)
    # addons.gpuOperator itself: AL2023 pools get no device plugin at all without it (components/plan/aws/rules.py)
    assert [path for path, _ in found] == [
        "gpu-platform:addons.gpuOperator",
        "gpu-platform:nodePools[0].sharing.strategy",
    ]
    assert found[1][1] == (
        "time-slicing is configured through the GPU Operator's device plugin: enable addons.gpuOperator"
    )


@pytest.mark.parametrize(
    ("stack", "driver", "message"),
    [
        ("dev-aws", "operator", "EKS NVIDIA AMIs (al2023, bottlerocket) ship the driver"),
        ("local", "gke-latest", "gke-latest applies to gcp stacks only"),
        ("dev-gcp", "preinstalled", "on GKE use gke-default / gke-latest"),
    ],
)
def test_driver_choice_must_fit_the_cloud(stack, driver, message):
    cfg = stack_config(stack)
    cfg["gpu-platform:gpuOperator"] = {"driver": driver}
    ((path, msg),) = problems(cfg)
    assert path == "gpu-platform:gpuOperator.driver"
    assert msg.startswith(message)


def test_operator_drivers_on_gke_need_ubuntu():
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:gpuOperator"] = {"driver": "operator"}
    paths = [p for p, _ in problems(cfg)]
    assert paths == ["gpu-platform:nodePools[0].os", "gpu-platform:nodePools[1].os"]


def test_rendered_release_values_are_json_plain():
    # the engine receives plain JSON: no pydantic models or tuples hiding in the values
    for stack in OPERATOR_STACKS:
        json.dumps(values(stack))
        assert isinstance(rendered(stack).find(NAMESPACE, "namespace-gpu-operator").inputs, dict)


def test_summary_says_who_serves_each_pool():
    from components.cli.synth import files

    text = files(rendered("prod-aws"))["summary.md"]
    assert "| a100-train | bottlerocket | bottlerocket | whole GPUs | - |" in text
    assert "`nvidia.com/mig.config=h100-inference`" in text
    assert "`nvidia.com/device-plugin.config=l4-notebooks`" in text
    assert "GpuTemperatureHigh (> 85 C for 5m)" in text


# ------------------------------------------------------------------ sharing rules, key by key (local stack)


def _local_pool(**changes: Any) -> dict[str, Any]:
    """The local stack (cloud existing, operator-served L4 MPS pool) with its only pool changed."""
    return _with_pool("local", 0, **changes)


H100 = {"model": "H100", "perNode": 8}
POOL0 = "gpu-platform:nodePools[0]"


@pytest.mark.parametrize("strategy", ["time-slicing", "mps"])
def test_a_layout_is_for_mig_only(strategy):
    """A MIG layout on a time-slicing / MPS pool would be ignored silently: refused at its own key, naming the
    strategy it does not apply to."""
    cfg = _local_pool(sharing={"strategy": strategy, "replicas": 2, "layout": {"1g.10gb": 7}})
    assert problems(cfg) == [(f"{POOL0}.sharing.layout", f"applies to mig only, not {strategy}")]


@pytest.mark.parametrize("strategy", ["time-slicing", "mps"])
def test_replicas_are_required_for_time_slicing_and_mps(strategy):
    """Without replicas the device plugin has no share count: the key is named with the strategy."""
    cfg = _local_pool(sharing={"strategy": strategy})
    assert problems(cfg) == [(f"{POOL0}.sharing.replicas", f"is required for {strategy}")]


def test_fail_requests_greater_than_one_is_a_time_slicing_setting():
    """MPS has no failRequestsGreaterThanOne knob in the device plugin's mps config (the plugin forces it):
    setting it on an MPS pool is refused; on a time-slicing pool it is accepted."""
    cfg = _local_pool(sharing={"strategy": "mps", "replicas": 2, "failRequestsGreaterThanOne": True})
    assert problems(cfg) == [(f"{POOL0}.sharing.failRequestsGreaterThanOne", "applies to time-slicing only")]
    load_spec(_local_pool(sharing={"strategy": "time-slicing", "replicas": 2, "failRequestsGreaterThanOne": True}))


def test_time_slicing_settings_do_not_apply_to_mig():
    """Each time-slicing / MPS setting given on a MIG pool is refused at its own (camelCase) key, even when
    set to its default value: mig-parted has no such settings."""
    cfg = _local_pool(
        gpu=H100,
        sharing={
            "strategy": "mig",
            "layout": {"1g.10gb": 7},
            "replicas": 2,
            "renameByDefault": False,
            "failRequestsGreaterThanOne": False,
        },
    )
    assert problems(cfg) == [
        (f"{POOL0}.sharing.failRequestsGreaterThanOne", "does not apply to mig"),
        (f"{POOL0}.sharing.renameByDefault", "does not apply to mig"),
        (f"{POOL0}.sharing.replicas", "does not apply to mig"),
    ]


@pytest.mark.parametrize("layout", [None, {}])
def test_mig_needs_a_layout(layout):
    """A MIG pool without a layout (absent or empty) would have its GPUs partitioned into nothing."""
    sharing_ = {"strategy": "mig", **({} if layout is None else {"layout": layout})}
    assert problems(_local_pool(gpu=H100, sharing=sharing_)) == [
        (f"{POOL0}.sharing.layout", "is required for mig, e.g. {'3g.40gb': 2}")
    ]


def test_a_gpu_without_mig_is_refused_before_its_layout_is_looked_at():
    """On a model without MIG only the model is reported: a missing layout is not reported on top."""
    ((path, msg),) = problems(_local_pool(sharing={"strategy": "mig"}))  # L4
    assert path == f"{POOL0}.sharing.strategy" and msg.startswith("L4 has no MIG support")


def test_operator_served_sharing_needs_the_gpu_operator():
    """On an existing cluster the operator's device plugin and MIG manager serve the pool: with the operator
    off, MPS and MIG pools are each refused with the addon to turn on."""
    addons = {"gpuOperator": False, "dcgm": False, "kueue": True}
    cfg = _local_pool(sharing={"strategy": "mps", "replicas": 2})
    cfg["gpu-platform:addons"] = addons
    assert problems(cfg) == [
        (
            f"{POOL0}.sharing.strategy",
            "mps is configured through the GPU Operator's device plugin: enable addons.gpuOperator",
        )
    ]
    cfg = _local_pool(gpu=H100, sharing={"strategy": "mig", "layout": {"1g.10gb": 7}})
    cfg["gpu-platform:addons"] = addons
    assert problems(cfg) == [
        (f"{POOL0}.sharing.strategy", "MIG layouts are applied by the GPU Operator: enable addons.gpuOperator")
    ]


@pytest.mark.parametrize(
    ("name", "gpu", "sharing_", "reserved"),
    [
        ("default", None, None, "'default' names the built-in mps"),
        ("all-disabled", H100, {"strategy": "mig", "layout": {"1g.10gb": 7}}, "'all-disabled' names the built-in mig"),
        ("default", H100, {"strategy": "mig", "layout": {"1g.10gb": 7}}, None),
        ("all-disabled", None, None, None),
    ],
)
def test_only_the_reserved_name_of_the_pools_own_configmap_is_refused(name, gpu, sharing_, reserved):
    """'default' is the device-plugin ConfigMap's built-in entry, 'all-disabled' the mig-parted one: a pool
    named like the entry of the ConfigMap it is listed in would overwrite it; the other name is free."""
    changes: dict[str, Any] = {"name": name}
    if gpu:
        changes.update(gpu=gpu, sharing=sharing_)
    cfg = _local_pool(**changes)
    cfg["gpu-platform:tenants"][0]["gpuQuota"] = {name: 1}
    if reserved is None:
        load_spec(cfg)
        return
    assert problems(cfg) == [(f"{POOL0}.name", f"{reserved} config the pool's nodes would share; rename the pool")]


def test_operand_tolerations_are_deduplicated_and_sorted_after_the_gpu_taint():
    """The GPU taint once, as Exists (any value); then every other pool taint once, sorted by key, effect and
    value: two pools sharing a taint give one toleration, and the order does not follow nodePools."""

    def taints(*items):
        return [dict(zip(("key", "value", "effect"), t, strict=True)) for t in items]

    cfg = stack_config("dev-aws")
    pools = cfg["gpu-platform:nodePools"]
    pools[0]["taints"] = taints(("zone", "b", "NoSchedule"), ("team", "ml", "NoExecute"))
    pools[1]["taints"] = taints(("team", "ml", "NoExecute"), ("team", "aa", "NoSchedule"), ("zone", "a", "NoSchedule"))
    assert gpu_operator.gpu_tolerations(load_spec(cfg)) == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "team", "operator": "Equal", "value": "ml", "effect": "NoExecute"},
        {"key": "team", "operator": "Equal", "value": "aa", "effect": "NoSchedule"},
        {"key": "zone", "operator": "Equal", "value": "a", "effect": "NoSchedule"},
        {"key": "zone", "operator": "Equal", "value": "b", "effect": "NoSchedule"},
    ]


def test_operator_drivers_on_gke_name_the_os_to_use():
    """Only the COS pool is refused (the other was made Ubuntu), with the message naming both options."""
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:gpuOperator"] = {"driver": "operator"}
    cfg["gpu-platform:nodePools"][1]["os"] = "ubuntu"
    assert problems(cfg) == [
        (
            "gpu-platform:nodePools[0].os",
            "gpuOperator.driver operator on GKE needs Ubuntu nodes (NVIDIA's driver-manager path); COS nodes take "
            "GKE-installed drivers (gke-default / gke-latest)",
        )
    ]


def test_the_toolkit_defaults_off_on_eks_only():
    """Both EKS NVIDIA AMIs ship the container toolkit; GKE and existing clusters need the operator's; an
    explicit setting wins."""
    assert gpu_operator.toolkit_enabled(load_spec(stack_config("dev-aws"))) is False
    assert gpu_operator.toolkit_enabled(load_spec(stack_config("dev-gcp"))) is True
    cfg = stack_config("local")
    cfg["gpu-platform:gpuOperator"] = {"driver": "operator"}
    assert gpu_operator.toolkit_enabled(load_spec(cfg)) is True
    cfg["gpu-platform:gpuOperator"] = {"driver": "operator", "toolkit": False}
    assert gpu_operator.toolkit_enabled(load_spec(cfg)) is False


def test_sharing_is_described_per_pool_for_the_summary():
    """Whole GPUs; a MIG layout as counts per profile (sorted) with the units each GPU advertises; time-slicing
    and MPS with their replica count and advertised units (prod-aws: mixed MIG strategy, L4 time-sliced x4)."""
    spec = load_spec(stack_config("prod-aws"))
    assert sharing.describe(spec, "a100-train") == "whole GPUs"
    assert sharing.describe(spec, "h100-inference") == (
        "MIG 2x 1g.10gb + 1x 2g.20gb + 1x 3g.40gb per GPU "
        "(2x nvidia.com/mig-1g.10gb, 1x nvidia.com/mig-2g.20gb, 1x nvidia.com/mig-3g.40gb)"
    )
    assert sharing.describe(spec, "l4-notebooks") == "time-slicing x4 (4x nvidia.com/gpu per GPU)"
    assert sharing.describe(load_spec(stack_config("local")), "workstation") == "mps x2 (2x nvidia.com/gpu per GPU)"


def test_nfd_workers_also_run_on_control_plane_nodes():
    """NFD labels every node (the operator deploys operands where NFD finds NVIDIA devices): its workers
    tolerate the control-plane taint (kubeadm: node-role.kubernetes.io/control-plane:NoSchedule, no value)
    before the GPU tolerations; CDI and NFD are on everywhere."""
    v = gpu_operator.operator_values(load_spec(stack_config("local")))
    worker = v["node-feature-discovery"]["worker"]["tolerations"]
    assert worker[0] == {
        "key": "node-role.kubernetes.io/control-plane",
        "operator": "Equal",
        "value": "",
        "effect": "NoSchedule",
    }
    assert worker[1:] == v["daemonsets"]["tolerations"]
    assert (v["cdi"], v["nfd"], v["gfd"]) == ({"enabled": True}, {"enabled": True}, {"enabled": True})
    assert v["dcgmExporter"]["serviceMonitor"] == {"enabled": False}  # ours carries the pool label
    assert v["migManager"] == {"enabled": False}  # local has no MIG pool


def test_the_exporter_is_off_without_dcgm_and_gets_no_env_then():
    """addons.dcgm off: the operator's exporter is off and gets no env; on: the MPS pool's attribution env."""
    cfg = stack_config("local")
    cfg["gpu-platform:addons"] = {**cfg["gpu-platform:addons"], "dcgm": False}
    cfg["gpu-platform:monitoring"] = {"prometheus": "none"}
    v = gpu_operator.operator_values(load_spec(cfg))
    assert v["dcgmExporter"] == {"enabled": False, "serviceMonitor": {"enabled": False}}
    # with dcgm on, the MPS pool's per-pod attribution env is set
    env = gpu_operator.operator_values(load_spec(stack_config("local")))["dcgmExporter"]["env"]
    assert env == [{"name": "KUBERNETES_VIRTUAL_GPUS", "value": "true"}]


def test_critical_pod_quota_grows_with_every_node_the_pools_may_bring():
    """NVIDIA's GKE guide quota (100) plus 12 operand pods per GPU node at max scale (dev-gcp: 4 + 2 nodes)."""
    assert gpu_operator.critical_pods(load_spec(stack_config("dev-gcp"))) == 100 + 12 * 6


def test_bottlerocket_mps_settings_and_who_gets_them():
    """Bottlerocket's host plugin: MPS with replicas and rename-by-default (no fail-requests knob for MPS);
    MIG and unshared pools get only the UUID device IDs (and do not count as sharing); pools the operator
    serves get no Bottlerocket settings at all."""
    cfg = stack_config("prod-aws")
    pools = cfg["gpu-platform:nodePools"]
    pools[3].update(os="bottlerocket", sharing={"strategy": "mps", "replicas": 3})  # l4-notebooks
    spec = load_spec(cfg)
    assert sharing.bottlerocket_device_plugin_settings(spec, "l4-notebooks") == {
        "device-id-strategy": "uuid",
        "device-sharing-strategy": "mps",
        "mps": {"replicas": 3, "rename-by-default": False},
    }
    assert sharing.bottlerocket_shares_gpus(spec, "l4-notebooks") is True
    assert sharing.bottlerocket_device_plugin_settings(spec, "a100-train") == {"device-id-strategy": "uuid"}
    assert sharing.bottlerocket_shares_gpus(spec, "a100-train") is False
    assert sharing.bottlerocket_device_plugin_settings(spec, "h100-inference") == {}  # AL2023: the operator's
    assert sharing.bottlerocket_shares_gpus(spec, "h100-inference") is False
    # a MIG layout on a Bottlerocket pool (refused by a rule; the host's MIG manager applies it) adds nothing
    a100 = spec.pool("a100-train").model_copy(update={"sharing": spec.pool("h100-inference").sharing})
    mig = spec.model_copy(update={"node_pools": [a100]})
    assert sharing.bottlerocket_device_plugin_settings(mig, "a100-train") == {"device-id-strategy": "uuid"}


def test_sharing_configmaps_live_beside_the_operator_and_wait_for_its_namespace():
    """The device-plugin and mig-parted ConfigMaps the release names sit in the operator's namespace, labelled
    managed-by, created after the namespace and before the release."""
    r = rendered("prod-aws")
    for name in ("device-plugin-config", "mig-parted-config"):
        rec = r.find(CONFIG_MAP, name)
        assert rec.inputs["metadata"] == {
            "name": name,
            "namespace": "gpu-operator",
            "labels": {"app.kubernetes.io/managed-by": "gpu-platform"},
        }
        assert rec.depends_on == ["namespace-gpu-operator"]
        assert name in r.find(HELM_RELEASE, "gpu-operator").depends_on


def test_the_operator_namespace_is_privileged_at_every_pod_security_mode():
    """The operands need host paths, host PID and privileged containers: enforce, audit and warn all at
    privileged (a restricted warn would flood every apply with warnings about the operator's own pods)."""
    assert gpu_operator.namespace_labels() == {
        "app.kubernetes.io/managed-by": "gpu-platform",
        "pod-security.kubernetes.io/enforce": "privileged",
        "pod-security.kubernetes.io/enforce-version": "latest",
        "pod-security.kubernetes.io/audit": "privileged",
        "pod-security.kubernetes.io/warn": "privileged",
    }
