"""Every custom resource of every shipped stack against its upstream schema, found generically.

The per-kind tests (test_kueue, test_karpenter, test_volcano, test_monitoring ...) check their own kinds; this one
makes sure no kind slips through: every rendered object whose apiVersion is not a core Kubernetes group must have
a strict schema in upstream/ (or, for the two Kueue kinds upstream/ lacks, the closed fixture schema), and must
validate against it. A new kind without a schema fails here until its upstream schema is added.
"""

from __future__ import annotations

import functools
import json

import pytest
from conftest import STACKS, UPSTREAM, rendered, strict_crd_schema, upstream_yaml_docs
from jsonschema import Draft7Validator
from test_kueue import _closed_validator

# Groups the API server itself serves: kubernetes-validate checks those (tests/test_kubernetes_validate.py).
CORE_GROUPS = {
    "v1",
    "apps",
    "batch",
    "rbac.authorization.k8s.io",
    "admissionregistration.k8s.io",
    "policy",
    "scheduling.k8s.io",
    "resource.k8s.io",
    "networking.k8s.io",
    "storage.k8s.io",
    "apiextensions.k8s.io",
}
FIXTURE_KINDS = {("AdmissionCheck", "kueue.x-k8s.io/v1beta2"), ("ProvisioningRequestConfig", "kueue.x-k8s.io/v1beta2")}


def _group(api_version: str) -> str:
    return api_version.split("/")[0] if "/" in api_version else "v1"


@functools.cache
def _strict(kind: str, api_version: str) -> Draft7Validator | None:
    """The snapshot's strict schema of the kind, else the CRD this project recorded in upstream/crds/ (byte for
    byte, closed to unknown fields here)."""
    group, version = api_version.split("/")
    found = sorted(UPSTREAM.glob(f"*/{kind.lower()}.{group}.{version}.strict.json"))
    if found:
        return Draft7Validator(json.loads(found[0].read_text()))
    for path in sorted((UPSTREAM / "crds").glob("*/*.yaml")):
        (crd,) = upstream_yaml_docs(path)
        if crd["spec"]["group"] != group or crd["spec"]["names"]["kind"] != kind:
            continue
        for v in crd["spec"]["versions"]:
            if v["name"] == version:
                return Draft7Validator(strict_crd_schema(v["schema"]["openAPIV3Schema"]))
    return None


def _custom(stack: str) -> list[dict]:
    return [m for m in rendered(stack).manifests if _group(m["apiVersion"]) not in CORE_GROUPS]


@pytest.mark.parametrize("stack", STACKS)
def test_every_custom_resource_validates_against_its_upstream_schema(stack):
    docs = _custom(stack)
    assert docs, "every stack renders Kueue or monitoring objects"
    for doc in docs:
        key = (doc["kind"], doc["apiVersion"])
        validator = _closed_validator(doc["kind"]) if key in FIXTURE_KINDS else _strict(*key)
        assert validator is not None, f"no upstream schema for {key}: add it under upstream/"
        errors = [f"{'.'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(doc)]
        assert errors == [], f"{stack} {doc['kind']} {doc['metadata'].get('name')}"


def test_a_misplaced_field_in_any_custom_resource_is_caught():
    doc = next(d for d in _custom("prod-aws") if d["kind"] == "ClusterQueue")
    bad = {**doc, "spec": {**doc["spec"], "preemtion": {}}}  # misspelt: the field is `preemption`
    assert list(_strict(doc["kind"], doc["apiVersion"]).iter_errors(bad))
