"""Issue 29: installing the package claims no generic top-level import name. The wheel holds one package,
``gpu_platform`` (the repository's ``components/``, with ``policies/`` as ``gpu_platform.policies``: pyproject.toml),
and the code imports itself relatively, so the installed copy works outside the repository."""

from __future__ import annotations

import atexit
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest
from caching import cached
from conftest import ROOT, build_wheel


@cached
def _built_wheel() -> Path:
    """The wheel, built once per session (three tests read it; each build is a pip subprocess of seconds)."""
    out = Path(tempfile.mkdtemp(prefix="gpu-platform-wheel-"))
    atexit.register(shutil.rmtree, out, ignore_errors=True)
    return build_wheel(out)


@pytest.fixture
def wheel() -> Path:
    return _built_wheel()


def test_the_wheel_holds_only_gpu_platform(wheel: Path):
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/", 1)[0] for n in names} == {"gpu_platform", wheel.name.split("-py")[0] + ".dist-info"}
    # the data files the code reads beside its modules
    for data in (
        "gpu_platform/data/prices.json",
        "gpu_platform/policies/pack_data.json",
        "gpu_platform/data/web/cytoscape-3.35.0.min.js",
    ):
        assert data in names


def test_every_package_of_the_repository_is_in_the_wheel(wheel: Path):
    """pyproject.toml lists the packages by hand (a renamed package directory cannot be found): none is missing."""
    names = set(zipfile.ZipFile(wheel).namelist())
    for init in sorted([*(ROOT / "components").rglob("__init__.py"), ROOT / "policies" / "__init__.py"]):
        rel = init.relative_to(ROOT)
        inside = (
            Path("gpu_platform", *rel.parts[1:]) if rel.parts[0] == "components" else Path("gpu_platform", *rel.parts)
        )
        assert inside.as_posix() in names, rel


def test_the_installed_package_imports_outside_the_repository(wheel: Path, tmp_path: Path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)  # what pip puts in site-packages for a pure-Python wheel
    code = (
        "import sys, gpu_platform, gpu_platform.render.platform, gpu_platform.cli.main, gpu_platform.policies.offline\n"
        "from gpu_platform.cli import policy_pack\n"
        f"assert gpu_platform.__file__.startswith({str(site)!r}), gpu_platform.__file__\n"
        "assert policy_pack.module('pack').__name__ == 'gpu_platform.policies.pack'\n"
        "assert not any(m == 'components' or m.startswith(('components.', 'policies')) for m in sys.modules), "
        "sorted(m for m in sys.modules if m.startswith(('components', 'policies')))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env={"PYTHONPATH": str(site)}, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr


def test_the_gpu_platform_command_renders_what_the_repository_module_renders(tmp_path: Path):
    """``make synth`` runs the installed command (its code is ``gpu_platform``); the program it runs imports
    ``components`` from the repository, as Pulumi's language host runs it with the project directory on the path.
    Both ways give the same files."""
    command = Path(sys.executable).with_name("gpu-platform")
    runs = {
        "command": [
            str(command),
            "synth",
            "dev-aws",
            "--stacks",
            str(ROOT / "stacks"),
            "--out",
            str(tmp_path / "command"),
        ],
        "module": [sys.executable, "-m", "components.cli", "synth", "dev-aws", "--out", str(tmp_path / "module")],
    }
    for how, argv in runs.items():
        done = subprocess.run(argv, cwd=tmp_path if how == "command" else ROOT, capture_output=True, text=True)
        assert done.returncode == 0, (how, done.stderr)
    files = {
        how: sorted(p.relative_to(tmp_path / how) for p in (tmp_path / how).rglob("*") if p.is_file()) for how in runs
    }
    assert files["command"] == files["module"] and files["command"]
    for rel in files["command"]:
        assert (tmp_path / "command" / rel).read_bytes() == (tmp_path / "module" / rel).read_bytes(), rel
