"""A GKE queued-provisioning pool's node pool is created with initialNodeCount 0, whatever it names.

The rules refuse minNodes > 0 and desiredNodes on such a pool (``gcp/rules.py`` ``_capacity``), so a loaded
spec never asks; ``initial_nodes_per_zone`` still states the contract itself ("Queued-provisioning pools
start empty"), nodes coming only for admitted work through ProvisioningRequests. A structure-checked
(``parse_spec``) spec carries such numbers to it.
"""

from __future__ import annotations

import pytest
from conftest import stack_config

from components.cli.loader import load_spec
from components.render.gcp import nodepools
from components.spec.model import SpecError, parse_spec

QUEUED_POOL = {
    "name": "p",
    "gpu": {"model": "L4", "perNode": 1},
    "instanceTypes": ["g2-standard-8"],
    "minNodes": 1,
    "desiredNodes": 2,
    "maxNodes": 4,
    "gke": {"queuedProvisioning": True},
}


def _config():
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:nodePools"] = [dict(QUEUED_POOL)]
    cfg["gpu-platform:tenants"] = []
    return cfg


def test_rules_refuse_initial_nodes_on_a_queued_pool():
    """The reason a loaded spec never reaches initial_nodes_per_zone with a target: both numbers are refused."""
    with pytest.raises(SpecError) as err:
        load_spec(_config())
    messages = {(p.path, p.message) for p in err.value.problems}
    assert (
        "gpu-platform:nodePools[0].minNodes",
        "queued provisioning needs minNodes 0 (nodes come only for admitted work)",
    ) in messages
    assert ("gpu-platform:nodePools[0].desiredNodes", "queued provisioning pools start with 0 nodes") in messages


def test_queued_pool_starts_with_zero_nodes_per_zone_even_when_it_names_some():
    """desiredNodes 2 / minNodes 1 would give 2 per zone (1 zone) or 1 (2 zones) on an ordinary pool; the
    queued pool gets 0 in every case."""
    pool = parse_spec(_config()).pool("p")
    assert pool.gke.queued_provisioning
    assert [nodepools.initial_nodes_per_zone(pool, z) for z in (1, 2, 3)] == [0, 0, 0]
