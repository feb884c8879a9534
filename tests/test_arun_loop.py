"""Sandbox.arun on the event loop itself (no worker thread): results, cancel, timeout, crash."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import warnings

import pytest

from agentic_bash import Sandbox, SandboxClosed, SandboxCrashed


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


@pytest.fixture
def no_workers(monkeypatch):
    """arun must not need a worker thread: the thread pool is not there."""
    import agentic_bash.session as session

    def refuse():  # noqa: ANN202
        raise AssertionError("arun went to a worker thread")
    monkeypatch.setattr(session, "_async_workers", refuse)


def test_arun_gives_what_run_gives_without_a_worker_thread(no_workers) -> None:
    with _sandbox() as sb:
        async def main():  # noqa: ANN202
            a = await sb.arun("export X=1; cd /tmp; echo out; echo err >&2; exit 3")
            b = await sb.arun("echo $X $PWD; cat", stdin=b"in\n")
            c = await sb.arun("echo $Y; pwd", env={"Y": "y"}, cwd="/")
            return a, b, c
        a, b, c = asyncio.run(main())
        assert (a.stdout, a.stderr, a.exit_code) == ("out\n", "err\n", 3)
        assert b.stdout == "1 /tmp\nin\n"
        assert c.stdout == "y\n/\n"
        assert sb.run("echo $X").stdout == "1\n"   # the same session as run()


def test_the_loop_keeps_ticking_during_an_awaited_run(no_workers) -> None:
    with _sandbox() as sb:
        async def main() -> tuple[int, str]:
            ticks = 0

            async def tick() -> None:
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.01)
                    ticks += 1
            t = asyncio.ensure_future(tick())
            r = await sb.arun("sleep 0.5; echo done")
            t.cancel()
            return ticks, r.stdout
        ticks, out = asyncio.run(main())
        assert out == "done\n"
        assert ticks >= 5   # ~50 at 10 ms; loose for a loaded machine


def test_concurrent_aruns_on_one_sandbox_each_get_their_own_output() -> None:
    with _sandbox() as sb:
        async def main() -> list[str]:
            rs = await asyncio.gather(*(sb.arun(f"echo {i}; n=$((n+1))") for i in range(8)))
            return [r.stdout for r in rs]
        assert asyncio.run(main()) == [f"{i}\n" for i in range(8)]
        assert sb.run("echo $n").stdout == "8\n"   # one after the other, none lost


def test_cancel_interrupts_and_the_next_call_never_sees_its_output() -> None:
    with _sandbox() as sb:
        async def main() -> str:
            task = asyncio.ensure_future(sb.arun("sleep 0.3; echo stale; sleep 20; echo late"))
            await asyncio.sleep(0.1)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            # the abandoned run's reply is drained first (on a worker thread)
            return (await sb.arun("echo next")).stdout
        t0 = time.monotonic()
        assert asyncio.run(main()) == "next\n"
        assert time.monotonic() - t0 < 15   # interrupted, not waited for
        assert sb.run("echo again").stdout == "again\n"


def test_timeout_of_an_awaited_run(no_workers) -> None:
    with _sandbox() as sb:
        r = asyncio.run(sb.arun("sleep 5; echo no", timeout=0.5))
        assert r.timed_out and r.stdout == ""
        assert asyncio.run(sb.arun("echo yes")).stdout == "yes\n"


def test_close_from_the_loop_during_an_awaited_run_does_not_hang() -> None:
    sb = _sandbox()
    other = _sandbox()
    try:
        async def main() -> str:
            task = asyncio.ensure_future(sb.arun("sleep 20"))
            await asyncio.sleep(0.3)
            sb.close()
            with pytest.raises(SandboxClosed):
                await asyncio.wait_for(task, 30)
            # the loop still serves other sandboxes (the closed channel is not watched)
            return (await other.arun("echo other")).stdout
        assert asyncio.run(main()) == "other\n"
        with pytest.raises(SandboxClosed):
            asyncio.run(sb.arun("echo x"))
    finally:
        sb.close()
        other.close()


def test_sandbox_killed_during_an_awaited_run_raises_crashed_then_restarts() -> None:
    with _sandbox() as sb:
        sb.run("echo kept > f")

        async def main() -> None:
            task = asyncio.ensure_future(sb.arun("sleep 20"))
            await asyncio.sleep(0.3)
            os.kill(sb._ex.pid, signal.SIGKILL)
            with pytest.raises(SandboxCrashed):
                await asyncio.wait_for(task, 30)
        asyncio.run(main())
        r = asyncio.run(sb.arun("cat f"))
        assert (r.stdout, r.restarted) == ("kept\n", True)


def test_astream_on_the_loop_yields_output_then_the_result(no_workers) -> None:
    with _sandbox() as sb:
        async def main() -> list:
            return [(ev.kind, ev.data) if ev.kind != "result" else (ev.kind, ev.result.exit_code)
                    async for ev in sb.astream("echo one; echo two >&2; exit 4")]
        evs = asyncio.run(main())
        assert evs[-1] == ("result", 4)
        assert sorted(evs[:-1]) == [("stderr", b"two\n"), ("stdout", b"one\n")]


def test_leaving_astream_early_interrupts_and_the_next_call_is_clean() -> None:
    with _sandbox() as sb:
        async def main() -> str:
            async for ev in sb.astream("echo first; sleep 20; echo never"):
                assert ev.data == b"first\n"
                break
            return (await sb.arun("echo next")).stdout
        t0 = time.monotonic()
        assert asyncio.run(main()) == "next\n"
        assert time.monotonic() - t0 < 15


def test_a_blocking_call_from_the_loop_waits_for_the_awaited_run() -> None:
    """sb.run()/read_file() called (blocking) from the event loop while another task awaits
    an arun of the same sandbox: the awaited run finishes first and keeps its output."""
    with _sandbox() as sb:
        async def main() -> tuple[str, str, bytes, str]:
            a = asyncio.ensure_future(sb.arun("sleep 0.5; echo A > f; echo A"))
            await asyncio.sleep(0.1)
            b = sb.run("echo B").stdout          # blocks the loop: A is finished here first
            f = sb.read_file("f")
            ra = await asyncio.wait_for(a, 30)
            c = (await sb.arun("echo C")).stdout
            return ra.stdout, b, f, c
        assert asyncio.run(main()) == ("A\n", "B\n", b"A\n", "C\n")


def test_a_blocking_call_from_the_loop_times_out_the_awaited_run() -> None:
    with _sandbox() as sb:
        async def main() -> tuple[bool, str]:
            a = asyncio.ensure_future(sb.arun("sleep 30", timeout=0.5))
            await asyncio.sleep(0.1)
            b = sb.run("echo B").stdout
            ra = await asyncio.wait_for(a, 30)
            return ra.timed_out, b
        t0 = time.monotonic()
        assert asyncio.run(main()) == (True, "B\n")
        assert time.monotonic() - t0 < 20
