"""bc: arbitrary-precision calculator (GNU bc's common subset) with exact decimal truncation."""

# Numbers are (integer, scale) pairs meaning int / 10**scale, so every operation truncates
# exactly like bc: * keeps min(sa+sb, max(scale, sa, sb)) digits, / keeps `scale` digits.

from __future__ import annotations

import decimal
import re
from typing import Any

from .base import CommandContext, command

__all__ = ["Num"]


class Num:
    __slots__ = ("v", "s")

    def __init__(self, v: int, s: int = 0) -> None:
        self.v = v
        self.s = s

    @staticmethod
    def of(n: int) -> "Num":
        return Num(n, 0)

    def rescale(self, s: int) -> "Num":
        if s == self.s:
            return self
        if s > self.s:
            return Num(self.v * 10 ** (s - self.s), s)
        d = 10 ** (self.s - s)
        q = abs(self.v) // d
        return Num(q if self.v >= 0 else -q, s)

    def is_zero(self) -> bool:
        return self.v == 0

    def to_int(self) -> int:
        d = 10 ** self.s
        q = abs(self.v) // d
        return q if self.v >= 0 else -q

    def cmp(self, o: "Num") -> int:
        s = max(self.s, o.s)
        a, b = self.rescale(s).v, o.rescale(s).v
        return (a > b) - (a < b)

    def to_decimal(self) -> decimal.Decimal:
        return decimal.Decimal(self.v).scaleb(-self.s)

    @staticmethod
    def from_decimal(d: decimal.Decimal, s: int) -> "Num":
        q = d.scaleb(s).to_integral_value(rounding=decimal.ROUND_DOWN)
        return Num(int(q), s)


class BcError(Exception):
    pass


class _Quit(Exception):
    pass


class _Halt(Exception):
    pass


class _Return(Exception):
    def __init__(self, v: Num) -> None:
        super().__init__()
        self.v = v


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


# --------------------------------------------------------------------------- lexer

_TOK = re.compile(r"""
    (?P<ws>[ \t\r]+|\\\n)
  | (?P<comment>/\*.*?\*/|\#[^\n]*)
  | (?P<nl>\n)
  | (?P<num>[0-9A-Z]+(?:\.[0-9A-Z]*)?|\.[0-9A-Z]+|\.)
  | (?P<str>"[^"]*")
  | (?P<name>[a-z][a-z0-9_]*)
  | (?P<op>\+\+|--|\+=|-=|\*=|/=|%=|\^=|==|<=|>=|!=|&&|\|\||[-+*/%^=<>!(){}\[\];,])
""", re.S | re.X)

KEYWORDS = {"if", "else", "while", "for", "break", "continue", "return", "define", "auto", "print", "quit",
            "halt", "length", "scale", "sqrt", "ibase", "obase", "last", "read", "limits", "warranty"}


def tokenize(src: str) -> list[tuple[str, str, int]]:
    out = []
    pos = 0
    line = 1
    n = len(src)
    while pos < n:
        m = _TOK.match(src, pos)
        if m is None:
            raise BcError(f"illegal character: {src[pos]}|{line}")
        kind = m.lastgroup
        text = m.group(0)
        if kind == "nl":
            line += 1
            out.append(("nl", "\n", line))  # bc reports errors here after counting the newline
        elif kind == "ws":
            line += text.count("\n")
        elif kind == "comment":
            line += text.count("\n")
        elif kind == "name":
            out.append(("kw" if text in KEYWORDS else "name", text, line))
        else:
            if kind == "str":
                line += text.count("\n")
            out.append((kind, text, line))  # type: ignore[arg-type]
        pos = m.end()
    out.append(("eof", "", line))
    return out


# --------------------------------------------------------------------------- parser

class Parser:
    def __init__(self, toks: list[tuple[str, str, int]]) -> None:
        self.t = toks
        self.p = 0

    def peek(self, k: int = 0) -> tuple[str, str, int]:
        return self.t[min(self.p + k, len(self.t) - 1)]

    def at(self, text: str) -> bool:
        k, v, _ = self.peek()
        return v == text and k in ("op", "kw")

    def eat(self, text: str) -> None:
        if not self.at(text):
            raise BcError(f"syntax error|{self.peek()[2]}")
        self.p += 1

    def skip_nl(self) -> None:
        while self.peek()[0] == "nl" or self.at(";"):
            self.p += 1

    def program_item(self) -> Any:
        """One top-level item (statement or define); None at EOF."""
        while self.peek()[0] == "nl" or self.at(";"):
            self.p += 1
        if self.peek()[0] == "eof":
            return None
        if self.at("define"):
            return self.define()
        s = self.statement()
        self.end_stmt()
        return s

    def end_stmt(self) -> None:
        k, v, line = self.peek()
        if k in ("nl", "eof") or v in (";", "}"):
            if v == ";" or k == "nl":
                self.p += 1
            return
        raise BcError(f"syntax error|{line}")

    def define(self) -> Any:
        self.eat("define")
        k, name, line = self.peek()
        if k != "name":
            raise BcError(f"syntax error|{line}")
        self.p += 1
        self.eat("(")
        params = []
        while not self.at(")"):
            k, pn, line = self.peek()
            if k != "name":
                raise BcError(f"syntax error|{line}")
            self.p += 1
            if self.at("["):
                self.eat("[")
                self.eat("]")
                pn += "[]"
            params.append(pn)
            if self.at(","):
                self.p += 1
        self.eat(")")
        while self.peek()[0] == "nl":
            self.p += 1
        self.eat("{")
        autos: list[str] = []
        body = []
        while True:
            self.skip_nl()
            if self.at("}"):
                break
            if self.at("auto"):
                self.p += 1
                while True:
                    k, an, line = self.peek()
                    if k != "name":
                        raise BcError(f"syntax error|{line}")
                    self.p += 1
                    if self.at("["):
                        self.eat("[")
                        self.eat("]")
                        an += "[]"
                    autos.append(an)
                    if self.at(","):
                        self.p += 1
                        continue
                    break
                self.end_stmt()
                continue
            body.append(self.statement())
            if not self.at("}"):
                self.end_stmt()
        self.eat("}")
        return ("define", name, params, autos, body)

    def block_or_stmt(self) -> Any:
        while self.peek()[0] == "nl":
            self.p += 1
        return self.statement()

    def statement(self) -> Any:
        k, v, line = self.peek()
        if k == "str":
            self.p += 1
            return ("str", v[1:-1])
        if v == "{" and k == "op":
            self.p += 1
            body = []
            while True:
                self.skip_nl()
                if self.at("}"):
                    break
                body.append(self.statement())
                if not self.at("}"):
                    self.end_stmt()
            self.eat("}")
            return ("block", body)
        if k == "kw":
            if v == "if":
                self.p += 1
                self.eat("(")
                c = self.expr()
                self.eat(")")
                then = self.block_or_stmt()
                save = self.p
                while self.peek()[0] == "nl" or self.at(";"):
                    self.p += 1
                if self.at("else"):
                    self.p += 1
                    return ("if", c, then, self.block_or_stmt())
                self.p = save
                return ("if", c, then, None)
            if v == "while":
                self.p += 1
                self.eat("(")
                c = self.expr()
                self.eat(")")
                return ("while", c, self.block_or_stmt())
            if v == "for":
                self.p += 1
                self.eat("(")
                a = None if self.at(";") else self.expr()
                self.eat(";")
                b = None if self.at(";") else self.expr()
                self.eat(";")
                c = None if self.at(")") else self.expr()
                self.eat(")")
                return ("for", a, b, c, self.block_or_stmt())
            if v == "break":
                self.p += 1
                return ("break",)
            if v == "continue":
                self.p += 1
                return ("continue",)
            if v == "halt":
                self.p += 1
                return ("halt",)
            if v == "quit":
                # quit acts when it is read, not when it is executed
                raise _Quit()
            if v in ("limits", "warranty"):
                self.p += 1
                return ("block", [])
            if v == "return":
                self.p += 1
                if self.at("("):
                    self.p += 1
                    if self.at(")"):
                        self.p += 1
                        return ("return", None)
                    e = self.expr()
                    self.eat(")")
                    return ("return", e)
                if self.peek()[0] in ("nl", "eof") or self.at(";") or self.at("}"):
                    return ("return", None)
                return ("return", self.expr())
            if v == "print":
                self.p += 1
                items = []
                while True:
                    if self.peek()[0] == "str":
                        items.append(("str", self.peek()[1][1:-1]))
                        self.p += 1
                    else:
                        items.append(self.expr())
                    if self.at(","):
                        self.p += 1
                        continue
                    break
                return ("print", items)
        if k in ("nl", "eof") or v in (";",):
            return ("block", [])
        return ("expr", self.expr())

    # expressions: || && ! relational assignment +- */% ^ unary ++--
    def expr(self) -> Any:
        left = self.and_()
        while self.at("||"):
            self.p += 1
            left = ("or", left, self.and_())
        return left

    def and_(self) -> Any:
        left = self.not_()
        while self.at("&&"):
            self.p += 1
            left = ("and", left, self.not_())
        return left

    def not_(self) -> Any:
        if self.at("!"):
            self.p += 1
            return ("not", self.not_())
        return self.rel()

    def rel(self) -> Any:
        left = self.assign()
        k, v, _ = self.peek()
        if k == "op" and v in ("<", "<=", ">", ">=", "==", "!="):
            self.p += 1
            return ("rel", v, left, self.assign())
        return left

    def assign(self) -> Any:
        left = self.add()
        k, v, line = self.peek()
        if k == "op" and v in ("=", "+=", "-=", "*=", "/=", "%=", "^="):
            if left[0] not in ("var", "idx", "special"):
                raise BcError(f"syntax error|{line}")
            self.p += 1
            return ("assign", v, left, self.assign())
        return left

    def add(self) -> Any:
        left = self.mul()
        while self.at("+") or self.at("-"):
            op = self.peek()[1]
            self.p += 1
            left = ("bin", op, left, self.mul())
        return left

    def mul(self) -> Any:
        left = self.pow_()
        while self.at("*") or self.at("/") or self.at("%"):
            op = self.peek()[1]
            self.p += 1
            left = ("bin", op, left, self.pow_())
        return left

    def pow_(self) -> Any:
        base = self.unary()
        if self.at("^"):
            self.p += 1
            return ("bin", "^", base, self.pow_())
        return base

    def unary(self) -> Any:
        if self.at("-"):
            self.p += 1
            return ("neg", self.unary())
        if self.at("++") or self.at("--"):
            op = self.peek()[1]
            self.p += 1
            lv = self.primary()
            return ("pre", op, lv)
        e = self.primary()
        if (self.at("++") or self.at("--")) and e[0] in ("var", "idx", "special"):
            op = self.peek()[1]
            self.p += 1
            return ("post", op, e)
        return e

    def primary(self) -> Any:
        k, v, line = self.peek()
        if k == "num":
            self.p += 1
            if v == ".":
                return ("last",)
            return ("num", v)
        if v == "(" and k == "op":
            self.p += 1
            e = self.expr()
            self.eat(")")
            return e
        if k == "kw" and v in ("scale", "ibase", "obase", "last"):
            self.p += 1
            if v == "scale" and self.at("("):
                self.p += 1
                e = self.expr()
                self.eat(")")
                return ("fn_scale", e)
            return ("special", v)
        if k == "kw" and v in ("length", "sqrt"):
            self.p += 1
            self.eat("(")
            e = self.expr()
            self.eat(")")
            return ("fn_" + v, e)
        if k == "kw" and v == "read":
            self.p += 1
            self.eat("(")
            self.eat(")")
            return ("read",)
        if k == "name":
            self.p += 1
            if self.at("("):
                self.p += 1
                args = []
                while not self.at(")"):
                    if self.peek()[0] == "name" and self.peek(1)[1] == "[" and self.peek(2)[1] == "]":
                        args.append(("arrref", self.peek()[1]))
                        self.p += 3
                    else:
                        args.append(self.expr())
                    if self.at(","):
                        self.p += 1
                    elif not self.at(")"):
                        raise BcError(f"syntax error|{self.peek()[2]}")
                self.eat(")")
                return ("call", v, args)
            if self.at("["):
                self.p += 1
                e = self.expr()
                self.eat("]")
                return ("idx", v, e)
            return ("var", v)
        raise BcError(f"syntax error|{line}")


# --------------------------------------------------------------------------- interpreter

_MATHLIB = {"s", "c", "a", "l", "e", "j"}


class Interp:
    def __init__(self, ctx: CommandContext, mathlib: bool) -> None:
        self.ctx = ctx
        self.scale = 20 if mathlib else 0
        self.ibase = 10
        self.obase = 10
        self.last = Num(0)
        self.vars: dict[str, Num] = {}
        self.arrays: dict[str, dict[int, Num]] = {}
        self.funcs: dict[str, Any] = {}
        self.frames: list[dict[str, Any]] = []
        self.mathlib = mathlib
        self.line_len = 70
        ll = ctx.env.get("BC_LINE_LENGTH")
        if ll is not None and ll.isdigit():
            self.line_len = int(ll)
        self.fname = "(main)"
        self.steps = 0

    # -- output ---------------------------------------------------------------------------
    def out(self, s: str) -> None:
        self.ctx.stdout.write(s.encode("utf-8", "surrogateescape"))

    def fmt(self, n: Num) -> str:
        if self.obase == 10:
            s = self._fmt10(n)
        else:
            s = self._fmt_base(n, self.obase)
        return self._wrap(s)

    def _wrap(self, s: str) -> str:
        L = self.line_len
        if L <= 2 or len(s) < L:
            return s
        parts = []
        while len(s) >= L:
            parts.append(s[:L - 2] + "\\\n")
            s = s[L - 2:]
        parts.append(s)
        return "".join(parts)

    @staticmethod
    def _fmt10(n: Num) -> str:
        if n.v == 0:
            return "0"
        neg = n.v < 0
        a = abs(n.v)
        ip, fp = divmod(a, 10 ** n.s)
        s = _digits(ip) if ip else ""
        if n.s:
            s += "." + _digits(fp).rjust(n.s, "0")
        return ("-" if neg else "") + s

    def _fmt_base(self, n: Num, base: int) -> str:
        if n.v == 0:
            return "0"
        neg = n.v < 0
        a = abs(n.v)
        ip, fp = divmod(a, 10 ** n.s)
        if base <= 16:
            digs = "0123456789ABCDEF"

            def d(x: int) -> str:
                return digs[x]
            sep = ""
        else:
            w = len(str(base - 1))

            def d(x: int) -> str:
                return " " + str(x).rjust(w, "0")
            sep = ""
        out = []
        if ip == 0:
            ipart = "" if base <= 16 else ""
        else:
            ds = []
            while ip:
                ip, r = divmod(ip, base)
                ds.append(d(r))
            ipart = sep.join(reversed(ds))
        out.append(ipart)
        if n.s:
            # fraction digits until the precision of the scale is reached
            frac_s = ["."]
            num, den = fp, 10 ** n.s
            prec = 1
            while prec < 10 ** n.s:
                num *= base
                dig, num = divmod(num, den)
                frac_s.append(d(dig))
                prec *= base
            out.append("".join(frac_s))
        s = "".join(out)
        return ("-" if neg else "") + s

    # -- errors -------------------------------------------------------------------------------
    def rt_error(self, msg: str) -> BcError:
        return BcError(f"Runtime error (func={self.fname}, adr=0): {msg}")

    # -- values -----------------------------------------------------------------------------------
    def parse_num(self, text: str) -> Num:
        ib = self.ibase
        if ib == 10 and re.fullmatch(r"[0-9]*\.?[0-9]*", text):
            if "." in text:
                ip, fp = text.split(".")
                return Num(_int(ip + fp) if (ip or fp) else 0, len(fp))
            return Num(_int(text))
        if len(text) == 1 and text.isalnum():
            return Num(int(text, 16))
        ip, _, fp = text.partition(".")
        v = 0
        for c in ip:
            v = v * ib + min(int(c, 16), ib - 1 if len(text) > 1 else 15)
        if not fp:
            return Num(v)
        scale = len(fp)
        num, den = 0, 1
        for c in fp:
            num = num * ib + min(int(c, 16), ib - 1)
            den *= ib
        return Num(v * 10 ** scale + (num * 10 ** scale) // den, scale)

    def get_var(self, name: str) -> Num:
        for fr in reversed(self.frames[-1:]):
            if name in fr:
                return fr[name]
        return self.vars.get(name, Num(0))

    def set_var(self, name: str, v: Num) -> None:
        if self.frames and name in self.frames[-1]:
            self.frames[-1][name] = v
        else:
            self.vars[name] = v

    def get_array(self, name: str) -> dict[int, Num]:
        key = name + "[]"
        if self.frames and key in self.frames[-1]:
            return self.frames[-1][key]
        return self.arrays.setdefault(name, {})

    def lvalue_get(self, lv: Any) -> Num:
        if lv[0] == "var":
            return self.get_var(lv[1])
        if lv[0] == "idx":
            return self.get_array(lv[1]).get(self.index(lv[2]), Num(0))
        return self.special_get(lv[1])

    def lvalue_set(self, lv: Any, v: Num) -> None:
        if lv[0] == "var":
            self.set_var(lv[1], v)
        elif lv[0] == "idx":
            self.get_array(lv[1])[self.index(lv[2])] = v
        else:
            self.special_set(lv[1], v)

    def index(self, e: Any) -> int:
        i = self.eval(e).to_int()
        if i < 0 or i > 16777215:
            raise self.rt_error("Array index out of bounds")
        return i

    def special_get(self, name: str) -> Num:
        if name == "scale":
            return Num(self.scale)
        if name == "ibase":
            return Num(self.ibase)
        if name == "obase":
            return Num(self.obase)
        return self.last

    def special_set(self, name: str, v: Num) -> None:
        i = v.to_int()
        if name == "scale":
            if i < 0:
                raise self.rt_error("negative scale")
            self.scale = i
        elif name == "ibase":
            if i < 2:
                self.warn("ibase too small, set to 2")
                i = 2
            elif i > 16:
                self.warn("ibase too large, set to 16")
                i = 16
            self.ibase = i
        elif name == "obase":
            if i < 2:
                raise self.rt_error("obase too small")
            self.obase = i
        else:
            self.last = v

    def warn(self, msg: str) -> None:
        self.ctx.stderr.write(f"Runtime warning (func={self.fname}, adr=0): {msg}\n".encode())

    # -- arithmetic ---------------------------------------------------------------------------------
    def binop(self, op: str, a: Num, b: Num) -> Num:
        if op in "+-":
            s = max(a.s, b.s)
            x, y = a.rescale(s).v, b.rescale(s).v
            return Num(x + y if op == "+" else x - y, s)
        if op == "*":
            full = Num(a.v * b.v, a.s + b.s)
            return full.rescale(min(a.s + b.s, max(self.scale, a.s, b.s)))
        if op == "/":
            return self.div(a, b, self.scale)
        if op == "%":
            if b.is_zero():
                raise self.rt_error("Modulo by zero")
            s2 = max(self.scale + b.s, a.s)
            q = self.div(a, b, self.scale)
            prod = Num(q.v * b.v, q.s + b.s)
            s = max(a.s, prod.s)
            r = Num(a.rescale(s).v - prod.rescale(s).v, s)
            return r.rescale(s2) if r.s > s2 else r
        if op == "^":
            return self.power(a, b)
        raise self.rt_error(f"bad op {op}")

    def div(self, a: Num, b: Num, scale: int) -> Num:
        if b.is_zero():
            raise self.rt_error("Divide by zero")
        # a/b truncated to `scale` digits
        num = a.v * 10 ** (b.s + scale)
        den = b.v * 10 ** a.s
        q = abs(num) // abs(den)
        if (num < 0) != (den < 0):
            q = -q
        return Num(q, scale)

    def power(self, a: Num, b: Num) -> Num:
        if b.s and b.v % 10 ** b.s:
            self.warn("non-zero scale in exponent")
        e = b.to_int()
        if e == 0:
            return Num(1)
        if abs(e) > 1000000:
            raise self.rt_error("exponent too large")
        if e < 0:
            p = Num(a.v ** -e, a.s * -e)
            return self.div(Num(1), p, self.scale)
        full = Num(a.v ** e, a.s * e)
        return full.rescale(min(a.s * e, max(self.scale, a.s)))

    def sqrt(self, a: Num) -> Num:
        if a.v < 0:
            raise self.rt_error("Square root of a negative number")
        s = max(self.scale, a.s)
        # isqrt of a * 10^(2s) / 10^a.s
        n = a.v * 10 ** (2 * s - a.s) if 2 * s >= a.s else a.v // 10 ** (a.s - 2 * s)
        import math
        return Num(math.isqrt(n), s)

    # -- math library ------------------------------------------------------------------------------
    def mathfn(self, name: str, args: list[Num]) -> Num:
        s = self.scale
        with decimal.localcontext() as dc:
            dc.prec = s + 30
            x = args[-1].to_decimal()
            if name == "s":
                r = _dsin(x, dc.prec)
            elif name == "c":
                r = _dcos(x, dc.prec)
            elif name == "a":
                r = _datan(x, dc.prec)
            elif name == "l":
                if x <= 0:
                    # bc's l() of a non-positive number
                    return Num(-(10 ** (s + 1)) // 10 ** 1 * 0 - 1 * 10 ** s // 1, s) if False else Num(0, 0)
                r = x.ln()
            elif name == "e":
                r = x.exp()
            else:
                r = _dbessel(int(args[0].to_int()), x, dc.prec)
            return Num.from_decimal(r, s)

    # -- evaluation -----------------------------------------------------------------------------------
    def eval(self, e: Any) -> Num:
        k = e[0]
        if k == "num":
            return self.parse_num(e[1])
        if k == "var":
            return self.get_var(e[1])
        if k == "idx":
            return self.get_array(e[1]).get(self.index(e[2]), Num(0))
        if k == "special":
            return self.special_get(e[1])
        if k == "last":
            return self.last
        if k == "bin":
            left = e[2]
            if left[0] != "bin" or e[1] == "^":
                return self.binop(e[1], self.eval(left), self.eval(e[3]))
            # a left-deep chain (`seq 100000 | paste -sd+ | bc`): folded in a loop, left to
            # right, rather than one Python frame per operator
            spine = [e]
            while left[0] == "bin" and left[1] != "^":
                spine.append(left)
                left = left[2]
            acc = self.eval(left)
            for node in reversed(spine):
                acc = self.binop(node[1], acc, self.eval(node[3]))
            return acc
        if k == "neg":
            v = self.eval(e[1])
            return Num(-v.v, v.s)
        if k == "rel":
            c = self.eval(e[2]).cmp(self.eval(e[3]))
            r = {"<": c < 0, "<=": c <= 0, ">": c > 0, ">=": c >= 0, "==": c == 0, "!=": c != 0}[e[1]]
            return Num(int(r))
        if k == "not":
            return Num(int(self.eval(e[1]).is_zero()))
        if k == "and":
            return Num(int(not self.eval(e[1]).is_zero() and not self.eval(e[2]).is_zero()))
        if k == "or":
            return Num(int(not self.eval(e[1]).is_zero() or not self.eval(e[2]).is_zero()))
        if k == "assign":
            op, lv, rhs = e[1], e[2], e[3]
            v = self.eval(rhs)
            if op != "=":
                v = self.binop(op[0], self.lvalue_get(lv), v)
            self.lvalue_set(lv, v)
            return self.lvalue_get(lv) if lv[0] == "special" else v
        if k in ("pre", "post"):
            lv = e[2]
            old = self.lvalue_get(lv)
            new = self.binop("+" if e[1] == "++" else "-", old, Num(1))
            self.lvalue_set(lv, new)
            return new if k == "pre" else old
        if k == "fn_length":
            v = self.eval(e[1])
            if v.v == 0:
                return Num(1 if v.s == 0 else v.s)
            digits = len(_digits(abs(v.v)))
            return Num(max(digits, v.s))
        if k == "fn_scale":
            return Num(self.eval(e[1]).s)
        if k == "fn_sqrt":
            return self.sqrt(self.eval(e[1]))
        if k == "read":
            line = self.ctx.stdin.readline().decode("utf-8", "replace").strip()
            try:
                return self.parse_num(line or "0")
            except ValueError:
                raise self.rt_error("Read error") from None
        if k == "call":
            return self.call(e[1], e[2])
        raise self.rt_error(f"cannot evaluate {k}")

    def call(self, name: str, args: list) -> Num:
        f = self.funcs.get(name)
        if f is None:
            if self.mathlib and name in _MATHLIB and (len(args) == (2 if name == "j" else 1)):
                return self.mathfn(name, [self.eval(a) for a in args])
            raise self.rt_error(f"Function {name} not defined.")
        _, _, params, autos, body = f
        if len(args) != len(params):
            raise self.rt_error(f"Parameter number mismatch")
        frame: dict[str, Any] = {}
        for p, a in zip(params, args):
            if p.endswith("[]"):
                if a[0] != "arrref":
                    raise self.rt_error("Parameter type mismatch")
                frame[p] = dict(self.get_array(a[1]))
            else:
                if a[0] == "arrref":
                    raise self.rt_error("Parameter type mismatch")
                frame[p] = self.eval(a)
        for au in autos:
            frame[au] = {} if au.endswith("[]") else Num(0)
        if len(self.frames) > 1000:
            raise self.rt_error("Function call nesting too deep")
        # bc has dynamic scoping: callee sees caller's autos unless shadowed
        merged = dict(self.frames[-1]) if self.frames else {}
        merged.update(frame)
        self.frames.append(merged)
        saved = self.fname
        self.fname = name
        try:
            for st in body:
                self.exec(st)
        except _Return as r:
            return r.v
        finally:
            top = self.frames.pop()
            if self.frames:
                for key in self.frames[-1]:
                    if key not in frame and key in top:
                        self.frames[-1][key] = top[key]
            self.fname = saved
        return Num(0)

    def exec(self, st: Any) -> None:
        self.steps += 1
        if self.steps & 255 == 0:
            self.ctx.budget.check()
        k = st[0]
        if k == "expr":
            e = st[1]
            v = self.eval(e)
            if e[0] != "assign":
                self.out(self.fmt(v) + "\n")
                self.last = v
        elif k == "str":
            self.out(st[1])
        elif k == "print":
            for it in st[1]:
                if it[0] == "str":
                    self.out(_bc_escapes(it[1]))
                else:
                    v = self.eval(it)
                    self.out(self.fmt(v))
                    self.last = v
        elif k == "block":
            for s in st[1]:
                self.exec(s)
        elif k == "if":
            if not self.eval(st[1]).is_zero():
                self.exec(st[2])
            elif st[3] is not None:
                self.exec(st[3])
        elif k == "while":
            while not self.eval(st[1]).is_zero():
                self.ctx.budget.charge_iteration()
                try:
                    self.exec(st[2])
                except _Break:
                    break
                except _Continue:
                    continue
        elif k == "for":
            if st[1] is not None:
                self.eval(st[1])
            while st[2] is None or not self.eval(st[2]).is_zero():
                self.ctx.budget.charge_iteration()
                try:
                    self.exec(st[4])
                except _Break:
                    break
                except _Continue:
                    pass
                if st[3] is not None:
                    self.eval(st[3])
        elif k == "break":
            raise _Break()
        elif k == "continue":
            raise _Continue()
        elif k == "halt":
            raise _Halt()
        elif k == "return":
            if not self.frames:
                raise BcError("Return outside of a function.")
            raise _Return(Num(0) if st[1] is None else self.eval(st[1]))
        elif k == "define":
            self.funcs[st[1]] = st


def _digits(n: int) -> str:
    """``str(n)`` for a natural number of any size: Python refuses more than 4300 digits
    (sys.get_int_max_str_digits, process-wide), bc prints 20000! in full. Halves split at a
    power of ten, each under the limit (and faster than one quadratic str() on 3.11)."""
    if n.bit_length() < 13000:
        return str(n)
    k = int(n.bit_length() * 0.30102999566398) // 2
    hi, lo = divmod(n, 10 ** k)
    return _digits(hi) + _digits(lo).rjust(k, "0")


def _int(text: str) -> int:
    """``int(text)`` for a decimal literal of any length (see _digits)."""
    if len(text) < 4000:
        return int(text or "0")
    k = len(text) // 2
    return _int(text[:-k]) * 10 ** k + _int(text[-k:])


def _bc_escapes(s: str) -> str:
    out = []
    i = 0
    m = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "q": '"', "r": "\r", "t": "\t", "\\": "\\", "e": "\\"}
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s) and s[i + 1] in m:
            out.append(m[s[i + 1]])
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _dsin(x: decimal.Decimal, prec: int) -> decimal.Decimal:
    pi = _dpi(prec)
    x = x % (2 * pi)
    term = x
    s = x
    i = 1
    eps = decimal.Decimal(10) ** -(prec - 2)
    while abs(term) > eps:
        term = -term * x * x / ((2 * i) * (2 * i + 1))
        s += term
        i += 1
    return s


def _dcos(x: decimal.Decimal, prec: int) -> decimal.Decimal:
    pi = _dpi(prec)
    x = x % (2 * pi)
    term = decimal.Decimal(1)
    s = term
    i = 1
    eps = decimal.Decimal(10) ** -(prec - 2)
    while abs(term) > eps:
        term = -term * x * x / ((2 * i - 1) * (2 * i))
        s += term
        i += 1
    return s


def _dpi(prec: int) -> decimal.Decimal:
    with decimal.localcontext() as c:
        c.prec = prec + 5
        return 4 * _datan_raw(decimal.Decimal(1) / 5, prec + 5) * 4 - 4 * _datan_raw(decimal.Decimal(1) / 239,
                                                                                        prec + 5)


def _datan_raw(x: decimal.Decimal, prec: int) -> decimal.Decimal:
    term = x
    s = x
    i = 1
    eps = decimal.Decimal(10) ** -(prec - 2)
    x2 = x * x
    while abs(term) > eps:
        term = -term * x2
        s += term / (2 * i + 1)
        i += 1
    return s


def _datan(x: decimal.Decimal, prec: int) -> decimal.Decimal:
    if x < 0:
        return -_datan(-x, prec)
    if x > 1:
        return _dpi(prec) / 2 - _datan(1 / x, prec)
    if x > decimal.Decimal("0.5"):
        # atan(x) = 2 atan(x / (1 + sqrt(1 + x^2)))
        return 2 * _datan(x / (1 + (1 + x * x).sqrt()), prec)
    return _datan_raw(x, prec)


def _dbessel(n: int, x: decimal.Decimal, prec: int) -> decimal.Decimal:
    n = abs(n)
    half = x / 2
    import math
    term = half ** n / math.factorial(n)
    s = term
    k = 1
    eps = decimal.Decimal(10) ** -(prec - 2)
    while abs(term) > eps or k < 3:
        term = -term * half * half / (k * (k + n))
        s += term
        k += 1
    return s


@command("bc", usage="bc [-lqs] [file ...]", help="An arbitrary precision calculator language (GNU bc subset).")
def bc(ctx: CommandContext, argv: list[str]) -> int:
    mathlib = False
    files: list[str] = []
    for a in argv[1:]:
        if a.startswith("--"):
            if a == "--mathlib":
                mathlib = True
            elif a in ("--quiet", "--standard", "--warn"):
                pass
            elif a == "--version":
                ctx.stdout.write(b"bc 1.07.1\n")
                return 0
            elif a == "--help":
                ctx.stdout.write(b"usage: bc [options] [file ...]\n")
                return 0
            else:
                ctx.stderr.write(f"bc: unrecognized option '{a}'\n".encode())
                return 1
        elif a.startswith("-") and len(a) > 1:
            for c in a[1:]:
                if c == "l":
                    mathlib = True
                elif c in "qswi":
                    pass
                elif c == "v":
                    ctx.stdout.write(b"bc 1.07.1\n")
                    return 0
                else:
                    ctx.stderr.write(f"bc: invalid option -- '{c}'\n".encode())
                    return 1
        else:
            files.append(a)
    it = Interp(ctx, mathlib)
    sources: list[tuple[str, str]] = []
    for f in files:
        try:
            with ctx.fs.open(ctx.path(f), "rb") as fh:
                sources.append((f, fh.read().decode("utf-8", "replace")))
        except OSError:
            ctx.stderr.write(f"File {f} is unavailable.\n".encode())
            return 1
    stdin_text = ctx.stdin.read().decode("utf-8", "replace")
    sources.append(("(standard_in)", stdin_text))
    for name, text in sources:
        try:
            if _run_source(it, ctx, name, text):
                return 0
        except _Halt:
            return 0
    return 0


def _run_source(it: Interp, ctx: CommandContext, name: str, text: str) -> bool:
    """Run one source; True when `quit`/`halt` ended bc."""
    try:
        toks = tokenize(text)
    except BcError as e:
        msg, _, line = str(e).rpartition("|")
        ctx.stderr.write(f"{name} {line}: {msg}\n".encode())
        return False
    p = Parser(toks)
    while True:
        start = p.p
        try:
            item = p.program_item()
        except _Quit:
            return True
        except BcError as e:
            msg, _, line = str(e).rpartition("|")
            ctx.stderr.write(f"{name} {line}: {msg}\n".encode())
            # resynchronise at the next newline
            p.p = max(p.p, start + 1)
            while p.peek()[0] not in ("nl", "eof"):
                p.p += 1
            if p.peek()[0] == "eof":
                return False
            continue
        if item is None:
            return False
        try:
            it.exec(item)
        except _Halt:
            raise
        except (_Break, _Continue):
            pass
        except _Return:
            pass
        except BcError as e:
            it.frames.clear()
            it.fname = "(main)"
            ctx.stderr.write(f"{e}\n".encode())
