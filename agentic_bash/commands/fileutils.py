"""GNU file coreutils in-process over the VFS: mkdir rmdir touch rm cp mv ln chmod chown ..."""

from __future__ import annotations

import errno
import os
import posixpath
import secrets
import stat as S
import time

from ._args import stdio, OptError, parse_opts, quote, quoteaf, quotef, try_help
from .base import CommandContext, command, strerror
from ..vfs.base import StatResult

CHUNK = 1 << 16


def _lstat(ctx: CommandContext, p: str) -> StatResult | None:
    try:
        return ctx.fs.stat(p, follow_symlinks=False)
    except OSError:
        return None


def _why(ctx: CommandContext, p: str, follow: bool = False) -> str:
    """strerror of the failing (l)stat of ``p``."""
    try:
        ctx.fs.stat(p, follow_symlinks=follow)
    except OSError as e:
        return strerror(e)
    return "No such file or directory"


def _stat(ctx: CommandContext, p: str) -> StatResult | None:
    try:
        return ctx.fs.stat(p)
    except OSError:
        return None


def _apath(ctx: CommandContext, name: str) -> str:
    return ctx.path(name)


def _trailing_slash_check(ctx: CommandContext, name: str, p: str) -> None:
    """``x/`` must name a directory (the VFS normalises the slash away)."""
    if len(name) > 1 and name.endswith("/"):
        st = _stat(ctx, p)
        if st is not None and not st.is_dir:
            raise NotADirectoryError(errno.ENOTDIR, "Not a directory", name)


def _missing(ctx: CommandContext, what: str = "missing operand") -> int:
    ctx.error(what)
    try_help(ctx)
    return 1


def _uname(ctx: CommandContext, uid: int) -> str:
    if uid == ctx.info.uid:
        return ctx.info.user
    if uid == 0:
        return "root"
    for name, u, _g in _passwd(ctx):
        if u == uid:
            return name
    return str(uid)


def _gname(ctx: CommandContext, gid: int) -> str:
    if gid == ctx.info.gid:
        return ctx.info.group
    if gid == 0:
        return "root"
    for name, g in _groups(ctx):
        if g == gid:
            return name
    return str(gid)


def _read_small(ctx: CommandContext, p: str) -> str:
    try:
        with ctx.fs.open(p, "rb") as f:
            return f.read(1 << 20).decode("utf-8", "replace")
    except OSError:
        return ""


def _passwd(ctx: CommandContext) -> list[tuple[str, int, int]]:
    out = []
    for line in _read_small(ctx, "/etc/passwd").splitlines():
        parts = line.split(":")
        if len(parts) >= 4 and parts[2].isdigit() and parts[3].isdigit():
            out.append((parts[0], int(parts[2]), int(parts[3])))
    return out


def _groups(ctx: CommandContext) -> list[tuple[str, int]]:
    out = []
    for line in _read_small(ctx, "/etc/group").splitlines():
        parts = line.split(":")
        if len(parts) >= 3 and parts[2].isdigit():
            out.append((parts[0], int(parts[2])))
    return out


# -- mkdir / rmdir --------------------------------------------------------------------------

def parse_mode(spec: str, base: int, umask: int, is_dir: bool = False) -> int | None:
    """chmod-style mode (octal or symbolic, comma-separated clauses) applied to ``base``.

    Follows gnulib's mode_compile/mode_adjust: without a who-list the umask bits are left
    alone; directories keep setuid/setgid unless a clause names them.
    """
    if not spec:
        return None
    if all(c in "01234567" for c in spec):
        v = int(spec, 8)
        if v > 0o7777:
            return None
        if is_dir and len(spec) < 5:
            v |= base & 0o6000
        return v
    mode = base & 0o7777
    for clause in spec.split(","):
        i = 0
        who = 0
        while i < len(clause) and clause[i] in "ugoa":
            who |= {"u": 0o4700, "g": 0o2070, "o": 0o1007, "a": 0o7777}[clause[i]]
            i += 1
        if i >= len(clause):
            return None
        while i < len(clause):
            op = clause[i]
            if op not in "+-=":
                return None
            i += 1
            value = 0
            src = None
            if i < len(clause) and clause[i] in "01234567":
                # gnulib: an octal number after the operator ("-022", "=644"), no who-list,
                # ends the clause and affects all bits regardless of the umask
                j = i
                while j < len(clause) and clause[j] in "01234567":
                    j += 1
                if who or j != len(clause) or int(clause[i:j], 8) > 0o7777:
                    return None
                value = int(clause[i:j], 8)
                i = j
                mode = mode | value if op == "+" else mode & ~value if op == "-" else value
                continue
            while i < len(clause) and clause[i] in "rwxXstugo":
                c = clause[i]
                if c in "ugo":
                    if src is not None or value:
                        return None
                    src = c
                else:
                    if src is not None:
                        return None
                    if c == "X":
                        if is_dir or mode & 0o111:
                            value |= 0o111
                    else:
                        value |= {"r": 0o444, "w": 0o222, "x": 0o111, "s": 0o6000, "t": 0o1000}[c]
                i += 1
            if src is not None:
                bits = (mode >> {"u": 6, "g": 3, "o": 0}[src]) & 7
                value = (bits << 6) | (bits << 3) | bits
            affected = who if who else 0o7777 & ~umask
            omit = (0o6000 if is_dir else 0) & ~who
            value &= affected & ~omit
            if op == "+":
                mode |= value
            elif op == "-":
                mode &= ~value
            else:
                keep = (~(who if who else 0o7777) & 0o7777) | omit
                if not who:
                    keep |= umask & 0o7777
                mode = (mode & keep) | value
    return mode


@command("mkdir", usage="mkdir [OPTION]... DIRECTORY...",
         help="Create the DIRECTORY(ies), if they do not already exist.")
@stdio
def mkdir(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, ops = parse_opts(ctx, argv, "m:pvZ", {
            "mode": "m", "parents": "p", "verbose": "v", "context": "context::"}, status=1)
    except OptError as e:
        return e.status
    parents = verbose = False
    mode = None
    for k, v in opts:
        if k == "p":
            parents = True
        elif k == "v":
            verbose = True
        elif k == "m":
            m = parse_mode(v or "", 0o777, ctx.umask, True)
            if m is None:
                ctx.error(f"invalid mode {quote(ctx, v or '')}")
                return 1
            mode = m
    if not ops:
        return _missing(ctx)
    status = 0
    final_mode = (0o777 & ~ctx.umask) if mode is None else mode
    for name in ops:
        p = ctx.path(name)
        try:
            if parents:
                _mkdir_p(ctx, name, p, final_mode, verbose)
            else:
                ctx.fs.mkdir(p, final_mode)
                if mode is not None:
                    ctx.fs.chmod(p, final_mode)
                if verbose:
                    _say(ctx, f"created directory {quoteaf(name)}")
        except OSError as e:
            shown = e.filename if parents and isinstance(e.filename, str) and not e.filename.startswith("/") else name
            ctx.error(f"cannot create directory {quote(ctx, shown)}: {strerror(e)}")
            status = 1
    return status


def _say(ctx: CommandContext, msg: str) -> None:
    ctx.stdout.write(f"{ctx.name}: {msg}\n".encode("utf-8", "surrogateescape"))


def _mkdir_p(ctx: CommandContext, name: str, p: str, mode: int, verbose: bool) -> None:
    st = _stat(ctx, p)
    if st is not None:
        if st.is_dir:
            return
        raise FileExistsError(errno.EEXIST, "File exists", name)
    # walk the components as typed so -v prints them like GNU ('p', 'p/q')
    comps = [c for c in name.split("/") if c]
    prefix = "/" if name.startswith("/") else ""
    created = False
    for idx, c in enumerate(comps):
        prefix = (prefix + c) if prefix in ("", "/") else (prefix + "/" + c)
        q = ctx.path(prefix)
        # nothing exists inside a directory we just created: skip the stat (deep trees)
        if c == "..":
            created = False
        s2 = None if created and c != "." else _stat(ctx, q)
        if s2 is not None:
            if not s2.is_dir:
                if idx < len(comps) - 1:
                    # GNU names the blocking component: cannot create directory 'a.txt'
                    raise NotADirectoryError(errno.ENOTDIR, "Not a directory", prefix)
                raise FileExistsError(errno.EEXIST, "File exists", name)
            continue
        last = idx == len(comps) - 1
        # intermediate directories get u+wx on top of the umask default (GNU)
        ctx.fs.mkdir(q, mode if last else (0o777 & ~ctx.umask) | 0o300)
        created = True
        if last:
            ctx.fs.chmod(q, mode)
        if verbose:
            _say(ctx, f"created directory {quoteaf(prefix)}")


@command("rmdir", usage="rmdir [OPTION]... DIRECTORY...",
         help="Remove the DIRECTORY(ies), if they are empty.")
@stdio
def rmdir(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, ops = parse_opts(ctx, argv, "pv", {
            "parents": "p", "verbose": "v", "ignore-fail-on-non-empty": None}, status=1)
    except OptError as e:
        return e.status
    keys = {k for k, _ in opts}
    parents, verbose, ignore = "p" in keys, "v" in keys, "ignore-fail-on-non-empty" in keys
    if not ops:
        return _missing(ctx)
    status = 0
    for name in ops:
        targets = [name]
        if parents:
            s = name.rstrip("/")
            while "/" in s:
                s = s.rsplit("/", 1)[0].rstrip("/")
                if s:
                    targets.append(s)
        for t in targets:
            if verbose:
                _say(ctx, f"removing directory, {quoteaf(t)}")
            try:
                last = t.rstrip("/").rsplit("/", 1)[-1]
                if last in (".", ".."):
                    # rmdir(2) refuses a path ending in . (EINVAL) or .. (ENOTEMPTY) before
                    # it looks at the directory (the path's normal form would name it)
                    raise OSError(errno.EINVAL if last == "." else errno.ENOTEMPTY, "", t)
                p = ctx.path(t)
                st = _lstat(ctx, p)
                if st is not None and not st.is_dir:
                    raise NotADirectoryError(errno.ENOTDIR, "Not a directory", t)
                ctx.fs.rmdir(p)
            except OSError as e:
                if ignore and e.errno in (errno.ENOTEMPTY, errno.EEXIST):
                    break
                # GNU names a parent (-p) "directory" in the message
                ctx.error(f"failed to remove {'directory ' if t is not name else ''}{quoteaf(t)}: {strerror(e)}")
                status = 1
                break
    return status


# -- touch ----------------------------------------------------------------------------------

def parse_date(s: str, now: float | None = None) -> float | None:
    """The date strings agents pass to ``touch -d``/``date -d``: ISO forms, @epoch, relative words."""
    import calendar
    import re
    from datetime import datetime, timedelta, timezone

    now = time.time() if now is None else now
    t = s.strip()
    if t.startswith("@"):
        try:
            return float(t[1:])
        except ValueError:
            return None
    low = t.lower()
    base = datetime.fromtimestamp(now, timezone.utc)
    if low in ("now", "today", ""):
        return now
    if low == "yesterday":
        return now - 86400
    if low == "tomorrow":
        return now + 86400
    m = re.match(r"^([+-]?\d+)\s*(second|sec|minute|min|hour|day|week|month|year)s?(\s+ago)?$", low)
    if m:
        n = int(m.group(1)) * (-1 if m.group(3) else 1)
        unit = m.group(2)
        secs = {"second": 1, "sec": 1, "minute": 60, "min": 60, "hour": 3600, "day": 86400,
                "week": 604800}.get(unit)
        if secs:
            return now + n * secs
        months = n * (12 if unit == "year" else 1)
        y, mo = divmod(base.month - 1 + months, 12)
        try:
            return base.replace(year=base.year + y, month=mo + 1).timestamp()
        except ValueError:
            return None
    m = re.match(r"^(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2})(\.\d+)?)?)?\s*(Z|UTC|[+-]\d{2}:?\d{2})?$", t)
    if m:
        y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
        hh = int(m.group(4) or 0)
        mi = int(m.group(5) or 0)
        ss = int(m.group(6) or 0)
        frac = float(m.group(7) or 0)
        try:
            ts = calendar.timegm((y, mo, d, hh, mi, ss, 0, 0, 0)) + frac
        except (ValueError, OverflowError):
            return None
        tz = m.group(8)
        if tz and tz not in ("Z", "UTC"):
            sign = -1 if tz[0] == "+" else 1
            digits = tz[1:].replace(":", "")
            ts += sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
        return ts
    m = re.match(r"^(\d{1,2}):(\d{2})(?::(\d{2}))?$", t)
    if m:
        return calendar.timegm((base.year, base.month, base.day, int(m.group(1)), int(m.group(2)),
                                int(m.group(3) or 0), 0, 0, 0))
    for fmt in ("%b %d %Y", "%d %b %Y", "%B %d %Y", "%d %B %Y", "%Y/%m/%d", "%m/%d/%Y",
                "%a %b %d %H:%M:%S %Z %Y", "%a %b %d %H:%M:%S %Y", "%b %d %Y %H:%M"):
        try:
            dt = datetime.strptime(t, fmt).replace(tzinfo=timezone.utc)
            return dt.timestamp()
        except ValueError:
            continue
    _ = timedelta
    return None


def _parse_touch_t(s: str) -> float | None:
    import calendar
    import re
    m = re.match(r"^(\d{8}|\d{10}|\d{12})(?:\.(\d{2}))?$", s)
    if not m:
        return None
    d = m.group(1)
    ss = int(m.group(2) or 0)
    now = time.gmtime()
    if len(d) == 8:
        y = now.tm_year
        rest = d
    elif len(d) == 10:
        yy = int(d[:2])
        y = 1900 + yy if yy >= 69 else 2000 + yy
        rest = d[2:]
    else:
        y = int(d[:4])
        rest = d[4:]
    mo, dd, hh, mi = int(rest[:2]), int(rest[2:4]), int(rest[4:6]), int(rest[6:8])
    if not (1 <= mo <= 12 and 1 <= dd <= 31 and hh < 24 and mi < 60 and ss <= 60):
        return None
    return float(calendar.timegm((y, mo, dd, hh, mi, ss, 0, 0, 0)))


@command("touch", usage="touch [OPTION]... FILE...",
         help="Update the access and modification times of each FILE to the current time.")
@stdio
def touch(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, ops = parse_opts(ctx, argv, "acd:fhmr:t:", {
            "no-create": "c", "date": "d", "no-dereference": "h", "reference": "r",
            "time": "time:"}, status=1)
    except OptError as e:
        return e.status
    no_create = False
    only_a = only_m = False
    when: tuple[float, float] | None = None
    follow = True
    for k, v in opts:
        if k == "c":
            no_create = True
        elif k == "a":
            only_a = True
        elif k == "m":
            only_m = True
        elif k == "h":
            follow = False
        elif k == "time":
            if v in ("atime", "access", "use"):
                only_a = True
            elif v in ("mtime", "modify"):
                only_m = True
        elif k == "d":
            ts = parse_date(v or "")
            if ts is None:
                ctx.error(f"invalid date format {quote(ctx, v or '')}")
                return 1
            when = (ts, ts)
        elif k == "t":
            ts = _parse_touch_t(v or "")
            if ts is None:
                ctx.error(f"invalid date format {quote(ctx, v or '')}")
                return 1
            when = (ts, ts)
        elif k == "r":
            try:
                st = ctx.fs.stat(ctx.path(v or ""))
            except OSError as e:
                ctx.error(f"failed to get attributes of {quoteaf(v or '')}: {strerror(e)}")
                return 1
            when = (st.st_atime, st.st_mtime)
    keys = {k for k, _ in opts}
    if "t" in keys and keys & {"d", "r"}:
        ctx.error("cannot specify times from more than one source")
        try_help(ctx)
        return 1
    if not ops:
        return _missing(ctx, "missing file operand")
    status = 0
    for name in ops:
        p = ctx.path(name)
        try:
            if name == "-":
                continue
            _trailing_slash_check(ctx, name, p)
            exists = ctx.fs.exists(p) if follow else ctx.fs.lexists(p)
            if not exists and len(name) > 1 and name.endswith("/"):
                # "dir/" is never created as a file; GNU then fails setting the times
                if not no_create:
                    ctx.error(f"setting times of {quoteaf(name)}: No such file or directory")
                    status = 1
                continue
            if not exists:
                if no_create:
                    continue
                ctx.fs.open(p, "ab").close()
            times = when
            if only_a or only_m:
                st = ctx.fs.stat(p, follow_symlinks=follow)
                now = time.time()
                a, m = (times if times else (now, now))
                times = (a if only_a else st.st_atime, m if only_m else st.st_mtime)
            ctx.fs.utime(p, times, follow_symlinks=follow)
        except OSError as e:
            ctx.error(f"cannot touch {quoteaf(name)}: {strerror(e)}")
            status = 1
    return status


# -- rm -------------------------------------------------------------------------------------

def _ask(ctx: CommandContext, prompt: str) -> bool:
    ctx.stderr.write(f"{ctx.name}: {prompt}".encode("utf-8", "surrogateescape"))
    line = b""
    while True:
        c = ctx.stdin.read(1)
        if not c or c == b"\n":
            break
        line += c
    return line.strip()[:1] in (b"y", b"Y")


def _kind(st: StatResult) -> str:
    m = st.st_mode
    if S.S_ISREG(m):
        return "regular empty file" if st.st_size == 0 else "regular file"
    if S.S_ISDIR(m):
        return "directory"
    if S.S_ISLNK(m):
        return "symbolic link"
    if S.S_ISFIFO(m):
        return "fifo"
    if S.S_ISCHR(m):
        return "character special file"
    if S.S_ISBLK(m):
        return "block special file"
    if S.S_ISSOCK(m):
        return "socket"
    return "weird file"


class _Rm:
    def __init__(self, ctx: CommandContext, force: bool, recursive: bool, dir_ok: bool,
                 interactive: str, verbose: bool) -> None:
        self.ctx, self.force, self.recursive, self.dir_ok = ctx, force, recursive, dir_ok
        self.interactive, self.verbose = interactive, verbose
        self.count = 0

    def remove(self, name: str, p: str) -> bool:
        ctx = self.ctx
        self.count += 1
        if self.count & 1023 == 0:
            ctx.budget.check()
        st = _lstat(ctx, p)
        if st is None:
            if self.force:
                return True
            ctx.error(f"cannot remove {quoteaf(name)}: No such file or directory")
            return False
        if st.is_dir:
            if not self.recursive:
                if self.dir_ok:
                    return self._rmdir(name, p)
                ctx.error(f"cannot remove {quoteaf(name)}: Is a directory")
                return False
            if self.interactive == "always":
                try:
                    empty = not ctx.fs.listdir(p)
                except OSError:
                    empty = False
                if not empty and not _ask(ctx, f"descend into directory {quoteaf(name)}? "):
                    return True
            ok = True
            try:
                children = list(ctx.fs.listdir(p))
            except OSError as e:
                ctx.error(f"cannot remove {quoteaf(name)}: {strerror(e)}")
                return False
            for c in children:
                ok = self.remove(name.rstrip("/") + "/" + c if name != "/" else "/" + c,
                                 p.rstrip("/") + "/" + c) and ok
            if not ok:
                return False
            if self.interactive == "always" and not _ask(ctx, f"remove directory {quoteaf(name)}? "):
                return True
            return self._rmdir(name, p)
        if self.interactive == "always" and not _ask(ctx, f"remove {_kind(st)} {quoteaf(name)}? "):
            return True
        try:
            ctx.fs.unlink(p)
        except OSError as e:
            ctx.error(f"cannot remove {quoteaf(name)}: {strerror(e)}")
            return False
        if self.verbose:
            ctx.stdout.write(f"removed {quoteaf(name)}\n".encode("utf-8", "surrogateescape"))
        return True

    def _rmdir(self, name: str, p: str) -> bool:
        try:
            self.ctx.fs.rmdir(p)
        except OSError as e:
            self.ctx.error(f"cannot remove {quoteaf(name)}: {strerror(e)}")
            return False
        if self.verbose:
            self.ctx.stdout.write(f"removed directory {quoteaf(name)}\n".encode("utf-8", "surrogateescape"))
        return True


@command("rm", usage="rm [OPTION]... [FILE]...", help="Remove (unlink) the FILE(s).")
@stdio
def rm(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, ops = parse_opts(ctx, argv, "dfiIrRv", {
            "dir": "d", "force": "f", "interactive": "interactive::", "recursive": "r",
            "verbose": "v", "one-file-system": None, "no-preserve-root": None,
            "preserve-root": "preserve-root::"}, status=1)
    except OptError as e:
        return e.status
    force = recursive = dir_ok = verbose = False
    interactive = "never"
    preserve_root = True
    for k, v in opts:
        if k == "f":
            force, interactive = True, "never"
        elif k == "i":
            interactive, force = "always", False
        elif k == "I":
            interactive, force = "once", False
        elif k == "interactive":
            interactive = {"always": "always", "yes": "always", None: "always", "once": "once",
                           "never": "never", "no": "never", "none": "never"}.get(v, "always")
        elif k in "rR":
            recursive = True
        elif k == "d":
            dir_ok = True
        elif k == "v":
            verbose = True
        elif k == "no-preserve-root":
            preserve_root = False
    if not ops:
        if force:
            return 0
        return _missing(ctx)
    if interactive == "once" and (recursive or len(ops) > 3):
        what = " recursively" if recursive else ""
        n = len(ops)
        if not _ask(ctx, f"remove {n} argument{'s' if n > 1 else ''}{what}? "):
            return 0
    r = _Rm(ctx, force, recursive, dir_ok, interactive, verbose)
    status = 0
    for name in ops:
        base = name.rstrip("/").rsplit("/", 1)[-1]
        if base in (".", "..") and name not in ("/",):
            ctx.error(f"refusing to remove '.' or '..' directory: skipping {quoteaf(name)}")
            status = 1
            continue
        p = ctx.path(name)
        if recursive and p == "/" and preserve_root:
            if name.rstrip("/") == "" or True:
                ctx.error(f"it is dangerous to operate recursively on {quoteaf(name) if name != '/' else quoteaf('/')}")
                ctx.error("use --no-preserve-root to override this failsafe")
                status = 1
                continue
        try:
            _trailing_slash_check(ctx, name, p)
        except OSError as e:
            if force:
                continue  # -f ignores "nonexistent" files, ENOTDIR included (GNU)
            ctx.error(f"cannot remove {quoteaf(name)}: {strerror(e)}")
            status = 1
            continue
        if not r.remove(name, p):
            status = 1
    return status


# -- cp / mv / ln ---------------------------------------------------------------------------

def _copy_data(ctx: CommandContext, src: str, dst: str, perm: int) -> None:
    with ctx.fs.open(src, "rb") as fi:
        with ctx.fs.open(dst, "wb", perm) as fo:
            while True:
                chunk = fi.read(CHUNK)
                if not chunk:
                    break
                fo.write(chunk)


_BACKUP_TYPES = {"none": "none", "off": "none", "simple": "simple", "never": "simple",
                 "existing": "existing", "nil": "existing", "numbered": "numbered", "t": "numbered"}


def _backup_opts(ctx: CommandContext, opts: list[tuple[str, str | None]]) -> tuple[str, str] | None | int:
    """GNU's -b / --backup[=CONTROL] / -S SUFFIX: (type, suffix), None without backups, or an
    exit status after a bad CONTROL."""
    make, control, suffix = False, None, None
    for k, v in opts:
        if k == "b":
            make, control = True, None
        elif k == "backup":
            make, control = True, v
        elif k == "S":
            make, suffix = True, v or ""
    if not make:
        return None
    name = control or ctx.env.get("VERSION_CONTROL") or "existing"
    matches = [t for t in _BACKUP_TYPES if t.startswith(name)]
    kinds = {_BACKUP_TYPES[t] for t in matches}
    if name in _BACKUP_TYPES:
        kinds = {_BACKUP_TYPES[name]}
    if len(kinds) != 1:
        what = "ambiguous" if kinds else "invalid"
        ctx.error(f"{what} argument {quote(ctx, name)} for {quote(ctx, 'backup type')}")
        ctx.stderr.write("Valid arguments are:\n  - ‘none’, ‘off’\n  - ‘simple’, ‘never’\n"
                         "  - ‘existing’, ‘nil’\n  - ‘numbered’, ‘t’\n".encode())
        try_help(ctx)
        return 1
    if suffix is None:
        suffix = ctx.env.get("SIMPLE_BACKUP_SUFFIX") or "~"
    return kinds.pop(), suffix


def _make_backup(ctx: CommandContext, dname: str, dst: str, backup: tuple[str, str]) -> str | None:
    """Renames an existing ``dst`` to its backup name; returns that name as the user spelled
    ``dname`` (for -v), or None for --backup=none."""
    kind, suffix = backup
    if kind == "none":
        return None
    if kind in ("numbered", "existing"):
        d, base = posixpath.split(dst)
        top = 0
        try:
            for n in ctx.fs.listdir(d or "/"):
                if n.startswith(base + ".~") and n.endswith("~") and n[len(base) + 2:-1].isdigit():
                    top = max(top, int(n[len(base) + 2:-1]))
        except OSError:
            pass
        if kind == "numbered" or top:
            ext = f".~{top + 1}~"
        else:
            ext = suffix
    else:
        ext = suffix
    ctx.fs.rename(dst, dst + ext)
    return dname + ext


def _same_file(a: StatResult | None, b: StatResult | None) -> bool:
    return a is not None and b is not None and a.st_ino == b.st_ino and a.st_dev == b.st_dev and a.st_ino != 0


class _Cp:
    def __init__(self, ctx: CommandContext, *, recursive: bool, deref: str, preserve: bool,
                 no_clobber: bool, interactive: bool, verbose: bool, force: bool, update: bool,
                 link: bool = False, symlink: bool = False) -> None:
        self.ctx = ctx
        self.recursive, self.deref, self.preserve = recursive, deref, preserve
        self.no_clobber, self.interactive, self.verbose = no_clobber, interactive, verbose
        self.force, self.update, self.link, self.symlink = force, update, link, symlink
        self.count = 0
        self.backup: tuple[str, str] | None = None
        self.backed_up: str | None = None

    def copy(self, sname: str, src: str, dname: str, dst: str, top: bool) -> bool:
        ctx = self.ctx
        self.count += 1
        if self.count & 511 == 0:
            ctx.budget.check()
        follow = self.deref == "L" or (self.deref == "H" and top)
        st = _stat(ctx, src) if follow else _lstat(ctx, src)
        if st is None:
            st2 = _lstat(ctx, src)
            if st2 is None or follow is False:
                ctx.error(f"cannot stat {quoteaf(sname)}: {_why(ctx, src, follow)}")
                return False
            st = st2
        dst_st = _lstat(ctx, dst)
        if st.is_dir:
            if not self.recursive:
                ctx.error(f"-r not specified; omitting directory {quoteaf(sname)}")
                return False
            if dst_st is not None and not (dst_st.is_dir or (dst_st.is_symlink and _stat(ctx, dst) and _stat(ctx, dst).is_dir)):
                ctx.error(f"cannot overwrite non-directory {quoteaf(dname)} with directory {quoteaf(sname)}")
                return False
            if dst == src or dst.startswith(src.rstrip("/") + "/"):
                ctx.error(f"cannot copy a directory, {quoteaf(sname)}, into itself, {quoteaf(dname)}")
                return False
            created = False
            if dst_st is None:
                try:
                    ctx.fs.mkdir(dst, (st.st_mode & 0o7777) | 0o700)
                    created = True
                except OSError as e:
                    ctx.error(f"cannot create directory {quoteaf(dname)}: {strerror(e)}")
                    return False
                if self.verbose:
                    self._v(sname, dname)
            ok = True
            try:
                names = list(ctx.fs.listdir(src))
            except OSError as e:
                ctx.error(f"cannot access {quoteaf(sname)}: {strerror(e)}")
                return False
            for n in names:
                ok = self.copy(posixpath.join(sname, n), src.rstrip("/") + "/" + n,
                               posixpath.join(dname, n), dst.rstrip("/") + "/" + n, False) and ok
            try:
                if created or self.preserve:
                    mode = st.st_mode & 0o7777
                    ctx.fs.chmod(dst, mode if self.preserve else mode & ~ctx.umask if not created else mode & ~ctx.umask | (mode & 0))
                    if created and not self.preserve:
                        ctx.fs.chmod(dst, (st.st_mode & 0o7777) & ~ctx.umask)
                if self.preserve:
                    ctx.fs.utime(dst, (st.st_atime, st.st_mtime))
            except OSError:
                pass
            return ok
        # non-directory
        if dst_st is not None:
            if _same_file(_stat(ctx, src), _stat(ctx, dst)) and not self.symlink:
                ctx.error(f"{quoteaf(sname)} and {quoteaf(dname)} are the same file")
                return False
            if dst_st.is_dir:
                ctx.error(f"cannot overwrite directory {quoteaf(dname)} with non-directory")
                return False
            if self.no_clobber:
                return True
            if self.interactive and not _ask(ctx, f"overwrite {quoteaf(dname)}? "):
                return True
            if self.update and dst_st.st_mtime >= st.st_mtime:
                return True
            if self.backup is not None:
                try:
                    self.backed_up = _make_backup(ctx, dname, dst, self.backup)
                except OSError as e:
                    ctx.error(f"cannot backup {quoteaf(dname)}: {strerror(e)}")
                    return False
                if self.backed_up is not None:
                    dst_st = None
        try:
            if self.symlink:
                if dst_st is not None:
                    ctx.fs.unlink(dst)
                ctx.fs.symlink(src if sname.startswith("/") else sname, dst)
            elif self.link:
                if dst_st is not None:
                    ctx.fs.unlink(dst)
                ctx.fs.link(src, dst)
            elif st.is_symlink:
                if dst_st is not None:
                    ctx.fs.unlink(dst)
                ctx.fs.symlink(ctx.fs.readlink(src), dst)
            elif S.S_ISFIFO(st.st_mode) and self.recursive:
                mk = getattr(ctx.fs, "mkfifo", None)
                if mk is None:
                    raise OSError(errno.EPERM, "Operation not permitted", dst)
                if dst_st is not None:
                    ctx.fs.unlink(dst)
                mk(dst, st.st_mode & 0o7777)
            else:
                perm = (st.st_mode & 0o777) & ~ctx.umask if dst_st is None else 0o644
                try:
                    _copy_data(ctx, src, dst, perm)
                except PermissionError:
                    if self.force and dst_st is not None:
                        ctx.fs.unlink(dst)
                        _copy_data(ctx, src, dst, perm)
                    else:
                        raise
                if dst_st is None:
                    ctx.fs.chmod(dst, (st.st_mode & 0o7777) & ~ctx.umask & 0o777)
            if self.preserve and not self.link and not self.symlink:
                try:
                    ctx.fs.chmod(dst, st.st_mode & 0o7777, follow_symlinks=not st.is_symlink) if not st.is_symlink else None
                    ctx.fs.utime(dst, (st.st_atime, st.st_mtime), follow_symlinks=not st.is_symlink)
                except (OSError, NotImplementedError):
                    pass
        except OSError as e:
            if e.errno == errno.ENOENT and _lstat(ctx, src) is None:
                ctx.error(f"cannot open {quoteaf(sname)} for reading: {strerror(e)}")
            elif e.errno in (errno.EACCES,) and not ctx.fs.access(src, os.R_OK):
                ctx.error(f"cannot open {quoteaf(sname)} for reading: {strerror(e)}")
            else:
                what = "regular file" if dst_st is None else ""
                if dst_st is None:
                    ctx.error(f"cannot create {what} {quoteaf(dname)}: {strerror(e)}")
                else:
                    ctx.error(f"cannot create regular file {quoteaf(dname)}: {strerror(e)}")
            return False
        if self.verbose:
            self._v(sname, dname)
        return True

    def _v(self, s: str, d: str) -> None:
        b, self.backed_up = self.backed_up, None
        extra = f" (backup: {quoteaf(b)})" if b is not None else ""
        self.ctx.stdout.write(f"{quoteaf(s)} -> {quoteaf(d)}{extra}\n".encode("utf-8", "surrogateescape"))


def _targets(ctx: CommandContext, ops: list[str], target_dir: str | None, no_target_dir: bool,
             verb: str = "file") -> list[tuple[str, str]] | int:
    """Pairs (source operand, destination operand) like GNU cp/mv/ln, or an exit status."""
    if target_dir is not None:
        st = _stat(ctx, ctx.path(target_dir))
        if st is None:
            ctx.error(f"target directory {quoteaf(target_dir)}: No such file or directory" if verb != "ln"
                      else f"target directory {quoteaf(target_dir)}: No such file or directory")
            return 1
        if not st.is_dir:
            ctx.error(f"target directory {quoteaf(target_dir)}: Not a directory")
            return 1
        if not ops:
            return _missing(ctx, "missing file operand")
        return [(s, _join_target(target_dir, s)) for s in ops]
    if not ops:
        return _missing(ctx, "missing file operand")
    if len(ops) == 1:
        return _missing(ctx, f"missing destination file operand after {quoteaf(ops[0])}")
    dest = ops[-1]
    srcs = ops[:-1]
    dst_st = _stat(ctx, ctx.path(dest))
    if no_target_dir:
        if len(srcs) > 1:
            ctx.error(f"extra operand {quoteaf(ops[2])}")
            try_help(ctx)
            return 1
        return [(srcs[0], dest)]
    if dst_st is not None and dst_st.is_dir:
        return [(s, _join_target(dest, s)) for s in srcs]
    if len(srcs) > 1:
        exists = ctx.fs.lexists(ctx.path(dest))
        ctx.error(f"target {quoteaf(dest)}: {'Not a directory' if exists else 'No such file or directory'}")
        return 1
    return [(srcs[0], dest)]


def _slash_source_bad(ctx: CommandContext, name: str, p: str) -> bool:
    """``src/`` must resolve to a directory (cp/mv say "cannot stat 'src/'")."""
    if len(name) > 1 and name.endswith("/"):
        st = _stat(ctx, p)
        if st is None or not st.is_dir:
            why = "No such file or directory" if st is None else "Not a directory"
            ctx.error(f"cannot stat {quoteaf(name)}: {why}")
            return True
    return False


def _join_target(d: str, src: str) -> str:
    base = src.rstrip("/").rsplit("/", 1)[-1] or "/"
    return d + base if d.endswith("/") else d + "/" + base


@command("cp", usage="cp [OPTION]... [-T] SOURCE DEST\n  or:  cp [OPTION]... SOURCE... DIRECTORY\n  or:  cp [OPTION]... -t DIRECTORY SOURCE...",
         help="Copy SOURCE to DEST, or multiple SOURCE(s) to DIRECTORY.")
@stdio
def cp(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, ops = parse_opts(ctx, argv, "abdfHilLnpPrRsS:t:Tuvx", {
            "archive": "a", "backup": "backup::", "force": "f", "interactive": "i", "link": "l",
            "dereference": "L", "no-clobber": "n", "no-dereference": "P", "preserve": "preserve::",
            "no-preserve": "no-preserve:", "parents": None, "recursive": "R", "symbolic-link": "s",
            "target-directory": "t", "no-target-directory": "T", "update": "update::",
            "verbose": "v", "one-file-system": "x", "reflink": "reflink::", "sparse": "sparse:",
            "remove-destination": None, "strip-trailing-slashes": None, "suffix": "S",
            "attributes-only": None, "copy-contents": None, "debug": None}, status=1)
    except OptError as e:
        return e.status
    recursive = preserve = no_clobber = interactive = verbose = force = update = False
    link = symlink = False
    deref = ""
    target_dir = None
    no_target = False
    for k, v in opts:
        if k in "rR":
            recursive = True
        elif k == "a":
            recursive, preserve, deref = True, True, "P"
        elif k == "p" or (k == "preserve"):
            preserve = True
        elif k == "d" or k == "P":
            deref = "P"
        elif k == "L":
            deref = "L"
        elif k == "H":
            deref = "H"
        elif k == "n":
            no_clobber, interactive = True, False
        elif k == "i":
            interactive, no_clobber = True, False
        elif k == "f":
            force = True
        elif k == "v":
            verbose = True
        elif k in ("u", "update"):
            update = True
        elif k == "t":
            target_dir = v
        elif k == "T":
            no_target = True
        elif k == "l":
            link = True
        elif k == "s":
            symlink = True
    if not deref:
        deref = "P" if recursive else "L"
    backup = _backup_opts(ctx, opts)
    if isinstance(backup, int):
        return backup
    pairs = _targets(ctx, ops, target_dir, no_target)
    if isinstance(pairs, int):
        return pairs
    c = _Cp(ctx, recursive=recursive, deref=deref if deref != "P" or recursive else "P",
            preserve=preserve, no_clobber=no_clobber, interactive=interactive, verbose=verbose,
            force=force, update=update, link=link, symlink=symlink)
    c.backup = backup
    if deref == "P" and not recursive:
        c.deref = "P"
    status = 0
    for s, d in pairs:
        sp, dp = ctx.path(s), ctx.path(d)
        if _slash_source_bad(ctx, s, sp):
            status = 1
            continue
        if len(d) > 1 and d.endswith("/") and _stat(ctx, dp) is None and not (_stat(ctx, sp) and _stat(ctx, sp).is_dir):
            st = _lstat(ctx, sp)
            if st is None:
                ctx.error(f"cannot stat {quoteaf(s)}: No such file or directory")
            else:
                ctx.error(f"cannot create regular file {quoteaf(d)}: Not a directory")
            status = 1
            continue
        if not c.copy(s, sp, d, dp, True):
            status = 1
    return status


@command("mv", usage="mv [OPTION]... [-T] SOURCE DEST\n  or:  mv [OPTION]... SOURCE... DIRECTORY\n  or:  mv [OPTION]... -t DIRECTORY SOURCE...",
         help="Rename SOURCE to DEST, or move SOURCE(s) to DIRECTORY.")
@stdio
def mv(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, ops = parse_opts(ctx, argv, "bfinS:t:Tuv", {
            "backup": "backup::", "force": "f", "interactive": "i", "no-clobber": "n",
            "suffix": "S", "target-directory": "t", "no-target-directory": "T", "update": "update::",
            "verbose": "v", "strip-trailing-slashes": None, "no-copy": None}, status=1)
    except OptError as e:
        return e.status
    interactive = no_clobber = verbose = update = no_target = False
    target_dir = None
    for k, v in opts:
        if k == "f":
            interactive = no_clobber = False
        elif k == "i":
            interactive, no_clobber = True, False
        elif k == "n":
            no_clobber, interactive = True, False
        elif k == "v":
            verbose = True
        elif k in ("u", "update"):
            update = True
        elif k == "t":
            target_dir = v
        elif k == "T":
            no_target = True
    backup = _backup_opts(ctx, opts)
    if isinstance(backup, int):
        return backup
    pairs = _targets(ctx, ops, target_dir, no_target)
    if isinstance(pairs, int):
        return pairs
    status = 0
    for s, d in pairs:
        backed_up = None
        sp, dp = ctx.path(s), ctx.path(d)
        if _slash_source_bad(ctx, s, sp):
            status = 1
            continue
        st = _lstat(ctx, sp)
        if st is None:
            ctx.error(f"cannot stat {quoteaf(s)}: {_why(ctx, sp)}")
            status = 1
            continue
        dst_st = _lstat(ctx, dp)
        if dst_st is not None:
            if _same_file(st, dst_st) or sp == dp:
                ctx.error(f"{quoteaf(s)} and {quoteaf(d)} are the same file")
                status = 1
                continue
            if no_clobber:
                continue
            if interactive and not _ask(ctx, f"overwrite {quoteaf(d)}? "):
                continue
            if update and dst_st.st_mtime >= st.st_mtime:
                continue
            if dst_st.is_dir and not st.is_dir:
                ctx.error(f"cannot overwrite directory {quoteaf(d)} with non-directory")
                status = 1
                continue
            if st.is_dir and not dst_st.is_dir:
                ctx.error(f"cannot overwrite non-directory {quoteaf(d)} with directory {quoteaf(s)}")
                status = 1
                continue
        if st.is_dir and (dp == sp or dp.startswith(sp.rstrip("/") + "/")):
            ctx.error(f"cannot move {quoteaf(s)} to a subdirectory of itself, {quoteaf(d)}")
            status = 1
            continue
        try:
            if backup is not None and dst_st is not None:
                backed_up = _make_backup(ctx, d, dp, backup)
            try:
                ctx.fs.rename(sp, dp)
            except OSError as e:
                if e.errno != errno.EXDEV:
                    raise
                c = _Cp(ctx, recursive=True, deref="P", preserve=True, no_clobber=False,
                        interactive=False, verbose=False, force=True, update=False)
                if not c.copy(s, sp, d, dp, True):
                    status = 1
                    continue
                _Rm(ctx, True, True, True, "never", False).remove(s, sp)
        except OSError as e:
            if e.errno in (errno.ENOTEMPTY, errno.EEXIST):
                ctx.error(f"cannot move {quoteaf(s)} to {quoteaf(d)}: Directory not empty")
            elif e.errno == errno.ENOENT and _lstat(ctx, posixpath.dirname(dp)) is None:
                ctx.error(f"cannot move {quoteaf(s)} to {quoteaf(d)}: No such file or directory")
            else:
                ctx.error(f"cannot move {quoteaf(s)} to {quoteaf(d)}: {strerror(e)}")
            status = 1
            continue
        if verbose:
            extra = f" (backup: {quoteaf(backed_up)})" if backed_up is not None else ""
            ctx.stdout.write(f"renamed {quoteaf(s)} -> {quoteaf(d)}{extra}\n".encode("utf-8", "surrogateescape"))
    return status


def _relpath(target: str, start_dir: str) -> str:
    return posixpath.relpath(target, start_dir)


@command("ln", usage="ln [OPTION]... [-T] TARGET LINK_NAME\n  or:  ln [OPTION]... TARGET\n  or:  ln [OPTION]... TARGET... DIRECTORY\n  or:  ln [OPTION]... -t DIRECTORY TARGET...",
         help="Create a link to TARGET with the name LINK_NAME.")
@stdio
def ln(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, ops = parse_opts(ctx, argv, "bdfFiLnPrsS:t:Tv", {
            "backup": "backup::", "directory": "d", "force": "f", "interactive": "i",
            "logical": "L", "no-dereference": "n", "physical": "P", "relative": "r",
            "symbolic": "s", "suffix": "S", "target-directory": "t", "no-target-directory": "T",
            "verbose": "v"}, status=1)
    except OptError as e:
        return e.status
    symbolic = force = interactive = verbose = no_deref = relative = no_target = False
    target_dir = None
    for k, v in opts:
        if k == "s":
            symbolic = True
        elif k == "f":
            force, interactive = True, False
        elif k == "i":
            interactive, force = True, False
        elif k == "v":
            verbose = True
        elif k == "n":
            no_deref = True
        elif k == "r":
            relative = True
        elif k == "t":
            target_dir = v
        elif k == "T":
            no_target = True
    if relative and not symbolic:
        ctx.error("cannot do --relative without --symbolic")
        return 1
    backup = _backup_opts(ctx, opts)
    if isinstance(backup, int):
        return backup
    if not ops and target_dir is None:
        return _missing(ctx, "missing file operand")
    if len(ops) == 1 and target_dir is None:
        pairs: list[tuple[str, str]] | int = [(ops[0], _join_target(".", ops[0]))]
    else:
        if target_dir is None and not no_target and len(ops) >= 2:
            dest = ops[-1]
            dp = ctx.path(dest)
            st = _lstat(ctx, dp) if no_deref else _stat(ctx, dp)
            if no_deref and st is not None and st.is_symlink:
                st = None
            if st is not None and st.is_dir:
                pairs = [(s, _join_target(dest, s)) for s in ops[:-1]]
            elif len(ops) > 2:
                ctx.error(f"target {quoteaf(dest)}: {'No such file or directory' if st is None else 'Not a directory'}")
                return 1
            else:
                pairs = [(ops[0], dest)]
        else:
            pairs = _targets(ctx, ops, target_dir, no_target)
    if isinstance(pairs, int):
        return pairs
    status = 0
    for tgt, link in pairs:
        lp = ctx.path(link)
        shown = quoteaf(link)  # -v names the backup too: 'b~' ~ 'b' -> 'a'
        try:
            if symbolic and len(link) > 1 and link.endswith("/") and _stat(ctx, lp) is None:
                raise FileNotFoundError(errno.ENOENT, "No such file or directory", link)
            if not symbolic and _lstat(ctx, ctx.path(tgt)) is None:
                ctx.error(f"failed to access {quoteaf(tgt)}: {_why(ctx, ctx.path(tgt))}")
                status = 1
                continue
            existing = _lstat(ctx, lp)
            if existing is not None:
                if not symbolic and (force or interactive):
                    tst = _stat(ctx, ctx.path(tgt))
                    if _same_file(tst, existing) and not existing.is_symlink:
                        ctx.error(f"{quoteaf(tgt)} and {quoteaf(link)} are the same file")
                        status = 1
                        continue
                if interactive:
                    if not _ask(ctx, f"replace {quoteaf(link)}? "):
                        continue
                elif not force and backup is None:
                    raise FileExistsError(errno.EEXIST, "File exists", link)
                if backup is not None and not existing.is_dir:
                    b = _make_backup(ctx, link, lp, backup)
                    if b is not None:
                        shown = f"{quoteaf(b)} ~ {quoteaf(link)}"
                        existing = None
                if existing is not None and existing.is_dir:
                    # GNU refuses before trying: `ln -sfT x dir`
                    ctx.error(f"{quotef(link)}: cannot overwrite directory")
                    status = 1
                    continue
                if existing is not None:
                    ctx.fs.unlink(lp)
            if symbolic:
                t = tgt
                if relative:
                    t = _relpath(ctx.fs.realpath(ctx.path(tgt)) if ctx.fs.lexists(ctx.path(tgt)) else ctx.path(tgt),
                                 ctx.fs.realpath(posixpath.dirname(lp)))
                ctx.fs.symlink(t, lp)
                if verbose:
                    ctx.stdout.write(f"{shown} -> {quoteaf(t)}\n".encode("utf-8", "surrogateescape"))
            else:
                tp = ctx.path(tgt)
                tst = _lstat(ctx, tp)
                if tst is None:
                    ctx.error(f"failed to access {quoteaf(tgt)}: No such file or directory")
                    status = 1
                    continue
                if tst.is_dir:
                    ctx.error(f"{quotef(tgt)}: hard link not allowed for directory")
                    status = 1
                    continue
                ctx.fs.link(tp, lp)
                if verbose:
                    ctx.stdout.write(f"{shown} => {quoteaf(tgt)}\n".encode("utf-8", "surrogateescape"))
        except OSError as e:
            kind = "symbolic link" if symbolic else "hard link"
            if symbolic:
                ctx.error(f"failed to create {kind} {quoteaf(link)}: {strerror(e)}")
            else:
                if e.errno == errno.EEXIST:
                    ctx.error(f"failed to create {kind} {quoteaf(link)}: {strerror(e)}")
                else:
                    ctx.error(f"failed to create {kind} {quoteaf(link)} => {quoteaf(tgt)}: {strerror(e)}")
            status = 1
    return status


# -- chmod / chown / chgrp ------------------------------------------------------------------

def _perm_str(mode: int) -> str:
    ft = {S.S_IFDIR: "d", S.S_IFLNK: "l", S.S_IFCHR: "c", S.S_IFBLK: "b", S.S_IFIFO: "p",
          S.S_IFSOCK: "s"}.get(S.S_IFMT(mode), "-")
    return ft + _rwx(mode)


def _rwx(mode: int) -> str:
    out = []
    for shift, special, ch in ((6, S.S_ISUID, "s"), (3, S.S_ISGID, "s"), (0, S.S_ISVTX, "t")):
        b = (mode >> shift) & 7
        out.append("r" if b & 4 else "-")
        out.append("w" if b & 2 else "-")
        x = b & 1
        if mode & special:
            out.append(ch if x else ch.upper())
        else:
            out.append("x" if x else "-")
    return "".join(out)


@command("chmod", usage="chmod [OPTION]... MODE[,MODE]... FILE...\n  or:  chmod [OPTION]... OCTAL-MODE FILE...\n  or:  chmod [OPTION]... --reference=RFILE FILE...",
         help="Change the mode of each FILE to MODE.")
@stdio
def chmod(ctx: CommandContext, argv: list[str]) -> int:
    # "-w", "-x", "-rwx" are modes, not options (GNU special-cases them too)
    args = argv[1:]
    mode_arg = None
    rest: list[str] = []
    for i, a in enumerate(args):
        if mode_arg is None and len(a) > 1 and a[0] == "-" and all(c in "rwxXstugoa,+=01234567" for c in a[1:]) and a != "--":
            mode_arg = a
            continue
        rest.append(a)
    try:
        opts, ops = parse_opts(ctx, [argv[0], *rest], "cfvR", {
            "changes": "c", "silent": "f", "quiet": "f", "verbose": "v", "recursive": "R",
            "reference": "reference:", "preserve-root": None, "no-preserve-root": None}, status=1)
    except OptError as e:
        return e.status
    verbose = changes = quiet = recursive = False
    ref = None
    for k, v in opts:
        if k == "v":
            verbose = True
        elif k == "c":
            changes = True
        elif k == "f":
            quiet = True
        elif k == "R":
            recursive = True
        elif k == "reference":
            ref = v
    if mode_arg is None and ref is None:
        if not ops:
            return _missing(ctx)
        mode_arg, ops = ops[0], ops[1:]
    if not ops:
        return _missing(ctx, f"missing operand after {quote(ctx, mode_arg)}" if mode_arg else "missing operand")
    ref_mode = None
    if ref is not None:
        st = _stat(ctx, ctx.path(ref))
        if st is None:
            ctx.error(f"failed to get attributes of {quoteaf(ref)}: No such file or directory")
            return 1
        ref_mode = st.st_mode & 0o7777
    elif parse_mode(mode_arg or "", 0, ctx.umask) is None:
        ctx.error(f"invalid mode: {quote(ctx, mode_arg or '')}")
        try_help(ctx)
        return 1
    status = 0

    def one(name: str, p: str, top: bool) -> None:
        nonlocal status
        st = _stat(ctx, p) if top else _lstat(ctx, p)
        if st is None:
            if not quiet:
                ctx.error(f"cannot access {quoteaf(name)}: No such file or directory")
            status = 1
            return
        if st.is_symlink:
            if verbose:
                ctx.stdout.write(f"neither symbolic link {quoteaf(name)} nor referent has been changed\n".encode("utf-8", "surrogateescape"))
            return
        old = st.st_mode & 0o7777
        new = ref_mode if ref_mode is not None else parse_mode(mode_arg or "", old, ctx.umask, st.is_dir)
        assert new is not None
        try:
            if new != old:
                ctx.fs.chmod(p, new)
        except OSError as e:
            if not quiet:
                ctx.error(f"changing permissions of {quoteaf(name)}: {strerror(e)}")
            status = 1
            return
        if verbose or (changes and new != old):
            if new != old:
                msg = f"mode of {quoteaf(name)} changed from {old:04o} ({_rwx(old)}) to {new:04o} ({_rwx(new)})"
            else:
                msg = f"mode of {quoteaf(name)} retained as {old:04o} ({_rwx(old)})"
            ctx.stdout.write((msg + "\n").encode("utf-8", "surrogateescape"))
        if recursive and st.is_dir:
            try:
                names = sorted(ctx.fs.listdir(p))
            except OSError as e:
                ctx.error(f"cannot read directory {quoteaf(name)}: {strerror(e)}")
                status = 1
                return
            for n in names:
                one(posixpath.join(name, n), p.rstrip("/") + "/" + n, False)

    for name in ops:
        one(name, ctx.path(name), True)
    return status


def _lookup_user(ctx: CommandContext, s: str) -> int | None:
    if s.isdigit():
        return int(s)
    if s == ctx.info.user:
        return ctx.info.uid
    if s == "root":
        return 0
    for n, u, _ in _passwd(ctx):
        if n == s:
            return u
    return None


def _lookup_group(ctx: CommandContext, s: str) -> int | None:
    if s.isdigit():
        return int(s)
    if s == ctx.info.group:
        return ctx.info.gid
    if s == "root":
        return 0
    for n, g in _groups(ctx):
        if n == s:
            return g
    return None


def _chown_common(ctx: CommandContext, argv: list[str], is_chgrp: bool) -> int:
    try:
        opts, ops = parse_opts(ctx, argv, "cfhvRHLP", {
            "changes": "c", "silent": "f", "quiet": "f", "verbose": "v", "recursive": "R",
            "no-dereference": "h", "dereference": None, "reference": "reference:",
            "from": "from:", "preserve-root": None, "no-preserve-root": None}, status=1)
    except OptError as e:
        return e.status
    recursive = quiet = verbose = False
    follow = True
    ref = None
    for k, v in opts:
        if k == "R":
            recursive = True
        elif k == "f":
            quiet = True
        elif k == "v":
            verbose = True
        elif k == "h":
            follow = False
        elif k == "reference":
            ref = v
    uid: int | None = None
    gid: int | None = None
    if ref is not None:
        st = _stat(ctx, ctx.path(ref))
        if st is None:
            ctx.error(f"failed to get attributes of {quoteaf(ref)}: No such file or directory")
            return 1
        uid, gid = (None if is_chgrp else st.st_uid), st.st_gid
    else:
        if not ops:
            return _missing(ctx)
        spec, ops = ops[0], ops[1:]
        if is_chgrp:
            gid = _lookup_group(ctx, spec)
            if gid is None:
                ctx.error(f"invalid group: {quote(ctx, spec)}")
                return 1
        else:
            user, sep, group = spec.partition(":") if ":" in spec else spec.partition(".")
            if user:
                uid = _lookup_user(ctx, user)
                if uid is None:
                    ctx.error(f"invalid user: {quote(ctx, spec)}")
                    return 1
            if group:
                gid = _lookup_group(ctx, group)
                if gid is None:
                    ctx.error(f"invalid group: {quote(ctx, spec)}")
                    return 1
            elif sep and user and uid is not None:
                # "user:" means the user's login group
                for n, u, g in _passwd(ctx):
                    if u == uid:
                        gid = g
                        break
                else:
                    gid = ctx.info.gid if uid == ctx.info.uid else 0 if uid == 0 else None
    if not ops:
        return _missing(ctx, f"missing operand after {quote(ctx, argv[-1])}")
    status = 0

    def one(name: str, p: str) -> None:
        nonlocal status
        st = _stat(ctx, p) if follow else _lstat(ctx, p)
        if st is None:
            if not quiet:
                ctx.error(f"cannot access {quoteaf(name)}: No such file or directory")
            status = 1
            return
        nu = st.st_uid if uid is None else uid
        ng = st.st_gid if gid is None else gid
        try:
            ctx.fs.chown(p, nu, ng, follow_symlinks=follow)
        except OSError as e:
            if not quiet:
                what = "group" if is_chgrp else "ownership"
                ctx.error(f"changing {what} of {quoteaf(name)}: {strerror(e)}")
            status = 1
            return
        if verbose:
            if is_chgrp:
                ctx.stdout.write(f"group of {quoteaf(name)} retained as {_gname(ctx, ng)}\n".encode())
            else:
                ctx.stdout.write(f"ownership of {quoteaf(name)} retained as {_uname(ctx, nu)}:{_gname(ctx, ng)}\n".encode())
        if recursive and st.is_dir:
            for n in sorted(ctx.fs.listdir(p)):
                one(posixpath.join(name, n), p.rstrip("/") + "/" + n)

    for name in ops:
        one(name, ctx.path(name))
    return status


@command("chown", usage="chown [OPTION]... [OWNER][:[GROUP]] FILE...",
         help="Change the owner and/or group of each FILE to OWNER and/or GROUP.")
@stdio
def chown(ctx: CommandContext, argv: list[str]) -> int:
    return _chown_common(ctx, argv, False)


@command("chgrp", usage="chgrp [OPTION]... GROUP FILE...", help="Change the group of each FILE to GROUP.")
@stdio
def chgrp(ctx: CommandContext, argv: list[str]) -> int:
    return _chown_common(ctx, argv, True)


# -- truncate -------------------------------------------------------------------------------

@command("truncate", usage="truncate OPTION... FILE...",
         help="Shrink or extend the size of each FILE to the specified size")
@stdio
def truncate(ctx: CommandContext, argv: list[str]) -> int:
    from .textutils import parse_size
    try:
        opts, ops = parse_opts(ctx, argv, "cor:s:", {
            "no-create": "c", "io-blocks": "o", "reference": "r", "size": "s"}, status=1)
    except OptError as e:
        return e.status
    no_create = False
    size_spec = None
    ref = None
    for k, v in opts:
        if k == "c":
            no_create = True
        elif k == "s":
            size_spec = v
        elif k == "r":
            ref = v
    if size_spec is None and ref is None:
        ctx.error(f"you must specify either {quote(ctx, '--size')} or {quote(ctx, '--reference')}")
        try_help(ctx)
        return 1
    if not ops:
        return _missing(ctx, "missing file operand")
    op = ""
    amount = 0
    if size_spec is not None:
        s = size_spec
        if s and s[0] in "+-<>/%":
            op, s = s[0], s[1:]
        r = parse_size(s)
        if r is None or r[0] == "-":
            ctx.error(f"Invalid number: {quote(ctx, size_spec)}")
            return 1
        amount = r[1]
    if ref is not None:
        st = _stat(ctx, ctx.path(ref))
        if st is None:
            ctx.error(f"cannot stat {quoteaf(ref)}: No such file or directory")
            return 1
        if size_spec is None:
            amount = st.st_size
    status = 0
    for name in ops:
        p = ctx.path(name)
        try:
            st = _stat(ctx, p)
            if st is None:
                if no_create:
                    continue
                ctx.fs.open(p, "ab").close()
                cur = 0
            else:
                cur = st.st_size
            new = {"": amount, "+": cur + amount, "-": max(cur - amount, 0),
                   "<": min(cur, amount), ">": max(cur, amount)}.get(op)
            if op == "/":
                new = (cur // amount) * amount if amount else cur
            elif op == "%":
                new = -(-cur // amount) * amount if amount else cur
            assert new is not None
            ctx.fs.truncate(p, new)
        except OSError as e:
            ctx.error(f"cannot open {quoteaf(name)} for writing: {strerror(e)}")
            status = 1
    return status


# -- readlink / realpath / pwd ----------------------------------------------------------------

def canonicalize(ctx: CommandContext, path: str, mode: str, resolve_links: bool = True) -> str:
    """GNU canonicalize_filename_mode: mode 'e' (all must exist), 'f' (all but last), 'm' (none)."""
    fs = ctx.fs
    comps = [c for c in ctx.path(path).split("/") if c] if False else None
    todo = [c for c in (path if path.startswith("/") else ctx.cwd.rstrip("/") + "/" + path).split("/")]
    todo.reverse()
    out = ""
    hops = 0
    missing = False
    while todo:
        c = todo.pop()
        if c in ("", "."):
            continue
        if c == "..":
            out = out.rsplit("/", 1)[0]
            continue
        cand = out + "/" + c
        if missing:
            out = cand
            continue
        st = _lstat(ctx, cand)
        remaining = any(x not in ("", ".") for x in todo)
        if st is None:
            if mode == "e" or (mode == "f" and remaining):
                raise FileNotFoundError(errno.ENOENT, "No such file or directory", path)
            missing = True
            out = cand
            continue
        if st.is_symlink and resolve_links:
            hops += 1
            if hops > 40:
                raise OSError(errno.ELOOP, "Too many levels of symbolic links", path)
            t = fs.readlink(cand)
            if t.startswith("/"):
                out = ""
            todo.extend(reversed(t.split("/")))
            continue
        if remaining and not st.is_dir:
            if mode == "m":
                out = cand
                missing = True
                continue
            raise NotADirectoryError(errno.ENOTDIR, "Not a directory", path)
        out = cand
    return out or "/"


@command("readlink", usage="readlink [OPTION]... FILE...",
         help="Print value of a symbolic link or canonical file name")
@stdio
def readlink(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, ops = parse_opts(ctx, argv, "efmnqsvz", {
            "canonicalize": "f", "canonicalize-existing": "e", "canonicalize-missing": "m",
            "no-newline": "n", "quiet": "q", "silent": "s", "verbose": "v", "zero": "z"}, status=1)
    except OptError as e:
        return e.status
    mode = None
    no_nl = verbose = False
    end = "\n"
    for k, _ in opts:
        if k in "efm":
            mode = k
        elif k == "n":
            no_nl = True
        elif k == "v":
            verbose = True
        elif k in "qs":
            verbose = False
        elif k == "z":
            end = "\0"
    if not ops:
        return _missing(ctx)
    if no_nl and len(ops) > 1:
        ctx.error("ignoring --no-newline with multiple arguments")
        no_nl = False
    status = 0
    for name in ops:
        try:
            if mode is None:
                r = ctx.fs.readlink(ctx.path(name))
            else:
                r = canonicalize(ctx, name, mode)
        except OSError as e:
            if verbose:
                ctx.error(f"{quotef(name)}: {strerror(e)}")
            status = 1
            continue
        ctx.stdout.write((r + ("" if no_nl else end)).encode("utf-8", "surrogateescape"))
    return status


@command("realpath", usage="realpath [OPTION]... FILE...", help="Print the resolved absolute file name;")
@stdio
def realpath(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, ops = parse_opts(ctx, argv, "eELmPqsz", {
            "canonicalize-existing": "e", "canonicalize-missing": "m", "logical": "L",
            "physical": "P", "quiet": "q", "strip": "s", "no-symlinks": "s", "zero": "z",
            "relative-to": "relative-to:", "relative-base": "relative-base:"}, status=1)
    except OptError as e:
        return e.status
    mode = "f"
    quiet = strip = logical = False
    end = "\n"
    rel_to = rel_base = None
    for k, v in opts:
        if k == "L":
            logical = True
        elif k == "P":
            logical = False
        elif k in "em":
            mode = k
        elif k == "E":
            mode = "f"
        elif k == "q":
            quiet = True
        elif k == "s":
            strip = True
        elif k == "z":
            end = "\0"
        elif k == "relative-to":
            rel_to = v
        elif k == "relative-base":
            rel_base = v
    if not ops:
        return _missing(ctx)
    status = 0
    try:
        rt = canonicalize(ctx, rel_to, mode, not strip) if rel_to else None
        rb = canonicalize(ctx, rel_base, mode, not strip) if rel_base else None
    except OSError as e:
        ctx.error(f"{quotef(rel_to or rel_base or '')}: {strerror(e)}")
        return 1
    for name in ops:
        try:
            if strip:
                r = ctx.path(name) if mode != "e" or ctx.fs.lexists(ctx.path(name)) else canonicalize(ctx, name, "e")
                if mode == "e" and not ctx.fs.lexists(r):
                    raise FileNotFoundError(errno.ENOENT, "", name)
            else:
                # -L: ".." cancels the name before it, before any symlink is resolved
                r = canonicalize(ctx, posixpath.normpath(ctx.path(name)) if logical else name, mode)
        except OSError as e:
            if not quiet:
                ctx.error(f"{quotef(name)}: {strerror(e)}")
            status = 1
            continue
        if rt is not None and (rb is None or r == rb or r.startswith(rb.rstrip("/") + "/")):
            r = posixpath.relpath(r, rt)
        elif rb is not None and rt is None and (r == rb or r.startswith(rb.rstrip("/") + "/")):
            r = posixpath.relpath(r, rb)
        ctx.stdout.write((r + end).encode("utf-8", "surrogateescape"))
    return status


@command("pwd", usage="pwd [OPTION]...", help="Print the full filename of the current working directory.")
@stdio
def pwd(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, _ops = parse_opts(ctx, argv, "LP", {"logical": "L", "physical": "P"}, status=1)
    except OptError as e:
        return e.status
    logical = False
    for k, _ in opts:
        logical = k == "L"
    out = ctx.cwd
    if logical:
        env_pwd = ctx.env.get("PWD", "")
        if env_pwd.startswith("/") and "/./" not in env_pwd + "/" and "/../" not in env_pwd + "/":
            a, b = _stat(ctx, env_pwd), _stat(ctx, ctx.cwd)
            if a is not None and b is not None and _same_file(a, b):
                out = env_pwd
    else:
        try:
            out = ctx.fs.realpath(ctx.cwd)
        except OSError:
            pass
    ctx.stdout.write((out + "\n").encode("utf-8", "surrogateescape"))
    return 0


# -- mktemp / mkfifo / install / sync -----------------------------------------------------------

_TMPCHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


@command("mktemp", usage="mktemp [OPTION]... [TEMPLATE]",
         help="Create a temporary file or directory, safely, and print its name.")
@stdio
def mktemp(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, ops = parse_opts(ctx, argv, "dp:qtu", {
            "directory": "d", "tmpdir": "tmpdir::", "quiet": "q", "dry-run": "u",
            "suffix": "suffix:"}, status=1)
    except OptError as e:
        return e.status
    make_dir = quiet = dry = use_t = False
    tmpdir: str | None = None
    tmpdir_given = False
    suffix = None
    for k, v in opts:
        if k == "d":
            make_dir = True
        elif k == "q":
            quiet = True
        elif k == "u":
            dry = True
        elif k == "t":
            use_t = True
        elif k in ("p", "tmpdir"):
            tmpdir = v
            tmpdir_given = True
        elif k == "suffix":
            suffix = v
    if len(ops) > 1:
        ctx.error(f"too many templates")
        try_help(ctx)
        return 1
    if ops:
        template = ops[0]
        default_t = False
    else:
        template = "tmp.XXXXXXXXXX"
        default_t = True
    if suffix is not None:
        if not template.endswith("X"):
            ctx.error(f"with --suffix, template {quote(ctx, template)} must end in X")
            return 1
        template += suffix
    base, sfx = template, ""
    if suffix is None:
        i = len(template)
        while i > 0 and template[i - 1] != "X":
            i -= 1
        # GNU: the X's must be the last run in the final component
        base, sfx = template[:i], template[i:]
    else:
        base, sfx = template[: -len(suffix)] if suffix else template, suffix
    if "/" in sfx:
        ctx.error(f"invalid suffix {quote(ctx, sfx)}, contains directory separator")
        return 1
    nx = len(base) - len(base.rstrip("X"))
    if nx < 3:
        ctx.error(f"too few X's in template {quote(ctx, template)}")
        return 1
    if default_t or use_t or tmpdir_given:
        if (use_t or tmpdir_given) and "/" in template and not default_t and (use_t or tmpdir_given):
            if use_t or template.startswith("/"):
                ctx.error(f"invalid template, {quote(ctx, template)}, contains directory separator")
                return 1
        d = tmpdir if tmpdir else (ctx.env.get("TMPDIR") or "/tmp")
        if tmpdir_given and tmpdir is None:
            d = ctx.env.get("TMPDIR") or "/tmp"
        full = d.rstrip("/") + "/" + template if not template.startswith("/") else template
        base = d.rstrip("/") + "/" + base if not template.startswith("/") else base
    else:
        full = template
    _ = full
    for _attempt in range(100):
        rnd = "".join(secrets.choice(_TMPCHARS) for _ in range(nx))
        name = base[: len(base) - nx] + rnd + sfx
        p = ctx.path(name)
        if dry:
            if not ctx.fs.lexists(p):
                break
            continue
        try:
            if make_dir:
                ctx.fs.mkdir(p, 0o700)
            else:
                ctx.fs.open(p, "xb", 0o600).close()
            break
        except FileExistsError:
            continue
        except OSError as e:
            if not quiet:
                what = "directory" if make_dir else "file"
                ctx.error(f"failed to create {what} via template {quote(ctx, base[: len(base) - nx] + 'X' * nx + sfx)}: {strerror(e)}")
            return 1
    else:
        return 1
    ctx.stdout.write((name + "\n").encode("utf-8", "surrogateescape"))
    return 0


@command("mkfifo", usage="mkfifo [OPTION]... NAME...", help="Create named pipes (FIFOs) with the given NAMEs.")
@stdio
def mkfifo(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, ops = parse_opts(ctx, argv, "m:Z", {"mode": "m", "context": "context::"}, status=1)
    except OptError as e:
        return e.status
    mode = 0o666 & ~ctx.umask
    for k, v in opts:
        if k == "m":
            m = parse_mode(v or "", 0o666, 0)
            if m is None:
                ctx.error("invalid mode")
                return 1
            mode = m
    if not ops:
        return _missing(ctx)
    mk = getattr(ctx.fs, "mkfifo", None)
    status = 0
    for name in ops:
        try:
            if mk is None:
                raise OSError(errno.ENOTSUP, "Operation not supported", name)
            mk(ctx.path(name), mode)
        except OSError as e:
            ctx.error(f"cannot create fifo {quoteaf(name)}: {strerror(e)}")
            status = 1
    return status


@command("sync", usage="sync [OPTION] [FILE]...", help="Synchronize cached writes to persistent storage")
@stdio
def sync(ctx: CommandContext, argv: list[str]) -> int:
    try:
        parse_opts(ctx, argv, "df", {"data": "d", "file-system": "f"}, status=1)
    except OptError as e:
        return e.status
    return 0


@command("install", usage="install [OPTION]... [-T] SOURCE DEST\n  or:  install [OPTION]... SOURCE... DIRECTORY\n  or:  install [OPTION]... -t DIRECTORY SOURCE...\n  or:  install [OPTION]... -d DIRECTORY...",
         help="Copy SOURCE to DEST or multiple SOURCE(s) to the existing DIRECTORY.")
@stdio
def install(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, ops = parse_opts(ctx, argv, "bcCdDg:m:o:pst:TvS:Z", {
            "directory": "d", "mode": "m", "owner": "o", "group": "g", "preserve-timestamps": "p",
            "strip": "s", "target-directory": "t", "no-target-directory": "T", "verbose": "v",
            "compare": "C", "backup": "backup::", "suffix": "S", "strip-program": "strip-program:",
            "context": "context::"}, status=1)
    except OptError as e:
        return e.status
    dirs = lead = verbose = preserve = no_target = False
    mode = 0o755
    target_dir = None
    for k, v in opts:
        if k == "d":
            dirs = True
        elif k == "D":
            lead = True
        elif k == "v":
            verbose = True
        elif k == "p":
            preserve = True
        elif k == "T":
            no_target = True
        elif k == "t":
            target_dir = v
        elif k == "m":
            m = parse_mode(v or "", 0, 0)
            if m is None:
                ctx.error(f"invalid mode {quote(ctx, v or '')}")
                return 1
            mode = m
    if dirs:
        if not ops:
            return _missing(ctx, "missing file operand")
        status = 0
        for name in ops:
            try:
                _mkdir_p(ctx, name, ctx.path(name), 0o755, False)
                ctx.fs.chmod(ctx.path(name), mode)
                if verbose:
                    ctx.stdout.write(f"install: creating directory {quoteaf(name)}\n".encode())
            except OSError as e:
                ctx.error(f"cannot create directory {quoteaf(name)}: {strerror(e)}")
                status = 1
        return status
    if lead:
        dest = target_dir if target_dir is not None else (ops[-1] if len(ops) > 1 else None)
        if dest is not None:
            d = dest if target_dir is not None else posixpath.dirname(dest)
            if d:
                try:
                    _mkdir_p(ctx, d, ctx.path(d), 0o755, False)
                except OSError as e:
                    ctx.error(f"cannot create directory {quoteaf(d)}: {strerror(e)}")
                    return 1
    pairs = _targets(ctx, ops, target_dir, no_target)
    if isinstance(pairs, int):
        return pairs
    status = 0
    for s, d in pairs:
        sp, dp = ctx.path(s), ctx.path(d)
        st = _stat(ctx, sp)
        if st is None:
            ctx.error(f"cannot stat {quoteaf(s)}: No such file or directory")
            status = 1
            continue
        if st.is_dir:
            ctx.error(f"omitting directory {quoteaf(s)}")
            status = 1
            continue
        try:
            if ctx.fs.lexists(dp):
                ctx.fs.unlink(dp)
            _copy_data(ctx, sp, dp, mode)
            ctx.fs.chmod(dp, mode)
            if preserve:
                ctx.fs.utime(dp, (st.st_atime, st.st_mtime))
        except OSError as e:
            ctx.error(f"cannot create regular file {quoteaf(d)}: {strerror(e)}")
            status = 1
            continue
        if verbose:
            ctx.stdout.write(f"{quoteaf(s)} -> {quoteaf(d)}\n".encode("utf-8", "surrogateescape"))
    return status
