"""HostFS: a host directory seen as a whole filesystem, every path confined to it by one gate."""

# Security invariant (the gate is ``HostFS._gate``): a sandbox path is resolved component by
# component *by us*, holding an fd (``O_PATH|O_NOFOLLOW|O_DIRECTORY``) for every directory
# reached, never by the kernel on a joined string. ``..`` pops our own stack and stops at the
# root; a symlink is read with ``readlink`` and its target pushed back onto the components,
# an absolute target restarting at the root (chroot semantics); at most 40 hops (ELOOP).
# The final operation runs relative to the parent's fd with no-follow flags, so a symlink
# swapped into an intermediate component after resolution is never followed (opening it
# with O_NOFOLLOW fails); a swap of the *final* component is caught by O_NOFOLLOW /
# ``follow_symlinks=False`` on the operation itself. ``/proc/self/root`` and friends are just
# names inside the root. openat2(RESOLVE_IN_ROOT) would give the same guarantees in one
# syscall; the portable walk is used everywhere so that there is one code path to audit.

from __future__ import annotations

import errno
import io
import os
import stat as _stat
from typing import Any, BinaryIO, Iterator

from .base import DirEntry, StatResult
from .memory import MAXSYMLINKS, _err
from .paths import join, realpath_with

__all__ = ["HostFS"]

_O_PATH = getattr(os, "O_PATH", 0)
_DIR_FLAGS = (_O_PATH or os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_PROC_FD = os.path.isdir("/proc/self/fd")

_MODES = {
    "r": (os.O_RDONLY, False), "r+": (os.O_RDWR, True),
    "w": (os.O_WRONLY | os.O_CREAT | os.O_TRUNC, True), "w+": (os.O_RDWR | os.O_CREAT | os.O_TRUNC, True),
    "a": (os.O_WRONLY | os.O_CREAT | os.O_APPEND, True), "a+": (os.O_RDWR | os.O_CREAT | os.O_APPEND, True),
    "x": (os.O_WRONLY | os.O_CREAT | os.O_EXCL, True), "x+": (os.O_RDWR | os.O_CREAT | os.O_EXCL, True),
}


def _nofollow(g: _Gate) -> int:
    return 0 if g.follow else os.O_NOFOLLOW



class _WriteThrough(io.BufferedWriter):
    """A file writer with nothing held back: each write reaches the file before it returns."""

    def write(self, b: Any) -> int:
        n = super().write(b)
        self.flush()
        return n


class _WriteThroughRandom(io.BufferedRandom):
    """The same for a file opened for reading and writing."""

    def write(self, b: Any) -> int:
        n = super().write(b)
        self.flush()
        return n

class _Gate:
    """The result of resolving a path: a directory fd and the final name in it."""

    __slots__ = ("fd", "name", "path", "follow")

    def __init__(self, fd: int | None, name: str, path: str, follow: bool = False) -> None:
        self.fd = fd          # O_PATH fd of the parent directory (owned; close it); None: cwd-free absolute name
        self.name = name      # final component, "." when the path is a directory reached by ".."/"/"
        self.path = path      # canonical sandbox path (symlinks resolved as the walk did)
        self.follow = follow  # whether the operation itself must follow a final symlink

    def __enter__(self) -> _Gate:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)


def _open_fifo(name: str, dir_fd: int, flags: int, perm: int, writes: bool) -> int:
    """Open a FIFO as bash does, waiting for its peer, but on a thread of its own while the
    caller polls the run's budget: a blocking open() in the runner's thread (`mkfifo p; echo
    x > p` with no reader) could not be stopped, and the host killed the whole sandbox 5 s
    past the deadline. At the deadline the waiting open is released by opening the other end
    for a moment, and the stop is raised on."""
    import threading

    from ..limits import active_budget
    box: dict[str, Any] = {}
    done = threading.Event()

    def opener() -> None:
        try:
            box["fd"] = os.open(name, flags, perm, dir_fd=dir_fd)
        except OSError as e:
            box["err"] = e
        done.set()

    threading.Thread(target=opener, name="fifo-open", daemon=True).start()
    budget = active_budget()
    try:
        while not done.wait(0.01):
            if budget is not None:
                budget.check()
    except BaseException:
        peer = -1
        while not done.is_set():
            # the waiting open counts as a reader (or writer): the other end opens at once
            try:
                peer = os.open(name, (os.O_RDONLY if writes else os.O_WRONLY) | os.O_NONBLOCK | os.O_CLOEXEC,
                               dir_fd=dir_fd)
                break
            except OSError:
                done.wait(0.005)
        done.wait(5)
        if peer >= 0:
            os.close(peer)
        if "fd" in box:
            os.close(box["fd"])
        raise
    if "err" in box:
        raise box["err"]
    return box["fd"]


LEASE_WAIT = 2.0
"""Seconds an open tries again while the file's lease is being broken (see _open_leased)."""


def _open_leased(name: str, flags: int, perm: int, dir_fd: int | None) -> int:
    """os.open with O_NONBLOCK in ``flags``, tried again while it fails with EWOULDBLOCK: a
    file lease being broken (the sandbox's own /proc/meminfo, isolation/procfs.py: pid 1
    rewrites it and lets go within a millisecond or two, and a blocking open would just have
    waited). Bounded: a lease some program holds and never lets go would make a blocking
    open wait the kernel's lease-break-time (45 s) in the runner's thread, past any deadline;
    after LEASE_WAIT this raises EWOULDBLOCK ("Resource temporarily unavailable")."""
    import time
    end = None
    delay = 0.0005
    while True:
        try:
            return os.open(name, flags, perm, dir_fd=dir_fd)
        except BlockingIOError:
            now = time.monotonic()
            if end is None:
                end = now + LEASE_WAIT
            elif now >= end:
                raise
            time.sleep(delay)   # (short: the run's deadline can stop this thread between)
            delay = min(delay * 2, 0.02)


def _await_writer(fd: int) -> None:
    """A FIFO's read end, opened without waiting: wait, as bash's open does, for a writer (its
    data, or its close), polling the run's budget. The end stays open while it waits: closing
    it and opening again in the blocking way lost the data of a writer it had released (the
    writer's open returned, it wrote and closed, and the data went with the pipe; the reader
    then waited for ever: CI, tests/vfs/test_contract.py::test_fifo)."""
    import select

    from ..limits import active_budget
    budget = active_budget()
    p = select.poll()
    p.register(fd, select.POLLIN | select.POLLHUP)
    while not p.poll(10 if budget is not None else None):
        budget.check()  # type: ignore[union-attr]


class HostFS:
    """A host directory as a FileSystem; read-only (EROFS) unless ``writable``."""

    def __init__(self, root: str, writable: bool = False) -> None:
        self.root = os.path.realpath(root)
        if not os.path.isdir(self.root):
            code = errno.ENOTDIR if os.path.exists(self.root) else errno.ENOENT
            raise OSError(code, os.strerror(code), root)
        self.writable = writable
        self._journal = None
        # HostFS("/") (host and sandboxed modes) confines nothing, so the kernel resolves paths
        self._fast = self.root == "/"

    # ------------------------------------------------------------------ the gate
    def _gate(self, path: str, follow: bool = True, create: bool = False) -> _Gate:
        """Resolve ``path`` inside the root; the only way any method reaches the host."""
        if self._fast:
            return _Gate(None, path, path, follow)
        stack = [os.open(self.root, _DIR_FLAGS)]
        names = ["/"]
        comps = [c for c in reversed(path.split("/")) if c and c != "."]
        hops = 0
        try:
            while comps:
                c = comps.pop()
                if c == ".":
                    continue
                if c == "..":
                    if len(stack) > 1:
                        os.close(stack.pop())
                        names.pop()
                    continue
                top = stack[-1]
                if create and comps == ["."]:
                    raise _err(errno.EISDIR, path)  # O_CREAT on "name/" (from a symlink target)
                last = not comps
                try:
                    st = os.stat(c, dir_fd=top, follow_symlinks=False)
                except FileNotFoundError:
                    if not last:
                        raise _err(errno.ENOENT, path) from None
                    return self._done(stack, names, c)
                except NotADirectoryError:
                    raise _err(errno.ENOTDIR, path) from None
                if _stat.S_ISLNK(st.st_mode) and (follow or not last):
                    hops += 1
                    if hops > MAXSYMLINKS:
                        raise _err(errno.ELOOP, path)
                    target = os.readlink(c, dir_fd=top)
                    if target.startswith("/"):
                        while len(stack) > 1:
                            os.close(stack.pop())
                            names.pop()
                    if target.endswith(("/", "/.", "/..")) or target in (".", ".."):
                        comps.append(".")
                    comps.extend(x for x in reversed(target.split("/")) if x and x != ".")
                    continue
                if last:
                    return self._done(stack, names, c)
                if not _stat.S_ISDIR(st.st_mode):
                    raise _err(errno.ENOTDIR, path)
                try:
                    fd = os.open(c, _DIR_FLAGS, dir_fd=top)
                except OSError as e:  # swapped for a symlink or file since the stat: refuse
                    raise _err(e.errno or errno.EACCES, path) from None
                stack.append(fd)
                names.append(c)
            # ended on a directory: address it as "." inside itself
            fd = stack.pop()
            for other in stack:
                os.close(other)
            return _Gate(fd, ".", "/" + "/".join(names[1:]))
        except BaseException:
            for fd in stack:
                os.close(fd)
            raise

    @staticmethod
    def _done(stack: list[int], names: list[str], last: str) -> _Gate:
        fd = stack.pop()
        for other in stack:
            os.close(other)
        return _Gate(fd, last, join("/" + "/".join(names[1:]), last))

    def _ro(self, path: str) -> None:
        if not self.writable:
            raise _err(errno.EROFS, path)

    @staticmethod
    def _lstat_in(g: _Gate) -> os.stat_result | None:
        try:
            return os.stat(g.name, dir_fd=g.fd, follow_symlinks=g.follow)
        except FileNotFoundError:
            return None

    def _jnote(self, path: str) -> None:
        j = self._journal
        if j is not None:
            j.note(os.path.realpath(path) if self._fast else path)

    # ------------------------------------------------------------------ queries
    def stat(self, path: str, follow_symlinks: bool = True) -> StatResult:
        with self._gate(path, follow_symlinks) as g:
            try:
                return StatResult.from_os(os.stat(g.name, dir_fd=g.fd, follow_symlinks=g.follow))
            except OSError as e:
                raise _err(e.errno, path) from None

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

    def _open_dir(self, path: str) -> int:
        with self._gate(path, True) as g:
            try:
                return os.open(g.name, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | _nofollow(g), dir_fd=g.fd)
            except OSError as e:
                if e.errno == errno.ELOOP and not g.follow:  # final component swapped for a symlink
                    raise _err(errno.ENOTDIR, path) from None
                raise _err(e.errno, path) from None

    def listdir(self, path: str) -> list[str]:
        fd = self._open_dir(path)
        try:
            return os.listdir(fd)
        finally:
            os.close(fd)

    def scandir(self, path: str) -> Iterator[DirEntry]:
        fd = self._open_dir(path)
        try:
            out = []
            with os.scandir(fd) as it:
                for e in it:
                    try:
                        out.append(DirEntry(e.name, e.stat(follow_symlinks=False).st_mode))
                    except OSError:
                        continue
            return iter(out)
        finally:
            os.close(fd)

    def readlink(self, path: str) -> str:
        with self._gate(path, False) as g:
            try:
                return os.readlink(g.name, dir_fd=g.fd)
            except OSError as e:
                raise _err(e.errno, path) from None

    def _lstat_mode(self, path: str) -> int | None:
        try:
            return self.stat(path, False).st_mode
        except (OSError, ValueError):
            return None

    def realpath(self, path: str) -> str:
        return realpath_with(path, self._lstat_mode, self.readlink)

    def access(self, path: str, mode: int) -> bool:
        try:
            with self._gate(path, True) as g:
                if mode & os.W_OK and not self.writable:
                    return False  # like access(2) on a read-only mount: EROFS
                return os.access(g.name, mode, dir_fd=g.fd, follow_symlinks=g.follow)
        except (OSError, ValueError):
            return False

    def real_path(self, path: str) -> str | None:
        if self._fast:
            # an absolute path names the same file for the kernel as its realpath, and bash
            # hands execve the path as it found it (a `#!` script reached through a symlink
            # gets the link's name); resolving it cost 20-60 us per native spawn (issue 13)
            return path if path[:1] == "/" else os.path.realpath(path)
        try:
            with self._gate(path, True) as g:
                p = g.path
        except (OSError, ValueError):
            return None
        return self.root if p == "/" else self.root + p

    # ------------------------------------------------------------------ open
    def open(self, path: str, mode: str = "rb", perm: int = 0o644, *,
             regular: bool = False) -> BinaryIO:
        """``regular=True`` (the file API): opened with O_NONBLOCK, so a FIFO or terminal the
        sandbox left at ``path`` never makes the caller wait; anything but a regular file or
        a memory device (/dev/null, /dev/zero, ...) is then refused with ENXIO."""
        key = "".join(c for c in mode if c in "rwax+")
        try:
            flags, writes = _MODES[key]
        except KeyError:
            raise ValueError(f"invalid mode: {mode!r}") from None
        excl = "x" in key
        with self._gate(path, not excl, bool(flags & os.O_CREAT) and not excl) as g:
            if writes and not self.writable:
                st = self._lstat_in(g)
                if st is None and not flags & os.O_CREAT:
                    raise _err(errno.ENOENT, path)
                if st is not None and excl:
                    raise _err(errno.EEXIST, path)
                if st is not None and _stat.S_ISDIR(st.st_mode):
                    raise _err(errno.EISDIR, path)
                raise _err(errno.EROFS, path)
            if writes:
                self._jnote(g.path)
            oflags = flags | _nofollow(g) | os.O_CLOEXEC
            try:
                # (never blocking here: a FIFO's open waits for its peer, in the runner's own
                # thread where no deadline could stop it; such opens wait in _open_fifo)
                fd = _open_leased(g.name, oflags | os.O_NONBLOCK, perm, g.fd)
                if not regular and not writes and _stat.S_ISFIFO(os.fstat(fd).st_mode):
                    try:
                        _await_writer(fd)
                    except BaseException:
                        os.close(fd)
                        raise
            except OSError as e:
                if e.errno == errno.ENXIO and writes and not regular and self._is_fifo(g):
                    fd = _open_fifo(g.name, g.fd, oflags, perm, writes)
                elif e.errno == errno.ELOOP and not excl and not g.follow:
                    raise _err(errno.EACCES, path) from None  # final component swapped in a race
                else:
                    raise _err(e.errno, path) from None
            if not regular:
                os.set_blocking(fd, True)
        try:
            st = os.fstat(fd)
            if _stat.S_ISDIR(st.st_mode):
                raise _err(errno.EISDIR, path)
            if regular:
                if not (_stat.S_ISREG(st.st_mode) or
                        _stat.S_ISCHR(st.st_mode) and os.major(st.st_rdev) == 1):
                    raise OSError(errno.ENXIO, "not a regular file (the file API does not "
                                  "open FIFOs, sockets or terminals)", path)
                os.set_blocking(fd, True)
            f = io.FileIO(fd, key.replace("x", "w") if excl else key, closefd=True)
        except BaseException:
            os.close(fd)
            raise
        f.name = path  # type: ignore[misc]
        if _stat.S_ISREG(st.st_mode):
            if key == "r":
                return io.BufferedReader(f)  # type: ignore[return-value]
            # writes go through at once, as bash's do: a native process or a later read of
            # the file (`exec 3>f; echo x >&3; cat f`) sees them, in order
            if "+" in key:
                return _WriteThroughRandom(f)  # type: ignore[return-value]
            return _WriteThrough(f)  # type: ignore[return-value]
        from .devices import guard_special
        return guard_special(f, st)  # FIFOs, devices: unbuffered, reads charged to the budget

    def _is_fifo(self, g: Any) -> bool:
        try:
            return _stat.S_ISFIFO(os.stat(g.name, dir_fd=g.fd, follow_symlinks=g.follow).st_mode)
        except OSError:
            return False

    # ------------------------------------------------------------------ mutations
    def _create_gate(self, path: str) -> _Gate:
        g = self._gate(path, False)
        try:
            if g.name == "." or self._lstat_in(g) is not None:
                raise _err(errno.EEXIST, path)
            self._ro(path)
        except BaseException:
            g.__exit__()
            raise
        return g

    def mkdir(self, path: str, mode: int = 0o755) -> None:
        with self._create_gate(path) as g:
            self._jnote(g.path)
            self._call(os.mkdir, path, g.name, mode, dir_fd=g.fd)

    @staticmethod
    def _call(fn, path: str, *a, **kw):  # noqa: ANN001, ANN205
        try:
            return fn(*a, **kw)
        except OSError as e:
            raise _err(e.errno, path) from None

    def mkfifo(self, path: str, mode: int = 0o666) -> None:
        with self._create_gate(path) as g:
            self._jnote(g.path)
            self._call(os.mkfifo, path, g.name, mode, dir_fd=g.fd)

    def symlink(self, target: str, path: str) -> None:
        with self._create_gate(path) as g:
            self._jnote(g.path)
            self._call(os.symlink, path, target, g.name, dir_fd=g.fd)

    def _existing_gate(self, path: str, follow: bool = False) -> tuple[_Gate, os.stat_result]:
        g = self._gate(path, follow)
        try:
            st = self._lstat_in(g)
            if st is None:
                raise _err(errno.ENOENT, path)
        except BaseException:
            g.__exit__()
            raise
        return g, st

    def rmdir(self, path: str) -> None:
        g, st = self._existing_gate(path)
        with g:
            if g.name == "." or g.path == "/":
                raise _err(errno.EBUSY, path)
            if not _stat.S_ISDIR(st.st_mode):
                raise _err(errno.ENOTDIR, path)
            self._ro(path)
            self._jnote(g.path)
            self._call(os.rmdir, path, g.name, dir_fd=g.fd)

    def unlink(self, path: str) -> None:
        g, st = self._existing_gate(path)
        with g:
            if _stat.S_ISDIR(st.st_mode):
                raise _err(errno.EISDIR, path)
            self._ro(path)
            self._jnote(g.path)
            self._call(os.unlink, path, g.name, dir_fd=g.fd)

    def rename(self, src: str, dst: str) -> None:
        with self._gate(src, False) as gs:
            with self._gate(dst, False) as gd:  # both parents resolve before ENOENT, as on Linux
                if self._lstat_in(gs) is None:
                    raise _err(errno.ENOENT, src, dst)
                if gs.name == "." or gd.name == ".":
                    raise _err(errno.EBUSY, src, dst)
                self._ro(src)
                j = self._journal
                if j is not None:
                    j.note_move(gs.path, gd.path)
                try:
                    os.rename(gs.name, gd.name, src_dir_fd=gs.fd, dst_dir_fd=gd.fd)
                except OSError as e:
                    raise _err(e.errno, src, dst) from None

    def link(self, src: str, dst: str) -> None:
        gs, _ = self._existing_gate(src)
        with gs:
            with self._gate(dst, False) as gd:
                if self._lstat_in(gd) is not None or gd.name == ".":
                    raise _err(errno.EEXIST, src, dst)
                self._ro(dst)
                self._jnote(gd.path)
                try:
                    os.link(gs.name, gd.name, src_dir_fd=gs.fd, dst_dir_fd=gd.fd, follow_symlinks=False)
                except OSError as e:
                    raise _err(e.errno, src, dst) from None

    def _with_final_fd(self, path: str, follow: bool, fn) -> None:  # noqa: ANN001
        """Run ``fn(fd_path_or_None, gate, st)`` on the final object without following a swapped symlink."""
        g, st = self._existing_gate(path, follow)
        with g:
            self._ro(path)
            self._jnote(g.path)
            fn(g, st)

    def chmod(self, path: str, mode: int, follow_symlinks: bool = True) -> None:
        def do(g: _Gate, st: os.stat_result) -> None:
            if _stat.S_ISLNK(st.st_mode):
                return  # Linux has no lchmod
            if _PROC_FD and _O_PATH:
                fd = self._call(os.open, path, g.name, _O_PATH | _nofollow(g) | os.O_CLOEXEC, dir_fd=g.fd)
                try:
                    if _stat.S_ISLNK(os.fstat(fd).st_mode):
                        return
                    self._call(os.chmod, path, f"/proc/self/fd/{fd}", mode)
                finally:
                    os.close(fd)
            else:  # pragma: no cover - non-Linux
                self._call(os.chmod, path, g.name, mode, dir_fd=g.fd)

        self._with_final_fd(path, follow_symlinks, do)

    def chown(self, path: str, uid: int, gid: int, follow_symlinks: bool = True) -> None:
        self._with_final_fd(path, follow_symlinks, lambda g, st: self._call(
            os.chown, path, g.name, uid, gid, dir_fd=g.fd, follow_symlinks=g.follow))

    def utime(self, path: str, times: tuple[float, float] | None = None, follow_symlinks: bool = True) -> None:
        self._with_final_fd(path, follow_symlinks, lambda g, st: self._call(
            os.utime, path, g.name, times, dir_fd=g.fd, follow_symlinks=g.follow))

    def truncate(self, path: str, length: int) -> None:
        if length < 0:
            raise _err(errno.EINVAL, path)

        def do(g: _Gate, st: os.stat_result) -> None:
            if _stat.S_ISDIR(st.st_mode):
                raise _err(errno.EISDIR, path)
            fd = self._call(os.open, path, g.name, os.O_WRONLY | _nofollow(g) | os.O_CLOEXEC, dir_fd=g.fd)
            try:
                os.ftruncate(fd, length)
            finally:
                os.close(fd)

        g, st = self._existing_gate(path, True)
        with g:
            if _stat.S_ISDIR(st.st_mode):
                raise _err(errno.EISDIR, path)
            self._ro(path)
            self._jnote(g.path)
            do(g, st)
