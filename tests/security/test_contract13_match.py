"""Session 13 (issue 20): a regex match ends at the run's deadline on the wall clock (regex's own timeout counts CPU time), and a matcher out of memory is not an internal error."""

from __future__ import annotations

import threading
import time

import pytest

import agentic_bash as ab
from agentic_bash import limits
from test_contract_found9 import _namespace_ok

_MODES = ["virtual", pytest.param("namespace", marks=pytest.mark.skipif(
    not _namespace_ok(), reason="kernel sandbox unavailable"))]


class _CpuClockMatch:
    """Stands in for a ``regex`` match method: like regex, it honours ``timeout`` in CPU
    time, but it spends wall time (a starved process: its CPU clock barely moves)."""

    def __init__(self, wall: float) -> None:
        self.wall = wall
        self.calls: list[tuple[float | None, bool | None]] = []

    def __call__(self, s: str, *, timeout: float | None = None, concurrent: bool | None = None) -> str:
        self.calls.append((timeout, concurrent))
        c0 = time.process_time()
        end = time.monotonic() + self.wall
        while time.monotonic() < end:
            time.sleep(0.005)
            if timeout is not None and time.process_time() - c0 >= timeout:
                raise TimeoutError("regex timed out")
        return "matched:" + s


def test_a_match_is_ended_on_the_wall_clock() -> None:
    # before: the match ran on the caller's thread with timeout=<seconds left>, which regex
    # counts in CPU time: on a starved machine many times the wall-clock time left
    fn = _CpuClockMatch(wall=60.0)
    t0 = time.monotonic()
    with pytest.raises(TimeoutError):
        limits.bounded_match(fn, "x", left=0.5)
    assert time.monotonic() - t0 < 10.0
    # a short CPU slice here first, then the worker with the GIL released
    assert fn.calls[0] == (limits.REGEX_SLICE, None)
    assert fn.calls[1][1] is True


def test_a_quick_match_runs_once_on_the_callers_thread() -> None:
    fn = _CpuClockMatch(wall=0.0)
    assert limits.bounded_match(fn, "x", left=5.0) == "matched:x"
    assert fn.calls == [(limits.REGEX_SLICE, None)]
    fn = _CpuClockMatch(wall=0.0)
    assert limits.bounded_match(fn, "y", left=None) == "matched:y"
    assert fn.calls == [(None, None)]


def test_a_slow_match_that_ends_in_time_gives_its_result() -> None:
    class Burn:
        calls = 0

        def __call__(self, s: str, *, timeout: float | None = None, concurrent: bool | None = None) -> str:
            Burn.calls += 1
            c0 = time.process_time()
            while time.process_time() - c0 < 0.05:   # 50 ms of CPU: past the slice
                if timeout is not None and time.process_time() - c0 >= timeout:
                    raise TimeoutError("regex timed out")
            return s.upper()
    assert limits.bounded_match(Burn(), "abc", left=60.0) == "ABC"
    assert Burn.calls == 2


def test_an_error_of_the_worker_reaches_the_caller() -> None:
    def fn(s: str, *, timeout: float | None = None, concurrent: bool | None = None) -> str:
        if concurrent:
            raise MemoryError
        raise TimeoutError
    with pytest.raises(MemoryError):
        limits.bounded_match(fn, "x", left=5.0)


def test_a_cancel_ends_the_wait_for_the_worker() -> None:
    b = limits.Budget(ab.Limits(timeout=None))
    got: dict[str, object] = {}

    def caller() -> None:
        prior = b.bind()
        try:
            limits.bounded_match(_CpuClockMatch(wall=60.0), "x", left=60.0)
        except TimeoutError as e:
            got["e"] = str(e)
        finally:
            limits.Budget.unbind(prior)
    t = threading.Thread(target=caller, daemon=True)
    t.start()
    time.sleep(0.3)
    b.cancel("interrupt")
    t.join(20)
    assert not t.is_alive() and "interrupted" in str(got.get("e")), got


@pytest.mark.parametrize("iso", _MODES)
def test_a_catastrophic_regex_on_a_large_value_keeps_the_deadline(iso: str) -> None:
    # POSIX leftmost-longest (y.)+$ over 2 MB: seconds of CPU; 53 s for a 3 s timeout on a
    # 6 MB value at load ~12 before
    with ab.Sandbox(isolation=iso) as sb:
        t0 = time.monotonic()
        r = sb.run("x=$(yes | head -c 2000000); [[ $x =~ (y.)+$ ]]; echo $?", timeout=1.5)
        took = time.monotonic() - t0
        assert r.timed_out and r.exit_code == 124, r
        assert took < 8.0, took
        assert sb.run("[[ abc =~ b(c) ]] && echo ${BASH_REMATCH[1]}").stdout == "c\n"


def test_a_matcher_out_of_memory_is_no_match_not_an_internal_error() -> None:
    # (y.)+$ over 60 MB: the POSIX matcher's backtracking raised MemoryError, which ended
    # the run as "agentic-bash: internal error: MemoryError"
    with ab.Sandbox(isolation="virtual") as sb:
        r = sb.run("x=$(yes | head -c 60000000); [[ $x =~ (y.)+$ ]]; echo $? ${#BASH_REMATCH[@]}",
                   timeout=120)
        assert "internal error" not in r.stderr, r.stderr
        assert r.stdout in ("1 0\n", ""), r


def test_a_memory_error_in_the_shell_reads_as_bash_out_of_memory(monkeypatch) -> None:
    from agentic_bash.shell.interpreter import Interpreter

    def boom(self, s: str, pat: str) -> bool:
        raise MemoryError
    monkeypatch.setattr(Interpreter, "regex_match", boom)
    with ab.Sandbox(isolation="virtual") as sb:
        r = sb.run("echo a; [[ x =~ y ]]; echo b")
        assert r.exit_code == 1 and r.stdout == "a\n", r
        assert "internal error" not in r.stderr and "cannot allocate" in r.stderr, r.stderr
        assert r.limit_exceeded == "memory"
        monkeypatch.undo()
        assert sb.run("echo ok").stdout == "ok\n"
