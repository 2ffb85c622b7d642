"""What GKE accepts for GPU node pools, as data: used by the GKE rules (checked before anything is
registered) and by the node-pool component. Stdlib and the spec only; no cloud SDK.

Sources (read, not copied):

* MIG partition sizes: GKE's own NVIDIA device plugin decides which ``gpuPartitionSize`` values a node
  can serve (GoogleCloudPlatform/container-engine-accelerators ``pkg/gpu/nvidia/mig/mig.go``, the
  profile -> partitions-per-GPU table). It is a subset of NVIDIA's profiles: no ``+me`` variants on any
  of the models here, and no ``4g`` profile on A100 / H100 (``partition_gpu.go`` knows ``4g.20gb`` /
  ``4g.40gb`` but the plugin does not serve them).
* Shared clients: GKE's time-sharing and MPS docs cap ``maxSharedClientsPerGpu`` at 48.
* Boot disks: A3 Ultra (``a3-ultragpu-*``) and A4 (``a4-*``) machines take Hyperdisk only; A2, A3 High /
  Mega, G2 and N1 take Persistent Disk (Compute Engine accelerator-optimized machine docs; Cluster
  Toolkit's A3 Ultra / A4 blueprints use ``hyperdisk-balanced`` boot disks, its A3 High / Mega ones
  ``pd-balanced``).
* Compact placement: Compute Engine compact placement policies cover the accelerator-optimized series
  (A2, A3, A4, G2) but not N1.
* A3 High with 1, 2 or 4 GPUs is sold only as Spot or flex-start (queued provisioning) capacity.
* ``LATEST`` GPU drivers exist for Container-Optimized OS only (``gpuDriverVersion`` docs: "DEFAULT" for
  COS and Ubuntu, "LATEST" for COS).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ...spec.gke_create import GkeCreate
from ...spec.model import StackSpec

# gpuSharingConfig.maxSharedClientsPerGpu upper bound (time-sharing and MPS).
MAX_SHARED_CLIENTS = 48

# cloud.google.com/gke-accelerator value -> {partition size: partitions GKE makes on one GPU}.
_A100_40GB = {"1g.5gb": 7, "2g.10gb": 3, "3g.20gb": 2, "7g.40gb": 1}
_A100_80GB = {"1g.10gb": 7, "2g.20gb": 3, "3g.40gb": 2, "7g.80gb": 1}
_H100_80GB = {**_A100_80GB, "1g.20gb": 4}
MIG_PARTITIONS: Mapping[str, Mapping[str, int]] = MappingProxyType(
    {
        "nvidia-tesla-a100": MappingProxyType(_A100_40GB),
        "nvidia-a100-80gb": MappingProxyType(_A100_80GB),
        "nvidia-h100-80gb": MappingProxyType(_H100_80GB),
        "nvidia-h100-mega-80gb": MappingProxyType(_H100_80GB),  # the same H100 80GB silicon (A3 Mega)
        "nvidia-h200-141gb": MappingProxyType(
            {"1g.18gb": 7, "1g.35gb": 4, "2g.35gb": 3, "3g.71gb": 2, "4g.71gb": 1, "7g.141gb": 1}
        ),
        "nvidia-b200": MappingProxyType(
            {"1g.23gb": 7, "1g.45gb": 4, "2g.45gb": 3, "3g.90gb": 2, "4g.90gb": 1, "7g.180gb": 1}
        ),
    }
)

# Machine-type prefixes whose VMs boot only from Hyperdisk.
HYPERDISK_ONLY_PREFIXES = ("a3-ultragpu-", "a4-", "a4x-")
DEFAULT_BOOT_DISK = "pd-balanced"
HYPERDISK_BOOT_DISK = "hyperdisk-balanced"

# Machine series (the part before the first '-') that compact placement policies support, of those
# that carry NVIDIA GPUs.
COMPACT_PLACEMENT_SERIES = ("a2", "a3", "a4", "g2")

# Machine types offered only as Spot or flex-start (queued provisioning) capacity.
SPOT_OR_FLEX_ONLY = ("a3-highgpu-1g", "a3-highgpu-2g", "a3-highgpu-4g")

# Local SSDs that come with the machine (and are billed with it), per machine type: what the node's ephemeral storage
# takes by default (nodeConfig.ephemeralStorageLocalSsdConfig.localSsdCount). A3 and A4: cluster-toolkit v1.95.0
# modules/compute/gke-node-pool/disk_definitions.tf local_ssd_machines (16 on A3 High / Mega, 32 on A3 Ultra / A4);
# A2 Ultra: Compute Engine's GPU machine types table (a2-ultragpu-Ng comes with N 375 GB local SSDs). A2 Standard
# and G2 machines can take local SSDs only as an extra purchase, so they get none unless asked.
BUNDLED_LOCAL_SSDS: Mapping[str, int] = MappingProxyType(
    {
        "a3-highgpu-8g": 16,
        "a3-megagpu-8g": 16,
        "a3-ultragpu-8g": 32,
        "a4-highgpu-8g": 32,
        "a2-ultragpu-1g": 1,
        "a2-ultragpu-2g": 2,
        "a2-ultragpu-4g": 4,
        "a2-ultragpu-8g": 8,
    }
)

# NCCL's TCP buffers: net.ipv4.tcp_rmem / tcp_wmem up to 16 MiB, cluster-toolkit v1.95.0
# modules/compute/gke-node-pool/variables.tf linux_node_config's default sysctls (GKE nodeConfig.linuxNodeConfig).
NCCL_TCP_SYSCTLS: Mapping[str, str] = MappingProxyType(
    {"net.ipv4.tcp_rmem": "4096 87380 16777216", "net.ipv4.tcp_wmem": "4096 16384 16777216"}
)

# Flex-start VMs run at most seven days (GKE "About GPU obtainability with flex-start"; Compute Engine flex-start VMs).
FLEX_START_MAX_RUN_SECONDS = 7 * 24 * 3600
# Compact placement with flex-start: cluster-toolkit v1.95.0 gke-node-pool main.tf precondition, A3 Ultra and A4 only.
FLEX_START_COMPACT_PREFIXES = ("a3-ultragpu-", "a4-")

# GKE node image types per pool os.
IMAGE_TYPES: Mapping[str, str] = MappingProxyType({"cos": "COS_CONTAINERD", "ubuntu": "UBUNTU_CONTAINERD"})


def boot_disk_type(machine_type: str) -> str:
    """``hyperdisk-balanced`` for machine types that boot only from Hyperdisk, else ``pd-balanced``."""
    return HYPERDISK_BOOT_DISK if machine_type.startswith(HYPERDISK_ONLY_PREFIXES) else DEFAULT_BOOT_DISK


def machine_series(machine_type: str) -> str:
    return machine_type.split("-", 1)[0]


def is_zone(location: str | None) -> bool:
    """``us-central1-a`` is a zone, ``us-central1`` a region."""
    return bool(location) and str(location).count("-") == 2


def region_of(location: str) -> str:
    return location.rsplit("-", 1)[0] if is_zone(location) else location


def gke_create(spec: StackSpec) -> GkeCreate | None:
    """The stack's ``cluster.create.gke`` (defaults when ``create`` leaves it out); None unless creating on gcp.
    Here, not in ``cluster_create``, so its rules ask it without loading the created cluster's plan."""
    create = spec.cluster.create
    if spec.cloud != "gcp" or create is None:
        return None
    return create.gke or GkeCreate()


def created_network(cluster_name: str) -> str:
    """The VPC of a cluster gpu-platform creates (``cluster_create``; also where the stack's Filestore instances go)."""
    return f"{cluster_name}-net"
