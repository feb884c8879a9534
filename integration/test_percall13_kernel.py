"""Pipelines of native programs started from the runner's run thread (percall13), as root and as an unprivileged user: output, timeout, interrupt, close, streamed output, the process limit."""

from __future__ import annotations

import pytest

from _support import sandbox_supported

ok, why = sandbox_supported()
pytestmark = [pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}"),
              pytest.mark.timeout(600)]

_cache: dict[str, dict] = {}


@pytest.fixture(params=["root", "user"])
def obs(request: pytest.FixtureRequest) -> dict:
    who = request.param
    if who not in _cache:
        runner = request.getfixturevalue("as_root" if who == "root" else "as_user")
        _cache[who] = runner.script("_percall13_check.py", timeout=300)
    return _cache[who]


def test_output_and_statuses(obs: dict) -> None:
    assert obs["level"] == "namespace"
    assert obs["plain"] == ["5\n4\n0 0 0\ny\n141 0\n", "", 0]
    assert obs["streamed"] == ["1\n2\n3\n", "1\n2\n", 0]
    assert obs["after"] == "after\n"


def test_timeout_and_interrupt_end_every_stage(obs: dict) -> None:
    timed_out, code, took = obs["timeout"]
    assert timed_out and code == 124 and took < 20, obs["timeout"]
    assert obs["timeout_left"] == "0"
    code, reached, took = obs["interrupt"]
    assert code == 130 and not reached and took < 20, obs["interrupt"]
    assert obs["interrupt_left"] == "0"


def test_close_from_another_thread_ends_the_pipeline_and_the_sandbox(obs: dict) -> None:
    assert obs["close_s"] < 20, obs
    assert obs["close_gone"], obs


def test_the_process_limit_still_refuses_stages(obs: dict, request: pytest.FixtureRequest) -> None:
    assert obs["limit_room"] == ["0 0 0\n", "", 0, None]
    out, err, code, exceeded = obs["limit"]
    assert "254" in out.split() and "fork: Resource temporarily unavailable" in err, obs["limit"]
    assert obs["limit_after"] == "1\n2\n"
    if exceeded is None and "user" in request.node.name:
        # (the same on the session-start tree: unprivileged, the refusals are RLIMIT_NPROC's,
        # which has no counter, and the jobs that filled it are gone when the run ends)
        pytest.xfail("an RLIMIT_NPROC refusal is not reported once its jobs are gone")
    assert exceeded == "processes"
