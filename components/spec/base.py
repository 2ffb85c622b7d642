"""The stack spec's shared ground: the stack file's namespace, the patterns and bounds every part of the
model uses, and ``Model``, the base of every spec model. Part of the spec layer (``components/spec/model.py``):
imports only ``catalog`` and ``validation``.

A field's ``default_factory`` is a ``lambda`` (``lambda: []``, ``lambda: Addons()``), never a class (``list``,
``Addons``): pydantic asks each factory's ``inspect.signature`` when it builds the model (does it take the validated
data?), which for a builtin parses its text signature and for a model class builds the model's whole signature
(~5 ms of the spec's import over its ~50 models), and for a function is nearly free. Same defaults, same schema.

The model modules have no ``from __future__ import annotations`` (the rest of the package does): pydantic then gets
each field's type as the object itself, where from a string it compiles and evaluates a ForwardRef per field (~280
of them, ~4 ms of the import). A method returning its own class says so in quotes (``-> "StackSpec"``).
"""

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from .validation import go_duration

NAMESPACE = "gpu-platform"

DNS_LABEL = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
DURATION = r"^([0-9]+(s|m|h))+$"
QUANTITY = r"^[0-9]{1,15}(\.[0-9]{1,6})?(m|k|M|G|T|P|Ki|Mi|Gi|Ti|Pi)?$"  # digits bounded: int64 milli-units
LABEL_KEY = r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"

Name = Annotated[str, Field(pattern=DNS_LABEL, max_length=32)]

# Upper bounds of counts, so no derived number (units = GPUs x replicas, nodes x GPUs) leaves what the
# engine's wire format (float64) and the Kubernetes int32 / cloud APIs hold. GKE: at most 15,000 nodes
# per cluster (GKE quotas and limits); EKS managed node groups take at most 450 nodes each (checked in
# components/plan/aws/rules.py) and Karpenter's limits are quantities.
MAX_NODES = 15_000
MAX_GPUS = MAX_NODES * 16
MAX_SHARING_REPLICAS = 1024
Duration = go_duration(DURATION)
Quantity = Annotated[str, Field(pattern=QUANTITY)]


class Model(BaseModel):
    """Base of every spec model: camelCase keys as in the stack file, unknown keys rejected."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True)
