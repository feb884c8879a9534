"""agentic-bash: a stateful, isolated bash for AI agents."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import (
    IsolationUnavailable, LimitExceeded, ParseError, PolicyViolation, PoolExhausted,
    SandboxClosed, SandboxCrashed, SandboxError, SnapshotError, Unsupported,
)
from .limits import Limits

__version__ = "0.1.0"

__all__ = [
    "IsolationUnavailable", "LimitExceeded", "Limits", "Mount", "NetworkPolicy", "ParseError",
    "PolicyViolation", "PoolExhausted", "Result", "Sandbox", "SandboxClosed", "SandboxCrashed",
    "SandboxError", "SandboxPool", "SnapshotError", "Unsupported", "parse", "truncate",
]

# Heavier modules load on first use so ``import agentic_bash`` stays cheap.
_LAZY = {
    "Sandbox": ("session", "Sandbox"),
    "SandboxPool": ("pool", "SandboxPool"),
    "Mount": ("session", "Mount"),
    "NetworkPolicy": ("network.policy", "NetworkPolicy"),
    "Result": ("session", "Result"),
    "parse": ("shell.parser", "parse"),
    "truncate": ("session", "truncate"),
}

if TYPE_CHECKING:  # pragma: no cover
    from .network.policy import NetworkPolicy
    from .pool import SandboxPool
    from .session import Mount, Result, Sandbox, truncate
    from .shell.parser import parse


def __getattr__(name: str) -> Any:
    try:
        mod, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'agentic_bash' has no attribute {name!r}") from None
    import importlib

    value = getattr(importlib.import_module(f".{mod}", __name__), attr)
    globals()[name] = value
    return value
