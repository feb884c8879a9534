"""A simple command of literal words and $name (the _P_ARGVP plan) against bash."""

from __future__ import annotations

import subprocess

import pytest

from agentic_bash import Sandbox

CASES = [
    'i=1; [ $i -lt 3 ] && echo lt; [ "$i" = 1 ] && echo eq',
    'x="a b"; printf "<%s>" $x "$x"; echo',
    'y="*"; z=; printf "<%s>" $y "$z" $z; echo',
    'v=a.b-c/d:e,f%g=h+i@j_0; printf "<%s>" $v; echo',
    'IFS=:; v=a:b; printf "<%s>" $v "$v"; echo',
    'IFS=; v="a b"; printf "<%s>" $v; echo',
    'v="?"; printf "<%s>" $v; echo',
    'declare -n r=v; v=abc; echo $r "$r"',
    'a=(1 2 3); echo $a "$a"',
    'declare -i n=2+3; echo $n; declare -u u=low; echo $u',
    'set -u; echo $nope; echo after',
    'set -k; x=a; echo $x y=1',
    'x=7; echo $x last; echo $_',
    'set -x; x=q; echo $x "$x"',
    'x=-n; echo $x hi; echo "$x" hi',
    'f() { echo "f:$1"; }; x=ab; f $x "$x"',
    'shopt -s extglob; x="@(a)"; echo $x',
    'x="a\\\\b"; echo $x "$x"',
]


@pytest.mark.parametrize("script", CASES)
def test_params_plan_as_bash(script, tmp_path):
    # (both in an empty directory: the glob cases match nothing there)
    want = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=20, cwd=tmp_path)
    with Sandbox(isolation="virtual") as sb:
        r = sb.run(script)
    assert (r.stdout, r.exit_code) == (want.stdout, want.returncode)
    if "set -x" in script:
        assert r.stderr == want.stderr
