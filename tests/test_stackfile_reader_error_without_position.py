"""``stackfile.read``: a YAML error that carries no position (``problem_mark``) is reported at ``(file)``.

The YAML reader refuses control characters before any token exists; its ``ReaderError`` has a character
offset but no ``problem_mark`` (PyYAML ``yaml/reader.py``; libyaml's ``YAML_READER_ERROR`` in ``_yaml.pyx``
builds the same class), so ``read`` cannot name a line and must say ``(file)``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from components.spec import stackfile
from components.spec.model import SpecError


def test_control_character_is_refused_at_file_level(tmp_path: Path):
    """U+0001 in a value: one problem at '(file)', the reader's message on one line, its offset 14 counted
    by hand ('config:\\n' is 8 characters, '  a: b' 6 more)."""
    path = tmp_path / "Pulumi.s.yaml"
    path.write_bytes(b"config:\n  a: b\x01\n")
    # The wording is the reader's (libyaml says "control characters", PyYAML's pure-Python reader "special
    # characters", and either may change): compare with what the reader itself raises, and pin the locus.
    with pytest.raises(yaml.YAMLError) as raw:
        yaml.load("config:\n  a: b\x01\n", Loader=stackfile._Loader)
    assert getattr(raw.value, "problem_mark", None) is None  # no line to name
    with pytest.raises(SpecError) as err:
        stackfile.read(path)
    assert [(p.path, p.message) for p in err.value.problems] == [
        ("(file)", "not valid YAML: " + " ".join(str(raw.value).split()))
    ]
    assert "#x0001" in err.value.problems[0].message  # the character is named
