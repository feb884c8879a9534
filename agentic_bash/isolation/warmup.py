"""The runner's warm-up while it waits for its first request: a throwaway shell runs a builtin."""

# Why (sessions14): a fresh sandbox's runner is a fork of the zygote, and the first command it
# runs writes ~110 pages of the zygote's heap (reference counts and specialisation counters of
# the code, functions, types and constants a run touches), each a copy-on-write fault: the
# first `echo` cost the runner ~0.9 ms of CPU against ~0.3 ms for the next ones. Touched here,
# while the sandbox waits to be used, they are private before its first command; what that
# costs is the same pages of memory, now counted from ready on (~0.45 MB of the idle USS).
#
# Security/state invariant: the warm-up runs on an executor of its own (its own shell state
# over a MemoryFS, no native launcher: nothing is spawned, no file of the sandbox is read or
# written) and never on the sandbox's; the module-level things a run changes (the parse-tree
# cache and its template memo, the global random generator that seeds a new shell's $RANDOM,
# the MemoryFS inode and device counters) are put back as they were. The session's shell
# state, its files and its processes cannot tell whether it ran
# (tests/isolation/test_warmup14.py compares them).

from __future__ import annotations

import itertools
import os
import random
import select
import socket
from typing import Any

from ..executors import inprocess as _inprocess
from ..shell import template as _template
from ..vfs import memory as _memory

ENABLED = os.environ.get("AGENTIC_BASH_RUNNER_WARMUP") != "0"
"""AGENTIC_BASH_RUNNER_WARMUP=0 (read by the zygote, which passes it on): no warm-up
(benchmarks compare the two)."""

IDLE = 0.02
"""Seconds the runner waits for a first request before it warms up: a ``Sandbox()`` whose
first command follows at once (a request already sent) runs it as before, cold, rather than
after the warm-up; a pooled one waiting to be acquired is warmed."""

SCRIPTS = ("echo warm",)
"""What the throwaway shell runs: a builtin (the run path every command takes: the parser,
the executor's run, the result's header). Programs and loops are not warmed: /bin/true's first
spawn and a first `for` with arithmetic write ~110-120 pages each, which would take the idle
sandbox past 10 MB of USS."""


def _waiting(sock: socket.socket, timeout: float) -> bool:
    """Whether a frame is waiting on ``sock`` (or it closed) within ``timeout`` seconds."""
    try:
        return bool(select.select([sock], [], [], timeout)[0])
    except (OSError, ValueError):
        return True


def _count_at(c: Any) -> int:
    """The next value of itertools.count ``c`` (from its repr: reading it with next() would
    move it)."""
    return int(repr(c)[6:-1])


def warm_up(sock: socket.socket, limits: Any, idle: float = IDLE) -> bool:
    """Run SCRIPTS on a throwaway shell unless a request comes within ``idle`` seconds (or
    arrives between two of them). True when all ran. Never raises."""
    if not ENABLED or _waiting(sock, idle):
        return False
    rng = random.getstate()
    trees = [set(d) for d in _inprocess._TREES]
    held = list(_inprocess._TREES_HELD)
    shapes, skels = set(_template._SHAPES), set(_template._SKELS)
    ino, dev = _count_at(_memory._INO), _count_at(_memory._DEV_COUNTER)
    done = False
    try:
        from ..result import Result  # noqa: F401 - (what result_header reads)
        from .runner import result_header
        ex = _inprocess.InProcessExecutor(fs=_memory.MemoryFS(), native=None, workdir="/",
                                          limits=limits)
        try:
            for script in SCRIPTS:
                if _waiting(sock, 0):
                    break
                result_header(ex.run(script))
            else:
                done = True
        finally:
            ex.close()
    except Exception:  # noqa: BLE001 - a warm-up that fails leaves the first command cold
        done = False
    finally:
        random.setstate(rng)
        with _inprocess._TREES_LOCK:
            for d, before in zip(_inprocess._TREES, trees):
                for k in set(d) - before:
                    del d[k]
            _inprocess._TREES_HELD[:] = held
        for d, before in ((_template._SHAPES, shapes), (_template._SKELS, skels)):
            for k in set(d) - before:
                del d[k]
        _memory._INO = itertools.count(ino)
        _memory._DEV_COUNTER = itertools.count(dev)
    return done
