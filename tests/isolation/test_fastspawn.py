"""The compiled spawn and wait step (executors/_fastspawn.c) behave as the Popen-based path: statuses, exec errors, groups, sessions, signals, descriptors, limits, niceness, the wait's rounds; and the launcher uses it exactly where it should."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import time

import pytest

from agentic_bash.executors import native as N

F = N._FAST
pytestmark = pytest.mark.skipif(F is None, reason=f"the compiled spawn is {N.FAST_SPAWN}")

ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}


def spawn(argv, exe=None, *, env=ENV, cwd="/", fds=(0, 1, 2), pgid=0,  # noqa: ANN001, ANN201
          umask=-1, nice=0, restore=True, ignore=(), caps=(), rlimits=(), closed=(), moves=()):
    return F.spawn(exe or argv[0], argv, env, cwd, *fds, pgid, umask, nice, restore, ignore,
                   caps, rlimits, closed, moves)


def reap(pid: int, pidfd: int) -> int:
    if pidfd >= 0:
        os.close(pidfd)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def run(argv, **kw) -> tuple[int, bytes]:  # noqa: ANN001
    """Start ``argv`` with stdout and stderr on one pipe; (exit code, output)."""
    r, w = os.pipe()
    try:
        pid, pidfd = spawn(argv, fds=(kw.pop("stdin", 0), w, w), **kw)
    finally:
        os.close(w)
    out = b""
    while chunk := os.read(r, 65536):
        out += chunk
    os.close(r)
    return reap(pid, pidfd), out


def popen_outcome(argv, exe, cwd="/", **kw):  # noqa: ANN001, ANN201
    try:
        p = subprocess.Popen(argv, executable=exe, env=ENV, cwd=cwd, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, **kw)
    except OSError as e:
        return type(e), e.errno, e.filename
    return p.wait(10)


def fast_outcome(argv, exe, cwd="/", pgid=0):  # noqa: ANN001, ANN201
    null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    try:
        pid, pidfd = spawn(argv, exe, cwd=cwd, fds=(0, null, null), pgid=pgid)
    except OSError as e:
        return type(e), e.errno, e.filename
    finally:
        os.close(null)
    return reap(pid, pidfd)


def test_status_signal_and_exec_errors_as_popen(tmp_path) -> None:  # noqa: ANN001
    script = tmp_path / "noexec.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    binary = tmp_path / "junk"
    binary.write_bytes(b"\x00\x01\x02 not a program\n")
    binary.chmod(0o755)
    cases = [(["true"], "/bin/true", "/"), (["sh", "-c", "exit 7"], "/bin/sh", "/"),
             (["sh", "-c", "kill -TERM $$"], "/bin/sh", "/"),
             (["missing"], str(tmp_path / "missing"), "/"),
             (["noexec"], str(script), "/"), (["junk"], str(binary), "/"),
             (["dir"], str(tmp_path), "/"),
             (["true"], "/bin/true", str(tmp_path / "no-such-dir")),
             (["true"], "/bin/true", str(binary))]
    for argv, exe, cwd in cases:
        assert fast_outcome(argv, exe, cwd) == popen_outcome(argv, exe, cwd,
                                                             process_group=0), (argv, cwd)


def test_joining_a_gone_group_is_permission_error_named_by_the_cwd() -> None:
    p = subprocess.Popen(["true"])
    p.wait()
    assert fast_outcome(["true"], "/bin/true", "/", pgid=p.pid) == \
        popen_outcome(["true"], "/bin/true", "/", process_group=p.pid) == \
        (PermissionError, 1, "/")


def test_group_session_and_ctty_requests() -> None:
    code, out = run(["/bin/sh", "-c", "cut -d' ' -f5,6 /proc/$$/stat; echo $$"], pgid=0)
    (pgrp, sid), me = out.split(b"\n")[0].split(), out.split(b"\n")[1]
    assert code == 0 and pgrp == me and sid != me
    code, out = run(["/bin/sh", "-c", "cut -d' ' -f6 /proc/$$/stat; echo $$"], pgid=-2)
    assert code == 0 and out.split(b"\n")[0] == out.split(b"\n")[1]   # a new session
    code, out = run(["/bin/sh", "-c", "cut -d' ' -f5 /proc/$$/stat"], pgid=-1)
    assert code == 0 and int(out) == os.getpgrp()                     # left as it is


def test_bad_arguments_are_refused_before_the_clone() -> None:
    for kw in ({"env": {"A=B": "1"}}, {"env": {"A": "x\0y"}}, {"cwd": "/\0x"}):
        with pytest.raises(ValueError):
            spawn(["/bin/true"], **kw)
    with pytest.raises(ValueError):
        spawn(["/bin/true", "a\0b"])
    with pytest.raises(TypeError):
        spawn(["/bin/true", 3])


def test_environment_and_argv_reach_the_program_as_given() -> None:
    env = {"A": "1", "B": "two words", "C": "caf\u00e9", "D": "\udcff-raw"}
    code, out = run(["/usr/bin/env"], env=env)
    assert code == 0
    assert out == b"A=1\nB=two words\nC=caf\xc3\xa9\nD=\xff-raw\n"
    code, out = run(["/bin/sh", "-c", 'printf "%s|" "$0" "$@"', "zero", "a b", "", "\u00e9"])
    assert out == "zero|a b||\u00e9|".encode()


def test_signals_ignored_and_restored_and_the_mask_is_the_callers() -> None:
    grep = ["/bin/grep", "-E", "^Sig(Ign|Blk)", "/proc/self/status"]
    old = signal.getsignal(signal.SIGPIPE)
    try:
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        _, out = run(grep, restore=True)
        fields = dict(ln.split(":\t") for ln in out.decode().splitlines())
        assert not int(fields["SigIgn"], 16) & (1 << (signal.SIGPIPE - 1))
        _, out = run(grep, restore=False, ignore=(signal.SIGINT, signal.SIGQUIT))
        fields = dict(ln.split(":\t") for ln in out.decode().splitlines())
        ign = int(fields["SigIgn"], 16)
        assert ign & (1 << (signal.SIGPIPE - 1))             # inherited (restore=False)
        assert ign & (1 << (signal.SIGINT - 1)) and ign & (1 << (signal.SIGQUIT - 1))
        assert int(fields["SigBlk"], 16) == 0
    finally:
        signal.signal(signal.SIGPIPE, old)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    try:
        _, out = run(grep)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})
    blk = int(dict(ln.split(":\t") for ln in out.decode().splitlines())["SigBlk"], 16)
    assert blk == 1 << (signal.SIGUSR1 - 1)   # (as Popen's vfork path: the caller's mask)


def test_only_0_to_2_and_the_moves_reach_the_child(tmp_path) -> None:  # noqa: ANN001
    leak = os.open(os.devnull, os.O_RDONLY)
    os.set_inheritable(leak, True)
    f = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT, 0o644)
    g = os.open(tmp_path / "g", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        _, out = run(["/bin/ls", "/proc/self/fd"])
        assert sorted(int(x) for x in out.split()) == [0, 1, 2, 3]   # (+ ls's own)
        _, out = run(["/bin/sh", "-c", "echo to7 >&7; echo to9 >&9"], moves=((7, f), (9, g)))
        assert (tmp_path / "f").read_text() == "to7\n"
        assert (tmp_path / "g").read_text() == "to9\n"
        # two moves whose targets are each other's sources: each child fd gets its source
        _, out = run(["/bin/bash", "-c", f"echo a >&{g}; echo b >&{f}"], moves=((g, f), (f, g)))
        assert (tmp_path / "f").read_text() == "to7\na\n"
        assert (tmp_path / "g").read_text() == "to9\nb\n"
        code, out = run(["/bin/sh", "-c", "echo x >&7"], closed=(), moves=())
        assert code != 0 and b"Bad file descriptor" in out
        # a closed stdin (bash's <&-)
        code, out = run(["/bin/sh", "-c", "cat; echo rc=$?"], closed=(0,))
        assert b"rc=1" in out and b"Bad file descriptor" in out
    finally:
        for fd in (leak, f, g):
            os.close(fd)


def test_limits_umask_nice_and_cwd(tmp_path) -> None:  # noqa: ANN001
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    cap = 300 << 20
    code, out = run(["/bin/grep", "-E", "^Max (data|open)", "/proc/self/limits"],
                    caps=((resource.RLIMIT_DATA, cap),),
                    rlimits=((resource.RLIMIT_NOFILE, 50, 60),))
    lines = {ln[:13]: ln.split() for ln in out.decode().splitlines()}
    inf = resource.RLIM_INFINITY
    want = [str(cap if v == inf or v > cap else v) for v in (soft, hard)]
    assert lines["Max data size"][3:5] == want
    assert lines["Max open file"][3:5] == ["50", "60"]
    # a shell ulimit above what is allowed is ignored (its own stays), as setrlimit's EPERM
    code, out = run(["/bin/sh", "-c", "ulimit -d"], caps=((resource.RLIMIT_DATA, cap),),
                    rlimits=((resource.RLIMIT_DATA, cap * 2, cap * 2),))
    assert int(out) * 1024 == cap or os.geteuid() == 0
    code, out = run(["/bin/sh", "-c", "umask; cut -d' ' -f19 /proc/$$/stat; pwd"],
                    umask=0o027, nice=7, cwd=str(tmp_path))
    assert out.decode().split() == ["0027", "7", str(tmp_path)]


def test_the_data_cap_holds_from_the_first_instruction() -> None:
    code, out = run(["/usr/bin/python3", "-c", "bytearray(200 << 20)"],
                    caps=((resource.RLIMIT_DATA, 100 << 20),))
    assert code == 1 and b"MemoryError" in out


def test_clone_refused_is_blocking_io_error(monkeypatch) -> None:  # noqa: ANN001
    """The kernel's EAGAIN (RLIMIT_NPROC, the pids group) is BlockingIOError, as from Popen."""
    if os.geteuid() == 0:
        pytest.skip("RLIMIT_NPROC does not bind root")
    old = resource.getrlimit(resource.RLIMIT_NPROC)
    resource.setrlimit(resource.RLIMIT_NPROC, (0, old[1]))
    try:
        with pytest.raises(BlockingIOError):
            spawn(["/bin/true"])
    finally:
        resource.setrlimit(resource.RLIMIT_NPROC, old)


def test_wait_step_rounds() -> None:
    r, w = os.pipe()
    x, y = os.pipe()
    pid, pidfd = spawn(["/bin/sh", "-c", "echo one; sleep 0.3; echo two"], fds=(0, w, w))
    os.close(w)
    try:
        ended, data, ready = F.wait_step([pidfd], [r], [x], 5000, 65536)
        assert (ended, data, ready) == ([], [(r, b"one\n")], [])     # output: back at once
        t = time.monotonic()
        ended, data, ready = F.wait_step([pidfd], [r], [x], 50, 65536)
        assert (ended, data, ready) == ([], [], []) and time.monotonic() - t < 5  # timeout
        os.write(y, b"!")
        assert F.wait_step([pidfd], [r], [x], 5000, 65536) == ([], [], [x])   # an extra fd
        os.read(x, 1)
        got = b""
        while True:
            ended, data, ready = F.wait_step([pidfd], [r], [x], 5000, 65536)
            got += b"".join(d for _, d in data)
            if ended:
                break
        assert got == b"two\n" and ended == [0]
        if (r, b"") not in data:   # (the last output and the end may come in one round)
            assert F.wait_step((), [r], (), 0, 65536)[1] == [(r, b"")]
    finally:
        os.close(r)
        os.close(x)
        os.close(y)
    assert reap(pid, pidfd) == 0


def test_launcher_takes_the_compiled_path_and_falls_back(monkeypatch) -> None:  # noqa: ANN001
    calls: list[str] = []
    real = F

    class Spy:
        @staticmethod
        def spawn(*a):  # noqa: ANN002, ANN205
            calls.append(a[0])
            return real.spawn(*a)
        wait_step = staticmethod(real.wait_step)
    monkeypatch.setattr(N, "_FAST", Spy)
    launcher = N.NativeLauncher(pdeathsig=False)
    launcher.max_data = 256 << 20
    null = os.open(os.devnull, os.O_RDWR)
    try:
        p = launcher.spawn(["true"], executable="/bin/true", env=ENV, cwd="/", stdin=null,
                           stdout=null, stderr=null)
        assert p.wait(10) == 0 and p.capped and calls == ["/bin/true"]
        # a preexec (pdeathsig: host mode) keeps the Python path
        host = N.NativeLauncher(pdeathsig=True)
        try:
            p = host.spawn(["true"], executable="/bin/true", env=ENV, cwd="/", stdin=null,
                           stdout=null, stderr=null)
            assert p.wait(10) == 0 and not p.capped and calls == ["/bin/true"]
        finally:
            host.close()
        # and the launcher's own error for a missing program is Popen's
        with pytest.raises(FileNotFoundError) as e:
            launcher.spawn(["nope"], executable="/nonexistent/nope", env=ENV, cwd="/",
                           stdin=null, stdout=null, stderr=null)
        assert e.value.filename == "/nonexistent/nope"
    finally:
        os.close(null)
        launcher.close()
