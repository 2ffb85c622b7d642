"""The cloud-neutral stack rules (components/plan/rules_core.py), message by message: each problem names the key to
fix and says why, so a wrong key, a lost branch or a changed text would leave the user guessing. Stack files
are the shipped ones with one change each; expected problems are written out from the rule's contract."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import stack_config

from components.cli.loader import SpecError, load_spec


def problems(cfg: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as err:
        load_spec(cfg)
    return [(p.path, p.message) for p in err.value.problems]


def with_cluster(stack: str, **cluster: Any) -> dict[str, Any]:
    cfg = stack_config(stack)
    cfg["gpu-platform:cluster"] = {**cfg.get("gpu-platform:cluster", {}), **cluster}
    return cfg


def with_pool(stack: str, index: int, **changes: Any) -> dict[str, Any]:
    cfg = stack_config(stack)
    pool = cfg["gpu-platform:nodePools"][index]
    for k, v in changes.items():
        if v is None:
            pool.pop(k, None)
        else:
            pool[k] = v
    return cfg


def with_tenant(stack: str, index: int, **changes: Any) -> dict[str, Any]:
    cfg = stack_config(stack)
    cfg["gpu-platform:tenants"][index].update(changes)
    return cfg


G = "gpu-platform:"


# ------------------------------------------------------------------------------------ cluster reference


def test_an_aws_stack_needs_a_cluster_name_and_a_region():
    """Both missing: the region under its own provider key (aws:region), the name under cluster.name."""
    cfg = stack_config("dev-aws")
    cfg.pop("aws:region")
    cfg[G + "cluster"] = {}
    assert problems(cfg) == [
        ("aws:region", "is required when cloud is aws (or set gpu-platform:cluster.region)"),
        (G + "cluster.name", "is required when cloud is aws"),
    ]
    cfg[G + "cluster"] = {"name": "ml-dev", "region": "us-east-1"}  # cluster.region stands in for aws:region
    load_spec(cfg)


def test_a_gcp_stack_needs_a_name_a_location_and_a_project():
    """All three missing: the project under its provider key, location and name under cluster."""
    cfg = stack_config("dev-gcp")
    cfg.pop("gcp:project")
    cfg[G + "cluster"] = {}
    assert problems(cfg) == [
        ("gcp:project", "is required when cloud is gcp (or set gpu-platform:cluster.project)"),
        (G + "cluster.location", "is required when cloud is gcp (region or zone)"),
        (G + "cluster.name", "is required when cloud is gcp"),
    ]


@pytest.mark.parametrize(
    ("stack", "given", "refused"),
    [
        (
            "dev-aws",
            {"location": "us-central1", "project": "my-project-1", "kubeconfig": "/k", "context": "c"},
            ["context", "kubeconfig", "location", "project"],
        ),
        (
            "dev-gcp",
            {"region": "us-east-1", "profile": "p", "roleArn": "arn:aws:iam::123456789012:role/x", "context": "c"},
            ["context", "profile", "region", "roleArn"],
        ),
        (
            "local",
            {"name": "x", "location": "us-central1", "project": "my-project-1", "profile": "p"},
            ["location", "name", "profile", "project"],
        ),
    ],
)
def test_cluster_keys_of_another_cloud_are_refused_by_their_stack_file_name(stack, given, refused):
    """Each cluster key that belongs to another cloud is named with its stack-file spelling (roleArn, not
    role_arn) and the cloud it does not apply to."""
    cloud = {"dev-aws": "aws", "dev-gcp": "gcp", "local": "existing"}[stack]
    assert problems(with_cluster(stack, **given)) == [
        (f"{G}cluster.{k}", f"does not apply when cloud is {cloud}") for k in refused
    ]


def test_an_existing_cluster_may_name_its_region():
    """cluster.region is the one cloud key an existing cluster keeps (it places regional resources)."""
    load_spec(with_cluster("local", region="us-east-1"))


@pytest.mark.parametrize(
    ("stack", "name", "message"),
    [
        (
            "dev-aws",
            "-ml",
            "'-ml' is not an EKS cluster name (at most 100 letters, digits, '-' and '_', starting with a letter or "
            "digit)",
        ),
        (
            "dev-gcp",
            "ML_dev",
            "'ML_dev' is not a GKE cluster name (at most 40 lower-case letters, digits and '-', starting with a "
            "letter)",
        ),
    ],
)
def test_cluster_names_follow_their_cloud(stack, name, message):
    """EKS and GKE name rules differ: each is checked on its own cloud only."""
    assert problems(with_cluster(stack, name=name)) == [(G + "cluster.name", message)]


def test_an_eks_name_is_not_held_to_the_gke_rule():
    """'ML_dev' is a valid EKS name (letters, digits, '_'): the GKE pattern must not apply on aws."""
    load_spec(with_cluster("dev-aws", name="ML_dev"))


# ------------------------------------------------------------------------------------------- names


def test_only_the_second_of_two_equal_names_is_reported():
    """The first holder of a name keeps it; every later one is reported at its own index."""
    cfg = stack_config("prod-aws")
    names = [t["name"] for t in cfg[G + "tenants"]]
    cfg[G + "tenants"][2]["name"] = names[0]
    found = [p for p in problems(cfg) if p[1].startswith("duplicate")]
    assert found == [(G + "tenants[2].name", f"duplicate name {names[0]!r}")]


# ------------------------------------------------------------------------------------------- pools


def test_reserved_labels_are_refused_by_key():
    """A pool may not set a label the platform or Kubernetes derives (here karpenter.sh/... and
    gpu-platform/...): reported under the label's own key."""
    cfg = with_pool("dev-aws", 0, labels={"karpenter.sh/capacity-type": "spot", "team": "a"})
    assert problems(cfg) == [
        (
            G + "nodePools[0].labels.karpenter.sh/capacity-type",
            "is a reserved label (kubernetes.io, k8s.io, karpenter, nvidia.com/gpu.*, gpu-platform/*): nodes may "
            "not set it, or the platform derives it",
        )
    ]


def test_max_gpus_is_for_karpenter_pools_only():
    """dev-aws pool 0 is a managed node group: maxGpus there is refused (and with maxNodes, 'not both')."""
    assert problems(with_pool("dev-aws", 0, maxGpus=4)) == [
        (G + "nodePools[0].maxGpus", "only karpenter pools take maxGpus; use maxNodes"),
        (G + "nodePools[0].maxGpus", "set maxNodes or maxGpus, not both"),
    ]


def test_a_karpenter_pool_takes_max_nodes_or_max_gpus_not_both():
    """dev-aws a10g-spot (karpenter, maxGpus 8) given maxNodes too: one cap only."""
    assert problems(with_pool("dev-aws", 1, maxNodes=8)) == [
        (G + "nodePools[1].maxGpus", "set maxNodes or maxGpus, not both")
    ]


def test_a_pool_without_a_size_cap_is_refused_once():
    """Neither maxNodes nor maxGpus: one problem, and no min/desired comparison against a missing cap."""
    assert problems(with_pool("dev-aws", 0, maxNodes=None, minNodes=2)) == [
        (G + "nodePools[0].maxNodes", "is required (karpenter pools may set maxGpus)")
    ]


@pytest.mark.parametrize(
    ("desired", "ok"),
    [(0, True), (4, True), (5, False)],
)
def test_desired_nodes_must_lie_within_min_and_max(desired, ok):
    """dev-aws l4-shared: minNodes 0, maxNodes 4; both bounds are allowed, one past max is not."""
    cfg = with_pool("dev-aws", 0, desiredNodes=desired)
    if ok:
        load_spec(cfg)
    else:
        assert problems(cfg) == [(G + "nodePools[0].desiredNodes", "5 is outside minNodes..maxNodes (0..4)")]


def test_desired_nodes_below_min_is_refused():
    """The lower bound of desiredNodes: minNodes itself."""
    assert problems(with_pool("dev-aws", 0, minNodes=2, desiredNodes=1)) == [
        (G + "nodePools[0].desiredNodes", "1 is outside minNodes..maxNodes (2..4)")
    ]


def test_min_nodes_may_equal_the_cap_but_not_exceed_it():
    """minNodes 4 with maxNodes 4 is a fixed-size pool; 5 is refused naming the cap."""
    load_spec(with_pool("dev-aws", 0, minNodes=4))
    assert problems(with_pool("dev-aws", 0, minNodes=5)) == [(G + "nodePools[0].minNodes", "5 is above maxNodes (4)")]


def test_karpenter_pools_take_no_desired_size():
    """Karpenter provisions to demand: a desiredNodes there is refused."""
    assert problems(with_pool("dev-aws", 1, desiredNodes=0)) == [
        (G + "nodePools[1].desiredNodes", "karpenter pools size themselves to demand")
    ]


def test_only_spot_pools_fall_back_to_on_demand():
    """onDemandFallback on an on-demand pool is meaningless and refused; on a spot pool it is fine."""
    cfg = with_pool("dev-aws", 1, capacity="on-demand", karpenter={"onDemandFallback": True})
    assert problems(cfg) == [(G + "nodePools[1].karpenter.onDemandFallback", "only spot pools fall back")]
    load_spec(with_pool("dev-aws", 1, karpenter={"onDemandFallback": True}))  # a spot pool: fine


# ------------------------------------------------------------------------------------------- tenants


@pytest.mark.parametrize("name", ["kube-system", "gpu-operator", "kueue-system", "kube-anything", "default"])
def test_tenants_may_not_take_a_system_namespace(name):
    """Reserved namespaces (Kubernetes' own, every addon's) and anything kube-*: a tenant there would get the
    platform's quota and Pod Security labels on a system namespace."""
    cfg = with_tenant("local", 0, name=name)
    assert (G + "tenants[0].name", f"{name!r} is a system namespace") in problems(cfg)


def test_a_tenant_named_like_kube_but_not_kube_dash_is_fine():
    """Only the kube- prefix is reserved, not every name starting with 'kube'."""
    load_spec(with_tenant("local", 0, name="kubeflow"))


def test_lending_more_than_the_quota_is_refused_and_the_quota_itself_is_fine():
    """prod-aws tenants are in a cohort; lending the whole quota is allowed, one GPU more is not."""
    cfg = stack_config("prod-aws")
    t = cfg[G + "tenants"][0]
    pool, n = next(iter(t["gpuQuota"].items()))
    t["lendingLimit"] = {pool: n}
    load_spec(cfg)
    t["lendingLimit"] = {pool: n + 1}
    assert problems(cfg) == [(f"{G}tenants[0].lendingLimit.{pool}", f"{n + 1} is above the tenant's quota")]


def test_borrowing_and_lending_need_a_cohort():
    """Without a tenant cohort and with the default cohort unset, both limits are refused by name; the default
    cohort (or the tenant's own) is enough. The tenant's ceiling is batch, a class that preempts (under local's
    dev, which never preempts, its lendingLimit would be refused for that reason too)."""
    cfg = with_tenant("local", 0, borrowingLimit={"workstation": 1}, lendingLimit={"workstation": 1}, priority="batch")
    cfg[G + "scheduling"] = {"defaultCohort": None}
    assert problems(cfg) == [
        (G + "tenants[0].borrowingLimit", "borrowing needs a cohort: set tenants[].cohort or scheduling.defaultCohort"),
        (G + "tenants[0].lendingLimit", "lending needs a cohort"),
    ]
    cfg[G + "scheduling"] = {"defaultCohort": "shared"}
    load_spec(cfg)
    cfg[G + "scheduling"] = {"defaultCohort": None}
    cfg[G + "tenants"][0]["cohort"] = "own"
    load_spec(cfg)


# ----------------------------------------------------------------------------------- priorities, addons


def test_one_default_priority_class_and_no_system_prefix():
    """A second globalDefault class is reported (the first keeps it), and 'system-' names are Kubernetes'."""
    cfg = stack_config("local")
    cfg[G + "priorityClasses"] = [
        {"name": "dev", "value": 100, "globalDefault": True},
        {"name": "system-high", "value": 200},
        {"name": "inference", "value": 300, "globalDefault": True},
    ]
    assert problems(cfg) == [
        (G + "priorityClasses[1].name", "names starting with 'system-' are reserved"),
        (G + "priorityClasses[2].globalDefault", "at most one PriorityClass may be the default"),
        # and that second default is above the dev tenant's ceiling (dev, 100 < 300)
        (
            G + "priorityClasses[2].globalDefault",
            "inference is above the ceiling of tenants dev: their pods without a priorityClassName would get it "
            "and be refused; make the lowest class the default",
        ),
    ]


def test_karpenter_is_an_aws_addon():
    """addons.karpenter on a non-aws stack is refused."""
    cfg = stack_config("local")
    cfg[G + "addons"] = {**cfg[G + "addons"], "karpenter": True}
    assert problems(cfg) == [(G + "addons.karpenter", "Karpenter is installed on aws stacks only")]


# ---------------------------------------------------------------------------------- references by name


def test_references_list_what_exists():
    """A misspelt chart, pool or borrowing target is refused with what the stack does have (sorted)."""
    cfg = stack_config("local")
    cfg[G + "charts"] = {"kueu": {"version": "1.0.0"}}
    assert problems(cfg) == [
        (
            G + "charts.kueu",
            "unknown chart (charts: clusterAutoscaler, dcgmExporter, efaDevicePlugin, gpuOperator, jobset, karpenter, "
            "karpenterCrd, kubePrometheusStack, kuberay, kueue, leaderWorkerSet, spegel, trainer, volcano)",
        )
    ]
    cfg = stack_config("dev-aws")
    cfg[G + "tenants"][0]["gpuQuota"]["h100"] = 1
    assert problems(cfg) == [(G + "tenants[0].gpuQuota.h100", "unknown pool 'h100' (pools: a10g-spot, l4-shared)")]
    cfg = stack_config("local")
    cfg[G + "tenants"][0]["borrowingLimit"] = {"other": 1}
    assert problems(cfg) == [
        (G + "tenants[0].borrowingLimit.other", "the tenant cannot reach pool 'other': it has no gpuQuota entry for it")
    ]


def test_existing_pools_take_no_cloud_keys_and_no_gpu_taint():
    """On an existing cluster the nodes exist: instance types and disk size are refused by their stack-file
    names; and no pool may declare the GPU taint's key (every pool carries it already)."""
    cfg = with_pool("local", 0, instanceTypes=["g6.xlarge"], diskGib=100)
    assert problems(cfg) == [
        (G + "nodePools[0].diskGib", "does not apply when cloud is existing (the nodes exist)"),
        (G + "nodePools[0].instanceTypes", "does not apply when cloud is existing (the nodes exist)"),
    ]
    cfg = with_pool("local", 0, taints=[{"key": "nvidia.com/gpu", "value": "x", "effect": "NoSchedule"}])
    assert problems(cfg) == [
        (
            G + "nodePools[0].taints[0].key",
            "every GPU pool already carries nvidia.com/gpu=present:NoSchedule; use another key",
        )
    ]
