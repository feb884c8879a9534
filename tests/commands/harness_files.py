"""Differential harness for helper-6's file and text commands: ours over a MemoryFS vs real GNU."""

from __future__ import annotations

import io
import os
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Mapping, Sequence

from agentic_bash.commands import load_all
from agentic_bash.commands.base import REGISTRY, CommandContext, SystemInfo
from agentic_bash.limits import Budget, Limits
from agentic_bash.vfs.memory import MemoryFS

ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/home/user", "LANG": "C.UTF-8",
       "USER": "user", "LOGNAME": "user", "TZ": "UTC"}

Files = Mapping[str, "bytes | str | None"]  # None = directory


@dataclass
class Out:
    stdout: bytes
    stderr: bytes
    status: int

    def __iter__(self):  # noqa: ANN204
        return iter((self.stdout, self.stderr, self.status))


FIXED_TIME = 1704164645.0  # 2024-01-02 03:04:05 UTC: ls -l dates stable in both worlds
ROOT_INFO = SystemInfo(user="root", uid=0, gid=0, group="root", home="/root")


def make_fs(files: Files | None, cwd: str = "/workspace", root: bool = False,
            fixed_time: bool = False) -> MemoryFS:
    fs = MemoryFS(uid=0, gid=0) if root else MemoryFS()
    for d in ("/workspace", "/home", "/home/user", "/tmp"):
        if not fs.exists(d):
            fs.mkdir(d)
    for name, data in (files or {}).items():
        p = name if name.startswith("/") else f"{cwd}/{name}"
        cur = ""
        parts = p.strip("/").split("/")
        for part in parts[:-1]:
            cur += "/" + part
            if not fs.exists(cur):
                fs.mkdir(cur)
        if data is None:
            if not fs.exists(p):
                fs.mkdir(p)
            continue
        if name.startswith("@link:"):
            continue
        with fs.open(p, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
    if fixed_time:
        for name in files or {}:
            p = name if name.startswith("/") else f"{cwd}/{name}"
            fs.utime(p, (FIXED_TIME, FIXED_TIME))
        fs.utime(cwd, (FIXED_TIME, FIXED_TIME))
    return fs


def snapshot_fs(fs: MemoryFS, root: str = "/workspace") -> dict[str, tuple]:
    """name -> (kind, mode, content-or-target) for everything under ``root``."""
    out: dict[str, tuple] = {}

    def walk(p: str, rel: str) -> None:
        for n in sorted(fs.listdir(p)):
            cp, cr = f"{p}/{n}", f"{rel}{n}"
            st = fs.stat(cp, follow_symlinks=False)
            if st.is_symlink:
                out[cr] = ("l", fs.readlink(cp))
            elif st.is_dir:
                out[cr] = ("d", oct(st.st_mode & 0o7777))
                walk(cp, cr + "/")
            else:
                with fs.open(cp, "rb") as f:
                    out[cr] = ("f", oct(st.st_mode & 0o7777), f.read())
    walk(root, "")
    return out


def snapshot_real(root: str) -> dict[str, tuple]:
    out: dict[str, tuple] = {}

    def walk(p: str, rel: str) -> None:
        for n in sorted(os.listdir(p)):
            cp, cr = os.path.join(p, n), f"{rel}{n}"
            st = os.lstat(cp)
            import stat as S
            if S.S_ISLNK(st.st_mode):
                out[cr] = ("l", os.readlink(cp))
            elif S.S_ISDIR(st.st_mode):
                out[cr] = ("d", oct(st.st_mode & 0o7777))
                walk(cp, cr + "/")
            else:
                with open(cp, "rb") as f:
                    out[cr] = ("f", oct(st.st_mode & 0o7777), f.read())
    walk(root, "")
    return out


def ours(argv: Sequence[str], files: Files | None = None, stdin: bytes = b"",
         env: Mapping[str, str] | None = None, fs: MemoryFS | None = None,
         cwd: str = "/workspace") -> Out:
    load_all()
    fs = fs if fs is not None else make_fs(files, cwd)
    out, err = io.BytesIO(), io.BytesIO()
    e = dict(ENV)
    e.update(env or {})
    ctx = CommandContext(fs=fs, cwd=cwd, env=e, stdin=io.BytesIO(stdin), stdout=out, stderr=err,
                         budget=Budget(Limits()), info=SystemInfo(), name=argv[0])
    status = REGISTRY[argv[0]].fn(ctx, list(argv))
    return Out(out.getvalue(), err.getvalue(), status)


def write_real(root: str, files: Files | None) -> None:
    for name, data in (files or {}).items():
        p = os.path.join(root, name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        if data is None:
            os.makedirs(p, exist_ok=True)
            continue
        with open(p, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)


def real(argv: Sequence[str], files: Files | None = None, stdin: bytes = b"",
         env: Mapping[str, str] | None = None) -> Out:
    with tempfile.TemporaryDirectory() as root:
        write_real(root, files)
        e = dict(ENV)
        e["HOME"] = root
        e.update(env or {})
        p = subprocess.run(list(argv), input=stdin, capture_output=True, cwd=root, env=e, timeout=20)
        return Out(p.stdout, p.stderr, p.returncode)


def real_script(script: str, files: Files | None = None, stdin: bytes = b"",
                env: Mapping[str, str] | None = None) -> Out:
    return real(["/usr/bin/bash", "-c", script], files, stdin, env)


def compare(argv: Sequence[str], files: Files | None = None, stdin: bytes = b"",
            env: Mapping[str, str] | None = None, check_stderr: bool = True) -> tuple[Out, Out]:
    a = ours(argv, files, stdin, env)
    b = real(argv, files, stdin, env)
    return a, b


def assert_same(argv: Sequence[str], files: Files | None = None, stdin: bytes = b"",
                env: Mapping[str, str] | None = None, check_stderr: bool = True) -> None:
    a, b = compare(argv, files, stdin, env)
    assert a.stdout == b.stdout, f"stdout differs for {argv}:\nours={a.stdout!r}\nreal={b.stdout!r}"
    if check_stderr:
        assert a.stderr == b.stderr, f"stderr differs for {argv}:\nours={a.stderr!r}\nreal={b.stderr!r}"
    assert a.status == b.status, f"status differs for {argv}: ours={a.status} real={b.status} (stderr ours={a.stderr!r} real={b.stderr!r})"
