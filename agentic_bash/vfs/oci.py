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

import errno
import gzip
import io
import json
import operator
import os
import posixpath
import shutil
import struct
import stat as _stat
import tempfile
import zlib
from typing import Any, BinaryIO, Callable, Iterator

from ..errors import SnapshotError
from .memory import S_IFDIR, S_IFLNK, S_IFREG, MemoryFS, _err, _Inode, _time
from .paths import join

__all__ = [
    "DEFAULT_MAX_BYTES", "DEFAULT_MAX_ENTRIES", "EXTRA_PREFIX", "export_layer", "export_tar",
    "import_layer", "import_tar", "write_atomic",
]

EXTRA_PREFIX = ".agentic-bash/"
INDEX_MEMBER = ".agentic-bash/index.json"
"""The last extra member of a layer export_layer writes with extra members (a snapshot): where every following member's
header sits and what it holds, so a restore from bytes reads one JSON list instead of
parsing a header (and a PAX header) per entry. Checked against the headers it names
(positions that tile the archive to its end, name, type, size) and ignored when they
disagree, so a tar rewritten by any tool is read the slow way; never returned as an extra."""
_INDEX_MAX = 64 << 20  # a layer larger than this is written straight out, without an index
WH = ".wh."
OPQ = ".wh..wh..opq"
DEFAULT_MAX_ENTRIES = 2_000_000
"""Members an imported archive may hold (a session with node_modules has ~10^5)."""
DEFAULT_MAX_BYTES = 16 * 1024 ** 3
"""Bytes of file content an imported archive may hold."""
_COPY = 1 << 20


# ------------------------------------------------------------------------------ tar codec
# A small ustar/PAX codec instead of ``tarfile``: its per-member Python overhead (~45 µs to
# parse a header here) made 10^5-entry snapshots take seconds. Output is POSIX.1-2001 (pax):
# a ``x`` header carries what ustar cannot hold exactly (long or non-ASCII names and link
# targets, fractional mtimes, sizes >= 8 GiB); GNU ``L``/``K`` long names are read too.

REGTYPE, LNKTYPE, SYMTYPE, DIRTYPE = b"0", b"1", b"2", b"5"
_BLOCK = 512
_ZERO = bytes(_BLOCK)
_HDR = struct.Struct("100s8s8s8s12s12s8s1s100s6s2s32s32s8s8s155s12s")


class Member:
    """One archive member (the fields of ``Member`` this module needs)."""

    __slots__ = ("name", "type", "linkname", "mode", "uid", "gid", "mtime", "size", "offset_data")

    def __init__(self, name: str, type: bytes, linkname: str = "", mode: int = 0o644, uid: int = 0,
                 gid: int = 0, mtime: float = 0, size: int = 0, offset_data: int = 0) -> None:
        self.name, self.type, self.linkname = name, type, linkname
        self.mode, self.uid, self.gid, self.mtime = mode, uid, gid, mtime
        self.size, self.offset_data = size, offset_data

    def isreg(self) -> bool:
        return self.type in (b"0", b"\0", b"7")

    def isdir(self) -> bool:
        return self.type == b"5"

    def issym(self) -> bool:
        return self.type == b"2"

    def islnk(self) -> bool:
        return self.type == b"1"

    def ischr(self) -> bool:
        return self.type == b"3"

    def isblk(self) -> bool:
        return self.type == b"4"

    def isfifo(self) -> bool:
        return self.type == b"6"


def _enc(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


def _dec(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def _octal(n: int, width: int) -> bytes:
    return b"%0*o\0" % (width - 1, n)


def _pax_record(key: str, value: bytes) -> bytes:
    body = b" " + _enc(key) + b"=" + value + b"\n"
    n = len(body) + 1
    while len(str(n)) + len(body) != n:
        n = len(str(n)) + len(body)
    return str(n).encode() + body


def _header(name: bytes, mode: int, uid: int, gid: int, size: int, mtime: int, typeflag: bytes,
            linkname: bytes = b"") -> bytes:
    h = bytearray(_HDR.pack(
        name, _octal(mode & 0o7777, 8), _octal(uid, 8), _octal(gid, 8), _octal(size, 12),
        _octal(mtime, 12), b"        ", typeflag, linkname, b"ustar\0", b"00", b"", b"",
        _octal(0, 8), _octal(0, 8), b"", b""))
    h[148:156] = b"%06o\0 " % sum(h)
    return bytes(h)


class _TarWriter:
    """Writes pax-format members to a binary file object."""

    def __init__(self, out: BinaryIO, index: list | None = None) -> None:
        self.out = out
        self._pax_n = 0
        self.pos = 0
        self.index = index  # INDEX_MEMBER's entries, when collecting them

    def add(self, name: str, typeflag: bytes, mode: int = 0o644, uid: int = 0, gid: int = 0,
            mtime: float = 0, linkname: str = "", data: Any = None) -> None:
        bname, blink = _enc(name), _enc(linkname)
        size = 0 if data is None else len(data)
        imtime = int(mtime)
        pax = []
        if len(bname) > 100 or not bname.isascii():
            pax.append(_pax_record("path", bname))
        if len(blink) > 100 or not blink.isascii():
            pax.append(_pax_record("linkpath", blink))
        if mtime != imtime or not 0 <= imtime < 8 ** 11:
            pax.append(_pax_record("mtime", repr(float(mtime)).encode()))
            imtime = max(0, min(imtime, 8 ** 11 - 1))
        if size >= 8 ** 11:
            pax.append(_pax_record("size", str(size).encode()))
        if not 0 <= uid < 8 ** 7:
            pax.append(_pax_record("uid", str(uid).encode()))
            uid = 0
        if not 0 <= gid < 8 ** 7:
            pax.append(_pax_record("gid", str(gid).encode()))
            gid = 0
        w = self.out.write
        start = self.pos
        if pax:
            body = b"".join(pax)
            self._pax_n += 1
            w(_header(b"PaxHeaders/%d" % self._pax_n, 0o644, 0, 0, len(body), imtime, b"x"))
            w(body)
            w(_ZERO[: -len(body) % _BLOCK])
            self.pos += _BLOCK + len(body) + (-len(body) % _BLOCK)
        if self.index is not None:
            # (where the header sits after the previous member's end: 0, or past a PAX header)
            self.index.append([self.pos - start, name, typeflag.decode(), mode, uid, gid, mtime, size, linkname])
        w(_header(bname[:100], mode, uid, gid, size if size < 8 ** 11 else 0, imtime, typeflag, blink[:100]))
        self.pos += _BLOCK
        if size:
            w(data)
            w(_ZERO[: -size % _BLOCK])
            self.pos += size + (-size % _BLOCK)

    def close(self) -> None:
        self.out.write(_ZERO * 2)


def _number(field: bytes) -> int:
    if field and field[0] & 0x80:  # GNU base-256
        n = int.from_bytes(field[1:], "big")
        return n - (1 << (8 * (len(field) - 1))) if field[0] & 0x40 else n
    field = field.split(b"\0", 1)[0].strip()
    return int(field, 8) if field else 0


def _parse_pax(body: bytes) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    pos = 0
    while pos < len(body):
        sp = body.find(b" ", pos)
        if sp < 0:
            break
        try:
            n = int(body[pos:sp])
        except ValueError:
            raise SnapshotError("corrupt pax header") from None
        if n <= 0 or pos + n > len(body):
            raise SnapshotError("corrupt pax header")
        rec = body[sp + 1: pos + n - 1]
        k, _, v = rec.partition(b"=")
        out[_dec(k)] = v
        pos += n
    return out


def _read_members(f: BinaryIO, max_entries: int, max_bytes: int,
                  ended: list[bool] | None = None) -> Iterator[Member]:
    """Members of the seekable tar ``f``; raises SnapshotError for corrupt or truncated input.
    ``ended`` gets True appended when the end-of-archive block was there."""
    f.seek(0, 2)
    total_size = f.tell()
    f.seek(0)
    pos = 0
    pax: dict[str, bytes] = {}
    gpax: dict[str, bytes] = {}
    longname: bytes | None = None
    longlink: bytes | None = None
    count = 0
    content = 0
    while True:
        block = f.read(_BLOCK)
        if not block:
            return  # end of file without end-of-archive blocks: tolerated like GNU tar
        if len(block) < _BLOCK:
            raise SnapshotError("truncated archive (partial header)")
        if block == _ZERO:
            if ended is not None:
                ended.append(True)
            return
        fields = _HDR.unpack(block)
        try:
            chk = _number(fields[6])
        except ValueError:
            raise SnapshotError("corrupt archive (bad header checksum)") from None
        # (zero bytes add nothing: summing only the others is several times faster on a
        # header, which is mostly NULs)
        if chk != sum(block.translate(None, b"\0")) - sum(block[148:156]) + 256:
            raise SnapshotError("corrupt archive (bad header checksum)")
        typeflag = fields[7] or b"0"
        try:
            size = _number(fields[4])
        except ValueError:
            raise SnapshotError("corrupt archive (bad size field)") from None
        data_at = pos + _BLOCK
        pos = data_at + size + (-size % _BLOCK)
        if typeflag in (b"x", b"g", b"L", b"K"):
            if size > 16 << 20:
                raise SnapshotError("corrupt archive (oversized extended header)")
            body = f.read(size)
            if len(body) < size:
                raise SnapshotError("truncated archive")
            f.seek(pos)
            if typeflag == b"x":
                pax = _parse_pax(body)
            elif typeflag == b"g":
                gpax.update(_parse_pax(body))
            elif typeflag == b"L":
                longname = body.split(b"\0", 1)[0]
            else:
                longlink = body.split(b"\0", 1)[0]
            continue
        attrs = {**gpax, **pax} if gpax else pax
        name = fields[0].split(b"\0", 1)[0]
        if fields[9] == b"ustar\0":  # POSIX ustar: prefix field; GNU ("ustar  ") has none
            prefix = fields[15].split(b"\0", 1)[0]
            if prefix:
                name = prefix + b"/" + name
        if longname is not None:
            name = longname
        link = fields[8].split(b"\0", 1)[0]
        if longlink is not None:
            link = longlink
        if "path" in attrs:
            name = attrs["path"]
        if "linkpath" in attrs:
            link = attrs["linkpath"]
        try:
            if "size" in attrs:
                size = int(attrs["size"])
                pos = data_at + size + (-size % _BLOCK)
            mtime: float = float(attrs["mtime"]) if "mtime" in attrs else _number(fields[5])
            uid = int(attrs["uid"]) if "uid" in attrs else _number(fields[2])
            gid = int(attrs["gid"]) if "gid" in attrs else _number(fields[3])
            mode = _number(fields[1])
        except ValueError:
            raise SnapshotError("corrupt archive (bad numeric field)") from None
        if typeflag == b"S" or (attrs and any(k.startswith("GNU.sparse") for k in attrs)):
            raise SnapshotError(f"refused sparse member {_dec(name)!r}")
        pax, longname, longlink = {}, None, None
        if typeflag not in (b"0", b"\0", b"7"):
            size_for_data = size if typeflag != b"1" else 0
        else:
            size_for_data = size
        if data_at + size_for_data > total_size:
            raise SnapshotError("truncated archive")
        count += 1
        if count > max_entries:
            raise SnapshotError(f"archive has more than {max_entries} entries")
        if typeflag in (b"0", b"\0", b"7"):
            content += size
            if content > max_bytes:
                raise SnapshotError(f"archive content exceeds {max_bytes} bytes")
        yield Member(_dec(name), typeflag, _dec(link), mode, uid, gid, mtime, size, data_at)
        f.seek(pos)


def _read_data(f: BinaryIO, m: Member) -> bytearray:
    f.seek(m.offset_data)
    data = bytearray(m.size)
    got = f.readinto(data) if m.size else 0  # type: ignore[attr-defined]
    while got < m.size:  # short reads from raw files and pipes
        n = f.readinto(memoryview(data)[got:])  # type: ignore[attr-defined]
        if not n:
            raise SnapshotError(f"truncated archive at {m.name!r}")
        got += n
    return data


# ------------------------------------------------------------------------------ export
def _add_extras(tw: _TarWriter, extras: dict[str, bytes] | None) -> None:
    for name, data in sorted((extras or {}).items()):
        if not name.startswith(EXTRA_PREFIX):
            raise ValueError(f"extra member {name!r} must be under {EXTRA_PREFIX}")
        tw.add(name, REGTYPE, 0o644, data=data)


def export_layer(overlay: Any, fileobj: BinaryIO, *, extra_members: dict[str, bytes] | None = None) -> None:
    """Write the upper layer of ``overlay`` (OverlayFS or a bare MemoryFS) as an OCI layer tar."""
    upper = _upper_of(overlay)
    if upper is None:
        raise TypeError(f"export_layer needs an OverlayFS, MountFS over one, or MemoryFS, not {overlay!r}")
    tw = _TarWriter(fileobj)
    _add_extras(tw, extra_members)
    with upper._lock:
        # small layers go through a buffer first: INDEX_MEMBER precedes them and holds
        # their positions (relative to its end: the JSON's own length does not matter)
        lw = tw
        if extra_members and upper.bytes_used + upper.files_used * 2 * _BLOCK <= _INDEX_MAX:
            lw = _TarWriter(_Pieces(), [])  # type: ignore[arg-type]
        root = upper._root
        if root.opaque:
            lw.add(OPQ, REGTYPE)
        for n in sorted(root.wh or ()):
            lw.add(WH + n, REGTYPE)
        _export_dir(lw, root, "", {})
        if lw is not tw:
            # joined under the lock: the pieces include views of the files' live buffers
            body = b"".join(lw.out.parts)  # type: ignore[attr-defined]
            lw.out.parts.clear()  # type: ignore[attr-defined]
    if lw is not tw:
        tw.add(INDEX_MEMBER, REGTYPE, 0o644, data=json.dumps(lw.index, separators=(",", ":")).encode())
        fileobj.write(body)
    tw.close()


class _Pieces:
    """A write-only sink that keeps what it is given (one join at the end)."""

    def __init__(self) -> None:
        self.parts: list[Any] = []
        self.write = self.parts.append


def _upper_of(fs: Any) -> MemoryFS | None:
    """The session layer behind ``fs``: OverlayFS.upper, MountFS.root.upper, LayerInfo.upper."""
    if isinstance(fs, MemoryFS):
        return fs
    for cand in (getattr(fs, "upper", None), getattr(getattr(fs, "root", None), "upper", None)):
        if isinstance(cand, MemoryFS):
            return cand
    return None


def _export_dir(tw: _TarWriter, node: Any, prefix: str, seen: dict[int, str]) -> None:
    add = tw.add
    for name in sorted(node.children):
        child = node.children[name]
        rel = prefix + name
        if not prefix and name + "/" == EXTRA_PREFIX:
            continue  # reserved for the state members
        fmt = child.fmt
        if fmt == S_IFDIR:
            add(rel, DIRTYPE, child.mode, child.uid, child.gid, child.mtime)
            if child.opaque:
                add(rel + "/" + OPQ, REGTYPE)
            for w in sorted(child.wh or ()):
                add(rel + "/" + WH + w, REGTYPE)
            _export_dir(tw, child, rel + "/", seen)
        elif fmt == S_IFREG:
            if child.nlink > 1:
                first = seen.get(id(child))
                if first is not None:
                    add(rel, LNKTYPE, child.mode, child.uid, child.gid, child.mtime, first)
                    continue
                seen[id(child)] = rel
            add(rel, REGTYPE, child.mode, child.uid, child.gid, child.mtime, data=memoryview(child.data))
        elif fmt == S_IFLNK:
            add(rel, SYMTYPE, 0o777, child.uid, child.gid, child.mtime, child.target or "")
        # devices and FIFOs are not part of a snapshot


def export_tar(fs: Any, path: str, fileobj: BinaryIO, max_bytes: int | None = None) -> None:
    """A plain tar of the merged subtree at ``path`` (names relative to it), e.g. download_tar;
    past ``max_bytes`` OSError EFBIG, checked before a file is read (attack9: a 3 GiB sparse
    file read whole took the sandbox process past its memory limit)."""
    tw = _TarWriter(fileobj)
    tw.limit = max_bytes  # type: ignore[attr-defined]
    st = fs.stat(path)
    if not st.is_dir:
        _export_entry(tw, fs, path, posixpath.basename(path) or "file", st, {})
    else:
        _export_walk(tw, fs, path, "", {})
    tw.close()


def _export_walk(tw: _TarWriter, fs: Any, path: str, prefix: str, seen: dict) -> None:
    for name in sorted(fs.listdir(path)):
        p = join(path, name)
        try:
            st = fs.stat(p, follow_symlinks=False)
        except OSError:
            continue
        rel = prefix + name
        _export_entry(tw, fs, p, rel, st, seen)
        if st.is_dir:
            _export_walk(tw, fs, p, rel + "/", seen)


def _export_entry(tw: _TarWriter, fs: Any, p: str, rel: str, st: Any, seen: dict) -> None:
    args = (st.st_mode, st.st_uid, st.st_gid, st.st_mtime)
    if st.is_dir:
        tw.add(rel, DIRTYPE, *args)
    elif st.is_symlink:
        tw.add(rel, SYMTYPE, *args, fs.readlink(p))
    elif st.is_file:
        key = (st.st_dev, st.st_ino)
        if st.st_nlink > 1 and st.st_ino and key in seen:
            tw.add(rel, LNKTYPE, *args, seen[key])
            return
        seen[key] = rel
        lim = getattr(tw, "limit", None)
        if lim is not None and tw.pos + st.st_size > lim:
            raise OSError(errno.EFBIG, f"the tar would pass {lim} bytes", p)
        with fs.open(p, "rb") as f:
            data = f.read()
        tw.add(rel, REGTYPE, *args, data=data)


# ------------------------------------------------------------------------------ import
class _Plan:
    __slots__ = ("opaque", "whiteouts", "entries", "extras", "declared", "skip_devices")

    def __init__(self, skip_devices: bool = False) -> None:
        self.skip_devices = skip_devices
        self.opaque: list[str] = []
        self.whiteouts: list[str] = []
        self.entries: dict[str, Member] = {}
        self.extras: dict[str, Member] = {}
        self.declared: dict[str, str] = {}   # relative path -> "d" | "l" | "f"


def _clean_name(raw: str) -> str:
    if "/." not in "/" + raw and "//" not in raw and raw[:1] != "/" and "\0" not in raw:
        return raw.rstrip("/")  # fast path: no component starts with ".", so none is "." or ".."
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
    """A seekable, uncompressed view of the input (copied to a spooled temp file if needed)."""
    f = fileobj
    try:
        seekable = f.seekable()
        if seekable:
            start = f.tell()
            magic = f.read(2)
            f.seek(start)
            if start == 0 and magic != b"\x1f\x8b":
                return f
    except (AttributeError, OSError, ValueError):
        seekable = False
    sp = tempfile.SpooledTemporaryFile(max_size=64 << 20)
    src: Any = f
    head = f.read(2)
    if head == b"\x1f\x8b":
        src = gzip.GzipFile(fileobj=_Prepend(head, f))
        head = b""
    sp.write(head)
    try:
        shutil.copyfileobj(src, sp, _COPY)
    except (OSError, EOFError, zlib.error) as e:
        raise SnapshotError(f"corrupt compressed archive: {e}") from e
    sp.seek(0)
    return sp  # type: ignore[return-value]


class _Prepend:
    def __init__(self, head: bytes, f: Any) -> None:
        self.head, self.f = head, f

    def read(self, n: int = -1) -> bytes:
        if self.head:
            h, self.head = self.head, b""
            return h + (self.f.read(n - len(h)) if n > len(h) else b"" if n >= 0 else self.f.read())
        return self.f.read(n)


def _read_plan(fileobj: BinaryIO, layer: bool, max_entries: int, max_bytes: int,
               skip_devices: bool = False) -> _Plan:
    plan = _Plan(skip_devices)
    seen = content = 0
    ended: list[bool] = []
    ours = False
    for m in _read_members(fileobj, max_entries, max_bytes, ended):
        # (check10) a snapshot we wrote (it has .agentic-bash/ members) always ends with
        # the end-of-archive block: a plain one cut at a member boundary was restored
        # silently with the rest of its files missing
        ours = ours or m.name.startswith(EXTRA_PREFIX)
        if layer and m.name == INDEX_MEMBER and m.isreg():
            rest = _indexed(fileobj, m)
            if rest is not None:
                if seen + len(rest) > max_entries:
                    raise SnapshotError(f"archive has more than {max_entries} entries")
                if content + sum([x.size for x in rest if x.type in _REG]) > max_bytes:
                    raise SnapshotError(f"archive content exceeds {max_bytes} bytes")
                entries, declared = plan.entries, plan.declared
                names = [x.name for x in rest]
                kinds = [_KIND.get(x.type) for x in rest]
                # the common layer in bulk: every entry a file or directory whose name has no
                # component starting with "." (no extra, whiteout, "." or ".."), no "//", NUL,
                # leading or trailing "/" (joined with "\n/": a "\n" in a name only adds
                # matches, so a miss here is a miss in every name)
                joined = "/" + "\n/".join(names) + "\n"
                if (None not in kinds and "/." not in joined and "//" not in joined
                        and "\0" not in joined and "/\n" not in joined):
                    entries.update(zip(names, rest))
                    declared.update(zip(names, kinds))
                    break
                for x in rest:
                    raw = x.name
                    t = x.type
                    # _plan_member's first case inlined: a file or directory whose name has
                    # no component starting with "." (so no extra, whiteout, "." or "..")
                    if ((t == REGTYPE or t == DIRTYPE) and "/." not in "/" + raw and "//" not in raw
                            and raw[:1] != "/" and "\0" not in raw):
                        name = raw.rstrip("/")
                        if name:
                            entries[name] = x
                            declared[name] = "f" if t == REGTYPE else "d"
                            continue
                    _plan_member(plan, x, layer)
                break
            continue
        seen += 1
        if m.isreg():
            content += m.size
        _plan_member(plan, m, layer)
    else:
        if ours and not ended:
            raise SnapshotError("truncated archive (it ends before its end-of-archive block)")
    _check_parents(plan)
    return plan


def _indexed(f: BinaryIO, im: Member) -> list[Member] | None:
    """The members after INDEX_MEMBER ``im`` as its entries describe them, or None (read the
    headers instead) unless they tile the rest of the archive up to its end-of-archive
    block and every header there has the entry's name, type and size."""
    if not isinstance(f, io.BytesIO) or im.size > _INDEX_MAX:
        return None
    try:
        idx = json.loads(bytes(_read_data(f, im)))
    except (ValueError, UnicodeDecodeError):
        return None
    if type(idx) is not list:
        return None
    types: dict[str, bytes] = {}
    if idx:
        # every entry a list [gap, name, type, mode, uid, gid, mtime, size, link] of these
        # exact types (a bool is no int here), checked a column at a time
        if set(map(type, idx)) != {list} or set(map(len, idx)) != {9}:
            return None
        cols = list(zip(*idx))
        for c in (0, 3, 4, 5, 7):
            if set(map(type, cols[c])) != {int}:
                return None
        for c in (1, 2, 8):
            if set(map(type, cols[c])) != {str}:
                return None
        if not set(map(type, cols[6])) <= {int, float}:
            return None
        if min(cols[0]) < 0 or min(cols[7]) < 0 or max(cols[7]) >= 8 ** 11:
            return None
        for typ in set(cols[2]):
            tb = _TYPE_BYTES.get(typ) or typ.encode()
            if len(tb) != 1:
                return None
            types[typ] = tb
        del cols
    out: list[Member] = []
    append = out.append
    # (the header fields are compared as _TarWriter formats them: another writer's
    # spelling of the same number sends the archive down the slow path, which is fine)
    octal: dict[int, bytes] = {}
    gaps: dict[bytes, int] = {}   # a PAX header's size field -> the gap it makes
    # a BytesIO made from bytes hands them back without a copy (getbuffer would copy them)
    buf = f.getvalue()
    total = len(buf)
    at = buf.startswith
    pos = im.offset_data + im.size + (-im.size % _BLOCK)
    try:
        # (positions only grow: one past the end fails a comparison below or raises
        # IndexError, and the end is checked after the loop)
        for gap, name, typ, mode, uid, gid, mtime, size, link in idx:
            # each member starts where the one before ended (pos), its header after the gap
            hdr = pos + gap
            if gap:  # one PAX header between them
                field = buf[pos + 124:pos + 136]
                pgap = gaps.get(field)
                if pgap is None:
                    psize = int(field[:11], 8)
                    if field[11] != 0:
                        return None
                    pgap = gaps[field] = _BLOCK + psize + (-psize % _BLOCK)
                if buf[pos + 156] != 0x78 or gap != pgap:
                    return None
            try:
                nb = name.encode()
            except UnicodeEncodeError:
                nb = name.encode("utf-8", "surrogateescape")
            k = len(nb)
            if k >= 100:
                nb, k = nb[:100], 100
            tb = types[typ]
            field = octal.get(size)
            if field is None:
                field = octal[size] = b"%011o\0" % size
            if (not at(nb, hdr) or (k < 100 and buf[hdr + k]) or buf[hdr + 156] != tb[0]
                    or not at(field, hdr + 124)):
                return None
            append(Member(name, tb, link, mode, uid, gid, mtime, size, hdr + _BLOCK))
            pos = hdr + _BLOCK + size + (-size % _BLOCK)
    except (ValueError, IndexError):
        return None  # a PAX size that is no number, or a position past the end
    if pos > total or (pos < total and not at(_ZERO, pos)):
        return None
    return out


_TYPE_BYTES = {"0": REGTYPE, "5": DIRTYPE, "2": SYMTYPE, "1": LNKTYPE}
_KIND = {REGTYPE: "f", DIRTYPE: "d"}  # the plan's kind of the common entries
_REG = (b"0", b"\0", b"7")  # Member.isreg


def _plan_member(plan: _Plan, m: Member, layer: bool) -> None:
    raw = m.name
    t = m.type
    if (t == REGTYPE or t == DIRTYPE) and not raw.startswith((EXTRA_PREFIX, "./" + EXTRA_PREFIX)):
        # the common entry (a file or directory of a plain name), without the type tests below
        name = _clean_name(raw)
        if name:
            base = name.rsplit("/", 1)[-1]
            if not (layer and base.startswith(WH)):
                plan.entries[name] = m
                plan.declared[name] = "f" if t == REGTYPE else "d"
                return
    if layer and (raw.startswith(EXTRA_PREFIX) or raw.startswith("./" + EXTRA_PREFIX)):
        name = _clean_name(raw)
        if m.isreg() and name != INDEX_MEMBER:
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
        if plan.skip_devices:
            return
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
    declared = plan.declared
    passed: set[str] = set()  # parents whose every prefix (and themselves) passed
    for name in list(plan.entries) + plan.whiteouts + [o for o in plan.opaque if o]:
        parent = name.rpartition("/")[0]
        if not parent or parent in passed:
            continue
        parts = name.split("/")
        for i in range(1, len(parts)):
            kind = declared.get("/".join(parts[:i]))
            if kind is not None and kind != "d":
                raise SnapshotError(f"refused {name!r}: would be written through a "
                                    f"{'symlink' if kind == 'l' else 'file'} in the archive")
        passed.add(parent)
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
    passed: set[str] = set()  # parents whose every prefix (and themselves) passed
    for name in names:
        parent = name.rpartition("/")[0]
        if not parent or parent in passed:
            continue
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
        passed.add(parent)


# Names in component order (a parent first, then its subtree): the name with each "/" as
# NUL, which sorts below every character and is never in a planned name (_clean_name).
_sort_key = operator.methodcaller("replace", "/", "\0")


def _entry_order(plan: _Plan) -> list[str]:
    """Parents before children; hard links after everything, so their targets exist."""
    entries = plan.entries
    names = sorted(entries, key=_sort_key)
    links = [n for n in names if entries[n].type == LNKTYPE]
    if not links:
        return names
    return [n for n in names if entries[n].type != LNKTYPE] + links


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


def _apply(fs: Any, dest: str, tf: BinaryIO, plan: _Plan, owners: bool) -> None:
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
                fs._invalidate()
    for rel in sorted(plan.whiteouts, key=_sort_key):
        _rm_tree(fs, join(dest, rel))
    dir_times: list[tuple[str, Member, bool]] = []
    for rel in _entry_order(plan):
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
            existed = st is not None
            if st is None:
                fs.mkdir(p, 0o700)
            dir_times.append((p, m, existed))  # mode applied last: 0555 must not block its children
            continue
        if st is not None:
            _rm_tree(fs, p)
        if m.issym():
            fs.symlink(m.linkname, p)
        elif m.islnk():
            fs.link(join(dest, m.linkname), p)
            continue
        else:
            with fs.open(p, "xb", m.mode & _HOST_MODE) as out:
                tf.seek(m.offset_data)
                left = m.size
                while left:
                    chunk = tf.read(min(left, _COPY))
                    if not chunk:
                        raise SnapshotError(f"truncated archive at {m.name!r}")
                    out.write(chunk)
                    left -= len(chunk)
            fs.chmod(p, m.mode & _HOST_MODE)
        _finish(fs, p, m, owners)
    for p, m, existed in reversed(dir_times):
        try:
            fs.chmod(p, m.mode & _HOST_MODE)
        except OSError as e:
            # A directory that already exists as a read-only mount point (e.g. the sandbox's
            # bind of the interpreter's own package under /tmp) keeps its attributes; nothing
            # was written into it, so the restore of its contents is still exact.
            if not (existed and e.errno == errno.EROFS):
                raise
            continue
        _finish(fs, p, m, owners)


def _apply_upper(up: MemoryFS, overlay: Any, tf: BinaryIO, plan: _Plan,
                 owner: tuple[int, int] | None = None) -> None:
    """Fast path: write the layer straight into the upper MemoryFS (whiteouts stay whiteouts).

    ``owner`` replaces the archive's uid/gid (uploads belong to the sandbox user).
    """
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

    def times(node: Any, m: Member) -> None:
        node.uid, node.gid = owner or (m.uid, m.gid)
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
    dir_times: list[tuple[Any, Member]] = []
    entries = plan.entries
    # (per entry: the calls of the loop body inlined, MemoryFS._new and _charge too, with
    # the same limits; a file's bytes are copied from the archive's buffer when it has one)
    max_files, max_bytes = up.max_files, up.max_bytes
    now = _time()
    view = memoryview(tf.getvalue()) if type(tf) is io.BytesIO else None
    for rel in _entry_order(plan):
        m = entries[rel]
        t = m.type
        if t == DIRTYPE:
            node = get_dir(rel)
            node.mode = S_IFDIR | (m.mode & 0o7777)
            dir_times.append((node, m))
            continue
        prel, _, name = rel.rpartition("/")
        parent = dirs.get(prel)
        if parent is None:
            parent = get_dir(prel)
        if name in parent.children:
            remove(parent, name)
        uid, gid = owner or (m.uid, m.gid)
        if t == LNKTYPE:
            node = created[m.linkname]
            node.nlink += 1
        else:
            if max_files is not None and up.files_used >= max_files:
                raise _err(errno.EDQUOT)
            up.files_used += 1
            if t == SYMTYPE:
                node = _Inode(S_IFLNK | 0o777, uid, gid, now)
                node.target = m.linkname
            else:
                node = _Inode(S_IFREG | (m.mode & 0o7777), uid, gid, now)
                if view is not None:
                    at = m.offset_data
                    data = bytearray(view[at:at + m.size])
                    if len(data) != m.size:
                        raise SnapshotError(f"truncated archive at {m.name!r}")
                else:
                    data = _read_data(tf, m)
                size = len(data)
                if size and max_bytes is not None and up.bytes_used + size > max_bytes:
                    raise _err(errno.ENOSPC)
                up.bytes_used += size
                node.data = data
            node.mtime = node.atime = float(m.mtime)
        parent.children[name] = node
        if parent.wh:
            parent.wh.discard(name)
        created[rel] = node
    for node, m in dir_times:
        times(node, m)
    up.generation += 1


_HOST_MODE = 0o1777
"""Mode bits an archive may set on a file written through a real filesystem: never setuid or
setgid (a hostile tar extracted by a root caller would otherwise leave a setuid-root file on
the host; THREAT_MODEL.md #36)."""


def _finish(fs: Any, p: str, m: Member, owners: bool) -> None:
    if owners:
        try:
            fs.chown(p, m.uid, m.gid, follow_symlinks=False)
        except OSError:
            pass
    try:
        fs.utime(p, (m.mtime, m.mtime), follow_symlinks=False)
    except OSError:
        pass


def _prefixed(plan: _Plan, prefix: str) -> _Plan:
    """The plan with every name (and hard-link target) moved below ``prefix``."""
    out = _Plan(plan.skip_devices)
    pre = prefix + "/"
    out.opaque = [pre + o if o else prefix for o in plan.opaque]
    out.whiteouts = [pre + w for w in plan.whiteouts]
    for rel, m in plan.entries.items():
        if m.islnk():
            m.linkname = pre + m.linkname
        out.entries[pre + rel] = m
        out.declared[pre + rel] = plan.declared[rel]
    return out


def _apply_host(fs: Any, dest: str, tf: BinaryIO, plan: _Plan) -> None:
    """Extract onto a confined HostFS with one directory fd per directory (openat-style).

    Every directory is opened with O_NOFOLLOW|O_DIRECTORY relative to its parent's fd and
    every entry is created relative to that fd with O_EXCL/O_NOFOLLOW, so nothing is
    written through a symlink even if one is swapped in while extracting.
    """
    for rel in plan.opaque + plan.whiteouts:  # plain tars have none; layers onto HostFS rarely
        d = join(dest, rel) if rel else dest
        if rel in plan.opaque:
            for n in fs.listdir(d) if fs.lexists(d) else ():
                _rm_tree(fs, join(d, n))
        else:
            _rm_tree(fs, d)
    dflags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    root_fd = fs._open_dir(dest)
    fds: dict[str, int] = {"": root_fd}

    def dirfd(rel: str) -> int:
        fd = fds.get(rel)
        if fd is not None:
            return fd
        prel, _, name = rel.rpartition("/")
        parent = dirfd(prel)
        try:
            os.mkdir(name, 0o755, dir_fd=parent)
        except FileExistsError:
            pass
        try:
            fd = os.open(name, dflags, dir_fd=parent)
        except OSError as e:
            if e.errno not in (errno.ENOTDIR, errno.ELOOP):
                raise
            _unlink_at(parent, name)
            os.mkdir(name, 0o755, dir_fd=parent)
            fd = os.open(name, dflags, dir_fd=parent)
        if len(fds) > 200:  # bound open fds: drop everything but the root
            for k in [k for k in fds if k]:
                os.close(fds.pop(k))
        fds[rel] = fd
        return fd

    def _unlink_at(parent: int, name: str) -> None:
        try:
            st = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return
        if _stat.S_ISDIR(st.st_mode):
            sub = os.open(name, dflags, dir_fd=parent)
            try:
                for n in os.listdir(sub):
                    _unlink_at(sub, n)
            finally:
                os.close(sub)
            os.rmdir(name, dir_fd=parent)
        else:
            os.unlink(name, dir_fd=parent)

    dir_times: list[tuple[str, Member]] = []
    try:
        for rel in _entry_order(plan):
            m = plan.entries[rel]
            if m.isdir():
                fd = dirfd(rel)
                dir_times.append((rel, m))  # mode applied last: 0555 must not block its children
                continue
            prel, _, name = rel.rpartition("/")
            parent = dirfd(prel)
            _unlink_at(parent, name)
            if m.issym():
                os.symlink(m.linkname, name, dir_fd=parent)
                os.utime(name, (m.mtime, m.mtime), dir_fd=parent, follow_symlinks=False)
            elif m.islnk():
                lprel, _, lname = m.linkname.rpartition("/")
                os.link(lname, name, src_dir_fd=dirfd(lprel), dst_dir_fd=dirfd(prel), follow_symlinks=False)
            else:
                fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                             0o600, dir_fd=parent)
                try:
                    tf.seek(m.offset_data)
                    left = m.size
                    while left:
                        chunk = tf.read(min(left, _COPY))
                        if not chunk:
                            raise SnapshotError(f"truncated archive at {m.name!r}")
                        os.write(fd, chunk)
                        left -= len(chunk)
                    os.fchmod(fd, m.mode & _HOST_MODE)
                    os.utime(fd, (m.mtime, m.mtime))
                finally:
                    os.close(fd)
        for rel, m in reversed(dir_times):
            fd = dirfd(rel)
            os.fchmod(fd, m.mode & _HOST_MODE)
            os.utime(fd, (m.mtime, m.mtime))
    finally:
        for fd in fds.values():
            os.close(fd)


def _apply_mounted(fs: Any, tf: BinaryIO, plan: _Plan, owners: bool) -> None:
    """A layer onto MountFS(OverlayFS, mounts): the overlay part fast, "rw" mounts through them.

    Anything that would land in a read-only mount is refused up front, naming the paths.
    """
    overlay = fs.root
    base, mounted = _Plan(), _Plan()

    def part(rel: str) -> _Plan:
        # lexical routing is exact here: _check_target refused symlinked parents already
        _, _, point = fs._route("/" + rel if rel else "/")
        if point == "/":
            return base
        if not getattr(fs.mounts[point], "writable", False):
            blocked.append("/" + rel)
        return mounted

    blocked: list[str] = []
    for rel in plan.opaque:
        part(rel).opaque.append(rel)
    for rel in plan.whiteouts:
        part(rel).whiteouts.append(rel)
    for rel, m in plan.entries.items():
        p = part(rel)
        p.entries[rel] = m
        p.declared[rel] = plan.declared[rel]
    if blocked:
        shown = ", ".join(sorted(blocked)[:10]) + (" ..." if len(blocked) > 10 else "")
        raise SnapshotError(f"snapshot entries fall in read-only mounts: {shown}")
    for rel, m in mounted.entries.items():
        if m.islnk() and m.linkname not in mounted.entries:
            raise SnapshotError(f"hard link {rel!r} crosses a mount point")
    for rel, m in base.entries.items():
        if m.islnk() and m.linkname not in base.entries:
            raise SnapshotError(f"hard link {rel!r} crosses a mount point")
    up = overlay.upper
    with overlay._lock:
        try:
            _apply_upper(up, overlay, tf, base, None if owners else (up.uid, up.gid))
        finally:
            overlay._invalidate()
    if mounted.entries or mounted.whiteouts or mounted.opaque:
        _apply(fs, "/", tf, mounted, owners=False)


def _import(fileobj: BinaryIO, fs: Any, dest: str, layer: bool, max_entries: int, max_bytes: int,
            owners: bool, skip_devices: bool = False) -> dict[str, bytes]:
    tf = _spool(fileobj)
    try:
        plan = _read_plan(tf, layer, max_entries, max_bytes, skip_devices)
        extras = {name: bytes(_read_data(tf, m)) for name, m in plan.extras.items()}
        _check_target(fs, dest, plan)
        prefix = dest.strip("/")
        pplan = _prefixed(plan, prefix) if prefix else plan
        try:
            if isinstance(fs, MemoryFS):
                with fs._lock:
                    _apply_upper(fs, None, tf, pplan, None if owners else (fs.uid, fs.gid))
            elif isinstance(getattr(fs, "upper", None), MemoryFS) and hasattr(fs, "_invalidate"):
                up = fs.upper
                with fs._lock:
                    try:
                        _apply_upper(up, fs, tf, pplan, None if owners else (up.uid, up.gid))
                    finally:
                        fs._invalidate()
            elif isinstance(getattr(getattr(fs, "root", None), "upper", None), MemoryFS) \
                    and hasattr(fs, "_route"):
                _apply_mounted(fs, tf, pplan, owners)
            elif getattr(fs, "_fast", True) is False and hasattr(fs, "_gate"):
                _apply_host(fs, dest, tf, plan)
            else:
                _apply(fs, dest, tf, plan, owners)
        except OSError as e:
            raise SnapshotError(f"restoring failed at {e.filename}: {e.strerror}") from e
        return extras
    finally:
        if tf is not fileobj:
            tf.close()


def import_layer(fileobj: BinaryIO, overlay_or_fs: Any, *, max_entries: int = DEFAULT_MAX_ENTRIES,
                 max_bytes: int = DEFAULT_MAX_BYTES) -> dict[str, bytes]:
    """Apply an OCI layer tar onto ``overlay_or_fs``; return the ``.agentic-bash/`` members.

    Raises SnapshotError, having written nothing, for any archive the module comment refuses.
    """
    return _import(fileobj, overlay_or_fs, "/", True, max_entries, max_bytes, owners=True)


def import_tar(fileobj: BinaryIO, fs: Any, dest: str = "/", *, max_entries: int = DEFAULT_MAX_ENTRIES,
               max_bytes: int = DEFAULT_MAX_BYTES, skip_devices: bool = False) -> None:
    """Extract a plain tar below ``dest`` (upload_tar): the same refusals, no whiteouts, no owners.

    ``skip_devices=True`` leaves device nodes out instead of refusing the archive (a rootfs
    tarball from ``docker export`` carries a few under ``dev/``).
    """
    try:
        st = fs.stat(dest)
    except FileNotFoundError:
        _ensure_dirs(fs, dest)
        st = fs.stat(dest)
    if not st.is_dir:
        raise SnapshotError(f"{dest}: not a directory")
    _import(fileobj, fs, fs.realpath(dest), False, max_entries, max_bytes, owners=False,
            skip_devices=skip_devices)


def write_atomic(path: str, write: Callable[[BinaryIO], None]) -> None:
    """Write a host file atomically: ``write(f)`` into a temp file beside it, fsync, rename."""
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise

