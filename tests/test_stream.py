"""Streaming output: run_stream callbacks and the sb.stream() iterator deliver chunks as produced."""

from __future__ import annotations

import time

from agentic_bash import Result, Sandbox


def test_run_stream_callbacks_and_result(sb):
    out, err = [], []
    r = sb.run_stream("echo a; echo b >&2; printf c", on_stdout=out.append, on_stderr=err.append)
    assert isinstance(r, Result)
    assert b"".join(out) == b"a\nc" == r.stdout_bytes and b"".join(err) == b"b\n" == r.stderr_bytes


def test_chunks_arrive_before_the_run_ends(sb):
    stamps = []
    t0 = time.monotonic()
    r = sb.run_stream("echo first; sleep 0.5; echo second", on_stdout=lambda c: stamps.append(time.monotonic() - t0))
    assert r.stdout == "first\nsecond\n" and len(stamps) == 2
    assert stamps[1] - stamps[0] > 0.3


def test_iterator_events_then_result(sb):
    t0 = time.monotonic()
    events = []
    for ev in sb.stream("for i in 1 2; do echo $i; sleep 0.3; done; echo e >&2; exit 3"):
        events.append((ev.kind, ev.data, time.monotonic() - t0, ev.result))
    kinds = [e[0] for e in events]
    assert kinds == ["stdout", "stdout", "stderr", "result"]
    assert events[0][1] == b"1\n" and events[0][2] < events[-1][2] - 0.3
    assert events[-1][3].exit_code == 3 and events[-1][3].stdout == "1\n2\n"


def test_leaving_the_iterator_early_interrupts_the_run(sb):
    t0 = time.monotonic()
    for ev in sb.stream("while :; do echo y; done"):
        assert ev.kind == "stdout"
        break
    assert time.monotonic() - t0 < 5
    assert sb.run("echo still here").stdout == "still here\n"


def test_stream_with_per_run_options(sb):
    evs = list(sb.stream("cat; echo $V; pwd", stdin="in\n", env={"V": "v"}, cwd="/tmp"))
    assert evs[-1].result.stdout == "in\nv\n/tmp\n"
    assert b"".join(e.data for e in evs if e.kind == "stdout") == b"in\nv\n/tmp\n"


def test_on_output_hook_sees_streamed_chunks_too():
    seen = []
    with Sandbox(isolation="virtual", on_output=lambda fd, c: seen.append((fd, c))) as sb:
        list(sb.stream("echo x"))
        sb.run_stream("echo y >&2")
    assert seen == [(1, b"x\n"), (2, b"y\n")]
