"""The package's program under the real Pulumi engine and kubernetes provider, on a real kube-apiserver 1.35
(issue 27): up, a preview that changes nothing, adding a tenant previews as exactly its new resources, outputs
with the synth's keys, and destroy after the README's unprotect step.

The stack is `local` with its add-ons off: every Helm chart would have to come from a registry (this machine
reaches none) and the charts' webhooks would make the server dial pod addresses; with the add-ons off the
program still registers the platform's own objects (namespaces, quotas, LimitRanges, PriorityClasses, the
priority-ceiling policy, the cost record) through the real provider. Expected sets come from the offline synth
of the same stack file: the engine must plan exactly what the synth shows (plus its Stack resource).
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
from engine import Engine, record_changes, state_urns

from components.cli.synth import render

STACK = "engine"
PROJECT = "gpu-platform"


def _config(kubeconfig: str, tenants: list[dict[str, Any]] | None = None, protect: bool = True) -> dict[str, Any]:
    """stacks/Pulumi.local.yaml, pointed at the test cluster's kubeconfig, add-ons off."""
    from cluster_stacks import stack_file_config

    cfg = stack_file_config("local")
    cfg["gpu-platform:cluster"] = {"kubeconfig": kubeconfig}
    cfg["gpu-platform:addons"] = {"gpuOperator": False, "dcgm": False, "kueue": False, "volcano": False}
    cfg["gpu-platform:monitoring"] = {"prometheus": "none"}
    for pool in cfg["gpu-platform:nodePools"]:
        pool.pop("sharing", None)  # MPS is the GPU Operator's, which is off
    if tenants is not None:
        cfg["gpu-platform:tenants"] = tenants
    if not protect:
        cfg["gpu-platform:protect"] = {"tenantNamespaces": False}
    return cfg


def _synth_urns(cfg: dict[str, Any]) -> set[str]:
    return {r.urn for r in render(STACK, copy.deepcopy(cfg)).resources}


def _synth_changed(before: dict[str, Any], after: dict[str, Any]) -> set[str]:
    """URNs in both renders whose inputs differ: what the engine must update, nothing else."""
    old = {r.urn: r.inputs for r in render(STACK, copy.deepcopy(before)).resources}
    new = {r.urn: r.inputs for r in render(STACK, copy.deepcopy(after)).resources}
    return {u for u in old.keys() & new.keys() if old[u] != new[u]}


@pytest.fixture(scope="module")
def engine():
    """A control plane, an engine, and the stack deployed once: every test below reads or previews it and
    leaves it as it was, so none depends on another having run first."""
    from controlplane import ControlPlane

    with ControlPlane("engine") as cp:
        eng = Engine()
        try:
            cfg = _config(str(cp.kubeconfig))
            stack = eng.stack(STACK, cfg)
            up = stack.up(color="never")
            yield {"cp": cp, "engine": eng, "stack": stack, "config": cfg, "up": up}
            dials = cp.dials_outside_loopback()
            assert dials == [], dials[:3]
        finally:
            eng.close()


def test_up_creates_exactly_what_the_synth_renders(engine):
    stack, cfg, cp = engine["stack"], engine["config"], engine["cp"]
    assert engine["up"].summary.result == "succeeded"
    assert state_urns(stack) == _synth_urns(cfg)
    # and the objects are on the server
    assert cp.kubectl("get", "namespace", "dev", "-o", "name").stdout.strip() == "namespace/dev"
    quota = json.loads(cp.kubectl("get", "resourcequota", "-n", "dev", "gpu-quota", "-o", "json").stdout)
    assert quota["spec"]["hard"]["requests.nvidia.com/gpu"] == "1"  # local: dev's 1 L4, whole (sharing off)


def test_a_preview_right_after_up_changes_nothing(engine):
    preview = engine["stack"].preview(color="never")
    assert set(preview.change_summary) == {"same"}, preview.change_summary


def test_outputs_have_the_synths_keys(engine):
    out = {k: v.value for k, v in engine["stack"].outputs().items()}
    synth = render(STACK, copy.deepcopy(engine["config"])).outputs
    assert sorted(out) == sorted(synth)
    for key in ("karpenter", "monitoring"):  # objects of nulls: kept by the engine, where a null was dropped
        assert sorted(out[key]) == sorted(synth[key]), key


def test_adding_a_tenant_previews_as_exactly_its_new_resources(engine):
    stack, cfg, cp = engine["stack"], engine["config"], engine["cp"]
    more = copy.deepcopy(cfg)
    more["gpu-platform:tenants"] = [*cfg["gpu-platform:tenants"], {"name": "dev2", "gpuQuota": {"workstation": 0}}]
    engine["engine"].stack(STACK, more)  # rewrites the stack file
    ops: dict[str, list[str]] = {}
    preview = stack.preview(color="never", on_event=record_changes(ops))
    new = _synth_urns(more) - _synth_urns(cfg)
    assert new and all(re.search(r"::dev2-", u) for u in new), sorted(new)
    # the new tenant's objects are created; the only update is the cost record, whose per-tenant figures now
    # list it (the synth shows the same: its inputs are the only ones that change); nothing is replaced
    changed = _synth_changed(cfg, more)
    assert [u.rsplit("::", 1)[1] for u in changed] == ["gpu-platform-cost"]
    assert {op: sorted(u) for op, u in ops.items()} == {"create": sorted(new), "update": sorted(changed)}
    assert set(preview.change_summary) == {"same", "create", "update"}
    engine["engine"].stack(STACK, cfg)  # back to the deployed stack file
    assert cp  # the cluster is unchanged by a preview


def test_destroy_completes_after_the_readme_unprotect_step(engine):
    """On a server of its own (the module's stack stays deployed for the other tests): refused while tenant
    namespaces are protected, then the README's step (protect.tenantNamespaces: false, pulumi up) and destroy."""
    from controlplane import ControlPlane

    with ControlPlane("destroy") as cp:
        cfg = _config(str(cp.kubeconfig))
        stack = engine["engine"].stack("destroy", cfg)
        assert stack.up(color="never").summary.result == "succeeded"
        with pytest.raises(Exception, match="protect"):
            stack.destroy(color="never")
        engine["engine"].stack("destroy", {**cfg, "gpu-platform:protect": {"tenantNamespaces": False}})
        assert stack.up(color="never").summary.result == "succeeded"
        assert stack.destroy(color="never").summary.result == "succeeded"
        assert state_urns(stack) == set()
        proc = cp.kubectl("get", "namespace", "dev", "-o", "name", check=False)
        assert proc.returncode != 0 and "NotFound" in proc.stderr
        assert cp.dials_outside_loopback() == []


def test_turning_on_mutable_config_maps_updates_the_provider_in_place(engine, monkeypatch):
    """Day 2 of this very change: a stack deployed with the provider options of before (server-side apply only)
    previews the new options as an update of the provider, replacing nothing (pulumi-kubernetes DiffConfig
    replaces the provider, and every object with it, only when the cluster's identity changes)."""
    from controlplane import ControlPlane

    from components.render import k8s

    with ControlPlane("day2") as cp:  # its own server: cluster-scoped objects (PriorityClasses) would collide
        cfg = _config(str(cp.kubeconfig))
        monkeypatch.setattr(k8s, "PROVIDER_OPTIONS", {"enable_server_side_apply": True})
        day2 = engine["engine"].stack("day2", cfg)
        assert day2.up(color="never").summary.result == "succeeded"
        monkeypatch.setattr(
            k8s, "PROVIDER_OPTIONS", {"enable_server_side_apply": True, "enable_config_map_mutable": True}
        )
        ops: dict[str, list[str]] = {}
        day2.preview(color="never", on_event=record_changes(ops, field="type"))
        assert ops == {"update": ["pulumi:providers:kubernetes"]}
        assert cp.dials_outside_loopback() == []


def test_removing_a_tenant_is_refused_and_deletes_nothing_until_the_unprotect_step(engine):
    """Day 2 on a server of its own: a tenant dropped from the stack file makes `pulumi up` fail with the engine's
    own message (the README quotes it), and its namespace, quota and LimitRange all stay (the quota and LimitRange
    are protected too: the engine deletes them first). After the README's step, the removal goes through."""
    from controlplane import ControlPlane

    with ControlPlane("remove") as cp:
        base = _config(str(cp.kubeconfig))
        two = {**base, "gpu-platform:tenants": [*base["gpu-platform:tenants"], {"name": "dev2", "gpuQuota": {}}]}
        stack = engine["engine"].stack("remove", two)
        assert stack.up(color="never").summary.result == "succeeded"

        def left() -> str:
            return cp.kubectl(
                "get",
                "namespace/dev2",
                "resourcequota/gpu-quota",
                "limitrange/container-defaults",
                "-n",
                "dev2",
                "-o",
                "name",
                check=False,
            ).stdout

        before = left()
        assert before.split() == ["namespace/dev2", "resourcequota/gpu-quota", "limitrange/container-defaults"]
        engine["engine"].stack("remove", base)
        with pytest.raises(Exception) as err:
            stack.up(color="never")
        message = " ".join(str(err.value).split())
        assert re.search(r'::dev2-(namespace|gpu-quota|defaults)" cannot be deleted because it is protected', message)
        assert left() == before
        # the README's step: protect off while the tenant is still in the file, pulumi up, then remove it
        engine["engine"].stack("remove", {**two, "gpu-platform:protect": {"tenantNamespaces": False}})
        assert stack.up(color="never").summary.result == "succeeded"
        engine["engine"].stack("remove", {**base, "gpu-platform:protect": {"tenantNamespaces": False}})
        assert stack.up(color="never").summary.result == "succeeded"
        assert "namespace/dev2" not in left()
        engine["engine"].stack("remove", {**base, "gpu-platform:protect": {"tenantNamespaces": False}})
        stack.destroy(color="never")
