"""gawk extensions our `gawk` supports (`awk` is mawk, without them), compared with gawk where it is installed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from harness_awk import Harness  # noqa: E402

GAWK = shutil.which("gawk")

CASES = [
    ('BEGIN { print gensub(/(a)(b)/, "\\\\2\\\\1", "g", "abab") }', ""),
    ('BEGIN { print gensub(/o/, "0", 2, "foo boo") }', ""),
    ('BEGIN { s = "hello"; t = gensub(/l/, "L", "g", s); print s, t }', ""),
    ('{ print gensub(/([0-9]+)/, "<\\\\1>", "g") }', "a1b22\n"),
    ('BEGIN { print strftime("%Y-%m-%d %H:%M:%S", 0, 1) }', ""),
    ('BEGIN { print strftime("%F", 86400 * 365, 1) }', ""),
    ('BEGIN { t = systime(); print (t > 1600000000) }', ""),
    ('BEGIN { print and(12, 10), or(12, 10), xor(12, 10), lshift(1, 4), rshift(256, 2) }', ""),
    ('BEGIN { a[1] = "c"; a[2] = "a"; a[3] = "b"; n = asort(a); for (i = 1; i <= n; i++) printf "%s ", a[i]; print "" }', ""),
    ('BEGIN { n = asort(a); m = asorti(b); print n, m, length(a) }', ""),
    ('BEGIN { a["z"] = 1; a["x"] = 2; n = asorti(a, b); for (i = 1; i <= n; i++) printf "%s ", b[i]; print "" }', ""),
    ('BEGIN { a[1]; a[2]; print length(a) }', ""),
    ('BEGIN { print strtonum("0x1F"), strtonum("017"), strtonum("12") }', ""),
    ('BEGIN { print mktime("2024 01 15 10 30 00") - mktime("2024 01 15 10 00 00") }', ""),
    ('BEGINFILE { print "start", FILENAME } ENDFILE { print "end", FILENAME, FNR }', ""),
    ('BEGIN { if (match("foo123bar", /([0-9]+)/, m)) print m[1], m[1, "start"], m[1, "length"] }', ""),
    ('BEGIN { print toupper("abc"), tolower("ABC") }', ""),
    ('{ print $2 }', "a b\n"),
    ('BEGIN { RS = "[0-9]" } { print NR ": " $0 }', "a1b2c\n"),
    ('BEGIN { printf "%5.1f|%-6s|%03d\\n", 2.345, "x", 7 }', ""),
]


@pytest.mark.skipif(GAWK is None, reason="gawk is not installed")
@pytest.mark.parametrize("case", CASES, ids=[c[0][:50] for c in CASES])
def test_gawk_extension(case, tmp_path):
    prog, stdin = case
    files = {"f1.txt": "x\ny\n", "f2.txt": "z\n"}
    for n, d in files.items():
        (tmp_path / n).write_text(d)
    args = [prog] + (["f1.txt", "f2.txt"] if "FILE" in prog else [])
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "TZ": "UTC"}
    gnu = subprocess.run([GAWK, *args], input=stdin.encode(), capture_output=True, cwd=str(tmp_path), env=env)
    h = Harness(files, env=env)
    ours = h.run(["gawk", *args], stdin=stdin)  # (awk is mawk: no gawk extensions)
    assert ours.stdout == gnu.stdout
    assert ours.status == gnu.returncode


GAWK_NUMBERS = [
    'BEGIN { print 2^53, 1e20, 2^31, 5000050000, 123456789012 }',
    'BEGIN { printf "%d %x %u\\n", 2^40, -1, -1 }',
    'BEGIN { x[2^31] = 1; for (k in x) print k }',
    'BEGIN { print ("aa" ~ /a{2}/), ("a{2}" ~ /a{2}/) }',
    '{ s += $1 } END { print s }',
]


@pytest.mark.skipif(GAWK is None, reason="gawk is not installed")
@pytest.mark.parametrize("prog", GAWK_NUMBERS)
def test_invoked_as_gawk(prog):
    stdin = "2000000000\n2000000000\n"
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    gnu = subprocess.run([GAWK, prog], input=stdin.encode(), capture_output=True, env=env)
    ours = Harness(env=env).run(["gawk", prog], stdin=stdin)
    assert ours.stdout == gnu.stdout
