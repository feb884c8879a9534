"""Native writes into empty uppers of the session layer are reported (the scanner's inotify skip), as root and as an unprivileged user."""

from __future__ import annotations

import os
import subprocess

import pytest

from _support import HERE, _parse, sandbox_supported

ok, why = sandbox_supported()
pytestmark = [pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}"),
              pytest.mark.timeout(300)]


@pytest.mark.parametrize("who", ["root", "user"])
def test_first_native_write_into_each_empty_upper_is_reported(who: str,
                                                              request: pytest.FixtureRequest) -> None:
    runner = request.getfixturevalue("as_root" if who == "root" else "as_user")
    p = subprocess.run(runner.prefix + [runner.python, os.path.join(HERE, "_layerscan_check.py")],
                       capture_output=True, text=True, env=runner.env, cwd=runner.cwd,
                       timeout=240)
    assert p.returncode == 0, f"{p.stdout[-3000:]}\n{p.stderr[-5000:]}"
    got = _parse(p.stdout)
    if who == "root":
        assert got["inotify"] is True, got   # the path under test, not the fstat fallback
    assert got["steps"], got
    checked = 0
    for step in got["steps"]:
        kind, path = step["want"]
        target = "/" + path.strip("/").split("/")[0]
        if not any(path.startswith(u.rstrip("/") + "/") for u in got["uppers"]):
            continue   # (no upper there for this user: nothing to track)
        checked += 1
        assert step["exit"] == 0, step
        assert path in step["got"][kind], (target, step)
    assert checked, got   # (some step under an upper: else nothing was looked at)
