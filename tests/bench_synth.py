"""Benchmark (not a test): the offline synth against a fair floor, at three sizes.

    python tests/bench_synth.py [--reps N] [--sizes s,xl,1000] [--tmp DIR]        (``make bench``)

For each generated spec (s: 20 tenants / 6 pools, xl: 200 / 24, 1000: 1000 / 48) it runs, in turn and in
separate processes (so each peak memory is its own), synth into a new output directory, floor, then synth again
over that output, three rounds by default (the median is printed; ``s`` once):

- **synth**: the whole ``gpu-platform synth`` command (``components.cli.main``), timed from outside
  (interpreter start, imports, validation, render, policies, writing), its phases timed inside;
- **again**: the same command once more over its own output (the everyday loop: the synth rewrites only files
  whose text changed, here none, so creating ~1,100 files at 200 tenants is left out; every other phase runs);
- **floor**: a plain Pulumi program that reads the synth's own ``resources.json`` and registers exactly
  those resources (same type tokens, inputs, parents, dependsOn, providers) with plain
  ``pulumi.CustomResource`` / ``ComponentResource`` / ``ProviderResource`` under the mock engine (mocks that
  answer an id and no outputs, as the synth's do for everything but a few placeholders). Its whole process
  imports only what it needs (``pulumi``); the time it spends reading ``resources.json`` is subtracted (the
  synth has no such input).

Two ratios: **end to end** (the synth's whole process / the floor's whole process, imports on both sides) and
**render** (``synth.render`` / the floor's registration, with the time spent importing modules during either
subtracted, so imports count on neither side: the program imports the cloud SDKs lazily, inside the render).
Ratios are taken per repetition (synth and floor run back to back) and the median is printed, so a
shared machine's drift cancels out. Targets (issue 42, on a quiet 2-core machine): xl end to end <= 1.2x the
floor's whole process; 1000 tenants <= 10 s and <= 260 MiB; the synth's time grows no faster than the resource
count (1000 tenants / 200 tenants in seconds <= the same in resources). Earlier ones (issue 14): render <= 1.15x
the floor's registration, policies <= 10 % and linear.

Before measuring, the program's modules are byte-compiled (``compileall``, into the git-ignored __pycache__), as
the floor's ``pulumi`` is in site-packages: with PYTHONDONTWRITEBYTECODE set, the synth would otherwise compile
its ~140 modules from source in every process (~0.1 s) and the floor nothing.

The stack files and outputs go to a memory file system when the machine has one (/dev/shm; ``--tmp DIR`` for
another place, e.g. the disk): the synth's writing is timed (creating every file and folder, writing their text),
not the disk's state (``work_root``).

``--record FILE`` adds the run's figures, dated and with the machine they were measured on, at the top of FILE
(``make bench`` records into tests/bench_figures.md, which the repository keeps).
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import datetime
import io
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script (make bench): the repository's modules, as the children import them
    sys.path.insert(0, str(ROOT))

from components.cli.synth import RENDER_GC_THRESHOLDS  # noqa: E402

SIZES = {"s": (20, 6), "xl": (200, 24), "1000": (1000, 48)}
REPS = {"s": 1, "xl": 3, "1000": 3}

# pools over instance types the catalog knows, with every sharing strategy represented
POOL_SHAPES = [
    ({"model": "L4", "perNode": 1}, ["g6.xlarge"], {"strategy": "time-slicing", "replicas": 4}),
    ({"model": "A10G", "perNode": 1}, ["g5.xlarge"], None),
    ({"model": "L40S", "perNode": 4}, ["g6e.12xlarge"], {"strategy": "mps", "replicas": 2}),
    ({"model": "A100-80GB", "perNode": 8}, ["p4de.24xlarge"], None),
    ({"model": "H100", "perNode": 8}, ["p5.48xlarge"], {"strategy": "mig", "layout": {"3g.40gb": 2}}),
    ({"model": "T4", "perNode": 1}, ["g4dn.xlarge"], {"strategy": "time-slicing", "replicas": 2}),
]


def generated_config(tenants: int = 200, pools_n: int = 24) -> dict:
    pools = []
    for i in range(pools_n):
        gpu, types, sharing = POOL_SHAPES[i % len(POOL_SHAPES)]
        pool = {
            "name": f"pool-{i:02d}",
            "gpu": gpu,
            "instanceTypes": types,
            "capacity": "spot" if i % 3 == 0 else "on-demand",
            "provisioner": "karpenter" if i % 4 == 0 else "managed",
            "maxNodes": 8,
        }
        if sharing:
            pool["sharing"] = sharing
        pools.append(pool)
    tenant_list = [
        {
            "name": f"team-{t:03d}",
            "gpuQuota": {pools[t % pools_n]["name"]: 1, pools[(t * 7 + 3) % pools_n]["name"]: 1},
            "priority": ["training", "batch", "dev"][t % 3],
        }
        for t in range(tenants)
    ]
    return {
        "aws:region": "us-east-1",
        "gpu-platform:cloud": "aws",
        "gpu-platform:cluster": {"name": "bench"},
        "gpu-platform:nodePools": pools,
        "gpu-platform:tenants": tenant_list,
        "gpu-platform:addons": {"gpuOperator": True, "dcgm": True, "kueue": True, "volcano": True},
        "gpu-platform:scheduling": {"oversubscriptionRatio": 10},
    }


# Time spent importing modules (only the outermost import of a chain counts), so that the render and the floor's
# registration can be compared with imports counted on neither side. Every import statement and
# importlib.import_module goes through importlib._bootstrap._find_and_load.
IMPORT_CLOCK = """
import importlib._bootstrap as _bootstrap, threading as _threading, time as _time
_find_and_load = _bootstrap._find_and_load
_local = _threading.local()
import_seconds = [0.0]
def _timed_find_and_load(name, import_):
    if getattr(_local, "busy", False):
        return _find_and_load(name, import_)
    _local.busy = True
    t0 = _time.perf_counter()
    try:
        return _find_and_load(name, import_)
    finally:
        import_seconds[0] += _time.perf_counter() - t0
        _local.busy = False
_bootstrap._find_and_load = _timed_find_and_load
"""

# The whole `gpu-platform synth` command, its phases timed by wrapping the functions it calls.
SYNTH = (
    IMPORT_CLOCK
    + """
import json, resource, sys, time
t_start = time.perf_counter()
from components.cli import main as cli
from components.cli import synth
import policies.offline as offline
phases = {}
def timed(mod, name, key):
    fn = getattr(mod, name)
    def wrapper(*a, **kw):
        t0, i0 = time.perf_counter(), import_seconds[0]
        try:
            return fn(*a, **kw)
        finally:
            phases[key] = phases.get(key, 0.0) + time.perf_counter() - t0
            phases[key + "_imports"] = phases.get(key + "_imports", 0.0) + import_seconds[0] - i0
    setattr(mod, name, wrapper)
timed(synth, "read_stack_file", "read")
timed(synth, "render", "render")
timed(offline, "evaluate", "policies")
# the files are written as they are made (synth.file_items, inside synth.write): "files" is the time spent making
# them, "write" the rest of synth.write (creating, writing, swapping in the directory; resources.json's text is made
# a resource at a time as it is written, so it counts there)
made = synth.file_items
def timed_items(*a, **kw):
    items = made(*a, **kw)
    while True:
        t0, i0 = time.perf_counter(), import_seconds[0]
        try:
            item = next(items, None)
        finally:
            phases["files"] = phases.get("files", 0.0) + time.perf_counter() - t0
            phases["files_imports"] = phases.get("files_imports", 0.0) + import_seconds[0] - i0
        if item is None:
            return
        yield item
synth.file_items = timed_items
timed(synth, "write", "write")
stack_file, out = sys.argv[1:3]
# as the console script calls it (argv from the process: cli.main then also readies the process's exit)
sys.argv = ["gpu-platform", "synth", "bench", "--config", stack_file, "--out", out]
rc = cli.main()
phases["write"] -= phases.get("files", 0.0)
phases["write_imports"] -= phases.get("files_imports", 0.0)
phases["in_process"] = time.perf_counter() - t_start
phases["imports"] = import_seconds[0]
use = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"rc": rc, "phases": phases, "cpu": use.ru_utime + use.ru_stime, "rss_mib": use.ru_maxrss / 1024}))
"""
)

# The fair floor: what the synth registered (its resources.json), registered with plain resource classes.
FLOOR = (
    IMPORT_CLOCK
    + """
import json, resource, sys, time
t_start = time.perf_counter()
import pulumi
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await
t_read = time.perf_counter()
with open(sys.argv[1]) as f:
    records = json.load(f)
read = time.perf_counter() - t_read
PROVIDER = "pulumi:providers:"
REMOTE_COMPONENTS = {"kubernetes:helm.sh/v4:Chart", "kubernetes:yaml/v2:ConfigGroup", "kubernetes:yaml/v2:ConfigFile"}
PROJECT = "gpu-platform"

def kind(r):
    if r["type"].startswith(PROVIDER):
        return "provider"
    if r["type"].split(":", 1)[0] == PROJECT or r["type"] in REMOTE_COMPONENTS:
        return "component"
    return "custom"

by_name = {}
for i, r in enumerate(records):
    by_name.setdefault(r["name"], []).append(i)

def pick(name, prefer):
    found = by_name.get(name, [])
    preferred = [i for i in found if kind(records[i]) == prefer]
    return (preferred or found or [None])[0]

def provider_of(r):
    if not r["provider"]:
        return None
    found = [i for i in by_name.get(r["provider"], []) if kind(records[i]) == "provider"]
    same = [i for i in found if records[i]["type"] == PROVIDER + r["type"].split(":", 1)[0]]
    return (same or found or [None])[0]

links = []
for r in records:
    parent = pick(r["parent"], "component") if r["parent"] else None
    deps = [d for d in (pick(n, "custom") for n in r["dependsOn"]) if d is not None]
    links.append((parent, deps, provider_of(r)))

class Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args):
        return (f"offline-placeholder-{args.name}" if args.custom else ""), {}
    def call(self, args):
        return {}

pulumi.runtime.set_mocks(Mocks(), project=PROJECT, stack="bench", preview=False)

# Creation order: parents, providers and dependencies first (iterative depth-first). resources.json names
# parents and dependencies by name only; where a name is ambiguous the pick above may close a cycle, and
# that edge is dropped (counted in the output).
def edges(i):
    parent, deps, provider = links[i]
    return [j for j in (parent, provider, *deps) if j is not None]

order, state, dropped = [], {}, set()
for root in range(len(records)):
    if root in state:
        continue
    state[root] = 0
    stack = [(root, iter(edges(root)))]
    while stack:
        node, it = stack[-1]
        nxt = next(it, None)
        if nxt is None:
            stack.pop()
            state[node] = 1
            order.append(node)
        elif nxt not in state:
            state[nxt] = 0
            stack.append((nxt, iter(edges(nxt))))
        elif state[nxt] == 0:
            dropped.add((node, nxt))

def program():
    made = {}
    for i in order:
        r = records[i]
        parent, deps, provider = links[i]
        keep = lambda j, i=i: j is not None and (i, j) not in dropped
        opts = pulumi.ResourceOptions(
            parent=made[parent] if keep(parent) else None,
            depends_on=[made[d] for d in deps if keep(d)] or None,
            provider=made[provider] if keep(provider) else None,
        )
        k = kind(r)
        if k == "provider":
            res = pulumi.ProviderResource(r["type"][len(PROVIDER):], r["name"], r["inputs"], opts)
        elif k == "component":
            res = pulumi.ComponentResource(r["type"], r["name"], r["inputs"] or None, opts,
                                           remote=r["type"] in REMOTE_COMPONENTS)
            res.register_outputs({})
        else:
            res = pulumi.CustomResource(r["type"], r["name"], r["inputs"], opts)
        made[i] = res

# like with like: the collector's thresholds the synth's render runs with (components.cli.synth), here too
import gc
before = gc.get_threshold()
gc.set_threshold(*json.loads(sys.argv[2]))
t0, i0 = time.perf_counter(), import_seconds[0]
_sync_await(run_pulumi_func(program))
register = time.perf_counter() - t0
gc.set_threshold(*before)
use = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"register": register, "register_imports": import_seconds[0] - i0, "read": read,
                  "dropped_edges": len(dropped),
                  "resources": len(records), "in_process": time.perf_counter() - t_start,
                  "cpu": use.ru_utime + use.ru_stime, "rss_mib": use.ru_maxrss / 1024}))
"""
)


def _run(code: str, *args: str) -> tuple[dict, float]:
    """(what the child printed, its whole wall time)."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args], cwd=ROOT, capture_output=True, text=True
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(proc.stderr)
    return json.loads(proc.stdout.strip().splitlines()[-1]), wall


def measure(size: str, reps: int, work: Path) -> dict:
    tenants, pools = SIZES[size]
    stack_file = work / f"{size}.yaml"
    stack_file.write_text(yaml.safe_dump({"config": generated_config(tenants, pools)}, sort_keys=False))
    runs = []
    for rep in range(reps):
        # the synth into a new output directory: every file created (none deleted on the way: here creating files
        # soon after deleting as many costs several times more, which is the disk's state, not the synth's work)
        out = work / f"out-{size}-{rep}"
        synth, synth_wall = _run(SYNTH, str(stack_file), str(out))
        floor, floor_wall = _run(FLOOR, str(out / "resources.json"), json.dumps(RENDER_GC_THRESHOLDS))
        # the same stack synthesised again over its output (the everyday loop): unchanged files are left as they are
        again, again_wall = _run(SYNTH, str(stack_file), str(out))
        ph = synth["phases"]
        render = ph["render"] - ph["render_imports"]
        floor_register = floor["register"] - floor["register_imports"]
        floor_whole = floor_wall - floor["read"]
        runs.append(
            {
                "synth_wall": synth_wall,
                "phases": synth["phases"],
                "synth_rss": synth["rss_mib"],
                "render": render,
                "floor_whole": floor_whole,
                "floor_register": floor_register,
                "floor_rss": floor["rss_mib"],
                "e2e_ratio": synth_wall / floor_whole,
                "resynth_wall": again_wall,
                "resynth_ratio": again_wall / floor_whole,
                "resynth_write": again["phases"].get("write", 0.0),
                # CPU seconds (user + sys) of each process: steadier than wall time when the machine is shared
                "e2e_cpu_ratio": synth["cpu"] / (floor["cpu"] - floor["read"]),
                "render_ratio": render / floor_register,
                "policy_share": synth["phases"].get("policies", 0.0) / synth_wall,
                "resources": floor["resources"],
                "dropped_edges": floor["dropped_edges"],
            }
        )

    def med(key: str) -> float:
        return statistics.median(r[key] for r in runs)

    phases = {k: statistics.median(r["phases"].get(k, 0.0) for r in runs) for k in runs[0]["phases"]}
    return {
        "size": size,
        "tenants": tenants,
        "pools": pools,
        "reps": reps,
        "resources": runs[0]["resources"],
        **{k: med(k) for k in runs[0] if k not in ("phases", "resources")},
        "phases": phases,
        "e2e_ratios": [round(r["e2e_ratio"], 2) for r in runs],
        "resynth_ratios": [round(r["resynth_ratio"], 2) for r in runs],
        "render_ratios": [round(r["render_ratio"], 2) for r in runs],
        "e2e_cpu_ratios": [round(r["e2e_cpu_ratio"], 2) for r in runs],
    }


def report(results: list[dict]) -> None:
    print(
        "size   tenants/pools  resources | synth s  floor s  e2e x  | render s  floor-reg s  render x | policy s  "
        "policy % | synth MiB  floor MiB"
    )
    for r in results:
        print(
            f"{r['size']:<6} {r['tenants']:>5}/{r['pools']:<7} {r['resources']:>9} | {r['synth_wall']:7.2f}  "
            f"{r['floor_whole']:7.2f}  {r['e2e_ratio']:5.2f}  | {r['render']:8.2f}  {r['floor_register']:11.2f}  "
            f"{r['render_ratio']:8.2f} | {r['phases'].get('policies', 0):8.2f}  {100 * r['policy_share']:7.1f}% | "
            f"{r['synth_rss']:9.0f}  {r['floor_rss']:9.0f}"
        )
    print(
        "again (the same stack synthesised over its own output, unchanged files left as they are): "
        + "; ".join(
            f"{r['size']} {r['resynth_wall']:.2f} s, {r['resynth_ratio']:.2f}x the floor "
            f"(write {r['resynth_write']:.2f} s)"
            for r in results
        )
    )
    print(
        "floor edges dropped (an ambiguous name closed a cycle): "
        + ", ".join(f"{r['size']} {r['dropped_edges']:.0f}" for r in results)
    )
    print(
        "\nper-repetition ratios (synth/floor): "
        + "; ".join(
            f"{r['size']} e2e {r['e2e_ratios']} (cpu {r['e2e_cpu_ratios']}) again {r['resynth_ratios']} render "
            f"{r['render_ratios']}"
            for r in results
        )
    )
    print(
        "synth phases, median s (render includes the program's imports; the rest of the wall is interpreter start"
        " and module imports before the render):"
    )
    for r in results:
        ph = r["phases"]
        rest = r["synth_wall"] - ph.get("in_process", 0.0)
        print(f"  {r['size']:<5} " + "  ".join(f"{k} {v:.2f}" for k, v in ph.items()) + f"  startup {rest:.2f}")
    by = {r["size"]: r for r in results}
    if "xl" in by and "1000" in by:
        growth = by["1000"]["phases"]["policies"] / by["xl"]["phases"]["policies"]
        more = by["1000"]["resources"] / by["xl"]["resources"]
        slower = by["1000"]["synth_wall"] / by["xl"]["synth_wall"]
        print(f"\npolicy time 1000 tenants / 200 tenants: {growth:.2f}x (resources {more:.2f}x)")
        print(f"synth time 1000 tenants / 200 tenants: {slower:.2f}x (resources {more:.2f}x)")
    print(
        "\ntargets (issue 42): xl e2e <= 1.2x; 1000 tenants <= 10 s and <= 260 MiB; synth time 1000/200 <= resources "
        "1000/200. Earlier: render <= 1.15x, policies <= 10 %"
    )


def machine() -> str:
    """What the figures were measured on: CPU model, cores, OS, Python."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, Python {platform.python_version()}"
    )


def record(path: Path, text: str, loads: tuple[str, str]) -> None:
    """Add this run's figures at the top of ``path`` (after its heading), dated, with the machine and its load."""
    heading = "# Synth benchmark figures (make bench)\n\nNewest first. Wall-clock ratios need a quiet machine.\n"
    old = path.read_text(encoding="utf-8") if path.exists() else heading
    body = old[len(heading) :] if old.startswith(heading) else old
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    entry = (
        f"\n## {now}\n\nMachine: {machine()}. Load average (1, 5, 15 min) before: {loads[0]}, after: {loads[1]}.\n\n"
        f"```\n{text.rstrip()}\n```\n"
    )
    path.write_text(heading + entry + body, encoding="utf-8")


def work_root() -> str | None:
    """Where the stack files and outputs go: a memory file system when the machine has one (/dev/shm), so that the
    synth's writing is timed, not the disk's state. On this VM's ext4 (mounted with discard) creating the same ~1,100
    files in a new folder took 0.03 s to 1.8 s within minutes, the longest soon after many files were deleted (the
    bench's own previous run, ~20,000 files, included). None: the system's temporary directory."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default=",".join(SIZES), help="comma-separated: " + ", ".join(SIZES))
    p.add_argument("--reps", type=int, help="repetitions per size (default: s 3, xl 3, 1000 1)")
    p.add_argument("--json", help="also write the results to this file")
    p.add_argument("--record", help="add the figures, dated and with the machine, at the top of this file")
    p.add_argument("--tmp", default=work_root(), help="where the stack files and outputs go (default: %(default)s)")
    args = p.parse_args(argv)
    for package in ("components", "policies"):  # like the floor's site-packages: no source compiled while timed
        compileall.compile_dir(ROOT / package, quiet=1)
    results = []
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        for size in args.sizes.split(","):
            results.append(measure(size, args.reps or REPS[size], Path(tmp)))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        report(results)
        print(f"stack files and outputs in: {args.tmp or tempfile.gettempdir()}")
    print(printed.getvalue(), end="")
    # a shared 2-core machine: ratios from the same run are comparable, absolute seconds less so
    before = " ".join(f"{x:.2f}" for x in load_before)
    after = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average (1, 5, 15 min) before: {before}, after: {after}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    if args.record:
        record(Path(args.record), printed.getvalue(), (before, after))


if __name__ == "__main__":
    main()
