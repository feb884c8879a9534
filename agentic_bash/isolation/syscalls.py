"""ctypes wrappers for the Linux syscalls Python 3.11 lacks (unshare, mount, pivot_root, capset, prctl)."""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os

__all__ = [
    "CLONE_NEWCGROUP", "CLONE_NEWIPC", "CLONE_NEWNET", "CLONE_NEWNS", "CLONE_NEWPID",
    "CLONE_NEWUSER", "CLONE_NEWUTS", "MNT_DETACH", "MS_BIND", "MS_NODEV", "MS_NOEXEC",
    "MS_NOSUID", "MS_PRIVATE", "MS_RDONLY", "MS_REC", "MS_REMOUNT", "MS_SLAVE",
    "PR_SET_NO_NEW_PRIVS", "PR_SET_PDEATHSIG", "bounding_caps", "cap_last_cap",
    "clone_fork", "drop_all_caps", "get_no_new_privs", "mount", "pivot_root", "prctl",
    "set_no_new_privs", "set_pdeathsig", "sethostname", "umount2", "unshare",
]

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_SLAVE = 1 << 19
MNT_DETACH = 2

PR_SET_PDEATHSIG = 1
PR_SET_NAME = 15
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_SET_NO_NEW_PRIVS = 38
PR_GET_NO_NEW_PRIVS = 39
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4

# SECBIT_NOROOT|NOROOT_LOCKED|NO_SETUID_FIXUP|..._LOCKED|KEEP_CAPS_LOCKED|NO_CAP_AMBIENT_RAISE|..._LOCKED:
# uid 0 no longer gains capabilities on execve, and that cannot be undone.
_SECURE_ALL = 0x01 | 0x02 | 0x04 | 0x08 | 0x20 | 0x40 | 0x80

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
try:  # Linux-only symbols; elsewhere this module imports but its functions fail
    _libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                            ctypes.c_char_p)
    _libc.umount2.argtypes = (ctypes.c_char_p, ctypes.c_int)
    _libc.unshare.argtypes = (ctypes.c_int,)
    _libc.sethostname.argtypes = (ctypes.c_char_p, ctypes.c_size_t)
    _libc.prctl.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                            ctypes.c_ulong)
    _libc.syscall.restype = ctypes.c_long
except AttributeError:
    pass

_SYS = {"x86_64": {"pivot_root": 155, "capset": 126, "clone3": 435},
        "aarch64": {"pivot_root": 41, "capset": 91, "clone3": 435}}.get(os.uname().machine, {})


def _check(res: int, what: str, arg: object = None) -> int:
    if res < 0:
        e = ctypes.get_errno()
        raise OSError(e, f"{what}: {os.strerror(e)}" + (f" ({arg})" if arg is not None else ""))
    return res


def _b(s: str | bytes | None) -> bytes | None:
    return os.fsencode(s) if s is not None else None


def unshare(flags: int) -> None:
    _check(_libc.unshare(flags), "unshare")


def mount(source: str | None, target: str, fstype: str | None, flags: int = 0,
          data: str | None = None) -> None:
    _check(_libc.mount(_b(source), _b(target), _b(fstype), flags, _b(data)), "mount", target)


def umount2(target: str, flags: int = 0) -> None:
    _check(_libc.umount2(_b(target), flags), "umount2", target)


def pivot_root(new_root: str, put_old: str) -> None:
    nr = _SYS.get("pivot_root")
    if nr is None:
        raise OSError(errno.ENOSYS, "pivot_root: unsupported architecture")
    _check(_libc.syscall(ctypes.c_long(nr), _b(new_root), _b(put_old)), "pivot_root")


OVERLAYFS_MAGIC = 0x794C7630


def fs_type(path: str) -> int:
    """statfs(2)'s f_type of ``path`` (the filesystem's magic number)."""
    buf = ctypes.create_string_buffer(256)   # (struct statfs: f_type is its first word)
    _check(_libc.statfs(_b(path), buf), "statfs", path)
    return ctypes.c_long.from_buffer(buf).value


def sethostname(name: str) -> None:
    b = name.encode()
    _check(_libc.sethostname(b, len(b)), "sethostname")


def prctl(option: int, a2: int = 0, a3: int = 0, a4: int = 0, a5: int = 0) -> int:
    return _check(_libc.prctl(option, a2, a3, a4, a5), "prctl", option)


def set_name(name: str) -> None:
    """The calling thread's name (comm: what ps and /proc/PID/comm show), at most 15 bytes;
    threads and processes it starts later inherit it."""
    buf = ctypes.create_string_buffer(name.encode()[:15])
    prctl(PR_SET_NAME, ctypes.addressof(buf))


def set_pdeathsig(sig: int) -> None:
    prctl(PR_SET_PDEATHSIG, sig)


def set_no_new_privs() -> None:
    prctl(PR_SET_NO_NEW_PRIVS, 1)


def get_no_new_privs() -> bool:
    return prctl(PR_GET_NO_NEW_PRIVS) == 1


def cap_last_cap() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 40


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


_LAST_CAP = cap_last_cap()


def drop_all_caps() -> None:
    """Empty the bounding and ambient sets, lock root's exec-time privileges, then capset(0).

    Security invariant: uid 0 (also uid 0 inside a user namespace) regains the bounding set
    on every execve unless the bounding set is empty or SECBIT_NOROOT is set, so clearing
    CapEff alone is not enough. Safe to call after fork (no allocation beyond ctypes calls).
    """
    for cap in range(_LAST_CAP + 1):
        if _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 and ctypes.get_errno() not in (
                errno.EINVAL, errno.EPERM):
            _check(-1, "PR_CAPBSET_DROP", cap)
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    _libc.prctl(PR_SET_SECUREBITS, _SECURE_ALL, 0, 0, 0)  # EPERM without CAP_SETPCAP: fine
    nr = _SYS.get("capset")
    if nr is None:
        raise OSError(errno.ENOSYS, "capset: unsupported architecture")
    hdr = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3: two 32-bit data words
    data = (_CapData * 2)()
    _check(_libc.syscall(ctypes.c_long(nr), ctypes.byref(hdr), ctypes.byref(data)), "capset")


def bounding_caps() -> int:
    """CapBnd of this process as a bitmask (from /proc/self/status)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapBnd:"):
                    return int(line.split()[1], 16)
    except (OSError, ValueError):
        pass
    return -1


# -- clone_fork: os.fork() that creates the child in new namespaces ---------------------------
# Why hand-written: Python 3.11 has no clone(); os.fork() followed by unshare() in the child
# costs one more process (a fork of the ~30 MB zygote and its copy-on-write faults, and one
# more hand-off between processes) per sandbox. This is os.fork()'s own sequence
# (PyOS_BeforeFork, the system call with the interpreter lock held, PyOS_AfterFork_*) around
# clone3(2) with namespace flags, plus the one thing glibc's fork() does that the raw call
# does not and that a single-threaded caller needs: the child's thread id in glibc's thread
# descriptor (found once by its value; where it cannot be found clone_fork is unavailable).

class _CloneArgs(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("pidfd", ctypes.c_uint64),
                ("child_tid", ctypes.c_uint64), ("parent_tid", ctypes.c_uint64),
                ("exit_signal", ctypes.c_uint64), ("stack", ctypes.c_uint64),
                ("stack_size", ctypes.c_uint64), ("tls", ctypes.c_uint64)]


CLONE_CHILD_SETTID = 0x01000000
_tid_addr: int | None = None
_tid_probed = False


def _find_tid_field() -> int | None:
    """Address of this thread's tid in glibc's thread descriptor (pthread_self()): the one
    32-bit word of its first 1 KiB that holds gettid(), else None (the descriptor is ~2 KiB
    on glibc 2.3x; the tid sits at 0x2d0 on x86_64)."""
    import threading
    try:
        self_ = ctypes.CDLL(None).pthread_self
        self_.restype = ctypes.c_void_p
        base = self_()
        if not base:
            return None
        tid = threading.get_native_id()
        words = (ctypes.c_int32 * 256).from_address(base)
        hits = [i for i in range(256) if words[i] == tid]
    except (AttributeError, OSError, ValueError):
        return None
    return base + 4 * hits[0] if len(hits) == 1 else None


def clone_fork(flags: int) -> int:
    """fork() into new namespaces (``flags``: CLONE_NEW*): returns the child's pid in the
    parent, 0 in the child. Only from a single-threaded process. Raises OSError when the
    kernel refuses (the caller falls back to fork + unshare) or where it is unavailable."""
    global _tid_addr, _tid_probed
    nr = _SYS.get("clone3")
    if nr is None:
        raise OSError(errno.ENOSYS, "clone3: unsupported architecture")
    if not _tid_probed:
        _tid_probed = True
        _tid_addr = _find_tid_field()
    if _tid_addr is None:
        raise OSError(errno.ENOSYS, "clone_fork: glibc's thread id field not found")
    import signal
    api = ctypes.pythonapi
    args = _CloneArgs(flags=flags | CLONE_CHILD_SETTID, child_tid=_tid_addr,
                      exit_signal=int(signal.SIGCHLD))
    # the interpreter lock stays held across the call, as os.fork() holds it
    raw = ctypes.PyDLL(None, use_errno=True).syscall
    raw.restype = ctypes.c_long
    api.PyOS_BeforeFork()
    pid = raw(ctypes.c_long(nr), ctypes.byref(args), ctypes.c_size_t(ctypes.sizeof(args)))
    if pid == 0:
        api.PyOS_AfterFork_Child()
        return 0
    err = ctypes.get_errno()
    api.PyOS_AfterFork_Parent()
    if pid < 0:
        raise OSError(err, f"clone3: {os.strerror(err)}")
    return int(pid)
