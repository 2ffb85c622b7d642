"""Hostile and careless stack files (issue 12): never a traceback, never a silent drop.

Each file in tests/fixtures/bad-stacks/ starts with ``# expect: <key path> | <message fragment>``; the CLI
must exit 2 with one short line per problem, one of them naming that key path, and write nothing.
"""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT, STACKS, STACKS_DIR, config_paths
from limits import GIB, bounded, preexec

from components.cli import main as cli
from components.cli.loader import SpecError, load_spec
from components.plan.aws import plan as aws_plan
from components.spec import stackfile, validation

BAD = ROOT / "tests" / "fixtures" / "bad-stacks"
FIXTURES = sorted(BAD.glob("*.yaml"))


@pytest.fixture(autouse=True)
def _bounded():
    """Every test here feeds hostile input: if a limit of the package breaks, the test fails with MemoryError
    or TimeoutError (exit 4 from the CLI) instead of running the machine out of memory."""
    with bounded(seconds=60, memory=GIB + GIB // 2):
        yield


def _expect(path: Path) -> tuple[str, str]:
    """``# expect: <locus> | <fragment>``. A fragment of ``*`` means the message is the YAML parser's own, whose
    wording is not ours to pin (libyaml's changes between PyYAML releases): the locus is what is checked."""
    first = path.read_bytes().split(b"\n", 1)[0].decode()
    assert first.startswith("# expect: "), path
    where, fragment = first[len("# expect: ") :].split(" | ")
    return where, "" if fragment == "*" else fragment


def _run(argv: list[str], capsys) -> tuple[int, list[str], str]:
    rc = cli.main(argv)
    out = capsys.readouterr()
    return rc, out.err.splitlines(), out.out


def test_every_class_has_a_fixture():
    assert len(FIXTURES) >= 45


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_bad_stack_file_is_refused_in_one_line_per_problem(path: Path, tmp_path: Path, capsys):
    where, fragment = _expect(path)
    out = tmp_path / "out"
    start = time.monotonic()
    rc, lines, stdout = _run(["synth", "dev-aws", "--config", str(path), "--out", str(out)], capsys)
    elapsed = time.monotonic() - start
    assert rc == cli.EXIT_INVALID, lines
    assert not out.exists(), "nothing is written"
    assert lines and stdout == ""
    shown = cli._display(path)
    assert all(line.startswith(f"{shown}: ") for line in lines), lines
    assert all(len(line) < 400 for line in lines), "a message quotes at most ~80 characters of input"
    assert not any("Traceback" in line for line in lines)
    matching = [line for line in lines if f": {where}" in line and fragment in line]
    assert matching, f"no line names {where!r} with {fragment!r}: {lines}"
    assert elapsed < 3, f"{path.name} took {elapsed:.1f}s"


@pytest.mark.parametrize("name", ["deep-nesting", "alias-bomb", "non-utf8"])
def test_real_process_prints_no_traceback(name: str):
    path = BAD / f"{name}.yaml"
    proc = subprocess.run(
        [sys.executable, "-m", "components.cli", "check", "dev-aws", "--config", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=preexec(2 * GIB),
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.splitlines()) == 1


def test_config_that_is_a_directory(tmp_path: Path, capsys):
    rc, lines, _ = _run(["check", "dev-aws", "--config", str(tmp_path)], capsys)
    assert rc == 2 and len(lines) == 1 and "is a directory" in lines[0]


def test_unexpected_exception_is_one_line_with_its_own_exit_code(monkeypatch, capsys):
    from components.cli import synth

    def boom(*_a, **_k):
        raise ZeroDivisionError("x" * 10_000)

    monkeypatch.setattr(synth, "render", boom)
    rc, lines, _ = _run(["check", "dev-aws"], capsys)
    assert rc == cli.EXIT_INTERNAL == 4
    assert len(lines) == 1 and "internal error: ZeroDivisionError" in lines[0] and "--debug" in lines[0]
    assert len(lines[0]) < 300
    with pytest.raises(ZeroDivisionError):
        cli.main(["check", "dev-aws", "--debug"])


# ------------------------------------------------------------------------------- accepted as Pulumi does


def _with(stack: str, extra: str, tmp_path: Path) -> Path:
    path = tmp_path / f"Pulumi.{stack}.yaml"
    path.write_text((STACKS_DIR / f"Pulumi.{stack}.yaml").read_text() + extra)
    return path


def test_other_namespaces_keep_dates_as_text(tmp_path: Path, capsys):
    """Pulumi accepts keys of other namespaces and hands their values to the program as strings."""
    extra = (
        "  myorg:reviewed: 2025-11-20\n  myorg:when: !!timestamp 2025-11-20T10:00:00Z\n  myorg:flags: {on: 1, 2: b}\n"
    )
    path = _with("dev-aws", extra, tmp_path)
    config = stackfile.read(path)
    assert config["myorg:reviewed"] == "2025-11-20"
    assert config["myorg:when"] == "2025-11-20T10:00:00Z"
    assert config["myorg:flags"] == {"on": 1, "2": "b"}  # Go's yaml.v3 keeps such keys as written
    rc, lines, _ = _run(["check", "dev-aws", "--config", str(path)], capsys)
    assert rc == 0, lines


def test_old_config_key_form_is_read_as_pulumi_reads_it(tmp_path: Path):
    """pulumi/pulumi sdk/go/common/resource/config/key.go: ``ns:config:name`` is ``ns:name``."""
    text = (STACKS_DIR / "Pulumi.dev-aws.yaml").read_text().replace("gpu-platform:cloud:", "gpu-platform:config:cloud:")
    path = tmp_path / "s.yaml"
    path.write_text(text)
    assert load_spec(stackfile.read(path)).cloud == "aws"


def test_merge_keys_are_not_duplicates(tmp_path: Path):
    path = _with("dev-aws", "  myorg:base: &b {a: 1, b: 2}\n  myorg:derived: {<<: *b, b: 3}\n", tmp_path)
    assert stackfile.read(path)["myorg:derived"] == {"a": 1, "b": 3}


# ------------------------------------------------------------------------------------ the engine's path


def _engine(config: dict[str, Any]) -> dict[str, str]:
    """Config as ``pulumi up`` hands it to the program: strings, objects JSON-encoded."""
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items()}


def _problems(config: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as err:
        load_spec(config)
    return [f"{p.path}: {p.message}" for p in err.value.problems]


def _dev_aws() -> dict[str, Any]:
    return stackfile.read(STACKS_DIR / "Pulumi.dev-aws.yaml")


def test_engine_path_refuses_huge_numbers_in_json():
    cfg = _engine(_dev_aws())
    cfg["gpu-platform:nodePools"] = cfg["gpu-platform:nodePools"].replace('"maxNodes": 4', '"maxNodes": ' + "9" * 5000)
    assert any(p.startswith("gpu-platform:nodePools: holds a number with 5000 digits") for p in _problems(cfg))


def test_engine_path_refuses_deep_json():
    cfg = _engine(_dev_aws())
    cfg["gpu-platform:scheduling"] = "[" * 100_000 + "]" * 100_000
    assert any(p.startswith("gpu-platform:scheduling: nested too deeply") for p in _problems(cfg))


def test_engine_path_refuses_near_miss_namespace():
    cfg = _engine(_dev_aws())
    cfg["Gpu-Platform:tenants"] = "[]"
    assert _problems(cfg) == [
        "Gpu-Platform:tenants: unknown namespace 'Gpu-Platform' (did you mean gpu-platform:tenants?)"
    ]


def test_provider_key_is_reported_where_it_was_written():
    cfg = _dev_aws()
    cfg["aws:region"] = "us_east_1"
    assert _problems(cfg) == ["aws:region: 'us_east_1' is not an AWS region name (e.g. us-east-1)"]


def test_cluster_name_too_long_for_the_autoscaler_role():
    from components.plan.aws import rules as aws_rules
    from components.render.aws import cluster_autoscaler

    cfg = _dev_aws()
    cfg["gpu-platform:cluster"] = {"name": "c" * 50}  # node role fits (59), autoscaler role does not (69)
    problems = _problems(cfg)
    assert (
        "gpu-platform:cluster.name: the Cluster Autoscaler's IAM role would be '" + "c" * 50 + "-cluster-autoscaler' "
        "(69 characters); IAM role names take at most 64 (shorten the cluster name or set addons.clusterAutoscaler: "
        "false)"
    ) in problems
    spec = load_spec(_dev_aws())
    assert aws_rules.autoscaler_role_name(spec) == cluster_autoscaler.role_name(aws_plan.build(spec))


# ---------------------------------------------------------------------------------------- the types


@pytest.mark.parametrize(
    ("fn", "good", "bad"),
    [
        (validation.label_value_problem, ["", "a", "A-b_c.d", "x" * 63], ["x" * 64, "-a", "a-", "a b", "é"]),
        (
            validation.qualified_name_problem,
            ["a", "example.com/a", "a" * 63, ("s." * 126)[:253].rstrip(".") + "/a"],
            ["", "a" * 64, "/a", "Example.com/a", "a/b/c", "a" * 254 + "/b", "_a"],
        ),
        (validation.dns_label_problem, ["a", "a-1", "1a", "a" * 63], ["A", "a_b", "a" * 64, "-a", ""]),
        (validation.dns_subdomain_problem, ["a.b", "a" * 63], ["a..b", "A.b", "a." * 127 + "a"]),
    ],
)
def test_kubernetes_name_rules(fn, good, bad):
    assert [g for g in good if fn(g)] == []
    assert [b for b in bad if not fn(b)] == []


def test_go_duration_bounds():
    from pydantic import TypeAdapter

    ta = TypeAdapter(validation.GoDuration)
    assert ta.validate_python("2562047h") == "2562047h"  # 2562047h < 2**63 ns
    for bad in ("2562048h", "1d", "", "10", "5m3"):
        with pytest.raises(ValueError):
            ta.validate_python(bad)


def test_counts_are_strict():
    from pydantic import TypeAdapter

    ta = TypeAdapter(validation.count(1, 16))
    assert ta.validate_python(8) == 8
    for bad in (True, False, 1.0, "8", 17, 0):
        with pytest.raises(ValueError):
            ta.validate_python(bad)


# ----------------------------------------------------------------------------------------------- fuzz

HUGE = [10**40, -(10**40), 2**63, -1, 0, 10**6, 1.5, float("inf")]
ODD = [True, None, [], {}, "", "x" * 5000, "ñandú-🚀", "on", "2025-11-20", "1e400", "\x00"]


def _mutate(config: dict[str, Any], rng: random.Random) -> str:
    cfg = copy.deepcopy(config)
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(config_paths(cfg))
        parent = cfg
        for p in path[:-1]:
            parent = parent[p]
        op = rng.random()
        if op < 0.2:
            del parent[path[-1]]
        elif op < 0.5:
            parent[path[-1]] = rng.choice(HUGE)
        elif op < 0.8:
            parent[path[-1]] = rng.choice(ODD)
        elif isinstance(parent, dict):
            parent[rng.choice(["on", "1", "~", "nodePool", path[-1] + "x"])] = rng.choice(ODD + HUGE)
        else:
            parent[path[-1]] = {"nested": [parent[path[-1]]] * 3}
    text = yaml.safe_dump({"config": cfg}, allow_unicode=True, sort_keys=False)
    lines = text.splitlines()
    if rng.random() < 0.3:  # text-level: a duplicate line, a tag, an unquoted YAML 1.1 word
        i = rng.randrange(1, len(lines))
        trick = rng.choice(["dup", "tag", "bool"])
        if trick == "dup":
            lines.insert(i, lines[i])
        elif trick == "tag" and ": " in lines[i]:
            head, _, tail = lines[i].partition(": ")
            lines[i] = f"{head}: {rng.choice(['!!binary', '!!timestamp', '!!set', '!!str', '!foo'])} {tail}"
        elif ": " in lines[i]:
            lines[i] = lines[i].split(": ")[0] + ": " + rng.choice(["yes", "off", "0x1F", "0o17", "1_000", ".nan"])
    return "\n".join(lines) + "\n"


def test_fuzz_mutated_stacks_never_surprise_the_code(tmp_path: Path, capsys):
    rng = random.Random(12)
    bases = {s: stackfile.read(STACKS_DIR / f"Pulumi.{s}.yaml") for s in STACKS}
    start = time.monotonic()
    valid: list[tuple[str, Path]] = []
    outcomes = {"refused": 0, "valid": 0}
    for n in range(240):
        stack = rng.choice(sorted(bases))
        path = tmp_path / f"m{n}.yaml"
        path.write_text(_mutate(bases[stack], rng), encoding="utf-8")
        try:  # what `check` does before the engine: read, then validate
            load_spec(stackfile.read(path))
        except SpecError as err:
            outcomes["refused"] += 1
            assert all(len(line) < 400 for line in err.lines(str(path)))
            continue
        outcomes["valid"] += 1
        valid.append((stack, path))
    assert outcomes["refused"] > 150, outcomes
    for stack, path in valid[:3]:  # a bounded number of full runs through the engine and policies
        rc = cli.main(["check", stack, "--config", str(path)])
        err = capsys.readouterr().err
        assert rc in (0, 1, 2), err
        assert "internal error" not in err and "Traceback" not in err
    assert time.monotonic() - start < 60


# ------------------------------------------------------------------ a new user's mistakes, written by hand

DEV_AWS = (STACKS_DIR / "Pulumi.dev-aws.yaml").read_text()
NEW_USER = {
    "tab-indent": DEV_AWS.replace("  gpu-platform:cloud: aws", "\tgpu-platform:cloud: aws"),
    "missing-colon": DEV_AWS.replace("gpu-platform:cloud: aws", "gpu-platform:cloud aws"),
    "pools-as-mapping": DEV_AWS.replace(
        "  gpu-platform:nodePools:\n    - name: l4-shared", "  gpu-platform:nodePools:\n    l4-shared:"
    ),
    "cloud-list": DEV_AWS.replace("gpu-platform:cloud: aws", "gpu-platform:cloud: [aws]"),
    "cloud-upper": DEV_AWS.replace("gpu-platform:cloud: aws", "gpu-platform:cloud: AWS"),
    "per-node-text": DEV_AWS.replace("perNode: 1}", "perNode: one}", 1),
    "per-node-yes": DEV_AWS.replace("perNode: 1}", "perNode: yes}", 1),
    "quota-list": DEV_AWS.replace("gpuQuota: {l4-shared: 4, a10g-spot: 8}", "gpuQuota: [l4-shared, a10g-spot]"),
    "tenant-upper": DEV_AWS.replace("- name: ml-dev\n      gpuQuota", "- name: ML_Dev\n      gpuQuota"),
    "pool-name-space": DEV_AWS.replace("name: l4-shared", "name: l4 shared"),
    "tags-list": DEV_AWS.replace(
        "  gpu-platform:tags:\n    environment: dev", "  gpu-platform:tags:\n    - environment"
    ),
    "two-documents": DEV_AWS + "---\nconfig: {}\n",
    "empty-file": "",
    "only-comment": "# nothing here\n",
    "config-null": "config:\n",
    "config-list": "config:\n  - gpu-platform:cloud: aws\n",
    "json-stack": json.dumps({"config": {"gpu-platform:cloud": "aws", "gpu-platform:nodePools": "oops"}}),
    "unclosed-flow": DEV_AWS.replace("{l4-shared: 4, a10g-spot: 8}", "{l4-shared: 4, a10g-spot: 8"),
    "anchor-undefined": DEV_AWS + "  gpu-platform:scheduling: *nope\n",
    "python-tag": DEV_AWS + "  myorg:x: !!python/object/apply:os.system ['true']\n",
    "unknown-tag": DEV_AWS + "  gpu-platform:scheduling: !Ref other\n",
    "bom-then-garbage": "\ufeff" + DEV_AWS.replace("aws:region: us-east-1", "aws:region: 'us-east-1"),
    "null-byte": DEV_AWS.replace("ml-dev", "ml\x00dev", 1),
    "max-negative": DEV_AWS.replace("maxNodes: 4", "maxNodes: -4"),
    "hex-count": DEV_AWS.replace("maxNodes: 4", "maxNodes: 0x7fffffffffffffff"),
    "replicas-float": DEV_AWS.replace("replicas: 4", "replicas: 4.0"),
    "region-zone": DEV_AWS.replace("aws:region: us-east-1", "aws:region: us-east-1a"),
    "namespace-case": DEV_AWS + "  GPU-PLATFORM:addons: {volcano: true}\n",
    "priority-huge-value": DEV_AWS + "  gpu-platform:priorityClasses: [{name: batch, value: 99999999999}]\n",
    "duration-days": DEV_AWS + "  gpu-platform:scheduling: {waitForPodsReadyTimeout: 1d}\n",
}


@pytest.mark.parametrize("name", sorted(NEW_USER))
def test_new_user_mistakes_are_refused_cleanly(name: str, tmp_path: Path, capsys):
    path = tmp_path / "Pulumi.dev-aws.yaml"
    path.write_text(NEW_USER[name], encoding="utf-8")
    rc, lines, _ = _run(["check", "dev-aws", "--config", str(path)], capsys)
    assert rc == 2, lines
    assert lines and all(": " in line and len(line) < 400 for line in lines)
    assert not any("internal error" in line for line in lines)


# ------------------------------------------------------------------------ the bounds these tests run under


def test_a_broken_alias_limit_fails_the_test_instead_of_the_machine(monkeypatch, capsys):
    """Planted: the alias-expansion limit gone. The bomb then expands for ever; under the bounds it stops as an
    internal error (exit 4, not the 2 the fixture test asserts) within the deadline."""
    monkeypatch.setattr(stackfile, "MAX_NODES", 10**15)
    start = time.monotonic()
    with bounded(seconds=1, memory=GIB):
        rc, lines, _ = _run(["check", "dev-aws", "--config", str(BAD / "alias-bomb.yaml")], capsys)
    assert rc == cli.EXIT_INTERNAL and ("TimeoutError" in lines[0] or "MemoryError" in lines[0]), lines
    assert time.monotonic() - start < 10


def test_the_memory_bound_refuses_an_allocation_past_its_budget():
    with pytest.raises(MemoryError), bounded(seconds=10, memory=GIB // 4):
        bytearray(GIB // 2)
    assert len(bytearray(GIB // 2)) == GIB // 2  # and the limit is lifted afterwards


def test_a_nested_bound_leaves_the_enclosing_deadline_running():
    with pytest.raises(TimeoutError), bounded(seconds=0.5):
        with bounded(seconds=5):
            pass
        time.sleep(2)
