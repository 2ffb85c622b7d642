"""URN stability: every shipped stack's URNs against its committed snapshot (components/cli/urns.py).

Renaming or reparenting a resource gives it a new URN; in a deployed stack the engine then creates the new
one and deletes the old. These tests fail on any difference until the snapshot is regenerated, and on a URN
that disappears without an alias (or a CHANGELOG.md note) whatever the snapshot says.
"""

from __future__ import annotations

import dataclasses

import pytest
from conftest import NAMESPACE, ROOT, STACKS, render_config, rendered, stack_config

from components.cli import urns


@pytest.mark.parametrize("stack", STACKS)
def test_no_resource_of_a_deployed_stack_is_deleted_by_a_rename(stack):
    cmp = urns.compare(urns.read_snapshot(stack), rendered(stack), urns.changelog_text())
    assert not cmp.unexplained, urns.unexplained_message(stack, cmp.unexplained)


@pytest.mark.parametrize("stack", STACKS)
def test_urn_snapshot_is_exact(stack):
    """A new resource needs a snapshot update too, so every URN change is reviewed."""
    assert urns.snapshot_path(stack).exists(), f"no URN snapshot for {stack}: run {urns.REGENERATE}"
    cmp = urns.compare(urns.read_snapshot(stack), rendered(stack), urns.changelog_text())
    assert not cmp.changed, (
        f"{stack}: URNs differ from tests/snapshots/urns/{stack}.txt "
        f"(added {cmp.added}, removed {cmp.removed + cmp.unexplained}); "
        f"if intended, run {urns.REGENERATE} and commit the snapshot with the change"
    )


def test_snapshots_are_sorted_and_cover_only_shipped_stacks():
    assert sorted(p.stem for p in urns.SNAPSHOTS.glob("*.txt")) == sorted(STACKS)
    for stack in STACKS:
        lines = urns.read_snapshot(stack)
        assert lines == sorted(set(lines))
        assert all(u.startswith(f"urn:pulumi:{stack}::gpu-platform::") for u in lines)


# ------------------------------------------------------------------------------ the check itself


def _renamed_tenant_namespace(rendering, alias: str | None):
    """The rendering with research's namespace resource renamed (as a refactor might), optionally aliased."""
    out = []
    for r in rendering.resources:
        if r.type == NAMESPACE and r.name == "research-namespace":
            r = dataclasses.replace(
                r,
                name="tenant-research",
                urn=r.urn.replace("::research-namespace", "::tenant-research"),
                aliases=[alias] if alias else [],
            )
        out.append(r)
    return dataclasses.replace(rendering, resources=out)


OLD = "urn:pulumi:prod-aws::gpu-platform::gpu-platform:index:Tenancy$kubernetes:core/v1:Namespace::research-namespace"


def test_a_rename_without_alias_is_refused_and_an_alias_or_a_changelog_note_lets_it_pass():
    snapshot = urns.read_snapshot("prod-aws")
    assert OLD in snapshot
    bare = urns.compare(snapshot, _renamed_tenant_namespace(rendered("prod-aws"), None), "")
    assert bare.unexplained == [OLD]
    assert "would be deleted" in urns.unexplained_message("prod-aws", bare.unexplained)
    aliased = urns.compare(snapshot, _renamed_tenant_namespace(rendered("prod-aws"), OLD), "")
    assert aliased.unexplained == [] and aliased.removed == [OLD] and aliased.changed
    noted = urns.compare(snapshot, _renamed_tenant_namespace(rendered("prod-aws"), None), f"- `{OLD}`: merged")
    assert noted.unexplained == []


def test_an_added_resource_changes_the_snapshot():
    cfg = stack_config("dev-aws")
    cfg["gpu-platform:tenants"].append({"name": "newcomer"})
    cmp = urns.compare(urns.read_snapshot("dev-aws"), render_config(cfg, "dev-aws"), "")
    assert cmp.changed and not cmp.removed and not cmp.unexplained
    assert any(u.endswith("::newcomer-namespace") for u in cmp.added)


def test_regeneration_refuses_to_drop_an_unexplained_urn(tmp_path, monkeypatch):
    committed = urns.snapshot_path("dev-aws").read_text()
    snapshot = tmp_path / "dev-aws.txt"
    ghost = "urn:pulumi:dev-aws::gpu-platform::gpu-platform:index:Tenancy$kubernetes:core/v1:Namespace::ghost-namespace"
    snapshot.write_text(urns.snapshot_text([*urns.read_snapshot("dev-aws"), ghost]))
    monkeypatch.setattr(urns, "snapshot_path", lambda stack: tmp_path / f"{stack}.txt")
    monkeypatch.setattr(urns, "read_snapshot", lambda stack: snapshot.read_text().splitlines())
    assert urns.main(["dev-aws"]) == 1
    assert ghost in snapshot.read_text()  # left as it was
    monkeypatch.setattr(urns, "changelog_text", lambda: f"- {ghost}: tenant ghost removed on purpose")
    assert urns.main(["dev-aws"]) == 0
    assert ghost not in snapshot.read_text()
    assert snapshot.read_text() == committed


# ------------------------------------------------------------------------------ d22b537


def test_chart_namespaces_renamed_in_d22b537_keep_their_old_urns():
    """URNs rendered from d22b537^ (tests/snapshots/urns-before-d22b537.txt): each is an alias of one
    resource today, so a stack deployed before the rename moves its namespaces instead of replacing them."""
    old = [
        line
        for line in (ROOT / "tests" / "snapshots" / "urns-before-d22b537.txt").read_text().splitlines()
        if line.startswith("urn:")
    ]
    assert len(old) == 18
    for urn in old:
        stack = urn.split("::")[0].removeprefix("urn:pulumi:")
        holders = [r for r in rendered(stack).resources if urn in r.aliases]
        assert len(holders) == 1, urn
        (holder,) = holders
        # the same resource: same type and parent chain, the old '<chart>-namespace' name turned around
        assert holder.urn.rsplit("::", 1)[0] == urn.rsplit("::", 1)[0]
        old_name = urn.rsplit("::", 1)[1]
        if "Namespace" in urn:
            assert holder.name == "namespace-" + old_name.removesuffix("-namespace"), urn
        else:
            assert holder.name == "critical-pods-" + old_name.removesuffix("-critical-pods"), urn


def test_tenant_resources_carry_no_aliases_they_could_collide_with():
    # a tenant called 'kueue' has kueue-namespace under Tenancy; the chart's alias is under Kueue
    for stack in STACKS:
        for r in rendered(stack).resources:
            for a in r.aliases:
                assert a != r.urn
                assert a not in {x.urn for x in rendered(stack).resources}


def test_urns_are_the_engines_for_nested_components():
    """The engine qualifies a type with its parent's *full* type chain and never with the root stack's
    (pulumi/pulumi pkg/resource/deploy/deployment.go); the mock monitor's own URNs do neither."""
    import pulumi

    from components.cli import synth
    from components.render import program

    original = program.run

    def nested(spec):
        original(spec)
        outer = pulumi.ComponentResource("test:index:Outer", "outer")
        inner = pulumi.ComponentResource("test:index:Inner", "inner", opts=pulumi.ResourceOptions(parent=outer))
        pulumi.ComponentResource(
            "test:index:Leaf", "leaf", opts=pulumi.ResourceOptions(parent=inner, aliases=[pulumi.Alias(name="old")])
        )

    try:
        program.run = nested
        r = synth.render("local", stack_config("local"))
    finally:
        program.run = original
    leaf = r.find("test:index:Leaf", "leaf")
    assert leaf.urn == "urn:pulumi:local::gpu-platform::test:index:Outer$test:index:Inner$test:index:Leaf::leaf"
    assert leaf.aliases == ["urn:pulumi:local::gpu-platform::test:index:Outer$test:index:Inner$test:index:Leaf::old"]
    assert r.find("test:index:Outer", "outer").urn == "urn:pulumi:local::gpu-platform::test:index:Outer::outer"
