"""Unparse: ``declare -f`` layout compared with the real bash, and print/parse round trips."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentic_bash.errors import ParseError
from agentic_bash.shell import nodes as n
from agentic_bash.shell.parser import parse
from agentic_bash.shell.unparse import format_command, format_function, format_word

BASH = shutil.which("bash") or "/usr/bin/bash"

# One function per construct family; every one is printed by bash 5.2 and by us.
FUNCTIONS = r'''f1() { echo hi; }
f2() { if [ -n "$1" ]; then echo a; elif false; then echo b; else echo c; fi; }
f3() { for x in a "b c" $d; do echo $x; done; for y; do :; done; for ((i=0;i<3;i++)); do echo $i; done; }
f4() { while read -r l; do echo "$l"; done < file; until false; do break; done; }
f5() { case $1 in a|b) echo ab;; (c) echo c;& *) echo d;;& esac; }
f6() { a | b |& c && d || ! e; f & g; }
f7() { cat <<EOF
hello $x
EOF
cat <<'Q' > out
raw
Q
}
f8() ( echo sub; )
f9() { local x=1 y=(1 2) ; x+=2; a[1]=3; declare -A m=([k]=v); echo ${x:-d} $(echo hi) `echo bt` $((1+2)); }
f10() { [[ -f x && $a == b* || ! -z $c ]]; (( x = 1 + 2 )); { echo g; } 2>&1 >/dev/null; ( echo s ) > o; }
f11() { echo a 2>/dev/null >&2 3<>f 4>&- &>g &>>h <<<"str" >|k; exec {fd}>x; }
function f12 { echo; } 
f13() { time -p sleep 1; time echo; select x in a b; do break; done; }
f14() { x=$(case a in a) echo;; esac); echo "$( (sub) )" <(a) >(b); }
f15() {
   # comment
   echo a; echo b
   echo c &
   f() { echo inner; }
}
f16() { if true; then :; fi > out; while :; do :; done 2>&1; }
f17() { echo "a b" 'c d' $'e\tf' \* "x\"y"; }
f18() { cat <<-EOF
	tab
	EOF
echo after; }
f19() { echo a && { echo b; echo c; }; ! true; }
f20() { a=1 b=2 cmd; >out; 2>&1 ; }
g1() { ( a; b ) ; ( a
b ) & }
g2() { echo $'a\'b' $'x\ny' "q$'a'" $"loc"; }
g3() { case x in a) ;; b) echo;; esac; case y in *) esac; }
g4() { if a; then if b; then c; fi; fi; while a && b; do :; done; }
g5() { cat <<EOF && echo ok
body
EOF
cat <<A <<B
a
A
b
B
echo x; }
g6() { a & b & }
g7() { { a; } | { b; }; a || b && c; }
g8() { f() ( echo ); function g { :; } > o; }
g10() { for x in; do :; done; for x in a; { :; }; }
g11() { echo ${a[@]} ${#a[*]} ${!a[@]} ${a/x/y} ${a: -1} "${a:-"x y"}"; }
g12() { x=(a b) y+=(c) z[2]+=d; }
g13() { echo hi >&2; read x <&3; echo 2>&-; cat 0<in 1>out; }
g14() { while read l; do echo; done <<< "$x"; }
g15() { echo a\
b; }
g17() { ! { a; }; time { a; }; }
g18() { for ((;;)); do break; done; for (( i = 0 ; i < 2 ; i++ )); do :; done; }
h1() { cat <<EOF
hi
EOF
}
h2() { cat <<EOF >out 2>&1
hi
EOF
}
h3() { cat <<EOF | tr a b
hi
EOF
}
h4() { cat <<EOF; echo x
hi
EOF
}
h5() { if true; then cat <<EOF
hi
EOF
fi; }
h6() { x=$(cat <<EOF
hi
EOF
); }
h7() { a; b; } > o
h8() ( a ) > o
h9() { cat <<"E" 3<<-'F'
x
E
	y
	F
}
k1() { x=$(a; b); y=$(a | b && c); z=$( { a; } ); w=$(if a; then b; fi); echo "$(echo "q")" `echo a; echo b`; }
k3() { echo $'a\nb' $'tab\there' $'q\'q' $'\x01'; }
k5() { a=(1
2 [x]="y z") ; local -A m=([a]=1 [b]=2); }
k6() { ! a | b; time -p ! a; }
k7() { { a; b; } & wait; }
k8() { f() { :; }; }
k9() { echo ${x/a/"b c"} "${y#"$z"}" ${#a[@]} ${a[$i+1]} ${!ref} ${!pre@}; }
m1() { if true; then cat <<EOF
hi
EOF
fi; echo x; }
m2() { cat <<EOF | while read l; do echo $l; done
a
EOF
}
m3() { { cat <<EOF
x
EOF
}; echo; }
m4() { case x in a) cat <<EOF;;
y
EOF
esac; }
m5() { a && b || c | d & e; f; }
m6() { for i in 1 2; do if [ $i = 1 ]; then continue; else break; fi; done > out; }
m7() { while true; do case $x in *) break;; esac; done; }
m8() { echo "a
b" 'c
d'; }
m9() { local -r x="$1" && shift; : "${x:?}" >&2; }
m10() { (( i++ )) || true; [[ -z ${x-} ]] && return 1; }
m11() { exec 3>&1 4>&2; trap 'echo bye' EXIT; }
m12() { echo ${x:-$(echo "a b")} $(( $(echo 1) + 2 )); }
m13() { echo a; } 2>/dev/null
m14() { until [ -e f ]; do sleep 1; done; select x; do :; done; }
'''


def _ours() -> dict[str, str]:
    out = {}
    for item in parse(FUNCTIONS).items:
        if isinstance(item.cmd, n.FuncDef):
            out[item.cmd.name] = format_function(item.cmd)
    return out


@pytest.fixture(scope="module")
def bash_declare_f() -> dict[str, str]:
    r = subprocess.run([BASH, "-c", 'eval "$1"; declare -f', "bash", FUNCTIONS],
                       capture_output=True, text=True, timeout=20)
    fns: dict[str, list[str]] = {}
    cur = None
    for line in r.stdout.split("\n"):
        m = re.match(r"^(\S+) \(\) $", line)
        if m:
            cur = m.group(1)
            fns[cur] = [line]
        elif cur:
            fns[cur].append(line)
    return {k: "\n".join(v).rstrip("\n") for k, v in fns.items()}


NAMES = sorted(_ours())


def test_enough_functions():
    assert len(NAMES) >= 12


@pytest.mark.bash
@pytest.mark.parametrize("name", NAMES)
def test_declare_f_matches_bash(name, bash_declare_f):
    assert _ours()[name] == bash_declare_f[name]


@pytest.mark.parametrize("name", NAMES)
def test_round_trip(name):
    text = _ours()[name]
    again = parse(text).items[0].cmd
    assert isinstance(again, n.FuncDef)
    assert format_function(again) == text


@pytest.mark.bash
@pytest.mark.parametrize("src", [
    "f() { [[ ( a == b ) && ! ( -f x || -d y ) ]]; [[ ( ( a ) ) || b && ( c || d ) ]]; }",
    "f() { x=$(a\nb); y=$(a; b\nc &\nd); z=$(cat <<EOF\nhi\nEOF\necho x); }",
    "f() { local v=$(\n  ls\n  ); }",
])
def test_layout_details_match_bash(src):
    r = subprocess.run([BASH, "-c", 'eval "$1"; declare -f f', "bash", src], capture_output=True,
                       text=True, timeout=20)
    assert format_function(parse(src).items[0].cmd) == r.stdout.rstrip("\n")


def test_rw_redirection_fd_1_kept():
    # bash prints `1<> f` as `<> f` (which re-parses as fd 0); we keep the fd
    f = parse("f() { echo 1<> f <> g; }").items[0].cmd
    assert "echo 1<> f 0<> g" in format_function(f)


def test_format_command_one_line():
    c = parse("{ a; b; } | c && d 2>&1; e &").items
    assert format_command(c[0].cmd) == "{ a; b; } | c && d 2>&1"
    s = parse("if a; then b; fi").items[0].cmd
    assert format_command(s) == "if a; then\n    b;\nfi"


def test_format_word_rebuilds_substitutions():
    w = parse("echo $( (a) ) $(b;c) $'x\\ty' a\\\nb").items[0].cmd.words
    assert [format_word(x) for x in w[1:]] == ["$( ( a ))", "$(b; c)", "'x\ty'", "ab"]


_ATOMS = st.sampled_from([
    "a", "b c", "x=1", "echo $x", "cat <<E\nbody $y\nE\n", "cat <<'Q' >o\nraw\nQ\n", "(a; b)",
    "{ a; }", "if a; then b; fi", "while a; do b; done", "for i in 1 2; do c; done",
    "case $x in a|b) c;; *) ;; esac", "[[ -n $x && a == b ]]", "((i++))", "a |& b",
    "! a | b", "time a", "f() { a; }", "x=$(a; b)", "y=(1 [2]=3)", "a 2>&1 >o <i",
    "for ((i=0;i<2;i++)); do :; done", "select s in a; do break; done", "a &",
])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_ATOMS, st.sampled_from(["; ", " && ", " || ", " | ", "\n", " & "])),
                min_size=1, max_size=5))
def test_random_function_round_trip(pieces):
    body = "".join(a + (sep if not a.endswith("\n") or sep == "\n" else "") for a, sep in pieces)
    src = "f() {\n" + body + "\n}"
    try:
        f = parse(src).items[0].cmd
    except ParseError:
        return
    text = format_function(f)
    again = format_function(parse(text).items[0].cmd)
    assert again == text
