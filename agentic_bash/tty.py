"""A pseudo-terminal for one run (``Sandbox.run(tty=...)``): the shell's streams, relayed both ways."""

# Hand-written: the stdlib's pty/termios give the pieces; no library does "a pty whose
# slave is a shell's stdio and whose master is relayed over our channel" for us.

from __future__ import annotations

import errno
import fcntl
import os
import select
import struct
import termios
import threading
import time
from typing import Any, Callable, Mapping

__all__ = ["PtySession", "TtyReader", "TtyWriter", "tty_spec"]

DEFAULT_TERM = "xterm-256color"


def tty_spec(tty: Any) -> dict[str, Any] | None:
    """Normalise ``tty=`` (True, or a mapping with ``term``, ``rows``, ``cols``) to a dict."""
    if tty is None or tty is False:
        return None
    if tty is True:
        tty = {}
    if not isinstance(tty, Mapping):
        raise TypeError(f"tty must be a bool or a mapping with term/rows/cols, not {type(tty).__name__}")
    unknown = set(tty) - {"term", "rows", "cols"}
    if unknown:
        raise ValueError(f"tty: unknown keys {sorted(unknown)} (term, rows, cols)")
    term = tty.get("term") or os.environ.get("TERM") or DEFAULT_TERM
    if not isinstance(term, str) or not term or any(c in term for c in "\0\n/"):
        raise ValueError(f"tty: bad term {term!r}")
    rows, cols = tty.get("rows", 24), tty.get("cols", 80)
    for name, v in (("rows", rows), ("cols", cols)):
        if type(v) is not int or not 0 < v < 65536:
            raise ValueError(f"tty: {name} must be an int in 1..65535, not {v!r}")
    return {"term": term, "rows": rows, "cols": cols}


def _set_size(fd: int, rows: int, cols: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


class TtyWriter:
    """The run's stdout and stderr: the pty's slave (native children write to it directly)."""

    tty = True

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.closed = False

    def write(self, data: bytes) -> int:
        mv = memoryview(data)
        total = len(mv)
        while mv:
            try:
                n = os.write(self.fd, mv)
            except InterruptedError:
                continue
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

    def isatty(self) -> bool:
        return True

    def close(self) -> None:   # the session closes the fd
        pass


class TtyReader:
    """The run's stdin: the pty's slave, read unbuffered (what the line discipline gives)."""

    tty = True

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.closed = False

    def read(self, n: int = -1) -> bytes:
        try:
            return os.read(self.fd, 65536 if n is None or n < 0 else max(1, n))
        except OSError as e:
            if e.errno == errno.EIO:
                return b""
            raise

    def read1(self, n: int = -1) -> bytes:
        return self.read(n)

    def readline(self, limit: int = -1) -> bytes:
        return self.read(limit)

    def fileno(self) -> int:
        return self.fd

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def isatty(self) -> bool:
        return True

    def close(self) -> None:
        pass


class PtySession:
    """One pseudo-terminal for one run: the slave is the shell's stdio, the master's output is
    collected (bounded by ``limit``) and handed to ``on_output`` as fd 1 as it is produced.

    ``input()`` types bytes at the terminal; when the line discipline turns the interrupt
    character into SIGINT and no native child holds the terminal, ``on_interrupt`` is called
    (the interpreter's own loop is interrupted, like bash's). ``resize()`` sets the window
    size (the foreground child gets SIGWINCH)."""

    def __init__(self, spec: Mapping[str, Any], on_output: Callable[[int, bytes], None] | None,
                 limit: int | None, on_interrupt: Callable[[], None]) -> None:
        self.master, self.slave = os.openpty()
        for fd in (self.master, self.slave):
            os.set_inheritable(fd, False)
        attrs = termios.tcgetattr(self.slave)
        cc = attrs[6]
        # no job control here: Ctrl-Z would stop a program nobody can resume
        cc[termios.VSUSP] = b"\0"
        termios.tcsetattr(self.slave, termios.TCSANOW, attrs)
        _set_size(self.slave, int(spec.get("rows", 24)), int(spec.get("cols", 80)))
        self.term = str(spec.get("term") or DEFAULT_TERM)
        self.writer = TtyWriter(self.slave)
        self.reader = TtyReader(self.slave)
        self.on_output = on_output
        self.on_interrupt = on_interrupt
        self.limit = limit
        self.buf = bytearray()
        self.truncated = False
        self.foreground = 0
        """Native children holding the terminal as their controlling tty right now."""
        self.early = False
        """The interrupt character was typed (set before the run's budget may exist)."""
        self.interrupted = False
        """The interrupt character was typed while a native child held the terminal."""
        self._stop = False
        self._drain_until = 0.0
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._pump, name="agentic-bash-pty", daemon=True)
        self._thread.start()

    # -- output ---------------------------------------------------------------------------
    def _pump(self) -> None:
        master = self.master
        while True:
            try:
                r, _, _ = select.select([master], [], [], 0.05)
            except (OSError, ValueError):
                return
            if self._stop and (not r or time.monotonic() > self._drain_until):
                return
            if not r:
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:   # EIO: every slave fd is closed
                return
            if not chunk:
                return
            self._deliver(chunk)

    def _deliver(self, chunk: bytes) -> None:
        lim = self.limit
        if lim is not None and len(self.buf) + len(chunk) > lim:
            chunk = chunk[:max(0, lim - len(self.buf))]
            self.truncated = True
        if not chunk:
            return
        self.buf += chunk
        cb = self.on_output
        if cb is not None:
            try:
                cb(1, chunk)
            except Exception:  # noqa: BLE001 - a failing consumer must not stop the relay
                self.on_output = None

    # -- input ----------------------------------------------------------------------------
    def input(self, data: bytes) -> None:
        if self._stop or not data:
            return
        try:
            attrs = termios.tcgetattr(self.slave)
        except (OSError, termios.error):
            return
        intr = attrs[6][termios.VINTR]
        if attrs[3] & termios.ISIG and intr not in (b"\0", 0) and intr in data:
            if self.foreground:
                self.interrupted = True   # the line discipline signals the child
            else:
                self.on_interrupt()
        mv = memoryview(data)
        while mv and not self._stop:
            try:
                _, w, _ = select.select([], [self.master], [], 0.5)
                if not w:
                    return   # nobody reads the terminal: drop what does not fit
                n = os.write(self.master, mv)
            except InterruptedError:
                continue
            except OSError:
                return
            mv = mv[n:]

    def resize(self, rows: int, cols: int) -> None:
        if not self._stop:
            try:
                _set_size(self.slave, int(rows), int(cols))
            except OSError:
                pass

    # -- end ------------------------------------------------------------------------------
    def unread(self) -> bytes:
        """Input typed at the terminal that nothing read (at most 64 KiB), taken out of it: a
        shell reads such typeahead as its next command lines, so the REPL does too. In
        canonical mode an unfinished line is in the line editor's buffer: turning ICANON off
        makes it readable as well."""
        out = bytearray()
        try:
            attrs = termios.tcgetattr(self.slave)
            raw = list(attrs)
            raw[3] &= ~(termios.ICANON | termios.ECHO)
            raw[6] = list(attrs[6])
            raw[6][termios.VMIN] = 0
            raw[6][termios.VTIME] = 0
            termios.tcsetattr(self.slave, termios.TCSANOW, raw)
            while len(out) < 65536:
                r, _, _ = select.select([self.slave], [], [], 0)
                if not r:
                    break
                chunk = os.read(self.slave, 65536 - len(out))
                if not chunk:
                    break
                out += chunk
        except (OSError, termios.error, ValueError):
            pass
        return bytes(out)

    def finish(self) -> bytes:
        """Collect what is still buffered, then close both ends (a background process that
        keeps the terminal open gets EIO from then on). Returns the input nobody read."""
        left = self.unread()
        self._drain_until = time.monotonic() + 0.5
        self._stop = True
        try:
            os.close(self.slave)   # the pump then reads to EIO unless a child holds it
        except OSError:
            pass
        self._thread.join(2.0)
        try:
            os.close(self.master)
        except OSError:
            pass
        return left
