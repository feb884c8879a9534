"""Forks share arrays copy-on-write: every change in place after a fork matches bash and leaves the other side alone."""

from __future__ import annotations

import shutil
import subprocess
import threading

import psutil
import pytest

import agentic_bash as ab
from agentic_bash.shell import state

MiB = 1 << 20

# each line changes an array (indexed and associative) in the parent and in a fork of every
# kind after the fork was made, then prints both sides: any change that skipped Var.own()
# shows on the other side (and in the shared-dict check below)
_SETUP = "a=(1 2 3); declare -A h=([k]=v [j]=w); declare -ai n=(1 2); declare -al l=(A B); "
_SHOW = 'echo "${a[*]}|${!a[*]}|${h[k]}${h[j]}${h[z]}|${n[*]}|${l[*]}"'
_CHANGES = [
    "a[1]=X; h[k]=Y; n[0]+=5; l[1]=Q",
    "a+=(4 5); h+=([z]=Z); n+=(7); l+=(R)",
    "a[-1]+=t; h[k]+=u; n[1]+=1",
    "unset 'a[0]' 'h[k]' 'n[1]'",
    "unset 'a[-1]'",
    "declare a[2]=D h[k]=E; declare -a a+=(F)",
    "a=x; h=y",
    "a+=x",
    "mapfile -O 1 a < <(printf 'p\\nq\\n')",
    "mapfile -O 5 a <<< m",
    "read -ra a <<< 'r s'",
    "printf -v 'a[0]' %s pv; printf -v 'h[k]' %s ph",
    "(( a[1]++, n[0]*=3 ))",
    ": ${a[7]:=dflt} ${h[q]:=hq}",
    "a=([$(echo 4)]=cs [0]=z)",
    "a=([$((a[1]=9))]=ar)",
    "h=([m]=1 [n]=2); a=()",
]
_FORKS = [
    "( {c}; {show} )",
    "{{ {c}; {show}; }} | cat",
    "echo \"$({c}; {show})\"",
    "{{ {c}; {show}; }} & wait",
    "cat <({c}; {show})",
]


def _script() -> str:
    parts = []
    for c in _CHANGES:
        for f in _FORKS:
            # the fork changes its copy; then the parent changes its own after a fork
            parts.append(_SETUP + f.format(c=c, show=_SHOW) + "; " + _SHOW)
            parts.append(_SETUP + "( sleep 0.01; " + _SHOW + " ) > o & " + c + "; " + _SHOW + "; wait; cat o")
    # a function's local array, with localvar_inherit, and a nameref
    parts.append("f(){ local -a v=(1 2); ( v[0]=9; echo ${v[*]} ); v+=(3); echo ${v[*]}; }; f")
    parts.append("shopt -s localvar_inherit; a=(1 2); g(){ local a; a[0]=L; echo ${a[*]}; }; g; echo ${a[*]}")
    parts.append("a=(1 2); declare -n r=a; ( r[0]=N; echo ${a[*]} ); r+=(3); echo ${a[*]}")
    return "\n".join(p + "; echo ---" for p in parts)


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash to compare with")
def test_changes_after_a_fork_match_bash_and_leave_shared_arrays_alone(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(state, "_COW_CHECK", [])
    script = _script()
    with ab.Sandbox(isolation="virtual") as sb:
        got = sb.run("cd /tmp\n" + script, timeout=60)
    exp = subprocess.run(["bash", "-c", script], cwd=str(tmp_path), capture_output=True, timeout=60,
                         stdin=subprocess.DEVNULL)
    assert got.stdout == exp.stdout.decode()
    assert got.exit_code == exp.returncode
    assert len(state._COW_CHECK) > len(_CHANGES) * len(_FORKS)  # the forks did share arrays
    assert state.cow_violations() == []


def test_a_fork_shares_a_big_array_until_it_writes() -> None:
    st = state.ShellState()
    big = {i: str(i) for i in range(1000)}
    st.scopes[0]["A"] = state.Var(big, state.ARRAY)
    kids = [st.fork() for _ in range(3)]
    assert all(k.scopes[0]["A"].value is big for k in kids)
    kids[0].scopes[0]["A"].own()[0] = "x"
    assert kids[0].scopes[0]["A"].value is not big and big[0] == "0"
    assert st.scopes[0]["A"].value is big and kids[1].scopes[0]["A"].value is big


def test_a_fork_bomb_after_a_big_array_does_not_copy_it(monkeypatch) -> None:
    # 64 concurrent jobs each forked with a 500K-element array in scope: copying it per job
    # (before copy-on-write) grew the process by ~1.3 GiB; shared, the growth is the array once
    monkeypatch.setattr(state, "_COW_CHECK", None)  # (AGB_COW_CHECK's snapshots are copies)
    me = psutil.Process()
    with ab.Sandbox(isolation="virtual") as sb:
        assert sb.run("declare -a A=({1..500000}); echo ${#A[@]}", timeout=60).stdout == "500000\n"
        base = me.memory_info().rss
        peak = [base]
        stop = threading.Event()

        def sample() -> None:
            while not stop.wait(0.005):
                peak[0] = max(peak[0], me.memory_info().rss)
        t = threading.Thread(target=sample, daemon=True)
        t.start()
        try:
            r = sb.run("for i in {1..64}; do { sleep 0.3; echo ${#A[@]}; } & done; wait; echo done", timeout=60)
        finally:
            stop.set()
            t.join()
    assert r.stdout.split("\n")[-2] == "done" and r.stdout.count("500000") == 64
    assert (peak[0] - base) / MiB < 300
