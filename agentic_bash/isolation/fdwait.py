"""Wait until file descriptors are readable, with poll(2): select(2) fails on fds >= 1024."""

# A host with a few hundred sandboxes holds thousands of descriptors (a channel, a pidfd, a
# layer fd, listeners per sandbox): select.select() then raises "filedescriptor out of range"
# in whichever call gets a high one. Same contract as select.select([...], [], [], timeout)[0].

from __future__ import annotations

import select
from typing import Any, Sequence

__all__ = ["POLL_EVENTS", "readable"]

POLL_EVENTS = select.POLLIN | select.POLLPRI | select.POLLHUP | select.POLLERR


def readable(fds: Sequence[Any], timeout: float | None = None) -> list[Any]:
    """The members of ``fds`` (ints or objects with ``fileno()``) that are readable, hung up
    or in error within ``timeout`` seconds (None: wait as long as it takes)."""
    p = select.poll()
    by_fd: dict[int, Any] = {}
    for f in fds:
        n = f if isinstance(f, int) else f.fileno()
        if n < 0:
            raise ValueError("file descriptor cannot be a negative integer")
        by_fd[n] = f
        p.register(n, POLL_EVENTS)
    ms = None if timeout is None else max(0, int(timeout * 1000 + 0.999))
    return [by_fd[n] for n, _ in p.poll(ms) if n in by_fd]
