"""Limits inside the sandbox: S1 joins the cgroups, S2 (pid 1) runs the memory watchdog, S3 sets its rlimits and measures every run."""

from __future__ import annotations

import os
import resource
import signal
import struct
import time
from typing import Any, Callable

from .procstat import PGRP, PPID, STATE, THREADS, processes, stat_fields

_process_time = time.process_time

__all__ = ["S3Usage", "WatchdogPage", "pss_anon", "s1_join", "s2_wait_with_watchdog",
           "s3_prepare", "sample"]

NPROC_WORKLOAD_HEADROOM = 6
"""RLIMIT_NPROC counts the runner's own tasks too (S1, S2 and its thread, S3 and its run
thread): the workload's limit is ``max_processes`` plus this (one less where the zygote
cloned S2 directly and there is no S1: ``nproc_headroom``)."""


def _nothing() -> None:
    pass


def nproc_headroom(cfg: dict[str, Any]) -> int:
    """NPROC_WORKLOAD_HEADROOM for this sandbox's process tree (runner.py's top comment)."""
    return NPROC_WORKLOAD_HEADROOM - (1 if cfg.get("direct_clone") else 0)
NPROC_RUNNER_EXTRA = 16
"""The runner's own RLIMIT_NPROC is this much higher than the workload's, so a full table
never stops the runner from starting its next run."""
_FULL = 64 * 1024
"""A tmpfs with less than this free after a run counts as full (``limit_exceeded == "disk"``)."""
_TMPFS = ("/.agentic-bash/layer", "/dev/shm")


def _members(pids: set[int], groups: set[int], me: int) -> list[int]:
    """Processes in /proc that are one of ``pids`` or in one of ``groups``, except zombies
    whose parent is ``me`` (reaped when their job is polled)."""
    out = []
    for pid, f in processes():
        try:
            state, ppid, pgrp = f[STATE], int(f[PPID]), int(f[PGRP])
        except ValueError:
            continue
        if (pid in pids or pgrp in groups) and pid != me and not (state == b"Z" and ppid == me):
            out.append(pid)
    return out


# -- S1: before unshare ------------------------------------------------------------------------
def _single_threaded() -> bool:
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


def s1_join(cfg: dict[str, Any]) -> None:
    """Move this process (and so the whole sandbox to be) into its cgroups, open the workload
    groups for the runner, and make the S2 <-> S3 watchdog channel. Errors are recorded for the
    report, never raised: an unapplied limit is reported as such."""
    res = cfg.get("resources") or {}
    seen = cfg.setdefault("limits_observed", {})
    joined = []
    me = str(os.getpid())
    # A single-threaded process moves itself by writing "0" to a v1 hierarchy's ``tasks``:
    # the kernel then skips the global threadgroup lock (cgroup.procs with a pid takes it,
    # and entering it waits for an RCU grace period: 5-20 ms per sandbox measured here under
    # load, against 0.1-0.3 ms). S1 is forked from the single-threaded zygote; checked.
    self_move = _single_threaded()
    for path in res.get("cgroups", ()):
        try:
            tasks = os.path.join(os.path.dirname(path), "tasks")
            if self_move and os.path.exists(tasks):
                with open(tasks, "w") as f:
                    f.write("0")
            else:
                with open(path, "w") as f:
                    f.write(me)
            joined.append(path)
        except OSError as e:
            seen["cgroup_error"] = f"joining {path}: {e.strerror}"
            break
    seen["cgroups_joined"] = joined
    fds = []
    for path in res.get("work_cgroups", ()):
        try:
            fds.append(os.open(path, os.O_WRONLY | os.O_CLOEXEC))
        except OSError as e:
            seen["cgroup_error"] = f"opening {path}: {e.strerror}"
    cfg["_work_cgroup_fds"] = fds
    tasks = []
    for path in res.get("work_tasks", ()):
        try:
            tasks.append(os.open(path, os.O_WRONLY | os.O_CLOEXEC))
        except OSError as e:
            seen["cgroup_error"] = f"opening {path}: {e.strerror}"
    if len(tasks) != len(res.get("work_tasks", ())):
        for fd in tasks:
            os.close(fd)
        tasks = []
    cfg["_work_tasks_fds"] = tasks
    events = []
    for path in res.get("pids_events", ()):
        try:
            events.append(os.open(path, os.O_RDONLY | os.O_CLOEXEC))
        except OSError:
            pass
    cfg["_pids_events_fds"] = events
    seen["pids_events_opened"] = len(events)
    ev_paths = list(res.get("pids_events", ()))
    if len(ev_paths) == 2 == len(events):
        # how many tasks the workload's group holds: S3 skips its per-run counter reads
        # while that group is empty (see S3Usage)
        try:
            cfg["_work_pids_current_fd"] = os.open(
                os.path.join(os.path.dirname(ev_paths[1]), "pids.current"),
                os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            pass
    mem = res.get("memory_counters") or {}
    if mem:
        # the memory group's peak (O_RDWR: a write resets it) and its OOM-kill counter, for
        # S3's per-run figures; neither file can change a limit
        try:
            peak = os.open(mem["peak"], os.O_RDWR | os.O_CLOEXEC)
            try:
                oom = os.open(mem["oom"], os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                os.close(peak)
                raise
            cfg["_memory_fds"] = (peak, oom, str(mem.get("reset", "0")).encode())
            seen["memory_counters"] = True
        except OSError:
            pass
        if res.get("unowned"):
            # (attack13) what the group holds now and how much of it is page cache, for
            # S3's check before each spawn (SpawnRoom); neither file can change a limit
            d = os.path.dirname(mem["peak"])
            v1 = str(mem.get("reset", "0")) == "0"
            try:
                use = os.open(os.path.join(d, "memory.usage_in_bytes" if v1 else "memory.current"),
                              os.O_RDONLY | os.O_CLOEXEC)
                try:
                    st = os.open(os.path.join(d, "memory.stat"), os.O_RDONLY | os.O_CLOEXEC)
                except OSError:
                    os.close(use)
                    raise
                cfg["_spawn_room_fds"] = (use, st, v1)
            except OSError:
                pass
    if res.get("watchdog"):
        cfg["_watchdog_page"] = WatchdogPage()
    elif res.get("fd_guard") and cfg.get("level") == "namespace":
        cfg["_fd_guard_page"] = WatchdogPage()   # (only its busy flag and wake-up eventfd)
        if PID1_RAISES and res.get("unowned"):
            cfg["_fd_guard_page"].make_kick()


class WatchdogPage:
    """What S2's watchdog and S3 share: one anonymous MAP_SHARED page made by S1 before the
    fork, so a run's figures cost S3 a few loads and stores — no message, no wake-up of pid 1
    on the run's path. No other process can reach it (native children exec away from it).

    Fields (int64): ``gen`` (S3: bumped at each run's start), ``seen`` (S2: the gen its last
    sample belongs to), ``peak`` (S2: highest total since ``seen`` changed), ``last`` (S2: the
    last total), ``kills`` and ``at_max`` (S2: monotonic counts of kills and of samples with
    the process limit reached), ``runner`` (S3: its own proportional size), ``busy`` (S3: 1
    from a request's arrival until it waits for the next one with no in-process job left),
    ``raises`` (S2: 1 once it gives every new process oom_score_adj 1000 itself: see
    ``PID1_RAISES``), ``spawns`` and ``child`` (S3: programs started so far, the last one's
    pid; written before ``kick_fd``, an eventfd pid 1 then wakes on).

    ``wake_fd``: an eventfd S3 writes when it turns busy, so a watchdog that sleeps while the
    sandbox is quiet samples again at once (None: no quiet sleep, see s2_wait_with_watchdog)."""

    _FIELDS = ("gen", "seen", "peak", "last", "kills", "at_max", "runner", "busy", "raises",
               "spawns", "child")
    # (host15) each field's offset looked up in a dict and read/written in place: the runner
    # calls get/set ~12 times a native run (tuple.index + a slice copy + int.from_bytes were
    # ~1.5 us each on this machine); the page's layout is unchanged (little-endian int64s)
    _OFF = {name: i * 8 for i, name in enumerate(_FIELDS)}
    _I64 = struct.Struct("<q")

    def __init__(self) -> None:
        import mmap
        self._m = mmap.mmap(-1, 4096, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)
        try:
            self.wake_fd: int | None = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
        except (OSError, AttributeError):
            self.wake_fd = None
        self.kick_fd: int | None = None

    def make_kick(self) -> None:
        try:
            self.kick_fd = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
        except (OSError, AttributeError):
            self.kick_fd = None

    def kicked(self, pid: int) -> None:
        """S3: a program started (pid 1 gives it oom_score_adj 1000 at once)."""
        self.set("child", pid)
        self.set("spawns", self.get("spawns") + 1)
        if self.kick_fd is not None:
            try:
                os.eventfd_write(self.kick_fd, 1)
            except OSError:
                pass

    def get(self, name: str) -> int:
        return self._I64.unpack_from(self._m, self._OFF[name])[0]  # type: ignore[no-any-return]

    def set(self, name: str, value: int) -> None:
        self._I64.pack_into(self._m, self._OFF[name], int(value))


# -- S2: pid 1 ---------------------------------------------------------------------------------
_INODE_BYTES = 1024
"""Kernel memory one tmpfs inode holds with its dentry (shmem_inode_cache 752 + dentry 192
bytes here), charged by the watchdog: an empty file, directory or link costs no byte of a
tmpfs's size (attack11: 600,000 empty files in /dev/shm held 541 MiB of slab under a 256 MiB
limit; the sandbox's /dev, a 64 KiB tmpfs the workload may write, 200,000 for 250 MiB)."""
_WATCHED_TMPFS = _TMPFS + ("/dev",)


def _tmpfs_used() -> int:
    """Bytes the sandbox's tmpfs mounts hold: their data, and ``_INODE_BYTES`` an inode."""
    used = 0
    for p in _WATCHED_TMPFS:
        try:
            st = os.statvfs(p)
            used += ((st.f_blocks - st.f_bfree) * st.f_frsize
                     + (st.f_files - st.f_ffree) * _INODE_BYTES)
        except OSError:
            pass
    return used


_PAGE = os.sysconf("SC_PAGE_SIZE")


def _statm_anon(pid: str) -> int | None:
    """Resident bytes plus page tables (/proc/<pid>/status VmRSS + VmPTE): cheap, an upper
    bound (pages a fork still shares copy-on-write count in full in every process that maps
    them, and so do mapped files). Shared memory (MAP_SHARED anonymous, a mapped memfd, SysV)
    is in statm's "shared" with the file pages, so resident minus shared would miss it
    (attack9: 768 MiB of MAP_SHARED memory held past a 256 MiB limit); ``_pss_held``
    separates them when the sum passes the limit. Page tables are in no page count: reads of
    a never-written read-only mapping map the shared zero page, which no RSS counts, yet each
    2 MiB read costs a 4 KiB page-table page (attack11: 512 MiB of them from one process,
    RSS 10 MiB, lived under a 256 MiB limit). A zombie has neither line: 0."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            data = f.read()
        _pte[pid] = _kib(data, b"\nVmPTE:")
        i = data.find(b"\nFDSize:")
        if i >= 0:
            _fdsize[pid] = int(data[i + 8:data.index(b"\n", i + 8)])
        return _kib(data, b"\nVmRSS:") + _pte[pid]
    except (OSError, ValueError):
        return None


_pte: dict[str, int] = {}
"""pid -> page-table bytes from the last cheap pass (the precise pass adds them again)."""
_fdsize: dict[str, int] = {}
"""pid -> descriptor table size (status FDSize: at least its open descriptors)."""


def _fd_budget() -> int:
    """Descriptor table slots the sandbox's processes may hold in all: a sixteenth of the
    machine's open-file table (fs.file-max), at least 131,072 (1,024 processes of 128)."""
    try:
        with open("/proc/sys/fs/file-max", "rb") as f:
            return max(1 << 17, int(f.read()) // 16)
    except (OSError, ValueError):
        return 1 << 20


def _fd_hogs(budget: int, exclude: tuple[int, ...]) -> list[int]:
    """The processes to kill, largest descriptor table first, for the sandbox's processes'
    tables to stay within ``budget`` (none while they do). fs.file-max is one table for the
    whole machine: past it every process without CAP_SYS_ADMIN in the host's namespace gets
    ENFILE (attack11: 30 processes of 19,438 opens each took 586k of 2.47M in seconds). A
    table's size (status FDSize, the next power of two above its highest descriptor) is an
    upper bound read with the sample: listing every descriptor of every process in time
    to stop a filler was too slow (it held 519k at the peak)."""
    total = sum(_fdsize.values())
    out: list[int] = []
    for pid, size in sorted(_fdsize.items(), key=lambda kv: -kv[1]):
        if total <= budget:
            break
        if int(pid) not in exclude:
            out.append(int(pid))
            total -= size
    return out


def _kib(data: bytes, key: bytes) -> int:
    i = data.find(key)
    if i < 0:
        return 0
    return int(data[i + len(key):data.index(b"kB", i)]) << 10


def _pss_held(pid: str | int) -> int | None:
    """Proportional anonymous plus shared-memory bytes (smaps_rollup Pss_Anon + Pss_Shmem):
    what the process holds that no file on disk backs."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            data = f.read()
    except OSError:
        return None
    got: dict[bytes, int] = {}
    for line in data.splitlines():
        key = line.split(b":", 1)[0]
        if key in (b"Pss", b"Pss_Anon", b"Pss_Shmem"):
            got[key] = int(line.split()[1]) * 1024
    if b"Pss_Anon" in got:
        return got[b"Pss_Anon"] + got.get(b"Pss_Shmem", 0)
    return got.get(b"Pss")


def _socket_bytes() -> dict[int, int] | None:
    """inode -> bytes queued of every unix, TCP and UDP socket (IPv4 and IPv6) of this
    network namespace, from NETLINK_SOCK_DIAG dumps with their memory figures (unix: rmem +
    wmem; inet: rmem + queued writes + forward allocation); None if the kernel will not say.
    Hand-written (a few structs): pyroute2's diag socket would add its import to pid 1 of
    every sandbox. (attack10: 3,000 filled unix socketpairs held 667 MiB, 150 loopback TCP
    connections 559 MiB, under a 256 MiB watchdog limit; sent in flight, the same.)"""
    import socket
    import struct
    try:
        nl = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC, 4)
    except OSError:
        return None
    out: dict[int, int] = {}
    unix = struct.pack("=BBHIII8x", socket.AF_UNIX, 0, 0, 0xFFFFFFFF, 0, 0x20)  # MEMINFO
    reqs = [(unix, 4, 5)] + [   # (request, offset of the inode in a reply, memory attribute)
        (struct.pack("=BBBxI48x", fam, proto, 1 << 6, 0xFFFFFFFF), 68, 7)   # SKMEMINFO
        for fam in (socket.AF_INET, socket.AF_INET6) for proto in (6, 17)]
    answered = False
    try:
        nl.settimeout(1.0)
        for seq, (req, ino_at, attr) in enumerate(reqs, 1):
            nl.send(struct.pack("=IHHII", 16 + len(req), 20, 0x301, seq, 0) + req)
            done = False
            while not done:
                data = nl.recv(1 << 16)
                off = 0
                while off + 16 <= len(data):
                    ln, typ = struct.unpack_from("=IH", data, off)
                    if ln < 16 or typ in (2, 3):   # NLMSG_ERROR (protocol absent), NLMSG_DONE
                        answered = answered or typ == 3
                        done = True
                        break
                    body = off + 16
                    ino = struct.unpack_from("=I", data, body + ino_at)[0]
                    a = body + (16 if attr == 5 else 72)
                    end = off + ln
                    while a + 4 <= end:
                        alen, atyp = struct.unpack_from("=HH", data, a)
                        if alen < 4:
                            break
                        if atyp == attr and alen >= 4 + 24:
                            m = struct.unpack_from("=6I", data, a + 4)
                            # rmem_alloc, rcvbuf, wmem_alloc, sndbuf, fwd_alloc, wmem_queued
                            b = m[0] + m[2] if attr == 5 else m[0] + max(m[2], m[5]) + m[4]
                            if ino and b:
                                out[ino] = out.get(ino, 0) + b
                        a += (alen + 3) & ~3
                    off += (ln + 3) & ~3
    except (OSError, ValueError, struct.error):
        pass   # (a reply cut short: what was read so far; pid 1 must never fail here)
    finally:
        nl.close()
    return out if answered or out else None


_unix_scope = ["held"]
"""``"all"``: every socket of pid 1's network namespace is the sandbox's (its own
namespace: sockets in flight, held by no process, count too); ``"held"``: only those a
sandbox process holds (the host's namespace)."""


class _FdScan:
    """Who holds what among the sandbox's descriptors: the bytes of the memfds each process
    holds open (st_blocks: allocated, mapped or not; each file once: an unmapped memfd is in
    no process's memory figures and on no mount, attack9: 768 MiB held past a 256 MiB limit)
    and which process holds each socket. Reading every descriptor of every process may take
    seconds (20,000 descriptors a process, 1,024 processes), and the loop waits 4x what a
    sample took (attack11: 9 processes of 20,000 descriptors each spaced the samples 4 s
    apart, and 2 GiB lived under a 256 MiB limit meanwhile): so one sample reads for at most
    ``budget`` seconds and the next goes on where it stopped; figures are the last complete
    pass's (plus the processes this pass has finished)."""

    budget = 0.01

    def __init__(self) -> None:
        self.memfd: dict[int, int] = {}
        self.owner: dict[int, int] = {}
        self.pids: list[str] = []

    def _start(self, pids: list[str]) -> None:
        self.pids, self.i, self.j = list(pids), 0, 0
        self.names: list[str] | None = None
        self.new_memfd: dict[int, int] = {}
        self.new_owner: dict[int, int] = {}
        self.seen: set[tuple[int, int]] = set()

    def step(self, pids: list[str]) -> None:
        if not self.pids:
            self._start(pids)
        end = time.monotonic() + self.budget
        while self.i < len(self.pids):
            pid = self.pids[self.i]
            d = f"/proc/{pid}/fd"
            if self.names is None:
                try:
                    self.names = os.listdir(d)
                except OSError:
                    self.names = []
            names = self.names
            while self.j < len(names):
                if self.j & 63 == 63 and time.monotonic() > end:
                    return
                n = names[self.j]
                self.j += 1
                try:
                    link = os.readlink(f"{d}/{n}")
                    if link.startswith("socket:["):
                        self.new_owner[int(link[8:-1])] = int(pid)
                        continue
                    if not link.startswith("/memfd:"):
                        continue
                    st = os.stat(f"{d}/{n}")
                except (OSError, ValueError):
                    continue
                key = (st.st_dev, st.st_ino)
                if key not in self.seen:
                    self.seen.add(key)
                    self.new_memfd[int(pid)] = self.new_memfd.get(int(pid), 0) + \
                        st.st_blocks * 512
            self.i, self.j, self.names = self.i + 1, 0, None
        self.memfd, self.owner, self.pids = self.new_memfd, self.new_owner, []

    def held(self) -> dict[int, int]:
        """pid -> memfd bytes, and the socket bytes queued now, each charged to its holder
        (under -1 those no process is known to hold, when every socket is the sandbox's)."""
        out = dict(self.memfd)
        socks = _socket_bytes()
        if socks:
            part = self.new_owner if self.pids else {}
            unheld = 0
            for ino, b in socks.items():
                pid = part.get(ino) or self.owner.get(ino)
                if pid is not None:
                    out[pid] = out.get(pid, 0) + b
                else:
                    unheld += b
            if unheld and _unix_scope[0] == "all":
                out[-1] = unheld
        return out


_fd_scan = _FdScan()


def _memfd_held(pids: list[str]) -> dict[int, int]:
    """Bytes of the memfds each process holds open plus the bytes queued in the sockets each
    holds, and under key -1 those no process holds (see ``_FdScan``: one bounded step)."""
    _fd_scan.step(pids)
    return _fd_scan.held()


_MEMFD_EVERY = 0.25
_memfd_last: list[Any] = [float("-inf"), {}]


def _memfd_recent(pids: list[str]) -> dict[int, int]:
    """``_memfd_held`` at most every _MEMFD_EVERY seconds (it reads descriptors: ~4x the
    cost of the rest of a sample), the last figures in between."""
    now = time.monotonic()
    if now - _memfd_last[0] >= _MEMFD_EVERY or _sockets_in_use() >= _SOCKETS_MANY:
        _memfd_last[:] = [now, _memfd_held(pids)]
    return _memfd_last[1]


_SOCKETS_MANY = 32
"""From this many sockets in the sandbox's network namespace on, every sample reads their
queues (a filler of 4 MiB buffers passes 256 MiB with 64 sockets, and 250 ms at ~2 GB/s
overshot the limit by 400-500 MiB under load)."""


def _sockets_in_use() -> int:
    """Sockets of this network namespace ("sockets: used" of /proc/net/sockstat: ~20 us)."""
    if _unix_scope[0] != "all":
        return 0
    try:
        with open("/proc/net/sockstat", "rb") as f:
            return int(f.readline().split()[2])
    except (OSError, ValueError, IndexError):
        return 0


def _sysv_segments() -> list[tuple[int, int, int]]:
    """(bytes, shmid, processes attached) of this IPC namespace's SysV shared memory
    segments: they outlive every process (attack9: one left behind held 768 MiB)."""
    try:
        with open("/proc/sysvipc/shm", "rb") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    if not lines:
        return []
    head = lines[0].split()
    try:
        idx = [head.index(k) for k in (b"rss", b"swap", b"shmid", b"nattch")]
    except ValueError:
        return []
    out = []
    for ln in lines[1:]:
        f = ln.split()
        try:
            rss, swap, shmid, nattch = (int(f[i]) for i in idx)
        except (IndexError, ValueError):
            continue
        out.append((rss + swap, shmid, nattch))
    return out


def _sysv_shm() -> int:
    return sum(b for b, _, _ in _sysv_segments())


def _remove_orphan_segment(bigger_than: int) -> bool:
    """IPC_RMID the largest SysV segment no process has attached, if it holds more than
    ``bigger_than`` bytes (a segment is freed only so; killing a process never frees it)."""
    orphans = sorted((b, i) for b, i, n in _sysv_segments() if n == 0 and b > bigger_than)
    if not orphans:
        return False
    import ctypes
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.shmctl(orphans[-1][1], 0, None) == 0   # IPC_RMID
    except (OSError, AttributeError):
        return False


def pss_anon(pid: str | int) -> int | None:
    """Proportional anonymous bytes from smaps_rollup (shared pages split between sharers);
    ~15x dearer than statm, and unreadable for a non-dumpable process of someone else."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            data = f.read()
    except OSError:
        return None
    pss = None
    for line in data.splitlines():
        if line.startswith(b"Pss_Anon:"):
            return int(line.split()[1]) * 1024
        if line.startswith(b"Pss:"):
            pss = int(line.split()[1]) * 1024
    return pss


PRECISE_BUDGET = 0.1
"""Seconds one sample may spend reading smaps_rollup once the cheap sum passes the limit."""
_WALK_PTE = 16 << 20
"""A process with more page tables than this keeps its upper bound: one smaps_rollup read
walks them all in a single call (~1.4 s for 512 MiB of them) and no budget can stop it."""


def sample(exclude: tuple[int, ...] = (), limit: int | None = None,
           known: dict[int, int] | None = None) -> tuple[int, int, list[tuple[int, int]]]:
    """(bytes the sandbox holds, processes other than ``exclude``, [(bytes, pid)] of those)
    from /proc of this pid namespace: anonymous memory of every process plus what the tmpfs
    mounts hold. The cheap statm sum is an upper bound; only when it passes ``limit`` is it
    redone with proportional figures (``known``: pid -> bytes for processes whose smaps this
    one may not read, e.g. the runner's own report)."""
    tmpfs = _tmpfs_used() + _sysv_shm()
    try:
        names = [d for d in os.listdir("/proc") if d.isdigit()]
    except OSError:
        return tmpfs, 0, []
    memfd = _memfd_recent(names)
    _pte.clear()
    _fdsize.clear()
    cheap: list[tuple[int, int]] = []
    for d in names:
        v = _statm_anon(d)
        if v is not None:
            cheap.append((v + memfd.get(int(d), 0), int(d)))
    tmpfs += memfd.get(-1, 0)   # (queued in sockets no process holds: in flight)
    total = tmpfs + sum(v for v, _ in cheap)
    if limit is not None and total > limit:
        # smaps_rollup walks a process's page tables, seconds for a sparse 256 GiB mapping
        # (attack11: one such pass spaced the samples 5 s apart): largest first, until the sum
        # is proved under the limit or PRECISE_BUDGET is spent (a process not reached keeps
        # its upper bound), and not at all when page tables and tmpfs, which are exact, pass
        # the limit on their own
        known = known or {}
        end = time.monotonic() + (PRECISE_BUDGET if tmpfs + sum(_pte.values()) <= limit
                                  else 0.0)
        precise = []
        for v, pid in sorted(cheap, reverse=True):
            p = known.get(pid)
            if (p is None and total > limit and time.monotonic() < end
                    and _pte.get(str(pid), 0) <= _WALK_PTE):
                p = _pss_held(pid)
                if p is not None:
                    p += memfd.get(pid, 0) + _pte.get(str(pid), 0)
            if p is not None:
                total -= v - p
                v = p
            precise.append((v, pid))
        cheap = precise
    procs = [(v, pid) for v, pid in cheap if pid not in exclude]
    return total, len(procs), procs


def _threads(pid: int) -> int:
    f = stat_fields(pid)
    try:
        return int(f[THREADS]) if f is not None else 1
    except ValueError:
        return 1


def _nproc_cap(cfg: dict[str, Any], max_procs: int) -> int:
    """The task count at which the workload's forks fail: its RLIMIT_NPROC with the runner's
    headroom, or (pids cgroup) the workload group's own max."""
    if (cfg.get("resources") or {}).get("nproc") is not None:
        return max_procs + nproc_headroom(cfg)
    return max_procs


QUIET_INTERVAL = 1.0
"""Seconds between the watchdog's samples while the sandbox is quiet: no workload process
exists, S3 handles no request and holds no in-process job (``busy`` 0), so nothing in the
sandbox can grow (every process but pid 1 and S3 is the workload's; S3's memory grows only
while it runs something, and it marks itself busy, waking pid 1, before it does). A sample
costs ~0.5 ms (every process's statm, the tmpfs, every descriptor every 0.25 s): at
``interval`` (50 ms) an idle sandbox cost pid 1 ~11 ms of CPU a second (measured as an
unprivileged user, the watchdog's case), 200 idle ones more than the machine's 2 CPUs."""


def _drain(fd: int) -> None:
    try:
        os.read(fd, 8)
    except OSError:
        pass


REAP_STEP = 0.05
"""Seconds at most between pid 1's reaps while the sandbox is busy, however long a sample
took (the default sampling interval: no more wake-ups than before while samples are quick)."""


def _reap(runner: int) -> int | None:
    """Reap every exited child of pid 1; the runner's exit status once it is among them
    (0 when pid 1 has no child left), else None."""
    while True:
        try:
            p, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return 0
        except InterruptedError:
            continue
        if p == 0:
            return None
        if p == runner:
            return os.waitstatus_to_exitcode(status) & 0xFF


def reap_until(runner: int) -> int:
    """Reap pid 1's children, blocking, until ``runner`` is among them; its exit status (0
    when pid 1 has no child left)."""
    while True:
        try:
            p, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return 0
        except InterruptedError:
            continue
        if p == runner:
            return os.waitstatus_to_exitcode(status) & 0xFF


def _wait_reaping(fds: list[int], wait: float, runner: int,
                  reap_step: float = REAP_STEP) -> int | None:
    """Wait ``wait`` seconds or until one of ``fds`` is readable, reaping orphans every
    ``reap_step`` meanwhile (every ``wait`` when a wake-up descriptor is among ``fds``: the
    sandbox is quiet). The runner's exit status if it was reaped, else None."""
    import select
    end = time.monotonic() + wait
    step = wait if len(fds) > 1 else min(wait, reap_step)
    while True:
        try:
            ready = select.select(fds, [], [], max(0.0, min(step, end - time.monotonic())))[0]
        except InterruptedError:
            ready = []
        if ready or time.monotonic() >= end:
            return None
        code = _reap(runner)
        if code is not None:
            return code


def s2_wait_with_watchdog(cfg: dict[str, Any], runner: int) -> int:
    """pid 1's reaping loop with the memory watchdog: every ``interval`` seconds, when the
    sandbox holds more than the limit, SIGKILL the largest workload process (the runner
    itself only when nothing else is left to kill). Figures go to the shared page S3 reads
    after each run. While the sandbox is quiet (see QUIET_INTERVAL) it samples every
    QUIET_INTERVAL instead, and S3 wakes it as a request arrives. Returns S3's exit status."""
    wd = cfg["resources"]["watchdog"]
    limit = int(wd["memory"])
    interval = float(wd.get("interval", 0.05))
    max_procs = cfg["resources"].get("max_processes")
    page: WatchdogPage = cfg["_watchdog_page"]
    try:
        pidfd: int | None = os.pidfd_open(runner)
    except OSError:
        pidfd = None
    wake_fd = page.wake_fd if pidfd is not None else None
    me = os.getpid()
    fd_budget = _fd_budget()
    known = {me: pss_anon("self") or 0}
    from ..network.inside import own_netns
    _unix_scope[0] = "all" if own_netns(cfg) else "held"
    while True:
        code = _reap(runner)
        if code is not None:
            return code
        size = page.get("runner")
        if size > 0:
            known[runner] = size
        t0 = time.monotonic()
        total, n, procs = sample((me, runner), limit, known)
        spent = time.monotonic() - t0
        if total > limit and _remove_orphan_segment(max((v for v, _ in procs), default=0)):
            page.set("kills", page.get("kills") + 1)
        elif total > limit and (procs or known.get(runner, 0) > limit):
            # the workload's largest process; the runner itself only when it alone is over
            # (a limit below the runner's own size would otherwise kill every new sandbox)
            victims = sorted(procs, reverse=True) or [(0, runner)]
            page.set("kills", page.get("kills") + 1)  # before the kill: S3 reads it after
            try:
                os.kill(victims[0][1], signal.SIGKILL)
            except OSError:
                page.set("kills", page.get("kills") - 1)
        for hog in _fd_hogs(fd_budget, (me, runner)):
            try:
                os.kill(hog, signal.SIGKILL)
            except OSError:
                pass
        if max_procs is not None and n >= max_procs - 16 and (
                n + _threads(runner) + _threads(me) + 1 >= _nproc_cap(cfg, max_procs)):
            # at the cap: the workload plus the runner's own tasks (S1, S2, S3 and their
            # threads), which RLIMIT_NPROC counts too
            page.set("at_max", page.get("at_max") + 1)
        gen = page.get("gen")
        if gen != page.get("seen"):
            page.set("peak", total)
            page.set("seen", gen)
        elif total > page.get("peak"):
            page.set("peak", total)
        page.set("last", total)
        # a sample of many processes (smaps of hundreds of forks) may take a while: pid 1
        # never spends more than a fifth of a CPU on it
        wait = max(interval, 4 * spent)
        if pidfd is None:
            time.sleep(wait)
            continue
        fds = [pidfd]
        if wake_fd is not None and n == 0 and total <= limit and page.get("busy") == 0:
            # quiet: the wake-ups S3 sent while busy are dropped first, then busy is read
            # again; S3 sets busy before it writes the eventfd, so a request arriving from
            # here on either shows as busy below or wakes the select
            _drain(wake_fd)
            if page.get("busy") == 0:
                fds.append(wake_fd)
                wait = max(wait, QUIET_INTERVAL)
        # orphans are reaped every REAP_STEP meanwhile: a sample of a fork bomb's thousand
        # processes may set the next one seconds away, and its killed processes, unreaped,
        # held the sandbox's process limit: the next run's forks failed (seen at load ~40)
        code = _wait_reaping(fds, wait, runner)
        if code is not None:
            return code


FD_GUARD_INTERVAL = 0.1
"""Seconds between pid 1's looks at the descriptor tables where no memory watchdog runs,
while the sandbox has a workload process or a request in progress."""


PID1_RAISES = True
"""(attack13) Where a memory cgroup holds the sandbox and pid 1 runs its descriptor guard, pid
1 gives every new process oom_score_adj 1000 (``_raise_new``, at its first look after a
program starts, then every 100 ms) and the runner stops raising its own around a spawn.
Before, the runner raised its own to 1000 for the child to inherit (the vfork path runs no
code in the child), and the execing child is no OOM candidate: an OOM of the group in that
window took the biggest process at 1000, the runner (23-30 MiB) against many small
programs (40 of ~6 MiB under 128 MiB allocating while commands start: ``SandboxCrashed``).
Now the runner stays at its own (0) and every raised program is picked before it. Programs
cannot lower theirs (Landlock refuses the write; none below 0 without CAP_SYS_RESOURCE)."""
_raised: set[str] = set()


def _raise_new(names: list[str], skip: tuple[int, ...]) -> None:
    """pid 1 (``PID1_RAISES``): oom_score_adj 1000 for every process not seen before (a pid
    gone from ``names`` is forgotten: a later process with it is new)."""
    for d in names:
        if d not in _raised and int(d) not in skip:
            _raise_one(d)
    _raised.intersection_update(names)


def _group_full(usage_fd: int, limit: int) -> bool:
    try:
        return int(os.pread(usage_fd, 32, 0)) > limit - SpawnRoom.MARGIN
    except (OSError, ValueError):
        return False


def _raise_one(d: str) -> None:
    try:
        fd = os.open(f"/proc/{d}/oom_score_adj", os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.write(fd, b"1000")
        finally:
            os.close(fd)
    except OSError:
        pass   # (gone already)
    _raised.add(d)


def _wait_raising(fds: list[int], wait: float, runner: int, page: WatchdogPage,
                  me: int, seen: list[int], reap_step: float = REAP_STEP) -> int | None:
    """``_wait_reaping`` that also wakes on S3's kick (a program started) and gives the new
    process oom_score_adj 1000 at once (several since the last kick: every new one)."""
    import select
    kick = page.kick_fd
    assert kick is not None
    end = time.monotonic() + wait
    quiet = len(fds) > 1
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return None
        try:
            ready = select.select(fds + [kick], [], [], left if quiet else min(left, reap_step))[0]
        except InterruptedError:
            ready = []
        if kick in ready:
            _drain(kick)
            n = page.get("spawns")
            if n == seen[0] + 1:
                _raise_one(str(page.get("child")))
            elif n != seen[0]:
                try:
                    _raise_new([d for d in os.listdir("/proc") if d.isdigit()], (me, runner))
                except OSError:
                    pass
            seen[0] = n
            if len(ready) == 1:
                continue
        if ready:
            return None
        code = _reap(runner)
        if code is not None:
            return code


def _fd_tables(me: int, runner: int, raise_new: bool = False) -> int:
    """Fill ``_fdsize`` (status FDSize of every process of this pid namespace); returns how
    many processes there are besides ``me`` and ``runner``. ``raise_new``: give processes
    not seen before oom_score_adj 1000 (``PID1_RAISES``)."""
    _fdsize.clear()
    try:
        names = [d for d in os.listdir("/proc") if d.isdigit()]
    except OSError:
        return 0
    if raise_new:
        _raise_new(names, (me, runner))
    n = 0
    for d in names:
        if int(d) in (me, runner):
            continue
        n += 1
        try:
            with open(f"/proc/{d}/status", "rb") as f:
                data = f.read()
            i = data.find(b"\nFDSize:")
            if i >= 0:
                _fdsize[d] = int(data[i + 8:data.index(b"\n", i + 8)])
        except (OSError, ValueError):
            pass
    return n


def s2_wait_with_fd_guard(cfg: dict[str, Any], runner: int) -> int:
    """pid 1's reaping loop where no memory watchdog runs (a memory cgroup bounds memory, as
    root): the sandbox's share of the machine's open-file table (fs.file-max), which no
    cgroup bounds, is kept within ``_fd_budget`` by killing the largest descriptor tables
    past it (attack12: a root sandbox's 32 processes held 616k of 2.47M; past the table every
    host process without CAP_SYS_ADMIN gets ENFILE). Looks every FD_GUARD_INTERVAL (at least
    4x what a look took) while a workload process exists or S3 is busy; otherwise sleeps
    until S3 turns busy (the page's eventfd) or QUIET_INTERVAL passes. Orphans are reaped
    every REAP_STEP meanwhile. Returns S3's exit status."""
    page: WatchdogPage | None = cfg.get("_fd_guard_page")
    try:
        pidfd: int | None = os.pidfd_open(runner)
    except OSError:
        pidfd = None
    if pidfd is None or page is None:
        return reap_until(runner)   # (as before: reap until the runner is gone)
    me = os.getpid()
    budget = _fd_budget()
    wake_fd = page.wake_fd
    floor = (PID1_RAISES and bool((cfg.get("resources") or {}).get("unowned"))
             and page.kick_fd is not None)
    seen = [page.get("spawns")]
    if floor:
        page.set("raises", 1)   # (the runner stops raising its own around a spawn)
    room = cfg.get("_spawn_room_fds")
    lim = getattr(cfg.get("limits"), "max_memory_bytes", None)
    full_since: float | None = None
    woken = False
    while True:
        code = _reap(runner)
        if code is not None:
            return code
        if woken:
            # (sessions14) woken from quiet by a program's start: its first look waits one
            # FD_GUARD_INTERVAL. The look before the quiet wait found no process, so a look
            # now would find only a program just started; the first look at a hog is still
            # within one interval of its start, as before, when a second look an interval
            # after this one was the first that could see one (half of the guard's CPU per
            # program 100+ ms apart, an agent's pace)
            woken = False
            code = (_wait_raising([pidfd], FD_GUARD_INTERVAL, runner, page, me, seen,
                                  FD_GUARD_INTERVAL) if floor
                    else _wait_reaping([pidfd], FD_GUARD_INTERVAL, runner, FD_GUARD_INTERVAL))
            if code is not None:
                return code
            continue
        t0 = time.monotonic()
        if room and lim and _group_full(room[0], int(lim)):
            # (attack13) the group is at its limit, as for 50-150 ms after an OOM kill
            # (the victim's page tables go back after an RCU grace period): the look below
            # allocates kernel memory (its /proc reads), and an OOM now could only take the
            # runner. Wait for room, at most a second, then look anyway
            full_since = full_since or t0
            if t0 - full_since < 1.0:
                code = (_wait_raising([pidfd], 0.01, runner, page, me, seen) if floor
                        else _wait_reaping([pidfd], 0.01, runner))
                if code is not None:
                    return code
                continue
        full_since = None
        n = _fd_tables(me, runner, floor)
        for hog in _fd_hogs(budget, (me, runner)):
            try:
                os.kill(hog, signal.SIGKILL)
            except OSError:
                pass
        wait = max(FD_GUARD_INTERVAL, 4 * (time.monotonic() - t0))
        fds = [pidfd]
        if wake_fd is not None and n == 0 and page.get("busy") == 0:
            _drain(wake_fd)   # (see s2_wait_with_watchdog: busy is read again after)
            if page.get("busy") == 0:
                fds.append(wake_fd)
                wait = QUIET_INTERVAL
        end = time.monotonic() + wait
        # (sessions14) a wait of one interval (the looks are quick: few processes) reaps once,
        # at its end, not every REAP_STEP: one wake-up less per interval; a longer one (a
        # look at many processes took a while: a fork bomb's) reaps every REAP_STEP
        step = FD_GUARD_INTERVAL if wait <= FD_GUARD_INTERVAL else REAP_STEP
        code = (_wait_raising(fds, wait, runner, page, me, seen, step) if floor
                else _wait_reaping(fds, wait, runner, step))
        if code is not None:
            return code
        # (the quiet wait ended early: the eventfd, i.e. a program started)
        woken = len(fds) > 1 and time.monotonic() < end


# -- S3: the runner ----------------------------------------------------------------------------
def s3_prepare(cfg: dict[str, Any]) -> None:
    """S3, before it drops privileges and applies Landlock: its rlimits (inherited by every
    native child), the oom_score_adj file it raises around each spawn, and what the native
    launcher must do for the workload (``cfg["workload"]``, read by the executor factory).
    What was applied goes to ``cfg["limits_observed"]`` for the report."""
    res = cfg.get("resources") or {}
    seen = cfg.setdefault("limits_observed", {})
    applied: dict[str, int] = {}
    for name, value in (res.get("rlimits") or {}).items():
        rid = getattr(resource, "RLIMIT_" + name, None)
        if rid is None:
            continue
        try:
            hard = resource.getrlimit(rid)[1]
            v = int(value) if hard == resource.RLIM_INFINITY else min(int(value), hard)
            resource.setrlimit(rid, (v, v))
            applied[name] = v
        except (OSError, ValueError):
            pass
    nproc = res.get("nproc")
    work_nproc = None
    if nproc is not None:
        mine = (int(nproc) + nproc_headroom(cfg) + NPROC_RUNNER_EXTRA
                + int(res.get("runner_slack") or 0))
        try:
            resource.setrlimit(resource.RLIMIT_NPROC, (mine, mine))
            work_nproc = (int(nproc) + nproc_headroom(cfg), mine)
            applied["NPROC"] = work_nproc[0]
        except (OSError, ValueError):
            pass
    seen["rlimits"] = applied
    oom_fd = None
    if res.get("oom_score_adj") is not None:
        try:
            oom_fd = os.open("/proc/self/oom_score_adj", os.O_RDWR | os.O_CLOEXEC)
        except OSError:
            oom_fd = None
    sized = True
    size = cfg.get("layer_size")
    if size and cfg.get("level") == "namespace":
        for p in _TMPFS:
            try:
                st = os.statvfs(p)
                sized = sized and st.f_blocks * st.f_frsize <= int(size) + (1 << 20)
            except OSError:
                sized = False
        seen["tmpfs_sized"] = sized and cfg.get("session_layer") == "tmpfs"
    seen["watchdog"] = cfg.get("_watchdog_page") is not None
    room = None
    lim = getattr(cfg.get("limits"), "max_memory_bytes", None)
    if cfg.get("_spawn_room_fds") and lim:
        room = SpawnRoom(*cfg["_spawn_room_fds"], limit=int(lim))
    seen["spawn_room"] = room is not None
    # (attack13) pid 1 raises every new process itself once it says so on the page
    floor = cfg.get("_fd_guard_page")
    if floor is None or floor.kick_fd is None:
        floor = None
    seen["oom_floor"] = floor is not None
    cfg["workload"] = {"room": room, "floor": floor,
                       "oom_fd": oom_fd, "oom_score_adj": res.get("oom_score_adj"),
                       "ignore_sigxfsz": bool(res.get("ignore_sigxfsz")), "nproc": work_nproc,
                       "cgroup_fds": tuple(cfg.get("_work_cgroup_fds", ())),
                       "spawner_fds": tuple(cfg.get("_work_tasks_fds", ()))}


class SpawnRoom:
    """(attack13) S3, before each spawn, where a memory cgroup holds the sandbox: is there
    room for the new program's start?

    The runner raises its own oom_score_adj to the workload's around each spawn (so the child
    is born with it, on the vfork path), and while the child execs the child itself is no
    candidate (the kernel skips a vfork child). An OOM of the group in that window picks the
    biggest of the rest, and the runner (25-30 MiB) is bigger than each of many small
    workload processes: before, 40 background programs of 3 MiB each under 128 MiB and one
    more command ended in ``SandboxCrashed`` (the runner OOM-killed at 1000), and the pages
    of a killed program not yet freed (page tables go back after an RCU grace period) did the
    same to the next command (session 12's CI). So where what the group holds, less its page
    cache (reclaimed before any OOM kill), leaves less than ``MARGIN``, the spawn waits up
    to ``WAIT`` seconds for it to go down, then fails with ENOMEM ("Cannot allocate memory",
    status 126, ``limit_exceeded == "memory"``) instead of starting. Cost: one read of the
    usage file a spawn (~1-2 us); memory.stat only when the group is that full."""

    MARGIN = 4 << 20
    """What a program's exec is given before the runner's oom_score_adj goes back down (its
    argv and environment, first stack and page-table pages; measured under 1 MiB)."""
    WAIT = 0.25
    """(a run's deadline is checked between commands: a spawn waits at most this past it)"""

    def __init__(self, usage_fd: int, stat_fd: int, v1: bool, limit: int) -> None:
        self.usage_fd, self.stat_fd, self.limit = usage_fd, stat_fd, int(limit)
        self.keys = ((b"total_inactive_file", b"total_active_file") if v1
                     else (b"inactive_file", b"active_file"))
        self.refused = 0
        """Spawns refused (S3Usage reports ``memory`` for a run that moved it)."""

    def _held(self) -> int:
        """What the group holds that no reclaim gives back (its file pages can be)."""
        held = int(os.pread(self.usage_fd, 32, 0))
        for line in os.pread(self.stat_fd, 8192, 0).splitlines():
            k, _, v = line.partition(b" ")
            if k in self.keys:
                held -= int(v)
        return held

    def settle(self) -> None:
        """After a run in which the group's OOM killer killed: what the victim held goes
        back to the group a little after its death (its page tables after an RCU grace
        period: 58 ms after such a kill the group still held them, and the runner's next
        allocation made the OOM killer take the runner, which is then the only candidate).
        The result waits (at most ``WAIT``) for room before it is sent."""
        top = self.limit - self.MARGIN
        end = time.monotonic() + self.WAIT
        try:
            while self._held() > top and time.monotonic() < end:
                time.sleep(0.005)
        except (OSError, ValueError):
            pass

    def __call__(self) -> None:
        top = self.limit - self.MARGIN
        try:
            if int(os.pread(self.usage_fd, 32, 0)) <= top:
                return
            end = time.monotonic() + self.WAIT
            while self._held() > top:
                if time.monotonic() >= end:
                    self.refused += 1
                    raise OSError(12, os.strerror(12))   # ENOMEM
                time.sleep(0.01)
        except (OSError, ValueError) as e:
            if getattr(e, "errno", None) == 12:
                raise
            # (a group file that cannot be read: the spawn goes on as before)


class S3Usage:
    """Per-run figures measured in S3: CPU seconds of the interpreter and every child it
    reaped, the watchdog's peak and kills, refused spawns, full tmpfs mounts."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        self.page: WatchdogPage | None = cfg.get("_watchdog_page")
        # pid 1's descriptor guard (no watchdog) sleeps while quiet too: only busy/wake used
        self._wake_page: WatchdogPage | None = self.page or cfg.get("_fd_guard_page")
        self.cpu0 = 0.0
        self.cpu1: float | None = None
        self._children_cpu: float | None = None
        self.file_limit = ((cfg.get("resources") or {}).get("rlimits") or {}).get("FSIZE")
        self.native = cfg.get("_native")
        self.refused0 = self.room0 = self.kills0 = self.at_max0 = self.events0 = self.spawned0 = 0
        self.events_fds: list[int] = list(cfg.get("_pids_events_fds") or ())
        res = cfg.get("resources") or {}
        self.nproc = res.get("nproc")  # RLIMIT_NPROC is the process limit (unprivileged)
        self.nproc_headroom = nproc_headroom(cfg)
        # the memory cgroup's peak and OOM-kill counter (S1 opened them; see s1_join)
        self.mem: tuple[int, int, bytes] | None = cfg.get("_memory_fds")
        self.oom0 = 0

        self.gen = 0
        self._size_at = -10.0
        # pid 1's watchdog sleeps while the sandbox is quiet: ``request``/``settle`` say when
        # it is not (see QUIET_INTERVAL)
        self.wake_fd: int | None = (self._wake_page.wake_fd if self._wake_page is not None
                                    else None)
        self._busy = False
        # pid 1 runs the descriptor guard alone (no memory watchdog): woken by a program's
        # start, not by each request (see request)
        w = getattr(self.native, "_workload", None)
        self._guard_only = self.page is None and self.wake_fd is not None and w is not None
        self._guard_woken = False
        if self._guard_only:
            w.on_spawn = self._wake_guard
        self.layer_size = cfg.get("layer_size") if cfg.get("level") == "namespace" else None
        self._own_size()
        # Reads skipped while no workload process exists (``quiet``): with none in the
        # workload's group and none started, the OOM counter cannot move without killing the
        # runner itself (there is no result then), and a refused fork can only be one of the
        # runner's own threads, which the sandbox group's pids.events counts. The counters
        # read last are then still current at the next run's start. Nothing but this
        # runner's launcher starts a workload process, and every start counts in
        # ``native.spawned``.
        self.current_fd: int | None = cfg.get("_work_pids_current_fd")
        self._events_last: list[int] = []
        self._oom_last = 0
        self.quiet = False
        self._empty_at_begin = False
        # thread starts of this process so far (None: not counted here), see _counters
        from ..executors.native import helper_processes, threads_started
        self._threads = threads_started
        # processes of in-process commands (jq's worker): no run is "nothing ran" while one
        # lives or starts (native.helper_processes: [started, ended])
        self._helpers = helper_processes
        self._helpers_at_end = self._helpers0 = tuple(helper_processes)
        self._threads0: int | None = None
        self._spawned_at_end = getattr(self.native, "spawned", 0)
        # (only where every child is born in the workload's group: a child moved there after
        # it started could have forked first, leaving a process outside that group)
        self.base = (self._workload_tasks() if getattr(getattr(self.native, "_workload", None),
                                                       "in_group", False) else None)
        if self.base is not None:
            self._events_last = self._events_each()
            self._oom_last = self._oom_kills() if self.mem is not None else 0
            self.quiet = helper_processes[0] == helper_processes[1]   # nothing has run yet

    def request(self) -> None:
        """A request arrived: pid 1's watchdog samples at its full rate from now until
        ``settle`` (busy is set before the eventfd is written: see s2_wait_with_watchdog).
        Where pid 1 runs only the descriptor guard, busy is set but pid 1 is woken when a
        program starts (``_wake_guard``), not for every request: what it looks at (the
        descriptor tables of every process but pid 1 and this one) exists only then, and a
        wake-up per request cost a builtin's run ~4 us of CPU across the two processes."""
        if self.wake_fd is not None and not self._busy:
            if self._guard_only:
                # (echo14) busy is set at the first program's start, in _wake_guard: before
                # it there is nothing for the guard to look at (two page writes a builtin's
                # run saved); from it until ``settle`` the guard samples, as before
                return
            self._busy = True
            assert self._wake_page is not None
            self._wake_page.set("busy", 1)
            try:
                os.eventfd_write(self.wake_fd, 1)
            except OSError:
                pass

    def _wake_guard(self) -> None:
        """A program started (native.NativeLauncher, any thread): pid 1's descriptor guard
        looks from now on (busy is already set: a guard that drained the eventfd before this
        write reads busy after it, and samples while it is set)."""
        if not self._guard_woken:
            self._guard_woken = True
            if not self._busy:
                # (set before the eventfd write, as request() does elsewhere: a guard that
                # drained the eventfd before the write reads busy after it)
                self._busy = True
                assert self._wake_page is not None
                self._wake_page.set("busy", 1)
            try:
                os.eventfd_write(self.wake_fd, 1)   # type: ignore[arg-type]
            except OSError:
                pass

    def settle(self, executor: Any) -> None:
        """Waiting for the next request: quiet again, unless an in-process job lives on
        (it may grow this process's memory between runs)."""
        if self._busy and not getattr(executor, "_live_jobs", None):
            self._busy = False
            self._guard_woken = False
            assert self._wake_page is not None
            self._wake_page.set("busy", 0)

    def _workload_tasks(self) -> int | None:
        """Tasks in the workload's pids group (the spawner thread included), or None."""
        if self.current_fd is None:
            return None
        try:
            return int(os.pread(self.current_fd, 32, 0))
        except (OSError, ValueError):
            return None

    def _workload_empty(self) -> bool:
        n = self._workload_tasks()
        return n is not None and self.base is not None and n <= self.base

    def _events_each(self) -> list[int]:
        return [self._refused_in(fd) for fd in self.events_fds]

    def _own_size(self) -> None:
        """Tell the watchdog this process's proportional size (it may not read it itself);
        smaps_rollup costs ~0.2 ms, so at most once a second."""
        now = time.monotonic()
        if self.page is not None and now - self._size_at > 1.0:
            self.page.set("runner", pss_anon("self") or 0)
            self._size_at = now

    def _cpu(self, children_known: bool = False) -> float:
        """CPU seconds of this process and its reaped children. ``children_known``: no child
        can have been reaped since the last reading (the workload is empty and nothing was
        started), so that figure is reused."""
        if not children_known or self._children_cpu is None:
            c = resource.getrusage(resource.RUSAGE_CHILDREN)
            self._children_cpu = c.ru_utime + c.ru_stime
        # this process's own: its CPU clock (every thread, ns; a third of getrusage's cost)
        return _process_time() + self._children_cpu

    def _pids_refused(self) -> int:
        """Forks the pids cgroups refused so far (their ``pids.events`` ``max`` counters)."""
        return sum(self._refused_in(fd) for fd in self.events_fds)

    @staticmethod
    def _refused_in(fd: int) -> int:
        try:
            for line in os.pread(fd, 256, 0).split(b"\n"):   # one call, not lseek + read
                if line.startswith(b"max "):
                    return int(line[4:])
        except (OSError, ValueError):
            pass
        return 0

    def _oom_kills(self) -> int:
        assert self.mem is not None
        try:
            for line in os.pread(self.mem[1], 4096, 0).split(b"\n"):
                if line.startswith(b"oom_kill "):
                    return int(line[9:])
        except (OSError, ValueError):
            pass
        return 0

    def _started(self) -> list[tuple[int, int]]:
        w = getattr(self.native, "_workload", None)
        return w.started if w is not None else []

    def _at_nproc(self) -> bool:
        """RLIMIT_NPROC has no counter of refusals: after a run that started native
        processes, count the sandbox's processes (the watchdog's samples may lag far behind a
        thousand spinning forks) and compare with the limit; short of it, count their tasks
        too, as RLIMIT_NPROC does (the runner's threads included), against the workload's
        RLIMIT_NPROC: a bomb held at the cap by a runner with many threads has fewer
        processes. A task directory's link count is its threads + 2: one stat a process.

        A count short of the cap is not the end of it: a fork counts against RLIMIT_NPROC
        from the start of copy_process, before its task is in /proc, and a refused one holds
        its count until it unwinds, so while fifty processes spin on fork the visible total
        sits below the cap by as many as are inside fork (43-50 of 55 under load 30-50; a
        bomb unreported stays alive into the next runs). When more than half the cap is
        there and some of it is running, the kernel is asked instead: this thread starts
        threads under the workload's own RLIMIT_NPROC (its soft limit lowered for the
        moment): a refusal is the workload's refusal. Background jobs that wait are
        answered at once."""
        if not self._started():
            return False
        cap = int(self.nproc) + self.nproc_headroom - 2
        me = str(os.getpid())
        try:
            pids = [d for d in os.listdir("/proc") if d.isdigit()]
        except OSError:
            return False
        if len(pids) >= int(self.nproc) - 2:
            return True
        tasks = 0
        running = False
        for d in pids:
            try:
                tasks += os.stat(f"/proc/{d}/task").st_nlink - 2
                if not running and d != me and d != "1":
                    with open(f"/proc/{d}/stat", "rb") as f:
                        running = f.read(512).rpartition(b")")[2][1:2] == b"R"
            except OSError:
                pass   # (gone meanwhile)
        if tasks >= cap:
            return True
        if tasks * 2 < cap or not running:
            return False
        return self._thread_refused(int(self.nproc) + self.nproc_headroom)

    @staticmethod
    def _thread_refused(limit: int, tries: int = 20) -> bool:
        """Whether starting a thread is refused under RLIMIT_NPROC ``limit`` (the workload's),
        tried ``tries`` times 1 ms apart (the count moves as forks come and go)."""
        import _thread
        old = resource.getrlimit(resource.RLIMIT_NPROC)
        if old[0] != resource.RLIM_INFINITY and old[0] <= limit:
            return False
        try:
            resource.setrlimit(resource.RLIMIT_NPROC, (limit, old[1]))
        except (OSError, ValueError):
            return False
        try:
            for _ in range(tries):
                try:
                    _thread.start_new_thread(_nothing, ())
                except RuntimeError:
                    return True
                time.sleep(0.001)
            return False
        finally:
            resource.setrlimit(resource.RLIMIT_NPROC, old)

    def kill_leftovers(self, wait: float = 5.0) -> int:
        """SIGKILL the process groups of every native process this run started: what a run
        that hit the process limit left behind, orphans re-parented to pid 1 included (they
        keep their group). Then wait (at most ``wait`` seconds) until they are reaped: a
        killed fork bomb still holds its slots in the process table (RLIMIT_NPROC, the pids
        cgroup) until pid 1 has reaped every member, and the next run must not start before
        that. The only ones not waited for are this process's own children, which stay
        zombies until their job is polled. Returns how many were still there at the end."""
        started = list(self._started())
        pids = {p for p, _ in started}
        groups = {g for _, g in started}
        me = os.getpid()
        end = time.monotonic() + wait
        while True:
            for pid, pgid in started:
                for fn, target in ((os.killpg, pgid), (os.kill, pid)):
                    try:
                        fn(target, signal.SIGKILL)
                    except OSError:
                        pass
            left = _members(pids, groups, me)
            if not left or time.monotonic() > end:
                return len(left)
            time.sleep(0.01)

    def begin(self) -> None:
        # (the per-call path: each attribute is looked up once; see _room_refused, _started)
        native = self.native
        w = getattr(native, "_workload", None)
        self.refused0 = getattr(native, "refused", 0)
        self.room0 = getattr(getattr(w, "room", None), "refused", 0)
        self.spawned0 = spawned = getattr(native, "spawned", 0)
        self._threads0 = self._threads()
        if w is not None:
            w.started.clear()
        helpers = self._helpers0 = tuple(self._helpers)
        quiet = self.quiet
        if quiet and (spawned != self._spawned_at_end or helpers != self._helpers_at_end):
            quiet = self.quiet = False   # (no request between runs starts a program; if one did)
        if quiet:
            self.events0, self.oom0 = sum(self._events_last), self._oom_last
            self._empty_at_begin = True
        else:
            self._events_last = self._events_each()
            self.events0 = sum(self._events_last)
            if self.mem is not None:
                self.oom0 = self._oom_last = self._oom_kills()
            self._empty_at_begin = (self.base is not None and helpers[0] == helpers[1]
                                    and self._workload_empty())
        self.cpu0 = self._cpu(quiet)
        if self.mem is not None:
            try:
                # v1: any write resets the peak; v2 (Linux >= 6.12): resets it for this fd
                os.pwrite(self.mem[0], self.mem[2], 0)
            except OSError:
                pass
        page = self.page
        if page is not None:
            self._own_size()
            self.kills0, self.at_max0 = page.get("kills"), page.get("at_max")
            self.gen = page.get("gen") + 1
            page.set("gen", self.gen)

    def ran(self) -> None:
        """The script is done (what follows is the runner's own bookkeeping)."""
        self.cpu1 = self._cpu(self._nothing_ran())

    def _nothing_ran(self) -> bool:
        """No workload process existed during this run (none at its start, none started;
        no helper process of an in-process command either)."""
        return (self._empty_at_begin and getattr(self.native, "spawned", 0) == self.spawned0
                and self._helpers[0] == self._helpers0[0])

    def end(self, r: Any, replace: Callable[..., Any]) -> Any:
        return replace(r, **self.changes(r))

    def _counters(self) -> tuple[int, int]:
        """(OOM kills, refused forks) now; decides whether the next run may skip its reads."""
        self._spawned_at_end = getattr(self.native, "spawned", 0)
        self._helpers_at_end = tuple(self._helpers)
        if self._nothing_ran():
            # no workload process existed during this run (see __init__); the sandbox
            # group's counter can only have moved by a refused start of one of this process's
            # threads (it forks only through the launcher), so it is read only when some
            # thread was started (a read of pids.events a builtin run saved, ~2.5 us)
            ev = self._events_last
            if ev and (self._threads0 is None or self._threads() != self._threads0):
                ev = [self._refused_in(self.events_fds[0])] + ev[1:]
            self._events_last = ev
            self.quiet = True
            return self._oom_last, sum(ev)
        self._events_last = self._events_each()
        if self.mem is not None:
            self._oom_last = self._oom_kills()
        self.quiet = (self.base is not None and self._helpers_at_end[0] == self._helpers_at_end[1]
                      and self._workload_empty())
        self._children_cpu = None   # children may be reaped after ``ran``: read it again
        return self._oom_last, sum(self._events_last)

    def _room_refused(self) -> int:
        room = getattr(getattr(self.native, "_workload", None), "room", None)
        return getattr(room, "refused", 0)

    def changes(self, r: Any) -> dict[str, Any]:
        """The run's measured fields for Result ``r`` (``cpu_time``, ``peak_memory`` and, when
        a limit was met, ``limit_exceeded`` and a violation)."""
        cpu1 = self.cpu1 if self.cpu1 is not None else self._cpu(self._nothing_ran())
        self.cpu1 = None
        changes: dict[str, Any] = {"cpu_time": round(max(0.0, cpu1 - self.cpu0), 6)}
        exceeded = was = getattr(r, "limit_exceeded", None)
        native = self.native
        page = self.page
        if page is not None:
            # a run shorter than one sample has only the last total to show
            changes["peak_memory"] = max(page.get("peak") if page.get("seen") == self.gen
                                         else 0, page.get("last"))
            if page.get("kills") > self.kills0:
                exceeded = "memory"
            elif page.get("at_max") > self.at_max0 and exceeded in (None, "timeout"):
                exceeded = "processes"
        oom = False
        kills, refused = self._counters()
        if self.mem is not None:
            try:
                changes["peak_memory"] = int(os.pread(self.mem[0], 64, 0))
            except (OSError, ValueError):
                pass
            if kills > self.oom0:
                exceeded, oom = "memory", True
                room = getattr(getattr(self.native, "_workload", None), "room", None)
                if room is not None:
                    room.settle()
        roomless = False
        if exceeded is None or exceeded == "timeout":
            roomless = getattr(getattr(getattr(native, "_workload", None), "room", None),
                               "refused", 0) > self.room0   # (_room_refused, inline)
            if roomless:
                exceeded = "memory"
            elif (getattr(native, "refused", 0) > self.refused0
                    or (self.events_fds and refused > self.events0)):
                exceeded = "processes"
            elif self.nproc is not None and self._at_nproc():
                exceeded = "processes"
        if exceeded is None and self.file_limit and (r.files_created or r.files_modified):
            # a file that reached RLIMIT_FSIZE: some write to it failed with EFBIG
            for path in (tuple(r.files_created) + tuple(r.files_modified))[:256]:
                try:
                    if os.stat(path).st_size >= self.file_limit:
                        exceeded = "file_size"
                        break
                except OSError:
                    pass
        if exceeded is None and self.layer_size and (
                r.exit_code != 0 or r.files_created or r.files_modified
                or getattr(native, "spawned", 0) != self.spawned0):
            # a full tmpfs after a run that wrote (or failed, or ran programs): some write met
            # ENOSPC. A run that did none of these wrote nothing (two statvfs per run saved)
            for p in _TMPFS:
                try:
                    st = os.statvfs(p)
                    if st.f_bavail * st.f_frsize < _FULL or st.f_favail < 16:
                        exceeded = "disk"
                        break
                except OSError:
                    pass
        if exceeded != was:
            changes["limit_exceeded"] = exceeded
            if exceeded in ("memory", "processes") and not (
                    oom and any(v.kind == "limit" for v in r.violations)):
                from ..errors import PolicyViolation
                detail = ("processes: a fork was refused at the process limit"
                          if exceeded == "processes" else
                          "memory: the sandbox's memory was full: a program was not started"
                          if roomless else
                          "memory: out of memory in the sandbox, the largest workload process "
                          "was killed" if oom else
                          "memory: the sandbox went over its memory limit; the watchdog "
                          "killed the largest process")
                changes["violations"] = tuple(r.violations) + (PolicyViolation("limit", detail),)
        return changes
