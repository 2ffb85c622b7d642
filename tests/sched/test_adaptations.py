"""The harness's one list of what differs from a cluster (kueue_controller.ADAPTATIONS) is the list
docs/development.md gives: every entry named there in bold, and nothing named there that the list lacks."""

from __future__ import annotations

import re
from pathlib import Path

import paths  # noqa: F401  (tests/cluster on the path)
from kueue_controller import ADAPTATIONS

DOC = Path(__file__).resolve().parents[2] / "docs" / "development.md"


def test_development_md_names_every_adaptation():
    text = DOC.read_text()
    section = text[text.index("`ADAPTATIONS` in") :]
    section = section[: section.index("\n\n", section.index("\n- "))]
    named = set(re.findall(r"\*\*([^*]+)\*\*", section))
    assert named == set(ADAPTATIONS), (sorted(set(ADAPTATIONS) - named), sorted(named - set(ADAPTATIONS)))
