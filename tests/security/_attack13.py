"""Attacks on a default Sandbox() that leave its memory cgroup full with the runner as the OOM killer's only pick (tmpfs, SysV IPC, many small programs, a killed program's page tables), judged on the host; prints JSON."""

# Usage: python _attack13.py PART TOKEN. test_attack13_host.py runs each part as root and
# (runuser) as the unprivileged user. Helpers (Fresh, call, main) come from _attack9.py, which
# also gives this process a private TMPDIR before agentic_bash is imported. Every hostile
# program caps itself (bytes, counts, seconds) and the limits are small (128 MiB), so a run
# before a fix costs the host little. The verdict: no run raised (SandboxCrashed reached no
# caller), the session answered afterwards, and nothing was left after close().

from __future__ import annotations

import os
import sys
import textwrap
import time
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _attack9 import Fresh, _res, call, main  # noqa: E402

import agentic_bash as ab  # noqa: E402

MiB = 1 << 20
LIMIT = 128 * MiB

# memory no process owns: bytes and empty files in /tmp (the session layer) and /dev/shm up
# to ENOSPC, then SysV segments (made, filled, detached) until shmget refuses, at most 160 MiB
FILL_PY = textwrap.dedent(r'''
    import ctypes, os, sys, time
    cap = int(sys.argv[1]) << 20
    got = 0
    for where in ("/tmp", "/dev/shm"):
        try:
            with open(where + "/data", "wb") as f:
                while got < cap:
                    f.write(b"\1" * (1 << 20)); f.flush(); got += 1 << 20
        except OSError as e:
            pass
        print(where, "data", os.path.getsize(where + "/data") >> 20, flush=True)
        os.makedirs(where + "/d", exist_ok=True)
        n = 0
        try:
            while got < cap:
                os.mknod("%s/d/%d" % (where, n)); n += 1; got += 1024
        except OSError as e:
            pass
        print(where, "inodes", n, flush=True)
    l = ctypes.CDLL(None, use_errno=True)
    l.shmat.restype = ctypes.c_void_p
    for mb in (16, 4, 1):
        while got < cap:
            i = l.shmget(0, ctypes.c_size_t(mb << 20), 0o1600)
            if i < 0:
                break
            a = l.shmat(i, None, 0)
            if a in (None, 2 ** 64 - 1):
                break
            ctypes.memset(ctypes.c_void_p(a), 1, mb << 20)
            l.shmdt(ctypes.c_void_p(a))
            got += mb << 20
            print("sysv", mb, flush=True)
    print("filled", got >> 20, flush=True)
''')

PAGETABLES_PY = textwrap.dedent(r'''
    import mmap, sys
    gib = int(sys.argv[1])
    # (attack11's) reads at a 2 MiB stride of a never-written mapping: 4 KiB of page table
    # each, kernel memory of this process, freed after its death only once an RCU grace
    # period has passed
    m = mmap.mmap(-1, gib << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x4000,
                  prot=mmap.PROT_READ)
    s = 0
    for off in range(0, gib << 30, 2 << 20):
        s += m[off]
    print("survived", flush=True)
''')


def _runs(sb: Any, script: str, n: int, timeout: float = 60) -> list[dict[str, Any]]:
    """``script`` n times; each a Result's figures, or the exception that reached us."""
    out = []
    for _ in range(n):
        try:
            r = sb.run(script, timeout=timeout)
            out.append({**_res(r), "limit": r.limit_exceeded})
        except ab.SandboxError as e:
            out.append({"exc": f"{type(e).__name__}: {e}"[:300]})
    return out


def _mem(sb: Any) -> dict[str, Any]:
    return {"backend": sb.isolation.mechanisms.get("memory_limit")}


# -- part "unowned": tmpfs files and SysV segments up to the limit, then commands -------------
_IPC = ("shmmax", "shmall", "msgmni", "sem")


def _host_ipc() -> dict[str, str]:
    out = {}
    for k in _IPC:
        with open(f"/proc/sys/kernel/{k}") as f:
            out[k] = f.read().split()
    return out


def part_unowned(token: str) -> dict[str, Any]:
    out: dict[str, Any] = {"limit": LIMIT, "host_ipc_before": _host_ipc()}
    fr = Fresh(limits=ab.Limits(max_memory_bytes=LIMIT))
    with fr as sb:
        out.update(_mem(sb))
        # (the sandbox's own IPC namespace gets its own knobs; the host's stay as they were)
        out["ipc_inside"] = sb.run("cd /proc/sys/kernel && cat " + " ".join(_IPC),
                                   timeout=30).stdout.split()
        out["host_ipc_during"] = _host_ipc()
        sb.write_file("/tmp/fill.py", FILL_PY.encode())
        r = call(lambda: _runs(sb, "python3 /tmp/fill.py 160", 1, 120)[0], 150)
        out["fill"] = r.get("value", r)
        out["after"] = _runs(sb, "/bin/true; echo $?; x=$(seq 1 2000 | wc -l); echo $x", 4)
        out["alive"] = call(lambda: sb.run("echo alive", timeout=30).stdout, 60)
    out["left"] = fr.left
    out["host_ipc_after"] = _host_ipc()
    return out


# -- part "small": many small programs hold the memory; one more command ----------------------
def part_small(token: str) -> dict[str, Any]:
    out: dict[str, Any] = {"limit": LIMIT}
    fr = Fresh(limits=ab.Limits(max_memory_bytes=LIMIT))
    with fr as sb:
        out.update(_mem(sb))
        # 40 programs of ~6 MiB (3 MiB of their own), each allocating as it starts: each
        # smaller than the runner (25-30 MiB), together past the limit (the OOM killer takes
        # some while the loop still starts others)
        r = call(lambda: _runs(
            sb, "for i in $(seq 40); do python3 -c 'import time; "
            "x=bytearray(b\"a\")*(3<<20); time.sleep(30)' & done; sleep 5; jobs | wc -l",
            1)[0], 90)
        out["start"] = r.get("value", r)
        out["after"] = _runs(sb, "/bin/true; echo $?", 8)
        out["alive"] = call(lambda: sb.run("kill %1 2>/dev/null; kill $(jobs -p) 2>/dev/null;"
                                           " wait; echo alive", timeout=30).stdout, 60)
    out["left"] = fr.left
    return out


# -- part "pagetables": a program killed for its page tables, then commands at once -----------
def part_pagetables(token: str) -> dict[str, Any]:
    out: dict[str, Any] = {"limit": LIMIT}
    fr = Fresh(limits=ab.Limits(max_memory_bytes=LIMIT))
    with fr as sb:
        out.update(_mem(sb))
        sb.write_file("/tmp/pt.py", PAGETABLES_PY.encode())
        rounds = []
        t0 = time.monotonic()
        while len(rounds) < 12 and time.monotonic() - t0 < 60:
            rounds.append(_runs(sb, "python3 /tmp/pt.py 256", 1)[0])
            rounds.append(_runs(sb, "sleep 0.1; /bin/true; echo $?", 2))
        out["rounds"] = rounds
        out["alive"] = call(lambda: sb.run("echo alive", timeout=30).stdout, 60)
    out["left"] = fr.left
    return out


PARTS: dict[str, Callable[[str], dict[str, Any]]] = {
    "unowned": part_unowned, "small": part_small, "pagetables": part_pagetables,
}


if __name__ == "__main__":
    main(PARTS)
