"""pip in the default Sandbox as root and as an unprivileged user: a venv's pip installs into the venv and the system pip into a writable place (check10: PIP_USER=1 made every venv's pip refuse for the user)."""

from __future__ import annotations

import os
import subprocess

import pytest

from _support import HERE, _parse, sandbox_supported

ok, why = sandbox_supported()
pytestmark = [pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}"),
              pytest.mark.timeout(400)]


@pytest.mark.parametrize("who", ["root", "user"])
def test_pip_into_a_venv_and_the_system_python(who: str, request: pytest.FixtureRequest) -> None:
    runner = request.getfixturevalue("as_root" if who == "root" else "as_user")
    p = subprocess.run(runner.prefix + [runner.python, os.path.join(HERE, "_pip_venv_check.py")],
                       capture_output=True, text=True, env=runner.env, cwd=runner.cwd, timeout=300)
    assert p.returncode == 0, f"{p.stdout[-3000:]}\n{p.stderr[-5000:]}"
    got = _parse(p.stdout)
    assert "error" not in got, got["error"]
    out, err, _ = got["run"]
    assert "venv_pip=0\nvenv c10ok\n" in out, (out, err)
    assert "site_pip=0\nsite c10ok\n" in out, (out, err)
