"""The one /proc/<pid>/stat reader (isolation/procstat.py) and its users: names with spaces and parentheses, gone processes, children and group members."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest

from agentic_bash.isolation import procstat

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")


@pytest.fixture
def odd_child(tmp_path):
    """A sleeping child whose command name is ``a) b (c`` (comm may hold both)."""
    exe = tmp_path / "a) b (c"
    shutil.copy("/bin/sleep", exe)
    p = subprocess.Popen([str(exe), "30"], start_new_session=True)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{p.pid}/comm") as f:
                if f.read().strip() == "a) b (c":
                    break
        except OSError:
            pass
        time.sleep(0.02)
    yield p
    p.kill()
    p.wait()


def test_fields_after_an_odd_name(odd_child) -> None:
    f = procstat.stat_fields(odd_child.pid)
    assert f is not None
    assert int(f[procstat.PPID]) == os.getpid()
    assert int(f[procstat.PGRP]) == odd_child.pid  # its own session and group
    assert f[procstat.STATE] in (b"R", b"S", b"D")
    assert int(f[procstat.THREADS]) == 1
    with open("/proc/self/stat", "rb") as fh:
        assert int(fh.read().rpartition(b")")[2].split()[19]) > 0
    # (the fields that cannot change between the two reads: state, times and memory can)
    g = dict(procstat.processes())[odd_child.pid]
    stable = (procstat.PPID, procstat.PGRP, procstat.START)
    assert [g[i] for i in stable] == [f[i] for i in stable] and len(g) == len(f)


def test_gone_process_is_none(odd_child) -> None:
    odd_child.kill()
    odd_child.wait()
    assert procstat.stat_fields(odd_child.pid) is None
    assert procstat.stat_fields("nonexistent") is None
    assert odd_child.pid not in dict(procstat.processes())


def test_users_agree(odd_child) -> None:
    from agentic_bash.executors.sandboxed import _pid_start
    from agentic_bash.isolation.runner import _children
    from agentic_bash.isolation.watchdog import _members, _threads
    assert odd_child.pid in _children()
    assert _members(set(), {odd_child.pid}, os.getpid()) == [odd_child.pid]
    assert _members({odd_child.pid}, set(), os.getpid()) == [odd_child.pid]
    assert _threads(odd_child.pid) == 1
    assert _pid_start(odd_child.pid) == procstat.stat_fields(odd_child.pid)[procstat.START].decode()
    assert _pid_start(odd_child.pid).isdigit()
