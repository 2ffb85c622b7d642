"""Reserved capacity read the same way on both clouds (components/plan/reservations.py): how a reservation is
described, what each provisioner turns it into (the summary's 'used as' column), and every rule with its key
and message. Expected texts are written out from the module's contract, not read back from it."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import stack_config

from components.cli.loader import SpecError, load_spec
from components.plan import reservations
from components.plan.reservations import PoolReservation

G = "gpu-platform:"
PAID_UNUSED = (
    "A reservation is paid for whether or not nodes run in it (an ODCR bills at the on-demand rate from its start, "
    "a Capacity Block is paid up front, a GCE reservation bills its VMs while unused): the Cost table's figures "
    "for these pools are what running nodes cost, not the reservation's own bill."
)
HEADER = [
    "## Reserved capacity",
    "",
    "| pool | reservation | instance type | zone | used as |",
    "|---|---|---|---|---|",
]


def problems(cfg: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as err:
        load_spec(cfg)
    return [(p.path, p.message) for p in err.value.problems]


def pool_of(cfg: dict[str, Any], name: str) -> tuple[int, dict[str, Any]]:
    return next((i, p) for i, p in enumerate(cfg[G + "nodePools"]) if p["name"] == name)


# ------------------------------------------------------------------------------------------- describe


@pytest.mark.parametrize(
    ("r", "text"),
    [
        (PoolReservation("on-demand", "any"), "any matching reservation"),
        (PoolReservation("capacity-block", "any"), "any matching Capacity Block"),
        (PoolReservation("on-demand", "specific", ids=("cr-1", "cr-2")), "reservation cr-1, cr-2"),
        (PoolReservation("capacity-block", "specific", ids=("cr-9",)), "Capacity Block cr-9"),
        (
            PoolReservation("capacity-block", "specific", tags={"team": "ml", "purpose": "train"}),
            "Capacity Block tagged purpose=train, team=ml",
        ),
    ],
)
def test_a_reservation_describes_itself_by_kind_and_target(r, text):
    """The summary's reservation column: the kind's name, then any / its ids / its tags sorted by key."""
    assert r.describe() == text


# ------------------------------------------------------------------------------------ older gke keys


def test_older_gke_keys_read_as_the_reservation_block():
    """gke.reservation any is an on-demand 'any' reservation; specific needs its reservationName (without
    it there is nothing to consume); a pool with neither has no reservation."""
    spec = load_spec(stack_config("prod-gcp"))
    pool = spec.pool("h100-train").model_copy(update={"reservation": None})
    gke = pool.gke
    any_ = pool.model_copy(update={"gke": gke.model_copy(update={"reservation": "any"})})
    assert reservations.pool_reservation(any_) == PoolReservation("on-demand", "any")
    named = pool.model_copy(
        update={"gke": gke.model_copy(update={"reservation": "specific", "reservation_name": "r1"})}
    )
    assert reservations.pool_reservation(named) == PoolReservation("on-demand", "specific", ids=("r1",))
    unnamed = pool.model_copy(update={"gke": gke.model_copy(update={"reservation": "specific"})})
    assert reservations.pool_reservation(unnamed) is None
    none = pool.model_copy(update={"gke": gke.model_copy(update={"reservation": None, "reservation_name": None})})
    assert reservations.pool_reservation(none) is None


# ---------------------------------------------------------------------------------------- summary


def test_summary_of_the_shipped_aws_and_gcp_stacks():
    """One row per reserved pool, '-' never needed here; the note that reservations are paid unused."""
    aws = reservations.summary_lines(load_spec(stack_config("prod-aws")))
    assert aws == [
        *HEADER,
        "| h100-inference | reservation cr-0c1d2e3f4a5b6c7d8 | p5.48xlarge | us-east-1a "
        "| launch template capacity reservation target |",
        "",
        PAID_UNUSED,
    ]
    gcp = reservations.summary_lines(load_spec(stack_config("prod-gcp")))
    assert gcp[4] == (
        "| h100-train | reservation ml-prod-h100-train | a3-highgpu-8g | us-central1-a "
        "| node pool reservationAffinity SPECIFIC_RESERVATION |"
    )


def test_no_reservation_no_section():
    """A stack without reserved pools gets no Reserved capacity section at all."""
    assert reservations.summary_lines(load_spec(stack_config("dev-aws"))) == []


def test_used_as_follows_the_provisioner_kind_and_match():
    """Managed node groups: a launch-template target, 'open' for any, Capacity Blocks also a market type;
    Karpenter: its EC2NodeClass terms and the reserved capacity type; gcp: ANY_ or SPECIFIC_RESERVATION.
    Pools without a declared type or zone show '-'."""
    cfg = stack_config("prod-aws")
    _, inf = pool_of(cfg, "h100-inference")
    inf["reservation"] = {"match": "any"}
    _, spot = pool_of(cfg, "h100-spot")
    spot.update(capacity="on-demand", reservation={"tags": {"team": "ml"}})
    spot["karpenter"].pop("onDemandFallback")
    _, a100 = pool_of(cfg, "a100-train")
    a100["reservation"] = {"kind": "capacity-block", "ids": ["cr-0a"]}
    rows = reservations.summary_lines(load_spec(cfg))[4:7]
    assert rows == [
        "| a100-train | Capacity Block cr-0a | - | - | launch template capacity reservation + market type "
        "capacity-block, node group CAPACITY_BLOCK |",
        "| h100-inference | any matching reservation | - | - | launch template capacity reservation (open) |",
        "| h100-spot | reservation tagged team=ml | - | - "
        "| EC2NodeClass capacityReservationSelectorTerms, NodePool capacity type reserved |",
    ]
    cfg = stack_config("prod-gcp")
    _, train = pool_of(cfg, "h100-train")
    train["reservation"] = {"match": "any"}
    row = reservations.summary_lines(load_spec(cfg))[4]
    assert row == "| h100-train | any matching reservation | - | - | node pool reservationAffinity ANY_RESERVATION |"


# ------------------------------------------------------------------------------------------ rules


def test_existing_clusters_take_no_reservation():
    """Reported once for the whole block: the cloud checks (here a Capacity Block by tags, which gcp's would
    refuse twice) do not run for nodes gpu-platform does not create."""
    cfg = stack_config("local")
    cfg[G + "nodePools"][0]["reservation"] = {"kind": "capacity-block", "tags": {"team": "ml"}}
    assert problems(cfg) == [
        (G + "nodePools[0].reservation", "does not apply to existing clusters (gpu-platform creates no nodes there)")
    ]


@pytest.mark.parametrize(
    ("block", "path", "message"),
    [
        (
            {"match": "any", "ids": ["cr-0abc"]},
            "reservation.match",
            "any consumes any matching reservation: drop ids and tags",
        ),
        (
            {"match": "specific"},
            "reservation",
            "names no reservation: set ids (or, aws karpenter pools, tags), or match: any",
        ),
        (
            {"kind": "capacity-block", "match": "any"},
            "reservation.match",
            "a Capacity Block is targeted by id (or, karpenter, tags), not any",
        ),
    ],
)
def test_what_a_reservation_block_must_name(block, path, message):
    """prod-aws h100-inference (managed, on-demand, p5.48xlarge, one subnet) with one bad block each."""
    cfg = stack_config("prod-aws")
    i, inf = pool_of(cfg, "h100-inference")
    inf["reservation"] = block
    assert problems(cfg) == [(f"{G}nodePools[{i}].{path}", message)]


def test_an_aws_zone_must_be_in_the_clusters_region():
    """us-east-1b is in region us-east-1; us-west-2a is not (the reservation could never serve the cluster)."""
    cfg = stack_config("prod-aws")
    i, inf = pool_of(cfg, "h100-inference")
    inf["reservation"]["availabilityZone"] = "us-east-1b"
    load_spec(cfg)
    inf["reservation"]["availabilityZone"] = "us-west-2a"
    assert problems(cfg) == [
        (f"{G}nodePools[{i}].reservation.availabilityZone", "us-west-2a is not in the cluster's region us-east-1")
    ]


def test_a_reserved_karpenter_pool_cannot_fall_back():
    """onDemandFallback is a spot setting: on a reserved (on-demand) pool both rules say so."""
    cfg = stack_config("prod-aws")
    i, spot = pool_of(cfg, "h100-spot")
    spot.update(capacity="on-demand", reservation={"ids": ["cr-0abc"]})
    assert problems(cfg) == [
        (f"{G}nodePools[{i}].karpenter.onDemandFallback", "only spot pools fall back"),
        (f"{G}nodePools[{i}].reservation", "does not combine with karpenter.onDemandFallback (a spot-pool setting)"),
    ]
    spot["karpenter"].pop("onDemandFallback")
    spot["reservation"] = {"ids": ["cr-0abc", "cr-0def"], "tags": {"team": "ml"}}  # karpenter: several, tags
    load_spec(cfg)


def test_gke_reservations_are_named_and_zoned():
    """On gcp: tags are refused (reservations are named) and the pool's zones must be exactly the
    reservation's zone."""
    cfg = stack_config("prod-gcp")
    i, train = pool_of(cfg, "h100-train")
    train["reservation"] = {"ids": ["ml-prod-h100-train"], "tags": {"a": "b"}, "availabilityZone": "us-central1-b"}
    assert problems(cfg) == [
        (
            f"{G}nodePools[{i}].gke.zones",
            "must be [us-central1-b], the reservation's zone: nodes elsewhere cannot use it",
        ),
        (f"{G}nodePools[{i}].reservation.tags", "gcp reservations are named, not tagged: use ids"),
    ]
    train["reservation"] = {"match": "any"}  # no id needed, no zone declared
    load_spec(cfg)


def test_managed_node_groups_target_one_reservation_by_id():
    """A launch template names one capacity reservation id: tags and a second id are refused with the way out
    (Karpenter selects by tags)."""
    cfg = stack_config("prod-aws")
    i, inf = pool_of(cfg, "h100-inference")
    inf["reservation"] = {"ids": ["cr-0abc", "cr-0def"], "tags": {"team": "ml"}}
    assert problems(cfg) == [
        (f"{G}nodePools[{i}].reservation.ids", "a managed node group's launch template targets one reservation id"),
        (
            f"{G}nodePools[{i}].reservation.tags",
            "managed node groups target a reservation by id (launch template capacityReservationTarget); "
            "selecting by tags needs Karpenter: list the id",
        ),
    ]


def test_a_capacity_block_node_group_has_one_type_and_one_subnet():
    """l4-notebooks (managed, no subnets given) as a Capacity Block: it must launch exactly the block's one
    instance type in the block's one AZ; with one of each it is accepted."""
    cfg = stack_config("prod-aws")
    i, l4 = pool_of(cfg, "l4-notebooks")
    l4["reservation"] = {"kind": "capacity-block", "ids": ["cr-0123"]}
    l4["instanceTypes"] = ["g6.12xlarge", "g6.24xlarge"]
    assert problems(cfg) == [
        (
            f"{G}nodePools[{i}].eks.subnetIds",
            "a Capacity Block lives in one AZ: give the node group exactly one subnet, in that AZ",
        ),
        (
            f"{G}nodePools[{i}].instanceTypes",
            "a Capacity Block node group launches exactly one instance type (the block's)",
        ),
    ]
    l4["instanceTypes"] = ["g6.12xlarge"]
    l4["eks"] = {"subnetIds": ["subnet-0f9e8d7c6b5a40321"]}
    load_spec(cfg)


def test_ec2_reservation_ids_are_checked_one_by_one():
    """Each id that is not cr-<hex> is reported at its own index (karpenter pools may list several)."""
    cfg = stack_config("prod-aws")
    i, spot = pool_of(cfg, "h100-spot")
    spot.update(capacity="on-demand", reservation={"ids": ["cr-0abc", "cr-0xyz", "odcr-1"]})
    spot["karpenter"].pop("onDemandFallback")
    assert problems(cfg) == [
        (f"{G}nodePools[{i}].reservation.ids[1]", "'cr-0xyz' is not an EC2 capacity reservation id (cr-...)"),
        (f"{G}nodePools[{i}].reservation.ids[2]", "'odcr-1' is not an EC2 capacity reservation id (cr-...)"),
    ]


def test_gke_specific_reservations_name_exactly_one_and_are_on_demand():
    """GKE consumes one named reservation per node pool, and Capacity Blocks do not exist there."""
    cfg = stack_config("prod-gcp")
    i, train = pool_of(cfg, "h100-train")
    train["reservation"] = {"kind": "capacity-block", "ids": ["a", "b"]}
    assert problems(cfg) == [
        (f"{G}nodePools[{i}].reservation.ids", "a GKE node pool consumes one specific reservation: name exactly one"),
        (f"{G}nodePools[{i}].reservation.kind", "Capacity Blocks are an AWS product; on gcp use a reservation (ids)"),
    ]


def test_a_queued_gke_pool_takes_no_reservation_block():
    """GKE queued provisioning (flex-start) gets capacity through ProvisioningRequests, never from a reservation:
    a reservation block on such a pool is refused at the block itself."""
    cfg = stack_config("prod-gcp")
    i, train = pool_of(cfg, "h100-train")
    train.update(minNodes=0, reservation={"match": "any"})
    train.pop("desiredNodes", None)
    train.setdefault("gke", {})["queuedProvisioning"] = True
    train["gke"].pop("compactPlacement", None)
    assert (f"{G}nodePools[{i}].reservation", "queued provisioning cannot consume a reservation") in problems(cfg)
