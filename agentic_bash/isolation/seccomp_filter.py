"""The default seccomp filter (pyseccomp over libseccomp): refuse what a sandbox never needs."""

from __future__ import annotations

import errno
from typing import Iterable

__all__ = ["DEFAULT_DENY", "apply_seccomp", "compile_bpf", "load_bpf"]

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

_NS_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000,
             0x40000000, 0x00000080)  # NEWNS NEWCGROUP NEWUTS NEWIPC NEWUSER NEWPID NEWNET NEWTIME
_AF_PACKET, _AF_VSOCK = 17, 40
_TIOCSTI, _TIOCLINUX = 0x5412, 0x541C


_CACHE: dict[tuple[str, ...], bytes] = {}


def apply_seccomp(deny: Iterable[str] = DEFAULT_DENY) -> None:
    """Load the filter into this process and all its threads. Requires no_new_privs first.
    The BPF program is compiled once per process (the zygote warms the cache, so a sandbox
    only pays for one seccomp(2) call)."""
    load_bpf(compile_bpf(deny))


def compile_bpf(deny: Iterable[str] = DEFAULT_DENY) -> bytes:
    """The filter as raw BPF (struct sock_filter[]), compiled by libseccomp and cached."""
    key = tuple(deny)
    bpf = _CACHE.get(key)
    if bpf is None:
        bpf = _CACHE[key] = _compile(key)
    return bpf


def load_bpf(bpf: bytes) -> None:
    import ctypes
    import os
    import platform

    nr = {"x86_64": 317, "aarch64": 277}.get(platform.machine())
    if nr is None:
        raise OSError(errno.ENOSYS, "seccomp: unsupported architecture")

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    buf = ctypes.create_string_buffer(bpf, len(bpf))
    prog = SockFprog(len(bpf) // 8, ctypes.addressof(buf))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    # SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC
    if libc.syscall(ctypes.c_long(nr), ctypes.c_uint(1), ctypes.c_uint(1),
                    ctypes.byref(prog)) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"seccomp(SET_MODE_FILTER): {os.strerror(e)}")


def _compile(deny: tuple[str, ...]) -> bytes:
    import tempfile

    import pyseccomp as sc

    f = sc.SyscallFilter(sc.ALLOW)
    skipped: list[str] = []
    eperm = sc.ERRNO(errno.EPERM)

    def rule(action: int, name: str, *args: object) -> None:
        try:
            f.add_rule(action, name, *args)
        except Exception:  # noqa: BLE001 - unknown syscall on this architecture
            skipped.append(name)

    for name in deny:
        rule(eperm, name)
    # clone3 passes its flags in memory seccomp cannot read; glibc falls back to clone(2)
    # only on ENOSYS (EPERM would break pthread_create), and clone's flags are checked below.
    rule(sc.ERRNO(errno.ENOSYS), "clone3")
    for flag in _NS_FLAGS:
        rule(eperm, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    for fam in (_AF_PACKET, _AF_VSOCK):
        rule(sc.ERRNO(errno.EAFNOSUPPORT), "socket", sc.Arg(0, sc.EQ, fam))
    for req in (_TIOCSTI, _TIOCLINUX):
        # the request argument is an int; mask the upper half glibc may leave dirty
        rule(eperm, "ioctl", sc.Arg(1, sc.MASKED_EQ, 0xFFFFFFFF, req))
    with tempfile.TemporaryFile() as tf:
        f.export_bpf(tf)
        tf.seek(0)
        return tf.read()
