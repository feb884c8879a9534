"""Fixtures for real-kernel tests: run the battery as root and as an unprivileged user made here."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from typing import Iterator

import pytest

from _support import HERE, TEST_USER, Runner  # noqa: E402


def _ensure_user() -> None:
    # pytest -n auto: several workers may get here at once
    with open(os.path.join(tempfile.gettempdir(), "agentic-bash-itest-user.lock"), "w") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)
        if subprocess.run(["id", "-u", TEST_USER], capture_output=True).returncode != 0:
            subprocess.run(["useradd", "-m", "-s", "/bin/bash", TEST_USER], check=True,
                           capture_output=True)


def _can_run(python: str, code: str, env: dict[str, str]) -> bool:
    p = subprocess.run(["runuser", "-u", TEST_USER, "--", python, "-c", code],
                       capture_output=True, env=env, cwd="/", timeout=60)
    return p.returncode == 0


@pytest.fixture(scope="session")
def as_root() -> Iterator[Runner]:
    if os.geteuid() != 0:
        pytest.skip("not running as root")
    # a private TMPDIR: the leak check counts session dirs, and xdist workers run in parallel
    tmp = tempfile.mkdtemp(prefix="agentic-bash-it-root-")
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
           "HOME": os.path.expanduser("~"), "LANG": "C.UTF-8", "TMPDIR": tmp,
           "PYTHONPATH": os.path.dirname(HERE)}
    yield Runner("root", [], sys.executable, env, "/")
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="session")
def as_user(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runner]:
    """An unprivileged user created for this test run, with a world-readable copy of the
    package; the interpreter is this venv's Python if that user can execute it, else
    /usr/bin/python3 with the needed site-packages copied next to the package."""
    if os.geteuid() != 0:
        pytest.skip("creating the unprivileged test user needs root")
    if not shutil.which("useradd") or not shutil.which("runuser"):
        pytest.skip("useradd/runuser missing")
    _ensure_user()
    home = os.path.expanduser(f"~{TEST_USER}")
    d = tempfile.mkdtemp(prefix="agentic-bash-it-")
    os.chmod(d, 0o755)
    import agentic_bash
    pkg = os.path.dirname(os.path.abspath(agentic_bash.__file__))
    shutil.copytree(pkg, os.path.join(d, "agentic_bash"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    tmp = os.path.join(d, "tmp")
    os.mkdir(tmp)
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
           "HOME": home, "LANG": "C.UTF-8", "PYTHONPATH": d, "USER": TEST_USER,
           "TMPDIR": tmp}
    python = sys.executable
    if not _can_run(python, "import pyseccomp, regex", env):
        python = "/usr/bin/python3"
        for name in ("regex", "pyseccomp", "psutil", "landlock"):
            try:
                mod = __import__(name)
            except Exception:  # noqa: BLE001
                continue
            f = os.path.abspath(mod.__file__)
            src = os.path.dirname(f) if f.endswith("__init__.py") else f
            dst = os.path.join(d, os.path.basename(src))
            (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, dst)
    for root, dirs, files in os.walk(d):
        for x in dirs:
            os.chmod(os.path.join(root, x), 0o755)
        for x in files:
            os.chmod(os.path.join(root, x), 0o644)
    os.chmod(tmp, 0o1777)
    if not _can_run(python, "import agentic_bash.executors.sandboxed", env):
        shutil.rmtree(d, ignore_errors=True)
        pytest.skip(f"{TEST_USER} cannot import the package with {python}")
    yield Runner(TEST_USER, ["runuser", "-u", TEST_USER, "--"], python, env, "/")
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def token() -> str:
    return uuid.uuid4().hex[:10]
