"""NativeLauncher on the host: groups, status, timeouts, fds, signals."""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest

from agentic_bash.executors.native import NativeLauncher

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")


def run(launcher: NativeLauncher, script: str, pgid: int | None = None):
    r, w = os.pipe()
    p = launcher.spawn(["sh", "-c", script], executable="/bin/sh", env={"PATH": "/usr/bin:/bin"},
                       cwd="/", stdin=0, stdout=w, stderr=w, pgid=pgid)
    os.close(w)
    out = b""
    while chunk := os.read(r, 65536):
        out += chunk
    os.close(r)
    return p, out


@pytest.mark.parametrize("pdeathsig", [True, False])
def test_status_fds_and_signals(pdeathsig: bool) -> None:
    with NativeLauncher(pdeathsig=pdeathsig) as nl:
        keep = os.open("/dev/null", os.O_RDONLY)  # must not leak into the child
        try:
            p, out = run(nl, f"test -e /proc/self/fd/{keep} && echo leak; "
                             "grep SigIgn /proc/self/status; exit 3")
        finally:
            os.close(keep)
        assert p.wait() == 3
        assert b"leak" not in out
        ign = int(out.split(b"SigIgn:\t")[1].split()[0], 16)
        if pdeathsig:
            assert ign == 0  # the preexec path resets every signal, real-time ones included
        else:
            # the fast path (no preexec) restores SIGPIPE, which `yes | head -1` relies on; a
            # signal the caller itself ignores stays ignored there, as bash passes it on
            assert not ign & (1 << (13 - 1))  # SIGPIPE
        p, _ = run(nl, "kill -TERM $$")
        assert p.wait() == 128 + signal.SIGTERM


def test_group_join_and_kill_group() -> None:
    nl = NativeLauncher(pdeathsig=False)
    kw = dict(executable="/bin/sleep", env={}, cwd="/", stdin=0, stdout=1, stderr=2)
    a = nl.spawn(["sleep", "30"], pgid=None, **kw)
    b = nl.spawn(["sleep", "30"], pgid=a.pgid, **kw)
    assert os.getpgid(a.pid) == a.pid
    assert os.getpgid(b.pid) == a.pgid
    t = time.monotonic()
    assert a.wait(0.1) is None
    a.kill_group(signal.SIGKILL)
    assert a.wait(5) == 137 and b.wait(5) == 137
    assert time.monotonic() - t < 3
    nl.close()


def test_exec_failure_raises() -> None:
    nl = NativeLauncher()
    with pytest.raises(FileNotFoundError):
        nl.spawn(["x"], executable="/nonexistent/x", env={}, cwd="/", stdin=0, stdout=1,
                 stderr=2)
    nl.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs capabilities to drop")
def test_drop_caps() -> None:
    with NativeLauncher(drop_caps=True) as nl:
        p, out = run(nl, "grep -E 'CapEff|CapBnd' /proc/self/status")
        assert p.wait() == 0
        assert b"CapEff:\t0000000000000000" in out and b"CapBnd:\t0000000000000000" in out


@pytest.mark.parametrize("pdeathsig", [True, False])
def test_ignored_signals_reach_the_child(pdeathsig: bool) -> None:
    # bash: `trap '' SIG` stays ignored in the programs it runs (SIG_IGN survives execve)
    with NativeLauncher(pdeathsig=pdeathsig) as nl:
        r, w = os.pipe()
        p = nl.spawn(["sh", "-c", "grep SigIgn /proc/self/status"], executable="/bin/sh",
                     env={"PATH": "/usr/bin:/bin"}, cwd="/", stdin=0, stdout=w, stderr=w,
                     ignore=(signal.SIGUSR1, signal.SIGHUP))
        os.close(w)
        out = b""
        while chunk := os.read(r, 65536):
            out += chunk
        os.close(r)
        assert p.wait() == 0
        ign = int(out.split(b"SigIgn:\t")[1].split()[0], 16)
        assert ign & (1 << (signal.SIGUSR1 - 1)) and ign & (1 << (signal.SIGHUP - 1))
        assert not ign & (1 << (signal.SIGPIPE - 1))
