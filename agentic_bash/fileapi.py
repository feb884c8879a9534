"""The Sandbox file API over any executor: FileInfo listings and tar upload/download."""

# Paths arrive absolute (the Sandbox resolves relative ones against the session cwd). Tar
# uploads go through vfs.oci.import_tar, which validates the whole archive (names escaping
# the root, writes through symlinks, device nodes, caps, truncation) before writing anything;
# in the sandboxed mode that happens inside the sandbox process, on its own root.

from __future__ import annotations

import io
import posixpath
from dataclasses import asdict, dataclass
from typing import Any, BinaryIO

from ._values import value_methods

__all__ = ["LIST_MAX", "FileInfo", "FileList", "download_tar", "list_files", "serve_tar_op",
           "upload_tar"]

LIST_MAX = 10_000
"""``list_files()`` lists at most this many entries unless given another ``limit``
(attack10: a directory of 200k files cost the caller +77 MB; the tmpfs allows ~3M)."""


@value_methods
@dataclass(frozen=True, slots=True, repr=False, eq=False)
class FileInfo:
    """One directory entry: ``type`` is ``file``, ``dir`` or ``symlink``; ``mode`` the
    permission bits; ``mtime`` seconds since the epoch."""

    name: str
    path: str
    size: int
    type: str
    mode: int
    mtime: float

    def __getitem__(self, key: str) -> Any:
        # dict-style access, as list_files() returned dicts before FileInfo existed
        try:
            return getattr(self, key)
        except AttributeError:
            raise KeyError(key) from None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _info(d: dict[str, Any]) -> FileInfo:
    return FileInfo(str(d["name"]), str(d["path"]), int(d.get("size", 0)), str(d.get("type", "file")),
                    int(d.get("mode", 0)), float(d.get("mtime", 0.0)))


class FileList(list):  # type: ignore[type-arg]
    """``list_files()``'s answer: FileInfo entries sorted by name. ``truncated`` is True when
    the directory holds more than the ``limit`` entries listed (the first ones by name)."""

    truncated: bool = False


def list_files(ex: Any, path: str, limit: int | None = LIST_MAX) -> FileList:
    """The entries of directory ``path`` (at most ``limit``, the first by name; None: all);
    for a non-directory, a one-entry list of itself."""
    if limit is not None and (type(limit) is not int or limit < 0):
        raise ValueError(f"limit must be a non-negative int or None, not {limit!r}")
    ask = None if limit is None else limit + 1   # one more than kept: whether there are more
    try:
        entries = ex.list_files(path, limit=ask)
    except NotADirectoryError:
        parent, name = posixpath.split(path)
        entries = [e for e in ex.list_files(parent or "/") if e["name"] == name]
        if not entries:
            raise
    out = FileList(_info(e) for e in entries)
    out.sort(key=lambda f: f.name)
    if limit is not None and len(out) > limit:
        del out[limit:]
        out.truncated = True
    return out


def first_names(names: Any, limit: int | None) -> list[str]:
    """The sorted names, or the first ``limit`` of them without sorting them all."""
    if limit is None:
        return sorted(names)
    import heapq
    return heapq.nsmallest(limit, names)


def _read_all(fileobj: BinaryIO | bytes | bytearray | memoryview) -> bytes:
    if isinstance(fileobj, (bytes, bytearray, memoryview)):
        return bytes(fileobj)
    return fileobj.read()


def _sandboxed(ex: Any) -> bool:
    return hasattr(ex, "export_layer") and hasattr(ex, "_call")


def upload_tar(ex: Any, fileobj: BinaryIO | bytes, dest: str) -> None:
    """Extract a tar below ``dest`` (created if missing); SnapshotError for hostile archives."""
    if _sandboxed(ex):
        ex._call("upload_tar", data=_read_all(fileobj), dest=dest)
        return
    from .vfs.oci import import_tar
    src = io.BytesIO(bytes(fileobj)) if isinstance(fileobj, (bytes, bytearray, memoryview)) else fileobj
    import_tar(src, ex.fs, dest)


def download_tar(ex: Any, fileobj: BinaryIO | None, path: str) -> bytes:
    """A plain tar of the merged tree at ``path``; also written to ``fileobj`` if given."""
    if _sandboxed(ex):
        data = ex._call("download_tar", path=path)
    else:
        from .vfs.oci import export_tar
        buf = io.BytesIO()
        export_tar(ex.fs, path, buf)
        data = buf.getvalue()
    if fileobj is not None:
        fileobj.write(data)
    return data


def serve_tar_op(executor: Any, op: str, args: dict[str, Any]) -> bytes:
    """Inside the sandbox process: ``upload_tar``/``download_tar``/``import_layer`` (a
    snapshot's OCI layer, validated by vfs.oci before anything is written) on its root."""
    from .vfs.oci import export_tar, import_tar
    if op == "upload_tar":
        import_tar(io.BytesIO(args["data"]), executor.fs, args["dest"])
        return b""
    if op == "import_layer":
        from .vfs.oci import import_layer
        import_layer(io.BytesIO(args["data"]), executor.fs)
        return b""
    if op == "download_tar":
        buf = io.BytesIO()
        # a reply cannot pass the wire's frame limit (isolation/wire.py MAX_FRAME)
        export_tar(executor.fs, args["path"], buf, max_bytes=1 << 30)
        return buf.getvalue()
    raise ValueError(f"unknown tar op {op!r}")
