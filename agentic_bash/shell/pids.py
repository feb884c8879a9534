"""Process ids for what runs in-process as if forked: subshells (BASHPID) and background jobs ($!)."""

from __future__ import annotations

import os
import threading

_lock = threading.Lock()
_next = [1000]
_PID_MAX = 4194304  # (the kernel's default on 64-bit; numbers wrap below it, as pids do)


def new_pid() -> int:
    """The next pid, increasing as the kernel's do, shared by subshells and jobs (so no two
    live ones get the same), skipping any a live process of this pid namespace has: ``kill``
    of a subshell's BASHPID or a job's ``$!`` never names a real program."""
    with _lock:
        while True:
            p = _next[0]
            _next[0] = p + 1 if p + 1 < _PID_MAX else 1000
            if not os.path.exists(f"/proc/{p}"):
                return p
