"""The engine's props proxies for an offline run, each nested value proxied when it is first read.

Under the engine a policy gets ``unknown_checking_proxy(props)`` (pulumi_policy 1.21.0, pulumi_policy/proxy.py):
``_proxy_helper`` copies the whole value at once, every nested dict into a ``_DictProxy`` and every list into a
``_ListProxy``, each with its path (a list copied per node); reading a value that is an unknown sentinel raises
``UnknownValueError`` naming that path. An offline run hands out the same classes (subclasses of them) reading the
same values, but a dict proxy reads straight from the inputs and proxies a nested list or dict only when it is
read (once: the same proxy at every read), a list proxy is built at its first read, and a path is spelled out
only for an ``UnknownValueError``. A policy reads the metadata of most resources and the specs of a few, so most
of the copy was never read: building it was the largest part of an offline run (about a third at 200 tenants).

Every read gives what the engine's proxy gives (the children's proxies, the leaves as they are, the same checks):
``tests/test_policy_offline_proxy.py`` walks both on every shipped stack's resources and compares every read,
unknown value and edge (slices, negative indexes, ``__target``, writes).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pulumi_policy.proxy import (
    UNKNOWN_ARCHIVE_VALUE,
    UNKNOWN_ARRAY_VALUE,
    UNKNOWN_ASSET_VALUE,
    UNKNOWN_BOOLEAN_VALUE,
    UNKNOWN_NUMBER_VALUE,
    UNKNOWN_OBJECT_VALUE,
    UNKNOWN_STRING_VALUE,
    UnknownValueError,
    _DictProxy,
    _ListProxy,
)

# the sentinels pulumi_policy's _is_unknown recognises (the same file)
_UNKNOWNS = frozenset(
    {
        UNKNOWN_BOOLEAN_VALUE,
        UNKNOWN_NUMBER_VALUE,
        UNKNOWN_STRING_VALUE,
        UNKNOWN_ARRAY_VALUE,
        UNKNOWN_ASSET_VALUE,
        UNKNOWN_ARCHIVE_VALUE,
        UNKNOWN_OBJECT_VALUE,
    }
)
_MISSING: Any = object()


def lazy_proxy(props: Any) -> Any:
    """What ``unknown_checking_proxy(props)`` reads as, each level built on its first read."""
    return _wrap(props, None)


class _At:
    """Where a proxy is: where its container is (None: the top) and its key there. Not a link to the container's
    proxy, whose target holds the child: every proxy tree would be a cycle, left for the collector to find
    instead of freed by reference counting. Nor a tuple: CPython (3.11, Objects/tupleobject.c) keeps freed pairs
    on a free list without telling the collector, so its allocation count would drift up ~2,000 per run and set
    off a collection after it."""

    __slots__ = ("key", "up")

    def __init__(self, up: At, key: Any) -> None:
        self.up, self.key = up, key


At = _At | None


def _wrap(value: Any, at: At) -> Any:
    # the same tests as _proxy_helper: lists and dicts (and their subclasses) are proxied, anything else is a leaf
    if isinstance(value, list):
        return LazyListProxy(value, at)
    if isinstance(value, dict):
        return LazyDictProxy(value, at)
    return value


def _path(at: At, key: Any) -> list[str]:
    """The path ``_proxy_helper`` gives a value: every key from the top (list indexes as numbers), as strings."""
    out = [str(key)]
    while at is not None:
        out.append(str(at.key))
        at = at.up
    out.reverse()
    return out


def _checked(at: At, key: Any, value: Any) -> Any:
    """``_raise_if_unknown`` (the same file)."""
    if isinstance(value, str) and value in _UNKNOWNS:
        raise UnknownValueError(value, _path(at, key))
    return value


class LazyDictProxy(_DictProxy):
    """A ``_DictProxy`` that reads its values from the inputs, proxying a nested list or dict at its first read
    (the same object at every read); its whole target is built only for ``__target`` or a write."""

    def __init__(self, raw: Any, at: At = None) -> None:  # no super(): read from raw until built
        self._raw, self._at = raw, at
        self._kids: dict[Any, Any] = {}  # key -> the proxy of a nested list or dict already read
        self._target: dict[Any, Any] | None = None

    def _kid(self, key: Any, value: Any) -> Any:
        got = self._kids.get(key)
        if got is None:  # (a proxy of an empty container is falsy)
            kind = LazyListProxy if isinstance(value, list) else LazyDictProxy
            got = self._kids[key] = kind(value, _At(self._at, key))
        return got

    def _built(self) -> dict[Any, Any]:
        target = self._target
        if target is None:
            raw, target = self._raw, {}
            for k in raw:
                v = raw[k]
                target[k] = self._kid(k, v) if isinstance(v, (list, dict)) else v
            self._target, self._raw, self._kids = target, None, {}
        return target

    def get(self, key: Any, default: Any = None) -> Any:
        # Mapping.get (self[key], default on KeyError) without its two extra calls per read
        if key == "__target":
            return self._built()
        target = self._target
        value = (self._raw if target is None else target).get(key, _MISSING)
        if value is _MISSING:
            return default
        if isinstance(value, str):
            if value in _UNKNOWNS:
                raise UnknownValueError(value, _path(self._at, key))
        elif target is None and isinstance(value, (list, dict)):
            return self._kid(key, value)
        return value

    def __getitem__(self, key: Any) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __setitem__(self, key: Any, value: Any) -> None:
        self._built()[key] = value

    def __len__(self) -> int:
        target = self._target
        return len(self._raw if target is None else target)

    def __iter__(self) -> Iterator[Any]:
        target = self._target
        return iter(self._raw if target is None else target)


class LazyListProxy(_ListProxy):
    """A ``_ListProxy`` whose target (each element proxied) is built at its first read."""

    def __init__(self, raw: Any, at: At = None) -> None:  # no super(): built on first use
        self._raw, self._at = raw, at
        self._target: list[Any] | None = None

    def _built(self) -> list[Any]:
        target = self._target
        if target is None:
            at, target = self._at, []
            for i, e in enumerate(self._raw):  # _wrap, inline: most elements are leaves
                if isinstance(e, list):
                    e = LazyListProxy(e, _At(at, i))
                elif isinstance(e, dict):
                    e = LazyDictProxy(e, _At(at, i))
                target.append(e)
            self._target, self._raw = target, None
        return target

    def __getitem__(self, key: Any) -> Any:
        if key == "__target":
            return self._built()
        return _checked(self._at, key, self._built()[key])

    def __iter__(self) -> Iterator[Any]:
        # Sequence.__iter__ (self[0], self[1]... until IndexError) without a call per element
        for i, value in enumerate(self._built()):
            if isinstance(value, str) and value in _UNKNOWNS:
                raise UnknownValueError(value, _path(self._at, i))
            yield value

    def __len__(self) -> int:
        return len(self._built())
