"""xargs: differential table against GNU findutils 4.9 xargs."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from harness_search import assert_same  # noqa: E402

CASES = [
    (["xargs"], b"a b\nc\n"),
    (["xargs", "echo"], b"a b\nc\n"),
    (["xargs", "echo", "pre"], b"a b\nc\n"),
    (["xargs", "-n1", "echo"], b"a b\nc\n"),
    (["xargs", "-n", "2", "echo", "x"], b"a b c d e\n"),
    (["xargs", "echo"], b""),
    (["xargs", "-r", "echo"], b""),
    (["xargs", "-r", "echo"], b"  \n\n"),
    (["xargs", "-t", "echo"], b"a b\nc\n"),
    (["xargs", "-I{}", "echo", "[{}]"], b"a b\n  c d\n\n"),
    (["xargs", "-I", "X", "echo", "X-X"], b"one\ntwo\n"),
    (["xargs", "-i", "echo", "<{}>"], b"abc\n"),
    (["xargs", "-L1", "echo"], b"a b\nc d \ne\n"),
    (["xargs", "-L", "2", "echo"], b"a b\nc d \ne\nf\n"),
    (["xargs", "-0", "-n1", "echo"], b"a\0b c\0"),
    (["xargs", "-0", "echo"], b"a\nb\0c"),
    (["xargs", "-d:", "-n2", "echo"], b"a:b:c"),
    (["xargs", "-d", "\\n", "echo"], b"a b\nc\n"),
    (["xargs", "-E", "STOP", "echo"], b"a b STOP c\n"),
    (["xargs", "-n1", "echo"], b"a\\ b \"c d\" 'e f'\n"),
    (["xargs", "echo"], b"a 'b\n"),
    (["xargs", "echo"], b"a \"b\n"),
    (["xargs", "-n", "0", "echo"], b"a\n"),
    (["xargs", "-n", "x", "echo"], b"a\n"),
    (["xargs", "-s", "5", "echo"], b"aaaaaaaaaa\n"),
    (["xargs", "-s", "12", "echo"], b"aa bb cc dd ee\n"),
    (["xargs", "-s", "1", "echo"], b"abc\n"),
    (["xargs", "-s", "4", "echo"], b"abc\n"),
    (["xargs", "-I{}", "-s", "4", "echo", "{}"], b"abc\n"),
    (["xargs", "-s", "0", "echo"], b"a\n"),
    (["xargs", "-x", "-s", "8", "echo"], b"a b\n"),
    (["xargs", "-x", "-s", "10", "echo"], b"abc\n"),
    (["xargs", "-P", "2", "-n2", "echo"], b"a b\n"),  # one batch: GNU runs -P batches in parallel
    (["xargs", "nosuchcmd"], b"a\n"),
    (["xargs", "-n1", "false"], b"a b\n"),
    (["xargs", "true"], b"a b\n"),
    (["xargs", "--foo"], b""),
    (["xargs", "-k"], b""),
]


@pytest.mark.parametrize("argv,stdin", CASES, ids=[" ".join(c[0]) + " <" + repr(c[1]) for c in CASES])
def test_xargs_differential(argv: list[str], stdin: bytes) -> None:
    assert_same(argv, None, stdin=stdin)


def test_xargs_arg_file() -> None:
    assert_same(["xargs", "-a", "list", "echo"], {"list": "x y\nz\n"})
    assert_same(["xargs", "-a", "nope", "echo"], None)


def test_xargs_streams_input() -> None:
    """xargs must not slurp an endless stdin: the first failing batch ends it."""
    import io
    from dataclasses import replace

    from agentic_bash.commands import load_all
    from agentic_bash.commands.base import CommandContext
    from agentic_bash.limits import Budget, Limits

    from harness_search import _exec_factory, make_fs

    class Endless:
        def __init__(self) -> None:
            self.n = 0

        def read(self, size: int = -1) -> bytes:
            self.n += 1
            if self.n > 100:
                raise AssertionError("xargs read the whole stream")
            return b"a b\n" * 100

    reg = load_all()
    err = io.BytesIO()
    ctx = CommandContext(fs=make_fs(None), cwd="/workspace", env={"LANG": "C.UTF-8"},
                         stdin=Endless(), stdout=io.BytesIO(), stderr=err,  # type: ignore[arg-type]
                         budget=Budget(Limits()), name="xargs")
    ctx = replace(ctx, exec=_exec_factory(ctx))
    assert reg["xargs"].fn(ctx, ["xargs", "-n1", "nosuchcmd"]) == 127
    assert err.getvalue() == b"xargs: nosuchcmd: No such file or directory\n"


@pytest.mark.parametrize("argv", [
    ["grep", "--help"], ["grep", "-V"], ["sed", "--help"], ["sed", "--version"], ["xargs", "--help"],
    ["xargs", "--version"], ["expr", "--help"], ["expr", "--version"], ["diff", "--help"],
    ["diff", "-v"], ["cmp", "--help"], ["cmp", "--version"], ["patch", "--help"], ["patch", "-v"],
    ["find", "--help"], ["find", "--version"],
])
def test_help_and_version(argv: list[str]) -> None:
    assert_same(argv)
