"""The launcher's Popen-free spawn behaves as subprocess.Popen: status, signals, exec errors, groups, reaping."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest

from agentic_bash.executors import native as N

pytestmark = pytest.mark.skipif(N._FORK_EXEC is None,
                                reason="this Python's fork_exec call is not a known layout")

ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}


def _both(argv, executable, cwd="/", env=ENV, **kw):
    """(Popen's outcome, _popen_direct's outcome): the exit code or (exception type, errno,
    filename)."""
    out = []
    for start in (subprocess.Popen, N._popen_direct):
        try:
            p = start(list(argv), executable=executable, env=dict(env), cwd=cwd, stdin=0,
                      stdout=subprocess.DEVNULL if start is subprocess.Popen else _null(),
                      stderr=subprocess.DEVNULL if start is subprocess.Popen else _null(),
                      close_fds=True, restore_signals=True, preexec_fn=None, **kw)
        except BaseException as e:  # noqa: BLE001
            out.append((type(e), getattr(e, "errno", None), getattr(e, "filename", None)))
            continue
        out.append(p.wait(10))
    return out


_nulls: list[int] = []


def _null() -> int:
    if not _nulls:
        _nulls.append(os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC))
    return _nulls[0]


def test_status_and_signal_as_popen():
    assert _both(["true"], "/bin/true", process_group=0) == [0, 0]
    assert _both(["sh", "-c", "exit 7"], "/bin/sh", process_group=0) == [7, 7]
    assert _both(["sh", "-c", "kill -TERM $$"], "/bin/sh", process_group=0) == \
        [-signal.SIGTERM, -signal.SIGTERM]


def test_exec_errors_as_popen(tmp_path):
    script = tmp_path / "noexec.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    binary = tmp_path / "junk"
    binary.write_bytes(b"\x00\x01\x02 not a program\n")
    binary.chmod(0o755)
    for argv, exe, cwd in ((["missing"], str(tmp_path / "missing"), "/"),
                           (["noexec"], str(script), "/"),
                           (["junk"], str(binary), "/"),
                           (["true"], "/bin/true", str(tmp_path / "no-such-dir"))):
        popen, direct = _both(argv, exe, cwd=cwd, process_group=0)
        assert isinstance(popen, tuple) and popen == direct, (argv, cwd, popen, direct)
    # (a cwd that cannot be entered names the cwd, as Popen's "noexec" does)
    assert _both(["true"], "/bin/true", cwd=str(tmp_path / "no-such-dir"),
                 process_group=0)[1][2] == str(tmp_path / "no-such-dir")


def test_joining_a_gone_group_is_permission_error():
    p = subprocess.Popen(["true"])
    p.wait()
    popen, direct = _both(["true"], "/bin/true", process_group=p.pid)
    assert popen[0] is PermissionError and direct == popen


def test_bad_environment_name_is_refused_before_the_fork():
    with pytest.raises(ValueError):
        N._popen_direct(["true"], executable="/bin/true", env={"A=B": "1"}, cwd="/",
                        stdin=0, stdout=_null(), stderr=_null(), close_fds=True,
                        restore_signals=True, preexec_fn=None, process_group=0)


def test_wait_with_timeout_and_a_dropped_child_is_reaped():
    c = N._popen_direct(["sleep", "5"], executable="/bin/sleep", env=ENV, cwd="/", stdin=0,
                        stdout=_null(), stderr=_null(), close_fds=True, restore_signals=True,
                        preexec_fn=None, process_group=0)
    with pytest.raises(subprocess.TimeoutExpired):
        c.wait(0.05)
    os.kill(c.pid, signal.SIGKILL)
    assert c.wait(10) == -signal.SIGKILL
    # a child dropped while still running is reaped at a later spawn, as Popen's _active are
    d = N._popen_direct(["sleep", "0.2"], executable="/bin/sleep", env=ENV, cwd="/", stdin=0,
                        stdout=_null(), stderr=_null(), close_fds=True, restore_signals=True,
                        preexec_fn=None, process_group=0)
    pid = d.pid
    del d
    assert pid in N._orphans
    import time
    end = time.monotonic() + 20
    while pid in N._orphans and time.monotonic() < end:
        time.sleep(0.1)
        N._popen_direct(["true"], executable="/bin/true", env=ENV, cwd="/", stdin=0,
                        stdout=_null(), stderr=_null(), close_fds=True, restore_signals=True,
                        preexec_fn=None, process_group=0).wait()
    assert pid not in N._orphans
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def test_launcher_children_get_only_their_fds(tmp_path):
    """Through the launcher (direct path): 0-2 as given, nothing else open in the child."""
    launcher = N.NativeLauncher(pdeathsig=False)
    leak = os.open(os.devnull, os.O_RDONLY)   # inheritable in this process: must not pass
    os.set_inheritable(leak, True)
    r, w = os.pipe()
    try:
        p = launcher.spawn(["sh", "-c", "ls /proc/self/fd"], executable="/bin/sh", env=ENV,
                           cwd=str(tmp_path), stdin=0, stdout=w, stderr=w)
        assert type(p._popen) is N._Child
        os.close(w)
        w = -1
        out = b""
        while chunk := os.read(r, 4096):
            out += chunk
        assert p.wait(10) == 0
    finally:
        os.close(r)
        os.close(leak)
        if w >= 0:
            os.close(w)
        launcher.close()
    fds = sorted(int(x) for x in out.split())
    assert fds[:3] == [0, 1, 2] and len(fds) == 4, out   # (+ the one ls opened)
