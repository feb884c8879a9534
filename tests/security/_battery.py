"""Runs the attack battery (_attacks.py) as root or the unprivileged test user, once per (identity, part), and returns its JSON."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import pytest

ATTACKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_attacks.py")
_cache: dict[tuple[str, str], dict] = {}


def run_battery(request: pytest.FixtureRequest, who: str, what: str, token: str,
                timeout: float = 500) -> dict[str, Any]:
    key = (who, what)
    if key not in _cache:
        runner = request.getfixturevalue("as_root" if who == "root" else "as_user")
        p = subprocess.run(runner.prefix + [runner.python, ATTACKS, what, f"{token}{who}"],
                           capture_output=True, text=True, env=runner.env, cwd=runner.cwd,
                           timeout=timeout)
        marker = "\n@@JSON@@"
        if p.returncode != 0 or marker not in p.stdout:
            raise AssertionError(f"attack battery part {what!r} failed ({p.returncode}) as "
                                 f"{who}:\n{p.stdout[-3000:]}\n{p.stderr[-5000:]}")
        _cache[key] = json.loads(p.stdout.rsplit(marker, 1)[1])
    return _cache[key]
