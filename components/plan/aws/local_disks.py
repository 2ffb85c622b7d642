"""Local NVMe disks as the nodes' ephemeral storage on EKS managed node groups (issue 40; Karpenter nodes get it from
their EC2NodeClass's ``instanceStorePolicy``, ``karpenter_nodes.ec2_node_class_spec``).

A pool whose instance types carry an NVMe instance store (``data/instance_store.py``: p4d 8 TB, p5 30 TB, every g4dn,
g5, g6, g6e) stripes it into one RAID0 volume holding containerd's images, the kubelet's pods and pod logs, so a
multi-GB CUDA image, emptyDir scratch and checkpoints go to the NVMe instead of the root EBS volume; the same thing
Karpenter v1.14.1 renders for ``instanceStorePolicy: RAID0`` (pkg/providers/amifamily/bootstrap/nodeadm.go and
bottlerocket.go), in the user data of the pool's launch template:

* AL2023: nodeadm's NodeConfig ``spec.instance.localStorage.strategy: RAID0`` (awslabs/amazon-eks-ami v20260724
  nodeadm/api/v1alpha1/nodeconfig_types.go ``LocalStorageOptions``; nodeadm runs templates/al2023/runtime/bin/
  setup-local-disks, which binds /var/lib/kubelet, /var/lib/containerd, /var/log/pods and the SOCI store onto the
  array), in the one NodeConfig that also carries the image delivery's settings (``images.al2023_node_config``):
  nodeadm merges it with the one EKS generates.
* Bottlerocket: the bootstrap command Karpenter names ``000-mount-instance-storage``, ``apiclient ephemeral-storage
  init`` then ``bind --dirs /var/lib/containerd /var/lib/kubelet /var/log/pods``, essential, on every boot
  (Bottlerocket v1.22.0 added both bootstrap commands and ephemeral-storage: its CHANGELOG, "Add support for
  bootstrap commands", core-kit v2.4.1; EKS picks a Bottlerocket release for the cluster's Kubernetes version, all
  of them later).

Types without an instance store get nothing: a pool of only such types (g5g) renders no setting. A pool mixing both
gets the setting; on a node without disks both are no-ops that succeed (setup-local-disks: "no NVMe instance storage
disks found!", exit 0; bottlerocket-core-kit sources/api/apiserver/src/server/ephemeral_storage.rs ``initialize``
and ``bind``: "no ephemeral disks found, skipping", Ok), so the boot does not fail. ``eks.instanceStorePolicy: none``
opts a pool out, as ``karpenter.instanceStorePolicy: none`` does Karpenter's nodes.

A Bottlerocket pool booting its data volume from an image snapshot keeps containerd there (``keeps_containerd``).
"""

from __future__ import annotations

from typing import Any

from ...data import catalog
from ...data.instance_store import aws_instance_store_gb
from ...spec.model import NodePool, StackSpec
from .. import derive, images

STRATEGY = "RAID0"
CONTAINERD_DIR = "/var/lib/containerd"
BIND_DIRS = (CONTAINERD_DIR, "/var/lib/kubelet", "/var/log/pods")
# Karpenter v1.14.1 bootstrap/bottlerocket.go: the same name, so a node's settings read the same whoever launched it
BOOTSTRAP_COMMAND = "000-mount-instance-storage"


def instance_store_gb(pool: NodePool) -> int:
    """The smallest NVMe instance store among the pool's instance types (0: some type has none, or no types)."""
    sizes = [aws_instance_store_gb(t) for t in instance_types(pool)]
    return min(sizes) if sizes else 0


def policy(spec: StackSpec, pool: NodePool) -> str:
    """RAID0 or none: the pool's own (managed pools, ``eks.instanceStorePolicy``), else the stack's Karpenter one."""
    return pool.eks.instance_store_policy if pool.provisioner == "managed" else spec.karpenter.instance_store_policy


def stripes(spec: StackSpec, pool: NodePool) -> bool:
    """The pool's nodes stripe their local NVMe disks: opted in and some instance type has them."""
    return (
        spec.cloud == "aws"
        and policy(spec, pool) == STRATEGY
        and any(aws_instance_store_gb(t) for t in instance_types(pool))
    )


def instance_types(pool: NodePool) -> list[str]:
    """The pool's instance types; a Karpenter pool that names none may launch any the catalog has for its GPU."""
    return pool.instance_types or [t.name for t in catalog.aws_instance_types_for(pool.gpu.model)]


def keeps_containerd(spec: StackSpec, pool: NodePool) -> bool:
    """A Bottlerocket pool whose data volume boots from an image snapshot (``images.snapshot_id``): containerd's
    images are on that volume at boot, so /var/lib/containerd stays there; binding the NVMe over it would hide them
    and every image would be pulled again. The kubelet's pods and pod logs still go to the NVMe."""
    return derive.node_os(spec, pool) == "bottlerocket" and images.snapshot_id(spec, pool) is not None


def renders_own(spec: StackSpec, pool: NodePool) -> bool:
    """The pool's user data carries the local disks' setting: every managed pool that stripes, and a Karpenter
    Bottlerocket pool with an image snapshot, whose EC2NodeClass leaves ``instanceStorePolicy`` out (Karpenter's
    command binds /var/lib/containerd: ``karpenter_nodes.ec2_node_class_spec``)."""
    if not stripes(spec, pool):
        return False
    return pool.provisioner == "managed" or keeps_containerd(spec, pool)


def al2023_node_config_spec(spec: StackSpec, pool: NodePool) -> dict[str, Any]:
    """What the NodeConfig's ``spec`` adds for the local disks ({} for none)."""
    if not renders_own(spec, pool) or derive.node_os(spec, pool) != "al2023":
        return {}
    return {"instance": {"localStorage": {"strategy": STRATEGY}}}


def bottlerocket_settings(spec: StackSpec, pool: NodePool) -> dict[str, Any]:
    """What the Bottlerocket settings add for the local disks ({} for none): ``settings.bootstrap-commands``."""
    if not renders_own(spec, pool) or derive.node_os(spec, pool) != "bottlerocket":
        return {}
    dirs = [d for d in BIND_DIRS if not (d == CONTAINERD_DIR and keeps_containerd(spec, pool))]
    bind = ["apiclient", "ephemeral-storage", "bind", "--dirs", *dirs]
    command = {"commands": [["apiclient", "ephemeral-storage", "init"], bind], "essential": True, "mode": "always"}
    return {"bootstrap-commands": {BOOTSTRAP_COMMAND: command}}


def summary(spec: StackSpec, pool: NodePool) -> str | None:
    """The plan's words for it, or None."""
    if not stripes(spec, pool):
        return None
    gb = instance_store_gb(pool)
    size = f"{gb} GB" if gb else "where the instance type has them"
    held = (
        "kubelet, pod logs (containerd on the snapshot volume)"
        if keeps_containerd(spec, pool)
        else ("containerd, kubelet, pod logs")
    )
    return f"local NVMe RAID0 ({size}) for {held}"
