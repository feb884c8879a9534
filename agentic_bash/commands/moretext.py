"""Less common text tools: shuf numfmt iconv split csplit fmt column."""

from __future__ import annotations

import json
import math
import random
import re
import unicodedata
from decimal import ROUND_CEILING, ROUND_DOWN, ROUND_FLOOR, ROUND_HALF_UP, ROUND_UP, Decimal

from ..limits import Budget, hold
from ._args import (
    held_cap, obsolete_num_option, read_bounded,
    OptError, file_error, iter_chunks, iter_lines, open_input, parse_opts, quote, quoteaf,
    stdio, try_help,
)
from .base import CommandContext, command, strerror


def _read(ctx: CommandContext, name: str, open_fmt: str | None = None, dir_msg: str | None = None,
          cap: int | None = None) -> bytes | None:
    """The whole input ``name``; None after reporting an error (``open_fmt``: the tool's
    "cannot open {q} for reading: {err}" wording, ``dir_msg``: its read error for a directory;
    ``cap``: see read_bounded)."""
    try:
        f = open_input(ctx, name)
        try:
            return read_bounded(ctx, f, cap=cap)
        finally:
            f.close()
    except IsADirectoryError as e:
        if dir_msg is not None:
            ctx.error(dir_msg)
        else:
            file_error(ctx, e, name)
        return None
    except OSError as e:
        if open_fmt is not None:
            ctx.error(open_fmt.format(q=quoteaf(name), name=name, err=strerror(e)))
        else:
            file_error(ctx, e, name)
        return None


# -- shuf -----------------------------------------------------------------------------------

@command("shuf", usage="shuf [OPTION]... [FILE]\n  or:  shuf -e [OPTION]... [ARG]...\n  or:  shuf -i LO-HI [OPTION]...",
         help="Write a random permutation of the input lines to standard output.")
@stdio
def shuf(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, ops = parse_opts(ctx, argv, "ei:n:o:rz", {
            "echo": "e", "input-range": "i", "head-count": "n", "output": "o",
            "random-source": "random-source:", "repeat": "r", "zero-terminated": "z"}, status=1)
    except OptError as e:
        return e.status
    echo = repeat = False
    rng_spec = None
    count: int | None = None
    out_name = None
    sep = b"\n"
    for k, v in opts:
        if k == "e":
            echo = True
        elif k == "i":
            rng_spec = v
        elif k == "n":
            try:
                c = int(v or "")
                if c < 0:
                    raise ValueError
            except ValueError:
                ctx.error(f"invalid line count: {quote(ctx, v or '')}")
                return 1
            count = c if count is None else min(count, c)
        elif k == "o":
            out_name = v
        elif k == "r":
            repeat = True
        elif k == "z":
            sep = b"\0"
    r = random.Random(int.from_bytes(__import__("os").urandom(16), "big"))
    if rng_spec is not None:
        if echo:
            ctx.error("cannot combine -e and -i options")
            try_help(ctx)
            return 1
        m = re.fullmatch(r"(\d+)-(\d+)", rng_spec)
        if not m or int(m.group(1)) > int(m.group(2)) + 1:
            ctx.error(f"invalid input range: {quote(ctx, rng_spec)}")
            return 1
        if ops:
            ctx.error(f"extra operand {quote(ctx, ops[0])}")
            try_help(ctx)
            return 1
        lo, hi = int(m.group(1)), int(m.group(2))
        items: list[bytes] | range = range(lo, hi + 1)
    elif echo:
        items = [a.encode("utf-8", "surrogateescape") for a in ops]
    else:
        if len(ops) > 1:
            ctx.error(f"extra operand {quote(ctx, ops[1])}")
            try_help(ctx)
            return 1
        data = _read(ctx, ops[0] if ops else "-")
        if data is None:
            return 1
        items = data.split(sep)
        if items and items[-1] == b"":
            items.pop()
    out_lines: list[bytes] = []
    n = len(items)
    if repeat:
        if n == 0:
            if count:
                ctx.error("no lines to repeat")
                return 1
            return 0
        total = count if count is not None else None
        k = 0
        while total is None or k < total:
            v = items[r.randrange(n)]
            out_lines.append(str(v).encode() if isinstance(v, int) else v)
            k += 1
            if len(out_lines) >= 4096:
                _emit(ctx, out_name, out_lines, sep)
                out_lines = []
                ctx.budget.check()
        _emit(ctx, out_name, out_lines, sep)
        return 0
    want = n if count is None else min(count, n)
    # the permutation's list is held whole (GNU's too): counted in the session's HeldPool,
    # "memory exhausted" past it; written out 4,096 lines at a time (`shuf -i 1-100000000`
    # built 100M ints, their 100M encodings and one joined copy: +4.5 GiB, 12 s past a 2 s
    # timeout; contract13)
    hold(want * _SHUF_ENTRY)
    if isinstance(items, range):
        pick = r.sample(items, want)
    else:
        pick = r.sample(range(n), want)
    for i in range(0, want, 4096):
        part = pick[i:i + 4096]
        lines = [str(v).encode() for v in part] if isinstance(items, range) else [items[j] for j in part]
        st = _emit(ctx, out_name, lines, sep)
        if st:
            return st
        ctx.budget.check()
    return 0


_SHUF_ENTRY = 48
"""Bytes shuf counts per line of its permutation (an int and its list slot, twice: the
sample's pool and its result)."""


def _emit(ctx: CommandContext, out_name: str | None, lines: list[bytes], sep: bytes) -> int:
    data = b"".join(x + sep for x in lines)
    if out_name is None:
        ctx.stdout.write(data)
        return 0
    try:
        with ctx.fs.open(ctx.path(out_name), "ab") as f:
            f.write(data)
    except OSError as e:
        file_error(ctx, e, out_name)
        return 1
    return 0


# -- numfmt ---------------------------------------------------------------------------------

_SI = "KMGTPEZY"  # (coreutils 9.1: no R, Q; upper case only)


def _numfmt_parse(s: str, frm: str) -> float | None:
    m = re.fullmatch(r"\s*([+-]?\d+(?:\.\d+)?|[+-]?\.\d+)([KMGTPEZY]?)(i?)\s*", s)
    if not m:
        return None
    v = float(m.group(1))
    suf, i = m.group(2), m.group(3)
    if suf:
        if frm == "none":
            return None
        p = _SI.index(suf) + 1
        if frm == "si":
            if i:
                return None
            v *= 1000 ** p
        elif frm in ("iec",):
            if i:
                return None
            v *= 1024 ** p
        elif frm == "iec-i":
            if not i:
                return None
            v *= 1024 ** p
        else:  # auto
            v *= (1024 if i else 1000) ** p
    return v


def _round(v: float, mode: str) -> float:
    if mode == "up":
        return math.ceil(v)
    if mode == "down":
        return math.floor(v)
    if mode == "towards-zero":
        return math.trunc(v)
    if mode == "nearest":
        return math.floor(v + 0.5) if v >= 0 else math.ceil(v - 0.5)
    return math.ceil(v) if v >= 0 else math.floor(v)   # from-zero (default)


def _numfmt_to(v: float, to: str, rnd: str, prec: int | None, inprec: int = 0, zero: int = 0) -> str:
    """coreutils' double_to_human: ``prec`` from --format (None: the input's own ``inprec``
    fraction digits when not scaled); ``zero``: the width a "%0Nf" format zero-pads the
    number to, before the unit letter."""
    if to == "none":
        # (in decimal: 1234567.891 scaled by 1000 as a float is a hair above the integer,
        # which rounding up from zero would bump)
        p = prec if prec is not None else inprec
        d = _round_dec(Decimal(repr(v)).scaleb(p), rnd).scaleb(-p)
        return _zero_pad(f"{d:.{p}f}", zero)
    base = 1000 if to == "si" else 1024
    val = v
    power = 0
    while abs(val) >= base and power < len(_SI):
        val /= base
        power += 1
    if prec is not None:
        adj = min(power * 3, prec)
    else:
        adj = 1 if abs(val) < 10 else 0
    val = _round(val * 10 ** adj, rnd) / 10 ** adj
    if abs(val) >= base and power < len(_SI):
        val /= base
        power += 1
    show_point = val != 0 and abs(val) < 10 and power > 0
    body = _zero_pad(f"{val:.{(1 if show_point else 0) if prec is None else prec}f}", zero)
    if not power:
        return body
    return body + _SI[power - 1] + ("i" if to == "iec-i" else "")


def _round_dec(d: Decimal, mode: str) -> Decimal:
    r = {"up": ROUND_CEILING, "down": ROUND_FLOOR, "towards-zero": ROUND_DOWN,
         "nearest": ROUND_HALF_UP}.get(mode, ROUND_UP)
    return d.quantize(Decimal(1), rounding=r)


def _zero_pad(body: str, width: int) -> str:
    if len(body) >= width:
        return body
    sign = "-" if body.startswith("-") else ""
    return sign + body[len(sign):].rjust(width - len(sign), "0")


@command("numfmt", usage="numfmt [OPTION]... [NUMBER]...", help="Reformat NUMBER(s), or the numbers from standard input if none are specified.")
@stdio
def numfmt(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, ops = parse_opts(ctx, argv, "d:z", {
            "from": "from:", "to": "to:", "suffix": "suffix:", "padding": "padding:",
            "field": "field:", "delimiter": "d", "header": "header::", "round": "round:",
            "format": "format:", "invalid": "invalid:", "from-unit": "from-unit:",
            "to-unit": "to-unit:", "grouping": None, "zero-terminated": "z", "debug": None}, status=1)
    except OptError as e:
        return e.status
    frm, to = "none", "none"
    suffix = ""
    padding = 0
    fields = {1}
    all_fields = False
    delim: str | None = None
    header = 0
    rnd = "from-zero"
    fmt_prec: int | None = None
    fmt_pre = fmt_post = ""
    fmt_width = 0
    fmt_zero = 0
    invalid = "abort"
    from_unit = to_unit = 1
    for k, v in opts:
        v = v or ""
        if k in ("from", "to"):
            from ._args import argmatch
            vals = ["none", "auto", "si", "iec", "iec-i"] if k == "from" else ["none", "si", "iec", "iec-i"]
            got = argmatch(ctx, v, f"--{k}", [[x] for x in vals])
            if got is None:
                return 1
            if k == "from":
                frm = got
            else:
                to = got
        elif k == "suffix":
            suffix = v
        elif k == "padding":
            try:
                padding = int(v)
            except ValueError:
                ctx.error(f"invalid padding value {quote(ctx, v)}")
                return 1
        elif k == "field":
            if v == "-":
                all_fields = True
                continue
            fields = set()
            for part in v.split(","):
                m = re.fullmatch(r"(\d*)-(\d*)|(\d+)", part)
                if not m:
                    ctx.error(f"invalid field value {quote(ctx, part)}")
                    try_help(ctx)
                    return 1
                if m.group(3):
                    fields.add(int(m.group(3)))
                else:
                    lo = int(m.group(1) or 1)
                    hi = int(m.group(2)) if m.group(2) else 10 ** 6
                    if not m.group(2):
                        all_fields = all_fields or lo == 1
                    fields.update(range(lo, min(hi, 1000) + 1))
        elif k == "d":
            delim = v
        elif k == "header":
            header = int(v) if v else 1
        elif k == "round":
            rnd = v
        elif k == "format":
            m = re.fullmatch(r"(.*?)%(?=[-0']*\d*(?:\.\d+)?f)([-0']*)(\d*)(?:\.(\d+))?f(.*)", v)
            if not m:
                ctx.error(f"invalid format {quote(ctx, v)}, directive must be %[0]['][-][N][.][N]f")
                return 1
            fmt_pre, fmt_post = m.group(1), m.group(5)
            flags = m.group(2)
            fmt_width = int(m.group(3) or 0) * (-1 if "-" in flags else 1)
            if "0" in flags and "-" not in flags:
                fmt_zero, fmt_width = fmt_width, 0
            fmt_prec = int(m.group(4)) if m.group(4) is not None else None
        elif k == "invalid":
            from ._args import argmatch
            invalid = argmatch(ctx, v, "--invalid", [["abort"], ["fail"], ["warn"], ["ignore"]])
            if invalid is None:
                return 1
        elif k == "from-unit":
            from_unit = int(v)
        elif k == "to-unit":
            to_unit = int(v)
    status = 0

    if fmt_width and padding:
        # a format's width is the padding (its "-" or --padding's sign aligns left)
        padding = abs(fmt_width) * (-1 if fmt_width < 0 or padding < 0 else 1)
        fmt_width = 0

    def conv(tok: str) -> str | None:
        nonlocal status
        t = tok
        if suffix and t.endswith(suffix):
            t = t[: -len(suffix)]
        val = _numfmt_parse(t, frm)
        if val is None:
            msg = f"invalid number: {quote(ctx, tok.strip())}"
            if re.match(r"\s*[+-]?(\d+(\.\d*)?|\.\d+)[A-Za-z]", t):
                m2 = re.search(r"[A-Za-z]", t)
                # (coreutils 9.1 reads K..Y, upper case only: `1k`, `1Q`, `1e3` are no suffix)
                if m2 and m2.group(0) not in "KMGTPEZY":
                    msg = f"invalid suffix in input: {quote(ctx, tok.strip())}"
                elif frm == "none":
                    msg = f"rejecting suffix in input: {quote(ctx, tok.strip())} (consider using --from)"
                elif m2 and len(t) > m2.end() and frm in ("si", "iec"):
                    # a unit then more (`1Ki` for --from=iec): the rest is named
                    msg = f"invalid suffix in input {quote(ctx, tok.strip())}: {quote(ctx, t[m2.end():].strip())}"
            if invalid in ("abort", "fail"):
                ctx.error(msg)
            elif invalid == "warn":
                ctx.error(msg)
            status = 2
            return None
        val = val * from_unit / to_unit
        m_frac = re.match(r"\s*[-+]?\d*\.(\d+)\s*$", t)  # (a number with a unit: no fraction kept)
        s = _numfmt_to(val, to, rnd, fmt_prec, len(m_frac.group(1)) if m_frac else 0, fmt_zero)
        s = s + suffix
        if fmt_width:
            s = s.rjust(fmt_width) if fmt_width > 0 else s.ljust(-fmt_width)
        s = fmt_pre + s + fmt_post
        if padding:
            s = s.rjust(padding) if padding > 0 else s.ljust(-padding)
        return s

    def line_conv(line: str) -> str | None:
        if delim is not None:
            parts = line.split(delim)
            for i in range(len(parts)):
                if all_fields or (i + 1) in fields:
                    r = conv(parts[i])
                    if r is None:
                        if invalid in ("abort",):
                            return None
                        continue
                    parts[i] = r
            return delim.join(parts)
        toks = re.findall(r"\s*\S+|\s+$", line) or [line]
        out = []
        for i, tok in enumerate(toks):
            if (all_fields or (i + 1) in fields) and tok.strip():
                r = conv(tok.strip())
                if r is None:
                    if invalid == "abort":
                        return None
                    out.append(tok)
                    continue
                if len(r) < len(tok) and not padding:
                    r = r.rjust(len(tok)) if i > 0 or tok[:1].isspace() else r
                elif i > 0 and not r[:1].isspace():
                    r = " " + r
                out.append(r)
            else:
                out.append(tok)
        return "".join(out)

    if ops:
        # (each number written as it is done: an error comes after the ones before it)
        for o in ops:
            r = conv(o)
            if r is None:
                if invalid != "ignore" and invalid != "warn" and invalid != "fail":
                    return 2
                r = o
            ctx.stdout.write((r + "\n").encode())
        return status if invalid in ("abort", "fail") else 0
    n = 0
    for raw in iter_lines(ctx.stdin):
        n += 1
        line = raw.decode("utf-8", "surrogateescape").rstrip("\n")
        if n <= header:
            ctx.stdout.write((line + "\n").encode("utf-8", "surrogateescape"))
            continue
        r = line_conv(line)
        if r is None:
            return 2
        ctx.stdout.write((r + "\n").encode("utf-8", "surrogateescape"))
    return status if invalid in ("abort", "fail") else 0


# -- iconv ----------------------------------------------------------------------------------

_ENC = {"utf8": "utf-8", "utf-8": "utf-8", "latin1": "latin-1", "iso-8859-1": "latin-1",
        "iso8859-1": "latin-1", "iso_8859-1": "latin-1", "l1": "latin-1", "ascii": "ascii",
        "us-ascii": "ascii", "ansi_x3.4-1968": "ascii", "utf-16": "utf-16", "utf16": "utf-16",
        "utf-16le": "utf-16-le", "utf-16be": "utf-16-be", "utf-32": "utf-32", "utf-32le": "utf-32-le",
        "utf-32be": "utf-32-be", "cp1252": "cp1252", "windows-1252": "cp1252",
        "iso-8859-15": "iso8859-15", "latin9": "iso8859-15", "cp437": "cp437", "ucs-2": "utf-16"}


def _translit(ch: str) -> str:
    special = {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-",
               "\u2014": "-", "\u2026": "...", "\u20ac": "EUR", "\u00df": "ss", "\u00e6": "ae",
               "\u00c6": "AE", "\u0153": "oe", "\u0152": "OE", "\u00a0": " ", "\u00ab": "<<",
               "\u00bb": ">>", "\u00a9": "(C)", "\u00ae": "(R)", "\u2122": "TM"}
    if ch in special:
        return special[ch]
    d = unicodedata.normalize("NFKD", ch)
    a = "".join(c for c in d if ord(c) < 128 and not unicodedata.combining(c))
    return a or "?"


@command("iconv", usage="iconv [OPTION...] [FILE...]", help="Convert encoding of given files from one encoding to another.")
@stdio
def iconv(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, ops = parse_opts(ctx, argv, "cf:lo:st:", {
            "from-code": "f", "to-code": "t", "list": "l", "output": "o", "silent": "s"}, status=1)
    except OptError as e:
        return e.status
    frm = to = "utf-8"
    frm_raw, to_raw = "UTF-8", "UTF-8"
    drop = False
    out_name = None
    for k, v in opts:
        if k == "f":
            frm_raw = v or ""
        elif k == "t":
            to_raw = v or ""
        elif k == "c":
            drop = True
        elif k == "o":
            out_name = v
        elif k == "l":
            ctx.stdout.write("".join(f"{x.upper()}//\n" for x in sorted(_ENC)).encode())
            return 0
    translit = "//TRANSLIT" in to_raw.upper()
    if "//IGNORE" in to_raw.upper():
        drop = True
    base_from = frm_raw.split("//")[0].lower()
    base_to = to_raw.split("//")[0].lower()
    frm = _ENC.get(base_from, "")
    to = _ENC.get(base_to, "")
    if not frm or not to:
        # this machine's glibc finds no gconv module for an unknown name (ENOENT), which
        # iconv reports so, not as "conversion from `x' is not supported"
        ctx.error("failed to start conversion processing: No such file or directory")
        return 1
    status = 0
    outs: list[bytes] = []
    for name in ops or ["-"]:
        data = _read(ctx, name, "cannot open input file `{name}': {err}")
        if data is None:
            status = 1
            continue
        try:
            text = data.decode(frm)
        except UnicodeDecodeError as e:
            if drop:
                text = data.decode(frm, "ignore")
                status = 1
            else:
                outs.append(data[: e.start].decode(frm).encode(to, "replace"))
                ctx.stdout.write(b"".join(outs))
                if e.reason == "unexpected end of data":
                    ctx.stderr.write(b"iconv: incomplete character or shift sequence at end of buffer\n")
                else:
                    ctx.stderr.write(f"iconv: illegal input sequence at position {e.start}\n".encode())
                return 1
        del data
        res = bytearray()
        pos = 0
        try:
            # (kept as encoded, not copied into res and out again: iconv of 100 MB held
            # five copies, +397 MiB)
            outs.append(text.encode(to))
            del text
            continue
        except UnicodeEncodeError:
            res = bytearray()
            for ch in text:
                try:
                    res += ch.encode(to)
                except UnicodeEncodeError:
                    if translit:
                        res += _translit(ch).encode(to, "replace")
                    elif drop:
                        continue
                    else:
                        outs.append(bytes(res))
                        ctx.stdout.write(b"".join(outs))
                        ctx.stderr.write(f"iconv: cannot convert\n".encode() if False else
                                         f"iconv: illegal input sequence at position {pos}\n".encode())
                        return 1
                pos += len(ch.encode(frm, "surrogatepass"))
        outs.append(bytes(res))
    data_out = outs[0] if len(outs) == 1 else b"".join(outs)
    del outs
    if out_name:
        try:
            with ctx.fs.open(ctx.path(out_name), "wb") as f:
                f.write(data_out)
        except OSError as e:
            ctx.stderr.write(f"iconv: cannot open output file: {strerror(e)}\n".encode())
            return 1
    else:
        ctx.stdout.write(data_out)
    return status


# -- split / csplit -------------------------------------------------------------------------

def _suffix(i: int, length: int, numeric: bool, hexa: bool, start: int = 0) -> str | None:
    i += start
    if numeric or hexa:
        s = ("%0*x" if hexa else "%0*d") % (length, i)
        return s if len(s) <= length else None
    chars = "abcdefghijklmnopqrstuvwxyz"
    out = []
    for _ in range(length):
        out.append(chars[i % 26])
        i //= 26
    if i:
        return None
    return "".join(reversed(out))


@command("split", usage="split [OPTION]... [FILE [PREFIX]]", help="Output pieces of FILE to PREFIXaa, PREFIXab, ...;\ndefault size is 1000 lines, and default PREFIX is 'x'.")
@stdio
def split(ctx: CommandContext, argv: list[str]) -> int:
    from .textutils import parse_size
    args = obsolete_num_option(argv, "l")
    try:
        opts, ops = parse_opts(ctx, args, "a:b:C:dl:n:t:ux", {
            "suffix-length": "a", "bytes": "b", "line-bytes": "C", "numeric-suffixes": "numeric-suffixes::",
            "hex-suffixes": "hex-suffixes::", "lines": "l", "number": "n", "additional-suffix": "additional-suffix:",
            "separator": "t", "verbose": None, "elide-empty-files": "e", "filter": "filter:",
            "unbuffered": "u"}, status=1)
    except OptError as e:
        return e.status
    mode, amount = "l", 1000
    n_kind, n_only = "", 0
    suf_len = 2
    suf_len_set = False
    numeric = hexa = False
    start = 0
    add = ""
    verbose = False
    sep = b"\n"
    for k, v in opts:
        v = v or ""
        if k == "a":
            if not v.isdigit():
                ctx.error(f"invalid suffix length: {quote(ctx, v)}")
                return 1
            suf_len, suf_len_set = int(v), True
        elif k in "blCn" and len(k) == 1:
            if k == "n":
                m = re.fullmatch(r"(?:([lr])/)?(\d+)(?:/(\d+))?", v)
                if not m:
                    ctx.error(f"invalid number of chunks: {quote(ctx, v)}")
                    return 1
                mode, amount = "n", int(m.group(3) or m.group(2))
                n_kind, n_only = m.group(1) or "", int(m.group(2)) if m.group(3) else 0
                if amount == 0 or n_only > amount or (m.group(3) and n_only == 0):
                    ctx.error(f"invalid chunk number: {quote(ctx, m.group(2))}: Numerical result out of range"
                              if amount else
                              f"invalid number of chunks: {quote(ctx, m.group(3) or m.group(2))}: "
                              "Numerical result out of range")
                    return 1
                continue
            r = parse_size(v)
            if r is None or r[1] == 0:
                what = "lines" if k == "l" else "bytes"
                extra = ": Numerical result out of range" if r is not None else ""
                ctx.error(f"invalid number of {what}: {quote(ctx, v)}{extra}")
                return 1
            mode, amount = k, r[1]
        elif k in ("d", "numeric-suffixes"):
            numeric = True
            if v:
                start = int(v)
        elif k in ("x", "hex-suffixes"):
            hexa = True
            if v:
                start = int(v, 16) if k == "hex-suffixes" else int(v)
        elif k == "additional-suffix":
            if "/" in v:
                ctx.error(f"invalid suffix {quote(ctx, v)}, contains directory separator")
                return 1
            add = v
        elif k == "verbose":
            verbose = True
        elif k == "t":
            sep = v.encode() if v != "\\0" else b"\0"
    if len(ops) > 2:
        ctx.error(f"extra operand {quote(ctx, ops[2])}")
        try_help(ctx)
        return 1
    src = ops[0] if ops else "-"
    prefix = ops[1] if len(ops) > 1 else "x"
    try:
        f = open_input(ctx, src)
        try:
            data = read_bounded(ctx, f)
        finally:
            f.close()
    except IsADirectoryError as e:
        file_error(ctx, e, src)  # opened, then failed reading
        return 1
    except OSError as e:
        ctx.error(f"cannot open {quoteaf(src)} for reading: {strerror(e)}")
        return 1
    pieces: list[bytes] = []
    if mode == "l":
        lines = data.split(sep)
        tail = lines.pop() if lines else b""
        lines = [x + sep for x in lines] + ([tail] if tail else [])
        for i in range(0, len(lines), amount):
            pieces.append(b"".join(lines[i:i + amount]))
    elif mode == "b":
        pieces = [data[i:i + amount] for i in range(0, len(data), amount)]
    elif mode == "C":
        cur = b""
        for line in data.splitlines(keepends=True):
            while len(line) > amount:
                if cur:
                    pieces.append(cur)
                    cur = b""
                pieces.append(line[:amount])
                line = line[amount:]
            if len(cur) + len(line) > amount:
                pieces.append(cur)
                cur = b""
            cur += line
        if cur:
            pieces.append(cur)
    elif n_kind == "r":
        lines = data.split(sep)
        tail = lines.pop() if lines else b""
        lines = [x + sep for x in lines] + ([tail] if tail else [])
        pieces = [b"".join(lines[i::amount]) for i in range(amount)]
    elif n_kind == "l":
        # GNU: chunk k ends at the end of the line holding byte k*(size/N)-1; the last takes
        # the rest, and a chunk whose end was passed already is empty
        size, n = len(data), amount
        step = size // n
        pos = 0
        for k in range(1, n + 1):
            if k == n:
                end = size
            else:
                want = k * step - 1
                if want < pos:
                    end = pos
                else:
                    nl = data.find(sep, want)
                    end = size if nl < 0 else nl + 1
            pieces.append(data[pos:end])
            pos = end
    else:
        n = amount
        size = len(data)
        for i in range(n):
            pieces.append(data[i * size // n:(i + 1) * size // n])
    if n_only:
        ctx.stdout.write(pieces[n_only - 1])
        return 0
    if mode == "n" and not suf_len_set:
        while (26 if not (numeric or hexa) else (16 if hexa else 10)) ** suf_len < len(pieces):
            suf_len += 1
    for i, piece in enumerate(pieces):
        s = _suffix(i, suf_len, numeric, hexa, start)
        if s is None:
            ctx.error("output file suffixes exhausted")
            return 1
        name = prefix + s + add
        try:
            with ctx.fs.open(ctx.path(name), "wb") as f:
                f.write(piece)
        except OSError as e:
            file_error(ctx, e, name)
            return 1
        if verbose:
            ctx.stdout.write(f"creating file {quoteaf(name)}\n".encode("utf-8", "surrogateescape"))
    return 0


@command("csplit", usage="csplit [OPTION]... FILE PATTERN...", help="Output pieces of FILE separated by PATTERN(s) to files 'xx00', 'xx01', ...,\nand output byte counts of each piece to standard output.")
@stdio
def csplit(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, ops = parse_opts(ctx, argv, "b:f:kn:szq", {
            "suffix-format": "b", "prefix": "f", "keep-files": "k", "digits": "n",
            "quiet": "s", "silent": "s", "elide-empty-files": "z", "suppress-matched": None}, status=1)
    except OptError as e:
        return e.status
    prefix = "xx"
    digits = 2
    quiet = elide = keep = False
    sfmt = None
    suppress = False
    for k, v in opts:
        if k == "f":
            prefix = v or ""
        elif k == "n":
            digits = int(v or "2")
        elif k in "sq":
            quiet = True
        elif k == "z":
            elide = True
        elif k == "k":
            keep = True
        elif k == "b":
            sfmt = v
        elif k == "suppress-matched":
            suppress = True
    if len(ops) < 2:
        if not ops:
            ctx.error("missing operand")
        else:
            ctx.error(f"missing operand after {quote(ctx, ops[-1])}")
        try_help(ctx)
        return 1
    data = _read(ctx, ops[0], "cannot open {q} for reading: {err}", "read error: Is a directory")
    if data is None:
        return 1
    lines = data.splitlines(keepends=True)
    import regex as _re
    cuts: list[tuple[int, bool]] = []   # (line index where a new piece starts, skip-piece)
    pos = 0
    pieces: list[bytes] = []
    created: list[str] = []

    def out_name(i: int) -> str:
        if sfmt:
            from .printfmt import gnu_printf
            return prefix + gnu_printf(sfmt, [str(i)])[0].decode()
        return prefix + "%0*d" % (digits, i)

    specs = ops[1:]
    i = 0
    prev_spec = None
    status = 0
    while i < len(specs):
        sp = specs[i]
        rep = 1
        if i + 1 < len(specs) and re.fullmatch(r"\{(\d+|\*)\}", specs[i + 1]):
            r = specs[i + 1][1:-1]
            rep = 10 ** 9 if r == "*" else int(r) + 1
            i += 1
        i += 1
        for _ in range(rep):
            m = re.fullmatch(r"([/%])(.*)\1([+-]\d+)?", sp, re.S)
            if m:
                skip = m.group(1) == "%"
                pat = _re.compile(m.group(2).encode("utf-8", "surrogateescape"))
                off = int(m.group(3) or 0)
                start = pos + (1 if prev_spec == sp and not skip and pos < len(lines) else 0)
                found = None
                for j in range(start, len(lines)):
                    if pat.search(lines[j].rstrip(b"\n")):
                        found = j
                        break
                if found is None:
                    if rep >= 10 ** 9:
                        break
                    ctx.error(f"{quote(ctx, sp)}: match not found")
                    status = 1
                    break
                cut = found + off
                if cut < pos or cut > len(lines):
                    ctx.error(f"{quote(ctx, sp)}: line number out of range")
                    status = 1
                    break
                if skip:
                    pos = cut
                else:
                    pieces.append(b"".join(lines[pos:cut]))
                    pos = cut
                    if suppress and pos < len(lines):
                        pos += 1
                prev_spec = sp
            elif sp.isdigit():
                n = int(sp)
                cut = n - 1 if prev_spec is None or not prev_spec.isdigit() else n - 1
                if cut < pos or cut > len(lines):
                    ctx.error(f"{quote(ctx, sp)}: line number out of range")
                    status = 1
                    break
                pieces.append(b"".join(lines[pos:cut]))
                pos = cut
                prev_spec = sp
            else:
                ctx.error(f"{quote(ctx, sp)}: invalid pattern")
                return 1
        if status:
            break
    if status and not keep:
        pieces.append(b"".join(lines[pos:]))
        for idx, pc in enumerate(pieces):
            if not quiet:
                ctx.stdout.write(f"{len(pc)}\n".encode())
        return 1
    pieces.append(b"".join(lines[pos:]))
    idx = 0
    for pc in pieces:
        if elide and not pc:
            continue
        name = out_name(idx)
        idx += 1
        try:
            with ctx.fs.open(ctx.path(name), "wb") as f:
                f.write(pc)
        except OSError as e:
            file_error(ctx, e, name)
            return 1
        created.append(name)
        if not quiet:
            ctx.stdout.write(f"{len(pc)}\n".encode())
    _ = cuts
    return 1 if status else 0  # -k keeps the files, the failure still counts


# -- fmt ------------------------------------------------------------------------------------
# GNU fmt's best-fit line breaking (fmt.c: fmt_paragraph/line_cost/base_cost), transcribed.

def _equiv(n: int) -> int:
    return n * n


_LINE_COST = _equiv(70)
_SENTENCE_BONUS = _equiv(50)
_NOBREAK_COST = _equiv(600)
_PAREN_BONUS = _equiv(40)
_PUNCT_BONUS = _equiv(40)


class _W:
    __slots__ = ("text", "length", "space", "paren", "punct", "period", "final",
                 "best_cost", "next_break", "line_length")

    def __init__(self, text: str, space: int, final: bool) -> None:
        self.text = text
        self.length = len(text)
        self.space = space
        self.paren = text[:1] in "([`'\""
        last = text.rstrip(")]'\"")[-1:] or text[-1:]
        self.punct = bool(text) and not text[-1].isalnum()
        self.period = last in ".?!"
        self.final = final
        self.best_cost = 0
        self.next_break = 0
        self.line_length = 0


def _fmt_paragraph(words: list[_W], width: int, goal: int, first_indent: int, other_indent: int,
                   last_line_length: int = 0) -> list[list[_W]]:
    n = len(words)
    sentinel = _W("", 0, False)
    sentinel.length = width
    ws = words + [sentinel]

    def line_cost(nxt: int, ln: int) -> int:
        if nxt == n:
            return 0
        d = goal - ln
        cost = _equiv(d * 10)
        if ws[nxt].next_break != n:
            d = ln - ws[nxt].line_length
            cost += _equiv(d * 10) // 2
        return cost

    def base_cost(i: int) -> int:
        cost = _LINE_COST
        if i > 0:
            prev = ws[i - 1]
            if prev.period:
                cost += -_SENTENCE_BONUS if prev.final else _NOBREAK_COST
            elif prev.punct:
                cost -= _PUNCT_BONUS
            elif i > 1 and ws[i - 2].final:
                cost += _equiv(200) // (prev.length + 2)  # WIDOW_COST
        if ws[i].paren:
            cost -= _PAREN_BONUS
        elif ws[i].final:
            cost += _equiv(150) // (ws[i].length + 2)  # ORPHAN_COST
        return cost

    ws[n].best_cost = 0
    for start in range(n - 1, -1, -1):
        best = None
        ln = (first_indent if start == 0 else other_indent) + ws[start].length
        w = start
        while True:
            w += 1
            wcost = line_cost(w, ln) + ws[w].best_cost
            if start == 0 and last_line_length > 0:
                wcost += _equiv((ln - last_line_length) * 10) // 2
            if best is None or wcost < best:
                best = wcost
                ws[start].next_break = w
                ws[start].line_length = ln
            if w == n:
                break
            ln += ws[w - 1].space + ws[w].length
            if ln >= width:
                break
        ws[start].best_cost = (best or 0) + base_cost(start)
    lines = []
    i = 0
    while i < n:
        j = ws[i].next_break
        lines.append(ws[i:j])
        i = j
    return lines


def _put_space(parts: list[str], col: int, n: int, tabs: bool) -> int:
    target = col + n
    if tabs:
        tab_target = target // 8 * 8
        if col + 1 < tab_target:
            while col < tab_target:
                parts.append("\t")
                col = (col // 8 + 1) * 8
    if target > col:
        parts.append(" " * (target - col))
        col = target
    return col


@command("fmt", usage="fmt [-WIDTH] [OPTION]... [FILE]...", help="Reformat each paragraph in the FILE(s), writing to standard output.")
@stdio
def fmt(ctx: CommandContext, argv: list[str]) -> int:
    args = obsolete_num_option(argv, "w")
    try:
        opts, ops = parse_opts(ctx, args, "cg:p:stuw:", {
            "crown-margin": "c", "goal": "g", "prefix": "p", "split-only": "s",
            "tagged-paragraph": "t", "uniform-spacing": "u", "width": "w"}, status=1)
    except OptError as e:
        return e.status
    width = 75
    goal = None
    split_only = uniform = False
    for k, v in opts:
        if k == "w":
            try:
                width = int(v or "")
            except ValueError:
                ctx.error(f"invalid width: {quote(ctx, v or '')}")
                return 1
        elif k == "g":
            try:
                goal = int(v or "")
            except ValueError:
                ctx.error(f"invalid width: {quote(ctx, v or '')}")
                return 1
        elif k == "s":
            split_only = True
        elif k == "u":
            uniform = True
    if goal is None:
        goal = width * (2 * (100 - 7) + 1) // 200
    status = 0
    for name in ops or ["-"]:
        # (it holds its input about three times over, in words and lines: a 130 MB line grew
        # the process by 372 MiB; half of what a command may hold is its cap)
        data = _read(ctx, name, "cannot open {q} for reading: {err}", "read error", cap=held_cap(ctx) // 2)
        if data is None:
            status = 1
            continue
        text = data.decode("utf-8", "surrogateescape")
        del data
        lines = text.split("\n")
        del text
        if lines and lines[-1] == "":
            lines.pop()
        out: list[str] = []
        tabs = False  # GNU fmt writes tabs (where they fit) once it has read one
        i = 0
        while i < len(lines):
            line = lines[i].expandtabs(8)
            if not line.strip():
                out.append("")
                i += 1
                continue
            ind = len(line) - len(line.lstrip(" "))
            para = [line]
            i += 1
            if not split_only:
                while i < len(lines):
                    nxt = lines[i].expandtabs(8)
                    if not nxt.strip() or len(nxt) - len(nxt.lstrip(" ")) != ind:
                        break
                    para.append(nxt)
                    i += 1
            words: list[_W] = []
            tabs = tabs or any("\t" in lines[x] for x in range(i - len(para), i))
            for li, pl in enumerate(para):
                toks = re.findall(r"(\S+)(\s*)", pl)
                for ti, (wd, sp) in enumerate(toks):
                    last_in_line = ti == len(toks) - 1
                    # only the very end of input makes a word "final" without a period
                    at_eof = last_in_line and li == len(para) - 1 and i >= len(lines)
                    nsp = len(sp)
                    w = _W(wd, nsp, False)
                    w.final = at_eof or (w.period and (last_in_line or nsp > 1))
                    if last_in_line or uniform:
                        w.space = 2 if w.final else 1
                    words.append(w)
            if words:
                # GNU get_paragraph: the paragraph's last word counts as a sentence end
                words[-1].period = words[-1].final = True
            # get_paragraph starts each paragraph with last_line_length = 0
            for ln_words in _fmt_paragraph(words, width, goal, ind, ind, 0):
                col = 0
                parts = []
                col = _put_space(parts, col, ind, tabs)
                for k2, w in enumerate(ln_words):
                    parts.append(w.text)
                    col += w.length
                    if k2 < len(ln_words) - 1:
                        col = _put_space(parts, col, w.space, tabs)
                out.append("".join(parts))
        ctx.stdout.write("".join(x + "\n" for x in out).encode("utf-8", "surrogateescape"))
    return status


# -- column ---------------------------------------------------------------------------------

def _dw(s: str) -> int:
    w = 0
    for ch in s:
        if unicodedata.combining(ch):
            continue
        w += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return w


@command("column", usage="column [options] [<file>...]", help="Columnate lists.")
@stdio
def column(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, ops = parse_opts(ctx, argv, "ts:o:c:xn:N:R:eJH:l:r:dO:T:E:W:Li:p:", {
            "table": "t", "separator": "s", "output-separator": "o", "output-width": "c",
            "fillrows": "x", "table-columns": "N", "table-right": "R", "keep-empty-lines": "L",
            "json": "J", "table-hide": "H", "table-noheadings": "d", "table-name": "n",
            "table-order": "O", "table-columns-limit": "l", "table-truncate": "T",
            "table-noextreme": "E", "table-wrap": "W", "table-header-repeat": "e", "tree": "r",
            "tree-id": "i", "tree-parent": "p"}, status=1)
    except OptError as e:
        return e.status
    table = across = False
    seps: str | None = None
    osep = "  "
    width = 80
    right_spec = ""
    hide_spec = ""
    order_spec = ""
    limit = 0
    no_head = False
    keep_empty = False
    headers: list[str] | None = None  # -N a,b,c
    as_json = False
    tname = "table"
    if any(k in "nNRHTEWO" for k, _ in opts) and not any(k in "tJ" for k, _ in opts):
        ctx.error("option --table required for all --table-*")
        return 1
    if any(k in "rip" for k, _ in opts):
        ctx.error("options --tree-id and --tree-parent are required for tree formatting")
        return 1
    for k, v in opts:
        if k == "N":
            headers = (v or "").split(",")
        elif k == "J":
            as_json = table = True
        elif k == "n":
            tname = v or "table"
        elif k == "t":
            table = True
        elif k == "s":
            seps = v
        elif k == "o":
            osep = v or ""
        elif k == "c":
            try:
                width = int(v or "")
            except ValueError:
                ctx.stderr.write(f"column: invalid columns argument: '{v}'\n".encode())
                return 1
        elif k == "x":
            across = True
        elif k == "R":
            right_spec = v or ""
        elif k == "H":
            hide_spec = v or ""
        elif k == "O":
            order_spec = v or ""
        elif k == "l":
            try:
                limit = int(v or "")
            except ValueError:
                ctx.error(f"invalid columns limit argument: '{v}'")
                return 1
        elif k == "d":
            no_head = True
        elif k == "L":
            keep_empty = True
    if "COLUMNS" in ctx.env and not any(k == "c" for k, _ in opts):
        try:
            width = int(ctx.env["COLUMNS"])
        except ValueError:
            pass
    text_parts: list[str] = []
    status = 0
    for name in ops or ["-"]:
        data = _read(ctx, name)
        if data is None:
            status = 1
            continue
        text_parts.append(data.decode("utf-8", "surrogateescape"))
    text = "".join(text_parts)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    out: list[str] = []
    if table:
        rows = []
        # -l N: at most N columns, the last keeps the rest of the line as it was
        maxsplit = limit - 1 if limit > 0 else 0
        for k, ln in enumerate(lines):
            if not k & 1023:
                ctx.budget.check()
            if not ln.strip() and not keep_empty:
                continue
            if limit == 1:
                cells = [ln.strip() if seps is None else ln]
            elif seps is None:
                if maxsplit:
                    # the last column starts one blank after the previous cell (util-linux)
                    m = re.match(r"\s*" + r"(\S+)\s+" * maxsplit, ln)
                    if m is not None:
                        cells = list(m.groups()) + [ln[m.end(maxsplit) + 1:]]
                    else:
                        cells = ln.split()
                else:
                    cells = ln.split()
            elif not seps:
                cells = [ln]  # `-s ''` splits nothing (util-linux); a regex "[]" was an internal error
            else:
                cells = re.split("[" + re.escape(seps) + "]", ln, maxsplit=maxsplit)
            rows.append(cells)
        if as_json:
            if headers is None:
                ctx.stderr.write(b"column: option --table-columns required for --json\n")
                return 1
            recs = []
            for r in rows:
                fields = []
                for i, h in enumerate(headers):
                    c = r[i] if i < len(r) else ""
                    val = "null" if c == "" else json.dumps(c, ensure_ascii=False)
                    fields.append(f"         {json.dumps(h, ensure_ascii=False)}: {val}")
                recs.append("{\n" + ",\n".join(fields) + "\n      }")
            body = "      " + ",".join(recs) + "\n" if recs else ""
            doc = "{\n   " + json.dumps(tname) + ": [\n" + body + "   ]\n}\n"
            ctx.stdout.write(doc.encode("utf-8", "surrogateescape"))
            return status
        if headers is not None and not no_head:
            rows.insert(0, headers)
        # util-linux 2.38 fills a short row with empty cells up to the widest row, each padded
        # like any other cell ("d e\nf" -> "f" + 5 spaces under a 3-column table)
        ncol = max([len(r) for r in rows] + [len(headers or [])])
        # security: the padded table is rows x widest row, each cell an object (random input
        # makes a few thousand lines of hundreds of cells): bounded like any held buffer,
        # each cell counted three times (split, padded, formatted: 3 MB of random bytes
        # grew the process by 783 MiB under a 256 MiB cap counted once)
        if len(rows) * ncol * Budget.HELD_OVERHEAD * 3 > held_cap(ctx):
            raise MemoryError("memory exhausted")
        padded = []
        for k in range(0, len(rows), 256):
            padded.extend([r + [""] * (ncol - len(r)) for r in rows[k:k + 256]])
            ctx.budget.check()
        rows = padded

        def colset(spec: str) -> list[int] | None:
            """1-based column numbers or -N names; None after util-linux's error."""
            got = []
            for item in spec.split(","):
                if item.isdigit():
                    got.append(int(item))
                elif headers is not None and item in headers:
                    got.append(headers.index(item) + 1)
                elif item:
                    ctx.error(f"undefined column name '{item}'")
                    return None
            return got

        picked = [colset(x) for x in (right_spec, hide_spec, order_spec)]
        if any(p is None for p in picked):
            return 1
        right = set(picked[0] or [])
        hidden = set(picked[1] or [])
        order = [c for c in (picked[2] or []) if 1 <= c <= ncol]
        order += [c for c in range(1, ncol + 1) if c not in order]
        keep = [c - 1 for c in order if c not in hidden]
        if keep != list(range(ncol)):
            rows = [[r[i] for i in keep] for r in rows]
            right = {keep.index(c - 1) + 1 for c in right if c - 1 in keep}
            ncol = len(keep)
        widths = [0] * ncol
        for k, r in enumerate(rows):
            if not k & 255:
                ctx.budget.check()
            for i, c in enumerate(r):
                widths[i] = max(widths[i], _dw(c))
        # the padded output is written as it is made, about a MiB at a time: a few wide
        # cells pad every row (3 MB of random bytes made GBs), and held whole it was three
        # copies of up to the held cap (+783 MiB)
        size = 0
        for k, r in enumerate(rows):
            if not k & 1023:
                ctx.budget.check()
            cells = []
            for i, c in enumerate(r):
                if i == len(r) - 1 and (i + 1) not in right:
                    cells.append(c)
                else:
                    pad = " " * (widths[i] - _dw(c))
                    cells.append(pad + c if (i + 1) in right else c + pad)
            line = osep.join(cells)
            out.append(line)
            size += len(line)
            if size >= 1 << 20:
                ctx.stdout.write("".join(x + "\n" for x in out).encode("utf-8", "surrogateescape"))
                out.clear()
                size = 0
        if out:
            ctx.stdout.write("".join(x + "\n" for x in out).encode("utf-8", "surrogateescape"))
        return status
    items = [ln for ln in lines if ln.strip()]
    if not items:
        return status
    maxw = max(_dw(x) for x in items)
    colw = (maxw // 8 + 1) * 8
    cols = max(width // colw, 1)
    if cols >= len(items) and _dw_total(items, colw) <= width:
        ctx.stdout.write(("\t".join(items) + "\n").encode("utf-8", "surrogateescape") if False else _fill_line(items, colw).encode("utf-8", "surrogateescape"))
        return status
    rows_n = -(-len(items) // cols)
    for r in range(rows_n):
        row = []
        for c in range(cols):
            i = r * cols + c if across else c * rows_n + r
            if i < len(items):
                row.append(items[i])
        out.append(_fill_line(row, colw).rstrip("\n"))
    ctx.stdout.write("".join(x + "\n" for x in out).encode("utf-8", "surrogateescape"))
    return status


def _dw_total(items: list[str], colw: int) -> int:
    return colw * (len(items) - 1) + _dw(items[-1])


def _fill_line(items: list[str], colw: int) -> str:
    parts = []
    for i, it in enumerate(items):
        if i < len(items) - 1:
            w = _dw(it)
            ntabs = -(-(colw - w) // 8)
            parts.append(it + "\t" * max(ntabs, 1))
        else:
            parts.append(it)
    return "".join(parts) + "\n"


# -- pr -------------------------------------------------------------------------------------
# GNU pr (coreutils 9): pages of -l lines (66) with a 5-line header and a 5-line trailer
# unless -t/-T; -COLUMN columns filled down (balanced on the last page) or across (-a), -m
# files side by side.  Multi-column output is "tabified": runs of blanks (padding and
# separators alike) become tabs where they cross a stop, as pr.c's print_white_space does.

_PR_OBSOLETE = re.compile(r"-(\d+)(.*)")


def _pr_tabify(s: str, keep_trailing: bool = False) -> str:
    """pr.c print_white_space: blank runs of two or more reach tab stops with tabs; trailing
    blanks are not printed (but -m pads a column whose file has ended)."""
    out: list[str] = []
    pos = 0
    i, n = 0, len(s)
    while i < n:
        j = i
        while j < n and s[j] == " ":
            j += 1
        if j > i:
            if j == n and not keep_trailing:
                break
            goal = pos + (j - i)
            while goal - pos > 1 and (pos // 8 + 1) * 8 <= goal:
                out.append("\t")
                pos = (pos // 8 + 1) * 8
            out.append(" " * (goal - pos))
            pos = goal
            i = j
            continue
        out.append(s[i])
        pos += 1
        i += 1
    return "".join(out)


@command("pr", usage="pr [OPTION]... [FILE]...", help="Paginate or columnate FILE(s) for printing.")
@stdio
def pr(ctx: CommandContext, argv: list[str]) -> int:
    columns = 1
    first_page, last_page = 1, None
    args = [argv[0]]
    for a in argv[1:]:
        m = _PR_OBSOLETE.fullmatch(a)
        if m and a != "--":
            columns = int(m.group(1))
            if m.group(2):
                args.append("-" + m.group(2))
            continue
        m = re.fullmatch(r"\+(\d+)(?::(\d+))?", a)
        if m:
            first_page = int(m.group(1))
            last_page = int(m.group(2)) if m.group(2) else None
            continue
        args.append(a)
    try:
        opts, files = parse_opts(ctx, args, "D:FJN:S::TW:abcde::fh:i::l:mn::o:rs::tvw:", {
            "pages": "pages:", "columns": "columns:", "across": "a", "show-control-chars": "c",
            "double-space": "d", "date-format": "D", "expand-tabs": "e", "form-feed": "F",
            "header": "h", "output-tabs": "i", "join-lines": "J", "length": "l", "merge": "m",
            "number-lines": "n", "first-line-number": "N", "indent": "o", "no-file-warnings": "r",
            "separator": "s", "sep-string": "S", "omit-header": "t", "omit-pagination": "T",
            "show-nonprinting": "v", "width": "w", "page-width": "W"}, status=1)
    except OptError as e:
        return e.status
    across = double = formfeed = join = merge = omit = omit_pag = quiet = False
    header: str | None = None
    date_fmt = "%Y-%m-%d %H:%M"
    length, width, margin = 66, 72, 0
    number: tuple[str, int] | None = None
    first_line = 1
    sep_char: str | None = None   # -s
    sep_string: str | None = None  # -S
    width_set = page_width_set = False
    for k, v in opts:
        if k == "a":
            across = True
        elif k == "d":
            double = True
        elif k == "D":
            date_fmt = v or ""
        elif k in ("F", "f"):
            formfeed = True
        elif k == "h":
            header = v or ""
        elif k == "J":
            join = True
        elif k in ("l", "w", "W", "o", "N", "columns"):
            try:
                val = int(v or "")
                if val < (0 if k in ("o", "N") else 1):
                    raise ValueError
            except ValueError:
                what = {"l": "page length", "w": "line width", "W": "line width", "o": "left margin",
                        "N": "starting line number", "columns": "number of columns"}[k]
                ctx.error(f"{'invalid' if k != 'N' else 'invalid'} {what} argument: {quote(ctx, v or '')}"
                          if k != "columns" else f"invalid number of columns: {quote(ctx, v or '')}")
                return 1
            if k == "l":
                length = val
            elif k in ("w", "W"):
                width = val
                width_set = width_set or k == "w"
                page_width_set = page_width_set or k == "W"
            elif k == "o":
                margin = val
            elif k == "N":
                first_line = val
            else:
                columns = val
        elif k == "m":
            merge = True
        elif k == "n":
            nsep, digits = "\t", 5
            if v:
                if not v[0].isdigit():
                    nsep, v = v[0], v[1:]
                if v:
                    digits = int(v) if v.isdigit() else 5
            number = (nsep, digits)
        elif k == "pages":
            m = re.fullmatch(r"(\d+)(?::(\d+))?", v or "")
            if not m:
                ctx.error(f"invalid page range {quote(ctx, v or '')}")
                return 1
            first_page, last_page = int(m.group(1)), int(m.group(2)) if m.group(2) else None
        elif k == "r":
            quiet = True
        elif k == "s":
            sep_char = v[0] if v else "\t"
        elif k == "S":
            sep_string = v if v is not None else ""
        elif k == "t":
            omit = True
        elif k == "T":
            omit = omit_pag = True
    if merge and columns > 1:
        ctx.error("cannot specify number of columns when printing in parallel")
        return 1
    if merge and across:
        ctx.error("cannot specify both printing across and printing in parallel")
        return 1
    names = files or ["-"]
    if merge and len(names) > 1:
        columns = len(names)
    multi = columns > 1
    # the column separator and whether columns are padded to their width
    pad = True
    if sep_string is not None:
        sep = sep_string
    elif sep_char is not None:
        sep, pad = sep_char, False
    elif join:
        sep, pad = "\t", False
    else:
        sep = " "
    if join:
        pad = False
    extremities = not omit
    body = length - 10 if extremities else length
    if body <= 0:
        extremities, body = False, length
    if double:
        body = max(1, body // 2)
    num_width = (number[1] + (8 - number[1] % 8 if number[0] == "\t" else 1)) if number else 0
    used_by_number = num_width if (number and merge) else 0
    col_width = (width - used_by_number - (columns - 1) * len(sep)) // columns if multi else width
    if col_width < 1:
        ctx.error("page width too narrow")
        return 1
    status = 0
    out: list[str] = []
    line_no = first_line

    def fmt_num() -> str:
        nonlocal line_no
        s = str(line_no)[-number[1]:].rjust(number[1]) + number[0]  # type: ignore[index]
        line_no += 1
        return s

    def cell(text: str) -> str:
        if multi:
            text = text.expandtabs(8) if sep != "\t" or pad else text
            if number:
                text = fmt_num().expandtabs(8) + text
            if not join:
                text = text[:col_width]
        elif number:
            text = fmt_num() + text
        return text

    def render_row(cells: list[str | None]) -> str:
        if not multi:
            return " " * margin + (cells[0] or "")
        last = len(cells) - 1 if merge else max((i for i, c in enumerate(cells) if c is not None), default=-1)
        if last < 0:
            return " " * margin
        parts = []
        for i in range(last + 1):
            c = cells[i] or ""
            if i < last:
                parts.append(c.ljust(col_width) + sep if pad else c + sep)
            else:
                parts.append(c)
        line = " " * margin + "".join(parts)
        return _pr_tabify(line, merge) if (pad or " " in sep) and not join else line

    def date_text(name: str) -> str:
        import datetime as _dtm

        from .sysutils import _zone, format_date
        tz = _zone(ctx, False)
        ts = None
        if name != "-" and not merge:
            try:
                ts = ctx.fs.stat(ctx.path(name)).st_mtime
            except OSError:
                ts = None
        if ts is None:
            import time as _time
            ts = _time.time()
        return format_date(date_fmt, _dtm.datetime.fromtimestamp(ts, tz))

    ff_ends: set[int] = set()  # pages (by index) that a form feed in the input ended

    def emit_pages(rows_by_page: list[list[str]], title: str, dtext: str) -> None:
        for pno, rows in enumerate(rows_by_page, 1):
            if pno < first_page or (last_page is not None and pno > last_page):
                continue
            if extremities:
                page_text = f"Page {pno}"
                avail = max(0, width - len(dtext) - len(title) - len(page_text))
                lhs = avail >> 1
                out.append("\n\n" + " " * margin + dtext + " " * max(1, lhs) + title
                           + " " * max(1, avail - lhs) + page_text + "\n\n\n")
            for r in rows:
                out.append(r + "\n")
                if double:
                    out.append("\n")
            if extremities:
                if formfeed:
                    out.append("\f")
                else:
                    used = len(rows) * (2 if double else 1)
                    out.append("\n" * (body * (2 if double else 1) - used + 5))
            elif pno - 1 in ff_ends or (formfeed and pno < len(rows_by_page)):
                out.append("\f")

    def paginate(lines: list[str]) -> list[list[str]]:
        """Rows of each page from the input lines (a form feed starts a new page)."""
        pages: list[list[str]] = []
        groups: list[list[str]] = [[]]
        for ln in lines:
            if "\f" in ln and not omit_pag:
                segs = ln.split("\f")
                if segs[0]:
                    groups[-1].append(segs[0])
                for sg in segs[1:]:
                    groups.append([])
                    if sg:
                        groups[-1].append(sg)
            else:
                groups[-1].append(ln.replace("\f", ""))
        if len(groups) > 1 and not groups[-1]:
            groups.pop()
            trailing_ff = True
        else:
            trailing_ff = False
        per_page = body * columns
        ff_ends.clear()
        for gi, g in enumerate(groups):
            if gi:
                ff_ends.add(len(pages) - 1)
            chunks = [g[i:i + per_page] for i in range(0, len(g), per_page)] or [[]]
            for ch in chunks:
                rows: list[str] = []
                if not multi:
                    rows = [render_row([cell(x)]) for x in ch]
                elif across:
                    for i in range(0, len(ch), columns):
                        rows.append(render_row([cell(x) for x in ch[i:i + columns]]))
                else:
                    if len(ch) == per_page:
                        sizes = [body] * columns
                    else:  # balance the last page: the first columns take the remainder
                        q, r = divmod(len(ch), columns)
                        sizes = [q + (1 if i < r else 0) for i in range(columns)]
                    cols, pos = [], 0
                    for sz in sizes:
                        cols.append([cell(x) for x in ch[pos:pos + sz]])
                        pos += sz
                    nrows = max(sizes) if sizes else 0
                    for i in range(nrows):
                        rows.append(render_row([c[i] if i < len(c) else None for c in cols]))
                pages.append(rows)
        if trailing_ff and pages:
            ff_ends.add(len(pages) - 1)
        return pages

    def read_lines(name: str) -> list[str] | None:
        # (pages, rows and the output copy what it holds about three times: a 130 MB line
        # grew the process by 372 MiB; half of what a command may hold is its cap)
        data = _read(ctx, name, cap=held_cap(ctx) // 2)
        if data is None:
            return None
        text = data.decode("utf-8", "surrogateescape")
        del data
        lines = text.split("\n")
        del text
        if lines and lines[-1] == "":
            lines.pop()
        return lines

    if merge:
        contents = []
        dashes = [i for i, nm in enumerate(names) if nm == "-"]
        shared: list[str] | None = None
        for idx, name in enumerate(names):
            if name == "-" and len(dashes) > 1:
                # several "-" operands take turns reading lines from the one standard input
                if shared is None:
                    shared = read_lines("-") or []
                ls_ = shared[dashes.index(idx)::len(dashes)]
            else:
                ls_ = read_lines(name)
            if ls_ is None:
                status = 1
                continue
            contents.append(ls_)
        columns = len(contents) or 1
        multi = columns > 1
        nrows = max((len(c) for c in contents), default=0)
        rows_all = []
        for i in range(nrows):
            cells = [cell(c[i]) if i < len(c) else "" for c in contents]
            rows_all.append(render_row(cells))
        # (empty input makes no page at all, as in GNU pr)
        pages = [rows_all[i:i + body] for i in range(0, len(rows_all), body)]
        emit_pages(pages, header if header is not None else "", date_text("-"))
    else:
        for name in names:
            ls_ = read_lines(name)
            if ls_ is None:
                status = 1
                continue
            line_no = first_line
            title = header if header is not None else ("" if name == "-" else name)
            if ls_:  # (an empty file makes no page at all, as in GNU pr)
                emit_pages(paginate(ls_), title, date_text(name) if extremities else "")
            ctx.stdout.write("".join(out).encode("utf-8", "surrogateescape"))  # before any error
            out.clear()
    ctx.stdout.write("".join(out).encode("utf-8", "surrogateescape"))
    _ = (quiet, page_width_set, width_set)
    return status
