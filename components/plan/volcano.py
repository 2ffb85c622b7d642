"""What Volcano gets per tenant (pure): its Queue's spec. The Queue objects are ``components/render/volcano.py``'s;
the plan carries the spec (``TenantPlan.volcano_queue_spec``), which the renderer reads."""

from __future__ import annotations

from typing import Any

from components.plan import derive
from components.plan.tenancy import all_gpu_resources
from components.spec.model import StackSpec, Tenant


def queue_spec(spec: StackSpec, tenant: Tenant) -> dict[str, Any]:
    nominal = derive.tenant_units(spec, tenant)
    ceiling = derive.tenant_ceiling_units(spec, tenant)
    capability: dict[str, str] = {name: str(ceiling.get(name, 0)) for name in all_gpu_resources(spec)}
    if tenant.quota.cpu:
        capability["cpu"] = tenant.quota.cpu
    if tenant.quota.memory:
        capability["memory"] = tenant.quota.memory
    out: dict[str, Any] = {
        "weight": tenant.queue_weight,
        "reclaimable": True,
        "capability": dict(sorted(capability.items())),
    }
    guarantee = {name: str(n) for name, n in nominal.items() if n > 0}
    if guarantee:
        out["guarantee"] = {"resource": guarantee}
        # Volcano's queue webhook requires guarantee <= deserved <= capability for every guaranteed resource.
        # proportion computes its own deserved share from the weights; the capacity plugin would read this one.
        out["deserved"] = dict(guarantee)
    return out
