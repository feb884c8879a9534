"""Brace expansion on AST words, following bash's braces.c (brace_gobbler, expand_seqterm, mkseq)."""

# A word is flattened into items: each character of an unquoted ``Lit`` is a str item
# (only those can be brace syntax); every other part (quoted text, escapes, expansions) is
# one opaque item, so an alternative may contain quoted parts: ``a{b,"c d"}e``.
#
# Bash quirks reproduced here:
# * A ``{`` only opens a brace expression if a matching ``}`` follows with a top-level
#   ``,`` or ``..`` (``..`` directly before the ``}`` does not count) in between;
#   otherwise it is literal and the search resumes after it (``{a}``, ``{a..}``, ``{}``).
# * A ``{`` at the start of the (sub)text immediately followed by ``}`` is skipped.
# * A sequence that does not parse (``{1..a}``, ``{a..bc}``, ``{1..2..x}``) stays literal;
#   expansion continues in the rest of the word.
# * ``{01..10}``, ``{-05..5}``: zero padding to the widest end; ``{a..e..2}``; a zero
#   increment means 1 and the sign of the increment is ignored.

from __future__ import annotations

from typing import Union

import re

from agentic_bash.limits import check_size
from agentic_bash.shell.nodes import SQ, Lit, Param, Part, Word

__all__ = ["BraceExpansionTooLarge", "MAX_WORDS", "expand_braces"]

MAX_WORDS = 1_000_000  # bash has no limit; an agent sandbox must not exhaust memory
# bytes a generated word is charged beyond its characters (its list, Word and parts), so
# that brace expansion counts against max_variable_bytes for the memory it really takes
_WORD_COST = 32
_SLICE = 4096  # words built between two checks of the budget

_Item = Union[str, Part]
_IDENT_START = re.compile(r"[A-Za-z_]")
_IDENT_CHAR = re.compile(r"[A-Za-z0-9_]+")
_INT_MAX = 2**31 - 1
_INTMAX = 2**63 - 1


class BraceExpansionTooLarge(ValueError):
    """More than ``MAX_WORDS`` words would be produced."""


class _NotPlain(Exception):
    """The string form of a plain word cannot carry this expansion: use the item form."""


class UnclosedBackquote(ValueError):
    """A ``{a..C}``-style range made a backquote with text after it in its word: bash reads
    that as an unclosed command substitution (a bad substitution)."""


# a backquote a character range generated (``{_..a}``): literal at the end of its word
_GEN_BQ = SQ("`")


def expand_braces(word: Word, *, limit: int = MAX_WORDS, plain: re.Pattern[str] | None = None) -> list[Word]:
    """Brace-expand one word; returns ``[word]`` (the same object) when nothing expands.
    With ``plain`` (a pattern of what needs further expansion), a generated word that is
    non-empty literal text not matching it is returned as the str itself: a million-word
    expansion then makes a million strings (untracked by the garbage collector) instead of
    three million tracked objects whose collections stalled the run for ~0.1 s each."""
    if not any(type(p) is Lit and "{" in p.text for p in word.parts):
        return [word]
    if all(type(p) is Lit for p in word.parts):
        # plain text (most words): expanded as strings, which the garbage collector does not
        # track, so a big expansion is built and dropped without collector pauses
        text = "".join(p.text for p in word.parts)  # type: ignore[union-attr]
        try:
            words = _expand(text, limit)  # type: ignore[arg-type]
        except _NotPlain:
            pass
        else:
            if len(words) == 1 and words[0] == text:
                return [word]
            out: list[Word] = []
            wt, line = word.text, word.line
            if plain is not None:
                work = plain.search
                for k in range(0, len(words), _SLICE):
                    out.extend([w if w and not work(w) else Word((Lit(w),) if w else (), wt, line)  # type: ignore[misc]
                                for w in words[k:k + _SLICE]])
                    check_size(0, "brace expansion")  # (the deadline)
                return out
            for k in range(0, len(words), _SLICE):
                out.extend([Word((Lit(w),) if w else (), wt, line) for w in words[k:k + _SLICE]])  # type: ignore[arg-type]
                check_size(0, "brace expansion")  # (the deadline)
            return out
    items: list[_Item] = []
    for p in word.parts:
        if type(p) is Lit:
            items.extend(p.text)
        else:
            items.append(p)
    results = _expand(items, limit)
    if len(results) == 1 and results[0] == items:
        return [word]
    for r in results:
        for k, it in enumerate(r):
            if it is _GEN_BQ and k + 1 < len(r):
                rest = "".join(x if isinstance(x, str) else getattr(x, "text", "") for x in r[k + 1:])
                raise UnclosedBackquote(f'bad substitution: no closing "`" in `{rest}')
    out = []
    text, line = word.text, word.line  # type: ignore[assignment]
    for k in range(0, len(results), _SLICE):
        out.extend([Word(_rejoin(_rebuild(r)), text, line) for r in results[k:k + _SLICE]])
        check_size(0, "brace expansion")  # (the deadline)
    return out


def _rejoin(parts: tuple[Part, ...]) -> tuple[Part, ...]:
    """bash expands braces on the word's text before parameters: ``$a{1,2}`` is ``$a1 $a2``
    and ``{$a,b}_c`` is ``$a_c b_c``, so a short ``$name`` now followed by name characters
    takes them into its name."""
    out: list[Part] | None = None
    for i, p in enumerate(parts):
        if (type(p) is Lit and i and type(parts[i - 1]) is Param and parts[i - 1].short
                and _IDENT_START.match(parts[i - 1].name) and _IDENT_CHAR.match(p.text)):
            if out is None:
                out = list(parts[:i])
            m = _IDENT_CHAR.match(p.text)
            assert m is not None
            prev = out[-1]
            assert type(prev) is Param
            out[-1] = Param(prev.name + m.group(0), short=True)
            if m.end() < len(p.text):
                out.append(Lit(p.text[m.end():]))
        elif out is not None:
            out.append(p)
    return parts if out is None else tuple(out)


def _rebuild(items: list[_Item]) -> tuple[Part, ...]:
    try:
        text = "".join(items)  # type: ignore[arg-type]  # (all characters: most words)
        return (Lit(text),) if text else ()
    except TypeError:
        pass
    parts: list[Part] = []
    buf: list[str] = []
    for it in items:
        if isinstance(it, str):
            buf.append(it)
        else:
            if buf:
                parts.append(Lit("".join(buf)))
                buf = []
            parts.append(it)
    if buf:
        parts.append(Lit("".join(buf)))
    return tuple(parts)


def _is(items: list[_Item], i: int, ch: str) -> bool:
    return 0 <= i < len(items) and items[i] == ch and isinstance(items[i], str)


def _ws(items: list[_Item], i: int) -> bool:
    return 0 <= i < len(items) and isinstance(items[i], str) and items[i] in " \t\n"


def _gobble(items: list[_Item], i: int, satisfy: str) -> int:
    """bash's brace_gobbler: index of the satisfying character, or len(items)."""
    n = len(items)
    level = 0
    commas = 0 if satisfy == "}" else 1
    while i < n:
        c = items[i]
        if not isinstance(c, str):
            i += 1
            continue
        if c == satisfy and level == 0 and commas > 0:
            if c == "{" and (i == 0 or _ws(items, i - 1)) and (_ws(items, i + 1) or _is(items, i + 1, "}")):
                i += 1
                continue
            return i
        if c == "{":
            level += 1
        elif c == "}" and level:
            level -= 1
        elif satisfy == "}" and level == 0 and c == ",":
            commas += 1
        elif satisfy == "}" and level == 0 and c == "." and _is(items, i + 1, ".") and not _is(items, i + 2, "}"):
            commas += 1
        i += 1
    return n


def _expand(items: list[_Item], limit: int) -> list[list[_Item]]:
    n = len(items)
    i = 0
    close = n
    while True:
        i = _gobble(items, i, "{")
        if i >= n:
            return [items]
        close = _gobble(items, i + 1, "}")
        if close < n:
            break
        i += 1
    preamble = items[:i]
    amble = items[i + 1:close]
    if not any(isinstance(c, str) and c == "," for c in amble):
        seq = _seqterm(amble)  # type: ignore[arg-type]
        if seq is not None and type(items) is str:
            if "" in seq or "`" in seq:
                raise _NotPlain()  # (a generated \ or ` needs the item form)
            tack = seq  # type: ignore[assignment]
        elif seq is not None:
            # "" stands for a generated `\`: gone after quote removal, but still a word
            tack: list[list[_Item]] = []
            for k in range(0, len(seq), _SLICE):
                tack.extend([list(s) if s and s != "`" else [SQ("")] if not s else [_GEN_BQ]
                             for s in seq[k:k + _SLICE]])
                check_size(0, "brace expansion")  # (the deadline)
        elif close + 1 < n:
            tack = [items[i:close + 1]]
        else:
            return [items]
    else:
        tack = []
        start = 0
        while True:
            j = _gobble(amble, start, ",")
            tack.extend(_expand(amble[start:j], limit))
            if len(tack) > limit:
                raise BraceExpansionTooLarge(f"brace expansion: more than {limit} words")
            if j >= len(amble):
                break
            start = j + 1
    if len(tack) <= _SLICE:
        result = [preamble + t for t in tack]
    else:
        result = []
        for k in range(0, len(tack), _SLICE):
            result.extend([preamble + t for t in tack[k:k + _SLICE]])
            check_size(0, "brace expansion")  # (the deadline)
    post = items[close + 1:]
    if post:
        posts = _expand(post, limit)
        if len(result) * len(posts) > limit:
            raise BraceExpansionTooLarge(f"brace expansion: more than {limit} words")
        # the product is built in slices, each charged: a big one (1M words) stops at the
        # deadline and counts against max_variable_bytes like any string the shell builds
        out: list[list[_Item]] = []
        size = 0
        plen = len(preamble) + sum(len(p) for p in posts) // max(len(posts), 1)
        for r in result:
            for k in range(0, len(posts), _SLICE):
                ps = posts[k:k + _SLICE]
                out.extend([r + p for p in ps])
                size += len(ps) * (len(r) + plen + _WORD_COST)
                check_size(size, "brace expansion")
        result = out
    return result


def _legal_number(s: str) -> int | None:
    t = s.strip(" \t\n")
    body = t[1:] if t[:1] in "+-" else t
    if not body or not body.isdigit() or not body.isascii():
        return None
    v = int(t)
    return v if -_INTMAX - 1 <= v <= _INTMAX else None


def _strtoimax(s: str, i: int) -> tuple[int, int, bool]:
    """(value, end index, overflow) like strtoimax(s+i, &ep, 10); end == i when no digits."""
    j = i
    n = len(s)
    while j < n and s[j] in " \t\n":
        j += 1
    k = j
    if k < n and s[k] in "+-":
        k += 1
    d = k
    while d < n and "0" <= s[d] <= "9":
        d += 1
    if d == k:
        return 0, i, False
    v = int(s[j:d])
    return v, d, not (-_INTMAX - 1 <= v <= _INTMAX)


def _seqterm(amble: list[_Item]) -> list[str] | None:
    if not all(isinstance(c, str) for c in amble):
        return None
    text = "".join(amble)  # type: ignore[arg-type]
    k = text.find("..")
    if k < 0:
        return None
    lhs, rhs = text[:k], text[k + 2:]
    if not lhs or not rhs:
        return None
    lv = _legal_number(lhs)
    if lv is not None:
        lhs_t = "int"
    elif len(lhs) == 1 and lhs.isascii() and lhs.isalpha():
        lhs_t = "char"
    else:
        return None
    ep: int
    if rhs[0].isdigit() and rhs[0].isascii() or (rhs[0] in "+-" and len(rhs) > 1 and "0" <= rhs[1] <= "9"):
        rhs_t = "int"
        rv, ep, ovf = _strtoimax(rhs, 0)
        if ovf or (ep < len(rhs) and rhs[ep] != "."):
            return None
    elif rhs[0].isascii() and rhs[0].isalpha() and (len(rhs) == 1 or rhs[1] == "."):
        rhs_t = "char"
        rv = ord(rhs[0])
        ep = 1
    else:
        return None
    rhs_text = rhs[:ep]
    incr = 1
    if rhs[ep:ep + 2] == ".." and len(rhs) > ep + 2:
        incr, ep2, ovf = _strtoimax(rhs, ep + 2)
        if ep2 == ep + 2 or ovf:
            return None
        ep = ep2
    if ep != len(rhs):
        return None
    if lhs_t != rhs_t:
        return None
    width = 0
    kind = lhs_t
    if lhs_t == "char":
        start, end = ord(lhs), rv
    else:
        start, end = lv, rv  # type: ignore[assignment]
        ll, rl = len(lhs), len(rhs_text)
        if ll > 1 and lhs[0] == "0":
            width, kind = ll, "zint"
        if ll > 2 and lhs[0] == "-" and lhs[1] == "0":
            width, kind = ll, "zint"
        if rl > 1 and rhs_text[0] == "0" and width < rl:
            width, kind = rl, "zint"
        if rl > 2 and rhs_text[0] == "-" and rhs_text[1] == "0" and width < rl:
            width, kind = rl, "zint"
        if kind == "zint":
            width = max(width, ll, rl)
    return _mkseq(start, end, incr, kind, width)  # type: ignore[arg-type]


def _mkseq(start: int, end: int, incr: int, kind: str, width: int) -> list[str] | None:
    if incr == 0:
        incr = 1
    if start > end and incr > 0:
        incr = -incr
    elif start < end and incr < 0:
        incr = -incr
    diff = end - start
    if not (-_INTMAX - 1 + 3 <= diff <= _INTMAX - 2):
        return None
    nelem = abs(diff) // abs(incr)
    if nelem > _INT_MAX - 3:
        return None
    if nelem + 1 > MAX_WORDS:
        raise BraceExpansionTooLarge(f"brace expansion: more than {MAX_WORDS} words")
    out: list[str] = []
    n = start
    while True:
        if kind == "int":
            out.append(str(n))
        elif kind == "zint":
            out.append(f"{n:0{width}d}")
        else:
            # bash's quote removal later takes a generated lone backslash away ({Z..a})
            out.append(chr(n) if n != 92 else "")
        n += incr
        if (incr < 0 and n < end) or (incr > 0 and n > end):
            break
        if not len(out) & (_SLICE - 1):
            check_size(0, "brace expansion")  # (the deadline)
    return out
