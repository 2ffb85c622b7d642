"""Documentation values left in a stack's cluster section (components/plan/placeholders.py): the offline tools
warn, a preview warns, `pulumi up` stops before registering anything."""

from __future__ import annotations

import copy

import pulumi
import pytest
from conftest import ROOT, STACKS, rendered, stack_config

from components.cli import synth
from components.cli.loader import load_spec
from components.plan import placeholders
from components.render import placeholders as deploy_check

CLUSTER = "gpu-platform:cluster"
STARTER_LINES = [
    "stacks/Pulumi.starter-aws.yaml: gpu-platform:cluster.create.eks.adminRoleArns[0]: "
    "arn:aws:iam::111122223333:role/platform-admin is in 111122223333, an account of AWS's documentation; name a "
    "role of your own (aws sts get-caller-identity shows yours)",
    "stacks/Pulumi.starter-aws.yaml: gpu-platform:cluster.create.eks.publicAccessCidrs[0]: 203.0.113.0/24 is a "
    "documentation range (203.0.113.0/24, RFC 5737) that no machine has; put the network you run pulumi and kubectl "
    "from",
]


STARTER_GCP_LINES = [
    "stacks/Pulumi.starter-gcp.yaml: gcp:project: your-google-project contains 'google', which no GCP project ID may "
    "contain; put your project's ID (gcloud config get-value project shows yours)",
    "stacks/Pulumi.starter-gcp.yaml: gpu-platform:cluster.create.gke.authorizedNetworks[0].cidr: 203.0.113.0/24 is a "
    "documentation range (203.0.113.0/24, RFC 5737) that no machine has; put the network you run pulumi and kubectl "
    "from",
]
STARTERS = {"starter-aws": STARTER_LINES, "starter-gcp": STARTER_GCP_LINES}


def _starter_with(cidrs: list[str], roles: list[str]) -> dict:
    cfg = copy.deepcopy(stack_config("starter-aws"))
    eks = cfg[CLUSTER]["create"]["eks"]
    eks["publicAccessCidrs"], eks["adminRoleArns"] = cidrs, roles
    return cfg


def test_the_starter_stack_names_both_of_its_placeholders():
    found = placeholders.problems(load_spec(stack_config("starter-aws")))
    assert [p.line("stacks/Pulumi.starter-aws.yaml") for p in found] == STARTER_LINES


def test_the_gcp_starter_stack_names_its_project_and_network():
    """A project ID with a string GCP refuses in every project ID ("Creating and managing projects": no "google",
    "null", "undefined" or "ssl") is nobody's project, as an RFC 5737 range is nobody's network."""
    found = placeholders.problems(load_spec(stack_config("starter-gcp")))
    assert [p.line("stacks/Pulumi.starter-gcp.yaml") for p in found] == STARTER_GCP_LINES


@pytest.mark.parametrize(
    ("project", "placeholder"),
    [("your-google-project", True), ("ml-null-1", True), ("my-ssl-proj", True), ("ml-train-project", False)],
)
def test_restricted_project_words_are_placeholders(project, placeholder):
    cfg = copy.deepcopy(stack_config("starter-gcp"))
    cfg["gcp:project"] = project
    cfg[CLUSTER]["create"]["gke"]["authorizedNetworks"] = [{"cidr": "198.18.0.0/15"}]
    paths = [p.path for p in placeholders.problems(load_spec(cfg))]
    assert paths == (["gcp:project"] if placeholder else [])


@pytest.mark.parametrize("stack", sorted(STARTERS))
def test_an_update_of_a_starter_stops_before_registering_anything(stack, monkeypatch, tap_mocks, failed_render):
    monkeypatch.setattr(deploy_check, "under_mock_engine", lambda: False)
    with pytest.raises(pulumi.RunError, match="stack config still holds placeholders"):
        synth.render(stack, stack_config(stack))
    assert tap_mocks.registered == []


def test_an_edited_gcp_starter_deploys_without_a_word(monkeypatch):
    monkeypatch.setattr(deploy_check, "under_mock_engine", lambda: False)
    said: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda text, *a, **k: said.append(text))
    cfg = copy.deepcopy(stack_config("starter-gcp"))
    cfg["gcp:project"] = "ml-train-project"
    cfg[CLUSTER]["create"]["gke"]["authorizedNetworks"] = [{"cidr": "198.18.0.0/15"}]
    r = synth.render("starter-gcp", cfg)
    assert len(r.of_type("gcp:container/cluster:Cluster")) == 1
    assert [s for s in said if "refuses" in s] == []


@pytest.mark.parametrize("stack", [s for s in STACKS if s not in STARTERS])
def test_no_other_shipped_stack_holds_a_placeholder(stack):
    assert placeholders.problems(load_spec(stack_config(stack))) == []


@pytest.mark.parametrize(
    ("cidr", "placeholder"),
    [
        ("203.0.113.0/24", True),
        ("203.0.113.7/32", True),  # one address of TEST-NET-3
        ("198.51.100.0/25", True),
        ("192.0.2.0/24", True),
        ("10.0.0.0/16", False),
        ("203.0.112.0/23", False),  # holds TEST-NET-3 and a real /24 beside it
        ("198.51.101.0/24", False),
    ],
)
def test_documentation_ranges_are_placeholders_and_their_neighbours_are_not(cidr, placeholder):
    spec = load_spec(_starter_with([cidr], ["arn:aws:iam::210987654321:role/platform-admin"]))
    paths = [p.path for p in placeholders.problems(spec)]
    assert paths == (["gpu-platform:cluster.create.eks.publicAccessCidrs[0]"] if placeholder else [])


@pytest.mark.parametrize(
    ("arn", "placeholder"),
    [
        ("arn:aws:iam::123456789012:role/admin", True),
        ("arn:aws:iam::111122223333:role/admin", True),
        ("arn:aws-us-gov:iam::444455556666:role/admin", True),
        ("arn:aws:iam::210987654321:role/admin", False),
        ("arn:aws:iam::111122223334:role/admin", False),
    ],
)
def test_aws_documentation_accounts_are_placeholders(arn, placeholder):
    spec = load_spec(_starter_with(["198.18.0.0/15"], [arn]))
    paths = [p.path for p in placeholders.problems(spec)]
    assert paths == (["gpu-platform:cluster.create.eks.adminRoleArns[0]"] if placeholder else [])


def test_an_update_refuses_placeholders_and_names_every_one():
    spec = load_spec(stack_config("starter-aws"))
    with pytest.raises(pulumi.RunError) as err:
        deploy_check.refuse(placeholders.lines(spec, "stacks/Pulumi.starter-aws.yaml"), dry_run=False)
    assert str(err.value).splitlines() == ["stack config still holds placeholders:", *STARTER_LINES]


def test_a_preview_only_warns(monkeypatch):
    said: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda text, *a, **k: said.append(text))
    spec = load_spec(stack_config("starter-aws"))
    deploy_check.refuse(placeholders.lines(spec, "stacks/Pulumi.starter-aws.yaml"), dry_run=True)
    assert said == [f"{line}; pulumi up refuses it" for line in STARTER_LINES]


def test_the_program_stops_an_update_before_registering_anything(monkeypatch, tap_mocks, failed_render):
    """The program as `pulumi up` runs it (not under the mock engine's offline synth, not a preview): the spec
    is refused before any resource is registered."""
    monkeypatch.setattr(deploy_check, "under_mock_engine", lambda: False)
    with pytest.raises(pulumi.RunError, match="stack config still holds placeholders"):
        synth.render("starter-aws", stack_config("starter-aws"))
    assert tap_mocks.registered == []


def test_an_edited_starter_stack_deploys_without_a_word(monkeypatch):
    from components.render.aws import deployer

    monkeypatch.setattr(deploy_check, "under_mock_engine", lambda: False)
    # deployed by its admin (tests/test_eks_create_access.py: anyone else is refused)
    monkeypatch.setattr(deployer, "caller_arn", lambda: "arn:aws:sts::210987654321:assumed-role/platform-admin/me")
    said: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda text, *a, **k: said.append(text))
    cfg = _starter_with(["198.18.0.0/15"], ["arn:aws:iam::210987654321:role/platform-admin"])
    r = synth.render("starter-aws", cfg)
    assert len(r.of_type("aws:eks/cluster:Cluster")) == 1
    assert [s for s in said if "refuses" in s] == []


def test_the_offline_summary_lists_the_placeholders():
    summary = synth.files(rendered("starter-aws"))["summary.md"]
    warnings = summary.split("## Warnings", 1)[1]
    for line in STARTER_LINES:
        assert f"- {line.split(': ', 1)[1]}; pulumi up refuses it" in warnings


COMPONENT_PROGRAM = """
import pulumi
import pulumi_kubernetes as k8s
from pathlib import Path
from gpu_platform.cli.loader import load_spec
from gpu_platform.render.platform import GpuPlatform
from gpu_platform.spec import stackfile

kube = k8s.Provider("cluster", kubeconfig="{}")
spec = load_spec(stackfile.read(Path(%r)))
GpuPlatform("gpu", {"spec": spec, "kubernetes_provider": kube})
"""


def test_the_component_stops_an_update_too(monkeypatch, tmp_path, failed_render):
    """GpuPlatform (and the component package built on it) takes a spec to the engine as the stack program does:
    the same refusal, its key paths in the component."""
    import gpu_platform.render.placeholders as installed  # the name the example programs import the package by

    monkeypatch.setattr(installed, "under_mock_engine", lambda: False)
    program = tmp_path / "__main__.py"
    program.write_text(COMPONENT_PROGRAM % str(ROOT / "stacks" / "Pulumi.starter-aws.yaml"))
    with pytest.raises(Exception, match="stack config still holds placeholders") as err:
        synth.run_program(program, "dev", {}, project="component-test")
    assert "GpuPlatform gpu: gpu-platform:cluster.create.eks.publicAccessCidrs[0]: 203.0.113.0/24" in str(err.value)
