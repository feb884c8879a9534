"""Session integrity: a call never answers with another call's output, bad arguments fail first, a crash restarts."""

from __future__ import annotations

import asyncio
import glob
import os
import signal
import tempfile
import threading
import time
import warnings

import pytest

from agentic_bash import Limits, Sandbox, SandboxCrashed


def _sandboxed_levels() -> list[str]:
    try:
        from agentic_bash.isolation.plan import plan
        from agentic_bash.isolation.probe import probe
        caps = probe()
    except Exception:  # noqa: BLE001
        return []
    out = []
    for lvl in ("namespace", "landlock"):
        try:
            if plan(lvl, caps).level == lvl:
                out.append(lvl)
        except Exception:  # noqa: BLE001
            pass
    return out


SANDBOXED = _sandboxed_levels()
LEVELS = ["virtual", "none"] + SANDBOXED


def _make(level: str, **kw) -> Sandbox:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Sandbox(level, **kw)


@pytest.fixture(params=LEVELS)
def sb(request: pytest.FixtureRequest, tmp_path):
    s = _make(request.param)
    if request.param == "none":
        s.run(f"cd {tmp_path}")
    yield s
    s.close()


@pytest.fixture(scope="module", params=LEVELS)
def shared_sb(request: pytest.FixtureRequest, tmp_path_factory):
    """One sandbox per level for the tests that only check refusals (they change nothing)."""
    s = _make(request.param)
    if request.param == "none":
        s.run(f"cd {tmp_path_factory.mktemp('integrity')}")
    yield s
    s.close()


def _sigint_after(delay: float) -> threading.Thread:
    main = threading.main_thread()
    assert threading.current_thread() is main

    def fire() -> None:
        time.sleep(delay)
        os.kill(os.getpid(), signal.SIGINT)
    t = threading.Thread(target=fire, daemon=True)
    t.start()
    return t


BAD_RUN_ARGS = [
    (dict(timeout="5"), TypeError, "timeout"),
    (dict(timeout=-1), ValueError, "timeout"),
    (dict(timeout=float("nan")), ValueError, "timeout"),
    (dict(timeout=True), TypeError, "timeout"),
    (dict(stdin=5), TypeError, "stdin"),
    (dict(env={"A": 1}), TypeError, "env"),
    (dict(env={"A=B": "1"}), ValueError, "env"),
    (dict(env=["A"]), TypeError, "env"),
    (dict(cwd=3), TypeError, "cwd"),
]


@pytest.mark.parametrize("kw,exc,name", BAD_RUN_ARGS, ids=[str(a[0]) for a in BAD_RUN_ARGS])
def test_bad_run_arguments_fail_before_anything_runs(shared_sb: Sandbox, kw, exc, name) -> None:
    sb = shared_sb
    with pytest.raises(exc, match=name):
        sb.run("echo ran >> marker; echo hi", **kw)
    r = sb.run("echo 2")
    assert (r.stdout, r.exit_code) == ("2\n", 0)
    assert sb.run("echo 3").stdout == "3\n"  # and stays in step
    assert sb.run("test -e marker && echo yes || echo no").stdout == "no\n"


def test_run_none_is_a_type_error(shared_sb: Sandbox) -> None:
    sb = shared_sb
    with pytest.raises(TypeError, match="script"):
        sb.run(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="script"):
        sb.run(b"echo hi")  # type: ignore[arg-type]
    assert sb.run("echo ok").stdout == "ok\n"


def test_keyboard_interrupt_leaves_the_session_in_step(sb: Sandbox) -> None:
    t = _sigint_after(0.4)
    with pytest.raises(KeyboardInterrupt):
        sb.run("sleep 2; echo late")
        time.sleep(2)  # (if the run swallowed it, make sure it lands here instead)
    t.join()
    r = sb.run("echo 1")
    assert (r.stdout, r.stderr) == ("1\n", "")
    time.sleep(2)  # past the point where the abandoned run would have printed "late"
    r = sb.run("echo 2")
    assert (r.stdout, r.stderr) == ("2\n", "")


def test_streamed_output_of_an_abandoned_run_never_reaches_the_next(sb: Sandbox) -> None:
    seen: list[bytes] = []
    t = _sigint_after(0.5)
    with pytest.raises(KeyboardInterrupt):
        sb.run_stream("for i in 1 2 3 4 5 6 7 8; do echo old$i; sleep 0.15; done",
                      on_stdout=seen.append)
        time.sleep(2)
    t.join()
    got: list[bytes] = []
    r = sb.run_stream("echo new; sleep 0.3; echo new2", on_stdout=got.append)
    assert r.stdout == "new\nnew2\n"
    assert b"".join(got) == b"new\nnew2\n"


def test_a_call_timed_out_on_a_thread_completes_its_own_exchange(sb: Sandbox) -> None:
    out: dict[str, object] = {}

    def call() -> None:
        out["r"] = sb.run("sleep 0.5; echo first")
    t = threading.Thread(target=call)
    t.start()
    t.join(0.05)  # the caller gives up waiting; the call goes on
    r = sb.run("echo second")
    t.join()
    assert r.stdout == "second\n"
    assert out["r"].stdout == "first\n"  # type: ignore[attr-defined]


def test_asyncio_cancellation_does_not_shift_results(sb: Sandbox) -> None:
    async def main() -> str:
        task = asyncio.ensure_future(asyncio.to_thread(sb.run, "sleep 0.4; echo cancelled"))
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        r = await asyncio.to_thread(sb.run, "echo after")
        return r.stdout
    assert asyncio.run(main()) == "after\n"


@pytest.mark.skipif(not SANDBOXED, reason="no sandboxed isolation level here")
def test_a_late_interrupt_never_hits_the_next_run() -> None:
    with _make(SANDBOXED[0]) as sb:
        sb.run("true")
        ex = sb._ex
        ex._send_interrupt(ex._next_id)  # meant for the run that just ended
        r = sb.run("sleep 0.3; echo ok")
        assert (r.stdout, r.exit_code) == ("ok\n", 0)


# -- crash recovery (DESIGN.md decision 10) ----------------------------------------------------
@pytest.mark.skipif(not SANDBOXED, reason="no sandboxed isolation level here")
@pytest.mark.parametrize("level", SANDBOXED)
def test_killed_sandbox_restarts_with_its_files(level: str) -> None:
    with _make(level) as sb:
        sb.run("echo before > f; mkdir -p d && echo deep > d/g; X=live")
        pid = sb._ex.pid
        killer = threading.Timer(0.5, os.kill, (pid, signal.SIGKILL))
        killer.start()
        t0 = time.monotonic()
        with pytest.raises(SandboxCrashed):
            sb.run("sleep 3")
        assert time.monotonic() - t0 < 2.5
        r = sb.run("cat f d/g; echo X=$X")
        assert r.stdout == "before\ndeep\nX=\n", r
        assert r.restarted is True
        assert "died" in r.extra["restart_reason"]
        assert r.to_dict()["restarted"] is True
        r = sb.run("echo next")
        assert (r.stdout, r.restarted) == ("next\n", False)
        assert sb._ex.pid != pid


def _kill_then_run(sb) -> bool:
    """SIGKILL the sandbox from the host, then run: the run raises SandboxCrashed when its
    request reached the dying sandbox, or is sent to a restarted one when the sandbox was
    gone before it went out (EPIPE: sandboxed._deliver; under load the kill can win). True
    when it raised; else that run's Result says it restarted."""
    os.kill(sb._ex.pid, signal.SIGKILL)
    try:
        r = sb.run("sleep 3")
    except SandboxCrashed:
        return True
    assert r.restarted and r.exit_code == 0
    return False


@pytest.mark.skipif("namespace" not in SANDBOXED, reason="namespace level unavailable")
def test_restart_resumes_the_last_snapshots_shell_state() -> None:
    with _make("namespace") as sb:
        sb.run("X=snap; f() { echo fn; }; cd /tmp; echo t > /tmp/t")
        sb.snapshot()
        sb.run("X=after; cd /workspace")
        raised = _kill_then_run(sb)
        r = sb.run("echo $X; f; pwd; cat /tmp/t")
        assert r.stdout == "snap\nfn\n/tmp\nt\n"
        assert r.restarted == raised


@pytest.mark.skipif("namespace" not in SANDBOXED, reason="namespace level unavailable")
def test_file_calls_after_a_crash_restart_too() -> None:
    with _make("namespace") as sb:
        sb.write_file("a.txt", "A")
        os.kill(sb._ex.pid, signal.SIGKILL)
        import select
        assert select.select([sb._ex._sock], [], [], 30)[0]  # EOF: the sandbox is gone
        # a call made after the death never reached it: it goes to a restarted sandbox
        assert sb.read_file("a.txt") == b"A"
        assert sb.run("true").restarted  # the restart is reported by the next Result


# -- API misuse ---------------------------------------------------------------------------------
@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    d = tmp_path / "tmp"
    d.mkdir()
    monkeypatch.setenv("TMPDIR", str(d))
    monkeypatch.setattr(tempfile, "tempdir", None)
    return d


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("kw,exc,name", [
    (dict(limits={"timeout": 5}), TypeError, "limits"),
    (dict(bogus=1), TypeError, "bogus"),
    (dict(limit=Limits()), TypeError, "did you mean 'limits'"),
    (dict(env={"A": 1}), TypeError, "env"),
    (dict(workdir="rel"), ValueError, "workdir"),
    (dict(mounts={"/data": "/nonexistent-agb"}), ValueError, "mounts"),
    (dict(mounts={"/data": ("/tmp", "xyz")}), ValueError, "mode"),
    (dict(strict="yes"), TypeError, "strict"),
    (dict(commands="ls"), TypeError, "commands"),
    (dict(on_output=5), TypeError, "on_output"),
    (dict(transforms=[1]), TypeError, "transforms"),
    (dict(network="bogus"), ValueError, "network"),
    (dict(network=5), TypeError, "network"),
])
def test_bad_constructor_arguments_leave_nothing_behind(private_tmp, level, kw, exc, name) -> None:
    with pytest.raises(exc, match=name):
        _make(level, **kw)
    assert glob.glob(str(private_tmp / "agentic-bash-session-*")) == []


@pytest.mark.parametrize("network", ["public", "deny", "host", "allow",
                                     {"mode": "allowlist", "allow": ["pypi.org"]}])
def test_every_network_form_passes_the_checks(network) -> None:
    _make("virtual", network=network).close()


def test_bad_isolation_name() -> None:
    with pytest.raises(ValueError, match="isolation"):
        Sandbox("nope")
    with pytest.raises(TypeError, match="isolation"):
        Sandbox(3)  # type: ignore[arg-type]


def test_file_api_misuse(sb: Sandbox) -> None:
    with pytest.raises(TypeError, match="data"):
        sb.write_file("a", 5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="data"):
        sb.write_file("a", None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="mode"):
        sb.write_file("a", b"x", mode="644")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="path"):
        sb.read_file(7)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="NUL"):
        sb.exists("a\0b")
    assert not sb.exists("a")  # nothing was written by the refused calls
    sb.write_file("a", bytearray(b"ok"))
    assert sb.read_file("a") == b"ok"


def test_register_command_in_process_levels() -> None:
    with _make("virtual") as sb:
        def hello(ctx, argv):  # noqa: ANN001
            ctx.stdout.write(b"hello " + " ".join(argv[1:]).encode() + b"\n")
            return 3
        sb.register_command("hello", hello)
        r = sb.run("hello a b")
        assert (r.stdout, r.exit_code) == ("hello a b\n", 3)
        with pytest.raises(TypeError, match="fn"):
            sb.register_command("x", 5)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="name"):
            sb.register_command("a b", hello)


def _upper(ctx, argv):  # noqa: ANN001
    for line in ctx.stdin:
        ctx.stdout.write(line.upper())
    return 0


def _forever(ctx, argv):  # noqa: ANN001
    while True:
        ctx.stdout.write(b"y\n")


def _boom(ctx, argv):  # noqa: ANN001
    raise RuntimeError("bad")


def _slow(ctx, argv):  # noqa: ANN001
    ctx.stdout.write(b"slow started\n")
    ctx.stdout.flush()
    time.sleep(2)
    ctx.stdout.write(b"slow finished\n")
    return 0


def _uses_fs(ctx, argv):  # noqa: ANN001
    ctx.fs.exists("/")


@pytest.mark.skipif(not SANDBOXED, reason="no sandboxed isolation level here")
@pytest.mark.parametrize("level", SANDBOXED)
def test_register_command_in_sandboxed_levels(level: str) -> None:
    """The function runs in the host process; the sandboxed interpreter calls it over the
    channel with its stdin and output streamed."""
    seen_pid: list[int] = []

    def hello(ctx, argv):  # noqa: ANN001
        seen_pid.append(os.getpid())
        ctx.stdout.write(b"hello " + " ".join(argv[1:]).encode() + b"\n")
        ctx.stderr.write(b"to err\n")
        return 3
    with _make(level, commands={"hello": hello}) as sb:
        for name, fn in (("upper", _upper), ("forever", _forever), ("boom", _boom),
                         ("slow", _slow), ("usesfs", _uses_fs)):
            sb.register_command(name, fn)
        r = sb.run("hello a b; echo rc=$?")
        assert (r.stdout, r.stderr) == ("hello a b\nrc=3\n", "to err\n")
        assert seen_pid == [os.getpid()]
        assert sb.run("seq 1 20000 | upper | tail -2").stdout == "19999\n20000\n"
        assert sb.run("printf 'a\\nb\\n' | upper | cat -n").stdout == "     1\tA\n     2\tB\n"
        assert sb.run("forever | head -3; echo done").stdout == "y\ny\ny\ndone\n"
        assert sb.run('x=$(hello q 2>/dev/null); echo "[$x]"').stdout == "[hello q]\n"
        r = sb.run("boom; echo rc=$?")
        assert r.stdout == "rc=2\n" and "boom: internal error: RuntimeError: bad" in r.stderr
        r = sb.run("usesfs; echo rc=$?")
        assert r.stdout == "rc=2\n" and "ctx.fs is not available" in r.stderr
        # Ctrl-C while the host function runs: the session stays in step
        t = _sigint_after(0.5)
        with pytest.raises(KeyboardInterrupt):
            sb.run("slow; echo after-slow")
            time.sleep(3)
        t.join()
        r = sb.run("echo next")
        assert (r.stdout, r.stderr) == ("next\n", "")
        # registered commands survive a restart after a crash
        os.kill(sb._ex.pid, signal.SIGKILL)
        import select
        assert select.select([sb._ex._sock], [], [], 30)[0]
        r = sb.run("hello again")
        assert (r.stdout, r.exit_code, r.restarted) == ("hello again\n", 3, True)
        with pytest.raises(TypeError, match="fn"):
            sb.register_command("x", 5)  # type: ignore[arg-type]


# -- output: head and tail, and a run's leftovers stay in that run -----------------------------
@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("seq", ["seq", "/usr/bin/seq"])
def test_truncation_keeps_head_and_tail(level: str, seq: str) -> None:
    if level == "virtual" and seq.startswith("/usr"):
        seq = "seq"  # virtual mode has no native binaries; /usr/bin/seq is the builtin there
    with _make(level, limits=Limits(max_output_bytes=2000)) as sb:
        r = sb.run(f"{seq} 1 5000; echo rc=$?")
        assert r.truncated
        assert r.stdout.startswith("1\n2\n3\n")
        assert r.stdout.endswith("4999\n5000\nrc=0\n")  # the end of a log is where errors are
        assert "[agentic-bash: output truncated: " in r.stdout
        assert len(r.stdout_bytes) <= 2000 + 200
        r = sb.run(f"{seq} 1 5000 >&2; echo rc=$? >&2")
        assert r.truncated and r.stderr.endswith("5000\nrc=0\n") and r.stdout == ""
        r = sb.run("echo small")
        assert (r.stdout, r.truncated) == ("small\n", False)


@pytest.mark.parametrize("level", LEVELS)
def test_fork_bomb_messages_stay_in_their_run(level: str) -> None:
    with _make(level, limits=Limits(timeout=10)) as sb:
        r = sb.run(":(){ :|:& };:")
        assert "fork: Resource temporarily unavailable" in r.stderr
        for _ in range(3):
            r = sb.run("echo next")
            assert (r.stdout, r.stderr) == ("next\n", "")
            time.sleep(0.3)


_CTRL_C_CHILD = r"""
import sys, time
from agentic_bash import Sandbox
sb = Sandbox(sys.argv[1])
sb.run("echo kept > f")
print("ready", flush=True)
try:
    sb.run("sleep 5; echo late")
    print("not interrupted", flush=True)
except KeyboardInterrupt:
    pass
r = sb.run("cat f; echo after")
print(repr(r.stdout), r.restarted, flush=True)
sb.close()
"""


@pytest.mark.skipif(not SANDBOXED, reason="no sandboxed isolation level here")
@pytest.mark.parametrize("level", SANDBOXED)
def test_terminal_ctrl_c_to_the_process_group_spares_the_sandbox(level: str) -> None:
    """Ctrl-C in a terminal signals the whole foreground process group: the caller gets its
    KeyboardInterrupt, the sandbox (zygote and sandbox processes) carries on."""
    import subprocess
    import sys
    p = subprocess.Popen([sys.executable, "-c", _CTRL_C_CHILD, level], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        os.killpg(p.pid, signal.SIGINT)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert out.strip() == "'kept\\nafter\\n' False", (out, err[-2000:])
    assert "Traceback" not in err, err[-2000:]


@pytest.mark.parametrize("level", LEVELS)
def test_cancelling_a_queued_arun_spares_the_run_ahead_of_it(level: str, tmp_path) -> None:
    with _make(level) as sb:
        if level == "none":
            sb.run(f"cd {tmp_path}")

        async def main() -> tuple[str, int, str]:
            a = asyncio.ensure_future(sb.arun("sleep 1; echo A"))
            await asyncio.sleep(0.3)
            b = asyncio.ensure_future(sb.arun("echo B"))  # waits for A's turn
            await asyncio.sleep(0.2)
            b.cancel()
            with pytest.raises(asyncio.CancelledError):
                await b
            ra = await a
            # cancelling a task whose own run is going still interrupts that run
            c = asyncio.ensure_future(sb.arun("sleep 3; echo C"))
            await asyncio.sleep(0.4)
            c.cancel()
            with pytest.raises(asyncio.CancelledError):
                await c
            r = await sb.arun("echo next")
            return ra.stdout, ra.exit_code, r.stdout
        t0 = time.monotonic()
        assert asyncio.run(main()) == ("A\n", 0, "next\n")
        assert time.monotonic() - t0 < 3.5  # C was stopped, not waited for


class _LosesBytesOnce:
    """A socket whose next recv takes bytes off the wire and then raises KeyboardInterrupt,
    as a signal landing between the kernel's copy and our bookkeeping would."""

    def __init__(self, sock) -> None:  # noqa: ANN001
        self.sock, self.armed = sock, True

    def recv(self, n: int) -> bytes:
        data = self.sock.recv(n)
        if self.armed and data:
            self.armed = False
            raise KeyboardInterrupt
        return data

    def recv_into(self, buf, n: int = 0) -> int:  # noqa: ANN001
        got = self.sock.recv_into(buf, n)
        if self.armed and got:
            self.armed = False
            raise KeyboardInterrupt
        return got

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(self.sock, name)


@pytest.mark.skipif(not SANDBOXED, reason="no sandboxed isolation level here")
def test_bytes_lost_mid_frame_mean_a_restart_never_a_shifted_result() -> None:
    with _make(SANDBOXED[0]) as sb:
        sb.run("echo kept > f")
        reader = sb._ex._reader
        reader.sock = _LosesBytesOnce(reader.sock)
        with pytest.raises(KeyboardInterrupt):
            sb.run("echo lost")
        assert reader.torn
        r = sb.run("echo b; cat f")
        assert (r.stdout, r.restarted) == ("b\nkept\n", True)
        assert "mid-message" in r.extra["restart_reason"]


@pytest.mark.skipif("namespace" not in SANDBOXED, reason="namespace level unavailable")
def test_the_layer_fd_the_host_keeps_is_not_inherited() -> None:
    import fcntl
    with _make("namespace") as sb:
        fd = sb._ex._layer_fd
        assert fd is not None
        assert fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC


@pytest.mark.skipif("namespace" not in SANDBOXED, reason="namespace level unavailable")
def test_restart_carries_a_layer_over_in_pieces(monkeypatch) -> None:
    import agentic_bash.executors.sandboxed as sbx
    monkeypatch.setattr(sbx, "_LAYER_PIECE", 4096)  # many frames for a small layer
    with _make("namespace") as sb:
        sb.run("head -c 100000 /dev/urandom > r; sha256sum r > r.sum; mkdir -p a/b; "
               "ln -s ../r a/b/link; rm -f /etc/hostname 2>/dev/null; true")
        want = sb.run("cat r.sum; readlink a/b/link").stdout
        raised = _kill_then_run(sb)
        r = sb.run("sha256sum -c r.sum >/dev/null && cat r.sum; readlink a/b/link")
        assert (r.stdout, r.restarted) == (want, raised)


@pytest.mark.skipif(not SANDBOXED, reason="no sandboxed isolation level here")
def test_executor_refusing_a_mount_leaves_no_session_dir(private_tmp) -> None:
    from agentic_bash.executors.sandboxed import SandboxedExecutor
    with pytest.raises(NotADirectoryError):
        SandboxedExecutor(level=SANDBOXED[0], mounts={"/data": ("/nonexistent-agb", "ro")})
    assert glob.glob(str(private_tmp / "agentic-bash-session-*")) == []
