"""Per-call paths of session 14 (echo14): the runner's lazily armed lend timer, pid 1's descriptor guard made busy by a run's first program, the host's result frame read without looking at fields a plain run leaves out."""

from __future__ import annotations

import os
import sys
import time

import pytest

from agentic_bash import Sandbox
from agentic_bash.executors.sandboxed import SandboxedExecutor
from agentic_bash.result import Result

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only"),
              pytest.mark.timeout(300)]


def _sandbox() -> Sandbox:
    try:
        return Sandbox("namespace")
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"namespace sandbox unavailable: {e}")


def _frames(ex, until: int, deadline: float = 30.0) -> list[dict]:
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


@pytest.mark.parametrize("before", ["burst", "idle"])
def test_frames_sent_during_a_long_builtin_run_are_read_by_the_standby_thread(before: str) -> None:
    """The lend timer, armed lazily, still hands the channel to the standby thread during a
    long run: an interrupt sent 0.3 s into a builtin loop ends it (only the standby thread
    reads it then), and a ping sent after it is answered after the run, in order."""
    sb = _sandbox()
    try:
        for _ in range(300):
            sb.run("echo hi")
        if before == "idle":
            time.sleep(0.2)   # (a timer armed by the burst fired between runs)
        ex = sb._ex
        with ex._lock:
            rid = ex._new_id()
            ex._send({"op": "run", "id": rid, "script": "while :; do :; done; echo no",
                      "timeout": 60})
            time.sleep(0.3)
            ex._send({"op": "interrupt", "target": rid})
            p1 = ex._new_id()
            ex._send({"op": "ping", "id": p1})
            got = _frames(ex, p1)
        order = [(g.get("ev"), g.get("id")) for g in got]
        assert order == [("result", rid), ("ok", p1)], got
        assert got[0]["exit_code"] == 130, got[0]
        assert sb.run("echo after").stdout == "after\n"
    finally:
        sb.close()


def _runner(sb: Sandbox) -> int:
    pids = [sb._ex.pid]
    for _ in range(3):
        with open(f"/proc/{pids[-1]}/task/{pids[-1]}/children") as f:
            kids = f.read().split()
        if not kids:
            break
        pids.append(int(kids[0]))
    return pids[-1]


def _sleeps(pid: int) -> int:
    """Voluntary context switches of every thread of ``pid`` so far (a thread that blocks and
    is woken again counts one)."""
    n = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/status") as f:
                n += sum(int(ln.split()[1]) for ln in f if ln.startswith("voluntary_ctxt"))
        except OSError:
            pass
    return n


def test_calls_at_an_agents_pace_leave_no_lend_timer_armed() -> None:
    """A run after a pause disarms the lend timer at its end (only a burst of runs keeps it
    armed): an armed timer firing in every pause woke the runner's main and standby threads,
    ~4.2 sleeps a call 50 ms apart against ~2.2."""
    sb = _sandbox()
    try:
        runner = _runner(sb)
        for _ in range(300):   # a burst first: the timer is kept armed ...
            sb.run("echo hi")
        time.sleep(0.1)        # ... and fires once in this pause
        before = _sleeps(runner)
        n = 30
        for _ in range(n):
            time.sleep(0.05)
            sb.run("echo hi")
        time.sleep(0.05)
        per_call = (_sleeps(runner) - before) / n
        assert per_call < 3.4, per_call
    finally:
        sb.close()


def test_many_short_runs_then_long_ones_each_time_out() -> None:
    sb = _sandbox()
    try:
        for _ in range(5):
            for _ in range(100):
                assert sb.run("echo hi").stdout == "hi\n"
            t = time.monotonic()
            r = sb.run("while :; do :; done", timeout=0.3)
            assert r.timed_out and r.exit_code == 124, r
            assert time.monotonic() - t < 20
    finally:
        sb.close()


def _scheduled(pid: int) -> int:
    with open(f"/proc/{pid}/task/{pid}/schedstat") as f:
        return int(f.read().split()[2])


def test_the_guard_looks_through_a_runs_later_programs() -> None:
    """pid 1's descriptor guard turns busy at a run's first program (not at the request):
    after that program exits, a second program of the same run is still looked at."""
    sb = _sandbox()
    try:
        ex = sb._ex
        if not ex._resources.cfg.get("fd_guard"):
            pytest.skip("pid 1 runs the memory watchdog here, not the descriptor guard alone")
        pid1 = ex.pid
        with open(f"/proc/{pid1}/status") as f:
            nspid = [ln for ln in f if ln.startswith("NSpid:")][0].split()
        if nspid[-1] != "1":
            pytest.skip("pid 1 is not the channel's process here")
        sb.run("/bin/true")
        time.sleep(1.5)   # (quiet: the guard waits on its eventfd)
        before = _scheduled(pid1)
        r = sb.run("/bin/true; /bin/sleep 0.3; /bin/sleep 1")
        assert r.exit_code == 0
        # (~10 looks during the last second; a guard gone quiet after the first program,
        # with nothing to wake it again, would be scheduled once or twice)
        assert _scheduled(pid1) - before >= 4, _scheduled(pid1) - before
        time.sleep(1.5)
        before = _scheduled(pid1)
        for _ in range(10):   # builtins only: no busy flag, no wake-up
            time.sleep(0.15)
            sb.run("echo hi")
        assert _scheduled(pid1) - before < 8, _scheduled(pid1) - before
    finally:
        sb.close()


class _Ex:
    _restart_reason: str | None = None


def _result(h: dict, payload: bytes = b"", restart: str | None = None) -> Result:
    ex = _Ex()
    ex._restart_reason = restart
    r = SandboxedExecutor._result(ex, h, payload)  # type: ignore[arg-type]
    assert type(r) is Result
    return r


def test_a_plain_result_frame_gets_every_default() -> None:
    h = {"ev": "result", "id": 3, "exit_code": 1, "duration": 0.5, "cwd": "/w",
         "stdout_len": 3, "cpu_time": 0.25, "peak_memory": 7}
    r = _result(h, b"hi\nerr")
    assert r == Result(stdout_bytes=b"hi\n", stderr_bytes=b"err", exit_code=1, duration=0.5,
                       cwd="/w", cpu_time=0.25, peak_memory=7)
    r2 = _result(h, b"hi\nerr")
    assert r.extra == {} and r.extra is not r2.extra   # (a dict of its own per result)


def test_other_fields_and_a_restart_take_the_full_path() -> None:
    h = {"ev": "result", "id": 3, "exit_code": 124, "duration": 0.5, "cwd": "/w",
         "stdout_len": 0, "timed_out": True, "files_created": ["/w/a"],
         "violations": [["limit", "x"]], "limit_exceeded": "timeout", "extra": {"k": 1}}
    r = _result(h)
    assert (r.timed_out, r.files_created, r.limit_exceeded, r.extra) == (
        True, ("/w/a",), "timeout", {"k": 1})
    assert [(v.kind, v.detail) for v in r.violations] == [("limit", "x")]
    plain = {"ev": "result", "id": 4, "exit_code": 0, "duration": 0.1, "cwd": "/w",
             "stdout_len": 0}
    r = _result(plain, restart="the sandbox process died")
    assert r.restarted and r.extra == {"restart_reason": "the sandbox process died"}
    # an unknown key (a newer runner's) is no reason to drop the known ones
    r = _result({**plain, "truncated": True, "something_new": 1})
    assert r.truncated and not r.restarted
