"""Change tracking of native writes: diff scans of the session layer's upper directories."""

# Builtins write through the interpreter's FileSystem, whose journal already reports them;
# native binaries write behind its back. Everything writable in a sandbox is an upper dir of
# the session layer, so scanning the uppers before/after a run finds every native change at
# a cost proportional to the layer (not to the root). Overlay details: a deleted lower entry
# is a whiteout (char device 0:0) in the upper; a new upper entry over an existing lower one
# is a copy-up (reported as modified).

from __future__ import annotations

import errno
import os
import stat
import struct
import time
from typing import Any, Iterable

__all__ = ["LayerScanner", "export_layer_tar"]

State = tuple  # (kind, size, mtime_ns, ino) or ("wh",)
_SETTLED_NS = 50_000_000


def _entry(st: os.stat_result) -> State:
    m = st.st_mode
    if stat.S_ISCHR(m) and st.st_rdev == 0:
        return ("wh",)
    if stat.S_ISDIR(m):
        return ("d",)
    return ("l" if stat.S_ISLNK(m) else "f", st.st_size, st.st_mtime_ns, st.st_ino)


_FD_PENDING = 64
"""Directories the scan keeps open while they wait to be read (see _scan_dir)."""


class _Late(Exception):
    """A scan passed its time bound (see LayerScanner.changes)."""


def _scan_dir(top: str, prefix: str = "", until: float | None = None,
              watch: Any = None, bad: list[str] | None = None) -> dict[str, State]:
    # (each directory is opened relative to its parent's descriptor while few are pending:
    # by path, 5,000 nested directories cost a lookup of every ancestor for each one, O(n^2),
    # 2-4 s of the runner's time after a run's deadline, and the host killed the sandbox;
    # a wide tree is read by path, where paths stay short)
    # ``watch(rel)``: called for every directory before it is listed (LayerScanner places its
    # inotify watch there first, so a change after the listing raises an event); False, or a
    # directory that cannot be listed, is noted in ``bad``
    out: dict[str, State] = {}
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd0: int | None = os.open(os.path.join(top, prefix) if prefix else top, flags)
    except OSError:
        fd0 = None
    stack: list[tuple[str, int | None]] = [(prefix, fd0)]
    pending = 0 if fd0 is None else 1
    try:
        n = 0
        while stack:
            rel, fd = stack.pop()
            n += 1
            if until is not None and not n & 15 and time.monotonic() > until:
                if fd is not None:
                    os.close(fd)
                raise _Late
            if watch is not None and not watch(rel) and bad is not None:
                bad.append(rel)
            try:
                if fd is None:
                    it = os.scandir(os.path.join(top, rel) if rel else top)
                else:
                    pending -= 1
                    it = os.scandir(fd)
            except OSError:
                if fd is not None:
                    os.close(fd)
                if bad is not None:
                    bad.append(rel)
                continue
            try:
                with it:
                    for de in it:
                        r = f"{rel}/{de.name}" if rel else de.name
                        try:
                            e = _entry(de.stat(follow_symlinks=False))
                        except OSError:
                            continue
                        out[r] = e
                        if e == ("d",):
                            sub = None
                            if fd is not None and pending < _FD_PENDING:
                                try:
                                    sub = os.open(de.name, flags, dir_fd=fd)
                                    pending += 1
                                except OSError:
                                    sub = None
                            elif fd is None and pending < _FD_PENDING and len(r) > 1024:
                                try:  # (back to descriptors once paths grow long)
                                    sub = os.open(os.path.join(top, r), flags)
                                    pending += 1
                                except OSError:
                                    sub = None
                            stack.append((r, sub))
            finally:
                if fd is not None:
                    os.close(fd)
    finally:
        for _, fd in stack:
            if fd is not None:
                os.close(fd)
    return out


# inotify(7): no binding in the standard library; three libc calls through ctypes.
# Every directory of every upper is watched for what changes an entry (create, delete,
# rename, write, truncate, attributes, a writable file's last close) and for opens and
# closes of files: overlayfs makes all of these on the upper's own inodes (measured on 6.18:
# a write through the merged view raises IN_MODIFY on the upper file, a copy-up IN_CREATE).
# The one change that raises nothing is a write through a shared writable mapping; its file
# was opened (IN_OPEN) and is not yet closed (IN_CLOSE_WRITE comes at its last release,
# after the mapping's end), so an upper with a file open is read at every scan.
_IN_MODIFY, _IN_ATTRIB, _IN_CLOSE_WRITE, _IN_CLOSE_NOWRITE, _IN_OPEN = 0x2, 0x4, 0x8, 0x10, 0x20
_IN_ISDIR = 0x40000000
_IN_MASK = (_IN_MODIFY | _IN_ATTRIB | _IN_CLOSE_WRITE | _IN_CLOSE_NOWRITE | _IN_OPEN
            | 0x40 | 0x80 | 0x100 | 0x200 | 0x400 | 0x800   # moved from/to, create, delete,
            | 0x01000000)                                    # delete/move self; IN_ONLYDIR
_IN_Q_OVERFLOW, _IN_IGNORED = 0x4000, 0x8000
_add_watch: Any = None   # libc's inotify_add_watch, once _inotify has run
_MAX_WATCHES = 1024
"""Directories one scanner watches at most: the watches count against the sandbox's own
user-namespace limit (runner.USERNS_LIMITS: 8192, shared with the workload's programs, which
keep at least 7,168) and the host user's fs.inotify.max_user_watches (every ancestor user
namespace is charged), and each is ~0.5-1 KiB of kernel memory charged to the sandbox's
memory group. An upper with a directory past it is read at every scan, as before."""


def _inotify(paths: list[str]) -> tuple[int, dict[int, int]] | None:
    """A non-blocking inotify fd watching every directory in ``paths`` (see _IN_MASK), and
    {watch descriptor: index}; None if any watch cannot be placed."""
    global _add_watch
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)   # IN_NONBLOCK, IN_CLOEXEC
    except (OSError, AttributeError):
        return None
    if fd < 0:
        return None
    _add_watch = libc.inotify_add_watch
    wds: dict[int, int] = {}
    for i, p in enumerate(paths):
        wd = libc.inotify_add_watch(fd, os.fsencode(p), _IN_MASK)
        if wd < 0:
            os.close(fd)
            return None
        wds[wd] = i
    return fd, wds


def _no_workload() -> bool:
    """No process in this pid namespace but pid 1 and this one (the sandbox's runner: then no
    program holds a file of an upper open)."""
    me = str(os.getpid())
    try:
        return all(d in ("1", me) for d in os.listdir("/proc") if d.isdigit())
    except OSError:
        return False


class LayerScanner:
    """Keeps the last scan of every upper; ``changes()`` rescans and returns what differs.

    Most uppers stay empty (as root there are 13: /usr, /etc, /var/lib/dpkg, ...), and
    reading one costs five system calls through Landlock's path checks; a non-empty one is
    read whole (26 directories and 200 files in /workspace: ~1.3 ms after every program).
    With inotify (_IN_MASK) an upper is not read again while it is clean: no event named it
    since its last scan (every directory of it was watched before it was listed), and either
    it was empty then, or the scanner is ``trusted`` and no file of it is open (the opens
    and closes of its files balance: the one unseen kind of change, a write through a shared
    mapping, needs a file opened for writing and not yet released). ``trusted``: every
    watched directory was watched before any process that is still alive could have opened
    a file in it: set at a scan with no workload process (``quiet``, the sandbox's pid
    namespace holds pid 1 and the runner only), lost when a new directory is first watched
    while programs run, when events were lost (queue overflow, an unknown watch) or an open
    count went below zero; while it is lost, every non-empty upper is read at every scan, as
    before. One read of the inotify fd (nothing queued: EAGAIN) stands for all clean uppers.
    The queue is read before a directory is scanned, so a change during the scan is seen at
    the next one. Where inotify is unavailable: every non-empty upper is read, and one fstat
    per empty upper of a descriptor held open is compared with its inode, mtime and ctime at
    the last scan (an entry added changes both; ctime cannot be set back from user space)."""

    def __init__(self, uppers: Iterable[dict[str, Any]]) -> None:
        self.uppers = [u for u in uppers if u.get("upper") and os.path.isdir(u["upper"])]
        self._fds: list[int | None] = []
        self._ino: tuple[int, dict[int, int]] | None = _inotify(
            [u["upper"] for u in self.uppers]) if self.uppers else None
        for u in self.uppers:
            if self._ino is not None:
                self._fds.append(None)
                continue
            try:
                self._fds.append(os.open(u["upper"], os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC))
            except (OSError, AttributeError):
                self._fds.append(None)
        # (with inotify: True = clean, no event since its last scan; without: the key of
        # an empty upper's directory)
        self._empty: list[Any] = [None] * len(self.uppers)
        self._opens = [0] * len(self.uppers)   # files of each upper open now (inotify)
        self._roots = frozenset(self._ino[1]) if self._ino is not None else frozenset()
        self._new_watch = False   # a directory was first watched by the current scan
        self.quiet = _no_workload   # (the runner's: no program alive; tests replace it)
        self.trusted = False
        self.partial = False  # the last changes()/refresh() stopped at its time bound
        self.state: list[dict[str, State] | None] = [self._scan(i) for i in range(len(self.uppers))]
        self._settle_trust()

    def _events(self) -> None:
        """Forget the empty mark of every upper an inotify event names (all of them when
        events were lost, or a watch went away)."""
        if self._ino is None:
            return
        fd, wds = self._ino
        while True:
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self._ino = None   # (cannot happen with a live fd) the fstat check from now
                self._empty = [None] * len(self.uppers)
                return
            off = 0
            empty, opens, roots = self._empty, self._opens, self._roots
            while off + 16 <= len(data):
                wd, mask, _cookie, size = struct.unpack_from("iIII", data, off)
                off += 16 + size
                i = wds.get(wd)
                if mask & _IN_IGNORED and i is not None and wd not in roots:
                    del wds[wd]   # (a directory below an upper's top went: its parent's
                    empty[i] = None   # event says so too)
                    continue
                if mask & (_IN_Q_OVERFLOW | _IN_IGNORED) or i is None:
                    self._empty = empty = [None] * len(self.uppers)
                    self.trusted = False
                    if mask & _IN_IGNORED:
                        # a watched upper went away: every upper is read at every scan
                        os.close(fd)
                        self._ino = None
                        return
                    continue
                if mask & _IN_ISDIR and mask & (_IN_OPEN | _IN_CLOSE_NOWRITE):
                    continue   # a directory listed
                if mask & _IN_OPEN:
                    opens[i] += 1   # (not a change by itself: see the class's docstring)
                    continue
                if mask & (_IN_CLOSE_NOWRITE | _IN_CLOSE_WRITE):
                    opens[i] -= 1
                    if opens[i] < 0:
                        self.trusted = False   # (an open before its directory's watch)
                    if mask & _IN_CLOSE_NOWRITE:
                        continue
                empty[i] = None

    def _scan(self, i: int, until: float | None = None) -> dict[str, State]:
        """Upper ``i``'s entries (the caller has read the inotify queue first); _Late past
        ``until``."""
        top = self.uppers[i]["upper"]
        if self._ino is not None:
            if self._empty[i] is True and self.state[i] == {}:
                return {}
            bad: list[str] = []
            out = _scan_dir(top, "", until, self._watcher(i, top), bad)
            # an upper (or a directory of it) that could not be read (`chmod 000
            # /workspace`) or watched is never clean: its entries would go unseen
            self._empty[i] = True if not bad and os.access(top, os.R_OK | os.X_OK) else None
            return out
        key = None
        try:
            fd = self._fds[i]
            st = os.stat(fd) if fd is not None else os.stat(top)
            key = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
        except OSError:
            pass
        if key is not None and self._empty[i] == key:
            return {}
        out = _scan_dir(top, "", until)   # after the stat: an entry made in between changes the key
        # trusted only once the last change is older than a clock tick: with coarse
        # timestamps an entry added within the same tick would leave ctime unchanged
        self._empty[i] = key if (not out and key is not None
                                 and time.time_ns() - key[2] > _SETTLED_NS) else None
        return out

    def changes(self, until: float | None = None) -> tuple[set[str], set[str], set[str]]:
        """What changed in the uppers since the last scan. Past ``until`` (time.monotonic();
        a run's deadline bounds this: 5,000 nested directories took 0.3-1 s to read) it
        stops; ``partial`` is then set and the uppers it did not finish have no baseline:
        their next scan only makes one (its changes are not listed, ``partial`` again)."""
        created: set[str] = set()
        modified: set[str] = set()
        deleted: set[str] = set()
        self.partial = False
        self._events()
        ino = self._ino is not None
        empty = self._empty
        fds = self._fds
        for i, u in enumerate(self.uppers):
            before = self.state[i]
            if ino and before and empty[i] is True and self.trusted and not self._opens[i]:
                continue   # clean, trusted, no file of it open: as it was at its last scan
            if not before and before is not None:
                e = empty[i]
                if ino:
                    if e is True:
                        continue   # empty at the last scan, no event since: nothing to compare
                elif e is not None and fds[i] is not None:
                    # (without inotify: _scan's check inline, the per-call path of 13 empty
                    # uppers as root) its directory as it was when found empty: still empty
                    try:
                        st = os.stat(fds[i])
                        if (st.st_ino, st.st_mtime_ns, st.st_ctime_ns) == e:
                            continue
                    except OSError:
                        pass
            try:
                after = self._scan(i, until)
            except _Late:
                self.state[i] = None
                self._empty[i] = None
                self.partial = True
                continue
            self.state[i] = after
            if before is None:
                self.partial = True  # (no baseline: the last scan of it was cut short)
                continue
            target = u["target"].rstrip("/")
            lower = u.get("lower")

            def in_lower(rel: str) -> bool:
                return bool(lower) and os.path.lexists(os.path.join(lower, rel))

            for rel, st in after.items():
                old = before.get(rel)
                if old == st or st == ("d",):
                    continue
                path = f"{target}/{rel}"
                if st == ("wh",):
                    deleted.add(path)
                elif old is None or old == ("wh",):
                    (modified if old is None and in_lower(rel) else created).add(path)
                else:
                    modified.add(path)
            for rel, st in before.items():
                if rel not in after and st not in (("d",), ("wh",)) and not in_lower(rel):
                    deleted.add(f"{target}/{rel}")
        self._settle_trust()
        return created, modified, deleted

    def _watcher(self, i: int, top: str) -> Any:
        """``watch(rel)`` for _scan_dir: upper ``i``'s directory ``rel`` watched (True), its
        watch descriptor noted; a new one noted in ``_new_watch``."""
        ino = self._ino
        add = _add_watch
        if ino is None or add is None:
            return None
        fd, wds = ino

        def watch(rel: str) -> bool:
            if len(wds) >= _MAX_WATCHES:
                return False
            wd = add(fd, os.fsencode(os.path.join(top, rel) if rel else top), _IN_MASK)
            if wd < 0:
                return False
            if wd not in wds:
                wds[wd] = i
                self._new_watch = True
            return True
        return watch

    def _settle_trust(self) -> None:
        """After a scan (see the class's docstring): a directory first watched while programs
        may hold files in it takes the trust away; a scan with no program alive gives it
        back (no file of the workload is open then: the open counts start at 0). The
        process listing is only made when the trust or a count needs it."""
        if self._ino is None:
            self.trusted = False
            return
        new, self._new_watch = self._new_watch, False
        if (new or not self.trusted or any(self._opens)) and self.quiet():
            self.trusted = True
            self._opens = [0] * len(self.uppers)
        elif new:
            self.trusted = False

    def refresh(self, until: float | None = None) -> None:
        """Take the uppers as they are now as the baseline (past ``until``: see changes)."""
        self._events()
        self.partial = False
        ino = self._ino is not None
        for i in range(len(self.uppers)):
            if (ino and self.state[i] and self._empty[i] is True and self.trusted
                    and not self._opens[i]):
                continue   # (as in changes(): clean)
            try:
                self.state[i] = self._scan(i, until)
            except _Late:
                self.state[i] = None
                self._empty[i] = None
                self.partial = True
        self._settle_trust()

    def note(self, path: str) -> None:
        """Absorb a change made between runs through the file API (write_file, remove) at
        ``path`` (a sandbox path), so the next run does not report it as its own; changes
        elsewhere (a background process) stay to be reported."""
        best = -1
        for i, u in enumerate(self.uppers):
            t = u["target"].rstrip("/")
            if path.startswith(t + "/") and (best < 0 or len(t) > len(
                    self.uppers[best]["target"].rstrip("/"))):
                best = i
        if best < 0:
            return
        top = self.uppers[best]["upper"]
        rel = path[len(self.uppers[best]["target"].rstrip("/")) + 1:].strip("/")
        if not rel:
            return
        state = self.state[best]
        self._empty[best] = None
        if state is None:
            return  # (no baseline: the next scan makes one)
        for k in [k for k in state if k == rel or k.startswith(rel + "/")]:
            del state[k]
        parts = rel.split("/")
        for j in range(1, len(parts)):   # directories write_file made on the way
            p = "/".join(parts[:j])
            if os.path.isdir(os.path.join(top, p)):
                state.setdefault(p, ("d",))
        try:
            e = _entry(os.lstat(os.path.join(top, rel)))
        except OSError:
            return
        state[rel] = e
        if e == ("d",):
            state.update(_scan_dir(top, rel))


def export_layer_tar(uppers: Iterable[dict[str, Any]], fileobj: Any,
                     extra_members: dict[str, bytes] | None = None, *,
                     max_bytes: int | None = None, merged: bool = True) -> None:
    """Write the session layer as one OCI image-layer tar (the format of ``vfs.oci``):
    names relative to the sandbox root, ``.wh.<name>`` for whiteouts, ``.wh..wh..opq`` for
    opaque directories, ``extra_members`` (``.agentic-bash/...``) first.

    The runner has no capabilities and the uppers are read-only to it: a file or directory
    the script made unreadable to its owner (``chmod 000``) is made readable for the copy
    through the overlay (its path in the sandbox) and given its mode back afterwards (the
    tar keeps the original mode); one that still cannot be read fails the export rather
    than being left out.

    ``merged=False`` (the host salvaging a dead sandbox's uppers): there is no merged view,
    and its paths (``/tmp/x``) would name the host's own files, so the upper entry itself is
    made readable. ``max_bytes``: the tar may not pass it (OSError EFBIG) — sparse files
    take no room in a size-bounded layer, yet a tar holds every byte of them; empty files
    take an inode, yet ~1.5 KiB of headers each."""
    import io
    import tarfile

    changed: list[tuple[str, int]] = []   # (path, mode to give back), in the order changed
    total = [0]                            # bytes written so far, where tell() cannot say
    here: dict[str, str] = {}              # the upper being exported: "upper", "target"

    def bound(p: str, more: int = 0) -> None:
        total[0] += more + 512
        if max_bytes is None:
            return
        try:
            at = fileobj.tell()
        except (OSError, AttributeError, ValueError):
            at = total[0] - more
        if at + more > max_bytes:
            raise OSError(errno.EFBIG, f"the layer takes more than {max_bytes} bytes as a tar "
                          f"(sparse files, or very many entries?)", p)

    def readable(path: str, st: os.stat_result, need: int) -> None:
        if st.st_mode & need != need and not os.access(path, os.R_OK | (
                os.X_OK if stat.S_ISDIR(st.st_mode) else 0)):
            rel = os.path.relpath(path, here["upper"])
            at = path if not merged else here["target"] if rel == "." else \
                os.path.join(here["target"], rel)
            os.chmod(at, stat.S_IMODE(st.st_mode) | need)
            changed.append((at, stat.S_IMODE(st.st_mode)))

    def walk_error(e: OSError) -> None:
        raise e   # (os.walk skips an unreadable directory silently: its files would be lost)

    try:
        with tarfile.open(fileobj=fileobj, mode="w", format=tarfile.PAX_FORMAT) as tf:
            for name, data in sorted((extra_members or {}).items()):
                ti = tarfile.TarInfo(name)
                ti.size = len(data)
                ti.mode = 0o644
                tf.addfile(ti, io.BytesIO(data))
            done: set[str] = set()
            dir_need = stat.S_IRUSR | stat.S_IXUSR

            def add_dir(arc: str, path: str) -> None:
                if arc not in done:
                    done.add(arc)
                    tf.add(path, arc, recursive=False)   # (its mode before readable())
                readable(path, os.lstat(path), dir_need)

            def empty(arc: str) -> None:
                tf.addfile(tarfile.TarInfo(arc))

            for u in sorted((u for u in uppers if u.get("upper") and os.path.isdir(u["upper"])),
                            key=lambda u: u["target"]):
                # the mount points themselves (and their parents) are part of every sandbox's
                # layout, not of the layer: only what is below them is exported
                target = u["target"].strip("/")
                here.update(upper=u["upper"], target=u["target"])
                readable(u["upper"], os.lstat(u["upper"]), dir_need)
                for dirpath, dirnames, filenames in os.walk(u["upper"], onerror=walk_error):
                    dirnames.sort()
                    rel = os.path.relpath(dirpath, u["upper"])
                    arcdir = target if rel == "." else f"{target}/{rel}"
                    for n in dirnames:
                        p = os.path.join(dirpath, n)
                        bound(p)
                        if os.path.islink(p):
                            tf.add(p, f"{arcdir}/{n}", recursive=False)
                            continue
                        add_dir(f"{arcdir}/{n}", p)
                        if _opaque(p):
                            empty(f"{arcdir}/{n}/.wh..wh..opq")
                    for n in sorted(filenames):
                        p = os.path.join(dirpath, n)
                        try:
                            st = os.lstat(p)
                        except OSError:
                            continue
                        if not stat.S_ISREG(st.st_mode):
                            bound(p)
                        if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:
                            empty(f"{arcdir}/.wh.{n}")
                        elif stat.S_ISLNK(st.st_mode):
                            tf.add(p, f"{arcdir}/{n}", recursive=False)
                        elif stat.S_ISREG(st.st_mode):
                            ti = tf.gettarinfo(p, f"{arcdir}/{n}")   # (the mode as it was)
                            if ti.isreg():
                                bound(p, ti.size)
                                readable(p, st, stat.S_IRUSR)
                                with open(p, "rb") as f:
                                    tf.addfile(ti, f)
                            else:
                                tf.addfile(ti)   # (a hard link to a file already in the tar)
                        # devices, fifos and sockets are not part of a snapshot
    finally:
        for path, mode in reversed(changed):
            try:
                os.chmod(path, mode)
            except OSError:
                pass


def _opaque(path: str) -> bool:
    for attr in ("user.overlay.opaque", "trusted.overlay.opaque"):
        try:
            if os.getxattr(path, attr, follow_symlinks=False) == b"y":
                return True
        except OSError:
            pass
    return False
