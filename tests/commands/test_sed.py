"""sed: differential table against GNU sed 4.9."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from harness_search import assert_same, make_fs, ours, real  # noqa: E402

TEXT = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n"
FILES = {
    "f": TEXT,
    "f1": "a\nb\n",
    "f2": "c\nd\n",
    "noeol": "x\ny",
    "words": "hello world\nfoo bar baz\naaa bbb\n",
    "r.txt": "R1\nR2\n",
    "scr": "s/o/0/g\n# comment\n/t/d\n",
    "badscr": "p\ns/x\n",
    "dir": None,
}

CASES = [
    ["sed", "p", "f"],
    ["sed", "-n", "p", "f"],
    ["sed", "-n", "3p", "f"],
    ["sed", "-n", "$p", "f"],
    ["sed", "-n", "2,4p", "f"],
    ["sed", "-n", "4,2p", "f"],
    ["sed", "-n", "/two/,/five/p", "f"],
    ["sed", "-n", "/t/,+1p", "f"],
    ["sed", "-n", "/t/,~4p", "f"],
    ["sed", "-n", "0,/o/p", "f"],
    ["sed", "-n", "1,/o/p", "f"],
    ["sed", "-n", "1~3p", "f"],
    ["sed", "-n", "0~4p", "f"],
    ["sed", "-n", "2~0p", "f"],
    ["sed", "-n", "/e/!p", "f"],
    ["sed", "-n", "2,5!p", "f"],
    ["sed", "-n", "$!{$!p}", "f"],
    ["sed", "-n", "/^t/{/e/p}", "f"],
    ["sed", "3q", "f"],
    ["sed", "3q5", "f"],
    ["sed", "3Q", "f"],
    ["sed", "-n", "3{p;q}", "f"],
    ["sed", "2d", "f"],
    ["sed", "/e/d", "f"],
    ["sed", "s/e/E/", "f"],
    ["sed", "s/e/E/g", "f"],
    ["sed", "s/e/E/2", "f"],
    ["sed", "s/e/E/2g", "f"],
    ["sed", "-n", "s/e/E/p", "f"],
    ["sed", "s/E/x/I", "f"],
    ["sed", "s/\\(.\\)\\(.\\)/\\2\\1/", "f"],
    ["sed", "-E", "s/(.)(.)/\\2\\1/", "f"],
    ["sed", "-r", "s/(o|e)+/<&>/g", "f"],
    ["sed", "s/o*/-/g", "f"],
    ["sed", "s/x*/-/g", "words"],
    ["sed", "s/[aeiou]/\\U&/g", "words"],
    ["sed", "-E", "s/(\\w+) (\\w+)/\\u\\1 \\U\\2\\E!/", "words"],
    ["sed", "s/\\w\\+/\\L\\u&/g", "words"],
    ["sed", "s/o/\\n/", "words"],
    ["sed", "s/ /\\t/g", "words"],
    ["sed", "s|/|X|g", "f"],
    ["sed", "s,o,\\,,g", "f"],
    ["sed", "s/[/]/X/", "f"],
    ["sed", "s/a/b/w out", "words"],
    ["sed", "y/abc/xyz/", "words"],
    ["sed", "y/o\\n/0N/", "words"],
    ["sed", "=", "f1"],
    ["sed", "-n", "$=", "f"],
    ["sed", "-n", "l", "words"],
    ["sed", "-n", "l 5", "words"],
    ["sed", "-l", "4", "-n", "l", "words"],
    ["sed", "a\\\nAPP", "f1"],
    ["sed", "a APP", "f1"],
    ["sed", "1a\\  lead", "f1"],
    ["sed", "1i\\\nINS\\\nINS2", "f1"],
    ["sed", "$a END", "f1", "f2"],
    ["sed", "2c\\\nCHG", "f"],
    ["sed", "2,4c\\\nCHG", "f"],
    ["sed", "2,4!c\\\nCHG", "f"],
    ["sed", "-e", "a\\", "-e", "foo", "f1"],
    ["sed", "n;d", "f"],
    ["sed", "$!N;s/\\n/-/", "f"],
    ["sed", "N;N;s/\\n/+/g", "f"],
    ["sed", "N;P;D", "f"],
    ["sed", ":a;N;$!ba;s/\\n/,/g", "f"],
    ["sed", "1!G;h;$!d", "f"],
    ["sed", "-n", "h;n;G;p", "f"],
    ["sed", "x;$!d;x", "f"],
    ["sed", "-n", "H;${x;s/\\n/ /g;p}", "f"],
    ["sed", "s/o/0/;t;s/e/3/", "f"],
    ["sed", "s/o/0/;T;s/e/3/", "f"],
    ["sed", "-n", "/o/{s//0/gp}", "f"],
    ["sed", "z;s/^$/empty/", "f1"],
    ["sed", "F", "f1"],
    ["sed", "1r r.txt", "f1"],
    ["sed", "R r.txt", "f"],
    ["sed", "r nope", "f1"],
    ["sed", "-n", "/a/w out2", "words"],
    ["sed", "-s", "-n", "$p", "f1", "f2"],
    ["sed", "-n", "$p", "f1", "f2"],
    ["sed", "-s", "1d", "f1", "f2"],
    ["sed", "p", "noeol"],
    ["sed", "-n", "p;p", "noeol"],
    ["sed", "$a END", "noeol"],
    ["sed", "-f", "scr", "f"],
    ["sed", "-e", "s/o/0/", "-e", "s/e/3/", "f"],
    ["sed", "-n", "-e", "2{p", "-e", "}", "f"],
    ["sed", "#n\np", "f1"],
    ["sed", "-z", "s/\\n/,/g", "f"],
    ["sed", "--posix", "s/o/0/", "f1"],
    ["sed", "s/.*/[&]/", "-", "f1"],
    ["sed", "-n", "/two/,3{=;p}", "f"],
    ["sed", "-n", "/one/,/one/p", "f"],
    ["sed", "-n", "2,/t/p", "f"],
    ["sed", "-n", "/x/,$p", "f"],
    ["sed", "2,3{s/^/> /}", "f"],
    ["sed", "-E", "s/^(.)(.*)$/\\2\\1ay/", "f"],
    ["sed", "s/\\x41/A/;s/\\o142/B/;s/\\d99/C/", "words"],
    ["sed", "s/[[:space:]]\\+/_/g", "words"],
    ["sed", "s/\\bb/B/g;s/a\\>/A/g", "words"],
    ["sed", "s/\\`h/H/;s/z\\'/Z/", "words"],
    ["sed", "N;s/^/>/Mg", "words"],
    ["sed", "N;s/$/</Mg", "words"],
    ["sed", "N;s/^/>/g", "words"],
    ["sed", "s/é/e/", "-"],
    ["sed", "s/./X/g", "-"],
    ["sed", "-n", "/[[:upper:]]/p", "-"],
    ["sed", "q", "noeol"],
    ["sed", "$q", "noeol"],
    ["sed", "-n", "p;Q", "noeol"],
    ["sed", "-n", "$p;q", "noeol"],
    ["sed", "x", "noeol"],
    ["sed", "y/ab/ba/;g;G;p", "noeol"],
    ["sed", "=;G;p;=", "noeol"],
    ["sed", "P;z;d", "noeol"],
    ["sed", "2,3p;n", "f"],
    ["sed", "-n", "2,4p;n", "f"],
    ["sed", "c C\tD\nE", "f1"],
    ["sed", "/a/d;s/b*/Y/g", "f1"],
    ["sed", "N;P;D;c C;/a/d;T", "f"],
    ["sed", "-s", "-n", "1,2p", "f1", "f2"],
    # errors
    ["sed"],
    ["sed", "-k"],
    ["sed", "p", "nope", "f1"],
    ["sed", "p", "dir"],
    ["sed", "-f", "nope", "f1"],
    ["sed", "-f", "badscr", "f1"],
    ["sed", "-e", "p", "-e", "s/x", "f1"],
    ["sed", "s/x", "f1"],
    ["sed", "k", "f1"],
    ["sed", "p;p;k", "f1"],
    ["sed", "/x", "f1"],
    ["sed", "\\%x", "f1"],
    ["sed", "s/a/b/gg", "f1"],
    ["sed", "s/a/b/pp", "f1"],
    ["sed", "s/a/b/0", "f1"],
    ["sed", "s/a/b/2g3", "f1"],
    ["sed", "s/a/b/q", "f1"],
    ["sed", "y/ab/c/", "f1"],
    ["sed", "y/a", "f1"],
    ["sed", "b foo", "f1"],
    ["sed", "}", "f1"],
    ["sed", "{p", "f1"],
    ["sed", "1,2,3p", "f1"],
    ["sed", "!!p", "f1"],
    ["sed", "a", "f1"],
    ["sed", ":", "f1"],
    ["sed", "1:a", "f1"],
    ["sed", "p x", "f1"],
    ["sed", "0p", "f1"],
    ["sed", "0,5p", "f1"],
    ["sed", "s/\\(a\\)/\\2/", "f1"],
    ["sed", "s/[a/b/", "f1"],
    ["sed", "s/a\\{1/b/", "f1"],
    ["sed", "/a\\{1/p", "f1"],
    ["sed", "-n", "/a/Ip;/\\(a/p", "f1"],
    ["sed", "r", "f1"],
    ["sed", "dp", "f1"],
    ["sed", "q 5 x", "f1"],
    ["sed", "s//x/", "f1"],
    ["sed", "-i"],
    # a/r complete a last line without newline, even with nothing to add; R does not
    ["sed", "$a\\", "noeol"],
    ["sed", "1a\\", "noeol"],
    ["sed", "$r nonexist", "noeol"],
    ["sed", "$r dir", "noeol"],
    ["sed", "$R f1", "noeol"],
    ["sed", "-n", "a\\", "noeol"],
]


@pytest.mark.parametrize("argv", CASES, ids=[repr(" ".join(c)) for c in CASES])
def test_sed_differential(argv: list[str]) -> None:
    assert_same(argv, FILES, stdin="héllo wörld\nÀb c\n".encode())


@pytest.mark.parametrize("argv", [
    ["sed", "-i", "s/o/0/", "f", "f1"],
    ["sed", "-i.bak", "1d", "f"],
    ["sed", "-ibak_*", "$d", "f"],
    ["sed", "-i", "-n", "1p;$p", "f", "f1"],
    ["sed", "-i", "2q", "f"],
    ["sed", "-i", "s/a/A/w /dev/stdout", "f1"],
    ["sed", "-i", "p", "nope", "f1"],
])
def test_sed_in_place(argv: list[str]) -> None:
    files = {"f": TEXT, "f1": "a\nb\n"}
    fs = make_fs(files)
    fs.chmod("/workspace/f", 0o640)
    r = ours(argv, fs=fs)
    import subprocess
    import tempfile

    from harness_search import ENV, write_real
    with tempfile.TemporaryDirectory() as root:
        write_real(root, files)
        os.chmod(os.path.join(root, "f"), 0o640)
        p = subprocess.run(argv, capture_output=True, cwd=root, env=ENV)
        names = sorted(set(os.listdir(root)))
        theirs = {}
        for name in names:
            with open(os.path.join(root, name), "rb") as fh:
                theirs[name] = (fh.read(), os.stat(os.path.join(root, name)).st_mode & 0o777)
    mine = {}
    for name in sorted(fs.listdir("/workspace")):
        q = "/workspace/" + name
        with fs.open(q) as fh:
            mine[name] = (fh.read(), fs.stat(q).st_mode & 0o777)
    assert (r.stdout, r.stderr, r.status) == (p.stdout, p.stderr, p.returncode)
    assert mine == theirs


def test_w_file_contents() -> None:
    fs = make_fs(FILES)
    ours(["sed", "-n", "/o/w out", "f"], fs=fs)
    with fs.open("/workspace/out") as fh:
        assert fh.read() == b"one\ntwo\nfour\n"


def test_sed_version() -> None:
    a = ours(["sed", "--version"])
    b = real(["sed", "--version"])
    assert a.stdout.splitlines()[0] == b.stdout.splitlines()[0]
    assert a.status == b.status == 0


def test_sed_help() -> None:
    assert_same(["sed", "--help"])


def test_sed_large_stream() -> None:
    data = "".join(f"line {i} foo bar\n" for i in range(30000))
    assert_same(["sed", "-n", "s/foo/X/gp;/9$/d;$=", "big"], {"big": data})


def test_hostile_regex_times_out() -> None:
    import time

    from agentic_bash.commands import load_all
    from agentic_bash.errors import LimitExceeded
    load_all()  # importing every command module is not part of the bound
    t = time.monotonic()
    with pytest.raises(LimitExceeded):
        ours(["sed", "-E", "s/(a|aa)+$/x/"], None, stdin=b"a" * 60 + b"b\n", timeout=0.5)
    assert time.monotonic() - t < 30  # without the timeout this would run for years


BLOCK_SCRIPTS = [
    "s/a/X/", "s/a/X/g", "s/a/X/2", "s/a/X/2g", "s/a*/-/g", "s/x*/-/g", "s/b*/<&>/2",
    "s/^a/^/", "s/a$/$/g", "s/\\<./\\u&/g", "s/[^a]/./g", "s/[[:space:]]*$//", "s/\\s\\+/ /g",
    "s/\\(a\\)\\(b\\)/\\2\\1/g", "s/A/z/Ig", "s/a\\|b/|/g;s/|/+/2", "s/.*/[&]/", "s/$/;/",
    "s/\\b/|/g", "s/\\B/-/g", "s/^/> /;s/ *$//",
]


@pytest.mark.parametrize("script", BLOCK_SCRIPTS)
def test_block_mode_matches_line_mode(script: str) -> None:
    import random

    import agentic_bash.commands.sedcmd as sedcmd
    rng = random.Random(script)
    for _ in range(5):
        lines = ["".join(rng.choice("ab  xé") for _ in range(rng.randint(0, 12))) for _ in range(rng.randint(0, 30))]
        data = "\n".join(lines) + ("\n" if rng.random() < 0.7 else "")
        files = {"in": data}
        fast = ours(["sed", script, "in", "in"], files)
        sedcmd.BLOCK_MODE = False
        try:
            slow = ours(["sed", script, "in", "in"], files)
        finally:
            sedcmd.BLOCK_MODE = True
        assert (fast.stdout, fast.status) == (slow.stdout, slow.status), (script, data)
    assert_same(["sed", script, "in", "in"], {"in": data})


@pytest.mark.parametrize("argv", [
    ["sed", "-n", "/a/p"], ["sed", "-n", "/a/!p"], ["sed", "/a/d"], ["sed", "/a/!d"],
    ["sed", "s/a/X/;/b/d"], ["sed", "/b/d;s/a/X/g"], ["sed", "-n", "/A/Ip"], ["sed", "/^$/d"],
    ["sed", "/[[:space:]]/d"], ["sed", "-E", "/a|x/d;s/(b)/[\\1]/"],
])
def test_block_filters_match_line_mode(argv: list[str]) -> None:
    import random

    import agentic_bash.commands.sedcmd as sedcmd
    rng = random.Random(" ".join(argv))
    for _ in range(5):
        lines = ["".join(rng.choice("ab  xé") for _ in range(rng.randint(0, 8))) for _ in range(rng.randint(0, 30))]
        data = "\n".join(lines) + ("\n" if rng.random() < 0.7 else "")
        files = {"in": data}
        fast = ours([*argv, "in"], files)
        sedcmd.BLOCK_MODE = False
        try:
            slow = ours([*argv, "in"], files)
        finally:
            sedcmd.BLOCK_MODE = True
        assert (fast.stdout, fast.status) == (slow.stdout, slow.status), (argv, data)
    assert_same([*argv, "in"], {"in": data})
