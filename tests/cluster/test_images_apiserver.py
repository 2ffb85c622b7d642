"""Image delivery's objects (issue 39.5) on a real kube-apiserver 1.35: the pre-pullers, their namespace, Spegel's
namespace, and the Karpenter objects a stack with images renders (an EC2NodeClass whose data volume boots from a
snapshot, nodeadm user data keeping unpacked layers for Spegel), under the upstream CRDs with their CEL rules.

What the server says is the verdict: each object is accepted, none of its fields is pruned (a field the CRD or
the built-in schema does not know is dropped silently on apply; here every rendered field must come back), the
pre-puller's pod passes Pod Security ``restricted`` in its namespace as the server enforces it (and the same pod
without its security context is refused there, so the admission is live), and the EC2NodeClass CRD's rule that a
volume initialization rate needs a snapshot is the server's, not only the rendering's.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from apply import apply_docs, install_crds, levels
from cluster_stacks import stack_file_config
from controlplane import ControlPlane
from probes import Api

from components.cli.synth import render

# stacks with an image section: pull-through with a snapshot on a managed group and pre-pullers (prod-aws), peer with
# a snapshot on a Karpenter pool and nodeadm user data (coverage-aws), Artifact Registry with a pre-puller (prod-gcp)
STACKS = ("prod-aws", "coverage-aws", "prod-gcp")
PRE_PULL_NAMESPACE = "gpu-platform-images"
KARPENTER_GROUPS = {"karpenter.sh", "karpenter.k8s.aws"}


def _image_objects(doc: dict[str, Any]) -> bool:
    """The objects image delivery renders or shapes: its namespaces and DaemonSets, and the Karpenter objects (their
    EC2NodeClasses carry the snapshot volume and the nodeadm user data)."""
    meta = doc["metadata"]
    group = doc["apiVersion"].split("/")[0]
    if group in KARPENTER_GROUPS:
        return True
    if doc["kind"] == "Namespace":
        return meta["name"] in (PRE_PULL_NAMESPACE, "spegel")
    return meta.get("namespace") == PRE_PULL_NAMESPACE


@pytest.fixture(scope="module", params=STACKS)
def applied(request):
    stack = request.param
    rendering = render(stack, stack_file_config(stack))
    docs = [[d for d in level if _image_objects(d)] for level in levels(rendering)]
    docs = [level for level in docs if level]
    assert any(d["kind"] == "DaemonSet" for level in docs for d in level), f"{stack} renders a pre-puller"
    with ControlPlane(f"images-{stack}") as cp:
        install_crds(cp, KARPENTER_GROUPS)
        for level in docs:
            apply_docs(cp, level)
        yield stack, Api(cp), [d for level in docs for d in level]


def _missing(rendered: Any, stored: Any, at: str = "") -> list[str]:
    """Paths of ``rendered`` that ``stored`` lacks or holds differently (the server may add defaults, not drop)."""
    if isinstance(rendered, dict):
        if not isinstance(stored, dict):
            return [at or "."]
        return [p for k, v in rendered.items() for p in _missing(v, stored.get(k, _ABSENT), f"{at}.{k}")]
    if isinstance(rendered, list):
        if not isinstance(stored, list) or len(stored) != len(rendered):
            return [at]
        return [p for n, v in enumerate(rendered) for p in _missing(v, stored[n], f"{at}[{n}]")]
    return [] if stored == rendered else [f"{at}: {rendered!r} stored as {stored!r}"]


_ABSENT = object()


def test_every_field_of_the_image_objects_is_stored(applied):
    stack, api, docs = applied
    wrong = []
    for doc in docs:
        meta = doc["metadata"]
        stored = api.get(doc["apiVersion"], doc["kind"], meta.get("namespace"), meta["name"])
        body = {k: v for k, v in doc.items() if k not in ("apiVersion", "kind")}
        wrong += [f"{doc['kind']} {meta['name']}: {p}" for p in _missing(body, stored)]
    assert wrong == [], f"{stack}: the server dropped or changed {wrong[:5]}"


def test_the_snapshot_data_volume_and_spegels_user_data_reach_the_server(applied):
    """The EC2NodeClass of a pool whose imageCache names a snapshot holds it on the server, with the rate."""
    stack, api, _ = applied
    pools = {p["name"]: p for p in stack_file_config(stack)["gpu-platform:nodePools"]}
    snapshots = {p["imageCache"]["snapshotId"] for p in pools.values() if (p.get("imageCache") or {}).get("snapshotId")}
    classes = api.get("karpenter.k8s.aws/v1", "EC2NodeClass")["items"] if stack != "prod-gcp" else []
    stored = {b["ebs"].get("snapshotID") for c in classes for b in c["spec"].get("blockDeviceMappings", [])}
    karpenter_pools = {p["name"] for p in pools.values() if p.get("provisioner") == "karpenter"}
    with_snapshot = {n for n in karpenter_pools if (pools[n].get("imageCache") or {}).get("snapshotId")}
    if not with_snapshot:
        pytest.skip(f"{stack}: no Karpenter pool boots from a snapshot")
    assert {pools[n]["imageCache"]["snapshotId"] for n in with_snapshot} <= stored & snapshots
    if stack_file_config(stack)["gpu-platform:images"].get("mirror") == "peer":
        assert any("discard_unpacked_layers = false" in c["spec"].get("userData", "") for c in classes)


def test_the_pre_pullers_pod_passes_pod_security_restricted_on_the_server(applied):
    stack, api, docs = applied
    ns = api.get("v1", "Namespace", None, PRE_PULL_NAMESPACE)
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    pullers = [d for d in docs if d["kind"] == "DaemonSet"]
    for ds in pullers:
        # the template as the server stored it (the rendering's numbers are JSON floats, which kubectl converts)
        stored = api.get("apps/v1", "DaemonSet", PRE_PULL_NAMESPACE, ds["metadata"]["name"])
        spec = stored["spec"]["template"]["spec"]
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe-prepull"}, "spec": spec}
        verdict = api.dry_run(pod, PRE_PULL_NAMESPACE)
        assert verdict.allowed, f"{stack} {ds['metadata']['name']}: {verdict}"
        loose = copy.deepcopy(pod)
        del loose["spec"]["securityContext"]
        for c in [*loose["spec"]["initContainers"], *loose["spec"]["containers"]]:
            del c["securityContext"]
        verdict = api.dry_run(loose, PRE_PULL_NAMESPACE)
        assert not verdict.allowed and "restricted" in verdict.message, verdict


def test_a_volume_initialization_rate_without_a_snapshot_is_refused_by_the_crd(applied):
    """karpenter v1.14.1 EC2NodeClass CRD: volumeInitializationRate only with a snapshotID (its CEL rule)."""
    stack, api, docs = applied
    classes = [d for d in docs if d["kind"] == "EC2NodeClass"]
    with_rate = [
        c
        for c in classes
        if any("volumeInitializationRate" in b["ebs"] for b in c["spec"].get("blockDeviceMappings", []))
    ]
    if not with_rate:
        pytest.skip(f"{stack}: no EC2NodeClass restores a snapshot")
    c = with_rate[0]
    broken = copy.deepcopy(c)
    broken["metadata"]["name"] = "probe-no-snapshot"
    for b in broken["spec"]["blockDeviceMappings"]:
        b["ebs"].pop("snapshotID", None)
    verdict = api.dry_run(broken)
    assert not verdict.allowed and "snapshotID" in verdict.message, verdict
    assert api.dry_run({**copy.deepcopy(c), "metadata": {"name": "probe-with-snapshot"}}).allowed
