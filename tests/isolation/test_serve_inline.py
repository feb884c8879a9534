"""Runs on the runner's serving thread: frames sent during a long run are handled (interrupt) or kept in order (the next request), close and EOF end a run."""

from __future__ import annotations

import sys
import time

import pytest

from agentic_bash import Sandbox
from agentic_bash.isolation.wire import WireClosed

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only"),
              pytest.mark.timeout(300)]


def _sandbox(level: str) -> Sandbox:
    try:
        return Sandbox(level)
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"{level} sandbox unavailable: {e}")


def _frames(ex, until: int, deadline: float = 30.0) -> list[dict]:
    """Frames from the sandbox until the reply to request ``until`` (headers only)."""
    got = []
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        msg = ex._reader.recv(max(0.0, end - time.monotonic()))
        if msg is None:
            break
        hdr, payload = msg
        got.append({**hdr, "_payload": payload})
        if hdr.get("id") == until and hdr.get("ev") in ("ok", "error", "result"):
            return got
    raise AssertionError(f"no reply to {until} in {deadline} s: {got}")


@pytest.mark.parametrize("level", ["namespace", "landlock"])
@pytest.mark.parametrize("script", ["for i in 1 2 3 4 5 6 7 8; do /bin/sleep 0.05; done; echo end",
                                    "s=$(date +%s%N); while (( $(date +%s%N) - s < 400000000 ));"
                                    " do :; done; echo end"])
def test_requests_sent_during_a_long_run_come_after_it_in_order(level: str, script: str) -> None:
    sb = _sandbox(level)
    try:
        ex = sb._ex
        with ex._lock:
            rid = ex._new_id()
            ex._send({"op": "run", "id": rid, "script": script, "stdin": False, "env": None,
                      "cwd": None, "timeout": 30, "stream": True})
            time.sleep(0.1)   # (the run is under way: the standby thread reads now)
            # an interrupt for a run that is over is ignored; the pings wait for the run
            ex._send({"op": "interrupt", "id": ex._new_id(), "target": rid - 1})
            p1, p2 = ex._new_id(), ex._new_id()
            ex._send({"op": "ping", "id": p1})
            ex._send({"op": "ping", "id": p2})
            got = _frames(ex, p2)
        order = [(g.get("ev"), g.get("id")) for g in got if g.get("ev") != "out"]
        assert order == [("result", rid), ("ok", p1), ("ok", p2)], got
        res = next(g for g in got if g.get("ev") == "result")
        out = b"".join(g["_payload"] for g in got if g.get("ev") == "out") or res["_payload"]
        assert res["exit_code"] == 0 and out.startswith(b"end\n"), got
        assert sb.run("echo after").stdout == "after\n"
    finally:
        sb.close()


@pytest.mark.parametrize("level", ["namespace", "landlock"])
@pytest.mark.parametrize("script", ["while :; do :; done", "/bin/sleep 30",
                                    "while :; do /bin/true; done"])
def test_an_interrupt_reaches_a_long_run(level: str, script: str) -> None:
    import threading

    sb = _sandbox(level)
    try:
        t = threading.Timer(0.3, sb.interrupt)
        t.start()
        start = time.monotonic()
        r = sb.run(script, timeout=60)
        t.join()
        assert r.exit_code == 130 and not r.timed_out, r
        assert time.monotonic() - start < 20
        assert sb.run("echo after").stdout == "after\n"
    finally:
        sb.close()


@pytest.mark.parametrize("level", ["namespace", "landlock"])
def test_close_during_a_long_run_ends_the_sandbox(level: str) -> None:
    sb = _sandbox(level)
    try:
        ex = sb._ex
        with ex._lock:
            rid = ex._new_id()
            ex._send({"op": "run", "id": rid, "script": "while :; do :; done", "stdin": False,
                      "env": None, "cwd": None, "timeout": 60, "stream": False})
            time.sleep(0.1)
            ex._send({"op": "close", "id": ex._new_id()})
            end = time.monotonic() + 30
            closed = False
            while time.monotonic() < end and not closed:
                try:
                    ex._reader.recv(1.0)
                except WireClosed:
                    closed = True
        assert closed   # the runner ended the run and exited; S1 went with it
    finally:
        sb.close()
