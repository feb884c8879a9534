"""The value every ``run()`` returns, and the head+tail truncation helper for LLM context."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ._values import value_methods
from .errors import PolicyViolation

__all__ = ["FILES_LISTED", "LIMIT_NAMES", "Result", "truncate"]

FILES_LISTED = 10_000
"""At most this many paths in each of ``Result.files_created``/``files_modified``/
``files_deleted`` (the first ones in sorted order); ``Result.files_truncated`` says a list was
cut. (attack10: 200k files made in one run cost the caller +77 MB for the lists alone.)"""

LIMIT_NAMES: dict[str, str] = {
    "timeout": "timeout", "max_output_bytes": "output", "max_commands": "commands",
    "max_loop_iterations": "loop_iterations", "max_variable_bytes": "variable_size",
    "max_call_depth": "call_depth", "max_jobs": "jobs", "max_fs_bytes": "disk",
    "max_file_count": "disk", "max_processes": "processes", "max_memory_bytes": "memory",
    "max_file_bytes": "file_size", "max_shell_bytes": "memory",
}
"""``LimitExceeded.limit`` (a ``Limits`` field) -> ``Result.limit_exceeded``."""


@value_methods
@dataclass(frozen=True, slots=True, repr=False, eq=False)
class Result:
    """What one ``run()`` produced. A failing script is a Result, never an exception."""

    stdout_bytes: bytes = b""
    stderr_bytes: bytes = b""
    exit_code: int = 0
    duration: float = 0.0
    timed_out: bool = False
    truncated: bool = False
    cwd: str = ""
    files_created: tuple[str, ...] = ()
    files_modified: tuple[str, ...] = ()
    files_deleted: tuple[str, ...] = ()
    cpu_time: float = 0.0
    peak_memory: int = 0
    violations: tuple[PolicyViolation, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    limit_exceeded: str | None = None
    """The limit that stopped the run, if one did: ``"memory"``, ``"processes"``, ``"disk"``,
    ``"file_size"`` (the sandbox's), or the interpreter's own ``"timeout"``, ``"output"``,
    ``"commands"``, ``"loop_iterations"``, ``"variable_size"``, ``"call_depth"``, ``"jobs"``."""
    restarted: bool = False
    """The sandbox process had died (or fallen out of step) and this run started a fresh one
    over the same files; ``extra["restart_reason"]`` says why (DESIGN.md decision 10)."""
    packages_installed: tuple[Any, ...] = ()
    """``PackageInfo(name, version, manager)`` of each package this run installed (pip, npm, apt)."""
    files_truncated: bool = False
    """True when the run changed more files than ``files_created``, ``files_modified`` or
    ``files_deleted`` lists: each holds at most ``FILES_LISTED`` paths."""

    @property
    def stdout(self) -> str:
        return self.stdout_bytes.decode("utf-8", "replace")

    @property
    def stderr(self) -> str:
        return self.stderr_bytes.decode("utf-8", "replace")

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def for_llm(self, head: int = 8192, tail: int = 8192) -> str:
        """Exit code, cwd and both streams, each cut head+tail so errors at the end survive."""
        parts = [f"exit_code: {self.exit_code}" + (" (timed out)" if self.timed_out else ""),
                 f"cwd: {self.cwd}"]
        if self.stdout_bytes:
            parts.append("stdout:\n" + truncate(self.stdout, head, tail))
        if self.stderr_bytes:
            parts.append("stderr:\n" + truncate(self.stderr, head, tail))
        return "\n".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "stdout": self.stdout, "stderr": self.stderr, "exit_code": self.exit_code,
            "duration": self.duration, "timed_out": self.timed_out, "truncated": self.truncated,
            "cwd": self.cwd, "files_created": list(self.files_created),
            "files_modified": list(self.files_modified), "files_deleted": list(self.files_deleted),
            "cpu_time": self.cpu_time, "peak_memory": self.peak_memory,
            "violations": [{"kind": v.kind, "detail": v.detail} for v in self.violations],
            "limit_exceeded": self.limit_exceeded,
            "restarted": self.restarted, "files_truncated": self.files_truncated,
            "packages_installed": [{"name": p.name, "version": p.version, "manager": p.manager}
                                   for p in self.packages_installed],
        }


class _ResultBuilder:
    """Same slot layout as Result, without the frozen ``__setattr__``: ``make_result`` fills
    one with plain stores and then turns it into a Result (``__class__`` assignment between
    layout-identical classes). A frozen dataclass pays an ``object.__setattr__`` call per field,
    about 1 µs a run, a fifth of the cost of ``run("echo hi")``."""

    __slots__ = Result.__slots__  # type: ignore[attr-defined]


def make_result(stdout_bytes: bytes, stderr_bytes: bytes, exit_code: int, duration: float,
                timed_out: bool, truncated: bool, cwd: str, files_created: tuple[str, ...],
                files_modified: tuple[str, ...], files_deleted: tuple[str, ...],
                violations: tuple[PolicyViolation, ...],
                limit_exceeded: str | None = None) -> Result:
    """``Result(...)`` with those fields (the others at their defaults), built fast."""
    r: Any = _ResultBuilder()
    r.stdout_bytes = stdout_bytes
    r.stderr_bytes = stderr_bytes
    r.exit_code = exit_code
    r.duration = duration
    r.timed_out = timed_out
    r.truncated = truncated
    r.cwd = cwd
    r.files_created = files_created
    r.files_modified = files_modified
    r.files_deleted = files_deleted
    r.cpu_time = 0.0
    r.peak_memory = 0
    r.violations = violations
    r.extra = {}
    r.limit_exceeded = limit_exceeded
    r.restarted = False
    r.packages_installed = ()
    r.files_truncated = False
    r.__class__ = Result
    return r


def cap_files(r: Result, most: int = FILES_LISTED) -> Result:
    """``r`` with each changed-files list cut to ``most`` paths and ``files_truncated`` set
    when one was longer (``r`` itself when none is)."""
    if (len(r.files_created) <= most and len(r.files_modified) <= most
            and len(r.files_deleted) <= most):
        return r
    import dataclasses
    return dataclasses.replace(r, files_created=tuple(sorted(r.files_created)[:most]),
                               files_modified=tuple(sorted(r.files_modified)[:most]),
                               files_deleted=tuple(sorted(r.files_deleted)[:most]),
                               files_truncated=True)


def truncate(text: str, head: int = 8192, tail: int = 8192) -> str:
    """Keep the first ``head`` and last ``tail`` bytes (UTF-8) with a marker between."""
    data = text.encode("utf-8", "surrogateescape")
    if len(data) <= head + tail:
        return text
    elided = len(data) - head - tail
    h = data[:head].decode("utf-8", "ignore")
    t = data[len(data) - tail:].decode("utf-8", "ignore") if tail else ""
    return f"{h}\n... [{elided} bytes elided] ...\n{t}"
