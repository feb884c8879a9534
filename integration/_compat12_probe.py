"""compat12: what programs in a default Sandbox() are told about its memory (/proc/meminfo, free, sysinfo), run as one identity; prints JSON."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
import traceback

from agentic_bash import Limits, Sandbox

MiB = 1 << 20

# a reader of the view in the sandbox: its MemTotal/MemFree/MemAvailable in bytes
_KB = r"""awk '/^(MemTotal|MemFree|MemAvailable|Cached|SwapTotal):/ {printf "%s=%.0f ", $1, $2*1024} END {print ""}' /proc/meminfo"""

# python in the sandbox: hold N MiB (touched) in one process and poll, from another,
# until MemAvailable shows it gone (or a deadline); then let go and poll until it is back
_LIVE = r"""
import json, subprocess, sys, time
def avail():   # (each open is a new reader: the view is rewritten for it)
    with open("/proc/meminfo", "rb") as f:
        for line in f.read().splitlines():
            if line.startswith(b"MemAvailable:"):
                return int(line.split()[1]) * 1024
n = int(sys.argv[1])
before = avail()
hog = subprocess.Popen([sys.executable, "-c",
    "import sys, time; x = bytearray(%d << 20); x[::4096] = b'y' * len(x[::4096]); "
    "print('held', flush=True); time.sleep(60)" % n], stdout=subprocess.PIPE, text=True)
assert hog.stdout.readline().strip() == "held"
t0 = time.monotonic(); during = avail()
while before - during < (n * 3 // 4) << 20 and time.monotonic() - t0 < 20:
    time.sleep(0.05); during = avail()
seen_after = time.monotonic() - t0
# one reader that keeps the file open and re-reads it (top, free -s)
f = open("/proc/meminfo", "rb")
def reread():
    f.seek(0)
    for line in f.read().splitlines():
        if line.startswith(b"MemAvailable:"):
            return int(line.split()[1]) * 1024
held_open = reread()
hog.kill(); hog.wait()
t0 = time.monotonic(); after = avail()
while before - after > (n // 4) << 20 and time.monotonic() - t0 < 20:
    time.sleep(0.05); after = avail()
t0 = time.monotonic(); open_after = reread()
while before - open_after > (n // 4) << 20 and time.monotonic() - t0 < 20:
    time.sleep(0.05); open_after = reread()
f.close()
print(json.dumps({"before": before, "during": during, "after": after, "seen_after": seen_after,
                  "held_open": held_open, "open_after": open_after}))
"""

# the file as a program may touch it: not writable, not chmod-able, no lease
_HOSTILE = r"""
import errno, fcntl, json, os
out = {}
for what, fn in (("open_rw", lambda: os.open("/proc/meminfo", os.O_RDWR)),
                 ("chmod", lambda: os.chmod("/proc/meminfo", 0o666)),
                 ("truncate", lambda: os.truncate("/proc/meminfo", 0)),
                 ("unlink", lambda: os.unlink("/proc/meminfo"))):
    try:
        fn(); out[what] = "ok"
    except OSError as e:
        out[what] = errno.errorcode.get(e.errno, str(e.errno))
fd = os.open("/proc/meminfo", os.O_RDONLY)
for name, kind in (("lease_rd", fcntl.F_RDLCK), ("lease_wr", fcntl.F_WRLCK)):
    try:
        fcntl.fcntl(fd, 1024, kind); out[name] = "ok"
        fcntl.fcntl(fd, 1024, fcntl.F_UNLCK)
    except OSError as e:
        out[name] = errno.errorcode.get(e.errno, str(e.errno))
os.close(fd)
print(json.dumps(out))
"""


def _kv(line: str) -> dict[str, int]:
    return {k.rstrip(":"): int(v) for k, v in (x.split("=") for x in line.split())}


def t_view() -> dict:
    """The figures every tool shows, at the default limits and at 1 GiB without a cap."""
    out: dict = {}
    for name, limits in (("default", None), ("1g", Limits(max_memory_bytes=1 << 30,
                                                          max_process_memory=None))):
        with Sandbox(limits=limits) as sb:
            lim = sb._ex.limits
            r = sb.run(_KB + "; free -b | awk '/^Mem:/ {print $2, $3, $4, $7}';"
                       " busybox free -b | awk '/^Mem:/ {print $2, $3, $4, $6, $7}';"
                       " python3 -c 'import os; print(os.sysconf(\"SC_PHYS_PAGES\")"
                       " * os.sysconf(\"SC_PAGE_SIZE\"))';"
                       " stat -c %F /proc/meminfo", timeout=60)
            lines = r.stdout.splitlines()
            got = {"limit": lim.max_memory_bytes, "cap": lim.max_process_memory,
                   "exit": r.exit_code, "err": r.stderr[-500:], "raw": r.stdout}
            if len(lines) >= 5:
                got.update(meminfo=_kv(lines[0]), free=[int(x) for x in lines[1].split()],
                           busybox=[int(x) for x in lines[2].split()],
                           phys=int(lines[3]), kind=lines[4])
            if shutil.which("node"):
                n = sb.run("node -e 'const os = require(\"os\"); "
                           "console.log(os.totalmem(), os.freemem())'", timeout=60)
                got["node"] = [int(x) for x in n.stdout.split()] if n.exit_code == 0 else n.stderr
            got["note"] = [x for x in sb.isolation.notes if x.startswith("memory view")]
            out[name] = got
    with open("/proc/meminfo") as f:
        out["host_total"] = int(f.readline().split()[1]) * 1024
    return out


def t_live() -> dict:
    with Sandbox() as sb:
        sb.write_file("/tmp/live.py", _LIVE.encode())
        r = sb.run("python3 /tmp/live.py 200", timeout=120)
        return {"exit": r.exit_code, "out": r.stdout, "err": r.stderr[-2000:]}


def t_hostile() -> dict:
    with Sandbox() as sb:
        sb.write_file("/tmp/h.py", _HOSTILE.encode())
        r = sb.run("python3 /tmp/h.py", timeout=60)
        got: dict = {"exit": r.exit_code, "err": r.stderr[-1000:]}
        got["h"] = json.loads(r.stdout) if r.exit_code == 0 else r.stdout
        # a flood: 4 processes open/close it as fast as they can for 2 s, and pid 1 is sent
        # its own view signals (RTMIN+4/+5) meanwhile; the sandbox serves on and the view is
        # still live afterwards
        t0 = time.monotonic()
        r = sb.run("for i in 1 2 3 4; do python3 -c '\n"
                   "import time\nend = time.monotonic() + 2; n = 0\n"
                   "while time.monotonic() < end:\n"
                   "    open(\"/proc/meminfo\").read(); n += 1\n"
                   "print(n)' & done; "
                   "for i in $(seq 50); do kill -s RTMIN+4 1; kill -s RTMIN+5 1; done "
                   "2>/dev/null; wait; echo done", timeout=60)
        got["flood"] = {"exit": r.exit_code, "out": r.stdout, "dt": time.monotonic() - t0,
                        "err": r.stderr[-500:]}
        t0 = time.monotonic()
        r = sb.run(_KB, timeout=30)
        got["after"] = {"exit": r.exit_code, "kv": _kv(r.stdout) if r.exit_code == 0 else {},
                        "dt": time.monotonic() - t0}
    with open("/proc/meminfo") as f:
        got["host_total"] = int(f.readline().split()[1]) * 1024
    return got


def check(name: str, out: dict, fn) -> None:
    try:
        out[name] = fn()
    except Exception:  # noqa: BLE001
        out[name] = {"error": traceback.format_exc()[-3000:]}


def main() -> None:
    out: dict = {"uid": os.getuid()}
    fns = {"view": t_view, "live": t_live, "hostile": t_hostile}
    for n in sys.argv[1:] or list(fns):
        check(n, out, fns[n])
    print("\n@@JSON@@" + json.dumps(out, default=sorted))


if __name__ == "__main__":
    main()
