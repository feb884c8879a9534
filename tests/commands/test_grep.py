"""grep/egrep/fgrep: differential table against GNU grep 3.8."""

from __future__ import annotations

import os
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from harness_search import assert_same, make_fs, ours  # noqa: E402

TEXT = "alpha beta\nGamma delta\nfoo bar\nfoobar baz\n\nTODO: fix\nx=1 # TODO later\nend\n"
CTX = "a\nb\nc\nd\na\nb\nx\nx\nx\na\n"
FILES = {
    "t.txt": TEXT,
    "ctx": CTX,
    "bin": b"abc\0def\nabc\n",
    "inv": b"abc\nx\xffa\nabc\n",
    "noeol": "one\ntwo",
    "src/a.py": "import os\n# TODO: a\nprint(1)\n",
    "src/b.py": "x = 1\n",
    "src/sub/c.txt": "TODO c\n",
    "src/sub/d.py": "todo lower\n",
    "pats": "foo\nalpha\n",
    "empty": "",
    "dir": None,
}

CASES = [
    # option values: an unknown --color WHEN shows --help (status 0); -d goes through argmatch
    # (status 1), -D takes exact words only (status 2)
    ["grep", "--color=bad", "foo", "t.txt"], ["grep", "-d", "bad", "foo", "t.txt"],
    ["grep", "-d", "re", "foo", "t.txt"], ["grep", "-D", "sk", "foo", "t.txt"],
    ["grep", "--devices=skip", "foo", "t.txt"],
    ["grep", "foo", "t.txt"],
    ["grep", "-n", "foo", "t.txt"],
    ["grep", "-c", "foo", "t.txt"],
    ["grep", "-v", "foo", "t.txt"],
    ["grep", "-vn", "a", "t.txt"],
    ["grep", "-i", "gamma", "t.txt"],
    ["grep", "-y", "GAMMA", "t.txt"],
    ["grep", "-w", "foo", "t.txt"],
    ["grep", "-x", "end", "t.txt"],
    ["grep", "-o", "o*", "t.txt"],
    ["grep", "-on", "[a-z]*a", "t.txt"],
    ["grep", "-ob", "ba.", "t.txt"],
    ["grep", "-b", "ba", "t.txt"],
    ["grep", "-E", "foo|alpha", "t.txt"],
    ["grep", "-E", "(fo)+b", "t.txt"],
    ["grep", "fo\\+b", "t.txt"],
    ["grep", "-e", "foo", "-e", "end", "t.txt"],
    ["grep", "-f", "pats", "t.txt"],
    ["grep", "-f", "empty", "t.txt"],
    ["grep", "-c", "-f", "empty", "t.txt"],
    ["grep", "-vc", "-f", "empty", "t.txt"],
    ["grep", "-c", "-v", "", "t.txt"],
    ["grep", "-L", "-v", "", "t.txt"],
    ["grep", "-vx", "", "t.txt"],
    ["grep", "-lc", "foo", "t.txt", "ctx"],
    ["grep", "-F", "x=1 #", "t.txt"],
    ["grep", "-F", "-x", "end", "t.txt"],
    ["grep", "-Fw", "foo", "t.txt"],
    ["fgrep", "a.b", "t.txt"],
    ["egrep", "^(foo|end)", "t.txt"],
    ["grep", "-l", "foo", "t.txt", "ctx", "noeol"],
    ["grep", "-L", "foo", "t.txt", "ctx", "noeol"],
    ["grep", "-L", "foo", "t.txt"],
    ["grep", "-H", "foo", "t.txt"],
    ["grep", "-h", "a", "t.txt", "ctx"],
    ["grep", "-c", "a", "t.txt", "ctx", "empty"],
    ["grep", "-q", "foo", "t.txt"],
    ["grep", "-q", "zzz", "t.txt"],
    ["grep", "foo", "nope"],
    ["grep", "-s", "foo", "nope"],
    ["grep", "-q", "foo", "nope", "t.txt"],
    ["grep", "foo", "nope", "t.txt"],
    ["grep", "foo", "dir"],
    ["grep", "-n", "-C1", "a", "ctx"],
    ["grep", "-A1", "b", "ctx"],
    ["grep", "-B2", "x", "ctx"],
    ["grep", "-2", "d", "ctx"],
    ["grep", "-m1", "-A2", "a", "ctx"],
    ["grep", "-m2", "a", "ctx"],
    ["grep", "-m0", "a", "ctx"],
    ["grep", "-c", "-m2", "a", "ctx"],
    ["grep", "--no-group-separator", "-A0", "a", "ctx"],
    ["grep", "--group-separator=XX", "-A0", "a", "ctx"],
    ["grep", "-vc", "a", "ctx"],
    ["grep", "two", "noeol"],
    ["grep", "-v", "one", "noeol"],
    ["grep", "-c", "", "noeol"],
    ["grep", "abc", "bin"],
    ["grep", "-c", "abc", "bin"],
    ["grep", "-a", "def", "bin"],
    ["grep", "-I", "abc", "bin"],
    ["grep", "-n", "abc", "inv"],
    ["grep", "-n", "a", "inv"],
    ["grep", "-r", "TODO", "src"],
    ["grep", "-rn", "TODO", "src"],
    ["grep", "-ri", "todo", "src"],
    ["grep", "-rl", "TODO", "."],
    ["grep", "-r", "--include=*.py", "TODO", "src"],
    ["grep", "-r", "--exclude=*.py", "TODO", "src"],
    ["grep", "-r", "--exclude-dir=sub", "-i", "todo", "src"],
    ["grep", "-rc", "o", "src"],
    ["grep", "-rh", "o", "src"],
    ["grep", "-d", "skip", "a", "dir", "t.txt"],
    ["grep", "-lZ", "a", "t.txt", "ctx"],
    ["grep", "-cZ", "a", "t.txt", "ctx"],
    ["grep", "--color=never", "foo", "t.txt"],
    ["grep", "--color=always", "-n", "fo*", "t.txt", "ctx"],
    ["grep", "--label=LBL", "-H", "x", "-"],
    ["grep", "-z", "b", "t.txt"],
    ["grep", "-o", "-C1", "a", "ctx"],
    ["grep", "-on", "-A1", "x", "ctx"],
    ["grep", "-c", "a*", "bin"],
    ["grep", "b$", "bin", "t.txt"],
    ["grep", "-v", "abc", "bin"],
    ["grep", "--color=always", "-o", "-n", "o*", "t.txt", "ctx"],
    ["grep", "--color=always", "-n", "-A1", "foo", "t.txt"],
    # errors and usage
    ["grep"],
    ["grep", "-k", "x"],
    ["grep", "--foo", "x"],
    ["grep", "-A", "x", "y"],
    ["grep", "-m", "x", "y"],
    ["grep", "--binary-files=foo", "x"],
    ["grep", "-e"],
    ["grep", "-f", "nope", "x"],
    ["grep", "[a", "t.txt"],
    ["grep", "-E", "(a", "t.txt"],
    ["grep", "a\\{1", "t.txt"],
    ["grep", "[[:foo:]]", "t.txt"],
    ["grep", "[:alpha:]", "t.txt"],
    ["grep", "\\(a\\)\\2", "t.txt"],
    ["grep", "a\\", "t.txt"],
    ["grep", "-E", "*a", "t.txt"],
    ["grep", "-E", "a{1,2,3}", "t.txt"],
    ["grep", "-E", "x{1a}", "t.txt"],
    ["grep", "-E", "{1}a", "t.txt"],
    ["grep", "-P", "\\d+", "t.txt"],
    ["grep", "-oP", "\\w+(?= delta)", "t.txt"],
]


@pytest.mark.parametrize("argv", CASES, ids=[" ".join(c) for c in CASES])
def test_grep_differential(argv: list[str]) -> None:
    # recursive output follows readdir (hash) order in GNU and sorted order here
    assert_same(argv, FILES, stdin=b"x one\ny two\n", sort=any(a.startswith("-r") for a in argv))


def test_initial_tab() -> None:
    assert_same(["grep", "-T", "-n", "foo", "t.txt", "ctx"], FILES)


REGEX_CASES = [
    # (pattern, flags, input)
    ("a**", "-o", "aaa b"),
    ("a+*", "-oE", "aaa b"),
    ("*a", "-o", "*a xa"),
    ("^*", "-o", "*x"),
    ("a^b", "", "a^b"),
    ("a$b", "", "a$b"),
    ("a^b", "-E", "a^b"),
    ("x$", "", "ax\nxa"),
    ("\\(ab\\)*c\\1", "-o", "ababcab c"),
    ("(a|ab)(c|bcd)(d*)", "-oE", "abcd"),
    ("x*(xy)?", "-oE", "xxy"),
    ("[]a]", "-o", "a]b"),
    ("[^]a]", "-o", "a]b"),
    ("[a-]", "-o", "-ab"),
    ("[[:digit:][:upper:]]+", "-oE", "ab12CD ef"),
    ("[[.-.]]", "-o", "a-b"),
    ("[[=e=]]", "-o", "hello"),
    ("\\<fo", "-o", "foo afoo fo"),
    ("o\\>", "-o", "foo afoo fo"),
    ("\\bfo\\B", "-o", "foo afoo fo"),
    ("\\w+", "-oE", "ab_1 !x"),
    ("\\W", "-o", "ab_1 !x"),
    ("\\s\\S", "-o", "a b\tc"),
    ("a\\{2\\}", "-o", "aaaaa"),
    ("a{2,}", "-oE", "a aa aaa"),
    ("a{,2}", "-oE", "aaa"),
    ("a\\|b", "-o", "abc"),
    ("\\(a\\|b\\)\\+", "-o", "abcba"),
    ("é.", "-o", "éa éé"),
    ("[[:alpha:]]+", "-oE", "héllo wörld"),
    ("HÉ", "-i", "hé"),
    (".", "-c", "\xff"),
    ("a|", "-cE", "zzz"),
    ("()", "-cE", "zzz"),
    ("\\.", "-o", "a.b"),
    ("[\\n]", "-o", "a\\nb"),
    ("a\\{0\\}b", "-o", "ab"),
    ("a{1}{2}", "-cE", "ab"),
    ("(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)\\10", "-cE", "abcdefghija0"),
]


@pytest.mark.parametrize("pat,flags,text", REGEX_CASES, ids=[f"{p} {f}" for p, f, _ in REGEX_CASES])
def test_regex_semantics(pat: str, flags: str, text: str) -> None:
    argv = ["grep"] + ([flags] if flags else []) + ["--", pat]
    assert_same(argv, None, stdin=text.encode("utf-8", "surrogateescape") + b"\n")


@pytest.mark.parametrize("pat,flags,text", [("[[:alpha:]]", "-o", "aé"), (".", "-o", "é"), ("[a-z]", "-ci", "É")])
def test_c_locale(pat: str, flags: str, text: str) -> None:
    assert_same(["grep", flags, pat], None, stdin=text.encode() + b"\n", env={"LC_ALL": "C"})


def test_multiple_patterns_backrefs() -> None:
    assert_same(["grep", "-o", "-e", "\\(a\\)\\1", "-e", "\\(b\\)\\1"], None, stdin=b"aa bb ab\n")


def test_pattern_with_newline() -> None:
    assert_same(["grep", "foo\nend"], {"t.txt": TEXT})


def test_large_input_line_numbers() -> None:
    data = "".join(f"line {i} {'hit' if i % 7 == 0 else 'miss'}\n" for i in range(20000))
    for flags in (["-n"], ["-c"], ["-vn"], ["-nA1"], ["-b"], ["-in"], ["-m5", "-n"], ["-vc"], ["-l"], ["-v", "-m3"], ["-on"], ["-E", "-n", "h.t|9 "]):
        pat = [] if "-E" in flags else ["hit"]
        assert_same(["grep", *flags, *pat, "big"], {"big": data})


def test_streaming_max_count() -> None:
    class Endless:
        def __init__(self) -> None:
            self.n = 0

        def read(self, size: int = -1) -> bytes:
            self.n += 1
            if self.n > 1000:
                raise AssertionError("grep -m1 read the whole stream")
            return b"y\n" * 1000

    import io
    from dataclasses import replace

    from agentic_bash.commands import load_all
    from agentic_bash.commands.base import REGISTRY, CommandContext
    from agentic_bash.limits import Budget, Limits

    load_all()
    out = io.BytesIO()
    ctx = CommandContext(fs=make_fs(None), cwd="/workspace", env={"LANG": "C.UTF-8"},
                         stdin=Endless(), stdout=out, stderr=io.BytesIO(),  # type: ignore[arg-type]
                         budget=Budget(Limits()), name="grep")
    ctx = replace(ctx)
    assert REGISTRY["grep"].fn(ctx, ["grep", "-m1", "y"]) == 0
    assert out.getvalue() == b"y\n"


def test_hostile_regex_times_out() -> None:
    from agentic_bash.commands import load_all
    from agentic_bash.errors import LimitExceeded
    load_all()  # importing every command module is not part of the bound
    t = time.monotonic()
    with pytest.raises(LimitExceeded):
        ours(["grep", "-E", "(a|aa)+$"], None, stdin=b"a" * 60 + b"b\n", timeout=0.5)
    assert time.monotonic() - t < 30  # without the timeout this would run for years


INC_FILES = {"a.py": "x\n", "b.txt": "x\n", "sub/c.py": "x\n", "sub/d.txt": "x\n",
             "link.py": "->a.py", "sublink": "->sub"}


@pytest.mark.parametrize("argv", [
    ["grep", "-r", "--include=*.py", "x", "b.txt", "a.py"],
    ["grep", "--include=*.py", "x", "b.txt", "a.py"],
    ["grep", "-r", "--exclude=*.py", "x", "."],
    ["grep", "-r", "--exclude=sub", "x", "."],
    ["grep", "-r", "--exclude-dir=sub", "x", "sub"],
    # a directory operand is matched as typed, or by any part after a slash; never the implicit "."
    ["grep", "-r", "--exclude-dir=.", "x", "."],
    ["grep", "-r", "--exclude-dir=.", "x"],
    ["grep", "-r", "--exclude-dir=*", "x", "."],
    ["grep", "-r", "--exclude-dir=sub", "x", "sub/"],
    ["grep", "-r", "--exclude-dir=./", "x", "./"],
    ["grep", "-r", "--exclude-dir=sub", "x", "./sub"],
    ["grep", "-r", "--exclude-dir=s*", "x", "."],
    ["grep", "-r", "x", "."],
    ["grep", "-R", "x", "."],
    ["grep", "-r", "--exclude=./a.py", "x", "./a.py"],
    ["grep", "-r", "--include=sub", "x", "."],
    ["grep", "-r", "x", "link.py", "sublink"],
    ["grep", "-r", "x"],
    ["grep", "-rh", "x", "sub/"],
    ["grep", "-c", "x", "sub"],
    ["grep", "-d", "recurse", "-l", "x", "sub"],
])
def test_grep_recursion_filters(argv: list[str]) -> None:
    assert_same(argv, INC_FILES, sort=True)
