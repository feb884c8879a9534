"""Module-level regular expressions compiled at their first use.

The zygote's preload compiled ~60 module-level patterns (~8 ms of CPU, fresh15) of which a
first command like ``true`` uses three. ``_X = lazy_compile(r"...")`` stands for the pattern
until an attribute of it is first read (``_X.match``): then it is compiled, and the module
that defined it (and the module that read it, when that holds it under a name of its own)
gets the compiled pattern in its place, so later uses cost nothing extra. The zygote compiles
the rest once it is ready (``compile_all``), so the sandboxes it forks later share them."""

from __future__ import annotations

import re
import sys
from typing import Any

__all__ = ["LazyPattern", "compile_all", "lazy_compile"]

_PENDING: list[LazyPattern] = []


class LazyPattern:
    """A regular expression compiled at first use (see the module's doc)."""

    __slots__ = ("_args", "_globals", "_compiled")

    def __init__(self, pattern: str | bytes, flags: int, where: dict[str, Any]) -> None:
        self._args = (pattern, flags)
        self._globals = where
        self._compiled: re.Pattern[Any] | None = None
        _PENDING.append(self)

    def compile(self, caller: dict[str, Any] | None = None) -> re.Pattern[Any]:
        p = self._compiled
        if p is None:
            p = self._compiled = re.compile(*self._args)
        for g in (self._globals, caller):
            if g is not None:
                for k in [k for k, v in g.items() if v is self]:
                    g[k] = p
        return p

    def __getattr__(self, name: str) -> Any:
        return getattr(self.compile(sys._getframe(1).f_globals), name)

    def __repr__(self) -> str:
        return f"lazy_compile({self._args[0]!r}, {self._args[1]!r})"


def lazy_compile(pattern: str | bytes, flags: int = 0) -> Any:
    """``re.compile(pattern, flags)`` at first use; call it at a module's top level only."""
    return LazyPattern(pattern, flags, sys._getframe(1).f_globals)


def compile_all() -> None:
    """Compile every pattern not compiled yet (the zygote's deferred step), and put the
    compiled ones in place in the package's modules that hold one under a name of their own."""
    while _PENDING:
        _PENDING.pop().compile()
    for name, mod in list(sys.modules.items()):
        g = getattr(mod, "__dict__", None) if name.startswith("agentic_bash") else None
        if g:
            for k, v in list(g.items()):
                if type(v) is LazyPattern:
                    g[k] = v.compile()
