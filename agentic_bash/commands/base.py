"""The command contract: ``(ctx, argv) -> int`` registered with its usage, and the read-only context."""

# Conventions for every command module (commands/<group>.py):
# * ``argv[0]`` is the name as invoked (``egrep`` vs ``grep``); return the exit status.
# * Read input in chunks or lines from ``ctx.stdin`` (never assume it is small); write
#   bytes to ``ctx.stdout``/``ctx.stderr``. A write to a closed pipe raises
#   ``BrokenPipeError``: let it propagate (the dispatcher turns it into status 141 like
#   SIGPIPE). Call ``ctx.budget.check()`` in long loops; let ``LimitExceeded`` propagate.
# * Errors read like GNU: ``cat: nope: No such file or directory`` (``ctx.error``);
#   unknown option -> GNU's message, ``Try 'cat --help' for more information.``, status 2
#   for most tools (1 where GNU uses 1).
# * Filesystem access only through ``ctx.fs`` with paths from ``ctx.path()``.

from __future__ import annotations

import errno as _errno
import importlib
import os
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Callable, Mapping, Protocol

from .._values import value_methods
from ..errors import LimitExceeded
from ..limits import Budget
from ..vfs.base import FileSystem
from ..vfs.paths import normalize

__all__ = [
    "REGISTRY", "CommandContext", "CommandFn", "CommandSpec", "Exec", "SystemInfo",
    "command", "strerror",
]


class Exec(Protocol):
    """Runs another command through the full dispatch chain (functions excluded, like ``command``)."""

    def __call__(
        self, argv: list[str], *, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None,
        stderr: BinaryIO | None = None, env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> int: ...


@value_methods
@dataclass(frozen=True, slots=True, repr=False, eq=False)
class SystemInfo:
    """What the sandbox says about its "machine"; configurable so nothing of the host leaks."""

    hostname: str = "sandbox"
    user: str = "user"
    uid: int = 1000
    gid: int = 1000
    group: str = "user"
    home: str = "/home/user"
    pid: int = 1
    ppid: int = 0
    kernel: str = "Linux"
    kernel_release: str = "6.1.0-agentic"
    machine: str = "x86_64"
    nproc: int = 2


@value_methods
@dataclass(frozen=True, slots=True, repr=False, eq=False)
class CommandContext:
    """Read-only view handed to a command; it never holds the sandbox itself."""

    fs: FileSystem
    cwd: str
    env: Mapping[str, str]
    stdin: BinaryIO
    stdout: BinaryIO
    stderr: BinaryIO
    budget: Budget
    info: SystemInfo = field(default_factory=SystemInfo)
    exec: Exec | None = None
    umask: int = 0o022
    name: str = ""

    def path(self, p: str) -> str:
        """Absolute normalised sandbox path for a user-supplied ``p``."""
        return normalize(p, self.cwd)

    def error(self, msg: str) -> None:
        """Write ``name: msg`` to stderr."""
        self.stderr.write(f"{self.name}: {msg}\n".encode("utf-8", "surrogateescape"))

    def os_error(self, exc: OSError, path: str | None = None) -> None:
        """``name: path: No such file or directory`` from an OSError."""
        p = path if path is not None else (exc.filename or "")
        self.error(f"{p}: {strerror(exc)}" if p else strerror(exc))


class _ContextTwin:
    """CommandContext's mutable twin (same slots): new_context stores the fields with plain
    attribute stores, then makes the object a CommandContext (the layouts are the same)."""

    __slots__ = CommandContext.__slots__  # type: ignore[attr-defined]

    def __init__(self, fs: FileSystem, cwd: str, env: Mapping[str, str], stdin: BinaryIO,
                 stdout: BinaryIO, stderr: BinaryIO, budget: Budget, info: SystemInfo,
                 exec: Exec | None, umask: int, name: str) -> None:  # noqa: A002
        self.fs = fs
        self.cwd = cwd
        self.env = env
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self.budget = budget
        self.info = info
        self.exec = exec
        self.umask = umask
        self.name = name
        self.__class__ = CommandContext  # type: ignore[assignment]


def ctx_with(ctx: CommandContext, **kw: Any) -> CommandContext:
    """``dataclasses.replace(ctx, **kw)`` at a fraction of its cost (it ran on every call of
    several commands; per-call cost matters: agents run a new short command each call)."""
    g = kw.get
    return new_context(g("fs", ctx.fs), g("cwd", ctx.cwd), g("env", ctx.env), g("stdin", ctx.stdin),
                       g("stdout", ctx.stdout), g("stderr", ctx.stderr), g("budget", ctx.budget),
                       g("info", ctx.info), g("exec", ctx.exec), g("umask", ctx.umask), g("name", ctx.name))


def as_invoked(ctx: CommandContext, name: str) -> CommandContext:
    """The context a command's messages use: ``name``, or the path it was run by
    (``/usr/bin/sed``), as GNU prints argv[0]; no copy when the name is already right."""
    if ctx.name == name or ctx.name.endswith("/" + name):
        return ctx
    return ctx_with(ctx, name=name)


def new_context(fs: FileSystem, cwd: str, env: Mapping[str, str], stdin: BinaryIO, stdout: BinaryIO,
                stderr: BinaryIO, budget: Budget, info: SystemInfo, exec: Exec | None, umask: int,
                name: str) -> CommandContext:
    """``CommandContext(...)`` with every field given, made through its twin: the frozen
    dataclass's ``__init__`` (an ``object.__setattr__`` per field) was a tenth of a short
    pipeline stage's cost, a slot descriptor's ``__set__`` per field still most of it."""
    return _ContextTwin(fs, cwd, env, stdin, stdout, stderr, budget, info, exec, umask, name)  # type: ignore[return-value]


def strerror(exc: OSError) -> str:
    """GNU's wording for an errno (``os.strerror`` is glibc's, which GNU tools print)."""
    if exc.errno is not None:
        return os.strerror(exc.errno)
    return exc.strerror or str(exc)


CommandFn = Callable[[CommandContext, list[str]], int]


@value_methods
@dataclass(frozen=True, slots=True, repr=False, eq=False)
class CommandSpec:
    name: str
    fn: CommandFn
    usage: str = ""
    help: str = ""


def import_commands(module: str) -> bool:
    """Import command module ``module``; False (and noted, see note_broken) when it is broken.
    A run stopped while the import was under way (deadline, interrupt, a limit, memory) says
    nothing about the module: its half-registered commands are dropped, so the next use
    imports it afresh, and the stop is raised on."""
    try:
        importlib.import_module(module)
        return True
    except BaseException as e:
        if isinstance(e, Exception) and not isinstance(e, (LimitExceeded, MemoryError)):
            note_broken(module, e)
            return False
        for n, m in _Registry.lazy.items():
            if m == module:
                dict.pop(REGISTRY, n, None)
        raise


def note_broken(module: str, exc: BaseException) -> None:
    """Record (and warn once about) a command module that failed to import."""
    if module in _Registry.broken:
        return
    _Registry.broken[module] = f"{type(exc).__name__}: {exc}"
    import warnings
    warnings.warn(f"agentic-bash: commands in {module} are unavailable: "
                  f"{type(exc).__name__}: {exc}", RuntimeWarning, stacklevel=3)


class _Registry(dict):
    """name -> CommandSpec. Names in ``lazy`` (name -> module) import their module on first use;
    names are listed from the table, ``values()``/``items()`` import every module first."""

    lazy: dict[str, str] = {}
    everything: Callable[[], None] | None = None
    broken: dict[str, str] = {}
    """module -> why it failed to import (its commands then report that when run)."""

    def _load(self, name: str) -> bool:
        mod = self.lazy.get(name)
        if mod is None:
            return False
        # (one broken command module must not break the shell)
        return import_commands(mod) and dict.__contains__(self, name)

    def why_missing(self, name: str) -> str | None:
        """Why a command of the table has no implementation (its module failed to import)."""
        mod = self.lazy.get(name)
        return self.broken.get(mod) if mod is not None else None

    def __missing__(self, name: str) -> CommandSpec:
        if self._load(name):
            return dict.__getitem__(self, name)
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return dict.__contains__(self, name) or (type(name) is str and self._load(name))

    def get(self, name: str, default: CommandSpec | None = None) -> CommandSpec | None:  # type: ignore[override]
        if dict.__contains__(self, name) or self._load(name):
            return dict.__getitem__(self, name)
        return default

    def _all(self) -> None:
        if self.everything is not None:
            self.everything()

    def _names(self) -> dict[str, None]:
        # names come from the table without importing (the layout lists them at start-up)
        names = dict.fromkeys(dict.keys(self))
        names.update(dict.fromkeys(self.lazy))
        return names

    def __iter__(self):  # noqa: ANN204
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def keys(self):  # noqa: ANN201
        return self._names().keys()

    def values(self):  # noqa: ANN201
        self._all()
        return dict.values(self)

    def items(self):  # noqa: ANN201
        self._all()
        return dict.items(self)


REGISTRY: dict[str, CommandSpec] = _Registry()


def command(*names: str, usage: str = "", help: str = "") -> Callable[[CommandFn], CommandFn]:
    """Register ``fn`` under each of ``names`` (first is canonical)."""

    def deco(fn: CommandFn) -> CommandFn:
        for n in names:
            REGISTRY[n] = CommandSpec(n, fn, usage, help)
        return fn

    return deco


_ = _errno  # errno constants are re-exported for command modules' convenience
