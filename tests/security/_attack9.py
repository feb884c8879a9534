"""Attacks on a default Sandbox() in areas earlier passes covered least (file API, salvage, kernel knobs, the report), judged on the host; run as root or the test user, prints JSON."""

# Usage: python _attack9.py PART TOKEN. test_attack9_host.py runs each part as root and (runuser)
# as the unprivileged user. Every verdict is the host's: a host file's bytes and mode, the
# host's clock and names, a call that returned within its deadline, the size of a host temp
# file, what /proc says about the sandbox's processes. Parts run with a private TMPDIR, so the
# leftover check after close() (processes, mounts, cgroups, session dirs) sees only its own.

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import signal
import socket
import sys
import tempfile
import threading
import time
import traceback
from typing import Any, Callable

os.environ["TMPDIR"] = tempfile.mkdtemp(prefix="agb9-part-")   # before agentic_bash sees it
tempfile.tempdir = None

import agentic_bash as ab  # noqa: E402

TMP = os.environ["TMPDIR"]
GiB = 1 << 30


def _sha(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def _tree(sb: Any) -> list[int]:
    """Host pids of the sandbox: S1 and everything below it."""
    import psutil
    top = psutil.Process(sb._ex.pid)
    return [top.pid] + [p.pid for p in top.children(recursive=True)]


def _pid1(sb: Any) -> int:
    """Host pid of the sandbox's pid 1 (S2: the channel's process itself, or S1's child
    where the zygote had to fork S1): the one whose innermost pid is 1."""
    for pid in _tree(sb):
        try:
            with open(f"/proc/{pid}/status") as f:
                ns = next(line for line in f if line.startswith("NSpid:")).split()
        except (OSError, StopIteration):
            continue
        if ns[-1] == "1" and len(ns) > 2:
            return pid
    raise LookupError("no pid 1 in the sandbox's tree")


def _runner_pid(sb: Any) -> int:
    """Host pid of S3, the interpreter (pid 1's child running the zygote's program)."""
    import psutil
    s2 = psutil.Process(_pid1(sb))
    return [p for p in s2.children() if b"zygote" in open(f"/proc/{p.pid}/cmdline", "rb").read()][0].pid


def _res(r: Any) -> dict[str, Any]:
    return {"out": r.stdout[-1500:], "err": r.stderr[-500:], "code": r.exit_code,
            "restarted": r.restarted, "reason": r.extra.get("restart_reason")}


def call(fn: Callable[[], Any], timeout: float = 25) -> dict[str, Any]:
    """``fn()`` on a thread with a deadline: {"value"} or {"exc"}, or {"hung": True}."""
    box: dict[str, Any] = {}

    def go() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001
            box["exc"] = f"{type(e).__name__}: {e}"[:400]
            box["exc_type"] = type(e).__name__
    t = threading.Thread(target=go, daemon=True)
    t0 = time.monotonic()
    t.start()
    t.join(timeout)
    if t.is_alive():
        return {"hung": True, "wall": timeout}
    box["wall"] = round(time.monotonic() - t0, 3)
    if isinstance(box.get("value"), bytes):
        box["value"] = box["value"][:200].decode("latin-1")
    elif "value" in box and not isinstance(box["value"], (str, int, float, bool, dict,
                                                           type(None))):
        box["value"] = repr(box["value"])[:400]
    return box


def _kill_tree(sb: Any) -> None:
    try:
        os.kill(sb._ex.pid, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def leftovers(pids: list[int]) -> dict[str, Any]:
    """After close(): processes of the sandbox still alive, this process's cgroups, session
    dirs and host mounts naming them (each must be empty)."""
    me = os.getpid()
    alive = []
    deadline = time.monotonic() + 10
    while True:
        alive = [p for p in pids if os.path.exists(f"/proc/{p}") and
                 (_read(f"/proc/{p}/stat") or "").split(") ")[-1][:1] not in ("Z", "")]
        if not alive or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    cg = []
    for root in ("/sys/fs/cgroup",):
        for dirpath, dirnames, _ in os.walk(root):
            if dirpath.count("/") > 9:
                dirnames[:] = []
                continue
            cg += [os.path.join(dirpath, d) for d in dirnames if f"agentic-bash-{me}-" in d]
    sessions = [n for n in os.listdir(TMP) if n.startswith("agentic-bash-session-")]
    mounts = [ln for ln in (_read("/proc/self/mountinfo") or "").splitlines()
              if TMP in ln or f"agentic-bash-session-" in ln]
    return {"processes": alive, "cgroups": cg, "sessions": sessions, "mounts": mounts}


class Fresh:
    """A default Sandbox() per attack (an attack that hangs the sandbox costs only its own);
    close() is itself deadline-bound, and the leftover check runs after it."""

    def __init__(self, **kw: Any) -> None:
        self.sb = ab.Sandbox(**kw)
        self.pids = _tree(self.sb)

    def __enter__(self) -> Any:
        return self.sb

    def __exit__(self, *exc: object) -> None:
        r = call(self.sb.close, 30)
        if r.get("hung"):
            _kill_tree(self.sb)
        self.closed = r
        self.left = leftovers(self.pids)


# -- part "files": the file API, download/snapshot and the host's salvage after a crash --------
def part_files(token: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    secret = f"agb9-hostsecret-{token}"
    canary_dir = os.path.join(TMP, f"canary-{token}")
    os.makedirs(canary_dir)
    canary = os.path.join(canary_dir, "secret.txt")
    with open(canary, "w") as f:
        f.write(secret + "\n")
    os.chmod(canary, 0o600)
    watched = [canary, "/etc/passwd", "/etc/hosts", "/usr/bin/python3"]
    before = {p: (_sha(p), os.stat(p).st_mode) for p in watched}

    # FIFOs, sockets and terminals the script leaves where the caller reads or writes
    special = {
        "read_fifo": ("mkfifo /workspace/f", lambda sb: sb.read_file("/workspace/f")),
        "write_fifo": ("mkfifo /workspace/f", lambda sb: sb.write_file("/workspace/f", b"x")),
        "write_fifo_reader": ("mkfifo /workspace/f; (sleep 100 < /workspace/f &) ; sleep 0.3",
                              lambda sb: sb.write_file("/workspace/f", b"x" * (1 << 20))),
        "read_fifo_via_link": ("mkfifo /tmp/f; ln -s /tmp/f /workspace/l",
                               lambda sb: sb.read_file("/workspace/l")),
        "read_pty": ("python3 -c 'import os,pty,time\nm,s=pty.openpty()\nos.symlink(os.ttyname(s),"
                     "\"/workspace/t\")\nif os.fork()==0: time.sleep(100)' ; sleep 0.2",
                     lambda sb: sb.read_file("/workspace/t")),
        "read_socket": ("python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); "
                        "s.bind(\"/workspace/s\")'", lambda sb: sb.read_file("/workspace/s")),
        "download_fifo": ("mkdir /workspace/d; mkfifo /workspace/d/f; echo hi > /workspace/d/g",
                          lambda sb: len(sb.download_tar(path="/workspace/d"))),
        "snapshot_fifo": ("mkfifo /workspace/f /tmp/f; echo hi > /workspace/g",
                          lambda sb: len(sb.snapshot())),
    }
    for name, (setup, fn) in special.items():
        fr = Fresh()
        with fr as sb:
            r = sb.run(setup, timeout=30)
            got = call(lambda: fn(sb), 20)
            got["setup"] = [r.exit_code, r.stderr[-300:]]
            if got.get("hung"):
                _kill_tree(sb)   # (the channel is stuck: the sandbox cannot answer close)
            else:
                got["after"] = call(lambda: sb.run("echo alive", timeout=20).stdout, 30)
        got["left"] = fr.left
        out[name] = got

    # hostile paths for read_file / write_file / remove: all land inside the sandbox
    fr = Fresh()
    with fr as sb:
        sb.run(f"ln -s /etc/passwd /workspace/pw; ln -s {canary_dir} /workspace/cd; "
               f"ln -s / /workspace/root; mkdir -p {canary_dir}; "
               f"ln -s {canary} /workspace/sec", timeout=30)
        tries = {}
        for p in ("/workspace/pw", "/workspace/cd/secret.txt", "/workspace/sec",
                  f"/proc/1/root{canary}", f"/proc/self/root{canary}",
                  f"/workspace/../../..{canary}", f"../../../..{canary_dir}/x",
                  f"/workspace/root{canary}", "/proc/self/cwd/../../etc/hosts"):
            tries["write " + p] = call(lambda p=p: sb.write_file(p, b"evil\n"), 20)
            tries["read " + p] = call(lambda p=p: sb.read_file(p), 20)
        for p in ("/workspace/cd", "/workspace/root", f"/workspace/root{canary_dir}"):
            tries["remove " + p] = call(lambda p=p: sb.remove(p, recursive=True), 20)
        # setuid/setgid modes through the file API (as root they would be host-root-owned)
        for p, m in (("/workspace/su1", 0o4755), ("/tmp/su2", 0o2755), ("/workspace/su3", 0o6777)):
            tries[f"mode {m:o} {p}"] = call(lambda p=p, m=m: sb.write_file(p, b"x", mode=m), 20)
        out["setuid_api"] = sb.run("find /workspace /tmp -perm /6000 2>/dev/null; "
                                   "ls /workspace /tmp", timeout=60).stdout[-1500:]
        out["hostile_paths"] = {"tries": tries}
        out["hostile_paths"]["inside"] = sb.run(f"cat {canary}; cat /workspace/pw | tail -1",
                                                timeout=30).stdout[-300:]
    out["hostile_paths"]["left"] = fr.left
    after = {p: (_sha(p), os.stat(p).st_mode) for p in watched}
    out["hostile_paths"]["host_changed"] = [p for p in watched if before[p] != after[p]]
    out["hostile_paths"]["host_extra"] = sorted(set(os.listdir(canary_dir)) - {"secret.txt"})
    out["hostile_paths"]["secret_seen"] = secret in json.dumps(out["hostile_paths"]["tries"]) \
        or secret in out["hostile_paths"]["inside"]

    # the caller's venv is bound read-only; its pip.conf (pip's per-venv config, where a
    # private index's token lives) must not be readable. A stand-in prefix, added to the
    # binds the way sys.prefix is (writing into the real venv would change pip for others)
    from agentic_bash.executors import sandboxed as sbx
    prefix = os.path.join(TMP, f"venv-{token}")
    os.makedirs(os.path.join(prefix, "etc"))
    for rel in ("pip.conf", "etc/pip.conf", ".condarc", "pyvenv.cfg"):
        with open(os.path.join(prefix, rel), "w") as f:
            f.write(f"index-url = https://u:{secret}-{rel}@index.example/simple\n")
    for d in (TMP, prefix, os.path.join(prefix, "etc")):
        os.chmod(d, 0o755)
    real_binds = sbx._python_binds
    sbx._python_binds = lambda: real_binds() + (prefix,)
    try:
        fr = Fresh()
        with fr as sb:
            r = sb.run(f"cat {prefix}/pip.conf {prefix}/etc/pip.conf {prefix}/.condarc; "
                       f"grep -r index {prefix}; cat {prefix}/pyvenv.cfg", timeout=30)
    finally:
        sbx._python_binds = real_binds
    out["prefix_secrets"] = {"out": r.stdout[-1000:], "err": r.stderr[-500:],
                             "leaked": [rel for rel in ("pip.conf", "etc/pip.conf", ".condarc")
                                        if f"{secret}-{rel}@" in r.stdout],
                             "bound": f"{secret}-pyvenv.cfg@" in r.stdout, "left": fr.left}

    # a crash's salvage on the host: a sparse file costs the layer nothing, a tar every byte
    peak = [0]
    stop = threading.Event()

    def sampler() -> None:
        while not stop.is_set():
            for fd in os.listdir("/proc/self/fd"):
                try:
                    if "agentic-bash-salvage" in os.readlink(f"/proc/self/fd/{fd}"):
                        peak[0] = max(peak[0], os.stat(f"/proc/self/fd/{fd}").st_size)
                except OSError:
                    pass
            time.sleep(0.005)
    threading.Thread(target=sampler, daemon=True).start()
    victim = os.path.join(TMP, f"victim-{token}")
    with open(victim, "w") as f:
        f.write("host file\n")
    os.chmod(victim, 0o640)
    setups = {
        # a sparse file bigger than the layer may hold: no host file of that size
        "salvage_sparse": "truncate -s 3G /tmp/big; echo kept > /tmp/small",
        # a file the script made unreadable, at the path of a host file of this user: the
        # salvage must not touch the host's file (it chmod'ed "/tmp/..." on the host)
        "salvage_chmod": f"mkdir -p {TMP}; echo x > {victim}; chmod 000 {victim}; "
                         f"echo kept > /tmp/small",
    }
    for name, script in setups.items():
        fr = Fresh()
        with fr as sb:
            size = sb._ex._cfg.get("layer_size") or GiB
            setup = sb.run(script + "; df -k /tmp | tail -1", timeout=30)
            free0 = os.statvfs(TMP).f_bavail * os.statvfs(TMP).f_frsize
            os.kill(_runner_pid(sb), signal.SIGKILL)   # the crash (an OOM kill, a bug)
            # the call after the crash either fails (SandboxCrashed: it reached the dying
            # sandbox) or goes to a restarted one at once (the channel was already gone);
            # whichever call restarted it says so
            first = call(lambda: _res(sb.run("echo x", timeout=30)), 120)
            again = call(lambda: _res(sb.run("echo alive; cat /tmp/small", timeout=30)), 120)
            if again.get("value") and (first.get("value") or {}).get("restarted"):
                again["value"] = dict(again["value"], restarted=True,
                                      reason=first["value"]["reason"])
            free1 = os.statvfs(TMP).f_bavail * os.statvfs(TMP).f_frsize
        out[name] = {"setup": setup.stdout[-300:], "first": first, "layer_size": size,
                     "peak_salvage_file": peak[0], "host_free_drop": free0 - free1,
                     "after": again.get("value"), "after_call": again,
                     "victim_mode": oct(os.stat(victim).st_mode & 0o7777),
                     "victim_data": _read(victim), "left": fr.left}
    stop.set()

    # snapshot / read_file of a sparse file larger than the layer: a clear error, no crash
    fr = Fresh()
    with fr as sb:
        sb.run("truncate -s 3G /tmp/big; echo kept > /tmp/small", timeout=30)
        snap = call(lambda: len(sb.snapshot()), 120)
        rd = call(lambda: len(sb.read_file("/tmp/big")), 120)
        dl = call(lambda: len(sb.download_tar(path="/tmp")), 120)
        r = call(lambda: _res(sb.run("cat /tmp/small", timeout=30)), 120)
        out["sparse_api"] = {"snapshot": snap, "read": rd, "download": dl,
                             "after": r.get("value")}
    out["sparse_api"]["left"] = fr.left

    # many files: list, snapshot and restore stay bounded on the host
    import resource
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    fr = Fresh()
    with fr as sb:
        t0 = time.monotonic()
        mk = sb.run("python3 -c 'import os\nos.mkdir(\"/workspace/m\")\nfor i in range(20000):"
                    " open(\"/workspace/m/f%d\" % i, \"w\").close()'; ls /workspace/m | wc -l",
                    timeout=120)
        lst = call(lambda: len(sb.list_files("/workspace/m", limit=None)), 120)
        box: list[bytes] = []
        snap = call(lambda: len(box.append(sb.snapshot()) or box[0]), 180)
    restored: dict[str, Any] = {}
    if box:
        data = box.pop()
        sb2 = ab.Sandbox.from_snapshot(data)
        try:
            restored = {"count": sb2.run("ls /workspace/m | wc -l", timeout=60).stdout.strip()}
        finally:
            sb2.close()
    out["many_files"] = {"made": mk.stdout.strip(), "list": lst, "snapshot": snap,
                         "restored": restored, "left": fr.left, "wall": round(time.monotonic() - t0, 1),
                         "host_rss_growth": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                                             - rss0) << 10}
    return out


# -- part "kernel": clock, names, modules, sysctls, sysrq, the runner's memory ----------------
KERNEL_PY = r'''
import ctypes, os, sys, json
l = ctypes.CDLL(None, use_errno=True)
l.syscall.restype = ctypes.c_long
NR = %r
out = {}
def sc(name, *a):
    a = [ctypes.c_long(x) if isinstance(x, int) else x for x in a]
    r = l.syscall(ctypes.c_long(NR[name]), *a)
    out[name + str(len([k for k in out if k.startswith(name)]))] = [r, ctypes.get_errno() if r < 0 else 0]
    return r
class timex(ctypes.Structure):
    _fields_ = [("modes", ctypes.c_uint), ("pad", ctypes.c_int), ("offset", ctypes.c_long),
                ("freq", ctypes.c_long), ("rest", ctypes.c_long * 30)]
t = timex(); t.modes = 0x0002; t.freq = 500 << 16          # ADJ_FREQUENCY
sc("adjtimex", ctypes.byref(t))
t = timex(); t.modes = 0x0002; t.freq = -(500 << 16)
sc("clock_adjtime", 0, ctypes.byref(t))
ts = (ctypes.c_long * 2)(978307200, 0)                      # 2001-01-01
sc("clock_settime", 0, ts)
sc("settimeofday", ts, 0)
sc("sethostname", b"agb9-evil", 9)
sc("setdomainname", b"agb9-evil", 9)
sc("init_module", ctypes.create_string_buffer(64), 64, b"")
fd = os.open("/dev/null", os.O_RDONLY)
sc("finit_module", fd, b"", 0)
sc("delete_module", b"loop", 0x800)
sc("delete_module", b"overlay", 0x800)
sc("pivot_root", b"/tmp", b"/tmp")
sc("unshare", 0x00020000)                                   # CLONE_NEWNS
class clone_args(ctypes.Structure):
    _fields_ = [("f", ctypes.c_uint64 * 11)]
ca = clone_args(); ca.f[0] = 0x10000000; ca.f[4] = 17      # CLONE_NEWUSER, SIGCHLD
r = sc("clone3", ctypes.byref(ca), 88)
if r == 0:
    os._exit(0)
sc("reboot", 0xfee1dead, 672274793, 0xcdef0123, 0)         # LINUX_REBOOT_CMD_CAD_OFF
sc("swapoff", b"/dev/vda")
sc("acct", b"/tmp/acct")
sc("iopl", 3)
sc("syslog", 5, 0, 0)                                       # SYSLOG_ACTION_CLEAR
for path, data in (("/proc/sysrq-trigger", "h"), ("/proc/sys/kernel/modprobe", "/tmp/evil"),
                   ("/proc/sys/kernel/core_pattern", "|/tmp/evil"), ("/proc/sys/vm/drop_caches", "3"),
                   ("/proc/sys/kernel/hostname", "agb9-evil"), ("/proc/sys/kernel/domainname", "agb9-evil"),
                   ("/proc/sys/kernel/perf_event_paranoid", "3"),
                   ("/proc/sys/user/max_user_namespaces", str(int(open("/proc/sys/user/max_user_namespaces").read()) - 1)),
                   ("/sys/kernel/mm/transparent_hugepage/enabled", "never"), ("/proc/self/uid_map", "0 0 1")):
    try:
        with open(path, "w") as f:
            f.write(data)
        out["w " + path] = "written"
    except OSError as e:
        out["w " + path] = e.errno
import re
for path in ("/proc/kcore", "/proc/kmsg", "/dev/kmsg", "/proc/kallsyms", "/proc/iomem",
             "/proc/timer_list", "/proc/sched_debug", "/sys/firmware/dmi/tables/DMI"):
    try:
        with open(path, "rb") as f:
            b = f.read(4096)
        addr = [a for a in re.findall(rb"\b[0-9a-f]{16}\b", b) if a.strip(b"0")]
        out["r " + path] = "leak" if b.startswith(b"\x7fELF") or addr else "masked"
    except OSError as e:
        out["r " + path] = e.errno
# the runner: its memory, ptrace and process_vm_writev of it and of pid 1
class iov(ctypes.Structure):
    _fields_ = [("b", ctypes.c_void_p), ("n", ctypes.c_size_t)]
buf = ctypes.create_string_buffer(b"A" * 64)
for pid in (1, os.getppid()):
    try:
        first = int(open(f"/proc/{pid}/maps").readline().split("-")[0], 16)
    except (OSError, ValueError):
        first = 0x400000
    loc = iov(ctypes.addressof(buf), 64); rem = iov(first, 64)
    sc("process_vm_writev", pid, ctypes.byref(loc), 1, ctypes.byref(rem), 1, 0)
    sc("ptrace", 16, pid, 0, 0)                                 # PTRACE_ATTACH
    try:
        with open(f"/proc/{pid}/mem", "r+b") as f:
            f.seek(first); f.write(b"\xcc" * 16)
        out[f"mem {pid}"] = "written"
    except OSError as e:
        out[f"mem {pid}"] = e.errno
for sig_target in (-1, 1, os.getppid()):
    try:
        os.kill(sig_target, 19)                                  # SIGSTOP
        out[f"kill {sig_target}"] = 0
    except OSError as e:
        out[f"kill {sig_target}"] = e.errno
print("@@K@@" + json.dumps(out))
'''

_NR = {"adjtimex": 159, "clock_adjtime": 305, "clock_settime": 227, "settimeofday": 164,
       "sethostname": 170, "setdomainname": 171, "init_module": 175, "finit_module": 313,
       "delete_module": 176, "pivot_root": 155, "unshare": 272, "clone3": 435, "reboot": 169,
       "swapoff": 168, "acct": 163, "iopl": 172, "syslog": 103, "process_vm_writev": 311,
       "ptrace": 101}
if os.uname().machine == "aarch64":
    _NR = {"adjtimex": 171, "clock_adjtime": 266, "clock_settime": 112, "settimeofday": 170,
           "sethostname": 161, "setdomainname": 162, "init_module": 105, "finit_module": 273,
           "delete_module": 106, "pivot_root": 41, "unshare": 97, "clone3": 435, "reboot": 142,
           "swapoff": 225, "acct": 89, "iopl": -1, "syslog": 116, "process_vm_writev": 271,
           "ptrace": 117}


class _Timex(ctypes.Structure):
    _fields_ = [("modes", ctypes.c_uint), ("pad", ctypes.c_int), ("offset", ctypes.c_long),
                ("freq", ctypes.c_long), ("rest", ctypes.c_long * 30)]


def _host_clock() -> dict[str, Any]:
    libc = ctypes.CDLL(None, use_errno=True)
    t = _Timex()
    libc.adjtimex(ctypes.byref(t))   # modes 0: a read, allowed to anyone
    return {"freq": t.freq, "offset": t.offset, "skew": round(time.time() - time.monotonic(), 1)}


def part_kernel(token: str) -> dict[str, Any]:
    knobs = ["/proc/sys/kernel/modprobe", "/proc/sys/kernel/core_pattern",
             "/proc/sys/kernel/hostname", "/proc/sys/kernel/domainname",
             "/proc/sys/kernel/perf_event_paranoid", "/proc/sys/user/max_user_namespaces",
             "/sys/kernel/mm/transparent_hugepage/enabled", "/proc/modules"]
    before = {p: _read(p) for p in knobs}
    clock0 = _host_clock()
    name0 = socket.gethostname()
    out: dict[str, Any] = {}
    fr = Fresh()
    with fr as sb:
        runner = _runner_pid(sb)
        sb.write_file("/tmp/k.py", (KERNEL_PY % (_NR,)).encode())
        r = sb.run("python3 /tmp/k.py; date -s '2001-01-01 00:00:00'; hwclock --hctosys; "
                   "hostname agb9-evil2; domainname agb9-evil2; modprobe -q loop; "
                   "rmmod overlay; echo rc=$?", timeout=60)
        k = {}
        if "@@K@@" in r.stdout:
            k = json.loads(r.stdout.split("@@K@@", 1)[1].splitlines()[0])
        out["inside"] = k
        out["raw"] = {"out": r.stdout[-1500:], "err": r.stderr[-1500:], "code": r.exit_code}
        out["status_after"] = _read(f"/proc/{runner}/status")
        alive = call(lambda: sb.run("echo alive; hostname", timeout=30).stdout, 60)
        out["after"] = alive
        out["runner_state"] = (_read(f"/proc/{runner}/stat") or "").split(") ")[-1][:1]
    out["left"] = fr.left
    clock1 = _host_clock()
    out["clock"] = [clock0, clock1]
    out["host_name"] = [name0, socket.gethostname()]
    after = {p: _read(p) for p in knobs}
    out["changed"] = [p for p in knobs if before[p] != after[p]]
    # put back what an attack changed (so a failure does not outlive the test)
    for p in out["changed"]:
        try:
            if before[p] is not None and p.startswith("/proc/sys"):
                with open(p, "w") as f:
                    f.write(before[p])
        except OSError:
            pass
    return out


# -- part "report": the isolation report against what the host sees of the interpreter -------
def part_report(token: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    fr = Fresh()
    with fr as sb:
        rep = sb.isolation.to_dict()
        out["report"] = rep
        out["level"] = sb.isolation_level
        pid = _runner_pid(sb)
        st = _read(f"/proc/{pid}/status") or ""
        f = {ln.split(":", 1)[0]: ln.split(":", 1)[1].strip() for ln in st.splitlines() if ":" in ln}
        out["status"] = {k: f.get(k) for k in ("Seccomp", "NoNewPrivs", "CapEff", "CapPrm",
                                                "CapBnd", "CapAmb", "NSpid", "Uid")}
        ns = {}
        for n in ("user", "mnt", "pid", "net", "uts", "ipc"):
            try:
                ns[n] = os.readlink(f"/proc/{pid}/ns/{n}") != os.readlink(f"/proc/self/ns/{n}")
            except OSError as e:
                ns[n] = f"errno {e.errno}"
        out["ns_differs"] = ns
        out["uid_map"] = _read(f"/proc/{pid}/uid_map")
        # a native child of the runner: the same walls (seen from the host)
        sb.run("sleep 30 > /dev/null 2>&1 &", timeout=30)
        kid = None
        deadline = time.monotonic() + 10
        while kid is None and time.monotonic() < deadline:
            for p in _tree(sb):
                if (_read(f"/proc/{p}/cmdline") or "").startswith("sleep\x0030"):
                    kid = p
            time.sleep(0.05)
        ks = _read(f"/proc/{kid}/status") or "" if kid else ""
        g = {ln.split(":", 1)[0]: ln.split(":", 1)[1].strip() for ln in ks.splitlines() if ":" in ln}
        out["child_status"] = {k: g.get(k) for k in ("Seccomp", "NoNewPrivs", "CapEff", "CapBnd")}
    out["left"] = fr.left
    # strict=True with every mechanism there: starts, and says so
    try:
        with ab.Sandbox(strict=True) as sb:
            out["strict"] = {"level": sb.isolation_level,
                             "enforced": sorted(sb.isolation.to_dict().get("enforced", []))}
    except Exception as e:  # noqa: BLE001
        out["strict"] = {"exc": f"{type(e).__name__}: {e}"}
    # strict=True asking for something this host cannot give must refuse, not degrade
    try:
        with ab.Sandbox(isolation="landlock", strict=True, hide=["*.pem"]) as sb:
            out["strict_refuses"] = {"started": sb.isolation_level}
    except Exception as e:  # noqa: BLE001
        out["strict_refuses"] = {"exc_type": type(e).__name__, "exc": str(e)[:300]}
    return out


# -- part "resources": every writable place filled at once, inodes, memfd ----------------------
def part_resources(token: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    lim = ab.Limits().max_fs_bytes or 0
    host_tmp = os.statvfs(TMP)
    shm0 = os.statvfs("/dev/shm")
    fr = Fresh()
    with fr as sb:
        r = sb.run("for d in /workspace /tmp /var/tmp $HOME /dev/shm; do "
                   "fallocate -l 3G $d/fill 2>/dev/null || "
                   "dd if=/dev/zero of=$d/fill bs=1M count=3072 2>/dev/null; done; "
                   "python3 -c 'import os\nfd=os.memfd_create(\"x\")\n"
                   "try: os.posix_fallocate(fd, 0, 3 << 30); print(\"memfd ok\")\n"
                   "except OSError as e: print(\"memfd\", e.errno)'; "
                   "df -B1 /workspace /tmp /dev/shm | tail -n +2; "
                   "du -sb /workspace/fill /tmp/fill /var/tmp/fill $HOME/fill /dev/shm/fill",
                   timeout=120)
        out["fill"] = {"out": r.stdout[-2000:], "err": r.stderr[-500:], "code": r.exit_code,
                       "limit": r.limit_exceeded}
        du = {}
        for ln in r.stdout.splitlines():
            parts = ln.split()
            if len(parts) == 2 and parts[0].isdigit():
                du[parts[1]] = int(parts[0])
        out["du"] = du
        t1 = os.statvfs(TMP)
        out["host_tmp_drop"] = (host_tmp.f_bavail - t1.f_bavail) * t1.f_frsize
        out["host_shm_drop"] = (shm0.f_bavail - os.statvfs("/dev/shm").f_bavail) * shm0.f_frsize
        out["after_fill"] = call(lambda: sb.run("rm -f /workspace/fill /tmp/fill /var/tmp/fill "
                                                "$HOME/fill /dev/shm/fill; echo ok", timeout=60).stdout, 90)
        inodes0 = os.statvfs(TMP).f_ffree
        r = sb.run("python3 -c 'import os\nn=0\ntry:\n for i in range(150000):\n"
                   "  os.mknod(\"/tmp/i%d\" % i); n += 1\nexcept OSError as e: print(\"stop\", e.errno)\n"
                   "print(\"made\", n)'; df -i /tmp | tail -1", timeout=120)
        out["inodes"] = {"out": r.stdout[-500:], "err": r.stderr[-300:], "limit": r.limit_exceeded,
                         "host_inode_drop": inodes0 - os.statvfs(TMP).f_ffree}
        out["after_inodes"] = call(lambda: sb.run("echo alive", timeout=60).stdout, 90)
    out["limit"] = lim
    out["left"] = fr.left
    return out


# -- part "memory": memory no process's anonymous pages show, under a small limit -------------
HOLD = {
    "anon": "b = bytearray(768 << 20)",
    "memfd": "fd = os.memfd_create(str(1)); os.posix_fallocate(fd, 0, 768 << 20)",
    "memfd_mapped": "fd = os.memfd_create(str(1)); os.posix_fallocate(fd, 0, 768 << 20); "
                    "m = mmap.mmap(fd, 768 << 20); m[:] = bytes(768 << 20)",
    "shared_anon": "m = mmap.mmap(-1, 768 << 20, flags=mmap.MAP_SHARED)\n"
                   "for i in range(0, 768 << 20, 4096): m[i] = 1",
    # (attack13: a root sandbox's IPC namespace caps SysV memory, so shmget may refuse: the
    # probe says so rather than writing through shmat's -1)
    "sysv": "import ctypes; l = ctypes.CDLL(None, use_errno=True); "
            "l.shmat.restype = ctypes.c_void_p; i = l.shmget(0, 768 << 20, 0o1600)\n"
            "if i < 0: raise OSError(ctypes.get_errno(), \"shmget refused\")\n"
            "a = l.shmat(i, None, 0); ctypes.memset(a, 1, 768 << 20)",
}
# six processes, each leaving a 100 MiB SysV segment no one attaches, each exiting at once
ORPHANS = ("for n in 1 2 3 4 5 6; do python3 -c 'import ctypes; l = ctypes.CDLL(None); "
           "l.shmat.restype = ctypes.c_void_p; i = l.shmget(0, 100 << 20, 0o1600)\n"
           "if i >= 0: a = l.shmat(i, None, 0); ctypes.memset(a, 1, 100 << 20); "
           "l.shmdt(ctypes.c_void_p(a))'; sleep 0.3; done; sleep 0.5; "
           "awk 'NR > 1 {s += $15 + $16} END {print \"held\", s + 0}' /proc/sysvipc/shm")


def part_memory(token: str) -> dict[str, Any]:
    limit = 256 << 20
    out: dict[str, Any] = {"limit": limit}
    fr = Fresh(limits=ab.Limits(max_memory_bytes=limit, timeout=60))
    with fr as sb:
        out["backend"] = sb.isolation.mechanisms.get("memory_limit")
        for name, code in HOLD.items():
            r = sb.run(f"python3 -c 'import os, mmap, time\n{code}\nprint(\"held\", flush=True)"
                       f"\ntime.sleep(4)\nprint(\"survived\")'; echo rc=$?", timeout=60)
            out[name] = {"out": r.stdout[-300:], "err": r.stderr[-300:],
                         "limit": r.limit_exceeded,
                         "after": call(lambda: sb.run("ipcrm -a; echo alive",
                                                      timeout=30).stdout, 60)}
        r = sb.run(ORPHANS, timeout=60)
        out["sysv_orphans"] = {"out": r.stdout[-300:], "err": r.stderr[-300:],
                               "after": call(lambda: sb.run("ipcrm -a; echo alive",
                                                            timeout=30).stdout, 60)}
    out["left"] = fr.left
    return out


# -- part "network": this host's own addresses, in every spelling ---------------------------------
def _spellings(addr: str) -> list[str]:
    import ipaddress
    ip = ipaddress.ip_address(addr)
    if ip.version == 6:
        return [f"[{ip.compressed}]", f"[{ip.exploded}]"]
    n = int(ip)
    return [addr, str(n), hex(n), f"[::ffff:{addr}]", f"[::{addr}]", f"[64:ff9b::{addr}]",
            f"[2002:{n >> 16:x}:{n & 0xffff:x}::1]", f"[0:0:0:0:0:ffff:{n >> 16:x}:{n & 0xffff:x}]"]


def part_network(token: str) -> dict[str, Any]:
    import psutil
    hits: list[str] = []
    socks = []
    for fam, addr in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        s = socket.socket(fam, socket.SOCK_STREAM)
        if fam == socket.AF_INET6:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        s.bind((addr, socks[0].getsockname()[1] if socks else 0))
        s.listen(64)
        s.settimeout(0.2)
        socks.append(s)
    port = socks[0].getsockname()[1]
    for fam, addr in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        u = socket.socket(fam, socket.SOCK_DGRAM)
        if fam == socket.AF_INET6:
            u.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        u.bind((addr, port))
        u.settimeout(0.2)
        socks.append(u)
    stop = threading.Event()

    def serve(s: socket.socket) -> None:
        while not stop.is_set():
            if s.type == socket.SOCK_DGRAM:
                try:
                    hits.append(f"udp {s.recvfrom(100)}")
                except OSError:
                    pass
                continue
            try:
                c, a = s.accept()
            except OSError:
                continue
            hits.append(str(a))
            try:
                c.sendall(b"HTTP/1.0 200 OK\r\n\r\nHOSTSECRET-" + token.encode() + b"\n")
            finally:
                c.close()
    for s in socks:
        threading.Thread(target=serve, args=(s,), daemon=True).start()
    own = sorted({a.address.split("%")[0] for addrs in psutil.net_if_addrs().values()
                  for a in addrs if a.family in (socket.AF_INET, socket.AF_INET6)})
    targets = [t for a in own for t in _spellings(a)] + [socket.gethostname()]
    lines = []
    for t in targets:
        host = t.strip("[]")
        lines += [f"curl -s -m 4 http://{t}:{port}/",
                  f"curl -s -m 4 --noproxy '*' http://{t}:{port}/",
                  f"curl -s -m 4 -x socks5h://127.0.0.1:3128 http://{t}:{port}/",
                  f"python3 -c 'import socket; s = socket.create_connection((\"{host}\", {port}), "
                  f"timeout=3); s.sendall(b\"GET / HTTP/1.0\\r\\n\\r\\n\"); print(s.recv(99))'"]
    # UDP to every own address (and broadcast/multicast) around the proxy
    udp = [a for a in own] + ["255.255.255.255", "224.0.0.1"]
    lines.append("python3 -c 'import socket\nfor h in %s:\n s = socket.socket(socket.AF_INET6 "
                 "if \":\" in h else socket.AF_INET, socket.SOCK_DGRAM)\n s.setsockopt("
                 "socket.SOL_SOCKET, socket.SO_BROADCAST, 1)\n try: s.sendto(b\"x\", (h, %d))"
                 "\n except OSError as e: print(\"udp refused\", h, e.errno)'" % (json.dumps(udp), port))
    out: dict[str, Any] = {"own": own, "targets": targets}
    fr = Fresh()
    with fr as sb:
        r = sb.run("; ".join(f"{ln} 2>&1" for ln in lines) + "; true", timeout=400)
        out["run"] = {"out": r.stdout[-3000:], "code": r.exit_code, "violations": len(r.violations)}
        # refused connections from background processes after their run returned: what the
        # host keeps for the next Result stays bounded however long the caller waits
        sb.write_file("/tmp/refuse.py", b"import socket, time\nt = time.monotonic()\n"
                      b"while time.monotonic() - t < 90:\n    try:\n"
                      b"        socket.create_connection(('10.1.2.3', 80), timeout=0.5).close()\n"
                      b"    except OSError:\n        pass\n")
        sb.run("for i in 1 2 3 4; do (python3 /tmp/refuse.py > /dev/null 2>&1 &); done", timeout=30)
        att = sb._ex._net
        deadline = time.monotonic() + 60
        while att._dropped < 200 and time.monotonic() < deadline:
            time.sleep(0.2)
        pending, dropped = len(att._violations), att._dropped
        nxt = sb.run("pkill -f refuse.py; echo ok", timeout=30)
        out["background_refusals"] = {
            "pending": pending, "dropped": dropped, "next_violations": len(nxt.violations),
            "summary": [str(v) for v in nxt.violations if "not itemised" in str(v)]}
    time.sleep(0.5)
    stop.set()
    out["hits"] = hits
    out["secret_seen"] = f"HOSTSECRET-{token}" in r.stdout
    out["left"] = fr.left
    return out


PARTS: dict[str, Callable[[str], dict[str, Any]]] = {
    "files": part_files, "kernel": part_kernel, "report": part_report,
    "resources": part_resources, "memory": part_memory,
    "network": part_network,
}


def main(parts: dict[str, Callable[[str], dict[str, Any]]] | None = None) -> None:
    """Run the part named by argv[1] (of ``parts``, this battery's by default) with the token
    argv[2] and print its result after ``@@JSON@@``."""
    import shutil
    part, token = sys.argv[1], sys.argv[2]
    t0 = time.monotonic()
    try:
        try:
            got = (PARTS if parts is None else parts)[part](token)
        except Exception:  # noqa: BLE001
            got = {"error": traceback.format_exc()}
        got["_wall"] = round(time.monotonic() - t0, 2)
        got["_uid"] = os.geteuid()
        print("\n@@JSON@@" + json.dumps(got, default=str))
        sys.stdout.flush()
    finally:
        shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    main()
