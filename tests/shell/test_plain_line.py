"""The plain-line fast path of parse_with_warnings builds exactly the parser's tree."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agentic_bash.shell import parser as P

_CHARS = "abcz019_./:,+%@^-="
_word = st.text(alphabet=_CHARS, min_size=1, max_size=8)
_blank = st.text(alphabet=" \t", min_size=1, max_size=3)


def _full(source: str) -> P.Script:
    return P.Parser(source, 0, True).parse_script()


@st.composite
def _lines(draw: st.DrawFn) -> str:
    words = draw(st.lists(_word, min_size=1, max_size=6))
    seps = [draw(_blank) for _ in words]
    lead = draw(st.sampled_from(["", " ", "\t "]))
    tail = draw(st.sampled_from(["", " ", "\n", " \n"]))
    return lead + "".join(w + s for w, s in zip(words, seps)).rstrip(" \t") + tail


@settings(max_examples=400, deadline=None)
@given(_lines())
def test_plain_lines_build_the_parsers_tree(source: str) -> None:
    fast = P._plain_line(source)
    if fast is None:  # an assignment or a reserved/declaration word first: the parser's job
        first = source.split()[0]
        assert "=" in first or first in P._PLAIN_FIRST_NO
        return
    assert fast == _full(source)
    assert P.parse_with_warnings(source) == (fast, [])


_sep = st.sampled_from([";", " ; ", "&&", " && ", " || ", "||", "; ", ";;", "&", "|", " ;; "])
_cmd = st.lists(_word, min_size=1, max_size=3).map(" ".join)


@settings(max_examples=500, deadline=None)
@given(st.lists(_cmd, min_size=1, max_size=5), st.lists(_sep, min_size=4, max_size=4),
       st.sampled_from(["", ";", " ;", "\n", ";\n", "&&", " &"]))
def test_plain_lists_build_the_parsers_tree_or_take_the_parser(cmds: list[str], seps: list[str],
                                                                end: str) -> None:
    source = cmds[0] + "".join(s + c for s, c in zip(seps, cmds[1:])) + end
    fast = P._plain_line(source)
    try:
        full = _full(source)
    except P.ParseError:
        assert fast is None, source  # a syntax error is always left to the parser
        return
    if fast is not None:
        assert fast == full, source


def test_common_plain_lines_take_the_fast_path() -> None:
    for s in ["ls -la /tmp", "cd src && make test", "mkdir d; cd d\n", "a || b; c && d;",
              "git commit --amend"]:
        fast = P._plain_line(s)
        assert fast is not None, s
        assert fast == _full(s), s


def test_lines_with_anything_else_take_the_parser() -> None:
    for s in ["x=1", "echo $x", "echo 'a'", "ls *.py", "echo {a,b}", "cd ~", "echo a # c",
              "a | b", "a;; b", ";a", "a &", "a &&", "a > f", "2>f a", "time ls", "if", "export A=1",
              "a && time b", "a; then", "a |& b", "a; ;",
              "echo a\nb", "echo \\n", "(a)", "echo ã", "", "   ", "echo a\r", "! a",
              "declare -a x", "[ -f x ]", "echo a]"]:
        assert P._plain_line(s) is None, s
