"""Generated hostile scripts keep the run contract: no exception, no internal error, bounded time, usable session."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentic_bash as ab

from hostile import script

TIMEOUT = 0.5
SLACK = 1.0  # the promise is 50 ms past the timeout; a shared CI machine gets a second


@pytest.fixture(scope="module")
def sb():
    s = ab.Sandbox(isolation="virtual")
    yield s
    s.close()


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_hostile_scripts_keep_the_contract(sb: ab.Sandbox, seed: int) -> None:
    text = script(random.Random(seed))
    r = sb.run(text, timeout=TIMEOUT)  # no exception may escape
    assert r.duration < TIMEOUT + SLACK, (text, r.duration)
    assert "internal error" not in r.stderr, (text, r.stderr)
    if r.timed_out:
        assert r.exit_code == 124, text
    else:
        assert r.duration < TIMEOUT + 0.5, (text, r.duration)
    ok = sb.run("echo ok", timeout=5)
    assert ok.stdout == "ok\n", (text, ok)
