"""Confinement of runtime-API paths to the base directory, as the agent-sandbox runtime does."""

# Security invariant: a client path is taken relative to the base dir (leading "/" stripped, as
# upstream's get_safe_path), normalised lexically, and refused unless it is the base dir or
# below it; the caller then resolves symlinks *inside the sandbox* and applies the same check
# to the result, so neither ".." nor a symlink reaches outside the base dir. NUL bytes are
# refused before anything else (they would truncate the name at the syscall).

from __future__ import annotations

import posixpath

__all__ = ["BadPath", "Denied", "confine", "within"]


class Denied(ValueError):
    """The path leaves the base directory (answered with 403 ``Access denied``)."""


class BadPath(ValueError):
    """The path cannot name a file at all (a NUL byte; answered with 400)."""


def within(path: str, base: str) -> bool:
    """Whether the normalised absolute ``path`` is ``base`` or below it."""
    base = base.rstrip("/") or "/"
    return path == base or base == "/" or path.startswith(base + "/")


def confine(user_path: str, base: str) -> str:
    """The absolute sandbox path ``user_path`` names under ``base``; Denied if it escapes."""
    if "\x00" in user_path:
        raise BadPath("path contains a NUL byte")
    clean = user_path.lstrip("/")
    full = posixpath.normpath(posixpath.join(base, clean)) if clean else posixpath.normpath(base)
    if full.startswith("//"):
        full = "/" + full.lstrip("/")
    if not within(full, base):
        raise Denied(user_path)
    return full
