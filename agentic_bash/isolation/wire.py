"""Framing between the host and a sandbox: a JSON header plus raw bytes, never pickle."""

# Security invariant: the host never unpickles anything that comes out of a sandbox; a
# compromised runner can at worst send malformed JSON, which the host treats as a crash.
#
# Protocol (integrity of a session rests on it): every request the host sends carries an
# integer "id"; every reply to it ("ok", "error", "result") and every event it causes ("out")
# echoes that id. The host drops frames whose id is not the call it is waiting for, so a call
# abandoned on the host side (KeyboardInterrupt, a failed callback, cancellation) can never
# hand its output or its reply to a later call. "interrupt" names the run it is meant for in
# "target" and is ignored by the sandbox if that run is no longer the current one. Frames
# without an id are the start-up handshake ("ready", fds) and "fatal". Other helpers add keys
# to headers; the framing and these rules do not change.

from __future__ import annotations

import array
import errno
import json
import select
import socket
import resource
import struct
import threading
import time
from time import monotonic as _monotonic
from typing import Any

from .fdwait import POLL_EVENTS

__all__ = ["MAX_FRAME", "Reader", "WireClosed", "recv_msg", "send_msg"]

_HDR = struct.Struct("!II")
MAX_FRAME = 1 << 30
_CHUNK = 1 << 20
_RECV_BUF = 1 << 18   # what one recv takes at most (the buffer is made once per Reader)
_MAX_FDS = 16
_JOIN_MAX = 1 << 16
# one encoder, not one per frame (json.dumps builds a new one for non-default separators)
_encode = json.JSONEncoder(separators=(",", ":")).encode
try:
    from _json import encode_basestring_ascii as _ascii
    from _json import make_encoder as _make_encoder
except ImportError:  # pragma: no cover - CPython has them
    _make_encoder = None
if _make_encoder is not None:
    # JSONEncoder.encode's own C encoder made once instead of per frame, without its cycle
    # check (headers are our own flat dicts; a cycle would be RecursionError, not ValueError):
    # 1.4 against 2.0 us a header, two headers a round trip
    _c_encode = _make_encoder(None, json.JSONEncoder().default, _ascii, None, ":", ",",
                              False, False, True)

    def _encode(header: Any, _join: Any = "".join, _enc: Any = _c_encode) -> str:  # noqa: F811
        return _join(_enc(header, 0))


class WireClosed(EOFError):
    """The other end is gone (EOF or a broken frame)."""


def send_msg(sock: socket.socket, header: dict[str, Any], payload: bytes = b"",
             fds: list[int] | tuple[int, ...] = ()) -> None:
    """One frame; ``fds`` travel with its first byte (SCM_RIGHTS) and the header says how
    many (``"nfds"``), so a ``Reader`` with ``want_fds`` hands them to this frame."""
    if fds:
        header = {**header, "nfds": len(fds)}
    h = _encode(header).encode()
    if len(payload) > _JOIN_MAX and not fds:
        # a big payload is not copied into one buffer: two sends, the frame stays contiguous
        # on the stream (every sender holds a lock around send_msg)
        sock.sendall(_HDR.pack(len(h), len(payload)) + h)
        sock.sendall(payload)
        return
    data = _HDR.pack(len(h), len(payload)) + h + payload
    if fds:
        n = sendmsg_fds(sock, [data], fds)
        data = data[n:]
        if not data:
            return
    sock.sendall(data)


FLIGHT_MARGIN = 512
"""Descriptors a sandbox's processes may have in flight below what our own senders may: see
``sendmsg_fds`` and ``flight_headroom``."""
_flight_lock = threading.Lock()


def sendmsg_fds(sock: socket.socket, buffers: list[bytes], fds: list[int] | tuple[int, ...]) -> int:
    """``sock.sendmsg`` with ``fds`` (SCM_RIGHTS), robust to a workload's descriptors in flight.

    Linux counts descriptors in flight over unix sockets per user and refuses a send
    (ETOOMANYREFS) once the count passes the *sender's* soft RLIMIT_NOFILE. A sandbox
    workload runs as the caller's user (unprivileged) and could queue enough to make the
    caller's next sandbox start, which passes a socket, fail. The sandbox keeps its processes'
    limit ``FLIGHT_MARGIN`` below the host's hard limit (``flight_headroom``); a send refused
    here is retried once with this process's soft limit raised to its hard one for the
    duration of the call."""
    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())]
    try:
        return sock.sendmsg(buffers, anc)
    except OSError as e:
        if e.errno != errno.ETOOMANYREFS:
            raise
        first = e
    with _flight_lock:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        top = _nr_open() if hard == resource.RLIM_INFINITY else hard
        if top <= soft:
            raise first
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (top, hard))
        except (OSError, ValueError):
            raise first from None
        try:
            return sock.sendmsg(buffers, anc)
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def flight_headroom(host_hard: int) -> None:
    """In a sandbox, before its workload starts: lower this process's RLIMIT_NOFILE (inherited
    by every program) to ``FLIGHT_MARGIN`` below ``host_hard``, the limit the host's senders
    may raise themselves to, so the descriptors a workload can put in flight (at most its own
    soft limit plus one message's 253) never reach it."""
    if host_hard == resource.RLIM_INFINITY:
        host_hard = _nr_open()
    cap = host_hard - FLIGHT_MARGIN if host_hard >= 2 * FLIGHT_MARGIN else host_hard // 2
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > cap:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, cap), cap))
        except (OSError, ValueError):
            pass


def _nr_open() -> int:
    try:
        with open("/proc/sys/fs/nr_open", "rb") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 1 << 20


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        try:
            chunk = sock.recv(min(n - len(buf), _CHUNK))
        except (ConnectionResetError, BrokenPipeError, OSError) as e:
            raise WireClosed(str(e)) from e
        if not chunk:
            raise WireClosed("connection closed")
        buf += chunk
    return bytes(buf)


_decoder = json.JSONDecoder()
_decode = _decoder.decode
_scan = _decoder.scan_once   # (the C scanner decode() calls, without its two Python frames)


def _parse_header(raw: bytes | bytearray) -> dict[str, Any]:
    # (json.loads of bytes first guesses the encoding: 1.5 vs 1.1 us a frame; the frames
    # are UTF-8, and a byte that is not is a malformed frame: UnicodeDecodeError is a
    # ValueError)
    try:
        text = raw.decode()
        try:
            # the scanner alone when it takes the whole text (our encoder's output: 0.8 vs
            # 1.4 us a header); anything else (white space, an error to word) goes through
            # decode() as before
            header, end = _scan(text, 0)
        except StopIteration:
            end = -1
        if end != len(text):
            header = _decode(text)
    except (ValueError, RecursionError) as e:
        # (RecursionError: a header nested deeper than the C scanner's recursion limit, from
        # a sandbox that is not ours to trust: a broken frame, never an exception of the
        # host's call)
        raise WireClosed(f"malformed frame: {e}") from e
    if not isinstance(header, dict):
        raise WireClosed("malformed frame")
    return header


def recv_msg(sock: socket.socket) -> tuple[dict[str, Any], bytes]:
    """One frame, read exactly (the sandbox side; the host uses a ``Reader``)."""
    hl, pl = _HDR.unpack(_recv_exact(sock, _HDR.size))
    if hl > MAX_FRAME or pl > MAX_FRAME:
        raise WireClosed("oversized frame")
    header = _parse_header(_recv_exact(sock, hl))
    return header, _recv_exact(sock, pl) if pl else b""


class Reader:
    """The host's buffered reading end. Waiting (``poll``) is the only blocking step and
    consumes nothing, so an exception raised while waiting (KeyboardInterrupt) loses no byte.
    An exception that escapes while bytes are being taken off the socket leaves ``torn``
    set: the stream position is then unknown and the channel must not be used again.
    ``blocking=True`` (the sandbox side, one reader thread, no signals to fear) waits in
    ``recv`` itself: one system call per frame instead of ``recv_msg``'s two or three."""

    def __init__(self, sock: socket.socket, *, want_fds: bool = False,
                 blocking: bool = False) -> None:
        self.sock = sock
        self.buf = bytearray()
        self.torn = False
        self.want_fds = want_fds
        self.blocking = blocking
        self.fds: list[int] = []  # received, not yet handed to a frame
        # received into one buffer made once: sock.recv(1 MiB) allocates (mmap) and shrinks
        # a 1 MiB object for every frame
        self._chunk = bytearray(_RECV_BUF)
        self._view = memoryview(self._chunk)
        self._poll: Any = None
        self._poll_fd = -1

    def _frame(self) -> tuple[dict[str, Any], bytes] | None:
        buf = self.buf
        if len(buf) < _HDR.size:
            return None
        hl, pl = _HDR.unpack_from(buf)
        if hl > MAX_FRAME or pl > MAX_FRAME:
            raise WireClosed("oversized frame")
        end = _HDR.size + hl + pl
        if len(buf) < end:
            return None
        header = _parse_header(buf[_HDR.size:_HDR.size + hl])
        if pl:
            # (one copy: a slice of the bytearray and then bytes() of it were two, 32 MiB
            # each for a run's cut output, slow for a host short of CPU)
            with memoryview(buf) as mv:
                payload = bytes(mv[_HDR.size + hl:end])
        else:
            payload = b""
        del buf[:end]
        n = header.get("nfds")
        if isinstance(n, int) and n > 0:
            header["fds"], self.fds = self.fds[:n], self.fds[n:]
        return header, payload

    def _fill(self, flags: int = 0) -> None:
        try:
            if self.want_fds:
                # fds from the sandbox are close-on-exec here: no child of the host inherits
                # a way into a sandbox's files or network namespace
                n, anc, _, _ = self.sock.recvmsg_into(
                    [self._view], socket.CMSG_SPACE(_MAX_FDS * array.array("i").itemsize),
                    getattr(socket, "MSG_CMSG_CLOEXEC", 0) | flags)
                for level, kind, raw in anc:
                    if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                        a = array.array("i")
                        a.frombytes(raw[:len(raw) - len(raw) % a.itemsize])
                        self.fds.extend(a)
            else:
                n = (self.sock.recv_into(self._view, 0, flags) if flags
                     else self.sock.recv_into(self._view))
            if n:
                self.buf += self._view[:n]
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            raise WireClosed(str(e)) from e
        except BaseException:
            self.torn = True  # maybe after the kernel handed us bytes we did not keep
            raise
        if not n:
            raise WireClosed("connection closed")

    def _poll_for(self) -> Any:
        """A poll object on the socket's fd (made again if the fd changed)."""
        fd = self.sock.fileno()
        if fd < 0:  # closed under us (as select.select would say)
            raise ValueError("file descriptor cannot be a negative integer")
        if self._poll is None or self._poll_fd != fd:
            self._poll = select.poll()
            self._poll.register(fd, POLL_EVENTS)
            self._poll_fd = fd
        return self._poll

    def _wait(self, wait: float | None) -> bool:
        poll = self._poll_for()
        ms = None if wait is None else max(0, int(wait * 1000 + 0.999))
        return bool(poll.poll(ms))

    def recv(self, timeout: float | None = None) -> tuple[dict[str, Any], bytes] | None:
        """The next frame, or None once ``timeout`` seconds passed without one."""
        if self.torn:
            raise WireClosed("the channel was interrupted in the middle of a frame")
        deadline = None
        while True:
            if self.buf:   # (empty between frames, the usual case: nothing to look at)
                f = self._frame()
                if f is not None:
                    return f
            if timeout is None:
                if self.blocking:
                    self._fill()
                    continue
                ms = None
            else:
                now = _monotonic()
                if deadline is None:
                    deadline = now + max(0.0, timeout)
                wait = deadline - now
                ms = 0 if wait <= 0 else int(wait * 1000 + 0.999)
            # (_wait, inline: the per-call path)
            poll = self._poll
            if poll is None or self._poll_fd != self.sock.fileno():
                poll = self._poll_for()
            if not poll.poll(ms):
                return None
            self._fill()

    def take(self) -> tuple[dict[str, Any], bytes] | None:
        """A frame already received, or None (never waits)."""
        if self.torn:
            raise WireClosed("the channel was interrupted in the middle of a frame")
        return self._frame()

    def fill_nowait(self) -> None:
        """Take what the socket holds now (an event loop saw it readable); never blocks."""
        self._fill(socket.MSG_DONTWAIT)

    def close_fds(self) -> None:
        import os
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = []
