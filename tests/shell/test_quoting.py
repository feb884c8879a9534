"""Differential tests of shell.quoting against bash's printf %q, ${x@Q}, declare -p and set."""

from __future__ import annotations

import subprocess

import pytest

from agentic_bash.shell import quoting as Q

BASH = "/usr/bin/bash"

STRINGS = [
    "", "a", "abc", "a b", "a'b", "'", "''", "a\"b", "$x", "`x`", "a\\b", "\\", "~", "~a", "a~", "a=~b",
    "a:~", "#", "#a", "a#", "a=b", "x,y", "!", "a;b", "a&b", "(x)", "{a,b}", "[x]", "a*", "?", "^",
    "a|b", "<>", "%", "+-./:@_", "\t", "\n", "a\nb", "a\tb", "\x01", "\x1b[0m", "\x7f", "\r\n",
    "\a\b\f\v", "é", "日本語", "a b é", "\u00a0", "\u200b", "\u2028", "\u0378", "\ue000", "😀",
    "\u0085", "\u00ad", "\udcff", "a\udcc3", "it's \"q\"", " leading", "trailing ", "é'\n",
    "".join(chr(i) for i in range(32, 127)), "\x1f", "a\x00b"[:1],
]


@pytest.fixture(scope="module")
def bash_table() -> list[list[str]]:
    script = (
        'for s in "$@"; do printf "%q\\0" "$s"; x=$s; printf "%s\\0" "${x@Q}"; '
        'declare -p x | tr -d "\\n"; printf "\\0"; set | grep -a "^x=" | tr -d "\\n"; printf "\\0"; done'
    )
    r = subprocess.run([BASH, "-c", script, "_", *STRINGS], capture_output=True, timeout=60,
                       env={"LANG": "C.UTF-8", "PATH": "/usr/bin:/bin"})
    assert r.stderr == b""
    fields = r.stdout.decode("utf-8", "surrogateescape").split("\0")[:-1]
    assert len(fields) == 4 * len(STRINGS)
    return [fields[i:i + 4] for i in range(0, len(fields), 4)]


@pytest.mark.parametrize("i", range(len(STRINGS)), ids=[repr(s) for s in STRINGS])
def test_against_bash(i: int, bash_table: list[list[str]]) -> None:
    s = STRINGS[i]
    q, sq, decl, st = bash_table[i]
    assert Q.quote_q(s) == q
    assert Q.quote_single(s) == sq
    assert "declare -- x=" + Q.quote_declare(s) == decl
    assert "x=" + Q.quote_set(s) == st


def test_roundtrip_through_bash() -> None:
    # what %q and @Q produce must read back as the original value
    vals = ["a b", "it's", "\n\t", "é\u2028", "$(x)", "\udcff"]
    script = "\n".join(f"printf '%s\\0' {Q.quote_q(v)} {Q.quote_single(v)}" for v in vals)
    r = subprocess.run([BASH, "-c", script], capture_output=True, timeout=60)
    got = r.stdout.decode("utf-8", "surrogateescape").split("\0")[:-1]
    assert got == [v for v in vals for _ in range(2)]
