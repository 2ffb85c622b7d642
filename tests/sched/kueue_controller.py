"""The real Kueue controller manager (v0.19.2, built by scripts/sched-bins.sh) beside a test control plane, run
out of cluster with the stack's own rendered configuration, its webhooks served and called for real.

What is installed comes from the pinned chart (``upstream/charts/kueue-<version>.tgz``) rendered by ``helm template``
with the values the synth recorded for the stack's ``kueue`` release, as the kubernetes provider would install it:
the CRDs (with their conversion webhooks), the webhook configurations (mutating and validating, with the
``managedJobsNamespaceSelector`` of the stack's configuration), the webhook Service, the internal-cert Secret, and
the manager configuration the controller is started with. Kueue's own certificate management issues the serving
certificate for ``kueue-webhook-service.kueue-system.svc`` and injects its CA into those configurations and CRDs,
as in a cluster; the API server resolves the Service to its cluster IP, which is on loopback here.

Where the real engine installs the chart instead (tests/sched/deployed.py, the day-2 tests), ``adopt_release`` reads
what the release installed (the manager ConfigMap, the webhook Service with the cluster IP the server gave it, the
webhook configurations and CRDs) and adapts those, then starts the manager the same way.

What differs from an in-cluster install, and why, is ``ADAPTATIONS``: the one list (``docs/development.md`` prints
it). Nothing else of the chart or of the configuration is changed.
"""

from __future__ import annotations

import base64
import contextlib
import json
import random
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import yaml
from controlplane import ControlPlane, ControlPlaneError

from components.data import versions
from components.explain.rendering import Rendering

ROOT = Path(__file__).resolve().parents[2]
BIN_ENV = "GPU_PLATFORM_SCHED_BIN"
NAMESPACE = "kueue-system"
RELEASE = "kueue"
WEBHOOK_SERVICE = f"{RELEASE}-webhook-service"
CONFIG_MAP = f"{RELEASE}-manager-config"
CONFIG_KEY = "controller_manager_config.yaml"
CERT_SECRET = f"{RELEASE}-webhook-server-cert"

# The one list of what the scheduler tests change against an in-cluster install (issue 38.1), with the reason.
ADAPTATIONS: dict[str, str] = {
    "out of cluster": "the controller manager runs as a process with the test server's admin kubeconfig, not as the "
    "chart's Deployment under its ServiceAccount and RBAC: there is no kubelet to run its pod. One replica, so "
    "leader election is off (leaderElection.leaderElect: false).",
    "serving addresses": "the manager's health probe and metrics listen on free 127.0.0.1 ports (the chart's :8081 "
    "and :8443 on every interface of a pod), and its webhook server on the webhook Service's cluster IP, a loopback "
    "address of the test server's service range, on a free port.",
    "webhook Service port": "the chart's Service maps port 443 to the pod's 9443 through kube-proxy, which does not "
    "run here: the API server dials the Service's cluster IP at the port the webhook configuration names, so the "
    "Service's port, its targetPort and the configurations' clientConfig.service.port are the manager's webhook "
    "port. Service name, namespace and paths are the chart's.",
    "certificate directory": "webhook.certDir is the run's temporary directory (the default is a fixed path under "
    "/tmp, which two runs would share); Kueue's internal certificate management is on, as the chart configures it.",
    "certificate volume": "the kubelet mounts the Secret kueue-webhook-server-cert (which Kueue's certificate rotator "
    "fills) into the manager's pod at webhook.certDir; here the harness writes the Secret's keys into that directory "
    "whenever they change, as the volume would.",
    "visibility API": "the VisibilityOnDemand feature gate is off: its aggregated API server would serve on a fixed "
    "port of every interface and write certificates outside the run's directory, and nothing here reads it (the "
    "chart's APIService is not applied; where the engine installs the chart, its two APIServices are deleted once "
    "installed: an aggregated API nobody answers stops every namespace from terminating, "
    "tests/engine/test_real_engine_charts.py).",
    "chart Deployment": "where the engine installs the chart (tests/sched/deployed.py), its Deployment is scaled to 0 "
    "once Helm has recorded the release: kwok would run its two pods, which serve nothing; the out-of-cluster manager "
    "is the one replica. Helm's record of the release is unchanged, so a later upgrade of the release would restore "
    "the chart's Service port, webhook ports, replicas and APIServices (no change here upgrades it).",
    "webhook gate": "kwok runs no container: the harness plays the kubelet of the platform's webhook gate pods "
    "(components/render/webhooks.py), running their one command, kubectl create --dry-run=server of the probe "
    "ConfigMap's object as the probe's ServiceAccount, and setting the pod Succeeded or Failed by its exit (the Job "
    "controller retries a failed one, as in a cluster).",
    "ProvisioningRequests": "no Cluster Autoscaler or GKE autoscaler runs here: the harness marks each "
    "ProvisioningRequest Kueue creates Accepted and Provisioned at once, as the autoscaler would after scaling up "
    "(every pool's nodes exist at its maximum size); whether the pods then fit is kube-scheduler's verdict.",
    "DRA": "the NVIDIA DRA driver's kubelet plugin does not run: for each node of a DRA pool the harness publishes the "
    "ResourceSlice it would (a device per GPU or MIG slice, with the attributes the stack's claim templates select "
    "on) and makes the DeviceClasses the GPU Operator's GPUCluster would (upstream/dra-driver-nvidia-gpu).",
    "volumes": "no CSI driver runs: the harness makes a PersistentVolume for every Pending claim, as the claim's "
    "driver would provision one.",
    "nodes": "kwok plays every node's kubelet; a pool's nodes exist at its maximum size from the start, labelled, "
    "tainted and advertising what the plan says the cloud and the device plugin give them (tests/cluster/nodes.py).",
    "nodes after a change": "after a stack change (tests/sched/test_day2_under_load.py) the harness relabels the nodes "
    "and sets their allocatable to what the new plan says: what the operator does on an existing cluster when a pool "
    "is renamed (docs/concepts/existing.md: the nodes carry gpu-platform/pool=<pool>), and what the GPU Operator's "
    "device plugin advertises after a sharing change once restarted (docs/concepts/sharing.md). The nodes keep their "
    "names, so pods bound to them stay.",
    "fleet credential": "the fleet test (tests/sched/test_fleet_multikueue.py) puts each worker's exported kubeconfig "
    "into the manager's Secret, as the StackReference would (the synth shows it as [secret]); the kubeconfig is "
    "components/render/fleet.py kubeconfig_text of the worker's real token Secret (its rendered ServiceAccount, bound "
    "to its rendered ClusterRole), with the worker's loopback API server as endpoint (on a cloud: the cluster's). The "
    "token Secret's ca.crt comes from the kube-controller-manager's --root-ca-file, which those control planes get: "
    "the API server's self-generated serving chain (--cert-dir), as kubeadm passes the cluster CA; without it ca.crt "
    "is empty, and Kueue refuses insecure TLS and CA file paths.",
    "worker-lost timeout": "the fleet test's manager waits 20s for a lost worker, not the stack's 15m "
    "(fleet.workerLostTimeout set in the test's copy of stacks/Pulumi.fleet-manager.yaml): what Kueue does then "
    "(evict, requeue, dispatch again) is its own.",
    "fleet manager without nodes": "the fleet test's manager runs no kube-scheduler, no kwok and no nodes: nothing "
    "runs on a manager (its Jobs and JobSets are managed by MultiKueue), and the test asserts no pod is made there.",
    "lost-worker reset": "kwok runs no container, so the fleet test runs the manager's lost-worker reset itself "
    "(components/plan/fleet_reset.py): the rendered CronJob's container command and env, with the test's Python "
    "standing in for the image's python3 (the program needs the standard library only), and in-cluster credentials "
    "of the rendered ServiceAccount (a TokenRequest token, the server's CA, 127.0.0.1 and the server's port as the "
    "service address), so the rendered Roles are all it may use; it runs the program when the test says, not each "
    "minute (the cronjob controller's own Jobs stay Pending: the manager has no nodes).",
    "pod completion": "the fleet test completes a Job's pods by setting them Succeeded with exit code 0, as kwok's "
    "pod-complete stage would (left out, so that other pods keep running).",
    "JobSet controller": "JobSet's controller is not built here (its CRD comes from upstream/crds): a JobSet is "
    "dispatched and admitted by the real Kueue on manager and worker, and the harness sets the worker's JobSet "
    "status as JobSet's controller would: one active replicated job while it runs (the lost-worker case), Completed "
    "once its Jobs succeed; no JobSet pod runs.",
}


def bin_dir() -> Path:
    import os

    path = os.environ.get(BIN_ENV)
    if not path:
        raise RuntimeError(f"{BIN_ENV} is not set: run `make sched-test` (it builds Kueue and helm first)")
    return Path(path)


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def kueue_release(rendering: Rendering) -> dict[str, Any]:
    for r in rendering.releases:
        if r.inputs.get("name", r.name) == RELEASE:
            return r.inputs
    raise LookupError("the stack installs no kueue release")


def chart_archive() -> Path:
    chart = versions.KUEUE
    path = ROOT / versions.archive_path(chart, chart.version, versions.BUNDLED_DIR)
    if not path.exists():
        raise FileNotFoundError(path)
    return path


def render_chart(helm: Path, values: dict[str, Any], workdir: Path) -> list[dict[str, Any]]:
    """``helm template`` of the pinned chart with the release's values, CRDs included, as the provider installs it."""
    values_file = workdir / "kueue-values.json"
    values_file.write_text(json.dumps(values))
    proc = subprocess.run(
        [
            str(helm),
            "template",
            RELEASE,
            str(chart_archive()),
            f"--namespace={NAMESPACE}",
            "--include-crds",
            "--kube-version=1.35.4",
            f"--values={values_file}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={"HOME": str(workdir), "PATH": "/usr/bin:/bin", "HELM_CACHE_HOME": str(workdir / "helm")},
    )
    if proc.returncode != 0:
        raise ControlPlaneError(f"helm template failed: {proc.stderr}")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: the chart's CRDs are a megabyte of YAML
    return [d for d in yaml.load_all(proc.stdout, Loader=loader) if isinstance(d, dict)]


class KueueController:
    """Kueue installed from the rendered chart on ``cp`` and its manager started out of cluster."""

    def __init__(self, cp: ControlPlane, rendering: Rendering | None) -> None:
        """``rendering``: the stack whose ``kueue`` release ``install`` puts on the server; None when the engine
        installs the release and ``adopt_release`` reads what it installed."""
        self.cp = cp
        self.dir = cp.dir / "kueue"
        self.dir.mkdir(exist_ok=True)
        self.docs = (
            [] if rendering is None else render_chart(bin_dir() / "helm", kueue_release(rendering)["values"], self.dir)
        )
        # the webhook Service's cluster IP: a random address of the server's loopback service range, with a free port
        self.host = f"127.0.{random.randint(200, 254)}.{random.randint(2, 254)}"
        self.port = _free_port(self.host)
        self.health = _free_port("127.0.0.1")
        self.config: dict[str, Any] = {}
        self._stop = threading.Event()
        self._mount: threading.Thread | None = None

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [d for d in self.docs if d.get("kind") == kind]

    def crds(self) -> list[dict[str, Any]]:
        return self.of_kind("CustomResourceDefinition")

    def manager_config(self) -> dict[str, Any]:
        """The chart's manager configuration (the stack's ``controllerManagerConfigYaml``), adapted (ADAPTATIONS)."""
        cm = next(d for d in self.of_kind("ConfigMap") if d["metadata"]["name"] == CONFIG_MAP)
        config = yaml.safe_load(cm["data"][CONFIG_KEY])
        config["health"] = {**config.get("health", {}), "healthProbeBindAddress": f"127.0.0.1:{self.health}"}
        config["metrics"] = {**config.get("metrics", {}), "bindAddress": f"127.0.0.1:{_free_port('127.0.0.1')}"}
        config["webhook"] = {
            **config.get("webhook", {}),
            "host": self.host,
            "port": self.port,
            "certDir": str(self.dir / "certs"),
        }
        config["leaderElection"] = {**config.get("leaderElection", {}), "leaderElect": False}
        config["namespace"] = NAMESPACE
        return config

    def install(self) -> None:
        """The chart's objects the manager needs before it starts: its CRDs (replacing upstream/crds' copies, which
        carry no conversion webhook), the webhook Service, the certificate Secret and the webhook configurations."""
        from apply import apply_docs

        apply_docs(self.cp, self.crds())
        service = self.webhook_service()
        service["spec"]["clusterIP"] = self.host
        self._point_at_manager(service)
        apply_docs(self.cp, self.crds())
        secrets = [d for d in self.of_kind("Secret") if d["metadata"].get("namespace") == NAMESPACE]
        apply_docs(self.cp, [service, *secrets, *self.webhook_configurations()])

    def webhook_service(self) -> dict[str, Any]:
        return next(d for d in self.of_kind("Service") if d["metadata"]["name"] == WEBHOOK_SERVICE)

    def webhook_configurations(self) -> list[dict[str, Any]]:
        return [*self.of_kind("MutatingWebhookConfiguration"), *self.of_kind("ValidatingWebhookConfiguration")]

    def _point_at_manager(self, service: dict[str, Any]) -> None:
        """ADAPTATIONS "webhook Service port": the Service's port and targetPort, every webhook configuration's
        and every conversion webhook's clientConfig.service.port become the manager's webhook port (in place)."""
        service["spec"]["ports"] = [
            {**p, "port": self.port, "targetPort": self.port} for p in service["spec"]["ports"][:1]
        ]
        for conf in self.webhook_configurations():
            for hook in conf["webhooks"]:
                hook["clientConfig"]["service"]["port"] = self.port
        for crd in self.crds():  # the conversion webhook reaches the same server
            conversion = crd["spec"].get("conversion") or {}
            if conversion.get("strategy") == "Webhook":
                conversion["webhook"]["clientConfig"]["service"]["port"] = self.port

    def adopt_release(self, timeout: float = 300) -> None:
        """The chart as the engine's Helm release installed it (``rendering`` None): once Helm has recorded the
        release as deployed, read its manager ConfigMap, webhook Service, webhook configurations and CRDs from the
        server, bind the manager to the Service's cluster IP (a loopback address of the service range) on a free
        port, point the Service, the configurations and the conversion webhooks at that port (ADAPTATIONS "webhook
        Service port"), scale the chart's Deployment to 0 (ADAPTATIONS "chart Deployment") and delete its
        APIServices (ADAPTATIONS "visibility API"). Then ``start``."""
        cp = self.cp
        deadline = time.monotonic() + timeout
        while not self._release_deployed():
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"the kueue release was not deployed within {timeout}s{cp._tails()}")
            cp._check_alive()
            time.sleep(0.5)
        config_map = self._get(f"/api/v1/namespaces/{NAMESPACE}/configmaps/{CONFIG_MAP}")
        service = self._get(f"/api/v1/namespaces/{NAMESPACE}/services/{WEBHOOK_SERVICE}")
        confs = [
            self._get(f"/apis/admissionregistration.k8s.io/v1/{kind}/{name}")
            for kind, name in (
                ("mutatingwebhookconfigurations", f"{RELEASE}-mutating-webhook-configuration"),
                ("validatingwebhookconfigurations", f"{RELEASE}-validating-webhook-configuration"),
            )
        ]
        listed = json.loads(cp.request("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")[1])["items"]
        crds = [  # a list's items carry no apiVersion and kind
            {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", **c}
            for c in listed
            if c["spec"]["group"] == "kueue.x-k8s.io"
        ]
        self.docs = [config_map, service, *confs, *crds]
        self.host = service["spec"]["clusterIP"]
        self.port = _free_port(self.host)
        self._point_at_manager(service)
        self._patch(service, {"spec": {"ports": service["spec"]["ports"]}})
        for conf in confs:
            self._patch(conf, {"webhooks": conf["webhooks"]})
        for crd in crds:
            if crd["spec"].get("conversion"):
                self._patch(crd, {"spec": {"conversion": crd["spec"]["conversion"]}})
        status, body = cp.request(
            "PATCH",
            f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{RELEASE}-controller-manager",
            {"spec": {"replicas": 0}},
            "application/merge-patch+json",
        )
        if status != 200:
            raise ControlPlaneError(f"scaling the chart's Deployment to 0: {status} {body[:300]}")
        for version in ("v1beta1", "v1beta2"):
            cp.request("DELETE", f"/apis/apiregistration.k8s.io/v1/apiservices/{version}.visibility.kueue.x-k8s.io")
        self.start()

    def _release_deployed(self) -> bool:
        status, body = self.cp.request(
            "GET",
            f"/api/v1/namespaces/{NAMESPACE}/secrets?labelSelector=owner%3Dhelm%2Cname%3D{RELEASE}%2Cstatus%3Ddeployed",
        )
        return status == 200 and bool(json.loads(body)["items"])

    def _get(self, path: str) -> dict[str, Any]:
        status, body = self.cp.request("GET", path)
        if status != 200:
            raise ControlPlaneError(f"GET {path}: {status} {body[:300]}")
        return json.loads(body)

    def _patch(self, doc: dict[str, Any], fields: dict[str, Any]) -> None:
        """A merge patch of ``fields`` of an object read from the server (the API server updates a CRD's status
        meanwhile: a replace of the whole object would conflict)."""
        meta = doc["metadata"]
        group_version = doc["apiVersion"]
        base = f"/api/{group_version}" if "/" not in group_version else f"/apis/{group_version}"
        plural = {
            "Service": "services",
            "MutatingWebhookConfiguration": "mutatingwebhookconfigurations",
            "ValidatingWebhookConfiguration": "validatingwebhookconfigurations",
            "CustomResourceDefinition": "customresourcedefinitions",
        }[doc["kind"]]
        ns = f"/namespaces/{meta['namespace']}" if meta.get("namespace") else ""
        status, body = self.cp.request(
            "PATCH", f"{base}{ns}/{plural}/{meta['name']}", fields, "application/merge-patch+json"
        )
        if status != 200:
            raise ControlPlaneError(f"PATCH {doc['kind']} {meta['name']}: {status} {body[:300]}")

    def _mount_secret(self) -> None:
        """The kubelet's part (ADAPTATIONS "certificate volume"): the Secret's keys as files in webhook.certDir."""
        certs = Path(self.config["webhook"]["certDir"])
        certs.mkdir(parents=True, exist_ok=True)
        path = f"/api/v1/namespaces/{NAMESPACE}/secrets/{CERT_SECRET}"
        seen: dict[str, str] = {}
        while not self._stop.wait(0.5 if not seen else 5.0):  # fast until the first certificate, then as a kubelet
            with contextlib.suppress(OSError, ValueError):
                status, body = self.cp.request("GET", path)
                if status != 200:
                    continue
                data = json.loads(body).get("data") or {}
                if data == seen:
                    continue
                for key, value in data.items():
                    tmp = certs / f".{key}.tmp"
                    tmp.write_bytes(base64.b64decode(value))
                    tmp.replace(certs / key)
                seen = data

    def stop(self) -> None:
        self._stop.set()

    def start(self) -> None:
        self.config = self.manager_config()
        self._mount = threading.Thread(target=self._mount_secret, daemon=True)
        self._mount.start()
        path = self.dir / "config.yaml"
        path.write_text(yaml.safe_dump(self.config, sort_keys=False))
        self.cp._spawn(
            "kueue",
            [
                str(bin_dir() / "kueue"),
                f"--config={path}",
                f"--kubeconfig={self.cp.kubeconfig}",
                "--feature-gates=VisibilityOnDemand=false",
                "--zap-log-level=info",
            ],
        )
        self.wait_ready()

    def wait_ready(self, timeout: float = 120) -> None:
        """Ready when its readiness probe passes (certificates issued, webhook server serving) and a ResourceFlavor
        dry-run passes through its mutating and validating webhooks (the platform's own gate probe)."""
        import urllib.request

        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            self.cp._check_alive()
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"http://127.0.0.1:{self.health}/readyz", timeout=2) as resp:
                    if resp.status == 200:
                        status, body = self.cp.request(
                            "POST",
                            "/apis/kueue.x-k8s.io/v1beta2/resourceflavors?dryRun=All",
                            {
                                "apiVersion": "kueue.x-k8s.io/v1beta2",
                                "kind": "ResourceFlavor",
                                "metadata": {"name": "webhook-probe"},
                            },
                        )
                        if status == 201:
                            return
                        last = f"dry-run {status}: {body[:300]}"
            time.sleep(0.5)
        raise ControlPlaneError(f"Kueue not ready within {timeout}s ({last}){self.cp._tails()}")
