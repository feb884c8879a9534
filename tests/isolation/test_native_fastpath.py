"""A confined workload (SIGXFSZ ignored) still starts through the vfork fast path."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest

from agentic_bash.executors import native as N


@pytest.fixture
def restore_signals():
    saved = {s: signal.getsignal(s) for s in (signal.SIGPIPE, signal.SIGXFSZ)}
    yield
    for s, h in saved.items():
        signal.signal(s, h)


def test_children_inherit_the_dispositions_without_a_preexec(restore_signals, monkeypatch):
    seen = {}
    real = subprocess.Popen

    def spy(*a, **kw):
        seen.update(preexec=kw.get("preexec_fn"), restore=kw.get("restore_signals"))
        return real(*a, **kw)

    monkeypatch.setattr(N.subprocess, "Popen", spy)
    launcher = N.NativeLauncher(pdeathsig=False)
    launcher.confine_workload(ignore_sigxfsz=True)
    r, w = os.pipe()
    try:
        p = launcher.spawn(["sh", "-c", "grep -E '^Sig(Ign|Blk)' /proc/self/status"],
                           executable="/bin/sh", env={"PATH": "/usr/bin:/bin"}, cwd="/",
                           stdin=0, stdout=w, stderr=2)
        os.close(w)
        w = -1
        out = b""
        while chunk := os.read(r, 4096):
            out += chunk
        assert p.wait(10) == 0
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)
    assert seen == {"preexec": None, "restore": False}   # no Python in the child: vfork
    fields = dict(line.split(":\t") for line in out.decode().splitlines())
    ign = int(fields["SigIgn"], 16)
    assert ign & (1 << (signal.SIGXFSZ - 1))             # a write past RLIMIT_FSIZE: EFBIG
    assert not ign & (1 << (signal.SIGPIPE - 1))         # `yes | head` still ends yes
    assert int(fields["SigBlk"], 16) == 0
    # this process: SIGPIPE handled (EPIPE still raised here), never SIG_IGN or SIG_DFL
    assert signal.getsignal(signal.SIGPIPE) not in (signal.SIG_IGN, signal.SIG_DFL)
    a, b = os.pipe()
    os.close(a)
    with pytest.raises(BrokenPipeError):
        os.write(b, b"x")
    os.close(b)


def _spawn_true(launcher):  # noqa: ANN001, ANN202
    p = launcher.spawn(["/bin/true"], executable="/bin/true", env={"PATH": "/bin"}, cwd="/",
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    assert p.wait(10) == 0
    return p


def test_spawner_thread_joins_the_workload_group_once(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    """With ``spawner_fds`` (v1 ``tasks`` files) one thread writes "0" there once and every
    child is started on it (born in the group): nothing is moved by pid afterwards."""
    import threading

    tasks, procs = tmp_path / "tasks", tmp_path / "cgroup.procs"
    tasks.write_text("")
    procs.write_text("")
    fds = [os.open(tasks, os.O_WRONLY | os.O_APPEND), os.open(procs, os.O_WRONLY | os.O_APPEND)]
    started_on = []
    real = N.NativeLauncher._spawn
    monkeypatch.setattr(N.NativeLauncher, "_spawn",
                        lambda self, *a: started_on.append(threading.get_ident()) or real(self, *a))
    launcher = N.NativeLauncher(pdeathsig=False)
    try:
        launcher.confine_workload(cgroup_fds=(fds[1],), spawner_fds=(fds[0],))
        assert launcher._workload.in_group
        for _ in range(3):
            _spawn_true(launcher)
        assert tasks.read_text() == "0"     # one self-move, at the thread's start
        assert procs.read_text() == ""      # no per-child move
        assert len(set(started_on)) == 1 and started_on[0] != threading.get_ident()
    finally:
        launcher.close()
        for fd in fds:
            os.close(fd)


def test_spawner_that_cannot_join_falls_back_to_moving_each_child(tmp_path) -> None:  # noqa: ANN001
    procs = tmp_path / "cgroup.procs"
    procs.write_text("")
    ro = os.open(tmp_path / "cgroup.procs", os.O_RDONLY)   # a write to it fails: no join
    wfd = os.open(procs, os.O_WRONLY | os.O_APPEND)
    launcher = N.NativeLauncher(pdeathsig=False)
    try:
        launcher.confine_workload(cgroup_fds=(wfd,), spawner_fds=(ro,))
        assert not launcher._workload.in_group
        p = _spawn_true(launcher)
        assert procs.read_text() == str(p.pid)
    finally:
        launcher.close()
        os.close(ro)
        os.close(wfd)
