"""Kueue's quota arithmetic (pure): how much of a flavor's resource a ClusterQueue can hold, alone or with what its
cohort lends, from an empty cluster or given what is admitted now.

A port of kueue v0.19.2 ``pkg/cache/scheduler/resource_node.go`` (``localQuota``, ``LocalAvailable``,
``available``, ``potentialAvailable``, ``addUsage``, ``removeUsage``, ``accumulateFromChild``), built from
ClusterQueue specs (``kueue.cluster_queue_spec``, what ``TenantPlan.cluster_queue_spec`` holds). Kueue's scheduler
compares a workload's request per flavor and resource with ``PotentialAvailable`` (its "maximum capacity") and
``Available`` (``pkg/scheduler/flavorassigner/flavorassigner.go`` ``fitsResourceQuota``); both are methods of
``ClusterQueueSnapshot`` over these functions (``pkg/cache/scheduler/clusterqueue_snapshot.go:167-180``).

The cohorts here are flat, as this platform makes them: a ClusterQueue names its cohort (``cohortName``) and no
Cohort object exists, so a cohort has no quota of its own (its ``Quotas`` are empty) and no parent, and its
``SubtreeQuota`` is what its ClusterQueues put in: per child ``SubtreeQuota - localQuota``
(``accumulateFromChild``), i.e. a ClusterQueue's whole nominal quota, or at most its ``lendingLimit``. Only
nominal quota exists to be borrowed: a ``borrowingLimit`` bounds a loan, it creates no capacity.

Amounts are Python integers: Kueue's ``resources.Amount`` saturates at ``math.MaxInt64`` ("Unlimited",
``pkg/resources/amount.go``) only for quantities that overflow int64, which no quota here comes near, so plain
arithmetic gives the same numbers. Quantities are read as Kueue reads them (``resources.AmountFromQuantity``):
cpu in millicores, everything else in whole units, rounded up.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal

FlavorResource = tuple[str, str]  # (flavor, resource): kueue's resources.FlavorResource
Usage = Mapping[str, Mapping[FlavorResource, int]]  # ClusterQueue -> what its admitted workloads hold

# ------------------------------------------------------------------------------------------ quantities

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1)}
_DECIMAL |= {"k": Decimal(10**3), "M": Decimal(10**6), "G": Decimal(10**9), "T": Decimal(10**12)}
_DECIMAL |= {"P": Decimal(10**15), "E": Decimal(10**18)}


# pure, and asked of the same few quotas again and again: a 200-tenant plan's quota tree reads ~1,900 quantities,
# ~20 of them distinct (the same cpu, memory and GPU amounts per pool), each a few Decimal operations
@functools.lru_cache(maxsize=4096, typed=True)
def quantity(resource: str, text: str | int) -> int:
    """A Kubernetes quantity as Kueue counts it (``resources.AmountFromQuantity``): ``cpu`` in millicores
    (``MilliValue``), any other resource in units (``Value``), both rounded up as ``resource.Quantity`` does."""
    s = str(text).strip()
    number, scale = s, Decimal(1)
    for suffix, factor in _BINARY.items():
        if s.endswith(suffix):
            number, scale = s[: -len(suffix)], Decimal(factor)
            break
    else:
        if "e" in s.lower() and not s.lower().endswith("e"):  # 1e3: a decimal exponent, not the E suffix
            number = s
        elif s and s[-1] in _DECIMAL:
            number, scale = s[:-1], _DECIMAL[s[-1]]
    value = Decimal(number) * scale * (1000 if resource == "cpu" else 1)
    return math.ceil(value)


# ------------------------------------------------------------------------------------------ the nodes


@dataclass(frozen=True)
class ResourceQuota:
    """kueue ``pkg/cache/scheduler/resource.go`` ``ResourceQuota``: nominal, and the limits when set."""

    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass
class Node:
    """A ``resourceNode`` (resource_node.go): a ClusterQueue or a cohort. ``parent`` is the cohort of a
    ClusterQueue that has one (``HasParent``); a cohort here never has one."""

    name: str
    quotas: dict[FlavorResource, ResourceQuota] = field(default_factory=dict)
    subtree_quota: dict[FlavorResource, int] = field(default_factory=dict)
    usage: dict[FlavorResource, int] = field(default_factory=dict)
    parent: Node | None = None
    children: list[Node] = field(default_factory=list)


def local_quota(node: Node, fr: FlavorResource) -> int:
    """``localQuota``: capacity only this node's subtree sees, never lent to the parent: what its lending
    limit keeps back (``SubtreeQuota - LendingLimit``, at least 0); without a lending limit, nothing."""
    q = node.quotas.get(fr)
    if q is not None and q.lending_limit is not None:
        return max(0, node.subtree_quota.get(fr, 0) - q.lending_limit)
    return 0


def local_available(node: Node, fr: FlavorResource) -> int:
    """``LocalAvailable``: how much of the local quota exceeds usage."""
    return max(0, local_quota(node, fr) - node.usage.get(fr, 0))


def available(node: Node, fr: FlavorResource) -> int:
    """``available``: what remains for the node given usage and borrowing limits; negative when over-admitted.
    (``ClusterQueueSnapshot.Available`` clamps it at 0: ``Quotas.available``.)"""
    if node.parent is None:
        return node.subtree_quota.get(fr, 0) - node.usage.get(fr, 0)
    parent_available = available(node.parent, fr)
    q = node.quotas.get(fr)
    if q is not None and q.borrowing_limit is not None:
        lq = local_quota(node, fr)
        stored_in_parent = node.subtree_quota.get(fr, 0) - lq
        used_in_parent = max(0, node.usage.get(fr, 0) - lq)
        with_max_from_parent = stored_in_parent - used_in_parent + q.borrowing_limit
        parent_available = min(with_max_from_parent, parent_available)
    return local_available(node, fr) + parent_available


def potential_available(node: Node, fr: FlavorResource) -> int:
    """``potentialAvailable``: the most the node could ever hold, with no usage anywhere, within its borrowing
    limit. Kueue's "maximum capacity": a request above it never fits (flavorassigner.go ``fitsResourceQuota``)."""
    if node.parent is None:
        return node.subtree_quota.get(fr, 0)
    avail = local_quota(node, fr) + potential_available(node.parent, fr)
    q = node.quotas.get(fr)
    if q is not None and q.borrowing_limit is not None:
        avail = min(node.subtree_quota.get(fr, 0) + q.borrowing_limit, avail)
    return avail


def add_usage(node: Node, fr: FlavorResource, val: int) -> None:
    """``addUsage``: usage on the node, the part past its local quota bubbling up to its cohort."""
    local = local_available(node, fr)
    node.usage[fr] = node.usage.get(fr, 0) + val
    if node.parent is not None and val > local:
        add_usage(node.parent, fr, val - local)


def remove_usage(node: Node, fr: FlavorResource, val: int) -> None:
    """``removeUsage``: usage off the node, and off its cohort as far as it was stored there."""
    stored_in_parent = node.usage.get(fr, 0) - local_quota(node, fr)
    node.usage[fr] = node.usage.get(fr, 0) - val
    if stored_in_parent <= 0 or node.parent is None:
        return
    remove_usage(node.parent, fr, min(val, stored_in_parent))


def accumulate_from_child(parent: Node, child: Node) -> None:
    """``accumulateFromChild``: a child's quota past its local quota is the parent's to lend, and its usage past
    its local quota counts against the parent."""
    for fr, child_quota in child.subtree_quota.items():
        parent.subtree_quota[fr] = parent.subtree_quota.get(fr, 0) + child_quota - local_quota(child, fr)
    for fr, child_usage in child.usage.items():
        delta = max(0, child_usage - local_quota(child, fr))
        parent.usage[fr] = parent.usage.get(fr, 0) + delta


# ------------------------------------------------------------------------------------------ the tree


def resource_quotas(cluster_queue: Mapping[str, object]) -> dict[FlavorResource, ResourceQuota]:
    """``createResourceQuotas`` (resource.go): every flavor x resource of the ClusterQueue's resource groups."""
    out: dict[FlavorResource, ResourceQuota] = {}
    for group in cluster_queue.get("resourceGroups") or ():  # type: ignore[union-attr]
        for flavor in group["flavors"]:
            for q in flavor["resources"]:
                r = q["name"]
                borrow, lend = q.get("borrowingLimit"), q.get("lendingLimit")
                out[(flavor["name"], r)] = ResourceQuota(
                    nominal=quantity(r, q["nominalQuota"]),
                    borrowing_limit=None if borrow is None else quantity(r, borrow),
                    lending_limit=None if lend is None else quantity(r, lend),
                )
    return out


class Quotas:
    """The ClusterQueues of a cluster and their cohorts, with a usage snapshot (none: an empty cluster).

    Built as Kueue's cache builds it: a ClusterQueue's ``SubtreeQuota`` is its nominal quota
    (``updateClusterQueueResourceNode``), a cohort's the sum its children pass up (``updateCohortResourceNode``,
    ``accumulateFromChild``); usage is then added per ClusterQueue with ``add_usage``, which bubbles what exceeds
    a queue's local quota to its cohort, as the cache does when it adds an admitted workload."""

    def __init__(self, cluster_queues: Mapping[str, Mapping[str, object]], usage: Usage | None = None):
        self.specs = {name: cluster_queues[name] for name in sorted(cluster_queues)}
        self.cluster_queues: dict[str, Node] = {}
        self.cohorts: dict[str, Node] = {}
        for name, spec in self.specs.items():
            quotas = resource_quotas(spec)
            cq = Node(name, quotas=quotas, subtree_quota={fr: q.nominal for fr, q in quotas.items()})
            self.cluster_queues[name] = cq
            cohort = spec.get("cohortName")
            if cohort:
                parent = self.cohorts.setdefault(str(cohort), Node(str(cohort)))
                cq.parent = parent
                parent.children.append(cq)
        for cohort in self.cohorts.values():
            for child in cohort.children:
                accumulate_from_child(cohort, child)
        for name, held in sorted((usage or {}).items()):
            for fr, val in sorted(held.items()):
                if val:
                    add_usage(self.cluster_queues[name], fr, val)

    def with_usage(self, usage: Usage) -> Quotas:
        """The same ClusterQueues with ``usage`` admitted (this one is left as it is)."""
        return Quotas(self.specs, usage)

    def node(self, cluster_queue: str) -> Node:
        return self.cluster_queues[cluster_queue]

    def cohort_of(self, cluster_queue: str) -> str | None:
        parent = self.node(cluster_queue).parent
        return parent.name if parent is not None else None

    def members(self, cohort: str) -> list[str]:
        """The ClusterQueues of a cohort, by name."""
        return sorted(c.name for c in self.cohorts[cohort].children) if cohort in self.cohorts else []

    def quota(self, cluster_queue: str, fr: FlavorResource) -> ResourceQuota | None:
        """The ClusterQueue's own quota on the flavor's resource; None where it lists no such flavor."""
        return self.node(cluster_queue).quotas.get(fr)

    def max_capacity(self, cluster_queue: str, fr: FlavorResource) -> int:
        """``ClusterQueueSnapshot.PotentialAvailable``: the largest request the ClusterQueue could ever admit on
        the flavor's resource (Kueue: "maximum capacity"), whatever is admitted now."""
        return potential_available(self.node(cluster_queue), fr)

    def available(self, cluster_queue: str, fr: FlavorResource) -> int:
        """``ClusterQueueSnapshot.Available``: what it can admit now without preempting, given this snapshot's
        usage (its own and what the cohort's other queues borrow); never below 0."""
        return max(0, available(self.node(cluster_queue), fr))

    def lends(self, cluster_queue: str, fr: FlavorResource) -> int:
        """What the ClusterQueue puts into its cohort for others to borrow (``accumulateFromChild``'s delta:
        ``SubtreeQuota - localQuota``, i.e. its nominal quota, or its lending limit when lower); 0 without a
        cohort or without quota there."""
        cq = self.node(cluster_queue)
        if cq.parent is None:
            return 0
        return cq.subtree_quota.get(fr, 0) - local_quota(cq, fr)

    def borrowing_with(self, cluster_queue: str, fr: FlavorResource, val: int) -> bool:
        """``ClusterQueueSnapshot.BorrowingWith``: admitting ``val`` more takes it past its nominal quota."""
        cq = self.node(cluster_queue)
        q = cq.quotas.get(fr)
        return (q.nominal if q else 0) < cq.usage.get(fr, 0) + val

    def cohort_quota(self, cohort: str, fr: FlavorResource) -> int:
        """The cohort's ``SubtreeQuota``: everything its queues lend on the flavor's resource."""
        node = self.cohorts.get(cohort)
        return node.subtree_quota.get(fr, 0) if node is not None else 0


def nominal_sum(cluster_queues: Iterable[Mapping[str, object]], fr: FlavorResource) -> int:
    """The nominal quotas of every ClusterQueue on the flavor's resource: the most Kueue ever admits onto the
    flavor at once (each cohort's usage is bounded by its ``SubtreeQuota`` plus its queues' local quotas, which
    add up to their nominal quotas; a queue without a cohort by its own)."""
    return sum(q.nominal for cq in cluster_queues for f, q in resource_quotas(cq).items() if f == fr)
