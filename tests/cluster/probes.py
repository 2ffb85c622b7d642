"""Requests to a real API server, answered by the server: each probe is a server-side dry-run create (it goes
through every admission plugin and policy, and stores nothing), and what the test asserts is the server's
verdict and message."""

from __future__ import annotations

import copy
import json
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

from controlplane import ControlPlane


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    status: int
    message: str
    object: dict[str, Any] | None

    def __str__(self) -> str:
        return f"{'admitted' if self.allowed else 'refused'} ({self.status}): {self.message[:300]}"


class Api:
    """The paths of kinds, from the server's own discovery."""

    def __init__(self, cp: ControlPlane) -> None:
        self.cp = cp
        self._plural: dict[tuple[str, str], tuple[str, bool]] = {}

    def _discover(self, api_version: str) -> None:
        path = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
        status, body = self.cp.request("GET", path)
        if status != 200:
            raise LookupError(f"the server does not serve {api_version}: {status} {body[:200]}")
        for res in json.loads(body)["resources"]:
            if "/" not in res["name"]:
                self._plural[(api_version, res["kind"])] = (res["name"], res["namespaced"])

    def path(self, api_version: str, kind: str, namespace: str | None, name: str | None = None) -> str:
        if (api_version, kind) not in self._plural:
            self._discover(api_version)
        plural, namespaced = self._plural[(api_version, kind)]
        base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
        ns = f"/namespaces/{namespace}" if namespaced and namespace else ""  # no namespace: all of them
        return f"{base}{ns}/{plural}" + (f"/{name}" if name else "")

    def dry_run(self, obj: dict[str, Any], namespace: str | None = None) -> Verdict:
        """CREATE ``obj`` with dryRun=All: the server's verdict."""
        obj = copy.deepcopy(obj)
        ns = namespace or obj.get("metadata", {}).get("namespace")
        if ns:
            obj.setdefault("metadata", {})["namespace"] = ns
        query = urllib.parse.urlencode({"dryRun": "All", "fieldManager": "probe"})
        status, body = self.cp.request("POST", self.path(obj["apiVersion"], obj["kind"], ns) + "?" + query, obj)
        doc = json.loads(body) if body.startswith("{") else {}
        if 200 <= status < 300:
            return Verdict(True, status, "", doc)
        return Verdict(False, status, doc.get("message", body), None)

    def get(self, api_version: str, kind: str, namespace: str | None = None, name: str | None = None) -> Any:
        status, body = self.cp.request("GET", self.path(api_version, kind, namespace, name))
        if status != 200:
            raise LookupError(f"GET {kind} {namespace}/{name}: {status} {body[:300]}")
        return json.loads(body)

    def wait_for(self, what: str, check, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what} not within {timeout}s")
            time.sleep(0.25)


# ------------------------------------------------------------------------------------------- the probes


# Pod Security 'restricted' (the strictest level a tenant can have): a probe must be refused for what it probes,
# never for how it is written.
RESTRICTED_CONTAINER = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "runAsNonRoot": True,
    "seccompProfile": {"type": "RuntimeDefault"},
}


def container(**resources: Any) -> dict[str, Any]:
    c: dict[str, Any] = {
        "name": "c",
        "image": "registry.example/probe:1",
        "securityContext": dict(RESTRICTED_CONTAINER),
    }
    if resources:
        c["resources"] = resources
    return c


def pod_spec(priority: str | None = None, **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [container()], **extra}
    if priority:
        spec["priorityClassName"] = priority
    return spec


def pod(name: str, priority: str | None = None, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {**pod_spec(priority), **spec},
    }


def template(priority: str | None) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": "probe"}}, "spec": {**pod_spec(priority), "restartPolicy": "Never"}}


def deployment(name: str, priority: str | None) -> dict[str, Any]:
    tpl = template(priority)
    tpl["spec"]["restartPolicy"] = "Always"
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "probe"}}, "template": tpl},
    }


def job(name: str, priority: str | None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"suspend": True, "template": template(priority)},
    }


def cronjob(name: str, priority: str | None) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": template(priority)}}},
    }
