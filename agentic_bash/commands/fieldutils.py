"""GNU cut, tr, paste, join, comm, nl, fold, expand and unexpand over byte streams."""

from __future__ import annotations

import re
from typing import BinaryIO

from ._args import obsolete_num_option, stdio, OptError, file_error, iter_line_blocks, iter_text_blocks, iter_lines, open_input, parse_opts, quote, quoteaf, quotef, try_help
from .base import CommandContext, command

CHUNK = 1 << 16


def _usage(ctx: CommandContext, msg: str, status: int = 1) -> int:
    ctx.error(msg)
    try_help(ctx)
    return status


def _open(ctx: CommandContext, name: str) -> BinaryIO | None:
    try:
        return open_input(ctx, name)
    except OSError as e:
        file_error(ctx, e, name)
        return None


# -- cut ------------------------------------------------------------------------------------

def _parse_list(spec: str, what: str) -> list[tuple[int, int]] | str:
    """GNU set_fields: '1,3-5,7-' -> sorted merged (lo, hi) 1-based; hi may be huge."""
    INF = 1 << 62
    ranges: list[tuple[int, int]] = []
    for part in re.split(r"[,\s]", spec) if spec else [""]:
        if part == "":
            return f"invalid {'field' if what == 'f' else 'byte/character'} range" if False else "__empty__"
        if part.count("-") > 1 and re.fullmatch(r"[\d-]*", part):
            # GNU set_fields meets a second '-' inside one range
            return "invalid field range" if what == "f" else "invalid byte or character range"
        m = re.fullmatch(r"(\d*)(-?)(\d*)", part)
        if not m or (not m.group(1) and not m.group(3) and m.group(2)):
            if part == "-":
                return "invalid range with no endpoint: -"
            # GNU quotes the list from the offending character on
            bad = part[next((i for i, ch in enumerate(part) if ch not in "0123456789-"), 0):]
            kind = "field value" if what == "f" else "byte/character position"
            return f"invalid {kind} {{q}}" + "\0" + bad
        a, dash, b = m.groups()
        if not dash:
            n = int(a)
            if n == 0:
                return "fields are numbered from 1" if what == "f" else "byte/character positions are numbered from 1"
            ranges.append((n, n))
            continue
        lo = int(a) if a else 1
        hi = int(b) if b else INF
        if a and int(a) == 0:
            return "fields are numbered from 1" if what == "f" else "byte/character positions are numbered from 1"
        if lo > hi:  # (`-0` too: 1-0 is decreasing in coreutils 9.1)
            return "invalid decreasing range"
        ranges.append((lo, hi))
    ranges.sort()
    merged: list[tuple[int, int]] = []
    for lo, hi in ranges:
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return merged


def _complement(r: list[tuple[int, int]]) -> list[tuple[int, int]]:
    INF = 1 << 62
    out = []
    prev = 1
    for lo, hi in r:
        if lo > prev:
            out.append((prev, lo - 1))
        prev = hi + 1
    if prev <= INF:
        out.append((prev, INF))
    return out


@command("cut", usage="cut OPTION... [FILE]...",
         help="Print selected parts of lines from each FILE to standard output.")
@stdio
def cut(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, files = parse_opts(ctx, argv, "b:c:d:f:nsz", {
            "bytes": "b", "characters": "c", "delimiter": "d", "fields": "f",
            "only-delimited": "s", "zero-terminated": "z", "complement": None,
            "output-delimiter": "output-delimiter:"}, status=1)
    except OptError as e:
        return e.status
    mode = None
    spec = ""
    delim: bytes | None = None
    only = complement = False
    out_delim: bytes | None = None
    sep = b"\n"
    for k, v in opts:
        if k in "bcf":
            if mode is not None:
                return _usage(ctx, "only one list may be specified")
            mode, spec = k, v or ""
        elif k == "d":
            d = (v or "").encode("utf-8", "surrogateescape")
            if len(d) > 1:
                return _usage(ctx, "the delimiter must be a single character")
            delim = d or b"\0"
        elif k == "s":
            only = True
        elif k == "z":
            sep = b"\0"
        elif k == "complement":
            complement = True
        elif k == "output-delimiter":
            # GNU: an empty string is a NUL (its length is taken as 1)
            out_delim = (v or "").encode("utf-8", "surrogateescape") or b"\0"
    if mode is None:
        return _usage(ctx, "you must specify a list of bytes, characters, or fields")
    r = _parse_list(spec, mode)
    if isinstance(r, str):
        if r == "__empty__":
            r = "fields are numbered from 1" if mode == "f" else "byte/character positions are numbered from 1"
            if spec == "":
                r = "fields are numbered from 1" if mode == "f" else "byte/character positions are numbered from 1"
        if "\0" in r:
            msg, bad = r.split("\0")
            r = msg.replace("{q}", quote(ctx, bad))
        return _usage(ctx, r)
    if mode != "f" and delim is not None:
        return _usage(ctx, "an input delimiter may be specified only when operating on fields")
    if mode != "f" and only:
        return _usage(ctx, "suppressing non-delimited lines makes sense\n\tonly when operating on fields")
    ranges = _complement(r) if complement else r
    if delim is None:
        delim = b"\t"
    od = out_delim if out_delim is not None else (delim if mode == "f" else None)
    status = 0
    out = ctx.stdout
    maxhi = ranges[-1][1] if ranges else 0
    rx = _field_regex(ranges, delim, od) if mode == "f" and not only and sep == b"\n" else None
    one = _one_field_regex(ranges, delim) if rx is not None else None
    fast = _fast_field_regex(ranges, delim) if one is not None else None
    for name in files or ["-"]:
        f = _open(ctx, name)
        if f is None:
            status = 1
            continue
        try:
            if rx is not None:
                for text, _partial in iter_text_blocks(f, sep):
                    ctx.budget.check()
                    if fast is not None:
                        nl = text.find(b"\n")
                        if text.count(delim, 0, nl if nl >= 0 else len(text)) >= ranges[0][0]:
                            # the first line has a delimiter after the field: so may all
                            got = _one_field_block(b"\n" + text, fast, _FAST_GROUP)
                            if got is not None:
                                out.write(got + sep)
                                continue
                        fast = None  # a field that ends its line: likely in the next blocks too
                    if one is not None:
                        # every line has the field's delimiters: one match per newline
                        got = _one_field_block(b"\n" + text, one)
                        if got is not None:
                            out.write(got + sep)
                            continue
                        one = None  # short lines here: likely in the next blocks too
                    out.write(sep.join(rx.findall(text)) + sep)
            else:
                for lines, _partial in iter_line_blocks(f, sep):
                    ctx.budget.check()
                    out.write(_cut_lines(lines, mode, ranges, delim, od, only, sep))
        except IsADirectoryError as e:
            file_error(ctx, e, name)
            status = 1
        finally:
            f.close()
    return status


def _field_regex(ranges: list[tuple[int, int]], delim: bytes, od: bytes | None) -> re.Pattern[bytes] | None:
    """``cut -f LO-HI`` (one range, the input delimiter kept) as one regex whose only group
    is each line's output, for ``findall`` over a block of lines: the fields LO to HI of a
    line with at least LO-1 delimiters, an empty line for one with fewer, the whole line for
    one with none (GNU prints those as they are)."""
    if len(ranges) != 1 or delim == b"\n":
        return None
    lo, hi = ranges[0]
    if lo > 65535 or (hi > lo and od != delim):
        return None
    d = re.escape(delim)
    field = b"[^" + d + b"\n]*"
    if hi == lo:
        take = field
    elif hi - lo > 65535:
        take = b"[^\n]*"
    else:
        take = field + b"(?:" + d + field + b"){0,%d}" % (hi - lo)
    skip = b"(?:" + field + d + b"){%d}" % (lo - 1)
    return re.compile(b"^(?:" + skip + b"|(?=[^\n]*" + d + b")[^\n]*|)(" + take + b")[^\n]*$", re.M)


_GROUP = 16  # lines per match of _one_field_regex's first pattern


def _one_field_regex(ranges: list[tuple[int, int]], delim: bytes
                     ) -> tuple[re.Pattern[bytes] | None, re.Pattern[bytes]] | None:
    """``cut -f N`` for a block whose every line has at least N-1 delimiters (the caller
    counts the matches: one per line, else ``_field_regex``): a newline-led pattern (the
    engine skips to each newline at C speed) with possessive repeats, for _GROUP lines
    per match (the engine's per-match cost, a third of the whole, paid once per group) and
    for one line. A line without a delimiter is its own field 1, so for N=1 every line
    matches."""
    if len(ranges) != 1 or ranges[0][0] != ranges[0][1] or ranges[0][0] > 4096:
        return None
    n = ranges[0][0]
    d = re.escape(delim)
    field = b"[^" + d + b"\n]*+"
    # written out: the engine runs a flat sequence faster than a counted group
    skip = (field + d) * (n - 1) if n <= 16 else b"(?:" + field + d + b"){%d}" % (n - 1)
    line = b"\n" + skip + b"(" + field + b")"
    group = re.compile((line + b"[^\n]*+") * (_GROUP - 1) + line) if n <= 16 else None
    return group, re.compile(line)


_FAST_GROUP = 32  # lines per match of _fast_field_regex's first pattern


def _fast_field_regex(ranges: list[tuple[int, int]], delim: bytes
                      ) -> tuple[re.Pattern[bytes] | None, re.Pattern[bytes]] | None:
    """``cut -f N`` (N <= 16) for a block whose every line has a delimiter after field N
    (the usual field of a table that is not its last): as _one_field_regex, but the fields
    are ``[^D]*+``, one byte compared per character where ``[^D\\n]`` is a set test, so a
    field could run past its line's end. The match count tells: the region's newlines are
    exactly as many as the matches' leading ones (_FAST_GROUP per group match, one per
    one-line match), so when the counts agree no field took a newline and no line was
    skipped, and each line had its N delimiters; else None from _one_field_block, and the
    caller asks the other patterns."""
    if len(ranges) != 1 or ranges[0][0] != ranges[0][1] or ranges[0][0] > 16:
        return None
    n = ranges[0][0]
    d = re.escape(delim)
    field = b"[^" + d + b"]*+"
    line = b"\n" + (field + d) * (n - 1) + b"(" + field + b")" + d + b"[^\n]*+"
    return re.compile(line * _FAST_GROUP), re.compile(line)


def _one_field_block(text: bytes, rx: tuple[re.Pattern[bytes] | None, re.Pattern[bytes]],
                     size: int = _GROUP) -> bytes | None:
    """The field of every line of ``text`` (each line led by a newline) joined by
    newlines, or None when a line has too few delimiters. Each match takes one newline
    and matches only if its line has the delimiters, so as many matches as newlines means
    every line had them: the first ``size``-multiple of lines go to the group pattern (of
    ``size`` lines), the rest (fewer, found from the end) to the one-line pattern."""
    group, one = rx
    nl = text.count(b"\n")
    if group is None:
        q, r, cut = 0, nl, 0
    else:
        q, r = divmod(nl, size)
        cut = len(text)
        for _ in range(r):
            cut = text.rfind(b"\n", 0, cut)
    got = group.findall(text, 0, cut) if q else []  # type: ignore[union-attr]
    if len(got) != q:
        return None
    rest = one.findall(text, cut) if r else []
    if len(rest) != r:
        return None
    join = b"\n".join
    if not q:
        return join(rest)
    head = join(map(join, got))  # (a join per group of 16, then one: cheaper than one of all)
    return head + b"\n" + join(rest) if rest else head


def _cut_lines(lines: list[bytes], mode: str, ranges: list[tuple[int, int]], delim: bytes,
               od: bytes | None, only: bool, sep: bytes) -> bytes:
    res: list[bytes] = []
    if mode == "f":
        single = len(ranges) == 1
        lo0, hi0 = ranges[0] if ranges else (1, 0)
        for body in lines:
            if delim not in body:
                if not only:
                    res.append(body)
                continue
            fields = body.split(delim)
            if single:
                res.append(od.join(fields[lo0 - 1:hi0]))  # type: ignore[union-attr]
                continue
            sel: list[bytes] = []
            nf = len(fields)
            for lo, hi in ranges:
                if lo > nf:
                    break
                sel.extend(fields[lo - 1:min(hi, nf)])
            res.append(od.join(sel))  # type: ignore[union-attr]
    elif len(ranges) == 1:
        lo0, hi0 = ranges[0]
        res = [body[lo0 - 1:hi0] for body in lines]
    else:
        for body in lines:
            pieces = []
            nb = len(body)
            for lo, hi in ranges:
                if lo > nb:
                    break
                pieces.append(body[lo - 1:min(hi, nb)])
            res.append(od.join(pieces) if od is not None else b"".join(pieces))
    if not res:
        return b""
    return sep.join(res) + sep


# -- tr -------------------------------------------------------------------------------------

_CLASSES = {
    "alnum": bytes(c for c in range(256) if chr(c).isascii() and chr(c).isalnum()),
    "alpha": bytes(c for c in range(256) if chr(c).isascii() and chr(c).isalpha()),
    "blank": b" \t",
    "cntrl": bytes(list(range(32)) + [127]),
    "digit": b"0123456789",
    "graph": bytes(range(33, 127)),
    "lower": bytes(range(97, 123)),
    "print": bytes(range(32, 127)),
    "punct": bytes(c for c in range(33, 127) if not chr(c).isalnum()),
    "space": b"\t\n\v\f\r ",
    "upper": bytes(range(65, 91)),
    "xdigit": b"0123456789ABCDEFabcdef",
}


class _TrError(Exception):
    pass


def _tr_unescape(s: bytes) -> list[tuple[str, int]]:
    """Tokens: ('c', byte) for literal chars (escapes decoded), ('\\\\', byte) for escaped ones."""
    out: list[tuple[str, int]] = []
    i, n = 0, len(s)
    esc = {ord("a"): 7, ord("b"): 8, ord("f"): 12, ord("n"): 10, ord("r"): 13, ord("t"): 9,
           ord("v"): 11, ord("\\"): 92}
    while i < n:
        c = s[i]
        if c == 92 and i + 1 < n:
            d = s[i + 1]
            if d in esc:
                out.append(("e", esc[d]))
                i += 2
            elif 48 <= d <= 55:
                j = i + 1
                v = 0
                while j < n and j < i + 4 and 48 <= s[j] <= 55:
                    nv = v * 8 + s[j] - 48
                    if nv > 255:
                        # GNU warns and takes the first two digits
                        out.append(("warnoct", s[i + 1:i + 4]))  # type: ignore[arg-type]
                        break
                    v = nv
                    j += 1
                out.append(("e", v))
                i = j
            else:
                out.append(("e", d))
                i += 2
        elif c == 92:
            out.append(("e", 92))
            out.append(("warn", 0))  # GNU warns about a lone trailing backslash
            i += 1
        else:
            out.append(("c", c))
            i += 1
    return out


def _tr_expand(ctx: CommandContext, spec: str, is_set2: bool, set1_len: int | None = None
               ) -> tuple[list[int], list[tuple[str, int, int]]]:
    """Expand a tr SET into a byte list; also return class markers (name, start, len)."""
    toks = _tr_unescape(spec.encode("utf-8", "surrogateescape"))
    for t in [t for t in toks if t[0] == "warnoct"]:
        d = t[1].decode()  # type: ignore[attr-defined]
        ctx.error(f"warning: the ambiguous octal escape \\{d} is being\n\tinterpreted as the 2-byte "
                  f"sequence \\0{d[:2]}, {d[2]}")
        toks.remove(t)
    if toks and toks[-1][0] == "warn":
        toks.pop()
        ctx.error("warning: an unescaped backslash at end of string is not portable")
    out: list[int] = []
    classes: list[tuple[str, int, int]] = []
    i, n = 0, len(toks)
    fill_at: int | None = None
    fill_byte = 0
    while i < n:
        kind, c = toks[i]
        if kind == "c" and c == ord("[") and i + 1 < n:
            # [:class:], [=c=], [c*n]
            rest = bytes(t[1] for t in toks[i + 1:])
            m = re.match(rb"^:([a-z]+):\]", rest)
            if m and all(t[0] == "c" for t in toks[i + 1:i + 1 + m.end()]):
                name = m.group(1).decode()
                if name not in _CLASSES:
                    raise _TrError(f"invalid character class {quote(ctx, name)}")
                if is_set2 and name not in ("lower", "upper"):
                    raise _TrError("when translating, the only character classes that may appear in\n"
                                   "string2 are 'upper' and 'lower'")
                classes.append((name, len(out), len(_CLASSES[name])))
                out.extend(_CLASSES[name])
                i += 1 + m.end()
                continue
            if toks[i + 1] == ("c", ord("=")):
                # [=c=]: an equivalence class (in the C/UTF-8 locales, the character itself)
                k = next((k for k in range(i + 2, n - 1)
                          if toks[k] == ("c", ord("=")) and toks[k + 1] == ("c", ord("]"))), None)
                if k is not None:
                    body = bytes(t[1] for t in toks[i + 2:k])
                    if not body:
                        raise _TrError("missing equivalence class character '[==]'")
                    if k - (i + 2) != 1:
                        raise _TrError(f"{body.decode('utf-8', 'surrogateescape')}: equivalence class "
                                       "operand must be a single character")
                    if is_set2 and set1_len is not None:
                        raise _TrError("[=c=] expressions may not appear in string2 when translating")
                    out.append(toks[i + 2][1])
                    i = k + 2
                    continue
            if i + 2 < n and toks[i + 2] == ("c", ord("*")):
                close = next((k for k in range(i + 3, n) if toks[k] == ("c", ord("]"))), None)
                if close is not None:
                    cnt_txt = bytes(t[1] for t in toks[i + 3:close])
                    if cnt_txt and (not cnt_txt.isdigit() or cnt_txt.startswith(b"0") and re.search(rb"[89]", cnt_txt)):
                        raise _TrError(f"invalid repeat count {quote(ctx, cnt_txt.decode('utf-8', 'surrogateescape'))} "
                                       "in [c*n] construct")
                j = i + 3
                digits = b""
                while j < n and toks[j][0] == "c" and 48 <= toks[j][1] <= 57:
                    digits += bytes([toks[j][1]])
                    j += 1
                if j < n and toks[j] == ("c", ord("]")):
                    ch = toks[i + 1][1]
                    if digits and int(digits.decode(), 8 if digits.startswith(b"0") else 10) > 0:
                        cnt = int(digits.decode(), 8 if digits.startswith(b"0") else 10)
                        out.extend([ch] * cnt)  # [c*n] is allowed in string1 too; only [c*] is not
                    elif not is_set2:
                        raise _TrError("the [c*] repeat construct may not appear in string1")
                    else:
                        if fill_at is not None:
                            raise _TrError("only one [c*] repeat construct may appear in string2")
                        fill_at = len(out)
                        fill_byte = ch
                    i = j + 1
                    continue
        if i + 2 < n and toks[i + 1] == ("c", ord("-")):
            lo, hi = c, toks[i + 2][1]
            if lo > hi:
                a = bytes([lo]).decode("latin-1")
                b = bytes([hi]).decode("latin-1")
                raise _TrError(f"range-endpoints of '{_tr_show(a)}-{_tr_show(b)}' are in reverse collating sequence order")
            out.extend(range(lo, hi + 1))
            i += 3
            continue
        out.append(c)
        i += 1
    if fill_at is not None:
        need = max((set1_len or 0) - len(out), 0)
        out[fill_at:fill_at] = [fill_byte] * need
    return out, classes


def _tr_show(c: str) -> str:
    return c if c.isprintable() else "\\%03o" % ord(c)


@command("tr", usage="tr [OPTION]... STRING1 [STRING2]",
         help="Translate, squeeze, and/or delete characters from standard input,\nwriting to standard output.")
@stdio
def tr(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, ops = parse_opts(ctx, argv, "+cCdst", {  # (GNU: "+AcCdst", options end at the first operand)
            "complement": "c", "delete": "d", "squeeze-repeats": "s", "truncate-set1": "t"}, status=1)
    except OptError as e:
        return e.status
    comp = delete = squeeze = trunc = False
    for k, _ in opts:
        if k in "cC":
            comp = True
        elif k == "d":
            delete = True
        elif k == "s":
            squeeze = True
        elif k == "t":
            trunc = True
    if not ops:
        return _usage(ctx, "missing operand")
    translating = not delete and len(ops) >= 2
    if delete and squeeze:
        if len(ops) < 2:
            ctx.error(f"missing operand after {quote(ctx, ops[0])}")
            ctx.stderr.write(b"Two strings must be given when both deleting and squeezing repeats.\n")
            try_help(ctx)
            return 1
        if len(ops) > 2:
            return _usage(ctx, f"extra operand {quote(ctx, ops[2])}")
    elif delete:
        if len(ops) > 1:
            ctx.error(f"extra operand {quote(ctx, ops[1])}")
            ctx.stderr.write(b"Only one string may be given when deleting without squeezing repeats.\n")
            try_help(ctx)
            return 1
    elif not squeeze or len(ops) >= 2:
        if len(ops) < 2:
            ctx.error(f"missing operand after {quote(ctx, ops[0])}")
            ctx.stderr.write(b"Two strings must be given when translating.\n")
            try_help(ctx)
            return 1
        if len(ops) > 2:
            return _usage(ctx, f"extra operand {quote(ctx, ops[2])}")
    elif len(ops) > 1 and squeeze and not translating:
        return _usage(ctx, f"extra operand {quote(ctx, ops[1])}")
    try:
        set1, cls1 = _tr_expand(ctx, ops[0], False)
        if comp:
            s1 = set(set1)
            set1 = [c for c in range(256) if c not in s1]
        set2: list[int] = []
        cls2: list[tuple[str, int, int]] = []
        if len(ops) > 1:
            set2, cls2 = _tr_expand(ctx, ops[1], translating, len(set1))
    except _TrError as e:
        ctx.error(str(e))
        return 1
    table = None
    if translating:
        # GNU validate(): a [:upper:]/[:lower:] in string2 must face one in string1
        if not comp:
            case1 = {st for name, st, _ in cls1 if name in ("upper", "lower")}
            if any(name in ("upper", "lower") and st not in case1 for name, st, _ in cls2):
                ctx.error("misaligned [:upper:] and/or [:lower:] construct")
                return 1
        if trunc:
            set1 = set1[: len(set2)]
        if not set2 and set1:
            ctx.error("when not truncating set1, string2 must be non-empty")
            return 1
        # [:lower:] <-> [:upper:] pairs map class to class position by position
        if len(set2) < len(set1):
            if cls2 and cls2[-1][1] + cls2[-1][2] == len(set2):
                ctx.error("when translating with string1 longer than string2,\n"
                          "the latter string must not end with a character class")
                return 1
            set2 = set2 + [set2[-1]] * (len(set1) - len(set2))
        if comp and cls1 and len(set(set2)) > 1:
            ctx.error("when translating with complemented character classes,\nstring2 must map all characters in the domain to one")
            return 1
        m = list(range(256))
        for a, b in zip(set1, set2):
            m[a] = b
        table = bytes(m)
    del_bytes = bytes(set1) if delete else None
    sq_set = set((set2 if translating else set1) if squeeze else [])
    if squeeze and delete:
        sq_set = set(set2)
    sq_pat = None
    if sq_set:
        cls = b"".join(re.escape(bytes([c])) for c in sorted(sq_set))
        sq_pat = re.compile(b"([" + cls + b"])\\1+")
    out = ctx.stdout
    last = -1
    n = 0
    from ._args import iter_chunks
    for chunk in iter_chunks(ctx.stdin, CHUNK):
        n += 1
        if n & 63 == 0:
            ctx.budget.check()
        if del_bytes is not None:
            chunk = chunk.translate(None, del_bytes)
        elif table is not None:
            chunk = chunk.translate(table)
        if sq_pat is not None and chunk:
            # carry squeeze state across chunk boundaries
            if last >= 0 and chunk[0] == last and last in sq_set:
                k = 0
                while k < len(chunk) and chunk[k] == last:
                    k += 1
                chunk = chunk[k:]
            chunk = sq_pat.sub(rb"\1", chunk)
            if chunk:
                last = chunk[-1]
        out.write(chunk)
    _ = (cls1, quotef)
    return 0


# -- paste ----------------------------------------------------------------------------------

def _paste_delims(s: str) -> list[bytes]:
    b = s.encode("utf-8", "surrogateescape")
    out: list[bytes] = []
    i = 0
    while i < len(b):
        c = b[i:i + 1]
        if c == b"\\" and i + 1 < len(b):
            d = b[i + 1:i + 2]
            out.append({b"n": b"\n", b"t": b"\t", b"\\": b"\\", b"0": b"", b"b": b"\b",
                        b"f": b"\f", b"r": b"\r", b"v": b"\v"}.get(d, d))
            i += 2
        else:
            out.append(c)
            i += 1
    return out


@command("paste", usage="paste [OPTION]... [FILE]...",
         help="Write lines consisting of the sequentially corresponding lines from\neach FILE, separated by TABs, to standard output.")
@stdio
def paste(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, files = parse_opts(ctx, argv, "d:sz", {
            "delimiters": "d", "serial": "s", "zero-terminated": "z"}, status=1)
    except OptError as e:
        return e.status
    delims = [b"\t"]
    serial = False
    sep = b"\n"
    for k, v in opts:
        if k == "d":
            if v and v.endswith("\\") and not v.endswith("\\\\"):
                ctx.error(f"delimiter list ends with an unescaped backslash: {v}")
                return 1
            delims = _paste_delims(v or "") or [b""]
            if v == "":
                delims = [b""]
        elif k == "s":
            serial = True
        elif k == "z":
            sep = b"\0"
    files = files or ["-"]
    streams: list[BinaryIO | None] = []
    status = 0
    stdin_lines = None
    for name in files:
        f = _open(ctx, name)
        if f is None:
            return 1
        streams.append(f)
    out = ctx.stdout
    try:
        if serial:
            # streamed as GNU does (a line joined from endless input held it all in memory:
            # `cat /dev/urandom | paste -s` grew by ~700 MiB in 2 s)
            nd = len(delims)
            for name, f in zip(files, streams):
                parts: list[bytes] = []
                size = 0
                for i, ln in enumerate(iter_lines(f, CHUNK, sep)):
                    if ln.endswith(sep):
                        ln = ln[:-1]
                    if i:
                        parts.append(delims[(i - 1) % nd])
                    parts.append(ln)
                    size += len(ln)
                    if size >= CHUNK or len(parts) >= 8192:
                        out.write(b"".join(parts))
                        parts.clear()
                        size = 0
                        ctx.budget.check()
                parts.append(sep)
                out.write(b"".join(parts))
            return 0
        iters = []
        shared: dict[int, object] = {}
        for f in streams:
            key = id(f) if not isinstance(f, type(None)) else 0
            iters.append(iter_lines(f, CHUNK, sep))  # type: ignore[arg-type]
        _ = (shared, stdin_lines)
        # '-' given several times reads stdin line by line in turn (GNU)
        std_iter = None
        its = []
        for name, it in zip(files, iters):
            if name == "-":
                if std_iter is None:
                    std_iter = it
                its.append(std_iter)
            else:
                its.append(it)
        done = [False] * len(its)
        n = 0
        while True:
            n += 1
            if n & 4095 == 0:
                ctx.budget.check()
            row = []
            got = False
            for i, it in enumerate(its):
                ln = b""
                if not done[i]:
                    try:
                        ln = next(it)
                        got = True
                        if ln.endswith(sep):
                            ln = ln[:-1]
                    except StopIteration:
                        done[i] = True
                        ln = b""
                row.append(ln)
            if not got:
                break
            parts = []
            for i, ln in enumerate(row):
                if i:
                    parts.append(delims[(i - 1) % len(delims)])
                parts.append(ln)
            out.write(b"".join(parts) + sep)
    finally:
        for f in streams:
            if f is not None:
                f.close()
    return status


# -- comm / join ----------------------------------------------------------------------------

def _read_lines_list(ctx: CommandContext, name: str, sep: bytes) -> list[bytes] | None:
    f = _open(ctx, name)
    if f is None:
        return None
    try:
        # (counted as sort's reader counts: comm/join held all of an endless input, +626 MiB
        # for `join - f < <(yes …)` in 2 s; past held_cap it is GNU's "memory exhausted")
        from ..limits import Budget
        from ._args import held_cap
        cap = held_cap(ctx)
        held = 0
        out = []
        for ln in iter_lines(f, CHUNK, sep):
            held += len(ln) + Budget.HELD_OVERHEAD
            if held > cap:
                raise MemoryError("memory exhausted")
            out.append(ln[:-1] if ln.endswith(sep) else ln)
        return out
    except IsADirectoryError as e:
        file_error(ctx, e, name)
        return None
    finally:
        f.close()


def _read_two_files(ctx: CommandContext, ops: list[str], sep: bytes, shell_quote_extra: bool = False
                    ) -> tuple[list[bytes], list[bytes]] | int:
    """Check the FILE1 FILE2 operands of comm/join and read both; an exit status on error."""
    if len(ops) < 2:
        if not ops:
            return _usage(ctx, "missing operand")
        return _usage(ctx, f"missing operand after {quote(ctx, ops[-1])}")
    if len(ops) > 2:
        # join quotes its extra operand with quoteaf ('c'), comm with quote (‘c’)
        extra = quoteaf(ops[2]) if shell_quote_extra else quote(ctx, ops[2])
        return _usage(ctx, f"extra operand {extra}")
    if ops[0] == "-" and ops[1] == "-":
        # the second read of stdin fails: join says so itself (with a stale errno), comm
        # meets a closed stdin
        ctx.error("both files cannot be standard input: No such file or directory" if shell_quote_extra
                  else "-: Bad file descriptor")
        return 1
    a = _read_lines_list(ctx, ops[0], sep)
    if a is None:
        return 1
    b = _read_lines_list(ctx, ops[1], sep)
    if b is None:
        return 1
    return a, b


@command("comm", usage="comm [OPTION]... FILE1 FILE2", help="Compare sorted files FILE1 and FILE2 line by line.")
@stdio
def comm(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, ops = parse_opts(ctx, argv, "123z", {
            "check-order": None, "nocheck-order": None, "output-delimiter": "output-delimiter:",
            "total": None, "zero-terminated": "z"}, status=1)
    except OptError as e:
        return e.status
    hide = set()
    check = None
    odel = b"\t"
    total = False
    sep = b"\n"
    for k, v in opts:
        if k in "123":
            hide.add(k)
        elif k == "check-order":
            check = True
        elif k == "nocheck-order":
            check = False
        elif k == "output-delimiter":
            odel = (v or "").encode("utf-8", "surrogateescape") or b"\0"
            if v == "":
                odel = b"\0"
        elif k == "total":
            total = True
        elif k == "z":
            sep = b"\0"
    pair = _read_two_files(ctx, ops, sep)
    if isinstance(pair, int):
        return pair
    a, b = pair
    out: list[bytes] = []
    i = j = 0
    counts = [0, 0, 0]
    pre2 = b"" if "1" in hide else odel
    pre3 = (b"" if "1" in hide else odel) + (b"" if "2" in hide else odel)
    disorder = False
    warned = [False, False]
    seen = False

    class _Fatal(Exception):
        pass

    def chk(lst: list[bytes], idx: int, which: int) -> None:
        # GNU checks a newly read line against the previous one of the same file, once
        # unpairable lines were seen (or always with --check-order, where it is fatal)
        nonlocal disorder
        if check is False or warned[which] or idx >= len(lst) or idx == 0:
            return
        if not (check or seen):
            return
        if lst[idx - 1] > lst[idx]:
            ctx.stdout.write(b"".join(out))
            out.clear()
            ctx.error(f"file {which + 1} is not in sorted order")
            if check:
                raise _Fatal()
            warned[which] = True
            disorder = True

    try:
        while i < len(a) or j < len(b):
            if i < len(a) and j < len(b):
                c = (a[i] > b[j]) - (a[i] < b[j])
            elif i < len(a):
                c = -1
            else:
                c = 1
            if c < 0:
                seen = True
                counts[0] += 1
                if "1" not in hide:
                    out.append(a[i] + sep)
            elif c > 0:
                seen = True
                counts[1] += 1
                if "2" not in hide:
                    out.append(pre2 + b[j] + sep)
            else:
                counts[2] += 1
                if "3" not in hide:
                    out.append(pre3 + a[i] + sep)
            if c >= 0:
                j += 1
                chk(b, j, 1)
            if c <= 0:
                i += 1
                chk(a, i, 0)
    except _Fatal:
        return 1
    if total:
        out.append(b"%d%s%d%s%d%stotal%s" % (counts[0], odel, counts[1], odel, counts[2], odel, sep))
    ctx.stdout.write(b"".join(out))
    if disorder:
        ctx.error("input is not in sorted order")
        return 1
    return 0


_JOIN_BLANKS = re.compile(rb"[ \t\n]+")


def _join_fields(line: bytes, tab: bytes | None) -> list[bytes]:
    if tab is None:
        # GNU xfields(): runs of blanks (newline too: -z records) separate fields, leading ones
        # are skipped, trailing ones end in one empty field ("1 a " -> 1, a, "")
        line = line.lstrip(b" \t\n")
        return _JOIN_BLANKS.split(line) if line else []
    return line.split(tab)


@command("join", usage="join [OPTION]... FILE1 FILE2",
         help="For each pair of input lines with identical join fields, write a line to\nstandard output.")
@stdio
def join(ctx: CommandContext, argv: list[str]) -> int:
    # -j1 N / -j2 N obsolete forms
    try:
        opts, ops = parse_opts(ctx, argv, "a:e:i1:2:j:o:t:v:z", {
            "ignore-case": "i", "check-order": None, "nocheck-order": None, "zero-terminated": "z",
            "header": None}, status=1)
    except OptError as e:
        return e.status
    f1 = f2 = 0
    unp: set[int] = set()
    only: set[int] = set()
    empty: bytes | None = None
    icase = False
    fmt: list[tuple[int, int]] | None = None
    auto = False
    tab: bytes | None = None
    check = None
    header = False
    sep = b"\n"
    for k, v in opts:
        if k in "12j":
            if not (v or "").isdigit() or int(v or "0") < 1:
                ctx.error(f"invalid field number: {quote(ctx, v or '')}")
                return 1
            n = int(v or "1") - 1
            if k == "1":
                f1 = n
            elif k == "2":
                f2 = n
            else:
                f1 = f2 = n
        elif k in "av":
            if v not in ("1", "2"):
                ctx.error(f"invalid field number: {quote(ctx, v or '')}")  # (sic, coreutils 9.1)
                return 1
            (unp if k == "a" else only).add(int(v))
        elif k == "e":
            empty = (v or "").encode("utf-8", "surrogateescape")
        elif k == "i":
            icase = True
        elif k == "o":
            if v == "auto":
                auto = True
                continue
            fmt = fmt or []
            for item in re.split(r"[,\s]+", v or ""):
                if item == "0":
                    fmt.append((0, 0))
                    continue
                # GNU decode_field_spec: the file number first, then ".N" with N >= 1
                if item[:1] not in ("0", "1", "2"):
                    ctx.error(f"invalid file number in field spec: {quote(ctx, item)}")
                    return 1
                if item[0] == "0" or item[1:2] != ".":
                    ctx.error(f"invalid field specifier: {quote(ctx, item)}")
                    return 1
                if not item[2:].isdigit() or int(item[2:]) == 0:
                    ctx.error(f"invalid field number: {quote(ctx, item[2:])}")
                    return 1
                fmt.append((int(item[0]), int(item[2:]) - 1))
        elif k == "t":
            t = (v or "").encode("utf-8", "surrogateescape")
            if len(t) > 1:
                ctx.error(f"multi-character tab {quote(ctx, v or '')}")
                return 1
            tab = t or b"\n"
        elif k == "check-order":
            check = True
        elif k == "nocheck-order":
            check = False
        elif k == "header":
            header = True
        elif k == "z":
            sep = b"\0"
    pair = _read_two_files(ctx, ops, sep, shell_quote_extra=True)
    if isinstance(pair, int):
        return pair
    a, b = pair
    osep = tab if tab is not None else b" "
    A = [_join_fields(x, tab) for x in a]
    B = [_join_fields(x, tab) for x in b]

    def key(fields: list[bytes], n: int) -> bytes:
        v = fields[n] if n < len(fields) else b""
        return v.lower() if icase else v

    out: list[bytes] = []
    na = max((len(x) for x in A), default=0)
    nb = max((len(x) for x in B), default=0)

    def emit(x: list[bytes] | None, y: list[bytes] | None) -> None:
        if fmt is not None or auto:
            spec = fmt
            if auto:
                fa = len(A[0]) if A else 0
                fb = len(B[0]) if B else 0
                spec = [(0, 0)] + [(1, i) for i in range(fa) if i != f1] + [(2, i) for i in range(fb) if i != f2]
            vals = []
            for fno, idx in spec or []:
                if fno == 0:
                    v = key(x, f1) if x is not None else key(y, f2) if y is not None else b""
                    v = (x[f1] if x is not None and f1 < len(x) else y[f2] if y is not None and f2 < len(y) else (empty or b""))
                else:
                    src = x if fno == 1 else y
                    v = src[idx] if src is not None and idx < len(src) else (empty if empty is not None else b"")
                vals.append(v)
            if empty is not None:  # GNU prfield(): an empty field prints as -e's text too
                vals = [v or empty for v in vals]
            out.append(osep.join(vals) + sep)
            return
        if x is not None and y is not None:
            jf = x[f1] if f1 < len(x) else b""
            rest = [v for i, v in enumerate(x) if i != f1] + [v for i, v in enumerate(y) if i != f2]
            vals = [jf] + rest
        elif x is not None:
            jf = x[f1] if f1 < len(x) else (empty or b"")
            vals = [jf] + [v for i, v in enumerate(x) if i != f1]
        elif y is not None:
            jf = y[f2] if f2 < len(y) else (empty or b"")
            vals = [jf] + [v for i, v in enumerate(y) if i != f2]
        else:
            return
        if empty is not None:
            vals = [v or empty for v in vals]
        out.append(osep.join(vals) + sep)

    # GNU join_input: a line is order-checked when it is read, once unpairable lines were
    # seen (always with --check-order, where the first disorder is fatal)
    i = j = 0
    if header and A and B:
        emit(A[0], B[0])
        i = j = 1
    base = [i, j]
    disorder = False
    warned = [False, False]
    seen = False

    class _Fatal(Exception):
        pass

    def read(L: list[list[bytes]], idx: int, n: int, which: int, raw: list[bytes]) -> bool:
        """Line ``idx`` of file ``which`` is read: check it; False at end of file."""
        nonlocal disorder
        if idx >= len(L):
            return False
        if check is False or warned[which] or idx <= base[which] or not (check or seen):
            return True
        if key(L[idx - 1], n) > key(L[idx], n):
            ctx.stdout.write(b"".join(out))
            out.clear()
            ctx.stderr.write(f"join: {ops[which]}:{idx + 1}: is not sorted: ".encode("utf-8", "surrogateescape") + raw[idx] + b"\n")
            if check:
                raise _Fatal()
            warned[which] = True
            disorder = True
        return True

    pr1 = 1 in unp or 1 in only
    pr2 = 2 in unp or 2 in only
    try:
        while i < len(A) and j < len(B):
            ka, kb = key(A[i], f1), key(B[j], f2)
            if ka < kb:
                if pr1:
                    emit(A[i], None)
                i += 1
                read(A, i, f1, 0, a)
                seen = True
                continue
            if ka > kb:
                if pr2:
                    emit(None, B[j])
                j += 1
                read(B, j, f2, 1, b)
                seen = True
                continue
            i2 = i + 1
            while read(A, i2, f1, 0, a) and key(A[i2], f1) == ka:
                i2 += 1
            j2 = j + 1
            while read(B, j2, f2, 1, b) and key(B[j2], f2) == kb:
                j2 += 1
            if not only:
                for x in A[i:i2]:
                    for y in B[j:j2]:
                        emit(x, y)
            i, j = i2, j2
        checktail = check is not False and not (warned[0] and warned[1])
        if (pr1 or checktail) and i < len(A):
            if pr1:
                emit(A[i], None)
            if j < len(B):
                seen = True
            i += 1
            while read(A, i, f1, 0, a):
                if pr1:
                    emit(A[i], None)
                if warned[0] and not pr1:
                    break
                i += 1
        if (pr2 or checktail) and j < len(B):
            if pr2:
                emit(None, B[j])
            if i < len(A):
                seen = True
            j += 1
            while read(B, j, f2, 1, b):
                if pr2:
                    emit(None, B[j])
                if warned[1] and not pr2:
                    break
                j += 1
    except _Fatal:
        return 1
    ctx.stdout.write(b"".join(out))
    _ = (na, nb)
    if disorder:
        ctx.error("input is not in sorted order")
        return 1
    return 0


# -- nl -------------------------------------------------------------------------------------

@command("nl", usage="nl [OPTION]... [FILE]...", help="Write each FILE to standard output, with line numbers added.")
@stdio
def nl(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, files = parse_opts(ctx, argv, "b:d:f:h:i:l:n:ps:v:w:", {
            "body-numbering": "b", "section-delimiter": "d", "footer-numbering": "f",
            "header-numbering": "h", "line-increment": "i", "join-blank-lines": "l",
            "number-format": "n", "no-renumber": "p", "number-separator": "s",
            "starting-line-number": "v", "number-width": "w"}, status=1)
    except OptError as e:
        return e.status
    style = {"b": "t", "h": "n", "f": "n"}
    incr, start, width = 1, 1, 6
    fmtn = "rn"
    sepb = b"\t"
    delim = b"\\:"
    renumber = True
    join_blank = 1
    for k, v in opts:
        v = v or ""
        if k in "bhf":
            if v not in ("a", "t", "n") and not v.startswith("p"):
                ctx.error(f"invalid {'body' if k == 'b' else 'header' if k == 'h' else 'footer'} numbering style: {quote(ctx, v)}")
                try_help(ctx)
                return 1
            style[k] = v
        elif k in "ivwl":
            try:
                num = int(v)
            except ValueError:
                what = {"i": "line number increment", "v": "starting line number",
                        "w": "line number field width", "l": "line number of blank lines"}[k]
                ctx.error(f"invalid {what}: {quote(ctx, v)}")
                return 1
            if k == "i":
                incr = num
            elif k == "v":
                start = num
            elif k == "w":
                if num < 1:
                    ctx.error(f"invalid line number field width: {quote(ctx, v)}: Numerical result out of range")
                    return 1
                width = num
            else:
                if num < 1:
                    ctx.error(f"invalid line number of blank lines: {quote(ctx, v)}: Numerical result out of range")
                    return 1
                join_blank = num
        elif k == "n":
            if v not in ("ln", "rn", "rz"):
                ctx.error(f"invalid line numbering format: {quote(ctx, v)}")
                try_help(ctx)
                return 1
            fmtn = v
        elif k == "s":
            sepb = v.encode("utf-8", "surrogateescape")
        elif k == "d":
            d = v.encode("utf-8", "surrogateescape")
            delim = d if len(d) >= 2 else d + b":"
        elif k == "p":
            renumber = False
    num = start
    section = "b"
    blank_run = 0
    out = ctx.stdout
    status = 0

    def numbered(line_body: bytes) -> bool:
        nonlocal blank_run
        st = style[section]
        if st == "a":
            if not line_body:
                blank_run += 1
                if blank_run < join_blank:
                    return False
                blank_run = 0
                return True
            blank_run = 0
            return True
        if st == "t":
            return bool(line_body)
        if st == "n":
            return False
        try:
            import regex as _re
            return _re.search(st[1:].encode("utf-8", "surrogateescape"), line_body) is not None
        except Exception:  # noqa: BLE001 - invalid regex: treat as no match
            return False

    for name in files or ["-"]:
        f = _open(ctx, name)
        if f is None:
            status = 1
            continue
        try:
            for line in iter_lines(f, CHUNK):
                body = line[:-1] if line.endswith(b"\n") else line
                if body in (delim * 3, delim * 2, delim):
                    section = {3: "h", 2: "b", 1: "f"}[len(body) // len(delim)]
                    if renumber:
                        num = start  # GNU: every section delimiter starts a new page (not -p)
                    out.write(b"\n")
                    continue
                if numbered(body):
                    s = str(num)
                    if fmtn == "ln":
                        s = s.ljust(width)
                    elif fmtn == "rz":
                        s = ("-" + s[1:].rjust(width - 1, "0")) if s.startswith("-") else s.rjust(width, "0")
                    else:
                        s = s.rjust(width)
                    out.write(s.encode() + sepb + body + b"\n")
                    num += incr
                else:
                    out.write(b" " * (width + len(sepb)) + body + b"\n" if body or True else b"")
        finally:
            f.close()
    return status


# -- fold / expand / unexpand -------------------------------------------------------------

@command("fold", usage="fold [OPTION]... [FILE]...", help="Wrap input lines in each FILE, writing to standard output.")
@stdio
def fold(ctx: CommandContext, argv: list[str]) -> int:
    args = obsolete_num_option(argv, "w")
    try:
        opts, files = parse_opts(ctx, args, "bsw:", {"bytes": "b", "spaces": "s", "width": "w"}, status=1)
    except OptError as e:
        return e.status
    by_bytes = spaces = False
    width = 80
    for k, v in opts:
        if k == "b":
            by_bytes = True
        elif k == "s":
            spaces = True
        elif k == "w":
            try:
                width = int(v or "")
                if width < 1 or width >= 1 << 64:
                    raise ValueError
            except ValueError:
                extra = ": Numerical result out of range" if (v or "").strip("+0") == "" and v else ""
                if re.fullmatch(r"\+?\d+", v or "") and int(v or "0") >= 1 << 64:
                    extra = ": Value too large for defined data type"
                ctx.error(f"invalid number of columns: {quote(ctx, v or '')}{extra}")
                return 1
    status = 0
    out = ctx.stdout
    for name in files or ["-"]:
        f = _open(ctx, name)
        if f is None:
            status = 1
            continue
        try:
            for line in iter_lines(f, CHUNK):
                nl_ = line.endswith(b"\n")
                body = line[:-1] if nl_ else line
                out.write(_fold_line(body, width, by_bytes, spaces) + (b"\n" if nl_ else b""))
        finally:
            f.close()
    return status


def _adv(col: int, c: int, by_bytes: bool) -> int:
    if by_bytes:
        return col + 1
    if c == 8:
        return max(col - 1, 0)
    if c == 13:
        return 0
    if c == 9:
        return col + 8 - col % 8
    return col + 1


def _fold_line(s: bytes, width: int, by_bytes: bool, spaces: bool) -> bytes:
    out = bytearray()
    buf = bytearray()
    col = 0
    i = 0
    while i < len(s):
        c = s[i]
        nc = _adv(col, c, by_bytes)
        if nc > width and buf:
            if spaces:
                k = max(buf.rfind(b" "), buf.rfind(b"\t")) if False else buf.rfind(b" ")
                kt = buf.rfind(b"\t")
                k = max(k, kt)
                if k >= 0:
                    out += buf[:k + 1] + b"\n"
                    rest = buf[k + 1:]
                    buf = bytearray(rest)
                    col = 0
                    for ch in rest:
                        col = _adv(col, ch, by_bytes)
                    continue
            out += buf + b"\n"
            buf = bytearray()
            col = 0
            continue
        buf.append(c)
        col = nc
        i += 1
    out += buf
    return bytes(out)


def _parse_tabs(ctx: CommandContext, specs: list[str]) -> tuple[list[int], int | None] | None:
    # GNU: after the explicit stops, "+N" repeats every N columns from the last stop and
    # "/N" stops at every multiple of N (kept as -N here); a lone "/" or "+" applies to the
    # number that follows it
    stops: list[int] = []
    extra = None
    pending = ""
    for spec in specs:
        for item in re.split(r"[,\s]+", spec):
            if not item:
                continue
            if pending and item.isdigit():
                item = pending + item
            pending = ""
            if item in ("/", "+"):
                pending = item
                continue
            if item[0] in "/+" and item[1:].isdigit():
                extra = int(item[1:]) if item[0] == "+" else -int(item[1:])
                continue
            if not item.isdigit():
                ctx.error(f"tab size contains invalid character(s): {quote(ctx, item)}")
                return None
            stops.append(int(item))
    if len(stops) == 1 and extra is None:
        if stops[0] == 0:
            ctx.error("tab size cannot be 0")
            return None
        return [], stops[0]
    for a, b in zip(stops, stops[1:]):
        if b <= a:
            ctx.error("tab sizes must be ascending")
            return None
    return stops, extra


def _next_stop(col: int, stops: list[int], every: int | None) -> int:
    for s in stops:
        if s > col:
            return s
    if every is not None and every < 0:
        return (col // -every + 1) * -every
    if every:
        if stops:
            base = stops[-1]
            return base + ((col - base) // every + 1) * every
        return (col // every + 1) * every
    return col + 1


@command("expand", usage="expand [OPTION]... [FILE]...", help="Convert tabs in each FILE to spaces, writing to standard output.")
@stdio
def expand(ctx: CommandContext, argv: list[str]) -> int:
    args = [argv[0]]
    for a in argv[1:]:
        args.append(("-t" + a[1:].rstrip(",")) if re.fullmatch(r"-\d+(,\d+)*,?", a) else a)
    try:
        opts, files = parse_opts(ctx, args, "it:", {"initial": "i", "tabs": "t"}, status=1)
    except OptError as e:
        return e.status
    initial = False
    tspecs = []
    for k, v in opts:
        if k == "i":
            initial = True
        else:
            tspecs.append(v or "")
    r = _parse_tabs(ctx, tspecs) if tspecs else ([], 8)
    if r is None:
        return 1
    stops, every = r
    status = 0
    for name in files or ["-"]:
        f = _open(ctx, name)
        if f is None:
            status = 1
            continue
        try:
            for line in iter_lines(f, CHUNK):
                if b"\t" not in line:
                    ctx.stdout.write(line)
                    continue
                out = bytearray()
                col = 0
                leading = True
                for c in line:
                    if c == 9 and (leading or not initial):
                        nxt = _next_stop(col, stops, every)
                        out += b" " * (nxt - col)
                        col = nxt
                        continue
                    if c not in (32, 9):
                        leading = False
                    out.append(c)
                    col = max(col - 1, 0) if c == 8 else 0 if c == 10 else col + 1
                ctx.stdout.write(bytes(out))
        finally:
            f.close()
    return status


@command("unexpand", usage="unexpand [OPTION]... [FILE]...", help="Convert blanks in each FILE to tabs, writing to standard output.")
@stdio
def unexpand(ctx: CommandContext, argv: list[str]) -> int:
    # the obsolete `-2,6` form sets tab stops without -t's implied -a
    args = [argv[0]]
    old_specs: list[str] = []
    for a in argv[1:]:
        if re.fullmatch(r"-\d+(,\d+)*,?", a):
            old_specs.append(a[1:].rstrip(","))
        else:
            args.append(a)
    try:
        opts, files = parse_opts(ctx, args, "at:", {"all": "a", "first-only": None, "tabs": "t"}, status=1)
    except OptError as e:
        return e.status
    all_ = False
    tspecs = list(old_specs)
    for k, v in opts:
        if k == "a":
            all_ = True
        elif k == "first-only":
            all_ = False
        else:
            tspecs.append(v or "")
            all_ = True
    r = _parse_tabs(ctx, tspecs) if tspecs else ([], 8)
    if r is None:
        return 1
    stops, every = r
    status = 0
    for name in files or ["-"]:
        f = _open(ctx, name)
        if f is None:
            status = 1
            continue
        try:
            for line in iter_lines(f, CHUNK):
                ctx.stdout.write(_unexpand_line(line, stops, every, all_))
        finally:
            f.close()
    return status


def _tab_after(col: int, stops: list[int], every: int | None) -> int | None:
    """GNU get_next_tab_column: the next stop after ``col``, None past the last one."""
    if not stops and every and every > 0:
        return col + (every - col % every)
    for t in stops:
        if col < t:
            return t
    if every is not None and every < 0:
        return col + (-every - col % -every)
    if every:
        end = stops[-1] if stops else 0
        return col + (every - (col - end) % every)
    return None


def _unexpand_line(line: bytes, stops: list[int], every: int | None, all_: bool) -> bytes:
    """One line through GNU unexpand's loop (coreutils unexpand.c), blanks to tabs."""
    out = bytearray()
    convert = True
    col = 0
    one_blank_before_stop = False
    prev_blank = True
    pending = bytearray()
    for c in line:
        if convert:
            blank = c in (32, 9)
            if blank:
                nxt = _tab_after(col, stops, every)
                if nxt is None:
                    convert = False
                else:
                    if c == 9:
                        col = nxt
                        if pending:
                            pending[0] = 9
                    else:
                        col += 1
                        if not (prev_blank and col == nxt):
                            # not yet known whether the pending blanks become tabs
                            if col == nxt:
                                one_blank_before_stop = True
                            pending.append(c)
                            prev_blank = True
                            continue
                        c = 9  # the pending blanks become a tab
                        if pending:
                            pending[0] = 9
                    # drop the pending blanks unless one blank sat just before the last stop
                    pending = pending[:1] if one_blank_before_stop and pending else bytearray()
            elif c == 8:
                col -= 1 if col else 0
            else:
                col += 1
            if pending:
                if len(pending) > 1 and one_blank_before_stop:
                    pending[0] = 9
                out += pending
                pending = bytearray()
                one_blank_before_stop = False
            prev_blank = blank
            convert = convert and (all_ or blank)
        out.append(c)
        if c == 10:
            convert, col, one_blank_before_stop, prev_blank = True, 0, False, True
    if pending:  # end of input: flushed like before any other character
        if len(pending) > 1 and one_blank_before_stop:
            pending[0] = 9
        out += pending
    return bytes(out)


_ = quotef
