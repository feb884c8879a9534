"""GNU text coreutils in-process: cat head tail wc tee tac rev yes echo printf seq basename dirname."""

from __future__ import annotations

import codecs
import io
import re
from decimal import Decimal, InvalidOperation
from typing import BinaryIO, Iterator

from ._args import (
    held_cap, read_bounded, stdio,
    OptError, file_error, is_output_file, iter_chunks, iter_lines, open_input, read_files0, parse_opts, quote, quoteaf, quotef,
    try_help,
)
from .base import CommandContext, command, strerror

CHUNK = 65536


def _inputs(ctx: CommandContext, operands: list[str], open_fmt: str | None = None,
            dir_ok: bool = False, plain: bool = False) -> Iterator[tuple[str, BinaryIO | None]]:
    """(name, stream) per operand; stream None after printing GNU's error for it.

    ``open_fmt`` like ``"failed to open {} for reading"`` (quoted with quoteaf, or as typed when
    ``plain``) replaces the ``name: error`` form; ``dir_ok`` yields directories (the caller
    reports the read error).
    """
    for name in operands or ["-"]:
        try:
            f = open_input(ctx, name)
        except IsADirectoryError as e:
            if dir_ok:
                yield name, _DirStream(e)  # type: ignore[misc]
                continue
            file_error(ctx, e, name)
            yield name, None
            continue
        except OSError as e:
            if open_fmt:
                ctx.error(open_fmt.format(name if plain else quoteaf(name)) + ": " + strerror(e))
            else:
                file_error(ctx, e, name)
            yield name, None
            continue
        try:
            yield name, f
        finally:
            f.close()


class _DirStream:
    """Stands in for a directory operand: reading it raises EISDIR like read(2) does."""

    def __init__(self, exc: OSError) -> None:
        self.exc = exc

    def read(self, n: int = -1) -> bytes:
        raise IsADirectoryError(self.exc.errno, self.exc.strerror, self.exc.filename)

    read1 = read

    def close(self) -> None:
        pass


# -- cat ------------------------------------------------------------------------------------

def _nonprint_table(tabs: bool) -> list[bytes]:
    t: list[bytes] = []
    for c in range(256):
        if c >= 128:
            pre, c2 = b"M-", c - 128
        else:
            pre, c2 = b"", c
        if c2 < 32:
            if c == 9 and not tabs:
                s = b"\t"
            elif c == 10:
                s = b"\n"
            else:
                s = pre + b"^" + bytes([c2 + 64])
        elif c2 == 127:
            s = pre + b"^?"
        else:
            s = pre + bytes([c2])
        t.append(s)
    return t


@command("cat", usage="cat [OPTION]... [FILE]...",
         help="Concatenate FILE(s) to standard output.")
def cat(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, files = parse_opts(ctx, argv, "AbeEnstTuv", {
            "show-all": "A", "number-nonblank": "b", "show-ends": "E", "number": "n",
            "squeeze-blank": "s", "show-tabs": "T", "show-nonprinting": "v"}, status=1)
    except OptError as e:
        return e.status
    number = nonblank = ends = squeeze = tabs = nonprint = False
    for k, _ in opts:
        if k == "A":
            nonprint = ends = tabs = True
        elif k == "b":
            number = nonblank = True
        elif k == "e":
            nonprint = ends = True
        elif k == "E":
            ends = True
        elif k == "n":
            number = True
        elif k == "s":
            squeeze = True
        elif k == "t":
            nonprint = tabs = True
        elif k == "T":
            tabs = True
        elif k == "v":
            nonprint = True
    out = ctx.stdout
    status = 0
    simple = not (number or ends or squeeze or tabs or nonprint)
    table = None
    if nonprint or tabs:
        table = _nonprint_table(tabs)
        if not nonprint:
            table = [bytes([c]) if c != 9 else b"^I" for c in range(256)]
    lineno = 0
    blank_run = 0
    at_bol = True  # GNU keeps line state across files (a file without final newline continues)
    for name, f in _inputs(ctx, files):
        if f is None:
            status = 1
            continue
        if is_output_file(ctx, f):
            ctx.error(f"{quotef(name)}: input file is output file")
            status = 1
            continue
        try:
            if simple:
                for i, chunk in enumerate(iter_chunks(f, CHUNK)):
                    out.write(chunk)
                    if i & 63 == 63:
                        ctx.budget.check()
                continue
            n_in = 0
            for line in iter_lines(f, CHUNK):
                n_in += 1
                if n_in & 4095 == 0:
                    ctx.budget.check()
                has_nl = line.endswith(b"\n")
                body = line[:-1] if has_nl else line
                if at_bol and has_nl and not body:
                    blank_run += 1
                    if squeeze and blank_run > 1:
                        continue
                elif at_bol:
                    blank_run = 0
                parts = []
                if at_bol and number and not (nonblank and not body and has_nl):
                    lineno += 1
                    parts.append(b"%6d\t" % lineno)
                elif at_bol and number and nonblank and ends is False and not body:
                    pass
                if table is not None:
                    body = b"".join(table[c] for c in body)
                parts.append(body)
                if has_nl:
                    if ends:
                        parts.append(b"$")
                    parts.append(b"\n")
                out.write(b"".join(parts))
                at_bol = has_nl
        except IsADirectoryError as e:
            file_error(ctx, e, name)
            status = 1
    return status


# -- head / tail ----------------------------------------------------------------------------

_MULT = {"b": 512, "k": 1024, "K": 1024, "m": 1024 ** 2, "M": 1024 ** 2, "G": 1024 ** 3,
         "T": 1024 ** 4, "P": 1024 ** 5, "E": 1024 ** 6, "Z": 1024 ** 7, "Y": 1024 ** 8}
# coreutils 9.1's xstrtoumax knows no R/Q suffixes
_NUM_RE = re.compile(r"^\s*([+-]?)(\d+)([bkKmMGTPEZY]?)(B|iB)?$")
BIG = 1 << 63
_UINTMAX = (1 << 64) - 1


def parse_size(s: str, clamp: bool = True) -> tuple[str, int] | None:
    """GNU xstrtoumax with suffixes: returns (sign, value) or None when invalid."""
    m = _NUM_RE.match(s)
    if not m:
        return None
    sign, digits, suf, b = m.groups()
    v = int(digits)
    if suf:
        if suf == "b":
            if b:
                return None
            v *= 512
        elif b == "B":
            v *= 1000 ** (" KMGTPEZY".index(suf.upper()) if suf.upper() in "KMGTPEZY" else 1)
        else:
            v *= _MULT[suf]
    elif b:
        return None
    return sign, min(v, BIG) if clamp else v


def count_error(ctx: CommandContext, what: str, v: str) -> None:
    """head/tail's report of a bad -n/-c value: the number after a leading '-', and GNU's
    EOVERFLOW text for one past UINTMAX_MAX."""
    shown = v[1:] if v.startswith("-") else v
    r = parse_size(shown, clamp=False)
    big = r is not None and r[1] > _UINTMAX
    ctx.error(f"invalid number of {what}: {quote(ctx, shown)}"
              + (": Value too large for defined data type" if big else ""))


def _legacy_num(argv: list[str], letter: str) -> list[str]:
    """``head -5`` / ``tail -5`` / ``tail +5`` -> ``-n 5`` (obsolete syntax GNU still accepts)."""
    if len(argv) > 1:
        a = argv[1]
        m = re.match(r"^-(\d+)([cbkmlqvzf]*)$", a)
        if m:
            unit = "c" if "c" in m.group(2) else letter
            rest = [f"-{x}" for x in m.group(2) if x in "qvzf"]
            return [argv[0], f"-{unit}", m.group(1), *rest, *argv[2:]]
    return argv


def _header(ctx: CommandContext, name: str, first: bool) -> None:
    label = "standard input" if name == "-" else name
    ctx.stdout.write((("" if first else "\n") + f"==> {label} <==\n").encode("utf-8", "surrogateescape"))


@command("head", usage="head [OPTION]... [FILE]...",
         help="Print the first 10 lines of each FILE to standard output.")
@stdio
def head(ctx: CommandContext, argv: list[str]) -> int:
    m = re.match(r"-\d+([cbkmlqvz]*)(.?)", argv[1]) if len(argv) > 1 else None
    if m and m.group(2):
        ctx.stderr.write(f"head: invalid trailing option -- {m.group(2)}\n".encode("utf-8", "surrogateescape"))
        try_help(ctx)
        return 1
    argv = _legacy_num(argv, "n")
    try:
        opts, files = parse_opts(ctx, argv, "c:n:qvz", {
            "bytes": "c", "lines": "n", "quiet": "q", "silent": "q", "verbose": "v",
            "zero-terminated": "z"}, status=1)
    except OptError as e:
        return e.status
    count, by_bytes, all_but, verbose = 10, False, False, None
    sep = b"\n"
    for k, v in opts:
        if k in "cn":
            assert v is not None
            r = parse_size(v, clamp=False)
            if r is None or r[1] > _UINTMAX:
                count_error(ctx, "bytes" if k == "c" else "lines", v)
                return 1
            by_bytes = k == "c"
            all_but = r[0] == "-"
            count = min(r[1], BIG)
        elif k == "q":
            verbose = False
        elif k == "v":
            verbose = True
        elif k == "z":
            sep = b"\0"
    files = files or ["-"]
    show = verbose if verbose is not None else len(files) > 1

    def body(f: BinaryIO) -> None:
        if by_bytes:
            _head_bytes(ctx, f, count, all_but)
        else:
            _head_lines(ctx, f, count, all_but, sep)
    return _each_headed(ctx, files, show, body)


def _each_headed(ctx: CommandContext, files: list[str], show: bool, body) -> int:
    """head/tail: open each FILE, print its ==> header when `show`, run `body` on it; the exit status."""
    status = 0
    first = True
    for name in files:
        try:
            f = open_input(ctx, name)
        except IsADirectoryError:
            if show:
                _header(ctx, name, first)
            first = False
            ctx.error(f"error reading {quoteaf(name)}: Is a directory")
            status = 1
            continue
        except OSError as e:
            ctx.error(f"cannot open {quoteaf(name)} for reading: {strerror(e)}")
            status = 1
            continue
        try:
            if show:
                _header(ctx, name, first)
            first = False
            body(f)
        except IsADirectoryError:
            # (a `< dir` stdin fails only when read; GNU calls it "standard input")
            ctx.error(f"error reading {quoteaf('standard input' if name == '-' else name)}: Is a directory")
            status = 1
        finally:
            f.close()
    return status


def _head_bytes(ctx: CommandContext, f: BinaryIO, count: int, all_but: bool) -> None:
    out = ctx.stdout
    if not all_but:
        left = count
        while left > 0:
            data = f.read(min(left, CHUNK))
            if not data:
                break
            out.write(data)
            left -= len(data)
        return
    buf = bytearray()
    for chunk in iter_chunks(f, CHUNK):
        buf += chunk
        if len(buf) > count + CHUNK:
            cut = len(buf) - count
            out.write(bytes(buf[:cut]))
            del buf[:cut]
    if len(buf) > count:
        out.write(bytes(buf[: len(buf) - count]))


def _head_lines(ctx: CommandContext, f: BinaryIO, count: int, all_but: bool, sep: bytes) -> None:
    out = ctx.stdout
    if not all_but:
        if count <= 0:
            return
        n = 0
        start = _offset(f)
        used = 0
        for line in iter_lines(f, CHUNK, sep):
            out.write(line)
            used += len(line)
            n += 1
            if n >= count:
                break
            if n & 4095 == 0:
                ctx.budget.check()
        if start is not None:
            # GNU head leaves a seekable input just past the lines it printed, so the next
            # reader of a shared descriptor (`{ head -1; cat; } < f`) goes on from there
            try:
                getattr(f, "_raw", f).seek(start + used)
            except (OSError, ValueError):
                pass
        return
    from collections import deque
    q: deque[bytes] = deque()
    for line in iter_lines(f, CHUNK, sep):
        q.append(line)
        if len(q) > count:
            out.write(q.popleft())


def _offset(f: BinaryIO) -> int | None:
    """Where a file head reads from starts (stdin too, through its no-close wrapper); None
    for a pipe, and for a here-document, which bash 5.2 makes a pipe (up to 64 KiB)."""
    raw = getattr(f, "_raw", f)
    if isinstance(getattr(raw, "_s", raw), io.BytesIO):  # (the shell's keep-open wrapper)
        return None
    try:
        return raw.tell() if raw.seekable() else None
    except (OSError, ValueError, AttributeError):
        return None


@command("tail", usage="tail [OPTION]... [FILE]...",
         help="Print the last 10 lines of each FILE to standard output.")
@stdio
def tail(ctx: CommandContext, argv: list[str]) -> int:
    # GNU's parse_obsolete_option: "-N"/"+N" only as the sole option before at most one file
    obsolete_ok = len(argv) == 2 or (len(argv) == 3 and not (argv[2].startswith("-") and argv[2] != "-")) \
        or (len(argv) in (3, 4) and argv[2] == "--")
    if obsolete_ok and re.match(r"^\+\d+[cl]?$", argv[1]) and "POSIXLY_CORRECT" not in ctx.env:
        a = argv[1]
        unit = "c" if a.endswith("c") else "n"
        argv = [argv[0], f"-{unit}", "+" + a[1:].rstrip("cl"), *argv[2:]]
    elif obsolete_ok and re.match(r"^-\d+[bcl]?f?$", argv[1]):
        argv = _legacy_num(argv, "n")
    elif obsolete_ok and re.match(r"^-\d", argv[1]):
        ctx.error(f"option used in invalid context -- {argv[1][1]}")
        return 1
    elif not obsolete_ok:
        skip = False
        for a in argv[1:]:
            if skip:  # the argument of -n/-c/-s ("tail -n -2")
                skip = False
                continue
            if a == "--":
                break
            if a in ("--lines", "--bytes", "--sleep-interval", "--pid", "--max-unchanged-stats") \
                    or re.fullmatch(r"-[fFqvz]*[ncs]", a):
                skip = True
                continue
            m = re.match(r"^-(\d)", a)
            if m:  # getopt meets a digit option outside the obsolete form
                ctx.error(f"option used in invalid context -- {m.group(1)}")
                return 1
    try:
        opts, files = parse_opts(ctx, argv, "c:n:fFqvzs:", {
            "bytes": "c", "lines": "n", "follow": "follow::", "quiet": "q", "silent": "q",
            "verbose": "v", "zero-terminated": "z", "sleep-interval": "s", "retry": None,
            "pid": "pid:", "max-unchanged-stats": "max-unchanged-stats:"}, status=1)
    except OptError as e:
        return e.status
    count, by_bytes, from_start, verbose = 10, False, False, None
    follow: str | None = None
    sep = b"\n"
    for k, v in opts:
        if k in "cn":
            assert v is not None
            r = parse_size(v, clamp=False)
            if r is None or r[1] > _UINTMAX:
                count_error(ctx, "bytes" if k == "c" else "lines", v)
                return 1
            by_bytes = k == "c"
            from_start = from_start or r[0] == "+"  # (GNU's from_start stays set: `-n +2 -n 0`)
            count = min(r[1], BIG)
        elif k in ("f", "F", "follow"):
            follow = "F" if k == "F" or follow == "F" else "f"
        elif k == "s":
            try:
                ok = float(v or "x") >= 0 and not (v or "").strip().lower().startswith(("inf", "nan", "+inf"))
            except ValueError:
                ok = False
            if not ok:
                ctx.error(f"invalid number of seconds: {quote(ctx, v or '')}")
                return 1
        elif k == "q":
            verbose = False
        elif k == "v":
            verbose = True
        elif k == "z":
            sep = b"\0"
        elif k == "pid" and not re.fullmatch(r"\s*\+?\d+", v or ""):
            ctx.error(f"invalid PID: {quote(ctx, v or '')}")
            return 1
    keys = {k for k, _ in opts}
    if follow is None:
        # GNU's warnings for options that only matter when following
        if "retry" in keys:
            ctx.error("warning: --retry ignored; --retry is useful only when following")
        if "pid" in keys:
            ctx.error("warning: PID ignored; --pid=PID is useful only when following")
    elif follow == "f" and "retry" in keys:
        ctx.error("warning: --retry only effective for the initial open")
    if not count and follow is None and not from_start:
        return 0  # GNU reads nothing when it will print nothing: no header, no open error
    files = files or ["-"]
    show = verbose if verbose is not None else len(files) > 1
    if follow is not None:
        st = _tail_follow(ctx, files, follow, show, lambda f: _tail_one(ctx, f, count, by_bytes, from_start, sep))
        if st is not None:
            return st
    return _each_headed(ctx, files, show,
                        lambda f: _tail_one(ctx, f, count, by_bytes, from_start, sep))


def _tail_follow(ctx: CommandContext, files: list[str], mode: str, show: bool, body) -> int | None:  # noqa: ANN001
    """tail -f/-F: None when following changes nothing (GNU ignores -f on a pipe), else the status.

    Following a readable file never ends, so the sandbox refuses it; when no file can be
    followed (missing, or a directory under -f) GNU gives up at once, and so do we.
    """
    if files == ["-"] and _stdin_regular_size(ctx) is None:
        return None
    if mode == "f" and "-" not in files:
        kinds = []
        for name in files:
            try:
                kinds.append("dir" if ctx.fs.stat(ctx.path(name)).is_dir else "file")
            except OSError:
                kinds.append("missing")
        if "file" not in kinds:
            for name, kind in zip(files, kinds):
                st = _each_headed(ctx, [name], show, body)
                if kind == "dir" and st:
                    ctx.error(f"{name}: cannot follow end of this type of file; giving up on this name")
            ctx.error("no files remaining")
            return 1
    ctx.error("following files (-f/-F) is not supported in the sandbox: "
              "output would never end; use 'tail -n N FILE' instead")
    return 1


def _tail_one(ctx: CommandContext, f: BinaryIO, count: int, by_bytes: bool, from_start: bool,
              sep: bytes) -> None:
    out = ctx.stdout
    if by_bytes:
        if from_start:
            skip = max(count - 1, 0)
            for chunk in iter_chunks(f, CHUNK):
                if skip:
                    if len(chunk) <= skip:
                        skip -= len(chunk)
                        continue
                    chunk = chunk[skip:]
                    skip = 0
                out.write(chunk)
            return
        buf = bytearray()
        cap = held_cap(ctx)
        for chunk in iter_chunks(f, CHUNK):
            buf += chunk
            if len(buf) > 2 * max(count, CHUNK):
                del buf[: len(buf) - count]
            if len(buf) > cap:
                raise MemoryError("memory exhausted")  # (tail -c 1T /dev/zero: +2.5 GiB)
        if count:
            out.write(bytes(buf[-count:]))
        return
    if from_start:
        skip = max(count - 1, 0)
        n = 0
        for line in iter_lines(f, CHUNK, sep):
            n += 1
            if n > skip:
                out.write(line)
            elif n & 4095 == 0:
                ctx.budget.check()
        return
    if count == 0:
        for _ in iter_chunks(f, CHUNK):
            pass
        return
    data = _tail_seekable(f, count, sep)
    if data is not None:
        out.write(data)
        return
    # keep only as many trailing chunks as hold ``count`` separators (plus a partial line)
    chunks: list[bytes] = []
    counts: list[int] = []  # each held chunk's separators (counted once)
    held = 0
    n = 0
    size = 0  # bytes held: a last line with no end (tail -n1 /dev/zero) grew without bound
    cap = held_cap(ctx)
    for chunk in iter_chunks(f, CHUNK):
        c = chunk.count(sep)
        chunks.append(chunk)
        counts.append(c)
        size += len(chunk)
        held += c
        while len(chunks) > 1 and held - counts[0] > count:
            held -= counts.pop(0)
            size -= len(chunks.pop(0))
        if size > cap:
            raise MemoryError("memory exhausted")
        n += 1
        if n & 63 == 0:
            ctx.budget.check()
    out.write(_last_lines(b"".join(chunks), count, sep))


def _last_lines(data: bytes, count: int, sep: bytes) -> bytes:
    end = len(data)
    if data.endswith(sep):
        end -= 1
    pos = end
    for _ in range(count):
        k = data.rfind(sep, 0, pos)
        if k < 0:
            return data
        pos = k
    return data[pos + 1:]


def _tail_seekable(f: BinaryIO, count: int, sep: bytes) -> bytes | None:
    """Read a seekable regular file backwards until ``count`` lines are found."""
    try:
        if not f.seekable():
            return None
        start = f.tell()
        end = f.seek(0, 2)
    except (OSError, ValueError, AttributeError):
        return None
    pos = end
    buf = b""
    while pos > start:
        step = min(CHUNK, pos - start)
        pos -= step
        f.seek(pos)
        buf = f.read(step) + buf
        need = count + (1 if buf.endswith(sep) else 0)
        if buf.count(sep) >= need + 1 - (0 if pos > start else 1) and buf.count(sep) > count:
            break
    return _last_lines(buf, count, sep)


# -- wc -------------------------------------------------------------------------------------

# word separators of GNU wc 9.1 in C.UTF-8: glibc's iswspace (no U+2028/U+2029 there) plus
# wc's iswnbspace (U+00A0, U+2007, U+202F, U+2060)
_WS = (" \t\n\v\f\r\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2008\u2009\u200a\u205f\u3000"
       "\u00a0\u2007\u202f\u2060")
_WS_SPLIT = re.compile("[" + re.escape(_WS) + "]")
_B_WS_SPLIT = re.compile(rb"[ \t\n\v\f\r]")
_B_PRINT = re.compile(rb"[\x21-\x7e]")
_B_PLAIN = bytes(range(0x09, 0x0e)) + bytes(range(0x20, 0x7f))
_B_WORDMAP = bytes(0x20 if c in b" \t\n\v\f\r" else 0x78 for c in range(256))
_NONPRINT_ONLY = re.compile(r"^[\x00-\x20\x7f-\x9f\udc80-\udcff\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]*$")


def _char_width(ch: str) -> int:
    import unicodedata
    o = ord(ch)
    if o < 32 or 0x7F <= o < 0xA0 or 0xDC80 <= o <= 0xDCFF:
        return 0
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    if unicodedata.east_asian_width(ch) in ("W", "F"):
        return 2
    return 1


def _line_width(text: str) -> int:
    """Display width of one line's text as wc -L computes it (tabs to 8, \\r/\\f reset)."""
    best = pos = 0
    for ch in text:
        if ch == "\t":
            pos += 8 - pos % 8
        elif ch in "\r\f":
            best = max(best, pos)
            pos = 0
        elif ch == " ":
            pos += 1
        elif ch < "\x7f" and ch >= " ":
            pos += 1
        else:
            pos += _char_width(ch)
    return max(best, pos)


class _WcCounts:
    __slots__ = ("lines", "words", "chars", "bytes", "maxlen")

    def __init__(self) -> None:
        self.lines = self.words = self.chars = self.bytes = self.maxlen = 0


def _wc_stream(ctx: CommandContext, f: BinaryIO, want_words: bool, want_chars: bool,
               want_len: bool, utf8: bool, want_lines: bool = True) -> _WcCounts:
    c = _WcCounts()
    in_word = False
    dec = codecs.getincrementaldecoder("utf-8")("surrogateescape") if utf8 else None
    carry = ""
    bcarry = b""
    n = 0
    for chunk in iter_chunks(f, CHUNK):
        n += 1
        if n & 63 == 0:
            ctx.budget.check()
        c.bytes += len(chunk)
        if want_lines:  # `wc -c` alone need not scan the bytes
            c.lines += chunk.count(b"\n")
        if not (want_words or want_chars or want_len):
            continue
        if dec is not None and not chunk.isascii():
            text = dec.decode(chunk)
            if want_chars:
                c.chars += len(text) - len(re.findall("[\udc80-\udcff]", text))
            if want_words:
                parts = _WS_SPLIT.split(text)
                pr = [not _NONPRINT_ONLY.match(p) for p in parts]
                in_word = _count_words(c, parts, pr, in_word)
            if want_len:
                carry = _maxlen_feed(c, carry + text)
        else:
            if dec is not None:
                text_ascii = dec.decode(chunk)  # keeps decoder state consistent
            else:
                text_ascii = None
            if want_chars:
                c.chars += len(chunk) if dec is not None else len(chunk)
            if want_words:
                if not chunk.translate(None, _B_PLAIN):
                    # only printable ASCII and whitespace: a word is counted where it ends
                    # ("x " transitions); a pending one at the end of input (like the slow path)
                    t = chunk.translate(_B_WORDMAP)
                    c.words += t.count(b"x ") + (1 if in_word and t[0] == 32 else 0)
                    in_word = t[-1] == 120
                else:
                    parts_b = _B_WS_SPLIT.split(chunk)
                    pr = [_B_PRINT.search(p) is not None for p in parts_b]
                    in_word = _count_words(c, parts_b, pr, in_word)
            if want_len:
                if text_ascii is None:
                    # C locale: bytes >= 0x80 are non-printable, width 0
                    text_ascii = chunk.decode("latin-1")
                    text_ascii = re.sub("[\x80-\xff]", "", text_ascii)
                carry = _maxlen_feed(c, carry + text_ascii)
        _ = bcarry
    if dec is not None:
        tail = dec.decode(b"", final=True)
        if tail and want_chars:
            c.chars += len(tail) - len(re.findall("[\udc80-\udcff]", tail))
    if in_word:
        c.words += 1
    if want_len and carry:
        c.maxlen = max(c.maxlen, _line_width(carry))
    return c


def _count_words(c: _WcCounts, parts: list, printable: list[bool], in_word: bool) -> bool:
    if len(parts) == 1:
        return in_word or printable[0]
    if in_word or printable[0]:
        c.words += 1
    c.words += sum(printable[1:-1])
    return printable[-1]


def _maxlen_feed(c: _WcCounts, text: str) -> str:
    lines = text.split("\n")
    for ln in lines[:-1]:
        w = len(ln) if ln.isascii() and ln.isprintable() else _line_width(ln)
        if w > c.maxlen:
            c.maxlen = w
    return lines[-1]


@command("wc", usage="wc [OPTION]... [FILE]...",
         help="Print newline, word, and byte counts for each FILE, and a total line if\n"
              "more than one FILE is specified.")
@stdio
def wc(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, files = parse_opts(ctx, argv, "clLmw", {
            "bytes": "c", "chars": "m", "lines": "l", "words": "w", "max-line-length": "L",
            "files0-from": "files0-from:"}, status=1)
    except OptError as e:
        return e.status
    want = {k for k, _ in opts if k in "clLmw"}
    total_mode = "auto"
    for k, v in opts:
        if k == "total":
            if v not in ("auto", "always", "only", "never"):
                ctx.error(f"invalid argument {quote(ctx, v or '')} for '--total'")
                ctx.stderr.write("Valid arguments are:\n  - 'auto'\n  - 'always'\n  - 'only'\n  - 'never'\n".encode())
                try_help(ctx)
                return 1
            total_mode = v
    if not want:
        want = {"l", "w", "c"}
    utf8 = _utf8(ctx)
    files0 = next((v for k, v in opts if k == "files0-from"), None)
    names: list[str | None]
    if files0 is not None:
        if files:
            ctx.error(f"extra operand {quoteaf(files[0])}")
            ctx.stderr.write(b"file operands cannot be combined with --files0-from\n")
            try_help(ctx)
            return 1
        listed = read_files0(ctx, files0)
        if listed is None:
            return 1
        names = list(listed)
    else:
        names = files or [None]
    results: list[tuple[str | None, _WcCounts | None]] = []
    status = 0
    # width: GNU sums st_size of regular files; any non-regular input forces a minimum of 7
    ncounts = len(want)
    width = 1
    if files0 == "-":
        pass  # GNU streams names read from stdin: nothing to size the columns by
    elif not (len(names) == 1 and ncounts == 1):
        reg_total, minw = 0, 1
        for nm in names:
            try:
                if nm is None or nm == "-":
                    size = _stdin_regular_size(ctx)
                    if size is None:
                        minw = 7
                    else:
                        reg_total += size
                    continue
                st = ctx.fs.stat(ctx.path(nm))
                if st.is_file:
                    reg_total += st.st_size
                else:
                    minw = 7
            except OSError:
                continue  # GNU skips inputs it cannot stat
        width = max(len(str(reg_total)), minw)
    tot = _WcCounts()
    for i, nm in enumerate(names):
        label = nm
        if files0 is not None:
            if nm == "-" and files0 == "-":
                ctx.error("when reading file names from stdin, no file name of '-' allowed")
                status = 1
                continue
            if nm == "":
                ctx.error(f"{quotef(files0)}:{i + 1}: invalid zero-length file name")
                status = 1
                continue
        try:
            f = open_input(ctx, "-" if nm is None else nm)
        except IsADirectoryError as e:
            file_error(ctx, e, nm or "-")
            status = 1
            if total_mode != "only":
                _wc_print(ctx, _WcCounts(), want, width, label)
            continue
        except OSError as e:
            file_error(ctx, e, nm or "-")
            status = 1
            continue
        try:
            try:
                counts = _wc_stream(ctx, f, "w" in want, "m" in want, "L" in want, utf8, "l" in want)
            except IsADirectoryError as e:
                file_error(ctx, e, nm or "standard input")
                status = 1
                counts = _WcCounts()
        finally:
            f.close()
        for a in ("lines", "words", "chars", "bytes"):
            setattr(tot, a, getattr(tot, a) + getattr(counts, a))
        tot.maxlen = max(tot.maxlen, counts.maxlen)
        if total_mode != "only":
            _wc_print(ctx, counts, want, width, label)
    if total_mode == "always" or (total_mode == "auto" and len(names) > 1):
        _wc_print(ctx, tot, want, width, "total")
    elif total_mode == "only":
        _wc_print(ctx, tot, want, width, None)
    return status


def _stdin_regular_size(ctx: CommandContext) -> int | None:
    import io
    s = ctx.stdin
    # (a here-doc or here-string, also behind the shell's keep-open wrapper, is a pipe as in
    # bash 5.2 for bodies under the pipe's capacity)
    if isinstance(getattr(s, "_s", s), io.BytesIO):
        return None
    try:
        if not s.seekable():
            return None
        pos = s.tell()
        end = s.seek(0, 2)
        s.seek(pos)
        return end
    except (OSError, ValueError, AttributeError):
        return None


def _wc_print(ctx: CommandContext, c: _WcCounts, want: set[str], width: int, label: str | None) -> None:
    vals = []
    for k, v in (("l", c.lines), ("w", c.words), ("m", c.chars), ("c", c.bytes), ("L", c.maxlen)):
        if k in want:
            vals.append(str(v).rjust(width))
    s = " ".join(vals)
    if label is not None:
        s += " " + label
    ctx.stdout.write((s + "\n").encode("utf-8", "surrogateescape"))


def _utf8(ctx: CommandContext) -> bool:
    from ._args import is_utf8
    return is_utf8(ctx)


# -- tee ------------------------------------------------------------------------------------

@command("tee", usage="tee [OPTION]... [FILE]...",
         help="Copy standard input to each FILE, and also to standard output.")
def tee(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, files = parse_opts(ctx, argv, "aip", {
            "append": "a", "ignore-interrupts": "i", "output-error": "output-error::"}, status=1)
    except OptError as e:
        return e.status
    append = any(k == "a" for k, _ in opts)
    status = 0
    outs: list[BinaryIO] = []
    for name in files:
        if name == "-":
            outs.append(ctx.stdout)  # GNU 9.1 tee writes '-' literally? no: treats as a file named '-'
            outs.pop()
        try:
            outs.append(ctx.fs.open(ctx.path(name), "ab" if append else "wb"))
        except OSError as e:
            file_error(ctx, e, name)
            status = 1
    try:
        stdout_ok = True
        for i, chunk in enumerate(iter_chunks(ctx.stdin, CHUNK)):
            if i & 63 == 63:
                ctx.budget.check()
            if stdout_ok:
                try:
                    ctx.stdout.write(chunk)
                    fl = getattr(ctx.stdout, "flush", None)
                    if fl:
                        fl()
                except BrokenPipeError:
                    if not outs:
                        raise
                    stdout_ok = False
                    status = 1
            for o in outs:
                o.write(chunk)
                o.flush()
    finally:
        for o in outs:
            o.close()
    return status


# -- tac / rev ------------------------------------------------------------------------------

@command("tac", usage="tac [OPTION]... [FILE]...",
         help="Write each FILE to standard output, last line first.")
@stdio
def tac(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, files = parse_opts(ctx, argv, "brs:", {
            "before": "b", "regex": "r", "separator": "s"}, status=1)
    except OptError as e:
        return e.status
    sep = b"\n"
    before = regex = False
    for k, v in opts:
        if k == "s":
            sep = (v or "").encode("utf-8", "surrogateescape")
        elif k == "b":
            before = True
        elif k == "r":
            regex = True
    if not sep:
        if regex:
            ctx.error("separator cannot be empty")
            return 1
        sep = b"\0"  # GNU: the empty string's terminating NUL is the separator
    status = 0
    out = _BlockOut(ctx.stdout, 8192)  # tac's own output buffer (WRITESIZE), unflushed by errors
    try:
        for name, f in _inputs(ctx, files, "failed to open {} for reading", dir_ok=True):
            if f is None:
                status = 1
                continue
            try:
                data = read_bounded(ctx, f)
            except IsADirectoryError:
                ctx.error(f"{quotef('standard input' if name == '-' else name)}: read error: Invalid argument")
                status = 1
                continue
            out.write(_tac_bytes(data, sep, before, regex))
    finally:
        out.close()
    return status


def _emacs_regex(p: bytes) -> bytes:
    """tac's GNU regex syntax (Emacs-like: \\( \\) \\| group and alternate, + ? * repeat,
    ( ) | { } literal) as a Python bytes pattern."""
    out = bytearray()
    i, n = 0, len(p)
    while i < n:
        c = p[i:i + 1]
        if c == b"\\" and i + 1 < n:
            d = p[i + 1:i + 2]
            out += d if d in (b"(", b")", b"|") else (b"\\" + d if d.isalnum() and d in b"wWbB" else re.escape(d))
            i += 2
            continue
        if c == b"[":
            j = i + 1
            if j < n and p[j:j + 1] == b"^":
                j += 1
            if j < n and p[j:j + 1] == b"]":
                j += 1
            while j < n and p[j:j + 1] != b"]":
                j += 1
            body = p[i + 1:j].replace(b"\\", b"\\\\").replace(b"[", b"\\[")
            if body.startswith(b"\\["):
                body = body  # a literal [ first in the set
            out += b"[" + body + b"]"
            i = j + 1
            continue
        out += re.escape(c) if c in b"(){}|" else c
        i += 1
    return bytes(out)


def _tac_bytes(data: bytes, sep: bytes, before: bool, regex: bool) -> bytes:
    if not data:
        return b""
    if not regex and not before:
        # common case: records end with ``sep``; the last may lack it and is then glued
        # to the next record printed, exactly as GNU tac does
        if data.find(sep) < 0:
            return data  # one unterminated record (no copy of it)
        recs = data.split(sep)
        last = recs.pop()
        out = sep.join(reversed(recs))
        if recs:
            out += sep
        return last + out
    if regex:
        import regex as _re
        try:
            pat = _re.compile(_emacs_regex(sep))
        except _re.error:
            pat = _re.compile(_re.escape(sep))
        # GNU tac searches backwards: the separator is the match at the rightmost start
        # before the previous one, and cannot reach past it ("22" is two separators "2")
        seps = []
        limit = len(data)
        s = limit - 1
        while s >= 0:
            m = pat.match(data, s, limit)
            if m is not None and m.end() > s:
                seps.append((s, m.end()))
                limit = s
            s -= 1
        seps.reverse()
    else:
        seps = []
        i = data.find(sep)
        while i >= 0:
            seps.append((i, i + len(sep)))
            i = data.find(sep, i + len(sep))
    recs: list[bytes] = []
    if not before:
        start = 0
        for s, e in seps:
            recs.append(data[start:e])
            start = e
        if start < len(data):
            recs.append(data[start:])
    else:
        start = 0
        for s, e in seps:
            if s > start or s == 0:
                recs.append(data[start:s])
            start = s
        recs.append(data[start:])
        recs = [r for r in recs if r]
    recs.reverse()
    return b"".join(recs)


_BIG_WRITE = 1 << 20


class _BlockOut:
    """Output held back in whole blocks, like a full stdio (or tac's own) buffer: a
    diagnostic written meanwhile reaches stderr before the data still held."""

    __slots__ = ("stream", "size", "buf")

    def __init__(self, stream: BinaryIO, size: int) -> None:
        self.stream, self.size, self.buf = stream, size, bytearray()

    def write(self, b: bytes) -> None:
        if len(b) >= _BIG_WRITE:
            # (a big record goes out in pieces: copied whole into the buffer, sliced and
            # copied again, `tac` of one 250 MB line held five copies, 716 MiB)
            mv = memoryview(b)
            n = len(b)
            i = 0
            if self.buf:
                i = min(n, (-len(self.buf)) % self.size or self.size)
                self.buf += mv[:i]
                self.stream.write(bytes(self.buf))
                self.buf.clear()
            k = i + (n - i) // self.size * self.size
            while i < k:
                j = min(k, i + _BIG_WRITE)
                self.stream.write(bytes(mv[i:j]))
                i = j
            self.buf += mv[k:]
            mv.release()
            return
        self.buf += b
        if len(self.buf) >= self.size:
            k = len(self.buf) // self.size * self.size
            self.stream.write(bytes(self.buf[:k]))
            del self.buf[:k]

    def close(self) -> None:
        if self.buf:
            self.stream.write(bytes(self.buf))
            self.buf.clear()


@command("rev", usage="rev [options] [file ...]", help="Reverse lines characterwise.")
@stdio
def rev(ctx: CommandContext, argv: list[str]) -> int:
    try:
        _, files = parse_opts(ctx, argv, "V0", {}, status=1)
    except OptError as e:
        return e.status
    status = 0
    utf8 = _utf8(ctx)
    out = _BlockOut(ctx.stdout, 4096)  # util-linux warn() does not flush stdout
    try:
        status = _rev_files(ctx, files, utf8, out)
    finally:
        out.close()
    return status


def _rev_files(ctx: CommandContext, files: list[str], utf8: bool, out: _BlockOut) -> int:
    status = 0
    # util-linux words: "cannot open F: error"; a directory fails on read as "F: 0: ..."
    for name, f in _inputs(ctx, files, open_fmt="cannot open {}", dir_ok=True, plain=True):
        if f is None:
            status = 1
            continue
        if isinstance(f, _DirStream):
            ctx.error(f"{name}: 0: Is a directory")
            status = 1
            continue
        for line in iter_lines(f, CHUNK):
            nl = line.endswith(b"\n")
            body = line[:-1] if nl else line
            if utf8 and not body.isascii():
                r = body.decode("utf-8", "surrogateescape")[::-1].encode("utf-8", "surrogateescape")
            else:
                r = body[::-1]
            out.write(r + (b"\n" if nl else b""))
    return status


# -- yes / echo ----------------------------------------------------------------------------

@command("yes", usage="yes [STRING]...", help="Repeatedly output a line with all specified STRING(s), or 'y'.")
@stdio
def yes(ctx: CommandContext, argv: list[str]) -> int:
    try:
        _, ops = parse_opts(ctx, argv, "+", {}, status=1)
    except OptError as e:
        return e.status
    line = (" ".join(ops) if ops else "y").encode("utf-8", "surrogateescape") + b"\n"
    block = line * max(1, 8192 // len(line))
    while True:
        ctx.budget.check()
        ctx.stdout.write(block)  # BrokenPipeError ends us, like SIGPIPE


_ECHO_ESC = {ord("\\"): b"\\", ord("a"): b"\a", ord("b"): b"\b", ord("e"): b"\x1b",
             ord("f"): b"\f", ord("n"): b"\n", ord("r"): b"\r", ord("t"): b"\t", ord("v"): b"\v"}
_OCT = b"01234567"
_HEX = b"0123456789abcdefABCDEF"


def echo_escapes(s: bytes) -> tuple[bytes, bool]:
    """coreutils echo -e escapes on bytes; returns (data, stop) where stop means \\c was seen."""
    if b"\\" not in s:
        return s, False
    out = bytearray()
    i, n = 0, len(s)
    while i < n:
        ch = s[i]
        if ch != 92 or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        c = s[i + 1]
        i += 2
        if c in _ECHO_ESC:
            out += _ECHO_ESC[c]
        elif c == 99:  # \c
            return bytes(out), True
        elif c in _OCT:
            v = c - 48
            lim = 3 if c == 48 else 2
            k = 0
            while k < lim and i < n and s[i] in _OCT:
                v = v * 8 + s[i] - 48
                i += 1
                k += 1
            out.append(v & 0xFF)
        elif c == 120:  # \x
            j = i
            while j < n and j < i + 2 and s[j] in _HEX:
                j += 1
            if j == i:
                out += b"\\x"
            else:
                out.append(int(s[i:j], 16))
                i = j
        else:
            out.append(92)
            out.append(c)
    return bytes(out), False


@command("echo", usage="echo [SHORT-OPTION]... [STRING]...",
         help="Echo the STRING(s) to standard output.")
@stdio
def echo(ctx: CommandContext, argv: list[str]) -> int:
    args = argv[1:]
    posix = "POSIXLY_CORRECT" in ctx.env
    if len(args) == 1 and not posix:
        if args[0] == "--help":
            ctx.stdout.write(b"Usage: echo [SHORT-OPTION]... [STRING]...\n  or:  echo LONG-OPTION\n"
                             b"Echo the STRING(s) to standard output.\n")
            return 0
        if args[0] == "--version":
            ctx.stdout.write(b"echo (GNU coreutils) 9.1\n")
            return 0
    newline, escapes = True, False
    while args and not posix:
        a = args[0]
        if len(a) > 1 and a[0] == "-" and all(c in "neE" for c in a[1:]):
            for c in a[1:]:
                if c == "n":
                    newline = False
                elif c == "e":
                    escapes = True
                else:
                    escapes = False
            args = args[1:]
        else:
            break
    if posix:
        escapes = True
    parts = []
    stop = False
    for a in args:
        b = a.encode("utf-8", "surrogateescape")
        if escapes:
            b, stop = echo_escapes(b)
        parts.append(b)
        if stop:
            break
    data = b" ".join(parts)
    if newline and not stop:
        data += b"\n"
    ctx.stdout.write(data)
    return 0


# -- printf (command version) -------------------------------------------------------------

@command("printf", usage="printf FORMAT [ARGUMENT]...",
         help="Print ARGUMENT(s) according to FORMAT, or execute according to OPTION:")
@stdio
def printf_cmd(ctx: CommandContext, argv: list[str]) -> int:
    args = argv[1:]
    if len(args) == 1 and args[0] in ("--help", "--version"):
        from ._gnuhelp import HELP, VERSION
        ctx.stdout.write((HELP if args[0] == "--help" else VERSION)["printf"])
        return 0
    if args and args[0] == "--":
        args = args[1:]
    if not args:
        ctx.error("missing operand")
        try_help(ctx)
        return 1
    from .printfmt import gnu_printf_ordered
    out, _err, status, marks = gnu_printf_ordered(args[0], args[1:], ctx.name or "printf")
    # coreutils printf's stdout is block-buffered and error() flushes it before each message
    pos = 0
    for at, msg in marks:
        if at > pos:
            ctx.stdout.write(out[pos:at])
            pos = at
        ctx.stderr.write(msg)
    ctx.stdout.write(out[pos:])
    return status


# -- seq ------------------------------------------------------------------------------------

@command("seq", usage="seq [OPTION]... LAST\n  or:  seq [OPTION]... FIRST LAST\n  or:  seq [OPTION]... FIRST INCREMENT LAST",
         help="Print numbers from FIRST to LAST, in steps of INCREMENT.")
@stdio
def seq(ctx: CommandContext, argv: list[str]) -> int:
    # negative numbers are operands, not options: stop option parsing at them (GNU does too)
    args = argv[1:]
    fixed: list[str] = [argv[0]]
    i = 0
    while i < len(args):
        a = args[i]
        if re.match(r"^-[\d.]", a) or a in ("-inf", "-nan") or not a.startswith("-") or a == "-":
            fixed.append("--")
            fixed.extend(args[i:])
            break
        fixed.append(a)
        i += 1
        if a == "--":
            fixed.extend(args[i:])
            break
        if (re.match(r"^-[w]*[fs]$", a) or a in ("--format", "--separator")) and i < len(args):
            fixed.append(args[i])
            i += 1
    try:
        opts, ops = parse_opts(ctx, fixed, "+f:s:w", {
            "format": "f", "separator": "s", "equal-width": "w"}, status=1)
    except OptError as e:
        return e.status
    fmt = None
    sep = "\n"
    width = False
    for k, v in opts:
        if k == "f":
            fmt = v
        elif k == "s":
            sep = v or ""
        elif k == "w":
            width = True
    if not ops:
        ctx.error("missing operand")
        try_help(ctx)
        return 1
    if len(ops) > 3:
        ctx.error(f"extra operand {quote(ctx, ops[3])}")
        try_help(ctx)
        return 1
    nums: list[Decimal] = []
    for o in ops:
        d = _seq_num(o)
        if d is None:
            ctx.error(f"invalid floating point argument: {quote(ctx, o)}")
            try_help(ctx)
            return 1
        nums.append(d)
    if len(nums) == 1:
        first, step, last = Decimal(1), Decimal(1), nums[0]
        sfirst, sstep = "1", "1"
    elif len(nums) == 2:
        first, step, last = nums[0], Decimal(1), nums[1]
        sfirst, sstep = ops[0], "1"
    else:
        first, step, last = nums
        sfirst, sstep = ops[0], ops[1]
        if step == 0:
            ctx.error(f"invalid Zero increment value: {quote(ctx, ops[1])}")
            try_help(ctx)
            return 1
    if fmt is not None and width:
        ctx.error("format string may not be specified when printing equal width strings")
        try_help(ctx)
        return 1
    if fmt is not None:
        err = _check_seq_fmt(fmt)
        if err:
            ctx.error(err.replace("%Q", quote(ctx, fmt)))
            return 1
    if any(x.is_nan() for x in (first, step, last)):
        ctx.error(f"invalid {quote(ctx, 'not-a-number')} argument: {quote(ctx, ops[[x.is_nan() for x in nums].index(True)])}")
        try_help(ctx)
        return 1
    # precision: max fractional digits of FIRST and INCREMENT (and LAST only for -w width)
    def frac(s: str) -> int:
        s = s.lower()
        if "e" in s:
            mant, _, ex = s.partition("e")
            f = len(mant.partition(".")[2])
            return max(f - int(ex), 0)
        return len(s.partition(".")[2]) if "." in s else 0

    all_int = all(x == x.to_integral_value() and "." not in o and "e" not in o.lower()
                  for x, o in zip(nums, ops)) and not any(x.is_infinite() for x in nums)
    out = ctx.stdout
    sepb = sep.encode("utf-8", "surrogateescape")
    if fmt is None and all_int and not width:
        a, s, b = int(first), int(step), int(last)
        if (s > 0 and a > b) or (s < 0 and a < b):
            return 0
        # fast path: integers, batched through range()
        stop = b + (1 if s > 0 else -1)
        first_batch = True
        step_n = 65536 * s
        for lo in range(a, stop, step_n):
            hi = lo + step_n
            hi = min(hi, stop) if s > 0 else max(hi, stop)
            text = sep.join(map(str, range(lo, hi, s)))
            if first_batch and a == 0 and first.is_signed():
                text = "-" + text  # "seq -0 1": GNU prints its long double -0 as "-0"
            if not first_batch:
                out.write(sepb)
            out.write(text.encode())
            first_batch = False
            ctx.budget.check()
        out.write(b"\n")
        return 0
    prec = max(frac(sfirst), frac(sstep))
    if len(nums) == 1:
        prec = 0

    def fmt_num(x: Decimal) -> str:
        if fmt is not None:
            from .printfmt import format_float
            return format_float(fmt, x)
        if x.is_infinite():
            return "-inf" if x < 0 else "inf"
        return f"{x:.{prec}f}"

    if width and fmt is None:
        # equal width: pad with zeros to the widest of FIRST/LAST as printed
        wid = max(len(fmt_num(first)), len(fmt_num(last)))

        def fmt_num2(x: Decimal) -> str:
            s = fmt_num(x)
            if s.startswith("-"):
                return "-" + s[1:].rjust(wid - 1, "0")
            return s.rjust(wid, "0")
        f2 = fmt_num2
    else:
        f2 = fmt_num
    if (step > 0 and first > last) or (step < 0 and first < last):
        return 0
    items: list[str] = []
    k = 0
    cur = first
    # GNU computes x = first + i*step in long double; emulate its rounding so the values
    # (and the loop end) match digit for digit
    from .printfmt import ld_decimal, ld_round
    finite = first.is_finite() and step.is_finite() and last.is_finite()
    if finite:
        from fractions import Fraction
        fa, fs, fl = ld_round(Fraction(first)), ld_round(Fraction(step)), ld_round(Fraction(last))
        fcur = fa
        cur = ld_decimal(fcur)
        last = ld_decimal(fl)
    while (step > 0 and cur <= last) or (step < 0 and cur >= last):
        items.append(f2(cur))
        if k == 0 and first.is_zero() and first.is_signed() and fmt is None and items[0][:1] != "-":
            items[0] = "-" + items[0]  # a long double -0 prints its sign
        k += 1
        if first.is_infinite():
            break
        if finite:
            fcur = ld_round(fa + ld_round(k * fs))
            if (step > 0 and fcur > fl) or (step < 0 and fcur < fl):
                # GNU: one past the end still prints if it prints as a number equal to LAST
                # and unlike the previous one ("seq 0.1 0.2 0.9" ends with 0.9)
                if fmt is None and items:
                    xs = f2(ld_decimal(fcur))
                    try:
                        same = ld_round(Fraction(Decimal(xs))) == fl
                    except ArithmeticError:
                        same = False
                    if same and xs != items[-1]:
                        items.append(xs)
                break
            cur = ld_decimal(fcur)
            continue
        cur = first + step * k
        if len(items) >= 4096:
            out.write(sep.join(items).encode("utf-8", "surrogateescape") + sepb)
            items = []
            ctx.budget.check()
    if items:
        out.write(sep.join(items).encode("utf-8", "surrogateescape"))
    out.write(b"\n")
    return 0


def _seq_last_value(first: Decimal, step: Decimal, last: Decimal) -> Decimal:
    if (step > 0 and first > last) or (step < 0 and first < last):
        return first
    n = int((last - first) / step)
    return first + step * n


def _seq_num(s: str) -> Decimal | None:
    t = s.strip()
    if re.match(r"^[+-]?(inf|infinity)$", t, re.I):
        return Decimal("-Infinity") if t.startswith("-") else Decimal("Infinity")
    if re.match(r"^[+-]?nan$", t, re.I):
        return Decimal("NaN")
    if re.match(r"^[+-]?0[xX][0-9a-fA-F]+$", t):
        return Decimal(int(t, 16))
    if not re.match(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$", t):
        return None
    try:
        return Decimal(t)
    except InvalidOperation:
        return None


def _check_seq_fmt(fmt: str) -> str | None:
    specs = re.findall(r"%(%|[-+ #0']*\d*(?:\.\d*)?([a-zA-Z]?))", fmt)
    convs = [c for full, c in specs if full != "%"]
    if not convs:
        return "format %Q has no % directive"
    if len(convs) > 1:
        return "format %Q has too many % directives"
    if convs[0] not in "eEfFgGaA" or not convs[0]:
        return f"format %Q has unknown %{convs[0]} directive" if convs[0] else "format %Q ends in %"
    return None


# -- basename / dirname ---------------------------------------------------------------------

def _basename(p: str, suffix: str | None) -> str:
    if p == "":
        return ""
    s = p.rstrip("/")
    if s == "":
        return "/"
    b = s.rsplit("/", 1)[-1]
    if suffix and b != suffix and b.endswith(suffix):
        b = b[: -len(suffix)]
    return b


@command("basename", usage="basename NAME [SUFFIX]\n  or:  basename OPTION... NAME...",
         help="Print NAME with any leading directory components removed.")
@stdio
def basename(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, ops = parse_opts(ctx, argv, "+as:z", {"multiple": "a", "suffix": "s", "zero": "z"}, status=1)
    except OptError as e:
        return e.status
    multiple = False
    suffix = None
    end = "\n"
    for k, v in opts:
        if k == "a":
            multiple = True
        elif k == "s":
            suffix = v
            multiple = True
        elif k == "z":
            end = "\0"
    if not ops:
        ctx.error("missing operand")
        try_help(ctx)
        return 1
    if not multiple:
        if len(ops) > 2:
            ctx.error(f"extra operand {quote(ctx, ops[2])}")
            try_help(ctx)
            return 1
        if len(ops) == 2:
            suffix = ops[1]
        ops = ops[:1]
    ctx.stdout.write("".join(_basename(o, suffix) + end for o in ops).encode("utf-8", "surrogateescape"))
    return 0


def _dirname(p: str) -> str:
    s = p.rstrip("/")
    if not s:
        return "/" if p.startswith("/") else "."
    if "/" not in s:
        return "."
    d = s.rsplit("/", 1)[0].rstrip("/")
    if not d:
        return "//" if s.startswith("//") and not s.startswith("///") and False else "/"
    return d


@command("dirname", usage="dirname [OPTION] NAME...",
         help="Output each NAME with its last non-slash component and trailing slashes\n"
              "removed; if NAME contains no /'s, output '.' (meaning the current directory).")
@stdio
def dirname(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, ops = parse_opts(ctx, argv, "z", {"zero": "z"}, status=1)
    except OptError as e:
        return e.status
    end = "\0" if opts else "\n"
    if not ops:
        ctx.error("missing operand")
        try_help(ctx)
        return 1
    ctx.stdout.write("".join(_dirname(o) + end for o in ops).encode("utf-8", "surrogateescape"))
    return 0


_ = (quotef, Decimal)
