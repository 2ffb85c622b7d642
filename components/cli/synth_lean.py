"""What a lean synth leaves out of the SDK's work because the mock engine would throw it away: the stack trace and
the debug messages of every resource. Split from synth.py, which uses and re-exports these (``synth.render``'s
``lean``; tests/test_synth.py renders shipped stacks both ways and compares the output)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def _without_stack_traces(lean: bool) -> Iterator[None]:
    """The SDK walks and converts the Python stack for every resource it registers (the engine shows it as the
    resource's source position); the mock monitor throws it away. Skipped while the synth runs, restored after,
    so ``pulumi up`` never sees this."""
    from pulumi.runtime import resource as sdk_resource

    capture = getattr(sdk_resource, "_get_stack_trace", None)
    if not lean or capture is None:  # another SDK layout: keep its behaviour
        yield
        return
    from pulumi.runtime.proto import source_pb2

    sdk_resource._get_stack_trace = source_pb2.StackTrace  # an empty trace, what the SDK sends without frames
    try:
        yield
    finally:
        sdk_resource._get_stack_trace = capture


@contextmanager
def _without_debug_logs(lean: bool) -> Iterator[None]:
    """The SDK sends the engine four debug messages for every resource it registers (pulumi 3.272.0
    pulumi/runtime/resource.py register_resource: registering, prepared, RPC prepared, successful), each a
    ``LogRequest`` the mock engine hands to the root logger's ``debug`` (pulumi/runtime/mocks.py ``MockEngine.Log``),
    which drops it: nothing here configures logging (~2 us a message, ~10 ms at 200 tenants). Skipped while the
    synth runs, unless the root logger would show them; warnings and errors go on as before; restored after, so
    ``pulumi up`` never sees this."""
    import logging

    from pulumi import log as sdk_log

    if not lean or logging.getLogger().isEnabledFor(logging.DEBUG):
        yield
        return
    send = sdk_log.debug
    sdk_log.debug = _unseen
    try:
        yield
    finally:
        sdk_log.debug = send


def _unseen(*_args: Any, **_kwargs: Any) -> None:
    """A debug message the mock engine would drop (``_without_debug_logs``)."""
