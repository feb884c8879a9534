"""The host<->sandbox framing: JSON headers plus raw bytes, EOF and garbage become WireClosed."""

from __future__ import annotations

import json
import socket
import struct

import pytest

from agentic_bash.isolation.wire import Reader, WireClosed, recv_msg, send_msg


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
    struct.pack("!II", 9, 0) + b'{"a":"\xff"}',     # not UTF-8
    struct.pack("!II", 10, 0) + b'{"a":1} []',      # an object and more
    struct.pack("!II", 8, 0) + b'{"a":1}x',         # an object and a stray byte
    struct.pack("!II", 1, 0) + b"{",                # cut short
])
def test_garbage_is_a_closed_wire(frame: bytes) -> None:
    a, b = socket.socketpair()
    a.sendall(frame)
    with pytest.raises(WireClosed):
        recv_msg(b)
    a.sendall(frame)   # the host's buffered reader too
    with pytest.raises(WireClosed):
        Reader(b).recv(5)
    a.close()
    b.close()


def test_a_header_nested_past_the_recursion_limit_is_a_closed_wire() -> None:
    # (a broken frame from the sandbox, not a RecursionError out of the host's call; the limit
    # is the process's: the in-process executor raises it)
    import sys
    depth = sys.getrecursionlimit() + 100
    body = b'{"a":' + b"[" * depth + b"]" * depth + b"}"
    frame = struct.pack("!II", len(body), 0) + body
    a, b = socket.socketpair()
    a.sendall(frame)
    with pytest.raises(WireClosed):
        recv_msg(b)
    a.sendall(frame)
    with pytest.raises(WireClosed):
        Reader(b).recv(5)
    a.close()
    b.close()


@pytest.mark.parametrize("header", [
    {"ev": "result", "exit_code": 0, "duration": 1.5e-05, "cwd": "/w\u00e9\u2028", "id": 7},
    {"f": [float("inf"), -0.0, 1e300, None, True, False, "", "\x00\ud800"], "n": {"k": {}}},
])
def test_headers_encode_and_decode_as_json_does(header: dict) -> None:
    from agentic_bash.isolation import wire
    text = wire._encode(header)
    assert text == json.dumps(header, separators=(",", ":"))
    assert wire._parse_header(text.encode("utf-8", "surrogatepass")) == json.loads(text)
    # white space around it (no encoder of ours writes it) is read as before
    assert wire._parse_header(b" \n" + text.encode("utf-8", "surrogatepass") + b" ") == json.loads(text)
    with pytest.raises(TypeError):
        wire._encode({"x": object()})


def test_reader_reassembles_frames_split_anywhere() -> None:
    import random

    from agentic_bash.isolation.wire import Reader
    a, b = socket.socketpair()
    frames = [({"id": i, "ev": "out"}, bytes([i % 256]) * (i * 37)) for i in range(40)]
    blob = bytearray()
    for h, p in frames:
        import json
        hj = json.dumps(h, separators=(",", ":")).encode()
        blob += struct.pack("!II", len(hj), len(p)) + hj + p
    rnd = random.Random(7)
    r = Reader(b)
    got = []
    i = 0
    while i < len(blob):
        n = rnd.randint(1, 50)
        a.sendall(bytes(blob[i:i + n]))
        i += n
        while True:
            f = r.recv(0)
            if f is None:
                break
            got.append(f)
    assert got == frames
    assert r.recv(0) is None  # nothing pending: a poll with nothing there consumes nothing
    a.close()
    with pytest.raises(WireClosed):
        r.recv(1)
    b.close()


def test_start_up_fds_go_to_their_frame_and_are_close_on_exec() -> None:
    import fcntl
    import os

    from agentic_bash.isolation.wire import Reader
    a, b = socket.socketpair()
    r1, w1 = os.pipe()
    send_msg(a, {"ev": "first"})
    send_msg(a, {"ev": "with_fd"}, b"x", fds=[r1])
    send_msg(a, {"ev": "after"})
    r = Reader(b, want_fds=True)
    h1, _ = r.recv(5)
    h2, p2 = r.recv(5)
    h3, _ = r.recv(5)
    assert "fds" not in h1 and "fds" not in h3 and p2 == b"x"
    (fd,) = h2["fds"]
    assert fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC
    os.write(w1, b"ok")
    assert os.read(fd, 2) == b"ok"
    for x in (fd, r1, w1):
        os.close(x)
    a.close()
    b.close()


def test_an_exception_while_taking_bytes_marks_the_reader_torn() -> None:
    from agentic_bash.isolation.wire import Reader

    class Flaky:
        def __init__(self, s: socket.socket) -> None:
            self.s = s

        def recv_into(self, buf: object) -> int:
            self.s.recv_into(buf)  # type: ignore[arg-type]
            raise KeyboardInterrupt

        def fileno(self) -> int:
            return self.s.fileno()
    a, b = socket.socketpair()
    send_msg(a, {"id": 1})
    r = Reader(Flaky(b))  # type: ignore[arg-type]
    with pytest.raises(KeyboardInterrupt):
        r.recv(1)
    assert r.torn
    with pytest.raises(WireClosed):
        r.recv(0)
    a.close()
    b.close()


def test_blocking_reader_and_big_payloads_keep_frames_whole() -> None:
    """The sandbox's reader waits in recv itself; a payload over 64 KiB goes out in two
    sends and a reader with a smaller buffer still gets every frame whole, in order."""
    import threading

    from agentic_bash.isolation.wire import Reader
    a, b = socket.socketpair()
    frames = [({"id": i}, bytes([i]) * n) for i, n in enumerate((0, 1, 70_000, 5, 600_000, 3))]

    def writer() -> None:
        for h, p in frames:
            send_msg(a, h, p)
        a.shutdown(socket.SHUT_WR)
    t = threading.Thread(target=writer)
    t.start()
    r = Reader(b, blocking=True)
    got = [r.recv() for _ in frames]
    t.join(10)
    assert got == frames
    with pytest.raises(WireClosed):
        r.recv()
    a.close()
    b.close()


def test_reader_on_a_closed_socket_raises_like_select() -> None:
    from agentic_bash.isolation.wire import Reader
    a, b = socket.socketpair()
    r = Reader(b)
    assert r.recv(0) is None
    b.close()
    with pytest.raises(ValueError):
        r.recv(0)
    a.close()


def test_result_header_leaves_defaults_out_and_the_host_reads_them_back() -> None:
    import dataclasses

    from agentic_bash.errors import PolicyViolation
    from agentic_bash.executors.sandboxed import SandboxedExecutor
    from agentic_bash.isolation.runner import result_header
    from agentic_bash.result import Result

    plain = Result(stdout_bytes=b"hi\n", stderr_bytes=b"", exit_code=0, cwd="/w")
    full = Result(stdout_bytes=b"o", stderr_bytes=b"e", exit_code=3, cwd="/w", duration=0.5,
                  timed_out=True, truncated=True, files_created=("/w/a",),
                  files_modified=("/w/b",), files_deleted=("/w/c",), cpu_time=0.25,
                  peak_memory=1234, extra={"k": 1}, limit_exceeded="timeout",
                  violations=(PolicyViolation("syscall", "ptrace"),), files_truncated=True)
    h, body = result_header(plain)
    assert set(h) == {"ev", "exit_code", "duration", "cwd", "stdout_len"}, h
    for r in (plain, full):
        h, body = result_header(r)
        h = json.loads(json.dumps(h))
        ex = SandboxedExecutor.__new__(SandboxedExecutor)
        ex._restart_reason = None
        back = SandboxedExecutor._result(ex, h, body)
        for f in ("stdout_bytes", "stderr_bytes", "exit_code", "cwd", "duration", "timed_out",
                  "truncated", "files_created", "files_modified", "files_deleted", "cpu_time",
                  "peak_memory", "extra", "limit_exceeded"):
            assert getattr(back, f) == getattr(r, f), f
        # every field is set (the host fills the Result slot by slot: a field added to
        # Result but not there would be missing) and read back as it was (a violation is an
        # exception: compared by kind and detail)
        assert type(back) is Result
        for f in dataclasses.fields(Result):
            got, want = getattr(back, f.name), getattr(r, f.name)
            if f.name == "violations":
                got, want = [(v.kind, v.detail) for v in got], [(v.kind, v.detail) for v in want]
            assert got == want, f.name
