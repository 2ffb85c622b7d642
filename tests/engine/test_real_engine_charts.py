"""The `local` stack with every add-on on, through the real Pulumi engine and kubernetes provider, on a real
kube-apiserver 1.35 with kube-scheduler and kwok nodes shaped like the stack's pools (issue 27): charts from the
repository itself (``chartSource: bundled``, no chart repository reachable), a preview after an `up` interrupted
between the releases and their webhook gates, `up` to the end, a preview that changes nothing, a tenant's GPU
Job running on its pool's node, and `destroy` after the README's unprotect step.

Nothing leaves loopback: service and pod addresses are in 127.0.0.0/8 (tests/cluster/controlplane.py), and the
fixture fails when any server logs a dial elsewhere. Kueue's and Volcano's webhooks, and Kueue's aggregated
visibility API, have no controller to answer them here (their pods are kwok's), so after the interrupted `up` has
shown that a preview no longer calls them, the test removes what the charts registered, as issue 27 allows, and
says which (`test_an_interrupted_up_leaves_the_charts_webhooks_registered`). An aggregated API nobody answers
is not harmless: the namespace controller cannot finish discovery, so no namespace in the cluster finishes
terminating (a destroy here hung on it until it was removed).
"""

from __future__ import annotations

import copy
import json
import time
from typing import Any

import pytest
from engine import Engine, record_changes, registered_webhooks, state_urns
from probes import RESTRICTED_CONTAINER

from components.cli.loader import load_spec
from components.cli.synth import render

STACK = "charts"
GATE_SUFFIX = "-webhook-ready"  # components/render/webhooks.py job_name: the gate Jobs' resource names


def _config(kubeconfig: str, protect: bool = True) -> dict[str, Any]:
    """stacks/Pulumi.local.yaml as committed, pointed at the test cluster, its charts from upstream/charts/."""
    from cluster_stacks import stack_file_config

    cfg = stack_file_config("local")
    cfg["gpu-platform:cluster"] = {"kubeconfig": kubeconfig}
    cfg["gpu-platform:chartSource"] = "bundled"
    if not protect:
        cfg["gpu-platform:protect"] = {"tenantNamespaces": False, "schedulerReleases": False}
    return cfg


def _synth(cfg: dict[str, Any]):
    return render(STACK, copy.deepcopy(cfg))


@pytest.fixture(scope="module")
def deployed():
    from controlplane import ControlPlane
    from nodes import stack_nodes

    with ControlPlane("charts") as cp:
        eng = Engine()
        try:
            cfg = _config(str(cp.kubeconfig))
            nodes = stack_nodes(load_spec(cfg))
            cp.start_nodes(nodes)
            stack = eng.stack(STACK, cfg)
            synth = _synth(cfg)
            gates = sorted(r.urn for r in synth.resources if r.name.endswith(GATE_SUFFIX))
            # 1. an up interrupted after the releases, before their gates: what a slow node or an image pull
            #    leaves behind (the webhooks registered, nothing answering them)
            started = time.monotonic()
            partial = stack.up(color="never", exclude=gates, exclude_dependents=True)
            partial_s = time.monotonic() - started
            partial_state = state_urns(stack)
            left = registered_webhooks(cp)
            events: dict[str, list[str]] = {}
            after_partial = stack.preview(color="never", on_event=record_changes(events))
            # 2. nothing answers the charts' webhooks here: remove them (and say so), then finish the up
            for kind, names in left.items():
                for name in names:
                    cp.kubectl("delete", kind, name)
            up = stack.up(color="never")
            yield {
                "cp": cp,
                "nodes": nodes,
                "engine": eng,
                "stack": stack,
                "config": cfg,
                "synth": synth,
                "gates": gates,
                "partial": partial,
                "partial_s": partial_s,
                "partial_state": partial_state,
                "webhooks_left": left,
                "after_partial": after_partial,
                "after_partial_ops": events,
                "up": up,
            }
            dials = cp.dials_outside_loopback()
            assert dials == [], dials[:3]
        finally:
            eng.close()


def test_an_interrupted_up_leaves_the_charts_webhooks_registered(deployed):
    """The situation issue 27 found: Kueue's and Volcano's webhook configurations exist, their gates do not."""
    assert deployed["partial"].summary.result == "succeeded"
    left = deployed["webhooks_left"]
    names = " ".join(left["validatingwebhookconfigurations"] + left["mutatingwebhookconfigurations"])
    assert "kueue" in names and "volcano" in names, left
    assert left["apiservices"] == ["v1beta1.visibility.kueue.x-k8s.io", "v1beta2.visibility.kueue.x-k8s.io"]
    state = deployed["partial_state"]
    assert state and not set(deployed["gates"]) & state


def test_a_preview_after_an_interrupted_up_works_and_plans_the_rest(deployed):
    """The preview does not dry-run the guarded objects through webhooks nobody answers (their gate annotation
    is unknown until the gate exists): it succeeds and plans exactly what the partial up left out."""
    preview = deployed["after_partial"]
    assert set(preview.change_summary) <= {"same", "create"}, preview.change_summary
    planned = set(deployed["after_partial_ops"].get("create", []))
    missing = {r.urn for r in deployed["synth"].resources} - deployed["partial_state"]
    assert planned == missing
    assert set(deployed["gates"]) <= planned


def test_up_with_the_bundled_charts_creates_exactly_what_the_synth_renders(deployed):
    cp = deployed["cp"]
    assert deployed["up"].summary.result == "succeeded"
    assert state_urns(deployed["stack"]) == {r.urn for r in deployed["synth"].resources}
    # every release is installed from its archive and deployed (Helm's release records, one per release)
    releases = json.loads(cp.kubectl("get", "secrets", "-A", "-l", "owner=helm,status=deployed", "-o", "json").stdout)
    got = sorted((s["metadata"]["namespace"], s["metadata"]["labels"]["name"]) for s in releases["items"])
    assert got == [
        ("gpu-operator", "gpu-operator"),
        ("kueue-system", "kueue"),
        ("monitoring", "kube-prometheus-stack"),
        ("volcano-system", "volcano"),
    ]


@pytest.mark.parametrize(
    ("namespace", "deployment"),
    [
        ("kueue-system", "kueue-controller-manager"),
        ("volcano-system", "volcano-scheduler"),
        ("gpu-operator", "gpu-operator"),
        ("monitoring", "kube-prometheus-stack-grafana"),
    ],
)
def test_the_controllers_run_on_the_system_node(deployed, namespace, deployment):
    """Deployments become Ready on kwok's system nodes, never on a tainted GPU node."""
    cp = deployed["cp"]
    d = json.loads(cp.kubectl("get", "deployment", "-n", namespace, deployment, "-o", "json").stdout)
    assert d["status"].get("readyReplicas", 0) == d["spec"]["replicas"] >= 1
    selector = ",".join(f"{k}={v}" for k, v in d["spec"]["selector"]["matchLabels"].items())
    pods = json.loads(cp.kubectl("get", "pods", "-n", namespace, "-l", selector, "-o", "json").stdout)["items"]
    untainted = {n["metadata"]["name"] for n in deployed["nodes"] if not n["spec"].get("taints")}
    assert untainted and {p["spec"]["nodeName"] for p in pods} <= untainted


def test_a_preview_right_after_up_changes_nothing(deployed):
    preview = deployed["stack"].preview(color="never")
    assert set(preview.change_summary) == {"same"}, preview.change_summary


def test_outputs_have_the_synths_keys(deployed):
    out = {k: v.value for k, v in deployed["stack"].outputs().items()}
    assert sorted(out) == sorted(deployed["synth"].outputs)


def test_adding_a_tenant_previews_as_exactly_what_the_synth_adds_and_changes(deployed):
    """With Kueue and Volcano installed a tenant brings its ClusterQueue and LocalQueue too: the preview creates
    exactly the URNs the synth adds, updates exactly those whose inputs the synth changes, replaces nothing."""
    cfg, eng, stack = deployed["config"], deployed["engine"], deployed["stack"]
    more = copy.deepcopy(cfg)
    more["gpu-platform:tenants"] = [*cfg["gpu-platform:tenants"], {"name": "dev2", "gpuQuota": {"workstation": 0}}]
    before = {r.urn: r.inputs for r in deployed["synth"].resources}
    after = {r.urn: r.inputs for r in _synth(more).resources}
    eng.stack(STACK, more)
    try:
        events: dict[str, list[str]] = {}
        stack.preview(color="never", on_event=record_changes(events))
    finally:
        eng.stack(STACK, cfg)
    new = set(after) - set(before)
    changed = {u for u in set(after) & set(before) if after[u] != before[u]}
    assert any(":ClusterQueue::dev2-" in u for u in new) and any(":LocalQueue::dev2-" in u for u in new), new
    assert {op: set(urns) for op, urns in events.items()} == {"create": new, **({"update": changed} if changed else {})}


def test_a_tenant_gpu_job_runs_on_its_pools_node_within_its_quota(deployed):
    """The trace through the server: a Job in tenant dev asking one unit of what the workstation pool's node
    advertises (an L4 shared by MPS, 2 replicas: nvidia.com/gpu 2 on one node), tolerating the pool's taint and
    selecting the pool, is admitted by dev's quota, bound to workstation-0 by the scheduler and completes."""
    cp = deployed["cp"]
    node = json.loads(cp.kubectl("get", "node", "workstation-0", "-o", "json").stdout)
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "2"  # 1 GPU x MPS replicas 2 (stack file)
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "dev"},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "nodeSelector": {"gpu-platform/pool": "workstation"},
                    "tolerations": [
                        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
                    ],
                    "containers": [
                        {
                            "name": "train",
                            "image": "registry.example/train:1",
                            "resources": {"limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "1"}},
                            "securityContext": dict(RESTRICTED_CONTAINER),  # tests/cluster/probes.py
                        }
                    ],
                }
            }
        },
    }
    cp.kubectl("apply", "-f", "-", stdin=json.dumps(job))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status = json.loads(cp.kubectl("get", "job", "-n", "dev", "train", "-o", "json").stdout).get("status", {})
        if status.get("succeeded"):
            break
        time.sleep(0.5)
    assert status.get("succeeded") == 1, status
    pods = json.loads(cp.kubectl("get", "pods", "-n", "dev", "-l", "job-name=train", "-o", "json").stdout)["items"]
    assert [p["spec"]["nodeName"] for p in pods] == ["workstation-0"]
    # dev's quota is its 1 GPU of the pool in the units the node advertises (MPS: 2 per GPU); a pod asking 3 is
    # refused by the server's quota admission, one asking 2 admitted (the finished Job's pod no longer counts)
    quota = json.loads(cp.kubectl("get", "resourcequota", "-n", "dev", "gpu-quota", "-o", "json").stdout)
    assert quota["spec"]["hard"]["requests.nvidia.com/gpu"] == "2"
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "over", "namespace": "dev"}}
    for units, admitted in (("3", False), ("2", True)):
        pod["spec"] = copy.deepcopy(job["spec"]["template"]["spec"])
        pod["spec"]["containers"][0]["resources"] = {
            "limits": {"nvidia.com/gpu": units},
            "requests": {"nvidia.com/gpu": units},
        }
        proc = cp.kubectl("create", "--dry-run=server", "-f", "-", stdin=json.dumps(pod), check=False)
        assert (proc.returncode == 0) is admitted, (units, proc.stderr)
        assert admitted or "exceeded quota" in proc.stderr, proc.stderr


def test_destroy_completes_after_the_readme_unprotect_step(deployed):
    """Last: protect off (tenant namespaces and the scheduler releases), up, destroy; nothing is left in state,
    the releases are uninstalled (hooks included) and the tenant namespace is gone."""
    cp, eng, stack = deployed["cp"], deployed["engine"], deployed["stack"]
    with pytest.raises(Exception, match="protect"):
        stack.destroy(color="never")
    eng.stack(STACK, _config(str(cp.kubeconfig), protect=False))
    assert stack.up(color="never").summary.result == "succeeded"
    started = time.monotonic()
    assert stack.destroy(color="never").summary.result == "succeeded"
    assert time.monotonic() - started < 600
    assert state_urns(stack) == set()
    releases = cp.kubectl("get", "secrets", "-A", "-l", "owner=helm", "-o", "name").stdout.split()
    assert releases == []
