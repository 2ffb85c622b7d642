"""The policy pack exactly as the Pulumi engine runs it.

- Self-contained: the pack (``policies/``) loads nothing from the repository; what it needs from
  ``components`` is generated into ``policies/pack_data.json``, and a drift fails here.
- Under the engine: the pack is started the way the engine starts a Python policy pack,
  ``python -u -m pulumi.policy <engine address> <pack folder>`` (pulumi's Python language host ``RunPlugin``:
  ``-u -m pulumi.policy``, the engine's args, then the program directory; the older
  ``pulumi-analyzer-policy-python`` script runs the same module with ``.`` from the pack folder). Building
  ``PolicyPack`` starts pulumi_policy's gRPC analyzer on 127.0.0.1 and prints its port on stdout; we talk to it
  with the analyzer stubs the ``pulumi`` package ships (GetPluginInfo, GetAnalyzerInfo, Configure with the
  reconciled config as the engine sends it, Analyze per resource, AnalyzeStack) and require the same findings
  as the offline evaluator (``policies.offline``) for every shipped stack, for broken copies and for a
  preview rendering with unknown values. The pack is a copy of the folder alone under another name (what
  ``pulumi policy publish`` uploads), with ``components`` and ``policies`` made unimportable.

pulumi_policy never dials the engine address (only the CLI's log sink would; the pack logs nothing), so a
dummy one is passed. One server process serves the whole module.
"""

from __future__ import annotations

import ast
import copy
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from caching import shared_fixture
from conftest import ROOT, STACKS, rendered, stack_config
from google.protobuf import empty_pb2, json_format, struct_pb2
from plugin_process import served
from pulumi_policy import StackValidationPolicy

from policies import common, offline, pack, scheduling_policies

PACK = ROOT / "policies"
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # the engine's unknown-value sentinel on the wire


# ============================================================================ a self-contained pack


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level and node.module is None:
            names.update("." + a.name for a in node.names)  # from . import sibling
        elif isinstance(node, ast.ImportFrom):
            names.add("." * node.level + (node.module or "").split(".")[0])
    return names


@pytest.mark.reads_source
def test_the_pack_entry_point_loads_only_its_folder_and_its_requirements():
    allowed_third_party = {"pulumi_policy", "yaml"}  # pulumi-policy, PyYAML in policies/requirements.txt
    siblings = {p.stem for p in PACK.glob("*.py")}
    seen, todo = set(), ["__main__"]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        for name in _imports(PACK / f"{module}.py"):
            bare = name.lstrip(".")
            if bare in siblings:
                todo.append(bare)
            else:
                assert name in sys.stdlib_module_names or name in allowed_third_party or name == "__future__", (
                    f"policies/{module}.py imports {name!r}: the published pack holds only policies/"
                )
    # offline.py is the synth's, not the engine's
    assert seen == {
        "__main__",
        "pack",
        "common",
        "capacity_policies",
        "scheduling_policies",
        "security_policies",
        "monitoring_policies",
        "cost_policies",
        "dra_policies",
    }
    lines = [ln.strip() for ln in (PACK / "requirements.in").read_text().splitlines()]
    requirements = {re.split(r"[<>=!~ ]", ln, maxsplit=1)[0] for ln in lines if ln and not ln.startswith("#")}
    assert requirements == {"pulumi", "pulumi-policy", "PyYAML"}  # not gpu-platform, not `-e ..`


def test_pack_data_is_what_components_generate():
    from components.cli import policy_data

    assert (PACK / "pack_data.json").read_text(encoding="utf-8") == policy_data.render(), (
        "policies/pack_data.json is out of date: run `make policy-data`"
    )


def test_pack_data_carries_the_facts_the_policies_used_to_import():
    from components.data import catalog, versions

    assert common.DEFAULT_ALLOWED_SOURCES == versions.ALLOWED_SOURCES
    assert set(common.DEFAULT_PRIVILEGED_NAMESPACES) == {
        versions.GPU_OPERATOR.namespace,
        versions.DCGM_EXPORTER.namespace,
    }
    assert common.GPU_OPERATOR_CHART["chart"] == versions.GPU_OPERATOR.chart
    assert common.DCGM_EXPORTER_CHART["chart"] == versions.DCGM_EXPORTER.chart
    for name in catalog.AWS_INSTANCE_TYPES:
        assert common.aws_gpu_instance(name), name
    for name, mt in catalog.GCP_MACHINE_TYPES.items():
        assert common.gcp_gpu_machine(name) == (mt.gpu_model is not None), name
    assert common.aws_gpu_family("g5g")  # from the catalog (the p*/g* pattern alone would also say so)
    assert not common.aws_gpu_instance("m5.xlarge") and not common.gcp_gpu_machine("n1-standard-8")


def test_policy_data_check_fails_on_a_stale_file(tmp_path, monkeypatch):
    from components.cli import policy_data

    stale = tmp_path / "pack_data.json"
    stale.write_text(policy_data.render().replace('"g5g"', '"g5x"'))
    monkeypatch.setattr(policy_data, "PATH", stale)
    monkeypatch.setattr(policy_data, "ROOT", tmp_path)
    assert policy_data.main(["--check"]) == 1
    assert policy_data.main([]) == 0
    assert stale.read_text() == policy_data.render()
    assert policy_data.main(["--check"]) == 0


def test_make_policy_venv_builds_the_packs_own_virtualenv_from_its_requirements():
    out = subprocess.run(
        ["make", "-n", "-B", "policy-venv", "PYTHON=python3"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert "python3 -m venv policies/.venv" in out
    pip = "policies/.venv/bin/python -m pip install --quiet --disable-pip-version-check"
    assert f"{pip} --require-hashes -r policies/requirements.txt" in out  # the hashed lock, nothing else
    assert "pulumi install" not in out  # pulumi#16605: inside a program it installs the program instead
    policy_yaml = (PACK / "PulumiPolicy.yaml").read_text()
    assert re.search(r"^\s+virtualenv: \.venv$", policy_yaml, re.M)  # policies/.venv is the one the CLI uses


# ============================================================================ the policy reference's table


def _reference_policy_rows() -> list[list[str]]:
    lines = (ROOT / "docs" / "reference" / "policies.md").read_text(encoding="utf-8").splitlines()
    start = lines.index("| policy | level | checks | why | settings |")
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def test_the_reference_policy_table_is_the_pack_list():
    """One row per policy of pack.POLICIES, in its order, with its level (``(stack)`` for stack policies), what
    it guards and why as pack.DOCS says, and every setting its config schema declares; a policy added, removed,
    renamed or re-levelled, or a page text edited without the pack's (or the other way), fails here (the page is
    generated from the pack, tests/test_docs.py keeps it current; this reads it as a person would)."""
    rows = _reference_policy_rows()
    assert [r[0] for r in rows] == [f"`{p.name}`" for p in pack.POLICIES]
    assert list(pack.DOCS) == [p.name for p in pack.POLICIES], "pack.DOCS: one entry per policy, in POLICIES order"
    for (_, level, checks, why, settings), policy in zip(rows, pack.POLICIES, strict=True):
        stack = " (stack)" if isinstance(policy, StackValidationPolicy) else ""
        assert level == pack.level_of(policy).value + stack, policy.name
        doc = pack.DOCS[policy.name]
        assert doc.checks.strip() and doc.why.strip(), policy.name
        assert (checks, why) == (doc.checks, doc.why), f"{policy.name}: the page's row and pack.DOCS differ"
        declared = sorted(policy.config_schema.properties) if policy.config_schema else []
        named = re.findall(r"`([^`]+)`", re.sub(r"\([^)]*\)", "", settings))  # (defaults) set aside
        assert sorted(named) == declared, policy.name


# ============================================================================ the engine's analyzer


LEVELS = {"advisory": 0, "mandatory": 1, "disabled": 2, "remediate": 3}
LEVEL_NAMES = {v: k for k, v in LEVELS.items()}


class Analyzer:
    """The pack's gRPC analyzer, driven the way the engine drives it."""

    def __init__(self, channel):
        from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

        self.pb = analyzer_pb2
        self.stub = analyzer_pb2_grpc.AnalyzerStub(channel)

    def configure(self, config: dict | None = None) -> None:
        """Configure with the reconciled config (every policy's level and its properties, schema defaults
        included), as the engine does after GetAnalyzerInfo (pkg/engine/update.go ReconcilePolicyPackConfig)."""
        chosen = offline.settings(pack.POLICIES, config)
        request = self.pb.ConfigureAnalyzerRequest()
        for name, s in chosen.items():
            entry = request.policyConfig[name]
            entry.enforcementLevel = LEVELS[s.level.value]
            entry.properties.update(s.config)
        self.stub.Configure(request, timeout=30)

    def findings(self, subjects: Sequence[offline.Subject]) -> list[tuple]:
        """(policy, level, type, name, message) of every diagnostic, per resource (Analyze) and for the stack
        (AnalyzeStack; a diagnostic's URN names the resource)."""
        by_urn = {s.urn: s for s in subjects}
        out = []
        for s in subjects:
            response = self.stub.Analyze(
                self.pb.AnalyzeRequest(
                    type=s.type,
                    properties=_struct(s.props),
                    urn=s.urn,
                    name=s.name,
                    options=self.pb.AnalyzerResourceOptions(parent=s.parent or ""),
                    provider=self._provider(s),
                ),
                timeout=30,
            )
            out += [_finding(d, s) for d in response.diagnostics]
        response = self.stub.AnalyzeStack(
            self.pb.AnalyzeStackRequest(
                resources=[
                    self.pb.AnalyzerResource(
                        type=s.type,
                        properties=_struct(s.props),
                        urn=s.urn,
                        name=s.name,
                        options=self.pb.AnalyzerResourceOptions(parent=s.parent or ""),
                        provider=self._provider(s),
                        parent=s.parent or "",
                        dependencies=list(s.dependencies),
                    )
                    for s in subjects
                ]
            ),
            timeout=60,
        )
        out += [_finding(d, by_urn.get(d.urn)) for d in response.diagnostics]
        return sorted(set(out))

    def _provider(self, s: offline.Subject):
        p = s.provider
        if p is None:
            return None
        return self.pb.AnalyzerProviderResource(type=p.type, properties=_struct(p.props), urn=p.urn, name=p.name)


def _struct(props) -> struct_pb2.Struct:
    st = struct_pb2.Struct()
    st.update(props)
    return st


_VERSION = re.compile(r"(from policy pack 'gpu-platform)@v[^']*'")


def _finding(d, subject: offline.Subject | None) -> tuple:
    # pulumi_policy's Python analyzer names its own version (always 0.0.1) in "can't run during preview"
    # messages; the CLI takes the pack version from PulumiPolicy.yaml, as the offline evaluator does.
    message = _VERSION.sub(r"\1'", d.message)
    if "during preview: " not in message:
        # the analyzer sends "<policy description>\n<message>"; the offline report keeps the message alone
        head, sep, message = message.partition("\n")
        assert (head, sep) == (d.description, "\n"), d.message
    return (
        d.policyName,
        LEVEL_NAMES[d.enforcementLevel],
        subject.type if subject else None,
        subject.name if subject else None,
        message,
    )


def offline_findings(subjects: Sequence[offline.Subject], config: dict | None = None) -> list[tuple]:
    report = offline.run(subjects, pack.POLICIES, config)
    return sorted(
        {
            (v.policy, v.enforcement_level, v.resource_type, v.resource_name, _VERSION.sub(r"\1'", v.message))
            for v in report.violations
        }
    )


@pytest.fixture(scope="module")
def analyzer(tmp_path_factory) -> Iterator[Analyzer]:
    # What `pulumi policy publish` uploads: the folder alone, here under another name.
    folder = tmp_path_factory.mktemp("published") / "gpu-platform-policy-pack"
    shutil.copytree(PACK, folder, ignore=shutil.ignore_patterns("__pycache__", ".venv"))
    # The repository's packages must not be reachable (the shared venv's editable install would find them).
    blockers = tmp_path_factory.mktemp("blockers")
    for name in ("components", "policies"):
        (blockers / name).mkdir()
        (blockers / name / "__init__.py").write_text(f"raise ImportError('the pack imported {name}')\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PULUMI_", "PYTHON"))}
    if env.get("MUTANT_UNDER_TEST") == "stats":  # make mutate: its stats phase cannot see a subprocess's hits
        del env["MUTANT_UNDER_TEST"]
    env.update(PYTHONPATH=str(blockers), PULUMI_PROJECT="gpu-platform", PULUMI_STACK="test", PULUMI_DRY_RUN="true")
    argv = [sys.executable, "-u", "-m", "pulumi.policy", "127.0.0.1:1", str(folder)]
    with served(argv, folder, env, "the policy pack") as channel:
        yield Analyzer(channel)


def test_the_analyzer_describes_the_pack(analyzer):
    info = analyzer.stub.GetAnalyzerInfo(empty_pb2.Empty(), timeout=30)
    assert info.name == pack.PACK_NAME and info.supportsConfig
    got = {p.name: LEVEL_NAMES[p.enforcementLevel] for p in info.policies}
    assert got == {p.name: pack.level_of(p).value for p in pack.POLICIES}
    schema = {p.name: json_format.MessageToDict(p.configSchema.properties) for p in info.policies}
    assert schema["helm-chart-pinned"]["allowedSources"]["default"] == list(common.DEFAULT_ALLOWED_SOURCES)
    assert analyzer.stub.GetPluginInfo(empty_pb2.Empty(), timeout=30).version


@pytest.mark.parametrize("stack", STACKS)
def test_every_shipped_stack_gets_the_offline_findings_under_the_engine(analyzer, stack):
    subjects = offline.subjects_from_rendering(rendered(stack))
    analyzer.configure()
    want = offline_findings(subjects)
    assert analyzer.findings(subjects) == want
    assert not [f for f in want if f[1] == "mandatory"]  # shipped stacks pass (what CI relies on)


def test_bundled_charts_pass_by_digest_and_a_tampered_archive_fails_the_same_way(analyzer):
    """`local` with `chartSource: bundled` passes under the engine's analyzer as offline; a release whose
    archive digest differs from every bundled one is refused by both."""
    from components.cli.synth import render

    subjects = offline.subjects_from_rendering(
        render("local", {**stack_config("local"), "gpu-platform:chartSource": "bundled"})
    )
    analyzer.configure()
    assert analyzer.findings(subjects) == offline_findings(subjects) == []
    tampered = [
        replace(s, props={**s.props, "description": "chart sha256:" + "0" * 64})
        if s.type == common.HELM_RELEASE and s.props.get("chart", "").endswith("/kueue-0.19.2.tgz")
        else s
        for s in subjects
    ]
    want = offline_findings(tampered)
    assert [(f[0], f[1]) for f in want] == [("helm-chart-pinned", "mandatory")]
    assert analyzer.findings(tampered) == want


def test_a_policy_config_changes_both_the_same_way(analyzer):
    config = {
        "all": "mandatory",
        "gpu-container-hardening": "disabled",
        "time-slicing-replicas": {"maxReplicas": 2},
        "helm-chart-pinned": {
            "enforcementLevel": "remediate",
            "allowedSources": ["https://helm.ngc.nvidia.com/nvidia"],
        },
    }
    subjects = offline.subjects_from_rendering(rendered("prod-aws"))
    analyzer.configure(config)
    want = offline_findings(subjects, config)
    policies = {f[0] for f in want}
    # the config really bites: releases from other sources, 4-way time-slicing, advisories made mandatory
    assert {"helm-chart-pinned", "time-slicing-replicas"} <= policies  # time-slicing-replicas is advisory by default
    assert "gpu-container-hardening" not in policies
    assert {f[1] for f in want} == {"mandatory"}  # remediate is reported as mandatory, as the engine does
    assert analyzer.findings(subjects) == want


def test_a_created_cluster_without_its_security_settings_gets_the_same_findings(analyzer):
    """starter-aws's EKS cluster with Secrets encryption, its logs and the endpoint restriction taken away: the
    three findings, offline and under the engine alike."""
    subjects = []
    for s in offline.subjects_from_rendering(rendered("starter-aws")):
        props = copy.deepcopy(dict(s.props))
        if s.type == common.EKS_CLUSTER:
            props.pop("encryptionConfig")
            props["enabledClusterLogTypes"] = ["api"]
            props["vpcConfig"]["publicAccessCidrs"] = ["0.0.0.0/0"]
        subjects.append(replace(s, props=props))
    analyzer.configure()
    want = offline_findings(subjects)
    assert [f[:2] for f in want if f[0] == "eks-cluster-hardening"] == [("eks-cluster-hardening", "mandatory")] * 3
    assert analyzer.findings(subjects) == want


def _broken(subjects: list[offline.Subject]) -> list[offline.Subject]:
    """prod-aws with one violation of several policies planted in its resources."""
    out = []
    for s in subjects:
        props = copy.deepcopy(dict(s.props))
        if s.type == common.EKS_NODE_GROUP and s.name == "a100-train":
            props["taints"] = []  # gpu-pool-taint
        elif s.type == common.HELM_RELEASE and props.get("chart") == "volcano":
            props["version"] = "~1.15"  # helm-chart-pinned
        elif s.type == common.LAUNCH_TEMPLATE:
            props["metadataOptions"] = {"httpTokens": "optional"}  # node-imdsv2-and-encryption
        elif s.type == common.PRIORITY_CLASS:
            props["globalDefault"] = True  # single-default-priority-class (a stack policy, with a URN)
        out.append(replace(s, props=props))
    admin = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    out.append(
        offline.Subject(
            common.IAM_POLICY,
            "planted-admin",
            "urn:pulumi:prod-aws::gpu-platform::aws:iam/policy:Policy::planted-admin",
            {"policy": json.dumps(admin)},
        )
    )
    return out


def test_a_broken_rendering_gets_the_same_findings(analyzer):
    subjects = _broken(offline.subjects_from_rendering(rendered("prod-aws")))
    analyzer.configure()
    want = offline_findings(subjects)
    mandatory = {f[0] for f in want if f[1] == "mandatory"}
    assert mandatory == {
        "gpu-pool-taint",
        "helm-chart-pinned",
        "node-imdsv2-and-encryption",
        "single-default-priority-class",
        "iam-no-admin-wildcard",
    }
    assert analyzer.findings(subjects) == want


# ============================================================================ unknown values (a preview)


@shared_fixture
def preview():
    from components.cli.synth import render

    return render("prod-aws", stack_config("prod-aws"), preview=True)


def test_a_preview_rendering_has_unknown_iam_documents(preview):
    unknown = {r.name for r in preview.of_type(common.IAM_POLICY) if r.inputs["policy"] == UNKNOWN}
    # the Karpenter controller's documents hold the interruption queue's and the node role's ARNs
    assert {n for n in unknown if n.startswith("karpenter-controller-")} == {
        r.name for r in preview.of_type(common.IAM_POLICY) if r.name.startswith("karpenter-controller-")
    }
    assert len(unknown) >= 3
    # what does not depend on a created resource stays known
    assert all(r.inputs["taints"] for r in preview.of_type(common.EKS_NODE_GROUP))
    assert UNKNOWN not in json.dumps([r.inputs for r in rendered("prod-aws").resources])  # not in a plain synth


def test_a_policy_meeting_an_unknown_is_an_advisory_cant_run_during_preview(preview):
    report = offline.evaluate(preview)
    assert not report.mandatory_violations
    assert not [v for v in report.violations if "policy raised" in v.message]
    skipped = [v for v in report.violations if "during preview" in v.message]
    policies = preview.of_type(common.IAM_POLICY)
    assert {v.resource_name for v in skipped} == {r.name for r in policies if r.inputs["policy"] == UNKNOWN}
    assert any(r.inputs["policy"] != UNKNOWN for r in policies)  # known documents are still judged
    for v in skipped:
        assert v.policy == "iam-no-admin-wildcard" and v.enforcement_level == "advisory"
        assert v.message == (
            "can't run policy 'iam-no-admin-wildcard' from policy pack 'gpu-platform@v0.1.0' during preview: "
            "string value at .policy can't be known during preview"
        )


def test_a_stack_policy_meeting_an_unknown_is_skipped_the_same_way():
    subjects = offline.subjects_from_manifests(
        [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "p"}, "value": 1}]
    )
    unknown = [replace(subjects[0], props={**subjects[0].props, "globalDefault": UNKNOWN})]
    (v,) = offline.run(unknown, [scheduling_policies.single_default_priority_class]).violations
    assert (v.enforcement_level, v.resource_type) == ("advisory", None)
    assert v.message.endswith("during preview: string value at .globalDefault can't be known during preview")


def test_a_preview_gets_the_same_findings_under_the_engine(analyzer, preview):
    subjects = offline.subjects_from_rendering(preview)
    analyzer.configure({"all": "mandatory"})  # even mandatory policies only advise when they cannot run
    want = offline_findings(subjects, {"all": "mandatory"})
    assert [f for f in want if "during preview" in f[4]]
    assert {f[1] for f in want if "during preview" in f[4]} == {"advisory"}
    assert analyzer.findings(subjects) == want


def test_the_cli_renders_a_preview(capsys):
    from components.cli import main as cli

    assert cli.main(["check", "dev-aws", "--preview"]) == 0  # Karpenter: its controller documents hold ARNs
    err = capsys.readouterr().err
    assert "policy advisory iam-no-admin-wildcard" in err and "during preview" in err
    assert "policy raised" not in err
