"""GKE rules, checked before anything is registered (the API would otherwise reject them mid-deploy)."""

from __future__ import annotations

from collections.abc import Iterator

from components import catalog
from components.derive import device_plugin_owner
from components.spec import Problem, StackSpec, key, rule

GCP_OS = ("cos", "ubuntu")
# GKE's bound on gpuSharingConfig.maxSharedClientsPerGpu (time-sharing and MPS).
GKE_MAX_SHARED_CLIENTS = 48


def _is_zone(location: str | None) -> bool:
    return bool(location) and location.count("-") == 2


@rule
def gke_pools(spec: StackSpec) -> Iterator[Problem]:
    if spec.cloud != "gcp":
        for i, pool in enumerate(spec.node_pools):
            if "gke" in pool.model_fields_set:
                yield Problem(key("nodePools", i, "gke"), f"does not apply when cloud is {spec.cloud}")
        return
    for i, pool in enumerate(spec.node_pools):
        at = ("nodePools", i)
        model = catalog.gpu_model(pool.gpu.model)
        if model.gke_accelerator is None:
            yield Problem(key(*at, "gpu", "model"), f"{pool.gpu.model} is not offered on GKE")
        if pool.os is not None and pool.os not in GCP_OS:
            yield Problem(key(*at, "os"), f"must be one of {', '.join(GCP_OS)} on gcp")
        if len(pool.instance_types) != 1:
            yield Problem(key(*at, "instanceTypes"), "a GKE node pool has exactly one machine type")
        for j, name in enumerate(pool.instance_types[:1]):
            mt = catalog.gcp_machine_type(name)
            if mt is None:
                yield Problem(key(*at, "instanceTypes", j), f"{name!r} is not a known GPU machine type")
            elif mt.gpu_model is None:
                counts = catalog.n1_attachable_gpu_counts(name)
                if pool.gpu.model != "T4":
                    yield Problem(key(*at, "instanceTypes", j), f"{name} takes attached T4 GPUs, not {pool.gpu.model}")
                elif pool.gpu.per_node not in counts:
                    yield Problem(
                        key(*at, "gpu", "perNode"),
                        f"{name} takes {', '.join(map(str, counts))} T4 GPUs, not {pool.gpu.per_node}",
                    )
            elif mt.gpu_model != pool.gpu.model:
                yield Problem(key(*at, "instanceTypes", j), f"{name} carries {mt.gpu_model}, not {pool.gpu.model}")
            elif mt.gpu_count != pool.gpu.per_node:
                yield Problem(key(*at, "gpu", "perNode"), f"{name} has {mt.gpu_count} GPUs, not {pool.gpu.per_node}")
        g = pool.gke
        if g.compact_placement:
            zones = g.zones or ([spec.cluster.location] if _is_zone(spec.cluster.location) else [])
            if len(zones) != 1:
                yield Problem(
                    key(*at, "gke", "compactPlacement"), "compact placement needs exactly one zone (gke.zones)"
                )
        if g.queued_provisioning:
            if pool.min_nodes != 0:
                yield Problem(key(*at, "minNodes"), "queued provisioning needs minNodes 0")
            if g.reservation != "none":
                yield Problem(key(*at, "gke", "reservation"), "queued provisioning cannot consume a reservation")
            if pool.capacity == "spot":
                yield Problem(key(*at, "capacity"), "queued provisioning does not use spot capacity")
        if g.reservation == "specific" and not g.reservation_name:
            yield Problem(key(*at, "gke", "reservationName"), "is required for a specific reservation")
        if g.reservation != "specific" and g.reservation_name:
            yield Problem(key(*at, "gke", "reservationName"), "applies only to reservation: specific")
        s = pool.sharing
        if s is None or device_plugin_owner(spec) != "gke":
            continue
        if s.strategy in ("time-slicing", "mps") and (s.replicas or 0) > GKE_MAX_SHARED_CLIENTS:
            yield Problem(
                key(*at, "sharing", "replicas"),
                f"GKE shares a GPU with at most {GKE_MAX_SHARED_CLIENTS} clients, got {s.replicas}",
            )
        if s.strategy in ("time-slicing", "mps") and s.rename_by_default:
            yield Problem(key(*at, "sharing", "renameByDefault"), "GKE's device plugin does not rename shared GPUs")
        if s.strategy == "mig" and s.layout and model.supports_mig:
            if len(s.layout) != 1:
                yield Problem(
                    key(*at, "sharing", "layout"),
                    "GKE partitions a node pool's GPUs with one gpuPartitionSize: use a single MIG profile",
                )
            else:
                ((profile, count),) = s.layout.items()
                prof = model.mig_profiles.get(profile)
                if prof is not None and count != prof.max_count:
                    yield Problem(
                        key(*at, "sharing", "layout", profile),
                        f"GKE makes the most {profile} partitions a GPU holds ({prof.max_count}); set {prof.max_count}",
                    )
