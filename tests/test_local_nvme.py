"""The GPU nodes' local NVMe disks as their ephemeral storage on EKS (issue 40, anchors: Karpenter's
``instanceStorePolicy: RAID0``). p4d.24xlarge carries 8 x 1000 GB NVMe, p5.48xlarge 8 x 3840 GB, every g5/g6 one
or more (EC2 user guide "Instance store volumes"); without the policy they sit unused and images, pods and logs
fill the root EBS volume. With it Karpenter v1.14.1 stripes them (pkg/providers/amifamily/bootstrap/nodeadm.go:
NodeConfig ``instance.localStorage.strategy: RAID0``; bottlerocket.go: ``apiclient ephemeral-storage init`` and
``bind --dirs /var/lib/containerd /var/lib/kubelet /var/log/pods``) and advertises their size as the node's
ephemeral-storage. The rendered EC2NodeClass is checked against the CRD's strict schema
(tests/test_custom_resources_conform.py does it for every shipped stack; here for the opt-out too).
"""

from __future__ import annotations

import copy
import json

from conftest import UPSTREAM, manifests, render_config, rendered, stack_config
from jsonschema import Draft7Validator

from components.cli import main as cli
from components.cli.loader import load_spec
from components.plan import plan as plan_mod

STRICT = UPSTREAM / "karpenter" / "ec2nodeclass.karpenter.k8s.aws.v1.strict.json"


def _classes(r) -> list[dict]:
    return manifests(r, "EC2NodeClass")


def _valid(doc: dict) -> None:
    Draft7Validator(json.loads(STRICT.read_text())).validate(doc)


def test_every_gpu_node_class_stripes_the_local_disks_by_default():
    for stack in ("dev-aws", "prod-aws", "starter-aws"):
        classes = _classes(rendered(stack))
        assert classes, stack
        for doc in classes:
            assert doc["spec"]["instanceStorePolicy"] == "RAID0", (stack, doc["metadata"]["name"])
            _valid(doc)


def test_the_local_disks_can_be_left_unused():
    cfg = copy.deepcopy(stack_config("prod-aws"))
    cfg.setdefault("gpu-platform:karpenter", {})["instanceStorePolicy"] = "none"
    classes = _classes(render_config(cfg, "prod-aws"))
    assert classes and all("instanceStorePolicy" not in d["spec"] for d in classes)
    for doc in classes:
        _valid(doc)


def test_the_plan_says_what_the_local_disks_hold(capsys):
    lines = cli.plan_text(plan_mod.build(load_spec(stack_config("starter-aws")), "starter-aws"))
    assert (
        "  Karpenter nodes: local NVMe disks striped (RAID0) as the nodes' ephemeral storage (containerd, kubelet, "
        "pod logs)" in lines
    )


# ------------------------------------------------------------------ managed node groups, the catalog, composition

ROOT = UPSTREAM.parent
NODECONFIG_CRD = ROOT / "tests" / "fixtures" / "amazon-eks-ami" / "node.eks.aws_nodeconfigs.yaml"
COVERAGE = ROOT / "tests" / "fixtures" / "coverage" / "Pulumi.coverage-aws.yaml"
POOLS = "gpu-platform:nodePools"
# Karpenter v1.14.1 pkg/providers/amifamily/bootstrap/bottlerocket.go, instanceStorePolicy RAID0 on a release without
# the default bind: the command managed Bottlerocket pools now run too, under the same name
KARPENTER_BOTTLEROCKET_RAID0 = {
    "000-mount-instance-storage": {
        "commands": [
            ["apiclient", "ephemeral-storage", "init"],
            [
                "apiclient",
                "ephemeral-storage",
                "bind",
                "--dirs",
                "/var/lib/containerd",
                "/var/lib/kubelet",
                "/var/log/pods",
            ],
        ],
        "essential": True,
        "mode": "always",
    }
}


def _node_config_schema() -> dict:
    import yaml
    from conftest import strict_crd_schema

    crd = yaml.safe_load(NODECONFIG_CRD.read_text())
    (version,) = crd["spec"]["versions"]
    assert (crd["spec"]["group"], version["name"]) == ("node.eks.aws", "v1alpha1")
    return strict_crd_schema(version["schema"]["openAPIV3Schema"])


def _node_configs(user_data: str) -> list[dict]:
    """The NodeConfigs of a user data as Karpenter v1.14.1 reads one (bootstrap/nodeadm.go parseUserData: a MIME
    archive when it starts with MIME-Version; mime/mime.go NewArchive: multipart, each part by its Content-Type) and
    nodeadm takes them (application/node.eks.aws), each valid against nodeadm's CRD schema, unknown fields refused."""
    import email

    import yaml

    assert user_data.lstrip().startswith("MIME-Version:")
    message = email.message_from_string(user_data)
    assert message.get_content_type() == "multipart/mixed" and message.get_param("boundary") == "//"
    parts = [p for p in message.get_payload() if p.get_content_type() == "application/node.eks.aws"]
    # the other parts are the ECR mirror's installer (text/x-shellscript: tests/test_ecr_mirror.py), nothing else
    others = [p.get_content_type() for p in message.get_payload() if p not in parts]
    assert others in ([], ["text/x-shellscript"]) and (parts or others)
    configs = [yaml.safe_load(p.get_payload()) for p in parts]
    for config in configs:
        Draft7Validator(_node_config_schema()).validate(config)
    return configs


def _launch_template(cfg: dict, pool: str):
    return plan_mod.build(load_spec(cfg), "t").aws.node_groups[pool].launch_template


def _pool(cfg: dict, name: str) -> dict:
    (pool,) = [p for p in cfg[POOLS] if p["name"] == name]
    return pool


def test_the_catalog_knows_which_gpu_types_carry_nvme():
    """Karpenter v1.14.1 website/content/en/docs/reference/instance-types.md, karpenter.k8s.aws/instance-local-nvme
    (GB, from EC2's InstanceStorageInfo); g5g has no such label (EBS only)."""
    from components.data import catalog
    from components.data.instance_store import aws_instance_store_gb

    published = {"p4d.24xlarge": 8000, "p5.48xlarge": 30400, "p5.4xlarge": 3800, "g5.xlarge": 250, "g6.48xlarge": 7520}
    published |= {"g6e.12xlarge": 3800, "g4dn.metal": 1800, "p6-b200.48xlarge": 30400, "g5g.16xlarge": 0}
    assert {t: aws_instance_store_gb(t) for t in published} == published
    without = sorted(t for t in catalog.AWS_INSTANCE_TYPES if not aws_instance_store_gb(t))
    assert without == sorted(t for t in catalog.AWS_INSTANCE_TYPES if t.startswith("g5g."))


def test_a_managed_al2023_pool_stripes_its_nvme_through_nodeadm():
    """prod-aws's h100-inference (p5.48xlarge, AL2023): one NodeConfig, localStorage RAID0 (nodeadm v20260724
    LocalStorageStrategy; what Karpenter's nodeadm.go sets for instanceStorePolicy RAID0)."""
    (config,) = _node_configs(_launch_template(stack_config("prod-aws"), "h100-inference").user_data)
    assert config["spec"]["instance"] == {"localStorage": {"strategy": "RAID0"}}


def test_a_managed_bottlerocket_pool_runs_karpenters_ephemeral_storage_command():
    import base64
    import tomllib

    lt = rendered("prod-aws").find("aws:ec2/launchTemplate:LaunchTemplate", "a100-train").inputs
    settings = tomllib.loads(base64.b64decode(lt["userData"]).decode())["settings"]
    assert settings["bootstrap-commands"] == KARPENTER_BOTTLEROCKET_RAID0


def test_a_snapshot_data_volume_keeps_containerd_and_stripes_the_rest():
    """prod-aws's a100-gang boots /dev/xvdb from an image snapshot: binding the NVMe over /var/lib/containerd would
    hide those images (Bottlerocket keeps containerd's store on the data volume), so only the kubelet and pod logs
    move; on Karpenter, coverage-aws's Bottlerocket snapshot class leaves instanceStorePolicy out (Karpenter's bind
    takes containerd) and carries the same command in its userData."""
    import tomllib

    def binds(toml: str) -> list[str]:
        (cmd,) = tomllib.loads(toml)["settings"]["bootstrap-commands"].values()
        return cmd["commands"][1]

    managed = _launch_template(stack_config("prod-aws"), "a100-gang").user_data
    assert binds(managed) == ["apiclient", "ephemeral-storage", "bind", "--dirs", "/var/lib/kubelet", "/var/log/pods"]
    import yaml

    cfg = yaml.safe_load(COVERAGE.read_text())["config"]
    classes = _classes(render_config(cfg, "coverage-aws"))
    snap = [c for c in classes if any("snapshotID" in m["ebs"] for m in c["spec"]["blockDeviceMappings"])]
    assert len(snap) == 1 and "instanceStorePolicy" not in snap[0]["spec"]
    assert binds(snap[0]["spec"]["userData"])[-2:] == ["/var/lib/kubelet", "/var/log/pods"]
    assert "/var/lib/containerd" not in binds(snap[0]["spec"]["userData"])
    others = [c for c in classes if c not in snap]
    assert others and all(c["spec"]["instanceStorePolicy"] == "RAID0" for c in others)


def test_types_without_an_instance_store_get_no_disk_setting():
    cfg = copy.deepcopy(stack_config("prod-aws"))
    pool = _pool(cfg, "h100-inference")
    pool.update(gpu={"model": "T4", "perNode": 1}, instanceTypes=["g5g.xlarge"])
    pool.pop("sharing", None)
    pool.pop("reservation", None)
    lt = _launch_template(cfg, "h100-inference")
    assert _node_configs(lt.user_data) == [] and lt.local_disks is None  # only prod-aws's ECR mirror part


def test_a_managed_pool_can_leave_its_nvme_unused():
    cfg = copy.deepcopy(stack_config("prod-aws"))
    _pool(cfg, "h100-inference").setdefault("eks", {})["instanceStorePolicy"] = "none"
    _pool(cfg, "a100-train").setdefault("eks", {})["instanceStorePolicy"] = "none"
    assert _node_configs(_launch_template(cfg, "h100-inference").user_data) == []  # only the ECR mirror part
    assert "bootstrap-commands" not in _launch_template(cfg, "a100-train").user_data


def test_the_plan_names_a_node_groups_striped_disks():
    lines = cli.plan_text(plan_mod.build(load_spec(stack_config("prod-aws")), "prod-aws"))
    (line,) = [x for x in lines if "node group" in x and "h100-inference" in x]
    assert "local NVMe RAID0 (30400 GB) for containerd, kubelet, pod logs" in line and "nodeadm NodeConfig" in line


def test_spegel_and_karpenters_raid0_compose_into_nodeadm_config():
    """40.3: coverage-aws's peer mirror on an AL2023 Karpenter class with instanceStorePolicy RAID0. The class's
    userData is one valid MIME archive of NodeConfigs (Karpenter parses it and appends its own part:
    bootstrap/nodeadm.go Script), carrying Spegel's containerd config and no localStorage of its own; Karpenter's
    generated NodeConfig carries localStorage RAID0. nodeadm merges the parts (amazon-eks-ami v20260724 doc
    examples.md, "Merging multiple configuration objects"): the node gets both."""
    import yaml

    cfg = yaml.safe_load(COVERAGE.read_text())["config"]
    k = plan_mod.build(load_spec(cfg), "coverage-aws").karpenter
    (a10g,) = [c for c in k.node_classes if "a10g-spot" in c.pools]
    assert a10g.spec["instanceStorePolicy"] == "RAID0" and a10g.spec["amiSelectorTerms"][0]["alias"].startswith(
        "al2023"
    )
    (ours,) = _node_configs(a10g.spec["userData"])
    assert "instance" not in ours["spec"] and "containerd" in ours["spec"]
    karpenters = {
        "apiVersion": "node.eks.aws/v1alpha1",
        "kind": "NodeConfig",
        "spec": {
            "cluster": {
                "name": "c",
                "apiServerEndpoint": "https://x",
                "certificateAuthority": "Y2E=",
                "cidr": "10.100.0.0/16",
            },
            "instance": {"localStorage": {"strategy": "RAID0"}},
        },
    }
    Draft7Validator(_node_config_schema()).validate(karpenters)
    merged = {**karpenters["spec"], **ours["spec"]}  # disjoint keys: nothing of one overrides the other
    assert set(karpenters["spec"]).isdisjoint(ours["spec"])
    assert (
        merged["instance"]["localStorage"]["strategy"] == "RAID0"
        and "discard_unpacked_layers" in merged["containerd"]["config"]
    )


def test_a_managed_peer_pool_gets_spegels_config_and_raid0_in_one_nodeconfig():
    cfg = copy.deepcopy(stack_config("prod-aws"))
    cfg["gpu-platform:images"]["mirror"] = "peer"
    del cfg["gpu-platform:images"]["pullThrough"]
    (config,) = _node_configs(_launch_template(cfg, "h100-inference").user_data)
    assert config["spec"]["instance"] == {"localStorage": {"strategy": "RAID0"}}
    assert "discard_unpacked_layers = false" in config["spec"]["containerd"]["config"]


def test_raid0_on_a_bottlerocket_release_without_ephemeral_storage_is_refused():
    """Bottlerocket v1.22.0 brought bootstrap commands and apiclient ephemeral-storage (its CHANGELOG); Karpenter's
    RAID0 command is essential, so an older pinned release would fail every boot."""
    import yaml

    from components.spec.model import SpecError

    cfg = yaml.safe_load(COVERAGE.read_text())["config"]
    (i, pool) = next(
        (i, p) for i, p in enumerate(cfg[POOLS]) if p.get("os") == "bottlerocket" and p["provisioner"] == "karpenter"
    )
    pool["karpenter"]["amiVersion"] = "v1.21.1"
    try:
        load_spec(cfg)
        lines = []
    except SpecError as err:
        lines = err.lines("stacks/Pulumi.t.yaml")
    assert [x for x in lines if "amiVersion" in x] == [
        f"stacks/Pulumi.t.yaml: gpu-platform:nodePools[{i}].karpenter.amiVersion: v1.21.1 is a Bottlerocket release "
        "before v1.22.0, which has no bootstrap commands or apiclient ephemeral-storage that "
        "karpenter.instanceStorePolicy RAID0 runs at boot: pin v1.22.0 or later, or set "
        "gpu-platform:karpenter.instanceStorePolicy: none"
    ]
    pool["karpenter"]["amiVersion"] = "v1.22.0"
    load_spec(cfg)
    pool["karpenter"]["amiVersion"] = "v1.21.1"
    cfg.setdefault("gpu-platform:karpenter", {})["instanceStorePolicy"] = "none"
    load_spec(cfg)
