"""Session 13 (issue 20): a cancel reaches background jobs and native waits at once, and a timed-out run's leftovers are ended without a fixed grace."""

from __future__ import annotations

import io
import os
import signal
import sys
import threading
import time

import psutil
import pytest

import agentic_bash as ab
from agentic_bash import limits
from agentic_bash.errors import LimitExceeded
from agentic_bash.isolation.fdwait import readable
from test_contract_found9 import _namespace_ok

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only"),
              pytest.mark.timeout(300)]


def _poll(pred, limit: float = 20.0) -> bool:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.01)
    return pred()


# -- the cancel goes down the job tree at once --------------------------------------------------
# Before: a job's budget learned that the run (or the job) that started it was cancelled only
# when it next looked (its charges, a 50 ms poll in sleep, a native wait's 50 ms round):
# `( sleep 100 & wait )` returned 58-63 ms past its timeout.

def test_a_cancel_reaches_every_job_budget_below_it_without_a_check() -> None:
    from agentic_bash.shell.jobs import _JobBudget
    lim = ab.Limits(timeout=None)
    run = limits.Budget(lim)
    first = _JobBudget(lim, run, native=True)
    nested = _JobBudget(lim, first)
    deeper = _JobBudget(lim, nested)
    other_run = limits.Budget(lim)
    other = _JobBudget(lim, other_run)
    run.cancel("interrupt")
    # nothing called check() on the jobs: the flag is set on each by the cancel itself
    assert first.cancelled and nested.cancelled and deeper.cancelled
    assert first._reason == nested._reason == deeper._reason == "killed"
    assert not other.cancelled   # (another run's job is not touched)
    with pytest.raises(LimitExceeded):
        deeper.check()


def test_a_run_past_its_deadline_cancels_its_jobs_in_its_check() -> None:
    from agentic_bash.shell.jobs import _JobBudget
    run = limits.Budget(ab.Limits(timeout=0.05))
    job = _JobBudget(ab.Limits(timeout=None), run, native=True)   # (its own deadline: none)
    assert _poll(lambda: time.monotonic() >= run.deadline)
    with pytest.raises(LimitExceeded):
        run.check()
    assert job.cancelled


def test_a_job_made_under_a_cancelled_budget_starts_cancelled() -> None:
    from agentic_bash.shell.jobs import _JobBudget
    lim = ab.Limits(timeout=None)
    run = limits.Budget(lim)
    run.cancel("interrupt")
    assert _JobBudget(lim, run).cancelled


def test_a_sleeping_job_wakes_on_its_parents_cancel() -> None:
    # Budget.sleep of a job waits on the job's own event: the parent's cancel must set it
    # (it woke at the 50 ms poll, or when the watchdog got round to the job)
    from agentic_bash.shell.jobs import _JobBudget
    lim = ab.Limits(timeout=None)
    run = limits.Budget(lim)
    job = _JobBudget(lim, run)
    got: dict[str, object] = {}

    def sleeper() -> None:
        try:
            job.sleep(60)
            got["ended"] = "slept"
        except LimitExceeded as e:
            got["ended"] = e.limit
    t = threading.Thread(target=sleeper, daemon=True)
    t.start()
    time.sleep(0.2)
    run.cancel("interrupt")
    t.join(20)
    assert got.get("ended") == "killed", got


def test_a_waker_turns_readable_on_cancel_and_is_removed() -> None:
    b = limits.Budget(ab.Limits(timeout=None))
    fd = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
    try:
        b.add_waker(fd)
        assert readable([fd], 0) == []
        b.cancel("interrupt")
        assert readable([fd], 0) == [fd]
        b.remove_waker(fd)
        assert not b._wakers
    finally:
        os.close(fd)
    # one added after the cancel is readable at once (the cancel came while it was made)
    fd = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
    try:
        b.add_waker(fd)
        assert readable([fd], 0) == [fd]
        b.remove_waker(fd)
    finally:
        os.close(fd)


def test_a_native_wait_is_woken_by_its_budgets_cancel() -> None:
    from agentic_bash.executors import native as N
    nl = N.NativeLauncher(pdeathsig=False)
    try:
        b = limits.Budget(ab.Limits(timeout=None))
        r, w = os.pipe()
        try:
            p = nl.spawn(["/bin/sleep", "30"], executable="/bin/sleep",
                         env={"PATH": "/usr/bin:/bin"}, cwd="/", stdin=0, stdout=w, stderr=2)
        finally:
            os.close(w)
        got: dict[str, object] = {}

        def waiter() -> None:
            try:
                got["rc"] = N.wait_collecting(p, {r: io.BytesIO()}, b.check, b.remaining, b)
            except LimitExceeded as e:
                got["ended"] = e.limit
        t = threading.Thread(target=waiter, daemon=True)
        t.start()
        # a wait past _WAKE_AFTER polls an eventfd of the budget's
        assert _poll(lambda: bool(b._wakers)), "the wait registered no waker"
        fd = b._wakers[0]
        b.cancel("interrupt")
        t.join(20)
        assert got.get("ended") == "interrupt", got
        assert not b._wakers and not _is_eventfd(fd)   # removed and closed ...
        assert p.wait(10) is not None                   # ... and the program ended
    finally:
        nl.close()


def _is_eventfd(fd: int) -> bool:
    try:
        return "eventfd" in os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return False


# -- the runner's backstop after a timed-out run ------------------------------------------------
# Before: it slept a fixed 50 ms whenever the run left a child, even one already dead (the
# job thread that ended it had not reaped it yet): that was the whole of the overrun.

def _spawn(code: str) -> int:
    pid = os.fork()
    if pid == 0:
        try:
            os.setpgid(0, 0)
            exec(code, {"os": os, "signal": signal, "time": time})
        finally:
            os._exit(0)
    return pid


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def test_the_backstop_does_not_wait_for_children_that_are_already_dead() -> None:
    from agentic_bash.isolation.runner import _children, _kill_new_children
    before = _children()
    pid = _spawn("pass")
    try:
        assert _poll(lambda: psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
        t0 = time.monotonic()
        _kill_new_children(before, grace=30.0)
        assert time.monotonic() - t0 < 10.0   # (not the 30 s grace)
    finally:
        _reap(pid)


def test_the_backstop_ends_on_the_first_look_once_the_children_exit() -> None:
    from agentic_bash.isolation.runner import _children, _kill_new_children
    before = _children()
    pid = _spawn("time.sleep(60)")   # (SIGTERM's default action ends it)
    reaper = threading.Thread(target=_reap, args=(pid,), daemon=True)
    try:
        t0 = time.monotonic()
        reaper.start()
        _kill_new_children(before, grace=30.0)
        assert time.monotonic() - t0 < 10.0
        reaper.join(10)
        assert not reaper.is_alive()
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
        reaper.join(10)


def test_the_backstop_still_kills_what_ignores_sigterm_and_its_group() -> None:
    from agentic_bash.isolation.runner import _children, _kill_new_children
    before = _children()
    # a leader that exits at once on SIGTERM, leaving a grandchild in its group that ignores
    # SIGTERM: the group gets SIGKILL after the grace all the same (security invariant)
    rd, wr = os.pipe()
    pid = _spawn(
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "g = os.fork()\n"
        "if g == 0:\n"
        "    time.sleep(120); os._exit(0)\n"
        f"os.write({wr}, str(g).encode()); os.close({wr})\n"
        "signal.signal(signal.SIGTERM, signal.SIG_DFL)\n"
        "time.sleep(120)\n")
    os.close(wr)
    grandchild = int(os.read(rd, 64))
    os.close(rd)
    try:
        _kill_new_children(before, grace=0.2)
        _reap(pid)
        assert _poll(lambda: not psutil.pid_exists(grandchild)
                     or psutil.Process(grandchild).status() == psutil.STATUS_ZOMBIE)
    finally:
        for p in (pid, grandchild):
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        _reap(pid)


# -- end to end: a job's native program ends with the run that started it ---------------------

def _sleepers(me: psutil.Process) -> list[int]:
    """This process's live descendants running ``sleep 97`` (ones exiting meanwhile skipped)."""
    out = []
    for c in me.children(recursive=True):
        try:
            if c.status() != psutil.STATUS_ZOMBIE and c.cmdline()[-1:] == ["97"]:
                out.append(c.pid)
        except psutil.Error:
            pass
    return out


def _describe(pids: list[int]) -> str:
    out = []
    for p in pids:
        try:
            pr = psutil.Process(p)
            chain = []
            q = pr
            while q is not None and len(chain) < 6:
                chain.append(f"{q.pid}:{' '.join(q.cmdline())[:60]}")
                q = q.parent()
            out.append(" <- ".join(chain))
        except psutil.Error:
            pass
    return "; ".join(out)


_MODES = ["virtual", "none", pytest.param("namespace", marks=pytest.mark.skipif(
    not _namespace_ok(), reason="kernel sandbox unavailable"))]


@pytest.mark.parametrize("iso", _MODES)
@pytest.mark.parametrize("script", ["( sleep 97 & wait )", "sleep 97 & wait",
                                    "{ sleep 97 & wait; } & wait"])
def test_a_timed_out_run_ends_its_jobs_programs(iso: str, script: str) -> None:
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sb = ab.Sandbox(isolation=iso)
    with sb:
        t0 = time.monotonic()
        r = sb.run(script, timeout=0.5)
        assert r.timed_out and r.exit_code == 124, r
        assert time.monotonic() - t0 < 30.0   # (loose: the machine may be loaded)
        # no `sleep 97` left in the sandbox (or, with none, on this host from this session)
        if iso == "namespace":
            assert _poll(lambda: "sleep 97" not in sb.run(
                "ps -eo args 2>/dev/null || cat /proc/[0-9]*/cmdline | tr '\\0' ' '").stdout)
        elif iso == "none":
            assert _poll(lambda: not _sleepers(psutil.Process())), _describe(_sleepers(psutil.Process()))
        assert sb.run("echo ok").stdout == "ok\n"


# -- a program started as the stop comes --------------------------------------------------------
# Before: the watchdog's exception could land between the child's start and its wait (the
# window is wide on a loaded machine, widened here on purpose): the child ran on after its
# run returned, until the sandbox closed (this test's "none" case above failed that way 3
# times in 8 under load).

@pytest.mark.parametrize("script", ["sleep 0.3; sleep 97", "( sleep 0.3; sleep 97 & wait )",
                                    "sleep 0.3; sleep 97 | cat", "sleep 0.3; cat /dev/null | sleep 97",
                                    "{ sleep 0.3; sleep 97 & wait; } & wait"])
def test_a_program_started_as_the_run_stops_is_ended(monkeypatch, script: str) -> None:
    import warnings
    from agentic_bash.executors import native as N
    spawn = N.NativeLauncher.spawn

    def slow_return(self, argv, **kw):
        p = spawn(self, argv, **kw)
        if argv[-1:] == ["97"]:
            end = time.monotonic() + 0.4
            while time.monotonic() < end:   # (bytecode: where the watchdog's exception lands)
                pass
        return p
    monkeypatch.setattr(N.NativeLauncher, "spawn", slow_return)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sb = ab.Sandbox(isolation="none")
    try:
        r = sb.run(script, timeout=0.5)
        assert r.timed_out, r
        assert _poll(lambda: not _sleepers(psutil.Process()), 5.0), _describe(_sleepers(psutil.Process()))
    finally:
        sb.close()
        for p in _sleepers(psutil.Process()):
            try:
                psutil.Process(p).kill()
            except psutil.Error:
                pass


# -- a run's timeout ends its own jobs, not an earlier run's ------------------------------------
# Before: every live job of the session was killed at any run's timeout, so an agent's server
# started with `&` in one run died when a later, unrelated run timed out.

@pytest.mark.parametrize("iso", [m for m in _MODES if m != "virtual"])
def test_a_timeout_leaves_the_jobs_of_earlier_runs(iso) -> None:
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sb = ab.Sandbox(isolation=iso)
    with sb:
        assert sb.run("sleep 96 & echo started").stdout == "started\n"
        r = sb.run("sleep 97 & sleep 30", timeout=0.5)
        assert r.timed_out, r
        # this run's own job is gone; the earlier run's is still running
        assert _poll(lambda: "Running" in sb.run("jobs").stdout
                     and "sleep 97" not in sb.run("jobs").stdout)
        assert "sleep 96" in sb.run("jobs").stdout
        assert sb.run("kill %1; wait %1; echo $?").stdout == "143\n"
