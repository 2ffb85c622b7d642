"""The ``gpu-platform`` command's surface: its help, its argument defaults, the ``schema`` and ``cost`` output
formats, the stack-file lookup, synth/check's report lines, the policy pack's paths, and the one-line
internal-error report. The engine runs at most once (the session's cached rendering of ``local``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest
from conftest import ROOT, STACKS_DIR

from components.cli import main as cli, synth
from components.spec.model import Problem, SpecError

DEV_AWS = STACKS_DIR / "Pulumi.dev-aws.yaml"
STACK_FILE_HELP = "stack file to use instead of stacks/Pulumi.STACK.yaml"


def _help(argv: list[str], capsys) -> str:
    """The help printed for ``argv + ['--help']``, whitespace collapsed (argparse wraps to the terminal)."""
    with pytest.raises(SystemExit) as exit_:
        cli.main([*argv, "--help"])
    assert exit_.value.code == 0
    return " ".join(capsys.readouterr().out.split())


# ---------------------------------------------------------------------------------------------------- help


def test_top_level_help_lists_every_command_with_its_purpose(capsys):
    """``gpu-platform --help`` is where a user learns the commands: each is listed with what it does."""
    text = _help([], capsys)
    assert text.startswith("usage: gpu-platform ")
    assert "The gpu-platform command: synth, check, plan, cost, explain, plugins and schema." in text
    assert "``" not in text  # no RST markup on the terminal
    for command, purpose in [
        ("synth", "render a stack offline to a directory"),
        ("check", "validate a stack and evaluate the policy pack, writing nothing"),
        ("plan", "print what the platform decides per pool, tenant and add-on, writing nothing"),
        ("cost", "print what the stack's GPU pools and tenants cost per hour, writing nothing"),
        ("explain", "trace workloads through the stack: would they run, or where do they wait"),
        (
            "diff",
            "what a change to the stack file does, offline: resources replaced or deleted (by URN), pools, quotas, "
            "cost",
        ),
        ("plugins", "print the provider plugins the stack uses: KIND NAME VERSION per line"),
        ("schema", "print the JSON Schema of a stack file"),
    ]:
        assert f"{command} {purpose}" in text, command
    assert "--debug on an internal error, print the traceback" in text


def test_version_prints_the_installed_distributions_version(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exit_:
        cli.main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"gpu-platform {version('gpu-platform')}\n"
    assert "--version show program's version number and exit" in _help([], capsys)


def test_commands_other_than_version_never_look_the_version_up(monkeypatch, capsys):
    """The distribution lookup (importlib.metadata) is made only for --version, not to build every parser."""

    def looked_up() -> str:
        raise AssertionError("the version was looked up")

    monkeypatch.setattr(cli, "_version", looked_up)
    assert cli.main(["schema"]) == 0
    assert capsys.readouterr().out.startswith("{")


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (
            ["synth"],
            [
                f"--config CONFIG {STACK_FILE_HELP}",
                "--out OUT output directory (default out/STACK)",
                f"--policy-config POLICY_CONFIG {cli.POLICY_CONFIG_HELP}",
                f"--preview {cli.PREVIEW_HELP}",
            ],
        ),
        (
            ["check"],
            [
                f"--config CONFIG {STACK_FILE_HELP}",
                f"--policy-config POLICY_CONFIG {cli.POLICY_CONFIG_HELP}",
                f"--preview {cli.PREVIEW_HELP}",
            ],
        ),
        (["cost"], [f"--config CONFIG {STACK_FILE_HELP}", "--json print cost.json instead of the table"]),
        (
            ["explain"],
            [
                "workload Kubernetes manifests (multi-document YAML)",
                f"--config CONFIG {STACK_FILE_HELP}",
                "--json one JSON document per workload",
            ],
        ),
    ],
)
def test_each_command_documents_its_arguments(command: list[str], expected: list[str], capsys):
    """Every argument of every command carries its help line; the per-command --debug stays hidden."""
    text = _help(command, capsys)
    assert text.startswith(f"usage: gpu-platform {command[0]} ")
    for line in expected:
        assert line in text
    assert "--debug" not in text


def test_help_texts_say_what_the_policy_config_and_preview_are():
    """The shared help texts, as the README documents the options."""
    assert cli.POLICY_CONFIG_HELP == (
        "policy pack config (JSON, the format of pulumi --policy-pack-config): levels and settings"
    )
    assert cli.PREVIEW_HELP == (
        "render as a first `pulumi preview` sees it: outputs of resources to be created are unknown (policies that "
        "meet one report an advisory 'can't run during preview', as under the engine)"
    )


# ---------------------------------------------------------------------------------------------- arguments


def test_defaults_of_each_command():
    """Options left out take the documented defaults: no --config, no --out, no policy config, no preview,
    no --json, no --debug; each command dispatches to its own function."""
    p = cli.parser()
    synth_args = p.parse_args(["synth", "dev-aws"])
    assert (synth_args.stack, synth_args.config, synth_args.out, synth_args.policy_config) == (
        "dev-aws",
        None,
        None,
        None,
    )
    assert synth_args.preview is False and synth_args.debug is False and synth_args.fn is cli.cmd_synth
    check_args = p.parse_args(["check", "dev-aws"])
    assert (check_args.config, check_args.policy_config, check_args.preview, check_args.debug) == (
        None,
        None,
        False,
        False,
    )
    assert check_args.fn is cli.cmd_check
    cost_args = p.parse_args(["cost", "dev-aws"])
    assert (cost_args.config, cost_args.json, cost_args.fn) == (None, False, cli.cmd_cost)
    explain_args = p.parse_args(["explain", "dev-aws", "w.yaml"])
    assert (explain_args.workload, explain_args.json, explain_args.debug) == ("w.yaml", False, False)
    assert explain_args.fn is cli.cmd_explain
    schema_args = p.parse_args(["schema"])
    assert (schema_args.command, schema_args.fn) == ("schema", cli.cmd_schema)


def test_flags_are_read_where_given():
    """--debug works before or after the command (the sub-command's copy does not reset the global one)."""
    p = cli.parser()
    assert p.parse_args(["--debug", "check", "dev-aws"]).debug is True
    assert p.parse_args(["check", "dev-aws", "--debug"]).debug is True
    assert p.parse_args(["--debug", "explain", "s", "w"]).debug is True
    args = p.parse_args(["synth", "s", "--config", "c.yaml", "--out", "o", "--policy-config", "p.json", "--preview"])
    assert (args.config, args.out, args.policy_config, args.preview) == ("c.yaml", "o", "p.json", True)
    assert p.parse_args(["cost", "s", "--json"]).json is True
    assert p.parse_args(["explain", "s", "w", "--json"]).json is True


def test_a_command_is_required(capsys):
    """No command is a usage error (exit 2), not a crash on a missing ``fn``."""
    with pytest.raises(SystemExit) as exit_:
        cli.main([])
    assert exit_.value.code == 2
    assert "the following arguments are required: command" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------- schema


def test_schema_is_printed_indented_with_sorted_keys(capsys):
    """Editors and reviewers diff the schema: two-space indentation and sorted keys make it stable."""
    assert cli.main(["schema"]) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert out.startswith('{\n  "$defs": {\n    "')
    assert out.endswith("\n}\n")
    top = [line for line in out.splitlines() if line.startswith('  "')]
    assert [line.split('"')[1] for line in top] == ["$defs", "$schema", "properties", "title", "type"]


# --------------------------------------------------------------------------------------------- stack files


def test_stack_file_lookup(tmp_path: Path, monkeypatch):
    """--config wins; else DIR/Pulumi.STACK.yaml, DIR being --stacks or stacks under the working directory; never
    the repository's stacks by accident (issue 41.3)."""
    monkeypatch.chdir(tmp_path)
    assert cli._stack_file("dev-aws", "elsewhere.yaml") == Path("elsewhere.yaml")
    assert cli._stack_file("mine", None) == Path("stacks") / "Pulumi.mine.yaml"
    assert cli._stack_file("mine", None, "envs") == Path("envs") / "Pulumi.mine.yaml"
    assert cli.main(["plan", "dev-aws"]) == cli.EXIT_INVALID  # the repository has one; this directory has none


def test_a_missing_stack_lists_the_stacks_found(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["check", "prod"]) == cli.EXIT_INVALID
    assert capsys.readouterr().err == (
        f"stacks/Pulumi.prod.yaml: (file): no such stack file; there is no folder stacks/ in {tmp_path} "
        "(choose one, or --stacks DIR, or --config FILE)\n"
    )
    (tmp_path / "stacks").mkdir()
    assert cli.main(["cost", "prod"]) == cli.EXIT_INVALID
    assert "no stack files (Pulumi.*.yaml) in stacks/" in capsys.readouterr().err
    for name in ("prod-aws", "dev-aws"):
        (tmp_path / "stacks" / f"Pulumi.{name}.yaml").write_bytes(DEV_AWS.read_bytes())
    assert cli.main(["explain", "prod", "w.yaml"]) == cli.EXIT_INVALID
    assert "; stacks in stacks/: dev-aws, prod-aws (choose one" in capsys.readouterr().err
    assert cli.main(["cost", "prod-aws"]) == cli.EXIT_OK


def test_problem_lines_name_the_file_relative_to_the_working_directory(tmp_path: Path, monkeypatch):
    """A file under the working directory is shown relative to it; one outside it as given."""
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    assert cli._display(tmp_path / "sub" / "s.yaml") == "s.yaml"
    assert cli._display(tmp_path / "s.yaml") == str(tmp_path / "s.yaml")
    assert cli._display(Path("..") / "s.yaml") == str(Path("..") / "s.yaml")  # as given, not resolved
    assert cli._display(Path("./x/../s.yaml")) == "s.yaml"


@pytest.fixture
def spy_render(monkeypatch):
    """synth.render replaced by a spy that records its arguments and refuses the config with one problem."""
    calls: list[dict] = []

    def spy(stack, config, **kwargs):
        calls.append({"stack": stack, **kwargs})
        raise SpecError([Problem("gpu-platform:cloud", "stopped by the test")])

    monkeypatch.setattr(synth, "render", spy)
    return calls


def test_check_renders_as_pulumi_up_unless_asked_for_preview(spy_render, tmp_path: Path, monkeypatch, capsys):
    """Without --preview (or without the attribute at all, for a caller building its own Namespace) the stack
    is rendered as an update sees it; --preview renders it as a first preview."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_bytes(DEV_AWS.read_bytes())
    assert cli.cmd_check(argparse.Namespace(stack="dev-aws", config="s.yaml", policy_config=None)) == 2
    assert cli.main(["check", "dev-aws", "--config", "s.yaml"]) == 2
    assert cli.main(["synth", "dev-aws", "--config", "s.yaml", "--preview"]) == 2
    assert [(c["stack"], c["preview"]) for c in spy_render] == [
        ("dev-aws", False),
        ("dev-aws", False),
        ("dev-aws", True),
    ]
    assert capsys.readouterr().err.splitlines() == ["s.yaml: gpu-platform:cloud: stopped by the test"] * 3


def test_cost_and_explain_refuse_a_bad_stack_file(tmp_path: Path, capsys):
    """cost and explain validate the stack file first: exit 2 with its problem lines, nothing on stdout."""
    bad = tmp_path / "s.yaml"
    bad.write_text("config:\n")
    shown = cli._display(bad)
    for argv in (["cost", "dev-aws", "--config", str(bad)], ["explain", "dev-aws", "w.yaml", "--config", str(bad)]):
        assert cli.main(argv) == cli.EXIT_INVALID
        out = capsys.readouterr()
        assert out.out == ""
        assert out.err.splitlines() == [f"{shown}: config: a stack file needs a top-level 'config:' mapping"]


def test_explain_names_an_unreadable_workload_file(tmp_path: Path, capsys):
    """A missing workload file is exit 2 with the file and the OS's reason, no traceback."""
    missing = tmp_path / "absent.yaml"
    assert cli.main(["explain", "dev-aws", str(missing), "--config", str(DEV_AWS)]) == cli.EXIT_INVALID
    assert capsys.readouterr().err == f"{missing}: cannot read: No such file or directory\n"
    latin1 = tmp_path / "w.yaml"
    latin1.write_bytes(b"kind: Pod # caf\xe9\n")
    assert cli.main(["explain", "dev-aws", str(latin1), "--config", str(DEV_AWS)]) == cli.EXIT_INVALID
    assert capsys.readouterr().err.startswith(f"{latin1}: cannot read: 'utf-8' codec can't decode byte 0xe9")


# ------------------------------------------------------------------------------------------ internal errors


def _internal_error(monkeypatch, capsys, message: str) -> str:
    def boom(args):
        raise ZeroDivisionError(message)

    monkeypatch.setattr(cli, "cmd_schema", boom)
    assert cli.main(["schema"]) == cli.EXIT_INTERNAL == 4
    (line,) = capsys.readouterr().err.splitlines()
    return line


def test_internal_error_detail_is_kept_up_to_160_characters(monkeypatch, capsys):
    """A bug's message is shown whole up to 160 characters, on one line (whitespace runs become one blank)."""
    # collapsed: 150 d's + " e fghijkl" = 160 characters
    line = _internal_error(monkeypatch, capsys, "d" * 150 + " e\n\n  fghijkl")
    assert line == (
        "gpu-platform: internal error: ZeroDivisionError: "
        + "d" * 150
        + " e fghijkl (a bug; run with --debug for the traceback)"
    )


def test_internal_error_detail_beyond_160_characters_is_cut(monkeypatch, capsys):
    """161 characters: the first 160 are kept and '…' marks the cut."""
    line = _internal_error(monkeypatch, capsys, "x" * 160 + "y")
    assert line == (
        "gpu-platform: internal error: ZeroDivisionError: "
        + "x" * 160
        + "… (a bug; run with --debug for the traceback)"
    )


# ------------------------------------------------------------------------------------ synth / check output


@pytest.fixture
def cached_render(monkeypatch):
    """synth.render answering the session's cached rendering of the shipped stack (no second engine run)."""
    from conftest import rendered

    rendered("local")  # rendered once (or taken from the session cache) before render is replaced
    monkeypatch.setattr(synth, "render", lambda stack, config, preview=False: rendered(stack))
    return rendered


def test_check_says_the_stack_is_valid_with_its_resource_count(cached_render, capsys):
    """check: a line naming the stack and how many resources it registers, then the verdict; exit 0."""
    assert cli.main(["check", "local"]) == cli.EXIT_OK
    out = capsys.readouterr()
    assert out.out == (
        f"local: config renders, {len(cached_render('local').resources)} resources\nlocal: valid, no warnings: exit 0\n"
    )
    assert out.err == ""


@pytest.fixture
def rendered_as(monkeypatch):
    """synth.render answering the session's cached rendering of the shipped stacks named (rendered first)."""

    def use(*stacks: str):
        from conftest import rendered

        for stack in stacks:
            rendered(stack)
        monkeypatch.setattr(synth, "render", lambda stack, config, preview=False: rendered(stack))
        return rendered

    return use


def test_check_prints_every_warning_with_its_key_path_and_strict_fails_on_them(rendered_as, capsys):
    """prod-aws's summary.md warnings reach the terminal: one stderr line each, key path first; the last line
    says the exit code; --strict turns them into exit 1."""
    from components.explain.summary import stack_warnings
    from components.plan import plan

    r = rendered_as("prod-aws")("prod-aws")
    expected = stack_warnings(r.spec, plan.build(r.spec, "prod-aws"))
    assert len(expected) >= 3
    assert cli.main(["check", "prod-aws"]) == cli.EXIT_OK
    out = capsys.readouterr()
    err = out.err.splitlines()
    assert err == [f"warning: {w.path}: {w.message}" for w in expected]
    assert "warning: gpu-platform:nodePools[4]: no DCGM metrics on Bottlerocket pools a100-gang, a100-train" in (
        out.err
    )
    assert out.out.splitlines()[-1] == (
        f"prod-aws: valid with {len(expected)} warnings (above): exit 0 (--strict fails on them)"
    )
    assert cli.main(["check", "prod-aws", "--strict"]) == cli.EXIT_POLICY
    assert (
        capsys.readouterr().out.splitlines()[-1] == f"prod-aws: {len(expected)} warnings (above): exit 1 under --strict"
    )
    assert cli.main(["check", "local", "--strict"]) == cli.EXIT_OK


def test_starter_aws_placeholders_are_warnings_on_the_terminal(rendered_as, capsys):
    rendered_as("starter-aws")
    assert cli.main(["check", "starter-aws"]) == cli.EXIT_OK
    err = capsys.readouterr().err
    assert "warning: gpu-platform:cluster.create.eks.publicAccessCidrs[0]: 203.0.113.0/24 is a documentation" in err
    assert err.count("; pulumi up refuses it\n") == 2


def test_the_verdict_names_mandatory_violations_and_never_says_valid_then():
    from components.cli.outcome import verdict

    assert verdict("s", 2, 1, 3, False) == ("s: 2 mandatory policy violations: exit 1 (pulumi up would refuse)", 1)
    assert verdict("s", 1, 0, 0, True)[0] == "s: 1 mandatory policy violation: exit 1 (pulumi up would refuse)"
    assert verdict("s", 0, 1, 0, False) == (
        "s: valid with 0 warnings and 1 advisory policy finding (above): exit 0 (--strict fails on them)",
        0,
    )
    assert verdict("s", 0, 0, 1, True) == ("s: 1 warning (above): exit 1 under --strict", 1)
    assert verdict("s", 0, 0, 0, True) == ("s: valid, no warnings: exit 0", 0)


def test_plan_prints_the_warnings_after_the_plan_and_keeps_stdout_json(capsys):
    assert cli.main(["plan", "prod-aws", "--json"]) == cli.EXIT_OK
    out = capsys.readouterr()
    import json

    assert json.loads(out.out)["stack"] == "prod-aws"
    assert out.err.startswith("warning: gpu-platform:nodePools[0]: pool a100-train:")
    assert out.err.splitlines()[-1].startswith("prod-aws: valid with ")


def test_synth_says_how_many_files_it_wrote_and_where(cached_render, tmp_path: Path, capsys):
    """synth: the files written (the policy report among them, its section in the summary) and the resource
    count."""
    out_dir = tmp_path / "out"
    assert cli.main(["synth", "local", "--out", str(out_dir)]) == cli.EXIT_OK
    written = [p for p in out_dir.rglob("*") if p.is_file()]
    assert (out_dir / "policy-report.json").is_file()
    assert "\n## Policy report\n" in (out_dir / "summary.md").read_text()  # the report's section in the summary
    n = len(cached_render("local").resources)
    assert capsys.readouterr().out == (
        f"wrote {len(written)} files to {out_dir} ({n} resources)\nlocal: valid, no warnings: exit 0\n"
    )


def test_a_resynth_says_it_left_the_unchanged_files_as_they_were(tmp_path: Path, capsys):
    """Synthesising the same stack again writes nothing: the output says how many files it left unchanged."""
    out_dir = tmp_path / "out"
    assert cli.main(["synth", "local", "--out", str(out_dir)]) == cli.EXIT_OK
    files = len([p for p in out_dir.rglob("*") if p.is_file()])
    capsys.readouterr()
    assert cli.main(["synth", "local", "--out", str(out_dir)]) == cli.EXIT_OK
    assert capsys.readouterr().out.splitlines()[0].startswith(f"wrote 0 files to {out_dir}, {files} unchanged (")


def test_synth_writes_to_out_stack_by_default(cached_render, tmp_path: Path, monkeypatch, capsys):
    """Without --out the files go to out/STACK under the working directory."""
    monkeypatch.chdir(tmp_path)
    assert cli.main(["synth", "local", "--stacks", str(STACKS_DIR)]) == cli.EXIT_OK
    assert (tmp_path / "out" / "local" / "summary.md").is_file()
    assert " files to out/local (" in capsys.readouterr().out


def test_without_the_policy_pack_synth_writes_no_report(cached_render, tmp_path: Path, monkeypatch, capsys):
    """Installed without policies/ (an ImportError), synth and check still work, with no policy report."""
    monkeypatch.setitem(sys.modules, "policies.offline", None)  # import of it raises ImportError
    assert cli._policies(cached_render("local")) == (None, None)
    out_dir = tmp_path / "out"
    assert cli.main(["synth", "local", "--out", str(out_dir)]) == cli.EXIT_OK
    assert not (out_dir / "policy-report.json").exists() and (out_dir / "summary.md").is_file()
    assert cli.main(["check", "local"]) == cli.EXIT_OK


def test_policy_violations_are_printed_and_mandatory_ones_fail(monkeypatch, capsys):
    """Each violation is one stderr line; the exit is 1 only with a mandatory one (0 without a report)."""
    from types import SimpleNamespace

    import policies.offline

    line = "policy advisory x: y"
    report = SimpleNamespace(violations=[SimpleNamespace(line=lambda: line)], mandatory_violations=[])
    monkeypatch.setattr(policies.offline, "evaluate", lambda rendering, config_file=None: report)
    assert cli._policies(object(), "p.json") == (report, None)
    assert capsys.readouterr().err == line + "\n"
    assert cli._policy_exit(report) == cli.EXIT_OK
    assert cli._policy_exit(SimpleNamespace(mandatory_violations=["v"])) == cli.EXIT_POLICY == 1
    assert cli._policy_exit(None) == cli.EXIT_OK


def test_an_unusable_policy_config_prints_each_problem(monkeypatch, capsys):
    """A policy config error: each of its problems on its own stderr line, exit 2, no report."""
    import policies.offline

    def refuse(rendering, config_file=None):
        raise policies.offline.PolicyConfigError(["p.json: a: no such policy", "p.json: b: no such policy"])

    monkeypatch.setattr(policies.offline, "evaluate", refuse)
    assert cli._policies(object(), "p.json") == (None, cli.EXIT_INVALID)
    assert capsys.readouterr().err == "p.json: a: no such policy\np.json: b: no such policy\n"


def test_cost_prints_the_tables_the_markdown_or_the_json_each_ending_in_one_newline(capsys):
    """cost: aligned text by default, summary.md's Markdown with --markdown, cost.json with --json; either way one
    trailing newline."""
    assert cli.main(["cost", "dev-gcp", "--config", str(STACKS_DIR / "Pulumi.dev-gcp.yaml")]) == cli.EXIT_OK
    table = capsys.readouterr().out
    assert table.startswith("Cost\n\nList prices, USD per hour (gcp, region us-central1)")
    assert table.endswith(".\n") and not table.endswith("\n\n")
    assert cli.main(["cost", "dev-gcp", "--markdown"]) == cli.EXIT_OK
    markdown = capsys.readouterr().out
    assert markdown.startswith("## Cost\n\nList prices, USD per hour (gcp, region us-central1)")
    assert markdown.endswith(".\n") and not markdown.endswith("\n\n")
    assert cli.main(["cost", "dev-gcp", "--json"]) == cli.EXIT_OK
    doc = capsys.readouterr().out
    assert doc.startswith('{\n  "assumptions": {') and doc.endswith("}\n") and not doc.endswith("\n\n")


def test_explain_names_the_workload_file_in_front_of_its_problem(tmp_path: Path, capsys):
    """A workload file explain cannot trace: one stderr line, '<file>: <why>', exit 2, nothing on stdout."""
    w = tmp_path / "w.yaml"
    w.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    assert cli.main(["explain", "dev-aws", str(w), "--config", str(DEV_AWS)]) == cli.EXIT_INVALID
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err == (
        f"{w}: no workload in it (Pod, Deployment, StatefulSet, Job, JobSet, PyTorchJob, MPIJob, TrainJob, RayJob, "
        "RayCluster, LeaderWorkerSet, Volcano Job)\n"
    )


# ------------------------------------------------------------------------------------------------- plugins


def _locked(package: str) -> str:
    """The version requirements.txt (the program's lock) pins ``package`` to."""
    import re

    text = (ROOT / "requirements.txt").read_text()
    return re.search(rf"^{package}==([^\s;]+)", text, re.M).group(1)


@pytest.mark.parametrize(
    ("stack", "clouds"), [("local", []), ("dev-aws", ["aws"]), ("prod-aws", ["aws"]), ("prod-gcp", ["gcp"])]
)
def test_plugins_lists_kubernetes_and_only_the_stacks_own_cloud_at_the_locked_versions(stack, clouds, capsys):
    """What `make plugins STACK=...` installs: an existing-cluster stack needs no cloud plugin at all."""
    assert cli.main(["plugins", stack]) == 0
    expected = [f"resource kubernetes {_locked('pulumi-kubernetes')}"]
    expected += [f"resource {c} {_locked('pulumi-' + c)}" for c in clouds]
    assert capsys.readouterr().out.splitlines() == expected


def test_plugins_of_an_invalid_stack_file_print_nothing_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "Pulumi.bad.yaml"
    bad.write_text("config:\n  gpu-platform:cloud: azure\n")
    assert cli.main(["plugins", "bad", "--config", str(bad)]) == 2
    out = capsys.readouterr()
    assert out.out == "" and "gpu-platform:cloud" in out.err


_PLUGIN_SCANS = """
import importlib.metadata, json, os, sys
scans = []
real = importlib.metadata.entry_points
def counted(*a, **kw):
    if kw.get("group") == "pydantic":
        scans.append(1)
    return real(*a, **kw)
importlib.metadata.entry_points = counted
from components.cli import main
from components.spec import model
print(json.dumps({"env": os.environ.get("PYDANTIC_DISABLE_PLUGINS"), "scans": len(scans)}))
"""


@pytest.mark.parametrize(("preset", "env", "scans"), [(None, "__all__", 0), ("", "", 1), ("logfire", "logfire", 1)])
def test_the_command_skips_pydantic_plugin_discovery_unless_the_user_set_it(preset, env, scans):
    """Importing the command turns pydantic's plugin scan off before any spec model is built; a value the user set
    (even empty: keep every plugin) is left as it is, and pydantic then scans as usual."""
    import json
    import os
    import subprocess

    child_env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    if preset is not None:
        child_env["PYDANTIC_DISABLE_PLUGINS"] = preset
    child_env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        [sys.executable, "-c", _PLUGIN_SCANS], cwd=ROOT, env=child_env, capture_output=True, text=True, check=True
    )
    assert json.loads(proc.stdout) == {"env": env, "scans": scans}
