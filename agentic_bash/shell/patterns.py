"""Bash glob patterns: matching (case, [[ == ]], ${x#p}, ${x/p/r}) and pathname expansion over a FileSystem."""

# Pattern strings use one convention everywhere: a character that must match literally
# (it came from a quoted part or a backslash escape) is preceded by a backslash. Everything
# else is pattern syntax: ``* ? [...]`` and, with extglob, ``?( *( +( @( !(`` groups.
#
# Matching runs on the ``regex`` module; every matching entry point takes ``timeout=`` (the
# caller's remaining budget) so a pathological extglob pattern cannot outlive the deadline
# (on the wall clock: limits.bounded_match, as regex's own counts CPU time).
# Patterns without extglob groups compile ``*`` runs to atomic lazy groups, which keeps
# ``*a*a*a*b`` linear (leftmost occurrence of fixed-length pieces is always right).
#
# Bash quirks reproduced here:
# * An unterminated ``[`` is a literal ``[`` and scanning resumes after it, so ``[[:alpha:]``
#   matches the two characters ``[a``. ``]`` first in a bracket (after ``!``/``^``) is
#   literal; ``[z-a]`` and unknown classes (``[[:foo:]]``) match nothing.
# * ``${x//p/r}`` tries every start position but the end of a non-empty string, so an
#   empty match inserts ``r`` before each character but not after the last. On an empty
#   string only a pattern starting with ``*`` can match (except for ``/%``). An empty
#   pattern leaves the value alone except with ``/#`` and ``/%`` (prepend/append).
# * After a top-level ``*``, an ``@(..)``/``+(..)``/``!(..)`` group is only tried where at
#   least one character is left, but reaching ``*!(..)`` at the end of the string matches
#   whatever follows (bash's sm_loop.c); ``${x/p/r}`` first checks ``*p*`` (``p*`` for
#   ``/#``, ``*p`` for ``/%``) against the whole remaining string, as match_upattern does.
# * Known differences: the ``*`` quirk above is not applied inside groups (a random
#   differential test of deeply nested extglob patterns agrees with bash on > 99.5%);
#   with globstar, which symlinked directories ``**`` lists when more components follow
#   is only approximated (bash decides by lstat at places we do not fully mirror).
# * With nocase(match|glob) bash folds characters but tests ``[[:upper:]]`` and friends on
#   the original character, so ``[[:upper:]]`` still does not match ``a``.
# * Pathname expansion: ``.`` and ``..`` never match (bash 5.2 globskipdots); names starting
#   with ``.`` need a literal leading dot unless dotglob; results are sorted by byte value
#   of the whole path (C.UTF-8 collation); ``**`` (globstar) does not descend into
#   symlinked directories; ``dir/**`` also yields ``dir/`` itself.

from __future__ import annotations

import functools
import stat as _stat
import time
from typing import TYPE_CHECKING, Any, Callable

from ..limits import bounded_match as _bm

from agentic_bash.vfs.paths import normalize

if TYPE_CHECKING:
    import regex

    from agentic_bash.vfs.base import FileSystem
else:
    class _Regex:
        """The ``regex`` module, imported at its first use (fresh15): its import is ~12 ms of
        CPU, a tenth of the zygote's preload, and a sandbox's first command seldom matches a
        pattern. The first attribute read imports it and rebinds ``regex`` here."""

        __slots__ = ()

        def __getattr__(self, name: str) -> Any:
            import regex as mod
            globals()["regex"] = mod
            return getattr(mod, name)

    import importlib.util
    if importlib.util.find_spec("regex") is None:
        # absent: the ImportError is raised here, at import, as before (compat12: the
        # sandbox's inner executor then falls back to bash and the report says why)
        import regex
    else:
        regex = _Regex()

__all__ = [
    "compile", "fnmatch", "glob", "globignore", "has_magic", "replace", "strip_prefix", "strip_suffix",
    "translate", "unescape",
]

_CLASSES = {
    "alpha": "[:alpha:]", "digit": "0-9", "alnum": "[:alnum:]", "upper": "[:upper:]",
    "lower": "[:lower:]", "space": "[:space:]", "blank": "[:blank:]", "punct": "[:punct:]",
    "print": "[:print:]", "graph": "[:graph:]", "cntrl": "[:cntrl:]", "xdigit": "0-9A-Fa-f",
    "word": "\\w", "ascii": "\\x00-\\x7f",
}
_EXT = "?*+@!"


def _set_escape(ch: str) -> str:
    if ch in "\\]^-[":
        return "\\" + ch
    return ch


def _find_close_paren(p: str, i: int) -> int:
    """Index of the ``)`` closing the group whose ``(`` is at ``i``, or -1."""
    depth = 0
    n = len(p)
    j = i
    while j < n:
        c = p[j]
        if c == "\\":
            j += 2
            continue
        if c == "[":
            end = _bracket_end(p, j)
            if end > 0:
                j = end
                continue
            # bash's glob_patscan: an unclosed `[` runs to the end, so the group never
            # closes and `*(a|b[)` is no extglob group at all
            return -1
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return -1


def _bracket_end(p: str, i: int) -> int:
    """Index just past the ``]`` closing the bracket expression at ``i``, or -1."""
    n = len(p)
    j = i + 1
    if j < n and p[j] in "!^":
        j += 1
    first = True
    while j < n:
        c = p[j]
        if c == "]" and not first:
            return j + 1
        first = False
        if c == "\\":
            j += 2
            continue
        if c == "[" and j + 1 < n and p[j + 1] in ":.=":
            close = p.find(p[j + 1] + "]", j + 2)
            if close >= 0:
                j = close + 2
                continue
        j += 1
    return -1


def _split_alts(p: str) -> list[str]:
    alts = []
    depth = 0
    start = 0
    j = 0
    n = len(p)
    while j < n:
        c = p[j]
        if c == "\\":
            j += 2
            continue
        if c == "[":
            end = _bracket_end(p, j)
            if end > 0:
                j = end
                continue
            # bash's glob_patscan: an unclosed `[` runs to the end, so the group never
            # closes and `*(a|b[)` is no extglob group at all
            return -1
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            alts.append(p[start:j])
            start = j + 1
        j += 1
    alts.append(p[start:])
    return alts


class _Translator:
    def __init__(self, extglob: bool, pathname: bool, nocase: bool = False) -> None:
        self.extglob = extglob
        self.nocase = nocase
        self.pathname = pathname
        self.any = "[^/]" if pathname else "."
        self.groups = 0
        self.depth = 0
        self.atomic = False
        self.reverse = False  # inside a lookbehind: the regex engine matches right to left

    def bracket(self, p: str, i: int) -> tuple[str, int] | None:
        n = len(p)
        j = i + 1
        neg = False
        if j < n and p[j] in "!^":
            neg = True
            j += 1
        items: list[str] = []
        classes: list[str] = []  # kept apart: bash tests classes on the unfolded character
        never = False
        first = True
        while True:
            if j >= n:
                return None
            c = p[j]
            if c == "]" and not first:
                j += 1
                break
            first = False
            if c == "[" and j + 1 < n and p[j + 1] in ":.=":
                kind = p[j + 1]
                close = p.find(kind + "]", j + 2)
                if close >= 0:
                    name = p[j + 2:close]
                    j = close + 2
                    if kind == ":":
                        cls = _CLASSES.get(name)
                        if cls is None:
                            never = True
                        elif self.nocase:
                            classes.append(cls)
                        else:
                            items.append(cls)
                    else:
                        items.extend(_set_escape(ch) for ch in name)
                    continue
            if c == "\\" and j + 1 < n:
                lo = p[j + 1]
                j += 2
            else:
                lo = c
                j += 1
            if j + 1 < n and p[j] == "-" and p[j + 1] != "]":
                if p[j + 1] == "\\" and j + 2 < n:
                    hi = p[j + 2]
                    j += 3
                else:
                    hi = p[j + 1]
                    j += 2
                if lo <= hi:
                    items.append(_set_escape(lo) + "-" + _set_escape(hi))
                continue
            items.append(_set_escape(lo))
        if never:
            return "(?!)", j
        if classes:
            cl = "(?-i:[" + "".join(classes) + "])"
            st = "[" + "".join(items) + "]" if items else "(?!)"
            if neg:
                return f"(?!{cl})(?!{st}){self.any}", j
            return f"(?:{st}|{cl})" + ("(?<!/)" if self.pathname else ""), j
        if self.pathname and neg:
            items.append("/")
        if not items:
            return (self.any if neg else "(?!)"), j
        body = "".join(items)
        if self.pathname and not neg:
            return f"(?!/)[{body}]", j
        return ("[^" if neg else "[") + body + "]", j

    def _negation(self, body: str) -> str:
        # !(p): any text T with T not a full match of p. Matching forwards, the lookahead
        # captures the rest of the subject at T's start and the lookbehind at T's end
        # anchors p's match to start exactly there. Inside a lookbehind (a nested
        # negation) the regex runs right to left, so the mirrored form captures the rest at
        # T's end first and checks p with a lookahead at T's start.
        self.groups += 1
        g = f"neg{self.groups}"
        self.reverse = not self.reverse
        try:
            alts = self._alts(body)
        finally:
            self.reverse = not self.reverse
        if self.reverse:
            return f"(?!(?:{alts})(?P={g})\\Z)(?:{self.any}*?)(?=(?P<{g}>.*))"
        return f"(?=(?P<{g}>.*))(?:{self.any}*?)(?<!(?=(?P={g})\\Z)(?:{alts}))"

    def _alts(self, body: str) -> str:
        self.depth += 1
        try:
            return "|".join(self.translate(a) for a in _split_alts(body))
        finally:
            self.depth -= 1

    def translate(self, p: str) -> str:
        out: list[object] = []
        i = 0
        n = len(p)
        while i < n:
            c = p[i]
            if c == "\\":
                if i + 1 < n:
                    out.append(regex.escape(p[i + 1]))
                    i += 2
                else:
                    out.append("\\\\")
                    i += 1
                continue
            if self.extglob and c in _EXT and i + 1 < n and p[i + 1] == "(":
                close = _find_close_paren(p, i + 1)
                if close > 0:
                    if c == "!":
                        out.append(self._negation(p[i + 2:close]))
                        i = close + 1
                        continue
                    alts = self._alts(p[i + 2:close])
                    i = close + 1
                    if c == "?":
                        out.append(f"(?:{alts})?")
                    elif c == "*":
                        out.append(f"(?:{alts})*")
                    elif c == "+":
                        out.append(f"(?:{alts})+")
                    else:
                        out.append(f"(?:{alts})")
                    continue
                # gmatch (EXTMATCH): a group that never closes compares the rest of the
                # pattern with the rest of the string as plain text
                out.append(regex.escape(p[i:]))
                break
            if c == "*":
                i += 1
                q = 0
                while i < n and p[i] in "*?" and not (self.extglob and i + 1 < n and p[i + 1] == "("):
                    q += p[i] == "?"
                    i += 1
                out.append(self.any * q)
                nxt = p[i] if i + 1 < n and p[i + 1] == "(" and self.extglob else ""
                close = _find_close_paren(p, i + 1) if nxt and nxt in "!@+" else -1
                if self.depth == 0 and close > 0:
                    # bash's gmatch tries what follows a `*` only at positions before the
                    # end of the string, so `!(..)`, `@(..)`, `+(..)` after a `*` never
                    # match an empty tail; but reaching `*!(..)` at the very end of the
                    # string matches whatever follows (sm_loop.c quirks).
                    out.append(f"{self.any}*?(?={self.any})")
                    if nxt == "!":
                        neg = self._negation(p[i + 2:close])
                        rest = self.translate(p[close + 1:])
                        out[-1] = f"(?:\\Z|{out[-1]}{neg}{rest})"
                        return self._assemble(out)
                    continue
                out.append(_STAR)
                continue
            if c == "?":
                out.append(self.any)
                i += 1
                continue
            if c == "[":
                r = self.bracket(p, i)
                if r is not None:
                    out.append(r[0])
                    i = r[1]
                    continue
            out.append(regex.escape(c))
            i += 1
        return self._assemble(out)

    def _assemble(self, out: list[object]) -> str:
        star = self.any + "*"
        if self.depth or not self.atomic or _STAR not in out:
            return "".join(star if x is _STAR else x for x in out)  # type: ignore[misc]
        # Without extglob groups every piece between stars has a fixed length, so taking
        # the leftmost occurrence of each middle piece is always right: atomic lazy groups
        # keep `*a*a*a*b` linear instead of exponential, and `*` at the end stays greedy.
        segs: list[list[str]] = [[]]
        for x in out:
            if x is _STAR:
                segs.append([])
            else:
                segs[-1].append(x)  # type: ignore[arg-type]
        parts = ["".join(segs[0])]
        for seg in segs[1:-1]:
            parts.append(f"(?>{self.any}*?{''.join(seg)})" if seg else "")
        parts.append(star + "".join(segs[-1]))
        return "".join(parts)


_STAR = object()


class _Clock:
    """Remaining time for the regex calls of one operation (``timeout=None``: unlimited)."""

    __slots__ = ("deadline",)

    def __init__(self, timeout: float | None) -> None:
        self.deadline = None if timeout is None else time.monotonic() + timeout

    def left(self) -> float | None:
        if self.deadline is None:
            return None
        r = self.deadline - time.monotonic()
        if r <= 0:
            raise TimeoutError("pattern matching timed out")
        return r


def _has_ext_group(p: str) -> bool:
    i = 0
    n = len(p)
    while i < n:
        c = p[i]
        if c == "\\":
            i += 2
            continue
        if c in _EXT and i + 1 < n and p[i + 1] == "(" and _find_close_paren(p, i + 1) > 0:
            return True
        i += 1
    return False


def translate(pattern: str, *, extglob: bool = True, nocase: bool = False, pathname: bool = False) -> str:
    """Regex source (``regex`` module) for a whole-string match of ``pattern``."""
    t = _Translator(extglob, pathname, nocase)
    t.atomic = not (extglob and _has_ext_group(pattern))
    body = t.translate(pattern)
    return ("(?si)" if nocase else "(?s)") + body


@functools.lru_cache(maxsize=2048)
def _compile(pattern: str, extglob: bool, nocase: bool, pathname: bool, posix: bool) -> regex.Pattern[str]:
    src = translate(pattern, extglob=extglob, nocase=nocase, pathname=pathname)
    return regex.compile(src, regex.POSIX if posix else 0)


def compile(pattern: str, *, extglob: bool = True, nocase: bool = False, pathname: bool = False) -> regex.Pattern[str]:  # noqa: A001
    """The compiled whole-string matcher for ``pattern`` (use ``.fullmatch``); LRU-cached."""
    return _compile(pattern, extglob, nocase, pathname, False)


def fnmatch(pattern: str, s: str, *, extglob: bool = True, nocase: bool = False, timeout: float | None = None) -> bool:
    """``case`` arms and ``[[ s == pattern ]]``: ``*`` and ``?`` match ``/`` and leading dots.

    ``timeout`` (seconds) bounds the regex work; TimeoutError when exceeded.
    """
    if not nocase and not has_magic(pattern, extglob=extglob):
        return unescape(pattern) == s
    return _bm(_compile(pattern, extglob, nocase, False, False).fullmatch, s, left=timeout) is not None


def has_magic(pattern: str, *, extglob: bool = True) -> bool:
    """True when ``pattern`` has an unescaped ``*``, ``?``, ``[...]`` or extglob group."""
    # bash's glob_pattern_p: `[` counts only when a `]` follows somewhere
    bopen = False
    i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c in "*?":
            return True
        if c == "[":
            bopen = True
        elif c == "]" and bopen:
            return True
        elif extglob and c in "+@!" and i + 1 < n and pattern[i + 1] == "(":
            return True
        i += 1
    return False


def unescape(pattern: str) -> str:
    """Drop the escaping backslashes: the literal text the pattern stands for."""
    if "\\" not in pattern:
        return pattern
    out = []
    i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            out.append(pattern[i + 1])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def strip_prefix(s: str, pattern: str, longest: bool, *, extglob: bool = True, nocase: bool = False,
                 timeout: float | None = None) -> str:
    """``${s#pattern}`` (shortest) / ``${s##pattern}`` (longest)."""
    if not nocase and not has_magic(pattern, extglob=extglob):
        lit = unescape(pattern)
        return s[len(lit):] if s.startswith(lit) else s
    rx = _compile(pattern, extglob, nocase, False, False)
    clock = _Clock(timeout)
    n = len(s)
    for i in (range(n, -1, -1) if longest else range(n + 1)):
        if _bm(rx.fullmatch, s, 0, i, left=clock.left()):
            return s[i:]
    return s


def strip_suffix(s: str, pattern: str, longest: bool, *, extglob: bool = True, nocase: bool = False,
                 timeout: float | None = None) -> str:
    """``${s%pattern}`` (shortest) / ``${s%%pattern}`` (longest)."""
    if not nocase and not has_magic(pattern, extglob=extglob):
        lit = unescape(pattern)
        return s[: len(s) - len(lit)] if lit and s.endswith(lit) else s
    rx = _compile(pattern, extglob, nocase, False, False)
    clock = _Clock(timeout)
    n = len(s)
    for i in (range(n + 1) if longest else range(n, -1, -1)):
        if _bm(rx.fullmatch, s, i, n, left=clock.left()):
            return s[:i]
    return s


def _quick_reject_pattern(pattern: str, mode: str, extglob: bool) -> str:
    """bash's match_upattern first matches ``*pat*`` (``pat*`` for /#, ``*pat`` for /%) against the
    whole remaining string and gives up when that fails; with the ``*`` quirks this can differ."""
    star_paren = extglob and pattern.startswith("*(")
    ends_star = pattern.endswith("*")
    if pattern.startswith("*") and not star_paren and ends_star:
        return pattern
    out = pattern
    if mode != "prefix" and (not pattern.startswith("*") or star_paren):
        out = "*" + out
    if mode != "suffix":
        if ends_star:
            # a trailing `*` escaped by an odd number of backslashes needs another `*`
            k = len(pattern) - 2
            bs = 0
            while k >= 0 and pattern[k] == "\\":
                bs += 1
                k -= 1
            if bs % 2:
                out += "*"
        else:
            out += "*"
    return out


def replace(s: str, pattern: str, repl: str | Callable[[str], str], mode: str, *, extglob: bool = True,
            nocase: bool = False, timeout: float | None = None) -> str:
    """``${s/p/r}`` (mode ``first``), ``${s//p/r}`` (``all``), ``${s/#p/r}`` (``prefix``), ``${s/%p/r}`` (``suffix``).

    ``repl`` may be a function of the matched text (for patsub_replacement's ``&``).
    ``nocase`` is bash's nocasematch, which applies to ``${x/p/r}`` but not to ``${x#p}``.
    """
    if mode not in ("first", "all", "prefix", "suffix"):
        raise ValueError(f"bad replace mode {mode!r}")
    sub: Callable[[str], str] = repl if callable(repl) else (lambda _m, r=repl: r)  # type: ignore[misc]
    n = len(s)
    if not pattern:
        if mode == "prefix":
            return sub("") + s
        if mode == "suffix":
            return s + sub("")
        return s
    if not nocase and not has_magic(pattern, extglob=extglob):
        lit = unescape(pattern)
        if mode == "prefix":
            return sub(lit) + s[len(lit):] if s.startswith(lit) else s
        if mode == "suffix":
            return s[:n - len(lit)] + sub(lit) if s.endswith(lit) else s
        if lit and not callable(repl):
            return s.replace(lit, repl, 1 if mode == "first" else -1)
    clock = _Clock(timeout)
    quick = _compile(_quick_reject_pattern(pattern, mode, extglob), extglob, nocase, False, False)
    star_first = pattern.startswith("*")
    if mode in ("prefix", "suffix"):
        if not _bm(quick.fullmatch, s, left=clock.left()):
            return s
        if mode == "prefix" and not star_first and (n == 0 or not _first_char_ok(pattern, s[0], nocase)):
            return s  # bash's match_pattern_char
        rx = _compile(pattern, extglob, nocase, False, False)
        if mode == "prefix":
            for i in range(n, -1, -1):
                if _bm(rx.fullmatch, s, 0, i, left=clock.left()):
                    return sub(s[:i]) + s[i:]
            return s
        for i in range(n + 1):
            if _bm(rx.fullmatch, s, i, n, left=clock.left()):
                return s[:i] + sub(s[i:])
        return s
    rx = _compile(pattern, extglob, nocase, False, True)  # POSIX: leftmost-longest
    if n == 0:
        # only a pattern starting with `*` may match "" (bash's match_pattern_char)
        return sub("") if star_first and _bm(quick.fullmatch, s, left=clock.left()) and rx.fullmatch(s) else s
    out: list[str] = []
    pos = 0
    while pos < n:
        if not _bm(quick.fullmatch, s, pos, left=clock.left()):
            break
        m = _bm(rx.search, s, pos, left=clock.left())
        if m is None or (m.start() >= n and not star_first):
            break
        a, b = m.span()
        if a >= n:
            break
        out.append(s[pos:a])
        out.append(sub(s[a:b]))
        if b == a:
            out.append(s[a])
            b = a + 1
        pos = b
        if mode == "first":
            break
    out.append(s[pos:])
    return "".join(out)


def _first_char_ok(pattern: str, ch: str, nocase: bool = False) -> bool:
    """bash's match_pattern_char for a non-empty string (anchored /# replacement)."""
    c = pattern[0]
    nxt = pattern[1:2]
    if nocase:
        ch, c, nxt = ch.lower(), c.lower(), nxt.lower()
    if c == "\\":
        return nxt == ch
    if c in "?*[":
        return True
    if c in "+!@":
        return nxt == "(" or ch == c
    return ch == c


# ------------------------------------------------------------------ pathname expansion


def _allows_hidden(component: str) -> bool:
    """Whether a component may match names starting with ``.`` (without dotglob)."""
    if component.startswith(".") or component.startswith("\\."):
        return True
    if len(component) > 1 and component[0] in _EXT and component[1] == "(":
        close = _find_close_paren(component, 1)
        if close > 0:
            return any(a.startswith((".", "\\.")) for a in _split_alts(component[2:close]))
    return False


def _is_dir(fs: FileSystem, path: str, mode: int | None = None) -> bool:
    if mode is not None and _stat.S_ISDIR(mode):
        return True
    if mode is not None and not _stat.S_ISLNK(mode):
        return False
    try:
        return fs.stat(path).is_dir
    except OSError:
        return False


def _fs_join(base: str, name: str) -> str:
    return base + name if base.endswith("/") else base + "/" + name


def glob(fs: FileSystem, pattern: str, cwd: str, *, dotglob: bool = False, nocaseglob: bool = False,
         globstar: bool = False, extglob: bool = True, timeout: float | None = None,
         skipdots: bool = True) -> list[str]:
    """Pathname expansion of ``pattern``; sorted matches, or ``[]`` when nothing matches.

    ``timeout`` bounds the whole walk (TimeoutError), as a ``**`` over a huge tree may be slow.
    ``skipdots=False`` (``shopt -u globskipdots``) lets a component with a literal leading
    dot match ``.`` and ``..``.
    """
    clock = _Clock(timeout)
    if not has_magic(pattern, extglob=extglob):
        lit = unescape(pattern)
        return [lit] if lit and fs.lexists(normalize(lit, cwd)) else []
    parts = pattern.split("/")
    lead = ""
    start = cwd
    if pattern.startswith("/"):
        lead, start, parts = "/", "/", parts[1:]
    # each state: (components of the text so far, absolute fs path)
    states: list[tuple[tuple[str, ...], str]] = [((), start)]
    last_index = len(parts) - 1
    for idx, comp in enumerate(parts):
        last = idx == last_index
        new: list[tuple[tuple[str, ...], str]] = []
        if comp == "":
            # `a//b` keeps its slashes; a trailing slash keeps directories only
            for comps, path in states:
                if not last or _is_dir(fs, path):
                    new.append((comps + ("",), path))
        elif globstar and comp == "**":
            # zero directories: `dir/**` also yields `dir/`, but `*/**` yields `d` (bash
            # globs a magic directory part separately and joins without the slash)
            selftail = ("",) if not any(has_magic(c, extglob=extglob) for c in parts[:idx]) else ()
            # a symlinked directory is listed by `**` and `**/` but is no place to look for
            # what follows (`**/x` does not search inside it)
            links_ok = last or (idx + 1 == last_index and parts[-1] == "")
            for comps, path in states:
                if not last or idx > 0:
                    new.append((comps + selftail if last else comps, path))
                for rel, full, isdir, islink in _walk(fs, path, dotglob, clock):
                    if last or (isdir and (links_ok or not islink)):
                        new.append((comps + (rel,), full))
        elif not has_magic(comp, extglob=extglob):
            name = unescape(comp)
            for comps, path in states:
                # `x/..` needs x to be a directory: the kernel resolves it, not a lexer
                if name in (".", "..") and not _is_dir(fs, path):
                    continue
                new.append((comps + (name,), normalize(name, path)))
        else:
            rx = _compile(comp, extglob, nocaseglob, True, False)
            hidden_ok = dotglob or _allows_hidden(comp)
            dots = not skipdots and _allows_hidden(comp)
            for comps, path in states:
                try:
                    entries = list(fs.scandir(path))
                except OSError:
                    continue
                if dots:
                    for name in (".", ".."):
                        if _bm(rx.fullmatch, name, left=clock.left()):
                            new.append((comps + (name,), normalize(name, path)))
                for e in entries:
                    name = e.name
                    if name in (".", "..") or (name.startswith(".") and not hidden_ok):
                        continue
                    if not _bm(rx.fullmatch, name, left=clock.left()):
                        continue
                    full = _fs_join(path, name)
                    if not last and not _is_dir(fs, full, e.st_mode):
                        continue
                    new.append((comps + (name,), full))
        states = new
        if not states:
            return []
    result = set()
    for comps, path in states:
        text = lead + "/".join(comps)
        # literal components were not checked while walking
        if text and fs.lexists(path):
            result.add(text)
    return sorted(result, key=lambda t: t.encode("utf-8", "surrogateescape"))


def _split_colons(spec: str) -> list[str]:
    """Split a GLOBIGNORE value at colons outside brackets, extglob groups and backslashes."""
    out = []
    start = j = 0
    n = len(spec)
    while j < n:
        c = spec[j]
        if c == "\\":
            j += 2
            continue
        if c == "[":
            end = _bracket_end(spec, j)
            if end > 0:
                j = end
                continue
        elif c in _EXT and j + 1 < n and spec[j + 1] == "(":
            close = _find_close_paren(spec, j + 1)
            if close > 0:
                j = close + 1
                continue
        elif c == ":":
            out.append(spec[start:j])
            start = j + 1
        j += 1
    out.append(spec[start:])
    return out


def globignore(paths: list[str], spec: str, *, extglob: bool = True, nocase: bool = False) -> list[str]:
    """Drop the ``paths`` that GLOBIGNORE's colon-separated ``spec`` rejects.

    bash (pathexp.c) matches each whole result with FNM_PATHNAME (``*`` stops at ``/``, no
    special leading dot) and always drops results whose last component is ``.`` or ``..``.
    """
    pats = [_compile(p, extglob, nocase, True, False) for p in _split_colons(spec) if p]
    out = []
    for path in paths:
        base = path.rstrip("/").rsplit("/", 1)[-1] if "/" in path.rstrip("/") else path
        if base in (".", ".."):
            continue
        if any(rx.fullmatch(path) for rx in pats):
            continue
        out.append(path)
    return out


def _walk(fs: FileSystem, path: str, dotglob: bool, clock: _Clock, rel: str = "") -> list[tuple[str, str, bool, bool]]:
    """All entries below ``path`` (relative text, fs path, is_dir, is_symlink); symlinked dirs are not entered."""
    clock.left()
    out: list[tuple[str, str, bool, bool]] = []
    try:
        entries = list(fs.scandir(path))
    except OSError:
        return out
    for e in entries:
        name = e.name
        if name in (".", "..") or (name.startswith(".") and not dotglob):
            continue
        full = _fs_join(path, name)
        text = rel + name
        isdir = _is_dir(fs, full, e.st_mode)
        islink = _stat.S_ISLNK(e.st_mode)
        out.append((text, full, isdir, islink))
        if isdir and not islink:
            out.extend(_walk(fs, full, dotglob, clock, text + "/"))
    return out
