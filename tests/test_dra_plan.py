"""DRA's plan (components/plan/dra.py ``DraPlan``, ``Plan.dra``): the DeviceClasses, Kueue's mappings and each
tenant's ResourceClaimTemplates, against stacks/Pulumi.dra-existing.yaml read by hand; the rendered templates
being the plan's."""

from __future__ import annotations

from conftest import manifests, rendered, stack_config

from components.cli import main as cli
from components.cli.loader import load_spec
from components.plan import plan

STACK = "dra-existing"


def _dra():
    return plan.build(load_spec(stack_config(STACK)), STACK).dra


def test_no_dra_plan_for_extended_resources():
    assert all(plan.build(load_spec(stack_config(s)), s).dra is None for s in ("dev-aws", "prod-gcp", "local"))


def test_the_dra_stack_serves_whole_gpus_and_mig_devices():
    """Pools h100 (whole H100s) and a100-mig (A100-80GB, layout 3g.40gb x2): both DeviceClasses, each counted by
    Kueue under its own quota resource."""
    d = _dra()
    assert d.device_classes == ("gpu.nvidia.com", "mig.nvidia.com")
    assert [(m["name"], tuple(m["deviceClassNames"])) for m in d.kueue_device_class_mappings] == [
        ("gpu.nvidia.com/devices", ("gpu.nvidia.com",)),
        ("mig.nvidia.com/devices", ("mig.nvidia.com",)),
    ]


def test_each_tenant_gets_a_template_per_device_of_the_pools_it_reaches():
    """research and serving have quota on h100 and a100-mig, notebooks on h100 only; tenants keep the stack's order."""
    templates = {t: list(names) for t, names in _dra().claim_templates.items()}
    assert templates == {
        "research": ["gpu-h100", "mig-a100-80gb-3g-40gb"],
        "serving": ["gpu-h100", "mig-a100-80gb-3g-40gb"],
        "notebooks": ["gpu-h100"],
    }
    mig = _dra().claim_templates["research"]["mig-a100-80gb-3g-40gb"]["spec"]["devices"]["requests"][0]["exactly"]
    assert (mig["deviceClassName"], mig["count"]) == ("mig.nvidia.com", 1)
    assert "profile == '3g.40gb'" in mig["selectors"][0]["cel"]["expression"]


def test_the_rendered_claim_templates_are_the_plans():
    got = {
        (m["metadata"]["namespace"], m["metadata"]["name"]): m["spec"]
        for m in manifests(rendered(STACK), "ResourceClaimTemplate")
    }
    want = {
        (tenant, name): plan.plain(body)
        for tenant, templates in _dra().claim_templates.items()
        for name, body in templates.items()
    }
    assert got == want


def test_the_plan_text_lists_the_templates_per_tenant():
    text = cli.plan_text(plan.build(load_spec(stack_config(STACK)), STACK))
    assert "  Kubernetes 1.34; DeviceClasses gpu.nvidia.com, mig.nvidia.com; ResourceClaimTemplates per tenant:" in text
    assert "    notebooks: gpu-h100" in text
    assert not any(line == "DRA" for line in cli.plan_text(plan.build(load_spec(stack_config("local")), "local")))
