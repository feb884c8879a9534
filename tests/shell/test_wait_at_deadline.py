"""A run whose last command is a wait released by the run's deadline (its jobs end then) is a timed-out run (124), not a success."""

from __future__ import annotations

import pytest

from agentic_bash import Sandbox


@pytest.mark.parametrize("script", ["sleep 100 & wait", "sleep 100 & wait -n", "sleep 100 & wait $!",
                                    "f() { sleep 100 & wait; }; f"])
def test_wait_released_by_the_deadline_is_a_timeout(script: str) -> None:
    with Sandbox(isolation="virtual") as sb:
        r = sb.run(script, timeout=1)
        # before: exit 0, timed_out False at the deadline for the first three
        assert (r.exit_code, r.timed_out) == (124, True), r
        assert sb.run("echo ok").stdout == "ok\n"


def test_wait_before_the_deadline_keeps_the_status() -> None:
    with Sandbox(isolation="virtual") as sb:
        r = sb.run("(exit 3) & wait $!; echo $?; sleep 0.1 & wait; echo w=$?", timeout=20)
        assert (r.stdout, r.exit_code, r.timed_out) == ("3\nw=0\n", 0, False)


@pytest.mark.parametrize("script", ["sleep 100 & wait -n", "sleep 100 & wait"])
def test_jobs_a_deadline_killed_are_not_a_later_runs(script: str) -> None:
    # the job the first run's deadline killed ends on its thread a moment later: a later
    # run's `wait -n` took its status (143 or 124 at once, timed_out False) in 99 of 100 runs
    with Sandbox(isolation="virtual") as sb:
        for _ in range(5):
            r = sb.run(script, timeout=0.5)
            assert (r.exit_code, r.timed_out) == (124, True), r
            assert r.duration >= 0.2, r


def test_wait_n_skips_jobs_that_ended_before_the_run() -> None:
    with Sandbox(isolation="virtual") as sb:
        sb.run("(exit 3) &")
        assert sb.run("sleep 0.3; wait -n; echo $?").stdout == "127\n"
        # a job of an earlier run that is still running is the session's: wait -n gets it
        sb.run("sleep 0.3 &")
        assert sb.run("wait -n; echo $?").stdout == "0\n"
