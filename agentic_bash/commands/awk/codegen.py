"""Compile the awk AST to Python source (one function per rule group and user function)."""

# Speed matters (awk '{s+=$3}' over 100k lines must take well under a second), so the AST
# becomes Python code that the interpreter runs directly: awk globals are module globals
# ``g_NAME``, function parameters are Python locals ``l_NAME``, arrays are dicts keyed by
# strings, and special variables live on the runtime object ``R``.

from __future__ import annotations

from .parser import AwkSyntaxError

__all__ = ["compile_program"]

SPECIAL = {"NR", "FNR", "NF", "FS", "OFS", "ORS", "RS", "SUBSEP", "CONVFMT", "OFMT", "RSTART", "RLENGTH",
           "FILENAME", "RT"}
NUMERIC_SPECIAL = {"NR", "FNR", "NF", "RSTART", "RLENGTH"}


class _Ctx:
    def __init__(self, params: tuple[str, ...] = (), arrays: set[str] | None = None) -> None:
        self.params = params
        self.arrays = arrays or set()


class CodeGen:
    def __init__(self, prog: dict, mawk: bool = True) -> None:
        self.prog = prog
        self.funcs: dict[str, tuple] = prog["funcs"]
        self.consts: dict[str, object] = {}
        self.lines: list[str] = []
        self.globals_used: set[str] = set()
        self.global_arrays: set[str] = {"ENVIRON", "ARGV"}
        self.func_arrays: dict[str, set[str]] = {f: set() for f in self.funcs}
        self.nrx = 0
        self.tmp = 0
        self.mawk = mawk
        # RT is gawk's; in mawk it is an ordinary variable
        self.special = SPECIAL - {"RT"} if mawk else SPECIAL
        self.loop_depth = 0
        # generating the record loop (_loop): the record and its fields are locals there
        self.local = False
        self.undefined: list[str] = []
        self._undef_calls: list[tuple] = []
        self._analyse()

    # -- array analysis ------------------------------------------------------------------
    def _analyse(self) -> None:
        changed = True

        def mark(name: str, ctx: _Ctx | None, fname: str | None) -> bool:
            if ctx is not None and name in ctx.params:
                s = self.func_arrays[fname]  # type: ignore[index]
                if name not in s:
                    s.add(name)
                    return True
                return False
            if name not in self.global_arrays:
                self.global_arrays.add(name)
                return True
            return False

        def is_arr(name: str, ctx: _Ctx | None, fname: str | None) -> bool:
            if ctx is not None and name in ctx.params:
                return name in self.func_arrays[fname]  # type: ignore[index]
            return name in self.global_arrays

        def walk(node: object, ctx: _Ctx | None, fname: str | None) -> bool:
            ch = False
            if isinstance(node, tuple) and node and not isinstance(node[0], str):
                for x in node:
                    ch |= walk(x, ctx, fname)
            elif isinstance(node, tuple) and node:
                k = node[0]
                if k == "index" or k == "delete":
                    ch |= mark(node[1], ctx, fname)
                elif k == "in":
                    ch |= mark(node[2], ctx, fname)
                elif k == "forin":
                    ch |= mark(node[2], ctx, fname)
                elif k == "builtin" and len(node[2]) >= (2 if node[1] == "split" else 1) \
                        and node[1] in ("split", "asort", "asorti"):
                    for a in node[2][1:2] if node[1] == "split" else node[2][:2]:
                        if a[0] == "var":
                            ch |= mark(a[1], ctx, fname)
                elif k == "builtin" and node[1] == "match" and len(node[2]) == 3 and node[2][2][0] == "var":
                    ch |= mark(node[2][2][1], ctx, fname)
                elif k == "call" and node[1] in self.funcs:
                    params = self.funcs[node[1]][1]
                    for i, a in enumerate(node[2]):
                        if i < len(params) and a[0] == "var":
                            if params[i] in self.func_arrays[node[1]]:
                                ch |= mark(a[1], ctx, fname)
                            elif is_arr(a[1], ctx, fname):
                                self.func_arrays[node[1]].add(params[i])
                                ch = True
                for x in node[1:]:
                    ch |= walk(x, ctx, fname)
            elif isinstance(node, list):
                for x in node:
                    ch |= walk(x, ctx, fname)
            elif isinstance(node, dict):
                for x in node.values():
                    ch |= walk(x, ctx, fname)
            return ch

        while changed:
            changed = False
            for k in ("begin", "end", "items", "beginfile", "endfile"):
                changed |= walk(self.prog[k], None, None)
            for fname, (_, params, body) in self.funcs.items():
                changed |= walk(body, _Ctx(params), fname)

    # -- helpers -------------------------------------------------------------------------
    def const(self, value: object, prefix: str = "_k") -> str:
        name = f"{prefix}{len(self.consts)}"
        self.consts[name] = value
        return name

    def rx(self, src: str) -> str:
        for k, v in self.consts.items():
            if isinstance(v, tuple) and v == ("rx", src):
                return k
        return self.const(("rx", src), "_rx")

    def newtmp(self) -> str:
        self.tmp += 1
        return f"_t{self.tmp}"

    def emit(self, ind: int, s: str) -> None:
        self.lines.append("    " * ind + s)

    def is_local(self, name: str) -> bool:
        return self.cur is not None and name in self.cur.params

    def is_array(self, name: str) -> bool:
        if self.cur is not None and name in self.cur.params:
            return name in self.cur.arrays
        return name in self.global_arrays

    def varname(self, name: str) -> str:
        if self.is_local(name):
            return f"l_{name}"
        self.globals_used.add(name)
        return f"g_{name}"

    def arr(self, name: str) -> str:
        if name in self.special:
            raise AwkSyntaxError(f"can't use {name} as an array", 0, name)
        return self.varname(name)

    # -- expressions: gx -> (code, type) with type 'n' number, 's' string, 'a' any -----------
    def sub(self, subs: list) -> str:
        """Raw subscript value code: the array decides mawk's int-or-string lookup path from it."""
        if len(subs) == 1:
            return self.gx(subs[0])[0]
        return self.key(subs)

    def key(self, subs: list) -> str:
        if len(subs) == 1:
            c, t = self.gx(subs[0])
            if t == "s":
                return c
            return f"_key({c})"
        parts = []
        for s in subs:
            c, t = self.gx(s)
            parts.append(c if t == "s" else f"_key({c})")
        return f"R.SUBSEP.join(({', '.join(parts)},))"

    def num(self, e: tuple) -> str:
        if e[0] == "field" and e[1][0] == "num" and float(e[1][1]).is_integer() and e[1][1] >= 1:
            k = int(e[1][1])
            if self.local:
                # all decimal digits: float() reads it as strtod does, with no call of ours
                return (f"((float(_v) if (_v := _f[{k - 1}]).isdecimal() else _tn(_v)) "
                        f"if len({FIELDS}) > {k - 1} else 0.0)")
            return f"R.fnum({k})"  # $N as a number: no StrNum made for the field
        c, t = self.gx(e)
        return c if t == "n" else _numv(c)

    def str_(self, e: tuple) -> str:
        c, t = self.field_str(e) if self.local and e[0] == "field" else self.gx(e)
        return c if t == "s" else f"_str({c})"

    def sep(self, name: str) -> str:
        """OFS/ORS: a local of the record loop (made R.OFS again if the program assigns it)."""
        return f"_{name}" if self.local else f"R.{name}"

    def rec(self) -> str:
        """$0 as a plain string."""
        return "_rec" if self.local else "R.rec"

    def field_str(self, e: tuple) -> tuple[str, str]:
        """A constant field as a plain string in the record loop (no StrNum: the context wants text)."""
        idx = e[1]
        if idx[0] == "num" and float(idx[1]).is_integer() and idx[1] >= 0:
            k = int(idx[1])
            if k == 0:
                return "_rec", "s"
            return f"(_f[{k - 1}] if len({FIELDS}) > {k - 1} else '')", "s"
        return self.gx(e)

    def regex_of(self, e: tuple) -> str:
        """Compiled-regex code for a match operand: literal regex or dynamic string."""
        if e[0] == "regex":
            return self.rx(e[1])
        if e[0] == "group" and e[1][0] == "regex":
            return self.rx(e[1][1])
        if e[0] == "str" and self.mawk:
            return self.rx(e[1])  # mawk compiles a string constant regex with the program
        return f"_dynrx({self.str_(e)})"

    def cond(self, e: tuple) -> str:
        """Python-boolean code for awk truth."""
        k = e[0]
        if k == "cmp":
            return self.cmp(e)
        if k == "and":
            return f"({self.cond(e[1])} and {self.cond(e[2])})"
        if k == "or":
            return f"({self.cond(e[1])} or {self.cond(e[2])})"
        if k == "not":
            return f"(not {self.cond(e[1])})"
        if k == "group":
            return self.cond(e[1])
        if k == "regex":
            lit = _literal_rx(e[1])
            if lit is not None:
                # a regex of plain characters: a substring test (same answer, no regex engine)
                self.rx(e[1])  # still compiled with the program (its errors, mawk's checks)
                return f"({self.const(lit, '_lit')} in {self.rec()})"
            return f"({self.rx(e[1])}.fast.search({self.rec()}, timeout=_T()) is not None)"
        if k == "match":
            s = self.str_(e[2])
            lit = _literal_rx(e[3][1]) if e[3][0] == "regex" else None
            if lit is not None:
                self.rx(e[3][1])
                return f"({self.const(lit, '_lit')} {'not in' if e[1] else 'in'} {s})"
            r = self.regex_of(e[3])
            neg = "is" if e[1] else "is not"
            return f"({r}.fast.search({s}, timeout=_T()) {neg} None)"
        if k == "in":
            return f"_ain({self.arr(e[2])}, {self.sub(e[1])})"
        c, t = self.gx(e)
        if t == "n":
            return f"({c} != 0.0)"
        if t == "s":
            return f"({c} != '')"
        return f"_bool({c})"

    def cmp(self, e: tuple) -> str:
        op = e[1]
        a, ta = self.gx(e[2])
        b, tb = self.gx(e[3])
        if ta == "n" and tb == "n":
            return f"({a} {op} {b})"
        if ta == "s" or tb == "s":
            if ta != "s":
                a = f"_str({a})"
            if tb != "s":
                b = f"_str({b})"
            return f"({a} {op} {b})"
        fn = {"<": "_lt", "<=": "_le", "==": "_eq", "!=": "_ne", ">": "_gt", ">=": "_ge"}[op]
        return f"{fn}({a}, {b})"

    def gx(self, e: tuple) -> tuple[str, str]:
        k = e[0]
        m = getattr(self, "x_" + k)
        return m(e)

    def x_num(self, e: tuple) -> tuple[str, str]:
        v = e[1]
        if v != v or v in (float("inf"), float("-inf")):
            return self.const(v), "n"
        return repr(float(v)), "n"

    def x_str(self, e: tuple) -> tuple[str, str]:
        return repr(e[1]), "s"

    def x_regex(self, e: tuple) -> tuple[str, str]:
        return f"(1.0 if {self.cond(e)} else 0.0)", "n"

    def x_group(self, e: tuple) -> tuple[str, str]:
        return self.gx(e[1])

    def x_grouplist(self, e: tuple) -> tuple[str, str]:
        return self.key(e[1]), "s"

    def x_var(self, e: tuple) -> tuple[str, str]:
        name = e[1]
        if name in self.special:
            if name == "NF":
                return (f"float(len({FIELDS}))" if self.local else "R.getnf()"), "n"
            if self.local and name in ("NR", "FNR"):
                return f"(_{name.lower()}0 + _k)", "n"  # the loop counts records in _k
            return f"R.{name}", ("n" if name in NUMERIC_SPECIAL else "a")
        if self.is_array(name):
            raise AwkSyntaxError(f"illegal reference to array {name}", 0, name)
        return self.varname(name), "a"

    def field_index(self, e: tuple) -> str:
        if e[0] == "num" and float(e[1]).is_integer():
            return str(int(e[1]))
        return f"_int({self.num(e)})"

    def x_field(self, e: tuple) -> tuple[str, str]:
        idx = e[1]
        if idx[0] == "num" and idx[1] == 0:
            return ("_SN(_rec)" if self.local else "R.rec"), "a"
        if self.local:
            if idx[0] == "num" and float(idx[1]).is_integer() and idx[1] >= 1:
                k = int(idx[1])
                return f"(_SN(_f[{k - 1}]) if len({FIELDS}) > {k - 1} else _NOF)", "a"
            return f"_lfield({FIELDS}, _rec, {self.field_index(idx)}, _NOF)", "a"
        return f"R.field({self.field_index(idx)})", "a"

    def x_index(self, e: tuple) -> tuple[str, str]:
        return f"_aget({self.arr(e[1])}, {self.sub(e[2])})", "a"

    _OPF = {"+=": "+", "-=": "-", "*=": "*", "/=": "/", "%=": "%", "^=": "^"}

    def arith(self, op: str, a: str, b: str) -> str:
        if op in "+-*":
            return f"({a} {op} {b})"
        if op == "/":
            return f"_div({a}, {b})"
        if op == "%":
            return f"_mod({a}, {b})"
        return f"_pow({a}, {b})"

    def assign_code(self, lv: tuple, value: str) -> str:
        """Expression code assigning the already-evaluated ``value`` code to ``lv``."""
        k = lv[0]
        if k == "var":
            name = lv[1]
            if name in self.special:
                if name == "NF":
                    return f"R.setnf({value})"
                return f"R.setv({name!r}, {value})"
            return f"({self.varname(name)} := {value})"
        if k == "field":
            return f"R.setfield({self.field_index(lv[1])}, {value})"
        return f"_aset({self.arr(lv[1])}, {self.sub(lv[2])}, {value})"

    def x_assign(self, e: tuple) -> tuple[str, str]:
        op, lv, rhs = e[1], e[2], e[3]
        if op == "=":
            c, t = self.gx(rhs)
            if lv[0] == "var" and lv[1] not in self.special and self.is_array(lv[1]):
                raise AwkSyntaxError(f"can't assign to {lv[1]}; it's an array name.", 0, lv[1])
            return self.assign_code(lv, c), t
        a = self._opf(op)
        r = self.num(rhs)
        k = lv[0]
        if k == "var":
            cur, t = self.x_var(lv)
            cur = cur if t == "n" else _numv(cur)
            return self.assign_code(lv, self.arith(a, cur, r)), "n"
        if k == "field":
            return f"R.fop({self.field_index(lv[1])}, {a!r}, {r})", "n"
        return f"_aop({self.arr(lv[1])}, {self.sub(lv[2])}, {a!r}, {r})", "n"

    def _opf(self, op: str) -> str:
        return self._OPF[op]

    def x_preinc(self, e: tuple) -> tuple[str, str]:
        d = "1.0" if e[1] == "++" else "-1.0"
        lv = e[2]
        if lv[0] == "var":
            cur, t = self.x_var(lv)
            cur = cur if t == "n" else _numv(cur)
            return self.assign_code(lv, f"({cur} + {d})"), "n"
        if lv[0] == "field":
            return f"R.fop({self.field_index(lv[1])}, '+', {d})", "n"
        return f"_aop({self.arr(lv[1])}, {self.sub(lv[2])}, '+', {d})", "n"

    def x_postinc(self, e: tuple) -> tuple[str, str]:
        d = "1.0" if e[1] == "++" else "-1.0"
        lv = e[2]
        if lv[0] == "var":
            cur, t = self.x_var(lv)
            cur = cur if t == "n" else _numv(cur)
            tmp = self.newtmp()
            return f"_first(({tmp} := {cur}), {self.assign_code(lv, f'({tmp} + {d})')})", "n"
        if lv[0] == "field":
            return f"R.fpost({self.field_index(lv[1])}, {d})", "n"
        return f"_apost({self.arr(lv[1])}, {self.sub(lv[2])}, {d})", "n"

    def x_cond(self, e: tuple) -> tuple[str, str]:
        a, ta = self.gx(e[2])
        b, tb = self.gx(e[3])
        return f"({a} if {self.cond(e[1])} else {b})", (ta if ta == tb else "a")

    def x_and(self, e: tuple) -> tuple[str, str]:
        return f"(1.0 if {self.cond(e)} else 0.0)", "n"

    x_or = x_and
    x_not = x_and
    x_match = x_and
    x_in = x_and

    def x_cmp(self, e: tuple) -> tuple[str, str]:
        return f"(1.0 if {self.cmp(e)} else 0.0)", "n"

    def x_concat(self, e: tuple) -> tuple[str, str]:
        parts = [self.str_(p) for p in e[1]]
        # _cc bounds the result (max_variable_bytes): `while (1) s = s s` must not eat memory
        return "_cc(" + " + ".join(parts) + ")", "s"

    def x_binop(self, e: tuple) -> tuple[str, str]:
        return self.arith(e[1], self.num(e[2]), self.num(e[3])), "n"

    def x_neg(self, e: tuple) -> tuple[str, str]:
        return f"(-{self.num(e[1])})", "n"

    def x_pos(self, e: tuple) -> tuple[str, str]:
        return f"(+{self.num(e[1])})", "n"

    def x_call(self, e: tuple) -> tuple[str, str]:
        name, args = e[1], e[2]
        if name not in self.funcs:
            # mawk reports each call of an undefined function once the program is read
            # (compile_program); a call compiled twice (a fast path tried first) counts once
            if not any(c is e for c in self._undef_calls):
                self._undef_calls.append(e)
                self.undefined.append(name)
            return "0.0", "n"
        params = self.funcs[name][1]
        if len(args) > len(params):
            raise AwkSyntaxError(f"too many arguments in call to {name}", 0, name)
        codes = []
        for i, a in enumerate(args):
            if a[0] == "var" and a[1] not in self.special and self.is_array(a[1]):
                codes.append(self.arr(a[1]))
            elif params[i] in self.func_arrays[name] and a[0] == "var":
                codes.append(self.arr(a[1]))
            else:
                codes.append(self.gx(a)[0])
        return f"f_{name}({', '.join(codes)})", "a"

    def x_getline(self, e: tuple) -> tuple[str, str]:
        kind, lv, src = e[1], e[2], e[3]
        if kind == "main":
            call = "R.getline_main(" + ("True" if lv is not None else "False") + ")"
        elif kind == "file":
            call = f"R.getline_file({self.str_(src)}, {lv is not None})"
        else:
            call = f"R.getline_cmd({self.str_(src)}, {lv is not None})"
        if lv is None:
            return call, "n"
        tmp = self.newtmp()
        return (f"_first(({tmp} := {call})[0], {self.assign_code(lv, f'{tmp}[1]')} if {tmp}[0] > 0 else 0)",
                "n")

    # -- builtins ------------------------------------------------------------------------
    def x_builtin(self, e: tuple) -> tuple[str, str]:
        name, args = e[1], e[2]
        n = len(args)
        if name == "length":
            if n == 0:
                return f"float(len({self.rec()}))", "n"
            a = args[0]
            if a[0] == "var" and a[1] not in self.special and self.is_array(a[1]):
                return f"float(len({self.arr(a[1])}))", "n"
            return f"float(len({self.str_(a)}))", "n"
        if name == "substr":
            if n == 2:
                return f"_substr({self.str_(args[0])}, {self.num(args[1])})", "s"
            if n == 3:
                return f"_substr({self.str_(args[0])}, {self.num(args[1])}, {self.num(args[2])})", "s"
        if name == "index" and n == 2:
            return f"float({self.str_(args[0])}.find({self.str_(args[1])}) + 1)", "n"
        if name == "split" and n in (2, 3):
            if args[1][0] != "var":
                raise AwkSyntaxError("split: second argument must be an array", 0, "split")
            arr = self.arr(args[1][1])
            if n == 2:
                sep = "None"
            elif args[2][0] == "regex":
                sep = self.rx(args[2][1])
            else:
                sep = self.str_(args[2])
            return f"R.split({self.str_(args[0])}, {arr}, {sep})", "n"
        if name in ("sub", "gsub") and n in (2, 3):
            r = self.regex_of(args[0])
            repl = self.str_(args[1])
            target = args[2] if n == 3 else ("field", ("num", 0.0))
            g = "True" if name == "gsub" else "False"
            if target[0] not in ("var", "field", "index"):
                # non-lvalue target: the substitution happens on a temporary (gawk warns)
                return f"_sub({r}, {repl}, {self.str_(target)}, {g})[0]", "n"
            cur = self.str_(target)
            tmp = self.newtmp()
            return (f"_first(({tmp} := _sub({r}, {repl}, {cur}, {g}))[0], "
                    f"{self.assign_code(target, f'{tmp}[1]')} if {tmp}[0] else 0)"), "n"
        if name == "match" and n in (2, 3):
            arr = self.arr(args[2][1]) if n == 3 else "None"
            return f"R.match({self.str_(args[0])}, {self.regex_of(args[1])}, {arr})", "n"
        if name == "sprintf" and n >= 1:
            return f"_sprintf({self.str_(args[0])}, [{', '.join(self.gx(a)[0] for a in args[1:])}])", "s"
        if name in ("tolower", "toupper") and n == 1:
            return f"_{name}({self.str_(args[0])})", "s"
        if name == "int" and n == 1:
            return f"_trunc({self.num(args[0])})", "n"
        if name in ("sqrt", "exp", "log", "sin", "cos") and n == 1:
            return f"_m_{name}({self.num(args[0])})", "n"
        if name == "atan2" and n == 2:
            return f"_atan2({self.num(args[0])}, {self.num(args[1])})", "n"
        if name == "rand" and n == 0:
            return "R.rand()", "n"
        if name == "srand" and n <= 1:
            return f"R.srand({self.num(args[0]) if n else 'None'})", "n"
        if name == "system" and n == 1:
            return f"R.system({self.str_(args[0])})", "n"
        if name == "close" and n in (1, 2):
            return f"R.close({self.str_(args[0])})", "n"
        if name == "fflush" and n <= 1:
            return f"R.fflush({self.str_(args[0]) if n else 'None'})", "n"
        if name == "gensub" and n in (3, 4):
            target = self.str_(args[3]) if n == 4 else self.rec()
            return (f"_gensub({self.regex_of(args[0])}, {self.str_(args[1])}, {self.gx(args[2])[0]}, {target})",
                    "s")
        if name == "strftime" and n <= 3:
            a = [self.gx(x)[0] for x in args]
            return f"R.strftime({', '.join(a)})", "s"
        if name == "systime" and n == 0:
            return "R.systime()", "n"
        if name == "mktime" and n >= 1:
            return f"R.mktime({self.str_(args[0])})", "n"
        if name in ("and", "or", "xor", "lshift", "rshift") and n >= 2:
            return f"_bit_{name}({', '.join(self.num(a) for a in args)})", "n"
        if name == "compl" and n == 1:
            return f"_bit_compl({self.num(args[0])})", "n"
        if name in ("asort", "asorti") and n in (1, 2):
            src = self.arr(args[0][1])
            dst = self.arr(args[1][1]) if n == 2 else "None"
            return f"_{name}({src}, {dst})", "n"
        if name == "strtonum" and n == 1:
            return f"_strtonum({self.gx(args[0])[0]})", "n"
        if name == "typeof" and n == 1:
            a = args[0]
            if a[0] == "var" and a[1] not in self.special and self.is_array(a[1]):
                return "'array'", "s"
            return f"_typeof({self.gx(a)[0]})", "s"
        if name == "isarray" and n == 1:
            a = args[0]
            return ("1.0" if a[0] == "var" and self.is_array(a[1]) else "0.0"), "n"
        raise AwkSyntaxError(f"wrong number of arguments in call to {name}", 0, name)

    # -- statements ----------------------------------------------------------------------
    def block(self, stmts: list, ind: int) -> None:
        start = len(self.lines)
        for s in stmts:
            self.stmt(s, ind)
        if len(self.lines) == start:
            self.emit(ind, "pass")

    def stmt(self, s: tuple, ind: int) -> None:
        k = s[0]
        if k == "block":
            self.block(s[1], ind)
        elif k == "expr":
            self.expr_stmt(s[1], ind)
        elif k in ("print", "printf"):
            self.print_stmt(s, ind)
        elif k == "if":
            self.emit(ind, f"if {self.cond(s[1])}:")
            self.block([s[2]], ind + 1)
            if s[3] is not None:
                self.emit(ind, "else:")
                self.block([s[3]], ind + 1)
        elif k == "while":
            self.emit(ind, f"while {self.cond(s[1])}:")
            self.emit(ind + 1, "_charge()")
            self.loop_depth += 1
            self.block([s[2]], ind + 1)
            self.loop_depth -= 1
        elif k == "do":
            f = self.newtmp()
            self.emit(ind, f"{f} = True")
            self.emit(ind, f"while {f} or {self.cond(s[2])}:")
            self.emit(ind + 1, f"{f} = False")
            self.emit(ind + 1, "_charge()")
            self.loop_depth += 1
            self.block([s[1]], ind + 1)
            self.loop_depth -= 1
        elif k == "for":
            init, cond, incr, body = s[1], s[2], s[3], s[4]
            if init is not None:
                self.stmt(init, ind)
            # `continue` must still run the increment: put it in a finally-free form by
            # running the increment at the top of every iteration after the first.
            f = self.newtmp()
            self.emit(ind, f"{f} = True")
            self.emit(ind, "while True:")
            if incr is not None:
                self.emit(ind + 1, f"if not {f}:")
                self.stmt(incr, ind + 2)
            self.emit(ind + 1, f"{f} = False")
            if cond is not None:
                self.emit(ind + 1, f"if not {self.cond(cond)}: break")
            self.emit(ind + 1, "_charge()")
            self.loop_depth += 1
            self.block([body], ind + 1)
            self.loop_depth -= 1
        elif k == "forin":
            var, arrname, body = s[1], s[2], s[3]
            t = self.newtmp()
            self.emit(ind, f"for {t} in _aiter({self.arr(arrname)}):")
            self.emit(ind + 1, "_charge()")
            self.emit(ind + 1, self.assign_code(("var", var), f"StrNum({t})"))
            self.loop_depth += 1
            self.block([body], ind + 1)
            self.loop_depth -= 1
        elif k == "break":
            self.emit(ind, "break" if self.loop_depth else self._next())
        elif k == "continue":
            self.emit(ind, "continue" if self.loop_depth else self._next())
        elif k == "next":
            self.emit(ind, "raise _Next()" if self.loop_depth else self._next())
        elif k == "nextfile":
            self.emit(ind, "raise _NextFile()")
        elif k == "exit":
            if s[1] is None:
                self.emit(ind, "raise _Exit(None)")
            else:
                self.emit(ind, f"raise _Exit({self.num(s[1])})")
        elif k == "return":
            if s[1] is None:
                self.emit(ind, "return UNINIT")
            else:
                self.emit(ind, f"return {self.gx(s[1])[0]}")
        elif k == "delete":
            a = self.arr(s[1])
            if s[2] is None:
                self.emit(ind, f"{a}.clear()")
            else:
                self.emit(ind, f"_adel({a}, {self.sub(s[2])})")
        else:  # pragma: no cover
            raise AwkSyntaxError(f"unknown statement {k}", 0, k)

    def _next(self) -> str:
        # outside any awk loop in the record loop, `next` is the Python loop's continue
        return "continue" if self.local and self.cur is None else "raise _Next()"

    def expr_stmt(self, e: tuple, ind: int) -> None:
        k = e[0]
        if k in ("preinc", "postinc") and e[2][0] == "var" and e[2][1] not in self.special:
            v = self.varname(e[2][1])
            d = "+ 1.0" if e[1] == "++" else "- 1.0"
            self.emit(ind, f"{v} = {_numv(v)} {d}")
            return
        if k == "assign" and e[2][0] == "var" and e[2][1] not in self.special:
            if e[1] == "=" and self.is_array(e[2][1]):
                raise AwkSyntaxError(f"can't assign to {e[2][1]}; it's an array name.", 0, e[2][1])
            v = self.varname(e[2][1])
            if e[1] == "=":
                self.emit(ind, f"{v} = {self.gx(e[3])[0]}")
            else:
                self.emit(ind, f"{v} = {self.arith(self._OPF[e[1]], _numv(v), self.num(e[3]))}")
            return
        self.emit(ind, self.gx(e)[0])

    def print_stmt(self, s: tuple, ind: int) -> None:
        kind, args, redir = s
        if kind == "print":
            if not args:
                data = f"{self.rec()} + {self.sep('ORS')}"
            else:
                parts = []
                for a in args:
                    c, t = self.field_str(a) if self.local and a[0] == "field" else self.gx(a)
                    parts.append(c if t == "s" else f"_ostr({c})")
                data = f" + {self.sep('OFS')} + ".join(parts) + f" + {self.sep('ORS')}"
        else:
            # mawk writes what it formatted before a missing argument, then dies: _printf
            fa = f"{self.str_(args[0])}, [{', '.join(self.gx(a)[0] for a in args[1:])}]"
            dest = "_w" if redir is None else f"R.output({redir[0]!r}, {self.str_(redir[1])}).write"
            self.emit(ind, f"_printf({dest}, {fa})")
            return
        if redir is None and self.local:
            # stdout's buffer, appended to in place (its write() method call per record is the
            # cost): the loop counts what it added and flushes at the same 32 KiB
            self.emit(ind, f"_o(_d := {data})")
            self.emit(ind, "_osz += len(_d)")
            self.emit(ind, "if _osz > 32768: _osz = _oflush()")
        elif redir is None:
            self.emit(ind, f"_w({data})")
        else:
            self.emit(ind, f"R.output({redir[0]!r}, {self.str_(redir[1])}).write({data})")

    # -- program ---------------------------------------------------------------------------
    def pattern_code(self, p: tuple) -> str:
        return self.cond(p)

    def compile(self) -> str:
        self.cur: _Ctx | None = None
        body_lines: list[tuple[str, list[str]]] = []

        def section(fname: str, blocks: list, params: str = "") -> None:
            self.lines = []
            for b in blocks:
                self.block(b[1], 1)
            self.emit(1, "pass")
            body_lines.append((f"def {fname}({params}):", self.lines))

        section("_begin", self.prog["begin"])
        section("_end", self.prog["end"])
        section("_beginfile", self.prog["beginfile"])
        section("_endfile", self.prog["endfile"])
        # main rules
        self.lines = []
        nrange = self.rules(1)
        body_lines.append(("def _main():", self.lines))
        # functions
        for fname, (_, params, body) in self.funcs.items():
            self.cur = _Ctx(params, self.func_arrays[fname])
            self.lines = []
            for p in params:
                if p in self.func_arrays[fname]:
                    self.emit(1, f"if l_{p} is UNINIT: l_{p} = AwkArray()")
            self.block(body[1], 1)
            self.emit(1, "return UNINIT")
            sig = ", ".join(f"l_{p}=UNINIT" for p in params)
            body_lines.append((f"def f_{fname}({sig}):", self.lines))
            self.cur = None
        self.func_text = [(h, ls) for h, ls in body_lines if h.startswith("def f_")]
        loop = self.record_loop() if self.prog["items"] else None
        if loop is not None and not any(m in "\n".join(lines) for head, lines in self.func_text
                                        for m in _RECORD_MARKS + ("R.NR", "R.FNR")):
            body_lines.append(loop)
        out = [f"_rng = [False] * {nrange}"]
        gl = sorted(f"g_{n}" for n in self.globals_used)
        for head, lines in body_lines:
            out.append(head)
            if gl:
                out.append("    global " + ", ".join(gl))
            out.extend(lines)
        return "\n".join(out) + "\n"


    def rules(self, ind: int) -> int:
        """The main rules, one after the other, at indentation ``ind``; -> number of ranges."""
        nrange = 0
        start = len(self.lines)
        self.first_end = 1 << 30
        for p1, p2, action in self.prog["items"]:
            act = action[1] if action is not None else [("print", [], None)]
            if len(self.lines) > start:
                self.first_end = min(self.first_end, len(self.lines))
            if p1 is None:
                self.block(act, ind)
            elif p2 is None:
                self.emit(ind, f"if {self.pattern_code(p1)}:")
                self.block(act, ind + 1)
            else:
                i = nrange
                nrange += 1
                m = self.newtmp()
                self.emit(ind, f"{m} = False")
                self.emit(ind, f"if _rng[{i}]:")
                self.emit(ind + 1, f"{m} = True")
                self.emit(ind + 1, f"if {self.pattern_code(p2)}: _rng[{i}] = False")
                self.emit(ind, f"elif {self.pattern_code(p1)}:")
                self.emit(ind + 1, f"{m} = True")
                self.emit(ind + 1, f"if not {self.pattern_code(p2)}: _rng[{i}] = True")
                self.emit(ind, f"if {m}:")
                self.block(act, ind + 1)
        if len(self.lines) == start:
            self.emit(ind, "pass")
        return nrange

    def record_loop(self) -> tuple[str, list[str]] | None:
        """``_loop``: the main rules over a batch of records, the record and fields as locals.

        The driver hands it the reader's pre-split records; it counts NR/FNR in a local and
        splits fields on first use (``_sp``: the splitter for FS), without a StrNum per field
        until a value is used as one. It exists only when nothing in the rules or functions
        reaches the record through the runtime (field or NF assignment, getline, NR/FNR/FS/RS
        assignment, nextfile): checked on the generated text, so a new path that uses the
        runtime's record falls back to ``_main`` instead of reading a stale one.
        """
        saved = self.lines
        self.lines = []
        self.local = True
        try:
            self.rules(4)
        finally:
            self.local = False
        body, self.lines = self.lines, saved
        text = "\n".join(body)
        if any(m in text for m in _RECORD_MARKS):
            return None
        funcs = "\n".join("\n".join(lines) for head, lines in self.func_text)
        for name in ("OFS", "ORS"):
            if f"R.setv({name!r}" in text or f"R.setv({name!r}" in funcs:
                body = [ln.replace(f"_{name}", f"R.{name}") for ln in body]
        first = self.prog["items"][0]
        # split at once when the first rule reads a field anyway; else on first use
        head = body[0] if first[0] is not None else "\n".join(body[:self.first_end])
        eager = first[1] is None and FIELDS in head
        ensure = "_f" if eager else "(_f if _f is not None else (_f := _sp(_rec)))"
        lines = ["    _k = 0", "    _rec = None", "    _o = R.stdout.parts.append", "    _osz = 0",
                 "    _OFS = R.OFS", "    _ORS = R.ORS", "    try:",
                 "        for _rec in _islice(_lines, _i, None):",
                 "            _k += 1",
                 "            if not _k & 1023: _check()",
                 f"            _f = {'_sp(_rec)' if eager else 'None'}",
                 "            try:"]
        lines += [ln.replace(FIELDS, ensure) for ln in body]
        lines += ["            except _Next:", "                pass",
                  "    finally:",
                  "        R.NR = _nr0 + _k",
                  "        R.FNR = _fnr0 + _k",
                  "        if _rec is not None:",
                  "            R.rec = StrNum(_rec)",
                  "            R.flds = None",
                  "            R.rec_fs = R.FS"]
        return "def _loop(_lines, _i, _sp, _nr0, _fnr0):", lines


def _numv(c: str) -> str:
    """Number code for value code ``c``: a variable that holds a float already needs no call."""
    if c.isidentifier():
        return f"({c} if type({c}) is float else _num({c}))"
    return f"_num({c})"


# the field list in the record loop's code (a NUL cannot come from a repr'd awk string)
FIELDS = "\x00F\x00"
# generated code that reaches the record, NR/FNR or the reader through the runtime
_RECORD_MARKS = ("R.rec", "R.field(", "R.fnum(", "R.getnf(", "R.setfield(", "R.setnf(", "R.fop(", "R.fpost(",
                 "R.getline", "R.setv('NR'", "R.setv('FNR'", "R.setv('FS'", "R.setv('RS'", "_NextFile")


def compile_program(prog: dict, mawk: bool = True) -> tuple[str, dict[str, object], set[str], set[str]]:
    """-> (python source, constants, global names, global array names)."""
    g = CodeGen(prog, mawk)
    src = g.compile()
    if g.undefined:
        # mawk's order: the last call first, the first call last
        e = AwkSyntaxError(f"function {g.undefined[0]} never defined", 0, g.undefined[0])
        e.others = g.undefined[:0:-1]  # type: ignore[attr-defined]
        raise e
    return src, g.consts, g.globals_used, g.global_arrays


def _literal_rx(src: str) -> str | None:
    """The text a regex of ordinary characters only matches (then ``in`` answers ``~``)."""
    for c in src:
        if c in "\\^$.[]|()*+?{}/" or not (" " <= c <= "~"):
            return None
    return src
