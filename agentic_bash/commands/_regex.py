"""POSIX BRE/ERE (GNU flavour) translated to the ``regex`` module, with leftmost-longest matching."""

# Design (read before using from another command):
# * Patterns and subjects are ``str``. Bytes are decoded with ``to_text``: in a UTF-8 locale
#   as UTF-8 with surrogateescape (so ``.`` and ``[[:alpha:]]`` see characters, invalid bytes
#   survive as lone surrogates and round-trip), in the C/POSIX locale as latin-1 (one char per
#   byte) with ``regex.ASCII`` so classes and case folding are ASCII only, like glibc in "C".
#   ``from_text`` inverts it. ``utf8_locale(env)`` decides from LC_ALL > LC_CTYPE > LANG.
# * ``compile_posix`` returns a ``PosixRegex``: ``.rx`` is compiled with ``regex.POSIX``
#   (leftmost-longest overall match, what ``grep -o``, ``sed s///`` and awk's match() need);
#   ``.fast`` is the same pattern leftmost-first, for yes/no questions (same answer, and it
#   never explores alternatives it does not need). Measured on 1.2 MB: POSIX costs 0-40 %.
# * Every match call must pass ``timeout=budget_timeout(ctx)``; ``regex`` raises
#   TimeoutError, which ``timeout_guard`` turns into LimitExceeded('timeout') so the run ends
#   at its deadline even on ``(a*)*b``-style patterns.
# * Errors raise ``RegexError`` carrying glibc's message (``Unmatched [, [^, [:, [., or [=``);
#   each tool adds its own prefix (``grep: ...``, ``sed: -e expression #1, char 5: ...``).
# * Line modes: ``multiline=False`` -> ``^``/``$`` match only at the ends of the subject (grep
#   per line, sed without M); ``multiline=True`` -> also around newlines (sed's M flag);
#   ``buffer=True`` -> multiline and nothing (negated lists, \s, \W) may match a newline,
#   for searching a whole buffer of lines at once (grep's fast path).

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterator, Mapping

import regex

from ..errors import LimitExceeded

__all__ = [
    "PosixRegex", "RegexError", "budget_timeout", "compile_patterns", "compile_posix", "from_text", "timeout_guard",
    "to_text", "translate", "utf8_locale",
]

RE_DUP_MAX = 0x7FFF

CLASSES = frozenset(
    "alpha digit alnum upper lower space blank punct print graph cntrl xdigit".split()
)

# Characters that must be escaped to be literal in a ``regex`` pattern (outside a set).
_SPECIAL = frozenset(".^$*+?{}[]\\|()#&~- \t\n\r\f\v")
# ... and inside a set.
_SET_SPECIAL = frozenset("\\]^-[&~|")


class RegexError(ValueError):
    """An invalid POSIX pattern; ``str(exc)`` is glibc's/dfa's message."""


def utf8_locale(env: Mapping[str, str]) -> bool:
    """True when LC_ALL / LC_CTYPE / LANG (first set wins) names a UTF-8 locale."""
    key = (env.get("LC_ALL"), env.get("LC_CTYPE"), env.get("LANG"))
    hit = _UTF8.get(key)
    if hit is None:
        hit = False
        for v in key:
            if v:
                hit = "utf8" in v.lower().replace("-", "")
                break
        if len(_UTF8) >= 64:
            _UTF8.clear()
        _UTF8[key] = hit
    return hit


_UTF8: dict[tuple[str | None, str | None, str | None], bool] = {}  # (every command asks, per call)


def to_text(b: bytes, utf8: bool) -> str:
    return b.decode("utf-8", "surrogateescape") if utf8 else b.decode("latin-1")


def from_text(s: str, utf8: bool) -> bytes:
    return s.encode("utf-8", "surrogateescape") if utf8 else s.encode("latin-1")


def budget_timeout(ctx: object) -> float | None:
    """Seconds left in the run's budget, for ``regex``'s ``timeout=``."""
    b = getattr(ctx, "budget", None)
    return None if b is None else b.remaining()


@contextlib.contextmanager
def timeout_guard() -> Iterator[None]:
    """Turn ``regex``'s TimeoutError into the run's LimitExceeded('timeout')."""
    try:
        yield
    except TimeoutError as exc:
        raise LimitExceeded("timeout", "timed out") from exc


@dataclass(frozen=True, slots=True)
class PosixRegex:
    rx: regex.Pattern  # leftmost-longest (regex.POSIX)
    fast: regex.Pattern  # leftmost-first, same language
    groups: int
    source: str  # the translated pattern
    warnings: tuple[str, ...] = ()


def _lit(c: str) -> str:
    if c in _SPECIAL:
        return "\\" + c
    if c == "\0":
        return "\\x00"
    return c


def _set_lit(c: str) -> str:
    if c in _SET_SPECIAL:
        return "\\" + c
    if c == "\0":
        return "\\x00"
    if c == "\n":
        return "\\n"
    return c


_SED_SIMPLE = {"a": "\a", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def _sed_escape(p: str, i: int) -> tuple[str, int] | None:
    """GNU sed's character escapes at p[i] (the char after a backslash): (char, next index)."""
    c = p[i]
    if c in _SED_SIMPLE:
        return _SED_SIMPLE[c], i + 1
    if c == "c" and i + 1 < len(p):
        return chr(ord(p[i + 1].upper()) ^ 0x40), i + 2
    base, digits, maxlen = {"d": (10, "0123456789", 3), "o": (8, "01234567", 3),
                            "x": (16, "0123456789abcdefABCDEF", 2)}.get(c, (0, "", 0))
    if base:
        j = i + 1
        while j < len(p) and j - i - 1 < maxlen and p[j] in digits:
            j += 1
        if j > i + 1:
            return chr(int(p[i + 1:j], base) & 0xFF), j
    return None


class _Frame:
    __slots__ = ("alts", "items", "group", "zw")

    def __init__(self, group: int) -> None:
        self.zw = True  # only zero-width items since the start, "(" or "|" (dfa's laststart)
        self.alts: list[str] = []
        self.items: list[list] = []  # [atom_text, quantifiable, (min,max)|None]
        self.group = group

    def flush(self) -> str:
        return "".join(_render(it) for it in self.items)


def _qstr(q: tuple[int, int | None]) -> str:
    m, n = q
    if n is None:
        return "*" if m == 0 else "+" if m == 1 else "{%d,}" % m
    if m == n:
        return "" if m == 1 else "{%d}" % m
    if m == 0 and n == 1:
        return "?"
    return "{%d,%d}" % (m, n)


def _render(it: list) -> str:
    atom, _quant, q = it
    if q is None:
        return atom
    return atom + _qstr(q)


def _combine(q1: tuple[int, int | None], q2: tuple[int, int | None]) -> tuple[int, int | None] | None:
    """x{q1}{q2} as one quantifier when that is exact (``a**``, ``a+*``, ``a?+``), else None."""
    m1, n1 = q1
    m2, n2 = q2
    if m1 <= 1 and n1 is None or m2 <= 1 and n2 is None:
        # one side is * or +: the repetition counts form an unbroken range from m1*m2
        if (m1 <= 1 or n1 is None) and (m2 <= 1 or n2 is None):
            return (m1 * m2, None)
    if n1 == 1 and n2 == 1:  # ? and ? (or {0,1}/{1})
        return (m1 * m2, 1)
    if (m1, n1) == (1, 1):
        return q2
    if (m2, n2) == (1, 1):
        return q1
    return None


def translate(
    pattern: str, *, extended: bool, sed: bool = False, multiline: bool = False,
    buffer: bool = False, dotall: bool = False, group_offset: int = 0, utf8: bool = False,
) -> tuple[str, int, tuple[str, ...]]:
    """POSIX ``pattern`` -> (regex-module pattern, number of groups, warnings)."""
    p = pattern
    n = len(p)
    i = 0
    stack: list[_Frame] = [_Frame(0)]
    ngroups = group_offset
    completed: set[int] = set()
    warnings: list[str] = []
    ml = multiline or buffer
    caret = "(?m:^)" if ml else "(?:^)"
    dollar = "(?m:$)" if ml else "(?!(?s:.))"
    nlx = "\\n" if buffer else ""
    dot = "(?s:.)" if dotall and not buffer else "."
    # In a UTF-8 locale an invalid byte (a lone surrogate after surrogateescape) is no
    # character: glibc's "." and "[^...]" do not match it.
    bad = "\\udc80-\\udcff" if utf8 else ""
    if bad:
        dot = "[^" + bad + "]" if dotall and not buffer else "[^\\n" + bad + "]"

    def at_start() -> bool:
        # start of the expression, after "(" or "|": where BRE's * and ^ are special/literal
        return not stack[-1].items

    def add(atom: str, quantifiable: bool = True) -> None:
        fr = stack[-1]
        fr.items.append([atom, quantifiable, None])
        if quantifiable:
            fr.zw = False

    dropped = [-1]  # where a repeat with nothing before it was dropped (ERE)

    def quantify(q: tuple[int, int | None], sym: str) -> None:
        items = stack[-1].items
        if sed:
            # GNU sed's glibc syntaxes: ERE (RE_CONTEXT_INVALID_OPS) refuses a repeat with
            # nothing before it (start, "(", "|" or an anchor); BRE (RE_CONTEXT_INVALID_DUP)
            # refuses "*" or "\{" right after another repeat (`ab**`)
            if extended and (not items or not items[-1][1]):
                raise RegexError("Invalid preceding regular expression")
            if not extended and sym in ("*", "{...}") and items and items[-1][1] and items[-1][2] is not None:
                raise RegexError("Invalid preceding regular expression")
        if extended and stack[-1].zw:
            # dfa: only zero-width things since the start, "(" or "|" -> a warning
            warnings.append(f"{sym} at start of expression")
            if sym == "{...}":
                stack[-1].zw = False  # dfa's interval lexer clears laststart
        if not items or not items[-1][1]:
            if extended:
                if not items:
                    dropped[0] = i  # repeats the empty string: dropped (see ")" below)
                    return
                # dfa applies the operator to the anchor itself ("a^?" = "a" then maybe "^")
                items[-1][0] = "(?:" + items[-1][0] + ")"
                items[-1][1] = True
                items[-1][2] = None
            else:
                add(_lit(sym[0]) if sym != "{...}" else "\\{")
                return
        last = items[-1]
        if last[2] is None:
            last[2] = q
            return
        c = _combine(last[2], q)
        if c is not None:
            last[2] = c
        else:
            last[0] = "(?:" + _render(last) + ")"
            last[2] = q

    def bracket(i: int) -> int:
        # i points just after '['
        start = i
        neg = False
        if i < n and p[i] == "^":
            neg = True
            i += 1
        members: list[str] = []
        first = True
        if i < n and p[i] == ":" and not neg:
            # "[:alpha:]" as a whole list: dfa's diagnostic (grep only)
            j = p.find(":]", i + 1)
            if not sed and j > i and p[i + 1:j].isalpha():
                raise RegexError("character class syntax is [[:space:]], not [:space:]")
        prev_char: str | None = None  # last single char, a possible range start
        may_nl = False  # the list can match a newline (matters in buffer mode)

        def read_elem(i: int) -> tuple[str | None, str | None, int]:
            """(single char or None, class text or None, next index)."""
            c = p[i]
            if c == "[" and i + 1 < n and p[i + 1] in ":.=":
                kind = p[i + 1]
                j = p.find(kind + "]", i + 2)
                if j < 0:
                    raise RegexError("Unmatched [, [^, [:, [., or [=")
                name = p[i + 2:j]
                if kind == ":":
                    if name not in CLASSES:
                        raise RegexError("Invalid character class name")
                    return None, "[:" + name + ":]", j + 2
                if len(name) != 1:
                    raise RegexError("Invalid collation character")
                return name, None, j + 2
            if sed and c == "\\" and i + 1 < n:
                e = _sed_escape(p, i + 1)
                if e is not None:
                    return e[0], None, e[1]
                if p[i + 1] == "\\" or p[i + 1] == "]":
                    return p[i + 1], None, i + 2
            return c, None, i + 1

        if i >= n:
            # glibc: the pattern ends right after "[" or "[^" (grep 'a[')
            raise RegexError("Invalid regular expression")
        while True:
            if i >= n:
                raise RegexError("Unmatched [, [^, [:, [., or [=")
            c = p[i]
            if c == "]" and not first:
                i += 1
                break
            if c == "-" and not first and i + 1 < n and p[i + 1] != "]":
                # glibc: a '-' that starts an element after the first and is not last in
                # the list (`[1-3-5]`, `[a-c-e]`) is REG_ERANGE
                raise RegexError("Invalid range end")
            first = False
            ch, cls, i = read_elem(i)
            if cls is not None:
                members.append(cls)
                if cls in ("[:space:]", "[:cntrl:]"):
                    may_nl = True
                prev_char = None
                continue
            assert ch is not None
            # a range "x-y" (a '-' right before ']' is literal)
            if i + 1 < n and p[i] == "-" and p[i + 1] != "]":
                lo = ch
                hi, hcls, j = read_elem(i + 1)
                if hcls is not None:
                    raise RegexError("Invalid range end")
                assert hi is not None
                if ord(hi) < ord(lo):
                    raise RegexError("Invalid range end")
                members.append(_set_lit(lo) + "-" + _set_lit(hi))
                if lo <= "\n" <= hi:
                    may_nl = True
                i = j
                prev_char = None
                continue
            members.append(_set_lit(ch))
            if ch == "\n":
                may_nl = True
            prev_char = ch
        _ = (start, prev_char)
        body = "".join(members)
        if neg:
            add("[^" + body + nlx + bad + "]")
        else:
            if buffer and may_nl:
                # a class or range may contain the newline, which must not match in buffer mode
                add("(?:(?!\\n)[" + body + "])")
            else:
                add("[" + body + "]")
        return i

    def interval(i: int) -> int | None:
        """Parse an interval body at p[i:] (after '{' or '\\{'); return next index, or None
        when ERE treats the '{' as a literal. Raises for glibc's REG_BADBR/EBRACE/ESIZE."""
        close = "}" if extended else "\\}"

        def number(i: int) -> tuple[int, int, str]:
            # glibc fetch_number: (-1 none, -2 invalid, value), index after, stop token
            num = -1
            while True:
                if i >= n:
                    return -2, i, "end"
                if p.startswith(close, i):
                    return num, i + len(close), "close"
                c = p[i]
                if c == ",":
                    return num, i + 1, ","
                if not extended and c == "\\":
                    # any other escape is a non-digit token
                    i += 2
                    num = -2
                    continue
                if num == -2 or not c.isdigit() or not c.isascii():
                    num = -2
                else:
                    num = int(c) if num == -1 else min(RE_DUP_MAX + 1, num * 10 + int(c))
                i += 1

        start, j, tok = number(i)
        if start == -1:
            if tok == ",":
                start = 0
            else:
                raise RegexError("Invalid content of \\{\\}")
        end: int
        if start != -2:
            if tok == "close":
                end = start
            elif tok == ",":
                end, j, tok = number(j)
            else:
                end = -2
        else:
            end = -2
        if start == -2 or end == -2:
            if extended:
                return None
            raise RegexError("Unmatched \\{" if tok == "end" else "Invalid content of \\{\\}")
        if (end != -1 and start > end) or tok != "close":
            raise RegexError("Invalid content of \\{\\}")
        if (start if end == -1 else end) > RE_DUP_MAX:
            raise RegexError("Regular expression too big")
        quantify((start, None if end == -1 else end), "{...}")
        return j

    while i < n:
        c = p[i]
        if c == "\\":
            if i + 1 >= n:
                raise RegexError("Trailing backslash")
            d = p[i + 1]
            i += 2
            if not extended and d == "(":
                ngroups += 1
                stack.append(_Frame(ngroups))
            elif not extended and d == ")":
                if len(stack) == 1:
                    raise RegexError("Unmatched ) or \\)")
                fr = stack.pop()
                body = "|".join(fr.alts + [fr.flush()])
                completed.add(fr.group)
                add("(" + body + ")")
            elif not extended and d == "|":
                fr = stack[-1]
                fr.alts.append(fr.flush())
                fr.items = []
                fr.zw = True
            elif not extended and d in "+?":
                quantify((1, None) if d == "+" else (0, 1), d)
            elif not extended and d == "{":
                if at_start() or not stack[-1].items[-1][1]:
                    if sed:
                        raise RegexError("Invalid preceding regular expression")
                    add("\\{")  # dfa: "\{" with nothing to repeat is a literal in BRE
                    continue
                r = interval(i)
                assert r is not None
                i = r
            elif not extended and d == "}":
                add("\\}")
            elif d in "123456789":
                g = int(d) + group_offset
                if g not in completed:
                    raise RegexError("Invalid back reference")
                add("(?:\\%d)" % g)
            elif d == "w":
                add("\\w")
            elif d == "W":
                add("[^\\w" + nlx + "]" if nlx else "\\W")
            elif d == "s":
                add("[^\\S\\n]" if buffer else "\\s")
            elif d == "S":
                add("\\S")
            elif d == "b":
                add("\\b", False)
            elif d == "B":
                add("\\B", False)
            elif d == "<":
                add("\\b(?=\\w)", False)
            elif d == ">":
                add("\\b(?<=\\w)", False)
            elif d == "`":
                add("(?m:^)" if buffer else "\\A", False)
            elif d == "'":
                add("(?m:$)" if buffer else "\\Z", False)
            else:
                e = _sed_escape(p, i - 1) if sed else None
                if e is not None:
                    add(_lit(e[0]))
                    i = e[1]
                else:
                    add(_lit(d))
            continue
        i += 1
        if c == "[":
            i = bracket(i)
        elif c == ".":
            add(dot)
        elif c == "*":
            if not extended and at_start():
                add("\\*")
            else:
                quantify((0, None), "*")
        elif c == "^":
            if extended or at_start():
                add(caret, False)
            else:
                add("\\^")
        elif c == "$":
            if extended:
                add(dollar, False)
            else:
                # BRE: an anchor only at the end of the pattern or before \) or \|
                rest = p[i:]
                if not rest or rest.startswith("\\)") or rest.startswith("\\|"):
                    add(dollar, False)
                else:
                    add("\\$")
        elif extended and c in "+?":
            quantify((1, None) if c == "+" else (0, 1), c)
        elif extended and c == "{":
            items = stack[-1].items
            if not items or not items[-1][1]:
                # dfa drops a valid interval with nothing before it; an invalid one is literal
                save = len(items)
                r = interval(i)
                if r is None:
                    add("\\{")
                else:
                    del stack[-1].items[save:]
                    i = r
                continue
            r = interval(i)
            if r is None:
                add("\\{")
            else:
                i = r
        elif extended and c == "(":
            ngroups += 1
            stack.append(_Frame(ngroups))
        elif extended and c == ")":
            if len(stack) == 1 or dropped[0] == i - 1:
                # (glibc parses the token after a dropped "*", "+" or "?" as an expression
                # of its own, where ")" is ordinary: `(*)b` is "Unmatched ( or \(")
                add("\\)")  # glibc ERE: an unmatched ')' is an ordinary character
            else:
                fr = stack.pop()
                body = "|".join(fr.alts + [fr.flush()])
                completed.add(fr.group)
                add("(" + body + ")")
        elif extended and c == "|":
            fr = stack[-1]
            fr.alts.append(fr.flush())
            fr.items = []
            fr.zw = True
        else:
            add(_lit(c))
    if len(stack) > 1:
        raise RegexError("Unmatched ( or \\(")
    fr = stack[0]
    out = "|".join(fr.alts + [fr.flush()])
    return out, ngroups - group_offset, tuple(warnings)


@lru_cache(maxsize=512)
def compile_posix(
    pattern: str | bytes, *, extended: bool, icase: bool = False, multiline: bool = False,
    buffer: bool = False, utf8: bool = True, sed: bool = False, dotall: bool = False,
) -> PosixRegex:
    """Compile a POSIX BRE (``extended=False``) or ERE; cached. Raises RegexError."""
    if isinstance(pattern, bytes):
        pattern = to_text(pattern, utf8)
    src, ngroups, warns = translate(
        pattern, extended=extended, sed=sed, multiline=multiline, buffer=buffer, dotall=dotall, utf8=utf8
    )
    flags = regex.VERSION0
    if icase:
        flags |= regex.IGNORECASE
    if not utf8:
        flags |= regex.ASCII
    try:
        rx = regex.compile(src, flags | regex.POSIX)
        fast = regex.compile(src, flags)
    except regex.error as exc:  # pragma: no cover - translation bug, report it readably
        raise RegexError(f"Invalid regular expression ({exc})") from exc
    except (OverflowError, RecursionError) as exc:
        raise RegexError("Regular expression too big") from exc
    return PosixRegex(rx, fast, ngroups, src, warns)


def _wrap(src: str, whole: str, buffer: bool) -> str:
    if whole == "x":
        return ("(?m:^)(?:%s)(?m:$)" if buffer else "(?:^)(?:%s)(?!(?s:.))") % src
    if whole == "w":
        return "(?<!\\w)(?:%s)(?!\\w)" % src
    return src


@lru_cache(maxsize=128)
def compile_patterns(
    patterns: tuple[str, ...], *, mode: str = "G", icase: bool = False, whole: str = "",
    buffer: bool = False, utf8: bool = True,
) -> PosixRegex:
    """grep's pattern list (mode G/E/F/P) as one alternation; each pattern keeps its own
    back-reference numbering. ``whole`` is 'w' (-w), 'x' (-x) or ''. Raises RegexError."""
    parts: list[str] = []
    warns: list[str] = []
    total = 0
    for pat in patterns:
        if mode == "F":
            src = "".join(_lit(c) for c in pat)
        elif mode == "P":
            src = pat
            try:
                total += regex.compile(pat).groups
            except regex.error as exc:
                raise RegexError(str(exc)) from exc
            except (OverflowError, RecursionError) as exc:
                raise RegexError("regular expression is too large") from exc
        else:
            src, ng, w = translate(pat, extended=(mode == "E"), buffer=buffer, group_offset=total, utf8=utf8)
            total += ng
            warns.extend(w)
        parts.append(src)
    if not parts:
        src = "(?!)"
    elif len(parts) == 1:
        src = _wrap(parts[0], whole, buffer)
    else:
        src = _wrap("|".join("(?:%s)" % x for x in parts), whole, buffer)
    flags = regex.VERSION0
    if icase:
        flags |= regex.IGNORECASE
    if not utf8:
        flags |= regex.ASCII
    if mode == "P" and buffer:
        flags |= regex.MULTILINE
    if mode == "P" and not icase:
        # grep 3.8 runs PCRE2 without UCP: \w \d \s \b and POSIX classes are ASCII-only
        # (with -i the Unicode mode is kept for PCRE2's UTF case folding)
        flags |= regex.ASCII
    try:
        rx = regex.compile(src, flags | regex.POSIX) if mode != "P" else regex.compile(src, flags)
        fast = regex.compile(src, flags)
    except regex.error as exc:
        raise RegexError(f"Invalid regular expression ({exc})") from exc
    except (OverflowError, RecursionError) as exc:
        raise RegexError("Regular expression too big") from exc
    return PosixRegex(rx, fast, total, src, tuple(warns))
