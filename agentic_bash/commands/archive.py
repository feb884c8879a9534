"""Archives over the VFS: tar, gzip/gunzip/zcat, bzip2/bunzip2/bzcat, xz/unxz/xzcat, zip/unzip."""

# Security invariants for extraction (tar and unzip):
# * member names lose a leading "/" and everything up to the last "../" (GNU tar's rule),
#   so nothing is written outside the target directory;
# * before writing a member, every parent component inside the target must be a real
#   directory (never a symlink, even one the archive itself created earlier), and an
#   existing symlink at the member's own path is replaced, never followed;
# * symlinks from the archive are created last.

from __future__ import annotations

import bz2
import datetime as _dt
import fnmatch
import io
import lzma
import stat as _stat
import struct
import tarfile
import time as _time
import zipfile
import zlib
from typing import BinaryIO

from .base import CommandContext, command, strerror

__all__ = ["safe_member_name"]


# --------------------------------------------------------------------------- helpers

def _read_all(ctx: CommandContext, f: BinaryIO) -> bytes:
    """All of ``f``: MemoryError past what one command may hold (``held_cap``, 128 MiB by
    default; it read up to max_fs_bytes, 1 GiB, and held it twice: `yes | gzip -d` grew the
    process by 400+ MiB in 2 s)."""
    from ._args import held_cap
    cap = held_cap(ctx)
    buf = io.BytesIO()
    total = 0
    while True:
        b = f.read(1 << 20)
        if not b:
            break
        total += len(b)
        if total > cap:
            raise MemoryError("memory exhausted")
        buf.write(b)
        ctx.budget.check()
    data = buf.getvalue()
    buf.close()
    return data


def _zread(ctx: CommandContext, zf: zipfile.ZipFile, zi: zipfile.ZipInfo) -> bytes:
    """A zip member, bounded as _read_all (zf.read inflated a member whole)."""
    with zf.open(zi) as m:
        return _read_all(ctx, m)


def _out_cap() -> int | None:
    """What a decompressed stream may grow to: what the running command may hold."""
    from ..limits import active_budget
    from ._args import MAX_BUFFERED
    b = active_budget()
    hc = b.held_cap() if b is not None and hasattr(b, "held_cap") else None
    return MAX_BUFFERED if hc is None else min(MAX_BUFFERED, max(hc, 1 << 20))


def _tz(ctx: CommandContext) -> _dt.tzinfo:
    from .sysutils import _tz_from
    return _tz_from(ctx.env.get("TZ", "UTC") or "UTC")


def safe_member_name(name: str) -> tuple[str, str]:
    """(safe name, removed prefix) by GNU tar's rule: drop leading '/' and up to the last '../'."""
    removed = ""
    n = name
    # everything up to and including the last ".." component goes
    parts = n.split("/")
    last = -1
    for i, p in enumerate(parts):
        if p == "..":
            last = i
    if last >= 0:
        removed = "/".join(parts[:last + 1]) + "/"
        n = "/".join(parts[last + 1:])
    if n.startswith("/"):
        stripped = n.lstrip("/")
        removed = removed + n[:len(n) - len(stripped)]
        n = stripped
    if not removed and name.startswith("/"):
        removed = "/"
    return n, removed


def _parents_safe(ctx: CommandContext, root: str, rel: str) -> bool:
    """True when every existing parent of root/rel (below root) is a real directory."""
    cur = root.rstrip("/")
    parts = [p for p in rel.split("/") if p and p != "."]
    for p in parts[:-1]:
        cur = f"{cur}/{p}"
        try:
            st = ctx.fs.stat(cur, follow_symlinks=False)
        except FileNotFoundError:
            ctx.fs.mkdir(cur, 0o755)
            continue
        if _stat.S_ISLNK(st.st_mode) or not _stat.S_ISDIR(st.st_mode):
            return False
    return True


def _prepare_target(ctx: CommandContext, path: str) -> None:
    """Remove an existing symlink (or file) at ``path`` so writing never follows it."""
    try:
        st = ctx.fs.stat(path, follow_symlinks=False)
    except OSError:
        return
    if _stat.S_ISLNK(st.st_mode) or _stat.S_ISREG(st.st_mode):
        ctx.fs.unlink(path)


def _mode_str(mode: int, kind: str) -> str:
    s = kind
    for who in (6, 3, 0):
        b = (mode >> who) & 7
        s += "r" if b & 4 else "-"
        s += "w" if b & 2 else "-"
        x = b & 1
        special = (who == 6 and mode & 0o4000) or (who == 3 and mode & 0o2000) or (who == 0 and mode & 0o1000)
        if special:
            s += ("s" if who else "t") if x else ("S" if who else "T")
        else:
            s += "x" if x else "-"
    return s


# --------------------------------------------------------------------------- compression

def _detect(data: bytes) -> str:
    if data[:2] == b"\x1f\x8b":
        return "gz"
    if data[:3] == b"BZh":
        return "bz2"
    if data[:6] == b"\xfd7zXZ\x00":
        return "xz"
    return ""


def _gzip_bytes(data: bytes, level: int = 6, name: str | None = None, mtime: int = 0) -> bytes:
    flg = 0x08 if name else 0
    xfl = 2 if level == 9 else (4 if level == 1 else 0)
    head = b"\x1f\x8b\x08" + bytes([flg]) + struct.pack("<I", mtime & 0xFFFFFFFF) + bytes([xfl, 3])
    if name:
        head += name.encode("latin-1", "replace") + b"\0"
    co = zlib.compressobj(level, zlib.DEFLATED, -15, 9)
    body = co.compress(data) + co.flush()
    return head + body + struct.pack("<II", zlib.crc32(data) & 0xFFFFFFFF, len(data) & 0xFFFFFFFF)


def _gunzip_bytes(data: bytes) -> bytes:
    """All gzip members concatenated; raises ValueError('not in gzip format') or EOFError,
    MemoryError past _out_cap() (a small archive may inflate a thousandfold)."""
    cap = _out_cap()
    out = io.BytesIO()
    pos = 0
    first = True
    while pos < len(data):
        if data[pos:pos + 2] != b"\x1f\x8b":
            if first:
                raise ValueError("not in gzip format")
            # GNU gzip: "decompression OK, trailing garbage ignored"
            break
        first = False
        d = zlib.decompressobj(16 + 15)
        out.write(d.decompress(data[pos:], 0 if cap is None else cap + 1 - out.tell()))
        if cap is not None and out.tell() > cap:
            raise MemoryError("memory exhausted")
        if not d.eof:
            raise EOFError("unexpected end of file")
        pos = len(data) - len(d.unused_data)
    return out.getvalue()


def _streams(make, data: bytes, error: type[Exception], ended: type[Exception]) -> bytes:  # noqa: ANN001
    """bz2.decompress / lzma.decompress (every stream, trailing garbage after the first
    ignored) with the output bounded by _out_cap()."""
    cap = _out_cap()
    out = io.BytesIO()
    first = True
    while data:
        d = make()
        try:
            res = d.decompress(data, -1 if cap is None else cap + 1 - out.tell())
        except error:
            if not first:
                break
            raise
        out.write(res)
        if cap is not None and out.tell() > cap:
            raise MemoryError("memory exhausted")
        if not d.eof:
            raise ended("Compressed data ended before the end-of-stream marker was reached")
        data = d.unused_data
        first = False
    return out.getvalue()


def _decompress(kind: str, data: bytes) -> bytes:
    if kind == "gz":
        return _gunzip_bytes(data)
    if kind == "bz2":
        return _streams(bz2.BZ2Decompressor, data, OSError, ValueError)
    if kind == "xz":
        return _streams(lzma.LZMADecompressor, data, lzma.LZMAError, lzma.LZMAError)
    return data


def _compress(kind: str, data: bytes, level: int | None = None) -> bytes:
    if kind == "gz":
        return _gzip_bytes(data, 6 if level is None else level)
    if kind == "bz2":
        return bz2.compress(data, 9 if level is None else level)
    if kind == "xz":
        return lzma.compress(data, preset=6 if level is None else level)
    return data


# --------------------------------------------------------------------------- gzip family

_SUFFIX = {"gz": ".gz", "bz2": ".bz2", "xz": ".xz"}
_VERSION_LINE = {
    "gzip": "gzip 1.12", "gunzip": "gunzip (gzip) 1.12", "zcat": "zcat (gzip) 1.12",
    "bzip2": "bzip2, a block-sorting file compressor.  Version 1.0.8, 13-Jul-2019.",
    "bunzip2": "bzip2, a block-sorting file compressor.  Version 1.0.8, 13-Jul-2019.",
    "bzcat": "bzip2, a block-sorting file compressor.  Version 1.0.8, 13-Jul-2019.",
    "xz": "xz (XZ Utils) 5.4.1", "unxz": "xz (XZ Utils) 5.4.1", "xzcat": "xz (XZ Utils) 5.4.1",
}
_PROG = {"gz": "gzip", "bz2": "bzip2", "xz": "xz"}


def _compressor(ctx: CommandContext, argv: list[str], kind: str, mode: str) -> int:
    """gzip/bzip2/xz and their -d/-c aliases. ``mode`` is 'c' (compress), 'd' or 'cat'."""
    prog = _PROG[kind]
    name = argv[0]
    if kind == "gz" and name.rsplit("/", 1)[-1] in ("gunzip", "zcat"):
        name = "gzip"  # gunzip and zcat are scripts running gzip, which reports as itself
    to_stdout = mode == "cat"
    decompress = mode in ("d", "cat")
    keep = force = list_ = test = quiet = verbose = False
    level: int | None = None
    suffix = _SUFFIX[kind]
    files: list[str] = []
    args = argv[1:]
    i = 0
    longmap = {"stdout": "c", "to-stdout": "c", "decompress": "d", "uncompress": "d", "keep": "k", "force": "f",
               "list": "l", "test": "t", "quiet": "q", "verbose": "v", "fast": "1", "best": "9", "name": "N",
               "no-name": "n", "recursive": "r", "suffix": "S"}
    end = False
    while i < len(args):
        a = args[i]
        i += 1
        if end or not a.startswith("-") or a == "-":
            files.append(a)
            continue
        if a == "--":
            end = True
            continue
        if a.startswith("--"):
            key, eq, val = a[2:].partition("=")
            if key in ("help",):
                ctx.stdout.write(f"Usage: {name} [OPTION]... [FILE]...\n".encode())
                return 0
            if key == "version":
                ctx.stdout.write((_VERSION_LINE.get(name.rsplit("/", 1)[-1]) or f"{prog} (agentic-bash)")
                                 .encode() + b"\n")
                return 0
            c = longmap.get(key)
            if c is None:
                ctx.stderr.write(f"{name}: unrecognized option '{a}'\n".encode())
                ctx.stderr.write(f"Try `{name} --help' for more information.\n".encode()
                                 if kind == "gz" else f"Try '{name} --help' for more information.\n".encode())
                return 1
            flags = c
            if c == "S":
                suffix = val if eq else (args[i] if i < len(args) else suffix)
                if not eq:
                    i += 1
                continue
        else:
            flags = a[1:]
        j = 0
        while j < len(flags):
            c = flags[j]
            j += 1
            if c == "c":
                to_stdout = True
            elif c == "d":
                decompress = True
            elif c == "z":
                decompress = False
            elif c == "k":
                keep = True
            elif c == "f":
                force = True
            elif c == "l":
                list_ = True
            elif c == "t":
                test = True
                decompress = True
            elif c == "q":
                quiet = True
            elif c == "v":
                verbose = True
            elif c.isdigit():
                level = int(c)
            elif c in "nNrT":
                if c == "T" and j >= len(flags):
                    i += 1
                elif c == "T":
                    j = len(flags)
            elif c == "S":
                if j < len(flags):
                    suffix = flags[j:]
                else:
                    suffix = args[i] if i < len(args) else suffix
                    i += 1
                j = len(flags)
            elif c == "h":
                ctx.stdout.write(f"Usage: {name} [OPTION]... [FILE]...\n".encode())
                return 0
            else:
                if kind == "gz":
                    ctx.stderr.write(f"{name}: invalid option -- '{c}'\n".encode())
                    ctx.stderr.write(f"Try `{name} --help' for more information.\n".encode())
                elif kind == "bz2":
                    ctx.stderr.write(f"{name}: Bad flag `-{c}'\n".encode())
                else:
                    ctx.stderr.write(f"{name}: invalid option -- '{c}'\n".encode())
                return 1
    if level is not None and kind == "gz" and level == 0:
        level = 1
    if not files:
        files = ["-"]
    status = 0

    def warn(msg: str, st: int = 2) -> None:
        nonlocal status
        if not quiet:
            ctx.stderr.write(f"{name}: {msg}\n".encode("utf-8", "surrogateescape"))
        status = max(status, st)

    def fail(msg: str, bare: bool = False) -> None:
        nonlocal status
        ctx.stderr.write((msg if bare else f"{name}: {msg}").encode("utf-8", "surrogateescape") + b"\n")
        status = max(status, 1)

    for fn in files:
        ctx.budget.check()
        if fn == "-":
            data = _read_all(ctx, ctx.stdin)
            src_path = None
        else:
            src_path = ctx.path(fn)
            try:
                st = ctx.fs.stat(src_path)
            except FileNotFoundError as e:
                if kind == "gz" and decompress and not fn.endswith(suffix):
                    # gzip -d tries NAME.gz when NAME is missing
                    fn2 = fn + suffix
                    try:
                        st = ctx.fs.stat(ctx.path(fn2))
                        fn, src_path = fn2, ctx.path(fn2)
                    except OSError:
                        fail(f"{fn2}: {strerror(e)}")
                        continue
                elif kind == "bz2":
                    fail(f"Can't open input file {fn}: {strerror(e)}.")
                    continue
                else:
                    fail(f"{fn}: {strerror(e)}")
                    continue
            except OSError as e:
                if kind == "bz2":
                    fail(f"Can't open input file {fn}: {strerror(e)}.")
                else:
                    fail(f"{fn}: {strerror(e)}")
                continue
            if _stat.S_ISDIR(st.st_mode):
                if kind == "bz2":
                    fail(f"Input file {fn} is a directory.")
                else:
                    warn(f"{fn}: is a directory -- ignored")
                continue
            if list_:
                pass
            elif decompress and not to_stdout and not fn.endswith(suffix) and not (
                    kind == "gz" and fn.endswith((".tgz", ".taz"))):
                if kind == "bz2":
                    fail(f"Can't guess original name for {fn} -- using {fn}.out")
                else:
                    warn(f"{fn}: unknown suffix -- ignored")
                    continue
            elif not decompress and not to_stdout and fn.endswith(suffix) and not force:
                if kind == "bz2":
                    fail(f"Input file {fn} already has .bz2 suffix.")
                else:
                    warn(f"{fn} already has {suffix} suffix -- unchanged", 0)
                continue
            with ctx.fs.open(src_path, "rb") as f:
                data = _read_all(ctx, f)
        if list_ and kind == "gz":
            try:
                raw = _gunzip_bytes(data)
            except (ValueError, EOFError, zlib.error):
                fail(f"{fn}: not in gzip format")
                continue
            if not getattr(ctx, "_gz_list_head", False):
                ctx.stdout.write(b"         compressed        uncompressed  ratio uncompressed_name\n")
            uname = fn[:-3] if fn.endswith(".gz") else fn
            # GNU's ratio counts deflate bytes only (header and trailer excluded)
            hl = 10
            if data[3] & 0x08:
                hl = data.index(b"\0", 10) + 1
            dlen = len(data) - hl - 8
            ratio = 0.0 if not raw else (len(raw) - dlen) / len(raw) * 100
            ctx.stdout.write(f"{len(data):19d} {len(raw):19d} {ratio:5.1f}% {uname}\n".encode())
            continue
        if decompress:
            try:
                out = _decompress(kind, data) if data else b""
                if not data and fn == "-":
                    out = b""
            except ValueError:
                if kind == "gz":
                    fail(f"\n{name}: {'stdin' if fn == '-' else fn}: not in gzip format", bare=True)
                elif kind == "bz2":
                    fail(f"Data integrity error when decompressing.\n\tInput file = "
                         f"{'(stdin)' if fn == '-' else fn}, output file = (stdout)" if False else
                         f"{'(stdin)' if fn == '-' else fn} is not a bzip2 file.")
                else:
                    fail(f"{'(stdin)' if fn == '-' else fn}: File format not recognized")
                continue
            except (EOFError, OSError, zlib.error, lzma.LZMAError):
                if kind == "gz":
                    fail(f"{'stdin' if fn == '-' else fn}: unexpected end of file")
                elif kind == "bz2":
                    fail(f"Compressed file ends unexpectedly;")
                else:
                    fail(f"{'(stdin)' if fn == '-' else fn}: Unexpected end of input")
                continue
            if test:
                continue
        else:
            if kind == "gz":
                mt = 0
                base = None
                if src_path is not None:
                    mt = int(st.st_mtime)
                    base = fn.rsplit("/", 1)[-1]
                out = _gzip_bytes(data, 6 if level is None else level, base, mt)
            else:
                out = _compress(kind, data, level)
        if to_stdout or fn == "-":
            ctx.stdout.write(out)
            continue
        if decompress:
            if fn.endswith(suffix):
                dst = fn[:-len(suffix)]
            elif fn.endswith(".tgz"):
                dst = fn[:-4] + ".tar"
            else:
                dst = fn + ".out"
        else:
            dst = fn + suffix
        dst_path = ctx.path(dst)
        if ctx.fs.lexists(dst_path) and not force:
            if kind == "bz2":
                fail(f"Output file {dst} already exists.")
            else:
                warn(f"{dst} already exists; not overwritten" if kind == "gz" else
                     f"{dst}: File exists", 2 if kind == "gz" else 1)
            continue
        try:
            if ctx.fs.lexists(dst_path):
                ctx.fs.unlink(dst_path)
            with ctx.fs.open(dst_path, "wb", st.st_mode & 0o7777) as f:
                f.write(out)
            ctx.fs.chmod(dst_path, st.st_mode & 0o7777)
            ctx.fs.utime(dst_path, (st.st_atime, st.st_mtime))
            if verbose:
                ratio = (1 - len(out) / len(data)) * 100 if data and not decompress else (
                    (1 - len(data) / len(out)) * 100 if out else 0.0)
                ctx.stderr.write(f"{fn}:\t{ratio:5.1f}% -- {'replaced with' if kind == 'gz' else 'created'} "
                                 f"{dst}\n".encode())
            if not keep:
                ctx.fs.unlink(src_path)  # type: ignore[arg-type]
        except OSError as e:
            fail(f"{dst}: {strerror(e)}")
    return status


@command("gzip", usage="gzip [OPTION]... [FILE]...", help="Compress or expand files (gzip format).")
def gzip_(ctx: CommandContext, argv: list[str]) -> int:
    return _compressor(ctx, argv, "gz", "c")


@command("gunzip", usage="gunzip [OPTION]... [FILE]...", help="Decompress gzip files.")
def gunzip(ctx: CommandContext, argv: list[str]) -> int:
    return _compressor(ctx, argv, "gz", "d")


@command("zcat", usage="zcat [OPTION]... [FILE]...", help="Decompress gzip files to stdout.")
def zcat(ctx: CommandContext, argv: list[str]) -> int:
    return _compressor(ctx, argv, "gz", "cat")


@command("bzip2", usage="bzip2 [OPTION]... [FILE]...", help="Compress or expand files (bzip2 format).")
def bzip2_(ctx: CommandContext, argv: list[str]) -> int:
    return _compressor(ctx, argv, "bz2", "c")


@command("bunzip2", usage="bunzip2 [OPTION]... [FILE]...", help="Decompress bzip2 files.")
def bunzip2(ctx: CommandContext, argv: list[str]) -> int:
    return _compressor(ctx, argv, "bz2", "d")


@command("bzcat", usage="bzcat [FILE]...", help="Decompress bzip2 files to stdout.")
def bzcat(ctx: CommandContext, argv: list[str]) -> int:
    return _compressor(ctx, argv, "bz2", "cat")


@command("xz", usage="xz [OPTION]... [FILE]...", help="Compress or expand files (xz format).")
def xz_(ctx: CommandContext, argv: list[str]) -> int:
    return _compressor(ctx, argv, "xz", "c")


@command("unxz", usage="unxz [OPTION]... [FILE]...", help="Decompress xz files.")
def unxz(ctx: CommandContext, argv: list[str]) -> int:
    return _compressor(ctx, argv, "xz", "d")


@command("xzcat", usage="xzcat [FILE]...", help="Decompress xz files to stdout.")
def xzcat(ctx: CommandContext, argv: list[str]) -> int:
    return _compressor(ctx, argv, "xz", "cat")


# --------------------------------------------------------------------------- tar

class _TarError(Exception):
    def __init__(self, status: int = 2) -> None:
        super().__init__()
        self.status = status


_TAR_LONG = {"create": "c", "extract": "x", "get": "x", "list": "t", "file": "f:", "gzip": "z", "gunzip": "z",
             "bzip2": "j", "xz": "J", "directory": "C:", "verbose": "v", "to-stdout": "O",
             "strip-components": "strip:", "exclude": "exclude:", "auto-compress": "a",
             "preserve-permissions": "p", "same-permissions": "p", "keep-old-files": "k",
             "overwrite": "overwrite", "no-same-owner": "", "same-owner": "", "numeric-owner": "",
             "totals": "", "absolute-names": "P", "no-recursion": "norec", "files-from": "T:",
             "help": "help", "version": "version", "wildcards": "wild", "no-wildcards": "nowild", "anchored": "", "no-anchored": "",
             "sort": "sort:", "owner": "owner:", "group": "group:", "mode": "mode:", "mtime": "mtime:",
             "append": "r", "update": "u", "delete": "delete", "format": "format:", "verify": "W",
             "touch": "m", "dereference": "h", "one-file-system": "", "warning": "warning:"}


@command("tar", usage="tar [OPTION...] [FILE]...", help="Create, list or extract tar archives (gzip/bzip2/xz).")
def tar(ctx: CommandContext, argv: list[str]) -> int:
    try:
        return _tar(ctx, argv)
    except _TarError as e:
        return e.status


def _tar(ctx: CommandContext, argv: list[str]) -> int:
    args = list(argv[1:])
    # old-style bundled options: `tar czf x.tgz dir`
    if args and not args[0].startswith("-") and args[0]:
        first = args.pop(0)
        expanded: list[str] = []
        for c in first:
            if c in "fCT":
                if not args:
                    ctx.stderr.write(f"tar: Old option '{c}' requires an argument.\n"
                                     "Try 'tar --help' or 'tar --usage' for more information.\n".encode())
                    return 2
                expanded += ["-" + c, args.pop(0)]
            else:
                expanded.append("-" + c)
        args = expanded + args
    mode = ""
    archive: str | None = None
    comp = ""
    verbose = 0
    chdir: str | None = None
    to_stdout = False
    strip = 0
    excludes: list[str] = []
    keep_old = False
    absolute = False
    preserve = False
    files_from: list[str] = []
    no_recursion = False
    wildcards: bool | None = None  # --wildcards / --no-wildcards (None: neither, GNU warns)
    touch = False
    operands: list[str] = []

    def err(msg: str) -> None:
        ctx.stderr.write(f"tar: {msg}\n".encode("utf-8", "surrogateescape"))

    def usage(msg: str, status: int = 2) -> None:
        err(msg)
        ctx.stderr.write(b"Try 'tar --help' or 'tar --usage' for more information.\n")
        raise _TarError(status)

    def set_mode(m: str) -> None:
        nonlocal mode
        if mode and mode != m:
            usage("You may not specify more than one '-Acdtrux', '--delete' or  '--test-label' option")
        mode = m

    i = 0
    end = False
    while i < len(args):
        a = args[i]
        i += 1
        if end or not a.startswith("-") or a == "-":
            operands.append(a)
            continue
        if a == "--":
            end = True
            continue
        if a.startswith("--"):
            key, eq, val = a[2:].partition("=")
            cands = [k for k in _TAR_LONG if k.startswith(key)]
            if key in _TAR_LONG:
                cands = [key]
            if len(cands) != 1:
                usage(f"unrecognized option '{a}'" if not cands else f"option '{a}' is ambiguous", 64)
            k = cands[0]
            t = _TAR_LONG[k]
            if t.endswith(":"):
                if not eq:
                    if i >= len(args):
                        usage(f"option '--{k}' requires an argument", 64)
                    val = args[i]
                    i += 1
                t = t[:-1]
                if t == "f":
                    archive = val
                elif t == "C":
                    chdir = val
                elif t == "strip":
                    try:
                        strip = int(val)
                    except ValueError:
                        usage(f"{val}: Invalid number of elements")
                elif t == "exclude":
                    excludes.append(val)
                elif t == "T":
                    files_from.append(val)
                continue
            if t == "help":
                ctx.stdout.write(b"Usage: tar [OPTION...] [FILE]...\n")
                return 0
            if t == "version":
                ctx.stdout.write(b"tar (GNU tar) 1.34\n")
                return 0
            if t in ("c", "x", "t", "r", "u", "delete"):
                set_mode(t)
            elif t in ("z", "j", "J"):
                comp = {"z": "gz", "j": "bz2", "J": "xz"}[t]
            elif t == "v":
                verbose += 1
            elif t == "O":
                to_stdout = True
            elif t == "k":
                keep_old = True
            elif t == "P":
                absolute = True
            elif t == "p":
                preserve = True
            elif t == "norec":
                no_recursion = True
            elif t in ("wild", "nowild"):
                wildcards = t == "wild"
            elif t == "m":
                touch = True
            elif t == "a":
                comp = "auto"
            continue
        j = 1
        while j < len(a):
            c = a[j]
            j += 1
            if c in "cxtrudA":
                set_mode({"d": "diff", "A": "A"}.get(c, c))
            elif c in "fCT":
                if j < len(a):
                    val = a[j:]
                    j = len(a)
                elif i < len(args):
                    val = args[i]
                    i += 1
                else:
                    usage(f"option requires an argument -- '{c}'", 64)
                if c == "f":
                    archive = val
                elif c == "C":
                    chdir = val
                else:
                    files_from.append(val)
            elif c == "z":
                comp = "gz"
            elif c == "j":
                comp = "bz2"
            elif c == "J":
                comp = "xz"
            elif c == "a":
                comp = "auto"
            elif c == "v":
                verbose += 1
            elif c == "O":
                to_stdout = True
            elif c == "k":
                keep_old = True
            elif c == "P":
                absolute = True
            elif c == "p":
                preserve = True
            elif c == "m":
                touch = True
            elif c in "hlSwWoBiUMs":
                pass
            else:
                usage(f"invalid option -- '{c}'", 64)
    if not mode:
        usage("You must specify one of the '-Acdtrux', '--delete' or '--test-label' options")
    if mode not in ("c", "x", "t", "r", "u"):
        err(f"this sandbox's tar supports only -c, -r, -u, -x and -t")
        raise _TarError(2)
    if mode in ("r", "u") and comp and comp != "auto":
        usage("Cannot update compressed archives")
    for ff in files_from:
        try:
            data = _read_all(ctx, ctx.stdin) if ff == "-" else _read_path(ctx, ff)
        except OSError as e:
            err(f"{ff}: Cannot stat: {strerror(e)}")  # GNU stats the -T list first
            err("Error is not recoverable: exiting now")
            raise _TarError(2) from None
        operands += [ln for ln in data.decode("utf-8", "surrogateescape").splitlines() if ln]
    if archive is None:
        archive = ctx.env.get("TAPE", "-")
    piped = comp not in ("", "auto")  # -z/-j/-J: GNU reads through a (child) decompressor
    if comp == "auto":
        comp = ""
        for suf, k in ((".tar.gz", "gz"), (".tgz", "gz"), (".tar.bz2", "bz2"), (".tbz2", "bz2"),
                       (".tbz", "bz2"), (".tar.xz", "xz"), (".txz", "xz"), (".gz", "gz"), (".bz2", "bz2"),
                       (".xz", "xz")):
            if archive.endswith(suf):
                comp = k
                break
    base = ctx.path(chdir) if chdir else ctx.cwd
    if chdir:
        try:
            cst = ctx.fs.stat(base)
            why = None if cst.is_dir else "Not a directory"
        except OSError as e:
            why = strerror(e)
        if why is not None:  # GNU's chdir happens before any member is touched
            err(f"{chdir}: Cannot open: {why}")
            err("Error is not recoverable: exiting now")
            return 2
    if mode in ("c", "r", "u"):
        return _tar_create(ctx, archive, "" if mode != "c" else comp, operands, base, verbose, excludes, absolute,
                           no_recursion, err, usage, append=mode if mode != "c" else "")
    if mode == "c":
        return _tar_create(ctx, archive, comp, operands, base, verbose, excludes, absolute, no_recursion, err,
                           usage)
    if piped and archive != "-" and not ctx.fs.exists(ctx.path(archive)):
        # the missing archive is reported by the decompressing child, then by tar itself
        msg = f"{archive}: Cannot open: No such file or directory"
        ctx.stderr.write(f"tar (child): {msg}\ntar (child): Error is not recoverable: exiting now\n"
                         .encode("utf-8", "surrogateescape"))
        err("Child returned status 2")
        err("Error is not recoverable: exiting now")
        return 2
    return _tar_read(ctx, mode, archive, comp, operands, base, verbose, excludes, strip, to_stdout, keep_old,
                     preserve, touch, err, wildcards)


def _read_path(ctx: CommandContext, p: str) -> bytes:
    with ctx.fs.open(ctx.path(p), "rb") as f:
        return _read_all(ctx, f)


def _excluded(name: str, excludes: list[str]) -> bool:
    if not excludes:
        return False
    parts = name.rstrip("/").split("/")
    for pat in excludes:
        pat = pat.rstrip("/")
        if fnmatch.fnmatchcase(name.rstrip("/"), pat):
            return True
        for k in range(len(parts)):
            if fnmatch.fnmatchcase(parts[k], pat) or fnmatch.fnmatchcase("/".join(parts[k:]), pat):
                return True
    return False


def _tar_create(ctx, archive, comp, operands, base, verbose, excludes, absolute, no_recursion, err, usage,  # noqa: ANN001, ANN202, E501
                append=""):
    if not operands and not append:
        usage("Cowardly refusing to create an empty archive")
    old = b""
    if append and archive != "-":
        # -r/-u: the members go after the existing ones (-u appends too, as GNU does for newer files)
        try:
            old = _read_path(ctx, archive)
        except OSError:
            old = b""
    buf = io.BytesIO(old)
    newer_in_archive: dict[str, int] = {}
    if old:
        buf.seek(0)
        tf = tarfile.open(fileobj=buf, mode="a", format=tarfile.GNU_FORMAT)
        if append == "u":
            for m in tf.getmembers():
                newer_in_archive[m.name.rstrip("/")] = max(newer_in_archive.get(m.name.rstrip("/"), 0),
                                                           int(m.mtime))
    else:
        tf = tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT)
    status = 0
    warned: set[str] = set()
    vout = ctx.stdout if archive != "-" else ctx.stderr
    info = ctx.info

    def add(path: str, arcname: str) -> None:
        nonlocal status
        ctx.budget.check()
        if _excluded(arcname, excludes):
            return
        try:
            st = ctx.fs.stat(path, follow_symlinks=False)
        except OSError as e:
            err(f"{arcname}: Cannot stat: {strerror(e)}")
            status = 2
            return
        if arcname in newer_in_archive and int(st.st_mtime) <= newer_in_archive[arcname] \
                and not _stat.S_ISDIR(st.st_mode):
            return  # -u: the archived copy is not older
        ti = tarfile.TarInfo(arcname)
        ti.mode = st.st_mode & 0o7777
        ti.mtime = int(st.st_mtime)
        ti.uid, ti.gid = st.st_uid, st.st_gid
        ti.uname = info.user if st.st_uid == info.uid else str(st.st_uid)
        ti.gname = info.group if st.st_gid == info.gid else str(st.st_gid)
        if _stat.S_ISLNK(st.st_mode):
            ti.type = tarfile.SYMTYPE
            ti.linkname = ctx.fs.readlink(path)
            tf.addfile(ti)
        elif _stat.S_ISDIR(st.st_mode):
            ti.type = tarfile.DIRTYPE
            tf.addfile(ti)
        elif _stat.S_ISREG(st.st_mode):
            try:
                with ctx.fs.open(path, "rb") as f:
                    data = _read_all(ctx, f)
            except OSError as e:
                err(f"{arcname}: Cannot open: {strerror(e)}")
                status = 2
                return
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
        else:
            err(f"{arcname}: socket ignored")
            return
        if verbose:
            name = arcname + ("/" if ti.isdir() else "")
            if verbose > 1:
                vout.write((_verbose_line(ctx, ti) + "\n").encode("utf-8", "surrogateescape"))
            else:
                vout.write((name + "\n").encode("utf-8", "surrogateescape"))
        if _stat.S_ISDIR(st.st_mode) and not no_recursion:
            try:
                names = sorted(ctx.fs.listdir(path))
            except OSError as e:
                err(f"{arcname}: Cannot open: {strerror(e)}")
                status = 2
                return
            for n in names:
                add(f"{path.rstrip('/')}/{n}", f"{arcname.rstrip('/')}/{n}" if arcname else n)

    for op in operands:
        path = op if op.startswith("/") else f"{base.rstrip('/')}/{op}"
        from ..vfs.paths import normalize
        path = normalize(path, "/")
        arc = op
        if not absolute:
            safe, removed = safe_member_name(op)
            if removed:
                if removed not in warned:
                    err(f"Removing leading `{removed}' from member names")
                    warned.add(removed)
                arc = safe
        arc = arc.rstrip("/") if arc not in ("/", "") else arc
        while arc.startswith("./") and len(arc) > 2 and False:
            arc = arc[2:]
        if not ctx.fs.lexists(path):
            err(f"{op}: Cannot stat: No such file or directory")
            status = 2
            continue
        add(path, arc or ".")
    tf.close()
    data = _compress(comp, buf.getvalue()) if comp else buf.getvalue()
    if archive == "-":
        ctx.stdout.write(data)
    else:
        try:
            with ctx.fs.open(ctx.path(archive), "wb") as f:
                f.write(data)
        except OSError as e:
            err(f"{archive}: Cannot open: {strerror(e)}")
            err("Error is not recoverable: exiting now")
            return 2
    if status:
        err("Exiting with failure status due to previous errors")
    return status


_ugswidth = 19


def _verbose_line(ctx: CommandContext, ti: tarfile.TarInfo) -> str:
    global _ugswidth
    kind = {tarfile.DIRTYPE: "d", tarfile.SYMTYPE: "l", tarfile.LNKTYPE: "h", tarfile.CHRTYPE: "c",
            tarfile.BLKTYPE: "b", tarfile.FIFOTYPE: "p"}.get(ti.type, "-")
    ms = _mode_str(ti.mode, kind if kind != "h" else "-")
    ug = f"{ti.uname or ti.uid}/{ti.gname or ti.gid}"
    size = str(ti.size)
    w = max(_ugswidth, len(ug) + 1 + len(size))
    pad = w - len(ug) - len(size)
    t = _dt.datetime.fromtimestamp(ti.mtime, _tz(ctx)).strftime("%Y-%m-%d %H:%M")
    name = ti.name + ("/" if ti.isdir() and not ti.name.endswith("/") else "")
    line = f"{ms} {ug}{' ' * pad}{size} {t} {name}"
    if ti.issym():
        line += f" -> {ti.linkname}"
    elif ti.islnk():
        line += f" link to {ti.linkname}"
    return line


def _tar_read(ctx, mode, archive, comp, operands, base, verbose, excludes, strip, to_stdout, keep_old, preserve,  # noqa: ANN001, ANN202, E501
              touch, err, wildcards=None):
    try:
        raw = _read_all(ctx, ctx.stdin) if archive == "-" else _read_path(ctx, archive)
    except OSError as e:
        err(f"{archive}: Cannot open: {strerror(e)}")
        err("Error is not recoverable: exiting now")
        return 2
    kind = _detect(raw)
    try:
        data = _decompress(kind, raw) if kind else raw
    except MemoryError:
        raise
    except Exception:  # noqa: BLE001 - any codec failure reads like GNU's
        if kind == "gz":
            ctx.stderr.write(b"\ngzip: stdin: unexpected end of file\n")
        err("Child returned status 1")
        err("Error is not recoverable: exiting now")
        return 2
    if not data:
        if comp or kind:
            return 0
        err("This does not look like a tar archive")
        err("Exiting with failure status due to previous errors")
        return 2
    try:
        tf = tarfile.open(fileobj=io.BytesIO(data), mode="r:")
        members = tf.getmembers()
    except tarfile.TarError:
        err("This does not look like a tar archive")
        err("Exiting with failure status due to previous errors")
        return 2
    status = 0
    wanted = {o.rstrip("/"): False for o in operands}
    warned: set[str] = set()
    symlinks: list[tuple[str, str]] = []
    dirs: list[tuple[str, tarfile.TarInfo]] = []
    vout = ctx.stdout
    for ti in members:
        ctx.budget.check()
        name = ti.name
        if wanted:
            hit = None
            for w in wanted:
                if name == w or name.startswith(w + "/") or (
                        wildcards and any(c in w for c in "*?[") and fnmatch.fnmatchcase(name, w)):
                    hit = w
                    break
            if hit is None:
                continue
            wanted[hit] = True
        if _excluded(name, excludes):
            continue
        if mode == "t":
            if verbose:
                vout.write((_verbose_line(ctx, ti) + "\n").encode("utf-8", "surrogateescape"))
            else:
                vout.write((name + ("/" if ti.isdir() else "") + "\n").encode("utf-8", "surrogateescape"))
            continue
        safe, removed = safe_member_name(name)
        if removed and removed not in warned:
            err(f"Removing leading `{removed}' from member names")
            warned.add(removed)
        if strip:
            parts = [p for p in safe.split("/") if p]
            if len(parts) <= strip:
                continue
            safe = "/".join(parts[strip:])
        if not safe or safe == ".":
            if ti.isdir():
                continue
            continue
        if verbose:
            out = ctx.stdout if not to_stdout else ctx.stderr
            if verbose > 1:
                out.write((_verbose_line(ctx, ti) + "\n").encode("utf-8", "surrogateescape"))
            else:
                out.write((name + ("/" if ti.isdir() else "") + "\n").encode("utf-8", "surrogateescape"))
        if to_stdout:
            if ti.isfile():
                f = tf.extractfile(ti)
                if f is not None:
                    ctx.stdout.write(_read_all(ctx, f))
            continue
        target = f"{base.rstrip('/')}/{safe}"
        from ..vfs.paths import normalize
        target = normalize(target, "/")
        try:
            if not _parents_safe(ctx, base, safe):
                err(f"{safe}: Cannot open: Not a directory" if False else
                    f"{safe}: Cannot open: Not a directory")
                status = 2
                continue
            if ti.isdir():
                if not ctx.fs.lexists(target):
                    ctx.fs.mkdir(target, 0o700)
                elif not _stat.S_ISDIR(ctx.fs.stat(target, follow_symlinks=False).st_mode):
                    _prepare_target(ctx, target)
                    ctx.fs.mkdir(target, 0o700)
                dirs.append((target, ti))
            elif ti.issym():
                symlinks.append((target, ti.linkname))
            elif ti.islnk():
                lsafe, _ = safe_member_name(ti.linkname)
                if strip:
                    lparts = [p for p in lsafe.split("/") if p]
                    lsafe = "/".join(lparts[strip:])
                src = normalize(f"{base.rstrip('/')}/{lsafe}", "/")
                if keep_old and ctx.fs.lexists(target):
                    err(f"{safe}: Cannot open: File exists")
                    status = 2
                    continue
                _prepare_target(ctx, target)
                ctx.fs.link(src, target)
            elif ti.isfile():
                if keep_old and ctx.fs.lexists(target):
                    err(f"{safe}: Cannot open: File exists")
                    status = 2
                    continue
                _prepare_target(ctx, target)
                f = tf.extractfile(ti)
                payload = _read_all(ctx, f) if f is not None else b""
                mode_bits = ti.mode & (0o7777 if preserve else (0o7777 & ~ctx.umask))
                with ctx.fs.open(target, "wb", mode_bits) as out_f:
                    out_f.write(payload)
                ctx.fs.chmod(target, mode_bits)
                if not touch:
                    ctx.fs.utime(target, (ti.mtime, ti.mtime))
            else:
                err(f"{safe}: Cannot create special file: Operation not permitted")
                status = 2
        except OSError as e:
            err(f"{safe}: Cannot open: {strerror(e)}")
            status = 2
    # symlinks last, so no member was ever written through one (GNU tar's delayed links)
    for target, link in symlinks:
        try:
            _prepare_target(ctx, target)
            ctx.fs.symlink(link, target)
        except OSError as e:
            err(f"{target}: Cannot create symlink to `{link}': {strerror(e)}")
            status = 2
    for target, ti in reversed(dirs):
        try:
            mode_bits = ti.mode & (0o7777 if preserve else (0o7777 & ~ctx.umask))
            ctx.fs.chmod(target, mode_bits)
            if not touch:
                ctx.fs.utime(target, (ti.mtime, ti.mtime))
        except OSError:
            pass
    for w, found in wanted.items():
        if not found:
            if wildcards is None and any(c in w for c in "*?["):
                err("Pattern matching characters used in file names")
                err("Use --wildcards to enable pattern matching, or --no-wildcards to suppress this warning")
            err(f"{w}: Not found in archive")
            status = 2
    if status:
        err("Exiting with failure status due to previous errors")
    return status


# --------------------------------------------------------------------------- zip / unzip

@command("zip", usage="zip [-rqj] zipfile file...", help="Package and compress files into a zip archive.")
def zip_(ctx: CommandContext, argv: list[str]) -> int:
    recurse = quiet = junk = False
    level = 6
    operands: list[str] = []
    for a in argv[1:]:
        if a.startswith("-") and len(a) > 1 and not operands[1:]:
            for c in a[1:]:
                if c == "r":
                    recurse = True
                elif c == "q":
                    quiet = True
                elif c == "j":
                    junk = True
                elif c.isdigit():
                    level = int(c)
                elif c in "Xyo":
                    pass
                else:
                    ctx.stderr.write(f"zip error: Invalid command arguments (no such option: {c})\n".encode())
                    return 16
        else:
            operands.append(a)
    if len(operands) < 1:
        ctx.stderr.write(b"zip error: Invalid command arguments (nothing to select from)\n")
        return 16
    zname = operands[0]
    if "." not in zname.rsplit("/", 1)[-1]:
        zname += ".zip"
    files = operands[1:]
    if not files:
        ctx.stderr.write(b"\nzip error: Nothing to do! (" + zname.encode() + b")\n")
        return 12
    zpath = ctx.path(zname)
    existing: dict[str, tuple[zipfile.ZipInfo, bytes]] = {}
    if ctx.fs.exists(zpath):
        try:
            with zipfile.ZipFile(io.BytesIO(_read_path(ctx, zname))) as zf:
                for zi in zf.infolist():
                    existing[zi.filename] = (zi, _zread(ctx, zf, zi))
        except zipfile.BadZipFile:
            ctx.stderr.write(f"zip error: Zip file structure invalid ({zname})\n".encode())
            return 3
    entries: list[tuple[str, str, object]] = []  # (arcname, path, stat)
    status = 0

    def walk(op: str) -> None:
        nonlocal status
        path = ctx.path(op)
        try:
            st = ctx.fs.stat(path)
        except OSError:
            ctx.stderr.write(f"\tzip warning: name not matched: {op}\n".encode())
            status = 12
            return
        arc = op.lstrip("/")
        while arc.startswith("./"):
            arc = arc[2:]
        if junk:
            arc = arc.rsplit("/", 1)[-1]
        if _stat.S_ISDIR(st.st_mode):
            if not junk:
                entries.append((arc.rstrip("/") + "/", path, st))
            if recurse:
                for n in sorted(ctx.fs.listdir(path)):
                    walk(f"{op.rstrip('/')}/{n}")
        else:
            entries.append((arc, path, st))

    for op in files:
        walk(op)
    if not entries and not existing:
        ctx.stderr.write(f"\nzip error: Nothing to do! ({zname})\n".encode())
        return 12
    buf = io.BytesIO()
    tz = _tz(ctx)
    with zipfile.ZipFile(buf, "w") as zf:
        new_names = {e[0] for e in entries}
        for name, (zi, data) in existing.items():
            if name not in new_names:
                zf.writestr(zi, data)
        for arc, path, st in entries:
            ctx.budget.check()
            t = _dt.datetime.fromtimestamp(max(st.st_mtime, 315532800), tz)  # type: ignore[attr-defined]
            zi = zipfile.ZipInfo(arc, (t.year, t.month, t.day, t.hour, t.minute, t.second))
            zi.external_attr = (st.st_mode & 0xFFFF) << 16  # type: ignore[attr-defined]
            zi.create_system = 3
            verb = "updating" if arc in existing else "adding"
            if arc.endswith("/"):
                zf.writestr(zi, b"")
                if not quiet:
                    ctx.stdout.write(f"  {verb}: {arc} (stored 0%)\n".encode())
                continue
            with ctx.fs.open(path, "rb") as f:
                data = _read_all(ctx, f)
            zi.compress_type = zipfile.ZIP_DEFLATED if level else zipfile.ZIP_STORED
            co = zlib.compressobj(level or 1, zlib.DEFLATED, -15)
            clen = len(co.compress(data) + co.flush())
            if level and clen < len(data):
                zf.writestr(zi, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=level)
                pct = round((1 - clen / len(data)) * 100) if data else 0
                msg = f"(deflated {pct}%)"
            else:
                zi.compress_type = zipfile.ZIP_STORED
                zf.writestr(zi, data, compress_type=zipfile.ZIP_STORED)
                msg = "(stored 0%)"
            if not quiet:
                ctx.stdout.write(f"  {verb}: {arc} {msg}\n".encode())
    with ctx.fs.open(zpath, "wb") as f:
        f.write(buf.getvalue())
    return status


@command("unzip", usage="unzip [-lqop] [-d exdir] file[.zip] [list]", help="List, test and extract zip archives.")
def unzip(ctx: CommandContext, argv: list[str]) -> int:
    list_ = quiet = overwrite = pipe = never = junk = False
    qlevel = 0
    exdir: str | None = None
    operands: list[str] = []
    args = argv[1:]
    names_only = False
    if args and args[0] in ("-Z1", "-Z") and (args[0] == "-Z1" or args[1:2] == ["-1"]):
        # zipinfo -1: member names only, one per line
        names_only = list_ = quiet = True
        args = args[1:] if args[0] == "-Z1" else args[2:]
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if a.startswith("-") and len(a) > 1:
            j = 1
            while j < len(a):
                c = a[j]
                j += 1
                if c == "l":
                    list_ = True
                elif c == "q":
                    quiet = True
                    qlevel += 1
                elif c == "o":
                    overwrite = True
                elif c == "n":
                    never = True
                elif c == "p":
                    pipe = True
                elif c == "j":
                    junk = True
                elif c == "d":
                    if j < len(a):
                        exdir = a[j:]
                    elif i < len(args):
                        exdir = args[i]
                        i += 1
                    j = len(a)
                elif c in "aXUvtCLV":
                    pass
                else:
                    ctx.stderr.write(f"unzip:  error:  unknown option -{c}\n".encode() if False else b"")
                    return 10
        else:
            operands.append(a)
    if not operands:
        ctx.stdout.write(b"UnZip 6.00 (agentic-bash). Usage: unzip [-Z] [-opts[modifiers]] file[.zip] [list] "
                         b"[-x xlist] [-d exdir]\n")
        return 0
    zname = operands[0]
    members = operands[1:]
    zpath = ctx.path(zname)
    if not ctx.fs.exists(zpath) and ctx.fs.exists(zpath + ".zip"):
        zname += ".zip"
        zpath += ".zip"
    try:
        data = _read_path(ctx, zname)
    except OSError:
        ctx.stderr.write(f"unzip:  cannot find or open {zname}, {zname}.zip or {zname}.ZIP.\n".encode())
        return 9
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        ctx.stderr.write(f"  End-of-central-directory signature not found.  Either this file is not\n"
                         f"  a zipfile, or it constitutes one disk of a multi-part archive.  In the\n"
                         f"  latter case the central directory and zipfile comment will be found on\n"
                         f"  the last disk(s) of this archive.\n"
                         f"unzip:  cannot find zipfile directory in one of {zname} or\n"
                         f"        {zname}.zip, and cannot find {zname}.ZIP, period.\n".encode())
        return 9
    infos = zf.infolist()
    if members:
        infos = [zi for zi in infos if any(fnmatch.fnmatchcase(zi.filename, m) for m in members)]
    tz = _tz(ctx)
    _ = tz
    if names_only:
        for zi in infos:
            ctx.stdout.write(zi.filename.encode("utf-8", "surrogateescape") + b"\n")
        return 0
    if list_:
        out = ctx.stdout
        if not quiet:
            out.write(f"Archive:  {zname}\n".encode())
        out.write(b"  Length      Date    Time    Name\n---------  ---------- -----   ----\n")
        total = 0
        for zi in infos:
            y, mo, d, h, mi, _s = zi.date_time
            out.write(f"{zi.file_size:9d}  {y:04d}-{mo:02d}-{d:02d} {h:02d}:{mi:02d}   {zi.filename}\n".encode())
            total += zi.file_size
        n = len(infos)
        out.write(f"---------                     -------\n{total:9d}                     "
                  f"{n} file{'s' if n != 1 else ''}\n".encode())
        return 0
    if pipe:
        for zi in infos:
            if not zi.is_dir():
                ctx.stdout.write(_zread(ctx, zf, zi))
        return 0
    base = ctx.path(exdir) if exdir else ctx.cwd
    if exdir and not ctx.fs.exists(base):
        ctx.fs.mkdir(base, 0o755)
    status = 0
    out = ctx.stdout
    if not quiet:
        out.write(f"Archive:  {zname}\n".encode())
    links: list[tuple[str, str]] = []
    for zi in infos:
        ctx.budget.check()
        name = zi.filename
        safe, removed = safe_member_name(name)
        if removed and "../" in removed:
            ctx.stderr.write(f"warning:  skipped \"../\" path component(s) in {name}\n".encode())
        if junk:
            safe = safe.rsplit("/", 1)[-1] if not zi.is_dir() else ""
        if not safe:
            continue
        from ..vfs.paths import normalize
        target = normalize(f"{base.rstrip('/')}/{safe}", "/")
        shown = f"{exdir.rstrip('/')}/{safe}" if exdir else safe
        try:
            if not _parents_safe(ctx, base, safe.rstrip("/")):
                ctx.stderr.write(f"checkdir error:  {safe} exists but is not directory\n".encode())
                status = 1
                continue
            mode = (zi.external_attr >> 16) & 0o177777
            if zi.is_dir():
                if not ctx.fs.lexists(target.rstrip("/")):
                    ctx.fs.mkdir(target.rstrip("/"), 0o755)
                    if not quiet:
                        out.write(f"   creating: {shown}\n".encode())
                continue
            if _stat.S_ISLNK(mode):
                links.append((target, _zread(ctx, zf, zi).decode("utf-8", "surrogateescape")))
                if not quiet:
                    out.write(f"    linking: {shown}  -> {links[-1][1]} \n".encode())
                continue
            if ctx.fs.lexists(target):
                if never:
                    continue
                if not overwrite:
                    ctx.stderr.write(f"replace {shown}? [y]es, [n]o, [A]ll, [N]one, [r]ename:  NULL\n(EOF or "
                                     f"read error, treating as \"[N]one\" ...)\n".encode())
                    never = True
                    status = max(status, 1)
                    continue
            _prepare_target(ctx, target)
            payload = _zread(ctx, zf, zi)
            perm = (mode & 0o7777) or 0o644
            with ctx.fs.open(target, "wb", perm & ~ctx.umask) as f:
                f.write(payload)
            ctx.fs.chmod(target, perm & 0o7777)
            y, mo, d, h, mi, s = zi.date_time
            ts = _dt.datetime(y, mo, d, h, mi, s, tzinfo=tz).timestamp()
            ctx.fs.utime(target, (ts, ts))
            if not quiet:
                verb = "extracting" if zi.compress_type == zipfile.ZIP_STORED else "inflating"
                out.write(f"{'  inflating' if verb == 'inflating' else ' extracting'}: {shown:<22}  \n".encode())
        except (OSError, zipfile.BadZipFile, zlib.error) as e:
            ctx.stderr.write(f"error:  cannot create {shown}\n        {getattr(e, 'strerror', str(e))}\n".encode())
            status = 1
    for target, link in links:
        try:
            _prepare_target(ctx, target)
            ctx.fs.symlink(link, target)
        except OSError:
            status = 1
    if members:
        found = {zi.filename for zi in infos}
        for m in members:
            if not any(fnmatch.fnmatchcase(f, m) for f in found):
                ctx.stderr.write(f"caution: filename not matched:  {m}\n".encode())
                status = 11
    return status


_unused = _time
