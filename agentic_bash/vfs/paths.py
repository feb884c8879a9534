"""Pure path normalisation and root confinement; every path the sandbox touches passes here."""

from __future__ import annotations

import posixpath
import stat as _stat
from typing import Callable

__all__ = ["is_within", "join", "normalize", "realpath_with", "split"]


def normalize(path: str, cwd: str = "/") -> str:
    """Absolute, normalised form of ``path`` (relative paths resolve against ``cwd``).

    Purely lexical like bash's logical ``cd``: ``..`` is removed textually and never climbs
    above ``/``. Leading ``//`` (which POSIX leaves implementation-defined) becomes ``/``.
    """
    if not path.startswith("/"):
        path = cwd.rstrip("/") + "/" + path
    if "//" not in path and "/." not in path and path[-1] != "/":
        return path  # no empty, "." or ".." component and no trailing "/": already normal
    p = posixpath.normpath(path)
    if p.startswith("//"):
        p = "/" + p.lstrip("/")
    return p


def join(base: str, name: str) -> str:
    return base + name if base.endswith("/") else base + "/" + name


def split(path: str) -> tuple[str, str]:
    """``("/a", "b")`` for ``"/a/b"``; ``("/", "")`` for ``"/"``. ``path`` is normalised."""
    i = path.rfind("/")
    head, tail = path[:i], path[i + 1:]
    return (head or "/"), tail


def is_within(path: str, base: str) -> bool:
    """True when normalised ``path`` is ``base`` or below it."""
    return base == "/" or path == base or path.startswith(base + "/")


def realpath_with(path: str, lstat_mode: Callable[[str], int | None], readlink: Callable[[str], str]) -> str:
    """``os.path.realpath(strict=False)`` over any filesystem given its lstat and readlink.

    A symlink loop stops resolution and keeps the rest of the path literally, as CPython does.
    """
    seen: dict[str, str | None] = {}

    def walk(base: str, rest: str) -> tuple[str, bool]:
        if rest.startswith("/"):
            base, rest = "/", rest[1:]
        while rest:
            name, _, rest = rest.partition("/")
            if not name or name == ".":
                continue
            if name == "..":
                base = split(base)[0]
                continue
            new = join(base, name)
            mode = lstat_mode(new)
            if mode is None or not _stat.S_ISLNK(mode):
                base = new
                continue
            if new in seen:
                cached = seen[new]
                if cached is not None:
                    base = cached
                    continue
                return join(new, rest) if rest else new, False
            seen[new] = None
            base, ok = walk(base, readlink(new))
            if not ok:
                return (join(base, rest) if rest else base), False
            seen[new] = base
        return base, True

    return normalize(walk("/", normalize(path))[0])
