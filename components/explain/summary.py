"""summary.md: what a reviewer wants at a glance from a synth."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from components.data import versions
from components.plan import derive, plan, sharing

if TYPE_CHECKING:
    from components.explain.rendering import Rendering
    from components.spec.model import StackSpec, Tenant


def scaled_by(spec: StackSpec, pool) -> str:
    """Who adds nodes to the pool (and so whether a pending workload can ever get one)."""
    if spec.cloud == "existing":
        return "nobody: existing nodes"
    if spec.cloud == "gcp":
        if pool.gke.queued_provisioning:
            return "GKE Dynamic Workload Scheduler (queued provisioning), through Kueue's ProvisioningRequests"
        return "GKE cluster autoscaler"
    if pool.provisioner == "karpenter":
        return "Karpenter, for pending pods"
    if spec.cluster_autoscaler_enabled:
        chart = versions.for_spec(versions.CLUSTER_AUTOSCALER, spec)
        return f"Cluster Autoscaler (chart {chart.version}), EKS managed node group"
    return f"nobody: fixed at {pool.min_nodes} node(s) (addons.clusterAutoscaler is off)"


def _scaling(spec: StackSpec) -> list[str]:
    if not spec.node_pools:
        return []
    from components.render import kueue

    lines = ["", "## Who scales each pool", "", "| pool | scaled by | Kueue admission check |", "|---|---|---|"]
    for p in spec.node_pools:
        cls = kueue.provisioning_class(spec, p) if spec.addons.kueue else None
        check = f"`{kueue.admission_check_name(spec, p)}` ({cls})" if cls else "-"
        lines.append(f"| {p.name} | {scaled_by(spec, p)} | {check} |")
    return lines


def warnings(rendering: Rendering) -> list[str]:
    spec = rendering.spec
    out = []
    ratio = spec.scheduling.oversubscription_ratio
    for cap in derive.capacity_report(spec):
        if cap.ratio > ratio:
            out.append(
                f"pool {cap.pool}: tenant quotas are {cap.ratio:.2f}x what it can bring "
                f"(allowed {ratio:g}x by scheduling.oversubscriptionRatio)"
            )
    if spec.addons.kueue:
        for t in spec.tenants:
            pools = [p for p in t.gpu_quota if p in {x.name for x in spec.node_pools}]
            if (t.quota.cpu or t.quota.memory) and len(pools) > 1 and derive.tenant_scheduler(spec, t) == "kueue":
                out.append(
                    f"tenant {t.name}: Kueue holds its cpu/memory quota once per pool ({len(pools)} pools), the "
                    "namespace ResourceQuota once in total; running in several pools at once, it can be admitted "
                    "beyond the total, and then its pods are refused until the total has room (or waitForPodsReady "
                    "requeues the job)"
                )
    short = derive.wait_for_pods_ready_too_short(spec)
    if short:
        pools = ", ".join(p.name for p in derive.cold_start_pools(spec))
        out.append(
            f"scheduling.{' and '.join(short)} below {derive.COLD_START_SECONDS // 60}m while pools start from zero "
            f"({pools}): node launch, GPU driver validation and a large image pull can outlast it, and Kueue "
            "then evicts the job just before it would run"
        )
    if spec.addons.dcgm and spec.monitoring.prometheus == "none":
        out.append("GPU alerts are off: monitoring.prometheus is none (no ServiceMonitor, PrometheusRule or dashboard)")
    for token in rendering.unanswered_lookups:
        out.append(f"lookup {token} has no offline placeholder; it answered empty")
    return out


def _ratio(ratio: float, allowed: float) -> str:
    text = f"{ratio:.2f}x" if ratio != float("inf") else "no capacity"
    return f"**{text}** (over {allowed:g}x)" if ratio > allowed else text


def _limits(tenant: Tenant, cohort: str | None, limits: Mapping[str, int]) -> str:
    """Per pool the tenant reaches: its borrowing/lending limit, 'any' where it sets none."""
    if cohort is None:
        return "none (no cohort)"
    return ", ".join(f"{pool}: {limits.get(pool, 'any')}" for pool in sorted(tenant.gpu_quota)) or "-"


def _queues(spec: StackSpec) -> list[str]:
    """Per tenant: where its jobs queue (Kueue LocalQueue -> ClusterQueue, cohort, limits; Volcano queue)."""
    if not spec.tenants or not (spec.addons.kueue or spec.addons.volcano):
        return []
    lines = [
        "",
        "## Queues",
        "",
        "| tenant | Kueue LocalQueue -> ClusterQueue | flavors in order | preemption | cohort | may borrow (GPUs) "
        "| may lend (GPUs) | Volcano queue |",
        "|---|---|---|---|---|---|---|---|",
    ]
    volcano_tenants = {t.name for t in derive.volcano_tenants(spec)}
    kueue_tenants = {t.name for t in derive.kueue_tenants(spec)}
    for t in spec.tenants:
        order = " > ".join(f"{p.name} ({derive.flavor_class(spec, p)})" for p in derive.tenant_flavor_order(spec, t))
        volcano = "-"
        if t.name in volcano_tenants:
            rest, full = derive.volcano_queue_cap(spec, t, at_rest=True), derive.volcano_queue_cap(spec, t)
            volcano = (
                f"`{t.name}` (weight {t.queue_weight}; enqueues at most {_units(rest)} from an idle cluster, holds "
                f"at most {_units(full)} at full size)"
            )
        if t.name not in kueue_tenants:  # no ClusterQueue: nothing queued, ordered, lent or borrowed in Kueue
            lines.append(f"| {t.name} | - | - | - | - | - | - | {volcano} |")
            continue
        tp = plan.build(spec, "").tenants[t.name]  # a Kueue tenant: its queues, cohort and lending are the plan's
        cohort = tp.cohort
        kueue = f"`{t.name}/{tp.local_queue}` -> `{tp.cluster_queue}`"
        never = derive.tenant_never_preempts(spec, t)
        preempt = "never" if never else "lower priority; reclaims lent quota"
        lending = tp.lending_limits
        lines.append(
            f"| {t.name} | {kueue} | {order or '-'} | {preempt} | {cohort or 'none'} | "
            f"{_limits(t, cohort, t.borrowing_limit)} | {_limits(t, cohort, lending)} | {volcano} |"
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


def _gpu_operator_lines(spec: StackSpec) -> list[str]:
    """The summary.md section: who serves each pool's GPUs, and what the monitoring alerts on."""
    from components.render import gpu_operator, monitoring

    if not spec.addons.gpu_operator and not spec.addons.dcgm:
        return []
    lines = ["## GPU Operator and monitoring", ""]
    if spec.addons.gpu_operator:
        v = gpu_operator.operator_values(spec)
        on = {True: "on", False: "off"}
        chart = gpu_operator.CHART
        lines += [
            f"GPU Operator {versions.for_spec(chart, spec).version} in `{chart.namespace}`: driver "
            f"{derive.driver(spec)} (operator's {on[v['driver']['enabled']]}), toolkit {on[v['toolkit']['enabled']]}, "
            f"device plugin {on[v['devicePlugin']['enabled']]}, MIG strategy {v['mig']['strategy']}, "
            f"MIG manager {on[v['migManager']['enabled']]}.",
            "",
            "| pool | OS | GPUs served by | sharing | config label |",
            "|---|---|---|---|---|",
        ]
        for p in spec.node_pools:
            labels = derive.pool_labels(spec, p)
            label = labels.get(derive.DEVICE_PLUGIN_CONFIG_LABEL) or labels.get(derive.MIG_CONFIG_LABEL)
            kind = (
                derive.DEVICE_PLUGIN_CONFIG_LABEL
                if derive.DEVICE_PLUGIN_CONFIG_LABEL in labels
                else derive.MIG_CONFIG_LABEL
            )
            lines.append(
                f"| {p.name} | {derive.node_os(spec, p)} | {derive.pool_device_plugin(spec, p)} | "
                f"{sharing.describe(spec, p.name)} | {f'`{kind}={label}`' if label else '-'} |"
            )
        lines.append("")
    if spec.addons.dcgm and spec.monitoring.prometheus == "none":
        ex = monitoring.exporter(spec)
        lines.append(
            f"DCGM exporter from the {ex.source} in `{ex.namespace}`. **GPU alerts are off** "
            "(`monitoring.prometheus: none`): no ServiceMonitor, PrometheusRule or Grafana dashboard is deployed."
        )
    elif spec.addons.dcgm:
        ex = monitoring.exporter(spec)
        a = spec.monitoring.alerts
        selector = ", ".join(f"{k}={v}" for k, v in spec.monitoring.service_monitor_labels.items())
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
            }[spec.monitoring.prometheus]
        )
    return lines


def _dra_lines(spec: StackSpec) -> list[str]:
    """The summary.md section of a DRA stack: classes, quota keys, Kueue mappings and claim templates."""
    if not derive.dra(spec):
        return []
    from components.render import dra

    lines = [
        "## GPUs through DRA (ResourceClaims)",
        "",
        f"Kubernetes {spec.cluster.kubernetes_version}; the GPU Operator's GPUCluster deploys the NVIDIA DRA driver "
        "(no device plugin). Pods ask for GPUs through `resourceClaims` referencing a ResourceClaimTemplate in "
        "their namespace; Kueue counts the claimed devices (`deviceClassMappings`: "
        + ", ".join(f"`{m['deviceClassNames'][0]}` as `{m['name']}`" for m in dra.kueue_device_class_mappings(spec))
        + ").",
        "",
        "| tenant | quota (devices per DeviceClass) | claim templates |",
        "|---|---|---|",
    ]
    for t in spec.tenants:
        hard = plan.build(spec, "").tenants[t.name].quota_hard
        quota = ", ".join(f"`{k}` {v}" for k, v in hard.items() if k.endswith(dra.QUOTA_SUFFIX))
        templates = ", ".join(f"`{n}`" for n in dra.claim_templates(spec, t)) or "-"
        lines.append(f"| {t.name} | {quota} | {templates} |")
    lines.append("")
    return lines


def summary(rendering: Rendering, sections: Mapping[str, str]) -> str:
    spec = rendering.spec
    lines = [
        f"# gpu-platform synth: {rendering.stack}",
        "",
        f"Cloud `{spec.cloud}`, cluster `{spec.cluster.name or spec.cluster.context or 'current context'}`. "
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
    allowed = spec.scheduling.oversubscription_ratio
    caps = {c.pool: c for c in derive.capacity_report(spec)}
    for p in spec.node_pools:
        c = caps[p.name]
        lines.append(
            f"| {p.name} | {p.gpu.per_node}x {p.gpu.model} | {p.provisioner} | {p.capacity} | "
            f"{p.min_nodes}..{p.node_cap} | {p.gpu_cap} | {sharing.describe(spec, p.name)} | "
            f"{_units(c.resource_units)} | {_units(c.quota_units)} | {_ratio(c.ratio, allowed)} |"
        )
    if not spec.node_pools:
        lines.append("| (none) | | | | | | | | | |")
    lines += [
        "",
        "*brings*: scheduler units at the pool's maximum size (GPUs x units per GPU); *tenant quotas*: the sum "
        "of the tenants' nominal quotas on the pool (their ResourceQuotas, Kueue ClusterQueues and Volcano "
        f"guarantees); above {allowed:g}x (`scheduling.oversubscriptionRatio`) is a warning.",
    ]
    lines += ["", "## Pool labels and taints", "", "| pool | node labels | taints |", "|---|---|---|"]
    for p in spec.node_pools:
        labels = ", ".join(f"`{k}={v}`" for k, v in plan.node_labels(spec, p).items())
        taints = ", ".join(f"`{t.key}={t.value or ''}:{t.effect}`" for t in derive.pool_taints(p))
        lines.append(f"| {p.name} | {labels} | {taints} |")
    lines += _scaling(spec)
    if spec.cloud == "aws" and spec.karpenter_enabled:
        from components.render.aws.karpenter import summary_lines

        lines += ["", *summary_lines(spec)]
    if spec.cloud == "aws":
        from components.plan.aws import efa

        lines += efa.summary_lines(spec)
    gpu_lines = _gpu_operator_lines(spec)
    if gpu_lines:
        lines += ["", *gpu_lines]
    dra_lines = _dra_lines(spec)
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
    decided = plan.build(spec, rendering.stack)
    for t in spec.tenants:
        tp = decided.tenants[t.name]
        quota = ", ".join(f"{pool}: {n}" for pool, n in sorted(t.gpu_quota.items())) or "-"
        lines.append(
            f"| {t.name} | {quota} | {_units(tp.gpu_quota)} "
            f"| {_units(derive.tenant_quota_units(spec, t))} | {tp.scheduler or '-'} "
            f"| {tp.priority_ceiling} | {tp.pod_security} |"
        )
    lines += _queues(spec)
    from components.plan import cost

    lines += ["", *cost.markdown(cost.report(spec, rendering.stack))]
    from components.plan import reservations

    if reservations.reserved_pools(spec):
        lines += ["", *reservations.summary_lines(spec)]
    lines += ["", "## Priority classes", "", "| class | value | preemption | default |", "|---|---|---|---|"]
    for pc in sorted(spec.priority_classes, key=lambda c: -c.value):
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
    warns = warnings(rendering)
    lines += ["", "## Warnings", ""]
    lines += [f"- {w}" for w in warns] or ["- none"]
    return "\n".join(lines) + "\n"
