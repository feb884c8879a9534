"""Loads the differential spec table: ``cases/*.txt`` files of ``## name [flags]`` blocks."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass

HERE = os.path.dirname(__file__)
_HDR = re.compile(r"^## (.+?)(?:\s+\[(.*)\])?\s*$")


@dataclass(frozen=True)
class Case:
    file: str
    name: str
    script: str
    stdin: bytes = b""
    flags: tuple[str, ...] = ()
    xfail: str | None = None

    @property
    def id(self) -> str:
        return f"{self.file}:{self.name}"


def load_cases() -> list[Case]:
    out: list[Case] = []
    d = os.path.join(HERE, "cases")
    for fn in sorted(os.listdir(d)):
        if not fn.endswith(".txt"):
            continue
        with open(os.path.join(d, fn), encoding="utf-8") as f:
            text = f.read()
        cur: list[str] | None = None
        name = ""
        flags: list[str] = []
        def flush() -> None:
            if cur is None:
                return
            body = "\n".join(cur)
            stdin = b""
            if "\n--- stdin\n" in "\n" + body:
                body, _, sin = ("\n" + body).partition("\n--- stdin\n")
                body = body[1:]
                stdin = (sin if sin.endswith("\n") else sin + "\n").encode()
            xf = None
            fl = []
            for fl_ in flags:
                if fl_.startswith("xfail:"):
                    xf = fl_[6:].strip()
                else:
                    fl.append(fl_.strip())
            out.append(Case(fn[:-4], name, body.rstrip("\n"), stdin, tuple(fl), xf))
        for line in text.split("\n"):
            m = _HDR.match(line)
            if m:
                flush()
                name = m.group(1)
                flags = [x for x in (m.group(2) or "").split(";") if x.strip()]
                cur = []
            elif cur is not None:
                cur.append(line)
        flush()
    return out


BASH = shutil.which("bash") or "/usr/bin/bash"


def bash_c(script: str, cwd: str | None = None, stdin: bytes = b"", timeout: float = 20) -> subprocess.CompletedProcess[bytes]:
    """``bash -c script`` with argv[0] ``bash`` (as the held-out expectations were recorded)."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/home/user", "USER": "user",
           "LANG": "C.UTF-8", "TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat"}
    return subprocess.run(["bash", "-c", script], executable=BASH, input=stdin, capture_output=True,
                          cwd=cwd, env=env, timeout=timeout)
