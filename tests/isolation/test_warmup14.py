"""sessions14: the runner's warm-up (isolation/warmup.py) runs on a throwaway shell and puts back
every module-level thing its run changed; it yields to a request that is waiting."""

from __future__ import annotations

import random
import socket
import sys

from agentic_bash.executors.inprocess import InProcessExecutor
from agentic_bash.isolation import runner, warmup, zygote  # noqa: F401 - (loaded, as in a runner)
from agentic_bash.vfs.host import HostFS


def _globals() -> dict:
    """Every module-level dict, list, set, tuple of dicts and counter of the package (by key
    set and length, or repr), and the global random generator's state."""
    out: dict = {"random": random.getstate()}
    for name, m in list(sys.modules.items()):
        if not name.startswith("agentic_bash") or m is None:
            continue
        for k, v in list(vars(m).items()):
            if k.startswith("__"):
                continue
            try:
                if isinstance(v, tuple) and v and all(type(x) is dict for x in v):
                    out[(name, k)] = [sorted(map(repr, x)) for x in v]
                elif type(v) in (dict, set):
                    out[(name, k)] = (len(v), sorted(map(repr, v)))
                elif type(v) is list:
                    out[(name, k)] = repr(v)
                elif type(v).__name__ == "count":
                    out[(name, k)] = repr(v)
            except Exception as e:  # noqa: BLE001 - (a value whose repr fails)
                out[(name, k)] = f"unreadable: {e}"
    return out


def _executor(tmp_path) -> InProcessExecutor:
    # (what the zygote left to first use is done before any sandbox is forked: as there)
    zygote._finish_lazy()
    ex = InProcessExecutor(fs=HostFS(str(tmp_path), writable=True), workdir="/")
    # (the caches as a sandbox's runner has them: what the zygote's warm-up and a session
    # put there)
    ex.run("echo one; for i in 1 2; do x=$((x+i)); done; f() { :; }; f")
    return ex


def test_warm_up_puts_back_what_it_changed(tmp_path) -> None:
    ex = _executor(tmp_path)
    a, b = socket.socketpair()
    try:
        # (`: mark` first: declare -p lists $_, the last argument of the command before it)
        listing = ": mark; declare -p; history; hash; jobs; trap -p; set -o"
        state = ex.run(listing).stdout
        before = _globals()
        assert warmup.warm_up(a, ex.limits, idle=0) is True
        after = _globals()
        changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
        assert not changed, {k: (str(before.get(k))[:300], str(after.get(k))[:300])
                             for k in changed}
        # (the session's own shell is another object: nothing of it moved either)
        assert ex.run(listing).stdout == state
    finally:
        a.close()
        b.close()
        ex.close()


def test_warm_up_runs_a_script_that_leaves_caches(tmp_path, monkeypatch) -> None:
    """The restore is what makes the first test pass: a script that fills every cache the
    warm-up puts back (a new text, a new shape, arithmetic) still leaves none of it."""
    monkeypatch.setattr(warmup, "SCRIPTS", ("for q in 1 2 3; do zz=$((zz+q)); done; echo $zz",
                                            "echo $RANDOM"))
    ex = _executor(tmp_path)
    a, b = socket.socketpair()
    try:
        before = _globals()
        assert warmup.warm_up(a, ex.limits, idle=0) is True
        after = _globals()
        changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
        # (the arithmetic memo caches are not put back: SCRIPTS has no arithmetic)
        assert changed <= {("agentic_bash.shell.arith", "_FNS"),
                           ("agentic_bash.shell.interpreter", "_arith_fns"),
                           ("agentic_bash.shell.expand", "_PLAIN_NAME")}, changed
        assert before["random"] == after["random"]
    finally:
        a.close()
        b.close()
        ex.close()


def test_warm_up_yields_to_a_waiting_request(tmp_path) -> None:
    ex = _executor(tmp_path)
    a, b = socket.socketpair()
    try:
        b.send(b"x")
        before = _globals()
        assert warmup.warm_up(a, ex.limits, idle=0) is False
        assert _globals() == before
    finally:
        a.close()
        b.close()
        ex.close()


def test_warm_up_can_be_turned_off(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(warmup, "ENABLED", False)
    ex = _executor(tmp_path)
    a, b = socket.socketpair()
    try:
        assert warmup.warm_up(a, ex.limits, idle=0) is False
    finally:
        a.close()
        b.close()
        ex.close()
