"""The stack spec: one pydantic model for a whole stack file, and its validation.

Data flows one way: stack file -> ``loader.load_spec`` -> ``StackSpec`` -> components -> resources.
Validation has two phases, and both report every problem at once:

1. structure (pydantic): types, bounds, unknown keys (``parse_spec`` here);
2. rules: cross references (a quota naming an unknown pool) and what cannot work on real hardware or a real cloud. Each
   rule is a function marked ``@rule`` next to the code it guards (``plan/aws/rules.py``, ``plan/sharing.py`` ...);
   ``components/cli/loader.py`` lists those modules and runs their rules after this module's phase.

The spec layer is the bottom of the package: this module (the ``StackSpec`` root, problems, parsing) and its parts
by concern (``base``, ``pools``, ``tenants``, ``options``, ``cluster``, ``images``...). It imports only ``catalog``
and ``validation``, never a rule, a derivation or a component (tests/test_structure.py). Callers import all from here.

A problem is a key path in the stack file (``gpu-platform:nodePools[1].sharing.replicas``) and a message.
"""

import difflib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, model_validator
from pydantic.json_schema import GenerateJsonSchema, NoDefault

from .base import (
    DNS_LABEL,
    DURATION,
    LABEL_KEY,
    MAX_GPUS,
    MAX_NODES,
    MAX_SHARING_REPLICAS,
    NAMESPACE,
    QUANTITY,
    Duration,
    Model,
    Name,
    Quantity,
)
from .fleet import Fleet, FleetWorkerRole
from .images import DEFAULT_IMAGE_GIB, ImageCache, Images, PullThrough, UpstreamCredential, WorkloadImage
from .options import (
    DEFAULT_CRITICAL_XIDS,
    DEFAULT_KUEUE_INTEGRATIONS,
    Addons,
    AlertThresholds,
    Budget,
    ChartOverride,
    ChartSourceStr,
    ClusterRef,
    GpuOperatorOptions,
    ImageRegistryStr,
    KarpenterOptions,
    KueueIntegration,
    Monitoring,
    PriceOverride,
    Pricing,
    Protection,
    Scheduling,
    default_kueue_integrations,
)
from .pools import (
    EksPoolOptions,
    GkeNetwork,
    GkePoolOptions,
    GpuSpec,
    KarpenterPoolOptions,
    NodePool,
    Reservation,
    Sharing,
    Taint,
)
from .storage import ClaimQuota, Filestore, FileSystem, FsxLustre, GcsFuse, Storage
from .tenants import DEFAULT_PRIORITY_CLASSES, PriorityClassSpec, ResourceBudget, Tenant
from .validation import QUOTE_MAX, LabelKey, LabelValue, quote

__all__ = [
    "DEFAULT_CRITICAL_XIDS",
    "DEFAULT_IMAGE_GIB",
    "DEFAULT_KUEUE_INTEGRATIONS",
    "DEFAULT_PRIORITY_CLASSES",
    "DNS_LABEL",
    "DURATION",
    "LABEL_KEY",
    "MAX_DEPTH",
    "MAX_DIGITS",
    "MAX_GPUS",
    "MAX_NODES",
    "MAX_SHARING_REPLICAS",
    "NAMESPACE",
    "PATTERN_HELP",
    "PROVIDER_KEYS",
    "QUANTITY",
    "RULE_MARK",
    "Addons",
    "AlertThresholds",
    "Budget",
    "ChartOverride",
    "ClaimQuota",
    "ClusterRef",
    "Duration",
    "EksPoolOptions",
    "FileSystem",
    "Filestore",
    "FsxLustre",
    "GcsFuse",
    "GkeNetwork",
    "GkePoolOptions",
    "GpuOperatorOptions",
    "GpuSpec",
    "ImageCache",
    "Images",
    "KarpenterOptions",
    "KarpenterPoolOptions",
    "KueueIntegration",
    "Model",
    "Monitoring",
    "Name",
    "NodePool",
    "PriceOverride",
    "Pricing",
    "PriorityClassSpec",
    "Problem",
    "Protection",
    "PullThrough",
    "Quantity",
    "Reservation",
    "ResourceBudget",
    "Rule",
    "Scheduling",
    "Sharing",
    "SpecError",
    "StackSpec",
    "Storage",
    "Taint",
    "Tenant",
    "UpstreamCredential",
    "WorkloadImage",
    "decode_config",
    "is_rule",
    "key",
    "parse_spec",
    "rule",
    "stack_file_schema",
]


class StackSpec(Model):
    cloud: Literal["aws", "gcp", "existing"] = Field(
        description="aws: EKS; gcp: GKE; existing: any conformant cluster reached through a kubeconfig (no cloud "
        "resources)"
    )
    cluster: ClusterRef = Field(
        default_factory=lambda: ClusterRef(), description="the cluster: found by name, created, or from another stack"
    )
    node_pools: list[NodePool] = Field(default_factory=lambda: [], description="the GPU node pools")
    tenants: list[Tenant] = Field(
        default_factory=lambda: [], description="the teams sharing the GPUs: a namespace, quotas and queues each"
    )
    priority_classes: list[PriorityClassSpec] = Field(
        default_factory=lambda: list(DEFAULT_PRIORITY_CLASSES),
        description="the PriorityClasses tenants choose from; a list here replaces the defaults",
    )
    addons: Addons = Field(default_factory=lambda: Addons(), description="what the platform installs")
    gpu_operator: GpuOperatorOptions = Field(
        default_factory=lambda: GpuOperatorOptions(),
        description="the NVIDIA GPU Operator: driver, toolkit, how pods get GPUs",
    )
    monitoring: Monitoring = Field(
        default_factory=lambda: Monitoring(),
        description="GPU metrics, alerts and dashboards, and which Prometheus reads them",
    )
    scheduling: Scheduling = Field(
        default_factory=lambda: Scheduling(),
        description="Kueue: queues, cohort, ready timeouts, managed kinds, topology",
    )
    charts: dict[str, ChartOverride] = Field(
        default_factory=lambda: {},
        description="per chart (gpuOperator, kueue, dcgmExporter, ...): another exact version or source than the "
        "pinned one",
    )
    chart_source: ChartSourceStr | None = Field(
        default=None, description="where every chart comes from (default: each chart's official repository)"
    )
    image_registry: ImageRegistryStr | None = Field(
        default=None,
        description="pull every image the platform installs (each chart's images and its own) through this registry "
        "(a mirror), as <registry>/<upstream host>/<path>",
    )
    system_node_selector: dict[LabelKey, LabelValue] = Field(
        default_factory=lambda: {}, description="where controllers run (they never tolerate the GPU taint)"
    )
    tags: dict[str, str] = Field(
        default_factory=lambda: {},
        description="tags (aws) or labels (gcp) on the cloud resources the platform creates (node groups, node "
        "pools, the cluster, buckets)",
    )
    karpenter: KarpenterOptions = Field(
        default_factory=lambda: KarpenterOptions(), description="aws: Karpenter's stack-wide settings"
    )
    protect: Protection = Field(default_factory=lambda: Protection(), description="what pulumi refuses to delete")
    pricing: Pricing = Field(default_factory=lambda: Pricing(), description="price overrides for the cost report")
    budget: Budget = Field(
        default_factory=lambda: Budget(), description="the most the fleet may cost per hour (a policy)"
    )
    storage: Storage = Field(default_factory=lambda: Storage(), description="shared file systems")
    fleet: Fleet | None = Field(
        default=None, description="this stack is a MultiKueue manager: its workers and who dispatches where"
    )
    fleet_worker: FleetWorkerRole | None = Field(
        default=None, description="this stack is a MultiKueue worker: the manager that dispatches here"
    )
    images: Images = Field(
        default_factory=lambda: Images(),
        description="how images reach the nodes: registry cache, warm pools, declared images",
    )

    @model_validator(mode="after")
    def _kueue_integrations_follow_the_operators(self) -> "StackSpec":
        """A stack that names no ``scheduling.kueueIntegrations`` gets the base kinds and those of the workload
        operators it installs (``options.default_kueue_integrations``): a kind's integration is on only with its
        operator; a fleet manager gets exactly the fleet's kinds. A list the stack names is kept as written (the
        rules refuse a kind without its operator, and on a manager a kind the fleet does not dispatch)."""
        if "kueue_integrations" in self.scheduling.model_fields_set:
            return self
        a = self.addons
        wanted = default_kueue_integrations(a.jobset, a.leader_worker_set, a.kuberay, a.trainer)
        if self.fleet is not None:  # a manager runs nothing: Kueue manages what it dispatches (plan/fleet_rules.py)
            wanted = list(self.fleet.kinds)
        if wanted != self.scheduling.kueue_integrations:
            object.__setattr__(self, "scheduling", self.scheduling.model_copy(update={"kueue_integrations": wanted}))
        return self

    # -- lookups used across components ---------------------------------------------------------
    def pool(self, name: str) -> NodePool:
        """The pool of that name (StopIteration: none). By a name index kept once per spec (the plan asks per
        tenant and quota entry: a scan was pools x tenants), rebuilt for a copy or another pool list."""
        got = self.__dict__.get("_pool_index")
        if got is None or got[0] != id(self) or got[1] is not self.node_pools or got[2] != len(self.node_pools):
            got = (id(self), self.node_pools, len(self.node_pools), {p.name: p for p in reversed(self.node_pools)})
            self.__dict__["_pool_index"] = got
        found = got[3].get(name)
        if found is None:
            raise StopIteration(name)
        return found

    def priority_class(self, name: str) -> PriorityClassSpec:
        return next(c for c in self.priority_classes if c.name == name)

    @property
    def karpenter_enabled(self) -> bool:
        if self.addons.karpenter is not None:
            return self.addons.karpenter
        return any(p.provisioner == "karpenter" for p in self.node_pools)

    @property
    def node_monitoring_agent_enabled(self) -> bool:
        """aws only: the EKS node monitoring agent (see ``Addons.node_monitoring_agent``)."""
        if self.cloud != "aws":
            return False
        if self.addons.node_monitoring_agent is not None:
            return self.addons.node_monitoring_agent
        return any(
            (p.provisioner == "managed" and p.eks.auto_repair) or p.provisioner == "karpenter" for p in self.node_pools
        )

    @property
    def cluster_autoscaler_enabled(self) -> bool:
        """aws only: the Cluster Autoscaler scales the managed node groups (on by default when there are any)."""
        if self.cloud != "aws":
            return False
        if self.addons.cluster_autoscaler is not None:
            return self.addons.cluster_autoscaler
        return any(p.provisioner == "managed" for p in self.node_pools)


# ---------------------------------------------------------------------------------------- problems


@dataclass(frozen=True, order=True)
class Problem:
    """One problem with the stack file: the key path it is at and what is wrong."""

    path: str  # key path in the stack file, e.g. gpu-platform:nodePools[1].sharing.replicas
    message: str

    def line(self, source: str) -> str:
        return f"{source}: {self.path}: {self.message}"


_LONG_TOKEN = re.compile(rf"\S{{{QUOTE_MAX + 1},}}")


def _shorten(text: str) -> str:
    """Cut every run of more than ~80 non-blank characters (a quoted 5 MB value, a name built from it)."""
    text = " ".join(text.split())  # one line per problem, whatever the input held
    return _LONG_TOKEN.sub(lambda m: f"{m.group()[: QUOTE_MAX - 20]}…({len(m.group())} characters)", text)


class SpecError(Exception):
    def __init__(self, problems: Iterable[Problem]):
        # a path is cut only when absurd (a legitimate label key runs to 317 characters)
        self.problems = sorted(
            {Problem(p.path if len(p.path) <= 400 else _shorten(p.path), _shorten(p.message)) for p in problems}
        )
        super().__init__("\n".join(f"{p.path}: {p.message}" for p in self.problems))

    def lines(self, source: str) -> list[str]:
        return [p.line(source) for p in self.problems]


def key(*parts: str | int) -> str:
    """Key path in stack-file syntax: key('nodePools', 1, 'sharing') -> gpu-platform:nodePools[1].sharing"""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else f"{NAMESPACE}:{part}"
    return out


Rule = Callable[[StackSpec], Iterable[Problem]]
RULE_MARK = "__stack_rule__"


def rule(fn: Rule) -> Rule:
    """Mark a cross-field rule; rules live next to the code they guard, and ``components/cli/loader.py`` runs
    the marked functions of the modules it lists (nothing is registered at import time)."""
    setattr(fn, RULE_MARK, True)
    return fn


def is_rule(obj: object) -> bool:
    return callable(obj) and getattr(obj, RULE_MARK, False) is True


# ------------------------------------------------------------------------------------------ loading

PROVIDER_KEYS = {"aws:region": ("region",), "gcp:project": ("project",)}

# What a pattern means, for messages a person can act on (the others print the pattern).
PATTERN_HELP = {
    DNS_LABEL: "a valid name (lower-case letters, digits and '-', starting with a letter, ending with a letter or "
    "digit)",
    QUANTITY: "a Kubernetes quantity such as 500m, 64, 256Gi or 4Ti",
}

_MESSAGES: dict[str, Callable[[dict[str, Any]], str]] = {
    "missing": lambda e: "is required",
    "extra_forbidden": lambda e: "unknown key",
    "greater_than_equal": lambda e: f"must be at least {e['ctx']['ge']}",
    "greater_than": lambda e: f"must be greater than {e['ctx']['gt']}",
    "less_than_equal": lambda e: f"must be at most {e['ctx']['le']}",
    "less_than": lambda e: f"must be less than {e['ctx']['lt']}",
    "literal_error": lambda e: f"must be one of {e['ctx']['expected']}",
    "string_pattern_mismatch": lambda e: (
        f"{quote(e['input'])} is not {PATTERN_HELP[e['ctx']['pattern']]}"
        if e["ctx"]["pattern"] in PATTERN_HELP
        else f"{quote(e['input'])} does not match {e['ctx']['pattern']}"
    ),
    "string_too_long": lambda e: f"must be at most {e['ctx']['max_length']} characters",
    "too_short": lambda e: f"must have at least {e['ctx']['min_length']} item(s)",
    "int_type": lambda e: f"must be a whole number, not {quote(e['input'])}",
    "int_parsing": lambda e: f"must be a whole number, not {quote(e['input'])}",
    "int_from_float": lambda e: f"must be a whole number, not {quote(e['input'])}",
    "bool_type": lambda e: f"must be true or false, not {quote(e['input'])}",
    "bool_parsing": lambda e: f"must be true or false, not {quote(e['input'])}",
    "string_type": lambda e: f"must be a string, not {quote(e['input'])}{_yaml_hint(e['input'])}",
    "int_too_big": lambda e: "is far too large a number",
    "float_type": lambda e: f"must be a number, not {quote(e['input'])}",
    "float_parsing": lambda e: f"must be a number, not {quote(e['input'])}",
    "finite_number": lambda e: "must be a finite number",
    "too_long": lambda e: f"must have at most {e['ctx']['max_length']} item(s)",
    "dict_type": lambda e: "must be a mapping",
    "list_type": lambda e: "must be a list",
    "model_type": lambda e: "must be a mapping",
    "model_attributes_type": lambda e: "must be a mapping",
}


def _yaml_hint(value: Any) -> str:
    """Why YAML made a non-string of what the author meant as text."""
    if isinstance(value, bool):
        return " (YAML 1.1 reads on/off/yes/no/true/false as booleans: quote it)"
    if value is None:
        return " (YAML reads an empty value, ~ or null as nothing: quote it)"
    if isinstance(value, (int, float)):
        return " (YAML reads it as a number: quote it)"
    return ""


def _message(err: dict[str, Any], model_fields: Iterable[str]) -> str:
    kind = err["type"]
    if kind == "value_error":
        return str(err["ctx"]["error"])
    msg = _MESSAGES.get(kind, lambda e: _cut(e["msg"]))(err)
    if kind == "extra_forbidden":
        close = difflib.get_close_matches(str(err["loc"][-1]), list(model_fields), n=1)
        if close:
            msg += f" (did you mean {close[0]}?)"
    return msg


def _fields_at(loc: tuple[Any, ...]) -> list[str]:
    """Aliases of the model fields valid at the parent of ``loc`` (for 'did you mean')."""
    model: Any = StackSpec
    for part in loc[:-1]:
        if isinstance(part, int) or model is None:
            continue
        field = next((f for f in model.model_fields.values() if f.alias == part), None)
        if field is None:
            return []
        ann = field.annotation
        args = getattr(ann, "__args__", ())
        model = next((a for a in (ann, *args) if isinstance(a, type) and issubclass(a, BaseModel)), None)
    if model is None:
        return []
    return [f.alias or n for n, f in model.model_fields.items()]


def _cut(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


MAX_DEPTH = 64  # nesting of mappings and lists a stack spec ever needs is below 10
MAX_DIGITS = 30  # no count or bound in a stack spec needs more digits


class _HugeNumber(ValueError):
    pass


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise _HugeNumber(f"a number with {len(text.lstrip('-'))} digits")
    return int(text)


def decode_config(raw: Mapping[str, Any], problems: list[Problem] | None = None) -> dict[str, Any]:
    """Pulumi hands config to programs as strings (objects JSON-encoded); decode them.

    A string that is JSON but cannot be held (numbers of hundreds of digits, nesting thousands deep) is
    reported in ``problems`` (when given) under its key, for our namespace only; other values stay strings.
    """
    out: dict[str, Any] = {}
    for k, v in raw.items():
        if isinstance(v, str):
            try:
                v = json.loads(v, parse_int=_parse_int)
            except (_HugeNumber, RecursionError) as exc:
                if problems is not None and k.startswith(f"{NAMESPACE}:"):
                    what = "nested too deeply" if isinstance(exc, RecursionError) else f"holds {exc}"
                    problems.append(Problem(k, f"{what}; not a value this program can use"))
                    continue
            except ValueError:
                pass
        out[k] = v
    return out


def _too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """True when mappings/lists nest deeper than ``limit`` (iterative: no recursion limit to hit)."""
    stack = [(value, 0)]
    seen = 0
    while stack:
        node, depth = stack.pop()
        seen += 1
        if depth > limit:
            return True
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
    return False


# Namespaces other programs and providers own; keys in them are passed over (Pulumi passes them as strings).
def _near_namespace(ns: str) -> bool:
    squash = re.sub(r"[-_.\s]", "", ns.lower())
    return squash == NAMESPACE.replace("-", "") or bool(difflib.get_close_matches(ns.lower(), [NAMESPACE], cutoff=0.75))


def _config_keys(config: Mapping[str, Any], problems: list[Problem]) -> dict[str, Any]:
    """Keys as Pulumi's config.ParseKey reads them (pulumi/pulumi sdk/go/common/resource/config/key.go):
    ``namespace:name``, or the old ``namespace:config:name``; anything else is refused, as Pulumi refuses
    it. A near miss of ``gpu-platform:`` is refused with a hint rather than ignored."""
    out: dict[str, Any] = {}
    for k, v in config.items():
        if not isinstance(k, str):
            problems.append(Problem(quote(k), "config keys must be strings of the form namespace:name"))
            continue
        parts = k.split(":")
        if len(parts) == 3 and parts[1] == "config":
            parts = [parts[0], parts[2]]
        if len(parts) != 2 or not parts[0] or not parts[1]:
            known = len(parts) == 1 and k in {f.alias for f in StackSpec.model_fields.values()}
            hint = f" (did you mean {NAMESPACE}:{k}?)" if known else ""
            problems.append(
                Problem(
                    quote(k, 60).strip("'"), f"not a config key of the form namespace:name (Pulumi refuses it){hint}"
                )
            )
            continue
        ns, name = parts
        if ns != NAMESPACE and _near_namespace(ns):
            problems.append(
                Problem(quote(k, 60).strip("'"), f"unknown namespace {ns!r} (did you mean {NAMESPACE}:{name}?)")
            )
            continue
        out[f"{ns}:{name}"] = v
    return out


def parse_spec(config: Mapping[str, Any]) -> StackSpec:
    """The spec of a stack's config map (``{"gpu-platform:cloud": "aws", ...}``), structure checked: types,
    bounds, unknown keys; not yet the rules (``components.cli.loader.load_spec`` runs both).

    Values may be decoded (YAML) or as Pulumi passes them (strings, objects as JSON).
    Raises SpecError listing every problem.
    """
    early: list[Problem] = []
    config = decode_config(_config_keys(config, early), early)
    body: dict[str, Any] = {}
    for k, v in config.items():
        ns, _, name = k.partition(":")
        if ns == NAMESPACE:
            if _too_deep(v):
                early.append(Problem(k, f"is nested more than {MAX_DEPTH} levels deep"))
                continue
            body[name] = v
    if early:
        raise SpecError(early)
    provided: dict[str, str] = {}  # cluster field -> the provider key it came from, for messages
    if isinstance(body.get("cluster", {}), dict):  # anything else is reported by pydantic
        cluster = dict(body.get("cluster") or {})
        for pkey, (field,) in PROVIDER_KEYS.items():
            if pkey in config and field not in cluster:
                cluster[field] = config[pkey]
                provided[key("cluster", field)] = pkey
        body["cluster"] = cluster
    try:
        spec = StackSpec.model_validate(body)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = tuple(err["loc"])
            msg = _message(err, _fields_at(loc))
            if loc and loc[-1] == "[key]":  # a mapping key is wrong, not its value
                loc, msg = loc[:-1], f"key {msg}"
            path = key(*loc) if loc else NAMESPACE
            problems.append(Problem(provided.get(path, path), msg))
        raise SpecError(problems) from None
    return spec


class _FactoryDefaults(GenerateJsonSchema):
    """Pydantic leaves out a default made by a ``default_factory`` (a list, a map); an editor and the reference
    page should show it like any other. A factory that makes a whole model (``cluster: {}``) is left out: its
    keys carry their own defaults."""

    def get_default_value(self, schema: Any) -> Any:
        factory = schema.get("default_factory")
        if factory is None or schema.get("default_factory_takes_data"):
            return super().get_default_value(schema)
        value = factory()
        return NoDefault if isinstance(value, BaseModel) else value


def stack_file_schema() -> dict[str, Any]:
    """JSON Schema of a stack file (``stacks/Pulumi.<stack>.yaml``), for editors."""
    inner = StackSpec.model_json_schema(
        by_alias=True, ref_template="#/$defs/{model}", schema_generator=_FactoryDefaults
    )
    defs = inner.pop("$defs", {})
    props = {f"{NAMESPACE}:{k}": v for k, v in inner["properties"].items()}
    props["aws:region"] = {"type": "string", "description": "AWS region of the EKS cluster"}
    props["gcp:project"] = {"type": "string", "description": "GCP project of the GKE cluster"}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "gpu-platform stack file",
        "type": "object",
        "properties": {
            "config": {
                "type": "object",
                "properties": props,
                "required": [f"{NAMESPACE}:{r}" for r in inner.get("required", [])],
                # other namespaces (aws:, gcp:, pulumi:) pass; unknown gpu-platform: keys do not
                "propertyNames": {
                    "anyOf": [{"enum": sorted(props)}, {"not": {"pattern": f"^{re.escape(NAMESPACE)}:"}}]
                },
            },
            "secretsprovider": {"type": "string"},
            "encryptedkey": {"type": "string"},
            "encryptionsalt": {"type": "string"},
        },
        "$defs": defs,
    }
