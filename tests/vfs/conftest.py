"""Fixtures for the VFS tests: every backend behind one fixture, and a raw-``os`` reference."""

from __future__ import annotations

import importlib.util
import os

import pytest

from agentic_bash.vfs.base import DirEntry, StatResult
from agentic_bash.vfs.memory import MemoryFS


class RealOS:
    """The reference: the same calls done with plain ``os`` on a real directory.

    Absolute symlink targets would point out of the directory, so tests using this adapter
    only create relative symlinks.
    """

    def __init__(self, root: str) -> None:
        self.root = root.rstrip("/")

    def _p(self, path: str) -> str:
        return self.root + path if path != "/" else self.root + "/"

    def stat(self, path, follow_symlinks=True):
        return StatResult.from_os(os.stat(self._p(path), follow_symlinks=follow_symlinks))

    def exists(self, path):
        return os.path.exists(self._p(path))

    def lexists(self, path):
        return os.path.lexists(self._p(path))

    def listdir(self, path):
        return os.listdir(self._p(path))

    def scandir(self, path):
        with os.scandir(self._p(path)) as it:
            return iter([DirEntry(e.name, e.stat(follow_symlinks=False).st_mode) for e in it])

    def open(self, path, mode="rb", perm=0o644):
        flags = {"rb": os.O_RDONLY, "r+b": os.O_RDWR, "wb": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                 "w+b": os.O_RDWR | os.O_CREAT | os.O_TRUNC, "ab": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                 "a+b": os.O_RDWR | os.O_CREAT | os.O_APPEND, "xb": os.O_WRONLY | os.O_CREAT | os.O_EXCL}[mode]
        fd = os.open(self._p(path), flags, perm)
        try:
            return open(fd, mode, buffering=0)
        except BaseException:
            os.close(fd)
            raise

    def mkdir(self, path, mode=0o755):
        os.mkdir(self._p(path), mode)

    def rmdir(self, path):
        os.rmdir(self._p(path))

    def unlink(self, path):
        os.unlink(self._p(path))

    def rename(self, src, dst):
        os.rename(self._p(src), self._p(dst))

    def symlink(self, target, path):
        os.symlink(target, self._p(path))

    def readlink(self, path):
        return os.readlink(self._p(path))

    def link(self, src, dst):
        os.link(self._p(src), self._p(dst), follow_symlinks=False)

    def chmod(self, path, mode, follow_symlinks=True):
        os.chmod(self._p(path), mode)

    def truncate(self, path, length):
        os.truncate(self._p(path), length)

    def utime(self, path, times=None, follow_symlinks=True):
        os.utime(self._p(path), times, follow_symlinks=follow_symlinks)

    def realpath(self, path):
        r = os.path.realpath(self._p(path))
        return "/" + os.path.relpath(r, self.root) if r != self.root else "/"


class Rebased:
    """HostFS("/") (the host/sandboxed-mode view) with the test's paths moved below a temp dir."""

    def __init__(self, fs, base: str) -> None:
        self.fs, self.base = fs, base.rstrip("/")

    def _p(self, path):
        return self.base + path if path != "/" else self.base

    def __getattr__(self, name):
        fn = getattr(self.fs, name)
        if name in ("rename", "link"):
            return lambda a, b, *r, **k: fn(self._p(a), self._p(b), *r, **k)
        if name == "symlink":
            return lambda t, p, *r, **k: fn(t, self._p(p), *r, **k)
        if name == "realpath":
            return lambda p: fn(self._p(p))[len(self.base):] or "/"
        return lambda p, *r, **k: fn(self._p(p), *r, **k)


BACKENDS = [b for b, mod in [("memory", "memory"), ("host", "host"), ("hostslash", "host"), ("overlay", "overlay"), ("mount", "mount")]
            if importlib.util.find_spec(f"agentic_bash.vfs.{mod}") is not None]


def make_backend(kind: str, tmp_path) -> object:
    if kind == "memory":
        return MemoryFS()
    if kind == "host":
        from agentic_bash.vfs.host import HostFS

        d = tmp_path / "hostroot"
        d.mkdir()
        return HostFS(str(d), writable=True)
    if kind == "hostslash":
        from agentic_bash.vfs.host import HostFS

        d = tmp_path / "slashroot"
        d.mkdir()
        fs = HostFS("/", writable=True)
        assert fs._fast
        return Rebased(fs, str(d))
    if kind == "overlay":
        from agentic_bash.vfs.host import HostFS
        from agentic_bash.vfs.overlay import OverlayFS

        d = tmp_path / "lower"
        (d / "lowerdir" / "sub").mkdir(parents=True)
        (d / "lowerdir" / "a.txt").write_bytes(b"lower a\n")
        (d / "lowerdir" / "sub" / "b.txt").write_bytes(b"lower b\n")
        return OverlayFS(MemoryFS(), [HostFS(str(d), writable=False)])
    if kind == "mount":
        from agentic_bash.vfs.mount import MountFS

        root = MemoryFS()
        root.mkdir("/mnt")
        root.mkdir("/mnt/other")
        return MountFS(root, {"/mnt/other": MemoryFS()})
    raise ValueError(kind)


@pytest.fixture
def real(tmp_path) -> RealOS:
    d = tmp_path / "real"
    d.mkdir()
    return RealOS(str(d))
