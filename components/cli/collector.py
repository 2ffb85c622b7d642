"""The collector's thresholds while the synth renders and, for ``gpu-platform synth`` and ``check``, while the
command writes or checks what it rendered (``components.cli.synth`` re-exports these)."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from contextlib import contextmanager

# The collector's thresholds while the synth renders (CPython's defaults: 700, 10, 10): a young-generation
# collection per 20,000 net allocations, an older one per 50 of those.
RENDER_GC_THRESHOLDS = (20_000, 50, 50)


@contextmanager
def _collector_relaxed(lean: bool) -> Iterator[None]:
    """Cyclic garbage collection seldom while the program runs under the mocks (restored after).

    The SDK allocates a few dozen objects per resource (outputs, futures, tasks, requests), nearly all of them
    live until the end or freed by reference counting, yet each allocation counts towards the collector's
    thresholds: a 200-tenant render set off ~900 collections, 7 of them full passes over a heap the synth's
    imports, spec and records make twice the bare SDK's (25 % of the render; 1,000 tenants: 16 full passes,
    28 %). With these thresholds it does ~80 and no full pass (1,000 tenants: ~1.8 s of collections instead of
    5.7, ~10 MiB more kept). Only ``synth.render`` does this; ``pulumi up`` runs with the interpreter's settings."""
    if not lean:
        yield
        return
    before = gc.get_threshold()
    gc.set_threshold(*RENDER_GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)


def collector_relaxed() -> contextlib.AbstractContextManager[None]:
    """The render's seldom collections, for a command that renders (``gpu-platform synth``, ``check``) until it has
    frozen the rendered heap (``rendered_heap_frozen``)."""
    return _collector_relaxed(True)


@contextmanager
def rendered_heap_frozen() -> Iterator[None]:
    """For a command that renders and then checks or writes what it rendered (``gpu-platform synth``, ``check``):
    the render's heap frozen (``gc.freeze``) while the policies, summary and files run at the interpreter's
    thresholds, then collectable again. Unfrozen, the first of their allocations set off a full pass over the
    rendered heap, then ~100 young and ~10 middle collections each walking it (200 tenants: ~0.55 s of collections,
    a quarter of the synth's CPU); frozen, the collections walk only what the later phases allocate (the YAML
    dumpers' cycles are freed as they go: keeping the render's thresholds instead kept them, +20 MiB at 1,000
    tenants). Entered inside the render's thresholds, before they are restored."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
