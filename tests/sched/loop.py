"""A stack's platform with the programs that make the decisions: the test control plane (etcd, kube-apiserver,
kube-controller-manager), the real Kueue controller manager with its webhooks (kueue_controller.py), the real
kube-scheduler, and kwok nodes for every pool at its maximum size (nodes.py). Workloads are created as a user
creates them and what happens to them is read back from the server: ``outcome``.

``SchedCluster(stack)`` as a context manager starts it all and always stops it."""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from typing import Any

import yaml
from apply import apply_docs, apply_rendering, install_crds
from controlplane import ControlPlane, ControlPlaneError
from kueue_controller import NAMESPACE as KUEUE_NAMESPACE, KueueController
from nodes import POOL_LABEL, plan_nodes, resource_slices
from probes import Api

from components.cli.loader import load_spec
from components.cli.synth import render
from components.plan import derive, plan as plan_stage

KUEUE_API = "kueue.x-k8s.io/v1beta2"
PROVREQ_API = "autoscaling.x-k8s.io/v1"
# The API groups of the workload kinds each add-on's chart installs: a stack without the add-on has no such CRD and the
# server refuses the kind, as explain's operator layer says. Kueue's provisioning check makes ProvisioningRequests.
ADDON_GROUPS = {
    "jobset": {"jobset.x-k8s.io"},
    "kuberay": {"ray.io"},
    "leaderWorkerSet": {"leaderworkerset.x-k8s.io"},
    "trainer": {"trainer.kubeflow.org"},
    "volcano": {"batch.volcano.sh", "scheduling.volcano.sh"},
}


class SchedCluster:
    """One stack's platform with Kueue, kube-scheduler and kwok nodes on loopback."""

    def __init__(self, stack: str, config: dict[str, Any], *, nodes: bool = True, root_ca: bool = False) -> None:
        """``nodes``: False for a cluster where nothing runs (a fleet's manager): no kube-scheduler, no kwok, no nodes.
        ``root_ca``: ControlPlane's (token Secrets carry the server's CA)."""
        self.stack = stack
        self.nodes = nodes
        self.root_ca = root_ca
        self.config = config
        self.spec = load_spec(config)
        self.plan = plan_stage.build(self.spec, stack)
        self.rendering = render(stack, config)
        self.cp: ControlPlane | None = None
        self.api: Api | None = None
        self.kueue: KueueController | None = None
        self._stop = threading.Event()
        self._answerer: threading.Thread | None = None
        self.tenant_namespaces = [t.namespace for t in self.plan.tenants.values()]

    # ------------------------------------------------------------------------------------------- lifecycle

    def __enter__(self) -> SchedCluster:
        self.cp = ControlPlane(f"sched-{self.stack}", root_ca=self.root_ca).__enter__()
        try:
            self.start()
        except BaseException:
            self.cp.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self.kueue is not None:
            self.kueue.stop()
        if self._answerer is not None:
            self._answerer.join(timeout=5)
        assert self.cp is not None
        self.cp.__exit__(*exc)

    def start(self) -> None:
        cp = self.cp
        assert cp is not None
        self.api = Api(cp)
        install_crds(cp, self.custom_groups())
        kueue_on = self.plan.addons["kueue"].enabled
        if kueue_on:
            apply_docs(cp, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": KUEUE_NAMESPACE}}])
            self.kueue = KueueController(cp, self.rendering)
            self.kueue.install()
            self.kueue.start()
        # no pod-complete stage: a Job's pods keep running (holding their quota) until the test deletes them
        if self.nodes:
            nodes = plan_nodes(self.plan, derive.system_node_selector(self.spec))
            cp.start_nodes(nodes, without_stages=("pod-complete",))
            apply_docs(cp, resource_slices(self.plan))  # DRA pools: what the driver publishes (empty otherwise)
        apply_rendering(cp, self.rendering)
        self._provision_volumes()
        self.wait_ready()
        self._answerer = threading.Thread(target=self._answer, daemon=True)
        self._answerer.start()

    def custom_groups(self) -> set[str]:
        """The API groups of the custom kinds the stack renders and of the workload kinds its add-ons install (Kueue's
        own come from its chart, ``KueueController.install``)."""
        groups = {g for key, gs in ADDON_GROUPS.items() if self.plan.addons[key].enabled for g in gs}
        groups |= {m["apiVersion"].split("/")[0] for m in self.rendering.manifests if "/" in m["apiVersion"]}
        if self.plan.kueue is not None and self.plan.kueue.provisioning_checks:  # GKE ships this CRD itself
            groups.add("autoscaling.x-k8s.io")
        return groups - {"kueue.x-k8s.io"}

    def wait_ready(self, timeout: float = 120) -> None:
        """Every node Ready, every tenant's quota counted and default ServiceAccount made, every ClusterQueue
        active (Kueue has seen its flavors and checks)."""
        api = self.api
        assert api is not None
        expected = sum(p.max_nodes for p in self.plan.pools.values()) if self.nodes else 0

        def nodes_ready() -> bool:
            items = api.get("v1", "Node")["items"]
            ready = [
                n
                for n in items
                if any(
                    c["type"] == "Ready" and c["status"] == "True" for c in n.get("status", {}).get("conditions", [])
                )
            ]
            return len([n for n in ready if POOL_LABEL in n["metadata"]["labels"]]) >= expected

        api.wait_for("every node Ready", nodes_ready, timeout)
        for ns in self.tenant_namespaces:
            api.wait_for(
                f"{ns} default ServiceAccount", lambda ns=ns: self._exists("v1", "ServiceAccount", ns, "default")
            )
            for rq in api.get("v1", "ResourceQuota", ns)["items"]:
                name = rq["metadata"]["name"]
                api.wait_for(
                    f"{ns}/{name} counted",
                    lambda ns=ns, name=name: bool(
                        api.get("v1", "ResourceQuota", ns, name).get("status", {}).get("hard")
                    ),
                )

        def claims_bound() -> bool:
            items = api.get("v1", "PersistentVolumeClaim")["items"]
            return all(i.get("status", {}).get("phase") == "Bound" for i in items)

        api.wait_for("the stack's claims bound", claims_bound, timeout)
        for t in self.plan.tenants.values():
            if t.cluster_queue:
                api.wait_for(
                    f"ClusterQueue {t.cluster_queue} active", lambda q=t.cluster_queue: self._cq_active(q), timeout
                )

    def _cq_active(self, name: str) -> bool:
        cq = self.api.get(KUEUE_API, "ClusterQueue", None, name)  # type: ignore[union-attr]
        return any(c["type"] == "Active" and c["status"] == "True" for c in cq.get("status", {}).get("conditions", []))

    def _exists(self, api_version: str, kind: str, ns: str | None, name: str) -> bool:
        try:
            self.api.get(api_version, kind, ns, name)  # type: ignore[union-attr]
        except LookupError:
            return False
        return True

    # ----------------------------------------------------------------------------- ProvisioningRequests

    def _answer(self) -> None:
        """What the cloud's controllers would do that none here does (ADAPTATIONS): provision volumes for claims,
        answer ProvisioningRequests."""
        while not self._stop.wait(1.0):  # an autoscaler answers in seconds too; polling faster costs the server CPU
            try:
                self._provision_volumes()
                if self.plan.addons["kueue"].enabled:
                    self._answer_provisioning_requests()
            except (OSError, ValueError, KeyError):
                continue

    def _provision_volumes(self) -> None:
        """A PersistentVolume for each Pending claim, as the claim's CSI driver would provision it (the driver does
        not run here): same class, capacity and access modes, bound to the claim."""
        cp = self.cp
        assert cp is not None
        status, body = cp.request("GET", "/api/v1/persistentvolumeclaims")
        if status != 200:
            return
        for pvc in json.loads(body)["items"]:
            if pvc.get("status", {}).get("phase") != "Pending" or pvc["spec"].get("volumeName"):
                continue
            meta = pvc["metadata"]
            name = f"pv-{meta['namespace']}-{meta['name']}"[:63]
            cp.request(
                "POST",
                "/api/v1/persistentvolumes",
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolume",
                    "metadata": {"name": name},
                    "spec": {
                        "capacity": {"storage": pvc["spec"]["resources"]["requests"]["storage"]},
                        "accessModes": pvc["spec"]["accessModes"],
                        "storageClassName": pvc["spec"].get("storageClassName") or "",
                        "persistentVolumeReclaimPolicy": "Retain",
                        "claimRef": {"namespace": meta["namespace"], "name": meta["name"]},
                        "csi": {"driver": "sched-test.gpu-platform.local", "volumeHandle": name},
                    },
                },
            )

    def _answer_provisioning_requests(self) -> None:
        """The autoscaler's part (ADAPTATIONS "ProvisioningRequests"): every ProvisioningRequest Kueue creates is
        Accepted and Provisioned, since every pool's nodes already exist at its maximum size."""
        cp = self.cp
        assert cp is not None
        status, body = cp.request("GET", f"/apis/{PROVREQ_API}/provisioningrequests")
        if status != 200:
            return
        for pr in json.loads(body)["items"]:
            conds = {c["type"]: c["status"] for c in pr.get("status", {}).get("conditions", [])}
            if conds.get("Provisioned") == "True":
                continue
            now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            gen = pr["metadata"].get("generation", 1)
            pr.setdefault("status", {})["conditions"] = [
                {
                    "type": t,
                    "status": "True",
                    "reason": r,
                    "message": "gpu-platform sched-test: nodes exist",
                    "lastTransitionTime": now,
                    "observedGeneration": gen,
                }
                for t, r in (("Accepted", "Accepted"), ("Provisioned", "Provisioned"))
            ]
            meta = pr["metadata"]
            cp.request(
                "PUT",
                f"/apis/{PROVREQ_API}/namespaces/{meta['namespace']}/provisioningrequests/{meta['name']}/status",
                pr,
            )

    # ---------------------------------------------------------------------------------------- workloads

    def create(self, docs: list[dict[str, Any]]) -> list[str]:
        """Create each object as a user would (kubectl create): the refusals' messages, in order."""
        refusals = []
        for doc in docs:
            ns = doc.get("metadata", {}).get("namespace")
            try:
                path = self.api.path(doc["apiVersion"], doc["kind"], ns)  # type: ignore[union-attr]
            except (LookupError, KeyError) as err:
                refusals.append(f"{doc['kind']} {doc['metadata'].get('name')}: the server has no such kind ({err})")
                continue
            status, body = self.cp.request("POST", path + "?fieldManager=user", doc)  # type: ignore[union-attr]
            if status >= 300:
                msg = json.loads(body).get("message", body) if body.startswith("{") else body
                refusals.append(f"{doc['kind']} {doc['metadata'].get('name')}: {msg}")
        return refusals

    def delete_all(self, namespaces: list[str], timeout: float = 60) -> None:
        """Delete every workload object, pod and Kueue Workload in the namespaces and wait until they are gone and
        Kueue holds no quota for them."""
        cp, api = self.cp, self.api
        assert cp is not None and api is not None
        kinds = [  # each kind's collection (events too: none outlives its workload)
            ("v1", "Event"),
            ("batch/v1", "Job"),
            ("apps/v1", "Deployment"),
            ("apps/v1", "StatefulSet"),
            ("apps/v1", "ReplicaSet"),
            ("v1", "Pod"),
            ("resource.k8s.io/v1", "ResourceClaim"),
        ]
        extra = [
            ("jobset.x-k8s.io/v1alpha2", "JobSet"),
            ("ray.io/v1", "RayJob"),
            ("ray.io/v1", "RayCluster"),
            ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"),
            ("trainer.kubeflow.org/v1alpha1", "TrainJob"),
            ("batch.volcano.sh/v1alpha1", "Job"),
            ("resource.k8s.io/v1", "ResourceClaimTemplate"),
            (KUEUE_API, "Workload"),
        ]
        query = "?" + urllib.parse.urlencode({"propagationPolicy": "Background", "gracePeriodSeconds": "0"})
        for ns in namespaces:
            for api_version, kind in [*kinds, *extra]:
                try:
                    path = api.path(api_version, kind, ns)
                except LookupError:
                    continue
                cp.request("DELETE", path + query)

        def gone() -> bool:
            for ns in namespaces:
                for api_version, kind in [("v1", "Pod"), (KUEUE_API, "Workload"), ("batch/v1", "Job")]:
                    try:
                        items = api.get(api_version, kind, ns)["items"]
                    except LookupError:
                        continue
                    for item in items:  # a finalizer Kueue or the job controller removes on its own: help it
                        if item["metadata"].get("finalizers") and item["metadata"].get("deletionTimestamp"):
                            path = api.path(api_version, kind, ns, item["metadata"]["name"])
                            cp.request(
                                "PATCH", path, {"metadata": {"finalizers": None}}, "application/merge-patch+json"
                            )
                    if items:
                        return False
            return self.quota_in_use() == {}

        api.wait_for("the namespaces emptied and Kueue's quota released", gone, timeout)

    def interrupt_pool(self, pool: str) -> None:
        """Take a pool's nodes away as Karpenter's interruption handling does on a spot interruption notice
        (kubernetes-sigs/karpenter pkg/controllers/node/termination: taint karpenter.sh/disrupted, drain through the
        eviction API, delete the node): the evicted pods get the DisruptionTarget condition."""
        cp, api = self.cp, self.api
        assert cp is not None and api is not None
        nodes = [n for n in api.get("v1", "Node")["items"] if n["metadata"]["labels"].get(POOL_LABEL) == pool]
        for n in nodes:
            taints = [*(n["spec"].get("taints") or []), {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]
            cp.request(
                "PATCH",
                f"/api/v1/nodes/{n['metadata']['name']}",
                {"spec": {"taints": taints, "unschedulable": True}},
                "application/merge-patch+json",
            )
        names = {n["metadata"]["name"] for n in nodes}
        for p in api.get("v1", "Pod")["items"]:
            if p["spec"].get("nodeName") in names:
                meta = p["metadata"]
                status, body = cp.request(
                    "POST",
                    f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/eviction",
                    {
                        "apiVersion": "policy/v1",
                        "kind": "Eviction",
                        "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
                    },
                )
                if status >= 300:
                    raise ControlPlaneError(f"evicting {meta['namespace']}/{meta['name']}: {status} {body[:300]}")

        def drained() -> bool:
            """The evicted pods gone before the nodes go, as Karpenter waits for the drain. The kubelet's part on a
            deleted pod: its containers stop and it turns Failed (kwok deletes it, but the Job controller's
            tracking finalizer holds it until the Job has counted it as terminated)."""
            left = [p for p in api.get("v1", "Pod")["items"] if p["spec"].get("nodeName") in names]
            for p in left:
                meta = p["metadata"]
                if meta.get("deletionTimestamp") and p.get("status", {}).get("phase") not in ("Failed", "Succeeded"):
                    cp.request(
                        "PATCH",
                        f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/status",
                        {"status": {"phase": "Failed"}},
                        "application/merge-patch+json",
                    )
            return not left

        api.wait_for(f"{pool}'s nodes drained", drained, 60)
        for name in names:
            cp.request("DELETE", f"/api/v1/nodes/{name}")

    def live(self):
        """The cluster's Kueue workloads as ``gpu-platform explain --context`` reads them (``live.parse`` of the
        same list kubectl returns)."""
        from components.explain import live

        items = self.api.get(KUEUE_API, "Workload")["items"]  # type: ignore[union-attr]
        return live.parse(items, f"the {self.stack} test cluster")

    def quota_in_use(self) -> dict[str, dict[str, dict[str, int]]]:
        """ClusterQueue -> flavor -> resource -> reserved units, from each ClusterQueue's status (zeros left out)."""
        out: dict[str, dict[str, dict[str, int]]] = {}
        if not self.plan.addons["kueue"].enabled:
            return out
        for cq in self.api.get(KUEUE_API, "ClusterQueue")["items"]:  # type: ignore[union-attr]
            for f in cq.get("status", {}).get("flavorsReservation", []) or []:
                for r in f.get("resources", []):
                    n = _quantity(r.get("total", "0"))
                    if n:
                        out.setdefault(cq["metadata"]["name"], {}).setdefault(f["name"], {})[r["name"]] = n
        return out


def _quantity(q: str) -> int:
    """A Kubernetes quantity as an integer count (GPU units are whole; cpu/memory are not compared here)."""
    q = str(q)
    units = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
    for suffix, mult in sorted(units.items(), key=lambda kv: -len(kv[0])):
        if q.endswith(suffix):
            return int(float(q[: -len(suffix)]) * mult)
    if q.endswith("m"):
        return int(float(q[:-1]) / 1000)
    return int(float(q))


def load_docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]
