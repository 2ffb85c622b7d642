"""The NVMe instance store of the GPU instance types in ``catalog.AWS_INSTANCE_TYPES``: a catalog fact, kept in its own
module (catalog.py is at the package's module size limit).

Total GB per type, as Karpenter v1.14.1 publishes it in ``website/content/en/docs/reference/instance-types.md`` (the
``karpenter.k8s.aws/instance-local-nvme`` label, read from the EC2 API's ``InstanceStorageInfo.TotalSizeInGB``; the EC2
user guide's "Instance store volume limits for EC2 instances" lists the same disks: e.g. p4d.24xlarge 8 x 1000 GB,
p5.48xlarge 8 x 3800 GB, g5.xlarge 1 x 250 GB). A type absent here has no instance store (g5g: EBS only; that page
has no ``instance-local-nvme`` label for any g5g size). Every instance store of these families is NVMe.

Stdlib only, like catalog.py.
"""

from collections.abc import Mapping
from types import MappingProxyType

# Sizes shared by g5, g6e (the same disks) and, a little smaller, g6 (EC2 user guide: 1 x 250 ... 2 x 3800 GB)
_G5 = {"xlarge": 250, "2xlarge": 450, "4xlarge": 600, "8xlarge": 900, "12xlarge": 3800, "16xlarge": 1900}
_G5 |= {"24xlarge": 3800, "48xlarge": 7600}
_G6 = {**_G5, "12xlarge": 3760, "16xlarge": 1880, "24xlarge": 3760, "48xlarge": 7520}
_G4DN = {"xlarge": 125, "2xlarge": 225, "4xlarge": 225, "8xlarge": 900, "12xlarge": 900, "16xlarge": 900}
_G4DN |= {"metal": 1800}

AWS_INSTANCE_STORE_GB: Mapping[str, int] = MappingProxyType(
    {
        **{f"g4dn.{s}": gb for s, gb in _G4DN.items()},
        **{f"g5.{s}": gb for s, gb in _G5.items()},
        **{f"g6.{s}": gb for s, gb in _G6.items()},
        **{f"g6e.{s}": gb for s, gb in _G5.items()},
        "p4d.24xlarge": 8000,
        "p4de.24xlarge": 8000,
        "p5.4xlarge": 3800,
        "p5.48xlarge": 30400,
        "p5e.48xlarge": 30400,
        "p5en.48xlarge": 30400,
        "p6-b200.48xlarge": 30400,
    }
)


def aws_instance_store_gb(instance_type: str) -> int:
    """The type's NVMe instance store in GB (0: none, or a type the catalog does not know)."""
    return AWS_INSTANCE_STORE_GB.get(instance_type, 0)
