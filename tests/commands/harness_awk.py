"""Direct-call harness for helper-8's commands (awk jq archives bc sysutils) over a MemoryFS."""

from __future__ import annotations

import io
import os
import shlex
import subprocess
from dataclasses import dataclass
from typing import Mapping

import importlib

from agentic_bash.commands.base import REGISTRY, CommandContext, SystemInfo
from agentic_bash.limits import Budget, Limits
from agentic_bash.vfs.memory import MemoryFS

# Only helper-8's own modules: the harness must not break when another group's module is mid-edit.
OWN_MODULES = ("sysutils", "awkcmd", "jqcmd", "archive", "bccmd")


def load_all() -> dict:
    for m in OWN_MODULES:
        try:
            importlib.import_module(f"agentic_bash.commands.{m}")
        except ModuleNotFoundError as e:
            if e.name != f"agentic_bash.commands.{m}":
                raise
    return REGISTRY


DEFAULT_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/home/user", "LANG": "C.UTF-8",
               "USER": "user", "LOGNAME": "user"}


@dataclass
class Out:
    stdout: bytes
    stderr: bytes
    status: int

    @property
    def out(self) -> str:
        return self.stdout.decode("utf-8", "surrogateescape")

    @property
    def err(self) -> str:
        return self.stderr.decode("utf-8", "surrogateescape")


class Harness:
    """A MemoryFS with ``/workspace`` as cwd; ``run(argv)`` calls a registered command directly."""

    def __init__(self, files: Mapping[str, bytes | str] | None = None, env: Mapping[str, str] | None = None,
                 limits: Limits | None = None) -> None:
        self.fs = MemoryFS()
        for d in ("/workspace", "/home", "/home/user", "/tmp", "/bin", "/usr", "/usr/bin"):
            if not self.fs.exists(d):
                self.fs.mkdir(d)
        self.cwd = "/workspace"
        self.env = dict(DEFAULT_ENV if env is None else env)
        self.limits = limits or Limits()
        for name, data in (files or {}).items():
            self.write(name, data)

    def write(self, name: str, data: bytes | str, mode: int = 0o644) -> None:
        p = name if name.startswith("/") else f"{self.cwd}/{name}"
        parts = p.strip("/").split("/")
        cur = ""
        for part in parts[:-1]:
            cur += "/" + part
            if not self.fs.exists(cur):
                self.fs.mkdir(cur)
        with self.fs.open(p, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        self.fs.chmod(p, mode)

    def read(self, name: str) -> bytes:
        p = name if name.startswith("/") else f"{self.cwd}/{name}"
        with self.fs.open(p, "rb") as f:
            return f.read()

    def ctx(self, argv0: str, stdin: bytes, stdout, stderr, env=None, cwd=None, budget=None) -> CommandContext:
        return CommandContext(fs=self.fs, cwd=cwd or self.cwd, env=dict(env if env is not None else self.env),
                              stdin=io.BytesIO(stdin) if isinstance(stdin, bytes) else stdin,
                              stdout=stdout, stderr=stderr, budget=budget or Budget(self.limits),
                              info=SystemInfo(), exec=self._exec, name=argv0)

    def _exec(self, argv, *, stdin=None, stdout=None, stderr=None, env=None, cwd=None) -> int:
        reg = load_all()
        if argv[:2] == ["sh", "-c"] and len(argv) >= 3:
            # Stand-in for the shell until the interpreter exists: a plain command line made
            # of registered commands runs in-process; anything else runs on the host's sh
            # (tests only: no files of the MemoryFS are visible there).
            try:
                words = shlex.split(argv[2])
            except ValueError:
                words = []
            own = words and words[0] in reg and reg[words[0]].fn.__module__.rsplit(".", 1)[-1] in OWN_MODULES
            if own and not any(c in argv[2] for c in "|;&<>$`()"):
                argv = words
            else:
                data = stdin.read() if stdin is not None else b""
                p = subprocess.run(["/bin/sh", "-c", argv[2]], input=data, capture_output=True,
                                   env=dict(env if env is not None else self.env), timeout=30)
                (stdout or io.BytesIO()).write(p.stdout)
                (stderr or io.BytesIO()).write(p.stderr)
                return p.returncode
        spec = reg.get(argv[0])
        if spec is None:
            (stderr or io.BytesIO()).write(f"sh: 1: {argv[0]}: not found\n".encode())
            return 127
        c = self.ctx(argv[0], stdin if stdin is not None else io.BytesIO(b""), stdout or io.BytesIO(),
                     stderr or io.BytesIO(), env=env, cwd=cwd)
        return spec.fn(c, list(argv))

    def run(self, argv: list[str] | str, stdin: bytes | str = b"", env: Mapping[str, str] | None = None) -> Out:
        if isinstance(argv, str):
            argv = shlex.split(argv)
        reg = load_all()
        spec = reg[argv[0]]
        out, err = io.BytesIO(), io.BytesIO()
        c = self.ctx(argv[0], stdin.encode() if isinstance(stdin, str) else stdin, out, err, env=env)
        try:
            st = spec.fn(c, list(argv))
        except BrokenPipeError:
            st = 141
        return Out(out.getvalue(), err.getvalue(), st)


def real(argv: list[str], stdin: bytes | str = b"", cwd: str | None = None, env: Mapping[str, str] | None = None,
         timeout: float = 30) -> Out:
    """Run the real tool."""
    e = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp"}
    if env:
        e.update(env)
    # Without a cwd the tool runs in a scratch dir: `print n > 0` in awk writes a file "0".
    import shutil
    import tempfile

    scratch = None if cwd is not None else tempfile.mkdtemp(prefix="awk-real-")
    try:
        p = subprocess.run(argv, input=stdin.encode() if isinstance(stdin, str) else stdin,
                           capture_output=True, cwd=cwd or scratch, env=e, timeout=timeout)
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    return Out(p.stdout, p.stderr, p.returncode)


_ = os
