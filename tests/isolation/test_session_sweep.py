"""Session directories left by a host process that died without closing are removed by the next one."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import tempfile

import pytest

from agentic_bash.executors import sandboxed as sbx

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/ns/pid"), reason="needs /proc")


def _dir_of(ns: int, pid: int, start: str) -> str:
    return tempfile.mkdtemp(prefix=f"{sbx.SESSION_PREFIX}{ns}-{pid}-{start}-")


def test_dead_owners_dirs_go_live_and_foreign_ones_stay() -> None:
    ns = os.stat("/proc/self/ns/pid").st_ino
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    start = sbx._pid_start(p.pid)
    p.wait()
    assert start is not None
    dead = _dir_of(ns, p.pid, start)
    os.makedirs(os.path.join(dead, "workspace", "sub"))
    open(os.path.join(dead, "workspace", "sub", "f"), "w").write("x")
    # a live process (this one), another pid namespace, a reused pid (other start time)
    live = _dir_of(ns, os.getpid(), sbx._pid_start("self"))
    other_ns = _dir_of(ns + 1, p.pid, start)
    reused = _dir_of(ns, os.getpid(), "1")
    plain = tempfile.mkdtemp(prefix=sbx.SESSION_PREFIX)  # an old-style name: not ours to judge
    try:
        sbx.sweep_stale_sessions(ns)
        assert not os.path.exists(dead)
        assert not os.path.exists(reused)  # pid reused by a process that started later
        for d in (live, other_ns, plain):
            assert os.path.isdir(d), d
    finally:
        for d in (dead, live, other_ns, reused, plain):
            sbx._rmtree(d) if os.path.exists(d) else None


def test_new_session_dirs_carry_their_owner() -> None:
    d = sbx.new_session_dir()
    try:
        m = sbx._SESSION_DIR.match(os.path.basename(d))
        assert m is not None
        assert int(m.group(2)) == os.getpid() and m.group(3) == sbx._pid_start("self")
    finally:
        os.rmdir(d)



@pytest.mark.parametrize("err", [errno.EMFILE, errno.ENOMEM, errno.EACCES])
def test_an_owner_whose_stat_cannot_be_read_is_not_swept(monkeypatch, tmp_path, err) -> None:
    # an unreadable /proc/<pid>/stat (no descriptor or memory left, a restricted /proc) says
    # nothing about the owner: its session dir and zygote base stay (they were removed)
    from agentic_bash.isolation import procstat, zygote
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    ns = os.stat("/proc/self/ns/pid").st_ino
    start = sbx._pid_start("self")
    live = _dir_of(ns, os.getpid(), start)
    base = tempfile.mkdtemp(prefix=f"{zygote.BASE_PREFIX}{ns}-{os.getpid()}-{start}-")
    real_open = open

    def refusing_open(path, *a, **k):
        if str(path).startswith("/proc/") and str(path).endswith("/stat"):
            raise OSError(err, os.strerror(err), path)
        return real_open(path, *a, **k)

    monkeypatch.setattr(procstat, "open", refusing_open, raising=False)
    assert sbx.sweep_stale_sessions(ns) == 0
    assert zygote.sweep_stale_bases(str(tmp_path)) == 0
    assert os.path.isdir(live) and os.path.isdir(base)
