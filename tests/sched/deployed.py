"""A stack's platform deployed by the real Pulumi engine (tests/engine/engine.py: the Automation API, the package's
own program, the kubernetes provider, the charts from upstream/charts) on the scheduler tests' loop (loop.py):
kube-scheduler, kwok nodes for every pool at its maximum size, and the real Kueue controller answering Kueue's
webhooks.

The engine installs Kueue's chart as on any cluster. Nothing goes through Kueue's webhooks before the platform's webhook
gate has passed (components/render/webhooks.py), and the gate runs its real probe here: kwok runs no container, so the
harness plays the kubelet of the gate's pod (``_run_gates``: the pod's one command, ``kubectl create --dry-run=server``
of the probe object as the probe's ServiceAccount, and the pod's phase from its exit). Meanwhile, as soon as Helm has
recorded the release, ``KueueController.adopt_release`` starts the real manager out of cluster with the configuration
the chart installed, bound to the webhook Service's cluster IP (ADAPTATIONS). So the gate opens when the real webhooks
answer, and every Kueue object the engine creates after it goes through them.

``DeployedCluster(stack, config)`` as a context manager starts it all and always stops it; ``change(config)`` previews
then applies a new stack file and says what the engine planned and did.
"""

from __future__ import annotations

import copy
import json
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

import paths  # noqa: F401  (tests/cluster and tests/engine on the path)
from engine import Engine, record_changes, state_urns
from kueue_controller import KueueController
from loop import SchedCluster
from nodes import plan_nodes, pool_node
from probes import Api

from components.cli.loader import load_spec
from components.plan import derive, plan as plan_stage
from components.plan.webhooks import PROBE_FILE

GATE_SUFFIX = "-webhook-ready"  # components/plan/webhooks.py job_name
KUBECONFIG_PLACEHOLDER = "/dev/null"  # the plan does not depend on where the cluster is


def pointed(config: dict[str, Any], kubeconfig: str) -> dict[str, Any]:
    """``config`` pointed at the test server, its charts from upstream/charts (nothing else is reachable)."""
    out = copy.deepcopy(config)
    out["gpu-platform:cluster"] = {"kubeconfig": kubeconfig}
    out["gpu-platform:chartSource"] = "bundled"
    return out


@dataclass
class Change:
    """What the engine planned for a new stack file (``preview``: operation -> URNs; ``preview_error``: why the
    preview failed, if it did) and what its ``up`` did: the steps it started (``up``), finished (``done``) and failed
    (``failed``; ``error``: why the up failed), and how long each took."""

    preview: dict[str, list[str]]
    up: dict[str, list[str]] = field(default_factory=dict)
    done: dict[str, list[str]] = field(default_factory=dict)
    failed: dict[str, list[str]] = field(default_factory=dict)
    preview_error: str = ""
    error: str = ""
    preview_s: float = 0.0
    up_s: float = 0.0

    def recorder(self):
        """An ``on_event`` callback for the up: ``record_changes`` for the steps started, and each step's outcome."""
        started = record_changes(self.up)

        def seen(event) -> None:
            started(event)
            for attr, into in (("res_outputs_event", self.done), ("res_op_failed_event", self.failed)):
                outcome = getattr(event, attr, None)
                if outcome is not None and outcome.metadata.op.value != "same":
                    into.setdefault(outcome.metadata.op.value, []).append(outcome.metadata.urn)

        return seen


class DeployedCluster(SchedCluster):
    """One stack deployed by the engine on the loop, with the real Kueue controller."""

    def __init__(self, stack: str, config: dict[str, Any]) -> None:
        super().__init__(stack, pointed(config, KUBECONFIG_PLACEHOLDER))
        self.engine: Engine | None = None
        self.stack_ref: Any = None
        self._helper: threading.Thread | None = None
        self._helper_error: BaseException | None = None
        self._gates_done: set[str] = set()
        self.first_up_s = 0.0
        self.node_names: dict[str, str] = {}  # a renamed pool's name -> the name its nodes were created with

    def __exit__(self, *exc: object) -> None:
        try:
            super().__exit__(*exc)
        finally:
            if self.engine is not None:
                self.engine.close()

    def start(self) -> None:
        cp = self.cp
        assert cp is not None
        self.api = Api(cp)
        # no pod-complete stage: workloads' pods keep running; the gate's pod is run by _run_gates
        cp.start_nodes(plan_nodes(self.plan, derive.system_node_selector(self.spec)), without_stages=("pod-complete",))
        self.engine = Engine()
        self.config = pointed(self.config, str(cp.kubeconfig))
        self.stack_ref = self.engine.stack(self.stack, self.config)
        if self.plan.addons["kueue"].enabled:
            self.kueue = KueueController(cp, None)
        self._helper = threading.Thread(target=self._help, daemon=True)
        self._helper.start()
        started = time.monotonic()
        outcome: list[BaseException | None] = []

        def up() -> None:
            try:
                self.stack_ref.up(color="never")
                outcome.append(None)
            except BaseException as err:
                outcome.append(err)

        running = threading.Thread(target=up, daemon=True)
        running.start()
        while running.is_alive():  # a harness failure ends the wait (the up then fails with the server stopped)
            running.join(timeout=1)
            if self._helper_error is not None:
                raise RuntimeError(f"the harness failed during the first up{self._helper_failure()}")
        if outcome[0] is not None:
            raise RuntimeError(f"the first up failed: {outcome[0]}{self._helper_failure()}") from outcome[0]
        self.first_up_s = time.monotonic() - started
        self.wait_ready()
        self._answerer = threading.Thread(target=self._answer, daemon=True)
        self._answerer.start()

    def _helper_failure(self) -> str:
        return f"\nharness: {self._helper_error!r}" if self._helper_error is not None else ""

    # ----------------------------------------------------------------------- what the engine's up needs

    def _help(self) -> None:
        """During the first up: adopt Kueue's release once Helm has deployed it, and run the gates' pods."""
        try:
            adopter = None
            if self.kueue is not None:
                adopter = threading.Thread(target=self._adopt, daemon=True)
                adopter.start()
            while not self._stop.wait(0.3):
                self._run_gates()
        except BaseException as err:  # surfaced by start(), which stops waiting for the up
            self._fail(err)

    def _adopt(self) -> None:
        try:
            assert self.kueue is not None
            self.kueue.adopt_release()
        except BaseException as err:
            self._fail(err)

    def _fail(self, err: BaseException) -> None:
        self._helper_error = err

    def _run_gates(self) -> None:
        """The kubelet's part for the platform's webhook gate pods (ADAPTATIONS "webhook gate"): the container's one
        command, ``kubectl create --dry-run=server -f /probe/probe.yaml`` as the pod's ServiceAccount, then the pod's
        phase from its exit (Succeeded, or Failed with kubectl's message: the Job controller retries it)."""
        cp = self.cp
        assert cp is not None
        query = urllib.parse.urlencode({"labelSelector": "app.kubernetes.io/managed-by"})
        status, body = cp.request("GET", f"/api/v1/pods?{query}")
        if status != 200:
            return
        for pod in json.loads(body)["items"]:
            meta, spec = pod["metadata"], pod["spec"]
            name = meta.get("labels", {}).get("app.kubernetes.io/name", "")
            if not name.endswith(GATE_SUFFIX) or meta["uid"] in self._gates_done:
                continue
            if pod.get("status", {}).get("phase") != "Running":
                continue  # kwok has not started it yet
            config_map = next(v["configMap"]["name"] for v in spec["volumes"] if v.get("configMap"))
            status, body = cp.request("GET", f"/api/v1/namespaces/{meta['namespace']}/configmaps/{config_map}")
            if status != 200:
                continue
            probe = json.loads(body)["data"][PROBE_FILE]
            proc = cp.kubectl(
                f"--as=system:serviceaccount:{meta['namespace']}:{spec['serviceAccountName']}",
                "create",
                "--dry-run=server",
                "-f",
                "-",
                stdin=probe,
                check=False,
                timeout=60,
            )
            now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            code = proc.returncode
            terminated = {
                "exitCode": code,
                "reason": "Completed" if code == 0 else "Error",
                "message": (proc.stderr or proc.stdout)[-500:],
                "startedAt": now,
                "finishedAt": now,
            }
            containers = [
                {
                    "name": c["name"],
                    "image": c["image"],
                    "ready": False,
                    "restartCount": 0,
                    "started": False,
                    "state": {"terminated": terminated},
                }
                for c in spec["containers"]
            ]
            patch = {"status": {"phase": "Succeeded" if code == 0 else "Failed", "containerStatuses": containers}}
            status, body = cp.request(
                "PATCH",
                f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/status",
                patch,
                "application/merge-patch+json",
            )
            if status == 200:
                self._gates_done.add(meta["uid"])

    # ------------------------------------------------------------------------------------------ changes

    def set_config(self, config: dict[str, Any]) -> None:
        """The stack file the next change applies (the plan follows it: tenants, pools, quotas)."""
        assert self.cp is not None
        self.config = pointed(config, str(self.cp.kubeconfig))
        self.spec = load_spec(self.config)
        self.plan = plan_stage.build(self.spec, self.stack)
        self.tenant_namespaces = [t.namespace for t in self.plan.tenants.values()]

    def change(self, config: dict[str, Any], before_up=None) -> Change:
        """Preview ``config`` through the engine, then ``up`` it (``before_up``: what the operator does between,
        e.g. relabel nodes). A preview or an up the engine refuses is recorded, not raised; the up runs after a
        refused preview too (what it then does, or refuses, is part of the record)."""
        assert self.engine is not None
        self.set_config(config)
        self.engine.stack(self.stack, self.config)  # rewrites the stack file the workspace reads
        planned: dict[str, list[str]] = {}
        started = time.monotonic()
        preview_error = ""
        try:
            self.stack_ref.preview(color="never", on_event=record_changes(planned))
        except Exception as err:  # a preview the engine refuses (a protected delete) is recorded too
            preview_error = " ".join(str(err).split())
        out = Change(preview=planned, preview_error=preview_error, preview_s=time.monotonic() - started)
        if before_up is not None:
            before_up()
        started = time.monotonic()
        try:
            self.stack_ref.up(color="never", on_event=out.recorder())
        except Exception as err:
            out.error = " ".join(str(err).split())
        out.up_s = time.monotonic() - started
        return out

    def state_urns(self) -> set[str]:
        return state_urns(self.stack_ref)

    def advertise(self) -> None:
        """Every pool node's labels and allocatable as the current plan says (ADAPTATIONS "nodes after a change"):
        what the operator does on an existing cluster after a pool rename (label the nodes with the new name), and
        what the device plugin does after a sharing change once restarted (advertise the new units). Nodes keep their
        names, so pods bound to them stay."""
        cp = self.cp
        assert cp is not None
        for pool in self.plan.pools.values():
            for i in range(pool.max_nodes):
                want = pool_node(self.plan, pool, i)
                name = self._node_name(pool.name, i)
                labels = {k: v for k, v in want["metadata"]["labels"].items() if k != "kubernetes.io/hostname"}
                status, body = cp.request(
                    "PATCH", f"/api/v1/nodes/{name}", {"metadata": {"labels": labels}}, "application/merge-patch+json"
                )
                if status != 200:
                    raise RuntimeError(f"labelling node {name}: {status} {body[:200]}")
                status, body = cp.request(
                    "PATCH",
                    f"/api/v1/nodes/{name}/status",
                    {"status": {"capacity": want["status"]["capacity"], "allocatable": want["status"]["allocatable"]}},
                    "application/merge-patch+json",
                )
                if status != 200:
                    raise RuntimeError(f"advertising node {name}: {status} {body[:200]}")

    def _node_name(self, pool: str, i: int) -> str:
        return f"{self.node_names.get(pool, pool)}-{i}"
