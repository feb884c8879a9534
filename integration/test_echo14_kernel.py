"""The runner's lazily armed lend timer (echo14), as root and as an unprivileged user: long runs of builtins, the sleep builtin and programs are interrupted and time out after a burst of short runs, after an idle gap and after a native wait."""

from __future__ import annotations

import pytest

from _support import sandbox_supported

ok, why = sandbox_supported()
pytestmark = [pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}"),
              pytest.mark.timeout(900)]

_cache: dict[str, dict] = {}
KINDS = ["builtin_loop", "sleep", "native", "programs"]


@pytest.fixture(params=["root", "user"])
def obs(request: pytest.FixtureRequest) -> dict:
    who = request.param
    if who not in _cache:
        runner = request.getfixturevalue("as_root" if who == "root" else "as_user")
        _cache[who] = runner.script("_echo14_check.py", timeout=600)
    return _cache[who]


@pytest.mark.parametrize("when", ["burst", "idle", "watched"])
@pytest.mark.parametrize("kind", KINDS)
def test_an_interrupt_reaches_a_long_run(obs: dict, when: str, kind: str) -> None:
    assert obs["level"] == "namespace"
    code, timed_out, took = obs[f"{when}_interrupt_{kind}"]
    assert code == 130 and not timed_out and took < 20, obs[f"{when}_interrupt_{kind}"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_timeout_ends_a_long_run_after_a_burst(obs: dict, kind: str) -> None:
    code, timed_out, took = obs[f"burst_timeout_{kind}"]
    assert code == 124 and timed_out and took < 20, obs[f"burst_timeout_{kind}"]


def test_a_plain_run_keeps_its_figures(obs: dict) -> None:
    assert obs["plain"] == ["hi\n", 0, True, True, None, False, False, []], obs["plain"]
    assert obs["after"] == "after\n"
