"""The host<->sandbox framing: JSON headers plus raw bytes, EOF and garbage become WireClosed."""

from __future__ import annotations

import socket
import struct

import pytest

from agentic_bash.isolation.wire import WireClosed, recv_msg, send_msg


def test_roundtrip_and_eof() -> None:
    a, b = socket.socketpair()
    send_msg(a, {"op": "run", "n": 1}, b"\x00\xffpayload")
    send_msg(a, {"empty": True})
    assert recv_msg(b) == ({"op": "run", "n": 1}, b"\x00\xffpayload")
    assert recv_msg(b) == ({"empty": True}, b"")
    a.close()
    with pytest.raises(WireClosed):
        recv_msg(b)
    b.close()


@pytest.mark.parametrize("frame", [
    struct.pack("!II", 5, 0) + b"nojs!",            # not JSON
    struct.pack("!II", 2, 0) + b"[]",               # JSON but not an object
    struct.pack("!II", (1 << 30) + 1, 0),           # oversized
])
def test_garbage_is_a_closed_wire(frame: bytes) -> None:
    a, b = socket.socketpair()
    a.sendall(frame)
    with pytest.raises(WireClosed):
        recv_msg(b)
    a.close()
    b.close()
