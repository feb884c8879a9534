"""The FileSystem protocol every backend (MemoryFS, HostFS, OverlayFS, MountFS) implements."""

# Contract (tests/vfs/test_contract.py runs it against every backend):
# * Paths are absolute, normalised POSIX strings ("/a/b", never "a/../b" or "//x");
#   callers normalise with ``vfs.paths.normalize``. Symlinks inside the filesystem are
#   followed by the backend where POSIX would follow them.
# * Errors are ``OSError`` subclasses with the POSIX errno and the path as filename
#   (``FileNotFoundError(ENOENT, 'No such file or directory', path)``), as ``os`` raises.
# * Contents are bytes. ``open`` returns a binary file object (read/write/seek/close,
#   context manager); writes become visible to other readers no later than close.
# * ``real_path(path)`` returns a host path when the file physically lives on the host
#   filesystem (HostFS, the sandboxed root), so native children can open it; else None.

from __future__ import annotations

import stat as _stat
from dataclasses import dataclass
from typing import BinaryIO, Iterator, NamedTuple, Protocol, runtime_checkable

from .._values import value_methods

__all__ = ["DirEntry", "FileSystem", "StatResult"]


class StatResult(NamedTuple):
    """The subset of ``os.stat_result`` the shell and commands use.

    A NamedTuple (like ``os.stat_result``, a tuple underneath) rather than a frozen
    dataclass: one is built per stat, and a frozen dataclass paid ten ``object.__setattr__``
    calls for it (about a tenth of the bytecode of ``echo x > file``)."""

    st_mode: int
    st_size: int = 0
    st_mtime: float = 0.0
    st_atime: float = 0.0
    st_ctime: float = 0.0
    st_ino: int = 0
    st_dev: int = 0
    st_nlink: int = 1
    st_uid: int = 1000
    st_gid: int = 1000
    st_rdev: int = 0  # (a device's number: os.makedev(major, minor))

    @property
    def is_dir(self) -> bool:
        return _stat.S_ISDIR(self.st_mode)

    @property
    def is_file(self) -> bool:
        return _stat.S_ISREG(self.st_mode)

    @property
    def is_symlink(self) -> bool:
        return _stat.S_ISLNK(self.st_mode)

    @classmethod
    def from_os(cls, st) -> StatResult:  # noqa: ANN001 - os.stat_result
        return cls(st.st_mode, st.st_size, st.st_mtime, st.st_atime, st.st_ctime,
                   st.st_ino, st.st_dev, st.st_nlink, st.st_uid, st.st_gid)


@value_methods
@dataclass(frozen=True, slots=True, repr=False, eq=False)
class DirEntry:
    name: str
    st_mode: int


@runtime_checkable
class FileSystem(Protocol):
    """What the interpreter and the in-process commands need from a filesystem."""

    def stat(self, path: str, follow_symlinks: bool = True) -> StatResult: ...
    def exists(self, path: str) -> bool: ...            # follows symlinks; never raises
    def lexists(self, path: str) -> bool: ...           # does not follow; never raises
    def listdir(self, path: str) -> list[str]: ...      # names, unsorted, no . / ..
    def scandir(self, path: str) -> Iterator[DirEntry]: ...
    def open(self, path: str, mode: str = "rb", perm: int = 0o644) -> BinaryIO: ...
    # mode: 'rb' 'wb' 'ab' 'r+b' 'w+b' 'a+b' 'xb' (O_EXCL, for set -C / mktemp)
    def mkdir(self, path: str, mode: int = 0o755) -> None: ...
    def rmdir(self, path: str) -> None: ...
    def unlink(self, path: str) -> None: ...
    def rename(self, src: str, dst: str) -> None: ...
    def symlink(self, target: str, path: str) -> None: ...
    def readlink(self, path: str) -> str: ...
    def link(self, src: str, dst: str) -> None: ...
    def chmod(self, path: str, mode: int, follow_symlinks: bool = True) -> None: ...
    def chown(self, path: str, uid: int, gid: int, follow_symlinks: bool = True) -> None: ...
    def utime(self, path: str, times: tuple[float, float] | None = None, follow_symlinks: bool = True) -> None: ...
    def truncate(self, path: str, length: int) -> None: ...
    def realpath(self, path: str) -> str: ...           # resolves symlinks like os.path.realpath(strict=False)
    def access(self, path: str, mode: int) -> bool: ... # os.R_OK/W_OK/X_OK/F_OK
    def real_path(self, path: str) -> str | None: ...   # host path for native children, or None
