"""Regression tests for what the session-8 contract fuzz found (issue 20): each a script that once broke the contract."""

from __future__ import annotations

import threading
import time

import psutil
import pytest

import agentic_bash as ab

MiB = 1 << 20


def _grows(sb: ab.Sandbox, script: str, timeout: float) -> tuple[ab.Result, float, float]:
    """The result, its wall time and the peak RSS growth (MiB) of this process meanwhile."""
    me = psutil.Process()
    base = me.memory_info().rss
    peak = [base]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.005):
            peak[0] = max(peak[0], me.memory_info().rss)
    t = threading.Thread(target=sample, daemon=True)
    t.start()
    t0 = time.monotonic()
    try:
        r = sb.run(script, timeout=timeout)
    finally:
        dt = time.monotonic() - t0
        stop.set()
        t.join()
    return r, dt, (peak[0] - base) / MiB


@pytest.mark.parametrize("script", ["tail -n1 < /dev/zero", "tail -c 100000000000 /dev/zero",
                                    "yes | tr -d '\\n' | tail -n 2"])
def test_tail_holds_at_most_the_held_cap(script: str) -> None:
    # tail kept every chunk of a line with no end: +805 MiB in a 2 s fuzz run, 1.3 GiB in 8 s
    # (tail -c with a huge count: 2.5 GiB); now GNU's "memory exhausted" past held_cap
    with ab.Sandbox(isolation="virtual") as sb:
        r, dt, grew = _grows(sb, script, 8)
        assert grew < 512, grew
        assert r.timed_out or "tail: memory exhausted" in r.stderr, r
        assert sb.run("echo ok", timeout=10).stdout == "ok\n"
