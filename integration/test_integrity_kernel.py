"""Session integrity on the real kernel: random interleavings never give a call another call's result."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import _integrity_ops as ops
from _support import HERE

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def _levels() -> list[str]:
    from agentic_bash.isolation.plan import plan
    from agentic_bash.isolation.probe import probe
    caps = probe()
    out = ["virtual", "none"]
    for lvl in ("namespace", "landlock"):
        if plan(lvl, caps).level == lvl:
            out.append(lvl)
    return out


LEVELS = _levels()


@pytest.fixture(scope="module", params=LEVELS)
def session(request: pytest.FixtureRequest):
    s = ops.Session(request.param)
    assert s.sb.isolation_level == request.param
    yield s
    s.close()


@settings(max_examples=8, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(seq=st.lists(st.tuples(st.sampled_from(ops.OPS), st.floats(0, 1)), min_size=1,
                    max_size=5))
def _prop(session: ops.Session, seq: list[tuple[str, float]]) -> None:
    ops.run_sequence(session, seq)


def test_interleavings_never_shift_results_as_root(session: ops.Session) -> None:
    """Valid calls, invalid arguments, SIGINT, timeouts, calls abandoned on a thread or by
    asyncio cancellation, failing stream callbacks: every call gets its own output."""
    _prop(session)


def _as_user(runner, *args: str) -> dict:
    d = tempfile.mkdtemp(prefix="agb-integrity-")
    try:
        os.chmod(d, 0o755)
        script = os.path.join(d, "_integrity_ops.py")
        shutil.copy(os.path.join(HERE, "_integrity_ops.py"), script)
        os.chmod(script, 0o644)
        p = subprocess.run(runner.prefix + [runner.python, script, *args],
                           capture_output=True, text=True, env=runner.env, cwd="/",
                           timeout=300)
        assert p.returncode == 0, p.stderr[-4000:]
        return json.loads(p.stdout.rsplit("@@JSON@@", 1)[1])
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("level", LEVELS)
def test_interleavings_never_shift_results_unprivileged(as_user, level: str) -> None:
    got = _as_user(as_user, level, "3", "5")
    assert got["uid"] != 0 and got["level"] == level and got["ops"] == 15, got


SANDBOXED = [lvl for lvl in LEVELS if lvl in ("namespace", "landlock")]


@pytest.mark.parametrize("who", ["root", "user"])
@pytest.mark.parametrize("level", SANDBOXED)
def test_crash_restarts_over_the_same_files(request: pytest.FixtureRequest, who: str,
                                            level: str) -> None:
    if who == "root":
        got = ops.crash_check(level)
    else:
        got = _as_user(request.getfixturevalue("as_user"), level, "crash")
        assert got["uid"] != 0
    assert got["level"] == level and got["new_pid"], got
