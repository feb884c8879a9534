"""Session 13 (issue 20): aliases, traps, ``set --``, pushd and the history are charged to max_shell_bytes where they are stored."""

from __future__ import annotations

import pytest

import agentic_bash as ab
from test_contract_found9 import _namespace_ok

MiB = 1 << 20
_MODES = ["virtual", pytest.param("namespace", marks=pytest.mark.skipif(
    not _namespace_ok(), reason="kernel sandbox unavailable"))]

_X = "x=$(head -c 2000000 /dev/zero | tr '\\0' a); "
# each stores twenty 2 MB strings: 40 MB, past a 16 MiB max_shell_bytes. Before, each was
# stored whole (measured, not charged: only a later store found the shell over its cap)
_STORES = {
    "alias": (_X + 'for i in {1..20}; do alias "a$i=$x$i" || break; done; alias | wc -l',
              "unalias -a"),
    "trap": (_X + 'for i in {1..20}; do trap ": $x$i" $((i+40)) || break; done; trap | wc -l',
             "trap - $(seq 41 60)"),
    "set --": (_X + "set -- $x $x $x $x $x $x $x $x $x $x $x $x $x $x $x $x $x $x $x $x; echo $#",
               "set --"),
    "pushd": (_X + 'for i in {1..20}; do pushd -n "$x$i" >/dev/null || break; done; dirs -p | wc -l',
              "dirs -c"),
}


@pytest.mark.parametrize("iso", _MODES)
@pytest.mark.parametrize("what", sorted(_STORES))
def test_a_store_past_max_shell_bytes_is_refused(iso: str, what: str) -> None:
    script, undo = _STORES[what]
    with ab.Sandbox(isolation=iso, limits=ab.Limits(max_shell_bytes=16 * MiB)) as sb:
        r = sb.run(script, timeout=60)
        assert r.exit_code == 1 and r.limit_exceeded == "memory", r
        assert "xmalloc: cannot allocate" in r.stderr, r.stderr
        assert not r.stdout.strip() or int(r.stdout.split()[-1]) < 20, r.stdout
        # the session goes on; what was stored can be dropped, and then stored again
        assert sb.run(undo + "; echo ok").stdout.endswith("ok\n")
        assert sb.run("alias q='echo hi'; trap ': t' USR1; set -- a b; pushd -n /tmp >/dev/null; "
                      "echo $#").stdout == "2\n"


def test_small_stores_are_not_refused() -> None:
    # a guard (passes on the old code by design): ordinary use stays well under the cap
    with ab.Sandbox(isolation="virtual", limits=ab.Limits(max_shell_bytes=16 * MiB)) as sb:
        r = sb.run("for i in {1..2000}; do alias a$i='echo $i'; trap \": $i\" USR1; done; "
                   "set -- {1..20000}; for i in {1..500}; do pushd -n /tmp/$i >/dev/null; done; "
                   "echo $# $(alias | wc -l) $(dirs -p | wc -l)", timeout=60)
        assert r.stdout == "20000 2000 501\n" and r.exit_code == 0, r


def test_the_history_keeps_a_share_of_max_shell_bytes() -> None:
    # each run's script goes into the history (1,000 of them): 1,000 scripts of 10 MB
    # were 10 GB nothing charged. Now the oldest go past max_shell_bytes / 8
    from agentic_bash.executors.inprocess import InProcessExecutor
    with ab.Sandbox(isolation="virtual", limits=ab.Limits(max_shell_bytes=16 * MiB)) as sb:
        big = ": " + "y" * (1 * MiB)
        for _ in range(6):
            assert sb.run(big).exit_code == 0
        ex = next(v for v in vars(sb).values() if isinstance(v, InProcessExecutor))
        h = ex.shell.state.history
        assert sum(map(len, h)) <= 2 * MiB + 16 and h[-1] == big
        assert sb.run("echo ok").stdout == "ok\n"


# -- declare/local charge the value they make a variable with, as an assignment does ------------
# Before: a new variable made by declare/local was charged its name only (VAR_COST + len), its
# value (under 1 KiB, so not charged where it is stored either) not at all: 30,000 locals of
# 900 bytes held ~33 MB under a 16 MiB max_shell_bytes with no measure ever due.

@pytest.mark.parametrize("how", ["local", "declare -g", "declare", "typeset"])
def test_declare_charges_the_value_it_makes_a_variable_with(how: str) -> None:
    loop = f'for i in {{1..30000}}; do {how} v$i="$v"; done'
    script = "v=$(printf %0900d 0); " + (f"f(){{ {loop}; }}; f" if how == "local" else loop) + "; echo done"
    with ab.Sandbox(isolation="virtual", limits=ab.Limits(max_shell_bytes=16 * MiB)) as sb:
        r = sb.run(script, timeout=120)
        assert r.exit_code == 1 and r.limit_exceeded == "memory" and "done" not in r.stdout, r
        assert sb.run("echo ok").stdout == "ok\n"
