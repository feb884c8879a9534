"""expr: differential table against GNU coreutils 9.1 expr."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from harness_search import assert_same  # noqa: E402

CASES = [
    "1 + 2", "5 - 7", "3 * 4", "7 / 2", "7 % 3", "-7 / 2", "5 / -2", "-5 % 3", "1 / 0", "1 % 0",
    "a + 1", "1 +", "1 2", "( 1 + 2 ) * 3", "( 1", "1 )", ")", "(", "1 + ( 2", "( )",
    "abc : a.c", "abc : \\(b\\)", "abc : a\\(b\\)", "abc : a*", "abc : \\(x\\)", "abc : b",
    "a = a", "a != b", "10 < 9", "a < b", "2 > 10", "1 = 01", "x = x = 1", "a < b < c",
    "abc <= abd", "b >= a", "1 == 1",
    "0 | 3", " | 0", "1 & 0", "3 & 2", "x | y", "1 | 1 / 0", "0 & 1 / 0", "0 | 0",
    "length abcd", "length é", "length", "length 1 2",
    "substr hello 2 3", "substr hello 0 2", "substr hello a 2", "substr hello 4 10", "substr a",
    "index hello lo", "index hello z", "index a",
    "match abc a\\(.\\)", "match abc", "match abc b",
    "+ length", "+ /", "99999999999999999999 + 1", "-- 1 + 1", "a : \\(", "a : [",
    "1 + a", " 3 + 1", "1 * +5", "5 : 5", "-0", "00", "0", "", "10 - -3",
    "hello : .*", "hello : \\(h\\)\\(e\\)", "x\\y : x\\\\y",
]


@pytest.mark.parametrize("expr", CASES, ids=CASES)
def test_expr_differential(expr: str) -> None:
    argv = ["expr", *expr.split(" ")] if expr else ["expr"]
    if expr.startswith(" "):
        argv = ["expr", "", *expr.split(" ")[2:]] if expr.startswith(" |") else ["expr", " 3", "+", "1"]
    assert_same(argv)


def test_expr_empty_string_arg() -> None:
    assert_same(["expr", "", ":", ""])
    assert_same(["expr", "", "|", "0"])
