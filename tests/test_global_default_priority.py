"""A globalDefault PriorityClass above a tenant's ceiling is refused before deploy: every pod of that tenant
written without a class would get it and be refused by the ceiling policy (what a real kube-apiserver did with
such a stack in the cluster tests)."""

from __future__ import annotations

import pytest
from conftest import stack_config

from components.cli.loader import SpecError, load_spec

CLASSES = [
    {"name": "inference", "value": 100000},
    {"name": "training", "value": 50000},
    {"name": "dev", "value": 1000, "preemptionPolicy": "Never"},
]


def _problems(default: str) -> list[tuple[str, str]]:
    cfg = stack_config("prod-aws")
    cfg["gpu-platform:priorityClasses"] = [{**c, "globalDefault": c["name"] == default} for c in CLASSES]
    for t in cfg["gpu-platform:tenants"]:
        t["priority"] = {"research": "training", "serving": "inference", "applied-ml": "training"}.get(t["name"], "dev")
    try:
        load_spec(cfg)
    except SpecError as err:
        return [(p.path, p.message) for p in err.problems if "globalDefault" in p.path]
    return []


def test_a_default_above_some_ceiling_is_refused_naming_the_tenants_below_it():
    # training (50000) is above notebooks' ceiling dev (1000); research and applied-ml sit at training
    assert _problems("training") == [
        (
            "gpu-platform:priorityClasses[1].globalDefault",
            "training is above the ceiling of tenants notebooks: their pods without a priorityClassName would get "
            "it and be refused; make the lowest class the default",
        )
    ]
    (problem,) = _problems("inference")
    assert problem[1].startswith("inference is above the ceiling of tenants applied-ml, notebooks, research:")


@pytest.mark.parametrize("default", ["dev", None])
def test_the_lowest_class_or_no_default_is_accepted(default):
    assert _problems(default) == []
