"""Reserved capacity, read the same way on both clouds: a pool's ``reservation:`` block (and, on gcp, the older
``gke.reservation`` / ``gke.reservationName`` keys, still accepted) becomes one ``PoolReservation``.

What each cloud does with it:

* aws, managed node groups: the launch template's ``capacityReservationSpecification`` (target one reservation
  id, or ``open`` for ``match: any``); for Capacity Blocks also ``instanceMarketOptions.marketType:
  capacity-block`` and the node group's capacity type ``CAPACITY_BLOCK`` (EKS user guide, "Create a managed
  node group with Capacity Blocks for ML": one instance type, the reservation's AZ, the launch template
  carrying both settings). See ``components/plan/aws/reservations.py``.
* aws, Karpenter: ``capacityReservationSelectorTerms`` on the pool's own EC2NodeClass and the ``reserved``
  capacity type on its NodePool (Karpenter v1.14.1 chart ``settings.featureGates.reservedCapacity``: BETA,
  on by default; ``pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml`` for the term fields).
* gcp: the node pool's ``reservationAffinity`` (``SPECIFIC_RESERVATION`` with
  ``compute.googleapis.com/reservation-name``, or ``ANY_RESERVATION``).

A reservation is paid for whether or not nodes run in it (EC2 "On-Demand Capacity Reservations" billing; a
Capacity Block is paid up front; Compute Engine bills reserved resources at on-demand rates while unused): the
summary says so next to the cost.

Stdlib and the spec only: rules import this.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from ..spec.model import NodePool, Problem, StackSpec, key, rule

AWS_RESERVATION_ID = r"^cr-[0-9a-f]+$"


@dataclass(frozen=True)
class PoolReservation:
    """The reserved capacity one pool runs on: on-demand or a capacity block, by id or by tags."""

    kind: str  # on-demand | capacity-block
    match: str  # specific | any
    ids: tuple[str, ...] = ()
    tags: dict[str, str] = field(default_factory=dict, hash=False)
    instance_type: str | None = None
    availability_zone: str | None = None

    def describe(self) -> str:
        what = "Capacity Block" if self.kind == "capacity-block" else "reservation"
        if self.match == "any":
            return f"any matching {what}"
        if self.ids:
            return f"{what} {', '.join(self.ids)}"
        return f"{what} tagged {', '.join(f'{k}={v}' for k, v in sorted(self.tags.items()))}"


def pool_reservation(pool: NodePool) -> PoolReservation | None:
    """The pool's reservation, from ``reservation:`` or the older ``gke.reservation`` keys; None if none."""
    r = pool.reservation
    if r is not None:
        return PoolReservation(
            kind=r.kind,
            match=r.match,
            ids=tuple(r.ids),
            tags=dict(sorted(r.tags.items())),
            instance_type=r.instance_type,
            availability_zone=r.availability_zone,
        )
    g = pool.gke
    if g.reservation == "any":
        return PoolReservation(kind="on-demand", match="any")
    if g.reservation == "specific" and g.reservation_name:
        return PoolReservation(kind="on-demand", match="specific", ids=(g.reservation_name,))
    return None


def reserved_pools(spec: StackSpec) -> list[tuple[NodePool, PoolReservation]]:
    return [(p, r) for p in spec.node_pools if (r := pool_reservation(p)) is not None]


# ------------------------------------------------------------------------------------------------ rules


@rule
def reservations(spec: StackSpec) -> Iterator[Problem]:
    for i, pool in enumerate(spec.node_pools):
        r = pool.reservation
        if r is None:
            continue
        at = ("nodePools", i, "reservation")
        if spec.cloud == "existing":
            yield Problem(key(*at), "does not apply to existing clusters (gpu-platform creates no nodes there)")
            continue
        if "reservation" in pool.gke.model_fields_set or "reservation_name" in pool.gke.model_fields_set:
            yield Problem(
                key("nodePools", i, "gke", "reservation"),
                "is the older spelling of nodePools[].reservation; set only reservation "
                "(gke.reservation: specific + reservationName: X is reservation: {ids: [X]})",
            )
        if pool.capacity == "spot":
            yield Problem(key(*at), "spot pools cannot launch into reserved capacity: use capacity: on-demand")
        if r.match == "any" and (r.ids or r.tags):
            yield Problem(key(*at, "match"), "any consumes any matching reservation: drop ids and tags")
        if r.match == "specific" and not (r.ids or r.tags):
            yield Problem(key(*at), "names no reservation: set ids (or, aws karpenter pools, tags), or match: any")
        if r.instance_type is not None and pool.instance_types and r.instance_type not in pool.instance_types:
            yield Problem(
                key(*at, "instanceType"),
                f"the reservation holds {r.instance_type}, which the pool does not launch "
                f"(instanceTypes: {', '.join(pool.instance_types)}): no node could use it",
            )
        if spec.cloud == "aws":
            yield from _aws(spec, i, pool)
        else:
            yield from _gcp(i, pool)


def _aws(spec: StackSpec, i: int, pool: NodePool) -> Iterator[Problem]:
    import re

    r = pool.reservation
    assert r is not None
    at = ("nodePools", i, "reservation")
    for j, rid in enumerate(r.ids):
        if not re.match(AWS_RESERVATION_ID, rid):
            yield Problem(key(*at, "ids", j), f"{rid!r} is not an EC2 capacity reservation id (cr-...)")
    region = spec.cluster.region
    if r.availability_zone and region and not r.availability_zone.startswith(region):
        yield Problem(key(*at, "availabilityZone"), f"{r.availability_zone} is not in the cluster's region {region}")
    if pool.karpenter.on_demand_fallback:
        yield Problem(key(*at), "does not combine with karpenter.onDemandFallback (a spot-pool setting)")
    if r.kind == "capacity-block" and r.match == "any":
        yield Problem(key(*at, "match"), "a Capacity Block is targeted by id (or, karpenter, tags), not any")
    if pool.provisioner == "managed":
        if r.tags:
            yield Problem(
                key(*at, "tags"),
                "managed node groups target a reservation by id (launch template capacityReservationTarget); "
                "selecting by tags needs Karpenter: list the id",
            )
        if len(r.ids) > 1:
            yield Problem(key(*at, "ids"), "a managed node group's launch template targets one reservation id")
        if r.kind == "capacity-block":
            if len(pool.instance_types) != 1:
                yield Problem(
                    key("nodePools", i, "instanceTypes"),
                    "a Capacity Block node group launches exactly one instance type (the block's)",
                )
            if len(pool.eks.subnet_ids) != 1:
                yield Problem(
                    key("nodePools", i, "eks", "subnetIds"),
                    "a Capacity Block lives in one AZ: give the node group exactly one subnet, in that AZ",
                )


def _gcp(i: int, pool: NodePool) -> Iterator[Problem]:
    r = pool.reservation
    assert r is not None
    at = ("nodePools", i, "reservation")
    if r.kind != "on-demand":
        yield Problem(key(*at, "kind"), "Capacity Blocks are an AWS product; on gcp use a reservation (ids)")
    if r.tags:
        yield Problem(key(*at, "tags"), "gcp reservations are named, not tagged: use ids")
    if r.match == "specific" and len(r.ids) != 1:
        yield Problem(key(*at, "ids"), "a GKE node pool consumes one specific reservation: name exactly one")
    if pool.gke.queued_provisioning:
        yield Problem(key(*at), "queued provisioning cannot consume a reservation")
    if r.availability_zone and pool.gke.zones != [r.availability_zone]:
        yield Problem(
            key("nodePools", i, "gke", "zones"),
            f"must be [{r.availability_zone}], the reservation's zone: nodes elsewhere cannot use it",
        )


@dataclass(frozen=True)
class ReservationPlan:
    """A pool's reserved capacity as the plan holds it (``Plan.reservations``): what it names and how the cloud
    object of the pool consumes it."""

    kind: str  # on-demand | capacity-block
    match: str  # specific | any
    ids: tuple[str, ...]
    tags: Mapping[str, str]
    instance_type: str | None
    availability_zone: str | None
    description: str  # ``PoolReservation.describe``: "reservation cr-...", "any matching Capacity Block"...
    used_as: str  # the setting of the node group, EC2NodeClass and NodePool, or GKE node pool that consumes it


def reservations_plan(spec: StackSpec) -> dict[str, ReservationPlan] | None:
    """Pool -> its reservation, in the stack's order; None when no pool reserves capacity."""
    out = {
        pool.name: ReservationPlan(
            kind=r.kind,
            match=r.match,
            ids=tuple(r.ids),
            tags=MappingProxyType(dict(sorted(r.tags.items()))),
            instance_type=r.instance_type,
            availability_zone=r.availability_zone,
            description=r.describe(),
            used_as=_used_as(spec, pool, r),
        )
        for pool, r in reserved_pools(spec)
    }
    return out or None


def summary_lines(spec: StackSpec) -> list[str]:
    """summary.md: each pool's reserved capacity, the same table on both clouds."""
    return summary(reservations_plan(spec))


def summary(reserved: Mapping[str, ReservationPlan] | None) -> list[str]:
    """``summary_lines`` of the plan's reservations (``Plan.reservations``)."""
    if not reserved:
        return []
    lines = [
        "## Reserved capacity",
        "",
        "| pool | reservation | instance type | zone | used as |",
        "|---|---|---|---|---|",
    ]
    for pool, r in reserved.items():
        lines.append(
            f"| {pool} | {r.description} | {r.instance_type or '-'} | {r.availability_zone or '-'} | {r.used_as} |"
        )
    lines += [
        "",
        "A reservation is paid for whether or not nodes run in it (an ODCR bills at the on-demand rate from its "
        "start, a Capacity Block is paid up front, a GCE reservation bills its VMs while unused): the Cost table's "
        "figures for these pools are what running nodes cost, not the reservation's own bill.",
    ]
    return lines


def _used_as(spec: StackSpec, pool: NodePool, r: PoolReservation) -> str:
    if spec.cloud == "gcp":
        kind = "ANY_RESERVATION" if r.match == "any" else "SPECIFIC_RESERVATION"
        return f"node pool reservationAffinity {kind}"
    if pool.provisioner == "karpenter":
        return "EC2NodeClass capacityReservationSelectorTerms, NodePool capacity type reserved"
    if r.kind == "capacity-block":
        return "launch template capacity reservation + market type capacity-block, node group CAPACITY_BLOCK"
    return "launch template capacity reservation " + ("(open)" if r.match == "any" else "target")
