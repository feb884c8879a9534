"""`for (k in a)` iterates in mawk's order (hash buckets, move-to-front), checked against mawk."""

from __future__ import annotations

import os
import subprocess
import tempfile
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from harness_awk import Harness  # noqa: E402

MAWK = "/usr/bin/mawk"

PROGS = [
 ('{c[$1]++} END {for (k in c) print k, c[k]}', 'banana\napple\ncherry\napple\ndate\nelder\nfig\n'),
 ('BEGIN{for(i=1;i<=12;i++) a[i]=i; for (k in a) printf "%s ", k; print ""}', ''),
 ('BEGIN{b["x"];b["y"];b["z"];b["a"];b["b"]; for (k in b) printf "%s ", k; print ""}', ''),
 ('BEGIN{c[3];c[1];c[2];c["a"]; for (k in c) printf "%s ", k; print ""}', ''),
 ('BEGIN{n=split("q w e r t y u i o p a s d f g h j k l", a); for (k in a) printf "%s ", k; print ""}', ''),
 ('BEGIN{for(i=1;i<=200;i++) a[i]; for (k in a) printf "%s ", k; print ""}', ''),
 ('BEGIN{for(i=1;i<=1000;i++) a["k" i]; n=0; for (k in a) { if (n++ < 30) printf "%s ", k }; print ""}', ''),
 ('{ a[NR] = $0 } END { for (i in a) print i, a[i] }', 'x\ny\nz\nw\nv\nu\nt\ns\nr\nq\np\no\nn\n'),
 ('{ for (i = 1; i <= NF; i++) w[$i]++ } END { for (k in w) print k, w[k] }', 'the quick brown fox jumps over the lazy dog\nthe end of the story is near\n'),
 ('BEGIN { a["x"]; a[1]; a["y"]; a[2]; if ("x" in a) z=1; a[1]++; for (k in a) printf "%s ", k; print "" }', ''),
 ('BEGIN { for (i=0;i<100;i++) a[i*7 % 13, i % 5] = i; for (k in a) { split(k, p, SUBSEP); printf "%s-%s ", p[1], p[2] }; print "" }', ''),
 ('-F, {s[$1]+=$2} END {for (k in s) print k, s[k]}', 'a,1\nb,2\nc,3\nd,4\ne,5\nf,6\ng,7\nh,8\na,9\n'),
 ('BEGIN { a[1]; a[2]; a[3]; delete a[2]; a[4]; a["2"]; for (k in a) printf "%s ", k; print "" }', ''),
 ('BEGIN { a[0.5]; a[1]; a[-1]; a[""]; a[1e10]; for (k in a) printf "[%s] ", k; print "" }', ''),
 ('BEGIN { for (k in ENVIRON) n++; print n > 0 }', ''),
]


@pytest.mark.skipif(not os.path.exists(MAWK), reason="mawk is not installed")
@pytest.mark.parametrize("case", PROGS, ids=[p[0][:50] for p in PROGS])
def test_for_in_order_matches_mawk(case):
    prog, stdin = case
    args = prog.split(" ", 1) if prog.startswith("-F") else [prog]
    with tempfile.TemporaryDirectory() as scratch:  # `print n > 0` writes a file named 0
        real = subprocess.run([MAWK, *args], input=stdin.encode(), capture_output=True, cwd=scratch).stdout
    assert Harness().run(["awk", *args], stdin=stdin).stdout == real
