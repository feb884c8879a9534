"""Parser: AST shapes per construct, bash-identical syntax errors, robustness properties."""

from __future__ import annotations

import gc
import re
import shutil
import subprocess
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentic_bash.errors import ParseError
from agentic_bash.shell import nodes as n
from agentic_bash.shell.parser import (
    CommandReader, decl_assign, parse, parse_cached, parse_with_warnings, parse_word,
)

BASH = shutil.which("bash") or "/usr/bin/bash"


def one(src: str) -> n.Command:
    s = parse(src)
    assert len(s.items) == 1, s
    return s.items[0].cmd


def W(*parts: n.Part) -> tuple[n.Part, ...]:
    return tuple(parts)


L = n.Lit


# ----------------------------------------------------------------------------- simple commands


def test_simple_words_and_quotes():
    c = one("echo a 'b c' \"d $x\" e\\*f $'g\\th'")
    assert isinstance(c, n.Simple)
    assert [w.text for w in c.words] == ["echo", "a", "'b c'", '"d $x"', "e\\*f", "$'g\\th'"]
    assert c.words[2].parts == (n.SQ("b c"),)
    assert c.words[3].parts == (n.DQ((L("d "), n.Param("x", short=True))),)
    assert c.words[4].parts == (L("e"), n.Escaped("*"), L("f"))
    assert c.words[5].parts == (n.ANSIC("g\th"),)


def test_assignments():
    c = one("a=1 b+=x c[i+1]=v d= e=$x'y' cmd arg=1")
    assert isinstance(c, n.Simple)
    a, b, cc, d, e = c.assigns
    assert (a.name, a.value.parts, a.append) == ("a", (L("1"),), False)
    assert (b.name, b.append) == ("b", True)
    assert cc.index.parts == (L("i+1"),) and cc.value.parts == (L("v"),)
    assert d.value.parts == ()
    assert e.value.parts == (n.Param("x", short=True), n.SQ("y"))
    assert [w.text for w in c.words] == ["cmd", "arg=1"]


def test_subscript_assignment_with_blanks():
    c = one("a[1 + 2]=x")
    assert c.assigns[0].index.text == "1 + 2"
    assert c.assigns[0].value.text == "x"


def test_array_assignment():
    c = one('a=(1 [k]=v "x y" [j]+=w\n z) b+=(q)')
    a, b = c.assigns
    assert a.value is None and not a.append
    assert [e.value.text for e in a.array] == ["1", "v", '"x y"', "w", "z"]
    assert a.array[1].key.text == "k"
    assert a.array[3].append
    assert b.append and b.array[0].value.text == "q"


def test_decl_array_word():
    c = one("declare -a x=(1 '2 3') y=4")
    w = c.words[2]
    assert w.parts == (L("x=(1 '2 3')"),) and w.text == "x=(1 '2 3')"
    a = decl_assign(w)
    assert a is not None and a.name == "x"
    assert [e.value.parts for e in a.array] == [(L("1"),), (n.SQ("2 3"),)]
    assert decl_assign(c.words[3]) is None
    assert decl_assign(c.words[0]) is None


def test_not_array_outside_declaration():
    with pytest.raises(ParseError):
        parse("echo a=(1 2)")


def test_redirections():
    c = one("cmd 2>&1 >/dev/null &> f &>> g 3<> h 4>&- {fd}>x <<< 's' >| k < in 5<&0")
    ops = [(r.op, r.fd, r.fd_var, r.target.text) for r in c.redirs]
    assert ops == [
        (">&", 2, None, "1"), (">", None, None, "/dev/null"), ("&>", None, None, "f"),
        ("&>>", None, None, "g"), ("<>", 3, None, "h"), (">&", 4, None, "-"),
        (">", None, "fd", "x"), ("<<<", None, None, "'s'"), (">|", None, None, "k"),
        ("<", None, None, "in"), ("<&", 5, None, "0"),
    ]


def test_redirection_before_command_and_alone():
    c = one("2>/dev/null echo hi")
    assert c.words[0].text == "echo" and c.redirs[0].fd == 2
    c = one("> file")
    assert c.words == () and c.redirs[0].op == ">"


def test_heredocs():
    s = parse("cat <<EOF; cat <<'Q' <<-\"T\"\nhello $x\nEOF\nraw $y\nQ\n\tstrip\n\tT\necho after\n")
    r1 = s.items[0].cmd.redirs[0].target
    r2, r3 = (r.target for r in s.items[1].cmd.redirs)
    assert isinstance(r1, n.HereDoc) and not r1.quoted and r1.delimiter == "EOF"
    assert r1.body.parts == (L("hello "), n.Param("x", short=True), L("\n"))
    assert r2.quoted and r2.body.parts == (L("raw $y\n"),)
    assert r3.strip_tabs and r3.quoted and r3.delimiter == "T" and r3.body.parts == (L("strip\n"),)
    assert s.items[2].cmd.words[0].text == "echo" and s.items[2].cmd.line == 8


def test_heredoc_in_command_substitution():
    s = parse("x=$(cat <<EOF\nin $y\nEOF\n)\necho $x")
    cs = s.items[0].cmd.assigns[0].value.parts[0]
    hd = cs.body.items[0].cmd.redirs[0].target
    assert hd.body.text == "in $y\n"


def test_heredoc_eof_warning():
    s, w = parse_with_warnings("echo x\ncat <<EOF\nfoo\n")
    assert w == [(3, "here-document at line 2 delimited by end-of-file (wanted `EOF')")]
    assert s.items[1].cmd.redirs[0].target.body.text == "foo\n"


def test_heredoc_backslash_and_quotes():
    hd = one('cat <<E\na\\$b "c" \\q\nE\n').redirs[0].target
    assert hd.body.parts == (L('a$b "c" \\q\n'),)


# ------------------------------------------------------------------------------- expansions


def params(src: str) -> list[n.Param]:
    c = one("echo " + src)
    return [p for w in c.words[1:] for p in w.parts]


def test_param_forms():
    ps = params("${#x} ${!x} ${!p*} ${!p@} ${x[@]} ${!a[@]} ${#a[*]} ${x/a/b} ${x//a} "
                "${x/#a/b} ${x/%a} ${x:1:2} ${x: -1} ${x@Q} ${x^^} ${x,} ${x:-d} ${x=d} ${x:?m} "
                "${x+a} ${x#p} ${x%%p} ${10} $1 $@ $# $$ ${#} ${x:=}")
    got = [(p.name, p.prefix, p.op, p.index.text if p.index else None,
            p.arg.text if p.arg else None, p.arg2.text if p.arg2 else None) for p in ps]
    assert got == [
        ("x", "#", "", None, None, None), ("x", "!", "", None, None, None),
        ("p", "!", "*", None, None, None), ("p", "!", "@", None, None, None),
        ("x", "", "", "@", None, None), ("a", "!", "", "@", None, None),
        ("a", "#", "", "*", None, None), ("x", "", "/", None, "a", "b"),
        ("x", "", "//", None, "a", None), ("x", "", "/#", None, "a", "b"),
        ("x", "", "/%", None, "a", None), ("x", "", ":", None, "1", "2"),
        ("x", "", ":", None, " -1", None), ("x", "", "@", None, "Q", None),
        ("x", "", "^^", None, "", None), ("x", "", ",", None, "", None),
        ("x", "", ":-", None, "d", None), ("x", "", "=", None, "d", None),
        ("x", "", ":?", None, "m", None), ("x", "", "+", None, "a", None),
        ("x", "", "#", None, "p", None), ("x", "", "%%", None, "p", None),
        ("10", "", "", None, None, None), ("1", "", "", None, None, None),
        ("@", "", "", None, None, None), ("#", "", "", None, None, None),
        ("$", "", "", None, None, None), ("#", "", "", None, None, None),
        ("x", "", ":=", None, "", None),
    ]


def test_bad_substitution_is_not_a_parse_error():
    (p,) = params("${a b}")
    assert p.op == "bad" and p.name == "${a b}"


def test_param_operand_quoting():
    (p,) = params('"${x:-\'a\'}"')[0].parts  # type: ignore[union-attr]
    assert p.arg.parts == (L("'a'"),)  # single quotes are literal in a quoted default
    (p,) = params('"${x#\'a\'}"')[0].parts  # type: ignore[union-attr]
    assert p.arg.parts == (n.SQ("a"),)  # …but quote a pattern
    p, rest = params("${x:-{a}b}")
    assert p.arg.text == "{a" and rest == L("b}")  # braces do not nest


def test_command_substitutions():
    c = one("echo $(echo $(echo hi)) `echo \\`date\\`` $((1+$(echo 2))) $( (sub) ) <(a) >(b)")
    w = c.words
    assert isinstance(w[1].parts[0], n.CmdSub)
    inner = w[1].parts[0].body.items[0].cmd.words[1].parts[0]
    assert isinstance(inner, n.CmdSub)
    bt = w[2].parts[0]
    assert bt.backtick and isinstance(bt.body.items[0].cmd.words[1].parts[0], n.CmdSub)
    ar = w[3].parts[0]
    assert isinstance(ar, n.ArithSub) and ar.expr.parts[0] == L("1+")
    sub = w[4].parts[0]
    assert isinstance(sub, n.CmdSub) and isinstance(sub.body.items[0].cmd, n.Subshell)
    assert w[5].parts[0].direction == "<" and w[6].parts[0].direction == ">"


def test_cmdsub_with_case_and_parens():
    c = one('x=$(case $y in a) echo ")";; (b|c) echo;; esac; echo "(")')
    body = c.assigns[0].value.parts[0].body
    assert isinstance(body.items[0].cmd, n.Case) and len(body.items) == 2


def test_arith_quotes_removed():
    (a,) = params('$(( "1" + x ))')
    assert a.expr.parts == (L(" 1 + x "),)


def test_extglob_and_glob_chars_stay_literal():
    c = one("echo @(a|b c) *(x) !(y) +(z) ?(w) {a,b} ~/x [ab]*")
    assert [w.parts for w in c.words[1:]] == [
        (L("@(a|b c)"),), (L("*(x)"),), (L("!(y)"),), (L("+(z)"),), (L("?(w)"),), (L("{a,b}"),),
        (L("~/x"),), (L("[ab]*"),)]
    with pytest.raises(ParseError):
        parse("echo @(a)", extglob=False)


def test_ansic_escapes():
    c = one(r"echo $'\x41\u263a\U0001F600\101\cA\e\'\\' $'a\0b'c")
    assert c.words[1].parts == (n.ANSIC("A\u263a\U0001F600A\x01\x1b'\\"),)
    assert c.words[2].parts == (n.ANSIC("a"), L("c"))


def test_locale_string_is_dq():
    assert one('echo $"a $x"').words[1].parts == (n.DQ((L("a "), n.Param("x", short=True))),)


def test_line_continuation_and_comments():
    s = parse("echo a\\\nb # c\n# only\necho d")
    assert s.items[0].cmd.words[1].parts == (L("ab"),)
    assert s.items[1].cmd.line == 4


# --------------------------------------------------------------------------------- lists


def test_pipelines_and_lists():
    s = parse("a | b |& c && d || e & f; ! g | h\ntime -p i\ntime")
    ao = s.items[0].cmd
    assert isinstance(ao, n.AndOr) and [op for op, _ in ao.rest] == ["&&", "||"]
    assert ao.first.stderr_too == (False, True, False)
    assert s.items[0].background and not s.items[1].background
    assert s.items[2].cmd.negated
    assert s.items[3].cmd.timed and s.items[3].cmd.time_posix
    assert s.items[4].cmd == n.Pipeline((), timed=True, line=3)


def test_newlines_after_operators():
    s = parse("a &&\n\nb ||\nc |\nd")
    assert len(s.items) == 1


# ----------------------------------------------------------------------------- compounds


def test_if_while_until():
    c = one("if a; then b; elif c\nthen d; else e; fi > out")
    assert isinstance(c, n.If) and len(c.clauses) == 2 and c.else_body is not None
    assert c.redirs[0].target.text == "out"
    c = one("until a; do b; done")
    assert isinstance(c, n.While) and c.until


def test_for_forms():
    c = one("for x in a 'b c'; do echo; done")
    assert c.var == "x" and [w.text for w in c.words] == ["a", "'b c'"]
    assert one("for x; do :; done").words is None
    assert one("for x\ndo :; done").words is None
    assert one("for x in; do :; done").words == ()
    c = one("for ((i=0; i<3; i++)); do :; done")
    assert isinstance(c, n.ArithFor) and c.init.text == "i=0" and c.step.text == " i++"
    c = one("for ((;;)) { break; }")
    assert c.init is None and c.cond is None and c.step is None
    c = one("select x in a b; do break; done")
    assert isinstance(c, n.Select)


def test_case():
    c = one("case $x in\n a|b) echo ab;;\n (c) echo c ;&\n *) ;;&\n d) esac")
    assert isinstance(c, n.Case)
    assert [[p.text for p in a.patterns] for a in c.arms] == [["a", "b"], ["c"], ["*"], ["d"]]
    assert [a.terminator for a in c.arms] == [";;", ";&", ";;&", ";;"]
    assert c.arms[2].body.items == ()


def test_case_esac_as_pattern_word_and_keywords_as_args():
    c = one("case x in esac")
    assert c.arms == ()
    c = one("echo if then fi done { }")
    assert len(c.words) == 7


def test_functions():
    f = one("f() { echo hi; }")
    assert isinstance(f, n.FuncDef) and f.name == "f" and isinstance(f.body, n.Group)
    assert f.source == "f() { echo hi; }"
    f = one("function g { :; } > out")
    assert isinstance(f.body, n.Group) and f.body.redirs[0].op == ">"
    f = one("function h() ( echo )")
    assert isinstance(f.body, n.Subshell)
    f = one("k ()\n{\n :\n}")
    assert f.name == "k"
    f = one("m() if true; then :; fi")
    assert isinstance(f.body, n.If)
    f = one("function a.b-c { :; }")
    assert f.name == "a.b-c"


def test_subshell_group_arith():
    assert isinstance(one("(a; b)"), n.Subshell)
    c = one("( (a) )")
    assert isinstance(c, n.Subshell) and isinstance(c.body.items[0].cmd, n.Subshell)
    c = one("((x = 1 + (2) ))")
    assert isinstance(c, n.ArithCmd) and c.expr.text == "x = 1 + (2) "
    assert isinstance(one("{ a; }"), n.Group)


def test_conditional():
    c = one("[[ -f x && $a == b* || ! ( -z $c ) ]]")
    e = c.expr
    assert isinstance(e, n.CondOr) and isinstance(e.left, n.CondAnd)
    assert e.left.left == n.CondUnary("-f", n.Word((L("x"),), "x", 1))
    assert e.left.right.op == "==" and e.left.right.right.text == "b*"
    assert isinstance(e.right, n.CondNot)
    c = one("[[ $x =~ ^(a|b c)$ && y < z ]]")
    assert c.expr.left.right.text == "^(a|b c)$"
    assert c.expr.right.op == "<"
    c = one("[[ x =~ \"a.b\"c ]]")
    assert c.expr.right.parts == (n.DQ((L("a.b"),)), L("c"))
    assert isinstance(one("[[ -n $x ]]").expr, n.CondUnary)
    assert isinstance(one("[[ $x ]]").expr, n.CondWord)


def test_line_numbers():
    s = parse("a\n\nif b\nthen\n  c\nfi\nd | \\\n e")
    assert [i.cmd.line for i in s.items] == [1, 3, 7]
    assert s.items[1].cmd.clauses[0][1].items[0].cmd.line == 5
    assert s.items[2].cmd.cmds[1].line == 8


# ----------------------------------------------------------------------- other entry points


def test_parse_word_and_cache():
    w = parse_word('+ $x "q" \\$', dq=True)
    assert w.parts == (n.DQ((L("+ "), n.Param("x", short=True), L(' "q" $'))),)
    w = parse_word("a b$x")
    assert w.parts == (L("a b"), n.Param("x", short=True))
    assert parse_cached("echo hi") is parse_cached("echo hi")


def test_command_reader_is_line_by_line():
    r = CommandReader("echo a; echo b\nf() {\n :\n}\nfi\necho never")
    first = r.next()
    assert first is not None and len(first.items) == 2
    assert isinstance(r.next().items[0].cmd, n.FuncDef)
    with pytest.raises(ParseError) as ei:
        r.next()
    assert ei.value.line == 5 and ei.value.source_line == "fi"


@pytest.mark.parametrize("src", ["if true; then", "echo 'a", "a &&", "a |", "cat <<E\nx", "f() {",
                                 "case x in", 'echo "$(', "for x in a; do"])
def test_incomplete_flag(src):
    try:
        parse(src)
    except ParseError as e:
        assert e.incomplete
    else:
        assert src.startswith("cat")  # a here-doc at EOF is only a warning in bash


@pytest.mark.parametrize("src", ["fi", "echo )", "a | | b", "( )"])
def test_complete_errors(src):
    with pytest.raises(ParseError) as ei:
        parse(src)
    assert not ei.value.incomplete


# --------------------------------------------------------------------- errors vs real bash

ERROR_CASES = [
    "fi", "if true; then", 'echo "abc', "echo 'abc", "echo $(", "echo ${", "a &&", "( )",
    "case x in", "echo `abc", "((1", 'echo x\necho "abc\n\n', "{ }", "if then fi", "echo )",
    "echo a=(1 2)", "f() echo hi", "a | | b", "echo > ", "echo >\necho", "while true; do",
    "case a in a) echo;; b", "[[ a", "echo $(if true; then",
    "x=$((1+2)", "echo ;;", ";", "& echo", "echo | ", "function", "function f", "for x in a b",
    "for ((i=0;i<3;i++)) echo", "if true; then :; else fi",
    "if true; then :; elif; then :; fi", "echo a &; echo b", "echo a && ; echo", "{ echo a }",
    "}", "done", "then", "in", "esac", "echo $'abc", "echo (", "echo a)",
    "echo x\nif true; then\necho\n\n", "echo x\necho ${\n\n", "echo x\n((1+\n\n",
    "echo x\necho $(\n\n\n", "echo x\necho `a\n\n", "[[ a ]] ]]", "|", "echo a;;",
    "case x in a) ;; b) ;; *)", "select", "echo a |& |", "f() { :; } }", "while :; do :; dne",
    "while :; { break; }", "until :; { :; }",
    "[[ a == b", "[[ a == b ||", "[[ ( a == b", "[[", "[[ a ==", "cat <<", "echo >&", "a && && b",
    "|| a", "f(){ }", ") (", "for x in a b c\necho", "case x a) ;; esac", 'echo "$(echo "a)"',
    "echo $((1 + $(echo 2))", "until true do :; done", "time -p |", "echo a & & echo b",
    "if true; then echo; fi fi", "for ((i=0;i<3;i++)); echo; done", "case x in\na) echo a\nb) echo b;;\nesac",
]


def _bash_error(src: str) -> tuple[int, int, str, list[str]]:
    r = subprocess.run([BASH, "-O", "extglob", "-c", src], capture_output=True, timeout=10,
                       env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
    lines = r.stderr.decode().splitlines()
    m = re.match(r"\S*bash: -c: line (\d+): (.*)", lines[0])
    assert m, lines
    return r.returncode, int(m.group(1)), m.group(2), lines[1:]


@pytest.mark.bash
@pytest.mark.parametrize("src", ERROR_CASES)
def test_errors_match_bash(src):
    status, line, message, rest = _bash_error(src)
    with pytest.raises(ParseError) as ei:
        parse(src)
    e = ei.value
    assert (e.message, e.line) == (message, line)
    assert status == 2 and e.status == 2
    _check_source_line(e, rest)


# bash quirks in the exit status: `a=(` at EOF exits 1, a syntax error inside $(…) 127
STATUS_QUIRK_CASES = ["a=(", "local x=(1", "echo $(if true; then)", "echo $(fi)", 'x="$(case)"',
                      "echo x\na=(1 2"]


@pytest.mark.bash
@pytest.mark.parametrize("src", STATUS_QUIRK_CASES)
def test_error_status_quirks_match_bash(src):
    status, line, message, rest = _bash_error(src)
    with pytest.raises(ParseError) as ei:
        parse(src)
    assert (ei.value.message, ei.value.line) == (message, line)
    assert ei.value.status == status
    _check_source_line(ei.value, rest)


def _check_source_line(e: ParseError, rest: list[str]) -> None:
    if rest:  # bash echoes the offending line after "near unexpected token"
        m = re.match(r"\S*bash: -c: line \d+: `(.*)'$", rest[0])
        assert m and e.source_line == m.group(1)


COND_ERROR_CASES = [
    "[[ a -x b ]]", "[[ -f ]]", "[[ a == ]]", "[[ ( a ]]", "[[ a =~ b) ]]", "[[ a b ]]",
    "[[ -f a b ]]", "[[ a == b c ]]", "[[ a ) ]]", "[[ && ]]", "[[ a\n&& b ]]",
    "[[ a == \n a ]]", "[[ -n \n a ]]",
]


@pytest.mark.bash
@pytest.mark.parametrize("src", COND_ERROR_CASES)
def test_cond_errors_match_bash(src):
    # bash -c reports [[ ]] syntax errors but keeps $? (0 here) instead of exiting 2
    status, line, message, _ = _bash_error(src)
    with pytest.raises(ParseError) as ei:
        parse(src)
    assert (ei.value.message, ei.value.line) == (message, line)
    assert status == 0 and ei.value.keep_status


VALID_CASES = [
    "for 1 in a; do :; done", "! ", "time ! ", "[[ a &&\n b ]]", "[[\n a ]]",
    "echo $( (echo a) )", "((  (1) ))", "echo ${x:-`echo }`}", "case x in (a|b) ;; esac",
    "f() { :; } > out 2>&1", "function f() { :; }", "[[ a =~ (b c) ]]", "[[ a =~ b|c ]]",
    "exec {fd}>&-", "x=`echo \\`echo hi\\``", 'echo "`echo "a b"`"', "for x in a b; { echo; }", "coproc cat", "echo $(( 1 + 2 ) )", "a=1 b[2]=3 env",
    "cat <<EOF\nabc", "echo a\\\n;\\\necho b", "echo !(a) @(b c)", "echo \\",
    "[[ a == b\n]]", "[[ -f x\n ]]", "[[ ( a == b\n ) ]]", "[[ a == b &&\n c == d\n ]]",
    "cat <<EOF\na $(echo\nEOF", "cat <<EOF\na ${x\nEOF",
]


@pytest.mark.bash
@pytest.mark.parametrize("src", VALID_CASES)
def test_valid_like_bash(src):
    r = subprocess.run([BASH, "-O", "extglob", "-n", "-c", src], capture_output=True, timeout=10)
    assert b"syntax error" not in r.stderr and b"unexpected" not in r.stderr, r.stderr
    parse(src)


# ------------------------------------------------------------------------------ robustness


def _cpu_to_parse(src: str) -> float:
    # CPU time, not wall: a loaded machine stretches wall time but not the parser's work.
    # The collector is off while it is timed: its passes over every live object grow with
    # the tree already built (5,000 lines cost 14x 500 with it, 10x without), which is the
    # collector's cost, not the parser's; under CI load that reached 33x (session 13).
    gc.collect()
    gc.disable()
    try:
        t = time.process_time()
        parse(src)
        return time.process_time() - t
    finally:
        gc.enable()


def test_large_one_line_script_is_linear():
    src = "echo " + "a$b'c'\"d\" " * 100_000  # ~1.2 MB
    assert len(parse(src).items[0].cmd.words) == 100_001
    small = min(_cpu_to_parse("echo " + "a$b'c'\"d\" " * 10_000) for _ in range(3))
    big = min(_cpu_to_parse(src) for _ in range(2))
    # 10x the input: ~10x the work when linear, ~100x when quadratic (~1.3 s CPU here)
    assert big < 30 * max(small, 0.01) and big < 20, (small, big)


def test_many_lines_is_linear():
    src = "x=$((x+1)); echo \"$x\" | cat\n" * 5_000
    assert len(parse(src).items) == 10_000
    small = min(_cpu_to_parse("x=$((x+1)); echo \"$x\" | cat\n" * 500) for _ in range(3))
    big = min(_cpu_to_parse(src) for _ in range(2))
    assert big < 30 * max(small, 0.01) and big < 20, (small, big)  # ~0.15 s CPU here


@pytest.mark.parametrize("src", [
    "echo " + "$(" * 500 + "x" + ")" * 500,
    "echo " + "$(" * 500,
    "(" * 2000 + ")" * 2000,
    "echo " + "${x:-" * 1000 + "}" * 1000,
    "[[ " + "( " * 1000 + "a" + " )" * 1000 + " ]]",
    "if true; then " * 500 + ":" + "; fi" * 500,
    "echo " + "`" * 200,
    "a=" + '"$(' * 300,
])
def test_deep_nesting_never_crashes(src):
    try:
        parse(src)
    except ParseError:
        pass


def test_nul_and_surrogates():
    parse("echo a\x00b 'c\x00' \udcff\udc80")
    s = parse("echo \udcff")
    assert s.items[0].cmd.words[1].parts == (L("\udcff"),)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=80))
def test_random_text_only_raises_parse_error(src):
    try:
        parse(src)
    except ParseError:
        pass


_SHELLISH = st.lists(st.sampled_from([
    "echo", " ", "\n", ";", "&", "&&", "||", "|", "(", ")", "{", "}", "$(", "${", "}", "`", "'",
    '"', "\\", "$x", "if", "then", "fi", "for", "in", "do", "done", "case", "esac", ";;", "<<",
    "EOF", ">", "<", "2>&1", "[[", "]]", "((", "))", "=", "a=(", "[", "]", "#", "$((", "!", "@(",
    "*", "function", "f()", "while", "-f", "=~", "\t", "<(", "$'", "\\n",
]), max_size=30).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_SHELLISH)
def test_random_shellish_only_raises_parse_error(src):
    try:
        parse(src)
    except ParseError:
        pass


def test_extglob_always_on_inside_conditional():
    c = one_ext("[[ a == @(a|b) ]]")
    assert c.expr.right.parts == (L("@(a|b)"),)


def one_ext(src: str) -> n.Command:
    return parse(src, extglob=False).items[0].cmd


def test_command_reader_extglob_switch():
    r = CommandReader("shopt -s extglob\necho @(a|b)", extglob=False)
    assert r.next() is not None
    r.extglob = True  # what the interpreter does after running `shopt -s extglob`
    assert r.next().items[0].cmd.words[1].text == "@(a|b)"
    with pytest.raises(ParseError):
        list(CommandReader("shopt -s extglob; echo @(a|b)", extglob=False))


@pytest.mark.parametrize(("src", "more"), [
    ("echo hi", False), ("if true; then", True), ("cat <<EOF\nabc", True), ("cat <<EOF\nabc\nEOF", False),
    ("echo a \\", True), ("echo 'a", True), ("a |", True), ("fi", False), ("for x in a; do", True),
])
def test_needs_more_input(src, more):
    from agentic_bash.shell.parser import needs_more_input
    assert needs_more_input(src) is more


def test_broken_heredoc_body_fails_at_run_time():
    hd = one("cat <<EOF\na $(echo\nEOF").redirs[0].target
    assert hd.body.parts == (n.Param("a $(echo\n", op="bad"),)


def test_array_keys_with_blanks():
    a = one('a=([b c]=2 ["x y"]+=$z [k]= plain)').assigns[0]
    assert [(e.key.text if e.key else None, e.value.text, e.append) for e in a.array] == [
        ("b c", "2", False), ('"x y"', "$z", True), ("k", "", False), (None, "plain", False)]


def test_backslash_quotes_closing_brace_in_quoted_operand():
    (dq,) = one('echo "${x:-a\\}b}"').words[1].parts
    assert dq.parts[0].arg.parts == (L("a}b"),)
    (dq,) = one('echo "${x/b/\\/}"').words[1].parts
    # (a replacement's backslash escapes any character: a quoted `/`)
    assert [(type(p).__name__, p.text) for p in dq.parts[0].arg2.parts] == [("Escaped", "/")]
    assert params("${x~~} ${x~}")[0].op == "~~"


def test_aliases():
    al = {"ll": "ls -l ", "ls": "ls --color", "x": "echo x;", "q": "if true; then echo", "a": "b", "b": "a"}
    got = [[[w.text for w in i.cmd.words] if isinstance(i.cmd, n.Simple) else type(i.cmd).__name__
             for i in s.items] for s in CommandReader("ll x\nx y\nq; fi\nv=1 ll\na z\n" + "ls\n" * 200,
                                                       aliases=al)]
    assert got[:5] == [[["ls", "--color", "-l", "echo", "x"]], [["echo", "x"], ["y"]], ["If"],
                       [["ls", "--color", "-l"]], [["a", "z"]]]
    assert all(g == [["ls", "--color"]] for g in got[5:]) and len(got) == 205


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_SHELLISH)
def test_command_reader_agrees_with_parse(src):
    try:
        whole = parse(src)
    except ParseError as e:
        with pytest.raises(ParseError) as ei:
            list(CommandReader(src))
        assert (ei.value.message, ei.value.line) == (e.message, e.line)
        return
    items = [i for s in CommandReader(src) for i in s.items]
    assert tuple(items) == whole.items


def test_broken_backtick_body_fails_at_run_time():
    cs = one("echo `fi`").words[1].parts[0]
    assert cs.backtick
    assert [w.text for w in cs.body.items[0].cmd.words] == ["builtin", "eval", "", "'fi'"]
    with pytest.raises(ParseError):
        parse("echo `fi")  # an unterminated backtick is still a parse error


@pytest.mark.bash
@pytest.mark.parametrize("tail", ["EOF)", "EOF )", "EOF);echo z", "EOFX)"])
def test_heredoc_delimiter_prefix_ends_it_inside_command_substitution(tail):
    src = 'x=$(cat <<EOF\nhi\n' + tail + '\necho "[$x]"'
    r = subprocess.run([BASH, "-c", "set -n; " + src], capture_output=True, text=True, timeout=10)
    m = re.match(r"\S*bash: line (\d+): warning: (.*)", r.stderr)
    s, w = parse_with_warnings(src)
    assert m and w == [(int(m.group(1)), m.group(2))]
    body = s.items[0].cmd.assigns[0].value.parts[0].body
    assert body.items[0].cmd.redirs[0].target.body.text == "hi\n"
    assert len(body.items) == (2 if tail == "EOFX)" else 1)


def test_parse_partial_keeps_complete_lines_before_the_error():
    from agentic_bash.shell.parser import parse_partial
    s, err, warnings = parse_partial("echo a; echo b\nif true; then\n  echo c\nfi\nfi\necho never")
    assert [type(i.cmd).__name__ for i in s.items] == ["Simple", "Simple", "If"]
    assert err is not None and (err.message, err.line) == ("syntax error near unexpected token `fi'", 5)
    s, err, warnings = parse_partial("cat <<E\nx")
    assert err is None and len(s.items) == 1 and warnings


# ----------------------------------------------------------------------------- line continuations

def test_continuations_are_joined_where_bash_joins_them():
    cmd = one("echo $HO\\\nME ${x\\\n:-d} a\\\nb")
    assert cmd.words[1].parts == (n.Param("HOME", short=True),)
    assert cmd.words[2].parts[0].op == ":-"
    assert cmd.words[3].text == "ab"
    assert isinstance(one("true &\\\n& false"), n.AndOr)
    assert isinstance(one("whi\\\nle false; do :; done"), n.While)


def test_continuations_keep_physical_line_numbers():
    s = parse("echo $HO\\\nME\necho x\\\ny &\\\n& echo $LINE\\\nNO\necho z")
    # (a simple command is numbered after the token that follows its first word, as in bash)
    assert len(s.items) == 3 and s.items[0].cmd.line == 2
    assert s.items[-1].cmd.words[0].line == 7


def test_single_quotes_and_comments_keep_continuations():
    assert one("echo 'a\\\nb'").words[1].parts == (n.SQ("a\\\nb"),)
    s = parse("echo a # c \\\necho b")
    assert len(s.items) == 2


def test_reader_echoes_continued_text_as_written():
    r = CommandReader("echo a\\\nb; true &\\\n& echo c\necho d\n")
    start = r.consumed[1]
    r.next()
    text, end = r.consumed
    assert text[start:end].startswith("echo a\\\nb; true &\\\n& echo c")


def test_many_continuations_inside_words_stay_bounded():
    # each continuation inside a word is cut out of the text; thousands of them in a large
    # script must end in bounded time (an error past the work budget), not hang the host
    import time

    from agentic_bash import Sandbox
    with Sandbox(isolation="virtual") as sb:
        r = sb.run("ec\\\nho a\n" * 500)
        assert (r.exit_code, r.stdout) == (0, "a\n" * 500)
        t = time.monotonic()
        r = sb.run("ec\\\nho a\n" * 40000)
        assert time.monotonic() - t < 60
        assert r.exit_code == 2 and "too many line continuations" in r.stderr
