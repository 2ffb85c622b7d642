"""``gpu-platform plan``'s image section for a person (``images.ImagesPlan`` as text): read by ``gpu-platform plan``
and the summary. Reads only the plan, so the text cannot say more than ``Plan.images`` does."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .aws import ecr_mirror
from .images import DISK_BUILDER, NAMESPACE, PRE_PULL_PREFIX, PULL_THROUGH_ACTIONS, SPEGEL_CHART, ImagesPlan

_WARM_TEXT = {
    "secondary-boot-disk": "warm at boot from the secondary boot disk {disk} (image streaming on)",
    "snapshot": "warm at boot from snapshot {snapshot} (the data volume /dev/xvdb, initialized at 300 MiB/s)",
    "pre-pull": "warmed by the pre-puller DaemonSet {namespace}/{puller}: warm for work that lands after its pull; a "
    "node scaled up for a pod shares that pull",
    "none": "not warm",
}


def _usd(x: float | None) -> str:
    return "price unknown" if x is None else f"${x:,.2f}"


def cold_pull_text(c: Mapping[str, Any]) -> str:
    size = f"{c['gib']} GiB" + ("" if c["size"] == "stack" else " (default size)")
    what = (
        f"{c['minutes']} min, {c['gpuHoursPerNode']} GPU-hours, {_usd(c['usdPerNode'])} per node, "
        f"{_usd(c['usdMaxScale'])} for {c['maxNodes']} nodes from zero"
    )
    return f"a cold pull of {size}: {what}" + ("; avoided" if c["avoided"] else "")


def text(p: ImagesPlan | None) -> list[str]:
    """``gpu-platform plan``'s image section: the mirror and its upstreams, per pool what is warm and how, and what
    a cold pull costs there."""
    if p is None:
        return []
    via = {"ecr": "the ECR pull-through cache", "artifact-registry": "Artifact Registry remote repositories"}
    mirror = f"{p.mirror} via {via.get(p.mirror_kind or '', 'the registry')} {p.registry}" if p.registry else p.mirror
    lines = ["", f"Images (mirror: {mirror})"]
    how = {"pull-through": "pulled through", "copied": "copied by you", "in-cloud": "in the cloud's registry"}
    moved = [u for u in p.upstreams if u.how != "direct"]
    if moved:
        lines.append(
            "  upstreams: "
            + "; ".join(
                f"{u.host} {how[u.how]}" + (f" (credential {u.credential})" if u.credential else "") for u in moved
            )
        )
    if p.mirror == "peer":
        peers = [pool.pool for pool in p.pools.values() if pool.peer]
        lines.append(
            f"  Spegel ({SPEGEL_CHART}) serves images node to node on "
            + (f"{', '.join(peers)} (their containerd keeps unpacked layers)" if peers else "every node")
            + ("; the other pools pull from the upstreams" if peers and len(peers) < len(p.pools) else "")
        )
    if p.node_policy is not None:
        lines.append(
            f"  the platform's node roles may fill the cache ({', '.join(PULL_THROUGH_ACTIONS)}); nodes you run "
            "(the system nodes of a found cluster) need the same to pull the platform's controllers the first time"
        )
    for pool in p.pools.values():
        names = ", ".join(
            f"{i.name} ({i.pull}" + (", pinned by digest" if i.digest else "") + f", {i.size_gib} GiB)"
            for i in pool.images
        )
        warm = _WARM_TEXT[pool.warm].format(
            disk=pool.disk_image,
            snapshot=pool.snapshot_id,
            namespace=NAMESPACE,
            puller=f"{PRE_PULL_PREFIX}{pool.pool}",
        )
        extra = [
            *(["image streaming"] if pool.streaming and pool.warm != "secondary-boot-disk" else []),
            *(["FastImagePull (SOCI parallel pull)"] if pool.fast_pull else []),
            *(["keeps unpacked layers for the peer mirror"] if pool.peer else []),
            *([ecr_mirror.pulls_text(p.registry, pool.mirror_hosts, pool.fast_pull)] if p.mirror_kind == "ecr" else []),
            *([f"references rewritten to {p.registry}"] if p.mirror_kind == "artifact-registry" else []),
        ]
        head = f"  {pool.pool}: {names} {warm}" if pool.images else f"  {pool.pool}: no declared image"
        lines.append(head + "".join(f"; {e}" for e in extra) + f"; {cold_pull_text(pool.cold_pull)}")
        if pool.disk_build:
            lines.append(f"    build {pool.disk_image} with gke-disk-image-builder ({DISK_BUILDER}): {pool.disk_build}")
    copied = [u for u in p.upstreams if u.how == "copied"]
    lines += [f"  copy: {c}" for c in p.copy_commands]
    for u in copied:
        repos = [r for r in u.images if r.rsplit("/", 1)[-1].count(":") == 0 and "@" not in r]
        if repos:
            lines.append(
                f"  copy: the charts' images of {', '.join(repos)} at the pinned chart versions under {u.base}/ "
                "(`helm template` of the pinned charts names each)"
            )
    return lines
