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
import json
import socket
import struct
import time
from typing import Any

from .fdwait import readable

__all__ = ["MAX_FRAME", "Reader", "WireClosed", "recv_msg", "send_msg"]

_HDR = struct.Struct("!II")
MAX_FRAME = 1 << 30
_CHUNK = 1 << 20
_MAX_FDS = 16


class WireClosed(EOFError):
    """The other end is gone (EOF or a broken frame)."""


def send_msg(sock: socket.socket, header: dict[str, Any], payload: bytes = b"",
             fds: list[int] | tuple[int, ...] = ()) -> None:
    """One frame; ``fds`` travel with its first byte (SCM_RIGHTS) and the header says how
    many (``"nfds"``), so a ``Reader`` with ``want_fds`` hands them to this frame."""
    if fds:
        header = {**header, "nfds": len(fds)}
    h = json.dumps(header, separators=(",", ":")).encode()
    data = _HDR.pack(len(h), len(payload)) + h + payload
    if fds:
        n = sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                   array.array("i", fds).tobytes())])
        data = data[n:]
        if not data:
            return
    sock.sendall(data)


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


def _parse_header(raw: bytes) -> dict[str, Any]:
    try:
        header = json.loads(raw)
    except ValueError as e:
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
    """The host's buffered reading end. Waiting (``select``) is the only blocking step and
    consumes nothing, so an exception raised while waiting (KeyboardInterrupt) loses no byte.
    An exception that escapes while bytes are being taken off the socket leaves ``torn``
    set: the stream position is then unknown and the channel must not be used again."""

    def __init__(self, sock: socket.socket, *, want_fds: bool = False) -> None:
        self.sock = sock
        self.buf = bytearray()
        self.torn = False
        self.want_fds = want_fds
        self.fds: list[int] = []  # received, not yet handed to a frame

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
        header = _parse_header(bytes(buf[_HDR.size:_HDR.size + hl]))
        payload = bytes(buf[_HDR.size + hl:end])
        del buf[:end]
        n = header.get("nfds")
        if isinstance(n, int) and n > 0:
            header["fds"], self.fds = self.fds[:n], self.fds[n:]
        return header, payload

    def _fill(self) -> None:
        try:
            if self.want_fds:
                # fds from the sandbox are close-on-exec here: no child of the host inherits
                # a way into a sandbox's files or network namespace
                data, anc, _, _ = self.sock.recvmsg(
                    _CHUNK, socket.CMSG_SPACE(_MAX_FDS * array.array("i").itemsize),
                    getattr(socket, "MSG_CMSG_CLOEXEC", 0))
                for level, kind, raw in anc:
                    if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                        a = array.array("i")
                        a.frombytes(raw[:len(raw) - len(raw) % a.itemsize])
                        self.fds.extend(a)
            else:
                data = self.sock.recv(_CHUNK)
            if data:
                self.buf += data
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            raise WireClosed(str(e)) from e
        except BaseException:
            self.torn = True  # maybe after the kernel handed us bytes we did not keep
            raise
        if not data:
            raise WireClosed("connection closed")

    def recv(self, timeout: float | None = None) -> tuple[dict[str, Any], bytes] | None:
        """The next frame, or None once ``timeout`` seconds passed without one."""
        if self.torn:
            raise WireClosed("the channel was interrupted in the middle of a frame")
        deadline = None
        while True:
            f = self._frame()
            if f is not None:
                return f
            if timeout is not None:
                now = time.monotonic()
                if deadline is None:
                    deadline = now + max(0.0, timeout)
                wait: float | None = max(0.0, deadline - now)
            else:
                wait = None
            r = readable([self.sock], wait)
            if not r:
                return None
            self._fill()

    def close_fds(self) -> None:
        import os
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = []
