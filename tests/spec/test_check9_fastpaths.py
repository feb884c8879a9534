"""Session 9's fast paths (printf of plain text, grep -c of one literal, cut -f N, lines built from a shape) against bash and against our general paths."""

from __future__ import annotations

import random
import re
import subprocess
import sys
import warnings

import pytest
from hypothesis import given, settings, strategies as st

import bashdiff

SEP = "@@C9@@"


def _wrap(cases: list[str]) -> str:
    return "\n".join(f"printf '\\n{SEP}%s\\n' {i}\n( {c}\n) 2>&1; echo \"[rc=$?]\"" for i, c in enumerate(cases))


def _split(out: bytes, n: int) -> list[bytes | None]:
    got: dict[int, bytes] = {}
    for ch in out.split(("\n" + SEP).encode())[1:]:
        idx, _, body = ch.partition(b"\n")
        got[int(idx)] = body
    return [got.get(i) for i in range(n)]


def _reference(cases: list[str], cwd: str) -> list[bytes | None]:
    """Every case's output (bytes, stderr folded in, status) from the confined bash, one process."""
    p = subprocess.run([*bashdiff._confine(), sys.executable, "-I", "-S", "-c", bashdiff._INIT],
                       input=_wrap(cases).encode(), capture_output=True, cwd=cwd,
                       env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}, timeout=120)
    return _split(p.stdout, len(cases))


@pytest.fixture(scope="module")
def sb(tmp_path_factory):  # noqa: ANN001, ANN201
    yield from bashdiff.sandbox("virtual", tmp_path_factory)


def _against_bash(sb, tmp_path, cases: list[str]) -> None:  # noqa: ANN001
    want = _reference(cases, str(tmp_path))
    sb.run(f"mkdir -p c9_{len(cases)}_{abs(hash(cases[0]))} && cd c9_{len(cases)}_{abs(hash(cases[0]))}")
    try:
        got = _split(sb.run(_wrap(cases), timeout=120).stdout_bytes, len(cases))
    finally:
        sb.run("cd ..")
    bad = [(c, w, g) for c, w, g in zip(cases, want, got) if w != g]
    assert all(w is not None for w in want)
    assert not bad, f"{len(bad)} of {len(cases)} differ, first: {bad[:3]}"


def _hexq(b: bytes) -> str:
    return "$'" + "".join(f"\\x{x:02x}" for x in b) + "'"


# -- printf: formats at the edge of "plain" (no %, no argument, one-letter escapes) -------------

_PF_ATOMS = ["a", " ", "\n", "\\", "\\\\", "\\n", "\\t", "\\a", "\\b", "\\e", "\\E", "\\f", "\\r", "\\v",
             "\\c", "\\0", "\\101", "\\x41", "\\x", "\\u263a", "\\'", '\\"', "\\?", "\\q", "%%", "%s",
             "é", "-", "\\\\n", "\\8", "'", "$"]


def test_printf_plain_formats_against_bash(sb, tmp_path):  # noqa: ANN001
    rnd = random.Random(9)
    cases = []
    for _ in range(160):
        fmt = "".join(rnd.choice(_PF_ATOMS) for _ in range(rnd.randint(0, 5))).encode()
        form = rnd.randrange(3)
        if form == 0:
            cases.append(f"printf {_hexq(fmt)} | od -An -c")
        elif form == 1:
            cases.append(f"printf -- {_hexq(fmt)} | od -An -c")
        else:
            cases.append(f"printf -v v {_hexq(fmt)}; echo \"rc=$?\"; printf %s \"$v\" | od -An -c")
    cases += [f"printf {_hexq(b'-' + x)} | od -An -c" for x in (b"n", b"v", b"-", b"x")]
    _against_bash(sb, tmp_path, cases)


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(list("ab \n\t\\%éx0178cuUqE\"'?") + ["\udcff", "\U0001F600", "\\\\", "\\c"]),
                max_size=12).map("".join) | st.text(max_size=12))
def test_printf_plain_equals_the_general_path(fmt):  # noqa: ANN001
    """format(fmt, []) takes the plain path; fmt + '%s' with one empty argument the general one."""
    from agentic_bash.shell import printf as pf
    if "%" in fmt or "\\c" in fmt or fmt.endswith("\\"):
        return
    assert pf.format(fmt, []) == pf.format(fmt + "%s", [""])


# -- grep -c of one literal ------------------------------------------------------------------

_GREP_INPUTS = [r"''", r"'a'", r"'a\n'", r"'aaa\naa\na\n\n'", r"'foo bar\nbar\n\nfoo'", r"'x\r\na.b\r\n'",
                r"'\xff\xfea\n\xc3\n'", r"'a\0b\na\n'", r"'a*b\na+b\na.b\n(a)\n[a]\n'", r"'é\nÉ\ne\n'",
                r"'A\na\nAa\n'", r"'ab\nba\nabab\n'", r"'a b\nab\n a\n'"]
_GREP_LITS = ["a", "ab", "aa", "a.b", "a*b", "a+b", "(a)", "[a]", "é", "A", " a", "x", "bar", "a|b", "^a", "a$", "ba"]
_GREP_OPTS = ["-c", "-vc", "-c -F", "-c -E", "-c -i", "-c -w", "-c -x", "-cv -F", "-c -a", "-c -I", "-c -z",
              "-c -H", "-c -h", "-c -n", "-c -m1", "-c -o", "-c -e a -e b", "-c -q", "-c -l"]


def test_grep_count_one_literal_against_bash(sb, tmp_path):  # noqa: ANN001
    rnd = random.Random(99)
    cases = []
    for _ in range(150):
        inp, lit, o = rnd.choice(_GREP_INPUTS), rnd.choice(_GREP_LITS), rnd.choice(_GREP_OPTS)
        q = "'" + lit + "'"
        r = rnd.random()
        if r < 0.5:
            cases.append(f"printf {inp} | grep {o} {q}; echo \"st=$?\"")
        elif r < 0.85:
            cases.append(f"printf {inp} > f1; printf {rnd.choice(_GREP_INPUTS)} > f2; grep {o} {q} f1 f2; "
                         f"echo \"st=$?\"; grep {o} -- {q} f1 - < f2; echo \"st=$?\"")
        else:
            # more than one read (CHUNK = 64 KiB): the reads made go on to the general search
            cases.append(f"{{ printf {inp}; head -c 70000 /dev/zero | tr '\\0' a; printf '\\nx\\n'; printf {inp}; }}"
                         f" | grep {o} {q}; echo \"st=$?\"")
    _against_bash(sb, tmp_path, cases)


def test_grep_count_fast_equals_general(sb):  # noqa: ANN001
    """-c of one literal (the counter) against the same search with -m (the general path)."""
    rnd = random.Random(7)
    alpha = [b"a", b"b", b"\n", b"\r", b"\0", b"\xff", b"\xc3\xa9", b"ab", b" ", b".", b"*", b"\\"]
    script = []
    for i in range(60):
        data = b"".join(rnd.choice(alpha) for _ in range(rnd.randint(0, 30)))
        if i % 10 == 0:
            data *= 3000  # over one read
        sb.write_file(f"g{i}", data)
        lit = rnd.choice(["a", "ab", "b", "aa", "é", ".", "a b", "ba"])
        opt = rnd.choice(["-c", "-vc", "-cF", "-cE", "-vcF", "-cH", "-ca", "-cI"])
        for m in ("", "-m 99999999"):
            script.append(f"grep {opt} {m} '{lit}' g{i}; echo $?; grep {opt} {m} '{lit}' < g{i}; echo $?; "
                          f"grep {opt} {m} '{lit}' g{i} g{i}; echo \"$? ==\"")
    out = sb.run("\n".join(script), timeout=120).stdout.split("==\n")
    pairs = list(zip(out[0::2], out[1::2]))
    assert len(pairs) == 60
    assert all(a == b for a, b in pairs), [p for p in pairs if p[0] != p[1]][:3]


# -- cut -f N (16 lines per match) and the general field paths ----------------------------------

def test_cut_fields_against_bash(sb, tmp_path):  # noqa: ANN001
    rnd = random.Random(641)
    delims = [("\t", ""), (" ", "-d ' '"), (",", "-d ,"), (":", "-d :"), ("\\", "-d '\\'"), ("]", "-d ]"),
              ("^", "-d '^'"), ("\r", "-d $'\\r'"), ("a", "-d a")]
    cases = []
    for _ in range(110):
        d, dopt = rnd.choice(delims)
        nlines = rnd.choice([1, 2, 15, 16, 17, 31, 32, 33, 47, 161, rnd.randint(1, 200)])
        maxf = rnd.randint(0, 18)
        short = rnd.choice([0, 0, 0.02, 0.2])
        lines = []
        for _ in range(nlines):
            k = rnd.randint(0, 2) if rnd.random() < short else rnd.randint(maxf, maxf + 2)
            lines.append(d.join("".join(rnd.choice("xyé\r ab") for _ in range(rnd.randint(0, 3))).replace(d, "")
                                for _ in range(k + 1)))
        body = ("\n".join(lines) + rnd.choice(["\n", "\n", "", "\r\n"])).encode()
        f = rnd.choice([1, 2, 3, 5, 16, 17, maxf, maxf + 1, 4097])
        spec = rnd.choice([f"{f}", f"{f}", f"{f}-", f"-{f}", f"1,{f}"])
        extra = rnd.choice(["", "", "-s", "--output-delimiter=XY", "--output-delimiter=''", "--complement", "-z"])
        cases.append(f"printf %s {_hexq(body)} | cut {dopt} -f {spec} {extra} | od -An -c; echo st=$?")
    _against_bash(sb, tmp_path, cases)


def test_cut_empty_output_delimiter_is_nul(sb, tmp_path):  # noqa: ANN001
    """GNU cut takes --output-delimiter='' as a NUL (its length counted as 1); it was dropped."""
    _against_bash(sb, tmp_path, [
        "printf 'a:b:c\\nd\\n' | cut -d: -f1,3 --output-delimiter='' | od -An -c",
        "printf 'a:b:c\\nd\\n' | cut -d: -f1- --output-delimiter= | od -An -c",
        "printf 'abc\\n' | cut -c1,3 --output-delimiter='' | od -An -c",
        "printf 'abcdef\\n' | cut -b1-2,4- --output-delimiter='' | od -An -c",
    ])


# -- lines built from a shape (shell/template.py) ---------------------------------------------

@pytest.mark.parametrize("line", [
    "echo 'a & b' | cat",
    "echo \"x & y\" 1 | tr a-z A-Z",
    "seq 3 | xargs -n1 /bin/bash -c 'echo $0'",
    "echo hi | xargs /bin/sh -c 'cat' | cat",
    "printf 'a\\n' | xargs -I{} /usr/bin/timeout 5 echo {} | cat",
    "echo x | read '-t' 1 v; echo $?",
    "cat run.sh | head -1",
    "echo '. x' | cat",
    "echo 'wait' 7 | cat",
])
def test_shape_keeps_the_pipeline_check(line):  # noqa: ANN001
    """A data word the parser's pipeline check reads (Pipeline.coop) must not be templated
    away: the tree built from the shape equals the parser's, coop included."""
    from agentic_bash.shell import template as T
    from agentic_bash.shell.parser import parse_with_warnings as parse
    for v in (line, re.sub(r"\d+", "42", line)):
        ref, _ = parse(v, extglob=False)
        got = T.templated(v, False, parse)
        assert got is None or got == ref, v


def test_state_between_runs_against_bash(tmp_path):  # noqa: ANN001
    """Lines of one shape sent as separate runs while aliases, extglob, functions, IFS,
    noglob, set -k, nocasematch, enable and PATH change between them: as bash -c runs them."""
    seqs = [
        ["shopt -s expand_aliases", "alias e1='echo A'", "e1 x 1", "alias e1='echo B'", "e1 x 2", "unalias e1",
         "e1 x 3 2>/dev/null; echo st=$?", "alias e1='echo C'", "shopt -u expand_aliases",
         "e1 x 4 2>/dev/null; echo st=$?", "shopt -s expand_aliases", "e1 x 5"],
        ["shopt -s extglob", "case ab in @(a|b)b) echo m1;; *) echo n1;; esac", "x=ab; [[ $x == @(a|c)b ]] && echo y1",
         "shopt -u extglob", "case ab in a*) echo m2;; *) echo n2;; esac", "x=ab; [[ $x == a? ]] && echo y2"],
        ["f() { echo one $1; }", "f 1", "f 2", "f() { echo two $1; }", "f 2", "f 1", "unset -f f",
         "f 3 2>/dev/null; echo st=$?"],
        ["x='a b,c'", "echo $x 1", "IFS=,", "echo $x 2", "for i in $x 3; do echo \"[$i]\"; done", "unset IFS",
         "for i in $x 4; do echo \"[$i]\"; done", "IFS=a", "echo a,b 6 $x", "unset IFS"],
        ["mkdir -p g && cd g && touch a1 a2", "echo a* 1", "set -f", "echo a* 2", "set +f", "echo a* 4", "cd .."],
        ["echo hi 1", "echo() { builtin echo fn \"$@\"; }", "echo hi 2", "unset -f echo", "echo hi 3",
         "enable -n echo", "echo hi 4", "enable echo", "echo hi 5"],
        ["set -k", "f() { echo \"$1|$a\"; }", "f a=1 b", "f a=2 c", "set +k", "f a=3 d"],
        ["case A in a) echo low;; A) echo up;; esac", "shopt -s nocasematch", "case A in a) echo low;; A) echo up;; esac",
         "shopt -u nocasematch", "case B in b) echo low;; B) echo up;; esac"],
        ["set -x", "echo 'a b' 1", "echo \"c d\" 2", "x=1 y='p q'", "case x in y) echo 5;; *) echo 6;; esac", "set +x"],
        ["cat /dev/null 1 2>/dev/null; echo st=$?", "OP=$PATH; PATH=/nonexistent",
         "cat /dev/null 2 2>/dev/null; echo st=$?", "PATH=$OP", "cat /dev/null 3 2>/dev/null; echo st=$?"],
    ]
    from agentic_bash import Sandbox
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        box = Sandbox(isolation="virtual", workdir=str(tmp_path / "ws"))
    try:
        for i, lines in enumerate(seqs):
            d = tmp_path / f"b{i}"
            d.mkdir()
            b_out, b_err, _ = bashdiff.bash_c("\n".join(lines) + "\n", str(d))
            box.run(f"mkdir -p /tmp/s{i} && cd /tmp/s{i}")
            rs = [box.run(ln) for ln in lines]
            norm = lambda e: re.sub(r"line \d+", "line N", e)  # noqa: E731
            assert "".join(r.stdout for r in rs) == b_out, lines
            assert norm("".join(r.stderr for r in rs)) == norm(b_err), lines
    finally:
        box.close()


def test_read_timeout_in_whole_seconds(sb, tmp_path):  # noqa: ANN001
    """read -t N with no fraction waited N*100 s (the missing fraction was padded to '00'
    and joined to the digits): a slow pipe's read gave up only at end-of-file."""
    _against_bash(sb, tmp_path, [
        "{ sleep 2; echo x; } | { read -t 1 v; echo \"$?:$v\"; }",
        "{ sleep 2; echo x; } | { read -t 1. v; echo \"$?:$v\"; }",
        "{ echo y; } | { read -t 1 v; echo \"$?:$v\"; }",
        "read -t 1x v < /dev/null; echo $?",
    ])
