"""The rendering record (components/explain/rendering.py): lookups by type and name, and which records count as
Kubernetes manifests (what the offline policies, the summary and the validation tests read)."""

from __future__ import annotations

import pytest
from conftest import stack_config

from components.cli.loader import load_spec
from components.explain.rendering import Record, Rendering, is_manifest


def _record(type_: str, name: str, inputs: dict) -> Record:
    return Record(type_, name, f"urn:{name}", None, None, [], inputs, custom=True)


def _rendering() -> Rendering:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}
    return Rendering(
        spec=load_spec(stack_config("local")),
        stack="local",
        resources=[
            _record("kubernetes:core/v1:Namespace", "ns-a", ns),
            _record("kubernetes:helm.sh/v3:Release", "kueue", {"chart": "kueue"}),
            _record("kubernetes:helm.sh/v3:Release", "volcano", {"chart": "volcano"}),
            _record("aws:eks/cluster:Cluster", "c", {"apiVersion": "x", "kind": "y"}),
            _record("kubernetes:core/v1:ConfigMap", "half", {"kind": "ConfigMap"}),
        ],
    )


def test_find_and_of_type_match_type_and_name():
    """Lookups need type and name both; a miss says which record is absent."""
    r = _rendering()
    assert [x.name for x in r.of_type("kubernetes:helm.sh/v3:Release")] == ["kueue", "volcano"]
    assert [x.name for x in r.releases] == ["kueue", "volcano"]
    assert r.find("kubernetes:helm.sh/v3:Release", "volcano").inputs == {"chart": "volcano"}
    with pytest.raises(KeyError) as err:
        r.find("kubernetes:core/v1:Namespace", "kueue")  # a name of another type
    assert err.value.args == ("kubernetes:core/v1:Namespace kueue not registered",)


def test_manifests_are_kubernetes_records_with_api_version_and_kind():
    """A cloud resource with apiVersion/kind-looking inputs is no manifest, nor a Kubernetes record missing
    either field (a Helm release has neither)."""
    r = _rendering()
    assert r.manifests == [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}]
    assert [is_manifest(x) for x in r.resources] == [True, False, False, False, False]


def test_a_record_defaults_to_no_resource_options():
    """A record without options is unprotected, never replaced or renamed; an empty rendering is empty."""
    x = _record("t", "n", {})
    assert (x.protect, x.retain_on_delete, x.delete_before_replace) == (False, False, False)
    assert x.ignore_changes == x.replace_on_changes == x.aliases == []
    r = Rendering(spec=load_spec(stack_config("local")), stack="s")
    assert (r.resources, r.lookups, r.unanswered_lookups, r.outputs) == ([], [], [], {})
