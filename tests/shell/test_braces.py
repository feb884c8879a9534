"""Differential tests of shell.braces against real bash's brace expansion."""

from __future__ import annotations

import subprocess

import pytest

from agentic_bash.shell.braces import BraceExpansionTooLarge, expand_braces
from agentic_bash.shell.nodes import DQ, SQ, Escaped, Lit, Param, Part, Word

BASH = "/usr/bin/bash"


def mkword(src: str) -> Word:
    """A tiny word lexer for tests: '..', "..", \\x, $name, ${name}, the rest Lit."""
    parts: list[Part] = []
    buf = ""
    i = 0

    def flush() -> None:
        nonlocal buf
        if buf:
            parts.append(Lit(buf))
            buf = ""

    while i < len(src):
        c = src[i]
        if c == "'":
            j = src.index("'", i + 1)
            flush()
            parts.append(SQ(src[i + 1:j]))
            i = j + 1
        elif c == '"':
            j = src.index('"', i + 1)
            flush()
            parts.append(DQ((Lit(src[i + 1:j]),)))
            i = j + 1
        elif c == "\\":
            flush()
            parts.append(Escaped(src[i + 1]))
            i += 2
        elif c == "$" and src[i + 1:i + 2] == "{":
            j = src.index("}", i)
            flush()
            parts.append(Param(src[i + 2:j]))
            i = j + 1
        elif c == "$":
            j = i + 1
            while j < len(src) and (src[j].isalnum() or src[j] == "_"):
                j += 1
            flush()
            parts.append(Param(src[i + 1:j], short=True))
            i = j
        else:
            buf += c
            i += 1
    flush()
    return Word(tuple(parts), src)


VARS = {"v": "V", "x": "X"}


def render(w: Word) -> str:
    out = []
    for p in w.parts:
        if isinstance(p, (Lit, SQ, Escaped)):
            out.append(p.text)
        elif isinstance(p, DQ):
            out.append("".join(q.text for q in p.parts))  # type: ignore[union-attr]
        elif isinstance(p, Param):
            out.append(VARS.get(p.name, ""))
    return "".join(out)


WORDS = [
    "{a,b}", "a{b,c}d", "{a,b}{c,d}", "{a,{b,c}}", "{{a,b}}", "{a}", "{}", "a{}b", "{,}", "{a,}",
    "{,a}", "x{,}y", "{a..e}", "{e..a}", "{a..e..2}", "{a..z..-5}", "{1..10}", "{10..1}", "{1..10..3}",
    "{10..1..3}", "{1..10..-3}", "{01..10}", "{1..010}", "{-5..5}", "{-05..5}", "{5..-05}", "{001..3}",
    "{0..0}", "{3..3}", "{1..2..0}", "{a..}", "{..a}", "{a..b..}", "{1..a}", "{a..1}", "{a..bc}",
    "{1..2..x}", "{1..2.}", "{X..Z}", "{x..c}", "{+1..3}", "{1..+3}", "{1..3..+1}", "x{a..c}y{1..2}",
    'a{b,"c d"}e', "{x,y}$v", "{x,'$v'}", "${x}{a,b}", "a\\{b,c}", "a{b\\,c}", "a{b,c\\}", "{a,b}\\}",
    "{a,b", "a,b}", "{a,b}}", "{{a,b}", "{a,b}c}", "{a{b,c}d}", "{a,b{1..3}}", "{1..3}{a,b}",
    "-{a,b,c}-", "{a,b}{}", "{},{a,b}", "{,,}", "{a,,b}", "{'a',\"b\"}", "{a..c}{", "{1..3}}",
    "{a,b}{1..2}{x,y}", "pre{x,y{1..2},z}post", "{a..c..}", "{9223372036854775806..9223372036854775807}",
    "{1..3..9999999999999999999}", "{a,b}..{c,d}", "{a..c}..", "{.,..}", "{a...c}", "{1...3}",
    "{0x1..3}", "{é,b}", "{é..f}",
]


@pytest.fixture(scope="module")
def bash_table() -> list[list[str]]:
    script = "v=V x=X\n" + "\n".join(f"printf '%s\\n' {w}; echo @@" for w in WORDS)
    r = subprocess.run([BASH], input=script.encode(), capture_output=True, timeout=60,
                       env={"LANG": "C.UTF-8", "PATH": "/usr/bin:/bin"})
    assert r.stderr == b""
    chunks = r.stdout.decode().split("@@\n")[:-1]
    assert len(chunks) == len(WORDS)
    return [c.splitlines() for c in chunks]


@pytest.mark.parametrize("i", range(len(WORDS)), ids=WORDS)
def test_against_bash(i: int, bash_table: list[list[str]]) -> None:
    # unquoted empty words vanish in bash (and `printf` without arguments prints one line)
    got = [r for r in (render(w) for w in expand_braces(mkword(WORDS[i]))) if r]
    assert got == [r for r in bash_table[i] if r]


def test_generated_backslash() -> None:
    # bash quote-removes a generated backslash ({Z..a}): an empty (but present) word
    assert [render(w) for w in expand_braces(mkword("{Z..a}"))][2] == ""


def test_fast_path_returns_same_object() -> None:
    w = mkword("abc$v'{a,b}'")
    assert expand_braces(w)[0] is w
    w2 = mkword("{a}")
    assert expand_braces(w2)[0] is w2


def test_structure_keeps_quoted_parts() -> None:
    out = expand_braces(mkword('a{b,"c d"}e'))
    assert out[1].parts == (Lit("a"), DQ((Lit("c d"),)), Lit("e"))
    assert out[0].parts == (Lit("abe"),)


def test_limit() -> None:
    with pytest.raises(BraceExpansionTooLarge):
        expand_braces(mkword("{1..2000000}"))
    with pytest.raises(BraceExpansionTooLarge):
        expand_braces(mkword("{1..1000}{1..1000}{1..10}"), limit=100_000)
