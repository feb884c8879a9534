"""Regression tests for session 11's run-contract work (issue 20): memory a run left behind, jq's child, fmt/pr."""

from __future__ import annotations

import psutil
import pytest

import agentic_bash as ab
from test_contract_found9 import _namespace_ok, _rss_tree

MiB = 1 << 20

_MODES = ["virtual", pytest.param("namespace", marks=pytest.mark.skipif(
    not _namespace_ok(), reason="kernel sandbox unavailable"))]


# -- memory a run left behind ----------------------------------------------------------------
# A command substitution past max_variable_bytes raised its LimitExceeded from a frame that
# named it: the exception and that frame held each other, and with them the capture's whole
# 64 MiB buffer, until a generation-2 collection (rare: the raised gen-0 threshold). Each
# `x=$(yes)` left +64 MiB; in seed 602 a session's runner reached 2.9 GiB after a DEBUG
# trap that expanded `$(yes)` on every command, and every jq fork counted it again.

@pytest.mark.parametrize("mode", _MODES)
def test_a_substitution_past_its_cap_leaves_no_memory_behind(mode: str) -> None:
    me = psutil.Process()
    with ab.Sandbox(isolation=mode) as s:
        s.run("x=$(yes)", timeout=30)  # (the first one's allocations are the arena's baseline)
        base = _rss_tree(me)
        for _ in range(6):
            r = s.run("x=$(yes)", timeout=30)
            assert r.exit_code == 1 and "exceeds max_variable_bytes" in r.stderr, r
        grew = (_rss_tree(me) - base) / MiB
        assert s.run("echo ok").stdout == "ok\n"
    assert grew < 160, grew  # was +384 (6 x 64 MiB)
