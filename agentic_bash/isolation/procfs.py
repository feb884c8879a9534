"""The sandbox's own /proc/meminfo: a file pid 1 rewrites as each reader opens it (a file lease: FUSE, LXCFS's way, needs /dev/fuse), bound over the kernel's."""

# Hand-written: LXCFS does this with a FUSE server, which needs /dev/fuse (mode 0600 here:
# out of an unprivileged sandbox's reach) and a daemon; a lease needs neither. pid 1 holds a
# write lease on the file; an open(2) of it by any other process waits while the kernel
# tells the lease holder (a signal, directed at pid 1's main thread), which rewrites the file
# and lets go; the reader then reads figures taken at its open. While some reader keeps the
# file open (top, `free -s`) no lease can be taken: the file is rewritten on a timer then.

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import signal
import struct
import threading
from typing import Any, Callable

from .._lazyre import lazy_compile as _lazy_re

__all__ = ["MeminfoView", "SandboxMemory", "install_meminfo", "meminfo_view"]

_F_SETSIG, _F_SETLEASE, _F_GETLEASE = fcntl.F_SETSIG, fcntl.F_SETLEASE, fcntl.F_GETLEASE
_F_SETOWN_EX, _F_GETOWN_EX = 15, 16   # (not in the fcntl module)
_F_OWNER_TID = 0
LEASE_SIGNAL = signal.SIGRTMIN + 4
"""The lease-break signal pid 1 asks for (F_SETSIG): caught by its main thread only."""
TIMER_SIGNAL = signal.SIGRTMIN + 5
"""The view's timer's signal (a POSIX timer aimed at pid 1's main thread)."""
RELEASE_FIRST = 0.005
"""Seconds after a lease break before pid 1 takes the lease again: under a flood of opens it
rewrites the file at most this often (readers between see the last figures)."""
RELEASE_MAX = 0.5
"""The longest wait between attempts while a reader keeps the file open (each attempt that
fails rewrites the file: what a `top` that re-reads its open descriptor sees)."""


def _stat_key(version_v1: bool) -> dict[str, str]:
    # our name -> memory.stat's (v1: the hierarchical totals, the sandbox's group and below)
    if version_v1:
        return {"anon": "total_rss", "file": "total_cache", "shmem": "total_shmem",
                "mapped": "total_mapped_file", "dirty": "total_dirty",
                "writeback": "total_writeback", "active_anon": "total_active_anon",
                "inactive_anon": "total_inactive_anon", "active_file": "total_active_file",
                "inactive_file": "total_inactive_file", "unevictable": "total_unevictable",
                "anon_thp": "total_rss_huge"}
    return {k: k for k in ("anon", "file", "shmem", "active_anon", "inactive_anon",
                           "active_file", "inactive_file", "unevictable", "anon_thp",
                           "slab_reclaimable", "slab_unreclaimable", "kernel_stack",
                           "pagetables")} | {"mapped": "file_mapped", "dirty": "file_dirty",
                                             "writeback": "file_writeback"}


class SandboxMemory:
    """The sandbox's memory now, in bytes: ``used`` (its memory cgroup's usage, else the
    watchdog's last sample) and, with a memory cgroup, the break-down of its memory.stat.
    ``limit``: ``Limits.max_memory_bytes``. Both descriptors are opened by pid 1 before the
    root is built (the host's cgroupfs is out of reach afterwards)."""

    def __init__(self, limit: int, usage_fd: int | None = None, stat_fd: int | None = None,
                 v1: bool = True, last: Callable[[], int | None] | None = None) -> None:
        self.limit = limit
        self.usage_fd = usage_fd
        self.stat_fd = stat_fd
        self.keys = _stat_key(v1)
        self.last = last

    def read(self) -> dict[str, int]:
        """``used`` always (0 when unknown), the memory.stat figures when there are some."""
        out: dict[str, int] = {}
        if self.stat_fd is not None:
            try:
                raw = os.pread(self.stat_fd, 16384, 0)
            except OSError:
                raw = b""
            stat = {}
            for line in raw.splitlines():
                k, _, v = line.partition(b" ")
                try:
                    stat[k.decode()] = int(v)
                except ValueError:
                    continue
            for ours, theirs in self.keys.items():
                if theirs in stat:
                    out[ours] = stat[theirs]
        used = None
        if self.usage_fd is not None:
            try:
                used = int(os.pread(self.usage_fd, 32, 0))
            except (OSError, ValueError):
                used = None
        if used is None and self.last is not None:
            try:
                used = self.last()
            except Exception:  # noqa: BLE001 - a refinement only
                used = None
        out["used"] = max(0, used or 0)
        return out


_LINE = _lazy_re(rb"^([^:\s]+:)(\s*)(\d+)(.*)$")
# what each meminfo line says of the sandbox (kB lines; figures in bytes), given the view's
# total T, the sandbox's figures m and the host's line values h
_ZERO = {"Buffers", "SwapCached", "SwapTotal", "SwapFree", "Zswap", "Zswapped", "Bounce",
         "NFS_Unstable", "WritebackTmp", "ShmemPmdMapped", "FilePmdMapped", "Hugetlb",
         "SecPageTables", "Balloon", "HugePages_Total", "HugePages_Free", "HugePages_Rsvd",
         "HugePages_Surp"}
_KEEP = {"VmallocTotal", "Hugepagesize"}   # sizes of address space, not memory in use
_FROM_STAT = {"Active(anon)": ("active_anon",), "Inactive(anon)": ("inactive_anon",),
              "Active(file)": ("active_file",), "Inactive(file)": ("inactive_file",),
              "Active": ("active_anon", "active_file"),
              "Inactive": ("inactive_anon", "inactive_file"),
              "Unevictable": ("unevictable",), "Dirty": ("dirty",),
              "Writeback": ("writeback",), "AnonPages": ("anon",), "Mapped": ("mapped",),
              "Shmem": ("shmem",), "AnonHugePages": ("anon_thp",),
              "KReclaimable": ("slab_reclaimable",), "SReclaimable": ("slab_reclaimable",),
              "SUnreclaim": ("slab_unreclaimable",),
              "Slab": ("slab_reclaimable", "slab_unreclaimable"),
              "KernelStack": ("kernel_stack",), "PageTables": ("pagetables",)}


def view_figures(host_kb: dict[str, int], limit: int, m: dict[str, int]) -> dict[str, int]:
    """The headline figures in kB (MemTotal, MemFree, MemAvailable, Cached) for a sandbox of
    ``limit`` bytes using ``m["used"]``: the total is the limit (never above the host's RAM),
    free is what the limit leaves, available adds the sandbox's reclaimable page cache; free
    and available at most what the host has available (not the host's free figure, which its
    page cache keeps low: 900 MiB of 24 GiB here)."""
    total = min(host_kb.get("MemTotal", limit >> 10), limit >> 10)
    used = m.get("used", 0) >> 10
    free = max(0, min(host_kb.get("MemAvailable", total), total - used))
    reclaim = (m.get("active_file", 0) + m.get("inactive_file", 0)
               + m.get("slab_reclaimable", 0)) >> 10
    avail = min(host_kb.get("MemAvailable", total), total, max(free, total - used + reclaim))
    cached = min(m.get("file", 0) >> 10, used, total)
    return {"MemTotal": total, "MemFree": free, "MemAvailable": avail, "Cached": cached}


def meminfo_view(host: bytes, limit: int, m: dict[str, int]) -> bytes:
    """/proc/meminfo as the sandbox sees it: the host's text, line for line and column for
    column, with the sandbox's figures (``view_figures``, memory.stat's break-down where it
    has one) and no swap; a kB figure it knows nothing of is at most the total."""
    host_kb: dict[str, int] = {}
    parsed = []
    for line in host.splitlines():
        g = _LINE.match(line)
        parsed.append(g)
        if g:
            host_kb[g.group(1)[:-1].decode()] = int(g.group(3))
    head = view_figures(host_kb, limit, m)
    total = head["MemTotal"]
    out = []
    for line, g in zip(host.splitlines(), parsed):
        if not g:
            out.append(line)
            continue
        key = g.group(1)[:-1].decode()
        v = int(g.group(3))
        if key in head:
            v = head[key]
        elif key in _ZERO:
            v = 0
        elif key in _FROM_STAT:
            parts = _FROM_STAT[key]
            v = min(total, sum(m.get(p, 0) for p in parts) >> 10) if any(
                p in m for p in parts) else 0
        elif key == "CommitLimit":
            v = total
        elif key not in _KEEP and g.group(4).strip() == b"kB":
            v = min(v, total)
        s = str(v).encode()
        width = len(g.group(2)) + len(g.group(3))
        out.append(g.group(1) + b" " * max(1, width - len(s)) + s + g.group(4))
    return b"\n".join(out) + b"\n"


class _ThreadTimer:
    """A one-shot POSIX timer whose signal goes to the thread that made it (SIGEV_THREAD_ID):
    an interval timer's SIGALRM goes to any thread of the process, and one taken by the
    supervisor's thread (blocked in an ioctl) left pid 1's main thread asleep in waitpid with
    the handler pending until some child ended."""

    class _Event(ctypes.Structure):
        _fields_ = [("value", ctypes.c_void_p), ("signo", ctypes.c_int),
                    ("notify", ctypes.c_int), ("tid", ctypes.c_int),
                    ("_pad", ctypes.c_int * 11)]

    class _Spec(ctypes.Structure):
        _fields_ = [("i_s", ctypes.c_long), ("i_ns", ctypes.c_long),
                    ("v_s", ctypes.c_long), ("v_ns", ctypes.c_long)]

    def __init__(self, signo: int) -> None:
        from .syscalls import _libc
        self.libc = _libc
        ev = self._Event(None, signo, 4, threading.get_native_id())   # SIGEV_THREAD_ID
        self.timer = ctypes.c_void_p()
        if self.libc.timer_create(1, ctypes.byref(ev), ctypes.byref(self.timer)) != 0:
            e = ctypes.get_errno()
            raise OSError(e, f"timer_create: {os.strerror(e)}")

    def arm(self, seconds: float) -> None:
        ns = max(1, int(seconds * 1e9))
        spec = self._Spec(0, 0, ns // 1_000_000_000, ns % 1_000_000_000)
        self.libc.timer_settime(self.timer, 0, ctypes.byref(spec), None)


class MeminfoView:
    """pid 1's side of the view: the file's writable descriptor, the kernel's meminfo, and the
    lease. ``start`` (pid 1's main thread, after S3 is forked: the handlers are pid 1's own)
    installs the LEASE_SIGNAL and TIMER_SIGNAL handlers; both signals are aimed at the main
    thread and interrupt it wherever it waits (waitpid, the watchdog's select), which is why
    no thread is added (RLIMIT_NPROC counts the runner's tasks against the workload's)."""

    def __init__(self, fd: int, host_fd: int, memory: SandboxMemory) -> None:
        self.fd = fd
        self.host_fd = host_fd
        self.memory = memory
        self.held = False
        self.wait = RELEASE_FIRST
        self.mode = "static"     # "lease" once start() holds one; "timer" if leases fail
        self.refreshes = 0
        self.timer: _ThreadTimer | None = None
        self.tid = 0
        self._busy = False

    def render(self) -> bytes:
        try:
            host = os.pread(self.host_fd, 65536, 0)
        except OSError:
            host = b""
        return meminfo_view(host, self.memory.limit, self.memory.read())

    def refresh(self) -> None:
        data = self.render()
        # the same length nearly always (the host's columns): no reader sees a short file
        os.pwrite(self.fd, data, 0)
        if os.fstat(self.fd).st_size != len(data):
            os.ftruncate(self.fd, len(data))
        self.refreshes += 1

    def close(self) -> None:
        """In a child that must not keep the writable descriptor (S3)."""
        for fd in (self.fd, self.host_fd):
            try:
                os.close(fd)
            except OSError:
                pass

    def start(self) -> None:
        self.timer = _ThreadTimer(TIMER_SIGNAL)
        signal.signal(LEASE_SIGNAL, self._on_break)
        signal.signal(TIMER_SIGNAL, self._on_alarm)
        self.tid = threading.get_native_id()
        self._take()

    def _arm(self, seconds: float) -> None:
        self.timer.arm(seconds)

    def _take(self) -> None:
        # the signal and its owner, set before each lease (letting one go clears both; a new
        # lease keeps an owner already set): pid 1's main thread, so the break interrupts its
        # wait; a process-wide signal could go to the supervisor's thread and wait there
        # until the main thread woke up
        fcntl.fcntl(self.fd, _F_SETSIG, LEASE_SIGNAL)
        fcntl.fcntl(self.fd, _F_SETOWN_EX, struct.pack("iI", _F_OWNER_TID, self.tid))
        try:
            fcntl.fcntl(self.fd, _F_SETLEASE, fcntl.F_WRLCK)
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.EBUSY):
                self.mode = "timer"   # (no leases here: fs.leases-enable=0)
                self.refresh()
                self._arm(RELEASE_MAX)
                return
            self.refresh()            # a reader holds it open: rewrite, try again later
            self._arm(self.wait)
            self.wait = min(self.wait * 2, RELEASE_MAX)
            return
        owner = struct.unpack("iI", fcntl.fcntl(self.fd, _F_GETOWN_EX, bytes(8)))
        if owner != (_F_OWNER_TID, self.tid):
            # the break signal would go elsewhere: let go, and rewrite on a timer instead
            fcntl.fcntl(self.fd, _F_SETLEASE, fcntl.F_UNLCK)
            self.mode = "timer"
            self._arm(RELEASE_MAX)
            return
        self.held = True
        self.mode = "lease"
        self.wait = RELEASE_FIRST
        if fcntl.fcntl(self.fd, _F_GETLEASE) != fcntl.F_WRLCK:
            self._serve()   # an open came between the two calls

    def _serve(self) -> None:
        try:
            self.refresh()
        finally:
            fcntl.fcntl(self.fd, _F_SETLEASE, fcntl.F_UNLCK)
            self.held = False
            self._arm(RELEASE_FIRST)

    def _on_break(self, signum: int, frame: Any) -> None:
        # (runs between any two bytecodes of pid 1's main thread: never raises)
        if self._busy:
            return   # (the outer handler serves it: the lease is let go there)
        self._busy = True
        try:
            if self.held:
                self._serve()
        except BaseException:  # noqa: BLE001
            self._let_go()
        finally:
            self._busy = False

    def _on_alarm(self, signum: int, frame: Any) -> None:
        if self._busy:
            try:
                self._arm(RELEASE_FIRST)
            except BaseException:  # noqa: BLE001
                pass
            return
        self._busy = True
        try:
            if self.mode == "timer":
                self.refresh()
                self._arm(RELEASE_MAX)
            elif not self.held:
                self._take()
        except BaseException:  # noqa: BLE001
            self._let_go()
        finally:
            self._busy = False

    def _let_go(self) -> None:
        try:
            fcntl.fcntl(self.fd, _F_SETLEASE, fcntl.F_UNLCK)
        except BaseException:  # noqa: BLE001
            pass
        self.held = False


def install_meminfo(memory: SandboxMemory, scratch: str = "/dev/shm") -> MeminfoView:
    """pid 1, after the root is built and while it may still mount: the view's file, made in
    ``scratch`` (a tmpfs of the sandbox), written once, bound read-only over /proc/meminfo
    and unlinked (it is reachable only there; the read-only mount refuses writes, chmod and
    write leases to everything but pid 1's descriptor). Raises OSError when it cannot."""
    from . import syscalls as sc
    host_fd = os.open("/proc/meminfo", os.O_RDONLY | os.O_CLOEXEC)
    name = os.path.join(scratch, f".meminfo-{os.getpid()}")
    try:
        fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o444)
    except OSError:
        os.close(host_fd)
        raise
    view = MeminfoView(fd, host_fd, memory)
    try:
        view.refresh()
        sc.mount(name, "/proc/meminfo", None, sc.MS_BIND)
        try:
            sc.mount(None, "/proc/meminfo", None, sc.MS_BIND | sc.MS_REMOUNT | sc.MS_RDONLY
                     | sc.MS_NOSUID | sc.MS_NODEV | sc.MS_NOEXEC)
        except BaseException:
            sc.umount2("/proc/meminfo", sc.MNT_DETACH)   # never a writable one
            raise
    except BaseException:
        view.close()
        raise
    finally:
        os.unlink(name)
    return view
