"""The real Kueue controller manager (v0.19.2, built by scripts/sched-bins.sh) beside a test control plane, run
out of cluster with the stack's own rendered configuration, its webhooks served and called for real.

What is installed comes from the pinned chart (``upstream/charts/kueue-<version>.tgz``) rendered by ``helm template``
with the values the synth recorded for the stack's ``kueue`` release, as the kubernetes provider would install it:
the CRDs (with their conversion webhooks), the webhook configurations (mutating and validating, with the
``managedJobsNamespaceSelector`` of the stack's configuration), the webhook Service, the internal-cert Secret, and
the manager configuration the controller is started with. Kueue's own certificate management issues the serving
certificate for ``kueue-webhook-service.kueue-system.svc`` and injects its CA into those configurations and CRDs,
as in a cluster; the API server resolves the Service to its cluster IP, which is on loopback here.

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
    "chart's APIService is not applied).",
    "ProvisioningRequests": "no Cluster Autoscaler or GKE autoscaler runs here: the harness marks each "
    "ProvisioningRequest Kueue creates Accepted and Provisioned at once, as the autoscaler would after scaling up "
    "(every pool's nodes exist at its maximum size); whether the pods then fit is kube-scheduler's verdict.",
    "DRA": "the NVIDIA DRA driver's kubelet plugin does not run: for each node of a DRA pool the harness publishes the "
    "ResourceSlice it would (a device per GPU or MIG slice, with the attributes the stack's claim templates select "
    "on) and makes the DeviceClasses the GPU Operator's GPUCluster would (upstream/dra-driver-nvidia-gpu).",
    "volumes": "no CSI driver runs: the harness makes a PersistentVolume for every Pending claim, as the claim's "
    "driver would provision one.",
    "nodes": "kwok plays every node's kubelet; a pool's nodes exist at its maximum size from the start, labelled, "
    "tainted and advertising what the plan says the cloud and the device plugin give them (tests/sched/pool_nodes.py).",
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

    def __init__(self, cp: ControlPlane, rendering: Rendering) -> None:
        self.cp = cp
        self.dir = cp.dir / "kueue"
        self.dir.mkdir(exist_ok=True)
        self.docs = render_chart(bin_dir() / "helm", kueue_release(rendering)["values"], self.dir)
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
        service = next(d for d in self.of_kind("Service") if d["metadata"]["name"] == WEBHOOK_SERVICE)
        service["spec"]["clusterIP"] = self.host
        service["spec"]["ports"] = [
            {**p, "port": self.port, "targetPort": self.port} for p in service["spec"]["ports"][:1]
        ]
        webhooks = [*self.of_kind("MutatingWebhookConfiguration"), *self.of_kind("ValidatingWebhookConfiguration")]
        for conf in webhooks:
            for hook in conf["webhooks"]:
                hook["clientConfig"]["service"]["port"] = self.port
        for crd in self.crds():  # the conversion webhook reaches the same server
            conversion = crd["spec"].get("conversion") or {}
            if conversion.get("strategy") == "Webhook":
                conversion["webhook"]["clientConfig"]["service"]["port"] = self.port
        apply_docs(self.cp, self.crds())
        secrets = [d for d in self.of_kind("Secret") if d["metadata"].get("namespace") == NAMESPACE]
        apply_docs(self.cp, [service, *secrets, *webhooks])

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
