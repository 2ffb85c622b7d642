"""Benchmark (not a test): synth a generated stack with 200 tenants and 24 pools and compare with the
floor, the bare Pulumi SDK mock engine registering the same number of resources in one process.

Run with `make bench`. Each measurement runs in its own process so peak memory is its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TENANTS, POOLS = 200, 24

# 24 pools over instance types the catalog knows, with every sharing strategy represented
POOL_SHAPES = [
    ({"model": "L4", "perNode": 1}, ["g6.xlarge"], {"strategy": "time-slicing", "replicas": 4}),
    ({"model": "A10G", "perNode": 1}, ["g5.xlarge"], None),
    ({"model": "L40S", "perNode": 4}, ["g6e.12xlarge"], {"strategy": "mps", "replicas": 2}),
    ({"model": "A100-80GB", "perNode": 8}, ["p4de.24xlarge"], None),
    ({"model": "H100", "perNode": 8}, ["p5.48xlarge"], {"strategy": "mig", "layout": {"3g.40gb": 2}}),
    ({"model": "T4", "perNode": 1}, ["g4dn.xlarge"], {"strategy": "time-slicing", "replicas": 2}),
]


def generated_config() -> dict:
    pools = []
    for i in range(POOLS):
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
    tenants = [
        {
            "name": f"team-{t:03d}",
            "gpuQuota": {pools[t % POOLS]["name"]: 1, pools[(t * 7 + 3) % POOLS]["name"]: 1},
            "priority": ["training", "batch", "dev"][t % 3],
        }
        for t in range(TENANTS)
    ]
    return {
        "aws:region": "us-east-1",
        "gpu-platform:cloud": "aws",
        "gpu-platform:cluster": {"name": "bench"},
        "gpu-platform:nodePools": pools,
        "gpu-platform:tenants": tenants,
        "gpu-platform:addons": {"gpuOperator": True, "dcgm": True, "kueue": True, "volcano": True},
        "gpu-platform:scheduling": {"oversubscriptionRatio": 10},
    }


SYNTH = """
import json, resource, sys, tempfile, time
from pathlib import Path
from components import synth
config = json.loads(sys.stdin.read())
t0 = time.perf_counter()
r = synth.render("bench", config)
synth.write(Path(tempfile.mkdtemp()) / "out", synth.files(r))
wall = time.perf_counter() - t0
per_tenant = sum(1 for x in r.resources if any(x.name.startswith(t.name + "-") for t in r.spec.tenants))
print(json.dumps({"wall": wall, "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "resources": len(r.resources), "per_tenant": per_tenant / len(r.spec.tenants)}))
"""

FLOOR = """
import json, resource, sys, time
import pulumi
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await
n = int(sys.argv[1])
class M(pulumi.runtime.Mocks):
    def new_resource(self, args): return (args.name + "-id", args.inputs)
    def call(self, args): return {}
pulumi.runtime.set_mocks(M(), project="floor", stack="floor", preview=False)
def program():
    for i in range(n):
        pulumi.CustomResource("test:index:Thing", f"thing-{i}", {"metadata": {"name": f"thing-{i}"}, "spec": {"i": i}})
t0 = time.perf_counter()
_sync_await(run_pulumi_func(program))
wall = time.perf_counter() - t0
print(json.dumps({"wall": wall, "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _run(code: str, *args: str, stdin: str = "") -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args], cwd=ROOT, input=stdin, capture_output=True, text=True
    )
    if proc.returncode != 0:
        sys.exit(proc.stderr)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    with tempfile.TemporaryDirectory():
        s = _run(SYNTH, stdin=json.dumps(generated_config()))
        f = _run(FLOOR, str(s["resources"]))
    print(f"generated stack: {TENANTS} tenants, {POOLS} pools")
    print(f"synth wall time:       {s['wall']:.2f} s")
    print(f"synth peak memory:     {s['rss_mib']:.0f} MiB")
    print(f"resources:             {s['resources']}")
    print(f"resources per tenant:  {s['per_tenant']:.1f}")
    print(f"floor (bare mocks, {s['resources']} resources): {f['wall']:.2f} s, {f['rss_mib']:.0f} MiB")
    print(f"ratio synth/floor:     {s['wall'] / f['wall']:.2f}x")


if __name__ == "__main__":
    main()
