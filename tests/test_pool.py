"""SandboxPool semantics (virtual mode here; the kernel sandbox in integration/test_pool_kernel.py)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from agentic_bash import PoolExhausted, Sandbox, SandboxClosed, SandboxPool


def _wait(cond, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.01)
    return False


@pytest.fixture
def pool():
    p = SandboxPool(min_size=2, max_size=4, idle_ttl=None, isolation="virtual")
    try:
        yield p
    finally:
        p.close()


def test_filler_keeps_min_size_ready(pool):
    assert _wait(lambda: pool.stats()["ready"] == 2)
    sb = pool.acquire()
    assert pool.stats()["leased"] == 1
    assert _wait(lambda: pool.stats()["ready"] == 2)   # topped up behind the caller
    pool.release(sb)
    assert pool.size <= pool.max_size


def test_released_handle_is_dead(pool):
    sb = pool.acquire()
    assert sb.run("echo hi").stdout == "hi\n"
    pool.release(sb)
    assert sb.closed
    for call in (lambda: sb.run("echo x"), lambda: sb.read_file("/etc/hostname"),
                 lambda: sb.write_file("f", "x"), lambda: sb.cwd, lambda: sb.env,
                 lambda: sb.get_state(), lambda: sb.exists("/"), lambda: sb.interrupt(),
                 lambda: sb.list_files("/"), lambda: list(sb.stream("echo x"))):
        with pytest.raises(SandboxClosed):
            call()
    assert "closed" in repr(sb)
    pool.release(sb)   # twice: a no-op
    sb.close()         # and closing it is harmless


def test_next_user_sees_nothing_of_the_previous(pool):
    with pool.sandbox() as a:
        r = a.run("cd /workspace && echo secret > f.txt && mkdir d && echo t > /tmp/t && "
                  "echo h > ~/h; export TOKEN=s3cr3t; X=1; f() { echo fn; }; "
                  "alias ll='ls -l'; set -o noglob; cd /tmp; history -s 'echo secret'")
        assert r.exit_code == 0, r.stderr
        assert a.run("f; echo $TOKEN; pwd").stdout == "fn\ns3cr3t\n/tmp\n"
        prev = a
    with pool.sandbox() as b:
        assert b is not prev
        r = b.run("ls -A /workspace /tmp ~; echo \"[$TOKEN][$X]\"; type f; alias; pwd; "
                  "history; echo $-")
        assert "f.txt" not in r.stdout and "secret" not in r.stdout and "h\n" not in r.stdout
        assert "[][]" in r.stdout
        assert "f: not found" in r.stderr
        assert "ll" not in r.stdout
        assert "/workspace\n" in r.stdout
        assert "f" not in r.stdout.splitlines()[-1]   # noglob is off again
        assert not b.exists("/workspace/f.txt")


def test_exhausted_raises_after_timeout(pool):
    held = [pool.acquire() for _ in range(4)]
    try:
        with pytest.raises(PoolExhausted):
            pool.acquire(timeout=0)
        t = time.monotonic()
        with pytest.raises(PoolExhausted):
            pool.acquire(timeout=0.2)
        assert 0.15 <= time.monotonic() - t < 5
        assert pool.stats()["exhausted"] == 2
    finally:
        for sb in held:
            pool.release(sb)


def test_waiter_gets_a_sandbox_when_one_is_released(pool):
    held = [pool.acquire() for _ in range(4)]
    got = []
    t = threading.Thread(target=lambda: got.append(pool.acquire(timeout=10)))
    t.start()
    time.sleep(0.1)
    assert not got
    pool.release(held.pop())
    t.join(10)
    assert got and got[0].run("echo ok").stdout == "ok\n"
    for sb in held + got:
        pool.release(sb)


def test_max_size_is_never_exceeded_by_fifty_threads():
    pool = SandboxPool(min_size=1, max_size=5, idle_ttl=None, isolation="virtual")
    peak = [0]
    errors: list[BaseException] = []
    lock = threading.Lock()

    def user(i: int) -> None:
        try:
            for _ in range(3):
                with pool.sandbox(timeout=60) as sb:
                    with lock:
                        peak[0] = max(peak[0], pool.size)
                    r = sb.run(f"x={i}; echo $x; echo leak > /workspace/mine")
                    assert r.stdout == f"{i}\n"
                    assert sb.run("ls /workspace").stdout == "mine\n"
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=user, args=(i,)) for i in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    try:
        assert not errors, errors[:3]
        st = pool.stats()
        assert st["released"] == 150 and st["leased"] == 0
        assert peak[0] <= 5
    finally:
        pool.close()
    assert pool.size == 0


def test_idle_ttl_closes_surplus_down_to_min_size():
    pool = SandboxPool(min_size=1, max_size=6, idle_ttl=0.3, isolation="virtual")
    try:
        held = [pool.acquire() for _ in range(5)]
        for sb in held:
            pool.release(sb)
        # replacements for the burst appear, then the surplus expires (under load the
        # first may expire before the last is ready: count, do not race)
        assert _wait(lambda: pool.stats()["created"] >= 6)
        def settled() -> bool:
            st = pool.stats()
            return (st["expired"] >= 3 and st["ready"] == 1 and st["closing"] == 0
                    and st["creating"] == 0 and st["owed"] == 0)
        assert _wait(settled, timeout=20)
        time.sleep(0.5)
        assert pool.stats()["ready"] == 1    # min_size stays
    finally:
        pool.close()


def test_close_kills_leased_handles_and_refuses_more(pool):
    sb = pool.acquire()
    pool.close()
    assert sb.closed
    with pytest.raises(SandboxClosed):
        sb.run("echo")
    with pytest.raises(SandboxClosed):
        pool.acquire()
    st = pool.stats()
    assert st["ready"] == st["leased"] == st["creating"] == st["closing"] == 0
    pool.close()   # idempotent


def test_release_of_a_foreign_sandbox_is_an_error(pool):
    other = Sandbox(isolation="virtual")
    try:
        with pytest.raises(ValueError):
            pool.release(other)
        assert not other.closed
    finally:
        other.close()


def test_bad_arguments():
    for kw in ({"min_size": -1}, {"max_size": 0}, {"min_size": 3, "max_size": 2},
               {"idle_ttl": 0}, {"min_size": 1.5}):
        with pytest.raises(ValueError):
            SandboxPool(isolation="virtual", **kw)
    with pytest.raises(TypeError):
        SandboxPool(min_size=1, isolation="virtual", no_such_option=1)
    with pytest.raises(ValueError):
        SandboxPool(min_size=1, isolation="bogus")


def test_failed_creation_in_acquire_frees_the_slot():
    pool = SandboxPool(min_size=0, max_size=1, idle_ttl=None, isolation="virtual")
    try:
        pool.options["workdir"] = 42   # every later creation fails
        with pytest.raises(Exception):
            pool.acquire(timeout=1)
        assert pool.size == 0
        pool.options["workdir"] = "/workspace"
        with pool.sandbox(timeout=5) as sb:
            assert sb.run("pwd").stdout == "/workspace\n"
    finally:
        pool.close()


def test_asyncio_api():
    async def main() -> list:
        out = []
        async with SandboxPool(min_size=1, max_size=3, idle_ttl=None,
                               isolation="virtual") as p:
            async with p.asandbox() as sb:
                r = await sb.arun("echo a; x=5")
                out.append(r.stdout)
                out.append((await sb.arun("echo $x")).stdout)
                evs = [ev async for ev in sb.astream("echo one; echo two >&2")]
                out.append([(e.kind, e.data) for e in evs[:-1]])
                out.append(evs[-1].kind)
                out.append(evs[-1].result.exit_code)
            # the loop keeps turning while runs happen on worker threads
            ticks = 0

            async def ticker() -> None:
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.005)
                    ticks += 1

            tk = asyncio.create_task(ticker())
            async with p.asandbox() as sb:
                await sb.arun("sleep 0.3")
            tk.cancel()
            out.append(ticks)
        return out

    out = asyncio.run(main())
    assert out[0] == "a\n" and out[1] == "5\n"
    assert out[2] == [("stdout", b"one\n"), ("stderr", b"two\n")]
    assert out[3] == "result" and out[4] == 0
    assert out[5] >= 10


def test_arun_cancel_interrupts_the_run():
    async def main() -> tuple[float, str]:
        sb = Sandbox(isolation="virtual")
        try:
            task = asyncio.create_task(sb.arun("sleep 20; echo late"))
            await asyncio.sleep(0.2)
            t = time.monotonic()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            r = await sb.arun("echo after")   # waits for the interrupted run, then runs
            return time.monotonic() - t, r.stdout
        finally:
            sb.close()

    took, out = asyncio.run(main())
    assert out == "after\n" and took < 10


def test_astream_left_early_interrupts():
    async def main() -> float:
        sb = Sandbox(isolation="virtual")
        try:
            t = time.monotonic()
            async for ev in sb.astream("echo first; sleep 20; echo never"):
                assert ev.data == b"first\n"
                break
            return time.monotonic() - t
        finally:
            sb.close()

    assert asyncio.run(main()) < 10


def test_concurrent_runs_on_one_sandbox_do_not_interleave():
    sb = Sandbox(isolation="virtual")
    try:
        sb.run("n=0")
        errs = []

        def worker() -> None:
            for _ in range(20):
                r = sb.run("a=$n; n=$((a+1)); echo $a")
                if r.exit_code != 0:
                    errs.append(r.stderr)

        ts = [threading.Thread(target=worker) for _ in range(5)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
        assert not errs
        assert sb.run("echo $n").stdout == "100\n"   # no lost update: runs never overlapped
    finally:
        sb.close()


def test_otel_spans_and_metrics(monkeypatch):
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from agentic_bash import telemetry

    exporter = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    mp = MeterProvider(metric_readers=[reader])
    # a Telemetry bound to these providers (the global ones can be set once per process)
    t = telemetry.Telemetry(_Provided(tp, "tracer"), _Provided(mp, "meter"))
    monkeypatch.setattr(telemetry, "_state", [t])
    pool = SandboxPool(min_size=1, max_size=2, idle_ttl=None, isolation="virtual")
    try:
        with pool.sandbox() as sb:
            sb.run("echo hi; exit 3")
        names = [s.name for s in exporter.get_finished_spans()]
        assert names == ["sandbox.pool.acquire", "sandbox.run", "sandbox.pool.release"]
        run = exporter.get_finished_spans()[1]
        assert run.attributes["sandbox.exit_code"] == 3
        assert run.attributes["sandbox.isolation"] == "virtual"
        data = reader.get_metrics_data()
        got = {m.name for rm in data.resource_metrics for sm in rm.scope_metrics
               for m in sm.metrics}
        assert {"sandbox.run.duration", "sandbox.pool.wait_time", "sandbox.pool.size"} <= got
    finally:
        pool.close()
    # without a configured provider nothing is instrumented
    from opentelemetry import metrics, trace
    monkeypatch.setattr(telemetry, "_state", [telemetry.Telemetry(trace, metrics)])
    if not telemetry.get().configured():
        sb = Sandbox(isolation="virtual")
        try:
            assert sb._otel is None and sb._direct
        finally:
            sb.close()


class _Provided:
    """opentelemetry.trace / .metrics look-alike answering from a given provider."""

    def __init__(self, provider, kind):
        self._p, self._kind = provider, kind
        from opentelemetry import metrics
        self.Observation = metrics.Observation

    def get_tracer_provider(self):
        return self._p

    def get_meter_provider(self):
        return self._p

    def get_tracer(self, *a, **k):
        return self._p.get_tracer(*a, **k)

    def get_meter(self, *a, **k):
        return self._p.get_meter(*a, **k)


def test_prewarm_proxy_with_a_half_imported_proxy_module(monkeypatch) -> None:  # noqa: ANN001
    """Sandboxes made on many threads at once: one thread may see network/proxy.py in
    sys.modules before it has run (found by 200 concurrent acquires): never an error."""
    import sys
    import types

    from agentic_bash.executors import sandboxed
    started = []
    half = types.ModuleType("agentic_bash.network.proxy")   # no _proxy, no get_proxy yet
    monkeypatch.setitem(sys.modules, "agentic_bash.network.proxy", half)
    monkeypatch.setattr(sandboxed.threading, "Thread",
                        lambda target, **kw: types.SimpleNamespace(start=lambda: started.append(target)))
    sandboxed._prewarm_proxy()
    assert len(started) == 1
    started[0]()   # the import of get_proxy fails on the stand-in module: swallowed
