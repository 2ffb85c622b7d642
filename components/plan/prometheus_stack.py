"""What the kube-prometheus-stack install decides (pure): whether it is installed, the labels its Prometheus and
Grafana select our objects by, its values and its rules. The release is ``components/render/prometheus_stack.py``'s."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..data import versions
from ..spec.model import Problem, StackSpec, key, rule
from . import derive

CHART = versions.KUBE_PROMETHEUS_STACK
RETENTION = "7d"
RETENTION_SIZE = "4GB"  # below the emptyDir limit, so Prometheus deletes old blocks before the kubelet evicts it
EMPTY_DIR_LIMIT = "5Gi"
RELEASE_LABEL = "release"
OPERATOR_NAMESPACE_LABEL = "gpu-platform/operator-namespace"  # policies/common.py, same name


def enabled(spec: StackSpec) -> bool:
    return spec.monitoring.prometheus == "install"


def monitor_labels(spec: StackSpec) -> dict[str, str]:
    """What Prometheus selects ServiceMonitors and PrometheusRules by: the labels ours carry."""
    return dict(sorted(spec.monitoring.service_monitor_labels.items()))


def extra_labels(spec: StackSpec) -> dict[str, str]:
    """serviceMonitorLabels the chart's own objects lack (they carry release=<release> themselves)."""
    return {k: v for k, v in monitor_labels(spec).items() if k != RELEASE_LABEL}


def dashboard_label(spec: StackSpec) -> tuple[str, str]:
    """The one label the Grafana sidecar watches (it takes a single key/value): the first dashboardLabel."""
    return sorted(spec.monitoring.dashboard_labels.items())[0]


@rule
def prometheus_rules(spec: StackSpec) -> Iterator[Problem]:
    m = spec.monitoring
    if m.prometheus != "install":
        if m.prometheus_storage_gib is not None:
            yield Problem(
                key("monitoring", "prometheusStorageGib"),
                f"only used with monitoring.prometheus: install (it is {m.prometheus})",
            )
        return
    release = versions.for_spec(CHART, spec).release
    if m.service_monitor_labels.get(RELEASE_LABEL, release) != release:
        yield Problem(
            key("monitoring", "serviceMonitorLabels", RELEASE_LABEL),
            f"the installed kube-prometheus-stack labels its own ServiceMonitors and rules {RELEASE_LABEL}={release}; "
            f"a Prometheus selecting {RELEASE_LABEL}={m.service_monitor_labels[RELEASE_LABEL]} would not scrape the "
            "cluster: drop the key or use that value",
        )
    if not m.service_monitor_labels:
        yield Problem(
            key("monitoring", "serviceMonitorLabels"),
            "empty: the installed Prometheus would select every ServiceMonitor and rule in the cluster",
        )
    if not m.dashboard_labels:
        yield Problem(key("monitoring", "dashboardLabels"), "empty: the Grafana sidecar needs a label to watch")


def _storage(spec: StackSpec) -> dict[str, Any]:
    gib = spec.monitoring.prometheus_storage_gib
    if gib is None:
        return {"emptyDir": {"sizeLimit": EMPTY_DIR_LIMIT}}
    return {
        "volumeClaimTemplate": {
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": f"{gib}Gi"}}}
        }
    }


def _res(cpu: str, memory: str, limit: str) -> dict[str, Any]:
    return {"requests": {"cpu": cpu, "memory": memory}, "limits": {"memory": limit}}


def helm_values(spec: StackSpec) -> dict[str, Any]:
    """Values of the kube-prometheus-stack release (paths checked against the chart's and its sub-charts'
    values.yaml in upstream/kube-prometheus-stack/)."""
    system = derive.system_node_selector(spec)
    selector = {"matchLabels": monitor_labels(spec)}
    extra = extra_labels(spec)
    label, value = dashboard_label(spec)
    prometheus_spec: dict[str, Any] = {
        "serviceMonitorSelectorNilUsesHelmValues": False,
        "serviceMonitorSelector": selector,
        "serviceMonitorNamespaceSelector": {},  # our ServiceMonitor lives in the exporter's namespace
        "ruleSelectorNilUsesHelmValues": False,
        "ruleSelector": selector,
        "ruleNamespaceSelector": {},
        "podMonitorSelectorNilUsesHelmValues": False,
        "podMonitorSelector": selector,
        "probeSelectorNilUsesHelmValues": False,
        "probeSelector": selector,
        "scrapeConfigSelectorNilUsesHelmValues": False,
        "scrapeConfigSelector": selector,
        "retention": RETENTION,
        "retentionSize": RETENTION_SIZE,
        "walCompression": True,
        "nodeSelector": system,
        "resources": _res("500m", "2Gi", "4Gi"),
        "storageSpec": _storage(spec),
    }
    values: dict[str, Any] = {
        "crds": {"enabled": True},
        "commonLabels": extra,
        "prometheusOperator": {
            "nodeSelector": system,
            "resources": _res("100m", "128Mi", "512Mi"),
            "admissionWebhooks": {"patch": {"nodeSelector": system}},
        },
        "prometheus": {"prometheusSpec": prometheus_spec},
        "alertmanager": {
            "alertmanagerSpec": {"nodeSelector": system, "resources": _res("50m", "128Mi", "256Mi")},
        },
        "grafana": {
            "nodeSelector": system,
            "resources": _res("100m", "256Mi", "512Mi"),
            "sidecar": {
                "dashboards": {
                    "enabled": True,
                    "label": label,
                    "labelValue": value,
                    "searchNamespace": "ALL",  # our dashboard sits in the DCGM exporter's namespace
                    "folderAnnotation": "grafana_folder",  # the folder our ConfigMap names
                    "provider": {"foldersFromFilesStructure": True},
                }
            },
        },
        "kube-state-metrics": {
            "nodeSelector": system,
            "resources": _res("50m", "128Mi", "512Mi"),
            "prometheus": {"monitor": {"additionalLabels": extra}},
        },
        "prometheus-node-exporter": {
            "namespaceOverride": versions.NODE_EXPORTER_NAMESPACE,
            "resources": _res("50m", "64Mi", "128Mi"),
            "prometheus": {"monitor": {"additionalLabels": extra}},
        },
        # control-plane components pods cannot reach on EKS/GKE (managed) and kind (bound to localhost)
        "kubeControllerManager": {"enabled": False},
        "kubeScheduler": {"enabled": False},
        "kubeEtcd": {"enabled": False},
        "kubeProxy": {"enabled": False},
    }
    if spec.cloud == "gcp":
        values["coreDns"] = {"enabled": False}
        values["kubeDns"] = {"enabled": True}
    return values
