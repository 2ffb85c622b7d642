"""Issue 10 §5: monitoring.prometheus install / existing / none."""

from __future__ import annotations

import pytest
import yaml
from caching import shared_fixture
from conftest import (
    CONFIG_MAP,
    HELM_RELEASE,
    NAMESPACE,
    STACKS,
    UPSTREAM,
    manifest,
    manifests,
    monitoring_of,
    release,
    render_config,
    rendered,
    stack_config,
)
from values_paths import deep_merge, unknown_paths

from components.cli.loader import SpecError, load_spec
from components.data import versions
from components.explain.summary import summary
from components.render import prometheus_stack

KPS = UPSTREAM / "kube-prometheus-stack"
SUBCHARTS = ("grafana", "kube-state-metrics", "prometheus-node-exporter")
SERVICE_MONITOR = "kubernetes:monitoring.coreos.com/v1:ServiceMonitor"
PROMETHEUS_RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"


def _values(r):
    return release(r, "kube-prometheus-stack")["values"]


def _with(stack: str, **monitoring):
    cfg = stack_config(stack)
    cfg["gpu-platform:monitoring"] = {**cfg.get("gpu-platform:monitoring", {}), **monitoring}
    return cfg


@shared_fixture
def custom_labels():
    return render_config(
        _with("dev-aws", serviceMonitorLabels={"team": "gpu"}, dashboardLabels={"gpu_dashboards": "yes"})
    )


@shared_fixture
def existing():
    return render_config(_with("dev-aws", prometheus="existing"))


@shared_fixture
def none():
    return render_config(_with("dev-aws", prometheus="none"))


# ----------------------------------------------------------------------------------------- release


@pytest.mark.parametrize("stack", ["local", "dev-aws", "dev-gcp"])
def test_local_and_dev_stacks_install_kube_prometheus_stack(stack):
    assert stack_config(stack)["gpu-platform:monitoring"]["prometheus"] == "install"
    rel = release(rendered(stack), "kube-prometheus-stack")
    assert rel["chart"] == "kube-prometheus-stack"
    assert rel["version"] == "88.5.3"
    assert rel["repositoryOpts"] == {"repo": "https://prometheus-community.github.io/helm-charts"}
    assert rel["namespace"] == "monitoring"


def test_install_is_the_default():
    cfg = stack_config("prod-aws")
    assert "gpu-platform:monitoring" not in cfg
    assert load_spec(cfg).monitoring.prometheus == "install"


def test_chart_copy_is_the_pinned_version():
    chart = yaml.safe_load((KPS / "Chart.yaml").read_text())
    assert chart["version"] == versions.KUBE_PROMETHEUS_STACK.version


@pytest.mark.parametrize("stack", STACKS)
def test_every_value_path_exists_upstream(stack):
    ours = _values(rendered(stack))
    upstream = yaml.safe_load((KPS / "values.yaml").read_text())
    top = {k: v for k, v in ours.items() if k not in SUBCHARTS}
    assert unknown_paths(top, upstream) == []
    for sub in SUBCHARTS:
        sub_upstream = deep_merge(yaml.safe_load((KPS / sub / "values.yaml").read_text()), upstream.get(sub) or {})
        assert unknown_paths(ours[sub], sub_upstream) == [], sub


def test_value_walker_catches_a_misplaced_selector():
    upstream = yaml.safe_load((KPS / "values.yaml").read_text())
    bad = {"prometheus": {"serviceMonitorSelector": {"matchLabels": {"a": "b"}}}}  # belongs under prometheusSpec
    assert unknown_paths(bad, upstream)


# --------------------------------------------------------------------------------- label wiring


def _selected(selector: dict, labels: dict) -> bool:
    return all(labels.get(k) == v for k, v in selector["matchLabels"].items())


@pytest.mark.parametrize("case", ["default", "custom"])
def test_prometheus_selects_our_service_monitor_and_rule(case, custom_labels):
    r = rendered("dev-aws") if case == "default" else custom_labels
    spec = _values(r)["prometheus"]["prometheusSpec"]
    assert spec["serviceMonitorSelectorNilUsesHelmValues"] is False
    assert spec["ruleSelectorNilUsesHelmValues"] is False
    sm = manifest(r, "ServiceMonitor", "gpu-platform-dcgm-exporter", "gpu-operator")
    rule = manifest(r, "PrometheusRule", "gpu-platform-gpu-alerts", "gpu-operator")
    assert _selected(spec["serviceMonitorSelector"], sm["metadata"]["labels"])
    assert _selected(spec["ruleSelector"], rule["metadata"]["labels"])
    assert spec["serviceMonitorNamespaceSelector"] == {} and spec["ruleNamespaceSelector"] == {}  # any namespace
    if case == "custom":
        assert spec["serviceMonitorSelector"] == {"matchLabels": {"team": "gpu"}}
        # the chart's own monitors must carry the custom label too, or Prometheus would not scrape the cluster
        v = _values(r)
        assert v["commonLabels"] == {"team": "gpu"}
        assert v["kube-state-metrics"]["prometheus"]["monitor"]["additionalLabels"] == {"team": "gpu"}
        assert v["prometheus-node-exporter"]["prometheus"]["monitor"]["additionalLabels"] == {"team": "gpu"}
    else:
        # default serviceMonitorLabels release=kube-prometheus-stack: the chart's own release label
        assert spec["serviceMonitorSelector"] == {"matchLabels": {"release": "kube-prometheus-stack"}}
        assert _values(r)["commonLabels"] == {}


@pytest.mark.parametrize("case", ["default", "custom"])
def test_grafana_sidecar_loads_our_dashboard(case, custom_labels):
    r = rendered("dev-aws") if case == "default" else custom_labels
    side = _values(r)["grafana"]["sidecar"]["dashboards"]
    board = manifest(r, "ConfigMap", "gpu-platform-gpu-dashboard", "gpu-operator")
    assert board["metadata"]["labels"][side["label"]] == side["labelValue"]
    assert side["searchNamespace"] == "ALL"
    assert side["folderAnnotation"] in board["metadata"]["annotations"]
    if case == "custom":
        assert (side["label"], side["labelValue"]) == ("gpu_dashboards", "yes")


def test_monitoring_objects_wait_for_the_release():
    r = rendered("dev-aws")
    for t, name in (
        (SERVICE_MONITOR, "gpu-platform-dcgm-exporter"),
        (PROMETHEUS_RULE, "gpu-platform-gpu-alerts"),
        (CONFIG_MAP, "gpu-platform-gpu-dashboard"),
    ):
        assert "kube-prometheus-stack" in r.find(t, name).depends_on, name
    rel = r.find(HELM_RELEASE, "kube-prometheus-stack")
    assert set(rel.depends_on) == {"namespace-monitoring", "namespace-node-exporter"}


# ------------------------------------------------------------------------ placement, size, security


def test_controllers_on_system_nodes_with_sized_resources():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:systemNodeSelector"] = {"role": "system"}
    v = prometheus_stack.helm_values(load_spec(cfg))
    system = {"kubernetes.io/os": "linux", "role": "system"}
    assert v["prometheusOperator"]["nodeSelector"] == system
    assert v["prometheusOperator"]["admissionWebhooks"]["patch"]["nodeSelector"] == system
    assert v["prometheus"]["prometheusSpec"]["nodeSelector"] == system
    assert v["alertmanager"]["alertmanagerSpec"]["nodeSelector"] == system
    assert v["grafana"]["nodeSelector"] == system
    assert v["kube-state-metrics"]["nodeSelector"] == system
    assert "nodeSelector" not in v["prometheus-node-exporter"]  # a DaemonSet on every node, GPU nodes included
    p = v["prometheus"]["prometheusSpec"]
    assert p["retention"] == "7d" and p["retentionSize"] == "4GB"
    assert p["storageSpec"] == {"emptyDir": {"sizeLimit": "5Gi"}}
    for res in (p["resources"], v["grafana"]["resources"], v["prometheusOperator"]["resources"]):
        assert res["requests"]["cpu"] and res["requests"]["memory"] and res["limits"]["memory"]


def test_storage_gib_makes_a_claim():
    p = prometheus_stack.helm_values(load_spec(_with("dev-aws", prometheusStorageGib=100)))["prometheus"][
        "prometheusSpec"
    ]
    claim = p["storageSpec"]["volumeClaimTemplate"]["spec"]
    assert claim["resources"]["requests"]["storage"] == "100Gi"


def test_node_exporter_alone_is_privileged():
    r = rendered("dev-aws")
    ns = manifest(r, "Namespace", "monitoring")["metadata"]["labels"]
    assert ns["pod-security.kubernetes.io/enforce"] == "baseline"
    ne = manifest(r, "Namespace", versions.NODE_EXPORTER_NAMESPACE)["metadata"]["labels"]
    assert ne["pod-security.kubernetes.io/enforce"] == "privileged"
    assert _values(r)["prometheus-node-exporter"]["namespaceOverride"] == versions.NODE_EXPORTER_NAMESPACE


def test_node_exporter_really_needs_host_access():
    """Why privileged: the sub-chart's defaults use host network, host PID and the host root filesystem."""
    ne = yaml.safe_load((KPS / "prometheus-node-exporter" / "values.yaml").read_text())
    assert ne["hostNetwork"] is True and ne["hostPID"] is True
    assert ne["hostRootFsMount"]["enabled"] is True


@pytest.mark.parametrize("stack", ["dev-aws", "dev-gcp", "local"])
def test_unreachable_control_plane_scrapes_are_off(stack):
    v = _values(rendered(stack))
    for k in ("kubeControllerManager", "kubeScheduler", "kubeEtcd", "kubeProxy"):
        assert v[k] == {"enabled": False}, k
    if stack == "dev-gcp":
        assert v["coreDns"] == {"enabled": False} and v["kubeDns"] == {"enabled": True}
    else:
        assert "coreDns" not in v


# --------------------------------------------------------------------------------- existing / none


def test_existing_installs_nothing_and_keeps_the_objects(existing):
    assert not [x for x in existing.of_type(HELM_RELEASE) if x.name == "kube-prometheus-stack"]
    assert {m["metadata"]["name"] for m in manifests(existing, "Namespace")}.isdisjoint(
        {"monitoring", versions.NODE_EXPORTER_NAMESPACE}
    )
    assert existing.find(SERVICE_MONITOR, "gpu-platform-dcgm-exporter")
    assert existing.find(PROMETHEUS_RULE, "gpu-platform-gpu-alerts")
    assert "existing prometheus-operator" in summary(existing, {})


def test_none_has_no_monitoring_objects_and_says_alerts_are_off(none):
    assert not none.of_type(SERVICE_MONITOR) and not none.of_type(PROMETHEUS_RULE)
    assert not [m for m in manifests(none, "ConfigMap") if m["metadata"]["name"] == "gpu-platform-gpu-dashboard"]
    assert not [x for x in none.of_type(HELM_RELEASE) if x.name == "kube-prometheus-stack"]
    text = summary(none, {})
    assert "GPU alerts are off" in text.split("## Warnings", 1)[1]
    assert [x for x in none.of_type(NAMESPACE) if x.name == "namespace-monitoring"] == []


# -------------------------------------------------------------------------------------------- rules


def _problems(cfg):
    with pytest.raises(SpecError) as err:
        load_spec(cfg)
    return {p.path: p.message for p in err.value.problems}


def test_a_release_label_other_than_the_release_is_an_error():
    probs = _problems(_with("dev-aws", serviceMonitorLabels={"release": "prometheus"}))
    assert "kube-prometheus-stack" in probs["gpu-platform:monitoring.serviceMonitorLabels.release"]
    # with an existing Prometheus any label is the user's business
    load_spec(_with("dev-aws", prometheus="existing", serviceMonitorLabels={"release": "prometheus"}))


def test_storage_without_install_and_empty_labels_are_errors():
    probs = _problems(_with("dev-aws", prometheus="none", prometheusStorageGib=50))
    assert "gpu-platform:monitoring.prometheusStorageGib" in probs
    probs = _problems(_with("dev-aws", serviceMonitorLabels={}, dashboardLabels={}))
    assert "gpu-platform:monitoring.serviceMonitorLabels" in probs
    assert "gpu-platform:monitoring.dashboardLabels" in probs


def test_dashboard_label_is_the_first_of_dashboard_labels():
    spec = load_spec(_with("dev-aws", dashboardLabels={"b": "2", "a": "1"}))
    assert prometheus_stack.dashboard_label(spec) == ("a", "1")


def test_prometheus_rule_webhook_keeps_failure_policy_ignore():
    """With the certificate patch Job on and no failurePolicy set, the chart renders the PrometheusRule webhook
    with failurePolicy Ignore (kube-prometheus-stack 88.5.3 validatingWebhookConfiguration.yaml), so our rule
    needs no readiness gate. Keep it that way."""
    upstream = yaml.safe_load((KPS / "values.yaml").read_text())["prometheusOperator"]["admissionWebhooks"]
    assert upstream["failurePolicy"] == "" and upstream["patch"]["enabled"] is True
    ours = _values(rendered("dev-aws"))["prometheusOperator"]["admissionWebhooks"]
    assert "failurePolicy" not in ours and "enabled" not in ours.get("patch", {})


def test_monitoring_rule_messages_name_the_fix():
    """Each monitoring rule says what is wrong and what to do, at the key to change."""
    probs = _problems(_with("dev-aws", prometheus="none", prometheusStorageGib=50))
    assert probs == {
        "gpu-platform:monitoring.prometheusStorageGib": "only used with monitoring.prometheus: install (it is none)"
    }
    probs = _problems(_with("dev-aws", serviceMonitorLabels={}, dashboardLabels={}))
    assert probs == {
        "gpu-platform:monitoring.serviceMonitorLabels": (
            "empty: the installed Prometheus would select every ServiceMonitor and rule in the cluster"
        ),
        "gpu-platform:monitoring.dashboardLabels": "empty: the Grafana sidecar needs a label to watch",
    }
    probs = _problems(_with("dev-aws", serviceMonitorLabels={"release": "prometheus"}))
    assert probs == {
        "gpu-platform:monitoring.serviceMonitorLabels.release": (
            "the installed kube-prometheus-stack labels its own ServiceMonitors and rules "
            "release=kube-prometheus-stack; a Prometheus selecting release=prometheus would not scrape the "
            "cluster: drop the key or use that value"
        )
    }
    load_spec(_with("dev-aws", serviceMonitorLabels={"release": "kube-prometheus-stack", "team": "ml"}))


def test_resources_request_cpu_and_memory_and_limit_memory_only():
    """Sized for a few hundred GPUs; memory limits (an OOM kill is contained), no CPU limits (throttling a
    scraper loses samples)."""
    v = prometheus_stack.helm_values(load_spec(stack_config("dev-aws")))

    def res(cpu, memory, limit):
        return {"requests": {"cpu": cpu, "memory": memory}, "limits": {"memory": limit}}

    assert v["prometheus"]["prometheusSpec"]["resources"] == res("500m", "2Gi", "4Gi")
    assert v["prometheusOperator"]["resources"] == res("100m", "128Mi", "512Mi")
    assert v["alertmanager"]["alertmanagerSpec"]["resources"] == res("50m", "128Mi", "256Mi")
    assert v["grafana"]["resources"] == res("100m", "256Mi", "512Mi")
    assert v["kube-state-metrics"]["resources"] == res("50m", "128Mi", "512Mi")
    assert v["prometheus-node-exporter"]["resources"] == res("50m", "64Mi", "128Mi")
    assert v["prometheus"]["prometheusSpec"]["walCompression"] is True
    assert v["crds"] == {"enabled": True}


def test_a_storage_claim_is_one_read_write_once_volume():
    """prometheusStorageGib 100: one ReadWriteOnce claim of 100Gi from the default StorageClass."""
    p = prometheus_stack.helm_values(load_spec(_with("dev-aws", prometheusStorageGib=100)))["prometheus"][
        "prometheusSpec"
    ]
    assert p["storageSpec"] == {
        "volumeClaimTemplate": {
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "100Gi"}}}
        }
    }


def test_every_selector_is_ours_and_cluster_wide():
    """Prometheus selects ServiceMonitors, rules, PodMonitors, Probes and ScrapeConfigs by our labels only
    (never the chart's release default) in every namespace; the chart's own monitors get our extra labels."""
    v = prometheus_stack.helm_values(load_spec(_with("dev-aws", serviceMonitorLabels={"team": "ml"})))
    p = v["prometheus"]["prometheusSpec"]
    for kind in ("serviceMonitor", "rule", "podMonitor", "probe", "scrapeConfig"):
        assert p[f"{kind}SelectorNilUsesHelmValues"] is False, kind
        assert p[f"{kind}Selector"] == {"matchLabels": {"team": "ml"}}, kind
    assert p["serviceMonitorNamespaceSelector"] == {} and p["ruleNamespaceSelector"] == {}
    assert v["commonLabels"] == {"team": "ml"}
    for sub in ("kube-state-metrics", "prometheus-node-exporter"):
        assert v[sub]["prometheus"]["monitor"]["additionalLabels"] == {"team": "ml"}
    # the chart's own objects carry release=<release> already: only the other labels are added
    both = {"release": "kube-prometheus-stack", "team": "ml"}
    v = prometheus_stack.helm_values(load_spec(_with("dev-aws", serviceMonitorLabels=both)))
    assert v["commonLabels"] == {"team": "ml"}
    assert v["prometheus"]["prometheusSpec"]["ruleSelector"] == {"matchLabels": both}


def test_grafana_sidecar_finds_our_dashboard_and_its_folder():
    """The sidecar searches every namespace (the dashboard sits in the exporter's) and files dashboards by the
    annotation our ConfigMap carries."""
    from components.render import monitoring

    spec = load_spec(stack_config("dev-aws"))
    side = prometheus_stack.helm_values(spec)["grafana"]["sidecar"]["dashboards"]
    assert side["enabled"] is True and side["searchNamespace"] == "ALL"
    assert side["provider"] == {"foldersFromFilesStructure": True}
    assert side["folderAnnotation"] in monitoring.dashboard_configmap(monitoring_of(spec))["metadata"]["annotations"]


def test_the_node_exporter_namespace_is_marked_as_an_operator_namespace():
    """The policy pack allows a privileged namespace only where the platform marks it as an operator one
    (policies/common.py reads the same label); the stack's own namespace is baseline and unmarked."""
    from policies import common

    r = rendered("dev-aws")
    ne = manifest(r, "Namespace", versions.NODE_EXPORTER_NAMESPACE)["metadata"]["labels"]
    assert ne[prometheus_stack.OPERATOR_NAMESPACE_LABEL] == "true"
    assert prometheus_stack.OPERATOR_NAMESPACE_LABEL == common.OPERATOR_NAMESPACE_LABEL
    assert ne["pod-security.kubernetes.io/audit"] == ne["pod-security.kubernetes.io/warn"] == "privileged"
    mon = manifest(r, "Namespace", "monitoring")["metadata"]["labels"]
    assert prometheus_stack.OPERATOR_NAMESPACE_LABEL not in mon
    assert mon["pod-security.kubernetes.io/warn"] == "restricted"


def test_the_operators_webhooks_stay_fail_open_so_one_replica_is_enough():
    """Admission webhooks that fail closed need two replicas and a disruption budget (Kueue's and Volcano's have
    them); the prometheus-operator's only guard PrometheusRule and AlertmanagerConfig writes, and with the values
    the platform gives (no failurePolicy, the patch job on) the chart renders them failurePolicy: Ignore
    (templates/prometheus-operator/admission-webhooks/validatingWebhookConfiguration.yaml), so its single
    operator replica blocks no write when it is down."""
    import tarfile

    from conftest import ROOT

    name = "kube-prometheus-stack/templates/prometheus-operator/admission-webhooks/validatingWebhookConfiguration.yaml"
    with tarfile.open(ROOT / "upstream" / "charts" / "kube-prometheus-stack-88.5.3.tgz") as tar:
        template = tar.extractfile(name).read().decode()
    assert (
        "{{- else if .Values.prometheusOperator.admissionWebhooks.patch.enabled }}\n    failurePolicy: Ignore"
        in template
    )
    upstream = yaml.safe_load((UPSTREAM / "kube-prometheus-stack" / "values.yaml").read_text())
    assert upstream["prometheusOperator"]["admissionWebhooks"]["failurePolicy"] == ""
    assert upstream["prometheusOperator"]["admissionWebhooks"]["patch"]["enabled"] is True
    hooks = release(rendered("local"), "kube-prometheus-stack")["values"]["prometheusOperator"]["admissionWebhooks"]
    assert "failurePolicy" not in hooks and hooks.get("patch", {}).get("enabled", True) is True
