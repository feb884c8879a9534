"""Session snapshots (OCI layer tar + ``.agentic-bash/state.json``), restore across modes, reset."""

# Format: an OCI image-layer tar of the session layer as vfs.oci (virtual mode) or
# isolation.layerscan (sandboxed mode) writes it, whose first member is STATE_MEMBER, a JSON
# document:
#   {"format": "agentic-bash/snapshot", "version": 1, "created": <epoch s>,
#    "isolation": level it was taken in, "workdir": ..., "home": ...,
#    "mounts": {sandbox_path: {"source": host_dir, "mode": "cow"|"ro"|"rw"}},
#    "writable": [sandbox paths the layer could hold when it was taken],
#    "excluded_env": [names kept out], "packages": [manifest entries],
#    "shell": executor.get_state() (cwd, vars with attrs: exported/arrays/assoc/readonly...,
#             functions as source, options, shopt, traps, aliases, dirstack, history, umask)}
# Restore invariants: a refused snapshot changes nothing. Hostile names, writes through
# symlinks, devices, caps and truncation are refused by vfs.oci before anything is written
# (and, for the sandboxed mode, already here on the host, before a sandbox process exists);
# entries the target layout cannot hold (e.g. under a read-only /usr) are refused naming
# the paths. Virtual mode swaps in a fresh upper and swaps the old one back on failure;
# sandboxed mode builds a new sandbox process from the layer and keeps the old one until
# the new one is up.

from __future__ import annotations

import io
import json
import os
import time
from dataclasses import dataclass
from typing import Any, BinaryIO, Iterable

from .errors import SandboxError, SnapshotError

__all__ = ["FORMAT", "STATE_MEMBER", "VERSION", "build_state", "read_snapshot", "reset_session",
           "restore_snapshot", "take_snapshot"]

FORMAT = "agentic-bash/snapshot"
VERSION = 1
STATE_MEMBER = ".agentic-bash/state.json"
_SANDBOXED = ("namespace", "landlock")


# ------------------------------------------------------------------------------ taking
def build_state(sb: Any, exclude_env: Iterable[str] = ()) -> dict[str, Any]:
    """The JSON document stored as STATE_MEMBER (see the module comment)."""
    shell = sb._ex.get_state()
    excluded = sorted(set(exclude_env))
    if excluded:
        drop = set(excluded)
        vars_ = shell.get("vars", {})
        secrets = [v["value"] for k, v in vars_.items()
                   if k in drop and isinstance(v.get("value"), str) and len(v["value"]) >= 3]
        shell["vars"] = {k: v for k, v in vars_.items() if k not in drop}
        if secrets and shell.get("history"):
            # the command that set a secret is in the history too: keep its value out
            hist = []
            for line in shell["history"]:
                for sec in secrets:
                    line = line.replace(sec, "[excluded]")
                hist.append(line)
            shell["history"] = hist
    return {
        "format": FORMAT, "version": VERSION, "created": time.time(),
        "isolation": sb.isolation_level, "workdir": sb.workdir, "home": sb.info.home,
        "mounts": {d: {"source": src, "mode": mode} for d, (src, mode) in sb._mounts.items()},
        "writable": _writable_of(sb),
        "excluded_env": excluded,
        "image": getattr(sb._ex, "image_spec", None),
        "packages": list(shell.pop("packages", None) or ()),
        "shell": shell,
    }


def _writable_of(sb: Any) -> list[str]:
    if sb.isolation_level in _SANDBOXED:
        return sorted({u["target"] for u in getattr(sb._ex, "layer_uppers", ())})
    return ["/"]


COMPRESSIONS = ("auto", None, "gzip", "zstd")
# the OCI media type of each form a snapshot layer can take (what the reader accepts)
MEDIA_TYPES = {None: "application/vnd.oci.image.layer.v1.tar",
               "gzip": "application/vnd.oci.image.layer.v1.tar+gzip",
               "zstd": "application/vnd.oci.image.layer.v1.tar+zstd"}
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_GZIP_MAGIC = b"\x1f\x8b"
_MAX_TAR = 1 << 36
"""Bytes a compressed snapshot may expand to (vfs.oci's content cap plus headers: a bomb
is refused while it is being decompressed, not after)."""
_CHUNK = 1 << 20


def _zstd() -> Any:
    try:
        import zstandard
    except ImportError:
        raise SnapshotError("zstd snapshots need the 'zstandard' package "
                            "(pip install zstandard); gzip needs nothing") from None
    return zstandard


def default_compression() -> str:
    """What ``compression="auto"`` (the default) writes: "zstd" (a dependency of the package:
    a third of bashkit's size for 1000 small files, restored as fast as a plain tar), or
    "gzip" from the standard library when ``zstandard`` cannot be imported."""
    try:
        import zstandard  # noqa: F401
    except ImportError:
        return "gzip"
    return "zstd"


def media_type(data: bytes) -> str:
    """The OCI media type of a snapshot's bytes (tar, tar+gzip or tar+zstd, by its magic)."""
    head = bytes(data[:4])
    if head == _ZSTD_MAGIC:
        return MEDIA_TYPES["zstd"]
    if head[:2] == _GZIP_MAGIC:
        return MEDIA_TYPES["gzip"]
    return MEDIA_TYPES[None]


_HOLD = 8 << 20
"""A zstd snapshot up to this size (uncompressed) is held and written as one frame that
states its size: the reader then decompresses it in one step into a buffer of that size.
Past it, the stream is compressed as it comes (memory: this, not the snapshot)."""


class _Compressing:
    """A write-only file object that compresses what it is given into ``sink``; ``close()``
    ends the stream. zstd frames carry a checksum (a flipped byte is refused on restore)."""

    def __init__(self, sink: Any, compression: str) -> None:
        self._put = sink.write
        self._held: list[bytes] | None = None
        self._n = 0
        if compression == "gzip":
            import zlib
            # level 1: a tar of small files is mostly headers and padding, which level 1
            # already squeezes; higher levels cost several times the time for a few per cent
            self._c: Any = zlib.compressobj(1, zlib.DEFLATED, 31)
        else:
            self._cctx = _zstd().ZstdCompressor(level=3, write_checksum=True)
            self._held = []

    def write(self, data: Any) -> int:
        n = len(data)
        held = self._held
        if held is not None:
            if self._n + n <= _HOLD:
                # (a copy: the writer hands views of live file buffers, valid for this call)
                held.append(bytes(data))
                self._n += n
                return n
            self._c = self._cctx.compressobj()
            self._held = None
            for piece in held:
                self.write(piece)
        out = self._c.compress(data)
        if out:
            self._put(out)
        return n

    def close(self) -> None:
        if self._held is not None:
            c = self._cctx.compressobj(size=self._n)
            out = [c.compress(piece) for piece in self._held]
            out.append(c.flush())
            self._held = None
            self._put(b"".join(out))
            return
        out = self._c.flush()
        if out:
            self._put(out)


def compress(data: bytes, compression: str | None) -> bytes:
    """A layer tar as ``compression`` ("auto", None, "gzip" or "zstd") writes it."""
    if compression == "auto":
        compression = default_compression()
    if compression is None:
        return data
    if compression not in COMPRESSIONS:
        raise ValueError(f"compression must be one of 'auto', None, 'gzip', 'zstd', not {compression!r}")
    from .vfs.oci import _Pieces
    out = _Pieces()
    c = _Compressing(out, compression)
    c.write(data)
    c.close()
    return b"".join(out.parts)


def take_snapshot(sb: Any, fileobj: BinaryIO | str | os.PathLike[str] | None, *,
                  exclude_env: Iterable[str] = (), compression: str | None = "auto",
                  parent: Any = None) -> bytes | None:
    if compression not in COMPRESSIONS:
        raise ValueError(f"compression must be one of 'auto', None, 'gzip', 'zstd', not {compression!r}")
    if compression == "auto":
        compression = default_compression()
    elif compression == "zstd":
        _zstd()  # refuse before any work when the package is missing
    if parent is not None:
        # the delta is taken against the whole previous state: a chain is flattened; an
        # incremental snapshot alone does not hold it
        if isinstance(parent, (list, tuple)):
            last = _as_bytes(parent[-1]) if parent else b""
            parent_data = _as_bytes(parent)
        else:
            last = parent_data = _as_bytes(parent)
            if _state_of(_decompress(last)).get("parent"):
                raise SnapshotError("parent= is an incremental snapshot: pass the chain it "
                                    "belongs to, [full, ..., parent]")
    st = build_state(sb, exclude_env)
    if parent is not None:
        st["parent"] = _digest(last)
    state = json.dumps(st, separators=(",", ":")).encode()
    extras = {STATE_MEMBER: state}
    if parent is not None:
        # (the delta compares whole member lists: both tars are read into memory)
        buf = io.BytesIO()
        _take(sb, buf, extras)
        delta = _delta(_decompress(parent_data), buf.getvalue())
        del buf

        def produce(f: Any) -> None:
            f.write(delta)
    else:
        def produce(f: Any) -> None:
            _take(sb, f, extras)
    if compression is None and parent is None:
        return _take(sb, fileobj, extras)

    def write(f: Any) -> None:
        if compression is None:
            produce(f)
            return
        c = _Compressing(f, compression)
        produce(c)
        c.close()
    if fileobj is None:
        from .vfs.oci import _Pieces
        out = _Pieces()
        write(out)
        return b"".join(out.parts)
    if isinstance(fileobj, (str, os.PathLike)):
        from .vfs.oci import write_atomic
        write_atomic(os.fspath(fileobj), write)
        return None
    write(fileobj)
    return None


def _take(sb: Any, fileobj: Any, extras: dict[str, bytes]) -> bytes | None:
    ex = sb._ex
    level = sb.isolation_level
    if level == "virtual":
        from .vfs.oci import export_layer

        overlay = ex.layer.overlay

        def write(f: BinaryIO) -> None:
            export_layer(overlay, f, extra_members=extras)
    elif level in _SANDBOXED:
        def write(f: BinaryIO) -> None:
            ex.export_layer(f, extra_members=extras)
    else:
        raise SnapshotError(f"isolation={level!r} has no session layer to snapshot (the host "
                            "filesystem is used directly); get_state() holds the shell state")
    if fileobj is None:
        if level == "virtual":
            from .vfs.oci import _Pieces
            pieces = _Pieces()  # one join instead of a BytesIO that grows by copies
            write(pieces)  # type: ignore[arg-type]
            return b"".join(pieces.parts)
        buf = io.BytesIO()
        write(buf)
        return buf.getvalue()
    if isinstance(fileobj, (str, os.PathLike)):
        from .vfs.oci import write_atomic
        write_atomic(os.fspath(fileobj), write)
        return None
    write(fileobj)
    return None


# ------------------------------------------------------------------------------ reading
@dataclass
class Loaded:
    """A snapshot read and checked on the host, not applied yet."""

    data: bytes
    state: dict[str, Any] | None
    names: list[tuple[str, str]]   # (absolute path, "d"|"f"|"l"|"wh"|"opq") of every entry


def _digest(data: bytes) -> str:
    import hashlib
    return "sha256:" + hashlib.sha256(_decompress(data)).hexdigest()


def _members(tar: bytes) -> tuple[list[Any], dict[str, Any], dict[str, bytes]]:
    import tarfile

    from .vfs.oci import INDEX_MEMBER
    try:
        tf = tarfile.open(fileobj=io.BytesIO(tar), mode="r:")
        # the index describes this very tar's layout: a rewritten one (delta, chain) has none
        ms = [m for m in tf.getmembers() if m.name != INDEX_MEMBER]
        data = {m.name: tf.extractfile(m).read() for m in ms if m.isreg()}  # type: ignore[union-attr]
    except (tarfile.TarError, OSError, EOFError) as e:
        raise SnapshotError(f"corrupt snapshot layer: {e}") from e
    return ms, {m.name: m for m in ms}, data


def _same(a: Any, b: Any, da: bytes | None, db: bytes | None) -> bool:
    return (a.type == b.type and a.mode == b.mode and a.mtime == b.mtime and a.uid == b.uid
            and a.gid == b.gid and a.linkname == b.linkname and da == db
            and a.pax_headers == b.pax_headers)


def _state_of(tar: bytes) -> dict[str, Any]:
    from .vfs import oci
    f = io.BytesIO(tar)
    try:
        plan = oci._read_plan(f, True, oci.DEFAULT_MAX_ENTRIES, oci.DEFAULT_MAX_BYTES)
    except Exception as e:  # noqa: BLE001 - vfs.oci's refusals name the problem
        raise SnapshotError(f"parent= is not a readable snapshot: {e}") from e
    m = plan.extras.get(STATE_MEMBER)
    return parse_state(bytes(oci._read_data(f, m))) or {} if m is not None else {}


def _delta(parent: bytes, full: bytes) -> bytes:
    """The layer holding only what changed from ``parent`` to ``full`` (both uncompressed
    tars): new or changed entries, and an OCI whiteout for each path that went away."""
    import posixpath
    import tarfile
    _, pmap, pdata = _members(parent)
    cms, cmap, cdata = _members(full)
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for m in cms:
            old = pmap.get(m.name)
            if m.name != STATE_MEMBER and old is not None and _same(old, m, pdata.get(m.name), cdata.get(m.name)):
                continue
            tf.addfile(m, io.BytesIO(cdata[m.name]) if m.isreg() else None)
        gone = sorted(n for n in pmap if n not in cmap and n != STATE_MEMBER)
        covered: list[str] = []
        for n in gone:
            if any(n.startswith(c + "/") for c in covered):
                continue  # a whiteout of the directory takes its contents
            covered.append(n)
            d, base = posixpath.split(n)
            wh = tarfile.TarInfo(posixpath.join(d, ".wh." + base) if d else ".wh." + base)
            wh.mtime = 0
            tf.addfile(wh, io.BytesIO(b""))
    return out.getvalue()


def _flatten(chain: list[bytes]) -> bytes:
    """One layer tar equal to applying ``chain`` (a full snapshot, then incremental ones
    taken with ``parent=`` the one before) in order; refused when the order is wrong."""
    import posixpath
    import tarfile
    layers = [_decompress(_as_bytes(x)) for x in chain]
    order: list[str] = []
    entries: dict[str, tuple[Any, bytes | None]] = {}
    prev: bytes | None = None
    for i, tar in enumerate(layers):
        ms, _, data = _members(tar)
        if i:
            st = None
            for m in ms:
                if m.name == STATE_MEMBER:
                    st = parse_state(data.get(m.name))
            want = (st or {}).get("parent")
            if want is None:
                raise SnapshotError(f"snapshot {i} of the chain was not taken with parent= "
                                    "(only the first may be a full snapshot)")
            if want != "sha256:" + __import__("hashlib").sha256(prev).hexdigest():  # type: ignore[arg-type]
                raise SnapshotError(f"snapshot {i} of the chain was taken from another parent "
                                    "than the one before it")
        for m in ms:
            d, base = posixpath.split(m.name)
            if base == ".wh..wh..opq":
                for n in [n for n in entries if n.startswith(d + "/")]:
                    del entries[n]
                continue
            if base.startswith(".wh."):
                gone = posixpath.join(d, base[4:]) if d else base[4:]
                for n in [n for n in entries if n == gone or n.startswith(gone + "/")]:
                    del entries[n]
                continue
            if m.name not in entries:
                order.append(m.name)
            entries[m.name] = (m, data.get(m.name))
        prev = tar
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tf:
        names = [n for n in order if n in entries]
        if STATE_MEMBER in entries:  # the last state, first (as a full snapshot has it)
            names.remove(STATE_MEMBER)
            names.insert(0, STATE_MEMBER)
        for n in dict.fromkeys(names):
            m, d = entries[n]
            m.name = n
            tf.addfile(m, io.BytesIO(d) if d is not None else None)
    return out.getvalue()


def _as_bytes(src: Any) -> bytes:
    if isinstance(src, (list, tuple)):
        if not src:
            raise SnapshotError("an empty snapshot chain")
        return src[0] if len(src) == 1 and isinstance(src[0], bytes) else _flatten(list(src))
    if isinstance(src, (bytes, bytearray, memoryview)):
        return bytes(src)
    if isinstance(src, (str, os.PathLike)):
        try:
            with open(os.fspath(src), "rb") as f:
                return f.read()
        except OSError as e:
            raise SnapshotError(f"cannot read snapshot {os.fspath(src)}: {e.strerror}") from e
    if hasattr(src, "read"):
        return src.read()
    raise TypeError(f"a snapshot is bytes, a path or a binary file object, not {type(src).__name__}")


def _decompress(data: bytes) -> bytes:
    """The tar inside a snapshot's bytes (tar+zstd, tar+gzip or a plain tar as it is),
    decompressed a chunk at a time up to _MAX_TAR."""
    if data[:4] == _ZSTD_MAGIC:
        zstandard = _zstd()
        try:
            size = _one_frame(zstandard, data)
            if size is not None and size <= min(_HOLD, _MAX_TAR):
                # one frame that states its size (as _Compressing writes up to _HOLD) and
                # ends where the data does: one step into a buffer of that size (more
                # output than stated is an error); larger ones go step by step
                return zstandard.ZstdDecompressor().decompress(data)
            return _bounded(_unzstd(zstandard, data))
        except SnapshotError:
            raise
        except Exception as e:  # noqa: BLE001 - zstandard.ZstdError and friends
            raise SnapshotError(f"corrupt compressed snapshot: {e}") from e
    if data[:2] == _GZIP_MAGIC:
        import zlib
        try:
            return _bounded(_gunzip(data))
        except (OSError, EOFError, zlib.error) as e:
            raise SnapshotError(f"corrupt compressed snapshot: {e}") from e
    return data


def _one_frame(zstandard: Any, data: bytes) -> int | None:
    """The content size a zstd stream's first frame states when that frame is all of
    ``data`` (its blocks walked by their headers, RFC 8878 3.1.1.2), else None."""
    try:
        params = zstandard.get_frame_parameters(data)
        pos = zstandard.frame_header_size(data)
    except zstandard.ZstdError:
        return None
    size = params.content_size
    if size == zstandard.CONTENTSIZE_UNKNOWN or size < 0:
        return None
    n = len(data)
    while pos + 3 <= n:
        head = data[pos] | data[pos + 1] << 8 | data[pos + 2] << 16
        kind = head >> 1 & 3
        if kind == 3:
            return None   # reserved: the decoder refuses it
        pos += 3 + (1 if kind == 1 else head >> 3)   # (a run-length block holds one byte)
        if head & 1:      # the last block
            pos += 4 if params.has_checksum else 0
            return size if pos == n else None
    return None


def _unzstd(zstandard: Any, data: bytes) -> Iterable[bytes]:
    """The frames of a zstd stream (zstd(1) concatenates them), 4 KiB of input at a time: a
    frame of run-length blocks expands ~30000 times, so the output of one step stays ~10^8
    bytes however the input was made (zstandard's stream_reader ends a truncated frame
    silently, its decompressobj does not bound one call's output: hence the steps)."""
    view = memoryview(data)
    pos = 0
    while pos < len(view):
        d = zstandard.ZstdDecompressor().decompressobj()
        while not d.eof:
            if pos >= len(view):
                raise EOFError("the zstd stream ends before its frame does")
            piece = view[pos:pos + 4096]
            pos += len(piece)
            out = d.decompress(piece)
            if out:
                yield out
        pos -= len(d.unused_data)


def _gunzip(data: bytes) -> Iterable[bytes]:
    """The members of a gzip stream (gzip(1) concatenates them), a chunk at a time."""
    import zlib
    while data:
        d = zlib.decompressobj(31)
        while True:
            out = d.decompress(data, _CHUNK)
            data = d.unconsumed_tail
            if out:
                yield out
            if d.eof:
                break
            if not data and not out:
                raise EOFError("the gzip stream ends before its end marker")
        data = d.unused_data
        if data[:2] != _GZIP_MAGIC:
            return  # (gzip(1) too ignores what follows the last member)


def _bounded(chunks: Iterable[bytes]) -> bytes:
    parts: list[bytes] = []
    total = 0
    for c in chunks:
        total += len(c)
        if total > _MAX_TAR:
            raise SnapshotError(f"the compressed snapshot expands past {_MAX_TAR} bytes")
        parts.append(c)
    return parts[0] if len(parts) == 1 else b"".join(parts)  # (one chunk: no copy)


def parse_state(raw: bytes | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    try:
        st = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise SnapshotError(f"{STATE_MEMBER} is not valid JSON: {e}") from e
    if not isinstance(st, dict) or st.get("format") != FORMAT:
        raise SnapshotError(f"{STATE_MEMBER} is not an agentic-bash snapshot state")
    v = st.get("version")
    if not isinstance(v, int) or v > VERSION:
        raise SnapshotError(f"snapshot format version {v!r} is newer than this agentic-bash "
                            f"understands ({VERSION})")
    if not isinstance(st.get("shell", {}), dict):
        raise SnapshotError(f"{STATE_MEMBER}: 'shell' is not an object")
    return st


def read_snapshot(src: Any, *, max_entries: int | None = None,
                  max_bytes: int | None = None) -> Loaded:
    """Read and validate a snapshot on the host: every refusal of vfs.oci's import (names,
    symlink parents, devices, caps, truncation) happens here, before anything is written."""
    from .vfs import oci

    data = _decompress(_as_bytes(src))
    f = io.BytesIO(data)
    plan = oci._read_plan(f, True, max_entries or oci.DEFAULT_MAX_ENTRIES,
                          max_bytes or oci.DEFAULT_MAX_BYTES)
    raw = None
    m = plan.extras.get(STATE_MEMBER)
    if m is not None:
        raw = bytes(oci._read_data(f, m))
    names: list[tuple[str, str]] = [("/" + n, plan.declared[n]) for n in plan.entries]
    names += [("/" + w, "wh") for w in plan.whiteouts]
    names += [("/" + o if o else "/", "opq") for o in plan.opaque]
    state = parse_state(raw)
    _lone_incremental(src, state)
    return Loaded(data, state, names)


def _under(path: str, prefix: str) -> bool:
    return prefix == "/" or path == prefix or path.startswith(prefix.rstrip("/") + "/")


def fit_layout(loaded: Loaded, writable: list[str]) -> bytes:
    """The layer to hand a sandboxed executor whose session layer holds ``writable``: the
    directories leading to those mount points are the sandbox's layout, not the layer's, and
    are left out; anything else outside them cannot be honoured -> SnapshotError naming it."""
    from .vfs import oci

    drop: set[str] = set()
    blocked: list[str] = []
    for path, kind in loaded.names:
        if any(_under(path, w) and path != w.rstrip("/") for w in writable):
            continue
        if any(_under(path, w) for w in writable) and kind in ("d", "opq"):
            if kind == "d":
                drop.add(path)
            continue
        if kind == "d" and any(_under(w, path) for w in writable):
            drop.add(path)   # an ancestor of a mount point: part of the layout
            continue
        blocked.append(path)
    if blocked:
        blocked.sort()
        shown = ", ".join(blocked[:10]) + (f" and {len(blocked) - 10} more" if len(blocked) > 10 else "")
        raise SnapshotError(f"snapshot entries cannot be restored here (outside the writable "
                            f"paths {', '.join(sorted(writable))}): {shown}")
    if not drop:
        return loaded.data
    src = io.BytesIO(loaded.data)
    out = io.BytesIO()
    tw = oci._TarWriter(out)
    for m in oci._read_members(src, 1 << 62, 1 << 62):
        name = oci._clean_name(m.name)
        if (m.isdir() and "/" + name in drop) or name == oci.INDEX_MEMBER:
            continue  # (the index describes the old layout)
        data = oci._read_data(src, m) if m.isreg() and m.size else None
        tw.add(m.name, m.type if m.type != b"\0" else b"0", m.mode, m.uid, m.gid, m.mtime,
               m.linkname, data=data)
    tw.close()
    return out.getvalue()


def _sandbox_writable(sb: Any, level: str, opts: dict[str, Any]) -> list[str]:
    """The sandbox paths a new sandboxed session's layer holds (isolation/rootfs.py layout)."""
    ex = getattr(sb, "_ex", None)
    if ex is not None and getattr(ex, "layer_uppers", None):
        out = {u["target"] for u in ex.layer_uppers}
    else:
        from .isolation.plan import plan as make_plan
        from .isolation.probe import probe
        p = make_plan(level, probe())
        out = {opts["workdir"], opts["info"].home, "/tmp"}
        if p.cow_system or opts.get("base") is not None:
            out.update(("/usr", "/etc", "/opt", "/var"))
        for dest, (_src, mode) in (opts.get("mounts") or {}).items():
            if mode == "cow":
                out.add(dest)
    for dest, (_src, mode) in (opts.get("mounts") or {}).items():
        if mode == "rw":
            out.add(dest)
    out.add("/var/tmp")
    return sorted(out)


# ------------------------------------------------------------------------------ applying
def _merged_shell(state: dict[str, Any] | None, fresh: dict[str, Any], target_level: str) -> dict[str, Any]:
    """The shell state to install: the snapshot's; across modes the target's own exported
    defaults (e.g. the sandboxed mode's PIP_* settings) are kept where the snapshot has none."""
    if state is None:
        return fresh
    shell = dict(state.get("shell") or {})
    shell["packages"] = list(state.get("packages") or ())
    if state.get("isolation") != target_level:
        vars_ = dict(shell.get("vars") or {})
        excluded = set(state.get("excluded_env") or ())
        for k, v in (fresh.get("vars") or {}).items():
            if k not in vars_ and k not in excluded and int(v.get("attrs", 0)) & 1:
                vars_[k] = v
        shell["vars"] = vars_
    return shell


def _set_state(ex: Any, shell: dict[str, Any]) -> None:
    try:
        ex.set_state(shell)
    except SnapshotError:
        raise
    except (SandboxError, ValueError, TypeError, KeyError, AttributeError) as e:
        raise SnapshotError(f"the snapshot's shell state cannot be restored: {e}") from e


def _cancel_jobs(ex: Any) -> None:
    cancel = getattr(ex, "_cancel_jobs", None)
    if cancel is not None:
        try:
            cancel()
        except Exception:  # noqa: BLE001
            pass


def _new_sandboxed(sb: Any, layer: bytes | None) -> tuple[Any, str, Any]:
    from .session import _make_executor
    ex, level, report = _make_executor(sb.isolation_level, **sb._options)
    if layer is not None:
        try:
            _import_into_sandbox(ex, layer)
        except BaseException:
            ex.close()
            raise
    return ex, level, report


def _import_into_sandbox(ex: Any, layer: bytes) -> None:
    # over the session channel, not SandboxedExecutor(layer_tar=...): the zygote's spawn
    # message is size-limited, a snapshot is not
    try:
        ex._call("import_layer", data=layer)
    except SnapshotError:
        raise
    except (SandboxError, OSError) as e:
        raise SnapshotError(f"the sandbox could not restore the snapshot: {e}") from e


def _restore_virtual(sb: Any, src: Any, max_entries: int | None, max_bytes: int | None,
                     fresh: dict[str, Any]) -> None:
    from .vfs import oci

    ex = sb._ex
    layer = ex.layer
    data = _decompress(_as_bytes(src))
    old_upper = layer.upper
    old_state = ex.get_state()
    _cancel_jobs(ex)
    layer.reset()
    try:
        extras = oci.import_layer(io.BytesIO(data), layer.root,
                                  max_entries=max_entries or oci.DEFAULT_MAX_ENTRIES,
                                  max_bytes=max_bytes or oci.DEFAULT_MAX_BYTES)
        state = parse_state(extras.get(STATE_MEMBER))
        _lone_incremental(src, state)
        _set_state(ex, _merged_shell(state, fresh, "virtual"))
    except BaseException:
        layer.overlay.swap_upper(old_upper)
        layer.upper = old_upper
        ex.set_state(old_state)
        raise


def _lone_incremental(src: Any, state: dict[str, Any] | None) -> None:
    # (check10) an incremental snapshot holds only what changed: restored alone it was a
    # session missing every file its parent held, without a word
    if (state or {}).get("parent") and not (isinstance(src, (list, tuple)) and len(src) > 1):
        raise SnapshotError("an incremental snapshot (taken with parent=): restore the chain "
                            "it belongs to, [full, ..., this]")


def restore_snapshot(sb: Any, src: Any, *, max_entries: int | None = None,
                     max_bytes: int | None = None) -> None:
    level = sb.isolation_level
    if level == "virtual":
        _restore_virtual(sb, src, max_entries, max_bytes, sb._initial_state)
        return
    if level not in _SANDBOXED:
        raise SnapshotError(f"isolation={level!r} has no session layer to restore into")
    loaded = read_snapshot(src, max_entries=max_entries, max_bytes=max_bytes)
    layer = fit_layout(loaded, _sandbox_writable(sb, level, sb._options))
    ex, lvl, report = _new_sandboxed(sb, layer)
    try:
        shell = _merged_shell(loaded.state, ex.get_state(), lvl)
        _set_state(ex, shell)
    except BaseException:
        ex.close()
        raise
    sb._swap_executor(ex, lvl, report)


def reset_session(sb: Any) -> None:
    level = sb.isolation_level
    ex = sb._ex
    if level in _SANDBOXED:
        new, lvl, report = _new_sandboxed(sb, None)
        sb._swap_executor(new, lvl, report)
        return
    _cancel_jobs(ex)
    layer = getattr(ex, "layer", None)
    if layer is not None:
        layer.reset()   # O(1): a fresh upper; the lowers are shared and untouched
    ex.set_state(sb._initial_state)


# ------------------------------------------------------------------------------ from_snapshot
@dataclass
class _Pending:
    src: Any
    loaded: Loaded | None
    max_entries: int | None
    max_bytes: int | None


def prepare_for_constructor(sb: Any, spec: Any, opts: dict[str, Any]) -> _Pending:
    """Before the executor exists: a sandboxed target takes the layer at construction."""
    src, max_entries, max_bytes = spec if isinstance(spec, tuple) else (spec, None, None)
    from .isolation.plan import plan as make_plan
    from .isolation.probe import probe
    p = make_plan(sb.requested_isolation, probe(), strict=opts.get("strict", False),
                  network=opts.get("network", "allow"))
    if p.level in _SANDBOXED:
        loaded = read_snapshot(src, max_entries=max_entries, max_bytes=max_bytes)
        if loaded.state and loaded.state.get("image") and opts.get("image") is None:
            # the session was started from an image: its files are a lower, not in the layer
            opts["image"] = sb._options["image"] = loaded.state["image"]
        loaded.data = fit_layout(loaded, _sandbox_writable(None, p.level, opts))
        return _Pending(None, loaded, max_entries, max_bytes)
    if p.level != "virtual":
        raise SnapshotError(f"isolation={p.level!r} has no session layer to restore into")
    return _Pending(src, None, max_entries, max_bytes)


def finish_constructor(sb: Any, pending: _Pending) -> None:
    if pending.loaded is not None:   # sandboxed: import the layer, install the shell state
        ex = sb._ex
        _import_into_sandbox(ex, pending.loaded.data)
        _set_state(ex, _merged_shell(pending.loaded.state, ex.get_state(), sb.isolation_level))
        return
    if sb.isolation_level in _SANDBOXED:  # planned virtual, got sandboxed: cannot happen
        raise SnapshotError("internal: isolation level changed during construction")
    _restore_virtual(sb, pending.src, pending.max_entries, pending.max_bytes, sb._initial_state)
