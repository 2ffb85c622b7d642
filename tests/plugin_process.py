"""A Pulumi plugin process as the engine starts one (the component package's provider, the policy pack's analyzer):
started with the engine's address as its argument, it prints the port it serves gRPC on; ``served`` yields a ready
channel to it and stops the process afterwards."""

from __future__ import annotations

import select
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def read_port(proc: subprocess.Popen, what: str, timeout: float = 90) -> int:
    """The port the plugin prints first; a plugin that prints anything else, or nothing in ``timeout`` seconds,
    fails with its stderr."""
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    line = proc.stdout.readline() if ready and proc.stdout else b""
    if not line.strip().isdigit():
        proc.kill()
        _, err = proc.communicate(timeout=10)
        raise AssertionError(f"{what} printed {line!r} instead of its port:\n{err.decode(errors='replace')}")
    return int(line)


@contextmanager
def served(argv: Sequence[str], cwd: Path, env: Mapping[str, str], what: str) -> Iterator[Any]:
    """The plugin ``argv`` started in ``cwd`` with ``env``: a gRPC channel to it, ready (``what`` names it in a
    failure)."""
    import grpc

    proc = subprocess.Popen(list(argv), cwd=cwd, env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        port = read_port(proc, what)
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            grpc.channel_ready_future(channel).result(timeout=30)
            yield channel
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream:
                stream.close()
