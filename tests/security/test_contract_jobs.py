"""The run contract for background jobs (issue 20): storms end at the deadline, jobs keep their run's deadline, no deadlock."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

import agentic_bash as ab


def _namespace_ok() -> bool:
    from agentic_bash.isolation.plan import plan
    from agentic_bash.isolation.probe import probe
    return plan("namespace", probe()).level == "namespace"


MODES = ["virtual", pytest.param("namespace", marks=pytest.mark.skipif(
    not _namespace_ok(), reason="kernel sandbox unavailable"))]

# A thread that exits while another builds sys._current_frames() and a collection inside it
# runs a finalizer that gives up the GIL: CPython 3.11 deadlocks both (gh-106883). This is
# the shape of the fork-bomb hang (the watchdog looks at frames while job threads end).
_DEADLOCK = textwrap.dedent("""
    import sys, threading, time
    from agentic_bash.limits import current_frames
    class G:
        __slots__ = ("me", "__weakref__")
        def __del__(self):
            time.sleep(0)  # (gives up the GIL inside the collection)
    def garbage():
        g = G(); g.me = g
    stop = time.monotonic() + 3
    def churn():
        while time.monotonic() < stop:
            ts = [threading.Thread(target=garbage) for _ in range(20)]
            for t in ts: t.start()
            for t in ts: t.join()
    n = [0]
    def frames():
        while time.monotonic() < stop:
            garbage(); current_frames(); n[0] += 1
    th = [threading.Thread(target=churn) for _ in range(2)] + [threading.Thread(target=frames)]
    for t in th: t.start()
    for t in th: t.join()
    print("done", n[0] > 0)
""")


def test_looking_at_frames_while_threads_exit_never_deadlocks() -> None:
    # sys._current_frames in place of current_frames hung in 3 of 4 runs (no answer in 15 s)
    p = subprocess.run([sys.executable, "-c", _DEADLOCK], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "done True", (p.stdout, p.stderr[-2000:])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("script", ["(while :; do :; done) & sleep 100 & echo started",
                                    "f(){ while :; do :; done; }; f & g(){ f & }; g & echo started"])
def test_jobs_end_by_the_deadline_of_the_run_that_started_them(mode: str, script: str) -> None:
    # (they got Limits.timeout, 300 s, and kept a thread busy for five minutes)
    with ab.Sandbox(isolation=mode) as sb:
        t0 = time.monotonic()
        r = sb.run(script, timeout=1)
        assert r.stdout == "started\n" and not r.timed_out, r
        running = None
        while time.monotonic() - t0 < 20:
            running = sb.run("jobs -r", timeout=10).stdout
            if not running:
                break
            time.sleep(0.1)
        assert not running, running
        assert time.monotonic() - t0 < 8  # (1 s and the polling; 300 s before)
        assert sb.run("echo ok", timeout=10).stdout == "ok\n"
