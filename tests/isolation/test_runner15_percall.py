"""Per-call paths of session 15 (runner15): a native wait on the runner's serving thread
watches the channel before the lend timer fires (no SIGALRM, no standby wake-up for a program
of a few tens of ms), and a wait whose budget has a waker sleeps until the program ends, an
interrupt, a close or the deadline instead of waking every 50 ms."""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest

from agentic_bash import Sandbox

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only"),
              pytest.mark.timeout(300)]


def _sandbox() -> Sandbox:
    try:
        return Sandbox("namespace")
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"namespace sandbox unavailable: {e}")


def _runner(sb: Sandbox) -> int:
    pids = [sb._ex.pid]
    for _ in range(3):
        with open(f"/proc/{pids[-1]}/task/{pids[-1]}/children") as f:
            kids = f.read().split()
        if not kids:
            break
        pids.append(int(kids[0]))
    return pids[-1]


def _switches(pid: int, tid: int) -> int:
    with open(f"/proc/{pid}/task/{tid}/status") as f:
        return sum(int(ln.split()[1]) for ln in f if ln.startswith("voluntary_ctxt"))


def _standby(pid: int) -> int | None:
    """The runner's standby thread: the one waiting in poll(2) while the sandbox is idle (the
    main thread waits in recvfrom, the others on futexes)."""
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/syscall") as f:
                if f.read().split()[0] == "7":   # (x86-64 poll)
                    return int(t)
        except (OSError, IndexError):
            pass
    return None


def test_back_to_back_programs_of_tens_of_ms_do_not_lend_the_channel() -> None:
    """`/bin/sleep 0.05` back to back: the wait watches the channel from 2 ms after its start
    (not 2 ms after a first 2 ms in C) and a timer its end re-armed is not kept for the next
    run, so the lend timer does not hand the channel to the standby thread (which woke 1.5-2
    times a call for it on the old tree, ~0.1 now), and the wait does not wake every 50 ms
    (6.5-6.9 sleeps of the main thread a call on the old tree, 4.0-4.8 now)."""
    if os.uname().machine != "x86_64":
        pytest.skip("the standby thread is found by its system call number (x86-64)")
    sb = _sandbox()
    try:
        runner = _runner(sb)
        for _ in range(10):
            sb.run("/bin/sleep 0.05")
        time.sleep(0.1)
        standby = _standby(runner)
        assert standby is not None
        m0, s0 = _switches(runner, runner), _switches(runner, standby)
        n = 30
        for _ in range(n):
            assert sb.run("/bin/sleep 0.05").exit_code == 0
        m1, s1 = _switches(runner, runner), _switches(runner, standby)
        assert (s1 - s0) / n < 0.6, ((m1 - m0) / n, (s1 - s0) / n)
        assert (m1 - m0) / n < 6.0, ((m1 - m0) / n, (s1 - s0) / n)
    finally:
        sb.close()


@pytest.mark.parametrize("before", ["burst", "sleeps", "idle"])
def test_a_long_program_still_ends_at_its_deadline_and_on_interrupt(before: str) -> None:
    """The longer rounds of a waker-backed wait: a timeout still ends `/bin/sleep 30` at the
    run's deadline, an interrupt (read by the channel watch, then the budget's waker) at once."""
    sb = _sandbox()
    try:
        for _ in range(100 if before == "burst" else 10):
            sb.run("echo hi" if before == "burst" else "/bin/sleep 0.02")
        if before == "idle":
            time.sleep(0.2)
        t = time.monotonic()
        r = sb.run("/bin/sleep 30", timeout=0.7)
        took = time.monotonic() - t
        assert r.timed_out and r.exit_code == 124, r
        assert took < 10, took
        timer = threading.Timer(0.4, sb.interrupt)
        timer.start()
        t = time.monotonic()
        try:
            r = sb.run("/bin/sleep 30; echo no", timeout=60)
        finally:
            timer.cancel()
        took = time.monotonic() - t
        assert r.exit_code == 130 and "no" not in r.stdout, r
        assert took < 10, took
        assert sb.run("echo after").stdout == "after\n"
    finally:
        sb.close()


def test_a_jobs_native_wait_still_ends_with_its_run() -> None:
    """A background job's wait (a job's budget also looks at its parents in check(): it keeps
    the 50 ms rounds) ends when the run that started it times out."""
    sb = _sandbox()
    try:
        t = time.monotonic()
        r = sb.run("( /bin/sleep 30; echo no ) & wait", timeout=0.7)
        took = time.monotonic() - t
        assert r.timed_out and "no" not in r.stdout, r
        assert took < 10, took
        assert sb.run("echo after").stdout == "after\n"
    finally:
        sb.close()


def test_close_during_a_long_program_ends_it() -> None:
    sb = _sandbox()
    out: list = []

    def run() -> None:
        try:
            out.append(sb.run("/bin/sleep 30", timeout=60))
        except Exception as e:  # noqa: BLE001
            out.append(e)

    th = threading.Thread(target=run)
    th.start()
    time.sleep(0.5)
    t = time.monotonic()
    sb.close()
    th.join(20)
    assert not th.is_alive()
    assert time.monotonic() - t < 15
