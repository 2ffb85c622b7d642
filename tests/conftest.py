"""Shared test fixtures.

- Every program run goes through ``components.cli.synth.render``: fresh mocks and a recording monitor,
  with ``pulumi.runtime.settings.reset_options()`` before and after, so runs never share state.
- Renderings of the shipped stacks are cached per session (they are immutable data).
- Upstream contracts (CRD schemas, chart values, examples) come from the repository's own copy in
  ``upstream/`` (refreshed from ../shared/upstream by ``make refresh-upstream``), so no test depends on
  anything beside the repository.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import gc
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from caching import cached

ROOT = Path(__file__).resolve().parent.parent


def build_wheel(out: Path) -> Path:
    """The package's wheel, built from the source tree into ``out``. ``pip wheel`` from a source tree writes
    ``build/`` and the egg-info inside it, so two builds at once (xdist workers: test_packaging, test_installed_package)
    collide; a lock on a file beside the system's temporary files makes them take turns."""
    import fcntl
    import subprocess
    import sys
    import tempfile

    with open(Path(tempfile.gettempdir()) / "gpu-platform-wheel-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "-q",
                "--no-deps",
                "--no-build-isolation",
                "-w",
                str(out),
                str(ROOT),
            ],
            check=True,
            capture_output=True,
        )
    (path,) = out.glob("gpu_platform-*.whl")
    return path


# tests/cluster/ runs against a real control plane, built by `make cluster-test`, which names it in
# GPU_PLATFORM_KUBE_BIN. `make test` does not collect it: none of those tests can pass without a server, and a
# missing or broken binary there is an error, never a skip.
collect_ignore_glob = [] if os.environ.get("GPU_PLATFORM_KUBE_BIN") else ["cluster/*"]
# tests/sched/ also needs the Kueue controller and helm (GPU_PLATFORM_SCHED_BIN, scripts/sched-bins.sh)
if not (os.environ.get("GPU_PLATFORM_KUBE_BIN") and os.environ.get("GPU_PLATFORM_SCHED_BIN")):
    collect_ignore_glob.append("sched/*")
# tests/engine/ also needs the Pulumi CLI and the kubernetes provider plugin (GPU_PLATFORM_ENGINE_BIN)
if not (os.environ.get("GPU_PLATFORM_KUBE_BIN") and os.environ.get("GPU_PLATFORM_ENGINE_BIN")):
    collect_ignore_glob.append("engine/*")
# the scheduler tests' day-2 module deploys through the engine: it needs all three
if not os.environ.get("GPU_PLATFORM_ENGINE_BIN"):
    collect_ignore_glob.append("sched/test_day2_under_load.py")
STACKS_DIR = ROOT / "stacks"
STACKS = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in STACKS_DIR.glob("Pulumi.*.yaml"))
UPSTREAM = ROOT / "upstream"  # the project's copy; see upstream/README.md

# Type tokens, named once.
NAMESPACE = "kubernetes:core/v1:Namespace"
RESOURCE_QUOTA = "kubernetes:core/v1:ResourceQuota"
LIMIT_RANGE = "kubernetes:core/v1:LimitRange"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
PRIORITY_CLASS = "kubernetes:scheduling.k8s.io/v1:PriorityClass"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
K8S_PROVIDER = "pulumi:providers:kubernetes"


def stack_config(stack: str) -> dict[str, Any]:
    """The ``config:`` map of a shipped stack file (a fresh copy, safe to modify)."""
    return copy.deepcopy(_stack_config(stack))


@functools.cache
def _stack_config(stack: str) -> dict[str, Any]:
    return yaml.safe_load((STACKS_DIR / f"Pulumi.{stack}.yaml").read_text())["config"]


# libyaml's loader where PyYAML has it: the same documents as yaml.safe_load (same resolver and constructors), ~10x
# faster on the megabytes of upstream CRDs (upstream/crds: 9.6 MB, ~5 s of CPU with the pure-Python parser)
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.cache
def upstream_yaml_docs(path: Path) -> tuple[Any, ...]:
    """The documents of an upstream YAML file, parsed once per session (shared: do not mutate)."""
    return tuple(yaml.load_all(path.read_text(), Loader=YAML_LOADER))


def kubernetes_schemas_parsed_once() -> None:
    """kubernetes-validate reads and parses the version's schema files (the definitions: megabytes of JSON) again
    for every object it validates, ~80 % of validating one; keep each parsed schema for the session (a pure read of
    files shipped with the package; a missing file still raises, uncached). Same schemas, same validator."""
    import kubernetes_validate.utils as kv

    if not hasattr(kv.schema_contents, "cache_info"):
        kv.schema_contents = functools.cache(kv.schema_contents)


@cached
def rendered(stack: str):
    """Rendering of a shipped stack (cached; do not mutate)."""
    from components.cli.synth import render

    return render(stack, stack_config(stack))


def render_config(config: dict[str, Any], stack: str = "test", stack_dir: Path | None = None):
    """Render an ad-hoc config (not cached); ``stack_dir``: where a fleet manager's worker stack files are (the
    folder of the stack file the config came from, as the CLI reads them)."""
    from components.cli.loader import stack_files_in
    from components.cli.synth import render

    if stack_dir is None:
        return render(stack, config)
    with stack_files_in(stack_dir):
        return render(stack, config)


def copy_stack_files(folder: Path, names: list[str] | tuple[str, ...]) -> Path:
    """Copies of the shipped stack files ``names`` in ``folder`` (a fleet's manager and workers, to edit)."""
    import shutil

    for name in names:
        shutil.copy(STACKS_DIR / f"Pulumi.{name}.yaml", folder / f"Pulumi.{name}.yaml")
    return folder


def edit_stack_file(folder: Path, name: str, change) -> None:
    """``change(config)`` applied to ``folder``'s ``Pulumi.<name>.yaml`` in place."""
    path = folder / f"Pulumi.{name}.yaml"
    doc = yaml.safe_load(path.read_text())
    change(doc["config"])
    path.write_text(yaml.safe_dump(doc))


def config_paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key path of a stack config (dict keys and list positions), parents before children."""
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += config_paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += config_paths(v, (*prefix, i))
    return out


def spec_problems(config: dict[str, Any], source: str = "stacks/Pulumi.t.yaml") -> list[str]:
    """The lines ``load_spec`` refuses ``config`` with (as the CLI prints them for ``source``), none if valid."""
    from components.cli.loader import load_spec
    from components.spec.model import SpecError

    try:
        load_spec(config)
    except SpecError as err:
        return err.lines(source)
    return []


def manifests(rendering, kind: str | None = None) -> list[dict[str, Any]]:
    return [m for m in rendering.manifests if kind is None or m["kind"] == kind]


def manifest(rendering, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
    for m in rendering.manifests:
        meta = m["metadata"]
        if m["kind"] == kind and meta["name"] == name and meta.get("namespace") == namespace:
            return m
    raise KeyError(f"{kind} {namespace}/{name} not rendered")


def release(rendering, name: str) -> dict[str, Any]:
    for r in rendering.releases:
        if r.inputs.get("name", r.name) == name:
            return r.inputs
    raise KeyError(f"Helm release {name} not rendered")


def stack_mirror(config: dict[str, Any]) -> tuple[str, str] | None:
    """(kind, registry) of the mirror a stack file names, read as the docs lay it out (docs/concepts/images.md):
    ECR ``<account>.dkr.ecr.<region>.amazonaws.com`` (pull-through on aws), Artifact Registry
    ``<region>-docker.pkg.dev/<project>`` (pull-through on gcp), else ``imageRegistry``; None without one."""
    images = config.get("gpu-platform:images") or {}
    cloud = config["gpu-platform:cloud"]
    if images.get("mirror") == "pull-through" and cloud == "aws":
        account = images["pullThrough"]["accountId"]
        region = (config.get("gpu-platform:cluster") or {}).get("region") or config["aws:region"]
        return "ecr", f"{account}.dkr.ecr.{region}.amazonaws.com"
    if images.get("mirror") == "pull-through" and cloud == "gcp":
        cluster = config["gpu-platform:cluster"]
        region = "-".join(cluster["location"].split("-")[:2])
        project = cluster.get("project") or config["gcp:project"]
        return "artifact-registry", f"{region}-docker.pkg.dev/{project}"
    registry = config.get("gpu-platform:imageRegistry")
    return ("registry", registry) if registry else None


def upstream_of(ref: str, config: dict[str, Any]) -> str:
    """``ref`` without the stack's mirror: ``<registry>/<host>/<path>`` (an Artifact Registry repository per host,
    its id the host with '-' for '.') back to ``<host>/<path>``; a reference not through the mirror as it is."""
    mirror = stack_mirror(config)
    if mirror is None or not ref.startswith(f"{mirror[1]}/"):
        return ref
    rest = ref[len(mirror[1]) + 1 :]
    if mirror[0] != "artifact-registry":
        return rest
    repo, _, path = rest.partition("/")
    return f"{repo.replace('-', '.')}/{path}"


def unmirrored(values: Any, config: dict[str, Any]) -> Any:
    """Chart values without what only moves images to the stack's mirror (a ``repository``, ``registry`` or Volcano's
    ``image_registry`` naming the mirror), a map left empty by that dropped: what the values say beside the mirror."""
    mirror = stack_mirror(config)
    if mirror is None:
        return values
    if isinstance(values, dict):
        out = {}
        for k, v in values.items():
            if k in ("repository", "registry", "image_registry") and isinstance(v, str) and v.startswith(mirror[1]):
                continue
            v = unmirrored(v, config)
            if isinstance(v, dict) and not v and values[k]:
                continue
            out[k] = v
        return out
    if isinstance(values, list):
        return [unmirrored(v, config) for v in values]
    return values


def pytest_collection_modifyitems(config, items):
    """Under ``make mutate`` (a mutant's child run, with -x), run first the test files named after the mutated
    module (tests/test_karpenter*.py for components/render/aws/karpenter.py): they fail soonest, before the files
    that render every stack. A normal run keeps pytest's order."""
    mutant = os.environ.get("MUTANT_UNDER_TEST", "")
    if "__mutmut_" not in mutant:
        return
    module = mutant.rsplit(".", 1)[0].rsplit(".", 1)[-1]  # components.render.aws.iam_karpenter.x_f__mutmut_1
    tokens = {t for t in module.split("_") if len(t) >= 3} | {module}
    items.sort(key=lambda item: not any(t in item.path.name for t in tokens))


def monitoring_of(source: Any) -> Any:
    """The monitoring plan the monitoring renderers take (components/plan/monitoring.py): a test holding a spec gets
    the plan of it; a plan is passed through."""
    from components.plan.monitoring import MonitoringPlan, decide

    return source if isinstance(source, MonitoringPlan) else decide(source)


@pytest.fixture
def failed_render():
    """For a test whose render stops with an error. The registrations still waiting on the failed check stay on the
    SDK's event loop, and their futures hold exceptions nobody retrieves. After the test (its frame, and the
    ExceptionInfo holding them, gone) finish every pending task, collect the futures and retrieve their
    exceptions here, so none is finalized unretrieved during a later test: asyncio then logs "exception was never
    retrieved", and CPython 3.11 raises SystemError when that happens inside ``ast.parse``
    (tests/test_structure.py).

    What exists before the test (in a worker: the session's cached renderings, millions of objects) is frozen
    while it runs (``gc.freeze``), so the collection and the walk below cover only what the test made: walking the
    whole heap cost ~0.6 s per test. The futures in question are made by the test's own render."""
    gc.freeze()
    try:
        yield
        loop = asyncio.get_event_loop()
        for _ in range(10):
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            if not pending:
                break
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        gc.collect()
        # Futures still referenced (the SDK's settings keep some until the next render) are finalized whenever
        # their last reference goes: mark their exceptions retrieved now, so that finalizing them logs nothing.
        for obj in gc.get_objects():
            if isinstance(obj, asyncio.Future) and obj.done() and not obj.cancelled():
                obj.exception()
    finally:
        gc.unfreeze()


class MockTap:
    """The offline synth's mocks, wrapped for one test (``tap_mocks``): every lookup is recorded as ``(token,
    args)`` in ``calls``, every registered resource's type in ``registered``, and ``answers[token]`` (keys in
    camelCase, as on the wire) is laid over that lookup's offline answer."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.registered: list[str] = []
        self.answers: dict[str, dict[str, Any]] = {}


@pytest.fixture
def tap_mocks(monkeypatch) -> MockTap:
    from components.cli import synth

    mocks_cls, monitor_cls = synth._mock_classes()
    tap = MockTap()

    class Tapped(mocks_cls):  # type: ignore[misc,valid-type]
        def call(self, args):
            tap.calls.append((args.token, dict(args.args)))
            got = super().call(args)
            return {**got, **tap.answers[args.token]} if args.token in tap.answers else got

        def new_resource(self, args):
            tap.registered.append(args.typ)
            return super().new_resource(args)

    monkeypatch.setattr(synth, "_mock_classes", lambda: (Tapped, monitor_cls))
    return tap


def strict_crd_schema(schema: Any) -> Any:
    """A CRD's openAPIV3Schema as JSON Schema that also refuses unknown fields (what the API server prunes or, with
    fieldValidation=Strict, refuses): every object with ``properties`` and no ``additionalProperties`` or
    ``x-kubernetes-preserve-unknown-fields`` gets ``additionalProperties: false``; int-or-string fields accept both."""
    if isinstance(schema, list):
        return [strict_crd_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: strict_crd_schema(v) for k, v in schema.items()}
    if (
        "properties" in out
        and "additionalProperties" not in out
        and not out.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    if out.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.pop("anyOf", None)
        out["type"] = ["integer", "string"]
    return out
