"""GNU sort (keys, numeric/general/human/month/version orders, -c/-u/-m/-o) and uniq."""

from __future__ import annotations

import functools
import hashlib
import os
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Callable, Iterator

from ..limits import Budget, hold

from ._args import read_bounded, stdio, OptError, file_error, iter_lines, open_input, parse_opts, quote, quoteaf, quotef, read_files0, try_help
from .base import CommandContext, command, strerror

_BLANK = b" \t"


@dataclass
class Key:
    sword: int = 0
    schar: int = 0
    eword: int | None = None   # None: end of line
    echar: int = 0
    skipsblanks: bool = False
    skipeblanks: bool = False
    numeric: bool = False
    general: bool = False
    human: bool = False
    month: bool = False
    version: bool = False
    random: bool = False
    fold: bool = False
    dictionary: bool = False
    nonprint: bool = False
    reverse: bool = False

    def has_order(self) -> bool:
        return (self.skipsblanks or self.skipeblanks or self.numeric or self.general or self.human
                or self.month or self.version or self.random or self.fold or self.dictionary
                or self.nonprint)


def _apply_flag(k: Key, c: str, pos: int) -> bool:
    if c == "b":
        if pos == 1:
            k.skipsblanks = True
        else:
            k.skipeblanks = True
    elif c == "d":
        k.dictionary = True
    elif c == "f":
        k.fold = True
    elif c == "g":
        k.general = True
    elif c == "h":
        k.human = True
    elif c == "i":
        k.nonprint = True
    elif c == "M":
        k.month = True
    elif c == "n":
        k.numeric = True
    elif c == "R":
        k.random = True
    elif c == "r":
        k.reverse = True
    elif c == "V":
        k.version = True
    else:
        return False
    return True


class KeyError_(Exception):
    pass


def parse_key(spec: str, q) -> Key:  # noqa: ANN001
    k = Key()
    m = re.match(r"^(\d*)", spec)
    digits = m.group(1) if m else ""
    if not digits:
        raise KeyError_(f"invalid number at field start: invalid count at start of {q(spec)}")
    f = int(digits)
    if f == 0:
        raise KeyError_(f"field number is zero: invalid field specification {q(spec)}")
    k.sword = f - 1
    i = len(digits)
    if i < len(spec) and spec[i] == ".":
        m = re.match(r"^(\d*)", spec[i + 1:])
        d2 = m.group(1) if m else ""
        if not d2:
            raise KeyError_(f"invalid number after '.': invalid count at start of {q(spec[i + 1:])}")
        c = int(d2)
        if c == 0:
            raise KeyError_(f"character offset is zero: invalid field specification {q(spec)}")
        k.schar = c - 1
        i += 1 + len(d2)
    while i < len(spec) and spec[i] != ",":
        if not _apply_flag(k, spec[i], 1):
            raise KeyError_(f"stray character in field spec: invalid field specification {q(spec)}")
        i += 1
    if i < len(spec) and spec[i] == ",":
        rest = spec[i + 1:]
        m = re.match(r"^(\d*)", rest)
        d3 = m.group(1) if m else ""
        if not d3:
            raise KeyError_(f"invalid number after ',': invalid count at start of {q(rest)}")
        e = int(d3)
        if e == 0:
            raise KeyError_(f"field number is zero: invalid field specification {q(spec)}")
        k.eword = e - 1
        j = len(d3)
        if j < len(rest) and rest[j] == ".":
            m = re.match(r"^(\d*)", rest[j + 1:])
            d4 = m.group(1) if m else ""
            if not d4:
                raise KeyError_(f"invalid number after '.': invalid count at start of {q(rest[j + 1:])}")
            k.echar = int(d4)
            j += 1 + len(d4)
        while j < len(rest):
            if not _apply_flag(k, rest[j], 2):
                raise KeyError_(f"stray character in field spec: invalid field specification {q(spec)}")
            j += 1
    return k


def _begfield(line: bytes, k: Key, tab: bytes | None) -> int:
    ptr, lim = 0, len(line)
    sword = k.sword
    if tab is not None:
        while ptr < lim and sword > 0:
            sword -= 1
            j = line.find(tab, ptr)
            ptr = lim if j < 0 else j + 1
    else:
        while ptr < lim and sword > 0:
            sword -= 1
            while ptr < lim and line[ptr] in _BLANK:
                ptr += 1
            while ptr < lim and line[ptr] not in _BLANK:
                ptr += 1
    if k.skipsblanks:
        while ptr < lim and line[ptr] in _BLANK:
            ptr += 1
    return min(lim, ptr + k.schar)


def _limfield(line: bytes, k: Key, tab: bytes | None) -> int:
    lim = len(line)
    if k.eword is None:
        return lim
    eword, echar = k.eword, k.echar
    if echar == 0:
        eword += 1
    ptr = 0
    if tab is not None:
        while ptr < lim and eword > 0:
            eword -= 1
            j = line.find(tab, ptr)
            ptr = lim if j < 0 else j
            if ptr < lim and (eword or echar):
                ptr += 1
    else:
        while ptr < lim and eword > 0:
            eword -= 1
            while ptr < lim and line[ptr] in _BLANK:
                ptr += 1
            while ptr < lim and line[ptr] not in _BLANK:
                ptr += 1
    if echar != 0:
        if k.skipeblanks:
            while ptr < lim and line[ptr] in _BLANK:
                ptr += 1
        ptr = min(lim, ptr + echar)
    return ptr


_NUM_RE = re.compile(rb"^[ \t]*(-?)(\d*)(?:\.(\d*))?")
_GEN_RE = re.compile(rb"^[ \t\n\v\f\r]*([+-]?0[xX][0-9a-fA-F]+|[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|inf(?:inity)?|nan))", re.I)
_HUM_RE = re.compile(rb"^[ \t]*(-?)(\d*)(?:\.(\d*))?([KMGTPEZYRQk]?)")
_MONTHS = {b"JAN": 1, b"FEB": 2, b"MAR": 3, b"APR": 4, b"MAY": 5, b"JUN": 6, b"JUL": 7,
           b"AUG": 8, b"SEP": 9, b"OCT": 10, b"NOV": 11, b"DEC": 12}


def _num(s: bytes):  # noqa: ANN202
    m = _NUM_RE.match(s)
    if not m:
        return 0
    sign, ip, fp = m.groups()
    if not ip and not fp:
        return 0
    if fp:
        v = Decimal((ip or b"0").decode() + "." + fp.decode())
    else:
        v = int(ip)
    return -v if sign else v


def _gen(s: bytes):  # noqa: ANN202
    """(class, value): non-numbers < NaN < numbers, like GNU general_numcompare."""
    m = _GEN_RE.match(s)
    if not m:
        return (0, 0.0)
    t = m.group(1).decode().lower()
    try:
        if "x" in t:
            v = float(int(t, 16))
        else:
            v = float(t)
    except ValueError:
        return (0, 0.0)
    if v != v:
        return (1, 0.0)
    return (2, v)


def _hum(s: bytes):  # noqa: ANN202
    m = _HUM_RE.match(s)
    if not m:
        return (0, 0)
    sign, ip, fp, suf = m.groups()
    if not ip and not fp:
        return (0, 0)
    v = Decimal((ip or b"0").decode() + ("." + fp.decode() if fp else ""))
    order = b" kKMGTPEZYRQ".find(suf) if suf else 0
    if suf == b"k":
        order = 2
    if order > 0:
        order -= 1
    if v == 0:
        return (0, 0)
    if sign:
        return (-1, -order, -v)
    return (1, order, v)


def _month(s: bytes) -> int:
    return _MONTHS.get(s.lstrip(b" \t\n\v\f\r")[:3].upper(), 0)


# -- version sort (gnulib filevercmp) --------------------------------------------------------

_SUFFIX_RE = re.compile(rb"(?:\.[A-Za-z~][A-Za-z0-9~]*)*$")


def _order(c: int) -> int:
    if 48 <= c <= 57:
        return 0
    if (65 <= c <= 90) or (97 <= c <= 122):
        return c
    if c == 126:
        return -1
    return c + 256


def _verrevcmp(a: bytes, b: bytes) -> int:
    i = j = 0
    la, lb = len(a), len(b)
    while i < la or j < lb:
        first_diff = 0
        while (i < la and not (48 <= a[i] <= 57)) or (j < lb and not (48 <= b[j] <= 57)):
            ac = _order(a[i]) if i < la else 0
            bc = _order(b[j]) if j < lb else 0
            if ac != bc:
                return ac - bc
            i += 1
            j += 1
        while i < la and a[i] == 48:
            i += 1
        while j < lb and b[j] == 48:
            j += 1
        while i < la and j < lb and 48 <= a[i] <= 57 and 48 <= b[j] <= 57:
            if not first_diff:
                first_diff = a[i] - b[j]
            i += 1
            j += 1
        if i < la and 48 <= a[i] <= 57:
            return 1
        if j < lb and 48 <= b[j] <= 57:
            return -1
        if first_diff:
            return first_diff
    return 0


def filevercmp(a: bytes, b: bytes) -> int:
    if a == b:
        return 0
    if not a:
        return -1
    if not b:
        return 1
    for special in (b".", b".."):
        if a == special:
            return -1
        if b == special:
            return 1
    if a[:1] == b"." and b[:1] != b".":
        return -1
    if b[:1] == b"." and a[:1] != b".":
        return 1
    if a[:1] == b"." and b[:1] == b".":
        a, b = a[1:], b[1:]
    ma = _SUFFIX_RE.search(a)
    mb = _SUFFIX_RE.search(b)
    pa = a[: ma.start()] if ma else a
    pb = b[: mb.start()] if mb else b
    r = _verrevcmp(pa, pb) if (pa != pb) else 0
    if r == 0:
        r = _verrevcmp(a, b)
    return r


version_key = functools.cmp_to_key(filevercmp)


class _Rev:
    __slots__ = ("v",)

    def __init__(self, v) -> None:  # noqa: ANN001
        self.v = v

    def __lt__(self, other: _Rev) -> bool:
        return other.v < self.v

    def __gt__(self, other: _Rev) -> bool:
        return other.v > self.v

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Rev) and self.v == other.v

    def __le__(self, other: _Rev) -> bool:
        return other.v <= self.v

    def __ge__(self, other: _Rev) -> bool:
        return other.v >= self.v


_DICT_DEL = bytes(c for c in range(256) if not (chr(c).isascii() and (chr(c).isalnum() or c in (32, 9))))
_NONPRINT_DEL = bytes(c for c in range(256) if not (32 <= c < 127))
_FOLD = bytes.maketrans(bytes(range(97, 123)), bytes(range(65, 91)))


def _key_value(k: Key, s: bytes, salt: bytes):  # noqa: ANN202
    # GNU translates (-f) and filters (-d/-i) the key text before any comparison, numeric
    # ones included (so `-fh` reads "1e3" as 1E3)
    if k.dictionary:
        s = s.translate(None, _DICT_DEL)
    if k.nonprint:
        s = s.translate(None, _NONPRINT_DEL)
    if k.fold:
        s = s.translate(_FOLD)
    if k.random:
        return hashlib.md5(salt + s).digest()
    if k.numeric:
        return _num(s)
    if k.general:
        return _gen(s)
    if k.human:
        return _hum(s)
    if k.month:
        return _month(s)
    if k.version:
        return version_key(s)
    return s


def make_sort_key(keys: list[Key], tab: bytes | None, last_resort: bool, global_reverse: bool,
                  salt: bytes):  # noqa: ANN201
    """A key function for ``sorted``; the result is used with reverse=False."""
    def kf(line: bytes):  # noqa: ANN202
        parts = []
        for k in keys:
            b, e = _begfield(line, k, tab), _limfield(line, k, tab)
            v = _key_value(k, line[b:e] if e > b else b"", salt)
            parts.append(_Rev(v) if k.reverse else v)
        if last_resort or not keys:
            parts.append(_Rev(line) if global_reverse else line)
        return parts
    return kf


def _plain_key(k: Key, tab: bytes | None):  # noqa: ANN202
    """The key function of a key with no ordering flags and whole fields (``N`` or ``N,N``),
    or None. Same bytes as _begfield/_limfield cut: fields are possessive (a field is never
    split to make the match succeed) and a line with too few fields gives b""."""
    if k.has_order() or k.schar or k.echar:
        return None
    sw = k.sword
    if k.eword is not None and k.eword != sw:
        return None
    whole = k.eword is None
    if tab is not None:
        if whole:
            if sw == 0:
                return None

            def f(ln: bytes) -> bytes:
                p = ln.split(tab, sw)
                return p[sw] if len(p) > sw else b""
            return f

        def g(ln: bytes) -> bytes:
            p = ln.split(tab, sw + 1)
            return p[sw] if len(p) > sw else b""
        return g
    if whole:
        if sw == 0:
            return None
        m = re.compile(rb"(?:[ \t]*+[^ \t]++){%d}" % sw).match

        def h(ln: bytes) -> bytes:
            r = m(ln)
            return ln[r.end():] if r is not None else b""
        return h
    m2 = re.compile(rb"(?:[ \t]*+[^ \t]++){%d}([ \t]*+[^ \t]*+)" % sw).match

    def i(ln: bytes) -> bytes:
        r = m2(ln)
        return r.group(1) if r is not None else b""
    return i


def _read_all_lines(ctx: CommandContext, names: list[str], sep: bytes, status: list[int],
                    spill: Callable[[list[bytes]], None] | None = None) -> list[bytes]:
    """Every line of ``names`` (without ``sep``). What is held is counted (bytes plus
    Budget.HELD_OVERHEAD a line); past a quarter of ``held_cap`` the lines so far go to
    ``spill`` (a sorted run in a temporary file, as GNU sort does), or without it the read
    fails with "memory exhausted"."""
    from ._args import held_cap, iter_line_blocks
    cap = held_cap(ctx)
    # a run is sorted in one uninterruptible call: small enough to take a fraction of a second
    run_cap = min(cap // 4, RUN_BYTES) if spill is not None else cap
    over = Budget.HELD_OVERHEAD
    lines: list[bytes] = []
    held = top = 0
    for name in names:
        try:
            f = open_input(ctx, name)
        except IsADirectoryError:
            ctx.error(f"read failed: {quotef(name)}: Is a directory")
            status[0] = 2
            raise _Abort()
        except OSError as e:
            ctx.error(f"cannot read: {quotef(name)}: {strerror(e)}")
            status[0] = 2
            raise _Abort()
        try:
            for block, _partial in iter_line_blocks(f, sep, 1 << 16):
                lines.extend(block)
                held += sum(map(len, block)) + over * len(block)
                if held > top:
                    # (the session's commands together, limits.HeldPool: the most held at
                    # once counts, given back when sort returns)
                    hold(held - top)
                    top = held
                if held > run_cap:
                    if spill is None:
                        raise MemoryError("memory exhausted")
                    spill(lines)
                    lines = []
                    held = 0
        except IsADirectoryError:
            ctx.error(f"read failed: {quotef(name)}: Is a directory")
            status[0] = 2
            raise _Abort()
        finally:
            f.close()
    return lines


RUN_BYTES = 16 << 20  # most (counted) bytes of one sorted run before it is spilled


class _Runs:
    """Sorted runs spilled to temporary files in the session's filesystem (``-T``, else
    $TMPDIR, else /tmp), merged at the end and removed."""

    def __init__(self, ctx: CommandContext, tmpdir: str, sep: bytes, kf: Callable[[bytes], Any],
                 sort: Callable[[list[bytes]], None]) -> None:
        self.ctx = ctx
        self.dir = tmpdir
        self.sep = sep
        self.kf = kf
        self.sort = sort
        self.merge_key: Callable[[bytes], Any] | None = kf
        self.paths: list[str] = []
        self.unique_key: Callable[[bytes], Any] | None = None
        """With ``-u``: a run keeps the first line of each key (as GNU sort writes its
        temporary files), so repeated input (``yes | sort -u``) spills next to nothing."""

    def spill(self, lines: list[bytes]) -> None:
        self.sort(lines)
        self.ctx.budget.check()
        if self.unique_key is not None:
            lines = _first_of_each(lines, self.unique_key)
        path = self.ctx.path(f"{self.dir.rstrip('/') or ''}/sort{os.urandom(6).hex()}")
        try:
            with self.ctx.fs.open(path, "wb") as f:
                self.paths.append(path)
                sep = self.sep
                for k in range(0, len(lines), 1 << 14):
                    f.write(sep.join(lines[k:k + (1 << 14)]) + sep)
        except OSError as e:
            self.ctx.error(f"cannot create temporary file in {quoteaf(self.dir)}: {strerror(e)}")
            raise _Abort() from None

    def merged(self, last: list[bytes]) -> Iterator[bytes]:
        import heapq
        from ._args import iter_lines
        self.sort(last)
        files = [self.ctx.fs.open(p, "rb") for p in self.paths]
        try:
            its = [(ln[:-1] for ln in iter_lines(f, 1 << 16, self.sep)) for f in files]
            yield from heapq.merge(*its, iter(last), key=self.merge_key)
        finally:
            for f in files:
                f.close()

    def remove(self) -> None:
        for p in self.paths:
            try:
                self.ctx.fs.unlink(p)
            except OSError:
                pass


def iter_chunks_any(f):  # noqa: ANN001, ANN201
    from ._args import iter_chunks
    return iter_chunks(f, 1 << 16)


class _Abort(Exception):
    pass


_OBS_START = re.compile(r"\+(\d+)(?:\.(\d+))?([bdfgiMhnRrV]*)")
_OBS_END = re.compile(r"-(\d+)(?:\.(\d+))?([bdfgiMhnRrV]*)")


def _obsolete_keys(argv: list[str]) -> list[str]:
    """GNU sort's obsolete ``+POS1 [-POS2]`` keys (0-based fields) as ``-k`` options:
    ``+1 -2`` is ``-k2,2``, ``+0.1`` is ``-k1.2``, ``-1.3`` ends at ``2.3``."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            return out + argv[i:]
        m = _OBS_START.fullmatch(a)
        if m is None or (out and out[-1] in ("-k", "-o", "-t", "-S", "-T")):
            out.append(a)
            i += 1
            continue
        spec = f"{int(m.group(1)) + 1}" + (f".{int(m.group(2)) + 1}" if m.group(2) else "") + m.group(3)
        e = _OBS_END.fullmatch(argv[i + 1]) if i + 1 < len(argv) else None
        if e is not None:
            ew, ec = int(e.group(1)), int(e.group(2) or 0)
            spec += "," + (f"{ew + 1}.{ec}" if ec else f"{ew}") + e.group(3)
            i += 1
        out += ["-k", spec]
        i += 1
    return out


@command("sort", usage="sort [OPTION]... [FILE]...\n  or:  sort [OPTION]... --files0-from=F",
         help="Write sorted concatenation of all FILE(s) to standard output.")
@stdio
def sort(ctx: CommandContext, argv: list[str]) -> int:
    if any(a[:1] == "+" for a in argv):
        argv = _obsolete_keys(argv)
    try:
        opts, files = parse_opts(ctx, argv, "bcCdfghik:mMno:rRsS:t:T:uVzy", {
            "ignore-leading-blanks": "b", "check": "check::", "dictionary-order": "d",
            "ignore-case": "f", "general-numeric-sort": "g", "human-numeric-sort": "h",
            "ignore-nonprinting": "i", "key": "k", "merge": "m", "month-sort": "M",
            "numeric-sort": "n", "output": "o", "reverse": "r", "random-sort": "R",
            "random-source": "random-source:", "stable": "s", "buffer-size": "S",
            "field-separator": "t", "temporary-directory": "T", "unique": "u",
            "version-sort": "V", "zero-terminated": "z", "sort": "sort:", "parallel": "parallel:",
            "batch-size": "batch-size:", "compress-program": "compress-program:", "debug": None,
            "files0-from": "files0-from:"}, status=2)
    except OptError as e:
        return e.status
    g = Key()
    keys: list[Key] = []
    check = None
    unique = stable = False
    out_file = None
    tab: bytes | None = None
    sep = b"\n"
    merge = False

    def q(s: str) -> str:
        return quote(ctx, s)

    for k, v in opts:
        if k in "bdfghiMnRrV" and len(k) == 1:
            _apply_flag(g, k, 1)
            if k == "b":
                g.skipeblanks = True
        elif k == "sort":
            from ._args import argmatch
            name = argmatch(ctx, v, "--sort", [["general-numeric"], ["human-numeric"], ["month"],
                                                ["numeric"], ["random"], ["version"]])
            if name is None:
                return 1   # argmatch_die exits with EXIT_FAILURE even in sort
            _apply_flag(g, {"general-numeric": "g", "human-numeric": "h", "month": "M",
                            "numeric": "n", "random": "R", "version": "V"}[name], 1)
        elif k == "k":
            try:
                keys.append(parse_key(v or "", q))
            except KeyError_ as e:
                ctx.error(str(e))
                return 2
        elif k in ("c", "C", "check"):
            new = "quiet" if k == "C" or k == "check" and v in ("quiet", "silent") else "diagnose"
            if check is not None and check != new:
                ctx.error("options '-cC' are incompatible")
                return 2
            check = new
        elif k == "batch-size":
            m = re.fullmatch(r"(\d+)(.*)", v or "")
            if m is None or m.group(2):
                ctx.error(f"invalid {'suffix in ' if m else ''}--batch-size argument {quoteaf(v or '')}")
                return 2
            if int(m.group(1)) < 2:
                ctx.error(f"invalid --batch-size argument {q(v or '')}")
                ctx.error(f"minimum --batch-size argument is {q('2')}")
                return 2
        elif k == "u":
            unique = True
        elif k == "s":
            stable = True
        elif k == "o":
            out_file = v
        elif k == "t":
            t = (v or "").encode("utf-8", "surrogateescape")
            if len(t) > 1:
                if v == "\\0":
                    t = b"\0"
                else:
                    ctx.error(f"multi-character tab {q(v or '')}")
                    return 2
            if not t:
                ctx.error("empty tab")
                return 2
            if tab is not None and tab != t:
                ctx.error("incompatible tabs")
                return 2
            tab = t
        elif k == "z":
            sep = b"\0"
        elif k == "m":
            merge = True
        elif k == "S":
            # GNU xstrtoumax with "kKmMGTPEZYbs%" suffixes; the size itself is ours to ignore
            m = re.fullmatch(r"(\d+)(.*)", v or "")
            if m is None:
                ctx.error(f"invalid -S argument {quoteaf(v or '')}")
                return 2
            if m.group(2) not in ("", "b", "k", "K", "m", "M", "g", "G", "t", "T", "P", "E", "Z", "Y", "%"):
                ctx.error(f"invalid suffix in -S argument {quoteaf(v or '')}")
                return 2
        elif k == "parallel":
            if not (v or "").isdigit():
                ctx.error(f"invalid --parallel argument {quoteaf(v or '')}")
                return 2
            if int(v or "0") == 0:
                ctx.error("number in parallel must be nonzero")
                return 2
    for kk in keys:
        if not kk.has_order() and not kk.reverse:
            for attr in ("skipsblanks", "skipeblanks", "numeric", "general", "human", "month",
                         "version", "random", "fold", "dictionary", "nonprint", "reverse"):
                setattr(kk, attr, getattr(g, attr))
    if not keys and (g.has_order() or g.reverse):
        whole = Key(sword=0, schar=0, eword=None)
        for attr in ("skipsblanks", "numeric", "general", "human", "month", "version", "random",
                     "fold", "dictionary", "nonprint", "reverse"):
            setattr(whole, attr, getattr(g, attr))
        whole.skipeblanks = g.skipeblanks
        keys = [whole]
    # incompatible orderings (GNU checks each key and the global one)
    # incompatible orderings: GNU checks the keys in force (global options only when inherited)
    for kk in keys:
        ignore = kk.dictionary or kk.nonprint
        if kk.numeric + kk.general + kk.human + kk.month + (kk.version or kk.random or ignore) > 1:
            flags = "".join(c for c, on in (("d", kk.dictionary), ("f", kk.fold), ("g", kk.general),
                                            ("h", kk.human), ("i", kk.nonprint), ("M", kk.month),
                                            ("n", kk.numeric), ("R", kk.random), ("V", kk.version)) if on)
            ctx.error(f"options '-{flags}' are incompatible")
            return 2
    files0 = next((v for k, v in opts if k == "files0-from"), None)
    if files0 is not None:
        if files:
            ctx.error(f"extra operand {quoteaf(files[0])}")
            ctx.stderr.write(b"file operands cannot be combined with --files0-from\n")
            try_help(ctx)
            return 2
        listed = read_files0(ctx, files0, "open failed: {}: {}", shell_quote=False)
        if listed is None:
            return 2
        if not listed:
            ctx.error(f"no input from {quoteaf(files0)}")
            return 2
        for i, nm in enumerate(listed):  # GNU vets every name before reading any
            if nm == "-" and files0 == "-":
                ctx.error("when reading file names from stdin, no file name of '-' allowed")
                return 2
            if nm == "":
                ctx.error(f"{quotef(files0)}:{i + 1}: invalid zero-length file name")
                return 2
        files = listed
    names = files or ["-"]
    if check is not None and len(names) > 1:
        # GNU: quoteaf (shell quoting, ASCII quotes) and no "Try --help" line
        ctx.error(f"extra operand {quoteaf(names[1])} not allowed with -{'c' if check == 'diagnose' else 'C'}")
        return 2
    if check is not None and out_file is not None:
        ctx.error(f"options '-{'c' if check == 'diagnose' else 'C'}o' are incompatible")
        return 2
    status = [0]
    salt = os.urandom(16)
    last_resort = not (stable or unique)
    kf = make_sort_key(keys, tab, last_resort, g.reverse, salt)

    def sort_lines(lines: list[bytes]) -> None:
        """In kf's order, by the cheapest equivalent way."""
        if (len(keys) == 1 and keys[0].numeric and keys[0].sword == 0 and keys[0].schar == 0
                and keys[0].eword is None and not (keys[0].general or keys[0].human or keys[0].fold
                                                   or keys[0].dictionary or keys[0].nonprint
                                                   or keys[0].skipsblanks)):
            # the common `sort -n` / `sort -rn`: one numeric key over the whole line
            rev = keys[0].reverse
            if last_resort:
                lines.sort(reverse=g.reverse)
            lines.sort(key=lambda ln: int(ln) if ln.isdigit() else _num(ln), reverse=rev)
        elif not keys and not g.reverse:
            lines.sort()
        elif len(keys) == 1 and keys[0] == Key(reverse=True) and g.reverse:
            lines.sort(reverse=True)
        elif len(keys) == 1 and (fk := _plain_key(keys[0], tab)) is not None:
            # one key of plain fields (`-k3`, `-k2,2`, with or without -t): the key bytes are
            # cut once per line by a C-level regex or split, and the last-resort order (the
            # whole line) comes from a first stable sort, instead of a Python key object per line
            if last_resort:
                lines.sort(reverse=g.reverse)
            lines.sort(key=fk, reverse=keys[0].reverse)
        else:
            lines.sort(key=kf)

    runs = None
    if not merge and check is None:
        tmpdir = next((v for k, v in reversed(opts) if k == "T"), None) or ctx.env.get("TMPDIR") or "/tmp"
        runs = _Runs(ctx, tmpdir, sep, kf, sort_lines)
        if unique:
            runs.unique_key = make_sort_key(keys, tab, False, False, salt) if keys else (lambda x: x)
        if not keys and not g.reverse:
            runs.merge_key = None  # the plain byte order: no key function per line
    try:
        try:
            if merge and check is None:
                per_file = [_read_all_lines(ctx, [n], sep, status) for n in names]
                lines = []
            else:
                lines = _read_all_lines(ctx, names, sep, status, runs.spill if runs is not None else None)
            if runs is not None and runs.paths:
                return _write_merged(ctx, runs.merged(lines), sep, unique, keys, tab, salt, out_file)
        except _Abort:
            return status[0]
    finally:
        if runs is not None:
            runs.remove()
    if merge and check is None:
        import heapq
        lines = list(heapq.merge(*per_file, key=kf))
        merged = True
    else:
        merged = False
    if check is not None:
        prev = None
        for i, ln in enumerate(lines):
            cur = kf(ln)
            if prev is not None and (cur < prev or (unique and not (prev < cur))):
                if check == "diagnose":
                    ctx.stderr.write(f"sort: {names[0]}:{i + 1}: disorder: ".encode("utf-8", "surrogateescape") + ln + b"\n")
                return 1
            prev = cur
        return 0
    if not merged:
        sort_lines(lines)
    if unique:
        lines = _first_of_each(lines, make_sort_key(keys, tab, False, False, salt) if keys else (lambda x: x))
    data = sep.join(lines) + (sep if lines else b"")
    if out_file is not None:
        try:
            with ctx.fs.open(ctx.path(out_file), "wb") as f:
                f.write(data)
        except OSError as e:
            ctx.error(f"open failed: {quotef(out_file)}: {strerror(e)}")
            return 2
        return 0
    ctx.stdout.write(data)
    return 0


def _write_merged(ctx: CommandContext, lines: Iterator[bytes], sep: bytes, unique: bool, keys: list[Key],
                  tab: bytes | None, salt: bytes, out_file: str | None) -> int:
    """The output of a sort that spilled: the merged runs, streamed in batches."""
    ukf = (make_sort_key(keys, tab, False, False, salt) if keys else (lambda x: x)) if unique else None
    f = None
    if out_file is not None:
        try:
            f = ctx.fs.open(ctx.path(out_file), "wb")
        except OSError as e:
            ctx.error(f"open failed: {quotef(out_file)}: {strerror(e)}")
            return 2
    out = f if f is not None else ctx.stdout
    try:
        batch: list[bytes] = []
        prev_k: Any = _NONE
        for ln in lines:
            if ukf is not None:
                kv = ukf(ln)
                if prev_k is not _NONE and kv == prev_k:
                    continue
                prev_k = kv
            batch.append(ln)
            if len(batch) >= 4096:
                batch.append(b"")
                out.write(sep.join(batch))
                batch = []
                ctx.budget.check()
        if batch:
            batch.append(b"")
            out.write(sep.join(batch))
    finally:
        if f is not None:
            f.close()
    return 0


_NONE = object()


def _first_of_each(lines: list[bytes], ukf: Callable[[bytes], Any]) -> list[bytes]:
    """The first line of each run of equal keys in sorted ``lines``."""
    out_lines = []
    prev_k = None
    first = True
    for ln in lines:
        kv = ukf(ln)
        if first or kv != prev_k:
            out_lines.append(ln)
            prev_k = kv
            first = False
    return out_lines


# -- uniq -----------------------------------------------------------------------------------

@command("uniq", usage="uniq [OPTION]... [INPUT [OUTPUT]]",
         help="Filter adjacent matching lines from INPUT (or standard input),\nwriting to OUTPUT (or standard output).")
@stdio
def uniq(ctx: CommandContext, argv: list[str]) -> int:
    # obsolete -N (skip fields) and +N (skip chars)
    fixed = [argv[0]]
    takes_arg = False  # the previous word was -f/-s/-w (or its long form) wanting a value
    for i, a in enumerate(argv[1:]):
        if takes_arg:
            fixed.append(a)
            takes_arg = False
        elif a == "--":
            fixed += argv[i + 1:]
            break
        elif re.match(r"^-\d+$", a):
            fixed += ["-f", a[1:]]
        elif re.match(r"^\+\d+$", a):
            fixed += ["-s", a[1:]]
        else:
            fixed.append(a)
            takes_arg = bool(re.fullmatch(r"-[cdDiuz]*[fsw]|--(skip-fields|skip-chars|check-chars)", a))
    try:
        opts, ops = parse_opts(ctx, fixed, "cdDf:is:uw:z", {
            "count": "c", "repeated": "d", "all-repeated": "all-repeated::", "skip-fields": "f",
            "ignore-case": "i", "skip-chars": "s", "unique": "u", "check-chars": "w",
            "zero-terminated": "z", "group": "group::"}, status=1)
    except OptError as e:
        return e.status
    count = repeated = unique_only = icase = False
    all_rep: str | None = None
    group: str | None = None
    skip_f = skip_c = 0
    check_w: int | None = None
    sep = b"\n"
    for k, v in opts:
        if k == "c":
            count = True
        elif k == "d":
            repeated = True
        elif k == "D":
            all_rep = "none"
        elif k == "all-repeated":
            if v is None:
                all_rep = "none"
                continue
            from ._args import argmatch
            all_rep = argmatch(ctx, v, "--all-repeated", [["none"], ["prepend"], ["separate"]])
            if all_rep is None:
                return 1
        elif k == "group":
            if v is None:
                group = "separate"
                continue
            from ._args import argmatch
            group = argmatch(ctx, v, "--group", [["prepend"], ["append"], ["separate"], ["both"]])
            if group is None:
                return 1
        elif k == "u":
            unique_only = True
        elif k == "i":
            icase = True
        elif k in "fsw":
            if not (v or "").isdigit():
                what = {"f": "number of fields to skip", "s": "number of bytes to skip",
                        "w": "number of bytes to compare"}[k]
                ctx.error(f"{quote(ctx, v or '')}: invalid {what}" if False else f"{v}: invalid {what}")
                return 1
            n = int(v or "0")
            if k == "f":
                skip_f = n
            elif k == "s":
                skip_c = n
            else:
                check_w = n
        elif k == "z":
            sep = b"\0"
    if group is not None and (count or repeated or unique_only or all_rep):
        ctx.error("--group is mutually exclusive with -c/-d/-D/-u")
        try_help(ctx)
        return 1
    if all_rep is not None and count:
        ctx.error("printing all duplicated lines and repeat counts is meaningless")
        try_help(ctx)
        return 1
    if len(ops) > 2:
        ctx.error(f"extra operand {quote(ctx, ops[2])}")
        try_help(ctx)
        return 1
    inp = ops[0] if ops else "-"
    try:
        f = open_input(ctx, inp)
    except IsADirectoryError:
        # GNU opens both files, then fails on the first read
        if len(ops) == 2 and ops[1] != "-":
            try:
                ctx.fs.open(ctx.path(ops[1]), "wb").close()
            except OSError:
                pass
        ctx.error(f"error reading {quoteaf(inp)}")
        return 1
    except OSError as e:
        file_error(ctx, e, inp)
        return 1
    out = ctx.stdout
    out_f = None
    if len(ops) == 2 and ops[1] != "-":
        try:
            out_f = ctx.fs.open(ctx.path(ops[1]), "wb")
        except OSError as e:
            file_error(ctx, e, ops[1])
            f.close()
            return 1
        out = out_f

    simple_key = not (skip_f or skip_c or check_w is not None or icase)

    def keyof(line: bytes) -> bytes:
        s = line[:-1] if line.endswith(sep) else line
        if simple_key:
            return s
        i = 0
        n = len(s)
        for _ in range(skip_f):
            while i < n and s[i] in b" \t":
                i += 1
            while i < n and s[i] not in b" \t":
                i += 1
        i = min(n, i + skip_c)
        s = s[i:] if check_w is None else s[i:i + check_w]
        return s.lower() if icase else s

    def emit_group(lines: list[bytes], first_group: bool) -> None:
        n = len(lines)
        if group is not None:
            if group in ("prepend", "both") or (group in ("separate", "append") and not first_group):
                out.write(sep)
            out.write(b"".join(_term(x, sep) for x in lines))
            return
        if all_rep is not None:
            if n > 1:
                if all_rep == "prepend" or (all_rep == "separate" and not first_group):
                    out.write(sep)
                out.write(b"".join(_term(x, sep) for x in lines))
            return
        if repeated and n < 2:
            return
        if unique_only and n > 1:
            return
        line = _term(lines[0], sep)
        if count:
            out.write(b"%7d " % n + line)
        else:
            out.write(line)

    if simple_key and all_rep is None and group is None:
        try:
            return _uniq_fast(ctx, f, out, sep, count, repeated, unique_only, inp)
        finally:
            f.close()
            if out_f is not None:
                out_f.close()
    try:
        cur: list[bytes] = []
        cur_key = None
        emitted = 0
        nline = 0
        try:
            for line in iter_lines(f, 1 << 16, sep):
                nline += 1
                if nline & 4095 == 0:
                    ctx.budget.check()
                kk = keyof(line)
                if cur and kk == cur_key:
                    if all_rep is not None or group is not None:
                        cur.append(line)
                    else:
                        cur.append(b"") if len(cur) > 0 else None
                    continue
                if cur:
                    printed = _would_print(len(cur), all_rep, group)
                    emit_group(cur, emitted == 0)
                    emitted += printed
                cur, cur_key = [line], kk
        except IsADirectoryError:
            ctx.error(f"error reading {quoteaf(inp)}")  # (stdin redirected from a directory)
            return 1
        if cur:
            emit_group(cur, emitted == 0)
            if group == "both" or group == "append":
                out.write(sep)
        elif group in ("both", "append") and False:
            out.write(sep)
    finally:
        f.close()
        if out_f is not None:
            out_f.close()
    return 0


def _uniq_fast(ctx: CommandContext, f, out, sep: bytes, count: bool, repeated: bool,  # noqa: ANN001
               unique_only: bool, name: str) -> int:
    """uniq without field/char skipping: whole lines compared, processed in batches."""
    from itertools import groupby

    from ._args import iter_line_blocks
    cur: bytes | None = None
    n = 0

    def fmt(line: bytes, k: int) -> bytes | None:
        if repeated and k < 2:
            return None
        if unique_only and k > 1:
            return None
        return (b"%7d " % k + line + sep) if count else line + sep

    try:
        for lines, _partial in iter_line_blocks(f, sep):
            ctx.budget.check()
            res: list[bytes] = []
            for line, grp in groupby(lines):
                k = sum(1 for _ in grp)
                if cur is not None:
                    if line == cur:
                        n += k
                        continue
                    r = fmt(cur, n)
                    if r is not None:
                        res.append(r)
                cur, n = line, k
            if res:
                out.write(b"".join(res))
    except IsADirectoryError:
        ctx.error(f"error reading {quoteaf(name)}")
        return 1
    if cur is not None:
        r = fmt(cur, n)
        if r is not None:
            out.write(r)
    return 0


def _would_print(n: int, all_rep: str | None, group: str | None) -> int:
    if group is not None:
        return 1
    if all_rep is not None:
        return 1 if n > 1 else 0
    return 1


def _term(line: bytes, sep: bytes) -> bytes:
    return line if line.endswith(sep) else line + sep


_ = (field, InvalidOperation)
