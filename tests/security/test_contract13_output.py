"""Session 13 (issue 20): work on a run's large output at its deadline is one pass, not several copies or a slow C loop."""

from __future__ import annotations

import tracemalloc

import pytest

import agentic_bash as ab
from agentic_bash.shell.streams import Capture

MiB = 1 << 20


@pytest.mark.parametrize("size", [16 * MiB, 16 * MiB + 12345])
def test_a_cut_output_is_built_with_one_copy(size: int) -> None:
    # Before: bytes() of the head and of the tail and two concatenations, ~48 MiB allocated
    # (40-80 ms at a deadline on a loaded machine) for a 16 MiB result
    c = Capture(16 * MiB)
    chunk = b"\0" * 65536
    n = 0
    while n < 2 * size:
        c.write(chunk)
        n += len(chunk)
    c.write(b"END")
    tracemalloc.start()
    try:
        v = c.getvalue()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert c.truncated and v.endswith(b"END") and b"bytes elided" in v
    assert 16 * MiB < len(v) < 16 * MiB + 1024
    assert peak < len(v) + 4 * MiB, peak   # the result itself, no intermediate copies


def test_the_cut_value_keeps_head_marker_and_tail() -> None:
    c = Capture(100)
    c.write(b"a" * 60)
    c.write(b"b" * 60)
    c.write(b"c" * 10)
    v = c.getvalue()
    assert v.startswith(b"a" * 50) and v.endswith(b"b" * 40 + b"c" * 10)
    assert b"[agentic-bash: output truncated: 30 bytes elided; the first 50 and the last 50 bytes are kept]" in v

    class Head(Capture):
        keep_tail = False
    head = Head(10)
    head.write(b"x" * 20)
    assert head.getvalue() == b"x" * 10 + b"\n[agentic-bash: output truncated after 10 bytes]\n"
    short = Capture(10)
    short.write(b"y" * 10)
    assert short.getvalue() == b"y" * 10 and not short.truncated


@pytest.mark.parametrize("iso", ["virtual"])
def test_nul_bytes_dropped_from_a_substitution_as_bash_does(iso: str) -> None:
    # (str.translate in one pass instead of bytes.replace: 0.79 s of uninterruptible C code
    # for 50 MB, which a deadline could not stop)
    with ab.Sandbox(isolation=iso) as sb:
        r = sb.run("x=$(printf 'a\\0b\\0\\0c'); echo \"$x\" ${#x}")
        assert r.stdout == "abc 3\n"
        assert "ignored null byte" in r.stderr
        r = sb.run("x=$(head -c 20000000 /dev/zero; echo z); echo ${#x}", timeout=60)
        assert r.stdout == "1\n", r


@pytest.mark.parametrize("script", ['echo "$x" > /dev/null', 'echo "$x" | wc -c'])
def test_echo_of_a_long_value_writes_it_a_mib_at_a_time(script: str) -> None:
    # Before: `echo "$x"` built the value plus a newline (a copy) and encoded it whole (a
    # second): ~2x the value in transient memory per writer, counted by no pool (six jobs
    # echoing a 60 MB value into sort peaked at +0.8-1 GiB)
    with ab.Sandbox(isolation="virtual") as sb:
        assert sb.run("x=$(head -c 20000000 /dev/zero | tr '\\0' a)").exit_code == 0
        tracemalloc.start()
        try:
            r = sb.run(script, timeout=60)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert r.exit_code == 0, r
        if "wc" in script:
            assert r.stdout == "20000001\n"
        assert sb.run('y=$(echo "$x"); echo ${#y}').stdout == "20000000\n"
        assert peak < 8 * MiB, peak


@pytest.mark.parametrize("iso", ["virtual"])
def test_shuf_of_a_huge_range_is_memory_exhausted_not_gigabytes(iso: str) -> None:
    # found by this session's fuzz (virtual seed 1311): `shuf -i 1-100000000` built 100M ints,
    # their encodings and one joined copy: +4.5 GiB and 12 s past a 2 s timeout
    import psutil
    me = psutil.Process()
    with ab.Sandbox(isolation=iso) as sb:
        before = me.memory_info().rss
        r = sb.run("shuf -i 1-100000000 | wc -l; echo ${PIPESTATUS[0]}", timeout=30)
        assert r.stdout == "0\n1\n" and "shuf: memory exhausted" in r.stderr, r
        assert me.memory_info().rss - before < 512 * MiB
        r = sb.run("shuf -i 1-200000 | sort -n | uniq | wc -l; shuf -n 2 -i 1-100000000 | wc -l")
        assert r.stdout == "200000\n2\n", r
