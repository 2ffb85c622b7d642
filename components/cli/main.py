"""The ``gpu-platform`` command: synth, check, plan, cost, explain, plugins and schema.

Exit codes: 0 rendered (warnings, printed on stderr, do not fail); 1 a mandatory policy is violated (with
--strict: also any warning); 2 the stack config is invalid (one line per problem naming the stack file and key
path; nothing is written); 4 internal error (a bug: one line, and the traceback with --debug). explain: 0 every
workload runs, 3 one stays pending (its verdict on stdout). diff: 0 nothing is replaced, deleted or drained, 3
something is (listed on stdout). Stack files: stacks/Pulumi.STACK.yaml of the working directory (--stacks DIR, or
--config FILE).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# pydantic's first model build looks for plugins by scanning every installed distribution's entry points
# (pydantic/plugin/_loader.py get_plugins: ~5-9 ms of each command here, with none installed). The command validates
# a stack file and exits, with no use for one; a user who wants a plugin (logfire's, say) while it runs sets
# PYDANTIC_DISABLE_PLUGINS themselves (any value, even empty, is kept). Set in the command's environment, so the
# processes it starts inherit it (kubectl for `explain --context`, nothing that builds pydantic models). A Pulumi
# program under the engine (__main__.py, a user's own using the GpuPlatform component) never imports this module;
# `synth --program FILE` runs one inside the command, so there it holds too.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")

EXIT_OK, EXIT_POLICY, EXIT_INVALID, EXIT_INTERNAL = 0, 1, 2, 4  # 3: explain's 'pending' verdict
POLICY_CONFIG_HELP = "policy pack config (JSON, the format of pulumi --policy-pack-config): levels and settings"
STACKS_HELP = "the folder of the stack files (default: stacks in the working directory)"
STRICT_HELP = "exit 1 on any warning or advisory policy finding too, not only on a mandatory violation"
PREVIEW_HELP = (
    "render as a first `pulumi preview` sees it: outputs of resources to be created are unknown (policies that "
    "meet one report an advisory 'can't run during preview', as under the engine)"
)


def _stack_file(stack: str, config: str | None, stacks_dir: str | None = None) -> Path:
    from .outcome import stack_file

    return stack_file(stack, config, stacks_dir)


def _read_stack(args: argparse.Namespace) -> tuple[Path, dict[str, Any]]:
    """The stack file's path and config map; SpecError when it is missing (listing the stacks there) or bad."""
    from .outcome import require_stack_file
    from .synth import read_stack_file

    config = getattr(args, "config", None)
    path = _stack_file(args.stack, config, getattr(args, "stacks", None))
    require_stack_file(path, config)
    return path, read_stack_file(path)


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _render(args: argparse.Namespace):
    from ..spec.model import SpecError
    from .loader import stack_files_in
    from .synth import render

    path = _stack_file(args.stack, args.config, getattr(args, "stacks", None))
    try:
        path, config = _read_stack(args)
        with stack_files_in(path.parent):  # a fleet manager's workers beside its stack file
            return render(args.stack, config, preview=getattr(args, "preview", False)), None
    except SpecError as err:
        for line in err.lines(_display(path)):
            print(line, file=sys.stderr)
        return None, EXIT_INVALID
    except Exception as err:
        from ..render.cluster_stack import MissingOutputs

        if not isinstance(err, MissingOutputs):
            raise
        # the referenced cluster stack lacks an output (or names another cluster): the stack cannot deploy
        print(f"{_display(path)}: {err}", file=sys.stderr)
        return None, EXIT_INVALID


def _render_frozen(args: argparse.Namespace, then):
    """``_render``, then ``then(rendering)`` with the rendered heap frozen (``synth.rendered_heap_frozen``)."""
    from contextlib import ExitStack

    from . import synth

    with ExitStack() as frozen:
        with synth.collector_relaxed():  # the render's thresholds until the heap is frozen
            rendering, code = _render(args)
            if rendering is None:
                return code or EXIT_INVALID
            frozen.enter_context(synth.rendered_heap_frozen())
        return then(rendering)


def cmd_synth(args: argparse.Namespace) -> int:
    if getattr(args, "program", None):
        return _synth_program(args)
    if not args.stack:
        print("gpu-platform synth: name a STACK (or --program FILE)", file=sys.stderr)
        return EXIT_INVALID
    return _render_frozen(args, lambda rendering: _synth(args, rendering))


def _synth(args: argparse.Namespace, rendering) -> int:
    from . import synth

    report, code = _policies(rendering, args.policy_config)
    if code:
        return code
    out = Path(args.out or f"out/{args.stack}")
    written = synth.write(out, _with_report(synth.file_items(rendering, report.sections if report else {}), report))
    print(_wrote(written, out, rendering))
    return _conclude(args, rendering, report)


def _wrote(written: Any, out: Path, rendering: Any) -> str:
    """What the synth wrote (``synth.write``'s ``Written``): the files it left unchanged said apart."""
    unchanged = written.files - written.changed
    kept = f", {unchanged} unchanged" if unchanged else ""
    return f"wrote {written.changed} files to {out}{kept} ({len(rendering.resources)} resources)"


def _with_report(items: Iterator[tuple[str, Any]], report: Any) -> Iterator[tuple[str, Any]]:
    """The synth's files (``synth.file_items``: path and text or its parts, each written as it is made), then the
    policy report if any."""
    yield from items
    if report:
        yield "policy-report.json", report.json()


def _conclude(args: argparse.Namespace, rendering: Any, report: Any) -> int:
    """Every warning on stderr, then the line saying what the exit code means."""
    from .outcome import conclude, stack_warnings

    warns = stack_warnings(rendering.spec, rendering.stack, rendering.unanswered_lookups)
    return conclude(args.stack, report, warns, getattr(args, "strict", False))


def _synth_program(args: argparse.Namespace) -> int:
    """synth --program FILE: a user's own Pulumi program (one that uses the GpuPlatform component), offline."""
    from ..explain.rendering import Rendering
    from . import synth
    from .outcome import program_config

    program = Path(args.program)
    if not program.is_file():
        print(f"{args.program}: no such program file", file=sys.stderr)
        return EXIT_INVALID
    stack = args.stack or "dev"
    project, project_file, config = program_config(program, args.stack)
    run = synth.run_program(program, stack, config, project=project, project_file=project_file)
    rendering = Rendering(spec=None, stack=stack, resources=run.resources, outputs=run.outputs)  # type: ignore[arg-type]
    report, code = _policies(rendering, args.policy_config)
    if code:
        return code
    out = Path(args.out or f"out/{project}-{stack}")
    written = synth.write(out, _with_report(synth.file_items(rendering), report))
    print(_wrote(written, out, rendering))
    from .outcome import conclude

    return conclude(stack, report, [], getattr(args, "strict", False))


def cmd_check(args: argparse.Namespace) -> int:
    return _render_frozen(args, lambda rendering: _check(args, rendering))


def _check(args: argparse.Namespace, rendering) -> int:
    print(f"{args.stack}: config renders, {len(rendering.resources)} resources")  # then its findings, warnings
    report, code = _policies(rendering, args.policy_config)
    if code:
        return code
    return _conclude(args, rendering, report)


def _policies(rendering, config_file: str | None = None):
    """(policy report, None), or (None, EXIT_INVALID) when the policy config is unusable."""
    try:
        from .policy_pack import module

        offline = module("offline")
        PolicyConfigError, evaluate = offline.PolicyConfigError, offline.evaluate
    except ImportError:
        return None, None
    try:
        report = evaluate(rendering, config_file=config_file)
    except PolicyConfigError as err:
        for problem in err.problems:
            print(problem, file=sys.stderr)
        return None, EXIT_INVALID
    from .outcome import violation_line
    from .terminal import paint_for

    sys.stdout.flush()  # what the command printed first stays first when both streams go to one pipe
    paint = paint_for(sys.stderr)
    for v in report.violations:
        print(violation_line(v, paint), file=sys.stderr)
    return report, None


def _policy_exit(report) -> int:
    return EXIT_POLICY if report is not None and report.mandatory_violations else EXIT_OK


def _spec(args: argparse.Namespace):
    """The validated spec of the stack file, without running the engine; None after printing its problems."""
    from .loader import SpecError, load_spec

    path = _stack_file(args.stack, args.config, getattr(args, "stacks", None))
    try:
        path, config = _read_stack(args)
        return load_spec(config, stack_dir=path.parent)
    except SpecError as err:
        for line in err.lines(_display(path)):
            print(line, file=sys.stderr)
        return None


def cmd_cost(args: argparse.Namespace) -> int:
    """The cost table from the plan alone: no engine run, nothing written."""
    from ..plan import cost, plan

    spec = _spec(args)
    if spec is None:
        return EXIT_INVALID
    decided = plan.build(spec, args.stack)
    doc = cost.report_of(decided)
    lines = cost.markdown(doc)
    if decided.fleet is not None:  # a fleet manager: each worker's cost and the fleet's (plan/fleet.py)
        from ..plan import fleet

        doc["fleet"] = fleet.cost_doc(decided.fleet, doc["total"])
        lines = [*lines, *fleet.cost_lines(doc["fleet"])]
    if args.markdown:  # the Markdown summary.md carries, to paste into a review or a wiki
        print("\n".join(lines))
        return EXIT_OK
    from .terminal import markdown_text, paint_for

    return _emit(args, lambda: cost.to_json(doc), lambda: markdown_text(lines, paint_for(sys.stdout)))


def cmd_plan(args: argparse.Namespace) -> int:
    """What the platform decides for the stack (components/plan/plan.py), before any ``pulumi up``."""
    from ..plan import plan

    spec = _spec(args)
    if spec is None:
        return EXIT_INVALID
    p = plan.build(spec, args.stack)
    if args.html:  # the page (components/cli/plan_html.py), before the text, so a problem writes nothing else
        from .diff_cli import write_plan_page

        if code := write_plan_page(args, p, _stack_file(args.stack, args.config, getattr(args, "stacks", None))):
            return code
    _emit(args, p.to_json, lambda: plan_text(p))
    from ..explain.summary import stack_warnings
    from .outcome import conclude

    # the verdict on stderr: stdout is the plan (JSON with --json)
    return conclude(args.stack, None, stack_warnings(spec, p), False, out=sys.stderr)


def _emit(args: argparse.Namespace, as_json: Any, as_lines: Any) -> int:
    """Print a document: its JSON with --json, else its lines for a person."""
    print(as_json() if args.json else "\n".join(as_lines()), end="" if args.json else "\n")
    return EXIT_OK


def _units(units: Any) -> str:
    return ", ".join(f"{n} {name}" for name, n in units.items()) or "none"


def plan_text(p: Any) -> list[str]:
    """The plan for a person: a line per pool and add-on, a few per tenant."""
    from . import plan_tables

    lines = [
        f"Stack {p.stack} ({p.cloud})",
        *_existing_text(p.existing),
        *plan_tables.pools(p),
        *plan_tables.tenants(p),
    ]
    lines += ["", "Add-ons"]
    for a in p.addons.values():
        state = f"{a.chart.rsplit('/', 1)[-1]} {a.version} from {a.source}, in {a.namespace}" if a.enabled else "off"
        lines.append(f"  {a.key}: {state}")
    if p.aws is not None:
        from ..plan.aws.plan import text_lines

        lines += ["", "AWS", *text_lines(p.aws)]
        if p.karpenter is not None:
            from ..plan.aws.karpenter import local_disks

            lines.append(f"  Karpenter nodes: {local_disks(p.karpenter)}")
    if p.eks_create is not None:
        from ..plan.aws import cluster_create

        lines += cluster_create.text_lines(p.eks_create)
    if p.cluster_stack is not None:
        from ..plan import cluster_stack

        lines += cluster_stack.text_lines(p.cluster_stack)
    if p.fleet is not None:
        from ..plan import fleet

        lines += ["", *fleet.text_lines(p.fleet)]
    if p.fleet_worker is not None:
        w = p.fleet_worker
        lines += [
            "",
            f"fleet worker of {w.manager}: ServiceAccount {w.namespace}/{w.service_account}, ClusterRole "
            f"{w.cluster_role} ({', '.join(w.kinds)}), token Secret {w.token_secret} (rotate by {w.rotate_by})"
            + ("; draining: its LocalQueues hold" if w.draining else ""),
        ]
    if p.gke is not None:
        from ..plan.gcp import plan as gcp_plan

        lines += ["", *gcp_plan.text(p.gke)]
    if p.gke_create is not None:
        from ..plan.gcp import cluster_create

        lines += ["", *cluster_create.text(p.gke_create)]
    from ..plan.aws import karpenter

    lines += karpenter.text(p.karpenter)
    from ..plan import images_text, storage

    return (
        lines
        + _monitoring_text(p.monitoring)
        + _dra_text(p.dra)
        + _reservations_text(p.reservations)
        + storage.text(p.storage)
        + images_text.text(p.images)
    )


def _reservations_text(reserved: Any) -> list[str]:
    """The reserved-capacity section of ``plan_text`` (none without a pool that reserves capacity)."""
    if not reserved:
        return []
    lines = ["", "Reserved capacity"]
    for pool, r in reserved.items():
        where = ", ".join(x for x in (r.instance_type, r.availability_zone) if x)
        lines.append(f"  {pool}: {r.description}" + (f" ({where})" if where else "") + f", as {r.used_as}")
    return lines


def _existing_text(e: Any) -> list[str]:
    """How an existing cluster is reached (none on other clouds)."""
    if e is None:
        return []
    context = f"context {e.context}" if e.context else "the kubeconfig's current context"
    return [f"  reached through {context} of {e.kubeconfig or 'the default kubeconfig'}"]


def _dra_text(d: Any) -> list[str]:
    """The DRA section of ``plan_text`` (none unless ``gpuOperator.allocation`` is dra)."""
    if d is None:
        return []
    lines = [
        "",
        "DRA",
        f"  Kubernetes {d.kubernetes_version}; DeviceClasses {', '.join(d.device_classes)}; "
        "ResourceClaimTemplates per tenant:",
    ]
    return lines + [f"    {t}: {', '.join(names) or 'none'}" for t, names in d.claim_templates.items()]


def _monitoring_text(m: Any) -> list[str]:
    """The GPU monitoring section of ``plan_text`` (none without ``addons.dcgm``)."""
    if m is None:
        return []
    ex, a = m.exporter, m.alerts
    lines = ["", "Monitoring", f"  DCGM exporter: {ex.source}, Service {ex.job}:{ex.port} in {ex.namespace}"]
    if m.prometheus == "none":
        return [*lines, "  not scraped (prometheus none): no ServiceMonitor, PrometheusRule or dashboard"]
    labels = ", ".join(f"{k}={v}" for k, v in m.labels.items())
    return [
        *lines,
        f"  scraped every {m.scrape_interval} (Prometheus {m.prometheus}, selecting {labels}); "
        f"dashboard in {m.dashboard_namespace}",
        f"  alerts: idle < {a.idle_utilization_percent:g}% for {a.idle_for} (held: {a.allocated_idle_for}), "
        f"memory > {a.memory_used_percent:g}% for {a.memory_for}, temperature > {a.temperature_celsius:g} C for "
        f"{a.temperature_for}, critical XIDs {', '.join(map(str, a.xid_critical_codes))}",
        "  idle spend priced for: " + (", ".join(m.idle_cost) or "no pool (no list prices)"),
        "  GPU faults: devices the device plugin reports unhealthy"
        + "".join(f"; node condition {h.condition}={h.status} ({h.source})" for h in m.node_health),
        *(
            [f"  no DCGM exporter (Bottlerocket, operands off): {', '.join(m.unmonitored_pools)}"]
            if m.unmonitored_pools
            else []
        ),
    ]


# The Pulumi package of each provider plugin the program can load, by cloud: kubernetes always, a cloud's only on
# its stacks (its SDK is imported only there: components/render/program.py, components/aws, components/gcp).
PLUGIN_PACKAGES = {"kubernetes": "pulumi-kubernetes", "aws": "pulumi-aws", "gcp": "pulumi-gcp"}


def stack_plugins(cloud: str) -> list[tuple[str, str]]:
    """(plugin, version) of every provider plugin a stack of ``cloud`` uses: the version of its SDK installed
    here (the lock's), which is the plugin version the SDK registers its resources with."""
    from importlib.metadata import version

    names = ["kubernetes", *([cloud] if cloud in PLUGIN_PACKAGES else [])]
    return [(n, version(PLUGIN_PACKAGES[n])) for n in names]


def cmd_plugins(args: argparse.Namespace) -> int:
    """``pulumi plugin install`` lines for exactly the plugins the stack uses (none for a cloud it does not)."""
    spec = _spec(args)
    if spec is None:
        return EXIT_INVALID
    for name, ver in stack_plugins(spec.cloud):
        print(f"resource {name} {ver}")
    return EXIT_OK


def cmd_explain(args: argparse.Namespace) -> int:
    """Trace workloads through the stack, layer by layer: exit 0 all run, 3 one stays pending, 2 bad input."""
    from ..explain import fleet as explain_fleet, trace as explain

    spec = _spec(args)
    if spec is None:
        return EXIT_INVALID
    cluster = None
    if args.context or args.kubeconfig:
        from ..explain import live

        try:
            cluster = live.read(args.kubeconfig, args.context)
        except (live.LiveError, subprocess.TimeoutExpired, json.JSONDecodeError) as err:
            print(f"explain: cannot read the cluster's Kueue workloads: {err}", file=sys.stderr)
            return EXIT_INVALID
    try:
        text = Path(args.workload).read_text()
        traces = explain_fleet.explain_all(spec, text, cluster)  # a fleet manager's tenants: via workers
    except (OSError, UnicodeDecodeError) as err:
        print(f"{args.workload}: cannot read: {err.strerror if isinstance(err, OSError) else err}", file=sys.stderr)
        return EXIT_INVALID
    except explain.WorkloadError as err:
        print(f"{args.workload}: {err}", file=sys.stderr)
        return EXIT_INVALID
    from .terminal import paint_for

    print(explain.render(traces, args.json, paint_for(sys.stdout)), end="")
    return explain.exit_code(traces)


def cmd_schema(args: argparse.Namespace) -> int:
    from ..spec.model import stack_file_schema

    print(json.dumps(stack_file_schema(), indent=2, sort_keys=True))
    return EXIT_OK


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gpu-platform", description=__doc__.splitlines()[0].replace("``", ""))
    p.add_argument("--version", action=_VersionAction)
    p.add_argument("--debug", action="store_true", help="on an internal error, print the traceback")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("synth", help="render a stack offline to a directory")
    s.add_argument("stack", nargs="?", help="the stack (stacks/Pulumi.STACK.yaml); with --program, its stack config")
    s.add_argument(
        "--program",
        help="render your own Pulumi program (a __main__.py using the GpuPlatform component) instead, offline; its "
        "Pulumi.yaml and Pulumi.STACK.yaml are read from beside it",
    )
    s.add_argument("--config", help="stack file to use instead of stacks/Pulumi.STACK.yaml")
    s.add_argument("--out", help="output directory (default out/STACK)")
    s.add_argument("--policy-config", help=POLICY_CONFIG_HELP)
    s.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    s.add_argument("--preview", action="store_true", help=PREVIEW_HELP)
    s.set_defaults(fn=cmd_synth)
    c = sub.add_parser("check", help="validate a stack and evaluate the policy pack, writing nothing")
    c.add_argument("stack")
    c.add_argument("--config", help="stack file to use instead of stacks/Pulumi.STACK.yaml")
    c.add_argument("--policy-config", help=POLICY_CONFIG_HELP)
    c.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    c.add_argument("--preview", action="store_true", help=PREVIEW_HELP)
    c.set_defaults(fn=cmd_check)
    co = sub.add_parser("cost", help="print what the stack's GPU pools and tenants cost per hour, writing nothing")
    co.add_argument("stack")
    co.add_argument("--config", help="stack file to use instead of stacks/Pulumi.STACK.yaml")
    form = co.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="print cost.json instead of the tables")
    form.add_argument("--markdown", action="store_true", help="print the tables as Markdown (as in summary.md)")
    co.set_defaults(fn=cmd_cost)
    ex = sub.add_parser("explain", help="trace workloads through the stack: would they run, or where do they wait")
    ex.add_argument("stack")
    ex.add_argument("workload", help="Kubernetes manifests (multi-document YAML)")
    ex.add_argument("--config", help="stack file to use instead of stacks/Pulumi.STACK.yaml")
    ex.add_argument("--json", action="store_true", help="one JSON document per workload")
    ex.add_argument(
        "--context",
        help="read a live cluster's Kueue workloads through kubectl (this kubeconfig context): whether the quota is "
        "free now, whom admitting it preempts, what it waits behind (default: an idle cluster)",
    )
    ex.add_argument("--kubeconfig", help="the kubeconfig file for --context (or its current context)")
    ex.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    ex.set_defaults(fn=cmd_explain)
    pn = sub.add_parser("plan", help="print what the platform decides per pool, tenant and add-on, writing nothing")
    pn.add_argument("stack")
    pn.add_argument("--config", help="stack file to use instead of stacks/Pulumi.STACK.yaml")
    pn.add_argument("--json", action="store_true", help="print the plan as JSON")
    pn.set_defaults(fn=cmd_plan)
    from .diff_cli import register

    diff = register(sub, pn, _stack_file, _display)  # plan --html/--against, and the diff command
    pl = sub.add_parser("plugins", help="print the provider plugins the stack uses: KIND NAME VERSION per line")
    pl.add_argument("stack")
    pl.add_argument("--config", help="stack file to use instead of stacks/Pulumi.STACK.yaml")
    pl.set_defaults(fn=cmd_plugins)
    sch = sub.add_parser("schema", help="print the JSON Schema of a stack file")
    sch.set_defaults(fn=cmd_schema)
    for command in (s, c, co, ex, pn, pl, diff):
        command.add_argument("--stacks", metavar="DIR", help=STACKS_HELP)
    for command in (s, c):
        command.add_argument("--strict", action="store_true", help=STRICT_HELP)
    return p


class _VersionAction(argparse._VersionAction):
    """argparse's ``version`` action (same help, output and exit), its text made only when --version is given:
    the distribution lookup (importlib.metadata: a search of sys.path and a parse of the METADATA file) is not
    made for every other command just to build the parser."""

    def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[no-untyped-def]
        self.version = f"gpu-platform {_version()}"
        super().__call__(parser, namespace, values, option_string)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gpu-platform")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def main(argv: list[str] | None = None) -> int:
    """The command; ``argv`` None: this process's own arguments (the console script), and the process ends
    after it returns."""
    args = parser().parse_args(argv)
    try:
        code = args.fn(args)
        if argv is None:
            # Nothing is left to collect but the process's whole heap, which the interpreter's exit would walk
            # in full garbage-collection passes (~0.5 s after a 200-tenant synth); freezing it ends the process
            # at once. Objects are still released as usual (atexit handlers run, files are flushed).
            gc.freeze()
        return code
    except Exception as exc:  # last resort: one line, never a bare traceback
        if args.debug:
            raise
        detail = " ".join(str(exc).split())
        detail = detail if len(detail) <= 160 else detail[:160] + "…"
        print(
            f"gpu-platform: internal error: {type(exc).__name__}: {detail} (a bug; run with --debug for the traceback)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
