"""Put a rendered stack on a real API server the way the engine would: upstream CRDs first, then every rendered
object server-side, in dependency order.

Order: the records' own ``dependsOn`` (what Pulumi waits for), plus what the engine learns from outputs: a
namespaced object after its Namespace, a custom resource after its CustomResourceDefinition. Helm releases
are not installed (their charts would register webhooks the server would dial, and their controllers need
nodes): what a release brings that the platform's own objects need, its CRDs, comes from ``upstream/crds``,
byte-for-byte as upstream ships them (with their CEL rules), installed before anything else.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from controlplane import ControlPlane, ControlPlaneError

from components.explain.rendering import Rendering, is_manifest

ROOT = Path(__file__).resolve().parents[2]
UPSTREAM_CRDS = ROOT / "upstream" / "crds"
FIELD_MANAGER = "gpu-platform"


# CRDs the platform renders objects of that upstream/ (a byte copy of the shared snapshot) does not hold: kept with
# their licence under tests/fixtures (the ENIConfigs of a created EKS cluster with a pod CIDR)
FIXTURE_CRDS = [ROOT / "tests" / "fixtures" / "amazon-vpc-cni-k8s" / "eniconfigs.crd.k8s.amazonaws.com.yaml"]


def upstream_crds() -> list[dict[str, Any]]:
    """Every CRD under upstream/crds, once per name. Two upstreams ship the same CRD (the GPU Operator v26.7.0
    carries copies of the DRA driver's ComputeDomain CRDs): the first folder in name order wins, so the DRA
    driver's own (dra-driver-nvidia-gpu/) is the one installed, as on a cluster that runs that driver."""
    docs: dict[str, dict[str, Any]] = {}
    for path in [*sorted(UPSTREAM_CRDS.rglob("*.yaml")), *FIXTURE_CRDS]:
        # libyaml's loader: the pure-Python one spent about 27 s of CPU on these megabytes at every cluster start
        for doc in yaml.load_all(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                docs.setdefault(doc["metadata"]["name"], doc)
    return list(docs.values())


def _key(doc: dict[str, Any]) -> tuple[str, str, str, str]:
    meta = doc["metadata"]
    return (
        doc["apiVersion"].split("/")[0] if "/" in doc["apiVersion"] else "",
        doc["kind"],
        meta.get("namespace") or "",
        meta["name"],
    )


def levels(rendering: Rendering) -> list[list[dict[str, Any]]]:
    """The rendered manifests in dependency levels: everything in a level depends only on earlier levels."""
    namespaces = {
        r.inputs["metadata"]["name"]: r.urn
        for r in rendering.resources
        if is_manifest(r) and r.inputs["kind"] == "Namespace"
    }
    crds = {}
    for r in rendering.resources:
        if is_manifest(r) and r.inputs["kind"] == "CustomResourceDefinition":
            spec = r.inputs["spec"]
            crds[(spec["group"], spec["names"]["kind"])] = r.urn
    # the records name their dependencies by resource name (components/cli/synth.py): every record of that name
    by_name: dict[str, set[str]] = {}
    for r in rendering.resources:
        by_name.setdefault(r.name, set()).add(r.urn)
    deps: dict[str, set[str]] = {}
    for r in rendering.resources:
        d = {u for name in r.depends_on for u in by_name.get(name, ())}
        if is_manifest(r):
            ns = r.inputs["metadata"].get("namespace")
            if ns in namespaces:
                d.add(namespaces[ns])
            group = r.inputs["apiVersion"].split("/")[0] if "/" in r.inputs["apiVersion"] else ""
            if (group, r.inputs["kind"]) in crds:
                d.add(crds[(group, r.inputs["kind"])])
        d.discard(r.urn)
        deps[r.urn] = d
    depth: dict[str, int] = {}

    def level(urn: str, seen: frozenset[str] = frozenset()) -> int:
        if urn in depth:
            return depth[urn]
        if urn in seen:
            raise ValueError(f"dependency cycle through {urn}")
        depth[urn] = max((level(u, seen | {urn}) + 1 for u in deps[urn]), default=0)
        return depth[urn]

    out: dict[int, list[dict[str, Any]]] = {}
    for r in rendering.resources:
        if is_manifest(r):
            out.setdefault(level(r.urn), []).append(r.inputs)
    return [sorted(out[k], key=_key) for k in sorted(out)]


def _stream(docs: Iterable[dict[str, Any]]) -> str:
    return "\n---\n".join(json.dumps(d, sort_keys=True) for d in docs)


def apply_docs(cp: ControlPlane, docs: list[dict[str, Any]]) -> None:
    if not docs:
        return
    cp.kubectl("apply", "--server-side", f"--field-manager={FIELD_MANAGER}", "-f", "-", stdin=_stream(docs))
    crds = [d["metadata"]["name"] for d in docs if d["kind"] == "CustomResourceDefinition"]
    if crds:
        # kubectl wait fails at once ("status.conditions accessor error") on a CRD the server has not yet given a
        # status, which a loaded machine shows: wait again until the deadline
        deadline = time.monotonic() + 60
        while True:
            proc = cp.kubectl(
                "wait", "--for=condition=Established", "--timeout=60s", *(f"crd/{n}" for n in crds), check=False
            )
            if proc.returncode == 0:
                break
            if time.monotonic() > deadline or "accessor error" not in proc.stderr:
                raise ControlPlaneError(f"CRDs not established: {proc.stderr}{proc.stdout}")
            time.sleep(0.5)


def install_crds(cp: ControlPlane, groups: set[str] | None = None) -> list[str]:
    """upstream/crds on the server; ``groups``: only the CRDs of these API groups, each group whole as its chart
    installs it (the scheduler tests install what their stack and corpus use: the API server takes seconds per large
    CRD; and Kueue's TrainJob integration, for one, needs the Trainer's runtime CRDs beside TrainJob's)."""
    docs = upstream_crds()
    if groups is not None:
        docs = [d for d in docs if d["spec"]["group"] in groups]
    if not docs:
        raise ControlPlaneError(f"no CRDs under {UPSTREAM_CRDS}")
    apply_docs(cp, docs)
    return [d["metadata"]["name"] for d in docs]


def apply_rendering(cp: ControlPlane, rendering: Rendering) -> list[list[dict[str, Any]]]:
    lv = levels(rendering)
    for docs in lv:
        apply_docs(cp, docs)
    return lv


def diff(cp: ControlPlane, docs: list[dict[str, Any]]) -> str:
    """``kubectl diff --server-side``: the changes applying ``docs`` again would make ('' when none)."""
    proc = cp.kubectl(
        "diff", "--server-side", f"--field-manager={FIELD_MANAGER}", "-f", "-", stdin=_stream(docs), check=False
    )
    if proc.returncode not in (0, 1):
        raise ControlPlaneError(f"kubectl diff failed ({proc.returncode}): {proc.stderr}")
    return proc.stdout
