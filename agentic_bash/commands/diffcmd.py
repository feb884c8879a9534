"""diff, cmp (GNU diffutils 3.8) and patch (GNU patch 2.7) over the VFS."""

# diff reproduces GNU's algorithm, not just its format, so hunks are byte-identical:
# identical prefix/suffix lines are set aside (keeping ``horizon`` = context lines),
# lines become equivalence classes (after -i/-w/-b/-E/--strip-trailing-cr), lines with no
# match on the other side are discarded (analyze.c discard_confusing_lines), the rest goes
# through gnulib diffseq.h (Myers' O(ND) with the too_expensive cut-off), and
# shift_boundaries slides each run of changes to GNU's canonical place.
# A last line without a newline never equals one with it ("\ No newline at end of file").

from __future__ import annotations

import dataclasses
import io
import os
import stat as _stat
import time
from datetime import datetime, timedelta, timezone
from typing import BinaryIO

from ._args import OptError, parse_opts
from ._regex import utf8_locale
from .base import CommandContext, as_invoked, command, ctx_with

SNAKE_LIMIT = 20
_WS = __import__("re").compile(rb"[ \t\r\f\v]+")
OFFSET_MAX = 1 << 62


def _parse(ctx: CommandContext, argv: list[str], short: str, long: dict):  # noqa: ANN202
    """parse_opts, with diffutils' "prog: Try 'prog --help'..." (program name prefixed)."""
    err = io.BytesIO()
    try:
        return parse_opts(ctx_with(ctx, stderr=err), argv, short, long, status=2)
    finally:
        msg = err.getvalue().replace(b"\nTry '", b"\n" + ctx.name.encode() + b": Try '")
        if msg.startswith(b"Try '"):
            msg = ctx.name.encode() + b": " + msg
        ctx.stderr.write(msg)


def _last_arg(argv: list[str], operands: list[str]) -> str:
    # GNU getopt permutes operands to the end, so argv[argc - 1] is the last operand if any
    return operands[-1] if operands else (argv[-1] if len(argv) > 1 else argv[0])


# -- the comparison (gnulib diffseq.h + diffutils analyze.c) -------------------------------

class _Ctx:
    __slots__ = ("xv", "yv", "fd", "bd", "too_expensive", "heuristic", "xchanged", "ychanged",
                 "xreal", "yreal", "budget", "steps")


def _diag(xoff: int, xlim: int, yoff: int, ylim: int, find_minimal: bool, c_: _Ctx) -> tuple[int, int, bool, bool]:
    fd = c_.fd
    bd = c_.bd
    xv = c_.xv
    yv = c_.yv
    dmin = xoff - ylim
    dmax = xlim - yoff
    fmid = xoff - yoff
    bmid = xlim - ylim
    fmin = fmax = fmid
    bmin = bmax = bmid
    odd = (fmid - bmid) & 1
    fd[fmid] = xoff
    bd[bmid] = xlim
    c = 0
    while True:
        c += 1
        c_.steps += 1
        if c_.steps & 4095 == 0 and c_.budget is not None:
            c_.budget.check()
        big_snake = False
        if fmin > dmin:
            fmin -= 1
            fd[fmin - 1] = -1
        else:
            fmin += 1
        if fmax < dmax:
            fmax += 1
            fd[fmax + 1] = -1
        else:
            fmax -= 1
        d = fmax
        while d >= fmin:
            tlo = fd[d - 1]
            thi = fd[d + 1]
            x0 = thi if tlo < thi else tlo + 1
            x = x0
            y = x0 - d
            while x < xlim and y < ylim and xv[x] == yv[y]:
                x += 1
                y += 1
            if x - x0 > SNAKE_LIMIT:
                big_snake = True
            fd[d] = x
            if odd and bmin <= d <= bmax and bd[d] <= x:
                return x, y, True, True
            d -= 2
        if bmin > dmin:
            bmin -= 1
            bd[bmin - 1] = OFFSET_MAX
        else:
            bmin += 1
        if bmax < dmax:
            bmax += 1
            bd[bmax + 1] = OFFSET_MAX
        else:
            bmax -= 1
        d = bmax
        while d >= bmin:
            tlo = bd[d - 1]
            thi = bd[d + 1]
            x0 = tlo if tlo < thi else thi - 1
            x = x0
            y = x0 - d
            while xoff < x and yoff < y and xv[x - 1] == yv[y - 1]:
                x -= 1
                y -= 1
            if x0 - x > SNAKE_LIMIT:
                big_snake = True
            bd[d] = x
            if not odd and fmin <= d <= fmax and x <= fd[d]:
                return x, y, True, True
            d -= 2
        if find_minimal:
            continue
        if 200 < c and big_snake and c_.heuristic:
            best = 0
            part = None
            d = fmax
            while d >= fmin:
                dd = d - fmid
                x = fd[d]
                y = x - d
                v = (x - xoff) * 2 - dd
                if v > 12 * (c + abs(dd)):
                    if v > best and xoff + SNAKE_LIMIT <= x < xlim and yoff + SNAKE_LIMIT <= y < ylim:
                        k = 1
                        while xv[x - k] == yv[y - k]:
                            if k == SNAKE_LIMIT:
                                best = v
                                part = (x, y)
                                break
                            k += 1
                d -= 2
            if best > 0:
                return part[0], part[1], True, False  # type: ignore[index]
            best = 0
            d = bmax
            while d >= bmin:
                dd = d - bmid
                x = bd[d]
                y = x - d
                v = (xlim - x) * 2 + dd
                if v > 12 * (c + abs(dd)):
                    if v > best and xoff < x <= xlim - SNAKE_LIMIT and yoff < y <= ylim - SNAKE_LIMIT:
                        k = 0
                        while xv[x + k] == yv[y + k]:
                            if k == SNAKE_LIMIT - 1:
                                best = v
                                part = (x, y)
                                break
                            k += 1
                d -= 2
            if best > 0:
                return part[0], part[1], False, True  # type: ignore[index]
        if c >= c_.too_expensive:
            fxybest = -1
            fxbest = 0
            d = fmax
            while d >= fmin:
                x = min(fd[d], xlim)
                y = x - d
                if ylim < y:
                    x = ylim + d
                    y = ylim
                if fxybest < x + y:
                    fxybest = x + y
                    fxbest = x
                d -= 2
            bxybest = OFFSET_MAX
            bxbest = 0
            d = bmax
            while d >= bmin:
                x = max(xoff, bd[d])
                y = x - d
                if y < yoff:
                    x = yoff + d
                    y = yoff
                if x + y < bxybest:
                    bxybest = x + y
                    bxbest = x
                d -= 2
            if (xlim + ylim) - bxybest < fxybest - (xoff + yoff):
                return fxbest, fxybest - fxbest, True, False
            return bxbest, bxybest - bxbest, False, True


def _compareseq(xoff: int, xlim: int, yoff: int, ylim: int, find_minimal: bool, c_: _Ctx) -> None:
    # iterative over the second recursive call to keep Python's stack shallow
    stack = [(xoff, xlim, yoff, ylim, find_minimal)]
    xv, yv = c_.xv, c_.yv
    while stack:
        xoff, xlim, yoff, ylim, find_minimal = stack.pop()
        while xoff < xlim and yoff < ylim and xv[xoff] == yv[yoff]:
            xoff += 1
            yoff += 1
        while xoff < xlim and yoff < ylim and xv[xlim - 1] == yv[ylim - 1]:
            xlim -= 1
            ylim -= 1
        if xoff == xlim:
            for y in range(yoff, ylim):
                c_.ychanged[c_.yreal[y]] = 1
        elif yoff == ylim:
            for x in range(xoff, xlim):
                c_.xchanged[c_.xreal[x]] = 1
        else:
            xmid, ymid, lo_min, hi_min = _diag(xoff, xlim, yoff, ylim, find_minimal, c_)
            # process the low half first (as GNU's recursion does)
            stack.append((xmid, xlim, ymid, ylim, hi_min))
            stack.append((xoff, xmid, yoff, ymid, lo_min))


class _OffsetList(list):
    """A list indexed by diagonals, which may be negative: base offset added."""


def _discard_confusing(equivs: list[list[int]], changed: list[list[int]], minimal: bool,
                       nequiv: int) -> tuple[list[list[int]], list[list[int]]]:
    counts = [[0] * (nequiv + 1), [0] * (nequiv + 1)]
    for f in (0, 1):
        cf = counts[f]
        for e in equivs[f]:
            cf[e] += 1
    discarded = [[0] * len(equivs[0]), [0] * len(equivs[1])]
    for f in (0, 1):
        end = len(equivs[f])
        disc = discarded[f]
        cnt = counts[1 - f]
        eq = equivs[f]
        many = 5
        tem = end // 64
        while True:
            tem >>= 2
            if tem <= 0:
                break
            many *= 2
        for i in range(end):
            if eq[i] == 0:
                continue
            nmatch = cnt[eq[i]]
            if nmatch == 0:
                disc[i] = 1
            elif nmatch > many:
                disc[i] = 2
    for f in (0, 1):
        end = len(equivs[f])
        disc = discarded[f]
        i = 0
        while i < end:
            if disc[i] == 2:
                disc[i] = 0
            elif disc[i] != 0:
                provisional = 0
                j = i
                while j < end:
                    if disc[j] == 0:
                        break
                    if disc[j] == 2:
                        provisional += 1
                    j += 1
                while j > i and disc[j - 1] == 2:
                    j -= 1
                    disc[j] = 0
                    provisional -= 1
                length = j - i
                if provisional * 4 > length:
                    while j > i:
                        j -= 1
                        if disc[j] == 2:
                            disc[j] = 0
                else:
                    minimum = 1
                    tem = length >> 2
                    while True:
                        tem >>= 2
                        if tem <= 0:
                            break
                        minimum <<= 1
                    minimum += 1
                    j = 0
                    consec = 0
                    while j < length:
                        if disc[i + j] != 2:
                            consec = 0
                        else:
                            consec += 1
                            if minimum == consec:
                                j -= consec
                            elif minimum < consec:
                                disc[i + j] = 0
                        j += 1
                    j = 0
                    consec = 0
                    while j < length:
                        if j >= 8 and disc[i + j] == 1:
                            break
                        if disc[i + j] == 2:
                            consec = 0
                            disc[i + j] = 0
                        elif disc[i + j] == 0:
                            consec = 0
                        else:
                            consec += 1
                        if consec == 3:
                            break
                        j += 1
                    i += length - 1
                    j = 0
                    consec = 0
                    while j < length:
                        if j >= 8 and disc[i - j] == 1:
                            break
                        if disc[i - j] == 2:
                            consec = 0
                            disc[i - j] = 0
                        elif disc[i - j] == 0:
                            consec = 0
                        else:
                            consec += 1
                        if consec == 3:
                            break
                        j += 1
            i += 1
    undiscarded: list[list[int]] = [[], []]
    realindexes: list[list[int]] = [[], []]
    for f in (0, 1):
        disc = discarded[f]
        eq = equivs[f]
        ch = changed[f]
        for i in range(len(eq)):
            if minimal or disc[i] == 0:
                undiscarded[f].append(eq[i])
                realindexes[f].append(i)
            else:
                ch[i + 1] = 1
    return undiscarded, realindexes


def _shift_boundaries(equivs: list[list[int]], changed: list[list[int]]) -> None:
    # changed[f] has a sentinel 0 at index 0 and at the end: line i is changed[f][i + 1]
    for f in (0, 1):
        ch = changed[f]
        oc = changed[1 - f]
        eq = equivs[f]
        i = 0
        j = 0
        i_end = len(eq)
        while True:
            while i < i_end and not ch[i + 1]:
                while oc[j + 1]:
                    j += 1
                j += 1
                i += 1
            if i == i_end:
                break
            start = i
            i += 1
            while ch[i + 1]:
                i += 1
            while oc[j + 1]:
                j += 1
            while True:
                runlength = i - start
                while start and eq[start - 1] == eq[i - 1]:
                    start -= 1
                    ch[start + 1] = 1
                    i -= 1
                    ch[i + 1] = 0
                    while ch[start - 1 + 1]:
                        start -= 1
                    j -= 1
                    while oc[j + 1]:
                        j -= 1
                corresponding = i if oc[j - 1 + 1] else i_end
                while i != i_end and eq[start] == eq[i]:
                    ch[start + 1] = 0
                    start += 1
                    ch[i + 1] = 1
                    i += 1
                    while ch[i + 1]:
                        i += 1
                    j += 1
                    while oc[j + 1]:
                        corresponding = i
                        j += 1
                if runlength == i - start:
                    break
            while corresponding < i:
                start -= 1
                ch[start + 1] = 1
                i -= 1
                ch[i + 1] = 0
                j -= 1
                while oc[j + 1]:
                    j -= 1


def compute_changes(keys0: list, keys1: list, raw0: list[bytes], raw1: list[bytes], *,
                    horizon: int = 0, minimal: bool = False, budget=None,  # noqa: ANN001
                    speed_large_files: bool = False) -> list[tuple[int, int, int, int]]:
    """GNU diff's edit script: [(line0, line1, deleted, inserted)] in file order (0-based)."""
    n0, n1 = len(raw0), len(raw1)
    # identical prefix/suffix (raw bytes, like find_identical_ends), minus the horizon
    p = 0
    while p < n0 and p < n1 and raw0[p] == raw1[p]:
        p += 1
    s = 0
    while s < n0 - p and s < n1 - p and raw0[n0 - 1 - s] == raw1[n1 - 1 - s]:
        s += 1
    start = p - min(horizon, p)
    send = s - min(horizon, s)
    e0 = n0 - send
    e1 = n1 - send
    # equivalence classes (from 1)
    classes: dict = {}
    eqv: list[list[int]] = [[], []]
    for f, (keys, a, b) in enumerate(((keys0, start, e0), (keys1, start, e1))):
        out = eqv[f]
        for i in range(a, b):
            k = keys[i]
            c = classes.get(k)
            if c is None:
                c = len(classes) + 1
                classes[k] = c
            out.append(c)
    changed = [[0] * (len(eqv[0]) + 2), [0] * (len(eqv[1]) + 2)]
    und, real = _discard_confusing(eqv, changed, minimal, len(classes))
    c_ = _Ctx()
    c_.xv, c_.yv = und
    c_.xreal = [r + 1 for r in real[0]]
    c_.yreal = [r + 1 for r in real[1]]
    c_.xchanged, c_.ychanged = changed
    nx, ny = len(und[0]), len(und[1])
    diags = nx + ny + 3
    # diagonal-indexed arrays: use dicts keyed by diagonal (they may be negative)
    c_.fd = {}
    c_.bd = {}
    c_.heuristic = speed_large_files
    too = 1
    while diags != 0:
        too <<= 1
        diags >>= 2
    c_.too_expensive = max(4096, too)
    c_.budget = budget
    c_.steps = 0
    _compareseq(0, nx, 0, ny, minimal, c_)
    _shift_boundaries(eqv, changed)
    # build the script (forward order)
    ch0, ch1 = changed
    b0, b1 = len(eqv[0]), len(eqv[1])
    script = []
    i0 = i1 = 0
    while i0 < b0 or i1 < b1:
        if ch0[i0 + 1] or ch1[i1 + 1]:
            l0, l1 = i0, i1
            while ch0[i0 + 1]:
                i0 += 1
            while ch1[i1 + 1]:
                i1 += 1
            script.append((l0 + start, l1 + start, i0 - l0, i1 - l1))
        i0 += 1
        i1 += 1
    return script


# -- diff front end ---------------------------------------------------------------------

@dataclasses.dataclass
class _DOpts:
    style: str = "normal"  # normal unified context brief ed
    context: int = 3
    icase: bool = False
    ign_all_space: bool = False
    ign_space_change: bool = False
    ign_blank_lines: bool = False
    ign_trailing_space: bool = False
    ign_tab_expansion: bool = False
    strip_cr: bool = False
    recursive: bool = False
    new_file: bool = False
    unidirectional_new_file: bool = False
    labels: list = dataclasses.field(default_factory=list)
    text: bool = False
    report_identical: bool = False
    minimal: bool = False
    speed_large: bool = False
    expand_tabs: bool = False
    initial_tab: bool = False
    excludes: list = dataclasses.field(default_factory=list)
    ignore_matching: list = dataclasses.field(default_factory=list)
    no_dereference: bool = False
    brief_dirs: bool = True
    width: int = 130
    left_column: bool = False
    suppress_common: bool = False


class _DiffRun:
    def __init__(self, ctx: CommandContext, o: _DOpts, argv_flags: list[str]) -> None:
        self.ctx = ctx
        self.o = o
        self.out = ctx.stdout
        self.status = 0
        self.argv_flags = argv_flags
        self.utf8 = utf8_locale(ctx.env)

    def err(self, msg: str) -> None:
        self.ctx.error(msg)
        self.status = 2

    def key(self, line: bytes):  # noqa: ANN201
        o = self.o
        k = line
        nl = k.endswith(b"\n")
        if nl:
            k = k[:-1]
        if o.strip_cr and k.endswith(b"\r"):
            k = k[:-1]
        if o.ign_all_space:
            k = _WS.sub(b"", k)
        elif o.ign_space_change:
            # a run of white space counts as one blank; trailing white space is ignored
            k = _WS.sub(b" ", k).rstrip(b" ")
        elif o.ign_trailing_space:
            k = k.rstrip(b" \t\r\f\v")
        elif o.ign_tab_expansion:
            k = k.expandtabs(8)
        if o.icase:
            k = k.lower()
        return (k, nl)

    def fmt_time(self, st) -> str:  # noqa: ANN001
        tz = self.ctx.env.get("TZ", "")
        t = st.st_mtime
        try:
            if tz and tz not in ("UTC", "UTC0", ":UTC", "GMT"):
                from zoneinfo import ZoneInfo
                dt = datetime.fromtimestamp(t, ZoneInfo(tz.lstrip(":")))
            else:
                dt = datetime.fromtimestamp(t, timezone.utc)
        except Exception:  # noqa: BLE001 - unknown zone: UTC like glibc
            dt = datetime.fromtimestamp(t, timezone.utc)
        ns = int(round((t - int(t)) * 1e9)) % 1000000000
        off = dt.utcoffset() or timedelta(0)
        mins = int(off.total_seconds() // 60)
        sign = "+" if mins >= 0 else "-"
        mins = abs(mins)
        return dt.strftime("%Y-%m-%d %H:%M:%S") + f".{ns:09d} {sign}{mins // 60:02d}{mins % 60:02d}"

    def read(self, name: str, path: str | None) -> bytes | None:
        if path is None:
            return b""
        if name == "-":
            return self.ctx.stdin.read()
        with self.ctx.fs.open(path, "rb") as fh:
            return fh.read()

    def compare_files(self, name0: str, name1: str, p0: str | None, p1: str | None,
                      st0, st1, header: str | None = None) -> int:  # noqa: ANN001
        """Compare two regular files (None path = absent with -N). Returns 0/1/2."""
        o = self.o
        try:
            d0 = self.read(name0, p0)
            d1 = self.read(name1, p1)
        except OSError as e:
            self.err(f"{e.filename or name0}: {e.strerror}")
            return 2
        assert d0 is not None and d1 is not None
        if d0 == d1 and (p0 is not None) == (p1 is not None) and o.style != "side":
            if o.report_identical:
                self.out.write(f"Files {name0} and {name1} are identical\n".encode("utf-8", "surrogateescape"))
            return 0
        binary = not o.text and (b"\0" in d0[:65536] or b"\0" in d1[:65536])
        if o.style == "brief" or binary:
            if d0 == d1:
                return 0
            if header is not None and not binary:
                pass
            if binary:
                self.out.write(f"Binary files {name0} and {name1} differ\n".encode("utf-8", "surrogateescape"))
            else:
                self.out.write(f"Files {name0} and {name1} differ\n".encode("utf-8", "surrogateescape"))
            return 1
        lines0 = d0.splitlines(keepends=True)
        lines1 = d1.splitlines(keepends=True)
        # splitlines splits on \r, \v, \f too: split on \n only
        lines0 = _split_nl(d0)
        lines1 = _split_nl(d1)
        if o.icase or o.ign_all_space or o.ign_space_change or o.ign_trailing_space or o.ign_tab_expansion or o.strip_cr:
            k0 = [self.key(x) for x in lines0]
            k1 = [self.key(x) for x in lines1]
        else:
            k0, k1 = lines0, lines1
        horizon = o.context if o.style in ("unified", "context") else 0
        script = compute_changes(k0, k1, lines0, lines1, horizon=horizon, minimal=o.minimal,
                                 budget=self.ctx.budget, speed_large_files=o.speed_large)
        if not script and o.style == "side":
            self.print_side(script, [], lines0, lines1)
            if o.report_identical:
                self.out.write(f"Files {name0} and {name1} are identical\n".encode("utf-8", "surrogateescape"))
            return 0
        if not script:
            if o.report_identical:
                self.out.write(f"Files {name0} and {name1} are identical\n".encode("utf-8", "surrogateescape"))
            return 0
        ignore = [False] * len(script)
        if o.ign_blank_lines or o.ignore_matching:
            for idx, (l0, l1, dl, il) in enumerate(script):
                ignore[idx] = all(self.ignorable(x) for x in lines0[l0:l0 + dl]) and \
                    all(self.ignorable(x) for x in lines1[l1:l1 + il])
            if all(ignore):
                return 0
        if header is not None:
            self.out.write(header.encode("utf-8", "surrogateescape"))
        if o.style == "normal":
            self.print_normal(script, ignore, lines0, lines1)
        elif o.style == "side":
            self.print_side(script, ignore, lines0, lines1)
        elif o.style == "ed":
            self.print_ed(script, ignore, lines1)
        else:
            self.print_context(script, ignore, lines0, lines1, name0, name1, st0, st1)
        return 1

    def ignorable(self, line: bytes) -> bool:
        s = line.rstrip(b"\n")
        if self.o.ign_blank_lines and (s == b"" or (s.strip() == b"" and (self.o.ign_all_space or self.o.ign_space_change or self.o.ign_trailing_space))):
            return True
        if self.o.ignore_matching:
            from ._regex import compile_posix, to_text
            t = to_text(s, self.utf8)
            for pat in self.o.ignore_matching:
                rx = compile_posix(pat, extended=False, utf8=self.utf8)
                if rx.fast.search(t) is not None:
                    return True
        return False

    def line_out(self, prefix: bytes, line: bytes) -> None:
        o = self.o
        if o.expand_tabs:
            line = line.expandtabs(8)
        if o.initial_tab and prefix.strip():
            prefix = prefix.rstrip(b" ") + b"\t"
        elif o.initial_tab:
            prefix = prefix.rstrip(b" ") + b"\t" if prefix else prefix
        if line.endswith(b"\n"):
            self.out.write(prefix + line)
        else:
            self.out.write(prefix + line + b"\n\\ No newline at end of file\n")

    def print_normal(self, script, ignore, lines0, lines1) -> None:  # noqa: ANN001
        for (l0, l1, dl, il), ign in zip(script, ignore):
            if ign:
                continue
            r0 = _range(l0 + 1, l0 + dl) if dl else str(l0)
            r1 = _range(l1 + 1, l1 + il) if il else str(l1)
            op = "c" if dl and il else ("d" if dl else "a")
            self.out.write(f"{r0}{op}{r1}\n".encode())
            for x in lines0[l0:l0 + dl]:
                self.line_out(b"< ", x)
            if dl and il:
                self.out.write(b"---\n")
            for x in lines1[l1:l1 + il]:
                self.line_out(b"> ", x)

    def print_ed(self, script, ignore, lines1) -> None:  # noqa: ANN001
        """-e: an ed script, last hunk first."""
        for (l0, l1, dl, il), ign in reversed(list(zip(script, ignore))):
            if ign:
                continue
            r0 = _range(l0 + 1, l0 + dl) if dl else str(l0)
            op = "c" if dl and il else ("d" if dl else "a")
            self.out.write(f"{r0}{op}\n".encode())
            if il:
                for x in lines1[l1:l1 + il]:
                    self.out.write(x if x.endswith(b"\n") else x + b"\n")
                self.out.write(b".\n")

    def print_side(self, script, ignore, lines0, lines1) -> None:  # noqa: ANN001
        """-y: GNU diff's side.c columns (tab stops of 8, gutter in the middle)."""
        o = self.o
        w = o.width
        t = 1 if o.expand_tabs else 8
        off = (w + t + 3) // (2 * t) * t
        hw = max(0, min(off - 3, w - off))
        c2o = off if hw else w
        out: list[bytes] = []

        def tab_to(col: int, to: int) -> int:
            if not o.expand_tabs:
                tab = col + 8 - col % 8
                while tab <= to:
                    out.append(b"\t")
                    col = tab
                    tab += 8
            if col < to:
                out.append(b" " * (to - col))
            return to

        def half(line: bytes, indent: int) -> int:
            inp = outp = 0
            text = line.decode("utf-8", "surrogateescape") if self.utf8 else line.decode("latin-1")
            enc = (lambda c: c.encode("utf-8", "surrogateescape")) if self.utf8 else (lambda c: c.encode("latin-1"))
            for ch in text:
                if ch == "\n":
                    break
                if ch == "\t":
                    spaces = 8 - inp % 8
                    if inp == outp:
                        stop = outp + spaces
                        if o.expand_tabs:
                            stop = min(stop, hw)
                            out.append(b" " * max(0, stop - outp))
                            outp = max(outp, stop)
                        elif stop < hw:
                            outp = stop
                            out.append(b"\t")
                    inp += spaces
                elif ch == "\r":
                    out.append(b"\r")
                    tab_to(0, indent)
                    inp = outp = 0
                elif ch == "\b":
                    if inp and inp - 1 < hw:
                        inp -= 1
                        if outp <= inp:
                            out.append(b" " * (inp - outp))
                            outp = inp
                        else:
                            outp = inp
                            out.append(b"\b")
                else:
                    if inp < hw:
                        out.append(enc(ch))
                        outp = inp + 1
                    inp += 1
            return outp

        def one(left: bytes | None, sep: str, right: bytes | None) -> None:
            col = 0
            nl = False
            if left is not None:
                nl = left.endswith(b"\n")
                col = half(left, 0)
            if sep != " ":
                col = tab_to(col, (hw + c2o - 1) // 2) + 1
                if sep == "|" and right is not None and nl != right.endswith(b"\n"):
                    sep = "/" if nl else "\\"
                out.append(sep.encode())
            if right is not None:
                nl = nl or right.endswith(b"\n")
                if right[:1] != b"\n":
                    col = tab_to(col, c2o)
                    half(right, col)
            if nl:
                out.append(b"\n")

        def common(a: int, b: int, j: int) -> None:
            if o.suppress_common:
                return
            for k in range(a, b):
                if o.left_column:
                    one(lines0[k], "(", None)
                else:
                    one(lines0[k], " ", lines1[j + k - a])

        p0 = p1 = 0
        for (l0, l1, dl, il), ign in zip(script, ignore):
            common(p0, l0, p1)
            if ign:
                common(l0, l0 + dl, l1) if dl == il else None
            else:
                n = min(dl, il)
                for k in range(n):
                    one(lines0[l0 + k], "|", lines1[l1 + k])
                for k in range(n, il):
                    one(None, ">", lines1[l1 + k])
                for k in range(n, dl):
                    one(lines0[l0 + k], "<", None)
            p0, p1 = l0 + dl, l1 + il
            if len(out) > 4096:
                self.out.write(b"".join(out))
                out.clear()
        common(p0, len(lines0), p1)
        self.out.write(b"".join(out))

    def header_line(self, mark: str, name: str, st, label: str | None) -> bytes:  # noqa: ANN001
        if label is not None:
            return f"{mark} {label}\n".encode("utf-8", "surrogateescape")
        ts = self.fmt_time(st) if st is not None else "1970-01-01 00:00:00.000000000 +0000"
        return f"{mark} {name}\t{ts}\n".encode("utf-8", "surrogateescape")

    def print_context(self, script, ignore, lines0, lines1, name0, name1, st0, st1) -> None:  # noqa: ANN001
        o = self.o
        ctxn = o.context
        uni = o.style == "unified"
        labels = o.labels + [None, None]
        if uni:
            self.out.write(self.header_line("---", name0, st0, labels[0]))
            self.out.write(self.header_line("+++", name1, st1, labels[1]))
        else:
            self.out.write(self.header_line("***", name0, st0, labels[0]))
            self.out.write(self.header_line("---", name1, st1, labels[1]))
        n0, n1 = len(lines0), len(lines1)
        # group changes into hunks (find_hunk)
        i = 0
        ns = len(script)
        while i < ns:
            j = i
            while j + 1 < ns:
                top0 = script[j][0] + script[j][2]
                nxt = script[j + 1]
                thresh = ctxn if ignore[j + 1] else 2 * ctxn + 1
                if nxt[0] - top0 < thresh:
                    j += 1
                else:
                    break
            hunk = script[i:j + 1]
            hign = ignore[i:j + 1]
            i = j + 1
            if all(hign):
                continue
            f0 = hunk[0][0]
            f1 = hunk[0][1]
            last = hunk[-1]
            e0 = last[0] + last[2]  # exclusive
            e1 = last[1] + last[3]
            a0 = max(0, f0 - ctxn)
            a1 = max(0, f1 - ctxn)
            b0 = min(n0, e0 + ctxn)
            b1 = min(n1, e1 + ctxn)
            if uni:
                self.out.write(f"@@ -{_urange(a0 + 1, b0)} +{_urange(a1 + 1, b1)} @@\n".encode())
                pos0 = a0
                for (l0, l1, dl, il) in hunk:
                    for x in lines0[pos0:l0]:
                        self.line_out(b" ", x)
                    for x in lines0[l0:l0 + dl]:
                        self.line_out(b"-", x)
                    for x in lines1[l1:l1 + il]:
                        self.line_out(b"+", x)
                    pos0 = l0 + dl
                for x in lines0[pos0:b0]:
                    self.line_out(b" ", x)
            else:
                self.out.write(b"***************\n")
                self.out.write(f"*** {_crange(a0 + 1, b0)} ****\n".encode())
                if any(dl for (_, _, dl, _) in hunk):
                    pos0 = a0
                    for (l0, l1, dl, il) in hunk:
                        for x in lines0[pos0:l0]:
                            self.line_out(b"  ", x)
                        mark = b"! " if il else b"- "
                        for x in lines0[l0:l0 + dl]:
                            self.line_out(mark, x)
                        pos0 = l0 + dl
                    for x in lines0[pos0:b0]:
                        self.line_out(b"  ", x)
                self.out.write(f"--- {_crange(a1 + 1, b1)} ----\n".encode())
                if any(il for (_, _, _, il) in hunk):
                    pos1 = a1
                    for (l0, l1, dl, il) in hunk:
                        for x in lines1[pos1:l1]:
                            self.line_out(b"  ", x)
                        mark = b"! " if dl else b"+ "
                        for x in lines1[l1:l1 + il]:
                            self.line_out(mark, x)
                        pos1 = l1 + il
                    for x in lines1[pos1:b1]:
                        self.line_out(b"  ", x)

    # -- files and directories -------------------------------------------------------------
    def stat(self, name: str):  # noqa: ANN201
        if name == "-":
            return None
        if name == "":
            raise FileNotFoundError(2, "No such file or directory", name)
        return self.ctx.fs.stat(self.ctx.path(name))

    def diff_paths(self, n0: str, n1: str, top: bool) -> int:
        ctx = self.ctx
        o = self.o
        st0 = st1 = None
        miss0 = miss1 = False
        try:
            st0 = self.stat(n0)
        except OSError as e:
            if top or not o.new_file:
                if not (o.new_file or o.unidirectional_new_file) or not top:
                    self.err(f"{n0}: {e.strerror}")
                    if top:  # GNU checks both operands before giving up
                        try:
                            self.stat(n1)
                        except OSError as e1:
                            self.err(f"{n1}: {e1.strerror}")
                    return 2
            miss0 = True
        try:
            st1 = self.stat(n1)
        except OSError as e:
            if not o.new_file:
                self.err(f"{n1}: {e.strerror}")
                return 2
            miss1 = True
        if miss0 and miss1:
            self.err(f"{n0}: No such file or directory")
            self.err(f"{n1}: No such file or directory")
            return 2
        if miss0 and o.unidirectional_new_file is False and not o.new_file:
            return 2
        d0 = st0 is not None and _stat.S_ISDIR(st0.st_mode)
        d1 = st1 is not None and _stat.S_ISDIR(st1.st_mode)
        if top and d0 and not d1 and not miss1:
            base = n1.rstrip("/").rsplit("/", 1)[-1]
            return self.diff_paths(n0.rstrip("/") + "/" + base, n1, True)
        if top and d1 and not d0 and not miss0:
            base = n0.rstrip("/").rsplit("/", 1)[-1]
            return self.diff_paths(n0, n1.rstrip("/") + "/" + base, True)
        if d0 and d1:
            if (st0.st_dev, st0.st_ino) == (st1.st_dev, st1.st_ino):  # type: ignore[union-attr]
                return 0  # GNU: one physical directory is identical to itself, silently
            return self.diff_dirs(n0, n1)
        if (d0 or d1) and not top:
            k0 = "directory" if d0 else "regular file" if not miss0 else ""
            k1 = "directory" if d1 else "regular file"
            if miss0 or miss1:
                return self.diff_dirs(n0, n1) if (d0 or d1) else 0
            if d0:
                k1 = _kind(st1)
            else:
                k0 = _kind(st0)
            self.out.write(f"File {n0} is a {k0} while file {n1} is a {k1}\n".encode("utf-8", "surrogateescape"))
            return 1
        header = None
        if not top:
            flags = " ".join(self.argv_flags)
            header = f"diff {flags + ' ' if flags else ''}{n0} {n1}\n"
            if o.style == "brief":
                header = None
        p0 = None if miss0 else (ctx.path(n0) if n0 != "-" else "-")
        p1 = None if miss1 else (ctx.path(n1) if n1 != "-" else "-")
        if n0 == "-" and n1 == "-":
            return 0
        return self.compare_files(n0, n1, p0, p1, st0, st1, header)

    def diff_dirs(self, n0: str, n1: str) -> int:
        """Compare two directories; subdirectories via an explicit stack of generators."""
        stack = [self._dir_gen(n0, n1)]
        result = None
        while stack:
            try:
                req = stack[-1].send(result)
            except StopIteration as si:
                stack.pop()
                result = si.value
                continue
            result = None
            stack.append(self._dir_gen(*req))
        return result  # type: ignore[return-value]

    def _dir_gen(self, n0: str, n1: str):  # noqa: ANN202
        ctx = self.ctx
        o = self.o
        fs = ctx.fs

        def names(n: str) -> set[str]:
            try:
                return set(fs.listdir(ctx.path(n)))
            except OSError:
                return set()
        s0, s1 = names(n0), names(n1)
        import fnmatch
        allnames = sorted(x for x in s0 | s1 if not any(fnmatch.fnmatchcase(x, g) for g in o.excludes))
        worst = 0
        for nm in allnames:
            c0 = n0.rstrip("/") + "/" + nm if n0 != "/" else "/" + nm
            c1 = n1.rstrip("/") + "/" + nm if n1 != "/" else "/" + nm
            if nm not in s1 and not o.new_file:
                self.out.write(f"Only in {n0}: {nm}\n".encode("utf-8", "surrogateescape"))
                worst = max(worst, 1)
                continue
            if nm not in s0 and not (o.new_file or o.unidirectional_new_file):
                self.out.write(f"Only in {n1}: {nm}\n".encode("utf-8", "surrogateescape"))
                worst = max(worst, 1)
                continue
            try:
                st0 = fs.stat(ctx.path(c0)) if nm in s0 else None
                st1 = fs.stat(ctx.path(c1)) if nm in s1 else None
            except OSError as e:
                self.err(f"{c0}: {e.strerror}")
                worst = 2
                continue
            isd0 = st0 is not None and _stat.S_ISDIR(st0.st_mode)
            isd1 = st1 is not None and _stat.S_ISDIR(st1.st_mode)
            if isd0 and isd1 or (isd0 and st1 is None) or (isd1 and st0 is None):
                if not o.recursive:
                    if st0 is not None and st1 is not None:
                        self.out.write(f"Common subdirectories: {c0} and {c1}\n".encode("utf-8", "surrogateescape"))
                    else:
                        where = n0 if st0 is not None else n1
                        self.out.write(f"Only in {where}: {nm}\n".encode("utf-8", "surrogateescape"))
                        worst = max(worst, 1)
                    continue
                r = yield (c0, c1)
            elif isd0 != isd1 and st0 is not None and st1 is not None:
                k0 = "directory" if isd0 else _kind(st0)
                k1 = "directory" if isd1 else _kind(st1)
                self.out.write(f"File {c0} is a {k0} while file {c1} is a {k1}\n".encode("utf-8", "surrogateescape"))
                r = 1
            else:
                flags = " ".join(self.argv_flags)
                h0, h1 = (o.labels + [c0, c1])[:2] if len(o.labels) >= 2 else (o.labels[0] if o.labels else c0, c1)
                header = f"diff {flags + ' ' if flags else ''}{h0} {h1}\n"
                if o.style == "brief":
                    header = None
                r = self.compare_files(c0, c1, ctx.path(c0) if st0 is not None else None,
                                       ctx.path(c1) if st1 is not None else None, st0, st1, header)
            worst = max(worst, r)
        return worst


def _kind(st) -> str:  # noqa: ANN001
    if st is None:
        return "nonexistent file"
    m = st.st_mode
    if _stat.S_ISDIR(m):
        return "directory"
    if _stat.S_ISLNK(m):
        return "symbolic link"
    if _stat.S_ISFIFO(m):
        return "fifo"
    if _stat.S_ISREG(m):
        return "regular empty file" if st.st_size == 0 else "regular file"
    return "special file"


def _split_nl(d: bytes) -> list[bytes]:
    if not d:
        return []
    parts = d.split(b"\n")
    out = [p + b"\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def _range(a: int, b: int) -> str:
    return str(a) if a == b else f"{a},{b}"


def _urange(a: int, b: int) -> str:
    # unified: "start,count"; a one-line range is just "start"; an empty one "before,0"
    if b < a:
        return f"{b},0"
    if a == b:
        return str(a)
    return f"{a},{b - a + 1}"


def _crange(a: int, b: int) -> str:
    if b <= a:
        return str(b)
    return f"{a},{b}"


DIFF_USAGE = "diff [OPTION]... FILES"


def _diff_usage(ctx: CommandContext, msg: str) -> int:
    """diff's usage error: ``diff: msg``, the prefixed Try-help line, status 2."""
    ctx.error(msg)
    ctx.stderr.write(f"{ctx.name}: Try '{ctx.name} --help' for more information.\n".encode())
    return 2


@command("diff", usage=DIFF_USAGE)
def diff(ctx: CommandContext, argv: list[str]) -> int:
    ctx = as_invoked(ctx, "diff")
    try:
        opts, operands = _parse(
            ctx, argv, "abBcC:dD:eEfF:hHiI:lL:nNpPqrsS:tTuU:vwW:x:X:yZ",
            {"text": "a", "ignore-space-change": "b", "ignore-blank-lines": "B", "context": "C::",
             "minimal": "d", "ed": "e", "ignore-tab-expansion": "E", "speed-large-files": "H",
             "ignore-case": "i", "ignore-matching-lines": "I", "label": "L", "new-file": "N",
             "unidirectional-new-file": "P", "brief": "q", "recursive": "r",
             "report-identical-files": "s", "expand-tabs": "t", "initial-tab": "T",
             "unified": "U::", "ignore-all-space": "w", "exclude": "x", "exclude-from": "X",
             "ignore-trailing-space": "Z", "strip-trailing-cr": None, "normal": None,
             "color": "color::", "no-dereference": None, "side-by-side": "y",
             "show-c-function": "p", "new-group-format": "ngf:", "help": None, "version": "v",
             "width": "W", "left-column": None, "suppress-common-lines": None})
    except OptError as e:
        return e.status
    o = _DOpts()
    flags: list[str] = []
    i = 1
    # GNU's "diff -r a/x b/x" header repeats the options as given, before the operands
    while i < len(argv):
        a = argv[i]
        if a == "--":
            break
        if a.startswith("-") and a != "-":
            flags.append(a)
            if (a in ("-C", "-U", "-L", "-I", "-x", "-X", "-F", "-D", "-S", "-W")
                    or a in ("--label", "--exclude", "--exclude-from", "--ignore-matching-lines",
                             "--show-function-line", "--starting-file")) and i + 1 < len(argv):
                flags.append(argv[i + 1])
                i += 1
        i += 1
    for k, _ in opts:
        if k == "help":
            ctx.stdout.write(DIFF_HELP)
            return 0
        if k == "v":
            ctx.stdout.write(DIFF_VERSION)
            return 0
    conflict = False
    styles = {"c": "context", "C": "context", "u": "unified", "U": "unified", "normal": "normal",
              "e": "ed", "y": "side"}
    seen_style: str | None = None
    for k, v in opts:
        if k in styles:
            if seen_style is not None and seen_style != styles[k]:
                conflict = True
            seen_style = styles[k]
        if k == "a":
            o.text = True
        elif k == "b":
            o.ign_space_change = True
        elif k == "B":
            o.ign_blank_lines = True
        elif k == "c":
            o.style, o.context = "context", 3
        elif k == "C":
            o.style = "context"
            o.context = _ctxnum(ctx, v)
            if o.context < 0:
                return 2
        elif k == "u":
            o.style, o.context = "unified", 3
        elif k == "U":
            o.style = "unified"
            o.context = _ctxnum(ctx, v)
            if o.context < 0:
                return 2
        elif k == "d":
            o.minimal = True
        elif k == "E":
            o.ign_tab_expansion = True
        elif k == "H":
            o.speed_large = True
        elif k == "i":
            o.icase = True
        elif k == "I":
            o.ignore_matching.append(v)
        elif k == "L":
            o.labels.append(v)
        elif k == "N":
            o.new_file = True
        elif k == "P":
            o.unidirectional_new_file = True
        elif k == "q":
            o.style = "brief"
        elif k == "r":
            o.recursive = True
        elif k == "s":
            o.report_identical = True
        elif k == "t":
            o.expand_tabs = True
        elif k == "T":
            o.initial_tab = True
        elif k == "w":
            o.ign_all_space = True
        elif k == "x":
            o.excludes.append(v)
        elif k == "Z":
            o.ign_trailing_space = True
        elif k == "strip-trailing-cr":
            o.strip_cr = True
        elif k == "normal":
            o.style = "normal"
        elif k in ("e", "y"):
            o.style = styles[k]
        elif k == "W":
            try:
                o.width = int(v or "")
                if o.width <= 0:
                    raise ValueError
            except ValueError:
                return _diff_usage(ctx, f"invalid width '{v}'")
        elif k == "left-column":
            o.left_column = True
        elif k == "suppress-common-lines":
            o.suppress_common = True
        elif k in ("D", "ngf"):
            ctx.error(f"option -{k} is not supported here" if len(k) == 1 else f"option --{k} is not supported here")
            return 2
    if conflict:
        return _diff_usage(ctx, "conflicting output style options")
    if len(operands) < 2:
        return _diff_usage(ctx, f"missing operand after '{_last_arg(argv, operands)}'")
    if len(operands) > 2:
        return _diff_usage(ctx, f"extra operand '{operands[2]}'")
    run = _DiffRun(ctx, o, flags)
    r = run.diff_paths(operands[0], operands[1], True)
    return max(r, run.status) if run.status == 2 else r


def _ctxnum(ctx: CommandContext, v: str | None) -> int:
    if v is None:
        return 3
    try:
        n = int(v)
        if n < 0:
            raise ValueError
        return n
    except ValueError:
        ctx.error(f"invalid context length '{v}'")
        ctx.stderr.write(f"{ctx.name}: Try '{ctx.name} --help' for more information.\n".encode())
        return -1


# -- cmp ------------------------------------------------------------------------------------

@command("cmp", usage="cmp [OPTION]... FILE1 [FILE2 [SKIP1 [SKIP2]]]")
def cmp(ctx: CommandContext, argv: list[str]) -> int:
    ctx = as_invoked(ctx, "cmp")
    try:
        opts, operands = _parse(ctx, argv, "bi:ln:sv",
                                {"print-bytes": "b", "ignore-initial": "i", "verbose": "l",
                                 "bytes": "n", "quiet": "s", "silent": "s", "help": None, "version": "v"})
    except OptError as e:
        return e.status
    for k, _ in opts:
        if k == "help":
            ctx.stdout.write(CMP_HELP)
            return 0
        if k == "v":
            ctx.stdout.write(CMP_VERSION)
            return 0
    print_bytes = verbose = quiet = False
    limit: int | None = None
    skip = [0, 0]
    for k, v in opts:
        if k == "b":
            print_bytes = True
        elif k == "l":
            verbose = True
        elif k == "s":
            quiet = True
        elif k == "n":
            limit = _cmp_num(v or "")
            if limit is None:
                ctx.error(f"invalid --bytes value '{v}'")
                ctx.stderr.write(f"{ctx.name}: Try '{ctx.name} --help' for more information.\n".encode())
                return 2
        elif k == "i":
            a, _, b = (v or "").partition(":")
            sk = [_cmp_num(a), _cmp_num(b or a)]
            if None in sk:
                ctx.error(f"invalid --ignore-initial value '{v}'")
                ctx.stderr.write(f"{ctx.name}: Try '{ctx.name} --help' for more information.\n".encode())
                return 2
            skip = sk  # type: ignore[assignment]
    if verbose and quiet:
        ctx.error("options -l and -s are incompatible")
        ctx.stderr.write(f"{ctx.name}: Try '{ctx.name} --help' for more information.\n".encode())
        return 2
    if not operands:
        ctx.error(f"missing operand after '{_last_arg(argv, operands)}'")
        ctx.stderr.write(f"{ctx.name}: Try '{ctx.name} --help' for more information.\n".encode())
        return 2
    names = [operands[0], operands[1] if len(operands) > 1 else "-"]
    for k in (2, 3):
        if len(operands) > k:
            sv = _cmp_num(operands[k])
            if sv is None:
                ctx.error(f"invalid --ignore-initial value '{operands[k]}'")
                ctx.stderr.write(f"{ctx.name}: Try '{ctx.name} --help' for more information.\n".encode())
                return 2
            skip[k - 2] = sv
    if len(operands) > 4:
        ctx.error(f"extra operand '{operands[4]}'")
        ctx.stderr.write(f"{ctx.name}: Try '{ctx.name} --help' for more information.\n".encode())
        return 2
    datas = []
    for n in names:
        try:
            if n == "":
                raise FileNotFoundError(2, "No such file or directory", n)
            if n == "-":
                datas.append(ctx.stdin.read())
            else:
                p = ctx.path(n)
                if ctx.fs.stat(p).is_dir:
                    if not quiet:
                        ctx.error(f"{n}: Is a directory")
                    return 2
                with ctx.fs.open(p, "rb") as fh:
                    datas.append(fh.read())
        except OSError as e:
            if not quiet:  # -s: only the status tells
                ctx.error(f"{n}: {e.strerror}")
            return 2
    a = datas[0][skip[0]:]
    b = datas[1][skip[1]:]
    if limit is not None:
        a, b = a[:limit], b[:limit]
    out = ctx.stdout
    n = min(len(a), len(b))
    # first difference
    diff_at = -1
    if a[:n] != b[:n]:
        lo, hi = 0, n
        # binary search for the first mismatch on prefixes
        while lo < hi:
            mid = (lo + hi) // 2
            if a[:mid + 1] == b[:mid + 1]:
                lo = mid + 1
            else:
                hi = mid
        diff_at = lo
    status = 0
    if verbose:
        width = len(str(max(len(a), len(b))))
        found = False
        for i in range(n):
            if a[i] != b[i]:
                found = True
                if print_bytes:
                    out.write(f"{i + 1:>{width}} {a[i]:3o} {_pchar(a[i]):<4} {b[i]:3o} {_pchar(b[i])}\n".encode("utf-8", "surrogateescape"))
                else:
                    out.write(f"{i + 1:>{width}} {a[i]:3o} {b[i]:3o}\n".encode())
        if found:
            status = 1
    elif diff_at >= 0:
        status = 1
        if not quiet:
            line = a[:diff_at].count(b"\n") + 1
            if print_bytes:
                out.write(f"{names[0]} {names[1]} differ: byte {diff_at + 1}, line {line} is {a[diff_at]:3o} {_pchar(a[diff_at])} {b[diff_at]:3o} {_pchar(b[diff_at])}\n".encode("utf-8", "surrogateescape"))
            else:
                out.write(f"{names[0]} {names[1]} differ: byte {diff_at + 1}, line {line}\n".encode("utf-8", "surrogateescape"))
        return 1
    if len(a) != len(b):
        short = 0 if len(a) < len(b) else 1
        if not quiet:
            sd = (a, b)[short]
            if sd:
                nls = sd.count(b"\n")
                if verbose:
                    extra = f"after byte {len(sd)}"
                elif sd.endswith(b"\n"):
                    extra = f"after byte {len(sd)}, line {nls}"
                else:
                    extra = f"after byte {len(sd)}, in line {nls + 1}"
                ctx.stderr.write(f"cmp: EOF on {names[short]} {extra}\n".encode("utf-8", "surrogateescape"))
            else:
                ctx.stderr.write(f"cmp: EOF on {names[short]} which is empty\n".encode("utf-8", "surrogateescape"))
        return 1
    return status


def _cmp_num(s: str) -> int | None:
    mult = {"": 1, "k": 1024, "K": 1024, "kB": 1000, "M": 1 << 20, "MB": 10**6, "G": 1 << 30, "GB": 10**9}
    i = 0
    while i < len(s) and s[i].isdigit() and s[i].isascii():
        i += 1
    if i == 0 or s[i:] not in mult:
        return None
    return int(s[:i]) * mult[s[i:]]


def _pchar(c: int) -> str:
    s = ""
    if c >= 128:
        s = "M-"
        c -= 128
    if c < 32:
        return s + "^" + chr(c + 64)
    if c == 127:
        return s + "^?"
    return s + chr(c)


# -- patch ----------------------------------------------------------------------------------

class _PatchError(Exception):
    pass


def _parse_unified(text: bytes) -> list[dict]:
    """Split a unified diff into file patches: {old, new, hunks: [(o_start, o_len, n_start, n_len, lines)]}."""
    lines = _split_nl(text)
    i = 0
    n = len(lines)
    patches: list[dict] = []
    while i < n:
        ln = lines[i]
        if ln.startswith(b"--- ") and i + 1 < n and lines[i + 1].startswith(b"+++ "):
            old = ln[4:].rstrip(b"\n").split(b"\t")[0]
            new = lines[i + 1][4:].rstrip(b"\n").split(b"\t")[0]
            i += 2
            hunks = []
            while i < n and lines[i].startswith(b"@@ "):
                h = lines[i]
                import re as _re
                m = _re.match(rb"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", h)
                if not m:
                    break
                os_, ol = int(m.group(1)), int(m.group(2)) if m.group(2) is not None else 1
                ns, nl = int(m.group(3)), int(m.group(4)) if m.group(4) is not None else 1
                i += 1
                body = []
                co, cn = 0, 0
                while i < n and (co < ol or cn < nl):
                    b = lines[i]
                    if b.startswith(b"\\"):
                        if body:
                            body[-1] = (body[-1][0], body[-1][1].rstrip(b"\n"))
                        i += 1
                        continue
                    tag = b[:1]
                    if tag == b"\n" or b == b"":
                        tag, b = b" ", b" " + b
                    if tag == b" ":
                        co += 1
                        cn += 1
                    elif tag == b"-":
                        co += 1
                    elif tag == b"+":
                        cn += 1
                    else:
                        break
                    body.append((tag, b[1:]))
                    i += 1
                while i < n and lines[i].startswith(b"\\"):
                    if body:
                        body[-1] = (body[-1][0], body[-1][1].rstrip(b"\n"))
                    i += 1
                hunks.append((os_, ol, ns, nl, body))
            patches.append({"old": old, "new": new, "hunks": hunks})
            continue
        i += 1
    return patches


def _parse_normal(text: bytes) -> list[dict]:
    """A normal-format diff ("2c2", "3a4,5", "4,5d3") as one patch with context-free hunks."""
    import re as _re
    lines = _split_nl(text)
    hunks = []
    i = 0
    n = len(lines)
    cmd = _re.compile(rb"(\d+)(?:,(\d+))?([acd])(\d+)(?:,(\d+))?\n?$")
    while i < n:
        m = cmd.match(lines[i])
        if not m:
            i += 1
            continue
        a1 = int(m.group(1))
        a2 = int(m.group(2) or m.group(1))
        op = m.group(3)
        b1 = int(m.group(4))
        b2 = int(m.group(5) or m.group(4))
        i += 1
        body = []
        while i < n and lines[i].startswith((b"< ", b"> ", b"---", b"\\")):
            ln = lines[i]
            if ln.startswith(b"\\"):
                if body:
                    body[-1] = (body[-1][0], body[-1][1].rstrip(b"\n"))
            elif ln.startswith(b"< "):
                body.append((b"-", ln[2:]))
            elif ln.startswith(b"> "):
                body.append((b"+", ln[2:]))
            i += 1
        ol = 0 if op == b"a" else a2 - a1 + 1
        nl = 0 if op == b"d" else b2 - b1 + 1
        hunks.append((a1, ol, b1, nl, body))
    return [{"old": b"", "new": b"", "hunks": hunks}] if hunks else []


def _best_name(ctx: CommandContext, cands: list[str], cwd: str) -> str:
    """GNU patch: among names that exist, fewest path components, then the shortest
    basename, then the shortest name."""
    from ..vfs.paths import normalize
    existing = [c for c in cands if ctx.fs.exists(normalize(c, cwd))]
    pool = existing or cands
    return min(pool, key=lambda c: (c.count("/"), len(c.rsplit("/", 1)[-1]), len(c)))


def _strip(name: bytes, p: int | None) -> str:
    s = name.decode("utf-8", "surrogateescape")
    if p is None:
        return s.rsplit("/", 1)[-1]
    parts = s.split("/")
    if p >= len(parts):
        return parts[-1]
    return "/".join(parts[p:])


def _apply(lines: list[bytes], hunks: list, reverse: bool) -> tuple[list[bytes], list[tuple[int, int, int]]]:
    """Apply hunks with fuzz-free context matching and offsets; returns (result, results)
    where results are (hunk no, status 0 ok / 1 failed, offset)."""
    out = list(lines)
    delta = 0
    results = []
    for hn, (os_, ol, ns, nl, body) in enumerate(hunks, 1):
        if reverse:
            os_, ol, ns, nl = ns, nl, os_, ol
            body = [({b"-": b"+", b"+": b"-"}.get(t, t), x) for t, x in body]
        old = [x for t, x in body if t in (b" ", b"-")]
        new = [x for t, x in body if t in (b" ", b"+")]
        want = (os_ - 1 if ol else os_) + delta
        pos = None
        for off in range(0, max(len(out), 1) + 1):
            for cand in ((want + off, want - off) if off else (want,)):
                if 0 <= cand <= len(out) - len(old) and out[cand:cand + len(old)] == old:
                    pos = cand
                    break
            if pos is not None:
                break
        if pos is None:
            results.append((hn, 1, 0))
            continue
        out[pos:pos + len(old)] = new
        results.append((hn, 0, pos - want))
        delta += len(new) - len(old)
    return out, results


@command("patch", usage="patch [OPTION]... [ORIGFILE [PATCHFILE]]")
def patch(ctx: CommandContext, argv: list[str]) -> int:
    ctx = as_invoked(ctx, "patch")
    try:
        opts, operands = _parse(ctx, argv, "p:i:Rd:o:NsfEtubv",
                                    {"strip": "p", "input": "i", "reverse": "R", "directory": "d",
                                     "output": "o", "forward": "N", "dry-run": None, "quiet": "s",
                                     "silent": "s", "force": "f", "remove-empty-files": "E",
                                     "batch": "t", "unified": "u", "backup": "b", "help": None,
                                     "version": "v"})
    except OptError as e:
        return e.status
    for k, _ in opts:
        if k == "help":
            ctx.stdout.write(PATCH_HELP)
            return 0
        if k == "v":
            ctx.stdout.write(PATCH_VERSION)
            return 0
    strip: int | None = None
    inp: str | None = None
    reverse = dry = quiet = forward = remove_empty = backup = False
    cwd = ctx.cwd
    output: str | None = None
    for k, v in opts:
        if k == "p":
            strip = int(v or "0")
        elif k == "i":
            inp = v
        elif k == "R":
            reverse = True
        elif k == "dry-run":
            dry = True
        elif k == "s":
            quiet = True
        elif k == "N":
            forward = True
        elif k == "d":
            cwd = ctx.path(v or ".")
        elif k == "o":
            output = v
        elif k == "E":
            remove_empty = True
        elif k == "b":
            backup = True
    if len(operands) > 2 or (len(operands) > 1 and inp is not None):
        extra = operands[2] if len(operands) > 2 else operands[1]
        ctx.error(f"{extra}: extra operand")
        ctx.stderr.write(b"patch: Try 'patch --help' for more information.\n")
        return 2
    if len(operands) > 1 and inp is None:
        inp = operands[1]
    target = operands[0] if operands else None
    try:
        if inp is None or inp == "-":
            data = ctx.stdin.read()
        else:
            with ctx.fs.open(ctx.path(inp), "rb") as fh:
                data = fh.read()
    except OSError as e:
        ctx.stderr.write(f"patch: **** Can't open patch file {inp} : {e.strerror}\n".encode("utf-8", "surrogateescape"))
        return 2
    if not data.strip():
        return 0
    patches = _parse_unified(data)
    if not patches and target is not None:
        patches = _parse_normal(data)
    if not patches:
        if not data.endswith(b"\n"):
            ctx.stdout.write(b"patch unexpectedly ends in middle of line\n")
        ctx.stderr.write(b"patch: **** Only garbage was found in the patch input.\n")
        return 2
    out = ctx.stdout
    status = 0
    from ..vfs.paths import normalize
    for pt in patches:
        old_name = pt["old"]
        new_name = pt["new"]
        if target is not None:
            name = target
        else:
            cands = []
            for nm in (old_name, new_name):
                if nm == b"/dev/null":
                    continue
                cands.append(_strip(nm, strip))
            name = _best_name(ctx, cands, cwd) if cands else _strip(new_name, strip)
        path = normalize(name, cwd)
        creating = old_name == b"/dev/null" if not reverse else new_name == b"/dev/null"
        deleting = new_name == b"/dev/null" if not reverse else old_name == b"/dev/null"
        try:
            with ctx.fs.open(path, "rb") as fh:
                cur = fh.read()
            exists = True
        except OSError:
            cur = b""
            exists = False
            if not creating and not pt["hunks"][0][1] == 0:
                if not quiet:
                    out.write(f"can't find file to patch at input line 3\n".encode())
                ctx.stderr.write(f"patch: **** Can't find file {name} : No such file or directory\n".encode())
                return 2
        verb = "checking" if dry else "patching"
        if not quiet:
            out.write(f"{verb} file {name}\n".encode("utf-8", "surrogateescape"))
        lines = _split_nl(cur)
        result, results = _apply(lines, pt["hunks"], reverse)
        failed = [r for r in results if r[1]]
        if failed and not reverse and not forward:
            # maybe the patch is already applied: try it reversed
            r2, res2 = _apply(lines, pt["hunks"], True)
            if not any(r[1] for r in res2):
                if not quiet:
                    out.write(b"Reversed (or previously applied) patch detected!  Assume -R? [n] \n")
                    out.write(b"Apply anyway? [n] \n")
                    out.write(f"Skipping patch.\n{len(results)} out of {len(results)} hunk{'s' if len(results) != 1 else ''} ignored -- saving rejects to file {name}.rej\n".encode())
                status = 1
                if not dry:
                    try:
                        with ctx.fs.open(path + ".rej", "wb") as fh:
                            fh.write(_reject_text(pt, [r[0] for r in results]))
                    except OSError:
                        pass
                continue
        if failed and forward:
            r2, res2 = _apply(lines, pt["hunks"], True)
            if not any(r[1] for r in res2):
                if not quiet:
                    out.write(b"Reversed (or previously applied) patch detected!  Skipping patch.\n")
                    out.write(f"{len(results)} out of {len(results)} hunk{'s' if len(results) != 1 else ''} ignored -- saving rejects to file {name}.rej\n".encode())
                status = 1
                continue
        for hn, st, off in results:
            if st:
                if not quiet:
                    out.write(f"Hunk #{hn} FAILED at {pt['hunks'][hn - 1][0]}.\n".encode())
            elif off and not quiet:
                ln = abs(off)
                out.write(f"Hunk #{hn} succeeded at {pt['hunks'][hn - 1][0] + off} (offset {off} line{'s' if off != 1 else ''}).\n".encode())
        if failed:
            if not quiet:
                out.write(f"{len(failed)} out of {len(results)} hunk{'s' if len(results) != 1 else ''} FAILED -- saving rejects to file {name}.rej\n".encode())
            status = 1
            if not dry:
                rej = _reject_text(pt, [r[0] for r in failed])
                try:
                    with ctx.fs.open(path + ".rej", "wb") as fh:
                        fh.write(rej)
                except OSError:
                    pass
        if dry:
            continue
        newdata = b"".join(result)
        dest = ctx.path(output) if output else path
        try:
            # GNU's default --backup-if-mismatch: keep FILE.orig when a hunk moved or failed
            mismatch = any(st or off for _, st, off in results)
            if (backup or mismatch) and exists:
                with ctx.fs.open(path + ".orig", "wb") as fh:
                    fh.write(cur)
            if (deleting or (remove_empty and not newdata)) and not output:
                if exists:
                    ctx.fs.unlink(path)
                continue
            mode = ctx.fs.stat(path).st_mode & 0o7777 if exists else 0o666 & ~ctx.umask
            parent = dest.rsplit("/", 1)[0] or "/"
            if not ctx.fs.exists(parent):
                _mkdirs(ctx, parent)
            with ctx.fs.open(dest, "wb") as fh:
                fh.write(newdata)
            try:
                ctx.fs.chmod(dest, mode)
            except OSError:
                pass
        except OSError as e:
            ctx.error(f"{name}: {e.strerror}")
            status = 2
    return status


def _mkdirs(ctx: CommandContext, d: str) -> None:
    parts = d.strip("/").split("/")
    cur = ""
    for p in parts:
        cur += "/" + p
        if not ctx.fs.exists(cur):
            ctx.fs.mkdir(cur)


def _reject_text(pt: dict, failed: list[int]) -> bytes:
    out = [b"--- " + pt["old"] + b"\n", b"+++ " + pt["new"] + b"\n"]
    for hn in failed:
        os_, ol, ns, nl, body = pt["hunks"][hn - 1]
        out.append(f"@@ -{_urange(os_, os_ + ol - 1) if ol else f'{os_},0'} +{_urange(ns, ns + nl - 1) if nl else f'{ns},0'} @@\n".encode())
        for t, x in body:
            out.append(t + x if x.endswith(b"\n") else t + x + b"\n\\ No newline at end of file\n")
    return b"".join(out)


_ = (os, time, BinaryIO)


# -- --help / --version texts of the GNU tools on the reference machine --------------------

DIFF_HELP = b"Usage: diff [OPTION]... FILES\nCompare FILES line by line.\n\nMandatory arguments to long options are mandatory for short options too.\n      --normal                  output a normal diff (the default)\n  -q, --brief                   report only when files differ\n  -s, --report-identical-files  report when two files are the same\n  -c, -C NUM, --context[=NUM]   output NUM (default 3) lines of copied context\n  -u, -U NUM, --unified[=NUM]   output NUM (default 3) lines of unified context\n  -e, --ed                      output an ed script\n  -n, --rcs                     output an RCS format diff\n  -y, --side-by-side            output in two columns\n  -W, --width=NUM               output at most NUM (default 130) print columns\n      --left-column             output only the left column of common lines\n      --suppress-common-lines   do not output common lines\n\n  -p, --show-c-function         show which C function each change is in\n  -F, --show-function-line=RE   show the most recent line matching RE\n      --label LABEL             use LABEL instead of file name and timestamp\n                                  (can be repeated)\n\n  -t, --expand-tabs             expand tabs to spaces in output\n  -T, --initial-tab             make tabs line up by prepending a tab\n      --tabsize=NUM             tab stops every NUM (default 8) print columns\n      --suppress-blank-empty    suppress space or tab before empty output lines\n  -l, --paginate                pass output through 'pr' to paginate it\n\n  -r, --recursive                 recursively compare any subdirectories found\n      --no-dereference            don't follow symbolic links\n  -N, --new-file                  treat absent files as empty\n      --unidirectional-new-file   treat absent first files as empty\n      --ignore-file-name-case     ignore case when comparing file names\n      --no-ignore-file-name-case  consider case when comparing file names\n  -x, --exclude=PAT               exclude files that match PAT\n  -X, --exclude-from=FILE         exclude files that match any pattern in FILE\n  -S, --starting-file=FILE        start with FILE when comparing directories\n      --from-file=FILE1           compare FILE1 to all operands;\n                                    FILE1 can be a directory\n      --to-file=FILE2             compare all operands to FILE2;\n                                    FILE2 can be a directory\n\n  -i, --ignore-case               ignore case differences in file contents\n  -E, --ignore-tab-expansion      ignore changes due to tab expansion\n  -Z, --ignore-trailing-space     ignore white space at line end\n  -b, --ignore-space-change       ignore changes in the amount of white space\n  -w, --ignore-all-space          ignore all white space\n  -B, --ignore-blank-lines        ignore changes where lines are all blank\n  -I, --ignore-matching-lines=RE  ignore changes where all lines match RE\n\n  -a, --text                      treat all files as text\n      --strip-trailing-cr         strip trailing carriage return on input\n\n  -D, --ifdef=NAME                output merged file with '#ifdef NAME' diffs\n      --GTYPE-group-format=GFMT   format GTYPE input groups with GFMT\n      --line-format=LFMT          format all input lines with LFMT\n      --LTYPE-line-format=LFMT    format LTYPE input lines with LFMT\n    These format options provide fine-grained control over the output\n      of diff, generalizing -D/--ifdef.\n    LTYPE is 'old', 'new', or 'unchanged'.  GTYPE is LTYPE or 'changed'.\n    GFMT (only) may contain:\n      %<  lines from FILE1\n      %>  lines from FILE2\n      %=  lines common to FILE1 and FILE2\n      %[-][WIDTH][.[PREC]]{doxX}LETTER  printf-style spec for LETTER\n        LETTERs are as follows for new group, lower case for old group:\n          F  first line number\n          L  last line number\n          N  number of lines = L-F+1\n          E  F-1\n          M  L+1\n      %(A=B?T:E)  if A equals B then T else E\n    LFMT (only) may contain:\n      %L  contents of line\n      %l  contents of line, excluding any trailing newline\n      %[-][WIDTH][.[PREC]]{doxX}n  printf-style spec for input line number\n    Both GFMT and LFMT may contain:\n      %%  %\n      %c'C'  the single character C\n      %c'\\OOO'  the character with octal code OOO\n      C    the character C (other characters represent themselves)\n\n  -d, --minimal            try hard to find a smaller set of changes\n      --horizon-lines=NUM  keep NUM lines of the common prefix and suffix\n      --speed-large-files  assume large files and many scattered small changes\n      --color[=WHEN]       color output; WHEN is 'never', 'always', or 'auto';\n                             plain --color means --color='auto'\n      --palette=PALETTE    the colors to use when --color is active; PALETTE is\n                             a colon-separated list of terminfo capabilities\n\n      --help               display this help and exit\n  -v, --version            output version information and exit\n\nFILES are 'FILE1 FILE2' or 'DIR1 DIR2' or 'DIR FILE' or 'FILE DIR'.\nIf --from-file or --to-file is given, there are no restrictions on FILE(s).\nIf a FILE is '-', read standard input.\nExit status is 0 if inputs are the same, 1 if different, 2 if trouble.\n\nReport bugs to: bug-diffutils@gnu.org\nGNU diffutils home page: <https://www.gnu.org/software/diffutils/>\nGeneral help using GNU software: <https://www.gnu.org/gethelp/>\n"

DIFF_VERSION = b'diff (GNU diffutils) 3.8\nCopyright (C) 2021 Free Software Foundation, Inc.\nLicense GPLv3+: GNU GPL version 3 or later <https://gnu.org/licenses/gpl.html>.\nThis is free software: you are free to change and redistribute it.\nThere is NO WARRANTY, to the extent permitted by law.\n\nWritten by Paul Eggert, Mike Haertel, David Hayes,\nRichard Stallman, and Len Tower.\n'

CMP_HELP = b"Usage: cmp [OPTION]... FILE1 [FILE2 [SKIP1 [SKIP2]]]\nCompare two files byte by byte.\n\nThe optional SKIP1 and SKIP2 specify the number of bytes to skip\nat the beginning of each file (zero by default).\n\nMandatory arguments to long options are mandatory for short options too.\n  -b, --print-bytes          print differing bytes\n  -i, --ignore-initial=SKIP         skip first SKIP bytes of both inputs\n  -i, --ignore-initial=SKIP1:SKIP2  skip first SKIP1 bytes of FILE1 and\n                                      first SKIP2 bytes of FILE2\n  -l, --verbose              output byte numbers and differing byte values\n  -n, --bytes=LIMIT          compare at most LIMIT bytes\n  -s, --quiet, --silent      suppress all normal output\n      --help                 display this help and exit\n  -v, --version              output version information and exit\n\nSKIP values may be followed by the following multiplicative suffixes:\nkB 1000, K 1024, MB 1,000,000, M 1,048,576,\nGB 1,000,000,000, G 1,073,741,824, and so on for T, P, E, Z, Y.\n\nIf a FILE is '-' or missing, read standard input.\nExit status is 0 if inputs are the same, 1 if different, 2 if trouble.\n\nReport bugs to: bug-diffutils@gnu.org\nGNU diffutils home page: <https://www.gnu.org/software/diffutils/>\nGeneral help using GNU software: <https://www.gnu.org/gethelp/>\n"

CMP_VERSION = b'cmp (GNU diffutils) 3.8\nCopyright (C) 2021 Free Software Foundation, Inc.\nLicense GPLv3+: GNU GPL version 3 or later <https://gnu.org/licenses/gpl.html>.\nThis is free software: you are free to change and redistribute it.\nThere is NO WARRANTY, to the extent permitted by law.\n\nWritten by Torbj\xc3\xb6rn Granlund and David MacKenzie.\n'

PATCH_HELP = b"Usage: patch [OPTION]... [ORIGFILE [PATCHFILE]]\n\nInput options:\n\n  -p NUM  --strip=NUM  Strip NUM leading components from file names.\n  -F LINES  --fuzz LINES  Set the fuzz factor to LINES for inexact matching.\n  -l  --ignore-whitespace  Ignore white space changes between patch and input.\n\n  -c  --context  Interpret the patch as a context difference.\n  -e  --ed  Interpret the patch as an ed script.\n  -n  --normal  Interpret the patch as a normal difference.\n  -u  --unified  Interpret the patch as a unified difference.\n\n  -N  --forward  Ignore patches that appear to be reversed or already applied.\n  -R  --reverse  Assume patches were created with old and new files swapped.\n\n  -i PATCHFILE  --input=PATCHFILE  Read patch from PATCHFILE instead of stdin.\n\nOutput options:\n\n  -o FILE  --output=FILE  Output patched files to FILE.\n  -r FILE  --reject-file=FILE  Output rejects to FILE.\n\n  -D NAME  --ifdef=NAME  Make merged if-then-else output using NAME.\n  --merge  Merge using conflict markers instead of creating reject files.\n  -E  --remove-empty-files  Remove output files that are empty after patching.\n\n  -Z  --set-utc  Set times of patched files, assuming diff uses UTC (GMT).\n  -T  --set-time  Likewise, assuming local time.\n\n  --quoting-style=WORD   output file names using quoting style WORD.\n    Valid WORDs are: literal, shell, shell-always, c, escape.\n    Default is taken from QUOTING_STYLE env variable, or 'shell' if unset.\n\nBackup and version control options:\n\n  -b  --backup  Back up the original contents of each file.\n  --backup-if-mismatch  Back up if the patch does not match exactly.\n  --no-backup-if-mismatch  Back up mismatches only if otherwise requested.\n\n  -V STYLE  --version-control=STYLE  Use STYLE version control.\n\tSTYLE is either 'simple', 'numbered', or 'existing'.\n  -B PREFIX  --prefix=PREFIX  Prepend PREFIX to backup file names.\n  -Y PREFIX  --basename-prefix=PREFIX  Prepend PREFIX to backup file basenames.\n  -z SUFFIX  --suffix=SUFFIX  Append SUFFIX to backup file names.\n\n  -g NUM  --get=NUM  Get files from RCS etc. if positive; ask if negative.\n\nMiscellaneous options:\n\n  -t  --batch  Ask no questions; skip bad-Prereq patches; assume reversed.\n  -f  --force  Like -t, but ignore bad-Prereq patches, and assume unreversed.\n  -s  --quiet  --silent  Work silently unless an error occurs.\n  --verbose  Output extra information about the work being done.\n  --dry-run  Do not actually change any files; just print what would happen.\n  --posix  Conform to the POSIX standard.\n\n  -d DIR  --directory=DIR  Change the working directory to DIR first.\n  --reject-format=FORMAT  Create 'context' or 'unified' rejects.\n  --binary  Read and write data in binary mode.\n  --read-only=BEHAVIOR  How to handle read-only input files: 'ignore' that they\n                        are read-only, 'warn' (default), or 'fail'.\n\n  -v  --version  Output version info.\n  --help  Output this help.\n\nReport bugs to <bug-patch@gnu.org>.\n"

PATCH_VERSION = b'GNU patch 2.7.6\nCopyright (C) 2003, 2009-2012 Free Software Foundation, Inc.\nCopyright (C) 1988 Larry Wall\n\nLicense GPLv3+: GNU GPL version 3 or later <http://gnu.org/licenses/gpl.html>.\nThis is free software: you are free to change and redistribute it.\nThere is NO WARRANTY, to the extent permitted by law.\n\nWritten by Larry Wall and Paul Eggert\n'
