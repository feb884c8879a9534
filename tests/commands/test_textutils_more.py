"""Differential tests for numfmt, column, split, csplit, fmt, iconv, shuf (properties)."""

from __future__ import annotations

import pytest

from harness_files import assert_same, ours, real_script  # noqa: E402

FILES = {
    "tbl": "name age city\nalice 30 paris\nbob 4 rome\n",
    "csv": "a,b,c\nlonger,x,y\n",
    "nums": "".join(f"{i}\n" for i in range(1, 31)),
    "para": "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
            "sixteen seventeen eighteen nineteen twenty\n\npara two\n",
    "latin": "caf\xe9\n".encode("latin-1"),
    "utf": "café naïve\n",
    "sec": "intro\n== one ==\nbody 1\n== two ==\nbody 2\n",
}

CASES: list[tuple[list[str], bytes]] = [
    (["numfmt", "--to=si", "1500000"], b""),
    (["numfmt", "--to=iec", "1048576", "2047"], b""),
    (["numfmt", "--from=si", "1.5K"], b""),
    (["numfmt", "--from=iec", "1K"], b""),
    (["numfmt", "--to=iec-i", "5000"], b""),
    (["numfmt", "--suffix=B", "--to=si", "1234"], b""),
    (["numfmt", "abc"], b""),
    (["numfmt", "--from=auto", "2Ki", "3M"], b""),
    (["numfmt", "--to=si", "999", "1000", "1001", "99999"], b""),
    (["numfmt", "--field=2", "--to=si"], b"a 12345 b\n"),
    (["numfmt", "--padding=8", "42"], b""),
    (["numfmt", "--to=iec", "--format=%.2f", "123456"], b""),
    (["numfmt", "--header", "--to=si"], b"H\n1000\n"),
    (["numfmt", "--to=si"], b"5000\n70\n"),
    (["column", "-t", "tbl"], b""),
    (["column", "-t", "-s,", "csv"], b""),
    (["column", "-t", "-s,", "-o", "|", "csv"], b""),
    (["column"], b"1\n2\n3\n4\n5\n"),
    (["column", "nums"], b""),
    (["column", "-x", "nums"], b""),
    (["column", "-t"], b"a b c\nd e\nf\n"),
    (["column", "-t"], b"a b\nccc\n\nx  y\n  z\n"),
    (["column", "-t", "-s,"], b"a,,c\nd,e\nf\n"),
    (["column", "-t", "-o", "|"], b"a b c\nd\n"),
    (["column", "-t", "-R", "2"], b"a b c\nd\nlong x\n"),
    # --table-* options: hide, order, limit, no headings; all need --table
    (["column", "-t", "-s:", "-H", "2"], b"b:2:x\na:10:y\n"),
    (["column", "-t", "-s:", "-N", "a,b,c", "-H", "b", "-R", "c"], b"b:2:x\na:10:y\n"),
    (["column", "-t", "-s:", "-O", "3,1"], b"b:2:x\na:10:y\n"),
    (["column", "-t", "-s:", "-N", "a,b,c", "-O", "c,a", "-d"], b"b:2:x\na:10:y\n"),
    (["column", "-t", "-s:", "-l", "2"], b"b:2:x\na:10:y\n"),
    (["column", "-t", "-l", "2", "-o", "|"], b"a b  c d\n e  f\n"),
    (["column", "-t", "-s:", "-H", "zz"], b"b:2:x\n"),
    (["column", "-s:", "-N", "a,b"], b"b:2:x\n"),
    (["column", "-s:", "-d"], b"b:2:x\n"),
    (["fmt", "-w", "30", "para"], b""),
    (["fmt", "-w", "3"], b"a b c\n"),
    (["fmt"], b"The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs. How vexingly quick daft zebras jump!\n"),
    (["fmt", "-w", "40"], b"The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs. How vexingly quick daft zebras jump!\n"),
    (["fmt"], b"short\nlines\nto join\n\nnext para\n"),
    (["fmt", "-w", "30"], b"  indented text that is long enough to wrap around the limit of the width here yes\n"),
    (["fmt", "-w", "20"], b"a b c d e f g h i j k l m n o p q r s t u v w x y z a b c d e f g h i j k l m n o p q r s t u v w x y z\n"),
    (["iconv", "-f", "latin1", "-t", "utf-8", "latin"], b""),
    (["iconv", "-f", "utf-8", "-t", "latin1", "utf"], b""),
    (["iconv", "-f", "utf-8", "-t", "ascii//TRANSLIT", "utf"], b""),
    (["iconv", "-f", "utf-8", "-t", "ascii", "utf"], b""),
    (["iconv", "-c", "-f", "utf-8", "-t", "ascii", "utf"], b""),
    (["iconv", "-f", "utf-8", "-t", "utf-16le", "utf"], b""),
    (["iconv", "-f", "utf-8", "-t", "latin1"], b"ok \xff bad\n"),
]


@pytest.mark.parametrize("argv,stdin", CASES, ids=[" ".join(a) for a, _ in CASES])
def test_more_differential(argv: list[str], stdin: bytes) -> None:
    assert_same(argv, FILES, stdin)


SCRIPTS = [
    "split -l 10 nums && ls x* && cat xab | head -2",
    "split -l 7 -d nums part_ && ls part_*",
    "split -b 20 --additional-suffix=.txt tbl s_ && ls s_* && cat s_ab.txt",
    "split -n 3 nums && wc -c xa?",
    "split -a 3 -l 15 nums && ls",
    "csplit sec '/^==/' '{*}' && cat xx00 && cat xx02",
    "csplit -f part sec 3 && cat part01",
    "csplit -s sec '/two/' && ls xx*",
    "csplit sec '/nomatch/'; echo $?",
]


@pytest.mark.parametrize("script", SCRIPTS)
def test_split_scripts(script: str) -> None:
    from agentic_bash import Sandbox

    b = real_script(script, FILES)
    sb = Sandbox(isolation="virtual")
    try:
        for name, data in FILES.items():
            sb.write_file(name, data)
        r = sb.run(script)
    finally:
        sb.close()
    assert r.stdout_bytes == b.stdout
    assert r.stderr_bytes == b.stderr.replace(b"/usr/bin/bash: line 1: ", b"bash: line 1: ")
    assert r.exit_code == b.status


def test_shuf_properties() -> None:
    r = ours(["shuf", "-i", "1-20"])
    assert sorted(r.stdout.split()) == sorted(str(i).encode() for i in range(1, 21))
    r = ours(["shuf", "-n", "3", "-e", "a", "b", "c", "d"])
    assert len(r.stdout.split()) == 3 and set(r.stdout.split()) <= {b"a", b"b", b"c", b"d"}
    r = ours(["shuf", "-r", "-n", "50", "-e", "x", "y"])
    assert len(r.stdout.split()) == 50
    r = ours(["shuf"], stdin=b"1\n2\n3\n")
    assert sorted(r.stdout.split()) == [b"1", b"2", b"3"]
    r = ours(["shuf", "-i", "5-2"])
    assert r.status == 1 and b"invalid input range" in r.stderr
    r = ours(["shuf", "-n", "0", "-e", "a"])
    assert r.stdout == b"" and r.status == 0


def test_sort_plain_key_fast_path_matches_field_cut():
    """issue 18: `-kN` / `-kN,N` (with or without -t) cut keys with a possessive regex or a
    split; they must give the bytes _begfield/_limfield give, on lines with odd blanks."""
    import random
    from agentic_bash.commands.sortcmd import _begfield, _limfield, _plain_key, parse_key
    rnd = random.Random(7)
    alpha = [b"a", b"b", b" ", b"\t", b"x", b",", b"  "]
    checked = 0
    for spec in ["1", "2", "3", "1,1", "2,2", "3,3", "4"]:
        for tab in (None, b",", b" "):
            k = parse_key(spec, lambda s: s)
            f = _plain_key(k, tab)
            if f is None:
                continue
            for _ in range(2000):
                ln = b"".join(rnd.choice(alpha) for _ in range(rnd.randint(0, 10)))
                b, e = _begfield(ln, k, tab), _limfield(ln, k, tab)
                assert f(ln) == (ln[b:e] if e > b else b""), (spec, tab, ln)
                checked += 1
    assert checked > 30000
