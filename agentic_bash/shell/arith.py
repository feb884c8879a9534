"""Bash arithmetic: a parser mirroring bash's expr.c, compiled to cached closures over 64-bit wrap-around ints."""

# How this relates to bash's expr.c (bash 5.2):
# * bash evaluates *while* parsing; we parse once per distinct string (LRU cache) into
#   closures and evaluate those. Error texts and "error token" positions are computed at
#   parse time so they match bash's ``lasttp`` (the text from the start of the last token
#   read to the end of the expression).
# * Dead branches (``0 && x``, the untaken arm of ``?:``) are evaluated with ``noeval`` set,
#   as bash does: variables read as 0 and nothing is assigned, division by zero yields 1
#   silently, but ``2**-1`` still fails (bash's exppower ignores noeval).
# * Because bash interleaves evaluation and parsing, side effects and runtime errors that
#   precede a *syntax* error (``x=1, 1 +``, ``1/0 + 08``) happen first; a parse error
#   therefore compiles to a function that replays that prefix and then raises.

from __future__ import annotations

import functools
from typing import Callable, Protocol

__all__ = ["ArithError", "ArithVars", "compiled", "context", "evaluate", "evaluate_in", "parse_int_constant"]

_MASK = (1 << 64) - 1
_SIGN = 1 << 63
_INT_MIN = -(1 << 63)
_INT_MAX = (1 << 63) - 1
MAX_DEPTH = 1024  # bash's MAX_EXPR_RECURSION_LEVEL

_WS = " \t\n"  # \r is not blank to bash arithmetic: x=$'5\r'; $((x)) fails
_ARITHOPS = frozenset("=><+-*/%!()~^&|?:,")
_TOKEN_STARTS = _ARITHOPS
# tokens after which an unknown character means "operand expected" (bash: _is_arithop /
# _is_multiop on the current token); after a number, name or `)` it is an invalid operator.
_OPERAND_EXPECTED_AFTER = frozenset(
    ["=", ">", "<", "+", "-", "*", "/", "%", "!", "(", ")", "~", "^", "&", "|", "?", ":", ",",
     "==", "!=", "<=", ">=", "&&", "||", "<<", ">>", "op=", "**", "++pre", "--pre",
     "++post", "--post", None]
)
_BINPREC = {
    "||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6,
    "<": 7, ">": 7, "<=": 7, ">=": 7, "<<": 8, ">>": 8, "+": 9, "-": 9,
    "*": 10, "/": 10, "%": 10,
}


class ArithError(Exception):
    """An arithmetic error; ``message`` is what bash prints after ``bash: line N: ``."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class SubscriptError(ArithError):
    """An error inside an array subscript: bash -c gives up on the whole script for it."""


class _Abort(Exception):
    """A parse error plus what bash would already have evaluated when it hit it.

    bash evaluates while parsing, so in ``x=1, 2 +`` the assignment happens before the
    syntax error and in ``1/0 + 08`` the division fails before the bad constant is read.
    ``run(ctx, noeval)`` replays that prefix and raises; None means "raise at once".
    """

    def __init__(self, err: ArithError, run: Callable[[_Ctx, bool], None] | None = None) -> None:
        super().__init__(err.message)
        self.err = err
        self.run = run

    def after(self, pre: Callable[[_Ctx, bool], bool]) -> _Abort:
        """Evaluate ``pre`` first; it returns the noeval flag for the rest of the prefix."""
        inner = self.run
        err = self.err

        def run(ctx: _Ctx, ne: bool) -> None:
            ne2 = pre(ctx, ne)
            if inner is not None:
                inner(ctx, ne2)
            raise ArithError(err.message)
        return _Abort(err, run)


def _then(fn: Callable[[_Ctx, bool], object]) -> Callable[[_Ctx, bool], bool]:
    """A prefix step that evaluates ``fn`` and keeps the noeval flag."""
    def pre(ctx: _Ctx, ne: bool) -> bool:
        fn(ctx, ne)
        return ne
    return pre


class ArithVars(Protocol):
    """The interpreter's variables as arithmetic sees them."""

    def get(self, name: str, index: str | None) -> str | None: ...
    def set(self, name: str, index: str | None, value: int) -> None: ...
    def is_assoc(self, name: str) -> bool: ...
    def expand_sub(self, sub: str) -> str: ...


_SUB_SPECIAL = frozenset("$`'\"\\")


def _wrap(v: int) -> int:
    v &= _MASK
    return v - (1 << 64) if v & _SIGN else v


def _cdiv(a: int, b: int) -> int:
    if a == _INT_MIN and b == -1:
        return _INT_MIN
    q = abs(a) // abs(b)
    return -q if (a < 0) != (b < 0) else q


def _cmod(a: int, b: int) -> int:
    if a == _INT_MIN and b == -1:
        return 0
    return a - b * _cdiv(a, b)


def _ipow(a: int, b: int) -> int:
    return _wrap(pow(a & _MASK, b, 1 << 64))


_OPS: dict[str, Callable[[int, int], int]] = {
    "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b,
    "&": lambda a, b: a & b,
    "==": lambda a, b: int(a == b),
    "!=": lambda a, b: int(a != b),
    "<": lambda a, b: int(a < b),
    ">": lambda a, b: int(a > b),
    "<=": lambda a, b: int(a <= b),
    ">=": lambda a, b: int(a >= b),
    # x86-64 masks the shift count to 6 bits; bash inherits it (1<<64 == 1, 1<<-1 == INT_MIN)
    "<<": lambda a, b: _wrap(a << (b & 63)),
    ">>": lambda a, b: a >> (b & 63),
    "+": lambda a, b: _wrap(a + b),
    "-": lambda a, b: _wrap(a - b),
    "*": lambda a, b: _wrap(a * b),
    "/": _cdiv,
    "%": _cmod,
}


class _Ctx:
    __slots__ = ("vars", "depth")

    def __init__(self, vars: ArithVars, depth: int) -> None:
        self.vars = vars
        self.depth = depth


# A compiled node: f(ctx, noeval) -> int
_Fn = Callable[[_Ctx, bool], int]


def _digit_value(c: str, base: int) -> int:
    if "0" <= c <= "9":
        return ord(c) - 48
    if "a" <= c <= "z":
        return ord(c) - 87
    if "A" <= c <= "Z":
        return ord(c) - (29 if base > 36 else 55)
    if c == "@":
        return 62
    return 63  # '_'


def parse_int_constant(text: str) -> int:
    """bash's strlong(): ``17``, ``017``, ``0x1F``, ``2#101``, ``64#@_``; raises ValueError(msg)."""
    s = text
    i = 0
    base = 10
    foundbase = False
    if s.startswith("0"):
        i = 1
        if len(s) == 1:
            return 0
        if s[1] in "xX":
            base = 16
            i = 2
        else:
            base = 8
        foundbase = True
    val = 0
    n = len(s)
    while i < n:
        c = s[i]
        i += 1
        if c == "#":
            if foundbase:
                raise ValueError("invalid number")
            if val < 2 or val > 64:
                raise ValueError("invalid arithmetic base")
            base = val
            val = 0
            foundbase = True
            if i >= n or not (s[i].isalnum() or s[i] in "@_"):
                raise ValueError("invalid integer constant")
        elif (c.isascii() and c.isalnum()) or c in "@_":
            d = _digit_value(c, base)
            if d >= base:
                raise ValueError("value too great for base")
            val = val * base + d
        else:
            break
    return _wrap(val)


def _is_name_start(c: str) -> bool:
    return c == "_" or ("a" <= c <= "z") or ("A" <= c <= "Z")


def _is_name_char(c: str) -> bool:
    return c == "_" or ("a" <= c <= "z") or ("A" <= c <= "Z") or ("0" <= c <= "9")


class _Parser:
    def __init__(self, s: str) -> None:
        self.s = s
        self.shown = s.lstrip(" \t")
        self.pos = 0
        self.type: str | None = None  # current token (None before the first read)
        self.val: object = None
        self.start = 0
        self.lasttp: int | None = None
        self.last_str: tuple[str, str | None, int] | None = None  # bash: lasttok == STR

    # ------------------------------------------------------------------ errors

    def _msg(self, msg: str, tokpos: int | None = None, shown: str | None = None, tokend: int | None = None) -> str:
        tp = self.lasttp if tokpos is None else tokpos
        tok = self.s[tp:tokend] if tp is not None else ""
        return f'{self.shown if shown is None else shown}: {msg} (error token is "{tok}")'

    def error(self, msg: str, tokpos: int | None = None) -> _Abort:
        return _Abort(ArithError(self._msg(msg, tokpos)))

    # --------------------------------------------------------------- tokenizer

    def advance(self) -> None:
        s = self.s
        n = len(s)
        i = self.pos
        while i < n and s[i] in _WS:
            i += 1
        prev = self.type
        if i >= n:
            self.type = "EOF"
            self.pos = i
            return
        self.start = i
        self.lasttp = i
        c = s[i]
        if _is_name_start(c):
            j = i + 1
            while j < n and _is_name_char(s[j]):
                j += 1
            name = s[i:j]
            sub: str | None = None
            if j < n and s[j] == "[":
                depth = 0
                k = j
                while k < n:
                    ch = s[k]
                    if ch == "[":
                        depth += 1
                    elif ch == "]":
                        depth -= 1
                        if depth == 0:
                            break
                    elif ch == "\\":
                        k += 1  # (an escaped character closes nothing)
                    elif ch == "'" or ch == '"':
                        # a quoted `]` closes nothing either (bash's skipsubscript)
                        q = s.find(ch, k + 1)
                        if q < 0:
                            break
                        k = q
                    k += 1
                if k >= n:
                    raise self.error("bad array subscript")
                sub = s[j + 1:k]
                j = k + 1
            self.type = "STR"
            self.val = (name, sub)
            self.pos = j
            # bash's readtok peeks at the token after a name (is it an assignment?), so a
            # character that starts no token fails there, named from itself: `2 a.b`
            k = j
            while k < n and s[k] in _WS:
                k += 1
            if k < n and not (_is_name_start(s[k]) or "0" <= s[k] <= "9") and s[k] not in _TOKEN_STARTS:
                raise self.error("syntax error: invalid arithmetic operator", k)
            return
        if "0" <= c <= "9":
            j = i + 1
            while j < n and (s[j].isalnum() or s[j] in "#@_"):
                j += 1
            try:
                self.val = parse_int_constant(s[i:j])
            except ValueError as e:
                # bash NUL-terminates the token in place, so the expression it prints
                # ends with the bad constant
                raise _Abort(ArithError(self._msg(str(e), i, s[:j].lstrip(" \t"), j))) from None
            self.type = "NUM"
            self.pos = j
            return
        c1 = s[i + 1] if i + 1 < n else ""
        j = i + 2
        t: str
        if c == "=" and c1 == "=":
            t = "=="
        elif c == "!" and c1 == "=":
            t = "!="
        elif c == ">" and c1 == "=":
            t = ">="
        elif c == "<" and c1 == "=":
            t = "<="
        elif c in "<>" and c1 == c:
            if j < n and s[j] == "=":
                t = "op="
                self.val = c + c
                j += 1
            else:
                t = c + c
        elif c == "&" and c1 == "&":
            t = "&&"
        elif c == "|" and c1 == "|":
            t = "||"
        elif c == "*" and c1 == "*":
            t = "**"
        elif c in "+-" and c1 == c and prev == "STR":
            t = c + c + "post"
        elif c in "+-" and c1 == c:
            k = j
            while k < n and s[k] in _WS:
                k += 1
            if k < n and _is_name_start(s[k]):
                t = c + c + "pre"
            else:
                t = c  # not a pre-increment: a unary/binary sign followed by another
                j = i + 1
        elif c1 == "=" and c in "*/%+-&^|":
            t = "op="
            self.val = c
        elif c in _ARITHOPS:
            t = c
            j = i + 1
        else:
            if prev in _OPERAND_EXPECTED_AFTER:
                raise self.error("syntax error: operand expected")
            raise self.error("syntax error: invalid arithmetic operator")
        self.type = t
        self.pos = j

    # ------------------------------------------------------------------ grammar

    def parse(self) -> _Fn:
        self.advance()
        fn = self.comma()
        if self.type != "EOF":
            raise self.error("syntax error in expression").after(_then(fn))
        return fn

    def comma(self) -> _Fn:
        fns = [self.assign()]
        while self.type == ",":
            try:
                self.advance()
                fns.append(self.assign())
            except _Abort as e:
                done = list(fns)
                raise e.after(_then(lambda ctx, ne: [g(ctx, ne) for g in done])) from None
        if len(fns) == 1:
            return fns[0]

        def f(ctx: _Ctx, ne: bool, fns: list[_Fn] = fns) -> int:
            v = 0
            for g in fns:
                v = g(ctx, ne)
            return v
        return f

    def assign(self) -> _Fn:
        self.last_str = None
        lhs = self.cond()
        if self.type not in ("=", "op="):
            return lhs
        if self.last_str is None:
            raise self.error("attempted assignment to non-variable").after(_then(lhs))
        name, sub, vpos = self.last_str
        op = self.val if self.type == "op=" else None
        read = self._reader(name, sub, vpos)
        try:
            self.advance()
            rhs = self.assign()
        except _Abort as e:
            # `x += …` read x when its token was read; `x = …` does not read it
            raise (e if op is None else e.after(_then(read))) from None
        self.last_str = None
        if op is None:
            return self._plain_assign(name, sub, rhs)
        opfn = _OPS[op]  # type: ignore[index]
        divmsg = self._msg("division by 0") if op in ("/", "%") else ""

        def f(ctx: _Ctx, ne: bool) -> int:
            lv, idx = read(ctx, ne)
            v = rhs(ctx, ne)
            if op in ("/", "%") and v == 0:
                if not ne:
                    raise ArithError(divmsg)
                v = 1
            r = opfn(lv, v)
            if not ne:
                ctx.vars.set(name, idx, r)
            return r
        return f

    def cond(self) -> _Fn:
        c = self.binary(1)
        if self.type != "?":
            return c

        def pre_a(ctx: _Ctx, ne: bool) -> bool:
            return ne or not c(ctx, ne)

        def pre_b(ctx: _Ctx, ne: bool) -> bool:
            cv = c(ctx, ne)
            a(ctx, ne or not cv)
            return ne or bool(cv)

        try:
            self.advance()
            if self.type in ("EOF", ":"):
                raise self.error("expression expected")
            a = self.comma()
        except _Abort as e:
            raise e.after(pre_a) from None
        if self.type != ":":
            raise self.error("`:' expected for conditional expression").after(pre_b)
        try:
            self.advance()
            if self.type == "EOF":
                raise self.error("expression expected")
            b = self.cond()
        except _Abort as e:
            raise e.after(pre_b) from None
        self.last_str = None

        def f(ctx: _Ctx, ne: bool) -> int:
            if c(ctx, ne):
                v = a(ctx, ne)
                b(ctx, True)
                return v
            a(ctx, True)
            return b(ctx, ne)
        return f

    def binary(self, minp: int) -> _Fn:
        left = self.power()
        while True:
            p = _BINPREC.get(self.type or "")
            if p is None or p < minp:
                return left
            items: list[tuple[str, _Fn, str]] = []
            while _BINPREC.get(self.type or "") == p:
                op = self.type or ""
                stp = self.pos  # bash reports division by 0 from just after the operator
                try:
                    self.advance()
                    right = self.binary(p + 1)
                except _Abort as e:
                    raise e.after(self._chain_prefix(left, items, op)) from None
                divmsg = ""
                if op in ("/", "%"):
                    rest = self.s[stp:].lstrip(" \t")
                    divmsg = f'{self.shown}: division by 0 (error token is "{rest}")'
                items.append((op, right, divmsg))
            self.last_str = None
            left = self._chain(left, items)

    def _chain_prefix(self, left: _Fn, items: list[tuple[str, _Fn, str]], op: str) -> Callable[[_Ctx, bool], bool]:
        """Evaluate a chain's completed operands; noeval for the operand that failed to parse."""
        done = self._chain(left, items) if items else left

        def pre(ctx: _Ctx, ne: bool) -> bool:
            v = done(ctx, ne)
            if op == "&&":
                return ne or not v
            if op == "||":
                return ne or bool(v)
            return ne
        return pre

    @staticmethod
    def _chain(first: _Fn, items: list[tuple[str, _Fn, str]]) -> _Fn:
        op0 = items[0][0]
        if op0 == "||":
            rest = [it[1] for it in items]

            def f_or(ctx: _Ctx, ne: bool) -> int:
                v = 1 if first(ctx, ne) else 0
                for g in rest:
                    if v:
                        g(ctx, True)
                    else:
                        v = 1 if g(ctx, ne) else 0
                return v
            return f_or
        if op0 == "&&":
            rest = [it[1] for it in items]

            def f_and(ctx: _Ctx, ne: bool) -> int:
                v = 1 if first(ctx, ne) else 0
                for g in rest:
                    if not v:
                        g(ctx, True)
                    else:
                        v = 1 if g(ctx, ne) else 0
                return v
            return f_and
        if len(items) == 1 and not items[0][2]:
            op, g, _m = items[0]
            if op == "+":
                def f_add(ctx: _Ctx, ne: bool) -> int:
                    v = first(ctx, ne) + g(ctx, ne)
                    return v if _INT_MIN <= v <= _INT_MAX else _wrap(v)
                return f_add
            if op == "-":
                def f_sub(ctx: _Ctx, ne: bool) -> int:
                    v = first(ctx, ne) - g(ctx, ne)
                    return v if _INT_MIN <= v <= _INT_MAX else _wrap(v)
                return f_sub
            opfn1 = _OPS[op]

            def f_one(ctx: _Ctx, ne: bool) -> int:
                return opfn1(first(ctx, ne), g(ctx, ne))
            return f_one
        steps = [(_OPS[op], g, msg) for op, g, msg in items]

        def f(ctx: _Ctx, ne: bool) -> int:
            v = first(ctx, ne)
            for opfn, g, msg in steps:
                b = g(ctx, ne)
                if msg and b == 0:
                    if not ne:
                        raise ArithError(msg)
                    v = 1
                    continue
                v = opfn(v, b)
            return v
        return f

    def power(self) -> _Fn:
        base = self.unary()
        if self.type != "**":
            return base
        try:
            self.advance()
            exp = self.power()
        except _Abort as e:
            raise e.after(_then(base)) from None
        self.last_str = None
        msg = self._msg("exponent less than 0")

        def f(ctx: _Ctx, ne: bool) -> int:
            a = base(ctx, ne)
            b = exp(ctx, ne)
            if b == 0:
                return 1
            if b < 0:
                raise ArithError(msg)  # bash raises this even under noeval
            return _ipow(a, b)
        return f

    def unary(self) -> _Fn:
        t = self.type
        if t in ("!", "~", "-", "+"):
            self.advance()
            g = self.unary()
            self.last_str = None
            if t == "!":
                return lambda ctx, ne: 0 if g(ctx, ne) else 1
            if t == "~":
                return lambda ctx, ne: ~g(ctx, ne)
            if t == "-":
                return lambda ctx, ne: _wrap(-g(ctx, ne))
            return g
        return self.primary()

    def primary(self) -> _Fn:
        t = self.type
        if t in ("++pre", "--pre"):
            delta = 1 if t == "++pre" else -1
            self.advance()  # the tokenizer guarantees a name follows
            name, sub = self.val  # type: ignore[misc]
            vpos = self.start
            read = self._reader(name, sub, vpos)

            def f_pre(ctx: _Ctx, ne: bool) -> int:
                v, idx = read(ctx, ne)
                v = _wrap(v + delta)
                if not ne:
                    ctx.vars.set(name, idx, v)
                return v
            self.advance()  # a bad token here fails in bash's peek, before the increment
            if self.type in ("++post", "--post"):
                raise self.error(f"{self.type[:2]}: assignment requires lvalue").after(_then(f_pre))
            self.last_str = None
            return f_pre
        if t == "(":
            self.advance()
            g = self.comma()
            if self.type != ")":
                raise self.error("missing `)'").after(_then(g))
            try:
                self.advance()
            except _Abort as e:
                raise e.after(_then(g)) from None
            self.last_str = None
            return g
        if t == "NUM":
            v = self.val
            self.advance()
            self.last_str = None
            return lambda ctx, ne: v  # type: ignore[return-value]
        if t == "STR":
            name, sub = self.val  # type: ignore[misc]
            vpos = self.start
            self.advance()
            read = self._reader(name, sub, vpos)
            if self.type in ("++post", "--post"):
                delta = 1 if self.type == "++post" else -1

                def f_post(ctx: _Ctx, ne: bool) -> int:
                    v, idx = read(ctx, ne)
                    if not ne:
                        ctx.vars.set(name, idx, _wrap(v + delta))
                    return v
                self.type = "NUM"  # bash: curtok = NUM, so `x++ @` is an invalid operator
                try:
                    self.advance()
                except _Abort as e:
                    raise e.after(_then(f_post)) from None
                self.last_str = None
                return f_post
            self.last_str = (name, sub, vpos)
            if self.type == "=":
                # bash does not look up a name that an `=` follows (it is the target): as an
                # operand of a non-variable's assignment it is 0 (`1 / x = 0` divides by 0)
                return lambda ctx, ne: 0
            if sub is None:
                return self._value_reader(name, vpos)
            return lambda ctx, ne: read(ctx, ne)[0]
        raise self.error("syntax error: operand expected")

    # --------------------------------------------------------------- variables

    def _index(self, name: str, sub: str | None) -> Callable[[_Ctx], str | None]:
        if sub is None:
            return lambda ctx: None
        if sub in ("@", "*"):
            return lambda ctx: sub

        # bash expands a subscript (quotes, $x, $(cmd)) before using it, also when the
        # expression came from a variable's value: x='a[$(echo 2)]'; $((x))
        special = not _SUB_SPECIAL.isdisjoint(sub)

        if sub == "":
            # `a[]` reads as 0 (bash reports the bad subscript twice) and is no lvalue; the
            # adapter's get/set report it, given the empty index
            return lambda ctx: ""

        def idx(ctx: _Ctx) -> str | None:
            s = ctx.vars.expand_sub(sub) if special else sub
            if ctx.vars.is_assoc(name):
                return s
            try:
                return str(_evaluate(s, ctx.vars, ctx.depth + 1))
            except SubscriptError:
                raise
            except ArithError as e:
                raise SubscriptError(e.message) from None
        return idx

    def _reader(self, name: str, sub: str | None, vpos: int) -> Callable[[_Ctx, bool], tuple[int, str | None]]:
        index = self._index(name, sub)
        recmsg = self._msg("expression recursion level exceeded", vpos)

        if sub is None:
            def read_scalar(ctx: _Ctx, ne: bool) -> tuple[int, str | None]:
                if ne:
                    return 0, None
                value = ctx.vars.get(name, None)
                if not value:
                    return 0, None
                if value.isdigit() and value.isascii() and (value[0] != "0" or len(value) == 1) and len(value) < 19:
                    return int(value), None
                if ctx.depth + 1 >= MAX_DEPTH:
                    raise ArithError(recmsg)
                try:
                    return _evaluate(value, ctx.vars, ctx.depth + 1), None
                except RecursionError:
                    raise ArithError(recmsg) from None
            return read_scalar

        def read(ctx: _Ctx, ne: bool) -> tuple[int, str | None]:
            if ne:
                return 0, None
            idx = index(ctx)
            value = ctx.vars.get(name, idx)
            if not value:
                return 0, idx
            if ctx.depth + 1 >= MAX_DEPTH:
                raise ArithError(recmsg)
            try:
                return _evaluate(value, ctx.vars, ctx.depth + 1), idx
            except RecursionError:
                raise ArithError(recmsg) from None
        return read

    def _value_reader(self, name: str, vpos: int) -> _Fn:
        """``x`` as an operand: read_scalar without the index, returning the int itself."""
        recmsg = self._msg("expression recursion level exceeded", vpos)

        def read_value(ctx: _Ctx, ne: bool) -> int:
            if ne:
                return 0
            value = ctx.vars.get(name, None)
            if not value:
                return 0
            if value.isdigit() and value.isascii() and (value[0] != "0" or len(value) == 1) and len(value) < 19:
                return int(value)  # (_is_plain_decimal inlined: this runs for every variable read)
            if ctx.depth + 1 >= MAX_DEPTH:
                raise ArithError(recmsg)
            try:
                return _evaluate(value, ctx.vars, ctx.depth + 1)
            except RecursionError:
                raise ArithError(recmsg) from None
        return read_value

    def _plain_assign(self, name: str, sub: str | None, rhs: _Fn) -> _Fn:
        index = self._index(name, sub)

        def f(ctx: _Ctx, ne: bool) -> int:
            v = rhs(ctx, ne)
            if not ne:
                # bash evaluates the subscript of `a[i]=v` after the right-hand side
                ctx.vars.set(name, index(ctx), v)
            return v
        return f


def _recursion_msg(expr: str) -> str:
    return expr.lstrip(" \t") + ': expression recursion level exceeded (error token is "")'


@functools.lru_cache(maxsize=4096)
def _compile(expr: str) -> _Fn | ArithError:
    if not expr.strip(_WS):
        return _zero
    try:
        return _Parser(expr).parse()
    except _Abort as e:
        if e.run is None:
            return e.err
        run, err = e.run, e.err

        def fail(ctx: _Ctx, ne: bool) -> int:
            run(ctx, ne)
            raise ArithError(err.message)  # not reached: run raises
        return fail
    except RecursionError:
        return ArithError(_recursion_msg(expr))


def _is_plain_decimal(s: str) -> bool:
    return s.isdigit() and s.isascii() and (s[0] != "0" or len(s) == 1) and len(s) < 19


def _zero(ctx: _Ctx, ne: bool) -> int:
    return 0


def _evaluate(expr: str, vars: ArithVars, depth: int) -> int:
    if _is_plain_decimal(expr):
        return int(expr)
    fn = _compile(expr)
    if isinstance(fn, ArithError):
        raise ArithError(fn.message)
    return fn(_Ctx(vars, depth), False)


def context(vars: ArithVars) -> _Ctx:
    """A top-level evaluation context for ``evaluate_in`` (reusable: it is never mutated)."""
    return _Ctx(vars, 0)


_FNS: dict[str, _Fn] = {}


def _raiser(err: ArithError) -> _Fn:
    def fail(ctx: _Ctx, ne: bool) -> int:
        raise ArithError(err.message)
    return fail


def compiled(expr: str) -> _Fn | None:
    """The compiled form of ``expr`` (a function raising ArithError when it does not parse),
    or None for a plain decimal constant (``int(expr)``), which is not worth caching."""
    fn = _FNS.get(expr)
    if fn is None:
        if _is_plain_decimal(expr):
            return None
        c = _compile(expr)
        fn = _raiser(c) if type(c) is ArithError else c  # type: ignore[arg-type]
        if len(_FNS) >= 4096:
            _FNS.clear()
        _FNS[expr] = fn  # type: ignore[assignment]
    return fn


def evaluate_in(expr: str, ctx: _Ctx) -> int:
    """``evaluate`` with a context made once by ``context(vars)``."""
    try:
        fn = _FNS.get(expr) or compiled(expr)
        if fn is None:
            return int(expr)
        return fn(ctx, False)
    except RecursionError:
        raise ArithError(_recursion_msg(expr)) from None


def evaluate(expr: str, vars: ArithVars) -> int:
    """Evaluate a bash arithmetic expression (``$`` already expanded); empty means 0."""
    try:
        return _evaluate(expr, vars, 0)
    except RecursionError:
        raise ArithError(_recursion_msg(expr)) from None
