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


def _host_available() -> int:
    """The host's MemAvailable (bytes): the view's free figures never exceed it."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


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
            got["host_available"] = _host_available()
            got["note"] = [x for x in sb.isolation.notes if x.startswith("memory view")]
            # the shell's own reads (its redirections open with O_NONBLOCK: a held lease
            # made them fail with EAGAIN) and the file API
            b = sb.run("read k v u < /proc/meminfo; echo $v; mapfile -t a < /proc/meminfo; "
                       "echo ${#a[@]}; echo $(< /proc/meminfo) | cut -d' ' -f2", timeout=60)
            got["builtins"] = [b.exit_code, b.stdout, b.stderr[-500:]]
            got["api"] = sb.read_file("/proc/meminfo").split(b"\n")[0].decode()
            out[name] = got
    with open("/proc/meminfo") as f:
        out["host_total"] = int(f.readline().split()[1]) * 1024
    return out


def t_live() -> dict:
    with Sandbox() as sb:
        sb.write_file("/tmp/live.py", _LIVE.encode())
        host0 = _host_available()
        r = sb.run("python3 /tmp/live.py 200", timeout=120)
        return {"exit": r.exit_code, "out": r.stdout, "err": r.stderr[-2000:],
                "limit": sb._ex.limits.max_memory_bytes,
                "host_available": min(host0, _host_available())}


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
                   "import os; os.write(1, b\"%d\\n\" % n)' & done; "
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


_HELLO = ('public class Hello { public static void main(String[] a) { System.out.println('
          '"hello " + Runtime.getRuntime().maxMemory() / 1048576); } }')


def t_none_java() -> dict:
    """isolation='none' has no supervisor: java sized its heap from the host's RAM and did
    not start under the 384 MiB per-program cap."""
    import tempfile
    import warnings
    d = tempfile.mkdtemp(prefix="c12-none-")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with Sandbox(isolation="none", workdir=d) as sb:
                sb.write_file(os.path.join(d, "Hello.java"), _HELLO.encode())
                r = sb.run("java -version; echo rc=$?; javac Hello.java && java Hello; "
                           "ulimit -d", timeout=180)
                note = [n for n in sb.isolation.notes if "JAVA_TOOL_OPTIONS" in n]
                r2 = sb.run("env -u JAVA_TOOL_OPTIONS java -Xmx64m Hello", timeout=120)
        return {"exit": r.exit_code, "out": r.stdout, "err": r.stderr[-2000:], "note": note,
                "own": [r2.exit_code, r2.stdout, r2.stderr[-500:]],
                "hs_err": [n for n in os.listdir(d) if n.startswith("hs_err")]}
    finally:
        shutil.rmtree(d, ignore_errors=True)


def t_psutil() -> dict:
    """A user's venv with psutil from PyPI, and top: both read the sandbox's /proc/meminfo."""
    with Sandbox() as sb:
        lim = sb._ex.limits.max_memory_bytes
        r = sb.run("cd /tmp && python3 -m venv v && v/bin/pip install -q psutil 2>&1 | tail -3; "
                   "v/bin/python -c 'import psutil; m = psutil.virtual_memory(); "
                   "print(m.total, m.available, m.used)'; top -bn1 | grep -m1 'Mem :'",
                   timeout=240)
        return {"exit": r.exit_code, "out": r.stdout, "err": r.stderr[-2000:], "limit": lim}


def check(name: str, out: dict, fn) -> None:
    try:
        out[name] = fn()
    except Exception:  # noqa: BLE001
        out[name] = {"error": traceback.format_exc()[-3000:]}


def main() -> None:
    out: dict = {"uid": os.getuid()}
    fns = {"view": t_view, "live": t_live, "hostile": t_hostile, "none_java": t_none_java,
           "psutil": t_psutil}
    for n in sys.argv[1:] or list(fns):
        check(n, out, fns[n])
    print("\n@@JSON@@" + json.dumps(out, default=sorted))


if __name__ == "__main__":
    main()
