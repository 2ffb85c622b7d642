"""The real Pulumi engine around the real program, against a real control plane (issue 27).

The Pulumi CLI and the kubernetes provider plugin are built from Go modules by ``scripts/engine-bins.sh`` into a
per-user cache (``GPU_PLATFORM_ENGINE_BIN``); the control plane is the cluster tests' (``tests/cluster``). The
program runs through the Automation API as an inline program: the CLI hosts no Python language host (none is
served by a registry here); it calls back into this process, which runs ``__main__.py``'s two lines, so the
stack config goes through ``pulumi.Config`` exactly as under ``pulumi up``.

Everything is local and throw-away: the state in a file backend in a temporary directory, secrets under a fixed
passphrase, plugins in a temporary PULUMI_HOME with the built provider installed from its file, no update
checks and no network.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "cluster"))  # the control plane and the stacks of the cluster tests
BIN_ENV = "GPU_PLATFORM_ENGINE_BIN"
KUBERNETES_PROVIDER_VERSION = "4.34.2"  # scripts/engine-bins.sh builds the plugin as this version


def bin_dir() -> Path:
    path = os.environ.get(BIN_ENV)
    if not path:
        raise RuntimeError(f"{BIN_ENV} is not set: run `make cluster-test` (it builds the engine first)")
    return Path(path)


class Engine:
    """One project directory, state backend and PULUMI_HOME; ``stack(name, config)`` gives an Automation API
    stack whose program is the package's own."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="gp-engine-"))
        self.home = self.dir / "pulumi-home"
        self.state = self.dir / "state"
        self.project = self.dir / "project"
        for d in (self.home, self.state, self.project):
            d.mkdir()
        self.bin = bin_dir()
        self.env = {
            "PULUMI_HOME": str(self.home),
            "PULUMI_BACKEND_URL": f"file://{self.state}",
            "PULUMI_CONFIG_PASSPHRASE": "gpu-platform-engine-test",
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PULUMI_SKIP_CONFIRMATIONS": "true",
            "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}",
        }
        # the project file as committed (its project-level config: no default Kubernetes provider)
        project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
        project.pop("stackConfigDir", None)
        (self.project / "Pulumi.yaml").write_text(yaml.safe_dump(project, sort_keys=False))
        # the repository's packaged charts, where a `chartSource: bundled` release names them (relative to the
        # project directory, where the engine starts the kubernetes provider)
        (self.project / "upstream").symlink_to(ROOT / "upstream")
        self._install_provider()

    def _install_provider(self) -> None:
        subprocess.run(
            [
                str(self.bin / "pulumi"),
                "plugin",
                "install",
                "resource",
                "kubernetes",
                KUBERNETES_PROVIDER_VERSION,
                "--file",
                str(self.bin / "pulumi-resource-kubernetes"),
            ],
            env={**os.environ, **self.env},
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def stack(self, name: str, config: dict[str, Any], program=None):
        """The stack ``name`` with ``config`` as its stack file (the same YAML a user commits); ``program``: another
        inline program than the package's (a fleet worker stack that only exports what its manager reads)."""
        from pulumi import automation as auto

        (self.project / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump({"config": config}, sort_keys=False))
        os.environ.update(self.env)  # the workspace finds the built CLI on PATH, and passes the rest on
        opts = auto.LocalWorkspaceOptions(work_dir=str(self.project), pulumi_home=str(self.home), env_vars=self.env)
        return auto.create_or_select_stack(
            stack_name=name, project_name="gpu-platform", program=program or _program, opts=opts
        )

    def close(self) -> None:
        if os.environ.get("GPU_PLATFORM_KEEP_ENGINE_DIR"):
            return
        shutil.rmtree(self.dir, ignore_errors=True)


def state_urns(stack) -> set[str]:
    """The URNs a stack's state holds, its Stack resource aside."""
    deployment = stack.export_stack().deployment
    return {r["urn"] for r in deployment.get("resources", []) if r["type"] != "pulumi:pulumi:Stack"}


def record_changes(changes: dict[str, list[str]], field: str = "urn"):
    """An ``on_event`` callback recording, per operation other than ``same`` (create, update, replace...), the
    ``field`` (urn or type) of each resource the engine is about to touch."""

    def seen(event) -> None:
        pre = getattr(event, "resource_pre_event", None)
        if pre is not None and pre.metadata.op.value != "same":
            changes.setdefault(pre.metadata.op.value, []).append(getattr(pre.metadata, field))

    return seen


def _program() -> None:
    """``__main__.py``, unchanged: stack config -> one validated spec -> components."""
    from components.cli.config import spec_from_pulumi_config
    from components.render.program import run

    run(spec_from_pulumi_config())


WEBHOOK_KINDS = ("validatingwebhookconfigurations", "mutatingwebhookconfigurations")


def registered_webhooks(cp) -> dict[str, list[str]]:
    """The webhook configurations, and the aggregated APIs (APIServices backed by a Service: Kueue's visibility
    API), the charts registered: the server would call their Services, which nothing serves here."""
    import json

    out = {}
    for kind in WEBHOOK_KINDS:
        names = cp.kubectl("get", kind, "-o", "jsonpath={.items[*].metadata.name}").stdout.split()
        out[kind] = sorted(names)
    services = json.loads(cp.kubectl("get", "apiservices", "-o", "json").stdout)["items"]
    out["apiservices"] = sorted(a["metadata"]["name"] for a in services if a["spec"].get("service"))
    return out
