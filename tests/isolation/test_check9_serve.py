"""The namespace runner's serving thread and its 5 ms standby (session 9): interrupts, timeouts, streamed stdin, custom commands, threads and asyncio on one sandbox, close during a run; results never cross calls."""

from __future__ import annotations

import asyncio
import io
import os
import random
import threading
import time
import warnings

import pytest

import bashdiff  # noqa: F401 - (tests/ on sys.path, as the other isolation tests)


@pytest.fixture(scope="module")
def sb(tmp_path_factory):  # noqa: ANN001, ANN201
    import bashdiff as bd
    yield from bd.sandbox("namespace", tmp_path_factory)


def _after(sb, tag: str) -> None:  # noqa: ANN001
    r = sb.run(f"echo {tag}; echo e{tag} >&2")
    assert (r.stdout, r.stderr, r.exit_code) == (f"{tag}\n", f"e{tag}\n", 0), (tag, r)


def test_threads_on_one_sandbox_never_cross(sb):  # noqa: ANN001
    rnd = random.Random(13)
    bad: list[str] = []

    def worker(k: int) -> None:
        for j in range(15):
            tok = f"T{k}_{j}"
            d = rnd.choice(["", "", "sleep 0.001;", "sleep 0.008;", "x=$(echo in);"])
            try:
                r = sb.run(f"{d} echo {tok}; echo err{tok} >&2; (exit {j % 3})")
            except Exception as e:  # noqa: BLE001
                bad.append(f"raised {e!r}")
                continue
            if (r.stdout, r.stderr, r.exit_code) != (f"{tok}\n", f"err{tok}\n", j % 3):
                bad.append(f"{tok}: {r.stdout!r} {r.stderr!r} {r.exit_code}")
    ts = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert not any(t.is_alive() for t in ts)
    assert not bad, bad[:5]


@pytest.mark.parametrize("script", ["echo b", "sleep 0.003; echo s", "sleep 5; echo late",
                                    "while :; do :; done", "cat"])
def test_interrupt_around_the_standby_never_reaches_the_next_run(sb, script):  # noqa: ANN001
    """An interrupt sent 0-30 ms after the run has begun (its first output seen: an
    interrupt before a run starts stops nothing, as Ctrl-C at an idle prompt) ends that run
    or misses it when it is over, and never reaches the next run."""
    for i, delay in enumerate((0, 0.001, 0.004, 0.006, 0.03)):
        res: dict = {}
        began = threading.Event()

        def go() -> None:
            try:
                res["r"] = sb.run_stream("echo go; " + script, on_stdout=lambda _c: began.set(), timeout=30)
            except Exception as e:  # noqa: BLE001
                res["e"] = e
            began.set()
        th = threading.Thread(target=go)
        th.start()
        assert began.wait(30)
        time.sleep(delay)
        sb.interrupt()
        th.join(25)
        assert not th.is_alive(), (script, delay)
        assert "e" not in res, res
        r = res["r"]
        assert "late" not in r.stdout and r.exit_code in (0, 130), (script, delay, r)
        _after(sb, f"i{i}")


@pytest.mark.parametrize("timeout", [0.001, 0.004, 0.006, 0.05])
def test_timeouts_below_and_above_5ms(sb, timeout):  # noqa: ANN001
    for script in ("sleep 3", "while :; do :; done"):
        t0 = time.monotonic()
        r = sb.run(script, timeout=timeout)
        assert r.exit_code == 124 and r.timed_out, (script, r)
        assert time.monotonic() - t0 < timeout + 5  # (loose: a loaded machine)
        _after(sb, "t")


def test_streamed_stdin_and_custom_commands(sb):  # noqa: ANN001
    for i in range(3):
        rfd, wfd = os.pipe()

        def feed() -> None:
            with os.fdopen(wfd, "wb") as w:
                for k in range(4):
                    w.write(f"line{k}\n".encode())
                    w.flush()
                    time.sleep(0.004 * k)
        th = threading.Thread(target=feed)
        th.start()
        with os.fdopen(rfd, "rb") as rf:
            r = sb.run("cat; echo done", stdin=rf, timeout=30)
        th.join(10)
        assert r.stdout == "line0\nline1\nline2\nline3\ndone\n", r
        _after(sb, f"s{i}")
    r = sb.run("wc -l", stdin=io.BytesIO(b"a\nb\n" * 30000))
    assert r.stdout.strip() == "60000"


def test_asyncio_from_two_threads_and_cancel(sb):  # noqa: ANN001
    """arun from two event loops in two threads at once, then cancelled aruns (one loop:
    the run is its own) and an astream left early: each later call gets its own result."""
    bad: list[str] = []

    async def many(t: int) -> None:
        async def one(k: int) -> None:
            r = await sb.arun(f"{'sleep 0.01;' if k % 2 else ''} echo A{t}_{k}")
            if r.stdout != f"A{t}_{k}\n":
                bad.append(f"arun {t}_{k}: {r.stdout!r}")
        await asyncio.gather(*[one(k) for k in range(12)])
    ts = [threading.Thread(target=lambda t=t: asyncio.run(many(t))) for t in range(2)]
    for th in ts:
        th.start()
    for th in ts:
        th.join(120)
    assert not any(th.is_alive() for th in ts)
    assert not bad, bad

    async def cancels() -> None:
        for i, delay in enumerate((0.001, 0.006, 0.05)):
            task = asyncio.ensure_future(sb.arun("sleep 5; echo nope"))
            await asyncio.sleep(delay)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            t0 = time.monotonic()
            r = await sb.arun(f"echo c{i}")
            assert r.stdout == f"c{i}\n", r
            assert time.monotonic() - t0 < 4.5  # the cancelled sleep 5 did not run on
        n = 0
        async for _ev in sb.astream("for i in 1 2 3 4 5; do echo $i; sleep 0.01; done; echo end"):
            n += 1
            if n == 2:
                break
        r = await sb.arun("echo s")
        assert r.stdout == "s\n", r
    asyncio.run(cancels())


@pytest.mark.parametrize("level", ["namespace", "virtual"])
def test_cancelled_queued_arun_does_not_run_later(sb, level, tmp_path_factory):  # noqa: ANN001
    """An arun cancelled while it waits behind another thread's run is dropped: its script
    never runs (it ran once the other run ended), and the sandbox goes on."""
    if level == "virtual":
        from agentic_bash import Sandbox
        sb = Sandbox(isolation="virtual")
    sb.run("rm -f /tmp/c9_queued")
    began = threading.Event()
    first = threading.Thread(target=lambda: sb.run_stream("echo go; sleep 1.5", on_stdout=lambda _c: began.set()))
    first.start()
    assert began.wait(30)  # the sandbox is busy: the arun below waits on a worker thread

    async def queued() -> None:
        task = asyncio.ensure_future(sb.arun("touch /tmp/c9_queued"))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    asyncio.run(queued())
    first.join(30)
    deadline = time.monotonic() + 1.5  # (it ran right after the first run, when it ran)
    while time.monotonic() < deadline and sb.run("test -e /tmp/c9_queued").exit_code != 0:
        time.sleep(0.1)
    assert sb.run("test -e /tmp/c9_queued").exit_code != 0
    _after(sb, "q")
    if level == "virtual":
        sb.close()


def test_trap_and_exit_trap_stay_in_their_run(sb):  # noqa: ANN001
    r = sb.run("trap 'echo got' USR1; kill -USR1 $$; echo after")
    assert r.stdout == "got\nafter\n", r
    sb.run("trap - USR1; trap 'echo bye' EXIT; echo body")
    r = sb.run("trap - EXIT; echo clean")
    assert r.stdout == "clean\n", r


@pytest.mark.parametrize("script,delay", [("sleep 5", 0.001), ("sleep 5", 0.1), ("echo x; sleep 0.004", 0.003),
                                          ("while :; do :; done", 0.006)])
def test_close_during_a_run(script, delay):  # noqa: ANN001
    from agentic_bash import Sandbox
    from agentic_bash.isolation.plan import plan
    from agentic_bash.isolation.probe import probe
    if plan("namespace", probe()).level != "namespace":
        pytest.skip("no kernel sandbox here")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        box = Sandbox(isolation="namespace")
    box.run("echo warm")
    res: dict = {}

    def go() -> None:
        try:
            res["r"] = box.run(script, timeout=30)
        except Exception as e:  # noqa: BLE001
            res["e"] = e
    th = threading.Thread(target=go)
    th.start()
    time.sleep(delay)
    box.close()
    th.join(20)
    assert not th.is_alive()
    assert res  # a result or an error, never a hang
    with pytest.raises(Exception):  # noqa: B017 - SandboxClosed (any error, never a run)
        box.run("echo x")
