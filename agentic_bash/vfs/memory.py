"""MemoryFS: an in-memory POSIX tree of inodes behind one re-entrant lock."""

# Semantics follow Linux (tmpfs) as seen through Python's ``os``/``open``: every error is an
# OSError with the errno Linux gives, checked by tests/vfs/test_differential.py.
# Permission checks use the owner bits of the mode only: the sandbox user owns everything it
# sees (there is no second user inside the sandbox); ``check_permissions=False`` disables them.
# Overlay bookkeeping (whiteouts, opaque flags) lives on directory inodes and is invisible to
# the FileSystem API; OverlayFS and oci.py use the underscore helpers.

from __future__ import annotations

import errno
import io
import itertools
import os
import stat as _stat
import threading
import time
from typing import Any, Callable, Iterator

from ..limits import charge_read, check_size
from ..shell import coop as _coop
from .base import DirEntry, StatResult

__all__ = ["MemoryFS"]

S_IFDIR = _stat.S_IFDIR
S_IFREG = _stat.S_IFREG
S_IFLNK = _stat.S_IFLNK
S_IFCHR = _stat.S_IFCHR
# Linux's numbers of the character devices the virtual /dev has (ls -l, stat %t/%T, file)
_RDEV = {"null": os.makedev(1, 3), "zero": os.makedev(1, 5), "full": os.makedev(1, 7),
         "random": os.makedev(1, 8), "urandom": os.makedev(1, 9), "tty": os.makedev(5, 0)}
S_IFIFO = _stat.S_IFIFO
S_IFMT = 0o170000

MAXSYMLINKS = 40  # Linux's limit on symlink hops in one lookup
_time = time.time
_DEV_COUNTER = itertools.count(0x100)
_INO = itertools.count(2)


def _err(code: int, path: str | None = None, path2: str | None = None) -> OSError:
    if path2 is not None:
        return OSError(code, os.strerror(code), path, None, path2)
    return OSError(code, os.strerror(code), path)


class _Inode:
    __slots__ = ("ino", "mode", "uid", "gid", "mtime", "atime", "ctime", "nlink",
                 "data", "children", "target", "dev", "wh", "opaque", "pipe")

    def __init__(self, mode: int, uid: int, gid: int, now: float) -> None:
        self.ino = next(_INO)
        self.mode = mode
        self.uid = uid
        self.gid = gid
        self.mtime = self.atime = self.ctime = now
        self.nlink = 1
        self.data: bytearray | None = None
        self.children: dict[str, _Inode] | None = None
        self.target: str | None = None
        self.dev: str | None = None          # device kind for S_IFCHR: null zero urandom random tty
        self.wh: set[str] | None = None      # overlay whiteouts (names) in this directory
        self.opaque = False                  # overlay: lower layers hidden below this directory
        self.pipe: _Pipe | None = None       # FIFO state, created on first open

    @property
    def fmt(self) -> int:
        return self.mode & S_IFMT


class MemoryFS:
    """A thread-safe in-memory filesystem implementing the FileSystem protocol.

    ``max_bytes`` caps the bytes of regular-file content (``ENOSPC``), ``max_files`` the
    number of inodes (``EDQUOT``).
    """

    def __init__(self, *, max_bytes: int | None = None, max_files: int | None = None,
                 uid: int = 1000, gid: int = 1000, check_permissions: bool = True,
                 root_mode: int = 0o755) -> None:
        self._lock = threading.RLock()
        self.uid = uid
        self.gid = gid
        self.max_bytes = max_bytes
        self.max_files = max_files
        self.check_permissions = check_permissions
        self.wait_hook: Callable[[], None] | None = None
        """Called every 50 ms while a FIFO open/read/write waits; may raise to cancel (Budget.check)."""
        self.fifo_timeout = 3600.0
        """Longest a FIFO operation waits before failing with EINTR (no hook cancelled it)."""
        self.dev = next(_DEV_COUNTER)
        self.bytes_used = 0
        self.files_used = 1
        self.generation = 0       # bumped on every mutation; changes.py compares it
        self._journal: Any = None  # changes.Journal while a run is being tracked
        self._root = _Inode(S_IFDIR | root_mode, uid, gid, time.time())
        self._root.children = {}
        self._root.nlink = 2

    # ------------------------------------------------------------------ internals
    def _new(self, mode: int, uid: int | None = None, gid: int | None = None) -> _Inode:
        if self.max_files is not None and self.files_used >= self.max_files:
            raise _err(errno.EDQUOT)
        self.files_used += 1
        return _Inode(mode, self.uid if uid is None else uid, self.gid if gid is None else gid, _time())

    def _charge(self, delta: int, path: str | None = None) -> None:
        if delta > 0 and self.max_bytes is not None and self.bytes_used + delta > self.max_bytes:
            raise _err(errno.ENOSPC, path)
        self.bytes_used += delta

    def _drop(self, node: _Inode) -> None:
        node.nlink -= 1
        if node.mode & S_IFMT == S_IFDIR or node.nlink <= 0:
            self.files_used -= 1
            if node.data is not None:
                self.bytes_used -= len(node.data)

    def _changed(self, path: str) -> None:
        self.generation += 1

    def _jnote(self, path: str, follow: bool = False, move_to: str | None = None,
               content: bool = False) -> None:
        """Tell the change journal (if any) that ``path`` is about to change."""
        j = self._journal
        if j is None:
            return
        from .paths import join, split

        if follow:
            canon = self.realpath(path)
        else:
            head, tail = split(path)
            canon = join(self.realpath(head), tail) if tail else "/"
        if move_to is not None:
            head, tail = split(move_to)
            j.note_move(canon, join(self.realpath(head), tail) if tail else "/")
        else:
            j.note(canon)
            if content:
                self._note_links(j, canon)

    def _note_links(self, j: Any, path: str) -> None:
        """A content change through one hard link changes every name of the file."""
        try:
            node = self._get(path, False)
        except OSError:
            return
        if node.nlink > 1 and node.mode & S_IFMT == S_IFREG:
            for p in self._paths_of(node):
                j.note(p)

    def _paths_of(self, target: _Inode) -> list[str]:
        """Every path naming ``target`` (a walk of the tree: only for files with several links)."""
        out: list[str] = []
        stack = [("", self._root)]
        while stack:
            prefix, node = stack.pop()
            for n, c in node.children.items():  # type: ignore[union-attr]
                if c is target:
                    out.append(prefix + "/" + n)
                elif c.mode & S_IFMT == S_IFDIR:
                    stack.append((prefix + "/" + n, c))
        return out

    def _perm(self, node: _Inode, bit: int, path: str) -> None:
        # bit: 4 read, 2 write, 1 search/execute; owner bits only (see module comment)
        if self.check_permissions and (node.mode >> 6) & bit != bit:
            raise _err(errno.EACCES, path)

    def _walk(self, path: str, follow: bool = True,
              create: bool = False) -> tuple[list[_Inode], str | None, _Inode | None]:
        """Resolve ``path``: (stack of directory inodes down to the parent, last name, node or None).

        ``node`` is None when only the last component is missing. Intermediate symlinks are
        always followed; the last one only with ``follow``.
        """
        root = self._root
        stack = [root]
        comps = [c for c in reversed(path.split("/")) if c and c != "."]
        hops = 0
        perm = self.check_permissions
        while comps:
            c = comps.pop()
            if c == ".":
                continue  # only from a symlink target ending in "/" or "/.": demands a directory
            if c == "..":
                if len(stack) > 1:
                    stack.pop()
                continue
            cur = stack[-1]
            if perm and not (cur.mode >> 6) & 1:
                raise _err(errno.EACCES, path)
            if create and comps == ["."]:
                raise _err(errno.EISDIR, path)  # O_CREAT on "name/" (from a symlink target)
            child = cur.children.get(c)  # type: ignore[union-attr]
            if child is None:
                if comps:
                    raise _err(errno.ENOENT, path)
                return stack, c, None
            fmt = child.mode & S_IFMT
            if fmt == S_IFLNK and (comps or follow):
                hops += 1
                if hops > MAXSYMLINKS:
                    raise _err(errno.ELOOP, path)
                t = child.target or ""
                if t.startswith("/"):
                    del stack[1:]
                if t.endswith(("/", "/.", "/..")) or t in (".", ".."):
                    comps.append(".")
                comps.extend(x for x in reversed(t.split("/")) if x and x != ".")
                if not comps:
                    break
                continue
            if not comps:
                return stack, c, child
            if fmt != S_IFDIR:
                raise _err(errno.ENOTDIR, path)
            stack.append(child)
        # ended on a directory reached by "..", a symlink to "/", or the root itself
        node = stack.pop()
        return (stack or [node]), None, node

    def _get(self, path: str, follow: bool = True) -> _Inode:
        _, _, node = self._walk(path, follow)
        if node is None:
            raise _err(errno.ENOENT, path)
        return node

    def _parent_for_create(self, path: str, follow: bool = False) -> tuple[_Inode, str, _Inode | None]:
        stack, name, node = self._walk(path, follow)
        if name is None:
            # "/" or a path ending on ".." after symlinks: it exists and has no creatable name
            raise _err(errno.EEXIST, path)
        parent = stack[-1]
        return parent, name, node

    @staticmethod
    def _stat_of(node: _Inode, dev: int) -> StatResult:
        fmt = node.mode & S_IFMT
        if fmt == S_IFREG:
            size = len(node.data)  # type: ignore[arg-type]
        elif fmt == S_IFDIR:
            size = 4096
        elif fmt == S_IFLNK:
            size = len((node.target or "").encode("utf-8", "surrogateescape"))
        else:
            size = 0
            if fmt == S_IFCHR:
                return StatResult(node.mode, size, node.mtime, node.atime, node.ctime, node.ino, dev,
                                  node.nlink, node.uid, node.gid, _RDEV.get(node.dev or "", 0))
        return StatResult(node.mode, size, node.mtime, node.atime, node.ctime, node.ino, dev,
                          node.nlink, node.uid, node.gid)

    # ------------------------------------------------------------------ queries
    def stat(self, path: str, follow_symlinks: bool = True) -> StatResult:
        with self._lock:
            return self._stat_of(self._get(path, follow_symlinks), self.dev)

    def lstat(self, path: str) -> StatResult:
        return self.stat(path, follow_symlinks=False)

    def exists(self, path: str) -> bool:
        try:
            with self._lock:
                self._get(path, True)
            return True
        except (OSError, ValueError):
            return False

    def lexists(self, path: str) -> bool:
        try:
            with self._lock:
                self._get(path, False)
            return True
        except (OSError, ValueError):
            return False

    def isdir(self, path: str) -> bool:
        try:
            with self._lock:
                return self._get(path, True).fmt == S_IFDIR
        except OSError:
            return False

    def isfile(self, path: str) -> bool:
        try:
            with self._lock:
                return self._get(path, True).fmt == S_IFREG
        except OSError:
            return False

    def _dir(self, path: str) -> _Inode:
        node = self._get(path, True)
        if node.mode & S_IFMT != S_IFDIR:
            raise _err(errno.ENOTDIR, path)
        self._perm(node, 4, path)
        return node

    def listdir(self, path: str) -> list[str]:
        with self._lock:
            return list(self._dir(path).children)  # type: ignore[arg-type]

    def scandir(self, path: str) -> Iterator[DirEntry]:
        with self._lock:
            items = [DirEntry(n, c.mode) for n, c in self._dir(path).children.items()]  # type: ignore[union-attr]
        return iter(items)

    def readlink(self, path: str) -> str:
        with self._lock:
            node = self._get(path, False)
            if node.mode & S_IFMT != S_IFLNK:
                raise _err(errno.EINVAL, path)
            return node.target or ""

    def realpath(self, path: str) -> str:
        from .paths import realpath_with

        with self._lock:
            return realpath_with(path, self._lstat_mode, self.readlink)

    def _lstat_mode(self, path: str) -> int | None:
        try:
            return self._get(path, False).mode
        except OSError:
            return None

    def access(self, path: str, mode: int) -> bool:
        try:
            with self._lock:
                node = self._get(path, True)
        except OSError:
            return False
        if mode == os.F_OK or not self.check_permissions:
            return True
        bits = (node.mode >> 6) & 7
        want = (4 if mode & os.R_OK else 0) | (2 if mode & os.W_OK else 0) | (1 if mode & os.X_OK else 0)
        return bits & want == want

    def real_path(self, path: str) -> str | None:
        return None

    # ------------------------------------------------------------------ mutations
    def mkdir(self, path: str, mode: int = 0o755) -> None:
        with self._lock:
            self._jnote(path)
            parent, name, node = self._parent_for_create(path)
            if node is not None:
                raise _err(errno.EEXIST, path)
            self._perm(parent, 3, path)
            self._mkdir_in(parent, name, mode)  # type: ignore[arg-type]

    def _mkdir_in(self, parent: _Inode, name: str, mode: int) -> _Inode:
        """mkdir() of the missing ``name`` in ``parent`` (checks done); the new inode."""
        d = self._new(S_IFDIR | (mode & 0o7777))
        d.children = {}
        d.nlink = 2
        self._link_in(parent, name, d)
        parent.nlink += 1
        self.generation += 1
        return d

    def _link_in(self, parent: _Inode, name: str, node: _Inode) -> None:
        parent.children[name] = node  # type: ignore[index]
        if parent.wh and name in parent.wh:
            parent.wh.discard(name)
        parent.mtime = parent.ctime = time.time()

    def rmdir(self, path: str) -> None:
        with self._lock:
            self._jnote(path)
            stack, name, node = self._walk(path, False)
            if node is None:
                raise _err(errno.ENOENT, path)
            if name is None:
                raise _err(errno.EBUSY, path)
            if node.mode & S_IFMT != S_IFDIR:
                raise _err(errno.ENOTDIR, path)
            if node.children:
                raise _err(errno.ENOTEMPTY, path)
            parent = stack[-1]
            self._perm(parent, 3, path)
            self._rmdir_node(parent, name, node)

    def _rmdir_node(self, parent: _Inode, name: str, node: _Inode) -> None:
        """rmdir() of the empty directory ``node``, entry ``name`` of ``parent`` (checks done)."""
        del parent.children[name]  # type: ignore[union-attr]
        parent.nlink -= 1
        parent.mtime = parent.ctime = time.time()
        self._drop(node)
        self.generation += 1

    def unlink(self, path: str) -> None:
        with self._lock:
            self._jnote(path)
            stack, name, node = self._walk(path, False)
            if node is None:
                raise _err(errno.ENOENT, path)
            if node.mode & S_IFMT == S_IFDIR:
                raise _err(errno.EISDIR, path)
            parent = stack[-1]
            self._perm(parent, 3, path)
            self._unlink_node(parent, name, node)  # type: ignore[arg-type]

    def _unlink_node(self, parent: _Inode, name: str, node: _Inode) -> None:
        """unlink() of the non-directory ``node``, entry ``name`` of ``parent`` (checks done)."""
        del parent.children[name]  # type: ignore[union-attr]
        parent.mtime = parent.ctime = node.ctime = time.time()
        self._drop(node)
        self.generation += 1

    def rename(self, src: str, dst: str) -> None:
        with self._lock:
            self._jnote(src, move_to=dst)
            sstack, sname, snode = self._walk(src, False)
            dstack, dname, dnode = self._walk(dst, False)  # both parents resolve before ENOENT
            if snode is None:
                raise _err(errno.ENOENT, src, dst)
            if sname is None:
                raise _err(errno.EBUSY, src, dst)
            if dname is None:
                raise _err(errno.EBUSY, src, dst)
            sparent, dparent = sstack[-1], dstack[-1]
            if snode.mode & S_IFMT == S_IFDIR and (snode in dstack):
                raise _err(errno.EINVAL, src, dst)
            if dnode is snode:
                return  # same file (also hard links to one inode): rename does nothing
            if dnode is not None:
                if snode.mode & S_IFMT == S_IFDIR:
                    if dnode.mode & S_IFMT != S_IFDIR:
                        raise _err(errno.ENOTDIR, src, dst)
                    if dnode.children:
                        raise _err(errno.ENOTEMPTY, src, dst)
                elif dnode.mode & S_IFMT == S_IFDIR:
                    raise _err(errno.EISDIR, src, dst)
            self._perm(sparent, 3, src)
            self._perm(dparent, 3, dst)
            now = time.time()
            del sparent.children[sname]  # type: ignore[union-attr]
            if dnode is not None:
                del dparent.children[dname]  # type: ignore[union-attr]
                if dnode.mode & S_IFMT == S_IFDIR:
                    dparent.nlink -= 1
                self._drop(dnode)
            self._link_in(dparent, dname, snode)
            if snode.mode & S_IFMT == S_IFDIR:
                sparent.nlink -= 1
                dparent.nlink += 1
            sparent.mtime = sparent.ctime = now
            snode.ctime = now
            self._changed(src)
            self._changed(dst)

    def symlink(self, target: str, path: str) -> None:
        with self._lock:
            self._jnote(path)
            parent, name, node = self._parent_for_create(path)
            if node is not None:
                raise _err(errno.EEXIST, path)
            self._perm(parent, 3, path)
            n = self._new(S_IFLNK | 0o777)
            n.target = target
            self._link_in(parent, name, n)
            self._changed(path)

    def link(self, src: str, dst: str) -> None:
        with self._lock:
            self._jnote(dst)
            snode = self._get(src, False)
            parent, name, dnode = self._parent_for_create(dst)
            if dnode is not None:
                raise _err(errno.EEXIST, src, dst)
            if snode.mode & S_IFMT == S_IFDIR:
                raise _err(errno.EPERM, src, dst)
            self._perm(parent, 3, dst)
            snode.nlink += 1
            snode.ctime = time.time()
            self._link_in(parent, name, snode)
            self._changed(dst)

    def chmod(self, path: str, mode: int, follow_symlinks: bool = True) -> None:
        with self._lock:
            self._jnote(path, follow_symlinks, content=True)
            node = self._get(path, follow_symlinks)
            if node.mode & S_IFMT == S_IFLNK:
                return  # Linux has no lchmod; the mode of a symlink is always 0777
            node.mode = node.fmt | (mode & 0o7777)
            node.ctime = time.time()
            self._changed(path)

    def chown(self, path: str, uid: int, gid: int, follow_symlinks: bool = True) -> None:
        with self._lock:
            self._jnote(path, follow_symlinks)
            node = self._get(path, follow_symlinks)
            if uid != -1:
                node.uid = uid
            if gid != -1:
                node.gid = gid
            node.ctime = time.time()
            self._changed(path)

    def utime(self, path: str, times: tuple[float, float] | None = None, follow_symlinks: bool = True) -> None:
        with self._lock:
            self._jnote(path, follow_symlinks)
            node = self._get(path, follow_symlinks)
            now = time.time()
            if times is None:
                node.atime = node.mtime = now
            else:
                node.atime, node.mtime = float(times[0]), float(times[1])
            node.ctime = now
            self._changed(path)

    def truncate(self, path: str, length: int) -> None:
        with self._lock:
            self._jnote(path, True, content=True)
            if length < 0:
                raise _err(errno.EINVAL, path)
            node = self._get(path, True)
            if node.mode & S_IFMT == S_IFDIR:
                raise _err(errno.EISDIR, path)
            if node.mode & S_IFMT != S_IFREG:
                return
            self._perm(node, 2, path)
            self._resize(node, length, path)
            node.mtime = node.ctime = time.time()
            self._changed(path)

    def _resize(self, node: _Inode, length: int, path: str | None) -> None:
        data = node.data
        old = len(data)  # type: ignore[arg-type]
        if length > old:
            self._charge(length - old, path)
            data.extend(bytes(length - old))  # type: ignore[union-attr]
        elif length < old:
            del data[length:]  # type: ignore[index]
            self.bytes_used -= old - length

    def mkfifo(self, path: str, mode: int = 0o644) -> None:
        """A named pipe with Linux semantics (blocking opens, EOF after the last writer, EPIPE)."""
        self._mknode(path, S_IFIFO | (mode & 0o7777), None)

    def mknod_device(self, path: str, kind: str, mode: int = 0o666) -> None:
        """A character device handled in memory: ``null``, ``zero``, ``full`` (reads zeros,
        writes fail with ENOSPC), ``urandom``, ``random``, ``tty``."""
        self._mknode(path, S_IFCHR | (mode & 0o7777), kind)

    def _mknode(self, path: str, mode: int, dev: str | None) -> None:
        with self._lock:
            self._jnote(path)
            parent, name, node = self._parent_for_create(path)
            if node is not None:
                raise _err(errno.EEXIST, path)
            n = self._new(mode)
            n.dev = dev
            self._link_in(parent, name, n)
            self._changed(path)

    # ------------------------------------------------------------------ open
    def open(self, path: str, mode: str = "rb", perm: int = 0o644) -> _MemFile:
        flags = _open_flags(mode)
        readable, writable, create, trunc, excl, append = flags
        with self._lock:
            noted = self._journal if writable else None
            if noted is not None:  # noted here, so the file's first write need not
                self._jnote(path, not excl, content=True)
            if excl:
                # O_CREAT|O_EXCL never follows a final symlink: a dangling one is EEXIST
                stack, name, node = self._walk(path, False)
                if node is not None:
                    raise _err(errno.EEXIST, path)
            else:
                stack, name, node = self._walk(path, True, create)
            if node is None:
                if not create:
                    raise _err(errno.ENOENT, path)
                return self._create_file(stack[-1], name, path, mode, perm, flags,  # type: ignore[arg-type]
                                         True, noted)
            if node.mode & S_IFMT != S_IFIFO:
                return self._open_node(node, path, mode, flags, True, noted)
            if readable:
                self._perm(node, 4, path)
            if writable:
                self._perm(node, 2, path)
            if node.pipe is None:
                node.pipe = _Pipe()
            pipe = node.pipe
        # outside the lock: opening a FIFO waits for the other end
        return _FifoFile(self, pipe, path, mode, readable, writable)

    def _create_file(self, parent: _Inode, name: str, path: str, mode: str, perm: int,
                     flags: tuple[bool, ...], track: Any = True, noted: Any = None) -> _MemFile:
        """open() of a missing ``name`` in directory ``parent`` (already searched): O_CREAT."""
        if self.check_permissions and parent.mode & 0o300 != 0o300:
            raise _err(errno.EACCES, path)
        node = self._new(S_IFREG | (perm & 0o7777))
        node.data = bytearray()
        parent.children[name] = node  # type: ignore[index]
        if parent.wh and name in parent.wh:
            parent.wh.discard(name)
        parent.mtime = parent.ctime = node.mtime  # one instant, as Linux stamps both
        self.generation += 1
        return _MemFile(self, node, path, mode, flags[0], flags[1], flags[5], track, noted)

    def _open_node(self, node: _Inode, path: str, mode: str, flags: tuple[bool, ...],
                   track: Any = True, noted: Any = None) -> _MemFile:
        """open() of the existing non-FIFO ``node`` (its directories already searched)."""
        readable, writable, _, trunc, _, append = flags
        fmt = node.mode & S_IFMT
        if fmt == S_IFDIR:
            raise _err(errno.EISDIR, path)
        if readable:
            self._perm(node, 4, path)
        if writable:
            self._perm(node, 2, path)
        if fmt == S_IFREG:
            if trunc:  # O_TRUNC stamps mtime even on an empty file, like Linux
                self.bytes_used -= len(node.data)  # type: ignore[arg-type]
                node.data = bytearray()
                node.mtime = node.ctime = time.time()
                self.generation += 1
            elif writable:
                self.generation += 1
        return _MemFile(self, node, path, mode, readable, writable, append, track, noted)


_OPEN_FLAGS: dict[str, tuple[bool, bool, bool, bool, bool, bool]] = {}


def _open_flags(mode: str) -> tuple[bool, bool, bool, bool, bool, bool]:
    """(readable, writable, create, trunc, excl, append) of an open() mode string."""
    r = _OPEN_FLAGS.get(mode)
    if r is not None:
        return r
    flags = set(mode) - {"b", "t"}
    plus = "+" in flags
    if "r" in flags:
        r = (True, plus, False, False, False, False)
    elif "w" in flags:
        r = (plus, True, True, True, False, False)
    elif "a" in flags:
        r = (plus, True, True, False, False, True)
    elif "x" in flags:
        r = (plus, True, True, False, True, False)
    else:
        raise ValueError(f"invalid mode: {mode!r}")
    if len(_OPEN_FLAGS) < 256:
        _OPEN_FLAGS[mode] = r
    return r


for _m in ("rb", "wb", "ab", "r+b", "w+b", "a+b", "xb", "r", "w", "a"):
    _open_flags(_m)


DEV_CHUNK = 1 << 20  # most bytes one read of an endless device returns
_ENDLESS = frozenset(("zero", "full", "urandom", "random"))


class _MemFile(io.RawIOBase):
    """A binary file object on a MemoryFS inode; reads and writes go straight to the inode."""

    # slots: an io.RawIOBase instance stores dict attributes slowly (one is made per open)
    __slots__ = ("_fs", "_node", "_pos", "_r", "_w", "_append", "_dev", "name", "mode",
                 "track", "_noted")

    def __init__(self, fs: MemoryFS, node: _Inode, path: str, mode: str,
                 readable: bool, writable: bool, append: bool, track: Any = True,
                 noted: Any = None) -> None:
        self._fs = fs
        self._node = node
        self._pos = 0
        self._r = readable
        self._w = writable
        self._append = append
        fmt = node.mode & S_IFMT
        self._dev = None if fmt == S_IFREG else (node.dev if fmt == S_IFCHR else "null")
        self.name = path
        self.mode = mode
        # (filesystem, path) whose change journal a write notes: set by the outermost layer
        # that opened us, so a file opened in an earlier run (exec 3>f) is still tracked.
        # ``track=True`` is (fs, path, True): True, the path may hold symlinks.
        self.track: tuple[Any, str, bool] | None = (fs, path, True) if track is True else track
        # the journal that already holds this file's prior state (the opener noted it)
        self._noted: Any = noted

    # -- capabilities
    def readable(self) -> bool:
        return self._r

    def writable(self) -> bool:
        return self._w

    def seekable(self) -> bool:
        return self._dev is None

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise io.UnsupportedOperation("MemoryFS files have no file descriptor")

    def _check(self, want_read: bool) -> None:
        if self.closed:
            raise ValueError("I/O operation on closed file.")
        if want_read and not self._r:
            raise io.UnsupportedOperation("read")
        if not want_read and not self._w:
            raise io.UnsupportedOperation("write")

    # -- reading
    def read(self, size: int | None = -1) -> bytes:
        self._check(True)
        dev = self._dev
        if dev is not None:
            return self._dev_read(-1 if size is None else size)
        with self._fs._lock:
            data = self._node.data
            pos = self._pos
            n = len(data)  # type: ignore[arg-type]
            if pos >= n:
                return b""
            end = n if size is None or size < 0 else min(n, pos + size)
            # one copy (slicing the bytearray first made a second one); the view is let go
            # at once, so the inode's bytearray can grow again
            mv = memoryview(data)  # type: ignore[arg-type]
            try:
                out = mv[pos:end].tobytes()
            finally:
                mv.release()
            self._pos = end
            return out

    def readall(self) -> bytes:
        return self.read(-1)

    def read1(self, size: int = -1) -> bytes:
        return self.read(size)

    def _dev_read(self, size: int, line: bool = False) -> bytes:
        """A read of a character device. ``zero``, ``full`` and ``urandom`` never end, as on
        Linux: a read of everything (or of a line of /dev/zero) goes on, charged to the run's
        budget, until max_variable_bytes or the deadline stops it; one read returns at most
        DEV_CHUNK bytes (a short read, which every reader handles)."""
        dev = self._dev
        if dev not in _ENDLESS:
            return b""
        rand = dev != "zero" and dev != "full"
        if size >= 0:
            n = min(size, DEV_CHUNK)
            data = os.urandom(n) if rand else bytes(n)
            if line and rand:
                k = data.find(b"\n")
                if k >= 0:
                    data = data[:k + 1]
            charge_read(len(data))
            return data
        parts = []
        total = 0
        while True:
            data = os.urandom(65536) if rand else bytes(DEV_CHUNK)
            if line and rand:
                k = data.find(b"\n")
                if k >= 0:
                    parts.append(data[:k + 1])
                    return b"".join(parts)
            total += len(data)
            charge_read(len(data))
            check_size(total, f"read of {self.name}")
            parts.append(data)

    def readinto(self, b: Any) -> int:
        mv = memoryview(b).cast("B")
        data = self.read(len(mv))
        n = len(data)
        mv[:n] = data
        return n

    def readline(self, size: int | None = -1) -> bytes:
        self._check(True)
        if self._dev is not None:
            return self._dev_read(-1 if size is None else size, True)
        with self._fs._lock:
            data = self._node.data
            pos = self._pos
            n = len(data)  # type: ignore[arg-type]
            if pos >= n:
                return b""
            end = data.find(b"\n", pos)  # type: ignore[union-attr]
            end = n if end < 0 else end + 1
            if size is not None and size >= 0:
                end = min(end, pos + size)
            out = bytes(data[pos:end])  # type: ignore[index]
            self._pos = end
            return out

    def readlines(self, hint: int = -1) -> list[bytes]:
        out = []
        total = 0
        while True:
            line = self.readline()
            if not line:
                return out
            out.append(line)
            total += len(line)
            if 0 < hint <= total:
                return out

    def __iter__(self) -> _MemFile:
        return self

    def __next__(self) -> bytes:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    # -- writing
    def write(self, b: Any) -> int:
        if self.closed or not self._w:
            self._check(False)
        if self._dev is not None:
            if self._dev == "full":
                raise OSError(errno.ENOSPC, "No space left on device")
            return len(memoryview(b))
        fs = self._fs
        with fs._lock:
            t = self.track
            if t is not None:
                j = t[0]._journal
                if j is not None and self._noted is not j:
                    self._noted = j
                    j.note(t[0].realpath(t[1]) if t[2] else t[1])
                    if self._node.nlink > 1:  # the file's other names change too
                        for p in fs._paths_of(self._node):
                            j.note(p)
            node = self._node
            data = node.data
            if type(b) is not bytes:
                b = memoryview(b).cast("B")
            n = len(b)
            size = len(data)  # type: ignore[arg-type]
            pos = size if self._append else self._pos
            end = pos + n
            if end > size:
                if fs.max_bytes is not None:
                    fs._charge(end - size, self.name)
                else:
                    fs.bytes_used += end - size
                if pos > size:
                    data.extend(bytes(pos - size))  # type: ignore[union-attr]
            data[pos:end] = b  # type: ignore[index]
            self._pos = end
            node.mtime = node.ctime = _time()
            fs.generation += 1
            return n

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def truncate(self, size: int | None = None) -> int:
        self._check(False)
        if self._dev is not None:
            return 0
        with self._fs._lock:
            if size is None:
                size = self._pos
            if size < 0:
                raise _err(errno.EINVAL, self.name)
            self._fs._resize(self._node, size, self.name)
            self._node.mtime = self._node.ctime = time.time()
            self._fs.generation += 1
            return size

    def flush(self) -> None:
        if self.closed:
            raise ValueError("I/O operation on closed file.")

    # -- positioning
    def seek(self, offset: int, whence: int = 0) -> int:
        if self.closed:
            raise ValueError("I/O operation on closed file.")
        if self._dev is not None:
            return 0
        if whence == 0:
            pos = offset
        elif whence == 1:
            pos = self._pos + offset
        elif whence == 2:
            with self._fs._lock:
                pos = len(self._node.data) + offset  # type: ignore[arg-type]
        else:
            raise ValueError(f"invalid whence ({whence})")
        if pos < 0:
            raise _err(errno.EINVAL, self.name)
        self._pos = pos
        return pos

    def tell(self) -> int:
        if self.closed:
            raise ValueError("I/O operation on closed file.")
        return self._pos

    def identity(self) -> tuple[int, int] | None:
        """(inode id, size) of a regular file, None for a device: the fstat() a command may compare."""
        if self._dev is not None:
            return None
        with self._fs._lock:
            return id(self._node), len(self._node.data)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"<MemoryFS file {self.name!r} mode={self.mode!r}>"


PIPE_BUF_MAX = 65536  # Linux's default pipe capacity


class _Pipe:
    """The kernel side of a FIFO: a bounded buffer, open counts and wake-ups."""

    __slots__ = ("cond", "buf", "readers", "writers", "r_opens", "w_opens")

    def __init__(self) -> None:
        self.cond = threading.Condition(threading.Lock())
        self.buf = bytearray()
        self.readers = 0
        self.writers = 0
        self.r_opens = 0   # generation counters: an end that opened and closed again still wakes us
        self.w_opens = 0


class _FifoFile(io.RawIOBase):
    """One open end of a MemoryFS FIFO."""

    def __init__(self, fs: MemoryFS, pipe: _Pipe, path: str, mode: str, readable: bool, writable: bool) -> None:
        self._fs = fs
        self._p = pipe
        self._r = readable
        self._w = writable
        self.name = path
        self.mode = mode
        p = pipe
        with p.cond:
            if readable:
                p.readers += 1
                p.r_opens += 1
            if writable:
                p.writers += 1
                p.w_opens += 1
            p.cond.notify_all()
        try:
            if readable and not writable:  # O_RDONLY waits for a writer, O_RDWR never waits
                gen = p.w_opens
                self._wait(lambda: p.writers > 0 or p.w_opens != gen)
            elif writable and not readable:
                gen = p.r_opens
                self._wait(lambda: p.readers > 0 or p.r_opens != gen)
        except BaseException:
            self.close()  # releases our end exactly once (__del__ closes again: a no-op)
            raise

    def _wait(self, ready: Callable[[], bool]) -> None:
        fs, p = self._fs, self._p
        deadline = time.monotonic() + fs.fifo_timeout
        with p.cond:
            while not ready():
                if time.monotonic() >= deadline:
                    raise _err(errno.EINTR, self.name)
                if _coop.in_stage():
                    # the other end may be another stage of a greenlet pipeline: let it run
                    p.cond.release()
                    try:
                        _coop.block(ready, time.monotonic() + 0.05)
                    finally:
                        p.cond.acquire()
                else:
                    p.cond.wait(0.05)
                hook = fs.wait_hook
                if hook is not None:
                    p.cond.release()
                    try:
                        hook()
                    finally:
                        p.cond.acquire()

    def _release(self) -> None:
        p = self._p
        with p.cond:
            if self._r:
                p.readers -= 1
            if self._w:
                p.writers -= 1
            if p.readers == 0 and p.writers == 0:
                p.buf.clear()  # a FIFO's contents do not outlive its last opener
            p.cond.notify_all()

    def close(self) -> None:
        if not self.closed:
            self._release()
        super().close()

    def readable(self) -> bool:
        return self._r

    def writable(self) -> bool:
        return self._w

    def seekable(self) -> bool:
        return False

    def fileno(self) -> int:
        raise io.UnsupportedOperation("MemoryFS files have no file descriptor")

    def read(self, size: int | None = -1) -> bytes:
        if not self._r:
            raise io.UnsupportedOperation("read")
        p = self._p
        if size is None or size < 0:
            chunks = []
            total = 0
            while True:
                c = self.read(PIPE_BUF_MAX)
                if not c:
                    return b"".join(chunks)
                chunks.append(c)
                total += len(c)
                charge_read(len(c))
                check_size(total, f"read of {self.name}")
        if size == 0:
            return b""
        self._wait(lambda: bool(p.buf) or p.writers == 0)
        with p.cond:
            out = bytes(p.buf[:size])
            del p.buf[:size]
            p.cond.notify_all()
            return out

    def readall(self) -> bytes:
        return self.read(-1)

    def readinto(self, b: Any) -> int:
        mv = memoryview(b).cast("B")
        data = self.read(len(mv))
        mv[: len(data)] = data
        return len(data)

    def readline(self, size: int | None = -1) -> bytes:
        if not self._r:
            raise io.UnsupportedOperation("read")
        p = self._p
        out = bytearray()
        while size is None or size < 0 or len(out) < size:
            self._wait(lambda: bool(p.buf) or p.writers == 0)
            with p.cond:
                if not p.buf:
                    break
                nl = p.buf.find(b"\n")
                n = len(p.buf) if nl < 0 else nl + 1
                if size is not None and size >= 0:
                    n = min(n, size - len(out))
                out += p.buf[:n]
                del p.buf[:n]
                p.cond.notify_all()
                if nl >= 0 and n == nl + 1:
                    break
            charge_read(n)
            check_size(len(out), f"line of {self.name}")
        return bytes(out)

    def __iter__(self) -> _FifoFile:
        return self

    def __next__(self) -> bytes:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def write(self, b: Any) -> int:
        if not self._w:
            raise io.UnsupportedOperation("write")
        p = self._p
        data = memoryview(b).cast("B")
        done = 0
        while done < len(data):
            self._wait(lambda: len(p.buf) < PIPE_BUF_MAX or p.readers == 0)
            with p.cond:
                if p.readers == 0:
                    raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE), self.name)
                n = min(len(data) - done, PIPE_BUF_MAX - len(p.buf))
                p.buf += data[done: done + n]
                done += n
                p.cond.notify_all()
        return done

    def flush(self) -> None:
        pass
