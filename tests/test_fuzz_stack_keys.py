"""A seeded fuzz of the shipped stacks' keys (issue 40.7): a key dropped, emptied or given a value of the wrong
type, through the whole `gpu-platform plan` path (read, validate, every rule, the plan). Every outcome is a plan
(exit 0) or a refusal (exit 2) whose every line names the stack file and a key path; never a traceback, never
"internal error" (exit 4). Deterministic (one seed, mutations of one key at a time so a failure names its cause)
and fast: in-process, under 10 s of CPU."""

from __future__ import annotations

import copy
import random
import re
import time
from pathlib import Path
from typing import Any

import yaml
from conftest import STACKS, STACKS_DIR, config_paths

from components.cli import main as cli
from components.spec import stackfile

SEED = 40
PER_STACK = 14
# "<file>: <namespace>:<key path>: <message>": a provider-namespaced key, then its path of keys and indexes
# (label keys in the path carry "/" and ".": gpu-platform:systemNodeSelector.gpu-platform/node-role)
LINE = r"^{file}: [a-z][a-z0-9-]*:\S*: \S"
SYNTHS = 2  # valid mutations rendered in full too (a synth costs about 1 s; the plans cover the rest)


def _wrong_type(value: Any) -> Any:
    if isinstance(value, bool):
        return "maybe"
    if isinstance(value, int | float):
        return "many"
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return {"x": value}
    return [value]


def _empty(value: Any) -> Any:
    return {dict: {}, list: [], str: ""}.get(type(value), None)


def mutate(config: dict[str, Any], rng: random.Random) -> tuple[str, dict[str, Any]]:
    """One key of the stack dropped, emptied or given a wrong type: (what was done, the mutated config)."""
    cfg = copy.deepcopy(config)
    path = rng.choice(config_paths(cfg))
    parent = cfg
    for p in path[:-1]:
        parent = parent[p]
    op = rng.choice(["drop", "empty", "wrong-type"])
    if op == "drop":
        del parent[path[-1]]
    elif op == "empty":
        parent[path[-1]] = _empty(parent[path[-1]])
    else:
        parent[path[-1]] = _wrong_type(parent[path[-1]])
    return f"{op} {'.'.join(map(str, path))}", cfg


def test_mutated_shipped_stacks_plan_or_are_refused_in_one_line_per_problem(tmp_path: Path, capsys):
    rng = random.Random(SEED)
    start = time.process_time()  # CPU, not wall: the machine may be shared
    outcomes: dict[int, int] = {}
    surprises = []
    synths = []
    for stack in sorted(STACKS):
        base = stackfile.read(STACKS_DIR / f"Pulumi.{stack}.yaml")
        for n in range(PER_STACK):
            what, cfg = mutate(base, rng)
            path = tmp_path / f"{stack}-{n}.yaml"
            path.write_text(yaml.safe_dump({"config": cfg}, sort_keys=False), encoding="utf-8")
            rc = cli.main(["plan", stack, "--config", str(path)])
            err = capsys.readouterr().err
            outcomes[rc] = outcomes.get(rc, 0) + 1
            lines = err.splitlines()
            line = re.compile(LINE.format(file=re.escape(str(path))))
            if rc == 2:
                bad = [x for x in lines if not line.match(x) or len(x) > 400]
                if bad or not lines:
                    surprises.append(f"{stack}: {what}: exit 2 with {bad or 'no line'}")
            elif rc != 0 or "Traceback" in err or "internal error" in err:
                surprises.append(f"{stack}: {what}: exit {rc}: {err.strip()[:300]}")
            elif len(synths) < SYNTHS and stack in ("local", "dev-gcp"):
                synths.append(what)
                rc = cli.main(["synth", stack, "--config", str(path), "--out", str(tmp_path / f"out-{n}")])
                err = capsys.readouterr().err
                if rc not in (0, 2) or "Traceback" in err or "internal error" in err:
                    surprises.append(f"{stack}: {what}: synth exit {rc}: {err.strip()[:300]}")
    assert surprises == [], "\n".join(surprises)
    assert outcomes.get(2, 0) > len(STACKS) * PER_STACK // 3, outcomes  # the fuzz reaches the rules, not only YAML
    assert outcomes.get(0, 0) > 0, outcomes
    assert len(synths) == SYNTHS, synths
    assert time.process_time() - start < 10


def test_a_managed_efa_pool_without_instance_types_is_one_line_naming_the_key(tmp_path: Path, capsys):
    """The case the fuzz found (issue 40.7): prod-aws a100-gang (efa: true) without instanceTypes crashed in
    efa.interfaces_of_types ("min() arg is an empty sequence")."""
    cfg = stackfile.read(STACKS_DIR / "Pulumi.prod-aws.yaml")
    pools = cfg["gpu-platform:nodePools"]
    i = next(n for n, p in enumerate(pools) if p["name"] == "a100-gang")
    del pools[i]["instanceTypes"]
    path = tmp_path / "Pulumi.prod-aws.yaml"
    path.write_text(yaml.safe_dump({"config": cfg}, sort_keys=False), encoding="utf-8")
    rc = cli.main(["plan", "prod-aws", "--config", str(path)])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.splitlines() == [
        f"{path}: gpu-platform:nodePools[{i}].instanceTypes: needs at least one instance type on aws "
        "(A100-80GB with 8 per node: p4de.24xlarge)"
    ]
