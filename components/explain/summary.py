"""summary.md: what a reviewer wants at a glance from a synth."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..data import versions
from ..plan import derive, placeholders, plan
from ..plan.cost import usd
from ..spec.model import Problem, key

if TYPE_CHECKING:
    from ..plan import lending
    from ..plan.plan import Plan, PoolPlan
    from ..spec.model import StackSpec
    from .rendering import Rendering


def scaled_by(decided: Plan, p: PoolPlan) -> str:
    """Who adds nodes to the pool (and so whether a pending workload can ever get one)."""
    if p.provisioner == "existing":
        return "nobody: existing nodes"
    if p.provisioner == "gke":
        if p.queued_provisioning:
            return "GKE Dynamic Workload Scheduler (queued provisioning), through Kueue's ProvisioningRequests"
        return "GKE cluster autoscaler"
    if p.provisioner == "karpenter":
        return "Karpenter, for pending pods"
    autoscaler = decided.addons["clusterAutoscaler"]
    if autoscaler.enabled:
        return f"Cluster Autoscaler (chart {autoscaler.version}), EKS managed node group"
    return f"nobody: fixed at {p.min_nodes} node(s) (addons.clusterAutoscaler is off)"


def _scaling(decided: Plan) -> list[str]:
    if not decided.pools:
        return []
    lines = ["", "## Who scales each pool", "", "| pool | scaled by | Kueue admission check |", "|---|---|---|"]
    for p in decided.pools.values():
        check = f"`{p.admission_check}` ({p.provisioning_class})" if p.provisioning_class else "-"
        lines.append(f"| {p.name} | {scaled_by(decided, p)} | {check} |")
    return lines


def _quota_ratio(p: PoolPlan) -> float:
    """The tenants' nominal quota on the pool over what it brings at its maximum size (the largest over its
    resource names; no capacity: infinite)."""
    quota = p.tenant_quota_units
    return max((quota.get(k, 0) / v if v else float("inf") for k, v in p.max_units.items()), default=0.0)


def _uncovered(p: PoolPlan) -> str:
    """A Kueue pool that may bring GPUs no tenant's nominal quota covers (``PoolPlan.uncovered_gpus``): legal (a
    warning, not a rule), but wasteful: Kueue lends quota, not capacity, so no workload it admits ever runs on them,
    while the pool's max size (and its cost) counts them. Said with what they cost and both fixes."""
    covered = p.max_gpus - (p.uncovered_gpus or 0)
    hourly = (p.cost.get("uncovered") or {}).get("hourlyUsd")
    money = f", while the max-scale cost counts them ({usd(hourly)} per hour)" if hourly else ""
    what = f"{p.uncovered_gpus} of its {p.max_gpus} GPUs"
    if p.uncovered_units != {"nvidia.com/gpu": p.uncovered_gpus}:
        what += f" ({_units(p.uncovered_units or {})})"
    head = (
        f"pool {p.name}: {what} are in no tenant's nominal quota: Kueue lends a cohort's quota, never idle capacity, "
        f"so no workload it admits ever runs on them{money}"
    )
    if p.provisioner == "existing":
        return f"{head}; those nodes exist and stay idle: raise a tenant's gpuQuota on {p.name}"
    nodes = -(-covered // p.gpus_per_node)  # the fewest nodes that still hold every GPU of the quotas
    if covered == 0:
        shrink = "give a tenant gpuQuota on it, or remove the pool"
    elif p.provisioner == "karpenter":
        shrink = f"or lower its maxGpus to {nodes * p.gpus_per_node}"
    else:
        shrink = f"or lower its maxNodes to {nodes}" + (" (and minNodes with it)" if nodes < p.min_nodes else "")
    if covered == 0:
        return f"{head}: {shrink}"
    return f"{head}: raise a tenant's gpuQuota on {p.name}, {shrink}"


def _oversubscription_ratio(decided: Plan) -> float:
    return decided.addons["kueue"].options["oversubscriptionRatio"]  # scheduling.oversubscriptionRatio


def warnings(decided: Plan, unanswered_lookups: Iterable[str] = ()) -> list[str]:
    """What a reviewer should not miss: the plan's risky decisions, and the lookups the synth could not answer."""
    return [message for _, message in _anchored_warnings(decided, unanswered_lookups)]


def _anchored_warnings(decided: Plan, unanswered_lookups: Iterable[str] = ()) -> list[tuple[tuple[str, ...], str]]:
    """``warnings`` with where each one lives in the stack file: ("nodePools", pool), ("tenants", tenant), a key
    path's parts, or () for none."""
    out: list[tuple[tuple[str, ...], str]] = []
    ratio = _oversubscription_ratio(decided)
    for p in decided.pools.values():
        if (quota_ratio := _quota_ratio(p)) > ratio:
            out.append(
                (
                    ("nodePools", p.name),
                    f"pool {p.name}: tenant quotas are {quota_ratio:.2f}x what it can bring "
                    f"(allowed {ratio:g}x by scheduling.oversubscriptionRatio)",
                ),
            )
    out += [(("nodePools", p.name), _uncovered(p)) for p in decided.pools.values() if p.uncovered_gpus]
    images = decided.images
    if images is not None and images.node_policy is not None and decided.eks_create is None:
        out.append(
            (
                ("images",),
                "images pull through ECR: the platform's controllers run on system nodes it does not manage; their "
                "node role needs ecr:BatchImportUpstreamImage and ecr:CreateRepository on the cache's prefixes, or the "
                "first pull of each controller image fails (docs/concepts/images.md)",
            )
        )
    if decided.addons["kueue"].enabled:
        for t in decided.tenants.values():
            pools = [p for p in t.pool_gpus if p in decided.pools]
            cpu_or_memory = {"requests.cpu", "requests.memory"} & set(t.quota_hard)
            if cpu_or_memory and len(pools) > 1 and t.scheduler == "kueue":
                out.append(
                    (
                        ("tenants", t.name),
                        f"tenant {t.name}: Kueue holds its cpu/memory quota once per pool ({len(pools)} pools), the "
                        "namespace ResourceQuota once in total; running in several pools at once, it can be admitted "
                        "beyond the total, and then its pods are refused until the total has room (or waitForPodsReady "
                        "requeues the job)",
                    ),
                )
    kueue = decided.addons["kueue"]
    cold = [p.name for p in decided.pools.values() if p.cold_start]
    short = derive.waits_below_cold_start(kueue.options) if kueue.enabled and cold else []  # as Kueue is told
    if short:
        pools = ", ".join(cold)
        out.append(
            (
                ("scheduling", short[0]),
                f"scheduling.{' and '.join(short)} below {derive.COLD_START_SECONDS // 60}m while pools start from "
                f"zero ({pools}): node launch, GPU driver validation and a large image pull can outlast it, and "
                "Kueue then evicts the job just before it would run",
            ),
        )
    if decided.monitoring is not None and decided.monitoring.prometheus == "none":
        out.append(
            (
                ("monitoring", "prometheus"),
                "GPU alerts are off: monitoring.prometheus is none (no ServiceMonitor, PrometheusRule or dashboard)",
            )
        )
    if decided.monitoring is not None and decided.monitoring.unmonitored_pools:
        out.append(
            (
                ("nodePools", decided.monitoring.unmonitored_pools[0]),
                f"no DCGM metrics on Bottlerocket pools {', '.join(decided.monitoring.unmonitored_pools)}: the "
                "GPU Operator's validator, GPU Feature Discovery and DCGM exporter are off there (not in NVIDIA's "
                "supported platforms), so the GPU utilization, memory, temperature and XID alerts and idle cost do "
                "not cover them; GPU faults still page (GpuDevicesUnhealthy, the node monitoring agent's "
                "condition). Use os: al2023 for a pool that needs them",
            ),
        )
    out += [(("cluster", "kubernetesVersion"), w) for w in _support_ending(decided)]
    for token in unanswered_lookups:
        out.append(((), f"lookup {token} has no offline placeholder; it answered empty"))
    return out


def stack_warnings(spec: StackSpec, decided: Plan, unanswered_lookups: Iterable[str] = ()) -> list[Problem]:
    """Every warning about a stack, with its key path in the stack file ("" where it has none): the plan's risky
    decisions and the placeholders ``pulumi up`` refuses. The one source of summary.md's Warnings section and of
    the lines ``check``, ``synth`` and ``plan`` print on stderr."""
    index = {
        "nodePools": {p.name: i for i, p in enumerate(spec.node_pools)},
        "tenants": {t.name: i for i, t in enumerate(spec.tenants)},
    }

    def path(anchor: tuple[str, ...]) -> str:
        if not anchor:
            return ""
        if anchor[0] in index and anchor[1] in index[anchor[0]]:
            return key(anchor[0], index[anchor[0]][anchor[1]], *anchor[2:])
        return key(*anchor) if anchor[0] not in index else key(anchor[0])

    out = [Problem(path(anchor), message) for anchor, message in _anchored_warnings(decided, unanswered_lookups)]
    return out + [Problem(p.path, f"{p.message}; pulumi up refuses it") for p in placeholders.problems(spec)]


def warning_line(w: Problem) -> str:
    """A warning as one line: its key path first where it has one."""
    return f"{w.path}: {w.message}" if w.path else w.message


SUPPORT_WARNING_DAYS = 90


def _support_ending(decided: Plan) -> list[str]:
    """A created EKS cluster whose minor has left standard support, or leaves it within ``SUPPORT_WARNING_DAYS`` of
    the date the tables were read (a fixed date, so the summary stays the same from day to day): then the control
    plane is billed as extended support, $0.60 an hour instead of $0.10."""
    import datetime

    c = decided.eks_create
    ends = versions.EKS_STANDARD_SUPPORT_ENDS.get(c.kubernetes_version) if c is not None else None
    if c is None or ends is None:
        return []
    left = (datetime.date.fromisoformat(ends) - datetime.date.fromisoformat(versions.EKS_TABLES_READ)).days
    if left > SUPPORT_WARNING_DAYS:
        return []
    from ..data import prices

    standard, extended_usd = (prices.FIXED[k][0] for k in ("eks-control-plane", "eks-control-plane-extended"))
    extended = (
        f"EKS bills the control plane as extended support (${extended_usd:.2f} an hour instead of ${standard:.2f}) "
        "until the cluster is upgraded"
    )
    if versions.eks_extended_support(c.kubernetes_version):
        return [
            f"cluster.kubernetesVersion {c.kubernetes_version}: EKS standard support ended {ends}; {extended} "
            "(the cost counts it)"
        ]
    return [
        f"cluster.kubernetesVersion {c.kubernetes_version}: EKS standard support ends {ends} ({left} days after "
        f"{versions.EKS_TABLES_READ}, when the tables were read); then {extended}"
    ]


def _ratio(ratio: float, allowed: float) -> str:
    text = f"{ratio:.2f}x" if ratio != float("inf") else "no capacity"
    return f"**{text}** (over {allowed:g}x)" if ratio > allowed else text


def _limits(pools: Iterable[str], cohort: str | None, limits: Mapping[str, int]) -> str:
    """Per pool the tenant reaches: its borrowing/lending limit, 'any' where it sets none."""
    if cohort is None:
        return "none (no cohort)"
    return ", ".join(f"{pool}: {limits.get(pool, 'any')}" for pool in sorted(pools)) or "-"


def _queue_lines(decided: Plan) -> list[str]:
    """Per tenant: where its jobs queue (Kueue LocalQueue -> ClusterQueue, cohort, limits; Volcano queue)."""
    if not decided.tenants or not (decided.addons["kueue"].enabled or decided.addons["volcano"].enabled):
        return []
    lines = [
        "",
        "## Queues",
        "",
        "| tenant | Kueue LocalQueue -> ClusterQueue | flavors in order | preemption | cohort | may borrow (GPUs) "
        "| may lend (GPUs) | Volcano queue |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for t in decided.tenants.values():
        order = " > ".join(f"{name} ({decided.pools[name].flavor_class})" for name in t.flavor_order)
        volcano = "-"
        if t.volcano_queue is not None:  # a Volcano tenant
            rest, full = t.volcano_queue_cap_at_rest or {}, t.volcano_queue_cap or {}
            weight = (t.volcano_queue_spec or {}).get("weight")
            volcano = (
                f"`{t.volcano_queue}` (weight {weight}; enqueues at most {_units(rest)} from an idle cluster, holds "
                f"at most {_units(full)} at full size)"
            )
        if t.cluster_queue is None:  # no ClusterQueue: nothing queued, ordered, lent or borrowed in Kueue
            lines.append(f"| {t.name} | - | - | - | - | - | - | {volcano} |")
            continue
        cohort = t.cohort
        kueue = f"`{t.namespace}/{t.local_queue}` -> `{t.cluster_queue}`"
        preempt = "never" if t.never_preempts else "lower priority; reclaims lent quota"
        lines.append(
            f"| {t.name} | {kueue} | {order or '-'} | {preempt} | {cohort or 'none'} | "
            f"{_limits(t.pool_gpus, cohort, t.borrowing_limits)} | {_limits(t.pool_gpus, cohort, t.lending_limits)} "
            f"| {volcano} |"
        )
    lines += [
        "",
        "*any*: no limit; idle quota in the cohort is lent and borrowed, and reclaimed by preemption. *flavors in "
        "order*: the order Kueue tries the tenant's pools in (dedicated, spot, queued provisioning, shared; by name "
        "within a class). *holds at most … at full size*: Volcano's proportion cap with every pool at its maximum "
        "size, min(capability, cluster total - all Volcano queues' guarantees + its own). *enqueues at most … from "
        "an idle cluster*: the same cap over the nodes an idle cluster keeps (every pool at minNodes), since "
        "proportion takes the cluster total from the nodes that exist; from zero GPU nodes it is the queue's "
        "guarantee. Volcano does not enqueue a job whose minimum exceeds it, creates none of its pods, and so no "
        "autoscaler brings the nodes that would raise it. Only tenants with "
        "`scheduler: volcano` get a Volcano queue, so Kueue tenants reserve nothing there. A tenant whose "
        "priority ceiling is a `Never` class gets a ClusterQueue that never preempts (Kueue ignores a "
        "PriorityClass's preemptionPolicy) and lends nothing, since it could not reclaim it. A Volcano tenant has "
        "no Kueue queue.",
    ]
    return lines


def _units(units: Mapping[str, int]) -> str:
    return ", ".join(f"{n} {name}" for name, n in sorted(units.items())) or "-"


def _sharing(p: PoolPlan) -> str:
    """One line on a pool's sharing (``sharing.describe``, from the plan)."""
    s = p.sharing
    units = ", ".join(f"{n}x {r}" for r, n in p.units_per_gpu.items())
    if s is None:
        return "whole GPUs"
    if s["strategy"] == "mig":
        layout = " + ".join(f"{c}x {profile}" for profile, c in sorted(s["layout"].items()))
        return f"MIG {layout} per GPU ({units})"
    return f"{s['strategy']} x{s['replicas']} ({units} per GPU)"


def _stack_provisioner(p: PoolPlan) -> str:
    """The pool's ``provisioner`` as the stack file says it: managed or karpenter (GKE and existing pools keep
    the default, managed; ``PoolPlan.provisioner`` names who really brings the nodes)."""
    return "karpenter" if p.provisioner == "karpenter" else "managed"


def _declared_taints(p: PoolPlan) -> tuple[Mapping[str, str], ...]:
    """The taints the stack gives the pool (the GPU taint and its own): its nodes' less the one GKE adds last to
    queued-provisioning nodes by itself (``derive.node_taints``)."""
    return p.taints[:-1] if p.queued_provisioning else p.taints


def _gpu_operator_lines(decided: Plan) -> list[str]:
    """The summary.md section: who serves each pool's GPUs, and what the monitoring alerts on."""
    from ..plan import gpu_operator

    operator, m = decided.addons["gpuOperator"], decided.monitoring
    if not operator.enabled and m is None:
        return []
    lines = ["## GPU Operator and monitoring", ""]
    if operator.enabled:
        v = operator.values or {}
        on = {True: "on", False: "off"}
        chart = gpu_operator.CHART
        driver = derive.driver_of(operator.options["driver"], decided.cloud)
        lines += [
            f"GPU Operator {operator.version} in `{chart.namespace}`: driver "
            f"{driver} (operator's {on[v['driver']['enabled']]}), toolkit {on[v['toolkit']['enabled']]}, "
            f"device plugin {on[v['devicePlugin']['enabled']]}, MIG strategy {v['mig']['strategy']}, "
            f"MIG manager {on[v['migManager']['enabled']]}.",
            "",
            "| pool | OS | GPUs served by | sharing | config label |",
            "|---|---|---|---|---|",
        ]
        for p in decided.pools.values():
            labels = p.labels
            label = labels.get(derive.DEVICE_PLUGIN_CONFIG_LABEL) or labels.get(derive.MIG_CONFIG_LABEL)
            kind = (
                derive.DEVICE_PLUGIN_CONFIG_LABEL
                if derive.DEVICE_PLUGIN_CONFIG_LABEL in labels
                else derive.MIG_CONFIG_LABEL
            )
            lines.append(
                f"| {p.name} | {p.os} | {p.device_plugin} | {_sharing(p)} | {f'`{kind}={label}`' if label else '-'} |"
            )
        lines.append("")
    if m is not None and m.prometheus == "none":
        ex = m.exporter
        lines.append(
            f"DCGM exporter from the {ex.source} in `{ex.namespace}`. **GPU alerts are off** "
            "(`monitoring.prometheus: none`): no ServiceMonitor, PrometheusRule or Grafana dashboard is deployed."
        )
    elif m is not None:
        ex, a = m.exporter, m.alerts
        selector = ", ".join(f"{k}={v}" for k, v in m.service_monitor_labels.items())
        lines.append(
            f"DCGM exporter from the {ex.source} in `{ex.namespace}`; ServiceMonitor and PrometheusRule labelled "
            f"`{selector}`. Alerts: GpuIdle (< {a.idle_utilization_percent:g}% for {a.idle_for}, unallocated), "
            f"GpuAllocatedIdle ({a.allocated_idle_for}), GpuFramebufferMemoryHigh (> {a.memory_used_percent:g}% "
            f"for {a.memory_for}), GpuTemperatureHigh (> {a.temperature_celsius:g} C for {a.temperature_for}), "
            "GpuXidErrorCritical / GpuXidError, DcgmExporterDown."
        )
        lines.append(
            {
                "install": "Prometheus: kube-prometheus-stack installed in `monitoring` (its selectors and Grafana "
                "sidecar match these labels).",
                "existing": "Prometheus: the cluster's existing prometheus-operator (its Prometheus must select "
                "these labels).",
            }[m.prometheus]
        )
    return lines


def _dra_lines(decided: Plan) -> list[str]:
    """The summary.md section of a DRA stack: classes, quota keys, Kueue mappings and claim templates."""
    d = decided.dra
    if d is None:
        return []
    from ..plan import dra

    lines = [
        "## GPUs through DRA (ResourceClaims)",
        "",
        f"Kubernetes {d.kubernetes_version}; the GPU Operator's GPUCluster deploys the NVIDIA DRA driver "
        "(no device plugin). Pods ask for GPUs through `resourceClaims` referencing a ResourceClaimTemplate in "
        "their namespace; Kueue counts the claimed devices (`deviceClassMappings`: "
        + ", ".join(f"`{m['deviceClassNames'][0]}` as `{m['name']}`" for m in d.kueue_device_class_mappings)
        + ").",
        "",
        "| tenant | quota (devices per DeviceClass) | claim templates |",
        "|---|---|---|",
    ]
    for t in decided.tenants.values():
        quota = ", ".join(f"`{k}` {v}" for k, v in t.quota_hard.items() if k.endswith(dra.QUOTA_SUFFIX))
        templates = ", ".join(f"`{n}`" for n in d.claim_templates.get(t.name, {})) or "-"
        lines.append(f"| {t.name} | {quota} | {templates} |")
    lines.append("")
    return lines


def _cluster(decided: Plan) -> str:
    """The cluster the stack deploys to, as the summary header names it: the EKS or GKE cluster's name, else an
    existing cluster's kubeconfig context."""
    if decided.aws is not None and decided.aws.cluster.name:
        return decided.aws.cluster.name
    if decided.gke is not None and decided.gke.cluster.name:
        return decided.gke.cluster.name
    if decided.existing is not None and decided.existing.context:
        return decided.existing.context
    return "current context"


def summary(
    rendering: Rendering,
    sections: Mapping[str, str],
    *,
    cost_doc: dict[str, Any] | None = None,
    graph: lending.Graph | None = None,
) -> str:
    """summary.md's text. ``cost_doc`` (``cost.report_of``) and ``graph`` (``lending.graph``) of the rendering's
    plan when the caller has them: the synth makes them once for summary.md, cost.json and plan.html."""
    decided = plan.build(rendering.spec, rendering.stack)
    lines = [
        f"# gpu-platform synth: {rendering.stack}",
        "",
        f"Cloud `{decided.cloud}`, cluster `{_cluster(decided)}`. "
        "**Offline synth**: rendered under the Pulumi mock engine; lookups of existing cloud objects "
        "answered with `offline-placeholder` values, nothing was deployed.",
        "",
        f"{len(rendering.resources)} resources, {len(rendering.manifests)} Kubernetes objects, "
        f"{len(rendering.releases)} Helm releases.",
        "",
        "## GPU pools",
        "",
        "| pool | GPU | provisioner | capacity | nodes | max GPUs | sharing | brings | tenant quotas "
        "| quota / capacity |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    allowed = _oversubscription_ratio(decided)
    for p in decided.pools.values():
        lines.append(
            f"| {p.name} | {p.gpus_per_node}x {p.gpu_model} | {_stack_provisioner(p)} | {p.capacity} | "
            f"{p.min_nodes}..{p.max_nodes} | {p.max_gpus} | {_sharing(p)} | "
            f"{_units(p.max_units)} | {_units(p.tenant_quota_units)} | {_ratio(_quota_ratio(p), allowed)} |"
        )
    if not decided.pools:
        lines.append("| (none) | | | | | | | | | |")
    lines += [
        "",
        "*brings*: scheduler units at the pool's maximum size (GPUs x units per GPU); *tenant quotas*: the sum "
        "of the tenants' nominal quotas on the pool (their ResourceQuotas, Kueue ClusterQueues and Volcano "
        f"guarantees); above {allowed:g}x (`scheduling.oversubscriptionRatio`) is a warning.",
    ]
    lines += ["", "## Pool labels and taints", "", "| pool | node labels | taints |", "|---|---|---|"]
    for p in decided.pools.values():
        labels = ", ".join(f"`{k}={v}`" for k, v in p.labels.items())
        taints = ", ".join(f"`{t['key']}={t['value'] or ''}:{t['effect']}`" for t in _declared_taints(p))
        lines.append(f"| {p.name} | {labels} | {taints} |")
    lines += _scaling(decided)
    if decided.addons["karpenter"].enabled:  # aws only
        from ..plan.aws import karpenter

        lines += ["", *karpenter.summary(decided.karpenter)]
    from ..plan.aws import efa

    lines += efa.summary(decided)
    gpu_lines = _gpu_operator_lines(decided)
    if gpu_lines:
        lines += ["", *gpu_lines]
    dra_lines = _dra_lines(decided)
    if dra_lines:
        lines += ["", *dra_lines]
    lines += [
        "",
        "## Tenants",
        "",
        "| tenant | GPUs per pool | scheduler units (nominal) | ResourceQuota cap (with borrowing) | scheduler "
        "| priority ceiling | pod security |",
        "|---|---|---|---|---|---|---|",
    ]
    for t in decided.tenants.values():
        quota = ", ".join(f"{pool}: {n}" for pool, n in sorted(t.pool_gpus.items())) or "-"
        # the ResourceQuota's cap per resource name the tenant's pools advertise (gpuLimit leaves out the zeros)
        limit = {r: t.gpu_limit.get(r, 0) for units in t.pool_units.values() for r in units}
        lines.append(
            f"| {t.name} | {quota} | {_units(t.gpu_quota)} "
            f"| {_units(limit)} | {t.scheduler or '-'} "
            f"| {t.priority_ceiling} | {t.pod_security} |"
        )
    lines += _queue_lines(decided)
    from ..plan import lending

    lines += lending.summary_section(decided, graph)  # the same graph as plan.html's, in Mermaid
    from ..plan import cost

    lines += ["", *cost.markdown(cost.report_of(decided) if cost_doc is None else cost_doc)]
    from ..plan import reservations

    if decided.reservations:
        lines += ["", *reservations.summary(decided.reservations)]
    if decided.images is not None:  # the mirror and what is warm where, as `gpu-platform plan` says it
        from ..plan import images_text

        text = images_text.text(decided.images)[2:]
        lines += [
            "",
            "## Image delivery",
            "",
            f"Mirror: {decided.images.mirror}.",
            "",
            *(f"- {x.strip()}" for x in text),
        ]
    lines += ["", "## Priority classes", "", "| class | value | preemption | default |", "|---|---|---|---|"]
    for pc in sorted(decided.priority_classes, key=lambda c: -c.value):
        lines.append(f"| {pc.name} | {pc.value} | {pc.preemption_policy} | {'yes' if pc.global_default else ''} |")
    lines += ["", "## Helm releases", "", "| release | chart | version | source |", "|---|---|---|---|"]
    for r in rendering.releases:
        i = r.inputs
        source = (i.get("repositoryOpts") or {}).get("repo") or i.get("chart", "").rsplit("/", 1)[0]
        lines.append(f"| {i.get('name', r.name)} | {i.get('chart')} | {i.get('version')} | {source} |")
    if not rendering.releases:
        lines.append("| (none) | | | |")
    lines += ["", f"Pinned charts available: {', '.join(f'{c.key} {c.version}' for c in versions.CHARTS.values())}."]
    for title, body in sections.items():
        lines += ["", f"## {title}", "", body.rstrip()]
    warns = stack_warnings(rendering.spec, decided, rendering.unanswered_lookups)
    lines += ["", "## Warnings", ""]
    lines += [f"- {warning_line(w)}" for w in warns] or ["- none"]
    return "\n".join(lines) + "\n"
