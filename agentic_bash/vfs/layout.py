"""The virtual-mode root: a shared, cached base tree and mounts under one per-sandbox upper layer."""

# Layers of a virtual sandbox, top first:
#   MountFS            only when there are "ro"/"rw" mounts: HostFS(writable=mode == "rw")
#   OverlayFS upper    MemoryFS, the session layer (all writes land here; reset() swaps it)
#   OverlayFS lowers   one graft per "cow" mount (deepest mount point on top), a tiny tree of
#                      mount-point directories, then the base tree
# The base tree (/etc, /dev, /usr/bin placeholders, ...) is built once per process for each
# (command set, home, workdir) and shared read-only by every sandbox, so building a
# sandbox's filesystem is a few object constructions and reset() is O(1).

from __future__ import annotations

import errno
import stat as _stat
import threading
import zlib
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Iterable, Iterator

from .base import DirEntry, FileSystem, StatResult
from .host import HostFS
from .memory import MemoryFS, _err
from .mount import MountFS
from .overlay import OverlayFS
from .paths import normalize

__all__ = ["LayerInfo", "MOUNT_MODES", "build_virtual_fs", "base_tree"]

MOUNT_MODES = ("ro", "cow", "rw")
SANDBOX_UID = 1000
SANDBOX_GID = 1000

_PLACEHOLDER = b"#!/bin/sh\n# %s: provided in-process by agentic-bash\n"

_ETC = {
    "passwd": b"root:x:0:0:root:/root:/bin/bash\nuser:x:1000:1000::%(home)s:/bin/bash\n"
              b"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
    "group": b"root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n",
    "hostname": b"sandbox\n",
    "hosts": b"127.0.0.1\tlocalhost\n127.0.1.1\tsandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n",
    "shells": b"/bin/sh\n/bin/bash\n/usr/bin/sh\n/usr/bin/bash\n",
    "os-release": b'PRETTY_NAME="agentic-bash sandbox"\nNAME="agentic-bash"\nID=agentic-bash\n',
}


def _build_base(commands: tuple[str, ...], home: str, workdir: str) -> MemoryFS:
    fs = MemoryFS(uid=0, gid=0, check_permissions=False)
    for d in ("/usr", "/usr/bin", "/usr/sbin", "/usr/lib", "/usr/local", "/usr/local/bin",
              "/usr/share", "/etc", "/var", "/var/log", "/opt", "/home", "/dev", "/srv", "/mnt", "/run"):
        fs.mkdir(d)
    fs.mkdir("/root", 0o700)
    for d in ("/tmp", "/var/tmp"):
        fs.mkdir(d)
        fs.chmod(d, 0o1777)
    fs.symlink("usr/bin", "/bin")
    fs.symlink("usr/sbin", "/sbin")
    fs.symlink("usr/lib", "/lib")
    # the sandbox user's own directories
    for d in (home, workdir):
        parts = d.strip("/").split("/")
        cur = ""
        for i, p in enumerate(parts):
            cur += "/" + p
            if not fs.lexists(cur):
                fs.mkdir(cur)
                if i == len(parts) - 1:
                    fs.chown(cur, SANDBOX_UID, SANDBOX_GID)
    for name, body in _ETC.items():
        with fs.open("/etc/" + name, "wb") as f:
            f.write(body % {b"home": home.encode()} if b"%(" in body else body)
    for name, kind in (("null", "null"), ("zero", "zero"), ("full", "full"), ("random", "random"),
                       ("urandom", "urandom"), ("tty", "tty"), ("stdin", "tty"), ("stdout", "tty"),
                       ("stderr", "tty")):
        fs.mknod_device("/dev/" + name, kind)
    fs.mkdir("/dev/fd", 0o555)
    fs.mkdir("/dev/shm")
    fs.chmod("/dev/shm", 0o1777)
    for name in commands:
        if not name or "/" in name or name in (".", ".."):
            continue
        with fs.open("/usr/bin/" + name, "wb", 0o755) as f:
            f.write(_PLACEHOLDER % name.encode("utf-8", "surrogateescape"))
    return fs


_BASE_CACHE: dict[tuple, MemoryFS] = {}
_BASE_LOCK = threading.Lock()


def base_tree(command_names: Iterable[str] = (), home: str = "/home/user", workdir: str = "/workspace") -> MemoryFS:
    """The shared base layer for these options (built once per process; never write to it)."""
    key = (tuple(sorted(set(command_names))), normalize(home), normalize(workdir))
    fs = _BASE_CACHE.get(key)
    if fs is None:
        with _BASE_LOCK:
            fs = _BASE_CACHE.get(key)
            if fs is None:
                fs = _build_base(*key)
                _BASE_CACHE[key] = fs
    return fs


class _Graft:
    """A read-only lower layer showing ``fs`` at ``at`` and only the directories leading to it."""

    def __init__(self, fs: Any, at: str) -> None:
        self.fs = fs
        self.at = at
        self._dir = StatResult(_stat.S_IFDIR | 0o755, 4096, st_uid=0, st_gid=0)
        self._dev = 0x7000 + (id(self) & 0xfff)

    def _map(self, path: str) -> str | None:
        """Inner path, or None for a synthetic ancestor directory; raises ENOENT elsewhere."""
        at = self.at
        if path == at:
            return "/"
        if path.startswith(at + "/"):
            return path[len(at):]
        if path == "/" or at.startswith(path + "/"):
            return None
        raise _err(errno.ENOENT, path)

    def stat(self, path: str, follow_symlinks: bool = True) -> StatResult:
        inner = self._map(path)
        if inner is None:
            # distinct (dev, ino) per synthetic directory: find/cp detect cycles and links by it
            return StatResult(self._dir.st_mode, 4096, st_ino=zlib.crc32(path.encode()) | 1,
                              st_dev=self._dev, st_nlink=2, st_uid=0, st_gid=0)
        return self.fs.stat(inner, follow_symlinks)

    def exists(self, path: str) -> bool:
        try:
            self.stat(path)
            return True
        except OSError:
            return False

    def lexists(self, path: str) -> bool:
        try:
            self.stat(path, False)
            return True
        except OSError:
            return False

    def listdir(self, path: str) -> list[str]:
        inner = self._map(path)
        if inner is None:
            return [self.at[len(path.rstrip("/")) + 1:].split("/")[0]]
        return self.fs.listdir(inner)

    def scandir(self, path: str) -> Iterator[DirEntry]:
        inner = self._map(path)
        if inner is None:
            return iter([DirEntry(n, self._dir.st_mode) for n in self.listdir(path)])
        return self.fs.scandir(inner)

    def open(self, path: str, mode: str = "rb", perm: int = 0o644) -> BinaryIO:
        inner = self._map(path)
        if inner is None:
            raise _err(errno.EISDIR, path)
        return self.fs.open(inner, mode, perm)

    def readlink(self, path: str) -> str:
        inner = self._map(path)
        if inner is None:
            raise _err(errno.EINVAL, path)
        return self.fs.readlink(inner)

    def realpath(self, path: str) -> str:
        return path

    def access(self, path: str, mode: int) -> bool:
        try:
            inner = self._map(path)
        except OSError:
            return False
        return True if inner is None else self.fs.access(inner, mode)

    def real_path(self, path: str) -> str | None:
        try:
            inner = self._map(path)
        except OSError:
            return None
        return None if inner is None else self.fs.real_path(inner)

    def _read_only(self, *a: Any, **kw: Any) -> None:
        raise _err(errno.EROFS)

    mkdir = rmdir = unlink = rename = symlink = link = chmod = chown = utime = truncate = _read_only


def _new_upper(max_bytes: int | None, max_files: int | None) -> MemoryFS:
    up = MemoryFS(max_bytes=max_bytes, max_files=max_files, uid=SANDBOX_UID, gid=SANDBOX_GID)
    up._root.uid = up._root.gid = 0  # "/" itself is root's, as on any system
    return up


@dataclass
class LayerInfo:
    """What the session needs from the built filesystem: the session layer and how to drop it."""

    root: Any
    """The filesystem the script sees (MountFS or OverlayFS)."""
    overlay: OverlayFS
    upper: MemoryFS
    mounts: dict[str, tuple[str, str]] = field(default_factory=dict)
    max_bytes: int | None = None
    max_files: int | None = None

    wait_hook: Any = None
    """Called while a FIFO operation waits (e.g. ``Budget.check``, raising to cancel); see set_wait_hook."""

    def set_wait_hook(self, hook: Any) -> None:
        """Install ``hook`` on the session layer now and after every reset()."""
        self.wait_hook = hook
        self.upper.wait_hook = hook

    def reset(self) -> None:
        """Drop every change of the session layer: O(1), the lowers are untouched."""
        up = _new_upper(self.max_bytes, self.max_files)
        up.wait_hook = self.wait_hook
        up._track_via = self.root
        self.overlay.swap_upper(up)
        self.upper = up


def build_virtual_fs(mounts: dict[str, tuple[str, str]] | None, command_names: Iterable[str], *,
                     home: str = "/home/user", workdir: str = "/workspace",
                     limits: Any = None) -> tuple[FileSystem, LayerInfo]:
    """The root filesystem of a virtual sandbox and its LayerInfo.

    ``mounts`` maps a sandbox path to ``(host_dir, mode)``: ``"ro"`` read-only (EROFS),
    ``"cow"`` host dir as a lower layer (writes land in the session layer), ``"rw"`` writes
    go to the host dir.
    """
    base = base_tree(command_names, home, workdir)
    lowers: list[Any] = []
    over: dict[str, Any] = {}
    norm_mounts: dict[str, tuple[str, str]] = {}
    for dest, spec in (mounts or {}).items():
        src, mode = spec
        d = normalize(dest)
        if d == "/":
            raise ValueError("cannot mount over /")
        if mode not in MOUNT_MODES:
            raise ValueError(f"mount mode must be one of {MOUNT_MODES}, not {mode!r}")
        norm_mounts[d] = (src, mode)
        if mode == "cow":
            lowers.append(_Graft(HostFS(src, writable=False), d))
        else:
            over[d] = HostFS(src, writable=mode == "rw")
    lowers.sort(key=lambda g: g.at.count("/"), reverse=True)  # deeper mount points on top
    if norm_mounts:
        points = MemoryFS(uid=0, gid=0, check_permissions=False)
        for d in norm_mounts:
            cur = ""
            for p in d.strip("/").split("/"):
                cur += "/" + p
                if not points.lexists(cur):
                    points.mkdir(cur)
        lowers.append(points)
    lowers.append(base)
    from ..limits import fs_bytes
    max_bytes = fs_bytes(limits, virtual=True)
    max_files = getattr(limits, "max_file_count", None)
    upper = _new_upper(max_bytes, max_files)
    overlay = OverlayFS(upper, lowers)
    info = LayerInfo(overlay, overlay, upper, norm_mounts, max_bytes, max_files)
    root: Any = MountFS(overlay, over) if over else overlay
    info.root = root
    upper._track_via = root
    return root, info

