"""awk lexer and recursive-descent parser producing a tuple AST."""

# AST nodes are tuples whose first item names the kind; see Parser for the shapes. Strings
# hold awk text as latin-1 (one char per byte), like mawk, which measures lengths in bytes.

from __future__ import annotations

import re

__all__ = ["AwkSyntaxError", "BUILTINS", "parse"]

KEYWORDS = {"BEGIN", "END", "BEGINFILE", "ENDFILE", "function", "func", "if", "else", "while", "for",
            "do", "break", "continue", "next", "nextfile", "exit", "return", "delete", "getline",
            "print", "printf", "in"}
BUILTINS = {"length", "substr", "index", "split", "sub", "gsub", "match", "sprintf", "tolower", "toupper",
            "int", "sqrt", "exp", "log", "sin", "cos", "atan2", "rand", "srand", "system", "close",
            "fflush", "gensub", "strftime", "systime", "mktime", "and", "or", "xor", "lshift", "rshift",
            "compl", "asort", "asorti", "typeof", "isarray", "strtonum"}

# mawk (this machine's awk) knows none of gawk's extension functions or BEGINFILE/ENDFILE:
# there `gensub(` is a call of an undefined function and BEGINFILE a variable
_GAWK_ONLY = {"gensub", "and", "or", "xor", "lshift", "rshift", "compl", "asort", "asorti", "typeof",
              "isarray", "strtonum"}
MAWK_BUILTINS = BUILTINS - _GAWK_ONLY
# mawk parses these calls by grammar rules (2 arguments, or 3): another count is a syntax error
_GRAMMAR_ARGS = {"sub": 3, "gsub": 3, "split": 3, "match": 2}
MAWK_KEYWORDS = KEYWORDS - {"BEGINFILE", "ENDFILE"}


class AwkSyntaxError(Exception):
    def __init__(self, msg: str, line: int, near: str = "") -> None:
        super().__init__(msg)
        self.line = line
        self.near = near


# mawk keeps "\/" as backslash-slash in strings (it is only an escape inside /regex/)
_ESC = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "a": "\a", "b": "\b",
        "f": "\f", "v": "\v"}

_NUM_RE = re.compile(r"(?:0[xX][0-9a-fA-F]+)|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# (no ** / **=: mawk, the machine's awk, rejects them)
_OPS = ["&&", "||", "==", "<=", ">=", "!=", "++", "--", "+=", "-=", "*=", "/=", "%=", "^=",
        ">>", "!~", "{", "}", "(", ")", "[", "]", ";", ",", "+", "-", "*", "/", "%", "^", "!",
        ">", "<", "|", "?", ":", "~", "$", "="]

# After these tokens a '/' is division; elsewhere it starts a regex literal.
_DIV_AFTER = {"NAME", "NUMBER", "STRING", "ERE", "BUILTIN", "FUNC_NAME", ")", "]", "$", "++", "--"}


def unescape(s: str) -> str:
    out = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c != "\\" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        d = s[i + 1]
        if d in _ESC:
            out.append(_ESC[d])
            i += 2
        elif d in "01234567":
            j = i + 1
            while j < n and j < i + 4 and s[j] in "01234567":
                j += 1
            out.append(chr(int(s[i + 1:j], 8) & 0xFF))
            i = j
        elif d == "\n":
            i += 2
        else:
            # unknown escape: awk keeps the backslash and the char (with a warning)
            out.append("\\" + d)
            i += 2
    return "".join(out)


def tokenize(src: str, mawk: bool = True) -> list[tuple[str, object, int]]:
    toks: list[tuple[str, object, int]] = []
    keywords, builtins = (MAWK_KEYWORDS, MAWK_BUILTINS) if mawk else (KEYWORDS, BUILTINS)
    i, n, line = 0, len(src), 1
    last = ""
    while i < n:
        c = src[i]
        if c == "\\" and i + 1 < n and src[i + 1] == "\n":
            i += 2
            line += 1
            continue
        if c == "\\" and src[i + 1:i + 3] == "\r\n":
            i += 3
            line += 1
            continue
        if c in " \t\r":
            i += 1
            continue
        if c == "#":
            while i < n and src[i] != "\n":
                i += 1
            continue
        if c == "\n":
            toks.append(("NEWLINE", None, line))
            line += 1
            i += 1
            last = "NEWLINE"
            continue
        if c == '"':
            j = i + 1
            buf = []
            while j < n and src[j] != '"':
                if src[j] == "\\" and j + 1 < n:
                    buf.append(src[j:j + 2])
                    j += 2
                    continue
                if src[j] == "\n":
                    raise AwkSyntaxError("runaway string constant", line, src[i:j][:11])
                buf.append(src[j])
                j += 1
            if j >= n:
                raise AwkSyntaxError("runaway string constant", line, src[i:j][:11])
            toks.append(("STRING", unescape("".join(buf)), line))
            i = j + 1
            last = "STRING"
            continue
        if c == "/" and last not in _DIV_AFTER:
            j = i + 1
            buf = []
            in_br = False
            while j < n:
                d = src[j]
                if d == "\n":
                    raise AwkSyntaxError("runaway regular expression", line, src[i:j][:10])
                if d == "\\" and j + 1 < n:
                    if src[j + 1] == "/":
                        buf.append("/")
                    else:
                        buf.append(src[j:j + 2])
                    j += 2
                    continue
                if d == "[" and not in_br:
                    in_br = True
                    buf.append(d)
                    j += 1
                    if j < n and src[j] == "^":
                        buf.append("^")
                        j += 1
                    if j < n and src[j] == "]":
                        buf.append("]")
                        j += 1
                    continue
                if d == "[" and in_br and src[j + 1:j + 2] in (":", ".", "="):
                    k = src.find(src[j + 1] + "]", j + 2)
                    if k > 0:
                        buf.append(src[j:k + 2])
                        j = k + 2
                        continue
                if d == "]" and in_br:
                    in_br = False
                if d == "/" and not in_br:
                    break
                buf.append(d)
                j += 1
            if j >= n:
                raise AwkSyntaxError("runaway regular expression", line, src[i:j][:10])
            toks.append(("ERE", "".join(buf), line))
            i = j + 1
            last = "ERE"
            continue
        if c.isdigit() or (c == "." and i + 1 < n and src[i + 1].isdigit()):
            m = _NUM_RE.match(src, i)
            assert m
            t = m.group(0)
            if t[:2] in ("0x", "0X") and mawk:
                # mawk (this machine's awk) reads 0x1A as the number 0 then the name x1A
                t = "0"
                m = None
                val = 0.0
            elif t[:2] in ("0x", "0X"):
                val = float(int(t, 16))  # gawk: a hex constant
            else:
                val = float(t)
            toks.append(("NUMBER", val, line))
            i = m.end() if m else i + 1
            last = "NUMBER"
            continue
        m = _NAME_RE.match(src, i)
        if m:
            w = m.group(0)
            i = m.end()
            if w in keywords:
                if w == "func":
                    w = "function"
                toks.append((w, w, line))
                last = w
            elif w in builtins:
                toks.append(("BUILTIN", w, line))
                last = "BUILTIN"
            elif i < n and src[i] == "(":
                toks.append(("FUNC_NAME", w, line))
                last = "FUNC_NAME"
            else:
                toks.append(("NAME", w, line))
                last = "NAME"
            continue
        for op in _OPS:
            if src.startswith(op, i):
                if op == "**=":
                    op2 = "^="
                elif op == "**":
                    op2 = "^"
                else:
                    op2 = op
                toks.append((op2, op2, line))
                i += len(op)
                last = op2
                break
        else:
            raise AwkSyntaxError("unexpected character", line, c)
    toks.append(("NEWLINE", None, line))
    toks.append(("EOF", None, line))
    return toks


class Parser:
    def __init__(self, src: str, mawk: bool = True) -> None:
        toks = tokenize(src, mawk)
        # mawk's scanner reports a ')' with no '(' open ("extra ')'"), drops it and goes on
        self.extra: list[tuple[int, str]] = []
        depth = 0
        kept = []
        for t in toks:
            if t[0] == "(":
                depth += 1
            elif t[0] == ")":
                if depth == 0:
                    self.extra.append((t[2], "extra ')'"))
                    continue
                depth -= 1
            kept.append(t)
        self.toks = kept
        self.pos = 0
        self.funcs: dict[str, tuple] = {}
        self.in_print = 0      # >0: '>' and '|' are redirections, not operators
        self.no_in = 0         # >0: 'in' is not an operator (for (x in a) header)
        self.in_func: tuple[str, ...] | None = None
        self.section = ""  # "BEGIN" or "END" while their action is parsed
        self.mawk = True

    # -- token helpers ---------------------------------------------------------------
    @property
    def tok(self) -> str:
        return self.toks[self.pos][0]

    def peek(self, k: int = 1) -> str:
        p = self.pos + k
        return self.toks[p][0] if p < len(self.toks) else "EOF"

    def val(self) -> object:
        return self.toks[self.pos][1]

    def line(self) -> int:
        return self.toks[self.pos][2]

    def err(self) -> AwkSyntaxError:
        t = self.toks[self.pos]
        near = "end of file" if t[0] == "EOF" else ("end of line" if t[0] == "NEWLINE" else str(t[1]))
        if t[0] in (";", "}", "NEWLINE"):
            # mawk: an error at a statement end while parentheses are open is a missing ')'
            depth = sum(1 if k[0] == "(" else -1 for k in self.toks[:self.pos] if k[0] in "()")
            if depth > 0:
                return AwkSyntaxError(f"missing ) near {near}", t[2])
        return AwkSyntaxError("syntax error", t[2], near)

    def eat(self, kind: str) -> object:
        if self.tok != kind:
            raise self.err()
        v = self.val()
        self.pos += 1
        return v

    def opt_nl(self) -> None:
        while self.tok == "NEWLINE":
            self.pos += 1

    def skip_terms(self) -> None:
        while self.tok in ("NEWLINE", ";"):
            self.pos += 1

    # -- program ---------------------------------------------------------------------
    def program(self) -> dict:
        items = []
        begins, ends, beginfiles, endfiles = [], [], [], []
        self.skip_terms()
        while self.tok != "EOF":
            t = self.tok
            if t == "BEGIN":
                self.pos += 1
                self.opt_nl()
                self.section = "BEGIN"
                begins.append(self.block())
                self.section = ""
            elif t == "END":
                self.pos += 1
                self.opt_nl()
                self.section = "END"
                ends.append(self.block())
                self.section = ""
            elif t == "BEGINFILE":
                self.pos += 1
                self.opt_nl()
                beginfiles.append(self.block())
            elif t == "ENDFILE":
                self.pos += 1
                self.opt_nl()
                endfiles.append(self.block())
            elif t == "function":
                self.function()
            else:
                if t == "{":
                    items.append((None, None, self.block()))
                else:
                    p1 = self.expr()
                    p2 = None
                    if self.tok == ",":
                        self.pos += 1
                        self.opt_nl()
                        p2 = self.expr()
                    if self.tok == "{":
                        items.append((p1, p2, self.block()))
                    else:
                        items.append((p1, p2, None))
            self.skip_terms()
        return {"begin": begins, "end": ends, "items": items, "funcs": self.funcs,
                "beginfile": beginfiles, "endfile": endfiles}

    def function(self) -> None:
        self.eat("function")
        if self.tok in ("NAME", "FUNC_NAME"):
            name = str(self.val())
            self.pos += 1
        else:
            raise self.err()
        self.eat("(")
        params: list[str] = []
        while self.tok != ")":
            pname = str(self.eat("NAME"))
            if pname in params:
                raise AwkSyntaxError(f"{pname} is duplicated in argument list", self.line(), pname)
            params.append(pname)
            if self.tok == ",":
                self.pos += 1
                self.opt_nl()
            elif self.tok != ")":
                raise self.err()
        self.eat(")")
        self.opt_nl()
        self.in_func = tuple(params)
        body = self.block()
        self.in_func = None
        if name in self.funcs:
            raise AwkSyntaxError(f"redefinition of {name}", self.line(), name)
        self.funcs[name] = (name, tuple(params), body)

    def block(self) -> tuple:
        self.eat("{")
        stmts = self.stmt_list()
        self.eat("}")
        return ("block", stmts)

    def stmt_list(self) -> list:
        stmts = []
        self.skip_terms()
        while self.tok != "}":
            if self.tok == "EOF":
                raise self.err()
            stmts.append(self.statement())
            self.skip_terms()
        return stmts

    def end_simple(self) -> None:
        if self.tok in (";", "NEWLINE"):
            self.pos += 1
        elif self.tok in ("}", "EOF"):
            pass
        else:
            raise self.err()

    def simple_or_block(self) -> tuple:
        self.opt_nl()
        if self.tok == ";":
            self.pos += 1
            return ("block", [])
        return self.statement()

    def statement(self) -> tuple:
        t = self.tok
        if t == "{":
            return self.block()
        if t == "if":
            self.pos += 1
            self.eat("(")
            cond = self.expr()
            self.eat(")")
            then = self.simple_or_block()
            # 'else' may follow after newlines / a semicolon
            save = self.pos
            self.skip_terms()
            if self.tok == "else":
                self.pos += 1
                els = self.simple_or_block()
                return ("if", cond, then, els)
            self.pos = save
            return ("if", cond, then, None)
        if t == "while":
            self.pos += 1
            self.eat("(")
            cond = self.expr()
            self.eat(")")
            if self.tok == ";":
                self.pos += 1
                return ("while", cond, ("block", []))
            return ("while", cond, self.simple_or_block())
        if t == "do":
            self.pos += 1
            body = self.simple_or_block()
            self.skip_terms()
            self.eat("while")
            self.eat("(")
            cond = self.expr()
            self.eat(")")
            self.end_simple()
            return ("do", body, cond)
        if t == "for":
            self.pos += 1
            self.eat("(")
            if (self.tok == "NAME" and self.peek() == "in" and self.peek(2) == "NAME"
                    and self.peek(3) == ")"):
                var = str(self.val())
                self.pos += 2
                arr = str(self.val())
                self.pos += 2
                return ("forin", var, arr, self.simple_or_block())
            if (self.tok == "(" and self.peek() == "NAME" and self.peek(2) == "in" and self.peek(3) == "NAME"
                    and self.peek(4) == ")" and self.peek(5) == ")"):
                var = str(self.toks[self.pos + 1][1])
                arr = str(self.toks[self.pos + 3][1])
                self.pos += 6
                return ("forin", var, arr, self.simple_or_block())
            init = None if self.tok == ";" else self.simple_stmt()
            self.eat(";")
            self.opt_nl()
            cond = None if self.tok == ";" else self.expr()
            self.eat(";")
            self.opt_nl()
            incr = None if self.tok == ")" else self.simple_stmt()
            self.eat(")")
            if self.tok == ";":
                self.pos += 1
                return ("for", init, cond, incr, ("block", []))
            return ("for", init, cond, incr, self.simple_or_block())
        if t == ";":
            self.pos += 1
            return ("block", [])
        s = self.simple_stmt()
        self.end_simple()
        return s

    def simple_stmt(self) -> tuple:
        t = self.tok
        if t in ("print", "printf"):
            return self.print_stmt()
        if t in ("next", "nextfile"):
            # no next/nextfile in BEGIN or END (mawk: nor in a function body)
            if self.section or (self.in_func is not None and self.mawk):
                raise AwkSyntaxError(f"improper use of {t}", self.line())
            self.pos += 1
            return (t,)
        if t == "break":
            self.pos += 1
            return ("break",)
        if t == "continue":
            self.pos += 1
            return ("continue",)
        if t == "exit":
            self.pos += 1
            e = None if self.tok in (";", "NEWLINE", "}", "EOF") else self.expr()
            return ("exit", e)
        if t == "return":
            if self.in_func is None:
                raise AwkSyntaxError("return outside function body", self.line())
            self.pos += 1
            e = None if self.tok in (";", "NEWLINE", "}", "EOF") else self.expr()
            return ("return", e)
        if t == "delete":
            self.pos += 1
            name = str(self.eat("NAME"))
            if self.tok == "[":
                self.pos += 1
                subs = self.expr_list()
                self.eat("]")
                return ("delete", name, subs)
            return ("delete", name, None)
        if t == "getline" or True:
            return ("expr", self.expr())
        raise self.err()

    def print_stmt(self) -> tuple:
        kind = str(self.val())
        self.pos += 1
        self.in_print += 1
        try:
            args: list = []
            if self.tok not in (";", "NEWLINE", "}", ">", ">>", "|", "EOF"):
                args = self.expr_list()
                if len(args) == 1 and args[0][0] == "grouplist":
                    args = list(args[0][1])
        finally:
            self.in_print -= 1
        redir = None
        if self.tok in (">", ">>", "|"):
            op = self.tok
            self.pos += 1
            self.in_print += 1
            try:
                target = self.ternary()
            finally:
                self.in_print -= 1
            redir = (op, target)
        if kind == "printf" and not args:
            raise self.err()
        return (kind, args, redir)

    def expr_list(self, most: int = 0) -> list:
        """Comma-separated expressions; at most ``most`` of them when given."""
        out = [self.expr()]
        while self.tok == "," and len(out) != most:
            self.pos += 1
            self.opt_nl()
            out.append(self.expr())
        return out

    # -- expressions -------------------------------------------------------------------
    def expr(self) -> tuple:
        return self.ternary()

    def is_lvalue(self, e: tuple) -> bool:
        return e[0] in ("var", "field", "index")

    def ternary(self) -> tuple:
        cond = self.or_()
        if self.tok == "?":
            self.pos += 1
            self.opt_nl()
            a = self.ternary()
            self.opt_nl()
            self.eat(":")
            self.opt_nl()
            b = self.ternary()
            return ("cond", cond, a, b)
        if self.tok in ("=", "+=", "-=", "*=", "/=", "%=", "^=") and self.is_lvalue(cond):
            op = self.tok
            self.pos += 1
            self.opt_nl()
            rhs = self.ternary()
            return ("assign", op, cond, rhs)
        return cond

    def or_(self) -> tuple:
        left = self.and_()
        while self.tok == "||":
            self.pos += 1
            self.opt_nl()
            right = self.and_()
            left = ("or", left, right)
        return left

    def and_(self) -> tuple:
        left = self.in_()
        while self.tok == "&&":
            self.pos += 1
            self.opt_nl()
            right = self.in_()
            left = ("and", left, right)
        return left

    def in_(self) -> tuple:
        left = self.match()
        while self.tok == "in" and not self.no_in:
            self.pos += 1
            arr = str(self.eat("NAME"))
            subs = list(left[1]) if left[0] == "grouplist" else [left]
            left = ("in", subs, arr)
        return left

    def match(self) -> tuple:
        left = self.comparison()
        while self.tok in ("~", "!~"):
            neg = self.tok == "!~"
            self.pos += 1
            right = self.comparison()
            left = ("match", neg, left, right)
        return left

    def comparison(self) -> tuple:
        left = self.pipe_getline()
        t = self.tok
        if t in ("<", "<=", "!=", "==", ">=") or (t == ">" and not self.in_print):
            self.pos += 1
            right = self.pipe_getline()
            left = ("cmp", t, left, right)
        return left

    def pipe_getline(self) -> tuple:
        left = self.concat()
        while self.tok == "|" and self.peek() == "getline":
            self.pos += 2
            lv = self.opt_lvalue()
            left = ("getline", "cmd", lv, left)
        return left

    _CONCAT_START = {"NAME", "NUMBER", "STRING", "ERE", "FUNC_NAME", "BUILTIN", "$", "!", "(", "-", "+",
                     "++", "--"}

    def concat(self) -> tuple:
        left = self.additive()
        parts = [left]
        while True:
            t = self.tok
            if t in ("NAME", "NUMBER", "STRING", "ERE", "FUNC_NAME", "BUILTIN", "$", "(", "++", "--", "!",
                     "-", "+"):
                if t == "in":
                    break
                if t in ("!",) and self.peek() in ("=", "~"):
                    break
                if t in ("-", "+", "!"):
                    # `a " " -1` concatenates a unary minus operand (mawk/gawk do the same)
                    pass
                parts.append(self.additive())
            elif t == "getline" and False:
                break
            else:
                break
        if len(parts) == 1:
            return left
        return ("concat", parts)

    def additive(self) -> tuple:
        left = self.mult()
        while self.tok in ("+", "-"):
            op = self.tok
            self.pos += 1
            right = self.mult()
            left = ("binop", op, left, right)
        return left

    def mult(self) -> tuple:
        left = self.unary()
        while self.tok in ("*", "/", "%"):
            op = self.tok
            self.pos += 1
            right = self.unary()
            left = ("binop", op, left, right)
        return left

    def unary(self) -> tuple:
        t = self.tok
        if t == "!":
            self.pos += 1
            return ("not", self.unary())
        if t == "-":
            self.pos += 1
            return ("neg", self.unary())
        if t == "+":
            self.pos += 1
            return ("pos", self.unary())
        return self.power()

    def power(self) -> tuple:
        base = self.postfix()
        if self.tok == "^":
            self.pos += 1
            # right associative, and the exponent may carry a unary minus: 2^-1
            if self.tok in ("-", "+", "!"):
                exp = self.unary()
            else:
                exp = self.power()
            return ("binop", "^", base, exp)
        return base

    def postfix(self) -> tuple:
        t = self.tok
        if t in ("++", "--"):
            self.pos += 1
            lv = self.postfix()
            if not self.is_lvalue(lv):
                raise self.err()
            return ("preinc", t, lv)
        e = self.primary()
        if self.is_lvalue(e) and self.tok in ("++", "--"):
            op = self.tok
            self.pos += 1
            return ("postinc", op, e)
        return e

    def opt_lvalue(self) -> tuple | None:
        if self.tok == "$":
            self.pos += 1
            return ("field", self.field_operand())
        if self.tok == "NAME":
            name = str(self.val())
            self.pos += 1
            if self.tok == "[":
                self.pos += 1
                subs = self.expr_list()
                self.eat("]")
                return ("index", name, subs)
            return ("var", name)
        return None

    def field_operand(self) -> tuple:
        t = self.tok
        if t in ("++", "--"):
            self.pos += 1
            lv = self.field_operand()
            return ("preinc", t, lv)
        if t == "-":
            self.pos += 1
            return ("neg", self.field_operand())
        if t == "!":
            self.pos += 1
            return ("not", self.field_operand())
        e = self.primary()
        if self.mawk and e == ("var", "NF") and self.tok in ("++", "--"):
            # mawk's grammar: `$NF++` is `$(NF++)` (any other `$x++` increments the field)
            op = self.tok
            self.pos += 1
            return ("postinc", op, e)
        return e

    def primary(self) -> tuple:
        t = self.tok
        v = self.val()
        if t == "NUMBER":
            self.pos += 1
            return ("num", v)
        if t == "STRING":
            self.pos += 1
            return ("str", v)
        if t == "ERE":
            self.pos += 1
            return ("regex", v)
        if t == "$":
            self.pos += 1
            return ("field", self.field_operand())
        if t == "(":
            self.pos += 1
            self.in_print_save = self.in_print
            saved = self.in_print
            self.in_print = 0
            saved_in = self.no_in
            self.no_in = 0
            try:
                self.opt_nl()
                e = self.expr()
                if self.tok == ",":
                    items = [e]
                    while self.tok == ",":
                        self.pos += 1
                        self.opt_nl()
                        items.append(self.expr())
                    self.opt_nl()
                    self.eat(")")
                    return ("grouplist", items)
                self.opt_nl()
                self.eat(")")
            finally:
                self.in_print = saved
                self.no_in = saved_in
            return ("group", e)
        if t == "getline":
            self.pos += 1
            lv = self.opt_lvalue()
            if self.tok == "<":
                self.pos += 1
                src = self.postfix_noconcat()
                return ("getline", "file", lv, src)
            return ("getline", "main", lv, None)
        if t == "FUNC_NAME":
            name = str(v)
            self.pos += 1
            self.eat("(")
            args = []
            saved = self.in_print
            self.in_print = 0
            try:
                self.opt_nl()
                if self.tok != ")":
                    args = self.expr_list()
                self.opt_nl()
                self.eat(")")
            finally:
                self.in_print = saved
            return ("call", name, args)
        if t == "BUILTIN":
            name = str(v)
            self.pos += 1
            args = []
            if self.tok == "(":
                self.pos += 1
                saved = self.in_print
                self.in_print = 0
                try:
                    self.opt_nl()
                    if self.tok != ")":
                        args = self.expr_list(_GRAMMAR_ARGS.get(name, 0) if self.mawk else 0)
                    if self.mawk and name in _GRAMMAR_ARGS and \
                            (len(args) < 2 or self.tok == ","):
                        raise self.err()
                    self.opt_nl()
                    self.eat(")")
                finally:
                    self.in_print = saved
            elif name != "length":
                raise self.err()
            return ("builtin", name, args)
        if t == "NAME":
            name = str(v)
            self.pos += 1
            if self.tok == "[":
                self.pos += 1
                saved = self.in_print
                self.in_print = 0
                try:
                    subs = self.expr_list()
                finally:
                    self.in_print = saved
                self.eat("]")
                return ("index", name, subs)
            return ("var", name)
        if t in ("-", "+", "!"):
            return self.unary()
        raise self.err()

    def postfix_noconcat(self) -> tuple:
        # the file operand of `getline < file`: a primary with its $ and ++/--
        return self.postfix()


def parse(src: str, mawk: bool = True) -> dict:
    p = Parser(src, mawk)
    p.mawk = mawk
    try:
        prog = p.program()
    except AwkSyntaxError as e:
        e.extra = p.extra  # type: ignore[attr-defined]
        raise
    prog["extra"] = p.extra
    return prog
