"""The public exception tree; a failing script is a Result, an exception means the sandbox failed.

SandboxError
 ├── ParseError            the script could not be parsed (only from ``agentic_bash.parse``;
 │                         ``Sandbox.run`` turns it into exit status 2 and a bash-like message)
 ├── LimitExceeded         a budget ran out (raised only where no Result can carry it)
 ├── PolicyViolation       a refused action (also listed in ``Result.violations``)
 ├── IsolationUnavailable  ``strict=True`` and a promised mechanism is missing
 ├── SnapshotError         a snapshot/tar cannot be written or restored
 ├── SandboxCrashed        the sandbox process died (the next call starts a new one)
 ├── SandboxClosed         the sandbox was used after ``close()`` (or after its release
 │                         to the pool it came from)
 ├── PoolExhausted         ``SandboxPool.acquire`` waited ``timeout`` with all sandboxes in use
 └── Unsupported           the operation is not available at this isolation level
"""

from __future__ import annotations

__all__ = [
    "IsolationUnavailable", "LimitExceeded", "ParseError", "PolicyViolation", "PoolExhausted",
    "SandboxClosed", "SandboxCrashed", "SandboxError", "SnapshotError", "Unsupported",
]


class SandboxError(Exception):
    """Root of every exception agentic-bash raises on purpose."""


class ParseError(SandboxError):
    """A syntax error; ``message`` reads like bash's, ``line`` is 1-based."""

    def __init__(self, message: str, line: int = 0, token: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.token = token

    def __reduce__(self):  # keep structured fields across pickling
        return (type(self), (self.message, self.line, self.token))


class LimitExceeded(SandboxError):
    """A limit was hit; ``limit`` names the ``Limits`` field."""

    def __init__(self, limit: str, message: str = "") -> None:
        super().__init__(message or f"limit exceeded: {limit}")
        self.limit = limit

    def __reduce__(self):
        return (type(self), (self.limit, str(self)))


class PolicyViolation(SandboxError):
    """An action the policy refused; ``kind`` (e.g. ``syscall``, ``network``, ``command``) and
    ``detail``; network refusals also carry ``target`` (host:port) and ``reason``."""

    def __init__(self, kind: str, detail: str, *, target: str | None = None,
                 reason: str | None = None) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail
        self.target = target
        self.reason = reason

    def __reduce__(self):
        if self.target is None and self.reason is None:
            return (type(self), (self.kind, self.detail))
        import functools
        return (functools.partial(type(self), target=self.target, reason=self.reason),
                (self.kind, self.detail))


class IsolationUnavailable(SandboxError):
    """``strict=True`` was asked and a mechanism the level promises is unavailable."""


class SnapshotError(SandboxError):
    """A snapshot could not be taken or restored; nothing was changed."""


class SandboxCrashed(SandboxError):
    """The sandbox process died (OOM, SIGKILL) during this call. The Sandbox stays usable: its
    next call starts a fresh sandbox process over the same files, and that Result says
    ``restarted=True``."""


class SandboxClosed(SandboxError):
    """The sandbox was used after ``close()``."""


class PoolExhausted(SandboxError):
    """Every sandbox of a ``SandboxPool`` stayed in use (``max_size``) for the whole wait."""


class Unsupported(SandboxError, NotImplementedError):
    """The operation exists, but not at this isolation level; the message names the levels
    that have it."""
