"""The committed stack files survive the README's deploy path under the real CLI (issue 27, point 4).

`pulumi stack init` writes the stack file back (yaml.v3: one space before an inline comment) and, with the
passphrase secrets provider of a self-managed backend, adds its `encryptionsalt:` line. The committed files are
written the way the CLI writes them, so initialising a stack adds that line and nothing else (the README says to
commit it: it is not a secret, and everyone who deploys the stack needs the same one).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from cluster_stacks import SHIPPED
from engine import ROOT, bin_dir


@pytest.fixture(scope="module")
def project():
    d = Path(tempfile.mkdtemp(prefix="gp-stack-init-"))
    try:
        shutil.copy(ROOT / "Pulumi.yaml", d / "Pulumi.yaml")
        shutil.copytree(ROOT / "stacks", d / "stacks")
        (d / "state").mkdir()
        env = {
            **os.environ,
            "PULUMI_HOME": str(d / "home"),
            "PULUMI_BACKEND_URL": f"file://{d / 'state'}",
            "PULUMI_CONFIG_PASSPHRASE": "gpu-platform-stack-init-test",
            "PULUMI_SKIP_UPDATE_CHECK": "true",
        }
        yield d, env
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("stack", SHIPPED)
def test_stack_init_adds_only_the_encryption_salt(project, stack):
    d, env = project
    before = (d / "stacks" / f"Pulumi.{stack}.yaml").read_text()
    proc = subprocess.run(
        [str(bin_dir() / "pulumi"), "stack", "init", stack, "--non-interactive"],
        cwd=d,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    after = (d / "stacks" / f"Pulumi.{stack}.yaml").read_text()
    added = after.splitlines()[len(before.splitlines()) :]
    assert after.splitlines()[: len(before.splitlines())] == before.splitlines()
    assert len(added) == 1 and added[0].startswith("encryptionsalt: v1:"), added
