"""Pipelines of in-process stages as greenlets on one thread, joined by bounded in-memory pipes."""

# Why hand-written: the scheduling is the greenlet package's (a well-kept C extension); what
# is ours is the pipe (bash's pipe semantics: 64 KiB of back-pressure, EOF when the writer
# closes, EPIPE once the reader has) and a scheduler that, once every stage has started
# (first to last, as bash forks them), runs the stage nearest the end of the pipeline first,
# so a consumer sees each write as soon as it happens, as with OS pipes.
# A stage that blocks switches back to the scheduler with a predicate; nothing runs in
# parallel and no thread or descriptor is made, and every stage has ended when run() returns.

from __future__ import annotations

import errno
import io
import threading
import time
from collections import deque
from typing import Any, Callable

from ..limits import charge_read, check_size
from .streams import LineReads

try:
    from greenlet import getcurrent as _getcurrent
    from greenlet import greenlet as _greenlet
except ImportError:  # pragma: no cover - the [speed] extra is absent: threads and OS pipes
    _greenlet = None  # type: ignore[assignment,misc]
    _getcurrent = None  # type: ignore[assignment]

__all__ = ["AVAILABLE", "CAP", "GPipe", "block", "exec_point", "in_stage", "run"]

AVAILABLE = _greenlet is not None
CAP = 1 << 16  # bytes a pipe holds before its writer waits (Linux's default pipe size)

_ALWAYS = (lambda: True)

if _greenlet is not None:
    class Stage(_greenlet):  # type: ignore[misc,valid-type]
        """A pipeline stage: blocking operations in it yield to the scheduler."""

        later = False  # stages after this one have not started yet (see exec_point)
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


def exec_point() -> None:
    """A stage that is one program is about to run it: bash's child would exec it here,
    which takes long enough for the stages forked after it to start first (`echo a | cat |
    true` is 0 141 0 in about 3 runs of 4 there); let them."""
    g = _getcurrent()
    if type(g) is Stage and g.later:
        g.later = False
        g.parent.switch((_ALWAYS, None))


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
    nxt = 0  # the first stage not started yet
    while live:
        ran = False
        # stages start first to last, each running until it first waits or ends, as bash
        # forks them left to right (`set -x` traces and stderr lines come in that order);
        # after that the stage nearest the end that can go on runs
        i = nxt if nxt < n else n - 1
        nxt += 1
        while i >= 0:
            if not done[i]:
                w = waits[i]
                if w is None or ended or w[0]() or (w[1] is not None and time.monotonic() >= w[1]):
                    g = stages[i]
                    if started[i]:
                        r = g.switch()
                    else:
                        started[i] = True
                        g.later = i < n - 1
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


class GReader(LineReads):
    """The read end, with a buffered reader's methods (read, read1, readline, peek,
    iteration). Not an io.BufferedReader over a raw stream: making and closing those two
    cost more than the rest of a short pipeline, and each read went C → Python → C. Reads of
    everything or of a whole line are charged to the run's budget like an OS pipe's
    (streams.BoundedReads)."""

    __slots__ = ("p",)

    def __init__(self, p: GPipe) -> None:
        self.p = p

    @property
    def closed(self) -> bool:
        return self.p.rclosed

    def _more(self) -> bool:
        """Wait for bytes or end of input; True when bytes are there."""
        p = self.p
        if p.chunks:
            return True
        if p.rclosed:
            raise ValueError("read of closed file")
        if p.wclosed:
            return False
        p.rwait = True
        try:
            block(p.can_read, None, p.check)
        finally:
            p.rwait = False
        return bool(p.chunks)

    def _take(self, limit: int) -> bytes:
        """Up to ``limit`` bytes (>0) of what the pipe holds (which is not empty)."""
        p = self.p
        chunks = p.chunks
        c = chunks[0]
        off = p.off
        k = len(c) - off
        if k > limit:
            p.off = off + limit
            p.size -= limit
            return c[off:off + limit]
        chunks.popleft()
        p.off = 0
        if off:
            c = c[off:]
        if k == limit or not chunks:
            p.size -= k
            return c
        parts = [c]
        got = k
        while chunks and got < limit:
            c = chunks[0]
            k = len(c)
            if got + k > limit:
                k = limit - got
                p.off = k
                parts.append(c[:k])
                got = limit
                break
            chunks.popleft()
            parts.append(c)
            got += k
        p.size -= got
        return b"".join(parts)

    def read1(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            size = CAP
        elif size == 0:
            return b""
        if not self.p.chunks and not self._more():
            return b""
        return self._take(size)

    def read(self, size: int | None = -1) -> bytes:
        if size is not None and size >= 0:
            if size == 0:
                return b""
            if not self.p.chunks and not self._more():
                return b""
            data = self._take(size)
            if len(data) == size:
                return data
            parts = [data]
            got = len(data)
            while got < size and self._more():
                data = self._take(size - got)
                parts.append(data)
                got += len(data)
            return b"".join(parts)
        parts = []
        total = 0
        while self._more():
            data = self._take(CAP)
            parts.append(data)
            total += len(data)
            charge_read(len(data))
            check_size(total, "read of a pipe")
        return b"".join(parts)

    def readall(self) -> bytes:
        return self.read(-1)

    def readinto(self, b: Any) -> int:
        data = self.read(len(b))
        n = len(data)
        b[:n] = data
        return n

    def readinto1(self, b: Any) -> int:
        data = self.read1(len(b))
        n = len(data)
        b[:n] = data
        return n

    def readline(self, size: int | None = -1) -> bytes:
        if size is None:
            size = -1
        if size == 0:
            return b""
        p = self.p
        chunks = p.chunks
        parts = []
        total = 0
        while chunks or self._more():
            c = chunks[0]
            off = p.off
            end = len(c)
            if size >= 0 and end - off > size - total:
                end = off + size - total
            k = c.find(b"\n", off, end)
            if k >= 0:
                end = k + 1
            if end == len(c):
                chunks.popleft()
                p.off = 0
                piece = c[off:] if off else c
            else:
                p.off = end
                piece = c[off:end]
            p.size -= len(piece)
            total += len(piece)
            if k >= 0 or total == size:
                if not parts:
                    return piece
                parts.append(piece)
                break
            parts.append(piece)
            if size < 0:
                charge_read(total)
                check_size(total, "line of a pipe")
        return b"".join(parts)

    def peek(self, size: int = 0) -> bytes:
        p = self.p
        if not p.chunks and not self._more():
            return b""
        c = p.chunks[0]
        return c[p.off:] if p.off else c

    def __iter__(self) -> GReader:
        return self

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise io.UnsupportedOperation("an in-memory pipe has no file descriptor")

    def tell(self) -> int:
        raise io.UnsupportedOperation("an in-memory pipe cannot tell its position")

    def seek(self, *a: object) -> int:
        raise io.UnsupportedOperation("an in-memory pipe cannot seek")

    def write(self, data: Any) -> int:
        raise OSError(errno.EBADF, "Bad file descriptor")  # write(2) on a pipe's read end

    def identity(self) -> None:
        return None  # (commands/_args.py: not a regular file)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.p.close_reader()

    def __enter__(self) -> GReader:
        return self

    def __exit__(self, *a: object) -> None:
        self.close()


class _WriteEnd:
    """What every write end of a GPipe answers alike."""

    __slots__ = ()

    def fileno(self) -> int:
        raise io.UnsupportedOperation("an in-memory pipe has no file descriptor")

    def identity(self) -> None:
        return None  # (commands/_args.py: not a regular file)

    def flush(self) -> None:
        pass

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False


class GWriter(_WriteEnd):
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

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.p.wclosed = True

    def __enter__(self) -> GWriter:
        return self

    def __exit__(self, *a: object) -> None:
        pass


class Filler(_WriteEnd):
    """A write end that never waits: for a stage that runs to its end before its reader
    starts (its output is bounded; Interpreter._producer)."""

    __slots__ = ("p",)

    def __init__(self, p: GPipe) -> None:
        self.p = p

    def write(self, data: Any) -> int:
        n = len(data)
        if n:
            p = self.p
            p.chunks.append(data if type(data) is bytes else bytes(data))
            p.size += n
        return n

    def close(self) -> None:
        self.p.wclosed = True


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
        self.reader = GReader(self)
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
        w = self.writer
        if w is not None:
            # (w.close() and the reader's close_reader(), inlined: once per pipe per pipeline)
            w.closed = True
            self.wclosed = True
            self.rclosed = True
            self.chunks.clear()
            self.size = 0
            self.off = 0
            # (the ends hold this pipe and it held them: a reference cycle per pipeline
            # left to the cyclic collector; the stages keep the ends they were given)
            self.writer = self.reader = None  # type: ignore[assignment]
        # both ends closed: no wait is left to abandon. Dropping the budget's check breaks
        # the pipe's tie to the run (the pipe and its ends are a cycle, freed only by the
        # collector): the executor reuses a run's budget and streams when nothing holds them
        self.check = None
