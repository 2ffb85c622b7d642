"""GKE GPU node pools: the inputs GKE receives for the shipped gcp stacks, the node service account and its
grants, the GPU-Operator-driver variant, and the GKE rules that stop bad stack files before any API call.

Expected values come from the GKE / Compute Engine contracts, not from the code: the taint GKE and the
GPU Operator agree on (nvidia.com/gpu=present:NoSchedule), accelerator types as GKE names them
(nvidia-tesla-a100 for A100 40GB, nvidia-h100-mega-80gb for A3 Mega), gpuDriverVersion enum values, the
partition sizes GKE's device plugin serves (container-engine-accelerators mig.go), the 48-client sharing
bound, and Google's least-privilege node service account guidance.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from caching import shared_fixture
from conftest import ROOT, render_config, rendered, stack_config

from components.cli import synth
from components.cli.loader import SpecError, load_spec
from components.plan import derive
from components.render.gcp import nodepools

NODE_POOL = "gcp:container/nodePool:NodePool"
SERVICE_ACCOUNT = "gcp:serviceaccount/account:Account"
IAM_MEMBER = "gcp:projects/iAMMember:IAMMember"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}
PROD_SA = "gpu-nodes-ml-prod@ml-prod-project.iam.gserviceaccount.com"


def pool(stack: str, name: str) -> dict[str, Any]:
    return rendered(stack).find(NODE_POOL, f"gke-{name}").inputs


def accelerator(inputs: dict[str, Any]) -> dict[str, Any]:
    (acc,) = inputs["nodeConfig"]["guestAccelerators"]
    return acc


# ------------------------------------------------------------------------------ service account


def test_one_node_service_account_with_exactly_the_node_roles():
    r = rendered("prod-gcp")
    (sa,) = r.of_type(SERVICE_ACCOUNT)
    assert sa.inputs["accountId"] == "gpu-nodes-ml-prod"
    assert sa.inputs["project"] == "ml-prod-project"
    members = r.of_type(IAM_MEMBER)
    # Google's minimum for nodes plus image pulls from Artifact Registry; nothing broader
    assert {m.inputs["role"] for m in members} == {
        "roles/container.defaultNodeServiceAccount",
        "roles/artifactregistry.reader",
    }
    assert len(members) == 2
    for m in members:
        assert m.name == "gke-gpu-nodes-" + m.inputs["role"].removeprefix("roles/")
        assert m.inputs["member"] == f"serviceAccount:{PROD_SA}"
        assert m.inputs["project"] == "ml-prod-project"
        assert m.parent == "gke-gpu-node-pools"


def test_service_account_id_fits_iam_limits():
    assert nodepools.node_service_account_id("ml-prod") == "gpu-nodes-ml-prod"
    long = nodepools.node_service_account_id("a-very-long-cluster-name-for-training")
    assert len(long) == 30 and long.startswith("gpu-nodes-a-very-long")
    assert long == nodepools.node_service_account_id("a-very-long-cluster-name-for-training")  # stable
    assert long != nodepools.node_service_account_id("a-very-long-cluster-name-for-inference")


def test_every_pool_runs_as_the_node_service_account_after_its_grants():
    r = rendered("prod-gcp")
    pools = r.of_type(NODE_POOL)
    assert sorted(p.inputs["name"] for p in pools) == ["a100-inference", "h100-burst", "h100-train", "l4-serving"]
    for p in pools:
        cfg = p.inputs["nodeConfig"]
        assert cfg["serviceAccount"] == PROD_SA
        assert cfg["oauthScopes"] == ["https://www.googleapis.com/auth/cloud-platform"]
        assert {
            "gke-gpu-nodes-container.defaultNodeServiceAccount",
            "gke-gpu-nodes-artifactregistry.reader",
        } <= set(p.depends_on)
        assert (p.inputs["cluster"], p.inputs["location"], p.inputs["project"]) == (
            "ml-prod",
            "us-central1",
            "ml-prod-project",
        )


# ------------------------------------------------------------------------------ node pools (prod-gcp)


def test_secure_node_defaults_on_every_pool():
    for p in rendered("prod-gcp").of_type(NODE_POOL):
        cfg = p.inputs["nodeConfig"]
        assert cfg["shieldedInstanceConfig"] == {"enableSecureBoot": True, "enableIntegrityMonitoring": True}
        assert cfg["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
        assert cfg["metadata"] == {"disable-legacy-endpoints": "true"}
        assert cfg["imageType"] == "COS_CONTAINERD"
        assert cfg["taints"] == [GPU_TAINT]
        queued = p.inputs.get("queuedProvisioning") == {"enabled": True}
        assert p.inputs["management"] == {"autoRepair": not queued, "autoUpgrade": True}
        assert p.inputs["upgradeSettings"] == {"strategy": "SURGE", "maxSurge": 0, "maxUnavailable": 1}
        assert accelerator(p.inputs)["gpuDriverInstallationConfig"] == {"gpuDriverVersion": "LATEST"}


def test_compact_h100_training_pool():
    p = pool("prod-gcp", "h100-train")
    cfg = p["nodeConfig"]
    assert p["name"] == "h100-train"
    assert p["placementPolicy"] == {"type": "COMPACT"}
    assert p["nodeLocations"] == ["us-central1-a"]
    assert accelerator(p) == {
        "type": "nvidia-h100-80gb",
        "count": 8,
        "gpuDriverInstallationConfig": {"gpuDriverVersion": "LATEST"},
    }
    assert cfg["machineType"] == "a3-highgpu-8g"
    assert (cfg["diskSizeGb"], cfg["diskType"]) == (500, "pd-balanced")
    assert cfg["spot"] is False
    # the stack's reservation block (components/plan/reservations.py), as GKE spells it
    assert cfg["reservationAffinity"] == {
        "consumeReservationType": "SPECIFIC_RESERVATION",
        "key": "compute.googleapis.com/reservation-name",
        "values": ["ml-prod-h100-train"],
    }
    assert p["autoscaling"] == {
        "totalMinNodeCount": 0,
        "totalMaxNodeCount": 4,
        "locationPolicy": "ANY",
    }  # reserved: ANY
    assert p["initialNodeCount"] == 0
    assert "queuedProvisioning" not in p
    assert cfg["labels"] == {
        "gpu-platform/gpu-model": "h100",
        "gpu-platform/pool": "h100-train",
        "nvidia.com/gpu.present": "true",
    }
    assert cfg["resourceLabels"] == {"environment": "prod", "gpu-platform-pool": "h100-train"}


def test_queued_provisioning_burst_pool():
    p = pool("prod-gcp", "h100-burst")
    assert p["queuedProvisioning"] == {"enabled": True}
    # as Google's DWS guide creates such pools (--no-enable-autorepair): a repair would recreate a node
    # outside its ProvisioningRequest. Auto-upgrade stays on (the guide does not turn it off).
    assert p["management"] == {"autoRepair": False, "autoUpgrade": True}
    assert pool("prod-gcp", "h100-train")["management"] == {"autoRepair": True, "autoUpgrade": True}
    # Dynamic Workload Scheduler: no reservation, autoscaled from zero, created empty
    assert p["nodeConfig"]["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
    assert p["autoscaling"] == {"totalMinNodeCount": 0, "totalMaxNodeCount": 8, "locationPolicy": "ANY"}
    assert p["initialNodeCount"] == 0
    assert p["nodeConfig"]["spot"] is False
    assert "placementPolicy" not in p and "nodeLocations" not in p
    # GKE adds the gke-queued taint itself: not declared, but tolerated by the shared derivation
    assert p["nodeConfig"]["taints"] == [GPU_TAINT]
    spec = rendered("prod-gcp").spec
    assert {"key": "cloud.google.com/gke-queued", "operator": "Equal", "value": "true", "effect": "NoSchedule"} in (
        derive.tolerations(spec.pool("h100-burst"))
    )
    assert all(t["key"] != "cloud.google.com/gke-queued" for t in derive.tolerations(spec.pool("h100-train")))


def test_mig_a100_inference_pool_uses_gke_partitions():
    p = pool("prod-gcp", "a100-inference")
    assert accelerator(p) == {
        "type": "nvidia-tesla-a100",
        "count": 1,
        "gpuDriverInstallationConfig": {"gpuDriverVersion": "LATEST"},
        "gpuPartitionSize": "1g.5gb",
    }
    assert p["autoscaling"] == {"totalMinNodeCount": 1, "totalMaxNodeCount": 6, "locationPolicy": "BALANCED"}
    # minNodes 1 over the cluster's three (placeholder) zones: one node per zone to start
    assert p["initialNodeCount"] == 1
    assert "nvidia.com/mig.config" not in p["nodeConfig"]["labels"]  # GKE, not mig-parted, partitions


def test_mps_l4_serving_pool_is_spot():
    p = pool("prod-gcp", "l4-serving")
    acc = accelerator(p)
    assert acc["type"] == "nvidia-l4" and acc["count"] == 1
    assert acc["gpuSharingConfig"] == {"gpuSharingStrategy": "MPS", "maxSharedClientsPerGpu": 2}
    assert "gpuPartitionSize" not in acc
    assert p["nodeConfig"]["spot"] is True
    assert p["autoscaling"] == {"totalMinNodeCount": 0, "totalMaxNodeCount": 8, "locationPolicy": "ANY"}
    assert "gke-no-default-nvidia-gpu-device-plugin" not in p["nodeConfig"]["labels"]


def test_dev_time_sharing_and_n1_t4_pools():
    shared = pool("dev-gcp", "l4-shared")
    assert accelerator(shared)["gpuSharingConfig"] == {
        "gpuSharingStrategy": "TIME_SHARING",
        "maxSharedClientsPerGpu": 4,
    }
    t4 = pool("dev-gcp", "t4-spot")
    assert t4["nodeConfig"]["machineType"] == "n1-standard-8"
    assert accelerator(t4) == {
        "type": "nvidia-tesla-t4",
        "count": 1,
        "gpuDriverInstallationConfig": {"gpuDriverVersion": "LATEST"},
    }
    assert t4["nodeConfig"]["spot"] is True
    assert t4["nodeConfig"]["serviceAccount"] == "gpu-nodes-ml-dev@ml-dev-project.iam.gserviceaccount.com"


# ------------------------------------------------------------------------------ pure derivations


def _spec(**pool: Any):
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:nodePools"] = [{"name": "p", "minNodes": 0, "maxNodes": 2, **pool}]
    cfg["gpu-platform:tenants"] = []
    spec = load_spec(cfg)
    return spec, spec.pool("p")


def test_a3_mega_gets_its_own_accelerator_type():
    spec, p = _spec(gpu={"model": "H100", "perNode": 8}, instanceTypes=["a3-megagpu-8g"])
    assert nodepools.guest_accelerator(spec, p)["type"] == "nvidia-h100-mega-80gb"
    spec, p = _spec(gpu={"model": "H100", "perNode": 8}, instanceTypes=["a3-highgpu-8g"])
    assert nodepools.guest_accelerator(spec, p)["type"] == "nvidia-h100-80gb"


@pytest.mark.parametrize(
    ("model", "machine", "disk"),
    [
        ("H200", "a3-ultragpu-8g", "hyperdisk-balanced"),
        ("B200", "a4-highgpu-8g", "hyperdisk-balanced"),
        ("H100", "a3-highgpu-8g", "pd-balanced"),
        ("A100-80GB", "a2-ultragpu-8g", "pd-balanced"),
    ],
)
def test_boot_disk_follows_what_the_machine_type_supports(model, machine, disk):
    spec, p = _spec(gpu={"model": model, "perNode": 8}, instanceTypes=[machine])
    assert nodepools.node_config(spec, p)["diskType"] == disk


def test_pool_taints_in_gke_form():
    _, p = _spec(
        gpu={"model": "L4", "perNode": 1},
        instanceTypes=["g2-standard-8"],
        taints=[
            {"key": "dedicated", "value": "research", "effect": "NoExecute"},
            {"key": "example.com/soft", "effect": "PreferNoSchedule"},
        ],
    )
    assert nodepools.taints(p) == [
        GPU_TAINT,
        {"key": "dedicated", "value": "research", "effect": "NO_EXECUTE"},
        {"key": "example.com/soft", "value": "", "effect": "PREFER_NO_SCHEDULE"},
    ]


def test_specific_reservation_affinity():
    _, p = _spec(
        gpu={"model": "L4", "perNode": 1},
        instanceTypes=["g2-standard-8"],
        gke={"reservation": "specific", "reservationName": "l4-block"},
    )
    assert nodepools.reservation_affinity(p) == {
        "consumeReservationType": "SPECIFIC_RESERVATION",
        "key": "compute.googleapis.com/reservation-name",
        "values": ["l4-block"],
    }
    assert nodepools.location_policy(p) == "ANY"  # prefer the reserved capacity wherever it is


def test_initial_nodes_per_zone():
    _, p = _spec(gpu={"model": "L4", "perNode": 1}, instanceTypes=["g2-standard-8"], minNodes=2, maxNodes=3)
    assert nodepools.initial_nodes_per_zone(p, 1) == 2
    assert nodepools.initial_nodes_per_zone(p, 3) == 1  # ceil(2/3); 3 <= maxNodes
    _, p = _spec(gpu={"model": "L4", "perNode": 1}, instanceTypes=["g2-standard-8"], minNodes=1, maxNodes=2)
    assert nodepools.initial_nodes_per_zone(p, 3) == 0  # one per zone would pass maxNodes 2


def test_ubuntu_pool_on_auto_driver_gets_default_driver():
    cfg = stack_config("dev-gcp")
    cfg.pop("gpu-platform:gpuOperator")  # driver: auto
    cfg["gpu-platform:nodePools"][0]["os"] = "ubuntu"
    spec = load_spec(cfg)
    assert nodepools.driver_version(spec, spec.node_pools[0]) == "DEFAULT"
    assert nodepools.driver_version(spec, spec.node_pools[1]) == "LATEST"  # cos


# ------------------------------------------------------------------------------ operator-driver variant


@shared_fixture
def operator_rendering():
    cfg = stack_config("prod-gcp")
    cfg["gpu-platform:gpuOperator"] = {"driver": "operator"}
    for p in cfg["gpu-platform:nodePools"]:
        p["os"] = "ubuntu"
        p.pop("imageCache", None)  # Ubuntu boots secondary boot disks from GKE 1.35 only (tests/test_images.py)
    return render_config(cfg, "prod-gcp")


def test_operator_driver_disables_gke_driver_and_device_plugin(operator_rendering):
    for p in operator_rendering.of_type(NODE_POOL):
        cfg = p.inputs["nodeConfig"]
        acc = accelerator(p.inputs)
        assert acc["gpuDriverInstallationConfig"] == {"gpuDriverVersion": "INSTALLATION_DISABLED"}
        assert "gpuSharingConfig" not in acc and "gpuPartitionSize" not in acc
        assert cfg["labels"]["gke-no-default-nvidia-gpu-device-plugin"] == "true"
        assert cfg["imageType"] == "UBUNTU_CONTAINERD"
        # the operator's driver modules are unsigned: secure boot would refuse them
        assert cfg["shieldedInstanceConfig"] == {"enableSecureBoot": False, "enableIntegrityMonitoring": True}
    l4 = operator_rendering.find(NODE_POOL, "gke-l4-serving").inputs["nodeConfig"]["labels"]
    assert l4["nvidia.com/device-plugin.config"] == "l4-serving"
    a100 = operator_rendering.find(NODE_POOL, "gke-a100-inference").inputs["nodeConfig"]["labels"]
    assert a100["nvidia.com/mig.config"] == "a100-inference"


# ------------------------------------------------------------------------------ stability and options


def test_names_and_inputs_stable_when_pools_are_reordered():
    cfg = stack_config("prod-gcp")
    cfg["gpu-platform:nodePools"].reverse()
    after = {(r.type, r.name): r.inputs for r in render_config(cfg, "prod-gcp").resources if r.type.startswith("gcp:")}
    before = {(r.type, r.name): r.inputs for r in rendered("prod-gcp").resources if r.type.startswith("gcp:")}
    assert sorted(before) == sorted(after)
    assert [k for k in before if before[k] != after[k]] == []


def test_engine_receives_ignore_changes_and_delete_before_replace(monkeypatch):
    """The options reach the engine: the node count belongs to the autoscaler, and a pool with a fixed
    name must be deleted before its replacement is created."""
    seen: dict[str, tuple[list[str], bool]] = {}
    mocks_cls, monitor_cls = synth._mock_classes()

    class Capturing(monitor_cls):  # type: ignore[misc,valid-type]
        def RegisterResource(self, request):
            if request.type == NODE_POOL:
                seen[request.name] = (list(request.ignoreChanges), request.deleteBeforeReplace)
            return super().RegisterResource(request)

    monkeypatch.setattr(synth, "_mock_classes", lambda: (mocks_cls, Capturing))
    render_config(stack_config("dev-gcp"), "dev-gcp")
    assert seen == {
        "gke-l4-shared": (["initialNodeCount", "nodeCount", "nodeConfig.ephemeralStorageLocalSsdConfig"], True),
        "gke-t4-spot": (["initialNodeCount", "nodeCount", "nodeConfig.ephemeralStorageLocalSsdConfig"], True),
    }
    import pulumi_gcp as gcp

    wire = {gcp.container.NodePoolArgs.initial_node_count.fget._pulumi_name}
    wire.add(gcp.container.NodePoolArgs.node_count.fget._pulumi_name)
    # the local SSDs GKE cannot change in place (a change would replace the pool), as wire names nest
    config = gcp.container.NodePoolNodeConfigArgs.ephemeral_storage_local_ssd_config.fget._pulumi_name
    wire.add(f"{gcp.container.NodePoolArgs.node_config.fget._pulumi_name}.{config}")
    assert set(nodepools.IGNORE_CHANGES) == wire


def test_gcp_render_never_imports_aws_sdk_nor_the_aws_plan_modules():
    """Nor the aws plan's own modules (plan/aws/plan.py, karpenter.py: components/plan/plan.py imports a cloud's
    plan modules for its stacks only); the aws rules' modules are loaded, their rules run on every stack."""
    code = (
        "import sys, yaml; from components.cli.synth import render; "
        "cfg = yaml.safe_load(open('stacks/Pulumi.prod-gcp.yaml'))['config']; "
        "r = render('prod-gcp', cfg); "
        "assert any(x.type == 'gcp:container/nodePool:NodePool' for x in r.resources); "
        "print([m for m in ('pulumi_aws', 'components.plan.aws.plan', 'components.plan.aws.karpenter') "
        "if m in sys.modules])"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


# ------------------------------------------------------------------------------ GKE rules


def _problems(cfg: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as err:
        load_spec(cfg)
    return [(p.path, p.message) for p in err.value.problems]


def _prod(**changes: Any) -> dict[str, Any]:
    """prod-gcp with pool fields changed: changes are {pool index}_{field}=value (nested via dicts)."""
    cfg = stack_config("prod-gcp")
    for name, value in changes.items():
        index, field = name.split("_", 1)
        target = cfg["gpu-platform:nodePools"][int(index.removeprefix("p"))]
        if isinstance(value, dict) and isinstance(target.get(field), dict):
            target[field] = {**target[field], **value}
        else:
            target[field] = value
    return cfg


POOLS = "gpu-platform:nodePools"

# (id, config, expected key path, fragment of the message); pools: 0 h100-train (compact),
# 1 h100-burst (queued), 2 a100-inference (MIG), 3 l4-serving (MPS, spot)
RULES: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "compact-two-zones",
        _prod(p0_gke={"zones": ["us-central1-a", "us-central1-b"]}),
        f"{POOLS}[0].gke.compactPlacement",
        "exactly one zone",
    ),
    (
        "compact-regional-no-zones",
        _prod(p0_gke={"zones": []}),
        f"{POOLS}[0].gke.compactPlacement",
        "exactly one zone",
    ),
    (
        "compact-with-queued",
        _prod(p1_gke={"queuedProvisioning": True, "compactPlacement": True, "zones": ["us-central1-a"]}),
        f"{POOLS}[1].gke.compactPlacement",
        "does not combine compact placement with queued provisioning",
    ),
    ("queued-min-nodes", _prod(p1_minNodes=1), f"{POOLS}[1].minNodes", "queued provisioning needs minNodes 0"),
    (
        "queued-desired-nodes",
        _prod(p1_desiredNodes=2),
        f"{POOLS}[1].desiredNodes",
        "queued provisioning pools start with 0 nodes",
    ),
    (
        "queued-reservation",
        _prod(p1_gke={"reservation": "any"}),
        f"{POOLS}[1].gke.reservation",
        "queued provisioning cannot consume a reservation",
    ),
    ("queued-spot", _prod(p1_capacity="spot"), f"{POOLS}[1].capacity", "queued provisioning does not use spot"),
    (
        "spot-reservation",
        _prod(p3_gke={"reservation": "any"}),
        f"{POOLS}[3].gke.reservation",
        "spot pools cannot consume reservations",
    ),
    (
        "specific-without-name",
        _prod(p0_gke={"reservation": "specific"}),
        f"{POOLS}[0].gke.reservationName",
        "is required for a specific reservation",
    ),
    (
        "name-without-specific",
        _prod(p0_gke={"reservationName": "h100-block"}),
        f"{POOLS}[0].gke.reservationName",
        "applies only to reservation: specific",
    ),
    (
        "mig-size-gke-does-not-serve",
        _prod(p2_sharing={"strategy": "mig", "layout": {"4g.20gb": 1}}),
        f"{POOLS}[2].sharing.layout.4g.20gb",
        "GKE does not partition nvidia-tesla-a100 GPUs into 4g.20gb (partition sizes: 1g.5gb, 2g.10gb, 3g.20gb,"
        " 7g.40gb)",
    ),
    (
        "mig-media-extension-profile",
        _prod(p2_sharing={"strategy": "mig", "layout": {"1g.5gb+me": 1}}),
        f"{POOLS}[2].sharing.layout.1g.5gb+me",
        "GKE does not partition nvidia-tesla-a100 GPUs into 1g.5gb+me",
    ),
    (
        "mig-partial-count",
        _prod(p2_sharing={"strategy": "mig", "layout": {"3g.20gb": 1}}),
        f"{POOLS}[2].sharing.layout.3g.20gb",
        "GKE makes 2 3g.20gb partitions on each GPU",
    ),
    (
        "mig-two-profiles",
        _prod(p2_sharing={"strategy": "mig", "layout": {"3g.20gb": 1, "2g.10gb": 2}}),
        f"{POOLS}[2].sharing.layout",
        "one gpuPartitionSize: use a single MIG profile",
    ),
    (
        "mps-too-many-clients",
        _prod(p3_sharing={"strategy": "mps", "replicas": 49}),
        f"{POOLS}[3].sharing.replicas",
        "at most 48",  # reported once, by the cloud-neutral sharing rules
    ),
    (
        "time-sharing-too-many-clients",
        _prod(p3_sharing={"strategy": "time-slicing", "replicas": 64}),
        f"{POOLS}[3].sharing.replicas",
        "GKE shares a GPU with at most 48 clients, got 64",
    ),
    (
        "time-sharing-allows-multi-requests",
        _prod(p3_sharing={"strategy": "time-slicing", "replicas": 4, "failRequestsGreaterThanOne": False}),
        f"{POOLS}[3].sharing.failRequestsGreaterThanOne",
        "always rejects pods asking for more than one shared GPU",
    ),
    (
        "time-sharing-rename",
        _prod(p3_sharing={"strategy": "time-slicing", "replicas": 4, "renameByDefault": True}),
        f"{POOLS}[3].sharing.renameByDefault",
        "does not rename shared GPUs",
    ),
    (
        "machine-carries-other-gpu",
        _prod(p3_instanceTypes=["a2-highgpu-1g"]),
        f"{POOLS}[3].instanceTypes[0]",
        "a2-highgpu-1g carries A100-40GB, not L4",
    ),
    (
        "machine-gpu-count",
        _prod(p0_gpu={"model": "H100", "perNode": 4}),
        f"{POOLS}[0].gpu.perNode",
        "a3-highgpu-8g has 8 GPUs, not 4",
    ),
    (
        "n1-t4-count",
        _prod(p3_gpu={"model": "T4", "perNode": 1}, p3_instanceTypes=["n1-standard-96"], p3_sharing=None),
        f"{POOLS}[3].gpu.perNode",
        "n1-standard-96 takes 4 T4 GPUs, not 1",
    ),
    (
        "unknown-machine",
        _prod(p3_instanceTypes=["g2-standard-7"]),
        f"{POOLS}[3].instanceTypes[0]",
        "'g2-standard-7' is not a known GPU machine type",
    ),
    (
        "two-machine-types",
        _prod(p3_instanceTypes=["g2-standard-8", "g2-standard-4"]),
        f"{POOLS}[3].instanceTypes",
        "exactly one machine type",
    ),
    (
        "small-a3-on-demand",
        _prod(p0_gpu={"model": "H100", "perNode": 2}, p0_instanceTypes=["a3-highgpu-2g"]),
        f"{POOLS}[0].capacity",
        "a3-highgpu-2g is sold only as Spot or flex-start capacity",
    ),
    (
        "compact-on-n1",
        _prod(
            p3_gpu={"model": "T4", "perNode": 1},
            p3_instanceTypes=["n1-standard-8"],
            p3_sharing=None,
            p3_gke={"compactPlacement": True, "zones": ["us-central1-b"]},
        ),
        f"{POOLS}[3].gke.compactPlacement",
        "compact placement is not available for N1 machines",
    ),
    (
        "zone-outside-region",
        _prod(p0_gke={"zones": ["europe-west4-a"]}),
        f"{POOLS}[0].gke.zones[0]",
        "europe-west4-a is not in the cluster's region us-central1",
    ),
    ("not-a-zone", _prod(p0_gke={"zones": ["us-central1"]}), f"{POOLS}[0].gke.zones[0]", "is not a zone name"),
    ("gpu-not-on-gke", _prod(p3_gpu={"model": "A10G", "perNode": 1}), f"{POOLS}[3].gpu.model", "not offered on GKE"),
    ("aws-os", _prod(p3_os="bottlerocket"), f"{POOLS}[3].os", "must be one of cos, ubuntu on gcp"),
]


@pytest.mark.parametrize(("cfg", "path", "fragment"), [r[1:] for r in RULES], ids=[r[0] for r in RULES])
def test_gke_rule(cfg, path, fragment):
    problems = _problems(cfg)
    assert any(p == path and fragment in m for p, m in problems), problems


def _with_driver(driver: str, os_: str | None = None) -> dict[str, Any]:
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:gpuOperator"] = {"driver": driver}
    if os_:
        for p in cfg["gpu-platform:nodePools"]:
            p["os"] = os_
    return cfg


def test_operator_driver_needs_ubuntu_and_preinstalled_does_not_exist():
    """Guarded by the GPU Operator's rules; the node pools rely on them (INSTALLATION_DISABLED on COS
    would leave nodes without a driver)."""
    assert {p for p, _ in _problems(_with_driver("operator"))} == {
        "gpu-platform:nodePools[0].os",
        "gpu-platform:nodePools[1].os",
    }
    load_spec(_with_driver("operator", "ubuntu"))  # valid
    assert {p for p, _ in _problems(_with_driver("preinstalled"))} == {"gpu-platform:gpuOperator.driver"}


def test_latest_driver_is_cos_only():
    problems = _problems(_with_driver("gke-latest", "ubuntu"))
    assert (
        "gpu-platform:nodePools[0].os",
        "GKE installs LATEST drivers on Container-Optimized OS only: use os: cos or gpuOperator.driver: gke-default",
    ) in problems
    load_spec(_with_driver("gke-default", "ubuntu"))  # valid


def test_tags_must_be_gcp_labels():
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:tags"] = {"Environment": "dev", "team": "ML Platform"}
    problems = dict(_problems(cfg))
    assert "start with a lowercase letter" in problems["gpu-platform:tags.Environment"]
    assert problems["gpu-platform:tags.team"].startswith("'ML Platform': GCP label values")


def test_uncatalogued_n1_shape_and_operator_mig_are_accepted():
    """Predefined N1 shapes outside the catalog take T4s in the counts GCP allows."""
    cfg = _prod(p3_gpu={"model": "T4", "perNode": 2}, p3_instanceTypes=["n1-highcpu-16"], p3_sharing=None)
    spec = load_spec(cfg)
    assert nodepools.guest_accelerator(spec, spec.node_pools[3])["type"] == "nvidia-tesla-t4"


def test_gke_options_rejected_on_other_clouds():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:nodePools"][0]["gke"] = {"compactPlacement": True}
    assert ("gpu-platform:nodePools[0].gke", "does not apply when cloud is aws") in _problems(cfg)


def test_cluster_check_refuses_autopilot_and_missing_workload_identity():
    from components.plan.gcp.plan import cluster_plan as gcp_cluster_plan
    from components.render.gcp.cluster import problems_of

    spec = rendered("prod-gcp").spec
    assert problems_of(gcp_cluster_plan(spec), False, ["ml-prod-project.svc.id.goog"]) == []
    (autopilot,) = problems_of(gcp_cluster_plan(spec), True, ["ml-prod-project.svc.id.goog"])
    assert "ml-prod (ml-prod-project/us-central1) is an Autopilot cluster" in autopilot
    (no_wi,) = problems_of(gcp_cluster_plan(spec), False, [])
    assert "has no Workload Identity Federation" in no_wi
    assert "--workload-pool=ml-prod-project.svc.id.goog" in no_wi


def test_gvnic_is_registered_only_on_cos_pools():
    """gVNIC is asked for on Container-Optimized OS pools only (the image that ships the driver); an Ubuntu pool's
    registered nodeConfig carries no gvnic block, while the COS pools of the shipped stack each carry enabled."""
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:gpuOperator"] = {"driver": "operator"}
    for pool in cfg["gpu-platform:nodePools"]:
        pool["os"] = "ubuntu"
    r = render_config(cfg, "dev-gcp")
    pools = r.of_type("gcp:container/nodePool:NodePool")
    assert pools and all("gvnic" not in p.inputs["nodeConfig"] for p in pools)
    cos = rendered("dev-gcp").of_type("gcp:container/nodePool:NodePool")
    assert cos and all(p.inputs["nodeConfig"]["gvnic"] == {"enabled": True} for p in cos)
