"""The offline policy runner (policies/offline.py) on small hand-built inputs: the subjects it makes of plain
manifests, the config it reconciles, how it calls policies and records what they report, and the exact report
text `gpu-platform synth|check` prints and writes.

Every expected value is written out by hand from the documented behaviour (module docstring, the Pulumi CLI's
``--policy-pack-config`` format, pulumi_policy's report_violation contract); nothing is taken from a run.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ResourceValidationPolicy,
    StackValidationPolicy,
)

from policies import offline

JOB = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "namespace": "ml"}, "spec": {}}
NS = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}
JOB_TYPE = "kubernetes:batch/v1:Job"
NS_TYPE = "kubernetes:core/v1:Namespace"


def _resource(name: str, validate, level=EnforcementLevel.MANDATORY, schema=None) -> ResourceValidationPolicy:
    return ResourceValidationPolicy(name, name, validate, level, config_schema=schema)


def _stack(name: str, validate, level=EnforcementLevel.ADVISORY) -> StackValidationPolicy:
    return StackValidationPolicy(name, name, validate, level)


def _flag_jobs(args, report):
    if args.resource_type == JOB_TYPE:
        report("x | y\nz")


def _stack_note(args, report):
    report("stack-wide")


FLAG_JOBS = _resource("flag-jobs", _flag_jobs)
STACK_NOTE = _stack("stack-note", _stack_note)


# ---------------------------------------------------------------------------------------- subjects


def test_subjects_from_manifests_name_type_and_urn():
    """A namespaced object is named namespace/name and gets the URN pulumi_kubernetes would give it in the stack;
    a cluster-scoped one is named by its name alone. Policies and the report identify resources by these."""
    job, ns = offline.subjects_from_manifests([JOB, NS], "s")
    assert (job.type, job.name, job.urn) == (JOB_TYPE, "ml/train", f"urn:pulumi:s::gpu-platform::{JOB_TYPE}::ml/train")
    assert job.props is JOB and job.parent is None and job.provider is None and job.dependencies == ()
    assert (ns.type, ns.name, ns.urn) == (NS_TYPE, "a", f"urn:pulumi:s::gpu-platform::{NS_TYPE}::a")


def test_subjects_from_manifests_default_stack_and_nameless_objects():
    """The default stack is "manifests"; an object without metadata (or with empty fields) gets an empty name
    rather than "None" parts."""
    (s,) = offline.subjects_from_manifests([{"apiVersion": "v1", "kind": "ConfigMap"}])
    assert (s.name, s.urn) == ("", "urn:pulumi:manifests::gpu-platform::kubernetes:core/v1:ConfigMap::")
    (s,) = offline.subjects_from_manifests(
        [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "", "name": "c"}}]
    )
    assert s.name == "c"
    (s,) = offline.subjects_from_manifests([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "n"}}])
    assert s.name == "n"


def test_subjects_from_manifests_skip_what_is_not_a_kubernetes_object():
    """YAML streams carry lists, scalars and partial documents: only mappings with apiVersion and kind count."""
    docs = [["a"], "text", None, {"kind": "Pod"}, {"apiVersion": "v1"}, NS]
    assert [s.name for s in offline.subjects_from_manifests(docs)] == ["a"]


def test_evaluate_manifests_keeps_the_stack_and_runs_the_workload_policies_by_default():
    """evaluate_manifests reports under the stack it is given ("manifests" by default) and, unless told
    otherwise, runs exactly the workload policies examples/ must pass."""
    report = offline.evaluate_manifests([NS])
    assert report.stack == "manifests" and report.resource_count == 1
    assert list(report.settings) == [
        "gpu-workload-priority-class",
        "gpu-job-gang-scheduling",
        "gpu-container-hardening",
    ]
    assert offline.evaluate_manifests([NS], stack="team-a").stack == "team-a"
    report = offline.evaluate_manifests([JOB, NS], [FLAG_JOBS], {"flag-jobs": "advisory"}, "s")
    assert (report.stack, report.resource_count) == ("s", 2)
    assert [v.as_dict() for v in report.violations] == [
        {
            "policy": "flag-jobs",
            "enforcementLevel": "advisory",
            "resourceType": JOB_TYPE,
            "resourceName": "ml/train",
            "message": "x | y\nz",
        }
    ]


# ---------------------------------------------------------------------------------------- the report


def _report(config=None, config_source=None) -> offline.Report:
    subjects = offline.subjects_from_manifests([JOB, NS], "t")
    return offline.run(subjects, [FLAG_JOBS, STACK_NOTE], config, "t", config_source)


def test_markdown_with_one_mandatory_and_one_advisory_violation():
    """The exact report section: summary line (singular "violation"), per-policy table, then every violation with
    its resource, table pipes escaped and newlines flattened so a message cannot break the table."""
    assert _report().markdown() == (
        "Policy pack `gpu-platform` (2 policies) evaluated offline against 2 resources: "
        "**1 mandatory violation (synth exits 1)**, 1 advisory.\n"
        "\n"
        "| policy | level | violations |\n"
        "|---|---|---|\n"
        "| flag-jobs | mandatory | 1 |\n"
        "| stack-note | advisory | 1 |\n"
        "\n"
        "| level | policy | resource | message |\n"
        "|---|---|---|---|\n"
        "| mandatory | flag-jobs | `kubernetes:batch/v1:Job` ml/train | x \\| y z |\n"
        "| advisory | stack-note | (stack) | stack-wide |\n"
    )


def test_markdown_without_violations_names_the_config_source():
    """No violations: "no mandatory violations", no violation table; the config file is named when one was
    given; a disabled policy is listed with level disabled and 0."""
    report = _report({"flag-jobs": "disabled", "stack-note": "disabled"}, "cfg.json")
    assert report.sections == {
        "Policy report": (
            "Policy pack `gpu-platform` (2 policies) evaluated offline with config `cfg.json` against 2 resources: "
            "no mandatory violations, 0 advisory.\n"
            "\n"
            "| policy | level | violations |\n"
            "|---|---|---|\n"
            "| flag-jobs | disabled | 0 |\n"
            "| stack-note | disabled | 0 |\n"
        )
    }


def test_markdown_counts_mandatory_violations_in_the_plural_and_shows_remediate_as_configured():
    """Two mandatory findings read "2 mandatory violations"; a remediate policy's findings count as mandatory
    (as the engine reports them) while its table row shows the configured level."""
    both = _resource("both", lambda args, report: report("m"))
    report = offline.run(offline.subjects_from_manifests([JOB, NS]), [both], {"both": "remediate"})
    assert report.markdown().splitlines()[0] == (
        "Policy pack `gpu-platform` (1 policies) evaluated offline against 2 resources: "
        "**2 mandatory violations (synth exits 1)**, 0 advisory."
    )
    assert "| both | remediate | 2 |" in report.markdown().splitlines()
    assert [v.enforcement_level for v in report.mandatory_violations] == ["mandatory", "mandatory"]
    assert report.advisory_violations == []


def test_report_json_is_every_violation_sorted():
    """policy-report.json: the violations as camelCase objects, indented, keys sorted, newline-terminated."""
    assert _report().json() == (
        "[\n"
        "  {\n"
        '    "enforcementLevel": "mandatory",\n'
        '    "message": "x | y\\nz",\n'
        '    "policy": "flag-jobs",\n'
        '    "resourceName": "ml/train",\n'
        '    "resourceType": "kubernetes:batch/v1:Job"\n'
        "  },\n"
        "  {\n"
        '    "enforcementLevel": "advisory",\n'
        '    "message": "stack-wide",\n'
        '    "policy": "stack-note",\n'
        '    "resourceName": null,\n'
        '    "resourceType": null\n'
        "  }\n"
        "]\n"
    )


def test_violation_line_and_sort_key():
    """The stderr line names the resource (type and name) or "stack"; violations sort by policy, type, name,
    message with None as the empty string."""
    on_resource = offline.Violation("p", "advisory", JOB_TYPE, "ml/train", "m")
    on_stack = offline.Violation("p", "mandatory", None, None, "m")
    assert on_resource.line() == f"policy advisory p: {JOB_TYPE} ml/train: m"
    assert on_stack.line() == "policy mandatory p: stack: m"
    assert on_stack.sort_key() == ("p", "", "", "m")
    assert on_resource.sort_key() == ("p", JOB_TYPE, "ml/train", "m")


# ---------------------------------------------------------------------------------------- running


def test_run_dedupes_and_sorts_violations_and_maps_stack_urns():
    """A stack policy's URN picks the resource it names (an unknown URN is the stack); the same finding reported
    twice is one violation; the result is sorted by resource within a policy."""
    subjects = offline.subjects_from_manifests([NS, JOB], "s")
    job_urn = subjects[1].urn

    def twice(args, report):
        report("on job", job_urn)
        report("on job", job_urn)
        report("elsewhere", "urn:pulumi:s::gpu-platform::x::y")
        report("whole")

    report = offline.run(subjects, [_stack("st", twice)], stack="s")
    assert [(v.resource_type, v.resource_name, v.message) for v in report.violations] == [
        (None, None, "elsewhere"),
        (None, None, "whole"),
        (JOB_TYPE, "ml/train", "on job"),
    ]
    assert report.stack == "s" and report.config_source is None


def test_run_calls_async_policies_and_ignores_not_applicable():
    """The engine awaits a coroutine validate and treats args.not_applicable() as no finding; offline does too."""

    async def later(args, report):
        await asyncio.sleep(0)
        report("async finding")

    def skip(args, report):
        args.not_applicable("not mine")
        report("never")  # pragma: no cover

    report = offline.run(offline.subjects_from_manifests([NS]), [_resource("later", later), _resource("skip", skip)])
    assert [(v.policy, v.message) for v in report.violations] == [("later", "async finding")]


def test_run_reports_a_crashing_policy_as_mandatory_even_when_advisory():
    """A broken policy must not pass silently: its exception is a mandatory finding on the resource (resource
    policy) or the stack (stack policy), whatever the policy's own level."""

    def boom(args, report):
        raise ValueError("bad")

    report = offline.run(
        offline.subjects_from_manifests([NS]),
        [_resource("r", boom, EnforcementLevel.ADVISORY), _stack("s", boom)],
    )
    assert [v.as_dict() for v in report.violations] == [
        {
            "policy": "r",
            "enforcementLevel": "mandatory",
            "resourceType": NS_TYPE,
            "resourceName": "a",
            "message": "policy raised ValueError: bad",
        },
        {
            "policy": "s",
            "enforcementLevel": "mandatory",
            "resourceType": None,
            "resourceName": None,
            "message": "policy raised ValueError: bad",
        },
    ]


def test_run_hands_each_policy_its_config():
    """Resource and stack policies get their schema defaults overlaid with the configured values."""
    schema = PolicyConfigSchema(properties={"n": {"type": "integer", "default": 3}})
    seen = []
    r = _resource("r", lambda args, report: seen.append(("r", args.get_config())), schema=schema)
    s = StackValidationPolicy(
        "s", "s", lambda args, report: seen.append(("s", args.get_config())), config_schema=schema
    )
    offline.run(offline.subjects_from_manifests([NS]), [r, s], {"s": {"n": 5}})
    assert seen == [("r", {"n": 3}), ("s", {"n": 5})]


# ---------------------------------------------------------------------------------------- config


def _schema_policy(**props) -> ResourceValidationPolicy:
    return _resource("p", lambda a, r: None, EnforcementLevel.ADVISORY, PolicyConfigSchema(properties=props))


@pytest.mark.parametrize(
    ("schema", "value", "ok"),
    [
        ({"type": "integer"}, 3, True),
        ({"type": "integer"}, 3.0, True),  # the engine's numbers are floats
        ({"type": "integer"}, 3.5, False),
        ({"type": "integer"}, True, False),
        ({"type": "integer"}, "3", False),
        ({"type": "number"}, 2.5, True),
        ({"type": "number"}, 2, True),
        ({"type": "number"}, False, False),
        ({"type": "number"}, "2", False),
        ({"type": "string"}, "x", True),
        ({"type": "string"}, 1, False),
        ({"type": "boolean"}, True, True),
        ({"type": "boolean"}, "true", False),
        ({"type": "array", "items": {"type": "string"}}, ["a", "b"], True),
        ({"type": "array", "items": {"type": "string"}}, ["a", 1], False),
        ({"type": "array"}, [1, "a"], True),
        ({"type": "array"}, "a", False),
        ({"type": "object"}, {"a": 1}, True),
        ({"type": "object"}, [1], False),
        ({}, object(), True),
        ({"type": "integer", "minimum": 2}, 2, True),
        ({"type": "integer", "minimum": 2}, 1, False),
        ({"type": "number", "minimum": 0.5}, 0.25, False),
    ],
)
def test_config_values_are_checked_against_the_schema(schema, value, ok):
    """A configured value is accepted exactly when it matches the JSON schema type (and minimum)."""
    policy = _schema_policy(v={**schema, "default": None})
    if ok:
        assert offline.settings([policy], {"p": {"v": value}})["p"].config == {"v": value}
    else:
        with pytest.raises(offline.PolicyConfigError) as err:
            offline.settings([policy], {"p": {"v": value}})
        assert err.value.problems == [
            f"p.v: {value!r} does not match {json.dumps({**schema, 'default': None}, sort_keys=True)}"
        ]


def test_settings_reconcile_own_level_then_all_then_own_entry():
    """Each policy starts at its own level and schema defaults; "all" (a level or {enforcementLevel}) sets every
    policy; a policy's own entry wins over "all"."""
    a = _resource("a", lambda x, y: None, EnforcementLevel.MANDATORY)
    b = _schema_policy(n={"type": "integer", "default": 1}, free={"type": "string"})
    got = offline.settings([a, b])
    assert (got["a"].level, got["p"].level, got["p"].config) == (
        EnforcementLevel.MANDATORY,
        EnforcementLevel.ADVISORY,
        {"n": 1},
    )
    got = offline.settings([a, b], {"all": {"enforcementLevel": "disabled"}, "a": "advisory"})
    assert (got["a"].level, got["p"].level) == (EnforcementLevel.ADVISORY, EnforcementLevel.DISABLED)
    got = offline.settings([a, b], {"all": "mandatory", "p": {"free": "x", "n": 2}})
    assert (got["a"].level, got["p"].level, got["p"].config) == (
        EnforcementLevel.MANDATORY,
        EnforcementLevel.MANDATORY,
        {"n": 2, "free": "x"},
    )
    assert got["a"].config == {}


def test_settings_remediate_is_reported_as_mandatory():
    """The engine reports a violated remediation policy as mandatory; other levels are reported as set."""
    assert offline.Settings(EnforcementLevel.REMEDIATE, {}).reported_level == EnforcementLevel.MANDATORY
    assert offline.Settings(EnforcementLevel.ADVISORY, {}).reported_level == EnforcementLevel.ADVISORY
    assert offline.Settings(EnforcementLevel.DISABLED, {}).reported_level == EnforcementLevel.DISABLED


def test_settings_list_every_problem_sorted():
    """An unusable config lists every problem, sorted and deduplicated, with the valid choices."""
    a = _resource("a", lambda x, y: None)
    with pytest.raises(offline.PolicyConfigError) as err:
        offline.settings(
            [a, _schema_policy(n={"type": "integer"}, m={"type": "string"})],
            {"all": "loud", "a": 3, "p": {"enforcementLevel": "off", "x": 1}, "zz": "advisory", "a2": {}},
        )
    assert err.value.problems == [
        "a2: no such policy (policies: a, p)",
        "a: must be an enforcement level or an object",
        "all: 'loud' is not an enforcement level (advisory, mandatory, remediate, disabled)",
        "p.enforcementLevel: 'off' is not an enforcement level (advisory, mandatory, remediate, disabled)",
        "p.x: unknown setting (settings: m, n)",
        "zz: no such policy (policies: a, p)",
    ]
    assert str(err.value) == "\n".join(err.value.problems)
    with pytest.raises(offline.PolicyConfigError) as err:
        offline.settings([a], {"a": {"n": 1}})
    assert err.value.problems == ["a.n: unknown setting (settings: none)"]


def test_load_config_file(tmp_path):
    """A --policy-pack-config file: an empty file is no config; unreadable, non-JSON and non-object files are
    errors naming the file."""
    empty = tmp_path / "empty.json"
    empty.write_text("  \n")
    assert offline.load_config_file(empty) == {}
    good = tmp_path / "good.json"
    good.write_text('{"all": "advisory"}')
    assert offline.load_config_file(str(good)) == {"all": "advisory"}
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(offline.PolicyConfigError) as err:
        offline.load_config_file(bad)
    (problem,) = err.value.problems
    assert problem.startswith(f"{bad}: not JSON (")
    listed = tmp_path / "list.json"
    listed.write_text("[1]")
    with pytest.raises(offline.PolicyConfigError) as err:
        offline.load_config_file(listed)
    assert err.value.problems == [f"{listed}: must be a JSON object of policy name -> level or settings"]
    with pytest.raises(offline.PolicyConfigError) as err:
        offline.load_config_file(tmp_path / "missing.json")
    assert err.value.problems == [f"{tmp_path / 'missing.json'}: cannot read (No such file or directory)"]


def test_evaluate_names_the_config_file_in_the_report_and_in_errors(tmp_path):
    """evaluate() with a config file records it as the report's config source and prefixes config problems with
    the file name (with a mapping config, with "policy config")."""
    from types import SimpleNamespace

    rendering = SimpleNamespace(stack="st", resources=[])
    cfg = tmp_path / "c.json"
    cfg.write_text('{"flag-jobs": "advisory"}')
    report = offline.evaluate(rendering, config_file=cfg, policies=[FLAG_JOBS])
    assert (report.stack, report.config_source, report.settings["flag-jobs"].level) == (
        "st",
        str(cfg),
        EnforcementLevel.ADVISORY,
    )
    cfg.write_text('{"nope": "advisory"}')
    with pytest.raises(offline.PolicyConfigError) as err:
        offline.evaluate(rendering, config_file=cfg, policies=[FLAG_JOBS])
    assert err.value.problems == [f"{cfg}: nope: no such policy (policies: flag-jobs)"]
    with pytest.raises(offline.PolicyConfigError) as err:
        offline.evaluate(rendering, {"nope": "advisory"}, policies=[FLAG_JOBS])
    assert err.value.problems == ["policy config: nope: no such policy (policies: flag-jobs)"]


# ------------------------------------------------------------------------------ subjects of a rendering


def _rec(type_: str, name: str, chain: str = "", parent=None, provider=None, depends_on=()):
    """A registered resource whose URN carries its parent type chain (``a$b$type``), as the engine writes it."""
    from components.explain.rendering import Record

    qualified = f"{chain}${type_}" if chain else type_
    return Record(
        type=type_,
        name=name,
        urn=f"urn:pulumi:st::gpu-platform::{qualified}::{name}",
        parent=parent,
        provider=provider,
        depends_on=list(depends_on),
        inputs={"n": name},
        custom=True,
    )


def _subjects(*records):
    from types import SimpleNamespace

    return {
        (s.type, s.name): s for s in offline.subjects_from_rendering(SimpleNamespace(stack="st", resources=records))
    }


def test_rendering_parent_is_found_by_the_urn_type_chain():
    """Two resources share a name: the child's URN type chain (its parent's type) picks the right one."""
    a = _rec("gpu-platform:index:A", "x")
    b = _rec("gpu-platform:index:B", "x")
    child = _rec("kubernetes:core/v1:Namespace", "ns", "gpu-platform:index:B", parent="x")
    got = _subjects(a, b, child)
    assert got[(child.type, "ns")].parent == b.urn
    assert got[(a.type, "x")].parent is None


def test_rendering_parent_falls_back_to_a_unique_name_else_none():
    """When the type chain names no registered resource, a parent name that is unique still resolves; an
    ambiguous or unknown one resolves to no parent."""
    only = _rec("gpu-platform:index:A", "solo")
    orphan = _rec("kubernetes:core/v1:Namespace", "o", "gpu-platform:index:Gone", parent="solo")
    assert _subjects(only, orphan)[(orphan.type, "o")].parent == only.urn
    twins = [_rec("gpu-platform:index:A", "x"), _rec("gpu-platform:index:B", "x")]
    lost = _rec("kubernetes:core/v1:Namespace", "l", "gpu-platform:index:C", parent="x")
    assert _subjects(*twins, lost)[(lost.type, "l")].parent is None
    nobody = _rec("kubernetes:core/v1:Namespace", "n", "gpu-platform:index:C", parent="missing")
    assert _subjects(nobody)[(nobody.type, "n")].parent is None


def test_rendering_provider_prefers_the_resources_own_package():
    """A provider reference is a name; of providers sharing it, the one of the resource's package is chosen
    (else the first of that name); a name no provider has is no provider."""
    aws = _rec("pulumi:providers:aws", "default")
    k8s_provider = _rec("pulumi:providers:kubernetes", "default")
    ns = _rec("kubernetes:core/v1:Namespace", "ns", provider="default")
    role = _rec("gcp:serviceaccount/account:Account", "sa", provider="default")
    lost = _rec("kubernetes:core/v1:Namespace", "lost", provider="other")
    got = _subjects(aws, k8s_provider, ns, role, lost)
    assert got[(ns.type, "ns")].provider.urn == k8s_provider.urn
    assert got[(ns.type, "ns")].provider.props == {"n": "default"}
    assert got[(role.type, "sa")].provider.urn == aws.urn  # no gcp provider: the first named "default"
    assert got[(lost.type, "lost")].provider is None
    assert got[(aws.type, "default")].provider is None


def test_rendering_dependencies_are_the_sorted_urns_of_every_resource_named():
    """depends_on names resources; each name stands for every resource of that name, as sorted URNs."""
    z = _rec("gpu-platform:index:Z", "dep")
    a = _rec("gpu-platform:index:A", "dep")
    user = _rec("kubernetes:core/v1:Namespace", "u", depends_on=["dep", "missing"])
    got = _subjects(z, a, user)
    assert got[(user.type, "u")].dependencies == (a.urn, z.urn)
    assert got[(user.type, "u")].props == {"n": "u"}


def test_a_policy_meeting_an_unknown_value_is_skipped_with_an_advisory():
    """As pulumi_policy's analyzer does during a preview: a policy reading an unknown value is not a failure but an
    advisory "can't run policy" naming the pack (name@version from PulumiPolicy.yaml) and the unknown path, on the
    resource (resource policy) or the stack (stack policy), whatever the policy's level."""
    from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, UnknownValueError

    def unknown(args, report):
        raise UnknownValueError(UNKNOWN_STRING_VALUE, ["spec", "x"])

    report = offline.run(offline.subjects_from_manifests([NS]), [_resource("u", unknown), _stack("s", unknown)])
    tail = "during preview: string value at .spec.x can't be known during preview"
    assert [v.as_dict() for v in report.violations] == [
        {
            "policy": "s",
            "enforcementLevel": "advisory",
            "resourceType": None,
            "resourceName": None,
            "message": f"can't run policy 's' from policy pack 'gpu-platform@v0.1.0' {tail}",
        },
        {
            "policy": "u",
            "enforcementLevel": "advisory",
            "resourceType": NS_TYPE,
            "resourceName": "a",
            "message": f"can't run policy 'u' from policy pack 'gpu-platform@v0.1.0' {tail}",
        },
    ]


def test_stack_policies_get_resources_shaped_like_the_engines():
    """pulumi_policy's AnalyzeStack gives every PolicyResource its options (with the parent URN) and a
    property_dependencies dict (empty when the engine reports none), parent and dependencies linked: a stack
    policy may read any of them."""
    parent = _rec("gpu-platform:index:A", "top")
    child = _rec("kubernetes:core/v1:Namespace", "ns", "gpu-platform:index:A", parent="top", depends_on=["top"])
    from types import SimpleNamespace

    seen = {}

    def spy(args, report):
        seen.update({r.name: r for r in args.resources})

    offline.evaluate(SimpleNamespace(stack="st", resources=[parent, child]), policies=[_stack("spy", spy)])
    ns = seen["ns"]
    assert ns.property_dependencies == {} and seen["top"].property_dependencies == {}
    assert ns.opts.parent == parent.urn and seen["top"].opts.parent is None
    assert (ns.opts.protect, ns.opts.ignore_changes, ns.opts.aliases) == (False, [], [])
    assert ns.parent is seen["top"] and ns.dependencies == [seen["top"]]
    assert (ns.resource_type, ns.urn, ns.props["n"]) == (child.type, child.urn, "ns")


def test_resource_policies_get_the_provider_as_the_engine_describes_it():
    """A resource policy sees its resource's provider as a PolicyProviderResource (type, props, URN, name), the
    same object for every resource sharing that provider; a resource without one gets None."""
    from types import SimpleNamespace

    prov = _rec("pulumi:providers:kubernetes", "k8s")
    a = _rec("kubernetes:core/v1:Namespace", "a", provider="k8s")
    b = _rec("kubernetes:core/v1:Namespace", "b", provider="k8s")
    c = _rec("kubernetes:core/v1:Namespace", "c")
    seen = {}

    def spy(args, report):
        seen[args.name] = args.provider

    offline.evaluate(SimpleNamespace(stack="st", resources=[prov, a, b, c]), policies=[_resource("spy", spy)])
    p = seen["a"]
    assert (p.resource_type, p.urn, p.name, p.props["n"]) == (prov.type, prov.urn, "k8s", "k8s")
    assert seen["b"] is p and seen["c"] is None


def test_a_disabled_policy_does_not_stop_the_ones_after_it():
    """Disabling one policy skips it alone; the policies after it still run."""
    report = _report({"flag-jobs": "disabled"})
    assert [(v.policy, v.message) for v in report.violations] == [("stack-note", "stack-wide")]


def test_a_parent_reference_without_a_type_chain_falls_back_to_the_name():
    """A URN whose type has no parent chain (no ``$``) cannot name the parent's type: the unique name decides."""
    top = _rec("gpu-platform:index:A", "solo")
    child = _rec("kubernetes:core/v1:Namespace", "c", parent="solo")
    assert _subjects(top, child)[(child.type, "c")].parent == top.urn


def test_resource_options_are_the_engines_defaults():
    """The options the engine describes for a resource registered without any: not protected, nothing ignored,
    no aliases or extra secret outputs, zero custom timeouts, the parent URN."""
    from types import SimpleNamespace

    seen = {}
    offline.evaluate(
        SimpleNamespace(stack="st", resources=[_rec("kubernetes:core/v1:Namespace", "n")]),
        policies=[_resource("spy", lambda args, report: seen.setdefault("opts", args.opts))],
    )
    opts = seen["opts"]
    t = opts.custom_timeouts
    assert (t.create_seconds, t.update_seconds, t.delete_seconds) == (0, 0, 0)
    assert (opts.protect, opts.ignore_changes, opts.delete_before_replace, opts.aliases) == (False, [], None, [])
    assert (opts.additional_secret_outputs, opts.parent) == ([], None)


@pytest.mark.parametrize("problem", ["no version", "unreadable"])
def test_cant_run_names_version_0_0_1_when_the_pack_declares_none(monkeypatch, problem):
    """Without a readable version in PulumiPolicy.yaml the pack is named @v0.0.1, the version pulumi_policy's own
    analyzer reports."""
    import yaml
    from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, UnknownValueError

    def load(text):
        if problem == "unreadable":
            raise OSError("gone")
        return {}

    monkeypatch.setattr(yaml, "safe_load", load)

    def unknown(args, report):
        raise UnknownValueError(UNKNOWN_STRING_VALUE, ["x"])

    (v,) = offline.run(offline.subjects_from_manifests([NS]), [_resource("u", unknown)]).violations
    assert v.message.startswith("can't run policy 'u' from policy pack 'gpu-platform@v0.0.1' during preview")


def test_one_options_object_per_resource_is_shared_by_every_policy():
    """The runner builds a resource's options once per run (the _Proxies contract): every resource policy and the
    stack policies see the same object for it."""
    from types import SimpleNamespace

    seen = []
    spy = _resource("a", lambda args, report: seen.append(args.opts))
    spy2 = _resource("b", lambda args, report: seen.append(args.opts))
    stack = _stack("s", lambda args, report: seen.extend(r.opts for r in args.resources))
    offline.evaluate(
        SimpleNamespace(stack="st", resources=[_rec("kubernetes:core/v1:Namespace", "n")]), policies=[spy, spy2, stack]
    )
    assert len(seen) == 3 and seen[0] is seen[1] is seen[2]


def test_a_typed_policy_judges_only_its_types_under_the_engine_and_offline():
    """A TypedResourcePolicy's validate returns None for other types without running its validation (what the
    engine gets); the offline runner does not call it for them, and calls it for each resource of its types."""
    from pulumi_policy import PolicyCustomTimeouts, PolicyResourceOptions, ResourceValidationArgs

    from policies.common import TypedResourcePolicy

    seen: list[tuple[str, str]] = []

    def spy(args, report):
        seen.append((args.resource_type, args.name))
        report("judged")

    typed = TypedResourcePolicy(resource_types=[NS_TYPE], name="typed", description="d", validate=spy)
    opts = PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [])
    cm = ResourceValidationArgs("kubernetes:core/v1:ConfigMap", {}, "urn:x", "cm", opts, None, {})
    assert typed.validate(cm, lambda message, urn=None: seen.append(("reported", message))) is None
    assert seen == []

    cm_doc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}}
    docs = [NS, cm_doc, {**NS, "metadata": {"name": "b"}}]
    report = offline.run(offline.subjects_from_manifests(docs), [typed])
    assert seen == [(NS_TYPE, "a"), (NS_TYPE, "b")]
    assert [(v.resource_name, v.message) for v in report.violations] == [("a", "judged"), ("b", "judged")]


def test_a_run_leaves_nothing_for_the_cyclic_collector():
    """Dependencies are resolved by name, and a node group depends on the launch template of the same name (and,
    like the platform's readiness gates, on its parent component): it never depends on itself (the engine's
    dependency graph has no loops), which would be a cycle through the stack's resources keeping every proxy of
    the run alive until a collection walked them all (~20k objects at 200 tenants). Nor do the proxies link back
    to their containers. After a run that read every resource's props, reference counting has freed everything
    it built."""
    import gc
    from types import SimpleNamespace

    parent = _rec("gpu-platform:index:A", "pool")
    lt = _rec("aws:ec2/launchTemplate:LaunchTemplate", "pool", "gpu-platform:index:A", parent="pool")
    ng = _rec("aws:eks/nodeGroup:NodeGroup", "pool", "gpu-platform:index:A", parent="pool", depends_on=["pool"])
    for r in (parent, lt, ng):
        r.inputs["spec"] = {"nested": [{"deep": ["x"]}]}
    rendering = SimpleNamespace(stack="st", resources=[parent, lt, ng])

    def read(args, report):
        seen.extend((r.name, sorted(d.resource_type for d in r.dependencies)) for r in args.resources)
        seen.extend(r.props["spec"]["nested"][0]["deep"][0] for r in args.resources)

    seen: list = []
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        offline.evaluate(rendering, policies=[_stack("reader", read)])
        left = gc.collect()
    finally:
        if was:
            gc.enable()
    # the node group depends on every other resource named pool (its parent among them), not on itself
    assert seen[:3] == [("pool", []), ("pool", []), ("pool", ["aws:ec2/launchTemplate:LaunchTemplate", parent.type])]
    assert seen[3:] == ["x"] * 3
    assert left == 0


def test_a_typed_policy_sees_its_resources_of_several_types_in_the_stacks_order():
    """The runner finds a typed policy's resources by type (an index built once per run), and still calls it in the
    order of the stack's resources, types interleaved; the resources of other types are never passed."""
    from policies.common import TypedResourcePolicy

    seen: list[str] = []
    cm_type = "kubernetes:core/v1:ConfigMap"
    typed = TypedResourcePolicy(
        resource_types=[NS_TYPE, cm_type], name="typed", description="d", validate=lambda a, r: seen.append(a.name)
    )

    def doc(kind: str, name: str) -> dict:
        return {"apiVersion": "v1", "kind": kind, "metadata": {"name": name}}

    docs = [doc("Namespace", "n1"), doc("ConfigMap", "c1"), doc("Secret", "s"), doc("Namespace", "n2")]
    docs.append(doc("ConfigMap", "c2"))
    offline.run(offline.subjects_from_manifests(docs), [typed])
    assert seen == ["n1", "c1", "n2", "c2"]
