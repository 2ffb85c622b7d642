"""What the anchors give GKE GPU nodes (issue 40, "what the anchors give"): local SSDs as ephemeral storage, DWS
flex-start with a maximum run duration, NCCL's TCP buffer sysctls. Each is a node pool field of the GKE API, set
from the stack with a default and an opt-out; expected values are written out from their sources:

* ``nodeConfig.ephemeralStorageLocalSsdConfig.localSsdCount`` (GKE API EphemeralStorageLocalSsdConfig): the local
  SSDs a machine comes with, cluster-toolkit v1.95.0 ``modules/compute/gke-node-pool/disk_definitions.tf``
  (a3-highgpu-8g 16, a3-megagpu-8g 16, a3-ultragpu-8g 32, a4-highgpu-8g 32) and Compute Engine's GPU machine table
  (a2-ultragpu-Ng: N x 375 GB); A2 Standard and G2 come with none.
* ``nodeConfig.flexStart`` / ``nodeConfig.maxRunDuration`` ("<seconds>s"): cluster-toolkit gke-node-pool main.tf
  (``flex_start = var.enable_flex_start``, ``max_run_duration = "${var.max_run_duration}s"``) and its checks:
  auto_repair false, no static nodes, NO_RESERVATION, not spot, compact placement only on A3 Ultra / A4.
* ``nodeConfig.linuxNodeConfig.sysctls``: gke-node-pool variables.tf ``linux_node_config`` default
  ``net.ipv4.tcp_rmem = "4096 87380 16777216"``, ``net.ipv4.tcp_wmem = "4096 16384 16777216"``.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT, render_config, stack_config

from components.cli import main as cli
from components.cli.loader import load_spec
from components.plan.gcp import plan as gcp_plan

NODE_POOL = "gcp:container/nodePool:NodePool"
SYSCTLS = {"net.ipv4.tcp_rmem": "4096 87380 16777216", "net.ipv4.tcp_wmem": "4096 16384 16777216"}


def dev_with(**pool: Any) -> dict[str, Any]:
    """dev-gcp with its first pool (l4-shared) changed by ``pool``."""
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:nodePools"][0].update(pool)
    return cfg


def one_pool(machine: str, model: str, per_node: int, **gke: Any) -> dict[str, Any]:
    return dev_with(
        gpu={"model": model, "perNode": per_node},
        instanceTypes=[machine],
        capacity="on-demand",
        sharing=None,
        gke=gke,
    )


def node_config(cfg: dict[str, Any], pool: str = "l4-shared") -> dict[str, Any]:
    return gcp_plan.node_config(load_spec(cfg), next(p for p in load_spec(cfg).node_pools if p.name == pool))


def check(cfg: dict[str, Any], tmp_path: Path, capsys) -> tuple[int, str]:
    path = tmp_path / "Pulumi.bad.yaml"
    cfg = {k: v for k, v in cfg.items()}
    for p in cfg["gpu-platform:nodePools"]:
        if p.get("sharing") is None:
            p.pop("sharing", None)
    path.write_text(yaml.safe_dump({"config": cfg}))
    rc = cli.main(["check", "bad", "--config", str(path)])
    return rc, capsys.readouterr().err


# ------------------------------------------------------------------------------------------- local SSDs


@pytest.mark.parametrize(
    ("machine", "model", "gpus", "ssds"),
    [
        ("a3-highgpu-8g", "H100", 8, 16),
        ("a3-megagpu-8g", "H100", 8, 16),
        ("a3-ultragpu-8g", "H200", 8, 32),
        ("a4-highgpu-8g", "B200", 8, 32),
        ("a2-ultragpu-1g", "A100-80GB", 1, 1),
        ("a2-ultragpu-8g", "A100-80GB", 8, 8),
        ("a2-highgpu-8g", "A100-40GB", 8, None),  # local SSDs on A2 Standard are an extra purchase
        ("g2-standard-8", "L4", 1, None),
    ],
)
def test_a_machines_bundled_local_ssds_back_its_ephemeral_storage(machine, model, gpus, ssds):
    cfg = one_pool(machine, model, gpus)
    got = node_config(cfg).get("ephemeralStorageLocalSsdConfig")
    assert got == ({"localSsdCount": ssds} if ssds else None)


def test_local_ssds_opt_out():
    cfg = one_pool("a3-highgpu-8g", "H100", 8, localSsdEphemeralStorage=False)
    assert "ephemeralStorageLocalSsdConfig" not in node_config(cfg)


def test_the_node_pool_resource_carries_them():
    cfg = one_pool("a3-megagpu-8g", "H100", 8)
    inputs = render_config(cfg, "t").find(NODE_POOL, "gke-l4-shared").inputs
    assert inputs["nodeConfig"]["ephemeralStorageLocalSsdConfig"] == {"localSsdCount": 16}


def test_local_ssds_asked_of_a_machine_without_any_is_one_line(tmp_path, capsys):
    rc, err = check(one_pool("g2-standard-8", "L4", 1, localSsdEphemeralStorage=True), tmp_path, capsys)
    assert rc == 2
    assert "gpu-platform:nodePools[0].gke.localSsdEphemeralStorage: g2-standard-8 comes with no local SSDs" in err


# ------------------------------------------------------------------------------------------- flex-start


def flex(**gke: Any) -> dict[str, Any]:
    return one_pool("a3-highgpu-8g", "H100", 8, flexStart=True, **gke)


def test_a_flex_start_pool():
    cfg = flex(maxRunDuration=86400)
    inputs = render_config(cfg, "t").find(NODE_POOL, "gke-l4-shared").inputs
    assert inputs["nodeConfig"]["flexStart"] is True
    assert inputs["nodeConfig"]["maxRunDuration"] == "86400s"
    assert inputs["management"] == {"autoRepair": False, "autoUpgrade": True}
    assert inputs["autoscaling"]["locationPolicy"] == "ANY"
    assert inputs["initialNodeCount"] == 0


def test_no_flex_start_no_fields():
    cfg = one_pool("a3-highgpu-8g", "H100", 8)
    n = node_config(cfg)
    assert "flexStart" not in n and "maxRunDuration" not in n


@pytest.mark.parametrize(
    ("change", "at", "words"),
    [
        ({"minNodes": 1}, "nodePools[0].minNodes", "flex-start needs minNodes 0"),
        ({"capacity": "spot"}, "nodePools[0].capacity", "flex-start is its own capacity: not spot"),
        (
            {"gke": {"flexStart": True, "reservation": "any"}},
            "nodePools[0].gke.reservation",
            "flex-start does not consume reservations",
        ),
        (
            {"gke": {"flexStart": True, "compactPlacement": True, "zones": ["us-central1-a"]}},
            "nodePools[0].gke.compactPlacement",
            "only on A3 Ultra and A4",
        ),
        ({"gke": {"flexStart": True, "maxRunDuration": 604801}}, "nodePools[0].gke.maxRunDuration", "at most"),
    ],
)
def test_flex_start_rules(change, at, words, tmp_path, capsys):
    cfg = flex()
    cfg["gpu-platform:nodePools"][0].update(copy.deepcopy(change))
    rc, err = check(cfg, tmp_path, capsys)
    assert rc == 2, err
    line = next((x for x in err.splitlines() if f"gpu-platform:{at}:" in x), "")
    assert words in line, err


def test_compact_flex_start_on_a3_ultra_is_accepted(tmp_path, capsys):
    cfg = one_pool("a3-ultragpu-8g", "H200", 8, flexStart=True, compactPlacement=True, zones=["us-central1-b"])
    assert check(cfg, tmp_path, capsys)[0] == 0


def test_a3_high_small_sells_as_flex_start(tmp_path, capsys):
    rc, err = check(one_pool("a3-highgpu-2g", "H100", 2, flexStart=True), tmp_path, capsys)
    assert rc == 0, err


# ------------------------------------------------------------------------------------------- sysctls


def test_only_multi_node_pools_get_nccls_tcp_buffers_by_default():
    """prod-gcp's h100-train is topologyAware with GPUDirect networks (stacks/Pulumi.prod-gcp.yaml): NCCL talks
    between its nodes. The single-node pools of prod-gcp and dev-gcp keep the kernel's buffers, so the default
    rolls no deployed pool that gains nothing from it."""
    with_buffers = {
        stack: sorted(
            p.name
            for p in load_spec(stack_config(stack)).node_pools
            if gcp_plan.node_config(load_spec(stack_config(stack)), p).get("linuxNodeConfig") == {"sysctls": SYSCTLS}
        )
        for stack in ("dev-gcp", "prod-gcp")
    }
    assert with_buffers == {"dev-gcp": [], "prod-gcp": ["h100-train"]}


def test_sysctls_opt_in_and_out():
    assert node_config(dev_with(gke={"ncclTcpSysctls": True}))["linuxNodeConfig"] == {"sysctls": SYSCTLS}
    assert "linuxNodeConfig" not in node_config(dev_with(gke={"ncclTcpSysctls": False}))
    assert "linuxNodeConfig" not in node_config(dev_with(topologyAware=True, gke={"ncclTcpSysctls": False}))


def test_a_topology_aware_pool_gets_the_buffers_by_default():
    assert node_config(dev_with(topologyAware=True))["linuxNodeConfig"] == {"sysctls": SYSCTLS}


def test_the_node_pool_resource_carries_the_sysctls():
    cfg = stack_config("prod-gcp")
    inputs = render_config(cfg, "prod-gcp").find(NODE_POOL, "gke-h100-train").inputs
    assert inputs["nodeConfig"]["linuxNodeConfig"] == {"sysctls": SYSCTLS}


# ------------------------------------------------------------------------------------------- plan and docs


def test_the_plan_shows_each():
    cfg = flex(maxRunDuration=3600, ncclTcpSysctls=True)
    text = "\n".join(gcp_plan.text(gcp_plan.build(load_spec(cfg))))
    line = next(x for x in text.splitlines() if x.startswith("  l4-shared:"))
    assert "flex-start; max run 3600s; 16 local SSDs as ephemeral storage; NCCL TCP sysctls" in line


def test_the_docs_name_each_key_and_default():
    text = " ".join((ROOT / "docs" / "concepts" / "gcp.md").read_text().split())
    for words in ("gke.localSsdEphemeralStorage", "gke.flexStart", "gke.maxRunDuration", "gke.ncclTcpSysctls"):
        assert words in text
