"""Run the policy pack offline: the same policy objects ``pulumi preview --policy-pack policies`` loads, called
the way the Pulumi engine calls them, against what an offline synth registered (or against plain manifests).

For every resource a resource policy judges it builds ``ResourceValidationArgs`` (type, camelCase props wrapped
in the same read-only proxies the engine uses, URN, name, options with the parent URN, the provider) and, for
stack policies, one ``StackValidationArgs`` with every resource as a ``PolicyResource`` (parent and dependency
links set; props proxied on first read). Each policy's ``validate`` gets a ``report_violation`` that records a
``Violation``.

Enforcement levels and policy config follow ``--policy-pack-config`` (the Pulumi CLI's JSON format)::

    {"all": "advisory",                                  # every policy (applied first)
     "time-slicing-replicas": "mandatory",               # one policy's level
     "helm-chart-pinned": {"enforcementLevel": "mandatory", "allowedSources": ["https://..."]}}

levels: ``advisory`` | ``mandatory`` | ``remediate`` (reported as mandatory, like the engine) | ``disabled``.
Unlike the engine, unknown policy names, unknown properties and wrongly typed values are errors here, so a
typo cannot silently switch a policy off.
"""

from __future__ import annotations

import asyncio
import gc
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from inspect import isawaitable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyCustomTimeouts,
    PolicyProviderResource,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
)
from pulumi_policy.proxy import UnknownValueError

from . import common, pack
from .offline_config import (  # the config's names, re-exported as callers know them
    LEVELS as LEVELS,
    Policy,
    PolicyConfigError as PolicyConfigError,
    Settings,
    load_config_file as load_config_file,
    settings,
)
from .offline_proxy import lazy_proxy

if TYPE_CHECKING:
    from components.explain.rendering import Rendering

try:  # raised by args.not_applicable(); private in pulumi_policy
    from pulumi_policy.policy import _NotApplicableError as NotApplicable
except ImportError:  # pragma: no cover - older/newer SDK layouts

    class NotApplicable(Exception):  # type: ignore[no-redef]
        pass


SECTION = "Policy report"

# ---------------------------------------------------------------------------------------- subjects


@dataclass(frozen=True)
class Subject:
    """One resource as the engine would describe it to an analyzer."""

    type: str
    name: str
    urn: str
    props: Mapping[str, Any]
    parent: str | None = None  # URN
    provider: Subject | None = None
    dependencies: tuple[str, ...] = ()  # URNs


def _urn(stack: str, qualified_type: str, name: str) -> str:
    return f"urn:pulumi:{stack}::gpu-platform::{qualified_type}::{name}"


def subjects_from_rendering(rendering: Rendering) -> list[Subject]:
    """The resources an offline synth registered, with URNs, parent URNs, providers and dependencies."""
    records = list(rendering.resources)
    by_key = {(r.type, r.name): r for r in records}
    by_name: dict[str, list[Any]] = {}
    for r in records:
        by_name.setdefault(r.name, []).append(r)

    def parent_urn(r: Any) -> str | None:
        if not r.parent:
            return None
        chain = r.urn.split("::")[2].split("$") if r.urn.count("::") >= 3 else []
        parent = by_key.get((chain[-2], r.parent)) if len(chain) > 1 else None
        if parent is None:  # fall back to a unique name
            same = by_name.get(r.parent, [])
            parent = same[0] if len(same) == 1 else None
        return parent.urn if parent is not None else None

    providers: dict[str, Subject] = {}
    for r in records:
        if r.type.startswith("pulumi:providers:"):
            providers[r.urn] = Subject(r.type, r.name, r.urn, r.inputs, parent_urn(r))

    chosen: dict[tuple[str, str], Subject | None] = {}  # (provider name, package) -> provider, asked once

    def provider_of(r: Any) -> Subject | None:
        if not r.provider:
            return None
        key = (r.provider, r.type.split(":", 1)[0])
        if key not in chosen:
            found = [p for p in providers.values() if p.name == r.provider]
            same_package = [p for p in found if p.type == f"pulumi:providers:{key[1]}"]
            chosen[key] = (same_package or found or [None])[0]
        return chosen[key]

    out = []
    for r in records:
        deps = (
            tuple(sorted(x.urn for d in r.depends_on for x in by_name.get(d, ()) if x is not r)) if r.depends_on else ()
        )
        out.append(Subject(r.type, r.name, r.urn, r.inputs, parent_urn(r), provider_of(r), deps))
    return out


def subjects_from_manifests(docs: Iterable[Mapping[str, Any]], stack: str = "manifests") -> list[Subject]:
    """Kubernetes objects (e.g. the YAML under examples/) as the resources pulumi_kubernetes would register."""
    out = []
    for doc in docs:
        if not isinstance(doc, Mapping) or "apiVersion" not in doc or "kind" not in doc:
            continue
        type_token = common.k8s_type(str(doc["apiVersion"]), str(doc["kind"]))
        meta = doc.get("metadata") or {}
        name = "/".join(str(x) for x in (meta.get("namespace"), meta.get("name")) if x)
        out.append(Subject(type_token, name, _urn(stack, type_token, name), doc))
    return out


# ---------------------------------------------------------------------------------------- running


@dataclass(frozen=True)
class Violation:
    """One policy violation: the policy, its enforcement level, the resource and the message."""

    policy: str
    enforcement_level: str  # "mandatory" | "advisory"
    resource_type: str | None  # None: the stack as a whole
    resource_name: str | None
    message: str

    def sort_key(self) -> tuple[str, ...]:
        return (self.policy, self.resource_type or "", self.resource_name or "", self.message)

    def line(self) -> str:
        where = f"{self.resource_type} {self.resource_name}" if self.resource_type else "stack"
        return f"policy {self.enforcement_level} {self.policy}: {where}: {self.message}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "enforcementLevel": self.enforcement_level,
            "resourceType": self.resource_type,
            "resourceName": self.resource_name,
            "message": self.message,
        }


def _opts(s: Subject) -> PolicyResourceOptions:
    return PolicyResourceOptions(
        protect=False,
        ignore_changes=[],
        delete_before_replace=None,
        aliases=[],
        custom_timeouts=PolicyCustomTimeouts(0, 0, 0),
        additional_secret_outputs=[],
        parent=s.parent,
    )


class _PropsCache:
    """Each resource's props proxy and options, built on first use (one per resource and run): the engine's
    proxies, each nested value proxied when first read (``policies.offline_proxy``)."""

    def __init__(self) -> None:
        self._props: dict[int, Any] = {}
        self._keep: list[Subject] = []  # the subjects whose id() keys _props stay alive with it
        self._options: dict[str, PolicyResourceOptions] = {}

    def __call__(self, s: Subject) -> Any:
        got = self._props.get(id(s))
        if got is None:
            got = self._props[id(s)] = lazy_proxy(dict(s.props))
            self._keep.append(s)
        return got

    def options(self, s: Subject) -> PolicyResourceOptions:
        got = self._options.get(s.urn)
        if got is None:
            got = self._options[s.urn] = _opts(s)
        return got


class _Proxies:
    """The engine's read-only proxies (``unknown_checking_proxy``: reading an unknown value raises
    ``UnknownValueError``), built once per resource when a policy first reads them and shared by every policy
    of a run (a resource no policy reads is never proxied).

    The engine deserializes a resource afresh for each policy; the proxies copy the inputs as they are read and
    only read them (``Mapping`` / ``Sequence``), so one per resource behaves the same and saves a deep copy per
    policy and resource (quadratic for stack policies, which each see every resource)."""

    def __init__(self) -> None:
        self.props = _PropsCache()
        self.options = self.props.options
        self._providers: dict[str, PolicyProviderResource] = {}
        self._stack: list[PolicyResource] | None = None

    def provider(self, s: Subject) -> PolicyProviderResource | None:
        p = s.provider
        if p is None:
            return None
        got = self._providers.get(p.urn)
        if got is None:
            got = self._providers[p.urn] = PolicyProviderResource(p.type, self.props(p), p.urn, p.name)
        return got

    def stack_resources(self, subjects: Sequence[Subject]) -> list[PolicyResource]:
        """Every resource as a ``PolicyResource`` with parent and dependencies linked (built once per run); each
        one's props and options are built when a policy first reads them."""
        if self._stack is None:
            resources = {s.urn: _StackResource(s, self.props, self.provider(s)) for s in subjects}
            for s in subjects:
                r = resources[s.urn]
                r.parent = resources.get(s.parent) if s.parent else None
                r.dependencies = [resources[d] for d in s.dependencies if d in resources]
            self._stack = list(resources.values())
        return self._stack


_UNBUILT: Any = object()


class _StackResource(PolicyResource):
    """A ``PolicyResource`` whose ``props`` (the engine's proxy of the resource's inputs) and ``opts`` are built on
    first read: the same objects every policy of the run gets (``_Proxies``), never built for a resource no policy
    reads.

    Most of a run's time went into those proxies (pulumi_policy's ``unknown_checking_proxy`` copies every nested
    value into a proxy at once; pulumi_policy 1.21.0, pulumi_policy/proxy.py, ``_proxy_helper``), while the stack
    policies each read the props of a few types only."""

    def __init__(self, s: Subject, cache: _PropsCache, provider: PolicyProviderResource | None) -> None:
        # the cache, not _Proxies: _Proxies holds the stack's resources, and a cycle would keep a run's proxies
        # alive after it (until a cyclic collection, which their number would set off)
        self._subject, self._cache = s, cache
        super().__init__(s.type, _UNBUILT, s.urn, s.name, _UNBUILT, provider, None, [], {})

    @property  # type: ignore[override]
    def props(self) -> Any:
        got = self._props
        if got is _UNBUILT:
            got = self._props = self._cache(self._subject)
        return got

    @props.setter
    def props(self, value: Any) -> None:
        self._props = value

    @property  # type: ignore[override]
    def opts(self) -> PolicyResourceOptions:
        got = self._opts
        if got is _UNBUILT:
            got = self._opts = self._cache.options(self._subject)
        return got

    @opts.setter
    def opts(self, value: PolicyResourceOptions) -> None:
        self._opts = value


# --- unknown values (issue 13): a policy that meets an unknown during a preview is skipped with an advisory,
# as pulumi_policy's analyzer does (policy.py, _PolicyAnalyzerServicer.Analyze/AnalyzeStack: `except
# UnknownValueError` -> an ADVISORY diagnostic "can't run policy ... during preview: ..."), never a failure.


class CannotRunDuringPreview(str):
    """The message of a policy skipped because it met an unknown value (reported as advisory)."""


def _pack_version() -> str:
    try:
        import yaml

        doc = yaml.safe_load((Path(__file__).with_name("PulumiPolicy.yaml")).read_text(encoding="utf-8"))
        return str(doc.get("version", "0.0.1"))
    except (OSError, AttributeError, ImportError):  # pragma: no cover - the file ships with the pack
        return "0.0.1"


def _cannot_run(policy: Policy, exc: UnknownValueError) -> CannotRunDuringPreview:
    return CannotRunDuringPreview(
        f"can't run policy '{policy.name}' from policy pack '{pack.PACK_NAME}@v{_pack_version()}' "
        f"during preview: {exc.message}"
    )


def _error_level(error: str) -> str:
    return EnforcementLevel.ADVISORY.value if isinstance(error, CannotRunDuringPreview) else "mandatory"


# --- end unknown values


def _call(policy: Policy, args: Any, report: Any) -> str | None:
    """Run one validation like the engine does; an error message if the policy itself failed, or a
    ``CannotRunDuringPreview`` message if it met an unknown value."""
    try:
        result = policy.validate(args, report)
        # most validations return None: skip inspect's checks for it, as ResourceValidationPolicy.validate does for
        # each validation's result (pulumi_policy 1.21.0, pulumi_policy/policy.py: `if result is not None and
        # isawaitable(result)`); an awaitable is run to completion as the analyzer does
        if result is not None and isawaitable(result):
            loop = asyncio.new_event_loop()
            try:
                loop.run_until_complete(result)
            finally:
                loop.close()
    except NotApplicable:
        return None
    except UnknownValueError as exc:
        return _cannot_run(policy, exc)
    except Exception as exc:  # a broken policy must not pass silently
        return f"policy raised {type(exc).__name__}: {exc}"
    return None


@dataclass
class Report:
    """The outcome of an offline policy run: the resources checked, each policy's settings and the violations."""

    stack: str
    resource_count: int
    settings: dict[str, Settings]
    violations: list[Violation] = field(default_factory=list)
    config_source: str | None = None

    @property
    def mandatory_violations(self) -> list[Violation]:
        return [v for v in self.violations if v.enforcement_level == EnforcementLevel.MANDATORY.value]

    @property
    def advisory_violations(self) -> list[Violation]:
        return [v for v in self.violations if v.enforcement_level == EnforcementLevel.ADVISORY.value]

    def json(self) -> str:
        """policy-report.json: every violation, sorted."""
        return json.dumps([v.as_dict() for v in self.violations], indent=2, sort_keys=True) + "\n"

    @property
    def sections(self) -> dict[str, str]:
        return {SECTION: self.markdown()}

    def markdown(self) -> str:
        counts: dict[str, int] = {}
        for v in self.violations:
            counts[v.policy] = counts.get(v.policy, 0) + 1
        mandatory, advisory = len(self.mandatory_violations), len(self.advisory_violations)
        source = f" with config `{self.config_source}`" if self.config_source else ""
        lines = [
            f"Policy pack `{pack.PACK_NAME}` ({len(self.settings)} policies) evaluated offline{source} "
            f"against {self.resource_count} resources: "
            + (
                f"**{mandatory} mandatory violation{'s' if mandatory != 1 else ''} (synth exits 1)**"
                if mandatory
                else "no mandatory violations"
            )
            + f", {advisory} advisory.",
            "",
            "| policy | level | violations |",
            "|---|---|---|",
        ]
        for name, s in self.settings.items():
            lines.append(f"| {name} | {s.level.value} | {counts.get(name, 0)} |")
        if self.violations:
            lines += ["", "| level | policy | resource | message |", "|---|---|---|---|"]
            for v in self.violations:
                where = f"`{v.resource_type}` {v.resource_name}" if v.resource_type else "(stack)"
                msg = v.message.replace("|", "\\|").replace("\n", " ")
                lines.append(f"| {v.enforcement_level} | {v.policy} | {where} | {msg} |")
        return "\n".join(lines) + "\n"


@contextmanager
def _collector_paused() -> Iterator[None]:
    """No automatic cyclic garbage collection while the policies run (restored after).

    A run builds the engine's proxies for every resource (a few containers per nested input value: ~370k objects
    at 1000 tenants) and keeps them to the end. Each of those allocations counts towards the collector's
    thresholds, so the run set off full collections, each traversing the whole heap the render left behind:
    at 1000 tenants three of them cost more than every policy together, and their number grows with the stack
    (1000 tenants took 11x what 200 took, for 4.5x the resources). Nothing a run keeps is garbage before it
    ends; what it drops is freed by reference counting."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def run(
    subjects: Sequence[Subject],
    policies: Sequence[Policy] = pack.POLICIES,
    config: Mapping[str, Any] | None = None,
    stack: str = "",
    config_source: str | None = None,
) -> Report:
    """Evaluate ``policies`` against ``subjects`` (resource policies per resource, stack policies once)."""
    with _collector_paused():
        return _run(subjects, policies, config, stack, config_source)


class _ByType:
    """Where each type's subjects are (built once per run), so a TypedResourcePolicy's subjects are found by type
    instead of a pass over every subject for each such policy (14 passes over 1,190 at 200 tenants)."""

    def __init__(self, subjects: Sequence[Subject]) -> None:
        self.subjects = subjects
        self.positions: dict[str, list[int]] = {}
        for i, s in enumerate(subjects):
            self.positions.setdefault(s.type, []).append(i)

    def judged(self, policy: ResourceValidationPolicy) -> Sequence[Subject]:
        """The subjects ``policy`` judges, in order: all of them, or for a TypedResourcePolicy those of its types
        (asked once per type)."""
        if not isinstance(policy, common.TypedResourcePolicy):
            return self.subjects
        at = sorted(i for t, positions in self.positions.items() if policy.judges(t) for i in positions)
        return [self.subjects[i] for i in at]


def _run(
    subjects: Sequence[Subject],
    policies: Sequence[Policy],
    config: Mapping[str, Any] | None,
    stack: str,
    config_source: str | None,
) -> Report:
    chosen = settings(policies, config)
    by_urn = {s.urn: s for s in subjects}
    proxies = _Proxies()
    by_type = _ByType(subjects)
    violations: list[Violation] = []
    for policy in policies:
        st = chosen[policy.name]
        if st.level == EnforcementLevel.DISABLED:
            continue
        level = st.reported_level.value

        def record(subject: Subject | None, message: str, policy: Policy = policy, level: str = level) -> None:
            violations.append(
                Violation(
                    policy.name,
                    level,
                    subject.type if subject else None,
                    subject.name if subject else None,
                    str(message),
                )
            )

        if isinstance(policy, ResourceValidationPolicy):
            # a typed policy's validate returns None for any other type without reading anything: not called, and
            # the props of a resource no policy reads are never built (_Proxies builds each on first use)
            for s in by_type.judged(policy):
                args = ResourceValidationArgs(
                    s.type, proxies.props(s), s.urn, s.name, proxies.options(s), proxies.provider(s), dict(st.config)
                )
                error = _call(policy, args, lambda message, urn=None, s=s: record(s, message))
                if error:
                    violations.append(Violation(policy.name, _error_level(error), s.type, s.name, str(error)))
        else:
            stack_args = StackValidationArgs(proxies.stack_resources(subjects), dict(st.config))
            error = _call(
                policy, stack_args, lambda message, urn=None: record(by_urn.get(urn) if urn else None, message)
            )
            if error:
                violations.append(Violation(policy.name, _error_level(error), None, None, str(error)))
    violations = sorted(set(violations), key=Violation.sort_key)
    return Report(stack, len(subjects), chosen, violations, config_source)


def evaluate(
    rendering: Rendering,
    config: Mapping[str, Any] | None = None,
    config_file: str | Path | None = None,
    policies: Sequence[Policy] = pack.POLICIES,
) -> Report:
    """The policy report of an offline synth (what ``gpu-platform synth|check`` print and write).

    ``config_file`` is a ``--policy-pack-config`` JSON file; ``config`` the same content as a mapping.
    Raises PolicyConfigError for an unusable config."""
    source = None
    if config_file is not None:
        config = load_config_file(config_file)
        source = str(config_file)
    try:
        return run(subjects_from_rendering(rendering), policies, config, rendering.stack, source)
    except PolicyConfigError as err:
        raise PolicyConfigError(f"{source or 'policy config'}: {p}" for p in err.problems) from None


def evaluate_manifests(
    docs: Iterable[Mapping[str, Any]],
    policies: Sequence[Policy] = pack.WORKLOAD_POLICIES,
    config: Mapping[str, Any] | None = None,
    stack: str = "manifests",
) -> Report:
    """The policies (by default the workload ones) against plain Kubernetes manifests."""
    return run(subjects_from_manifests(docs, stack), policies, config, stack)
