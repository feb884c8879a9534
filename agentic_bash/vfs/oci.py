"""OCI image-layer tar export/import of a session layer, and plain tar import/export of a subtree."""

# Export: the upper layer only (unchanged lower files never appear), POSIX/PAX format, names
# relative without "./", parents before children, ``.wh.<name>`` for a deleted lower entry
# and ``<dir>/.wh..wh..opq`` for an opaque directory (OCI image-spec "layer" rules), plus
# extra members under ``.agentic-bash/`` (the shell state), which import returns instead of
# writing.
# Import security invariants (tests/vfs/test_oci.py tries to break them): everything is
# validated before anything is written, so a refused archive changes nothing. Refused with
# SnapshotError: absolute names, ``..`` components, NUL bytes, device nodes, unknown member
# types, hard links whose target is not a validated name, any entry whose parent would be a
# symlink when it is written (declared as one by the archive, or already one in the target
# and not replaced by the archive), entry/byte caps, truncated or corrupt archives.
# Symlinks are created as they are and never followed: every write goes through
# ``FileSystem`` calls on paths whose parents were checked to be real directories, and an
# existing entry at a member's path is removed (not opened) before the member is created.

from __future__ import annotations

import io
import posixpath
import shutil
import stat as _stat
import tarfile
import tempfile
from typing import Any, BinaryIO

from ..errors import SnapshotError
from .memory import S_IFDIR, S_IFLNK, S_IFREG, MemoryFS
from .paths import join

__all__ = [
    "DEFAULT_MAX_BYTES", "DEFAULT_MAX_ENTRIES", "EXTRA_PREFIX", "export_layer", "export_tar",
    "import_layer", "import_tar",
]

EXTRA_PREFIX = ".agentic-bash/"
WH = ".wh."
OPQ = ".wh..wh..opq"
DEFAULT_MAX_ENTRIES = 2_000_000
"""Members an imported archive may hold (a session with node_modules has ~10^5)."""
DEFAULT_MAX_BYTES = 16 * 1024 ** 3
"""Bytes of file content an imported archive may hold."""
_COPY = 1 << 20


class _MVReader:
    """A file-like reader over a buffer, so tarfile copies file content without a full copy."""

    def __init__(self, buf: Any) -> None:
        self._mv = memoryview(buf)
        self._pos = 0

    def read(self, n: int = -1) -> bytes:
        mv = self._mv
        end = len(mv) if n < 0 else min(len(mv), self._pos + n)
        out = bytes(mv[self._pos:end])
        self._pos = end
        return out


def _open_tar_out(fileobj: BinaryIO) -> tarfile.TarFile:
    tf = tarfile.open(fileobj=fileobj, mode="w|", format=tarfile.PAX_FORMAT, encoding="utf-8",
                      errors="surrogateescape")
    tf.copybufsize = _COPY  # type: ignore[attr-defined]
    return tf


def _add_extras(tf: tarfile.TarFile, extras: dict[str, bytes] | None) -> None:
    for name, data in sorted((extras or {}).items()):
        if not name.startswith(EXTRA_PREFIX):
            raise ValueError(f"extra member {name!r} must be under {EXTRA_PREFIX}")
        ti = tarfile.TarInfo(name)
        ti.size = len(data)
        ti.mode = 0o644
        tf.addfile(ti, io.BytesIO(data))


def _info(name: str, st_mode: int, mtime: float, uid: int, gid: int) -> tarfile.TarInfo:
    ti = tarfile.TarInfo(name)
    ti.mode = _stat.S_IMODE(st_mode)
    ti.mtime = mtime if mtime != int(mtime) else int(mtime)
    ti.uid, ti.gid = uid, gid
    return ti


# ------------------------------------------------------------------------------ export
def export_layer(overlay: Any, fileobj: BinaryIO, *, extra_members: dict[str, bytes] | None = None) -> None:
    """Write the upper layer of ``overlay`` (OverlayFS or a bare MemoryFS) as an OCI layer tar."""
    upper: MemoryFS = overlay.upper if hasattr(overlay, "upper") else overlay
    tf = _open_tar_out(fileobj)
    try:
        _add_extras(tf, extra_members)
        with upper._lock:
            seen: dict[int, str] = {}
            root = upper._root
            if root.opaque:
                tf.addfile(_info(OPQ, S_IFREG | 0o644, 0, 0, 0))
            for n in sorted(root.wh or ()):
                tf.addfile(_info(WH + n, S_IFREG | 0o644, 0, 0, 0))
            _export_dir(tf, root, "", seen)
    finally:
        tf.close()


def _export_dir(tf: tarfile.TarFile, node: Any, prefix: str, seen: dict[int, str]) -> None:
    for name in sorted(node.children):
        child = node.children[name]
        rel = prefix + name
        if not prefix and name + "/" == EXTRA_PREFIX:
            continue  # reserved for the state members
        fmt = child.fmt
        if fmt == S_IFDIR:
            ti = _info(rel, child.mode, child.mtime, child.uid, child.gid)
            ti.type = tarfile.DIRTYPE
            tf.addfile(ti)
            if child.opaque:
                tf.addfile(_info(rel + "/" + OPQ, S_IFREG | 0o644, 0, 0, 0))
            for w in sorted(child.wh or ()):
                tf.addfile(_info(rel + "/" + WH + w, S_IFREG | 0o644, 0, 0, 0))
            _export_dir(tf, child, rel + "/", seen)
            continue
        ti = _info(rel, child.mode, child.mtime, child.uid, child.gid)
        if child.nlink > 1 and fmt == S_IFREG:
            first = seen.get(id(child))
            if first is not None:
                ti.type = tarfile.LNKTYPE
                ti.linkname = first
                tf.addfile(ti)
                continue
            seen[id(child)] = rel
        if fmt == S_IFREG:
            ti.size = len(child.data)
            tf.addfile(ti, _MVReader(child.data))
        elif fmt == S_IFLNK:
            ti.type = tarfile.SYMTYPE
            ti.linkname = child.target or ""
            tf.addfile(ti)
        # devices and FIFOs are not part of a snapshot


def export_tar(fs: Any, path: str, fileobj: BinaryIO) -> None:
    """A plain tar of the merged subtree at ``path`` (names relative to it), e.g. download_tar."""
    tf = _open_tar_out(fileobj)
    try:
        st = fs.stat(path)
        if not st.is_dir:
            _export_entry(tf, fs, path, posixpath.basename(path) or "file", st, {})
        else:
            _export_walk(tf, fs, path, "", {})
    finally:
        tf.close()


def _export_walk(tf: tarfile.TarFile, fs: Any, path: str, prefix: str, seen: dict) -> None:
    for name in sorted(fs.listdir(path)):
        p = join(path, name)
        try:
            st = fs.stat(p, follow_symlinks=False)
        except OSError:
            continue
        rel = prefix + name
        _export_entry(tf, fs, p, rel, st, seen)
        if st.is_dir:
            _export_walk(tf, fs, p, rel + "/", seen)


def _export_entry(tf: tarfile.TarFile, fs: Any, p: str, rel: str, st: Any, seen: dict) -> None:
    ti = _info(rel, st.st_mode, st.st_mtime, st.st_uid, st.st_gid)
    if st.is_dir:
        ti.type = tarfile.DIRTYPE
        tf.addfile(ti)
    elif st.is_symlink:
        ti.type = tarfile.SYMTYPE
        ti.linkname = fs.readlink(p)
        tf.addfile(ti)
    elif st.is_file:
        key = (st.st_dev, st.st_ino)
        if st.st_nlink > 1 and st.st_ino and key in seen:
            ti.type = tarfile.LNKTYPE
            ti.linkname = seen[key]
            tf.addfile(ti)
            return
        seen[key] = rel
        with fs.open(p, "rb") as f:
            data = f.read()
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))


# ------------------------------------------------------------------------------ import
class _Plan:
    __slots__ = ("opaque", "whiteouts", "entries", "extras", "declared")

    def __init__(self) -> None:
        self.opaque: list[str] = []
        self.whiteouts: list[str] = []
        self.entries: dict[str, tarfile.TarInfo] = {}
        self.extras: dict[str, tarfile.TarInfo] = {}
        self.declared: dict[str, str] = {}   # relative path -> "d" | "l" | "f"


def _clean_name(raw: str) -> str:
    if "\0" in raw:
        raise SnapshotError(f"refused archive member with a NUL byte in its name: {raw!r}")
    if raw.startswith("/"):
        raise SnapshotError(f"refused absolute member name: {raw!r}")
    name = raw
    while name.startswith("./"):
        name = name[2:]
    name = name.rstrip("/")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise SnapshotError(f"refused member name with '..': {raw!r}")
    return "/".join(parts)


def _spool(fileobj: BinaryIO) -> BinaryIO:
    try:
        if fileobj.seekable():
            fileobj.tell()
            return fileobj
    except (AttributeError, OSError, ValueError):
        pass
    sp = tempfile.SpooledTemporaryFile(max_size=64 << 20)
    shutil.copyfileobj(fileobj, sp, _COPY)
    sp.seek(0)
    return sp  # type: ignore[return-value]


def _read_plan(fileobj: BinaryIO, layer: bool, max_entries: int, max_bytes: int) -> tuple[tarfile.TarFile, _Plan]:
    try:
        tf = tarfile.open(fileobj=fileobj, mode="r:*", encoding="utf-8", errors="surrogateescape")
    except (tarfile.TarError, EOFError, OSError) as e:
        raise SnapshotError(f"not a readable tar archive: {e}") from e
    plan = _Plan()
    count = 0
    total = 0
    try:
        while True:
            try:
                m = tf.next()
            except (tarfile.TarError, EOFError, OSError) as e:
                raise SnapshotError(f"corrupt or truncated archive: {e}") from e
            if m is None:
                break
            count += 1
            if count > max_entries:
                raise SnapshotError(f"archive has more than {max_entries} entries")
            tf.members = []  # do not keep every TarInfo twice
            if m.isreg():
                total += m.size
                if total > max_bytes:
                    raise SnapshotError(f"archive content exceeds {max_bytes} bytes")
            _plan_member(plan, m, layer)
        # the data of the last member must be there too
        end = tf.offset
        fileobj.seek(0, 2)
        if fileobj.tell() < end:
            raise SnapshotError("truncated archive")
    except SnapshotError:
        tf.close()
        raise
    _check_parents(plan)
    return tf, plan


def _plan_member(plan: _Plan, m: tarfile.TarInfo, layer: bool) -> None:
    raw = m.name
    if layer and (raw.startswith(EXTRA_PREFIX) or raw.startswith("./" + EXTRA_PREFIX)):
        name = _clean_name(raw)
        if m.isreg():
            plan.extras[name] = m
        return
    name = _clean_name(raw)
    if not name:
        if m.isdir():
            return  # "./" itself
        raise SnapshotError(f"refused member with an empty name: {raw!r}")
    base = name.rsplit("/", 1)[-1]
    if layer and base.startswith(WH):
        parent = name[: -len(base)].rstrip("/")
        if base == OPQ:
            plan.opaque.append(parent)
        else:
            target = base[len(WH):]
            if target in ("", ".", ".."):
                raise SnapshotError(f"refused whiteout {raw!r}")
            plan.whiteouts.append(join("/" + parent, target)[1:] if parent else target)
        return
    if m.ischr() or m.isblk():
        raise SnapshotError(f"refused device node {raw!r}")
    if m.isfifo():
        return  # FIFOs are not restored
    if m.islnk():
        target = _clean_name(m.linkname)
        if not target or plan.declared.get(target) != "f":
            raise SnapshotError(f"refused hard link {raw!r} -> {m.linkname!r}: target is not an earlier file")
        kind = "f"
    elif m.issym():
        if "\0" in m.linkname:
            raise SnapshotError(f"refused symlink target with a NUL byte: {raw!r}")
        kind = "l"
    elif m.isdir():
        kind = "d"
    elif m.isreg():
        kind = "f"
    else:
        raise SnapshotError(f"refused member {raw!r} of unsupported type {m.type!r}")
    if m.islnk():
        m.linkname = _clean_name(m.linkname)
    plan.entries[name] = m
    plan.declared[name] = kind


def _check_parents(plan: _Plan) -> None:
    # an entry must never be created below something the archive itself makes a non-directory
    for name in list(plan.entries) + plan.whiteouts + [o for o in plan.opaque if o]:
        parts = name.split("/")
        for i in range(1, len(parts)):
            kind = plan.declared.get("/".join(parts[:i]))
            if kind is not None and kind != "d":
                raise SnapshotError(f"refused {name!r}: would be written through a "
                                    f"{'symlink' if kind == 'l' else 'file'} in the archive")
    for name, m in plan.entries.items():
        if m.islnk():
            parts = m.linkname.split("/")
            for i in range(1, len(parts)):
                kind = plan.declared.get("/".join(parts[:i]))
                if kind is not None and kind != "d":
                    raise SnapshotError(f"refused hard link {name!r} through a symlink")


def _check_target(fs: Any, dest: str, plan: _Plan) -> None:
    """Refuse entries whose parent is a symlink or file in the target that the archive keeps."""
    removed = set(plan.whiteouts)
    if "" in plan.opaque:
        return  # an opaque root replaces everything that is there
    removed.update(plan.opaque)
    checked: dict[str, bool] = {}
    names = list(plan.entries) + plan.whiteouts + [o for o in plan.opaque if o]
    names += [m.linkname for m in plan.entries.values() if m.islnk()]
    for name in names:
        parts = name.split("/")
        for i in range(1, len(parts)):
            prefix = "/".join(parts[:i])
            if plan.declared.get(prefix) == "d":
                continue  # the archive puts a real directory there first
            if prefix in removed or any(prefix.startswith(r + "/") for r in removed):
                continue
            ok = checked.get(prefix)
            if ok is None:
                try:
                    st = fs.stat(join(dest, prefix), follow_symlinks=False)
                    ok = not (_stat.S_ISLNK(st.st_mode) or not _stat.S_ISDIR(st.st_mode))
                except FileNotFoundError:
                    ok = True
                except OSError:
                    ok = False
                checked[prefix] = ok
            if not ok:
                raise SnapshotError(f"refused {name!r}: {join(dest, prefix)} is a symlink or not a directory")


def _sort_key(name: str) -> tuple[str, ...]:
    return tuple(name.split("/"))


def _rm_tree(fs: Any, path: str) -> None:
    try:
        st = fs.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return
    if _stat.S_ISDIR(st.st_mode):
        for n in fs.listdir(path):
            _rm_tree(fs, join(path, n))
        fs.rmdir(path)
    else:
        fs.unlink(path)


def _ensure_dirs(fs: Any, path: str) -> None:
    if path == "/" or fs.lexists(path):
        return
    _ensure_dirs(fs, posixpath.dirname(path))
    fs.mkdir(path, 0o755)


def _apply(fs: Any, dest: str, tf: tarfile.TarFile, plan: _Plan, owners: bool) -> None:
    overlay = hasattr(fs, "upper") and hasattr(fs, "lowers")
    for rel in sorted(plan.opaque, key=_sort_key):
        d = join(dest, rel) if rel else dest
        if fs.lexists(d) and fs.stat(d, follow_symlinks=False).is_dir:
            for n in fs.listdir(d):
                _rm_tree(fs, join(d, n))
        else:
            _rm_tree(fs, d)
            _ensure_dirs(fs, d)
        if overlay:
            with fs._lock:
                fs._copy_up_dirs(d)
                node = fs.upper._get(d, False)
                node.opaque = True
                node.wh = None
    for rel in sorted(plan.whiteouts, key=_sort_key):
        _rm_tree(fs, join(dest, rel))
    dir_times: list[tuple[str, tarfile.TarInfo]] = []
    for rel in sorted(plan.entries, key=_sort_key):
        m = plan.entries[rel]
        p = join(dest, rel)
        _ensure_dirs(fs, posixpath.dirname(p))
        try:
            st = fs.stat(p, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if m.isdir():
            if st is not None and not st.is_dir:
                fs.unlink(p)
                st = None
            if st is None:
                fs.mkdir(p, 0o700)
            fs.chmod(p, m.mode & 0o7777)
            dir_times.append((p, m))
            continue
        if st is not None:
            _rm_tree(fs, p)
        if m.issym():
            fs.symlink(m.linkname, p)
        elif m.islnk():
            fs.link(join(dest, m.linkname), p)
            continue
        else:
            src = tf.extractfile(m)
            with fs.open(p, "xb", m.mode & 0o7777) as out:
                if src is not None:
                    while True:
                        chunk = src.read(_COPY)
                        if not chunk:
                            break
                        out.write(chunk)
            fs.chmod(p, m.mode & 0o7777)
        _finish(fs, p, m, owners)
    for p, m in reversed(dir_times):
        _finish(fs, p, m, owners)


def _apply_upper(up: MemoryFS, overlay: Any, tf: tarfile.TarFile, plan: _Plan) -> None:
    """Fast path: write the layer straight into the upper MemoryFS (whiteouts stay whiteouts)."""
    files = len(plan.entries)
    size = sum(m.size for m in plan.entries.values() if m.isreg())
    if up.max_files is not None and up.files_used + files > up.max_files:
        raise SnapshotError(f"restoring {files} entries would exceed the file-count limit ({up.max_files})")
    if up.max_bytes is not None and up.bytes_used + size > up.max_bytes:
        raise SnapshotError(f"restoring {size} bytes would exceed the filesystem size limit ({up.max_bytes})")
    dirs: dict[str, Any] = {"": up._root}
    created: dict[str, Any] = {}

    def drop(node: Any) -> None:
        if node.children:
            for c in node.children.values():
                drop(c)
        up._drop(node)

    def remove(parent: Any, name: str) -> None:
        node = parent.children.pop(name, None)
        if node is not None:
            if node.fmt == S_IFDIR:
                parent.nlink -= 1
                for k in [k for k in dirs if k == name or k.endswith("/" + name)]:
                    if dirs[k] is node:
                        del dirs[k]
            drop(node)

    def get_dir(rel: str) -> Any:
        node = dirs.get(rel)
        if node is not None:
            return node
        prel, _, name = rel.rpartition("/")
        parent = get_dir(prel)
        child = parent.children.get(name)
        if child is None or child.fmt != S_IFDIR:
            if child is not None:
                remove(parent, name)
            if overlay is not None:
                st = overlay._merged_dir_stat("/" + rel)
                mode, uid, gid = _stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid
            else:
                mode, uid, gid = 0o755, up.uid, up.gid
            child = up._new(S_IFDIR | mode, uid, gid)
            child.children = {}
            child.nlink = 2
            parent.children[name] = child
            parent.nlink += 1
            if parent.wh and name in parent.wh:
                parent.wh.discard(name)
                child.opaque = True  # a lower entry was deleted here: keep it hidden
        dirs[rel] = child
        return child

    def times(node: Any, m: tarfile.TarInfo) -> None:
        node.uid, node.gid = m.uid, m.gid
        node.mtime = node.atime = float(m.mtime)

    for rel in sorted(plan.opaque, key=_sort_key):
        d = get_dir(rel)
        for n in list(d.children):
            remove(d, n)
        d.wh = None
        if overlay is not None:
            d.opaque = True
    for rel in sorted(plan.whiteouts, key=_sort_key):
        prel, _, name = rel.rpartition("/")
        parent = get_dir(prel)
        remove(parent, name)
        if overlay is not None:
            if parent.wh is None:
                parent.wh = set()
            parent.wh.add(name)
    dir_times: list[tuple[Any, tarfile.TarInfo]] = []
    for rel in sorted(plan.entries, key=_sort_key):
        m = plan.entries[rel]
        if m.isdir():
            node = get_dir(rel)
            node.mode = S_IFDIR | (m.mode & 0o7777)
            dir_times.append((node, m))
            continue
        prel, _, name = rel.rpartition("/")
        parent = get_dir(prel)
        remove(parent, name)
        if m.islnk():
            node = created[m.linkname]
            node.nlink += 1
        elif m.issym():
            node = up._new(S_IFLNK | 0o777, m.uid, m.gid)
            node.target = m.linkname
            times(node, m)
        else:
            node = up._new(S_IFREG | (m.mode & 0o7777), m.uid, m.gid)
            src = tf.extractfile(m)
            data = bytearray(src.read() if src is not None else b"")
            if len(data) != m.size:
                raise SnapshotError(f"truncated archive at {m.name!r}")
            up._charge(len(data))
            node.data = data
            times(node, m)
        parent.children[name] = node
        if parent.wh:
            parent.wh.discard(name)
        created[rel] = node
    for node, m in dir_times:
        times(node, m)
    up.generation += 1


def _finish(fs: Any, p: str, m: tarfile.TarInfo, owners: bool) -> None:
    if owners:
        try:
            fs.chown(p, m.uid, m.gid, follow_symlinks=False)
        except OSError:
            pass
    try:
        fs.utime(p, (m.mtime, m.mtime), follow_symlinks=False)
    except OSError:
        pass


def _import(fileobj: BinaryIO, fs: Any, dest: str, layer: bool, max_entries: int, max_bytes: int,
            owners: bool) -> dict[str, bytes]:
    src = _spool(fileobj)
    tf, plan = _read_plan(src, layer, max_entries, max_bytes)
    try:
        extras: dict[str, bytes] = {}
        for name, m in plan.extras.items():
            f = tf.extractfile(m)
            extras[name] = f.read() if f is not None else b""
        _check_target(fs, dest, plan)
        try:
            if layer and dest == "/" and isinstance(getattr(fs, "upper", None), MemoryFS):
                with fs._lock:
                    _apply_upper(fs.upper, fs, tf, plan)
            elif layer and dest == "/" and isinstance(fs, MemoryFS):
                with fs._lock:
                    _apply_upper(fs, None, tf, plan)
            else:
                _apply(fs, dest, tf, plan, owners)
        except (tarfile.TarError, EOFError) as e:
            raise SnapshotError(f"corrupt archive: {e}") from e
        except OSError as e:
            raise SnapshotError(f"restoring failed at {e.filename}: {e.strerror}") from e
        return extras
    finally:
        tf.close()


def import_layer(fileobj: BinaryIO, overlay_or_fs: Any, *, max_entries: int = DEFAULT_MAX_ENTRIES,
                 max_bytes: int = DEFAULT_MAX_BYTES) -> dict[str, bytes]:
    """Apply an OCI layer tar onto ``overlay_or_fs``; return the ``.agentic-bash/`` members.

    Raises SnapshotError, having written nothing, for any archive the module comment refuses.
    """
    return _import(fileobj, overlay_or_fs, "/", True, max_entries, max_bytes, owners=True)


def import_tar(fileobj: BinaryIO, fs: Any, dest: str = "/", *, max_entries: int = DEFAULT_MAX_ENTRIES,
               max_bytes: int = DEFAULT_MAX_BYTES) -> None:
    """Extract a plain tar below ``dest`` (upload_tar): the same refusals, no whiteouts, no owners."""
    try:
        st = fs.stat(dest)
    except FileNotFoundError:
        _ensure_dirs(fs, dest)
        st = fs.stat(dest)
    if not st.is_dir:
        raise SnapshotError(f"{dest}: not a directory")
    _import(fileobj, fs, fs.realpath(dest), False, max_entries, max_bytes, owners=False)

