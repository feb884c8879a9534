"""awk never hangs or eats unbounded memory: the run's budget and size limits stop it."""

from __future__ import annotations

import os
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from harness_awk import Harness  # noqa: E402

from agentic_bash.errors import LimitExceeded  # noqa: E402
from agentic_bash.limits import Limits  # noqa: E402


def _h(**kw) -> Harness:
    return Harness(limits=Limits().with_(**kw))


@pytest.mark.parametrize("prog", [
    'BEGIN { while (1) n++ }',
    'BEGIN { for (;;) ; }',
    'BEGIN { do { x = x } while (1) }',
    'BEGIN { while ((getline l < "/dev/null") >= 0) n++ }',
])
def test_infinite_loops_end_at_deadline(prog):
    t = time.monotonic()
    with pytest.raises(LimitExceeded):
        _h(timeout=1.0).run(["awk", prog])
    assert time.monotonic() - t < 10


def test_string_doubling_is_bounded():
    with pytest.raises(LimitExceeded):
        _h(max_variable_bytes=1 << 20).run(["awk", 'BEGIN { s = "x"; while (1) s = s s }'])


def test_printf_width_is_bounded():
    with pytest.raises(LimitExceeded):
        _h(max_variable_bytes=1 << 20).run(["awk", 'BEGIN { printf "%999999999d", 1 }'])


def test_deep_recursion_is_an_error_not_a_crash():
    r = Harness().run(["awk", "function f(n) { return f(n + 1) } BEGIN { f(1) }"])
    assert r.status == 2 and "nesting too deep" in r.err


def test_pathological_regex_ends_at_deadline():
    h = _h(timeout=1.0)
    t = time.monotonic()
    with pytest.raises(LimitExceeded):
        h.run(["awk", '{ if ($0 ~ /(a|aa)+$/) print }'], stdin="a" * 40 + "!\n")
    # loose: regex checks its timeout only now and then (seconds under load)
    assert time.monotonic() - t < 90


def test_hundred_thousand_lines_is_fast():
    data = "".join(f"k{i % 97},{i % 1000},{i % 13}.5\n" for i in range(100_000))
    h = Harness({"d.csv": data})
    t = time.monotonic()
    r = h.run(["awk", "-F,", "{s+=$3} END {print s}", "d.csv"])
    assert r.status == 0
    assert r.out == "649982\n"  # mawk and gawk both print this
    assert time.monotonic() - t < 10  # loose: ~0.5 s on an idle machine
