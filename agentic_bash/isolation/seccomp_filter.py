"""The default seccomp filter (pyseccomp over libseccomp): refuse what a sandbox never needs."""

# Two flavours of the same rules: ``notify=False`` refuses with errno in the kernel;
# ``notify=True`` sends each refused call to a user-notification listener, which a
# supervisor *outside* the filtered process (the runner's parent) answers with the same errno
# and records as a PolicyViolation for Result.violations (``Supervisor`` below).

from __future__ import annotations

import ctypes
import errno
import os
import socket
import struct
import threading
from typing import Callable, Iterable

__all__ = ["DEFAULT_DENY", "PTRACE_CALLS", "Supervisor", "apply_seccomp", "compile_bpf",
           "deny_list", "load_bpf", "syscall_names"]

# Refused with EPERM once the sandbox is set up.
DEFAULT_DENY: tuple[str, ...] = (
    "ptrace", "process_vm_readv", "process_vm_writev",
    "mount", "umount2", "pivot_root", "chroot",
    "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
    "unshare", "setns",
    "keyctl", "add_key", "request_key",
    "bpf", "perf_event_open",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "userfaultfd", "open_by_handle_at", "name_to_handle_at",
    "reboot", "swapon", "swapoff", "syslog", "acct", "quotactl", "lookup_dcookie",
    "iopl", "ioperm", "settimeofday", "clock_settime", "adjtimex", "clock_adjtime",
    "pidfd_getfd",
)

PTRACE_CALLS: tuple[str, ...] = ("ptrace", "process_vm_readv", "process_vm_writev")
"""Lifted by ``Sandbox(allow_ptrace=True)`` (strace, gdb); denied by default."""


def deny_list(*, allow_ptrace: bool = False) -> tuple[str, ...]:
    """The refused syscalls for a sandbox: DEFAULT_DENY, less PTRACE_CALLS when asked."""
    if not allow_ptrace:
        return DEFAULT_DENY
    return tuple(n for n in DEFAULT_DENY if n not in PTRACE_CALLS)


_NS_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000,
             0x40000000, 0x00000080)  # NEWNS NEWCGROUP NEWUTS NEWIPC NEWUSER NEWPID NEWNET NEWTIME
_AF_PACKET, _AF_VSOCK = 17, 40
_TIOCSTI, _TIOCLINUX = 0x5412, 0x541C
_NR_SECCOMP = {"x86_64": 317, "aarch64": 277}.get(os.uname().machine)
_FLAG_TSYNC = 1
_FLAG_NEW_LISTENER = 1 << 3

_CACHE: dict[tuple, bytes] = {}
_NAMES: dict[int, str] = {}


RUNNER_PID = 2
"""The runner's pid in its own pid namespace (pid 1 forks it first): the default of
``protect``, so the filter the zygote compiles ahead is the one a namespace runner loads."""

# Calls that signal (or set limits of) a process named by its pid: refused when that pid is
# the runner's, its process group's, or -1 (every process the caller may signal), so no
# program the sandbox runs can kill, stop or starve the process that serves the session.
# (arg index of the pid; the value is a pid_t in a 64-bit register: compare the low half.)
_PID_CALLS: tuple[tuple[str, int, bool, int | None], ...] = (
    # name, arg, whether -pid / -1 also name it, the arg that must be non-zero for the call
    # to do anything (a signal number: signal 0 only asks whether the process exists;
    # prlimit64's new limits: NULL only reads them)
    ("kill", 0, True, 1), ("rt_sigqueueinfo", 0, False, 1), ("tgkill", 0, False, 2),
    ("rt_tgsigqueueinfo", 0, False, 2), ("pidfd_open", 0, False, None),
    ("prlimit64", 0, False, 2), ("sched_setaffinity", 0, False, None),
    ("sched_setscheduler", 0, False, None), ("sched_setparam", 0, False, None),
    ("sched_setattr", 0, False, None),
)
_LOW = 0xFFFFFFFF

FORWARDED: tuple[int, ...] = (1, 2, 3, 10, 12, 14, 15)
"""HUP INT QUIT USR1 USR2 ALRM TERM: sent by a program to the runner (its parent, the shell)
or to pid 1 (``$$``), the supervisor passes them to the runner's shell through a pipe instead
(its trap runs, or the run ends as bash would die); any other signal is refused."""


def apply_seccomp(deny: Iterable[str] = DEFAULT_DENY, *, notify: bool = False,
                  protect: int = RUNNER_PID, memfd: bool = False) -> int | None:
    """Load the filter into this process (all threads unless ``notify``; the listener flag
    excludes TSYNC, so call it while single-threaded). Requires no_new_privs first. Returns
    the listener fd with ``notify``. ``protect`` is the pid no filtered process may signal
    (the caller's own: the runner). The BPF is compiled once per process (the zygote warms
    the cache), so a sandbox only pays for one seccomp(2) call. ``memfd`` (with ``notify``):
    memfd_create goes to the supervisor (see ``Supervisor``), memfd_secret is ENOSYS."""
    return load_bpf(compile_bpf(deny, notify=notify, protect=protect, memfd=memfd),
                    listener=notify)


def compile_bpf(deny: Iterable[str] = DEFAULT_DENY, *, notify: bool = False,
                protect: int = RUNNER_PID, memfd: bool = False) -> bytes:
    """The filter as raw BPF (struct sock_filter[]), compiled by libseccomp and cached."""
    key = (tuple(deny), notify, protect, memfd and notify)
    bpf = _CACHE.get(key)
    if bpf is None:
        bpf = _CACHE[key] = _compile(key[0], notify, protect, key[3])
    return bpf


def syscall_names(deny: Iterable[str] = DEFAULT_DENY) -> dict[int, str]:
    """Syscall number -> name for the filtered calls on this architecture (for reports)."""
    if not _NAMES:
        import pyseccomp as sc
        arch = sc.system_arch()
        for name in tuple(deny) + ("memfd_create", "sysinfo", "clone", "socket", "ioctl", "chmod", "fchmod", "fchmodat",
                                   "fchmodat2", "creat", "mknod", "mknodat", "open", "openat",
                                   *sorted(_SIGNAL_NAMES)):
            try:
                _NAMES[sc.resolve_syscall(arch, name)] = name
            except Exception:  # noqa: BLE001
                pass
    return _NAMES


def load_bpf(bpf: bytes, *, listener: bool = False) -> int | None:
    if _NR_SECCOMP is None:
        raise OSError(errno.ENOSYS, "seccomp: unsupported architecture")

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    buf = ctypes.create_string_buffer(bpf, len(bpf))
    prog = SockFprog(len(bpf) // 8, ctypes.addressof(buf))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    flags = _FLAG_NEW_LISTENER if listener else _FLAG_TSYNC
    r = libc.syscall(ctypes.c_long(_NR_SECCOMP), ctypes.c_uint(1), ctypes.c_uint(flags),
                     ctypes.byref(prog))  # SECCOMP_SET_MODE_FILTER
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, f"seccomp(SET_MODE_FILTER): {os.strerror(e)}")
    return int(r) if listener else None


def _compile(deny: tuple[str, ...], notify: bool, protect: int, memfd: bool = False) -> bytes:
    import pyseccomp as sc

    f = sc.SyscallFilter(sc.ALLOW)

    def rule(action: int, name: str, *args: object) -> None:
        try:
            f.add_rule(action, name, *args)
        except Exception:  # noqa: BLE001 - unknown syscall on this architecture
            pass

    def refuse(e: int) -> int:
        return sc.NOTIFY if notify else sc.ERRNO(e)

    for name in deny:
        rule(refuse(errno.EPERM), name)
    # clone3 passes its flags in memory seccomp cannot read; glibc falls back to clone(2)
    # only on ENOSYS (EPERM would break pthread_create), and clone's flags are checked below.
    # Not a violation: every thread creation tries clone3 first.
    rule(sc.ERRNO(errno.ENOSYS), "clone3")
    for flag in _NS_FLAGS:
        rule(refuse(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    for fam in (_AF_PACKET, _AF_VSOCK):
        rule(refuse(errno.EAFNOSUPPORT), "socket", sc.Arg(0, sc.EQ, fam))
    # No setuid/setgid file may be made: as real root the sandbox's files are owned by the
    # host's root, so one left in an rw mount is a setuid-root binary for every host user
    # (measured: `chmod 4755` on a copy of bash in an rw-mounted dir). Mode arguments are
    # unsigned int; the mask reads only the bit. open/openat only when they create.
    for bit in (0o4000, 0o2000):
        for name, idx in (("chmod", 1), ("fchmod", 1), ("fchmodat", 2), ("fchmodat2", 2),
                          ("creat", 1), ("mknod", 1), ("mknodat", 2)):
            rule(refuse(errno.EPERM), name, sc.Arg(idx, sc.MASKED_EQ, bit, bit))
        for create in (0o100, 0o20000000):   # O_CREAT, __O_TMPFILE
            rule(refuse(errno.EPERM), "open", sc.Arg(1, sc.MASKED_EQ, create, create),
                 sc.Arg(2, sc.MASKED_EQ, bit, bit))
            rule(refuse(errno.EPERM), "openat", sc.Arg(2, sc.MASKED_EQ, create, create),
                 sc.Arg(3, sc.MASKED_EQ, bit, bit))
    # openat2 passes its mode in memory seccomp cannot read; callers fall back on ENOSYS
    rule(sc.ERRNO(errno.ENOSYS), "openat2")
    # (attack11) Linux AIO contexts draw on one count of the whole machine (fs.aio-nr against
    # fs.aio-max-nr, 65536 here, not per namespace or user): one io_setup(65536) in a sandbox
    # made every host process's io_setup fail with EAGAIN. ENOSYS, as on a kernel without
    # AIO, which libaio users (databases, fio) fall back from
    rule(sc.ERRNO(errno.ENOSYS), "io_setup")
    for req in (_TIOCSTI, _TIOCLINUX):
        # the request argument is an int; mask the upper half glibc may leave dirty
        rule(refuse(errno.EPERM), "ioctl", sc.Arg(1, sc.MASKED_EQ, 0xFFFFFFFF, req))
    # The runner: nothing it runs may signal it (its pid, its process group, -1), join its
    # process group (then kill(0) would reach it), or reach it through a pidfd (opening
    # /proc/<pid> also makes one, which seccomp cannot tell apart: pidfd_send_signal is
    # ENOSYS, and callers such as Go's runtime fall back to kill(2)).
    for name, idx, group, acts in _PID_CALLS:
        targets = [protect] + ([-protect, -1] if group else [])
        for t in targets:
            # (a dirty upper half of a zero argument only makes the rule refuse more)
            more = () if acts is None else (sc.Arg(acts, sc.GT, 0),)
            rule(refuse(errno.EPERM), name, sc.Arg(idx, sc.MASKED_EQ, _LOW, t & _LOW), *more)
    rule(refuse(errno.EPERM), "setpgid", sc.Arg(1, sc.MASKED_EQ, _LOW, protect))
    for which in (0, 1):  # PRIO_PROCESS, PRIO_PGRP
        rule(refuse(errno.EPERM), "setpriority", sc.Arg(0, sc.EQ, which),
             sc.Arg(1, sc.MASKED_EQ, _LOW, protect))
    rule(sc.ERRNO(errno.ENOSYS), "pidfd_send_signal")
    if notify:
        # `kill $$` from a program: $$ is 1 (see FORWARDED; the kernel would drop it)
        rule(sc.NOTIFY, "kill", sc.Arg(0, sc.MASKED_EQ, _LOW, 1), sc.Arg(1, sc.GT, 0))
    # tkill names a thread (the runner has several, started later): with a listener the
    # supervisor lets it through unless the thread is the runner's; without one, refused.
    rule(sc.NOTIFY if notify else sc.ERRNO(errno.EPERM), "tkill")
    if memfd:
        # (attack10) without a memory cgroup nothing counts a memfd sent over a unix socket
        # and closed: the supervisor makes it a file of the sandbox's /dev/shm instead, which
        # is bounded and counted. memfd_secret's pages are just as unseen: ENOSYS, as on
        # kernels without it.
        rule(sc.NOTIFY, "memfd_create")
        rule(sc.ERRNO(errno.ENOSYS), "memfd_secret")
    if notify:
        # (compat11) the supervisor answers with the sandbox's memory as the machine's
        # (``Supervisor._sysinfo``): the JVM sizes its heap from it, and at 1/64 of this host's
        # RAM its initial heap alone passed the per-program cap, so `java -version` failed
        rule(sc.NOTIFY, "sysinfo")
    # libseccomp writes the program to a descriptor: a memfd, not a file under /tmp, which a
    # runner that compiles after Landlock (the landlock level: no filter compiled ahead for
    # its pid) may not create; that refusal left the landlock level without seccomp
    with os.fdopen(os.memfd_create("agentic-bash-bpf", os.MFD_CLOEXEC), "w+b") as tf:
        f.export_bpf(tf)
        tf.seek(0)
        return tf.read()


# -- the supervisor (runs in the filtered process's parent, which is not filtered) -----------
_NOTIF = struct.Struct("=QIIiIQ6Q")          # struct seccomp_notif (80 bytes)
_RESP = struct.Struct("=QqiI")               # struct seccomp_notif_resp (24 bytes)
_IOC_RECV = 0xC0502100                       # SECCOMP_IOCTL_NOTIF_RECV
_IOC_SEND = 0xC0182101                       # SECCOMP_IOCTL_NOTIF_SEND
_FLAG_CONTINUE = 1                           # SECCOMP_USER_NOTIF_FLAG_CONTINUE
_ADDFD = struct.Struct("=QIIII")             # struct seccomp_notif_addfd (24 bytes)
_IOC_ADDFD = 0x40182103                      # SECCOMP_IOCTL_NOTIF_ADDFD
_ADDFD_SEND = 1 << 1                         # SECCOMP_ADDFD_FLAG_SEND: add, and answer with it
_MFD_CLOEXEC, _MFD_HUGETLB = 0x1, 0x4
_IOC_ID_VALID = 0x40082102                   # SECCOMP_IOCTL_NOTIF_ID_VALID
_SYSINFO = struct.Struct("=q3Q6QHH4xQQI4x")  # struct sysinfo (LP64: 112 bytes)


def sysinfo_view(host: tuple[int, ...], memory: int | None, used: int | None = None,
                 cap: int | None = None, mem: dict[str, int] | None = None) -> bytes:
    """struct sysinfo as a sandbox process sees it: the host's (``_SYSINFO`` fields), its
    memory figures cut to ``memory`` bytes (the sandbox's limit) or to ``cap`` when lower (the
    caller's RLIMIT_DATA: what it may hold itself), free memory at most ``memory - used`` when
    the sandbox's usage is known, and no swap (the sandbox's limit counts RAM and swap
    together). ``mem`` (compat12): the sandbox's figures its /proc/meminfo shows
    (procfs.SandboxMemory): no buffers, its own shared memory, and free memory what the limit
    leaves and at most the total less its page cache, so a tool that takes the total from here and the cache from
    /proc/meminfo (busybox `free`) never computes a negative "used"."""
    (uptime, l1, l2, l3, total, free, shared, buffers, _tswap, _fswap, procs, _pad,
     _thigh, _fhigh, unit) = host
    unit = unit or 1
    total = min([total] + [b // unit for b in (memory, cap) if b is not None])
    room = total if used is None or memory is None else max(0, memory - used) // unit
    if mem is None:
        free = min(free, total, room)
    else:
        # (not the host's free figure: on a host whose page cache fills its RAM that said
        # 900 MiB free of a sandbox using 20 MiB of its 4 GiB; /proc/meminfo's MemFree too)
        buffers = 0
        shared = mem.get("shmem", 0) // unit
        free = min(total, room, max(0, total - min(mem.get("file", 0), mem.get("used", 0)) // unit))
    return _SYSINFO.pack(uptime, l1, l2, l3, total, free,
                         min(shared, total), min(buffers, total), 0, 0, procs, 0, 0, 0, unit)


_LIBC: list = []


def _host_sysinfo() -> tuple[int, ...] | None:
    if not _LIBC:
        _LIBC.append(ctypes.CDLL(None, use_errno=True).sysinfo)
    buf = ctypes.create_string_buffer(_SYSINFO.size)
    if _LIBC[0](buf) != 0:
        return None
    return _SYSINFO.unpack(buf.raw)


def _data_cap(pid: int) -> int | None:
    """The soft RLIMIT_DATA of ``pid`` (None: unlimited or unreadable). The JVM sizes its heap
    from sysinfo's total and commits far more than it touches (G1 at 1 GiB of max heap:
    608 MiB of private mappings for 156 MiB resident), so under ``Limits.max_process_memory``
    it must see that cap, not the sandbox's memory: then it picks SerialGC, holds 120 MiB of
    arrays and ends with a Java OutOfMemoryError past that, where with the sandbox's 4 GiB
    it died at 80 MiB of a failed commit (measured, 384 MiB cap)."""
    import resource
    try:
        soft = resource.prlimit(pid, resource.RLIMIT_DATA)[0]
    except (OSError, ValueError):
        return None
    return None if soft == resource.RLIM_INFINITY else soft


_QUERY = struct.Struct("=9Q4I2Q")            # struct procmap_query (104 bytes)
_IOC_PROCMAP_QUERY = 0xC0686611              # PROCMAP_QUERY (Linux 6.11)
_QUERY_WRITABLE = 0x2                        # PROCMAP_QUERY_VMA_WRITABLE


def _writable_fd(maps_fd: int, addr: int, size: int) -> bool | None:
    """Whether [addr, addr+size) lies in writable mappings, asked of an open
    /proc/<pid>/maps with PROCMAP_QUERY (1 us; reading the text took 400-500 us here).
    None: the kernel has no such ioctl."""
    import fcntl
    end = addr + size
    while addr < end:
        buf = bytearray(_QUERY.pack(_QUERY.size, _QUERY_WRITABLE, addr, *([0] * 12)))
        try:
            fcntl.ioctl(maps_fd, _IOC_PROCMAP_QUERY, buf, True)
        except OSError as e:
            if e.errno in (errno.ENOTTY, errno.EINVAL):
                return None
            return False   # ENOENT: no writable mapping covers addr
        addr = _QUERY.unpack(buf)[4]   # its end: the rest must be in the next one
    return True


def _writable(maps: bytes, addr: int, size: int) -> bool:
    """Whether [addr, addr+size) lies in writable mappings of a /proc/<pid>/maps text."""
    end = addr + size
    for line in maps.splitlines():
        rng, _, rest = line.partition(b" ")
        lo, _, hi = rng.partition(b"-")
        try:
            lo_i, hi_i = int(lo, 16), int(hi, 16)
        except ValueError:
            return False
        if hi_i <= addr:
            continue
        if lo_i > addr or rest[1:2] != b"w":
            return False
        if hi_i >= end:
            return True
        addr = hi_i   # the rest must be in the next mapping, adjacent and writable too
    return False


class Supervisor:
    """Answers user notifications with the errno the rule stands for and reports each one
    (kind ``syscall``) through ``report`` before answering, so the record is in place by the
    time the refused call returns."""

    def __init__(self, listener: int, report: Callable[[str], None], protect: int | None = None,
                 signals: int | None = None, memfd_dir: str | None = None,
                 memory: int | None = None, used: Callable[[], int | None] | None = None,
                 process_memory: int | None = None,
                 figures: Callable[[], dict[str, int]] | None = None) -> None:
        self.fd = listener
        # (compat12) the sandbox's memory as its /proc/meminfo shows it (sysinfo_view's mem)
        self.figures = figures
        self.memory = memory         # the sandbox's memory limit: sysinfo's total (None: host's)
        self.used = used             # the sandbox's memory in use now, when known
        # Limits.max_process_memory: the runner caps each program right after its spawn, so
        # a program may ask before its own RLIMIT_DATA says so (a loaded machine)
        self.process_memory = process_memory
        self.memfd_dir = memfd_dir   # where a workload's memfd_create makes its file
        self.report = report
        self.protect = protect
        self.signals = signals  # a non-blocking pipe to the runner: one byte per signal
        self.names = syscall_names()
        self.thread = threading.Thread(target=self._loop, name="seccomp-supervisor",
                                       daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _shell_signal(self, name: str, a0: int, a1: int, a2: int) -> int | None:
        """A signal for the shell (FORWARDED, to the runner or to pid 1): delivered to the
        runner, the call succeeds (0). kill of pid 1 with any other signal goes on to the
        kernel, which drops it (_FLAG_CONTINUE). None: refuse as the rule says."""
        args = (a0, a1, a2)
        if name == "tkill":
            target, sig = (self.protect if self._runner_thread(a0) else None), a1 & _LOW
        elif name in _SIGNAL_ARGS:
            pid_arg, sig_arg = _SIGNAL_ARGS[name]
            target, sig = _signed(args[pid_arg]), args[sig_arg] & _LOW
        else:
            return None
        if target not in (self.protect, 1) or sig == 0:
            return None
        if sig in FORWARDED and self.signals is not None:
            try:
                os.write(self.signals, bytes((sig,)))  # before the caller goes on
            except OSError:  # (full: a flood of them; bash would coalesce them too)
                pass
            return 0
        return _FLAG_CONTINUE if target == 1 and name == "kill" else None

    def _runner_thread(self, tid: int) -> bool:
        tid = _signed(tid)
        if self.protect is None or tid <= 0:
            return False  # (tkill of 0 or less is EINVAL: the kernel says so)
        return tid == self.protect or _tgid(tid) == self.protect

    def _memfd(self, nid: int, pid: int, flags: int) -> bool:
        """memfd_create of a sandbox process: the runner's own go on to the kernel; any
        other gets an unnamed file (O_TMPFILE) on ``memfd_dir``, the sandbox's /dev/shm, put
        straight into its descriptor table (SECCOMP_ADDFD_FLAG_SEND answers the call with its
        number). Unlike a memfd it cannot be sealed and /proc names it /dev/shm/#<inode>.
        False when the kernel refused the answer (then the call is refused with EPERM)."""
        import fcntl
        if self._runner_thread(pid):
            act = _RESP.pack(nid, 0, 0, _FLAG_CONTINUE)
        elif flags & _MFD_HUGETLB or flags & ~0x1F:
            act = _RESP.pack(nid, 0, -errno.EINVAL, 0)
        else:
            try:
                src = os.open(self.memfd_dir or "/dev/shm", os.O_TMPFILE | os.O_RDWR, 0o700)
            except OSError as e:
                act = _RESP.pack(nid, 0, -(e.errno or errno.ENOMEM), 0)
            else:
                try:
                    fcntl.ioctl(self.fd, _IOC_ADDFD, _ADDFD.pack(
                        nid, _ADDFD_SEND, src, 0,
                        os.O_CLOEXEC if flags & _MFD_CLOEXEC else 0))
                    return True
                except OSError as e:
                    if e.errno == errno.ENOENT:   # the caller is gone
                        return True
                    return False
                finally:
                    os.close(src)
        try:
            fcntl.ioctl(self.fd, _IOC_SEND, act)
        except OSError:
            pass
        return True

    def _sysinfo(self, nid: int, pid: int, addr: int) -> bytes:
        """sysinfo(2) of a sandbox process, answered with ``sysinfo_view`` written into its
        memory; the answer to send. The runner's own calls, and any the supervisor cannot
        serve, go on to the kernel (the host's figures: what the call said before).

        Written only into the caller's own address space: /proc/<pid>/mem and maps are opened
        first (each pins the memory of the process the pid named at that moment) and the
        notification is checked valid after (the caller is still blocked in the call, so the
        pid was not reused before the opens). Only where the caller's maps show the whole
        struct writable (the kernel's answer to a bad pointer is EFAULT; /proc/<pid>/mem
        would also write through a read-only private mapping). Another thread of the caller
        may remap the range after the check: then the bytes land in that process's own
        private copy, as any of its own stores could."""
        import fcntl
        go_on = _RESP.pack(nid, 0, 0, _FLAG_CONTINUE)
        if (self.memory is None and self.process_memory is None) or pid == self.protect:
            return go_on   # (the runner's other threads: it is not dumpable, the open fails)
        host = _host_sysinfo()
        if host is None:
            return go_on
        figs = None
        try:
            if self.figures is not None:
                figs = self.figures()
                used = figs.get("used")
            else:
                used = self.used() if self.used is not None else None
        except Exception:  # noqa: BLE001 - the usage is a refinement only
            used = figs = None
        fds: list[int] = []
        try:
            for name, mode in (("mem", os.O_RDWR), ("maps", os.O_RDONLY)):
                fds.append(os.open(f"/proc/{pid}/{name}", mode | os.O_CLOEXEC))
        except OSError:
            for fd in fds:
                os.close(fd)
            return go_on   # (not dumpable, or gone: the kernel answers)
        mem, maps = fds
        try:
            fcntl.ioctl(self.fd, _IOC_ID_VALID, struct.pack("=Q", nid))
            caps = [c for c in (_data_cap(pid), self.process_memory) if c is not None]
            data = sysinfo_view(host, self.memory, used, min(caps, default=None), figs)
            ok = _writable_fd(maps, addr, len(data))
            if ok is None:
                with os.fdopen(os.dup(maps), "rb") as f:
                    ok = _writable(f.read(), addr, len(data))
            if not ok or os.pwrite(mem, data, addr) != len(data):
                return _RESP.pack(nid, 0, -errno.EFAULT, 0)
        except OSError as e:
            if e.errno == errno.ENOENT:
                return go_on   # the caller is gone (the answer is then dropped)
            return _RESP.pack(nid, 0, -errno.EFAULT, 0)
        finally:
            os.close(mem)
            os.close(maps)
        return _RESP.pack(nid, 0, 0, 0)

    def _loop(self) -> None:
        import fcntl

        buf = bytearray(_NOTIF.size)
        while True:
            buf[:] = bytes(_NOTIF.size)
            try:
                fcntl.ioctl(self.fd, _IOC_RECV, buf, True)
            except InterruptedError:
                continue
            except OSError as e:
                if e.errno == errno.ENOENT:  # the caller was killed meanwhile
                    continue
                return
            nid, pid, _flags, nr, _arch, _ip, a0, a1, a2, *_ = _NOTIF.unpack(buf)
            name = self.names.get(nr, f"syscall {nr}")
            if name == "sysinfo":
                try:
                    act = self._sysinfo(nid, pid, a0)
                except Exception:  # noqa: BLE001 - never leave a call unanswered
                    act = _RESP.pack(nid, 0, 0, _FLAG_CONTINUE)
                try:
                    fcntl.ioctl(self.fd, _IOC_SEND, act)
                except OSError:
                    pass
                continue
            if name == "memfd_create":
                try:
                    if self._memfd(nid, pid, a1 & _LOW):
                        continue
                except Exception:  # noqa: BLE001 - never leave a call unanswered
                    try:
                        fcntl.ioctl(self.fd, _IOC_SEND, _RESP.pack(nid, 0, 0, _FLAG_CONTINUE))
                    except OSError:
                        pass
                    continue
            err = errno.EPERM
            detail = name
            if name in _SIGNAL_NAMES and self.protect is not None:
                act = self._shell_signal(name, a0, a1, a2)
                if act is not None:
                    try:
                        fcntl.ioctl(self.fd, _IOC_SEND, _RESP.pack(nid, 0, 0, act))
                    except OSError:
                        pass
                    continue
            if name == "tkill" and (a1 & _LOW == 0 or not self._runner_thread(a0)):
                # (the tid is a value, not memory the caller could change after this check)
                try:
                    fcntl.ioctl(self.fd, _IOC_SEND, _RESP.pack(nid, 0, 0, _FLAG_CONTINUE))
                except OSError:
                    pass
                continue
            if name in _SIGNAL_NAMES:
                detail = f"{name}({_signed(a0)}) of the sandbox's runner"
            if name == "socket":
                err = errno.EAFNOSUPPORT
                detail = f"socket(family={a0})"
            elif name == "clone":
                detail = f"clone(flags={a0:#x}) with namespace flags"
            elif name == "ioctl":
                detail = f"ioctl({a1 & 0xFFFFFFFF:#x})"
            try:
                with open(f"/proc/{pid}/comm") as f:
                    detail += f" by {f.read().strip()} (pid {pid})"
            except OSError:
                detail += f" (pid {pid})"
            try:
                self.report(detail + " refused by seccomp")
            except Exception:  # noqa: BLE001
                pass
            try:
                fcntl.ioctl(self.fd, _IOC_SEND, _RESP.pack(nid, 0, -err, 0))
            except OSError:
                pass


_SIGNAL_NAMES = frozenset(c[0] for c in _PID_CALLS) | {"setpgid", "setpriority", "tkill"}
_SIGNAL_ARGS = {name: (pid_arg, acts) for name, pid_arg, _group, acts in _PID_CALLS
                if name in ("kill", "rt_sigqueueinfo", "tgkill")}
"""The calls that send a signal to a pid: where the pid and the signal number sit (_PID_CALLS
records both), for the supervisor's forwarding of FORWARDED signals to the shell."""


def _signed(v: int) -> int:
    v &= _LOW
    return v - (1 << 32) if v & 0x80000000 else v


def _tgid(tid: int) -> int | None:
    try:
        with open(f"/proc/{tid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"Tgid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def send_fd(sock: socket.socket, fd: int) -> None:
    from .wire import sendmsg_fds
    sendmsg_fds(sock, [b"L"], [fd])


def recv_fd(sock: socket.socket) -> int | None:
    try:
        _msg, fds, _f, _a = socket.recv_fds(sock, 16, 1)
    except OSError:
        return None
    return fds[0] if fds else None
