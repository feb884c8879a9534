"""The ``test``/``[`` builtin and the unary/binary operators shared with ``[[ ]]`` (bash's test.c)."""

# Bash quirks reproduced here:
# * POSIX rules by argument count: 0 → false, 1 → non-empty, 2 → ``!``/unary, 3 → binary,
#   ``-a``/``-o`` of two one-argument tests, ``!`` + two, ``( x )``; 4 → ``!`` + three or
#   ``( a b )``; only 5 or more arguments use the full ``! -a -o ( )`` grammar.
# * ``-a``/``-o`` are right-recursive and both sides are always evaluated (errors too).
# * Integers (``-eq`` …) are decimal with optional sign and surrounding blanks; anything
#   else, including ``0x1`` and values beyond 64 bits, is "integer expression expected".
#   In ``[[ ]]`` bash evaluates the operands arithmetically: the caller does that before
#   calling ``binary_test``.
# * ``<``/``>`` compare by byte value (test) — the same as code point order in C.UTF-8.
# * ``-nt``: true when only the first file exists; ``-ot``: when only the second does.
# * A path with a trailing slash must be a directory (``[ -e file/ ]`` is false).

from __future__ import annotations

import os
import stat as _st
from typing import TYPE_CHECKING, Callable

from agentic_bash.vfs.paths import normalize

if TYPE_CHECKING:
    from agentic_bash.vfs.base import FileSystem, StatResult

__all__ = [
    "BINARY_OPS", "MISSING_BRACKET", "TestError", "UNARY_OPS", "binary_test", "evaluate",
    "parse_integer", "strip_bracket", "unary_test",
]

UNARY_OPS = frozenset(
    ["-a", "-b", "-c", "-d", "-e", "-f", "-g", "-h", "-k", "-n", "-o", "-p", "-r", "-s", "-t",
     "-u", "-v", "-w", "-x", "-z", "-G", "-L", "-O", "-S", "-N", "-R"]
)
BINARY_OPS = frozenset(
    ["=", "==", "!=", "<", ">", "-nt", "-ot", "-ef", "-eq", "-ne", "-lt", "-le", "-gt", "-ge"]
)
MISSING_BRACKET = "[: missing `]'"
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1


class TestError(ValueError):
    """A usage error of test (status 2); ``message`` lacks the ``test: `` prefix."""

    __test__ = False  # not a pytest test class

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def strip_bracket(argv: list[str]) -> list[str] | None:
    """The arguments of ``[`` without the closing ``]``, or None when it is missing."""
    if not argv or argv[-1] != "]":
        return None
    return argv[:-1]


def parse_integer(s: str) -> int:
    """bash's legal_number: blanks, optional sign, decimal digits; else TestError."""
    t = s.strip(" \t\n")
    body = t[1:] if t[:1] in "+-" else t
    if body and body.isdigit() and body.isascii():
        v = int(t)
        if _INT_MIN <= v <= _INT_MAX:
            return v
    raise TestError(f"{s}: integer expression expected")


def _lookup(fs: FileSystem, cwd: str, path: str, follow: bool = True) -> StatResult | None:
    if not path:
        return None
    try:
        full = normalize(path, cwd)
        if path.endswith("/") and full != "/":
            st = fs.stat(full)
            return st if st.is_dir else None
        return fs.stat(full, follow_symlinks=follow)
    except (OSError, ValueError):
        return None


def unary_test(op: str, operand: str, fs: FileSystem, cwd: str, is_var_set: Callable[[str], bool], *,
               is_option_set: Callable[[str], bool] | None = None, uid: int | None = None,
               gid: int | None = None, isatty: Callable[[int], bool] | None = None) -> bool:
    """One unary operator (``-f file``, ``-z s`` …); ``-t FD`` asks ``isatty`` (a run with
    ``tty=`` has a terminal; otherwise there is none)."""
    if op == "-n":
        return operand != ""
    if op == "-z":
        return operand == ""
    if op == "-v":
        return is_var_set(operand)
    if op == "-o":
        return bool(is_option_set and is_option_set(operand))
    if op == "-t":
        try:
            return bool(isatty is not None and isatty(parse_integer(operand)))
        except TestError:
            return False
    if op == "-R":
        return False  # namerefs: the interpreter answers this itself
    if op in ("-h", "-L"):
        st = _lookup(fs, cwd, operand, follow=False)
        return st is not None and _st.S_ISLNK(st.st_mode)
    if op in ("-r", "-w", "-x"):
        if not operand or _lookup(fs, cwd, operand) is None:
            return False
        mode = {"-r": os.R_OK, "-w": os.W_OK, "-x": os.X_OK}[op]
        try:
            return bool(fs.access(normalize(operand, cwd), mode))
        except (OSError, ValueError):
            return False
    st = _lookup(fs, cwd, operand)
    if st is None:
        return False
    m = st.st_mode
    if op in ("-e", "-a"):
        return True
    if op == "-f":
        return _st.S_ISREG(m)
    if op == "-d":
        return _st.S_ISDIR(m)
    if op == "-s":
        return st.st_size > 0
    if op == "-b":
        return _st.S_ISBLK(m)
    if op == "-c":
        return _st.S_ISCHR(m)
    if op == "-p":
        return _st.S_ISFIFO(m)
    if op == "-S":
        return _st.S_ISSOCK(m)
    if op == "-g":
        return bool(m & _st.S_ISGID)
    if op == "-u":
        return bool(m & _st.S_ISUID)
    if op == "-k":
        return bool(m & _st.S_ISVTX)
    if op == "-O":
        return st.st_uid == (os.geteuid() if uid is None else uid)
    if op == "-G":
        return st.st_gid == (os.getegid() if gid is None else gid)
    if op == "-N":
        return st.st_atime <= st.st_mtime
    raise TestError(f"{op}: unary operator expected")


def binary_test(op: str, a: str, b: str, fs: FileSystem, cwd: str) -> bool:
    """One binary operator; string ``=``/``==`` compare literally here (no patterns)."""
    if op in ("=", "=="):
        return a == b
    if op == "!=":
        return a != b
    if op == "<":
        return a.encode("utf-8", "surrogateescape") < b.encode("utf-8", "surrogateescape")
    if op == ">":
        return a.encode("utf-8", "surrogateescape") > b.encode("utf-8", "surrogateescape")
    if op in ("-eq", "-ne", "-lt", "-le", "-gt", "-ge"):
        x = parse_integer(a)
        y = parse_integer(b)
        return {"-eq": x == y, "-ne": x != y, "-lt": x < y, "-le": x <= y, "-gt": x > y, "-ge": x >= y}[op]
    if op in ("-nt", "-ot", "-ef"):
        s1 = _lookup(fs, cwd, a)
        s2 = _lookup(fs, cwd, b)
        if op == "-ef":
            return s1 is not None and s2 is not None and (s1.st_dev, s1.st_ino) == (s2.st_dev, s2.st_ino)
        if op == "-nt":
            return (s1 is not None and s2 is None) or (s1 is not None and s2 is not None and s1.st_mtime > s2.st_mtime)
        return (s1 is None and s2 is not None) or (s1 is not None and s2 is not None and s1.st_mtime < s2.st_mtime)
    raise TestError(f"{op}: binary operator expected")


class _Test:
    def __init__(self, argv: list[str], fs: FileSystem, cwd: str, is_var_set: Callable[[str], bool],
                 is_option_set: Callable[[str], bool] | None, uid: int | None, gid: int | None,
                 bracket: bool = False, isatty: Callable[[int], bool] | None = None) -> None:
        self.bracket = bracket
        self.isatty = isatty
        self.argv = argv
        self.argc = len(argv)
        self.pos = 0
        self.fs = fs
        self.cwd = cwd
        self.is_var_set = is_var_set
        self.is_option_set = is_option_set
        self.uid = uid
        self.gid = gid

    def unary(self, op: str, arg: str) -> bool:
        return unary_test(op, arg, self.fs, self.cwd, self.is_var_set, is_option_set=self.is_option_set,
                          uid=self.uid, gid=self.gid, isatty=self.isatty)

    # -- POSIX argument-count rules

    def run(self) -> bool:
        n = self.argc
        a = self.argv
        if n == 0:
            return False
        if n == 1:
            self.pos = n
            return a[0] != ""
        if n == 2:
            v = self.two()
            self.pos = n
            return v
        if n == 3:
            return self.three()
        if n == 4:
            if a[0] == "!":
                self.pos = 1
                return not self.three()
            if a[0] == "(" and a[3] == ")":
                self.pos = 1
                v = self.two()
                self.pos = n
                return v
        return self.expr()

    def two(self) -> bool:
        a, b = self.argv[self.pos], self.argv[self.pos + 1]
        if a == "!":
            return b == ""
        if a in UNARY_OPS:
            self.pos += 2
            return self.unary(a, b)
        raise TestError(f"{a}: unary operator expected")

    def three(self) -> bool:
        p = self.pos
        a, op, b = self.argv[p], self.argv[p + 1], self.argv[p + 2]
        if op in BINARY_OPS:
            self.pos = self.argc
            return binary_test(op, a, b, self.fs, self.cwd)
        if op in ("-a", "-o"):
            self.pos = self.argc
            return (a != "" and b != "") if op == "-a" else (a != "" or b != "")
        if a == "!":
            self.pos += 1
            v = not self.two()
            self.pos = self.argc
            return v
        if a == "(" and b == ")":
            self.pos = self.argc
            return op != ""
        raise TestError(f"{op}: binary operator expected")

    # -- the full grammar (5+ arguments)

    def expr(self) -> bool:
        if self.pos >= self.argc:
            raise TestError("argument expected")
        return self.or_()

    def or_(self) -> bool:
        v = self.and_()
        if self.pos < self.argc and self.argv[self.pos] == "-o":
            self.pos += 1
            v2 = self.or_()
            return v or v2
        return v

    def and_(self) -> bool:
        v = self.term()
        if self.pos < self.argc and self.argv[self.pos] == "-a":
            self.pos += 1
            v2 = self.and_()
            return v and v2
        return v

    def term(self) -> bool:
        a = self.argv
        if self.pos >= self.argc:
            raise TestError("argument expected")
        if a[self.pos] == "!":
            neg = False
            while self.pos < self.argc and a[self.pos] == "!":
                self.pos += 1
                neg = not neg
            v = self.term()
            return not v if neg else v
        if a[self.pos] == "(":
            self.pos += 1
            v = self.expr()
            if self.pos >= self.argc:
                # `[` hides its `]` by shortening argc, so bash reports finding it
                raise TestError("`)' expected, found ]" if self.bracket else "`)' expected")
            if a[self.pos] != ")":
                raise TestError(f"`)' expected, found {a[self.pos]}")
            self.pos += 1
            return v
        if self.pos + 3 <= self.argc and a[self.pos + 1] in BINARY_OPS:
            v = binary_test(a[self.pos + 1], a[self.pos], a[self.pos + 2], self.fs, self.cwd)
            self.pos += 3
            return v
        if self.pos + 2 <= self.argc and a[self.pos] in UNARY_OPS:
            op = a[self.pos]
            if op == "-t":
                # `-t` takes an argument only when it is a number
                self.pos += 1
                if self.pos < self.argc:
                    try:
                        fd = parse_integer(a[self.pos])
                    except TestError:
                        return False
                    self.pos += 1
                    return bool(self.isatty is not None and self.isatty(fd))
                return False
            self.pos += 2
            return self.unary(op, a[self.pos - 1])
        v = a[self.pos] != ""
        self.pos += 1
        return v


def evaluate(argv: list[str], *, fs: FileSystem, cwd: str, is_var_set: Callable[[str], bool], bracket: bool,
             is_option_set: Callable[[str], bool] | None = None, uid: int | None = None,
             gid: int | None = None,
             isatty: Callable[[int], bool] | None = None) -> tuple[int, str | None]:
    """Run ``test``/``[`` on ``argv`` (no command name, no closing ``]``): (status, error or None)."""
    name = "[" if bracket else "test"
    t = _Test(argv, fs, cwd, is_var_set, is_option_set, uid, gid, bracket, isatty)
    try:
        v = t.run()
        if t.pos < t.argc:
            extra = argv[t.pos]
            if extra.startswith("-"):
                raise TestError(f"syntax error: `{extra}' unexpected")
            raise TestError("too many arguments")
    except TestError as e:
        return 2, f"{name}: {e.message}"
    return (0 if v else 1), None
