"""Real-engine preview time of a generated stack against a floor (issue 27, point 5): `make bench` runs it when the
engine is built (scripts/engine-bins.sh) and prints the ratio from one run.

Both sides preview against the same real kube-apiserver (tests/cluster), through the same Pulumi CLI and the same
kubernetes provider plugin, each on a fresh stack (everything to create):
- **package**: the real program on a generated `existing`-cloud stack (N tenants on a few pools, add-ons off: no
  chart can be fetched here);
- **floor**: a program that registers exactly the resources the offline synth of that stack records (the same type
  tokens, names, parents, providers, dependencies and inputs), as plain `pulumi.CustomResource` /
  `ComponentResource`, with none of the package's work: loading the spec, deriving, rendering.

The ratio is package / floor; it says what the package's own work costs on top of what the engine and the provider
must do anyway for those resources. Each preview runs REPS times, alternating, and the medians are compared.

    python tests/bench_engine.py [--tenants 50] [--reps 3]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "cluster"), str(ROOT / "tests" / "engine")]


def generated_config(tenants: int, kubeconfig: str) -> dict[str, Any]:
    pools = [
        {"name": f"pool-{i}", "gpu": {"model": model, "perNode": 8}, "maxNodes": 4}
        for i, model in enumerate(("A100-80GB", "H100", "L40S", "L4"))
    ]
    return {
        "gpu-platform:cloud": "existing",
        "gpu-platform:cluster": {"kubeconfig": kubeconfig},
        "gpu-platform:nodePools": pools,
        "gpu-platform:tenants": [
            {"name": f"team-{t:03d}", "gpuQuota": {pools[t % 4]["name"]: 1}, "priority": ("training", "batch")[t % 2]}
            for t in range(tenants)
        ],
        "gpu-platform:addons": {"gpuOperator": False, "dcgm": False, "kueue": False, "volcano": False},
        "gpu-platform:monitoring": {"prometheus": "none"},
        "gpu-platform:protect": {"tenantNamespaces": False},
    }


def floor_program(records: list[Any], provider_inputs: dict[str, Any]):
    """The synth's records, registered as they are: parents before children, dependencies by URN."""

    def program() -> None:
        import pulumi
        import pulumi_kubernetes as k8s

        # the records name their parent, provider and dependencies by resource name (synth.py), so look them up by
        # name: a parent is a component, a provider a provider, a dependency whatever carries that name
        components: dict[str, pulumi.Resource] = {}
        providers: dict[str, pulumi.Resource] = {}
        by_name: dict[str, list[pulumi.Resource]] = {}
        pending = list(records)
        while pending:
            rest = []
            for r in pending:
                ready = (r.parent is None or r.parent in components) and (r.provider is None or r.provider in providers)
                ready = ready and all(d in by_name or d not in names for d in r.depends_on)
                if not ready:
                    rest.append(r)
                    continue
                opts = pulumi.ResourceOptions(
                    parent=components.get(r.parent) if r.parent else None,
                    depends_on=[x for d in r.depends_on for x in by_name.get(d, [])],
                    provider=providers.get(r.provider) if r.provider else None,
                    protect=r.protect,
                )
                if r.type == "pulumi:providers:kubernetes":
                    made: pulumi.Resource = k8s.Provider(r.name, opts=opts, **provider_inputs)
                    providers[r.name] = made
                elif r.custom:
                    made = pulumi.CustomResource(r.type, r.name, dict(r.inputs), opts)
                else:
                    made = pulumi.ComponentResource(r.type, r.name, None, opts)
                    components[r.name] = made
                by_name.setdefault(r.name, []).append(made)
            if len(rest) == len(pending):
                raise RuntimeError(f"cannot order {len(rest)} records")
            pending = rest

    names = {r.name for r in records}
    return program


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tenants", type=int, default=50)
    p.add_argument("--reps", type=int, default=3)
    args = p.parse_args(argv)

    from controlplane import ControlPlane
    from engine import Engine

    from components.cli.synth import render
    from components.render import k8s

    with ControlPlane("bench") as cp:
        eng = Engine()
        try:
            cfg = generated_config(args.tenants, str(cp.kubeconfig))
            rendering = render("bench", copy.deepcopy(cfg))
            provider_inputs = {"kubeconfig": str(cp.kubeconfig), **k8s.PROVIDER_OPTIONS}
            package = eng.stack("bench", cfg)
            from pulumi import automation as auto

            floor = auto.create_or_select_stack(
                stack_name="bench-floor",
                project_name="gpu-platform",
                program=floor_program(rendering.resources, provider_inputs),
                opts=auto.LocalWorkspaceOptions(work_dir=str(eng.project), pulumi_home=str(eng.home), env_vars=eng.env),
            )
            times: dict[str, list[float]] = {"package": [], "floor": []}
            counts: dict[str, Any] = {}
            for _ in range(args.reps):
                for name, stack in (("package", package), ("floor", floor)):
                    start = time.perf_counter()
                    result = stack.preview(color="never")
                    times[name].append(time.perf_counter() - start)
                    counts[name] = result.change_summary
            assert counts["package"] == counts["floor"], counts  # like with like: the same resources planned
            med = {k: statistics.median(v) for k, v in times.items()}
            print(f"real-engine preview, {args.tenants} tenants, {sum(counts['package'].values())} resources planned")
            for k in ("package", "floor"):
                print(f"  {k:8s} median {med[k]:6.2f} s  (runs: {', '.join(f'{x:.2f}' for x in times[k])})")
            print(f"  ratio    {med['package'] / med['floor']:.2f}x")
        finally:
            eng.close()


if __name__ == "__main__":
    main()
