"""Byte streams of the shell: bounded capture buffers, OS pipes, /dev/null and friends."""

from __future__ import annotations

import errno
import io
import os
import sys
import threading

try:
    import fcntl
    _F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031) if sys.platform.startswith("linux") else 0
except ImportError:  # pragma: no cover - non-POSIX
    fcntl = None  # type: ignore[assignment]
    _F_SETPIPE_SZ = 0
from typing import Callable

from ..limits import active_budget, charge_read, check_size, no_kick

__all__ = ["BoundedReads", "BytesReader", "Capture", "InputBytes", "NullStream", "Pipe", "PipeReader", "PipeWriter"]

MARKER = "\n[agentic-bash: output truncated after {n} bytes]\n"
TAIL_MARKER = ("\n[agentic-bash: output truncated: {elided} bytes elided; the first {head} "
               "and the last {tail} bytes are kept]\n")


class Capture:
    """Collects one output stream of a run, bounded by ``limit`` bytes. Past it the first
    half and the last half of the limit are kept (the end of a log is where its errors are),
    with a visible marker between them; a stream callback only ever gets the first
    ``limit`` bytes. Subclasses with ``keep_tail = False`` keep the head only."""

    __slots__ = ("buf", "limit", "truncated", "on_output", "fd", "forward", "tail", "elided")

    keep_tail = True

    closed = False

    # one lock for every Capture: it is held only for a few bytearray operations (never
    # while calling out), and a run makes two Captures, so a lock each cost more than sharing
    lock = threading.Lock()

    def __init__(self, limit: int | None = None, on_output: Callable[[int, bytes], None] | None = None, fd: int = 1) -> None:
        self.buf = bytearray()
        self.limit = limit
        self.truncated = False
        self.on_output = on_output
        self.fd = fd
        self.forward: Capture | None = None
        self.tail: bytearray | None = None
        self.elided = 0

    def write(self, data: bytes) -> int:
        fw = self.forward
        if fw is not None:
            # the run that owned this stream is over: a background job's late output
            return fw._append_locked(data)
        n = len(data)
        buf = self.buf
        lim = self.limit
        if lim is not None and (len(buf) + n > lim or self.truncated):
            return self._write_past(data, n)
        # one bytearray append is atomic under the GIL; a writer racing past the limit here
        # overshoots by at most its own chunk, and getvalue() cuts that visibly
        buf += data
        cb = self.on_output
        if cb is not None:
            if lim is not None and len(buf) > lim:
                return self._raced_past(data, n)  # the stream callback gets no byte past it
            cb(self.fd, bytes(data))
        return n

    def identity(self) -> None:
        return None  # (commands/_args.py's "input file is output file" test: no file)

    def _raced_past(self, data: bytes, n: int) -> int:
        with self.lock:
            buf = self.buf
            over = len(buf) - self.limit  # type: ignore[operator]
            if over > 0:
                self._cut(b"")
            keep = n - over if over < n else 0
        if keep > 0:
            self.on_output(self.fd, bytes(data[:keep]))  # type: ignore[misc]
        return n

    def _cut(self, data: bytes) -> None:
        """Under the lock: the stream went past the limit; ``buf`` (plus ``data``) becomes
        head + tail. Later calls only feed the tail."""
        lim: int = self.limit  # type: ignore[assignment]
        if not self.keep_tail:
            if not self.truncated:
                room = lim - len(self.buf)
                if room > 0:
                    self.buf += data[:room]
                del self.buf[lim:]
            self.truncated = True
            return
        keep = lim // 2
        head = lim - keep
        tail = self.tail
        if tail is None:
            buf = self.buf
            if len(buf) < head:
                take = head - len(buf)
                buf += data[:take]
                data = data[take:]
            tail = self.tail = bytearray()
            tail += buf[head:]
            del buf[head:]
        tail += data
        over = len(tail) - keep
        if over > 0 and (over >= keep or over > (1 << 16) or not data):
            # trimmed in batches: a stream of small writes stays linear
            del tail[:over]
            self.elided += over
        self.truncated = True

    def _write_past(self, data: bytes, n: int) -> int:
        with self.lock:
            if self.truncated:
                if self.keep_tail:
                    self._cut(data)
                return n
            buf = self.buf
            room = self.limit - len(buf)  # type: ignore[operator]
            cut = bytes(data[:max(room, 0)])
            self._cut(data)
        cb = self.on_output
        if cb is not None:
            cb(self.fd, cut)
        return n

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def _append_locked(self, data: bytes) -> int:
        # late output is appended under the lock so take() never loses a chunk
        n = len(data)
        with self.lock:
            lim = self.limit
            if self.truncated:
                if self.keep_tail:
                    self._cut(data)
            elif lim is not None and len(self.buf) + n > lim:
                self._cut(data)
            else:
                self.buf += data
        return n

    def take(self) -> bytes:
        """Return and clear the collected bytes."""
        with self.lock:
            data = self._value()
            self.buf.clear()
            self.truncated = False
            self.tail = None
            self.elided = 0
        return data

    def _value(self) -> bytes:
        # (one copy into the result: bytes() of the head and of the tail and two
        # concatenations were five copies of 8 MiB, 40-80 ms for a cut 16 MiB output at a
        # run's deadline on a loaded machine, all of it past the timeout)
        buf = self.buf
        lim = self.limit
        if lim is not None and len(buf) > lim:
            self._cut(b"")
        if not self.truncated:
            return bytes(buf)
        tail = self.tail
        if tail is None:
            return b"".join((buf, MARKER.format(n=lim).encode()))
        over = len(tail) - lim // 2  # type: ignore[operator]
        if over > 0:
            del tail[:over]
            self.elided += over
        return b"".join((buf, TAIL_MARKER.format(elided=self.elided, head=len(buf),
                                                  tail=len(tail)).encode(), tail))

    def getvalue(self) -> bytes:
        with self.lock:
            return self._value()

    def __enter__(self) -> Capture:
        return self

    def __exit__(self, *a: object) -> None:
        pass


class NullStream:
    """``/dev/null``: reads EOF, swallows writes."""

    __slots__ = ()
    closed = False

    def write(self, data: bytes) -> int:
        return len(data)

    def read(self, n: int = -1) -> bytes:
        return b""

    read1 = read

    def readline(self, n: int = -1) -> bytes:
        return b""

    def readlines(self) -> list[bytes]:
        return []

    def readinto(self, b: bytearray) -> int:
        return 0

    def __iter__(self):
        return iter(())

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return True

    def __enter__(self) -> NullStream:
        return self

    def __exit__(self, *a: object) -> None:
        pass


NULL = NullStream()


def BytesReader(data: bytes) -> io.BytesIO:
    return io.BytesIO(data)


class InputBytes(io.BytesIO):
    """A run's stdin given as bytes: readable only, like the read end of a pipe, so
    ``echo x >&0`` fails with EBADF as in bash. ``close()`` is a no-op: one empty instance
    serves every run that has no stdin."""

    def write(self, data: object) -> int:
        raise OSError(errno.EBADF, "Bad file descriptor")

    def writelines(self, lines: object) -> None:
        raise OSError(errno.EBADF, "Bad file descriptor")

    def writable(self) -> bool:
        return False

    def close(self) -> None:
        pass


class HereDoc(InputBytes):
    """The body of a here-document or here-string: read-only, like bash's pipe or file
    (``echo x 1<<EOF``: write error, EBADF); a program started with it as input gets a pipe
    while it is small, as bash 5.2 gives (executors/inprocess._heredoc_pipe)."""


_devnull = -1
_devnull_lock = threading.Lock()


def _null_fd() -> int:
    """A descriptor of /dev/null (close-on-exec), opened once per process (under a lock:
    many stages abort at once, and each unlocked open but the last one kept would leak)."""
    global _devnull
    if _devnull < 0:
        with _devnull_lock:
            if _devnull < 0:
                _devnull = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    return _devnull


# opened with the module, not at the first stopped run: a process's descriptor count does not
# grow by one in the middle of its work (leak checks around a sandbox's life would see it)
try:
    _null_fd()
except OSError:  # pragma: no cover - no /dev/null: abort() falls back to nothing
    pass


class PipeWriter:
    """Write end of an OS pipe; EPIPE becomes BrokenPipeError (the stage then ends with 141)."""

    __slots__ = ("fd", "closed", "lock", "broken", "__weakref__")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.closed = False
        self.broken = False
        self.lock = threading.Lock()

    def abort(self) -> None:
        """The run is stopped (any thread may call it): the pipe loses this writer now, so a
        reader blocked in read() gets EOF; later writes fail with EPIPE. The descriptor
        number stays taken (/dev/null is put in its place) until close(), so no other file
        can get it while a stage still holds it."""
        with self.lock:
            if not self.closed and not self.broken:
                self.broken = True
                try:
                    os.dup2(_null_fd(), self.fd, inheritable=False)
                except OSError:
                    pass

    def write(self, data: bytes) -> int:
        if self.closed or self.broken:
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")
        mv = memoryview(data)
        total = len(mv)
        fd = self.fd
        while mv:
            n = os.write(fd, mv)
            mv = mv[n:]
        return total

    def fileno(self) -> int:
        return self.fd

    def flush(self) -> None:
        pass

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def close(self) -> None:
        with self.lock:
            if not self.closed:
                self.closed = True
                try:
                    os.close(self.fd)
                except OSError:
                    pass

    def __del__(self) -> None:
        # a stage or job that ended without close() (the watchdog's exception can cut its
        # cleanup short): its descriptor goes with it, as a PipeReader's does
        if not getattr(self, "closed", True):
            try:
                os.close(self.fd)
            except OSError:
                pass

    def __enter__(self) -> PipeWriter:
        return self

    def __exit__(self, *a: object) -> None:
        pass


class LineReads:
    """Mixin: ``readlines()`` and ``next()`` over the class's own ``readline()``, the lines'
    total held to the run's size bound (``check_size``) unless ``_LINES_CHECKED`` is off."""

    __slots__ = ()
    _LINES_CHECKED = True

    def readlines(self, hint: int = -1) -> list[bytes]:
        out = []
        n = 0
        checked = self._LINES_CHECKED
        while True:
            line = self.readline()  # type: ignore[attr-defined]
            if not line:
                return out
            out.append(line)
            n += len(line)
            if 0 < hint <= n:
                return out
            if checked:
                check_size(n, "read of a pipe")

    def __next__(self) -> bytes:
        line = self.readline()  # type: ignore[attr-defined]
        if not line:
            raise StopIteration
        return line


class BoundedReads(LineReads):
    """Mixin for a BufferedReader over a pipe: ``read()`` of everything and ``readline()``
    without a size loop here in chunks, charged to the run's budget. BufferedReader's own
    are one C loop that, on an endless writer (``yes | diff - f``), grows until the host
    runs out and never sees the deadline."""

    def read(self, size: int | None = -1) -> bytes:
        if size is not None and size >= 0:
            return super().read(size)
        parts = []
        total = 0
        read1 = super().read1
        while True:
            data = read1(65536)
            if not data:
                return b"".join(parts)
            parts.append(data)
            total += len(data)
            charge_read(len(data))
            check_size(total, "read of a pipe")

    def readall(self) -> bytes:
        return self.read(-1)

    def readline(self, size: int | None = -1) -> bytes:
        if size is not None and size >= 0:
            return super().readline(size)
        line = super().readline(65536)
        if len(line) < 65536 or line.endswith(b"\n"):
            return line
        parts = [line]
        total = len(line)
        rl = super().readline
        while True:
            charge_read(total)
            check_size(total, "line of a pipe")
            more = rl(65536)
            parts.append(more)
            total += len(more)
            if len(more) < 65536 or more.endswith(b"\n"):
                return b"".join(parts)




class _RawPipe(io.FileIO):
    """The descriptor under a PipeReader: abort() may replace it from another thread while a
    read holds the reader's buffer lock, so closing and aborting share a lock of their own."""

    def __init__(self, fd: int) -> None:
        super().__init__(fd, "rb", closefd=True)
        self._fdlk = threading.Lock()
        # bytes the reader's buffer ever took from the pipe: while 0, the pipe holds all
        # that is unread, so `read` (a byte at a time, as bash reads a pipe) and native
        # children can take from the descriptor itself (shell/builtins.py, executors/native.py)
        self.nread = 0
        self.handoffs = 0  # native children given the descriptor (each may read from it)
        self.peeked = b""  # what `read` saw at the pipe's head without taking it, and when
        self.peeked_at = -1
        self.scratch: tuple[int, int] | None = None  # the pipe tee(2) copies into

    def readinto(self, b: Any) -> int | None:
        n = super().readinto(b)
        if n:
            self.nread += n
        return n

    def read(self, size: int = -1) -> bytes | None:
        data = super().read(size)
        if data:
            self.nread += len(data)
        return data

    def readall(self) -> bytes:
        data = super().readall()
        self.nread += len(data)
        return data

    def close(self) -> None:
        lk = getattr(self, "_fdlk", None)
        if lk is None:  # (half made: its __init__ was cut short)
            super().close()
            return
        with lk:
            super().close()
            sc, self.scratch = self.scratch, None
            if sc is not None:
                for fd in sc:
                    try:
                        os.close(fd)
                    except OSError:
                        pass

    def abort(self) -> None:
        with self._fdlk:
            if not self.closed:
                try:
                    os.dup2(_null_fd(), self.fileno(), inheritable=False)
                except OSError:
                    pass


class PipeReader(BoundedReads, io.BufferedReader):
    """Read end of an OS pipe with idempotent close (safe to call from any thread)."""

    def __init__(self, fd: int) -> None:
        self._rawp = _RawPipe(fd)
        super().__init__(self._rawp, 65536)
        self._lk = threading.Lock()

    def abort(self) -> None:
        """The run is stopped: the pipe loses this reader now (a writer blocked on a full
        pipe gets EPIPE) and later reads see EOF (see PipeWriter.abort)."""
        self._rawp.abort()

    def close(self) -> None:
        with self._lk:
            try:
                super().close()
            except OSError:
                pass


class Pipe:
    """An OS pipe whose two ends can be closed independently and idempotently."""

    __slots__ = ("reader", "writer")

    def __init__(self) -> None:
        # no watchdog kick until both ends have owners: one right after os.pipe() returned
        # lost both descriptors, one inside _RawPipe.__init__ left a reader that could not
        # close (a fork bomb's stage threads leaked a pipe in about 1 run of 4)
        with no_kick:
            self._make()
        b = active_budget()
        if b is not None:
            # (each end: the Pipe itself is often dropped while its ends are in use)
            b.track_pipe(self.reader)  # broken at once when the run stops (Budget.abort_pipes)
            b.track_pipe(self.writer)

    def _make(self) -> None:
        r, w = os.pipe()
        try:
            if _F_SETPIPE_SZ:
                # Linux's default 64 KiB, as bash's pipes hold: a writer that is more than
                # that ahead of a reader which quits (`seq 100000 | head -1`) ends with
                # SIGPIPE's 141 as under bash (a 1 MiB pipe let it finish with 0; bulk speed
                # was the same)
                try:
                    fcntl.fcntl(w, _F_SETPIPE_SZ, 1 << 16)
                except OSError:
                    pass
            self.writer = PipeWriter(w)
            w = -1  # (owned from here: closed by the writer, or its __del__)
            rd = r
            r = -1  # (from here a half-made reader may own it: never closed twice)
            self.reader = PipeReader(rd)
        except BaseException:
            # the watchdog's exception before the ends have owners: no descriptor is lost
            for fd in (r, w):
                if fd >= 0:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            raise

    def abort(self) -> None:
        self.writer.abort()
        self.reader.abort()

    def close(self) -> None:
        self.writer.close()
        self.reader.close()
