"""Framing between the host and a sandbox: a JSON header plus raw bytes, never pickle."""

# Security invariant: the host never unpickles anything that comes out of a sandbox; a
# compromised runner can at worst send malformed JSON, which the host treats as a crash.

from __future__ import annotations

import json
import socket
import struct
from typing import Any

__all__ = ["MAX_FRAME", "WireClosed", "recv_msg", "send_msg"]

_HDR = struct.Struct("!II")
MAX_FRAME = 1 << 30


class WireClosed(EOFError):
    """The other end is gone (EOF or a broken frame)."""


def send_msg(sock: socket.socket, header: dict[str, Any], payload: bytes = b"") -> None:
    h = json.dumps(header, separators=(",", ":")).encode()
    sock.sendall(_HDR.pack(len(h), len(payload)) + h + payload)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        try:
            chunk = sock.recv(min(n - len(buf), 1 << 20))
        except (ConnectionResetError, BrokenPipeError, OSError) as e:
            raise WireClosed(str(e)) from e
        if not chunk:
            raise WireClosed("connection closed")
        buf += chunk
    return bytes(buf)


def recv_msg(sock: socket.socket) -> tuple[dict[str, Any], bytes]:
    hl, pl = _HDR.unpack(_recv_exact(sock, _HDR.size))
    if hl > MAX_FRAME or pl > MAX_FRAME:
        raise WireClosed("oversized frame")
    try:
        header = json.loads(_recv_exact(sock, hl))
    except ValueError as e:
        raise WireClosed(f"malformed frame: {e}") from e
    if not isinstance(header, dict):
        raise WireClosed("malformed frame")
    return header, _recv_exact(sock, pl) if pl else b""
