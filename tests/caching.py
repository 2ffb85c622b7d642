"""Session caches that stay honest under mutation testing (``make mutate``).

The suite renders each shipped stack once and shares the result. Under mutmut 3 two things go wrong with a
plain ``functools.cache``:

- mutmut maps each function to the tests that reach it by recording trampoline hits per test. A cached
  render is computed inside the first test that asks for it, so every later test that reads the same
  rendering would be mapped to nothing it used, and a mutant in the code that built it would run against the
  first test only (or none: "no tests").
- mutmut forks one child per mutant from the process that ran the stats phase. A cache filled there holds
  renders built by the unmutated code, so a child would test the mutant against them and it would survive.

``cached`` keys every entry on the mutant under test (``MUTANT_UNDER_TEST``; absent in a normal run) and, in
mutmut's stats phase, records the hits made while computing an entry and replays them into every test that
reads it. Outside mutmut it is a plain per-process cache.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

F = TypeVar("F", bound=Callable[..., Any])


def _stats_hits() -> set[str] | None:
    """mutmut's per-test set of trampoline hits, during its stats phase only."""
    if os.environ.get("MUTANT_UNDER_TEST") != "stats":
        return None
    from mutmut.state import state  # only importable where mutmut runs the suite

    return state()._stats


def cached(fn: F) -> F:
    store: dict[tuple, tuple[Any, frozenset[str]]] = {}

    @functools.wraps(fn)
    def wrapper(*args: Any) -> Any:
        key = (os.environ.get("MUTANT_UNDER_TEST"), args)
        hits = _stats_hits()
        if key not in store:
            if hits is None:
                store[key] = (fn(*args), frozenset())
            else:
                outer = set(hits)
                hits.clear()
                try:
                    value = fn(*args)
                    store[key] = (value, frozenset(hits))
                finally:
                    hits |= outer
        value, recorded = store[key]
        if hits is not None:
            hits |= recorded
        return value

    return wrapper  # type: ignore[return-value]


def shared_fixture(fn: F) -> F:
    """A fixture computed once per session (and mutant) and handed to every test that names it; unlike a
    module-scoped fixture, each of those tests is mapped to the code that built it."""
    return pytest.fixture(name=fn.__name__)(cached(fn))  # type: ignore[return-value]
