"""bc differential table against /usr/bin/bc (GNU bc 1.07)."""

from __future__ import annotations

import os
import shutil
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from harness_awk import Harness, real  # noqa: E402

BC = shutil.which("bc")

CASES = [
    ([], "1 + 2\n"), ([], "10 / 3\n"), ([], "scale=3; 10/3; -10/3\n"), ([], "2^100\n"), ([], "2^-1; scale=4; 2^-1\n"),
    ([], "-7 % 3; 7.5 % 2; scale=2; 7.5 % 2\n"), ([], "1.5 * 1.25; -1.5 / 2\n"), ([], "scale=2; 0.00; -0.5; 1/3; x\n"),
    ([], "0.10*1; 1.50+0; 100.0\n"), ([], ".5 + .5; 0.1 * 3\n"), ([], "sqrt(2); scale=5; sqrt(2); sqrt(16)\n"),
    ([], "length(123.45); scale(1.234); length(0); length(0.001)\n"),
    ([], "define f(x) { if (x <= 1) return 1; return x * f(x-1) }; f(30)\n"),
    ([], "define f(x) { auto a; a = x * 2; return (a); }; f(3); a\n"),
    ([], "a[0]=5; a[0]+1; a[3]\n"), ([], "x = 3; x++; x; ++x; x^2; x--; --x\n"),
    ([], "for (i=0; i<3; i++) i; while (j < 2) { j = j + 1; print j, \"\\n\" }\n"),
    ([], "if (1) 5 else 6; if (0) 5 else 6\n"), ([], "x = 5; y = x == 5; y\n"), ([], "a = 2 < 3; a\n"),
    ([], "-2^2; 2^3^2; 5 - -3\n"), ([], "3 > 2; 2 == 3; !0; 1 && 0; 1 || 0\n"),
    ([], "print \"hi\\n\"; \"str\\n\"\n"), ([], "quit\n"), ([], "1\nquit\n2\n"), ([], "last; 5; last; .\n"),
    ([], "/* c */ 1 # x\n"), ([], "obase=16; 255; obase=2; 10\n"), ([], "obase=16; 255.5; -17\n"),
    ([], "obase=20; 12345\n"), ([], "ibase=16; FF; A\n"), ([], "ibase=2; 1010; 1.1\n"),
    ([], "12345678901234567890123456789012345678901234567890123456789012345678901234567890\n"),
    ([], "2^300\n"), ([], "scale=100; 1/7\n"),
    (["-l"], "scale=20; 4*a(1)\n"), (["-l"], "e(1); l(10); s(1); c(1); j(0,1)\n"), (["-l"], "scale\n"),
    (["-l"], "scale=5; e(2); l(2); a(0.5); s(3.14159)\n"), (["-l"], "sqrt(3)\n"), (["-l"], "10/3\n"),
    ([], "x=\n"), ([], "1 +\n2\n"), ([], "3 \\\n+ 4\n"), ([], "define f() { return; }; f()\n"),
    ([], "define g(n) { if (n == 0) return (0); return (n + g(n - 1)); }\ng(100)\n"),
    ([], "s = 0; for (i = 1; i <= 100; i++) s += i; s\n"), ([], "x = 10; x /= 4; x; x *= 3; x; x -= 1; x; x %= 2; x\n"),
    ([], "scale = 2; x = 1.005; x * 1000\n"), ([], "123.456 * 1; scale=1; 123.456 / 1\n"),
    ([], "print 1, 2, \"\\t|\\n\"\n"), ([], "scale = 5; 1/7 * 7\n"), ([], "halt; 5\n"), ([], "{ 1; 2 }\n"),
    ([], "define h(x[]) { return x[1]; }; a[1] = 4; h(a[])\n"), ([], "99999999999 * 99999999999\n"),
    ([], "-0; 0 * -1; -.5 * 2\n"), ([], "1 == 1.0; 2 > 10; -1 < 0\n"), ([], "scale=3; 2/3*3\n"),
]


@pytest.mark.skipif(BC is None, reason="no bc on this machine")
@pytest.mark.parametrize("case", CASES, ids=[c[1][:40] for c in CASES])
def test_bc_vs_real(case):
    args, stdin = case
    h = Harness()
    ours = h.run(["bc", *args], stdin=stdin)
    gnu = real([BC, *args], stdin=stdin)
    assert ours.out == gnu.out
    assert ours.status == gnu.status
    if "error" in gnu.err:
        assert "error" in ours.err


def test_bc_errors():
    h = Harness()
    r = h.run(["bc"], stdin="1/0\n")
    assert "Divide by zero" in r.err and r.status == 0
    r = h.run(["bc"], stdin="f(2)\n")
    assert "Function f not defined." in r.err
    r = h.run(["bc"], stdin="x=\n5\n")
    assert r.err.startswith("(standard_in) 2: syntax error") and r.out == "5\n"
