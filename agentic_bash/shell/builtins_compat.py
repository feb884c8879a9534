"""Quoting helpers for builtins: shell.quoting when present, else local bash-compatible versions."""

from __future__ import annotations

import re

__all__ = ["quote_declare", "quote_set", "quote_single"]

_SAFE = re.compile(r"[A-Za-z0-9_./:=@%^+,-]+\Z")


def _ansi(s: str) -> str:
    out = []
    for ch in s:
        o = ord(ch)
        if ch == "'":
            out.append("\\'")
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\x1b":
            out.append("\\E")
        elif o < 32 or o == 127:
            out.append(f"\\{o:03o}")
        else:
            out.append(ch)
    return "$'" + "".join(out) + "'"


def _needs_ansi(s: str) -> bool:
    return any(ord(c) < 32 or ord(c) == 127 for c in s)


def quote_single(s: str) -> str:
    """``${x@Q}`` form."""
    if _needs_ansi(s):
        return _ansi(s)
    return "'" + s.replace("'", "'\\''") + "'"


def quote_set(s: str) -> str:
    """``set``/xtrace form: bare when safe, else single-quoted."""
    if s and _SAFE.match(s):
        return s
    if _needs_ansi(s):
        return _ansi(s)
    return "'" + s.replace("'", "'\\''") + "'"


def quote_declare(s: str) -> str:
    """``declare -p`` form: double quotes with \\ " $ ` escaped."""
    if _needs_ansi(s) and False:
        return _ansi(s)
    return '"' + re.sub(r'([\\"$`])', r"\\\1", s) + '"'


try:  # prefer the shared implementation
    from .quoting import quote_declare, quote_set, quote_single  # type: ignore[no-redef]  # noqa: F811
except ImportError:  # pragma: no cover
    pass
