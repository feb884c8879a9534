"""ls, stat, du, df, tree and file over the VFS, formatted like GNU coreutils (and tree/file)."""

from __future__ import annotations

import os
import stat as S
import time
from dataclasses import dataclass
from typing import Any

from ._args import argmatch, stdio, OptError, parse_opts, quote, quoteaf, quotef, try_help
from .base import CommandContext, command, strerror
from .fileutils import _gname, _lstat, _perm_str, _stat, _uname
from .findcmd import glob_to_regex
from ..vfs.base import StatResult

SIX_MONTHS = 31556952 // 2


def _blocks(st: StatResult) -> int:
    """512-byte blocks like a 4 KiB-block filesystem would allocate (the VFS has no st_blocks)."""
    b = getattr(st, "st_blocks", None)
    if b is not None:
        return b
    if S.S_ISLNK(st.st_mode) or st.st_size == 0 and not S.S_ISDIR(st.st_mode):
        return 0
    if not (S.S_ISREG(st.st_mode) or S.S_ISDIR(st.st_mode)):
        return 0
    return -(-st.st_size // 4096) * 8


def _tz(ctx: CommandContext):  # noqa: ANN202
    from datetime import timezone
    name = ctx.env.get("TZ", "")
    if name and name not in ("UTC", "UTC0", "GMT", ":UTC", "Etc/UTC"):
        try:
            from zoneinfo import ZoneInfo
            return ZoneInfo(name.lstrip(":"))
        except Exception:  # noqa: BLE001 - unknown zone: GNU falls back to UTC
            return timezone.utc
    return timezone.utc


def _dt(ctx: CommandContext, ts: float):  # noqa: ANN202
    from datetime import datetime
    return datetime.fromtimestamp(ts, _tz(ctx))


def human(n: float, si: bool = False, suffix_b: bool = False) -> str:
    """GNU human_readable with -h rounding (ceiling, one decimal below 10)."""
    base = 1000 if si else 1024
    if n < base:
        return str(int(n))
    units = "KMGTPEZY"
    u = -1
    v = float(n)
    while v >= base and u < len(units) - 1:
        v /= base
        u += 1
    import math
    if v < 10:
        v = math.ceil(v * 10) / 10
        if v >= 10:
            s = f"{int(math.ceil(v))}"
        else:
            s = f"{v:.1f}"
    else:
        v = math.ceil(v)
        if v >= base and u < len(units) - 1:
            v = 1.0
            u += 1
            s = "1.0"
        else:
            s = str(int(v))
    unit = units[u]
    if si and unit == "K":
        unit = "k"
    return s + unit


@dataclass
class _Ent:
    name: str          # as displayed
    path: str          # absolute
    st: StatResult | None
    target: str | None = None
    tst: StatResult | None = None


class _Ls:
    def __init__(self, ctx: CommandContext) -> None:
        self.ctx = ctx
        self.all = self.almost = self.long = self.recursive = self.dirs = False
        self.ignore: list[tuple[str, Any]] = []  # -I/--ignore, -B: (pattern, compiled)
        self.hide: list[tuple[str, Any]] = []  # --hide: void under -a/-A
        self.human = self.si = False
        self.sort = "name"
        self.width = 80  # -w N: the line width for -C/-x/-m
        self.qstyle = "literal"  # -Q / -b / -N / --quoting-style (output is never a tty here)
        self.reverse = False
        self.classify = ""   # "", "F", "p"
        self.fmt = "1"
        self.inode = self.size_blocks = False
        self.numeric = False
        self.no_group = self.no_owner = False
        self.full_time = False
        self.time_style = None
        self.deref = ""
        self.status = 0
        self.first_out = True
        self.zero = False
        self.group_dirs = False
        self.time_kind = "mtime"

    # ---------------------------------------------------------------- helpers
    def ignored(self, name: str) -> bool:
        """GNU's file_ignored(): fnmatch with FNM_PERIOD (a leading dot is matched only by a dot)."""
        pats = self.ignore if (self.all or self.almost) else self.ignore + self.hide
        for pat, rx in pats:
            if name.startswith(".") and not (pat.startswith(".") or pat.startswith("\\.")):
                continue
            if rx.fullmatch(name):
                return True
        return False

    def stat_ent(self, name: str, path: str, follow: bool) -> _Ent | None:
        ctx = self.ctx
        st = _stat(ctx, path) if follow else _lstat(ctx, path)
        if st is None and follow:
            st = _lstat(ctx, path)
        if st is None:
            return None
        e = _Ent(name, path, st)
        if S.S_ISLNK(st.st_mode):
            try:
                e.target = ctx.fs.readlink(path)
            except OSError:
                e.target = None
            e.tst = _stat(ctx, path)
        return e

    def sort_ents(self, ents: list[_Ent]) -> list[_Ent]:
        key_name = lambda e: e.name.encode("utf-8", "surrogateescape")  # noqa: E731 - C.UTF-8 collation = byte order
        if self.sort == "none":
            out = list(ents)
        elif self.sort == "size":
            out = sorted(ents, key=key_name)
            out.sort(key=lambda e: -(e.st.st_size if e.st else 0))
        elif self.sort == "time":
            out = sorted(ents, key=key_name)
            out.sort(key=lambda e: -(self._time(e.st) if e.st else 0))
        elif self.sort == "extension":
            out = sorted(ents, key=lambda e: (self._ext(e.name), key_name(e)))
        elif self.sort == "version":
            from .sortcmd import version_key
            out = sorted(ents, key=lambda e: version_key(key_name(e)))
        else:
            out = sorted(ents, key=key_name)
        if self.reverse and self.sort != "none":
            out.reverse()
        if self.group_dirs:
            out.sort(key=lambda e: 0 if (e.st and (S.S_ISDIR(e.st.st_mode) or (e.tst and S.S_ISDIR(e.tst.st_mode)))) else 1)
        return out

    @staticmethod
    def _ext(name: str) -> bytes:
        # GNU compares strrchr(name, '.'): the extension keeps its dot ("." has ext ".")
        i = name.rfind(".")
        return name[i:].encode("utf-8", "surrogateescape") if i >= 0 else b""

    def _time(self, st: StatResult) -> float:
        return {"atime": st.st_atime, "ctime": st.st_ctime}.get(self.time_kind, st.st_mtime)

    def indicator(self, e: _Ent) -> str:
        if not self.classify or e.st is None:
            return ""
        m = e.st.st_mode
        if S.S_ISDIR(m):
            return "/"
        if self.classify == "p":
            return ""
        if S.S_ISLNK(m):
            return "@" if not self.long else ""
        if S.S_ISFIFO(m):
            return "|"
        if S.S_ISSOCK(m):
            return "="
        if S.S_ISREG(m) and m & 0o111 and self.classify == "F":
            return "*"
        return ""

    def fmt_time(self, ts: float) -> str:
        d = _dt(self.ctx, ts)
        if self.full_time or self.time_style == "full-iso":
            frac = f"{ts:.9f}".split(".")[1]
            return d.strftime("%Y-%m-%d %H:%M:%S.") + frac + " " + d.strftime("%z")
        if self.time_style == "long-iso":
            return d.strftime("%Y-%m-%d %H:%M")
        if self.time_style == "iso":
            now = time.time()
            if now - SIX_MONTHS <= ts <= now:
                return d.strftime("%m-%d %H:%M")
            return d.strftime("%Y-%m-%d ")
        if self.time_style and self.time_style.startswith("+"):
            return d.strftime(self.time_style[1:].split("\n")[0])
        now = time.time()
        mon = d.strftime("%b")
        day = f"{d.day:2d}"
        if now - SIX_MONTHS <= ts <= now + 60:
            return f"{mon} {day} {d.strftime('%H:%M')}"
        return f"{mon} {day}  {d.year}"

    def size_str(self, st: StatResult) -> str:
        m = st.st_mode
        if S.S_ISCHR(m) or S.S_ISBLK(m):
            rdev = getattr(st, "st_rdev", 0)
            return f"{os.major(rdev)}, {os.minor(rdev)}"
        if self.human or self.si:
            return human(st.st_size, self.si)
        return str(st.st_size)

    def blocks_str(self, st: StatResult) -> str:
        kb = -(-_blocks(st) // 2)
        if self.human or self.si:
            return human(kb * 1024, self.si) if kb else "0"
        return str(kb)

    # ---------------------------------------------------------------- output
    def write(self, s: str) -> None:
        self.ctx.stdout.write(s.encode("utf-8", "surrogateescape"))

    def print_list(self, ents: list[_Ent], show_total: bool, width_ents: list[_Ent] | None = None) -> None:
        ctx = self.ctx
        if self.long:
            if show_total:
                tot = sum(_blocks(e.st) for e in ents if e.st)
                kb = -(-tot // 2)
                self.write(f"total {human(kb * 1024, self.si) if (self.human or self.si) and kb else kb}\n")
            rows = []
            for e in ents:
                st = e.st
                assert st is not None
                owner = str(st.st_uid) if self.numeric else _uname(ctx, st.st_uid)
                group = str(st.st_gid) if self.numeric else _gname(ctx, st.st_gid)
                rows.append((e, _perm_str(st.st_mode), str(st.st_nlink), owner, group,
                             self.size_str(st), self.fmt_time(self._time(st))))
            if not rows:
                return
            # GNU sizes the columns over every command-line operand it stat'ed, the
            # directories listed later included (their widths stay in the table)
            wrows = list(rows)
            for e in width_ents or []:
                st = e.st
                if st is None:
                    continue
                wrows.append((e, "", str(st.st_nlink),
                              str(st.st_uid) if self.numeric else _uname(ctx, st.st_uid),
                              str(st.st_gid) if self.numeric else _gname(ctx, st.st_gid),
                              self.size_str(st), ""))
            w_ino = max(len(str(r[0].st.st_ino)) for r in wrows)
            w_blk = max(len(self.blocks_str(r[0].st)) for r in wrows)
            w_n = max(len(r[2]) for r in wrows)
            w_o = max(len(r[3]) for r in wrows)
            w_g = max(len(r[4]) for r in wrows)
            w_s = max(len(r[5]) for r in wrows)
            out = []
            for e, perm, nl, owner, group, size, tm in rows:
                parts = []
                if self.inode:
                    parts.append(str(e.st.st_ino).rjust(w_ino) + " ")
                if self.size_blocks:
                    parts.append(self.blocks_str(e.st).rjust(w_blk) + " ")
                parts.append(f"{perm} {nl.rjust(w_n)} ")
                if not self.no_owner:
                    parts.append(owner.ljust(w_o) + " ")
                if not self.no_group:
                    parts.append(group.ljust(w_g) + " ")
                parts.append(f"{size.rjust(w_s)} {tm} {_quote_name(e.name, self.qstyle)}")
                if e.target is not None:
                    parts.append(" -> " + _quote_name(e.target, self.qstyle))
                    if self.classify == "F" and e.tst is not None:
                        parts.append(_Ls.indicator(self._lin(), _Ent(e.target, "", e.tst)))
                else:
                    parts.append(self.indicator(e))
                out.append("".join(parts) + "\n")
            self.write("".join(out))
            return
        names = []
        w_ino = max((len(str(e.st.st_ino)) for e in ents if e.st), default=0)
        w_blk = max((len(self.blocks_str(e.st)) for e in ents if e.st), default=0)
        for e in ents:
            pre = ""
            if self.inode:
                pre += str(e.st.st_ino if e.st else "?").rjust(w_ino) + " "
            if self.size_blocks:
                pre += (self.blocks_str(e.st) if e.st else "?").rjust(w_blk) + " "
            names.append(pre + _quote_name(e.name, self.qstyle) + self.indicator(e))
        if self.size_blocks and show_total:
            tot = sum(_blocks(e.st) for e in ents if e.st)
            kb = -(-tot // 2)
            self.write(f"total {human(kb * 1024, self.si) if (self.human or self.si) and kb else kb}\n")
        if self.inode or self.size_blocks:
            # right-align the number columns like GNU does in one-per-line mode
            if self.fmt == "1":
                pass
        if self.fmt == "m":
            self.write(_commas(names, self.width))
        elif self.fmt in ("C", "x"):
            self.write(_columns(names, self.width, self.fmt == "x"))
        else:
            end = "\0" if self.zero else "\n"
            self.write("".join(n + end for n in names))

    def _lin(self) -> _Ls:
        o = _Ls(self.ctx)
        o.classify = self.classify
        return o

    def list_dir(self, name: str, path: str, header: bool) -> None:
        ctx = self.ctx
        try:
            names = ctx.fs.listdir(path)
        except OSError as e:
            ctx.error(f"cannot open directory {quoteaf(name)}: {strerror(e)}")
            self.status = 2 if self.first_out and not header else 1
            self.status = 1 if self.status != 2 else 2
            return
        if header:
            if not self.first_out:
                self.write("\n")
            # GNU ls quotes a directory header in the shell and c styles but leaves it
            # unescaped under -b (escape)
            self.write(f"{name if self.qstyle == 'escape' else _quote_name(name, self.qstyle)}:\n")
        self.first_out = False
        ents = []
        if self.all:
            for dot in (".", ".."):
                if self.ignored(dot):
                    continue
                p = path if dot == "." else (path.rsplit("/", 1)[0] or "/")
                st = _lstat(ctx, p)
                if st is not None:
                    ents.append(_Ent(dot, p, st))
        for n in names:
            if n.startswith(".") and not (self.all or self.almost):
                continue
            if (self.ignore or self.hide) and self.ignored(n):
                continue
            p = path.rstrip("/") + "/" + n
            e = self.stat_ent(n, p, self.deref == "L")
            if e is None:
                ctx.error(f"cannot access {quoteaf(name.rstrip('/') + '/' + n)}: No such file or directory")
                self.status = 1
                continue
            ents.append(e)
        ents = self.sort_ents(ents)
        self.print_list(ents, True)
        if self.recursive:
            ctx.budget.check()
            for e in ents:
                if e.name in (".", "..") or e.st is None or not S.S_ISDIR(e.st.st_mode):
                    continue
                sub = (name.rstrip("/") + "/" + e.name) if name != "/" else "/" + e.name
                self.list_dir(sub, e.path, True)


_C_ESC = {"\\": "\\\\", "\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
          "\t": "\\t", "\v": "\\v"}


def _quote_name(name: str, style: str) -> str:
    """A file name in GNU ls's quoting styles (c, escape, shell, shell-always; literal as is)."""
    if style == "literal":
        return name
    if style in ("c", "escape", "c-maybe"):
        out = []
        for ch in name:
            if ch in _C_ESC:
                out.append(_C_ESC[ch])
            elif ch == '"' and style != "escape":
                out.append('\\"')
            elif ch == " " and style == "escape":
                out.append("\\ ")
            elif ord(ch) < 0x20 or ord(ch) == 0x7F or 0xDC80 <= ord(ch) <= 0xDCFF:
                b = ch.encode("utf-8", "surrogateescape")
                out.append("".join(f"\\{x:03o}" for x in b))
            else:
                out.append(ch)
        text = "".join(out)
        if style == "c" or (style == "c-maybe" and text != name):
            return f'"{text}"'
        return text
    # shell styles
    # gnulib quotearg: `=` and `^` are shell specials, `#` and `~` only at the start, `{` and
    # `}` only as the whole name
    safe = name and all(c.isalnum() or c in "%+,-./:@_" or ord(c) > 127
                        or (c in "#~" and i > 0) or (c in "{}" and len(name) > 1)
                        for i, c in enumerate(name))
    if safe and not style.endswith("always"):
        return name
    if "'" in name and '"' not in name and not any(c in name for c in "$`\\!"):
        return f'"{name}"'
    return "'" + name.replace("'", "'\\''") + "'"


def _commas(names: list[str], width: int = 80) -> str:
    out = []
    line = ""
    for i, n in enumerate(names):
        item = n + ("," if i < len(names) - 1 else "")
        if line and len(line) + 1 + len(item) > width - 1 + 1:
            out.append(line)
            line = item
        else:
            line = (line + " " + item) if line else item
    if line:
        out.append(line)
    return "".join(x + "\n" for x in out) if names else ""


def _columns(names: list[str], width: int, across: bool) -> str:
    """GNU ls -C/-x layout for a non-terminal: 80 columns, 2-space gaps, tab stops of 8."""
    n = len(names)
    if n == 0:
        return ""
    lens = [len(x) for x in names]
    best = None
    for cols in range(min(n, max(1, width // 3)), 0, -1):
        rows = -(-n // cols)
        if across:
            colw = [max((lens[r * cols + c] for r in range(rows) if r * cols + c < n), default=0) for c in range(cols)]
        else:
            colw = [max(lens[c * rows:(c + 1) * rows], default=0) for c in range(cols)]
        if any(w == 0 for w in colw):
            continue
        total = sum(w + 2 for w in colw[:-1]) + colw[-1]
        if total < width:
            best = (rows, cols, colw)
            break
    if best is None:
        best = (n, 1, [max(lens)])
    rows, cols, colw = best
    out = []
    for r in range(rows):
        line = ""
        pos = 0
        for c in range(cols):
            i = r * cols + c if across else c * rows + r
            if i >= n:
                break
            target = sum(w + 2 for w in colw[:c])
            if line:
                # GNU's indent(): a tab only when to/8 > (from+1)/8, so a tab never
                # advances just one column
                while pos < target:
                    if target // 8 > (pos + 1) // 8:
                        line += "\t"
                        pos += 8 - pos % 8
                    else:
                        line += " "
                        pos += 1
            line += names[i]
            pos += lens[i]
        out.append(line + "\n")
    return "".join(out)


@command("ls", "dir", "vdir", usage="ls [OPTION]... [FILE]...",
         help="List information about the FILEs (the current directory by default).")
@stdio
def ls(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, ops = parse_opts(ctx, argv, "aAbBcCdfFgGhHiI:klLmnNopqQrRsStuUvw:xX1Z", {
            "all": "a", "almost-all": "A", "escape": "b", "ignore-backups": "B", "directory": "d",
            "classify": "classify::", "file-type": None, "human-readable": "h", "si": None,
            "dereference-command-line": "H", "inode": "i", "kibibytes": "k", "dereference": "L",
            "numeric-uid-gid": "n", "literal": "N", "indicator-style": "indicator-style:",
            "hide-control-chars": "q", "quote-name": "Q", "reverse": "r", "recursive": "R",
            "size": "s", "sort": "sort:", "time": "time:", "width": "w", "color": "color::",
            "colour": "color::", "full-time": None, "time-style": "time-style:",
            "group-directories-first": None, "no-group": "G", "format": "format:",
            "hide": "hide:", "ignore": "ignore:", "show-control-chars": None,
            "quoting-style": "quoting-style:", "zero": None, "author": None,
            "hyperlink": "hyperlink::", "tabsize": "tabsize:", "context": "Z",
            "block-size": "block-size:", "dired": "D"}, status=2)
    except OptError as e:
        return e.status
    lsr = _Ls(ctx)
    if argv[0] == "vdir":
        lsr.long = True
    for k, v in opts:
        if k == "a":
            lsr.all, lsr.almost = True, False
        elif k == "A":
            lsr.almost = not lsr.all
        elif k == "l":
            lsr.long = True
            if lsr.fmt != "1":
                lsr.fmt = "1"
        elif k == "g":
            lsr.long, lsr.no_owner = True, True
        elif k == "o":
            lsr.long, lsr.no_group = True, True
        elif k == "G":
            lsr.no_group = True
        elif k == "n":
            lsr.long, lsr.numeric = True, True
        elif k == "R":
            lsr.recursive = True
        elif k == "d":
            lsr.dirs = True
        elif k == "h":
            lsr.human = True
        elif k == "si":
            lsr.si = True
        elif k == "S":
            lsr.sort = "size"
        elif k == "t":
            lsr.sort = "time"
        elif k == "X":
            lsr.sort = "extension"
        elif k == "v":
            lsr.sort = "version"
        elif k == "U":
            lsr.sort = "none"
        elif k == "f":
            lsr.sort, lsr.all = "none", True
        elif k == "sort":
            got = argmatch(ctx, v, "--sort", [["none"], ["time"], ["size"], ["extension"], ["version"], ["width"]])
            if got is None:
                return 1
            lsr.sort = "name" if got == "width" else got
        elif k == "r":
            lsr.reverse = True
        elif k == "F":
            lsr.classify = "F"
        elif k == "classify":
            lsr.classify = "F" if v in (None, "always", "yes", "force") else ""
        elif k == "p":
            lsr.classify = "p"
        elif k == "file-type":
            lsr.classify = "t"
        elif k == "indicator-style":
            got = argmatch(ctx, v, "--indicator-style", [["none"], ["slash"], ["file-type"], ["classify"]])
            if got is None:
                return 1
            lsr.classify = {"slash": "p", "classify": "F", "file-type": "t"}.get(got, "")
        elif k == "w":
            if not (v or "").isdigit():
                ctx.error(f"invalid line width: {quote(ctx, v or '')}")
                return 2
            lsr.width = int(v or "0") or 10 ** 9  # GNU: -w 0 means no limit
        elif k in ("Q", "b", "N"):
            lsr.qstyle = {"Q": "c", "b": "escape", "N": "literal"}[k]
        elif k == "quoting-style" and v in ("literal", "shell", "shell-always", "shell-escape",
                                            "shell-escape-always", "c", "c-maybe", "escape"):
            lsr.qstyle = v
        elif k == "1":
            lsr.fmt = "1"
        elif k == "C":
            lsr.fmt = "C"
            lsr.long = False
        elif k == "x":
            lsr.fmt = "x"
            lsr.long = False
        elif k == "m":
            lsr.fmt = "m"
            lsr.long = False
        elif k == "format":
            got = argmatch(ctx, v, "--format", [["verbose", "long"], ["commas"], ["horizontal", "across"],
                                                 ["vertical"], ["single-column"]])
            if got is None:
                return 1
            lsr.fmt = {"commas": "m", "horizontal": "x", "vertical": "C", "single-column": "1"}.get(got, "1")
            lsr.long = got == "verbose"
        elif k in ("I", "ignore", "hide", "B"):
            pats = ["*~", ".*~"] if k == "B" else [v or ""]
            (lsr.hide if k == "hide" else lsr.ignore).extend((p, glob_to_regex(p)) for p in pats)
        elif k == "i":
            lsr.inode = True
        elif k == "s":
            lsr.size_blocks = True
        elif k == "L":
            lsr.deref = "L"
        elif k == "H":
            lsr.deref = lsr.deref or "H"
        elif k == "c":
            lsr.time_kind = "ctime"
        elif k == "u":
            lsr.time_kind = "atime"
        elif k == "time":
            got = argmatch(ctx, v, "--time", [["atime", "access", "use"], ["ctime", "status"],
                                               ["birth", "creation"]])
            if got is None:
                return 1
            lsr.time_kind = {"atime": "atime", "ctime": "ctime"}.get(got, "mtime")
        elif k == "full-time":
            lsr.long, lsr.full_time = True, True
        elif k == "time-style":
            lsr.time_style = (v or "").removeprefix("posix-")
        elif k == "group-directories-first":
            lsr.group_dirs = True
        elif k == "zero":
            lsr.zero = True
        elif k == "color" and v is not None:
            if argmatch(ctx, v, "--color", [["always", "yes", "force"], ["never", "no", "none"],
                                             ["auto", "tty", "if-tty"]]) is None:
                return 1
    if lsr.sort == "time" and lsr.long is False and lsr.time_kind != "mtime":
        pass
    ts = lsr.time_style
    if lsr.long and ts is not None and not ts.startswith("+") and ts not in ("full-iso", "long-iso", "iso", "locale"):
        # GNU checks the style only when a long listing would use it
        ctx.error(f"invalid argument {quote(ctx, ts)} for {quote(ctx, 'time style')}")
        ctx.stderr.write(b"Valid arguments are:\n  - [posix-]full-iso\n  - [posix-]long-iso\n  - [posix-]iso\n"
                         b"  - [posix-]locale\n  - +FORMAT (e.g., +%H:%M) for a 'date'-style format\n")
        try_help(ctx)
        return 2
    names = ops or ["."]
    files: list[_Ent] = []
    dirs: list[_Ent] = []
    status = 0
    follow_cmd = lsr.deref in ("L", "H") or (not lsr.long and not lsr.dirs and lsr.classify not in ("F", "t")) \
        or (not lsr.long and lsr.classify in ("F", "t") and False)
    for name in names:
        p = ctx.path(name)
        st = _lstat(ctx, p)
        if st is None:
            ctx.error(f"cannot access {quoteaf(name)}: No such file or directory")
            status = 2
            continue
        if len(name) > 1 and name.endswith("/"):
            tst = _stat(ctx, p)
            if tst is None or not S.S_ISDIR(tst.st_mode):
                ctx.error(f"cannot access {quoteaf(name)}: Not a directory")
                status = 2
                continue
        follow = follow_cmd or name.endswith("/")
        if not lsr.long and not lsr.dirs:
            follow = True
        e = lsr.stat_ent(name, p, follow and not lsr.dirs or lsr.deref in ("L", "H"))
        if e is None:
            continue
        isdir = e.st is not None and S.S_ISDIR(e.st.st_mode)
        if S.S_ISLNK(e.st.st_mode) and not lsr.dirs and not lsr.long and e.tst is not None and S.S_ISDIR(e.tst.st_mode):
            isdir = True
        if isdir and not lsr.dirs:
            dirs.append(e)
        else:
            files.append(e)
    files = lsr.sort_ents(files)
    dirs = lsr.sort_ents(dirs)
    if files:
        lsr.print_list(files, False, dirs)
        lsr.first_out = False
    multi = len(names) > 1 or lsr.recursive
    for e in dirs:
        lsr.list_dir(e.name, e.path, multi)
    if lsr.status:
        status = max(status, lsr.status)
    return status


# -- stat -----------------------------------------------------------------------------------

def _ts_full(ctx: CommandContext, ts: float) -> str:
    d = _dt(ctx, ts)
    ns = int(round((ts - int(ts)) * 1e9)) if ts >= 0 else 0
    if ns >= 1_000_000_000:
        ns = 999_999_999
    return d.strftime("%Y-%m-%d %H:%M:%S.") + f"{ns:09d} " + d.strftime("%z")


def _file_type(st: StatResult) -> str:
    from .fileutils import _kind
    return _kind(st)


def _stat_directive(ctx: CommandContext, c: str, name: str, p: str, st: StatResult, fs_mode: bool) -> str:
    m = st.st_mode
    if c == "n":
        return name
    if c == "N":
        if S.S_ISLNK(m):
            try:
                return f"{quoteaf(name)} -> {quoteaf(ctx.fs.readlink(p))}"
            except OSError:
                pass
        return quoteaf(name)
    if c == "s":
        return str(st.st_size)
    if c == "a":
        return f"{m & 0o7777:o}"
    if c == "A":
        return _perm_str(m)
    if c == "f":
        return f"{m:x}"
    if c == "F":
        return _file_type(st)
    if c == "u":
        return str(st.st_uid)
    if c == "U":
        return _uname(ctx, st.st_uid)
    if c == "g":
        return str(st.st_gid)
    if c == "G":
        return _gname(ctx, st.st_gid)
    if c == "h":
        return str(st.st_nlink)
    if c == "i":
        return str(st.st_ino)
    if c == "b":
        return str(_blocks(st))
    if c == "B":
        return "512"
    if c == "o":
        return "4096"
    if c == "d":
        return str(st.st_dev)
    if c == "D":
        return f"{st.st_dev:x}"
    if c in "tTrR":
        rdev = getattr(st, "st_rdev", 0)
        if c == "r":
            return str(rdev)
        if c == "R":
            return f"{rdev:x}"
        if not (S.S_ISCHR(m) or S.S_ISBLK(m)):
            return "0"
        return f"{os.major(rdev) if c == 't' else os.minor(rdev):x}"
    if c == "x":
        return _ts_full(ctx, st.st_atime)
    if c == "X":
        return str(int(st.st_atime))
    if c == "y":
        return _ts_full(ctx, st.st_mtime)
    if c == "Y":
        return str(int(st.st_mtime))
    if c == "z":
        return _ts_full(ctx, st.st_ctime)
    if c == "Z":
        return str(int(st.st_ctime))
    if c == "w":
        return "-"
    if c == "W":
        return "0"
    if c == "m":
        return "/"
    if c == "C":
        return "?"
    return "?"


_HEX1 = frozenset("0123456789abcdefABCDEF")


class _BadDirective(Exception):
    """stat: a `%` directive GNU rejects (``%9%``, a trailing ``%9``)."""


def _stat_format(ctx: CommandContext, fmt: str, name: str, p: str, st: StatResult, escapes: bool) -> str:
    out = []
    i, n = 0, len(fmt)
    while i < n:
        ch = fmt[i]
        if ch == "\\" and escapes:
            # GNU stat's escapes: \NNN and \xHH are bytes; an unknown one is itself, warned
            if i + 1 >= n:
                ctx.error("warning: backslash at end of format")
                out.append("\\")
                break
            nx = fmt[i + 1]
            esc = {"n": "\n", "t": "\t", "\\": "\\", "a": "\a", "b": "\b", "f": "\f", "r": "\r",
                   "v": "\v", '"': '"', "e": "\x1b"}
            if nx in esc:
                out.append(esc[nx])
                i += 2
                continue
            if nx in "01234567" or nx == "x" and fmt[i + 2:i + 3] in _HEX1:
                if nx == "x":
                    j = i + 3 + (fmt[i + 3:i + 4] in _HEX1)
                    v = int(fmt[i + 2:j], 16)
                else:
                    j = i + 1
                    while j < n and j < i + 4 and fmt[j] in "01234567":
                        j += 1
                    v = int(fmt[i + 1:j], 8) & 0xFF
                out.append(chr(v) if v < 0x80 else chr(0xDC00 + v))  # (a raw byte)
                i = j
                continue
            ctx.error(f"warning: unrecognized escape '\\{nx}'")
            out.append(nx)
            i += 2
            continue
        if ch != "%":
            out.append(ch)
            i += 1
            continue
        j = i + 1
        while j < n and fmt[j] in "-+ #0'":
            j += 1
        while j < n and fmt[j].isdigit():
            j += 1
        if j < n and fmt[j] == ".":
            j += 1
            while j < n and fmt[j].isdigit():
                j += 1
        if j >= n or fmt[j] == "%":
            if j > i + 1:
                # (flags, a width or a precision before `%` or the end: GNU dies)
                raise _BadDirective(fmt[i:j + 1])
            out.append("%")
            i = j + 1
            continue
        c = fmt[j]
        spec = fmt[i + 1:j]
        if c in "HL" and j + 1 < n and fmt[j + 1] in "dr":
            # %Hd %Ld %Hr %Lr: the major/minor number of st_dev or st_rdev, in decimal
            num = st.st_dev if fmt[j + 1] == "d" else getattr(st, "st_rdev", 0)
            if fmt[j + 1] == "r" and not (S.S_ISCHR(st.st_mode) or S.S_ISBLK(st.st_mode)):
                num = 0
            out.append(str(os.major(num) if c == "H" else os.minor(num)))
            i = j + 2
            continue
        else:
            val = _stat_directive(ctx, c, name, p, st, False)
            if c in "XYZ" and "." in spec:
                # %.3Y: seconds with that many digits of the fraction (%.Y: nine)
                ts = {"X": st.st_atime, "Y": st.st_mtime, "Z": st.st_ctime}[c]
                digits = spec.partition(".")[2]
                prec = int(digits) if digits else 9
                if prec:
                    ns = min(int(round((ts - int(ts)) * 1e9)), 999_999_999) if ts >= 0 else 0
                    val += "." + f"{ns:09d}".ljust(prec, "0")[:prec]
                spec = spec.partition(".")[0]
            if spec:
                width_s = spec.lstrip("-+ #0'").split(".")[0]
                w = int(width_s) if width_s else 0
                if "-" in spec:
                    val = val.ljust(w)
                elif "0" in spec[:1] and val.lstrip("-").isdigit():
                    val = val.rjust(w, "0")
                else:
                    val = val.rjust(w)
            out.append(val)
        i = j + 1
    return "".join(out)


@command("stat", usage="stat [OPTION]... FILE...", help="Display file or file system status.")
@stdio
def stat_cmd(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, ops = parse_opts(ctx, argv, "c:fLt", {
            "format": "c", "printf": "printf:", "dereference": "L", "file-system": "f",
            "terse": "t", "cached": "cached:"}, status=1)
    except OptError as e:
        return e.status
    fmt = None
    escapes = False
    follow = terse = False
    for k, v in opts:
        if k == "c":
            fmt, escapes = v or "", False  # (its newline is added after the format's text)
        elif k == "printf":
            fmt, escapes = v or "", True
        elif k == "L":
            follow = True
        elif k == "t":
            terse = True
    if not ops:
        ctx.error("missing operand")
        try_help(ctx)
        return 1
    status = 0
    for name in ops:
        p = ctx.path(name)
        try:
            st = ctx.fs.stat(p, follow_symlinks=follow)
        except OSError as e:
            if any(k == "f" for k, _ in opts):
                ctx.error(f"cannot read file system information for {quoteaf(name)}: {strerror(e)}")
            else:
                ctx.error(f"cannot statx {quoteaf(name)}: {strerror(e)}")
            status = 1
            continue
        if fmt is not None:
            try:
                text = _stat_format(ctx, fmt, name, p, st, escapes) + ("" if escapes else "\n")
            except _BadDirective as e:
                ctx.error(f"{quote(ctx, str(e))}: invalid directive")
                return 1
        elif terse:
            text = _stat_format(ctx, "%n %s %b %f %u %g %D %i %h %t %T %X %Y %Z %W %o\n", name, p, st, False)
        else:
            shown = name
            if S.S_ISLNK(st.st_mode):
                try:
                    shown = f"{name} -> {ctx.fs.readlink(p)}"
                except OSError:
                    pass
            dev = st.st_dev
            text = (f"  File: {shown}\n"
                    f"  Size: {st.st_size:<10}\tBlocks: {_blocks(st):<10} IO Block: 4096   {_file_type(st)}\n"
                    f"Device: {dev >> 8},{dev & 0xFF}\tInode: {st.st_ino:<11} Links: {st.st_nlink}\n"
                    f"Access: ({st.st_mode & 0o7777:04o}/{_perm_str(st.st_mode)})  "
                    f"Uid: ({st.st_uid:5d}/{_uname(ctx, st.st_uid):>8})   Gid: ({st.st_gid:5d}/{_gname(ctx, st.st_gid):>8})\n"
                    f"Access: {_ts_full(ctx, st.st_atime)}\n"
                    f"Modify: {_ts_full(ctx, st.st_mtime)}\n"
                    f"Change: {_ts_full(ctx, st.st_ctime)}\n"
                    f" Birth: -\n")
        ctx.stdout.write(text.encode("utf-8", "surrogateescape"))
    return status


# -- du -------------------------------------------------------------------------------------

@command("du", usage="du [OPTION]... [FILE]...", help="Summarize device usage of the set of FILEs, recursively for directories.")
@stdio
def du(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, ops = parse_opts(ctx, argv, "0abcd:hHklLmsSxB:", {
            "null": "0", "all": "a", "apparent-size": None, "bytes": "b", "total": "c",
            "max-depth": "d", "human-readable": "h", "si": None, "kilobytes": "k",
            "count-links": "l", "dereference": "L", "summarize": "s", "separate-dirs": "S",
            "one-file-system": "x", "block-size": "B", "exclude": "exclude:", "time": "time::",
            "inodes": None, "threshold": "threshold:"}, status=1)
    except OptError as e:
        return e.status
    all_files = total = summarize = hum = si = apparent = separate = False
    unit = 1024
    max_depth = None
    end = "\n"
    excludes: list[str] = []
    for k, v in opts:
        if k == "a":
            all_files = True
        elif k == "c":
            total = True
        elif k == "s":
            summarize = True
        elif k == "h":
            hum = True
        elif k == "si":
            si = True
        elif k == "b":
            apparent, unit = True, 1
        elif k == "apparent-size":
            apparent = True
        elif k == "k":
            unit = 1024
        elif k == "m":
            unit = 1024 * 1024
        elif k == "S":
            separate = True
        elif k == "0":
            end = "\0"
        elif k == "exclude":
            excludes.append(v or "")
        elif k == "B":
            from .textutils import parse_size
            r = parse_size(v or "")
            if r is None or r[1] == 0:
                ctx.error(f"invalid -B argument {quoteaf(v or '')}")  # (xstrtol_fatal: ASCII quotes)
                return 1
            unit = r[1]
        elif k == "d":
            if not (v or "").isdigit():
                ctx.error(f"invalid maximum depth {quote(ctx, v or '')}")
                try_help(ctx)
                return 1
            max_depth = int(v or "0")
    if summarize:
        if max_depth == 0:
            ctx.error("warning: summarizing is the same as using --max-depth=0")
        if max_depth not in (None, 0):
            ctx.error("cannot both summarize and show all entries" if all_files else
                      f"warning: summarizing conflicts with --max-depth={max_depth}")
            try_help(ctx)
            return 1
        max_depth = 0
    if summarize and all_files:
        ctx.error("cannot both summarize and show all entries")
        try_help(ctx)
        return 1
    import fnmatch
    seen: set[tuple[int, int]] = set()
    status = 0
    out: list[str] = []

    def _flush() -> None:
        ctx.stdout.write("".join(out).encode("utf-8", "surrogateescape"))
        out.clear()

    def size_of(st: StatResult) -> int:
        if apparent:
            return st.st_size if not S.S_ISDIR(st.st_mode) or True else 0
        return _blocks(st) * 512

    def show(n: int, name: str) -> None:
        if hum or si:
            s = human(n, si) if n else "0"
        else:
            s = str(-(-n // unit))
        out.append(f"{s}\t{name}{end}")

    def walk(name: str, p: str, depth: int) -> int:
        nonlocal status
        st = _lstat(ctx, p)
        if st is None:
            _flush()  # du's error() flushes what stdout holds first
            ctx.error(f"cannot access {quoteaf(name)}: No such file or directory")
            status = 1
            return 0
        key = (st.st_dev, st.st_ino)
        if st.st_nlink > 1 and not S.S_ISDIR(st.st_mode) and st.st_ino:
            if key in seen:
                return 0
            seen.add(key)
        n = size_of(st)
        if S.S_ISDIR(st.st_mode):
            sub_total = 0
            try:
                kids = sorted(ctx.fs.listdir(p))
            except OSError as e:
                _flush()
                ctx.error(f"cannot read directory {quoteaf(name)}: {strerror(e)}")
                status = 1
                kids = []
            for kname in kids:
                if any(fnmatch.fnmatchcase(kname, x) for x in excludes):
                    continue
                sub = walk(name.rstrip("/") + "/" + kname if name != "/" else "/" + kname,
                           p.rstrip("/") + "/" + kname, depth + 1)
                sub_total += sub
            ctx.budget.check()
            if not separate:
                n += sub_total
            if max_depth is None or depth <= max_depth:
                show(n, name)
            return n if not separate else n + sub_total
        if (all_files and (max_depth is None or depth <= max_depth)) or depth == 0:
            show(n, name)
        return n

    grand = 0
    for name in ops or ["."]:
        grand += walk(name, ctx.path(name), 0)
    if total:
        show(grand, "total")
    ctx.stdout.write("".join(out).encode("utf-8", "surrogateescape"))
    return status


# -- df -------------------------------------------------------------------------------------

_DF_FIELDS = {"source": "Filesystem", "fstype": "Type", "itotal": "Inodes", "iused": "IUsed",
              "iavail": "IFree", "ipcent": "IUse%", "size": "1K-blocks", "used": "Used",
              "avail": "Avail", "pcent": "Use%", "file": "File", "target": "Mounted on"}

# GNU df's least width of each column
_DF_MIN = {"source": 14, "fstype": 4, "itotal": 5, "iused": 5, "iavail": 5, "ipcent": 4, "size": 5,
           "used": 5, "avail": 5, "pcent": 4}


@command("df", usage="df [OPTION]... [FILE]...", help="Show information about the file system on which each FILE resides,\nor all file systems by default.")
@stdio
def df(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, ops = parse_opts(ctx, argv, "ahHiklPTt:x:B:", {
            "all": "a", "human-readable": "h", "si": "H", "inodes": "i", "local": "l",
            "portability": "P", "print-type": "T", "type": "t", "exclude-type": "x",
            "block-size": "B", "output": "output::", "total": None, "sync": None, "no-sync": None}, status=1)
    except OptError as e:
        return e.status
    keys = {k for k, _ in opts}
    fs = ctx.fs
    limit = getattr(fs, "max_bytes", None) or 1024 * 1024 * 1024
    used = getattr(fs, "bytes_used", 0) or 0
    size_k = limit // 1024
    used_k = -(-used // 1024)
    avail_k = max(size_k - used_k, 0)
    pct = f"{-(-used_k * 100 // size_k) if size_k else 0}%"
    outs = [v for k, v in opts if k == "output"]
    if outs:
        # --output=FIELD,...: those columns in that order (all of them without a list)
        if "i" in keys or "P" in keys or "T" in keys:
            other = "-i" if "i" in keys else "-P" if "P" in keys else "-T"
            ctx.error(f"options {other} and --output are mutually exclusive")
            try_help(ctx)
            return 1
        names: list[str] = []
        for v in outs:
            for f in (v.split(",") if v else list(_DF_FIELDS)):
                if f not in _DF_FIELDS:
                    ctx.error(f"option --output: field {quote(ctx, f)} unknown")
                    try_help(ctx)
                    return 1
                if f in names:
                    ctx.error(f"option --output: field {quote(ctx, f)} used more than once")
                    try_help(ctx)
                    return 1
                names.append(f)
        files_limit = getattr(fs, "max_files", None) or 1_000_000
        files_used = getattr(fs, "files_used", 0) or 0
        hum = "h" in keys or "H" in keys
        val = {"source": "sandbox", "fstype": "memfs", "itotal": str(files_limit),
               "iused": str(files_used), "iavail": str(files_limit - files_used),
               "ipcent": f"{-(-files_used * 100 // files_limit)}%",
               "size": human(limit, "H" in keys) if hum else str(size_k),
               "used": (human(used, "H" in keys) if used else "0") if hum else str(used_k),
               "avail": human(avail_k * 1024, "H" in keys) if hum else str(avail_k),
               "pcent": pct, "target": "/"}
        rows = [[_DF_FIELDS[f] if f != "size" or not hum else "Size" for f in names]]
        status = 0
        for t in ops or ["/"]:
            if ops and not fs.exists(ctx.path(t)):
                ctx.error(f"{quotef(t)}: No such file or directory")
                status = 1
                continue
            rows.append([t if f == "file" else val.get(f, "-") for f in names])
        if len(rows) == 1 and ops:
            return status
        widths = [max(max(len(r[i]) for r in rows), _DF_MIN.get(names[i], 0)) for i in range(len(names))]
        lines = []
        for r in rows:
            cells = [c.ljust(w) if f in ("source", "fstype", "file", "target") else c.rjust(w)
                     for c, w, f in zip(r, widths, names)]
            lines.append(" ".join(cells).rstrip() + "\n")
        ctx.stdout.write("".join(lines).encode())
        return status
    if "i" in keys:
        files_limit = getattr(fs, "max_files", None) or 1_000_000
        files_used = getattr(fs, "files_used", 0) or 0
        head = ["Filesystem", "Inodes", "IUsed", "IFree", "IUse%", "Mounted on"]
        row = ["sandbox", str(files_limit), str(files_used), str(files_limit - files_used),
               f"{-(-files_used * 100 // files_limit)}%", "/"]
    elif "h" in keys or "H" in keys:
        si = "H" in keys
        head = ["Filesystem", "Size", "Used", "Avail", "Use%", "Mounted on"]
        row = ["sandbox", human(limit, si), human(used, si) if used else "0", human(avail_k * 1024, si), pct, "/"]
    else:
        head = ["Filesystem", "1K-blocks", "Used", "Available", "Use%", "Mounted on"]
        if "P" in keys:
            head[1], head[4] = "1024-blocks", "Capacity"
        row = ["sandbox", str(size_k), str(used_k), str(avail_k), pct, "/"]
    if "T" in keys:
        head.insert(1, "Type")
        row.insert(1, "memfs")
    rows = [head]
    targets = ops or ["/"]
    status = 0
    for t in targets:
        if ops and not fs.exists(ctx.path(t)):
            ctx.error(f"{quotef(t)}: No such file or directory")
            status = 1
            continue
        rows.append(row)
        if not ops:
            break
    if len(rows) == 1 and ops:
        return status
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = []
    for r in rows:
        cells = []
        for i, c in enumerate(r):
            if i == 0 or (i == len(r) - 1):
                cells.append(c.ljust(widths[i]) if i == 0 else c)
            elif "T" in keys and i == 1:
                cells.append(c.ljust(widths[i]))
            else:
                cells.append(c.rjust(widths[i]))
        lines.append(" ".join(cells).rstrip() + "\n")
    ctx.stdout.write("".join(lines).encode())
    return status


# -- tree -----------------------------------------------------------------------------------

@command("tree", usage="tree [-adfiLIP] [--noreport] [<directory list>]", help="List contents of directories in a tree-like format.")
@stdio
def tree(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, ops = parse_opts(ctx, argv, "adfiL:I:P:Fsph", {
            "noreport": None, "dirsfirst": None, "charset": "charset:", "help": None,
            "version": None}, status=1)
    except OptError as e:
        return e.status
    show_all = dirs_only = full = no_indent = classify = dirsfirst = noreport = False
    show_size = show_perm = hum = False
    max_level = None
    ignore: list[str] = []
    pattern: list[str] = []
    for k, v in opts:
        if k == "a":
            show_all = True
        elif k == "d":
            dirs_only = True
        elif k == "f":
            full = True
        elif k == "i":
            no_indent = True
        elif k == "F":
            classify = True
        elif k == "s":
            show_size = True
        elif k == "h":
            show_size = hum = True
        elif k == "p":
            show_perm = True
        elif k == "L":
            if not (v or "").isdigit() or int(v or "0") < 1:
                ctx.stderr.write(b"tree: Invalid level, must be greater than 0.\n")
                return 1
            max_level = int(v or "1")
        elif k == "I":
            ignore.extend((v or "").split("|"))
        elif k == "P":
            pattern.extend((v or "").split("|"))
        elif k == "noreport":
            noreport = True
        elif k == "dirsfirst":
            dirsfirst = True
        elif k == "help":
            ctx.stdout.write(b"usage: tree [-adfiLIP] [--noreport] [<directory list>]\n")
            return 0
        elif k == "version":
            ctx.stdout.write(b"tree v2.1.0 (c) 1996 - 2022 by Steve Baker, Thomas Moore, Francesc Rocher, Florian Sesser, Kyosuke Tokoro\n")
            return 0
    import fnmatch
    ndirs = nfiles = 0
    out: list[str] = []

    def label(name: str, p: str, st: StatResult | None) -> str:
        s = name
        if st is not None and S.S_ISLNK(st.st_mode):
            try:
                s += " -> " + ctx.fs.readlink(p)
            except OSError:
                pass
            tst = _stat(ctx, p)
            if classify and tst is not None:
                if S.S_ISDIR(tst.st_mode):
                    s += "/"
                elif S.S_ISREG(tst.st_mode) and tst.st_mode & 0o111:
                    s += "*"
        elif classify and st is not None:
            if S.S_ISDIR(st.st_mode):
                s += "/"
            elif S.S_ISREG(st.st_mode) and st.st_mode & 0o111:
                s += "*"
            elif S.S_ISLNK(st.st_mode):
                pass
        pre = []
        if st is not None and show_perm:
            pre.append(_perm_str(st.st_mode))
        if st is not None and show_size:
            pre.append(human(st.st_size).rjust(4) if hum else str(st.st_size).rjust(11))
        if pre:
            s = "[" + " ".join(pre) + "]  " + s
        return s

    def walk(p: str, shown: str, prefix: str, level: int) -> int:
        """List ``p``'s entries under it; -> how many were listed."""
        nonlocal ndirs, nfiles
        try:
            names = ctx.fs.listdir(p)
        except OSError:
            return 0
        ents = []
        for n in names:
            if n.startswith(".") and not show_all:
                continue
            cp = p.rstrip("/") + "/" + n
            st = _lstat(ctx, cp)
            tst = _stat(ctx, cp) if st is not None and S.S_ISLNK(st.st_mode) else st
            isdir = tst is not None and S.S_ISDIR(tst.st_mode)
            if dirs_only and not isdir:
                continue
            if ignore and any(fnmatch.fnmatch(n, x) for x in ignore):
                continue
            if pattern and not isdir and not any(fnmatch.fnmatch(n, x) for x in pattern):
                continue
            ents.append((n, cp, st, isdir))
        ents.sort(key=lambda x: _tree_key(x[0]))
        if dirsfirst:
            ents.sort(key=lambda x: 0 if x[3] else 1)
        for i, (n, cp, st, isdir) in enumerate(ents):
            last = i == len(ents) - 1
            branch = "" if no_indent else ("└── " if last else "├── ")
            disp = (shown.rstrip("/") + "/" + n) if full else n
            out.append(prefix + branch + label(disp, cp, st) + "\n")
            is_link = st is not None and S.S_ISLNK(st.st_mode)
            if isdir:
                ndirs += 1
                if not is_link and (max_level is None or level < max_level):
                    # tree 2.x draws the continuation bar with two no-break spaces
                    walk(cp, disp, prefix + ("" if no_indent else ("    " if last else "\u2502\u00a0\u00a0 ")), level + 1)
            else:
                nfiles += 1
        return len(ents)

    status = 0
    for d in ops or ["."]:
        p = ctx.path(d)
        st = _stat(ctx, p)
        if st is None or not S.S_ISDIR(st.st_mode):
            out.append(f"{d}  [error opening dir]\n")
            status = 2 if st is None else status
            continue
        out.append(label(d, p, st) + "\n")
        if walk(p, d, "", 1):
            ndirs += 1  # (tree 2.1.0 counts a directory it was given only when it lists something)
    if not noreport:
        out.append(f"\n{ndirs} director{'y' if ndirs == 1 else 'ies'}" +
                   ("" if dirs_only else f", {nfiles} file{'' if nfiles == 1 else 's'}") + "\n")
    ctx.stdout.write("".join(out).encode("utf-8", "surrogateescape"))
    return status


def _tree_key(name: str):  # noqa: ANN202
    # tree 2.x sorts with strcoll; in C.UTF-8 that is code point order
    return name.encode("utf-8", "surrogateescape")


# -- file -----------------------------------------------------------------------------------

def _magic(data: bytes, size: int) -> str:
    if size == 0:
        return "empty"
    if size == 1:
        return "very short file (no magic)"
    if data.startswith(b"\x7fELF"):
        bits = "64-bit" if data[4:5] == b"\x02" else "32-bit"
        endian = "LSB" if data[5:6] == b"\x01" else "MSB"
        et = int.from_bytes(data[16:18], "little" if endian == "LSB" else "big") if len(data) > 18 else 0
        kind = {1: "relocatable", 2: "executable", 3: "shared object", 4: "core file"}.get(et, "executable")
        return f"ELF {bits} {endian} {kind}"
    if data.startswith(b"\x1f\x8b"):
        return "gzip compressed data"
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        if len(data) >= 29:
            w = int.from_bytes(data[16:20], "big")
            h = int.from_bytes(data[20:24], "big")
            depth, ctype, inter = data[24], data[25], data[28]
            kind = {0: "grayscale", 2: "/color RGB", 3: " colormap", 4: " gray+alpha",
                    6: "/color RGBA"}.get(ctype, "")
            sep = "" if kind.startswith("/") else " "
            kind = kind.lstrip(" ")
            return (f"PNG image data, {w} x {h}, {depth}-bit{sep}{kind}, "
                    f"{'interlaced' if inter else 'non-interlaced'}")
        if len(data) >= 24:
            w = int.from_bytes(data[16:20], "big")
            h = int.from_bytes(data[20:24], "big")
            return f"PNG image data, {w} x {h}"
        return "PNG image data"
    if data[:3] == b"\xff\xd8\xff":
        return "JPEG image data"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        # libmagic's ", W x H" (little-endian at 6 and 8), printed as far as the data goes
        s = f"GIF image data, version {data[3:6].decode()},"
        if len(data) >= 8:
            s += f" {int.from_bytes(data[6:8], 'little')} x"
        if len(data) >= 10:
            s += f" {int.from_bytes(data[8:10], 'little')}"
        return s
    if data.startswith(b"%PDF-"):
        ver = data[5:8].decode("ascii", "replace")
        return f"PDF document, version {ver}"
    if data.startswith(b"PK\x03\x04"):
        return "Zip archive data"
    if data.startswith(b"BZh"):
        return "bzip2 compressed data"
    if data.startswith(b"\xfd7zXZ\x00"):
        return "XZ compressed data"
    if len(data) > 262 and data[257:262] == b"ustar":
        return "POSIX tar archive"
    if data.startswith(b"SQLite format 3\x00"):
        return "SQLite 3.x database"
    if b"\x00" in data:
        return "data"
    try:
        text = data.decode("utf-8")
        utf8 = not data.isascii()
    except UnicodeDecodeError as e:
        if e.start >= len(data) - 3 and size > len(data):
            text = data[: e.start].decode("utf-8")
            utf8 = True
        else:
            if all(b >= 0x20 or b in b"\t\n\r\f\b\x1b" for b in data):
                return "ISO-8859 text" + _line_term(data)
            return "data"
    if any(ord(c) < 0x20 and c not in "\t\n\r\f\b\x1b" for c in text):
        return "data"
    enc = "Unicode text, UTF-8 text" if utf8 else "ASCII text"
    stripped = text.lstrip()
    if text.startswith("#!"):
        first = text.split("\n", 1)[0]
        interp = first[2:].strip().split()
        prog = interp[0].rsplit("/", 1)[-1] if interp else ""
        if prog == "env" and len(interp) > 1:
            prog = interp[1]
        kinds = {"sh": "POSIX shell script", "bash": "Bourne-Again shell script",
                 "python": "Python script", "python3": "Python script", "perl": "Perl script",
                 "node": "Node.js script", "ruby": "Ruby script", "zsh": "Paul Falstad's zsh script"}
        k = kinds.get(prog, f"a {' '.join(interp)} script")
        if prog.startswith("python"):
            k = "Python script"
        return f"{k}, {enc} executable" + _line_term(data)
    if stripped[:1] in "{[":
        import json
        try:
            json.loads(text)
            return "JSON text data" if not utf8 else "JSON text data"
        except ValueError:
            pass
    if stripped.startswith("<?xml"):
        return f"XML 1.0 document, {enc}" + _line_term(data)
    if stripped[:15].lower().startswith(("<!doctype html", "<html")):
        return f"HTML document, {enc}" + _line_term(data)
    return enc + _line_term(data)


def _line_term(data: bytes) -> str:
    parts = []
    if b"\r\n" in data:
        parts.append(", with CRLF line terminators")
    elif b"\r" in data and b"\n" not in data:
        parts.append(", with CR line terminators")
    if not data.endswith(b"\n") and b"\n" not in data and False:
        parts.append(", with no line terminators")
    lines = data.split(b"\n")
    if any(len(x) > 300 for x in lines):
        parts.insert(0, ", with very long lines (%d)" % max(len(x) for x in lines))
    if data and b"\n" not in data and b"\r" not in data:
        parts.append(", with no line terminators")
    return "".join(parts)


@command("file", usage="file [-bchiLNprsvz0] [--mime-type] [-f namefile] file ...", help="Determine type of FILEs.")
@stdio
def file_cmd(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, ops = parse_opts(ctx, argv, "bhiLf:", {
            "brief": "b", "mime-type": None, "mime": "i", "no-dereference": "h",
            "dereference": "L", "files-from": "f"}, status=1)
    except OptError as e:
        return e.status
    brief = mime = follow = charset = False
    for k, v in opts:
        if k == "b":
            brief = True
        elif k in ("i", "mime-type"):
            mime = True
            charset = k == "i"  # (-i/--mime: the type and `; charset=…`)
        elif k == "L":
            follow = True
        elif k == "f":
            try:
                with ctx.fs.open(ctx.path(v or ""), "rb") as f:
                    ops.extend(x for x in f.read().decode("utf-8", "surrogateescape").splitlines() if x)
            except OSError as e:
                ctx.stderr.write(f"file: Cannot open `{v}' ({strerror(e)})\n".encode())
                return 1
    if not ops:
        ctx.stderr.write(b"Usage: file [-bcCdEhikLlNnprsSvzZ0] [--apple] [--extension] [--mime-encoding]\n"
                         b"            [--mime-type] [-e <testname>] [-F <separator>]  [-f <namefile>]\n"
                         b"            [-m <magicfiles>] [-P <parameter=value>] [--exclude-quiet]\n"
                         b"            <file> ...\n       file -C [-m <magicfiles>]\n       file [--help]\n")
        return 1
    out = []
    width = max(len(n) for n in ops) + 1
    for name in ops:
        p = ctx.path(name)
        data = None
        st = _stat(ctx, p) if follow else _lstat(ctx, p)
        if st is None:
            desc = f"cannot open `{name}' (No such file or directory)"
            mt = desc
        elif S.S_ISLNK(st.st_mode):
            try:
                t = ctx.fs.readlink(p)
            except OSError:
                t = "?"
            broken = _stat(ctx, p) is None
            desc = f"{'broken ' if broken else ''}symbolic link to {t}"
            mt = "inode/symlink"
        elif S.S_ISDIR(st.st_mode):
            desc, mt = "directory", "inode/directory"
        elif S.S_ISFIFO(st.st_mode):
            desc, mt = "fifo (named pipe)", "inode/fifo"
        elif S.S_ISCHR(st.st_mode):
            rdev = getattr(st, "st_rdev", 0)
            desc, mt = f"character special ({os.major(rdev)}/{os.minor(rdev)})", "inode/chardevice"
        else:
            try:
                with ctx.fs.open(p, "rb") as f:
                    data = f.read(1 << 16)
            except OSError as e:
                desc = f"cannot open `{name}' ({strerror(e)})"
                mt = desc
            else:
                desc = _magic(data, st.st_size)
                mt = _mime_of(desc)
        shown = mt if mime else desc
        if charset and st is not None:
            shown += "; charset=" + _charset(mt, data)
        out.append(shown if brief else f"{(name + ':').ljust(width)} {shown}")
    ctx.stdout.write("".join(x + "\n" for x in out).encode("utf-8", "surrogateescape"))
    return 0


def _charset(mt: str, data: bytes | None) -> str:
    """libmagic's `--mime` encoding: binary for anything not text, else us-ascii, utf-8,
    iso-8859-1 (no C1 controls) or unknown-8bit."""
    if data is None or not (mt.startswith("text/") or mt == "application/json"):
        return "binary"
    if data.isascii():
        return "us-ascii"
    try:
        data.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError:
        pass
    if not any(0x80 <= b < 0xA0 for b in data):
        return "iso-8859-1"
    return "unknown-8bit"


def _mime_of(desc: str) -> str:
    table = [("empty", "inode/x-empty"), ("ELF", "application/x-executable"),
             ("gzip", "application/gzip"), ("PNG", "image/png"), ("JPEG", "image/jpeg"),
             ("GIF", "image/gif"), ("PDF", "application/pdf"), ("Zip", "application/zip"),
             ("bzip2", "application/x-bzip2"), ("XZ", "application/x-xz"),
             ("tar", "application/x-tar"), ("SQLite", "application/vnd.sqlite3"),
             ("JSON", "application/json"), ("HTML", "text/html"), ("XML", "text/xml"),
             ("shell script", "text/x-shellscript"), ("Python", "text/x-script.python"),
             ("text", "text/plain"), ("data", "application/octet-stream")]
    for k, v in table:
        if k in desc:
            return v
    return "application/octet-stream"


_ = quote
