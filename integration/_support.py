"""Helpers shared by the real-kernel tests (imported by conftest.py and the test modules)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BATTERY = os.path.join(HERE, "_battery.py")
TEST_USER = "agbtest"
PIP_PACKAGE = "termcolor"  # tiny, pure Python, not on this machine's system Python


def sandbox_supported() -> tuple[bool, str]:
    from agentic_bash.isolation.plan import plan
    from agentic_bash.isolation.probe import probe

    p = plan("namespace", probe())
    if p.level != "namespace":
        return False, "; ".join(p.warnings)
    return True, ""


def pypi_reachable() -> bool:
    try:
        with socket.create_connection(("pypi.org", 443), timeout=5):
            return True
    except OSError:
        return False


def _parse(out: str) -> dict:
    marker = "\n@@JSON@@"
    if marker not in out:
        raise AssertionError(f"battery printed no result:\n{out[-4000:]}")
    return json.loads(out.rsplit(marker, 1)[1])


class Runner:
    """Runs ``_battery.py`` as one identity and returns its JSON."""

    def __init__(self, name: str, prefix: list[str], python: str, env: dict[str, str],
                 cwd: str) -> None:
        self.name, self.prefix, self.python, self.env, self.cwd = name, prefix, python, env, cwd

    def battery(self, *args: str, timeout: float = 400) -> dict:
        return self.script(BATTERY, *args, timeout=timeout)

    def script(self, path: str, *args: str, timeout: float = 400) -> dict:
        """Run one of this directory's check scripts (a name or path) as this identity and
        return the JSON it printed after its @@JSON@@ marker."""
        path = os.path.join(HERE, path)
        p = subprocess.run(self.prefix + [self.python, path, *args], capture_output=True,
                           text=True, env=self.env, cwd=self.cwd, timeout=timeout)
        if p.returncode != 0:
            raise AssertionError(f"{os.path.basename(path)} failed ({p.returncode}) as "
                                 f"{self.name}:\n{p.stdout[-3000:]}\n{p.stderr[-5000:]}")
        return _parse(p.stdout)


