"""The most GPU units a tenant can hold, per pool and in total, by who admits its workloads; and per pool, the GPUs
no tenant can ever hold. One decision each, read by the plan (``TenantPlan.pool_ceiling_units``, ``gpu_limit``,
``quota_hard``; ``PoolPlan.uncovered_gpus``), the cost (``cost.tenant_gpus``, ``cost.pool_doc``) and, through the
plan, by explain and the summary.

- **Kueue** tenants: Kueue's maximum capacity per flavor (``kueue.tenant_max_units``, kueue v0.19.2
  ``potentialAvailable``): its own nominal quota plus what the cohort's other queues lend on that flavor, within its
  ``borrowingLimit``. A ``borrowingLimit`` with no lender on the flavor adds nothing.
- **Volcano** tenants: the queue's capability per pool (``derive.capability_pool_units``): nominal plus
  ``borrowingLimit``, or what the pool brings (proportion lends idle capacity, not quota).
- **No scheduler**: the nominal quota; nothing lends.

The namespace ResourceQuota caps the sum (``tenant_ceiling_units``), so that whatever Kueue or Volcano admits can
start, and nothing more.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from types import MappingProxyType

from ..spec.model import NodePool, StackSpec, Tenant
from . import derive, kueue


@derive.per_tenant
def tenant_pool_ceiling_units(spec: StackSpec, tenant: Tenant) -> dict[str, dict[str, int]]:
    """pool -> {resource: units} the tenant can hold at most on each pool it reaches."""
    scheduler = derive.tenant_scheduler(spec, tenant)
    if scheduler == "kueue" and spec.addons.kueue:
        return kueue.tenant_max_units(spec, tenant)
    if scheduler == "volcano" and spec.addons.volcano:
        return derive.capability_pool_units(spec, tenant)
    return derive.tenant_pool_units(spec, tenant)


def tenant_ceiling_units(spec: StackSpec, tenant: Tenant) -> dict[str, int]:
    """Per resource name, the most units the tenant can hold on all its pools together: its namespace
    ResourceQuota's GPU caps (``tenancy.quota_hard``). With a batch scheduler that is more than the nominal quota
    wherever it may borrow, so that workloads admitted on borrowed quota can start (the schedulers hand out the
    nominal quota and reclaim loans by preemption); without one, nothing lends and it is the nominal quota."""
    total: dict[str, int] = defaultdict(int)
    for units in tenant_pool_ceiling_units(spec, tenant).values():
        for name, n in units.items():
            total[name] += n
    return dict(sorted(total.items()))


@derive.per_pool
def uncovered_gpus(spec: StackSpec, pool: NodePool) -> int | None:
    """GPUs the pool may bring (``gpu_cap``) beyond the sum of the Kueue tenants' nominal quotas on it: Kueue
    never admits a workload onto them. Kueue lends only quota, never capacity: on a flavor each ClusterQueue holds
    at most its local quota plus its share of the cohort's ``SubtreeQuota``, and both add up to the queues'
    nominal quotas (kueue v0.19.2 pkg/cache/scheduler/resource_node.go ``accumulateFromChild``,
    ``potentialAvailable``; a queue without a cohort holds its own), so the pool can be scaled to a size no
    tenant workload ever fills, while its cost counts every GPU.

    None where Kueue does not hand the pool out: Volcano's pools (its proportion plugin gives a queue idle
    capacity beyond its guarantee up to its capability, volcano v1.15.1 proportion.go:91-139, so capacity above
    the guarantees is reachable), and stacks without Kueue (a ResourceQuota caps a resource name across pools,
    not per pool)."""
    if not spec.addons.kueue or pool.name in derive.volcano_pools(spec):
        return None
    quota = pool_quota_gpus(spec, pool.name, tenants="kueue")
    return max(pool.gpu_cap - quota, 0)


def pool_quota_gpus(spec: StackSpec, pool_name: str, tenants: str = "all") -> int:
    """The GPUs of the tenants' nominal quotas on a pool: every tenant's (``tenants="all"``) or the Kueue tenants'
    (``"kueue"``), summed once per spec for every pool."""
    return _pool_quota_gpus(spec)[tenants].get(pool_name, 0)


@derive.per_spec
def _pool_quota_gpus(spec: StackSpec) -> Mapping[str, Mapping[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for who, members in (("all", spec.tenants), ("kueue", derive.kueue_tenants(spec))):
        total: dict[str, int] = defaultdict(int)
        for tenant in members:
            for pool_name, n in tenant.gpu_quota.items():
                total[pool_name] += n
        out[who] = MappingProxyType(dict(total))
    return MappingProxyType(out)
