"""Cloud-neutral rules of the stack spec: names, cross references, scaling, tenancy, priorities."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from ..data import versions
from ..spec import validation
from ..spec.model import Problem, StackSpec, key, rule
from . import derive

RESERVED_NAMESPACES = {
    "default",
    "kube-system",
    "kube-public",
    "kube-node-lease",
    versions.GPU_OPERATOR.namespace,
    versions.DCGM_EXPORTER.namespace,
    versions.KUEUE.namespace,
    versions.VOLCANO.namespace,
    versions.KARPENTER.namespace,
    versions.KUBE_PROMETHEUS_STACK.namespace,
    versions.NODE_EXPORTER_NAMESPACE,
}


def _duplicates(names: list[str]) -> set[str]:
    return {n for n, c in Counter(names).items() if c > 1}


@rule
def unique_names(spec: StackSpec) -> Iterator[Problem]:
    for field, items in (
        ("nodePools", spec.node_pools),
        ("tenants", spec.tenants),
        ("priorityClasses", spec.priority_classes),
    ):
        dup = _duplicates([i.name for i in items])
        seen: set[str] = set()
        for i, item in enumerate(items):
            if item.name in dup:
                if item.name in seen:
                    yield Problem(key(field, i, "name"), f"duplicate name {item.name!r}")
                seen.add(item.name)


@rule
def cluster_reference(spec: StackSpec) -> Iterator[Problem]:
    c = spec.cluster
    if spec.cloud in ("aws", "gcp") and not c.name:
        yield Problem(key("cluster", "name"), f"is required when cloud is {spec.cloud}")
    if spec.cloud == "aws" and not c.region:
        yield Problem("aws:region", "is required when cloud is aws (or set gpu-platform:cluster.region)")
    if spec.cloud == "gcp":
        if not c.location:
            yield Problem(key("cluster", "location"), "is required when cloud is gcp (region or zone)")
        if not c.project:
            yield Problem("gcp:project", "is required when cloud is gcp (or set gpu-platform:cluster.project)")
    wrong = {
        "aws": ("location", "project", "kubeconfig", "context"),
        "gcp": ("region", "profile", "role_arn", "kubeconfig", "context"),
        "existing": ("name", "location", "region", "project", "profile", "role_arn"),
    }[spec.cloud]
    for field in wrong:
        if getattr(c, field) is not None and not (field == "region" and spec.cloud == "existing"):
            alias = type(c).model_fields[field].alias or field
            yield Problem(key("cluster", alias), f"does not apply when cloud is {spec.cloud}")
    if c.name and spec.cloud == "aws" and not validation.EKS_CLUSTER_NAME.fullmatch(c.name):
        yield Problem(
            key("cluster", "name"),
            f"{validation.quote(c.name)} is not an EKS cluster name (at most 100 letters, digits, '-' and '_', "
            "starting with a letter or digit)",
        )
    if c.name and spec.cloud == "gcp" and not validation.GKE_CLUSTER_NAME.fullmatch(c.name):
        yield Problem(
            key("cluster", "name"),
            f"{validation.quote(c.name)} is not a GKE cluster name (at most 40 lower-case letters, digits and '-', "
            "starting with a letter)",
        )


# Keys that only a cloud's own node pools use; on an existing cluster the nodes already exist.
CLOUD_ONLY_POOL_KEYS = {"instance_types": "instanceTypes", "disk_gib": "diskGib"}


@rule
def existing_pools_take_no_cloud_keys(spec: StackSpec) -> Iterator[Problem]:
    if spec.cloud != "existing":
        return
    for i, pool in enumerate(spec.node_pools):
        for field, alias in CLOUD_ONLY_POOL_KEYS.items():
            if field in pool.model_fields_set:
                yield Problem(key("nodePools", i, alias), "does not apply when cloud is existing (the nodes exist)")


@rule
def pool_labels_and_taints(spec: StackSpec) -> Iterator[Problem]:
    for i, pool in enumerate(spec.node_pools):
        for label in pool.labels:
            if derive.reserved_label(label):
                yield Problem(
                    key("nodePools", i, "labels", label),
                    "is a reserved label (kubernetes.io, k8s.io, karpenter, nvidia.com/gpu.*, gpu-platform/*): "
                    "nodes may not set it, or the platform derives it",
                )
        for j, taint in enumerate(pool.taints):
            if taint.key == derive.GPU_TAINT.key:
                yield Problem(
                    key("nodePools", i, "taints", j, "key"),
                    "every GPU pool already carries nvidia.com/gpu=present:NoSchedule; use another key",
                )


@rule
def pool_scaling(spec: StackSpec) -> Iterator[Problem]:
    for i, p in enumerate(spec.node_pools):
        if p.max_gpus is not None and p.provisioner != "karpenter":
            yield Problem(key("nodePools", i, "maxGpus"), "only karpenter pools take maxGpus; use maxNodes")
        if p.max_gpus is not None and p.max_gpus % p.gpu.per_node:
            yield Problem(
                key("nodePools", i, "maxGpus"),
                f"{p.max_gpus} is not a multiple of gpu.perNode ({p.gpu.per_node})",
            )
        if p.max_gpus is not None and p.max_nodes is not None:
            yield Problem(key("nodePools", i, "maxGpus"), "set maxNodes or maxGpus, not both")
        if p.max_nodes is None and p.max_gpus is None:
            yield Problem(key("nodePools", i, "maxNodes"), "is required (karpenter pools may set maxGpus)")
            continue
        if p.min_nodes > p.node_cap:
            yield Problem(key("nodePools", i, "minNodes"), f"{p.min_nodes} is above maxNodes ({p.node_cap})")
        if p.desired_nodes is not None and not p.min_nodes <= p.desired_nodes <= p.node_cap:
            yield Problem(
                key("nodePools", i, "desiredNodes"),
                f"{p.desired_nodes} is outside minNodes..maxNodes ({p.min_nodes}..{p.node_cap})",
            )
        if p.provisioner == "karpenter" and p.desired_nodes is not None:
            yield Problem(key("nodePools", i, "desiredNodes"), "karpenter pools size themselves to demand")
        if p.karpenter.on_demand_fallback and p.capacity != "spot":
            yield Problem(key("nodePools", i, "karpenter", "onDemandFallback"), "only spot pools fall back")


@rule
def tenancy(spec: StackSpec) -> Iterator[Problem]:
    pools = {p.name for p in spec.node_pools}
    classes = {c.name for c in spec.priority_classes}
    for i, t in enumerate(spec.tenants):
        if t.name in RESERVED_NAMESPACES or t.name.startswith("kube-"):
            yield Problem(key("tenants", i, "name"), f"{t.name!r} is a system namespace")
        for pool in t.gpu_quota:
            if pool not in pools:
                yield Problem(
                    key("tenants", i, "gpuQuota", pool),
                    f"unknown pool {pool!r} (pools: {', '.join(sorted(pools)) or 'none'})",
                )
        for field, limits in (("borrowingLimit", t.borrowing_limit), ("lendingLimit", t.lending_limit)):
            for pool, n in limits.items():
                if pool not in t.gpu_quota:
                    yield Problem(
                        key("tenants", i, field, pool),
                        f"the tenant cannot reach pool {pool!r}: it has no gpuQuota entry for it",
                    )
                elif field == "lendingLimit" and n > t.gpu_quota[pool]:
                    yield Problem(key("tenants", i, field, pool), f"{n} is above the tenant's quota")
        cohort = t.cohort or spec.scheduling.default_cohort
        if t.borrowing_limit and cohort is None:
            yield Problem(
                key("tenants", i, "borrowingLimit"),
                "borrowing needs a cohort: set tenants[].cohort or scheduling.defaultCohort",
            )
        if t.lending_limit and cohort is None:
            yield Problem(key("tenants", i, "lendingLimit"), "lending needs a cohort")
        if t.priority not in classes:
            yield Problem(
                key("tenants", i, "priority"),
                f"unknown PriorityClass {t.priority!r} (classes: {', '.join(sorted(classes))})",
            )


@rule
def priorities(spec: StackSpec) -> Iterator[Problem]:
    defaults = [i for i, c in enumerate(spec.priority_classes) if c.global_default]
    for i in defaults[1:]:
        yield Problem(key("priorityClasses", i, "globalDefault"), "at most one PriorityClass may be the default")
    for i, c in enumerate(spec.priority_classes):
        if c.name.startswith("system-"):
            yield Problem(key("priorityClasses", i, "name"), "names starting with 'system-' are reserved")


def installed_charts(spec: StackSpec) -> list[versions.Chart]:
    """The charts ``program.run`` installs for this spec (the same conditions, in its order)."""
    from .aws import efa  # no cloud SDK: pool facts only

    wanted = [
        (versions.GPU_OPERATOR, spec.addons.gpu_operator),
        (versions.KUBE_PROMETHEUS_STACK, spec.monitoring.prometheus == "install"),
        (versions.DCGM_EXPORTER, spec.addons.dcgm and not spec.addons.gpu_operator),
        (versions.CLUSTER_AUTOSCALER, spec.cluster_autoscaler_enabled),
        (versions.KUEUE, spec.addons.kueue),
        (versions.VOLCANO, spec.addons.volcano),
        (versions.KARPENTER_CRD, spec.cloud == "aws" and spec.karpenter_enabled),
        (versions.KARPENTER, spec.cloud == "aws" and spec.karpenter_enabled),
        (versions.EFA_DEVICE_PLUGIN, spec.cloud == "aws" and bool(efa.efa_pools(spec))),
        (versions.JOBSET, spec.addons.jobset),
        (versions.LEADER_WORKER_SET, spec.addons.leader_worker_set),
        (versions.KUBERAY, spec.addons.kuberay),
        (versions.TRAINER, spec.addons.trainer),
        (versions.SPEGEL, spec.images.mirror == "peer" and spec.cloud != "gcp"),  # the rules refuse gcp
    ]
    return [c for c, on in wanted if on]


@rule
def charts(spec: StackSpec) -> Iterator[Problem]:
    for name in spec.charts:
        if name not in versions.CHARTS:
            yield Problem(key("charts", name), f"unknown chart (charts: {', '.join(sorted(versions.CHARTS))})")
    # A local source must hold the archive of the version the stack pins (Helm would install whatever file the
    # path names, whatever `version` says): checked for the charts the stack installs, where it names them.
    for c in installed_charts(spec):
        chart = versions.for_spec(c, spec)
        if chart.archive is None or versions.archive_digest(chart.archive) is not None:
            continue
        override = spec.charts.get(c.key)
        own = override.source if override else None  # the chart's own source wins over chartSource
        where = key("charts", c.key, "source") if own else key("chartSource")
        if versions.source_kind(own or spec.chart_source) == "bundled":
            bundled = sorted(p.name for p in (versions.PROJECT_DIR / versions.BUNDLED_DIR).glob(f"{c.name}-*.tgz"))
            yield Problem(
                where,
                f"{chart.archive} is not bundled: this repository keeps {', '.join(bundled) or 'no archive'} of "
                f"{c.name} (a version override needs a mirror or a folder holding that version)",
            )
        else:
            yield Problem(where, f"{chart.archive} does not exist (a folder of packaged charts: <name>-<version>.tgz)")


@rule
def addons(spec: StackSpec) -> Iterator[Problem]:
    if spec.addons.karpenter and spec.cloud != "aws":
        yield Problem(key("addons", "karpenter"), "Karpenter is installed on aws stacks only")


@rule
def global_default_class_within_every_ceiling(spec: StackSpec) -> Iterator[Problem]:
    """A Pod without a class gets the globalDefault class (the API server's Priority admission plugin), and the
    ceiling policy then refuses it in any tenant namespace whose ceiling is below that class: every such pod of
    that tenant would be refused (seen on a real kube-apiserver: tests/cluster)."""
    values = {c.name: c.value for c in spec.priority_classes}
    for i, pc in enumerate(spec.priority_classes):
        if not pc.global_default:
            continue
        below = sorted(t.name for t in spec.tenants if t.priority in values and values[t.priority] < pc.value)
        if below:
            yield Problem(
                key("priorityClasses", i, "globalDefault"),
                f"{pc.name} is above the ceiling of tenants {', '.join(below)}: their pods without a "
                "priorityClassName would get it and be refused; make the lowest class the default",
            )
