"""Differential harness for grep/sed/find/xargs/diff/expr: ours over a MemoryFS vs the real GNU tool."""

from __future__ import annotations

import io
import os
import subprocess
import tempfile
from dataclasses import dataclass, replace
from typing import Mapping, Sequence

from agentic_bash.commands import load_all
from agentic_bash.commands.base import REGISTRY, CommandContext, SystemInfo
from agentic_bash.limits import Budget, Limits
from agentic_bash.vfs.memory import MemoryFS

ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/home/user", "LANG": "C.UTF-8",
       "USER": "user", "LOGNAME": "user", "TZ": "UTC"}
CWD = "/workspace"
HOST_FALLBACK = {"echo", "true", "false", "printf"}

Files = Mapping[str, "bytes | str | None"]  # None = directory; "->target" (str) = symlink


@dataclass
class Out:
    stdout: bytes
    stderr: bytes
    status: int


def make_fs(files: Files | None, cwd: str = CWD) -> MemoryFS:
    fs = MemoryFS()
    for d in ("/workspace", "/home", "/home/user", "/tmp"):
        if not fs.exists(d):
            fs.mkdir(d)
    for name, data in (files or {}).items():
        p = name if name.startswith("/") else f"{cwd}/{name}"
        cur = ""
        for part in p.strip("/").split("/")[:-1]:
            cur += "/" + part
            if not fs.exists(cur):
                fs.mkdir(cur)
        if data is None:
            if not fs.exists(p):
                fs.mkdir(p)
        elif isinstance(data, str) and data.startswith("->"):
            fs.symlink(data[2:], p)
        else:
            with fs.open(p, "wb") as f:
                f.write(data.encode() if isinstance(data, str) else data)
    return fs


def _exec_factory(base: CommandContext):  # noqa: ANN202
    def run(argv, *, stdin=None, stdout=None, stderr=None, env=None, cwd=None):  # noqa: ANN001, ANN202
        spec = REGISTRY.get(argv[0])
        err = stderr or base.stderr
        if spec is None and argv[0] in HOST_FALLBACK:
            # harness only: trivial commands that touch no files run as the real binary
            p = subprocess.run(list(argv), input=b"", capture_output=True, env=dict(ENV))
            (stdout or base.stdout).write(p.stdout)
            err.write(p.stderr)
            return p.returncode
        if spec is None:
            err.write(f"{argv[0]}: command not found\n".encode())
            return 127
        ctx = replace(base, stdin=stdin or base.stdin, stdout=stdout or base.stdout, stderr=err,
                      env=env if env is not None else base.env, cwd=cwd or base.cwd, name=argv[0])
        ctx = replace(ctx, exec=_exec_factory(ctx))
        return spec.fn(ctx, list(argv))
    return run


def ours(argv: Sequence[str], files: Files | None = None, stdin: bytes = b"",
         env: Mapping[str, str] | None = None, fs: MemoryFS | None = None, cwd: str = CWD,
         timeout: float | None = None) -> Out:
    load_all()
    fs = fs if fs is not None else make_fs(files, cwd)
    out, err = io.BytesIO(), io.BytesIO()
    e = dict(ENV)
    e.update(env or {})
    limits = Limits() if timeout is None else Limits(timeout=timeout)
    ctx = CommandContext(fs=fs, cwd=cwd, env=e, stdin=io.BytesIO(stdin), stdout=out, stderr=err,
                         budget=Budget(limits), info=SystemInfo(), name=argv[0])
    ctx = replace(ctx, exec=_exec_factory(ctx))
    status = REGISTRY[argv[0]].fn(ctx, list(argv))
    return Out(out.getvalue(), err.getvalue(), status)


def write_real(root: str, files: Files | None) -> None:
    for name, data in (files or {}).items():
        p = os.path.join(root, name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        if data is None:
            os.makedirs(p, exist_ok=True)
        elif isinstance(data, str) and data.startswith("->"):
            os.symlink(data[2:], p)
        else:
            with open(p, "wb") as f:
                f.write(data.encode() if isinstance(data, str) else data)


def real(argv: Sequence[str], files: Files | None = None, stdin: bytes = b"",
         env: Mapping[str, str] | None = None) -> Out:
    with tempfile.TemporaryDirectory() as root:
        w = os.path.join(root, "workspace")
        os.mkdir(w)
        write_real(w, files)
        e = dict(ENV)
        e.update(env or {})
        p = subprocess.run(list(argv), input=stdin, capture_output=True, cwd=w, env=e, timeout=20)
        return Out(p.stdout, p.stderr, p.returncode)


def assert_same(argv: Sequence[str], files: Files | None = None, stdin: bytes = b"",
                env: Mapping[str, str] | None = None, check_stderr: bool = True,
                sort: bool = False) -> None:
    a = ours(argv, files, stdin, env)
    b = real(argv, files, stdin, env)
    ao, bo = a.stdout, b.stdout
    if sort:
        ao, bo = sorted(ao.replace(b"\0", b"\n").split(b"\n")), sorted(bo.replace(b"\0", b"\n").split(b"\n"))
    assert ao == bo, f"stdout differs for {argv}:\nours={a.stdout!r}\nreal={b.stdout!r}\n(ours stderr={a.stderr!r})"
    if check_stderr:
        ae, be = a.stderr, b.stderr
        if sort:
            ae, be = sorted(ae.split(b"\n")), sorted(be.split(b"\n"))
        assert ae == be, f"stderr differs for {argv}:\nours={a.stderr!r}\nreal={b.stderr!r}"
    assert a.status == b.status, f"status differs for {argv}: ours={a.status} real={b.status} (stderr ours={a.stderr!r} real={b.stderr!r})"
