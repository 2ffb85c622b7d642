"""What a lean synth leaves out of the SDK's work because the mock engine would throw it away: the stack trace and
the debug messages of every resource, and the serializing of an empty answer from the mocks. Split from synth.py,
which uses and re-exports these (``synth.render``'s ``lean``; tests/test_synth.py renders every shipped stack both
ways and compares the output)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
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
    which drops it: nothing here configures logging (~2 us a message, ~10 ms at 200 tenants). While the synth runs,
    a debug message is sent only if the root logger shows DEBUG at that moment (asked per message, ~0.2 us: a
    ``synth --program`` program may configure logging itself); warnings and errors go on as before; restored after,
    so ``pulumi up`` never sees this."""
    from pulumi import log as sdk_log

    if not lean:
        yield
        return
    send = sdk_log.debug
    sdk_log.debug = _debug_if_shown(send)
    try:
        yield
    finally:
        sdk_log.debug = send


def _debug_if_shown(send: Callable[..., None]) -> Callable[..., None]:
    """``send`` (pulumi.log.debug), called only while the mock engine's logger (the root logger) shows DEBUG."""
    import logging

    root = logging.getLogger()

    def debug(*args: Any, **kwargs: Any) -> None:
        if root.isEnabledFor(logging.DEBUG):
            send(*args, **kwargs)

    return debug


def _answering_monitor() -> type:
    """pulumi's ``MockMonitor``, which in a lean synth sends an empty answer without serializing it (see
    ``RegisterResource``)."""
    from google.protobuf import struct_pb2
    from pulumi.runtime import rpc
    from pulumi.runtime.mocks import MockMonitor, MockResourceArgs, _ensure_event_loop, _resolve_callbacks
    from pulumi.runtime.proto import resource_pb2
    from pulumi.runtime.sync_await import _sync_await

    class AnsweringMonitor(MockMonitor):
        def RegisterResource(self, request):
            """``MockMonitor.RegisterResource`` (pulumi 3.272.0 pulumi/runtime/mocks.py), step by step, except that
            an empty answer from the mocks (most resources in a lean synth: ``_state``) is sent as the empty
            ``Struct`` the base would make of it by running an event loop of its own (``_sync_await``) on this
            thread for ``serialize_properties({})``, ~7 us a resource. tests/test_synth_helpers.py compares the
            two monitors' responses and records; a preview (never lean) takes the base's way."""
            if not getattr(self.mocks, "lean", False) or request.type == "pulumi:pulumi:Stack":
                return super().RegisterResource(request)
            urn = self.make_urn(request.parent, request.type, request.name)
            _ensure_event_loop()  # deserializing a resource reference needs one on this thread
            args = MockResourceArgs(
                typ=request.type,
                name=request.name,
                inputs=rpc.deserialize_properties(request.object),
                provider=request.provider,
                resource_id=request.importId,
                custom=request.custom or False,
                transforms=_resolve_callbacks(request.transforms),
            )
            id_, state = self.mocks.new_resource(args)
            answer = _sync_await(rpc.serialize_properties(state, {})) if state else struct_pb2.Struct()
            self.resources[urn] = MockMonitor.ResourceRegistration(urn, id_, state)
            return resource_pb2.RegisterResourceResponse(urn=urn, id=id_, object=answer)

    return AnsweringMonitor
