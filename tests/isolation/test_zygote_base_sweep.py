"""A zygote killed before its atexit leaves its base directory (/dev/shm/agentic-bash-base-*): the next zygote of this user and pid namespace removes it, and only it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from agentic_bash.isolation import zygote
from agentic_bash.isolation.procstat import START, stat_fields

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only"),
              pytest.mark.timeout(300)]


def _tag(pid: int, start: str) -> str:
    return f"{os.stat('/proc/self/ns/pid').st_ino}-{pid}-{start}-"


def test_sweep_removes_only_bases_of_zygotes_that_are_gone(tmp_path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    me = stat_fields("self")[START].decode()
    names = {
        "dead": zygote.BASE_PREFIX + _tag(dead.pid, "12345") + "abc",        # gone
        "reused": zygote.BASE_PREFIX + _tag(os.getpid(), "1") + "abc",      # pid reused since
        "live": zygote.BASE_PREFIX + _tag(os.getpid(), me) + "abc",          # still running
        "other_ns": zygote.BASE_PREFIX + f"1-{dead.pid}-12345-abc",          # not ours to judge
        "old_style": zygote.BASE_PREFIX + "u4fpq32v",                        # no owner in it
    }
    for name in names.values():
        (tmp_path / name / "etc").mkdir(parents=True)
        (tmp_path / name / "etc" / "passwd").write_text("x\n")
    (tmp_path / (zygote.BASE_PREFIX + _tag(dead.pid, "9") + "file")).write_text("not a dir")
    assert zygote.sweep_stale_bases(str(tmp_path)) == 2
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted([names["live"], names["other_ns"], names["old_style"],
                           zygote.BASE_PREFIX + _tag(dead.pid, "9") + "file"])


_CHILD = """
import sys, warnings
warnings.simplefilter("ignore")
from agentic_bash import Sandbox
from agentic_bash.isolation.zygote import get_zygote
sb = Sandbox()
print(sb.run("echo up").stdout.strip(), get_zygote().proc.pid, flush=True)
sys.stdin.read()
"""


def test_next_zygote_sweeps_a_killed_zygotes_base() -> None:
    from agentic_bash.isolation.plan import plan
    from agentic_bash.isolation.probe import probe
    if plan("namespace", probe()).level != "namespace":
        pytest.skip("no kernel sandbox here")
    d = zygote._tmpfs_dir()
    if d is None:
        pytest.skip("no writable /dev/shm tmpfs")
    p = subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    try:
        up, zpid = p.stdout.readline().split()
        assert up == "up"
        zpid = int(zpid)
        start = stat_fields(zpid)[START].decode()
        mine = [n for n in os.listdir(d) if n.startswith(zygote.BASE_PREFIX + _tag(zpid, start))]
        assert len(mine) == 1, os.listdir(d)
        os.kill(zpid, signal.SIGKILL)       # no atexit: the base stays
    finally:
        p.kill()
        p.wait()
    assert os.path.isdir(os.path.join(d, mine[0]))
    out = subprocess.run([sys.executable, "-c", _CHILD.replace("sys.stdin.read()", "")],
                         capture_output=True, text=True, timeout=120)
    assert out.stdout.startswith("up "), out.stderr[-2000:]
    end = time.monotonic() + 30
    while os.path.exists(os.path.join(d, mine[0])) and time.monotonic() < end:
        time.sleep(0.1)
    assert not os.path.exists(os.path.join(d, mine[0]))
