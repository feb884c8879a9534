"""Attacks on a default Sandbox() through kernel memory and counts the earlier passes left unseen (page tables, tmpfs inodes, VMAs, AIO, ptys, epoll watches, a blinded watchdog), judged on the host; prints JSON."""

# Usage: python _attack11.py PART TOKEN. test_attack11_host.py runs each part as root and
# (runuser) as the unprivileged user. Helpers (Fresh, call, leftovers, main) come from
# _attack9.py, which also gives this process a private TMPDIR before agentic_bash is imported.
# Every hostile program caps itself (bytes, counts, seconds), so a run before a fix costs the
# host at most a few hundred MiB for a few seconds and never takes a whole count.

from __future__ import annotations

import ctypes
import os
import sys
import textwrap
import threading
import time
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _attack9 import Fresh, _res, call, main  # noqa: E402

import agentic_bash as ab  # noqa: E402

MiB = 1 << 20
LIMIT = 256 * MiB


def _tree(sb: Any) -> list[int]:
    """Host pids of every process of the sandbox (S1 and below)."""
    top = sb._ex.pid
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(d))
    out, todo = [], [top]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += kids.get(p, [])
    return out


def _status_kib(pid: int, key: bytes) -> int:
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


class _HostSampler:
    """The host's view of a sandbox while a run goes on: the sum of one /proc/<pid>/status
    figure over the sandbox's processes, its peak, and how long it stayed above ``over``."""

    def __init__(self, sb: Any, key: bytes, over: int) -> None:
        self.sb, self.key, self.over = sb, key, over
        self.peak = 0
        self.above = 0.0
        self.stop = threading.Event()
        self.t = threading.Thread(target=self._go, daemon=True)

    def _go(self) -> None:
        last = time.monotonic()
        while not self.stop.is_set():
            v = sum(_status_kib(p, self.key) for p in _tree(self.sb)) << 10
            now = time.monotonic()
            if v > self.over:
                self.above += now - last
            last = now
            self.peak = max(self.peak, v)
            time.sleep(0.05)

    def __enter__(self) -> "_HostSampler":
        self.t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.t.join(5)


def _settled(sb: Any) -> None:
    """What a killed attack held is freed a little after the kill: go on once a run sees no
    kill."""
    end = time.monotonic() + 20
    while time.monotonic() < end:
        if sb.run("sleep 0.3", timeout=30).limit_exceeded is None:
            return


# -- part "kernelmem": kernel memory no process's pages show -----------------------------------
PAGETABLES_PY = textwrap.dedent(r'''
    import mmap, sys, time
    gib = int(sys.argv[1])
    # read-only, never written, not reserved: no page of its own (every read maps the shared
    # zero page, which no RSS counts), no RLIMIT_DATA charge; each 2 MiB read costs one 4 KiB
    # page-table page, kernel memory of this process
    m = mmap.mmap(-1, gib << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x4000,
                  prot=mmap.PROT_READ)
    s = 0
    for off in range(0, gib << 30, 2 << 20):
        s += m[off]
    def pte():
        return open("/proc/self/status").read().split("VmPTE:")[1].split()[0]
    print("touched", pte(), flush=True)
    for i in range(12):
        time.sleep(0.5)
        print("held", pte(), flush=True)
    print("survived", flush=True)
''')

INODES_PY = textwrap.dedent(r'''
    import os, sys, time
    where, n = sys.argv[1], int(sys.argv[2])
    made = 0
    err = None
    for i in range(n):
        try:
            os.mknod("%s/i%d" % (where, i))   # an empty file: no data page, one inode
        except OSError as e:
            err = e.errno
            break
        made += 1
        if made % 20000 == 0:
            print("made", made, flush=True)
    print("made", made, "errno", err, flush=True)
    time.sleep(3)
    print("survived", flush=True)
''')

VMAS_PY = textwrap.dedent(r'''
    import mmap, os, sys, time
    n, kids = int(sys.argv[1]), int(sys.argv[2])
    maps = []
    for i in range(n):   # alternating protections: no two neighbours merge
        maps.append(mmap.mmap(-1, 4096, prot=mmap.PROT_READ if i % 2 else
                              mmap.PROT_READ | mmap.PROT_WRITE))
    print("vmas", sum(1 for _ in open("/proc/self/maps")), flush=True)
    for k in range(kids):      # each child gets its own copy of every VMA
        if os.fork() == 0:
            time.sleep(8)
            os._exit(0)
    print("forked", kids, flush=True)
    time.sleep(6)
    print("survived", flush=True)
''')


def _slab() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("Slab:"):
                return int(line.split()[1]) << 10
    return 0


def part_kernelmem(token: str) -> dict[str, Any]:
    lim = LIMIT // 2   # (fewer inodes to make)
    out: dict[str, Any] = {"limit": lim}
    fr = Fresh(limits=ab.Limits(max_memory_bytes=lim))
    with fr as sb:
        out["backend"] = sb.isolation.mechanisms.get("memory_limit")
        for name, text in (("pt.py", PAGETABLES_PY), ("ino.py", INODES_PY),
                           ("vma.py", VMAS_PY)):
            sb.write_file(f"/tmp/{name}", text.encode())
        # page tables: 256 GiB read at a 2 MiB stride = 512 MiB of them
        with _HostSampler(sb, b"VmPTE:", lim) as s:
            r = sb.run("python3 /tmp/pt.py 256", timeout=60)
        out["pagetables"] = {**_res(r), "limit": r.limit_exceeded, "host_peak": s.peak,
                             "host_seconds_over": round(s.above, 2)}
        _settled(sb)
        # VMAs copied by fork: 60,000 each in 40 processes (~14 MiB of slab per process)
        r = sb.run("python3 /tmp/vma.py 60000 40", timeout=60)
        out["vmas"] = {**_res(r), "limit": r.limit_exceeded}
        _settled(sb)
        # tmpfs inodes: ~1 KiB of unreclaimable kernel memory each, no byte of the tmpfs's
        # size; /dev/shm and the sandbox's own /dev (a tmpfs the workload may write)
        # (last: what a tmpfs holds is not freed by kills; only the /dev files are removed)
        for where, n in (("/dev", 200_000), ("/dev/shm", 600_000)):
            slab0 = _slab()
            r = sb.run(f"mkdir {where}/d && python3 /tmp/ino.py {where}/d {n}", timeout=120)
            slab1 = _slab()
            # (the file API runs in the runner, which the watchdog does not kill while
            # workload processes are what it can kill: a tmpfs over the limit kills them all)
            held = call(lambda: len(sb.list_files(f"{where}/d", limit=None)), 60)
            out["inodes" + where.replace("/", "_")] = {
                **_res(r), "limit": r.limit_exceeded, "held": held.get("value"),
                "host_slab_growth": slab1 - slab0,
                "removed": call(lambda: sb.remove(f"{where}/d", recursive=True), 120)
                if where == "/dev" else None}
            if where == "/dev":
                _settled(sb)
        # (in-process: a tmpfs over the limit gets every program killed, as with its bytes)
        out["after"] = call(lambda: sb.run("echo alive", timeout=30).stdout, 60)
    out["left"] = fr.left
    return out


# -- part "counts": counts of the whole machine, or of this host user --------------------------
AIO_PY = textwrap.dedent(r'''
    import ctypes, sys, time
    l = ctypes.CDLL(None, use_errno=True)
    l.syscall.restype = ctypes.c_long
    NR = {"x86_64": 206, "aarch64": 0}[__import__("platform").machine()]
    got, n, err = 0, 0, 0
    for size in (65536, 16384, 4096, 1024, 256, 64, 16):
        while True:
            c = ctypes.c_ulong(0)
            if l.syscall(ctypes.c_long(NR), ctypes.c_long(size), ctypes.byref(c)) != 0:
                err = ctypes.get_errno()
                break
            got += size
            n += 1
    print("aio", got, "contexts", n, "errno", err, flush=True)
    time.sleep(float(sys.argv[1]))
''')

PTYS_PY = textwrap.dedent(r'''
    import os, resource, sys, time
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
    fds, err = [], 0
    while len(fds) < 5000:
        try:
            fds.append(os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY))
        except OSError as e:
            err = e.errno
            break
    print("ptys", len(fds), "errno", err, flush=True)
    time.sleep(float(sys.argv[1]))
''')

EPOLL_PY = textwrap.dedent(r'''
    import errno, os, resource, select, sys, time
    stop_at = int(sys.argv[1])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    r, w = os.pipe()
    fds = [r] + [os.dup(r) for _ in range(min(hard, 20000) - 700)]
    eps, n, err = [], 0, 0
    t0 = time.monotonic()
    while n < stop_at and len(eps) < 500 and time.monotonic() - t0 < 40 and not err:
        ep = select.epoll()
        eps.append(ep)
        for fd in fds:
            if n >= stop_at:
                break
            try:
                ep.register(fd, select.EPOLLIN)
            except OSError as e:
                err = e.errno
                break
            n += 1
    print("watches", n, "errno", err, "seconds", round(time.monotonic() - t0, 1), flush=True)
    time.sleep(float(sys.argv[2]))
''')


FILES_PY = textwrap.dedent(r"""
    import os, resource, sys, time
    want, hold = int(sys.argv[1]), float(sys.argv[2])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    per = max(1, hard - 64)
    kids = min(64, -(-want // per))
    with open("/tmp/kids", "w") as f:
        f.write("%d\n" % kids)
    for k in range(kids):
        if os.fork() == 0:
            fds = []
            try:
                while len(fds) < min(per, want - k * per):
                    fds.append(os.open("/dev/null", os.O_RDONLY))   # a struct file each
                    if len(fds) % 2000 == 0:   # (what it holds so far, if it is killed)
                        with open("/tmp/held.%d" % k, "w") as f:
                            f.write("%d\n" % len(fds))
            except OSError as e:
                pass
            with open("/tmp/held.%d" % k, "w") as f:
                f.write("%d\n" % len(fds))
            time.sleep(hold)
            os._exit(0)
    time.sleep(hold + 1)
""")


def _file_nr() -> tuple[int, int]:
    with open("/proc/sys/fs/file-nr") as f:
        used = int(f.read().split()[0])
    with open("/proc/sys/fs/file-max") as f:
        return used, int(f.read())


def _host_aio() -> str:
    if os.uname().machine != "x86_64":
        return "skip"
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    c = ctypes.c_ulong(0)
    if libc.syscall(ctypes.c_long(206), ctypes.c_long(128), ctypes.byref(c)) != 0:
        return os.strerror(ctypes.get_errno())
    libc.syscall(ctypes.c_long(207), c)   # io_destroy
    return "ok"


def _wait_for(sb: Any, path: str, deadline: float = 60) -> str:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        r = sb.run(f"cat {path} 2>/dev/null", timeout=10).stdout
        if r.strip():
            return r
        time.sleep(0.2)
    return ""


def _other_sandbox_pty() -> dict[str, Any]:
    fr = Fresh()
    with fr as sb2:
        r = sb2.run("python3 -c 'import os, pty; m, s = pty.openpty(); print(os.ttyname(s))' "
                    "2>&1 | tail -1", timeout=30)
        t = sb2.run("tty", tty=True, timeout=30)
    return {"openpty": r.stdout, "tty_run": [t.exit_code, t.stdout[-200:], t.stderr[-200:]]}


def part_counts(token: str) -> dict[str, Any]:
    out: dict[str, Any] = {"host_aio_before": _host_aio()}
    fr = Fresh()
    with fr as sb:
        for name, text in (("aio.py", AIO_PY), ("ptys.py", PTYS_PY), ("ep.py", EPOLL_PY)):
            sb.write_file(f"/tmp/{name}", text.encode())
        # AIO: fs.aio-nr is one count for the whole machine (fs.aio-max-nr, 65536 here)
        sb.run("(python3 /tmp/aio.py 4 > /tmp/aio.out 2>&1 &)", timeout=30)
        out["aio"] = {"inside": _wait_for(sb, "/tmp/aio.out"), "host_during": _host_aio()}
        # ptys: every devpts instance but the host's first draws on kernel.pty.max less
        # kernel.pty.reserve (3072 of 4096 here); another sandbox must still get one
        sb.run("(python3 /tmp/ptys.py 6 > /tmp/ptys.out 2>&1 &)", timeout=30)
        out["ptys"] = {"inside": _wait_for(sb, "/tmp/ptys.out")}
        out["ptys"]["other_sandbox"] = call(_other_sandbox_pty, 60)
        # epoll watches: one count per host user (fs.epoll.max_user_watches), not per user
        # namespace. The program stops at half of it: the claim tested is that a sandbox
        # cannot take a large share, without ever exhausting this user's count
        with open("/proc/sys/fs/epoll/max_user_watches") as f:
            mx = int(f.read())
        out["epoll_max"] = mx
        r = sb.run(f"python3 /tmp/ep.py {mx // 8} 0", timeout=90)
        out["epoll"] = _res(r)
        # open files: one table for the whole machine (fs.file-max); past it every process
        # without CAP_SYS_ADMIN in the host's namespace gets ENFILE (other sandboxes, an
        # unprivileged caller). The program stops at a quarter of it (at most 64 processes);
        # the claim is that the sandbox never held an eighth
        used0, fmax = _file_nr()
        want = fmax // 4
        out["files"] = {"file_max": fmax, "want": want, "used_before": used0}
        if want <= 64 * 19000:   # (the host's hard RLIMIT_NOFILE: 20,000 here)
            sb.write_file("/tmp/files.py", FILES_PY.encode())
            sb.run(f"(python3 /tmp/files.py {want} 8 >/dev/null 2>&1 &)", timeout=30)
            # the host's count, sampled while the program holds (8 s): its peak over the
            # count before is what the sandbox took (other processes move it by thousands)
            peak, end = used0, time.monotonic() + 10
            while time.monotonic() < end:
                peak = max(peak, _file_nr()[0])
                time.sleep(0.05)
            got = sb.run("cat /tmp/kids /tmp/held.* 2>/dev/null; echo", timeout=30).stdout.split()
            out["files"]["reported"] = got
            out["files"]["held_peak"] = peak - used0
        out["after"] = call(lambda: sb.run("pkill -f aio.py; pkill -f ptys.py; "
                                           "pkill -f files.py; echo alive",
                                           timeout=30).stdout, 60)
    out["host_aio_after"] = _host_aio()
    out["left"] = fr.left
    return out


# -- part "starve": a watchdog blinded by the cost of its own sample --------------------------
STARVE_PY = textwrap.dedent(r'''
    import os, resource, socket, sys, time
    kids, cap = int(sys.argv[1]), int(sys.argv[2])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    r, w = os.pipe()
    # (16,000 each: the tables, 16,384 slots, of 7 processes stay under the watchdog's
    # budget for descriptors, a sixteenth of fs.file-max and at least 131,072)
    fds = [os.dup(r) for _ in range(min(hard - 100, 16000))]
    # 40 sockets: the watchdog then reads every descriptor of every process each sample
    socks = [socket.socketpair() for _ in range(20)]
    for k in range(kids):
        if os.fork() == 0:
            time.sleep(40)
            os._exit(0)
    print("descriptors", len(fds), "processes", kids + 1, flush=True)
    time.sleep(0.5)
    held, t0 = [], time.monotonic()
    while len(held) * 64 < cap:
        held.append(bytearray(b"\x01") * (64 << 20))
        print("held", len(held) * 64, round(time.monotonic() - t0, 2), flush=True)
        time.sleep(0.05)
    time.sleep(4)
    print("survived", flush=True)
''')


def part_starve(token: str) -> dict[str, Any]:
    out: dict[str, Any] = {"limit": LIMIT}
    fr = Fresh(limits=ab.Limits(max_memory_bytes=LIMIT, max_process_memory=None))
    with fr as sb:
        out["backend"] = sb.isolation.mechanisms.get("memory_limit")
        sb.write_file("/tmp/starve.py", STARVE_PY.encode())
        with _HostSampler(sb, b"RssAnon:", 2 * LIMIT) as s:
            r = sb.run("python3 /tmp/starve.py 6 1536", timeout=90)
        out["starve"] = {**_res(r), "limit": r.limit_exceeded, "host_peak": s.peak,
                         "host_seconds_over_2x": round(s.above, 2)}
        _settled(sb)
        out["after"] = call(lambda: sb.run("echo alive", timeout=30).stdout, 60)
    out["left"] = fr.left
    return out


# -- part "supervisor": pid 1's seccomp supervisor writes sysinfo(2) answers into callers ----
SYSRACE_PY = textwrap.dedent(r"""
    import ctypes, hashlib, os, sys, threading, time
    l = ctypes.CDLL(None, use_errno=True)
    l.mmap.restype = ctypes.c_void_p
    l.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long]
    path = sys.argv[1]
    fd = os.open(path, os.O_RDONLY)
    R, W, SHARED, PRIVATE, FIXED, ANON = 1, 2, 1, 2, 0x10, 0x20
    base = l.mmap(None, 4096, R | W, PRIVATE | ANON, -1, 0)
    stop = []
    def swapper():
        # the buffer flips between private writable memory and a read-only shared mapping of
        # a file of the host's /usr, between the supervisor's check and its write
        while not stop:
            l.mmap(base, 4096, R, SHARED | FIXED, fd, 0)
            l.mmap(base, 4096, R | W, PRIVATE | FIXED | ANON, -1, 0)
    threading.Thread(target=swapper, daemon=True).start()
    got, t0 = {}, time.monotonic()
    while time.monotonic() - t0 < float(sys.argv[2]):
        r = l.sysinfo(ctypes.c_void_p(base))
        k = "ok" if r == 0 else "errno %d" % ctypes.get_errno()
        got[k] = got.get(k, 0) + 1
    stop.append(1)
    ro = l.mmap(None, 4096, R, SHARED, fd, 0)
    for name, ptr in (("null", 0), ("file_ro", ro), ("kernel", 0xffffffff81000000)):
        got[name] = l.sysinfo(ctypes.c_void_p(ptr)), ctypes.get_errno()
    print("RACE", __import__("json").dumps(got), flush=True)
    print("SHA", hashlib.sha256(open(path, "rb").read()).hexdigest(), flush=True)
""")

FLOOD_PY = textwrap.dedent(r"""
    import ctypes, sys, threading, time
    l = ctypes.CDLL(None, use_errno=True)
    n = [0]
    def flood():
        buf = ctypes.create_string_buffer(128)
        while True:
            l.sysinfo(buf)
            n[0] += 1
    for _ in range(32):
        threading.Thread(target=flood, daemon=True).start()
    time.sleep(1)
    print("calls", n[0], flush=True)
    held, t0 = [], time.monotonic()
    while len(held) * 64 < 1536:
        held.append(bytearray(b"\x01") * (64 << 20))
        print("held", len(held) * 64, round(time.monotonic() - t0, 2), flush=True)
        time.sleep(0.05)
    time.sleep(3)
    print("survived", flush=True)
""")


def part_supervisor(token: str) -> dict[str, Any]:
    """sysinfo(2) goes to pid 1, which writes the answer into the caller's memory through
    /proc/<pid>/mem: a buffer swapped for a read-only mapping of a host file meanwhile must
    never get the bytes; a flood of calls must not slow the memory watchdog in the same
    process."""
    import hashlib
    target = os.path.realpath(sys.executable if os.path.exists(sys.executable)
                              else "/usr/bin/python3")
    if not target.startswith("/usr/"):
        target = os.path.realpath("/usr/bin/python3")
    with open(target, "rb") as f:
        before = hashlib.sha256(f.read()).hexdigest()
    out: dict[str, Any] = {"limit": LIMIT, "target": target}
    fr = Fresh(limits=ab.Limits(max_memory_bytes=LIMIT, max_process_memory=None))
    with fr as sb:
        out["backend"] = sb.isolation.mechanisms.get("memory_limit")
        sb.write_file("/tmp/race.py", SYSRACE_PY.encode())
        sb.write_file("/tmp/flood.py", FLOOD_PY.encode())
        out["race"] = _res(sb.run(f"python3 /tmp/race.py {target} 4", timeout=60))
        r = sb.run("python3 /tmp/flood.py", timeout=60)
        out["flood"] = {**_res(r), "limit": r.limit_exceeded}
        _settled(sb)
        out["after"] = call(lambda: sb.run("echo alive", timeout=30).stdout, 60)
    with open(target, "rb") as f:
        out["host_sha_same"] = hashlib.sha256(f.read()).hexdigest() == before
    out["sha_before"] = before
    out["left"] = fr.left
    return out


PARTS: dict[str, Callable[[str], dict[str, Any]]] = {
    "kernelmem": part_kernelmem, "counts": part_counts, "starve": part_starve,
    "supervisor": part_supervisor,
}


if __name__ == "__main__":
    main(PARTS)
