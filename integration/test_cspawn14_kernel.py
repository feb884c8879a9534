"""The compiled spawn (executors/_fastspawn.c) against bash and against the pure-Python path, as root and as an unprivileged user: statuses and messages, what the child gets (limits, signals, groups, descriptors, niceness, oom_score_adj, seccomp), timeouts, interrupts, streamed output and the process limit."""

from __future__ import annotations

import pytest

from _support import Runner, sandbox_supported

ok, why = sandbox_supported()
pytestmark = [pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}"),
              pytest.mark.timeout(600)]

_cache: dict[tuple[str, str], dict] = {}


@pytest.fixture(params=["root", "user"])
def both(request: pytest.FixtureRequest) -> tuple[dict, dict]:
    """(with the compiled spawn, with AGENTIC_BASH_FASTSPAWN=0) for one identity."""
    who = request.param
    runner = request.getfixturevalue("as_root" if who == "root" else "as_user")
    for mode in ("on", "off"):
        if (who, mode) not in _cache:
            r = runner if mode == "on" else Runner(
                runner.name, runner.prefix, runner.python,
                {**runner.env, "AGENTIC_BASH_FASTSPAWN": "0"}, runner.cwd)
            _cache[who, mode] = r.script("_cspawn14_check.py", timeout=300)
    return _cache[who, "on"], _cache[who, "off"]


def test_the_compiled_path_runs_and_is_reported(both: tuple[dict, dict]) -> None:
    on, off = both
    assert on["level"] == off["level"] == "namespace"
    if on["fast_spawn"] != ["native spawns: compiled (executors/_fastspawn.c)"]:
        pytest.skip(f"the extension is not built here: {on['fast_spawn']}")
    assert off["fast_spawn"][0].startswith("native spawns: pure Python")


@pytest.mark.parametrize("mode", [0, 1], ids=["compiled", "python"])
def test_statuses_and_messages_are_bash_s(both: tuple[dict, dict], mode: int) -> None:
    bad = [(s, a, b) for s, a, b in both[mode]["diff"] if a != b]
    assert not bad, bad


def test_the_child_gets_the_same_on_both_paths(both: tuple[dict, dict]) -> None:
    on, off = both
    assert on["facts"] == off["facts"]
    assert on["cgroup"] == off["cgroup"]
    assert [x[1] for x in on["diff"]] == [x[1] for x in off["diff"]]
    f = on["facts"]
    assert f["oom"] == "1000\n"
    assert f["nice"] == "10\n"
    assert f["fds"] == "0 1 2 3 "
    assert "NoNewPrivs:\t1" in f["status"] and "Seccomp:\t2" in f["status"]
    assert "CapEff:\t0000000000000000" in f["status"]
    assert "SigBlk:\t0000000000000000" in f["status"]
    data = [ln.split() for ln in f["limits"].splitlines() if ln.startswith("Max data size")][0]
    assert data[3] == data[4] == str(384 << 20)   # max_process_memory, soft and hard
    assert f["big_alloc"] == "MemoryError\n1\n"
    assert f["pgrp_is_own"].startswith("leader\n")
    assert on["cap_kill"] == off["cap_kill"] == "1\n"
    if on["fast_spawn"] == ["native spawns: compiled (executors/_fastspawn.c)"]:
        assert on["nice_now"] == "10\n"
        # the caps are there before the program's first instruction (the Python path sets
        # them from outside once it runs, and kills a program already past the data cap)
        assert on["limits_now"] == "".join(ln + "\n" for ln in f["limits"].splitlines()
                                           if ln.startswith(("Max data", "Max processes")))


def test_timeout_interrupt_stream_and_limits(both: tuple[dict, dict]) -> None:
    for o in both:
        assert o["streamed"][:3] == ["1\n2\n3\n4\n5\n", "e1\ne2\n", 0]
        timed_out, code, took, reached = o["timeout"]
        assert timed_out and code == 124 and took < 20 and not reached, o["timeout"]
        code, reached, took = o["interrupt"]
        assert code == 130 and not reached and took < 20, o["interrupt"]
        assert o["left"] == "0"
        out, err, code = o["limit"]
        assert "rc=254" in out and "fork: Resource temporarily unavailable" in err, o["limit"]
        assert o["limit_after"] == "ok\n"
        assert o["capped_output"][1] is True
