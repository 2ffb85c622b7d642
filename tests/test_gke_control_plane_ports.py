"""A private GKE cluster's control plane and the add-ons' webhooks (issue 40.1).

GKE's documented behaviour for clusters with private nodes ("Adding firewall rules for specific use cases", GKE
private clusters / network isolation docs): the rule GKE creates, ``gke-<cluster>-<hash>-master``, admits only
TCP 443 and 10250 from the control plane's range (``privateClusterConfig.masterIpv4CidrBlock``) to the nodes; a
webhook on any other port needs a rule of its own "with the control plane's range as source, the nodes as target".
A created cluster is private, so it must carry that rule for exactly the ports of the webhooks and aggregated APIs
the stack installs; a found or referenced one with private nodes gets a warning naming them.

The ports expected here are read from the pinned chart archives in ``upstream/charts/`` (each by the route its
templates take, written out per chart below), never from ``versions.CONTROL_PLANE_PORTS``.
"""

from __future__ import annotations

import re
import tarfile
from functools import cache
from typing import Any

import pytest
import yaml
from conftest import ROOT, UPSTREAM, render_config, stack_config

from components.cli.loader import load_spec
from components.data import versions
from components.plan import plan as plan_mod
from components.render.gcp import cluster as gke_cluster

FIREWALL = "gcp:compute/firewall:Firewall"
GKE_OPEN = {443, 10250}  # the documented ports of GKE's own control-plane rule


@cache
def chart_files(key: str) -> dict[str, str]:
    """Every text file of the pinned archive of ``key``, by its path under the chart's folder."""
    chart = versions.CHARTS[key]
    path = UPSTREAM / "charts" / f"{chart.name}-{chart.version}.tgz"
    out = {}
    with tarfile.open(path, "r:gz") as tar:
        for m in tar.getmembers():
            if m.isfile():
                out[m.name.split("/", 1)[1]] = tar.extractfile(m).read().decode("utf-8", "replace")
    return out


def values(key: str) -> dict[str, Any]:
    return yaml.safe_load(chart_files(key)["values.yaml"])


def named_container_port(text: str, name: str) -> int:
    """The containerPort of the port named ``name`` in a Deployment template (either order of the two keys)."""
    m = re.search(rf"containerPort:\s*(\d+)\s*\n\s*name:\s*{name}\b", text) or re.search(
        rf"name:\s*{name}\s*\n\s*containerPort:\s*(\d+)", text
    )
    assert m, f"no containerPort named {name}"
    return int(m.group(1))


def archive_ports(key: str) -> set[int]:
    """The ports on the chart's pods its webhook and APIService Services target, read from the archive."""
    f = chart_files(key)
    if key == "kueue":
        # webhook Service: values webhookService.ports targetPort webhook-server -> the manager's containerPort;
        # the visibility APIService's Service targets 8082 literally
        (port,) = values(key)["webhookService"]["ports"]
        webhook = int(port["targetPort"])
        assert webhook == named_container_port(f["templates/manager/manager.yaml"], "webhook-server")
        visibility = re.search(r"targetPort:\s*(\d+)", f["templates/visibility/service.yaml"])
        return {webhook, int(visibility.group(1))}
    if key == "volcano":
        assert "targetPort: {{.Values.basic.admission_port}}" in f["templates/admission.yaml"]
        return {int(values(key)["basic"]["admission_port"])}
    if key == "jobset":
        assert "targetPort: webhook" in f["templates/webhook/service.yaml"]
        return {named_container_port(f["templates/controller/deployment.yaml"], "webhook")}
    if key == "leaderWorkerSet":
        return {int(re.search(r"targetPort:\s*(\d+)", f["templates/webhook/service.yaml"]).group(1))}
    if key == "trainer":
        assert "targetPort: webhook" in f["templates/manager/service.yaml"]
        return {named_container_port(f["templates/manager/deployment.yaml"], "webhook")}
    if key == "kubePrometheusStack":
        # the operator serves its admission webhooks on its own TLS port (the operator Service's https targetPort)
        return {int(values(key)["prometheusOperator"]["tls"]["internalPort"])}
    raise AssertionError(f"{key}: no route to its webhook ports written here")


_DIALLED = re.compile(r"^kind:\s*(ValidatingWebhookConfiguration|MutatingWebhookConfiguration|APIService)\s*$", re.M)


def dialled_by_the_api_server(key: str) -> bool:
    """The chart's own templates (not a bundled sub-chart) register a webhook or an aggregated API."""
    return any(_DIALLED.search(text) for path, text in chart_files(key).items() if path.startswith("templates/"))


# ------------------------------------------------------------------------------------------ the data


def test_the_charts_with_webhooks_are_exactly_those_with_ports():
    # a chart upstream/ holds no archive of (versions.NOT_BUNDLED: Spegel, a registry mirror DaemonSet) cannot be
    # read here; it must not claim ports it cannot show
    bundled = [k for k in versions.CHARTS if k not in versions.NOT_BUNDLED]
    with_webhooks = {k for k in bundled if dialled_by_the_api_server(k)}
    assert with_webhooks == set(versions.CONTROL_PLANE_PORTS)


@pytest.mark.parametrize("key", sorted(versions.CONTROL_PLANE_PORTS))
def test_each_charts_ports_are_its_archives(key):
    assert set(versions.CONTROL_PLANE_PORTS[key]) == archive_ports(key)


def test_the_ports_the_issue_names():
    """Issue 40: 9443 (Kueue, JobSet, LWS, Trainer) and 8443 (Volcano), read from the archives."""
    for key in ("kueue", "jobset", "leaderWorkerSet", "trainer"):
        assert 9443 in archive_ports(key)
    assert archive_ports("volcano") == {8443}


# ------------------------------------------------------------------------------------------ the plan

EVERYTHING = {"kueue": True, "volcano": True, "jobset": True, "leaderWorkerSet": True, "trainer": True}


def created(addons: dict[str, bool] | None = None, prometheus: str = "install") -> dict[str, Any]:
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:cluster"]["create"] = {"gke": {"authorizedNetworks": [{"cidr": "198.51.100.0/24"}]}}
    cfg["gpu-platform:addons"] = {**cfg["gpu-platform:addons"], **(addons or {})}
    cfg["gpu-platform:monitoring"] = {"prometheus": prometheus}
    if addons and addons.get("volcano"):
        cfg["gpu-platform:tenants"].append({"name": "batch", "gpuQuota": {"t4-spot": 2}, "scheduler": "volcano"})
        cfg["gpu-platform:tenants"][0]["gpuQuota"] = {"l4-shared": 4}
    return cfg


def expected_ports(cfg: dict[str, Any]) -> tuple[int, ...]:
    """The enabled charts' archive ports, less the two GKE opens."""
    addons = cfg["gpu-platform:addons"]
    on = [k for k in ("kueue", "volcano", "jobset", "leaderWorkerSet", "trainer") if addons.get(k)]
    if cfg["gpu-platform:monitoring"]["prometheus"] == "install":
        on.append("kubePrometheusStack")
    return tuple(sorted(set().union(*(archive_ports(k) for k in on)) - GKE_OPEN))


@pytest.mark.parametrize(
    "addons",
    [{}, {"kueue": False}, {"kueue": False, "volcano": True}, EVERYTHING],
    ids=["kueue", "nothing", "volcano", "everything"],
)
def test_the_plan_opens_exactly_the_enabled_charts_ports(addons):
    cfg = created(addons)
    plan = plan_mod.build(load_spec(cfg), "t")
    assert plan.gke.cluster.control_plane_ports == expected_ports(cfg)
    assert plan.gke_create.control_plane_ports == expected_ports(cfg)


def test_kueue_needs_its_webhook_and_its_visibility_api():
    assert plan_mod.build(load_spec(created()), "t").gke_create.control_plane_ports == (8082, 9443)


def test_no_port_to_open_no_rule():
    cfg = created({"kueue": False})
    plan = plan_mod.build(load_spec(cfg), "t")
    assert plan.gke_create.control_plane_firewall is None and plan.gke_create.control_plane_ports == ()
    assert render_config(cfg, "t").of_type(FIREWALL) == []


# ------------------------------------------------------------------------------------------ the resources


def test_the_created_cluster_opens_the_webhook_ports_from_its_control_plane():
    r = render_config(created(EVERYTHING), "t")
    fw = r.find(FIREWALL, "gke-master-webhooks").inputs
    cluster = r.find("gcp:container/cluster:Cluster", "gke-cluster").inputs
    assert fw["name"] == "ml-dev-master-webhooks" and fw["direction"] == "INGRESS"
    assert fw["network"] == cluster["network"]
    # from the control plane's range only (privateClusterConfig.masterIpv4CidrBlock) ...
    assert fw["sourceRanges"] == [cluster["privateClusterConfig"]["masterIpv4CidrBlock"]]
    # ... to the system nodes, where the controllers run (their node pool's service account) ...
    system = r.find("gcp:container/nodePool:NodePool", "gke-system").inputs
    assert fw["targetServiceAccounts"] == [system["nodeConfig"]["serviceAccount"]]
    # ... on TCP, exactly the ports of the webhooks the stack installs
    assert fw["allows"] == [{"protocol": "tcp", "ports": ["8082", "8443", "9443"]}]


def test_the_plan_text_names_the_rule_and_ports():
    from components.plan.gcp import cluster_create

    text = "\n".join(cluster_create.text(plan_mod.build(load_spec(created()), "t").gke_create))
    assert "firewall ml-dev-master-webhooks: control plane 172.16.0.32/28 -> system nodes on tcp 8082, 9443" in text


# ------------------------------------------------------------------------------------ found and referenced


def found_plan(addons: dict[str, bool] | None = None):
    cfg = stack_config("dev-gcp")
    cfg["gpu-platform:addons"] = {**cfg["gpu-platform:addons"], **(addons or {})}
    return plan_mod.build(load_spec(cfg), "dev-gcp")


def test_a_found_cluster_registers_no_rule_and_its_plan_says_why():
    from components.plan.gcp import plan as gcp_plan

    plan = found_plan()
    assert plan.gke.cluster.control_plane_ports == (8082, 9443) and plan.gke.created_firewall is None
    line = next(x for x in gcp_plan.text(plan.gke) if "control plane ->" in x)
    assert "tcp 8082, 9443" in line and "firewall rule" in line
    assert render_config(stack_config("dev-gcp"), "dev-gcp").of_type(FIREWALL) == []


def test_a_found_cluster_with_private_nodes_is_warned_of_the_ports():
    cluster = found_plan().gke.cluster
    private = [{"enablePrivateNodes": True, "masterIpv4CidrBlock": "172.16.0.16/28"}]
    warning = gke_cluster.ports_warning(cluster, private)
    assert "--source-ranges=172.16.0.16/28" in warning and "--allow=tcp:8082,tcp:9443" in warning
    assert "only on tcp 443 and 10250" in warning
    assert gke_cluster.ports_warning(cluster, [{"enablePrivateNodes": False}]) is None  # public nodes: reachable
    assert gke_cluster.ports_warning(cluster, []) is None


def test_the_warning_reaches_the_deploy(monkeypatch, tap_mocks):
    import pulumi

    warned: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda msg, *a, **k: warned.append(msg))
    tap_mocks.answers["gcp:container/getCluster:getCluster"] = {
        "privateClusterConfigs": [{"enablePrivateNodes": True, "masterIpv4CidrBlock": "172.16.0.16/28"}]
    }
    render_config(stack_config("dev-gcp"), "dev-gcp")
    assert any("tcp:8082,tcp:9443" in w for w in warned), warned


def test_the_docs_say_it():
    text = " ".join((ROOT / "docs" / "concepts" / "gcp.md").read_text().split())
    assert "443 and 10250" in text and "master-webhooks" in text
