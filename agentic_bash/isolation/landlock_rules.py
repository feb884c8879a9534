"""Landlock through direct syscalls: read/execute everywhere visible, write only where allowed."""

# Why not the ``landlock`` PyPI package: its ``syscall_errcheck`` decides that a call failed
# by ``ctypes.get_errno() != 0`` instead of by the return value, and errno is never cleared
# on success, so a stale errno left by any earlier ctypes call on the thread turns a
# *successful* landlock syscall into a SyscallError (the workaround with the package is
# ``ctypes.set_errno(0)`` before every call). It also knows only the filesystem rights of ABI
# 1-3, and we want ABI 6 scoping (signals, abstract unix sockets). So the three syscalls are
# called directly here, and a failure is a negative return value.

from __future__ import annotations

import ctypes
import os
import stat
from typing import Iterable

__all__ = ["apply_landlock", "fs_rights", "host_read_rules"]

_NR_CREATE, _NR_ADD_RULE, _NR_RESTRICT = 444, 445, 446  # asm-generic: same on every arch

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13     # ABI 2
TRUNCATE = 1 << 14  # ABI 3
IOCTL_DEV = 1 << 15  # ABI 5
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1                # ABI 6

_FILE_ONLY = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV


def fs_rights(abi: int) -> int:
    """Every filesystem right this ABI can handle."""
    r = (1 << 13) - 1
    if abi >= 2:
        r |= REFER
    if abi >= 3:
        r |= TRUNCATE
    if abi >= 5:
        r |= IOCTL_DEV
    return r


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def apply_landlock(abi: int, read_exec: Iterable[str], writable: Iterable[str],
                   *, scope: bool = True, list_only: Iterable[str] = ()) -> int:
    """Restrict this thread (and every later thread/child) and return the ABI applied.

    Reads and execution are allowed beneath ``read_exec``, everything except creating device
    nodes beneath ``writable``; all other filesystem access is denied. With ABI >= 6 and
    ``scope``, signals and abstract unix sockets cannot reach processes outside the domain.
    ``list_only`` directories may be listed but their files are readable only through a
    ``read_exec`` rule.
    Requires no_new_privs (or CAP_SYS_ADMIN). Raises OSError on failure; missing paths are
    skipped (a sandbox without e.g. /lib32 is fine).
    """
    if abi <= 0:
        raise OSError(38, "Landlock is not available")
    libc = _libc()
    handled = fs_rights(abi)
    attr = _RulesetAttr(handled, 0, 0)
    size = 8
    if abi >= 6 and scope:
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
        size = 24
    fd = libc.syscall(ctypes.c_long(_NR_CREATE), ctypes.byref(attr), ctypes.c_size_t(size),
                      ctypes.c_uint32(0))
    if fd < 0:
        e = ctypes.get_errno()
        raise OSError(e, f"landlock_create_ruleset: {os.strerror(e)}")
    try:
        read = READ_FILE | READ_DIR | EXECUTE | (IOCTL_DEV if abi >= 5 else 0)
        write = handled & ~(MAKE_CHAR | MAKE_BLOCK)
        for paths, rights in ((list_only, READ_DIR), (read_exec, read), (writable, write)):
            for p in paths:
                _add(libc, fd, p, rights & handled)
        if libc.syscall(ctypes.c_long(_NR_RESTRICT), ctypes.c_int(fd), ctypes.c_uint32(0)) < 0:
            e = ctypes.get_errno()
            raise OSError(e, f"landlock_restrict_self: {os.strerror(e)}")
    finally:
        os.close(fd)
    return abi


def _add(libc: ctypes.CDLL, ruleset: int, path: str, rights: int) -> None:
    try:
        pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        if not stat.S_ISDIR(os.fstat(pfd).st_mode):
            rights &= _FILE_ONLY
        pb = _PathBeneath(rights, pfd)
        if libc.syscall(ctypes.c_long(_NR_ADD_RULE), ctypes.c_int(ruleset), ctypes.c_int(1),
                        ctypes.byref(pb), ctypes.c_uint32(0)) < 0:
            e = ctypes.get_errno()
            raise OSError(e, f"landlock_add_rule {path}: {os.strerror(e)}")
    finally:
        os.close(pfd)


# The landlock level shows the host's filesystem: reads are allowed only where programs need
# them. Security invariant: no /home, /root, host /tmp, /run, /var/log, /srv, /mnt; in /etc
# every entry except the secrets (root without capabilities still owns /etc/shadow).
_HOST_READ = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt",
              "/var/lib", "/var/cache", "/proc", "/dev", "/sys/devices/system/cpu")
_ETC_SECRETS = {"shadow", "shadow-", "gshadow", "gshadow-", "ssh", "sudoers", "sudoers.d",
                "security", "ssl", "pki", "krb5.keytab", "npmrc", "netrc", "subuid", "subgid",
                "subuid-", "subgid-", "machine-id", "credstore", "credstore.encrypted",
                "wireguard", "NetworkManager", "openvpn", "letsencrypt", "docker"}


def host_read_rules(cfg: dict) -> tuple[list[str], list[str]]:
    """(read/execute paths, list-only dirs) for the landlock level."""
    read = list(_HOST_READ) + list(cfg.get("python_binds", ())) + list(cfg.get("writable", ()))
    read += [m["source"] for m in cfg.get("mounts") or ()]
    try:
        names = os.listdir("/etc")
    except OSError:
        names = []
    read += [f"/etc/{n}" for n in names if n not in _ETC_SECRETS]
    # certificates without the private keys
    for d in ("/etc/ssl", "/etc/pki"):
        try:
            read += [f"{d}/{n}" for n in os.listdir(d) if n != "private"]
        except OSError:
            pass
    return read, ["/etc"]
