"""How an aws pool's reservation (``components/plan/reservations.py``) reads in EC2/EKS and Karpenter terms.

Plain data (SDK snake_case for the launch template, camelCase for Karpenter's custom resources); no SDK.

* Managed node groups, On-Demand Capacity Reservation: launch template ``capacityReservationSpecification``
  with ``capacityReservationTarget.capacityReservationId`` (``match: any``: preference ``open``, any open
  ODCR matching type and AZ). Capacity Block for ML: the same target plus ``instanceMarketOptions.marketType:
  capacity-block`` and the node group's ``capacityType: CAPACITY_BLOCK`` (EKS user guide, "Create a managed node
  group with Capacity Blocks for ML"; EC2 ``LaunchTemplateInstanceMarketOptionsRequest.MarketType``).
* Karpenter (v1.14.1): ``capacityReservationSelectorTerms`` (``id``, or ``tags``, or ``instanceMatchCriteria:
  open``) on the pool's own EC2NodeClass, and the NodePool requires ``karpenter.sh/capacity-type: reserved``:
  the pool launches only into its reservation (declare a second pool for on-demand overflow). Karpenter treats
  Capacity Blocks as reserved capacity too (``CapacityReservationTypeCapacityBlock``).
"""

from __future__ import annotations

from typing import Any

from ...spec.model import NodePool
from ..reservations import PoolReservation, pool_reservation

RESERVED = "reserved"  # karpenter.sh/capacity-type value of reserved offerings
CAPACITY_BLOCK = "CAPACITY_BLOCK"  # EKS node group capacityType


def node_group_capacity_type(pool: NodePool, default: str) -> str:
    r = pool_reservation(pool)
    return CAPACITY_BLOCK if r is not None and r.kind == "capacity-block" else default


def launch_template_args(pool: NodePool) -> dict[str, Any]:
    """Launch-template arguments of a managed pool's reservation ({} without one)."""
    r = pool_reservation(pool)
    if r is None:
        return {}
    if r.match == "any":
        return {"capacity_reservation_specification": {"capacity_reservation_preference": "open"}}
    out: dict[str, Any] = {
        "capacity_reservation_specification": {"capacity_reservation_target": {"capacity_reservation_id": r.ids[0]}}
    }
    if r.kind == "capacity-block":
        out["instance_market_options"] = {"market_type": "capacity-block"}
    return out


def selector_terms(r: PoolReservation) -> list[dict[str, Any]]:
    """EC2NodeClass ``capacityReservationSelectorTerms`` (``id`` excludes every other key in a term)."""
    if r.match == "any":
        return [{"instanceMatchCriteria": "open"}]
    terms: list[dict[str, Any]] = [{"id": i} for i in r.ids]
    if r.tags:
        terms.append({"tags": dict(r.tags)})
    return terms
