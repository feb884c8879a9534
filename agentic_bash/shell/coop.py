"""Pipelines of in-process stages as greenlets on one thread, joined by bounded in-memory pipes."""

# Why hand-written: the scheduling is the greenlet package's (a well-kept C extension); what
# is ours is the pipe (bash's pipe semantics: 64 KiB of back-pressure, EOF when the writer
# closes, EPIPE once the reader has) and a scheduler that runs the stage nearest the end of
# the pipeline first, so a consumer sees each write as soon as it happens, as with OS pipes.
# A stage that blocks switches back to the scheduler with a predicate; nothing runs in
# parallel and no thread or descriptor is made, and every stage has ended when run() returns.

from __future__ import annotations

import errno
import io
import threading
import time
from collections import deque
from typing import Any, Callable

try:
    from greenlet import getcurrent as _getcurrent
    from greenlet import greenlet as _greenlet
except ImportError:  # pragma: no cover - the [speed] extra is absent: threads and OS pipes
    _greenlet = None  # type: ignore[assignment,misc]
    _getcurrent = None  # type: ignore[assignment]

__all__ = ["AVAILABLE", "CAP", "GPipe", "block", "in_stage", "run"]

AVAILABLE = _greenlet is not None
CAP = 1 << 16  # bytes a pipe holds before its writer waits (Linux's default pipe size)

_ALWAYS = (lambda: True)

if _greenlet is not None:
    class Stage(_greenlet):  # type: ignore[misc,valid-type]
        """A pipeline stage: blocking operations in it yield to the scheduler."""
else:  # pragma: no cover
    Stage = None  # type: ignore[assignment,misc]


def in_stage() -> bool:
    return _getcurrent is not None and type(_getcurrent()) is Stage


def block(ready: Callable[[], bool], wake: float | None = None, check: Callable[[], None] | None = None) -> None:
    """Wait until ``ready()``: in a stage by yielding to its scheduler (``wake``: a
    monotonic time at which to look again even if nothing happened); elsewhere (another
    thread holding a pipe end) by polling. ``check`` raises to abandon the wait."""
    g = _getcurrent() if _getcurrent is not None else None
    if g is not None and type(g) is Stage:
        parent = g.parent
        while not ready():
            parent.switch((ready, wake))
            if check is not None:
                check()
            if wake is not None and time.monotonic() >= wake:
                return
        return
    delay = 0.0002
    while not ready():
        if check is not None:
            check()
        if wake is not None:
            left = wake - time.monotonic()
            if left <= 0:
                return
            delay = min(delay, left)
        time.sleep(delay)
        delay = min(delay * 2, 0.02)


def pause() -> None:
    """Let the other stages run once (a write a reader waits for)."""
    g = _getcurrent()
    if type(g) is Stage:
        g.parent.switch((_ALWAYS, None))


_DONE = object()
_pool = threading.local()


def _work(fn: Callable[[], None]) -> None:
    # a reusable stage: a new greenlet costs tens of microseconds (CPython gives each its
    # own frame stack), a switch into a parked one about one
    while True:
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 - handed to the scheduler
            fn = _getcurrent().parent.switch((_DONE, e))
        else:
            fn = _getcurrent().parent.switch((_DONE, None))


def run(fns: list[Callable[[], None]], budget: Any, pipes: list[GPipe]) -> None:
    """Run ``fns`` (the stages, first to last) to completion on this thread."""
    n = len(fns)
    cur = _getcurrent()
    free = getattr(_pool, "free", None)
    if free is None:
        free = _pool.free = []
    stages = []
    for _ in range(n):
        if free:
            g = free.pop()
            g.parent = cur
        else:
            g = Stage(_work)
        stages.append(g)
    waits: list[Any] = [None] * n  # (ready, wake) of a blocked stage; None: runnable
    started = [False] * n
    done = [False] * n
    live = n
    idle = 0.0002
    ended = False  # the budget ran out while every stage waited: pipes closed, all resumed
    failure: BaseException | None = None
    while live:
        ran = False
        i = n - 1
        while i >= 0:
            if not done[i]:
                w = waits[i]
                if w is None or ended or w[0]() or (w[1] is not None and time.monotonic() >= w[1]):
                    g = stages[i]
                    if started[i]:
                        r = g.switch()
                    else:
                        started[i] = True
                        r = g.switch(fns[i])
                    if r[0] is _DONE:
                        done[i] = True
                        live -= 1
                        waits[i] = None
                        if r[1] is not None and failure is None:
                            failure = r[1]
                        if not g.dead and len(free) < 32:
                            free.append(g)
                    else:
                        waits[i] = r
                    ran = True
                    break
            i -= 1
        if ran:
            idle = 0.0002
            continue
        # every stage waits on something outside this pipeline (or on time)
        wake = None
        for w in waits:
            if w is not None and w[1] is not None and (wake is None or w[1] < wake):
                wake = w[1]
        if type(cur) is Stage:
            # nested: the enclosing pipeline runs its other stages until one of ours can go on
            mine = [w for w in waits if w is not None]
            cur.parent.switch((lambda: any(w[0]() for w in mine), wake))
            continue
        try:
            budget.check()
        except BaseException:
            if not ended:
                ended = True
                for p in pipes:
                    p.close()
            continue
        t = idle
        if wake is not None:
            t = max(0.0, min(wake - time.monotonic(), 0.05))
        ev = getattr(budget, "_event", None)
        if ev is not None:
            rem = budget.remaining()
            ev.wait(t if rem is None else min(t, rem + 0.001))
        else:
            time.sleep(t)
        idle = min(idle * 2, 0.02)
    if failure is not None:
        raise failure


class _Raw(io.RawIOBase):
    __slots__ = ("p",)

    def __init__(self, p: GPipe) -> None:
        self.p = p

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        p = self.p
        chunks = p.chunks
        if not chunks:
            if p.wclosed or p.rclosed:
                return 0
            p.rwait = True
            try:
                block(p.can_read, None, p.check)
            finally:
                p.rwait = False
            if not chunks:
                return 0
        want = len(b)
        got = 0
        while chunks and got < want:
            c = chunks[0]
            off = p.off
            k = len(c) - off
            if k > want - got:
                k = want - got
                b[got:got + k] = c[off:off + k]
                p.off = off + k
            else:
                b[got:got + k] = c[off:] if off else c
                chunks.popleft()
                p.off = 0
            got += k
        p.size -= got
        return got

    def readall(self) -> bytes:
        out = []
        p = self.p
        while True:
            if not p.chunks:
                if p.wclosed or p.rclosed:
                    break
                p.rwait = True
                try:
                    block(p.can_read, None, p.check)
                finally:
                    p.rwait = False
                if not p.chunks:
                    break
            c = p.chunks.popleft()
            out.append(c[p.off:] if p.off else c)
            p.size -= len(c) - p.off
            p.off = 0
        return b"".join(out)

    def fileno(self) -> int:
        raise io.UnsupportedOperation("an in-memory pipe has no file descriptor")

    def close(self) -> None:
        self.p.close_reader()
        super().close()


class GReader(io.BufferedReader):
    """The read end (a BufferedReader, as an OS pipe's reader is)."""

    def close(self) -> None:
        try:
            super().close()
        except (OSError, ValueError):
            pass


class GWriter:
    """The write end: a write waits while the pipe holds CAP bytes; once the reader has
    closed, writes raise BrokenPipeError (the stage then ends with 141, as on SIGPIPE)."""

    __slots__ = ("p", "closed")

    def __init__(self, p: GPipe) -> None:
        self.p = p
        self.closed = False

    def write(self, data: Any) -> int:
        p = self.p
        if p.rclosed or self.closed:
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")
        n = len(data)
        if not n:
            return 0
        p.chunks.append(data if type(data) is bytes else bytes(data))
        p.size += n
        if p.size >= CAP:
            block(p.can_write, None, p.check)
            if p.rclosed:
                raise BrokenPipeError(errno.EPIPE, "Broken pipe")
        elif p.rwait:
            pause()
        return n

    def fileno(self) -> int:
        raise io.UnsupportedOperation("an in-memory pipe has no file descriptor")

    def flush(self) -> None:
        pass

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.p.wclosed = True

    def __enter__(self) -> GWriter:
        return self

    def __exit__(self, *a: object) -> None:
        pass


class GPipe:
    """An in-memory pipe between two stages of one cooperative pipeline."""

    __slots__ = ("chunks", "off", "size", "wclosed", "rclosed", "rwait", "reader", "writer", "check")

    def __init__(self, budget: Any = None) -> None:
        self.chunks: deque[bytes] = deque()
        self.off = 0
        self.size = 0
        self.wclosed = False
        self.rclosed = False
        self.rwait = False
        self.check = budget.check if budget is not None else None
        self.reader = GReader(_Raw(self), CAP)
        self.writer = GWriter(self)

    def can_read(self) -> bool:
        return bool(self.chunks) or self.wclosed or self.rclosed

    def can_write(self) -> bool:
        return self.size < CAP or self.rclosed

    def close_reader(self) -> None:
        self.rclosed = True
        self.chunks.clear()
        self.size = 0
        self.off = 0

    def close(self) -> None:
        self.writer.close()
        self.reader.close()
