"""What gpu-platform knows about NVIDIA GPUs and the cloud machines that carry them.

Data and a few lookups, stdlib only (``components.spec`` imports it); logic over it lives elsewhere
(MIG layouts: ``components/plan/mig.py``).

Where the numbers come from:

* MIG profiles: NVIDIA's MIG user guide ("Supported MIG Profiles") and the default mig-parted config that
  the GPU Operator ships (``upstream/gpu-operator/examples/mig-parted.default-config.yaml``).
* AWS instance types: the Karpenter provider's generated instance-type reference (vCPU, memory, GPU
  count and the ``karpenter.k8s.aws/instance-gpu-*`` label values, all read from the EC2 API).
* GCP machine types: the Compute Engine GPU and accelerator-optimized machine docs and machine-type API values.

vCPU and memory figures are informational (sizing hints, docs); GPU model and count are what the platform
acts on.
"""

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol, TypeVar

# A MIG-capable GPU of the generations listed here (A100, H100, H200, B200) splits into 7 compute slices
# and 8 memory slices; every GPU instance profile takes a whole number of each.
MIG_COMPUTE_SLICES = 7
MIG_MEMORY_SLICES = 8

_PROFILE_NAME = re.compile(r"^(?P<compute>[1-7])g\.(?P<memory>\d+)gb(?P<me>\+me)?$")


# --------------------------------------------------------------------------------------------- Data types


@dataclass(frozen=True)
class MigProfile:
    """One MIG GPU instance profile as it is named by nvidia-smi and mig-parted (``"3g.40gb"``)."""

    name: str
    compute_slices: int  # the "Ng" part: compute slices out of MIG_COMPUTE_SLICES
    memory_slices: int  # memory slices out of MIG_MEMORY_SLICES that one instance occupies
    max_count: int  # most instances of this profile alone on one GPU
    memory_gb: int  # the "NNgb" part of the name

    @property
    def media_extensions(self) -> bool:
        """True for the ``+me`` variant, which takes the GPU's only set of JPEG/OFA engines."""
        return self.name.endswith("+me")


@dataclass(frozen=True)
class GpuModel:
    """An NVIDIA GPU model: its memory, architecture, MIG profiles and the labels the clouds give it."""

    name: str  # canonical name used in stack files: "A100-80GB", "H100", ...
    memory_gib: int  # nominal framebuffer as marketed (GB on the datasheet)
    architecture: str  # "turing", "ampere", "ada", "hopper", "blackwell"
    mig_profiles: Mapping[str, MigProfile] = field(hash=False)  # empty when the GPU has no MIG
    karpenter_gpu_name: str  # value of the karpenter.k8s.aws/instance-gpu-name label
    gke_accelerator: str | None  # cloud.google.com/gke-accelerator value; None where GCP has no such GPU
    # Value of the karpenter.k8s.aws/instance-gpu-memory label (MiB, as EC2 reports it). The GPU-name
    # label alone does not tell A100-40GB from A100-80GB (both are "a100"); this one does.
    # None where no AWS instance type carries the GPU.
    aws_gpu_memory_mib: int | None = None

    @property
    def supports_mig(self) -> bool:
        return bool(self.mig_profiles)

    def mig_profile(self, name: str) -> MigProfile:
        """The named MIG profile; KeyError naming the valid ones when this GPU has no such profile."""
        try:
            return self.mig_profiles[name]
        except KeyError:
            raise KeyError(self.unknown_profile_message(name)) from None

    def unknown_profile_message(self, profile: str) -> str:
        return f"{self.name} has no MIG profile {profile!r}; valid profiles: {', '.join(self.mig_profiles)}"


@dataclass(frozen=True)
class AwsInstanceType:
    """An EC2 instance type with GPUs: its GPU model and count, CPU architecture, vCPUs and memory."""

    name: str  # "p4de.24xlarge"
    gpu_model: str  # a GPU_MODELS key
    gpu_count: int
    arch: str  # "x86_64" or "arm64" (EC2 spelling)
    vcpus: int
    memory_gib: int

    @property
    def family(self) -> str:
        """``"p4de"`` for ``"p4de.24xlarge"`` (the karpenter.k8s.aws/instance-family label)."""
        return self.name.split(".", 1)[0]

    @property
    def kubernetes_arch(self) -> str:
        """The kubernetes.io/arch label value: ``"amd64"`` or ``"arm64"``."""
        return "amd64" if self.arch == "x86_64" else self.arch

    @property
    def efa_interfaces(self) -> int:
        """Most EFA interfaces the type takes (0: no EFA); see AWS_EFA_INTERFACES."""
        return AWS_EFA_INTERFACES.get(self.name, 0)

    @property
    def efa_only_secondary(self) -> bool:
        """Whether gpu-platform gives this type ``efa-only`` interfaces beside an ENA primary (see
        AWS_EFA_ONLY_FAMILIES); otherwise every network card gets an ``efa`` (EFA with ENA) interface."""
        return self.family in AWS_EFA_ONLY_FAMILIES

    @property
    def karpenter_gpu_name(self) -> str:
        """The karpenter.k8s.aws/instance-gpu-name label this instance type really gets.

        Equal to the GPU model's label except for g5g, whose GPU EC2 calls "T4g" (label ``"t4g"``).
        """
        if self.family in _AWS_GPU_NAME_OVERRIDES:
            return _AWS_GPU_NAME_OVERRIDES[self.family]
        return GPU_MODELS[self.gpu_model].karpenter_gpu_name


@dataclass(frozen=True)
class GcpMachineType:
    """A Compute Engine machine type for GPUs: its fixed GPU model and count (none for N1), vCPUs and memory."""

    name: str  # "a2-ultragpu-8g"
    gpu_model: str | None  # fixed GPU of A2/A3/A4/G2 types; None for N1, which take attached T4s
    gpu_count: int | None  # fixed GPU count of accelerator-optimized types; None for N1
    vcpus: int
    memory_gib: int

    @property
    def family(self) -> str:
        """The machine series: ``"n1"``, ``"a2"``, ``"a3"``, ``"a4"``, ``"g2"``."""
        return self.name.split("-", 1)[0]

    @property
    def attaches_gpus(self) -> bool:
        """True for N1 types: GPUs are added to the VM (guest accelerators) rather than built in."""
        return self.gpu_model is None


# ------------------------------------------------------------------------------------------- MIG profiles


def _profile(name: str, memory_slices: int, max_count: int) -> MigProfile:
    m = _PROFILE_NAME.match(name)
    if m is None:
        raise ValueError(f"not a MIG profile name: {name!r}")
    return MigProfile(
        name=name,
        compute_slices=int(m["compute"]),
        memory_slices=memory_slices,
        max_count=max_count,
        memory_gb=int(m["memory"]),
    )


def _seven_slice_profiles(eighth: int, quarter: int, half: int, whole: int) -> Mapping[str, MigProfile]:
    """The profile set that A100, H100, H200 and B200 share, named by each GPU's memory sizes.

    ``eighth``/``quarter``/``half``/``whole`` are the GB figures NVIDIA puts in the names of profiles
    holding 1, 2, 4 and 8 of the 8 memory slices (A100-40GB: 5, 10, 20, 40).

    The ``+me`` profile is a 1-slice instance that also owns the GPU's single JPEG decoder / optical-flow
    engine set: in NVIDIA's tables it has the same memory fraction (1/8) and SM fraction (1/7) as the plain
    1g profile, and at most one can exist per GPU. It is listed in mig-parted's defaults for every model
    here. The later Blackwell-only variants (``-me``, ``+me.all``, ``+gfx``) are left out: mig-parted
    lists them only for RTX PRO 6000, not for B200.
    """
    rows = (
        (f"1g.{eighth}gb", 1, 7),
        (f"1g.{eighth}gb+me", 1, 1),
        (f"1g.{quarter}gb", 2, 4),  # one compute slice with double memory
        (f"2g.{quarter}gb", 2, 3),
        (f"3g.{half}gb", 4, 2),
        (f"4g.{half}gb", 4, 1),
        (f"7g.{whole}gb", 8, 1),
    )
    return MappingProxyType({name: _profile(name, mem, count) for name, mem, count in rows})


_NO_MIG: Mapping[str, MigProfile] = MappingProxyType({})


# --------------------------------------------------------------------------------------------- GPU models


class _Named(Protocol):
    @property
    def name(self) -> str: ...


_T = TypeVar("_T", bound=_Named)


def _index(items: Iterable[_T]) -> Mapping[str, _T]:
    out: dict[str, _T] = {}
    for item in items:
        if item.name in out:
            raise ValueError(f"duplicate catalog entry {item.name!r}")
        out[item.name] = item
    return MappingProxyType(out)


GPU_MODELS: Mapping[str, GpuModel] = _index(
    (
        GpuModel(
            name="T4",
            memory_gib=16,
            architecture="turing",
            mig_profiles=_NO_MIG,
            karpenter_gpu_name="t4",
            gke_accelerator="nvidia-tesla-t4",
            aws_gpu_memory_mib=16384,
        ),
        GpuModel(
            # AWS-only part (a cut-down A10); GCP has no A10G.
            name="A10G",
            memory_gib=24,
            architecture="ampere",
            mig_profiles=_NO_MIG,
            karpenter_gpu_name="a10g",
            gke_accelerator=None,
            aws_gpu_memory_mib=22888,
        ),
        GpuModel(
            name="L4",
            memory_gib=24,
            architecture="ada",
            mig_profiles=_NO_MIG,
            karpenter_gpu_name="l4",
            gke_accelerator="nvidia-l4",
            aws_gpu_memory_mib=22888,
        ),
        GpuModel(
            # GCP offers no L40S machine type.
            name="L40S",
            memory_gib=48,
            architecture="ada",
            mig_profiles=_NO_MIG,
            karpenter_gpu_name="l40s",
            gke_accelerator=None,
            aws_gpu_memory_mib=45776,
        ),
        GpuModel(
            name="A100-40GB",
            memory_gib=40,
            architecture="ampere",
            mig_profiles=_seven_slice_profiles(5, 10, 20, 40),
            karpenter_gpu_name="a100",
            gke_accelerator="nvidia-tesla-a100",
            aws_gpu_memory_mib=40960,
        ),
        GpuModel(
            name="A100-80GB",
            memory_gib=80,
            architecture="ampere",
            mig_profiles=_seven_slice_profiles(10, 20, 40, 80),
            karpenter_gpu_name="a100",
            gke_accelerator="nvidia-a100-80gb",
            aws_gpu_memory_mib=81920,
        ),
        GpuModel(
            # H100 SXM 80GB (p5, a3-*). a3-megagpu-8g nodes carry a different GKE accelerator value; see
            # gke_accelerator_for_machine_type().
            name="H100",
            memory_gib=80,
            architecture="hopper",
            mig_profiles=_seven_slice_profiles(10, 20, 40, 80),
            karpenter_gpu_name="h100",
            gke_accelerator="nvidia-h100-80gb",
            aws_gpu_memory_mib=81920,
        ),
        GpuModel(
            name="H200",
            memory_gib=141,
            architecture="hopper",
            mig_profiles=_seven_slice_profiles(18, 35, 71, 141),
            karpenter_gpu_name="h200",
            gke_accelerator="nvidia-h200-141gb",
            aws_gpu_memory_mib=144384,
        ),
        GpuModel(
            # NVIDIA sells it as 180 GB HBM3e (1,440 GB per 8-GPU board); EC2 reports 183359 MiB,
            # about 179 GiB.
            name="B200",
            memory_gib=180,
            architecture="blackwell",
            mig_profiles=_seven_slice_profiles(23, 45, 90, 180),
            karpenter_gpu_name="b200",
            gke_accelerator="nvidia-b200",
            aws_gpu_memory_mib=183359,
        ),
    )
)


# ------------------------------------------------------------------------------------- AWS instance types

# g5g carries the NVIDIA T4G, the Arm-host packaging of the T4 (same Turing TU104 GPU, 16 GB). The catalog
# keeps one GPU model per silicon, so g5g maps to "T4" with arch "arm64". Its Karpenter GPU-name label is
# "t4g", though, so a NodePool that selects instance-gpu-name=t4 does not match g5g; use
# AwsInstanceType.karpenter_gpu_name (or the instance family) to select it.
_AWS_GPU_NAME_OVERRIDES: Mapping[str, str] = MappingProxyType({"g5g": "t4g"})


def _aws_family(family: str, gpu: str, arch: str, sizes: Iterable[tuple[str, int, int, int]]) -> list[AwsInstanceType]:
    """Rows are (size, gpu_count, vcpus, memory_gib)."""
    return [
        AwsInstanceType(name=f"{family}.{size}", gpu_model=gpu, gpu_count=gpus, arch=arch, vcpus=vcpus, memory_gib=mem)
        for size, gpus, vcpus, mem in sizes
    ]


# g5 and g6 come in the same eight sizes (GPU count, vCPUs, memory); g6e doubles the memory.
_G5_G6_SIZES = (
    ("xlarge", 1, 4, 16),
    ("2xlarge", 1, 8, 32),
    ("4xlarge", 1, 16, 64),
    ("8xlarge", 1, 32, 128),
    ("16xlarge", 1, 64, 256),
    ("12xlarge", 4, 48, 192),
    ("24xlarge", 4, 96, 384),
    ("48xlarge", 8, 192, 768),
)

AWS_INSTANCE_TYPES: Mapping[str, AwsInstanceType] = _index(
    [
        *_aws_family(
            "g4dn",
            "T4",
            "x86_64",
            (
                ("xlarge", 1, 4, 16),
                ("2xlarge", 1, 8, 32),
                ("4xlarge", 1, 16, 64),
                ("8xlarge", 1, 32, 128),
                ("16xlarge", 1, 64, 256),
                ("12xlarge", 4, 48, 192),
                ("metal", 8, 96, 384),
            ),
        ),
        *_aws_family(
            "g5g",
            "T4",  # T4G; see _AWS_GPU_NAME_OVERRIDES
            "arm64",
            (
                ("xlarge", 1, 4, 8),
                ("2xlarge", 1, 8, 16),
                ("4xlarge", 1, 16, 32),
                ("8xlarge", 1, 32, 64),
                ("16xlarge", 2, 64, 128),
                ("metal", 2, 64, 128),
            ),
        ),
        *_aws_family("g5", "A10G", "x86_64", _G5_G6_SIZES),
        *_aws_family("g6", "L4", "x86_64", _G5_G6_SIZES),
        *_aws_family(
            "g6e",
            "L40S",
            "x86_64",
            # Same vCPU and GPU counts as g6, twice the memory.
            ((size, gpus, vcpus, mem * 2) for size, gpus, vcpus, mem in _G5_G6_SIZES),
        ),
        *_aws_family("p4d", "A100-40GB", "x86_64", (("24xlarge", 8, 96, 1152),)),
        *_aws_family("p4de", "A100-80GB", "x86_64", (("24xlarge", 8, 96, 1152),)),
        *_aws_family("p5", "H100", "x86_64", (("4xlarge", 1, 16, 256), ("48xlarge", 8, 192, 2048))),
        *_aws_family("p5e", "H200", "x86_64", (("48xlarge", 8, 192, 2048),)),
        *_aws_family("p5en", "H200", "x86_64", (("48xlarge", 8, 192, 2048),)),
        *_aws_family("p6-b200", "B200", "x86_64", (("48xlarge", 8, 192, 2048),)),
    ]
)


# EFA: how many EFA interfaces each type takes (EC2 ``DescribeInstanceTypes``
# ``NetworkInfo.EfaInfo.MaximumEfaInterfaces``, one per network card), as Karpenter v1.14.1 publishes it
# in ``website/content/en/docs/reference/instance-types.md`` (the ``vpc.amazonaws.com/efa`` capacity row;
# Karpenter reads it from the EC2 API). Types absent here have no EFA (g4dn/g5/g6/g6e below 8xlarge, g5g).
# AWS user guide, "Supported instance types" for EFA
# (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa.html#efa-instance-types) lists the same families.
AWS_EFA_INTERFACES: Mapping[str, int] = MappingProxyType(
    {
        **{f"g4dn.{s}": 1 for s in ("8xlarge", "12xlarge", "16xlarge", "metal")},
        **{f"{f}.{s}": 1 for f in ("g5", "g6") for s in ("8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge")},
        **{f"g6e.{s}": 1 for s in ("8xlarge", "12xlarge", "16xlarge")},
        "g6e.24xlarge": 2,
        "g6e.48xlarge": 4,
        "p4d.24xlarge": 4,
        "p4de.24xlarge": 4,
        "p5.4xlarge": 1,
        "p5.48xlarge": 32,
        "p5e.48xlarge": 32,
        "p5en.48xlarge": 16,
        "p6-b200.48xlarge": 8,
    }
)

# Families given AWS's recommended multi-card layout (EC2 user guide, "Maximize network bandwidth on Amazon
# EC2 instances with multiple network cards", https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html):
# an ENA primary interface (card 0, device 0), an ``efa-only`` interface at card 0 / device 1 and one
# ``efa-only`` interface (device 0) on every further card: EFA devices that take no IP address, which on a
# 32-card p5 keeps 31 VPC addresses per node. The guide's worked examples are P5/P5e; P5en and P6 (Nitro v5/v6)
# share the layout. Other EFA families keep the layout Karpenter itself launches with
# (``pkg/providers/launchtemplate/launchtemplate.go`` generateNetworkInterfaces, v1.14.1): an ``efa`` interface
# (EFA with ENA) on every card, device 0 on card 0 and device 1 elsewhere -- valid on every EFA type.
AWS_EFA_ONLY_FAMILIES: frozenset[str] = frozenset({"p5", "p5e", "p5en", "p6-b200"})

# Families whose EFA does RDMA (GPUDirect RDMA: NCCL reads and writes GPU memory across nodes), so that
# FI_EFA_USE_DEVICE_RDMA=1 applies (EC2 user guide, "Get started with EFA and NCCL": RDMA read on p4d/p4de,
# p5/p5e/p5en, p6); the G families' EFA has no RDMA.
AWS_EFA_RDMA_FAMILIES: frozenset[str] = frozenset({"p4d", "p4de", "p5", "p5e", "p5en", "p6-b200"})


# -------------------------------------------------------------------------------------- GCP machine types

# The one GPU model gpu-platform attaches to N1 VMs.
N1_ATTACHABLE_GPU_MODEL = "T4"

# N1 memory per vCPU (GB) for the predefined shapes.
_N1_MEMORY_PER_VCPU: Mapping[str, float] = MappingProxyType({"standard": 3.75, "highmem": 6.5, "highcpu": 0.9})
_N1_SIZES = (1, 2, 4, 8, 16, 32, 64, 96)
_N1_NAME = re.compile(r"^n1-(?P<shape>standard|highmem|highcpu)-(?P<vcpus>\d+)$")

# GCP's limits for NVIDIA T4 on N1: (T4 count, most vCPUs, most memory in GB) -- 1 or 2 T4s allow up to
# 48 vCPUs / 312 GB, 4 T4s up to 96 vCPUs / 624 GB. GCP allows no other T4 counts.
_N1_T4_LIMITS = ((1, 48, 312.0), (2, 48, 312.0), (4, 96, 624.0))

# Machine types whose nodes get a GKE accelerator label other than their GPU model's.
_GKE_ACCELERATOR_OVERRIDES: Mapping[str, str] = MappingProxyType({"a3-megagpu-8g": "nvidia-h100-mega-80gb"})


@dataclass(frozen=True)
class GpuDirect:
    """How a GCP GPU machine type's GPUs talk across nodes at full speed, and what the node pool needs for it."""

    stack: str  # GPUDirect-TCPX / GPUDirect-TCPXO / GPUDirect-RDMA
    additional_networks: int  # node network interfaces beyond the primary one, each its own VPC/subnet
    installer: str  # the NCCL plugin installer DaemonSet (GoogleCloudPlatform/container-engine-accelerators)


# GPUDirect per machine type. Additional networks: cluster-toolkit ``modules/compute/gke-node-pool/gpu_direct.tf``
# ``min_additional_networks`` (a3-highgpu-8g 4, a3-megagpu-8g 8; commit 1047080375af) and its
# ``examples/gke-a3-ultragpu`` blueprint (one gVNIC network plus the 8 subnets of an RDMA VPC = 9; A4 is built the
# same way). Installers: the manifests cluster-toolkit applies (``gpudirect-tcpx/nccl-tcpx-installer.yaml``,
# ``gpudirect-tcpxo/nccl-tcpxo-installer.yaml`` with ``nri_device_injector``) and GKE's "GPUDirect RDMA" guide
# (``gpudirect-rdma/nccl-rdma-installer.yaml``).
GCP_GPUDIRECT: Mapping[str, GpuDirect] = MappingProxyType(
    {
        "a3-highgpu-8g": GpuDirect("GPUDirect-TCPX", 4, "gpudirect-tcpx/nccl-tcpx-installer.yaml"),
        "a3-megagpu-8g": GpuDirect("GPUDirect-TCPXO", 8, "gpudirect-tcpxo/nccl-tcpxo-installer.yaml"),
        "a3-ultragpu-8g": GpuDirect("GPUDirect-RDMA", 9, "gpudirect-rdma/nccl-rdma-installer.yaml"),
        "a4-highgpu-8g": GpuDirect("GPUDirect-RDMA", 9, "gpudirect-rdma/nccl-rdma-installer.yaml"),
    }
)


def _n1(shape: str, vcpus: int) -> GcpMachineType:
    memory = vcpus * _N1_MEMORY_PER_VCPU[shape]
    return GcpMachineType(
        name=f"n1-{shape}-{vcpus}", gpu_model=None, gpu_count=None, vcpus=vcpus, memory_gib=int(memory)
    )


def _fixed(name: str, gpu: str, gpus: int, vcpus: int, memory: int) -> GcpMachineType:
    return GcpMachineType(name=name, gpu_model=gpu, gpu_count=gpus, vcpus=vcpus, memory_gib=memory)


GCP_MACHINE_TYPES: Mapping[str, GcpMachineType] = _index(
    [
        *(_n1("standard", n) for n in (4, 8, 16, 32, 64, 96)),
        *(_n1("highmem", n) for n in (4, 8, 16, 32, 64, 96)),
        # A2 Standard: A100 40GB, 12 vCPUs and 85 GB per GPU; the 16-GPU type stops at 96 vCPUs.
        _fixed("a2-highgpu-1g", "A100-40GB", 1, 12, 85),
        _fixed("a2-highgpu-2g", "A100-40GB", 2, 24, 170),
        _fixed("a2-highgpu-4g", "A100-40GB", 4, 48, 340),
        _fixed("a2-highgpu-8g", "A100-40GB", 8, 96, 680),
        _fixed("a2-megagpu-16g", "A100-40GB", 16, 96, 1360),
        # A2 Ultra: A100 80GB, 12 vCPUs and 170 GB per GPU.
        _fixed("a2-ultragpu-1g", "A100-80GB", 1, 12, 170),
        _fixed("a2-ultragpu-2g", "A100-80GB", 2, 24, 340),
        _fixed("a2-ultragpu-4g", "A100-80GB", 4, 48, 680),
        _fixed("a2-ultragpu-8g", "A100-80GB", 8, 96, 1360),
        # G2: L4. Note g2-standard-32 has ONE GPU (more vCPUs than g2-standard-16, same GPU count).
        _fixed("g2-standard-4", "L4", 1, 4, 16),
        _fixed("g2-standard-8", "L4", 1, 8, 32),
        _fixed("g2-standard-12", "L4", 1, 12, 48),
        _fixed("g2-standard-16", "L4", 1, 16, 64),
        _fixed("g2-standard-24", "L4", 2, 24, 96),
        _fixed("g2-standard-32", "L4", 1, 32, 128),
        _fixed("g2-standard-48", "L4", 4, 48, 192),
        _fixed("g2-standard-96", "L4", 8, 96, 384),
        # A3 High: H100 80GB, 26 vCPUs and 234 GB per GPU (the 1g/2g/4g sizes are offered only as Spot or
        # flex-start capacity). A3 Mega: same shape, more GPU NICs.
        _fixed("a3-highgpu-1g", "H100", 1, 26, 234),
        _fixed("a3-highgpu-2g", "H100", 2, 52, 468),
        _fixed("a3-highgpu-4g", "H100", 4, 104, 936),
        _fixed("a3-highgpu-8g", "H100", 8, 208, 1872),
        _fixed("a3-megagpu-8g", "H100", 8, 208, 1872),
        # A3 Ultra: H200 141GB. A4: B200.
        _fixed("a3-ultragpu-8g", "H200", 8, 224, 2952),
        _fixed("a4-highgpu-8g", "B200", 8, 224, 3968),
    ]
)


# ------------------------------------------------------------------------------------------------ Lookups


def gpu_model(name: str) -> GpuModel:
    """The GPU model with this canonical name; KeyError listing the known names otherwise."""
    try:
        return GPU_MODELS[name]
    except KeyError:
        pass
    hint = ""
    for known in GPU_MODELS:
        if known.lower() == str(name).lower():
            hint = f" (did you mean {known!r}?)"
            break
    raise KeyError(f"unknown GPU model {name!r}{hint}; known models: {', '.join(GPU_MODELS)}")


def aws_instance_type(name: str) -> AwsInstanceType | None:
    return AWS_INSTANCE_TYPES.get(name)


def aws_efa_interfaces(name: str) -> int:
    """EFA interfaces of an AWS instance type (0: no EFA or unknown type)."""
    return AWS_EFA_INTERFACES.get(name, 0)


def gcp_machine_type(name: str) -> GcpMachineType | None:
    return GCP_MACHINE_TYPES.get(name)


def aws_instance_types_for(model: str) -> tuple[AwsInstanceType, ...]:
    """AWS instance types carrying this GPU model, in catalog order."""
    gpu_model(model)
    return tuple(t for t in AWS_INSTANCE_TYPES.values() if t.gpu_model == model)


def gcp_machine_types_for(model: str) -> tuple[GcpMachineType, ...]:
    """GCP machine types with this GPU built in, plus the N1 types when it is the N1-attachable GPU."""
    gpu_model(model)
    return tuple(
        t
        for t in GCP_MACHINE_TYPES.values()
        if t.gpu_model == model or (t.gpu_model is None and model == N1_ATTACHABLE_GPU_MODEL)
    )


def _n1_shape(machine_type: str) -> tuple[int, float] | None:
    """(vcpus, memory GB) of a catalogued or predefined N1 type; None if the name is not one."""
    known = GCP_MACHINE_TYPES.get(machine_type)
    if known is not None:
        return (known.vcpus, float(known.memory_gib)) if known.family == "n1" else None
    m = _N1_NAME.match(machine_type)
    if m is None:
        return None
    shape, vcpus = m["shape"], int(m["vcpus"])
    if vcpus not in _N1_SIZES or (shape != "standard" and vcpus == 1):
        return None
    return vcpus, vcpus * _N1_MEMORY_PER_VCPU[shape]


def n1_attachable_gpu_counts(machine_type: str) -> tuple[int, ...]:
    """How many T4s GCP lets this N1 machine type take (some of 1, 2, 4); () if it is not an N1 type.

    Works for the catalogued N1 types and any other predefined n1-standard/highmem/highcpu shape.
    E.g. n1-standard-64 and n1-standard-96 take only 4 (more than 48 vCPUs).
    """
    shape = _n1_shape(machine_type)
    if shape is None:
        return ()
    vcpus, memory = shape
    return tuple(count for count, max_vcpus, max_mem in _N1_T4_LIMITS if vcpus <= max_vcpus and memory <= max_mem)


def gke_accelerator_for_machine_type(machine_type: str) -> str | None:
    """The cloud.google.com/gke-accelerator value nodes of this machine type get (T4's for N1 types).

    Differs from the GPU model's value for a3-megagpu-8g (``nvidia-h100-mega-80gb``). None if unknown.
    """
    mt = GCP_MACHINE_TYPES.get(machine_type)
    if mt is None:
        if _n1_shape(machine_type) is None:
            return None
        return GPU_MODELS[N1_ATTACHABLE_GPU_MODEL].gke_accelerator
    if machine_type in _GKE_ACCELERATOR_OVERRIDES:
        return _GKE_ACCELERATOR_OVERRIDES[machine_type]
    return GPU_MODELS[mt.gpu_model or N1_ATTACHABLE_GPU_MODEL].gke_accelerator
