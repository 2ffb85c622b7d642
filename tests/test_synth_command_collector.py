"""``gpu-platform synth`` and ``check`` freeze the rendered heap while their policies, summary and files run (issue
42): those phases' collections then walk only what they allocate, not the whole rendering, and the caller gets a
collectable heap and the interpreter's thresholds back."""

from __future__ import annotations

import gc

import pytest

from components.cli import main as cli, synth


@pytest.mark.parametrize("command", ["synth", "check"])
def test_the_command_checks_and_writes_with_the_rendered_heap_frozen(command, tmp_path, monkeypatch):
    from policies import offline

    seen = []
    files, evaluate = synth.file_items, offline.evaluate

    def watched(name, fn):
        def call(*args, **kwargs):
            seen.append((name, gc.get_threshold(), gc.get_freeze_count() > 0))
            return fn(*args, **kwargs)

        return call

    monkeypatch.setattr(synth, "file_items", watched("files", files))
    monkeypatch.setattr(offline, "evaluate", watched("policies", evaluate))
    before, frozen_before = gc.get_threshold(), gc.get_freeze_count()
    argv = [command, "local", *(["--out", str(tmp_path / "out")] if command == "synth" else [])]
    assert cli.main(argv) == 0
    assert (gc.get_threshold(), gc.get_freeze_count()) == (before, frozen_before)
    wanted = [("policies", before, True), ("files", before, True)]
    assert seen == (wanted if command == "synth" else wanted[:1])
