"""What a GPUDirect node needs on a cluster gpu-platform creates (issue 40.4): the NCCL plugin installer of its stack
and, for TCPX and TCPXO, the NRI device injector. Without them a pod attached to the GPU networks finds no GPUDirect
NCCL plugin (and, on TCPX/TCPXO, no devices for the receive datapath manager), and NCCL silently falls back to
sockets over the primary NIC.

cluster-toolkit v1.95.0 installs them with a GPUDirect node pool (``modules/compute/gke-node-pool/gpu_direct.tf``:
``gpu_direct_manifests`` per machine type; the A3 Ultra blueprint ``examples/gke-a3-ultragpu`` the gIB installer).
Each DaemonSet here is the file at the commit ``versions.GPUDIRECT_INSTALLERS`` / ``versions.NRI_DEVICE_INJECTOR``
names, with three changes, each for a reason:

* the node affinity selects the stack's GPUDirect pools by ``gpu-platform/pool`` instead of every node of the GKE
  accelerator (an ``a3-highgpu-1g`` node has the same accelerator and no GPUDirect NICs);
* images come through ``imageRegistry`` like every image the platform sets, and TCPXO's pre-installation step runs
  ``ubuntu:24.04`` instead of the untagged ``ubuntu``;
* the objects carry the platform's managed-by label.

A found cluster's are still the user's to apply (docs/concepts/gcp.md): it may already run them under these names.

Pure: the spec in, manifests out (no pulumi).
"""

from __future__ import annotations

from typing import Any

from ...data import versions
from ...spec.model import StackSpec
from .. import derive
from . import cluster_create

NAMESPACE = "kube-system"  # upstream's; system-node-critical pods are admitted there without a quota on GKE
NRI_STACKS = ("GPUDirect-TCPX", "GPUDirect-TCPXO")  # the TCPX(O) receive datapath needs the injected devices


def pools_by_stack(spec: StackSpec) -> dict[str, list[str]]:
    """GPUDirect stack -> the created cluster's pools running it (over the created networks or their own)."""
    if cluster_create.gke_create(spec) is None:
        return {}
    out: dict[str, list[str]] = {}
    for pool in spec.node_pools:
        stack = cluster_create.gpudirect_stack(pool)
        if stack is not None and cluster_create.uses_gpudirect(spec, pool):
            out.setdefault(stack, []).append(pool.name)
    return {k: sorted(v) for k, v in sorted(out.items())}


def _affinity(pools: list[str]) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": derive.POOL_LABEL, "operator": "In", "values": pools}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def _host_path(name: str, path: str, kind: str | None = None) -> dict[str, Any]:
    return {"name": name, "hostPath": {"path": path, **({"type": kind} if kind else {})}}


def _daemon_set(name: str, source: str, pools: list[str], pod: dict[str, Any]) -> dict[str, Any]:
    labels = {"k8s-app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {**labels, **derive.MANAGED_BY},
            "annotations": {"gpu-platform/source": source},
        },
        "spec": {
            "selector": {"matchLabels": labels},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": {"name": name, **labels}},
                "spec": {
                    "priorityClassName": "system-node-critical",
                    "affinity": _affinity(pools),
                    "tolerations": [{"operator": "Exists"}],
                    "hostNetwork": True,
                    "hostPID": True,
                    **pod,
                },
            },
        },
    }


def _installer_container(image: str, mounts: list[tuple[str, str]], script: str) -> dict[str, Any]:
    return {
        "name": "",  # set by the caller
        "image": image,
        "resources": {"requests": {"cpu": "150m"}},
        "securityContext": {"privileged": True},
        "volumeMounts": [{"name": n, "mountPath": p} for n, p in mounts],
        "command": ["/bin/sh", "-c"],
        "args": [script],
    }


# The installers' scripts, as the files at the pinned commits run them.
_TCPX_SCRIPT = (
    "set -ex\n/scripts/container_entry.sh install --install-nccl\nmkdir -p /usr/local/nvidia/lib64\n"
    'cp -r /var/lib/tcpx/lib64/. /usr/local/nvidia/lib64\necho "installation finishes"\n'
)
_TCPXO_SCRIPT = (
    "set -ex\nchmod 755 /scripts/container_entry.sh\n/scripts/container_entry.sh install --install-nccl\n"
    "mkdir -p /usr/local/nvidia/lib64\ncp -r /var/lib/tcpxo/lib64/. /usr/local/nvidia/lib64\n"
    'echo "installation finishes"\n'
)
_TCPXO_PRE = """/sbin/iptables -I INPUT -p tcp -m tcp -j ACCEPT && modprobe import-helper
sudo mkdir -p /dev/aperture_devices
while IFS= read -r line; do
  BDF=$( echo "$line" | awk '{print $1}' );
  target_aperture_path="/dev/aperture_devices/$BDF"
  host_aperture_device=$(readlink -f "/sys/bus/pci/devices/$BDF");
  sudo mkdir -p $target_aperture_path;
  sudo umount -R $target_aperture_path;
  sudo mount --bind $host_aperture_device $target_aperture_path;
done < <(lspci -nn -D | grep '1ae0:0084')
if [ -d /dev/aperture_devices ]; then
    chmod -R a+r /dev/aperture_devices/
    chmod a+rw /dev/aperture_devices/*/resource*
fi
"""
_RDMA_SCRIPT = (
    "set -ex\n/scripts/container_entry.sh install --install-nccl\n"
    "cp -r /var/lib/gib/lib64/. /usr/local/home/kubernetes/bin/nvidia/lib64\n"
    'cp -r /var/lib/gib/. /usr/local/home/kubernetes/bin/gib\necho "installation finishes"\n'
)


def installer(spec: StackSpec, stack: str, pools: list[str]) -> dict[str, Any]:
    """The NCCL plugin installer DaemonSet of ``stack`` on ``pools``."""
    pinned = versions.GPUDIRECT_INSTALLERS[stack]
    image = versions.image(pinned["image"], spec.image_registry)
    pause = {"name": "pause", "image": versions.image(versions.GKE_PAUSE_IMAGE, spec.image_registry)}
    if stack == "GPUDirect-RDMA":
        name = "nccl-rdma-installer"
        volumes = [
            _host_path("library-dir-host", "/home/kubernetes/bin/nvidia/lib64", "DirectoryOrCreate"),
            _host_path("gib", "/home/kubernetes/bin/gib"),
        ]
        mounts = [
            ("library-dir-host", "/usr/local/home/kubernetes/bin/nvidia/lib64"),
            ("gib", "/usr/local/home/kubernetes/bin/gib"),
        ]
        inits = [{**_installer_container(image, mounts, _RDMA_SCRIPT), "name": name}]
    else:
        short = "tcpx" if stack == "GPUDirect-TCPX" else "tcpxo"
        name = f"nccl-{short}-installer"
        volumes = [
            _host_path("var-lib", "/var/lib"),
            _host_path(short, f"/var/lib/{short}"),
            _host_path("library-dir-host", "/home/kubernetes/bin"),
        ]
        mounts = [("var-lib", "/var/lib"), ("library-dir-host", "/usr/local")]
        script = _TCPX_SCRIPT if short == "tcpx" else _TCPXO_SCRIPT
        inits = [{**_installer_container(image, mounts, script), "name": name}]
        if short == "tcpxo":
            pre = {
                "name": "pre-installation",
                "image": versions.image(pinned["pre_image"], spec.image_registry),
                "securityContext": {"privileged": True},
                "command": ["nsenter", "-at", "1", "--", "sh", "-c", _TCPXO_PRE],
            }
            inits = [pre, *inits]
    pod = {"volumes": volumes, "initContainers": inits, "containers": [pause]}
    return _daemon_set(name, pinned["source"], pools, pod)


def device_injector(spec: StackSpec, pools: list[str]) -> dict[str, Any]:
    """The NRI device injector on the TCPX / TCPXO pools (it injects the devices the pods' annotations ask for)."""
    container = {
        "name": "device-injector",
        "image": versions.image(versions.NRI_DEVICE_INJECTOR["image"], spec.image_registry),
        "resources": {"requests": {"cpu": "150m"}},
        "securityContext": {"privileged": True},
        "volumeMounts": [{"name": "dev", "mountPath": "/dev"}, {"name": "nri", "mountPath": "/var/run/nri"}],
    }
    pod = {
        "containers": [container],
        "volumes": [_host_path("root", "/"), _host_path("nri", "/var/run/nri"), _host_path("dev", "/dev")],
    }
    return _daemon_set("device-injector", versions.NRI_DEVICE_INJECTOR["source"], pools, pod)


def manifests(spec: StackSpec) -> list[dict[str, Any]]:
    """Every GPUDirect DaemonSet the created cluster needs: one installer per stack, one injector for TCPX/TCPXO."""
    by_stack = pools_by_stack(spec)
    out = [installer(spec, stack, pools) for stack, pools in by_stack.items()]
    nri_pools = sorted(p for s in NRI_STACKS for p in by_stack.get(s, []))
    if nri_pools:
        out.append(device_injector(spec, nri_pools))
    return out
