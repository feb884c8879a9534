"""host15: the awaited run's deadline timer kept from run to run (one per sandbox and loop), and
the runner's SCHED_BATCH policy (a woken runner does not preempt the host's thread)."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import time
import warnings
import weakref

import pytest

from agentic_bash import Sandbox, SandboxCrashed


def _namespace_ok() -> bool:
    try:
        from agentic_bash.isolation.plan import plan
        from agentic_bash.isolation.probe import probe
        return plan("namespace", probe()).level == "namespace"
    except Exception:  # noqa: BLE001
        return False


pytestmark = pytest.mark.skipif(not _namespace_ok(), reason="namespace level unavailable")


def _sandbox() -> Sandbox:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Sandbox("namespace")


def _kids(pid: int) -> list[int]:
    out = []
    for t in sorted(os.listdir(f"/proc/{pid}/task"), key=int):
        with open(f"/proc/{pid}/task/{t}/children") as f:
            out += [int(x) for x in f.read().split()]
    return out


def _ns_pid(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("NSpid:"):
                return int(line.split()[-1])
    return pid


def _pid1_and_runner(sb: Sandbox) -> tuple[int, int]:
    s1 = sb._ex.pid
    s2 = s1 if _ns_pid(s1) == 1 else _kids(s1)[0]
    return s2, _kids(s2)[0]


def _hung_run(sb: Sandbox, first_timeout: float, timeout: float) -> float:
    """An arun with ``timeout`` to a runner that cannot answer (stopped), after an arun with
    ``first_timeout`` left the sandbox's deadline timer armed: seconds until SandboxCrashed."""
    async def main() -> float:
        await sb.arun("echo warm", timeout=first_timeout)
        os.kill(_pid1_and_runner(sb)[1], signal.SIGSTOP)
        t0 = time.monotonic()
        with pytest.raises(SandboxCrashed):
            await asyncio.wait_for(sb.arun("echo x", timeout=timeout), 60)
        return time.monotonic() - t0
    return asyncio.run(main())


def test_a_hung_runner_is_interrupted_then_killed_after_a_run_with_a_later_deadline() -> None:
    # the timer armed by the first run fires after the second's deadline: it is replaced
    with _sandbox() as sb:
        took = _hung_run(sb, 60, 0.5)
        assert 0.5 + 2 <= took < 0.5 + 2 + 3 + 10   # _GRACE, then _KILL_AFTER (loose bound)
        assert sb.run("echo back").stdout == "back\n"   # restarted


def test_a_timer_due_before_the_deadline_is_set_again_for_the_rest() -> None:
    # the first run's timer (0.2 + 2 s) fires while the second (3 + 2 s) is still in time: the
    # second is still interrupted and killed at its own deadline, not before and not never
    with _sandbox() as sb:
        took = _hung_run(sb, 0.2, 3)
        assert 3 + 2 - 0.3 <= took < 3 + 2 + 3 + 10


def test_the_deadline_timer_keeps_no_closed_sandbox_alive() -> None:
    async def main() -> weakref.ref:
        sb = _sandbox()
        await sb.arun("echo x")   # its timer (the limits' 300 s + grace) stays on the loop
        ref = weakref.ref(sb._ex)
        sb.close()
        del sb
        gc.collect()
        await asyncio.sleep(0)
        return ref
    assert asyncio.run(main())() is None


def test_many_aruns_make_one_timer() -> None:
    with _sandbox() as sb:
        async def main() -> tuple[int, int]:
            loop = asyncio.get_running_loop()
            made = []
            call_at = loop.call_at

            def counting(*a, **k):  # noqa: ANN002, ANN003, ANN202
                made.append(a[0])
                return call_at(*a, **k)
            loop.call_at = counting   # (call_later goes through it too)
            for _ in range(50):
                await sb.arun("echo x")
            live = sum(1 for h in loop._scheduled if not h.cancelled())   # noqa: SLF001
            return len(made), live
        assert asyncio.run(main()) == (1, 1)


def test_the_runner_and_its_programs_are_sched_batch_pid_1_is_not() -> None:
    with _sandbox() as sb:
        r = sb.run("/bin/sh -c 'chrt -p $$'")
        pid1, runner = _pid1_and_runner(sb)
        assert "policy: SCHED_BATCH" in r.stdout, r.stdout
        for t in os.listdir(f"/proc/{runner}/task"):
            assert os.sched_getscheduler(int(t)) == os.SCHED_BATCH
        assert os.sched_getscheduler(pid1) == os.SCHED_OTHER
        assert sb.run("nice").stdout == "10\n"   # the workload's niceness as before
