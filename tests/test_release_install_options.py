"""How the add-on releases are installed (components/render/addon.py, k8s.addon_release): into the namespace the
platform created (never Helm's own), with enough time for what each chart does on a fresh cluster, and the
scheduler releases protected."""

from __future__ import annotations

import pytest
from conftest import rendered

# seconds: the GPU Operator waits for driver containers and validators, kube-prometheus-stack for its CRDs, the
# operator's certificate Job and the first Prometheus; the others get the 10-minute default
TIMEOUTS = {
    "gpu-operator": 900,
    "kube-prometheus-stack": 900,
    "kueue": 600,
    "volcano": 600,
    "aws-efa-k8s-device-plugin": 600,
}


@pytest.mark.parametrize("name", sorted(TIMEOUTS))
def test_chart_addons_install_into_their_own_namespace_with_a_timeout(name):
    """Each release: no Helm-created namespace, its timeout, protection for schedulers, after its namespace."""
    rel = rendered("prod-aws").find("kubernetes:helm.sh/v3:Release", name)
    assert rel.inputs["createNamespace"] is False
    assert rel.inputs["timeout"] == TIMEOUTS[name]
    assert rel.inputs["compat"] == "true"
    assert rel.protect is (name in ("kueue", "volcano"))  # uninstalling a scheduler deletes every queued job
    # the platform's namespaces first; the EFA device plugin goes into kube-system, which always exists
    created = [d for d in rel.depends_on if d.startswith("namespace-")]
    assert bool(created) is (name != "aws-efa-k8s-device-plugin"), rel.depends_on


def test_objects_after_a_release_wait_for_it_and_its_gate():
    """Kueue's own objects wait for the release (its CRDs) and the webhook gate; the gate waits for the
    release."""
    r = rendered("prod-aws")
    lq = next(x for x in r.resources if x.type.endswith(":LocalQueue"))
    assert {"kueue", "kueue-webhook-ready"} <= set(lq.depends_on)
    gate = r.find("kubernetes:batch/v1:Job", "kueue-webhook-ready")
    assert "kueue" in gate.depends_on and gate.parent == "kueue"
