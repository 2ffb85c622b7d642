"""How a Karpenter spot pool with ``onDemandFallback`` splits its GPU cap between spot and on-demand (pure: the
cost report and the NodePools read it)."""

from __future__ import annotations

from ...spec.model import NodePool


def fallback_split(pool: NodePool) -> tuple[int, int]:
    """(spot GPUs, on-demand GPUs) of a pool with onDemandFallback.

    Karpenter's limits are per NodePool; nothing caps two NodePools together. So the pool's cap is split
    in whole nodes and the two parts add up to exactly ``gpu_cap``: ``onDemandMaxGpus`` if set, else half
    the nodes (rounded down) may be on-demand and the rest (the larger half) spot. Spot is still tried
    first; the split only bounds how much of the cap each capacity type can hold at once.
    """
    per_node = pool.gpu.per_node
    nodes = pool.gpu_cap // per_node
    on_demand = pool.karpenter.on_demand_max_gpus
    if on_demand is None:
        on_demand = (nodes // 2) * per_node
    return pool.gpu_cap - on_demand, on_demand
