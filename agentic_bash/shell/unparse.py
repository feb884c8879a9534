"""Print AST nodes back as bash source in bash's own canonical layout (``declare -f``, ``type``)."""

# The layout follows what bash 5.2 prints (observed with `declare -f` on this machine): four-space
# indentation, `f () ` and `{ ` with trailing blanks, every command of a loop/if body ended
# by `;`, `|&` shown as `2>&1 |`, `elif` shown as a nested `if` inside `else`, here-doc
# bodies printed after the line holding their operator, comments and line continuations
# dropped, `$'…'` shown single-quoted, lone `[[ word ]]` operands shown as `-n word`,
# newlines kept inside `$( … )`. Known difference: an
# explicit `1<>` keeps its fd (bash prints `<>`, which would mean fd 0 when read back).

from __future__ import annotations

from .nodes import (
    ANSIC, DQ, SQ, AndOr, ArithCmd, ArithFor, ArithSub, Assign, Case, CmdSub, Command, Cond, Coproc,
    CondAnd, CondBinary, CondExpr, CondNot, CondOr, CondUnary, CondWord, Escaped, For,
    FuncDef, Group, HereDoc, If, Lit, Param, Part, Pipeline, ProcSub, Redir, Script, Select,
    Simple, Subshell, While, Word,
)

__all__ = ["format_command", "format_function", "format_part", "format_script", "format_word"]

_INDENT = 4


# ----------------------------------------------------------------------------- words


def _needs_rebuild(parts: tuple[Part, ...]) -> bool:
    for p in parts:
        t = type(p)
        if t is ANSIC or t is ProcSub:
            return True
        if t is CmdSub and not p.backtick:  # type: ignore[union-attr]
            return True
        if t is DQ and _needs_rebuild(p.parts):  # type: ignore[union-attr]
            return True
        if t is Param:
            for w in (p.index, p.arg, p.arg2):  # type: ignore[union-attr]
                if w is not None and _needs_rebuild(w.parts):
                    return True
    return False


def format_word(word: Word) -> str:
    """A word as bash prints it: its source text, except that ``$( … )`` bodies are
    re-printed, ``$'…'`` becomes single-quoted and line continuations disappear."""
    text = word.text
    if (not text and word.parts) or _needs_rebuild(word.parts):
        return "".join(format_part(p) for p in word.parts)
    if "\\\n" in text or '$"' in text:
        return _normalize_text(text)
    return text


def _normalize_text(text: str) -> str:
    """Drop backslash-newline pairs outside single quotes and the ``$`` of ``$"…"`` (bash
    does both while lexing)."""
    out: list[str] = []
    i, n = 0, len(text)
    in_sq = in_dq = False
    while i < n:
        c = text[i]
        if in_sq:
            out.append(c)
            if c == "'":
                in_sq = False
            i += 1
            continue
        if c == "\\" and i + 1 < n:
            if text[i + 1] != "\n":
                out.append(text[i:i + 2])
            i += 2
            continue
        if c == "'" and not in_dq:
            in_sq = True
        elif c == '"':
            in_dq = not in_dq
        elif c == "$" and not in_dq and i + 1 < n and text[i + 1] == '"':
            i += 1  # $"…" prints as "…"
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _sq(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


_DQ_SPECIAL_AFTER_BACKSLASH = frozenset('$`"\\\n')
_DOLLAR_TRIGGERS = frozenset("{([@*#?-$!_0123456789") | frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _format_dq(parts: tuple[Part, ...]) -> str:
    """Double-quoted text with the fewest escapes that keep its meaning."""
    rendered = [None if type(p) is Lit else format_part(p, True) for p in parts]
    out = ['"']
    for k, p in enumerate(parts):
        r = rendered[k]
        if r is not None:
            out.append(r)
            continue
        text = p.text  # type: ignore[union-attr]
        after = rendered[k + 1][:1] if k + 1 < len(parts) and rendered[k + 1] else '"'
        n = len(text)
        for i, ch in enumerate(text):
            nxt = text[i + 1] if i + 1 < n else after
            if ch == '"' or ch == "`":
                out.append("\\" + ch)
            elif ch == "\\":
                out.append("\\\\" if nxt in _DQ_SPECIAL_AFTER_BACKSLASH else "\\")
            elif ch == "$" and nxt in _DOLLAR_TRIGGERS:
                out.append("\\$")
            else:
                out.append(ch)
    out.append('"')
    return "".join(out)


def format_part(p: Part, in_dq: bool = False) -> str:
    """Source text for one word part."""
    t = type(p)
    if t is Lit:
        return _format_dq((p,))[1:-1] if in_dq else p.text  # type: ignore[union-attr]
    if t is Escaped:
        return "\\" + p.text  # type: ignore[union-attr]
    if t is SQ:
        return "'" + p.text + "'"  # type: ignore[union-attr]
    if t is ANSIC:
        return _sq(p.text)  # type: ignore[union-attr]
    if t is DQ:
        return _format_dq(p.parts)  # type: ignore[union-attr]
    if t is Param:
        return _format_param(p)  # type: ignore[arg-type]
    if t is CmdSub:
        if p.backtick:  # type: ignore[union-attr]
            return "`" + format_script(p.body, comsub=True).replace("`", "\\`") + "`"  # type: ignore[union-attr]
        body = format_script(p.body, comsub=True)  # type: ignore[union-attr]
        return "$( " + body + ")" if body.startswith("(") else "$(" + body + ")"
    if t is ArithSub:
        return "$((" + p.expr.text + "))"  # type: ignore[union-attr]
    if t is ProcSub:
        return p.direction + "(" + format_script(p.body, comsub=True) + ")"  # type: ignore[union-attr]
    raise TypeError(f"not a word part: {p!r}")


def _wtext(w: Word | None) -> str:
    return "" if w is None else format_word(w)


def _format_param(p: Param) -> str:
    if p.op == "bad":
        return p.name
    if p.short:
        return "$" + p.name
    s = ["${", p.prefix, p.name]
    if p.index is not None:
        s.append("[" + _wtext(p.index) + "]")
    s.append(p.op)
    if p.arg is not None:
        s.append(_wtext(p.arg))
    if p.arg2 is not None:
        s.append(("/" if p.op.startswith("/") else ":") + _wtext(p.arg2))
    s.append("}")
    return "".join(s)


def _format_arg(w: Word) -> str:
    parts = w.parts
    if len(parts) == 1 and type(parts[0]) is Lit and "=(" in w.text:
        from .parser import decl_assign  # a declare-style `name=(…)` argument

        a = decl_assign(w)
        if a is not None:
            return _format_assign(a)
    return format_word(w)


def _format_assign(a: Assign) -> str:
    s = a.name
    if a.index is not None:
        s += "[" + _wtext(a.index) + "]"
    s += "+=" if a.append else "="
    if a.array is not None:
        elems = []
        for e in a.array:
            if e.key is not None:
                elems.append("[" + _wtext(e.key) + "]" + ("+=" if e.append else "=") + _wtext(e.value))
            else:
                elems.append(_wtext(e.value))
        return s + "(" + " ".join(elems) + ")"
    return s + _wtext(a.value)


# ----------------------------------------------------------------------- redirections


def _format_redir(r: Redir) -> str:
    op = r.op
    fd = r.fd
    target = r.target
    prefix = "{" + r.fd_var + "}" if r.fd_var is not None else ""
    if isinstance(target, HereDoc):
        if not prefix and fd is not None and fd != 0:
            prefix = str(fd)
        delim = _sq(target.delimiter) if target.quoted else target.delimiter
        return prefix + op + delim
    word = format_word(target)
    if op in ("<&", ">&"):
        if op == ">&" and fd is None and not prefix and not _fd_like(word):
            return ">&" + word  # `>& file` (bash keeps it, no fd)
        if not prefix:
            prefix = str(fd if fd is not None else (0 if op == "<&" else 1))
        if word == "-":
            return prefix + ">&-"  # bash prints every close as N>&-
        return prefix + op + word
    if op in ("&>", "&>>"):
        return op + " " + word
    if not prefix and fd is not None:
        default = 0 if op in ("<", "<<<") else 1
        if fd != default:
            prefix = str(fd)
    if op == "<>" and not prefix:
        # bash prints the implicit fd 0 of `<>` as `0<>`. (It also omits an explicit fd 1,
        # which would change the meaning when the text is parsed again; we keep `1<>`.)
        prefix = "0" if fd is None or fd == 0 else str(fd)
    return prefix + op + " " + word


def _fd_like(word: str) -> bool:
    w = word[:-1] if word.endswith("-") else word
    return w.isdigit() or word == "-"


# ------------------------------------------------------------------------ the printer


class _Conn:
    """bash's binary list node: ``first <op> second`` (lists and pipes are left-heavy)."""

    __slots__ = ("first", "op", "second", "negated", "timed", "posix")

    def __init__(self, first: object, op: str, second: object) -> None:
        self.first = first
        self.op = op
        self.second = second
        self.negated = False
        self.timed = False
        self.posix = False


class _Stage:
    """A pipeline stage followed by ``|&``: bash appends ``2>&1`` to its redirections."""

    __slots__ = ("cmd",)

    def __init__(self, cmd: Command) -> None:
        self.cmd = cmd


def _list_tree(s: Script) -> object:
    items = s.items
    if not items:
        return None
    node: object = items[0].cmd
    for prev, item in zip(items, items[1:]):
        op = "&" if prev.background else ("\n" if prev.newline else ";")
        node = _Conn(node, op, item.cmd)
    if items[-1].background:
        node = _Conn(node, "&", None)
    return node


class _Printer:
    """Replays bash's printing rules (indentation, `;` placement, deferred here-doc bodies)."""

    def __init__(self, comsub: bool = False) -> None:
        self.out: list[str] = []
        self.indentation = 0
        self.skip_indent = 0
        self.in_function = 0
        self.connection = 0
        self.comsub = comsub
        self.deferred: list[HereDoc] = []
        self.was_heredoc = False

    # low level

    def w(self, s: str) -> None:
        if s:
            self.out.append(s)

    def last_char(self) -> str:
        for s in reversed(self.out):
            if s:
                return s[-1]
        return ""

    def newline(self, s: str = "") -> None:
        self.w("\n" + " " * self.indentation + s)

    def semicolon(self) -> None:
        if self.last_char() not in ("&", "\n", ""):
            self.w(";")

    def flush(self, connector: str = "") -> None:
        """Print the connector, then the bodies of here-docs whose operators were printed."""
        plain = bool(connector) and connector != ";"
        if plain:
            self.w(connector)
        if self.deferred:
            self._bodies(self.deferred)
            self.deferred = []
            if plain:
                self.w(" ")

    def _bodies(self, docs: list[HereDoc]) -> None:
        self.w("\n")
        for hd in docs:
            self.w(hd.body.text + hd.delimiter + "\n")
        self.was_heredoc = True

    # commands

    def node(self, cmd: object) -> None:
        if cmd is None or (type(cmd) is Script and not cmd.items):  # type: ignore[union-attr]
            return
        if self.skip_indent:
            self.skip_indent -= 1
        else:
            self.w(" " * self.indentation)
        t = type(cmd)
        if t is Script:
            cmd = _list_tree(cmd)  # type: ignore[arg-type]
            if cmd is None:
                return
            self.skip_indent += 1
            self.node(cmd)
            return
        if t is Pipeline:
            cmd = self._pipe_tree(cmd)  # type: ignore[arg-type]
            t = type(cmd)
            if t is not _Conn:
                self.skip_indent += 1
                self.node(cmd)
                return
        elif t is AndOr:
            node: object = cmd.first  # type: ignore[union-attr]
            for op, c in cmd.rest:  # type: ignore[union-attr]
                node = _Conn(node, op, c)
            cmd, t = node, _Conn
        if t is _Conn:
            self.conn(cmd)  # type: ignore[arg-type]
            return
        if t is _Stage:
            self.node_redirs(cmd.cmd, "2>&1")  # type: ignore[union-attr]
            return
        self.node_redirs(cmd)  # type: ignore[arg-type]

    def _pipe_tree(self, p: Pipeline) -> object:
        stages: list[object] = [
            _Stage(c) if i < len(p.stderr_too) and p.stderr_too[i] else c
            for i, c in enumerate(p.cmds)
        ]
        prefix = ("time -p " if p.time_posix else "time ") if p.timed else ""
        if p.negated:
            prefix += "! "
        self.w(prefix)
        if not stages:
            return None
        node = stages[0]
        for st in stages[1:]:
            node = _Conn(node, "|", st)
        return node

    def node_redirs(self, cmd: Command, extra: str = "") -> None:
        t = type(cmd)
        if t is Simple:
            words = [_format_assign(a) for a in cmd.assigns]  # type: ignore[union-attr]
            words.extend(_format_arg(w) for w in cmd.words)  # type: ignore[union-attr]
            text = " ".join(words)
            self.w(text)
            self.redirs(cmd.redirs, extra, " " if text else "")  # type: ignore[union-attr]
            return
        if t is FuncDef:
            self.funcdef(cmd)  # type: ignore[arg-type]
            return
        if t is Coproc:
            self.w(f"coproc {cmd.name} ")  # type: ignore[union-attr]
            self.node_redirs(cmd.body, extra)  # type: ignore[union-attr]
            return
        if t is Group:
            self.group(cmd.body)  # type: ignore[union-attr]
        elif t is Subshell:
            self.w("( ")
            self.skip_indent += 1
            self.node(cmd.body)  # type: ignore[union-attr]
            self.flush()
            self.w(" )")
        elif t is If:
            self.if_(cmd.clauses, cmd.else_body)  # type: ignore[union-attr]
        elif t is While:
            self.while_(cmd)  # type: ignore[arg-type]
        elif t is For or t is Select:
            self.for_(cmd)  # type: ignore[arg-type]
        elif t is ArithFor:
            self.arith_for(cmd)  # type: ignore[arg-type]
        elif t is Case:
            self.case(cmd)  # type: ignore[arg-type]
        elif t is ArithCmd:
            self.w("((" + cmd.expr.text + "))")  # type: ignore[union-attr]
        elif t is Cond:
            self.w("[[ " + _cond(cmd.expr) + " ]]")  # type: ignore[union-attr]
        else:
            raise TypeError(f"not a command: {cmd!r}")
        self.redirs(cmd.redirs, extra)  # type: ignore[union-attr]

    def redirs(self, redirs: tuple[Redir, ...], extra: str = "", lead: str = " ") -> None:
        if not redirs and not extra:
            return
        self.w(lead)
        self.was_heredoc = False
        texts = [_format_redir(r) for r in redirs]
        if extra:
            texts.append(extra)
        self.w(" ".join(texts))
        docs = [r.target for r in redirs if isinstance(r.target, HereDoc)]
        if docs:
            if self.connection:
                self.deferred = docs  # type: ignore[assignment]
            else:
                self._bodies(docs)  # type: ignore[arg-type]

    def conn(self, c: _Conn) -> None:
        self.skip_indent += 1
        self.connection += 1
        self.node(c.first)
        op = c.op
        if op == "&" or op == "|":
            self.flush(" " + op)
            if op != "&" or c.second is not None:
                self.w(" ")
                self.skip_indent += 1
        elif op == "&&" or op == "||":
            self.flush(" " + op + " ")
            if c.second is not None:
                self.skip_indent += 1
        else:  # ; or newline; inside $( … ) bash keeps the newlines
            nl = op == "\n" and self.comsub and not self.in_function
            was_newline = nl and not self.deferred and not self.was_heredoc
            if not self.deferred:
                if not self.was_heredoc:
                    self.w("\n" if nl else ";")
                else:
                    self.was_heredoc = False
            else:
                self.flush("" if self.in_function else ";")
            if self.in_function:
                self.w("\n")
            elif nl and not was_newline:
                self.w("\n")
            else:
                if not nl:
                    self.w(" ")
                if c.second is not None:
                    self.skip_indent += 1
        self.node(c.second)
        if self.deferred:
            self.flush()
        self.connection -= 1

    def body(self, s: Script | None) -> None:
        self.indentation += _INDENT
        self.node(s)
        self.flush()
        self.indentation -= _INDENT

    def group(self, body: Script) -> None:
        self.w("{ ")
        if not self.in_function:
            self.skip_indent += 1
        else:
            self.w("\n")
            self.indentation += _INDENT
        self.node(body)
        self.flush()
        if self.in_function:
            self.w("\n")
            self.indentation -= _INDENT
            self.w(" " * self.indentation)
        else:
            self.semicolon()
            self.w(" ")
        self.w("}")

    def if_(self, clauses: tuple[tuple[Script, Script], ...], else_body: Script | None) -> None:
        cond, then = clauses[0]
        self.w("if ")
        self.skip_indent += 1
        self.node(cond)
        self.flush()
        self.semicolon()
        self.w(" then\n")
        self.body(then)
        rest = clauses[1:]
        if rest or else_body is not None:
            self.semicolon()
            self.newline("else\n")
            self.indentation += _INDENT
            if rest:
                # bash stores `elif` as an `if` inside `else`
                self.w(" " * self.indentation)
                self.if_(rest, else_body)
            else:
                self.node(else_body)
            self.flush()
            self.indentation -= _INDENT
        self.semicolon()
        self.newline("fi")

    def while_(self, c: While) -> None:
        self.w("until " if c.until else "while ")
        self.skip_indent += 1
        self.node(c.cond)
        self.flush()
        self.semicolon()
        self.w(" do\n")
        self.body(c.body)
        self.semicolon()
        self.newline("done")

    def for_(self, c: For | Select) -> None:
        kw = "select" if type(c) is Select else "for"
        words = ['"$@"'] if c.words is None else [format_word(w) for w in c.words]
        self.w(f"{kw} {c.var} in " + " ".join(words) + ";")
        self.newline("do\n")
        self.body(c.body)
        self.semicolon()
        self.newline("done")

    def arith_for(self, c: ArithFor) -> None:
        def e(w: Word | None) -> str:
            return "1" if w is None else w.text.lstrip()
        self.w("for ((" + e(c.init) + "; " + e(c.cond) + "; " + e(c.step) + "))")
        self.newline("do\n")
        self.body(c.body)
        self.semicolon()
        self.newline("done")

    def case(self, c: Case) -> None:
        self.w("case " + format_word(c.word) + " in ")
        self.indentation += _INDENT
        for arm in c.arms:
            pats = " | ".join(format_word(p) for p in arm.patterns)
            if arm.patterns and arm.patterns[0].text == "esac":
                pats = "(" + pats
            self.newline(pats + ")\n")
            self.body(arm.body)
            self.newline(arm.terminator)
        self.indentation -= _INDENT
        self.newline("esac")

    def funcdef(self, f: FuncDef) -> None:
        self.w(f"function {f.name} () \n" + " " * self.indentation)
        self.func_body(f.body)

    def func_body(self, body: Command) -> None:
        self.w("{ \n")
        self.in_function += 1
        self.indentation += _INDENT
        redirs: tuple[Redir, ...] = ()
        if type(body) is Group:
            redirs = body.redirs  # type: ignore[union-attr]
            self.node(body.body)  # type: ignore[union-attr]
        else:
            self.node(body)
        self.flush()
        self.indentation -= _INDENT
        self.in_function -= 1
        if redirs:
            self.newline("} ")
            self.redirs(redirs, lead="")
        else:
            self.newline("}")
            self.was_heredoc = False


def _cond(e: CondExpr, parent: str = "") -> str:
    s = _cond_bare(e, parent)
    for _ in range(e.paren):
        s = "( " + s + " )"
    return s


def _cond_bare(e: CondExpr, parent: str = "") -> str:
    t = type(e)
    if t is CondWord:
        return "-n " + format_word(e.word)  # type: ignore[union-attr]
    if t is CondUnary:
        return e.op + " " + format_word(e.operand)  # type: ignore[union-attr]
    if t is CondBinary:
        return format_word(e.left) + " " + e.op + " " + format_word(e.right)  # type: ignore[union-attr]
    if t is CondNot:
        inner = e.expr  # type: ignore[union-attr]
        s = _cond(inner, "!")
        if type(inner) in (CondAnd, CondOr) and not inner.paren:
            s = "( " + s + " )"
        return "! " + s
    if t is CondAnd:
        left, right = e.left, e.right  # type: ignore[union-attr]
        ls = _cond(left, "&&")
        rs = _cond(right, "&&")
        if type(left) is CondOr and not left.paren:
            ls = "( " + ls + " )"
        if type(right) in (CondOr, CondAnd) and not right.paren:
            rs = "( " + rs + " )"
        return ls + " && " + rs
    if t is CondOr:
        left, right = e.left, e.right  # type: ignore[union-attr]
        ls = _cond(left, "||")
        rs = _cond(right, "||")
        if type(right) is CondOr and not right.paren:
            rs = "( " + rs + " )"
        return ls + " || " + rs
    raise TypeError(f"not a conditional expression: {e!r}")


# ---------------------------------------------------------------------------- public API


def format_function(fd: FuncDef) -> str:
    """``declare -f`` text of a function (no trailing newline), laid out as bash 5.2 does."""
    p = _Printer()
    p.w(f"{fd.name} () \n")
    p.func_body(fd.body)
    return "".join(p.out)


def format_command(cmd: Command) -> str:
    """A command as bash prints it outside a function body (lists joined with ``; ``)."""
    p = _Printer()
    p.skip_indent = 1
    p.node(cmd)
    p.flush()
    return "".join(p.out)


def format_script(s: Script, *, comsub: bool = False) -> str:
    """A command list on one line (``a; b & c``), as inside ``$( … )``."""
    p = _Printer(comsub)
    p.skip_indent = 1
    p.node(s)
    p.flush()
    return "".join(p.out)
