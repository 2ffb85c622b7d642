"""A real Kubernetes control plane on loopback for the cluster tests: etcd, kube-apiserver, kube-controller-manager.

The binaries are built from Go modules by ``scripts/cluster-bins.sh`` (kube 1.35, etcd 3.6) into a per-user
cache; ``GPU_PLATFORM_KUBE_BIN`` names that directory. Everything runs on 127.0.0.1 with free ports in a
temporary directory, and is torn down on exit, on failure and on Ctrl-C (each process leads its own process
group, killed as a group; ``atexit`` and SIGTERM cover an interpreter that dies between).

What the server may dial stays on loopback (issue 25, point 6). Nothing this suite installs registers a webhook
or an aggregated API: the charts that would (Kueue, Volcano, the GPU Operator) are not installed, only their
CRDs. The service range is inside 127.0.0.0/8 too, so even the ``kubernetes`` Service's cluster IP is a loopback
address, and ``dials_outside_loopback`` reads the servers' logs for any dial to another address; the tests fail
on one.

As envtest does (sigs.k8s.io/controller-runtime pkg/envtest), clients authenticate with a static token of a
``system:masters`` user and the serving certificate is the one kube-apiserver generates in ``--cert-dir``.
"""

from __future__ import annotations

import atexit
import contextlib
import http.client
import ipaddress
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

BIN_ENV = "GPU_PLATFORM_KUBE_BIN"
TOKEN = "gpu-platform-cluster-test-admin"  # a throw-away token for a loopback test server
SERVICE_RANGE = "127.0.128.0/17"  # cluster IPs on loopback: nothing the server might dial leaves 127.0.0.0/8
POD_RANGE = "127.1.0.0/16"  # kwok's pod addresses, on loopback too
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
_LIVE: list[ControlPlane] = []


def bin_dir() -> Path:
    path = os.environ.get(BIN_ENV)
    if not path:
        raise RuntimeError(f"{BIN_ENV} is not set: run `make cluster-test` (it builds the binaries first)")
    return Path(path)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ControlPlaneError(RuntimeError):
    pass


class ControlPlane:
    """One cluster's control plane; ``with ControlPlane() as cp:`` starts it and always stops it."""

    def __init__(self, name: str = "gpu-platform", root_ca: bool = False) -> None:
        """``root_ca``: the kube-controller-manager gets ``--root-ca-file`` (the API server's self-generated serving
        chain in ``--cert-dir``), as a kubeadm cluster's gets its CA: service-account token Secrets then carry a
        ``ca.crt`` a client outside the server can verify it with (the fleet tests' worker credentials)."""
        self.name = name
        self.root_ca = root_ca
        self.bin = bin_dir()
        self.dir = Path(tempfile.mkdtemp(prefix=f"gp-cluster-{name}-"))
        self.procs: dict[str, subprocess.Popen] = {}
        self.logs: dict[str, Path] = {}
        self.port = 0
        self.kubeconfig = self.dir / "kubeconfig"
        self._local = threading.local()  # each thread's kept-alive connection to the API server (request)
        self._tls: ssl.SSLContext | None = None

    # ------------------------------------------------------------------------------------------- lifecycle

    def __enter__(self) -> ControlPlane:
        _LIVE.append(self)
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = self.dir / f"{name}.log"
        self.logs[name] = log
        with log.open("wb") as fh:
            self.procs[name] = subprocess.Popen(
                argv, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )

    def start(self) -> None:
        d = self.dir
        etcd_client, etcd_peer = _free_port(), _free_port()
        self._spawn(
            "etcd",
            [
                str(self.bin / "etcd"),
                f"--name={self.name}",
                f"--data-dir={d / 'etcd'}",
                f"--listen-client-urls=http://127.0.0.1:{etcd_client}",
                f"--advertise-client-urls=http://127.0.0.1:{etcd_client}",
                f"--listen-peer-urls=http://127.0.0.1:{etcd_peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer}",
                f"--initial-cluster={self.name}=http://127.0.0.1:{etcd_peer}",
                "--listen-metrics-urls=",
                "--unsafe-no-fsync",  # a throw-away test store
                "--log-level=warn",
            ],
        )
        subprocess.run(
            ["openssl", "genrsa", "-out", str(d / "sa.key"), "2048"], check=True, capture_output=True, timeout=60
        )
        subprocess.run(
            ["openssl", "rsa", "-in", str(d / "sa.key"), "-pubout", "-out", str(d / "sa.pub")],
            check=True,
            capture_output=True,
            timeout=60,
        )
        (d / "tokens.csv").write_text(f'{TOKEN},admin,admin,"system:masters"\n')
        self.port = _free_port()
        self._wait_tcp(etcd_client, "etcd")
        self._spawn(
            "kube-apiserver",
            [
                str(self.bin / "kube-apiserver"),
                f"--etcd-servers=http://127.0.0.1:{etcd_client}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={self.port}",
                f"--cert-dir={d / 'certs'}",
                f"--token-auth-file={d / 'tokens.csv'}",
                "--authorization-mode=RBAC",
                f"--service-cluster-ip-range={SERVICE_RANGE}",
                "--service-account-issuer=https://kubernetes.default.svc",
                f"--service-account-key-file={d / 'sa.pub'}",
                f"--service-account-signing-key-file={d / 'sa.key'}",
                "--allow-privileged=true",  # as every real cluster (the GPU Operator's pods are privileged)
                "--enable-priority-and-fairness=false",
                "--profiling=false",
                "--v=2",  # webhook and proxy dial errors are logged at this level
            ],
        )
        self._write_kubeconfig()
        self._wait_ready()
        self._spawn(
            "kube-controller-manager",
            [
                str(self.bin / "kube-controller-manager"),
                f"--kubeconfig={self.kubeconfig}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={_free_port()}",
                f"--service-account-private-key-file={d / 'sa.key'}",
                f"--service-cluster-ip-range={SERVICE_RANGE}",
                "--use-service-account-credentials=false",
                "--concurrent-resource-quota-syncs=10",
                "--resource-quota-sync-period=2s",
                "--pvclaimbinder-sync-period=1s",  # a pre-made volume binds in a second, not at the 15 s resync
                *([f"--root-ca-file={d / 'certs' / 'apiserver.crt'}"] if self.root_ca else []),
                "--v=2",
            ],
        )

    def start_nodes(self, nodes: list[dict[str, Any]], without_stages: tuple[str, ...] = ()) -> None:
        """Simulated nodes: kube-scheduler binds pods, kwok (sigs.k8s.io/kwok) plays every node's kubelet.

        kwok manages the nodes annotated ``kwok.x-k8s.io/node: fake`` with the stages scripts/cluster-bins.sh keeps
        (a node turns Ready and reports a status heartbeat; a pod bound to one turns Running and Ready, a Job's pod
        Succeeded, a deleted pod goes). Pod addresses come from ``POD_RANGE`` and each node's from 127.0.0.2:
        whatever the server dials for a pod (a webhook, a proxy) stays on loopback. ``without_stages``: stage files
        left out (the scheduler tests leave out ``pod-complete``: their Jobs' pods keep running)."""
        d = self.dir
        # kwok's "fast" stages, kept beside the binary by scripts/cluster-bins.sh (kwok runs none by itself)
        stages = sorted(p for p in (self.bin / "kwok-stages").glob("*.yaml") if p.stem not in without_stages)
        (d / "kwok.yaml").write_text("\n---\n".join(p.read_text() for p in stages))
        self._spawn(
            "kube-scheduler",
            [
                str(self.bin / "kube-scheduler"),
                f"--kubeconfig={self.kubeconfig}",
                f"--authentication-kubeconfig={self.kubeconfig}",
                f"--authorization-kubeconfig={self.kubeconfig}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={_free_port()}",
                "--v=2",
            ],
        )
        self._spawn(
            "kwok",
            [
                str(self.bin / "kwok"),
                f"--kubeconfig={self.kubeconfig}",
                f"--config={d / 'kwok.yaml'}",
                f"--manage-nodes-with-annotation-selector={KWOK_ANNOTATION}=fake",
                f"--cidr={POD_RANGE}",
                "--node-ip=127.0.0.2",
                "--node-port=0",
            ],
        )
        self.kubectl("apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes}))

    def stop(self) -> None:
        for name in reversed(list(self.procs)):
            proc = self.procs[name]
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=15)
        if self in _LIVE:
            _LIVE.remove(self)
        if os.environ.get("GPU_PLATFORM_KEEP_CLUSTER_DIR"):
            return
        subprocess.run(["rm", "-rf", str(self.dir)], check=False)

    def _wait_tcp(self, port: int, what: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                return
            time.sleep(0.1)
        raise ControlPlaneError(f"{what} did not listen on 127.0.0.1:{port} within {timeout}s{self._tails()}")

    def _wait_ready(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            self._check_alive()
            try:
                status, body = self.request("GET", "/readyz")
                if status == 200:
                    return
                last = body[-300:]
            except (OSError, urllib.error.URLError) as exc:
                last = str(exc)
            time.sleep(0.25)
        raise ControlPlaneError(f"kube-apiserver not ready within {timeout}s: {last}{self._tails()}")

    def _check_alive(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                raise ControlPlaneError(f"{name} exited with {proc.returncode}{self._tails()}")

    def _tails(self) -> str:
        out = []
        for name, log in self.logs.items():
            if log.exists():
                out.append(
                    f"\n--- {name} (last lines) ---\n" + "\n".join(log.read_text(errors="replace").splitlines()[-15:])
                )
        return "".join(out)

    def _write_kubeconfig(self) -> None:
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "test", "cluster": {"server": self.server, "insecure-skip-tls-verify": True}}],
            "users": [{"name": "admin", "user": {"token": TOKEN}}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": "admin"}}],
            "current-context": "test",
        }
        self.kubeconfig.write_text(json.dumps(config))

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    # ---------------------------------------------------------------------------------------------- clients

    def request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> tuple[int, str]:
        """One HTTP request to the API server as the admin user: (status, body text). One kept-alive connection per
        thread, and one TLS context: a new context per request cost 20 ms of CPU each (loading the system's CA
        store), and the scheduler tests make thousands."""
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        headers = {"Authorization": f"Bearer {TOKEN}"}
        if data is not None:
            headers["Content-Type"] = content_type
        for attempt in (1, 2):
            conn = self._connection()
            try:
                conn.request(method, path, body=data, headers=headers)
                resp = conn.getresponse()
                return resp.status, resp.read().decode()
            except (http.client.HTTPException, ConnectionError, ssl.SSLError):
                conn.close()
                self._local.conn = None
                if attempt == 2:
                    raise
        raise AssertionError  # unreachable

    def _connection(self) -> http.client.HTTPSConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            if self._tls is None:
                ctx = ssl.create_default_context()
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
                self._tls = ctx
            conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self._tls, timeout=60)
            self._local.conn = conn
        return conn

    def kubectl(
        self, *args: str, stdin: str | None = None, check: bool = True, timeout: float = 300
    ) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            [str(self.bin / "kubectl"), f"--kubeconfig={self.kubeconfig}", *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and proc.returncode != 0:
            raise ControlPlaneError(f"kubectl {' '.join(args)}: exit {proc.returncode}\n{proc.stderr}{proc.stdout}")
        return proc

    # ----------------------------------------------------------------------------------------------- checks

    def dials_outside_loopback(self) -> list[str]:
        """Every line of the servers' logs that dials an address outside 127.0.0.0/8 (issue 25, point 6)."""
        found = []
        for log in self.logs.values():
            if not log.exists():
                continue
            for line in log.read_text(errors="replace").splitlines():
                for m in re.finditer(r"dial (?:tcp|udp)[46]? \[?([0-9a-fA-F:.]+?)\]?:\d+", line):
                    with contextlib.suppress(ValueError):
                        if not ipaddress.ip_address(m.group(1)).is_loopback:
                            found.append(line.strip()[:300])
        return found


def _stop_all(*_args: object) -> None:
    for cp in list(_LIVE):
        cp.stop()


def _on_sigterm(signum: int, _frame: object) -> None:
    """A run killed with SIGTERM (``timeout``, ``pkill``) skips atexit: stop the servers (each in a session of
    its own, so the signal never reached them), then die of the signal as before."""
    _stop_all()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


atexit.register(_stop_all)
if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
    signal.signal(signal.SIGTERM, _on_sigterm)
