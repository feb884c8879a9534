"""Per-call paths of session 12: a native wait on the runner's serving thread watches the channel itself (no lend timer), and what still reaches a run through it."""

from __future__ import annotations

import io
import os
import socket
import sys
import threading
import time

import pytest

from agentic_bash.executors import native as N

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only"),
              pytest.mark.timeout(300)]


class _Watch:
    """What the runner's serve loop registers (runner.serve ``_Watch``), counting calls."""

    def __init__(self, fd: int | None, thread: int | None = None) -> None:
        self.thread = threading.get_ident() if thread is None else thread
        self.fd = fd
        self.calls: list[str] = []

    def enter(self) -> int | None:
        self.calls.append("enter")
        return self.fd

    def leave(self) -> None:
        self.calls.append("leave")

    def wake(self) -> None:
        self.calls.append("wake")


@pytest.fixture
def launcher():
    nl = N.NativeLauncher(pdeathsig=False)
    yield nl
    nl.close()
    N.watch_channel(None)


def _run(nl: N.NativeLauncher, argv: list[str], check=lambda: None) -> tuple[int, bytes, float]:
    """Spawn ``argv`` with a stdout pipe and wait_collecting it; (status, output, CPU s)."""
    r, w = os.pipe()
    try:
        p = nl.spawn(argv, executable=argv[0], env={"PATH": "/usr/bin:/bin"}, cwd="/",
                     stdin=0, stdout=w, stderr=2)
    finally:
        os.close(w)
    out = io.BytesIO()
    c0 = time.thread_time()
    st = N.wait_collecting(p, {r: out}, check, lambda: None)
    return st, out.getvalue(), time.thread_time() - c0


def test_a_short_program_never_watches_the_channel(launcher) -> None:
    a, b = socket.socketpair()
    try:
        watch = _Watch(a.fileno())
        N.watch_channel(watch)
        for _ in range(20):
            st, out, _ = _run(launcher, ["/bin/echo", "hi"])
            assert (st, out) == (0, b"hi\n")
        # (a program that took longer than _WATCH_AFTER on a loaded machine enters once;
        # ~0.5 ms each when idle, not all 20 of them past 2 ms)
        assert watch.calls.count("enter") < 20, watch.calls
        assert watch.calls.count("enter") == watch.calls.count("leave")
        assert "wake" not in watch.calls
    finally:
        a.close()
        b.close()


def test_a_long_wait_watches_the_channel_and_leaves_it(launcher) -> None:
    a, b = socket.socketpair()
    try:
        watch = _Watch(a.fileno())
        N.watch_channel(watch)
        st, out, _ = _run(launcher, ["/bin/sh", "-c", "sleep 0.3; echo done"])
        assert (st, out) == (0, b"done\n")
        assert watch.calls == ["enter", "leave"]
    finally:
        a.close()
        b.close()


def test_a_frame_on_the_channel_wakes_its_reader_once_and_the_wait_goes_on(launcher) -> None:
    a, b = socket.socketpair()
    try:
        watch = _Watch(a.fileno())
        N.watch_channel(watch)
        threading.Timer(0.1, b.send, args=(b"frame",)).start()
        t0 = time.monotonic()
        st, out, cpu = _run(launcher, ["/bin/sh", "-c", "sleep 0.8; echo done"])
        assert (st, out) == (0, b"done\n")
        assert time.monotonic() - t0 >= 0.7
        # the channel stays readable (nobody reads it here): woken once, then not watched,
        # so the wait does not spin on it for the remaining ~0.7 s
        assert watch.calls == ["enter", "wake", "leave"], watch.calls
        assert cpu < 0.3, cpu
    finally:
        a.close()
        b.close()


def test_a_wait_ended_by_its_check_leaves_the_watch_and_the_program(launcher) -> None:
    a, b = socket.socketpair()
    try:
        watch = _Watch(a.fileno())
        N.watch_channel(watch)
        end = time.monotonic() + 0.3

        def check() -> None:
            if time.monotonic() > end:
                raise KeyboardInterrupt

        r, w = os.pipe()
        try:
            p = launcher.spawn(["/bin/sleep", "30"], executable="/bin/sleep",
                               env={"PATH": "/usr/bin:/bin"}, cwd="/", stdin=0, stdout=w,
                               stderr=2)
        finally:
            os.close(w)
        with pytest.raises(KeyboardInterrupt):
            N.wait_collecting(p, {r: io.BytesIO()}, check, lambda: None)
        assert watch.calls == ["enter", "leave"]
        assert p.wait(10) is not None   # terminated, not left running
    finally:
        a.close()
        b.close()


def test_a_channel_someone_else_reads_is_not_watched(launcher) -> None:
    watch = _Watch(None)   # enter() says no: the standby thread holds the channel
    N.watch_channel(watch)
    st, out, _ = _run(launcher, ["/bin/sh", "-c", "sleep 0.2; echo done"])
    assert (st, out) == (0, b"done\n")
    assert watch.calls == ["enter", "leave"]


def test_other_threads_never_use_the_serving_threads_watch(launcher) -> None:
    a, b = socket.socketpair()
    try:
        watch = _Watch(a.fileno(), thread=-1)   # the serving thread is another one
        N.watch_channel(watch)
        st, out, _ = _run(launcher, ["/bin/sh", "-c", "sleep 0.2; echo done"])
        assert (st, out) == (0, b"done\n")
        assert watch.calls == []
    finally:
        a.close()
        b.close()


# -- through a sandbox: what the channel carries during a native wait still arrives ---------

def _sandbox():
    from agentic_bash import Sandbox
    try:
        return Sandbox("namespace")
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"namespace sandbox unavailable: {e}")


def test_close_during_a_native_wait_ends_the_sandbox() -> None:
    from agentic_bash.isolation.wire import WireClosed

    sb = _sandbox()
    try:
        ex = sb._ex
        with ex._lock:
            rid = ex._new_id()
            ex._send({"op": "run", "id": rid, "script": "/bin/sleep 60", "timeout": 120})
            time.sleep(0.3)   # (past the watch's start: the runner waits on the program)
            ex._send({"op": "close", "id": ex._new_id()})
            end = time.monotonic() + 30
            closed = False
            while time.monotonic() < end and not closed:
                try:
                    ex._reader.recv(1.0)
                except WireClosed:
                    closed = True
        assert closed
    finally:
        sb.close()


def test_interrupts_reach_native_waits_one_after_another() -> None:
    sb = _sandbox()
    try:
        for delay in (0.004, 0.05, 0.3):   # before, around and after the watch begins
            done = threading.Event()

            def interrupter() -> None:
                # (an interrupt before the run's request is out reaches nothing: again
                # every 50 ms until the run is over)
                done.wait(delay)
                while not done.wait(0.05):
                    sb.interrupt()
            t = threading.Thread(target=interrupter)
            t.start()
            start = time.monotonic()
            try:
                r = sb.run("/bin/sleep 30; echo not-reached", timeout=60)
            finally:
                done.set()
                t.join()
            assert time.monotonic() - start < 20
            assert r.exit_code == 130 and "not-reached" not in r.stdout, r
        r = sb.run("/bin/sleep 0.2; echo after")
        assert (r.exit_code, r.stdout) == (0, "after\n")
    finally:
        sb.close()


def test_streamed_output_and_stdin_during_native_waits() -> None:
    sb = _sandbox()
    try:
        got: list[bytes] = []
        r = sb._ex.run("for i in 1 2 3; do /bin/sleep 0.1; /bin/echo $i; done; /bin/cat",
                       stdin=b"from-stdin\n", on_output=lambda fd, b: got.append(b))
        assert r.exit_code == 0
        assert b"".join(got) == b"1\n2\n3\nfrom-stdin\n"
        # a stdin streamed from a pipe while the programs run
        rfd, wfd = os.pipe()
        threading.Timer(0.3, lambda: (os.write(wfd, b"late\n"), os.close(wfd))).start()
        with os.fdopen(rfd, "rb", buffering=0) as f:
            r = sb._ex.run("/bin/sleep 0.1; /bin/cat", stdin=f)
        assert (r.exit_code, r.stdout) == (0, "late\n")
        assert sb.run("echo after").stdout == "after\n"
    finally:
        sb.close()


# -- pid 1's descriptor guard (root, no memory watchdog) is woken by programs, not requests --

def _scheduled(pid: int) -> int:
    """How many times process ``pid``'s main thread has been scheduled in (schedstat)."""
    with open(f"/proc/{pid}/task/{pid}/schedstat") as f:
        return int(f.read().split()[2])


def test_the_descriptor_guard_sleeps_through_builtins_and_wakes_for_programs() -> None:
    sb = _sandbox()
    try:
        ex = sb._ex
        if not ex._resources.cfg.get("fd_guard"):
            pytest.skip("pid 1 runs the memory watchdog here, not the descriptor guard alone")
        pid1 = ex.pid
        with open(f"/proc/{pid1}/status") as f:
            nspid = [ln for ln in f if ln.startswith("NSpid:")][0].split()
        if nspid[-1] != "1":
            pytest.skip("pid 1 is not the channel's process here")
        sb.run("/bin/true")
        time.sleep(1.5)   # (quiet: the guard waits on its eventfd)
        before = _scheduled(pid1)
        for _ in range(20):   # an agent's pace: a pause before each call
            time.sleep(0.15)
            sb.run("echo hi")
        woke = _scheduled(pid1) - before
        # (its 1 s quiet timeout over ~3 s, and the odd stray wake-up; woken by each
        # request it was scheduled 20+ times)
        assert woke < 12, woke
        before = _scheduled(pid1)
        r = sb.run("/bin/sleep 1")
        assert r.exit_code == 0
        # a program started: the guard looks every 100 ms while it runs (~10 looks)
        assert _scheduled(pid1) - before >= 3, _scheduled(pid1) - before
    finally:
        sb.close()
