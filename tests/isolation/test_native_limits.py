"""Limits.max_processes, max_address_space and max_process_memory are applied to native children (host mode here)."""

from __future__ import annotations

import resource
import signal
import subprocess
import sys
import warnings

import pytest

from agentic_bash import Limits, Sandbox

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux rlimits")


def _host(tmp_path, **limits) -> Sandbox:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # isolation='none' warns loudly
        return Sandbox(isolation="none", workdir=str(tmp_path), limits=Limits(**limits))


def test_max_processes_refuses_one_more_native_child(tmp_path):
    with _host(tmp_path, max_processes=2) as sb:
        r = sb.run("/bin/sleep 5 & /bin/sleep 5 & /bin/true; echo st=$?; kill %1 %2; wait")
        assert "st=254" in r.stdout, r
        assert "fork: Resource temporarily unavailable" in r.stderr, r
        assert sb.run("/bin/true; echo st=$?").stdout == "st=0\n"


def test_max_memory_caps_each_native_process(tmp_path):
    grab = "python3 -c 'bytearray(512 * 1024 * 1024)' 2>/dev/null; echo st=$?"
    with _host(tmp_path, max_address_space=256 * 1024 * 1024) as sb:
        assert sb.run(grab).stdout != "st=0\n"
    with _host(tmp_path, max_process_memory=None) as sb:
        assert sb.run(grab).stdout == "st=0\n"


def test_max_process_memory_caps_each_native_process(tmp_path):
    # RLIMIT_DATA, 384 MiB by default (host mode forks for its death signal anyway, so the
    # cap is set before exec): 600 MiB fails, 100 fits
    grab = "python3 -c 'bytearray({} * 1024 * 1024)' 2>/dev/null; echo st=$?"
    with _host(tmp_path) as sb:
        assert sb.run(grab.format(600)).stdout == "st=1\n"
        assert sb.run(grab.format(100)).stdout == "st=0\n"
    with _host(tmp_path, max_process_memory=64 * 1024 * 1024) as sb:
        assert sb.run(grab.format(100)).stdout == "st=1\n"


def test_cap_data_kills_a_program_already_past_the_cap():
    # the vfork path caps right after the spawn; a program that allocated first (the runner
    # was slow to reach it) must not keep more than the cap
    from agentic_bash.executors.native import _cap_data
    hog = subprocess.Popen([sys.executable, "-c", "import sys; b = bytearray(200 << 20); "
                            "b[::4096] = b'x' * len(b[::4096]); print('up', flush=True); "
                            "sys.stdin.read()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    small = subprocess.Popen([sys.executable, "-c", "import sys; print('up', flush=True); "
                              "sys.stdin.read(); bytearray(200 << 20)"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL)
    try:
        assert hog.stdout.readline() == b"up\n" and small.stdout.readline() == b"up\n"
        _cap_data(hog.pid, 64 << 20)
        _cap_data(small.pid, 64 << 20)
        assert hog.wait(timeout=30) == -signal.SIGKILL
        assert resource.prlimit(small.pid, resource.RLIMIT_DATA)[1] == 64 << 20
        small.stdin.close()  # now it allocates past the cap: MemoryError, not a kill
        assert small.wait(timeout=30) == 1
    finally:
        for p in (hog, small):
            if p.poll() is None:
                p.kill()
                p.wait()
