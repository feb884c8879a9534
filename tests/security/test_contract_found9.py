"""Regression tests for session 9's run-contract work (issue 20): the deadline's own cleanup, a subshell's jobs."""

from __future__ import annotations

import pytest

import agentic_bash as ab
from agentic_bash import limits
from agentic_bash.executors import inprocess

# -- the watchdog's exception landing in the run's own cleanup after a timeout -------------
# A timed-out run's EXIT trap output once arrived in the next run (namespace mode, load 16:
# `trap 'echo t' EXIT; sleep 5` then `echo ok` gave "ok\nt\n"). The run thread catches the
# deadline's LimitExceeded and starts its cleanup; a kick the watchdog sent meanwhile (it
# acts WATCH_GRACE past the deadline, and a starved thread gets there late) lands in that
# cleanup, skips the EXIT trap, and the run returned 124 with no output while the trap stayed
# set: the next run fired it. The kick is injected here at the places it can land.


def _kick_once(real):  # noqa: ANN001, ANN202
    """``real`` raising the watchdog's exception the first time it is called, as a kick that
    lands at its first bytecode would."""
    calls = []

    def wrapped(*a, **kw):  # noqa: ANN002, ANN003, ANN202
        if not calls:
            calls.append(1)
            raise limits._DeadlineKick()
        return real(*a, **kw)
    return wrapped, calls


@pytest.mark.parametrize("where", ["cancel_jobs", "exit_trap", "unwatch"])
def test_a_kick_in_the_timeout_cleanup_keeps_the_exit_trap_in_its_own_run(
        where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with ab.Sandbox(isolation="virtual") as sb:
        sb.run("true")
        if where == "cancel_jobs":
            w, calls = _kick_once(inprocess.InProcessExecutor._cancel_jobs)
            monkeypatch.setattr(inprocess.InProcessExecutor, "_cancel_jobs", w)
        elif where == "exit_trap":
            w, calls = _kick_once(inprocess._exit_trap_at_deadline)
            monkeypatch.setattr(inprocess, "_exit_trap_at_deadline", w)
        else:
            # the first unwatch() after the script began: the one that ends its watch
            w, calls = _kick_once(limits.Budget.unwatch)
            monkeypatch.setattr(limits.Budget, "unwatch", w)
        r = sb.run("echo before; trap 'echo t' EXIT; sleep 5", timeout=0.5)
        monkeypatch.undo()
        assert calls, "the kick was not injected"
        assert r.timed_out and r.exit_code == 124, r
        nxt = sb.run("echo ok", timeout=10)
        assert nxt.stdout == "ok\n", nxt
        # what the run wrote before its deadline is its own, and so is its EXIT trap's output
        assert r.stdout in ("before\n", "before\nt\n"), r
        assert sb.run("trap -p EXIT", timeout=10).stdout == ""
