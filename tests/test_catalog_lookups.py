"""``components.data.catalog`` lookups and builders, checked against the clouds' and NVIDIA's published figures.

Sources: GCP "GPU machine types" (N1 + attached T4: 1 or 2 T4s up to 48 vCPUs / 312 GB, 4 T4s up to 96 vCPUs /
624 GB; G2 = L4, A2 = A100, A3 = H100/H200, A4 = B200; n1-standard is 3.75 GB per vCPU, n1-highmem 6.5);
GKE's accelerator names (nvidia-tesla-t4, nvidia-l4, nvidia-tesla-a100, nvidia-a100-80gb, nvidia-h100-80gb,
nvidia-h100-mega-80gb); NVIDIA's MIG user guide (A100-40GB: 1g.5gb x7, 1g.5gb+me x1, 1g.10gb x4, 2g.10gb x3,
3g.20gb x2, 4g.20gb x1, 7g.40gb x1; 7 compute and 8 memory slices).

The builders (``_index``, ``_n1``, ``_fixed``, ``_aws_family``, ``_profile``, ``_seven_slice_profiles``) run
at import to fill the tables; they are called here too, so a change to them is seen by a test.
"""

from __future__ import annotations

from types import MappingProxyType

import pytest

from components.data import catalog as c
from components.plan import mig

KNOWN = "T4, A10G, L4, L40S, A100-40GB, A100-80GB, H100, H200, B200"

# ------------------------------------------------------------------------------------------- builders


def test_index_keeps_order_refuses_duplicates_and_is_read_only():
    """A catalog table is keyed by name in the order written; a name twice is a bug in the table."""
    a, b = c._fixed("x-1", "L4", 1, 4, 16), c._fixed("x-2", "L4", 2, 8, 32)
    table = c._index([b, a])
    assert list(table) == ["x-2", "x-1"] and table["x-1"] is a
    assert isinstance(table, MappingProxyType)
    with pytest.raises(TypeError):
        table["x-3"] = a  # type: ignore[index]
    with pytest.raises(ValueError, match=r"^duplicate catalog entry 'x-1'$"):
        c._index([a, b, a])
    assert dict(c._index([])) == {}


def test_n1_shapes_follow_gcps_memory_per_vcpu():
    """n1-standard-N has 3.75 GB per vCPU, n1-highmem-N 6.5 (rounded down to whole GB); no built-in GPU."""
    t = c._n1("standard", 4)
    assert (t.name, t.gpu_model, t.gpu_count, t.vcpus, t.memory_gib) == ("n1-standard-4", None, None, 4, 15)
    assert c._n1("highmem", 4).memory_gib == 26
    assert c._n1("standard", 2).memory_gib == 7  # 7.5 rounded down
    assert c._n1("highcpu", 16).memory_gib == 14  # 0.9 x 16 = 14.4
    assert t.family == "n1" and t.attaches_gpus


def test_fixed_and_aws_family_rows():
    """Accelerator-optimized types carry their GPU; AWS rows are (size, gpus, vcpus, memory)."""
    g = c._fixed("g2-standard-24", "L4", 2, 24, 96)
    assert (g.name, g.gpu_model, g.gpu_count, g.vcpus, g.memory_gib) == ("g2-standard-24", "L4", 2, 24, 96)
    assert g.family == "g2" and not g.attaches_gpus
    rows = c._aws_family("g5g", "T4", "arm64", (("xlarge", 1, 4, 8), ("metal", 2, 64, 128)))
    assert [(r.name, r.gpu_model, r.gpu_count, r.arch, r.vcpus, r.memory_gib) for r in rows] == [
        ("g5g.xlarge", "T4", 1, "arm64", 4, 8),
        ("g5g.metal", "T4", 2, "arm64", 64, 128),
    ]


def test_mig_profile_builders():
    """A profile's compute slices and memory come from its name; the shared seven-slice set is NVIDIA's."""
    p = c._profile("3g.40gb", 4, 2)
    assert (p.name, p.compute_slices, p.memory_slices, p.max_count, p.memory_gb) == ("3g.40gb", 3, 4, 2, 40)
    assert c._profile("1g.10gb+me", 1, 1).media_extensions and not p.media_extensions
    for bad in ("8g.40gb", "3g.40", "3g.40gb+mex", "x3g.40gb"):
        with pytest.raises(ValueError, match=r"^not a MIG profile name: "):
            c._profile(bad, 1, 1)
    a100 = c._seven_slice_profiles(5, 10, 20, 40)
    assert [(n, p.compute_slices, p.memory_slices, p.max_count) for n, p in a100.items()] == [
        ("1g.5gb", 1, 1, 7),
        ("1g.5gb+me", 1, 1, 1),
        ("1g.10gb", 1, 2, 4),
        ("2g.10gb", 2, 2, 3),
        ("3g.20gb", 3, 4, 2),
        ("4g.20gb", 4, 4, 1),
        ("7g.40gb", 7, 8, 1),
    ]
    assert dict(a100) == dict(c.GPU_MODELS["A100-40GB"].mig_profiles)


# -------------------------------------------------------------------------------------------- lookups


def test_gpu_model_names_the_known_ones_and_hints_at_case():
    """An unknown model lists the known ones; a case slip says which one was meant."""
    assert c.gpu_model("H100").name == "H100"
    with pytest.raises(KeyError) as err:
        c.gpu_model("h100")
    assert err.value.args[0] == f"unknown GPU model 'h100' (did you mean 'H100'?); known models: {KNOWN}"
    with pytest.raises(KeyError) as err:
        c.gpu_model("V100")
    assert err.value.args[0] == f"unknown GPU model 'V100'; known models: {KNOWN}"


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        (
            "L4",
            [f"g2-standard-{n}" for n in (4, 8, 12, 16, 24, 32, 48, 96)],
        ),
        ("A100-40GB", ["a2-highgpu-1g", "a2-highgpu-2g", "a2-highgpu-4g", "a2-highgpu-8g", "a2-megagpu-16g"]),
        ("A100-80GB", ["a2-ultragpu-1g", "a2-ultragpu-2g", "a2-ultragpu-4g", "a2-ultragpu-8g"]),
        ("H100", ["a3-highgpu-1g", "a3-highgpu-2g", "a3-highgpu-4g", "a3-highgpu-8g", "a3-megagpu-8g"]),
        ("H200", ["a3-ultragpu-8g"]),
        ("B200", ["a4-highgpu-8g"]),
        ("A10G", []),  # AWS-only part
        ("L40S", []),
    ],
)
def test_gcp_machine_types_with_a_built_in_gpu(model: str, expected: list[str]):
    """Accelerator-optimized types list only their own GPU; N1 types are not offered for these GPUs."""
    assert [t.name for t in c.gcp_machine_types_for(model)] == expected


def test_gcp_machine_types_for_t4_are_the_n1_types():
    """T4 is the GPU attached to N1 VMs: every catalogued N1 type, and nothing else."""
    names = [t.name for t in c.gcp_machine_types_for("T4")]
    assert names == [f"n1-standard-{n}" for n in (4, 8, 16, 32, 64, 96)] + [
        f"n1-highmem-{n}" for n in (4, 8, 16, 32, 64, 96)
    ]
    with pytest.raises(KeyError, match="unknown GPU model 'X'"):
        c.gcp_machine_types_for("X")


def test_aws_instance_types_for_a_model():
    """g4dn (x86) and g5g (Arm, labelled t4g by Karpenter) carry the T4; unknown models are refused."""
    t4 = c.aws_instance_types_for("T4")
    assert {t.family for t in t4} == {"g4dn", "g5g"}
    assert [t.name for t in t4][:2] == ["g4dn.xlarge", "g4dn.2xlarge"]
    g5g = c.aws_instance_type("g5g.xlarge")
    assert (g5g.kubernetes_arch, g5g.karpenter_gpu_name) == ("arm64", "t4g")
    g4dn = c.aws_instance_type("g4dn.xlarge")
    assert (g4dn.kubernetes_arch, g4dn.karpenter_gpu_name) == ("amd64", "t4")
    assert c.aws_instance_type("m5.large") is None
    with pytest.raises(KeyError):
        c.aws_instance_types_for("t4")


@pytest.mark.parametrize(
    ("machine_type", "counts"),
    [
        ("n1-standard-4", (1, 2, 4)),
        ("n1-standard-32", (1, 2, 4)),
        ("n1-standard-64", (4,)),  # more than 48 vCPUs
        ("n1-highmem-32", (1, 2, 4)),  # 208 GB
        ("n1-highmem-96", (4,)),  # 624 GB: the 4-T4 limit exactly
        ("n1-standard-1", (1, 2, 4)),  # predefined, not catalogued
        ("n1-highcpu-96", (4,)),
        ("n1-highmem-1", ()),  # no such shape
        ("n1-standard-3", ()),
        ("n1-standard-48", ()),
        ("a2-highgpu-1g", ()),
        ("e2-standard-4", ()),
    ],
)
def test_t4_counts_an_n1_type_takes(machine_type: str, counts: tuple[int, ...]):
    """GCP's T4-on-N1 limits by vCPUs and memory."""
    assert c.n1_attachable_gpu_counts(machine_type) == counts


@pytest.mark.parametrize(
    ("machine_type", "accelerator"),
    [
        ("n1-standard-4", "nvidia-tesla-t4"),
        ("n1-standard-2", "nvidia-tesla-t4"),  # predefined N1, not catalogued
        ("g2-standard-4", "nvidia-l4"),
        ("a2-highgpu-1g", "nvidia-tesla-a100"),
        ("a2-ultragpu-1g", "nvidia-a100-80gb"),
        ("a3-highgpu-8g", "nvidia-h100-80gb"),
        ("a3-megagpu-8g", "nvidia-h100-mega-80gb"),
        ("e2-standard-4", None),
        ("n1-highmem-1", None),
    ],
)
def test_gke_accelerator_label_of_a_machine_type(machine_type: str, accelerator: str | None):
    """The cloud.google.com/gke-accelerator value GKE puts on nodes of each type."""
    assert c.gke_accelerator_for_machine_type(machine_type) == accelerator


# ------------------------------------------------------------------------------------------ MIG layouts


def test_mig_layouts_within_the_slices_fit():
    """Up to 7 compute and 8 memory slices, within each profile's max count: no problem."""
    a100 = c.gpu_model("A100-40GB")
    assert mig.mig_layout_problems(a100, {}) == []
    assert mig.mig_layout_problems(a100, {"1g.5gb": 7}) == []
    assert mig.mig_layout_problems(a100, {"3g.20gb": 2}) == []
    assert mig.mig_layout_problems(a100, {"4g.20gb": 1, "2g.10gb": 1, "1g.5gb": 1}) == []
    assert mig.mig_layout_problems(a100, {"7g.40gb": 1, "1g.5gb": 0}) == []


def test_mig_layout_problems_are_named_one_by_one():
    """Each wrong entry gets its own message; the slice totals are checked over the valid entries."""
    a100 = c.gpu_model("A100-40GB")
    assert mig.mig_layout_problems(a100, {"1g.5gb": 8, "x": 1, "2g.10gb": True, "4g.20gb": -1}) == [
        "1g.5gb: 8 instances asked for, but at most 7 fit on one A100-40GB",
        "A100-40GB has no MIG profile 'x'; valid profiles: 1g.5gb, 1g.5gb+me, 1g.10gb, 2g.10gb, 3g.20gb, 4g.20gb, "
        "7g.40gb",
        "2g.10gb: count must be a whole number >= 0, got True",
        "4g.20gb: count must be a whole number >= 0, got -1",
        "layout needs 8 compute slices; A100-40GB has 7 (8 x 1g.5gb = 8)",
    ]
    assert mig.mig_layout_problems(a100, {"3g.20gb": 2, "2g.10gb": 0, "1g.5gb": 1}) == [
        "layout needs 9 memory slices; A100-40GB has 8 (2 x 3g.20gb = 8, 1 x 1g.5gb = 1)"  # no '0 x 2g.10gb'
    ]
    assert mig.mig_layout_problems(a100, {"4g.20gb": 1, "3g.20gb": 1, "1g.10gb": 1}) == [
        "layout needs 8 compute slices; A100-40GB has 7 (1 x 4g.20gb = 4, 1 x 3g.20gb = 3, 1 x 1g.10gb = 1)",
        "layout needs 10 memory slices; A100-40GB has 8 (1 x 4g.20gb = 4, 1 x 3g.20gb = 4, 1 x 1g.10gb = 2)",
    ]
    assert mig.mig_layout_problems(a100, {"2g.10gb": 2.0}) == ["2g.10gb: count must be a whole number >= 0, got 2.0"]


def test_mig_on_a_gpu_without_mig():
    """A GPU without MIG is refused once, naming the ones that have it; an empty layout is fine anywhere."""
    t4 = c.gpu_model("T4")
    assert mig.mig_layout_problems(t4, {"1g.5gb": 1}) == [
        "T4 does not support MIG (MIG-capable models: A100-40GB, A100-80GB, H100, H200, B200)"
    ]
    assert mig.mig_layout_problems(t4, {}) == []
    with pytest.raises(KeyError) as err:
        c.gpu_model("H100").mig_profile("1g.5gb")
    assert err.value.args[0].startswith("H100 has no MIG profile '1g.5gb'; valid profiles: 1g.10gb, ")
