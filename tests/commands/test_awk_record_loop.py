"""awk's generated record loop (_loop) against mawk over inputs of several 64 KiB batches."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from harness_awk import Harness  # noqa: E402

from agentic_bash.commands.awk.codegen import compile_program  # noqa: E402
from agentic_bash.commands.awk.parser import parse  # noqa: E402

AWK = "/usr/bin/mawk" if os.path.exists("/usr/bin/mawk") else shutil.which("mawk")
pytestmark = pytest.mark.skipif(AWK is None, reason="mawk is not installed")

_WORDS = ["12", "-3.5", "0x1A", " 7", "1e3", "abc", "1_000", "+4", ".5", "007", "3.", "-0", "9e", "k1", "1e+2x"]


def _data(seed: int, n: int, weird: bool) -> bytes:
    rnd = random.Random(seed)
    lines = []
    for i in range(n):
        k = rnd.randrange(6)
        fields = [rnd.choice(_WORDS) if rnd.random() < 0.3 else str(rnd.randrange(1000)) for _ in range(k)]
        sep = rnd.choice([" ", "  ", "\t", " \t "])
        line = (sep.join(fields)).encode()
        if rnd.random() < 0.1:
            line = b"  " + line + b" "
        if weird and n // 3 < i < n // 2 and rnd.random() < 0.05:
            # blanks that str.split() splits at and awk does not (one batch is "unclean")
            line += rnd.choice([b"\xa0" + b"5", b"\r", b" \x0b8", b"\x1c3 4", b" \xa012"])
        lines.append(line)
    return b"\n".join(lines) + b"\n"


FILES = {
    "big.txt": _data(1, 30000, True),
    "big2.txt": _data(2, 9000, False),
    "small.txt": b"a b\nc d e\n\nf\n",
}

# each program must get the record loop (checked below) unless listed in FALLBACK
CASES = [
    ["{ s += $2 } END { printf \"%.17g \", s; print NR, $0, NF }", "big.txt"],
    ["{ s += $1 + $3 * 2 } END { printf \"%.17g\\n\", s }", "big.txt"],
    ["{ print $3, $1 }", "big.txt"],
    ["{ print }", "big.txt"],
    ["/7 1/ { c++ } END { print c + 0 }", "big.txt"],
    ["/^ *[0-9]+\\t/ { c++ } END { print c + 0 }", "big.txt"],
    ["NF > 3 { print NR \": \" $NF }", "big.txt"],
    ["{ n += NF; print $(NF - 1 > 0 ? NF - 1 : 0) } END { print n }", "big.txt"],
    ["$2 > 500 { c++ } $2 == \"abc\" { d++ } END { print c, d }", "big.txt"],
    ["{ a[$1]++ } END { n = 0; for (k in a) n++; print n, a[\"12\"], a[\"\"] }", "big.txt"],
    ["NR == FNR { a[$1]; next } $1 in a { c++ } END { print c, NR, FNR }", "big2.txt", "big.txt"],
    ["FNR == 1 { print FILENAME, NR }", "big.txt", "big2.txt"],
    ["NR % 1000 == 0 { printf \"%d:%s|\", NR, $1; print $2 }", "big.txt"],
    ["NR == 12345 { print; exit 3 } END { print \"end\", NR, $0 }", "big.txt"],
    ["NR == 20000 { exit } END { print NR, FNR, $1 }", "big.txt"],
    ["NR == 200, NR == 203 { print NR, $0 }", "big.txt"],
    ["$1 ~ /^k/ { print NR, $1 }", "big.txt"],
    ["{ if ($1 > $2) next; c++ } END { print c }", "big.txt"],
    ["{ while (i < 3) { i++; if ($1 == 7) next }; i = 0; c++ } END { print c }", "big.txt"],
    ["function f(x) { return x * 2 } { s += f($2) } END { print s }", "big.txt"],
    ["{ print length(), length($1), substr($0, 2, 3) }", "big.txt"],
    ["{ x = $1; y = $2 \"\"; if (x == y) c++ } END { print c + 0 }", "big.txt"],
    ["{ print $7 == \"\", $7 + 0, NF }", "small.txt"],
    ["-F\\t", "{ print NF, $2 }", "big.txt"],
    ["-F", " ", "{ s += $2 } END { print s }", "big.txt"],
    ["{ s += $2 } END { print s }", "FS=\\t", "big2.txt"],
    ["-v", "OFS=-", "-v", "ORS=|\\n", "{ print $1, $2 }", "big2.txt"],
    ["{ print $1 > \"/dev/stdout\"; printf \"<%s>\", $2; print \"\" }", "big2.txt"],
    ["BEGIN { OFS = \":\" } { print $1, $2; OFS = NR % 2 ? \",\" : \":\" }", "big2.txt"],
]
# programs that must keep the runtime's record path (_main only)
FALLBACK = [
    ["{ $2 = \"x\"; print }", "big2.txt"],
    ["{ NF = 2; print }", "big2.txt"],
    ["{ sub(/1/, \"one\"); print }", "big2.txt"],
    ["NR == 3 { getline; print } END { print NR }", "big2.txt"],
    ["{ NR = 5; print NR }", "small.txt"],
    ["FNR == 2 { nextfile } { print FILENAME, $1 }", "big2.txt", "small.txt"],
    ["function g() { return $1 } { print g() }", "small.txt"],
    ["{ FS = \",\"; print $1 }", "small.txt"],
]


def _program(args: list[str]) -> str:
    i = 0
    while args[i].startswith("-"):
        i += 1 if len(args[i]) > 2 and args[i] != "-v" else 2
    return args[i]


@pytest.fixture(scope="module")
def realdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("awkloop")
    for name, data in FILES.items():
        (d / name).write_bytes(data)
    return str(d)


@pytest.mark.parametrize("args", CASES + FALLBACK, ids=[" ".join(c)[:70] for c in CASES + FALLBACK])
def test_record_loop_vs_mawk(args, realdir):
    src = compile_program(parse(_program(args), True), True)[0]
    assert ("def _loop(" in src) == (args in CASES)
    p = subprocess.run([AWK, *args], capture_output=True, cwd=realdir, timeout=60,
                       env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
    h = Harness(FILES, env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
    r = h.run(["awk", *args])
    assert r.stdout == p.stdout
    assert r.status == p.returncode
    assert r.stderr.replace(b"awk: ", b"") == p.stderr.replace(b"mawk: ", b"")
