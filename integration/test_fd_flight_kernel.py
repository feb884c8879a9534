"""A workload's descriptors in flight over unix sockets, counted per user by Linux, never stop the caller from starting its next sandbox, as root and as an unprivileged user."""

from __future__ import annotations

import os
import subprocess

import pytest

from _support import HERE, _parse, sandbox_supported

ok, why = sandbox_supported()
pytestmark = [pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}"),
              pytest.mark.timeout(300)]


@pytest.mark.parametrize("who", ["root", "user"])
def test_fds_in_flight_do_not_block_the_next_sandbox(who: str, request: pytest.FixtureRequest) -> None:
    runner = request.getfixturevalue("as_root" if who == "root" else "as_user")
    p = subprocess.run(runner.prefix + [runner.python, os.path.join(HERE, "_flight_check.py")],
                       capture_output=True, text=True, env=runner.env, cwd=runner.cwd, timeout=240)
    assert p.returncode == 0, f"{p.stdout[-3000:]}\n{p.stderr[-5000:]}"
    got = _parse(p.stdout)
    assert "error" not in got, got["error"]
    # the workload filled what it may (refused with ETOOMANYREFS, 109), far past a host's
    # usual soft limit of 1024
    n, err = int(got["hog"][0]), int(got["hog"][1])
    assert err == 109 and n > 1024, got
    # and stays below what the caller's senders may raise themselves to
    soft, hard = (int(x) for x in got["limits"])
    assert soft <= hard <= got["host_hard"] - 512, got
    assert got["other"] == ["other\n", "", 0], got
    assert got["same"] == ["same\n", "", 0], got
