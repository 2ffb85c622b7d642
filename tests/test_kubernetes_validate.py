"""Every core Kubernetes object the synth writes for every shipped stack validates with
kubernetes-validate in strict mode for Kubernetes 1.33 and 1.37. (Custom resources are checked
against the upstream CRD schemas in their own tests.)"""

from __future__ import annotations

import kubernetes_validate
import pytest
from conftest import STACKS, kubernetes_schemas_parsed_once, rendered

kubernetes_schemas_parsed_once()

K8S_VERSIONS = ("1.33.0", "1.37.0")
# API groups whose schemas ship with Kubernetes itself
CORE_GROUPS = {
    "v1",
    "apps",
    "batch",
    "scheduling.k8s.io",
    "rbac.authorization.k8s.io",
    "policy",
    "networking.k8s.io",
    "storage.k8s.io",
    "admissionregistration.k8s.io",
    "coordination.k8s.io",
}


def _core(doc) -> bool:
    api = doc["apiVersion"]
    return (api.split("/")[0] if "/" in api else api) in CORE_GROUPS


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("stack", STACKS)
def test_core_objects_validate_strictly(stack, version):
    docs = [d for d in rendered(stack).manifests if _core(d)]
    assert docs, "no core objects rendered"
    for doc in docs:
        kubernetes_validate.validate(doc, version, strict=True)


def test_strict_mode_catches_a_misspelt_field():
    doc = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "x"}, "spec": {"hardd": {}}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(doc, "1.33.0", strict=True)
