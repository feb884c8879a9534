"""The seam between the Sandbox object and where its interpreter actually runs."""

# Two implementations: ``inprocess.InProcessExecutor`` (virtual and host modes: the
# interpreter lives in this process) and ``sandboxed.SandboxedExecutor`` (the interpreter
# lives in a sandbox process and is driven over a pipe). ``session.Sandbox`` only talks to
# this protocol, so both modes offer the same API.

from __future__ import annotations

from typing import Any, BinaryIO, Callable, Mapping, Protocol

from ..result import Result

__all__ = ["Executor", "OutputCallback"]

OutputCallback = Callable[[int, bytes], None]
"""Called with (fd, chunk) as output is produced: fd 1 = stdout, 2 = stderr."""


class Executor(Protocol):
    def run(
        self, script: str, stdin: bytes | BinaryIO | None = None,
        env: Mapping[str, str] | None = None, cwd: str | None = None,
        timeout: float | None = None, on_output: OutputCallback | None = None,
    ) -> Result: ...                                 # (Sandbox.run passes them by position)

    def interrupt(self) -> None: ...                 # cancel the running run() (Ctrl-C)

    # file API; paths are absolute sandbox paths (the Sandbox resolves relative ones)
    def read_file(self, path: str) -> bytes: ...
    def write_file(self, path: str, data: bytes, mode: int = 0o644) -> None: ...
    def list_files(self, path: str) -> list[dict[str, Any]]: ...
    def exists(self, path: str) -> bool: ...
    def remove(self, path: str, recursive: bool = False) -> None: ...

    # shell state as a JSON-able dict (cwd, vars, exported, arrays, functions, options,
    # traps, aliases, dirstack, history); used by snapshots and by reset
    def get_state(self) -> dict[str, Any]: ...
    def set_state(self, state: dict[str, Any]) -> None: ...
    @property
    def cwd(self) -> str: ...
    @property
    def env(self) -> Mapping[str, str]: ...

    def close(self) -> None: ...
