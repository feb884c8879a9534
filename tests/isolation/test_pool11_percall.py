"""Per-call path: the deadline watchdog sleeps until it is needed yet still stops runs and jobs in time; spawn environments encoded once; the workload's niceness before exec on the spawner thread."""

from __future__ import annotations

import os
import threading
import time

import pytest

import agentic_bash as ab
from agentic_bash import limits
from agentic_bash.errors import LimitExceeded
from agentic_bash.executors import native as N


def _watch_thread() -> str | None:
    """/proc task directory of this process's deadline watchdog thread, or None."""
    for t in threading.enumerate():
        if t.name == "agentic-bash-deadline" and t.native_id is not None:
            return f"/proc/self/task/{t.native_id}"
    return None


def _switches(task: str) -> int:
    """How many times the thread was put on a CPU (schedstat's third field)."""
    with open(f"{task}/schedstat") as f:
        return int(f.read().split()[2])


def test_the_watchdog_sleeps_while_a_long_run_goes() -> None:
    # before: a 10 ms tick while any run went (100 wake-ups in this 1 s sleep); now it looks
    # when some budget's stop comes near, at least every WATCH_IDLE (0.25 s): ~4
    with ab.Sandbox(isolation="virtual") as sb:
        sb.run("true")
        task = _watch_thread()
        assert task is not None
        n0 = _switches(task)
        r = sb.run("sleep 1", timeout=60)
        n1 = _switches(task)
    assert r.exit_code == 0
    assert n1 - n0 < 40, n1 - n0


def _busy(b: limits.Budget, got: dict[str, object], seconds: float = 10.0) -> None:
    """Python code with no check of its own, watched by ``b``: only the watchdog's
    asynchronous exception ends it before ``seconds``."""
    b.watch()
    t0 = time.monotonic()
    try:
        try:
            x = 0
            while time.monotonic() - t0 < seconds:
                x += 1
            got["ended"] = "never stopped"
        finally:
            b.unwatch()
    except LimitExceeded as e:
        got["ended"] = e.limit
        got["after"] = time.monotonic() - t0


@pytest.fixture
def long_idle(monkeypatch: pytest.MonkeyPatch):
    """The watchdog's own cadence made 60 s: only a wake-up (a short deadline watched, a
    cancel) brings it back in time."""
    limits._start_watch()
    monkeypatch.setattr(limits, "WATCH_IDLE", 60.0)
    limits._wake_watch()          # (it takes the new cadence at its next look)
    time.sleep(0.3)
    yield
    monkeypatch.undo()
    limits._wake_watch()


def test_a_short_deadline_wakes_the_sleeping_watchdog(long_idle: None) -> None:
    b = limits.Budget(ab.Limits(timeout=0.5))
    got: dict[str, object] = {}
    t = threading.Thread(target=_busy, args=(b, got), daemon=True)
    t.start()
    t.join(30)
    assert got.get("ended") == "timeout", got
    assert got["after"] < 5.0, got   # (0.5 s + grace; seconds of slack for a loaded machine)


def test_a_job_is_stopped_when_its_run_is_cancelled(long_idle: None) -> None:
    from agentic_bash.shell.jobs import _JobBudget
    lim = ab.Limits(timeout=None)
    parent = limits.Budget(lim)
    job = _JobBudget(lim, parent)
    got: dict[str, object] = {}
    t = threading.Thread(target=_busy, args=(job, got), daemon=True)
    t.start()
    time.sleep(0.3)            # (watched, and the watchdog asleep for a minute)
    t0 = time.monotonic()
    parent.cancel("interrupt")   # what an interrupt or close() of the session does
    t.join(30)
    # (the watchdog's exception is always a timeout; the job's owner tells a kill apart)
    assert got.get("ended") == "timeout", got
    assert time.monotonic() - t0 < 5.0


def test_a_job_is_stopped_when_its_run_passes_its_deadline(long_idle: None) -> None:
    # the run's own check() sees its deadline first; the job it started must stop with it
    from agentic_bash.shell.jobs import _JobBudget
    parent = limits.Budget(ab.Limits(timeout=0.3))
    job = _JobBudget(ab.Limits(timeout=None), parent, native=True)   # (its own deadline: none)
    got: dict[str, object] = {}
    t = threading.Thread(target=_busy, args=(job, got), daemon=True)
    t.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            parent.check()
        except LimitExceeded:
            break
        time.sleep(0.01)
    t.join(30)
    assert got.get("ended") == "timeout", got
    assert got["after"] < 5.0, got


# -- spawn environments ---------------------------------------------------------------------------

def _env_of(env: dict) -> bytes:
    r, w = os.pipe()
    try:
        p = N._popen_direct(["env"], executable="/usr/bin/env", env=env, cwd="/", stdin=0,
                            stdout=w, stderr=2, close_fds=True, restore_signals=True,
                            preexec_fn=None, process_group=0)
    finally:
        os.close(w)
    out = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        out += chunk
    os.close(r)
    assert p.wait(10) == 0
    return out


def test_spawn_environment_is_what_was_asked_each_time() -> None:
    assert _env_of({"A": "1", "B": "x y"}).split(b"\n")[:2] == [b"A=1", b"B=x y"]
    assert _env_of({"A": "2", "B": "x y"}).split(b"\n")[:2] == [b"A=2", b"B=x y"]
    # not cached: long values and non-str ones; a lone surrogate as Popen encodes it
    long = "v" * 5000
    assert _env_of({"L": long}) == b"L=" + long.encode() + b"\n"
    assert _env_of({b"K": b"\xff"}) == b"K=\xff\n"
    assert _env_of({"S": "a\udcffb"}) == b"S=a\xffb\n"
    # past the cache's size it starts again, and stays right
    for i in range(N._ENV_BYTES_MAX + 10):
        N._env_entry((f"V{i}", str(i)))
    assert len(N._ENV_BYTES) <= N._ENV_BYTES_MAX
    assert _env_of({"V3": "3", "V700": "x"}) == b"V3=3\nV700=x\n"
    with pytest.raises(ValueError):
        _env_of({"A=B": "1"})
    with pytest.raises(ValueError):   # (refused again: a bad name is never cached)
        _env_of({"A=B": "1"})


# -- the workload's niceness ----------------------------------------------------------------------

@pytest.mark.timeout(300)
def test_a_pipeline_stage_starts_at_the_workload_niceness() -> None:
    # a stage on a thread of its own starts its program through the spawner thread, which
    # runs at the workload's niceness: the program has it from its first instruction (before,
    # about a third of them printed 0 under load: the renice landed after the exec)
    from agentic_bash.executors.sandboxed import WORKLOAD_NICE
    try:
        sb = ab.Sandbox("namespace")
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"namespace sandbox unavailable: {e}")
    with sb:
        r = sb.run("for i in $(seq 20); do /usr/bin/nice | cat; done; /usr/bin/nice & wait")
        assert r.exit_code == 0, r.stderr
        assert r.stdout.split() == [str(WORKLOAD_NICE)] * 21, r.stdout


# -- pid 1's memory watchdog while the sandbox is quiet --------------------------------------------

def test_the_memory_watchdog_sleeps_while_quiet_and_wakes_for_a_request(monkeypatch) -> None:  # noqa: ANN001
    # a forked "pid 1" runs the watchdog's loop over a forked "runner" that plays S3's part
    # through S3Usage; /proc sampling is replaced by a counter (the test's host has other
    # processes, which would keep the watchdog at its full rate)
    import mmap

    from agentic_bash.isolation import watchdog as wd
    page = wd.WatchdogPage()
    if page.wake_fd is None:
        pytest.skip("no eventfd")
    counts = mmap.mmap(-1, 4096, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)

    def fake_sample(exclude=(), limit=None, known=None):  # noqa: ANN001, ANN202
        n = int.from_bytes(counts[0:8], "little") + 1
        counts[0:8] = n.to_bytes(8, "little")
        return 0, 0, []
    monkeypatch.setattr(wd, "sample", fake_sample)
    go_r, go_w = os.pipe()   # test -> runner: b"r" request, b"s" settle, b"q" quit
    cfg = {"resources": {"watchdog": {"memory": 1 << 30, "interval": 0.05}},
           "_watchdog_page": page, "network": "none"}
    s2 = os.fork()
    if s2 == 0:
        code = 1
        try:
            os.close(go_w)
            runner = os.fork()
            if runner == 0:
                u = wd.S3Usage(cfg)
                while True:
                    c = os.read(go_r, 1)
                    if c == b"r":
                        u.request()
                    elif c == b"s":
                        u.settle(None)
                    else:
                        os._exit(0)
            code = wd.s2_wait_with_watchdog(cfg, runner)
        finally:
            os._exit(code)
    os.close(go_r)

    def samples() -> int:
        return int.from_bytes(counts[0:8], "little")

    def during(seconds: float) -> int:
        n0 = samples()
        time.sleep(seconds)
        return samples() - n0
    try:
        time.sleep(0.3)
        quiet = during(2.0)            # at 1 s: 2-3 samples (at 50 ms it was ~40)
        t0 = time.monotonic()
        n0 = samples()
        os.write(go_w, b"r")           # a request: sampled at once, then every 50 ms
        while samples() == n0 and time.monotonic() - t0 < 10:
            time.sleep(0.005)
        woke = time.monotonic() - t0
        busy = during(1.0)
        os.write(go_w, b"s")
        time.sleep(0.3)
        quiet_again = during(2.0)
    finally:
        os.write(go_w, b"q")
        _, status = os.waitpid(s2, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert quiet <= 6, quiet
    assert woke < 0.5, woke            # (not the next quiet sample, up to 1 s later)
    assert busy >= 8, busy             # (20 a second unloaded; a starved machine gets fewer)
    assert quiet_again <= 6, quiet_again
