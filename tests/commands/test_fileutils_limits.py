"""Bounded behaviour of helper-6's commands: endless inputs end at the deadline or a size cap."""

from __future__ import annotations

import time

import pytest


@pytest.fixture
def fast_sb():
    from agentic_bash import Sandbox
    from agentic_bash.limits import Limits

    s = Sandbox(isolation="virtual", limits=Limits(timeout=2))
    try:
        yield s
    finally:
        s.close()


@pytest.mark.parametrize("script", [
    "cat /dev/zero > /dev/null",
    "yes | tee /dev/null > /dev/null",
    "yes > /dev/null",
    "wc -c /dev/zero",
])
def test_endless_input_stops_at_deadline(fast_sb, script: str) -> None:
    t = time.monotonic()
    r = fast_sb.run(script)
    assert r.timed_out and r.exit_code == 124
    assert time.monotonic() - t < 15


def test_sort_of_endless_input_is_bounded(fast_sb) -> None:
    r = fast_sb.run("sort /dev/zero")
    assert r.exit_code == 2 or r.timed_out
    if not r.timed_out:
        assert r.stderr == "sort: memory exhausted\n"


def test_streaming_pipelines_do_not_buffer_forever(fast_sb) -> None:
    r = fast_sb.run("yes | head -n 3; yes abc | head -c 9; echo; seq 1000000000 | head -n 2")
    assert r.stdout == "y\ny\ny\nabc\nabc\na\n1\n2\n"
    assert not r.timed_out
