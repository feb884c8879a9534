"""MountFS: filesystems mounted at paths of a root filesystem, dispatched by longest prefix."""

# Symlinks are resolved here, component by component across mount boundaries, so a symlink
# in the root pointing into a mount (``~/ws -> /workspace``) or out of one reaches the right
# filesystem; each backend then receives a path with no symlink before its last component.
# rename/link across two filesystems is EXDEV, as on Linux (``mv``/``cp`` fall back to copy).

from __future__ import annotations

import errno
import stat as _stat
from typing import Any, BinaryIO, Iterator, Mapping

from .base import DirEntry, FileSystem, StatResult
from .memory import MAXSYMLINKS, _err
from .paths import join, normalize, realpath_with, split

__all__ = ["MountFS"]


class MountFS:
    """``root`` with ``mounts`` ({mount point: filesystem}) laid over it."""

    def __init__(self, root: FileSystem, mounts: Mapping[str, FileSystem]) -> None:
        self.root = root
        self.mounts = {normalize(k): v for k, v in mounts.items()}
        # longest first, so the first prefix that matches is the longest
        self._order = sorted(self.mounts, key=len, reverse=True)
        self._journal: Any = None

    # ------------------------------------------------------------------ routing
    def _route(self, path: str) -> tuple[Any, str, str]:
        """(filesystem, path inside it, mount point) for a symlink-free absolute path."""
        for m in self._order:
            if path == m:
                return self.mounts[m], "/", m
            if path.startswith(m + "/"):
                return self.mounts[m], path[len(m):], m
        return self.root, path, "/"

    def _resolve(self, path: str, follow: bool = True) -> str:
        """The path with every symlink resolved (the last one only with ``follow``)."""
        if not self.mounts:
            return path
        comps = [c for c in reversed(path.split("/")) if c and c != "."]
        cur = "/"
        hops = 0
        while comps:
            c = comps.pop()
            if c == ".":
                continue
            if c == "..":
                cur = split(cur)[0]
                continue
            nxt = join(cur, c)
            if not comps and not follow:
                return nxt
            fs, inner, _ = self._route(nxt)
            try:
                st = fs.stat(inner, follow_symlinks=False)
            except FileNotFoundError:
                if comps:
                    raise _err(errno.ENOENT, path) from None
                return nxt
            except OSError as e:
                raise _err(e.errno, path) from None
            if _stat.S_ISLNK(st.st_mode):
                hops += 1
                if hops > MAXSYMLINKS:
                    raise _err(errno.ELOOP, path)
                t = fs.readlink(inner)
                if t.startswith("/"):
                    cur = "/"
                if t.endswith(("/", "/.", "/..")) or t in (".", ".."):
                    comps.append(".")
                comps.extend(x for x in reversed(t.split("/")) if x and x != ".")
                continue
            if comps and not _stat.S_ISDIR(st.st_mode):
                raise _err(errno.ENOTDIR, path)
            cur = nxt
        return cur

    def _at(self, path: str, follow: bool = True) -> tuple[Any, str, str]:
        p = self._resolve(path, follow)
        fs, inner, _ = self._route(p)
        return fs, inner, p

    @staticmethod
    def _rename_err(e: OSError, path: str, path2: str | None = None) -> OSError:
        return _err(e.errno, path, path2)

    def _call(self, path: str, fn: str, *a: Any, follow: bool = True, **kw: Any) -> Any:
        fs, inner, _ = self._at(path, follow)
        try:
            return getattr(fs, fn)(inner, *a, **kw)
        except OSError as e:
            raise _err(e.errno, path) from None

    def _jnote(self, path: str, follow: bool = False) -> None:
        j = self._journal
        if j is not None:
            try:
                j.note(self._resolve(path, follow))
            except OSError:
                pass

    # ------------------------------------------------------------------ queries
    def stat(self, path: str, follow_symlinks: bool = True) -> StatResult:
        return self._call(path, "stat", follow=follow_symlinks, follow_symlinks=False)

    def lstat(self, path: str) -> StatResult:
        return self.stat(path, False)

    def exists(self, path: str) -> bool:
        try:
            self.stat(path, True)
            return True
        except (OSError, ValueError):
            return False

    def lexists(self, path: str) -> bool:
        try:
            self.stat(path, False)
            return True
        except (OSError, ValueError):
            return False

    def _mounts_below(self, p: str) -> list[str]:
        prefix = p.rstrip("/") + "/"
        out = []
        for m in self.mounts:
            if m.startswith(prefix) and "/" not in m[len(prefix):]:
                out.append(m[len(prefix):])
        return out

    def listdir(self, path: str) -> list[str]:
        fs, inner, p = self._at(path, True)
        try:
            names = fs.listdir(inner)
        except OSError as e:
            raise _err(e.errno, path) from None
        extra = self._mounts_below(p)
        if extra:
            seen = set(names)
            names.extend(n for n in extra if n not in seen)
        return names

    def scandir(self, path: str) -> Iterator[DirEntry]:
        fs, inner, p = self._at(path, True)
        try:
            entries = list(fs.scandir(inner))
        except OSError as e:
            raise _err(e.errno, path) from None
        extra = self._mounts_below(p)
        if extra:
            entries = [e for e in entries if e.name not in extra]
            for n in extra:
                try:
                    entries.append(DirEntry(n, self.mounts[join(p, n)].stat("/").st_mode))
                except OSError:
                    continue
        return iter(entries)

    def readlink(self, path: str) -> str:
        return self._call(path, "readlink", follow=False)

    def _lstat_mode(self, path: str) -> int | None:
        try:
            return self.stat(path, False).st_mode
        except (OSError, ValueError):
            return None

    def realpath(self, path: str) -> str:
        return realpath_with(path, self._lstat_mode, self.readlink)

    def access(self, path: str, mode: int) -> bool:
        try:
            fs, inner, _ = self._at(path, True)
        except OSError:
            return False
        return fs.access(inner, mode)

    def real_path(self, path: str) -> str | None:
        try:
            fs, inner, _ = self._at(path, True)
        except OSError:
            return None
        return fs.real_path(inner)

    # ------------------------------------------------------------------ mutations
    def open(self, path: str, mode: str = "rb", perm: int = 0o644) -> BinaryIO:
        excl = "x" in mode
        writing = any(c in mode for c in "wax+")
        fs, inner, p = self._at(path, not excl)
        j = self._journal
        if writing and j is not None:
            j.note(p)
            if fs is self.root and hasattr(getattr(fs, "upper", None), "_note_links"):
                fs.upper._note_links(j, p)  # the other names of a hard-linked file change too
        try:
            f = fs.open(inner, mode, perm)
        except OSError as e:
            raise _err(e.errno, path) from None
        if writing and hasattr(f, "track"):
            f.track = (self, p, False)
        return f

    def mkdir(self, path: str, mode: int = 0o755) -> None:
        self._jnote(path)
        self._call(path, "mkdir", mode, follow=False)

    def rmdir(self, path: str) -> None:
        p = self._resolve(path, False)
        if p in self.mounts or p == "/":
            raise _err(errno.EBUSY, path)
        self._jnote(path)
        self._call(path, "rmdir", follow=False)

    def unlink(self, path: str) -> None:
        p = self._resolve(path, False)
        if p in self.mounts:
            raise _err(errno.EISDIR, path)
        self._jnote(path)
        self._call(path, "unlink", follow=False)

    def mkfifo(self, path: str, mode: int = 0o644) -> None:
        self._jnote(path)
        fs, inner, _ = self._at(path, False)
        mk = getattr(fs, "mkfifo", None)
        if mk is None:
            raise _err(errno.EPERM, path)
        try:
            mk(inner, mode)
        except OSError as e:
            raise _err(e.errno, path) from None

    def symlink(self, target: str, path: str) -> None:
        self._jnote(path)
        fs, inner, _ = self._at(path, False)
        try:
            fs.symlink(target, inner)
        except OSError as e:
            raise _err(e.errno, path) from None

    def _two(self, src: str, dst: str, op: str) -> None:
        sfs, sin, sp = self._at(src, False)
        dfs, din, dp = self._at(dst, False)
        if sp in self.mounts or dp in self.mounts:
            raise _err(errno.EBUSY, src, None)
        if sfs is not dfs:
            # the kernel checks existence of the source before the mount crossing
            sfs.stat(sin, follow_symlinks=False)
            raise _err(errno.EXDEV, src, dst)
        j = self._journal
        if j is not None:
            if op == "rename":
                j.note_move(sp, dp)
            else:
                j.note(dp)
        try:
            getattr(sfs, op)(sin, din)
        except OSError as e:
            raise _err(e.errno, src, dst) from None

    def rename(self, src: str, dst: str) -> None:
        self._two(src, dst, "rename")

    def link(self, src: str, dst: str) -> None:
        self._two(src, dst, "link")

    def chmod(self, path: str, mode: int, follow_symlinks: bool = True) -> None:
        self._jnote(path, follow_symlinks)
        self._call(path, "chmod", mode, follow=follow_symlinks, follow_symlinks=False)

    def chown(self, path: str, uid: int, gid: int, follow_symlinks: bool = True) -> None:
        self._jnote(path, follow_symlinks)
        self._call(path, "chown", uid, gid, follow=follow_symlinks, follow_symlinks=False)

    def utime(self, path: str, times: tuple[float, float] | None = None, follow_symlinks: bool = True) -> None:
        self._jnote(path, follow_symlinks)
        self._call(path, "utime", times, follow=follow_symlinks, follow_symlinks=False)

    def truncate(self, path: str, length: int) -> None:
        self._jnote(path, True)
        self._call(path, "truncate", length)

