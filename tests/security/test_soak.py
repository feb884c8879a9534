"""Soak and faults, bounded for CI: sessions x runs leak nothing; a killed sandbox restarts over its files; a full layer is ENOSPC."""

from __future__ import annotations

import glob
import os
import signal
import tempfile
import threading
import time

import pytest

import agentic_bash as ab
from agentic_bash.errors import SandboxCrashed

from _support import sandbox_supported

ok, why = sandbox_supported()
pytestmark = [pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}"),
              pytest.mark.slow, pytest.mark.timeout(300)]


def _descendants() -> set[int]:
    from agentic_bash.isolation.zygote import _zygote
    root = _zygote.pid if _zygote is not None else os.getpid()
    parent = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    data = f.read()
            except OSError:
                continue
            fields = data.rsplit(")", 1)[1].split()
            if fields[0] != "Z":
                parent[int(d)] = int(fields[1])
    out = set()
    for pid in parent:
        p = pid
        while p in parent and p not in (root, 0, 1):
            p = parent[p]
        if p == root and pid != root:
            out.add(pid)
    return out


def _counts(tmp: str) -> dict:
    with open("/proc/self/mountinfo") as f:
        mounts = len(f.read().splitlines())
    return {"fds": len(os.listdir("/proc/self/fd")), "mounts": mounts,
            "procs": len(_descendants()),
            "session_dirs": len(glob.glob(os.path.join(tmp, "agentic-bash-session-*"))),
            "cgroups": len(glob.glob(f"/sys/fs/cgroup/*/**/agentic-bash-{os.getpid()}-*",
                                     recursive=True))}


@pytest.fixture
def private_tmp(tmp_path):
    old = tempfile.tempdir
    tempfile.tempdir = str(tmp_path)
    try:
        yield str(tmp_path)
    finally:
        tempfile.tempdir = old


def _settle(pred, seconds: float = 10.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.1)
    return pred()


def test_sessions_times_runs_leak_nothing(private_tmp: str) -> None:
    sb = ab.Sandbox()          # warm the zygote before the baseline
    sb.run("true")
    sb.close()
    time.sleep(0.3)
    before = _counts(private_tmp)
    sessions, runs = 4, 8
    for _ in range(sessions):
        with ab.Sandbox() as sb:
            for j in range(runs):
                r = sb.run(f"echo {j} > f{j}; cat f{j}; /bin/true; "
                           + ("sleep 300 & setsid sleep 301 >/dev/null 2>&1 &" if j == 3 else ""))
                assert r.stdout.startswith(f"{j}\n"), r
    assert _settle(lambda: _counts(private_tmp) == before), (before, _counts(private_tmp))


def test_sandbox_killed_mid_run_restarts_over_its_files(private_tmp: str) -> None:
    with ab.Sandbox() as sb:
        sb.run("echo kept > /workspace/k; mkdir -p /workspace/d && echo 2 > /workspace/d/f")
        pid = sb._ex.pid
        killer = threading.Timer(1.0, lambda: os.kill(pid, signal.SIGKILL))
        killer.start()
        t0 = time.monotonic()
        with pytest.raises(SandboxCrashed):
            sb.run("sleep 30")
        assert time.monotonic() - t0 < 20
        killer.join()
        r = sb.run("cat /workspace/k /workspace/d/f")
        assert r.stdout == "kept\n2\n" and r.restarted, r
        # the attacker's side: the script tries to kill its own interpreter (refused by
        # seccomp: tests/isolation/test_runner_signals.py), the session goes on
        r = sb.run("python3 -c 'import os, signal; os.kill(os.getppid(), signal.SIGKILL)'; "
                   "cat /workspace/k")
        assert r.stdout == "kept\n" and not r.restarted, r
    assert _settle(lambda: _counts(private_tmp)["session_dirs"] == 0)
    assert _settle(lambda: not any(p for p in _descendants()
                                   if _cmd(p).startswith("sleep")))


def _cmd(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def test_full_upper_layer_is_enospc_inside_and_loses_nothing(private_tmp: str) -> None:
    lim = ab.Limits(max_fs_bytes=16 << 20)
    with ab.Sandbox(limits=lim) as sb:
        sb.run("echo precious > /workspace/keep")
        r = sb.run("dd if=/dev/zero of=/workspace/fill bs=1M count=64 2>&1; echo rc=$?; "
                   "echo more >> /workspace/keep; echo rc2=$?")
        assert "No space left" in r.stdout + r.stderr, r
        assert "rc=0" not in r.stdout
        r = sb.run("rm -f /workspace/fill; cat /workspace/keep; echo x > /workspace/new && cat "
                   "/workspace/new")
        assert r.stdout.startswith("precious\n") and r.stdout.endswith("x\n"), r
