"""Byte dumpers: GNU od, xxd (vim), hexdump (util-linux) and strings (binutils)."""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from typing import Any, Iterator

from ._args import obsolete_num_option, read_bounded, stdio, OptError, file_error, iter_chunks, open_input, parse_opts, quote, try_help
from .base import CommandContext, command, ctx_with
from ..limits import charge_read

_WIDTH = {  # (kind, size) -> field width
    ("o", 1): 3, ("o", 2): 6, ("o", 4): 11, ("o", 8): 22,
    ("x", 1): 2, ("x", 2): 4, ("x", 4): 8, ("x", 8): 16,
    ("u", 1): 3, ("u", 2): 5, ("u", 4): 10, ("u", 8): 20,
    ("d", 1): 4, ("d", 2): 6, ("d", 4): 11, ("d", 8): 20,
    ("f", 4): 15, ("f", 8): 24, ("f", 16): 24,
    ("c", 1): 3, ("a", 1): 3,
}
_NAMES = ["nul", "soh", "stx", "etx", "eot", "enq", "ack", "bel", "bs", "ht", "nl", "vt", "ff",
          "cr", "so", "si", "dle", "dc1", "dc2", "dc3", "dc4", "nak", "syn", "etb", "can", "em",
          "sub", "esc", "fs", "gs", "rs", "us", "sp"]
_C_ESC = {0: "\\0", 7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r"}


@dataclass
class _Spec:
    kind: str
    size: int
    z: bool = False
    width: int = 0
    pad: int = 0


class _OdError(Exception):
    pass


def _parse_type(ctx: CommandContext, s: str) -> list[_Spec]:
    out: list[_Spec] = []
    i = 0
    while i < len(s):
        c = s[i]
        i += 1
        if c in "ac":
            size = 1
        elif c in "doux":
            size = 4
            m = re.match(r"\d+|[CSIL]", s[i:])
            if m:
                t = m.group(0)
                i += len(t)
                size = {"C": 1, "S": 2, "I": 4, "L": 8}.get(t) or int(t)
                if size not in (1, 2, 4, 8):
                    raise _OdError(f"invalid type string {quote(ctx, s)};\nthis system doesn't provide a {size}-byte integral type")
        elif c == "f":
            size = 8
            m = re.match(r"\d+|[FDL]", s[i:])
            if m:
                t = m.group(0)
                i += len(t)
                size = {"F": 4, "D": 8, "L": 16}.get(t) or int(t)
                if size not in (4, 8, 16):
                    raise _OdError(f"invalid type string {quote(ctx, s)};\nthis system doesn't provide a {size}-byte floating point type")
        else:
            raise _OdError(f"invalid character '{c}' in type string {quote(ctx, s)}")
        sp = _Spec(c, size)
        if i < len(s) and s[i] == "z":
            sp.z = True
            i += 1
        sp.width = _WIDTH[(c, size if c != "f" or size != 16 else 16)]
        out.append(sp)
    return out


def _shortest_float(v: float, single: bool) -> str:
    if v != v:
        return "nan" if not str(v).startswith("-") else "-nan"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    for p in range(1, 18):
        s = "%.*g" % (p, v)
        if single:
            if struct.unpack("<f", struct.pack("<f", float(s)))[0] == v:
                return s
        elif float(s) == v:
            return s
    return "%.17g" % v


def _fmt_field(sp: _Spec, chunk: bytes) -> str:
    k, n = sp.kind, sp.size
    if k == "c":
        b = chunk[0]
        if b in _C_ESC:
            return _C_ESC[b]
        if 32 <= b < 127:
            return chr(b)
        return "%03o" % b
    if k == "a":
        b = chunk[0] & 0x7F
        if b <= 32:
            return _NAMES[b]
        if b == 127:
            return "del"
        return chr(b)
    if k == "f":
        if n == 4:
            return _shortest_float(struct.unpack("<f", chunk)[0], True)
        if n == 8:
            return _shortest_float(struct.unpack("<d", chunk)[0], False)
        return _shortest_float(struct.unpack("<d", chunk[:8])[0], False)
    v = int.from_bytes(chunk, "little", signed=(k == "d"))
    if k == "o":
        return "%0*o" % (sp.width, v)
    if k == "x":
        return "%0*x" % (n * 2, v)
    return str(v)


def _addr(radix: str, n: int) -> str:
    if radix == "o":
        return "%07o" % n
    if radix == "d":
        return "%07d" % n
    if radix == "x":
        return "%06x" % n
    return ""


@command("od", usage="od [OPTION]... [FILE]...\n  or:  od [-abcdfilosx]... [FILE] [[+]OFFSET[.][b]]\n  or:  od --traditional [OPTION]... [FILE] [[+]OFFSET[.][b] [+][LABEL][.][b]]",
         help="Write an unambiguous representation, octal bytes by default,\nof FILE to standard output.")
@stdio
def od(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, files = parse_opts(ctx, argv, "A:j:N:S:t:vw::abcdfhilosxDeFHLOX", {
            "address-radix": "A", "skip-bytes": "j", "read-bytes": "N", "strings": "strings::",
            "format": "t", "output-duplicates": "v", "width": "w", "endian": "endian:",
            "traditional": None}, status=1)
    except OptError as e:
        return e.status
    from .textutils import parse_size
    radix = "o"
    skip = 0
    limit: int | None = None
    specs: list[_Spec] = []
    dup = False
    width = 16
    asked_width = False
    big = False
    strings_min: int | None = None
    try:
        for k, v in opts:
            if k == "endian":
                m = [e for e in ("little", "big") if e.startswith(v or "\0")]
                if len(m) != 1:
                    ctx.error(f"invalid argument {quote(ctx, v or '')} for {quote(ctx, '--endian')}")
                    ctx.stderr.write("Valid arguments are:\n  - ‘little’\n  - ‘big’\n".encode())
                    try_help(ctx)
                    return 1
                big = m[0] == "big"
                continue
            if k in ("S", "strings"):
                r = parse_size(v or "3", clamp=False)
                if r is None:
                    ctx.error(f"invalid -S argument '{v or ''}'")
                    return 1
                strings_min = r[1]
                continue
            if k == "A":
                if v not in ("o", "d", "x", "n"):
                    ctx.error(f"invalid output address radix '{v}'; it must be one character from [doxn]")
                    return 1
                radix = v
            elif k in "jN":
                r = parse_size(v or "", clamp=False) if not (v or "").lower().startswith("0x") \
                    else ("", int(v or "0", 16))
                if r is not None and r[1] >= 1 << 64:
                    ctx.error(f"{'-j' if k == 'j' else '-N'} argument '{v}' too large")
                    return 1
                if r is None:
                    # xstrtoumax: a number with a bad suffix is told apart from no number
                    bad_suffix = re.match(r"\s*\+?\d", v or "") is not None
                    ctx.error(f"invalid {'suffix in ' if bad_suffix else ''}{'-j' if k == 'j' else '-N'} "
                              f"argument '{v}'")
                    return 1
                if k == "j":
                    skip = r[1]
                else:
                    limit = r[1]
            elif k == "t":
                specs.extend(_parse_type(ctx, v or ""))
            elif k == "v":
                dup = True
            elif k == "w":
                if v and not v.isdigit():
                    raise _OdError(f"invalid -w argument '{v}'")
                width = int(v) if v else 32
                asked_width = True
            elif k in "abcdfilosxDeFHLOX" and len(k) == 1:
                t = {"a": "a", "b": "o1", "c": "c", "d": "u2", "f": "fF", "i": "dI", "l": "dL",
                     "o": "o2", "s": "d2", "x": "x2", "h": "x2", "D": "u4", "e": "fD", "F": "fD",
                     "H": "x4", "L": "dL", "O": "o4", "X": "x4"}[k]
                specs.extend(_parse_type(ctx, t))
    except _OdError as e:
        ctx.error(str(e))
        return 1
    if strings_min is not None:
        if specs:
            ctx.error("no type may be specified when dumping strings")
            return 1
        return _od_strings(ctx, files, radix, skip, limit, strings_min)
    if not specs:
        specs = _parse_type(ctx, "o2")
    if asked_width:
        # GNU: a width that is not a multiple of every type's size becomes their lcm
        import math
        lcm = 1
        for sp in specs:
            lcm = lcm * sp.size // math.gcd(lcm, sp.size)
        if width == 0 or width % lcm:
            ctx.error(f"warning: invalid width {width}; using {lcm} instead")
            width = lcm
    # column layout like GNU: every spec's block gets the widest block's width
    wpb = 0
    for sp in specs:
        fields = width // sp.size
        wpb = max(wpb, (sp.width + 1) * fields)
    for sp in specs:
        sp.pad = wpb - (sp.width + 1) * (width // sp.size)
    status = 0
    opened = 0
    left_skip = skip

    def stream():  # noqa: ANN202 - bytes after -j/-N, across all inputs, as they arrive
        nonlocal status, opened, left_skip
        remaining = limit
        for name in files or ["-"]:
            try:
                f = open_input(ctx, name)
            except OSError as e:
                file_error(ctx, e, name)
                status = 1
                if isinstance(e, IsADirectoryError):
                    # GNU opens a directory and fails reading it: it still counts as input
                    # (the final offset is printed) and a pending -j skip is not reported
                    opened += 1
                    left_skip = 0
                continue
            opened += 1
            try:
                for chunk in iter_chunks(f, 1 << 16):
                    if left_skip:
                        if len(chunk) <= left_skip:
                            left_skip -= len(chunk)
                            continue
                        chunk = chunk[left_skip:]
                        left_skip = 0
                    if remaining is not None:
                        chunk = chunk[:remaining]
                        remaining -= len(chunk)
                    if chunk:
                        yield chunk
                    if remaining == 0:
                        return
            except IsADirectoryError as e:
                file_error(ctx, e, "standard input" if name == "-" else name)
                status = 1
            finally:
                f.close()

    out: list[str] = []
    prev = None
    starred = False
    lead = " " * len(_addr(radix, 0))
    # per spec: the field widths (pad spread like GNU) and, for 1-byte types, a table
    layouts = []
    for sp in specs:
        nf = width // sp.size
        ws = []
        pad_rem = sp.pad
        for i in range(nf, 0, -1):
            nxt = sp.pad * (i - 1) // nf
            ws.append(pad_rem - nxt + sp.width)
            pad_rem = nxt
        # GNU formats each value at its natural width, then right-aligns it in the field's
        # (possibly wider) share of the line: the extra spaces per field are constant
        fast = None
        table = None
        if sp.kind in "doux" and width % sp.size == 0:
            conv = {"o": f"%0{sp.width}o", "x": f"%0{sp.width}x", "u": f"%{sp.width}d",
                    "d": f"%{sp.width}d"}[sp.kind]
            code = {1: "B", 2: "H", 4: "I", 8: "Q"}[sp.size]
            if sp.kind == "d":
                code = code.lower()
            fast = (struct.Struct(f"{'>' if big else '<'}{nf}{code}"),
                    "".join(" " + " " * (w - sp.width) + conv for w in ws))
        if sp.size == 1:
            table = [_fmt_field(sp, bytes([b])).rjust(sp.width) for b in range(256)]
            if len(set(ws)) == 1:
                pre = " " + " " * (ws[0] - sp.width)
                table = [pre + t for t in table]
                ws = []
        layouts.append((sp, nf, ws, table, fast))
    nlines = 0

    def emit(buf: bytes, base: int) -> None:
        nonlocal prev, starred, nlines, out
        pos = 0
        n = len(buf)
        while pos < n:
            emit_block(buf, pos, base)
            pos += width

    def emit_block(buf: bytes, pos: int, base: int) -> None:
        nonlocal prev, starred, nlines, out
        block = buf[pos:pos + width]
        if not dup and prev is not None and block == prev and len(block) == width:
            if not starred:
                out.append("*\n")
                starred = True
            return
        starred = False
        prev = block
        full = len(block) == width
        for si, (sp, nf, ws, table, fast) in enumerate(layouts):
            head = _addr(radix, skip + base + pos) if si == 0 else lead
            if fast is not None and full:
                body = fast[1] % fast[0].unpack_from(buf, pos)
            elif table is not None and not ws:
                body = "".join(map(table.__getitem__, block))
            elif table is not None:
                body = "".join([" " + " " * (ws[i] - sp.width) + table[b] for i, b in enumerate(block)])
            else:
                present = -(-len(block) // sp.size)
                padded = block + bytes(present * sp.size - len(block))
                if big and sp.size > 1:
                    padded = b"".join(padded[i:i + sp.size][::-1] for i in range(0, len(padded), sp.size))
                body = "".join([" " + _fmt_field(sp, padded[i * sp.size:(i + 1) * sp.size]).rjust(ws[i])
                                for i in range(present)])
            line = head + body
            if sp.z:
                blank = (width - len(block)) // sp.size
                line += " " * (blank * (sp.width + 1)) + "  >" + "".join(
                    chr(b) if 32 <= b < 127 else "." for b in block) + "<"
            out.append(line + "\n")
        nlines += 1
        if nlines & 4095 == 0:
            ctx.stdout.write("".join(out).encode("utf-8", "surrogateescape"))
            out = []
            ctx.budget.check()

    pending = b""
    done = 0
    for chunk in stream():
        pending += chunk
        k = len(pending) // width * width
        if k:
            emit(pending[:k], done)
            done += k
            pending = pending[k:]
        ctx.budget.check()
    if not opened:
        return status
    if left_skip:
        ctx.error("cannot skip past end of combined input")
        return 1
    if pending:
        emit(pending, done)
    n = done + len(pending)
    if radix != "n":
        out.append(_addr(radix, skip + n) + "\n")
    ctx.stdout.write("".join(out).encode("utf-8", "surrogateescape"))
    return status


def _od_strings(ctx: CommandContext, files: list[str], radix: str, skip: int, limit: int | None,
                minlen: int) -> int:
    """od -S N: NUL-terminated runs of at least N printable ASCII bytes, at their offsets."""
    status = 0
    chunks = []
    for name in files or ["-"]:
        try:
            with open_input(ctx, name) as f:
                chunks.append(read_bounded(ctx, f, None))
        except OSError as e:
            file_error(ctx, e, name)
            status = 1
    data = b"".join(chunks)
    if skip > len(data):
        ctx.error("cannot skip past end of combined input")
        return 1
    end = len(data) if limit is None else min(len(data), skip + limit)
    out = []
    for m in re.finditer(rb"[\x20-\x7e]*\x00", data[:end]):
        body = m.group()[:-1]
        if len(body) >= minlen and m.start() >= skip:
            out.append(_addr(radix, m.start()) + (" " if radix != "n" else "") + body.decode("ascii") + "\n")
        elif len(body) >= minlen and m.end() - 1 - skip >= minlen:
            out.append(_addr(radix, skip) + (" " if radix != "n" else "") + body[skip - m.start():].decode("ascii") + "\n")
    ctx.stdout.write("".join(out).encode())
    return status


# -- xxd ------------------------------------------------------------------------------------

_XXD_USAGE = b'Usage:\n       xxd [options] [infile [outfile]]\n    or\n       xxd -r [-s [-]offset] [-c cols] [-ps] [infile [outfile]]\nOptions:\n    -a          toggle autoskip: A single \'*\' replaces nul-lines. Default off.\n    -b          binary digit dump (incompatible with -ps,-i,-r). Default hex.\n    -C          capitalize variable names in C include file style (-i).\n    -c cols     format <cols> octets per line. Default 16 (-i: 12, -ps: 30).\n    -E          show characters in EBCDIC. Default ASCII.\n    -e          little-endian dump (incompatible with -ps,-i,-r).\n    -g bytes    number of octets per group in normal output. Default 2 (-e: 4).\n    -h          print this summary.\n    -i          output in C include file style.\n    -l len      stop after <len> octets.\n    -n name     set the variable name used in C include output (-i).\n    -o off      add <off> to the displayed file position.\n    -ps         output in postscript plain hexdump style.\n    -r          reverse operation: convert (or patch) hexdump into binary.\n    -r -s off   revert with <off> added to file positions found in hexdump.\n    -d          show offset in decimal instead of hex.\n    -s [+][-]seek  start at <seek> bytes abs. (or +: rel.) infile offset.\n    -u          use upper case hex letters.\n    -v          show version: "xxd 2022-01-14 by Juergen Weigert et al.".\n'


@command("xxd", usage="xxd [options] [infile [outfile]]", help="make a hexdump or do the reverse.")
@stdio
def xxd(ctx: CommandContext, argv: list[str]) -> int:
    # xxd takes single-dash long-ish options (-cols, -len); normalise the common ones
    alias = {"-ps": "-p", "-postscript": "-p", "-plain": "-p", "-revert": "-r", "-cols": "-c",
             "-len": "-l", "-seek": "-s", "-groupsize": "-g", "-include": "-i", "-bits": "-b",
             "-upper": "-u", "-u": "-u", "-version": "-v", "--version": "-v"}
    args = [argv[0]] + [alias.get(a, a) for a in argv[1:]]
    import io
    try:
        # xxd answers any bad option (and -h) with its usage text on stderr
        opts, ops = parse_opts(ctx_with(ctx, stderr=io.BytesIO()), args, "bc:eg:hil:o:prs:uvEC", {},
                               status=1)
    except OptError:
        ctx.stderr.write(_XXD_USAGE)
        return 1
    if len(ops) > 2 or any(k == "h" for k, _ in opts):
        ctx.stderr.write(_XXD_USAGE)
        return 1
    plain = rev = inc = upper = bits = little = False
    cols = None
    group = None
    length = None
    seek = 0
    for k, v in opts:
        if k == "p":
            plain = True
        elif k == "r":
            rev = True
        elif k == "i":
            inc = True
        elif k == "u":
            upper = True
        elif k == "b":
            bits = True
        elif k == "e":
            little = True
        elif k == "c":
            cols = int(v or "0", 0)
        elif k == "g":
            group = int(v or "0", 0)
        elif k == "l":
            length = int(v or "0", 0)
        elif k == "s":
            vv = (v or "0").lstrip("+")
            seek = int(vv, 0) if vv else 0
        elif k == "v":
            ctx.stderr.write(b"xxd 2022-01-14 by Juergen Weigert et al.\n")  # (on stderr, as xxd)
            return 0
    inp = ops[0] if ops else "-"
    try:
        f = open_input(ctx, inp)
    except IsADirectoryError:
        ctx.error("Is a directory")  # xxd names no file here
        return 2
    except OSError as e:
        ctx.error(f"{inp}: {e.strerror or 'No such file or directory'}")
        return 2
    try:
        data = read_bounded(ctx, f, None)
    except IsADirectoryError:
        ctx.error("Is a directory" if inp == "-" else f"{inp}: Is a directory")
        return 2
    finally:
        f.close()
    out = ctx.stdout
    if len(ops) > 1:
        out = ctx.fs.open(ctx.path(ops[1]), "wb")
    try:
        if rev:
            if plain:
                hexs = re.sub(rb"[^0-9a-fA-F]", b"", data)
                if len(hexs) % 2:
                    hexs = hexs[:-1]
                out.write(bytes.fromhex(hexs.decode()))
            else:
                res = bytearray()
                for line in data.split(b"\n"):
                    m = re.match(rb"^\s*([0-9a-fA-F]+):?\s*((?:[0-9a-fA-F]{2}\s?)+)", line)
                    if not m:
                        continue
                    off = int(m.group(1), 16)
                    hx = re.sub(rb"\s", b"", m.group(2).split(b"  ")[0])
                    chunk = bytes.fromhex(hx[: len(hx) // 2 * 2].decode())
                    if len(res) < off:
                        res += bytes(off - len(res))
                    res[off:off + len(chunk)] = chunk
                out.write(bytes(res))
            return 0
        if seek < 0:
            seek = max(len(data) + seek, 0)
        buf = data[seek:]
        if length is not None:
            buf = buf[:length]
        hx = (lambda b: b.hex().upper()) if upper else (lambda b: b.hex())
        # (-p and -i write 64 KiB of input at a time: the whole dump built as one list of
        # lines, or of one string per byte, took gigabytes for 120 MB)
        if plain:
            c = cols or 30
            step = max(c, (1 << 16) // c * c)
            for k in range(0, len(buf), step):
                piece = buf[k:k + step]
                out.write("".join(hx(piece[i:i + c]) + "\n" for i in range(0, len(piece), c)).encode())
                ctx.budget.check()
            return 0
        if inc:
            name = re.sub(r"[^0-9A-Za-z]", "_", inp) if inp != "-" else None
            c = cols or 12
            fmt1 = "0X%02X" if upper else "0x%02x"
            if name:
                if name[0].isdigit():
                    name = "__" + name
                out.write(f"unsigned char {name}[] = {{\n".encode())
            step = max(c, (1 << 16) // c * c)
            for k in range(0, len(buf), step):
                piece = buf[k:k + step]
                body = ",\n".join("  " + ", ".join(fmt1 % b for b in piece[i:i + c]) for i in range(0, len(piece), c))
                out.write(((",\n" if k else "") + body).encode())
                ctx.budget.check()
            if name:
                out.write(f"{chr(10) if buf else ''}}};\nunsigned int {name}_len = {len(buf)};\n".encode())
            elif buf:
                out.write(b"\n")
            return 0
        c = cols or (6 if bits else 16)
        g = group if group is not None else (1 if bits else (4 if little else 2))
        res_lines = []
        per_hex = 8 if bits else 2
        full_width = None
        for i in range(0, len(buf), c):
            chunk = buf[i:i + c]
            groups = []
            for j in range(0, len(chunk), g or c):
                gb = chunk[j:j + (g or c)]
                if bits:
                    groups.append("".join(format(b, "08b") for b in gb))
                elif little:
                    groups.append(hx(gb[::-1]))
                else:
                    groups.append(hx(gb))
            hexpart = " ".join(groups)
            if full_width is None:
                ng = -(-c // (g or c))
                full_width = c * per_hex + ng - 1
            asc = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
            res_lines.append(f"{seek + i:08x}: {hexpart.ljust(full_width)}  {asc}\n")
            if len(res_lines) > 4096:
                out.write("".join(res_lines).encode())
                res_lines = []
                ctx.budget.check()
        out.write("".join(res_lines).encode())
        return 0
    finally:
        if out is not ctx.stdout:
            out.close()


# -- hexdump --------------------------------------------------------------------------------

@command("hexdump", "hd", usage="hexdump [options] <file>...", help="Display file contents in hexadecimal, decimal, octal, or ascii.")
@stdio
def hexdump(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, ops = parse_opts(ctx, argv, "bcCdn:os:vxe:f:L::", {
            "one-byte-octal": "b", "one-byte-char": "c", "canonical": "C",
            "two-bytes-decimal": "d", "length": "n", "two-bytes-octal": "o", "skip": "s",
            "no-squeezing": "v", "two-bytes-hex": "x", "format": "e", "format-file": "f",
            "color": "L"}, status=1)
    except OptError as e:
        return e.status
    # each format a line per block, in the order named (hd: the canonical one first)
    modes: list[str] = ["C"] if argv[0] == "hd" else []
    length = None
    skip = 0
    dup = False
    for k, v in opts:
        if k in "bcdoxC":
            modes.append(k)
        elif k == "n":
            length = int(v or "0", 0)
        elif k == "s":
            skip = int(v or "0", 0)
        elif k == "v":
            dup = True
    if not modes:
        modes.append("")
    data = bytearray()
    status = 0
    for name in ops or ["-"]:
        try:
            f = open_input(ctx, name)
        except OSError as e:
            ctx.stderr.write(f"hexdump: {name}: {e.strerror or 'No such file or directory'}\n".encode())
            status = 1
            continue
        try:
            if skip and name == "-" and not ops and _is_pipe(ctx.stdin):
                # util-linux seeks past the skipped bytes of its input: not on a pipe
                ctx.stderr.write(b"hexdump: stdin: Illegal seek\n")
                return 1
            data += read_bounded(ctx, f, None)
        except IsADirectoryError:
            ctx.stderr.write(f"hexdump: {name}: Is a directory\n".encode())
            status = 1
        finally:
            f.close()
    if status and not data:
        ctx.stderr.write(b"hexdump: all input file arguments failed\n")
        return 1
    # (a view, no copies of the input; the lines go out 4096 at a time, with the deadline
    # checked: 120 MB of input became one list of every line, 268 MiB and growing)
    skipped = min(skip, len(data))
    buf = memoryview(data)[skip:]
    if length is not None:
        buf = buf[:length]
    out: list[str] = []
    prev = None
    starred = False
    n = len(buf)
    for pos in range(0, n, 16):
        if len(out) >= 4096:
            ctx.stdout.write("".join(out).encode())
            out.clear()
            ctx.budget.check()
        block = bytes(buf[pos:pos + 16])
        if not dup and prev is not None and block == prev and len(block) == 16:
            if not starred:
                out.append("*\n")
                starred = True
            continue
        starred = False
        prev = block
        off = skip + pos
        for mode in modes:
            out.append(_hexdump_line(mode, off, block))
    if n or skip:
        out.append((f"{skipped + n:08x}" if modes[-1] == "C" else f"{skipped + n:07x}") + "\n")
    ctx.stdout.write("".join(out).encode())
    return status


def _is_pipe(stream: Any) -> bool:
    try:
        return not stream.seekable()
    except (OSError, ValueError, AttributeError):
        return False


def _hexdump_line(mode: str, off: int, block: bytes) -> str:
    """One line of hexdump's ``mode`` (an option letter; "" the default) for a block."""
    if mode == "C":
        hx = " ".join("%02x" % b for b in block[:8])
        if len(block) > 8:
            hx += "  " + " ".join("%02x" % b for b in block[8:])
        asc = "".join(chr(b) if 32 <= b < 127 else "." for b in block)
        return f"{off:08x}  {hx.ljust(49)} |{asc}|\n"
    if mode == "c":
        cells = []
        for b in block:
            s = _C_ESC.get(b) or (chr(b) if 32 <= b < 127 else "%03o" % b)
            cells.append(s.rjust(4))
        return f"{off:07x}" + "".join(cells).ljust(64) + "\n"
    if mode == "b":
        return f"{off:07x}" + "".join(" %03o" % b for b in block).ljust(64) + "\n"
    padded = block + (b"\0" if len(block) % 2 else b"")
    words = [int.from_bytes(padded[i:i + 2], "little") for i in range(0, len(padded), 2)]
    if mode == "d":
        return f"{off:07x}" + "".join("   %05d" % w for w in words).ljust(64) + "\n"
    if mode == "o":
        return f"{off:07x}" + "".join("  %06o" % w for w in words).ljust(64) + "\n"
    if mode == "x":
        return f"{off:07x}" + "".join("    %04x" % w for w in words).ljust(64) + "\n"
    return f"{off:07x}" + "".join(" %04x" % w for w in words).ljust(40) + "\n"


# -- strings --------------------------------------------------------------------------------

_NOT_PRINTABLE = re.compile(rb"[^\x20-\x7e\t]")
_SCAN_CHUNK = 1 << 20


def _scan(pat: re.Pattern[bytes], data: bytes) -> Iterator[re.Match[bytes]]:
    """``pat.finditer(data)`` a MiB at a time, each piece ending at a byte no string may hold
    (so no match spans two), the deadline checked between pieces: one finditer over 100 MB
    of zeros was a single C call that held the GIL for seconds (issue 20: 4.7-9.7 s past a
    2 s deadline)."""
    n = len(data)
    pos = 0
    while pos < n:
        end = pos + _SCAN_CHUNK
        if end >= n:
            end = n
        else:
            cut = _NOT_PRINTABLE.search(data, end)
            end = n if cut is None else cut.start()
        yield from pat.finditer(data, pos, end)
        charge_read(end - pos)
        pos = end

@command("strings", usage="strings [option(s)] [file(s)]", help="Display printable strings in [file(s)] (stdin by default)")
@stdio
def strings(ctx: CommandContext, argv: list[str]) -> int:
    args = obsolete_num_option(argv, "n")
    try:
        opts, ops = parse_opts(ctx, args, "adfn:t:owe:s:", {
            "all": "a", "data": "d", "print-file-name": "f", "bytes": "n", "radix": "t",
            "encoding": "e", "output-separator": "s"}, status=1)
    except OptError as e:
        return e.status
    minlen = 4
    radix = None
    show_name = False
    osep = b"\n"
    for k, v in opts:
        if k == "n":
            try:
                minlen = int(v or "")
                if minlen < 1:
                    raise ValueError
            except ValueError:
                ctx.stderr.write(f"strings: invalid minimum string length {v}\n".encode())
                return 1
            # binutils keeps the length in an int: 2**32 is 0 there (an error naming 0);
            # a larger one than any input can hold just finds nothing
            n32 = minlen & 0xFFFFFFFF
            if n32 >= 1 << 31:
                n32 -= 1 << 32
            if n32 < 1:
                ctx.stderr.write(f"strings: invalid minimum string length {n32}\n".encode())
                return 1
            minlen = min(n32, 1 << 30)
        elif k == "t":
            radix = v
        elif k == "o":
            radix = "o"
        elif k == "f":
            show_name = True
        elif k == "s":
            osep = (v or "").encode()
    pat = re.compile(rb"[\x20-\x7e\t]{%d,}" % minlen)
    status = 0
    for name in ops or ["-"]:
        try:
            f = open_input(ctx, name)
        except IsADirectoryError:
            ctx.stderr.write(f"strings: Warning: '{name}' is a directory\n".encode())
            status = 1
            continue
        except OSError as e:
            ctx.stderr.write(f"strings: '{name}': No such file\n".encode() if e.errno == 2 else
                             f"strings: {name}: {e.strerror}\n".encode())
            status = 1
            continue
        try:
            data = read_bounded(ctx, f, None)
        except IsADirectoryError:
            if name != "-":
                ctx.stderr.write(f"strings: Warning: '{name}' is a directory\n".encode())
                status = 1
            continue  # (a `< dir` stdin reads as empty input)
        finally:
            f.close()
        out = []
        for m in _scan(pat, data):
            pre = b""
            if show_name:
                pre += (name if name != "-" else "{standard input}").encode() + b": "
            if radix:
                fmtc = {"o": "%7o ", "d": "%7d ", "x": "%7x "}.get(radix, "%7d ")
                pre += (fmtc % m.start()).encode()
            out.append(pre + m.group(0) + osep)
            if len(out) >= 4096:
                # (written as found: every match of 120 MB held as an object and joined at
                # the end grew the process past 277 MiB)
                ctx.stdout.write(b"".join(out))
                out.clear()
                ctx.budget.check()
        ctx.stdout.write(b"".join(out))
    return status


_ = try_help
