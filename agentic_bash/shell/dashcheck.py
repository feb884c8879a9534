"""`sh` is dash in the virtual level: the bash syntax dash's parser refuses (arrays, here-strings,
process substitution, `|&`, `for ((`, `select`, the `function` keyword), found in a parsed
command line before it runs, with dash's wording."""

from __future__ import annotations

import re

from . import nodes as N

_ARRAY_WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*(\[[^]]*\])?\+?=\(")

_CLOSERS = {N.Subshell: ")", N.Group: "}", N.If: "fi", N.While: "done", N.For: "done", N.Case: "esac"}


class _Found(Exception):
    def __init__(self, line: int, msg: str) -> None:
        super().__init__(msg)
        self.line = line
        self.msg = msg


def dash_syntax_error(tree: N.Script) -> tuple[int, str] | None:
    """(line, dash's message after "Syntax error: ") for the first construct of ``tree`` dash
    cannot parse, or None."""
    try:
        _script(tree, [], tree.line)
    except _Found as f:
        return f.line, f.msg
    return None


def _expect(closers: list[str], msg: str) -> str:
    return f'{msg} (expecting "{closers[-1]}")' if closers else msg


def _script(s: N.Script | None, closers: list[str], line: int) -> None:
    if s is None:
        return
    for it in s.items:
        _cmd(it.cmd, closers, getattr(it.cmd, "line", 0) or line)


def _cmd(c: N.Command, closers: list[str], line: int) -> None:  # noqa: C901 - one case per node type
    line = getattr(c, "line", 0) or line
    t = type(c)
    if t is N.Simple:
        for a in c.assigns:
            if a.array is not None:
                raise _Found(a.line or line, _expect(closers, '"(" unexpected'))
            _word(a.value, closers, line)
            _word(a.index, closers, line)
        for w in c.words:
            p0 = w.parts[0] if w.parts else None
            if type(p0) is N.Lit and _ARRAY_WORD.match(p0.text):
                raise _Found(w.line or line, _expect(closers, '"(" unexpected'))  # declare a=(1)
            _word(w, closers, line)
        _redirs(c.redirs, closers, line)
        return
    if t is N.Pipeline:
        if any(c.stderr_too):
            raise _Found(line, '"&" unexpected')
        for x in c.cmds:
            _cmd(x, closers, line)
        return
    if t is N.AndOr:
        _cmd(c.first, closers, line)
        for _, x in c.rest:
            _cmd(x, closers, line)
        return
    if t is N.ArithFor:
        raise _Found(line, "Bad for loop variable")
    if t is N.Select:
        raise _Found(line, _expect(closers, '"do" unexpected'))
    if t is N.FuncDef:
        src = c.source.lstrip()
        if src.startswith("function") and src[8:9] in (" ", "\t"):
            rest = src[8:].lstrip()
            name_end = len(c.name)
            if rest[name_end:].lstrip().startswith("("):
                raise _Found(line, '"(" unexpected')
            raise _Found(line, '"}" unexpected' if not closers or closers[-1] == "}"
                         else _expect(closers, '"}" unexpected'))
        _cmd(c.body, closers, line)
        return
    closer = _CLOSERS.get(t)
    if closer is not None:
        inner = closers + [closer]
        if t is N.If:
            for cond, body in c.clauses:
                _script(cond, inner, line)
                _script(body, inner, line)
            _script(c.else_body, inner, line)
        elif t is N.While:
            _script(c.cond, inner, line)
            _script(c.body, inner, line)
        elif t is N.For:
            for w in c.words or ():
                _word(w, closers, line)
            _script(c.body, inner, line)
        elif t is N.Case:
            _word(c.word, closers, line)
            for arm in c.arms:
                _script(arm.body, inner, line)
        else:
            _script(c.body, inner, line)
        _redirs(c.redirs, closers, line)


def _redirs(rs: tuple[N.Redir, ...], closers: list[str], line: int) -> None:
    for r in rs:
        if r.op == "<<<":
            raise _Found(r.line or line, "redirection unexpected")
        if type(r.target) is N.Word:
            _word(r.target, closers, line)


def _word(w: N.Word | None, closers: list[str], line: int) -> None:
    if w is None:
        return
    for p in w.parts:
        _part(p, closers, w.line or line)


def _part(p: N.Part, closers: list[str], line: int) -> None:
    t = type(p)
    if t is N.Lit or t is N.SQ or t is N.Escaped or t is N.ANSIC:
        return
    if t is N.ProcSub:
        raise _Found(line, '"(" unexpected')
    if t is N.CmdSub:
        if not p.backtick:
            _script(p.body, closers + [")"], line)
        return
    if t is N.DQ:
        for q in p.parts:
            _part(q, closers, line)
        return
    if t is N.Param:
        _word(p.arg, closers, line)
        _word(p.arg2, closers, line)
        return
    if t is N.ArithSub:
        _word(p.expr, closers, line)
