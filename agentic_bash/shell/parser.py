"""Recursive-descent bash parser producing the frozen AST of ``nodes``."""

# Public API (who raises what):
#
# * ``parse(src, extglob=True) -> Script`` and ``parse_with_warnings(src)`` (also returns
#   ``[(line, message)]``, e.g. bash's here-doc-at-EOF warning) raise ``ParseError(message,
#   line, token)``; ``message`` is bash's text without the ``bash: -c: line N: `` prefix.
#   Extra attributes on the raised error: ``incomplete`` (more input could complete it:
#   REPL continuation), ``source_line`` (set for "near unexpected token" errors: bash echoes
#   that line as a second message), ``keep_status`` (``[[ ]]`` syntax errors: bash -c
#   reports them but exits with the current ``$?``, not 2; an empty message prints nothing),
#   ``status`` (the exit status ``bash -c`` uses: 2, but 1 for an unclosed ``a=(`` and 127
#   for a syntax error inside ``$(…)``, as bash 5.2 does).
#   ``ParseError.__reduce__`` keeps only message/line/token across pickling.
# * ``parse_cached(src)``: process-wide LRU cache of ``parse``; ``parse_cached_with_warnings(src,
#   extglob=…)`` likewise for ``parse_with_warnings`` (warnings as a tuple).
# * ``CommandReader(src, extglob=…, aliases=…)``: one top-level command line per ``next()``,
#   as ``bash -c`` reads (commands before a syntax error run first; ``shopt -s extglob`` and
#   aliases take effect from the next line). ``extglob``/``aliases`` are settable.
# * ``parse_partial(src) -> (Script, ParseError | None, warnings)``: the command lines that
#   ``bash -c`` would run before reporting a syntax error further down.
# * ``parse_word(text, dq=False)``, ``decl_assign(word)``, ``needs_more_input(src)``.
# * Recursion is bounded (``Lexer.max_depth`` nesting levels, ``RecursionError`` mapped to
#   ``ParseError``); time is linear in the input.
#
# Representation choices the interpreter relies on (beyond the comment block of nodes.py):
#
# * ``declare/typeset/local/export/readonly`` arguments of the form ``name=(…)`` /
#   ``name+=(…)`` (bash lexes these as compound assignments) become ONE ``Word`` whose
#   ``parts`` is a single ``Lit`` holding the exact source text ``name=(…)`` (no other word
#   can be a lone Lit containing ``=(``, because ``(`` is a metacharacter), and whose
#   ``text`` is the same. ``decl_assign(word)`` returns the parsed ``Assign`` (with
#   ``array`` elements) for such a word, ``None`` for any other word.
# * ``${a b}`` and other malformed braces are not a parse error in bash but an expansion
#   error ("bad substitution"): ``Param(name=<the whole ${…} source>, op='bad')``. An
#   unexpandable here-doc body (``$(`` never closed) is ``Param(name=<body>, op='bad')`` too:
#   bash reports it when the command runs (status 1) and goes on.
# * A backtick substitution whose text does not parse becomes ``builtin eval '<text>'``
#   (bash parses backticks only when they run: the error then fails that substitution).
# * Here-doc bodies are read at the next newline token; the ``HereDoc`` node is created at
#   the operator and its ``body`` is filled in then (before ``parse`` returns; nodes are
#   immutable afterwards).
# * ``time`` with nothing after it is ``Pipeline(cmds=(), timed=True)``.
# * ``parse_word(text, dq=True)`` returns ``Word((DQ(parts),), text)``.

from __future__ import annotations

import functools
import re
from dataclasses import replace
from collections.abc import Mapping
from typing import Any, Callable

from .._lazyre import lazy_compile as _lazy_re
from ..errors import ParseError
from .lexer import Lexer, _Buf
from .nodes import (
    AndOr, ArithCmd, ArithFor, ArrayElem, Assign, Case, CaseArm, Command, Cond, Coproc,
    CondAnd, CondBinary, CondExpr, CondNot, CondOr, CondUnary, CondWord, DQ, Escaped, For,
    FuncDef, Group, HereDoc, If, ListItem, Lit, Param, Pipeline, Redir, SQ, Script, Select,
    Simple, Subshell, While, Word,
)

__all__ = [
    "CommandReader", "decl_assign", "needs_more_input", "parse", "parse_cached",
    "parse_partial", "parse_with_warnings", "parse_word",
]

_EMPTY_WORD = Word((), "", 0)

RESERVED_CLOSERS = frozenset({"fi", "then", "else", "elif", "do", "done", "esac", "}", "in"})
_DECL_BUILTINS = frozenset({"declare", "typeset", "local", "export", "readonly"})
_ASSIGN_RE = _lazy_re(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=")
_NAME_RE = _lazy_re(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_DIGITS_RE = _lazy_re(r"[0-9]+\Z")
# a backslash-newline not itself escaped by a backslash (group 1: the escaped pairs before it)
_CONTINUATION = _lazy_re(r"(?<!\\)((?:\\\\)*)\\\n")
_FD_VAR_RE = _lazy_re(r"\{([A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]+\])?)\}\Z")

_OPS3 = ("<<-", "<<<", "&>>", ";;&")
_OPS2 = frozenset({"&&", "||", ";;", ";&", "|&", "<<", ">>", "<&", ">&", "<>", ">|", "&>"})
_REDIR_OPS = frozenset({"<", ">", ">>", ">|", "<>", "<&", ">&", "&>", "&>>", "<<<", "<<", "<<-"})
_LIST_END_OPS = frozenset({")", ";;", ";&", ";;&"})

COND_UNARY = frozenset(
    "-a -b -c -d -e -f -g -h -k -p -r -s -t -u -w -x -G -L -N -O -S -z -n -o -v -R".split())
COND_BINARY = frozenset("= == != =~ -eq -ne -lt -le -gt -ge -nt -ot -ef".split())

# token kinds
WORD, OP, NL, EOF, IONUM = 0, 1, 2, 3, 4


class Tok:
    __slots__ = ("kind", "val", "pos", "end", "word", "sub_span", "fd_var")

    def __init__(self, kind: int, val: str, pos: int, end: int, word: Word | None = None) -> None:
        self.kind = kind
        self.val = val
        self.pos = pos
        self.end = end
        self.word = word
        self.sub_span: tuple[int, int] | None = None
        self.fd_var: str | None = None

    def kw(self) -> str | None:
        """The reserved-word text when this is an unquoted plain word, else None."""
        if self.kind == WORD:
            parts = self.word.parts  # type: ignore[union-attr]
            if len(parts) == 1 and type(parts[0]) is Lit:
                return self.val
        return None


def _token_text(tok: Tok) -> str:
    if tok.kind == NL:
        return "newline"
    return tok.val


_ANSIC_QUOTE = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
                "\t": "\\t", "\v": "\\v", "\x1b": "\\E", "'": "\\'", "\\": "\\\\"}


def _shown_token(text: str) -> str:
    """A token as bash's syntax error shows it: ``$'…'`` when it holds control characters."""
    if not any(c < " " or c == "\x7f" for c in text):
        return text
    out = []
    for c in text:
        q = _ANSIC_QUOTE.get(c)
        out.append(q if q is not None else "\\%03o" % ord(c) if c < " " or c == "\x7f" else c)
    return "$'" + "".join(out) + "'"


# what keeps a pipeline on threads and OS pipes (Pipeline.coop): anything that starts a
# thread or waits against the clock inside a stage
_COOP_HAZARD = _lazy_re(
    r"(?<![&|<>])&(?![&>])|[<>]\(|\b(?:coproc|timeout|wait|eval|source|bash|sh)\b"
    r"|(?:^|[\s;&|({])\.\s|\bread\b[^|;&\n]*\s-[A-Za-z]*t")


class Parser(Lexer):
    """One parse of one source string."""

    def __init__(self, src: str, line_base: int = 0, extglob: bool = True) -> None:
        super().__init__(src, line_base, extglob)
        self.tok: Tok | None = None
        self.tok_assign = False
        self.vnl = False
        self.comsub = 0  # nesting of $( … ) being parsed
        self.aliases: Mapping[str, str] | None = None
        self.alias_guard: list[list] = []  # [end_pos, name, start_pos] of spliced alias texts
        self.splices: list[list] = []  # [start, end, replaced text] of every alias splice
        self.raw_subs = False  # here-document body: substitutions keep their lines as written
        self.alias_next: int | None = None

    # ------------------------------------------------------------------ aliases

    def shifted(self, i: int, k: int) -> None:
        for g in self.alias_guard:
            if g[0] > i:
                g[0] -= k
            if g[2] > i:
                g[2] -= k
        for sp in self.splices:
            if sp[0] > i:
                sp[0] -= k
            if sp[1] > i:
                sp[1] -= k
        if self.alias_next is not None and self.alias_next > i:
            self.alias_next -= k

    def maybe_alias(self, tok: Tok) -> bool:
        """Expand an alias at ``tok`` (a command word) by splicing its value into the source,
        as bash does; True when the source changed and the caller must peek again."""
        aliases = self.aliases
        if not aliases or tok.kind != WORD or tok.kw() is None:
            return False
        value = aliases.get(tok.val)
        if value is None:
            return False
        pos = tok.pos
        # guards of expansions already read past no longer apply
        self.alias_guard = [g for g in self.alias_guard if g[0] > pos]
        if any(g[1] == tok.val for g in self.alias_guard):
            return False  # an alias is not expanded inside its own expansion
        if len(self.alias_guard) > 100:
            return False
        src = self.src
        delta = len(value) - (tok.end - pos)
        for g in self.alias_guard:
            if g[0] > pos:
                g[0] += delta
            if g[2] > pos:
                g[2] += delta
        self.alias_guard.append([pos + len(value), tok.val, pos])
        for sp in self.splices:
            if sp[0] > pos:
                sp[0] += delta
            if sp[1] > pos:
                sp[1] += delta
        for c in self.cuts:
            if c[0] > pos:
                c[0] += delta
        self.splices.append([pos, pos + len(value), src[pos:tok.end]])
        self.src = src[:pos] + value + src[tok.end:]
        self.n = len(self.src)
        if "\\\n" in value:
            self.has_conts = True
        # line numbers stay those of the input: bash does not count newlines of alias text
        old_nl = self.nl
        self.nl = [p for p in old_nl if p < pos] + [p + delta for p in old_nl if p >= tok.end]
        self.tok = None
        self.pos = pos
        if self.alias_next is not None and self.alias_next > pos:
            self.alias_next += delta
        if value.endswith((" ", "\t")):
            # bash: the word after this expansion is checked for an alias too
            self.alias_next = pos + len(value)
        return True

    def alias_after(self, tok: Tok) -> Tok:
        """``tok`` after alias expansion when it follows an alias whose value ends in a
        blank (bash checks that next word too, also as a for loop's name, ``in`` and words)."""
        if self.alias_next is None or tok.kind != WORD or tok.pos < self.alias_next:
            return tok
        self.alias_next = None
        while self.maybe_alias(tok):
            tok = self.peek()
        return tok

    # ------------------------------------------------------------------ tokens

    def peek(self, assign_ok: bool = False) -> Tok:
        tok = self.tok
        if tok is not None:
            if not assign_ok or self.tok_assign:
                return tok
            if not (tok.kind == WORD and tok.sub_span is None and not self.tok_assign
                    and "[" in tok.val):
                return tok
            # lexed before we knew it was in assignment position: `a[i + 1]=x` reads differently
            self.pos = tok.pos
            self.tok = None
        self.tok_assign = assign_ok
        self.skip_blanks()
        src, n, i = self.src, self.n, self.pos
        if i >= n:
            if i == len(src) and not self.vnl and src and src[-1] != "\n":
                # bash -c sees a newline after the last line: `echo >` fails at `newline'
                tok = Tok(NL, "", i, i)
            else:
                tok = Tok(EOF, "", i, i)
        else:
            c = src[i]
            if c in "|&;()<>" and self.has_conts:
                # `&\<newline>&` is `&&`: bash joins the lines before tokenising
                if self._op_continues(src, i + 1):
                    src = self.join_lines(i + 1)
                if src[i:i + 2] in ("<<", ";;", "&>") and self._op_continues(src, i + 2):
                    src = self.join_lines(i + 2)
                n = self.n
            if c == "\n":
                tok = Tok(NL, "\n", i, i + 1)
            elif c in "|&;()<>" and not ((c == "<" or c == ">") and i + 1 < n and src[i + 1] == "("):
                s3 = src[i:i + 3]
                if s3 in _OPS3:
                    tok = Tok(OP, s3, i, i + 3)
                elif s3[:2] in _OPS2:
                    tok = Tok(OP, s3[:2], i, i + 2)
                else:
                    tok = Tok(OP, c, i, i + 1)
            else:
                word = self.read_word(assign_ok)
                if word is None:  # defensive: cannot happen, metachars are handled above
                    raise self.fail(f"syntax error near unexpected token `{c}'", i, c)
                end = self.pos
                src, n = self.src, self.n  # the word may have joined continued lines
                tok = Tok(WORD, word.text, i, end, word)
                tok.sub_span = self.sub_span
                if end < n and src[end] in "<>":
                    t = word.text
                    if _DIGITS_RE.match(t) and len(word.parts) == 1:
                        # (a number past INT_MAX is no descriptor: bash reads a plain word)
                        if len(t) < 10 or int(t) <= 2147483647:
                            tok.kind = IONUM
                    else:
                        m = _FD_VAR_RE.match(t)
                        if m and len(word.parts) == 1:
                            tok.kind = IONUM
                            tok.fd_var = m.group(1)
        self.pos = i
        self.tok = tok
        return tok

    @staticmethod
    def _op_continues(src: str, i: int) -> bool:
        """Line continuations at ``i`` followed by a character that may extend an operator."""
        if not src.startswith("\\\n", i):
            return False
        i += 2
        while src.startswith("\\\n", i):
            i += 2
        return i < len(src) and src[i] in "|&;<>()-"

    def advance(self) -> Tok:
        tok = self.tok if self.tok is not None else self.peek()
        self.tok = None
        self.pos = tok.end
        if tok.kind == NL:
            if tok.pos == tok.end:
                self.vnl = True
            if self.pending:
                self.read_heredocs()
        return tok

    def skip_newlines(self) -> None:
        while self.peek().kind == NL:
            self.advance()

    def unexpected(self, tok: Tok, expecting: str | None = None) -> ParseError:
        if tok.kind == EOF:
            if self.pending:
                self.finish_heredocs_at_eof()
            err = self.fail_eof()
            if expecting is not None:
                err.expecting = expecting  # type: ignore[attr-defined]  # (dash names it)
            return err
        text = _token_text(tok)
        # bash reports the line where the token ends (it may span a continuation or a
        # newline inside quotes) and echoes that physical line
        at = tok.end - 1 if tok.end > tok.pos + 1 else tok.pos
        src = self.src
        j = tok.end
        if tok.kind != NL:
            while src.startswith("\\\n", j):
                j += 2  # bash read the continuations after the token (looking for its end)
        err = self.fail(f"syntax error near unexpected token `{_shown_token(text)}'",
                        at if j == tok.end else j, text)
        err.source_line = self.source_line(at) if j == tok.end else (  # type: ignore[attr-defined]
            self.source_line(j) if j < self.n else "")
        if src.endswith("\\") and self.ends_continued(True):
            # bash -c text ending in a lone backslash: bash's line buffer holds it doubled,
            # and a token ending there is reported on the next, empty line
            if tok.end >= self.n:
                err.line += 1
                err.token = text + "\\"
                err.message = f"syntax error near unexpected token `{_shown_token(text + chr(92))}'"
                err.source_line = ""  # type: ignore[attr-defined]
            elif "\n" not in src[tok.pos:]:
                err.source_line += "\\"  # type: ignore[attr-defined]
        for g in self.alias_guard:
            if g[2] <= tok.pos < g[0]:
                # bash echoes the alias text it was reading, not the line it came from
                err.source_line = self.src[g[2]:g[0]]  # type: ignore[attr-defined]
                break
        else:
            if self.splices:
                # outside alias text: the input line as written, aliases unexpanded
                err.source_line = self._input_line(tok.pos)  # type: ignore[attr-defined]
        return err

    def _input_line(self, pos: int) -> str:
        src = self.src
        out: list[str] = []
        k = 0
        opos = pos
        outer: list[list] = []
        for sp in self.splices:  # an alias expanded inside another's text came later
            if not any(o[0] <= sp[0] and sp[1] <= o[1] for o in outer):
                outer.append(sp)
        for start, end, text in sorted(outer):
            out.append(src[k:start])
            out.append(text)
            if end <= pos:
                opos += len(text) - (end - start)
            k = end
        out.append(src[k:])
        orig = "".join(out)
        if opos >= len(orig) and opos > 0 and orig[opos - 1] == "\n":
            opos -= 1
        a = orig.rfind("\n", 0, opos) + 1 if opos > 0 else 0
        b = orig.find("\n", opos)
        return orig[a:b if b >= 0 else len(orig)]

    def source_line(self, pos: int) -> str:
        """The physical line holding ``pos`` (bash echoes it after "near unexpected token")."""
        src = self.src
        if self.cuts:
            # as written: put the removed line continuations back
            pos += sum(k for c, k in self.cuts if c <= pos)
            src = self.raw_text(0, self.n)
        if pos >= len(src) and pos > 0 and src[pos - 1] == "\n":
            pos -= 1
        start = src.rfind("\n", 0, pos) + 1 if pos > 0 else 0
        end = src.find("\n", pos)
        return src[start:end if end >= 0 else len(src)]

    def expect_kw(self, kw: str) -> Tok:
        tok = self.peek()
        if tok.kw() != kw:
            raise self.unexpected(tok, kw)
        return self.advance()

    def expect_op(self, op: str) -> Tok:
        tok = self.peek()
        if tok.kind != OP or tok.val != op:
            raise self.unexpected(tok, op)
        return self.advance()

    # ------------------------------------------------------------------ here-docs

    def read_heredocs(self) -> None:
        resume = None
        if self.alias_guard:
            # a newline inside an alias's text: bash reads the body from the input after
            # the alias, and the rest of the alias text is parsed once the body is done
            ends = [g[0] for g in self.alias_guard if g[2] < self.pos <= g[0]]
            if ends and max(ends) > self.pos:
                # (from the next input line: the rest of the alias's line stays code)
                nxt = self.src.find("\n", max(ends))
                resume, self.pos = self.pos, (nxt + 1 if nxt >= 0 else self.n)
        src, n = self.src, self.n
        pending, self.pending = self.pending, []
        i = body_from = self.pos
        for k, (hd, op_line) in enumerate(pending):
            delim = hd.delimiter
            lines: list[str] = []
            body_start = i
            found = False
            cut = False
            while i < n:
                j = src.find("\n", i)
                if j < 0:
                    j = n
                line = src[i:j]
                joined = None
                if not hd.quoted and self.has_conts:
                    # an unquoted body is read with line continuations removed: a line
                    # ending in an odd run of backslashes goes on with the next one (and
                    # `E\<newline>OF` ends the body when the delimiter is EOF)
                    while j < n and line.endswith("\\") and (len(line) - len(line.rstrip("\\"))) % 2:
                        j = src.find("\n", j + 1)
                        if j < 0:
                            j = n
                        line = src[i:j]
                    if "\n" in line:
                        joined = line.replace("\\\n", "")
                        joined = joined.lstrip("\t") if hd.strip_tabs else joined
                check = line.lstrip("\t") if hd.strip_tabs else line
                if (check if joined is None else joined) == delim:
                    i = j + 1 if j < n else n
                    found = True
                    break
                if self.comsub and delim and check.startswith(delim):
                    # bash: inside $( … ) a line that starts with the delimiter ends the
                    # here-doc (with the end-of-file warning); the rest of the line is code
                    self.warnings.append((
                        self.line_at(i),
                        f"here-document at line {op_line} delimited by end-of-file (wanted `{delim}')",
                    ))
                    i += len(line) - len(check) + len(delim)
                    found = cut = True
                    break
                i = j + 1 if j < n else n
                lines.append(check)
            if not found:
                self.warnings.append((
                    self.eof_line() - 1 + (not hd.quoted and self.ends_continued(False)),
                    f"here-document at line {op_line} delimited by end-of-file (wanted `{delim}')",
                ))
            text = "".join(ln + "\n" for ln in lines)
            self._fill_heredoc(hd, text, self.line_at(body_start))
            if cut:
                self.pending = pending[k + 1:] + self.pending
                break
        self.pos = i
        if resume is not None:
            cut_from = min(body_from, i)
            self.src = src[:cut_from] + src[i:]
            self.n = len(self.src)
            # the body's lines still count for what follows
            self.nl = ([p for p in self.nl if p < cut_from]
                       + [cut_from - 1] * sum(1 for p in self.nl if cut_from <= p < i)
                       + [p - (i - cut_from) for p in self.nl if p >= i])
            self.pos = resume

    def finish_heredocs_at_eof(self) -> None:
        pending, self.pending = self.pending, []
        for hd, op_line in pending:
            self.warnings.append((
                self.eof_line() - 1,
                f"here-document at line {op_line} delimited by end-of-file (wanted `{hd.delimiter}')",
            ))
            self._fill_heredoc(hd, "", op_line)

    def _fill_heredoc(self, hd: HereDoc, text: str, line: int) -> None:
        if hd.quoted or ("$" not in text and "`" not in text and "\\" not in text):
            body = Word((Lit(text),) if text else (), text, line)
        else:
            sub = Parser(text, line - 1, self.extglob)
            sub.depth = self.depth
            sub.raw_subs = True  # bash parses a body's $( … ) only when it expands it
            sub.aliases = self.aliases  # $(al) in the body: aliases apply as in other words
            try:
                parts = sub.read_heredoc_parts()
            except ParseError:
                # bash expands here-doc bodies only when the command runs: a broken `$(`
                # or `${` fails that command (status 1), not the parse
                parts = (Param(text, op="bad"),)
            if "\\\n" in text:
                # the body as bash keeps it (`declare -f` prints it): continuations removed
                text = _CONTINUATION.sub(r"\1", text)
            body = Word(parts, text, line)
            self.warnings.extend(sub.warnings)
        # HereDoc is frozen; its body is known only now (bash reads it at the next newline)
        object.__setattr__(hd, "body", body)

    # ------------------------------------------------------------------ hooks from the lexer

    def parse_subscript_script(self, closer: str, open_pos: int) -> Script:
        """Parse ``$( … )`` / ``<( … )`` from ``pos`` up to and including the ``)``."""
        saved_tok = self.tok
        self.tok = None
        line = self.line_at(self.pos)
        self.comsub += 1
        try:
            items = self.parse_items()
        except ParseError as e:
            if e.message == "syntax error: unexpected end of file":
                err = self.fail_eof_matching(")", open_pos)
                err.line = self.eof_line()
                raise err from None
            if e.message.startswith("syntax error near"):
                e.status = 127  # type: ignore[attr-defined]  # sic: bash -c exits 127 here
            raise
        finally:
            self.comsub -= 1
        tok = self.peek()
        if tok.kind == EOF:
            err = self.fail_eof_matching(")", open_pos)
            err.line = self.eof_line()
            raise err
        if tok.kind != OP or tok.val != ")":
            err = self.unexpected(tok)
            err.status = 127  # type: ignore[attr-defined]  # sic: bash -c exits 127 here
            raise err
        self.tok = None
        self.pos = tok.end
        self.tok = saved_tok
        return Script(tuple(items), line, self.raw_subs)

    def parse_backtick_body(self, text: str, line: int) -> Script:
        sub = Parser(text, line - 1, self.extglob)
        sub.depth = self.depth
        sub.aliases = self.aliases
        try:
            script = sub.parse_script(top=False)
        except ParseError:
            # bash parses `…` only when it runs: a syntax error inside fails that
            # substitution (status 2, message on stderr), not the script. `builtin eval`
            # of the text reproduces that at run time.
            # (the NUL word tells eval to report errors as "command substitution")
            words = (Word((Lit("builtin"),), "builtin", line), Word((Lit("eval"),), "eval", line),
                     Word((Lit("\0cmdsub"),), "", line),
                     Word((SQ(text),), "'" + text.replace("'", "'\\''") + "'", line))
            return Script((ListItem(Simple((), words, (), line)),), line)
        self.warnings.extend(sub.warnings)
        return Script(script.items, line, True)

    # ------------------------------------------------------------------ lists

    def parse_script(self, top: bool = True) -> Script:
        items = self.parse_items(top)
        tok = self.peek()
        if tok.kind != EOF:
            raise self.unexpected(tok)
        if self.pending:
            self.finish_heredocs_at_eof()
        return Script(tuple(items), 1 + self.line_base)

    def parse_line(self) -> Script | None:
        """The next top-level command line (what bash parses, then runs, before reading on);
        None at end of input."""
        self.skip_newlines()
        tok = self.peek(True)
        if tok.kind == EOF:
            if self.pending:
                self.finish_heredocs_at_eof()
            return None
        line = self.line_at(tok.pos)
        items: list[ListItem] = []
        while True:
            tok = self.peek(True)
            if tok.kind == EOF:
                break
            cmd = self.parse_andor()
            tok = self.peek()
            if tok.kind == OP and (tok.val == ";" or tok.val == "&"):
                self.advance()
                nxt = self.peek(True)
                if nxt.kind == NL:
                    self.advance()
                    items.append(ListItem(cmd, tok.val == "&", True, self.line_at(max(self.pos - 1, 0))))
                    break
                items.append(ListItem(cmd, tok.val == "&"))
                if nxt.kind == EOF:
                    break
            elif tok.kind == NL:
                self.advance()
                items.append(ListItem(cmd, False, True, self.line_at(max(self.pos - 1, 0))))
                break
            elif tok.kind == EOF:
                # (the line where reading it stopped: bash's line_number for its reports)
                items.append(ListItem(cmd, False, False, self.line_at(tok.pos)))
                break
            else:
                raise self.unexpected(tok)
        return Script(tuple(items), line)

    def parse_items(self, top: bool = False) -> list[ListItem]:
        """A compound list; stops before a closing keyword/operator or EOF. ``top``: a
        script's top level, where an item ended by ``;`` or ``&`` and then a newline also
        counts as ending its line (bash drops the rest of a line after an expansion error;
        nested lists keep ``newline`` for printing only)."""
        items: list[ListItem] = []
        self.skip_newlines()
        while True:
            tok = self.peek()
            if tok.kind == EOF:
                break
            if tok.kind == OP and tok.val in _LIST_END_OPS:
                break
            kw = tok.kw()
            if kw is not None and kw in RESERVED_CLOSERS:
                break
            cmd = self.parse_andor()
            tok = self.peek()
            if tok.kind == OP and (tok.val == ";" or tok.val == "&"):
                self.advance()
                if top and self.peek().kind == NL:
                    self.advance()  # (reads the line's here-documents)
                    items.append(ListItem(cmd, tok.val == "&", True, self.line_at(max(self.pos - 1, 0))))
                else:
                    items.append(ListItem(cmd, tok.val == "&"))
                self.skip_newlines()
            elif tok.kind == NL:
                if top:
                    self.advance()
                    items.append(ListItem(cmd, False, True, self.line_at(max(self.pos - 1, 0))))
                else:
                    items.append(ListItem(cmd, False, True))
                self.skip_newlines()
            else:
                # (top level, at the end of the text: the line where reading it stopped)
                items.append(ListItem(cmd, False, False, self.line_at(tok.pos) if top and tok.kind == EOF else 0))
                break
        return items

    def parse_body(self) -> Script:
        """A non-empty compound list (bash rejects ``if then``, ``{ }``)."""
        line = self.line_at(self.peek().pos)
        items = self.parse_items()
        if not items:
            raise self.unexpected(self.peek())
        return Script(tuple(items), line)

    def parse_andor(self) -> Command:
        first = self.parse_pipeline()
        rest: list[tuple[str, Command]] = []
        while True:
            tok = self.peek()
            if tok.kind == OP and (tok.val == "&&" or tok.val == "||"):
                self.advance()
                self.skip_newlines()
                rest.append((tok.val, self.parse_pipeline()))
            else:
                break
        if not rest:
            return first
        return AndOr(first, tuple(rest), _line_of(first))

    def parse_pipeline(self) -> Command:
        tok = tok0 = self.peek()
        line = self.line_at(tok.pos)
        timed = posix = negated = False
        kw = tok.kw()
        while kw == "!" or kw == "time":
            self.advance()
            if kw == "!":
                negated = not negated
            else:
                timed = True  # (`time time cmd` times it once, as bash's flag is set twice)
                if self.peek().kw() == "-p":
                    self.advance()
                    posix = True
            tok = self.peek()
            kw = tok.kw()
            if tok.kind in (NL, EOF) or (tok.kind == OP and tok.val in (";", "&", ")")):
                return Pipeline((), negated, (), timed, posix, line)
        cmds = [self.parse_command()]
        stderr: list[bool] = []
        while True:
            tok = self.peek()
            if tok.kind == OP and (tok.val == "|" or tok.val == "|&"):
                self.advance()
                stderr.append(tok.val == "|&")
                self.skip_newlines()
                if self.peek().kw() == "!":
                    raise self.unexpected(self.peek())  # (bash's grammar: `!` only starts a pipeline)
                cmds.append(self.parse_command())
            else:
                break
        if len(cmds) == 1 and not negated and not timed:
            return cmds[0]
        stderr.append(False)
        text = self.src[tok0.pos:self.peek().pos]
        return Pipeline(tuple(cmds), negated, tuple(stderr), timed, posix, line,
                        _COOP_HAZARD.search(text) is None)

    # ------------------------------------------------------------------ commands

    def parse_command(self) -> Command:
        self.enter()
        try:
            tok = self.peek(assign_ok=True)
            if self.aliases:
                self.alias_next = None
                while self.maybe_alias(tok):
                    tok = self.peek(assign_ok=True)
            kind = tok.kind
            if kind == WORD:
                kw = tok.kw()
                if kw is not None:
                    meth = _COMPOUND.get(kw)
                    if meth is not None:
                        return meth(self)
                    if kw in RESERVED_CLOSERS:
                        raise self.unexpected(tok)
                return self.parse_simple()
            if kind == OP:
                if tok.val == "(":
                    if self.src.startswith("((", tok.pos):
                        end = self.scan_arith(tok.pos + 2, join_close=False)
                        if end == -1:
                            raise self.fail_eof_matching(")", tok.pos)
                        if end == -2:
                            # `(( … )\<newline>)`: bash fails on an empty token there
                            j = self.src.find("\\\n", tok.pos + 2)
                            while self.src.startswith("\\\n", j):
                                j += 2
                            err = self.fail("syntax error near unexpected token `'", j, "")
                            err.source_line = self.source_line(j) if j < self.n else ""  # type: ignore[attr-defined]
                            raise err
                        if end is not None:
                            return self.parse_arith_cmd(tok, end)
                    return self.parse_subshell()
                if tok.val in _REDIR_OPS:
                    return self.parse_simple()
                raise self.unexpected(tok)
            if kind == IONUM:
                return self.parse_simple()
            raise self.unexpected(tok)
        finally:
            self.depth -= 1

    def parse_redirs(self) -> tuple[Redir, ...]:
        redirs: list[Redir] = []
        while True:
            tok = self.peek()
            if tok.kind == IONUM or (tok.kind == OP and tok.val in _REDIR_OPS):
                redirs.append(self.parse_redir())
            else:
                return tuple(redirs)

    def parse_redir(self) -> Redir:
        tok = self.advance()
        fd: int | None = None
        fd_var: str | None = None
        line = self.line_at(tok.pos)
        if tok.kind == IONUM:
            if tok.fd_var is not None:
                fd_var = tok.fd_var
            else:
                fd = int(tok.val)
            tok = self.advance()
        op = tok.val
        target_tok = self.peek()
        if target_tok.kind != WORD:
            raise self.unexpected(target_tok)
        self.advance()
        word = target_tok.word
        assert word is not None
        if op == "<<" or op == "<<-":
            delim, quoted = _heredoc_delimiter(word)
            hd = HereDoc(_EMPTY_WORD, quoted, op == "<<-", delim)
            # bash numbers the here-doc by the line its delimiter word ends on
            self.pending.append((hd, self.line_at(target_tok.end - 1)))
            return Redir(op, hd, fd, fd_var, line)
        return Redir(op, word, fd, fd_var, line)

    def parse_simple(self) -> Command:
        assigns: list[Assign] = []
        words: list[Word] = []
        redirs: list[Redir] = []
        first = self.peek(assign_ok=True)
        line = 0
        decl = False
        while True:
            if not line and (assigns or words or redirs):
                # bash numbers a simple command when it reduces the first element: an
                # assignment or redirection at once, a word only after reading the next token
                # (`echo \<newline> $LINENO` is line 2)
                if not words:
                    line = self.line_at(max(self.pos - 1, first.pos))
                else:
                    nt = self.peek(assign_ok=not words)
                    line = self.line_at(nt.end - 1 if nt.end > nt.pos else nt.pos)
                    if nt.end >= self.n and self.src.endswith("\\") and self.ends_continued(True):
                        # bash -c text ending in a lone backslash: reading it counts one more
                        # line, and reading the end after it another (`\` alone runs at line 3)
                        line += 1 if nt.end > nt.pos else 2
            tok = self.peek(assign_ok=not words)
            kind = tok.kind
            if kind == WORD:
                word = tok.word
                assert word is not None
                if not words:
                    a = self.try_assign(tok)
                    if a is not None:
                        assigns.append(a)
                        continue
                    # the command word after assignments or redirections (`>f al x`)
                    if (assigns or redirs) and self.aliases and self.maybe_alias(tok):
                        continue
                    self.advance()
                    words.append(word)
                    nxt = self.peek()
                    if nxt.kind == OP and nxt.val == "(" and not assigns and not redirs:
                        return self.parse_funcdef_parens(tok)
                    kw = tok.kw()
                    decl = kw in _DECL_BUILTINS or (kw in ("eval", "let") and 2)
                    continue
                if decl and self.src.startswith("(", tok.end) and len(word.parts) == 1 \
                        and type(word.parts[0]) is Lit:
                    m = _ASSIGN_RE.match(word.parts[0].text)
                    if m and m.end() == len(word.parts[0].text):
                        words.append(self.parse_decl_array(tok, decl == 2))
                        continue
                if self.alias_next is not None and tok.pos >= self.alias_next:
                    self.alias_next = None
                    if self.maybe_alias(tok):
                        continue
                self.advance()
                words.append(word)
            elif kind == IONUM or (kind == OP and tok.val in _REDIR_OPS):
                redirs.append(self.parse_redir())
            else:
                break
        if not assigns and not words and not redirs:
            raise self.unexpected(self.peek())
        return Simple(tuple(assigns), tuple(words), tuple(redirs), line or self.line_at(first.pos))

    def try_assign(self, tok: Tok) -> Assign | None:
        """If ``tok`` is an assignment word, consume it (and a ``(…)`` array) and return it."""
        word = tok.word
        assert word is not None
        parts = word.parts
        if not parts or type(parts[0]) is not Lit:
            return None
        line = word.line
        if tok.sub_span is not None:
            s, e = tok.sub_span
            src = self.src
            name = src[tok.pos:s - 1]
            append = src[e + 1] == "+"
            value_start = e + (3 if append else 2)
            self.tok = None
            self.pos = s
            saved_n = self.n
            self.n = e
            try:
                iparts = self._read_to_end(s)
            finally:
                self.n = saved_n
            index = Word(iparts, src[s:e], self.line_at(s))
            self.pos = value_start
            if value_start < self.n and src[value_start] == "(":
                # `a[i]=(…)` parses; running it fails ("cannot assign list to array member")
                elems = self.parse_array_elems()
                return Assign(name, None, index, elems, append, line)
            if value_start < self.n and (src[value_start] not in " \t\n|&;()<>" or (
                    src[value_start] in "<>" and src.startswith("(", value_start + 1))):
                vword = self.read_word()
                value = vword if vword is not None else Word((), "", line)
            else:
                value = Word((), "", line)
            self.pos = max(self.pos, value_start)
            return Assign(name, value, index, None, append, line)
        first = parts[0].text  # type: ignore[union-attr]
        m = _ASSIGN_RE.match(first)
        if m is None:
            return None
        name, append = m.group(1), bool(m.group(2))
        rest = first[m.end():]
        self.advance()
        if not rest and len(parts) == 1 and self.src.startswith("(", tok.end):
            elems = self.parse_array_elems()
            return Assign(name, None, None, elems, append, line)
        vparts = ((Lit(rest),) if rest else ()) + parts[1:]
        value = Word(vparts, word.text[m.end():], line)
        return Assign(name, value, None, None, append, line)

    def parse_array_elems(self) -> tuple[ArrayElem, ...]:
        """``( … )`` of an array assignment; ``pos`` is at the ``(``."""
        open_pos = self.pos
        self.pos += 1
        self.tok = None
        elems: list[ArrayElem] = []
        while True:
            if self.tok is None:
                self.skip_blanks()
                if self.pos < self.n and self.src[self.pos] == "[":
                    # `[key with blanks]=value` is one word here, as in bash
                    word = self.read_word(elem=True)
                    if word is not None:
                        elems.append(self._array_elem(word))
                        continue
            tok = self.peek(assign_ok=False)
            if tok.kind == NL:
                self.advance()
                continue
            if tok.kind == OP and tok.val == ")":
                self.advance()
                break
            if tok.kind == EOF:
                err = self.fail_eof_matching(")", open_pos)
                err.status = 1  # type: ignore[attr-defined]  # sic: bash -c exits 1 here
                raise err
            if tok.kind not in (WORD, IONUM):
                err = self.unexpected(tok)
                # bash parses a compound assignment on its own: a bad token there discards
                # the input line (status 1) and the shell reads on from the next line
                nl = self.src.find("\n", tok.pos)
                err.resume_pos = nl + 1 if nl >= 0 else self.n  # type: ignore[attr-defined]
                err.status = 1  # type: ignore[attr-defined]
                raise err
            word = tok.word
            assert word is not None
            self.advance()
            elems.append(self._array_elem(word))
        return tuple(elems)

    def _array_elem(self, word: Word) -> ArrayElem:
        parts = word.parts
        if parts and type(parts[0]) is Lit and parts[0].text.startswith("["):  # type: ignore[union-attr]
            # [key]=value: find the ] followed by = or += in the source text of the word
            text = word.text
            close = _find_key_close(text)
            if close is not None:
                append = text[close + 1] == "+"
                after = close + (3 if append else 2)
                sub = Parser(text, word.line - 1, self.extglob)
                sub.depth = self.depth
                sub.pos = 1
                sub.n = close
                key_parts = sub._read_to_end(1)
                sub.n = len(text)
                sub.pos = after
                vword = sub.read_word() if after < len(text) else None
                value = Word(vword.parts if vword else (), text[after:], word.line)
                return ArrayElem(value, Word(key_parts, text[1:close], word.line), append)
        return ArrayElem(word)

    def parse_decl_array(self, tok: Tok, expand: bool = False) -> Word:
        """``declare a=(…)``: one Word holding the source text (see the module comment).
        ``expand``: after eval or let (bash's PST_ASSIGNOK), one word of the whole text
        that expands as a word does (quotes removed, $-expansions done; blanks kept)."""
        self.advance()
        start = tok.pos
        self.pos = tok.end
        self.parse_array_elems()
        end = self.pos
        text = self.src[start:end]
        if not expand:
            return Word((Lit(text),), text, self.line_at(start))
        saved_n = self.n
        self.pos, self.n = start, end
        try:
            parts = self._read_to_end(start, unquoted=True)
        finally:
            self.n = saved_n
            self.pos = end
            self.tok = None
        if end < self.n and self.src[end] not in " \t\n;&|<>()":
            rest = self.read_word()  # (the word goes on after the `)`: `let i=(1+2)*3`)
            if rest is not None:
                parts = parts + rest.parts
                text = self.src[start:self.pos]
        return Word(parts, text, self.line_at(start))

    def parse_funcdef_parens(self, name_tok: Tok) -> Command:
        self.expect_op("(")
        self.expect_op(")")
        # a name with an expansion or quotes (`$x-f() {…}`) is refused when the definition
        # runs (exec_funcdef), not by the parser
        return self._func_body(name_tok.val, name_tok.pos)

    def _func_body(self, name: str, start: int) -> Command:
        self.skip_newlines()
        tok = self.peek()
        kw = tok.kw()
        line = self.line_at(start)
        if kw is not None and kw in _COMPOUND and kw not in ("function", "time", "!"):
            body = _COMPOUND[kw](self)
        elif tok.kind == OP and tok.val == "(":
            body = self.parse_command()
        else:
            raise self.unexpected(tok)
        source = self.src[start:self.pos].rstrip()
        return FuncDef(name, body, source, line)

    def parse_function_kw(self) -> Command:
        start_tok = self.advance()
        tok = self.peek()
        if tok.kind != WORD:
            raise self.unexpected(tok)
        self.advance()
        name = tok.val
        nxt = self.peek()
        if nxt.kind == OP and nxt.val == "(":
            self.advance()
            self.expect_op(")")
        return self._func_body(name, start_tok.pos)

    # ------------------------------------------------------------------ compound commands

    def _finish(self, node_cls, *args, line: int):  # type: ignore[no-untyped-def]
        redirs = self.parse_redirs()
        return node_cls(*args, redirs=redirs, line=line)

    def parse_if(self) -> Command:
        tok = self.advance()
        line = self.line_at(tok.pos)
        clauses: list[tuple[Script, Script]] = []
        cond = self.parse_body()
        self.expect_kw("then")
        body = self.parse_body()
        clauses.append((cond, body))
        else_body = None
        while True:
            tok = self.peek()
            kw = tok.kw()
            if kw == "elif":
                self.advance()
                cond = self.parse_body()
                self.expect_kw("then")
                clauses.append((cond, self.parse_body()))
            elif kw == "else":
                self.advance()
                else_body = self.parse_body()
                self.expect_kw("fi")
                break
            elif kw == "fi":
                self.advance()
                break
            else:
                raise self.unexpected(tok)
        return self._finish(If, tuple(clauses), else_body, line=line)

    def parse_while(self) -> Command:
        tok = self.advance()
        line = self.line_at(tok.pos)
        cond = self.parse_body()
        self.expect_kw("do")
        body = self.parse_body()
        self.expect_kw("done")
        return self._finish(While, cond, body, tok.val == "until", line=line)

    def _loop_body(self) -> Script:
        """``do … done`` or (bash extension, for/select only) ``{ … }``."""
        tok = self.peek()
        kw = tok.kw()
        if kw == "do":
            self.advance()
            body = self.parse_body()
            self.expect_kw("done")
            return body
        if kw == "{":
            self.advance()
            body = self.parse_body()
            self.expect_kw("}")
            return body
        raise self.unexpected(tok)

    def parse_for(self) -> Command:
        tok = self.advance()
        line = self.line_at(tok.pos)
        is_select = tok.val == "select"
        nxt = self.peek()
        if self.alias_next is not None:
            nxt = self.alias_after(nxt)
        if not is_select and nxt.kind == OP and nxt.val == "(" and self.src.startswith("((", nxt.pos):
            return self.parse_arith_for(nxt, line)
        if nxt.kind != WORD:
            raise self.unexpected(nxt)
        self.advance()
        var = nxt.val
        # an invalid name (`for 1 in …`) is a run-time error in bash, not a syntax error
        words: tuple[Word, ...] | None = None
        # `for x do`, `for x; do`, `for x in …; do`, newlines allowed before in/do
        tok = self.peek()
        semi = tok.kind == OP and tok.val == ";"
        if semi:
            self.advance()
        self.skip_newlines()
        tok = self.peek()
        if self.alias_next is not None:
            tok = self.alias_after(tok)
        if tok.kw() == "in":
            if semi:  # `for x; in …` is not in bash's grammar (only newlines may come before in)
                raise self.unexpected(tok)
            self.advance()
            ws: list[Word] = []
            while True:
                tok = self.peek()
                if self.alias_next is not None:
                    tok = self.alias_after(tok)
                if tok.kind in (WORD, IONUM):
                    self.advance()
                    ws.append(tok.word)  # type: ignore[arg-type]
                elif tok.kind == NL or (tok.kind == OP and tok.val == ";"):
                    self.advance()
                    break
                else:
                    raise self.unexpected(tok)
            words = tuple(ws)
            self.skip_newlines()
        body = self._loop_body()
        redirs = self.parse_redirs()
        end = self.line_at(max(self.pos - 1, 0))
        return (Select if is_select else For)(var, words, body, redirs, line, end)

    def parse_arith_for(self, tok: Tok, line: int) -> Command:
        start = tok.pos + 2
        end = self.scan_arith(start)
        if end is None or end == -1:
            raise self.fail_eof_matching(")", tok.pos)
        # split at the two top-level semicolons
        src = self.src
        cuts: list[int] = []
        depth = 0
        i = start
        while i < end:
            c = src[i]
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            elif c == ";" and depth == 0:
                cuts.append(i)
            elif c in "'\"":
                j = src.find(c, i + 1, end)
                i = j if j > 0 else end
            i += 1
        if len(cuts) != 2:
            raise self.fail("syntax error: arithmetic expression required", tok.pos)
        bounds = [(start, cuts[0]), (cuts[0] + 1, cuts[1]), (cuts[1] + 1, end)]
        exprs: list[Word | None] = []
        for s, e in bounds:
            if not src[s:e].strip():
                exprs.append(None)
                continue
            self.pos = s
            parts = self.read_arith_region(e, tok.pos)
            exprs.append(Word(parts, src[s:e], self.line_at(s)))
        self.tok = None
        self.pos = end + 2
        nxt = self.peek()
        if nxt.kind == OP and nxt.val == ";":
            self.advance()
        self.skip_newlines()
        body = self._loop_body()
        return self._finish(ArithFor, exprs[0], exprs[1], exprs[2], body, line=line)

    def parse_case(self) -> Command:
        tok = self.advance()
        line = self.line_at(tok.pos)
        wtok = self.peek()
        if wtok.kind not in (WORD, IONUM):
            raise self.unexpected(wtok)
        self.advance()
        word = wtok.word
        # bash numbers the case command where its word ends (a multi-line `$( … )`)
        line = self.line_at(max(wtok.end - 1, wtok.pos))
        self.skip_newlines()
        self.expect_kw("in")
        self.skip_newlines()
        arms: list[CaseArm] = []
        while True:
            tok = self.peek()
            if tok.kw() == "esac":
                self.advance()
                break
            if tok.kind == OP and tok.val == "(":
                self.advance()
                tok = self.peek()
            patterns: list[Word] = []
            while True:
                if tok.kind not in (WORD, IONUM):
                    raise self.unexpected(tok)
                self.advance()
                patterns.append(tok.word)  # type: ignore[arg-type]
                tok = self.peek()
                if tok.kind == OP and tok.val == "|":
                    self.advance()
                    tok = self.peek()
                    continue
                if tok.kind == OP and tok.val == ")":
                    self.advance()
                    break
                raise self.unexpected(tok)
            bline = self.line_at(self.peek().pos)
            items = self.parse_items()
            body = Script(tuple(items), bline)
            tok = self.peek()
            if tok.kind == OP and tok.val in (";;", ";&", ";;&"):
                self.advance()
                arms.append(CaseArm(tuple(patterns), body, tok.val))
                self.skip_newlines()
            elif tok.kw() == "esac":
                arms.append(CaseArm(tuple(patterns), body))
            else:
                raise self.unexpected(tok)
        return self._finish(Case, word, tuple(arms), line=line)

    def parse_coproc(self) -> Command:
        """``coproc [NAME] command``: a NAME only before a compound command (bash's grammar:
        ``coproc foo bar`` runs the simple command ``foo bar`` as COPROC)."""
        tok = self.advance()
        line = self.line_at(tok.pos)
        name = "COPROC"
        nxt = self.peek()
        if nxt.kind == WORD and nxt.kw() is not None and _COPROC_NAME.match(nxt.val) \
                and nxt.val not in _COMPOUND and nxt.val not in ("!", "time", "coproc"):
            saved = (self.pos, self.tok, self.tok_assign)
            self.advance()
            after = self.peek()
            kw = after.kw()
            if (kw is not None and kw in _COMPOUND and kw != "function") or \
                    (after.kind == OP and after.val == "("):
                name = nxt.val
            else:
                self.pos, self.tok, self.tok_assign = saved
        body = self.parse_command()
        return Coproc(name, body, line)

    def parse_group(self) -> Command:
        tok = self.advance()
        body = self.parse_body()
        self.expect_kw("}")
        return self._finish(Group, body, line=self.line_at(tok.pos))

    def parse_subshell(self) -> Command:
        tok = self.advance()
        body = self.parse_body()
        self.expect_op(")")
        return self._finish(Subshell, body, line=self.line_at(tok.pos))

    def parse_arith_cmd(self, tok: Tok, end: int) -> Command:
        self.tok = None
        self.pos = tok.pos + 2
        parts = self.read_arith_region(end, tok.pos)
        expr = Word(parts, self.src[tok.pos + 2:end], self.line_at(tok.pos))
        self.pos = end + 2
        # bash reads `(( … ))` as one token: the command's line is where it ends
        return self._finish(ArithCmd, expr, line=self.line_at(end))

    # ------------------------------------------------------------------ [[ ]]

    def parse_cond_cmd(self) -> Command:
        tok = self.advance()
        line = self.line_at(tok.pos)
        saved = self.extglob
        try:
            expr = self.cond_or()
            end = self._cond_skip_nl()
            if end.kind == EOF or (end.kind == NL and end.pos >= len(self.src)):
                err = self.fail("unexpected EOF while looking for `]]'", min(end.pos, max(len(self.src) - 1, 0)),
                                None, True)
                raise err
            if end.kw() != "]]":
                # (bash's cond_error: reported at the line of the `[[`, wherever the token is)
                if end.kind == WORD:
                    err = self.cond_fail("syntax error in conditional expression", end)
                else:
                    err = self.cond_fail("syntax error in conditional expression: unexpected token "
                                         f"`{_token_text(end)}'", end)
                err.line = line
                raise err
            # bash numbers `[[ … ]]` (LINENO inside, traps, xtrace, errors) by the line of
            # its `]]`, wherever it began
            line = self.line_at(end.pos)
            self.advance()
        finally:
            self.extglob = saved
        return self._finish(Cond, expr, line=line)

    def cond_fail(self, message: str, tok: Tok) -> ParseError:
        """A ``[[`` syntax error. bash -c reports it but exits with the current ``$?`` (0 at the
        start), not 2: ``keep_status`` tells the interpreter so. At end of input it is 2."""
        if tok.kind == EOF:
            return self.fail_eof()
        err = self.fail(message, tok.pos, _token_text(tok))
        err.keep_status = tok.pos < len(self.src)  # type: ignore[attr-defined]
        err.cond = True  # type: ignore[attr-defined]
        return err

    def _cond_operand_start(self) -> Tok:
        while True:
            tok = self.peek()
            if tok.kind == NL:
                self.advance()
                continue
            if tok.kind == EOF:
                err = ParseError("unexpected token `EOF' in conditional command", self.eof_line(), "EOF")
                err.incomplete = True  # type: ignore[attr-defined]
                err.status = 2  # type: ignore[attr-defined]
                raise err
            return tok

    def _cond_skip_nl(self) -> Tok:
        """Newlines are allowed after a complete [[ ]] term (before && || ) ]])."""
        while True:
            tok = self.peek()
            if tok.kind == NL and tok.pos < len(self.src):
                self.advance()
                continue
            return tok

    def cond_or(self) -> CondExpr:
        left = self.cond_and()
        while True:
            tok = self._cond_skip_nl()
            if tok.kind == OP and tok.val == "||":
                self.advance()
                left = CondOr(left, self.cond_and())
            else:
                return left

    def cond_and(self) -> CondExpr:
        left = self.cond_not()
        while True:
            tok = self._cond_skip_nl()
            if tok.kind == OP and tok.val == "&&":
                self.advance()
                left = CondAnd(left, self.cond_not())
            else:
                return left

    def cond_not(self) -> CondExpr:
        tok = self._cond_operand_start()
        if tok.kw() == "!":
            self.advance()
            return CondNot(self.cond_not())
        return self.cond_primary()

    def cond_primary(self) -> CondExpr:
        self.enter()
        try:
            tok = self._cond_operand_start()
            if tok.kind == OP and tok.val == "(":
                self.advance()
                e = self.cond_or()
                close = self._cond_skip_nl()
                if close.kind == EOF or (close.kind == NL and close.pos >= len(self.src)):
                    err = self.fail("unexpected token `EOF', expected `)'",
                                    min(close.pos, max(len(self.src) - 1, 0)), "EOF", True)
                    raise err
                if close.kind != OP or close.val != ")":
                    raise self.cond_fail(f"unexpected token `{_token_text(close)}', expected `)'", close)
                self.advance()
                return replace(e, paren=e.paren + 1)
            if tok.kw() == "]]":
                # bash prints nothing for `[[ ]]` and keeps $?
                raise self.cond_fail("", tok)
            if tok.kind not in (WORD, IONUM):
                raise self.cond_fail(f"unexpected token `{_token_text(tok)}' in conditional command", tok)
            self.advance()
            w1 = tok.word
            assert w1 is not None
            kw = tok.kw()
            if kw is not None and kw in COND_UNARY:
                nxt = self.peek()
                if nxt.kind in (WORD, IONUM) and nxt.kw() != "]]":
                    self.advance()
                    return CondUnary(kw, nxt.word)  # type: ignore[arg-type]
                raise self.cond_fail(
                    f"unexpected argument `{_token_text(nxt)}' to conditional unary operator", nxt)
            nxt = self.peek()
            op: str | None = None
            if nxt.kind == WORD and nxt.kw() in COND_BINARY:
                op = nxt.val
            elif nxt.kind == OP and nxt.val in ("<", ">"):
                op = nxt.val
            if op is None:
                if nxt.kw() == "]]" or (nxt.kind == OP and nxt.val in ("&&", "||", ")")):
                    return CondWord(w1)
                if nxt.kind in (WORD, IONUM):
                    raise self.cond_fail("conditional binary operator expected", nxt)
                raise self.cond_fail(
                    f"unexpected token `{_token_text(nxt)}', conditional binary operator expected", nxt)
            self.advance()
            if op == "=~":
                right = self.read_regex_word()
            else:
                if op in ("=", "==", "!="):
                    # bash reads the pattern after = == != with extglob on, whatever
                    # `shopt extglob` says (other operands follow the setting: `[[ !(x) ]]`
                    # is a negated group until extglob is turned on)
                    saved, self.extglob = self.extglob, True
                    try:
                        rtok = self.peek()
                    finally:
                        self.extglob = saved
                else:
                    rtok = self.peek()
                if rtok.kind not in (WORD, IONUM) or rtok.kw() == "]]":
                    raise self.cond_fail(
                        f"unexpected argument `{_token_text(rtok)}' to conditional binary operator", rtok)
                self.advance()
                right = rtok.word  # type: ignore[assignment]
            return CondBinary(op, w1, right)  # type: ignore[arg-type]
        finally:
            self.depth -= 1

    def read_regex_word(self) -> Word:
        """The right side of ``=~``: ``(``, ``)`` and ``|`` are regex characters, blanks inside
        parentheses too."""
        self.tok = None
        self.skip_blanks()
        src, n = self.src, self.n
        start = i = self.pos
        buf = _Buf()
        depth = 0
        open_at = 0
        while i < n:
            c = src[i]
            if c in " \t\n" and depth == 0:
                break
            if c == "(":
                if not depth:
                    open_at = i
                depth += 1
                buf.text(c)
                i += 1
            elif c == ")":
                if depth == 0:
                    break
                depth -= 1
                buf.text(c)
                i += 1
            elif c in "<>" and depth == 0 and i + 1 < n and src[i + 1] == "(":
                # a process substitution is a word part here too (`=~ <(true)\+`)
                i = self._read_procsub(buf, c, i)
                src, n = self.src, self.n
            elif c in "&;<>" and depth == 0:
                break
            elif c == "\\":
                if i + 1 < n:
                    if src[i + 1] != "\n":
                        buf.part(Escaped(src[i + 1]))
                    i += 2
                else:
                    buf.text(c)
                    i += 1
            elif c in "'\"$`":
                i = self._read_quote_or_sub(buf, c, i)
            else:
                buf.text(c)
                i += 1
        self.pos = i
        if depth:
            # bash reads a regex group to its `)`: at the end of the text it reports that,
            # then the missing operand (status 2)
            err = ParseError("unexpected argument to conditional binary operator", self.eof_line())
            err.status = 2  # type: ignore[attr-defined]
            err.cond = True  # type: ignore[attr-defined]
            err.before = ((self.line_at(open_at),  # type: ignore[attr-defined]
                           "unexpected EOF while looking for matching `)'"),)
            raise err
        if i == start:
            tok = self.peek()
            if tok.kind == OP:
                raise self.cond_fail("syntax error in conditional expression: unexpected token "
                                     f"`{_token_text(tok)}'", tok)
            raise self.cond_fail(
                f"unexpected argument `{_token_text(tok)}' to conditional binary operator", tok)
        return Word(buf.done(), src[start:i], self.line_at(start))


def _line_of(cmd: Command) -> int:
    return getattr(cmd, "line", 0)


def _find_key_close(text: str) -> int | None:
    depth = 0
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                if i + 1 < n and text[i + 1] == "=":
                    return i
                if i + 2 < n and text[i + 1] == "+" and text[i + 2] == "=":
                    return i
                return None
        elif c == "\\":
            i += 1
        elif c == "'":
            j = text.find("'", i + 1)
            if j < 0:
                return None
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            i = j
        i += 1
    return None


def _quoted_outside_subs(raw: str) -> bool:
    """Has ``raw`` a quote or backslash outside ``$(…)``, ``${…}`` and backquotes?"""
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        if c in "'\"\\":
            return True
        if c == "$" and i + 1 < n and raw[i + 1] in "({":
            opener = raw[i + 1]
            closer = ")" if opener == "(" else "}"
            depth = 0
            i += 1
            while i < n:
                ch = raw[i]
                if ch == "\\":
                    i += 2
                    continue
                if ch == "'":
                    j = raw.find("'", i + 1)
                    i = n if j < 0 else j + 1
                    continue
                if ch == opener:
                    depth += 1
                elif ch == closer:
                    depth -= 1
                    if depth == 0:
                        break
                i += 1
        elif c == "`":
            j = i + 1
            while j < n and raw[j] != "`":
                j += 2 if raw[j] == "\\" else 1
            i = j
        i += 1
    return False


def _heredoc_delimiter(word: Word) -> tuple[str, bool]:
    """The delimiter after quote removal of its source text (no expansion), and whether any
    quoting was present (then the body is not expanded)."""
    raw = word.text
    if "\\" not in raw and "'" not in raw and '"' not in raw or not _quoted_outside_subs(raw):
        # (quotes only inside `$(...)`, `${...}` or backquotes do not quote the word: bash
        # takes `EOF$(echo 'x')` as it is written, and expands the body)
        return raw, False
    out: list[str] = []
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        if c == "\\" and i + 1 < n:
            out.append(raw[i + 1])
            i += 2
        elif c == "'":
            j = raw.find("'", i + 1)
            j = n if j < 0 else j
            out.append(raw[i + 1:j])
            i = j + 1
        elif c == '"':
            j = i + 1
            while j < n and raw[j] != '"':
                if raw[j] == "\\" and raw.startswith("\n", j + 1):
                    j += 2  # a line continuation
                    continue
                if raw[j] == "\\" and j + 1 < n and raw[j + 1] in '$`"\\':
                    j += 1
                out.append(raw[j])
                j += 1
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out), True


_COMPOUND = {
    "if": Parser.parse_if,
    "while": Parser.parse_while,
    "until": Parser.parse_while,
    "for": Parser.parse_for,
    "select": Parser.parse_for,
    "case": Parser.parse_case,
    "function": Parser.parse_function_kw,
    "{": Parser.parse_group,
    "[[": Parser.parse_cond_cmd,
    "coproc": Parser.parse_coproc,
}
_COPROC_NAME = _lazy_re(r"[A-Za-z_][A-Za-z0-9_]*\Z")


# ---------------------------------------------------------------------------- public API


# One line of plain-word commands (`ls -la /tmp`, `cd src && make test`, `mkdir d; cd d`):
# no quoting, expansion, glob, brace, tilde, comment, pipe, background or redirection
# character anywhere, commands joined only by `;`, `&&` and `||`, no `=` in a command's
# first word (an assignment) and no reserved or declaration word first. Such a line is
# built here without the parser (tests/shell/test_plain_line.py checks it builds the
# parser's tree).
_PLAIN_CMD = re.compile(r"[ \t]*([A-Za-z0-9_./:,+%@^-]+)((?:[ \t]+[A-Za-z0-9_./:,+%@^=-]+)*)[ \t]*\Z")
_PLAIN_CHARS = re.compile(r"[A-Za-z0-9_./:,+%@^=;&| \t-]*\n?\Z")
_PLAIN_ANDOR = _lazy_re(r"(&&|\|\|)")
_PLAIN_FIRST_NO = frozenset({
    "if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while", "until", "for",
    "select", "function", "time", "coproc", "in",
}) | _DECL_BUILTINS


def _plain_simple(text: str) -> Simple | None:
    m = _PLAIN_CMD.match(text)
    if m is None:
        return None
    first = m.group(1)
    if first in _PLAIN_FIRST_NO:
        return None
    texts = [first]
    rest = m.group(2)
    if rest:
        texts += rest.split()
    return Simple((), tuple([Word((Lit(t),), t, 1) for t in texts]), (), 1)


def _plain_line(source: str) -> Script | None:
    if "|" in source and "|" in source.replace("||", ""):
        return None  # a pipeline: never plain words only
    if _PLAIN_CHARS.match(source) is None:
        return None
    body = source[:-1] if source.endswith("\n") else source
    segments = body.split(";")
    if len(segments) > 1 and not segments[-1].strip(" \t"):
        segments.pop()  # one `;` may end the line
    items = []
    for seg in segments:
        if "&" in seg or "|" in seg:
            pieces = _PLAIN_ANDOR.split(seg)
            first = _plain_simple(pieces[0])
            if first is None:
                return None
            rest = []
            for k in range(1, len(pieces), 2):
                cmd = _plain_simple(pieces[k + 1])
                if cmd is None:
                    return None
                rest.append((pieces[k], cmd))
            node: Command = AndOr(first, tuple(rest), 1)
        else:
            simple = _plain_simple(seg)
            if simple is None:
                return None
            node = simple
        items.append(ListItem(node, False, False, 0))
    items[-1] = ListItem(items[-1].cmd, False, True, 1)
    return Script(tuple(items), 1)


def parse_with_warnings(source: str, *, extglob: bool = True) -> tuple[Script, list[tuple[int, str]]]:
    """Parse ``source``; also return bash's warnings as ``(line, message)`` (here-doc at EOF)."""
    if len(source) < 512:
        tree = _plain_line(source)
        if tree is not None:
            return tree, []
    p = Parser(source, 0, extglob)
    try:
        script = p.parse_script()
    except RecursionError:
        err = ParseError("maximum nesting depth exceeded", p.line_at(p.pos), None)
        err.incomplete = False  # type: ignore[attr-defined]
        err.status = 2  # type: ignore[attr-defined]
        raise err from None
    return script, p.warnings


def parse(source: str, *, extglob: bool = True) -> Script:
    """Parse a bash script; raises ``ParseError`` (with ``.incomplete``) like ``bash -c`` would."""
    return parse_with_warnings(source, extglob=extglob)[0]


class CommandReader:
    """Parse a script one top-level command line at a time, as ``bash -c`` does: earlier lines
    run before a syntax error in a later line is seen (``echo a\\nfi`` prints ``a``, then
    fails with status 2). Set ``extglob`` between calls when ``shopt`` changes it."""

    def __init__(self, source: str, *, extglob: bool = True,
                 aliases: Mapping[str, str] | None = None, line_base: int = 0) -> None:
        self._p = Parser(source, line_base, extglob)
        self._p.aliases = aliases
        self._raw_src: str | None = None
        self._raw = ""

    @property
    def aliases(self) -> Mapping[str, str] | None:
        """Aliases expanded in command position (bash: only with ``shopt -s expand_aliases``);
        read live, so an ``alias`` on one line applies from the next line on."""
        return self._p.aliases

    @aliases.setter
    def aliases(self, value: Mapping[str, str] | None) -> None:
        self._p.aliases = value

    @property
    def consumed(self) -> tuple[str, int]:
        """The text being read (aliases spliced in) and how far the lines returned so far
        reach: what ``set -v`` echoes is the text between two such offsets."""
        p = self._p
        off = p.tok.pos if p.tok is not None else p.pos
        if not p.cuts:
            return p.src, off
        # line continuations the lexer removed are echoed as written
        if self._raw_src is not p.src:
            self._raw_src = p.src
            self._raw = p.raw_text(0, p.n)
        return self._raw, off + sum(k for c, k in p.cuts if c <= off)

    @property
    def extglob(self) -> bool:
        return self._p.extglob

    @extglob.setter
    def extglob(self, value: bool) -> None:
        self._p.extglob = value

    @property
    def warnings(self) -> list[tuple[int, str]]:
        """Warnings so far (``(line, message)``); the caller may clear the list after printing."""
        return self._p.warnings

    def next(self) -> Script | None:
        """The next command line, None at the end; raises ``ParseError``. An error with a
        ``resume_pos`` (a bad token in a compound assignment) is one bash recovers from:
        reading goes on from the next line."""
        p = self._p
        try:
            return p.parse_line()
        except ParseError as e:
            resume = getattr(e, "resume_pos", None)
            if resume is not None:
                p.pos = resume
                p.tok = None
                p.pending = []
                p.depth = 0
            raise
        except RecursionError:
            err = ParseError("maximum nesting depth exceeded", p.line_at(p.pos), None)
            err.incomplete = False  # type: ignore[attr-defined]
            err.status = 2  # type: ignore[attr-defined]
            raise err from None

    def __iter__(self):  # type: ignore[no-untyped-def]
        while True:
            s = self.next()
            if s is None:
                return
            yield s


def parse_partial(source: str, *, extglob: bool = True
                  ) -> tuple[Script, ParseError | None, list[tuple[int, str]]]:
    """The complete command lines before the first syntax error, that error (or None) and the
    warnings: what ``bash -c`` runs before it reports a syntax error on a later line."""
    reader = CommandReader(source, extglob=extglob)
    items: list[ListItem] = []
    err: ParseError | None = None
    try:
        for s in reader:
            items.extend(s.items)
    except ParseError as e:
        err = e
    return Script(tuple(items), 1), err, reader.warnings


def needs_more_input(source: str) -> bool:
    """For a REPL: True when ``source`` is an unfinished command that more lines could complete
    (open quote or compound command, trailing ``&&``/``|``/``\\``, or an open here-doc, which
    ``bash -c`` would only warn about)."""
    stripped = source.rstrip("\n")
    if stripped.endswith("\\") and not stripped.endswith("\\\\"):
        return True
    try:
        _, warnings = parse_with_warnings(source)
    except ParseError as e:
        return bool(getattr(e, "incomplete", False))
    return any(msg.startswith("here-document at line") for _, msg in warnings)


_CACHE_MAX_SOURCE = 64 * 1024
CACHE_BUDGET = 1 << 20
"""Source characters one parse cache may hold. A tree costs ~75 bytes per character of a
dense script (100 distinct 60 KB evals pinned 450 MiB when the caches were bounded by entry
count only), so each cache pins at most ~75 MiB of trees however its sources are shaped."""


def sized_cache(budget: int = CACHE_BUDGET, entries: int = 4096) -> Callable[[Callable], Callable]:
    """A process-wide least-recently-used cache for a function whose first argument is the
    source text: bounded by ``entries`` and by ``budget`` characters of source (a source
    larger than the whole budget is not kept). Thread-safe."""
    import threading
    from collections import OrderedDict

    def wrap(fn: Callable) -> Callable:
        cache: OrderedDict[tuple, Any] = OrderedDict()
        lock = threading.Lock()
        held = [0]

        @functools.wraps(fn)
        def cached(source: str, *rest: Any) -> Any:
            key = (source, *rest)
            # a hit takes no lock: get and move_to_end are single C calls under the GIL (an
            # entry evicted in between is simply not moved)
            hit = cache.get(key, _NOT_KEPT)
            if hit is not _NOT_KEPT:
                try:
                    cache.move_to_end(key)
                except KeyError:
                    pass
                return hit
            value = fn(source, *rest)  # (a ParseError is not kept: it is raised each time)
            n = len(source)
            if n <= budget:
                with lock:
                    if key not in cache:
                        cache[key] = value
                        held[0] += n
                        while held[0] > budget or len(cache) > entries:
                            k, _ = cache.popitem(last=False)
                            held[0] -= len(k[0])
            return value

        def cache_clear() -> None:
            with lock:
                cache.clear()
                held[0] = 0

        cached.cache_clear = cache_clear  # type: ignore[attr-defined]
        cached.held = lambda: held[0]  # type: ignore[attr-defined]
        return cached
    return wrap


_NOT_KEPT: Any = object()


def parse_cached(source: str) -> Script:
    """``parse`` with a process-wide cache (the AST is immutable, so sharing is safe); big
    sources are parsed afresh so the cache cannot pin gigabytes of trees."""
    if len(source) > _CACHE_MAX_SOURCE:
        return parse(source)
    return _parse_cached(source)


@sized_cache()
def _parse_cached(source: str) -> Script:
    return parse(source)


def parse_cached_at(source: str, line_base: int) -> Script:
    """``parse_cached`` with the lines numbered from ``line_base + 1`` (eval's text counts
    from the eval command's line in bash); a ParseError's line is relative to the text."""
    if line_base <= 0:
        return parse_cached(source)
    if len(source) > _CACHE_MAX_SOURCE:
        return _parse_at(source, line_base)
    return _parse_cached_at(source, line_base)


def _parse_at(source: str, line_base: int) -> Script:
    try:
        return Parser(source, line_base).parse_script()
    except ParseError:
        parse(source)  # the error with its line counted from the text's start
        raise
    except RecursionError:
        return parse(source)  # raises the bash-style nesting error


@sized_cache(entries=1024)
def _parse_cached_at(source: str, line_base: int) -> Script:
    return _parse_at(source, line_base)


def parse_cached_with_warnings(source: str, *, extglob: bool = True
                               ) -> tuple[Script, tuple[tuple[int, str], ...]]:
    """``parse_with_warnings`` with the process-wide cache (keyed on ``extglob`` too)."""
    if len(source) > _CACHE_MAX_SOURCE:
        tree, warns = parse_with_warnings(source, extglob=extglob)
        return tree, tuple(warns)
    return _parse_cached_w(source, extglob)


@sized_cache()
def _parse_cached_w(source: str, extglob: bool) -> tuple[Script, tuple[tuple[int, str], ...]]:
    tree, warns = parse_with_warnings(source, extglob=extglob)
    return tree, tuple(warns)


@functools.lru_cache(maxsize=1024)
def parse_word(text: str, *, dq: bool = False) -> Word:
    """Parse ``text`` as one word: inside double quotes when ``dq`` (PS4, ``${x@P}``), else as
    an unquoted word whose blanks and metacharacters are literal."""
    p = Parser(text, 0, True)
    try:
        if dq:
            parts = p.read_heredoc_parts(dq=True)
            return Word((DQ(parts),), text, 1)
        parts = p._read_to_end(0, unquoted=True)
    except RecursionError:
        raise ParseError("maximum nesting depth exceeded", 1, None) from None
    return Word(parts, text, 1)


@functools.lru_cache(maxsize=1024)
def _decl_assign(text: str, line: int, extglob: bool) -> Assign | None:
    p = Parser(text, max(line - 1, 0), extglob)
    tok = p.peek(assign_ok=True)
    if tok.kind != WORD:
        return None
    a = p.try_assign(tok)
    return a


def decl_assign(word: Word, *, extglob: bool = True) -> Assign | None:
    """For a ``declare``-style argument ``name=(…)`` (a lone ``Lit`` with ``=(``) the parsed
    ``Assign`` with its array elements; None for any other word."""
    parts = word.parts
    if len(parts) != 1 or type(parts[0]) is not Lit:
        return None
    text = parts[0].text  # type: ignore[union-attr]
    m = _ASSIGN_RE.match(text)
    if m is None or not text.startswith("(", m.end()):
        return None
    return _decl_assign(text, word.line, extglob)
