"""``gpu-platform explain``'s image note (issue 39.4): on the pool a workload lands on, is each of its images warm
(declared for the pool, and how: snapshot, disk image, pre-puller), or at least pulled through the mirror, or
neither, when every new node pulls it cold from its upstream. A note, never a stop: a cold pull delays the pods,
it does not keep them Pending. Reads the plan's image section (``Plan.images``) and cost constants only."""

from __future__ import annotations

from typing import Any

from ..plan import cost, mirror
from ..plan.images import ImagesPlan, WarmImage
from ..plan.plan import PoolPlan
from ..spec.model import DEFAULT_IMAGE_GIB
from .workloads import PodSet

_HOW = {
    "secondary-boot-disk": "on the node's secondary boot disk at boot",
    "snapshot": "on the node's data volume at boot (snapshot)",
    "pre-pull": "pre-pulled (warm for work that lands after the pull; a node scaled up for this pod shares it)",
}


def pod_images(sets: list[PodSet]) -> list[str]:
    """Every image the pod sets run (init containers too), once each, in order."""
    found: dict[str, None] = {}
    for ps in sets:
        for kind in ("initContainers", "containers"):
            for c in ps.pod.get(kind) or []:
                if isinstance(c.get("image"), str):
                    found.setdefault(c["image"], None)
    return list(found)


def _cold(pool: PoolPlan, gib: int) -> str:
    minutes = gib * cost.GB_PER_GIB / cost.COLD_PULL_GB_PER_MINUTE
    node = pool.price["onDemandPerNodeHour"] if pool.capacity != "spot" else pool.price["spotPerNodeHour"]
    usd = f", ${node * minutes / 60:,.2f} of idle GPUs" if node is not None else ""
    size = f"{gib} GiB{'' if gib != DEFAULT_IMAGE_GIB else ' assumed'}"
    return f"about {round(minutes, 1)} min per new node ({size}{usd})"


def _match(images: tuple[WarmImage, ...], ref: str, attr: str) -> WarmImage | None:
    want = mirror.normalize(ref)
    return next((i for i in images if mirror.normalize(getattr(i, attr)) == want), None)


def note(plan: ImagesPlan, pool: PoolPlan, refs: list[str]) -> str:
    """One line per image, joined: warm (how), mirrored, or a warning that it is neither."""
    pi = plan.pools[pool.name]
    parts: list[str] = []
    for ref in refs:
        warm = _match(pi.images, ref, "pull")
        if warm is not None and pi.warm != "none":
            parts.append(f"{ref} is warm on {pool.name}: {_HOW[pi.warm]}")
            continue
        if warm is not None:  # declared, but images.prePull is off and no snapshot or disk image holds it
            streamed = "; image streaming reads it on demand" if pi.streaming else ""
            parts.append(
                f"{ref} is declared for {pool.name} but not warm (images.prePull is off){streamed}: "
                f"{_cold(pool, warm.size_gib)}"
            )
            continue
        declared = _match(pi.images, ref, "image")
        if declared is not None and declared.pull != declared.image:
            parts.append(
                f"warning: {ref} is declared for {pool.name} but warm and mirrored as {declared.pull}: use that "
                f"reference, or each new node pulls this one from {mirror.host_of(ref)}, "
                f"{_cold(pool, declared.size_gib)}"
            )
            continue
        if _mirrored(plan, ref) or pi.peer or mirror.host_of(ref) in pi.mirror_hosts:
            size = declared.size_gib if declared is not None else DEFAULT_IMAGE_GIB
            how = " (the nodes' containerd mirror)" if mirror.host_of(ref) in pi.mirror_hosts else ""
            parts.append(f"{ref} is pulled through the mirror{how}, not warm on {pool.name}: {_cold(pool, size)}")
            continue
        size = declared.size_gib if declared is not None else DEFAULT_IMAGE_GIB
        parts.append(
            f"warning: {ref} is neither warm nor mirrored on {pool.name}: each new node pulls it from "
            f"{mirror.host_of(ref)}, {_cold(pool, size)}; declare it in images.workloads for {pool.name}"
        )
    return "; ".join(parts) or "no image to pull"


def _mirrored(plan: ImagesPlan, ref: str) -> bool:
    """The reference goes through the mirror: it names the mirror's registry, or an upstream the mirror leaves where
    it is (already in the cloud's registry). (A pool whose nodes are Spegel peers mirrors every registry; one whose
    containerd mirrors an upstream to the ECR cache, ``PoolImagesPlan.mirror_hosts``, mirrors that upstream.)"""
    host = mirror.host_of(ref)
    if plan.registry and mirror.normalize(ref).startswith(f"{plan.registry.rstrip('/')}/"):
        return True
    return any(u.host == host and u.how == "in-cloud" for u in plan.upstreams)


def image_layer(plan: Any, pool: PoolPlan, sets: list[PodSet]) -> str | None:
    """The image layer's detail, or None when the stack has no image section (nothing to say)."""
    if plan.images is None:
        return None
    return note(plan.images, pool, pod_images(sets))
