"""Offline synth: run the real program (``__main__.py``) under the Pulumi SDK's mock engine and write
every registered resource, Kubernetes manifest and Helm release to disk.

No Pulumi CLI, provider plugin, network or credentials are used. Lookups of existing cloud objects
answer with values that are obviously placeholders (``offline-placeholder``); the summary says so.

``preview=True`` renders what a first ``pulumi preview`` hands the policy pack instead: the program runs as a
dry run and the resources it creates have no outputs yet, so every input computed from one (an IAM document
holding a role ARN, a launch template id) is unknown, recorded as the engine's wire sentinel
(``UNKNOWN``), which ``pulumi_policy``'s property proxy turns into ``UnknownValueError``.
"""

from __future__ import annotations

import json
import runpy
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..explain.rendering import Record, Rendering
from ..plan.frozen import LEAVES
from ..spec.model import decode_config
from .collector import (
    RENDER_GC_THRESHOLDS as RENDER_GC_THRESHOLDS,
    _collector_relaxed as _collector_relaxed,
    collector_relaxed as collector_relaxed,
    rendered_heap_frozen as rendered_heap_frozen,
)
from .loader import load_spec
from .synth_files import (
    Written as Written,
    file_items as file_items,
    files as files,
    manifest_path as manifest_path,
    write as write,
)
from .synth_lean import (
    _answering_monitor,
    _without_debug_logs as _without_debug_logs,
    _without_stack_traces as _without_stack_traces,
)
from .synth_resolve import _resolved as _resolved, _secrets_shown
from .synth_stacks import fleet_outputs, stack_identity, stack_outputs
from .synth_yaml import _ints as _ints, _json as _json, _yaml as _yaml

ROOT = Path(__file__).resolve().parents[2]  # the project directory (site-packages in an installed package)
PROGRAM = ROOT / "__main__.py"
# Pulumi.yaml's pulumi:disable-default-providers, for the installed package, which carries no Pulumi.yaml
# (tests/test_synth_helpers.py holds the two equal).
PROJECT_DISABLED_DEFAULT_PROVIDERS = frozenset({"kubernetes"})


def _packaged_program() -> None:
    """What ``__main__.py`` does, from this package: the program of an installed ``gpu-platform``, which has no
    ``__main__.py`` beside it (tests/test_synth.py holds the two to the same calls)."""
    from ..render.program import run
    from .config import spec_from_pulumi_config

    run(spec_from_pulumi_config())


def default_program() -> Path | Callable[[], None]:
    """The repository's ``__main__.py`` when this code runs from the repository (the program ``pulumi up`` runs),
    else the packaged copy of it."""
    in_repository = Path(__file__).resolve().parents[1] == ROOT / "components" and PROGRAM.is_file()
    return PROGRAM if in_repository else _packaged_program


PROJECT = "gpu-platform"
PLACEHOLDER = "offline-placeholder"
ACCOUNT = "000000000000"
CA_DATA = "T0ZGTElORS1QTEFDRUhPTERFUi1DQQ=="  # base64("OFFLINE-PLACEHOLDER-CA")
# How the engine sends an unknown value over gRPC (pulumi.runtime.rpc.UNKNOWN, equal to pulumi_policy's
# UNKNOWN_STRING_VALUE); a preview rendering records unknown inputs with it.
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"

# Answers to lookups of existing cloud objects (invoke token -> result, camelCase as on the wire).
LOOKUPS: dict[str, dict[str, Any]] = {
    "aws:eks/getCluster:getCluster": {
        "endpoint": f"https://{PLACEHOLDER}.eks.amazonaws.com.invalid",
        "certificateAuthorities": [{"data": CA_DATA}],
        "arn": f"arn:aws:eks:placeholder:{ACCOUNT}:cluster/{PLACEHOLDER}",
        "roleArn": f"arn:aws:iam::{ACCOUNT}:role/{PLACEHOLDER}-cluster",
        "version": "1.33",
        "identities": [{"oidcs": [{"issuer": f"https://oidc.eks.placeholder.amazonaws.com.invalid/id/{PLACEHOLDER}"}]}],
        "vpcConfig": {
            "subnetIds": [f"subnet-{PLACEHOLDER}-a", f"subnet-{PLACEHOLDER}-b"],
            "securityGroupIds": [],
            "clusterSecurityGroupId": f"sg-{PLACEHOLDER}",
            "vpcId": f"vpc-{PLACEHOLDER}",
        },
        "accessConfigs": [{"authenticationMode": "API_AND_CONFIG_MAP"}],
    },
    "aws:index/getCallerIdentity:getCallerIdentity": {
        "accountId": ACCOUNT,
        "arn": f"arn:aws:iam::{ACCOUNT}:user/{PLACEHOLDER}",
        "userId": PLACEHOLDER,
        "id": ACCOUNT,
    },
    "aws:index/getPartition:getPartition": {"partition": "aws", "dnsSuffix": "amazonaws.com", "id": "aws"},
    "gcp:container/getCluster:getCluster": {
        "id": f"projects/{PLACEHOLDER}/locations/{PLACEHOLDER}/clusters/{PLACEHOLDER}",
        "endpoint": f"{PLACEHOLDER}.gke.invalid",
        "masterAuths": [{"clusterCaCertificate": CA_DATA}],
        "network": f"projects/{PLACEHOLDER}/global/networks/{PLACEHOLDER}",
        "selfLink": PLACEHOLDER,
        # A Standard cluster with Workload Identity, its nodes in three (placeholder) zones.
        "enableAutopilot": False,
        "workloadIdentityConfigs": [{"workloadPool": f"{PLACEHOLDER}.svc.id.goog"}],
        "nodeLocations": [f"{PLACEHOLDER}-zone-{z}" for z in "abc"],
        # with the CSI drivers gpu-platform:storage may need (render/gcp/storage.py checks them)
        "addonsConfigs": [
            {
                "gcpFilestoreCsiDriverConfigs": [{"enabled": True}],
                "gcsFuseCsiDriverConfigs": [{"enabled": True}],
                "parallelstoreCsiDriverConfigs": [{"enabled": True}],
            }
        ],
    },
    "gcp:organizations/getProject:getProject": {"number": "000000000000", "projectId": PLACEHOLDER},
}


# What a cluster stack (cluster.fromStack) exports, offline (components/cli/synth_stacks.py).
STACK_OUTPUTS: dict[str, dict[str, Any]] = stack_outputs(LOOKUPS, PLACEHOLDER, CA_DATA)


def _placeholder_outputs(typ: str, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """Computed outputs the program reads from resources it creates."""
    out: dict[str, Any] = {}
    if typ.startswith("aws:"):
        kind = typ.split(":")[-1].lower()
        out["arn"] = f"arn:aws:{typ.split(':')[1].split('/')[0]}::{ACCOUNT}:{kind}/{inputs.get('name', name)}"
        out.setdefault("name", inputs.get("name", name))
        if typ == "aws:sqs/queue:Queue":
            out["url"] = f"https://sqs.placeholder.amazonaws.com.invalid/{ACCOUNT}/{inputs.get('name', name)}"
        if typ == "aws:ec2/launchTemplate:LaunchTemplate":
            out["latestVersion"] = 1
        if typ == "aws:kms/key:Key":
            out["keyId"] = f"{PLACEHOLDER}-{name}"
        if typ == "aws:eks/cluster:Cluster":  # a created cluster (cluster.create): what EKS answers
            lookup = LOOKUPS["aws:eks/getCluster:getCluster"]
            out["endpoint"] = lookup["endpoint"]
            out["certificateAuthority"] = lookup["certificateAuthorities"][0]
            out["identities"] = lookup["identities"]
            # merged into the input's vpcConfig (the engine answers the whole object)
            out["vpcConfig"] = {k: lookup["vpcConfig"][k] for k in ("clusterSecurityGroupId", "vpcId")}
        if typ == "aws:eks/nodeGroup:NodeGroup":
            out["nodeGroupName"] = f"{inputs.get('nodeGroupNamePrefix', '')}{PLACEHOLDER}"
            out["resources"] = [
                {"autoscalingGroups": [{"name": f"eks-{inputs.get('nodeGroupNamePrefix', '')}{PLACEHOLDER}"}]}
            ]
    if typ == "pulumi:pulumi:StackReference":  # cluster.fromStack: the cluster stack's (completed per cloud below)
        out["outputs"] = {}
        out["secretOutputNames"] = []
    if typ.startswith("gcp:"):
        out.setdefault("name", inputs.get("name", name))
        if typ == "gcp:container/cluster:Cluster":  # a created cluster (cluster.create, issue 30)
            out["endpoint"] = f"{PLACEHOLDER}.gke.invalid"
            out["masterAuth"] = {"clusterCaCertificate": CA_DATA}
            out["nodeLocations"] = inputs.get("nodeLocations") or [f"{PLACEHOLDER}-zone-{z}" for z in "abc"]
        if typ == "gcp:serviceaccount/account:Account":
            out["email"] = (
                f"{inputs.get('accountId', name)}@{inputs.get('project', PLACEHOLDER)}.iam.gserviceaccount.com"
            )
    return out


def _state(placeholders: dict[str, Any], inputs: dict[str, Any], lean: bool) -> dict[str, Any]:
    """What the mock engine answers for a created resource."""
    if lean:
        # Outside a preview the SDK resolves every output the engine leaves out from the resource's own
        # input (pulumi/runtime/rpc.py resolve_outputs: "input prop the engine didn't give us a final
        # value for"), so echoing the inputs back only costs a serialize/deserialize round trip. Only
        # the placeholders an input does not already set are sent, which keeps "the input wins".
        state = {k: v for k, v in placeholders.items() if k not in inputs}
    else:
        state = {**placeholders, **inputs}
    # An object output the engine completes (a created EKS cluster's vpcConfig): the input's keys win.
    merged = {
        k: {**v, **inputs[k]}
        for k, v in placeholders.items()
        if isinstance(v, dict) and isinstance(inputs.get(k), dict)
    }
    return {**state, **merged}


def _wire_unknowns(value: Any) -> Any:
    """Inputs with every unknown (``pulumi.output.Unknown`` in a dry run) as the engine's wire sentinel."""
    from pulumi.output import Unknown

    if isinstance(value, Unknown):
        return UNKNOWN
    if isinstance(value, dict):
        return {k: _wire_unknowns(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_wire_unknowns(v) for v in value]
    return value


def _mock_classes():
    import pulumi

    MockMonitor = _answering_monitor()

    class Mocks(pulumi.runtime.Mocks):
        def __init__(self, preview: bool = False, lean: bool = True) -> None:
            self.preview = preview
            self.inputs: dict[tuple[str, str], dict[str, Any]] = {}
            self.strings: dict[str, str] = {}  # each recorded string once (synth_resolve._secrets_shown)
            self.lookups: list[str] = []
            self.unanswered: list[str] = []
            self.lock = threading.Lock()
            self.lean = lean and not preview  # a preview sends its inputs back, unknowns included
            self.stack_identity: dict[str, Any] = {}  # a referenced cluster stack's name, location, project
            self.cloud = ""  # whose outputs a referenced cluster stack answers (STACK_OUTPUTS)
            self.fleet_outputs: dict[str, dict[str, Any]] = {}  # a fleet worker stack's (synth_stacks.fleet_outputs)

        def new_resource(self, args: pulumi.runtime.MockResourceArgs):
            inputs = _secrets_shown(_wire_unknowns(args.inputs) if self.preview else args.inputs, self.strings)
            with self.lock:
                self.inputs[(args.typ, args.name)] = inputs
            if self.preview:
                # A resource about to be created has no id and no computed outputs during a preview.
                return "", inputs
            placeholders = _placeholder_outputs(args.typ, args.name, args.inputs)
            if "outputs" in placeholders and args.typ == "pulumi:pulumi:StackReference":
                placeholders["outputs"] = {**STACK_OUTPUTS.get(self.cloud, {}), **self.stack_identity}
                fleet_worker = self.fleet_outputs.get(args.inputs.get("name", ""))
                if fleet_worker is not None:  # its credential answered as the engine does: a secret output
                    placeholders["outputs"] = fleet_worker
                    placeholders["secretOutputNames"] = sorted(k for k in fleet_worker if k != "fleetWorker")
            state = _state(placeholders, args.inputs, self.lean)
            rid = f"{PLACEHOLDER}-{args.name}" if args.custom else ""
            return rid, state

        def call(self, args: pulumi.runtime.MockCallArgs):
            with self.lock:
                self.lookups.append(args.token)
                if args.token not in LOOKUPS:
                    self.unanswered.append(args.token)
            return LOOKUPS.get(args.token, {})

    class RecordingMonitor(MockMonitor):
        def __init__(self, mocks: Mocks, disabled_default_providers: frozenset[str] = frozenset()) -> None:
            super().__init__(mocks)
            self.meta: dict[str, tuple] = {}
            self.options: dict[str, tuple] = {}  # mock URN -> (urn, protect, retain, replace on, delete first, aliases)
            self.stack_urn: str | None = None
            self.engine_urns: dict[str, str] = {}  # the mock monitor's URN -> the engine's
            self.taken: set[str] = set()  # the engine's URNs so far (a duplicate is refused)
            self.disabled = disabled_default_providers
            self.stack_name = ""
            self.project = PROJECT
            self.lock = threading.Lock()

        def RegisterResource(self, request):
            package = request.type.split(":")[0]
            if (
                request.custom
                and not request.provider
                and not request.type.startswith("pulumi:providers:")
                and (package in self.disabled or "*" in self.disabled)
            ):
                # pulumi/pulumi pkg/resource/deploy/default_providers.go (shouldDenyRequest): the engine
                # refuses a default provider for a package listed in pulumi:disable-default-providers.
                raise RuntimeError(
                    f"{request.type} {request.name} names no provider, and default providers for {package!r} "
                    "are disabled (Pulumi.yaml pulumi:disable-default-providers)"
                )
            response = super().RegisterResource(request)
            if request.type == "pulumi:pulumi:Stack":
                self.stack_urn = response.urn
                return response
            with self.lock:
                urn = self.engine_urn(request.parent, request.type, request.name)
                if urn in self.taken:
                    # the engine refuses a second resource with the same URN; so does the synth
                    raise RuntimeError(f"duplicate resource URN {urn}")
                self.taken.add(urn)
                self.engine_urns[response.urn] = urn
                strings = self.mocks.strings  # kept to the end: tuples and each string once (~4 MiB at 1,000 tenants)
                mock_urn = strings.setdefault(response.urn, response.urn)
                self.meta[mock_urn] = (
                    strings.setdefault(request.type, request.type),
                    strings.setdefault(request.name, request.name),
                    strings.setdefault(request.parent, request.parent) or None,
                    request.provider or None,
                    tuple(strings.setdefault(d, d) for d in request.dependencies),
                    bool(request.custom),
                    tuple(sorted(request.ignoreChanges)),
                )
                self.options[mock_urn] = (
                    urn,
                    bool(request.protect),
                    bool(request.retainOnDelete),
                    tuple(sorted(request.replaceOnChanges)),
                    bool(request.deleteBeforeReplace),
                    tuple(sorted({*request.aliasURNs, *(self._alias_urn(request, a) for a in request.aliases)})),
                )
            return response

        def engine_urn(self, parent: str | None, typ: str, name: str, stack: str = "", project: str = "") -> str:
            """The URN the engine gives a resource (pulumi/pulumi pkg/resource/deploy/deployment.go: the
            parent's full qualified type, unless the parent is the root stack). The mock monitor's own URNs
            keep only the parent's last type and prefix the root stack's, which the engine does not."""
            if parent and parent != self.stack_urn:
                typ = f"{self.engine_urns[parent].split('::')[2]}${typ}"
            return f"urn:pulumi:{stack or self.stack_name}::{project or self.project}::{typ}::{name}"

        def _alias_urn(self, request, alias) -> str:
            """The URN an alias stands for, resolved as the engine does (pulumi/pulumi
            sdk/go/common/resource/alias.go): unset fields default to the resource's own."""
            if alias.WhichOneof("alias") == "urn":
                return alias.urn
            a = alias.spec
            parent = None if a.noParent else (a.parentUrn or request.parent or None)
            return self.engine_urn(parent, a.type or request.type, a.name or request.name, a.stack, a.project)

    return Mocks, RecordingMonitor


@contextmanager
def _program_dir_on_path(program: Path) -> Iterator[None]:
    """The program's directory first on ``sys.path`` while it runs, as Pulumi's Python language host runs it (the
    project directory is the program's): ``__main__.py`` imports ``components`` from the repository, also when the
    synth runs from the installed ``gpu-platform`` command, whose own code is ``gpu_platform``."""
    folder = str(program.resolve().parent)
    added = folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    try:
        yield
    finally:
        if added and folder in sys.path:
            sys.path.remove(folder)


def _config_for_engine(config: Mapping[str, Any]) -> dict[str, str]:
    """Config as the Pulumi CLI hands it to a program: strings, objects JSON-encoded."""
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items()}


def render(stack: str, config: Mapping[str, Any], preview: bool = False, *, lean: bool = True) -> Rendering:
    """Run ``__main__.py`` under the mock engine with this stack config; return what it registered.

    ``preview``: as a first ``pulumi preview`` would (a dry run; created resources' outputs unknown).

    ``lean`` skips SDK work the mocks make pointless (stack traces and debug messages per resource, inputs
    echoed back as outputs and empty answers serialized: synth_lean.py) and collects cyclic garbage seldom while
    the program runs;
    the output is the same either way (tests/test_synth.py compares them).
    Raises SpecError (before anything registers) when the config is invalid.
    """
    with _collector_relaxed(lean):
        return _render(stack, config, preview, lean)


def _render(stack: str, config: Mapping[str, Any], preview: bool, lean: bool) -> Rendering:
    from .config import handed_spec

    spec = load_spec(config)  # fail fast, nothing registered
    engine_config = _config_for_engine(config)
    # the program validates what the engine hands it; where that decodes to the same values, it renders this spec
    same = decode_config(engine_config) == decode_config(config)
    with handed_spec(engine_config, spec) if same else nullcontext():
        run = run_program(default_program(), stack, config, preview, lean=lean, spec=spec)
    return Rendering(
        spec=spec,
        stack=stack,
        resources=run.resources,
        lookups=run.lookups,
        unanswered_lookups=run.unanswered_lookups,
        outputs=run.outputs,
    )


@dataclass
class ProgramRun:
    """What the mock engine received from one program: its resources (sorted), lookups and stack outputs."""

    resources: list[Record]
    lookups: list[str]
    unanswered_lookups: list[str]
    outputs: dict[str, Any]


def run_program(
    program: Path | Callable[[], None],
    stack: str,
    config: Mapping[str, Any],
    preview: bool = False,
    *,
    lean: bool = True,
    project: str = PROJECT,
    project_file: Path | None = None,
    spec: Any = None,
) -> ProgramRun:
    """Run a Pulumi Python program (``__main__.py``; examples/component-python; or a function that is one) under
    the mock engine with this config; ``project``/``project_file``: its Pulumi.yaml (URNs, disabled default
    providers); ``spec``: the stack file's validated spec, so a referenced cluster stack answers as it names the
    cluster."""
    import pulumi
    from pulumi.runtime import settings
    from pulumi.runtime.config import set_all_config
    from pulumi.runtime.settings import get_root_resource
    from pulumi.runtime.stack import run_pulumi_func
    from pulumi.runtime.sync_await import _sync_await

    mocks_cls, monitor_cls = _mock_classes()
    mocks = mocks_cls(preview=preview, lean=lean)
    if spec is not None:  # a referenced cluster stack answers as the stack file names it (cluster.fromStack)
        mocks.stack_identity, mocks.cloud = stack_identity(spec), spec.cloud
        mocks.fleet_outputs = fleet_outputs(spec, PLACEHOLDER)
    monitor = monitor_cls(mocks, disabled_default_providers(project_file))
    monitor.stack_name = stack
    monitor.project = project
    settings.reset_options(project=project, stack=stack, preview=preview)
    set_all_config(_config_for_engine(config))
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=preview, monitor=monitor)
    # The mock root stack is process-global and registered its (empty) outputs when set_mocks made it;
    # pulumi.export() collects into its ``outputs``, which is read back below, fresh for every run.
    root = get_root_resource()
    root.outputs = {}  # type: ignore[union-attr]
    try:
        if callable(program):
            with _without_stack_traces(lean), _without_debug_logs(lean):
                _sync_await(run_pulumi_func(program))
        else:
            with _without_stack_traces(lean), _without_debug_logs(lean), _program_dir_on_path(program):
                _sync_await(run_pulumi_func(lambda: runpy.run_path(str(program), run_name="__main__")))
        outputs = _sync_await(_resolved(root.outputs)) or {}  # type: ignore[union-attr]
    finally:
        root.outputs = {}  # type: ignore[union-attr]
        set_all_config({})
        settings.reset_options()

    names = {urn: meta[1] for urn, meta in monitor.meta.items()}
    records = []
    for mock_urn, (typ, name, parent, provider, deps, custom, ignore) in monitor.meta.items():
        urn, protect, retain, replace_on, delete_first, aliases = monitor.options[mock_urn]
        # a provider reference is "<urn>::<id>"
        provider_name = names.get(provider.rsplit("::", 1)[0]) if provider else None
        records.append(
            Record(
                type=typ,
                name=name,
                parent=names.get(parent) if parent else None,
                provider=provider_name,
                # a StackReference is read, not registered: nothing to order against in resources.json
                depends_on=sorted({names.get(d, d) for d in deps if "$pulumi:pulumi:StackReference::" not in d}),
                inputs=mocks.inputs.get((typ, name), {}),
                custom=custom,
                ignore_changes=list(ignore),
                urn=urn,
                protect=protect,
                retain_on_delete=retain,
                replace_on_changes=list(replace_on),
                delete_before_replace=delete_first,
                aliases=list(aliases),
            )
        )
    records.sort(key=lambda r: (r.type, r.name, r.urn))
    return ProgramRun(
        resources=records,
        lookups=sorted(set(mocks.lookups)),
        unanswered_lookups=sorted(set(mocks.unanswered)),
        outputs=_plain(outputs),
    )


def disabled_default_providers(project_file: Path | None = None) -> frozenset[str]:
    """Packages whose default provider the project disables (``config: pulumi:disable-default-providers``
    in Pulumi.yaml, which applies to every stack); the synth refuses them as the engine does. Without a project
    file (the installed package's own program): the project's setting."""
    path = project_file or ROOT / "Pulumi.yaml"
    if project_file is None and not path.is_file():
        return PROJECT_DISABLED_DEFAULT_PROVIDERS
    project = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    value = (project.get("config") or {}).get("pulumi:disable-default-providers") or []
    if isinstance(value, dict):
        value = value.get("value") or []
    return frozenset(value)


def _plain(value: Any) -> Any:
    """Stack outputs as plain JSON data (the engine's wire format turns tuples into lists, and so on)."""
    if type(value) in LEAVES:  # most values, told apart before the abstract Mapping check
        return value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


# ------------------------------------------------------------------------------------------ writing
# components/cli/synth_files.py, re-exported here


def read_stack_file(path: Path) -> dict[str, Any]:
    """The ``config:`` map of a stack file; raises SpecError for a file that is not one (see stackfile.py)."""
    from ..spec import stackfile

    return stackfile.read(path)
