"""Issue 41.3: the package works installed. A real (non-editable) ``pip install`` of the wheel into a fresh
virtualenv, run from a directory that is not the repository: every command reads ``./stacks`` of the working
directory (or ``--stacks DIR``), never the repository's; ``synth`` and ``check`` run the packaged program (no
``__main__.py``, no ``Pulumi.yaml`` in site-packages); ``synth --program FILE`` renders a user's own program that
uses the GpuPlatform component. The virtualenv borrows the dependencies of the test's interpreter through a
``.pth`` line (a plain path: the editable install's own ``.pth`` finder there is not run)."""

from __future__ import annotations

import atexit
import json
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest
from caching import cached
from conftest import ROOT, build_wheel

# A wheel built from the source tree's files, run in its own processes from other directories: under make mutate
# that is the mutated copy's text, in processes mutmut cannot follow (its first pass, run there, cannot find its
# configuration and fails the suite); what these tests exercise is run in-process by the rest of the suite.
pytestmark = pytest.mark.reads_source


@pytest.fixture
def installed() -> Path:
    return _installed()


@cached
def _installed() -> Path:
    """The ``gpu-platform`` command of a fresh virtualenv holding the wheel, installed by pip: once per session (four
    tests run it, each in its own working directory; building the wheel and installing it is seconds of pip)."""
    root = Path(tempfile.mkdtemp(prefix="gpu-platform-installed-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    run = dict(check=True, capture_output=True, text=True)
    wheel = build_wheel(root)
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], **run)
    python = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(wheel)], **run
    )
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], **run
    ).stdout.strip()
    (Path(purelib) / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    located = subprocess.run([str(python), "-c", "import gpu_platform; print(gpu_platform.__file__)"], **run)
    assert located.stdout.startswith(purelib), located.stdout  # the installed copy, not the repository's
    return venv / "bin" / "gpu-platform"


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A user's directory with one stack file of their own in ./stacks."""
    (tmp_path / "stacks").mkdir()
    shutil.copy(ROOT / "stacks" / "Pulumi.local.yaml", tmp_path / "stacks" / "Pulumi.mine.yaml")
    return tmp_path


def _run(command: Path, cwd: Path, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(command), *argv], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_installed_synth_and_check_read_the_working_directorys_stacks(installed: Path, workdir: Path):
    synth = _run(installed, workdir, "synth", "mine")
    assert synth.returncode == 0, synth.stderr
    assert "Traceback" not in synth.stderr and "FileNotFoundError" not in synth.stderr
    summary = (workdir / "out" / "mine" / "summary.md").read_text()
    assert summary.startswith("# gpu-platform synth: mine")
    assert synth.stdout.splitlines()[-1] == "mine: valid, no warnings: exit 0"
    check = _run(installed, workdir, "check", "mine")
    assert check.returncode == 0, check.stderr
    for command in (["plan", "mine"], ["cost", "mine"], ["plugins", "mine"]):
        done = _run(installed, workdir, *command)
        assert done.returncode == 0 and done.stdout, (command, done.stderr)


def test_installed_command_never_falls_back_to_the_repositorys_stacks(installed: Path, workdir: Path):
    """dev-aws is a repository stack, not in the user's ./stacks: refused, listing the stacks that are there."""
    done = _run(installed, workdir, "check", "dev-aws")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "stacks/Pulumi.dev-aws.yaml: (file): no such stack file; stacks in stacks/: mine "
        "(choose one, or --stacks DIR, or --config FILE)"
    ]
    elsewhere = _run(installed, workdir, "plan", "dev-aws", "--stacks", str(ROOT / "stacks"))
    assert elsewhere.returncode == 0 and elsewhere.stdout.startswith("Stack dev-aws (aws)"), elsewhere.stderr


def test_installed_command_says_its_version(installed: Path, workdir: Path):
    from importlib.metadata import version

    done = _run(installed, workdir, "--version")
    assert (done.returncode, done.stdout) == (0, f"gpu-platform {version('gpu-platform')}\n")


def test_installed_synth_renders_a_users_own_program_offline(installed: Path, workdir: Path):
    program = workdir / "prog"
    program.mkdir()
    for name in ("__main__.py", "Pulumi.yaml", "gpu-platform.yaml"):
        shutil.copy(ROOT / "examples" / "component-python" / name, program / name)
    done = _run(installed, workdir, "synth", "--program", "prog/__main__.py", "--out", "rendered")
    assert done.returncode == 0, done.stderr
    resources = json.loads((workdir / "rendered" / "resources.json").read_text())
    components = [r for r in resources if r["type"] == "gpu-platform:index:GpuPlatform"]
    assert [c["name"] for c in components] == ["gpu"]
    assert {"name": "apps"} == next(r for r in resources if r["name"] == "apps")["inputs"]["metadata"]
    outputs = json.loads((workdir / "rendered" / "outputs.json").read_text())
    assert outputs["appsNamespace"] == "apps" and "research" in json.dumps(outputs["tenants"])
