"""MIG layouts: whether a per-GPU layout ``{profile: count}`` fits a GPU model (the logic over the catalog's
profile tables, ``components/data/catalog.py``, which holds data only)."""

from __future__ import annotations

from collections.abc import Mapping

from ..data.catalog import GPU_MODELS, MIG_COMPUTE_SLICES, MIG_MEMORY_SLICES, GpuModel


def mig_layout_problems(model: GpuModel, layout: Mapping[str, int]) -> list[str]:
    """Why a per-GPU MIG layout ``{profile: count}`` cannot be applied to ``model``; [] when it fits.

    Checks: the GPU supports MIG, every profile exists on it, counts are whole and within each profile's
    max_count, and the layout needs at most 7 compute slices and 8 memory slices in total.

    For the profile sets in this catalog, passing these checks also means the instances can be placed:
    with NVIDIA's documented placements (1g at any of slots 0-6, double-memory 1g at 0/2/4/6, 2g at
    0/2/4, 3g at 0/4, 4g and 7g at 0) every layout within the slice totals has a placement. Note that a
    pair of 3g instances uses all 8 memory slices, so nothing else fits beside them even though one
    compute slice is left over. Creation order can still matter when instances are made by hand;
    mig-parted handles that.
    """
    if not layout:
        return []
    if not model.supports_mig:
        return [f"{model.name} does not support MIG (MIG-capable models: {', '.join(_mig_model_names())})"]

    problems: list[str] = []
    compute = memory = 0
    for name, count in layout.items():
        profile = model.mig_profiles.get(name)
        if profile is None:
            problems.append(model.unknown_profile_message(name))
            continue
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            problems.append(f"{name}: count must be a whole number >= 0, got {count!r}")
            continue
        if count > profile.max_count:
            problems.append(
                f"{name}: {count} instances asked for, but at most {profile.max_count} fit on one {model.name}"
            )
        compute += profile.compute_slices * count
        memory += profile.memory_slices * count

    if compute > MIG_COMPUTE_SLICES:
        problems.append(
            f"layout needs {compute} compute slices; {model.name} has {MIG_COMPUTE_SLICES}"
            f" ({_slice_breakdown(model, layout, 'compute_slices')})"
        )
    if memory > MIG_MEMORY_SLICES:
        problems.append(
            f"layout needs {memory} memory slices; {model.name} has {MIG_MEMORY_SLICES}"
            f" ({_slice_breakdown(model, layout, 'memory_slices')})"
        )
    return problems


def _slice_breakdown(model: GpuModel, layout: Mapping[str, int], attr: str) -> str:
    parts = []
    for name, count in layout.items():
        profile = model.mig_profiles.get(name)
        if profile is not None and isinstance(count, int) and not isinstance(count, bool) and count > 0:
            parts.append(f"{count} x {name} = {count * getattr(profile, attr)}")
    return ", ".join(parts)


def _mig_model_names() -> list[str]:
    return [m.name for m in GPU_MODELS.values() if m.supports_mig]
