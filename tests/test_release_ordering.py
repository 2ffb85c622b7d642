"""Every object a Helm release's values name is created before the release (in its ``dependsOn``).

Found generically: walk each release's values for strings equal to the name of a Kubernetes object the
same stack renders in the release's namespace or cluster-wide (ConfigMaps, Secrets, quotas, priority
classes, ...), for every release of every shipped stack. A chart started before its ConfigMap exists
crash-loops or, worse, comes up with its defaults (the GPU Operator's MIG manager without the
mig-parted layout).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from conftest import STACKS, rendered

from components.explain.rendering import is_manifest

# Kinds a chart's values refer to by name (a ClusterQueue or Namespace that happens to share the cluster's
# name is not a reference).
REFERENCED_KINDS = {"ConfigMap", "Secret", "ResourceQuota", "PriorityClass", "ServiceAccount", "PersistentVolumeClaim"}


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _waits_for(r, name: str) -> set[str]:
    """Everything the resource named ``name`` waits for, directly or through what it waits for."""
    by_name = {x.name: x for x in r.resources}
    seen: set[str] = set()
    todo = list(by_name[name].depends_on)
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo.extend(by_name[n].depends_on if n in by_name else [])
    return seen


def _named_objects(r, release) -> list[tuple[str, str]]:
    """(record name, kind/name) of rendered objects the release's values name."""
    namespace = release.inputs.get("namespace")
    objects: dict[str, list] = {}
    for x in r.resources:
        if not is_manifest(x) or x.inputs["kind"] not in REFERENCED_KINDS:
            continue
        meta = x.inputs["metadata"]
        if meta.get("namespace") in (None, namespace) and release.name not in x.depends_on:
            objects.setdefault(meta["name"], []).append(x)
    named = {s for s in _strings(release.inputs.get("values", {})) if s in objects}
    return [(x.name, f"{x.inputs['kind']}/{n}") for n in sorted(named) for x in objects[n]]


@pytest.mark.parametrize("stack", STACKS)
def test_every_object_a_release_names_exists_before_it(stack):
    r = rendered(stack)
    assert r.releases, stack
    missing = []
    for release in r.releases:
        waits = _waits_for(r, release.name)
        for record, what in _named_objects(r, release):
            if record not in waits:
                missing.append(f"{release.name} -> {what} ({record})")
    assert missing == [], stack


def test_the_gpu_operator_waits_for_the_mig_parted_config_where_it_is_named():
    """The generic walk finds it: prod-aws's mixed MIG layouts live in the mig-parted-config ConfigMap."""
    r = rendered("prod-aws")
    release = r.find("kubernetes:helm.sh/v3:Release", "gpu-operator")
    assert ("mig-parted-config", "ConfigMap/mig-parted-config") in _named_objects(r, release)
    assert "mig-parted-config" in _waits_for(r, "gpu-operator")
