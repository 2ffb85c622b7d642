"""``gpu-platform synth`` and ``check`` keep the render's seldom collections for the whole command (issue 42): the
policies, summary and files run at the render's thresholds, and the caller gets the interpreter's back."""

from __future__ import annotations

import gc

import pytest

from components.cli import main as cli, synth


@pytest.mark.parametrize("command", ["synth", "check"])
def test_the_command_writes_and_checks_at_the_renders_thresholds_then_restores_them(command, tmp_path, monkeypatch):
    seen = []
    original = synth.files

    def files(*args, **kwargs):
        seen.append(("files", gc.get_threshold()))
        return original(*args, **kwargs)

    from policies import offline

    evaluate = offline.evaluate

    def policies(*args, **kwargs):
        seen.append(("policies", gc.get_threshold()))
        return evaluate(*args, **kwargs)

    monkeypatch.setattr(synth, "files", files)
    monkeypatch.setattr(offline, "evaluate", policies)
    before = gc.get_threshold()
    argv = [command, "local", *(["--out", str(tmp_path / "out")] if command == "synth" else [])]
    assert cli.main(argv) == 0
    assert gc.get_threshold() == before
    wanted = [("policies", synth.RENDER_GC_THRESHOLDS)] + (
        [("files", synth.RENDER_GC_THRESHOLDS)] * (command == "synth")
    )
    assert seen == wanted
