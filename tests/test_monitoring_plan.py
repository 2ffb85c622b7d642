"""GPU monitoring's plan (components/plan/monitoring.py ``MonitoringPlan``, ``Plan.monitoring``): where the DCGM
exporter runs, whether anything scrapes it, the scrape interval and labels, the alert thresholds and the idle
prices per pool, against values known apart from the code; and the rendered objects being the plan's."""

from __future__ import annotations

import copy
import json

import pytest
from conftest import manifest, monitoring_of, rendered, stack_config

from components.cli.loader import load_spec
from components.plan import plan
from components.render import monitoring


def _monitoring(stack: str, **extra):
    cfg = copy.deepcopy(stack_config(stack))
    cfg.update({f"gpu-platform:{k}": v for k, v in extra.items()})
    return plan.build(load_spec(cfg), stack).monitoring


def _standalone() -> dict:
    """dev-aws without the GPU Operator (Bottlerocket nodes bring the device plugin, no sharing)."""
    cfg = copy.deepcopy(stack_config("dev-aws"))
    cfg["gpu-platform:addons"] = {"gpuOperator": False, "dcgm": True}
    cfg["gpu-platform:nodePools"][0].pop("sharing")
    for pool in cfg["gpu-platform:nodePools"]:
        pool["os"] = "bottlerocket"
    cfg["gpu-platform:tenants"][0]["gpuQuota"] = {"l4-shared": 4, "a10g-spot": 8}
    return cfg


def test_no_monitoring_plan_without_dcgm():
    assert _monitoring("dev-aws", addons={"gpuOperator": True, "dcgm": False, "kueue": True}) is None


def test_the_operators_exporter_is_scraped_in_the_operator_namespace():
    """gpu-operator v26.7.0 assets/state-dcgm-exporter/0600_service.yaml: Service nvidia-dcgm-exporter, port
    gpu-metrics, selector app=nvidia-dcgm-exporter."""
    m = _monitoring("dev-aws")
    ex = m.exporter
    assert (ex.source, ex.namespace, dict(ex.selector), ex.port, ex.job) == (
        "operator",
        "gpu-operator",
        {"app": "nvidia-dcgm-exporter"},
        "gpu-metrics",
        "nvidia-dcgm-exporter",
    )
    assert m.prometheus == "install" and m.dashboard_namespace == "gpu-operator"
    assert dict(m.labels) == {"app.kubernetes.io/managed-by": "gpu-platform", "release": "kube-prometheus-stack"}
    assert dict(m.dashboard_labels) == {"app.kubernetes.io/managed-by": "gpu-platform", "grafana_dashboard": "1"}


def test_the_standalone_exporter_is_the_charts_release_and_its_values_are_the_addons():
    p = plan.build(load_spec(_standalone()), "test")
    ex = p.monitoring.exporter
    assert (ex.source, ex.namespace, ex.port, ex.job) == ("standalone", "gpu-monitoring", "metrics", "dcgm-exporter")
    assert dict(ex.selector) == {
        "app.kubernetes.io/name": "dcgm-exporter",
        "app.kubernetes.io/instance": "dcgm-exporter",
    }
    values = p.addons["dcgmExporter"].values
    assert dict(values["nodeSelector"]) == {"nvidia.com/gpu.present": "true"}
    assert dict(values["serviceMonitor"]) == {"enabled": False}


@pytest.mark.parametrize(
    ("interval", "canonical", "timeout"), [("30s", "30s", "10s"), ("90s", "1m30s", "10s"), ("5s", "5s", "5s")]
)
def test_scrape_interval_is_canonical_and_the_timeout_never_exceeds_it(interval, canonical, timeout):
    cfg_monitoring = {"scrapeInterval": interval}
    m = _monitoring("dev-aws", monitoring=cfg_monitoring)
    assert (m.scrape_interval, m.scrape_timeout) == (canonical, timeout)


def test_stack_thresholds_and_a_dashboard_namespace_reach_the_plan():
    m = _monitoring(
        "dev-aws",
        monitoring={
            "dashboardNamespace": "grafana",
            "prometheus": "existing",
            "alerts": {"idleUtilizationPercent": 5, "idleFor": "90m", "xidCriticalCodes": [79, 48, 79]},
        },
    )
    assert (m.prometheus, m.dashboard_namespace) == ("existing", "grafana")
    assert (m.alerts.idle_utilization_percent, m.alerts.idle_for) == (5, "90m")
    assert m.alerts.xid_critical_codes == (48, 79)  # sorted, each once


def test_idle_prices_per_device_kind():
    """prod-aws: H100 MIG pool (p5.48xlarge on demand, $55.04 per node-hour for 8 GPUs: $6.88 per GPU-hour) priced
    by compute slices of 7 per profile; L4 time-sliced x4 (g6.12xlarge, $4.6016 for 4 GPUs): a pod's series is
    a quarter of the GPU."""
    idle = _monitoring("prod-aws").idle_cost
    mig = {t.profile: t for t in idle["h100-inference"]}
    assert set(mig) == {"1g.10gb", "2g.20gb", "3g.40gb"}
    for profile, slices in (("1g.10gb", 1), ("2g.20gb", 2), ("3g.40gb", 3)):
        assert mig[profile].device_price == pytest.approx(6.88 * slices / 7)
        assert (mig[profile].replicas, mig[profile].unit_price) == (0, mig[profile].device_price)
    ((l4,),) = [idle["l4-notebooks"]]
    assert (l4.profile, l4.replicas) == (None, 4)
    assert l4.device_price == pytest.approx(4.6016 / 4) and l4.unit_price == pytest.approx(4.6016 / 16)
    assert list(idle) == sorted(idle)


def test_a_cluster_without_list_prices_has_no_idle_prices():
    assert dict(_monitoring("local").idle_cost) == {}


@pytest.mark.parametrize("stack", ["prod-aws", "dev-gcp"])
def test_the_rendered_monitoring_objects_are_the_plans(stack):
    r = rendered(stack)
    m = plan.build(r.spec, stack).monitoring
    ns = m.exporter.namespace
    sm = manifest(r, "ServiceMonitor", monitoring.SERVICE_MONITOR_NAME, ns)
    assert sm["metadata"]["labels"] == dict(m.labels)
    (ep,) = sm["spec"]["endpoints"]
    assert (ep["port"], ep["interval"], ep["scrapeTimeout"]) == (m.exporter.port, m.scrape_interval, m.scrape_timeout)
    rule = manifest(r, "PrometheusRule", monitoring.RULE_NAME, ns)
    cost = next(g for g in rule["spec"]["groups"] if g["name"] == monitoring.COST_GROUP)
    assert {x["labels"]["pool"] for x in cost["rules"]} == set(m.idle_cost)
    board = manifest(r, "ConfigMap", monitoring.DASHBOARD_NAME, m.dashboard_namespace)
    assert board["metadata"]["labels"] == dict(m.dashboard_labels)
    assert json.loads(board["data"][monitoring.DASHBOARD_FILE])["uid"] == "gpu-platform-gpus"


def test_the_objects_from_the_spec_and_from_the_plan_agree():
    """Callers still holding the spec (outputs, summary) get the same objects as the component, which reads the
    plan."""
    spec = load_spec(stack_config("prod-gcp"))
    m = plan.build(spec, "prod-gcp").monitoring
    assert monitoring.prometheus_rule(monitoring_of(spec)) == monitoring.prometheus_rule(monitoring_of(m))
    assert monitoring.service_monitor(monitoring_of(spec)) == monitoring.service_monitor(monitoring_of(m))
    assert monitoring.dashboard_configmap(monitoring_of(spec)) == monitoring.dashboard_configmap(monitoring_of(m))


def test_the_plan_text_says_where_the_exporter_runs_and_whether_anything_scrapes_it():
    from components.cli import main as cli

    text = "\n".join(cli.plan_text(plan.build(load_spec(stack_config("prod-aws")), "prod-aws")))
    assert "DCGM exporter: operator, Service nvidia-dcgm-exporter:gpu-metrics in gpu-operator" in text
    assert "idle < 10% for 30m" in text and "l4-notebooks" in text.split("idle spend priced for:")[1]
    cfg = copy.deepcopy(stack_config("dev-aws"))
    cfg["gpu-platform:monitoring"] = {"prometheus": "none"}
    text = "\n".join(cli.plan_text(plan.build(load_spec(cfg), "dev-aws")))
    assert "not scraped (prometheus none)" in text and "alerts:" not in text
    cfg["gpu-platform:addons"] = {"gpuOperator": True, "dcgm": False, "kueue": True}
    assert "Monitoring" not in cli.plan_text(plan.build(load_spec(cfg), "dev-aws"))
