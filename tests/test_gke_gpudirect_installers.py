"""GPUDirect on a GKE cluster gpu-platform creates (issue 40.4): the NCCL plugin installer of each GPUDirect stack and
the NRI device injector that cluster-toolkit v1.95.0 installs with a GPUDirect node pool
(``modules/compute/gke-node-pool/gpu_direct.tf`` ``gpu_direct_manifests``; ``examples/gke-a3-ultragpu`` for RDMA).
Without them NCCL finds no GPUDirect plugin and runs over the primary NIC, with no error.

Expected values are written out from the files at the commits cluster-toolkit pins
(GoogleCloudPlatform/container-engine-accelerators):
* 204a57cb807ec5f4 ``gpudirect-tcpx/nccl-tcpx-installer.yaml``: initContainer image
  ``us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/nccl-plugin-gpudirecttcpx-dev:v3.1.9``, hostPaths /var/lib,
  /var/lib/tcpx, /home/kubernetes/bin (mounted at /usr/local), ``container_entry.sh install --install-nccl``;
* a32cd5152c6ac430 ``gpudirect-tcpxo/nccl-tcpxo-installer.yaml``: a privileged ``pre-installation`` step
  (``nsenter -at 1``, import-helper, the aperture devices), then ``nccl-plugin-gpudirecttcpx-dev:v1.0.15``;
* 209d1af05b157236 ``gpudirect-rdma/nccl-rdma-installer.yaml``: ``nccl-plugin-gib:v1.1.0`` (the gIB version the A3
  Ultra blueprint sets), hostPaths /home/kubernetes/bin/nvidia/lib64 (DirectoryOrCreate) and /home/kubernetes/bin/gib;
* 204a57cb807ec5f4 ``nri_device_injector/nri-device-injector.yaml``: ``gcr.io/gke-release/nri-device-injector@sha256:
  6e79483d...``, hostPaths /dev and /var/run/nri; on TCPX and TCPXO nodes only (the RDMA guide applies none);
all in kube-system at system-node-critical, tolerating every taint, host network and PID, a pinned pause container.
"""

from __future__ import annotations

import copy
from typing import Any

from caching import shared_fixture
from conftest import ROOT, render_config, stack_config
from test_gke_create import coverage_config

from components.cli.loader import load_spec
from components.plan import plan as plan_mod
from components.plan.gcp import plan as gcp_plan

PAUSE = "gke.gcr.io/pause:3.8@sha256:880e63f94b145e46f1b1082bb71b85e21f16b99b180b9996407d61240ceb9830"
NRI = "gcr.io/gke-release/nri-device-injector@sha256:6e79483d52abdc28454bf186320b10a56b0f117a10e8d65d5c74dbb821a76970"


def daemon_sets(r) -> dict[str, dict[str, Any]]:
    return {m["metadata"]["name"]: m for m in r.manifests if m["kind"] == "DaemonSet"}


def pod(ds: dict[str, Any]) -> dict[str, Any]:
    return ds["spec"]["template"]["spec"]


def pools_of(ds: dict[str, Any]) -> list[str]:
    term = pod(ds)["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    (expr,) = term[0]["matchExpressions"]
    assert (expr["key"], expr["operator"]) == ("gpu-platform/pool", "In")
    return expr["values"]


def with_tcpx() -> dict[str, Any]:
    """The coverage stack plus a multi-node A3 High pool (GPUDirect-TCPX; Kubernetes 1.33, below TCPX's bound)."""
    cfg = coverage_config()
    cfg["gpu-platform:nodePools"].append(
        {
            "name": "h100-high",
            "gpu": {"model": "H100", "perNode": 8},
            "instanceTypes": ["a3-highgpu-8g"],
            "capacity": "spot",
            "minNodes": 0,
            "maxNodes": 2,
            "topologyAware": True,
            "gke": {"zones": ["us-central1-a"]},
        }
    )
    cfg["gpu-platform:tenants"][0]["gpuQuota"]["h100-high"] = 16
    return cfg


@shared_fixture
def coverage():
    return daemon_sets(render_config(coverage_config(), "coverage-gcp-create"))


def test_each_gpudirect_stack_gets_its_installer_and_tcpxo_the_injector(coverage):
    # A3 Mega (TCPXO) and A3 Ultra (RDMA): their installers, and the device injector for the TCPXO pool only
    assert {"nccl-tcpxo-installer", "nccl-rdma-installer", "device-injector"} <= set(coverage)
    assert pools_of(coverage["nccl-tcpxo-installer"]) == ["h100-mega"]
    assert pools_of(coverage["nccl-rdma-installer"]) == ["h200-ultra"]
    assert pools_of(coverage["device-injector"]) == ["h100-mega"]


def test_the_tcpxo_installer_is_upstreams(coverage):
    ds = coverage["nccl-tcpxo-installer"]
    assert ds["metadata"]["namespace"] == "kube-system"
    p = pod(ds)
    assert p["priorityClassName"] == "system-node-critical" and p["tolerations"] == [{"operator": "Exists"}]
    assert p["hostNetwork"] is True and p["hostPID"] is True
    assert {v["name"]: v["hostPath"]["path"] for v in p["volumes"]} == {
        "var-lib": "/var/lib",
        "tcpxo": "/var/lib/tcpxo",
        "library-dir-host": "/home/kubernetes/bin",
    }
    pre, install = p["initContainers"]
    assert pre["name"] == "pre-installation" and pre["command"][:5] == ["nsenter", "-at", "1", "--", "sh"]
    assert "modprobe import-helper" in pre["command"][-1] and "1ae0:0084" in pre["command"][-1]
    assert pre["image"] == "docker.io/library/ubuntu:24.04"  # upstream's untagged "ubuntu", held to a release
    assert install["image"] == "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.15"
    assert "/scripts/container_entry.sh install --install-nccl" in install["args"][0]
    assert "cp -r /var/lib/tcpxo/lib64/. /usr/local/nvidia/lib64" in install["args"][0]
    assert {m["name"]: m["mountPath"] for m in install["volumeMounts"]} == {
        "var-lib": "/var/lib",
        "library-dir-host": "/usr/local",
    }
    assert p["containers"] == [{"name": "pause", "image": PAUSE}]


def test_the_rdma_installer_is_upstreams(coverage):
    p = pod(coverage["nccl-rdma-installer"])
    (install,) = p["initContainers"]
    assert install["image"] == "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:v1.1.0"
    assert {v["name"]: v["hostPath"] for v in p["volumes"]} == {
        "library-dir-host": {"path": "/home/kubernetes/bin/nvidia/lib64", "type": "DirectoryOrCreate"},
        "gib": {"path": "/home/kubernetes/bin/gib"},
    }
    assert "cp -r /var/lib/gib/. /usr/local/home/kubernetes/bin/gib" in install["args"][0]


def test_the_device_injector_is_upstreams(coverage):
    p = pod(coverage["device-injector"])
    (c,) = p["containers"]
    assert c["image"] == NRI and c["securityContext"] == {"privileged": True}
    assert {m["mountPath"] for m in c["volumeMounts"]} == {"/dev", "/var/run/nri"}


def test_tcpx_gets_its_installer_and_shares_the_injector():
    ds = daemon_sets(render_config(with_tcpx(), "t"))
    install = pod(ds["nccl-tcpx-installer"])["initContainers"]
    assert [c["image"] for c in install] == [
        "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/nccl-plugin-gpudirecttcpx-dev:v3.1.9"
    ]
    assert pools_of(ds["nccl-tcpx-installer"]) == ["h100-high"]
    assert pools_of(ds["device-injector"]) == ["h100-high", "h100-mega"]  # one injector for TCPX and TCPXO


def test_a_mirror_serves_them_too():
    cfg = coverage_config()
    cfg["gpu-platform:imageRegistry"] = "mirror.example.com/gpu"
    ds = daemon_sets(render_config(cfg, "t"))
    images = [c["image"] for d in ds.values() for c in [*pod(d).get("initContainers", []), *pod(d)["containers"]]]
    assert images and all(i.startswith("mirror.example.com/gpu/") for i in images)


def test_no_gpudirect_pool_no_daemon_set():
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:cluster"]["create"] = {"gke": {"authorizedNetworks": [{"cidr": "198.51.100.0/24"}]}}
    assert daemon_sets(render_config(cfg, "t")) == {}


def test_a_single_node_gpudirect_pool_gets_none():
    cfg = copy.deepcopy(coverage_config())
    for p in cfg["gpu-platform:nodePools"]:
        p["topologyAware"] = False
    assert plan_mod.build(load_spec(cfg), "t").gke.gpudirect_objects == ()


def test_a_found_cluster_keeps_them_its_own():
    found = daemon_sets(render_config(stack_config("prod-gcp"), "prod-gcp"))  # its A3 High pool runs TCPX
    assert not {"nccl-tcpx-installer", "device-injector"} & set(found)


def test_the_plan_names_them():
    text = "\n".join(gcp_plan.text(plan_mod.build(load_spec(coverage_config()), "t").gke))
    assert "GPUDirect DaemonSet kube-system/nccl-tcpxo-installer on h100-mega" in text
    assert "GPUDirect DaemonSet kube-system/device-injector on h100-mega" in text


def test_the_docs_say_it():
    text = " ".join((ROOT / "docs" / "concepts" / "gcp.md").read_text().split())
    assert "NCCL plugin installer" in text and "device-injector" in text
