"""Protected paths (Sandbox(hide=..., read_only=...)): glob rules over the workspace and the VFS gate that applies them."""

# Hand-written: fnmatch's '*' crosses '/', and pathlib's match() has no '**' before 3.13.
# Security invariants of the gate (virtual mode; the sandboxed mode uses mounts, rootfs.py):
# - a path is judged both as written and as resolved (symlinks, '..', /proc/self/root),
#   so a link to a hidden file is as absent as the file;
# - a match covers everything below it (hiding a directory hides its contents);
# - hidden: reads and lookups say ENOENT, listings omit it, creating a matching name is
#   EACCES (the same answer whether or not it exists, so existence never leaks);
# - read-only: every change is EROFS; renaming a directory that holds a protected path is
#   EXDEV (tools fall back to copy + delete, which meets the rules one file at a time).

from __future__ import annotations

import errno
import posixpath
import re
import stat
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Iterable, Iterator

from .paths import normalize

__all__ = ["PathRules", "ProtectedFS", "compile_glob"]


def compile_glob(pattern: str) -> re.Pattern[str]:
    """A workspace-relative glob as a regex over relative paths: ``*``/``?``/``[..]`` within
    one component (dot files included), ``**`` any number of components (zero too). A match
    also covers everything below it."""
    parts = [p for p in pattern.strip("/").split("/") if p not in ("", ".")]
    out = ""
    for i, seg in enumerate(parts):
        last = i == len(parts) - 1
        if seg == "**":
            out += ".*" if last else "(?:[^/]+/)*"
            continue
        j, rx = 0, ""
        while j < len(seg):
            c = seg[j]
            if c == "*":
                rx += "[^/]*"
            elif c == "?":
                rx += "[^/]"
            elif c == "[":
                k = seg.find("]", j + 2 if seg[j + 1:j + 2] in ("!", "^") else j + 1)
                if k < 0:
                    rx += re.escape(c)
                else:
                    body = seg[j + 1:k]
                    neg = body[:1] in ("!", "^")
                    body = body[1:] if neg else body
                    rx += "[" + ("^/" if neg else "") + body.replace("\\", "\\\\") + "]"
                    j = k
            else:
                rx += re.escape(c)
            j += 1
        out += rx + ("" if last else "/")
    return re.compile(f"(?s:{out})(?:/.*)?")


@dataclass(frozen=True)
class PathRules:
    """``hide`` and ``read_only`` glob lists, relative to ``workdir``."""

    hide: tuple[str, ...] = ()
    read_only: tuple[str, ...] = ()
    workdir: str = "/workspace"
    _hide_rx: tuple[re.Pattern[str], ...] = field(default=(), init=False, repr=False, compare=False)
    _ro_rx: tuple[re.Pattern[str], ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "hide", tuple(self.hide))
        object.__setattr__(self, "read_only", tuple(self.read_only))
        object.__setattr__(self, "workdir", normalize(self.workdir))
        object.__setattr__(self, "_hide_rx", tuple(compile_glob(p) for p in self.hide))
        object.__setattr__(self, "_ro_rx", tuple(compile_glob(p) for p in self.read_only))

    def __bool__(self) -> bool:
        return bool(self.hide or self.read_only)

    def rel(self, path: str) -> str | None:
        """``path`` relative to the workspace, or None when outside it."""
        p = normalize(path)
        w = self.workdir
        if p == w:
            return ""
        if w == "/":
            return p[1:]
        if p.startswith(w + "/"):
            return p[len(w) + 1:]
        return None

    def hidden(self, path: str) -> bool:
        r = self.rel(path)
        return bool(r) and any(rx.fullmatch(r) for rx in self._hide_rx)  # type: ignore[arg-type]

    def readonly(self, path: str) -> bool:
        r = self.rel(path)
        return bool(r) and any(rx.fullmatch(r) for rx in self._ro_rx)  # type: ignore[arg-type]

    def protected(self, path: str) -> bool:
        return self.hidden(path) or self.readonly(path)

    def to_json(self) -> dict[str, Any]:
        return {"hide": list(self.hide), "read_only": list(self.read_only),
                "workdir": self.workdir}

    def describe(self) -> str:
        parts = []
        if self.hide:
            parts.append("hidden: " + ", ".join(self.hide))
        if self.read_only:
            parts.append("read-only: " + ", ".join(self.read_only))
        return "; ".join(parts) + f" (relative to {self.workdir})"


def _err(code: int, path: str) -> OSError:
    return OSError(code, __import__("os").strerror(code), path) if code != errno.ENOENT \
        else FileNotFoundError(code, "No such file or directory", path)


class ProtectedFS:
    """The VFS gate: wraps a FileSystem and applies PathRules to every call."""

    def __init__(self, fs: Any, rules: PathRules) -> None:
        self._fs = fs
        self.rules = rules

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fs, name)

    # -- judging -------------------------------------------------------------------------
    def _forms(self, path: str, follow: bool) -> tuple[str, str]:
        p = normalize(path)
        try:
            if follow:
                r = self._fs.realpath(p)
            else:
                parent, name = posixpath.split(p)
                r = posixpath.join(self._fs.realpath(parent), name) if name else p
        except (OSError, ValueError):
            r = p
        return p, r

    def _look(self, path: str, follow: bool = True) -> str:
        p, r = self._forms(path, follow)
        if self.rules.hidden(p) or self.rules.hidden(r):
            raise _err(errno.ENOENT, path)
        return p

    def _change(self, path: str, follow: bool = True) -> str:
        p, r = self._forms(path, follow)
        if self.rules.hidden(p) or self.rules.hidden(r):
            raise _err(errno.EACCES, path)
        if self.rules.readonly(p) or self.rules.readonly(r):
            raise _err(errno.EROFS, path)
        return p

    def _holds_protected(self, path: str) -> bool:
        """Whether a directory has a protected path at or below it (bounded walk)."""
        p = normalize(path)
        stack, seen = [p], 0
        while stack:
            d = stack.pop()
            try:
                entries = list(self._fs.scandir(d))
            except OSError:
                continue
            for e in entries:
                child = posixpath.join(d, e.name)
                if self.rules.protected(child):
                    return True
                seen += 1
                if seen > 200_000:
                    return True  # too big to prove clean: refuse (EXDEV makes tools copy)
                if stat.S_ISDIR(getattr(e, "st_mode", 0)):
                    stack.append(child)
        return False

    # -- reads ---------------------------------------------------------------------------
    def stat(self, path: str, follow_symlinks: bool = True) -> Any:
        return self._fs.stat(self._look(path, follow_symlinks), follow_symlinks)

    def lstat(self, path: str) -> Any:
        return self.stat(path, follow_symlinks=False)

    def exists(self, path: str) -> bool:
        try:
            self._look(path)
        except OSError:
            return False
        return self._fs.exists(path)

    def lexists(self, path: str) -> bool:
        try:
            self._look(path, follow=False)
        except OSError:
            return False
        return self._fs.lexists(path)

    def isdir(self, path: str) -> bool:
        try:
            return stat.S_ISDIR(self.stat(path).st_mode)
        except OSError:
            return False

    def isfile(self, path: str) -> bool:
        try:
            return stat.S_ISREG(self.stat(path).st_mode)
        except OSError:
            return False

    def listdir(self, path: str) -> list[str]:
        p = self._look(path)
        real = self._forms(path, True)[1]
        return [n for n in self._fs.listdir(p)
                if not (self.rules.hidden(posixpath.join(p, n))
                        or self.rules.hidden(posixpath.join(real, n)))]

    def scandir(self, path: str) -> Iterator[Any]:
        p = self._look(path)
        real = self._forms(path, True)[1]
        for e in self._fs.scandir(p):
            if not (self.rules.hidden(posixpath.join(p, e.name))
                    or self.rules.hidden(posixpath.join(real, e.name))):
                yield e

    def readlink(self, path: str) -> str:
        return self._fs.readlink(self._look(path, follow=False))

    def realpath(self, path: str) -> str:
        return self._fs.realpath(path)

    def access(self, path: str, mode: int) -> bool:
        try:
            self._look(path)
        except OSError:
            return False
        if mode & 2:
            try:
                self._change(path)
            except OSError:
                return False
        return self._fs.access(path, mode)

    def real_path(self, path: str) -> str | None:
        try:
            self._look(path)
        except OSError:
            return None
        return self._fs.real_path(path)

    def open(self, path: str, mode: str = "rb", perm: int = 0o644) -> BinaryIO:
        if any(c in mode for c in "wax+"):
            self._change(path)
        return self._fs.open(self._look(path), mode, perm)

    # -- changes -------------------------------------------------------------------------
    def mkdir(self, path: str, mode: int = 0o755) -> None:
        self._fs.mkdir(self._change(path, follow=False), mode)

    def rmdir(self, path: str) -> None:
        self._fs.rmdir(self._change(path, follow=False))

    def unlink(self, path: str) -> None:
        self._fs.unlink(self._change(path, follow=False))

    def rename(self, src: str, dst: str) -> None:
        s = self._change(src, follow=False)
        d = self._change(dst, follow=False)
        for p in (s, d):
            try:
                isdir = stat.S_ISDIR(self._fs.stat(p, False).st_mode)
            except OSError:
                isdir = False
            if isdir and self._holds_protected(p):
                raise _err(errno.EXDEV, p)
        self._fs.rename(s, d)

    def symlink(self, target: str, path: str) -> None:
        self._fs.symlink(target, self._change(path, follow=False))

    def link(self, src: str, dst: str) -> None:
        s = self._look(src, follow=False)
        if self.rules.readonly(s) or self.rules.readonly(self._forms(src, False)[1]):
            # a second name for a read-only file would be a writable way to change it
            raise _err(errno.EROFS, src)
        self._fs.link(s, self._change(dst, follow=False))

    def chmod(self, path: str, mode: int, follow_symlinks: bool = True) -> None:
        self._fs.chmod(self._change(path, follow_symlinks), mode, follow_symlinks)

    def chown(self, path: str, uid: int, gid: int, follow_symlinks: bool = True) -> None:
        self._fs.chown(self._change(path, follow_symlinks), uid, gid, follow_symlinks)

    def utime(self, path: str, times: tuple[float, float] | None = None,
              follow_symlinks: bool = True) -> None:
        self._fs.utime(self._change(path, follow_symlinks), times, follow_symlinks)

    def truncate(self, path: str, length: int) -> None:
        self._fs.truncate(self._change(path), length)


def coerce_patterns(value: Iterable[str] | None) -> tuple[str, ...]:
    return tuple(value or ())
