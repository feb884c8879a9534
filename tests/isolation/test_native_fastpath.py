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


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "python"])
def test_children_inherit_the_dispositions_without_a_preexec(restore_signals, monkeypatch,
                                                              compiled):
    seen = {}

    def spying(real):
        def spy(*a, **kw):
            seen.update(preexec=kw.get("preexec_fn"), restore=kw.get("restore_signals"))
            return real(*a, **kw)
        return spy

    # (the launcher starts through Popen, or through _popen_direct with the same arguments,
    # or through the compiled spawn, which has no preexec at all: argument 10 is
    # restore_signals)
    monkeypatch.setattr(N.subprocess, "Popen", spying(subprocess.Popen))
    monkeypatch.setattr(N, "_popen_direct", spying(N._popen_direct))
    if not compiled:
        monkeypatch.setattr(N, "_FAST", None)
    elif N._FAST is None:
        pytest.skip(f"the compiled spawn is {N.FAST_SPAWN}")
    else:
        import types
        real_spawn = N._FAST.spawn

        def spawn(*a):  # noqa: ANN002, ANN202
            seen.update(preexec=None, restore=a[10])
            return real_spawn(*a)
        monkeypatch.setattr(N, "_FAST", types.SimpleNamespace(spawn=spawn,
                                                              wait_step=N._FAST.wait_step))
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


@pytest.fixture
def thread_starts():
    """Who called threading's thread-start function (recorded under the hook), and the hook
    removed afterwards (it is process-wide)."""
    import threading

    callers: list[int] = []
    real = threading._start_new_thread if hasattr(threading, "_start_new_thread") \
        else threading._start_joinable_thread
    name = "_start_new_thread" if hasattr(threading, "_start_new_thread") \
        else "_start_joinable_thread"
    fail = []

    def recorder(*a, **kw):  # noqa: ANN002, ANN003, ANN202
        callers.append(threading.get_ident())
        if fail:
            raise RuntimeError("can't start new thread")
        return real(*a, **kw)
    setattr(threading, name, recorder)
    try:
        yield callers, fail
    finally:
        N._ThreadStarts.uninstall()
        setattr(threading, name, real)


def _on_thread(fn):  # noqa: ANN001, ANN202
    import threading

    out: dict = {}

    def body() -> None:
        out["ident"] = threading.get_ident()
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001
            out["error"] = e
    t = threading.Thread(target=body)
    t.start()
    t.join(30)
    assert not t.is_alive()
    return out


def test_adopted_run_thread_spawns_itself_and_starts_threads_through_the_helper(
        tmp_path, monkeypatch, thread_starts) -> None:  # noqa: ANN001
    """The run thread joins the group (a second "0"), taking the placeholder's slot; its own
    children are started on it (no hand-off), other threads' on the spawner, and every
    thread it starts is created by the helper thread (outside the group)."""
    import threading

    callers, fail = thread_starts
    tasks = tmp_path / "tasks"
    tasks.write_text("")
    fd = os.open(tasks, os.O_WRONLY | os.O_APPEND)
    started_on = []
    real = N.NativeLauncher._spawn
    monkeypatch.setattr(N.NativeLauncher, "_spawn",
                        lambda self, *a: started_on.append(threading.get_ident()) or real(self, *a))
    launcher = N.NativeLauncher(pdeathsig=False)
    try:
        launcher.confine_workload(spawner_fds=(fd,))
        holder = launcher._holder
        assert holder is not None and holder.is_alive() and tasks.read_text() == "0"

        def as_run_thread():  # noqa: ANN202
            assert launcher.adopt_run_thread()
            # (the helper itself was started by this thread, before it joined the group)
            callers.clear()
            _spawn_true(launcher)
            # a thread it starts (created by the helper) still hands its spawns over, and
            # cannot be adopted as a second run thread (checked while this one is alive:
            # thread ids are reused)
            other: dict = {}

            def other_thread() -> None:
                _spawn_true(launcher)
                other["adopted"] = launcher.adopt_run_thread()
            n0 = N.threads_started()
            t = threading.Thread(target=other_thread)
            t.start()
            t.join(30)
            other["counted"] = N.threads_started() - n0
            fail.append(1)   # a refused thread start reaches the caller as it would
            with pytest.raises(RuntimeError):
                threading.Thread(target=lambda: None).start()
            fail.clear()
            # (and is counted: the runner then reads the pids group's refusals)
            other["counted_refused"] = N.threads_started() - n0
            return threading.get_ident(), other
        out = _on_thread(as_run_thread)
        assert "error" not in out, out
        run_ident, other = out["value"]
        assert other == {"adopted": False, "counted": 1, "counted_refused": 2}
        assert tasks.read_text() == "00"          # the spawner's move, then the run thread's
        assert not holder.is_alive()              # the placeholder gave its slot up
        assert len(started_on) == 2
        assert started_on[0] == run_ident         # no hand-off for the run thread's child
        assert started_on[1] == launcher._thread.ident   # the other thread's: the spawner
        assert len(callers) == 2 and len(set(callers)) == 1 and run_ident not in callers
    finally:
        launcher.close()
        os.close(fd)


def test_no_adoption_without_a_workload_group(tmp_path, thread_starts) -> None:  # noqa: ANN001
    """Children not born in the group (no spawner_fds, or a spawner that could not join):
    nothing changes, and the placeholder (if any) keeps its slot."""
    callers, _ = thread_starts
    launcher = N.NativeLauncher(pdeathsig=False)
    try:
        launcher.confine_workload()
        assert _on_thread(launcher.adopt_run_thread)["value"] is False
        assert _on_thread(lambda: _spawn_true(launcher)).get("error") is None
    finally:
        launcher.close()
    ro = os.open(tmp_path, os.O_RDONLY)   # writing "0" to it fails: the spawner cannot join
    launcher = N.NativeLauncher(pdeathsig=False)
    try:
        launcher.confine_workload(spawner_fds=(ro,))
        assert not launcher._workload.in_group and launcher._holder is None
        assert _on_thread(launcher.adopt_run_thread)["value"] is False
        assert N._ThreadStarts._installed is None and N.threads_started() is None
    finally:
        launcher.close()
        os.close(ro)
