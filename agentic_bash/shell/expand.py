"""Word expansion in bash order: brace, tilde, parameter/command/arithmetic, splitting, globbing."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .._lazyre import lazy_compile as _lazy_re
from ..limits import check_size, check_words
from . import nodes as N
from .state import VarError, assoc_keys, ASSOC, INTEGER, LOWER, NAMEREF, UPPER, READONLY, EXPORT, ARRAY, TRACE, CAPCASE, Var

if TYPE_CHECKING:  # pragma: no cover
    from .interpreter import Interpreter

__all__ = ["Expander", "ExpansionError", "glob_escape"]

_GLOB_CHARS = _lazy_re(r"[*?\[]|[@!+](?=\()")
_SPLIT_OR_GLOB = _lazy_re(r"[ \t\n*?\[]|[@!+](?=\()")


def _split_or_glob(v: str) -> bool:
    """_SPLIT_OR_GLOB.search(v): the regex scans ~100 MB/s (a 64 MiB value held the GIL for
    0.6 s, past a run's deadline); substring tests run at memchr speed."""
    if len(v) < 4096:
        return _SPLIT_OR_GLOB.search(v) is not None
    return (" " in v or "\n" in v or "\t" in v or "*" in v or "?" in v or "[" in v
            or ("(" in v and _SPLIT_OR_GLOB.search(v) is not None))


def _ws_split_long(text: str, ws: str) -> list[str]:
    """``re.split("[ws]+", text)`` at str.split speed: the regex scanned a 32 MiB value for
    0.4 s in one C call (no deadline, no other thread: a run waiting to start a job's
    thread returned 1-3 s late)."""
    sep = ws[0]
    if not any(c in text for c in ws):
        return [text]
    if len(ws) > 1:
        text = text.translate({ord(c): sep for c in ws[1:]})
    check_words(text.count(sep), len(text))  # (before the list of pieces is made: contract12)
    parts = text.split(sep)
    # runs of separators leave empty pieces: the regex keeps only a leading and a trailing one
    segs = [p for p in parts if p]
    if not parts[0]:
        segs.insert(0, "")
    if not parts[-1]:
        segs.append("")
    return segs


def _has_glob(v: str) -> bool:
    """_GLOB_CHARS.search(v), fast on long values (see _split_or_glob)."""
    if len(v) < 4096:
        return _GLOB_CHARS.search(v) is not None
    return "*" in v or "?" in v or "[" in v or ("(" in v and _GLOB_CHARS.search(v) is not None)
_NEEDS_WORK = _lazy_re(r"[*?\[{~]|[@!+](?=\()")
_GLOB_ESC = _lazy_re(r"([*?\[\]\\!@+()|{}^-])")
_NAME_RE = _lazy_re(r"[A-Za-z_][A-Za-z_0-9]*\Z")
_INDIRECT_OK = _lazy_re(r"(?:[A-Za-z_][A-Za-z_0-9]*(?:\[.*\])?|[0-9]+|[@*#?$!-])\Z", re.S)
_ASSIGN_WORD = _lazy_re(r"[A-Za-z_][A-Za-z_0-9]*=")


def _star_param(p: N.Param) -> bool:
    """Is ``p`` a ``*`` form ($*, ${a[*]}, ${!a[*]}, ${!prefix*}) rather than an ``@`` one?"""
    if p.index is not None:
        ip = p.index.parts
        return len(ip) == 1 and type(ip[0]) is N.Lit and ip[0].text == "*"
    if p.prefix == "!":
        return p.op == "*"
    return p.name == "*"


_PLAIN_NAME: dict[str, int] = {}


def _plain_name(name: str) -> int:
    """How ``$name`` reads: -1 the variable's value (not special or dynamic), N > 0 the
    positional parameter N, 0 anything else."""
    from .interpreter import DYNAMIC
    if name.isdigit() and name.isascii():
        plain = int(name) if name[0] != "0" else 0
    else:
        plain = -1 if _NAME_RE.match(name) and name != "_" and name not in DYNAMIC else 0
    if len(_PLAIN_NAME) >= 4096:
        _PLAIN_NAME.clear()
    _PLAIN_NAME[name] = plain
    return plain


_ARITH_SUB_PLAIN = frozenset("$`'\"\\[]")  # (characters a subscript's expansion result is quoted for)


class ExpansionError(Exception):
    """An expansion error (bad substitution, ``${x:?}``, unbound variable): message and exit status.

    ``fatal`` errors end a non-interactive shell (bash -c) like bash does.
    """

    def __init__(self, message: str, status: int = 1, fatal: bool = True) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.fatal = fatal
        # bash -c: an unbound variable or ${x:?} (127) exits the shell; other expansion
        # errors (bad substitution, arithmetic, failglob) discard the current command line
        self.discard = status != 127


_DASH_BAD_OPS = frozenset((":", "/", "//", "/#", "/%", "^", "^^", ",", ",,", "~", "~~", "@", "bad"))


def _expr_text(w: N.Word | None, value: int) -> str:
    """The source text bash quotes in substring errors (`` -3`` keeps its blank)."""
    return w.text if w is not None and w.text else str(value)


def _substring_error(p: N.Param, length: int) -> ExpansionError:
    """``${s:1:-5}``: like an error in $((...)), it drops the command line but never ends
    the shell under set -e (``subst``)."""
    e = ExpansionError(f"{_expr_text(p.arg2, length)}: substring expression < 0", 1)
    e.subst = True  # type: ignore[attr-defined]
    return e


def glob_escape(s: str) -> str:
    """Escape pattern-special characters so ``s`` matches literally."""
    return _GLOB_ESC.sub(r"\\\1", s) if s else s


_WS_SPLIT: dict[str, re.Pattern[str]] = {}
_DEFAULT_WS = _lazy_re("[ \t\n]+")

# chunk kinds inside a field under construction
_LIT, _QUOTED, _SPLIT = 0, 1, 2


_CHECK_CHARS = 1 << 20


class _Fields:
    """Accumulates the fields of one word: text chunks tagged with how they were quoted."""

    __slots__ = ("fields", "cur", "quoted", "ifs", "ifs_ws", "ifs_nws", "assign", "size", "next")

    def __init__(self, ifs: str | None) -> None:
        self.fields: list[tuple[list[tuple[str, int]], bool]] = []
        self.cur: list[tuple[str, int]] = []
        self.quoted = False
        # characters gathered so far: one word's expansion (a here-document's body, "$x$x",
        # "${a[@]}") is bounded by max_variable_bytes, checked every _CHECK_CHARS
        self.size = 0
        self.next = _CHECK_CHARS
        self.assign = False  # an assignment value: ${x-~:~} operands tilde-expand after ':' too
        if ifs is None:
            ifs = " \t\n"
        self.ifs = ifs
        self.ifs_ws = "".join(c for c in ifs if c in " \t\n")
        self.ifs_nws = "".join(c for c in ifs if c not in " \t\n")

    def lit(self, text: str) -> None:
        if text:
            self.cur.append((text, _LIT))
            n = self.size = self.size + len(text)
            if n >= self.next:
                self.grown()

    def q(self, text: str) -> None:
        self.quoted = True
        if text:
            self.cur.append((text, _QUOTED))
            n = self.size = self.size + len(text)
            if n >= self.next:
                self.grown()

    def unsplit(self, text: str) -> None:
        """Text of an expansion that is not split (an assignment value, a here-string)."""
        if text:
            self.cur.append((text, _SPLIT))
            n = self.size = self.size + len(text)
            if n >= self.next:
                self.grown()

    def grown(self) -> None:
        check_size(self.size, "expansion")
        self.next = self.size + _CHECK_CHARS

    def brk(self, force: bool = False) -> None:
        if self.cur or self.quoted or force:
            self.fields.append((self.cur, self.quoted))
            if not len(self.fields) & 0xFFFF:
                check_words(len(self.fields), self.size)  # (contract12: word lists are bounded)
        self.cur = []
        self.quoted = False

    def split(self, text: str) -> None:
        if not text:
            return
        n = self.size = self.size + len(text)
        if n >= self.next:
            self.grown()
        ifs = self.ifs
        if not ifs:
            self.cur.append((text, _SPLIT))
            return
        ws, nws = self.ifs_ws, self.ifs_nws
        if not nws:
            if len(text) < 4096:
                rx = _WS_SPLIT.get(ws)
                if rx is None:
                    rx = _WS_SPLIT[ws] = re.compile("[" + re.escape(ws) + "]+")
                segs = rx.split(text)
            else:
                segs = _ws_split_long(text, ws)
            cur = self.cur
            for k, seg in enumerate(segs):
                if k:
                    self.brk()
                    cur = self.cur
                if seg:
                    cur.append((seg, _SPLIT))
            return
        i, n = 0, len(text)
        start = 0
        while i < n:
            c = text[i]
            if c in ifs:
                if i > start:
                    self.cur.append((text[start:i], _SPLIT))
                j = i
                while j < n and text[j] in ws:
                    j += 1
                force = False
                if j < n and text[j] in nws:
                    force = True
                    j += 1
                    while j < n and text[j] in ws:
                        j += 1
                elif c in nws:
                    force = True
                self.brk(force)
                i = start = j
            else:
                i += 1
        if start < n:
            self.cur.append((text[start:], _SPLIT))

    def finish(self) -> list[tuple[list[tuple[str, int]], bool]]:
        self.brk()
        return self.fields


def _field_text(chunks: list[tuple[str, int]]) -> str:
    if len(chunks) == 1:
        return chunks[0][0]
    return "".join(c[0] for c in chunks)


class Expander:
    """Mixin of ``Interpreter``: all word expansion. ``self`` is the interpreter."""

    # ------------------------------------------------------------------ public entry points
    def reported_error(self: Interpreter, message: str) -> ExpansionError:
        """An error bash reports with report_error (bad substitution, failglob's no match):
        it ends the current command line, and the shell itself under set -e."""
        e = ExpansionError(message, 1)
        if self.state.options["errexit"]:
            e.discard = False
        return e

    def expand_words(self: Interpreter, words: tuple[N.Word, ...] | list[N.Word]) -> list[str]:
        """Full expansion of command words (brace, tilde, params, split, glob)."""
        out: list[str] = []
        for w in words:
            parts = w.parts
            if len(parts) == 1:
                p = parts[0]
                tp = type(p)
                if tp is N.Lit:
                    t = p.text
                    if not _NEEDS_WORK.search(t):
                        out.append(t)
                        continue
                elif tp is N.SQ or tp is N.Escaped or tp is N.ANSIC:
                    out.append(p.text)
                    continue
                elif tp is N.Param and not p.op and not p.prefix and p.index is None \
                        and p.name not in ("@", "*"):
                    v = self.param_value(p, False)
                    if v is None:
                        continue
                    if type(v) is str:
                        if v:
                            self._split_glob_into(v, out)
                        continue
                elif tp is N.CmdSub:
                    v = self.command_subst(p.body)
                    if v:
                        self._split_glob_into(v, out)
                    continue
                elif tp is N.DQ and len(p.parts) == 1:
                    q = p.parts[0]
                    if type(q) is N.Param and not q.op and not q.prefix and q.index is None \
                            and q.name not in ("@", "*"):
                        v = self.param_value(q, True)
                        if type(v) is str:
                            out.append(v)
                            continue
            try:
                if self.state.options["braceexpand"] and self._has_brace(w):
                    bws = self._braces(w)
                    budget = self.budget if len(bws) > 4096 else None
                    for k, bw in enumerate(bws):
                        if budget is not None and not k & 4095:
                            budget.charge_read(0)  # (the deadline, in a million-word expansion)
                        if type(bw) is str:
                            out.append(bw)  # a plain word ({1..9}, a{b,c}), as braces gave it
                            continue
                        bp = bw.parts
                        if (len(bp) == 1 and type(bp[0]) is N.Lit and bp[0].text
                                and not _NEEDS_WORK.search(bp[0].text)):
                            out.append(bp[0].text)  # a plain word ({1..9}, a{b,c}): as is
                            continue
                        try:
                            # (a word brace expansion made is no assignment: `{a,b}=~` keeps ~)
                            out.extend(self._expand_full(bw, False))
                        except ExpansionError as e:
                            if getattr(e, "name_word", False):
                                from .unparse import format_word
                                if e.name_word in (True, "brace"):  # (a $(( )) keeps its own text here)
                                    _name_word(e, format_word(N.Word(bw.parts)))
                                e.name_word = False
                            raise
                else:
                    out.extend(self._expand_full(w))
            except ExpansionError as e:
                _name_word(e, w.text)
                raise
        return out

    def expand_str(self: Interpreter, word: N.Word, *, tilde: bool = False, assign: bool = False) -> str:
        """Expansion without splitting or globbing (assignment values, redirection targets, case words)."""
        parts = word.parts
        if len(parts) == 1:
            p = parts[0]
            tp = type(p)
            if tp is N.Lit:
                t = p.text
                if "~" not in t or not (tilde or assign):
                    return t
            elif tp is N.SQ or tp is N.Escaped or tp is N.ANSIC:
                return p.text
            elif tp is N.ArithSub:
                return str(self.arith_sub(p.expr))
            elif tp is N.Param and not p.op and not p.prefix and p.index is None:
                v = self.param_value(p, True)
                if type(v) is str:
                    return v
            elif tp is N.CmdSub:
                return self.command_subst(p.body)
            elif tp is N.DQ and len(p.parts) == 1:
                q = p.parts[0]
                tq = type(q)
                if tq is N.Param and not q.op and not q.prefix and q.index is None:
                    v = self.param_value(q, True)
                    if type(v) is str:
                        return v
                elif tq is N.CmdSub:
                    return self.command_subst(q.body)
        fb = _Fields("")
        fb.assign = assign
        try:
            self._parts_into(parts, fb, False, tilde_mode=2 if assign else (1 if tilde else 0), nosplit=True)
        except ExpansionError as e:
            _name_word(e, word.text)
            raise
        fields = fb.finish()
        return " ".join(_field_text(f[0]) for f in fields) if len(fields) != 1 else _field_text(fields[0][0])

    def expand_dq(self: Interpreter, word: N.Word) -> str:
        """Expand like the inside of double quotes (arithmetic, here-doc bodies)."""
        parts = word.parts
        if len(parts) == 1 and type(parts[0]) is N.Lit:
            return parts[0].text
        fb = _Fields("")
        try:
            self._parts_into(parts, fb, True)
        except ExpansionError as e:
            _name_word(e, word.text)
            raise
        fields = fb.finish()
        return " ".join(_field_text(f[0]) for f in fields)

    def expand_arith(self: Interpreter, word: N.Word) -> str:
        """A ((...)) or $((...)) expression expanded for the arithmetic: as expand_dq, but
        what an expansion inside an array subscript gives is quoted, so the evaluator takes
        it literally (bash 5.2 expands such a subscript once: key='$(cmd)'; ((a[$key]++))
        counts the key ``$(cmd)`` and runs nothing)."""
        parts = word.parts
        if not any(type(p) is N.Lit and "[" in p.text for p in parts):
            return self.expand_dq(word)
        out: list[str] = []
        depth = 0
        for p in parts:
            if type(p) is N.Lit:
                t = p.text
                out.append(t)
                if "[" in t or "]" in t:
                    depth = max(0, depth + t.count("[") - t.count("]"))
                continue
            fb = _Fields("")
            try:
                self._parts_into((p,), fb, True)
            except ExpansionError as e:
                _name_word(e, word.text)
                raise
            v = " ".join(_field_text(f[0]) for f in fb.finish())
            if depth and type(p) not in (N.SQ, N.Escaped, N.ANSIC) and not _ARITH_SUB_PLAIN.isdisjoint(v):
                from .quoting import quote_single
                v = quote_single(v)
            out.append(v)
        return "".join(out)

    def expand_pattern(self: Interpreter, word: N.Word, tilde: bool = True) -> str:
        """Expand to a pattern string: quoted characters backslash-escaped, unquoted kept special."""
        parts = word.parts
        if len(parts) == 1 and type(parts[0]) is N.Lit and not (tilde and parts[0].text.startswith("~")):
            return parts[0].text
        fb = _Fields("")
        try:
            self._parts_into(parts, fb, False, nosplit=True, tilde_mode=1 if tilde else 0)
        except ExpansionError as e:
            _name_word(e, word.text)
            raise
        out = []
        for i, (chunks, _q) in enumerate(fb.finish()):
            if i:
                out.append(" ")  # "${a[@]}" in a pattern: the fields joined by spaces
            for text, kind in chunks:
                out.append(glob_escape(text) if kind == _QUOTED else text)
        return "".join(out)

    def pattern_trace(self: Interpreter, word: N.Word) -> str:
        """A [[ pattern as set -x shows it: every quoted character backslash-escaped."""
        fb = _Fields("")
        self._parts_into(word.parts, fb, False, nosplit=True, tilde_mode=1)
        out = []
        for i, (chunks, _q) in enumerate(fb.finish()):
            if i:
                out.append(" ")
            for text, kind in chunks:
                out.append("".join("\\" + c for c in text) if kind == _QUOTED else text)
        return "".join(out)

    def expand_regex(self: Interpreter, word: N.Word) -> str:
        """Right side of ``=~``: quoted parts match literally."""
        fb = _Fields("")
        # bash tilde-expands the regex word too ([[ $HOME =~ ~ ]])
        self._parts_into(word.parts, fb, False, nosplit=True, tilde_mode=1)
        out = []
        # Quoted text is escaped, except inside a bracket expression, where a backslash
        # is literal in an ERE (bash: [[ - =~ ["a-z"] ]] is the range a-z, not 3 chars).
        br = 0  # 0 outside a bracket, 1 just after '[' or '[^', 2 inside
        for i, (chunks, _q) in enumerate(fb.finish()):
            if i:
                out.append(" ")
            for text, kind in chunks:
                if kind == _QUOTED:
                    if br:
                        out.append(text)
                        br = 2
                    else:
                        out.append(re.escape(text))
                    continue
                j = 0
                n = len(text)
                while j < n:
                    c = text[j]
                    if br == 0:
                        if c == "\\":
                            j += 2
                            continue
                        if c == "[":
                            br = 1
                            if j + 1 < n and text[j + 1] == "^":
                                j += 1
                    elif c == "[" and j + 1 < n and text[j + 1] in ":.=":
                        close = text.find(text[j + 1] + "]", j + 2)
                        j = close + 2 if close >= 0 else n
                        br = 2
                        continue
                    elif c == "]" and br == 2:
                        br = 0
                    else:
                        br = 2
                    j += 1
                out.append(text)
        return "".join(out)

    # ------------------------------------------------------------------ internals
    def _has_brace(self, w: N.Word) -> bool:
        for p in w.parts:
            if type(p) is N.Lit and "{" in p.text:
                return True
        return False

    def _braces(self, w: N.Word) -> list[N.Word]:
        try:
            from .braces import expand_braces
        except ImportError:  # pragma: no cover - helper module missing
            return [w]
        try:
            return expand_braces(w, plain=_NEEDS_WORK)
        except ValueError as e:  # BraceExpansionTooLarge: bash would run out of memory
            if type(e).__name__ == "UnclosedBackquote":
                raise self.reported_error(str(e)) from None
            raise ExpansionError(str(e), 1) from None

    def _expand_full(self: Interpreter, w: N.Word, assign_tilde: bool = True) -> list[str]:
        fb = _Fields(self.get_ifs())
        p0 = w.parts[0] if w.parts else None
        if assign_tilde and type(p0) is N.Lit and "~" in p0.text and "=" in p0.text:
            m = _ASSIGN_WORD.match(p0.text)
            if m:
                # bash expands ~ after the = (and :) of an assignment-looking word
                t = m.group(0) + self._tilde_assign(p0.text[m.end():], True)
                if t != p0.text:
                    fb.lit(m.group(0))
                    fb.q(t[m.end():])
                    self._parts_into(w.parts[1:], fb, False)
                    return self._glob_fields(fb)
        self._parts_into(w.parts, fb, False, tilde_mode=1)
        return self._glob_fields(fb)

    def _split_glob_into(self: Interpreter, v: str, out: list[str]) -> None:
        """Split and glob ``v``, the whole of an unquoted word (``$x``, ``$(cmd)``), onto ``out``."""
        iv = self.state.find("IFS")
        ifs = None if iv is None else iv.value
        if ifs is not None and ifs != " \t\n" and (ifs := self.get_ifs()) is not None and ifs != " \t\n":
            fb = _Fields(ifs)
            fb.split(v)
            out.extend(self._glob_fields(fb))
            return
        if not _split_or_glob(v):
            out.append(v)
            return
        fields = _DEFAULT_WS.split(v) if len(v) < 4096 else _ws_split_long(v, " \t\n")
        if not fields[0]:
            del fields[0]
        if fields and not fields[-1]:
            fields.pop()
        if self.state.options["noglob"] or not _has_glob(v):
            out.extend(fields)
            return
        glob = self.glob
        for f in fields:
            if _has_glob(f):
                res = glob(f)
                if res is not None:
                    out.extend(res)
                    continue
            out.append(f)

    def _glob_fields(self: Interpreter, fb: _Fields) -> list[str]:
        fields = fb.finish()
        out: list[str] = []
        noglob = self.state.options["noglob"]
        for chunks, _q in fields:
            if not noglob:
                magic = False
                for text, kind in chunks:
                    if kind != _QUOTED and _has_glob(text):
                        magic = True
                        break
                if magic:
                    pat = "".join(glob_escape(t) if k == _QUOTED else t for t, k in chunks)
                    res = self.glob(pat)
                    if res is not None:
                        out.extend(res)
                        continue
            out.append(_field_text(chunks))
        return out

    def _tilde(self: Interpreter, text: str, assign: bool) -> str:
        """Tilde-expand a leading unquoted ``~...`` (and after ``:``/``=`` in assignments)."""
        if assign:
            segs = text.split(":")
            return ":".join(self._tilde_one(s) for s in segs)
        return self._tilde_one(text)

    def _tilde_one(self: Interpreter, s: str) -> str:
        if not s.startswith("~"):
            return s
        # the tilde prefix ends at the first '/' or ':' (bash's tilde suffixes), in any word
        slash = s.find("/")
        colon = s.find(":")
        if colon >= 0 and (slash < 0 or colon < slash):
            slash = colon
        user = s[1:] if slash < 0 else s[1:slash]
        rest = "" if slash < 0 else s[slash:]
        if user == "":
            home = self.get_scalar("HOME")
            if home is None:
                home = self.info.home
            return home + rest
        if user == "+":
            return (self.get_scalar("PWD") or self.state.cwd) + rest
        if user == "-":
            old = self.get_scalar("OLDPWD")
            return s if old is None else old + rest
        if user == self.info.user:
            return self.info.home + rest
        if user == "root":
            return "/root" + rest
        if user[-1:].isdigit() and (user.isdigit() or user[0] in "+-" and user[1:].isdigit()):
            # ~N, ~+N, ~-N: an entry of the directory stack (`dirs +N`/`dirs -N`)
            items = [self.state.cwd] + self.state.dirstack
            k = int(user.lstrip("+-"))
            if user[0] == "-":
                k = len(items) - 1 - k
            return items[k] + rest if 0 <= k < len(items) else s
        home = _passwd_home(self.fs, user)
        return s if home is None else home + rest

    def _parts_into(self: Interpreter, parts: tuple[N.Part, ...], fb: _Fields, quoted: bool,
                    tilde_mode: int = 0, nosplit: bool = False) -> None:
        """Append the expansion of ``parts`` to ``fb``. ``quoted``: inside double quotes.

        tilde_mode: 0 none, 1 leading ``~`` of the word, 2 assignment (also after ``:``/``=``).
        """
        first = True
        for p in parts:
            tp = type(p)
            if tp is N.Lit:
                t = p.text
                if quoted:
                    fb.q(t)
                else:
                    if tilde_mode and "~" in t:
                        if tilde_mode == 2:
                            t = self._tilde_assign(t, first)
                        elif first:
                            t = self._tilde_one(t) if t.startswith("~") else t
                        if t != p.text:
                            # the tilde result is not subject to splitting or globbing
                            fb.q(t)
                            first = False
                            continue
                    fb.lit(t)
            elif tp is N.SQ or tp is N.ANSIC or tp is N.Escaped:
                if quoted and tp is N.SQ:
                    # single quotes inside a double-quoted context are literal characters
                    fb.q("'" + p.text + "'")
                else:
                    fb.q(p.text)
            elif tp is N.DQ:
                try:
                    self._dq_into(p, fb)
                except ExpansionError as e:
                    if getattr(e, "name_word", False) is True:
                        if _UNCLOSED_SUBSCRIPT.match(e.message):
                            # bash's quoted-string scan skips the subscript looking for `]' and
                            # runs off the end: named by the whole word, quotes and all
                            e.name_word = "brace"  # type: ignore[attr-defined]
                        else:
                            from .unparse import format_word
                            _name_word(e, format_word(N.Word(p.parts)))
                    raise
            elif tp is N.Param:
                self._param_into(p, fb, quoted, nosplit)
            elif tp is N.CmdSub:
                out = self.command_subst(p.body)
                if quoted:
                    fb.q(out)
                elif nosplit:
                    fb.unsplit(out)
                else:
                    fb.split(out)
            elif tp is N.ArithSub:
                v = str(self.arith_sub(p.expr))
                if quoted:
                    fb.q(v)
                elif nosplit:
                    fb.unsplit(v)
                else:
                    fb.split(v)
            elif tp is N.ProcSub:
                path = self.process_subst(p)
                fb.q(path) if quoted else fb.lit(path)
            else:  # pragma: no cover
                raise ExpansionError(f"unknown word part {tp.__name__}")
            first = False

    def _tilde_assign(self: Interpreter, t: str, first: bool) -> str:
        # in assignments ~ expands at the start and after every unquoted ':' (and the first '=')
        segs = t.split(":")
        out = []
        for i, s in enumerate(segs):
            if (i > 0 or first) and s.startswith("~"):
                out.append(self._tilde_one(s))
            else:
                out.append(s)
        return ":".join(out)

    def _dq_into(self: Interpreter, p: N.DQ, fb: _Fields) -> None:
        parts = p.parts
        if not parts:
            fb.q("")
            return
        any_real = False
        empty_at = False
        q0, nf, nc = fb.quoted, len(fb.fields), len(fb.cur)
        for sp in parts:
            tsp = type(sp)
            if tsp is N.Param:
                r = self._param_into(sp, fb, True, False)
                if r is not False:
                    any_real = True
                else:
                    empty_at = True
            elif tsp is N.Lit:
                fb.q(sp.text)
                any_real = True
            elif tsp is N.CmdSub:
                fb.q(self.command_subst(sp.body))
                any_real = True
            elif tsp is N.ArithSub:
                fb.q(str(self.arith_sub(sp.expr)))
                any_real = True
            elif tsp is N.SQ or tsp is N.ANSIC or tsp is N.Escaped:
                fb.q(sp.text)
                any_real = True
            elif tsp is N.DQ:
                self._dq_into(sp, fb)
                any_real = True
            else:
                self._parts_into((sp,), fb, True)
                any_real = True
        if empty_at and len(fb.fields) == nf and len(fb.cur) == nc:
            # bash: a quoted segment holding a "$@" with no words that expands to nothing
            # else either ("$empty$@") leaves no null word behind
            fb.quoted = q0
        elif any_real:
            fb.quoted = True

    # ------------------------------------------------------------------ parameters
    def _param_into(self: Interpreter, p: N.Param, fb: _Fields, quoted: bool, nosplit: bool) -> bool | None:
        """Expand one parameter into ``fb``. Returns False when it was an empty ``"$@"``-like list."""
        val = self.param_value(p, quoted, fb)
        if val is None:
            return None
        if type(val) is str:
            if quoted:
                fb.q(val)
            elif nosplit:
                fb.unsplit(val)
            else:
                fb.split(val)
            return None
        # a list: "$@"-like (separate words)
        vals: list[str] = val  # type: ignore[assignment]
        if quoted:
            if not vals:
                return False
            fb.q(vals[0])
            for v in vals[1:]:
                fb.brk(True)
                fb.q(v)
            return None
        if nosplit:
            # x=${a[*]}: joined with IFS's first character, like "${a[*]}"; x=${a[@]}: spaces
            sep = " "
            if _star_param(p):
                ifs = self.get_ifs()
                sep = " " if ifs is None else ifs[:1]
                if not sep and fb.assign == 2 and (p.index is None) != (p.prefix == "!"):
                    # a declaration builtin's `v=$*` under a null IFS joins with spaces (bash)
                    sep = " "
            fb.unsplit(sep.join(vals))
            return None
        if p.prefix == "!" and vals and (p.op == "*" or p.index is not None) and _star_param(p) \
                and self.get_ifs() == "":
            # bash joins unquoted ${!prefix*} (with IFS's first character) and ${!a[*]} (with a
            # space) before splitting, so a null IFS leaves one word
            fb.split(("" if p.index is None else " ").join(vals))
            return None
        ifs = fb.ifs
        if ifs and ifs[0] in fb.ifs_nws and len(vals) > 1:
            # bash joins the words with IFS's first character and splits again: with a
            # non-blank separator an empty word still makes a field (IFS=x; set -- a '' b)
            fb.split(ifs[0].join(vals))
            return None
        for i, v in enumerate(vals):
            if i:
                fb.brk()
            fb.split(v)
        return None

    def _positional_all(self: Interpreter) -> list[str]:
        return self.state.positional

    def _err_name(self, p: N.Param) -> str:
        if p.index is not None:
            return f"{p.name}[{p.index.text or self._word_src(p.index)}]"
        return p.name

    @staticmethod
    def _word_src(w: N.Word) -> str:
        out = []
        for part in w.parts:
            if isinstance(part, (N.Lit, N.SQ, N.Escaped, N.ANSIC)):
                out.append(part.text)
        return "".join(out)

    def _base_values(self: Interpreter, p: N.Param) -> tuple[Any, bool, bool]:
        """(value, multi, star): value is str, list[str] (multi) or None (unset)."""
        name = p.name
        idx = p.index
        if idx is None:
            if name == "@" or name == "*":
                return list(self.state.positional), True, name == "*"
            v = self.special_or_var(name)
            if v is None:
                ref = self.state.find(name)
                if ref is not None and ref.attrs & NAMEREF:
                    t = ref.value
                    if type(t) is str and t.endswith(("[@]", "[*]")):
                        # a reference to a[@] expands like "${a[@]}" as $ref, while ${ref}
                        # (and a[*]) joins the elements into one word (bash)
                        base, _, sub = t[:-1].partition("[")
                        vals = self._base_values(N.Param(base, N.Word((N.Lit(sub),), sub)))[0]
                        if vals or p.short:
                            return vals, True, sub == "*" or not p.short
            return v, False, False
        # subscripted
        if not idx.parts and not idx.text:
            # ${a[]}: an empty subscript written as such is a bad substitution (bash), where
            # one that expands to nothing (${a[$empty]}) is a bad array subscript
            rest = (p.op + self._word_src(p.arg)) if p.op and p.arg is not None else p.op
            raise self.reported_error(f"${{{p.prefix}{name}[]{rest}}}: bad substitution")
        star_all = None
        if len(idx.parts) == 1 and type(idx.parts[0]) is N.Lit and idx.parts[0].text in ("@", "*"):
            star_all = idx.parts[0].text
        rname = self.state.resolve_ref(name) if _NAME_RE.match(name) else name
        var = self.lookup_var(rname)
        if star_all is not None:
            if var is None or var.value is None:
                return [], True, star_all == "*"
            val = var.value
            if type(val) is dict:
                if var.attrs & ASSOC:
                    return [val[k] for k in assoc_keys(val)], True, star_all == "*"
                return [val[k] for k in sorted(val)], True, star_all == "*"
            return [val], True, star_all == "*"
        if var is None or var.value is None:
            # still evaluate the subscript for side effects/errors
            if var is None or not (var.attrs & ASSOC):
                if self.eval_index(idx, rname, None) < 0:
                    # bash: a negative index into an unset array is reported (and is empty)
                    self.error(f"{rname}: bad array subscript")
            elif not self.assoc_key(idx):
                self.error(f"{rname}: bad array subscript")
            return None, False, False
        return self.get_element(rname, var, idx), False, False

    def param_value(self: Interpreter, p: N.Param, quoted: bool, fb: _Fields | None = None) -> Any:
        """The value of a parameter expansion: str, list[str] ("$@"-like) or None (nothing)."""
        prefix = p.prefix
        op = p.op
        name = p.name
        if not op and not prefix and p.index is None:
            # $name of an ordinary variable holding a string: special_or_var's answer, directly
            plain = _PLAIN_NAME.get(name)
            if plain is None:
                plain = _plain_name(name)
            if plain < 0:
                var = self.state.find(name)
                if var is not None and not var.attrs & NAMEREF:
                    val = var.value
                    if type(val) is str:
                        return val
            elif plain:
                pos = self.state.positional
                if plain <= len(pos):
                    return pos[plain - 1]
        if self.dash and (prefix == "!" or p.index is not None or op in _DASH_BAD_OPS):
            # `sh` is dash here: it has no substrings, replacements, case changes,
            # transformations, arrays or indirection (fatal, status 2)
            raise ExpansionError("Bad substitution", 127)
        if op == "bad":
            if name.startswith("${#@"):
                # bash -c exits 127 after ${#@:1}, ${#@-x} (as after ${x@Z})
                raise _word_named(ExpansionError(f"{name}: bad substitution", 127))
            raise _word_named(self.reported_error(f"{name}: bad substitution"))
        if prefix == "!":
            if name in ("$", "!") and p.index is None:
                # bash refuses indirection through $$ and $! (${!$}, ${!!:-x})
                src = "${!" + name + p.op + (self._word_src(p.arg) if p.arg is not None else "")
                if p.arg2 is not None:
                    src += (":" if p.op == ":" else "/") + self._word_src(p.arg2)
                raise _word_named(ExpansionError(f"{src}}}: bad substitution", 1))
            # ${!a[@]} lists keys; with an operator after it (${!a[@]:-x}) it is indirection
            if not op and p.index is not None and len(p.index.parts) == 1 and type(p.index.parts[0]) is N.Lit \
                    and p.index.parts[0].text in ("@", "*"):
                var = self.lookup_var(self.state.resolve_ref(name))
                keys: list[str] = []
                if var is not None and var.value is not None:
                    if type(var.value) is dict:
                        keys = [str(k) for k in (assoc_keys(var.value) if var.attrs & ASSOC else sorted(var.value))]
                    else:
                        keys = ["0"]
                star = p.index.parts[0].text == "*"
                return self._finish_multi(keys, star, quoted)
            if op in ("*", "@") and p.arg is None:
                names = [n for n in self.set_names() if n.startswith(name)]
                return self._finish_multi(names, op == "*", quoted)
            # indirection (bash's parameter_brace_expand_indir)
            idx_src = f"[{self._word_src(p.index)}]" if p.index is not None else ""
            if p.index is None and _NAME_RE.match(name):
                var = self.state.find(name)
                hops = 0
                while var is not None and var.attrs & NAMEREF and hops < 10 and type(var.value) is str:
                    nxt = self.state.find(var.value) if _NAME_RE.match(var.value) else None
                    if nxt is None or not nxt.attrs & NAMEREF:
                        break
                    var = nxt
                    hops += 1
                if var is not None and var.attrs & NAMEREF:
                    # ${!ref}: the name a nameref points to, the operator applied to that name
                    if not var.value:
                        raise ExpansionError(f"{name}: invalid indirect expansion", 1)
                    return self._apply_op(p, var.value, False, False, quoted, fb, name) if op else var.value
                if var is None and self.lookup_var(name) is None:
                    raise ExpansionError(f"{name}: invalid indirect expansion", 1)
            target = self._base_values(N.Param(name, p.index))[0]
            if (target is None or target == []) and p.index is not None:
                if self.lookup_var(self.state.resolve_ref(name)) is None:
                    raise ExpansionError(f"{name}{idx_src}: invalid indirect expansion", 1)
            shown = "!" + name + idx_src
            if type(target) is list:
                # ${!a[@]-x}: the words of a[@], joined, name the target
                target = " ".join(target) if target else None
            if target is None:
                if not op:
                    if self.state.options["nounset"]:
                        raise ExpansionError(f"{shown}: unbound variable", 127)
                    return None if not quoted else ""
                return self._indirect_op(p, None, quoted, fb, shown, shown)
            tn = target
            if not _INDIRECT_OK.match(tn):
                raise ExpansionError(f"{tn}: invalid variable name", 1)
            try:
                from .parser import parse_word
                ref = parse_word("${" + tn + "}")
                rp = ref.parts[0]
                if type(rp) is not N.Param:
                    raise ValueError
            except Exception:
                raise ExpansionError(f"{tn}: invalid variable name", 1) from None
            np = N.Param(rp.name, rp.index, "", op, p.arg, p.arg2)
            return self._indirect_op(np, np, quoted, fb, shown, rp.name)
        if prefix == "#":
            if op:
                idx = f"[{self._word_src(p.index)}]" if p.index is not None else ""
                src = "${#" + name + idx + op + (self._word_src(p.arg) if p.arg is not None else "")
                if p.arg2 is not None:
                    src += (":" if op == ":" else "/") + self._word_src(p.arg2)
                if name == "@" and p.index is None:
                    # bash -c exits 127 after ${#@:1}, ${#@-x} (as after ${x@Z})
                    raise _word_named(ExpansionError(f"{src}}}: bad substitution", 127))
                raise _word_named(self.reported_error(f"{src}}}: bad substitution"))
            idx = p.index
            if idx is not None and len(idx.parts) == 1 and type(idx.parts[0]) is N.Lit \
                    and idx.parts[0].text in ("@", "*"):
                # ${#a[@]}: the element count, without listing the elements (O(1), not O(n))
                var = self.lookup_var(self.state.resolve_ref(name) if _NAME_RE.match(name) else name)
                if var is not None and type(var.value) is dict and var.value:
                    return str(len(var.value))
            val, multi, _star = self._base_values(p)
            if multi:
                if not val and p.index is not None and self.state.options["nounset"]:
                    var = self.lookup_var(self.state.resolve_ref(name))
                    if var is None or var.value is None:
                        raise ExpansionError(f"{name}: unbound variable", 1)
                return str(len(val))
            if val is None:
                if self.state.options["nounset"] and name not in ("@", "*"):
                    if p.index is not None:
                        # ${#a[i]}: an unset element of a set array is length 0; an unset
                        # array is named without the subscript (bash, status 1)
                        var = self.lookup_var(self.state.resolve_ref(name))
                        if var is not None and type(var.value) is dict:
                            return "0"
                        raise ExpansionError(f"{name}: unbound variable", 1)
                    raise ExpansionError(f"{self._unbound_name(p)}: unbound variable", 127)
                return "0"
            if not val.isascii() and self.byte_locale():
                return str(len(val.encode("utf-8", "surrogateescape")))
            return str(len(val))
        val, multi, star = self._base_values(p)
        if op:
            return self._apply_op(p, val, multi, star, quoted, fb, name)
        if val is None:
            if self.state.options["nounset"]:
                raise ExpansionError(f"{self._unbound_name(p)}: unbound variable", 127)
            return None if not quoted else ""
        if multi:
            return self._finish_multi(val, star, quoted)
        return val

    def _indirect_op(self: Interpreter, p: N.Param, target: N.Param | None, quoted: bool,
                     fb: _Fields | None, shown: str, name: str) -> Any:
        """The operator of ``${!name...}`` applied to the target (``target`` None: unset);
        bash names the expansion ``!name`` in unbound and ``${!x:?}`` messages."""
        try:
            if target is None:
                return self._apply_op(p, None, False, False, quoted, fb, name)
            return self.param_value(target, quoted, fb)
        except ExpansionError as e:
            if e.status == 127:
                head, sep, rest = e.message.partition(": ")
                if sep and head in (name, "$" + name, self._unbound_name(p)):
                    e.message = f"{shown}: {rest}"
                    e.args = (e.message,)
            elif e.message.startswith(f"${name}: cannot assign in this way"):
                e.message = f"{name}: invalid variable name"
                e.args = (e.message,)
            raise

    def _unbound_name(self, p: N.Param) -> str:
        if p.name.isdigit() and p.index is None:
            return "$" + p.name if p.short else p.name  # `$1` vs `${1}`
        if p.index is not None:
            return f"{p.name}[{self._word_src(p.index)}]"
        return p.name

    def _finish_multi(self: Interpreter, vals: list[str], star: bool, quoted: bool) -> Any:
        if star and quoted:
            ifs = self.get_ifs()
            sep = " " if ifs is None else ifs[:1]
            return sep.join(vals)
        return vals

    def _apply_op(self: Interpreter, p: N.Param, val: Any, multi: bool, star: bool, quoted: bool,
                  fb: _Fields | None, name: str) -> Any:
        op = p.op
        if op in ("-", ":-", "=", ":=", "?", ":?", "+", ":+"):
            if multi:
                unset = len(val) == 0
                if star and quoted and op[0] == ":":
                    # "${*:-w}" tests "$*" as joined: null when IFS is empty and each one is
                    null = unset or self._finish_multi(val, True, True) == ""
                else:
                    null = unset or (op[0] == ":" and "".join(val) == "" and len(val) <= 1)
            else:
                unset = val is None
                null = unset or (op[0] == ":" and val == "")
            is_null = null if op[0] == ":" else unset
            base = op.lstrip(":")
            if base == "+":
                if is_null:
                    return None if not quoted else ""
                return self._op_word(p.arg, quoted, fb)
            if not is_null:
                if multi:
                    return self._finish_multi(val, star, quoted)
                return val
            if base == "-":
                return self._op_word(p.arg, quoted, fb)
            if base == "=":
                if name in ("@", "*") or name.isdigit() or not _NAME_RE.match(name):
                    raise ExpansionError(f"${name}: cannot assign in this way", 1)
                if p.index is not None and self._word_src(p.index) in ("@", "*"):
                    v = self.state.find(self.state.resolve_ref(name))
                    if v is None or not v.attrs & ASSOC:
                        raise ExpansionError(f"{name}[{self._word_src(p.index)}]: bad array subscript", 1)
                s = self.expand_str(p.arg, assign=True) if p.arg is not None else ""
                try:
                    if p.index is not None:
                        self.assign_element(name, p.index, s)
                    else:
                        self.set_var(name, s)
                except VarError as e:
                    # a readonly name or a bad subscript (${A[-1]:=x}, A unset): bash's
                    # message, and the command line ends as after any fatal expansion error
                    raise ExpansionError(e.message, 1) from None
                return self.get_scalar(name) if p.index is None else s
            # ? / :?
            if p.arg is not None and p.arg.parts:
                msg = self.expand_str(p.arg)
            else:
                msg = "parameter null or not set" if op == ":?" else "parameter not set"
            raise ExpansionError(f"{self._unbound_name(p) if name.isdigit() or p.index is not None else name}: {msg}",
                                 127)
        if val is None:
            if op == ":" and p.arg2 is None and p.arg is not None and not p.arg.parts:
                return self._substring(p, val, multi)  # ${x:} is a bad substitution, set or not
            if self.state.options["nounset"]:
                raise ExpansionError(f"{self._unbound_name(p)}: unbound variable", 127)
            if op == "@" and p.arg is not None and self._word_src(p.arg) in ("a",):
                pass
            else:
                if op == "@" and p.arg is not None and self._word_src(p.arg) == "A" and _NAME_RE.match(p.name):
                    # a declared variable with attributes but no value: `declare -A h`
                    var = self.lookup_var(self.state.resolve_ref(p.name))
                    flags = self.attr_letters(var) if var is not None else ""
                    if flags:
                        return f"declare -{flags} {p.name}"
                return None if not quoted else ""
        vals = val if multi else [val]
        if op in ("#", "##", "%", "%%"):
            pat = self.expand_pattern(p.arg) if p.arg is not None else ""
            vals = [self.pat_strip(v, pat, op) for v in vals]
        elif op in ("/", "//", "/#", "/%"):
            # (bash tilde-expands the pattern of / and // only: after # or % a ~ is not first)
            pat = self.expand_pattern(p.arg, tilde=op in ("/", "//")) if p.arg is not None else ""
            repl = self._repl_word(p.arg2)
            vals = [self.pat_replace(v, pat, repl, op) for v in vals]
        elif op == ":":
            vals = self._substring(p, val, multi)
            if not multi or type(vals) is str:
                return vals
        elif op in ("^", "^^", ",", ",,", "~", "~~"):
            pat = self.expand_pattern(p.arg) if p.arg is not None else ""
            vals = [self.case_mod(v, op, pat) for v in vals]
        elif op == "@":
            letter = self._word_src(p.arg) if p.arg is not None else ""
            vals = self._transform(p, vals, multi, letter)
            if vals is None:
                return None if not quoted else ""
            if letter in ("A", "K", "k", "a") and type(vals) is str:
                return vals
        else:
            raise self.reported_error(f"${{{self._src_of(p)}}}: bad substitution")
        if multi:
            return self._finish_multi(vals, star, quoted)
        return vals[0]

    def _src_of(self, p: N.Param) -> str:
        return p.name

    def _op_word(self: Interpreter, w: N.Word | None, quoted: bool, fb: _Fields | None) -> Any:
        if w is None:
            return "" if quoted else None
        if fb is None:
            return self.expand_str(w)
        try:
            # The operand expands in the surrounding word: quoted parts stay quoted, unquoted
            # text is split and globbed like any expansion result when the ${} is unquoted.
            if quoted:
                self._parts_into(w.parts, fb, True)
                return None
            first = True
            for part in w.parts:
                if type(part) is N.Lit:
                    t = part.text
                    if "~" in t:
                        t = self._tilde_assign(t, first) if fb.assign else (self._tilde_one(t) if first else t)
                    fb.split(t)
                else:
                    self._parts_into((part,), fb, False)
                first = False
        except ExpansionError as e:
            if getattr(e, "name_word", False) is True:
                _name_word(e, w.text)  # (bash expands the operand as a string of its own)
            raise
        return None

    def _repl_word(self: Interpreter, w: N.Word | None) -> tuple[str, bool]:
        """Replacement of ``${x/p/r}``: (text with & markers, has_amp)."""
        if w is None:
            return ("", False)
        # (a leading ~ of the replacement is tilde-expanded, even inside double quotes)
        if not self.state.shopt.get("patsub_replacement", True):
            return (self.expand_str(w, tilde=True), False)
        fb = _Fields("")
        self._parts_into(w.parts, fb, False, nosplit=True, tilde_mode=1)
        out = []
        amp = False
        for chunks, _q in fb.finish():
            for text, kind in chunks:
                if kind == _QUOTED:
                    out.append(text.replace("\\", "\\\\").replace("&", "\\&"))
                else:
                    if "&" in text:
                        amp = True
                    out.append(text)
        return ("".join(out), amp)

    def _substring(self: Interpreter, p: N.Param, val: Any, multi: bool) -> Any:
        try:
            if p.arg2 is None and p.arg is not None and not p.arg.parts:
                raise ExpansionError("", 1)  # ${x:} (an empty offset, and no length)
            off = self.arith_word(p.arg) if p.arg is not None else 0
            length = None
            if p.arg2 is not None:
                length = self.arith_word(p.arg2)
        except ExpansionError as e:
            # bash names the parameter in front of an offset/length error
            nm = p.name if p.index is None else f"{p.name}[{p.index.text}]"  # as written
            if not e.message:
                e.message = f"${{{nm}:}}: bad substitution"
            elif getattr(e, "arith", False):
                e.message = f"{nm}: {e.message}"
            raise
        if multi:
            vals = val
            if not vals:
                return []
            if p.name in ("@", "*") and p.index is None:
                vals = [self.state.arg0] + vals
                if off < 0:
                    off = len(vals) + off
                    if off < 1 and p.name:
                        off = max(off, 0) if off >= 0 else None  # type: ignore[assignment]
                    if off is None:
                        return []
            else:
                var = self.lookup_var(self.state.resolve_ref(p.name)) if p.name and not p.prefix else None
                d = var.value if var is not None else None
                if type(d) is str and p.index is not None:
                    # bash slices a scalar's ${v[@]:off} as the string $v, not as a
                    # one-element array (get_var_and_type: VT_VARIABLE)
                    if not 0 <= (off if off >= 0 else len(d) + off) <= len(d) and not _star_param(p):
                        return []  # past the end "${v[@]:9}" is no word at all
                    return self._slice(p, d, off, length)
                if type(d) is dict and d and not var.attrs & ASSOC and len(d) != max(d) + 1:
                    # a sparse indexed array: the offset is an index, not a position
                    keys = sorted(d)
                    start = off if off >= 0 else keys[-1] + 1 + off
                    if start < 0:
                        return []
                    vals = [d[k] for k in keys if k >= start]
                    off = 0
                elif type(d) is dict and var.attrs & ASSOC:
                    # bash counts an associative array's offsets from 1 (0 means 1 too); a
                    # negative one counts back from len + 1
                    if off < 0:
                        off = len(vals) + off + 1
                        if off < 0:
                            return []
                    off = max(off - 1, 0)
                elif off < 0:
                    off = len(vals) + off
                    if off < 0:
                        return []
            if length is not None:
                if length < 0:
                    raise _substring_error(p, length)
                return vals[off:off + length]
            return vals[off:]
        s = val
        if not s.isascii() and self.byte_locale():
            from .interpreter import byte_view, char_view
            return char_view(self._slice(p, byte_view(s), off, length))
        return self._slice(p, s, off, length)

    def _slice(self, p: N.Param, s: str, off: int, length: int | None) -> str:
        n = len(s)
        if off < 0:
            off = n + off
            if off < 0:
                return ""
        if off > n:
            return ""
        if length is None:
            return s[off:]
        if length < 0:
            end = n + length
            if end < off:
                raise _substring_error(p, length)
            return s[off:end]
        return s[off:off + length]

    def _transform(self: Interpreter, p: N.Param, vals: list[str], multi: bool, letter: str,
                   viewed: bool = False) -> Any:
        from . import builtins_compat as quoting
        if letter in "QAKULu" and not viewed and not all(v.isascii() for v in vals) and self.byte_locale():
            # the C locale: non-ASCII bytes are unprintable and have no case
            from .interpreter import byte_view, char_view
            r = self._transform(p, [byte_view(v) for v in vals], multi, letter, True)
            return [char_view(x) for x in r] if letter in "ULu" else r
        if letter == "Q":
            return [quoting.quote_single(v) for v in vals]
        if letter == "E":
            from .printf import echo_escapes
            return [echo_escapes(v)[0].decode("utf-8", "surrogateescape") for v in vals]
        if letter == "P":
            return [self.prompt_expand(v) for v in vals]
        if letter == "U":
            return [_upper(v) for v in vals]
        if letter == "L":
            return [_lower(v) for v in vals]
        if letter == "u":
            return [_upper(v[:1]) + v[1:] for v in vals]
        if letter == "a":
            if p.prefix == "!" and p.index is None:
                return [""]  # an indirection that named nothing (`${!A@a}`, A[0] unset)
            var = self.lookup_var(self.state.resolve_ref(p.name)) if _NAME_RE.match(p.name) else None
            flags = self.attr_letters(var) if var is not None else ""
            return [flags for _ in vals] if multi else [flags]
        if letter in ("A", "K", "k"):
            var = self.lookup_var(p.name) if _NAME_RE.match(p.name) else None
            if letter == "A":
                if var is None:
                    return None
                if p.index is None or not multi:
                    if type(var.value) is dict and p.index is None:
                        return f"declare -{self.attr_letters(var) or '-'} {p.name}={quoting.quote_single(vals[0])}"
                    flags = self.attr_letters(var)
                    if flags:
                        return f"declare -{flags} {p.name}={quoting.quote_single(vals[0])}"
                    return f"{p.name}={quoting.quote_single(vals[0])}"
                return f"declare -{self.attr_letters(var) or '-'} {p.name}={self.array_literal(var)}"
            if var is not None and type(var.value) is dict and multi:
                items = []
                keys = assoc_keys(var.value) if var.attrs & ASSOC else sorted(var.value)
                if letter == "k":
                    for k in keys:
                        items.append(str(k))
                        items.append(var.value[k])
                    return items
                from .interpreter import _assoc_key
                for k in keys:
                    items.append(_assoc_key(str(k)) if var.attrs & ASSOC else str(k))
                    items.append(quoting.quote_declare(self.qv(var.value[k])))
                # bash writes an associative array's pairs each followed by a space
                return " ".join(items) + (" " if var.attrs & ASSOC and items else "")
            # a scalar (or one element) is quoted as by @Q, for K and k alike
            return [quoting.quote_single(v) for v in vals]
        raise ExpansionError(f"${{{p.name}@{letter}}}: bad substitution", 127)  # bash -c exits 127 here

    @staticmethod
    def attr_letters(var: Var) -> str:
        a = var.attrs
        out = ""
        if a & ARRAY:
            out += "a"
        if a & ASSOC:
            out += "A"
        if a & INTEGER:
            out += "i"
        if a & NAMEREF:
            out += "n"
        if a & READONLY:
            out += "r"
        if a & TRACE:
            out += "t"
        if a & EXPORT:
            out += "x"
        # bash's var_attribute_string puts the case attributes last
        if a & LOWER:
            out += "l"
        if a & UPPER:
            out += "u"
        if a & CAPCASE:
            out += "c"
        return out


def _upper(s: str) -> str:
    """towupper per character: a character whose upper case is longer (ß -> SS) stays."""
    u = s.upper()
    if len(u) == len(s):
        return u
    return "".join(c if len(c.upper()) != 1 else c.upper() for c in s)


def _lower(s: str) -> str:
    """towlower per character: glibc's simple mapping (İ -> i; Python gives i plus a
    combining dot)."""
    lo = s.lower()
    if len(lo) == len(s):
        return lo
    return "".join(c.lower()[0] for c in s)


_UNCLOSED_SUBSCRIPT = _lazy_re(r"\$\{[A-Za-z_][A-Za-z0-9_]*\[[^\]]*\}: bad substitution\Z")


def _word_named(e: ExpansionError) -> ExpansionError:
    """Mark a bad substitution that bash names by the whole text it was expanding."""
    e.name_word = True  # type: ignore[attr-defined]
    return e


def _name_word(e: ExpansionError, text: str) -> None:
    """bash reports ${x!}, ${#x:1} and the like as a bad substitution of the whole word (the
    inside of the double quotes it sits in, the here-document body): `a${x!}b: bad
    substitution`."""
    how = getattr(e, "name_word", False)
    if how and text:
        e.name_word = False  # type: ignore[attr-defined]
        # (a $(( )) whose end a comment hides is named by the word with its quotes)
        e.message = f"bad substitution: no closing `)' in {text}" if how == "arith" else \
            f"bad substitution: no closing `}}' in {text}" if how == "brace" else f"{text}: bad substitution"


def _passwd_home(fs: Any, user: str) -> str | None:
    """``user``'s home directory from the sandbox's /etc/passwd (bash's getpwnam), or None."""
    if not user or ":" in user or fs is None:
        return None
    try:
        with fs.open("/etc/passwd", "rb") as f:
            text = f.read(1 << 20).decode("utf-8", "replace")
    except (OSError, ValueError):
        return None
    for line in text.splitlines():
        parts = line.split(":")
        if len(parts) >= 6 and parts[0] == user:
            return parts[5]
    return None
