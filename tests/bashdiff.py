"""Shared harness of the differential tests: a script run by /bin/bash and by a sandbox the same way."""

from __future__ import annotations

import os
import shutil
import subprocess
import warnings
from typing import Any, Iterator

import pytest


def bash(script: str, cwd: str, home: str | None = None) -> tuple[str, str, int]:
    """(stdout, stderr, status) of ``script`` under /bin/bash: on its stdin, as a run is
    (errors read "bash: line N: ..."), inside ``( )`` so what one case sets stays in it."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    if home is not None:
        env["HOME"] = home
    p = subprocess.run(["bash"], executable="/bin/bash", input=f"(\n{script}\n)",
                       capture_output=True, text=True, cwd=cwd, env=env, timeout=60)
    return p.stdout, p.stderr, p.returncode


def sandbox(level: str, tmp_path_factory: Any, tools: tuple[str, ...] = ()) -> Iterator[Any]:
    """A sandbox of ``level`` for a module of cases (skipped where the level or a tool is
    missing); ``none`` works in a temporary directory of its own."""
    from agentic_bash import Sandbox
    if level == "namespace":
        from agentic_bash.isolation.plan import plan
        from agentic_bash.isolation.probe import probe
        if plan("namespace", probe()).level != "namespace":
            pytest.skip("no kernel sandbox here")
    for tool in tools:
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not installed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        kw = {"workdir": str(tmp_path_factory.mktemp("ws"))} if level == "none" else {}
        sb = Sandbox(isolation=level, **kw)
    try:
        yield sb
    finally:
        sb.close()


def run(sb: Any, script: str, timeout: float = 60) -> Any:
    """``script`` in the sandbox as bash() runs it: in ``( )``, in a fresh directory."""
    d = f"t{abs(hash(script))}"
    sb.run(f"mkdir -p {d}")
    sb.run(f"cd {d}")
    try:
        return sb.run(f"(\n{script}\n)", timeout=timeout)
    finally:
        sb.run("cd ..")
