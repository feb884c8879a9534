"""Bash's ways of quoting a value for reuse: printf %q, ${x@Q}, declare -p and set (bash 5.2, C.UTF-8)."""

# Strings are Python str; bytes that are not valid UTF-8 arrive as surrogateescape
# code points (U+DC80..U+DCFF) and are quoted as the raw byte, as bash does.
#
# Bash quirks reproduced here:
# * Any non-printable character (C0 controls, DEL, C1 controls, unassigned code points,
#   line/paragraph separators, invalid bytes) switches the whole value to ``$'...'``;
#   inside it non-printables are octal escapes of each UTF-8 byte (``$'\342\200\250'``).
# * %q backslash-quotes `` !"$&'()*,;<>?[\]^`{|}`` everywhere, ``#`` at the start and
#   ``~`` at the start or after ``=``/``:`` (where tilde expansion would happen).
# * ``${x@Q}`` of a lone ``'`` is ``\'``; empty values are ``''``.
# * ``set`` prints a value raw unless it contains shell metacharacters (then single quotes).

from __future__ import annotations

import re
import unicodedata

from .._lazyre import lazy_compile as _lazy_re

__all__ = [
    "ansic_quote", "from_host", "host_bytes", "is_printable", "needs_ansic", "quote_declare", "quote_q", "quote_set",
    "quote_single", "quote_xtrace",
]

# surrogates other than surrogateescape's U+DC80..U+DCFF (which stand for raw bytes)
_LONE_SURROGATE = _lazy_re("[\ud800-\udc7f\udd00-\udfff]")


def _as_bytes(m: re.Match[str]) -> str:
    return m.group().encode("utf-8", "surrogatepass").decode("utf-8", "surrogateescape")


def from_host(s: str) -> str:
    """Text given by the caller (a script, an env value) as the shell's str: a lone surrogate
    (``"\ud800"``, no UTF-8 for it) becomes the three raw bytes CESU/WTF-8 give it, which is
    what bash would receive; surrogateescape's raw bytes stay as they are."""
    if s.isascii() or _LONE_SURROGATE.search(s) is None:
        return s
    return _LONE_SURROGATE.sub(_as_bytes, s)

def host_bytes(s: str) -> bytes:
    """Text given by the caller as bytes (a str ``stdin``): UTF-8, surrogateescape's code points
    back to the raw bytes they stand for (so bytes decoded that way round-trip), any other lone
    surrogate as the WTF-8 bytes from_host gives it."""
    try:
        return s.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return from_host(s).encode("utf-8", "surrogateescape")


_BACKSLASH_CHARS = frozenset(" \t\n!\"$&'()*,;<>?[\\]^`{|}")
_SHELL_METAS = frozenset(" \t\n'\"\\|&;()<>!{}*[?]^$`")
_NONPRINT_CATEGORIES = frozenset(["Cc", "Cn", "Cs", "Zl", "Zp"])
_ANSIC_NAMED = {"\x1b": "\\E", "\a": "\\a", "\v": "\\v", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
                "\t": "\\t", "\\": "\\\\", "'": "\\'"}


def is_printable(ch: str) -> bool:
    """glibc's iswprint in C.UTF-8, for one code point (a surrogateescape byte is not)."""
    o = ord(ch)
    if o < 0x80:
        return 0x20 <= o < 0x7F
    return unicodedata.category(ch) not in _NONPRINT_CATEGORIES


def needs_ansic(s: str) -> bool:
    """bash's ansic_shouldquote: does ``s`` contain anything non-printable?"""
    if s.isascii():
        return not all(0x20 <= ord(c) < 0x7F for c in s)
    return not all(is_printable(c) for c in s)


def _octal_bytes(ch: str) -> str:
    b = ch.encode("utf-8", "surrogateescape")
    return "".join(f"\\{x:03o}" for x in b)


def ansic_quote(s: str) -> str:
    """``$'...'`` quoting exactly as bash's ansic_quote."""
    out = ["$'"]
    for c in s:
        named = _ANSIC_NAMED.get(c)
        if named is not None:
            out.append(named)
        elif is_printable(c):
            out.append(c)
        else:
            out.append(_octal_bytes(c))
    out.append("'")
    return "".join(out)


def printable_filename(s: str, reinput: bool = False) -> str:
    """bash's printable_filename: a name with anything non-printable as ``$'...'``, else as is
    (command not found, cd errors); ``reinput`` (hash -l) single-quotes shell metacharacters."""
    if needs_ansic(s):
        return ansic_quote(s)
    return _single_quote(s) if reinput and _has_shell_metas(s) else s


def quote_q(s: str) -> str:
    """``printf %q``: ``''`` for empty, ``$'...'`` with control characters, else backslashes."""
    if s == "":
        return "''"
    if needs_ansic(s):
        return ansic_quote(s)
    out = []
    for i, c in enumerate(s):
        if c in _BACKSLASH_CHARS or (c == "#" and i == 0) or (c == "~" and (i == 0 or s[i - 1] in "=:")):
            out.append("\\")
        out.append(c)
    return "".join(out)


def _single_quote(s: str) -> str:
    if s == "'":
        return "\\'"
    return "'" + s.replace("'", "'\\''") + "'"


def quote_single(s: str) -> str:
    """``${x@Q}``: ``'a b'``, ``$'...'`` when control characters are present."""
    if s == "":
        return "''"
    if needs_ansic(s):
        return ansic_quote(s)
    return _single_quote(s)


def quote_declare(s: str) -> str:
    """A scalar value as ``declare -p`` prints it: ``"..."`` escaping ``" \\ $ ` ``, or ``$'...'``."""
    if needs_ansic(s):
        return ansic_quote(s)
    out = ['"']
    for c in s:
        if c in '"\\$`':
            out.append("\\")
        out.append(c)
    out.append('"')
    return "".join(out)


def _has_shell_metas(s: str) -> bool:
    for i, c in enumerate(s):
        if c in _SHELL_METAS:
            return True
        if c == "~" and (i == 0 or s[i - 1] in "=:"):
            return True
        if c == "#" and i == 0:
            return True
    return False


def quote_set(s: str) -> str:
    """A value as ``set`` prints it: raw, ``'...'`` with shell metacharacters, or ``$'...'``."""
    if needs_ansic(s):
        return ansic_quote(s)
    if _has_shell_metas(s):
        return _single_quote(s)
    return s


def quote_xtrace(s: str) -> str:
    """A word as ``set -x`` prints it: single quotes when it has shell metacharacters (even
    if it also has control characters), else ``$'...'`` when something is non-printable."""
    if s == "":
        return "''"
    if _has_shell_metas(s):
        return _single_quote(s)
    if needs_ansic(s):
        return ansic_quote(s)
    return s
