"""Runtime-API file calls served from the host directory shown as /app, beside a running command."""

# Why: the sandbox's file API shares its channel (and lock) with run(), so an upload waited for
# the command in progress; /app is the host's base directory bind-mounted read-write (or
# passed through by the virtual level), so the server reads and writes it itself, streaming,
# with no lock. Hand-written because no library resolves paths with the sandbox's meaning of
# a symlink: every component is opened with O_NOFOLLOW relative to its parent's descriptor
# (a command swapping a directory for a symlink meanwhile is never followed unchecked), a
# symlink's target is walked again under the same rules, an absolute target is taken as the
# sandbox sees it ("/app/x" is the base's "x"), and any step that would leave the base
# directory is Denied. An upload is written to an unnamed O_TMPFILE in the destination's
# directory and renamed into place, so a running command sees the old file or the whole new
# one, never part of it, and an aborted upload leaves nothing behind.

from __future__ import annotations

import errno
import heapq
import os
import stat
from dataclasses import dataclass
from typing import Iterator

from .paths import BadPath, Denied, confine

__all__ = ["HostFiles", "MAX_LIST", "Resolved", "Upload", "sandbox_dir_fd"]

MAX_LIST = 10_000        # entries a listing returns at most (the first by name), as list_files
_MAX_LINKS = 40          # symlinks followed in one resolution (the kernel's MAXSYMLINKS)
_CHUNK = 256 << 10       # bytes per read when a download is streamed

_DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass
class Resolved:
    """Where a client path led: the open directory holding it and its name there (``name``
    None: the base directory itself), its lstat (None: it does not exist)."""

    dirfd: int
    name: str | None
    st: os.stat_result | None

    def close(self) -> None:
        try:
            os.close(self.dirfd)
        except OSError:
            pass

    def __enter__(self) -> "Resolved":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _parts(path: str) -> list[str]:
    return [p for p in path.split("/") if p not in ("", ".")]


class HostFiles:
    """The base directory ``host_dir``, shown to the sandbox as ``inside``."""

    def __init__(self, host_dir: str, inside: str, *, root_fd: int | None = None) -> None:
        self.root = os.path.realpath(host_dir) if root_fd is None else host_dir
        self.inside = inside.rstrip("/") or "/"
        self._inside_parts = _parts(self.inside)
        self._root_fd = root_fd

    @classmethod
    def at_fd(cls, fd: int, inside: str) -> "HostFiles":
        """The directory open as ``fd`` (O_PATH; owned by the result: ``close()``), which the
        sandbox sees as ``inside``."""
        return cls(f"/proc/self/fd/{fd}", inside, root_fd=fd)

    def close(self) -> None:
        if self._root_fd is not None:
            fd, self._root_fd = self._root_fd, None
            os.close(fd)

    def __enter__(self) -> "HostFiles":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _open_root(self) -> int:
        if self._root_fd is not None:
            return os.dup(self._root_fd)
        return os.open(self.root, _DIR_FLAGS)

    # ---------------------------------------------------------------- resolution
    def resolve(self, user_path: str, *, follow: bool = True, make_parents: bool = False) -> Resolved:
        """The client path ``user_path`` (relative to the base; a leading "/" ignored, as
        upstream), symlinks followed inside the base (the last one too if ``follow``).
        Denied if any step leaves the base; BadPath for a NUL byte; FileNotFoundError /
        NotADirectoryError when a directory on the way is missing (unless ``make_parents``:
        then it is created) or is a file."""
        full = confine(user_path, self.inside)
        todo = _parts(full)[len(self._inside_parts):]
        todo.reverse()                       # a stack: the next component last
        stack = [self._open_root()]
        links = 0
        # (a sandbox's workdir reached from the host: no step may cross into another mount,
        # whatever the workload managed to mount there; a base dir of the host's may)
        dev = os.fstat(stack[0]).st_dev if self._root_fd is not None else None
        try:
            while todo:
                comp = todo.pop()
                if comp == "..":
                    if len(stack) == 1:
                        raise Denied(user_path)
                    os.close(stack.pop())
                    continue
                last = not todo
                try:
                    st = os.stat(comp, dir_fd=stack[-1], follow_symlinks=False)
                except FileNotFoundError:
                    if last:
                        return Resolved(stack.pop(), comp, None)
                    if not make_parents:
                        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), user_path) from None
                    try:
                        os.mkdir(comp, 0o755, dir_fd=stack[-1])
                    except FileExistsError:
                        pass
                    todo.append(comp)        # look again (whatever is there now)
                    continue
                if stat.S_ISLNK(st.st_mode) and (follow or not last):
                    links += 1
                    if links > _MAX_LINKS:
                        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), user_path)
                    target = os.readlink(comp, dir_fd=stack[-1])
                    if "\x00" in target:
                        raise BadPath("a symlink's target contains a NUL byte")
                    tparts = _parts(target)
                    if target.startswith("/"):
                        n = len(self._inside_parts)
                        if tparts[:n] != self._inside_parts:
                            raise Denied(user_path)
                        tparts = tparts[n:]
                        while len(stack) > 1:
                            os.close(stack.pop())
                    todo.extend(reversed(tparts))
                    continue
                if last:
                    return Resolved(stack.pop(), comp, st)
                if not stat.S_ISDIR(st.st_mode):
                    raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), user_path)
                try:
                    stack.append(os.open(comp, _DIR_FLAGS, dir_fd=stack[-1]))
                    if dev is not None and os.fstat(stack[-1]).st_dev != dev:
                        raise Denied(user_path)
                except (NotADirectoryError, FileNotFoundError, OSError) as e:
                    if getattr(e, "errno", None) in (errno.ENOTDIR, errno.ENOENT, errno.ELOOP):
                        todo.append(comp)    # changed since the stat: look again
                        links += 1           # (bounded like a symlink)
                        if links > _MAX_LINKS:
                            raise
                        continue
                    raise
            # the base directory itself
            top = stack.pop()
            return Resolved(top, None, os.stat(top))
        finally:
            for fd in stack:
                os.close(fd)

    # ---------------------------------------------------------------- calls
    def exists(self, user_path: str) -> bool:
        try:
            with self.resolve(user_path) as r:
                return r.st is not None
        except (FileNotFoundError, NotADirectoryError):
            return False
        except OSError as e:
            if e.errno == errno.ELOOP:
                return False
            raise

    def open_file(self, user_path: str) -> tuple[int, int] | None:
        """(an fd open for reading, its size) of the regular file ``user_path``; None if it
        is missing or not a regular file (the caller closes the fd)."""
        try:
            r = self.resolve(user_path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        with r:
            if r.st is None or r.name is None or not stat.S_ISREG(r.st.st_mode):
                return None
            try:
                fd = os.open(r.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                             dir_fd=r.dirfd)
            except (FileNotFoundError, OSError) as e:
                if getattr(e, "errno", None) in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR):
                    return None      # replaced since it was resolved
                raise
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            return None
        return fd, st.st_size

    @staticmethod
    def chunks(fd: int, size: int) -> Iterator[bytes]:
        """Up to ``size`` bytes of ``fd`` in pieces (the size the reply declared: a file that
        grows meanwhile is cut there, one that shrinks ends early)."""
        left = size
        while left > 0:
            b = os.read(fd, min(_CHUNK, left))
            if not b:
                return
            left -= len(b)
            yield b

    def listing(self, user_path: str) -> list[dict[str, object]] | None:
        """Entries of the directory ``user_path`` as upstream lists them (name, size, type
        file|directory, mod_time; a symlink as its target inside the base, else a file);
        None if it is not a directory."""
        try:
            r = self.resolve(user_path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        with r:
            if r.st is None or not stat.S_ISDIR(r.st.st_mode):
                return None
            if r.name is None:
                fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=r.dirfd)
            else:
                try:
                    fd = os.open(r.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                                 dir_fd=r.dirfd)
                except OSError as e:
                    if e.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                        return None
                    raise
        try:
            with os.scandir(fd) as it:
                names = heapq.nsmallest(MAX_LIST, (de.name for de in it))
            base = user_path.rstrip("/")
            out: list[dict[str, object]] = []
            for name in names:
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    continue             # removed meanwhile
                if stat.S_ISLNK(st.st_mode):
                    try:
                        with self.resolve(f"{base}/{name}") as t:
                            if t.st is not None:
                                st = t.st
                    except (Denied, BadPath, OSError):
                        pass             # dangling, looping or leaving the base: the link itself
                out.append({"name": name, "size": st.st_size,
                            "type": "directory" if stat.S_ISDIR(st.st_mode) else "file",
                            "mod_time": st.st_mtime})
            return out
        finally:
            os.close(fd)


    def entries(self, user_path: str, shown_as: str) -> list[dict[str, object]] | None:
        """``list_files`` entries (lstat: a symlink is "symlink") of the directory
        ``user_path``, their paths below ``shown_as``; None if it is not a directory."""
        try:
            r = self.resolve(user_path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        with r:
            if r.st is None or not stat.S_ISDIR(r.st.st_mode):
                return None
            try:
                fd = os.open("." if r.name is None else r.name,
                             os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=r.dirfd)
            except OSError:
                return None
        try:
            with os.scandir(fd) as it:
                names = heapq.nsmallest(MAX_LIST, (de.name for de in it))
            out: list[dict[str, object]] = []
            for name in names:
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    continue
                kind = "dir" if stat.S_ISDIR(st.st_mode) else "symlink" if stat.S_ISLNK(st.st_mode) else "file"
                out.append({"name": name, "path": shown_as.rstrip("/") + "/" + name, "size": st.st_size,
                            "type": kind, "mode": stat.S_IMODE(st.st_mode), "mtime": st.st_mtime})
            return out
        finally:
            os.close(fd)


class Upload:
    """A file being written to ``user_path``: ``write`` pieces, then ``commit`` (renamed into
    place atomically) or ``abort`` (nothing is left). The file gets the replaced file's
    permissions (``new_mode`` if it is new), or ``new_mode`` always with ``force_mode``."""

    def __init__(self, files: HostFiles, user_path: str, new_mode: int = 0o644, *,
                 force_mode: bool = False) -> None:
        r = files.resolve(user_path, make_parents=True)
        if r.name is None or (r.st is not None and stat.S_ISDIR(r.st.st_mode)):
            r.close()
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), user_path)
        self._r = r
        # the old file's permissions (or ``new_mode``), never set-user/group-ID: the server's
        # own uid owns the new file, so a client's bytes became a setuid program of that uid
        # (attack11: kept from the old file; review12: asked for, serve --sessions' ?mode=4755
        # beside a running command, where the sandbox's own call is refused by seccomp)
        self._mode = ((stat.S_IMODE(r.st.st_mode) if r.st is not None and not force_mode
                       else new_mode) & ~(stat.S_ISUID | stat.S_ISGID))
        self._named: str | None = None
        try:
            self.fd = os.open(".", os.O_TMPFILE | os.O_WRONLY | os.O_CLOEXEC, 0o600, dir_fd=r.dirfd)
        except OSError as e:
            if e.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
                r.close()
                raise
            self.fd = self._named_temp()

    def _named_temp(self) -> int:
        """A hidden temporary name in the same directory (file systems without O_TMPFILE)."""
        for _ in range(100):
            name = f".{self._r.name}.agb-{os.urandom(4).hex()}"
            try:
                fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                             0o600, dir_fd=self._r.dirfd)
            except FileExistsError:
                continue
            self._named = name
            return fd
        raise FileExistsError(errno.EEXIST, "no free temporary name", self._r.name)

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = os.write(self.fd, view)
            view = view[n:]

    def commit(self) -> None:
        r = self._r
        assert r.name is not None
        try:
            os.fchmod(self.fd, self._mode)
            if self._named is None:
                # an unnamed file gets a name first (linkat through /proc), then the rename
                # replaces the destination in one step
                tmp = None
                for _ in range(100):
                    cand = f".{r.name}.agb-{os.urandom(4).hex()}"
                    try:
                        os.link(f"/proc/self/fd/{self.fd}", cand, dst_dir_fd=r.dirfd, follow_symlinks=True)
                    except FileExistsError:
                        continue
                    tmp = cand
                    break
                if tmp is None:
                    raise FileExistsError(errno.EEXIST, "no free temporary name", r.name)
                self._named = tmp
            os.rename(self._named, r.name, src_dir_fd=r.dirfd, dst_dir_fd=r.dirfd)
            self._named = None
        finally:
            self.abort()

    def abort(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self._named is not None:
            try:
                os.unlink(self._named, dir_fd=self._r.dirfd)
            except OSError:
                pass
            self._named = None
        self._r.close()


def sandbox_dir_fd(pid: int, pidfd: int, path: str) -> int | None:
    """An O_PATH fd of directory ``path`` as the sandbox whose pid 1 is ``pid`` sees it (its
    root through /proc/<pid>/root, every component below opened with O_NOFOLLOW), or None.
    ``pidfd`` (a pidfd of that process) is checked after the root is opened: while it is
    alive its pid cannot name another process, so the root is the sandbox's."""
    import signal
    try:
        fd = os.open(f"/proc/{pid}/root", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        signal.pidfd_send_signal(pidfd, 0)
        # a sandbox (re)starting has this pid before its own root: until pid 1 pivots, its
        # root is this host's, and the walk below would serve the host's directory of that
        # name (attack12: a restart after a crash let a client read and write host /tmp)
        st, mine = os.fstat(fd), os.stat("/proc/self/root")
        if (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino):
            raise OSError(errno.EAGAIN, "the sandbox has no root of its own yet")
        for comp in _parts(path):
            if comp == "..":
                raise OSError(errno.EINVAL, "'..' in the sandbox directory")
            nxt = os.open(comp, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
        return fd
    except (OSError, ValueError, AttributeError):
        os.close(fd)
        return None
