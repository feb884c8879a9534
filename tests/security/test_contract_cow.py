"""Forks share arrays copy-on-write: every change in place after a fork matches bash and leaves the other side alone."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time

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


# -- the watchdog with stage and job threads watched ---------------------------------------------

def _due_budget():
    from agentic_bash.limits import Budget, _start_watch
    _start_watch()
    b = Budget(ab.Limits(timeout=0.05))
    time.sleep(0.1)  # past its deadline (and the watchdog's grace) before anyone watches
    return b


def test_no_kick_holds_the_watchdog_off_until_the_region_ends() -> None:
    from agentic_bash.errors import LimitExceeded
    from agentic_bash.limits import no_kick
    b = _due_budget()
    got: dict[str, object] = {}

    def run() -> None:
        b.watch()
        try:
            try:
                with no_kick:
                    end = time.monotonic() + 0.6  # (the watchdog looks every 10 ms)
                    while time.monotonic() < end:
                        pass
                    got["inside"] = "finished"
                while True:  # kicked once out of the region
                    time.sleep(0.001)
            except LimitExceeded as e:
                got["after"] = e.limit
        finally:
            b.unwatch()
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(20)
    assert got == {"inside": "finished", "after": "timeout"}


def test_an_entry_left_by_a_gone_thread_is_dropped_not_kicked() -> None:
    # a thread whose unwatch() was cut short leaves (ident, Thread); another thread may get
    # that ident: the watchdog must drop the entry, never send the newcomer the exception
    from agentic_bash import limits
    b = _due_budget()
    got: dict[str, object] = {}
    ready = threading.Event()

    def newcomer() -> None:
        me = threading.get_ident()
        with limits._WATCH_LOCK:  # (what a gone thread's watch() left, with this ident)
            b._tids.append((me, object()))
            limits._ACTIVE.append(b)
        ready.set()
        try:
            end = time.monotonic() + 0.6
            while time.monotonic() < end:
                time.sleep(0.001)
            got["ran"] = True
        except BaseException as e:  # noqa: BLE001 - what the test looks for
            got["kicked"] = type(e).__name__
    t = threading.Thread(target=newcomer, daemon=True)
    t.start()
    t.join(20)
    assert ready.is_set() and got == {"ran": True}
    assert b._tids == [] and b not in limits._ACTIVE
