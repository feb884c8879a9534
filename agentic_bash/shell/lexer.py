"""Word-level scanning for the bash parser: quotes, expansions, ``$'...'`` decoding, here-doc bodies."""

# The lexer is context dependent (as bash's is): the parser drives it and says which mode a
# word is read in. Everything here works on one source string with an index; nested
# constructs (``$(...)``) recurse into the parser on the same string, so line numbers stay
# physical source lines. Runs of ordinary characters are taken with one regex match, never a
# regex per character. Line continuations: bash drops ``\<newline>`` before tokenising; we
# step over them between words and at a word's end, and elsewhere (inside a ``$name``, a
# ``${…}`` head, an operator, a keyword) splice them out of the source (``join_lines``), so
# the common text pays nothing and line numbers stay physical.

from __future__ import annotations

from bisect import bisect_left

from .._lazyre import lazy_compile as _lazy_re
from ..errors import ParseError
from .nodes import (
    ANSIC, DQ, SQ, ArithSub, CmdSub, Escaped, HereDoc, Lit, Param, Part, ProcSub, Script,
    Word,
)

__all__ = ["Lexer", "decode_ansic"]

# Unquoted word: stop at blanks, metacharacters, quotes, expansions and backslash.
_PLAIN = _lazy_re(r"[^ \t\n|&;()<>$`'\"\\]+")
# Inside double quotes / here-doc bodies: stop at the few special characters.
_DQ_PLAIN = _lazy_re(r'[^$`"\\]+')
_HD_PLAIN = _lazy_re(r"[^$`\\]+")
_NAME = _lazy_re(r"[A-Za-z_][A-Za-z0-9_]*")
_DIGITS = _lazy_re(r"[0-9]+")
_EXTGLOB_CHARS = frozenset("@*+?!")
_FAST_END = frozenset(" \t\n|&;<>)")
# characters of a ``${…}`` before its operand: prefix, name, operator
_BRACE_HEAD = frozenset("_#!@*?$-:=+%^,~/")
_SPECIAL_PARAMS = frozenset("@*#?-$!0")
_DQ_ESCAPABLE = frozenset('$`"\\\n')
_HD_ESCAPABLE = frozenset("$`\\\n")

_ANSIC_SIMPLE = {
    "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
    "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?",
}
_HEX = frozenset("0123456789abcdefABCDEF")
_OCT = frozenset("01234567")


def _byte_char(value: int) -> str:
    """A byte value as a str character; bytes >= 0x80 use surrogateescape like the rest of the shell."""
    value &= 0xFF
    return chr(value) if value < 0x80 else chr(0xDC00 + value)


def decode_ansic(body: str) -> str:
    """Decode the escapes of a ``$'...'`` body (bash stops the string at a NUL, as C does)."""
    if "\\" not in body:
        return body
    out: list[str] = []
    raw = False  # byte escapes were written: valid UTF-8 sequences among them become characters
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c != "\\" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        e = body[i + 1]
        i += 2
        if e in _ANSIC_SIMPLE:
            out.append(_ANSIC_SIMPLE[e])
        elif e in _OCT:
            j = i
            while j < n and j < i + 2 and body[j] in _OCT:
                j += 1
            value = int(body[i - 1:j], 8)
            i = j
            if value & 0xFF == 0:
                break
            out.append(_byte_char(value))
            raw = True
        elif e == "x":
            j = i
            while j < n and j < i + 2 and body[j] in _HEX:
                j += 1
            if j == i:
                out.append("\\x")
                continue
            value = int(body[i:j], 16)
            i = j
            if value == 0:
                break
            out.append(_byte_char(value))
            raw = True
        elif e in "uU":
            width = 4 if e == "u" else 8
            j = i
            while j < n and j < i + width and body[j] in _HEX:
                j += 1
            if j == i:
                out.append("\\" + e)
                continue
            value = int(body[i:j], 16)
            if value == 0:
                break
            if value > 0x10FFFF or 0xD800 <= value <= 0xDFFF:
                # bash writes surrogates and values past U+10FFFF with the old (up to
                # six byte) UTF-8 scheme, and nothing at all from 0x80000000 on
                out.append(_utf8_extended(value))
                raw = True
            else:
                out.append(chr(value))
            i = j
        elif e == "c":
            if i >= n:
                out.append("\\c")
                break
            ch = body[i]
            i += 1
            if ch == "\\" and i < n and body[i] == "\\":
                i += 1
            value = 0x7F if ch == "?" else ord(ch.upper()) & 0x1F if ord(ch) < 128 else ord(ch) & 0x1F
            if value == 0:
                break
            out.append(chr(value))
        else:
            out.append("\\" + e)
    res = "".join(out)
    if raw:
        # $'\xce\xbc' is the two bytes of U+03BC, which bash then reads as that one character
        res = res.encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape")
    return res


def _utf8_extended(value: int) -> str:
    if value >= 0x80000000:
        return ""
    if value < 0x10000:
        nbytes = 3
    elif value < 0x200000:
        nbytes = 4
    elif value < 0x4000000:
        nbytes = 5
    else:
        nbytes = 6
    tail = [0x80 | ((value >> (6 * k)) & 0x3F) for k in range(nbytes - 1)][::-1]
    lead = ((0xFF << (8 - nbytes)) & 0xFF) | (value >> (6 * (nbytes - 1)))
    return "".join(_byte_char(b) for b in [lead, *tail])



_JOIN_BUDGET = 1_500_000_000
"""Work join_lines may do while parsing one text: characters copied plus 20 per line
number moved (a few seconds at most)."""

class _Buf:
    """Collects parts, merging adjacent literal text."""

    __slots__ = ("parts", "lit")

    def __init__(self) -> None:
        self.parts: list[Part] = []
        self.lit: list[str] = []

    def text(self, s: str) -> None:
        self.lit.append(s)

    def part(self, p: Part) -> None:
        if self.lit:
            self.parts.append(Lit("".join(self.lit)))
            self.lit = []
        self.parts.append(p)

    def done(self) -> tuple[Part, ...]:
        if self.lit:
            self.parts.append(Lit("".join(self.lit)))
            self.lit = []
        return tuple(self.parts)


class Lexer:
    """Scanner state over one source string; the parser subclasses it."""

    max_depth = 200

    def __init__(self, src: str, line_base: int = 0, extglob: bool = True) -> None:
        self.src = src
        self.n = len(src)
        self.pos = 0
        self.line_base = line_base
        self.extglob = extglob
        nl: list[int] = []
        find = src.find
        i = find("\n")
        while i >= 0:
            nl.append(i)
            i = find("\n", i + 1)
        self.nl = nl
        self.has_conts = "\\\n" in src
        # positions (current source) where line continuations were removed, with how many
        # characters: ``set -v`` echoes the text as written
        self.cuts: list[list[int]] = []
        self.join_cost = 0  # work done by join_lines (bounded by _JOIN_BUDGET)
        self.pending: list[tuple[HereDoc, int]] = []
        self.warnings: list[tuple[int, str]] = []
        self.depth = 0

    # ------------------------------------------------------------------ positions, errors

    def line_at(self, pos: int) -> int:
        return bisect_left(self.nl, pos) + 1 + self.line_base

    def eof_line(self) -> int:
        # bash -c reports end-of-file errors on the line after the last one
        nl = self.nl
        n = len(nl) + (0 if nl and nl[-1] == len(self.src) - 1 else 1)
        return n + 1 + self.line_base

    def fail(self, message: str, pos: int, token: str | None = None, incomplete: bool = False) -> ParseError:
        err = ParseError(message, self.line_at(pos), token)
        err.incomplete = incomplete  # type: ignore[attr-defined]
        err.status = 2  # type: ignore[attr-defined]
        return err

    def fail_eof_matching(self, closer: str, open_pos: int) -> ParseError:
        return self.fail(f"unexpected EOF while looking for matching `{closer}'", open_pos, None, True)

    def ends_continued(self, attached: bool) -> bool:
        """The text ends with a line continuation (``attached``: right after a word)."""
        src = self.src
        lone = not src.endswith("\n")
        if not lone:
            src = src[:-1]
        if not src.endswith("\\") or not (len(src) - len(src.rstrip("\\"))) % 2:
            return False
        if lone:
            return True  # `bash -c` text ending in a lone backslash: that is a word
        k = len(src) - 1
        while k >= 2 and src.startswith("\\\n", k - 2):
            k -= 2
        return not attached or (k > 0 and src[k - 1] not in " \t\n|&;<>()")

    def fail_eof(self) -> ParseError:
        # a continuation that ends a word at the end of the text: bash reads one more line
        line = self.eof_line() + self.ends_continued(True)
        err = ParseError("syntax error: unexpected end of file", line, None)
        err.incomplete = True  # type: ignore[attr-defined]
        err.status = 2  # type: ignore[attr-defined]
        return err

    def enter(self) -> None:
        self.depth += 1
        if self.depth > self.max_depth:
            raise self.fail("maximum nesting depth exceeded", self.pos)

    # ------------------------------------------------------------------ hooks for the parser

    def _read_procsub(self, buf: _Buf, c: str, i: int) -> int:
        """A process substitution (``<(…)`` or ``>(…)``, ``c`` at ``i``) read as a word part
        of ``buf``; returns the index after its ``)``."""
        self.pos = i + 2
        self.enter()
        body = self.parse_subscript_script(")", i + 1)
        self.depth -= 1
        buf.part(ProcSub(c, body))
        return self.pos

    def parse_subscript_script(self, closer: str, open_pos: int) -> Script:  # pragma: no cover
        raise NotImplementedError

    def parse_backtick_body(self, text: str, line: int) -> Script:  # pragma: no cover
        raise NotImplementedError

    # ------------------------------------------------------------------ line continuations

    def join_lines(self, i: int) -> str:
        """Remove the line continuations (backslash-newline pairs) starting at ``i`` from the
        source and return the new source.

        bash's input reader drops ``\\<newline>`` before tokenising (except inside single
        quotes, comments and quoted here-documents), so a continuation may fall inside a
        ``$name``, an operator or a keyword. The lexer calls this only where it meets one in
        such a spot (plain words and blanks just step over them); line numbers stay
        physical: the removed newlines still count for everything after them."""
        src = self.src
        j = i
        while src.startswith("\\\n", j):
            j += 2
        k = j - i
        if not k:
            return src
        # each join copies the text: bound the total, or hostile input (thousands of
        # continuations inside words of a large script) would parse in quadratic time
        self.join_cost = cost = self.join_cost + len(src) + 20 * (len(self.nl) - bisect_left(self.nl, i))
        if cost > _JOIN_BUDGET:
            err = self.fail("too many line continuations inside words", i)
            err.hopeless = True  # type: ignore[attr-defined]  # reading it line by line would not help
            raise err
        self.src = src = src[:i] + src[j:]
        self.n = len(src)
        nl = self.nl
        a = bisect_left(nl, i)
        cnt = k // 2
        nl[a:] = [i - 1] * cnt + [p - k for p in nl[a + cnt:]]
        for c in reversed(self.cuts):  # (kept in position order: joins come as the text is read)
            if c[0] <= i:
                break
            c[0] -= k
        self.cuts.append([i, k])
        if len(self.cuts) > 1 and self.cuts[-2][0] > i:
            self.cuts.sort()
        self.shifted(i, k)
        return src

    def shifted(self, i: int, k: int) -> None:
        """Hook: ``k`` characters were removed at ``i`` (the parser moves its saved positions)."""

    def raw_text(self, a: int, b: int) -> str:
        """The source from ``a`` to ``b`` with removed line continuations put back."""
        text = self.src[a:b]
        if self.cuts:
            cuts = sorted(c for c in self.cuts if a <= c[0] <= b)
            if cuts:
                out: list[str] = []
                k = a
                for pos, w in cuts:
                    out.append(self.src[k:pos])
                    out.append("\\\n" * (w // 2))
                    k = pos
                out.append(self.src[k:b])
                text = "".join(out)
        return text

    # ------------------------------------------------------------------ blanks and comments

    def skip_blanks(self) -> None:
        """Skip spaces, tabs, line continuations and a comment (not its newline)."""
        src, n, i = self.src, self.n, self.pos
        while i < n:
            c = src[i]
            if c == " " or c == "\t":
                i += 1
            elif c == "\\" and i + 1 < n and src[i + 1] == "\n":
                i += 2
            elif c == "#":
                j = src.find("\n", i)
                i = n if j < 0 else j
                break
            else:
                break
        self.pos = i

    # ------------------------------------------------------------------ words

    def read_word(self, assign_ok: bool = False, elem: bool = False) -> Word | None:
        """Read one unquoted-context word at ``pos`` (blanks already skipped); None at a metachar.

        ``assign_ok``: ``name[sub]=`` may hold blanks in ``sub``; ``elem``: so may
        ``[key]=value`` (an element of ``a=(…)``)."""
        src, n = self.src, self.n
        start = self.pos
        self.sub_span: tuple[int, int] | None = None
        if elem and start < n and src[start] == "[":
            close = self._scan_subscript(start)
            if close is not None and (
                    (close + 1 < n and src[close + 1] == "=")
                    or (close + 2 < n and src[close + 1] == "+" and src[close + 2] == "=")):
                buf = _Buf()
                buf.text(src[start:close + 1])
                self.pos = close + 1
                rest = self.read_word()
                if rest is not None:
                    for p in rest.parts:
                        if type(p) is Lit:
                            buf.text(p.text)
                        else:
                            buf.part(p)
                return Word(buf.done(), src[start:self.pos], self.line_at(start))
        # fast path: a plain word ending at a blank or an operator
        m = _PLAIN.match(src, start)
        if m is not None:
            end = m.end()
            if end >= n or src[end] in _FAST_END and not (src.startswith("(", end + 1) and src[end] in "<>"):
                # (`x<(cmd)` is one word: a process substitution joins the text before it)
                text = m.group()
                if not (assign_ok and "[" in text):
                    self.pos = end
                    return Word((Lit(text),), text, bisect_left(self.nl, start) + 1 + self.line_base)
        i = start
        buf = _Buf()
        # kept local until the word ends: a `$(…)` in the value re-enters read_word, which
        # would reset self.sub_span and turn `a[i]=$(cmd)` into a command word
        sub_span: tuple[int, int] | None = None
        if assign_ok:
            m = _NAME.match(src, i)
            if m and m.end() < n and src[m.end()] == "[":
                close = self._scan_subscript(m.end())
                if close is not None and (
                    (close + 1 < n and src[close + 1] == "=")
                    or (close + 2 < n and src[close + 1] == "+" and src[close + 2] == "=")
                ):
                    sub_span = (m.end() + 1, close)
                    buf.text(src[i:close + 1])
                    i = close + 1
        plain = _PLAIN.match
        while i < n:
            m = plain(src, i)
            if m:
                buf.text(m.group())
                i = m.end()
                if i >= n:
                    break
            c = src[i]
            if c == "(":
                # extglob group: @(…) *(…) +(…) ?(…) !(…) stays inside the word
                if self.extglob and i > start and src[i - 1] in _EXTGLOB_CHARS and buf.lit:
                    self.pos = i
                    self._read_extglob(buf)
                    i = self.pos
                    src, n = self.src, self.n  # an alias in a $(…) may have changed the text
                    continue
                break
            if c == "\\":
                if i + 1 >= n:
                    buf.text("\\")
                    i += 1
                elif src[i + 1] == "\n":
                    j = i + 2
                    while src.startswith("\\\n", j):
                        j += 2
                    if j >= n or src[j] in " \t\n":
                        break  # the word ends here; skip_blanks steps over the rest
                    # inside the word: bash joins the lines before reading (`whi\<nl>le`)
                    src = self.join_lines(i)
                    n = self.n
                else:
                    buf.part(Escaped(src[i + 1]))
                    i += 2
            elif c in "'\"$`":
                i = self._read_quote_or_sub(buf, c, i)
                src, n = self.src, self.n  # an alias in a $(…) may have changed the text
            elif (c == "<" or c == ">") and i + 1 < n and src[i + 1] == "(":
                i = self._read_procsub(buf, c, i)
                src, n = self.src, self.n
            else:
                break
        self.pos = i
        self.sub_span = sub_span
        if i == start:
            return None
        return Word(buf.done(), src[start:i], self.line_at(start))

    def _read_quote_or_sub(self, buf: _Buf, c: str, i: int) -> int:
        """Read the ``'…'``, ``"…"``, ``$…`` or backtick part starting at ``i`` (``c`` is
        ``src[i]``, one of ``'"$```) into ``buf``; return the index after it."""
        if c == "'":
            j = self.src.find("'", i + 1)
            if j < 0:
                raise self.fail_eof_matching("'", i)
            buf.part(SQ(self.src[i + 1:j]))
            return j + 1
        if c == '"':
            self.pos = i + 1
            buf.part(self.read_dq())
            return self.pos
        return self._read_sub(buf, c, i, False)

    def _read_sub(self, buf: _Buf, c: str, i: int, in_dq: bool) -> int:
        """Read the ``$…`` (``c`` is ``$``) or backtick substitution at ``i`` into ``buf``;
        return the index after it."""
        self.pos = i
        if c == "$":
            self._read_dollar(buf, in_dq)
        else:
            buf.part(self._read_backtick(in_dq))
        return self.pos

    def _scan_subscript(self, i: int) -> int | None:
        """Index of the ``]`` matching the ``[`` at ``i`` (quotes skipped), or None."""
        src, n = self.src, self.n
        depth = 0
        while i < n:
            c = src[i]
            if c == "[":
                depth += 1
            elif c == "]":
                depth -= 1
                if depth == 0:
                    return i
            elif c == "\\":
                i += 1
            elif c == "'":
                j = src.find("'", i + 1)
                if j < 0:
                    return None
                i = j
            elif c == '"':
                j = i + 1
                while j < n and src[j] != '"':
                    j += 2 if src[j] == "\\" else 1
                if j >= n:
                    return None
                i = j
            elif c == "\n":
                return None
            i += 1
        return None

    def _read_extglob(self, buf: _Buf) -> None:
        """Read ``(…)`` of an extglob pattern into ``buf``; blanks and ``|`` inside are literal."""
        src, n = self.src, self.n
        open_pos = self.pos
        i = self.pos + 1
        buf.text("(")
        depth = 1
        while True:
            if i >= n:
                raise self.fail_eof_matching(")", open_pos)
            c = src[i]
            if c == "(":
                depth += 1
                buf.text(c)
                i += 1
            elif c == ")":
                depth -= 1
                buf.text(c)
                i += 1
                if depth == 0:
                    break
            elif c == "\\":
                if i + 1 < n and src[i + 1] != "\n":
                    buf.part(Escaped(src[i + 1]))
                i += 2
            elif c in "'\"$`":
                i = self._read_quote_or_sub(buf, c, i)
                src, n = self.src, self.n
            else:
                buf.text(c)
                i += 1
        self.pos = i

    def read_dq(self) -> DQ:
        """Read a double-quoted string; ``pos`` is after the opening quote."""
        src, n = self.src, self.n
        open_pos = self.pos - 1
        i = self.pos
        buf = _Buf()
        plain = _DQ_PLAIN.match
        while True:
            m = plain(src, i)
            if m:
                buf.text(m.group())
                i = m.end()
            if i >= n:
                raise self.fail_eof_matching('"', open_pos)
            c = src[i]
            if c == '"':
                i += 1
                break
            if c == "\\":
                if i + 1 >= n:
                    raise self.fail_eof_matching('"', open_pos)
                e = src[i + 1]
                if e == "\n":
                    pass
                elif e in _DQ_ESCAPABLE:
                    buf.text(e)
                else:
                    buf.text("\\" + e)
                i += 2
            else:  # $ or backtick
                i = self._read_sub(buf, c, i, True)
                src, n = self.src, self.n  # an alias in a $(…) may have changed the text
        self.pos = i
        return DQ(buf.done())

    def read_heredoc_parts(self, dq: bool = False) -> tuple[Part, ...]:
        """Parse the whole source as an unquoted here-doc body (``dq``: ``\\"`` is an escape too)."""
        src, n = self.src, self.n
        i = 0
        buf = _Buf()
        plain = _HD_PLAIN.match
        escapable = _DQ_ESCAPABLE if dq else _HD_ESCAPABLE
        while i < n:
            m = plain(src, i)
            if m:
                buf.text(m.group())
                i = m.end()
                if i >= n:
                    break
            c = src[i]
            if c == "\\":
                if i + 1 >= n:
                    buf.text("\\")
                    i += 1
                    continue
                e = src[i + 1]
                if e == "\n":
                    pass
                elif e in escapable:
                    buf.text(e)
                else:
                    buf.text("\\" + e)
                i += 2
            else:  # $ or backtick
                i = self._read_sub(buf, c, i, True)
                src, n = self.src, self.n
        self.pos = i
        return buf.done()

    def read_arg_parts(self, stops: str, *, in_dq: bool, sq_literal: bool = False,
                       parens: bool = False, closer: str = "}", open_pos: int = 0,
                       slash: bool = False, keep_dq: bool = False, repl: bool = False) -> tuple[Part, ...]:
        """Read parts up to (not including) a char of ``stops``: ``${…}`` operands, subscripts, arithmetic.

        Blanks are literal. Quotes are honoured; inside double quotes a ``'`` is literal when
        ``sq_literal`` (bash: ``"${x:-'a'}"`` keeps the quotes). ``parens`` tracks ``(``/``)``
        nesting so that a stop character inside parentheses does not end the operand.
        """
        src, n = self.src, self.n
        i = self.pos
        buf = _Buf()
        depth = 0
        quest = 0
        sq_at = -1
        while True:
            if i >= n:
                raise self.fail_eof_matching(closer, open_pos)
            c = src[i]
            if c in stops and depth == 0 and sq_at < 0:
                if c == ":" and quest:
                    # bash's offset scan (skiparith) lets a ':' close a pending '?' of the
                    # ternary operator: ${s:j?1:0:j}
                    quest -= 1
                    buf.text(c)
                    i += 1
                    continue
                break
            if c == "\\":
                if i + 1 >= n:
                    raise self.fail_eof_matching(closer, open_pos)
                e = src[i + 1]
                if e == "\n":
                    pass
                elif in_dq:
                    # inside "${x…}" a backslash also quotes the closing brace (and a slash
                    # in the parts of ${x/p/r}); in a replacement, any character
                    # ("${y/b/\x}" is axc: bash's patsub takes a backslash as an escape)
                    if repl or keep_dq and e in _DQ_ESCAPABLE:
                        # a pattern operand: the escaped character stays quoted, so "[\\]"
                        # is a bracket holding a backslash (bash)
                        buf.part(Escaped(e))
                    elif e in _DQ_ESCAPABLE or e == closer or (slash and e == "/"):
                        buf.text(e)
                    else:
                        buf.text("\\" + e)
                else:
                    buf.part(Escaped(e))
                i += 2
            elif c == "'" and in_dq and sq_literal:
                # literal quotes whose text still expands, but they hide a `}` from the
                # scan for the end (`"${x:-'}'}"` is '}')
                if sq_at < 0 and src.find("'", i + 1) < 0:
                    raise self.fail_eof_matching("'", i)
                sq_at = i if sq_at < 0 else -1
                buf.text("'")
                i += 1
            elif c == "'":
                j = src.find("'", i + 1)
                if j < 0:
                    raise self.fail_eof_matching("'", i)
                buf.part(SQ(src[i + 1:j]))
                i = j + 1
            elif c == '"':
                self.pos = i + 1
                dq = self.read_dq()
                if in_dq and not keep_dq:
                    # nested quotes inside a quoted ${...} operand: same meaning, flatten
                    # (not in a pattern: bash makes "${v#"?"}" strip a literal ?)
                    for p in dq.parts:
                        if type(p) is Lit:
                            buf.text(p.text)
                        else:
                            buf.part(p)
                else:
                    buf.part(dq)
                i = self.pos
                src, n = self.src, self.n
            elif c == "$":
                self.pos = i
                # bash decodes $'...' inside a double-quoted ${x%$'\t'} operand as well
                self._read_dollar(buf, in_dq and not (i + 1 < n and src[i + 1] == "'" and closer == "}"))
                i = self.pos
                src, n = self.src, self.n  # an alias in a $(…) may have changed the text
            elif c == "`":
                self.pos = i
                buf.part(self._read_backtick(in_dq))
                i = self.pos
                src, n = self.src, self.n
            elif c in "<>" and not in_dq and closer == "}" and not parens and i + 1 < n and src[i + 1] == "(":
                # an unquoted operand may hold a process substitution: `cat ${x:-<(cmd)}`
                i = self._read_procsub(buf, c, i)
                src, n = self.src, self.n
            else:
                if parens:
                    if c == "(":
                        depth += 1
                    elif c == ")":
                        depth -= 1
                    elif c == "?" and depth == 0:
                        quest += 1
                elif closer == "]":
                    # $[ … ] nests brackets: $[b[0] + 1]
                    if c == "[":
                        depth += 1
                    elif c == "]":
                        depth -= 1
                buf.text(c)
                i += 1
        self.pos = i
        return buf.done()

    # ------------------------------------------------------------------ $ and backticks

    def _read_dollar(self, buf: _Buf, in_dq: bool) -> None:
        src, n = self.src, self.n
        i = self.pos
        if i + 1 >= n:
            buf.text("$")
            self.pos = i + 1
            return
        c = src[i + 1]
        if c == "{":
            self.pos = i + 2
            self.enter()
            buf.part(self._read_braced(in_dq, i))
            self.depth -= 1
        elif c == "(":
            if self.has_conts and src.startswith("\\\n", i + 2):
                src = self.join_lines(i + 2)
                n = self.n
            if i + 2 < n and src[i + 2] == "(":
                end = self.scan_arith(i + 3)
                src, n = self.src, self.n  # `)\<newline>)` closes it: joined
                if end == -1:
                    raise self.fail_eof_matching(")", i + 1)
                if end is not None:
                    self.pos = i + 3
                    self.enter()
                    parts = self.read_arith_region(end, i + 1)
                    self.depth -= 1
                    self.pos = end + 2
                    buf.part(ArithSub(Word(parts, src[i + 3:end], self.line_at(i))))
                    return
                # not arithmetic after all: bash reads it again as $( ( … ) … ) from a pushed
                # back string, so running out of text there is reported at the $(( line
                closer = self._parens_close(i + 2)
                if closer is not None:
                    e = self.fail_eof_matching(closer, i + 1)
                    e.line = self.line_at(i)
                    raise e
                self.pos = i + 2
                self.enter()
                try:
                    body = self.parse_subscript_script(")", i + 1)
                except ParseError as e:
                    if e.message == "unexpected EOF while looking for matching `)'":
                        e.line = self.line_at(i)
                    raise
                self.depth -= 1
                buf.part(CmdSub(body))
                return
            self.pos = i + 2
            self.enter()
            body = self.parse_subscript_script(")", i + 1)
            self.depth -= 1
            buf.part(CmdSub(body))
        elif c == "[":
            # obsolete $[ expr ]
            self.pos = i + 2
            parts = self.read_arg_parts("]", in_dq=True, parens=False, closer="]", open_pos=i + 1)
            end = self.pos
            self.pos = end + 1
            buf.part(ArithSub(Word(parts, src[i + 2:end], self.line_at(i))))
        elif c == "'" and not in_dq:
            j = i + 2
            while True:
                if j >= n:
                    raise self.fail_eof_matching("'", i + 1)
                ch = src[j]
                if ch == "'":
                    break
                j += 2 if ch == "\\" else 1
            buf.part(ANSIC(decode_ansic(src[i + 2:j])))
            self.pos = j + 1
        elif c == '"' and not in_dq:
            # $"..." (locale translation) is a plain double-quoted string here
            self.pos = i + 2
            buf.part(self.read_dq())
        elif c in _SPECIAL_PARAMS or c.isdigit():
            buf.part(Param(c, short=True))
            self.pos = i + 2
        elif c == "\\" and src.startswith("\\\n", i + 1):
            # a line continuation right after `$` joins (`$\<newline>?` is `$?`, `$\<nl>{x}`)
            self.join_lines(i + 1)
            self._read_dollar(buf, in_dq)
        else:
            m = _NAME.match(src, i + 1)
            if m:
                end = m.end()
                while self.has_conts and src.startswith("\\\n", end):
                    # `$HO\<newline>ME` is $HOME
                    j = end + 2
                    while src.startswith("\\\n", j):
                        j += 2
                    if j >= n or not (src[j].isalnum() or src[j] == "_"):
                        break
                    src = self.join_lines(end)
                    n = self.n
                    m = _NAME.match(src, i + 1)
                    end = m.end()  # type: ignore[union-attr]
                buf.part(Param(m.group(), short=True))  # type: ignore[union-attr]
                self.pos = end
            else:
                buf.text("$")
                self.pos = i + 1

    def _parens_close(self, i: int) -> str | None:
        """None when the ``(`` before ``i`` finds its ``)``, counting parentheses and skipping
        quotes, else the closer the end of the text came before (bash matches a ``$((`` that
        is no arithmetic this way before it parses it as a command substitution)."""
        src, n = self.src, self.n
        depth = 0
        while i < n:
            c = src[i]
            if c == "(":
                depth += 1
            elif c == ")":
                if depth == 0:
                    return None
                depth -= 1
            elif c == "\\":
                i += 1
            elif c == "'":
                i = src.find("'", i + 1)
                if i < 0:
                    return "'"
            elif c == '"':
                i += 1
                while i < n and src[i] != '"':
                    i += 2 if src[i] == "\\" else 1
                if i >= n:
                    return '"'
            i += 1
        return ")"

    def scan_arith(self, i: int, join_close: bool = True) -> int | None:
        """For ``((`` / ``$((`` whose body starts at ``i``: index of the closing ``))``, None
        when the parentheses close as ``) )`` (then it is a nested subshell / command
        substitution), -1 at end of input; -2 for a ``)\\<newline>`` when not ``join_close``
        (bash's ``((`` command reads the character after its first ``)`` without joining)."""
        src, n = self.src, self.n
        depth = 0
        while i < n:
            c = src[i]
            if c == "(":
                depth += 1
            elif c == ")":
                if depth == 0:
                    if src.startswith("\\\n", i + 1):
                        if not join_close:
                            return -2
                        src = self.join_lines(i + 1)
                        n = self.n
                    if i + 1 >= n:
                        return -1
                    return i if src[i + 1] == ")" else None
                depth -= 1
            elif c == "\\":
                if src.startswith("\n", i + 1):
                    # joined, so that the body's text reads as bash saw it (`declare -f`)
                    src = self.join_lines(i)
                    n = self.n
                    continue
                i += 1
            elif c == "'":
                j = src.find("'", i + 1)
                if j < 0:
                    return -1
                i = j
            elif c == '"':
                j = i + 1
                while j < n and src[j] != '"':
                    j += 2 if src[j] == "\\" else 1
                if j >= n:
                    return -1
                i = j
            i += 1
        return -1

    def read_arith_region(self, end: int, open_pos: int) -> tuple[Part, ...]:
        """Parts of an arithmetic body from ``pos`` to ``end`` (quotes removed, ``$`` expanded)."""
        sub = self.src[self.pos:end]
        if "$" not in sub and "`" not in sub and "'" not in sub and '"' not in sub and "\\" not in sub:
            self.pos = end
            return (Lit(sub),) if sub else ()
        saved_n = self.n
        self.n = end
        try:
            parts = self._read_to_end(open_pos)
        finally:
            self.n = saved_n
        return parts

    def _read_to_end(self, open_pos: int, unquoted: bool = False) -> tuple[Part, ...]:
        """Read parts up to ``self.n`` (temporarily narrowed) with arithmetic quoting rules
        (``unquoted``: a backslash makes an ``Escaped`` part, as in a plain word)."""
        src, n = self.src, self.n
        i = self.pos
        buf = _Buf()
        while i < n:
            c = src[i]
            if c == "\\":
                if i + 1 < n and src[i + 1] == "\n":
                    i += 2
                    continue
                if i + 1 < n:
                    e = src[i + 1]
                    if unquoted:
                        buf.part(Escaped(e))
                    else:
                        buf.text(e if e in _DQ_ESCAPABLE else "\\" + e)
                    i += 2
                else:
                    buf.text("\\")
                    i += 1
            elif c == "'":
                j = src.find("'", i + 1, n)
                if j < 0:
                    raise self.fail_eof_matching("'", i)
                buf.part(SQ(src[i + 1:j]))
                i = j + 1
            elif c == '"':
                self.pos = i + 1
                dq = self.read_dq()
                if unquoted:
                    buf.part(dq)
                else:
                    for p in dq.parts:
                        if type(p) is Lit:
                            buf.text(p.text)
                        else:
                            buf.part(p)
                i = self.pos
                src = self.src
            elif c == "$" and not unquoted and i + 1 < n and src[i + 1] == '"':
                # $"..." in arithmetic is its (untranslated) contents, quotes removed
                self.pos = i + 2
                for p in self.read_dq().parts:
                    if type(p) is Lit:
                        buf.text(p.text)
                    else:
                        buf.part(p)
                i = self.pos
            elif c == "$" and i + 1 < n and src[i + 1] == "'":
                # $'...' decodes, then stays single-quoted (bash: $(( $'5' )) is an error on '5')
                j = i + 2
                while j < n and src[j] != "'":
                    j += 2 if src[j] == "\\" else 1
                if j >= n:
                    raise self.fail_eof_matching("'", i + 1)
                body = decode_ansic(src[i + 2:j])
                buf.part(ANSIC(body) if unquoted else SQ(body))
                i = j + 1
            elif c == "$" or c == "`":
                i = self._read_sub(buf, c, i, True)
                src = self.src
            else:
                j = i + 1
                while j < n and src[j] not in "\\'\"$`":
                    j += 1
                buf.text(src[i:j])
                i = j
        self.pos = i
        return buf.done()

    def _read_backtick(self, in_dq: bool) -> CmdSub:
        src, n = self.src, self.n
        open_pos = self.pos
        i = open_pos + 1
        out: list[str] = []
        while True:
            if i >= n:
                raise self.fail_eof_matching("`", open_pos)
            c = src[i]
            if c == "`":
                break
            if c == "\\" and i + 1 < n:
                e = src[i + 1]
                # inside backticks a backslash quotes only $ ` \ (and " when inside double
                # quotes); a backslash-newline is joined away even inside the body's quotes
                if e == "\n":
                    i += 2
                    continue
                if e in "$`\\" or (in_dq and e == '"'):
                    out.append(e)
                else:
                    out.append("\\" + e)
                i += 2
                continue
            out.append(c)
            i += 1
        self.pos = i + 1
        self.enter()
        body = self.parse_backtick_body("".join(out), self.line_at(open_pos))
        self.depth -= 1
        return CmdSub(body, backtick=True)

    # ------------------------------------------------------------------ ${...}

    def _read_braced(self, in_dq: bool, dollar_pos: int) -> Param:
        if self.has_conts:
            self._join_braced_head(self.pos)
        src, n = self.src, self.n
        i = self.pos
        open_pos = dollar_pos + 1
        if i >= n:
            raise self.fail_eof_matching("}", open_pos)
        prefix = ""
        c = src[i]
        # ${#} ${#x} ${!x} ${!} ${#-} …: a leading # or ! is a prefix only when a name follows
        if c in "#!" and i + 1 < n:
            nxt = src[i + 1]
            if nxt == "}":
                pass
            elif c == "!" and nxt == "-":
                pass  # ${!-word} is $! with a default, never ${!-} indirection
            elif (nxt.isalnum() or nxt == "_" or nxt in "@*#?-$!0") and not (
                    c == "#" and i + 2 < n and src[i + 2] != "}" and (
                        nxt in "-?#" or (nxt == "@" and src[i + 2].isalpha()))):
                # (${##x} strips x from $#, ${#@Q} quotes $#)
                prefix = c
                i += 1
            elif c == "#" and i + 2 < n and src[i + 2] == "}":
                # ${#/} ${#%} ${#=} ${#+} ${#^}: the length of a parameter that cannot exist
                return self._bad_subst(dollar_pos, in_dq)
        # name
        m = _NAME.match(src, i)
        if m:
            name = m.group()
            i = m.end()
        else:
            m = _DIGITS.match(src, i)
            if m:
                name = m.group()
                i = m.end()
            elif i < n and src[i] in _SPECIAL_PARAMS:
                name = src[i]
                i += 1
            else:
                return self._bad_subst(dollar_pos, in_dq)
        index: Word | None = None
        if i < n and src[i] == "[" and not name[0] in _SPECIAL_PARAMS and not name.isdigit():
            close = self._scan_subscript(i)
            if close is None:
                return self._bad_subst(dollar_pos, in_dq)
            self.pos = i + 1
            saved_n = self.n
            self.n = close
            try:
                parts = self._read_to_end(open_pos)
            finally:
                self.n = saved_n
            index = Word(parts, src[i + 1:close], self.line_at(i))
            i = close + 1
        if i >= n:
            raise self.fail_eof_matching("}", open_pos)
        c = src[i]
        op = ""
        arg = arg2 = None
        if c == "}":
            self.pos = i + 1
            return Param(name, index, prefix)
        if prefix == "!" and c in "*@" and i + 1 < n and src[i + 1] == "}" and index is None:
            self.pos = i + 2
            return Param(name, None, "!", c)
        if c == ":":
            if i + 1 < n and src[i + 1] in "-=?+":
                op = src[i:i + 2]
                i += 2
            else:
                op = ":"
                i += 1
                self.pos = i
                parts = self.read_arg_parts(":}", in_dq=in_dq, parens=True, open_pos=open_pos)
                arg = Word(parts, src[i:self.pos], self.line_at(i))
                i = self.pos
                if src[i] == ":":
                    i += 1
                    self.pos = i
                    parts = self.read_arg_parts("}", in_dq=in_dq, parens=True, open_pos=open_pos)
                    arg2 = Word(parts, src[i:self.pos], self.line_at(i))
                    i = self.pos
                self.pos = i + 1
                return Param(name, index, prefix, op, arg, arg2)
        elif c in "-=?+":
            op = c
            i += 1
        elif c in "#%^,~":
            # ~ and ~~ (toggle case) are undocumented bash operators
            op = c
            i += 1
            if i < n and src[i] == c:
                op = c + c
                i += 1
        elif c == "/":
            op = "/"
            i += 1
            if i < n and src[i] in "/#%":
                op = "/" + src[i]
                i += 1
            start = i
            if op == "//" and i < n and src[i] == "/":
                i += 1  # (bash: a pattern's leading `/` is not the delimiter: ${x////c}, ${x///})
            self.pos = i
            parts = self.read_arg_parts("/}", in_dq=in_dq, open_pos=open_pos, slash=True, keep_dq=True)
            if i > start:
                parts = (Lit("/"),) + tuple(parts)
            arg = Word(parts, src[start:self.pos], self.line_at(start))
            i = self.pos
            if src[i] == "/":
                i += 1
                self.pos = i
                parts = self.read_arg_parts("}", in_dq=in_dq, open_pos=open_pos, slash=True, keep_dq=True,
                                            repl=True)
                arg2 = Word(parts, src[i:self.pos], self.line_at(i))
                i = self.pos
            self.pos = i + 1
            return Param(name, index, prefix, op, arg, arg2)
        elif c == "@":
            op = "@"
            i += 1
        else:
            return self._bad_subst(dollar_pos, in_dq)
        self.pos = i
        sq_literal = op in (":-", "-", ":=", "=", ":?", "?", ":+", "+")
        parts = self.read_arg_parts("}", in_dq=in_dq, sq_literal=sq_literal, open_pos=open_pos,
                                    keep_dq=op in ("#", "##", "%", "%%", "^", "^^", ",", ",,"))
        arg = Word(parts, src[i:self.pos], self.line_at(i))
        self.pos += 1
        return Param(name, index, prefix, op, arg, arg2)

    def _join_braced_head(self, i: int) -> None:
        """Join the line continuations in the name and operator of a ``${…}`` at ``i``
        (``${x\\<newline>:-d}``); the operand's reader steps over its own."""
        src = self.src
        n = self.n
        while i < n:
            c = src[i]
            if c == "\\":
                if not src.startswith("\\\n", i):
                    return
                src = self.join_lines(i)
                n = self.n
            elif c == "[":
                close = self._scan_subscript(i)
                if close is None:
                    return
                i = close + 1
            elif c in _BRACE_HEAD or c.isalnum():
                i += 1
            else:
                return

    def _bad_subst(self, dollar_pos: int, in_dq: bool) -> Param:
        """``${a b}``: bash fails at expansion time ("bad substitution"), not at parse time.

        Represented as ``Param(name=<the whole ${...} text>, op='bad')``.
        """
        src, n = self.src, self.n
        self.pos = dollar_pos + 2
        # skip to the matching } honouring quotes and nested ${ (what bash's lexer does)
        self.read_arg_parts("}", in_dq=in_dq, open_pos=dollar_pos + 1)
        self.pos += 1
        return Param(src[dollar_pos:self.pos], op="bad")
