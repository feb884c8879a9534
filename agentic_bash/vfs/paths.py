"""Pure path normalisation and root confinement; every path the sandbox touches passes here."""

from __future__ import annotations

import posixpath

__all__ = ["join", "normalize"]


def normalize(path: str, cwd: str = "/") -> str:
    """Absolute, normalised form of ``path`` (relative paths resolve against ``cwd``).

    Purely lexical like bash's logical ``cd``: ``..`` is removed textually and never climbs
    above ``/``. Leading ``//`` (which POSIX leaves implementation-defined) becomes ``/``.
    """
    if not path.startswith("/"):
        path = cwd.rstrip("/") + "/" + path
    p = posixpath.normpath(path)
    if p.startswith("//"):
        p = "/" + p.lstrip("/")
    return p


def join(base: str, name: str) -> str:
    return base + name if base.endswith("/") else base + "/" + name
