"""What a program run registered: the records the synth's mock engine collects, and the whole rendering.

Plain data, read by the synth (which fills it), the summary and the offline policy evaluator; it imports only
the spec, so each of them can import it without importing the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..spec.model import StackSpec


@dataclass
class Record:
    """One resource the program registered: its type, name, URN, parent, provider, inputs and options."""

    type: str
    name: str
    urn: str
    parent: str | None
    provider: str | None
    depends_on: list[str]
    inputs: dict[str, Any]
    custom: bool
    ignore_changes: list[str] = field(default_factory=list)  # property paths Pulumi leaves to others
    # Resource options the engine acts on in later updates (deletes, replacements, renames).
    protect: bool = False
    retain_on_delete: bool = False
    replace_on_changes: list[str] = field(default_factory=list)
    delete_before_replace: bool = False
    aliases: list[str] = field(default_factory=list)  # URNs this resource was known by, resolved


@dataclass
class Rendering:
    """What the mock engine received while the program ran."""

    spec: StackSpec
    stack: str
    resources: list[Record] = field(default_factory=list)
    lookups: list[str] = field(default_factory=list)
    unanswered_lookups: list[str] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)  # the stack outputs (``pulumi stack output``)

    def of_type(self, type_: str) -> list[Record]:
        return [r for r in self.resources if r.type == type_]

    def find(self, type_: str, name: str) -> Record:
        for r in self.resources:
            if r.type == type_ and r.name == name:
                return r
        raise KeyError(f"{type_} {name} not registered")

    @property
    def manifests(self) -> list[dict[str, Any]]:
        return [r.inputs for r in self.resources if is_manifest(r)]

    @property
    def releases(self) -> list[Record]:
        return self.of_type("kubernetes:helm.sh/v3:Release")


def is_manifest(r: Record) -> bool:
    return r.type.startswith("kubernetes:") and "kind" in r.inputs and "apiVersion" in r.inputs
