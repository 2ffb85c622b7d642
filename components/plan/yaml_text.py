"""The plan's YAML texts (device-plugin and MIG configs, node user data, the schedulers' configs): what
``yaml.safe_dump`` writes, made by libyaml's emitter where PyYAML has it.

``yaml.safe_dump`` runs PyYAML's emitter in Python, most of dumping a document: deciding a 200-tenant plan (47
documents) took ~53 ms with it, ~45 ms with libyaml's. ``CSafeDumper`` is the same representer and resolver in front of
libyaml's emitter, which PyYAML's Python emitter is a port of; for these documents (short plain keys, ASCII
text, ints and bools) they write the same bytes. Where they decide otherwise (an empty key, a key of 128
characters or more: PyYAML emitter.py ``check_simple_key``) is nothing a plan dumps, and
tests/test_plan_yaml_text.py compares the two on every document each shipped stack dumps here."""

from __future__ import annotations

from typing import Any

import yaml

# PyYAML built without libyaml has no CSafeDumper: the Python emitter then, the same text
DUMPER: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def safe_dump(doc: Any, *, sort_keys: bool = True, width: int | None = None) -> str:
    """``yaml.safe_dump(doc, sort_keys=sort_keys, default_flow_style=False, width=width)``'s text."""
    return yaml.dump(doc, Dumper=DUMPER, sort_keys=sort_keys, default_flow_style=False, width=width)
