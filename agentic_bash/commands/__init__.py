"""In-process coreutils and friends over the VFS; each command is ``(ctx, argv) -> int``."""

from __future__ import annotations

import importlib
import pkgutil

from .base import REGISTRY, CommandContext, CommandSpec, command

__all__ = ["REGISTRY", "CommandContext", "CommandSpec", "command", "load_all"]

_loaded = False


def load_all() -> dict[str, CommandSpec]:
    """Import every command module once (they register themselves) and return the registry."""
    global _loaded
    if not _loaded:
        for m in pkgutil.iter_modules(__path__):
            if not m.name.startswith("_") and m.name != "base":
                importlib.import_module(f"{__name__}.{m.name}")
        _loaded = True
    return REGISTRY
