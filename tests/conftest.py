"""Shared fixtures: a fresh virtual sandbox and the real bash for differential tests."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

BASH = shutil.which("bash") or "/usr/bin/bash"

# integration/conftest.py's as_root/as_user/token fixtures (the unprivileged test user, made
# once per run under a lock), for the tests here that also run as that user
_INTEGRATION = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "integration")
if _INTEGRATION not in sys.path:
    sys.path.insert(0, _INTEGRATION)
_spec = importlib.util.spec_from_file_location("_agb_integration_conftest",
                                               os.path.join(_INTEGRATION, "conftest.py"))
_integration = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(_integration)  # type: ignore[union-attr]
as_root = _integration.as_root
as_user = _integration.as_user
token = _integration.token


def real_bash(script: str, cwd: str | None = None, stdin: bytes = b"", timeout: float = 20) -> subprocess.CompletedProcess[bytes]:
    """Run ``script`` with the real GNU bash, in a clean minimal environment."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": cwd or "/tmp", "LANG": "C.UTF-8", "TERM": "dumb"}
    return subprocess.run([BASH, "-c", script], input=stdin, capture_output=True, cwd=cwd, env=env, timeout=timeout)


@pytest.fixture
def sb():
    from agentic_bash import Sandbox

    s = Sandbox(isolation="virtual")
    try:
        yield s
    finally:
        s.close()


if os.environ.get("AGB_COW_CHECK"):
    @pytest.fixture(autouse=True)
    def _cow_check():
        """AGB_COW_CHECK=1: fail a test in which an array shared by a fork changed in place
        (shell.state.Var: a change must own() the dict first)."""
        from agentic_bash.shell import state
        yield
        bad = state.cow_violations()
        state._COW_CHECK.clear()  # type: ignore[union-attr]
        assert not bad, f"shared arrays changed in place: {[b[:5] for b in bad]}"


@pytest.fixture
def tmpdir_real(tmp_path):
    d = tmp_path / "real"
    d.mkdir()
    return str(d)


_ = os
