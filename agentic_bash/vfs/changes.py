"""Change tracking at the filesystem layer: a journal of prior states, diffed after a run."""

# How it works: ``snapshot_marker(fs)`` installs a Journal on the filesystem the script sees
# (the outermost layer: MountFS, OverlayFS or MemoryFS). Every mutating call of that layer
# first calls ``journal.note(path)`` with the resolved path, which records the state the
# path had *in the merged view* before its first change in the run. ``diff`` compares those
# prior states with the current ones, so its cost is proportional to what changed (nothing
# changed: a dict-emptiness check). A file object remembers the outermost layer that opened
# it, so its writes are noted even when it was opened in an earlier run (``exec 3>f``).
# A content change through one hard link notes every name of the file (a walk of the upper,
# done only for files with several links).

from __future__ import annotations

import stat as _stat
import time
from dataclasses import dataclass
from typing import Any

from .._values import value_methods

__all__ = ["Changes", "Journal", "Marker", "capture", "diff", "snapshot_marker"]

CONTENT_COMPARE_LIMIT = 1 << 20
"""Files up to this size are compared by content; larger ones by (inode, size, mtime)."""


def capture(fs: Any, path: str) -> tuple | None:
    """The comparable state of ``path`` (not following a final symlink), or None if absent."""
    try:
        st = fs.stat(path, follow_symlinks=False)
    except (OSError, ValueError):
        return None
    mode = st.st_mode
    fmt = _stat.S_IFMT(mode)
    if fmt == _stat.S_IFREG:
        if st.st_size <= CONTENT_COMPARE_LIMIT:
            try:
                with fs.open(path, "rb") as f:
                    return (mode, f.read())
            except OSError:
                pass
        return (mode, ("big", st.st_ino, st.st_size, st.st_mtime))
    if fmt == _stat.S_IFLNK:
        try:
            return (mode, fs.readlink(path))
        except OSError:
            return (mode, None)
    return (mode, None)


def _differs(fs: Any, path: str, st: Any, before: tuple) -> bool:
    """Whether ``path`` (lstat ``st``) differs from its captured state, reading only if needed."""
    if st.st_mode != before[0]:
        return True
    old = before[1]
    if isinstance(old, (bytes, bytearray)):
        if st.st_size != len(old):
            return True
    elif isinstance(old, tuple):  # ("big", ino, size, mtime)
        if (st.st_ino, st.st_size, st.st_mtime) != old[1:]:
            return True
        return False
    return capture(fs, path) != before


class Journal:
    """Prior states of the paths changed since the marker (first change wins)."""

    __slots__ = ("fs", "prior")

    def __init__(self, fs: Any) -> None:
        self.fs = fs
        self.prior: dict[str, tuple | None] = {}

    def note(self, path: str) -> None:
        if path not in self.prior:
            self.prior[path] = capture(self.fs, path)

    def note_move(self, src: str, dst: str) -> None:
        """Before ``rename(src, dst)``: note both ends and every path below them that moves."""
        self.note(src)
        self.note(dst)
        fs = self.fs
        try:
            if not _stat.S_ISDIR(fs.stat(src, follow_symlinks=False).st_mode):
                return
            names = fs.listdir(src)
        except OSError:
            return
        for n in names:
            self.note_move(src.rstrip("/") + "/" + n, dst.rstrip("/") + "/" + n)


@value_methods
@dataclass(frozen=True, slots=True, repr=False, eq=False)
class Changes:
    created: list[str]
    modified: list[str]
    deleted: list[str]
    partial: bool = False
    """The diff stopped at its time bound (``diff(until=...)``): the lists name only the
    paths looked at by then."""

    def __bool__(self) -> bool:
        return bool(self.created or self.modified or self.deleted)


class Marker:
    """Where recording started: the tracked view and its journal (a plain class: one is made
    per ``run()``)."""

    __slots__ = ("fs", "journal")

    def __init__(self, fs: Any, journal: Journal) -> None:
        self.fs = fs
        self.journal = journal


def _tracking_target(fs: Any) -> Any:
    # layout.build_virtual_fs points the upper layer at the outermost view with _track_via
    return getattr(fs, "_track_via", None) or fs


def snapshot_marker(fs: Any) -> Marker:
    """Start recording changes on ``fs`` (the view the script uses, or its upper layer)."""
    target = _tracking_target(fs)
    j = Journal(target)
    target._journal = j
    return Marker(target, j)


def diff(marker: Marker, fs: Any = None, until: float | None = None) -> Changes:
    """What changed since ``marker``, judged against the merged view before it; stops recording.
    Past ``until`` (time.monotonic()) it stops looking and returns what it found, ``partial``:
    a run's deadline bounds this too (5,000 nested directories took 0.2-0.6 s of lookups
    after the deadline, each path resolved from the root)."""
    target = marker.fs
    j = marker.journal
    if getattr(target, "_journal", None) is j:
        target._journal = None
    if not j.prior:
        return Changes([], [], [])
    created: list[str] = []
    modified: list[str] = []
    deleted: list[str] = []
    # parent directory -> whether it exists: once a path is found missing, its parent is
    # looked up once, and the other paths under a missing parent (the files of a removed
    # tree) are missing without a lookup each
    parents: dict[str, bool] = {}
    partial = False
    k = 0
    for path, before in j.prior.items():
        k += 1
        # (every path: in the namespace level one lookup of a 5,000-deep path resolves each
        # component, and 64 of them between looks ran 0.5-2 s past the deadline)
        if until is not None and time.monotonic() > until:
            partial = True
            break
        parent = path.rpartition("/")[0]
        st: Any = None
        if not parents.get(parent, True):
            pass
        elif before is None:
            st = True if target.lexists(path) else None  # only existence matters
        else:
            try:
                st = target.stat(path, follow_symlinks=False)
            except (OSError, ValueError):
                if parent and parent not in parents:
                    parents[parent] = target.lexists(parent)
        if before is None:
            if st is not None:
                created.append(path)
        elif st is None:
            deleted.append(path)
        elif _differs(target, path, st, before):
            modified.append(path)
    created.sort()
    modified.sort()
    deleted.sort()
    return Changes(created, modified, deleted, partial)
