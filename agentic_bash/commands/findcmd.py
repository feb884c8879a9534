"""find (GNU findutils 4.9) over the VFS: tests, operators, -printf, -exec/-execdir/-ok, -delete."""

# GNU behaviours kept here (checked against /usr/bin/find on this machine):
# * Directory entries are visited in readdir order by GNU (hash order on real filesystems);
#   we visit them sorted by name, so compare sorted output in differential tests.
# * Quoting in messages follows the locale: ‘x’ in a UTF-8 locale, 'x' in C.
# * Paths end at the first argument that starts with '-' or is '(' or '!'.
# * Without an action (-print, -print0, -printf, -ls, -exec, -execdir, -ok, -okdir,
#   -delete, -fprint*) the whole expression is wrapped as ``( expr ) -print``.
# * -delete implies -depth; -exec ... + batches paths and makes find exit 1 if a batch fails.
# * -ok asks on stderr and reads the answer from stdin (there is no terminal in a sandbox).
# * -regex uses emacs syntax by default (``+``/``?`` are operators, ``\(``/``\|`` groups).

from __future__ import annotations

import dataclasses
import errno as _errno
import stat as _stat
import time
from typing import Callable

import regex

from ._regex import RegexError, compile_posix, timeout_guard, utf8_locale
from ._args import run_command
from .base import CommandContext, as_invoked, command

USAGE = "find [-H] [-L] [-P] [-Olevel] [-D debugopts] [path...] [expression]"

ACTIONS = {"-print", "-print0", "-printf", "-ls", "-exec", "-execdir", "-ok", "-okdir",
           "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"}


class FindError(Exception):
    pass


_REGEXTYPES = ("findutils-default", "ed", "emacs", "gnu-awk", "grep", "posix-awk", "awk", "posix-basic",
               "posix-egrep", "egrep", "posix-extended", "posix-minimal-basic", "sed")


class _Quit(Exception):
    pass


def glob_to_regex(pat: str, icase: bool = False) -> regex.Pattern:
    """fnmatch(3) without FNM_PERIOD/FNM_PATHNAME: * and ? match anything, [!x] and [^x] negate."""
    out = []
    i = 0
    n = len(pat)
    while i < n:
        c = pat[i]
        i += 1
        if c == "*":
            out.append("(?s:.)*")
        elif c == "?":
            out.append("(?s:.)")
        elif c == "\\" and i < n:
            out.append(regex.escape(pat[i]))
            i += 1
        elif c == "[":
            j = i
            if j < n and pat[j] in "!^":
                j += 1
            if j < n and pat[j] == "]":
                j += 1
            while j < n and pat[j] != "]":
                if pat[j] == "[" and j + 1 < n and pat[j + 1] == ":":
                    k = pat.find(":]", j + 2)
                    if k >= 0:
                        j = k + 2
                        continue
                j += 1
            if j >= n:
                out.append("\\[")
                continue
            body = pat[i:j]
            i = j + 1
            neg = body[:1] in ("!", "^")
            if neg:
                body = body[1:]
            parts = []
            k = 0
            while k < len(body):
                ch = body[k]
                if ch == "[" and body[k:k + 2] == "[:":
                    e = body.find(":]", k + 2)
                    parts.append(body[k:e + 2])
                    k = e + 2
                    continue
                if ch == "\\" and k + 1 < len(body):
                    parts.append(regex.escape(body[k + 1]))
                    k += 2
                    continue
                parts.append("\\" + ch if ch in "\\]^[-" and not (ch == "-" and 0 < k < len(body) - 1) else ch)
                k += 1
            out.append("[" + ("^" if neg else "") + "".join(parts) + "]")
        else:
            out.append(regex.escape(c))
    flags = regex.IGNORECASE if icase else 0
    return regex.compile("(?:" + "".join(out) + ")\\Z", flags | regex.DOTALL)


def _emacs_to_bre(p: str) -> str:
    """Emacs regex (find's default -regextype) -> POSIX BRE with GNU extensions."""
    out = []
    i = 0
    n = len(p)
    in_br = False
    while i < n:
        c = p[i]
        if in_br:
            out.append(c)
            if c == "]" and not (out[-2:-1] == ["["] or out[-3:-1] == ["[", "^"]):
                in_br = False
            i += 1
            continue
        if c == "[":
            in_br = True
            out.append(c)
        elif c in "+?":
            out.append("\\" + c)
        elif c == "\\" and i + 1 < n:
            d = p[i + 1]
            if d in "+?":
                out.append(d)
            elif d in "{}":
                out.append(d)
            else:
                out.append(c + d)
            i += 1
        else:
            out.append(c)
        i += 1
    return "".join(out)


@dataclasses.dataclass
class Node:
    kind: str  # 'and' 'or' 'not' 'comma' 'pred'
    a: "Node | None" = None
    b: "Node | None" = None
    name: str = ""
    fn: Callable | None = None
    args: list = dataclasses.field(default_factory=list)


class _Entry:
    """One visited path: display path, sandbox path, depth, lazily stat'ed."""

    __slots__ = ("disp", "path", "depth", "_st", "_lst", "follow", "start", "fs", "_prune")

    def __init__(self, fs, disp: str, path: str, depth: int, follow: bool, start: str) -> None:  # noqa: ANN001
        self.fs = fs
        self.disp = disp
        self.path = path
        self.depth = depth
        self.follow = follow
        self.start = start
        self._st = None
        self._lst = None
        self._prune = False

    def lstat(self):  # noqa: ANN201
        if self._lst is None:
            self._lst = self.fs.stat(self.path, follow_symlinks=False)
        return self._lst

    def stat(self):  # noqa: ANN201
        if self._st is None:
            if self.follow:
                try:
                    self._st = self.fs.stat(self.path, follow_symlinks=True)
                except OSError as ex:
                    if ex.errno == _errno.ELOOP:
                        raise  # reported: "Too many levels of symbolic links"
                    self._st = self.lstat()  # a dangling link is seen as the link itself
            else:
                self._st = self.lstat()
        return self._st


def _type_char(mode: int) -> str:
    if _stat.S_ISDIR(mode):
        return "d"
    if _stat.S_ISLNK(mode):
        return "l"
    if _stat.S_ISFIFO(mode):
        return "p"
    if _stat.S_ISSOCK(mode):
        return "s"
    if _stat.S_ISCHR(mode):
        return "c"
    if _stat.S_ISBLK(mode):
        return "b"
    if _stat.S_ISDOOR(mode) if hasattr(_stat, "S_ISDOOR") else False:
        return "D"
    return "f"


def _mode_string(mode: int) -> str:
    return _stat.filemode(mode)


def _parse_mode(s: str, ctx_umask: int = 0o022) -> int | None:
    """chmod-style mode: octal, or symbolic ``u+x,g-w,o=r,a+X`` starting from 0."""
    if s and all(c in "01234567" for c in s):
        return int(s, 8)
    mode = 0
    for clause in s.split(","):
        if not clause:
            return None
        i = 0
        who = ""
        while i < len(clause) and clause[i] in "ugoa":
            who += clause[i]
            i += 1
        if i >= len(clause) or clause[i] not in "+-=":
            return None
        if not who:
            who = "a"
        while i < len(clause):
            op = clause[i]
            if op not in "+-=":
                return None
            i += 1
            perms = ""
            while i < len(clause) and clause[i] in "rwxXst":
                perms += clause[i]
                i += 1
            bits = 0
            for w in who:
                shifts = {"u": [6], "g": [3], "o": [0], "a": [6, 3, 0]}[w]
                for sh in shifts:
                    for pch in perms:
                        if pch == "r":
                            bits |= 4 << sh
                        elif pch == "w":
                            bits |= 2 << sh
                        elif pch in "xX":
                            bits |= 1 << sh
                        elif pch == "s" and sh in (6, 3):
                            bits |= 0o4000 if sh == 6 else 0o2000
                        elif pch == "t":
                            bits |= 0o1000
            if op == "+":
                mode |= bits
            elif op == "-":
                mode &= ~bits
            else:
                mask = 0
                for w in who:
                    for sh in {"u": [6], "g": [3], "o": [0], "a": [6, 3, 0]}[w]:
                        mask |= 7 << sh
                mode = (mode & ~mask) | bits
    return mode


class _Find:
    def __init__(self, ctx: CommandContext) -> None:
        self.ctx = ctx
        self.utf8 = utf8_locale(ctx.env)
        self.status = 0
        self.follow = "P"
        self.maxdepth: int | None = None
        self.mindepth = 0
        self.depth_first = False
        self.explicit_depth = self.has_delete = self.has_prune = False
        self.now = time.time()
        self.daystart = False
        self.regextype = "emacs"
        self.out: list[bytes] = []
        self.batches: list[tuple[Node, list[str]]] = []
        self.pending_plus: dict[int, list[str]] = {}

    def q(self, s: str) -> str:
        return f"\u2018{s}\u2019" if self.utf8 else f"'{s}'"

    def write(self, data: bytes) -> None:
        self.out.append(data)
        if len(self.out) > 256:
            self.flush()

    def flush(self) -> None:
        if self.out:
            self.ctx.stdout.write(b"".join(self.out))
            self.out.clear()

    def enc(self, s: str) -> bytes:
        return s.encode("utf-8", "surrogateescape")

    # -- parsing --------------------------------------------------------------------------
    def parse(self, args: list[str]) -> tuple[list[str], Node | None, bool]:
        i = 0
        n = len(args)
        # leading global options
        while i < n and args[i] in ("-H", "-L", "-P") or (i < n and args[i].startswith("-O")):
            if args[i] in ("-H", "-L", "-P"):
                self.follow = args[i][1]
            i += 1
        while i < n and args[i] == "-D":
            i += 2
        paths = []
        while i < n and not (args[i].startswith("-") and args[i] != "-" or args[i] in ("(", "!")):
            paths.append(args[i])
            i += 1
        self.toks = args[i:]
        self.pos = 0
        self.has_action = False
        if not self.toks:
            return paths, None, False
        node = self.p_comma()
        if self.pos < len(self.toks):
            t = self.toks[self.pos]
            if t == ")":
                raise FindError("invalid expression; you have too many ')'")
            raise self._precede(t)
        return paths, node, self.has_action

    def _precede(self, t: str) -> FindError:
        """"paths must precede expression", with GNU's hint when the word names an existing
        file (likely a glob the shell expanded after the last predicate)."""
        msg = f"paths must precede expression: `{t}'"
        last = next((x for x in reversed(self.toks[:self.pos])
                     if x.startswith("-") and len(x) > 1 or x in ("(", ")", "!", ",")), None)
        if last is not None:
            try:
                self.ctx.fs.stat(self.ctx.path(t))
            except OSError:
                pass
            else:
                msg += f"\nfind: possible unquoted pattern after predicate `{last}'?"
        return FindError(msg)

    def peek(self) -> str | None:
        return self.toks[self.pos] if self.pos < len(self.toks) else None

    def p_comma(self) -> Node:
        left = self.p_or()
        while self.peek() == ",":
            self.pos += 1
            if self.peek() is None:
                raise FindError("expected an expression after ','")
            left = Node("comma", left, self.p_or())
        return left

    def p_or(self) -> Node:
        if self.peek() in ("-o", "-or"):
            raise FindError(f"invalid expression; you have used a binary operator '{self.peek()}' with nothing before it.")
        left = self.p_and()
        while self.peek() in ("-o", "-or"):
            op = self.peek()
            self.pos += 1
            if self.peek() is None:
                raise FindError(f"expected an expression after '{op}'")
            left = Node("or", left, self.p_and())
        return left

    def p_and(self) -> Node:
        if self.peek() in ("-a", "-and"):
            raise FindError(f"invalid expression; you have used a binary operator '{self.peek()}' with nothing before it.")
        left = self.p_unary()
        while True:
            t = self.peek()
            if t is None or t in ("-o", "-or", ")", ","):
                return left
            if t in ("-a", "-and"):
                self.pos += 1
                if self.peek() is None:
                    raise FindError(f"expected an expression after '{t}'")
            left = Node("and", left, self.p_unary())

    def p_unary(self) -> Node:
        t = self.peek()
        if t in ("!", "-not"):
            self.pos += 1
            if self.peek() is None:
                raise FindError(f"expected an expression after '{t}'")
            return Node("not", self.p_unary())
        if t == "(":
            self.pos += 1
            if self.peek() is None:
                raise FindError("invalid expression; expected to find a ')' but didn't see one. "
                                "Perhaps you need an extra predicate after '('")
            if self.peek() == ")":
                raise FindError("invalid expression; empty parentheses are not allowed.")
            e = self.p_comma()
            if self.peek() != ")":
                raise FindError("invalid expression; I was expecting to find a ')' somewhere but did not see one.")
            self.pos += 1
            return e
        if t == ")":
            raise FindError("invalid expression; you have too many ')'")
        return self.p_primary()

    def check_format(self, fmt: str) -> None:
        """GNU vets a -printf format when parsing: warnings for unknown directives/escapes."""
        i, n = 0, len(fmt)
        while i < n:
            c = fmt[i]
            if c == "\\" and i + 1 < n:
                d = fmt[i + 1]
                if d not in "abcfnrtv\\01234567":
                    self.ctx.error(f"warning: unrecognized escape `\\{d}'")
                i += 2
                continue
            if c == "%":
                j = i + 1
                while j < n and fmt[j] in "-+ #0123456789.":
                    j += 1
                if j >= n:
                    raise FindError("error: % at end of format string")
                d = fmt[j]
                if d in "ACT":
                    j += 1
                elif d not in "%aAbcCdDfFgGhHiklmMnpPsStTuUyYZ":
                    self.ctx.error(f"warning: unrecognized format directive `%{d}'")
                i = j + 1
                continue
            i += 1

    def arg(self, name: str) -> str:
        if self.pos >= len(self.toks):
            raise FindError(f"missing argument to `{name}'")
        a = self.toks[self.pos]
        self.pos += 1
        return a

    def p_primary(self) -> Node:
        t = self.toks[self.pos]
        self.pos += 1
        ctx = self.ctx
        if t in ACTIONS:
            self.has_action = True
        if t in ("-name", "-iname", "-lname", "-ilname"):
            pat = self.arg(t)
            rx = glob_to_regex(pat, icase=t.startswith("-i"))
            if t.endswith("lname"):
                def f(e: _Entry, rx=rx) -> bool:
                    if not _stat.S_ISLNK(e.lstat().st_mode):
                        return False
                    return rx.match(self.ctx.fs.readlink(e.path)) is not None
            else:
                def f(e: _Entry, rx=rx) -> bool:
                    base = e.disp.rstrip("/").rsplit("/", 1)[-1] or "/"
                    return rx.match(base) is not None
            return Node("pred", name=t, fn=f)
        if t in ("-path", "-ipath", "-wholename", "-iwholename"):
            rx = glob_to_regex(self.arg(t), icase=t.startswith("-i"))
            return Node("pred", name=t, fn=lambda e, rx=rx: rx.match(e.disp) is not None)
        if t in ("-regex", "-iregex"):
            pat = self.arg(t)
            rt = self.regextype
            try:
                if rt in ("posix-extended", "egrep", "posix-egrep", "awk", "gnu-awk", "posix-awk"):
                    rx = compile_posix(pat, extended=True, icase=t == "-iregex", utf8=self.utf8, dotall=True)
                elif rt in ("posix-basic", "grep", "ed", "sed", "posix-minimal-basic"):
                    rx = compile_posix(pat, extended=False, icase=t == "-iregex", utf8=self.utf8, dotall=True)
                else:
                    rx = compile_posix(_emacs_to_bre(pat), extended=False, icase=t == "-iregex",
                                       utf8=self.utf8, dotall=True)
            except RegexError as e:
                raise FindError(str(e)) from None
            tm = ctx.budget.remaining

            def fr(e: _Entry, rx=rx) -> bool:
                with timeout_guard():
                    return rx.rx.fullmatch(e.disp, timeout=tm()) is not None
            return Node("pred", name=t, fn=fr)
        if t == "-regextype":
            self.regextype = self.arg(t)
            if self.regextype not in _REGEXTYPES:
                q = self.q
                raise FindError(f"Unknown regular expression type {q(self.regextype)}; valid types are "
                                + ", ".join(q(x) for x in _REGEXTYPES) + ".")
            return Node("pred", name=t, fn=lambda e: True)
        if t in ("-type", "-xtype"):
            v = self.arg(t)
            if not v:
                raise FindError(f"Arguments to {t} should contain at least one letter")
            # GNU parse_type: a letter, then either the end or ',' and another letter
            ks: set[str] = set()
            i = 0
            while i < len(v):
                k = v[i]
                if k not in "bcdpflsD":
                    raise FindError(f"Unknown argument to {t}: {k}")
                if k in ks:
                    raise FindError(f"Duplicate file type '{k}' in the argument list to {t}.")
                if k == "D":
                    raise FindError(f"{t} D is not supported because Solaris doors are not supported "
                                    "on the platform find was compiled on.")
                ks.add(k)
                i += 1
                if i == len(v):
                    break
                if v[i] != ",":
                    raise FindError(f"Must separate multiple arguments to {t} using: ','")
                i += 1
                if i == len(v):
                    raise FindError(f"Last file type in list argument to {t} is missing, i.e., list is "
                                    "ending on: ','")
            xt = t == "-xtype"

            def ft(e: _Entry, ks=ks, xt=xt) -> bool:
                try:
                    if xt:
                        st = (e.fs.stat(e.path, follow_symlinks=True) if not e.follow else e.lstat())
                    else:
                        st = e.stat()
                except OSError:
                    st = e.lstat()
                return _type_char(st.st_mode) in ks
            return Node("pred", name=t, fn=ft)
        if t == "-size":
            v = self.arg(t)
            if not v:
                raise FindError("invalid null argument to -size")
            if not v[-1].isdigit() and v[-1] not in "bcwkMG":  # GNU looks at the last character first
                raise FindError(f"invalid -size type `{v[-1]}'")
            m = regex.fullmatch(r"([+-]?)(\d+)([bcwkMG]?)", v)
            if not m:
                raise FindError(f"Invalid argument `{v}' to -size")
            sign, num, unit = m.group(1), int(m.group(2)), m.group(3) or "b"
            mult = {"b": 512, "c": 1, "w": 2, "k": 1024, "M": 1 << 20, "G": 1 << 30}[unit]

            def fs_(e: _Entry) -> bool:
                size = e.stat().st_size
                units = -(-size // mult)
                if sign == "+":
                    return units > num
                if sign == "-":
                    return units < num
                return units == num
            return Node("pred", name=t, fn=fs_)
        if t in ("-mtime", "-atime", "-ctime", "-mmin", "-amin", "-cmin"):
            v = self.arg(t)
            m = regex.fullmatch(r"([+-]?)(\d+(?:\.\d*)?)", v)
            if not m:
                raise FindError(f"invalid argument `{v}' to `{t}'")
            sign, num = m.group(1), float(m.group(2))
            attr = {"m": "st_mtime", "a": "st_atime", "c": "st_ctime"}[t[1]]
            unit = 86400 if t.endswith("time") else 60

            def fm(e: _Entry) -> bool:
                age = (self.now - getattr(e.stat(), attr)) / unit
                if unit == 86400:
                    age = age // 1
                else:
                    age = -(-age // 1)  # GNU rounds minutes up
                if sign == "+":
                    return age > num
                if sign == "-":
                    return age < num
                return age == num
            return Node("pred", name=t, fn=fm)
        if t == "-used":
            # accessed N days after the last status change
            v = self.arg(t)
            m = regex.fullmatch(r"([+-]?)(\d+(?:\.\d*)?)", v)
            if not m:
                raise FindError(f"Invalid argument {v} to -used")
            sign, num = m.group(1), float(m.group(2))

            def fu(e: _Entry) -> bool:
                # GNU compares the window from the other side: a file read right after its
                # change (atime == ctime) is `-used 1` and `-used -1`, not `-used 0`
                st = e.stat()
                u = (st.st_ctime - st.st_atime) / 86400
                return u > num if sign == "+" else u < num if sign == "-" else num - 1 <= u < num
            return Node("pred", name=t, fn=fu)
        if t in ("-newer", "-anewer", "-cnewer"):
            ref = self.arg(t)
            try:
                rst = ctx.fs.stat(ctx.path(ref))
            except OSError as e:
                raise FindError(f"{self.q(ref)}: {e.strerror}") from None
            attr = {"n": "st_mtime", "a": "st_atime", "c": "st_ctime"}[t[1]]
            return Node("pred", name=t, fn=lambda e: getattr(e.stat(), attr) > rst.st_mtime)
        if t.startswith("-newer") and len(t) == 8:
            # -newerXY: X (a, B, c, m) of the file against Y of the reference file, or Y = t:
            # the argument is a date string
            x, y = t[6], t[7]
            if x not in "aBcm" or y not in "aBcmt":
                raise FindError(f"invalid predicate `{t}'")
            if "B" in (x, y):
                raise FindError("This system does not provide a way to find the birth time of a file.\n"
                                f"find: invalid predicate `{t}'")
            if self.pos >= len(self.toks):
                raise FindError(f"The {self.q(t)} test needs an argument")
            ref = self.arg(t)
            if y == "t":
                from .fileutils import parse_date
                when = parse_date(ref)
                if when is None:
                    raise FindError(f"I cannot figure out how to interpret {self.q(ref)} as a date or time")
            else:
                try:
                    rst = ctx.fs.stat(ctx.path(ref))
                except OSError as e:
                    raise FindError(f"{self.q(ref)}: {e.strerror}") from None
                when = getattr(rst, {"a": "st_atime", "c": "st_ctime", "m": "st_mtime"}[y])
            attr = {"a": "st_atime", "c": "st_ctime", "m": "st_mtime"}[x]
            return Node("pred", name=t, fn=lambda e: getattr(e.stat(), attr) > when)
        if t == "-samefile":
            ref = self.arg(t)
            try:
                rst = ctx.fs.stat(ctx.path(ref), follow_symlinks=self.follow == "L")
            except OSError as e:
                raise FindError(f"{self.q(ref)}: {e.strerror}") from None
            key = (rst.st_dev, rst.st_ino)
            return Node("pred", name=t, fn=lambda e: (e.stat().st_dev, e.stat().st_ino) == key)
        if t == "-empty":
            def fe(e: _Entry) -> bool:
                st = e.stat()
                if _stat.S_ISDIR(st.st_mode):
                    try:
                        return not e.fs.listdir(e.path)
                    except OSError:
                        return False
                if _stat.S_ISREG(st.st_mode):
                    return st.st_size == 0
                return False
            return Node("pred", name=t, fn=fe)
        if t == "-perm":
            v = self.arg(t)
            kind = ""
            body = v
            if v[:1] in ("-", "/", "+"):
                kind, body = v[0], v[1:]
            mode = _parse_mode(body)
            if mode is None:
                raise FindError(f"invalid mode {self.q(v)}")

            def fp(e: _Entry) -> bool:
                pm = e.stat().st_mode & 0o7777
                if kind == "-":
                    return pm & mode == mode
                if kind in ("/", "+"):
                    return mode == 0 or pm & mode != 0
                return pm == mode
            return Node("pred", name=t, fn=fp)
        if t in ("-user", "-group", "-uid", "-gid"):
            v = self.arg(t)
            info = ctx.info
            if t == "-user":
                if v == info.user:
                    want = info.uid
                elif v.isdigit():
                    want = int(v)
                elif v == "root":
                    want = 0
                else:
                    raise FindError(f"{self.q(v)} is not the name of a known user")
                return Node("pred", name=t, fn=lambda e: e.stat().st_uid == want)
            if t == "-group":
                if v == info.group:
                    want = info.gid
                elif v.isdigit():
                    want = int(v)
                elif v == "root":
                    want = 0
                else:
                    raise FindError(f"{self.q(v)} is not the name of an existing group")
                return Node("pred", name=t, fn=lambda e: e.stat().st_gid == want)
            num = self.numarg(t, v)
            attr = "st_uid" if t == "-uid" else "st_gid"
            return Node("pred", name=t, fn=lambda e: self.cmpnum(getattr(e.stat(), attr), v, num))
        if t in ("-links", "-inum"):
            v = self.arg(t)
            num = self.numarg(t, v)
            attr = "st_nlink" if t == "-links" else "st_ino"
            return Node("pred", name=t, fn=lambda e: self.cmpnum(getattr(e.stat(), attr), v, num))
        if t in ("-nouser", "-nogroup"):
            return Node("pred", name=t, fn=lambda e: False)
        if t in ("-readable", "-writable", "-executable"):
            import os as _os
            bit = {"-readable": _os.R_OK, "-writable": _os.W_OK, "-executable": _os.X_OK}[t]
            return Node("pred", name=t, fn=lambda e: e.fs.access(e.path, bit))
        if t in ("-true", "-false"):
            val = t == "-true"
            return Node("pred", name=t, fn=lambda e: val)
        if t in ("-maxdepth", "-mindepth"):
            v = self.arg(t)
            if not v.isdigit():
                raise FindError(f"Expected a positive decimal integer argument to {t}, but got {self.q(v)}")
            if t == "-maxdepth":
                self.maxdepth = int(v)
            else:
                self.mindepth = int(v)
            return Node("pred", name=t, fn=lambda e: True)
        if t in ("-depth", "-d"):
            self.depth_first = self.explicit_depth = True
            return Node("pred", name=t, fn=lambda e: True)
        if t in ("-xdev", "-mount", "-noleaf", "-ignore_readdir_race", "-noignore_readdir_race",
                 "-warn", "-nowarn", "-follow"):
            if t == "-follow":
                self.follow = "L"
            return Node("pred", name=t, fn=lambda e: True)
        if t == "-daystart":
            lt = time.localtime(self.now)
            self.now = time.mktime((lt.tm_year, lt.tm_mon, lt.tm_mday, 0, 0, 0, 0, 0, -1)) + 86400
            return Node("pred", name=t, fn=lambda e: True)
        if t == "-prune":
            self.has_prune = True
            return Node("pred", name=t, fn=self.prune)
        if t == "-quit":
            def fq(e: _Entry) -> bool:
                raise _Quit
            return Node("pred", name=t, fn=fq)
        if t == "-print":
            return Node("pred", name=t, fn=lambda e: self.write(self.enc(e.disp) + b"\n") or True)
        if t == "-print0":
            return Node("pred", name=t, fn=lambda e: self.write(self.enc(e.disp) + b"\0") or True)
        if t == "-printf":
            fmt = self.arg(t)
            self.check_format(fmt)
            return Node("pred", name=t, fn=lambda e, fmt=fmt: self.write(self.printf(fmt, e)) or True)
        if t == "-ls":
            return Node("pred", name=t, fn=lambda e: self.write(self.ls(e)) or True)
        if t in ("-fprint", "-fprint0", "-fprintf", "-fls"):
            fn = self.arg(t)
            fmt = self.arg(t) if t == "-fprintf" else ""
            if t == "-fprintf":
                self.check_format(fmt)
            try:
                fh = ctx.fs.open(ctx.path(fn), "wb")
            except OSError as e:
                raise FindError(f"{self.q(fn)}: {e.strerror}") from None
            self.files = getattr(self, "files", [])
            self.files.append(fh)

            def fw(e: _Entry, fh=fh, fmt=fmt, t=t) -> bool:
                data = {"-fprint": lambda: self.enc(e.disp) + b"\n",
                        "-fprint0": lambda: self.enc(e.disp) + b"\0",
                        "-fprintf": lambda: self.printf(fmt, e),
                        "-fls": lambda: self.ls(e)}[t]()
                fh.write(data)
                return True
            return Node("pred", name=t, fn=fw)
        if t == "-delete":
            self.depth_first = self.has_delete = True
            return Node("pred", name=t, fn=self.delete)
        if t in ("-exec", "-execdir", "-ok", "-okdir"):
            cmd: list[str] = []
            plus = False
            while True:
                if self.pos >= len(self.toks):
                    raise FindError(f"missing argument to `{t}'")
                a = self.toks[self.pos]
                self.pos += 1
                if a == ";":
                    break
                if a == "+" and cmd and "{}" in cmd[-1] and cmd[-1] != "{}" and t in ("-exec", "-execdir"):
                    raise FindError(f"In {self.q(t + ' ... {} +')} the {self.q('{}')} must appear by itself, but you specified {self.q(cmd[-1])}")
                if a == "+" and cmd and cmd[-1] == "{}" and t in ("-exec", "-execdir"):
                    plus = True
                    cmd.pop()
                    break
                cmd.append(a)
            if not cmd:
                raise FindError(f"missing argument to `{t}'")
            if plus:
                for a in cmd:
                    if "{}" in a:
                        raise FindError(f"In {self.q(t + ' ... {} +')} the {self.q('{}')} must appear by itself, but you specified {self.q(a)}")
                node = Node("pred", name=t + "+", args=cmd)
                node.fn = lambda e, node=node: self.exec_plus(node, e)
                return node
            return Node("pred", name=t, fn=lambda e, cmd=cmd, t=t: self.exec_one(t, cmd, e))
        if t.startswith("-"):
            raise FindError(f"unknown predicate `{t}'")
        raise self._precede(t)

    def numarg(self, t: str, v: str) -> int:
        body = v[1:] if v[:1] in "+-" else v
        if not body.isdigit():
            raise FindError(f"invalid argument `{v}' to `{t}'")
        return int(body)

    @staticmethod
    def cmpnum(val: int, v: str, num: int) -> bool:
        if v.startswith("+"):
            return val > num
        if v.startswith("-"):
            return val < num
        return val == num

    # -- actions --------------------------------------------------------------------------
    def prune(self, e: _Entry) -> bool:
        if not self.depth_first:
            e._prune = True  # type: ignore[attr-defined]
        return True

    def delete(self, e: _Entry) -> bool:
        fs = self.ctx.fs
        if e.disp in (".",):
            return True
        try:
            if _stat.S_ISDIR(e.lstat().st_mode):
                fs.rmdir(e.path)
            else:
                fs.unlink(e.path)
            return True
        except OSError as ex:
            self.flush()
            self.ctx.error(f"cannot delete {self.q(e.disp)}: {ex.strerror}")
            self.status = 1
            return False

    def run(self, argv: list[str], cwd: str | None = None) -> int:
        self.flush()
        return run_command(self.ctx, argv, "find", lambda n, why: f"{self.q(n)}: {why}", cwd=cwd)

    def exec_one(self, t: str, cmd: list[str], e: _Entry) -> bool:
        if t in ("-execdir", "-okdir"):
            base = e.disp.rstrip("/").rsplit("/", 1)[-1]
            name = "./" + base if e.disp not in ("/",) else "/"
            argv = [a.replace("{}", name) for a in cmd]
            d = e.path.rsplit("/", 1)[0] or "/"
        else:
            argv = [a.replace("{}", e.disp) for a in cmd]
            d = None
        if t in ("-ok", "-okdir"):
            self.flush()
            self.ctx.stderr.write(self.enc(f"< {cmd[0]} ... {e.disp} > ? "))
            ans = b""
            while True:
                ch = self.ctx.stdin.read(1)
                if not ch or ch == b"\n":
                    break
                ans += ch
            if not ans.strip().lower().startswith(b"y"):
                return False
        return self.run(argv, d) == 0

    def exec_plus(self, node: Node, e: _Entry) -> bool:
        lst = self.pending_plus.setdefault(id(node), [])
        if not lst:
            self.batches.append((node, lst))
        if node.name == "-execdir+":
            d = e.path.rsplit("/", 1)[0] or "/"
            base = e.disp.rstrip("/").rsplit("/", 1)[-1]
            # -execdir + batches per directory
            if getattr(node, "_dir", None) not in (None, d) and lst:
                self.run_batch(node, lst)
            node._dir = d  # type: ignore[attr-defined]
            lst.append("./" + base)
        else:
            lst.append(e.disp)
        if len(lst) >= 4096:
            self.run_batch(node, lst)
        return True

    def run_batch(self, node: Node, lst: list[str]) -> None:
        if not lst:
            return
        d = getattr(node, "_dir", None) if node.name == "-execdir+" else None
        st = self.run(node.args + lst, d)
        if st != 0:
            self.status = 1
        lst.clear()

    # -- -printf / -ls ------------------------------------------------------------------
    def printf(self, fmt: str, e: _Entry) -> bytes:
        out: list[str] = []
        i = 0
        n = len(fmt)
        while i < n:
            c = fmt[i]
            i += 1
            if c == "\\" and i < n:
                d = fmt[i]
                i += 1
                m = {"n": "\n", "t": "\t", "\\": "\\", "a": "\a", "b": "\b", "f": "\f",
                     "r": "\r", "v": "\v", "0": "\0"}
                if d == "c":
                    return self.enc("".join(out))
                if d in "01234567" and d != "0" or (d == "0" and i < n and fmt[i] in "01234567"):
                    j = i - 1
                    k = j
                    while k < n and k - j < 3 and fmt[k] in "01234567":
                        k += 1
                    out.append(chr(int(fmt[j:k], 8)))
                    i = k
                elif d in m:
                    out.append(m[d])
                else:
                    out.append("\\" + d)
                continue
            if c != "%" or i >= n:
                out.append(c)
                continue
            mm = regex.match(r"([-+ #0]*)(\d*)(?:\.(\d+))?", fmt[i:])
            flags, width, prec = mm.group(1), mm.group(2), mm.group(3)
            spec_text = mm.group(0)
            i += mm.end()
            if i >= n:
                out.append("%")
                break
            d = fmt[i]
            i += 1
            if d in "AT C".replace(" ", "") and d in "ATC":
                k = fmt[i] if i < n else ""
                i += 1
                val = self.timefmt(e, d, k)
            else:
                val = self.directive(e, d)
                if val is None:  # an unknown directive is copied as written, flags and all
                    out.append("%" + spec_text + d)
                    continue
            if width or prec:
                # GNU formats every directive as a string (%5s-style): the 0 flag is ignored
                spec = "<" if "-" in flags else ">"
                val = str(val)
                if prec:
                    val = val[: int(prec)]
                val = f"{val:{spec}{width or 0}}"
            out.append(str(val))
        return self.enc("".join(out))

    def directive(self, e: _Entry, d: str):  # noqa: ANN201
        disp = e.disp
        if d == "%":
            return "%"
        if d == "p":
            return disp
        if d in "fh":
            # GNU: %f is the last component (one trailing slash kept), %h what precedes it
            # less one slash; a start point of only slashes is %f "/" and %h "" or "/"
            t = disp.rstrip("/")
            if not t:
                return "/" if d == "f" else ("" if disp == "/" else "/")
            start = t.rfind("/") + 1
            if d == "f":
                return t[start:] + ("/" if t != disp else "")
            if start:
                return disp[:start - 1]
            # GNU quirk: a one-character name with trailing slashes keeps all but the last
            # slash (`d/` -> d, `d//` -> d/); longer names give "."
            return disp[:disp.rfind("/")] if len(t) == 1 and "/" in disp else "."
        if d == "P":
            st = e.start
            if disp == st:
                return ""
            return disp[len(st):].lstrip("/") if disp.startswith(st) else disp
        if d == "H":
            return e.start
        if d == "d":
            return e.depth
        if d == "s":
            return e.stat().st_size
        if d == "m":
            return "%o" % (e.stat().st_mode & 0o7777)
        if d == "M":
            return _mode_string(e.stat().st_mode)
        if d == "y":
            return _type_char(e.stat().st_mode)  # under -L the type of what the link points to
        if d == "Y":
            try:
                return _type_char(e.fs.stat(e.path).st_mode)
            except OSError:
                return "N"
        if d == "l":
            if _stat.S_ISLNK(e.lstat().st_mode):
                return e.fs.readlink(e.path)
            return ""
        if d == "u":
            st = e.stat()
            return self.ctx.info.user if st.st_uid == self.ctx.info.uid else ("root" if st.st_uid == 0 else str(st.st_uid))
        if d == "g":
            st = e.stat()
            return self.ctx.info.group if st.st_gid == self.ctx.info.gid else ("root" if st.st_gid == 0 else str(st.st_gid))
        if d == "U":
            return e.stat().st_uid
        if d == "G":
            return e.stat().st_gid
        if d == "n":
            return e.stat().st_nlink
        if d == "i":
            return e.stat().st_ino
        if d in "kb":
            from .lscmd import _blocks  # the 4 KiB allocation that stat, ls -s and du report
            b = _blocks(e.stat())
            return (b + 1) // 2 if d == "k" else b
        if d in "atc":
            return self.timefmt(e, d.upper(), "+")
        if d == "D":
            return e.stat().st_dev
        if d == "S":
            return "1"
        if d == "F":
            return "tmpfs"
        return None

    def timefmt(self, e: _Entry, which: str, k: str) -> str:
        st = e.stat()
        t = {"A": st.st_atime, "T": st.st_mtime, "C": st.st_ctime}[which]
        lt = time.localtime(t)
        # GNU prints nanoseconds and a trailing 0 (ten digits)
        frac = "%09d0" % (int(round((t % 1) * 1e9)) % 1000000000)
        if k == "+":
            return time.strftime("%a %b %e %H:%M:%S", lt) + f".{frac} " + time.strftime("%Y", lt)
        if k == "@":
            return f"{int(t)}.{frac}"
        if k == "S":
            return time.strftime("%S", lt) + f".{frac}"
        if k == "T":
            return time.strftime("%H:%M:%S", lt) + f".{frac}"
        if k == "+":
            return time.strftime("%Y-%m-%d+%H:%M:%S", lt) + f".{frac}"
        if k and k in "aAbBcdDeFgGhHIjklmMnprRsStTuUVwWxXyYzZ":
            return time.strftime("%" + k, lt)
        return "%" + which + k

    def ls(self, e: _Entry) -> bytes:
        st = e.stat() if not _stat.S_ISLNK(e.lstat().st_mode) else e.lstat()
        user = self.directive(e, "u")
        group = self.directive(e, "g")
        blocks = (st.st_size + 1023) // 1024 if not _stat.S_ISDIR(st.st_mode) else 4
        mt = time.localtime(st.st_mtime)
        if abs(self.now - st.st_mtime) < 182 * 86400:
            date = time.strftime("%b %e %H:%M", mt)
        else:
            date = time.strftime("%b %e  %Y", mt)
        line = f"{st.st_ino:>9} {blocks:>6} {_mode_string(st.st_mode)} {st.st_nlink:>3} {user:<8} {group:<8} {st.st_size:>8} {date} {e.disp}"
        if _stat.S_ISLNK(st.st_mode):
            line += " -> " + e.fs.readlink(e.path)
        return self.enc(line + "\n")

    # -- evaluation & traversal -----------------------------------------------------------
    def ev(self, node: Node, e: _Entry) -> bool:
        k = node.kind
        if k == "pred":
            return node.fn(e)  # type: ignore[misc]
        if k == "and":
            return self.ev(node.a, e) and self.ev(node.b, e)  # type: ignore[arg-type]
        if k == "or":
            return self.ev(node.a, e) or self.ev(node.b, e)  # type: ignore[arg-type]
        if k == "not":
            return not self.ev(node.a, e)  # type: ignore[arg-type]
        self.ev(node.a, e)  # type: ignore[arg-type]
        return self.ev(node.b, e)  # type: ignore[arg-type]

    def visit(self, expr: Node, disp: str, path: str, depth: int, start: str) -> None:
        """Depth-first walk with an explicit stack (trees may be deeper than Python's stack)."""
        fs = self.ctx.fs
        # items: (0, disp, path, depth, None) visit | (1, .., entry) post-order evaluation |
        # (2, .., real) leave a directory (loop detection bookkeeping)
        stack: list[tuple] = [(0, disp, path, depth, None)]
        while stack:
            kind, disp, path, depth, extra = stack.pop()
            if kind == 1:
                self.ev(expr, extra)
                continue
            if kind == 2:
                self.ancestors.pop(extra, None)
                continue
            self.count = getattr(self, "count", 0) + 1
            if self.count & 255 == 0:
                self.ctx.budget.check()
            follow = self.follow == "L" or (self.follow == "H" and depth == 0)
            e = _Entry(fs, disp, path, depth, follow, start)
            try:
                st = e.stat()
            except OSError as ex:
                self.flush()
                self.ctx.error(f"{self.q(disp)}: {ex.strerror}")
                self.status = 1
                continue
            is_dir = _stat.S_ISDIR(st.st_mode)
            in_range = depth >= self.mindepth
            if not self.depth_first and in_range:
                self.ev(expr, e)
            if self.depth_first and in_range:
                stack.append((1, disp, path, depth, e))
            descend = is_dir and (self.maxdepth is None or depth < self.maxdepth) and not e._prune
            if not descend:
                continue
            # loop protection for -L: a directory that is one of its own ancestors (by inode)
            real = (st.st_dev, st.st_ino)
            if follow and _stat.S_ISLNK(e.lstat().st_mode):
                if real in self.ancestors:
                    self.flush()
                    self.ctx.error(f"File system loop detected; {self.q(disp)} is part of the same file system loop as {self.q(self.ancestors[real])}.")
                    self.status = 1
                    continue
            try:
                names = sorted(fs.listdir(path))
            except OSError as ex:
                self.flush()
                self.ctx.error(f"{self.q(disp)}: {ex.strerror}")
                self.status = 1
                names = []
            self.ancestors[real] = disp
            stack.append((2, disp, path, depth, real))
            for nm in reversed(names):
                cdisp = disp + nm if disp.endswith("/") else disp + "/" + nm
                cpath = path + nm if path.endswith("/") else path + "/" + nm
                stack.append((0, cdisp, cpath, depth + 1, None))

    def main(self, argv: list[str]) -> int:
        ctx = self.ctx
        paths, expr, has_action = self.parse(argv[1:])
        if self.has_delete and self.has_prune and not self.explicit_depth:
            ctx.error("The -delete action automatically turns on -depth, but -prune does nothing when "
                      "-depth is in effect.  If you want to carry on anyway, just explicitly use the "
                      "-depth option.")
            return 1
        print_node = Node("pred", name="-print", fn=lambda e: self.write(self.enc(e.disp) + b"\n") or True)
        if expr is None:
            expr = print_node
        elif not has_action:
            expr = Node("and", expr, print_node)
        if not paths:
            paths = ["."]
        self.ancestors: dict[str, str] = {}
        try:
            for p in paths:
                if p == "":
                    self.flush()
                    ctx.error(f"{self.q('')}: No such file or directory")
                    self.status = 1
                    continue
                self.visit(expr, p, ctx.path(p), 0, p)
        except _Quit:
            pass
        for node, lst in list(self.batches):
            self.run_batch(node, lst)
        self.flush()
        for fh in getattr(self, "files", []):
            fh.close()
        return self.status


@command("find", usage=USAGE)
def find(ctx: CommandContext, argv: list[str]) -> int:
    ctx = as_invoked(ctx, "find")
    if len(argv) > 1 and argv[1] in ("--help", "-help"):
        ctx.stdout.write(FIND_HELP)
        return 0
    if len(argv) > 1 and argv[1] in ("--version", "-version"):
        ctx.stdout.write(FIND_VERSION)
        return 0
    f = _Find(ctx)
    try:
        return f.main(argv)
    except FindError as e:
        f.flush()
        ctx.error(str(e))
        return 1


# -- --help / --version texts of the GNU tools on the reference machine --------------------

FIND_HELP = b'Usage: find [-H] [-L] [-P] [-Olevel] [-D debugopts] [path...] [expression]\n\nDefault path is the current directory; default expression is -print.\nExpression may consist of: operators, options, tests, and actions.\n\nOperators (decreasing precedence; -and is implicit where no others are given):\n      ( EXPR )   ! EXPR   -not EXPR   EXPR1 -a EXPR2   EXPR1 -and EXPR2\n      EXPR1 -o EXPR2   EXPR1 -or EXPR2   EXPR1 , EXPR2\n\nPositional options (always true):\n      -daystart -follow -nowarn -regextype -warn\n\nNormal options (always true, specified before other expressions):\n      -depth -files0-from FILE -maxdepth LEVELS -mindepth LEVELS\n       -mount -noleaf -xdev -ignore_readdir_race -noignore_readdir_race\n\nTests (N can be +N or -N or N):\n      -amin N -anewer FILE -atime N -cmin N -cnewer FILE -context CONTEXT\n      -ctime N -empty -false -fstype TYPE -gid N -group NAME -ilname PATTERN\n      -iname PATTERN -inum N -iwholename PATTERN -iregex PATTERN\n      -links N -lname PATTERN -mmin N -mtime N -name PATTERN -newer FILE\n      -nouser -nogroup -path PATTERN -perm [-/]MODE -regex PATTERN\n      -readable -writable -executable\n      -wholename PATTERN -size N[bcwkMG] -true -type [bcdpflsD] -uid N\n      -used N -user NAME -xtype [bcdpfls]\n\nActions:\n      -delete -print0 -printf FORMAT -fprintf FILE FORMAT -print \n      -fprint0 FILE -fprint FILE -ls -fls FILE -prune -quit\n      -exec COMMAND ; -exec COMMAND {} + -ok COMMAND ;\n      -execdir COMMAND ; -execdir COMMAND {} + -okdir COMMAND ;\n\nOther common options:\n      --help                   display this help and exit\n      --version                output version information and exit\n\nValid arguments for -D:\nexec, opt, rates, search, stat, time, tree, all, help\nUse \'-D help\' for a description of the options, or see find(1)\n\nPlease see also the documentation at https://www.gnu.org/software/findutils/.\nYou can report (and track progress on fixing) bugs in the "find"\nprogram via the GNU findutils bug-reporting page at\nhttps://savannah.gnu.org/bugs/?group=findutils or, if\nyou have no web access, by sending email to <bug-findutils@gnu.org>.\n'

FIND_VERSION = b'find (GNU findutils) 4.9.0\nCopyright (C) 2022 Free Software Foundation, Inc.\nLicense GPLv3+: GNU GPL version 3 or later <https://gnu.org/licenses/gpl.html>.\nThis is free software: you are free to change and redistribute it.\nThere is NO WARRANTY, to the extent permitted by law.\n\nWritten by Eric B. Decker, James Youngman, and Kevin Dalley.\nFeatures enabled: D_TYPE O_NOFOLLOW(enabled) LEAF_OPTIMISATION FTS(FTS_CWDFD) CBO(level=2) \n'
