"""kube-prometheus-stack (``monitoring.prometheus: install``): the prometheus-operator CRDs our ServiceMonitor
and PrometheusRule need, a Prometheus that selects them, Alertmanager, Grafana whose dashboard sidecar loads our
dashboard ConfigMap, kube-state-metrics and node-exporter.

One source for the labels: the Prometheus ``serviceMonitorSelector`` and ``ruleSelector`` are
``monitoring.serviceMonitorLabels`` (the labels our ServiceMonitor and PrometheusRule carry), and the Grafana
sidecar watches the first of ``monitoring.dashboardLabels`` (our dashboard ConfigMap carries them all).
``*NilUsesHelmValues: false`` makes the chart use exactly these selectors instead of its own ``release`` one.
The chart's own ServiceMonitors and rules carry ``release: <release name>`` (kube-prometheus-stack); any other
serviceMonitorLabels are added to them through ``commonLabels`` and the sub-charts' ``additionalLabels``, so
the Prometheus still scrapes the cluster itself. A ``release`` label must therefore name this release
(``prometheus_rules``).

Placement and size: every controller on system nodes (``systemNodeSelector``), node-exporter on every node
(its chart tolerates every NoSchedule taint, GPU nodes included). Prometheus keeps 7 days, at most 4 GB, on an
emptyDir (or a PVC of ``monitoring.prometheusStorageGib``), with requests sized for a few hundred GPUs.

Pod Security: node-exporter needs ``hostNetwork``, ``hostPID`` and ``hostPath`` mounts of ``/``, ``/proc`` and
``/sys`` (prometheus-node-exporter 4.56.1 values.yaml: ``hostNetwork: true``, ``hostPID: true``,
``hostRootFsMount.enabled: true``), which only the ``privileged`` level allows (``baseline`` forbids host
namespaces and hostPath volumes). It runs in a namespace of its own (``versions.NODE_EXPORTER_NAMESPACE``,
privileged); the rest of the stack (operator, Prometheus, Alertmanager, Grafana, kube-state-metrics, the
webhook certificate Job) needs none of that and runs in ``monitoring`` at ``baseline`` (warn/audit restricted).

Managed control planes (EKS, GKE) and kind expose no controller-manager, scheduler, etcd or kube-proxy metrics
to pods, so those scrapes are off (they would only fire "down" alerts). GKE runs kube-dns, not CoreDNS.

GKE managed Prometheus (GMP) does not conflict: it uses its own CRDs (``monitoring.googleapis.com``
PodMonitoring/ClusterPodMonitoring) and collectors in ``gmp-system``, so both run side by side; GKE's system
metrics stay in Cloud Monitoring, GPU metrics and alerts are here.
"""

from __future__ import annotations

from ..data import versions
from ..plan.plan import plain

# re-exported: the renderer's names for what it is made of (components/plan/prometheus_stack.py)
from ..plan.prometheus_stack import (
    CHART as CHART,
    EMPTY_DIR_LIMIT as EMPTY_DIR_LIMIT,
    OPERATOR_NAMESPACE_LABEL as OPERATOR_NAMESPACE_LABEL,
    RELEASE_LABEL as RELEASE_LABEL,
    RETENTION as RETENTION,
    RETENTION_SIZE as RETENTION_SIZE,
    _res as _res,
    _storage as _storage,
    dashboard_label as dashboard_label,
    enabled as enabled,
    extra_labels as extra_labels,
    helm_values as helm_values,
    monitor_labels as monitor_labels,
    prometheus_rules as prometheus_rules,
)
from . import addon, k8s


class PrometheusStack(addon.ChartAddon):
    """Namespaces (baseline for the stack, privileged for node-exporter) and the kube-prometheus-stack release."""

    TYPE = "gpu-platform:monitoring:PrometheusStack"
    CHART = CHART

    def build(self) -> None:
        before = self.create_namespace(addon.NamespacePolicy("monitoring", k8s.psa_labels("baseline")))
        before += self.create_namespace(
            addon.NamespacePolicy(
                "node-exporter",
                # the policy pack allows privileged namespaces only where the platform marks them as operator ones
                {**k8s.psa_labels("privileged", audit="privileged"), OPERATOR_NAMESPACE_LABEL: "true"},
                name=versions.NODE_EXPORTER_NAMESPACE,
            )
        )
        # CRDs, the operator's certificate Job and the first Prometheus take a while on a fresh cluster
        values = plain(self.plan.addons["kubePrometheusStack"].values)
        self.install("kube-prometheus-stack", values, before, timeout=900)
        self.register_outputs({"namespace": self.chart.namespace})
