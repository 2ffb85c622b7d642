"""What every EKS managed node group of a stack looks like, as plain data: AMI type, scaling, taints,
labels, Cluster Autoscaler tags, the launch template's disks, IMDS and user data, and names.

No cloud SDK and no pulumi here: ``nodegroups.py`` turns these into resources, ``rules.py`` checks the
stack against the limits of the EKS and EC2 APIs with them, and tests read them directly. Dicts meant as
resource arguments use the SDK's snake_case keys; the engine (and the offline synth) sees camelCase.

Facts this module relies on:

* EKS ``amiType`` values for NVIDIA GPUs (EKS API ``Nodegroup.amiType``; the case is part of the value):
  ``AL2023_x86_64_NVIDIA``, ``AL2023_ARM_64_NVIDIA`` (Graviton GPU types such as g5g),
  ``BOTTLEROCKET_x86_64_NVIDIA``, ``BOTTLEROCKET_ARM_64_NVIDIA``. Both AMI families ship the NVIDIA driver
  and container toolkit, for x86_64 and arm64 alike.
* EKS node group limits (EKS API ``CreateNodegroup`` / ``Taint`` / ``UpdateLabelsPayload``): label keys
  and values 1-63 characters, taint keys 1-63 and values 0-63, at most 50 taints, at most 50 tags, at
  most 20 instance types.
* A launch template used by a managed node group must not name a subnet, an IAM instance profile or a
  shutdown behaviour, and names no AMI here (EKS then picks the AMI from ``amiType`` and merges its
  bootstrap user data with ours); instance types go on the node group, not the template.
* AWS tags: keys at most 128 characters, values at most 256, the ``aws:`` prefix is reserved.
* Cluster Autoscaler (AWS provider, ``aws_manager.go``): for a managed node group at zero nodes it
  takes labels and taints from ``eks:DescribeNodegroup`` and extra resources from the node group's
  ``k8s.io/cluster-autoscaler/node-template/resources/<name>`` tags (those override what it derives from
  the instance type, e.g. ``nvidia.com/gpu`` = the instance's GPU count). The ``.../label/`` and
  ``.../taint/`` tags are read from the Auto Scaling group; they are kept on the node group too, so a
  stack that copies tags to the ASG (or an older autoscaler) sees the same template.
* Root devices: AL2023 keeps everything on ``/dev/xvda``; Bottlerocket has a small OS volume
  ``/dev/xvda`` and puts images, logs and pod storage on its data volume ``/dev/xvdb``.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from ...data import catalog
from ...spec.model import NodePool, StackSpec, Taint
from .. import derive, images, sharing, yaml_text
from . import ecr_mirror, efa, local_disks

MANAGED_BY_TAG = {"managed-by": "gpu-platform"}
POOL_TAG = derive.POOL_LABEL  # "gpu-platform/pool" on every AWS object of a pool

AMI_TYPES: dict[tuple[str, str], str] = {
    ("al2023", "x86_64"): "AL2023_x86_64_NVIDIA",
    ("al2023", "arm64"): "AL2023_ARM_64_NVIDIA",
    ("bottlerocket", "x86_64"): "BOTTLEROCKET_x86_64_NVIDIA",
    ("bottlerocket", "arm64"): "BOTTLEROCKET_ARM_64_NVIDIA",
}
CAPACITY_TYPES = {"on-demand": "ON_DEMAND", "spot": "SPOT"}
EKS_TAINT_EFFECTS = {"NoSchedule": "NO_SCHEDULE", "NoExecute": "NO_EXECUTE", "PreferNoSchedule": "PREFER_NO_SCHEDULE"}

# Node group updates (new AMI release, launch template version) replace one node at a time: GPU pools
# are small and each node is a large share of their capacity (one p5.48xlarge is 8 H100s), so a
# percentage would either round to one node anyway or take out too much at once. Each node is drained
# first (PodDisruptionBudgets are honoured for up to 15 minutes).
MAX_UNAVAILABLE = 1
UPDATE_STRATEGIES = {"minimal": "MINIMAL", "default": "DEFAULT"}

# gp3 for GPU nodes: CUDA and framework images are 10-20 GB, and gp3's baseline 125 MiB/s makes a cold
# pull take minutes; 500 MiB/s (within gp3's 0.25 MiB/s per provisioned IOPS at the 3000 baseline)
# costs a small fraction of one GPU hour per month. Same figures as the Karpenter EC2NodeClasses.
VOLUME_TYPE = "gp3"
VOLUME_IOPS = 3000
VOLUME_THROUGHPUT = 500
ROOT_DEVICE = "/dev/xvda"
BOTTLEROCKET_DATA_DEVICE = "/dev/xvdb"

CA_PREFIX = "k8s.io/cluster-autoscaler"
CA_TEMPLATE = f"{CA_PREFIX}/node-template"

# EKS and AWS API limits (see the module docstring).
EKS_LABEL_MAX = 63
EKS_TAINT_MAX = 63
EKS_MAX_TAINTS = 50
EKS_MAX_TAGS = 50
EKS_MAX_INSTANCE_TYPES = 20  # instanceTypes of one node group (EKS user guide, launch templates)
EKS_MAX_NODES = 450  # nodes per managed node group (EKS user guide, service quotas; not adjustable)
AWS_TAG_KEY_MAX = 128
AWS_TAG_VALUE_MAX = 256
IAM_ROLE_NAME_MAX = 64
NODE_ROLE_SUFFIX = "-gpu-node"


# ------------------------------------------------------------------------------------------- pools


def managed_pools(spec: StackSpec) -> list[NodePool]:
    """Pools that become EKS managed node groups (aws stacks, ``provisioner: managed``)."""
    if spec.cloud != "aws":
        return []
    return [p for p in spec.node_pools if p.provisioner == "managed"]


def arch(pool: NodePool) -> str:
    """The pool's CPU architecture (EC2 spelling). The rules guarantee one known arch per pool."""
    arches = {t.arch for name in pool.instance_types if (t := catalog.aws_instance_type(name)) is not None}
    if len(arches) != 1:
        raise ValueError(f"pool {pool.name}: instance types must share one architecture, got {sorted(arches)}")
    return arches.pop()


def ami_type(spec: StackSpec, pool: NodePool) -> str:
    return AMI_TYPES[(derive.node_os(spec, pool), arch(pool))]


def scaling(pool: NodePool) -> dict[str, int]:
    """min / desired / max; desired starts at min unless given (the autoscaler owns it afterwards)."""
    desired = pool.desired_nodes if pool.desired_nodes is not None else pool.min_nodes
    return {"min_size": pool.min_nodes, "desired_size": desired, "max_size": pool.node_cap}


def subnet_ids(spec: StackSpec, pool: NodePool) -> list[str] | None:
    """The pool's own subnets, else the stack's (``cluster.subnetIds``); None: the cluster's subnets
    (its ``vpcConfig.subnetIds``, as looked up)."""
    chosen = pool.eks.subnet_ids or spec.cluster.subnet_ids
    return sorted(chosen) if chosen else None


def update_config(pool: NodePool) -> dict[str, Any]:
    return {"max_unavailable": MAX_UNAVAILABLE, "update_strategy": UPDATE_STRATEGIES[pool.eks.update_strategy]}


def eks_taint(t: Taint) -> dict[str, str]:
    out = {"key": t.key, "effect": EKS_TAINT_EFFECTS[t.effect]}
    if t.value is not None:
        out["value"] = t.value
    return out


def eks_taints(pool: NodePool) -> list[dict[str, str]]:
    """The GPU taint and the pool's own, in EKS' effect spelling (derive.pool_taints)."""
    return [eks_taint(t) for t in derive.pool_taints(pool)]


# The Cluster Autoscaler's AWS GPU label (cloudprovider/aws/aws_cloud_provider.go GPULabel, 1.35.0). A node
# carrying it counts as a GPU node: until its device plugin advertises nvidia.com/gpu the autoscaler treats
# it as still starting instead of as a node that cannot fit the pending pod, and so does not scale the
# group out again for the same pod (cloudprovider/aws/README.md, "Special note on GPU instances"; the label
# must be on the node when it joins, which EKS does for node group labels through the kubelet's
# --node-labels). Its value is the GPU type; the autoscaler only uses it for metrics and --gpu-total
# limits, matching its list availableGPUTypes (nvidia-tesla-k80/p100/v100/t4/a100).
ACCELERATOR_LABEL = "k8s.amazonaws.com/accelerator"
_CA_GPU_TYPES = {"T4": "nvidia-tesla-t4", "A100-40GB": "nvidia-tesla-a100", "A100-80GB": "nvidia-tesla-a100"}


def accelerator_type(pool: NodePool) -> str:
    """``nvidia-tesla-t4`` / ``nvidia-tesla-a100`` where the autoscaler lists the model, else
    ``nvidia-<model>`` (``nvidia-l4``, ``nvidia-h100``), the form of the README's example."""
    return _CA_GPU_TYPES.get(pool.gpu.model, f"nvidia-{pool.gpu.model.lower()}")


def carries_accelerator_label(spec: StackSpec, pool: NodePool) -> bool:
    """Only pools whose nodes advertise ``nvidia.com/gpu``. The autoscaler holds a node with the label but no
    GPU allocatable (any of nvidia.com/gpu, amd.com/gpu, ...) for "unready" for as long as that lasts
    (processors/customresources/gpu_processor.go FilterOutNodesWithUnreadyResources, 1.35.0): nodes of a
    mixed-MIG pool (nvidia.com/mig-* only) or of a renameByDefault sharing pool (nvidia.com/gpu.shared only)
    would stay unready forever, count against --max-total-unready-percentage and become scale-down
    candidates as unready nodes."""
    return derive.GPU_RESOURCE in derive.units_per_gpu(spec, pool)


def labels(spec: StackSpec, pool: NodePool) -> dict[str, str]:
    """The pool's labels (``derive.pool_labels``) plus the autoscaler's GPU label where it is safe."""
    out = derive.pool_labels(spec, pool)
    if carries_accelerator_label(spec, pool):
        out[ACCELERATOR_LABEL] = accelerator_type(pool)
    return dict(sorted(out.items()))


def node_resources(spec: StackSpec, pool: NodePool) -> dict[str, int]:
    """Extended resources one node of the pool advertises, as pods request them.

    The autoscaler's template otherwise has ``nvidia.com/gpu`` = the instance type's GPU count, which is
    wrong whenever the pool shares its GPUs: time-slicing and MPS advertise ``replicas`` units per GPU
    (as ``nvidia.com/gpu.shared`` with renameByDefault), MIG advertises its slices. When the pool
    advertises no ``nvidia.com/gpu`` at all, the template says 0 so a pod asking for whole GPUs never
    scales this pool up.
    """
    out = derive.pool_units(spec, pool, pool.gpu.per_node)
    out.setdefault(derive.GPU_RESOURCE, 0)
    return dict(sorted(out.items()))


def autoscaler_tags(spec: StackSpec, pool: NodePool) -> dict[str, str]:
    """Cluster Autoscaler discovery and scale-from-zero template tags of the pool's node group."""
    tags = {
        f"{CA_PREFIX}/enabled": "true",
        f"{CA_PREFIX}/{spec.cluster.name}": "owned",
    }
    for name, value in labels(spec, pool).items():
        tags[f"{CA_TEMPLATE}/label/{name}"] = value
    for t in derive.pool_taints(pool):
        tags[f"{CA_TEMPLATE}/taint/{t.key}"] = f"{t.value or ''}:{t.effect}"
    for name, n in node_resources(spec, pool).items():
        tags[f"{CA_TEMPLATE}/resources/{name}"] = str(n)
    if efa.efa_enabled(spec, pool):
        # The autoscaler's template knows only pods, cpu, memory and nvidia.com/gpu from the instance type
        # (cluster-autoscaler cloudprovider/aws aws_manager.go buildNodeFromTemplate) plus these tags: without
        # this one a pod asking for vpc.amazonaws.com/efa never scales an EFA pool up from zero.
        tags[f"{CA_TEMPLATE}/resources/{efa.EFA_RESOURCE}"] = str(efa.interfaces_per_node(pool))
    return dict(sorted(tags.items()))


# -------------------------------------------------------------------------------------------- tags


def base_tags(spec: StackSpec) -> dict[str, str]:
    """Tags of every AWS object gpu-platform creates: the stack's tags plus managed-by."""
    return dict(sorted({**spec.tags, **MANAGED_BY_TAG}.items()))


def node_group_tags(spec: StackSpec, pool: NodePool) -> dict[str, str]:
    return dict(sorted({**base_tags(spec), POOL_TAG: pool.name, **autoscaler_tags(spec, pool)}.items()))


def instance_tags(spec: StackSpec, pool: NodePool) -> dict[str, str]:
    """Tags of the pool's instances and volumes (node group tags do not propagate to them)."""
    name = f"{spec.cluster.name}-{pool.name}"
    return dict(sorted({**base_tags(spec), POOL_TAG: pool.name, "Name": name}.items()))


# ---------------------------------------------------------------------------------------- IAM, names


def node_role_name(spec: StackSpec) -> str:
    """The one node role of the stack's managed node groups."""
    return f"{spec.cluster.name}{NODE_ROLE_SUFFIX}"


def launch_template_name(spec: StackSpec, pool: NodePool) -> str:
    return f"{spec.cluster.name}-gpu-{pool.name}"


def node_group_name_prefix(pool: NodePool) -> str:
    """EKS appends a unique suffix, so a replaced node group (new instance types, AMI type, subnets) is
    created before the old one is drained and deleted, without a name clash."""
    return f"{pool.name}-"


# ---------------------------------------------------------------------------------- launch template


def _gp3(size_gib: int | None, fast: bool = True) -> dict[str, Any]:
    ebs: dict[str, Any] = {"delete_on_termination": "true", "encrypted": "true", "volume_type": VOLUME_TYPE}
    if size_gib is not None:
        ebs["volume_size"] = size_gib
    if fast:
        ebs["iops"] = VOLUME_IOPS
        ebs["throughput"] = VOLUME_THROUGHPUT
    return ebs


def block_device_mappings(spec: StackSpec, pool: NodePool) -> list[dict[str, Any]]:
    """Encrypted gp3 volumes: ``disk_gib`` on the volume that holds images and pod storage.

    Bottlerocket's OS volume keeps the AMI's size (the snapshot's) and is only read at boot, but is
    encrypted too: accounts without EBS encryption by default would otherwise get it in the clear.

    Image delivery (``components/plan/images.py``): a Bottlerocket pool with an ``imageCache.snapshotId`` restores its
    data volume from that snapshot, initialized at the provisioned rate; such a volume takes its encryption from the
    snapshot (a launch template's ``encrypted`` cannot go with ``snapshot_id``: pulumi_aws 7.51.1
    LaunchTemplateBlockDeviceMappingEbs), so the snapshot must be of an encrypted volume. An AL2023 pool with
    FastImagePull gets the throughput nodeadm recommends for it.
    """
    if derive.node_os(spec, pool) == "bottlerocket":
        data = _gp3(pool.disk_gib)
        snapshot = images.snapshot_id(spec, pool)
        if snapshot is not None:
            del data["encrypted"]
            data.update(snapshot_id=snapshot, volume_initialization_rate=images.SNAPSHOT_INIT_MIB_S)
        return [
            {"device_name": ROOT_DEVICE, "ebs": _gp3(None, fast=False)},
            {"device_name": BOTTLEROCKET_DATA_DEVICE, "ebs": data},
        ]
    root = _gp3(pool.disk_gib)
    if images.fast_pull(spec, pool):
        root.update(iops=images.FAST_PULL_IOPS, throughput=images.FAST_PULL_THROUGHPUT)
    return [{"device_name": ROOT_DEVICE, "ebs": root}]


def metadata_options(pool: NodePool) -> dict[str, Any]:
    """IMDSv2 only (session tokens required), endpoint on; hop limit from ``eks.imdsHopLimit``."""
    return {
        "http_endpoint": "enabled",
        "http_tokens": "required",
        "http_put_response_hop_limit": pool.eks.imds_hop_limit,
        "instance_metadata_tags": "disabled",
    }


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)  # a TOML basic string for the plain ASCII values used here
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"  # a TOML array (of arrays) of such values
    raise TypeError(f"no TOML rendering for {v!r}")


def _toml_tables(prefix: str, table: dict[str, Any], out: list[str]) -> None:
    scalars = {k: v for k, v in table.items() if not isinstance(v, dict)}
    if scalars:
        out.append(f"[{prefix}]")
        out.extend(f"{k} = {_toml_value(v)}" for k, v in sorted(scalars.items()))
        out.append("")
    for k, v in sorted(table.items()):
        if isinstance(v, dict):
            _toml_tables(f"{prefix}.{k}", v, out)


def bottlerocket_settings(spec: StackSpec, pool: NodePool) -> dict[str, Any]:
    """Bottlerocket API settings gpu-platform adds to a pool's nodes; {} when none are needed.

    Time-slicing / MPS go to the host's device plugin (``settings.kubelet-device-plugins.nvidia``, see
    ``sharing.bottlerocket_device_plugin_settings``): on Bottlerocket that plugin, not the GPU
    Operator's, serves the GPUs.
    """
    if derive.node_os(spec, pool) != "bottlerocket":
        return {}
    plugin = sharing.bottlerocket_device_plugin_settings(spec, pool.name)
    settings = {"kubelet-device-plugins": {"nvidia": plugin}} if plugin else {}
    settings |= local_disks.bottlerocket_settings(spec, pool)
    return {"settings": settings} if settings else {}


def al2023_node_config(spec: StackSpec, pool: NodePool) -> dict[str, Any] | None:
    """The pool's one NodeConfig: the image delivery's settings and the local disks' (``local_disks``), or None."""
    config = images.al2023_node_config(spec, pool) or {
        "apiVersion": "node.eks.aws/v1alpha1",
        "kind": "NodeConfig",
        "spec": {},
    }
    config["spec"] |= local_disks.al2023_node_config_spec(spec, pool)
    return config if config["spec"] else None


def user_data(spec: StackSpec, pool: NodePool) -> str | None:
    """The launch template's user data (plain text), or None.

    Bottlerocket pools: EKS merges this TOML with the bootstrap settings it generates (cluster endpoint, CA, node
    labels and taints) because the launch template names no AMI. AL2023 pools need none (nodeadm gets everything from
    EKS) unless their images or local disks call for a NodeConfig of their own (``al2023_node_config``: FastImagePull,
    the peer mirror's containerd setting, localStorage RAID0), which nodeadm merges with EKS's, or the ECR cache is
    their containerd mirror (``ecr_mirror.install_script``: a shell part cloud-init runs before nodeadm).
    """
    if derive.node_os(spec, pool) == "al2023":
        config = al2023_node_config(spec, pool)
        hosts = images.containerd_mirror_hosts(spec, pool)
        script = ecr_mirror.install_script(spec, hosts) if hosts else None
        if config is None and script is None:
            return None
        body = yaml_text.safe_dump(config, sort_keys=True) if config is not None else None
        return ecr_mirror.mime_user_data(body, script)
    settings = bottlerocket_settings(spec, pool)
    if not settings:
        return None
    out: list[str] = []
    for k, v in sorted(settings.items()):
        _toml_tables(k, v, out)
    return "\n".join(out).rstrip("\n") + "\n"


def user_data_base64(spec: StackSpec, pool: NodePool) -> str | None:
    text = user_data(spec, pool)
    return base64.b64encode(text.encode()).decode() if text is not None else None


def tag_specifications(spec: StackSpec, pool: NodePool) -> list[dict[str, Any]]:
    tags = instance_tags(spec, pool)
    return [{"resource_type": kind, "tags": tags} for kind in ("instance", "volume")]
