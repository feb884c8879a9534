"""The public Sandbox: a persistent bash session over a chosen isolation level."""

from __future__ import annotations

import posixpath
import warnings
import weakref
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, BinaryIO, Callable, Mapping

from .commands.base import SystemInfo
from .errors import IsolationUnavailable, SandboxClosed
from .limits import Limits
from .result import Result, truncate
from .vfs.paths import normalize

__all__ = ["Mount", "Result", "Sandbox", "truncate"]

ISOLATION_LEVELS = ("auto", "virtual", "namespace", "landlock", "none")


@dataclass(frozen=True, slots=True)
class Mount:
    """A host directory mapped into the sandbox: ``cow`` (default), ``ro`` or ``rw``."""

    src: str
    mode: str = "cow"

    def __post_init__(self) -> None:
        if self.mode not in ("cow", "ro", "rw"):
            raise ValueError(f"mount mode must be 'cow', 'ro' or 'rw', not {self.mode!r}")


def _norm_mounts(mounts: Mapping[str, Any] | None) -> dict[str, tuple[str, str]]:
    import os
    out: dict[str, tuple[str, str]] = {}
    for dest, spec in (mounts or {}).items():
        if isinstance(spec, Mount):
            src, mode = spec.src, spec.mode
        elif isinstance(spec, tuple):
            src, mode = spec
        else:
            src, mode = str(spec), "cow"
        out[normalize(dest)] = (os.path.abspath(os.fspath(src)), mode)
    return out


def _make_executor(isolation: str, *, env: dict[str, str], workdir: str, mounts: dict[str, tuple[str, str]],
                   limits: Limits, strict: bool, prefer_inprocess: bool, info: SystemInfo,
                   commands_allowlist: Any = None, **extra: Any) -> tuple[Any, str]:
    """Pick and build the executor for ``isolation``; returns (executor, level actually used)."""
    if isolation in ("namespace", "landlock"):
        try:
            from .executors.sandboxed import SandboxedExecutor
        except ImportError as e:
            raise IsolationUnavailable(f"isolation={isolation!r} is not available: {e}") from e
        ex = SandboxedExecutor(isolation=isolation, env=env, workdir=workdir, mounts=mounts,  # type: ignore[call-arg]
                               limits=limits, strict=strict, prefer_inprocess=prefer_inprocess,
                               info=info, commands_allowlist=commands_allowlist, **extra)
        return ex, isolation
    from .executors.inprocess import InProcessExecutor
    if isolation == "none":
        from .executors.native import NativeLauncher
        from .vfs.host import HostFS
        warnings.warn("isolation='none': commands run on the host with nothing confined",
                      RuntimeWarning, stacklevel=3)
        fs = HostFS("/", writable=True)
        ex = InProcessExecutor(fs=fs, native=NativeLauncher(), env=env, workdir=workdir, limits=limits,
                               info=info, prefer_inprocess=prefer_inprocess,
                               commands_allowlist=commands_allowlist)
        return ex, "none"
    # virtual ("auto" means virtual until the sandboxed level is wired in by the lead)
    from .vfs.layout import build_virtual_fs
    from .executors.inprocess import load_commands
    names = list(load_commands()) + ["bash", "sh"]
    fs, layer = build_virtual_fs(mounts, names, home=info.home, workdir=workdir, limits=limits)
    try:
        if not fs.exists(workdir):
            fs.mkdir(workdir)
    except OSError:
        pass
    ex = InProcessExecutor(fs=fs, native=None, env=env, workdir=workdir, limits=limits, info=info,
                           prefer_inprocess=True, commands_allowlist=commands_allowlist, layer=layer)
    return ex, "virtual"


def _close_executor(ex: Any) -> None:
    try:
        ex.close()
    except Exception:
        pass


class Sandbox:
    """A stateful bash session. Each ``run()`` behaves like ``bash -c`` on the persistent state.

    Hooks: ``on_output(fd, chunk)`` streams output as it is produced, ``before_run(script)``,
    ``after_run(result)``, ``on_violation(PolicyViolation)`` for each refused action.
    """

    def __init__(self, isolation: str = "auto", *, env: Mapping[str, str] | None = None,
                 workdir: str = "/workspace", mounts: Mapping[str, Any] | None = None,
                 limits: Limits | None = None, strict: bool = False,
                 commands: Mapping[str, Callable[..., int]] | None = None,
                 prefer_inprocess: bool = False, hostname: str = "sandbox", user: str = "user",
                 commands_allowlist: Any = None,
                 on_output: Callable[[int, bytes], None] | None = None,
                 on_violation: Callable[[Any], None] | None = None,
                 before_run: Callable[[str], None] | None = None,
                 after_run: Callable[[Result], None] | None = None, **extra: Any) -> None:
        if isolation not in ISOLATION_LEVELS:
            raise ValueError(f"isolation must be one of {ISOLATION_LEVELS}, not {isolation!r}")
        self.limits = limits if limits is not None else Limits()
        home = "/root" if user == "root" else f"/home/{user}"
        uid = 0 if user == "root" else 1000
        self.info = SystemInfo(hostname=hostname, user=user, uid=uid, gid=uid,
                               group="root" if uid == 0 else user, home=home)
        base_env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "USER": user,
                    "LANG": "C.UTF-8", "SHLVL": "1", "TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat"}
        if env:
            base_env.update(env)
        self.workdir = normalize(workdir)
        self._mounts = _norm_mounts(mounts)
        level = "virtual" if isolation == "auto" else isolation
        self._ex, self.isolation_level = _make_executor(
            level, env=base_env, workdir=self.workdir, mounts=self._mounts, limits=self.limits,
            strict=strict, prefer_inprocess=prefer_inprocess, info=self.info,
            commands_allowlist=commands_allowlist, **extra)
        self._on_output = on_output
        self._on_violation = on_violation
        self._before_run = before_run
        self._after_run = after_run
        self._closed = False
        self._finalizer = weakref.finalize(self, _close_executor, self._ex)
        for name, fn in (commands or {}).items():
            self.register_command(name, fn)

    # ------------------------------------------------------------------ running
    def run(self, script: str, *, stdin: bytes | str | BinaryIO | None = None,
            env: Mapping[str, str] | None = None, cwd: str | None = None,
            timeout: float | None = None) -> Result:
        self._check()
        if isinstance(stdin, str):
            stdin = stdin.encode("utf-8")
        if self._before_run is not None:
            self._before_run(script)
        r = self._ex.run(script, stdin=stdin, env=env, cwd=cwd, timeout=timeout,
                         on_output=self._on_output)
        if self._on_violation is not None:
            for v in r.violations:
                self._on_violation(v)
        if self._after_run is not None:
            self._after_run(r)
        return r

    def interrupt(self) -> None:
        self._ex.interrupt()

    def register_command(self, name: str, fn: Callable[..., int]) -> None:
        """Add a custom command ``fn(ctx, argv) -> int`` (found after functions and builtins)."""
        self._check()
        reg = getattr(self._ex, "register_command", None)
        if reg is None:
            raise NotImplementedError("this isolation level does not support custom commands")
        reg(name, fn)

    # ------------------------------------------------------------------ files
    def _abs(self, path: str) -> str:
        return normalize(path, self.cwd)

    def write_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        self._check()
        if isinstance(data, str):
            data = data.encode("utf-8")
        self._ex.write_file(self._abs(path), data, mode)

    def read_file(self, path: str) -> bytes:
        self._check()
        return self._ex.read_file(self._abs(path))

    def list_files(self, path: str = ".") -> list[dict[str, Any]]:
        self._check()
        return self._ex.list_files(self._abs(path))

    def exists(self, path: str) -> bool:
        self._check()
        return self._ex.exists(self._abs(path))

    def remove(self, path: str, recursive: bool = False) -> None:
        self._check()
        self._ex.remove(self._abs(path), recursive)

    # ------------------------------------------------------------------ state
    @property
    def cwd(self) -> str:
        return self._ex.cwd

    @property
    def env(self) -> Mapping[str, str]:
        return MappingProxyType(dict(self._ex.env))

    @property
    def closed(self) -> bool:
        return self._closed

    def get_state(self) -> dict[str, Any]:
        return self._ex.get_state()

    def set_state(self, state: dict[str, Any]) -> None:
        self._ex.set_state(state)

    def _check(self) -> None:
        if self._closed:
            raise SandboxClosed("sandbox is closed")

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._finalizer()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Sandbox isolation={self.isolation_level!r} cwd={self.cwd!r}{' closed' if self._closed else ''}>"

    _ = posixpath
