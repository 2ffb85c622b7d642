"""A whole-GPU request never reaches a shared pool through Kueue (issue 26, point 2).

Kueue counts quota per flavor, not per container: a tenant that reaches a whole-GPU pool and a time-sliced or MPS
pool advertising the same resource name could have a pod asking two `nvidia.com/gpu` per container assigned the
shared flavor, which the device plugin refuses at bind (k8s-device-plugin v0.20.0 README.md:405-408). Such a shared
pool's flavor carries a nodeTaint it does not tolerate for the pod; Kueue assigns a flavor only to pod sets that
tolerate its nodeTaints (kueue v0.19.2 pkg/scheduler/flavorassigner/flavorassigner.go:1239-1245), so shared slices
are opt-in there. Expected pools worked out from the stack files by hand.
"""

from __future__ import annotations

import pytest
from conftest import manifest, rendered
from test_explain import SHARED_OPT_IN, pod, spec_of, trace

from components.plan import derive

OPT_IN = {"key": "gpu-platform/shared-gpu", "value": "one-unit", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("stack", "pools"),
    [
        # ml-dev: l4-shared (time-sliced x4, nvidia.com/gpu) beside a10g-spot (whole A10Gs, nvidia.com/gpu)
        ("dev-aws", {"l4-shared"}),
        # GKE's plugin never renames: ml-dev's l4-shared (time-sharing) beside t4-spot
        ("dev-gcp", {"l4-shared"}),
        # serving: l4-serving (time-sharing) beside a100-inference (MIG partitions, nvidia.com/gpu on GKE)
        ("prod-gcp", {"l4-serving"}),
        # notebooks reach only l4-notebooks, research only whole pools, serving only MIG resource names
        ("prod-aws", set()),
        ("local", set()),
    ],
)
def test_a_shared_pool_is_opt_in_only_where_a_tenant_could_confuse_it(stack, pools):
    assert set(derive.opt_in_shared_pools(rendered(stack).spec)) == pools


def test_the_flavor_carries_the_opt_in_taint_and_does_not_tolerate_it_for_the_pod():
    r = rendered("dev-aws")
    shared = manifest(r, "ResourceFlavor", "l4-shared")["spec"]
    assert shared["nodeTaints"] == [OPT_IN]
    assert all(t.get("key") != OPT_IN["key"] for t in shared["tolerations"])
    assert "nodeTaints" not in manifest(r, "ResourceFlavor", "a10g-spot")["spec"]
    assert "nodeTaints" not in manifest(rendered("prod-aws"), "ResourceFlavor", "l4-notebooks")["spec"]


def test_a_pod_that_does_not_opt_in_is_never_assigned_the_shared_flavor():
    """dev-aws ml-dev: 8 whole A10Gs of quota on a10g-spot, 16 units on l4-shared. 10 GPUs do not fit a10g-spot;
    without the opt-in l4-shared is not tried, with it the pod gets 10 slices there."""
    spec = spec_of("dev-aws")
    t = trace(spec, pod("ml-dev", {"nvidia.com/gpu": 10}))
    assert t.pending is not None and t.pending.name == "flavors"
    assert "l4-shared: shared GPUs, the pod set does not tolerate gpu-platform/shared-gpu=one-unit:NoSchedule" in (
        t.pending.detail
    )
    sliced = trace(spec, pod("ml-dev", {"nvidia.com/gpu": 1}, tolerations=SHARED_OPT_IN))
    assert sliced.pool == "a10g-spot"  # opting in does not move a pod that fits a dedicated pool first
    forced = trace(spec, pod("ml-dev", {"nvidia.com/gpu": 1}, nodeSelector={"gpu-platform/pool": "l4-shared"}))
    assert forced.pending is not None and forced.pending.name == "flavors"
    opted = trace(
        spec,
        pod(
            "ml-dev", {"nvidia.com/gpu": 1}, nodeSelector={"gpu-platform/pool": "l4-shared"}, tolerations=SHARED_OPT_IN
        ),
    )
    assert opted.pending is None and opted.pool == "l4-shared"
