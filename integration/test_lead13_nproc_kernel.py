"""A fork refused at the process limit is the run's limit_exceeded even when the processes that filled the limit are gone by the end of the run (as root: the pids group's counter; as a user: RLIMIT_NPROC, which has none)."""

from __future__ import annotations

import os
import subprocess

import pytest

from _support import HERE, _parse, sandbox_supported

ok, why = sandbox_supported()
pytestmark = [pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}"),
              pytest.mark.timeout(300)]


@pytest.mark.parametrize("who", ["root", "user"])
def test_a_refused_fork_is_reported_after_its_jobs_are_gone(request: pytest.FixtureRequest,
                                                            who: str) -> None:
    runner = request.getfixturevalue("as_root" if who == "root" else "as_user")
    p = subprocess.run(runner.prefix + [runner.python, os.path.join(HERE, "_lead13_nproc_check.py")],
                       capture_output=True, text=True, env=runner.env, cwd=runner.cwd, timeout=240)
    assert p.returncode == 0, f"{p.stdout[-3000:]}\n{p.stderr[-5000:]}"
    obs = _parse(p.stdout)
    out, err, code, exceeded = obs["fill"]
    assert out == "rc=254\ndone\n" and "fork: Resource temporarily unavailable" in err, obs
    assert exceeded == "processes", obs
    assert obs["after"] == ["rc=0\n", 0, None], obs   # blamed on that run only
