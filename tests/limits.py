"""Time and memory bounds for tests that feed hostile input to the package.

A hostile-input test exists because a limit in the code (depth, size, alias expansion) is what stands between
the input and the machine. If that limit breaks, the test must fail, not take the machine with it: under
``bounded`` an allocation past the budget raises MemoryError and a run past the deadline raises TimeoutError,
both of which the CLI reports as an internal error (exit 4), so the test's ``rc == 2`` fails.

- Memory: ``RLIMIT_AS`` (the soft limit only, restored afterwards), set to what the process maps now plus the
  budget, so it works in an xdist worker that already holds renders.
- Time: ``ITIMER_REAL`` raising in the main thread; code stuck inside one C call is still stopped by the memory
  limit if it allocates. Subprocesses get both through ``preexec``.
"""

from __future__ import annotations

import contextlib
import resource
import signal
import threading
import time
from collections.abc import Iterator

GIB = 1024**3


def mapped_bytes() -> int:
    """The process's virtual size now (VmSize), which RLIMIT_AS bounds."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize in /proc/self/status")


@contextlib.contextmanager
def bounded(seconds: float = 10.0, memory: int = GIB) -> Iterator[None]:
    """Run the body with at most ``memory`` more bytes mapped and at most ``seconds`` of wall time."""
    if threading.current_thread() is not threading.main_thread():  # signals reach only the main thread
        raise RuntimeError("bounded() needs the main thread")
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = mapped_bytes() + memory
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)

    def expire(_signum, _frame):
        raise TimeoutError(f"took more than {seconds:g}s: a limit meant to stop this input did not")

    previous = signal.signal(signal.SIGALRM, expire)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    started = time.monotonic()
    outer, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        if outer:  # nested: the enclosing bound keeps what is left of its deadline
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - started), 0.001))


def preexec(memory: int = 2 * GIB):
    """A ``preexec_fn`` that caps a child's address space (pair it with ``subprocess.run(timeout=...)``)."""

    def apply() -> None:
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (memory, hard))

    return apply
