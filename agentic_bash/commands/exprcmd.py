"""expr (GNU coreutils 9.1): arithmetic, comparison, string functions and ``:`` regex matching."""

# GNU behaviours kept here:
# * Exit 1 when the result is null: the empty string or any spelling of zero ("0", "-0",
#   "00"); 2 for syntax errors, bad integers, bad regexes and division by zero; 3 otherwise.
# * Integers are arbitrary precision ("-?[0-9]+" only: no '+', no blanks); a comparison is
#   numeric only when both sides are integers, else a string comparison.
# * The right operand of ``|``/``&`` is parsed but not evaluated when the left decides.
# * ``STR : RE`` anchors a BRE at the start; it yields \1 when the RE has a group, else the
#   number of characters matched.

from __future__ import annotations


from ._regex import RegexError, compile_posix, timeout_guard, utf8_locale
from .base import CommandContext, as_invoked, command

USAGE = "expr EXPRESSION\n  or:  expr OPTION"
HELP = """
      --help        display this help and exit
      --version     output version information and exit

Print the value of EXPRESSION to standard output.  A blank line below
separates increasing precedence groups.  EXPRESSION may be:

  ARG1 | ARG2       ARG1 if it is neither null nor 0, otherwise ARG2

  ARG1 & ARG2       ARG1 if neither argument is null or 0, otherwise 0

  ARG1 < ARG2       ARG1 is less than ARG2
  ARG1 <= ARG2      ARG1 is less than or equal to ARG2
  ARG1 = ARG2       ARG1 is equal to ARG2
  ARG1 != ARG2      ARG1 is unequal to ARG2
  ARG1 >= ARG2      ARG1 is greater than or equal to ARG2
  ARG1 > ARG2       ARG1 is greater than ARG2

  ARG1 + ARG2       arithmetic sum of ARG1 and ARG2
  ARG1 - ARG2       arithmetic difference of ARG1 and ARG2

  ARG1 * ARG2       arithmetic product of ARG1 and ARG2
  ARG1 / ARG2       arithmetic quotient of ARG1 divided by ARG2
  ARG1 % ARG2       arithmetic remainder of ARG1 divided by ARG2

  STRING : REGEXP   anchored pattern match of REGEXP in STRING

  match STRING REGEXP        same as STRING : REGEXP
  substr STRING POS LENGTH   substring of STRING, POS counted from 1
  index STRING CHARS         index in STRING where any CHARS is found, or 0
  length STRING              length of STRING
  + TOKEN                    interpret TOKEN as a string, even if it is a
                               keyword like 'match' or an operator like '/'

  ( EXPRESSION )             value of EXPRESSION

Beware that many operators need to be escaped or quoted for shells.
Comparisons are arithmetic if both ARGs are numbers, else lexicographical.
Pattern matches return the string matched between \\( and \\) or null; if
\\( and \\) are not used, they return the number of characters matched or 0.

Exit status is 0 if EXPRESSION is neither null nor 0, 1 if EXPRESSION is null
or 0, 2 if EXPRESSION is syntactically invalid, and 3 if an error occurred.

GNU coreutils online help: <https://www.gnu.org/software/coreutils/>
Full documentation <https://www.gnu.org/software/coreutils/expr>
or available locally via: info '(coreutils) expr invocation'"""


class ExprError(Exception):
    def __init__(self, msg: str, status: int = 2) -> None:
        super().__init__(msg)
        self.status = status


def _is_int(v: object) -> bool:
    if isinstance(v, int):
        return True
    s = str(v)
    b = s[1:] if s.startswith("-") else s
    return bool(b) and b.isascii() and b.isdigit()


def _to_int(v: object) -> int:
    if isinstance(v, int):
        return v
    if not _is_int(v):
        raise ExprError("non-integer argument")
    return int(str(v))


def _null(v: object) -> bool:
    if isinstance(v, int):
        return v == 0
    s = str(v)
    if s == "":
        return True
    b = s[1:] if s.startswith("-") else s
    return b != "" and set(b) == {"0"}


class _Parser:
    def __init__(self, ctx: CommandContext, args: list[str]) -> None:
        self.ctx = ctx
        self.args = args
        self.i = 0
        self.utf8 = utf8_locale(ctx.env)

    def q(self, s: str) -> str:
        return f"\u2018{s}\u2019" if self.utf8 else f"'{s}'"

    def peek(self) -> str | None:
        return self.args[self.i] if self.i < len(self.args) else None

    def nomore(self) -> bool:
        return self.i >= len(self.args)

    def take(self) -> str:
        a = self.args[self.i]
        self.i += 1
        return a

    def need(self, after: str) -> None:
        if self.nomore():
            # GNU names the last argument it consumed
            prev = self.args[self.i - 1] if self.i else after
            raise ExprError(f"syntax error: missing argument after {self.q(prev)}")

    # precedence climbing, mirroring GNU's eval, eval1, ..., eval7
    def e0(self, ev: bool) -> object:  # |
        left = self.e1(ev)
        while self.peek() == "|":
            self.take()
            self.need("|")
            right = self.e1(ev and _null(left))
            if ev:
                if _null(left):
                    left = right if not _null(right) else 0
        return left

    def e1(self, ev: bool) -> object:  # &
        left = self.e2(ev)
        while self.peek() == "&":
            self.take()
            self.need("&")
            right = self.e2(ev and not _null(left))
            if ev:
                left = 0 if (_null(left) or _null(right)) else left
        return left

    def e2(self, ev: bool) -> object:  # comparisons
        left = self.e3(ev)
        while self.peek() in ("<", "<=", "=", "==", "!=", ">=", ">"):
            op = self.take()
            self.need(op)
            right = self.e3(ev)
            if ev:
                if _is_int(left) and _is_int(right):
                    a, b = _to_int(left), _to_int(right)
                else:
                    a, b = str(left), str(right)  # type: ignore[assignment]
                r = {"<": a < b, "<=": a <= b, "=": a == b, "==": a == b, "!=": a != b,
                     ">=": a >= b, ">": a > b}[op]
                left = 1 if r else 0
        return left

    def e3(self, ev: bool) -> object:  # + -
        left = self.e4(ev)
        while self.peek() in ("+", "-"):
            op = self.take()
            self.need(op)
            right = self.e4(ev)
            if ev:
                a, b = _to_int(left), _to_int(right)
                left = a + b if op == "+" else a - b
        return left

    def e4(self, ev: bool) -> object:  # * / %
        left = self.e5(ev)
        while self.peek() in ("*", "/", "%"):
            op = self.take()
            self.need(op)
            right = self.e5(ev)
            if ev:
                a, b = _to_int(left), _to_int(right)
                if op == "*":
                    left = a * b
                else:
                    if b == 0:
                        raise ExprError("division by zero")
                    q = abs(a) // abs(b)
                    if (a < 0) != (b < 0):
                        q = -q
                    left = q if op == "/" else a - b * q
        return left

    def e5(self, ev: bool) -> object:  # :
        left = self.e6(ev)
        while self.peek() == ":":
            self.take()
            self.need(":")
            right = self.e6(ev)
            if ev:
                left = self.match(str(left), str(right))
        return left

    def match(self, s: str, pat: str) -> object:
        try:
            rx = compile_posix(pat, extended=False, utf8=self.utf8, dotall=True)
        except RegexError as e:
            msg = str(e)
            if msg.startswith("Unmatched [") and pat.endswith(("[", "[^")):
                msg = "Invalid regular expression"  # glibc: the pattern ends inside "["
            raise ExprError(msg) from None
        with timeout_guard():
            m = rx.rx.match(s, timeout=self.ctx.budget.remaining())
        if rx.groups:
            if m is None or m.group(1) is None:
                return ""
            return m.group(1)
        return 0 if m is None else m.end()

    def e6(self, ev: bool) -> object:  # keywords
        t = self.peek()
        if t is None:
            prev = self.args[self.i - 1] if self.i else ""
            raise ExprError(f"syntax error: missing argument after {self.q(prev)}")
        if t == "+":
            self.take()
            self.need("+")
            return self.take()
        if t == "length":
            self.take()
            self.need("length")
            s = str(self.e6(ev))
            return len(s) if self.utf8 else len(s.encode("utf-8", "surrogateescape"))
        if t == "match":
            self.take()
            self.need("match")
            a = self.e6(ev)
            self.need("match" if False else str(a))
            b = self.e6(ev)
            return self.match(str(a), str(b)) if ev else 0
        if t == "index":
            self.take()
            self.need("index")
            a = str(self.e6(ev))
            self.need(a)
            b = str(self.e6(ev))
            if not ev:
                return 0
            for k, ch in enumerate(a):
                if ch in b:
                    return k + 1
            return 0
        if t == "substr":
            self.take()
            self.need("substr")
            s = str(self.e6(ev))
            self.need(s)
            p = self.e6(ev)
            self.need(str(p))
            n = self.e6(ev)
            if not ev:
                return ""
            if not _is_int(p) or not _is_int(n):
                return ""
            pos, ln = _to_int(p), _to_int(n)
            if pos <= 0 or ln <= 0 or pos > len(s):
                return ""
            return s[pos - 1:pos - 1 + ln]
        return self.e7(ev)

    def e7(self, ev: bool) -> object:
        t = self.take()
        if t == "(":
            self.need("(")
            v = self.e0(ev)
            if self.peek() != ")":
                if self.nomore():
                    raise ExprError(f"syntax error: expecting ')' after {self.q(self.args[self.i - 1])}")
                raise ExprError(f"syntax error: expecting ')' instead of {self.q(self.peek() or '')}")
            self.take()
            return v
        if t == ")":
            raise ExprError(f"syntax error: unexpected ')'")
        return t


@command("expr", usage=USAGE, help=HELP)
def expr(ctx: CommandContext, argv: list[str]) -> int:
    ctx = as_invoked(ctx, "expr")
    args = argv[1:]
    if args and args[0] == "--help":
        ctx.stdout.write(EXPR_HELP)
        return 0
    if args and args[0] == "--version":
        ctx.stdout.write(EXPR_VERSION)
        return 0
    if args and args[0] == "--":
        args = args[1:]
    if not args:
        ctx.error("missing operand")
        ctx.stderr.write(b"Try 'expr --help' for more information.\n")
        return 2
    p = _Parser(ctx, args)
    try:
        v = p.e0(True)
        if not p.nomore():
            raise ExprError(f"syntax error: unexpected argument {p.q(p.peek() or '')}")
    except ExprError as e:
        ctx.error(str(e))
        return e.status
    ctx.stdout.write(f"{v}\n".encode("utf-8", "surrogateescape"))
    return 1 if _null(v) else 0


# -- --help / --version texts of the GNU tools on the reference machine --------------------

EXPR_HELP = b"Usage: expr EXPRESSION\n  or:  expr OPTION\n\n      --help        display this help and exit\n      --version     output version information and exit\n\nPrint the value of EXPRESSION to standard output.  A blank line below\nseparates increasing precedence groups.  EXPRESSION may be:\n\n  ARG1 | ARG2       ARG1 if it is neither null nor 0, otherwise ARG2\n\n  ARG1 & ARG2       ARG1 if neither argument is null or 0, otherwise 0\n\n  ARG1 < ARG2       ARG1 is less than ARG2\n  ARG1 <= ARG2      ARG1 is less than or equal to ARG2\n  ARG1 = ARG2       ARG1 is equal to ARG2\n  ARG1 != ARG2      ARG1 is unequal to ARG2\n  ARG1 >= ARG2      ARG1 is greater than or equal to ARG2\n  ARG1 > ARG2       ARG1 is greater than ARG2\n\n  ARG1 + ARG2       arithmetic sum of ARG1 and ARG2\n  ARG1 - ARG2       arithmetic difference of ARG1 and ARG2\n\n  ARG1 * ARG2       arithmetic product of ARG1 and ARG2\n  ARG1 / ARG2       arithmetic quotient of ARG1 divided by ARG2\n  ARG1 % ARG2       arithmetic remainder of ARG1 divided by ARG2\n\n  STRING : REGEXP   anchored pattern match of REGEXP in STRING\n\n  match STRING REGEXP        same as STRING : REGEXP\n  substr STRING POS LENGTH   substring of STRING, POS counted from 1\n  index STRING CHARS         index in STRING where any CHARS is found, or 0\n  length STRING              length of STRING\n  + TOKEN                    interpret TOKEN as a string, even if it is a\n                               keyword like 'match' or an operator like '/'\n\n  ( EXPRESSION )             value of EXPRESSION\n\nBeware that many operators need to be escaped or quoted for shells.\nComparisons are arithmetic if both ARGs are numbers, else lexicographical.\nPattern matches return the string matched between \\( and \\) or null; if\n\\( and \\) are not used, they return the number of characters matched or 0.\n\nExit status is 0 if EXPRESSION is neither null nor 0, 1 if EXPRESSION is null\nor 0, 2 if EXPRESSION is syntactically invalid, and 3 if an error occurred.\n\nGNU coreutils online help: <https://www.gnu.org/software/coreutils/>\nReport any translation bugs to <https://translationproject.org/team/>\nFull documentation <https://www.gnu.org/software/coreutils/expr>\nor available locally via: info '(coreutils) expr invocation'\n"

EXPR_VERSION = b'expr (GNU coreutils) 9.1\nCopyright (C) 2022 Free Software Foundation, Inc.\nLicense GPLv3+: GNU GPL version 3 or later <https://gnu.org/licenses/gpl.html>.\nThis is free software: you are free to change and redistribute it.\nThere is NO WARRANTY, to the extent permitted by law.\n\nWritten by Mike Parker, James Youngman, and Paul Eggert.\n'
